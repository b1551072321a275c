//! The server's part of create, replace and server-side apply on the
//! simulated cluster: defaults, the initial status, cluster IPs,
//! `generation`, `managedFields` with per-manager ownership, conflicts and
//! `force`, and the removal of fields a manager stops applying.
use super::fields::{self, FieldSet, Managed};
use super::state::{now, str_at, Op, Plan, Put, State, CRD_GROUP, CRD_KIND};
use super::{defaults, kinds, ClusterError, ObjectKey};
use crate::cluster::ApplyOptions;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
impl State {
    /// A free cluster IP, and the offset to search from next time.
    pub(super) fn allocate_ip(&self) -> (String, u32) {
        let used: BTreeSet<&str> = self
            .kind_range("", "Service")
            .filter_map(|(_, o)| str_at(o, &["spec", "clusterIP"]))
            .collect();
        let mut n = self.next_ip;
        for _ in 0..0xffff {
            if !(1..0xffff).contains(&n) {
                n = 1;
            }
            let ip = format!("10.96.{}.{}", n >> 8, n & 0xff);
            if !used.contains(ip.as_str()) {
                return (ip, n + 1);
            }
            n += 1;
        }
        ("10.96.255.254".into(), n)
    }

    /// The server's part of a write: defaults, status, cluster IP,
    /// generation, managedFields, resourceVersion. `live` is the object
    /// before the write, `managed` its new ownership.
    pub(super) fn finish(
        &self,
        key: &ObjectKey,
        mut obj: Value,
        live: Option<&Value>,
        mut managed: Vec<Managed>,
        plan: &mut Plan,
        dry_run: bool,
    ) -> Value {
        defaults::apply_defaults(&mut obj, &key.group, &key.kind);
        let ts = now();
        // Status: the live one, or the initial one a new object gets.
        if let Some(m) = obj.as_object_mut() {
            let status = match live {
                Some(l) => l.get("status").cloned(),
                None => initial_status(key, m),
            };
            if let Some(s) = status {
                m.insert("status".into(), s);
            }
        }
        if key.group.is_empty() && key.kind == "Service" {
            let live_ip = live
                .and_then(|l| l.get("spec"))
                .and_then(|s| s.get("clusterIP"));
            let external = str_at(&obj, &["spec", "type"]) == Some("ExternalName");
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                let asked = spec
                    .get("clusterIP")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string);
                let ip = match (asked, live_ip) {
                    (Some(a), _) => Some(a),
                    (None, Some(Value::String(l))) => Some(l.clone()),
                    (None, _) if !external => {
                        let (ip, next) = self.allocate_ip();
                        plan.next_ip = Some(next);
                        Some(ip)
                    }
                    _ => None,
                };
                if let Some(ip) = ip {
                    spec.insert("clusterIP".into(), Value::String(ip.clone()));
                    if spec.get("clusterIPs").is_none() {
                        spec.insert("clusterIPs".into(), json!([ip]));
                    }
                }
            }
        }
        fields::retain_present(&obj, &mut managed);
        let (generation, _) = next_generation(live, &obj);
        let (uid, created, rv) = match live {
            Some(l) => (
                str_at(l, &["metadata", "uid"]).map(str::to_string),
                str_at(l, &["metadata", "creationTimestamp"]).map(str::to_string),
                str_at(l, &["metadata", "resourceVersion"]).map(str::to_string),
            ),
            None if dry_run => (None, Some(ts.clone()), None),
            None => (
                Some(uuid::Uuid::new_v4().to_string()),
                Some(ts.clone()),
                None,
            ),
        };
        fields::write_managed(&mut obj, &managed);
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            if let Some(u) = uid {
                meta.insert("uid".into(), Value::String(u));
            }
            if let Some(rv) = rv {
                meta.insert("resourceVersion".into(), Value::String(rv));
            }
            meta.insert("generation".into(), json!(generation));
            if let Some(c) = created {
                meta.insert("creationTimestamp".into(), Value::String(c));
            }
        }
        // A write that changes nothing keeps the object (and its version).
        if let Some(l) = live {
            if *l == obj {
                return obj;
            }
        }
        if !dry_run {
            let next = plan.counter.unwrap_or(self.counter) + 1;
            plan.counter = Some(next);
            if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("resourceVersion".into(), Value::String(next.to_string()));
            }
            let touched = live.is_none_or(|l| {
                l.get("metadata").and_then(|m| m.get("generation")) != Some(&json!(generation))
            });
            plan.puts.push(Put {
                key: key.clone(),
                obj: obj.clone(),
                touched,
                written_at: 0,
            });
        }
        obj
    }

    pub(super) fn write(
        &self,
        obj: &Value,
        op: Op,
        manager: &str,
        opts: &ApplyOptions,
    ) -> Result<Plan, ClusterError> {
        let (key, cfg, rv) = self.normalize(obj)?;
        let live = self.objects.get(&key).map(|o| &**o);
        let av = str_at(&cfg, &["apiVersion"]).unwrap_or("").to_string();
        let ts = now();
        let mut plan = Plan::default();
        if let (Some(l), Some(rv)) = (live, &rv) {
            if str_at(l, &["metadata", "resourceVersion"]) != Some(rv.as_str()) {
                return Err(ClusterError::Conflict { key });
            }
        }
        let entry = |fields: FieldSet, operation: &str| Managed {
            manager: manager.to_string(),
            operation: operation.to_string(),
            api_version: av.clone(),
            time: ts.clone(),
            fields,
        };
        let result = match (op, live) {
            (Op::Create, Some(_)) => return Err(ClusterError::AlreadyExists { key }),
            (Op::Replace, None) => return Err(ClusterError::NotFound { key }),
            (Op::Apply, None) if rv.is_some() => return Err(ClusterError::NotFound { key }),
            (Op::Create | Op::Apply, None) => {
                let operation = if op == Op::Apply { "Apply" } else { "Update" };
                let managed = vec![entry(fields::leaves(&cfg), operation)];
                self.finish(&key, cfg, None, managed, &mut plan, opts.dry_run)
            }
            (Op::Replace, Some(l)) => {
                let mut managed = fields::read_managed(l);
                let mut mine = FieldSet::new();
                for p in fields::leaves(&cfg) {
                    if fields::get(l, &p) != fields::get(&cfg, &p) {
                        for m in managed.iter_mut() {
                            m.fields.retain(|q| !fields::overlaps(q, &p));
                        }
                        mine.insert(p);
                    }
                }
                add_fields(&mut managed, manager, "Update", &av, &ts, mine);
                self.finish(&key, cfg, Some(l), managed, &mut plan, opts.dry_run)
            }
            (Op::Apply, Some(l)) => {
                self.apply_existing(&key, l, cfg, manager, opts, &av, &ts, &mut plan)?
            }
        };
        if key.group == CRD_GROUP && key.kind == CRD_KIND {
            self.check_crd_change(&key, live, &result)?;
        }
        plan.result = Some(result);
        Ok(plan)
    }

    /// A CRD may not take a group/kind another CRD (or a built-in) serves.
    pub(super) fn check_crd_change(
        &self,
        key: &ObjectKey,
        live: Option<&Value>,
        new: &Value,
    ) -> Result<(), ClusterError> {
        let Some(r) = kinds::from_crd(new) else {
            return Ok(());
        };
        if let Some(l) = live.and_then(kinds::from_crd) {
            if l.group == r.group && l.kind == r.kind {
                return Ok(());
            }
        }
        if self.resource(&r.group, &r.kind).is_some() {
            return Err(ClusterError::Invalid {
                key: key.clone(),
                message: format!("kind {} in group {:?} is already served", r.kind, r.group),
            });
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn apply_existing(
        &self,
        key: &ObjectKey,
        live: &Value,
        cfg: Value,
        manager: &str,
        opts: &ApplyOptions,
        av: &str,
        ts: &str,
        plan: &mut Plan,
    ) -> Result<Value, ClusterError> {
        let mut managed = fields::read_managed(live);
        let new_set = fields::leaves(&cfg);
        let is_me = |m: &Managed| m.manager == manager && m.operation == "Apply";
        // Conflicts: fields another manager owns that this apply changes.
        let mut conflicts: Vec<(String, String)> = Vec::new();
        let mut taken: Vec<fields::Path> = Vec::new();
        for p in &new_set {
            let lv = fields::get(live, p);
            let cv = fields::get(&cfg, p);
            if lv.is_none() || lv == cv {
                continue;
            }
            // An empty map merges into a map without changing it.
            if lv.is_some_and(Value::is_object)
                && cv.is_some_and(|c| c.as_object().is_some_and(Map::is_empty))
            {
                continue;
            }
            for m in managed.iter().filter(|m| !is_me(m)) {
                if m.fields.iter().any(|q| fields::overlaps(q, p)) {
                    let c = (fields::display(p), m.manager.clone());
                    if !conflicts.contains(&c) {
                        conflicts.push(c);
                    }
                    taken.push(p.clone());
                }
            }
        }
        if !conflicts.is_empty() {
            if !opts.force {
                return Err(ClusterError::FieldConflict {
                    key: key.clone(),
                    fields: conflicts,
                });
            }
            for m in managed.iter_mut().filter(|m| !is_me(m)) {
                m.fields
                    .retain(|q| !taken.iter().any(|p| fields::overlaps(q, p)));
            }
        }
        let mut obj = live.clone();
        fields::merge(&mut obj, &cfg);
        // Fields this manager applied before and leaves out now.
        let old_set: FieldSet = managed
            .iter()
            .filter(|m| is_me(m))
            .flat_map(|m| m.fields.iter().cloned())
            .collect();
        let others_own = |p: &[String]| {
            managed.iter().filter(|m| !is_me(m)).any(|m| {
                m.fields
                    .iter()
                    .any(|q| q.starts_with(p) || p.starts_with(q))
            })
        };
        let removed: Vec<&fields::Path> = old_set
            .iter()
            .filter(|p| !new_set.contains(*p) && !others_own(p))
            .collect();
        // Whole list items first (deepest first), then single fields; an
        // item's key fields go only with the item.
        let mut items: Vec<fields::Path> = fields::item_prefixes(removed.iter().copied())
            .into_iter()
            .filter(|item| !new_set.iter().any(|p| p.starts_with(item)) && !others_own(item))
            .collect();
        items.sort_by_key(|i| std::cmp::Reverse(i.len()));
        for item in &items {
            fields::remove(&mut obj, item);
        }
        for p in &removed {
            if items.iter().any(|i| p.starts_with(i)) || fields::is_key_field(p) {
                continue;
            }
            fields::remove(&mut obj, p);
        }
        let me = managed.iter().position(is_me);
        match me {
            Some(i) => {
                let m = &mut managed[i];
                if m.fields != new_set || m.api_version != av {
                    m.fields = new_set;
                    m.api_version = av.to_string();
                    m.time = ts.to_string();
                }
            }
            None => managed.push(Managed {
                manager: manager.to_string(),
                operation: "Apply".into(),
                api_version: av.to_string(),
                time: ts.to_string(),
                fields: new_set,
            }),
        }
        Ok(self.finish(key, obj, Some(live), managed, plan, opts.dry_run))
    }
}

pub(super) fn add_fields(
    managed: &mut Vec<Managed>,
    manager: &str,
    op: &str,
    av: &str,
    ts: &str,
    fields: FieldSet,
) {
    if fields.is_empty() {
        return;
    }
    match managed
        .iter_mut()
        .find(|m| m.manager == manager && m.operation == op)
    {
        Some(m) => {
            m.fields.extend(fields);
            m.api_version = av.to_string();
            m.time = ts.to_string();
        }
        None => managed.push(Managed {
            manager: manager.into(),
            operation: op.into(),
            api_version: av.into(),
            time: ts.into(),
            fields,
        }),
    }
}

pub(super) fn initial_status(key: &ObjectKey, obj: &Map<String, Value>) -> Option<Value> {
    match (key.group.as_str(), key.kind.as_str()) {
        ("", "Namespace") => Some(json!({"phase": "Active"})),
        (CRD_GROUP, CRD_KIND) => {
            let crd = Value::Object(obj.clone());
            let r = kinds::from_crd(&crd)?;
            let names = crd.get("spec").and_then(|s| s.get("names")).cloned();
            Some(json!({
                "acceptedNames": names.unwrap_or_else(|| json!({"kind": r.kind, "plural": r.plural})),
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found"},
                    {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
                ],
                "storedVersions": [r.version],
            }))
        }
        _ => None,
    }
}

/// The `generation` of `new` replacing `live` (1 for a new object), and
/// whether the write changes the spec (bumping it).
pub(super) fn next_generation(live: Option<&Value>, new: &Value) -> (i64, bool) {
    let Some(l) = live else {
        return (1, false);
    };
    let g = l
        .get("metadata")
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(1);
    if spec_changed(l, new) {
        (g + 1, true)
    } else {
        (g, false)
    }
}

pub(super) fn spec_changed(old: &Value, new: &Value) -> bool {
    if old.get("spec").is_some() || new.get("spec").is_some() {
        return old.get("spec") != new.get("spec");
    }
    // The top-level fields besides metadata, status, apiVersion and kind,
    // compared in place (no copies).
    fn body(v: &Value) -> impl Iterator<Item = (&String, &Value)> + '_ {
        v.as_object().into_iter().flat_map(|m| {
            m.iter().filter(|(k, _)| {
                !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind")
            })
        })
    }
    !body(old).eq(body(new))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::sim::testing::*;
    use crate::cluster::sim::SimCluster;
    use crate::cluster::Cluster;

    #[test]
    fn generation_only_on_spec_change_and_status_kept() {
        let c = SimCluster::in_memory();
        let d = json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},
            "spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
            "spec":{"containers":[{"name":"web","image":"nginx:1.27","ports":[{"containerPort":80}]}]}}},
            "status":{"replicas":5}});
        let live = c.create(&d).unwrap();
        // The status written is ignored; the controller's shows.
        assert_eq!(live["status"]["replicas"], json!(1));
        assert_eq!(live["status"]["readyReplicas"], json!(1));
        assert_eq!(live["spec"]["replicas"], json!(1));
        assert_eq!(live["spec"]["progressDeadlineSeconds"], json!(600));
        let pod = &live["spec"]["template"]["spec"];
        assert_eq!(
            pod["containers"][0]["imagePullPolicy"],
            json!("IfNotPresent")
        );
        assert_eq!(pod["containers"][0]["ports"][0]["protocol"], json!("TCP"));
        assert_eq!(pod["dnsPolicy"], json!("ClusterFirst"));
        let mut l2 = live.clone();
        l2["metadata"]["labels"] = json!({"x": "y"});
        let l2 = c.replace(&l2).unwrap();
        assert_eq!(l2["metadata"]["generation"], json!(1));
        let mut l3 = l2.clone();
        l3["spec"]["replicas"] = json!(3);
        let l3 = c.replace(&l3).unwrap();
        assert_eq!(l3["metadata"]["generation"], json!(2));
        assert!(l3["spec"]["replicas"].is_i64());
        // A write with the same content changes nothing.
        let l4 = c.replace(&l3).unwrap();
        assert_eq!(l4, l3);
    }

    #[test]
    fn secret_string_data_and_reapply_is_identical() {
        let c = SimCluster::in_memory();
        let s = json!({"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"},
            "stringData":{"password":"hunter2"}});
        let live = c.apply(&s, &opts("rudder")).unwrap();
        assert_eq!(live["data"]["password"], json!("aHVudGVyMg=="));
        assert!(live.get("stringData").is_none());
        assert_eq!(live["type"], json!("Opaque"));
        let mut dry = opts("rudder");
        dry.dry_run = true;
        assert_eq!(c.apply(&s, &dry).unwrap(), live);
        assert_eq!(c.apply(&s, &opts("rudder")).unwrap(), live);
    }

    #[test]
    fn apply_conflicts_force_and_removal() {
        let c = SimCluster::in_memory();
        c.apply(
            &cm("default", "a", json!({"x":"1","y":"1"})),
            &opts("alice"),
        )
        .unwrap();
        // Same value from another manager: shared, no conflict.
        c.apply(&cm("default", "a", json!({"x":"1"})), &opts("bob"))
            .unwrap();
        // A different value: conflict with alice.
        let err = c
            .apply(&cm("default", "a", json!({"y":"2"})), &opts("bob"))
            .unwrap_err();
        match &err {
            ClusterError::FieldConflict { fields, .. } => {
                assert_eq!(fields, &[(".data.y".to_string(), "alice".to_string())])
            }
            e => panic!("{e}"),
        }
        let mut force = opts("bob");
        force.force = true;
        let o = c
            .apply(&cm("default", "a", json!({"y":"2"})), &force)
            .unwrap();
        assert_eq!(o["data"], json!({"x":"1","y":"2"}));
        // bob left x out: alice still owns it, so it stays.
        let mf = fields::read_managed(&o);
        let alice = mf.iter().find(|m| m.manager == "alice").unwrap();
        assert_eq!(alice.fields.len(), 1);
        // alice drops x: nobody owns it any more, it goes.
        let o = c
            .apply(&cm("default", "a", json!({})), &opts("alice"))
            .unwrap();
        assert_eq!(o["data"], json!({"y":"2"}));
        // A replace by another manager takes the fields it changes.
        let mut r = o.clone();
        r["data"]["y"] = json!("3");
        let o = c.replace(&r).unwrap();
        let err = c
            .apply(&cm("default", "a", json!({"y":"4"})), &opts("bob"))
            .unwrap_err();
        assert!(
            matches!(&err, ClusterError::FieldConflict { fields, .. } if fields[0].1 == "unknown"),
            "{err} {o}"
        );
    }

    #[test]
    fn apply_merges_containers_by_name_and_removes_dropped_ones() {
        let c = SimCluster::in_memory();
        let dep = |containers: Value| {
            json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"w","namespace":"default"},
                "spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},
                "spec":{"containers":containers}}}})
        };
        c.apply(
            &dep(json!([{"name":"a","image":"a:1"},{"name":"b","image":"b:1"}])),
            &opts("m"),
        )
        .unwrap();
        let o = c
            .apply(&dep(json!([{"name":"a","image":"a:2"}])), &opts("m"))
            .unwrap();
        let cs = o["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap();
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0]["image"], json!("a:2"));
        assert_eq!(
            cs[0]["terminationMessagePath"],
            json!("/dev/termination-log")
        );
        assert_eq!(o["metadata"]["generation"], json!(2));
    }

    #[test]
    fn services_get_a_cluster_ip_and_keep_it() {
        let c = SimCluster::in_memory();
        let svc = json!({"apiVersion":"v1","kind":"Service","metadata":{"name":"s","namespace":"default"},
            "spec":{"ports":[{"port":80}],"selector":{"a":"b"}}});
        let o = c.apply(&svc, &opts("m")).unwrap();
        let ip = o["spec"]["clusterIP"].as_str().unwrap().to_string();
        assert!(ip.starts_with("10.96."));
        assert_eq!(o["spec"]["ports"][0]["targetPort"], json!(80));
        assert_eq!(o["spec"]["type"], json!("ClusterIP"));
        let o2 = c.apply(&svc, &opts("m")).unwrap();
        assert_eq!(o2, o);
        let mut other = svc.clone();
        other["metadata"]["name"] = json!("t");
        let t = c.create(&other).unwrap();
        assert_ne!(t["spec"]["clusterIP"], json!(ip));
    }
}
