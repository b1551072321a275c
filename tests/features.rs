//! What a program that embeds rudder builds: with `default-features =
//! false, features = ["kube"]`, none of the binaries' dependencies (clap,
//! mimalloc) and no PostgreSQL client.
use std::process::Command;

/// The crate names of `cargo tree -e normal` of the library with `features`.
fn normal_deps(features: &[&str]) -> Vec<String> {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR")).args([
        "tree", "--locked", "-p", "rudder", "-e", "normal", "--prefix", "none", "--format", "{p}",
    ]);
    cmd.args(features);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "cargo tree {features:?}: {out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// A crate only the binaries or the PostgreSQL store need.
fn unwanted(name: &str) -> bool {
    name.starts_with("clap") || name.contains("mimalloc") || name.contains("postgres")
}

#[test]
fn kube_alone_builds_no_clap_mimalloc_or_postgres() {
    let deps = normal_deps(&["--no-default-features", "--features", "kube"]);
    assert!(deps.iter().any(|d| d == "rudder"), "{deps:?}");
    assert!(deps.iter().any(|d| d == "kube"), "{deps:?}");
    let bad: Vec<&String> = deps.iter().filter(|d| unwanted(d)).collect();
    assert!(bad.is_empty(), "library with kube only pulls in {bad:?}");
}

/// The default features (what the binaries are built with) do have them:
/// the check above looks at the right names.
#[test]
fn default_features_bring_the_cli_and_postgres() {
    let deps = normal_deps(&[]);
    for want in ["clap", "mimalloc", "libmimalloc-sys", "postgres"] {
        assert!(deps.iter().any(|d| d == want), "{want} not in {deps:?}");
    }
}
