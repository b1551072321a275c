//! Recovery of one release's run that a crash interrupted, in the shape
//! of Flux's `actionForState`: what the journal and the store show is
//! read first, `next_action` turns it into the one thing to do (finish
//! the bookkeeping, end a run that wrote nothing, roll back, finish an
//! uninstall, or undo an install), and then that action is taken. Without
//! an interrupted run, a pending record that no process holds is marked
//! failed.
use super::types::{Event, ExecError};
use super::{created_by, namespace_key, Executor, CREATING_NAMESPACE};
use crate::cluster::ObjectKey;
use crate::exec::faults;
use crate::exec::journal::{Entry, Intent, ReleaseJournal};
use crate::plan::ReleaseOptions;
use crate::release::{OpError, Release, Status};

/// What recovery does about an interrupted run.
#[derive(Debug)]
enum Action {
    /// The run had recorded its revision deployed: the older deployed
    /// records become superseded.
    Finish,
    /// The run wrote nothing: it only ends.
    EndRun,
    /// The run's records become failed, and the release returns to
    /// revision `to`, deleting what the run created.
    RollBack { to: u64, created: Vec<ObjectKey> },
    /// The interrupted uninstall is finished.
    FinishUninstall,
    /// The interrupted install's objects (and, when `purge`, its records)
    /// are removed.
    UndoInstall {
        created: Vec<ObjectKey>,
        purge: bool,
    },
}

/// The interrupted run, as its journal's begin entry describes it, with
/// the entries that followed.
struct Interrupted {
    entries: Vec<Entry>,
    id: String,
    operation: String,
    revision: u64,
    rollback_revision: Option<u64>,
    atomic: bool,
    intents: Vec<Intent>,
}

impl Interrupted {
    /// The run whose entries these are; `None` when they do not start
    /// with a begin.
    fn of(entries: Vec<Entry>) -> Option<Interrupted> {
        let Some(Entry::Begin {
            run,
            operation,
            revision,
            rollback_revision,
            atomic,
            intents,
            ..
        }) = entries.first().cloned()
        else {
            return None;
        };
        Some(Interrupted {
            entries,
            id: run,
            operation,
            revision,
            rollback_revision,
            atomic,
            intents,
        })
    }

    /// Whether the run's journal holds phase `phase`.
    fn reached(&self, phase: &str) -> bool {
        self.entries
            .iter()
            .any(|e| matches!(e, Entry::Phase { phase: p, .. } if p == phase))
    }
}

/// The next action for an interrupted run, from what recovery observed:
/// the run, the release's history, the key of its namespace, and, asked
/// only when it matters, whether that namespace exists.
fn next_action(
    run: &Interrupted,
    hist: &[Release],
    ns_key: &ObjectKey,
    ns_exists: impl FnOnce() -> bool,
) -> Action {
    let this = hist.iter().find(|r| r.version == run.revision);
    if run.reached("deployed-recorded") || this.is_some_and(|r| r.info.status == Status::Deployed) {
        return Action::Finish;
    }
    // Objects this run may have created: intended creates that exist
    // now. Not the release namespace: another release may have made it
    // since the plan; this run's is known from its journal.
    let mut created: Vec<ObjectKey> = run
        .intents
        .iter()
        .filter(|i| i.verb == "apply" && i.absent_at_plan && i.key != *ns_key)
        .map(|i| i.key.clone())
        .collect();
    created.extend(created_by(&run.entries, &run.id));
    // A crash between the namespace's create and its journal entry: the
    // run said it was creating it, and it exists.
    let made_ns = run.reached(CREATING_NAMESPACE) && !created.contains(ns_key) && ns_exists();
    if made_ns {
        created.insert(0, ns_key.clone());
    }
    created.dedup();
    // Nothing written yet: nothing to undo.
    let wrote = made_ns
        || run.entries.iter().any(|e| {
            matches!(e, Entry::Write { .. })
                || matches!(e, Entry::Phase { phase, .. } if phase == "pending-recorded")
        })
        || hist.iter().any(|r| r.version >= run.revision);
    if !wrote {
        return Action::EndRun;
    }
    match (run.operation.as_str(), run.rollback_revision) {
        (_, Some(to)) => Action::RollBack { to, created },
        ("uninstall", None) => Action::FinishUninstall,
        (_, None) => Action::UndoInstall {
            created,
            purge: run.atomic,
        },
    }
}

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

    /// [`Executor::recover`] with the release's lock held: observes, picks
    /// the [`next_action`], takes it, and ends the interrupted run.
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
        let Some(entries) = interrupted else {
            // No journal: a pending record whose holder is gone (Helm's
            // #7476) is marked failed, so the next upgrade can go on.
            let last = hist.iter().max_by_key(|r| r.version);
            let Some(l) = last.filter(|l| l.info.status.is_pending()) else {
                return Ok(None);
            };
            let what = self.mark_abandoned(l, &serr)?;
            self.progress.event(&Event::Recovered {
                release: rref,
                what: what.clone(),
            });
            return Ok(Some(what));
        };
        let Some(run) = Interrupted::of(entries) else {
            return Ok(None);
        };
        let ns_key = namespace_key(namespace);
        let action = next_action(&run, &hist, &ns_key, || {
            matches!(self.cluster.get(&ns_key), Ok(Some(_)))
        });
        let what = self.take_action(namespace, name, j, &hist, &run, action)?;
        j.append(
            Entry::End {
                run: run.id,
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

    /// Marks a pending record that no process holds failed, so that the
    /// next upgrade can go on.
    fn mark_abandoned(
        &self,
        l: &Release,
        serr: &impl Fn(OpError) -> ExecError,
    ) -> Result<String, ExecError> {
        let mut f = l.clone();
        f.info.status = Status::Failed;
        f.info.description = format!(
            "{} interrupted: no process holds the release",
            l.info.status.as_str()
        );
        self.store.update(l, &f).map_err(|e| serr(e.into()))?;
        faults::durable_write("store");
        Ok(format!(
            "marked revision {} failed (was {})",
            l.version,
            l.info.status.as_str()
        ))
    }

    /// Takes an action on an interrupted run; returns what was done.
    fn take_action(
        &self,
        namespace: &str,
        name: &str,
        j: &mut ReleaseJournal,
        hist: &[Release],
        run: &Interrupted,
        action: Action,
    ) -> Result<String, ExecError> {
        let operation = &run.operation;
        let revision = run.revision;
        let what = match action {
            Action::Finish => {
                self.supersede_older(hist, revision);
                format!("finished: revision {revision} was already deployed")
            }
            Action::EndRun => format!("the interrupted {operation} had written nothing"),
            Action::RollBack { to, created } => {
                self.fail_pending(namespace, name, hist)?;
                let run2 = uuid::Uuid::new_v4().to_string();
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
                        format!("rolled back the interrupted {operation} to revision {to} (now revision {v})")
                    }
                    Err(e) => {
                        self.end(j, &run2, "failed")?;
                        format!("the rollback of the interrupted {operation} failed: {e}")
                    }
                }
            }
            Action::FinishUninstall => {
                self.fail_pending(namespace, name, hist)?;
                let run2 = uuid::Uuid::new_v4().to_string();
                self.begin_recovery_uninstall(j, &run2, revision)?;
                let r = self.uninstall_release_inner(namespace, name, j, &run2);
                self.end(j, &run2, "uninstalled")?;
                match r {
                    Ok(()) => "finished the interrupted uninstall".into(),
                    Err(e) => format!("the interrupted uninstall could not finish: {e}"),
                }
            }
            Action::UndoInstall { created, purge } => {
                self.fail_pending(namespace, name, hist)?;
                let run2 = uuid::Uuid::new_v4().to_string();
                self.begin_recovery_uninstall(j, &run2, revision)?;
                let wait = ReleaseOptions::default().timeout;
                let _ = self.undo_install(namespace, name, j, &run2, &created, purge, wait);
                self.end(j, &run2, "uninstalled")?;
                "removed the interrupted install's objects and records".into()
            }
        };
        Ok(what)
    }

    /// The journal's begin of a recovery's uninstall run.
    fn begin_recovery_uninstall(
        &self,
        j: &mut ReleaseJournal,
        run: &str,
        revision: u64,
    ) -> Result<(), ExecError> {
        self.begin(
            j,
            run,
            "uninstall",
            "recovery",
            revision,
            None,
            false,
            Vec::new(),
        )
    }

    /// The run finished its work: every deployed record older than
    /// `revision` (when that record exists) becomes superseded.
    fn supersede_older(&self, hist: &[Release], revision: u64) {
        let Some(t) = hist.iter().find(|r| r.version == revision) else {
            return;
        };
        for d in hist {
            if d.info.status == Status::Deployed && d.version < t.version {
                let mut s = d.clone();
                s.info.status = Status::Superseded;
                let _ = self.store.update(d, &s);
                faults::durable_write("store");
            }
        }
    }

    /// Every record the interrupted run left pending becomes failed.
    fn fail_pending(&self, namespace: &str, name: &str, hist: &[Release]) -> Result<(), ExecError> {
        let serr = self.store_err(&format!("{namespace}/{name}"));
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
        Ok(())
    }
}
