//! Going back: rollbacks to a recorded revision, the undo of a failed
//! install, and uninstalls (planned, or as their own operation).
use super::types::ExecError;
use super::{meta_str, namespace_key, Executor, Failure};
use crate::cluster::{ownership, ObjectKey, Scope};
use crate::exec::faults;
use crate::exec::journal::ReleaseJournal;
use crate::plan::{ObjectAction, ReleaseOptions, ReleasePlan};
use crate::release::{HistoryMax, OpError, Release, Releases};
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;

impl Executor<'_> {
    /// The objects of a recorded revision, qualified and stamped.
    pub(super) fn revision_objects(&self, rel: &Release) -> Result<Vec<Value>, Failure> {
        let mut out = Vec::new();
        for doc in crate::manifest::split::split_manifests(&rel.manifest) {
            let body = match doc.strip_prefix("# Source: ") {
                Some(rest) => rest.split_once('\n').map_or("", |(_, b)| b),
                None => doc,
            };
            let node = crate::yaml::parse_yaml_to_json(body)
                .map_err(|e| Failure(format!("revision {} manifest: {e}", rel.version)))?;
            let mut v = serde_json::to_value(&node)
                .map_err(|e| Failure(format!("revision {} manifest: {e}", rel.version)))?;
            if v.is_null() {
                continue;
            }
            let Some(key) = ObjectKey::of(&v) else {
                continue;
            };
            let scope = self
                .cluster
                .scope(&key.group, &key.kind)
                .ok()
                .flatten()
                .unwrap_or(Scope::Namespaced);
            if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                match scope {
                    Scope::Cluster => {
                        m.remove("namespace");
                    }
                    Scope::Namespaced => {
                        let has = m
                            .get("namespace")
                            .and_then(Value::as_str)
                            .is_some_and(|s| !s.is_empty());
                        if !has {
                            m.insert("namespace".into(), Value::String(rel.namespace.clone()));
                        }
                    }
                }
            }
            ownership::stamp(&mut v, &rel.name, &rel.namespace);
            out.push(v);
        }
        Ok(out)
    }

    pub(super) fn delete_created(
        &self,
        namespace: &str,
        name: &str,
        j: &mut ReleaseJournal,
        run: &str,
        created: &[ObjectKey],
        keep: &BTreeSet<ObjectKey>,
    ) -> Result<(), Failure> {
        let rref = format!("{namespace}/{name}");
        let far = self.clock.now() + Duration::from_secs(3600);
        for key in created.iter().rev() {
            if keep.contains(key) {
                continue;
            }
            self.delete_one(&rref, j, run, key, far)?;
        }
        Ok(())
    }

    /// Returns a release to revision `to`: re-applies its objects, deletes
    /// what `created` lists and `to` lacks, records the rollback.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn rollback_to(
        &self,
        namespace: &str,
        name: &str,
        to: u64,
        options: &ReleaseOptions,
        j: &mut ReleaseJournal,
        run: &str,
        created: &[ObjectKey],
    ) -> Result<u64, String> {
        let ops = Releases::new(self.store);
        let rref = format!("{namespace}/{name}");
        let deadline = self.clock.now() + options.timeout;
        let (last, pending) = ops
            .begin_rollback(namespace, name, to, HistoryMax(options.history_max))
            .map_err(|e| crate::error_chain(&e))?;
        faults::durable_write("store");
        let target = ops
            .get(namespace, name, to)
            .map_err(|e| crate::error_chain(&e))?;
        // (the failure, and whether it was the wait that failed)
        let outcome = (|| -> Result<(), (Failure, bool)> {
            let unwaited = |f: Failure| (f, false);
            let objs = self.revision_objects(&target).map_err(unwaited)?;
            let mut keys: BTreeSet<ObjectKey> = objs.iter().filter_map(ObjectKey::of).collect();
            // The release namespace stays: the target's objects go back in.
            keys.insert(namespace_key(namespace));
            // Objects of the failed attempt that the target lacks: gone.
            self.delete_created(namespace, name, j, run, created, &keys)
                .map_err(unwaited)?;
            // Objects the failed revision had beside the target's, and this
            // release owns live: gone too (Helm's rollback diff). Every
            // revision after the target counts, not only the last: after an
            // interrupted rollback, the last is that rollback's own record,
            // and the objects to take back are the upgrade's before it.
            let mut newer: Vec<Release> = ops
                .history(namespace, name)
                .unwrap_or_default()
                .into_iter()
                .filter(|r| r.version > to && r.version <= last.version)
                .collect();
            newer.sort_by_key(|r| std::cmp::Reverse(r.version));
            for failed in newer {
                for o in self.revision_objects(&failed).map_err(unwaited)? {
                    let Some(k) = ObjectKey::of(&o) else { continue };
                    if keys.contains(&k) {
                        continue;
                    }
                    if let Ok(Some(live)) = self.cluster.get(&k) {
                        if ownership::owned_by(&live, name, namespace) && !ownership::keep(&live) {
                            self.delete_one(&rref, j, run, &k, deadline)
                                .map_err(unwaited)?;
                        }
                    }
                }
            }
            let mut waits = Vec::new();
            for o in &objs {
                let w = self
                    .apply_one(&rref, j, run, o, deadline)
                    .map_err(unwaited)?;
                if let Some(k) = ObjectKey::of(o) {
                    if crate::plan::planner::wait_rule(
                        &k.kind,
                        options.wait_strategy,
                        options.wait_for_jobs,
                    )
                    .is_some()
                    {
                        waits.push((k, meta_str(&w, "resourceVersion")));
                    }
                }
            }
            if options.waits() {
                self.wait_for(
                    &rref,
                    &waits,
                    options.wait_strategy,
                    options.wait_for_jobs,
                    deadline,
                )
                .map_err(|f| (f, true))?;
            }
            Ok(())
        })();
        let rec = match outcome {
            Err((Failure(e), true)) => {
                ops.fail_rollback_wait(&pending, &e)
                    .map_err(|e| crate::error_chain(&e))?;
                faults::durable_write("store");
                return Err(e);
            }
            Err((Failure(e), false)) => {
                ops.finish_rollback(&last, &pending, Err(e.clone()))
                    .map_err(|e| crate::error_chain(&e))?;
                faults::durable_write("store");
                return Err(e);
            }
            Ok(()) => ops
                .finish_rollback(&last, &pending, Ok(()))
                .map_err(|e| crate::error_chain(&e))?,
        };
        faults::durable_write("store");
        Ok(rec.version)
    }

    /// A rollback as its own operation (`rudder rollback`, or the reverse
    /// rollback of completed releases).
    pub fn rollback_release(
        &self,
        namespace: &str,
        name: &str,
        to: u64,
        options: &ReleaseOptions,
        j: &mut ReleaseJournal,
        why: &str,
    ) -> Result<u64, ExecError> {
        let run = uuid::Uuid::new_v4().to_string();
        let ops = Releases::new(self.store);
        let release = format!("{namespace}/{name}");
        let last = ops.last(namespace, name).map_err(|e| ExecError::Store {
            release: release.clone(),
            source: Box::new(e),
        })?;
        self.begin(
            j,
            &run,
            "rollback",
            why,
            last.version + 1,
            Some(to),
            false,
            Vec::new(),
        )?;
        let r = self.rollback_to(namespace, name, to, options, j, &run, &[]);
        let _ = self.end(j, &run, if r.is_ok() { "deployed" } else { "failed" });
        r.map_err(|message| ExecError::ReleaseFailed { release, message })
    }

    /// Undoes a failed or interrupted install: deletes what the run
    /// created, newest first, purges the release's records (when `purge`,
    /// or when every delete worked), and only then deletes the release
    /// namespace if the run created it, since Helm's Secrets and
    /// ConfigMaps drivers keep the records in it. A real namespace
    /// terminates for a while, refusing new objects: it is waited for,
    /// up to `wait`, so that a rerun finds it gone and creates it again.
    /// Returns the deletes' and the purge's results.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn undo_install(
        &self,
        namespace: &str,
        name: &str,
        j: &mut ReleaseJournal,
        run: &str,
        created: &[ObjectKey],
        purge: bool,
        wait: Duration,
    ) -> (Result<(), Failure>, Result<(), String>) {
        let ns_key = namespace_key(namespace);
        let keep: BTreeSet<ObjectKey> = [ns_key.clone()].into();
        let mut r = self.delete_created(namespace, name, j, run, created, &keep);
        let mut r2 = Ok(());
        if purge || r.is_ok() {
            r2 = Releases::new(self.store)
                .purge(namespace, name)
                .map_err(|e| crate::error_chain(&e));
            faults::durable_write("store");
        }
        if r.is_ok()
            && r2.is_ok()
            && created.contains(&ns_key)
            && !self.namespace_shared(namespace, name)
        {
            let rref = format!("{namespace}/{name}");
            let deadline = self.clock.now() + wait;
            r = self
                .delete_one(&rref, j, run, &ns_key, deadline)
                .and_then(|()| self.wait_deleted(&rref, std::slice::from_ref(&ns_key), deadline));
        }
        (r, r2)
    }

    /// Whether another release uses namespace `namespace`, so that the
    /// namespace stays although `name`'s run created it: another release
    /// of this apply started in it (releases run at the same time: it may
    /// not have written its record yet), or the store holds another
    /// release's records there.
    pub(super) fn namespace_shared(&self, namespace: &str, name: &str) -> bool {
        let started = self
            .ns_started
            .lock()
            .map_or(0, |m| m.get(namespace).copied().unwrap_or(0));
        if started > 1 {
            return true;
        }
        match self.store.list_all(Some(namespace)) {
            Ok(records) => records.iter().any(|r| r.name != name),
            // Unknown: keep the namespace (deleting it could take others' objects).
            Err(_) => true,
        }
    }

    pub(super) fn uninstall_planned(
        &self,
        rp: &ReleasePlan,
        j: &mut ReleaseJournal,
        run: &str,
    ) -> Result<(), Failure> {
        let ops = Releases::new(self.store);
        let u = ops
            .begin_uninstall(&rp.namespace, &rp.name, false)
            .map_err(|e| Failure(e.to_string()))?;
        faults::durable_write("store");
        let rref = format!("{}/{}", rp.namespace, rp.name);
        let far = self.clock.now() + rp.options.timeout;
        for o in &rp.objects {
            if o.action == ObjectAction::Delete {
                self.delete_one(&rref, j, run, &o.key.object_key(), far)?;
            }
        }
        if let Some(u) = u {
            ops.finish_uninstall(&u, false, None)
                .map_err(|e| Failure(e.to_string()))?;
            faults::durable_write("store");
        }
        Ok(())
    }

    /// Uninstalls a release (Helm's `uninstall`): deletes the last
    /// revision's objects in reverse install order, except `keep`.
    pub fn uninstall_release(
        &self,
        namespace: &str,
        name: &str,
        keep_history: bool,
        wait: Option<Duration>,
        j: &mut ReleaseJournal,
    ) -> Result<(), ExecError> {
        let release = format!("{namespace}/{name}");
        let store_error = |e: OpError| ExecError::Store {
            release: release.clone(),
            source: Box::new(e),
        };
        let failed = |Failure(message)| ExecError::ReleaseFailed {
            release: release.clone(),
            message,
        };
        let ops = Releases::new(self.store);
        let run = uuid::Uuid::new_v4().to_string();
        let last = ops.last(namespace, name).map_err(store_error)?;
        self.begin(
            j,
            &run,
            "uninstall",
            "",
            last.version,
            None,
            false,
            Vec::new(),
        )?;
        let u = ops
            .begin_uninstall(namespace, name, keep_history)
            .map_err(store_error)?;
        faults::durable_write("store");
        let far = self.clock.now() + Duration::from_secs(3600);
        let mut objs = self.revision_objects(&last).map_err(failed)?;
        crate::manifest::order::sort_by_install_order(&mut objs, |o| {
            o.get("kind").and_then(Value::as_str).unwrap_or("")
        });
        let deadline = wait.map(|t| self.clock.now() + t);
        let mut deleted = Vec::new();
        for o in objs.iter().rev() {
            if ownership::keep(o) {
                continue;
            }
            let Some(k) = ObjectKey::of(o) else { continue };
            self.delete_one(&release, j, &run, &k, deadline.unwrap_or(far))
                .map_err(failed)?;
            deleted.push(k);
        }
        if let Some(deadline) = deadline {
            self.wait_deleted(&release, &deleted, deadline)
                .map_err(failed)?;
        }
        if let Some(u) = u {
            ops.finish_uninstall(&u, keep_history, None)
                .map_err(store_error)?;
            faults::durable_write("store");
        }
        let _ = self.end(j, &run, "uninstalled");
        Ok(())
    }

    pub(super) fn uninstall_release_inner(
        &self,
        namespace: &str,
        name: &str,
        j: &mut ReleaseJournal,
        run: &str,
    ) -> Result<(), String> {
        let ops = Releases::new(self.store);
        let hist = self
            .store
            .history(namespace, name)
            .map_err(|e| crate::error_chain(&e))?;
        let Some(last) = hist.iter().max_by_key(|r| r.version).cloned() else {
            return Ok(());
        };
        let rref = format!("{namespace}/{name}");
        let far = self.clock.now() + Duration::from_secs(3600);
        for o in self
            .revision_objects(&last)
            .map_err(|Failure(e)| e)?
            .iter()
            .rev()
        {
            if ownership::keep(o) {
                continue;
            }
            let Some(k) = ObjectKey::of(o) else { continue };
            self.delete_one(&rref, j, run, &k, far)
                .map_err(|Failure(e)| e)?;
        }
        ops.purge(namespace, name)
            .map_err(|e| crate::error_chain(&e))?;
        faults::durable_write("store");
        Ok(())
    }
}
