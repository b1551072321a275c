//! Planner scenarios on an in-memory store and simulated cluster.
mod plan_common;

use plan_common::*;
use rudder::plan::{ObjectAction, ReleaseAction};
use rudder::release::Status;
use serde_json::json;

const CM: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  color: blue\n";
const CM2: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  color: green\n";
const DEP: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n";

#[test]
fn install_then_replan_is_noop() {
    let w = World::new();
    let d = desired(
        "web",
        "prod",
        chart("web", "1.0.0", &[("cm.yaml", CM), ("dep.yaml", DEP)]),
    );
    let p = w.plan(std::slice::from_ref(&d));
    let r = &p.releases[0];
    assert_eq!(r.action, ReleaseAction::Install);
    let actions: Vec<_> = r
        .objects
        .iter()
        .map(|o| (o.key.kind.as_str(), o.action))
        .collect();
    assert_eq!(
        actions,
        vec![
            ("Namespace", ObjectAction::Create),
            ("ConfigMap", ObjectAction::Create),
            ("Deployment", ObjectAction::Create)
        ]
    );
    w.settle(&p);
    let p2 = w.plan(std::slice::from_ref(&d));
    let r2 = &p2.releases[0];
    assert_eq!(r2.action, ReleaseAction::Noop, "{:#?}", r2.objects);
    assert!(r2
        .objects
        .iter()
        .all(|o| o.action == ObjectAction::Unchanged));
    // Same inputs, same state: byte-identical plans.
    assert_eq!(
        rudder::plan::view::json(&p2),
        rudder::plan::view::json(&w.plan(std::slice::from_ref(&d)))
    );
}

#[test]
fn upgrade_sees_changes_and_drift() {
    let w = World::new();
    let d = desired(
        "web",
        "prod",
        chart("web", "1.0.0", &[("cm.yaml", CM), ("dep.yaml", DEP)]),
    );
    w.settle(&w.plan(std::slice::from_ref(&d)));
    // kubectl scales the Deployment: drift.
    w.kubectl_apply(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "prod"}, "spec": {"replicas": 5}}));
    let d2 = desired(
        "web",
        "prod",
        chart("web", "1.1.0", &[("cm.yaml", CM2), ("dep.yaml", DEP)]),
    );
    let p = w.plan(std::slice::from_ref(&d2));
    let r = &p.releases[0];
    assert_eq!(r.action, ReleaseAction::Upgrade);
    let cm = r
        .objects
        .iter()
        .find(|o| o.key.kind == "ConfigMap")
        .unwrap();
    assert_eq!(cm.action, ObjectAction::Update);
    assert_eq!(cm.changed, vec!["/data/color"]);
    let dep = r
        .objects
        .iter()
        .find(|o| o.key.kind == "Deployment")
        .unwrap();
    assert_eq!(dep.action, ObjectAction::Update, "{dep:#?}");
    assert!(dep.reason.starts_with("drift"), "{}", dep.reason);
    assert_eq!(dep.changed, vec!["/spec/replicas"]);
}

#[test]
fn failed_and_pending_records() {
    let w = World::new();
    let d = desired("web", "prod", chart("web", "1.0.0", &[("cm.yaml", CM)]));
    w.settle(&w.plan(std::slice::from_ref(&d)));
    let d2 = desired("web", "prod", chart("web", "1.1.0", &[("cm.yaml", CM2)]));
    let p = w.plan(std::slice::from_ref(&d2));
    w.settle(&p);
    w.set_status("prod", "web", 2, Status::Failed);
    w.set_status("prod", "web", 1, Status::Deployed);
    let p = w.plan(std::slice::from_ref(&d2));
    let r = &p.releases[0];
    assert_eq!(r.action, ReleaseAction::Upgrade);
    assert_eq!(r.from.as_ref().unwrap().revision, 1);
    assert_eq!(r.to.revision, 3);
    w.set_status("prod", "web", 2, Status::PendingUpgrade);
    let p = w.plan(std::slice::from_ref(&d2));
    assert_eq!(p.releases[0].action, ReleaseAction::Recover);
}

#[test]
fn foreign_objects_block_and_adopt() {
    let w = World::new();
    w.kubectl_apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}}));
    w.foreign(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config", "namespace": "prod"}, "data": {"color": "red"}}), "other", "prod");
    let mut d = desired("web", "prod", chart("web", "1.0.0", &[("cm.yaml", CM)]));
    let p = w.plan(std::slice::from_ref(&d));
    let r = &p.releases[0];
    assert!(r.blocked.as_deref().unwrap().starts_with("Unable to continue with install: ConfigMap \"web-config\" in namespace \"prod\" exists and cannot be imported into the current release: invalid ownership metadata; annotation validation error: key \"meta.helm.sh/release-name\" must equal \"web\": current value is \"other\""), "{:?}", r.blocked);
    d.options.take_ownership = true;
    let p = w.plan(std::slice::from_ref(&d));
    let cm = p.releases[0]
        .objects
        .iter()
        .find(|o| o.key.kind == "ConfigMap")
        .unwrap();
    assert_eq!(cm.action, ObjectAction::Adopt);
    assert!(p.releases[0].blocked.is_none());
}

/// A failed upgrade (revision 2) created `extra-a` and annotated the
/// ConfigMap; the next plan starts from the last deployed revision 1,
/// whose manifest knows neither. The plan still deletes `extra-a` (this
/// release owns it live) and removes the annotation (rudder's apply owns
/// it), where Helm leaves both (helm/helm#11748).
#[test]
fn what_a_failed_revision_left_is_cleaned_up() {
    let w = World::new();
    let d = desired("web", "prod", chart("web", "1.0.0", &[("cm.yaml", CM)]));
    w.settle(&w.plan(std::slice::from_ref(&d)));
    let cm_annotated = CM.replace(
        "  name: web-config\n",
        "  name: web-config\n  annotations:\n    broken: \"yes\"\n",
    );
    let extra = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra-a\ndata:\n  a: \"1\"\n";
    let d2 = desired(
        "web",
        "prod",
        chart(
            "web",
            "1.1.0",
            &[("cm.yaml", &cm_annotated), ("extra.yaml", extra)],
        ),
    );
    w.settle(&w.plan(std::slice::from_ref(&d2)));
    w.set_status("prod", "web", 2, Status::Failed);
    w.set_status("prod", "web", 1, Status::Deployed);

    let d3 = desired("web", "prod", chart("web", "1.2.0", &[("cm.yaml", CM)]));
    let p = w.plan(std::slice::from_ref(&d3));
    let r = &p.releases[0];
    assert_eq!(r.from.as_ref().unwrap().revision, 1);
    let extra = r
        .objects
        .iter()
        .find(|o| o.key.name == "extra-a")
        .expect("extra-a is in the plan");
    assert_eq!(extra.action, ObjectAction::Delete);
    assert_eq!(
        extra.reason,
        "left behind by failed revision 2; in no manifest since"
    );
    let cm = r
        .objects
        .iter()
        .find(|o| o.key.name == "web-config")
        .unwrap();
    assert_eq!(cm.action, ObjectAction::Update, "{}", cm.reason);
    assert_eq!(cm.changed, vec!["/metadata/annotations/broken"]);
    assert!(cm.diff.contains("\n-    broken: yes\n"), "{}", cm.diff);
    w.settle(&p);
    let p = w.plan(std::slice::from_ref(&d3));
    let r = &p.releases[0];
    assert!(r.objects.iter().all(|o| o.key.name != "extra-a"));
    assert!(
        r.objects
            .iter()
            .all(|o| o.action == ObjectAction::Unchanged),
        "{:?}",
        r.objects
    );
}
