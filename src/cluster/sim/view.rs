//! What reads of the simulated cluster show: the status its controllers
//! give an object at the cluster's clock (see [`super::controllers`]), and
//! dry runs (the object as a write would store it, nothing stored).
use super::state::{now, str_at, State};
use super::write::{initial_status, next_generation};
use super::{controllers, defaults, ClusterError, ObjectKey};
use serde_json::{json, Value};
use std::time::Duration;
/// What reads need to show controller status: the clock's reading (ms) and
/// the default convergence delay.
pub(super) struct View {
    pub(super) now: u64,
    pub(super) delay: Duration,
}

impl State {
    /// The number of Node objects, as controllers see it.
    pub(super) fn nodes(&self) -> i64 {
        self.kind_range("", "Node").count() as i64
    }

    /// Sets the status controllers give `obj` (stored under `key`) when
    /// its spec was last written at `written_at` (ms); kinds without a
    /// controller keep theirs.
    pub(super) fn controlled(
        &self,
        key: &ObjectKey,
        obj: &mut Value,
        view: &View,
        written_at: u64,
    ) {
        if !controllers::controlled(&key.group, &key.kind) {
            return;
        }
        let age = Duration::from_millis(view.now.saturating_sub(written_at));
        let nodes = if key.kind == "DaemonSet" {
            self.nodes()
        } else {
            0
        };
        if let Some(st) = controllers::status(obj, age, view.delay, nodes) {
            if let Some(m) = obj.as_object_mut() {
                m.insert("status".into(), st);
            }
        }
    }

    /// A stored object as reads show it.
    pub(super) fn shown(&self, key: &ObjectKey, obj: &Value, view: &View) -> Value {
        let mut out = obj.clone();
        let t = self.written.get(key).copied().unwrap_or(0);
        self.controlled(key, &mut out, view, t);
        out
    }

    /// The object `obj` would be stored as if it replaced the live one (or
    /// created it): the write-time transforms and defaults, the live
    /// object's server metadata, a generation bump when the spec changes,
    /// and the status a read would show right after the write. No field
    /// ownership is computed, nothing is stored, no Service address is
    /// allocated for a new Service.
    pub(super) fn dry_run(&self, obj: &Value, view: &View) -> Result<Value, ClusterError> {
        let (key, mut out, rv) = self.normalize(obj)?;
        let live = self.objects.get(&key).map(|o| &**o);
        if let (Some(l), Some(rv)) = (live, &rv) {
            if str_at(l, &["metadata", "resourceVersion"]) != Some(rv.as_str()) {
                return Err(ClusterError::Conflict { key });
            }
        }
        if live.is_none() && rv.is_some() {
            return Err(ClusterError::NotFound { key });
        }
        defaults::apply_defaults(&mut out, &key.group, &key.kind);
        if key.group.is_empty() && key.kind == "Service" {
            let live_ip = live
                .and_then(|l| l.get("spec"))
                .and_then(|s| s.get("clusterIP"))
                .and_then(Value::as_str);
            if let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) {
                let asked = spec
                    .get("clusterIP")
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty());
                if let (false, Some(ip)) = (asked, live_ip) {
                    spec.insert("clusterIP".into(), Value::String(ip.to_string()));
                    if spec.get("clusterIPs").is_none() {
                        spec.insert("clusterIPs".into(), json!([ip]));
                    }
                }
            }
        }
        let (generation, bumped) = next_generation(live, &out);
        let written_at = if live.is_none() || bumped {
            view.now
        } else {
            self.written.get(&key).copied().unwrap_or(0)
        };
        if let Some(m) = out.as_object_mut() {
            let status = match live {
                Some(l) => l.get("status").cloned(),
                None => initial_status(&key, m),
            };
            if let Some(st) = status {
                m.insert("status".into(), st);
            }
        }
        if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
            match live.and_then(|l| l.get("metadata")) {
                Some(lm) => {
                    for f in ["uid", "resourceVersion", "creationTimestamp"] {
                        if let Some(v) = lm.get(f) {
                            meta.insert(f.into(), v.clone());
                        }
                    }
                }
                None => {
                    meta.insert("creationTimestamp".into(), Value::String(now()));
                }
            }
            meta.insert("generation".into(), json!(generation));
        }
        self.controlled(&key, &mut out, view, written_at);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::sim::testing::*;
    use crate::cluster::sim::SimCluster;
    use crate::cluster::{ApplyOptions, Cluster};
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    #[test]
    fn shared_reads_are_reads_but_for_status() {
        let c = SimCluster::in_memory();
        c.apply(&dep("web", "nginx:1", json!({})), &opts("m"))
            .unwrap();
        let cm = json!({"apiVersion":"v1","kind":"ConfigMap",
            "metadata":{"name":"c","namespace":"default"},"data":{"a":"1"}});
        c.apply(&cm, &opts("m")).unwrap();
        let keys = [
            dkey("web"),
            ObjectKey::new("", "ConfigMap", "default", "c"),
            dkey("absent"),
        ];
        let strip = |v: &Value| {
            let mut v = v.clone();
            v.as_object_mut().unwrap().remove("status");
            v
        };
        let read = c.get_many(&keys).unwrap();
        let shared = c.get_many_shared(&keys).unwrap();
        assert_eq!(read.len(), shared.len());
        for (r, s) in read.iter().zip(&shared) {
            assert_eq!(r.as_ref().map(strip), s.as_deref().map(strip));
        }
        assert!(shared[2].is_none());
        // The same object twice is one object, not two copies.
        let again = c.get_many_shared(&keys[..1]).unwrap();
        assert!(Arc::ptr_eq(
            shared[0].as_ref().unwrap(),
            again[0].as_ref().unwrap()
        ));
    }

    #[test]
    fn objects_are_ready_at_once_and_status_is_not_a_write() {
        let c = SimCluster::in_memory();
        let w = c
            .apply(&dep("web", "nginx:1", json!({})), &opts("m"))
            .unwrap();
        assert_eq!(ready(&w), 2);
        let g = c.get(&dkey("web")).unwrap().unwrap();
        assert_eq!(ready(&g), 2);
        assert_eq!(g["status"]["observedGeneration"], json!(1));
        assert_eq!(rv_str(&g), rv_str(&w));
        let g2 = c.get(&dkey("web")).unwrap().unwrap();
        assert_eq!(rv_str(&g2), rv_str(&w));
        let listed = c.list("apps", "Deployment", None, &[]).unwrap();
        assert_eq!(ready(&listed[0]), 2);
        let snap = c.snapshot().unwrap();
        let d = snap.iter().find(|o| o["kind"] == "Deployment").unwrap();
        assert_eq!(ready(d), 2);
        assert_eq!(rv_str(d), rv_str(&w));
        // Reapplying the same object changes nothing.
        let again = c
            .apply(&dep("web", "nginx:1", json!({})), &opts("m"))
            .unwrap();
        assert_eq!(rv_str(&again), rv_str(&w));
        // A Service gets an (empty) load balancer status.
        let svc = json!({"apiVersion":"v1","kind":"Service","metadata":{"name":"s","namespace":"default"},
            "spec":{"ports":[{"port":80}]}});
        let s = c.create(&svc).unwrap();
        assert_eq!(s["status"], json!({"loadBalancer": {}}));
    }

    #[test]
    fn never_ready_and_failing_objects() {
        let (ms, c) = driven();
        c.apply(
            &dep("web", "nginx:1", json!({controllers::READY: "never"})),
            &opts("m"),
        )
        .unwrap();
        ms.fetch_add(3_600_000, Ordering::SeqCst);
        let g = c.get(&dkey("web")).unwrap().unwrap();
        assert_eq!(ready(&g), 0);
        assert_eq!(g["status"]["unavailableReplicas"], json!(2));
        let job = json!({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"default",
            "annotations":{controllers::READY: "fail"}},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"x"}]}}}});
        let j = c.create(&job).unwrap();
        assert_eq!(j["status"]["conditions"][0]["type"], json!("Failed"));
    }

    #[test]
    fn ready_after_follows_the_clock_and_generation_bumps_reset_it() {
        let (ms, c) = driven();
        let ann = json!({controllers::READY_AFTER: "2s"});
        let w = c
            .apply(&dep("web", "nginx:1", ann.clone()), &opts("m"))
            .unwrap();
        assert_eq!(ready(&w), 0);
        ms.fetch_add(1_999, Ordering::SeqCst);
        assert_eq!(ready(&c.get(&dkey("web")).unwrap().unwrap()), 0);
        ms.fetch_add(1, Ordering::SeqCst);
        let g = c.get(&dkey("web")).unwrap().unwrap();
        assert_eq!(ready(&g), 2);
        assert_eq!(rv_str(&g), rv_str(&w));
        // A change outside the spec keeps it ready.
        let mut labelled = dep("web", "nginx:1", ann.clone());
        labelled["metadata"]["labels"] = json!({"x": "y"});
        let l = c.apply(&labelled, &opts("m")).unwrap();
        assert_eq!(l["metadata"]["generation"], json!(1));
        assert_eq!(ready(&l), 2);
        // A spec change starts over.
        let mut bumped = dep("web", "nginx:2", ann);
        bumped["metadata"]["labels"] = json!({"x": "y"});
        let dry = c.dry_run(&bumped).unwrap();
        assert_eq!(dry["metadata"]["generation"], json!(2));
        assert_eq!(ready(&dry), 0);
        let mut dry_opts = opts("m");
        dry_opts.dry_run = true;
        assert_eq!(ready(&c.apply(&bumped, &dry_opts).unwrap()), 0);
        assert_eq!(ready(&c.get(&dkey("web")).unwrap().unwrap()), 2);
        let b = c.apply(&bumped, &opts("m")).unwrap();
        assert_eq!(b["metadata"]["generation"], json!(2));
        assert_eq!(ready(&b), 0);
        assert_eq!(b["status"]["observedGeneration"], json!(2));
        ms.fetch_add(2_000, Ordering::SeqCst);
        assert_eq!(ready(&c.get(&dkey("web")).unwrap().unwrap()), 2);
    }

    #[test]
    fn default_delay_and_daemonsets_count_nodes() {
        let (ms, c) = driven();
        let c = c.with_default_delay(Duration::from_secs(1));
        c.apply(&dep("web", "nginx:1", json!({})), &opts("m"))
            .unwrap();
        assert_eq!(ready(&c.get(&dkey("web")).unwrap().unwrap()), 0);
        ms.fetch_add(1_000, Ordering::SeqCst);
        assert_eq!(ready(&c.get(&dkey("web")).unwrap().unwrap()), 2);
        let ds = json!({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"d","namespace":"default"},
            "spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},
            "spec":{"containers":[{"name":"c","image":"x"}]}}}});
        let d = c.create(&ds).unwrap();
        assert_eq!(d["status"]["desiredNumberScheduled"], json!(1));
        for i in 0..3 {
            c.create(&json!({"apiVersion":"v1","kind":"Node","metadata":{"name":format!("n{i}")}}))
                .unwrap();
        }
        let k = ObjectKey::new("apps", "DaemonSet", "default", "d");
        let d = c.get(&k).unwrap().unwrap();
        assert_eq!(d["status"]["desiredNumberScheduled"], json!(3));
        assert_eq!(d["status"]["numberReady"], json!(0));
    }

    #[test]
    fn dry_run_is_the_stored_form_of_the_desired_object() {
        let c = SimCluster::in_memory();
        let secret = json!({"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"},
            "stringData":{"password":"hunter2"}});
        let d = c.dry_run(&secret).unwrap();
        assert_eq!(d["data"]["password"], json!("aHVudGVyMg=="));
        assert_eq!(d["type"], json!("Opaque"));
        assert!(d["metadata"].get("uid").is_none());
        assert!(c
            .get(&ObjectKey::new("", "Secret", "default", "s"))
            .unwrap()
            .is_none());
        let live = c.apply(&secret, &opts("rudder")).unwrap();
        let d = c.dry_run(&secret).unwrap();
        for f in ["uid", "resourceVersion", "creationTimestamp", "generation"] {
            assert_eq!(d["metadata"][f], live["metadata"][f], "{f}");
        }
        assert_eq!(d["data"], live["data"]);
        // The same as the full dry-run apply on the desired fields.
        let desired = dep("web", "nginx:1", json!({}));
        c.apply(&desired, &opts("rudder")).unwrap();
        let mut changed = desired.clone();
        changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
        let cheap = c.dry_run(&changed).unwrap();
        let full = c
            .apply(
                &changed,
                &ApplyOptions {
                    field_manager: "rudder".into(),
                    force: true,
                    dry_run: true,
                },
            )
            .unwrap();
        assert_eq!(cheap["spec"], full["spec"]);
        assert_eq!(cheap["status"], full["status"]);
        assert_eq!(cheap["metadata"]["generation"], json!(2));
        // Cluster-scoped kinds lose their namespace; bad objects fail.
        let cr = json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",
            "metadata":{"name":"r","namespace":"default"},"rules":[]});
        assert!(c.dry_run(&cr).unwrap()["metadata"]
            .get("namespace")
            .is_none());
        assert!(matches!(
            c.dry_run(&json!({"kind": "ConfigMap"})),
            Err(ClusterError::BadObject(_))
        ));
        let mut nons = config_map("x", "1");
        nons["metadata"]["namespace"] = json!("nope");
        assert!(matches!(
            c.dry_run(&nons),
            Err(ClusterError::NamespaceNotFound { .. })
        ));
        // A Service keeps its live address.
        let svc = json!({"apiVersion":"v1","kind":"Service","metadata":{"name":"s","namespace":"default"},
            "spec":{"ports":[{"port":80}]}});
        let s = c.create(&svc).unwrap();
        assert_eq!(
            c.dry_run(&svc).unwrap()["spec"]["clusterIP"],
            s["spec"]["clusterIP"]
        );
    }

    #[test]
    fn many_dry_runs_are_cheap() {
        let c = SimCluster::in_memory();
        let mut dry = opts("rudder");
        dry.dry_run = true;
        let start = std::time::Instant::now();
        for i in 0..2000 {
            let o = c
                .apply(&cm("default", &format!("c{i}"), json!({"a":"b"})), &dry)
                .unwrap();
            assert!(c.get(&ObjectKey::of(&o).unwrap()).unwrap().is_none());
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(20));
    }
}
