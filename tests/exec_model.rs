//! Model-based property tests of the executor on the simulated cluster:
//! generated plans of up to 4 releases run with a fault injected at every
//! write k (a failed write, a crash and rerun), and with never-ready and
//! rejected objects. After each run (and rerun), the invariants of
//! upgrades.md §8.2 (7–13) that the state can show must hold:
//!
//! - every release has exactly one `deployed` record and none `pending-*`;
//! - the live objects each release owns are exactly the objects of its
//!   deployed revision, with that revision's values (so nothing a failed
//!   run created is left over, and what it deleted is back);
//! - a successful run, replanned, is all `noop`.
mod plan_common;

use plan_common::*;
use proptest::prelude::*;
use rudder::cluster::ownership;
use rudder::cluster::sim::{SimCluster, SimFaults};
use rudder::exec::{
    crash_thread_at, Clock, Crash, DrivenClock, ExecOptions, Executor, Journal, DEFAULT_CONCURRENCY,
};
use rudder::plan::{DesiredRelease, Need, ReleaseAction, ReleaseRef};
use rudder::release::{Status, Store};
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

static CASES: AtomicU64 = AtomicU64::new(0);

/// One object of a generated chart.
#[derive(Debug, Clone)]
struct Obj {
    kind: u8, // 0 ConfigMap, 1 Deployment
    name: String,
    value: u8,
}

fn doc(o: &Obj, annotation: Option<(&str, &str)>) -> String {
    let ann = annotation
        .map(|(k, v)| format!("  annotations:\n    {k}: {v:?}\n"))
        .unwrap_or_default();
    match o.kind {
        0 => format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {}\n{ann}data:\n  v: \"{}\"\n",
            o.name, o.value
        ),
        _ => format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {}\n{ann}spec:\n  replicas: {}\n  selector:\n    matchLabels:\n      app: {}\n  template:\n    metadata:\n      labels:\n        app: {}\n    spec:\n      containers:\n      - name: c\n        image: nginx:1.{}\n",
            o.name,
            1 + o.value % 3,
            o.name,
            o.name,
            o.value
        ),
    }
}

fn release(
    name: &str,
    version: &str,
    objs: &[Obj],
    bad: Option<(&str, &str, &str)>,
) -> DesiredRelease {
    let docs: Vec<(String, String)> = objs
        .iter()
        .map(|o| {
            let ann = bad.filter(|b| b.0 == o.name).map(|b| (b.1, b.2));
            (format!("{}.yaml", o.name), doc(o, ann))
        })
        .collect();
    let refs: Vec<(&str, &str)> = docs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let mut d = desired(name, "apps", chart(name, version, &refs));
    d.options.timeout = Duration::from_secs(30);
    d
}

#[derive(Debug, Clone)]
enum Fault {
    FailWrite(u64),
    Crash(u64),
    NeverReady,
    Reject,
}

fn arb_objs() -> impl Strategy<Value = Vec<Obj>> {
    prop::collection::btree_map("[a-c]", (0u8..2, 0u8..5), 1..4).prop_map(|m| {
        m.into_iter()
            .map(|(name, (kind, value))| Obj {
                kind,
                name: format!("o-{name}"),
                value,
            })
            .collect()
    })
}

/// A release's objects before and after.
fn arb_release() -> impl Strategy<Value = (Vec<Obj>, Vec<Obj>)> {
    (arb_objs(), arb_objs())
}

struct Bed {
    store: rudder::release::store::memory::MemoryStore,
    cluster: SimCluster,
    clock: DrivenClock,
    dir: tempfile::TempDir,
    /// How long objects take to become ready (simulated time).
    delay: Duration,
    /// Releases run at the same time.
    concurrency: usize,
}

impl Bed {
    fn new(delay: Duration, concurrency: usize) -> Bed {
        let clock = DrivenClock::new();
        let dir = tempfile::tempdir().expect("tempdir");
        let cluster = Bed::handle(dir.path(), &clock, SimFaults::default(), delay);
        Bed {
            store: rudder::release::store::memory::MemoryStore::new(),
            cluster,
            clock,
            dir,
            delay,
            concurrency,
        }
    }

    /// A handle on the persisted simulated cluster, with its own faults.
    fn handle(
        dir: &std::path::Path,
        clock: &DrivenClock,
        faults: SimFaults,
        delay: Duration,
    ) -> SimCluster {
        let c = clock.clone();
        SimCluster::open(dir.join("cluster"))
            .expect("sim")
            .with_clock(Arc::new(move || c.now()))
            .with_default_delay(delay)
            .with_faults(faults)
    }

    fn set_faults(&mut self, faults: SimFaults) {
        self.cluster = Bed::handle(self.dir.path(), &self.clock, faults, self.delay);
    }

    fn executor(&self) -> Executor<'_> {
        Executor::new(
            &self.store,
            "memory:",
            &self.cluster,
            Journal::at(self.dir.path().join("journal")),
            &self.clock,
        )
        .with_options(ExecOptions {
            concurrency: self.concurrency,
            ..ExecOptions::default()
        })
    }

    fn plan(&self, rels: &[DesiredRelease]) -> rudder::plan::Plan {
        rudder::plan::planner::Planner::new(&self.store, "memory:", &self.cluster)
            .plan(rels)
            .expect("plan")
    }

    /// Executes, turning a simulated crash into a return.
    fn run(&self, rels: &[DesiredRelease], crash_at: u64) -> bool {
        let plan = self.plan(rels);
        crash_thread_at(crash_at);
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| self.executor().apply(&plan)));
        crash_thread_at(0);
        match r {
            Ok(Ok(report)) => report.success(),
            Ok(Err(e)) => panic!("executor refused: {e}"),
            Err(p) if p.downcast_ref::<Crash>().is_some() => false,
            Err(p) => std::panic::resume_unwind(p),
        }
    }

    fn recover(&self, rels: &[DesiredRelease]) {
        for r in rels {
            self.executor()
                .recover(&r.namespace, &r.name)
                .expect("recover");
        }
    }

    /// The invariants every settled state must satisfy.
    fn check(&self, rels: &[DesiredRelease]) -> Result<(), TestCaseError> {
        for r in rels {
            let hist = self.store.history(&r.namespace, &r.name).expect("history");
            if hist.is_empty() {
                // A failed first install is uninstalled: nothing may be owned.
                let owned = self.owned(&r.name);
                prop_assert!(
                    owned.is_empty(),
                    "{}: no record but owns {:?}",
                    r.name,
                    owned
                );
                continue;
            }
            let deployed: Vec<_> = hist
                .iter()
                .filter(|h| h.info.status == Status::Deployed)
                .collect();
            prop_assert_eq!(
                deployed.len(),
                1,
                "{}: deployed records {:?}",
                r.name,
                hist.iter()
                    .map(|h| (h.version, h.info.status))
                    .collect::<Vec<_>>()
            );
            prop_assert!(
                !hist.iter().any(|h| h.info.status.is_pending()),
                "{}: pending left",
                r.name
            );
            // Live owned objects = the deployed manifest's, with its values.
            let want = manifest_values(&deployed[0].manifest);
            let got = self.owned(&r.name);
            prop_assert_eq!(
                got,
                want,
                "{}: live objects differ from revision {}",
                r.name,
                deployed[0].version
            );
        }
        Ok(())
    }

    /// name -> (kind, value) of the live objects owned by a release.
    fn owned(&self, release: &str) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for o in self.cluster.snapshot().expect("snapshot") {
            if !ownership::owned_by(&o, release, "apps") {
                continue;
            }
            let name = o["metadata"]["name"].as_str().unwrap_or("").to_string();
            out.insert(name, summary(&o));
        }
        out
    }
}

fn summary(o: &serde_json::Value) -> String {
    match o["kind"].as_str() {
        Some("ConfigMap") => format!("cm {}", o["data"]["v"]),
        Some("Deployment") => format!(
            "deploy {} {}",
            o["spec"]["replicas"], o["spec"]["template"]["spec"]["containers"][0]["image"]
        ),
        k => format!("{k:?}"),
    }
}

fn manifest_values(manifest: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for d in rudder::manifest::split::split_manifests(manifest) {
        let body = d.split_once('\n').map_or("", |(first, rest)| {
            if first.starts_with("# Source") {
                rest
            } else {
                d
            }
        });
        let node = rudder::yaml::parse_yaml_to_json(body).expect("manifest");
        let v = serde_json::to_value(&node).expect("json");
        if v.is_null() {
            continue;
        }
        out.insert(
            v["metadata"]["name"].as_str().unwrap_or("").to_string(),
            summary(&v),
        );
    }
    out
}

/// Runs one (plan, fault) case; returns whether the fault struck (a
/// failed write or crash at k beyond the run's last write does not).
fn scenario(
    specs: &[(Vec<Obj>, Vec<Obj>)],
    chain: bool,
    fault: Fault,
) -> Result<bool, TestCaseError> {
    scenario_on(
        Bed::new(Duration::ZERO, DEFAULT_CONCURRENCY),
        specs,
        chain,
        fault,
    )
}

/// [`scenario`] on a given bed.
fn scenario_on(
    mut bed: Bed,
    specs: &[(Vec<Obj>, Vec<Obj>)],
    chain: bool,
    fault: Fault,
) -> Result<bool, TestCaseError> {
    CASES.fetch_add(1, Ordering::Relaxed);
    let names: Vec<String> = (0..specs.len()).map(|i| format!("r{i}")).collect();
    let mk = |v2: bool, bad: Option<(&str, &str, &str)>, which: usize| -> Vec<DesiredRelease> {
        specs
            .iter()
            .enumerate()
            .map(|(i, (a, b))| {
                let objs: Vec<Obj> = (if v2 { b } else { a })
                    .iter()
                    .map(|o| Obj {
                        name: format!("{}-{}", names[i], o.name),
                        ..o.clone()
                    })
                    .collect();
                let mut d = release(
                    &names[i],
                    if v2 { "2.0.0" } else { "1.0.0" },
                    &objs,
                    if i == which { bad } else { None },
                );
                if chain && i > 0 {
                    d.needs.push(Need {
                        release: ReleaseRef {
                            namespace: "apps".into(),
                            name: names[i - 1].clone(),
                        },
                        reason: String::new(),
                    });
                }
                d
            })
            .collect()
    };
    let v1 = mk(false, None, usize::MAX);
    prop_assert!(bed.run(&v1, 0), "v1 install failed");
    bed.check(&v1)?;
    let last = specs.len() - 1;
    let target_obj = format!("{}-{}", names[last], specs[last].1[0].name);
    let v2 = match fault {
        Fault::NeverReady => mk(
            true,
            Some((&target_obj, "sim.rudder.io/ready", "never")),
            last,
        ),
        Fault::Reject => mk(
            true,
            Some((&target_obj, "sim.rudder.io/reject", "bad flag --foo")),
            last,
        ),
        _ => mk(true, None, usize::MAX),
    };
    match fault {
        Fault::FailWrite(k) => {
            bed.set_faults(SimFaults {
                fail_at: Some(k),
                ..SimFaults::default()
            });
            let ok = bed.run(&v2, 0);
            bed.set_faults(SimFaults::default());
            bed.check(&v2)?;
            return Ok(!ok);
        }
        Fault::Crash(k) => {
            let ok = bed.run(&v2, k);
            let struck = !ok;
            if !ok {
                bed.recover(&v2);
                bed.check(&v2)?;
                // The rerun succeeds.
                prop_assert!(bed.run(&v2, 0), "rerun failed");
            }
            bed.check(&v2)?;
            let p = bed.plan(&v2);
            prop_assert!(
                p.releases.iter().all(|r| r.action == ReleaseAction::Noop),
                "not noop after success"
            );
            return Ok(struck);
        }
        Fault::NeverReady | Fault::Reject => {
            let ok = bed.run(&v2, 0);
            let deploys = specs[last].1[0].kind == 1;
            if matches!(fault, Fault::Reject) || deploys {
                prop_assert!(!ok, "a broken release succeeded");
            }
            bed.check(&v2)?;
        }
    }
    Ok(true)
}

fn arb_specs() -> impl Strategy<Value = Vec<(Vec<Obj>, Vec<Obj>)>> {
    prop::collection::vec(arb_release(), 1..4)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4, .. ProptestConfig::default() })]

    /// A failed write (500, retries failing too) at every write k, until
    /// k is past the run's last write.
    #[test]
    fn failed_write_at_every_k(specs in arb_specs(), chain: bool) {
        for k in 1..=200 {
            if !scenario(&specs, chain, Fault::FailWrite(k))? {
                break;
            }
        }
    }

    /// A crash after every durable write k, then recovery and a rerun,
    /// until k is past the run's last write.
    #[test]
    fn crash_at_every_k(specs in arb_specs(), chain: bool) {
        for k in 1..=400 {
            if !scenario(&specs, chain, Fault::Crash(k))? {
                break;
            }
        }
    }

    /// Never-ready and rejected objects roll back.
    #[test]
    fn broken_objects_roll_back(specs in arb_specs(), chain: bool) {
        scenario(&specs, chain, Fault::NeverReady)?;
        scenario(&specs, chain, Fault::Reject)?;
    }
}

/// Three releases with no `needs` between them, each with a Deployment
/// (ready 2 s of simulated time after its write) and ConfigMaps, that
/// change every object on the upgrade.
fn three_concurrent() -> Vec<(Vec<Obj>, Vec<Obj>)> {
    let o = |kind, name: &str, value| Obj {
        kind,
        name: name.into(),
        value,
    };
    (0..3)
        .map(|i| {
            (
                vec![o(1, "o-a", i), o(0, "o-b", 1), o(0, "o-c", 2)],
                vec![o(1, "o-a", i + 1), o(0, "o-b", 3), o(0, "o-d", 4)],
            )
        })
        .collect()
}

/// The fault sweep with the releases running at the same time: a failed
/// write at every write k of the upgrade of three concurrent releases.
#[test]
fn concurrent_releases_failed_write_at_every_k() {
    let specs = three_concurrent();
    let mut struck = 0;
    for k in 1..=300 {
        let bed = Bed::new(Duration::from_secs(2), 3);
        if !scenario_on(bed, &specs, false, Fault::FailWrite(k)).unwrap() {
            break;
        }
        struck += 1;
    }
    // Every cluster write of the three upgrades was hit: per release,
    // o-a and o-b updated, o-d created, o-c deleted.
    assert_eq!(struck, 12);
}

/// A crash after every durable write k of the upgrade of three concurrent
/// releases (the other releases' threads die with it), then recovery and
/// a rerun.
#[test]
fn concurrent_releases_crash_at_every_k() {
    let specs = three_concurrent();
    let mut struck = 0;
    for k in 1..=400 {
        let bed = Bed::new(Duration::from_secs(2), 3);
        if !scenario_on(bed, &specs, false, Fault::Crash(k)).unwrap() {
            break;
        }
        struck += 1;
    }
    assert!(struck > 30, "only {struck} writes");
}

#[test]
fn zz_report_case_count() {
    // Printed with --nocapture; the count covers the tests that ran before.
    eprintln!("exec_model cases so far: {}", CASES.load(Ordering::Relaxed));
}
