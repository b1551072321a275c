//! The simulated cluster's controllers: the status Kubernetes' controllers
//! (and kubelets) would give an object, as a function of its spec, its
//! generation and the time since its last write.
//!
//! Nothing here writes: the simulated cluster computes the status when an
//! object is read, so controller updates never count as writes and a
//! driven clock moves every object at once.
//!
//! Per-object behaviour comes from annotations in the manifest:
//!
//! | annotation | effect |
//! |---|---|
//! | `sim.rudder.io/ready: never` | the object never becomes ready (pods never Ready; a Job never completes) |
//! | `sim.rudder.io/ready: fail` | pods fail: a Job fails, a Deployment's rollout exceeds its progress deadline at once |
//! | `sim.rudder.io/ready-after: <duration>` | ready that long after the write (a Go duration: `2s`, `500ms`) |
//! | `sim.rudder.io/reject: <message>` | the write fails with 422 and that message (checked by the writer) |
//! | `sim.rudder.io/pods: <state>` | never ready; lists show its pods `unschedulable`, `image-pull`, `crashloop` or `probe-failure`, with their events ([`super::sim::pods`]) |
use serde_json::{json, Map, Value};
use std::time::Duration;

/// `sim.rudder.io/ready`.
pub const READY: &str = "sim.rudder.io/ready";
/// `sim.rudder.io/ready-after`.
pub const READY_AFTER: &str = "sim.rudder.io/ready-after";
/// `sim.rudder.io/reject`.
pub const REJECT: &str = "sim.rudder.io/reject";

/// How an object behaves, from its annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Ready once `delay` has passed since the write.
    After(Duration),
    /// Never ready.
    Never,
    /// Fails.
    Fail,
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get("metadata")?.get("annotations")?.get(key)?.as_str()
}

/// The behaviour an object's annotations ask for; `default_delay` when
/// they ask for nothing.
pub fn behaviour(obj: &Value, default_delay: Duration) -> Behaviour {
    // Pods played stuck (`sim.rudder.io/pods`) keep their workload unready.
    if super::sim::pods::state(obj).is_some() {
        return Behaviour::Never;
    }
    match annotation(obj, READY) {
        Some("never") => return Behaviour::Never,
        Some("fail") => return Behaviour::Fail,
        _ => {}
    }
    if let Some(d) =
        annotation(obj, READY_AFTER).and_then(|s| crate::duration::parse(s.trim()).ok())
    {
        return Behaviour::After(d);
    }
    Behaviour::After(default_delay)
}

/// The rejection message a write of `obj` must fail with, if any.
pub fn rejection(obj: &Value) -> Option<String> {
    annotation(obj, REJECT).map(str::to_string)
}

fn int(v: &Value, path: &[&str]) -> Option<i64> {
    let mut cur = v;
    for p in path {
        cur = cur.get(*p)?;
    }
    cur.as_i64()
}

fn cond(ty: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": ty, "status": status, "reason": reason, "message": message,
           "lastTransitionTime": "2026-01-01T00:00:00Z", "lastUpdateTime": "2026-01-01T00:00:00Z"})
}

/// Whether objects of `group`/`kind` have a controller here (their status
/// is [`status`]'s).
pub fn controlled(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        (
            "apps",
            "Deployment" | "ReplicaSet" | "DaemonSet" | "StatefulSet"
        ) | (
            "",
            "ReplicationController" | "Pod" | "PersistentVolumeClaim" | "Service"
        ) | ("batch", "Job")
    )
}

/// The status of `obj` `age` after its last write, in a cluster of
/// `nodes` nodes, or `None` for kinds without a controller (their status,
/// if any, is left as it is).
pub fn status(obj: &Value, age: Duration, default_delay: Duration, nodes: i64) -> Option<Value> {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let b = behaviour(obj, default_delay);
    let o = Observed {
        obj,
        b,
        ready: matches!(b, Behaviour::After(d) if age >= d),
        age,
        gen: int(obj, &["metadata", "generation"]).unwrap_or(1),
        name: obj
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or(""),
        replicas: int(obj, &["spec", "replicas"]).unwrap_or(1),
        nodes,
    };
    let mut s = Map::new();
    match (group, kind) {
        ("apps", "Deployment") => deployment(&o, &mut s),
        ("apps", "ReplicaSet") | ("", "ReplicationController") => replica_set(&o, &mut s),
        ("apps", "DaemonSet") => daemon_set(&o, &mut s),
        ("apps", "StatefulSet") => stateful_set(&o, &mut s),
        ("batch", "Job") => job(&o, &mut s),
        ("", "Pod") => pod(&o, &mut s),
        ("", "PersistentVolumeClaim") => persistent_volume_claim(&o, &mut s),
        ("", "Service") => service(&o, &mut s),
        _ => return None,
    }
    Some(Value::Object(s))
}

/// What a controller sees of an object: what [`status`] computes from.
#[derive(Clone, Copy)]
struct Observed<'a> {
    obj: &'a Value,
    /// What its annotations ask for.
    b: Behaviour,
    /// Whether it is ready by now.
    ready: bool,
    /// The time since its last spec-changing write.
    age: Duration,
    /// `metadata.generation` (default 1).
    gen: i64,
    /// `metadata.name`.
    name: &'a str,
    /// `spec.replicas` (default 1).
    replicas: i64,
    /// The cluster's Node objects.
    nodes: i64,
}

/// A Deployment: its replicas, and the `Available` and `Progressing`
/// conditions (past `progressDeadlineSeconds`, or failing: the deadline
/// exceeded).
fn deployment(o: &Observed<'_>, s: &mut Map<String, Value>) {
    let Observed {
        obj,
        b,
        ready,
        age,
        gen,
        name,
        replicas,
        ..
    } = *o;
    let r = if ready { replicas } else { 0 };
    s.insert("observedGeneration".into(), json!(gen));
    s.insert("replicas".into(), json!(replicas));
    s.insert("updatedReplicas".into(), json!(replicas));
    s.insert("readyReplicas".into(), json!(r));
    s.insert("availableReplicas".into(), json!(r));
    if !ready {
        s.insert("unavailableReplicas".into(), json!(replicas));
    }
    let deadline = int(obj, &["spec", "progressDeadlineSeconds"]).unwrap_or(600);
    let progressing = if ready {
        cond(
            "Progressing",
            "True",
            "NewReplicaSetAvailable",
            &format!("ReplicaSet \"{name}\" has successfully progressed."),
        )
    } else if b == Behaviour::Fail || age >= Duration::from_secs(deadline.max(0) as u64) {
        cond(
            "Progressing",
            "False",
            "ProgressDeadlineExceeded",
            &format!("ReplicaSet \"{name}\" has timed out progressing."),
        )
    } else {
        cond(
            "Progressing",
            "True",
            "ReplicaSetUpdated",
            &format!("ReplicaSet \"{name}\" is progressing."),
        )
    };
    let available = if ready {
        cond(
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
        )
    } else {
        cond(
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
        )
    };
    s.insert("conditions".into(), json!([available, progressing]));
}

/// A ReplicaSet or ReplicationController: its replica counts.
fn replica_set(o: &Observed<'_>, s: &mut Map<String, Value>) {
    let Observed {
        ready,
        gen,
        replicas,
        ..
    } = *o;
    let r = if ready { replicas } else { 0 };
    s.insert("observedGeneration".into(), json!(gen));
    s.insert("replicas".into(), json!(replicas));
    s.insert("fullyLabeledReplicas".into(), json!(replicas));
    s.insert("readyReplicas".into(), json!(r));
    s.insert("availableReplicas".into(), json!(r));
}

/// A DaemonSet: one pod per node (at least one).
fn daemon_set(o: &Observed<'_>, s: &mut Map<String, Value>) {
    let Observed {
        ready, gen, nodes, ..
    } = *o;
    let n = nodes.max(1);
    let r = if ready { n } else { 0 };
    s.insert("observedGeneration".into(), json!(gen));
    s.insert("desiredNumberScheduled".into(), json!(n));
    s.insert("currentNumberScheduled".into(), json!(n));
    s.insert("updatedNumberScheduled".into(), json!(n));
    s.insert("numberReady".into(), json!(r));
    s.insert("numberAvailable".into(), json!(r));
    s.insert("numberMisscheduled".into(), json!(0));
    if !ready {
        s.insert("numberUnavailable".into(), json!(n));
    }
}

/// A StatefulSet: its replica counts and revisions (the current one
/// catches up with the update revision when ready).
fn stateful_set(o: &Observed<'_>, s: &mut Map<String, Value>) {
    let Observed {
        ready,
        gen,
        name,
        replicas,
        ..
    } = *o;
    let r = if ready { replicas } else { 0 };
    let update = format!("{name}-{gen}");
    let current = if ready || gen <= 1 {
        update.clone()
    } else {
        format!("{name}-{}", gen - 1)
    };
    s.insert("observedGeneration".into(), json!(gen));
    s.insert("replicas".into(), json!(replicas));
    s.insert("readyReplicas".into(), json!(r));
    s.insert("availableReplicas".into(), json!(r));
    s.insert(
        "currentReplicas".into(),
        json!(if ready { replicas } else { 0 }),
    );
    s.insert("updatedReplicas".into(), json!(replicas));
    s.insert("currentRevision".into(), json!(current));
    s.insert("updateRevision".into(), json!(update));
}

/// A Job: active until ready, then complete; failed past its backoff
/// limit when failing.
fn job(o: &Observed<'_>, s: &mut Map<String, Value>) {
    let Observed { obj, b, ready, .. } = *o;
    let completions = int(obj, &["spec", "completions"]).unwrap_or(1);
    let backoff = int(obj, &["spec", "backoffLimit"]).unwrap_or(6);
    s.insert("startTime".into(), json!("2026-01-01T00:00:00Z"));
    match b {
        Behaviour::Fail => {
            s.insert("failed".into(), json!(backoff + 1));
            s.insert(
                "conditions".into(),
                json!([cond(
                    "Failed",
                    "True",
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit"
                )]),
            );
        }
        _ if ready => {
            s.insert("succeeded".into(), json!(completions));
            s.insert("completionTime".into(), json!("2026-01-01T00:00:00Z"));
            s.insert(
                "conditions".into(),
                json!([cond("Complete", "True", "", "")]),
            );
        }
        _ => {
            s.insert("active".into(), json!(1));
        }
    }
}

/// A Pod: Pending until ready, then Running; Failed when failing.
fn pod(o: &Observed<'_>, s: &mut Map<String, Value>) {
    let Observed { b, ready, .. } = *o;
    if b == Behaviour::Fail {
        s.insert("phase".into(), json!("Failed"));
    } else if ready {
        s.insert("phase".into(), json!("Running"));
        s.insert(
            "conditions".into(),
            json!([
                cond("Ready", "True", "", ""),
                cond("PodScheduled", "True", "", "")
            ]),
        );
    } else {
        s.insert("phase".into(), json!("Pending"));
        s.insert(
            "conditions".into(),
            json!([cond(
                "Ready",
                "False",
                "ContainersNotReady",
                "containers with unready status"
            )]),
        );
    }
}

/// A PersistentVolumeClaim: Pending until ready, then Bound.
fn persistent_volume_claim(o: &Observed<'_>, s: &mut Map<String, Value>) {
    let Observed { ready, .. } = *o;
    s.insert(
        "phase".into(),
        json!(if ready { "Bound" } else { "Pending" }),
    );
}

/// A Service: a LoadBalancer gets its ingress address when ready.
fn service(o: &Observed<'_>, s: &mut Map<String, Value>) {
    let Observed { obj, ready, .. } = *o;
    if obj
        .get("spec")
        .and_then(|x| x.get("type"))
        .and_then(Value::as_str)
        == Some("LoadBalancer")
    {
        let ingress = if ready {
            json!({"ingress": [{"ip": "192.0.2.10"}]})
        } else {
            json!({})
        };
        s.insert("loadBalancer".into(), ingress);
    } else {
        s.insert("loadBalancer".into(), json!({}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::ready;
    use crate::plan::WaitStrategy;

    fn with_status(mut obj: Value, age: Duration) -> Value {
        let s = status(&obj, age, Duration::ZERO, 2).unwrap();
        obj["status"] = s;
        obj
    }

    #[test]
    fn objects_converge_unless_told_not_to() {
        let dep = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "generation": 3}, "spec": {"replicas": 2}});
        let d = with_status(dep.clone(), Duration::ZERO);
        assert!(ready::legacy(&d, false).ready);
        assert!(ready::kstatus(&d).ready);
        let mut never = dep.clone();
        never["metadata"]["annotations"] = json!({READY: "never"});
        let d = with_status(never, Duration::from_secs(5));
        assert!(!ready::check(&d, WaitStrategy::Legacy, false).ready);
        let mut later = dep;
        later["metadata"]["annotations"] = json!({READY_AFTER: "2s"});
        assert!(!ready::legacy(&with_status(later.clone(), Duration::from_secs(1)), false).ready);
        assert!(ready::legacy(&with_status(later, Duration::from_secs(2)), false).ready);
    }

    #[test]
    fn a_never_ready_daemonset_reports_counts() {
        let ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "kube-apiserver", "generation": 1, "annotations": {READY: "never"}}});
        let d = with_status(ds, Duration::from_secs(1));
        let v = ready::legacy(&d, false);
        assert_eq!(v.message, "0 of 2 updated pods ready");
    }

    #[test]
    fn failing_jobs_fail() {
        let job = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "migrate", "generation": 1, "annotations": {READY: "fail"}},
            "spec": {"backoffLimit": 0}});
        let j = with_status(job, Duration::ZERO);
        assert_eq!(
            ready::hook_done(&j),
            Some(Err("BackoffLimitExceeded".into()))
        );
        assert!(ready::legacy(&j, true).failed);
    }
}
