//! In-process rendering of the largest corpus charts (load once, then
//! values + render + sort per iteration), so the render stage's own cost is
//! visible without process start-up. Skips charts that are not present.
use criterion::{criterion_group, criterion_main, Criterion};
use rudder::render::values::Map;
use rudder::render::{render, RenderOptions};
use std::path::Path;

const CHARTS: &[&str] = &[
    "argo-cd",
    "grafana-loki-distributed",
    "loko-calico",
    "loko-contour",
    "ingress-nginx",
    "grafana",
];

fn bench_render(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/charts");
    let opts = RenderOptions {
        release_name: "rel".into(),
        namespace: "ns1".into(),
        kube_version: Some("1.31.0".into()),
        ..RenderOptions::default()
    };
    let mut group = c.benchmark_group("render");
    group.sample_size(10);
    for id in CHARTS {
        let dir = root.join(id).join("chart");
        let Ok(chart) = rudder::chart::load(&dir) else {
            eprintln!("skipping {id}: not loadable");
            continue;
        };
        if render(&chart, &Map::new(), &opts).is_err() {
            eprintln!("skipping {id}: does not render yet");
            continue;
        }
        group.bench_function(*id, |b| {
            b.iter(|| render(&chart, &Map::new(), &opts).map(|r| r.manifests.len()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_render);
criterion_main!(benches);
