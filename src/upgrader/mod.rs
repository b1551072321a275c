//! The bundled upgrader: Lokomotive's control-plane upgrade, done as
//! plan-then-apply.
//!
//! A cluster config ([`config`]) becomes components ([`components()`]), each
//! a chart through [`crate::chart::chart_from_component`]; the order
//! ([`order`]) becomes `needs` with reasons; the planner computes the plan
//! and the executor applies it, atomically per release, stopping at the
//! first failure. [`feedback`] prints lokoctl's lines from the executor's
//! events. The `rudder-upgrader demo` subcommand runs the whole story on
//! the simulated cluster.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use rudder::upgrader::{self, Options};
//! let dir = tempfile::tempdir()?;
//! for file in ["ca.crt", "ca.key", "api.crt", "api.key", "sa.key", "sa.pub"] {
//!     std::fs::write(dir.path().join(file), "(placeholder: nothing checks it)")?;
//! }
//! let config = "kubernetesVersion: v1.21.4
//! controllers: 1
//! networkPlugin: calico
//! selfHostedKubelet: true
//! podCIDR: 10.2.0.0/16
//! serviceCIDR: 10.3.0.0/16
//! clusterDomain: cluster.local
//! etcdServers: [https://10.0.0.10:2379]
//! bootstrapTokens: [{tokenId: 07401b, tokenSecret: f395accd246ae52d}]
//! certificates: {caCert: ca.crt, caKey: ca.key, apiserverCert: api.crt,
//!   apiserverKey: api.key, serviceAccountKey: sa.key, serviceAccountPub: sa.pub}
//! ";
//! let loaded = upgrader::config::Loaded::from_text(config, &dir.path().join("cluster.yaml"))?;
//! let releases = upgrader::desired_releases(&loaded, &Options::default())?;
//! let names: Vec<_> = releases.iter().map(|r| r.name.as_str()).collect();
//! assert_eq!(&names[..3], ["bootstrap-secrets", "pod-checkpointer", "kube-apiserver"]);
//! # Ok(()) }
//! ```
pub mod config;
pub mod control_plane;
pub mod feedback;
pub mod order;

use crate::exec::{ExecOptions, Executor, Outcome, WallClock};
use crate::plan::planner::{PlanOptions, Planner};
use crate::plan::{
    DesiredRelease, Need, Plan, ReleaseAction, ReleaseOptions, ReleaseRef, WaitStrategy,
};
use crate::targets::Targets;
use control_plane::{ControlPlaneComponent, Kind, NAMESPACE};
use std::io::Write;
use std::time::Duration;

/// The default deadline of each release (Helm's; Lokomotive set none and
/// could hang forever, issue #1438).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// An upgrader failure before or around the run.
#[derive(Debug, thiserror::Error)]
pub enum UpgraderError {
    /// The config is unusable.
    #[error(transparent)]
    Config(#[from] config::ClusterConfigError),
    /// A component did not become a chart.
    #[error(transparent)]
    Component(#[from] crate::chart::ComponentError),
    /// `--upgrade-kubelets` on a cluster whose kubelet is not self-hosted.
    #[error("--upgrade-kubelets: the config has selfHostedKubelet: false, so there is no kubelet component to upgrade (Lokomotive #1313)")]
    NoKubelet,
    /// An unknown component name (`history`, `rollback`).
    #[error("unknown component {0:?}; known: bootstrap-secrets, pod-checkpointer, kube-apiserver, kubernetes, calico, kubelet, node-local-dns, metrics-server")]
    UnknownComponent(String),
    /// The store or cluster cannot be opened.
    #[error(transparent)]
    Targets(#[from] crate::targets::TargetsError),
    /// The cluster does not answer.
    #[error("cluster {cluster_url} is not reachable: {error}")]
    Unreachable {
        /// The cluster's URL.
        cluster_url: String,
        /// What the cluster said (boxed: a cluster error is large).
        error: Box<crate::cluster::ClusterError>,
    },
    /// The release store cannot be read.
    #[error(transparent)]
    Store(#[from] crate::release::StoreError),
    /// A component has no release yet (`history`).
    #[error("release {release}: release: not found")]
    NotInstalled {
        /// `namespace/name`.
        release: String,
    },
    /// Planning failed (the planner's error is the source).
    #[error("planning")]
    Plan(#[from] crate::plan::planner::PlanError),
    /// The plan cannot be applied.
    #[error(transparent)]
    Exec(#[from] crate::exec::ExecError),
    /// A release cannot go ahead (a pending operation, a foreign object).
    #[error("release {release} is blocked: {message}")]
    Blocked {
        /// `namespace/name`.
        release: String,
        /// Why.
        message: String,
    },
    /// Writing output failed (the I/O error is the source).
    #[error("writing output")]
    Io(#[from] std::io::Error),
    /// A rollback failed.
    #[error("rollback of {release}: {message}")]
    Rollback {
        /// `namespace/name`.
        release: String,
        /// Why.
        message: String,
    },
}

/// How the upgrader runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Also upgrade the self-hosted kubelets.
    pub upgrade_kubelets: bool,
    /// The deadline of each release (and of its rollback).
    pub timeout: Duration,
    /// How often waits poll.
    pub poll: Duration,
    /// `--fail-fast`: stop a wait at once on pods that will not become
    /// ready by themselves ([`crate::exec::ExecOptions::fail_fast`]).
    pub fail_fast: Option<crate::exec::FailFast>,
    /// Lines of a failing container's log in the failure report.
    pub log_lines: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            upgrade_kubelets: false,
            timeout: DEFAULT_TIMEOUT,
            poll: Duration::from_millis(100),
            fail_fast: None,
            log_lines: crate::exec::DEFAULT_LOG_LINES,
        }
    }
}

/// The components of a loaded config, in upgrade order.
pub fn components(
    loaded: &config::Loaded,
    opts: &Options,
) -> Result<Vec<ControlPlaneComponent>, UpgraderError> {
    if opts.upgrade_kubelets && !loaded.config.self_hosted_kubelet {
        return Err(UpgraderError::NoKubelet);
    }
    Ok(order::components(&loaded.config, opts.upgrade_kubelets)
        .into_iter()
        .map(|k| ControlPlaneComponent::new(loaded, k))
        .collect())
}

/// The release options of a component: atomic, waiting (Helm's rules),
/// the timeout, history of 10.
pub fn release_options(_kind: Kind, opts: &Options) -> ReleaseOptions {
    ReleaseOptions {
        atomic: true,
        wait: true,
        wait_strategy: WaitStrategy::Legacy,
        timeout: opts.timeout,
        create_namespace: false,
        ..ReleaseOptions::default()
    }
}

/// The desired releases of a loaded config: one chart per component, each
/// needing the one before it, with the reason.
pub fn desired_releases(
    loaded: &config::Loaded,
    opts: &Options,
) -> Result<Vec<DesiredRelease>, UpgraderError> {
    let comps = components(loaded, opts)?;
    let mut out: Vec<DesiredRelease> = Vec::new();
    for c in &comps {
        let mut chart = crate::chart::chart_from_component(c)?;
        chart.metadata.app_version = loaded.config.kubernetes_version.clone();
        chart.metadata.description =
            format!("Lokomotive control-plane component {}", c.kind().name());
        let mut d = DesiredRelease::new(c.kind().name(), NAMESPACE, chart);
        d.options = release_options(c.kind(), opts);
        if let Some(prev) = out.last() {
            d.needs.push(Need {
                release: ReleaseRef {
                    namespace: prev.namespace.clone(),
                    name: prev.name.clone(),
                },
                reason: order::reason(c.kind()).to_string(),
            });
        }
        out.push(d);
    }
    Ok(out)
}

/// Opens the store and cluster of the given URLs.
pub fn open(store_url: &str, cluster_url: &str) -> Result<Targets, UpgraderError> {
    let t = Targets::open(store_url, cluster_url)?;
    t.cluster
        .identity()
        .map_err(|error| UpgraderError::Unreachable {
            cluster_url: cluster_url.to_string(),
            error: Box::new(error),
        })?;
    Ok(t)
}

/// Settles interrupted runs of the releases, then plans them. Nothing is
/// written unless a run was interrupted.
pub fn plan(t: &Targets, releases: &[DesiredRelease]) -> Result<Plan, UpgraderError> {
    for r in releases {
        executor(
            t,
            &WallClock::default(),
            &crate::exec::Quiet,
            &Options::default(),
        )
        .recover(&r.namespace, &r.name)?;
    }
    plan_only(t, releases)
}

/// Plans the releases; never writes.
pub fn plan_only(t: &Targets, releases: &[DesiredRelease]) -> Result<Plan, UpgraderError> {
    Ok(
        Planner::new(t.store.as_ref(), &t.store_url, t.cluster.as_ref())
            .with_options(PlanOptions::default())
            .plan(releases)?,
    )
}

fn executor<'a>(
    t: &'a Targets,
    clock: &'a WallClock,
    progress: &'a dyn crate::exec::Progress,
    opts: &Options,
) -> Executor<'a> {
    t.executor(clock)
        .with_progress(progress)
        .with_options(ExecOptions {
            poll: opts.poll,
            fail_fast: opts.fail_fast,
            log_lines: opts.log_lines,
            ..ExecOptions::default()
        })
}

/// A one-line-per-release summary of a plan.
pub fn summary(plan: &Plan) -> String {
    let mut s = String::from("Plan:\n");
    for r in &plan.releases {
        let c = r.counts();
        let rev = match &r.from {
            Some(f) => format!("revision {} -> {}", f.revision, r.to.revision),
            None => format!("revision {}", r.to.revision),
        };
        let verb = match r.action.as_str() {
            "noop" => "up to date",
            a => a,
        };
        s.push_str(&format!(
            "  {:<18} {:<10} {} ({})\n",
            r.name,
            verb,
            rev,
            counts_text(&c)
        ));
        for w in &r.preflight {
            s.push_str(&format!("    preflight: {w}\n"));
        }
    }
    s
}

fn counts_text(c: &crate::plan::Counts) -> String {
    let parts: Vec<String> = [
        (c.create, "to create"),
        (c.update, "to update"),
        (c.delete, "to delete"),
        (c.adopt, "to adopt"),
        (c.unchanged, "unchanged"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, w)| format!("{n} {w}"))
    .collect();
    if parts.is_empty() {
        "no objects".into()
    } else {
        parts.join(", ")
    }
}

/// What a run did, for the caller's exit code.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The executor's report.
    pub report: crate::exec::Report,
    /// The failed component, if any.
    pub failed: Option<String>,
}

impl RunResult {
    /// Whether every component is up to date.
    pub fn success(&self) -> bool {
        self.failed.is_none() && self.report.success()
    }
}

/// Whether a kube-apiserver DaemonSet or Deployment is fully rolled out:
/// every replica updated, available and ready, the generation observed
/// (kstatus `Current`). Helm's rules, which the executor's wait uses, accept
/// `desired - maxUnavailable` ready pods of a DaemonSet: one fewer than all.
pub fn rollout_complete(obj: &serde_json::Value) -> crate::exec::ready::Verdict {
    crate::exec::ready::kstatus(obj)
}

/// Applies a plan, printing lokoctl's lines to `out` (live progress on a
/// terminal when `tty`, otherwise whole lines; wait progress goes to
/// `progress` off a terminal) and, on failure, what failed, where it was
/// rolled back to, what stays upgraded, what was not attempted and
/// `retry` (the command to run again).
///
/// The plan runs in two parts when it changes kube-apiserver: up to and
/// including kube-apiserver, then, once its DaemonSet or Deployment is
/// fully rolled out ([`rollout_complete`]), the rest. When the rollout does
/// not complete within the timeout, kube-apiserver is rolled back (or
/// uninstalled, after a first install) and the rest is not attempted.
pub fn apply<'a>(
    t: &'a Targets,
    plan: &Plan,
    opts: &Options,
    out: &'a mut (dyn Write + Send + 'a),
    progress: Option<&'a mut (dyn Write + Send + 'a)>,
    tty: bool,
    retry: &str,
) -> Result<RunResult, UpgraderError> {
    if let Some(b) = plan.blocked().next() {
        return Err(UpgraderError::Blocked {
            release: format!("{}/{}", b.namespace, b.name),
            message: b.blocked.clone().unwrap_or_default(),
        });
    }
    let fb = feedback::Feedback::new(plan, t.cluster.as_ref(), out, progress, tty);
    fb.header();
    let clock = WallClock::default();
    let split = plan
        .releases
        .iter()
        .position(|r| r.name == Kind::KubeApiserver.name() && r.action != ReleaseAction::Noop);
    let report = match split {
        None => executor(t, &clock, &fb, opts).apply(plan)?,
        Some(k) => {
            let (first, rest) = split_plan(plan, k + 1);
            let rref = format!("{}/{}", plan.releases[k].namespace, plan.releases[k].name);
            fb.hold(&rref);
            let mut report = executor(t, &clock, &fb, opts).apply(&first)?;
            let done = report
                .releases
                .get(k)
                .is_some_and(|o| matches!(o.outcome, Outcome::Installed | Outcome::Upgraded));
            let mut ok = report.success();
            if done {
                if let Err(why) = wait_rollout(t, &plan.releases[k], opts, &fb) {
                    ok = false;
                    let outcome = undo(t, &plan.releases[k], opts, &why)?;
                    if let Some(o) = report.releases.get_mut(k) {
                        *o = outcome;
                    }
                }
                fb.settle(&rref, ok);
            }
            if ok {
                if let Some(rest) = rest {
                    let more = executor(t, &clock, &fb, opts).apply(&rest)?;
                    report.releases.extend(more.releases);
                    report.diagnoses.extend(more.diagnoses);
                }
            } else {
                for rp in &plan.releases[k + 1..] {
                    report.releases.push(crate::exec::ReleaseOutcome {
                        release: format!("{}/{}", rp.namespace, rp.name),
                        outcome: Outcome::NotAttempted,
                        revision: rp.from.as_ref().map_or(0, |f| f.revision),
                        error: None,
                    });
                }
            }
            report
        }
    };
    fb.finish(&report);
    let failed = fb.failure_summary(plan, &report, retry);
    Ok(RunResult { report, failed })
}

/// The plan's releases before `at`, and the ones from `at` (if any), each
/// a plan of its own with its id recomputed.
fn split_plan(plan: &Plan, at: usize) -> (Plan, Option<Plan>) {
    let part = |range: std::ops::Range<usize>| {
        let mut p = plan.clone();
        p.releases = plan.releases[range].to_vec();
        let names: Vec<ReleaseRef> = p.releases.iter().map(|r| r.reference()).collect();
        p.release_edges
            .retain(|e| names.contains(&e.from) && names.contains(&e.to));
        p.id = p.compute_id();
        p
    };
    let first = part(0..at);
    let rest = (at < plan.releases.len()).then(|| part(at..plan.releases.len()));
    (first, rest)
}

/// Waits until kube-apiserver's DaemonSet or Deployment is fully rolled
/// out; the reason when it is not within the timeout.
fn wait_rollout(
    t: &Targets,
    rp: &crate::plan::ReleasePlan,
    opts: &Options,
    fb: &feedback::Feedback<'_>,
) -> Result<(), String> {
    use crate::exec::Progress;
    let rref = format!("{}/{}", rp.namespace, rp.name);
    let keys: Vec<_> = rp
        .objects
        .iter()
        .filter(|o| {
            o.key.group == "apps"
                && matches!(o.key.kind.as_str(), "Deployment" | "DaemonSet")
                && o.action != crate::plan::ObjectAction::Delete
        })
        .map(|o| o.key.object_key())
        .collect();
    let start = std::time::Instant::now();
    let mut last = String::new();
    for key in &keys {
        let shown = format!("{} {}/{}", key.kind, key.namespace, key.name);
        loop {
            let live = t
                .cluster
                .get(key)
                .map_err(|e| format!("reading {shown}: {e}"))?;
            let (v, cond) = match &live {
                Some(l) => (rollout_complete(l), feedback::condition_of(l)),
                None => (
                    crate::exec::ready::Verdict {
                        ready: false,
                        failed: false,
                        message: "not found".into(),
                    },
                    None,
                ),
            };
            if v.ready {
                break;
            }
            // Why, from its pods and their events.
            let reasons = live
                .as_ref()
                .and_then(|l| {
                    crate::exec::why::Diagnoser::new(t.cluster.as_ref())
                        .diagnose(key, l)
                        .ok()
                })
                .map(|f| f.reasons)
                .unwrap_or_default();
            let said = format!("{}{reasons:?}", v.message);
            if said != last {
                fb.event(&crate::exec::Event::Waiting {
                    release: rref.clone(),
                    object: shown.clone(),
                    message: format!("rollout: {}", v.message),
                    reasons: reasons.clone(),
                });
                last = said;
            }
            if start.elapsed() >= opts.timeout {
                let why: Vec<String> = reasons.iter().map(|r| r.to_string()).collect();
                let message = if why.is_empty() {
                    v.message.clone()
                } else {
                    format!("{}; why: {}", v.message, why.join("; "))
                };
                fb.failed_wait(&rref, &shown, &message, cond);
                return Err(format!(
                    "{shown} was not fully updated and ready within {}: {message}",
                    crate::duration::format(opts.timeout),
                ));
            }
            std::thread::sleep(opts.poll);
        }
    }
    Ok(())
}

/// Undoes a kube-apiserver release whose rollout did not complete: back
/// to the revision it came from, or uninstalled after a first install.
fn undo(
    t: &Targets,
    rp: &crate::plan::ReleasePlan,
    opts: &Options,
    why: &str,
) -> Result<crate::exec::ReleaseOutcome, UpgraderError> {
    let rref = format!("{}/{}", rp.namespace, rp.name);
    let clock = WallClock::default();
    let ex = executor(t, &clock, &crate::exec::Quiet, opts);
    let mut j = t
        .journal
        .lock(&rp.namespace, &rp.name)
        .map_err(|e| UpgraderError::Rollback {
            release: rref.clone(),
            message: e.to_string(),
        })?;
    let to = rp
        .recovery
        .rollback_revision
        .or(rp.from.as_ref().map(|f| f.revision));
    Ok(match to {
        Some(to) => {
            let mut ro = rp.options.clone();
            ro.atomic = false;
            match ex.rollback_release(&rp.namespace, &rp.name, to, &ro, &mut j, why) {
                Ok(v) => crate::exec::ReleaseOutcome {
                    release: rref,
                    outcome: Outcome::RolledBack,
                    revision: v,
                    error: Some(format!(
                        "release {} failed, and has been rolled back: {why}",
                        rp.name
                    )),
                },
                Err(e) => crate::exec::ReleaseOutcome {
                    release: rref,
                    outcome: Outcome::Failed,
                    revision: rp.to.revision,
                    error: Some(format!(
                        "{why}; the rollback failed too: {}",
                        crate::error_chain(&e)
                    )),
                },
            }
        }
        None => match ex.uninstall_release(&rp.namespace, &rp.name, false, None, &mut j) {
            Ok(()) => crate::exec::ReleaseOutcome {
                release: rref,
                outcome: Outcome::UninstalledAfterFailure,
                revision: 0,
                error: Some(format!(
                    "release {} failed, and has been uninstalled: {why}",
                    rp.name
                )),
            },
            Err(e) => crate::exec::ReleaseOutcome {
                release: rref,
                outcome: Outcome::Failed,
                revision: rp.to.revision,
                error: Some(format!(
                    "{why}; the uninstall failed too: {}",
                    crate::error_chain(&e)
                )),
            },
        },
    })
}

/// The history of a component's release, as `helm history` prints it.
pub fn history(t: &Targets, component: &str) -> Result<String, UpgraderError> {
    let kind = Kind::from_name(component)
        .ok_or_else(|| UpgraderError::UnknownComponent(component.into()))?;
    let hist = t.store.history(NAMESPACE, kind.name())?;
    if hist.is_empty() {
        return Err(UpgraderError::NotInstalled {
            release: format!("{NAMESPACE}/{}", kind.name()),
        });
    }
    Ok(crate::release::view::history(
        &hist,
        256,
        crate::release::view::Format::Table,
    ))
}

/// Rolls a component back to `revision` (default: the one before the
/// last), waiting for it; returns the new revision.
pub fn rollback(
    t: &Targets,
    component: &str,
    revision: Option<u64>,
    opts: &Options,
) -> Result<(u64, u64), UpgraderError> {
    let kind = Kind::from_name(component)
        .ok_or_else(|| UpgraderError::UnknownComponent(component.into()))?;
    let rref = format!("{NAMESPACE}/{}", kind.name());
    let fail = |message: String| UpgraderError::Rollback {
        release: rref.clone(),
        message,
    };
    let clock = WallClock::default();
    let ex = executor(t, &clock, &crate::exec::Quiet, opts);
    ex.recover(NAMESPACE, kind.name())?;
    let hist = t
        .store
        .history(NAMESPACE, kind.name())
        .map_err(|e| fail(e.to_string()))?;
    let last = hist
        .iter()
        .map(|r| r.version)
        .max()
        .ok_or_else(|| fail("release: not found".into()))?;
    let to = revision
        .filter(|r| *r > 0)
        .unwrap_or(last.saturating_sub(1));
    if !hist.iter().any(|r| r.version == to) {
        return Err(fail(format!("release has no {to} version")));
    }
    let mut j = t
        .journal
        .lock(NAMESPACE, kind.name())
        .map_err(|e| fail(e.to_string()))?;
    let mut ro = release_options(kind, opts);
    ro.atomic = false;
    let v = ex
        .rollback_release(
            NAMESPACE,
            kind.name(),
            to,
            &ro,
            &mut j,
            "rudder-upgrader rollback",
        )
        .map_err(|e| fail(crate::error_chain(&e)))?;
    Ok((to, v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_apiserver_waits_for_every_replica() {
        let o = release_options(Kind::KubeApiserver, &Options::default());
        assert!(o.atomic && o.waits());
        // A 3-controller DaemonSet with 2 of 3 pods ready after the update:
        // Helm's rules (maxUnavailable 1) call it ready; the upgrader's do not.
        let ds = serde_json::json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "kube-apiserver", "namespace": "kube-system", "generation": 2},
            "spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}},
            "status": {"observedGeneration": 2, "desiredNumberScheduled": 3, "currentNumberScheduled": 3,
                       "updatedNumberScheduled": 3, "numberReady": 2, "numberAvailable": 2}
        });
        assert!(crate::exec::ready::check(&ds, WaitStrategy::Legacy, false).ready);
        assert!(!rollout_complete(&ds).ready);
        let mut all = ds.clone();
        all["status"]["numberReady"] = 3.into();
        all["status"]["numberAvailable"] = 3.into();
        assert!(rollout_complete(&all).ready);
        let o = release_options(Kind::Calico, &Options::default());
        assert_eq!(o.wait_strategy, WaitStrategy::Legacy);
        assert_eq!(o.timeout, DEFAULT_TIMEOUT);
    }

    /// Every message of an error's `source()` chain, outermost first.
    fn chain(e: &dyn std::error::Error) -> Vec<String> {
        let mut out = vec![e.to_string()];
        let mut cur = e.source();
        while let Some(s) = cur {
            out.push(s.to_string());
            cur = s.source();
        }
        out
    }

    /// No message repeats its source's: printing the chain (as `anyhow`
    /// and the CLI do) says each thing once, and says all of it.
    #[test]
    fn error_chains_say_each_thing_once() {
        struct Failing;
        impl crate::chart::Component for Failing {
            fn name(&self) -> &str {
                "web"
            }
            fn namespace(&self) -> &str {
                "apps"
            }
            fn render_manifests(
                &self,
            ) -> Result<std::collections::BTreeMap<String, String>, crate::chart::component::BoxError>
            {
                Err("no image given".into())
            }
        }
        let component = crate::chart::chart_from_component(&Failing).unwrap_err();

        let mut manifests = std::collections::BTreeMap::new();
        manifests.insert(
            "cm.yaml".to_string(),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n".to_string(),
        );
        let mut chart = crate::chart::chart_from_manifests("web", "apps", &manifests).unwrap();
        chart.templates[0].data = b"a: {{ .Values.x }\n".to_vec().into();
        let store = crate::release::store::memory::MemoryStore::new();
        let cluster = crate::cluster::sim::SimCluster::in_memory();
        let plan = Planner::new(&store, "memory:", &cluster)
            .plan(&[DesiredRelease::new("web", "apps", chart)])
            .unwrap_err();
        let upgrader = UpgraderError::from(plan);

        let dir = tempfile::tempdir().unwrap();
        let config = config::Loaded::from_file(dir.path().join("missing.yaml")).unwrap_err();

        let cases: [(&dyn std::error::Error, &str); 3] = [
            (
                &component,
                "component \"web\": rendering manifests failed: no image given",
            ),
            (
                &upgrader,
                "planning: release apps/web: rendering chart web-0.1.0: parse error at \
                 (web/templates/cm.yaml:1): unexpected \"}\" in operand",
            ),
            (
                &config,
                &format!(
                    "reading config {}: No such file or directory (os error 2)",
                    dir.path().join("missing.yaml").display()
                ),
            ),
        ];
        for (e, whole) in cases {
            let messages = chain(e);
            for pair in messages.windows(2) {
                assert!(
                    !pair[0].contains(&pair[1]),
                    "{:?} repeats its source {:?}",
                    pair[0],
                    pair[1]
                );
            }
            assert_eq!(messages.join(": "), whole);
        }
        // The chain reaches the render error, and the template error in it.
        let mut cur: Option<&dyn std::error::Error> = Some(&upgrader);
        let mut place = None;
        while let Some(e) = cur {
            if let Some(crate::render::RenderError::Template(t)) = e.downcast_ref() {
                place = Some((t.template.clone(), t.line, t.column));
            }
            cur = e.source();
        }
        assert_eq!(
            place,
            Some(("web/templates/cm.yaml".to_string(), Some(1), Some(16)))
        );
    }
}
