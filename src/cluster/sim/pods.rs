//! The simulated cluster's stuck pods: a workload annotated
//! `sim.rudder.io/pods: <state>` (on the object or on its pod template)
//! never becomes ready, and lists of Pods and Events show pods of it in that
//! state, with the events a real cluster gives:
//!
//! | state | pods | events |
//! |---|---|---|
//! | `unschedulable` | Pending, `PodScheduled=False` (`Unschedulable`) | `FailedScheduling` with the scheduler's message |
//! | `image-pull` | Pending, container waiting `ImagePullBackOff` | `Failed` (`ErrImagePull`), `BackOff` |
//! | `crashloop` | Running, container waiting `CrashLoopBackOff`, 5 restarts, last exit code 1 | `BackOff`; the log has a line |
//! | `probe-failure` | Running, container running but not ready | `Unhealthy` (`Readiness probe failed: ...`) |
//!
//! The pods are not stored: they exist only in what lists answer, as a
//! view of the workload, with uids and names derived from it.
use serde_json::{json, Value};

/// `sim.rudder.io/pods`.
pub const PODS: &str = "sim.rudder.io/pods";

/// The kinds whose pods can be played.
pub const WORKLOADS: [(&str, &str); 4] = [
    ("apps", "Deployment"),
    ("apps", "StatefulSet"),
    ("apps", "DaemonSet"),
    ("batch", "Job"),
];

fn s<'v>(v: &'v Value, ptr: &str) -> &'v str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// The pod state a workload asks for, from its annotations or its pod
/// template's.
pub fn state(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/annotations/sim.rudder.io~1pods")
        .or_else(|| obj.pointer("/spec/template/metadata/annotations/sim.rudder.io~1pods"))
        .and_then(Value::as_str)
}

fn timestamp(ms: u64) -> String {
    let secs = i64::try_from(ms / 1000).unwrap_or(0);
    jiff::Timestamp::from_second(secs)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

/// The pods (at most 3) of `workload`, written at `written_ms`, in a
/// cluster of `nodes` nodes, with their events.
pub fn pods_and_events(workload: &Value, written_ms: u64, nodes: i64) -> (Vec<Value>, Vec<Value>) {
    let Some(st) = state(workload) else {
        return (Vec::new(), Vec::new());
    };
    let name = s(workload, "/metadata/name");
    let ns = s(workload, "/metadata/namespace");
    let wuid = s(workload, "/metadata/uid");
    let kind = s(workload, "/kind");
    let replicas = workload
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
        .clamp(1, 3);
    let template = workload
        .pointer("/spec/template")
        .cloned()
        .unwrap_or(json!({}));
    let spec = template.get("spec").cloned().unwrap_or(json!({}));
    let container = s(&spec, "/containers/0/name").to_string();
    let image = s(&spec, "/containers/0/image").to_string();
    let at = timestamp(written_ms);
    let selects = spec.get("nodeSelector").is_some()
        || spec
            .pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution")
            .is_some();
    let mut pods = Vec::new();
    let mut events = Vec::new();
    for i in 0..replicas {
        let pname = format!("{name}-sim-{i}");
        let puid = format!("{wuid}-pod-{i}");
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": pname, "namespace": ns, "uid": puid,
                "resourceVersion": "1",
                "creationTimestamp": at,
                "labels": template.pointer("/metadata/labels").cloned().unwrap_or(json!({})),
                "ownerReferences": [{"apiVersion": s(workload, "/apiVersion"), "kind": kind,
                    "name": name, "uid": wuid, "controller": true}],
            },
            "spec": spec,
        });
        let event = |n: usize, ty: &str, reason: &str, message: String, path: &str| {
            json!({
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": format!("{pname}.sim{n}"), "namespace": ns,
                             "uid": format!("{puid}-event-{n}"), "creationTimestamp": at},
                "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": pname,
                    "namespace": ns, "uid": puid, "fieldPath": path},
                "type": ty, "reason": reason, "message": message, "count": 1,
                "firstTimestamp": at, "lastTimestamp": at,
                "source": {"component": if reason == "FailedScheduling" { "default-scheduler" } else { "kubelet" }},
            })
        };
        let cpath = format!("spec.containers{{{container}}}");
        let status = match st {
            "unschedulable" => {
                let message = if selects {
                    format!("0/{nodes} nodes are available: {nodes} node(s) didn't match Pod's node affinity/selector. preemption: 0/{nodes} nodes are available: {nodes} Preemption is not helpful for scheduling.")
                } else {
                    format!("0/{nodes} nodes are available: {nodes} Insufficient cpu. preemption: 0/{nodes} nodes are available: {nodes} No preemption victims found for incoming pod.")
                };
                events.push(event(0, "Warning", "FailedScheduling", message.clone(), ""));
                json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                    "reason": "Unschedulable", "message": message, "lastTransitionTime": at}]})
            }
            "image-pull" => {
                events.push(event(0, "Warning", "Failed",
                    format!("Failed to pull image \"{image}\": rpc error: code = NotFound desc = failed to pull and unpack image \"{image}\": not found"), &cpath));
                events.push(event(
                    1,
                    "Warning",
                    "Failed",
                    "Error: ErrImagePull".into(),
                    &cpath,
                ));
                events.push(event(
                    2,
                    "Normal",
                    "BackOff",
                    format!("Back-off pulling image \"{image}\""),
                    &cpath,
                ));
                json!({"phase": "Pending", "conditions": [
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}],
                    "containerStatuses": [{"name": container, "image": image, "ready": false, "restartCount": 0,
                        "state": {"waiting": {"reason": "ImagePullBackOff",
                            "message": format!("Back-off pulling image \"{image}\"")}}}]})
            }
            "crashloop" => {
                events.push(event(0, "Warning", "BackOff",
                    format!("Back-off restarting failed container {container} in pod {pname}_{ns}({puid})"), &cpath));
                json!({"phase": "Running", "conditions": [
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}],
                    "containerStatuses": [{"name": container, "image": image, "ready": false, "restartCount": 5,
                        "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
                        "state": {"waiting": {"reason": "CrashLoopBackOff",
                            "message": format!("back-off 2m40s restarting failed container={container} pod={pname}_{ns}({puid})")}}}]})
            }
            _ => {
                events.push(event(
                    0,
                    "Warning",
                    "Unhealthy",
                    "Readiness probe failed: HTTP probe failed with statuscode: 503".into(),
                    &cpath,
                ));
                json!({"phase": "Running", "conditions": [
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Ready", "status": "False", "reason": "ContainersNotReady",
                     "message": format!("containers with unready status: [{container}]")}],
                    "containerStatuses": [{"name": container, "image": image, "ready": false, "restartCount": 0,
                        "state": {"running": {"startedAt": at}}}]})
            }
        };
        if st != "unschedulable" {
            if let Some(m) = pod.get_mut("spec").and_then(Value::as_object_mut) {
                m.insert("nodeName".into(), json!("sim-node"));
            }
        }
        if let Some(m) = pod.as_object_mut() {
            m.insert("status".into(), status);
        }
        pods.push(pod);
    }
    (pods, events)
}

/// The log of a played pod's container: a crash-looping one says why it
/// exits; the others have none.
pub fn log(workload: &Value, pod: &str) -> Option<String> {
    let name = s(workload, "/metadata/name");
    if state(workload) != Some("crashloop") || !pod.starts_with(&format!("{name}-sim-")) {
        return None;
    }
    Some(format!(
        "starting {name}\nerror: simulated crash (sim.rudder.io/pods: crashloop)\nexiting with code 1\n"
    ))
}
