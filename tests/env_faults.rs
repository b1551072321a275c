//! Fault injection from the environment (`RUDDER_CRASH_AT`,
//! `RUDDER_SIM_FAIL_AT`) is for the binaries and tests only: a program that
//! embeds the library applies a plan with those variables set as if they
//! were not, until it turns the hidden switch on.
//!
//! Each test runs this test binary again as a child (the crash knob aborts
//! the process), with the knobs set: the child applies a one-release plan
//! through the library on a persisted simulated cluster and file store.
use rudder::exec::{Executor, WallClock};
use rudder::plan::{DesiredRelease, Planner};
use rudder::targets::Targets;
use std::collections::BTreeMap;
use std::process::{Command, Output};

/// Set in the child: `off` (an embedding program) or `on` (the switch
/// turned on first); its value is the scratch directory after a colon.
const CHILD: &str = "RUDDER_ENV_FAULTS_TEST_CHILD";

const CM: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  color: blue\n";

/// The child's work: plan and apply `web` into `apps`, then print the
/// release's history length.
fn child(spec: &str) {
    let (mode, dir) = spec.split_once(':').expect("mode:dir");
    if mode == "on" {
        rudder::enable_env_faults();
    }
    let mut manifests = BTreeMap::new();
    manifests.insert("cm.yaml".to_string(), CM.to_string());
    let chart = rudder::chart::chart_from_manifests("web", "apps", &manifests).unwrap();
    let t = Targets::open(&format!("file:{dir}/store"), &format!("sim:{dir}/cluster")).unwrap();
    let plan = Planner::new(&*t.store, &t.store_url, &*t.cluster)
        .plan(&[DesiredRelease::new("web", "apps", chart)])
        .unwrap();
    let clock = WallClock::default();
    let report =
        Executor::new(&*t.store, &t.store_url, &*t.cluster, t.journal, &clock).apply(&plan);
    match report {
        Ok(r) if r.success() => {
            let history = t.store.history("apps", "web").unwrap();
            println!("applied: {} revision(s)", history.len());
        }
        other => println!("not applied: {other:?}"),
    }
}

/// Runs the test `name` of this binary as a child with `mode` and `env`.
fn run_child(name: &str, mode: &str, env: &[(&str, &str)]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD, format!("{mode}:{}", dir.path().display()))
        .env_remove("RUDDER_CRASH_AT")
        .env_remove("RUDDER_SIM_FAIL_AT")
        .env_remove("RUDDER_SIM_LATENCY_MS")
        .env_remove("RUDDER_SIM_READY_DELAY_MS");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn crash_at_does_not_abort_an_embedding_program() {
    if let Ok(spec) = std::env::var(CHILD) {
        return child(&spec);
    }
    let name = "crash_at_does_not_abort_an_embedding_program";
    let knobs = [("RUDDER_CRASH_AT", "1"), ("RUDDER_SIM_FAIL_AT", "1")];
    let off = run_child(name, "off", &knobs);
    let out = text(&off.stdout);
    assert!(off.status.success(), "{off:?}");
    assert!(out.contains("applied: 1 revision(s)"), "{out}");
    assert!(!text(&off.stderr).contains("aborting"), "{off:?}");

    // The same program with the switch on: the knob is live, so the test
    // above shows the switch, not a knob that never worked.
    let on = run_child(name, "on", &[("RUDDER_CRASH_AT", "1")]);
    assert!(!on.status.success(), "{on:?}");
    assert!(
        text(&on.stderr).contains("RUDDER_CRASH_AT=1: aborting after write 1"),
        "{}",
        text(&on.stderr)
    );
    assert!(!text(&on.stdout).contains("applied"), "{on:?}");
}

#[test]
fn sim_fail_at_fails_no_write_of_an_embedding_program() {
    if let Ok(spec) = std::env::var(CHILD) {
        return child(&spec);
    }
    let name = "sim_fail_at_fails_no_write_of_an_embedding_program";
    let off = run_child(name, "off", &[("RUDDER_SIM_FAIL_AT", "1")]);
    assert!(off.status.success(), "{off:?}");
    assert!(
        text(&off.stdout).contains("applied: 1 revision(s)"),
        "{off:?}"
    );

    let on = run_child(name, "on", &[("RUDDER_SIM_FAIL_AT", "1")]);
    let out = text(&on.stdout);
    assert!(on.status.success(), "{on:?}");
    assert!(out.contains("not applied"), "{out}");
    assert!(out.contains("RUDDER_SIM_FAIL_AT=1"), "{out}");
}
