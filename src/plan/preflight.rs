//! Preflight checks: what will certainly keep a release from becoming
//! ready, found in the plan before anything is written.
//!
//! For every pod template a plan writes (Deployments, StatefulSets,
//! DaemonSets, ReplicaSets, Jobs, CronJobs, Pods, hooks included) and every
//! claim it makes, [`check`] looks at the cluster and warns about:
//!
//! - a `nodeSelector` or required node affinity that no node matches
//!   (taints and tolerations are not checked; a cluster that lists no
//!   nodes, such as the simulated one, is not checked);
//! - a StorageClass that does not exist (claims and claim templates that
//!   name one);
//! - a ServiceAccount, Secret or ConfigMap that a pod template mounts or
//!   references (volumes, projected volumes, `envFrom`, `env.valueFrom`;
//!   `optional: true` ones are skipped) when it does not exist and no
//!   release in the plan creates it;
//! - an image pull secret that does not exist and that no release creates.
//!
//! The warnings are data ([`PreflightWarning`], in each release's
//! `preflight` list of the plan's JSON), shown in the table and the HTML
//! page; they never stop `apply` unless the caller asks for it
//! (`--strict-preflight`). The planner calls [`check`] once, after the
//! releases are planned and before the plan's id is computed.
use super::model::{PlanKey, ReleasePlan};
use super::ObjectAction;
use crate::cluster::{Cluster, ObjectKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Which check a warning comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PreflightCheck {
    /// No node matches the pod's nodeSelector or required node affinity.
    NodeSelector,
    /// A StorageClass that does not exist.
    StorageClass,
    /// A ServiceAccount that does not exist.
    ServiceAccount,
    /// A Secret that does not exist.
    Secret,
    /// A ConfigMap that does not exist.
    ConfigMap,
    /// An image pull secret that does not exist.
    ImagePullSecret,
}

/// One preflight warning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreflightWarning {
    /// The check.
    pub check: PreflightCheck,
    /// The object whose pod template (or claim) it is about:
    /// `Deployment ns/name`.
    pub object: String,
    /// What is missing or matches nothing: a name, or the selector.
    pub subject: String,
    /// The sentence shown to people.
    pub message: String,
}

impl std::fmt::Display for PreflightWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

fn s<'v>(v: &'v Value, ptr: &str) -> &'v str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// The pod spec of an object's template, if it has one.
fn pod_spec(obj: &Value) -> Option<&Value> {
    let kind = s(obj, "/kind");
    match kind {
        "Pod" => obj.get("spec"),
        "CronJob" => obj.pointer("/spec/jobTemplate/spec/template/spec"),
        "Deployment"
        | "StatefulSet"
        | "DaemonSet"
        | "ReplicaSet"
        | "Job"
        | "ReplicationController" => obj.pointer("/spec/template/spec"),
        _ => None,
    }
}

/// Whether one node selector requirement holds for `labels`.
fn requirement_holds(req: &Value, labels: &BTreeMap<String, String>) -> bool {
    let key = s(req, "/key");
    let values: Vec<&str> = req
        .get("values")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let have = labels.get(key).map(String::as_str);
    let num = |x: &str| x.parse::<i64>().ok();
    match s(req, "/operator") {
        "In" => have.is_some_and(|h| values.contains(&h)),
        "NotIn" => have.is_none_or(|h| !values.contains(&h)),
        "Exists" => have.is_some(),
        "DoesNotExist" => have.is_none(),
        "Gt" => {
            matches!((have.and_then(num), values.first().and_then(|v| num(v))), (Some(h), Some(v)) if h > v)
        }
        "Lt" => {
            matches!((have.and_then(num), values.first().and_then(|v| num(v))), (Some(h), Some(v)) if h < v)
        }
        _ => false,
    }
}

/// Whether a node (its name and labels) may run a pod with `spec`, as far
/// as its nodeSelector and required node affinity go.
pub fn node_fits(spec: &Value, node_name: &str, labels: &BTreeMap<String, String>) -> bool {
    if let Some(sel) = spec.get("nodeSelector").and_then(Value::as_object) {
        for (k, v) in sel {
            if labels.get(k).map(String::as_str) != v.as_str() {
                return false;
            }
        }
    }
    let Some(terms) = spec
        .pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array)
    else {
        return true;
    };
    let mut name_labels = BTreeMap::new();
    name_labels.insert("metadata.name".to_string(), node_name.to_string());
    // The terms are ORed; a term's requirements are ANDed, and an empty
    // term matches nothing (the scheduler's rule).
    terms.iter().any(|t| {
        let exprs = t.get("matchExpressions").and_then(Value::as_array);
        let fields = t.get("matchFields").and_then(Value::as_array);
        let n = exprs.map_or(0, Vec::len) + fields.map_or(0, Vec::len);
        n > 0
            && exprs
                .into_iter()
                .flatten()
                .all(|r| requirement_holds(r, labels))
            && fields
                .into_iter()
                .flatten()
                .all(|r| requirement_holds(r, &name_labels))
    })
}

/// The selector of a pod spec, for people: `a=b, c In [d e]`.
fn selector_text(spec: &Value) -> String {
    let mut parts: Vec<String> = spec
        .get("nodeSelector")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    if let Some(terms) = spec
        .pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array)
    {
        let ts: Vec<String> = terms
            .iter()
            .map(|t| {
                let rs: Vec<String> = ["matchExpressions", "matchFields"]
                    .iter()
                    .filter_map(|f| t.get(*f).and_then(Value::as_array))
                    .flatten()
                    .map(|r| {
                        let vals: Vec<&str> = r
                            .get("values")
                            .and_then(Value::as_array)
                            .map(|a| a.iter().filter_map(Value::as_str).collect())
                            .unwrap_or_default();
                        if vals.is_empty() {
                            format!("{} {}", s(r, "/key"), s(r, "/operator"))
                        } else {
                            format!("{} {} [{}]", s(r, "/key"), s(r, "/operator"), vals.join(" "))
                        }
                    })
                    .collect();
                rs.join(", ")
            })
            .collect();
        parts.push(format!("required node affinity ({})", ts.join(" or ")));
    }
    parts.join(", ")
}

/// What a pod spec references by name: (check, name).
fn references(spec: &Value) -> Vec<(PreflightCheck, String)> {
    let mut out = Vec::new();
    let not_optional = |v: &Value| v.get("optional").and_then(Value::as_bool) != Some(true);
    let sa = s(spec, "/serviceAccountName");
    let sa = if sa.is_empty() {
        s(spec, "/serviceAccount")
    } else {
        sa
    };
    if !sa.is_empty() && sa != "default" {
        out.push((PreflightCheck::ServiceAccount, sa.to_string()));
    }
    for v in spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(sec) = v.get("secret").filter(|x| not_optional(x)) {
            out.push((PreflightCheck::Secret, s(sec, "/secretName").to_string()));
        }
        if let Some(cm) = v.get("configMap").filter(|x| not_optional(x)) {
            out.push((PreflightCheck::ConfigMap, s(cm, "/name").to_string()));
        }
        for src in v
            .pointer("/projected/sources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(sec) = src.get("secret").filter(|x| not_optional(x)) {
                out.push((PreflightCheck::Secret, s(sec, "/name").to_string()));
            }
            if let Some(cm) = src.get("configMap").filter(|x| not_optional(x)) {
                out.push((PreflightCheck::ConfigMap, s(cm, "/name").to_string()));
            }
        }
    }
    for list in ["initContainers", "containers"] {
        for c in spec
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for ef in c
                .get("envFrom")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(r) = ef.get("secretRef").filter(|x| not_optional(x)) {
                    out.push((PreflightCheck::Secret, s(r, "/name").to_string()));
                }
                if let Some(r) = ef.get("configMapRef").filter(|x| not_optional(x)) {
                    out.push((PreflightCheck::ConfigMap, s(r, "/name").to_string()));
                }
            }
            for e in c.get("env").and_then(Value::as_array).into_iter().flatten() {
                if let Some(r) = e
                    .pointer("/valueFrom/secretKeyRef")
                    .filter(|x| not_optional(x))
                {
                    out.push((PreflightCheck::Secret, s(r, "/name").to_string()));
                }
                if let Some(r) = e
                    .pointer("/valueFrom/configMapKeyRef")
                    .filter(|x| not_optional(x))
                {
                    out.push((PreflightCheck::ConfigMap, s(r, "/name").to_string()));
                }
            }
        }
    }
    for ips in spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.push((PreflightCheck::ImagePullSecret, s(ips, "/name").to_string()));
    }
    out.retain(|(_, n)| !n.is_empty());
    let mut seen = BTreeSet::new();
    out.retain(|r| seen.insert(r.clone()));
    out
}

/// The StorageClasses an object's claims name.
fn storage_classes(obj: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match s(obj, "/kind") {
        "PersistentVolumeClaim" => out.push(s(obj, "/spec/storageClassName").to_string()),
        "StatefulSet" => {
            for t in obj
                .pointer("/spec/volumeClaimTemplates")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                out.push(s(t, "/spec/storageClassName").to_string());
            }
        }
        _ => {}
    }
    out.retain(|c| !c.is_empty());
    out
}

/// Reads of the cluster, each done once.
struct Lookups<'a> {
    cluster: &'a dyn Cluster,
    nodes: Option<Vec<(String, BTreeMap<String, String>)>>,
    classes: Option<Option<BTreeSet<String>>>,
    exists: BTreeMap<ObjectKey, bool>,
}

impl Lookups<'_> {
    fn nodes(&mut self) -> &[(String, BTreeMap<String, String>)] {
        let cluster = self.cluster;
        self.nodes.get_or_insert_with(|| {
            cluster
                .list("", "Node", None, &[])
                .unwrap_or_default()
                .iter()
                .map(|n| {
                    let labels = n
                        .pointer("/metadata/labels")
                        .and_then(Value::as_object)
                        .map(|m| {
                            m.iter()
                                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                                .collect()
                        })
                        .unwrap_or_default();
                    (s(n, "/metadata/name").to_string(), labels)
                })
                .collect()
        })
    }

    /// The StorageClasses, or `None` when they cannot be read.
    fn classes(&mut self) -> Option<&BTreeSet<String>> {
        let cluster = self.cluster;
        self.classes
            .get_or_insert_with(|| {
                cluster
                    .list("storage.k8s.io", "StorageClass", None, &[])
                    .ok()
                    .map(|l| {
                        l.iter()
                            .map(|c| s(c, "/metadata/name").to_string())
                            .collect()
                    })
            })
            .as_ref()
    }

    /// Whether an object exists; `true` when it cannot be told.
    fn exists(&mut self, key: ObjectKey) -> bool {
        let cluster = self.cluster;
        *self
            .exists
            .entry(key)
            .or_insert_with_key(|k| cluster.get(k).map_or(true, |o| o.is_some()))
    }
}

/// Adds each release's preflight warnings to `releases` (a plan's, in
/// order), reading `cluster`: of the objects each apply writes, and its
/// hooks. Objects that any release of the plan creates count as existing.
pub fn check(releases: &mut [ReleasePlan], cluster: &dyn Cluster) {
    // The objects of the kinds looked up below, made only when a lookup
    // comes (most plans look nothing up).
    let created: std::cell::OnceCell<BTreeSet<ObjectKey>> = std::cell::OnceCell::new();
    let looked_up = |k: &PlanKey| match k.group.as_str() {
        "" => matches!(k.kind.as_str(), "ServiceAccount" | "ConfigMap" | "Secret"),
        "storage.k8s.io" => k.kind == "StorageClass",
        _ => false,
    };
    let made = |key: &ObjectKey| {
        created
            .get_or_init(|| {
                let mut set = BTreeSet::new();
                for r in releases.iter() {
                    for o in &r.objects {
                        if o.action != ObjectAction::Delete
                            && o.desired.is_some()
                            && looked_up(&o.key)
                        {
                            set.insert(o.key.object_key());
                        }
                    }
                    for h in &r.hooks {
                        if h.desired.is_some() && looked_up(&h.key) {
                            set.insert(h.key.object_key());
                        }
                    }
                }
                set
            })
            .contains(key)
    };
    let mut look = Lookups {
        cluster,
        nodes: None,
        classes: None,
        exists: BTreeMap::new(),
    };
    let mut all = Vec::with_capacity(releases.len());
    for r in releases.iter() {
        let mut warnings = Vec::new();
        // What the apply writes: an object it leaves unchanged is not
        // written, and its references were there when it was applied (its
        // document may not even have been read: see `DesiredObject`).
        let objects = r
            .objects
            .iter()
            .filter(|o| o.action.writes() && o.action != ObjectAction::Delete)
            .filter_map(|o| o.desired.as_deref())
            .chain(r.hooks.iter().filter_map(|h| h.desired.as_ref()));
        for obj in objects {
            let ns = match s(obj, "/metadata/namespace") {
                "" => r.namespace.as_str(),
                n => n,
            };
            let shown = format!("{} {ns}/{}", s(obj, "/kind"), s(obj, "/metadata/name"));
            for class in storage_classes(obj) {
                let key = ObjectKey::new("storage.k8s.io", "StorageClass", "", &class);
                let missing = look.classes().is_some_and(|cs| !cs.contains(&class)) && !made(&key);
                if missing {
                    warnings.push(PreflightWarning {
                        check: PreflightCheck::StorageClass,
                        object: shown.clone(),
                        message: format!(
                            "{shown}: StorageClass {class:?} does not exist: its claim will stay Pending"
                        ),
                        subject: class,
                    });
                }
            }
            let Some(spec) = pod_spec(obj) else { continue };
            let selects = spec.get("nodeSelector").is_some()
                || spec
                    .pointer(
                        "/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution",
                    )
                    .is_some();
            if selects {
                let nodes = look.nodes();
                if !nodes.is_empty() && !nodes.iter().any(|(n, l)| node_fits(spec, n, l)) {
                    let sel = selector_text(spec);
                    warnings.push(PreflightWarning {
                        check: PreflightCheck::NodeSelector,
                        object: shown.clone(),
                        message: format!(
                            "{shown}: no node matches its node selector {sel} ({} node(s) in the cluster): its pods will not be scheduled",
                            nodes.len()
                        ),
                        subject: sel,
                    });
                }
            }
            for (check, name) in references(spec) {
                let (kind, what) = match check {
                    PreflightCheck::ServiceAccount => ("ServiceAccount", "ServiceAccount"),
                    PreflightCheck::ConfigMap => ("ConfigMap", "ConfigMap"),
                    PreflightCheck::ImagePullSecret => ("Secret", "image pull secret"),
                    _ => ("Secret", "Secret"),
                };
                let key = ObjectKey::new("", kind, ns, &name);
                if made(&key) || look.exists(key) {
                    continue;
                }
                let effect = match check {
                    PreflightCheck::ServiceAccount => "its pods will not be created",
                    PreflightCheck::ImagePullSecret => "its images may fail to pull",
                    _ => "its pods will not start",
                };
                warnings.push(PreflightWarning {
                    check,
                    object: shown.clone(),
                    message: format!(
                        "{shown}: {what} {ns}/{name} does not exist and no release in the plan creates it: {effect}"
                    ),
                    subject: name,
                });
            }
        }
        all.push(warnings);
    }
    for (r, warnings) in releases.iter_mut().zip(all) {
        r.preflight = warnings;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn node_selectors_and_required_affinity_match_as_the_scheduler_does() {
        let spec = json!({"nodeSelector": {"node.kubernetes.io/controller": "true"}});
        assert!(!node_fits(
            &spec,
            "n",
            &labels(&[("kubernetes.io/os", "linux")])
        ));
        assert!(node_fits(
            &spec,
            "n",
            &labels(&[("node.kubernetes.io/controller", "true")])
        ));
        let aff = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["special"]}]}
        ]}}}});
        assert!(node_fits(&aff, "x", &labels(&[("zone", "b")])));
        assert!(!node_fits(&aff, "x", &labels(&[("zone", "c")])));
        assert!(node_fits(&aff, "special", &labels(&[])));
        let empty = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{}]}}}});
        assert!(!node_fits(&empty, "x", &labels(&[("zone", "a")])));
        let ops = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "gpu", "operator": "DoesNotExist"},
                {"key": "cores", "operator": "Gt", "values": ["4"]}]}]}}}});
        assert!(node_fits(&ops, "x", &labels(&[("cores", "8")])));
        assert!(!node_fits(&ops, "x", &labels(&[("cores", "2")])));
        assert!(!node_fits(
            &ops,
            "x",
            &labels(&[("cores", "8"), ("gpu", "1")])
        ));
    }

    #[test]
    fn references_skip_optional_ones_and_the_default_service_account() {
        let spec = json!({"serviceAccountName": "default",
            "imagePullSecrets": [{"name": "regcred"}],
            "volumes": [{"name": "a", "secret": {"secretName": "tls"}},
                        {"name": "b", "secret": {"secretName": "opt", "optional": true}},
                        {"name": "c", "configMap": {"name": "conf"}}],
            "containers": [{"name": "x", "envFrom": [{"secretRef": {"name": "env"}}],
                "env": [{"name": "K", "valueFrom": {"configMapKeyRef": {"name": "conf", "key": "k"}}}]}]});
        let r = references(&spec);
        let names: Vec<String> = r.iter().map(|(c, n)| format!("{c:?} {n}")).collect();
        assert_eq!(
            names,
            [
                "Secret tls",
                "ConfigMap conf",
                "Secret env",
                "ImagePullSecret regcred"
            ]
        );
    }
}
