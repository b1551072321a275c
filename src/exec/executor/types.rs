//! The executor's vocabulary: its options ([`ExecOptions`]), its errors
//! ([`ExecError`]), the progress it reports ([`Event`], [`Progress`]) and
//! what a run did ([`Outcome`], [`Report`]).
use crate::cluster::ClusterError;
use crate::exec::journal::JournalError;
use crate::exec::why::{Diagnosis, FailFast, Reason};
use crate::release::OpError;
use serde::Serialize;
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
    ///
    /// [`Executor::rollback_release`]: super::Executor::rollback_release
    /// [`Executor::uninstall_release`]: super::Executor::uninstall_release
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
    ///
    /// [`Executor::recover_transactions`]: super::Executor::recover_transactions
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
pub(super) const REPORT_EVENTS: usize = 5;

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
