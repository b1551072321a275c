//! [`Error`]: what the facade's calls fail with.
use crate::exec::{ExecError, Report};
use crate::release::Status;

/// Why a [`crate::Client`] or [`crate::blocking::Client`] call failed.
///
/// The variants that wrap another error display it unchanged and let a
/// caller match on it (`Error::Plan(PlanError::Render { .. })`);
/// [`Error::cluster_error`] finds a cluster error wherever it sits. The
/// others are the facade's own, with Helm's wording where Helm has one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A cluster request failed (boxed: it is the largest error;
    /// [`Error::cluster_error`] reaches it too).
    #[error(transparent)]
    Cluster(Box<crate::cluster::ClusterError>),
    /// The release store failed, or the release's records say no (Helm's
    /// messages).
    #[error(transparent)]
    Store(#[from] crate::release::OpError),
    /// The journal failed, or another process holds the release.
    #[error(transparent)]
    Journal(#[from] crate::exec::journal::JournalError),
    /// Planning failed (a chart did not render, a read failed, ...).
    #[error(transparent)]
    Plan(#[from] crate::plan::planner::PlanError),
    /// The plan could not be applied at all (it was edited, made for
    /// another target, or is stale); nothing was written.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// A release of an applied plan failed; with `atomic` it was rolled
    /// back (or uninstalled). `report` says what happened to every release
    /// of the plan.
    #[error("release {release} failed: {message}")]
    Failed {
        /// `namespace/name`.
        release: String,
        /// The failure, as recorded.
        message: String,
        /// The executor's report, when a plan was applied.
        report: Option<Box<Report>>,
    },
    /// A release cannot go ahead (objects owned by another release, ...).
    #[error("release {release} is blocked: {message}")]
    Blocked {
        /// `namespace/name`.
        release: String,
        /// Helm's error.
        message: String,
    },
    /// The release has no record.
    #[error("release {release}: release: not found")]
    NotFound {
        /// `namespace/name`.
        release: String,
    },
    /// An install of a name that has records (Helm's
    /// `cannot re-use a name that is still in use`).
    #[error("release {release}: cannot re-use a name that is still in use (status {status})")]
    NameInUse {
        /// `namespace/name`.
        release: String,
        /// The newest record's status.
        status: Status,
    },
    /// An upgrade of a release that is not installed.
    #[error("release {release} has no deployed releases")]
    NotDeployed {
        /// `namespace/name`.
        release: String,
    },
    /// Another operation is in progress on the release.
    #[error("release {release}: another operation (install/upgrade/rollback) is in progress")]
    Pending {
        /// `namespace/name`.
        release: String,
    },
    /// A rollback to a revision that does not exist.
    #[error("release {release} has no {revision} version")]
    NoRevision {
        /// `namespace/name`.
        release: String,
        /// The revision asked for.
        revision: u64,
    },
    /// A chart did not load ([`crate::chart::load`]), so that `?` works on
    /// it in a function that returns this error.
    #[error(transparent)]
    Chart(#[from] crate::chart::LoadError),
    /// A chart reference could not be resolved or fetched
    /// ([`crate::source::resolve`]: a repository, registry or URL).
    #[error(transparent)]
    Source(#[from] crate::source::resolve::SourceError),
    /// A component did not become a chart
    /// ([`crate::chart::chart_from_component`]).
    #[error(transparent)]
    Component(#[from] crate::chart::ComponentError),
    /// The task that ran the call panicked or its runtime shut down.
    #[error("the rudder task did not finish: {0}")]
    Task(String),
}

impl From<crate::cluster::ClusterError> for Error {
    fn from(e: crate::cluster::ClusterError) -> Self {
        Error::Cluster(Box::new(e))
    }
}

impl From<crate::release::StoreError> for Error {
    fn from(e: crate::release::StoreError) -> Self {
        Error::Store(crate::release::OpError::Store(e))
    }
}

impl Error {
    /// A report whose releases all succeeded, or [`Error::Failed`] for its
    /// first failure.
    pub(crate) fn check(report: Report) -> Result<Report, Error> {
        if report.success() {
            return Ok(report);
        }
        let failed = report
            .releases
            .iter()
            .find(|r| r.error.is_some())
            .or_else(|| report.releases.iter().find(|r| !report_ok(&r.outcome)));
        let (release, message) = match failed {
            Some(r) => (
                r.release.clone(),
                r.error.clone().unwrap_or_else(|| r.outcome.to_string()),
            ),
            None => (String::new(), "the plan did not succeed".into()),
        };
        Err(Error::Failed {
            release,
            message,
            report: Some(Box::new(report)),
        })
    }

    /// The cluster error under this one, if a cluster request is what
    /// failed: to tell an unreachable cluster from a forbidden request or a
    /// field conflict, wherever the planner, executor or store met it.
    pub fn cluster_error(&self) -> Option<&crate::cluster::ClusterError> {
        use crate::cluster::ClusterError;
        let mut cur: Option<&(dyn std::error::Error + 'static)> = match self {
            Error::Cluster(e) => return Some(e.as_ref()),
            Error::Store(e) => Some(e),
            Error::Journal(e) => Some(e),
            Error::Plan(e) => Some(e),
            Error::Exec(e) => Some(e),
            _ => None,
        };
        while let Some(e) = cur {
            if let Some(c) = e.downcast_ref::<ClusterError>() {
                return Some(c);
            }
            cur = e.source();
        }
        None
    }

    /// The executor's report, for [`Error::Failed`] after an apply.
    pub fn report(&self) -> Option<&Report> {
        match self {
            Error::Failed { report, .. } => report.as_deref(),
            _ => None,
        }
    }
}

fn report_ok<T: std::fmt::Display>(outcome: &T) -> bool {
    matches!(
        outcome.to_string().as_str(),
        "installed" | "upgraded" | "noop" | "uninstalled"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync_static<T: Send + Sync + 'static>() {}

    #[test]
    fn error_is_send_sync_static() {
        assert_send_sync_static::<Error>();
    }
}
