//! Readiness: Helm 3's rules per kind (`pkg/kube/ready.go`) and kstatus
//! (Helm 4's default), evaluated on one observed object.
//!
//! Both are pure functions of the object as read. The executor only
//! trusts an observation made after its own write, and both rules require
//! `status.observedGeneration == metadata.generation` where the kind has a
//! controller, so a status left by the previous rollout never passes.
use crate::plan::WaitStrategy;
use serde_json::Value;

/// What one observation says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Ready (Helm 3) or `Current` (kstatus).
    pub ready: bool,
    /// A terminal failure (a failed Job, kstatus `Failed`); the wait may
    /// stop early for hooks, and reports it.
    pub failed: bool,
    /// Why, for progress lines: `1 of 2 updated pods ready`.
    pub message: String,
}

impl Verdict {
    fn ready(message: impl Into<String>) -> Verdict {
        Verdict {
            ready: true,
            failed: false,
            message: message.into(),
        }
    }
    fn waiting(message: impl Into<String>) -> Verdict {
        Verdict {
            ready: false,
            failed: false,
            message: message.into(),
        }
    }
    fn failed(message: impl Into<String>) -> Verdict {
        Verdict {
            ready: false,
            failed: true,
            message: message.into(),
        }
    }
}

fn i(v: &Value, path: &[&str]) -> Option<i64> {
    let mut cur = v;
    for p in path {
        cur = cur.get(*p)?;
    }
    cur.as_i64()
}

fn s<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(*p)?;
    }
    cur.as_str()
}

/// The condition `type` of `status.conditions`: (status, reason, message).
pub fn condition<'a>(obj: &'a Value, ty: &str) -> Option<(&'a str, &'a str, &'a str)> {
    obj.get("status")?
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
        .map(|c| {
            (
                c.get("status").and_then(Value::as_str).unwrap_or(""),
                c.get("reason").and_then(Value::as_str).unwrap_or(""),
                c.get("message").and_then(Value::as_str).unwrap_or(""),
            )
        })
}

fn generation_observed(obj: &Value) -> Option<Verdict> {
    let gen = i(obj, &["metadata", "generation"]);
    let seen = i(obj, &["status", "observedGeneration"]);
    match (gen, seen) {
        (Some(g), Some(o)) if o >= g => None,
        (Some(g), Some(o)) => Some(Verdict::waiting(format!(
            "generation {g} not yet observed (observed {o})"
        ))),
        (Some(g), None) => Some(Verdict::waiting(format!("generation {g} not yet observed"))),
        _ => None,
    }
}

/// Go's `intstr` scaled against a total: `25%` of 4 is 1; `round_up` for
/// maxSurge and DaemonSet maxUnavailable, down for Deployment maxUnavailable.
fn scaled(v: Option<&Value>, total: i64, default: &str, round_up: bool) -> i64 {
    let text = match v {
        Some(Value::Number(n)) => return n.as_i64().unwrap_or(0),
        Some(Value::String(s)) => s.as_str(),
        _ => default,
    };
    match text.strip_suffix('%') {
        Some(p) => {
            let p: i64 = p.trim().parse().unwrap_or(0);
            let x = total * p;
            if round_up {
                (x + 99) / 100
            } else {
                x / 100
            }
        }
        None => text.trim().parse().unwrap_or(0),
    }
}

/// Helm 3's `MaxUnavailable` for a Deployment.
fn deployment_max_unavailable(obj: &Value, replicas: i64) -> i64 {
    let strategy = obj.get("spec").and_then(|s| s.get("strategy"));
    let ty = strategy
        .and_then(|s| s.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("RollingUpdate");
    if ty != "RollingUpdate" || replicas == 0 {
        return 0;
    }
    let ru = strategy.and_then(|s| s.get("rollingUpdate"));
    let surge = scaled(ru.and_then(|r| r.get("maxSurge")), replicas, "25%", true);
    let mut unavailable = scaled(
        ru.and_then(|r| r.get("maxUnavailable")),
        replicas,
        "25%",
        false,
    );
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    unavailable.min(replicas)
}

/// Evaluates one observation with the given strategy.
pub fn check(obj: &Value, strategy: WaitStrategy, wait_for_jobs: bool) -> Verdict {
    match strategy {
        WaitStrategy::None => Verdict::ready("not waited on"),
        WaitStrategy::Legacy => legacy(obj, wait_for_jobs),
        WaitStrategy::Kstatus => kstatus(obj),
    }
}

/// Helm 3's `ReadyChecker.IsReady`, on the object's own status: the
/// rule of the object's kind. For a Deployment, the counts of the updated
/// pods stand for the new ReplicaSet's (`updatedReplicas`,
/// `availableReplicas`), observed at the current generation.
pub fn legacy(obj: &Value, wait_for_jobs: bool) -> Verdict {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    match kind {
        "Deployment" => legacy_deployment(obj),
        "StatefulSet" => legacy_stateful_set(obj),
        "DaemonSet" => legacy_daemon_set(obj),
        "ReplicaSet" | "ReplicationController" => legacy_replica_set(obj),
        "Pod" => legacy_pod(obj),
        "PersistentVolumeClaim" => legacy_pvc(obj),
        "Service" => legacy_service(obj),
        "CustomResourceDefinition" => legacy_crd(obj),
        "Job" if wait_for_jobs => legacy_job(obj),
        _ => Verdict::ready("ready once written"),
    }
}

/// `spec.replicas`, 1 when unset.
fn spec_replicas(obj: &Value) -> i64 {
    i(obj, &["spec", "replicas"]).unwrap_or(1)
}

/// Helm 3's Deployment rule: not paused, the generation observed, and
/// enough updated pods ready (all but `maxUnavailable`).
fn legacy_deployment(obj: &Value) -> Verdict {
    let spec_replicas = spec_replicas(obj);
    if obj
        .get("spec")
        .and_then(|s| s.get("paused"))
        .and_then(Value::as_bool)
        == Some(true)
    {
        return Verdict::ready("paused");
    }
    if let Some(v) = generation_observed(obj) {
        return v;
    }
    let updated = i(obj, &["status", "updatedReplicas"]).unwrap_or(0);
    let ready_new = i(obj, &["status", "updatedReadyReplicas"])
        .or_else(|| i(obj, &["status", "readyReplicas"]).map(|r| r.min(updated)))
        .unwrap_or(0);
    let need = spec_replicas - deployment_max_unavailable(obj, spec_replicas);
    if updated < need.max(0) || ready_new < need {
        return Verdict::waiting(format!(
            "{ready_new} of {spec_replicas} updated replicas ready (need {need})"
        ));
    }
    Verdict::ready(format!(
        "{ready_new} of {spec_replicas} updated replicas ready"
    ))
}

/// Helm 3's StatefulSet rule: a rolling update rolled out past its
/// partition, every pod ready, and (without a partition) the revisions
/// equal.
fn legacy_stateful_set(obj: &Value) -> Verdict {
    let spec_replicas = spec_replicas(obj);
    if let Some(v) = generation_observed(obj) {
        return v;
    }
    let strategy = s(obj, &["spec", "updateStrategy", "type"]).unwrap_or("RollingUpdate");
    if strategy != "RollingUpdate" {
        return Verdict::ready("updateStrategy is not RollingUpdate");
    }
    let partition = i(
        obj,
        &["spec", "updateStrategy", "rollingUpdate", "partition"],
    )
    .unwrap_or(0);
    let updated = i(obj, &["status", "updatedReplicas"]).unwrap_or(0);
    let ready = i(obj, &["status", "readyReplicas"]).unwrap_or(0);
    if updated < spec_replicas - partition {
        return Verdict::waiting(format!("{updated} of {spec_replicas} pods updated"));
    }
    if ready != spec_replicas {
        return Verdict::waiting(format!("{ready} of {spec_replicas} pods ready"));
    }
    if partition == 0
        && s(obj, &["status", "currentRevision"]) != s(obj, &["status", "updateRevision"])
    {
        return Verdict::waiting("currentRevision is not updateRevision yet");
    }
    Verdict::ready(format!("{ready} of {spec_replicas} pods ready"))
}

/// Helm 3's DaemonSet rule: every scheduled pod updated, and all but
/// `maxUnavailable` of them ready.
fn legacy_daemon_set(obj: &Value) -> Verdict {
    if let Some(v) = generation_observed(obj) {
        return v;
    }
    let strategy = s(obj, &["spec", "updateStrategy", "type"]).unwrap_or("RollingUpdate");
    if strategy != "RollingUpdate" {
        return Verdict::ready("updateStrategy is not RollingUpdate");
    }
    let desired = i(obj, &["status", "desiredNumberScheduled"]).unwrap_or(0);
    let updated = i(obj, &["status", "updatedNumberScheduled"]).unwrap_or(0);
    let ready = i(obj, &["status", "numberReady"]).unwrap_or(0);
    if updated != desired {
        return Verdict::waiting(format!("{updated} of {desired} pods updated"));
    }
    let max_unavailable = scaled(
        obj.get("spec")
            .and_then(|s| s.get("updateStrategy"))
            .and_then(|u| u.get("rollingUpdate"))
            .and_then(|r| r.get("maxUnavailable")),
        desired,
        "1",
        true,
    );
    let need = desired - max_unavailable;
    if ready < need {
        return Verdict::waiting(format!("{ready} of {desired} updated pods ready"));
    }
    Verdict::ready(format!("{ready} of {desired} updated pods ready"))
}

/// Helm 3's ReplicaSet (and ReplicationController) rule: every pod ready.
fn legacy_replica_set(obj: &Value) -> Verdict {
    let spec_replicas = spec_replicas(obj);
    if let Some(v) = generation_observed(obj) {
        return v;
    }
    let ready = i(obj, &["status", "readyReplicas"]).unwrap_or(0);
    if ready < spec_replicas {
        return Verdict::waiting(format!("{ready} of {spec_replicas} pods ready"));
    }
    Verdict::ready(format!("{ready} of {spec_replicas} pods ready"))
}

/// Helm 3's Pod rule: the `Ready` condition.
fn legacy_pod(obj: &Value) -> Verdict {
    match condition(obj, "Ready") {
        Some(("True", _, _)) => Verdict::ready("Ready"),
        _ => Verdict::waiting(format!(
            "phase {}",
            s(obj, &["status", "phase"]).unwrap_or("Pending")
        )),
    }
}

/// Helm 3's PersistentVolumeClaim rule: `Bound`.
fn legacy_pvc(obj: &Value) -> Verdict {
    match s(obj, &["status", "phase"]) {
        Some("Bound") => Verdict::ready("Bound"),
        p => Verdict::waiting(format!("phase {}", p.unwrap_or("Pending"))),
    }
}

/// Helm 3's Service rule: a cluster IP, and for a LoadBalancer an
/// external IP or an ingress.
fn legacy_service(obj: &Value) -> Verdict {
    let ty = s(obj, &["spec", "type"]).unwrap_or("ClusterIP");
    if ty == "ExternalName" {
        return Verdict::ready("ExternalName");
    }
    if s(obj, &["spec", "clusterIP"]).unwrap_or("").is_empty() {
        return Verdict::waiting("no cluster IP yet");
    }
    if ty == "LoadBalancer" {
        let ext = obj
            .get("spec")
            .and_then(|s| s.get("externalIPs"))
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        let ingress = obj
            .get("status")
            .and_then(|s| s.get("loadBalancer"))
            .and_then(|l| l.get("ingress"))
            .is_some_and(|v| !v.is_null());
        if !ext && !ingress {
            return Verdict::waiting("no load balancer ingress yet");
        }
    }
    Verdict::ready("cluster IP assigned")
}

/// Helm 3's CRD rule: Established (or its names refused, which no wait
/// would change).
fn legacy_crd(obj: &Value) -> Verdict {
    if matches!(condition(obj, "Established"), Some(("True", _, _)))
        || matches!(condition(obj, "NamesAccepted"), Some(("False", _, _)))
    {
        Verdict::ready("Established")
    } else {
        Verdict::waiting("not Established yet")
    }
}

/// Helm 3's Job rule (with `--wait-for-jobs`): failed past its backoff
/// limit, or complete.
fn legacy_job(obj: &Value) -> Verdict {
    let failed = i(obj, &["status", "failed"]).unwrap_or(0);
    let backoff = i(obj, &["spec", "backoffLimit"]).unwrap_or(6);
    if failed > backoff {
        return Verdict::failed(format!("job is failed ({failed} failed pods)"));
    }
    let completions = i(obj, &["spec", "completions"]);
    let succeeded = i(obj, &["status", "succeeded"]).unwrap_or(0);
    if let Some(c) = completions {
        if succeeded < c {
            return Verdict::waiting(format!("{succeeded} of {c} completions"));
        }
    }
    Verdict::ready("complete")
}

/// kstatus `Compute`: `Current` is ready, `Failed` is a failure. The
/// rules every object follows (terminating, generation, the standard
/// `Reconciling` and `Stalled` conditions) come first, then the rule of
/// its kind.
pub fn kstatus(obj: &Value) -> Verdict {
    if let Some(v) = kstatus_generic(obj) {
        return v;
    }
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    match (group, kind) {
        ("", "Secret")
        | ("", "ConfigMap")
        | ("batch", "CronJob")
        | ("policy", "PodDisruptionBudget") => Verdict::ready("Current"),
        ("", "Service") => kstatus_service(obj),
        ("", "PersistentVolumeClaim") => kstatus_pvc(obj),
        ("", "Pod") => kstatus_pod(obj),
        ("apps", "Deployment") => kstatus_deployment(obj),
        ("apps", "ReplicaSet") => kstatus_replica_set(obj),
        ("apps", "DaemonSet") => kstatus_daemon_set(obj),
        ("apps", "StatefulSet") => kstatus_stateful_set(obj),
        ("batch", "Job") => kstatus_job(obj),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => kstatus_crd(obj),
        _ => kstatus_other(obj),
    }
}

/// kstatus's checks before the kind's own: a terminating object, an
/// unobserved generation, a `Reconciling` or `Stalled` condition.
fn kstatus_generic(obj: &Value) -> Option<Verdict> {
    if obj
        .get("metadata")
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|v| !v.is_null())
    {
        return Some(Verdict::waiting("Terminating"));
    }
    // kstatus compares the generations only when the status has one: a
    // Secret or a ServiceAccount has no controller to observe it.
    if obj.pointer("/status/observedGeneration").is_some() {
        if let Some(v) = generation_observed(obj) {
            return Some(v);
        }
    }
    let conds = obj
        .get("status")
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)?;
    for c in conds {
        let ty = c.get("type").and_then(Value::as_str);
        let st = c.get("status").and_then(Value::as_str);
        let msg = c.get("message").and_then(Value::as_str).unwrap_or("");
        match (ty, st) {
            (Some("Reconciling"), Some("True")) => {
                return Some(Verdict::waiting(format!("Reconciling: {msg}")))
            }
            (Some("Stalled"), Some("True")) => {
                return Some(Verdict::failed(format!("Stalled: {msg}")))
            }
            _ => {}
        }
    }
    None
}

/// `status.<f>`, 0 when unset.
fn status_count(obj: &Value, f: &str) -> i64 {
    i(obj, &["status", f]).unwrap_or(0)
}

/// kstatus's Service rule: a LoadBalancer has its cluster IP.
fn kstatus_service(obj: &Value) -> Verdict {
    if s(obj, &["spec", "type"]) == Some("LoadBalancer")
        && s(obj, &["spec", "clusterIP"]).unwrap_or("").is_empty()
    {
        Verdict::waiting("no cluster IP yet")
    } else {
        Verdict::ready("Current")
    }
}

/// kstatus's PersistentVolumeClaim rule: `Bound`.
fn kstatus_pvc(obj: &Value) -> Verdict {
    match s(obj, &["status", "phase"]) {
        Some("Bound") => Verdict::ready("Bound"),
        _ => Verdict::waiting("NotBound"),
    }
}

/// kstatus's Pod rule: finished, or running and Ready; a crash loop is a
/// failure.
fn kstatus_pod(obj: &Value) -> Verdict {
    match s(obj, &["status", "phase"]).unwrap_or("") {
        "Succeeded" | "Failed" => Verdict::ready("Current"),
        "Running" => {
            if matches!(condition(obj, "Ready"), Some(("True", _, _))) {
                return Verdict::ready("Current");
            }
            let crash = obj
                .get("status")
                .and_then(|s| s.get("containerStatuses"))
                .and_then(Value::as_array)
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| s(c, &["state", "waiting", "reason"]) == Some("CrashLoopBackOff"))
                });
            if crash {
                Verdict::failed("container in CrashLoopBackOff")
            } else {
                Verdict::waiting("Running, not Ready")
            }
        }
        p => Verdict::waiting(format!(
            "phase {}",
            if p.is_empty() { "Pending" } else { p }
        )),
    }
}

/// kstatus's Deployment rule: no progress deadline exceeded, every
/// replica updated, available and ready, no old one left, and the
/// `Available` condition.
fn kstatus_deployment(obj: &Value) -> Verdict {
    let spec_replicas = spec_replicas(obj);
    let st = |f: &str| status_count(obj, f);
    if let Some(("True" | "False", "ProgressDeadlineExceeded", m)) = condition(obj, "Progressing") {
        return Verdict::failed(format!("ProgressDeadlineExceeded: {m}"));
    }
    let (replicas, updated, available, ready) = (
        st("replicas"),
        st("updatedReplicas"),
        st("availableReplicas"),
        st("readyReplicas"),
    );
    if spec_replicas > replicas {
        return Verdict::waiting(format!("Replicas: {replicas}/{spec_replicas}"));
    }
    if spec_replicas > updated {
        return Verdict::waiting(format!("Updated: {updated}/{spec_replicas}"));
    }
    if replicas > spec_replicas {
        return Verdict::waiting(format!("Pending termination: {}", replicas - spec_replicas));
    }
    if updated > available {
        return Verdict::waiting(format!("Available: {available}/{updated}"));
    }
    if spec_replicas > ready {
        return Verdict::waiting(format!("Ready: {ready}/{spec_replicas}"));
    }
    if !matches!(condition(obj, "Available"), Some(("True", _, _))) {
        return Verdict::waiting("Deployment not Available");
    }
    Verdict::ready(format!("Deployment is available. Replicas: {replicas}"))
}

/// kstatus's ReplicaSet rule: every replica ready and available.
fn kstatus_replica_set(obj: &Value) -> Verdict {
    let spec_replicas = spec_replicas(obj);
    let st = |f: &str| status_count(obj, f);
    if st("readyReplicas") < spec_replicas || st("availableReplicas") < spec_replicas {
        Verdict::waiting(format!("Ready: {}/{spec_replicas}", st("readyReplicas")))
    } else {
        Verdict::ready("Current")
    }
}

/// kstatus's DaemonSet rule: every desired pod scheduled, updated,
/// available and ready.
fn kstatus_daemon_set(obj: &Value) -> Verdict {
    let desired = i(obj, &["status", "desiredNumberScheduled"]);
    let Some(desired) = desired else {
        return Verdict::waiting("desiredNumberScheduled not set");
    };
    for (f, label) in [
        ("currentNumberScheduled", "Current"),
        ("updatedNumberScheduled", "Updated"),
        ("numberAvailable", "Available"),
        ("numberReady", "Ready"),
    ] {
        let n = status_count(obj, f);
        if desired > n {
            return Verdict::waiting(format!("{label}: {n}/{desired}"));
        }
    }
    Verdict::ready(format!(
        "All replicas scheduled as expected. Replicas: {desired}"
    ))
}

/// kstatus's StatefulSet rule: every replica ready, none left over, and
/// rolled out (past the partition, or to the update revision).
fn kstatus_stateful_set(obj: &Value) -> Verdict {
    let spec_replicas = spec_replicas(obj);
    let st = |f: &str| status_count(obj, f);
    if s(obj, &["spec", "updateStrategy", "type"]) == Some("OnDelete") {
        return Verdict::ready("OnDelete");
    }
    let (replicas, ready, current, updated) = (
        st("replicas"),
        st("readyReplicas"),
        st("currentReplicas"),
        st("updatedReplicas"),
    );
    if spec_replicas > replicas {
        return Verdict::waiting(format!("Replicas: {replicas}/{spec_replicas}"));
    }
    if spec_replicas > ready {
        return Verdict::waiting(format!("Ready: {ready}/{spec_replicas}"));
    }
    if replicas > spec_replicas {
        return Verdict::waiting("Pending termination");
    }
    let partition = i(
        obj,
        &["spec", "updateStrategy", "rollingUpdate", "partition"],
    );
    if let Some(p) = partition.filter(|p| *p > 0) {
        if updated < spec_replicas - p {
            return Verdict::waiting(format!("Updated: {updated}/{}", spec_replicas - p));
        }
        return Verdict::ready("Partition rollout complete");
    }
    if spec_replicas > current {
        return Verdict::waiting(format!("Updated: {current}/{spec_replicas}"));
    }
    if s(obj, &["status", "currentRevision"]) != s(obj, &["status", "updateRevision"]) {
        return Verdict::waiting("currentRevision != updateRevision");
    }
    Verdict::ready("All replicas scheduled as expected")
}

/// kstatus's Job rule: complete, failed, or started (a running Job is
/// `Current`).
fn kstatus_job(obj: &Value) -> Verdict {
    if matches!(condition(obj, "Complete"), Some(("True", _, _))) {
        return Verdict::ready("Job Completed");
    }
    if let Some(("True", _, m)) = condition(obj, "Failed") {
        return Verdict::failed(format!("Job Failed: {m}"));
    }
    if obj.get("status").and_then(|s| s.get("startTime")).is_none() {
        return Verdict::waiting("Job not started");
    }
    Verdict::ready("Job in progress")
}

/// kstatus's CRD rule: names accepted and Established.
fn kstatus_crd(obj: &Value) -> Verdict {
    if let Some(("False", _, m)) = condition(obj, "NamesAccepted") {
        return Verdict::failed(format!("names not accepted: {m}"));
    }
    match condition(obj, "Established") {
        Some(("True", _, _)) => Verdict::ready("Established"),
        Some(("False", r, m)) if r != "Installing" => Verdict::failed(m.to_string()),
        _ => Verdict::waiting("not Established yet"),
    }
}

/// kstatus's rule for any other kind: a `Ready` condition, where there
/// is one, is True.
fn kstatus_other(obj: &Value) -> Verdict {
    match condition(obj, "Ready") {
        Some(("True", _, _)) => Verdict::ready("Ready"),
        Some((_, _, m)) => Verdict::waiting(format!("Ready is not True: {m}")),
        None => Verdict::ready("Current"),
    }
}

/// Whether a hook (Job or Pod) has finished: `Some(Ok)` succeeded,
/// `Some(Err(reason))` failed, `None` still running. Other kinds finish at once.
pub(crate) fn hook_done(obj: &Value) -> Option<Result<(), String>> {
    match obj.get("kind").and_then(Value::as_str) {
        Some("Job") => {
            if matches!(condition(obj, "Complete"), Some(("True", _, _))) {
                Some(Ok(()))
            } else if let Some(("True", r, _)) = condition(obj, "Failed") {
                Some(Err(if r.is_empty() {
                    "BackoffLimitExceeded".into()
                } else {
                    r.to_string()
                }))
            } else {
                None
            }
        }
        Some("Pod") => match s(obj, &["status", "phase"]) {
            Some("Succeeded") => Some(Ok(())),
            Some("Failed") => Some(Err("pod failed".into())),
            _ => None,
        },
        _ => Some(Ok(())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dep(gen: i64, observed: i64, updated: i64, ready: i64, available: i64) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "generation": gen},
            "spec": {"replicas": 2},
            "status": {"observedGeneration": observed, "replicas": 2, "updatedReplicas": updated,
                        "readyReplicas": ready, "availableReplicas": available,
                        "conditions": [{"type": "Available", "status": "True"}]}
        })
    }

    #[test]
    fn kstatus_needs_no_observed_generation_where_no_controller_writes_one() {
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "a", "generation": 1}});
        assert!(kstatus(&sa).ready);
        let dep = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "generation": 2},
            "spec": {"replicas": 1},
            "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1,
                       "readyReplicas": 1, "availableReplicas": 1}});
        assert!(!kstatus(&dep).ready);
    }

    #[test]
    fn a_previous_rollout_does_not_pass() {
        // Generation 2 written, the controller still reports generation 1 as complete.
        let d = dep(2, 1, 2, 2, 2);
        assert!(!legacy(&d, false).ready);
        assert!(!kstatus(&d).ready);
        let d = dep(2, 2, 2, 2, 2);
        assert!(legacy(&d, false).ready);
        assert!(kstatus(&d).ready);
    }

    #[test]
    fn deployment_needs_updated_ready_pods() {
        // replicas 2 with 25%/25%: surge 1, unavailable 0 -> 2 ready needed.
        let d = dep(3, 3, 1, 2, 2);
        let v = legacy(&d, false);
        assert!(!v.ready, "{v:?}");
        assert!(!kstatus(&d).ready);
    }

    #[test]
    fn daemonset_message_names_counts() {
        let ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"generation": 1},
            "status": {"observedGeneration": 1, "desiredNumberScheduled": 2, "updatedNumberScheduled": 2, "numberReady": 0}});
        let v = legacy(&ds, false);
        assert!(!v.ready);
        assert_eq!(v.message, "0 of 2 updated pods ready");
    }

    #[test]
    fn jobs_and_crds() {
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"backoffLimit": 0, "completions": 1},
            "status": {"failed": 1}});
        assert!(legacy(&job, true).failed);
        assert!(legacy(&job, false).ready);
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "status": {"conditions": [{"type": "Established", "status": "True"}]}});
        assert!(legacy(&crd, false).ready && kstatus(&crd).ready);
        assert_eq!(hook_done(&job), None);
    }
}
