//! Why a rollout is stuck: reasons read from the objects a waited-on object
//! owns (a Deployment's ReplicaSets and their pods, a StatefulSet's,
//! DaemonSet's or Job's pods) and from their events, as a person would read
//! them with `kubectl describe`.
//!
//! The readiness rules ([`super::ready`]) say *that* an object is not
//! ready (`0 of 1 updated replicas ready`); this module says *why*: the
//! scheduler's message for an unschedulable pod, an image that cannot be
//! pulled, a container in `CrashLoopBackOff` and how often it restarted, a
//! failing readiness probe, a failed Job's condition, a claim pending on
//! its StorageClass, a ReplicaSet refused by a quota. The executor shows
//! these reasons in its progress events while it waits, puts them (with
//! each failing pod's last events and log lines) in the report when a wait
//! fails, and, with `--fail-fast`, stops waiting on the states that do not
//! resolve by themselves ([`Reason::fatal`]).
//!
//! Everything here is a pure function of objects as read, except
//! [`Diagnoser::diagnose`], which reads them.
use crate::cluster::{Cluster, ClusterError, ObjectKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// What kind of obstacle a [`Reason`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReasonKind {
    /// The scheduler found no node for a pod (`PodScheduled=False`,
    /// `Unschedulable`); the message is the scheduler's.
    Unschedulable,
    /// A container's image cannot be pulled (`ErrImagePull`,
    /// `ImagePullBackOff`, `InvalidImageName`, ...).
    ImagePull,
    /// A container is in `CrashLoopBackOff`.
    CrashLoop,
    /// A container's readiness probe fails (`Unhealthy` events).
    ProbeFailed,
    /// A container cannot be created from its configuration
    /// (`CreateContainerConfigError`: a missing Secret or ConfigMap key, ...).
    ContainerConfig,
    /// A volume cannot be mounted (`FailedMount`: a missing Secret, ...).
    MountFailed,
    /// A controller's pod creation was refused by a ResourceQuota.
    QuotaExceeded,
    /// A controller could not create its pods for another reason
    /// (`FailedCreate`: a missing ServiceAccount, an admission webhook, ...).
    CreateFailed,
    /// A PersistentVolumeClaim is `Pending`.
    ClaimPending,
    /// A Job failed (its `Failed` condition).
    JobFailed,
    /// A pod failed (phase `Failed`).
    PodFailed,
    /// A pod is not ready and nothing says why (yet).
    NotReady,
}

/// One reason why an object is not ready, as typed data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reason {
    /// What kind of obstacle.
    pub kind: ReasonKind,
    /// The object it is about: `Pod ns/name`, `ReplicaSet ns/name`, ...
    pub object: String,
    /// The container, for container states.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// The container's restart count, for [`ReasonKind::CrashLoop`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restarts: Option<i64>,
    /// The cluster's own words (the scheduler's message, the kubelet's,
    /// the condition's).
    pub message: String,
    /// How many objects (pods) are stuck the same way; this one names the
    /// first. 1 when it is the only one.
    pub count: u32,
}

impl Reason {
    fn new(kind: ReasonKind, object: String, message: impl Into<String>) -> Reason {
        Reason {
            kind,
            object,
            container: None,
            restarts: None,
            message: message.into(),
            count: 1,
        }
    }

    fn in_container(mut self, c: &str) -> Reason {
        self.container = Some(c.to_string());
        self
    }

    /// Whether this reason is one `--fail-fast` stops on, given how long it
    /// has been seen: unschedulable for longer than the grace period, an
    /// image pull error, a crash loop past the restart limit, a failed Job.
    pub fn fatal(&self, ff: &FailFast, seen_for: Duration) -> bool {
        match self.kind {
            ReasonKind::Unschedulable => seen_for >= ff.unschedulable_grace,
            ReasonKind::ImagePull => true,
            ReasonKind::CrashLoop => self.restarts.unwrap_or(0) >= ff.max_restarts,
            _ => false,
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = self
            .container
            .as_deref()
            .map(|c| format!(" container {c}"))
            .unwrap_or_default();
        let o = &self.object;
        match self.kind {
            ReasonKind::Unschedulable => write!(f, "{o} is unschedulable: {}", self.message),
            ReasonKind::ImagePull => write!(f, "{o}{c} cannot pull its image: {}", self.message),
            ReasonKind::CrashLoop => write!(
                f,
                "{o}{c} is in CrashLoopBackOff ({} restarts): {}",
                self.restarts.unwrap_or(0),
                self.message
            ),
            ReasonKind::ProbeFailed => {
                write!(f, "{o}{c} fails its readiness probe: {}", self.message)
            }
            ReasonKind::ContainerConfig => {
                write!(f, "{o}{c} cannot be created: {}", self.message)
            }
            ReasonKind::MountFailed => write!(f, "{o} cannot mount a volume: {}", self.message),
            ReasonKind::NotReady => write!(f, "{o}{c} is not ready: {}", self.message),
            ReasonKind::PodFailed => write!(f, "{o}{c} failed: {}", self.message),
            ReasonKind::JobFailed => write!(f, "{o} failed: {}", self.message),
            ReasonKind::ClaimPending => write!(f, "{o} is Pending: {}", self.message),
            ReasonKind::QuotaExceeded => {
                write!(f, "{o} cannot create pods (quota): {}", self.message)
            }
            ReasonKind::CreateFailed => write!(f, "{o} cannot create pods: {}", self.message),
        }?;
        if self.count > 1 {
            write!(f, " (and {} more like it)", self.count - 1)?;
        }
        Ok(())
    }
}

/// When `--fail-fast` gives up on a wait at once instead of at its
/// deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailFast {
    /// How long a pod may stay unschedulable: long enough for a node that
    /// is joining to register and for a claim to bind, short enough not to
    /// wait for an autoscaler. Default 15 s.
    #[serde(with = "secs")]
    pub unschedulable_grace: Duration,
    /// How many restarts a container in `CrashLoopBackOff` may have had.
    /// Default 3 (the kubelet's back-off is then 40 s and growing).
    pub max_restarts: i64,
}

impl Default for FailFast {
    fn default() -> Self {
        FailFast {
            unschedulable_grace: Duration::from_secs(15),
            max_restarts: 3,
        }
    }
}

mod secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let f = f64::deserialize(d)?;
        Ok(Duration::try_from_secs_f64(f).unwrap_or_default())
    }
}

/// One event of the cluster, as the failure report shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventLine {
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: String,
    /// The event's reason (`FailedScheduling`, `BackOff`, ...).
    pub reason: String,
    /// Its message.
    pub message: String,
    /// How many times it happened.
    pub count: i64,
    /// When it last happened (RFC 3339), as the cluster says.
    pub last_seen: String,
}

impl std::fmt::Display for EventLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} {}", self.type_, self.reason, self.message)?;
        if self.count > 1 {
            write!(f, " (x{})", self.count)?;
        }
        Ok(())
    }
}

/// What the failure report says about one pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodReport {
    /// `Pod ns/name`.
    pub pod: String,
    /// Its last events, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<EventLine>,
    /// The failing container whose log is shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// The last lines of that container's log (of its previous run when it
    /// restarted); empty where the cluster serves no logs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<String>,
}

/// Why one object was not ready when its wait failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnosis {
    /// `namespace/name` of the release.
    pub release: String,
    /// The object waited on: `Deployment ns/name`.
    pub object: String,
    /// What the readiness rule said last.
    pub status: String,
    /// Why, from what it owns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<Reason>,
    /// The failing pods' last events and log lines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pods: Vec<PodReport>,
}

impl std::fmt::Display for Diagnosis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{}: not ready: {}", self.object, self.status)?;
        for r in &self.reasons {
            writeln!(f, "  why: {r}")?;
        }
        for p in &self.pods {
            if !p.events.is_empty() {
                writeln!(f, "  events of {}:", p.pod)?;
                for e in &p.events {
                    writeln!(f, "    {e}")?;
                }
            }
            if !p.log.is_empty() {
                writeln!(
                    f,
                    "  last log lines of {} container {}:",
                    p.pod,
                    p.container.as_deref().unwrap_or("")
                )?;
                for l in &p.log {
                    writeln!(f, "    | {l}")?;
                }
            }
        }
        Ok(())
    }
}

/// What one look at an object's dependents found.
#[derive(Debug, Clone, Default)]
pub struct Found {
    /// The reasons, most telling first, alike ones merged.
    pub reasons: Vec<Reason>,
    /// The failing pods (with reasons of their own), for the report.
    pub failing_pods: Vec<Value>,
    /// The failing pods' events, for the report.
    pub events: Vec<Value>,
    /// Resource versions to watch from: (pods, events) of the namespace
    /// (empty where the cluster gave none).
    pub versions: (String, String),
}

/// A namespace's pods and events, with their lists' resourceVersions.
type Lists = std::rc::Rc<(Vec<Value>, String, Vec<Value>, String)>;

/// Reads what an object owns to say why it is not ready. A namespace's
/// pods, events and ReplicaSets are read once per round
/// ([`Diagnoser::new_round`]), for every object of the namespace that
/// round looks at.
pub struct Diagnoser<'a> {
    cluster: &'a dyn Cluster,
    lists: std::cell::RefCell<std::collections::BTreeMap<String, Lists>>,
    replica_sets: std::cell::RefCell<std::collections::BTreeMap<String, std::rc::Rc<Vec<Value>>>>,
}

fn s<'v>(v: &'v Value, ptr: &str) -> &'v str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn uid(v: &Value) -> &str {
    s(v, "/metadata/uid")
}

fn owned_by(v: &Value, owner_uid: &str) -> bool {
    !owner_uid.is_empty()
        && v.pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .is_some_and(|o| {
                o.iter()
                    .any(|r| r.get("uid").and_then(Value::as_str) == Some(owner_uid))
            })
}

fn shown(kind: &str, v: &Value) -> String {
    let ns = s(v, "/metadata/namespace");
    let name = s(v, "/metadata/name");
    if ns.is_empty() {
        format!("{kind} {name}")
    } else {
        format!("{kind} {ns}/{name}")
    }
}

/// When an event last happened, for ordering: `lastTimestamp`, else
/// `eventTime`, else its creation.
fn event_time(e: &Value) -> jiff::Timestamp {
    [
        "/lastTimestamp",
        "/eventTime",
        "/metadata/creationTimestamp",
    ]
    .iter()
    .find_map(|p| s(e, p).parse::<jiff::Timestamp>().ok())
    .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

/// The events about the object with uid `of` (or, without uids, its kind
/// and name), oldest first.
pub fn events_of<'e>(events: &'e [Value], obj: &Value, kind: &str) -> Vec<&'e Value> {
    let u = uid(obj);
    let name = s(obj, "/metadata/name");
    let mut out: Vec<&Value> = events
        .iter()
        .filter(|e| {
            let io = e
                .get("involvedObject")
                .or_else(|| e.get("regarding"))
                .unwrap_or(&Value::Null);
            let eu = s(io, "/uid");
            if !eu.is_empty() && !u.is_empty() {
                eu == u
            } else {
                s(io, "/kind") == kind && s(io, "/name") == name
            }
        })
        .collect();
    out.sort_by_key(|e| event_time(e));
    out
}

/// An event as the report shows it.
pub fn event_line(e: &Value) -> EventLine {
    let last = [
        "/lastTimestamp",
        "/eventTime",
        "/metadata/creationTimestamp",
    ]
    .iter()
    .map(|p| s(e, p))
    .find(|t| !t.is_empty())
    .unwrap_or("");
    EventLine {
        type_: s(e, "/type").to_string(),
        reason: s(e, "/reason").to_string(),
        message: s(e, "/message").trim().to_string(),
        count: e
            .pointer("/count")
            .or_else(|| e.pointer("/series/count"))
            .and_then(Value::as_i64)
            .unwrap_or(1),
        last_seen: last.to_string(),
    }
}

fn last_event_with<'e>(evs: &[&'e Value], reasons: &[&str]) -> Option<&'e Value> {
    evs.iter()
        .rev()
        .find(|e| reasons.contains(&s(e, "/reason")))
        .copied()
}

/// Why one pod is not ready, from its status and its events (oldest
/// first): the first obstacle that applies, in the order a person reads
/// them (the pod failed, found no node, has containers that cannot start,
/// a volume that cannot be mounted, a failing probe), else that it is
/// not ready and nothing says why. None for a pod that is terminating,
/// succeeded or ready.
pub fn pod_reasons(pod: &Value, events: &[&Value]) -> Vec<Reason> {
    let me = shown("Pod", pod);
    if pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
    {
        return Vec::new();
    }
    let phase = s(pod, "/status/phase");
    if phase == "Succeeded" {
        return Vec::new();
    }
    if phase == "Failed" {
        return vec![pod_failed(pod, me)];
    }
    if let Some(r) = unschedulable(pod, events, &me) {
        return vec![r];
    }
    let waiting = waiting_containers(pod, &me);
    if !waiting.is_empty() {
        return waiting;
    }
    if let Some(e) = last_event_with(events, &["FailedMount", "FailedAttachVolume"]) {
        return vec![Reason::new(
            ReasonKind::MountFailed,
            me,
            s(e, "/message").trim(),
        )];
    }
    if matches!(pod_condition(pod, "Ready"), Some(("True", _, _))) {
        return Vec::new();
    }
    if let Some(r) = probe_failed(events, &me) {
        return vec![r];
    }
    vec![not_ready(pod, me)]
}

/// The pod's condition `ty`: (status, reason, message).
fn pod_condition<'p>(pod: &'p Value, ty: &str) -> Option<(&'p str, &'p str, &'p str)> {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| s(c, "/type") == ty)
        .map(|c| (s(c, "/status"), s(c, "/reason"), s(c, "/message")))
}

/// `exit code N (reason)` of a container's `terminated` state.
fn exit_text(terminated: &Value) -> String {
    format!(
        "exit code {}{}",
        terminated
            .get("exitCode")
            .and_then(Value::as_i64)
            .unwrap_or(0),
        match s(terminated, "/reason") {
            "" => String::new(),
            r => format!(" ({r})"),
        }
    )
}

/// A failed pod: the first container that exited with an error (or, when
/// the pod says nothing, the first that exited), else the pod's message
/// or reason.
fn pod_failed(pod: &Value, me: String) -> Reason {
    let mut msg = s(pod, "/status/message").to_string();
    let mut container = None;
    for cs in container_statuses(pod) {
        if let Some(t) = cs.pointer("/state/terminated") {
            let code = t.get("exitCode").and_then(Value::as_i64).unwrap_or(0);
            if code != 0 || msg.is_empty() {
                container = Some(s(cs, "/name").to_string());
                msg = exit_text(t);
                break;
            }
        }
    }
    if msg.is_empty() {
        msg = match s(pod, "/status/reason") {
            "" => "phase Failed".into(),
            r => r.to_string(),
        };
    }
    let mut r = Reason::new(ReasonKind::PodFailed, me, msg);
    r.container = container;
    r
}

/// A pod the scheduler refused (`PodScheduled=False`), or that has no
/// node and a `FailedScheduling` event: the scheduler's message.
fn unschedulable(pod: &Value, events: &[&Value], me: &str) -> Option<Reason> {
    let scheduled = pod_condition(pod, "PodScheduled");
    if let Some(("False", reason, msg)) = scheduled {
        let msg = if msg.is_empty() {
            last_event_with(events, &["FailedScheduling"])
                .map(|e| s(e, "/message").to_string())
                .unwrap_or_else(|| reason.to_string())
        } else {
            msg.to_string()
        };
        return Some(Reason::new(ReasonKind::Unschedulable, me.to_string(), msg));
    }
    if scheduled.is_none() && s(pod, "/spec/nodeName").is_empty() {
        let e = last_event_with(events, &["FailedScheduling"])?;
        return Some(Reason::new(
            ReasonKind::Unschedulable,
            me.to_string(),
            s(e, "/message").trim(),
        ));
    }
    None
}

/// The containers (init containers first) waiting on something that
/// will not pass by itself: an image pull, a crash loop, a configuration
/// error.
fn waiting_containers(pod: &Value, me: &str) -> Vec<Reason> {
    container_statuses(pod)
        .filter_map(|cs| {
            let name = s(cs, "/name");
            let r = match s(cs, "/state/waiting/reason") {
                "ErrImagePull"
                | "ImagePullBackOff"
                | "InvalidImageName"
                | "ErrImageNeverPull"
                | "RegistryUnavailable"
                | "ErrImageInspect" => image_pull(cs, me),
                "CrashLoopBackOff" => crash_loop(cs, me),
                "CreateContainerConfigError" | "CreateContainerError" | "RunContainerError" => {
                    container_config(cs, me)
                }
                _ => return None,
            };
            Some(r.in_container(name))
        })
        .collect()
}

/// A container whose image cannot be pulled.
fn image_pull(cs: &Value, me: &str) -> Reason {
    let waiting = s(cs, "/state/waiting/reason");
    let wmsg = s(cs, "/state/waiting/message");
    let msg = if wmsg.is_empty() {
        format!("{waiting} for image {}", s(cs, "/image"))
    } else {
        format!("{waiting}: {wmsg}")
    };
    Reason::new(ReasonKind::ImagePull, me.to_string(), msg)
}

/// A container in `CrashLoopBackOff`: how it last exited, and how often
/// it restarted.
fn crash_loop(cs: &Value, me: &str) -> Reason {
    let wmsg = s(cs, "/state/waiting/message");
    let restarts = cs.get("restartCount").and_then(Value::as_i64).unwrap_or(0);
    let msg = match cs.pointer("/lastState/terminated") {
        Some(t) => format!("last {}", exit_text(t)),
        None if !wmsg.is_empty() => wmsg.to_string(),
        None => "back-off restarting the failed container".into(),
    };
    let mut r = Reason::new(ReasonKind::CrashLoop, me.to_string(), msg);
    r.restarts = Some(restarts);
    r
}

/// A container that cannot be created or run from its configuration.
fn container_config(cs: &Value, me: &str) -> Reason {
    let waiting = s(cs, "/state/waiting/reason");
    let wmsg = s(cs, "/state/waiting/message");
    let msg = if wmsg.is_empty() {
        waiting.to_string()
    } else {
        format!("{waiting}: {wmsg}")
    };
    Reason::new(ReasonKind::ContainerConfig, me.to_string(), msg)
}

/// The last `Unhealthy` event of a readiness, startup or liveness probe,
/// naming its container.
fn probe_failed(events: &[&Value], me: &str) -> Option<Reason> {
    let e = last_event_with(events, &["Unhealthy"])?;
    let msg = s(e, "/message").trim();
    if !(msg.starts_with("Readiness") || msg.starts_with("Startup") || msg.starts_with("Liveness"))
    {
        return None;
    }
    let container = s(e, "/involvedObject/fieldPath")
        .strip_prefix("spec.containers{")
        .and_then(|x| x.strip_suffix('}'))
        .map(str::to_string);
    let mut r = Reason::new(ReasonKind::ProbeFailed, me.to_string(), msg);
    r.container = container;
    Some(r)
}

/// A pod not ready with nothing to say why: where it runs, and which of
/// its containers are not ready.
fn not_ready(pod: &Value, me: String) -> Reason {
    let node = s(pod, "/spec/nodeName");
    let msg = match s(pod, "/status/phase") {
        "Running" => {
            let unready: Vec<&str> = container_statuses(pod)
                .filter(|c| c.get("ready").and_then(Value::as_bool) != Some(true))
                .map(|c| s(c, "/name"))
                .collect();
            match pod_condition(pod, "Ready") {
                _ if !unready.is_empty() => format!(
                    "Running on {node}, container(s) {} not ready, and no event says why",
                    unready.join(", ")
                ),
                Some((_, r, m)) if !m.is_empty() || !r.is_empty() => {
                    format!("Running on {node}, Ready=False ({r}): {m}")
                }
                _ => format!("Running on {node}, not Ready"),
            }
        }
        _ if !node.is_empty() => {
            format!("Pending on node {node}: no container started yet, and no event says why")
        }
        _ => "Pending, not yet scheduled".to_string(),
    };
    Reason::new(ReasonKind::NotReady, me, msg)
}

fn container_statuses(pod: &Value) -> impl Iterator<Item = &Value> {
    ["/status/initContainerStatuses", "/status/containerStatuses"]
        .into_iter()
        .filter_map(|p| pod.pointer(p).and_then(Value::as_array))
        .flatten()
}

/// Merges alike reasons (same kind, container and message) into one
/// that counts them, keeping the first's object, and orders them most
/// telling first (unschedulable, image pulls, crash loops, ... not-ready).
pub fn merge(reasons: Vec<Reason>) -> Vec<Reason> {
    let mut out: Vec<Reason> = Vec::new();
    for r in reasons {
        match out.iter_mut().find(|o| {
            o.kind == r.kind
                && o.container == r.container
                && o.message == r.message
                && o.restarts.is_some() == r.restarts.is_some()
        }) {
            Some(o) => {
                o.count += r.count;
                o.restarts = o.restarts.max(r.restarts);
            }
            None => out.push(r),
        }
    }
    out.sort_by_key(|r| r.kind);
    out
}

/// Reasons from a controller's own events: pod creations it could not make.
fn create_refusals(obj: &Value, kind: &str, events: &[Value]) -> Vec<Reason> {
    let evs = events_of(events, obj, kind);
    match last_event_with(&evs, &["FailedCreate"]) {
        Some(e) => {
            let msg = s(e, "/message").trim().to_string();
            let k = if msg.contains("exceeded quota") || msg.contains("quota") {
                ReasonKind::QuotaExceeded
            } else {
                ReasonKind::CreateFailed
            };
            vec![Reason::new(k, shown(kind, obj), msg)]
        }
        None => Vec::new(),
    }
}

/// The kinds whose waits [`Diagnoser::diagnose`] can explain.
pub fn explains(key: &ObjectKey) -> bool {
    matches!(
        (key.group.as_str(), key.kind.as_str()),
        (
            "apps",
            "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet"
        ) | ("batch", "Job")
            | (
                "",
                "Pod" | "PersistentVolumeClaim" | "ReplicationController"
            )
    )
}

impl<'a> Diagnoser<'a> {
    /// A diagnoser reading `cluster`.
    pub fn new(cluster: &'a dyn Cluster) -> Self {
        Diagnoser {
            cluster,
            lists: Default::default(),
            replica_sets: Default::default(),
        }
    }

    /// Forgets the pods and events read so far: the next diagnosis reads
    /// them again.
    pub fn new_round(&self) {
        self.lists.borrow_mut().clear();
        self.replica_sets.borrow_mut().clear();
    }

    /// The namespace's ReplicaSets, read once per round.
    fn replica_sets(&self, ns: &str) -> Result<std::rc::Rc<Vec<Value>>, ClusterError> {
        if let Some(l) = self.replica_sets.borrow().get(ns) {
            return Ok(l.clone());
        }
        let l = std::rc::Rc::new(self.cluster.list("apps", "ReplicaSet", Some(ns), &[])?);
        self.replica_sets
            .borrow_mut()
            .insert(ns.to_string(), l.clone());
        Ok(l)
    }

    fn lists(&self, ns: &str) -> Result<Lists, ClusterError> {
        if let Some(l) = self.lists.borrow().get(ns) {
            return Ok(l.clone());
        }
        let (pods, pods_rv) = self.cluster.list_at("", "Pod", Some(ns))?;
        let (events, events_rv) = self.cluster.list_at("", "Event", Some(ns))?;
        let l = std::rc::Rc::new((pods, pods_rv, events, events_rv));
        self.lists.borrow_mut().insert(ns.to_string(), l.clone());
        Ok(l)
    }

    /// Why `live` (the object at `key`, not ready) is not ready: reads the
    /// namespace's pods and events (and the ReplicaSets of a Deployment,
    /// the StorageClass of a claim).
    pub fn diagnose(&self, key: &ObjectKey, live: &Value) -> Result<Found, ClusterError> {
        let ns = key.namespace.as_str();
        let lists = self.lists(ns)?;
        let (pods, pods_rv, events, events_rv) = &*lists;
        let mut reasons = Vec::new();
        let mut owners: Vec<String> = vec![uid(live).to_string()];
        match (key.group.as_str(), key.kind.as_str()) {
            ("apps", "Deployment") => {
                let revision = s(
                    live,
                    "/metadata/annotations/deployment.kubernetes.io~1revision",
                );
                let all_sets = self.replica_sets(ns)?;
                let sets: Vec<&Value> = all_sets
                    .iter()
                    .filter(|rs| owned_by(rs, uid(live)))
                    .collect();
                let newest: Vec<&Value> = sets
                    .iter()
                    .copied()
                    .filter(|rs| {
                        s(
                            rs,
                            "/metadata/annotations/deployment.kubernetes.io~1revision",
                        ) == revision
                    })
                    .collect();
                let chosen: Vec<&Value> = if newest.is_empty() { sets } else { newest };
                for rs in &chosen {
                    reasons.extend(create_refusals(rs, "ReplicaSet", events));
                    owners.push(uid(rs).to_string());
                }
                reasons.extend(create_refusals(live, "Deployment", events));
            }
            ("apps", _) | ("", "ReplicationController") => {
                reasons.extend(create_refusals(live, &key.kind, events));
            }
            ("batch", "Job") => {
                reasons.extend(job_failure(live));
                reasons.extend(create_refusals(live, "Job", events));
            }
            ("", "PersistentVolumeClaim") => {
                reasons.extend(self.claim_reasons(live, events)?);
            }
            _ => {}
        }
        let mut failing = Vec::new();
        let mine: Vec<&Value> = if key.kind == "Pod" {
            vec![live]
        } else {
            pods.iter()
                .filter(|p| owners.iter().any(|o| owned_by(p, o)))
                .collect()
        };
        for p in mine {
            let evs = events_of(events, p, "Pod");
            let rs = pod_reasons(p, &evs);
            if !rs.is_empty() {
                failing.push(p.clone());
            }
            // A pod waiting on a claim: say what the claim waits for.
            if rs.iter().any(|r| r.kind == ReasonKind::Unschedulable) {
                reasons.extend(self.claims_of(p, events)?);
            }
            reasons.extend(rs);
        }
        // The report shows the failing pods' events only.
        let events = failing
            .iter()
            .flat_map(|p| events_of(events, p, "Pod"))
            .cloned()
            .collect();
        Ok(Found {
            reasons: merge(reasons),
            failing_pods: failing,
            events,
            versions: (pods_rv.clone(), events_rv.clone()),
        })
    }

    /// The Pending claims a pod mounts, and why.
    fn claims_of(&self, pod: &Value, events: &[Value]) -> Result<Vec<Reason>, ClusterError> {
        let ns = s(pod, "/metadata/namespace");
        let mut out = Vec::new();
        for v in pod
            .pointer("/spec/volumes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let claim = s(v, "/persistentVolumeClaim/claimName");
            if claim.is_empty() {
                continue;
            }
            let key = ObjectKey::new("", "PersistentVolumeClaim", ns, claim);
            match self.cluster.get(&key)? {
                Some(c) if s(&c, "/status/phase") != "Bound" => {
                    out.extend(self.claim_reasons(&c, events)?)
                }
                Some(_) => {}
                None => out.push(Reason::new(
                    ReasonKind::ClaimPending,
                    format!("PersistentVolumeClaim {ns}/{claim}"),
                    "it does not exist",
                )),
            }
        }
        Ok(out)
    }

    /// Why a claim is not Bound: its StorageClass missing, or its last event.
    fn claim_reasons(&self, claim: &Value, events: &[Value]) -> Result<Vec<Reason>, ClusterError> {
        if s(claim, "/status/phase") == "Bound" {
            return Ok(Vec::new());
        }
        let me = shown("PersistentVolumeClaim", claim);
        let class = s(claim, "/spec/storageClassName");
        let evs = events_of(events, claim, "PersistentVolumeClaim");
        let last = evs.last().map(|e| s(e, "/message").trim().to_string());
        if !class.is_empty() {
            let sc =
                self.cluster
                    .get(&ObjectKey::new("storage.k8s.io", "StorageClass", "", class))?;
            if sc.is_none() {
                let mut msg = format!("StorageClass {class:?} does not exist");
                if let Some(l) = last {
                    msg.push_str(&format!(" ({l})"));
                }
                return Ok(vec![Reason::new(ReasonKind::ClaimPending, me, msg)]);
            }
        }
        let msg = match (last, class) {
            (Some(l), _) => l,
            (None, "") => "no StorageClass named and no volume bound to it".into(),
            (None, c) => format!("waiting on StorageClass {c:?} to provision a volume"),
        };
        Ok(vec![Reason::new(ReasonKind::ClaimPending, me, msg)])
    }

    /// The failure report's pod sections: each failing pod's last `events`
    /// events and, where `log_lines` > 0 and the cluster serves logs, the
    /// last lines of its failing container's log.
    pub fn pod_reports(&self, found: &Found, events: usize, log_lines: u32) -> Vec<PodReport> {
        found
            .failing_pods
            .iter()
            .take(3)
            .map(|p| {
                let evs = events_of(&found.events, p, "Pod");
                let skip = evs.len().saturating_sub(events);
                let rs = pod_reasons(p, &evs);
                let container = rs.iter().find_map(|r| r.container.clone()).or_else(|| {
                    p.pointer("/spec/containers/0/name")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                });
                let crashed = rs.iter().any(|r| r.kind == ReasonKind::CrashLoop);
                let log = match (&container, log_lines) {
                    (Some(c), n) if n > 0 => self
                        .cluster
                        .pod_log(
                            s(p, "/metadata/namespace"),
                            s(p, "/metadata/name"),
                            c,
                            n,
                            crashed,
                        )
                        .ok()
                        .flatten()
                        .map(|t| t.lines().map(str::to_string).collect())
                        .unwrap_or_default(),
                    _ => Vec::new(),
                };
                PodReport {
                    pod: shown("Pod", p),
                    events: evs[skip..].iter().map(|e| event_line(e)).collect(),
                    container: if log.is_empty() { None } else { container },
                    log,
                }
            })
            .collect()
    }
}

/// Why a Job failed, from its conditions. Since Kubernetes 1.31 the Job
/// controller sets `FailureTarget` first and `Failed` only once its pods
/// are gone; both carry the same reason, and the wait may end on the first.
fn job_failure(live: &Value) -> Option<Reason> {
    let (_, r, m) = ["Failed", "FailureTarget"].into_iter().find_map(|c| {
        super::ready::condition(live, c).filter(|(status, _, _)| *status == "True")
    })?;
    let msg = match (r, m) {
        ("", m) => m.to_string(),
        (r, "") => r.to_string(),
        (r, m) => format!("{r}: {m}"),
    };
    Some(Reason::new(ReasonKind::JobFailed, shown("Job", live), msg))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_job_failing_says_why_before_its_failed_condition() {
        let cond = |ty: &str| {
            json!({"metadata": {"name": "m", "namespace": "n"},
                "status": {"failed": 1, "conditions": [{"type": ty, "status": "True",
                  "reason": "BackoffLimitExceeded",
                  "message": "Job has reached the specified backoff limit"}]}})
        };
        for ty in ["FailureTarget", "Failed"] {
            let r = job_failure(&cond(ty)).expect(ty);
            assert_eq!(r.kind, ReasonKind::JobFailed);
            assert_eq!(
                r.message,
                "BackoffLimitExceeded: Job has reached the specified backoff limit"
            );
        }
        assert!(job_failure(&cond("Complete")).is_none());
        assert!(job_failure(&json!({"status": {"active": 1}})).is_none());
    }

    #[test]
    fn an_unschedulable_pod_says_what_the_scheduler_said() {
        let pod = json!({"metadata": {"name": "a", "namespace": "n"},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
              "reason": "Unschedulable",
              "message": "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."}]}});
        let r = pod_reasons(&pod, &[]);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].kind, ReasonKind::Unschedulable);
        assert_eq!(
            r[0].to_string(),
            "Pod n/a is unschedulable: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
        );
    }

    #[test]
    fn crash_loops_count_restarts_and_are_fatal_past_the_limit() {
        let pod = json!({"metadata": {"name": "a", "namespace": "n"},
            "spec": {"nodeName": "x"},
            "status": {"phase": "Running", "containerStatuses": [{"name": "c", "ready": false,
              "restartCount": 5, "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
              "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
        let r = pod_reasons(&pod, &[]);
        assert_eq!(r[0].kind, ReasonKind::CrashLoop);
        assert_eq!(r[0].restarts, Some(5));
        assert!(r[0]
            .to_string()
            .contains("(5 restarts): last exit code 1 (Error)"));
        let ff = FailFast::default();
        assert!(r[0].fatal(&ff, Duration::ZERO));
        let mut two = r[0].clone();
        two.restarts = Some(2);
        assert!(!two.fatal(&ff, Duration::from_secs(100)));
    }

    #[test]
    fn probe_failures_come_from_unhealthy_events() {
        let pod = json!({"metadata": {"name": "a", "namespace": "n", "uid": "u1"},
            "spec": {"nodeName": "x"},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}],
              "containerStatuses": [{"name": "c", "ready": false, "state": {"running": {}}}]}});
        let ev = json!({"involvedObject": {"uid": "u1", "kind": "Pod", "name": "a", "fieldPath": "spec.containers{c}"},
            "type": "Warning", "reason": "Unhealthy", "message": "Readiness probe failed: HTTP probe failed with statuscode: 503",
            "lastTimestamp": "2026-01-01T00:00:01Z"});
        let evs = [ev];
        let mine = events_of(&evs, &pod, "Pod");
        let r = pod_reasons(&pod, &mine);
        assert_eq!(r[0].kind, ReasonKind::ProbeFailed);
        assert_eq!(r[0].container.as_deref(), Some("c"));
        let r0 = pod_reasons(&pod, &[]);
        assert_eq!(r0[0].kind, ReasonKind::NotReady);
        assert!(r0[0].message.contains("container(s) c not ready"));
    }

    #[test]
    fn alike_reasons_merge_and_count() {
        let a = Reason::new(ReasonKind::Unschedulable, "Pod n/a".into(), "m");
        let b = Reason::new(ReasonKind::Unschedulable, "Pod n/b".into(), "m");
        let c = Reason::new(ReasonKind::NotReady, "Pod n/c".into(), "x");
        let m = merge(vec![c, a, b]);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].count, 2);
        assert_eq!(
            m[0].to_string(),
            "Pod n/a is unschedulable: m (and 1 more like it)"
        );
    }
}
