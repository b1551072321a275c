//! Shared helpers for planner tests: build charts from manifests and put a
//! store and a simulated cluster into a chosen state without an executor.
#![allow(dead_code)]

use rudder::chart::Chart;
use rudder::cluster::sim::SimCluster;
use rudder::cluster::{ownership, ApplyOptions, Cluster};
use rudder::plan::planner::Planner;
use rudder::plan::{DesiredRelease, Plan, ReleaseOptions};
use rudder::release::store::memory::MemoryStore;
use rudder::release::{Release, Status, Store};
use serde_json::Value;
use std::collections::BTreeMap;

/// A chart named `name` whose templates are exactly `docs` (file name ->
/// YAML text), rendered back verbatim.
pub fn chart(name: &str, version: &str, docs: &[(&str, &str)]) -> Chart {
    let mut m = BTreeMap::new();
    for (file, text) in docs {
        m.insert(file.to_string(), text.to_string());
    }
    let mut c = rudder::chart::chart_from_manifests(name, "default", &m).expect("chart");
    c.metadata.version = version.to_string();
    c
}

/// A desired release with the given chart and default options.
pub fn desired(name: &str, namespace: &str, chart: Chart) -> DesiredRelease {
    let mut d = DesiredRelease::new(name, namespace, chart);
    d.options = ReleaseOptions::default();
    d
}

/// A store, a cluster and the planner over both.
pub struct World {
    pub store: MemoryStore,
    pub cluster: SimCluster,
}

impl Default for World {
    fn default() -> Self {
        World::new()
    }
}

impl World {
    pub fn new() -> World {
        World {
            store: MemoryStore::new(),
            cluster: SimCluster::in_memory(),
        }
    }

    pub fn plan(&self, releases: &[DesiredRelease]) -> Plan {
        self.try_plan(releases).expect("plan")
    }

    pub fn try_plan(
        &self,
        releases: &[DesiredRelease],
    ) -> Result<Plan, rudder::plan::planner::PlanError> {
        Planner::new(&self.store, "memory:", &self.cluster).plan(releases)
    }

    /// Executes `plan` with the real executor (in-memory journal, driven
    /// clock) and asserts that it succeeded.
    pub fn execute(&self, plan: &Plan) -> rudder::exec::Report {
        let clock = rudder::exec::DrivenClock::new();
        let report = rudder::exec::Executor::new(
            &self.store,
            "memory:",
            &self.cluster,
            rudder::exec::Journal::in_memory(),
            &clock,
        )
        .apply(plan)
        .expect("apply");
        assert!(report.success(), "{report:?}");
        report
    }

    /// Makes the state a successful execution of `plan` would leave, with
    /// plain writes: objects applied by manager `rudder` (deletes done),
    /// the new record written `deployed` and the previous one
    /// `superseded`. Records may then be edited with [`World::set_status`].
    pub fn settle(&self, plan: &Plan) {
        for r in &plan.releases {
            if r.action == rudder::plan::ReleaseAction::Noop {
                continue;
            }
            let mut written = Vec::new();
            for o in &r.objects {
                match o.action {
                    rudder::plan::ObjectAction::Create
                    | rudder::plan::ObjectAction::Update
                    | rudder::plan::ObjectAction::Adopt => {
                        let d = o.desired.as_ref().expect("desired");
                        let applied = self
                            .cluster
                            .apply(
                                d,
                                &ApplyOptions {
                                    field_manager: "rudder".into(),
                                    force: true,
                                    dry_run: false,
                                },
                            )
                            .expect("apply");
                        if o.stage == rudder::plan::Stage::Main {
                            written.push((o.key.object_key().to_string(), applied));
                        }
                    }
                    rudder::plan::ObjectAction::Delete => {
                        self.cluster
                            .delete(&o.key.object_key(), None)
                            .expect("delete");
                    }
                    _ => {}
                }
            }
            let mut rec: Release =
                serde_json::from_value(r.record.clone().expect("record")).expect("record json");
            // What the applies left, as the executor records it.
            for (key, applied) in &written {
                rudder::plan::planner::applied::complete(&mut rec.applied, key, applied);
            }
            rudder::plan::planner::applied::drop_pending(&mut rec.applied);
            rec.info.status = Status::Deployed;
            rec.info.description = if r.to.revision == 1 {
                "Install complete".into()
            } else {
                "Upgrade complete".into()
            };
            for old in self.store.history(&r.namespace, &r.name).expect("history") {
                if old.info.status == Status::Deployed {
                    let mut s = old.clone();
                    s.info.status = Status::Superseded;
                    self.store.update(&old, &s).expect("supersede");
                }
            }
            self.store.create(&rec).expect("create record");
        }
    }

    /// Changes a stored revision's status.
    pub fn set_status(&self, namespace: &str, name: &str, version: u64, status: Status) {
        let old = self.store.get(namespace, name, version).expect("get");
        let mut new = old.clone();
        new.info.status = status;
        self.store.update(&old, &new).expect("update");
    }

    /// Writes a record as it is (for failed or pending revisions that no
    /// object change came with).
    pub fn put_record(&self, rel: &Release) {
        self.store.create(rel).expect("create record");
    }

    /// Applies an object as `kubectl` would (another field manager).
    pub fn kubectl_apply(&self, obj: Value) -> Value {
        self.cluster
            .apply(
                &obj,
                &ApplyOptions {
                    field_manager: "kubectl".into(),
                    force: true,
                    dry_run: false,
                },
            )
            .expect("kubectl apply")
    }

    /// Creates an object owned by another release.
    pub fn foreign(&self, mut obj: Value, release: &str, namespace: &str) -> Value {
        ownership::stamp(&mut obj, release, namespace);
        self.kubectl_apply(obj)
    }
}

/// A chart like [`chart`], plus files under the chart's `crds/` directory
/// (`file` is the name inside `crds/`).
pub fn chart_with_crds(
    name: &str,
    version: &str,
    docs: &[(&str, &str)],
    crds: &[(&str, &str)],
) -> Chart {
    let mut c = chart(name, version, docs);
    for (file, text) in crds {
        c.files.push(rudder::chart::model::ChartFile {
            name: format!("crds/{file}"),
            data: rudder::chart::model::FileData::from(text.to_string()),
        });
    }
    c
}

impl World {
    /// The live object at `key`, if any.
    pub fn live(&self, key: &rudder::cluster::ObjectKey) -> Option<Value> {
        self.cluster.get(key).expect("get")
    }
}

/// Adds a template file to a chart as it is: unlike [`chart`], which moves
/// CustomResourceDefinitions to `crds/`, this keeps a CRD among the
/// templates (`file` is the name inside `templates/`; the text must hold no
/// template actions).
pub fn push_template(chart: &mut Chart, file: &str, text: &str) {
    chart.templates.push(rudder::chart::model::ChartFile {
        name: format!("templates/{file}"),
        data: rudder::chart::model::FileData::from(text.to_string()),
    });
}
