//! Releases files and the order across releases, on Lokomotive's control
//! plane (`fixtures/plans/lokomotive`): the order Lokomotive hard-coded in
//! `CommonControlPlaneCharts` and asserted in `platform_test.go`, expressed as
//! `needs` data in a deliberately shuffled file.
use rudder::plan::file::{self, FileError};
use rudder::plan::order::{release_order, OrderError};
use rudder::plan::{DesiredRelease, ReleaseRef};
use rudder::yaml::Node;
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/plans/lokomotive")
}

fn load_lokomotive() -> Vec<DesiredRelease> {
    file::load(&fixture().join("releases.yaml")).expect("the Lokomotive fixture loads")
}

fn find<'a>(releases: &'a [DesiredRelease], name: &str) -> &'a DesiredRelease {
    releases
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no release {name}"))
}

const ORDER: [&str; 8] = [
    "kube-system/bootstrap-secrets",
    "kube-system/pod-checkpointer",
    "kube-system/kube-apiserver",
    "kube-system/kubernetes",
    "kube-system/calico",
    "lokomotive-system/lokomotive",
    "kube-system/kubelet",
    "kube-system/node-local-dns",
];

#[test]
fn lokomotive_control_plane_order_comes_from_needs() {
    let releases = load_lokomotive();
    // The file is shuffled: file order is not the update order.
    let file_order: Vec<String> = releases.iter().map(|r| r.reference().to_string()).collect();
    assert_ne!(file_order, ORDER);
    let order = release_order(&releases).unwrap();
    let names: Vec<String> = order
        .iter()
        .map(|&i| releases[i].reference().to_string())
        .collect();
    assert_eq!(names, ORDER);
    // Lokomotive's platform_test.go: "bootstrap-secrets should be updated first".
    assert_eq!(releases[order[0]].name, "bootstrap-secrets");
}

/// `before` should be updated before `after` because `reason`: the edge is
/// `after` needing `before`, and the order puts `before` first.
fn assert_before(
    releases: &[DesiredRelease],
    order: &[usize],
    before: &str,
    after: &str,
    reason: &str,
) {
    let pos = |name: &str| {
        order
            .iter()
            .position(|&i| releases[i].name == name)
            .unwrap_or_else(|| panic!("{name} is not in the order"))
    };
    let b = find(releases, before).reference();
    let need = find(releases, after)
        .needs
        .iter()
        .find(|n| n.release == b)
        .unwrap_or_else(|| panic!("{after} does not need {before}"));
    assert_eq!(need.reason, reason, "reason of {after} -> {before}");
    assert!(
        pos(before) < pos(after),
        "{before} should be updated before {after} because it {reason}"
    );
}

#[test]
fn every_edge_has_lokomotives_reason() {
    let releases = load_lokomotive();
    let order = release_order(&releases).unwrap();
    let edges = [
        (
            "bootstrap-secrets",
            "pod-checkpointer",
            "should be updated first to allow nodes to proceed with bootstrapping process",
        ),
        (
            "pod-checkpointer",
            "kube-apiserver",
            "should be updated before kube-apiserver to ensure API availability if upgrade process of kube-apiserver fails",
        ),
        (
            "kube-apiserver",
            "kubernetes",
            "must be updated before other Kubernetes components, as the Kubernetes version skew policy requires",
        ),
        (
            "kubernetes",
            "calico",
            "should be updated before calico, as calico requires a functional kube-proxy to converge",
        ),
        (
            "calico",
            "lokomotive",
            "should be updated before lokomotive, as lokomotive components require Pod networking to converge",
        ),
        (
            "kubernetes",
            "kubelet",
            "should be updated before kubelet to ensure that kubelet is never newer than the control plane, as the Kubernetes version skew policy requires",
        ),
        (
            "lokomotive",
            "kubelet",
            "should be updated before kubelet, so that self-hosted kubelets are updated last, once the rest of the control plane has converged",
        ),
        (
            "kubelet",
            "node-local-dns",
            "should be updated before node-local-dns, the optional node-local DNS cache that every kubelet points its Pods at",
        ),
    ];
    for (before, after, reason) in edges {
        assert_before(&releases, &order, before, after, reason);
    }
    // Those are all the edges: each reason is asserted above.
    let total: usize = releases.iter().map(|r| r.needs.len()).sum();
    assert_eq!(total, edges.len());
}

#[test]
fn lokomotive_fixture_options_charts_and_values() {
    let releases = load_lokomotive();
    for r in &releases {
        assert_eq!(r.chart.metadata.name, r.name, "chart of {}", r.name);
        assert!(r.options.atomic, "{}", r.name);
        assert_eq!(r.options.timeout.as_secs(), 600, "{}", r.name);
        assert!(!r.absent);
        let want_ns = if r.name == "lokomotive" {
            "lokomotive-system"
        } else {
            "kube-system"
        };
        assert_eq!(r.namespace, want_ns);
    }
    // defaults.values for everyone...
    let calico = find(&releases, "calico");
    assert_eq!(
        calico.values.get("version"),
        Some(&Node::Str("v1.36.3".into()))
    );
    // ...replaced by kube-apiserver's own list, merged in order, then `set`.
    let api = find(&releases, "kube-apiserver");
    assert_eq!(api.values.get("replicas"), Some(&Node::Float(3.0)));
    let Some(Node::Map(labels)) = api.values.get("labels") else {
        panic!("labels: {:?}", api.values)
    };
    let labels: Vec<(&str, &Node)> = labels.iter().map(|(k, v)| (k.as_str(), v)).collect();
    assert_eq!(
        labels,
        [
            ("cluster", &Node::Str("lokomotive".into())),
            ("component", &Node::Str("kube-apiserver".into())),
            ("tier", &Node::Str("control-plane".into())),
        ]
    );
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn tiny_chart(dir: &Path, name: &str) {
    write(
        dir,
        &format!("charts/{name}/Chart.yaml"),
        &format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
    );
    write(
        dir,
        &format!("charts/{name}/templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Chart.Name }}\n",
    );
}

#[test]
fn a_shuffled_cycle_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for c in ["a", "b", "c", "d"] {
        tiny_chart(d, c);
    }
    // d is independent; c needs b, b needs a, a needs c (file order shuffled).
    write(
        d,
        "releases.yaml",
        "\
defaults:
  namespace: sys
releases:
- name: c
  chart: charts/c
  needs: [sys/b]
- name: d
  chart: charts/d
- name: a
  chart: charts/a
  needs:
  - release: sys/c
    reason: loops back
- name: b
  chart: charts/b
  needs: [sys/a]
",
    );
    let path = d.join("releases.yaml");
    let r = |n: &str| ReleaseRef {
        namespace: "sys".into(),
        name: n.into(),
    };
    // The file names the cycle and the place of one of its needs entries:
    // a's `release: sys/c` (line 12, column 14).
    let fe = file::load(&path).unwrap_err();
    assert_eq!(
        fe.to_string(),
        format!(
            "{}:12:14: release \"sys/a\" needs \"sys/c\", and the needs form a cycle: sys/c -> sys/a -> sys/b -> sys/c",
            path.display()
        )
    );
    let FileError::Cycle {
        at, path: cycle, ..
    } = &fe
    else {
        panic!("not a cycle error: {fe:?}")
    };
    assert_eq!((at.line, at.col), (12, 14));
    assert_eq!(cycle, &vec![r("c"), r("a"), r("b"), r("c")]);
    // Releases built in the library (no file) get the same cycle from the
    // planner's order.
    let chart = || rudder::chart::load(d.join("charts/a")).unwrap();
    let mut releases = Vec::new();
    for (name, need) in [
        ("c", Some("b")),
        ("d", None),
        ("a", Some("c")),
        ("b", Some("a")),
    ] {
        let mut rel = DesiredRelease::new(name, "sys", chart());
        if let Some(n) = need {
            rel.needs.push(rudder::plan::Need {
                release: r(n),
                reason: String::new(),
            });
        }
        releases.push(rel);
    }
    let e = release_order(&releases).unwrap_err();
    // Update order: a before b before c before a (each needs the previous).
    assert_eq!(
        e,
        OrderError::Cycle {
            path: vec![r("c"), r("a"), r("b"), r("c")]
        }
    );
    assert_eq!(
        e.to_string(),
        "the needs form a cycle: sys/c -> sys/a -> sys/b -> sys/c"
    );
}

#[test]
fn malformed_files_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tiny_chart(d, "web");
    let path = d.join("releases.yaml");
    let shown = path.display().to_string();
    let ds = d.display().to_string();
    // Helm's files in the temporary directory, never the user's.
    let mut opts = rudder::source::resolve::LocateOptions::from_env();
    opts.paths =
        rudder::source::HelmPaths::from_lookup(|k| (k == "HOME").then(|| d.display().to_string()));
    let repo_config = opts.paths.repository_config.display().to_string();
    let run = |text: &str| -> FileError {
        write(d, "releases.yaml", text);
        file::read(&path)
            .and_then(|f| f.load_releases_with(&opts))
            .unwrap_err()
    };
    let cases: Vec<(&str, String)> = vec![
        (
            "releases:\n- name: web\n  chrt: charts/web\n",
            format!(
                "{shown}:3:3: unknown key \"chrt\" in release \"web\" (known keys: name, namespace, chart, version, values, set, needs, wait, waitStrategy, waitForJobs, timeout, atomic, historyMax, createNamespace, takeOwnership, installed, description)"
            ),
        ),
        (
            "releases:\n- name: web\n  chart: charts/web\n  timeout: 20\n",
            format!("{shown}:4:12: release \"web\": timeout must be a Go duration such as 20s, got \"20\""),
        ),
        (
            "releases:\n- name: web\n  chart: charts/web\n  wait: sometimes\n",
            format!("{shown}:4:9: release \"web\": wait must be a bool, got \"sometimes\""),
        ),
        (
            "releases:\n- name: web\n",
            format!("{shown}:2:3: release \"web\": missing required key \"chart\""),
        ),
        (
            "releases:\n- chart: charts/web\n",
            format!("{shown}:2:3: release #1: missing required key \"name\""),
        ),
        (
            "releases:\n- name: web\n  chart: charts/web\n- name: web\n  chart: charts/web\n",
            format!("{shown}:4:3: release \"default/web\" is defined twice (first at line 2)"),
        ),
        (
            "releases:\n- name: web\n  chart: charts/web\n  needs: [pod-checkpointer]\n",
            format!("{shown}:4:11: release \"web\": needs entry \"pod-checkpointer\" is not namespace/name"),
        ),
        (
            "releases:\n- name: x\n  chart: charts/web\n  needs:\n  - kube-system/nope\n",
            format!("{shown}:5:5: release \"default/x\" needs \"kube-system/nope\", which the file does not define"),
        ),
        (
            "releases:\n- name: web\n  chart: ./charts/nope\n",
            format!("{shown}:3:10: release \"default/web\": chart {ds}/./charts/nope does not exist"),
        ),
        (
            "releases:\n- name: web\n  chart: charts/nope\n",
            format!("{shown}:3:10: release \"default/web\": chart {ds}/charts/nope does not exist, and no repository \"charts\" is defined (in the file's repositories: or in {repo_config})"),
        ),
        (
            "releases:\n- name: web\n  chart: charts/web\n  values: [values/missing.yaml]\n",
            format!("{shown}:4:12: release \"default/web\": values file {ds}/values/missing.yaml does not exist"),
        ),
    ];
    for (text, want) in cases {
        assert_eq!(run(text).to_string(), want, "{text}");
    }
    // A self-need is a cycle of one, reported at the entry.
    assert_eq!(
        run("releases:\n- name: web\n  chart: charts/web\n  needs:\n  - default/web\n").to_string(),
        format!("{shown}:5:5: release \"default/web\" needs \"default/web\", and the needs form a cycle: default/web -> default/web")
    );
    write(d, "values/bad.yaml", "replicas: [1\n");
    let e = run("releases:\n- name: web\n  chart: charts/web\n  values: [values/bad.yaml]\n");
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!("invalid values file {ds}/values/bad.yaml: ")),
        "{msg}"
    );
    assert!(
        msg.ends_with(&format!(
            "(values of release \"default/web\" at {shown}:4:12)"
        )),
        "{msg}"
    );
}

#[test]
fn syntax_errors_are_reported_where_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tiny_chart(d, "web");
    let path = d.join("releases.yaml");
    let shown = path.display().to_string();
    let run = |text: &str| -> String {
        write(d, "releases.yaml", text);
        file::load(&path).unwrap_err().to_string()
    };
    // An unclosed flow sequence: at its `[` (line 6), not at the end of the
    // file (line 9) where the parser gave up.
    let e = run("releases:\n- name: db\n  chart: charts/web\n- name: web\n  chart: charts/web\n  needs: [default/db\n\n\n");
    assert_eq!(
        e,
        format!("{shown}:6:10: while parsing a flow sequence, expected ',' or ']': this flow sequence ([...]) is not closed (the parser gave up at line 9, column 1)")
    );
    // The same for a flow mapping, nested in the middle of the file.
    let e = run("releases:\n- name: web\n  chart: charts/web\n  set: {a: 1\n\n\n");
    assert!(e.starts_with(&format!("{shown}:4:8: ")), "{e}");
    // An unclosed quote: where the quoted scalar starts.
    let e = run("releases:\n- name: web\n  chart: \"charts/web\n\n");
    assert!(e.starts_with(&format!("{shown}:3:10: ")), "{e}");
    // A bad indentation: at the offending line.
    let e = run("releases:\n- name: web\n   chart: charts/web\n\n\n");
    assert!(e.starts_with(&format!("{shown}:3:")), "{e}");
}
