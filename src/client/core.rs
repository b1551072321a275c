//! The blocking core that both clients drive: one opened store, cluster
//! and journal, and the operations on them.
use super::Error;
use crate::exec::{
    CrossRelease, Event, ExecError, ExecOptions, Executor, Progress, Report, WallClock,
};
use crate::plan::planner::{PlanOptions, Planner};
use crate::plan::{DesiredRelease, Plan, ReleaseOptions};
use crate::release::{ListQuery, Release, Releases, Status};
use crate::targets::Targets;
use crate::yaml::Node;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A progress callback.
pub(crate) type ProgressFn = Arc<dyn Fn(&Event) + Send + Sync>;

/// Sends the executor's events to the caller's callback.
struct Sink<'a>(Option<&'a ProgressFn>);

impl Progress for Sink<'_> {
    fn event(&self, e: &Event) {
        if let Some(f) = self.0 {
            f(e)
        }
    }
}

/// How many times [`Core::sync`] plans again when the cluster moved between
/// its plan and its apply.
const STALE_RETRIES: usize = 3;

/// The opened targets and the settings every operation uses.
pub(crate) struct Core {
    pub(crate) targets: Targets,
    pub(crate) progress: Option<ProgressFn>,
    pub(crate) exec: ExecOptions,
}

impl Core {
    fn executor<'a>(&'a self, clock: &'a WallClock, sink: &'a Sink<'a>) -> Executor<'a> {
        self.targets
            .executor(clock)
            .with_progress(sink)
            .with_options(self.exec.clone())
    }

    fn planner(&self) -> Planner<'_> {
        let t = &self.targets;
        let mut opts = PlanOptions::default();
        if self.exec.cross_release == CrossRelease::AtomicPlan {
            // The plan says it is one transaction, and shows rollback points.
            opts.cross_release = crate::plan::planner::ATOMIC_PLAN.into();
        }
        Planner::new(t.store.as_ref(), &t.store_url, t.cluster.as_ref()).with_options(opts)
    }

    /// Settles a run of this release that a crash interrupted (finishes
    /// it or rolls it back, from the journal).
    fn recover(&self, namespace: &str, name: &str) -> Result<(), Error> {
        let clock = WallClock::default();
        let sink = Sink(self.progress.as_ref());
        self.executor(&clock, &sink).recover(namespace, name)?;
        Ok(())
    }

    pub(crate) fn plan(&self, releases: &[DesiredRelease]) -> Result<Plan, Error> {
        Ok(self.planner().plan(releases)?)
    }

    /// Unwinds the atomic plans a crash interrupted.
    fn recover_transactions(&self) -> Result<(), Error> {
        let clock = WallClock::default();
        let sink = Sink(self.progress.as_ref());
        self.executor(&clock, &sink).recover_transactions()?;
        Ok(())
    }

    pub(crate) fn apply(&self, plan: &Plan) -> Result<Report, Error> {
        self.recover_transactions()?;
        let clock = WallClock::default();
        let sink = Sink(self.progress.as_ref());
        let report = self.executor(&clock, &sink).apply(plan)?;
        Error::check(report)
    }

    pub(crate) fn sync(&self, releases: &[DesiredRelease]) -> Result<Report, Error> {
        self.recover_transactions()?;
        for r in releases {
            self.recover(&r.namespace, &r.name)?;
        }
        let clock = WallClock::default();
        let sink = Sink(self.progress.as_ref());
        let mut tries = 0;
        loop {
            let plan = self.plan(releases)?;
            match self.executor(&clock, &sink).apply(&plan) {
                // Nothing was written: the cluster moved between the plan
                // and its apply (a controller updating a status), so plan
                // again.
                Err(ExecError::Stale(_)) if tries < STALE_RETRIES => tries += 1,
                r => return Error::check(r?),
            }
        }
    }

    /// Every record, oldest first; empty when there is none.
    fn history(&self, namespace: &str, name: &str) -> Result<Vec<Release>, Error> {
        let mut h = self.targets.store.history(namespace, name)?;
        h.sort_by_key(|r| r.version);
        Ok(h)
    }

    pub(crate) fn history_of(&self, namespace: &str, name: &str) -> Result<Vec<Release>, Error> {
        let h = self.history(namespace, name)?;
        if h.is_empty() {
            return Err(Error::NotFound {
                release: format!("{namespace}/{name}"),
            });
        }
        Ok(h)
    }

    /// Every record, oldest first; empty when there is none.
    pub(crate) fn history_sorted(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Vec<Release>, Error> {
        self.history(namespace, name)
    }

    pub(crate) fn status(&self, namespace: &str, name: &str) -> Result<Release, Error> {
        let mut h = self.history_of(namespace, name)?;
        h.pop().ok_or_else(|| Error::NotFound {
            release: format!("{namespace}/{name}"),
        })
    }

    pub(crate) fn list(&self, namespace: Option<&str>) -> Result<Vec<Release>, Error> {
        let q = ListQuery {
            namespace: namespace.map(str::to_string),
            all: true,
            ..ListQuery::default()
        };
        Ok(Releases::new(self.targets.store.as_ref()).list(&q)?)
    }

    pub(crate) fn values(
        &self,
        namespace: &str,
        name: &str,
        all: bool,
    ) -> Result<BTreeMap<String, Node>, Error> {
        let last = self.status(namespace, name)?;
        Ok(if all {
            crate::release::view::computed_values(&last)
        } else {
            last.config
        })
    }

    /// Plans one release as Helm's install and upgrade do (always a new
    /// revision), applies it and returns its newest record.
    fn run_one(&self, d: DesiredRelease) -> Result<Release, Error> {
        let (ns, name) = (d.namespace.clone(), d.name.clone());
        let plan = self
            .planner()
            .with_options(PlanOptions {
                always_revision: true,
                ..PlanOptions::default()
            })
            .plan(std::slice::from_ref(&d))?;
        if let Some(b) = plan.blocked().next() {
            return Err(Error::Blocked {
                release: format!("{ns}/{name}"),
                message: b.blocked.clone().unwrap_or_default(),
            });
        }
        self.apply(&plan)?;
        self.status(&ns, &name)
    }

    pub(crate) fn install(&self, d: DesiredRelease) -> Result<Release, Error> {
        self.recover(&d.namespace, &d.name)?;
        if let Some(last) = self.history(&d.namespace, &d.name)?.last() {
            return Err(Error::NameInUse {
                release: format!("{}/{}", d.namespace, d.name),
                status: last.info.status,
            });
        }
        self.run_one(d)
    }

    pub(crate) fn upgrade(&self, d: DesiredRelease, install: bool) -> Result<Release, Error> {
        self.recover(&d.namespace, &d.name)?;
        let last = self.history(&d.namespace, &d.name)?.pop();
        let installing = last
            .as_ref()
            .is_none_or(|l| l.info.status == Status::Uninstalled);
        if installing && !install {
            return Err(Error::NotDeployed {
                release: format!("{}/{}", d.namespace, d.name),
            });
        }
        if last.as_ref().is_some_and(|l| l.info.status.is_pending()) {
            return Err(Error::Pending {
                release: format!("{}/{}", d.namespace, d.name),
            });
        }
        self.run_one(d)
    }

    pub(crate) fn rollback(
        &self,
        namespace: &str,
        name: &str,
        revision: Option<u64>,
        options: &ReleaseOptions,
    ) -> Result<Release, Error> {
        let release = format!("{namespace}/{name}");
        self.history_of(namespace, name)?;
        self.recover(namespace, name)?;
        let hist = self.history(namespace, name)?;
        let last = hist.last().ok_or_else(|| Error::NotFound {
            release: release.clone(),
        })?;
        let to = revision
            .filter(|r| *r > 0)
            .unwrap_or(last.version.saturating_sub(1));
        if !hist.iter().any(|r| r.version == to) {
            return Err(Error::NoRevision {
                release,
                revision: to,
            });
        }
        if last.info.status.is_pending() {
            return Err(Error::Pending { release });
        }
        let clock = WallClock::default();
        let sink = Sink(self.progress.as_ref());
        let mut j = self.targets.journal.lock(namespace, name)?;
        self.executor(&clock, &sink)
            .rollback_release(namespace, name, to, options, &mut j, "rudder rollback")
            .map_err(operation_error)?;
        self.status(namespace, name)
    }

    pub(crate) fn uninstall(
        &self,
        namespace: &str,
        name: &str,
        keep_history: bool,
    ) -> Result<(), Error> {
        self.history_of(namespace, name)?;
        self.recover(namespace, name)?;
        let clock = WallClock::default();
        let sink = Sink(self.progress.as_ref());
        let mut j = self.targets.journal.lock(namespace, name)?;
        self.executor(&clock, &sink)
            .uninstall_release(namespace, name, keep_history, None, &mut j)
            .map_err(operation_error)
    }
}

/// A failed rollback or uninstall is [`Error::Failed`], like a failed
/// release of a plan; the executor's other errors stay what they are.
fn operation_error(e: ExecError) -> Error {
    match e {
        ExecError::ReleaseFailed { release, message } => Error::Failed {
            release,
            message,
            report: None,
        },
        e => Error::Exec(e),
    }
}
