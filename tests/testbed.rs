//! The Kubernetes test bed (`scripts/testbed`): real controllers and scheduler, pods simulated
//! by kwok. These tests check that workloads really roll out, that the behaviour labels work,
//! that a restarted bed keeps its objects, and that real Helm 3 and 4 can install, wait and roll
//! back on it.
//!
//! Without Go (or when the build fails) every test prints `SKIPPED: ...` and passes, unless
//! `RUDDER_REQUIRE_ORACLE=1`, which makes them fail.

mod common;
mod testbed_common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use testbed_common::{testbed, Testbed};

const WAIT: &str = "--timeout=30s";

fn out_text(out: &Output) -> String {
    format!(
        "exit {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn deployment(name: &str, behavior: Option<&str>, replicas: u32) -> String {
    let label = behavior
        .map(|b| format!("\n        testbed.kwok.io/behavior: {b}"))
        .unwrap_or_default();
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: {replicas}
  progressDeadlineSeconds: 5
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels:
        app: {name}{label}
    spec:
      containers:
      - name: main
        image: registry.invalid/testbed/pause:1
"#
    )
}

/// Polls `kubectl get -o jsonpath` until `pred` holds; returns the last value.
fn poll_jsonpath(
    tb: &Testbed,
    ns: &str,
    what: &str,
    path: &str,
    secs: u64,
    pred: impl Fn(&str) -> bool,
) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let out = tb
            .kubectl()
            .args(["get", "-n", ns, what, "-o", &format!("jsonpath={path}")])
            .output()
            .unwrap();
        let v = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() && pred(&v) {
            return v;
        }
        if Instant::now() > deadline {
            panic!("{what} {path}: condition not met within {secs} s, last value {v:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn version_is_real_and_nodes_are_ready() {
    let Some(tb) = testbed() else { return };
    let v = tb.kubectl_ok(&["version", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&v).unwrap();
    let server = v["serverVersion"]["gitVersion"].as_str().unwrap();
    assert!(
        server.starts_with("v1.") && !server.contains("master"),
        "{server}"
    );
    assert_eq!(server, v["clientVersion"]["gitVersion"].as_str().unwrap());
    let nodes = tb.kubectl_ok(&[
        "get",
        "nodes",
        "-o",
        r#"jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status};{end}"#,
    ]);
    for i in 0..3 {
        assert!(nodes.contains(&format!("kwok-node-{i}=True;")), "{nodes}");
    }
    // The token in the kubeconfig works too.
    let who = tb.kubectl_ok(&[
        "--context",
        "testbed-token",
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ]);
    assert_eq!(who, "testbed-admin");
}

#[test]
fn deployment_rolls_out_and_is_deleted() {
    let Some(tb) = testbed() else { return };
    let ns = tb.create_namespace("deploy");
    tb.apply(&ns, &deployment("web", None, 3));
    tb.kubectl_ok(&["rollout", "status", "-n", &ns, "deployment/web", WAIT]);
    tb.kubectl_ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Available",
        "deployment/web",
        WAIT,
    ]);
    let ready = tb.kubectl_ok(&[
        "get",
        "-n",
        &ns,
        "deployment/web",
        "-o",
        "jsonpath={.status.readyReplicas}",
    ]);
    assert_eq!(ready, "3");
    // Pods are spread over the fake nodes by the real scheduler and have pod IPs from kwok.
    let ips = tb.kubectl_ok(&[
        "get",
        "pods",
        "-n",
        &ns,
        "-o",
        "jsonpath={.items[*].status.podIP}",
    ]);
    assert_eq!(ips.split_whitespace().count(), 3, "{ips}");
    tb.kubectl_ok(&["delete", "-n", &ns, "deployment/web", "--wait=true", WAIT]);
    poll_jsonpath(tb, &ns, "pods", "{.items[*].metadata.name}", 30, |v| {
        v.trim().is_empty()
    });
    tb.kubectl_ok(&["delete", "namespace", &ns, "--wait=false"]);
}

#[test]
fn never_ready_deployment_is_not_available() {
    let Some(tb) = testbed() else { return };
    let ns = tb.create_namespace("never-ready");
    tb.apply(&ns, &deployment("stuck", Some("never-ready"), 1));
    let out = tb
        .kubectl()
        .args(["rollout", "status", "-n", &ns, "deployment/stuck", WAIT])
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "rollout should fail: {}",
        out_text(&out)
    );
    let reason = poll_jsonpath(
        tb,
        &ns,
        "deployment/stuck",
        r#"{.status.conditions[?(@.type=="Progressing")].reason}"#,
        30,
        |v| v == "ProgressDeadlineExceeded",
    );
    assert_eq!(reason, "ProgressDeadlineExceeded");
    let available = tb.kubectl_ok(&[
        "get",
        "-n",
        &ns,
        "deployment/stuck",
        "-o",
        r#"jsonpath={.status.conditions[?(@.type=="Available")].status}"#,
    ]);
    assert_eq!(available, "False");
    // The pod exists and runs, but is not Ready.
    let ready = tb.kubectl_ok(&[
        "get",
        "pods",
        "-n",
        &ns,
        "-o",
        r#"jsonpath={.items[*].status.phase}/{.items[*].status.conditions[?(@.type=="Ready")].status}"#,
    ]);
    assert_eq!(ready, "Running/False");
    tb.kubectl_ok(&["delete", "namespace", &ns, "--wait=false"]);
}

#[test]
fn daemonset_statefulset_and_job_complete() {
    let Some(tb) = testbed() else { return };
    let ns = tb.create_namespace("workloads");
    tb.apply(
        &ns,
        r#"apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: main, image: registry.invalid/agent:1}]
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: main, image: registry.invalid/db:1}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: ok}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: registry.invalid/job:1}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: broken}
spec:
  backoffLimit: 0
  template:
    metadata: {labels: {testbed.kwok.io/behavior: fail}}
    spec:
      restartPolicy: Never
      containers: [{name: main, image: registry.invalid/job:1}]
---
apiVersion: v1
kind: Pod
metadata:
  name: crashy
  labels: {testbed.kwok.io/behavior: crashloop}
spec:
  containers: [{name: main, image: registry.invalid/crash:1}]
"#,
    );
    tb.kubectl_ok(&["rollout", "status", "-n", &ns, "daemonset/agent", WAIT]);
    let ds = tb.kubectl_ok(&[
        "get",
        "-n",
        &ns,
        "daemonset/agent",
        "-o",
        "jsonpath={.status.numberReady}",
    ]);
    assert_eq!(ds, "3", "one DaemonSet pod per kwok node");
    tb.kubectl_ok(&["rollout", "status", "-n", &ns, "statefulset/db", WAIT]);
    let sts = tb.kubectl_ok(&[
        "get",
        "-n",
        &ns,
        "statefulset/db",
        "-o",
        "jsonpath={.status.readyReplicas}",
    ]);
    assert_eq!(sts, "2");
    tb.kubectl_ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Complete",
        "job/ok",
        WAIT,
    ]);
    tb.kubectl_ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Failed",
        "job/broken",
        WAIT,
    ]);
    let waiting = poll_jsonpath(
        tb,
        &ns,
        "pod/crashy",
        "{.status.containerStatuses[0].state.waiting.reason}",
        30,
        |v| !v.is_empty(),
    );
    assert_eq!(waiting, "CrashLoopBackOff");
    let restarts = tb.kubectl_ok(&[
        "get",
        "-n",
        &ns,
        "pod/crashy",
        "-o",
        r#"jsonpath={.status.containerStatuses[0].restartCount} {.status.phase} {.status.conditions[?(@.type=="Ready")].status}"#,
    ]);
    let parts: Vec<&str> = restarts.split(' ').collect();
    assert!(parts[0].parse::<u32>().unwrap() > 0, "{restarts}");
    assert_eq!(&parts[1..], ["Running", "False"], "{restarts}");
    tb.kubectl_ok(&["delete", "namespace", &ns, "--wait=false"]);
}

/// `down` then `up` keeps the data and the address (a bed of its own, so the shared one is not
/// disturbed while other tests run).
#[test]
fn restart_keeps_objects() {
    if testbed_common::build().is_err() && testbed().is_none() {
        return;
    }
    let dir = testbed_common::shared_dir().with_extension("restart");
    let tb = match Testbed::start(&dir) {
        Ok(tb) => tb,
        Err(what) => {
            let _: Option<()> = common::missing(&what);
            return;
        }
    };
    let kubeconfig_before = std::fs::read_to_string(&tb.kubeconfig).unwrap();
    let cm = format!("kept-{}", std::process::id());
    // A leftover from an earlier run is fine.
    let _ = tb
        .kubectl()
        .args(["delete", "configmap", &cm, "-n", "default"])
        .output();
    tb.kubectl_ok(&[
        "create",
        "configmap",
        &cm,
        "-n",
        "default",
        "--from-literal=k=v",
    ]);
    tb.down().unwrap();
    assert!(
        tb.kubectl()
            .args(["get", "configmap", &cm, "-n", "default"])
            .output()
            .unwrap()
            .status
            .code()
            != Some(0),
        "apiserver still answers after down"
    );
    assert_eq!(
        std::fs::read_dir(dir.join("pids")).unwrap().count(),
        0,
        "pid files removed"
    );
    // down is idempotent
    tb.down().unwrap();
    tb.up().unwrap();
    assert_eq!(
        std::fs::read_to_string(&tb.kubeconfig).unwrap(),
        kubeconfig_before
    );
    let v = tb.kubectl_ok(&[
        "get",
        "configmap",
        &cm,
        "-n",
        "default",
        "-o",
        "jsonpath={.data.k}",
    ]);
    assert_eq!(v, "v");
    // up while running is a quick no-op
    let t = Instant::now();
    tb.up().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    tb.kubectl_ok(&["delete", "configmap", &cm, "-n", "default"]);
    tb.down().unwrap();
}

// ------------------------------------------------------------------ real Helm on the bed

fn charts() -> Option<PathBuf> {
    // Relative to the project, as the corpus is used everywhere else; never copied.
    let rel = Path::new("../shared/conformance/charts");
    let abs = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    if abs.join("INDEX.md").is_file() {
        Some(rel.to_path_buf())
    } else {
        common::missing("../shared/conformance/charts")
    }
}

struct HelmRun<'a> {
    tb: &'a Testbed,
    bin: PathBuf,
    home: tempfile::TempDir,
    ns: String,
}

impl HelmRun<'_> {
    fn run(&self, args: &[&str]) -> Output {
        common::helm_command(&self.bin, self.home.path())
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("KUBECONFIG", &self.tb.kubeconfig)
            .arg("--namespace")
            .arg(&self.ns)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    }
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "helm {}: {}",
            args.join(" "),
            out_text(&out)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

fn helm_on_testbed(major: u8) {
    let Some(tb) = testbed() else { return };
    let Some(charts) = charts() else { return };
    let Some(bin) = common::helm(major) else {
        return;
    };
    let h = HelmRun {
        tb,
        bin,
        home: tempfile::tempdir().unwrap(),
        ns: tb.fresh_namespace(&format!("helm{major}")),
    };
    let chart = |id: &str| charts.join(id).join("chart").to_str().unwrap().to_owned();
    // Release names differ per Helm version: the charts' ClusterRoles are named after them, and
    // the Helm 3 and Helm 4 tests run at the same time on the same bed.
    let (ksm, nodeexp, am) = (
        format!("ksm-h{major}"),
        format!("nodeexp-h{major}"),
        format!("am-h{major}"),
    );
    // A Deployment, a DaemonSet and a StatefulSet chart.
    let installs: [(&str, &str, &[&str]); 3] = [
        (&ksm, "prom-kube-state-metrics", &[]),
        // Not on the host network: two of these (Helm 3 and 4 tests) would compete for the host port.
        (
            &nodeexp,
            "prom-node-exporter",
            &["--set", "hostNetwork=false"],
        ),
        (
            &am,
            "prom-alertmanager",
            &["--set", "persistence.enabled=false"],
        ),
    ];
    for (i, (rel, id, extra)) in installs.iter().enumerate() {
        let c = chart(id);
        let mut args = vec!["install", rel, c.as_str(), "--wait", "--timeout", "60s"];
        if i == 0 {
            // The namespace does not exist yet.
            args.push("--create-namespace");
        }
        args.extend_from_slice(extra);
        h.ok(&args);
    }
    let ds = tb.kubectl_ok(&[
        "get",
        "daemonset",
        "-n",
        &h.ns,
        "-o",
        "jsonpath={.items[*].status.numberReady}",
    ]);
    assert_eq!(ds, "3");
    let sts = tb.kubectl_ok(&[
        "get",
        "statefulset",
        "-n",
        &h.ns,
        "-o",
        "jsonpath={.items[*].status.readyReplicas}",
    ]);
    assert_eq!(sts, "1");

    // An upgrade whose pods never become Ready fails and is rolled back.
    let c = chart("prom-kube-state-metrics");
    let atomic = if major >= 4 {
        "--rollback-on-failure"
    } else {
        "--atomic"
    };
    let out = h.run(&[
        "upgrade",
        &ksm,
        &c,
        atomic,
        "--timeout",
        "60s",
        "--set",
        r"podLabels.testbed\.kwok\.io/behavior=never-ready",
    ]);
    assert!(
        !out.status.success(),
        "upgrade should fail: {}",
        out_text(&out)
    );
    let history = h.ok(&["history", &ksm, "-o", "json"]);
    let history: serde_json::Value = serde_json::from_str(&history).unwrap();
    let revs = history.as_array().unwrap();
    assert_eq!(revs.len(), 3, "{history}");
    assert_eq!(revs[1]["status"], "failed", "{history}");
    assert_eq!(revs[2]["status"], "deployed", "{history}");
    assert!(
        revs[2]["description"]
            .as_str()
            .unwrap()
            .contains("Rollback to 1"),
        "{history}"
    );
    // The rolled-back Deployment has no behaviour label and is Available again.
    tb.kubectl_ok(&[
        "rollout",
        "status",
        "-n",
        &h.ns,
        &format!("deployment/{ksm}-kube-state-metrics"),
        WAIT,
    ]);
    for (rel, _, _) in installs {
        h.ok(&["uninstall", rel, "--wait", "--timeout", "60s"]);
    }
    tb.kubectl_ok(&["delete", "namespace", &h.ns, "--wait=false"]);
}

#[test]
fn helm3_install_wait_and_atomic_rollback() {
    helm_on_testbed(3);
}

#[test]
fn helm4_install_wait_and_atomic_rollback() {
    helm_on_testbed(4);
}
