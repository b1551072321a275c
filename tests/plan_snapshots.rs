//! Snapshots of plans, human and JSON, for the planner's main situations:
//! install, upgrade with drift, a failed last revision, a stuck pending
//! revision, an ownership conflict and Secret redaction.
//!
//! The in-memory cluster draws random uids and a random cluster id, which
//! feed the plan's `id` too; those are masked (`[uuid]`, `[plan-id]`)
//! before snapshotting, and every other value is asserted stable by
//! planning twice. resourceVersions come from one counter and are
//! deterministic, so they stay.
mod plan_common;

use plan_common::*;
use regex::Regex;
use rudder::plan::{view, ObjectAction, Plan, ReleaseAction};
use rudder::release::Status;
use serde_json::json;
use std::sync::OnceLock;

const CM: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  color: blue\n";
const ENV: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-env\ndata:\n  LOG_LEVEL: info\n";
const ENV2: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-env\ndata:\n  LOG_LEVEL: debug\n";
const LEGACY: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-legacy\ndata:\n  old: \"true\"\n";
const DEP: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n";
const SVC: &str = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector:\n    app: web\n  ports:\n  - port: 80\n    targetPort: 8080\n";
const SECRET: &str = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: web-creds\ntype: Opaque\nstringData:\n  password: hunter2-plaintext\n  user: admin\n";
const SECRET2: &str = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: web-creds\ntype: Opaque\nstringData:\n  password: correct-horse-plaintext\n  user: admin\n";

fn uuid_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap()
    })
}

/// Masks what the in-memory cluster draws at random: uids and the cluster
/// id (full, or its 12-character prefix in the human headline), and the
/// plan id that hashes them.
fn mask(plan: &Plan, text: &str) -> String {
    let mut s = text.replace(&plan.id, "[plan-id]");
    let short = plan.id.strip_prefix("sha256:").unwrap_or(&plan.id);
    s = s.replace(&short[..12], "[plan-id]");
    s = s.replace(&plan.cluster.id, "[cluster-id]");
    s = s.replace(
        &plan.cluster.id[..plan.cluster.id.len().min(12)],
        "[cluster-id]",
    );
    uuid_re().replace_all(&s, "[uuid]").into_owned()
}

/// The plan has no timestamps and no temporary paths, and uids only as
/// preconditions.
fn assert_clean(plan: &Plan) {
    let text = view::json(plan);
    let ts = Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d").unwrap();
    assert!(
        !ts.is_match(&text),
        "a timestamp in the plan: {:?}",
        ts.find(&text)
    );
    for bad in ["/tmp", "creationTimestamp", "managedFields"] {
        assert!(!text.contains(bad), "{bad} in the plan JSON");
    }
    // uids appear only under preconditions.
    let mut v = serde_json::to_value(plan).unwrap();
    for r in v["releases"].as_array_mut().unwrap() {
        r.as_object_mut().unwrap().remove("preconditions");
    }
    let mut rest = serde_json::to_string(&v).unwrap();
    rest = rest.replace(&plan.cluster.id, "");
    assert!(
        !uuid_re().is_match(&rest),
        "a uid outside the preconditions: {:?}",
        uuid_re().find(&rest)
    );
}

/// Snapshots the redacted plan as people and tools see it.
fn snap(name: &str, plan: &Plan) {
    assert_clean(plan);
    let shown = plan.redact();
    assert_clean(&shown);
    insta::assert_snapshot!(
        format!("{name}_human"),
        mask(&shown, &view::human(&shown, false))
    );
    insta::assert_snapshot!(format!("{name}_json"), mask(&shown, &view::json(&shown)));
}

/// Plans twice and checks both plans are byte-identical.
fn plan_stable(w: &World, d: &[rudder::plan::DesiredRelease]) -> Plan {
    let a = w.plan(d);
    let b = w.plan(d);
    assert_eq!(view::json(&a), view::json(&b), "planning twice differs");
    a
}

#[test]
fn install() {
    let w = World::new();
    let d = desired(
        "web",
        "prod",
        chart(
            "web",
            "1.0.0",
            &[("cm.yaml", CM), ("dep.yaml", DEP), ("svc.yaml", SVC)],
        ),
    );
    let p = plan_stable(&w, std::slice::from_ref(&d));
    assert_eq!(p.releases[0].action, ReleaseAction::Install);
    snap("install", &p);
}

#[test]
fn upgrade_with_drift_chart_change_and_removal() {
    let w = World::new();
    let v1 = desired(
        "web",
        "prod",
        chart(
            "web",
            "1.0.0",
            &[
                ("cm.yaml", CM),
                ("env.yaml", ENV),
                ("legacy.yaml", LEGACY),
                ("dep.yaml", DEP),
            ],
        ),
    );
    w.settle(&w.plan(std::slice::from_ref(&v1)));
    // kubectl scales the Deployment and edits a ConfigMap the chart keeps.
    w.kubectl_apply(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "prod"}, "spec": {"replicas": 5}}));
    w.kubectl_apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config", "namespace": "prod"}, "data": {"color": "red"}}));
    // The chart changes web-env and drops web-legacy.
    let v2 = desired(
        "web",
        "prod",
        chart(
            "web",
            "1.1.0",
            &[("cm.yaml", CM), ("env.yaml", ENV2), ("dep.yaml", DEP)],
        ),
    );
    let p = plan_stable(&w, std::slice::from_ref(&v2));
    let r = &p.releases[0];
    assert_eq!(r.action, ReleaseAction::Upgrade);
    let by = |name: &str, kind: &str| {
        r.objects
            .iter()
            .find(|o| o.key.name == name && o.key.kind == kind)
            .unwrap_or_else(|| panic!("{kind} {name}"))
    };
    let cm = by("web-config", "ConfigMap");
    assert_eq!(cm.action, ObjectAction::Update);
    assert!(cm.reason.starts_with("drift"), "{}", cm.reason);
    assert_eq!(cm.changed, vec!["/data/color"]);
    let dep = by("web", "Deployment");
    assert_eq!(dep.action, ObjectAction::Update);
    assert!(dep.reason.starts_with("drift"), "{}", dep.reason);
    assert_eq!(dep.changed, vec!["/spec/replicas"]);
    let env = by("web-env", "ConfigMap");
    assert_eq!(env.action, ObjectAction::Update);
    assert_eq!(env.reason, "the desired object changed");
    assert_eq!(by("web-legacy", "ConfigMap").action, ObjectAction::Delete);
    assert_eq!(r.recovery.rollback_revision, Some(1));
    snap("upgrade_drift", &p);
}

#[test]
fn upgrade_after_failed_revision() {
    let w = World::new();
    let v1 = desired("web", "prod", chart("web", "1.0.0", &[("env.yaml", ENV)]));
    w.settle(&w.plan(std::slice::from_ref(&v1)));
    let v2 = desired("web", "prod", chart("web", "1.1.0", &[("env.yaml", ENV2)]));
    w.settle(&w.plan(std::slice::from_ref(&v2)));
    w.set_status("prod", "web", 2, Status::Failed);
    w.set_status("prod", "web", 1, Status::Deployed);
    let p = plan_stable(&w, std::slice::from_ref(&v2));
    let r = &p.releases[0];
    assert_eq!(r.action, ReleaseAction::Upgrade);
    assert_eq!(r.from.as_ref().unwrap().revision, 1);
    assert_eq!(r.from.as_ref().unwrap().status, "deployed");
    assert_eq!(r.to.revision, 3);
    assert_eq!(r.recovery.rollback_revision, Some(1));
    let last = r.preconditions.last_record.as_ref().unwrap();
    assert_eq!((last.revision, last.status.as_str()), (2, "failed"));
    snap("upgrade_after_failed", &p);
}

#[test]
fn recover_pending_upgrade() {
    let w = World::new();
    let v1 = desired("web", "prod", chart("web", "1.0.0", &[("env.yaml", ENV)]));
    w.settle(&w.plan(std::slice::from_ref(&v1)));
    let v2 = desired("web", "prod", chart("web", "1.1.0", &[("env.yaml", ENV2)]));
    w.settle(&w.plan(std::slice::from_ref(&v2)));
    w.set_status("prod", "web", 2, Status::PendingUpgrade);
    w.set_status("prod", "web", 1, Status::Deployed);
    let p = plan_stable(&w, std::slice::from_ref(&v2));
    let r = &p.releases[0];
    assert_eq!(r.action, ReleaseAction::Recover);
    assert_eq!(r.from.as_ref().unwrap().revision, 1);
    assert_eq!(r.to.revision, 3);
    snap("recover_pending_upgrade", &p);
}

#[test]
fn ownership_conflict_blocks() {
    let w = World::new();
    w.kubectl_apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}}));
    w.foreign(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config", "namespace": "prod"}, "data": {"color": "red"}}), "other", "prod");
    let d = desired(
        "web",
        "prod",
        chart("web", "1.0.0", &[("cm.yaml", CM), ("env.yaml", ENV)]),
    );
    let p = plan_stable(&w, std::slice::from_ref(&d));
    let r = &p.releases[0];
    assert!(r.blocked.is_some());
    assert_eq!(p.blocked().count(), 1);
    snap("ownership_conflict", &p);
}

#[test]
fn secret_replans_unchanged_and_redacts_changes() {
    let w = World::new();
    let v1 = desired(
        "web",
        "prod",
        chart("web", "1.0.0", &[("secret.yaml", SECRET)]),
    );
    let p1 = w.plan(std::slice::from_ref(&v1));
    for text in [view::human(&p1.redact(), false), view::json(&p1.redact())] {
        assert!(!text.contains("hunter2-plaintext"), "{text}");
    }
    w.settle(&p1);
    // stringData folds into data live; the replan sees no change.
    let p = plan_stable(&w, std::slice::from_ref(&v1));
    let r = &p.releases[0];
    assert_eq!(r.action, ReleaseAction::Noop, "{:#?}", r.objects);
    assert!(r
        .objects
        .iter()
        .all(|o| o.action == ObjectAction::Unchanged));
    snap("secret_unchanged", &p);

    // A changed value: an update whose diff shows hashes only.
    let v2 = desired(
        "web",
        "prod",
        chart("web", "1.0.1", &[("secret.yaml", SECRET2)]),
    );
    let p = plan_stable(&w, std::slice::from_ref(&v2));
    let r = &p.releases[0];
    assert_eq!(r.action, ReleaseAction::Upgrade);
    let s = r.objects.iter().find(|o| o.key.kind == "Secret").unwrap();
    assert_eq!(s.action, ObjectAction::Update, "{s:#?}");
    assert!(!s.changed.is_empty());
    let shown = p.redact();
    let human = view::human(&shown, false);
    let json_text = view::json(&shown);
    for secret in [
        "hunter2-plaintext",
        "correct-horse-plaintext",
        // base64 of the two passwords
        "aHVudGVyMi1wbGFpbnRleHQ=",
        "Y29ycmVjdC1ob3JzZS1wbGFpbnRleHQ=",
    ] {
        assert!(!human.contains(secret), "{secret} in\n{human}");
        assert!(!json_text.contains(secret), "{secret} in\n{json_text}");
    }
    // No digest of a value (it could be checked against a guess offline);
    // the diff marks the value that changes.
    assert!(!human.contains("(redacted sha256"), "{human}");
    assert!(
        human.contains("+  password: (redacted, changed)"),
        "{human}"
    );
    assert!(human.contains("   user: (redacted)"), "{human}");
    snap("secret_changed", &p);
}

/// Release `app` needs release `crds`, which installs the CRD of its
/// custom resources: they are planned against it (`plannedCrd`), one valid,
/// one breaking the CRD's schema, which blocks `app`.
#[test]
fn custom_resources_of_a_crd_an_earlier_release_installs() {
    const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: widgets, singular: widget, kind: Widget}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            required: [size]\n            properties:\n              size: {type: integer}\n";
    const GOOD: &str =
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: good\nspec:\n  size: 3\n";
    const BAD: &str =
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: bad\nspec:\n  color: red\n";
    let w = World::new();
    let crds = desired(
        "crds",
        "infra",
        chart("crds", "1.0.0", &[("crd.yaml", CRD)]),
    );
    let mut app = desired(
        "app",
        "prod",
        chart("app", "1.0.0", &[("good.yaml", GOOD), ("bad.yaml", BAD)]),
    );
    app.needs = vec![rudder::plan::Need {
        release: crds.reference(),
        reason: "its Widgets need the CRD".into(),
    }];
    let p = plan_stable(&w, &[app, crds]);
    let r = &p.releases[1];
    assert_eq!(r.name, "app");
    let by_name = |n: &str| r.objects.iter().find(|o| o.key.name == n).unwrap();
    assert_eq!(by_name("good").action, ObjectAction::Create);
    assert_eq!(by_name("bad").action, ObjectAction::Skip);
    assert!(r.blocked.is_some());
    snap("crd_across_releases", &p);
}
