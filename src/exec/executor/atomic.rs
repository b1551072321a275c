//! Atomic plans: the transaction journal's members, the unwind of a
//! failed plan to its rollback points, and the recovery of transactions
//! a crash interrupted.
use super::types::{Event, ExecError, Outcome, Report, Reverted};
use super::Executor;
use crate::exec::journal::{JournalError, ReleaseJournal, TxEntry, TxJournal, TxMember};
use crate::plan::{Plan, ReleaseAction};
use crate::release::Status;
use std::collections::{BTreeMap, BTreeSet};

/// The releases an atomic plan may change, in plan order, with their
/// rollback points: an upgrade (or a recovery) returns to the plan's
/// rollback revision, an install is uninstalled. Noops change nothing;
/// a planned uninstall is not undone.
pub(super) fn tx_members(plan: &Plan) -> Vec<TxMember> {
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

impl Executor<'_> {
    /// Returns every release of a failed atomic plan that the apply
    /// changed to its rollback point, in reverse plan order, and says so in
    /// the report; the transaction ends when all are back.
    pub(super) fn unwind(
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
    pub(super) fn restore_member(
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
}
