//! Reads of one consistent look at a cluster, batched: [`Reads`].
//!
//! A planner reads every object of every release it plans. One GET per
//! object costs O(objects) requests; a LIST per (kind, namespace) costs
//! O(kinds × namespaces). [`Reads`] answers batches of keys with LISTs
//! where the cluster says that is cheaper ([`Cluster::list_batch_min`]),
//! shares each LIST among every release that asks for that kind and
//! namespace, and remembers single reads, so that each object is read at
//! most once per [`Reads`].
//!
//! The answers are those of [`Cluster::get`] (an object listed is the
//! object a GET returns, `apiVersion` and `kind` included; a kind the
//! cluster does not serve, or a namespace that does not exist, lists
//! nothing, as a GET finds nothing), except that all of them come from
//! reads made during the lifetime of the [`Reads`]: use one per plan.
use super::{Cluster, ClusterError, ObjectKey};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The objects of one kind in one namespace, by name.
type Listing = HashMap<String, Arc<Value>>;

/// (group, kind, namespace) of a LIST.
type Slot = (String, String, String);

/// One LIST, once made; its lock is held while it is being made.
type ListCell = Arc<Mutex<Option<Arc<Listing>>>>;

/// Batched, shared reads of a cluster for the lifetime of one plan (see
/// the module docs). `Sync`: releases planned on several threads share it.
pub struct Reads<'a> {
    cluster: &'a dyn Cluster,
    /// LISTs done (or being done: the inner lock is held while listing, so
    /// a second reader of the same slot waits for the first's answer).
    lists: Mutex<HashMap<Slot, ListCell>>,
    /// Objects read one by one (`None`: absent).
    singles: Mutex<foldhash::HashMap<ObjectKey, Option<Arc<Value>>>>,
}

impl<'a> Reads<'a> {
    /// Reads of `cluster`, none made yet.
    pub fn new(cluster: &'a dyn Cluster) -> Reads<'a> {
        Reads {
            cluster,
            lists: Mutex::new(HashMap::new()),
            singles: Mutex::new(foldhash::HashMap::default()),
        }
    }

    /// The cluster read.
    pub fn cluster(&self) -> &'a dyn Cluster {
        self.cluster
    }

    fn slot_of(key: &ObjectKey) -> Slot {
        (key.group.clone(), key.kind.clone(), key.namespace.clone())
    }

    /// The listing of a slot when one was made.
    fn listed(&self, slot: &Slot) -> Option<Arc<Listing>> {
        let cell = self
            .lists
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(slot)
            .cloned()?;
        let g = cell.lock().unwrap_or_else(|e| e.into_inner());
        g.clone()
    }

    /// The listing of a slot, listed now unless it was before.
    fn list(&self, slot: &Slot) -> Result<Arc<Listing>, ClusterError> {
        let cell = self
            .lists
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(slot.clone())
            .or_default()
            .clone();
        let mut g = cell.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = g.as_ref() {
            return Ok(l.clone());
        }
        let (group, kind, ns) = slot;
        let ns = (!ns.is_empty()).then_some(ns.as_str());
        let items = self.cluster.list(group, kind, ns, &[])?;
        let mut listing = Listing::with_capacity(items.len());
        for item in items {
            let Some(name) = item
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(Value::as_str)
            else {
                continue;
            };
            listing.insert(name.to_string(), Arc::new(item));
        }
        let listing = Arc::new(listing);
        *g = Some(listing.clone());
        Ok(listing)
    }

    /// One object, as [`Cluster::get`] answers it.
    pub fn get(&self, key: &ObjectKey) -> Result<Option<Arc<Value>>, ClusterError> {
        Ok(self
            .get_many(std::slice::from_ref(key))?
            .pop()
            .unwrap_or_default())
    }

    /// Several objects: one answer per key, in order; the first error ends
    /// the batch. Keys of a (kind, namespace) that was listed before are
    /// answered from that listing; a (kind, namespace) with at least
    /// [`Cluster::list_batch_min`] keys in the batch is listed; the rest
    /// are read with [`Cluster::get_many_shared`] (objects read before are
    /// not read again), as are those of a LIST the server forbids.
    pub fn get_many(&self, keys: &[ObjectKey]) -> Result<Vec<Option<Arc<Value>>>, ClusterError> {
        let mut out: Vec<Option<Option<Arc<Value>>>> = vec![None; keys.len()];
        let min = self.cluster.list_batch_min();
        let mut per_slot: HashMap<Slot, Vec<usize>> = HashMap::new();
        let mut rest = Vec::new();
        // (A cluster that never lists, and has listed nothing: no slots.)
        let listing_none = min.is_none()
            && self
                .lists
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_empty();
        if listing_none {
            rest.extend(0..keys.len());
        } else {
            for (i, k) in keys.iter().enumerate() {
                per_slot.entry(Self::slot_of(k)).or_default().push(i);
            }
        }
        for (slot, idx) in per_slot {
            let listing = match self.listed(&slot) {
                Some(l) => Some(l),
                None if min.is_some_and(|m| idx.len() >= m.max(1)) => match self.list(&slot) {
                    Ok(l) => Some(l),
                    // Allowed to get but not to list (RBAC): one by one.
                    Err(ClusterError::Forbidden { .. }) => None,
                    Err(e) => return Err(e),
                },
                None => None,
            };
            match listing {
                Some(l) => {
                    for i in idx {
                        out[i] = Some(l.get(&keys[i].name).cloned());
                    }
                }
                None => rest.extend(idx),
            }
        }
        if !rest.is_empty() {
            rest.sort_unstable();
            let mut unread = Vec::new();
            {
                let singles = self.singles.lock().unwrap_or_else(|e| e.into_inner());
                for &i in &rest {
                    match singles.get(&keys[i]) {
                        Some(v) => out[i] = Some(v.clone()),
                        None => unread.push(i),
                    }
                }
            }
            if !unread.is_empty() {
                let ks: Vec<ObjectKey> = unread.iter().map(|&i| keys[i].clone()).collect();
                let got = self.cluster.get_many_shared(&ks)?;
                let mut singles = self.singles.lock().unwrap_or_else(|e| e.into_inner());
                for (i, v) in unread.into_iter().zip(got) {
                    singles.insert(keys[i].clone(), v.clone());
                    out[i] = Some(v);
                }
            }
        }
        Ok(out.into_iter().map(Option::unwrap_or_default).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::sim::SimCluster;
    use crate::cluster::{ApiResource, ApplyOptions, ClusterIdentity};
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The simulated cluster, with a LIST threshold and counts of reads.
    struct Counting {
        inner: Arc<SimCluster>,
        min: Option<usize>,
        gets: AtomicUsize,
        lists: AtomicUsize,
    }

    impl Cluster for Counting {
        fn identity(&self) -> Result<ClusterIdentity, ClusterError> {
            self.inner.identity()
        }
        fn api_resources(&self) -> Result<Vec<ApiResource>, ClusterError> {
            self.inner.api_resources()
        }
        fn get(&self, key: &ObjectKey) -> Result<Option<Value>, ClusterError> {
            self.gets.fetch_add(1, Ordering::SeqCst);
            self.inner.get(key)
        }
        fn list(
            &self,
            group: &str,
            kind: &str,
            namespace: Option<&str>,
            labels: &[(String, String)],
        ) -> Result<Vec<Value>, ClusterError> {
            self.lists.fetch_add(1, Ordering::SeqCst);
            self.inner.list(group, kind, namespace, labels)
        }
        fn create(&self, obj: &Value) -> Result<Value, ClusterError> {
            self.inner.create(obj)
        }
        fn replace(&self, obj: &Value) -> Result<Value, ClusterError> {
            self.inner.replace(obj)
        }
        fn apply(&self, obj: &Value, opts: &ApplyOptions) -> Result<Value, ClusterError> {
            self.inner.apply(obj, opts)
        }
        fn delete(&self, key: &ObjectKey, rv: Option<&str>) -> Result<Option<Value>, ClusterError> {
            self.inner.delete(key, rv)
        }
        fn list_batch_min(&self) -> Option<usize> {
            self.min
        }
    }

    fn cluster(min: Option<usize>) -> Counting {
        counting(Arc::new(SimCluster::in_memory()), min)
    }

    fn counting(inner: Arc<SimCluster>, min: Option<usize>) -> Counting {
        let opts = ApplyOptions {
            field_manager: "t".into(),
            ..ApplyOptions::default()
        };
        for ns in ["a", "b"] {
            inner
                .apply(
                    &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
                    &opts,
                )
                .unwrap();
            for i in 0..5 {
                inner
                    .apply(
                        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": format!("c{i}"), "namespace": ns},
                            "data": {"i": i.to_string()}}),
                        &opts,
                    )
                    .unwrap();
            }
        }
        Counting {
            inner,
            min,
            gets: AtomicUsize::new(0),
            lists: AtomicUsize::new(0),
        }
    }

    fn keys() -> Vec<ObjectKey> {
        let mut ks = Vec::new();
        for ns in ["a", "b", "missing"] {
            for i in [0, 3, 7, 1] {
                ks.push(ObjectKey::new("", "ConfigMap", ns, &format!("c{i}")));
            }
        }
        ks.push(ObjectKey::new("", "Namespace", "", "a"));
        ks.push(ObjectKey::new("example.com", "Widget", "a", "w"));
        ks
    }

    #[test]
    fn listed_answers_are_the_gets_answers() {
        let ks = keys();
        let sim = Arc::new(SimCluster::in_memory());
        let by_get: Vec<Option<Value>> = {
            let c = counting(sim.clone(), None);
            ks.iter().map(|k| c.get(k).unwrap()).collect()
        };
        for min in [None, Some(1), Some(3), Some(100)] {
            let c = Counting {
                inner: sim.clone(),
                min,
                gets: AtomicUsize::new(0),
                lists: AtomicUsize::new(0),
            };
            let reads = Reads::new(&c);
            let got: Vec<Option<Value>> = reads
                .get_many(&ks)
                .unwrap()
                .into_iter()
                .map(|o| o.map(|v| (*v).clone()))
                .collect();
            // The stored objects, without the status the sim shows on GET
            // (none of these kinds has one).
            assert_eq!(got, by_get, "min {min:?}");
        }
    }

    #[test]
    fn one_list_per_kind_and_namespace_shared_between_batches() {
        let c = cluster(Some(3));
        let reads = Reads::new(&c);
        let ks = keys();
        reads.get_many(&ks).unwrap();
        // ConfigMaps in a, b and missing: three LISTs; the Namespace and
        // the Widget (one key each) go by GET.
        assert_eq!(c.lists.load(Ordering::SeqCst), 3);
        assert_eq!(c.gets.load(Ordering::SeqCst), 2);
        // Asked again, even one key at a time: nothing more is read.
        for k in &ks {
            reads.get(k).unwrap();
        }
        reads.get_many(&ks).unwrap();
        assert_eq!(c.lists.load(Ordering::SeqCst), 3);
        assert_eq!(c.gets.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn below_the_threshold_objects_are_read_one_by_one() {
        let c = cluster(None);
        let reads = Reads::new(&c);
        reads.get_many(&keys()).unwrap();
        assert_eq!(c.lists.load(Ordering::SeqCst), 0);
        assert_eq!(c.gets.load(Ordering::SeqCst), keys().len());
    }
}
