//! The chart commands of the `rudder` binary: exit codes and Helm-style
//! `Error: ...` lines.
mod common;

use std::path::Path;
use std::process::{Command, Output};

fn rudder(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rudder"))
        .args(args)
        .output()
        .expect("rudder runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn write(p: &Path, text: &str) {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    std::fs::write(p, text).expect("write");
}

const DEPLOY: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: nginx\n";

#[test]
fn from_manifests_writes_a_directory_and_a_package() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let src = tmp.path().join("src");
    write(&src.join("apps/web.yaml"), DEPLOY);
    write(
        &src.join("ns.yaml"),
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: demo\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  tpl: '{{ .x }}'\n",
    );
    let out = tmp.path().join("chart");
    let o = rudder(&[
        "chart",
        "from-manifests",
        "--name",
        "demo",
        "--namespace",
        "demo",
        src.to_str().expect("utf-8"),
        "--output",
        out.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.join("templates/apps/web.yaml").is_file());
    let ns = std::fs::read_to_string(out.join("templates/ns.yaml")).expect("read");
    assert!(
        !ns.contains("Namespace") && ns.contains("{{`{{`}} .x }}"),
        "{ns}"
    );

    let pkg = tmp.path().join("demo.tgz");
    let o = rudder(&[
        "chart",
        "from-manifests",
        "--name",
        "demo",
        "--version",
        "1.2.3",
        "--namespace",
        "demo",
        src.join("apps/web.yaml").to_str().expect("utf-8"),
        "--output",
        pkg.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = rudder(&["show", "chart", pkg.to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "apiVersion: v2\nname: demo\ntype: application\nversion: 1.2.3\n\n"
    );
}

#[test]
fn from_manifests_errors_name_file_and_document() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let src = tmp.path().join("src");
    write(
        &src.join("a.yaml"),
        &format!("{DEPLOY}---\n- not\n- a mapping\n"),
    );
    let o = rudder(&[
        "chart",
        "from-manifests",
        "--name",
        "x",
        "--namespace",
        "ns",
        src.to_str().expect("utf-8"),
        "--output",
        tmp.path().join("o").to_str().expect("utf-8"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "Error: a.yaml: document 2: the document is a sequence, not a mapping (a Kubernetes object)\n"
    );
    write(&src.join("a.yaml"), DEPLOY);
    write(&src.join("_helpers.yaml"), DEPLOY);
    let o = rudder(&[
        "chart",
        "from-manifests",
        "--name",
        "x",
        "--namespace",
        "ns",
        src.to_str().expect("utf-8"),
        "--output",
        tmp.path().join("o").to_str().expect("utf-8"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with("Error: _helpers.yaml: Helm would not render this file"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn package_lint_and_show_report_like_helm() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let o = rudder(&[
        "build-fixtures",
        "--output",
        tmp.path().to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = tmp.path().join("metrics-server");
    let dest = tmp.path().join("pkgs");
    let o = rudder(&[
        "package",
        dir.to_str().expect("utf-8"),
        "-d",
        dest.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let pkg = dest.join("metrics-server-0.1.0.tgz");
    assert_eq!(
        std::fs::read(&pkg).expect("package"),
        std::fs::read(tmp.path().join("metrics-server-0.1.0.tgz")).expect("fixture package"),
        "packaging the written directory gives the same bytes"
    );
    let o = rudder(&[
        "lint",
        "--strict",
        dir.to_str().expect("utf-8"),
        pkg.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).ends_with("2 chart(s) linted, 0 chart(s) failed\n"));

    let bad = tmp.path().join("bad");
    write(
        &bad.join("Chart.yaml"),
        "apiVersion: v3\nname: bad\nversion: 1.0\n",
    );
    let o = rudder(&["lint", bad.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("[ERROR] Chart.yaml: apiVersion 'v3' is not valid. The value must be either \"v1\" or \"v2\"\n"), "{out}");
    assert!(
        out.contains(
            "[ERROR] Chart.yaml: version should be of type string but it's of type float64\n"
        ),
        "{out}"
    );
    assert_eq!(stderr(&o), "Error: 1 chart(s) linted, 1 chart(s) failed\n");

    let o = rudder(&[
        "show",
        "chart",
        tmp.path().join("missing").to_str().expect("utf-8"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with("Error: stat "), "{}", stderr(&o));
    let junk = tmp.path().join("junk.tgz");
    std::fs::write(&junk, b"\x1f\x8b\x08junk").expect("write");
    let o = rudder(&["show", "chart", junk.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with("Error: ") && stderr(&o).contains("junk.tgz"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn lint_output_matches_helm_for_chart_level_findings() {
    let Some(helm) = common::helm(3) else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("v3", &[("Chart.yaml", "apiVersion: v3\nname: a\nversion: 1.0\nappVersion: 2\n")]),
        ("nover", &[("Chart.yaml", "apiVersion: v2\nname: a\nicon: not a url\nsources: ['']\n"), ("values.yaml", "- a\n")]),
        ("maint", &[("Chart.yaml", "apiVersion: v1\nname: a\nversion: 1.0.0\ntype: application\nmaintainers: [{email: x@y.z}]\n")]),
        ("deps", &[("Chart.yaml", "apiVersion: v2\nname: a\nversion: 1.0.0\ndependencies: [{name: b, version: 1.0.0, repository: 'file://b'}]\n")]),
        ("broken", &[("Chart.yaml", "name: [a\n")]),
        ("ok", &[("Chart.yaml", "apiVersion: v2\nname: a\nversion: 1.0.0\nicon: https://example.com/i.png\n"), ("values.yaml", "a: 1\n")]),
    ];
    let mut compared = 0;
    for (name, files) in cases {
        let dir = tmp.path().join(name);
        for (f, text) in *files {
            write(&dir.join(f), text);
        }
        let d = dir.to_str().expect("utf-8");
        let h = common::helm_command(&helm, &tmp.path().join("home"))
            .args(["lint", d])
            .output()
            .expect("helm");
        let r = rudder(&["lint", d]);
        assert_eq!(
            String::from_utf8_lossy(&r.stdout),
            String::from_utf8_lossy(&h.stdout),
            "stdout for {name}"
        );
        assert_eq!(stderr(&r), stderr(&h), "stderr for {name}");
        assert_eq!(r.status.code(), h.status.code(), "exit for {name}");
        compared += 1;
    }
    eprintln!("{compared} lint cases identical to helm lint");
}

/// `rudder lint` against `helm lint` on every chart of the corpus (stdout,
/// stderr and exit code, run from the chart's corpus directory). This
/// exercises the rules that need rendering: YAML validity per document,
/// object names, deprecated APIs, lint mode's `required`/`fail`, and the
/// values-schema rule.
#[test]
fn lint_matches_helm_on_corpus_charts() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let Some(helm) = common::helm(3) else { return };
    let home = tempfile::tempdir().expect("tempdir");
    let charts = shared.join("conformance/charts");
    let mut dirs: Vec<_> = std::fs::read_dir(&charts)
        .expect("corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("chart/Chart.yaml").is_file())
        .collect();
    dirs.sort();
    let (mut same, mut differ) = (0, Vec::new());
    for dir in &dirs {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let h = common::helm_command(&helm, home.path())
            .args(["lint", "chart"])
            .current_dir(dir)
            .output()
            .expect("helm");
        let r = Command::new(env!("CARGO_BIN_EXE_rudder"))
            .args(["lint", "chart"])
            .current_dir(dir)
            .output()
            .expect("rudder");
        if h.stdout == r.stdout && h.stderr == r.stderr && h.status.code() == r.status.code() {
            same += 1;
        } else {
            differ.push(name.to_string());
        }
    }
    eprintln!(
        "lint: {same}/{} corpus charts identical to helm lint; differ: {differ:?}",
        dirs.len()
    );
    assert!(differ.is_empty(), "lint differs from helm on {differ:?}");
    assert!(
        dirs.len() >= 30,
        "expected the corpus charts, found {}",
        dirs.len()
    );
}
