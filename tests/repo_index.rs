//! `rudder repo index` against `helm repo index` (Helm v3.17.2 and v4.1.4):
//! corpus charts packaged by helm into a temporary directory (some in a
//! subdirectory, plus files that are not charts), indexed by both tools;
//! the index files must be identical apart from the `generated` and
//! `created` timestamps. With `--url`, `--json`, `--merge` (an index made
//! by helm, a hand-written one with Helm 2 fields and invalid entries, and
//! a missing one), and Helm's errors for bad indexes to merge.
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Corpus charts to package, and the subdirectory each goes to ("" for the
/// top level).
const CHARTS: &[(&str, &str)] = &[
    ("prom-node-exporter", ""),
    ("prom-adapter", ""),
    ("fluent-bit", ""),
    ("ingress-nginx", ""),
    ("cert-manager", ""),
    ("bitnami-redis", ""),
    ("helm-alpine", ""),
    ("helm-chart-with-lib-dep", ""),
    ("loko-calico", ""),
    ("grafana", "sub"),
    ("grafana-tempo", "sub"),
];

/// Synthetic charts (directory, files).
const SYNTHETIC: &[(&str, &[(&str, &str)])] = &[
    (
        "v1chart",
        &[
            (
                "Chart.yaml",
                r#"apiVersion: v1
name: v1chart
version: 0.1.0-alpha+build.7
appVersion: 1.10
description: "Tabs\there & <html> \u00e9 \u200b zero-width"
home: https://example.com
icon: https://example.com/icon.png
keywords: [a, "b c", "1.0"]
sources: [https://s.example.com]
maintainers:
- name: Ann
  email: ann@example.com
  url: https://ann.example.com
- name: Bob
deprecated: true
kubeVersion: ">=1.20.0-0"
annotations:
  artifacthub.io/changes: |
    - kind: added
      description: x
  "z": "true"
tags: legacy
condition: legacy.enabled
"#,
            ),
            (
                "requirements.yaml",
                "dependencies:\n- name: sub\n  version: 0.1.0\n  repository: file://charts/sub\n  condition: sub.enabled\n  tags: [t1]\n  import-values:\n  - child: a\n    parent: b\n  - data\n  alias: subby\n",
            ),
            ("values.yaml", "a: 1\n"),
            (
                "charts/sub/Chart.yaml",
                "apiVersion: v1\nname: sub\nversion: 0.1.0\n",
            ),
        ],
    ),
    (
        "v2chart",
        &[
            (
                "Chart.yaml",
                "apiVersion: v2\nname: v2chart\ntype: library\nversion: v2.0.0\ndependencies:\n- name: dep\n  version: \"~0.1\"\n  repository: \"@stable\"\n  enabled: true\n",
            ),
            (
                "charts/dep/Chart.yaml",
                "apiVersion: v2\nname: dep\nversion: 0.1.3\n",
            ),
        ],
    ),
];

struct Bed {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    helm: PathBuf,
}

impl Bed {
    fn new(major: u8) -> Option<Bed> {
        let shared = common::shared_dir()?;
        let helm = common::helm(major)?;
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let bed = Bed {
            _tmp: tmp,
            root,
            helm,
        };
        let pkgs = bed.root.join("pkgs");
        std::fs::create_dir_all(pkgs.join("sub/deeper")).unwrap();
        let charts = shared.join("conformance/charts");
        for (chart, sub) in CHARTS {
            let out = bed
                .helm_cmd()
                .arg("package")
                .arg(charts.join(chart).join("chart"))
                .arg("-d")
                .arg(pkgs.join(sub))
                .output()
                .unwrap();
            assert!(out.status.success(), "helm package {chart}: {out:?}");
        }
        // A second version (a pre-release) of one chart, so that an entry
        // holds several versions to sort.
        let out = bed
            .helm_cmd()
            .args(["package", "--version", "4.56.2-rc.1", "--app-version", "v9"])
            .arg(charts.join("prom-node-exporter/chart"))
            .arg("-d")
            .arg(pkgs.join("sub"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        // Two charts written here with every Chart.yaml field: an apiVersion
        // v1 chart whose dependencies come from requirements.yaml, text that
        // Helm sanitises, a library chart with a "v" version.
        for (dir, files) in SYNTHETIC {
            let d = bed.root.join("src").join(dir);
            for (name, text) in *files {
                let f = d.join(name);
                std::fs::create_dir_all(f.parent().unwrap()).unwrap();
                std::fs::write(f, text).unwrap();
            }
            let out = bed
                .helm_cmd()
                .arg("package")
                .arg(&d)
                .arg("-d")
                .arg(&pkgs)
                .output()
                .unwrap();
            assert!(out.status.success(), "helm package {dir}: {out:?}");
        }
        // Not charts: skipped by both. Too deep: not looked at.
        std::fs::write(pkgs.join("junk.tgz"), b"not a gzip stream").unwrap();
        std::fs::write(pkgs.join("README.md"), b"# charts\n").unwrap();
        std::fs::copy(
            std::fs::read_dir(pkgs.join("sub"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.extension().is_some_and(|x| x == "tgz"))
                .unwrap(),
            pkgs.join("sub/deeper/deep-1.0.0.tgz"),
        )
        .unwrap();
        Some(bed)
    }

    fn env(&self, cmd: &mut Command) {
        let home = self.root.join("home");
        cmd.env("HOME", &home)
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_DATA_HOME", home.join("data"))
            .env("TZ", "UTC")
            .current_dir(&self.root);
    }

    fn helm_cmd(&self) -> Command {
        let mut c = Command::new(&self.helm);
        self.env(&mut c);
        c
    }

    fn rudder_cmd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rudder"));
        self.env(&mut c);
        c
    }

    /// A fresh copy of the packaged charts named `name`.
    fn copy(&self, name: &str) -> PathBuf {
        let dst = self.root.join(name);
        copy_dir(&self.root.join("pkgs"), &dst);
        dst
    }

    /// Runs `repo index DIR args` with helm on one copy and rudder on
    /// another; returns both outputs and index texts.
    fn both(&self, tag: &str, args: &[&str]) -> [(Output, String); 2] {
        let run = |mut cmd: Command, dir: &Path| {
            let out = cmd
                .args(["repo", "index"])
                .arg(dir)
                .args(args)
                .output()
                .unwrap();
            let text = std::fs::read_to_string(dir.join("index.yaml")).unwrap_or_default();
            (out, text)
        };
        let h = self.copy(&format!("{tag}-helm"));
        let r = self.copy(&format!("{tag}-rudder"));
        [run(self.helm_cmd(), &h), run(self.rudder_cmd(), &r)]
    }
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), to).unwrap();
        }
    }
}

/// Go's RFC 3339 with nanoseconds (`created`, `generated`), quoted.
fn is_go_time(s: &str) -> bool {
    let s = s.trim().trim_end_matches(',').trim_matches('"');
    let ok_len = s.len() >= 20;
    ok_len
        && s.as_bytes()[4] == b'-'
        && s.as_bytes()[10] == b'T'
        && (s.ends_with('Z') || s[s.len() - 6..].starts_with(['+', '-']))
}

/// The text with every `created`/`generated` value replaced by `T`; each
/// replaced value must be a Go time.
fn normalize(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        let key = ["created:", "generated:", "\"created\":", "\"generated\":"]
            .into_iter()
            .find(|k| t.starts_with(k));
        match key {
            Some(k) => {
                let value = &t[k.len()..];
                assert!(is_go_time(value), "not a Go time: {line}");
                let indent = &line[..line.len() - t.len()];
                let comma = if value.trim_end().ends_with(',') {
                    ","
                } else {
                    ""
                };
                out.push_str(&format!("{indent}{k} T{comma}\n"));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    if !text.ends_with('\n') {
        out.pop();
    }
    out
}

/// stderr with Helm's log decoration taken off its warnings: Helm 3 logs
/// them with their Go source position (`index.go:370: `), Helm 4 with slog
/// (`level=WARN msg="..."`); rudder prints the message alone.
fn stderr(o: &Output) -> String {
    let s = String::from_utf8_lossy(&o.stderr);
    s.lines()
        .map(|l| {
            if let Some(m) = l
                .strip_prefix("level=WARN msg=\"")
                .and_then(|m| m.strip_suffix('"'))
            {
                return m.replace("\\\"", "\"");
            }
            match l.split_once(": ") {
                Some((pos, rest)) if pos.starts_with("index.go:") => rest.to_string(),
                _ => l.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn assert_same(tag: &str, [(ho, ht), (ro, rt)]: &[(Output, String); 2]) {
    assert!(ho.status.success(), "{tag}: helm failed: {ho:?}");
    assert!(ro.status.success(), "{tag}: rudder failed: {ro:?}");
    assert!(!rt.is_empty(), "{tag}: rudder wrote nothing");
    let (h, r) = (normalize(ht), normalize(rt));
    if h != r {
        let d = h
            .lines()
            .zip(r.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .map(|(i, (a, b))| format!("line {}: helm {a:?} rudder {b:?}", i + 1))
            .unwrap_or_else(|| format!("lengths {} vs {}", h.len(), r.len()));
        panic!("{tag}: index differs from helm's: {d}\n--- rudder:\n{rt}");
    }
    assert_eq!(stderr(ho), stderr(ro), "{tag}: stderr");
}

fn indexes_like_helm(major: u8) {
    let Some(bed) = Bed::new(major) else { return };
    for (tag, args) in [
        ("plain", &[][..]),
        ("url", &["--url", "https://charts.example.com/stable/"][..]),
        ("url-host", &["--url", "http://127.0.0.1:8879"][..]),
        ("url-query", &["--url", "https://x.io/a b?token=1#f"][..]),
        ("json", &["--json"][..]),
        ("json-url", &["--json", "--url", "oci://not/really"][..]),
    ] {
        let res = bed.both(tag, args);
        assert_same(&format!("helm{major} {tag}"), &res);
        let text = &res[1].1;
        // Every chart packaged is there: the corpus ones, the pre-release
        // and the synthetic ones.
        let n = text.matches("digest").count();
        assert_eq!(n, CHARTS.len() + 1 + SYNTHETIC.len(), "{tag}: {n} digests");
        assert!(text.contains("subby") && text.contains("v2chart-v2.0.0.tgz"));
        assert!(!text.contains("deep-1.0.0") && !text.contains("junk"));
    }
}

#[test]
fn repo_index_matches_helm3() {
    indexes_like_helm(3);
}

#[test]
fn repo_index_matches_helm4() {
    indexes_like_helm(4);
}

/// An index to merge, written by hand: Helm 2 fields, a time with an
/// offset, `removed`, entries without `urls` or with an empty list, an
/// entry whose version is not SemVer (skipped with a warning), serverInfo
/// and annotations (not carried over), a JSON-unsafe
/// description, and a version that the directory also has (the
/// directory's entry wins).
const HAND_INDEX: &str = r#"apiVersion: v1
serverInfo:
  contextPath: /charts
annotations:
  team: x
entries:
  old-chart:
  - name: old-chart
    version: 0.1.0
    description: "old <b>&</b> chart"
    created: 2016-10-06T16:23:20.499814565-06:00
    checksum: abc
    engine: gotpl
    tillerVersion: ">=2.0.0"
    url: https://old.example.com/old-chart-0.1.0.tgz
    removed: true
  - name: old-chart
    version: 0.2.0
    urls: []
    maintainers:
    - name: someone
      email: a@b.c
    dependencies:
    - name: dep
      version: 1.x
      repository: "@stable"
  - name: old-chart
    version: not-semver
    urls: [x]
  prometheus-node-exporter:
  - name: prometheus-node-exporter
    version: 4.56.1
    urls: [https://old.example.com/pne-4.56.1.tgz]
    created: "2020-01-01T00:00:00Z"
  - name: prometheus-node-exporter
    version: 1.0.0
    apiVersion: v2
    urls: [https://old.example.com/pne-1.0.0.tgz]
"#;

#[test]
fn repo_index_merge_matches_helm() {
    for major in [3, 4] {
        let Some(bed) = Bed::new(major) else { return };
        // An index helm made of part of the charts, at another URL.
        let part = bed.root.join("part");
        std::fs::create_dir_all(&part).unwrap();
        for e in std::fs::read_dir(bed.root.join("pkgs")).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with("ingress-nginx") || name.starts_with("alpine") {
                std::fs::copy(&p, part.join(&name)).unwrap();
            }
        }
        let o = bed
            .helm_cmd()
            .args(["repo", "index"])
            .arg(&part)
            .args(["--url", "https://old.example.com"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        let helm_made = bed.root.join("helm-made.yaml");
        std::fs::copy(part.join("index.yaml"), &helm_made).unwrap();
        std::fs::write(bed.root.join("hand.yaml"), HAND_INDEX).unwrap();
        for (tag, file, extra) in [
            ("helm-made", "helm-made.yaml", &[][..]),
            ("hand", "hand.yaml", &[][..]),
            ("hand-json", "hand.yaml", &["--json"][..]),
        ] {
            let mut args = vec!["--merge", file, "--url", "https://new.example.com/c"];
            args.extend_from_slice(extra);
            let res = bed.both(tag, &args);
            assert_same(&format!("helm{major} merge {tag}"), &res);
            let text = &res[1].1;
            if tag == "hand" {
                assert!(text.contains("tillerVersion: '>=2.0.0'"), "{text}");
                assert!(text.contains("https://old.example.com/pne-1.0.0.tgz"));
                assert!(!text.contains("pne-4.56.1"), "the local entry wins");
                assert!(stderr(&res[1].0).contains("\"not-semver\""));
            }
        }
        // A missing index to merge into is created (and merged, empty).
        let mut made = Vec::new();
        for (who, mut cmd) in [("helm", bed.helm_cmd()), ("rudder", bed.rudder_cmd())] {
            let dir = bed.copy(&format!("missing-{who}"));
            let file = bed.root.join(format!("made-{who}.yaml"));
            let o = cmd
                .args(["repo", "index"])
                .arg(&dir)
                .arg("--merge")
                .arg(&file)
                .output()
                .unwrap();
            assert!(o.status.success(), "{who}: {o:?}");
            made.push((
                normalize(&std::fs::read_to_string(&file).unwrap()),
                normalize(&std::fs::read_to_string(dir.join("index.yaml")).unwrap()),
            ));
        }
        assert_eq!(made[0], made[1], "helm{major}: merge into a missing file");

        // A null entry: Helm warns, keeps it, and then dies of a nil
        // pointer in Merge; rudder warns and skips it.
        let with_null = format!("{HAND_INDEX}  empty:\n  - null\n");
        std::fs::write(bed.root.join("null.yaml"), with_null).unwrap();
        let dir = bed.copy("null-rudder");
        let ro = bed
            .rudder_cmd()
            .args(["repo", "index"])
            .arg(&dir)
            .args(["--merge", "null.yaml"])
            .output()
            .unwrap();
        assert!(ro.status.success(), "{ro:?}");
        assert!(stderr(&ro).contains(
            "skipping loading invalid entry for chart \"empty\" from null.yaml: empty entry"
        ));
        let text = std::fs::read_to_string(dir.join("index.yaml")).unwrap();
        assert!(!text.contains("empty"), "{text}");
    }
}

#[test]
fn repo_index_errors_match_helm() {
    let Some(bed) = Bed::new(3) else { return };
    let mut bomb =
        String::from("apiVersion: v1\nserverInfo:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let p = format!("*a{}", i - 1);
        bomb.push_str(&format!("  a{i}: &a{i} [{}]\n", vec![p; 10].join(", ")));
    }
    let cases: &[(&str, String)] = &[
        ("empty", String::new()),
        ("no-api", "entries: {}\n".into()),
        ("unknown", "apiVersion: v1\nfoo: 1\n".into()),
        (
            "dup",
            "apiVersion: v1\nentries:\n  a:\n  - name: a\n    version: 1.0.0\n    version: 2.0.0\n"
                .into(),
        ),
        (
            "number",
            "apiVersion: v1\nentries:\n  a:\n  - name: a\n    version: 1.0\n".into(),
        ),
        (
            "time",
            "apiVersion: v1\nentries:\n  a:\n  - name: a\n    version: 1.0.0\n    created: soon\n"
                .into(),
        ),
        ("json-type", r#"{"apiVersion": 1}"#.into()),
        ("not-a-map", "- a\n".into()),
        ("bomb", bomb),
        ("syntax", "apiVersion: v1\nentries: [\n".into()),
    ];
    for (tag, text) in cases {
        let file = format!("{tag}.yaml");
        std::fs::write(bed.root.join(&file), text).unwrap();
        let start = std::time::Instant::now();
        let [(ho, _), (ro, rt)] = bed.both(tag, &["--merge", &file]);
        assert!(start.elapsed().as_secs() < 30, "{tag}: too slow");
        assert_eq!(ho.status.code(), Some(1), "{tag}: helm {ho:?}");
        assert_eq!(ro.status.code(), Some(1), "{tag}: rudder {ro:?}");
        assert_eq!(stderr(&ho), stderr(&ro), "{tag}");
        assert!(rt.is_empty(), "{tag}: rudder wrote an index");
    }
    // An index to merge that is a directory: Go's read error.
    std::fs::create_dir_all(bed.root.join("adir")).unwrap();
    let [(ho, _), (ro, _)] = bed.both("adir", &["--merge", "adir"]);
    assert_eq!((ho.status.code(), ro.status.code()), (Some(1), Some(1)));
    assert_eq!(stderr(&ho), stderr(&ro));
    assert_eq!(
        stderr(&ro),
        "Error: merge failed: read adir: is a directory"
    );
    // Usage errors.
    for args in [&["repo", "index"][..], &["repo", "index", "a", "b"][..]] {
        let ho = bed.helm_cmd().args(args).output().unwrap();
        let ro = bed.rudder_cmd().args(args).output().unwrap();
        assert_eq!(ho.status.code(), ro.status.code(), "{args:?}");
        assert_eq!(stderr(&ho), stderr(&ro), "{args:?}");
    }
}
