//! The executor on a real API server (the shared test bed, `scripts/testbed`), checked step by
//! step against real Helm 3 (and Helm 4, reported where it differs).
//!
//! For five corpus charts (a Deployment, a DaemonSet, a StatefulSet, a second Deployment and a
//! chart with hook Jobs), the same sequence runs once with each tool, each in its own namespace:
//!
//! 1. install v1;
//! 2. upgrade to v2 (changed values, one object added, one removed);
//! 3. upgrade `--atomic --timeout 60s` to a v3 whose pods the test bed's `never-ready` stage
//!    holds back;
//! 4. rollback to 1;
//! 5. uninstall `--keep-history`.
//!
//! After each step the live objects each tool owns (their spec, ignoring uid, timestamps,
//! managedFields, the namespace and Helm's bookkeeping), the release records (revision, status,
//! description) and `helm history` must agree, but for the differences listed in
//! [`KNOWN`], each with its reason. The report of every chart and step is printed.
//!
//! Without the test bed, the corpus or Helm every test prints `SKIPPED: ...` and passes, unless
//! `RUDDER_REQUIRE_ORACLE=1`, which makes them fail.
#[path = "release_common/mod.rs"]
mod release_common;
mod testbed_common;
use release_common::common;

use release_common::json_diff;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;
use testbed_common::{testbed, Testbed};

/// The deadline of every waiting step.
const TIMEOUT: &str = "60s";
const TIMEOUT_SECS: f64 = 60.0;

/// Differences kept on purpose: (a substring of the difference, the reason).
const KNOWN: &[(&str, &str)] = &[
    (
        "[deadline detail]",
        "rudder's failure descriptions name the objects that were not ready and why, as Helm 4's \
         do; Helm 3 records only `context deadline exceeded`",
    ),
    (
        "annotations.checksum/config",
        "a checksum of a ConfigMap whose content names the release and its namespace: it \
         differs between any two releases, Helm 3's and Helm 4's too",
    ),
    (
        "clusterpeer-udp",
        "Helm 3's three-way strategic merge keys container and Service ports by port number \
         alone, so the UDP twin of port 9094 that v2 adds is lost (kubernetes/kubernetes#39188); \
         server-side apply keys them by port and protocol, and rudder gets what Helm 4 gets",
    ),
];

/// Kinds whose live objects are compared (`kubectl get` resource names).
const KINDS: &str = "deployments.apps,statefulsets.apps,daemonsets.apps,jobs.batch,services,\
serviceaccounts,configmaps,secrets,networkpolicies.networking.k8s.io,\
poddisruptionbudgets.policy,roles.rbac.authorization.k8s.io,\
rolebindings.rbac.authorization.k8s.io,clusterroles.rbac.authorization.k8s.io,\
clusterrolebindings.rbac.authorization.k8s.io,\
validatingwebhookconfigurations.admissionregistration.k8s.io";

struct Case {
    id: &'static str,
    short: &'static str,
    v1: &'static [&'static str],
    /// Added to v1's flags for v2.
    v2: &'static [&'static str],
    /// The values path of the pods' labels (v3 adds the never-ready label there).
    pod_labels: &'static str,
}

const CASES: &[Case] = &[
    Case {
        id: "prom-kube-state-metrics",
        short: "ksm",
        v1: &[],
        v2: &[
            "--set",
            "replicas=2",
            "--set",
            "networkPolicy.enabled=true",
            "--set",
            "serviceAccount.create=false",
        ],
        pod_labels: "podLabels",
    },
    Case {
        id: "prom-node-exporter",
        short: "nex",
        // Not on the host network: the tools' DaemonSets share the nodes.
        v1: &["--set", "hostNetwork=false"],
        v2: &[
            "--set",
            "podAnnotations.rev=two",
            "--set",
            "networkPolicy.enabled=true",
            "--set",
            "serviceAccount.create=false",
        ],
        pod_labels: "podLabels",
    },
    Case {
        id: "prom-alertmanager",
        short: "alm",
        v1: &["--set", "persistence.enabled=false"],
        v2: &[
            "--set",
            "replicaCount=2",
            "--set",
            "podDisruptionBudget.maxUnavailable=1",
            "--set",
            "serviceAccount.create=false",
        ],
        pod_labels: "podLabels",
    },
    Case {
        id: "prom-pushgateway",
        short: "pgw",
        v1: &[],
        v2: &[
            "--set",
            "replicaCount=2",
            "--set",
            "podDisruptionBudget.maxUnavailable=1",
            "--set",
            "serviceAccount.create=false",
        ],
        pod_labels: "podLabels",
    },
    Case {
        id: "ingress-nginx",
        short: "ngx",
        // The IngressClass is cluster-wide with a fixed name, and a LoadBalancer Service never
        // gets an address on the bed.
        v1: &[
            "--set",
            "controller.ingressClassResource.enabled=false",
            "--set",
            "controller.service.type=ClusterIP",
        ],
        v2: &[
            "--set",
            "controller.replicaCount=2",
            "--set",
            "controller.metrics.enabled=true",
            "--set",
            "serviceAccount.create=false",
        ],
        pod_labels: "controller.podLabels",
    },
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tool {
    Helm3,
    Helm4,
    Rudder,
}

impl Tool {
    fn tag(self) -> &'static str {
        match self {
            Tool::Helm3 => "h",
            Tool::Helm4 => "f",
            Tool::Rudder => "r",
        }
    }
}

/// One tool's run of one chart: its namespace, release name and scratch home.
struct Run<'a> {
    tool: Tool,
    tb: &'a Testbed,
    bin: PathBuf,
    home: tempfile::TempDir,
    ns: String,
    rel: String,
}

/// A finished command: exit status, stdout, stderr lines with their arrival time.
struct Done {
    ok: bool,
    stdout: String,
    stderr: Vec<(f64, String)>,
    secs: f64,
}

impl Done {
    fn text(&self) -> String {
        let err: Vec<&str> = self.stderr.iter().map(|(_, l)| l.as_str()).collect();
        format!("stdout:\n{}\nstderr:\n{}", self.stdout, err.join("\n"))
    }
}

impl Run<'_> {
    fn command(&self) -> Command {
        let mut cmd = match self.tool {
            Tool::Rudder => {
                let mut c = Command::new(&self.bin);
                c.arg("--kubeconfig").arg(&self.tb.kubeconfig);
                c
            }
            Tool::Helm3 | Tool::Helm4 => {
                let mut c = common::helm_command(&self.bin, self.home.path());
                c.env("KUBECONFIG", &self.tb.kubeconfig);
                c
            }
        };
        // rudder keeps its journal under the working directory.
        cmd.current_dir(self.home.path())
            .env_remove("HELM_DRIVER")
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, args: &[&str]) -> Done {
        let t0 = Instant::now();
        let mut child = self
            .command()
            .args(args)
            .arg("--namespace")
            .arg(&self.ns)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let stderr = child.stderr.take().unwrap();
        let reader = std::thread::spawn(move || {
            BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
                .map(|l| (t0.elapsed().as_secs_f64(), l))
                .collect::<Vec<_>>()
        });
        let out = child.wait_with_output().unwrap();
        Done {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: reader.join().unwrap(),
            secs: t0.elapsed().as_secs_f64(),
        }
    }

    /// `v1`, `v2` or `v3` flags of a case.
    fn values(case: &Case, v: u8) -> Vec<String> {
        let mut args: Vec<String> = case.v1.iter().map(|s| s.to_string()).collect();
        if v >= 2 {
            args.extend(case.v2.iter().map(|s| s.to_string()));
        }
        if v >= 3 {
            args.push("--set".into());
            args.push(format!(
                r"{}.testbed\.kwok\.io/behavior=never-ready",
                case.pod_labels
            ));
        }
        args
    }

    fn step(&self, case: &Case, chart: &str, step: usize) -> Done {
        let atomic = if self.tool == Tool::Helm4 {
            "--rollback-on-failure"
        } else {
            "--atomic"
        };
        let mut args: Vec<String> = match step {
            1 => vec![
                "install".into(),
                self.rel.clone(),
                chart.into(),
                "--wait".into(),
            ],
            2 => vec![
                "upgrade".into(),
                self.rel.clone(),
                chart.into(),
                "--wait".into(),
            ],
            3 => vec![
                "upgrade".into(),
                self.rel.clone(),
                chart.into(),
                atomic.into(),
            ],
            4 => vec![
                "rollback".into(),
                self.rel.clone(),
                "1".into(),
                "--wait".into(),
            ],
            _ => vec![
                "uninstall".into(),
                self.rel.clone(),
                "--keep-history".into(),
                "--wait".into(),
            ],
        };
        args.push("--timeout".into());
        args.push(TIMEOUT.into());
        if step <= 3 {
            args.extend(Self::values(case, step as u8));
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run(&refs)
    }

    /// `helm history` as JSON, read by real Helm 3 whichever tool wrote it.
    fn history(&self, helm3: &Path) -> Vec<Value> {
        let out = common::helm_command(helm3, self.home.path())
            .env("KUBECONFIG", &self.tb.kubeconfig)
            .env_remove("HELM_DRIVER")
            .args(["history", &self.rel, "-n", &self.ns, "-o", "json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "helm history {}: {}",
            self.rel,
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap()
    }

    /// Replaces this run's release and namespace names.
    fn normalize(&self, s: &str) -> String {
        s.replace(&self.ns, "NS").replace(&self.rel, "REL")
    }

    /// The live objects this run's release owns, normalized, by `Kind/name`.
    fn owned(&self, live: &[Value]) -> BTreeMap<String, Value> {
        let mut out = BTreeMap::new();
        for o in live {
            let ann = |k: &str| {
                o.pointer(&format!("/metadata/annotations/{}", k.replace('/', "~1")))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            if ann("meta.helm.sh/release-name") != self.rel
                || ann("meta.helm.sh/release-namespace") != self.ns
            {
                continue;
            }
            let kind = o["kind"].as_str().unwrap_or("").to_string();
            let name = o["metadata"]["name"].as_str().unwrap_or("").to_string();
            let clean = strip(o.clone());
            let text = self.normalize(&clean.to_string());
            out.insert(
                format!("{kind}/{}", self.normalize(&name)),
                serde_json::from_str(&text).unwrap(),
            );
        }
        out
    }
}

/// Drops what differs between any two installs: identity, timestamps, managers, status, Helm's
/// release bookkeeping, and fields the server allocates.
fn strip(mut o: Value) -> Value {
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
            "namespace",
            "ownerReferences",
            "selfLink",
        ] {
            m.remove(f);
        }
        if let Some(a) = m.get_mut("annotations").and_then(Value::as_object_mut) {
            a.remove("meta.helm.sh/release-name");
            a.remove("meta.helm.sh/release-namespace");
            if a.is_empty() {
                m.remove("annotations");
            }
        }
    }
    if let Some(o) = o.as_object_mut() {
        o.remove("status");
    }
    let kind = o["kind"].as_str().unwrap_or("").to_string();
    if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
        if kind == "Service" {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
        }
        if kind == "Job" {
            spec.remove("selector");
            if let Some(l) = spec
                .get_mut("template")
                .and_then(|t| t.pointer_mut("/metadata/labels"))
                .and_then(Value::as_object_mut)
            {
                l.remove("controller-uid");
                l.remove("batch.kubernetes.io/controller-uid");
            }
        }
    }
    o
}

/// The parts of a history entry both tools must agree on: revision, status, chart, and
/// (separately) the description.
fn record_view(h: &[Value]) -> Vec<(String, String)> {
    h.iter()
        .map(|r| {
            (
                format!("{} {} {}", r["revision"], r["status"], r["chart"]),
                r["description"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Compares two normalized histories entry by entry.
fn history_diffs(a: &[(String, String)], b: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    if a.len() != b.len() {
        out.push(format!("history has {} vs {} revisions", a.len(), b.len()));
    }
    for ((sa, da), (sb, db)) in a.iter().zip(b) {
        if sa != sb {
            out.push(format!("history entry {sa:?} vs {sb:?}"));
        }
        if da != db {
            // Helm 3 says only why the wait ended; rudder adds which objects were not ready.
            let detail = da.ends_with("failed: context deadline exceeded")
                && db.contains(" not ready")
                && db.ends_with(": context deadline exceeded")
                && db.starts_with(da.trim_end_matches("context deadline exceeded"));
            let tag = if detail { " [deadline detail]" } else { "" };
            out.push(format!("history {sa} description {da:?} vs {db:?}{tag}"));
        }
    }
    out
}

fn live_objects(tb: &Testbed) -> Vec<Value> {
    let out = tb.kubectl_ok(&["get", KINDS, "-A", "-o", "json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    v["items"].as_array().cloned().unwrap_or_default()
}

/// What one chart's run reported: a line per step and tool, and the differences found.
#[derive(Default)]
struct Report {
    lines: Vec<String>,
    diffs: Vec<String>,
    /// (tool, seconds from the start of step 3 to its failure being reported).
    fail_at: Vec<(Tool, f64)>,
}

fn compare(
    case: &Case,
    step: usize,
    a: &Run,
    b: &Run,
    live: &[Value],
    helm3: &Path,
    report: &mut Report,
) {
    let (oa, ob) = (a.owned(live), b.owned(live));
    let label = format!("{} step {step} {:?} vs {:?}", case.id, a.tool, b.tool);
    let keys_a: Vec<&String> = oa.keys().collect();
    let keys_b: Vec<&String> = ob.keys().collect();
    if keys_a != keys_b {
        report
            .diffs
            .push(format!("{label}: objects {keys_a:?} vs {keys_b:?}"));
    }
    let mut equal = 0;
    for (k, va) in &oa {
        let Some(vb) = ob.get(k) else { continue };
        let mut d = Vec::new();
        json_diff(k, va, vb, &mut d);
        if d.is_empty() {
            equal += 1;
        }
        for x in d {
            report.diffs.push(format!("{label}: {x}"));
        }
    }
    let (ha, hb) = (a.history(helm3), b.history(helm3));
    let norm = |r: &Run, h: &[Value]| -> Vec<(String, String)> {
        record_view(h)
            .into_iter()
            .map(|(x, y)| (r.normalize(&x), r.normalize(&y)))
            .collect()
    };
    let (norm_a, norm_b) = (norm(a, &ha), norm(b, &hb));
    let hd = history_diffs(&norm_a, &norm_b);
    report.lines.push(format!(
        "{label}: {} objects, {equal} with equal specs; {} revisions, records {}",
        oa.len(),
        norm_a.len(),
        if hd.is_empty() { "equal" } else { "differ" }
    ));
    for d in hd {
        report.diffs.push(format!("{label}: {d}"));
    }
}

/// The seconds from a command's start to its first stderr line containing `needle`.
fn line_at(d: &Done, needle: &str) -> Option<f64> {
    d.stderr
        .iter()
        .find(|(_, l)| l.contains(needle))
        .map(|(t, _)| *t)
}

fn run_case(tb: &Testbed, charts: &Path, case: &Case, tools: &[(Tool, PathBuf)]) -> Report {
    let helm3 = tools
        .iter()
        .find(|(t, _)| *t == Tool::Helm3)
        .map(|(_, b)| b.clone())
        .unwrap();
    let chart = charts.join(case.id).join("chart");
    let chart = chart.to_str().unwrap();
    let runs: Vec<Run> = tools
        .iter()
        .map(|(tool, bin)| Run {
            tool: *tool,
            tb,
            bin: bin.clone(),
            home: tempfile::tempdir().unwrap(),
            ns: tb.fresh_namespace(&format!("x{}-{}", tool.tag(), case.short)),
            // Unique per run: cluster-scoped objects (ClusterRoles) are named after it.
            rel: format!("{}{}{}", tool.tag(), case.short, std::process::id()),
        })
        .collect();
    let mut report = Report::default();
    for step in 1..=5 {
        let done: Vec<Done> = std::thread::scope(|s| {
            let hs: Vec<_> = runs
                .iter()
                .map(|r| s.spawn(move || r.step(case, chart, step)))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (r, d) in runs.iter().zip(&done) {
            let expect_ok = step != 3;
            assert_eq!(
                d.ok,
                expect_ok,
                "{} step {step} with {:?}: {}",
                case.id,
                r.tool,
                d.text()
            );
            report.lines.push(format!(
                "{} step {step} {:?}: {} in {:.1} s",
                case.id,
                r.tool,
                if d.ok { "ok" } else { "failed as expected" },
                d.secs
            ));
            if step == 3 {
                let at = if r.tool == Tool::Rudder {
                    line_at(d, ": failed: ").unwrap_or(d.secs)
                } else {
                    d.secs
                };
                report.fail_at.push((r.tool, at));
            }
        }
        let live = live_objects(tb);
        let rudder = runs.iter().find(|r| r.tool == Tool::Rudder).unwrap();
        for other in runs.iter().filter(|r| r.tool != Tool::Rudder) {
            let mut sub = Report::default();
            compare(case, step, other, rudder, &live, &helm3, &mut sub);
            report.lines.extend(sub.lines);
            if other.tool == Tool::Helm3 {
                report.diffs.extend(sub.diffs);
            } else {
                // Helm 4 is reported where it differs, not asserted.
                report.lines.extend(
                    sub.diffs
                        .into_iter()
                        .map(|d| format!("  helm4 differs: {d}")),
                );
            }
        }
    }
    for r in &runs {
        r.tb.kubectl_ok(&["delete", "namespace", &r.ns, "--wait=false"]);
    }
    report
}

fn charts_dir() -> Option<PathBuf> {
    let rel = Path::new("../shared/conformance/charts");
    let abs = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    if abs.join("INDEX.md").is_file() {
        Some(abs)
    } else {
        common::missing("../shared/conformance/charts")
    }
}

#[test]
fn differential_against_helm() {
    let Some(tb) = testbed() else { return };
    let Some(charts) = charts_dir() else { return };
    let Some(h3) = common::helm(3) else { return };
    let mut tools = vec![
        (Tool::Helm3, h3),
        (Tool::Rudder, PathBuf::from(env!("CARGO_BIN_EXE_rudder"))),
    ];
    if let Some(h4) = common::helm(4) {
        tools.push((Tool::Helm4, h4));
    }
    let reports: Vec<Report> = std::thread::scope(|s| {
        let hs: Vec<_> = CASES
            .iter()
            .map(|c| {
                let (charts, tools) = (&charts, &tools);
                s.spawn(move || run_case(tb, charts, c, tools))
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut unexplained = Vec::new();
    for r in &reports {
        for l in &r.lines {
            eprintln!("{l}");
        }
        for (tool, at) in &r.fail_at {
            eprintln!("  step 3 {tool:?}: failure reported {at:.1} s after the start");
        }
        for d in &r.diffs {
            match KNOWN.iter().find(|(k, _)| d.contains(k)) {
                Some((_, why)) => eprintln!("  kept difference: {d} ({why})"),
                None => {
                    eprintln!("  DIFFERENCE: {d}");
                    unexplained.push(d.clone());
                }
            }
        }
    }
    // Wait soundness: rudder's failing upgrade fails at its deadline, not before, and not more
    // than 10 s after it.
    for r in &reports {
        for (tool, at) in &r.fail_at {
            if *tool == Tool::Rudder {
                assert!(
                    (TIMEOUT_SECS..=TIMEOUT_SECS + 10.0).contains(at),
                    "rudder's failing upgrade reported its failure after {at:.1} s"
                );
            }
        }
    }
    assert!(
        unexplained.is_empty(),
        "{} unexplained differences from Helm 3",
        unexplained.len()
    );
}
