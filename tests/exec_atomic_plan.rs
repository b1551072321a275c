//! An atomic plan (`--atomic-plan`, `atomicPlan: true`) on the simulated
//! cluster: one release of three fails its wait, and every release the
//! apply changed returns to where it was (an upgrade to its revision
//! before the apply, an install uninstalled); a crash at any write of the
//! apply or of its unwind is finished by the next run's recovery.
mod plan_common;

use plan_common::*;
use rudder::cluster::ownership;
use rudder::cluster::sim::SimCluster;
use rudder::exec::{
    crash_thread_at, Clock, Crash, CrossRelease, DrivenClock, ExecOptions, Executor, Journal,
    Outcome, Report, Reverted,
};
use rudder::plan::{DesiredRelease, Plan};
use rudder::release::store::memory::MemoryStore;
use rudder::release::{Status, Store};
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

/// A release of a Deployment and a ConfigMap at `version` (the image tag
/// and the data), the Deployment never ready when `broken`.
fn release(name: &str, version: u8, broken: bool) -> DesiredRelease {
    let ann = if broken {
        "  annotations:\n    sim.rudder.io/ready: never\n"
    } else {
        ""
    };
    let deploy = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n{ann}spec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: {name}\n  template:\n    metadata:\n      labels:\n        app: {name}\n    spec:\n      containers:\n      - name: c\n        image: nginx:1.{version}\n"
    );
    let cm = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-v{version}\ndata:\n  v: \"{version}\"\n"
    );
    let mut d = desired(
        name,
        "apps",
        chart(
            name,
            &format!("1.{version}.0"),
            &[("d.yaml", &deploy), ("cm.yaml", &cm)],
        ),
    );
    d.options.atomic = false;
    d.options.wait = true;
    d.options.timeout = Duration::from_secs(20);
    d
}

struct Bed {
    store: MemoryStore,
    cluster: SimCluster,
    clock: DrivenClock,
    dir: tempfile::TempDir,
}

impl Bed {
    fn new() -> Bed {
        let clock = DrivenClock::new();
        let c = clock.clone();
        Bed {
            store: MemoryStore::new(),
            cluster: SimCluster::in_memory()
                .with_clock(Arc::new(move || c.now()))
                .with_default_delay(Duration::from_secs(1)),
            clock,
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn executor(&self, atomic_plan: bool) -> Executor<'_> {
        Executor::new(
            &self.store,
            "memory:",
            &self.cluster,
            Journal::at(self.dir.path().join("journal")),
            &self.clock,
        )
        .with_options(ExecOptions {
            cross_release: if atomic_plan {
                CrossRelease::AtomicPlan
            } else {
                CrossRelease::Stop
            },
            ..ExecOptions::default()
        })
    }

    fn plan(&self, rels: &[DesiredRelease], atomic_plan: bool) -> Plan {
        let mut opts = rudder::plan::planner::PlanOptions::default();
        if atomic_plan {
            opts.cross_release = rudder::plan::planner::ATOMIC_PLAN.into();
        }
        rudder::plan::planner::Planner::new(&self.store, "memory:", &self.cluster)
            .with_options(opts)
            .plan(rels)
            .expect("plan")
    }

    /// r0 and r1 installed at version 1; r2 not installed.
    fn before() -> Bed {
        let bed = Bed::new();
        let plan = bed.plan(&[release("r0", 1, false), release("r1", 1, false)], false);
        let report = bed.executor(false).apply(&plan).expect("apply");
        assert!(report.success(), "{report:?}");
        bed
    }

    /// The upgrade of r0 and r1 to version 2 and the install of r2, with
    /// no `needs` between them; r1's Deployment is never ready.
    fn failing() -> Vec<DesiredRelease> {
        vec![
            release("r0", 2, false),
            release("r1", 2, true),
            release("r2", 2, false),
        ]
    }

    /// (revision, status, description) of every record of `name`.
    fn history(&self, name: &str) -> Vec<(u64, Status, String)> {
        let mut h: Vec<_> = self
            .store
            .history("apps", name)
            .unwrap()
            .into_iter()
            .map(|r| (r.version, r.info.status, r.info.description))
            .collect();
        h.sort_by_key(|x| x.0);
        h
    }

    /// name -> (kind, image or data) of the live objects a release owns.
    fn owned(&self, release: &str) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for o in self.cluster.snapshot().expect("snapshot") {
            if !ownership::owned_by(&o, release, "apps") {
                continue;
            }
            let what = match o["kind"].as_str() {
                Some("Deployment") => {
                    o["spec"]["template"]["spec"]["containers"][0]["image"].to_string()
                }
                _ => o["data"]["v"].to_string(),
            };
            out.insert(o["metadata"]["name"].as_str().unwrap().to_string(), what);
        }
        out
    }

    /// Every release is where it was before the apply: r0 and r1 at
    /// version 1 (one deployed record, none pending; their live objects
    /// version 1's), r2 owning nothing and deployed nowhere.
    fn assert_back(&self, case: &str) {
        let v1 = |name: &str| {
            BTreeMap::from([
                (name.to_string(), "\"nginx:1.1\"".to_string()),
                (format!("{name}-v1"), "\"1\"".to_string()),
            ])
        };
        for name in ["r0", "r1"] {
            let h = self.history(name);
            let deployed: Vec<_> = h.iter().filter(|r| r.1 == Status::Deployed).collect();
            assert_eq!(deployed.len(), 1, "{case}: {name}: {h:?}");
            assert!(!h.iter().any(|r| r.1.is_pending()), "{case}: {name}: {h:?}");
            let rec = self.store.get("apps", name, deployed[0].0).unwrap();
            assert!(rec.manifest.contains("nginx:1.1"), "{case}: {name}: {h:?}");
            assert_eq!(self.owned(name), v1(name), "{case}: {name}");
        }
        let h = self.history("r2");
        assert!(
            h.iter()
                .all(|r| r.1 == Status::Uninstalled || r.1 == Status::Failed),
            "{case}: r2: {h:?}"
        );
        assert!(
            h.last().is_none_or(|r| r.1 == Status::Uninstalled),
            "{case}: r2: {h:?}"
        );
        assert!(
            self.owned("r2").is_empty(),
            "{case}: r2: {:?}",
            self.owned("r2")
        );
    }

    /// The transaction journals that did not end.
    fn open_transactions(&self) -> usize {
        Journal::at(self.dir.path().join("journal"))
            .open_transactions()
            .unwrap()
            .len()
    }
}

fn outcomes(r: &Report) -> Vec<String> {
    r.releases
        .iter()
        .map(|o| format!("{} {}", o.release, o.outcome))
        .collect()
}

#[test]
fn one_release_of_three_fails_its_wait_and_all_three_return() {
    let bed = Bed::before();
    let plan = bed.plan(&Bed::failing(), true);
    assert_eq!(plan.failure_policy.cross_release, "rollback-all-in-reverse");
    // The plan shows every release's rollback point, release by release.
    let text = rudder::plan::view::human(&plan, false);
    let points: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("atomic plan:"))
        .collect();
    assert_eq!(
        points,
        [
            "atomic plan: any failure rolls it back to revision 1",
            "atomic plan: any failure rolls it back to revision 1",
            "atomic plan: any failure uninstalls it",
        ],
        "{text}"
    );
    assert!(text.contains("Atomic plan: if any release fails"), "{text}");
    let report = bed.executor(true).apply(&plan).expect("apply");
    assert!(!report.success());
    assert_eq!(
        outcomes(&report),
        [
            "apps/r0 reverted: rolled back to revision 1 (as revision 3)",
            "apps/r1 rolled-back",
            "apps/r2 reverted: uninstalled",
        ]
    );
    let r1 = &report.releases[1];
    assert_eq!(r1.revision, 3);
    assert!(
        r1.error.as_deref().unwrap_or("").contains("atomic-plan")
            && r1.error.as_deref().unwrap_or("").contains("not ready"),
        "{r1:?}"
    );
    bed.assert_back("wait failure");
    // `rudder history` tells it in Helm's words.
    let words = |name: &str| -> Vec<(u64, Status, String)> { bed.history(name) };
    assert_eq!(
        words("r0"),
        [
            (1, Status::Superseded, "Install complete".into()),
            (2, Status::Superseded, "Upgrade complete".into()),
            (3, Status::Deployed, "Rollback to 1".into()),
        ]
    );
    let r1h = words("r1");
    assert_eq!(r1h.len(), 3, "{r1h:?}");
    assert_eq!(r1h[1].1, Status::Failed);
    assert!(r1h[1].2.starts_with("Upgrade \"r1\" failed"), "{r1h:?}");
    assert_eq!(r1h[2], (3, Status::Deployed, "Rollback to 1".into()));
    assert_eq!(
        words("r2"),
        [(1, Status::Uninstalled, "Uninstallation complete".into())]
    );
    assert_eq!(bed.open_transactions(), 0);

    // Without the failure, the plan (replanned) goes through and commits.
    let plan = bed.plan(
        &[
            release("r0", 2, false),
            release("r1", 2, false),
            release("r2", 2, false),
        ],
        true,
    );
    let report = bed.executor(true).apply(&plan).expect("apply");
    assert!(report.success(), "{report:?}");
    assert_eq!(bed.open_transactions(), 0);
}

#[test]
fn atomic_plan_is_the_plans_own_policy_too() {
    // A plan made atomic is applied atomically by an executor whose
    // options say nothing (a saved plan applied with `apply --plan`).
    let bed = Bed::before();
    let plan = bed.plan(&Bed::failing(), true);
    let report = bed.executor(false).apply(&plan).expect("apply");
    assert!(matches!(
        report.releases[0].outcome,
        Outcome::Reverted(Reverted::RolledBack { to: 1, .. })
    ));
    bed.assert_back("plan policy");
}

/// A crash after every durable write k of the failing atomic apply (its
/// releases, its unwind), then the next run's recovery: every release is
/// back where it was, and nothing of the transaction stays open.
#[test]
fn a_crash_at_any_write_of_an_atomic_plan_or_its_unwind_is_finished_by_the_next_run() {
    let mut crashed = 0;
    let mut in_unwind = 0;
    for k in 1..=600 {
        let bed = Bed::before();
        let plan = bed.plan(&Bed::failing(), true);
        crash_thread_at(k);
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| bed.executor(true).apply(&plan)));
        crash_thread_at(0);
        match r {
            Ok(Ok(_)) => break,
            Ok(Err(e)) => panic!("k={k}: executor refused: {e}"),
            Err(p) if p.downcast_ref::<Crash>().is_some() => {}
            Err(p) => std::panic::resume_unwind(p),
        }
        crashed += 1;
        // Open, unless the crash came after the transaction's last entry.
        let open = bed.open_transactions();
        assert!(open <= 1, "k={k}");
        if bed
            .history("r0")
            .iter()
            .chain(&bed.history("r1"))
            .any(|r| r.2.starts_with("Rollback to"))
            || bed
                .history("r2")
                .iter()
                .any(|r| r.1 == Status::Uninstalling)
        {
            in_unwind += 1;
        }
        let done = bed.executor(true).recover_transactions().expect("recover");
        assert_eq!(done.len(), open, "k={k}: {done:?}");
        assert_eq!(bed.open_transactions(), 0, "k={k}");
        bed.assert_back(&format!("crash at write {k}"));
        // The releases go on normally afterwards.
        let plan = bed.plan(
            &[
                release("r0", 2, false),
                release("r1", 2, false),
                release("r2", 2, false),
            ],
            true,
        );
        let report = bed.executor(true).apply(&plan).expect("apply");
        assert!(report.success(), "k={k}: {report:?}");
    }
    assert!(crashed > 30, "only {crashed} writes");
    assert!(in_unwind > 5, "only {in_unwind} crashes in the unwind");
    eprintln!("atomic plan: {crashed} crash points, {in_unwind} in the unwind");
}
