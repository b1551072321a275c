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
use rudder::chart::{Chart, Metadata};
use rudder::cluster::sim::SimCluster;
use rudder::cluster::{ApplyOptions, Cluster};
use rudder::plan::planner::{PlanOptions, Planner, Renderer};
use rudder::plan::{DesiredRelease, ObjectAction, Plan, ReleaseAction, ReleaseOptions};
use rudder::release::store::memory::MemoryStore;
use rudder::release::{Release, Status, Store};
use rudder::render::{Head, Manifest, RenderError, RenderOptions, Rendered};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

// The same allocator as the rudder binary, so these numbers match its.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

const OBJECTS: usize = 100;

fn config_map(release: &str, i: usize, generation: usize) -> String {
    let mut s = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {release}-cm-{i:03}\n  labels:\n    app.kubernetes.io/name: {release}\n    app.kubernetes.io/instance: {release}\n    app.kubernetes.io/component: config-{i:03}\ndata:\n  generation: \"{generation}\"\n"
    );
    let mut k = 0;
    while s.len() < 1000 {
        s.push_str(&format!(
            "  key-{k:02}: \"value {k} of config map {i} in release {release}, padded\"\n"
        ));
        k += 1;
    }
    s
}

fn deployment(release: &str, i: usize, generation: usize) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {release}-deploy-{i:03}\n  labels:\n    app.kubernetes.io/name: {release}\n    app.kubernetes.io/instance: {release}\n    app.kubernetes.io/component: worker-{i:03}\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels:\n      app.kubernetes.io/instance: {release}\n      app.kubernetes.io/component: worker-{i:03}\n  template:\n    metadata:\n      labels:\n        app.kubernetes.io/instance: {release}\n        app.kubernetes.io/component: worker-{i:03}\n    spec:\n      containers:\n      - name: worker\n        image: registry.example.com/team/worker:1.{generation}.0\n        args: [\"--listen=:8080\", \"--log-level=info\", \"--component=worker-{i:03}\"]\n        ports:\n        - containerPort: 8080\n          name: http\n        env:\n        - name: RELEASE\n          value: {release}\n        - name: COMPONENT\n          value: worker-{i:03}\n        resources:\n          requests:\n            cpu: 100m\n            memory: 128Mi\n          limits:\n            cpu: 500m\n            memory: 256Mi\n",
        replicas = 2
    )
}

/// The rendered output of release `release`: 50 ConfigMaps then 50
/// Deployments (Helm's install order). In `changed`, every tenth object
/// has a new value.
fn rendered(release: &str, changed: bool) -> Rendered {
    let mut manifests = Vec::with_capacity(OBJECTS);
    let mut files = BTreeMap::new();
    for i in 0..OBJECTS {
        let generation = usize::from(changed && i % 10 == 0) + 1;
        let (kind, api_version, name, content) = if i < OBJECTS / 2 {
            let name = format!("{release}-cm-{i:03}");
            ("ConfigMap", "v1", name, config_map(release, i, generation))
        } else {
            let name = format!("{release}-deploy-{i:03}");
            (
                "Deployment",
                "apps/v1",
                name,
                deployment(release, i, generation),
            )
        };
        let source = format!("{release}/templates/obj-{i:03}.yaml");
        files.insert(source.clone(), content.clone());
        manifests.push(Manifest {
            source,
            content: content.trim().to_string(),
            head: Head {
                api_version: api_version.into(),
                kind: kind.into(),
                name,
                namespace: String::new(),
                annotations: BTreeMap::new(),
            },
        });
    }
    Rendered {
        files,
        manifests,
        hooks: vec![],
        crds: vec![],
        notes: String::new(),
        warnings: vec![],
    }
}

/// Hands out pre-rendered output by release name.
struct PreRendered(HashMap<String, Rendered>);

impl Renderer for PreRendered {
    fn render(&self, rel: &DesiredRelease, _: &RenderOptions) -> Result<Rendered, RenderError> {
        Ok(self.0[&rel.name].clone())
    }
}

struct Setup {
    store: MemoryStore,
    cluster: SimCluster,
    releases: Vec<DesiredRelease>,
    first: PreRendered,
    next: PreRendered,
}

fn desired(name: &str) -> DesiredRelease {
    let chart = Chart {
        metadata: Metadata {
            api_version: "v2".into(),
            name: "worker".into(),
            version: "1.0.0".into(),
            ..Metadata::default()
        },
        ..Chart::default()
    };
    let mut d = DesiredRelease::new(name, &format!("ns-{name}"), chart);
    d.options = ReleaseOptions::default();
    d
}

/// Applies what a successful execution of `plan` writes: objects applied by
/// manager `rudder`, each new record deployed.
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
        for o in &r.objects {
            if matches!(o.action, ObjectAction::Create | ObjectAction::Update) {
                cluster
                    .apply(o.desired.as_ref().expect("desired"), &opts)
                    .expect("apply");
            }
        }
        let mut rec: Release =
            serde_json::from_value(r.record.clone().expect("record")).expect("record");
        rec.info.status = Status::Deployed;
        rec.info.description = "Install complete".into();
        store.create(&rec).expect("create record");
    }
}

fn setup(n: usize) -> Setup {
    let t = Instant::now();
    let releases: Vec<DesiredRelease> = (0..n).map(|i| desired(&format!("rel-{i:04}"))).collect();
    let first = PreRendered(
        releases
            .iter()
            .map(|d| (d.name.clone(), rendered(&d.name, false)))
            .collect(),
    );
    let next = PreRendered(
        releases
            .iter()
            .map(|d| (d.name.clone(), rendered(&d.name, true)))
            .collect(),
    );
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
