//! The first phase of a release's plan: the store's history decides the
//! release action, the revision the plan writes, and the revision its diff
//! starts from (the "Actions" of the [planner](super)). A release that is
//! only removed (uninstalled, or absent and never installed) is planned
//! here whole.
use super::documents::parse_record_manifest;
use super::prune::{removal, sort_prune};
use super::record::{digest, release_plan, values_digest};
use super::{Draft, PlanError, Planner};
use crate::plan::input::DesiredRelease;
use crate::plan::model::*;
use crate::release::{self, Release, Status};

/// What the store's history says of a release: where the plan starts.
pub(super) struct Start<'h> {
    /// Every record of the release, oldest first.
    pub(super) history: &'h [Release],
    /// The newest record.
    pub(super) last: Option<&'h Release>,
    /// The newest deployed record.
    pub(super) deployed: Option<&'h Release>,
    /// The revision the plan writes.
    pub(super) next: u64,
    /// The release action (a `noop` upgrade is found last).
    pub(super) action: ReleaseAction,
    /// Why.
    pub(super) reason: String,
    /// The revision the diff starts from.
    pub(super) base: Option<&'h Release>,
}

impl Planner<'_> {
    /// The release's records, oldest first. An unreadable newest record
    /// refuses the plan: building on the revision before it would rewrite
    /// history; so does a last revision no store may follow.
    pub(super) fn history(&self, d: &DesiredRelease) -> Result<Vec<Release>, PlanError> {
        let store_err = |source| PlanError::Store {
            release: d.reference(),
            source: Box::new(source),
        };
        let mut history =
            match release::Releases::new(self.store).history_checked(&d.namespace, &d.name) {
                Ok(h) => h,
                Err(release::OpError::Store(release::StoreError::NotFound)) => Vec::new(),
                Err(e) => return Err(store_err(e)),
            };
        history.sort_by_key(|r| r.version);
        // A revision no store may hold could never be finished: refuse the
        // plan rather than leave a pending record behind.
        let last = history.last();
        if let Some(l) = last.filter(|l| release::store::check_revision(l.version + 1).is_err()) {
            return Err(store_err(release::OpError::NoNextRevision {
                name: l.name.clone(),
                last: l.version,
            }));
        }
        Ok(history)
    }
}

impl<'h> Start<'h> {
    /// The release action and the revision the diff starts from, from the
    /// history (oldest first) and whether the file marks the release absent.
    pub(super) fn choose(d: &DesiredRelease, history: &'h [Release]) -> Start<'h> {
        let last = history.last();
        let deployed = history
            .iter()
            .rev()
            .find(|r| r.info.status == Status::Deployed);
        let next = last.map_or(1, |l| l.version + 1);
        let (action, reason, base): (ReleaseAction, String, Option<&Release>) = match last {
            None if d.absent => (
                ReleaseAction::Noop,
                "not installed, and the file marks it absent".into(),
                None,
            ),
            None => (ReleaseAction::Install, "no release record".into(), None),
            Some(l) if d.absent => {
                if l.info.status == Status::Uninstalled {
                    (
                        ReleaseAction::Noop,
                        format!("already uninstalled (revision {})", l.version),
                        None,
                    )
                } else {
                    (
                        ReleaseAction::Uninstall,
                        "the file marks the release absent".into(),
                        deployed.or(Some(l)),
                    )
                }
            }
            Some(l) if l.info.status.is_pending() => (
                ReleaseAction::Recover,
                format!(
                    "revision {} is stuck in {}: an earlier run was interrupted; it is settled first, then the release is upgraded{}",
                    l.version,
                    l.info.status.as_str(),
                    deployed.map_or(String::new(), |d| format!(" from revision {}", d.version))
                ),
                deployed,
            ),
            Some(l) if l.info.status == Status::Uninstalled => (
                ReleaseAction::Install,
                format!(
                    "revision {} is uninstalled (history kept): installed as revision {next}",
                    l.version
                ),
                None,
            ),
            Some(l) if l.info.status == Status::Failed => match deployed {
                Some(dep) => (
                    ReleaseAction::Upgrade,
                    format!(
                        "revision {} failed: upgrading from the last deployed revision {}",
                        l.version, dep.version
                    ),
                    Some(dep),
                ),
                None => (
                    ReleaseAction::Upgrade,
                    format!(
                        "revision {} failed and none is deployed: upgrading from it",
                        l.version
                    ),
                    Some(l),
                ),
            },
            Some(l) => (
                ReleaseAction::Upgrade,
                "new revision".into(),
                deployed.or(Some(l)),
            ),
        };
        Start {
            history,
            last,
            deployed,
            next,
            action,
            reason,
            base,
        }
    }

    /// Whether the release is only removed: nothing renders.
    pub(super) fn removes_only(&self, d: &DesiredRelease) -> bool {
        self.action == ReleaseAction::Uninstall || (self.action == ReleaseAction::Noop && d.absent)
    }

    /// The preconditions on the store: the newest record as it is now.
    pub(super) fn preconditions(&self) -> Preconditions {
        Preconditions {
            last_record: self.last.map(|l| RecordPrecondition {
                revision: l.version,
                status: l.info.status.as_str().to_string(),
            }),
            objects: Vec::new(),
        }
    }

    /// The revision the plan starts from.
    pub(super) fn from(&self) -> Option<FromRevision> {
        self.base_revision("", "")
    }

    /// [`Start::from`], where a base manifest equal to `manifest` (whose
    /// digest is `manifest_digest`) is not hashed again.
    pub(super) fn base_revision(
        &self,
        manifest: &str,
        manifest_digest: &str,
    ) -> Option<FromRevision> {
        self.base.map(|b| FromRevision {
            revision: b.version,
            status: b.info.status.as_str().to_string(),
            chart: b.chart_label(),
            app_version: b.app_version(),
            manifest_digest: if !manifest_digest.is_empty() && b.manifest == manifest {
                manifest_digest.to_string()
            } else {
                digest(b.manifest.as_bytes())
            },
            values_digest: values_digest(&b.config),
        })
    }
}

impl Draft<'_, '_> {
    /// The plan of a release that is only removed: an uninstall deletes
    /// the base's objects this release owns live (keeps the others), in
    /// reverse install order; an absent release never installed is a noop.
    pub(super) fn plan_removal(mut self, start: Start<'_>) -> Result<ReleasePlan, PlanError> {
        let mut objects = Vec::new();
        if start.action == ReleaseAction::Uninstall {
            let no_cache = foldhash::HashMap::default();
            let old_docs = match start.base {
                Some(b) => parse_record_manifest(&self.rref, b, &no_cache)?,
                None => Vec::new(),
            };
            for doc in old_docs.iter().rev() {
                let value = doc.parsed();
                let key = self.qualify(value)?;
                let live = self.get(&key.object_key())?;
                let d = self.d;
                objects.push(removal(&key, live.as_deref(), &d.name, &d.namespace, value));
            }
            sort_prune(&mut objects);
        }
        let base = start.base;
        let to = ToRevision {
            revision: start.last.map_or(0, |l| l.version),
            chart: base.map_or(String::new(), Release::chart_label),
            app_version: base.map_or(String::new(), Release::app_version),
            manifest_digest: base.map_or(String::new(), |b| digest(b.manifest.as_bytes())),
            values_digest: base.map_or(String::new(), |b| values_digest(&b.config)),
        };
        let from = start.from();
        Ok(ReleasePlan {
            objects,
            preconditions: self.preconditions,
            ..release_plan(self.d, start.action, start.reason, from, to)
        })
    }
}
