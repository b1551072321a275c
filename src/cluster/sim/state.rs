//! The simulated cluster's state in memory: the stored objects (sorted by
//! group, kind, namespace and name), the kinds it serves (built-in and from
//! CustomResourceDefinitions), the resourceVersion counter, and what a write
//! changes ([`Plan`]), computed before anything changes and then committed.
//! Checking what a write sends (`normalize`) and deletes (with their
//! namespace and CRD cascades) live here too.
use super::{defaults, kinds, ClusterError, ObjectKey, DEFAULT_SERVER_VERSION};
use crate::cluster::ApiResource;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
pub(super) const FIRST_CLUSTER_IP: u32 = 16;
pub(super) const CRD_GROUP: &str = "apiextensions.k8s.io";
pub(super) const CRD_KIND: &str = "CustomResourceDefinition";

pub(super) fn builtin() -> &'static [ApiResource] {
    static B: OnceLock<Vec<ApiResource>> = OnceLock::new();
    B.get_or_init(kinds::builtin)
}

/// The cluster's state in memory.
#[derive(Debug, Clone)]
pub(super) struct State {
    pub(super) id: String,
    pub(super) server_version: String,
    pub(super) counter: u64,
    pub(super) next_ip: u32,
    /// The sequence number of the last write (log entry) applied.
    pub(super) seq: u64,
    /// Shared: reads hand them out without copying ([`Cluster::get_many_shared`](crate::cluster::Cluster::get_many_shared)).
    pub(super) objects: Objects,
    /// When each object's spec was last written (ms on the clock). Hashed:
    /// only looked up by key per write (a B-tree search per write grew
    /// with the cluster); sorted where it is saved.
    pub(super) written: foldhash::HashMap<ObjectKey, u64>,
    /// Each object's JSON as last encoded, so that a compaction encodes
    /// only what changed.
    pub(super) encoded: foldhash::HashMap<ObjectKey, Vec<u8>>,
    pub(super) crds: Vec<ApiResource>,
}

/// The stored objects: sorted, for lists and saves, and hashed, for
/// lookups by key (a B-tree search compares keys that share long
/// prefixes, and grew with the cluster). Both hold the same objects.
#[derive(Debug, Clone, Default)]
pub(super) struct Objects {
    sorted: BTreeMap<ObjectKey, Arc<Value>>,
    by_key: foldhash::HashMap<ObjectKey, Arc<Value>>,
}

impl Objects {
    pub(super) fn get(&self, k: &ObjectKey) -> Option<&Arc<Value>> {
        self.by_key.get(k)
    }

    pub(super) fn get_key_value(&self, k: &ObjectKey) -> Option<(&ObjectKey, &Arc<Value>)> {
        self.by_key.get_key_value(k)
    }

    pub(super) fn contains_key(&self, k: &ObjectKey) -> bool {
        self.by_key.contains_key(k)
    }

    /// Stores `v` under `k`; the object it replaces, if any.
    pub(super) fn insert(&mut self, k: ObjectKey, v: Arc<Value>) -> Option<Arc<Value>> {
        self.by_key.insert(k.clone(), Arc::clone(&v));
        self.sorted.insert(k, v)
    }

    pub(super) fn remove(&mut self, k: &ObjectKey) -> Option<Arc<Value>> {
        self.by_key.remove(k);
        self.sorted.remove(k)
    }

    /// Every object, in key order.
    pub(super) fn iter(&self) -> std::collections::btree_map::Iter<'_, ObjectKey, Arc<Value>> {
        self.sorted.iter()
    }

    /// Every key, in order.
    pub(super) fn keys(&self) -> std::collections::btree_map::Keys<'_, ObjectKey, Arc<Value>> {
        self.sorted.keys()
    }

    /// The objects from `from` on, in key order.
    pub(super) fn range(
        &self,
        from: std::ops::RangeFrom<ObjectKey>,
    ) -> std::collections::btree_map::Range<'_, ObjectKey, Arc<Value>> {
        self.sorted.range(from)
    }

    pub(super) fn len(&self) -> usize {
        self.sorted.len()
    }
}

/// An object a write stores.
#[derive(Debug)]
pub(super) struct Put {
    pub(super) key: ObjectKey,
    pub(super) obj: Value,
    /// Whether the write is spec-changing (a create or a generation bump).
    pub(super) touched: bool,
    /// When its spec was last written (set before commit).
    pub(super) written_at: u64,
}

/// What a write does, computed before anything changes.
#[derive(Debug, Default)]
pub(super) struct Plan {
    pub(super) puts: Vec<Put>,
    pub(super) deletes: Vec<ObjectKey>,
    pub(super) counter: Option<u64>,
    pub(super) next_ip: Option<u32>,
    pub(super) server_version: Option<String>,
    pub(super) result: Option<Value>,
}

impl Plan {
    pub(super) fn changes(&self) -> bool {
        !self.puts.is_empty() || !self.deletes.is_empty() || self.server_version.is_some()
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Op {
    Create,
    Replace,
    Apply,
}

pub(super) fn now() -> String {
    let t = jiff::Timestamp::now();
    jiff::Timestamp::from_second(t.as_second())
        .unwrap_or(t)
        .to_string()
}

pub(super) fn hash_uuid(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    let d = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    uuid::Builder::from_random_bytes(b).into_uuid().to_string()
}

pub(super) fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str()
}

pub(super) fn split_api_version(av: &str) -> (&str, &str) {
    av.rsplit_once('/').unwrap_or(("", av))
}

pub(super) fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 200 {
        let mut end = 200;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &s[..end])
    } else {
        s
    }
}

impl State {
    pub(super) fn empty(id: String) -> State {
        let mut s = State {
            server_version: DEFAULT_SERVER_VERSION.into(),
            counter: 0,
            next_ip: FIRST_CLUSTER_IP,
            seq: 0,
            objects: Objects::default(),
            written: Default::default(),
            encoded: Default::default(),
            crds: Vec::new(),
            id,
        };
        let ts = now();
        for ns in ["default", "kube-system"] {
            s.counter += 1;
            let mut obj = json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": ns,
                    "uid": hash_uuid(&[&s.id, "namespace", ns]),
                    "resourceVersion": s.counter.to_string(),
                    "generation": 1,
                    "creationTimestamp": ts,
                },
            });
            defaults::apply_defaults(&mut obj, "", "Namespace");
            if let Some(m) = obj.as_object_mut() {
                m.insert("status".into(), json!({"phase": "Active"}));
            }
            s.objects
                .insert(ObjectKey::new("", "Namespace", "", ns), Arc::new(obj));
        }
        s
    }

    pub(super) fn refresh_crds(&mut self) {
        let mut crds: Vec<ApiResource> = Vec::new();
        for (k, o) in self.kind_range(CRD_GROUP, CRD_KIND) {
            let _ = k;
            if let Some(r) = kinds::from_crd(o) {
                let taken = builtin()
                    .iter()
                    .chain(crds.iter())
                    .any(|b| b.group == r.group && b.kind == r.kind);
                if !taken {
                    crds.push(r);
                }
            }
        }
        self.crds = crds;
    }

    pub(super) fn kind_range<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Value)> + 'a {
        self.objects
            .range(ObjectKey::new(group, kind, "", "")..)
            .take_while(move |(k, _)| k.group == group && k.kind == kind)
            .map(|(k, o)| (k, &**o))
    }

    /// The objects of one kind in one namespace (`""`: cluster-scoped),
    /// without visiting the kind's other namespaces.
    pub(super) fn namespace_range<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
        namespace: &'a str,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Value)> + 'a {
        self.objects
            .range(ObjectKey::new(group, kind, namespace, "")..)
            .take_while(move |(k, _)| {
                k.group == group && k.kind == kind && k.namespace == namespace
            })
            .map(|(k, o)| (k, &**o))
    }

    pub(super) fn resource(&self, group: &str, kind: &str) -> Option<&ApiResource> {
        builtin()
            .iter()
            .chain(self.crds.iter())
            .find(|r| r.group == group && r.kind == kind)
    }

    /// The key under which `group/kind/namespace/name` is stored, or `None`
    /// for an unknown kind.
    pub(super) fn storage_key(&self, key: &ObjectKey) -> Option<ObjectKey> {
        let r = self.resource(&key.group, &key.kind)?;
        let mut k = key.clone();
        if !r.namespaced {
            k.namespace.clear();
        }
        Some(k)
    }

    pub(super) fn namespace_exists(&self, ns: &str) -> bool {
        self.objects
            .contains_key(&ObjectKey::new("", "Namespace", "", ns))
    }

    /// Checks an object written to the cluster and strips what writes
    /// ignore; returns its key, the cleaned object and the resourceVersion
    /// it carried.
    pub(super) fn normalize(
        &self,
        obj: &Value,
    ) -> Result<(ObjectKey, Value, Option<String>), ClusterError> {
        let bad = |what: &str| ClusterError::BadObject(format!("{what} in {}", compact(obj)));
        if !obj.is_object() {
            return Err(ClusterError::BadObject(compact(obj)));
        }
        let av = str_at(obj, &["apiVersion"]).ok_or_else(|| bad("no apiVersion"))?;
        let kind = str_at(obj, &["kind"]).ok_or_else(|| bad("no kind"))?;
        let name = str_at(obj, &["metadata", "name"]).ok_or_else(|| bad("no metadata.name"))?;
        let (group, _version) = split_api_version(av);
        let Some(res) = self.resource(group, kind) else {
            return Err(ClusterError::UnknownKind {
                api_version: av.into(),
                kind: kind.into(),
            });
        };
        let mut out = obj.clone();
        let ns = str_at(obj, &["metadata", "namespace"])
            .unwrap_or("")
            .to_string();
        let key = ObjectKey::new(group, kind, if res.namespaced { &ns } else { "" }, name);
        let rv;
        if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
            if !res.namespaced {
                meta.remove("namespace");
            }
            for f in [
                "uid",
                "creationTimestamp",
                "generation",
                "managedFields",
                "selfLink",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
            ] {
                meta.remove(f);
            }
            rv = meta
                .remove("resourceVersion")
                .and_then(|v| v.as_str().map(str::to_string))
                .filter(|s| !s.is_empty());
        } else {
            return Err(bad("metadata is not a map"));
        }
        if name.is_empty() {
            return Err(ClusterError::Invalid {
                key,
                message: "metadata.name: Required value: name is required".into(),
            });
        }
        if res.namespaced {
            if ns.is_empty() {
                return Err(ClusterError::Invalid {
                    key,
                    message: "the namespace of the object is empty".into(),
                });
            }
            if !self.namespace_exists(&ns) {
                return Err(ClusterError::NamespaceNotFound { key, namespace: ns });
            }
        }
        if let Some(m) = out.as_object_mut() {
            m.remove("status");
        }
        if group.is_empty() && kind == "Secret" {
            defaults::secret_string_data(&mut out);
        }
        if group == CRD_GROUP && kind == CRD_KIND {
            let Some(r) = kinds::from_crd(&out) else {
                return Err(ClusterError::Invalid {
                    key,
                    message: "spec.group and spec.names.kind are required".into(),
                });
            };
            let want = format!("{}.{}", r.plural, r.group);
            if name != want {
                return Err(ClusterError::Invalid {
                    key,
                    message: format!(
                        "metadata.name: Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group ({want:?})"
                    ),
                });
            }
        }
        Ok((key, out, rv))
    }

    pub(super) fn delete(&self, key: &ObjectKey, rv: Option<&str>) -> Result<Plan, ClusterError> {
        let mut plan = Plan::default();
        let Some(k) = self.storage_key(key) else {
            return Ok(plan);
        };
        let Some(live) = self.objects.get(&k).map(|o| &**o) else {
            return Ok(plan);
        };
        if let Some(rv) = rv {
            if str_at(live, &["metadata", "resourceVersion"]) != Some(rv) {
                return Err(ClusterError::Conflict { key: k });
            }
        }
        if k.group.is_empty() && k.kind == "Namespace" {
            if k.name == "default" || k.name == "kube-system" {
                return Err(ClusterError::Server {
                    server: "sim".into(),
                    code: 403,
                    message: format!(
                        "namespaces {:?} is forbidden: this namespace may not be deleted",
                        k.name
                    ),
                });
            }
            plan.deletes.extend(
                self.objects
                    .keys()
                    .filter(|o| o.namespace == k.name)
                    .cloned(),
            );
        }
        if k.group == CRD_GROUP && k.kind == CRD_KIND {
            if let Some(r) = kinds::from_crd(live) {
                if self
                    .crds
                    .iter()
                    .any(|c| c.group == r.group && c.kind == r.kind)
                {
                    plan.deletes
                        .extend(self.kind_range(&r.group, &r.kind).map(|(k, _)| k.clone()));
                }
            }
        }
        plan.deletes.push(k.clone());
        plan.counter = Some(self.counter + 1);
        plan.result = Some(live.clone());
        Ok(plan)
    }

    pub(super) fn commit(&mut self, plan: &mut Plan) {
        let mut crds = false;
        for k in &plan.deletes {
            crds |= k.group == CRD_GROUP && k.kind == CRD_KIND;
            self.objects.remove(k);
            self.written.remove(k);
            self.encoded.remove(k);
        }
        for p in plan.puts.iter_mut() {
            let k = &p.key;
            crds |= k.group == CRD_GROUP && k.kind == CRD_KIND;
            self.objects
                .insert(k.clone(), Arc::new(std::mem::take(&mut p.obj)));
            self.written.insert(k.clone(), p.written_at);
            self.encoded.remove(k);
        }
        if let Some(c) = plan.counter {
            self.counter = c;
        }
        if let Some(n) = plan.next_ip {
            self.next_ip = n;
        }
        if let Some(v) = &plan.server_version {
            self.server_version = v.clone();
        }
        if crds {
            self.refresh_crds();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::sim::testing::*;
    use crate::cluster::sim::SimCluster;
    use crate::cluster::{Cluster, Scope};
    use serde_json::json;

    #[test]
    fn namespaces_kinds_and_crds() {
        let c = SimCluster::in_memory();
        assert!(matches!(
            c.create(&cm("nope", "a", json!({}))),
            Err(ClusterError::NamespaceNotFound { .. })
        ));
        assert!(matches!(
            c.create(&cm("", "a", json!({}))),
            Err(ClusterError::Invalid { .. })
        ));
        let w = json!({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"}});
        assert!(matches!(
            c.create(&w),
            Err(ClusterError::UnknownKind { .. })
        ));
        // A cluster-scoped object loses its namespace.
        let cr = json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",
            "metadata":{"name":"r","namespace":"default"},"rules":[]});
        let o = c.create(&cr).unwrap();
        assert!(o["metadata"].get("namespace").is_none());
        assert!(c
            .get(&key(
                "rbac.authorization.k8s.io",
                "ClusterRole",
                "whatever",
                "r"
            ))
            .unwrap()
            .is_some());
        let crd = |scope: &str| {
            json!({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
            "metadata":{"name":"widgets.example.com"},
            "spec":{"group":"example.com","scope":scope,
                "names":{"kind":"Widget","plural":"widgets","singular":"widget","shortNames":["wd"]},
                "versions":[{"name":"v1beta1","served":true,"storage":false},{"name":"v1","served":true,"storage":true}]}})
        };
        let live = c.apply(&crd("Namespaced"), &opts("m")).unwrap();
        assert_eq!(
            live["status"]["conditions"][1]["type"],
            json!("Established")
        );
        assert_eq!(
            c.scope("example.com", "Widget").unwrap(),
            Some(Scope::Namespaced)
        );
        let r = c.api_resources().unwrap();
        let wr = r.iter().find(|r| r.kind == "Widget").unwrap();
        assert_eq!(
            (wr.version.as_str(), wr.short_names.clone()),
            ("v1", vec!["wd".to_string()])
        );
        c.create(&w).unwrap();
        // Deleting the CRD deletes its objects and its kind.
        c.delete(
            &key(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                "",
                "widgets.example.com",
            ),
            None,
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.scope("example.com", "Widget").unwrap(), None);
        assert_eq!(
            c.snapshot()
                .unwrap()
                .iter()
                .filter(|o| o["kind"] == "Widget")
                .count(),
            0
        );
        c.apply(&crd("Cluster"), &opts("m")).unwrap();
        assert_eq!(
            c.scope("example.com", "Widget").unwrap(),
            Some(Scope::Cluster)
        );
        let o = c.create(&w).unwrap();
        assert!(o["metadata"].get("namespace").is_none());
        // Deleting a namespace deletes what is in it.
        let ns = json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}});
        let live = c.create(&ns).unwrap();
        assert_eq!(live["spec"]["finalizers"], json!(["kubernetes"]));
        c.create(&cm("team", "a", json!({}))).unwrap();
        c.delete(&key("", "Namespace", "", "team"), None).unwrap();
        assert!(c.get(&key("", "ConfigMap", "team", "a")).unwrap().is_none());
        assert!(c
            .delete(&key("", "Namespace", "", "default"), None)
            .is_err());
    }
}
