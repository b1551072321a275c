//! Applying a whole plan: the checks before the first write (the plan's
//! identity and target, its preconditions), the releases run in the
//! order their `needs` allow, several at a time, and what follows a
//! failure (the rollback of completed releases, or an atomic plan's
//! unwind).
use super::atomic::tx_members;
use super::types::{CrossRelease, ExecError, Outcome, ReleaseOutcome, Report, Reverted};
use super::Executor;
use crate::cluster::ObjectKey;
use crate::exec::faults;
use crate::exec::journal::{ReleaseJournal, TxEntry};
use crate::plan::{Plan, ReleaseAction};
use serde_json::Value;
use std::collections::BTreeMap;

/// Where a release of a running plan is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    Pending,
    Running,
    /// Succeeded (or a noop): what needs it may start.
    Done,
    Failed,
}

/// What a release's thread hands back.
pub(super) struct Finished {
    index: usize,
    journal: ReleaseJournal,
    result: std::thread::Result<Result<ReleaseOutcome, ExecError>>,
}

impl Executor<'_> {
    /// Applies a plan: re-checks it, then runs its releases in order.
    pub fn apply(&self, plan: &Plan) -> Result<Report, ExecError> {
        if !plan.verify_id() {
            return Err(ExecError::Tampered(plan.id.clone()));
        }
        if plan.store != self.store_url {
            return Err(ExecError::WrongTarget {
                what: "store",
                planned: plan.store.clone(),
                actual: self.store_url.clone(),
            });
        }
        let identity = self
            .cluster
            .identity()
            .map_err(|source| ExecError::Cluster {
                release: String::new(),
                source: Box::new(source),
            })?;
        if identity.id != plan.cluster.id || identity.kind != plan.cluster.kind {
            return Err(ExecError::WrongTarget {
                what: "cluster",
                planned: format!("{}:{}", plan.cluster.kind, plan.cluster.id),
                actual: format!("{}:{}", identity.kind, identity.id),
            });
        }
        if let Some(b) = plan.blocked().next() {
            return Err(ExecError::Blocked {
                release: format!("{}/{}", b.namespace, b.name),
                message: b.blocked.clone().unwrap_or_default(),
            });
        }
        // Hold every release of the plan, in a fixed order.
        let mut refs: Vec<(String, String)> = plan
            .releases
            .iter()
            .filter(|r| r.action != ReleaseAction::Noop)
            .map(|r| (r.namespace.clone(), r.name.clone()))
            .collect();
        refs.sort();
        let mut held = BTreeMap::new();
        for (ns, name) in &refs {
            held.insert((ns.clone(), name.clone()), self.journal.lock(ns, name)?);
        }
        self.check_preconditions(plan)?;

        let atomic_plan = self.opts.cross_release == CrossRelease::AtomicPlan
            || plan.failure_policy.cross_release == crate::plan::planner::ATOMIC_PLAN;
        let mut tx = None;
        if atomic_plan {
            let members = tx_members(plan);
            let mut t = self
                .journal
                .transaction(&uuid::Uuid::new_v4().to_string())?;
            t.append(TxEntry::Begin {
                plan_id: plan.id.clone(),
                members: members.clone(),
            })?;
            tx = Some((t, members));
        }
        let outcomes = self.run_all(plan, &mut held, atomic_plan)?;
        let mut report = Report {
            diagnoses: std::mem::take(&mut *self.stuck.lock().unwrap_or_else(|e| e.into_inner())),
            ..Report::default()
        };
        let mut failed = false;
        let mut done: Vec<usize> = Vec::new();
        for (i, out) in outcomes.into_iter().enumerate() {
            match out.outcome {
                Outcome::Installed | Outcome::Upgraded | Outcome::Uninstalled => done.push(i),
                Outcome::Noop | Outcome::NotAttempted => {}
                _ => failed = true,
            }
            report.releases.push(out);
        }
        if let Some((mut t, members)) = tx {
            if failed {
                self.unwind(plan, &mut t, &members, &mut held, &mut report)?;
            } else {
                t.append(TxEntry::Commit)?;
                t.append(TxEntry::End {
                    outcome: "committed".into(),
                })?;
            }
            return Ok(report);
        }
        if failed && self.opts.cross_release == CrossRelease::RollbackCompleted {
            for &i in done.iter().rev() {
                let rp = &plan.releases[i];
                let Some(j) = held.get_mut(&(rp.namespace.clone(), rp.name.clone())) else {
                    continue;
                };
                let what = match rp.from.as_ref() {
                    Some(f) => {
                        let r = self.rollback_release(
                            &rp.namespace,
                            &rp.name,
                            f.revision,
                            &rp.options,
                            j,
                            "rollback of a completed release",
                        );
                        match r {
                            Ok(revision) => Reverted::RolledBack {
                                to: f.revision,
                                revision,
                            },
                            Err(e) => Reverted::RollbackFailed {
                                error: crate::error_chain(&e),
                            },
                        }
                    }
                    None => match self.uninstall_release(&rp.namespace, &rp.name, false, None, j) {
                        Ok(()) => Reverted::Uninstalled,
                        Err(e) => Reverted::UninstallFailed {
                            error: crate::error_chain(&e),
                        },
                    },
                };
                if let Some(o) = report.releases.get_mut(i) {
                    o.outcome = Outcome::Reverted(what);
                }
            }
        }
        Ok(report)
    }

    /// Runs the plan's releases, up to [`ExecOptions::concurrency`] at a
    /// time, each once every release it needs is done, and returns their
    /// outcomes in plan order. After a failure nothing new starts (the
    /// rest are [`Outcome::NotAttempted`]); the releases already running
    /// finish. A simulated crash in one release ends the run once the
    /// others have stopped, as the crash of the process would.
    ///
    /// [`ExecOptions::concurrency`]: super::ExecOptions::concurrency
    pub(super) fn run_all(
        &self,
        plan: &Plan,
        held: &mut BTreeMap<(String, String), ReleaseJournal>,
        defer: bool,
    ) -> Result<Vec<ReleaseOutcome>, ExecError> {
        let n = plan.releases.len();
        let deps = release_deps(plan);
        let conc = self.opts.concurrency.max(1);
        let mut state = vec![Slot::Pending; n];
        let mut outcomes: Vec<Option<ReleaseOutcome>> = vec![None; n];
        let mut stop = false;
        let mut error: Option<ExecError> = None;
        let mut crash: Option<Box<dyn std::any::Any + Send>> = None;
        let crash_setting = faults::inherit();
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel::<Finished>();
            let mut running = 0usize;
            loop {
                while !stop && running < conc {
                    let Some(next) = next_startable(&state, &deps, running) else {
                        break;
                    };
                    let rp = &plan.releases[next];
                    let rref = format!("{}/{}", rp.namespace, rp.name);
                    let journal = held.remove(&(rp.namespace.clone(), rp.name.clone()));
                    let (
                        ReleaseAction::Install
                        | ReleaseAction::Upgrade
                        | ReleaseAction::Recover
                        | ReleaseAction::Uninstall,
                        Some(mut j),
                    ) = (rp.action, journal)
                    else {
                        state[next] = Slot::Done;
                        outcomes[next] = Some(ReleaseOutcome {
                            release: rref,
                            outcome: Outcome::Noop,
                            revision: rp.to.revision,
                            error: None,
                        });
                        continue;
                    };
                    state[next] = Slot::Running;
                    running += 1;
                    if let Ok(mut m) = self.ns_started.lock() {
                        *m.entry(rp.namespace.clone()).or_insert(0) += 1;
                    }
                    self.clock.fork(1);
                    let tx = tx.clone();
                    let setting = crash_setting.clone();
                    s.spawn(move || {
                        faults::adopt(setting);
                        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            self.run_release(plan, rp, &mut j, defer)
                        }));
                        // The clock slot of this thread passes to the
                        // receiver with the message.
                        let _ = tx.send(Finished {
                            index: next,
                            journal: j,
                            result,
                        });
                    });
                }
                if running == 0 {
                    break;
                }
                // Waiting for a release is not sleeping on the clock.
                self.clock.leave();
                let Ok(f) = rx.recv() else { break };
                running -= 1;
                let rp = &plan.releases[f.index];
                held.insert((rp.namespace.clone(), rp.name.clone()), f.journal);
                state[f.index] = Slot::Failed;
                match f.result {
                    Ok(Ok(out)) => {
                        if matches!(
                            out.outcome,
                            Outcome::Installed | Outcome::Upgraded | Outcome::Uninstalled
                        ) {
                            state[f.index] = Slot::Done;
                        } else {
                            stop = true;
                        }
                        outcomes[f.index] = Some(out);
                    }
                    Ok(Err(e)) => {
                        stop = true;
                        error.get_or_insert(e);
                    }
                    Err(payload) => {
                        stop = true;
                        crash.get_or_insert(payload);
                    }
                }
            }
        });
        if let Some(p) = crash {
            std::panic::resume_unwind(p);
        }
        if let Some(e) = error {
            return Err(e);
        }
        Ok(not_attempted(outcomes, plan))
    }

    pub(super) fn check_preconditions(&self, plan: &Plan) -> Result<(), ExecError> {
        let mut problems = Vec::new();
        // One look at the cluster for every release: a LIST per kind and
        // namespace where that is cheaper than a GET per object.
        let reads = crate::cluster::reads::Reads::new(self.cluster);
        for rp in &plan.releases {
            if rp.action == ReleaseAction::Noop {
                continue;
            }
            let rref = format!("{}/{}", rp.namespace, rp.name);
            let hist =
                self.store
                    .history(&rp.namespace, &rp.name)
                    .map_err(|e| ExecError::Store {
                        release: rref.clone(),
                        source: Box::new(e.into()),
                    })?;
            let last = hist.iter().max_by_key(|r| r.version);
            let now = last.map(|l| (l.version, l.info.status.as_str().to_string()));
            let then = rp
                .preconditions
                .last_record
                .as_ref()
                .map(|p| (p.revision, p.status.clone()));
            if now != then {
                let show = |x: &Option<(u64, String)>| match x {
                    Some((v, s)) => format!("revision {v} ({s})"),
                    None => "no record".into(),
                };
                problems.push(format!(
                    "release {rref}: the last record was {} when planned and is {} now",
                    show(&then),
                    show(&now)
                ));
            }
            // One batch per release; only uid and resourceVersion matter,
            // so the objects need not be copied.
            let keys: Vec<ObjectKey> = rp
                .preconditions
                .objects
                .iter()
                .map(|o| o.key.clone())
                .collect();
            let lives = reads.get_many(&keys).map_err(|source| ExecError::Cluster {
                release: rref.clone(),
                source: Box::new(source),
            })?;
            for (o, live) in rp.preconditions.objects.iter().zip(lives) {
                let meta = live.as_ref().and_then(|v| v.get("metadata"));
                let f = |k: &str| {
                    meta.and_then(|m| m.get(k))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                let (uid, rv) = (f("uid"), f("resourceVersion"));
                if uid != o.uid || rv != o.resource_version {
                    let was = if o.uid.is_empty() {
                        "absent".to_string()
                    } else {
                        format!("uid {} resourceVersion {}", o.uid, o.resource_version)
                    };
                    let is = if live.is_none() {
                        "absent".to_string()
                    } else {
                        format!("uid {uid} resourceVersion {rv}")
                    };
                    problems.push(format!("{}: was {was} when planned, is {is} now", o.key));
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ExecError::Stale(problems.join("; ")))
        }
    }
}

/// For each release of the plan, the releases it waits for: those it
/// `needs`, and those the plan's release edges put before it.
fn release_deps(plan: &Plan) -> Vec<Vec<usize>> {
    let index: BTreeMap<(&str, &str), usize> = plan
        .releases
        .iter()
        .enumerate()
        .map(|(i, r)| ((r.namespace.as_str(), r.name.as_str()), i))
        .collect();
    plan.releases
        .iter()
        .enumerate()
        .map(|(i, rp)| {
            let mut d: Vec<usize> = rp
                .needs
                .iter()
                .map(|r| (r.namespace.as_str(), r.name.as_str()))
                .chain(
                    plan.release_edges
                        .iter()
                        .filter(|e| e.to.namespace == rp.namespace && e.to.name == rp.name)
                        .map(|e| (e.from.namespace.as_str(), e.from.name.as_str())),
                )
                .filter_map(|k| index.get(&k).copied())
                .filter(|&j| j != i)
                .collect();
            d.sort_unstable();
            d.dedup();
            d
        })
        .collect()
}

/// The next release to start: the first pending one whose dependencies
/// are done. The plan's order is a topological order: should its edges
/// ever leave nothing startable while nothing runs, it is followed.
/// `None` when nothing may start now.
fn next_startable(state: &[Slot], deps: &[Vec<usize>], running: usize) -> Option<usize> {
    let ready = (0..state.len())
        .find(|&i| state[i] == Slot::Pending && deps[i].iter().all(|&d| state[d] == Slot::Done));
    match ready {
        Some(i) => Some(i),
        None if running == 0 => state.iter().position(|s| *s == Slot::Pending),
        None => None,
    }
}

/// The outcomes in plan order: a release that did not start is
/// [`Outcome::NotAttempted`], at the revision it was at.
fn not_attempted(outcomes: Vec<Option<ReleaseOutcome>>, plan: &Plan) -> Vec<ReleaseOutcome> {
    outcomes
        .into_iter()
        .zip(&plan.releases)
        .map(|(o, rp)| {
            o.unwrap_or_else(|| ReleaseOutcome {
                release: format!("{}/{}", rp.namespace, rp.name),
                outcome: Outcome::NotAttempted,
                revision: rp.from.as_ref().map_or(0, |f| f.revision),
                error: None,
            })
        })
        .collect()
}
