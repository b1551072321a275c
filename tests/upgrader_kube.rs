//! The upgrader's story on a real API server (the test bed, `scripts/testbed`),
//! through the `rudder-upgrader` binary and the Kubernetes executor:
//!
//! 1. install the control plane (Kubernetes v1.21.4, one controller,
//!    kubelets, node-local-dns);
//! 2. upgrade it to v1.22.2;
//! 3. an upgrade whose kube-apiserver carries a bad flag; its pods carry
//!    the bed's `testbed.kwok.io/behavior: never-ready` label, so they run
//!    but never become Ready, and the release is rolled back at its deadline.
//!
//! Then real `helm history -n kube-system kube-apiserver` (Helm 3 and 4)
//! prints what `rudder-upgrader history kube-apiserver` prints, and
//! `helm list -A` shows every component at the revision and status of the
//! upgrader's own history.
//!
//! metrics-server is left out: its APIService points at a Service no real
//! process backs on the bed (kwok pods serve nothing), which makes the
//! aggregated `metrics.k8s.io` group unavailable for everything else.
//!
//! The bed is this test's own (a fresh `scripts/testbed up` in a new
//! directory), since the releases live in `kube-system` under fixed names.
#[path = "release_common/mod.rs"]
mod release_common;
mod testbed_common;
// The binary's demo, for its config writer and targets.
#[allow(dead_code)]
#[path = "../src/bin/rudder-upgrader/demo.rs"]
mod demo;

use release_common::common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use testbed_common::Testbed;

struct Run {
    stdout: String,
    stderr: String,
    ok: bool,
}

fn run(o: Output) -> Run {
    Run {
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        ok: o.status.success(),
    }
}

struct Bed {
    tb: Testbed,
    work: tempfile::TempDir,
}

impl Bed {
    fn upgrader(&self, args: &[&str]) -> Run {
        run(Command::new(env!("CARGO_BIN_EXE_rudder-upgrader"))
            .current_dir(self.work.path())
            .env_remove("KUBECONFIG")
            .env_remove("HELM_DRIVER")
            .env("TZ", "UTC")
            .arg("--kubeconfig")
            .arg(&self.tb.kubeconfig)
            .args(args)
            .output()
            .expect("runs rudder-upgrader"))
    }

    fn apply(&self, config: &Path, timeout: &str) -> Run {
        let t0 = Instant::now();
        let r = self.upgrader(&[
            "--config",
            config.to_str().unwrap(),
            "--timeout",
            timeout,
            "--upgrade-kubelets",
            "apply",
            "--confirm",
        ]);
        eprintln!(
            "rudder-upgrader apply {} ({:.1} s, ok={}):\n{}{}",
            config.display(),
            t0.elapsed().as_secs_f64(),
            r.ok,
            r.stdout,
            r.stderr
        );
        r
    }

    fn helm(&self, bin: &Path, args: &[&str]) -> Run {
        let home = self.work.path().join(format!(
            "helm-home-{}",
            bin.file_name().unwrap().to_string_lossy()
        ));
        run(common::helm_command(bin, &home)
            .env_remove("HELM_DRIVER")
            .arg("--kubeconfig")
            .arg(&self.tb.kubeconfig)
            .args(args)
            .output()
            .expect("runs helm"))
    }
}

/// A fresh bed in its own directory: `down` and wipe whatever an earlier
/// run left, then `up`.
fn own_bed() -> Option<Testbed> {
    testbed_common::build()
        .map_err(|e| common::missing::<()>(&e))
        .ok()?;
    let dir: PathBuf = testbed_common::shared_dir().with_file_name("upgrader_kube_own");
    if dir.exists() {
        let _ = testbed_common::run_script(&["down", dir.to_str().unwrap()], false);
        std::fs::remove_dir_all(&dir).unwrap();
    }
    match Testbed::start(&dir) {
        Ok(tb) => Some(tb),
        Err(why) => common::missing(&why),
    }
}

/// The config of `name` for `version`, on the bed: its service CIDR, no
/// metrics-server, and for the broken one the never-ready pod label.
fn config(dir: &Path, name: &str, version: &str, broken: bool) -> PathBuf {
    let path = demo::write_config(dir, name, version, broken).unwrap();
    let mut text = std::fs::read_to_string(&path).unwrap();
    for (from, to) in [
        ("serviceCIDR: 10.3.0.0/16", "serviceCIDR: 10.96.0.0/16"),
        (
            "components: [node-local-dns, metrics-server]",
            "components: [node-local-dns]",
        ),
    ] {
        assert!(text.contains(from), "demo config lacks {from:?}:\n{text}");
        text = text.replace(from, to);
    }
    if broken {
        text.push_str(
            "# On the test bed: the pods with the bad flag run but never become Ready.\n\
             podLabels:\n  kube-apiserver:\n    testbed.kwok.io/behavior: never-ready\n",
        );
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// `(revision, status)` of the last row of a `history` table.
fn last_row(history: &str) -> (String, String) {
    let row = history.lines().last().unwrap_or_default();
    let cells: Vec<&str> = row.split('\t').map(str::trim).collect();
    assert!(cells.len() >= 3, "not a history row: {row:?}");
    (cells[0].to_string(), cells[2].to_string())
}

const COMPONENTS: [&str; 7] = [
    "bootstrap-secrets",
    "pod-checkpointer",
    "kube-apiserver",
    "kubernetes",
    "calico",
    "kubelet",
    "node-local-dns",
];

#[test]
fn install_upgrade_and_a_broken_upgrade_rolled_back_match_real_helm() {
    let Some(helm3) = common::helm(3) else { return };
    let Some(helm4) = common::helm(4) else { return };
    let Some(tb) = own_bed() else { return };
    let bed = Bed {
        tb,
        work: tempfile::tempdir().unwrap(),
    };
    let dir = bed.work.path();
    // The single controller's workloads select controller nodes.
    bed.tb.kubectl_ok(&[
        "label",
        "node",
        "kwok-node-0",
        "node.kubernetes.io/controller=true",
        "--overwrite",
    ]);

    // 1. install
    let install = bed.apply(&config(dir, "install", "v1.21.4", false), "90s");
    assert!(install.ok, "install failed");
    for c in ["bootstrap-secrets", "kube-apiserver", "calico", "kubelet"] {
        let line = format!("Controlplane component '{c}' is missing, reinstalling... Done.");
        assert!(install.stdout.contains(&line), "no {line:?}");
    }
    assert!(install
        .stdout
        .contains("Successfully installed component 'node-local-dns'!"));

    // 2. upgrade
    let upgrade = bed.apply(&config(dir, "upgrade", "v1.22.2", false), "90s");
    assert!(upgrade.ok, "upgrade failed");
    assert!(upgrade
        .stdout
        .contains("Ensuring controlplane component 'kube-apiserver' is up to date... Done."));
    let image = |b: &Bed| {
        b.tb.kubectl_ok(&[
            "-n",
            "kube-system",
            "get",
            "deployment",
            "kube-apiserver",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].command}",
        ])
    };
    let after_upgrade = image(&bed);
    assert!(
        after_upgrade.starts_with("registry.k8s.io/kube-apiserver:v1.22.2 "),
        "{after_upgrade}"
    );

    // 3. the broken upgrade, rolled back at its 30 s deadline
    let t0 = Instant::now();
    let broken = bed.apply(&config(dir, "broken", "v1.22.2", true), "30s");
    let took = t0.elapsed();
    assert!(!broken.ok, "the broken upgrade succeeded");
    let out = format!("{}{}", broken.stdout, broken.stderr);
    for want in [
        "Ensuring controlplane component 'kube-apiserver' is up to date... Failed!",
        "Error: controlplane component 'kube-apiserver' failed.",
        "Not ready: Deployment kube-system/kube-apiserver",
        "Component 'kube-apiserver' was rolled back to revision 2 (recorded as revision 4).",
        "Components not attempted: kubernetes, calico, kubelet, node-local-dns.",
        "To retry, fix the cause and run: ",
    ] {
        assert!(out.contains(want), "no {want:?} in:\n{out}");
    }
    assert!(
        took >= Duration::from_secs(30),
        "failed after {took:?}, before its deadline"
    );
    assert_eq!(
        image(&bed),
        after_upgrade,
        "the rollback did not restore v2"
    );
    assert!(!after_upgrade.contains(demo::BAD_FLAG));

    // Real Helm reads the same history, byte for byte.
    let ours = bed.upgrader(&["history", "kube-apiserver"]);
    assert!(ours.ok, "{}", ours.stderr);
    let statuses: Vec<String> = ours
        .stdout
        .lines()
        .skip(1)
        .map(|l| {
            let c: Vec<&str> = l.split('\t').map(str::trim).collect();
            format!("{} {} {}", c[0], c[2], c[5])
        })
        .collect();
    assert_eq!(statuses.len(), 4, "{}", ours.stdout);
    assert_eq!(statuses[0], "1 superseded Install complete");
    assert_eq!(statuses[1], "2 superseded Upgrade complete");
    assert!(
        statuses[2].starts_with("3 failed Upgrade \"kube-apiserver\" failed: "),
        "{}",
        statuses[2]
    );
    assert_eq!(statuses[3], "4 deployed Rollback to 2");
    for helm in [&helm3, &helm4] {
        let h = bed.helm(helm, &["history", "-n", "kube-system", "kube-apiserver"]);
        assert!(h.ok, "{}: {}", helm.display(), h.stderr);
        assert_eq!(h.stdout, ours.stdout, "{} history differs", helm.display());
    }

    // helm list -A: every component, at the upgrader's revision and status.
    let list = bed.helm(&helm3, &["list", "-A", "-o", "json"]);
    assert!(list.ok, "{}", list.stderr);
    let list: Vec<Value> = serde_json::from_str(&list.stdout).unwrap();
    let mut names: Vec<&str> = list.iter().map(|r| r["name"].as_str().unwrap()).collect();
    names.sort();
    let mut want = COMPONENTS.to_vec();
    want.sort();
    assert_eq!(names, want);
    for c in COMPONENTS {
        let h = bed.upgrader(&["history", c]);
        assert!(h.ok, "{c}: {}", h.stderr);
        let (rev, status) = last_row(&h.stdout);
        let row = list.iter().find(|r| r["name"] == c).unwrap();
        assert_eq!(row["namespace"], "kube-system", "{c}");
        assert_eq!(row["revision"].as_str().unwrap(), rev, "{c}");
        assert_eq!(row["status"].as_str().unwrap(), status, "{c}");
    }
    let by_name = |n: &str| list.iter().find(|r| r["name"] == n).unwrap().clone();
    assert_eq!(by_name("kube-apiserver")["revision"], "4");
    assert_eq!(by_name("kubernetes")["revision"], "2");
    assert_eq!(by_name("calico")["revision"], "1");
    let _ = bed.tb.down();
}
