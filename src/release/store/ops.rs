//! The record lifecycle on top of any [`Store`]: the reads Helm's
//! `storage.Storage` offers (history, last, deployed, list) and the writes
//! Helm's install, upgrade, rollback and uninstall actions make, so an
//! executor only has to talk to the cluster in between.
//!
//! Every write is a create of a new revision (which fails if another writer
//! created it first) or a compare-and-swap update of a record as it was
//! read, so two concurrent upgraders of one release cannot both proceed: the
//! loser gets [`OpError::Store`] with [`StoreError::AlreadyExists`] or
//! [`StoreError::Conflict`].
use super::{Skipped, Store, StoreError};
use crate::chart::Chart;
use crate::release::codec::{self, CodecError};
use crate::release::model::{Hook, Info, Release, Status};
use crate::release::time::HelmTime;
use crate::yaml::Node;
use std::collections::BTreeMap;

/// Errors of the record lifecycle, with Helm's messages.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Labels were invalid.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// No revision at all.
    #[error("no revision for release {0:?}")]
    NoRevision(String),
    /// The release has no deployed revision to upgrade from.
    #[error("{0:?} has no deployed releases")]
    NoDeployed(String),
    /// Another operation is running.
    #[error("another operation (install/upgrade/rollback) is in progress")]
    Pending,
    /// Install of a name whose release still exists.
    #[error("cannot re-use a name that is still in use")]
    NameInUse,
    /// Rollback target missing.
    #[error("release has no {0} version")]
    NoVersion(u64),
    /// The release was already uninstalled with `--keep-history`.
    #[error("the release named {0:?} is already deleted")]
    AlreadyDeleted(String),
    /// `--filter` is not a valid regular expression.
    #[error("{0}")]
    Filter(String),
    /// `--selector` is not a valid label selector.
    #[error(transparent)]
    Selector(#[from] crate::release::selector::SelectorError),
    /// A revision exists but cannot be read (for the newest revision, or
    /// one asked for by number).
    #[error("release record {} ({}) cannot be read: {}", .0.key, .0.location, .0.reason)]
    Unreadable(Box<Skipped>),
    /// The release is at the highest revision a store keeps
    /// ([`super::MAX_REVISION`]): a new one could not be finished, so none
    /// is written.
    #[error("release {name:?} is at revision {last}, the highest there is: no new revision can be recorded")]
    NoNextRevision {
        /// The release.
        name: String,
        /// Its newest revision.
        last: u64,
    },
    /// Pruning old revisions failed.
    #[error("encountered {count} deletion errors. First is: {first}")]
    Prune {
        /// How many deletes failed.
        count: usize,
        /// The first failure.
        first: String,
    },
}

/// What an operation's cluster work came to.
pub type Outcome = Result<(), String>;

/// Which releases `list` shows, in which order (Helm's `action.List`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListQuery {
    /// `None` lists all namespaces (`-A`).
    pub namespace: Option<String>,
    /// Statuses to show; empty means Helm's default (deployed and failed).
    pub statuses: Vec<Status>,
    /// `-a`: every status.
    pub all: bool,
    /// `--filter`: a regular expression release names must match.
    pub filter: Option<String>,
    /// `-d`: sort by last deployment (seconds), oldest first.
    pub by_date: bool,
    /// `-r`: reverse the order.
    pub reverse: bool,
    /// `--max`: at most this many (0: no limit).
    pub limit: usize,
    /// `--offset`: skip this many first.
    pub offset: usize,
    /// `--selector`: a label selector the shown releases' labels must
    /// match (applied after the status filter, before sorting).
    pub selector: Option<String>,
}

/// What a new revision holds: the fields an install or upgrade renders,
/// handed to [`Releases::begin_install`] and [`Releases::begin_upgrade`].
/// [`RevisionContent::from_render`] makes one from a render.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RevisionContent {
    /// The chart (without subcharts in the record, as Helm stores it).
    pub chart: Chart,
    /// The user-supplied values.
    pub config: BTreeMap<String, Node>,
    /// The rendered manifest.
    pub manifest: String,
    /// The hooks.
    pub hooks: Vec<Hook>,
    /// The rendered NOTES.txt.
    pub notes: String,
    /// User labels (`--labels`); for upgrades merged over the last revision's.
    pub labels: BTreeMap<String, String>,
}

impl RevisionContent {
    /// The revision a render makes, as Helm records it: the chart without
    /// its subcharts, the user's values, the manifest that `helm get
    /// manifest` shows (templates in install order, CRDs of `crds/` left
    /// out), the hooks with their events, weights and delete policies, and
    /// the notes. Labels start empty.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use rudder::chart::{Chart, ChartFile, Metadata};
    /// use rudder::release::store::memory::MemoryStore;
    /// use rudder::release::{HistoryMax, Releases, RevisionContent, Status};
    /// use rudder::render::{render, RenderOptions};
    /// let chart = Chart {
    ///     metadata: Metadata {
    ///         api_version: "v2".into(),
    ///         name: "web".into(),
    ///         version: "1.0.0".into(),
    ///         ..Metadata::default()
    ///     },
    ///     templates: vec![
    ///         ChartFile {
    ///             name: "templates/cm.yaml".into(),
    ///             data: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n".into(),
    ///         },
    ///         ChartFile {
    ///             name: "templates/job.yaml".into(),
    ///             data: "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    helm.sh/hook: pre-install\n".into(),
    ///         },
    ///     ],
    ///     ..Chart::default()
    /// };
    /// let opts = RenderOptions { release_name: "web".into(), ..RenderOptions::default() };
    /// let rendered = render(&chart, &Default::default(), &opts)?;
    /// let content = RevisionContent::from_render(&chart, Default::default(), &rendered);
    /// assert!(content.manifest.starts_with("---\n# Source: web/templates/cm.yaml\n"));
    /// assert_eq!(content.hooks[0].events, ["pre-install"]);
    ///
    /// // Record it as Helm's install does: pending-install, then deployed.
    /// let store = MemoryStore::new();
    /// let releases = Releases::new(&store);
    /// let pending = releases.begin_install("default", "web", content.clone(), false)?;
    /// assert_eq!(pending.info.status, Status::PendingInstall);
    /// let done = releases.finish_install(&pending, Ok(()), None)?;
    /// assert_eq!((done.version, done.info.status), (1, Status::Deployed));
    /// assert_eq!(done.info.description, "Install complete");
    ///
    /// // An upgrade whose wait failed: revision 2 is failed, 1 stays deployed.
    /// let base = releases.upgrade_base("default", "web")?;
    /// let pending = releases.begin_upgrade(&base, content, HistoryMax::default())?;
    /// let failed = releases.finish_upgrade(&base, &pending, Err("timed out".into()), None)?;
    /// assert_eq!(failed.info.description, "Upgrade \"web\" failed: timed out");
    /// assert_eq!(releases.deployed("default", "web")?.version, 1);
    /// # Ok(()) }
    /// ```
    pub fn from_render(
        chart: &Chart,
        config: BTreeMap<String, Node>,
        rendered: &crate::render::Rendered,
    ) -> RevisionContent {
        let mut chart = chart.clone();
        chart.dependencies.clear();
        RevisionContent {
            chart,
            config,
            manifest: crate::render::output::release_manifest(rendered, false),
            hooks: rendered.hooks.iter().map(Hook::from).collect(),
            notes: rendered.notes.clone(),
            labels: BTreeMap::new(),
        }
    }
}

/// The records an upgrade starts from (Helm's `prepareUpgrade`).
#[derive(Debug, Clone, PartialEq)]
pub struct UpgradeBase {
    /// The newest revision, any status.
    pub last: Release,
    /// The revision being replaced: the deployed one, or the last when it
    /// failed or was superseded and nothing is deployed.
    pub current: Release,
}

/// History-max setting: Helm prunes on upgrade and rollback only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryMax(pub usize);

impl Default for HistoryMax {
    /// Helm's default, 10.
    fn default() -> Self {
        HistoryMax(10)
    }
}

/// The revision after `last`, when a store may hold it.
fn next_revision(last: &Release) -> Result<u64, OpError> {
    last.version
        .checked_add(1)
        .filter(|&v| super::check_revision(v).is_ok())
        .ok_or_else(|| OpError::NoNextRevision {
            name: last.name.clone(),
            last: last.version,
        })
}

/// The skipped record with the highest revision.
fn newest_skipped(skipped: &[Skipped]) -> Option<&Skipped> {
    skipped.iter().max_by_key(|s| s.version)
}

/// Release records of one store, read and written as Helm does.
pub struct Releases<'a> {
    store: &'a dyn Store,
}

impl<'a> Releases<'a> {
    /// Wraps a store.
    pub fn new(store: &'a dyn Store) -> Self {
        Releases { store }
    }

    /// Every readable revision, oldest first; `release: not found` when
    /// there is none. Unreadable records are skipped: see
    /// [`Releases::history_reporting`] to learn which.
    pub fn history(&self, namespace: &str, name: &str) -> Result<Vec<Release>, OpError> {
        Ok(self.history_reporting(namespace, name)?.0)
    }

    /// [`Releases::history`], plus the records that exist but could not be
    /// read, for the caller to report. When no revision is readable at all,
    /// the newest unreadable one is the error.
    pub fn history_reporting(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<(Vec<Release>, Vec<Skipped>), OpError> {
        let (h, skipped) = self.store.history_reporting(namespace, name)?;
        if h.is_empty() {
            return Err(match newest_skipped(&skipped) {
                Some(s) => OpError::Unreadable(Box::new(s.clone())),
                None => StoreError::NotFound.into(),
            });
        }
        Ok((h, skipped))
    }

    /// Every revision, oldest first, for a writer or planner to build on:
    /// [`OpError::Unreadable`] when the newest revision in the store cannot
    /// be read (building on the one before it would rewrite history), and
    /// `release: not found` when there is none. Older unreadable revisions
    /// are returned in the second element, for the caller to report.
    pub fn history_checked_reporting(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<(Vec<Release>, Vec<Skipped>), OpError> {
        let (h, skipped) = self.history_reporting(namespace, name)?;
        let newest = h.last().map_or(0, |r| r.version);
        if let Some(s) = newest_skipped(&skipped).filter(|s| s.version > newest) {
            return Err(OpError::Unreadable(Box::new(s.clone())));
        }
        Ok((h, skipped))
    }

    /// [`Releases::history_checked_reporting`] without the report.
    pub fn history_checked(&self, namespace: &str, name: &str) -> Result<Vec<Release>, OpError> {
        Ok(self.history_checked_reporting(namespace, name)?.0)
    }

    /// The newest revision (any status); [`OpError::Unreadable`] when that
    /// revision's record cannot be read.
    pub fn last(&self, namespace: &str, name: &str) -> Result<Release, OpError> {
        self.history_checked(namespace, name)?
            .pop()
            .ok_or_else(|| OpError::NoRevision(name.to_string()))
    }

    /// One revision; `version` 0 means the newest (as `helm get --revision`).
    /// An unreadable record is an error naming it.
    pub fn get(&self, namespace: &str, name: &str, version: u64) -> Result<Release, OpError> {
        Ok(self.get_reporting(namespace, name, version)?.0)
    }

    /// [`Releases::get`], plus the unreadable records skipped on the way
    /// (older revisions, when looking for the newest).
    pub fn get_reporting(
        &self,
        namespace: &str,
        name: &str,
        version: u64,
    ) -> Result<(Release, Vec<Skipped>), OpError> {
        if version == 0 {
            let (mut h, skipped) = self.history_checked_reporting(namespace, name)?;
            let last = h
                .pop()
                .ok_or_else(|| OpError::NoRevision(name.to_string()))?;
            return Ok((last, skipped));
        }
        Ok((self.store.get(namespace, name, version)?, Vec::new()))
    }

    /// Every deployed revision, newest first.
    pub fn deployed_all(&self, namespace: &str, name: &str) -> Result<Vec<Release>, OpError> {
        let mut d: Vec<Release> = self
            .store
            .history(namespace, name)?
            .into_iter()
            .filter(|r| r.info.status == Status::Deployed)
            .collect();
        if d.is_empty() {
            return Err(OpError::NoDeployed(name.to_string()));
        }
        d.reverse();
        Ok(d)
    }

    /// The newest deployed revision.
    pub fn deployed(&self, namespace: &str, name: &str) -> Result<Release, OpError> {
        Ok(self.deployed_all(namespace, name)?.remove(0))
    }

    /// `helm list`: the newest revision of each release, filtered by status,
    /// sorted by name (then namespace).
    pub fn list(&self, q: &ListQuery) -> Result<Vec<Release>, OpError> {
        Ok(self.list_reporting(q)?.0)
    }

    /// [`Releases::list`], plus the records skipped as unreadable.
    pub fn list_reporting(&self, q: &ListQuery) -> Result<(Vec<Release>, Vec<Skipped>), OpError> {
        let (mut all, skipped) = self.store.list_all_reporting(q.namespace.as_deref())?;
        if let Some(f) = &q.filter {
            let re = regex::Regex::new(f).map_err(|e| OpError::Filter(e.to_string()))?;
            all.retain(|r| re.is_match(&r.name));
        }
        let statuses: Vec<Status> = if q.all {
            Status::ALL.to_vec()
        } else if q.statuses.is_empty() {
            vec![Status::Deployed, Status::Failed]
        } else {
            q.statuses.clone()
        };
        // Helm shows every revision when only superseded ones are asked
        // for (the latest of a release is by definition never superseded).
        let only_superseded = !q.all && q.statuses == [Status::Superseded];
        let mut out: Vec<Release> = Vec::new();
        if only_superseded {
            out = all;
        } else {
            // The newest revision per release, in the store's order.
            let mut at: BTreeMap<(String, String), usize> = BTreeMap::new();
            for r in all {
                let k = (r.namespace.clone(), r.name.clone());
                match at.get(&k) {
                    Some(&i) if out[i].version > r.version => {}
                    Some(&i) => out[i] = r,
                    None => {
                        at.insert(k, out.len());
                        out.push(r);
                    }
                }
            }
        }
        out.retain(|r| statuses.contains(&r.info.status));
        if let Some(sel) = &q.selector {
            let sel = crate::release::selector::Selector::parse(sel)?;
            out.retain(|r| sel.matches(&r.labels));
        }
        // Helm sorts by name only; its sort is stable at these sizes, so
        // ties keep the store's order (database row order for SQL).
        if q.by_date {
            out.sort_by_key(|r| r.info.last_deployed.unix());
        } else {
            out.sort_by(|a, b| a.name.cmp(&b.name));
        }
        if q.reverse {
            out.reverse();
        }
        if q.offset >= out.len() {
            return Ok((Vec::new(), skipped));
        }
        let mut out = out.split_off(q.offset);
        if q.limit > 0 {
            out.truncate(q.limit);
        }
        Ok((out, skipped))
    }

    fn record(&self, read: &Release, mut new: Release) -> Result<Release, OpError> {
        new.labels = read.labels.clone();
        self.store.update(read, &new)?;
        Ok(new)
    }

    /// Deletes the oldest revisions so that, with the one about to be
    /// created, at most `max` remain; never the newest deployed one
    /// (Helm's `removeLeastRecent`).
    pub fn prune(&self, namespace: &str, name: &str, max: HistoryMax) -> Result<(), OpError> {
        if max.0 == 0 {
            return Ok(());
        }
        let keep = max.0 - 1;
        let h = self.store.history(namespace, name)?;
        if h.len() <= keep {
            return Ok(());
        }
        let deployed = h
            .iter()
            .rev()
            .find(|r| r.info.status == Status::Deployed)
            .map(|r| r.version);
        let mut to_delete = Vec::new();
        for r in &h {
            if h.len() - to_delete.len() <= keep {
                break;
            }
            if Some(r.version) == deployed {
                continue;
            }
            to_delete.push(r.version);
        }
        let errs: Vec<String> = to_delete
            .into_iter()
            .filter_map(|v| self.store.delete(namespace, name, v).err())
            .map(|e| e.to_string())
            .collect();
        if let Some(first) = errs.first() {
            return Err(OpError::Prune {
                count: errs.len(),
                first: first.clone(),
            });
        }
        Ok(())
    }

    /// Starts an install: checks the name is free (or, with `replace`, that
    /// the last revision is uninstalled or failed, which is then superseded
    /// unless failed), and stores revision 1 (or last+1) as `pending-install`.
    pub fn begin_install(
        &self,
        namespace: &str,
        name: &str,
        r: RevisionContent,
        replace: bool,
    ) -> Result<Release, OpError> {
        codec::check_user_labels(&r.labels)?;
        let hist = self.store.history(namespace, name)?;
        let mut version = 1;
        if let Some(last) = hist.last() {
            let reusable = matches!(last.info.status, Status::Uninstalled | Status::Failed);
            if !(replace && reusable) {
                return Err(OpError::NameInUse);
            }
            version = next_revision(last)?;
            if last.info.status != Status::Failed {
                let mut s = last.clone();
                s.info.status = Status::Superseded;
                s.info.description = "superseded by new release".into();
                self.record(last, s)?;
            }
        }
        let now = HelmTime::now();
        let rel = Release {
            name: name.to_string(),
            info: Info {
                first_deployed: now,
                last_deployed: now,
                deleted: HelmTime::ZERO,
                description: "Initial install underway".into(),
                status: Status::PendingInstall,
                notes: r.notes,
            },
            chart: Some(r.chart),
            config: r.config,
            manifest: r.manifest,
            hooks: r.hooks,
            version,
            namespace: namespace.to_string(),
            apply_method: String::new(),
            applied: BTreeMap::new(),
            labels: r.labels,
        };
        self.store.create(&rel)?;
        Ok(self.store.get(namespace, name, version)?)
    }

    /// Ends an install: `deployed`/`Install complete` (or `description`), or
    /// `failed`/`Release "<name>" failed: <err>`.
    pub fn finish_install(
        &self,
        pending: &Release,
        outcome: Outcome,
        description: Option<&str>,
    ) -> Result<Release, OpError> {
        self.finish_install_with(pending, outcome, description, |_| {})
    }

    /// [`Releases::finish_install`], with `edit` making the last changes
    /// to the record written (rudder's executor adds
    /// [`Release::applied`]).
    pub fn finish_install_with(
        &self,
        pending: &Release,
        outcome: Outcome,
        description: Option<&str>,
        edit: impl FnOnce(&mut Release),
    ) -> Result<Release, OpError> {
        let mut n = pending.clone();
        edit(&mut n);
        match outcome {
            Ok(()) => {
                n.info.status = Status::Deployed;
                n.info.description = description.unwrap_or("Install complete").to_string();
            }
            Err(e) => {
                n.info.status = Status::Failed;
                n.info.description = format!("Release {:?} failed: {e}", n.name);
            }
        }
        self.record(pending, n)
    }

    /// Finds what an upgrade replaces (Helm's `prepareUpgrade`).
    pub fn upgrade_base(&self, namespace: &str, name: &str) -> Result<UpgradeBase, OpError> {
        let last = match self.last(namespace, name) {
            Ok(l) => l,
            Err(OpError::Store(StoreError::NotFound)) => {
                return Err(OpError::NoDeployed(name.to_string()))
            }
            Err(e) => return Err(e),
        };
        if last.info.status.is_pending() {
            return Err(OpError::Pending);
        }
        let current = if last.info.status == Status::Deployed {
            last.clone()
        } else {
            match self.deployed(namespace, name) {
                Ok(d) => d,
                Err(OpError::NoDeployed(_))
                    if matches!(last.info.status, Status::Failed | Status::Superseded) =>
                {
                    last.clone()
                }
                Err(e) => return Err(e),
            }
        };
        Ok(UpgradeBase { last, current })
    }

    /// Starts an upgrade: prunes history to `max`, then stores revision
    /// last+1 as `pending-upgrade`/`Preparing upgrade`, labels merged over
    /// the last revision's (a value `"null"` removes a label).
    pub fn begin_upgrade(
        &self,
        base: &UpgradeBase,
        r: RevisionContent,
        max: HistoryMax,
    ) -> Result<Release, OpError> {
        codec::check_user_labels(&r.labels)?;
        let mut labels = base.last.labels.clone();
        for (k, v) in r.labels {
            if v == "null" {
                labels.remove(&k);
            } else {
                labels.insert(k, v);
            }
        }
        let ns = base.current.namespace.clone();
        let rel = Release {
            name: base.current.name.clone(),
            info: Info {
                first_deployed: base.current.info.first_deployed,
                last_deployed: HelmTime::now(),
                deleted: HelmTime::ZERO,
                description: "Preparing upgrade".into(),
                status: Status::PendingUpgrade,
                notes: r.notes,
            },
            chart: Some(r.chart),
            config: r.config,
            manifest: r.manifest,
            hooks: r.hooks,
            version: next_revision(&base.last)?,
            namespace: ns.clone(),
            apply_method: String::new(),
            applied: BTreeMap::new(),
            labels,
        };
        self.prune(&ns, &rel.name, max)?;
        self.store.create(&rel)?;
        Ok(self.store.get(&ns, &rel.name, rel.version)?)
    }

    /// Ends an upgrade. Success: the replaced revision becomes `superseded`
    /// and the new one `deployed`/`Upgrade complete`. Failure: the new one
    /// becomes `failed`/`Upgrade "<name>" failed: <err>`, the replaced one is
    /// rewritten unchanged (as Helm does).
    pub fn finish_upgrade(
        &self,
        base: &UpgradeBase,
        pending: &Release,
        outcome: Outcome,
        description: Option<&str>,
    ) -> Result<Release, OpError> {
        self.finish_upgrade_with(base, pending, outcome, description, |_| {})
    }

    /// [`Releases::finish_upgrade`], with `edit` making the last changes
    /// to the record written (rudder's executor adds
    /// [`Release::applied`]).
    pub fn finish_upgrade_with(
        &self,
        base: &UpgradeBase,
        pending: &Release,
        outcome: Outcome,
        description: Option<&str>,
        edit: impl FnOnce(&mut Release),
    ) -> Result<Release, OpError> {
        let ns = &pending.namespace;
        let cur = self
            .store
            .get(ns, &base.current.name, base.current.version)?;
        let mut n = pending.clone();
        edit(&mut n);
        match outcome {
            Ok(()) => {
                let mut s = cur.clone();
                s.info.status = Status::Superseded;
                self.record(&cur, s)?;
                n.info.status = Status::Deployed;
                n.info.description = description.unwrap_or("Upgrade complete").to_string();
            }
            Err(e) => {
                self.record(&cur, cur.clone())?;
                n.info.status = Status::Failed;
                n.info.description = format!("Upgrade {:?} failed: {e}", n.name);
            }
        }
        self.record(pending, n)
    }

    /// Starts a rollback to `version` (0: the one before the last): prunes
    /// to `max`, stores a copy of the target as last+1 `pending-rollback`/
    /// `Rollback to <k>`. Returns (last, new pending record).
    pub fn begin_rollback(
        &self,
        namespace: &str,
        name: &str,
        version: u64,
        max: HistoryMax,
    ) -> Result<(Release, Release), OpError> {
        let last = self.last(namespace, name)?;
        let target_v = if version == 0 {
            last.version.saturating_sub(1)
        } else {
            version
        };
        let hist = self.history(namespace, name)?;
        if !hist.iter().any(|r| r.version == target_v) {
            return Err(OpError::NoVersion(target_v));
        }
        let prev = self.store.get(namespace, name, target_v)?;
        let rel = Release {
            name: name.to_string(),
            info: Info {
                first_deployed: last.info.first_deployed,
                last_deployed: HelmTime::now(),
                deleted: HelmTime::ZERO,
                description: format!("Rollback to {target_v}"),
                status: Status::PendingRollback,
                notes: prev.info.notes.clone(),
            },
            chart: prev.chart.clone(),
            config: prev.config.clone(),
            manifest: prev.manifest.clone(),
            hooks: prev.hooks.clone(),
            version: next_revision(&last)?,
            namespace: last.namespace.clone(),
            apply_method: prev.apply_method.clone(),
            // What an apply of a document left is a property of the text
            // and the live object, whichever revision recorded it.
            applied: prev.applied.clone(),
            labels: codec::user_labels(&prev.labels),
        };
        self.prune(namespace, name, max)?;
        self.store.create(&rel)?;
        let pending = self.store.get(namespace, name, rel.version)?;
        Ok((last, pending))
    }

    /// Ends a rollback. Success: every `deployed` revision becomes
    /// `superseded`, the new one `deployed`. Failure: the previous last
    /// becomes `superseded`, the new one `failed`/`Rollback "<n>" failed: <err>`.
    pub fn finish_rollback(
        &self,
        last: &Release,
        pending: &Release,
        outcome: Outcome,
    ) -> Result<Release, OpError> {
        let ns = &pending.namespace;
        let mut n = pending.clone();
        match outcome {
            Ok(()) => {
                for d in self.store.history(ns, &pending.name)? {
                    if d.info.status == Status::Deployed && d.version != pending.version {
                        let mut s = d.clone();
                        s.info.status = Status::Superseded;
                        self.record(&d, s)?;
                    }
                }
                n.info.status = Status::Deployed;
            }
            Err(e) => {
                let cur = self.store.get(ns, &last.name, last.version)?;
                let mut s = cur.clone();
                s.info.status = Status::Superseded;
                self.record(&cur, s)?;
                n.info.status = Status::Failed;
                n.info.description = format!("Rollback {:?} failed: {e}", n.name);
            }
        }
        self.record(pending, n)
    }

    /// Ends a rollback whose objects were written but did not become ready
    /// before the deadline. As Helm's rollback wait failure: only the new
    /// revision changes, to `failed` / `Release "<n>" failed: <err>`; the
    /// revision rolled back from and the one still `deployed` keep their
    /// statuses.
    pub fn fail_rollback_wait(&self, pending: &Release, err: &str) -> Result<Release, OpError> {
        let mut n = pending.clone();
        n.info.status = Status::Failed;
        n.info.description = format!("Release {:?} failed: {err}", n.name);
        self.record(pending, n)
    }

    /// Starts an uninstall: the last revision becomes `uninstalling` with a
    /// deletion time. When it is already `uninstalled`, purges the history
    /// (without `keep_history`) and returns `None`, or fails.
    pub fn begin_uninstall(
        &self,
        namespace: &str,
        name: &str,
        keep_history: bool,
    ) -> Result<Option<Release>, OpError> {
        let last = self.last(namespace, name)?;
        if last.info.status == Status::Uninstalled {
            if keep_history {
                return Err(OpError::AlreadyDeleted(name.to_string()));
            }
            self.purge(namespace, name)?;
            return Ok(None);
        }
        let mut n = last.clone();
        n.info.status = Status::Uninstalling;
        n.info.deleted = HelmTime::now();
        n.info.description = "Deletion in progress (or silently failed)".into();
        Ok(Some(self.record(&last, n)?))
    }

    /// Ends an uninstall: `uninstalled`/`Uninstallation complete` (or
    /// `description`); without `keep_history` every revision is deleted.
    pub fn finish_uninstall(
        &self,
        uninstalling: &Release,
        keep_history: bool,
        description: Option<&str>,
    ) -> Result<Option<Release>, OpError> {
        let ns = &uninstalling.namespace;
        if !keep_history {
            self.purge(ns, &uninstalling.name)?;
            return Ok(None);
        }
        let cur = self
            .store
            .get(ns, &uninstalling.name, uninstalling.version)?;
        let mut n = cur.clone();
        n.info.status = Status::Uninstalled;
        n.info.description = description.unwrap_or("Uninstallation complete").to_string();
        Ok(Some(self.record(&cur, n)?))
    }

    /// Deletes every revision of a release.
    pub fn purge(&self, namespace: &str, name: &str) -> Result<(), OpError> {
        for r in self.store.history(namespace, name)? {
            match self.store.delete(namespace, name, r.version) {
                Ok(_) | Err(StoreError::NotFound) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}
