//! The simulated cluster alone, at the access patterns of planning and
//! applying: the 20,000 objects of 200 releases (the workload of
//! `benches/common`, each release in its own namespace), applied with
//! server-side apply by one field manager.
//!
//! Measured, in memory and in a directory (with and without fsync on
//! compaction, [`SimCluster::without_fsync`]):
//! - `sim/apply-create-*`: applying every object to a cluster holding only
//!   the namespaces;
//! - `sim/apply-update-*`: applying the next revision (every tenth object
//!   changed) over the first;
//! - `sim/get-dry-run-*`: what planning does per object, a `get` and a
//!   `dry_run` of the next revision;
//! - `sim/flush-dir`: a [`Cluster::flush`] after one write, on a cluster
//!   holding the updated objects;
//! - `sim/load-*-dir`: a fresh handle's first read (loading 20,000 objects).
//!
//! Each sample builds its cluster outside the timing (`iter_custom`).
use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use rudder::cluster::sim::SimCluster;
use rudder::cluster::{ApplyOptions, Cluster, ObjectKey};
use rudder::plan::DesiredRelease;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

mod common;
use common::{inputs, PreRendered};

// The same allocator as the rudder binary, so these numbers match its.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

const RELEASES: usize = 200;

/// Every object of one revision, as JSON, in its release's namespace.
fn objects(releases: &[DesiredRelease], rendered: &PreRendered) -> Vec<Value> {
    let mut out = Vec::new();
    for rel in releases {
        for m in &rendered.0[&rel.name].manifests {
            let node = rudder::yaml::parse_yaml_to_json(&m.content).expect("manifest");
            let mut obj = rudder::yaml::to_json_value(&node);
            obj["metadata"]["namespace"] = json!(rel.namespace);
            out.push(obj);
        }
    }
    out
}

fn opts() -> ApplyOptions {
    ApplyOptions {
        field_manager: "rudder".into(),
        ..ApplyOptions::default()
    }
}

/// The releases' namespaces.
fn namespaces(c: &SimCluster, releases: &[DesiredRelease]) {
    for rel in releases {
        let ns = json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":rel.namespace}});
        c.create(&ns).expect("namespace");
    }
}

fn apply_all(c: &SimCluster, objs: &[Value]) {
    let opts = opts();
    for o in objs {
        c.apply(o, &opts).expect("apply");
    }
}

/// What planning asks of the cluster for each object.
fn get_and_dry_run(c: &SimCluster, objs: &[Value]) -> usize {
    let mut found = 0;
    for o in objs {
        let k = ObjectKey::of(o).expect("key");
        found += usize::from(c.get(&k).expect("get").is_some());
        c.dry_run(o).expect("dry run");
    }
    found
}

/// A cluster in `dir` (or in memory), with the namespaces.
fn cluster(dir: Option<&Path>, fsync: bool, releases: &[DesiredRelease]) -> SimCluster {
    let c = match dir {
        Some(d) => SimCluster::open(d).expect("open"),
        None => SimCluster::in_memory(),
    };
    let c = if fsync { c } else { c.without_fsync() };
    namespaces(&c, releases);
    c
}

/// Times `run` on a fresh cluster from `setup`, once per iteration.
fn timed<S>(iters: u64, setup: impl Fn() -> S, run: impl Fn(&S)) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let s = setup();
        let t = Instant::now();
        run(&s);
        total += t.elapsed();
    }
    total
}

fn bench_sim(c: &mut Criterion) {
    let inp = inputs(RELEASES);
    let first = objects(&inp.releases, &inp.first);
    let next = objects(&inp.releases, &inp.next);
    let size: usize = first.iter().map(|o| o.to_string().len()).sum();
    eprintln!(
        "{} objects, {} bytes on average",
        first.len(),
        size / first.len()
    );
    let n = first.len();
    let mut group = c.benchmark_group("sim");
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);

    group.bench_function(format!("apply-create-{n}-mem"), |b| {
        b.iter_custom(|iters| {
            timed(
                iters,
                || cluster(None, true, &inp.releases),
                |c| apply_all(c, &first),
            )
        })
    });
    group.bench_function(format!("apply-update-{n}-mem"), |b| {
        b.iter_custom(|iters| {
            let setup = || {
                let c = cluster(None, true, &inp.releases);
                apply_all(&c, &first);
                c
            };
            timed(iters, setup, |c| apply_all(c, &next))
        })
    });
    let mem = cluster(None, true, &inp.releases);
    apply_all(&mem, &first);
    group.bench_function(format!("get-dry-run-{n}-mem"), |b| {
        b.iter(|| assert_eq!(get_and_dry_run(&mem, &next), n))
    });
    drop(mem);

    let tmp = tempfile::tempdir().expect("tempdir");
    let fresh = |fsync: bool| {
        let dir = tempfile::tempdir_in(tmp.path()).expect("tempdir");
        // A fresh directory, created by the cluster (0700).
        let c = cluster(Some(&dir.path().join("cluster")), fsync, &inp.releases);
        (dir, c)
    };
    for fsync in [true, false] {
        let label = if fsync { "dir" } else { "dir-no-fsync" };
        group.bench_function(format!("apply-create-{n}-{label}"), |b| {
            b.iter_custom(|iters| timed(iters, || fresh(fsync), |(_, c)| apply_all(c, &first)))
        });
        group.bench_function(format!("apply-update-{n}-{label}"), |b| {
            b.iter_custom(|iters| {
                let setup = || {
                    let (d, c) = fresh(fsync);
                    apply_all(&c, &first);
                    (d, c)
                };
                timed(iters, setup, |(_, c)| apply_all(c, &next))
            })
        });
    }
    // One updated cluster on disk for the flush, the load and the reads.
    let (dir, c) = fresh(true);
    apply_all(&c, &first);
    apply_all(&c, &next);
    // Each flush follows one write (object 0 switching revisions), so
    // that there is something to make durable.
    let turn = std::cell::Cell::new(0usize);
    group.bench_function("flush-dir", |b| {
        b.iter_custom(|iters| {
            let write = || {
                turn.set(turn.get() + 1);
                let revision = if turn.get() % 2 == 0 { &next } else { &first };
                apply_all(&c, &revision[..1]);
            };
            timed(iters, write, |()| c.flush().expect("flush"))
        })
    });
    let probe = ObjectKey::new("", "Namespace", "", "default");
    group.bench_function(format!("load-{n}-dir"), |b| {
        b.iter_custom(|iters| {
            timed(
                iters,
                || SimCluster::open(dir.path().join("cluster")).expect("open"),
                |fresh| {
                    fresh.get(&probe).expect("get");
                },
            )
        })
    });
    let loaded = SimCluster::open(dir.path().join("cluster")).expect("open");
    group.bench_function(format!("get-dry-run-{n}-dir"), |b| {
        b.iter(|| assert_eq!(get_and_dry_run(&loaded, &first), n))
    });
    group.finish();
}

criterion_group!(benches, bench_sim);
criterion_main!(benches);
