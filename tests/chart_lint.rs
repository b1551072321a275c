//! `chart::lint::lint_chart`: linting a chart in memory runs every rule of
//! `helm lint`, the rendered ones included, and on a loaded chart finds
//! exactly what linting its directory finds.
mod common;

use rudder::chart::lint::{lint, LintOptions, LintResult};
use rudder::chart::{Chart, ChartFile};
use rudder::render::lint::Linter;
use std::path::Path;

fn texts(r: &LintResult) -> Vec<String> {
    r.messages.iter().map(|m| m.to_string()).collect()
}

fn in_memory(chart: &Chart) -> Vec<String> {
    texts(&Linter::default().lint_chart(chart, "default"))
}

fn on_disk(dir: &Path) -> Vec<String> {
    let renderer = Linter::default();
    let opts = LintOptions {
        namespace: "default".into(),
        renderer: &renderer,
    };
    texts(&lint(dir, &opts))
}

fn write(p: &Path, text: &str) {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    std::fs::write(p, text).expect("write");
}

/// Every corpus chart, loaded, lints as its directory does (the
/// dependency rule names the chart instead of the directory).
#[test]
fn loaded_corpus_charts_lint_as_their_directories() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let mut dirs: Vec<_> = std::fs::read_dir(shared.join("conformance/charts"))
        .expect("corpus")
        .filter_map(|e| e.ok().map(|e| e.path().join("chart")))
        .filter(|p| p.join("Chart.yaml").is_file())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 30, "found {} corpus charts", dirs.len());
    let (mut findings, mut rendered_rule_findings) = (0, 0);
    for dir in &dirs {
        let chart = rudder::chart::load_dir(dir).expect("corpus chart loads");
        let abs = std::path::absolute(dir).expect("absolute");
        let want: Vec<String> = on_disk(dir)
            .into_iter()
            .map(|m| m.replace(&abs.display().to_string(), &chart.metadata.name))
            .collect();
        let got = in_memory(&chart);
        assert_eq!(got, want, "{}", dir.display());
        findings += got.len();
        rendered_rule_findings += got
            .iter()
            .filter(|m| m.contains("] templates/") && !m.contains("templates/: "))
            .count();
    }
    eprintln!(
        "{} corpus charts: {findings} findings in memory as on disk, {rendered_rule_findings} from template rules",
        dirs.len()
    );
}

/// What is changed in code is what gets linted, and the rendered rules run
/// on a chart that never was on disk.
#[test]
fn changes_made_in_code_are_linted() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("c");
    write(
        &dir.join("Chart.yaml"),
        "apiVersion: v2\nname: c\nversion: 0.1.0\nicon: https://example.com/i.png\n",
    );
    write(&dir.join("values.yaml"), "replicas: 1\n");
    write(
        &dir.join("values.schema.json"),
        r#"{"type":"object","properties":{"replicas":{"type":"integer"}}}"#,
    );
    write(
        &dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  n: {{ .Values.replicas | quote }}\n",
    );
    let chart = rudder::chart::load_dir(&dir).expect("load");
    assert_eq!(in_memory(&chart), Vec::<String>::new());

    let mut c = chart.clone();
    c.metadata.version = "one".into();
    assert_eq!(
        in_memory(&c),
        ["[ERROR] Chart.yaml: version 'one' is not a valid SemVer"]
    );

    let mut c = chart.clone();
    c.values = Some(serde_json::from_str(r#"{"replicas":"many"}"#).expect("json"));
    // Helm's values rule and its template rule both check the schema.
    assert_eq!(
        in_memory(&c),
        [
            "[ERROR] values.yaml: - replicas: Invalid type. Expected: integer, given: string\n",
            "[ERROR] templates/: values don't meet the specifications of the schema(s) in the following chart(s):\nc:\n- replicas: Invalid type. Expected: integer, given: string\n",
        ]
    );

    let mut c = chart.clone();
    c.templates.push(ChartFile {
        name: "templates/bad.yaml".into(),
        data: b"apiVersion: v1\nkind: Secret\nmetadata:\n  name: Not_Valid\n"
            .to_vec()
            .into(),
    });
    c.templates.push(ChartFile {
        name: "templates/broken.yaml".into(),
        data: b"a: [x\n".to_vec().into(),
    });
    let found = in_memory(&c);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].starts_with(
            "[WARNING] templates/bad.yaml: object name does not conform to Kubernetes naming requirements: \"Not_Valid\""
        ),
        "{found:?}"
    );
    assert!(
        found[1].starts_with("[ERROR] templates/broken.yaml: unable to parse YAML"),
        "{found:?}"
    );

    let mut c = chart.clone();
    c.templates[0].data = b"{{ .Values.nope.deeper }}".to_vec().into();
    let found = in_memory(&c);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("[ERROR] templates/: template: c/templates/cm.yaml:1:"),
        "{found:?}"
    );
}

/// The raw Chart.yaml of a loaded chart still tells the field types, as
/// on disk; once the metadata changes in code, the metadata is what
/// counts.
#[test]
fn raw_field_types_count_while_the_metadata_is_unchanged() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("f");
    write(
        &dir.join("Chart.yaml"),
        "apiVersion: v2\nname: f\nversion: 0.1.0\nappVersion: 1.10\n",
    );
    let chart = rudder::chart::load_dir(&dir).expect("load");
    let want = on_disk(&dir);
    assert!(
        want.iter().any(|m| m
            == "[ERROR] Chart.yaml: appVersion should be of type string but it's of type float64"),
        "{want:?}"
    );
    assert_eq!(in_memory(&chart), want);
    let mut c = chart.clone();
    c.metadata.app_version = "1.10".into();
    assert!(!in_memory(&c).iter().any(|m| m.contains("appVersion")));
}
