//! Chart repositories (issue 31) against a real HTTP(S) repository server
//! (tests/support/chart_server.rs) and real Helm v3.17.2 and v4.1.4, both
//! tools sharing one set of Helm files:
//! - a repository added by one tool is listed and used by the other;
//! - `rudder template NAME REPO/CHART` (and `--repo URL`) prints what
//!   `helm template` prints; pulled archives are the served bytes;
//! - a cached chart is not downloaded again;
//! - bad servers and bad input give a clear error and leave nothing in the
//!   chart cache: a wrong password, a digest mismatch, a truncated
//!   download, a server that hangs, an alias-bomb index, a redirect to
//!   another host, an archive over the loader's limits.
//!
//! Without `../shared` or Helm the interop tests print a skip message,
//! unless `RUDDER_REQUIRE_ORACLE=1`, which makes them fail.

#[path = "support/chart_server.rs"]
mod chart_server;
mod common;

use chart_server::{ChartServer, Fault, ServerOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Corpus charts whose `helm template` output is deterministic.
const CHARTS: &[&str] = &[
    "helm-alpine",
    "cert-manager",
    "ingress-nginx",
    "prom-node-exporter",
];

fn rudder(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rudder"));
    c.env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_DATA_HOME", home.join("data"))
        .env("HOME", home)
        .env("TZ", "UTC")
        .env_remove("HELM_REPOSITORY_CONFIG")
        .env_remove("HELM_REPOSITORY_CACHE")
        .env_remove("HELM_REGISTRY_CONFIG");
    c
}

fn helm(bin: &Path, home: &Path) -> Command {
    let mut c = common::helm_command(bin, home);
    c.env("HOME", home);
    c
}

/// Asserts two long texts are equal, showing the first line that differs.
#[track_caller]
fn same(got: &str, want: &str, what: &str) {
    if got != want {
        let line = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(got.lines().count().min(want.lines().count()));
        panic!(
            "{what}: differs at line {}: {:?} vs {:?}",
            line + 1,
            got.lines().nth(line),
            want.lines().nth(line)
        );
    }
}

fn run(mut c: Command) -> Output {
    c.output().expect("run")
}

#[track_caller]
fn ok(c: Command) -> String {
    let o = run(c);
    assert!(
        o.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[track_caller]
fn fails(c: Command) -> String {
    let o = run(c);
    assert!(
        !o.status.success(),
        "succeeded: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Packages the corpus charts with Helm into `dir` and indexes them with
/// relative URLs; returns the archive file names.
fn build_repo(helm_bin: &Path, shared: &Path, dir: &Path, home: &Path) -> Vec<String> {
    std::fs::create_dir_all(dir).unwrap();
    for c in CHARTS {
        let mut cmd = helm(helm_bin, home);
        cmd.arg("package")
            .arg(shared.join("conformance/charts").join(c).join("chart"))
            .arg("-d")
            .arg(dir);
        ok(cmd);
    }
    let mut cmd = helm(helm_bin, home);
    cmd.arg("repo").arg("index").arg(dir);
    ok(cmd);
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let n = e.ok()?.file_name().to_string_lossy().into_owned();
            n.ends_with(".tgz").then_some(n)
        })
        .collect();
    names.sort();
    names
}

/// Every file under the content cache (`<cache>/rudder/sha256`).
fn cache_files(home: &Path) -> Vec<PathBuf> {
    let dir = home.join("cache/rudder/sha256");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd.filter_map(|e| Some(e.ok()?.path())).collect();
    v.sort();
    v
}

/// The chart names of the corpus charts, as their Chart.yaml says.
fn chart_name(archive: &str) -> String {
    archive
        .rsplit_once('-')
        .map(|(n, _)| n.to_string())
        .unwrap()
}

fn interop(major: u8) {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let Some(hbin) = common::helm(major) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let root = tmp.path().join("srv");
    let archives = build_repo(&hbin, &shared, &root, &tmp.path().join("pkg-home"));
    let server = ChartServer::start(&root, ServerOptions::default().with_basic_auth("u", "p"));

    // rudder adds, helm lists and uses; helm adds, rudder lists and uses.
    let mut c = rudder(&home);
    c.args([
        "repo",
        "add",
        "byrudder",
        &server.url(),
        "--username",
        "u",
        "--password",
        "p",
    ]);
    assert_eq!(ok(c), "\"byrudder\" has been added to your repositories\n");
    let mut c = helm(&hbin, &home);
    c.args([
        "repo",
        "add",
        "byhelm",
        &server.url(),
        "--username",
        "u",
        "--password",
        "p",
    ]);
    ok(c);
    let mode = std::fs::metadata(home.join("config/repositories.yaml")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(mode.permissions().mode() & 0o777, 0o600);
    let mut c = helm(&hbin, &home);
    c.args(["repo", "list"]);
    let helm_list = ok(c);
    let mut c = rudder(&home);
    c.args(["repo", "list"]);
    assert_eq!(ok(c), helm_list, "repo list");
    assert!(helm_list.contains("byrudder") && helm_list.contains("byhelm"));

    for (i, archive) in archives.iter().enumerate() {
        let name = chart_name(archive);
        let repo = if i % 2 == 0 { "byrudder" } else { "byhelm" };
        let reference = format!("{repo}/{name}");
        let mut c = helm(&hbin, &home);
        c.args(["template", "rel", &reference]);
        let want = ok(c);
        let mut c = rudder(&home);
        c.args(["template", "rel", &reference]);
        let got = ok(c);
        let mut c = rudder(&home);
        c.args([
            "template",
            "rel",
            &name,
            "--repo",
            &server.url(),
            "--username",
            "u",
            "--password",
            "p",
        ]);
        same(&ok(c), &got, &format!("{name} --repo against {reference}"));
        if got == want {
            eprintln!("helm {major}: {reference}: template identical (REPO/CHART and --repo)");
            continue;
        }
        // rudder renders as Helm 3.17.2; where Helm 4 renders the same
        // chart differently (the order of comment-only documents), the
        // source must still be transparent: each tool prints for the
        // repository chart what it prints for the chart directory.
        assert_eq!(major, 4, "helm {major}: template {reference} differs");
        let dir = shared
            .join("conformance/charts")
            .join(CHARTS[i])
            .join("chart");
        let mut c = helm(&hbin, &home);
        c.arg("template").arg("rel").arg(&dir);
        same(
            &want,
            &ok(c),
            &format!("helm {major}: {reference} against its directory"),
        );
        let mut c = rudder(&home);
        c.arg("template").arg("rel").arg(&dir);
        same(
            &got,
            &ok(c),
            &format!("rudder: {reference} against its directory"),
        );
        eprintln!("helm {major}: {reference}: Helm 4 renders this chart differently from Helm 3; each tool prints the same for the repository chart as for its directory");
    }

    // show: what helm shows, for a chart of either repository.
    for what in ["chart", "values", "readme"] {
        let reference = format!("byhelm/{}", chart_name(&archives[1]));
        let mut c = helm(&hbin, &home);
        c.args(["show", what, &reference]);
        let want = ok(c);
        let mut c = rudder(&home);
        c.args(["show", what, &reference]);
        same(
            &ok(c),
            &want,
            &format!("helm {major}: show {what} {reference}"),
        );
    }

    // pull: every chart at once; the bytes are the served ones.
    let dest = tmp.path().join("pulled");
    let mut c = rudder(&home);
    c.arg("pull").arg("-d").arg(&dest);
    for a in &archives {
        c.arg(format!("byhelm/{}", chart_name(a)));
    }
    ok(c);
    for a in &archives {
        assert_eq!(
            std::fs::read(dest.join(a)).unwrap(),
            std::fs::read(root.join(a)).unwrap(),
            "pulled {a}"
        );
    }
    // helm pull --untar and rudder pull --untar write the same files.
    let (hd, rd) = (tmp.path().join("hu"), tmp.path().join("ru"));
    let mut c = helm(&hbin, &home);
    c.args(["pull", "byrudder/alpine", "--untar", "-d"])
        .arg(&hd);
    ok(c);
    let mut c = rudder(&home);
    c.args(["pull", "byrudder/alpine", "--untar", "-d"])
        .arg(&rd);
    ok(c);
    for f in [
        "alpine/Chart.yaml",
        "alpine/values.yaml",
        "alpine/templates/alpine-pod.yaml",
    ] {
        assert_eq!(
            std::fs::read(hd.join(f)).unwrap(),
            std::fs::read(rd.join(f)).unwrap(),
            "{f}"
        );
    }
    // helm removes what rudder added, and the other way round.
    let mut c = helm(&hbin, &home);
    c.args(["repo", "remove", "byrudder"]);
    ok(c);
    let mut c = rudder(&home);
    c.args(["repo", "remove", "byhelm"]);
    assert_eq!(
        ok(c),
        "\"byhelm\" has been removed from your repositories\n"
    );
    let mut c = helm(&hbin, &home);
    c.args(["repo", "list"]);
    let err = String::from_utf8_lossy(&run(c).stderr).into_owned();
    assert!(err.contains("no repositories to show"), "{err}");
}

#[test]
fn interop_with_helm3() {
    interop(3);
}

#[test]
fn interop_with_helm4() {
    interop(4);
}

/// A repository of one small chart, packaged by rudder, indexed by hand
/// (no Helm needed): returns (archive name, digest).
fn small_repo(root: &Path, extra: Option<(&str, Vec<u8>)>) -> (String, String) {
    let (name, bytes) = small_chart(root, extra);
    let digest = rudder::source::cache::sha256_hex(&bytes);
    std::fs::write(
        root.join("index.yaml"),
        format!(
            "apiVersion: v1\nentries:\n  demo:\n  - apiVersion: v2\n    name: demo\n    version: 0.1.0\n    digest: {digest}\n    urls:\n    - {name}\n"
        ),
    )
    .unwrap();
    (name, digest)
}

/// The archive of a one-template chart (plus `extra`, written into the
/// archive by hand so that it may break the loader's limits).
fn small_chart(root: &Path, extra: Option<(&str, Vec<u8>)>) -> (String, Vec<u8>) {
    std::fs::create_dir_all(root).unwrap();
    let src = root.join("src/demo");
    std::fs::create_dir_all(src.join("templates")).unwrap();
    std::fs::write(
        src.join("Chart.yaml"),
        "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(src.join("values.yaml"), "a: 1\n").unwrap();
    std::fs::write(
        src.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  a: {{ .Values.a | quote }}\n",
    )
    .unwrap();
    let chart = rudder::chart::load_dir(&src).unwrap();
    let mut bytes = rudder::chart::package_bytes(&chart).unwrap();
    std::fs::remove_dir_all(root.join("src")).unwrap();
    if let Some((extra_name, data)) = extra {
        bytes = append_entry(&bytes, &format!("demo/{extra_name}"), &data);
    }
    let name = "demo-0.1.0.tgz".to_string();
    std::fs::write(root.join(&name), &bytes).unwrap();
    (name, bytes)
}

/// The archive `tgz` with one more file.
fn append_entry(tgz: &[u8], path: &str, data: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut tar_bytes = Vec::new();
    flate2::read::GzDecoder::new(tgz)
        .read_to_end(&mut tar_bytes)
        .unwrap();
    let mut out = tar::Builder::new(Vec::new());
    let mut archive = tar::Archive::new(&tar_bytes[..]);
    for e in archive.entries().unwrap() {
        let mut e = e.unwrap();
        let h = e.header().clone();
        let mut body = Vec::new();
        e.read_to_end(&mut body).unwrap();
        out.append(&h, &body[..]).unwrap();
    }
    let mut h = tar::Header::new_gnu();
    h.set_size(data.len() as u64);
    h.set_mode(0o644);
    h.set_cksum();
    out.append_data(&mut h, path, data).unwrap();
    let tar_bytes = out.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &tar_bytes).unwrap();
    gz.finish().unwrap()
}

fn add_repo(home: &Path, url: &str, creds: Option<(&str, &str)>) -> Output {
    let mut c = rudder(home);
    c.args(["repo", "add", "r", url]);
    if let Some((u, p)) = creds {
        c.args(["--username", u, "--password", p]);
    }
    run(c)
}

#[test]
fn a_cached_chart_is_not_downloaded_again() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (archive, digest) = small_repo(&tmp.path().join("srv"), None);
    let server = ChartServer::start(&tmp.path().join("srv"), ServerOptions::default());
    assert!(add_repo(&home, &server.url(), None).status.success());
    for i in 0..3 {
        let mut c = rudder(&home);
        c.args(["template", &format!("x{i}"), "r/demo"]);
        assert!(ok(c).contains(&format!("name: x{i}")));
    }
    assert_eq!(
        server.count(&format!("/{archive}")),
        1,
        "{:?}",
        server.requests()
    );
    assert_eq!(
        cache_files(&home),
        vec![home.join(format!("cache/rudder/sha256/{digest}.tgz"))]
    );
}

#[test]
fn wrong_password_is_refused_clearly_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    small_repo(&tmp.path().join("srv"), None);
    let server = ChartServer::start(
        &tmp.path().join("srv"),
        ServerOptions::default().with_basic_auth("u", "p"),
    );
    let o = add_repo(&home, &server.url(), Some(("u", "wrong")));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("401 Unauthorized") && err.contains("check the username and password"),
        "{err}"
    );
    assert!(!home.join("config/repositories.yaml").exists());
    assert!(!home.join("cache/repository/r-index.yaml").exists());
    let o = add_repo(&home, &server.url(), None);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the repository asks for credentials"), "{err}");
}

/// Adds the repository, sets `fault` (if any) on the chart, and returns the error
/// `template r/demo` fails with; checks the cache holds nothing.
fn chart_fault(
    fault: Option<Fault>,
    extra: Option<(&str, Vec<u8>)>,
    env: &[(&str, &str)],
) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (archive, _) = small_repo(&tmp.path().join("srv"), extra);
    let server = ChartServer::start(
        &tmp.path().join("srv"),
        ServerOptions::default().with_basic_auth("u", "p"),
    );
    assert!(add_repo(&home, &server.url(), Some(("u", "p")))
        .status
        .success());
    server.set_fault(&format!("/{archive}"), fault);
    let mut c = rudder(&home);
    c.args(["template", "x", "r/demo"]);
    for (k, v) in env {
        c.env(k, v);
    }
    let err = fails(c);
    assert_eq!(
        cache_files(&home),
        Vec::<PathBuf>::new(),
        "the cache must stay empty"
    );
    err
}

#[test]
fn digest_mismatch_names_both_digests() {
    let err = chart_fault(Some(Fault::Replace(b"not the chart".to_vec())), None, &[]);
    let got = rudder::source::cache::sha256_hex(b"not the chart");
    assert!(
        err.contains("digest mismatch for http://127.0.0.1:"),
        "{err}"
    );
    assert!(
        err.contains("expected sha256:") && err.contains(&format!("got sha256:{got}")),
        "{err}"
    );
}

#[test]
fn truncated_download_is_an_error() {
    let err = chart_fault(Some(Fault::Truncate(40)), None, &[]);
    assert!(err.contains("the download was cut short: 40 of "), "{err}");
}

#[test]
fn a_hung_server_times_out() {
    let t = Instant::now();
    let err = chart_fault(Some(Fault::Hang), None, &[("RUDDER_HTTP_TIMEOUT", "1")]);
    assert!(err.contains("the server sent nothing for 1s"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
}

#[test]
fn a_redirect_to_another_host_keeps_the_credentials() {
    let tmp = tempfile::tempdir().unwrap();
    let other = ChartServer::start(tmp.path(), ServerOptions::default());
    let target = format!("http://localhost:{}/demo-0.1.0.tgz", other.addr().port());
    let err = chart_fault(Some(Fault::RedirectTo(target)), None, &[]);
    assert!(
        err.contains("redirected to another host (http://localhost:"),
        "{err}"
    );
    assert!(
        other.requests().iter().all(|r| r.authorization.is_none()),
        "{:?}",
        other.requests()
    );
}

#[test]
fn an_archive_over_the_limits_is_refused() {
    // 6 MiB of zeros compress to a few KB; the loader refuses an entry
    // over 5 MiB, downloaded or not.
    let big = vec![0u8; 6 * 1024 * 1024];
    let err = chart_fault(None, Some(("big.txt", big)), &[]);
    assert!(
        err.contains("is larger than the maximum file size"),
        "{err}"
    );
}

#[test]
fn an_alias_bomb_index_is_refused_quickly() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let root = tmp.path().join("srv");
    std::fs::create_dir_all(&root).unwrap();
    let mut bomb = String::from("apiVersion: v1\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    let mut prev = 'a';
    for c in 'b'..='j' {
        bomb.push_str(&format!(
            "{c}: &{c} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
        ));
        prev = c;
    }
    bomb.push_str("entries: {}\n");
    std::fs::write(root.join("index.yaml"), bomb).unwrap();
    let server = ChartServer::start(&root, ServerOptions::default());
    let t = Instant::now();
    let o = add_repo(&home, &server.url(), None);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("is not a valid chart repository"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    assert!(!home.join("cache/repository/r-index.yaml").exists());
}

#[test]
fn tls_with_a_ca_file_and_a_client_certificate() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    small_repo(&tmp.path().join("srv"), None);
    let server = ChartServer::start(
        &tmp.path().join("srv"),
        ServerOptions::default().with_client_cert(),
    );
    let pem = |n: &str, s: &str| {
        let p = tmp.path().join(n);
        std::fs::write(&p, s).unwrap();
        p.display().to_string()
    };
    let (ca, cert, key) = (
        pem("ca.pem", server.ca_pem()),
        pem("cert.pem", server.client_cert_pem()),
        pem("key.pem", server.client_key_pem()),
    );
    // No CA: the certificate is refused.
    let o = add_repo(&home, &server.url(), None);
    assert!(!o.status.success());
    let mut c = rudder(&home);
    c.args([
        "repo",
        "add",
        "r",
        &server.url(),
        "--ca-file",
        &ca,
        "--cert-file",
        &cert,
        "--key-file",
        &key,
    ]);
    ok(c);
    let mut c = rudder(&home);
    c.args(["template", "x", "r/demo"]);
    assert!(ok(c).contains("name: x"));
}

#[test]
fn the_facade_loads_charts_by_reference_async_and_blocking() {
    use rudder::source::resolve::LocateOptions;
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (archive, _) = small_repo(&tmp.path().join("srv"), None);
    let server = ChartServer::start(
        &tmp.path().join("srv"),
        ServerOptions::default().with_basic_auth("u", "p"),
    );
    let h = home.display().to_string();
    let mut opts = LocateOptions::from_env();
    opts.paths = rudder::source::HelmPaths::from_lookup(|k| (k == "HOME").then(|| h.clone()));
    opts.repo_url = Some(server.url());
    opts.version = "~0.1".into();
    opts.http.username = "u".into();
    opts.http.password = "p".into();
    let store = format!("file:{}", tmp.path().join("store").display());
    let cluster = format!("sim:{}", tmp.path().join("cluster").display());
    let blocking = rudder::blocking::Client::builder()
        .store(store.clone())
        .cluster(cluster.clone())
        .build()
        .unwrap();
    let chart = blocking.load_chart("demo", &opts).unwrap();
    assert_eq!(
        (
            chart.metadata.name.as_str(),
            chart.metadata.version.as_str()
        ),
        ("demo", "0.1.0")
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let chart = rt.block_on(async {
        let client = rudder::Client::builder()
            .store(store)
            .cluster(cluster)
            .build()
            .await
            .unwrap();
        client.load_chart("demo", &opts).await.unwrap()
    });
    assert_eq!(chart.metadata.name, "demo");
    // The second load came from the cache.
    assert_eq!(server.count(&format!("/{archive}")), 1);
    // A version no index entry satisfies is named.
    opts.version = ">=2".into();
    let e = blocking.load_chart("demo", &opts).unwrap_err();
    assert!(
        e.to_string()
            .contains("chart \"demo\" version \">=2\" not found in"),
        "{e}"
    );
}

#[test]
fn install_upgrade_and_diff_take_repository_charts() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    small_repo(&tmp.path().join("srv"), None);
    let server = ChartServer::start(&tmp.path().join("srv"), ServerOptions::default());
    assert!(add_repo(&home, &server.url(), None).status.success());
    let store = format!("file:{}", tmp.path().join("store").display());
    let cluster = format!("sim:{}", tmp.path().join("cluster").display());
    let target = |c: &mut Command| {
        c.args(["--store", &store, "--cluster", &cluster]);
    };
    let mut c = rudder(&home);
    c.args(["install", "web", "r/demo", "--version", "0.1.0"]);
    target(&mut c);
    assert!(ok(c).contains("STATUS: deployed"));
    let mut c = rudder(&home);
    c.args(["diff", "upgrade", "web", "r/demo", "--set", "a=2"]);
    target(&mut c);
    let diff = ok(c);
    assert!(diff.contains("+   a: '2'"), "{diff}");
    let mut c = rudder(&home);
    c.args(["upgrade", "web", "r/demo", "--set", "a=2"]);
    target(&mut c);
    assert!(ok(c).contains("REVISION: 2"));
    let mut c = rudder(&home);
    c.args(["get", "manifest", "web"]);
    target(&mut c);
    assert!(ok(c).contains("a: \"2\""));
}

#[test]
fn concurrent_processes_share_the_cache_safely() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    // A chart of a few MB, served slowly, so that the processes overlap.
    let noise: Vec<u8> = (0..3_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let (archive, digest) = small_repo(&tmp.path().join("srv"), Some(("noise.bin", noise)));
    let server = ChartServer::start(
        &tmp.path().join("srv"),
        ServerOptions::default().with_fault(
            &format!("/{archive}"),
            Fault::Slow(Duration::from_millis(300)),
        ),
    );
    assert!(add_repo(&home, &server.url(), None).status.success());
    let children: Vec<_> = (0..6)
        .map(|i| {
            let mut c = rudder(&home);
            c.args(["pull", "r/demo", "-d"])
                .arg(tmp.path().join(format!("out{i}")));
            c.spawn().unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{o:?}");
    }
    let served = std::fs::read(tmp.path().join("srv").join(&archive)).unwrap();
    for i in 0..6 {
        assert!(std::fs::read(tmp.path().join(format!("out{i}/{archive}"))).unwrap() == served);
    }
    // One file, whole, under its digest; no temporary file left behind.
    assert_eq!(
        cache_files(&home),
        vec![home.join(format!("cache/rudder/sha256/{digest}.tgz"))]
    );
    assert!(std::fs::read(&cache_files(&home)[0]).unwrap() == served);
}
