//! The simulated cluster's injected faults and controllers, through the
//! binary: `RUDDER_SIM_FAIL_AT`, `RUDDER_SIM_LATENCY_MS` and the status
//! `rudder cluster get` shows.
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn rudder(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rudder"));
    cmd.current_dir(dir).args(args);
    for k in [
        "RUDDER_SIM_FAIL_AT",
        "RUDDER_SIM_LATENCY_MS",
        "RUDDER_SIM_READY_DELAY_MS",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.output().expect("run rudder")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let o = rudder(dir, args, env);
    assert!(
        o.status.success(),
        "{args:?}: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout)
}

const DEPLOYMENTS: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: stuck
  annotations:
    sim.rudder.io/ready: never
spec:
  selector: {matchLabels: {app: stuck}}
  template:
    metadata: {labels: {app: stuck}}
    spec:
      containers: [{name: stuck, image: "nginx:1.27"}]
"#;

fn setup() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("deploy.yaml"), DEPLOYMENTS).unwrap();
    d
}

#[test]
fn fail_at_fails_the_nth_write() {
    let d = setup();
    let o = rudder(
        d.path(),
        &["cluster", "apply", "-f", "deploy.yaml"],
        &[("RUDDER_SIM_FAIL_AT", "1")],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("injected failure (RUDDER_SIM_FAIL_AT=1)"),
        "{err}"
    );
    // The second object, a different write, went through.
    assert_eq!(
        text(&o.stdout),
        "deployment.apps/stuck serverside-applied\n"
    );
    // The count is per process: the next run's first write fails again.
    let o = rudder(
        d.path(),
        &["cluster", "apply", "-f", "deploy.yaml"],
        &[("RUDDER_SIM_FAIL_AT", "2")],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stdout).starts_with("deployment.apps/web serverside-applied"));
    assert!(text(&o.stderr).contains("RUDDER_SIM_FAIL_AT=2"));
    // Reads never count.
    ok(
        d.path(),
        &["cluster", "get", "deploy", "web", "-o", "json"],
        &[("RUDDER_SIM_FAIL_AT", "1")],
    );
    ok(d.path(), &["cluster", "apply", "-f", "deploy.yaml"], &[]);
}

#[test]
fn latency_slows_every_request() {
    let d = setup();
    ok(d.path(), &["cluster", "apply", "-f", "deploy.yaml"], &[]);
    let t = Instant::now();
    ok(
        d.path(),
        &["cluster", "get", "deploy", "web", "-o", "json"],
        &[("RUDDER_SIM_LATENCY_MS", "300")],
    );
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
}

#[test]
fn get_shows_the_controllers_status() {
    let d = setup();
    ok(d.path(), &["cluster", "apply", "-f", "deploy.yaml"], &[]);
    let get = |name: &str| -> Value {
        serde_json::from_str(&ok(
            d.path(),
            &["cluster", "get", "deploy", name, "-o", "json"],
            &[],
        ))
        .unwrap()
    };
    let web = get("web");
    assert_eq!(web["status"]["readyReplicas"], 3, "{web}");
    assert_eq!(web["status"]["availableReplicas"], 3);
    assert_eq!(web["status"]["observedGeneration"], 1);
    let stuck = get("stuck");
    assert_eq!(stuck["status"]["readyReplicas"], 0, "{stuck}");
    assert_eq!(stuck["status"]["unavailableReplicas"], 1);
    // Reading is not writing: the resourceVersion stays.
    assert_eq!(
        get("web")["metadata"]["resourceVersion"],
        web["metadata"]["resourceVersion"]
    );
    // With a default delay, a fresh object is not ready yet.
    let o = rudder(
        d.path(),
        &["cluster", "get", "deploy", "web", "-o", "json"],
        &[("RUDDER_SIM_READY_DELAY_MS", "3600000")],
    );
    let late: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(late["status"]["readyReplicas"], 0, "{late}");
}
