//! The executor against the planner, side by side on the same state: 200
//! releases of 100 objects each (50 ConfigMaps and 50 Deployments of about
//! 1 KiB, the workload of `benches/common`), rendering excluded.
//!
//! Measured, in one run:
//! - `exec/plan-install-200x100`, `exec/apply-install-200x100`: planning the
//!   first install of every release, and executing that plan (every object
//!   created, every record written);
//! - `exec/plan-upgrade-200x100`, `exec/apply-upgrade-200x100`: planning an
//!   upgrade where every tenth object changes, and executing it (10 writes a
//!   release, plus the records);
//! - with `EXEC_BENCH_SCALE=1`, the same for 2000 releases (the scaling
//!   ratio; it takes several minutes).
//!
//! **Benchmark mode (durability off).** The store is the in-memory
//! [`MemoryStore`], the cluster an in-memory [`SimCluster`] (no files, so
//! nothing to fsync; its controllers converge at once, the default delay
//! being zero), and the journal in memory ([`Journal::in_memory`]). The
//! plans are atomic and wait (Helm 3's readiness rules), and the waits pass
//! on their first poll. Each apply sample starts from a fresh copy of the
//! state, built outside the timing (`iter_custom`).
//!
//! **fsyncs with durability on.** Before the timings, the bench executes an
//! install and then an upgrade of `EXEC_BENCH_FSYNC_RELEASES` (default 20)
//! releases x 100 objects on the durable setup the CLI uses: a
//! [`FileStore`], a [`SimCluster`] in a directory, and a journal in a
//! directory, and prints the fsyncs per release: the journal's and the
//! simulated cluster's own counters ([`journal::fsync_count`],
//! [`sim::fsync_count`]) plus the file store's (two fsyncs per record
//! written, the temp file and the directory, one per record deleted),
//! counted by a wrapper around the store.
use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use rudder::cluster::sim::{self, SimCluster};
use rudder::exec::{journal, Executor, Journal, WallClock};
use rudder::plan::planner::Planner;
use rudder::plan::{DesiredRelease, ObjectAction, Plan, ReleaseAction};
use rudder::release::store::file::FileStore;
use rudder::release::store::memory::MemoryStore;
use rudder::release::store::Skipped;
use rudder::release::{Release, Store, StoreError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

// The same allocator as the rudder binary, so these numbers match its.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;
use common::{inputs, Inputs, PreRendered, OBJECTS};

/// Counts the file store's record writes (each is two fsyncs: the temp
/// file and the directory; a delete is one, the directory).
struct CountingStore {
    inner: FileStore,
    fsyncs: AtomicU64,
}

impl Store for CountingStore {
    fn create(&self, rel: &Release) -> Result<(), StoreError> {
        self.fsyncs.fetch_add(2, Ordering::Relaxed);
        self.inner.create(rel)
    }
    fn update(&self, expected: &Release, new: &Release) -> Result<(), StoreError> {
        self.fsyncs.fetch_add(2, Ordering::Relaxed);
        self.inner.update(expected, new)
    }
    fn get(&self, namespace: &str, name: &str, version: u64) -> Result<Release, StoreError> {
        self.inner.get(namespace, name, version)
    }
    fn history_reporting(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<(Vec<Release>, Vec<Skipped>), StoreError> {
        self.inner.history_reporting(namespace, name)
    }
    fn list_all_reporting(
        &self,
        namespace: Option<&str>,
    ) -> Result<(Vec<Release>, Vec<Skipped>), StoreError> {
        self.inner.list_all_reporting(namespace)
    }
    fn delete(&self, namespace: &str, name: &str, version: u64) -> Result<Release, StoreError> {
        self.fsyncs.fetch_add(1, Ordering::Relaxed);
        self.inner.delete(namespace, name, version)
    }
}

fn check_report(what: &str, r: &rudder::exec::Report, n: usize) {
    assert_eq!(r.releases.len(), n, "{what}");
    assert!(r.success(), "{what}: {:?}", r.first_error());
}

/// Executes install then upgrade with durability on and prints the fsyncs
/// per release of each.
fn fsyncs_with_durability(n: usize) {
    let inp = inputs(n);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = CountingStore {
        inner: FileStore::open(dir.path().join("store")).expect("file store"),
        fsyncs: AtomicU64::new(0),
    };
    let url = format!("file:{}", dir.path().join("store").display());
    let cluster = SimCluster::open(dir.path().join("cluster")).expect("sim");
    let clock = WallClock::default();
    for (label, rendered) in [("install", &inp.first), ("upgrade", &inp.next)] {
        let plan = Planner::new(&store, &url, &cluster)
            .with_renderer(rendered)
            .plan(&inp.releases)
            .expect("plan");
        let writes: usize = plan
            .releases
            .iter()
            .map(|r| r.objects.iter().filter(|o| o.action.writes()).count())
            .sum();
        let (j0, s0, f0) = (
            journal::fsync_count(),
            sim::fsync_count(),
            store.fsyncs.load(Ordering::Relaxed),
        );
        let t = Instant::now();
        let report = Executor::new(
            &store,
            &url,
            &cluster,
            Journal::at(dir.path().join("journal")),
            &clock,
        )
        .apply(&plan)
        .expect("apply");
        let took = t.elapsed();
        check_report(label, &report, n);
        let j = journal::fsync_count() - j0;
        let s = sim::fsync_count() - s0;
        let f = store.fsyncs.load(Ordering::Relaxed) - f0;
        let per = |x: u64| x as f64 / n as f64;
        eprintln!(
            "durable {label} of {n} releases x {OBJECTS} objects ({writes} object writes) in {took:.1?}: \
             fsyncs per release {:.2} (journal {:.2}, cluster {:.2}, store {:.2}); {:.3} per object write",
            per(j + s + f),
            per(j),
            per(s),
            per(f),
            (j + s + f) as f64 / writes.max(1) as f64
        );
    }
}

/// A fresh in-memory world with every release installed at the first
/// revision (through the executor), and the upgrade plan.
struct World {
    store: MemoryStore,
    cluster: SimCluster,
}

fn plan_of(w: &World, rendered: &PreRendered, releases: &[DesiredRelease]) -> Plan {
    Planner::new(&w.store, "memory:", &w.cluster)
        .with_renderer(rendered)
        .plan(releases)
        .expect("plan")
}

fn apply_mem(w: &World, plan: &Plan) -> rudder::exec::Report {
    let clock = WallClock::default();
    Executor::new(
        &w.store,
        "memory:",
        &w.cluster,
        Journal::in_memory(),
        &clock,
    )
    .apply(plan)
    .expect("apply")
}

fn empty_world() -> World {
    World {
        store: MemoryStore::new(),
        cluster: SimCluster::in_memory(),
    }
}

fn installed_world(inp: &Inputs) -> World {
    let w = empty_world();
    let p = plan_of(&w, &inp.first, &inp.releases);
    check_report("install", &apply_mem(&w, &p), inp.releases.len());
    w
}

fn bench_exec(c: &mut Criterion) {
    let n_fsync = std::env::var("EXEC_BENCH_FSYNC_RELEASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    if n_fsync > 0 {
        fsyncs_with_durability(n_fsync);
    }
    let mut group = c.benchmark_group("exec");
    group.sample_size(10);
    // The same number of iterations in every sample: an apply sample
    // rebuilds its world outside the timing, and linear sampling would
    // ask for 55 of them.
    group.sampling_mode(SamplingMode::Flat);
    let mut sizes = vec![200usize];
    if std::env::var_os("EXEC_BENCH_SCALE").is_some_and(|v| v == "1") {
        sizes.push(2000);
    }
    for n in sizes {
        let t = Instant::now();
        let inp = inputs(n);
        if n > 200 {
            group.measurement_time(Duration::from_secs(60));
        }
        // Check the scenario once: every release installs, then upgrades
        // with every tenth object updated.
        {
            let w = empty_world();
            let p = plan_of(&w, &inp.first, &inp.releases);
            assert!(p
                .releases
                .iter()
                .all(|r| r.action == ReleaseAction::Install));
            check_report("install", &apply_mem(&w, &p), n);
            let p = plan_of(&w, &inp.next, &inp.releases);
            let updates: usize = p
                .releases
                .iter()
                .map(|r| {
                    assert_eq!(r.action, ReleaseAction::Upgrade, "{}", r.name);
                    r.objects
                        .iter()
                        .filter(|o| o.action == ObjectAction::Update)
                        .count()
                })
                .sum();
            assert_eq!(updates, n * OBJECTS / 10);
            check_report("upgrade", &apply_mem(&w, &p), n);
            let p = plan_of(&w, &inp.next, &inp.releases);
            assert!(p.releases.iter().all(|r| r.action == ReleaseAction::Noop));
        }
        eprintln!("setup and check of {n} releases: {:.1?}", t.elapsed());

        let empty = empty_world();
        group.bench_function(format!("plan-install-{n}x{OBJECTS}"), |b| {
            b.iter(|| plan_of(&empty, &inp.first, &inp.releases).releases.len())
        });
        group.bench_function(format!("apply-install-{n}x{OBJECTS}"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let w = empty_world();
                    let p = plan_of(&w, &inp.first, &inp.releases);
                    let t = Instant::now();
                    let r = apply_mem(&w, &p);
                    total += t.elapsed();
                    assert!(r.success());
                }
                total
            })
        });
        let installed = installed_world(&inp);
        group.bench_function(format!("plan-upgrade-{n}x{OBJECTS}"), |b| {
            b.iter(|| plan_of(&installed, &inp.next, &inp.releases).releases.len())
        });
        group.bench_function(format!("apply-upgrade-{n}x{OBJECTS}"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let w = installed_world(&inp);
                    let p = plan_of(&w, &inp.next, &inp.releases);
                    let t = Instant::now();
                    let r = apply_mem(&w, &p);
                    total += t.elapsed();
                    assert!(r.success());
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_exec);
criterion_main!(benches);
