//! The releases file's chart sources (issue 31) end to end: `rudder plan
//! releases.yaml` against a chart repository served by the test server
//! (tests/support/chart_server.rs) with basic auth, the repository defined
//! in the file's `repositories:` or added with `rudder repo add`, and
//! releases that pick chart versions with `version:`.
//!
//! The charts are packaged by rudder's library; the repository's
//! `index.yaml` is written by real Helm (`helm repo index`), so without Helm
//! the test prints a skip message, unless `RUDDER_REQUIRE_ORACLE=1`, which
//! makes it fail. Every child gets Helm's files in a temporary directory.

#[path = "support/chart_server.rs"]
mod chart_server;
mod common;

use chart_server::{ChartServer, ServerOptions};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

const VERSIONS: &[&str] = &["0.1.0", "0.1.5", "0.2.0"];

/// `rudder` in `cwd` (so the default store `file:.rudder` and cluster
/// `sim:.rudder/cluster` start empty there), with Helm's files under `home`.
fn rudder(cwd: &Path, home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rudder"));
    c.args(args)
        .current_dir(cwd)
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_DATA_HOME", home.join("data"))
        .env("HOME", home)
        .env_remove("HELM_REPOSITORY_CONFIG")
        .env_remove("HELM_REPOSITORY_CACHE")
        .env_remove("HELM_REGISTRY_CONFIG")
        .env_remove("MYREPO_USERNAME")
        .env_remove("MYREPO_PASSWORD");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run rudder")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Packages the chart `demo` at each of [`VERSIONS`] into `dir` with
/// rudder's library and indexes them with Helm.
fn build_repo(helm_bin: &Path, dir: &Path, home: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for v in VERSIONS {
        let src = tempfile::tempdir().unwrap();
        let c = src.path().join("demo");
        std::fs::create_dir_all(c.join("templates")).unwrap();
        std::fs::write(
            c.join("Chart.yaml"),
            format!("apiVersion: v2\nname: demo\nversion: {v}\n"),
        )
        .unwrap();
        std::fs::write(
            c.join("templates/cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n\
             data:\n  version: {{ .Chart.Version | quote }}\n",
        )
        .unwrap();
        let chart = rudder::chart::load(&c).expect("load the demo chart");
        let bytes = rudder::chart::package_bytes(&chart).expect("package the demo chart");
        std::fs::write(dir.join(format!("demo-{v}.tgz")), bytes).unwrap();
    }
    let o = common::helm_command(helm_bin, home)
        .env("HOME", home)
        .arg("repo")
        .arg("index")
        .arg(dir)
        .output()
        .expect("run helm repo index");
    assert!(o.status.success(), "helm repo index: {}", text(&o.stderr));
}

/// The `to.chart` of each release of a JSON plan, by release name.
fn planned_charts(o: &Output) -> Vec<(String, String)> {
    assert!(
        o.status.success(),
        "plan failed: {}\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON: {e}\n{}", text(&o.stdout)));
    v["releases"]
        .as_array()
        .expect("releases")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap_or_default().to_string(),
                r["to"]["chart"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn releases_file_charts_from_a_repository_with_basic_auth() {
    let Some(hbin) = common::helm(3) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let srv = tmp.path().join("srv");
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    build_repo(&hbin, &srv, &tmp.path().join("pkg-home"));
    let server = ChartServer::start(&srv, ServerOptions::default().with_basic_auth("u", "p"));
    let url = server.url();
    let file = work.join("releases.yaml");
    // Errors name the file as it was given.
    let shown = "releases.yaml";
    let write = |body: &str| std::fs::write(&file, body).unwrap();

    // Three releases of the file's repository: one index download for all,
    // each chart version downloaded once, all with the file's credentials
    // (the server refuses anything else).
    write(&format!(
        "repositories:
- name: myrepo
  url: {url}
  username: u
  password: p
releases:
- name: web
  chart: myrepo/demo
  version: \"~0.1\"
- name: api
  chart: myrepo/demo
  version: 0.1.0
- name: latest
  chart: myrepo/demo
- name: here
  chart: charts/here
"
    ));
    // A chart on disk next to the file, among the remote ones.
    std::fs::create_dir_all(work.join("charts/here/templates")).unwrap();
    std::fs::write(
        work.join("charts/here/Chart.yaml"),
        "apiVersion: v2\nname: here\nversion: 3.0.0\n",
    )
    .unwrap();
    let o = rudder(&work, &home, &["plan", "releases.yaml", "-o", "json"], &[]);
    assert_eq!(
        planned_charts(&o),
        [
            ("web".to_string(), "demo-0.1.5".to_string()),
            ("api".into(), "demo-0.1.0".into()),
            ("latest".into(), "demo-0.2.0".into()),
            ("here".into(), "here-3.0.0".into()),
        ]
    );
    assert_eq!(server.count("/index.yaml"), 1, "{:?}", server.requests());
    for v in VERSIONS {
        assert_eq!(server.count(&format!("/demo-{v}.tgz")), 1, "demo-{v}");
    }

    // A version that no chart has: the error names the file, the line and
    // column of `version:`, the release, and what was asked for.
    write(&format!(
        "repositories:
- name: myrepo
  url: {url}
  username: u
  password: p
releases:
- name: web
  chart: myrepo/demo
  version: \"~0.3\"
"
    ));
    let o = rudder(&work, &home, &["plan", "releases.yaml"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    assert_eq!(
        text(&o.stderr),
        format!(
            "Error: {shown}:9:12: release \"default/web\": chart myrepo/demo: chart \"demo\" \
             version \"~0.3\" not found in {url} repository\n"
        )
    );

    // Credentials from helmfile's environment variables, and a wrong
    // password named at the chart's line.
    let no_credentials = format!(
        "repositories:
- name: myrepo
  url: {url}
releases:
- name: web
  chart: myrepo/demo
  version: 0.1.5
"
    );
    write(&no_credentials);
    let o = rudder(
        &work,
        &home,
        &["plan", "releases.yaml", "-o", "json"],
        &[("MYREPO_USERNAME", "u"), ("MYREPO_PASSWORD", "p")],
    );
    assert_eq!(
        planned_charts(&o),
        [("web".to_string(), "demo-0.1.5".to_string())]
    );
    let o = rudder(
        &work,
        &home,
        &["plan", "releases.yaml"],
        &[("MYREPO_USERNAME", "u"), ("MYREPO_PASSWORD", "wrong")],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    let err = text(&o.stderr);
    assert!(
        err.starts_with(&format!(
            "Error: {shown}:6:10: release \"default/web\": chart myrepo/demo: "
        )) && err.contains("401"),
        "{err}"
    );

    // A repository added with `rudder repo add` (Helm's repositories.yaml
    // and its cached index), when the file does not define it.
    let o = rudder(
        &work,
        &home,
        &[
            "repo",
            "add",
            "added",
            &url,
            "--username",
            "u",
            "--password",
            "p",
        ],
        &[],
    );
    assert!(o.status.success(), "repo add: {}", text(&o.stderr));
    write(
        "releases:
- name: web
  chart: added/demo
  version: \"<0.2\"
",
    );
    let o = rudder(&work, &home, &["plan", "releases.yaml", "-o", "json"], &[]);
    assert_eq!(
        planned_charts(&o),
        [("web".to_string(), "demo-0.1.5".to_string())]
    );
    write(
        "releases:
- name: web
  chart: added/demo
  version: 9.9.9
",
    );
    let o = rudder(&work, &home, &["plan", "releases.yaml"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    assert_eq!(
        text(&o.stderr),
        format!(
            "Error: {shown}:4:12: release \"default/web\": chart added/demo: chart \"demo\" \
             matching 9.9.9 not found in added index. (try 'rudder repo update'): no chart \
             version found for demo-9.9.9\n"
        )
    );
}
