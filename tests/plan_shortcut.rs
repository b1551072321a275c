//! The planner's shortcut against drift, on the simulated cluster: an
//! object whose document did not change since the last successful apply,
//! and whose live object is as that apply left it, is planned `unchanged`
//! without the server's dry run. Every kind of out-of-band change still
//! shows, and every plan is the plan that dry-runs every object.
mod plan_common;

use plan_common::{chart, desired, World};
use rudder::cluster::sim::SimCluster;
use rudder::cluster::{ApplyOptions, Cluster, ObjectKey};
use rudder::plan::planner::{PlanOptions, Planner};
use rudder::plan::{DesiredRelease, ObjectAction, Plan, ReleaseAction};
use rudder::release::store::memory::MemoryStore;
use serde_json::{json, Value};

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        ports:
        - containerPort: 80
";

const CONFIG_MAP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  a: \"1\"
  b: \"2\"
";

/// A world whose `create`/`replace` writes are those of `manager` (the
/// way kubectl's commands name themselves), with release `web` installed
/// in namespace `apps`.
fn installed(manager: &str) -> (World, DesiredRelease) {
    let w = World {
        store: MemoryStore::new(),
        cluster: SimCluster::in_memory().with_update_manager(manager),
    };
    w.cluster
        .apply(
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}),
            &ApplyOptions {
                field_manager: "setup".into(),
                ..ApplyOptions::default()
            },
        )
        .unwrap();
    let d = desired(
        "web",
        "apps",
        chart(
            "web",
            "1.0.0",
            &[("deploy.yaml", DEPLOYMENT), ("cm.yaml", CONFIG_MAP)],
        ),
    );
    let install = w.plan(std::slice::from_ref(&d));
    assert_eq!(install.releases[0].action, ReleaseAction::Install);
    w.settle(&install);
    (w, d)
}

/// Plans with the shortcuts and without them (every live object dry-run):
/// the two plans must be the same data. Returns the plan, how many dry
/// runs the shortcut's plan asked for, and the kinds of the objects whose
/// documents it did not even read (the record says what an apply of the
/// same text left, and the live object still holds exactly that).
fn plan_both(w: &World, d: &DesiredRelease) -> (Plan, u64, Vec<String>) {
    let before = w.cluster.request_counts().unwrap();
    let fast = w.plan(std::slice::from_ref(d));
    let dry_runs = w.cluster.request_counts().unwrap().since(&before).dry_run;
    // (Before anything serialises the plan, which reads them.)
    let mut unread: Vec<String> = fast.releases[0]
        .objects
        .iter()
        .filter(|o| o.desired.as_ref().is_some_and(|d| !d.is_read()))
        .map(|o| o.key.kind.clone())
        .collect();
    unread.sort();
    let full = Planner::new(&w.store, "memory:", &w.cluster)
        .with_options(PlanOptions {
            always_dry_run: true,
            ..PlanOptions::default()
        })
        .plan(std::slice::from_ref(d))
        .unwrap();
    assert_eq!(
        serde_json::to_value(&fast).unwrap(),
        serde_json::to_value(&full).unwrap(),
        "the shortcut changed the plan"
    );
    (fast, dry_runs, unread)
}

fn key(kind: &str, name: &str) -> ObjectKey {
    let group = if kind == "Deployment" { "apps" } else { "" };
    ObjectKey::new(group, kind, "apps", name)
}

/// Replaces the live object with `edit` applied to it, as `kubectl edit`,
/// `scale`, `patch` and a client-side `kubectl apply` do (a write of the
/// whole object by the cluster's update manager).
fn replace(w: &World, kind: &str, name: &str, edit: impl FnOnce(&mut Value)) {
    let mut live = w.live(&key(kind, name)).unwrap();
    edit(&mut live);
    w.cluster.replace(&live).unwrap();
}

fn object<'a>(p: &'a Plan, kind: &str) -> &'a rudder::plan::ObjectChange {
    p.releases[0]
        .objects
        .iter()
        .find(|o| o.key.kind == kind)
        .unwrap()
}

/// Asserts the plan shows drift on `kind` at `field`, and nothing else;
/// and that the drifted object's document was read, and no other.
fn assert_drift(p: &Plan, unread: &[String], kind: &str, field: &str) {
    let others: Vec<String> = ["ConfigMap", "Deployment"]
        .iter()
        .filter(|k| **k != kind)
        .map(|k| k.to_string())
        .collect();
    assert_eq!(unread, others, "documents not read");
    let r = &p.releases[0];
    assert_eq!(r.action, ReleaseAction::Upgrade, "{}", r.reason);
    let o = object(p, kind);
    assert_eq!(o.action, ObjectAction::Update, "{kind}: {}", o.reason);
    assert!(o.reason.starts_with("drift"), "{}", o.reason);
    assert_eq!(o.changed, vec![field.to_string()], "{kind}");
    for other in r.objects.iter().filter(|o| o.key.kind != kind) {
        assert_eq!(other.action, ObjectAction::Unchanged, "{}", other.key.kind);
    }
}

#[test]
fn a_plan_of_nothing_changed_dry_runs_nothing() {
    let (w, d) = installed("kubectl-edit");
    let (p, dry_runs, unread) = plan_both(&w, &d);
    assert_eq!(p.releases[0].action, ReleaseAction::Noop);
    assert_eq!(dry_runs, 0);
    // Not even read: the record says what applying each text left, and
    // the live objects hold exactly that.
    assert_eq!(unread, ["ConfigMap", "Deployment"]);
}

#[test]
fn kubectl_edit_shows() {
    let (w, d) = installed("kubectl-edit");
    replace(&w, "Deployment", "web", |o| {
        o["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.26");
    });
    let (p, dry_runs, unread) = plan_both(&w, &d);
    assert_drift(
        &p,
        &unread,
        "Deployment",
        "/spec/template/spec/containers/0/image",
    );
    // Only the edited object needed the server.
    assert_eq!(dry_runs, 1);
}

#[test]
fn kubectl_scale_shows() {
    let (w, d) = installed("kubectl");
    replace(&w, "Deployment", "web", |o| {
        o["spec"]["replicas"] = json!(5)
    });
    let (p, dry_runs, unread) = plan_both(&w, &d);
    assert_drift(&p, &unread, "Deployment", "/spec/replicas");
    assert_eq!(dry_runs, 1);
}

#[test]
fn kubectl_patch_shows() {
    let (w, d) = installed("kubectl-patch");
    replace(&w, "ConfigMap", "cfg", |o| {
        o["data"]["a"] = json!("patched")
    });
    let (p, dry_runs, unread) = plan_both(&w, &d);
    assert_drift(&p, &unread, "ConfigMap", "/data/a");
    assert_eq!(dry_runs, 1);
}

#[test]
fn a_field_removed_with_kubectl_edit_shows() {
    let (w, d) = installed("kubectl-edit");
    replace(&w, "ConfigMap", "cfg", |o| {
        o["data"].as_object_mut().unwrap().remove("b");
    });
    let (p, _, unread) = plan_both(&w, &d);
    assert_drift(&p, &unread, "ConfigMap", "/data/b");
}

#[test]
fn client_side_kubectl_apply_shows() {
    let (w, d) = installed("kubectl-client-side-apply");
    replace(&w, "ConfigMap", "cfg", |o| {
        o["data"]["b"] = json!("client-side");
        o["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] =
            json!("{}");
    });
    let (p, _, unread) = plan_both(&w, &d);
    assert_drift(&p, &unread, "ConfigMap", "/data/b");
}

#[test]
fn another_managers_forced_server_side_apply_shows() {
    let (w, d) = installed("kubectl-edit");
    w.cluster
        .apply(
            &json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "apps"},
                "spec": {"replicas": 3}}),
            &ApplyOptions {
                field_manager: "other-controller".into(),
                force: true,
                dry_run: false,
            },
        )
        .unwrap();
    let (p, dry_runs, unread) = plan_both(&w, &d);
    assert_drift(&p, &unread, "Deployment", "/spec/replicas");
    assert_eq!(dry_runs, 1);
}

#[test]
fn an_edit_undone_by_hand_is_unchanged_but_asks_the_server() {
    // kubectl-edit now owns data.a, with rudder's value: the object is
    // not as rudder's apply left it (another manager owns a field), so
    // the server is asked, and finds nothing to change.
    let (w, d) = installed("kubectl-edit");
    replace(&w, "ConfigMap", "cfg", |o| o["data"]["a"] = json!("x"));
    replace(&w, "ConfigMap", "cfg", |o| o["data"]["a"] = json!("1"));
    let (p, dry_runs, unread) = plan_both(&w, &d);
    assert_eq!(p.releases[0].action, ReleaseAction::Noop);
    assert_eq!(dry_runs, 1);
    assert_eq!(unread, ["Deployment"]);
}

#[test]
fn a_changed_document_is_dry_run() {
    let (w, mut d) = installed("kubectl-edit");
    d.chart = std::sync::Arc::new(chart(
        "web",
        "1.0.0",
        &[
            ("deploy.yaml", DEPLOYMENT),
            ("cm.yaml", &CONFIG_MAP.replace("\"2\"", "\"3\"")),
        ],
    ));
    let (p, dry_runs, unread) = plan_both(&w, &d);
    let o = object(&p, "ConfigMap");
    assert_eq!(o.action, ObjectAction::Update);
    assert_eq!(o.reason, "the desired object changed");
    assert_eq!(object(&p, "Deployment").action, ObjectAction::Unchanged);
    assert_eq!(dry_runs, 1);
    assert_eq!(unread, ["Deployment"]);
}

#[test]
fn after_a_failed_revision_everything_is_dry_run() {
    // The last record is not the deployed base: live objects may hold
    // what the failed revision applied.
    let (w, d) = installed("kubectl-edit");
    let mut failed = w.store_last(&d);
    failed.version += 1;
    failed.info.status = rudder::release::Status::Failed;
    w.put_record(&failed);
    let (_, dry_runs, unread) = plan_both(&w, &d);
    assert_eq!(dry_runs, 2);
    assert!(unread.is_empty(), "{unread:?}");
}

#[test]
fn a_record_without_rudders_states_reads_every_document() {
    // Helm rewrote the record (it drops fields it does not know): every
    // document is read, and the plan is the same.
    let (w, d) = installed("kubectl-edit");
    let last = w.store_last(&d);
    let mut helms = last.clone();
    assert_eq!(helms.applied.len(), 2, "{:?}", helms.applied);
    helms.applied.clear();
    rudder::release::Store::update(&w.store, &last, &helms).unwrap();
    let (p, dry_runs, unread) = plan_both(&w, &d);
    assert_eq!(p.releases[0].action, ReleaseAction::Noop);
    assert_eq!(dry_runs, 0);
    assert!(unread.is_empty(), "{unread:?}");
}

#[test]
fn a_state_recorded_for_another_text_is_not_used() {
    // The record's state for the ConfigMap was left by another text: the
    // document is read (and, here, found unchanged).
    let (w, d) = installed("kubectl-edit");
    let last = w.store_last(&d);
    let mut other = last.clone();
    let live = w.live(&key("ConfigMap", "cfg")).unwrap();
    let state = rudder::plan::planner::applied::applied_state(
        &rudder::plan::planner::applied::text_digest("kind: ConfigMap"),
        &live,
    )
    .unwrap();
    other
        .applied
        .insert(key("ConfigMap", "cfg").to_string(), state);
    rudder::release::Store::update(&w.store, &last, &other).unwrap();
    let (p, _, unread) = plan_both(&w, &d);
    assert_eq!(p.releases[0].action, ReleaseAction::Noop);
    assert_eq!(unread, ["Deployment"]);
}

#[test]
fn drift_after_an_executed_upgrade_shows() {
    // The executor records what its applies left: the next plan reads
    // nothing, and a later edit still shows.
    let (w, mut d) = installed("kubectl-edit");
    d.options.wait = false;
    d.chart = std::sync::Arc::new(chart(
        "web",
        "1.0.0",
        &[
            ("deploy.yaml", DEPLOYMENT),
            ("cm.yaml", &CONFIG_MAP.replace("\"2\"", "\"3\"")),
        ],
    ));
    let plan = w.plan(std::slice::from_ref(&d));
    assert_eq!(plan.releases[0].action, ReleaseAction::Upgrade);
    w.execute(&plan);
    let rec = w.store_last(&d);
    assert_eq!(rec.info.status, rudder::release::Status::Deployed);
    assert!(
        rec.applied.values().all(|v| v.starts_with("sha256:")) && rec.applied.len() == 2,
        "{:?}",
        rec.applied
    );
    let (p, dry_runs, unread) = plan_both(&w, &d);
    assert_eq!(p.releases[0].action, ReleaseAction::Noop);
    assert_eq!((dry_runs, unread.len()), (0, 2));
    replace(&w, "ConfigMap", "cfg", |o| o["data"]["b"] = json!("edited"));
    let (p, _, unread) = plan_both(&w, &d);
    assert_drift(&p, &unread, "ConfigMap", "/data/b");
}

trait LastRecord {
    fn store_last(&self, d: &DesiredRelease) -> rudder::release::Release;
}

impl LastRecord for World {
    fn store_last(&self, d: &DesiredRelease) -> rudder::release::Release {
        use rudder::release::Store;
        self.store
            .history(&d.namespace, &d.name)
            .unwrap()
            .into_iter()
            .max_by_key(|r| r.version)
            .unwrap()
    }
}
