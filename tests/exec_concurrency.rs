//! Releases applied at the same time (`--concurrency`), on the simulated
//! cluster with a driven clock: independent releases overlap, `needs`
//! order is kept, the plan is the same whatever the concurrency, and two
//! applies of overlapping plans at once never corrupt a record.
//! (The fault sweep with concurrent releases is in tests/exec_model.rs.)
mod plan_common;

use plan_common::*;
use rudder::cluster::sim::SimCluster;
use rudder::exec::journal::JournalError;
use rudder::exec::{
    Clock, DrivenClock, Event, ExecError, ExecOptions, Executor, Journal, Progress,
};
use rudder::plan::{DesiredRelease, Need, ReleaseRef};
use rudder::release::store::memory::MemoryStore;
use rudder::release::{Status, Store};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn deployment(name: &str, image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: {name}\n  template:\n    metadata:\n      labels:\n        app: {name}\n    spec:\n      containers:\n      - name: c\n        image: {image}\n"
    )
}

fn config_map(name: &str, v: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  v: {v:?}\n")
}

/// A release of one Deployment and three ConfigMaps (one install-order
/// group of three), in namespace `apps`.
fn release(name: &str, image: &str) -> DesiredRelease {
    let docs = [
        ("d.yaml".to_string(), deployment(name, image)),
        (
            "a.yaml".to_string(),
            config_map(&format!("{name}-a"), image),
        ),
        (
            "b.yaml".to_string(),
            config_map(&format!("{name}-b"), image),
        ),
        (
            "c.yaml".to_string(),
            config_map(&format!("{name}-c"), image),
        ),
    ];
    let refs: Vec<(&str, &str)> = docs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    desired(name, "apps", chart(name, "1.0.0", &refs))
}

fn needs(d: &mut DesiredRelease, other: &str) {
    d.needs.push(Need {
        release: ReleaseRef {
            namespace: "apps".into(),
            name: other.into(),
        },
        reason: String::new(),
    });
}

/// Collects events.
#[derive(Default)]
struct Log(Mutex<Vec<Event>>);

impl Progress for Log {
    fn event(&self, e: &Event) {
        self.0.lock().unwrap().push(e.clone());
    }
}

impl Log {
    /// `started r` / `done r`, in order.
    fn steps(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                Event::ReleaseStarted { release, .. } => Some(format!("started {release}")),
                Event::ReleaseDone { release, .. } => Some(format!("done {release}")),
                _ => None,
            })
            .collect()
    }
}

struct Bed {
    store: MemoryStore,
    cluster: SimCluster,
    clock: DrivenClock,
}

impl Bed {
    /// Objects are ready `delay` (simulated) after their write.
    fn new(delay: Duration) -> Bed {
        let clock = DrivenClock::new();
        let c = clock.clone();
        Bed {
            store: MemoryStore::new(),
            cluster: SimCluster::in_memory()
                .with_clock(Arc::new(move || c.now()))
                .with_default_delay(delay),
            clock,
        }
    }

    fn plan(&self, rels: &[DesiredRelease]) -> rudder::plan::Plan {
        rudder::plan::planner::Planner::new(&self.store, "memory:", &self.cluster)
            .plan(rels)
            .expect("plan")
    }

    /// Applies with `concurrency`; returns the simulated time it took.
    fn apply(
        &self,
        plan: &rudder::plan::Plan,
        concurrency: usize,
        journal: Journal,
        log: &Log,
    ) -> Result<(rudder::exec::Report, Duration), ExecError> {
        let t0 = self.clock.now();
        let r = Executor::new(&self.store, "memory:", &self.cluster, journal, &self.clock)
            .with_progress(log)
            .with_options(ExecOptions {
                concurrency,
                ..ExecOptions::default()
            })
            .apply(plan)?;
        Ok((r, self.clock.now() - t0))
    }

    /// (version, status) of every record of `name`.
    fn history(&self, name: &str) -> Vec<(u64, Status)> {
        let mut h: Vec<_> = self
            .store
            .history("apps", name)
            .unwrap()
            .into_iter()
            .map(|r| (r.version, r.info.status))
            .collect();
        h.sort();
        h
    }
}

/// r0, r1, r2 independent; r3 needs r0.
fn four() -> Vec<DesiredRelease> {
    let mut rels: Vec<DesiredRelease> = (0..4)
        .map(|i| release(&format!("r{i}"), "nginx:1"))
        .collect();
    needs(&mut rels[3], "r0");
    rels
}

#[test]
fn independent_releases_wait_at_the_same_time_and_needs_order_is_kept() {
    let ready = Duration::from_secs(2);

    // One at a time: four waits of 2 s, one after another.
    let bed = Bed::new(ready);
    let plan = bed.plan(&four());
    let log = Log::default();
    let (report, took) = bed.apply(&plan, 1, Journal::in_memory(), &log).unwrap();
    assert!(report.success(), "{report:?}");
    assert!(took >= 4 * ready, "sequential took {took:?}");
    assert_eq!(
        log.steps(),
        [
            "started apps/r0",
            "done apps/r0",
            "started apps/r1",
            "done apps/r1",
            "started apps/r2",
            "done apps/r2",
            "started apps/r3",
            "done apps/r3",
        ]
    );

    // Concurrently, on a fresh cluster, from the same plan data: r0, r1
    // and r2 wait together; r3 starts once r0 is done.
    let bed2 = Bed::new(ready);
    let plan2 = bed2.plan(&four());
    assert_eq!(
        serde_json::to_value(&plan.releases).unwrap(),
        serde_json::to_value(&plan2.releases).unwrap(),
        "the plan does not depend on the concurrency"
    );
    let log = Log::default();
    let (report, took) = bed2.apply(&plan2, 8, Journal::in_memory(), &log).unwrap();
    assert!(report.success(), "{report:?}");
    assert!(
        took >= 2 * ready && took < 3 * ready,
        "concurrent took {took:?}"
    );
    let steps = log.steps();
    let at = |s: &str| steps.iter().position(|x| x == s).unwrap();
    for i in 0..3 {
        for j in 0..3 {
            assert!(
                at(&format!("started apps/r{i}")) < at(&format!("done apps/r{j}")),
                "r{i} started after r{j} was done: {steps:?}"
            );
        }
    }
    assert!(at("done apps/r0") < at("started apps/r3"), "{steps:?}");
    for name in ["r0", "r1", "r2", "r3"] {
        assert_eq!(bed2.history(name), [(1, Status::Deployed)]);
    }
}

#[test]
fn a_failure_stops_new_releases_and_lets_running_ones_finish() {
    let bed = Bed::new(Duration::from_secs(2));
    let mut rels = four();
    // r1 is refused by the server; r0 and r2 run beside it; r3 (after r0)
    // is not started once r1 has failed... unless r0 was done first.
    let bad = config_map("r1-a", "x").replace(
        "metadata:\n",
        "metadata:\n  annotations:\n    sim.rudder.io/reject: \"bad\"\n",
    );
    let docs = [("a.yaml", bad.as_str())];
    rels[1] = desired("r1", "apps", chart("r1", "1.0.0", &docs));
    let plan = bed.plan(&rels);
    let log = Log::default();
    let (report, _) = bed.apply(&plan, 8, Journal::in_memory(), &log).unwrap();
    let outcomes: Vec<String> = report
        .releases
        .iter()
        .map(|r| format!("{} {}", r.release, r.outcome))
        .collect();
    // r1 fails at once (its write is refused, before any wait); r0 and
    // r2 were already running and finish; r3 waits for r0, which is not
    // done before r1 fails, so it is not attempted.
    assert_eq!(
        outcomes,
        [
            "apps/r0 installed",
            "apps/r1 uninstalled-after-failure",
            "apps/r2 installed",
            "apps/r3 not-attempted",
        ]
    );
}

#[test]
fn two_applies_of_overlapping_plans_at_once_never_corrupt_records() {
    for round in 0..10 {
        let bed = Bed::new(Duration::from_millis(500));
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::at(dir.path());
        // A: r0, r1. B: r1, r2 (another image). Both planned first.
        let a = bed.plan(&[release("r0", "nginx:1"), release("r1", "nginx:1")]);
        let b = bed.plan(&[release("r1", "nginx:2"), release("r2", "nginx:2")]);
        let (ra, rb) = std::thread::scope(|s| {
            let ta = s.spawn(|| bed.apply(&a, 8, journal.clone(), &Log::default()));
            let tb = s.spawn(|| bed.apply(&b, 8, journal.clone(), &Log::default()));
            (ta.join().unwrap(), tb.join().unwrap())
        });
        let mut ok = 0;
        for r in [&ra, &rb] {
            match r {
                Ok((report, _)) => {
                    assert!(report.success(), "round {round}: {report:?}");
                    ok += 1;
                }
                // The other apply holds r1 (the journal's lock), or it was
                // done first and this plan is stale: refused before any
                // write.
                Err(ExecError::Journal(JournalError::Held { release, .. })) => {
                    assert_eq!(release, "apps/r1", "round {round}")
                }
                Err(ExecError::Stale(_)) => {}
                Err(e) => panic!("round {round}: {e}"),
            }
        }
        assert!(ok >= 1, "round {round}: both refused: {ra:?} {rb:?}");
        // Every release either untouched or exactly one deployed record.
        for name in ["r0", "r1", "r2"] {
            let h = bed.history(name);
            assert!(
                h.is_empty() || h == [(1, Status::Deployed)],
                "round {round}: {name}: {h:?}"
            );
        }
        // The releases of a refused plan are untouched as a whole.
        if ra.is_err() {
            assert!(bed.history("r0").is_empty(), "round {round}");
        }
        if rb.is_err() {
            assert!(bed.history("r2").is_empty(), "round {round}");
        }
    }
}
