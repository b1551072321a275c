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
    // Helm's LocateChart (v3.17.2 and v4.1.4): a missing absolute path.
    assert_eq!(
        stderr(&o),
        format!(
            "Error: path {:?} not found\n",
            tmp.path().join("missing").display().to_string()
        )
    );
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

/// Helm's schema errors for sibling properties come in Go map order
/// (random from run to run): the `- path: problem` lines of each block
/// sorted, for comparing outputs that differ only there.
fn sorted_schema_lines(text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    let mut out: Vec<String> = Vec::new();
    let mut block: Vec<&str> = Vec::new();
    for line in text.split_inclusive('\n') {
        if line.starts_with("- ") {
            block.push(line);
            continue;
        }
        block.sort_unstable();
        out.extend(block.drain(..).map(str::to_string));
        // `[ERROR] values.yaml: - first problem` starts a block too.
        match line.find(": - ").filter(|_| line.starts_with('[')) {
            Some(i) => {
                out.push(line[..i + 2].to_string());
                block.push(&line[i + 2..]);
            }
            None => out.push(line.to_string()),
        }
    }
    block.sort_unstable();
    out.extend(block.drain(..).map(str::to_string));
    out.concat()
}

/// `rudder lint` against `helm lint` on every chart of the corpus (stdout,
/// stderr and exit code, run from the chart's corpus directory), with the
/// defaults and with the flags CI pipelines pass: `--strict`, a values
/// file that breaks object names and schemas, `--set` replacing a table
/// (a coalesce warning, and template errors), an old `--kube-version`
/// (other deprecation warnings), `--with-subcharts` (library and disabled
/// subcharts linted on their own) and `--skip-schema-validation`. This
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
    let bad = home.path().join("bad-values.yaml");
    write(
        &bad,
        "nameOverride: Bad_Name\nfullnameOverride: Bad_Name\nreplicaCount: many\nage: -3\n",
    );
    let bad = bad.to_str().expect("utf-8");
    let charts = shared.join("conformance/charts");
    let mut dirs: Vec<_> = std::fs::read_dir(&charts)
        .expect("corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("chart/Chart.yaml").is_file())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 30,
        "expected the corpus charts, found {}",
        dirs.len()
    );
    let flag_sets: &[&[&str]] = &[
        &[],
        &["--strict"],
        &["-f", bad],
        &["--strict", "-f", bad],
        &["--set", "image=broken"],
        &["--kube-version", "1.15.0", "--strict"],
        &["--with-subcharts", "--strict"],
        &["--skip-schema-validation", "-f", bad],
    ];
    let mut failures = Vec::new();
    for flags in flag_sets {
        let (mut same, mut reordered, mut differ, mut helm_failed) = (0, 0, Vec::new(), 0);
        for dir in &dirs {
            let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let h = common::helm_command(&helm, home.path())
                .args(["lint", "chart"])
                .args(*flags)
                .current_dir(dir)
                .output()
                .expect("helm");
            let r = Command::new(env!("CARGO_BIN_EXE_rudder"))
                .args(["lint", "chart"])
                .args(*flags)
                .current_dir(dir)
                .output()
                .expect("rudder");
            if !h.status.success() {
                helm_failed += 1;
            }
            if h.status.code() != r.status.code() || h.stderr != r.stderr {
                differ.push(name.to_string());
            } else if h.stdout == r.stdout {
                same += 1;
            } else if sorted_schema_lines(&h.stdout) == sorted_schema_lines(&r.stdout) {
                reordered += 1;
            } else {
                differ.push(name.to_string());
            }
        }
        eprintln!(
            "lint {flags:?}: {same}/{} corpus charts identical to helm lint, {reordered} identical \
             but for Helm's random order of sibling schema errors ({helm_failed} fail in helm); differ: {differ:?}",
            dirs.len()
        );
        if !differ.is_empty() {
            failures.push(format!("{flags:?}: {differ:?}"));
        }
    }
    assert!(failures.is_empty(), "lint differs from helm: {failures:?}");
}

/// The values flags of `rudder lint` (`--set-string`, `--set-json`,
/// `--set-file`, `--set-literal`) and its usage errors, against `helm lint`
/// on a chart with a schema.
#[test]
fn lint_values_flags_and_errors_match_helm() {
    let Some(helm) = common::helm(3) else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("c");
    write(
        &dir.join("Chart.yaml"),
        "apiVersion: v2\nname: c\nversion: 1.0.0\n",
    );
    write(
        &dir.join("values.yaml"),
        "port: 80\nname: web\nimage:\n  tag: x\n",
    );
    write(
        &dir.join("values.schema.json"),
        r#"{"type":"object","required":["name"],"properties":{"port":{"type":"integer"},"name":{"type":"string","pattern":"^[a-z]+$"},"image":{"type":"object"}}}"#,
    );
    write(
        &dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name }}\ndata:\n  port: {{ .Values.port | quote }}\n  tag: {{ .Values.image.tag | quote }}\n",
    );
    write(&tmp.path().join("name.txt"), "Web_1");
    let file = format!("name={}", tmp.path().join("name.txt").display());
    let cases: &[&[&str]] = &[
        &["--set-string", "port=80"],
        &["--set-json", "image=\"flat\""],
        &["--set-json", "port=8080"],
        &["--set-file", &file],
        &["--set-literal", "name=a,b"],
        &["--set", "name=null"],
        &["--set", "name"],
        &["--set-json", "port={"],
        &["-f", "missing.yaml"],
        &["--kube-version", "abc"],
        &["--kube-version", "1.2.3.4", "--set", "name=x"],
        &["--set", "image=flat", "--skip-schema-validation"],
    ];
    for flags in cases {
        let h = common::helm_command(&helm, &tmp.path().join("home"))
            .args(["lint", "c"])
            .args(*flags)
            .current_dir(tmp.path())
            .output()
            .expect("helm");
        let r = Command::new(env!("CARGO_BIN_EXE_rudder"))
            .args(["lint", "c"])
            .args(*flags)
            .current_dir(tmp.path())
            .output()
            .expect("rudder");
        assert_eq!(
            String::from_utf8_lossy(&r.stdout),
            String::from_utf8_lossy(&h.stdout),
            "stdout for {flags:?}"
        );
        assert_eq!(stderr(&r), stderr(&h), "stderr for {flags:?}");
        assert_eq!(r.status.code(), h.status.code(), "exit for {flags:?}");
    }
    eprintln!("{} lint flag cases identical to helm lint", cases.len());
}

/// The files of a `.tgz` chart archive, `(path, text)`, in archive order.
fn archive_files(path: &Path) -> Vec<(String, String)> {
    let f = std::fs::File::open(path).expect("archive");
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(f));
    let mut out = Vec::new();
    for e in ar.entries().expect("entries") {
        let mut e = e.expect("entry");
        let name = e.path().expect("path").display().to_string();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut e, &mut text).expect("read");
        out.push((name, text));
    }
    out
}

/// `rudder package --version/--app-version` against `helm package`: the
/// message (with the path as Helm prints it), the exit code, the archive's
/// name and every file in it (Chart.yaml rewritten with the new fields).
#[test]
fn package_version_flags_match_helm() {
    let Some(helm) = common::helm(3) else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let chart = tmp.path().join("c");
    write(
        &chart.join("Chart.yaml"),
        "apiVersion: v2\nname: c\nversion: 1.0.0\nappVersion: \"1.0\"\ndescription: d\n",
    );
    write(&chart.join("values.yaml"), "a: 1\n");
    write(&chart.join("templates/cm.yaml"), "kind: ConfigMap\n");
    let c = chart.to_str().expect("utf-8");
    let cases: &[&[&str]] = &[
        &[],
        &["--version", "2.0.0-rc.1"],
        &["--app-version", "v9 beta"],
        &["--version", "v3.1", "--app-version", "2025.01"],
        &["--version", "1.0.0+build.5"],
        &["--version", "not-semver"],
        &["--version", "1.0.0.0"],
        &["--version", "", "--app-version", ""],
    ];
    for (i, flags) in cases.iter().enumerate() {
        let mut outs = Vec::new();
        for (who, dest) in [("helm", format!("h{i}")), ("rudder", format!("r{i}"))] {
            let mut cmd = if who == "helm" {
                common::helm_command(&helm, &tmp.path().join("home"))
            } else {
                Command::new(env!("CARGO_BIN_EXE_rudder"))
            };
            let o = cmd
                .args(["package", c, "-d", &format!("./out/../{dest}")])
                .args(*flags)
                .current_dir(tmp.path())
                .output()
                .expect("runs");
            let text = String::from_utf8_lossy(&o.stdout).replace(&dest, "DEST");
            let mut files: Vec<(String, Vec<(String, String)>)> = Vec::new();
            if let Ok(rd) = std::fs::read_dir(tmp.path().join(&dest)) {
                for e in rd.flatten() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    // rudder orders entries by path, Helm Chart.yaml and
                    // values first: the contents are compared, not the order.
                    let mut inside = archive_files(&e.path());
                    inside.sort();
                    files.push((name, inside));
                }
            }
            outs.push((text, stderr(&o), o.status.code(), files));
        }
        assert_eq!(outs[1], outs[0], "rudder vs helm package {flags:?}");
    }
    eprintln!(
        "{} package cases identical to helm package (message, archive name, files)",
        cases.len()
    );
}

/// `rudder package A B ...` against `helm package`: each chart in order,
/// a line per saved archive, and a stop at the first chart that fails.
#[test]
fn package_of_several_charts_matches_helm() {
    let Some(helm) = common::helm(3) else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    for (name, version) in [("a", "0.1.0"), ("b", "1.0.0"), ("bad", "nope")] {
        write(
            &tmp.path().join(format!("src/{name}/Chart.yaml")),
            &format!("apiVersion: v2\nname: {name}\nversion: {version}\n"),
        );
    }
    write(
        &tmp.path().join("src/a/templates/cm.yaml"),
        "kind: ConfigMap\n",
    );
    let cases: &[&[&str]] = &[
        &["a", "b"],
        &["b", "a", "a"],
        &["a", "missing", "b"],
        &["a", "bad", "b"],
        &["a", "b", "--version", "2.0.0"],
        &["a", "b", "--app-version", "9"],
        &["--version", "x.y", "a", "b"],
    ];
    for (i, args) in cases.iter().enumerate() {
        let mut outs = Vec::new();
        for who in ["helm", "rudder"] {
            let dest = tmp.path().join(format!("{who}{i}"));
            let mut cmd = if who == "helm" {
                common::helm_command(&helm, &tmp.path().join("home"))
            } else {
                Command::new(env!("CARGO_BIN_EXE_rudder"))
            };
            let o = cmd
                .arg("package")
                .args(*args)
                .args(["-d", dest.to_str().expect("utf-8")])
                .current_dir(tmp.path().join("src"))
                .output()
                .expect("runs");
            let shown = |b: &[u8]| {
                String::from_utf8_lossy(b).replace(dest.to_str().expect("utf-8"), "DEST")
            };
            let mut files: Vec<String> = std::fs::read_dir(&dest)
                .map(|rd| {
                    rd.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            files.sort();
            outs.push((shown(&o.stdout), shown(&o.stderr), o.status.code(), files));
        }
        assert_eq!(outs[1], outs[0], "rudder vs helm package {args:?}");
    }
    eprintln!(
        "{} package cases of several charts identical to helm package",
        cases.len()
    );
}

/// `rudder show chart|values|readme|crds|all` against `helm show` on every
/// corpus chart, and `show values --jsonpath` with the expressions Helm
/// users write (stdout, stderr, exit code).
#[test]
fn show_matches_helm_on_corpus_charts() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let Some(helm) = common::helm(3) else { return };
    let home = tempfile::tempdir().expect("tempdir");
    let charts = shared.join("conformance/charts");
    let mut dirs: Vec<_> = std::fs::read_dir(&charts)
        .expect("corpus")
        .filter_map(|e| e.ok().map(|e| e.path().join("chart")))
        .filter(|p| p.join("Chart.yaml").is_file())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 30, "corpus charts: {}", dirs.len());
    let run = |args: &[&str]| {
        let h = common::helm_command(&helm, home.path())
            .args(args)
            .output()
            .expect("helm");
        let r = rudder(args);
        (
            (
                String::from_utf8_lossy(&h.stdout).into_owned(),
                stderr(&h),
                h.status.code(),
            ),
            (
                String::from_utf8_lossy(&r.stdout).into_owned(),
                stderr(&r),
                r.status.code(),
            ),
        )
    };
    let mut compared = 0;
    for dir in &dirs {
        let d = dir.to_str().expect("utf-8");
        for what in ["chart", "values", "readme", "crds", "all"] {
            let (h, r) = run(&["show", what, d]);
            assert_eq!(r, h, "show {what} {d}");
            compared += 1;
        }
    }
    let jsonpaths = [
        "{.image}",
        "{.image.repository}",
        "{.image.repository}:{.image.tag}",
        "{.replicaCount}",
        "{.service.port}",
        "{.tolerations}",
        "{.missing.key}",
        // (`..` is left out: Go visits map keys in random order.)
        "{range .extraArgs[*]}{@}{\"\\n\"}{end}",
        "{.resources.limits}",
        "image={.image.registry}/{.image.repository}",
        "{.image",
    ];
    for dir in &dirs {
        let d = dir.to_str().expect("utf-8");
        for jp in jsonpaths {
            let (h, r) = run(&["show", "values", d, "--jsonpath", jp]);
            assert_eq!(r, h, "show values {d} --jsonpath {jp}");
            compared += 1;
        }
    }
    eprintln!("{compared} show cases identical to helm show");
}

/// A chart directory whose symlinks (a file inside the chart, a file and a
/// directory outside it) are followed with Helm's warning, line for line
/// what helm v3 prints on stderr, for a relative, a dotted and an absolute
/// chart path.
#[test]
fn symlinks_in_a_chart_directory_warn_as_helm_does() {
    let Some(helm) = common::helm(3) else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().canonicalize().expect("canonical");
    let c = root.join("work/c");
    write(
        &c.join("Chart.yaml"),
        "apiVersion: v2\nname: c\nversion: 1.0.0\n",
    );
    write(&c.join("inner.txt"), "a: 1\n");
    write(
        &root.join("outside/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
    );
    write(&root.join("outdir/f.txt"), "k: v\n");
    std::fs::create_dir_all(c.join("templates")).expect("mkdir");
    std::os::unix::fs::symlink("inner.txt", c.join("link-inside.txt")).expect("symlink");
    std::os::unix::fs::symlink("../../../outside/cm.yaml", c.join("templates/cm.yaml"))
        .expect("symlink");
    std::os::unix::fs::symlink("../../outdir", c.join("linkdir")).expect("symlink");
    let abs = c.to_str().expect("utf-8").to_string();
    for (cwd, chart) in [
        (root.join("work"), "c"),
        (root.join("work"), "./c/"),
        (root.join("work"), "../work/c"),
        (root.clone(), abs.as_str()),
    ] {
        for args in [vec!["template", "r", chart], vec!["show", "chart", chart]] {
            let h = common::helm_command(&helm, tmp.path())
                .args(&args)
                .current_dir(&cwd)
                .output()
                .expect("helm runs");
            let r = Command::new(env!("CARGO_BIN_EXE_rudder"))
                .args(&args)
                .current_dir(&cwd)
                .output()
                .expect("rudder runs");
            assert!(h.status.success() && r.status.success(), "{}", stderr(&r));
            assert_eq!(stderr(&r), stderr(&h), "{args:?} in {}", cwd.display());
            assert_eq!(stderr(&r).lines().count(), 3, "{}", stderr(&r));
            assert!(
                stderr(&r).contains(&format!(
                    "walk.go:75: found symbolic link in path: {abs}/templates/cm.yaml resolves to {}/outside/cm.yaml. Contents of linked file included and used\n",
                    root.display()
                )),
                "{}",
                stderr(&r)
            );
        }
    }
}

/// `chart from-manifests` refuses to replace an existing archive or a
/// non-empty directory unless `--force`; with it, an archive is replaced
/// whole, and a directory only when it holds a chart.
#[test]
fn from_manifests_replaces_an_output_only_with_force() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let src = tmp.path().join("web.yaml");
    write(&src, DEPLOY);
    let build = |out: &Path, version: &str, force: bool| {
        let mut args = vec![
            "chart",
            "from-manifests",
            "--name",
            "web",
            "--namespace",
            "apps",
            "--version",
            version,
            src.to_str().expect("utf-8"),
            "--output",
            out.to_str().expect("utf-8"),
        ];
        if force {
            args.push("--force");
        }
        rudder(&args)
    };
    let chart_version = |out: &Path| {
        let o = rudder(&["show", "chart", out.to_str().expect("utf-8")]);
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("version: ").map(str::to_string))
            .unwrap_or_default()
    };

    // An archive.
    let pkg = tmp.path().join("out/web.tgz");
    assert!(build(&pkg, "1.0.0", false).status.success());
    let before = std::fs::read(&pkg).expect("read");
    let o = build(&pkg, "2.0.0", false);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(&format!(
            "output {} exists (--force replaces it)",
            pkg.display()
        )),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&pkg).expect("read"), before, "left as it was");
    let o = build(&pkg, "2.0.0", true);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(chart_version(&pkg), "2.0.0");
    // No temp file is left beside it.
    let names: Vec<_> = std::fs::read_dir(tmp.path().join("out"))
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["web.tgz"]);

    // A chart directory: refused without --force, replaced with it (no
    // file of the old chart survives).
    let dir = tmp.path().join("chart");
    assert!(build(&dir, "1.0.0", false).status.success());
    write(&dir.join("templates/stale.yaml"), "kind: ConfigMap\n");
    let o = build(&dir, "2.0.0", false);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("is not empty (--force replaces a chart directory)"),
        "{}",
        stderr(&o)
    );
    assert_eq!(chart_version(&dir), "1.0.0");
    let o = build(&dir, "2.0.0", true);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(chart_version(&dir), "2.0.0");
    assert!(!dir.join("templates/stale.yaml").exists());

    // A directory that holds no chart is never replaced, even with --force.
    let other = tmp.path().join("notes");
    write(&other.join("todo.txt"), "keep me\n");
    let o = build(&other, "1.0.0", true);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("holds no chart"), "{}", stderr(&o));
    assert!(other.join("todo.txt").is_file());
}
