//! Executing plans: the thin layer that turns a [`crate::plan::Plan`] into
//! writes to the cluster and the release store, waits for readiness, and
//! rolls back on failure.
//!
//! The [`Executor`] decides nothing: it re-checks the plan's
//! preconditions before its first write, then runs the releases, several
//! at a time where no `needs` path joins them
//! ([`ExecOptions::concurrency`]), each once the releases it needs are
//! done. Per release, it
//! records `pending-install`/`pending-upgrade`, applies CRDs (and waits
//! until they are Established), runs the pre-hooks, applies the changed
//! objects (server-side apply, field manager `rudder`; unchanged objects
//! get no write), deletes what the plan deletes, waits, runs the
//! post-hooks, and records `deployed`. One deadline covers the whole
//! release; an automatic rollback gets a deadline of its own, of the same
//! length, as Helm gives it.
//!
//! Every write is journaled ([`journal`]), so a crash at any point leaves
//! enough for [`Executor::recover`] to finish or roll back the interrupted
//! run. On failure an atomic release returns to its rollback point: the
//! rollback revision's objects are re-applied, every object the journal
//! shows this run created and that revision lacks is deleted, and the
//! attempt is recorded `failed` followed by a `Rollback to N` revision.
pub mod clock;
mod executor;
pub(crate) mod faults;
pub mod journal;
pub mod ready;
pub mod why;

pub use clock::{Clock, DrivenClock, WallClock};
pub use executor::{
    CrossRelease, Event, ExecError, ExecOptions, Executor, Outcome, Progress, Quiet,
    ReleaseOutcome, Report, Reverted, DEFAULT_CONCURRENCY, DEFAULT_LOG_LINES,
};
pub use journal::Journal;
pub use why::{Diagnosis, FailFast, Reason, ReasonKind};

// In-process crash injection, for the crash tests (tests/exec_model.rs).
#[doc(hidden)]
pub use faults::{crash_thread_at, Crash};
