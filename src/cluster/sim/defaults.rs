//! What the API server does to an object on write that shows in a diff:
//! Secret `stringData`, and the defaults of the common workload kinds.
use base64::Engine as _;
use serde_json::{json, Map, Value};

/// Folds a Secret's `stringData` into `data` (base64) and removes it.
pub(crate) fn secret_string_data(obj: &mut Value) {
    let Some(m) = obj.as_object_mut() else {
        return;
    };
    let Some(sd) = m.remove("stringData") else {
        return;
    };
    let Some(sd) = sd.as_object() else {
        return;
    };
    if !m.get("data").is_some_and(Value::is_object) {
        m.insert("data".into(), Value::Object(Map::new()));
    }
    if let Some(data) = m.get_mut("data").and_then(Value::as_object_mut) {
        for (k, v) in sd {
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            data.insert(
                k.clone(),
                Value::String(base64::engine::general_purpose::STANDARD.encode(text)),
            );
        }
    }
}

fn obj_mut<'a>(v: &'a mut Value, key: &str) -> Option<&'a mut Map<String, Value>> {
    let m = v.as_object_mut()?;
    let e = m
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if e.is_null() {
        *e = Value::Object(Map::new());
    }
    e.as_object_mut()
}

fn default(m: &mut Map<String, Value>, key: &str, v: Value) {
    if m.get(key).is_none_or(Value::is_null) {
        m.insert(key.to_string(), v);
    }
}

/// Applies the API server's defaults for `group`/`kind` (idempotent).
pub(crate) fn apply_defaults(obj: &mut Value, group: &str, kind: &str) {
    match (group, kind) {
        ("", "Secret") => {
            if let Some(m) = obj.as_object_mut() {
                default(m, "type", json!("Opaque"));
            }
        }
        ("", "Namespace") => {
            let name = obj
                .get("metadata")
                .and_then(|m| m.get("name"))
                .cloned()
                .unwrap_or(Value::Null);
            if let Some(meta) = obj_mut(obj, "metadata") {
                if let Some(labels) = obj_mut_map(meta, "labels") {
                    labels.insert("kubernetes.io/metadata.name".into(), name);
                }
            }
            if let Some(spec) = obj_mut(obj, "spec") {
                default(spec, "finalizers", json!(["kubernetes"]));
            }
        }
        ("apps", "Deployment") => {
            if let Some(spec) = obj_mut(obj, "spec") {
                default(spec, "replicas", json!(1));
                default(spec, "revisionHistoryLimit", json!(10));
                default(spec, "progressDeadlineSeconds", json!(600));
                let strategy = obj_mut_map(spec, "strategy");
                if let Some(s) = strategy {
                    default(s, "type", json!("RollingUpdate"));
                    if s.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                        if let Some(ru) = obj_mut_map(s, "rollingUpdate") {
                            default(ru, "maxUnavailable", json!("25%"));
                            default(ru, "maxSurge", json!("25%"));
                        }
                    }
                }
                template(spec);
            }
        }
        ("apps", "StatefulSet") => {
            if let Some(spec) = obj_mut(obj, "spec") {
                default(spec, "replicas", json!(1));
                default(spec, "podManagementPolicy", json!("OrderedReady"));
                default(spec, "revisionHistoryLimit", json!(10));
                if let Some(s) = obj_mut_map(spec, "updateStrategy") {
                    default(s, "type", json!("RollingUpdate"));
                    if s.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                        if let Some(ru) = obj_mut_map(s, "rollingUpdate") {
                            default(ru, "partition", json!(0));
                        }
                    }
                }
                template(spec);
            }
        }
        ("apps", "DaemonSet") => {
            if let Some(spec) = obj_mut(obj, "spec") {
                default(spec, "revisionHistoryLimit", json!(10));
                if let Some(s) = obj_mut_map(spec, "updateStrategy") {
                    default(s, "type", json!("RollingUpdate"));
                    if s.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                        if let Some(ru) = obj_mut_map(s, "rollingUpdate") {
                            default(ru, "maxUnavailable", json!(1));
                            default(ru, "maxSurge", json!(0));
                        }
                    }
                }
                template(spec);
            }
        }
        ("apps", "ReplicaSet") | ("", "ReplicationController") => {
            if let Some(spec) = obj_mut(obj, "spec") {
                default(spec, "replicas", json!(1));
                template(spec);
            }
        }
        ("batch", "Job") => {
            if let Some(spec) = obj_mut(obj, "spec") {
                job(spec);
            }
        }
        ("batch", "CronJob") => {
            if let Some(spec) = obj_mut(obj, "spec") {
                default(spec, "concurrencyPolicy", json!("Allow"));
                default(spec, "suspend", json!(false));
                default(spec, "successfulJobsHistoryLimit", json!(3));
                default(spec, "failedJobsHistoryLimit", json!(1));
                if let Some(jt) = obj_mut_map(spec, "jobTemplate") {
                    if let Some(js) = obj_mut_map(jt, "spec") {
                        job(js);
                    }
                }
            }
        }
        ("", "Pod") => {
            if let Some(spec) = obj_mut(obj, "spec") {
                pod_spec(spec);
            }
        }
        ("", "PodTemplate") => {
            if let Some(t) = obj_mut(obj, "template") {
                if let Some(spec) = obj_mut_map(t, "spec") {
                    pod_spec(spec);
                }
            }
        }
        ("", "Service") => {
            if let Some(spec) = obj_mut(obj, "spec") {
                default(spec, "type", json!("ClusterIP"));
                default(spec, "sessionAffinity", json!("None"));
                if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
                    for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                        default(p, "protocol", json!("TCP"));
                        if let Some(port) = p.get("port").cloned() {
                            default(p, "targetPort", port);
                        }
                    }
                }
                if spec.get("type").and_then(Value::as_str) != Some("ExternalName") {
                    default(spec, "internalTrafficPolicy", json!("Cluster"));
                    default(spec, "ipFamilies", json!(["IPv4"]));
                    default(spec, "ipFamilyPolicy", json!("SingleStack"));
                }
            }
        }
        _ => {}
    }
}

fn obj_mut_map<'a>(m: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    let e = m
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if e.is_null() {
        *e = Value::Object(Map::new());
    }
    e.as_object_mut()
}

fn job(spec: &mut Map<String, Value>) {
    default(spec, "backoffLimit", json!(6));
    default(spec, "completions", json!(1));
    default(spec, "parallelism", json!(1));
    template(spec);
}

fn template(spec: &mut Map<String, Value>) {
    if let Some(t) = spec.get_mut("template").and_then(Value::as_object_mut) {
        if let Some(ps) = obj_mut_map(t, "spec") {
            pod_spec(ps);
        }
    }
}

fn pod_spec(spec: &mut Map<String, Value>) {
    default(spec, "restartPolicy", json!("Always"));
    default(spec, "dnsPolicy", json!("ClusterFirst"));
    default(spec, "schedulerName", json!("default-scheduler"));
    default(spec, "terminationGracePeriodSeconds", json!(30));
    default(spec, "securityContext", json!({}));
    for field in ["containers", "initContainers"] {
        if let Some(cs) = spec.get_mut(field).and_then(Value::as_array_mut) {
            for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                container(c);
            }
        }
    }
}

fn container(c: &mut Map<String, Value>) {
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    // The tag is after the last ':' that follows the last '/'; a digest pins it.
    let last = image.rsplit('/').next().unwrap_or(image);
    let tag = if image.contains('@') {
        Some("digest")
    } else {
        last.rsplit_once(':').map(|(_, t)| t)
    };
    let policy = match tag {
        None | Some("latest") => "Always",
        Some(_) => "IfNotPresent",
    };
    default(c, "imagePullPolicy", json!(policy));
    default(c, "terminationMessagePath", json!("/dev/termination-log"));
    default(c, "terminationMessagePolicy", json!("File"));
    default(c, "resources", json!({}));
    if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            default(p, "protocol", json!("TCP"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_defaults() {
        let mut d = json!({"spec":{"template":{"spec":{"containers":[
            {"name":"a","image":"nginx"},{"name":"b","image":"reg:5000/x:1.2","ports":[{"containerPort":80}]}]}}}});
        apply_defaults(&mut d, "apps", "Deployment");
        assert_eq!(d["spec"]["replicas"], json!(1));
        assert_eq!(
            d["spec"]["strategy"]["rollingUpdate"]["maxSurge"],
            json!("25%")
        );
        let c = &d["spec"]["template"]["spec"]["containers"];
        assert_eq!(c[0]["imagePullPolicy"], json!("Always"));
        assert_eq!(c[1]["imagePullPolicy"], json!("IfNotPresent"));
        assert_eq!(c[1]["ports"][0]["protocol"], json!("TCP"));
        let again = d.clone();
        apply_defaults(&mut d, "apps", "Deployment");
        assert_eq!(d, again);
    }

    #[test]
    fn string_data() {
        let mut s = json!({"data":{"a":"eA=="},"stringData":{"b":"hi"}});
        secret_string_data(&mut s);
        assert_eq!(s, json!({"data":{"a":"eA==","b":"aGk="}}));
    }
}
