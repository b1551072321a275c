//! The workload the benchmarks share: releases of [`OBJECTS`] objects
//! each, 50 ConfigMaps and 50 Deployments of about 1 KiB, rendered in two
//! revisions where every tenth object differs. `benches/plan.rs`,
//! `benches/exec.rs` and `benches/sim.rs` include it (`mod common;`); each
//! uses part of it.
use rudder::chart::{Chart, Metadata};
use rudder::plan::planner::Renderer;
use rudder::plan::{DesiredRelease, ReleaseOptions};
use rudder::render::{Head, Manifest, RenderError, RenderOptions, Rendered};
use std::collections::{BTreeMap, HashMap};

/// Objects in each release.
pub const OBJECTS: usize = 100;

/// ConfigMap `i` of `release`, padded to about 1 KiB.
pub fn config_map(release: &str, i: usize, generation: usize) -> String {
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

/// Deployment `i` of `release`, its image at version `1.<generation>.0`.
pub fn deployment(release: &str, i: usize, generation: usize) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {release}-deploy-{i:03}\n  labels:\n    app.kubernetes.io/name: {release}\n    app.kubernetes.io/instance: {release}\n    app.kubernetes.io/component: worker-{i:03}\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels:\n      app.kubernetes.io/instance: {release}\n      app.kubernetes.io/component: worker-{i:03}\n  template:\n    metadata:\n      labels:\n        app.kubernetes.io/instance: {release}\n        app.kubernetes.io/component: worker-{i:03}\n    spec:\n      containers:\n      - name: worker\n        image: registry.example.com/team/worker:1.{generation}.0\n        args: [\"--listen=:8080\", \"--log-level=info\", \"--component=worker-{i:03}\"]\n        ports:\n        - containerPort: 8080\n          name: http\n        env:\n        - name: RELEASE\n          value: {release}\n        - name: COMPONENT\n          value: worker-{i:03}\n        resources:\n          requests:\n            cpu: 100m\n            memory: 128Mi\n          limits:\n            cpu: 500m\n            memory: 256Mi\n",
        replicas = 2
    )
}

/// The rendered output of release `release`: 50 ConfigMaps then 50
/// Deployments (Helm's install order). In `changed`, every tenth object
/// has a new value.
pub fn rendered(release: &str, changed: bool) -> Rendered {
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
pub struct PreRendered(pub HashMap<String, Rendered>);

impl Renderer for PreRendered {
    fn render(&self, rel: &DesiredRelease, _: &RenderOptions) -> Result<Rendered, RenderError> {
        Ok(self.0[&rel.name].clone())
    }
}

/// Release `name` (in namespace `ns-<name>`) of a one-file chart `worker`.
pub fn desired(name: &str) -> DesiredRelease {
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
    // Atomic, waiting (Helm 3's rules), one deadline per release.
    d.options = ReleaseOptions::default();
    d
}

/// The releases and both revisions' rendered output.
pub struct Inputs {
    /// `rel-0000`, `rel-0001`, ...
    pub releases: Vec<DesiredRelease>,
    /// The first revision of every release.
    pub first: PreRendered,
    /// The next revision: every tenth object changed.
    pub next: PreRendered,
}

/// `n` releases and both their revisions.
pub fn inputs(n: usize) -> Inputs {
    let releases: Vec<DesiredRelease> = (0..n).map(|i| desired(&format!("rel-{i:04}"))).collect();
    let by = |changed: bool| {
        PreRendered(
            releases
                .iter()
                .map(|d| (d.name.clone(), rendered(&d.name, changed)))
                .collect(),
        )
    };
    Inputs {
        first: by(false),
        next: by(true),
        releases,
    }
}
