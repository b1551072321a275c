//! The planner alone: 200 releases of 100 objects each (50 ConfigMaps and
//! 50 Deployments of about 1 KiB), rendering excluded (a [`Renderer`] hands
//! out pre-rendered output), against an in-memory store and simulated
//! cluster pre-seeded with the previous revision of every release, settled
//! as a successful execution leaves it. Every tenth object changes. The
//! same with 2000 releases checks that planning scales linearly.
//!
//! The same plans when nothing changed (`-unchanged`), and with every
//! object dry-run as before unchanged objects could skip the dry run
//! (`-unchanged-always-dry-run`).
//!
//! Goal: 200 x 100 in at most 100 ms; 2000 x 100 at most 11 times that.
//! The 2000-release case runs only with `PLAN_BENCH_SCALE=1` (about 14 s a
//! plan on a 2-core machine, so several minutes in all). Releases plan on
//! every core; the figures depend on how many there are.
use criterion::{criterion_group, criterion_main, Criterion};
use rudder::cluster::sim::SimCluster;
use rudder::cluster::{ApplyOptions, Cluster};
use rudder::plan::planner::{applied, PlanOptions, Planner};
use rudder::plan::{DesiredRelease, ObjectAction, Plan, ReleaseAction};
use rudder::release::store::memory::MemoryStore;
use rudder::release::{Release, Status, Store};
use std::time::{Duration, Instant};

// The same allocator as the rudder binary, so these numbers match its.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;
use common::{inputs, Inputs, PreRendered, OBJECTS};

struct Setup {
    store: MemoryStore,
    cluster: SimCluster,
    releases: Vec<DesiredRelease>,
    first: PreRendered,
    next: PreRendered,
}

/// Applies what a successful execution of `plan` writes: objects applied by
/// manager `rudder`, each new record deployed with what the applies left
/// (as the executor records it).
fn settle(store: &MemoryStore, cluster: &SimCluster, plan: &Plan) {
    let opts = ApplyOptions {
        field_manager: "rudder".into(),
        force: true,
        dry_run: false,
    };
    for r in &plan.releases {
        if r.action == ReleaseAction::Noop {
            continue;
        }
        let mut rec: Release =
            serde_json::from_value(r.record.clone().expect("record")).expect("record");
        for o in &r.objects {
            if matches!(o.action, ObjectAction::Create | ObjectAction::Update) {
                let applied = cluster
                    .apply(o.desired.as_ref().expect("desired"), &opts)
                    .expect("apply");
                applied::complete(&mut rec.applied, &o.key.object_key().to_string(), &applied);
            }
        }
        applied::drop_pending(&mut rec.applied);
        rec.info.status = Status::Deployed;
        rec.info.description = "Install complete".into();
        store.create(&rec).expect("create record");
    }
}

fn setup(n: usize) -> Setup {
    let t = Instant::now();
    let Inputs {
        releases,
        first,
        next,
    } = inputs(n);
    let store = MemoryStore::new();
    let cluster = SimCluster::in_memory();
    let install = Planner::new(&store, "memory:", &cluster)
        .with_renderer(&first)
        .plan(&releases)
        .expect("install plan");
    settle(&store, &cluster, &install);
    // Check the scenario: every release upgrades, 10% of objects update.
    let plan = Planner::new(&store, "memory:", &cluster)
        .with_renderer(&next)
        .plan(&releases)
        .expect("upgrade plan");
    let mut updates = 0;
    for r in &plan.releases {
        assert_eq!(r.action, ReleaseAction::Upgrade, "{}", r.name);
        updates += r
            .objects
            .iter()
            .filter(|o| o.action == ObjectAction::Update)
            .count();
        assert_eq!(
            r.objects
                .iter()
                .filter(|o| o.action == ObjectAction::Unchanged)
                .count()
                + r.objects
                    .iter()
                    .filter(|o| o.action == ObjectAction::Update)
                    .count(),
            OBJECTS,
            "{}",
            r.name
        );
    }
    assert_eq!(updates, n * OBJECTS / 10);
    eprintln!(
        "setup of {n} releases x {OBJECTS} objects: {:.1?} (avg manifest {} bytes)",
        t.elapsed(),
        next.0
            .values()
            .next()
            .map_or(0, |r| r.files.values().map(String::len).sum::<usize>()
                / OBJECTS)
    );
    Setup {
        store,
        cluster,
        releases,
        first,
        next,
    }
}

fn bench_plan(c: &mut Criterion) {
    let mut group = c.benchmark_group("plan");
    group.sample_size(10);
    let mut sizes = vec![200usize];
    if std::env::var_os("PLAN_BENCH_SCALE").is_some_and(|v| v == "1") {
        sizes.push(2000);
    }
    for n in sizes {
        let s = setup(n);
        if n > 200 {
            group.measurement_time(Duration::from_secs(30));
        }
        for (label, with_records) in [("", true), ("-no-records", false)] {
            let planner = Planner::new(&s.store, "memory:", &s.cluster)
                .with_renderer(&s.next)
                .with_options(PlanOptions {
                    with_records,
                    ..PlanOptions::default()
                });
            group.bench_function(format!("{n}x{OBJECTS}{label}"), |b| {
                b.iter(|| planner.plan(&s.releases).expect("plan").releases.len())
            });
        }
        // Nothing changed: the output of the installed revision again.
        // With `always_dry_run` every object is dry-run, as planning did
        // before unchanged objects could skip it.
        for (label, always_dry_run) in [("-unchanged", false), ("-unchanged-always-dry-run", true)]
        {
            let planner = Planner::new(&s.store, "memory:", &s.cluster)
                .with_renderer(&s.first)
                .with_options(PlanOptions {
                    always_dry_run,
                    ..PlanOptions::default()
                });
            let plan = planner.plan(&s.releases).expect("plan");
            assert!(plan
                .releases
                .iter()
                .all(|r| r.action == ReleaseAction::Noop));
            group.bench_function(format!("{n}x{OBJECTS}{label}"), |b| {
                b.iter(|| planner.plan(&s.releases).expect("plan").releases.len())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_plan);
criterion_main!(benches);
