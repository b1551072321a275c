//! Shared helpers for integration tests: where the conformance corpus and the
//! real Helm oracle are, and how a missing one is reported.
//!
//! A missing `../shared` or Helm binary makes a test skip with a visible
//! message, unless `RUDDER_REQUIRE_ORACLE=1` (set by `.ci/run`), which turns
//! the skip into a failure.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Whether a missing oracle must fail the test instead of skipping it.
pub fn oracle_required() -> bool {
    std::env::var("RUDDER_REQUIRE_ORACLE").is_ok_and(|v| v == "1")
}

/// Reports a missing piece: panics in CI, prints a skip message otherwise.
/// Returns `None` so callers can write `let Some(x) = ... else { return };`.
pub fn missing<T>(what: &str) -> Option<T> {
    if oracle_required() {
        panic!("RUDDER_REQUIRE_ORACLE=1 but {what} is missing");
    }
    eprintln!("SKIPPED: {what} is missing; set it up to run this test");
    log_skip(what);
    None
}

/// Appends the skip to `$RUDDER_SKIP_LOG` (set by `scripts/test`), which
/// prints a summary at the end of the run: cargo test hides the output of
/// tests that pass, skips included.
pub fn log_skip(what: &str) {
    use std::io::Write;
    let Some(path) = std::env::var_os("RUDDER_SKIP_LOG") else {
        return;
    };
    let bin = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map(|s| s.rsplit_once('-').map_or(s.clone(), |(b, _)| b.to_string()))
        .unwrap_or_default();
    let test = std::thread::current().name().unwrap_or("?").to_string();
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{bin}::{test}\t{what}");
    }
}

/// The `../shared` directory next to the project, if present.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    if dir.join("conformance").is_dir() {
        Some(dir.canonicalize().unwrap_or(dir))
    } else {
        missing("../shared (the conformance corpus)")
    }
}

fn locate_helm(major: u8) -> Option<PathBuf> {
    let var = format!("HELM{major}_BIN");
    if let Ok(p) = std::env::var(&var) {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Some(p);
        }
    }
    let installer = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/tools/install-helm");
    if installer.is_file() {
        let out = Command::new("bash")
            .arg(&installer)
            .arg(major.to_string())
            .output()
            .ok()?;
        if out.status.success() {
            let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// The real Helm binary of the given major version (3 or 4), if available.
pub fn helm(major: u8) -> Option<PathBuf> {
    static H3: OnceLock<Option<PathBuf>> = OnceLock::new();
    static H4: OnceLock<Option<PathBuf>> = OnceLock::new();
    let cell = if major == 3 { &H3 } else { &H4 };
    match cell.get_or_init(|| locate_helm(major)) {
        Some(p) => Some(p.clone()),
        None => missing(&format!(
            "Helm {major} (HELM{major}_BIN or ../shared/tools/install-helm)"
        )),
    }
}

/// A `Command` for real Helm with throwaway config/cache/data homes, so tests
/// never touch the user's Helm state.
pub fn helm_command(bin: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_DATA_HOME", home.join("data"))
        .env("TZ", "UTC");
    cmd
}

/// The path of a built example (`target/<profile>/examples/<name>`).
/// `cargo test` builds every example before the tests run, but `cargo test
/// --test <name>` does not: then this builds it, with `features`.
pub fn built_example(name: &str, features: &[&str]) -> PathBuf {
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
        let mut build = Command::new(env!("CARGO"));
        build.args(["build", "--example", name]);
        if !features.is_empty() {
            build.args(["--features", &features.join(",")]);
        }
        if !cfg!(debug_assertions) {
            build.arg("--release");
        }
        let status = build.status().expect("run cargo");
        assert!(status.success(), "cargo build --example {name} failed");
    }
    assert!(p.exists(), "{} was not built", p.display());
    p
}
