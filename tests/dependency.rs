//! `rudder dependency update|build|list` against real Helm (v3.17.2 and
//! v4.1.4) on the same charts: corpus charts (copied from
//! `../shared/conformance/charts` into a temp dir) as `file://`
//! dependencies, a `charts/` dependency without a repository, an
//! apiVersion v1 chart with requirements.yaml, and the error cases.
//!
//! Each scenario is copied three times and run by helm 3, helm 4 and
//! rudder; then compared:
//! - exit code, stdout and stderr, byte for byte;
//! - `Chart.lock` / `requirements.lock`, byte for byte apart from the
//!   `generated` line;
//! - the chart directory's file tree;
//! - each `charts/*.tgz`: the decompressed tar stream. Against Helm 4 byte
//!   for byte (rudder takes entry times as Helm 4 does: the files' own);
//!   against Helm 3 with the header time and checksum fields masked (Helm
//!   3 stamps every entry with the current time). A chart with more than
//!   one subchart of its own is compared entry by entry in sorted order,
//!   since Helm writes subcharts in Go map order (random). Where the tar
//!   stream is Helm 4's byte for byte, so is the `.tgz` (rudder compresses
//!   with its port of Go's `compress/flate`, as Helm's `gzip.NewWriter`
//!   does), `file://` dependencies that rudder packages itself included.
#[path = "support/chart_server.rs"]
mod chart_server;
mod common;

use chart_server::{ChartServer, ServerOptions};

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Which tool runs a scenario.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tool {
    Helm3,
    Helm4,
    Rudder,
}

struct Tools {
    helm3: PathBuf,
    helm4: PathBuf,
}

fn tools() -> Option<Tools> {
    Some(Tools {
        helm3: common::helm(3)?,
        helm4: common::helm(4)?,
    })
}

/// What one run left behind.
#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// Every path under the chart directory (dirs end with `/`).
    tree: Vec<String>,
    /// Lock files without their `generated` line.
    locks: BTreeMap<String, String>,
    /// Raw lock files.
    raw_locks: BTreeMap<String, String>,
    /// `charts/*.tgz` → decompressed tar stream.
    archives: BTreeMap<String, Vec<u8>>,
    /// `charts/*.tgz` → the archive's bytes.
    raw_archives: BTreeMap<String, Vec<u8>>,
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let t = e.file_type().expect("file type");
        let dest = to.join(e.file_name());
        if t.is_dir() {
            copy_dir(&e.path(), &dest);
        } else if t.is_file() {
            std::fs::copy(e.path(), &dest).expect("copy");
            // Keep the file's time: Helm 4 and rudder put it in archives.
            let m = std::fs::metadata(e.path()).expect("stat");
            let f = std::fs::File::options()
                .write(true)
                .open(&dest)
                .expect("open");
            f.set_modified(m.modified().expect("mtime"))
                .expect("set mtime");
        }
    }
}

fn tree(dir: &Path, base: &Path, out: &mut Vec<String>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let rel = p
            .strip_prefix(base)
            .expect("under base")
            .to_string_lossy()
            .into_owned();
        if p.is_dir() {
            out.push(format!("{rel}/"));
            tree(&p, base, out);
        } else {
            out.push(rel);
        }
    }
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match flate2::read::GzDecoder::new(bytes).read_to_end(&mut out) {
        Ok(_) => out,
        Err(_) => bytes.to_vec(),
    }
}

/// Runs `args` with `tool` in a fresh copy of `scenario`, from inside it,
/// with Helm's homes in the copy; collects what `chart` (relative to the
/// scenario) looks like afterwards.
fn run(tools: &Tools, tool: Tool, scenario: &Path, work: &Path, chart: &str, args: &[&str]) -> Run {
    let dir = work.join(format!("{tool:?}"));
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(scenario, &dir);
    let home = work.join(format!("{tool:?}-home"));
    let mut cmd = match tool {
        Tool::Helm3 => common::helm_command(&tools.helm3, &home),
        Tool::Helm4 => common::helm_command(&tools.helm4, &home),
        Tool::Rudder => {
            let mut c = Command::new(env!("CARGO_BIN_EXE_rudder"));
            c.env("HELM_CONFIG_HOME", home.join("config"))
                .env("HELM_CACHE_HOME", home.join("cache"))
                .env("HELM_DATA_HOME", home.join("data"))
                .env("TZ", "UTC");
            c
        }
    };
    let out = cmd
        .env("HOME", &home)
        .env_remove("HELM_REPOSITORY_CONFIG")
        .env_remove("HELM_REPOSITORY_CACHE")
        .env_remove("HELM_DEBUG")
        .current_dir(&dir)
        .args(args)
        .output()
        .expect("runs");
    let cdir = dir.join(chart);
    let mut t = Vec::new();
    tree(&cdir, &cdir, &mut t);
    t.sort();
    let mut locks = BTreeMap::new();
    let mut raw_locks = BTreeMap::new();
    for name in ["Chart.lock", "requirements.lock"] {
        if let Ok(text) = std::fs::read_to_string(cdir.join(name)) {
            let kept: String = text
                .lines()
                .filter(|l| !l.starts_with("generated:"))
                .map(|l| format!("{l}\n"))
                .collect();
            locks.insert(name.to_string(), kept);
            raw_locks.insert(name.to_string(), text);
        }
    }
    let mut archives = BTreeMap::new();
    let mut raw_archives = BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir(cdir.join("charts")) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.ends_with(".tgz") {
                let raw = std::fs::read(e.path()).expect("read");
                archives.insert(n.clone(), gunzip(&raw));
                raw_archives.insert(n, raw);
            }
        }
    }
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        tree: t,
        locks,
        raw_locks,
        archives,
        raw_archives,
    }
}

/// Tar entries: (header, data) with the time and checksum fields masked
/// when `mask`.
fn entries(tar: &[u8], mask: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 512 <= tar.len() && tar[i..i + 512].iter().any(|&b| b != 0) {
        let mut h = tar[i..i + 512].to_vec();
        let size_field = String::from_utf8_lossy(&h[124..136]).into_owned();
        let size = usize::from_str_radix(size_field.trim_matches(['\0', ' ']), 8).unwrap_or(0);
        if mask {
            h[136..156].fill(b'M');
        }
        let data = tar[i + 512..(i + 512 + size).min(tar.len())].to_vec();
        out.push((h, data));
        i += 512 + size.div_ceil(512) * 512;
    }
    out
}

/// Whether a chart archive holds a chart with two or more subcharts of its
/// own (Helm writes those in random order).
fn random_order(tar: &[u8]) -> bool {
    let mut subs = std::collections::BTreeSet::new();
    for (h, _) in entries(tar, false) {
        let name = String::from_utf8_lossy(&h[..100])
            .trim_end_matches('\0')
            .to_string();
        let parts: Vec<&str> = name.split('/').collect();
        for w in parts.windows(3) {
            if w[1] == "charts" {
                subs.insert(format!("{}/{}", w[0], w[2]));
            }
        }
    }
    let mut per_parent: BTreeMap<String, usize> = BTreeMap::new();
    for s in subs {
        let parent = s.split('/').next().unwrap_or("").to_string();
        *per_parent.entry(parent).or_default() += 1;
    }
    per_parent.values().any(|&n| n > 1)
}

/// Compares the tar streams (`helm`, `ours`) of one archive; when `exact`
/// and they are identical, the archive bytes (`raw`: Helm's, rudder's)
/// must be identical too.
fn compare_archive(
    name: &str,
    helm: &[u8],
    ours: &[u8],
    raw: (&[u8], &[u8]),
    exact: bool,
    who: &str,
) -> Result<(), String> {
    if exact && helm == ours {
        if raw.0 != raw.1 {
            return Err(format!(
                "{name}: same tar stream as {who}, but the .tgz differs ({who} {} bytes, rudder {})",
                raw.0.len(),
                raw.1.len()
            ));
        }
        return Ok(());
    }
    let mut a = entries(helm, !exact);
    let mut b = entries(ours, !exact);
    let tail_ok = helm.len() == ours.len();
    if random_order(helm) {
        a.sort();
        b.sort();
    }
    if a == b && tail_ok {
        return Ok(());
    }
    let names = |v: &[(Vec<u8>, Vec<u8>)]| -> Vec<String> {
        v.iter()
            .map(|(h, _)| {
                String::from_utf8_lossy(&h[..100])
                    .trim_end_matches('\0')
                    .to_string()
            })
            .collect()
    };
    Err(format!(
        "{name}: tar stream differs from {who} (exact: {exact})\n{who}: {:?}\nrudder: {:?}",
        names(&a),
        names(&b)
    ))
}

/// Compares rudder's run with a Helm run; returns the differences.
fn compare(helm: &Run, ours: &Run, who: &str, exact_tar: bool) -> Vec<String> {
    let mut d = Vec::new();
    if helm.code != ours.code {
        d.push(format!(
            "exit code: {who} {:?}, rudder {:?}",
            helm.code, ours.code
        ));
    }
    if helm.stdout != ours.stdout {
        d.push(format!(
            "stdout:\n--- {who}\n{}--- rudder\n{}",
            helm.stdout, ours.stdout
        ));
    }
    if helm.stderr != ours.stderr {
        d.push(format!(
            "stderr:\n--- {who}\n{}--- rudder\n{}",
            helm.stderr, ours.stderr
        ));
    }
    if helm.tree != ours.tree {
        d.push(format!(
            "tree:\n{who}: {:?}\nrudder: {:?}",
            helm.tree, ours.tree
        ));
    }
    if helm.locks != ours.locks {
        d.push(format!(
            "lock files:\n--- {who}\n{:?}\n--- rudder\n{:?}",
            helm.raw_locks, ours.raw_locks
        ));
    }
    for (name, h) in &helm.archives {
        match ours.archives.get(name) {
            None => d.push(format!("{name}: missing")),
            Some(o) => {
                let raw = (
                    helm.raw_archives[name].as_slice(),
                    ours.raw_archives[name].as_slice(),
                );
                if let Err(e) = compare_archive(name, h, o, raw, exact_tar, who) {
                    d.push(e);
                }
            }
        }
    }
    d
}

/// Runs the scenario with all three tools and asserts rudder matches both.
/// Returns rudder's run.
fn check(tools: &Tools, label: &str, scenario: &Path, chart: &str, args: &[&str]) -> Run {
    let work = tempfile::tempdir().expect("tempdir");
    check_in(tools, label, scenario, work.path(), chart, args)
}

/// [`check`] in `work`, where each tool's Helm home (`<work>/<Tool>-home`)
/// may already hold repositories.
fn check_in(
    tools: &Tools,
    label: &str,
    scenario: &Path,
    work: &Path,
    chart: &str,
    args: &[&str],
) -> Run {
    let h3 = run(tools, Tool::Helm3, scenario, work, chart, args);
    let h4 = run(tools, Tool::Helm4, scenario, work, chart, args);
    let r = run(tools, Tool::Rudder, scenario, work, chart, args);
    let mut diffs = compare(&h3, &r, "helm3", false);
    diffs.extend(compare(&h4, &r, "helm4", true));
    assert!(
        diffs.is_empty(),
        "{label}: `{}` differs from helm:\n{}",
        args.join(" "),
        diffs.join("\n")
    );
    let identical = r
        .raw_archives
        .iter()
        .filter(|(n, b)| h4.raw_archives.get(*n) == Some(*b))
        .count();
    eprintln!(
        "{label}: `{}`: same as helm3 and helm4 (exit {:?}, {} archive(s), {identical} of them byte-identical to helm4's, lock files {:?})",
        args.join(" "),
        r.code,
        r.archives.len(),
        r.locks.keys().collect::<Vec<_>>()
    );
    r
}

fn write(p: &Path, text: &str) {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    std::fs::write(p, text).expect("write");
}

/// The corpus scenario: a parent chart with five dependencies, four of
/// them corpus charts as `file://` (one with a vendored subchart and a
/// Chart.lock, one v1 chart with a `.tgz` subchart, one with two
/// subcharts) and one already in `charts/` without a repository; plus an
/// outdated archive in `charts/` that update must delete.
fn corpus_scenario(shared: &Path, root: &Path) {
    let corpus = shared.join("conformance/charts");
    for (id, to) in [
        ("prom-pushgateway", "pg"),
        ("bitnami-nginx", "nginx"),
        ("helm-mariner", "mariner"),
        ("helm-subpop", "subpop"),
    ] {
        copy_dir(
            &corpus.join(id).join("chart"),
            &root.join("corpus").join(to),
        );
    }
    write(
        &root.join("parent/charts/local/Chart.yaml"),
        "apiVersion: v2\nname: local\nversion: 1.2.0\n",
    );
    write(
        &root.join("parent/Chart.yaml"),
        r#"apiVersion: v2
name: parent
version: 0.1.0
dependencies:
- name: prometheus-pushgateway
  version: "~3.8"
  repository: file://../corpus/pg
  condition: pg.enabled
  import-values:
  - child: a
    parent: b
  - data
- name: nginx
  version: ">=22.0.0"
  repository: "file://../corpus/nginx"
  alias: web
  tags: [front, "web&more"]
- name: mariner
  version: "4.x"
  repository: file://../corpus/mariner
- name: parentchart
  version: 0.1.0
  repository: file://../corpus/subpop
- name: local
  version: ^1.0.0
  repository: ""
"#,
    );
    // An outdated archive of a dependency: update deletes it.
    let old = rudder::chart::Chart {
        metadata: rudder::chart::Metadata {
            api_version: "v2".into(),
            name: "prometheus-pushgateway".into(),
            version: "3.7.0".into(),
            ..Default::default()
        },
        ..Default::default()
    };
    rudder::chart::save_archive(&old, root.join("parent/charts")).expect("old archive");
}

#[test]
fn update_build_and_list_match_helm_on_corpus_charts() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let Some(tools) = tools() else { return };
    let sc = tempfile::tempdir().expect("tempdir");
    corpus_scenario(&shared, sc.path());
    let r = check(
        &tools,
        "corpus",
        sc.path(),
        "parent",
        &["dependency", "update", "parent"],
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(
        r.archives.keys().collect::<Vec<_>>(),
        [
            "mariner-4.3.2.tgz",
            "nginx-22.1.1.tgz",
            "parentchart-0.1.0.tgz",
            "prometheus-pushgateway-3.8.0.tgz"
        ]
    );
    // condition/tags/alias/import-values are Chart.yaml's business: the lock
    // only pins, and Chart.yaml is untouched.
    let text = std::fs::read_to_string(sc.path().join("parent/Chart.yaml")).expect("read");
    assert!(text.contains("alias: web") && text.contains("condition: pg.enabled"));

    // The state helm 3 left (its lock): build from it, and list it.
    let built = tempfile::tempdir().expect("tempdir");
    corpus_scenario(&shared, built.path());
    let lock = r.raw_locks.get("Chart.lock").expect("lock written");
    write(&built.path().join("parent/Chart.lock"), lock);
    check(
        &tools,
        "corpus build",
        built.path(),
        "parent",
        &["dependency", "build", "parent"],
    );
    check(
        &tools,
        "corpus list",
        built.path(),
        "parent",
        &["dependency", "list", "parent"],
    );
    check(
        &tools,
        "corpus list (dep ls, narrow)",
        built.path(),
        "parent",
        &["dep", "ls", "parent", "--max-col-width", "7"],
    );

    // Update with a lock of the same digest does not rewrite it.
    let again = tempfile::tempdir().expect("tempdir");
    corpus_scenario(&shared, again.path());
    write(&again.path().join("parent/Chart.lock"), lock);
    let r2 = check(
        &tools,
        "corpus update again",
        again.path(),
        "parent",
        &["dependency", "update", "parent"],
    );
    assert_eq!(
        r2.raw_locks.get("Chart.lock"),
        Some(lock),
        "an unchanged lock is not rewritten"
    );

    // Chart.yaml changed: build refuses the lock, with Helm's message.
    let stale = tempfile::tempdir().expect("tempdir");
    corpus_scenario(&shared, stale.path());
    write(&stale.path().join("parent/Chart.lock"), lock);
    let cy = stale.path().join("parent/Chart.yaml");
    let text = std::fs::read_to_string(&cy)
        .expect("read")
        .replace("\"~3.8\"", "\"~3.8.0\"");
    write(&cy, &text);
    let r3 = check(
        &tools,
        "corpus stale lock",
        stale.path(),
        "parent",
        &["dependency", "build", "parent"],
    );
    assert_eq!(r3.code, Some(1));
    assert!(r3.stderr.contains(
        "the lock file (Chart.lock) is out of sync with the dependencies file (Chart.yaml). Please update the dependencies"
    ));
    assert!(!r3.tree.iter().any(|p| p.starts_with("tmpcharts")));
}

#[test]
fn apiversion_v1_requirements_match_helm() {
    let Some(tools) = tools() else { return };
    let sc = tempfile::tempdir().expect("tempdir");
    let root = sc.path();
    write(
        &root.join("child/Chart.yaml"),
        "apiVersion: v1\nname: child\nversion: 0.3.0\n",
    );
    write(&root.join("child/values.yaml"), "x: 1\n");
    write(&root.join("child/templates/a.yaml"), "kind: A\n");
    write(
        &root.join("p1/Chart.yaml"),
        "apiVersion: v1\nname: p1\nversion: 1.0.0\n",
    );
    write(
        &root.join("p1/requirements.yaml"),
        "dependencies:\n- name: child\n  version: \">0.2\"\n  repository: file://../child\n  import-values: [{child: x, parent: y}]\n",
    );
    let r = check(&tools, "v1", root, "p1", &["dependency", "update", "p1"]);
    let lock = r
        .raw_locks
        .get("requirements.lock")
        .expect("requirements.lock")
        .clone();

    let b = tempfile::tempdir().expect("tempdir");
    copy_dir(root, b.path());
    write(&b.path().join("p1/requirements.lock"), &lock);
    check(
        &tools,
        "v1 build",
        b.path(),
        "p1",
        &["dependency", "build", "p1"],
    );

    // A Helm 2 digest (HashV2Req) is still accepted for a v1 chart; Helm
    // logs a warning first (Helm 4 in its own log format, so only Helm 3's
    // stderr can match: compare with helm3 alone here).
    let req = rudder::chart::load_dir(root.join("p1"))
        .expect("loads")
        .metadata
        .dependencies;
    let v2 = rudder::source::deps::hash_v2_req(&req).expect("digest");
    let old = lock
        .lines()
        .map(|l| {
            if l.starts_with("digest:") {
                format!("digest: {v2}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect::<String>();
    let c = tempfile::tempdir().expect("tempdir");
    copy_dir(root, c.path());
    write(&c.path().join("p1/requirements.lock"), &old);
    let work = tempfile::tempdir().expect("tempdir");
    let args = ["dependency", "build", "p1"];
    let h3 = run(&tools, Tool::Helm3, c.path(), work.path(), "p1", &args);
    let ours = run(&tools, Tool::Rudder, c.path(), work.path(), "p1", &args);
    assert_eq!(h3.code, Some(0), "helm3 accepts the Helm 2 digest: {h3:?}");
    let d = compare(&h3, &ours, "helm3", false);
    assert!(d.is_empty(), "v1 Helm 2 digest: {}", d.join("\n"));
    // Not an equal digest: refused by both.
    write(
        &c.path().join("p1/requirements.yaml"),
        "dependencies:\n- name: child\n  version: \">0.1\"\n  repository: file://../child\n",
    );
    let h3 = run(&tools, Tool::Helm3, c.path(), work.path(), "p1", &args);
    let ours = run(&tools, Tool::Rudder, c.path(), work.path(), "p1", &args);
    assert_eq!(h3.code, Some(1));
    let d = compare(&h3, &ours, "helm3", false);
    assert!(d.is_empty(), "v1 stale lock: {}", d.join("\n"));
}

#[test]
fn errors_match_helm() {
    let Some(tools) = tools() else { return };
    let sc = tempfile::tempdir().expect("tempdir");
    let root = sc.path();
    write(
        &root.join("child/Chart.yaml"),
        "apiVersion: v2\nname: child\nversion: 0.3.0\n",
    );
    let cases: &[(&str, &str)] = &[
        ("nopath", "- name: child\n  version: \"*\"\n  repository: file://../nothere\n"),
        ("unsat", "- name: child\n  version: \">1\"\n  repository: file://../child\n"),
        ("alias", "- name: child\n  version: \"1\"\n  repository: \"@myrepo\"\n- name: b\n  version: \"1\"\n  repository: \"alias:other\"\n"),
        ("bare", "- name: child\n  version: \"1\"\n  repository: stable\n"),
        ("nolocal", "- name: child\n  version: \"1\"\n  repository: \"\"\n"),
        ("badconstraint", "- name: child\n  version: \">>1\"\n  repository: file://../child\n"),
        ("twomissing", "- name: child\n  version: \">1\"\n  repository: file://../child\n- name: child2\n  version: \"<0\"\n  repository: file://../child\n"),
        ("localunsat", "- name: child\n  version: \"2.x\"\n  repository: \"\"\n"),
        ("chartsfile", "- name: child\n  version: \"*\"\n  repository: file://../child\n"),
    ];
    for (name, deps) in cases {
        write(
            &root.join(name).join("Chart.yaml"),
            &format!("apiVersion: v2\nname: {name}\nversion: 1.0.0\ndependencies:\n{deps}"),
        );
    }
    copy_dir(&root.join("child"), &root.join("localunsat/charts/child"));
    write(&root.join("chartsfile/charts"), "not a directory\n");
    for (name, _) in cases {
        let r = check(&tools, name, root, name, &["dependency", "update", name]);
        assert_eq!(r.code, Some(1), "{name}: {r:?}");
    }
    let r = check(
        &tools,
        "no chart",
        root,
        "child",
        &["dependency", "update", "nothere"],
    );
    assert_eq!(r.code, Some(1));
    check(
        &tools,
        "a file",
        root,
        "child",
        &["dependency", "build", "child/Chart.yaml"],
    );
    check(
        &tools,
        "too many args",
        root,
        "child",
        &["dependency", "update", "a", "b"],
    );
    check(
        &tools,
        "unknown flag",
        root,
        "child",
        &["dependency", "update", "child", "--bogus"],
    );
    // `helm dependency` alone prints its help and succeeds (the help
    // texts are each tool's own).
    let work = tempfile::tempdir().expect("tempdir");
    for tool in [Tool::Helm3, Tool::Rudder] {
        let r = run(&tools, tool, root, work.path(), "child", &["dependency"]);
        assert_eq!(r.code, Some(0), "{tool:?}: {r:?}");
        assert!(r.stdout.contains("dependency"), "{tool:?}: {r:?}");
    }
    check(
        &tools,
        "no dependencies",
        root,
        "child",
        &["dependency", "list", "child"],
    );
    check(
        &tools,
        "no dependencies update",
        root,
        "child",
        &["dependency", "update", "child"],
    );
}

/// A failure part-way leaves `charts/` exactly as it was: the chart packaged
/// before the failure is not there, the old archive is, and no
/// `tmpcharts-*` remains.
#[test]
fn failure_leaves_charts_untouched() {
    let Some(tools) = tools() else { return };
    let sc = tempfile::tempdir().expect("tempdir");
    let root = sc.path();
    write(
        &root.join("a/Chart.yaml"),
        "apiVersion: v2\nname: a\nversion: 1.0.0\n",
    );
    write(
        &root.join("b/Chart.yaml"),
        "apiVersion: v2\nname: b\nversion: 1.0.0\n",
    );
    write(
        &root.join("p/Chart.yaml"),
        "apiVersion: v2\nname: p\nversion: 1.0.0\ndependencies:\n- name: a\n  version: \"1\"\n  repository: file://../a\n- name: b\n  version: \"2\"\n  repository: file://../b\n",
    );
    let old = rudder::chart::Chart {
        metadata: rudder::chart::Metadata {
            api_version: "v2".into(),
            name: "a".into(),
            version: "0.9.0".into(),
            ..Default::default()
        },
        ..Default::default()
    };
    rudder::chart::save_archive(&old, root.join("p/charts")).expect("old archive");
    let r = check(&tools, "failure", root, "p", &["dependency", "update", "p"]);
    assert_eq!(r.code, Some(1));
    assert_eq!(r.tree, ["Chart.yaml", "charts/", "charts/a-0.9.0.tgz"]);
}

#[test]
fn list_statuses_match_helm() {
    let Some(tools) = tools() else { return };
    let sc = tempfile::tempdir().expect("tempdir");
    let p = sc.path().join("p");
    let chart = |dir: &Path, name: &str, version: &str| {
        write(
            &dir.join("Chart.yaml"),
            &format!("apiVersion: v2\nname: {name}\nversion: {version}\n"),
        );
    };
    chart(&p.join("charts/unp"), "unp", "1.0.0");
    chart(&p.join("charts/wv"), "wv", "0.5.0");
    chart(&p.join("charts/extra"), "extra", "1.0.0");
    std::fs::create_dir_all(p.join("charts/.hidden")).expect("mkdir");
    let archive = |name: &str, version: &str, file: &str| {
        let c = rudder::chart::Chart {
            metadata: rudder::chart::Metadata {
                api_version: "v2".into(),
                name: name.into(),
                version: version.into(),
                ..Default::default()
            },
            ..Default::default()
        };
        std::fs::write(
            p.join("charts").join(file),
            rudder::chart::package_bytes(&c).expect("package"),
        )
        .expect("write");
    };
    archive("okc", "1.2.3", "okc-1.2.3.tgz");
    archive("other", "1.0.0", "misn-1.0.0.tgz");
    archive("tm", "1.0.0", "tm-1.0.0.tgz");
    archive("tm", "1.0.1", "tm-1.0.1.tgz");
    archive("one", "1.0.0", "one-1.0.0.tgz");
    archive("one", "2.0.0", "one-latest.tgz");
    archive("old", "0.1.0", "old-0.1.0.tgz");
    write(
        &p.join("Chart.yaml"),
        r#"apiVersion: v2
name: p
version: 1.0.0
dependencies:
- name: okc
  version: ^1.0.0
  repository: https://example.com/charts
- name: unp
  version: 1.0.0
  repository: ""
- name: wv
  version: ">=1.0.0"
  repository: file://../wv
- name: gone
  version: "1"
  repository: "@repo"
- name: misn
  version: "*"
  repository: oci://example.com/x
- name: tm
  version: "1"
  repository: oci://example.com/x
- name: one
  version: "~1.0"
  repository: oci://example.com/x
- name: old
  version: ">=1"
  repository: oci://example.com/x
"#,
    );
    let r = check(&tools, "list", sc.path(), "p", &["dependency", "list", "p"]);
    for status in [
        "ok",
        "unpacked",
        "wrong version",
        "missing",
        "misnamed",
        "too many matches",
    ] {
        assert!(r.stdout.contains(status), "{status} in\n{}", r.stdout);
    }
    check(
        &tools,
        "list archive",
        sc.path(),
        "p",
        &["dependency", "list", "p/charts/okc-1.2.3.tgz"],
    );
}

// ---------------------------------------------------------------------
// Repository dependencies, on a chart repository served over HTTP by the
// test: `@alias`, `alias:`, the URL of an added repository, and the URL of
// one that is not added (Helm's `helm-manager-<sha256>` cache). Each tool
// adds the repository with its own `repo add`, then runs the same
// commands; the downloaded archives are compared byte for byte.
// ---------------------------------------------------------------------

/// Adds repository `name` at `url` to `tool`'s home in `work`, with the
/// tool's own `repo add`.
fn repo_add(tools: &Tools, tool: Tool, work: &Path, name: &str, url: &str) {
    let home = work.join(format!("{tool:?}-home"));
    let mut cmd = match tool {
        Tool::Helm3 => common::helm_command(&tools.helm3, &home),
        Tool::Helm4 => common::helm_command(&tools.helm4, &home),
        Tool::Rudder => {
            let mut c = Command::new(env!("CARGO_BIN_EXE_rudder"));
            c.env("HELM_CONFIG_HOME", home.join("config"))
                .env("HELM_CACHE_HOME", home.join("cache"))
                .env("HELM_DATA_HOME", home.join("data"));
            c
        }
    };
    let o = cmd
        .env("HOME", &home)
        .args(["repo", "add", name, url])
        .output()
        .expect("repo add");
    assert!(o.status.success(), "{tool:?} repo add: {o:?}");
}

#[test]
fn repository_dependencies_match_helm() {
    let Some(tools) = tools() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let srv = tmp.path().join("srv");
    std::fs::create_dir_all(srv.join("other")).expect("mkdir");
    for (name, version, dir) in [
        ("alpha", "1.0.0", ""),
        ("alpha", "1.1.0", ""),
        ("alpha", "2.0.0", ""),
        ("beta", "0.1.0", ""),
        ("gamma", "3.0.0", "other"),
    ] {
        let c = rudder::chart::Chart {
            metadata: rudder::chart::Metadata {
                api_version: "v2".into(),
                name: name.into(),
                version: version.into(),
                ..Default::default()
            },
            ..Default::default()
        };
        rudder::chart::save_archive(&c, srv.join(dir)).expect("package");
    }
    for d in [srv.clone(), srv.join("other")] {
        let home = tmp.path().join("index-home");
        let o = common::helm_command(&tools.helm3, &home)
            .args(["repo", "index"])
            .arg(&d)
            .output()
            .expect("helm repo index");
        assert!(o.status.success(), "{o:?}");
    }
    let server = ChartServer::start(&srv, ServerOptions::default());
    let base = server.url();
    let work = tmp.path().join("work");
    for t in [Tool::Helm3, Tool::Helm4, Tool::Rudder] {
        repo_add(&tools, t, &work, "myrepo", &base);
    }
    let scenario = tmp.path().join("scenario");
    write(
        &scenario.join("p/Chart.yaml"),
        &format!(
            r#"apiVersion: v2
name: p
version: 1.0.0
dependencies:
- name: alpha
  version: ^1.0.0
  repository: "@myrepo"
- name: beta
  version: "*"
  repository: {base}/
- name: gamma
  version: ">=3"
  repository: {base}/other
- name: alpha
  alias: alpha2
  version: ~1.1
  repository: "alias:myrepo"
"#
        ),
    );
    write(
        &scenario.join("q/Chart.yaml"),
        &format!(
            "apiVersion: v2\nname: q\nversion: 1.0.0\ndependencies:\n- name: alpha\n  version: \"<2\"\n  repository: \"@myrepo\"\n- name: beta\n  version: \"0.1\"\n  repository: {base}\n"
        ),
    );
    write(
        &scenario.join("bad/Chart.yaml"),
        "apiVersion: v2\nname: bad\nversion: 1.0.0\ndependencies:\n- name: alpha\n  version: \">=3\"\n  repository: \"@myrepo\"\n- name: nope\n  version: \"*\"\n  repository: \"@myrepo\"\n",
    );
    let r = check_in(
        &tools,
        "repo update",
        &scenario,
        &work,
        "p",
        &["dependency", "update", "p"],
    );
    assert_eq!(r.code, Some(0));
    assert_eq!(
        r.archives.keys().collect::<Vec<_>>(),
        ["alpha-1.1.0.tgz", "beta-0.1.0.tgz", "gamma-3.0.0.tgz"]
    );
    let lock = r.raw_locks.get("Chart.lock").expect("lock").clone();
    assert!(
        lock.contains(&format!("repository: {base}\n")),
        "@alias pinned as its URL:\n{lock}"
    );
    check_in(
        &tools,
        "repo update (skip refresh)",
        &scenario,
        &work,
        "p",
        &["dependency", "update", "p", "--skip-refresh"],
    );
    let r = check_in(
        &tools,
        "repo update q",
        &scenario,
        &work,
        "q",
        &["dependency", "update", "q"],
    );
    let q_lock = r.raw_locks.get("Chart.lock").expect("lock").clone();
    check_in(
        &tools,
        "repo no valid version",
        &scenario,
        &work,
        "bad",
        &["dependency", "update", "bad"],
    );

    // Build from the locks: `p` uses a repository that is not added, which
    // build refuses; `q` builds into an empty charts/.
    let built = tmp.path().join("built");
    copy_dir(&scenario, &built);
    write(&built.join("p/Chart.lock"), &lock);
    write(&built.join("q/Chart.lock"), &q_lock);
    let r = check_in(
        &tools,
        "repo build unknown repo",
        &built,
        &work,
        "p",
        &["dependency", "build", "p"],
    );
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr
            .contains("Please add the missing repos via 'helm repo add'"),
        "{}",
        r.stderr
    );
    let r = check_in(
        &tools,
        "repo build",
        &built,
        &work,
        "q",
        &["dependency", "build", "q"],
    );
    assert_eq!(r.archives.len(), 2, "{r:?}");
    check_in(
        &tools,
        "repo list",
        &built,
        &work,
        "q",
        &["dependency", "list", "q"],
    );
}

/// rudder's own guarantees on top of Helm's behaviour: a chart already in
/// the content cache at its index digest is not downloaded again, and an
/// archive that does not match its index digest is refused (naming both
/// digests) with nothing left in charts/.
#[test]
fn repository_downloads_are_cached_and_digest_checked() {
    let Some(tools) = tools() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let srv = tmp.path().join("srv");
    for (name, version) in [("alpha", "1.0.0"), ("beta", "0.1.0")] {
        let c = rudder::chart::Chart {
            metadata: rudder::chart::Metadata {
                api_version: "v2".into(),
                name: name.into(),
                version: version.into(),
                ..Default::default()
            },
            ..Default::default()
        };
        rudder::chart::save_archive(&c, &srv).expect("package");
    }
    let o = common::helm_command(&tools.helm3, &tmp.path().join("index-home"))
        .args(["repo", "index"])
        .arg(&srv)
        .output()
        .expect("helm repo index");
    assert!(o.status.success(), "{o:?}");
    let server = ChartServer::start(&srv, ServerOptions::default());
    let base = server.url();
    let work = tmp.path().join("work");
    repo_add(&tools, Tool::Rudder, &work, "myrepo", &base);
    let scenario = tmp.path().join("scenario");
    write(
        &scenario.join("p/Chart.yaml"),
        "apiVersion: v2\nname: p\nversion: 1.0.0\ndependencies:\n- name: alpha\n  version: \"1\"\n  repository: \"@myrepo\"\n",
    );
    let first = run(
        &tools,
        Tool::Rudder,
        &scenario,
        &work,
        "p",
        &["dependency", "update", "p"],
    );
    assert_eq!(first.code, Some(0), "{first:?}");
    // The server loses the archive: the cached copy serves.
    std::fs::remove_file(srv.join("alpha-1.0.0.tgz")).expect("rm");
    let again = run(
        &tools,
        Tool::Rudder,
        &scenario,
        &work,
        "p",
        &["dependency", "update", "p"],
    );
    assert_eq!(again.code, Some(0), "served from the cache: {again:?}");
    assert_eq!(again.archives, first.archives);

    // An archive that is not the one its index names: refused.
    let beta = srv.join("beta-0.1.0.tgz");
    let mut bytes = std::fs::read(&beta).expect("read");
    bytes.extend_from_slice(b"tampered");
    std::fs::write(&beta, bytes).expect("write");
    write(
        &scenario.join("q/Chart.yaml"),
        "apiVersion: v2\nname: q\nversion: 1.0.0\ndependencies:\n- name: beta\n  version: \"*\"\n  repository: \"@myrepo\"\n",
    );
    let bad = run(
        &tools,
        Tool::Rudder,
        &scenario,
        &work,
        "q",
        &["dependency", "update", "q"],
    );
    assert_eq!(bad.code, Some(1), "{bad:?}");
    assert!(
        bad.stderr.contains("digest mismatch") && bad.stderr.contains("expected sha256:"),
        "{}",
        bad.stderr
    );
    assert!(
        bad.archives.is_empty() && !bad.tree.iter().any(|p| p.starts_with("tmpcharts")),
        "{bad:?}"
    );
}
