//! Why a rollout is stuck, on the simulated cluster: its played pod states
//! (`sim.rudder.io/pods`) reach the progress events as typed reasons and
//! the failure report with events and log lines; `--fail-fast` stops at
//! once on the states that do not resolve by themselves.
mod plan_common;

use plan_common::*;
use rudder::exec::{
    DrivenClock, Event, ExecOptions, Executor, FailFast, Journal, Outcome, Progress, ReasonKind,
    Report,
};
use rudder::plan::{DesiredRelease, ReleaseOptions};
use std::sync::Mutex;
use std::time::Duration;

#[derive(Default)]
struct Events(Mutex<Vec<Event>>);

impl Progress for Events {
    fn event(&self, e: &Event) {
        self.0.lock().unwrap().push(e.clone());
    }
}

impl Events {
    /// Every reason the Waiting events carried.
    fn reasons(&self) -> Vec<rudder::exec::Reason> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                Event::Waiting { reasons, .. } => Some(reasons.clone()),
                _ => None,
            })
            .flatten()
            .collect()
    }
}

fn deployment(pods: &str, extra_spec: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    sim.rudder.io/pods: {pods}
spec:
  replicas: 2
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
{extra_spec}      containers:
      - name: app
        image: example.invalid/web:1
"
    )
}

fn release(docs: &[(&str, &str)], timeout: Duration) -> DesiredRelease {
    let mut d = desired("web", "apps", chart("web", "1.0.0", docs));
    d.options = ReleaseOptions {
        atomic: true,
        wait: true,
        wait_for_jobs: true,
        timeout,
        ..ReleaseOptions::default()
    };
    d
}

fn run(w: &World, d: &DesiredRelease, fail_fast: bool) -> (Report, Events, Duration) {
    let clock = DrivenClock::new();
    let events = Events::default();
    let plan = w.plan(std::slice::from_ref(d));
    let report = Executor::new(
        &w.store,
        "memory:",
        &w.cluster,
        Journal::in_memory(),
        &clock,
    )
    .with_progress(&events)
    .with_options(ExecOptions {
        fail_fast: fail_fast.then(FailFast::default),
        ..ExecOptions::default()
    })
    .apply(&plan)
    .expect("apply runs");
    use rudder::exec::Clock;
    let took = clock.now();
    (report, events, took)
}

#[test]
fn an_unschedulable_pod_is_named_while_waiting_and_in_the_report() {
    let w = World::new();
    for i in 0..3 {
        w.kubectl_apply(serde_json::json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("n{i}"), "labels": {"kubernetes.io/os": "linux"}}}));
    }
    let dep = deployment(
        "unschedulable",
        "      nodeSelector: {node.kubernetes.io/controller: \"true\"}\n",
    );
    let d = release(&[("dep.yaml", &dep)], Duration::from_secs(3));
    let (report, events, _) = run(&w, &d, false);
    assert_eq!(report.releases[0].outcome, Outcome::UninstalledAfterFailure);
    let reasons = events.reasons();
    let r = reasons
        .iter()
        .find(|r| r.kind == ReasonKind::Unschedulable)
        .expect("an unschedulable reason while waiting");
    assert_eq!(r.object, "Pod apps/web-sim-0");
    assert_eq!(r.count, 2);
    assert!(
        r.message.starts_with(
            "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
        ),
        "{r:?}"
    );
    let err = report.releases[0].error.as_deref().unwrap();
    assert!(err.contains("context deadline exceeded"), "{err}");
    assert!(err.contains("(why: Pod apps/web-sim-0 is unschedulable: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."), "{err}");
    let d = &report.diagnoses[0];
    assert_eq!(d.object, "Deployment apps/web");
    assert_eq!(d.reasons[0].kind, ReasonKind::Unschedulable);
    let ev = &d.pods[0].events[0];
    assert_eq!(
        (ev.type_.as_str(), ev.reason.as_str()),
        ("Warning", "FailedScheduling")
    );
    let shown = d.to_string();
    assert!(
        shown.contains("events of Pod apps/web-sim-0:\n    Warning FailedScheduling 0/3 nodes"),
        "{shown}"
    );
    // The plan warned before: no node carries the label.
    let plan = w.plan(std::slice::from_ref(&d_again(&dep)));
    let pf = &plan.releases[0].preflight;
    assert_eq!(pf.len(), 1, "{pf:?}");
    assert!(pf[0].message.contains("no node matches its node selector node.kubernetes.io/controller=true (3 node(s) in the cluster)"), "{pf:?}");
}

fn d_again(dep: &str) -> DesiredRelease {
    release(&[("dep.yaml", dep)], Duration::from_secs(3))
}

#[test]
fn crash_loops_report_restarts_events_and_log_lines_and_fail_fast() {
    let w = World::new();
    let dep = deployment("crashloop", "");
    let d = release(&[("dep.yaml", &dep)], Duration::from_secs(300));
    let (report, events, took) = run(&w, &d, true);
    assert_eq!(report.releases[0].outcome, Outcome::UninstalledAfterFailure);
    assert!(took < Duration::from_secs(5), "fail-fast took {took:?}");
    let r = events
        .reasons()
        .into_iter()
        .find(|r| r.kind == ReasonKind::CrashLoop)
        .expect("a crash loop while waiting");
    assert_eq!(r.restarts, Some(5));
    assert_eq!(r.container.as_deref(), Some("app"));
    let err = report.releases[0].error.as_deref().unwrap();
    assert!(
        err.contains("failing fast (--fail-fast): Pod apps/web-sim-0 container app is in CrashLoopBackOff (5 restarts): last exit code 1 (Error)"),
        "{err}"
    );
    let pod = &report.diagnoses[0].pods[0];
    assert_eq!(pod.events[0].reason, "BackOff");
    assert_eq!(pod.container.as_deref(), Some("app"));
    assert_eq!(
        pod.log,
        [
            "starting web",
            "error: simulated crash (sim.rudder.io/pods: crashloop)",
            "exiting with code 1"
        ]
    );
    // The report as JSON carries the same data.
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["diagnoses"][0]["reasons"][0]["kind"], "crash-loop");
    assert_eq!(json["diagnoses"][0]["reasons"][0]["restarts"], 5);
}

#[test]
fn without_fail_fast_a_crash_loop_runs_to_the_deadline() {
    let w = World::new();
    let dep = deployment("crashloop", "");
    let d = release(&[("dep.yaml", &dep)], Duration::from_secs(20));
    let (report, _, took) = run(&w, &d, false);
    assert_eq!(report.releases[0].outcome, Outcome::UninstalledAfterFailure);
    assert!(took >= Duration::from_secs(20), "{took:?}");
    let err = report.releases[0].error.as_deref().unwrap();
    assert!(err.contains("context deadline exceeded"), "{err}");
}

#[test]
fn image_pulls_and_probes_are_named() {
    for (state, kind, words) in [
        (
            "image-pull",
            ReasonKind::ImagePull,
            "container app cannot pull its image: ImagePullBackOff: Back-off pulling image \"example.invalid/web:1\"",
        ),
        (
            "probe-failure",
            ReasonKind::ProbeFailed,
            "container app fails its readiness probe: Readiness probe failed: HTTP probe failed with statuscode: 503",
        ),
    ] {
        let w = World::new();
        let dep = deployment(state, "");
        let d = release(&[("dep.yaml", &dep)], Duration::from_secs(2));
        let (report, events, _) = run(&w, &d, false);
        let r = events
            .reasons()
            .into_iter()
            .find(|r| r.kind == kind)
            .unwrap_or_else(|| panic!("{state}: no {kind:?}"));
        assert!(r.to_string().contains(words), "{state}: {r}");
        assert_eq!(report.diagnoses[0].reasons[0].kind, kind);
    }
    // An image pull error fails fast at once.
    let w = World::new();
    let d = release(
        &[("dep.yaml", &deployment("image-pull", ""))],
        Duration::from_secs(300),
    );
    let (report, _, took) = run(&w, &d, true);
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(report.releases[0]
        .error
        .as_deref()
        .unwrap()
        .contains("failing fast"));
}

#[test]
fn unschedulable_fails_fast_after_its_grace_period() {
    let w = World::new();
    let dep = deployment("unschedulable", "");
    let d = release(&[("dep.yaml", &dep)], Duration::from_secs(300));
    let (report, _, took) = run(&w, &d, true);
    let grace = FailFast::default().unschedulable_grace;
    assert!(
        took >= grace && took < grace + Duration::from_secs(5),
        "{took:?}"
    );
    assert!(report.releases[0]
        .error
        .as_deref()
        .unwrap()
        .contains("failing fast (--fail-fast): Pod apps/web-sim-0 is unschedulable"));
}

#[test]
fn a_failed_job_and_a_pending_claim_say_why() {
    let w = World::new();
    let job = "apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations: {sim.rudder.io/ready: fail}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: x}]
";
    let d = release(&[("job.yaml", job)], Duration::from_secs(3));
    let (report, _, _) = run(&w, &d, false);
    let diag = &report.diagnoses[0];
    assert_eq!(diag.object, "Job apps/migrate");
    assert_eq!(diag.reasons[0].kind, ReasonKind::JobFailed, "{diag:?}");

    let w = World::new();
    let pvc = "apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  annotations: {sim.rudder.io/ready: never}
spec:
  storageClassName: fast-ssd
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
";
    let d = release(&[("pvc.yaml", pvc)], Duration::from_secs(2));
    let plan = w.plan(std::slice::from_ref(&d));
    assert_eq!(
        plan.releases[0].preflight[0].message,
        "PersistentVolumeClaim apps/data: StorageClass \"fast-ssd\" does not exist: its claim will stay Pending"
    );
    let (report, events, _) = run(&w, &d, false);
    let r = &events.reasons()[0];
    assert_eq!(r.kind, ReasonKind::ClaimPending);
    assert_eq!(
        r.to_string(),
        "PersistentVolumeClaim apps/data is Pending: StorageClass \"fast-ssd\" does not exist"
    );
    assert_eq!(report.diagnoses[0].reasons[0], *r);
}

/// The library's facade: `on_progress` gets the reasons as typed data,
/// and a failed apply's error carries the report with its diagnoses.
#[test]
fn the_facade_delivers_reasons_and_diagnoses() {
    let dir = tempfile::tempdir().unwrap();
    let seen: std::sync::Arc<Mutex<Vec<rudder::exec::Reason>>> = Default::default();
    let s = seen.clone();
    let client = rudder::blocking::Client::builder()
        .store(format!("file:{}", dir.path().join("store").display()))
        .cluster(format!("sim:{}", dir.path().join("cluster").display()))
        .fail_fast(Some(FailFast::default()))
        .log_lines(2)
        .on_progress(move |e| {
            if let Event::Waiting { reasons, .. } = e {
                s.lock().unwrap().extend(reasons.iter().cloned());
            }
        })
        .build()
        .unwrap();
    let d = release(
        &[("dep.yaml", &deployment("crashloop", ""))],
        Duration::from_secs(300),
    );
    let plan = client.plan(std::slice::from_ref(&d)).unwrap();
    let err = client.apply(&plan).unwrap_err();
    let report = err.report().expect("a report");
    let diag = &report.diagnoses[0];
    assert_eq!(diag.reasons[0].kind, ReasonKind::CrashLoop);
    assert_eq!(
        diag.pods[0].log,
        [
            "error: simulated crash (sim.rudder.io/pods: crashloop)",
            "exiting with code 1"
        ]
    );
    assert!(seen
        .lock()
        .unwrap()
        .iter()
        .any(|r| r.kind == ReasonKind::CrashLoop && r.restarts == Some(5)));
}
