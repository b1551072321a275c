//! Charts built from components, and values: a component chart renders
//! fixed manifests, so values given to it change nothing. The plan says so
//! with a warning, and a values-only change is a `noop` that writes no
//! revision. A component sets its chart's version and appVersion.
mod plan_common;

use plan_common::*;
use rudder::chart::{chart_from_component, Chart, HandlebarsComponent};
use rudder::plan::{view, DesiredRelease, ReleaseAction};
use rudder::release::Store;
use rudder::yaml::Node;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize)]
struct Config {
    replicas: u32,
}

const DEPLOY: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: {{config.replicas}}\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers: [{name: web, image: \"nginx:1.27\"}]\n";

fn component(replicas: u32) -> HandlebarsComponent<Config> {
    let mut t = BTreeMap::new();
    t.insert("deploy.yaml".to_string(), DEPLOY.to_string());
    HandlebarsComponent::new("web", "apps", t, Config { replicas })
}

fn values(yaml: &str) -> BTreeMap<String, Node> {
    rudder::render::values::parse_values_file("values.yaml", yaml).expect("values")
}

fn release(chart: Chart, vals: &str) -> DesiredRelease {
    let mut d = desired("web", "apps", chart);
    d.values = values(vals);
    d
}

fn apply(w: &World, d: &DesiredRelease) -> rudder::exec::Report {
    w.execute(&w.plan(std::slice::from_ref(d)))
}

fn revisions(w: &World) -> Vec<(u64, String)> {
    let mut h = w.store.history("apps", "web").unwrap();
    h.sort_by_key(|r| r.version);
    h.iter().map(|r| (r.version, r.chart_label())).collect()
}

#[test]
fn values_given_to_a_component_chart_are_a_warning_and_change_nothing() {
    let chart = chart_from_component(&component(2)).unwrap();
    // Rendering with values still gives the component's 2 replicas.
    let opts = rudder::render::RenderOptions {
        release_name: "web".into(),
        namespace: "apps".into(),
        ..Default::default()
    };
    let rendered = rudder::render::render(&chart, &values("replicas: 5\n"), &opts).unwrap();
    assert!(rendered.manifests[0].content.contains("replicas: 2"));

    let w = World::new();
    // Installed without values: no warning.
    let d = release(chart.clone(), "");
    let plan = w.plan(std::slice::from_ref(&d));
    assert!(
        plan.releases[0].warnings.is_empty(),
        "{:?}",
        plan.releases[0].warnings
    );
    apply(&w, &d);

    // A values-only change: noop, with the warning, and no new revision.
    let d5 = release(chart.clone(), "replicas: 5\n");
    let plan = w.plan(std::slice::from_ref(&d5));
    let r = &plan.releases[0];
    assert_eq!(r.action, ReleaseAction::Noop, "{}", r.reason);
    assert!(r.reason.contains("no template reads them"), "{}", r.reason);
    assert_eq!(
        r.warnings,
        [
            "values given (replicas) are ignored: no template of chart web-0.1.0 reads values, \
          and it has no default values (a chart built from a component renders fixed manifests)"
        ]
    );
    // Shown by the table view, carried by the JSON.
    let table = view::human(&plan, false);
    assert!(
        table.contains("\n  warning: values given (replicas) are ignored"),
        "{table}"
    );
    let json: serde_json::Value = serde_json::from_str(&view::json(&plan)).unwrap();
    assert_eq!(json["releases"][0]["warnings"][0], r.warnings[0].as_str());
    let report = apply(&w, &d5);
    assert_eq!(report.releases[0].outcome, rudder::exec::Outcome::Noop);
    assert_eq!(revisions(&w), [(1, "web-0.1.0".to_string())]);

    // A first install with values installs, and warns.
    let w2 = World::new();
    let plan = w2.plan(std::slice::from_ref(&d5));
    assert_eq!(plan.releases[0].action, ReleaseAction::Install);
    assert_eq!(plan.releases[0].warnings.len(), 1);

    // The component's own change is an upgrade, and the chart version it
    // sets shows in the history.
    let c3 = component(3)
        .with_chart_version("1.1.0")
        .with_app_version("v1.31.2");
    let chart3 = chart_from_component(&c3).unwrap();
    let d3 = release(chart3, "");
    let plan = w.plan(std::slice::from_ref(&d3));
    let r = &plan.releases[0];
    assert_eq!(r.action, ReleaseAction::Upgrade);
    assert_eq!(r.to.chart, "web-1.1.0");
    assert_eq!(r.to.app_version, "v1.31.2");
    apply(&w, &d3);
    assert_eq!(
        revisions(&w),
        [(1, "web-0.1.0".to_string()), (2, "web-1.1.0".to_string())]
    );
}

/// The same values-only change to a chart that reads values is an upgrade,
/// without a warning.
#[test]
fn values_given_to_a_chart_that_reads_them_upgrade_without_a_warning() {
    let tpl = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  replicas: {{ .Values.replicas | default 2 | quote }}\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("templates")).unwrap();
    std::fs::write(
        dir.path().join("Chart.yaml"),
        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("templates/cm.yaml"), tpl).unwrap();
    let chart = rudder::chart::load(dir.path()).unwrap();
    let w = World::new();
    apply(&w, &release(chart.clone(), ""));
    let plan = w.plan(&[release(chart.clone(), "replicas: 5\n")]);
    let r = &plan.releases[0];
    assert_eq!(r.action, ReleaseAction::Upgrade);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    // Values the templates do not use still make a revision here: the
    // chart reads values, and which ones is not known before rendering.
    let plan = w.plan(&[release(chart, "unused: 1\n")]);
    assert_eq!(plan.releases[0].action, ReleaseAction::Upgrade);
    assert!(plan.releases[0].warnings.is_empty());
}

/// Through the binary: `install --set` on a chart built from manifests
/// warns on stderr, `plan` shows the warning, and `apply` of a values-only
/// change writes no revision.
#[test]
fn the_cli_warns_and_applies_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_rudder"))
            .args(args)
            .current_dir(dir.path())
            .env_remove("KUBECONFIG")
            .env_remove("HELM_DRIVER")
            .output()
            .unwrap();
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        );
        assert!(o.status.success(), "{args:?}: {out}{err}");
        (out, err)
    };
    std::fs::write(
        dir.path().join("deploy.yaml"),
        DEPLOY.replace("{{config.replicas}}", "2"),
    )
    .unwrap();
    run(&[
        "chart",
        "from-manifests",
        "--name",
        "web",
        "--namespace",
        "apps",
        "deploy.yaml",
        "--output",
        "chart",
    ]);
    let (_, err) = run(&[
        "install",
        "web",
        "chart",
        "-n",
        "apps",
        "--create-namespace",
        "--set",
        "replicas=5",
    ]);
    assert!(
        err.contains("apps/web: warning: values given (replicas) are ignored: no template of chart web-0.1.0 reads values"),
        "{err}"
    );
    std::fs::write(
        dir.path().join("releases.yaml"),
        "releases:\n- name: web\n  namespace: apps\n  chart: chart\n  set: {replicas: 7}\n",
    )
    .unwrap();
    let (plan, _) = run(&["plan", "releases.yaml"]);
    assert!(plan.contains("web apps noop revision 1"), "{plan}");
    assert!(
        plan.contains("  warning: values given (replicas) are ignored"),
        "{plan}"
    );
    let (_, err) = run(&["apply", "releases.yaml"]);
    assert!(err.contains("apps/web: warning: values given"), "{err}");
    let (history, _) = run(&["history", "web", "-n", "apps"]);
    assert_eq!(history.lines().count(), 2, "{history}");
}
