//! `scripts/bench-cluster` is run by hand (it needs the test bed, helmfile
//! and nelm, and minutes); CI checks that it parses its arguments.
use std::process::Command;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/bench-cluster"
    ))
    .args(args)
    .output()
    .expect("run scripts/bench-cluster (needs python3)")
}

#[test]
fn parses_its_arguments() {
    let out = bench(&[
        "--check-args",
        "--releases",
        "20",
        "--configmaps",
        "50",
        "--services",
        "0",
        "--deployments",
        "0",
        "--tools",
        "rudder,helmfile",
        "--rudder-arg=--concurrency=4",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("would run: rudder,helmfile on 20 releases x (50 ConfigMaps, 0 Services, 0 Deployments) = 1000 objects per tool"),
        "{stdout}"
    );
}

#[test]
fn refuses_unknown_tools_and_empty_runs() {
    for args in [
        &["--check-args", "--tools", "flux"][..],
        &["--check-args", "--releases", "0"],
        &[
            "--check-args",
            "--configmaps",
            "0",
            "--services",
            "0",
            "--deployments",
            "0",
        ],
        &["--check-args", "--releases", "many"],
    ] {
        let out = bench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("bench-cluster: error:"),
            "{args:?}"
        );
    }
}
