//! Waits: for objects to be ready (watching them, and the pods and events
//! that explain a stuck one), and for objects to be gone.
use super::types::{Event, REPORT_EVENTS};
use super::{meta_str, namespaced, Executor, Failure};
use crate::cluster::{ClusterError, ObjectKey, WatchTarget, Watched};
use crate::exec::ready;
use crate::exec::why::{self, Diagnosis, Reason};
use crate::plan::WaitStrategy;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

/// The ReplicaSets of each namespace, listed once in a round of a wait.
#[derive(Default)]
pub(super) struct ReplicaSets(HashMap<String, Vec<Value>>);

/// The longest single watch of a wait; a quiet object is read again after it.
pub(super) const WATCH_MAX: Duration = Duration::from_secs(10);

/// How often a wait reads an object's pods and events again at most (it
/// reads them after each change a watch reports), and how long an object
/// is pending before they are first read.
pub(super) const DIAGNOSE_EVERY: Duration = Duration::from_secs(1);

/// The shortest time between two rounds of a wait that a watch ended.
pub(super) const ROUND_MIN: Duration = Duration::from_millis(250);

/// ` (why: ...)` naming the first reasons, for error messages.
pub(super) fn why_suffix(reasons: &[Reason]) -> String {
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

/// resourceVersions are opaque, but both implementations use increasing
/// integers; compare numerically when both parse, else require equality.
pub(super) fn rv_at_least(rv: &str, written: &str) -> bool {
    match (rv.parse::<u64>(), written.parse::<u64>()) {
        (Ok(a), Ok(b)) => a >= b,
        _ => rv == written,
    }
}

/// What every round of one wait shares.
struct Wait<'r, 'c> {
    rref: &'r str,
    diag: why::Diagnoser<'c>,
    strategy: WaitStrategy,
    wait_for_jobs: bool,
    /// When the wait started, and when it gives up (the clock's times).
    started: Duration,
    deadline: Duration,
}

impl Wait<'_, '_> {
    /// Whether an object not yet diagnosed is due its first diagnosis at
    /// `now`: once it has been pending for [`DIAGNOSE_EVERY`], or when the
    /// deadline is that close. Most objects are ready within a second of
    /// their write; reading their pods, events and ReplicaSets before that
    /// costs requests and says "not yet scheduled".
    fn first_diagnosis_due(&self, now: Duration) -> bool {
        now.saturating_sub(self.started) >= DIAGNOSE_EVERY
            || self.deadline.saturating_sub(now) <= DIAGNOSE_EVERY
    }
}

/// What a wait has seen so far, per object.
#[derive(Default)]
struct Seen<'k> {
    /// The last readiness message.
    msg: HashMap<&'k ObjectKey, String>,
    /// The last reasons why it is not ready.
    reasons: HashMap<&'k ObjectKey, Vec<Reason>>,
    /// What the last diagnosis found.
    found: HashMap<&'k ObjectKey, why::Found>,
    /// When it was last diagnosed.
    diagnosed_at: HashMap<&'k ObjectKey, Duration>,
    /// When each reason (by object and kind) was first seen.
    first_seen: HashMap<(String, why::ReasonKind), Duration>,
    /// The last resourceVersion read.
    rv: HashMap<&'k ObjectKey, String>,
}

/// The error of a wait whose deadline passed: each object not ready, and
/// why.
fn timed_out(still: &[&(ObjectKey, String)], seen: &Seen) -> Failure {
    let what: Vec<String> = still
        .iter()
        .map(|(k, _)| {
            format!(
                "resource {}/{} not ready: {}{}",
                k.kind,
                namespaced(k),
                seen.msg.get(k).cloned().unwrap_or_default(),
                why_suffix(seen.reasons.get(k).map_or(&[][..], |r| &r[..]))
            )
        })
        .collect();
    Failure(format!("{}: context deadline exceeded", what.join(", ")))
}

/// What a wait watches between two rounds: the first object still
/// pending (from the resourceVersion last seen), and the pods and events
/// of the namespaces whose pending objects own pods.
fn watch_targets(still: &[&(ObjectKey, String)], seen: &Seen) -> Vec<WatchTarget> {
    let Some((first, _)) = still.first() else {
        return Vec::new();
    };
    let mut targets = vec![WatchTarget {
        key: first.clone(),
        resource_version: seen.rv.get(first).cloned().unwrap_or_default(),
    }];
    let mut namespaces = BTreeSet::new();
    for (k, _) in still {
        if let Some(f) = seen.found.get(k) {
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
    targets
}

impl Executor<'_> {
    /// Waits until every object is ready, or the deadline passes. Between
    /// two readiness checks it watches the first pending object and, where
    /// a pending object owns pods, the pods and events of its namespace, so
    /// that what the pods go through is read again as it happens: each
    /// [`Event::Waiting`] carries the reasons [`why`] finds. With
    /// [`ExecOptions::fail_fast`] a fatal reason ends the wait at once.
    /// A failed wait leaves a [`Diagnosis`] per pending object for the
    /// report.
    ///
    /// [`ExecOptions::fail_fast`]: super::ExecOptions::fail_fast
    pub(super) fn wait_for(
        &self,
        rref: &str,
        objs: &[(ObjectKey, String)],
        strategy: WaitStrategy,
        wait_for_jobs: bool,
        deadline: Duration,
    ) -> Result<(), Failure> {
        let wait = Wait {
            rref,
            diag: why::Diagnoser::new(self.cluster),
            strategy,
            wait_for_jobs,
            started: self.clock.now(),
            deadline,
        };
        let mut seen = Seen::default();
        let mut pending: Vec<&(ObjectKey, String)> = objs.iter().collect();
        loop {
            let (still, fatal) = self.wait_round(&wait, pending, &mut seen)?;
            if still.is_empty() {
                return Ok(());
            }
            if let Some((key, r)) = fatal {
                self.record_stuck(rref, &still, &seen);
                return Err(Failure(format!(
                    "resource {}/{} not ready: {}: failing fast (--fail-fast): {r}",
                    key.kind,
                    namespaced(key),
                    seen.msg.get(key).cloned().unwrap_or_default(),
                )));
            }
            if self.clock.now() >= deadline {
                self.record_stuck(rref, &still, &seen);
                return Err(timed_out(&still, &seen));
            }
            let left = deadline.saturating_sub(self.clock.now());
            // A grace period that may run out wakes the wait up.
            let grace_running = self.opts.fail_fast.is_some()
                && seen
                    .reasons
                    .values()
                    .flatten()
                    .any(|r| r.kind == why::ReasonKind::Unschedulable);
            // An object that owns pods and was not diagnosed yet is looked
            // at again within a second, when its first diagnosis is due.
            let undiagnosed = still
                .iter()
                .any(|(k, _)| why::explains(k) && !seen.diagnosed_at.contains_key(k));
            let targets = watch_targets(&still, &seen);
            self.watch_or_sleep(
                &targets,
                still.len() > 1 || grace_running || undiagnosed,
                left,
            );
            pending = still;
        }
    }

    /// One round of a wait: reads the pending objects, and returns those
    /// still not ready, with the first fatal reason found (`--fail-fast`).
    /// A failed object ends the wait (Helm 3's rules).
    #[allow(clippy::type_complexity)]
    fn wait_round<'k>(
        &self,
        wait: &Wait,
        pending: Vec<&'k (ObjectKey, String)>,
        seen: &mut Seen<'k>,
    ) -> Result<
        (
            Vec<&'k (ObjectKey, String)>,
            Option<(&'k ObjectKey, Reason)>,
        ),
        Failure,
    > {
        wait.diag.new_round();
        let mut still = Vec::new();
        let mut fatal: Option<(&ObjectKey, Reason)> = None;
        let keys: Vec<&ObjectKey> = pending.iter().map(|(k, _)| k).collect();
        let lives = self.read_live(&keys);
        let mut sets = ReplicaSets::default();
        for (item, live) in pending.into_iter().zip(lives) {
            let key = &item.0;
            let live = match live {
                Ok(live) => live,
                // The API server restarting or out of reach for a moment:
                // the wait goes on until its deadline.
                Err(ClusterError::Unreachable { message: m, .. }) => {
                    still.push(item);
                    seen.msg.insert(key, format!("cluster unreachable: {m}"));
                    continue;
                }
                Err(e) => return Err(Failure(format!("waiting for {key}: {e}"))),
            };
            let Some(mut live) = live else {
                still.push(item);
                seen.msg.insert(key, "not found".into());
                continue;
            };
            if wait.strategy == WaitStrategy::Legacy {
                self.add_new_replica_set_status(key, &mut live, &mut sets, &keys)?;
            }
            match self.judge(wait, item, &live, seen)? {
                None => {}
                Some(f) => {
                    if fatal.is_none() {
                        fatal = f;
                    }
                    still.push(item);
                }
            }
        }
        Ok((still, fatal))
    }

    /// Judges one object as read in a round of a wait: `None` when it is
    /// ready (observed at or after our write), else `Some` with the first
    /// fatal reason it has, if any. Reads why it is not ready (at most
    /// every [`DIAGNOSE_EVERY`]), and says so when that changed. A failed
    /// object is an error under Helm 3's rules.
    fn judge<'k>(
        &self,
        wait: &Wait,
        item: &'k (ObjectKey, String),
        live: &Value,
        seen: &mut Seen<'k>,
    ) -> Result<Option<Option<(&'k ObjectKey, Reason)>>, Failure> {
        let (key, written_rv) = item;
        // Only an observation at or after our write counts.
        let rv = meta_str(live, "resourceVersion");
        seen.rv.insert(key, rv.to_string());
        let fresh = written_rv.is_empty() || rv_at_least(&rv, written_rv);
        let v = ready::check(live, wait.strategy, wait.wait_for_jobs);
        if fresh && v.ready {
            return Ok(None);
        }
        // Why: first read once the object has been pending a while, then
        // again at most every DIAGNOSE_EVERY per object,
        // and always when the object has just failed (a failed Job
        // ends the wait at once: its last reasons must be fresh).
        let now = self.clock.now();
        let due = match seen.diagnosed_at.get(key) {
            Some(t) => now.saturating_sub(*t) >= DIAGNOSE_EVERY,
            None => wait.first_diagnosis_due(now),
        };
        if why::explains(key) && (v.failed || due) {
            seen.diagnosed_at.insert(key, now);
            if let Ok(f) = wait.diag.diagnose(key, live) {
                seen.found.insert(key, f);
            }
        }
        let reasons = seen
            .found
            .get(key)
            .map(|f| f.reasons.clone())
            .unwrap_or_default();
        if seen.msg.get(key) != Some(&v.message)
            || seen
                .reasons
                .get(key)
                .map_or(!reasons.is_empty(), |r| *r != reasons)
        {
            self.progress.event(&Event::Waiting {
                release: wait.rref.into(),
                object: format!("{} {}", key.kind, namespaced(key)),
                message: v.message.clone(),
                reasons: reasons.clone(),
            });
        }
        if v.failed && wait.strategy == WaitStrategy::Legacy {
            seen.msg.insert(key, v.message.clone());
            seen.reasons.insert(key, reasons.clone());
            self.record_stuck(wait.rref, &[item], seen);
            return Err(Failure(format!(
                "{key}: {}{}",
                v.message,
                why_suffix(&reasons)
            )));
        }
        let mut fatal = None;
        if let Some(ff) = &self.opts.fail_fast {
            for r in &reasons {
                let since = *seen
                    .first_seen
                    .entry((r.object.clone(), r.kind))
                    .or_insert(now);
                if fatal.is_none() && r.fatal(ff, now.saturating_sub(since)) {
                    fatal = Some((key, r.clone()));
                }
            }
        }
        seen.msg.insert(key, v.message);
        seen.reasons.insert(key, reasons);
        Ok(Some(fatal))
    }

    /// Keeps a [`Diagnosis`] of each of `still` for the report.
    fn record_stuck(&self, rref: &str, still: &[&(ObjectKey, String)], seen: &Seen) {
        let diag = why::Diagnoser::new(self.cluster);
        let mut out: Vec<Diagnosis> = still
            .iter()
            .map(|(k, _)| Diagnosis {
                release: rref.to_string(),
                object: format!("{} {}", k.kind, namespaced(k)),
                status: seen.msg.get(k).cloned().unwrap_or_default(),
                reasons: seen.reasons.get(k).cloned().unwrap_or_default(),
                pods: seen
                    .found
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
    pub(super) fn watch_or_sleep(&self, targets: &[WatchTarget], short: bool, left: Duration) {
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
    pub(super) fn wait_deleted(
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
    pub(super) fn add_new_replica_set_status(
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
}
