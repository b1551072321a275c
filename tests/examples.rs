//! The examples that need no cluster run, and say what they should.
//! (`examples/operator.rs` runs on the test bed in `tests/client_kube.rs`;
//! `examples/component_chart.rs`'s `main` and snapshot test run as its own
//! tests, with `cargo test`.)
mod common;

use std::process::Command;

#[test]
fn plan_apply_installs_skips_the_noop_and_upgrades() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(common::built_example("plan_apply", &[]))
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let want = [
        "plan: apps/web install -> revision 1",
        "applied: apps/web installed (revision 1)",
        "plan: apps/web noop -> revision 1",
        "nothing to do",
        "plan: apps/web upgrade -> revision 2",
        "applied: apps/web upgraded (revision 2)",
        "history: revision 1 superseded \"Install complete\"",
        "history: revision 2 deployed \"Upgrade complete\"",
    ];
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines, want, "{stdout}");
    assert!(stderr.contains("\"event\":\"release-started\""), "{stderr}");
}
