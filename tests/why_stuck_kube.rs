//! Why a rollout is stuck, on a real API server (the test bed): six
//! scenarios run by `rudder apply -o json`, whose progress events must
//! carry the cluster's reason while the wait goes on, and whose report must
//! carry it when the wait fails; `--fail-fast` ends the unschedulable and
//! crash-loop ones long before their deadline, with the atomic rollback;
//! and `rudder-upgrader` on a bed whose nodes are not labelled for the
//! control plane warns in its plan and names the node selector when
//! kube-apiserver's wait fails.
//!
//! The times printed (how long after the cluster's event, or after the
//! write, the reason first reached the progress stream) are measurements
//! for people, not assertions.
#[path = "release_common/mod.rs"]
mod release_common;
mod testbed_common;
// The upgrader binary's demo, for its config writer.
#[allow(dead_code)]
#[path = "../src/bin/rudder-upgrader/demo.rs"]
mod demo;

use release_common::common;
use serde_json::Value;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};
use testbed_common::Testbed;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn deployment(name: &str, labels: &str, spec: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: 1
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels:
        app: {name}
{labels}    spec:
{spec}      containers:
      - name: app
        image: example.invalid/app:1
"
    )
}

/// The scenarios: (release, the template, the reason kind expected, words
/// its text must hold).
fn scenarios() -> Vec<(&'static str, String, &'static str, &'static str)> {
    vec![
        (
            "sel",
            deployment(
                "sel",
                "",
                "      nodeSelector: {node.kubernetes.io/controller: \"true\"}\n",
            ),
            "unschedulable",
            "didn't match Pod's node affinity/selector",
        ),
        (
            "crash",
            deployment("crash", "        testbed.kwok.io/behavior: crashloop\n", ""),
            "crash-loop",
            "last exit code 1 (Error)",
        ),
        (
            "never",
            deployment(
                "never",
                "        testbed.kwok.io/behavior: never-ready\n",
                "",
            ),
            "not-ready",
            "container(s) app not ready",
        ),
        (
            "job",
            "apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
spec:
  backoffLimit: 0
  template:
    metadata:
      labels:
        testbed.kwok.io/behavior: fail
    spec:
      restartPolicy: Never
      containers:
      - name: m
        image: example.invalid/m:1
"
            .to_string(),
            "job-failed",
            "BackoffLimitExceeded: Job has reached the specified backoff limit",
        ),
        (
            "quota",
            deployment("quota", "", ""),
            "quota-exceeded",
            "exceeded quota: none",
        ),
        (
            "pvc",
            "apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  storageClassName: fast-ssd
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
"
            .to_string(),
            "claim-pending",
            "StorageClass \"fast-ssd\" does not exist",
        ),
    ]
}

/// Writes the charts and a releases file for `names`, each release in a
/// namespace of its own that the apply creates.
fn releases_file(dir: &Path, prefix: &str, names: &[&str], timeout: &str) -> PathBuf {
    let mut text = format!(
        "defaults:\n  createNamespace: true\n  atomic: true\n  wait: true\n  waitForJobs: true\n  timeout: {timeout}\nreleases:\n"
    );
    for (name, doc, _, _) in scenarios() {
        if !names.contains(&name) {
            continue;
        }
        let chart = dir.join("charts").join(name);
        write(
            &chart.join("Chart.yaml"),
            &format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
        );
        write(&chart.join("templates/main.yaml"), &doc);
        text.push_str(&format!(
            "- name: {name}\n  namespace: {prefix}-{name}\n  chart: charts/{name}\n"
        ));
    }
    let path = dir.join(format!("releases-{}.yaml", names.join("-")));
    write(&path, &text);
    path
}

/// One line of `rudder apply -o json`, and when it arrived.
struct Line {
    at: Instant,
    wall: SystemTime,
    json: Value,
}

/// Runs `rudder apply -o json FILE ARGS`; returns its lines as they
/// arrived, the report (the last line), and how long it took.
fn apply(tb: &Testbed, dir: &Path, file: &Path, args: &[&str]) -> (Vec<Line>, Value, Duration) {
    let t0 = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rudder"))
        .current_dir(dir)
        .env_remove("KUBECONFIG")
        .env_remove("HELM_DRIVER")
        .arg("--kubeconfig")
        .arg(&tb.kubeconfig)
        .arg("--store")
        .arg(format!("file:{}", dir.join("store").display()))
        .arg("apply")
        .arg("-o")
        .arg("json")
        .arg(file)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs rudder");
    let out = child.stdout.take().unwrap();
    let mut lines = Vec::new();
    for l in std::io::BufReader::new(out).lines() {
        let l = l.unwrap();
        let json: Value = serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l}"));
        lines.push(Line {
            at: Instant::now(),
            wall: SystemTime::now(),
            json,
        });
    }
    let o = child.wait_with_output().unwrap();
    let took = t0.elapsed();
    eprintln!(
        "rudder apply {} {args:?}: {:.1} s, {}\n{}",
        file.display(),
        took.as_secs_f64(),
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let report = lines.pop().expect("a report").json;
    assert!(report.get("releases").is_some(), "not a report: {report}");
    (lines, report, took)
}

fn release_outcome<'r>(report: &'r Value, rref: &str) -> &'r Value {
    report["releases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["release"] == rref)
        .unwrap_or_else(|| panic!("no {rref} in {report}"))
}

fn parse_time(s: &str) -> Option<SystemTime> {
    let t: jiff::Timestamp = s.parse().ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_nanos(u64::try_from(t.as_nanosecond()).ok()?))
}

#[test]
fn six_scenarios_say_why_while_waiting_and_in_the_report() {
    let Some(tb) = testbed_common::testbed() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let names = ["sel", "crash", "never", "job", "quota", "pvc"];
    // A namespace whose quota allows no pod: the ReplicaSet's creations
    // are refused.
    tb.kubectl_ok(&["create", "namespace", "why-quota"]);
    tb.kubectl_ok(&[
        "create",
        "quota",
        "none",
        "--hard=pods=0",
        "-n",
        "why-quota",
    ]);
    // The bed has no kubelet and no probes: a kubelet's `Unhealthy` event,
    // written a few seconds into the never-ready pod's wait, must turn its
    // reason into a probe failure. Nothing else changes then (the
    // Deployment's status stays as it is), so only the watch on the
    // namespace's events can bring it.
    // It is written once the pod runs (scheduled, container not ready),
    // which on a loaded machine can take several seconds.
    let injector = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(12);
        let pod = loop {
            std::thread::sleep(Duration::from_millis(250));
            let pod = tb.kubectl_ok(&[
                "get",
                "pods",
                "-n",
                "why-never",
                "-o",
                // A range: no error while the ReplicaSet has made no pod yet.
                "jsonpath={range .items[*]}{.metadata.name} {.metadata.uid} {.status.phase}{end}",
            ]);
            if pod.trim().ends_with(" Running") || Instant::now() > deadline {
                break pod;
            }
        };
        // Long enough for the wait to have said "not ready" first.
        std::thread::sleep(Duration::from_secs(2));
        let mut words = pod.split_whitespace();
        let (name, uid) = (words.next().expect("a pod"), words.next().expect("a uid"));
        let now = jiff::Timestamp::now().to_string();
        let written = SystemTime::now();
        tb.apply(
            "why-never",
            &serde_json::json!({"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": format!("{name}.probe")},
                "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": "why-never",
                    "uid": uid, "fieldPath": "spec.containers{app}"},
                "reason": "Unhealthy", "type": "Warning", "count": 1,
                "message": "Readiness probe failed: HTTP probe failed with statuscode: 503",
                "firstTimestamp": now, "lastTimestamp": now,
                "source": {"component": "kubelet", "host": "kwok-node-0"}})
            .to_string(),
        );
        written
    });
    // One apply, six independent releases: their waits overlap. The
    // timeout leaves the never-ready pod time to be scheduled and run on a
    // loaded machine before the event is injected.
    let file = releases_file(dir, "why", &names, "15s");
    let (lines, report, _) = apply(tb, dir, &file, &[]);
    let injected = injector.join().unwrap();
    let mut table = Vec::new();
    for (name, _, kind, words) in scenarios() {
        let rref = format!("why-{name}/{name}");
        let written = lines
            .iter()
            .find(|l| l.json["event"] == "object-written" && l.json["release"] == rref.as_str())
            .unwrap_or_else(|| panic!("{rref}: nothing written"));
        // A reason may change while the release waits (a pod is first
        // "Pending, not yet scheduled", then not ready): the one this
        // scenario is about must show at some point.
        let says = |r: &Value| {
            r["kind"] == kind && r["message"].as_str().is_some_and(|m| m.contains(words))
        };
        let waiting =
            |l: &&Line| l.json["event"] == "waiting" && l.json["release"] == rref.as_str();
        let first = lines
            .iter()
            .filter(waiting)
            .find(|l| {
                l.json["reasons"]
                    .as_array()
                    .is_some_and(|rs| rs.iter().any(says))
            })
            .unwrap_or_else(|| {
                let seen: Vec<_> = lines
                    .iter()
                    .filter(waiting)
                    .map(|l| l.json["reasons"].to_string())
                    .collect();
                panic!(
                    "{rref}: no {kind} reason saying {words:?} while waiting; reasons seen:\n{}",
                    seen.join("\n")
                )
            });
        let reason = first.json["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| says(r))
            .unwrap();
        let text = format!(
            "{} {}",
            reason["object"].as_str().unwrap(),
            reason["message"].as_str().unwrap()
        );
        if kind == "crash-loop" {
            assert_eq!(reason["restarts"], 5, "{reason}");
            assert_eq!(reason["container"], "app", "{reason}");
        }
        // The failure report: the outcome, the error and the diagnosis.
        let out = release_outcome(&report, &rref);
        assert_eq!(out["outcome"], "uninstalled-after-failure", "{out}");
        let err = out["error"].as_str().unwrap();
        assert!(err.contains("(why: "), "{rref}: {err}");
        let diag = report["diagnoses"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["release"] == rref.as_str())
            .unwrap_or_else(|| panic!("{rref}: no diagnosis in {report}"));
        // The never-ready pod ends with the probe failure injected below.
        let last_kind = if name == "never" {
            "probe-failed"
        } else {
            kind
        };
        assert!(
            diag["reasons"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["kind"] == last_kind),
            "{rref}: {diag}"
        );
        // How long after the write, and after the cluster's own event
        // where it has a timestamp, the reason was shown.
        let after_write = first.at.duration_since(written.at);
        let event = diag["pods"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|p| p["events"].as_array().cloned().unwrap_or_default())
            .find(|e| e["reason"] == "FailedScheduling")
            .and_then(|e| parse_time(e["lastSeen"].as_str()?));
        let after_event = event.and_then(|t| first.wall.duration_since(t).ok());
        table.push(format!(
            "| {name} | {kind}: {} | {:.2} s after the write | {} |",
            text.chars().take(120).collect::<String>(),
            after_write.as_secs_f64(),
            after_event.map_or("-".to_string(), |d| format!(
                "{:.2} s after the FailedScheduling event",
                d.as_secs_f64()
            ))
        ));
    }
    let probe = lines
        .iter()
        .find(|l| {
            l.json["event"] == "waiting"
                && l.json["release"] == "why-never/never"
                && l.json["reasons"]
                    .as_array()
                    .is_some_and(|rs| rs.iter().any(|r| r["kind"] == "probe-failed"))
        })
        .expect("the injected Unhealthy event shown as a probe failure");
    assert!(probe.json.to_string().contains(
        "\"container\":\"app\",\"count\":1,\"kind\":\"probe-failed\",\"message\":\"Readiness probe failed: HTTP probe failed with statuscode: 503\""
    ), "{}", probe.json);
    table.push(format!(
        "| never + Unhealthy event | probe-failed | - | {:.2} s after the event was written |",
        probe
            .wall
            .duration_since(injected)
            .map_or(-1.0, |d| d.as_secs_f64())
    ));
    // The scheduler's words and the pod's last events are in the report.
    let sel = report["diagnoses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["release"] == "why-sel/sel")
        .unwrap();
    assert_eq!(sel["pods"][0]["events"][0]["reason"], "FailedScheduling");
    eprintln!(
        "scenario | reason shown | first shown | \n{}",
        table.join("\n")
    );
}

#[test]
fn fail_fast_ends_unschedulable_and_crash_loops_before_the_deadline() {
    let Some(tb) = testbed_common::testbed() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let names = ["sel", "crash"];
    let file = releases_file(dir, "fast", &names, "5m");
    let (_, report, took) = apply(tb, dir, &file, &["--fail-fast"]);
    for name in names {
        let rref = format!("fast-{name}/{name}");
        let out = release_outcome(&report, &rref);
        assert_eq!(out["outcome"], "uninstalled-after-failure", "{out}");
        let err = out["error"].as_str().unwrap();
        // Ended by --fail-fast, not by the 5 minute deadline.
        assert!(err.contains("failing fast (--fail-fast)"), "{err}");
        assert!(!err.contains("context deadline exceeded"), "{err}");
    }
    eprintln!(
        "--fail-fast: both releases failed and were uninstalled in {:.1} s (deadline 5m)",
        took.as_secs_f64()
    );
}

/// The upgrader on a bed whose nodes nobody labelled for the control
/// plane, as a new user runs it: the plan warns about the node selector,
/// and the failure report names it.
#[test]
fn the_upgrader_on_unlabelled_nodes_warns_and_names_the_node_selector() {
    let Some(tb) = testbed_common::testbed() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let config = demo::write_config(dir, "fresh", "v1.21.4", false).unwrap();
    let mut text = std::fs::read_to_string(&config).unwrap();
    for (from, to) in [
        ("serviceCIDR: 10.3.0.0/16", "serviceCIDR: 10.96.0.0/16"),
        (
            "components: [node-local-dns, metrics-server]",
            "components: [node-local-dns]",
        ),
    ] {
        text = text.replace(from, to);
    }
    std::fs::write(&config, text).unwrap();
    let upgrader = |args: &[&str]| {
        let t0 = Instant::now();
        let o = Command::new(env!("CARGO_BIN_EXE_rudder-upgrader"))
            .current_dir(dir)
            .env_remove("KUBECONFIG")
            .env_remove("HELM_DRIVER")
            .arg("--kubeconfig")
            .arg(&tb.kubeconfig)
            .arg("--config")
            .arg(&config)
            .args(args)
            .output()
            .expect("runs rudder-upgrader");
        let out = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        eprintln!(
            "rudder-upgrader {args:?} ({:.1} s, {}):\n{out}",
            t0.elapsed().as_secs_f64(),
            o.status
        );
        (o.status.success(), out)
    };
    let (ok, plan) = upgrader(&["plan"]);
    assert!(ok, "{plan}");
    let warning = "Deployment kube-system/kube-apiserver: no node matches its node selector node.kubernetes.io/controller=true (3 node(s) in the cluster)";
    assert!(plan.contains(&format!("preflight: {warning}")), "{plan}");
    let (ok, json) = upgrader(&["plan", "-o", "json"]);
    assert!(ok);
    let json: Value = serde_json::from_str(&json[json.find('{').unwrap()..]).unwrap();
    let api = json["releases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "kube-apiserver")
        .unwrap();
    assert!(
        api["preflight"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["check"] == "node-selector"
                && w["subject"] == "node.kubernetes.io/controller=true"),
        "{api}"
    );
    // The held-back check gives 60 s; 15 s is enough to show the same.
    let (ok, out) = upgrader(&["--timeout", "15s", "apply", "--confirm"]);
    assert!(!ok, "{out}");
    for want in [
        "Error: controlplane component 'kube-apiserver' failed.",
        "Not ready: Deployment kube-system/kube-apiserver",
        "is unschedulable: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
        "Warning FailedScheduling",
        "The plan warned: Deployment kube-system/kube-apiserver: no node matches its node selector node.kubernetes.io/controller=true",
    ] {
        assert!(out.contains(want), "no {want:?} in:\n{out}");
    }
}
