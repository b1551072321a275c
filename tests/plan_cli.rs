//! `rudder plan` and `rudder diff upgrade` end to end: the binary, run in a
//! fresh temporary directory as its working directory (so the default store
//! `file:.rudder` and cluster `sim:.rudder/cluster` start empty there).
use rudder::release::store::file::FileStore;
use rudder::release::{Release, Status, Store};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const LOKOMOTIVE_ORDER: &[(&str, &str)] = &[
    ("bootstrap-secrets", "kube-system"),
    ("pod-checkpointer", "kube-system"),
    ("kube-apiserver", "kube-system"),
    ("kubernetes", "kube-system"),
    ("calico", "kube-system"),
    ("lokomotive", "lokomotive-system"),
    ("kubelet", "kube-system"),
    ("node-local-dns", "kube-system"),
];

/// Planning creates nothing, not even an empty `.rudder/` (an earlier file
/// store created it on open; `plan_creates_no_store_directory` pins it).
const TOLERATE_EMPTY_STORE_DIR: bool = false;

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn lokomotive() -> PathBuf {
    manifest_dir().join("fixtures/plans/lokomotive/releases.yaml")
}

fn scenarios() -> PathBuf {
    manifest_dir().join("fixtures/plans/scenarios")
}

fn scenario(name: &str) -> String {
    scenarios().join(name).to_string_lossy().into_owned()
}

fn rudder(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rudder"))
        .args(args)
        .current_dir(cwd)
        .env_remove("NO_COLOR")
        .output()
        .expect("run rudder")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exit code")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 stdout")
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("utf-8 stderr")
}

fn json_out(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON: {e}\n{}", stdout(o)))
}

/// Every path under `dir` (relative) with its contents (`None` for a
/// directory) and mode.
fn tree(dir: &Path) -> BTreeMap<PathBuf, (Option<Vec<u8>>, u32)> {
    fn walk(root: &Path, d: &Path, out: &mut BTreeMap<PathBuf, (Option<Vec<u8>>, u32)>) {
        let mut entries: Vec<_> = std::fs::read_dir(d)
            .expect("read_dir")
            .map(|e| e.expect("entry").path())
            .collect();
        entries.sort();
        for p in entries {
            let meta = std::fs::symlink_metadata(&p).expect("metadata");
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            #[cfg(unix)]
            let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions());
            #[cfg(not(unix))]
            let mode = 0;
            if meta.is_dir() {
                out.insert(rel, (None, mode));
                walk(root, &p, out);
            } else {
                out.insert(rel, (Some(std::fs::read(&p).expect("read")), mode));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn assert_same_tree(
    what: &str,
    before: &BTreeMap<PathBuf, (Option<Vec<u8>>, u32)>,
    after: &BTreeMap<PathBuf, (Option<Vec<u8>>, u32)>,
) {
    let mut after = after.clone();
    if TOLERATE_EMPTY_STORE_DIR
        && !before.contains_key(Path::new(".rudder"))
        && matches!(after.get(Path::new(".rudder")), Some((None, _)))
        && !after
            .keys()
            .any(|k| k.starts_with(".rudder") && k != Path::new(".rudder"))
    {
        after.remove(Path::new(".rudder"));
    }
    let names = |t: &BTreeMap<PathBuf, (Option<Vec<u8>>, u32)>| -> Vec<PathBuf> {
        t.keys().cloned().collect()
    };
    assert_eq!(
        names(before),
        names(&after),
        "{what}: files created or removed"
    );
    for (k, v) in before {
        assert!(after.get(k) == Some(v), "{what}: {} changed", k.display());
    }
}

/// Runs a command that must fail: exit 1 (also with --detailed-exitcode),
/// an `Error:` naming `wants`, no stdout, and no file created or changed in
/// the working directory or the scenarios fixtures.
fn assert_refused(cwd: &Path, args: &[&str], wants: &[&str]) -> String {
    let before = tree(cwd);
    let fixtures_before = tree(&scenarios());
    for extra in [&[][..], &["--detailed-exitcode"][..]] {
        let mut all = args.to_vec();
        all.extend_from_slice(extra);
        let o = rudder(cwd, &all);
        let err = stderr(&o);
        assert_eq!(code(&o), 1, "{all:?}: exit code\nstderr: {err}");
        assert!(o.stdout.is_empty(), "{all:?}: stdout: {}", stdout(&o));
        assert!(err.contains("Error: "), "{all:?}: {err}");
        for w in wants {
            assert!(err.contains(w), "{all:?}: stderr lacks {w:?}:\n{err}");
        }
        assert_same_tree(&format!("{all:?}"), &before, &tree(cwd));
        assert_same_tree(
            &format!("{all:?} (fixtures)"),
            &fixtures_before,
            &tree(&scenarios()),
        );
    }
    stderr(&rudder(cwd, args))
}

fn tempdir() -> tempfile::TempDir {
    tempfile::TempDir::new().expect("tempdir")
}

#[test]
fn lokomotive_plan_json() {
    let dir = tempdir();
    let file = lokomotive();
    let file = file.to_str().unwrap();
    let o = rudder(dir.path(), &["plan", file, "-o", "json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let plan = json_out(&o);
    assert!(
        plan["id"]
            .as_str()
            .is_some_and(|s| s.starts_with("sha256:") && s.len() == 71),
        "{}",
        plan["id"]
    );
    assert_eq!(plan["apiVersion"], "rudder.io/v1alpha1");
    assert_eq!(plan["redacted"], true);
    let releases = plan["releases"].as_array().expect("releases");
    let order: Vec<(&str, &str)> = releases
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap(),
                r["namespace"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(order, LOKOMOTIVE_ORDER);
    for r in releases {
        let name = r["name"].as_str().unwrap();
        assert_eq!(r["action"], "install", "{name}");
        assert!(r["from"].is_null(), "{name}: from {}", r["from"]);
        assert_eq!(r["to"]["revision"], 1, "{name}");
        assert!(r.get("record").is_none(), "{name}: a record on stdout");
        let objects = r["objects"].as_array().expect("objects");
        assert!(!objects.is_empty(), "{name}: no objects");
        for o in objects {
            for f in ["group", "version", "kind", "namespace", "name"] {
                assert!(o["key"][f].is_string(), "{name}: key.{f} in {}", o["key"]);
            }
            assert!(o["action"].is_string(), "{name}: {o}");
        }
    }
    // Every release's needs show up as edges with their reasons.
    let edges = plan["releaseEdges"].as_array().expect("edges");
    assert_eq!(edges.len(), 8, "{edges:#?}");
    assert!(edges.iter().all(
        |e| e["kind"] == "ready-before" && e["reason"].as_str().is_some_and(|r| !r.is_empty())
    ));

    // The same inputs and state give the same bytes.
    let again = rudder(dir.path(), &["plan", file, "-o", "json"]);
    assert_eq!(code(&again), 0);
    assert!(o.stdout == again.stdout, "two runs differ");

    // -o html: one graph node per release, in the plan's order.
    let h = rudder(dir.path(), &["plan", file, "-o", "html"]);
    assert_eq!(code(&h), 0, "{}", stderr(&h));
    let page = stdout(&h);
    let node = regex::Regex::new(r#"data-order="(\d+)" data-release="([^"]*)""#).unwrap();
    let got: Vec<String> = node
        .captures_iter(&page)
        .map(|c| format!("{} {}", &c[1], &c[2]))
        .collect();
    let want: Vec<String> = plan["releases"]
        .as_array()
        .expect("releases")
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (ns, name) = (r["namespace"].as_str(), r["name"].as_str());
            format!("{} {}/{}", i + 1, ns.unwrap(), name.unwrap())
        })
        .collect();
    assert_eq!(got, want);

    // Changes: --detailed-exitcode is 2, in every format.
    for fmt in ["json", "yaml", "table", "html"] {
        let o = rudder(
            dir.path(),
            &["plan", file, "-o", fmt, "--detailed-exitcode"],
        );
        assert_eq!(code(&o), 2, "-o {fmt}: {}", stderr(&o));
    }
}

#[test]
fn plan_writes_nothing_but_an_empty_store_dir() {
    let dir = tempdir();
    let file = lokomotive();
    let o = rudder(dir.path(), &["plan", file.to_str().unwrap(), "-o", "json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let t = tree(dir.path());
    let names: Vec<_> = t.keys().collect();
    assert!(
        names.is_empty() || (TOLERATE_EMPTY_STORE_DIR && names == [Path::new(".rudder")]),
        "planning wrote {names:?}"
    );
}

#[test]
fn plan_creates_no_store_directory() {
    let dir = tempdir();
    let file = lokomotive();
    let o = rudder(dir.path(), &["plan", file.to_str().unwrap(), "-o", "json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        !dir.path().join(".rudder").exists(),
        "planning created .rudder"
    );
}

#[test]
fn save_writes_records_privately_and_stdout_redacts() {
    let dir = tempdir();
    let file = scenario("releases.yaml");
    let o = rudder(
        dir.path(),
        &["plan", &file, "-o", "json", "--save", "plan.json"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let saved_path = dir.path().join("plan.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&saved_path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");
    }
    // No temporary file left beside it.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".rudder")
        .collect();
    assert_eq!(left, vec!["plan.json"]);

    let saved_text = std::fs::read_to_string(&saved_path).unwrap();
    let saved: Value = serde_json::from_str(&saved_text).unwrap();
    let shown = json_out(&o);
    assert_eq!(saved["id"], shown["id"]);
    assert_eq!(saved["redacted"], false);
    assert_eq!(shown["redacted"], true);
    let rec = &saved["releases"][0]["record"];
    assert_eq!(rec["name"], "web", "{rec}");
    assert_eq!(rec["version"], 1);
    assert!(
        rec["manifest"]
            .as_str()
            .is_some_and(|m| m.contains("kind: Secret")),
        "{rec}"
    );
    // The saved plan holds what applying needs, the secret included.
    assert!(saved_text.contains("hunter2-plaintext"));

    assert!(shown["releases"][0].get("record").is_none());
    let out = stdout(&o);
    assert!(!out.contains("hunter2-plaintext"), "{out}");
    let secret = shown["releases"][0]["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["key"]["kind"] == "Secret")
        .expect("secret");
    let pw = secret["desired"]["stringData"]["password"]
        .as_str()
        .unwrap();
    assert_eq!(pw, "(redacted)");

    // --show-secrets shows them on stdout, still without records.
    let o = rudder(dir.path(), &["plan", &file, "-o", "json", "--show-secrets"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("hunter2-plaintext"));
    assert!(json_out(&o)["releases"][0].get("record").is_none());
}

#[test]
fn malformed_releases_files_are_refused() {
    let dir = tempdir();
    let f = scenario("bad-syntax.yaml");
    assert_refused(
        dir.path(),
        &["plan", &f],
        // At the `[` that is not closed (line 4), not at the end of the
        // file (line 5) where the parser gave up.
        &[
            &format!("{f}:4:11:"),
            "expected ',' or ']'",
            "is not closed",
        ],
    );
    let f = scenario("bad-unknown-key.yaml");
    assert_refused(
        dir.path(),
        &["plan", &f],
        &[
            &format!("{f}:4:3:"),
            "unknown key \"colour\"",
            "release \"web\"",
        ],
    );
    let f = scenario("bad-wrong-type.yaml");
    assert_refused(
        dir.path(),
        &["plan", &f],
        &[
            &format!("{f}:4:11:"),
            "release \"web\"",
            "atomic must be a bool",
        ],
    );
    let f = scenario("bad-missing-chart.yaml");
    assert_refused(
        dir.path(),
        &["plan", &f],
        &[
            &format!("{f}:5:10:"),
            "api",
            "charts/no-such-chart does not exist",
        ],
    );
    let missing = dir.path().join("nope.yaml");
    let missing = missing.to_str().unwrap();
    assert_refused(dir.path(), &["plan", missing], &[missing]);
}

#[test]
fn needs_cycle_is_refused() {
    let dir = tempdir();
    let f = scenario("bad-cycle.yaml");
    // Named with the place of a needs entry of the cycle (c's `default/a`).
    let err = assert_refused(
        dir.path(),
        &["plan", &f],
        &[
            "cycle",
            &format!("{f}:11:11: release \"default/c\" needs \"default/a\""),
        ],
    );
    assert!(
        err.contains("default/a -> default/c -> default/b -> default/a"),
        "{err}"
    );
}

#[test]
fn corrupted_sim_state_is_refused_and_left_alone() {
    let dir = tempdir();
    let sim = dir.path().join("sim");
    std::fs::create_dir(&sim).unwrap();
    // The state file's name, as the simulated cluster defines it.
    let state = sim.join(rudder::cluster::sim::STATE_FILE);
    std::fs::write(&state, b"{\"format\": \"rudder.sim/v1\", garbage").unwrap();
    let f = scenario("releases.yaml");
    assert_refused(
        dir.path(),
        &["plan", &f, "--cluster", "sim:sim"],
        &["sim/state.json", "corrupted simulated cluster state"],
    );
    assert_eq!(
        std::fs::read(&state).unwrap(),
        b"{\"format\": \"rudder.sim/v1\", garbage"
    );
    // Another format is refused too.
    std::fs::write(&state, br#"{"format":"rudder.sim/v0","objects":[]}"#).unwrap();
    assert_refused(
        dir.path(),
        &["plan", &f, "--cluster", "sim:sim"],
        &["sim/state.json"],
    );
}

#[test]
fn unreadable_store_is_refused() {
    let dir = tempdir();
    let f = scenario("releases.yaml");
    // The store directory is a regular file.
    std::fs::write(dir.path().join("store"), b"not a directory").unwrap();
    assert_refused(
        dir.path(),
        &["plan", &f, "--store", "file:store"],
        &["store"],
    );
    // The release namespace's directory is a regular file.
    std::fs::create_dir(dir.path().join("store2")).unwrap();
    std::fs::write(dir.path().join("store2/prod"), b"not a directory").unwrap();
    assert_refused(
        dir.path(),
        &["plan", &f, "--store", "file:store2"],
        &["release prod/web", "store2/prod"],
    );
    // An unknown store URL.
    assert_refused(
        dir.path(),
        &["plan", &f, "--store", "nosuch://x"],
        &["nosuch://x"],
    );
}

/// A release record that does not decode must not read as "no release"
/// (which plans an install of revision 1 over it).
#[test]
fn garbage_record_is_refused() {
    let dir = tempdir();
    let f = scenario("releases.yaml");
    std::fs::create_dir_all(dir.path().join("store/prod")).unwrap();
    std::fs::write(
        dir.path().join("store/prod/sh.helm.release.v1.web.v1"),
        b"garbage",
    )
    .unwrap();
    assert_refused(
        dir.path(),
        &["plan", &f, "--store", "file:store"],
        &["sh.helm.release.v1.web.v1"],
    );
}

fn write_chart(dir: &Path) -> PathBuf {
    let c = dir.join("mychart");
    std::fs::create_dir_all(c.join("templates")).unwrap();
    std::fs::write(
        c.join("Chart.yaml"),
        "apiVersion: v2\nname: mychart\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(c.join("values.yaml"), "replicas: 1\ncolor: blue\n").unwrap();
    std::fs::write(
        c.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  color: {{ .Values.color | quote }}\n",
    )
    .unwrap();
    std::fs::write(
        c.join("templates/deploy.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  replicas: {{ .Values.replicas }}\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n",
    )
    .unwrap();
    c
}

#[test]
fn diff_upgrade_of_a_missing_release_needs_allow_unreleased() {
    let dir = tempdir();
    write_chart(dir.path());
    // helm-diff: a release with no record is an error naming it...
    let err = assert_refused(
        dir.path(),
        &["diff", "upgrade", "web", "mychart", "-n", "prod"],
        &["\"web\"", "\"prod\"", "not found", "--allow-unreleased"],
    );
    assert!(!err.contains("has been added"), "{err}");
    // ... and with --allow-unreleased (or its alias --install) everything is new.
    for flag in ["--allow-unreleased", "--install"] {
        let o = rudder(
            dir.path(),
            &["diff", "upgrade", "web", "mychart", "-n", "prod", flag],
        );
        assert_eq!(code(&o), 0, "{flag}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(out.contains("Release was not present in Helm."), "{out}");
        assert!(
            out.contains("prod, web-config, ConfigMap has been added:\n"),
            "{out}"
        );
    }
}

#[test]
fn diff_upgrade_new_release_shows_additions() {
    let dir = tempdir();
    write_chart(dir.path());
    let o = rudder(
        dir.path(),
        &[
            "diff",
            "upgrade",
            "web",
            "mychart",
            "-n",
            "prod",
            "--set",
            "replicas=3",
            "--allow-unreleased",
            "--detailed-exitcode",
        ],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("prod, web-config, ConfigMap has been added:\n"),
        "{out}"
    );
    assert!(
        out.contains("prod, web, Deployment (apps) has been added:\n"),
        "{out}"
    );
    assert!(out.contains("+   replicas: 3\n"), "{out}");
    assert!(out.contains("+   color: blue\n"), "{out}");
    assert!(!out.contains("Namespace"), "{out}");
    let o = rudder(
        dir.path(),
        &[
            "diff",
            "upgrade",
            "web",
            "mychart",
            "-n",
            "prod",
            "--allow-unreleased",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

/// Seeds the state an install of `mychart` as release `web` in `prod`
/// leaves: the objects through `rudder cluster apply` (manager rudder), the
/// record through the file store, from a saved plan's record.
fn seed_install(dir: &Path, values: &[&str]) {
    let releases = format!(
        "releases:\n- name: web\n  namespace: prod\n  chart: mychart\n  createNamespace: false\n  values: [{}]\n",
        values.join(", ")
    );
    std::fs::write(dir.join("releases.yaml"), releases).unwrap();
    let o = rudder(
        dir,
        &["plan", "releases.yaml", "-o", "json", "--save", "seed.json"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let plan: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("seed.json")).unwrap()).unwrap();
    let r = &plan["releases"][0];
    let mut objects = vec![
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}}),
    ];
    for o in r["objects"].as_array().unwrap() {
        objects.push(o["desired"].clone());
    }
    let text: String = objects
        .iter()
        .map(|o| format!("---\n{}", serde_yaml::to_string(o).unwrap()))
        .collect();
    std::fs::write(dir.join("objects.yaml"), text).unwrap();
    let o = rudder(
        dir,
        &[
            "cluster",
            "apply",
            "-f",
            "objects.yaml",
            "--field-manager",
            "rudder",
            "--force-conflicts",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let mut rec: Release = serde_json::from_value(r["record"].clone()).unwrap();
    rec.info.status = Status::Deployed;
    rec.info.description = "Install complete".into();
    FileStore::open(dir.join(".rudder"))
        .unwrap()
        .create(&rec)
        .unwrap();
    for f in ["seed.json", "objects.yaml", "releases.yaml"] {
        std::fs::remove_file(dir.join(f)).unwrap();
    }
}

#[test]
fn diff_upgrade_after_install() {
    let dir = tempdir();
    write_chart(dir.path());
    std::fs::write(dir.path().join("v1.yaml"), "replicas: 3\n").unwrap();
    seed_install(dir.path(), &["v1.yaml"]);
    let before = tree(dir.path());

    // The same chart and values: no output, exit 0.
    let o = rudder(
        dir.path(),
        &[
            "diff",
            "upgrade",
            "web",
            "mychart",
            "-n",
            "prod",
            "-f",
            "v1.yaml",
            "--detailed-exitcode",
        ],
    );
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o), "");
    // The releases file agrees: a noop.
    std::fs::write(
        dir.path().join("r.yaml"),
        "releases:\n- name: web\n  namespace: prod\n  chart: mychart\n  createNamespace: false\n  values: [v1.yaml]\n",
    )
    .unwrap();
    let o = rudder(
        dir.path(),
        &["plan", "r.yaml", "-o", "json", "--detailed-exitcode"],
    );
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert_eq!(json_out(&o)["releases"][0]["action"], "noop");
    std::fs::remove_file(dir.path().join("r.yaml")).unwrap();

    // A changed value: helm-diff's "has changed" with the lines.
    let o = rudder(
        dir.path(),
        &[
            "diff",
            "upgrade",
            "web",
            "mychart",
            "-n",
            "prod",
            "-f",
            "v1.yaml",
            "--set",
            "color=green",
            "--detailed-exitcode",
        ],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("prod, web-config, ConfigMap has changed:\n"),
        "{out}"
    );
    assert!(out.contains("-   color: blue\n"), "{out}");
    assert!(out.contains("+   color: green\n"), "{out}");
    assert!(!out.contains("Deployment"), "{out}");
    // Drift: kubectl scales the Deployment.
    std::fs::write(
        dir.path().join("scale.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: prod\nspec:\n  replicas: 7\n",
    )
    .unwrap();
    let o = rudder(
        dir.path(),
        &["cluster", "apply", "-f", "scale.yaml", "--force-conflicts"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    std::fs::remove_file(dir.path().join("scale.yaml")).unwrap();
    let mid = tree(dir.path());
    let o = rudder(
        dir.path(),
        &[
            "diff",
            "upgrade",
            "web",
            "mychart",
            "-n",
            "prod",
            "-f",
            "v1.yaml",
            "--detailed-exitcode",
        ],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("prod, web, Deployment (apps) has changed:\n"),
        "{out}"
    );
    assert!(out.contains("-   replicas: 7\n"), "{out}");
    assert!(out.contains("+   replicas: 3\n"), "{out}");
    // Diffing wrote nothing.
    assert_same_tree("diff", &mid, &tree(dir.path()));
    assert_ne!(before, mid);
}

#[test]
fn no_ansi_escapes_when_piped() {
    let dir = tempdir();
    write_chart(dir.path());
    let file = lokomotive();
    let file = file.to_str().unwrap();
    for no_color in [None, Some("1")] {
        let run = |args: &[&str]| {
            let mut c = Command::new(env!("CARGO_BIN_EXE_rudder"));
            c.args(args).current_dir(dir.path()).env_remove("NO_COLOR");
            if let Some(v) = no_color {
                c.env("NO_COLOR", v);
            }
            c.output().unwrap()
        };
        for args in [
            &["plan", file][..],
            &["plan", file, "-o", "table"][..],
            &[
                "diff",
                "upgrade",
                "web",
                "mychart",
                "-n",
                "prod",
                "--allow-unreleased",
            ][..],
        ] {
            let o = run(args);
            assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
            assert!(!o.stdout.is_empty(), "{args:?}");
            assert!(!o.stdout.contains(&0x1b), "{args:?}: ANSI in stdout");
            assert!(!o.stderr.contains(&0x1b), "{args:?}: ANSI in stderr");
        }
    }
}

#[test]
fn bad_output_format_is_refused() {
    let dir = tempdir();
    let f = scenario("releases.yaml");
    assert_refused(
        dir.path(),
        &["plan", &f, "-o", "xml"],
        &["xml", "want table, json, yaml or html"],
    );
}
