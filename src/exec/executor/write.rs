//! Writes to the cluster: server-side applies (one object, or an
//! install-order group at a time), deletes, the retries of both, and the
//! batched reads that precede them. Every write is journaled.
use super::types::Event;
use super::{meta_str, Executor, Failure};
use crate::cluster::{ApplyOptions, ClusterError, ObjectKey};
use crate::exec::faults;
use crate::exec::journal::{Entry, ReleaseJournal};
use crate::plan::planner::FIELD_MANAGER;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

/// Field managers whose client-side writes rudder takes over
/// ([`Cluster::upgrade_managed_fields`]): Helm 3's.
///
/// [`Cluster::upgrade_managed_fields`]: crate::cluster::Cluster::upgrade_managed_fields
pub(super) const CSA_MANAGERS: &[&str] = &["helm"];

/// The operations (`Apply`, `Update`) under which `manager` holds fields of
/// `live` (none when it holds none).
pub(super) fn manager_operations(live: &Value, manager: &str) -> Vec<String> {
    live.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|es| {
            es.iter()
                .filter(|e| e.get("manager").and_then(Value::as_str) == Some(manager))
                .filter_map(|e| e.get("operation").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

impl Executor<'_> {
    /// Writes with retries on 5xx and 429 answers.
    pub(super) fn with_retries<T>(
        &self,
        deadline: Duration,
        mut f: impl FnMut() -> Result<T, ClusterError>,
    ) -> Result<T, ClusterError> {
        let mut tries: u32 = 0;
        loop {
            let again = match f() {
                // Overload and server errors: retried with backoff.
                Err(ClusterError::Server { code, .. })
                    if (code >= 500 || code == 429) && tries < self.opts.retries =>
                {
                    true
                }
                // A kind that a CRD of this release has just defined can be
                // missing from discovery for a moment after the CRD is
                // Established (helm/helm#32615): asked again, briefly.
                Err(ClusterError::UnknownKind { .. }) if tries < 6 => true,
                r => return r,
            };
            let left = deadline.saturating_sub(self.clock.now());
            if !again || left.is_zero() {
                return f();
            }
            let backoff = self.opts.poll.saturating_mul(1 << tries.min(6));
            self.clock
                .sleep(backoff.min(Duration::from_secs(5)).min(left));
            tries += 1;
        }
    }

    /// Applies one object and journals it.
    pub(super) fn apply_one(
        &self,
        release: &str,
        j: &mut ReleaseJournal,
        run: &str,
        obj: &Value,
        deadline: Duration,
    ) -> Result<Value, Failure> {
        let (key, existed, r) = self.apply_write(obj, None, deadline)?;
        self.note_apply(release, j, run, key, existed, r)
    }

    /// The cluster side of [`Self::apply_one`]: the object's key, whether
    /// it existed, and the write's answer. `read` is the object as read
    /// just before (by [`Self::read_live`]); `None` reads it now.
    #[allow(clippy::type_complexity)]
    pub(super) fn apply_write(
        &self,
        obj: &Value,
        read: Option<Option<Value>>,
        deadline: Duration,
    ) -> Result<(ObjectKey, bool, Result<Value, ClusterError>), Failure> {
        let key = ObjectKey::of(obj).ok_or_else(|| Failure("an object without identity".into()))?;
        let live = match read {
            Some(live) => live,
            None => self.cluster.get(&key).ok().flatten(),
        };
        let existed = live.is_some();
        if let Some(live) = &live {
            // An object Helm 3 wrote (client-side, manager `helm`) becomes
            // rudder's, as Helm 4 moves a release to server-side apply.
            self.cluster
                .upgrade_managed_fields(live, CSA_MANAGERS, FIELD_MANAGER)
                .map_err(|e| Failure(format!("failed to take over the fields of {key}: {e}")))?;
        }
        let mut opts = ApplyOptions {
            field_manager: FIELD_MANAGER.into(),
            force: self.opts.force_conflicts,
            dry_run: false,
        };
        let mut r = self.with_retries(deadline, || self.cluster.apply(obj, &opts));
        if let Err(ClusterError::FieldConflict { fields, .. }) = &r {
            // Drift correction, as Flux does: fields of the manifest that
            // someone changed with a plain write (kubectl edit, scale, patch,
            // client-side apply) are taken back. A conflict with another
            // server-side applier stays an error (`--force-conflicts` forces).
            let now = self.cluster.get(&key).ok().flatten();
            let drift = now.as_ref().is_some_and(|l| {
                fields
                    .iter()
                    .all(|(_, m)| manager_operations(l, m).iter().all(|op| op == "Update"))
            });
            if drift {
                opts.force = true;
                r = self.with_retries(deadline, || self.cluster.apply(obj, &opts));
            }
        }
        faults::durable_write("cluster");
        Ok((key, existed, r))
    }

    /// The journal side of [`Self::apply_one`].
    pub(super) fn note_apply(
        &self,
        release: &str,
        j: &mut ReleaseJournal,
        run: &str,
        key: ObjectKey,
        existed: bool,
        r: Result<Value, ClusterError>,
    ) -> Result<Value, Failure> {
        let (uid, rv, outcome) = match &r {
            Ok(v) => (
                meta_str(v, "uid"),
                meta_str(v, "resourceVersion"),
                "ok".to_string(),
            ),
            Err(e) => (String::new(), String::new(), e.to_string()),
        };
        let _ = j.append(
            Entry::Write {
                run: run.into(),
                verb: "apply".into(),
                key: key.clone(),
                existed,
                uid,
                resource_version: rv,
                outcome,
            },
            false,
        );
        match r {
            Ok(v) => {
                self.progress.event(&Event::ObjectWritten {
                    release: release.into(),
                    verb: "apply".into(),
                    object: key.to_string(),
                });
                Ok(v)
            }
            Err(e) => Err(Failure(format!("failed to apply {key}: {e}"))),
        }
    }

    /// Applies the objects of one install-order group (one kind), up to
    /// [`ExecOptions::concurrency`] at once, and journals each. Returns
    /// their answers in order; after a failure no further object of the
    /// group is started, and the first failure (in the group's order) is
    /// returned.
    ///
    /// [`ExecOptions::concurrency`]: super::ExecOptions::concurrency
    pub(super) fn apply_group(
        &self,
        release: &str,
        j: &mut ReleaseJournal,
        run: &str,
        objs: &[&Value],
        deadline: Duration,
    ) -> Result<Vec<Value>, Failure> {
        let workers = self.opts.concurrency.max(1).min(objs.len());
        // The group's objects as they are now, listed where a LIST is
        // cheaper than a GET of each (one per kind and namespace).
        let keys: Vec<Option<ObjectKey>> = objs.iter().map(|o| ObjectKey::of(o)).collect();
        let known: Vec<&ObjectKey> = keys.iter().flatten().collect();
        let batched = self.cluster.list_batch_min().is_some();
        let mut read = if batched {
            self.read_live(&known)
        } else {
            Vec::new()
        }
        .into_iter();
        let prefetched: Vec<Mutex<Option<Option<Value>>>> = keys
            .iter()
            .map(|k| {
                let r = if k.is_some() { read.next() } else { None };
                Mutex::new(r.and_then(Result::ok))
            })
            .collect();
        let take = |i: usize| {
            prefetched
                .get(i)
                .and_then(|m| m.lock().unwrap_or_else(|e| e.into_inner()).take())
        };
        if workers <= 1 {
            return objs
                .iter()
                .enumerate()
                .map(|(i, o)| {
                    let (key, existed, r) = self.apply_write(o, take(i), deadline)?;
                    self.note_apply(release, j, run, key, existed, r)
                })
                .collect();
        }
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let left = AtomicUsize::new(workers);
        let journal = Mutex::new(j);
        let results: Vec<Mutex<Option<Result<Value, Failure>>>> =
            objs.iter().map(|_| Mutex::new(None)).collect();
        let setting = faults::inherit();
        let mut crash = None;
        std::thread::scope(|s| {
            self.clock.fork(workers);
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    let setting = setting.clone();
                    let (next, failed, left, journal, results, take) =
                        (&next, &failed, &left, &journal, &results, &take);
                    s.spawn(move || {
                        faults::adopt(setting);
                        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            while !failed.load(Ordering::SeqCst) {
                                let i = next.fetch_add(1, Ordering::SeqCst);
                                let Some(obj) = objs.get(i) else { break };
                                let out = self.apply_write(obj, take(i), deadline).and_then(
                                    |(key, existed, r)| {
                                        let mut j =
                                            journal.lock().unwrap_or_else(|e| e.into_inner());
                                        self.note_apply(release, &mut j, run, key, existed, r)
                                    },
                                );
                                if out.is_err() {
                                    failed.store(true, Ordering::SeqCst);
                                }
                                if let Some(slot) = results.get(i) {
                                    *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(out);
                                }
                            }
                        }));
                        // The last worker to end hands its clock slot to
                        // the waiting parent.
                        if left.fetch_sub(1, Ordering::SeqCst) != 1 {
                            self.clock.leave();
                        }
                        r
                    })
                })
                .collect();
            self.clock.leave();
            for h in handles {
                match h.join() {
                    Ok(Ok(())) => {}
                    Ok(Err(p)) | Err(p) => {
                        crash.get_or_insert(p);
                    }
                }
            }
        });
        if let Some(p) = crash {
            std::panic::resume_unwind(p);
        }
        let mut out = Vec::with_capacity(objs.len());
        for slot in results {
            match slot.into_inner().unwrap_or_else(|e| e.into_inner()) {
                Some(Ok(v)) => out.push(v),
                Some(Err(f)) => return Err(f),
                // Not started after a failure (which comes first in order
                // unless a later object failed first).
                None => {}
            }
        }
        if out.len() < objs.len() {
            return Err(Failure("an object of the group was not applied".into()));
        }
        Ok(out)
    }

    pub(super) fn delete_one(
        &self,
        release: &str,
        j: &mut ReleaseJournal,
        run: &str,
        key: &ObjectKey,
        deadline: Duration,
    ) -> Result<(), Failure> {
        if self.cluster.get(key).ok().flatten().is_none() {
            return Ok(());
        }
        let r = self.with_retries(deadline, || self.cluster.delete(key, None));
        faults::durable_write("cluster");
        let outcome = match &r {
            Ok(_) | Err(ClusterError::NotFound { .. }) => "ok".to_string(),
            Err(e) => e.to_string(),
        };
        let _ = j.append(
            Entry::Write {
                run: run.into(),
                verb: "delete".into(),
                key: key.clone(),
                existed: true,
                uid: String::new(),
                resource_version: String::new(),
                outcome: outcome.clone(),
            },
            false,
        );
        if outcome != "ok" {
            return Err(Failure(format!("failed to delete {key}: {outcome}")));
        }
        self.progress.event(&Event::ObjectWritten {
            release: release.into(),
            verb: "delete".into(),
            object: key.to_string(),
        });
        Ok(())
    }

    /// The objects of `keys` as they are now, one answer per key, in
    /// order. Where the cluster says a LIST is cheaper
    /// ([`Cluster::list_batch_min`]), the keys of one kind in one
    /// namespace are answered from one LIST (with status, as a GET gives
    /// it); a LIST that fails falls back to a GET per key.
    ///
    /// [`Cluster::list_batch_min`]: crate::cluster::Cluster::list_batch_min
    pub(super) fn read_live(
        &self,
        keys: &[&ObjectKey],
    ) -> Vec<Result<Option<Value>, ClusterError>> {
        let mut out: Vec<Option<Result<Option<Value>, ClusterError>>> =
            keys.iter().map(|_| None).collect();
        if let Some(min) = self.cluster.list_batch_min() {
            let mut slots: BTreeMap<(&str, &str, &str), Vec<usize>> = BTreeMap::new();
            for (i, k) in keys.iter().enumerate() {
                slots
                    .entry((&k.group, &k.kind, &k.namespace))
                    .or_default()
                    .push(i);
            }
            for ((group, kind, ns), idx) in slots {
                if idx.len() < min.max(1) {
                    continue;
                }
                let ns = (!ns.is_empty()).then_some(ns);
                let Ok(items) = self.cluster.list(group, kind, ns, &[]) else {
                    continue;
                };
                let mut by_name: HashMap<String, Value> = items
                    .into_iter()
                    .map(|o| (meta_str(&o, "name").to_string(), o))
                    .collect();
                for i in idx {
                    out[i] = Some(Ok(by_name.remove(&keys[i].name)));
                }
            }
        }
        out.into_iter()
            .zip(keys)
            .map(|(o, k)| o.unwrap_or_else(|| self.cluster.get(k)))
            .collect()
    }
}
