//! One release's run, step by step: the journal's begin, the release
//! namespace, the pending record, the cluster work (CRDs, hooks, objects,
//! prunes, the wait), and the record of how it ended, with an atomic
//! release's rollback on failure.
use super::types::{Event, ExecError, Outcome, ReleaseOutcome};
use super::{created_by, meta_str, namespace_key, Executor, Failure, CREATING_NAMESPACE};
use crate::cluster::{ClusterError, ObjectKey};
use crate::exec::faults;
use crate::exec::journal::{Entry, Intent, ReleaseJournal};
use crate::exec::ready;
use crate::plan::planner::applied;
use crate::plan::{ObjectAction, Plan, ReleaseAction, ReleasePlan, Stage, WaitStrategy};
use crate::release::{self, HistoryMax, Release, Releases, Status, UpgradeBase};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// Whether a plan key names a CustomResourceDefinition.
pub(super) fn is_crd(key: &crate::plan::model::PlanKey) -> bool {
    key.group == "apiextensions.k8s.io" && key.kind == "CustomResourceDefinition"
}

/// The record pieces a plan carries for the executor.
pub(super) fn record_parts(rp: &ReleasePlan) -> Result<release::RevisionContent, String> {
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

/// The plan's record's [`Release::applied`] (the pending record keeps only
/// what Helm's does), completed with what the applies left (`applied`: the
/// answers of the applies, by key); an entry whose object was not written
/// is left out.
fn complete_applied(rp: &ReleasePlan, rec: &mut Release, applied: &BTreeMap<String, Value>) {
    rec.applied = rp
        .record
        .as_ref()
        .and_then(|r| r.get("rudder_applied"))
        .and_then(|a| serde_json::from_value(a.clone()).ok())
        .unwrap_or_default();
    for (key, response) in applied {
        applied::complete(&mut rec.applied, key, response);
    }
    applied::drop_pending(&mut rec.applied);
}

impl Executor<'_> {
    /// One release of a plan: its journal run begins, then the steps
    /// follow in order, each its own function: (0) a stuck pending record
    /// is settled, (1) the release namespace, (2) the pending record,
    /// (3-8) the cluster work, and the record of how it ended (with an
    /// atomic release's rollback on failure). A planned uninstall is a
    /// run of its own.
    pub(super) fn run_release(
        &self,
        plan: &Plan,
        rp: &ReleasePlan,
        j: &mut ReleaseJournal,
        defer: bool,
    ) -> Result<ReleaseOutcome, ExecError> {
        let run = Run {
            rp,
            rref: format!("{}/{}", rp.namespace, rp.name),
            id: uuid::Uuid::new_v4().to_string(),
            deadline: self.clock.now() + rp.options.timeout,
            // In an atomic plan the plan's unwind returns a failed release.
            atomic: rp.options.atomic && !defer,
        };
        self.progress.event(&Event::ReleaseStarted {
            release: run.rref.clone(),
            action: rp.action.as_str().into(),
            revision: rp.to.revision,
        });
        if rp.action == ReleaseAction::Uninstall {
            return self.run_uninstall(plan, &run, j);
        }
        // 0. A stuck pending record is settled first: it becomes failed.
        if rp.action == ReleaseAction::Recover {
            self.settle_pending(&run)?;
        }
        self.begin_release(plan, &run, j)?;
        // 1. The release namespace, before anything is written into it:
        // with Helm's Secrets and ConfigMaps drivers the record itself
        // lives there (Helm creates it first too).
        let rendered =
            record_parts(rp).map_err(|e| ExecError::Stale(format!("release {}: {e}", run.rref)))?;
        if let Err(Failure(err)) = self.create_namespaces(rp, j, &run.id, run.deadline) {
            return self.namespace_failed(&run, j, err);
        }
        // 2. The pending record.
        let (pending, base) = self.record_pending(&run, j, rendered)?;
        // 3-8. The cluster work.
        let work = self
            .release_work(rp, j, &run.id, run.deadline)
            .and_then(|applied| {
                // Group commit: the cluster's writes are durable before the
                // record says deployed.
                self.cluster
                    .flush()
                    .map_err(|e| Failure(format!("flushing the cluster's writes: {e}")))?;
                Ok(applied)
            });
        match work {
            Ok(applied) => self.record_deployed(&run, j, &pending, base.as_ref(), applied),
            Err(Failure(err)) => self.record_failed(&run, j, &pending, base.as_ref(), err),
        }
    }

    /// A planned uninstall: its journal run, the deletes, and the outcome.
    fn run_uninstall(
        &self,
        plan: &Plan,
        run: &Run,
        j: &mut ReleaseJournal,
    ) -> Result<ReleaseOutcome, ExecError> {
        let rp = run.rp;
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
            &run.id,
            "uninstall",
            &plan.id,
            rp.to.revision,
            None,
            false,
            intents,
        )?;
        match self.uninstall_planned(rp, j, &run.id) {
            Ok(()) => {
                self.end(j, &run.id, "uninstalled")?;
                self.done(&run.rref, "uninstalled");
                Ok(run.outcome(Outcome::Uninstalled, 0, None))
            }
            Err(Failure(e)) => {
                self.end(j, &run.id, "failed")?;
                Ok(run.outcome(Outcome::Failed, rp.to.revision, Some(e)))
            }
        }
    }

    /// Step 0 of a recovery: the release's last record, when it is
    /// pending (its run was interrupted), is recorded failed.
    fn settle_pending(&self, run: &Run) -> Result<(), ExecError> {
        let rp = run.rp;
        let serr = self.store_err(&run.rref);
        let last = Releases::new(self.store)
            .history(&rp.namespace, &rp.name)
            .map_err(&serr)?
            .into_iter()
            .max_by_key(|r| r.version);
        if let Some(last) = last.filter(|l| l.info.status.is_pending()) {
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
        Ok(())
    }

    /// The journal's begin of an install or upgrade run: what it intends
    /// to write, and where a failure returns to.
    fn begin_release(
        &self,
        plan: &Plan,
        run: &Run,
        j: &mut ReleaseJournal,
    ) -> Result<(), ExecError> {
        let rp = run.rp;
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
            &run.id,
            operation,
            &plan.id,
            rp.to.revision,
            rp.recovery.rollback_revision,
            run.atomic,
            intents,
        )
    }

    /// Step 1 failed: nothing of the release was written, so there is no
    /// record, as with Helm.
    fn namespace_failed(
        &self,
        run: &Run,
        j: &mut ReleaseJournal,
        err: String,
    ) -> Result<ReleaseOutcome, ExecError> {
        self.progress.event(&Event::Failed {
            release: run.rref.clone(),
            error: err.clone(),
        });
        self.end(j, &run.id, "failed")?;
        self.done(&run.rref, "failed");
        let revision = run.rp.from.as_ref().map_or(0, |f| f.revision);
        Ok(run.outcome(Outcome::Failed, revision, Some(err)))
    }

    /// Step 2: the pending record (`pending-install`, or
    /// `pending-upgrade` on the upgrade's base). Returns it and the base.
    /// When the store refuses it, an atomic run takes back the namespace
    /// it created, and the run ends, journaled.
    fn record_pending(
        &self,
        run: &Run,
        j: &mut ReleaseJournal,
        rendered: release::RevisionContent,
    ) -> Result<(Release, Option<UpgradeBase>), ExecError> {
        let rp = run.rp;
        let ops = Releases::new(self.store);
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
        let recorded = match recorded {
            Ok(r) => r,
            Err(e) => {
                // Nothing but (maybe) the namespace was written: an atomic
                // run takes that back; the run ends, journaled.
                let ns_key = namespace_key(&rp.namespace);
                if run.atomic
                    && created_by(&j.entries, &run.id).contains(&ns_key)
                    && !self.namespace_shared(&rp.namespace, &rp.name)
                {
                    let deadline = self.clock.now() + rp.options.timeout;
                    let _ = self
                        .delete_one(&run.rref, j, &run.id, &ns_key, deadline)
                        .and_then(|()| {
                            self.wait_deleted(&run.rref, std::slice::from_ref(&ns_key), deadline)
                        });
                }
                self.end(j, &run.id, "failed")?;
                return Err(self.store_err(&run.rref)(e));
            }
        };
        faults::durable_write("store");
        self.phase(j, &run.id, "pending-recorded")?;
        Ok(recorded)
    }

    /// The cluster work succeeded: the record says deployed (and, for an
    /// install, the history is pruned to its limit).
    fn record_deployed(
        &self,
        run: &Run,
        j: &mut ReleaseJournal,
        pending: &Release,
        base: Option<&UpgradeBase>,
        applied: BTreeMap<String, Value>,
    ) -> Result<ReleaseOutcome, ExecError> {
        let rp = run.rp;
        let ops = Releases::new(self.store);
        let desc = Some(rp.options.description.as_str()).filter(|d| !d.is_empty());
        let complete = |n: &mut Release| complete_applied(rp, n, &applied);
        let done = match base {
            None => ops.finish_install_with(pending, Ok(()), desc, complete),
            Some(b) => ops.finish_upgrade_with(b, pending, Ok(()), desc, complete),
        }
        .map_err(self.store_err(&run.rref))?;
        faults::durable_write("store");
        self.phase(j, &run.id, "deployed-recorded")?;
        if base.is_none() && rp.options.history_max > 0 {
            let _ = ops.prune(
                &rp.namespace,
                &rp.name,
                HistoryMax(rp.options.history_max + 1),
            );
        }
        self.end(j, &run.id, "deployed")?;
        let outcome = if base.is_none() {
            Outcome::Installed
        } else {
            Outcome::Upgraded
        };
        self.done(&run.rref, &outcome.to_string());
        Ok(run.outcome(outcome, done.version, None))
    }

    /// The cluster work failed: the record says failed, and an atomic
    /// release goes back to its rollback point.
    fn record_failed(
        &self,
        run: &Run,
        j: &mut ReleaseJournal,
        pending: &Release,
        base: Option<&UpgradeBase>,
        err: String,
    ) -> Result<ReleaseOutcome, ExecError> {
        let ops = Releases::new(self.store);
        self.progress.event(&Event::Failed {
            release: run.rref.clone(),
            error: err.clone(),
        });
        match base {
            None => ops.finish_install(pending, Err(err.clone()), None),
            Some(b) => ops.finish_upgrade(b, pending, Err(err.clone()), None),
        }
        .map_err(self.store_err(&run.rref))?;
        faults::durable_write("store");
        if !run.atomic {
            self.end(j, &run.id, "failed")?;
            self.done(&run.rref, "failed");
            return Ok(run.outcome(Outcome::Failed, pending.version, Some(err)));
        }
        self.phase(j, &run.id, "rolling-back")?;
        match run.rp.recovery.rollback_revision {
            Some(to) => self.roll_back_failed(run, j, pending, to, err),
            None => self.uninstall_failed(run, j, err),
        }
    }

    /// An atomic upgrade that failed goes back to revision `to`.
    fn roll_back_failed(
        &self,
        run: &Run,
        j: &mut ReleaseJournal,
        pending: &Release,
        to: u64,
        err: String,
    ) -> Result<ReleaseOutcome, ExecError> {
        let rp = run.rp;
        let created = created_by(&j.entries, &run.id);
        let r = self.rollback_to(
            &rp.namespace,
            &rp.name,
            to,
            &rp.options,
            j,
            &run.id,
            &created,
        );
        match r {
            Ok(v) => {
                self.end(j, &run.id, "rolled-back")?;
                self.done(&run.rref, &format!("rolled back to revision {to}"));
                Ok(run.outcome(
                    Outcome::RolledBack,
                    v,
                    Some(format!(
                        "release {} failed, and has been rolled back due to atomic being set: {err}",
                        rp.name
                    )),
                ))
            }
            Err(e) => {
                self.end(j, &run.id, "failed")?;
                Ok(run.outcome(
                    Outcome::Failed,
                    pending.version,
                    Some(format!(
                        "an error occurred while rolling back the release. original upgrade error: {err}: {e}"
                    )),
                ))
            }
        }
    }

    /// An atomic install that failed is uninstalled.
    fn uninstall_failed(
        &self,
        run: &Run,
        j: &mut ReleaseJournal,
        err: String,
    ) -> Result<ReleaseOutcome, ExecError> {
        let rp = run.rp;
        let created = created_by(&j.entries, &run.id);
        let (r, r2) = self.undo_install(
            &rp.namespace,
            &rp.name,
            j,
            &run.id,
            &created,
            true,
            rp.options.timeout,
        );
        self.end(j, &run.id, "uninstalled")?;
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
        self.done(&run.rref, "uninstalled after failure");
        Ok(run.outcome(Outcome::UninstalledAfterFailure, 0, Some(error)))
    }

    /// Creates the namespaces the plan creates (`createNamespace`), as
    /// Helm does: a create (POST), where an existing namespace is not an
    /// error. A namespace that exists when its turn comes (another release
    /// of this plan, or someone else, made it meanwhile) is left alone and
    /// is not this run's. The journal says `creating-namespace` before the
    /// create and holds the write after it, so that recovery knows whether
    /// this run made the namespace even when it crashed in between.
    pub(super) fn create_namespaces(
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

    /// CRDs, pre-hooks, objects, deletes, wait, post-hooks. Returns what
    /// the applies left on the objects the record asks about
    /// ([`Release::applied`]).
    pub(super) fn release_work(
        &self,
        rp: &ReleasePlan,
        j: &mut ReleaseJournal,
        run: &str,
        deadline: Duration,
    ) -> Result<BTreeMap<String, Value>, Failure> {
        let mut applied = BTreeMap::new();
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
            let docs: Vec<&Value> = writes.iter().map(|(_, d)| d.value()).collect();
            let written = self.apply_group(&rref, j, run, &docs, deadline)?;
            for ((o, _), w) in writes.iter().zip(&written) {
                if rp.record.is_some() {
                    applied.insert(o.key.object_key().to_string(), w.clone());
                }
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
        Ok(applied)
    }

    pub(super) fn run_hooks(
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
}

/// One run of one release: what each of its steps needs.
struct Run<'p> {
    rp: &'p ReleasePlan,
    /// `namespace/name`.
    rref: String,
    /// The run's id in the journal.
    id: String,
    /// When the release's time is up.
    deadline: Duration,
    /// Whether a failure returns the release to its rollback point here
    /// (an atomic release outside an atomic plan).
    atomic: bool,
}

impl Run<'_> {
    /// The release's outcome.
    fn outcome(&self, outcome: Outcome, revision: u64, error: Option<String>) -> ReleaseOutcome {
        ReleaseOutcome {
            release: self.rref.clone(),
            outcome,
            revision,
            error,
        }
    }
}
