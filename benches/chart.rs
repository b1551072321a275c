//! Chart stage throughput: building the fixture charts from their
//! components, packaging them, and loading the packages back.
// The fixture components, part of the `rudder` binary.
#[allow(dead_code)]
#[path = "../src/cli/fixtures.rs"]
mod fixtures;

use criterion::{criterion_group, criterion_main, Criterion};
use rudder::chart;

fn bench(c: &mut Criterion) {
    let charts = fixtures::charts().expect("fixtures build");
    let packages: Vec<Vec<u8>> = charts
        .iter()
        .map(|ch| chart::package_bytes(ch).expect("packages"))
        .collect();
    c.bench_function("chart_from_component (3 fixtures)", |b| {
        b.iter(|| fixtures::charts().expect("fixtures build"))
    });
    c.bench_function("package_bytes (3 fixtures)", |b| {
        b.iter(|| {
            for ch in &charts {
                chart::package_bytes(ch).expect("packages");
            }
        })
    });
    c.bench_function("load_archive (3 fixtures)", |b| {
        b.iter(|| {
            for p in &packages {
                chart::load_archive(p).expect("loads");
            }
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
