//! Installing into a namespace that does not exist yet, with the release
//! records kept where Helm's default driver keeps them: Secrets in the
//! release namespace, here on the simulated cluster (which, like an API
//! server, refuses objects in a missing namespace). The namespace must be
//! created before the first record; a failed atomic install, and the
//! recovery of an interrupted one, delete it again, records and all.
mod plan_common;

use plan_common::*;
use rudder::cluster::sim::SimCluster;
use rudder::cluster::{Cluster, ObjectKey};
use rudder::exec::{crash_thread_at, Crash, DrivenClock, Executor, Journal};
use rudder::plan::planner::Planner;
use rudder::plan::{DesiredRelease, ReleaseAction};
use rudder::release::store::objects::ObjectStore;
use rudder::release::{Status, Store};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

const CM: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  color: blue\n";
const DEPLOY: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers: [{name: web, image: \"nginx:1.27\"}]\n";
const REJECTED: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-bad\n  annotations:\n    sim.rudder.io/reject: bad flag --foo\ndata:\n  a: b\n";

/// A simulated cluster with Helm's Secrets driver on it, and a journal.
struct Bed {
    cluster: Arc<SimCluster>,
    store: ObjectStore,
    clock: DrivenClock,
    journal: tempfile::TempDir,
}

impl Bed {
    fn new() -> Bed {
        let cluster = Arc::new(SimCluster::in_memory());
        let store = ObjectStore::secrets(cluster.clone());
        Bed {
            cluster,
            store,
            clock: DrivenClock::new(),
            journal: tempfile::tempdir().unwrap(),
        }
    }

    fn executor(&self) -> Executor<'_> {
        Executor::new(
            &self.store,
            "secrets",
            &*self.cluster,
            Journal::at(self.journal.path()),
            &self.clock,
        )
    }

    fn plan(&self, rels: &[DesiredRelease]) -> rudder::plan::Plan {
        Planner::new(&self.store, "secrets", &*self.cluster)
            .plan(rels)
            .expect("plan")
    }

    /// Plans and applies; `Err` when a simulated crash struck.
    fn run(&self, rels: &[DesiredRelease], crash_at: u64) -> Result<bool, ()> {
        let plan = self.plan(rels);
        crash_thread_at(crash_at);
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| self.executor().apply(&plan)));
        crash_thread_at(0);
        match r {
            Ok(Ok(report)) => Ok(report.success()),
            Ok(Err(e)) => panic!("executor refused: {e}"),
            Err(p) if p.downcast_ref::<Crash>().is_some() => Err(()),
            Err(p) => std::panic::resume_unwind(p),
        }
    }

    fn namespace_exists(&self, ns: &str) -> bool {
        self.cluster
            .get(&ObjectKey::new("", "Namespace", "", ns))
            .unwrap()
            .is_some()
    }

    fn statuses(&self, ns: &str, name: &str) -> Vec<(u64, Status)> {
        let mut h = self.store.history(ns, name).unwrap();
        h.sort_by_key(|r| r.version);
        h.into_iter().map(|r| (r.version, r.info.status)).collect()
    }
}

fn release(docs: &[(&str, &str)]) -> DesiredRelease {
    let mut d = desired("web", "fresh", chart("web", "1.0.0", docs));
    d.options.timeout = Duration::from_secs(30);
    d
}

#[test]
fn install_creates_the_namespace_before_its_first_record() {
    let bed = Bed::new();
    assert!(!bed.namespace_exists("fresh"));
    let d = release(&[("cm.yaml", CM), ("deploy.yaml", DEPLOY)]);
    let plan = bed.plan(std::slice::from_ref(&d));
    assert_eq!(plan.releases[0].action, ReleaseAction::Install);
    let report = bed.executor().apply(&plan).unwrap();
    assert!(report.success(), "{report:?}");
    assert!(bed.namespace_exists("fresh"));
    assert_eq!(bed.statuses("fresh", "web"), vec![(1, Status::Deployed)]);
    // The record is a Secret in the new namespace.
    let secrets = bed.cluster.list("", "Secret", Some("fresh"), &[]).unwrap();
    let names: Vec<&str> = secrets
        .iter()
        .filter_map(|s| s["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["sh.helm.release.v1.web.v1"]);
    // The namespace was created, not server-side applied, as Helm does.
    let ns = bed
        .cluster
        .get(&ObjectKey::new("", "Namespace", "", "fresh"))
        .unwrap()
        .unwrap();
    let managers: Vec<&str> = ns["metadata"]["managedFields"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter_map(|e| e["operation"].as_str())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    assert!(!managers.contains(&"Apply"), "{ns}");
    // A second release into the same namespace, then an upgrade: no
    // namespace to create any more.
    let mut other = desired(
        "other",
        "fresh",
        chart(
            "other",
            "1.0.0",
            &[("cm.yaml", CM.replace("web-config", "other-config").as_str())],
        ),
    );
    other.options.timeout = Duration::from_secs(30);
    assert_eq!(bed.run(&[d.clone(), other], 0), Ok(true));
    let d2 = release(&[
        ("cm.yaml", &CM.replace("blue", "green")),
        ("deploy.yaml", DEPLOY),
    ]);
    let plan = bed.plan(std::slice::from_ref(&d2));
    assert!(plan.releases[0]
        .objects
        .iter()
        .all(|o| o.key.kind != "Namespace"));
    assert_eq!(bed.run(std::slice::from_ref(&d2), 0), Ok(true));
    assert_eq!(
        bed.statuses("fresh", "web"),
        vec![(1, Status::Superseded), (2, Status::Deployed)]
    );
}

#[test]
fn two_releases_of_one_plan_share_a_new_namespace() {
    let bed = Bed::new();
    let a = release(&[("cm.yaml", CM)]);
    let mut b = desired(
        "b",
        "fresh",
        chart(
            "b",
            "1.0.0",
            &[("cm.yaml", &CM.replace("web-config", "b-config"))],
        ),
    );
    b.options.timeout = Duration::from_secs(30);
    let plan = bed.plan(&[a.clone(), b.clone()]);
    // Both plans say the namespace is to be created; the second finds it made.
    for r in &plan.releases {
        assert!(r.objects.iter().any(|o| o.key.kind == "Namespace"), "{r:?}");
    }
    let report = bed.executor().apply(&plan).unwrap();
    assert!(report.success(), "{report:?}");
    assert_eq!(bed.statuses("fresh", "web"), vec![(1, Status::Deployed)]);
    assert_eq!(bed.statuses("fresh", "b"), vec![(1, Status::Deployed)]);
}

#[test]
fn a_failed_atomic_install_removes_the_namespace_it_created() {
    let bed = Bed::new();
    let d = release(&[("cm.yaml", CM), ("bad.yaml", REJECTED)]);
    assert_eq!(bed.run(std::slice::from_ref(&d), 0), Ok(false));
    assert!(bed.statuses("fresh", "web").is_empty());
    assert!(!bed.namespace_exists("fresh"));
    // A namespace that existed before is left alone.
    let bed = Bed::new();
    bed.cluster
        .create(&serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fresh"}}))
        .unwrap();
    assert_eq!(bed.run(std::slice::from_ref(&d), 0), Ok(false));
    assert!(bed.statuses("fresh", "web").is_empty());
    assert!(bed.namespace_exists("fresh"));
    assert!(bed
        .cluster
        .get(&ObjectKey::new("", "ConfigMap", "fresh", "web-config"))
        .unwrap()
        .is_none());
}

/// Without `createNamespace`, the first record cannot be written: the
/// error names the namespace, and the journal says the run ended (nothing
/// is left for a recovery to settle).
#[test]
fn without_create_namespace_the_run_fails_and_its_journal_is_closed() {
    let bed = Bed::new();
    let mut d = release(&[("cm.yaml", CM)]);
    d.options.create_namespace = false;
    let plan = bed.plan(std::slice::from_ref(&d));
    let e = rudder::error_chain(&bed.executor().apply(&plan).unwrap_err());
    assert!(e.contains("namespaces \"fresh\" not found"), "{e}");
    let j = Journal::at(bed.journal.path())
        .lock("fresh", "web")
        .unwrap();
    assert!(j.interrupted().unwrap().is_none(), "{:?}", j.read_all());
    drop(j);
    assert_eq!(bed.executor().recover("fresh", "web").unwrap(), None);
    assert!(!bed.namespace_exists("fresh"));
    assert!(bed.statuses("fresh", "web").is_empty());
}

/// A crash after every durable write k of an install into a missing
/// namespace (its journal entry, the namespace, the records, the objects),
/// then recovery: the namespace exists exactly when the release has a
/// record, the record is deployed or there is none, and the rerun installs.
#[test]
fn crash_at_every_write_of_an_install_into_a_new_namespace() {
    let d = release(&[("cm.yaml", CM), ("deploy.yaml", DEPLOY)]);
    let mut struck = 0;
    for k in 1..=100 {
        let bed = Bed::new();
        match bed.run(std::slice::from_ref(&d), k) {
            Ok(ok) => {
                assert!(ok, "k={k}: the install failed");
                break;
            }
            Err(()) => struck += 1,
        }
        let what = bed.executor().recover("fresh", "web").unwrap();
        let hist = bed.statuses("fresh", "web");
        assert!(
            hist.is_empty() || hist == [(1, Status::Deployed)],
            "k={k}: {hist:?} after {what:?}"
        );
        assert_eq!(
            bed.namespace_exists("fresh"),
            !hist.is_empty(),
            "k={k}: namespace vs records {hist:?} after {what:?}"
        );
        if hist.is_empty() {
            // Nothing of the release is left anywhere.
            let left: Vec<String> = bed
                .cluster
                .snapshot()
                .unwrap()
                .iter()
                .filter(|o| o["metadata"]["namespace"] == "fresh")
                .map(|o| format!("{}/{}", o["kind"], o["metadata"]["name"]))
                .collect();
            assert!(left.is_empty(), "k={k}: {left:?}");
        }
        assert_eq!(
            bed.run(std::slice::from_ref(&d), 0),
            Ok(true),
            "k={k}: rerun"
        );
        assert_eq!(
            bed.plan(std::slice::from_ref(&d)).releases[0].action,
            ReleaseAction::Noop,
            "k={k}"
        );
    }
    // The journal's begin, the namespace phase and create, the pending
    // record, ... each struck once.
    assert!(struck >= 6, "only {struck} writes");
}

/// The three ways a user installs into a new namespace, through the
/// binary, with the Secrets driver on the simulated cluster.
#[test]
fn cli_install_upgrade_install_and_apply_into_new_namespaces() {
    let dir = tempfile::tempdir().unwrap();
    let chart = dir.path().join("chart");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: tiny\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(
        chart.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata:\n  a: {{ .Values.a | default \"1\" | quote }}\n",
    )
    .unwrap();
    let sim = format!("sim:{}", dir.path().join("cluster").display());
    let rudder = |args: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_rudder"))
            .args(args)
            .args(["--store", "secrets", "--cluster", &sim])
            .current_dir(dir.path())
            .env_remove("KUBECONFIG")
            .env_remove("HELM_DRIVER")
            .output()
            .unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let c = chart.to_str().unwrap();
    // Without --create-namespace, Helm's error, and nothing written.
    let (ok, _, err) = rudder(&["install", "a0", c, "-n", "ns-0"]);
    assert!(!ok);
    assert!(err.contains("namespaces \"ns-0\" not found"), "{err}");
    let (ok, out, err) = rudder(&["install", "a1", c, "-n", "ns-a", "--create-namespace"]);
    assert!(ok, "{out}{err}");
    let (ok, out, err) = rudder(&[
        "upgrade",
        "--install",
        "b1",
        c,
        "-n",
        "ns-b",
        "--create-namespace",
    ]);
    assert!(ok, "{out}{err}");
    std::fs::write(
        dir.path().join("releases.yaml"),
        format!("releases:\n- name: c1\n  namespace: ns-c\n  chart: {c}\n"),
    )
    .unwrap();
    let (ok, out, err) = rudder(&["apply", "releases.yaml"]);
    assert!(ok, "{out}{err}");
    for (ns, name) in [("ns-a", "a1"), ("ns-b", "b1"), ("ns-c", "c1")] {
        let (ok, out, err) = rudder(&["history", name, "-n", ns]);
        assert!(ok, "{out}{err}");
        assert!(out.contains("deployed"), "{ns}/{name}: {out}");
        let (ok, out, err) = rudder(&["list", "-n", ns, "-q"]);
        assert!(ok, "{out}{err}");
        assert_eq!(out.trim(), name);
    }
}
