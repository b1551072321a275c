//! Bad input and misuse of the write commands, end to end through the
//! binary on the embedded setup (file store, simulated cluster) in a fresh
//! working directory: a saved plan edited by hand, a plan for another
//! cluster or another store, a stale plan, `rollback` to a revision that
//! does not exist, `uninstall` of an unknown release.
//!
//! Each must exit 1 with one clear `Error:` line (Helm's wording where Helm
//! has the command) and change nothing, which is checked through what
//! users see: `rudder history -o json`, `rudder status`,
//! `rudder cluster list -A -o json` and `rudder cluster get`.
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn rudder(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rudder"))
        .args(args)
        .current_dir(cwd)
        .env("TZ", "UTC")
        .env_remove("HELM_DRIVER")
        .env_remove("KUBECONFIG")
        .env_remove("RUDDER_SIM_FAIL_AT")
        .env_remove("RUDDER_CRASH_AT")
        .env_remove("RUDDER_SIM_LATENCY_MS")
        .output()
        .expect("run rudder")
}

fn ok(cwd: &Path, args: &[&str]) -> String {
    let o = rudder(cwd, args);
    assert!(
        o.status.success(),
        "rudder {args:?} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

const CHART_YAML: &str = "apiVersion: v2\nname: web\nversion: 0.1.0\n";
const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  color: {{ .Values.color | quote }}\n";
const DEPLOY: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n";

/// A working directory with the chart `web` and releases files
/// `blue.yaml`, `green.yaml` (release `web` in `prod`).
fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("web");
    std::fs::create_dir_all(c.join("templates")).unwrap();
    std::fs::write(c.join("Chart.yaml"), CHART_YAML).unwrap();
    std::fs::write(c.join("values.yaml"), "color: blue\n").unwrap();
    std::fs::write(c.join("templates/cm.yaml"), CM).unwrap();
    std::fs::write(c.join("templates/deploy.yaml"), DEPLOY).unwrap();
    for color in ["blue", "green", "red"] {
        std::fs::write(
            dir.path().join(format!("{color}.yaml")),
            format!("color: {color}\n"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join(format!("rel-{color}.yaml")),
            format!(
                "releases:\n- name: web\n  namespace: prod\n  chart: web\n  createNamespace: true\n  values: [{color}.yaml]\n"
            ),
        )
        .unwrap();
    }
    dir
}

/// What a user can see of the state: the history and status of `web` in
/// `prod` (and of `ghost`, which never exists), and every live object of
/// the default cluster, with every extra cluster flag given.
fn observe(cwd: &Path, extra: &[&str]) -> String {
    let mut out = String::new();
    for (name, args) in [
        (
            "history web",
            vec!["history", "web", "-n", "prod", "-o", "json"],
        ),
        (
            "status web",
            vec!["status", "web", "-n", "prod", "-o", "json"],
        ),
        (
            "history ghost",
            vec!["history", "ghost", "-n", "prod", "-o", "json"],
        ),
        ("cluster list", vec!["cluster", "list", "-A", "-o", "json"]),
        (
            "cluster get",
            vec![
                "cluster",
                "get",
                "configmap",
                "web-config",
                "-n",
                "prod",
                "-o",
                "json",
            ],
        ),
    ] {
        let mut a = args.clone();
        a.extend_from_slice(extra);
        let o = rudder(cwd, &a);
        out.push_str(&format!(
            "## {name}: exit {:?}\n{}\n{}\n",
            o.status.code(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    out
}

/// Runs a command that must be refused: exit 1, one `Error:` line, the
/// last on stderr, containing every one of `wants`, and nothing changed as
/// `observe` sees it (with each `views` set of flags). Returns the error line.
fn refused(cwd: &Path, args: &[&str], wants: &[&str], views: &[&[&str]]) -> String {
    let before: Vec<String> = views.iter().map(|v| observe(cwd, v)).collect();
    let o = rudder(cwd, args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{args:?}: exit code; stderr:\n{err}"
    );
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("Error")).collect();
    assert_eq!(errors.len(), 1, "{args:?}: want one error line:\n{err}");
    let line = err.lines().last().unwrap_or("").to_string();
    assert_eq!(
        errors[0], line,
        "{args:?}: the error is not the last line:\n{err}"
    );
    assert!(line.starts_with("Error: "), "{args:?}: {line}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    for w in wants {
        assert!(line.contains(w), "{args:?}: {line:?} lacks {w:?}");
    }
    for (v, b) in views.iter().zip(&before) {
        assert_eq!(
            &observe(cwd, v),
            b,
            "{args:?} changed the state seen with {v:?}"
        );
    }
    line
}

fn history(cwd: &Path) -> Vec<(u64, String, String)> {
    let v: Value =
        serde_json::from_str(&ok(cwd, &["history", "web", "-n", "prod", "-o", "json"])).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["revision"].as_u64().unwrap(),
                r["status"].as_str().unwrap().to_string(),
                r["description"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Installs `web` at blue through `apply`, then saves a plan to green.
fn installed_with_saved_plan(cwd: &Path) {
    ok(cwd, &["apply", "rel-blue.yaml"]);
    assert_eq!(history(cwd).len(), 1);
    ok(cwd, &["plan", "rel-green.yaml", "--save", "plan.json"]);
}

#[test]
fn a_saved_plan_edited_by_hand_is_refused() {
    let dir = setup();
    let d = dir.path();
    installed_with_saved_plan(d);
    let text = std::fs::read_to_string(d.join("plan.json")).unwrap();
    let plan: Value = serde_json::from_str(&text).unwrap();
    let id = plan["id"].as_str().unwrap().to_string();
    let cm_index = plan["releases"][0]["objects"]
        .as_array()
        .unwrap()
        .iter()
        .position(|o| o["key"]["kind"] == "ConfigMap")
        .unwrap();
    type Edit = Box<dyn Fn(&mut Value)>;
    let edits: Vec<(&str, Edit)> = vec![
        // A changed value in an object to apply.
        (
            "object",
            Box::new(move |v: &mut Value| {
                v["releases"][0]["objects"][cm_index]["desired"]["data"]["color"] =
                    Value::from("purple");
            }),
        ),
        // A changed option.
        (
            "timeout",
            Box::new(|v: &mut Value| {
                v["releases"][0]["options"]["timeout"] = Value::from("1s");
            }),
        ),
        // The record to write (bound by its digest).
        (
            "record",
            Box::new(|v: &mut Value| {
                v["releases"][0]["record"]["config"] = serde_json::json!({"color": "purple"});
            }),
        ),
        // A precondition loosened by hand.
        (
            "precondition",
            Box::new(|v: &mut Value| {
                v["releases"][0]["preconditions"]["objects"] = serde_json::json!([]);
            }),
        ),
        // Another id.
        (
            "id",
            Box::new(|v: &mut Value| {
                v["id"] = Value::from("sha256:0000");
            }),
        ),
    ];
    for (what, edit) in &edits {
        let mut v = plan.clone();
        edit(&mut v);
        assert_ne!(v, plan, "{what}: the edit changed nothing");
        let file = format!("edited-{what}.json");
        std::fs::write(d.join(&file), serde_json::to_string_pretty(&v).unwrap()).unwrap();
        let line = refused(d, &["apply", "--plan", &file], &["edited"], &[&[]]);
        if *what != "id" && *what != "record" {
            assert!(line.contains(&id), "{what}: {line}");
        }
    }

    // Not JSON at all, and a missing file: one line naming the file.
    std::fs::write(d.join("cut.json"), &text[..text.len() / 2]).unwrap();
    refused(
        d,
        &["apply", "--plan", "cut.json"],
        &["cut.json", "not a rudder plan"],
        &[&[]],
    );
    refused(
        d,
        &["apply", "--plan", "absent.json"],
        &["absent.json"],
        &[&[]],
    );

    // The untouched plan still applies.
    ok(d, &["apply", "--plan", "plan.json"]);
    let h = history(d);
    assert_eq!(h.len(), 2, "{h:?}");
    assert_eq!(h[1].1, "deployed");
}

#[test]
fn a_plan_for_another_cluster_or_store_is_refused() {
    let dir = setup();
    let d = dir.path();
    installed_with_saved_plan(d);
    // Another simulated cluster (its own directory, so its own identity),
    // with one object written so that its state is on disk (an empty,
    // never-written one makes up its default namespaces, with the current
    // time as creationTimestamp, on every read).
    std::fs::write(
        d.join("other.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n  namespace: default\n",
    )
    .unwrap();
    ok(
        d,
        &[
            "cluster",
            "apply",
            "-f",
            "other.yaml",
            "--cluster",
            "sim:other-cluster",
        ],
    );
    let line = refused(
        d,
        &[
            "apply",
            "--plan",
            "plan.json",
            "--cluster",
            "sim:other-cluster",
        ],
        &["the plan was made for cluster"],
        &[&[], &["--cluster", "sim:other-cluster"]],
    );
    assert!(line.contains(" not sim:"), "{line}");
    // Another store.
    std::fs::create_dir_all(d.join("other-store")).unwrap();
    let line = refused(
        d,
        &[
            "apply",
            "--plan",
            "plan.json",
            "--store",
            "file:other-store",
        ],
        &["the plan was made for store file:.rudder, not file:other-store"],
        &[&[], &["--store", "file:other-store"]],
    );
    assert!(!line.is_empty());
}

#[test]
fn a_stale_plan_is_refused() {
    let dir = setup();
    let d = dir.path();
    installed_with_saved_plan(d);
    // The store changed: another revision was written after planning.
    ok(
        d,
        &["upgrade", "web", "web", "-n", "prod", "-f", "red.yaml"],
    );
    assert_eq!(history(d).len(), 2);
    refused(
        d,
        &["apply", "--plan", "plan.json"],
        &["the plan is stale, nothing was written", "revision"],
        &[&[]],
    );

    // The cluster changed: a live object was edited after planning.
    ok(d, &["plan", "rel-green.yaml", "--save", "plan2.json"]);
    let live = ok(
        d,
        &[
            "cluster",
            "get",
            "configmap",
            "web-config",
            "-n",
            "prod",
            "-o",
            "json",
        ],
    );
    let live: Value = serde_json::from_str(&live).unwrap();
    assert_eq!(live["data"]["color"], "red");
    // Only the new field, so kubectl owns nothing rudder applies.
    let cm = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "web-config", "namespace": "prod"},
        "data": {"edited": "by hand"},
    });
    std::fs::write(d.join("cm.json"), serde_json::to_string(&cm).unwrap()).unwrap();
    ok(
        d,
        &[
            "cluster",
            "apply",
            "-f",
            "cm.json",
            "--field-manager",
            "kubectl",
            "--force-conflicts",
        ],
    );
    refused(
        d,
        &["apply", "--plan", "plan2.json"],
        &["the plan is stale, nothing was written", "web-config"],
        &[&[]],
    );

    // A plan that was applied once is stale the second time.
    ok(d, &["plan", "rel-green.yaml", "--save", "plan3.json"]);
    ok(d, &["apply", "--plan", "plan3.json"]);
    refused(
        d,
        &["apply", "--plan", "plan3.json"],
        &["the plan is stale, nothing was written"],
        &[&[]],
    );
}

#[test]
fn rollback_to_a_missing_revision_is_refused() {
    let dir = setup();
    let d = dir.path();
    ok(
        d,
        &["install", "web", "web", "-n", "prod", "--create-namespace"],
    );
    ok(
        d,
        &["upgrade", "web", "web", "-n", "prod", "-f", "green.yaml"],
    );
    // helm v3.17.2 and v4.1.4: `Error: release has no 9 version`.
    let line = refused(d, &["rollback", "web", "9", "-n", "prod"], &[], &[&[]]);
    assert_eq!(line, "Error: release has no 9 version");
    // An unknown release, with and without a revision (Helm: `release: not found`).
    let line = refused(d, &["rollback", "ghost", "1", "-n", "prod"], &[], &[&[]]);
    assert_eq!(line, "Error: release: not found");
    let line = refused(d, &["rollback", "ghost", "-n", "prod"], &[], &[&[]]);
    assert_eq!(line, "Error: release: not found");
    // The release in another namespace is not this one.
    let line = refused(d, &["rollback", "web", "1", "-n", "staging"], &[], &[&[]]);
    assert_eq!(line, "Error: release: not found");
    // Revision 1 exists: that rollback works.
    ok(d, &["rollback", "web", "1", "-n", "prod"]);
    let h = history(d);
    assert_eq!(
        h.last().unwrap(),
        &(3, "deployed".into(), "Rollback to 1".into())
    );
}

#[test]
fn uninstall_of_an_unknown_release_is_refused() {
    let dir = setup();
    let d = dir.path();
    ok(
        d,
        &["install", "web", "web", "-n", "prod", "--create-namespace"],
    );
    let line = refused(d, &["uninstall", "ghost", "-n", "prod"], &[], &[&[]]);
    assert_eq!(
        line,
        "Error: uninstall: Release not loaded: ghost: release: not found"
    );
    // In another namespace.
    let line = refused(d, &["uninstall", "web", "-n", "staging"], &[], &[&[]]);
    assert_eq!(
        line,
        "Error: uninstall: Release not loaded: web: release: not found"
    );
    // Several names with one unknown: Helm uninstalls the ones before it and
    // stops; with the unknown one first nothing is touched.
    let line = refused(d, &["uninstall", "ghost", "web", "-n", "prod"], &[], &[&[]]);
    assert_eq!(
        line,
        "Error: uninstall: Release not loaded: ghost: release: not found"
    );
    // --ignore-not-found: exit 0 and nothing changed.
    let before = observe(d, &[]);
    ok(
        d,
        &["uninstall", "ghost", "-n", "prod", "--ignore-not-found"],
    );
    assert_eq!(observe(d, &[]), before);
}
