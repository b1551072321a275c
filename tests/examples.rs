//! The examples that need no cluster run, and say what they should.
//! (`examples/operator.rs` runs on the test bed in `tests/client_kube.rs`;
//! `examples/component_chart.rs`'s `main` and snapshot test run as its own
//! tests, with `cargo test`.)
use std::path::PathBuf;
use std::process::Command;

/// A built example: `cargo test` builds every example before the tests run.
fn example(name: &str) -> PathBuf {
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .to_path_buf();
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let p = target.join(profile).join("examples").join(name);
    if !p.exists() {
        // `cargo test` builds every example first; `cargo test --test
        // examples` does not, so build this one now.
        let mut build = Command::new(env!("CARGO"));
        build.args(["build", "--example", name]);
        if !cfg!(debug_assertions) {
            build.arg("--release");
        }
        let status = build.status().expect("run cargo");
        assert!(status.success(), "cargo build --example {name} failed");
    }
    assert!(p.exists(), "{} was not built", p.display());
    p
}

#[test]
fn plan_apply_installs_skips_the_noop_and_upgrades() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(example("plan_apply"))
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
