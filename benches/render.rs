//! In-process rendering of the largest corpus charts (load once, then
//! values + render + sort per iteration), so the render stage's own cost is
//! visible without process start-up. Skips charts that are not present.
//!
//! `kube-prometheus-stack` is assembled in memory as scripts/bench-vs-helm
//! assembles it on disk: the corpus copy plus the corpus's own
//! kube-state-metrics, prometheus-node-exporter and grafana charts and an
//! empty prometheus-windows-exporter 0.12.8 (disabled by default).
use criterion::{criterion_group, criterion_main, Criterion};
use rudder::chart::{Chart, Metadata};
use rudder::render::values::Map;
use rudder::render::{render, RenderOptions};
use std::path::Path;

// The same allocator as the rudder binary, so these numbers match its.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    let mut charts: Vec<(&str, Option<Chart>)> = CHARTS
        .iter()
        .map(|id| (*id, rudder::chart::load(root.join(id).join("chart")).ok()))
        .collect();
    charts.push(("kube-prometheus-stack", assembled_kps(&root)));
    for (id, chart) in charts {
        let Some(chart) = chart else {
            eprintln!("skipping {id}: not loadable");
            continue;
        };
        if render(&chart, &Map::new(), &opts).is_err() {
            eprintln!("skipping {id}: does not render yet");
            continue;
        }
        group.bench_function(id, |b| {
            b.iter(|| render(&chart, &Map::new(), &opts).map(|r| r.manifests.len()))
        });
    }
    group.finish();
}

fn assembled_kps(root: &Path) -> Option<Chart> {
    let mut kps = rudder::chart::load(root.join("prom-kube-prometheus-stack/chart")).ok()?;
    for (dir, name) in [
        ("prom-kube-state-metrics", "kube-state-metrics"),
        ("prom-node-exporter", "prometheus-node-exporter"),
        ("grafana", "grafana"),
    ] {
        let sub = rudder::chart::load(root.join(dir).join("chart")).ok()?;
        if sub.metadata.name != name {
            return None;
        }
        kps.dependencies.push(sub);
    }
    kps.dependencies.push(Chart {
        metadata: Metadata {
            api_version: "v2".into(),
            name: "prometheus-windows-exporter".into(),
            version: "0.12.8".into(),
            ..Metadata::default()
        },
        ..Chart::default()
    });
    Some(kps)
}

criterion_group!(benches, bench_render);
criterion_main!(benches);
