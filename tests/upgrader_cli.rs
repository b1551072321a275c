//! The `rudder-upgrader` binary: the demo's output (timings masked), and
//! bad input rejected before anything is written.
mod common;

// The binary's demo, for its config writer and targets.
#[allow(dead_code)]
#[path = "../src/bin/rudder-upgrader/demo.rs"]
mod demo;

use std::path::Path;
use std::process::{Command, Output};

fn upgrader(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rudder-upgrader"))
        .current_dir(dir)
        .env_remove("KUBECONFIG")
        .env_remove("HELM_DRIVER")
        .env_remove("RUDDER_SIM_READY_DELAY_MS")
        .args(args)
        .output()
        .expect("runs")
}

fn mask(text: &str, dir: &Path) -> String {
    let t = text.replace(&dir.display().to_string(), "$DIR");
    let date =
        regex::Regex::new(r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}").unwrap();
    let t = date.replace_all(&t, "<TIME>");
    // History columns are padded to the longest cell: collapse runs of spaces.
    let spaces = regex::Regex::new(r" {2,}").unwrap();
    spaces.replace_all(&t, "  ").into_owned()
}

#[test]
fn demo_runs_the_whole_story() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("demo");
    let out = upgrader(d.path(), &["demo", dir.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    insta::assert_snapshot!("demo", mask(&stdout, &dir));
    // The demo's store and cluster are ordinary ones: the CLI reads them.
    let store = format!("file:{}", dir.join("store").display());
    let cluster = format!("sim:{}", dir.join("cluster").display());
    let h = upgrader(
        d.path(),
        &[
            "--store",
            &store,
            "--cluster",
            &cluster,
            "history",
            "calico",
        ],
    );
    assert!(h.status.success(), "{}", String::from_utf8_lossy(&h.stderr));
    assert!(String::from_utf8_lossy(&h.stdout).contains("Install complete"));
}

fn fresh(d: &Path) -> (String, String) {
    (
        format!("file:{}", d.join("store").display()),
        format!("sim:{}", d.join("cluster").display()),
    )
}

fn assert_nothing_written(d: &Path) {
    assert!(!d.join("store").exists(), "the store was written");
    assert!(!d.join("cluster").exists(), "the cluster was written");
}

#[test]
fn bad_input_fails_before_any_write() {
    let d = tempfile::tempdir().unwrap();
    let cfg = demo::write_config(d.path(), "x", "v1.21.4", false).unwrap();
    let text = std::fs::read_to_string(&cfg).unwrap();
    let (store, cluster) = fresh(d.path());
    let apply = |extra: &[&str]| {
        let mut a = vec![
            "--store",
            &store,
            "--cluster",
            &cluster,
            "--config",
            cfg.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        a.push("apply");
        a.push("--confirm");
        let o = upgrader(d.path(), &a);
        assert!(!o.status.success());
        String::from_utf8_lossy(&o.stderr).into_owned()
    };

    std::fs::write(&cfg, text.replace("controllers: 1", "controllers: [1]")).unwrap();
    let e = apply(&[]);
    assert!(
        e.contains("config-x.yaml:3:") && e.contains("controllers"),
        "{e}"
    );
    assert_nothing_written(d.path());

    std::fs::write(
        &cfg,
        text.replace(
            "components: [node-local-dns, metrics-server]",
            "components: [dashboard]",
        ),
    )
    .unwrap();
    let e = apply(&[]);
    assert!(e.contains(":10:") && e.contains("dashboard"), "{e}");
    assert_nothing_written(d.path());

    std::fs::write(&cfg, &text).unwrap();
    std::fs::remove_file(d.path().join("certs/ca.key")).unwrap();
    let e = apply(&[]);
    assert!(
        e.contains("certificates.caKey") && e.contains("ca.key"),
        "{e}"
    );
    assert_nothing_written(d.path());
    demo::write_config(d.path(), "x", "v1.21.4", false).unwrap();

    let e = apply(&["--timeout", "soon"]);
    assert!(e.contains("--timeout"), "{e}");
    assert_nothing_written(d.path());
    let e = apply(&["--timeout=-5s"]);
    assert!(
        e.contains("invalid argument \"-5s\" for \"--timeout\" flag: a negative duration"),
        "{e}"
    );
    assert_nothing_written(d.path());

    let o = upgrader(
        d.path(),
        &[
            "--store",
            &store,
            "--cluster",
            &cluster,
            "history",
            "grafana",
        ],
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown component \"grafana\""));
    assert_nothing_written(d.path());

    // A cluster that is not reachable.
    let kc = d.path().join("kubeconfig");
    std::fs::write(
        &kc,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: t\n",
    )
    .unwrap();
    let o = upgrader(
        d.path(),
        &[
            "--store",
            &store,
            "--kubeconfig",
            kc.to_str().unwrap(),
            "--config",
            cfg.to_str().unwrap(),
            "apply",
            "--confirm",
        ],
    );
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("not reachable") || e.contains("127.0.0.1:1"),
        "{e}"
    );
    assert_nothing_written(d.path());
}

#[test]
fn plan_json_and_dry_run_write_nothing() {
    let d = tempfile::tempdir().unwrap();
    let cfg = demo::write_config(d.path(), "p", "v1.21.4", false).unwrap();
    let (store, cluster) = fresh(d.path());
    let base = [
        "--store",
        &store,
        "--cluster",
        &cluster,
        "--config",
        cfg.to_str().unwrap(),
    ];
    let mut a = base.to_vec();
    a.extend(["plan", "-o", "json"]);
    let o = upgrader(d.path(), &a);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = plan["releases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "bootstrap-secrets",
            "pod-checkpointer",
            "kube-apiserver",
            "kubernetes",
            "calico",
            "node-local-dns",
            "metrics-server"
        ]
    );
    let mut a = base.to_vec();
    a.extend(["--dry-run", "apply"]);
    let o = upgrader(d.path(), &a);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("(dry run: nothing written)"));
    assert!(!d.path().join("store").exists());
}

/// `apply` on a terminal (util-linux `script` gives it one): it asks for
/// `yes` first, and each feedback line shows the wait's progress in place
/// (`\r`, erase line) until its `Done.`.
fn on_a_terminal(d: &Path, args: &[&str], answer: &str) -> (bool, String) {
    use std::io::{Read, Write};
    use std::process::Stdio;
    let mut line = vec![env!("CARGO_BIN_EXE_rudder-upgrader").to_string()];
    line.extend(args.iter().map(|a| format!("'{a}'")));
    let mut child = Command::new("script")
        .args(["-qefc", &line.join(" "), "/dev/null"])
        .current_dir(d)
        .env_remove("KUBECONFIG")
        .env_remove("HELM_DRIVER")
        .env("RUDDER_SIM_READY_DELAY_MS", "800")
        .env("TERM", "xterm")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs script");
    // Keep stdin open until the command is done: script ends the session
    // on end of input.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(answer.as_bytes()).unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        stdout.read_to_end(&mut s).unwrap();
        s
    });
    let status = child.wait().unwrap();
    drop(stdin);
    let out = String::from_utf8_lossy(&reader.join().unwrap()).into_owned();
    (status.success(), out)
}

#[test]
fn apply_on_a_terminal_asks_first_and_shows_progress_in_place() {
    if Command::new("script").arg("--version").output().is_err() {
        common::missing::<()>("util-linux `script` (a terminal for the test)");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let cfg = demo::write_config(d.path(), "t", "v1.21.4", false).unwrap();
    let (store, cluster) = fresh(d.path());
    let args = [
        "--store",
        &store,
        "--cluster",
        &cluster,
        "--config",
        cfg.to_str().unwrap(),
        "--timeout",
        "20s",
        "apply",
    ];
    let prompt = "Do you want to proceed with cluster apply? [type \"yes\" to continue]: ";

    let (ok, out) = on_a_terminal(d.path(), &args, "no\n");
    assert!(ok, "{out}");
    assert!(out.contains(prompt), "{out}");
    assert!(out.contains("Cluster apply cancelled"), "{out}");
    assert!(!out.contains("Ensuring that cluster"), "{out}");
    assert!(
        !d.path().join("cluster").exists(),
        "the cancelled apply wrote"
    );

    let (ok, out) = on_a_terminal(d.path(), &args, "yes\n");
    assert!(ok, "{out}");
    assert!(out.contains(prompt), "{out}");
    let start = "Controlplane component 'kube-apiserver' is missing, reinstalling... ";
    let line = out
        .split("\r\n")
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no kube-apiserver line in {out:?}"));
    // The progress is redrawn in place after the line's start, then the result.
    let redraws: Vec<&str> = line.split("\r\x1b[2K").collect();
    assert!(redraws.len() >= 3, "no progress shown in place: {line:?}");
    assert!(
        redraws.iter().any(|r| r.starts_with(start)
            && r.contains("[waiting for Deployment kube-system/kube-apiserver")),
        "{line:?}"
    );
    assert_eq!(redraws.last().unwrap(), &format!("{start}Done."));
    assert!(out.contains("Successfully installed component 'metrics-server'!"));
}
