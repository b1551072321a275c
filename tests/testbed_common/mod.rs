//! A shared Kubernetes test bed (`scripts/testbed`) for integration tests.
//!
//! Use from a test crate root:
//!
//! ```ignore
//! mod common;          // tests/common/mod.rs: `missing()`, Helm helpers
//! mod testbed_common;  // this file
//! let Some(tb) = testbed_common::testbed() else { return };
//! let ns = tb.fresh_namespace("mytest"); // absent: install with --create-namespace
//! ```
//!
//! [`testbed()`] builds the binaries once per machine (`scripts/testbed build`, answered from
//! `~/.cache/rudder-testbed` when cached) and starts one control plane per test binary, in
//! `target/tmp/testbed/<crate>` (`scripts/testbed up DIR`). Every start is a fresh cluster:
//! whatever an earlier run left in DIR (a bed still running, etcd's data) is stopped and wiped
//! first, so tests start where a user starts, on a cluster that holds nothing of rudder's or
//! Helm's, and [`Testbed::start`] checks that it does not. The bed is not stopped by the test
//! code itself: `up` gets `RUDDER_TESTBED_WATCH_PID` (this process), and a small detached watcher
//! runs `scripts/testbed down DIR` once the test binary has exited. `scripts/testbed down DIR`
//! stops it by hand.
//!
//! Namespaces: [`Testbed::fresh_namespace`] names one that does not exist; tests of rudder (and
//! Helm) installs into it create it the way users do, with `--create-namespace` or a releases
//! file's `createNamespace`. [`Testbed::create_namespace`] creates one, for tests of what lies
//! below an install (kubectl, the cluster client, the record stores on their own).
//!
//! When Go or the build is missing, [`testbed()`] reports it through `common::missing` (a visible
//! `SKIPPED:` line, or a panic under `RUDDER_REQUIRE_ORACLE=1`) and returns `None`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::missing;

/// A running control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok.
#[derive(Debug)]
pub struct Testbed {
    /// The state directory given to `scripts/testbed up`.
    pub dir: PathBuf,
    /// Admin kubeconfig (client certificate in `system:masters`).
    pub kubeconfig: PathBuf,
    /// The built `kubectl` matching the server version.
    pub kubectl_bin: PathBuf,
}

/// `scripts/testbed` in this checkout.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/testbed")
}

/// Runs `scripts/testbed ARGS`, capturing its output.
pub fn run_script(args: &[&str], watch: bool) -> std::io::Result<Output> {
    let mut cmd = Command::new("bash");
    cmd.arg(script()).args(args).stdin(Stdio::null());
    if watch {
        cmd.env("RUDDER_TESTBED_WATCH_PID", std::process::id().to_string());
    }
    cmd.output()
}

fn describe(out: &Output) -> String {
    let tail = |b: &[u8]| {
        let s = String::from_utf8_lossy(b);
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    };
    format!(
        "exit {}\n--- stdout:\n{}\n--- stderr:\n{}",
        out.status,
        tail(&out.stdout),
        tail(&out.stderr)
    )
}

/// Builds the binaries (fast when cached). `Err` explains why the bed cannot exist here.
pub fn build() -> Result<(), String> {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            if Command::new("go").arg("version").output().is_err()
                && run_script(&["path", "kube-apiserver"], false)
                    .map(|o| !o.status.success())
                    .unwrap_or(true)
            {
                return Err("Go (to build the test bed: scripts/testbed build)".into());
            }
            let out = run_script(&["build"], false)
                .map_err(|e| format!("scripts/testbed build (could not run bash: {e})"))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "a built test bed (scripts/testbed build failed: {})",
                    describe(&out)
                ))
            }
        })
        .clone()
}

impl Testbed {
    /// Builds if needed, stops and wipes whatever an earlier run left in DIR, runs
    /// `scripts/testbed up DIR`, and checks that the new cluster holds nothing of rudder's or
    /// Helm's.
    pub fn start(dir: &Path) -> Result<Testbed, String> {
        build()?;
        let d = dir.to_str().ok_or("test bed dir is not UTF-8")?;
        if dir.join("etcd").exists() {
            let down = run_script(&["down", d], false)
                .map_err(|e| format!("scripts/testbed down (could not run bash: {e})"))?;
            if !down.status.success() {
                return Err(format!(
                    "a stopped test bed (scripts/testbed down {d} failed: {})",
                    describe(&down)
                ));
            }
            std::fs::remove_dir_all(dir.join("etcd"))
                .map_err(|e| format!("a wiped test bed (removing {d}/etcd: {e})"))?;
        }
        let up = || {
            run_script(&["up", d], true)
                .map_err(|e| format!("scripts/testbed up (could not run bash: {e})"))
        };
        let mut out = up()?;
        if !out.status.success() {
            // Starting the bed is infrastructure, not the code under test: one visible retry
            // (`up` stops whatever it left half up), and the first failure stays on record.
            eprintln!(
                "test bed: `scripts/testbed up {d}` failed, retrying once: {}",
                describe(&out)
            );
            out = up()?;
        }
        if !out.status.success() {
            return Err(format!(
                "a running test bed (scripts/testbed up {d} failed: {})",
                describe(&out)
            ));
        }
        let path = run_script(&["path", "kubectl"], false).map_err(|e| e.to_string())?;
        if !path.status.success() {
            return Err(format!("kubectl from the test bed ({})", describe(&path)));
        }
        let tb = Testbed {
            dir: dir.to_path_buf(),
            kubeconfig: dir.join("kubeconfig"),
            kubectl_bin: PathBuf::from(String::from_utf8_lossy(&path.stdout).trim()),
        };
        tb.assert_pristine();
        Ok(tb)
    }

    /// Panics unless the cluster holds only what a new cluster holds: its own namespaces, and
    /// no release record (Secret or ConfigMap labelled `owner=helm`) anywhere.
    pub fn assert_pristine(&self) {
        let namespaces = self.kubectl_ok(&[
            "get",
            "namespaces",
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ]);
        let extra: Vec<&str> = namespaces
            .split_whitespace()
            .filter(|n| {
                !matches!(
                    *n,
                    "default" | "kube-node-lease" | "kube-public" | "kube-system"
                )
            })
            .collect();
        assert!(
            extra.is_empty(),
            "the new test bed already has namespaces {extra:?}"
        );
        let records = self.kubectl_ok(&[
            "get",
            "secrets,configmaps",
            "-A",
            "-l",
            "owner=helm",
            "-o",
            "name",
        ]);
        assert!(
            records.trim().is_empty(),
            "the new test bed already holds release records: {records}"
        );
    }

    /// Runs `scripts/testbed up` again on this bed's directory.
    pub fn up(&self) -> Result<(), String> {
        let out =
            run_script(&["up", self.dir.to_str().unwrap()], true).map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(())
        } else {
            Err(describe(&out))
        }
    }

    /// Runs `scripts/testbed down` on this bed's directory.
    pub fn down(&self) -> Result<(), String> {
        let out =
            run_script(&["down", self.dir.to_str().unwrap()], false).map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(())
        } else {
            Err(describe(&out))
        }
    }

    /// A `kubectl` command against this bed.
    pub fn kubectl(&self) -> Command {
        let mut cmd = Command::new(&self.kubectl_bin);
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--request-timeout=30s")
            .stdin(Stdio::null());
        cmd
    }

    /// Runs `kubectl ARGS`, panicking with its output unless it succeeds; returns stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl().args(args).output().expect("run kubectl");
        assert!(
            out.status.success(),
            "kubectl {} failed: {}",
            args.join(" "),
            describe(&out)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `kubectl apply -n NS -f -` with the given manifest.
    pub fn apply(&self, ns: &str, manifest: &str) -> String {
        use std::io::Write;
        let mut child = self
            .kubectl()
            .args(["apply", "-n", ns, "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run kubectl apply");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(manifest.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "kubectl apply failed: {}",
            describe(&out)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A unique namespace name starting with `prefix`, of a namespace that does not exist:
    /// installs into it create it (`--create-namespace`, `createNamespace`), as a user's do.
    pub fn fresh_namespace(&self, prefix: &str) -> String {
        let name = unique_name(prefix);
        let out = self
            .kubectl()
            .args(["get", "namespace", &name, "-o", "name"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "namespace {name} already exists");
        name
    }

    /// Creates a namespace with a unique name starting with `prefix` and waits until its
    /// `default` ServiceAccount exists (pods are refused before that). Only for tests of what
    /// lies below an install (kubectl, the cluster client, the record stores on their own):
    /// rudder and Helm installs go into a [`Testbed::fresh_namespace`].
    pub fn create_namespace(&self, prefix: &str) -> String {
        let name = unique_name(prefix);
        self.kubectl_ok(&["create", "namespace", &name]);
        self.wait_for_service_account(&name);
        name
    }

    /// Waits until namespace `ns` has its `default` ServiceAccount.
    pub fn wait_for_service_account(&self, name: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = self
                .kubectl()
                .args(["get", "serviceaccount", "default", "-n", name])
                .output()
                .unwrap();
            if out.status.success() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "ServiceAccount {name}/default did not appear within 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Whether namespace `ns` exists (terminating or not).
    pub fn namespace_exists(&self, ns: &str) -> bool {
        self.kubectl()
            .args(["get", "namespace", ns, "-o", "name"])
            .output()
            .unwrap()
            .status
            .success()
    }

    /// Waits until namespace `ns` is gone (deleted and finalized).
    pub fn wait_namespace_gone(&self, ns: &str, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while self.namespace_exists(ns) {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        true
    }
}

/// A namespace name starting with `prefix`, unique to this process and call.
fn unique_name(prefix: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        % 1_000_000_000;
    let mut name: String = prefix
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    name.truncate(30);
    format!(
        "{}-{}-{}-{}",
        name.trim_matches('-'),
        std::process::id(),
        stamp,
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// The directory of this test binary's shared bed.
pub fn shared_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("testbed")
        .join(env!("CARGO_CRATE_NAME"))
}

/// The shared test bed of this test binary, started on first use; `None` (after a visible skip
/// message) when it cannot be built or started, a panic instead under `RUDDER_REQUIRE_ORACLE=1`.
pub fn testbed() -> Option<&'static Testbed> {
    static TB: OnceLock<Result<Testbed, String>> = OnceLock::new();
    match TB.get_or_init(|| Testbed::start(&shared_dir())) {
        Ok(tb) => Some(tb),
        Err(what) => missing(what),
    }
}
