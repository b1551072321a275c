//! The executor: applies a [`Plan`], waits, and rolls back on failure.
use super::clock::Clock;
use super::faults;
use super::journal::{
    Entry, Intent, Journal, JournalError, ReleaseJournal, TxEntry, TxJournal, TxMember,
};
use super::ready;
use super::why::{self, Diagnosis, FailFast, Reason};
use crate::cluster::{
    ownership, ApplyOptions, Cluster, ClusterError, ObjectKey, Scope, WatchTarget, Watched,
};
use crate::plan::planner::FIELD_MANAGER;
use crate::plan::{
    ObjectAction, Plan, ReleaseAction, ReleaseOptions, ReleasePlan, Stage, WaitStrategy,
};
use crate::release::{self, HistoryMax, OpError, Release, Releases, Status, Store};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::Duration;

/// Why an execution could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The plan was edited after it was made.
    #[error("the plan's content does not match its id {0}: it was edited, or is a redacted copy; make a new plan")]
    Tampered(String),
    /// The plan was made for another cluster or store.
    #[error("the plan was made for {what} {planned}, not {actual}")]
    WrongTarget {
        /// `cluster` or `store`.
        what: &'static str,
        /// What the plan names.
        planned: String,
        /// What this run uses.
        actual: String,
    },
    /// The state changed since planning.
    #[error("the plan is stale, nothing was written: {0}")]
    Stale(String),
    /// A release cannot proceed (ownership conflict).
    #[error("release {release} is blocked: {message}")]
    Blocked {
        /// `namespace/name`.
        release: String,
        /// Helm's error.
        message: String,
    },
    /// The journal failed, or another process holds the release.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The release store failed (the store's error is the source).
    #[error("release {release}")]
    Store {
        /// `namespace/name`.
        release: String,
        /// The store's error.
        source: Box<OpError>,
    },
    /// The cluster failed outside a release's work (reading preconditions;
    /// the cluster's error is the source).
    #[error("release {release}")]
    Cluster {
        /// `namespace/name`.
        release: String,
        /// The error.
        source: Box<ClusterError>,
    },
    /// A rollback or uninstall of a release
    /// ([`Executor::rollback_release`], [`Executor::uninstall_release`])
    /// failed part-way: an object was not applied or deleted, or did not
    /// become ready in time. The journal holds what was done.
    #[error("release {release}: {message}")]
    ReleaseFailed {
        /// `namespace/name`.
        release: String,
        /// What failed, Helm's wording where Helm has one.
        message: String,
    },
}

/// What to do across releases when one fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CrossRelease {
    /// Stop; releases already done stay done (Lokomotive's rule).
    #[default]
    Stop,
    /// Stop, and roll the completed releases back, newest first.
    RollbackCompleted,
    /// The plan is one transaction (`--atomic-plan`): a failure in any
    /// release returns every release this apply changed (the failed one,
    /// the completed ones, those that were running beside it) to its
    /// revision before the apply, in reverse plan order; a release the
    /// apply installed is uninstalled, its history kept (`Uninstallation
    /// complete`). The transaction is journaled: a crash during the apply
    /// or the unwind is unwound by [`Executor::recover_transactions`].
    /// A plan whose `failurePolicy.crossRelease` is
    /// [`crate::plan::planner::ATOMIC_PLAN`] is applied so whatever this
    /// option says. A release the plan uninstalls is not brought back.
    AtomicPlan,
}

/// How many releases an apply runs at the same time by default (and how
/// many objects of one install-order group a release writes at once).
///
/// Eight: most plans have fewer independent releases than that, so they
/// all run (and wait) at once, while a plan of a hundred releases still
/// keeps at most 8 × 8 = 64 writes in flight, well under the API server's
/// default of 200 concurrent mutating requests
/// (`--max-mutating-requests-inflight`), and its progress stays readable
/// (one line per running release).
pub const DEFAULT_CONCURRENCY: usize = 8;

/// Executor settings.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// Take over fields other managers own (`--force-conflicts`).
    pub force_conflicts: bool,
    /// What a failure does to the other releases.
    pub cross_release: CrossRelease,
    /// How often waits poll.
    pub poll: Duration,
    /// How many times a write that failed with a 5xx or 429 is retried.
    pub retries: u32,
    /// How many releases run at the same time (`--concurrency`; 0 counts
    /// as 1), and how many objects of one install-order group (one kind)
    /// a release writes at once. Releases with a `needs` path between them
    /// never overlap: a release starts once every release it needs is
    /// done. The plan is the same whatever this is; only the schedule
    /// changes. Default [`DEFAULT_CONCURRENCY`].
    pub concurrency: usize,
    /// `--fail-fast`: give up a wait at once when a pod is in a state that
    /// does not resolve by itself ([`Reason::fatal`]), instead of at the
    /// deadline; the release then fails (and rolls back when atomic) as at
    /// its deadline. `None` (the default) waits until the deadline, as Helm
    /// does.
    pub fail_fast: Option<FailFast>,
    /// How many lines of a failing container's log the failure report
    /// shows, where the cluster serves logs (`--log-lines`; 0: none).
    /// Default [`DEFAULT_LOG_LINES`].
    pub log_lines: u32,
}

/// How many lines of a failing container's log a failure report shows by
/// default.
pub const DEFAULT_LOG_LINES: u32 = 10;

/// How many of a failing pod's last events a failure report shows.
const REPORT_EVENTS: usize = 5;

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            force_conflicts: false,
            cross_release: CrossRelease::Stop,
            poll: Duration::from_millis(100),
            retries: 2,
            concurrency: DEFAULT_CONCURRENCY,
            fail_fast: None,
            log_lines: DEFAULT_LOG_LINES,
        }
    }
}

/// A progress event (printed as lines, or as JSON with `-o json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// A release starts.
    ReleaseStarted {
        /// `namespace/name`.
        release: String,
        /// `install`, `upgrade`, ...
        action: String,
        /// The revision written.
        revision: u64,
    },
    /// An object was written.
    ObjectWritten {
        /// `namespace/name` of the release.
        release: String,
        /// `apply` or `delete`.
        verb: String,
        /// The object.
        object: String,
    },
    /// Still waiting for an object.
    Waiting {
        /// `namespace/name` of the release.
        release: String,
        /// The object.
        object: String,
        /// Why it is not ready, by the readiness rule.
        message: String,
        /// Why, from the pods, ReplicaSets, Jobs and claims it owns and
        /// their events (empty when nothing says more than `message`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasons: Vec<Reason>,
    },
    /// A release's writes or waits failed (its deadline passed, an object was
    /// refused, ...). With `atomic`, a rollback or an uninstall follows.
    Failed {
        /// `namespace/name`.
        release: String,
        /// The error, as it will be recorded.
        error: String,
    },
    /// An interrupted run was settled.
    Recovered {
        /// `namespace/name`.
        release: String,
        /// What was done: `rolled back to revision N`, `finished`, ...
        what: String,
    },
    /// A release finished.
    ReleaseDone {
        /// `namespace/name`.
        release: String,
        /// The outcome.
        outcome: String,
    },
}

/// Receives progress events.
pub trait Progress: Sync {
    /// One event.
    fn event(&self, e: &Event);
}

/// Discards progress.
pub struct Quiet;

impl Progress for Quiet {
    fn event(&self, _e: &Event) {}
}

/// What happened to one release. It displays, and serializes, as the
/// kebab-case word of its variant (`installed`, `rolled-back`, ...);
/// [`Outcome::Reverted`] as `reverted: ` and what was done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A first install succeeded.
    Installed,
    /// An upgrade succeeded.
    Upgraded,
    /// Nothing to do: the release was up to date.
    Noop,
    /// The release was uninstalled, as planned.
    Uninstalled,
    /// The release failed and was rolled back (`atomic`).
    RolledBack,
    /// A first install failed and was uninstalled (`atomic`).
    UninstalledAfterFailure,
    /// The release failed and stays failed.
    Failed,
    /// An earlier release failed, so this one was not tried.
    NotAttempted,
    /// The release succeeded, but a later one failed and the run undid it
    /// ([`CrossRelease::RollbackCompleted`]).
    Reverted(Reverted),
}

impl Outcome {
    /// Whether the release ended where the plan wanted it: installed,
    /// upgraded, uninstalled, or up to date.
    pub fn is_success(&self) -> bool {
        matches!(
            self,
            Outcome::Installed | Outcome::Upgraded | Outcome::Noop | Outcome::Uninstalled
        )
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            Outcome::Installed => "installed",
            Outcome::Upgraded => "upgraded",
            Outcome::Noop => "noop",
            Outcome::Uninstalled => "uninstalled",
            Outcome::RolledBack => "rolled-back",
            Outcome::UninstalledAfterFailure => "uninstalled-after-failure",
            Outcome::Failed => "failed",
            Outcome::NotAttempted => "not-attempted",
            Outcome::Reverted(what) => return f.pad(&format!("reverted: {what}")),
        })
    }
}

impl Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// How a completed release was undone after a later release failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reverted {
    /// Rolled back to the revision it had before the run.
    RolledBack {
        /// The revision rolled back to.
        to: u64,
        /// The revision the rollback was recorded as.
        revision: u64,
    },
    /// The rollback failed.
    RollbackFailed {
        /// Why.
        error: String,
    },
    /// A first install, uninstalled.
    Uninstalled,
    /// The uninstall failed.
    UninstallFailed {
        /// Why.
        error: String,
    },
}

impl std::fmt::Display for Reverted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reverted::RolledBack { to, revision } => {
                write!(f, "rolled back to revision {to} (as revision {revision})")
            }
            Reverted::RollbackFailed { error } => write!(f, "rollback failed: {error}"),
            Reverted::Uninstalled => f.write_str("uninstalled"),
            Reverted::UninstallFailed { error } => write!(f, "uninstall failed: {error}"),
        }
    }
}

/// What happened to one release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseOutcome {
    /// `namespace/name`.
    pub release: String,
    /// What happened.
    pub outcome: Outcome,
    /// The revision the release is at afterwards (0: none).
    pub revision: u64,
    /// The failure, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct Report {
    /// Releases in plan order.
    pub releases: Vec<ReleaseOutcome>,
    /// For each wait that failed: the objects not ready, why, and their
    /// failing pods' last events and log lines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnoses: Vec<Diagnosis>,
}

impl Report {
    /// Whether every release succeeded or was a noop.
    pub fn success(&self) -> bool {
        self.releases.iter().all(|r| r.outcome.is_success())
    }

    /// The first failure's message.
    pub fn first_error(&self) -> Option<&str> {
        self.releases.iter().find_map(|r| r.error.as_deref())
    }
}

/// The executor.
pub struct Executor<'a> {
    store: &'a dyn Store,
    store_url: String,
    cluster: &'a dyn Cluster,
    journal: Journal,
    clock: &'a dyn Clock,
    progress: &'a dyn Progress,
    opts: ExecOptions,
    /// Releases started per namespace by this executor.
    ns_started: std::sync::Mutex<BTreeMap<String, usize>>,
    /// What failed waits found, for the report.
    stuck: std::sync::Mutex<Vec<Diagnosis>>,
}

/// A failure inside a release's cluster work.
struct Failure(String);

/// Where a release of a running plan is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Pending,
    Running,
    /// Succeeded (or a noop): what needs it may start.
    Done,
    Failed,
}

/// What a release's thread hands back.
struct Finished {
    index: usize,
    journal: ReleaseJournal,
    result: std::thread::Result<Result<ReleaseOutcome, ExecError>>,
}

impl<'a> Executor<'a> {
    /// An executor over a store (named `store_url` in plans), a cluster,
    /// a journal and a clock.
    pub fn new(
        store: &'a dyn Store,
        store_url: &str,
        cluster: &'a dyn Cluster,
        journal: Journal,
        clock: &'a dyn Clock,
    ) -> Self {
        Executor {
            store,
            store_url: store_url.to_string(),
            cluster,
            journal,
            clock,
            progress: &Quiet,
            opts: ExecOptions::default(),
            ns_started: Default::default(),
            stuck: Default::default(),
        }
    }

    /// Sends progress to `p`.
    pub fn with_progress(mut self, p: &'a dyn Progress) -> Self {
        self.progress = p;
        self
    }

    /// Sets the options.
    pub fn with_options(mut self, o: ExecOptions) -> Self {
        self.opts = o;
        self
    }

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
    fn run_all(
        &self,
        plan: &Plan,
        held: &mut BTreeMap<(String, String), ReleaseJournal>,
        defer: bool,
    ) -> Result<Vec<ReleaseOutcome>, ExecError> {
        let n = plan.releases.len();
        let index: BTreeMap<(&str, &str), usize> = plan
            .releases
            .iter()
            .enumerate()
            .map(|(i, r)| ((r.namespace.as_str(), r.name.as_str()), i))
            .collect();
        let deps: Vec<Vec<usize>> = plan
            .releases
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
            .collect();
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
                    let ready = (0..n).find(|&i| {
                        state[i] == Slot::Pending && deps[i].iter().all(|&d| state[d] == Slot::Done)
                    });
                    // The plan's order is a topological order: should its
                    // edges ever leave nothing startable, it is followed.
                    let next = match ready {
                        Some(i) => i,
                        None if running == 0 => {
                            match state.iter().position(|s| *s == Slot::Pending) {
                                Some(i) => i,
                                None => break,
                            }
                        }
                        None => break,
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
        Ok(outcomes
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
            .collect())
    }

    /// Returns every release of a failed atomic plan that the apply
    /// changed to its rollback point, in reverse plan order, and says so in
    /// the report; the transaction ends when all are back.
    fn unwind(
        &self,
        plan: &Plan,
        t: &mut TxJournal,
        members: &[TxMember],
        held: &mut BTreeMap<(String, String), ReleaseJournal>,
        report: &mut Report,
    ) -> Result<(), ExecError> {
        let mut all = true;
        for m in members.iter().rev() {
            let Some(j) = held.get_mut(&(m.namespace.clone(), m.name.clone())) else {
                continue;
            };
            let rref = format!("{}/{}", m.namespace, m.name);
            let back = self.restore_member(m, j)?;
            let Some(i) = plan
                .releases
                .iter()
                .position(|r| r.namespace == m.namespace && r.name == m.name)
            else {
                continue;
            };
            let Some(out) = report.releases.get_mut(i) else {
                continue;
            };
            let Some(back) = back else {
                t.append(TxEntry::Unwound {
                    namespace: m.namespace.clone(),
                    name: m.name.clone(),
                    what: "unchanged".into(),
                })?;
                continue;
            };
            let ok = matches!(back, Reverted::RolledBack { .. } | Reverted::Uninstalled);
            if ok {
                t.append(TxEntry::Unwound {
                    namespace: m.namespace.clone(),
                    name: m.name.clone(),
                    what: back.to_string(),
                })?;
            } else {
                all = false;
            }
            self.done(&rref, &format!("reverted: {back}"));
            let was_failed = !matches!(out.outcome, Outcome::Installed | Outcome::Upgraded);
            if !was_failed {
                if let Reverted::RolledBack { revision, .. } = &back {
                    out.revision = *revision;
                }
                if back == Reverted::Uninstalled {
                    out.revision = 0;
                }
                out.outcome = Outcome::Reverted(back);
                continue;
            }
            let err = out.error.clone().unwrap_or_default();
            match back {
                Reverted::RolledBack { revision, .. } => {
                    out.outcome = Outcome::RolledBack;
                    out.revision = revision;
                    out.error = Some(format!(
                        "release {} failed, and the plan has been rolled back due to atomic-plan being set: {err}",
                        m.name
                    ));
                }
                Reverted::Uninstalled => {
                    out.outcome = Outcome::UninstalledAfterFailure;
                    out.revision = 0;
                    out.error = Some(format!(
                        "release {} failed, and the plan has been rolled back due to atomic-plan being set: {err}",
                        m.name
                    ));
                }
                Reverted::RollbackFailed { error } | Reverted::UninstallFailed { error } => {
                    out.outcome = Outcome::Failed;
                    out.error = Some(format!(
                        "{err}; returning it to its rollback point failed too: {error}"
                    ));
                }
            }
        }
        if all {
            t.append(TxEntry::End {
                outcome: "unwound".into(),
            })?;
        }
        Ok(())
    }

    /// Returns one release of an atomic plan to its rollback point, unless
    /// the apply did not change it (`None`) or it is there already (a
    /// crash after its rollback and before the transaction journal said
    /// so).
    fn restore_member(
        &self,
        m: &TxMember,
        j: &mut ReleaseJournal,
    ) -> Result<Option<Reverted>, ExecError> {
        let rref = format!("{}/{}", m.namespace, m.name);
        let hist = self
            .store
            .history(&m.namespace, &m.name)
            .map_err(|e| ExecError::Store {
                release: rref.clone(),
                source: Box::new(e.into()),
            })?;
        let Some(last) = hist.iter().max_by_key(|r| r.version) else {
            return Ok(None);
        };
        if m.last_revision.is_some_and(|p| last.version <= p) {
            return Ok(None);
        }
        Ok(Some(match m.rollback_revision {
            Some(to) => {
                if last.info.status == Status::Deployed
                    && last.info.description == format!("Rollback to {to}")
                {
                    return Ok(Some(Reverted::RolledBack {
                        to,
                        revision: last.version,
                    }));
                }
                match self.rollback_release(
                    &m.namespace,
                    &m.name,
                    to,
                    &m.options,
                    j,
                    "rollback of an atomic plan",
                ) {
                    Ok(revision) => Reverted::RolledBack { to, revision },
                    Err(e) => Reverted::RollbackFailed {
                        error: crate::error_chain(&e),
                    },
                }
            }
            None => {
                if last.info.status == Status::Uninstalled {
                    return Ok(Some(Reverted::Uninstalled));
                }
                match self.uninstall_release(&m.namespace, &m.name, true, None, j) {
                    Ok(()) => Reverted::Uninstalled,
                    Err(e) => Reverted::UninstallFailed {
                        error: crate::error_chain(&e),
                    },
                }
            }
        }))
    }

    /// Finishes the atomic plans whose apply was interrupted (a crash, a
    /// killed process), found in the journal's transaction journals: one
    /// that committed is closed; otherwise every release it changed, and
    /// that is not back yet, is returned to its rollback point, in reverse
    /// plan order, after its own interrupted run is settled
    /// ([`Executor::recover`]). A transaction whose releases another
    /// process holds is running, and is left alone. Returns what was done,
    /// one line per transaction.
    pub fn recover_transactions(&self) -> Result<Vec<String>, ExecError> {
        let mut out = Vec::new();
        for (id, entries) in self.journal.open_transactions()? {
            let mut t = self.journal.transaction(&id)?;
            let Some(TxEntry::Begin { members, .. }) = entries.first() else {
                // The begin is on disk before the first write: none was made.
                t.append(TxEntry::End {
                    outcome: "empty".into(),
                })?;
                continue;
            };
            let mut refs: Vec<(String, String)> = members
                .iter()
                .map(|m| (m.namespace.clone(), m.name.clone()))
                .collect();
            refs.sort();
            refs.dedup();
            let mut held = BTreeMap::new();
            let mut running = false;
            for (ns, name) in refs {
                match self.journal.lock(&ns, &name) {
                    Ok(j) => {
                        held.insert((ns, name), j);
                    }
                    Err(JournalError::Held { .. }) => {
                        running = true;
                        break;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            if running {
                continue;
            }
            if entries.iter().any(|e| matches!(e, TxEntry::Commit)) {
                t.append(TxEntry::End {
                    outcome: "committed".into(),
                })?;
                out.push(format!("transaction {id}: had committed"));
                continue;
            }
            let unwound: BTreeSet<(&str, &str)> = entries
                .iter()
                .filter_map(|e| match e {
                    TxEntry::Unwound {
                        namespace, name, ..
                    } => Some((namespace.as_str(), name.as_str())),
                    _ => None,
                })
                .collect();
            let mut all = true;
            let mut did = Vec::new();
            for m in members.iter().rev() {
                if unwound.contains(&(m.namespace.as_str(), m.name.as_str())) {
                    continue;
                }
                let Some(j) = held.get_mut(&(m.namespace.clone(), m.name.clone())) else {
                    continue;
                };
                self.recover_with(&m.namespace, &m.name, j)?;
                let what = match self.restore_member(m, j)? {
                    None => "unchanged".to_string(),
                    Some(r @ (Reverted::RolledBack { .. } | Reverted::Uninstalled)) => {
                        r.to_string()
                    }
                    Some(r) => {
                        all = false;
                        did.push(format!("{}/{}: {r}", m.namespace, m.name));
                        continue;
                    }
                };
                t.append(TxEntry::Unwound {
                    namespace: m.namespace.clone(),
                    name: m.name.clone(),
                    what: what.clone(),
                })?;
                self.progress.event(&Event::Recovered {
                    release: format!("{}/{}", m.namespace, m.name),
                    what: format!("atomic plan unwound: {what}"),
                });
                did.push(format!("{}/{}: {what}", m.namespace, m.name));
            }
            if all {
                t.append(TxEntry::End {
                    outcome: "unwound".into(),
                })?;
            }
            out.push(format!(
                "transaction {id}: unwound the interrupted atomic plan ({})",
                did.join(", ")
            ));
        }
        Ok(out)
    }

    fn check_preconditions(&self, plan: &Plan) -> Result<(), ExecError> {
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

    fn store_err(&self, rel: &str) -> impl Fn(OpError) -> ExecError + '_ {
        let rel = rel.to_string();
        move |source| ExecError::Store {
            release: rel.clone(),
            source: Box::new(source),
        }
    }

    /// One release of a plan.
    fn run_release(
        &self,
        plan: &Plan,
        rp: &ReleasePlan,
        j: &mut ReleaseJournal,
        defer: bool,
    ) -> Result<ReleaseOutcome, ExecError> {
        let rref = format!("{}/{}", rp.namespace, rp.name);
        let serr = self.store_err(&rref);
        let ops = Releases::new(self.store);
        let run = uuid::Uuid::new_v4().to_string();
        let start = self.clock.now();
        let deadline = start + rp.options.timeout;
        self.progress.event(&Event::ReleaseStarted {
            release: rref.clone(),
            action: rp.action.as_str().into(),
            revision: rp.to.revision,
        });

        if rp.action == ReleaseAction::Uninstall {
            let intents = rp
                .objects
                .iter()
                .filter(|o| o.action == ObjectAction::Delete)
                .map(|o| Intent {
                    key: o.key.object_key(),
                    verb: "delete".into(),
                    absent_at_plan: false,
                })
                .collect();
            self.begin(
                j,
                &run,
                "uninstall",
                &plan.id,
                rp.to.revision,
                None,
                false,
                intents,
            )?;
            return match self.uninstall_planned(rp, j, &run) {
                Ok(()) => {
                    self.end(j, &run, "uninstalled")?;
                    self.done(&rref, "uninstalled");
                    Ok(ReleaseOutcome {
                        release: rref,
                        outcome: Outcome::Uninstalled,
                        revision: 0,
                        error: None,
                    })
                }
                Err(Failure(e)) => {
                    self.end(j, &run, "failed")?;
                    Ok(ReleaseOutcome {
                        release: rref,
                        outcome: Outcome::Failed,
                        revision: rp.to.revision,
                        error: Some(e),
                    })
                }
            };
        }

        // A stuck pending record is settled first: it becomes failed.
        if rp.action == ReleaseAction::Recover {
            if let Some(last) = ops
                .history(&rp.namespace, &rp.name)
                .map_err(&serr)?
                .into_iter()
                .max_by_key(|r| r.version)
            {
                if last.info.status.is_pending() {
                    let mut f = last.clone();
                    f.info.status = Status::Failed;
                    f.info.description = format!(
                        "{} interrupted: settled by rudder (was {})",
                        last.info.status.as_str(),
                        last.info.description
                    );
                    self.store.update(&last, &f).map_err(|e| serr(e.into()))?;
                    faults::durable_write("store");
                }
            }
        }

        // In an atomic plan the plan's unwind returns a failed release.
        let atomic = rp.options.atomic && !defer;
        let rollback_revision = rp.recovery.rollback_revision;
        let intents = rp
            .objects
            .iter()
            .filter(|o| o.action.writes())
            .map(|o| Intent {
                key: o.key.object_key(),
                verb: if o.action == ObjectAction::Delete {
                    "delete".into()
                } else {
                    "apply".into()
                },
                absent_at_plan: o.action == ObjectAction::Create,
            })
            .collect();
        let operation = if rp.from.is_some() {
            "upgrade"
        } else {
            "install"
        };
        self.begin(
            j,
            &run,
            operation,
            &plan.id,
            rp.to.revision,
            rollback_revision,
            atomic,
            intents,
        )?;

        // 1. The release namespace, before anything is written into it:
        // with Helm's Secrets and ConfigMaps drivers the record itself
        // lives there (Helm creates it first too).
        let rendered =
            record_parts(rp).map_err(|e| ExecError::Stale(format!("release {rref}: {e}")))?;
        if let Err(Failure(err)) = self.create_namespaces(rp, j, &run, deadline) {
            // Nothing of the release was written: no record, as with Helm.
            self.progress.event(&Event::Failed {
                release: rref.clone(),
                error: err.clone(),
            });
            self.end(j, &run, "failed")?;
            self.done(&rref, "failed");
            return Ok(ReleaseOutcome {
                release: rref,
                outcome: Outcome::Failed,
                revision: rp.from.as_ref().map_or(0, |f| f.revision),
                error: Some(err),
            });
        }

        // 2. The pending record.
        let max = HistoryMax(rp.options.history_max);
        let recorded = if rp.from.is_none() {
            let hist = ops.history(&rp.namespace, &rp.name).ok();
            let replace = hist.is_some();
            ops.begin_install(&rp.namespace, &rp.name, rendered, replace)
                .map(|p| (p, None))
        } else {
            ops.upgrade_base(&rp.namespace, &rp.name).and_then(|base| {
                ops.begin_upgrade(&base, rendered, max)
                    .map(|p| (p, Some(base)))
            })
        };
        let (pending, base) = match recorded {
            Ok(r) => r,
            Err(e) => {
                // Nothing but (maybe) the namespace was written: an atomic
                // run takes that back; the run ends, journaled.
                let ns_key = namespace_key(&rp.namespace);
                if atomic
                    && created_by(&j.entries, &run).contains(&ns_key)
                    && !self.namespace_shared(&rp.namespace, &rp.name)
                {
                    let deadline = self.clock.now() + rp.options.timeout;
                    let _ = self
                        .delete_one(&rref, j, &run, &ns_key, deadline)
                        .and_then(|()| {
                            self.wait_deleted(&rref, std::slice::from_ref(&ns_key), deadline)
                        });
                }
                self.end(j, &run, "failed")?;
                return Err(serr(e));
            }
        };
        faults::durable_write("store");
        self.phase(j, &run, "pending-recorded")?;

        // 3-8. The cluster work.
        let work = self.release_work(rp, j, &run, deadline).and_then(|()| {
            // Group commit: the cluster's writes are durable before the
            // record says deployed.
            self.cluster
                .flush()
                .map_err(|e| Failure(format!("flushing the cluster's writes: {e}")))
        });
        match work {
            Ok(()) => {
                let desc = Some(rp.options.description.as_str()).filter(|d| !d.is_empty());
                let done = match &base {
                    None => ops.finish_install(&pending, Ok(()), desc),
                    Some(b) => ops.finish_upgrade(b, &pending, Ok(()), desc),
                }
                .map_err(&serr)?;
                faults::durable_write("store");
                self.phase(j, &run, "deployed-recorded")?;
                if base.is_none() && rp.options.history_max > 0 {
                    let _ = ops.prune(
                        &rp.namespace,
                        &rp.name,
                        HistoryMax(rp.options.history_max + 1),
                    );
                }
                self.end(j, &run, "deployed")?;
                let outcome = if base.is_none() {
                    Outcome::Installed
                } else {
                    Outcome::Upgraded
                };
                self.done(&rref, &outcome.to_string());
                Ok(ReleaseOutcome {
                    release: rref,
                    outcome,
                    revision: done.version,
                    error: None,
                })
            }
            Err(Failure(err)) => {
                self.progress.event(&Event::Failed {
                    release: rref.clone(),
                    error: err.clone(),
                });
                match &base {
                    None => ops.finish_install(&pending, Err(err.clone()), None),
                    Some(b) => ops.finish_upgrade(b, &pending, Err(err.clone()), None),
                }
                .map_err(&serr)?;
                faults::durable_write("store");
                if !atomic {
                    self.end(j, &run, "failed")?;
                    self.done(&rref, "failed");
                    return Ok(ReleaseOutcome {
                        release: rref,
                        outcome: Outcome::Failed,
                        revision: pending.version,
                        error: Some(err),
                    });
                }
                self.phase(j, &run, "rolling-back")?;
                match rollback_revision {
                    Some(to) => {
                        let created = created_by(&j.entries, &run);
                        let r = self.rollback_to(
                            &rp.namespace,
                            &rp.name,
                            to,
                            &rp.options,
                            j,
                            &run,
                            &created,
                        );
                        match r {
                            Ok(v) => {
                                self.end(j, &run, "rolled-back")?;
                                self.done(&rref, &format!("rolled back to revision {to}"));
                                Ok(ReleaseOutcome {
                                    release: rref,
                                    outcome: Outcome::RolledBack,
                                    revision: v,
                                    error: Some(format!(
                                        "release {} failed, and has been rolled back due to atomic being set: {err}",
                                        rp.name
                                    )),
                                })
                            }
                            Err(e) => {
                                self.end(j, &run, "failed")?;
                                Ok(ReleaseOutcome {
                                    release: rref,
                                    outcome: Outcome::Failed,
                                    revision: pending.version,
                                    error: Some(format!(
                                        "an error occurred while rolling back the release. original upgrade error: {err}: {e}"
                                    )),
                                })
                            }
                        }
                    }
                    None => {
                        let created = created_by(&j.entries, &run);
                        let (r, r2) = self.undo_install(
                            &rp.namespace,
                            &rp.name,
                            j,
                            &run,
                            &created,
                            true,
                            rp.options.timeout,
                        );
                        self.end(j, &run, "uninstalled")?;
                        let error = match (r, r2) {
                            (Ok(()), Ok(())) => format!(
                                "release {} failed, and has been uninstalled due to atomic being set: {err}",
                                rp.name
                            ),
                            (Err(Failure(e)), _) | (_, Err(e)) => format!(
                                "release {} failed on install: {err}; the uninstall also failed: {e}",
                                rp.name
                            ),
                        };
                        self.done(&rref, "uninstalled after failure");
                        Ok(ReleaseOutcome {
                            release: rref,
                            outcome: Outcome::UninstalledAfterFailure,
                            revision: 0,
                            error: Some(error),
                        })
                    }
                }
            }
        }
    }

    fn done(&self, release: &str, outcome: &str) {
        self.progress.event(&Event::ReleaseDone {
            release: release.into(),
            outcome: outcome.into(),
        });
    }

    #[allow(clippy::too_many_arguments)]
    fn begin(
        &self,
        j: &mut ReleaseJournal,
        run: &str,
        operation: &str,
        plan_id: &str,
        revision: u64,
        rollback_revision: Option<u64>,
        atomic: bool,
        intents: Vec<Intent>,
    ) -> Result<(), ExecError> {
        j.append(
            Entry::Begin {
                run: run.into(),
                operation: operation.into(),
                plan_id: plan_id.into(),
                revision,
                rollback_revision,
                atomic,
                intents,
            },
            true,
        )?;
        Ok(())
    }

    fn phase(&self, j: &mut ReleaseJournal, run: &str, phase: &str) -> Result<(), ExecError> {
        j.append(
            Entry::Phase {
                run: run.into(),
                phase: phase.into(),
            },
            false,
        )?;
        Ok(())
    }

    fn end(&self, j: &mut ReleaseJournal, run: &str, outcome: &str) -> Result<(), ExecError> {
        j.append(
            Entry::End {
                run: run.into(),
                outcome: outcome.into(),
            },
            true,
        )?;
        Ok(())
    }

    /// Writes with retries on 5xx and 429 answers.
    fn with_retries<T>(
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
    fn apply_one(
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
    fn apply_write(
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
    fn note_apply(
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
    fn apply_group(
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

    fn delete_one(
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

    /// Creates the namespaces the plan creates (`createNamespace`), as
    /// Helm does: a create (POST), where an existing namespace is not an
    /// error. A namespace that exists when its turn comes (another release
    /// of this plan, or someone else, made it meanwhile) is left alone and
    /// is not this run's. The journal says `creating-namespace` before the
    /// create and holds the write after it, so that recovery knows whether
    /// this run made the namespace even when it crashed in between.
    fn create_namespaces(
        &self,
        rp: &ReleasePlan,
        j: &mut ReleaseJournal,
        run: &str,
        deadline: Duration,
    ) -> Result<(), Failure> {
        let rref = format!("{}/{}", rp.namespace, rp.name);
        for o in rp.objects.iter().filter(|o| o.stage == Stage::Namespaces) {
            if !o.action.writes() {
                continue;
            }
            let Some(d) = &o.desired else { continue };
            let key = o.key.object_key();
            let live = self
                .cluster
                .get(&key)
                .map_err(|e| Failure(format!("failed to create namespace {}: {e}", key.name)))?;
            if live.is_some() {
                continue;
            }
            let _ = self.phase(j, run, CREATING_NAMESPACE);
            let r = self.with_retries(deadline, || self.cluster.create(d));
            let (uid, rv, outcome) = match &r {
                Ok(v) => {
                    faults::durable_write("cluster");
                    (
                        meta_str(v, "uid"),
                        meta_str(v, "resourceVersion"),
                        "ok".to_string(),
                    )
                }
                // Made meanwhile by someone else: theirs, and there.
                Err(ClusterError::AlreadyExists { .. }) => continue,
                Err(e) => (String::new(), String::new(), e.to_string()),
            };
            let _ = j.append(
                Entry::Write {
                    run: run.into(),
                    verb: "create".into(),
                    key: key.clone(),
                    existed: false,
                    uid,
                    resource_version: rv,
                    outcome,
                },
                false,
            );
            if let Err(e) = r {
                return Err(Failure(format!(
                    "failed to create namespace {}: {e}",
                    key.name
                )));
            }
            self.progress.event(&Event::ObjectWritten {
                release: rref.clone(),
                verb: "create".into(),
                object: key.to_string(),
            });
        }
        Ok(())
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
    fn undo_install(
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
    fn namespace_shared(&self, namespace: &str, name: &str) -> bool {
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

    /// CRDs, pre-hooks, objects, deletes, wait, post-hooks.
    fn release_work(
        &self,
        rp: &ReleasePlan,
        j: &mut ReleaseJournal,
        run: &str,
        deadline: Duration,
    ) -> Result<(), Failure> {
        let rref = format!("{}/{}", rp.namespace, rp.name);
        let mut waits: Vec<(ObjectKey, String)> = Vec::new();
        // CRDs written among the objects that the wait does not cover.
        let mut crds: Vec<(ObjectKey, String)> = Vec::new();
        // CRDs first (the namespace was created before the pending
        // record); they must be Established before the rest.
        for o in rp.objects.iter().filter(|o| o.stage == Stage::Crds) {
            if !o.action.writes() {
                continue;
            }
            let Some(d) = &o.desired else { continue };
            let w = self.apply_one(&rref, j, run, d, deadline)?;
            self.wait_for(
                &rref,
                &[(o.key.object_key(), meta_str(&w, "resourceVersion"))],
                WaitStrategy::Legacy,
                false,
                deadline,
            )?;
        }
        let pre: Vec<_> = rp
            .hooks
            .iter()
            .filter(|h| h.phase.starts_with("pre-"))
            .collect();
        self.run_hooks(&rref, j, run, &pre, deadline)?;
        let main: Vec<&crate::plan::ObjectChange> = rp
            .objects
            .iter()
            .filter(|o| o.stage == Stage::Main)
            .collect();
        // One install-order group (one kind) at a time; its objects may be
        // written at the same time.
        for group in main.chunk_by(|a, b| {
            crate::manifest::order::compare_kinds(
                crate::manifest::order::INSTALL_ORDER,
                &a.key.kind,
                &b.key.kind,
            )
            .is_eq()
        }) {
            let mut writes = Vec::new();
            for o in group {
                if !o.action.writes() {
                    if o.wait.is_some() && rp.options.waits() {
                        // Unchanged objects are waited on too (Helm waits on
                        // the whole manifest), from their current state.
                        waits.push((o.key.object_key(), String::new()));
                    }
                    continue;
                }
                if let Some(d) = &o.desired {
                    writes.push((*o, d));
                }
            }
            let docs: Vec<&Value> = writes.iter().map(|(_, d)| *d).collect();
            let written = self.apply_group(&rref, j, run, &docs, deadline)?;
            for ((o, _), w) in writes.iter().zip(&written) {
                if o.wait.is_some() {
                    waits.push((o.key.object_key(), meta_str(w, "resourceVersion")));
                } else if is_crd(&o.key) {
                    crds.push((o.key.object_key(), meta_str(w, "resourceVersion")));
                }
            }
        }
        // A CRD among the templates is Established before the release is
        // done even when it does not wait: the releases that need it may
        // hold its custom resources.
        if !crds.is_empty() {
            self.wait_for(&rref, &crds, WaitStrategy::Legacy, false, deadline)?;
        }
        let _ = self.phase(j, run, "objects-applied");
        for o in rp.objects.iter().filter(|o| o.stage == Stage::Prune) {
            if o.action == ObjectAction::Delete {
                self.delete_one(&rref, j, run, &o.key.object_key(), deadline)?;
            }
        }
        if rp.options.waits() {
            self.wait_for(
                &rref,
                &waits,
                rp.options.wait_strategy,
                rp.options.wait_for_jobs,
                deadline,
            )?;
            let _ = self.phase(j, run, "waited");
        }
        let post: Vec<_> = rp
            .hooks
            .iter()
            .filter(|h| h.phase.starts_with("post-"))
            .collect();
        self.run_hooks(&rref, j, run, &post, deadline)?;
        Ok(())
    }

    fn run_hooks(
        &self,
        rref: &str,
        j: &mut ReleaseJournal,
        run: &str,
        hooks: &[&crate::plan::HookPlan],
        deadline: Duration,
    ) -> Result<(), Failure> {
        // As Helm does, `hook-succeeded` hooks are deleted once every hook of the
        // phase has succeeded, last first: a Job hook may need a ServiceAccount
        // hook created before it.
        let mut succeeded = Vec::new();
        for h in hooks {
            let Some(d) = &h.desired else { continue };
            let key = h.key.object_key();
            if h.delete_policies
                .iter()
                .any(|p| p == "before-hook-creation")
            {
                self.delete_one(rref, j, run, &key, deadline)?;
            }
            self.apply_one(rref, j, run, d, deadline)?;
            let result = loop {
                let live = self
                    .cluster
                    .get(&key)
                    .map_err(|e| Failure(format!("hook {key}: {e}")))?;
                match live.as_ref().and_then(ready::hook_done) {
                    Some(r) => break r,
                    None if live.is_none() => break Ok(()),
                    None => {}
                }
                if self.clock.now() >= deadline {
                    break Err("timed out waiting for the condition".to_string());
                }
                self.clock.sleep(self.opts.poll);
            };
            match result {
                Ok(()) => {
                    if h.delete_policies.iter().any(|p| p == "hook-succeeded") {
                        succeeded.push(key);
                    }
                }
                Err(e) => {
                    if h.delete_policies.iter().any(|p| p == "hook-failed") {
                        self.delete_one(rref, j, run, &key, deadline)?;
                    }
                    return Err(Failure(format!("{} hook {key} failed: {e}", h.phase)));
                }
            }
        }
        for key in succeeded.iter().rev() {
            self.delete_one(rref, j, run, key, deadline)?;
        }
        Ok(())
    }

    /// The objects of `keys` as they are now, one answer per key, in
    /// order. Where the cluster says a LIST is cheaper
    /// ([`Cluster::list_batch_min`]), the keys of one kind in one
    /// namespace are answered from one LIST (with status, as a GET gives
    /// it); a LIST that fails falls back to a GET per key.
    fn read_live(&self, keys: &[&ObjectKey]) -> Vec<Result<Option<Value>, ClusterError>> {
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

    /// Waits until every object is ready, or the deadline passes. Between
    /// two readiness checks it watches the first pending object and, where
    /// a pending object owns pods, the pods and events of its namespace, so
    /// that what the pods go through is read again as it happens: each
    /// [`Event::Waiting`] carries the reasons [`why`] finds. With
    /// [`ExecOptions::fail_fast`] a fatal reason ends the wait at once.
    /// A failed wait leaves a [`Diagnosis`] per pending object for the
    /// report.
    fn wait_for(
        &self,
        rref: &str,
        objs: &[(ObjectKey, String)],
        strategy: WaitStrategy,
        wait_for_jobs: bool,
        deadline: Duration,
    ) -> Result<(), Failure> {
        let diag = why::Diagnoser::new(self.cluster);
        let mut pending: Vec<&(ObjectKey, String)> = objs.iter().collect();
        let mut last_msg: HashMap<&ObjectKey, String> = Default::default();
        let mut last_reasons: HashMap<&ObjectKey, Vec<Reason>> = Default::default();
        let mut found: HashMap<&ObjectKey, why::Found> = Default::default();
        let mut diagnosed_at: HashMap<&ObjectKey, Duration> = Default::default();
        let mut first_seen: HashMap<(String, why::ReasonKind), Duration> = Default::default();
        let mut seen_rv: HashMap<&ObjectKey, String> = Default::default();
        loop {
            diag.new_round();
            let mut still = Vec::new();
            let mut fatal: Option<(&ObjectKey, Reason)> = None;
            let keys: Vec<&ObjectKey> = pending.iter().map(|(k, _)| k).collect();
            let lives = self.read_live(&keys);
            let mut sets = ReplicaSets::default();
            for (item, live) in pending.into_iter().zip(lives) {
                let (key, written_rv) = item;
                let live = match live {
                    Ok(live) => live,
                    // The API server restarting or out of reach for a moment:
                    // the wait goes on until its deadline.
                    Err(ClusterError::Unreachable { message: m, .. }) => {
                        still.push(item);
                        last_msg.insert(key, format!("cluster unreachable: {m}"));
                        continue;
                    }
                    Err(e) => return Err(Failure(format!("waiting for {key}: {e}"))),
                };
                let Some(mut live) = live else {
                    still.push(item);
                    last_msg.insert(key, "not found".into());
                    continue;
                };
                if strategy == WaitStrategy::Legacy {
                    self.add_new_replica_set_status(key, &mut live, &mut sets, &keys)?;
                }
                // Only an observation at or after our write counts.
                let rv = meta_str(&live, "resourceVersion");
                seen_rv.insert(key, rv.to_string());
                let fresh = written_rv.is_empty() || rv_at_least(&rv, written_rv);
                let v = ready::check(&live, strategy, wait_for_jobs);
                if fresh && v.ready {
                    continue;
                }
                // Why: read again at most every DIAGNOSE_EVERY per object,
                // and always when the object has just failed (a failed Job
                // ends the wait at once: its last reasons must be fresh).
                let now = self.clock.now();
                if why::explains(key)
                    && (v.failed
                        || diagnosed_at
                            .get(key)
                            .is_none_or(|t| now.saturating_sub(*t) >= DIAGNOSE_EVERY))
                {
                    diagnosed_at.insert(key, now);
                    if let Ok(f) = diag.diagnose(key, &live) {
                        found.insert(key, f);
                    }
                }
                let reasons = found
                    .get(key)
                    .map(|f| f.reasons.clone())
                    .unwrap_or_default();
                if last_msg.get(key) != Some(&v.message)
                    || last_reasons
                        .get(key)
                        .map_or(!reasons.is_empty(), |r| *r != reasons)
                {
                    self.progress.event(&Event::Waiting {
                        release: rref.into(),
                        object: format!("{} {}", key.kind, namespaced(key)),
                        message: v.message.clone(),
                        reasons: reasons.clone(),
                    });
                }
                if v.failed && strategy == WaitStrategy::Legacy {
                    last_msg.insert(key, v.message.clone());
                    last_reasons.insert(key, reasons.clone());
                    self.record_stuck(rref, &[item], &last_msg, &last_reasons, &found);
                    return Err(Failure(format!(
                        "{key}: {}{}",
                        v.message,
                        why_suffix(&reasons)
                    )));
                }
                if let Some(ff) = &self.opts.fail_fast {
                    for r in &reasons {
                        let since = *first_seen.entry((r.object.clone(), r.kind)).or_insert(now);
                        if fatal.is_none() && r.fatal(ff, now.saturating_sub(since)) {
                            fatal = Some((key, r.clone()));
                        }
                    }
                }
                last_msg.insert(key, v.message);
                last_reasons.insert(key, reasons);
                still.push(item);
            }
            if still.is_empty() {
                return Ok(());
            }
            if let Some((key, r)) = fatal {
                self.record_stuck(rref, &still, &last_msg, &last_reasons, &found);
                return Err(Failure(format!(
                    "resource {}/{} not ready: {}: failing fast (--fail-fast): {r}",
                    key.kind,
                    namespaced(key),
                    last_msg.get(key).cloned().unwrap_or_default(),
                )));
            }
            if self.clock.now() >= deadline {
                self.record_stuck(rref, &still, &last_msg, &last_reasons, &found);
                let what: Vec<String> = still
                    .iter()
                    .map(|(k, _)| {
                        format!(
                            "resource {}/{} not ready: {}{}",
                            k.kind,
                            namespaced(k),
                            last_msg.get(k).cloned().unwrap_or_default(),
                            why_suffix(last_reasons.get(k).map_or(&[][..], |r| &r[..]))
                        )
                    })
                    .collect();
                return Err(Failure(format!(
                    "{}: context deadline exceeded",
                    what.join(", ")
                )));
            }
            let left = deadline.saturating_sub(self.clock.now());
            let (first, _) = still[0];
            let mut targets = vec![WatchTarget {
                key: first.clone(),
                resource_version: seen_rv.get(first).cloned().unwrap_or_default(),
            }];
            // The pods and events of the namespaces whose objects own pods.
            let mut namespaces = BTreeSet::new();
            for (k, _) in &still {
                if let Some(f) = found.get(k) {
                    if namespaces.insert(k.namespace.clone()) {
                        for (kind, rv) in [("Pod", &f.versions.0), ("Event", &f.versions.1)] {
                            if !rv.is_empty() {
                                targets.push(WatchTarget {
                                    key: ObjectKey::new("", kind, &k.namespace, ""),
                                    resource_version: rv.clone(),
                                });
                            }
                        }
                    }
                }
            }
            // A grace period that may run out wakes the wait up.
            let grace_running = self.opts.fail_fast.is_some()
                && last_reasons
                    .values()
                    .flatten()
                    .any(|r| r.kind == why::ReasonKind::Unschedulable);
            self.watch_or_sleep(&targets, still.len() > 1 || grace_running, left);
            pending = still;
        }
    }

    /// Keeps a [`Diagnosis`] of each of `still` for the report.
    fn record_stuck(
        &self,
        rref: &str,
        still: &[&(ObjectKey, String)],
        last_msg: &std::collections::HashMap<&ObjectKey, String>,
        last_reasons: &std::collections::HashMap<&ObjectKey, Vec<Reason>>,
        found: &std::collections::HashMap<&ObjectKey, why::Found>,
    ) {
        let diag = why::Diagnoser::new(self.cluster);
        let mut out: Vec<Diagnosis> = still
            .iter()
            .map(|(k, _)| Diagnosis {
                release: rref.to_string(),
                object: format!("{} {}", k.kind, namespaced(k)),
                status: last_msg.get(k).cloned().unwrap_or_default(),
                reasons: last_reasons.get(k).cloned().unwrap_or_default(),
                pods: found
                    .get(k)
                    .map(|f| diag.pod_reports(f, REPORT_EVENTS, self.opts.log_lines))
                    .unwrap_or_default(),
            })
            .collect();
        if let Ok(mut s) = self.stuck.lock() {
            s.append(&mut out);
        }
    }

    /// Between two readiness checks: a watch on `targets` (the first
    /// object still pending, from the resourceVersion last seen, and the
    /// pods and events that explain it), for at most the time left, or one
    /// poll interval where the cluster cannot watch. With `short` (several
    /// objects pending, or a fail-fast grace period running) the watch is
    /// cut to a second, so the others are still looked at that often.
    fn watch_or_sleep(&self, targets: &[WatchTarget], short: bool, left: Duration) {
        let nap = self.opts.poll.min(left.max(Duration::from_millis(1)));
        let rv_known = targets
            .first()
            .is_some_and(|t| !t.resource_version.is_empty());
        if !rv_known || left.is_zero() {
            self.clock.sleep(nap);
            return;
        }
        let cap = if short {
            Duration::from_secs(1)
        } else {
            WATCH_MAX
        };
        let t0 = self.clock.now();
        match self.cluster.watch_any(targets, left.min(cap)) {
            // A rollout changes its pods and events many times a second:
            // a round (a LIST of each pending kind, of pods and events)
            // per change would cost more requests than it tells. Rounds
            // start at most every ROUND_MIN.
            Ok(Watched::Changed) => {
                let spent = self.clock.now().saturating_sub(t0);
                if spent < ROUND_MIN {
                    self.clock.sleep((ROUND_MIN - spent).min(left));
                }
            }
            Ok(Watched::Quiet) => {}
            // A compacted resourceVersion or an unreachable server: poll
            // for this round (the next check reads the object again).
            Ok(Watched::Expired) | Ok(Watched::Unsupported) | Err(_) => {
                if self.clock.now().saturating_sub(t0) < nap {
                    self.clock.sleep(nap);
                }
            }
        }
    }

    /// Polls until none of `keys` exists any more (`uninstall --wait`), or the
    /// deadline passes.
    fn wait_deleted(
        &self,
        rref: &str,
        keys: &[ObjectKey],
        deadline: Duration,
    ) -> Result<(), Failure> {
        let mut pending: Vec<&ObjectKey> = keys.iter().collect();
        let mut told = usize::MAX;
        loop {
            let mut still = Vec::new();
            for key in pending {
                let live = self
                    .cluster
                    .get(key)
                    .map_err(|e| Failure(format!("waiting for {key} to be deleted: {e}")))?;
                if live.is_some() {
                    still.push(key);
                }
            }
            let Some(first) = still.first() else {
                return Ok(());
            };
            if self.clock.now() >= deadline {
                let names: Vec<String> = still.iter().map(|k| k.to_string()).collect();
                return Err(Failure(format!(
                    "timed out waiting for the deletion of {}: context deadline exceeded",
                    names.join(", ")
                )));
            }
            // Said once per count, not once per poll.
            if told != still.len() {
                told = still.len();
                self.progress.event(&Event::Waiting {
                    release: rref.into(),
                    object: format!("{} {}", first.kind, namespaced(first)),
                    message: format!("{} object(s) not yet deleted", still.len()),
                    reasons: Vec::new(),
                });
            }
            let left = deadline.saturating_sub(self.clock.now());
            self.clock
                .sleep(self.opts.poll.min(left.max(Duration::from_millis(1))));
            pending = still;
        }
    }

    /// Helm 3 counts a Deployment ready by its new ReplicaSet's ready pods. A
    /// real Deployment's status has no such count (`readyReplicas` also counts
    /// the old ReplicaSets' pods, which stay ready during a rollout), so it is
    /// read from the ReplicaSet that the Deployment owns at its current
    /// revision, and set as `status.updatedReadyReplicas` for the readiness
    /// rule. No such ReplicaSet yet counts as none ready.
    ///
    /// `pending` are the objects of this round of the wait: where several
    /// Deployments of one namespace are waited for, the namespace's
    /// ReplicaSets are listed once for all of them (kept in `sets` for the
    /// round) instead of once per Deployment.
    fn add_new_replica_set_status(
        &self,
        key: &ObjectKey,
        live: &mut Value,
        sets: &mut ReplicaSets,
        pending: &[&ObjectKey],
    ) -> Result<(), Failure> {
        if key.group != "apps" || key.kind != "Deployment" {
            return Ok(());
        }
        if live.pointer("/status/updatedReadyReplicas").is_some() {
            return Ok(());
        }
        let uid = meta_str(live, "uid");
        let revision = live
            .pointer("/metadata/annotations/deployment.kubernetes.io~1revision")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let selector: Vec<(String, String)> = live
            .pointer("/spec/selector/matchLabels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        // Without a revision (not yet synced, or a cluster without a Deployment
        // controller such as the simulated one) the status alone is used.
        if revision.is_empty() {
            return Ok(());
        }
        let mut ready = 0;
        {
            let listing_err = |e: ClusterError| {
                Failure(format!("waiting for {key}: listing its ReplicaSets: {e}"))
            };
            let deployments_here = pending
                .iter()
                .filter(|k| k.group == "apps" && k.kind == "Deployment")
                .filter(|k| k.namespace == key.namespace)
                .count();
            let shared = self
                .cluster
                .list_batch_min()
                .is_some_and(|m| deployments_here >= m.max(2));
            let own;
            let sets: &[Value] = if shared {
                if !sets.0.contains_key(&key.namespace) {
                    let all = self
                        .cluster
                        .list("apps", "ReplicaSet", Some(&key.namespace), &[])
                        .map_err(listing_err)?;
                    sets.0.insert(key.namespace.clone(), all);
                }
                sets.0.get(&key.namespace).map_or(&[], Vec::as_slice)
            } else {
                own = self
                    .cluster
                    .list("apps", "ReplicaSet", Some(&key.namespace), &selector)
                    .map_err(listing_err)?;
                &own
            };
            for rs in sets {
                let owned = rs
                    .pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .is_some_and(|o| {
                        o.iter()
                            .any(|r| r.get("uid").and_then(Value::as_str) == Some(uid.as_str()))
                    });
                let at = rs
                    .pointer("/metadata/annotations/deployment.kubernetes.io~1revision")
                    .and_then(Value::as_str);
                if owned && at == Some(revision.as_str()) {
                    ready = rs
                        .pointer("/status/readyReplicas")
                        .and_then(Value::as_i64)
                        .unwrap_or(0);
                    break;
                }
            }
        }
        if let Some(st) = live.get_mut("status").and_then(Value::as_object_mut) {
            st.insert("updatedReadyReplicas".into(), ready.into());
        }
        Ok(())
    }

    /// The objects of a recorded revision, qualified and stamped.
    fn revision_objects(&self, rel: &Release) -> Result<Vec<Value>, Failure> {
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

    fn delete_created(
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
    fn rollback_to(
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

    fn uninstall_planned(
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
    fn recover_with(
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

    fn uninstall_release_inner(
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

/// The releases an atomic plan may change, in plan order, with their
/// rollback points: an upgrade (or a recovery) returns to the plan's
/// rollback revision, an install is uninstalled. Noops change nothing;
/// a planned uninstall is not undone.
fn tx_members(plan: &Plan) -> Vec<TxMember> {
    plan.releases
        .iter()
        .filter(|r| {
            matches!(
                r.action,
                ReleaseAction::Install | ReleaseAction::Upgrade | ReleaseAction::Recover
            )
        })
        .map(|r| TxMember {
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            rollback_revision: r.from.as_ref().and(r.recovery.rollback_revision),
            last_revision: r.preconditions.last_record.as_ref().map(|l| l.revision),
            options: r.options.clone(),
        })
        .collect()
}

/// Keys that this run created (apply of an object that did not exist).
fn created_by(entries: &[Entry], run: &str) -> Vec<ObjectKey> {
    let mut out = Vec::new();
    for e in entries {
        if let Entry::Write {
            run: r,
            verb,
            key,
            existed,
            ..
        } = e
        {
            if r == run && (verb == "apply" || verb == "create") && !existed && !out.contains(key) {
                out.push(key.clone());
            }
        }
    }
    out
}

/// The journal phase written just before the release namespace is created.
const CREATING_NAMESPACE: &str = "creating-namespace";

/// The key of namespace `ns`.
fn namespace_key(ns: &str) -> ObjectKey {
    ObjectKey::new("", "Namespace", "", ns)
}

/// Field managers whose client-side writes rudder takes over
/// ([`Cluster::upgrade_managed_fields`]): Helm 3's.
const CSA_MANAGERS: &[&str] = &["helm"];

/// The ReplicaSets of each namespace, listed once in a round of a wait.
#[derive(Default)]
struct ReplicaSets(HashMap<String, Vec<Value>>);

/// The longest single watch of a wait; a quiet object is read again after it.
const WATCH_MAX: Duration = Duration::from_secs(10);

/// How often a wait reads an object's pods and events again at most (it
/// reads them after each change a watch reports).
const DIAGNOSE_EVERY: Duration = Duration::from_secs(1);

/// The shortest time between two rounds of a wait that a watch ended.
const ROUND_MIN: Duration = Duration::from_millis(250);

/// ` (why: ...)` naming the first reasons, for error messages.
fn why_suffix(reasons: &[Reason]) -> String {
    if reasons.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = reasons.iter().take(3).map(|r| r.to_string()).collect();
    let more = match reasons.len().saturating_sub(3) {
        0 => String::new(),
        n => format!("; and {n} more"),
    };
    format!(" (why: {}{more})", shown.join("; "))
}

/// The operations (`Apply`, `Update`) under which `manager` holds fields of
/// `live` (none when it holds none).
fn manager_operations(live: &Value, manager: &str) -> Vec<String> {
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

fn namespaced(k: &ObjectKey) -> String {
    if k.namespace.is_empty() {
        k.name.clone()
    } else {
        format!("{}/{}", k.namespace, k.name)
    }
}

/// Whether a plan key names a CustomResourceDefinition.
fn is_crd(key: &crate::plan::model::PlanKey) -> bool {
    key.group == "apiextensions.k8s.io" && key.kind == "CustomResourceDefinition"
}

fn meta_str(v: &Value, f: &str) -> String {
    v.get("metadata")
        .and_then(|m| m.get(f))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// resourceVersions are opaque, but both implementations use increasing
/// integers; compare numerically when both parse, else require equality.
fn rv_at_least(rv: &str, written: &str) -> bool {
    match (rv.parse::<u64>(), written.parse::<u64>()) {
        (Ok(a), Ok(b)) => a >= b,
        _ => rv == written,
    }
}

/// The record pieces a plan carries for the executor.
fn record_parts(rp: &ReleasePlan) -> Result<release::RevisionContent, String> {
    let rec = rp.record.as_ref().ok_or(
        "the plan holds no release record (plans printed without --save cannot be applied)",
    )?;
    let rel: Release = serde_json::from_value(rec.clone()).map_err(|e| format!("record: {e}"))?;
    let notes = rec
        .get("notes")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    Ok(release::RevisionContent {
        chart: rel.chart.unwrap_or_default(),
        config: rel.config,
        manifest: rel.manifest,
        hooks: rel.hooks,
        notes,
        labels: Default::default(),
    })
}

#[cfg(test)]
mod outcome_tests {
    use super::*;

    #[test]
    fn outcomes_print_and_serialize_as_their_kebab_case_words() {
        let all = [
            (Outcome::Installed, "installed"),
            (Outcome::Upgraded, "upgraded"),
            (Outcome::Noop, "noop"),
            (Outcome::Uninstalled, "uninstalled"),
            (Outcome::RolledBack, "rolled-back"),
            (
                Outcome::UninstalledAfterFailure,
                "uninstalled-after-failure",
            ),
            (Outcome::Failed, "failed"),
            (Outcome::NotAttempted, "not-attempted"),
            (
                Outcome::Reverted(Reverted::RolledBack { to: 3, revision: 5 }),
                "reverted: rolled back to revision 3 (as revision 5)",
            ),
            (
                Outcome::Reverted(Reverted::UninstallFailed {
                    error: "boom".into(),
                }),
                "reverted: uninstall failed: boom",
            ),
        ];
        for (outcome, word) in all {
            assert_eq!(outcome.to_string(), word);
            let json = serde_json::to_string(&ReleaseOutcome {
                release: "ns/r".into(),
                outcome: outcome.clone(),
                revision: 2,
                error: None,
            })
            .unwrap();
            assert_eq!(
                json,
                format!(r#"{{"release":"ns/r","outcome":"{word}","revision":2}}"#)
            );
        }
        let report = |o: Outcome| Report {
            diagnoses: Vec::new(),
            releases: vec![ReleaseOutcome {
                release: "ns/r".into(),
                outcome: o,
                revision: 1,
                error: None,
            }],
        };
        assert!(report(Outcome::Noop).success());
        assert!(report(Outcome::Uninstalled).success());
        assert!(!report(Outcome::RolledBack).success());
        assert!(!report(Outcome::Reverted(Reverted::Uninstalled)).success());
    }
}
