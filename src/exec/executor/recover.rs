//! Recovery of one release's run that a crash interrupted: from what the
//! journal and the store show, the next action (finish the bookkeeping,
//! end a run that wrote nothing, roll back, finish an uninstall, or undo
//! an install), then that action.
use super::types::{Event, ExecError};
use super::{created_by, namespace_key, Executor, CREATING_NAMESPACE};
use crate::cluster::ObjectKey;
use crate::exec::faults;
use crate::exec::journal::{Entry, ReleaseJournal};
use crate::plan::ReleaseOptions;
use crate::release::Status;

impl Executor<'_> {
    /// Settles an interrupted run of one release, found in its journal:
    /// rolls it back to the run's rollback point (or uninstalls a failed
    /// first install), or finishes it when the new revision was already
    /// recorded deployed. Returns what was done, or `None` when nothing
    /// was interrupted.
    pub fn recover(&self, namespace: &str, name: &str) -> Result<Option<String>, ExecError> {
        let mut j = self.journal.lock(namespace, name)?;
        self.recover_with(namespace, name, &mut j)
    }

    /// [`Executor::recover`] with the release's lock held.
    pub(super) fn recover_with(
        &self,
        namespace: &str,
        name: &str,
        j: &mut ReleaseJournal,
    ) -> Result<Option<String>, ExecError> {
        let rref = format!("{namespace}/{name}");
        let serr = self.store_err(&rref);
        let interrupted = j.interrupted()?;
        let hist = match self.store.history(namespace, name) {
            Ok(h) => h,
            Err(e) => return Err(serr(e.into())),
        };
        let last = hist.iter().max_by_key(|r| r.version).cloned();
        let Some(run) = interrupted else {
            // No journal: a pending record whose holder is gone (Helm's
            // #7476) is marked failed, so the next upgrade can go on.
            if let Some(l) = last.filter(|l| l.info.status.is_pending()) {
                let mut f = l.clone();
                f.info.status = Status::Failed;
                f.info.description = format!(
                    "{} interrupted: no process holds the release",
                    l.info.status.as_str()
                );
                self.store.update(&l, &f).map_err(|e| serr(e.into()))?;
                faults::durable_write("store");
                let what = format!(
                    "marked revision {} failed (was {})",
                    l.version,
                    l.info.status.as_str()
                );
                self.progress.event(&Event::Recovered {
                    release: rref,
                    what: what.clone(),
                });
                return Ok(Some(what));
            }
            return Ok(None);
        };
        let Some(Entry::Begin {
            run: run_id,
            operation,
            revision,
            rollback_revision,
            atomic,
            intents,
            ..
        }) = run.first().cloned()
        else {
            return Ok(None);
        };
        let deployed_recorded = run
            .iter()
            .any(|e| matches!(e, Entry::Phase { phase, .. } if phase == "deployed-recorded"));
        let this = hist.iter().find(|r| r.version == revision).cloned();
        let what;
        if deployed_recorded
            || this
                .as_ref()
                .is_some_and(|r| r.info.status == Status::Deployed)
        {
            // The work was done: finish the bookkeeping.
            if let Some(t) = &this {
                for d in &hist {
                    if d.info.status == Status::Deployed && d.version < t.version {
                        let mut s = d.clone();
                        s.info.status = Status::Superseded;
                        let _ = self.store.update(d, &s);
                        faults::durable_write("store");
                    }
                }
            }
            what = format!("finished: revision {revision} was already deployed");
        } else {
            // Objects this run may have created: intended creates that exist
            // now. Not the release namespace: another release may have made
            // it since the plan; this run's is known from its journal.
            let ns_key = namespace_key(namespace);
            let mut created: Vec<ObjectKey> = intents
                .iter()
                .filter(|i| i.verb == "apply" && i.absent_at_plan && i.key != ns_key)
                .map(|i| i.key.clone())
                .collect();
            created.extend(created_by(&run, &run_id));
            // A crash between the namespace's create and its journal entry:
            // the run said it was creating it, and it exists.
            let creating_ns = run
                .iter()
                .any(|e| matches!(e, Entry::Phase { phase, .. } if phase == CREATING_NAMESPACE));
            let made_ns = creating_ns
                && !created.contains(&ns_key)
                && matches!(self.cluster.get(&ns_key), Ok(Some(_)));
            if made_ns {
                created.insert(0, ns_key.clone());
            }
            created.dedup();
            // Nothing written yet: nothing to undo.
            let wrote =
                made_ns || run.iter().any(|e| {
                    matches!(e, Entry::Write { .. })
                        || matches!(e, Entry::Phase { phase, .. } if phase == "pending-recorded")
                }) || hist.iter().any(|r| r.version >= revision);
            if !wrote {
                j.append(
                    Entry::End {
                        run: run_id,
                        outcome: "recovered".into(),
                    },
                    true,
                )?;
                let what = format!("the interrupted {operation} had written nothing");
                self.progress.event(&Event::Recovered {
                    release: rref,
                    what: what.clone(),
                });
                return Ok(Some(what));
            }
            // Every record the interrupted run left pending becomes failed.
            for t in hist.iter().filter(|t| t.info.status.is_pending()) {
                let mut f = t.clone();
                f.info.status = Status::Failed;
                f.info.description = match t.info.status {
                    Status::PendingInstall => format!("Release {name:?} failed: interrupted"),
                    Status::PendingRollback => format!("Rollback {name:?} failed: interrupted"),
                    _ => format!("Upgrade {name:?} failed: interrupted"),
                };
                self.store.update(t, &f).map_err(|e| serr(e.into()))?;
                faults::durable_write("store");
            }
            let run2 = uuid::Uuid::new_v4().to_string();
            match (operation.as_str(), rollback_revision) {
                (_, Some(to)) => {
                    self.begin(
                        j,
                        &run2,
                        "rollback",
                        "recovery",
                        revision + 1,
                        Some(to),
                        false,
                        Vec::new(),
                    )?;
                    let opts = ReleaseOptions::default();
                    match self.rollback_to(namespace, name, to, &opts, j, &run2, &created) {
                        Ok(v) => {
                            self.end(j, &run2, "rolled-back")?;
                            what = format!("rolled back the interrupted {operation} to revision {to} (now revision {v})");
                        }
                        Err(e) => {
                            self.end(j, &run2, "failed")?;
                            what =
                                format!("the rollback of the interrupted {operation} failed: {e}");
                        }
                    }
                }
                ("uninstall", None) => {
                    self.begin(
                        j,
                        &run2,
                        "uninstall",
                        "recovery",
                        revision,
                        None,
                        false,
                        Vec::new(),
                    )?;
                    let r = self.uninstall_release_inner(namespace, name, j, &run2);
                    self.end(j, &run2, "uninstalled")?;
                    what = match r {
                        Ok(()) => "finished the interrupted uninstall".into(),
                        Err(e) => format!("the interrupted uninstall could not finish: {e}"),
                    };
                }
                (_, None) => {
                    self.begin(
                        j,
                        &run2,
                        "uninstall",
                        "recovery",
                        revision,
                        None,
                        false,
                        Vec::new(),
                    )?;
                    let wait = ReleaseOptions::default().timeout;
                    let _ = self.undo_install(namespace, name, j, &run2, &created, atomic, wait);
                    self.end(j, &run2, "uninstalled")?;
                    what = "removed the interrupted install's objects and records".into();
                }
            }
        }
        j.append(
            Entry::End {
                run: run_id,
                outcome: "recovered".into(),
            },
            true,
        )?;
        self.progress.event(&Event::Recovered {
            release: rref,
            what: what.clone(),
        });
        Ok(Some(what))
    }
}
