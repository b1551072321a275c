//! Real Helm as the oracle for charts rudder builds and packages.
//!
//! - every fixture chart passes `helm lint --strict`, as a directory and as
//!   the package;
//! - `helm template --include-crds` of every fixture chart gives back the
//!   component's objects (Lists flattened, the release Namespace dropped),
//!   compared as parsed objects;
//! - Helm renders rudder's package of every public corpus chart exactly as
//!   it renders the original directory.
mod common;
// The fixture components, part of the `rudder` binary.
#[allow(dead_code)]
#[path = "../src/cli/fixtures.rs"]
mod fixtures;

use rudder::chart::{self, Component};
use rudder::yaml::Node;
use std::path::Path;
use std::process::Output;

fn helm_in(bin: &Path, home: &Path, args: &[&str]) -> Output {
    common::helm_command(bin, home)
        .args(args)
        .output()
        .expect("helm runs")
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The objects a component's chart must render to: every document of every
/// manifest, `*List` flattened, the release Namespace dropped.
fn expected_objects(c: &dyn Component) -> Vec<Node> {
    let mut out = Vec::new();
    for text in c.render_manifests().expect("renders").values() {
        for doc in rudder::yaml::parse_documents(text).expect("parses") {
            flatten(doc, c.namespace(), &mut out);
        }
    }
    out
}

fn flatten(doc: Node, ns: &str, out: &mut Vec<Node>) {
    let Node::Map(m) = &doc else { return };
    let kind = match m.get("kind") {
        Some(Node::Str(k)) => k.clone(),
        _ => String::new(),
    };
    if kind.ends_with("List") {
        if let Some(Node::Seq(items)) = m.get("items") {
            for i in items.clone() {
                flatten(i, ns, out);
            }
        }
        return;
    }
    if kind == "Namespace" {
        if let Some(Node::Map(md)) = m.get("metadata") {
            if md.get("name") == Some(&Node::Str(ns.to_string())) {
                return;
            }
        }
    }
    out.push(doc);
}

fn canonical(mut v: Vec<Node>) -> Vec<String> {
    let mut s: Vec<String> = v
        .drain(..)
        .map(|n| serde_json::to_string(&n).expect("json"))
        .collect();
    s.sort();
    s
}

#[test]
fn fixture_charts_pass_helm_lint_and_render_back_their_objects() {
    let Some(helm) = common::helm(3) else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let mut checked = 0;
    for comp in fixtures::all().expect("fixtures load") {
        let c = chart::chart_from_component(comp.as_ref()).expect("chart builds");
        let dir = tmp.path().join(&c.metadata.name);
        chart::save_dir(&c, &dir).expect("writes dir");
        let pkg = chart::save_archive(&c, tmp.path()).expect("packages");
        for target in [dir.as_path(), pkg.as_path()] {
            let t = target.to_str().expect("utf-8 path");
            let o = helm_in(&helm, &home, &["lint", "--strict", t]);
            assert!(o.status.success(), "helm lint --strict {t}:\n{}", text(&o));
            let o = helm_in(
                &helm,
                &home,
                &[
                    "template",
                    "rel",
                    t,
                    "--include-crds",
                    "--namespace",
                    comp.namespace(),
                ],
            );
            assert!(o.status.success(), "helm template {t}:\n{}", text(&o));
            let rendered: Vec<Node> =
                rudder::yaml::parse_documents(&String::from_utf8_lossy(&o.stdout))
                    .expect("helm output parses")
                    .into_iter()
                    .filter(|n| !matches!(n, Node::Null))
                    .collect();
            let want = expected_objects(comp.as_ref());
            assert_eq!(
                canonical(rendered),
                canonical(want),
                "{t}: helm template does not give back the component's objects"
            );
            checked += 1;
        }
    }
    eprintln!(
        "{checked} fixture chart targets passed helm lint --strict and rendered back exactly"
    );
    assert_eq!(checked, 6);
}

#[test]
fn literal_template_text_survives_helm() {
    let Some(helm) = common::helm(3) else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut m = std::collections::BTreeMap::new();
    let tricky = [
        "{{ $labels.instance }}",
        "{{{{",
        "{{- x -}}",
        "}}{{",
        "{{`{{`}}",
        "a <nov alue> b",
        "{{/* c */}}",
        "\"{{ \\\"q\\\" }}\"",
    ];
    let mut data = String::new();
    for (i, t) in tricky.iter().enumerate() {
        data.push_str(&format!(
            "  k{i}: {}\n",
            serde_json::to_string(t).expect("json")
        ));
    }
    m.insert(
        "cm.yaml".to_string(),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: t\n  annotations:\n    a: '{{{{ .Values.x }}}}'\n    '{{{{k}}}}': v\ndata:\n{data}  block: |\n    line {{{{ one }}}}\n    {{{{- two }}}}\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nzzz: \"kept {{{{ x }}}}\\n\\n\\n\"\n"
        ),
    );
    let c = chart::chart_from_manifests("lit", "ns", &m).expect("builds");
    let dir = tmp.path().join("lit");
    chart::save_dir(&c, &dir).expect("writes");
    let o = helm_in(
        &helm,
        &tmp.path().join("home"),
        &["template", "rel", dir.to_str().expect("utf-8")],
    );
    assert!(o.status.success(), "{}", text(&o));
    let got: Vec<Node> = rudder::yaml::parse_documents(&String::from_utf8_lossy(&o.stdout))
        .expect("parses")
        .into_iter()
        .filter(|n| !matches!(n, Node::Null))
        .collect();
    let want: Vec<Node> = rudder::yaml::parse_documents(&m["cm.yaml"]).expect("parses");
    assert_eq!(got, want);
}

fn corpus_charts() -> Option<Vec<std::path::PathBuf>> {
    let shared = common::shared_dir()?;
    let mut out: Vec<_> = std::fs::read_dir(shared.join("conformance/charts"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("chart")))
        .filter(|p| p.join("Chart.yaml").is_file())
        .collect();
    out.sort();
    Some(out)
}

/// The `# Source:` lines of `helm template` output: its shape.
fn sources(s: &str) -> Vec<&str> {
    s.lines().filter(|l| l.starts_with("# Source:")).collect()
}

#[test]
fn helm_renders_rudder_packages_like_the_original_directories() {
    let Some(helm) = common::helm(3) else { return };
    let Some(charts) = corpus_charts() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let (mut exact, mut shape) = (0, 0);
    for dir in &charts {
        let c = chart::load(dir).expect("loads");
        let out = tmp
            .path()
            .join(dir.parent().and_then(|p| p.file_name()).expect("id"));
        let pkg = chart::save_archive(&c, &out).expect("packages");
        let render = |target: &Path| {
            helm_in(
                &helm,
                &home,
                &[
                    "template",
                    "rel",
                    target.to_str().expect("utf-8"),
                    "--namespace",
                    "ns1",
                    "--kube-version",
                    "1.31.0",
                    "--include-crds",
                ],
            )
        };
        let a = render(dir);
        let b = render(&pkg);
        assert_eq!(
            a.status.code(),
            b.status.code(),
            "{}: exit status differs",
            dir.display()
        );
        let (sa, sb) = (
            String::from_utf8_lossy(&a.stdout),
            String::from_utf8_lossy(&b.stdout),
        );
        if sa == sb {
            exact += 1;
            continue;
        }
        // Charts with random or time functions differ from run to run; for
        // them, the original must also differ from itself, and the shape
        // (every `# Source:` line, in order) must match.
        let a2 = render(dir);
        assert!(
            String::from_utf8_lossy(&a2.stdout) != sa,
            "{}: helm renders the package differently from the directory",
            dir.display()
        );
        assert_eq!(
            sources(&sa),
            sources(&sb),
            "{}: rendered shape differs",
            dir.display()
        );
        shape += 1;
    }
    eprintln!("{exact} corpus charts rendered identically from rudder's package, {shape} nondeterministic charts matched in shape");
    assert!(exact + shape == charts.len());
}

fn floats(n: Node) -> Node {
    match n {
        Node::Int(i) => Node::Float(i as f64),
        // -0 and 0 are one number to Kubernetes (and sigs.k8s.io/yaml
        // writes -0.0 as 0), so compare them as equal.
        Node::Float(0.0) => Node::Float(0.0),
        Node::Seq(s) => Node::Seq(s.into_iter().map(floats).collect()),
        Node::Map(m) => Node::Map(m.into_iter().map(|(k, v)| (k, floats(v))).collect()),
        other => other,
    }
}

/// Tricky manifests: every object must come back from stock `helm template`
/// (numbers compared as Kubernetes compares them).
#[test]
fn tricky_manifests_render_back_exactly() {
    let Some(helm) = common::helm(3) else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let files: &[(&str, &str)] = &[
        (
            "numbers.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nums\ndata:\n  a: \"1.0\"\nbinaryData: {}\nx-numbers: {a: 1.0, b: 1e3, c: .5, d: 0x10, e: 010, f: 1_000, h: 2.50, i: -0.0, l: yes, m: ~, big: 123456789012}\n",
        ),
        (
            "blocks.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: blocks\n  annotations:\n    '{{ key }}': '{{ value }}'\n    long: \"aaaa aaaa aaaa aaaa aaaa aaaa aaaa aaaa aaaa aaaa aaaa aaaa aaaa aaaa {{ aaaa }} aaaa aaaa aaaa aaaa aaaa aaaa\"\ndata:\n  doc: |\n    ---\n    a: {{ .b }}\n    ...\n    ---\n  tabs: \"a\\tb\\n\\tc\"\n  trailing: \"x  \"\n  unicode: \"é ü 雪 \\u2028\"\n  '---x': y\nzz-last: |+\n  kept {{ x }}\n\n\n",
        ),
        (
            "hooks.yaml",
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    helm.sh/hook: pre-install,pre-upgrade\n    helm.sh/hook-weight: \"-5\"\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: m\n        image: busybox\n        command: [sh, -c, 'echo {{ not a template }}']\n",
        ),
        (
            "lists.yaml",
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: tricky}\n- apiVersion: apiextensions.k8s.io/v1\n  kind: CustomResourceDefinition\n  metadata: {name: things.example.com}\n  spec:\n    group: example.com\n    scope: Namespaced\n    names: {kind: Thing, plural: things}\n    versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, description: '{{ x }}'}}}]\n- apiVersion: example.com/v1\n  kind: Thing\n  metadata: {name: one}\n  spec: &s {size: 3, tags: [a, b]}\n- apiVersion: example.com/v1\n  kind: Thing\n  metadata: {name: two}\n  spec: *s\n---\napiVersion: v1\nkind: ConfigMapList\nitems: []\n...\n---\n# comment only\n",
        ),
    ];
    let manifests: std::collections::BTreeMap<String, String> = files
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let c = chart::chart_from_manifests("tricky", "tricky", &manifests).expect("builds");
    let dir = tmp.path().join("tricky");
    chart::save_dir(&c, &dir).expect("writes");
    let home = tmp.path().join("home");
    let o = helm_in(
        &helm,
        &home,
        &["lint", "--strict", dir.to_str().expect("utf-8")],
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = helm_in(
        &helm,
        &home,
        &[
            "template",
            "rel",
            dir.to_str().expect("utf-8"),
            "--include-crds",
            "-n",
            "tricky",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let got: Vec<Node> = rudder::yaml::parse_documents(&String::from_utf8_lossy(&o.stdout))
        .expect("parses")
        .into_iter()
        .filter(|n| !matches!(n, Node::Null))
        .map(floats)
        .collect();
    let mut want = Vec::new();
    for t in manifests.values() {
        for doc in rudder::yaml::parse_documents(t).expect("parses") {
            flatten(doc, "tricky", &mut want);
        }
    }
    let want: Vec<Node> = want.into_iter().map(floats).collect();
    assert_eq!(got.len(), 6, "objects rendered");
    assert_eq!(canonical(got), canonical(want));
}
