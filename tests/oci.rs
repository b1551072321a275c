//! OCI registries against a real registry (the CNCF distribution registry,
//! `scripts/registry`, with htpasswd auth) and real Helm v3.17.2 and v4.1.4:
//! helm pushes and rudder pulls, rudder pushes and helm pulls (the archive
//! bytes identical, and the manifest digest identical to helm's own push of
//! the same file), logins made by one tool used by the other, and the bad
//! cases: a wrong password, a tag that is not semver, a tampered blob, a
//! server that hangs, TLS with a throwaway CA.
//!
//! Each interop check prints an `INTEROP` line (chart, direction, helm
//! version, what matched) on stderr; `cargo test --test oci -- --nocapture`
//! shows them.
mod common;
#[path = "support/oci_registry.rs"]
mod oci_registry;

use oci_registry::{Registry, PASS, USER};
use rudder::source::oci::{self, OciError, OciOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Corpus charts (directories under ../shared/conformance/charts).
const CHARTS: &[&str] = &[
    "helm-alpine",
    "cert-manager",
    "bitnami-nginx",
    "helm-chart-with-lib-dep",
];

/// A throwaway set of Helm homes (config, cache, data, HOME).
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
    fn registry_config(&self) -> PathBuf {
        self.path().join("config/registry/config.json")
    }
    fn env(&self, cmd: &mut Command) {
        cmd.env("HOME", self.path())
            .env("HELM_CONFIG_HOME", self.path().join("config"))
            .env("HELM_CACHE_HOME", self.path().join("cache"))
            .env("HELM_DATA_HOME", self.path().join("data"))
            .env_remove("HELM_REGISTRY_CONFIG")
            .env_remove("XDG_CONFIG_HOME")
            .env("TZ", "UTC");
    }
    fn helm(&self, bin: &Path) -> Command {
        let mut c = common::helm_command(bin, self.path());
        self.env(&mut c);
        c
    }
    fn rudder(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rudder"));
        self.env(&mut c);
        c
    }
    /// Library options reading this home's registry config.
    fn opts(&self) -> OciOptions {
        OciOptions {
            plain_http: true,
            registry_config: Some(self.registry_config()),
            ..OciOptions::default()
        }
    }
}

fn run(cmd: &mut Command, stdin: Option<&str>) -> Output {
    use std::io::Write as _;
    use std::process::Stdio;
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    if let Some(mut w) = child.stdin.take() {
        if let Some(s) = stdin {
            w.write_all(s.as_bytes()).expect("write stdin");
        }
    }
    child.wait_with_output().expect("wait")
}

fn ok(cmd: &mut Command, stdin: Option<&str>) -> Output {
    let out = run(cmd, stdin);
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The `Digest: sha256:...` line of a push or pull.
fn digest_line(o: &Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    text.lines()
        .find_map(|l| l.strip_prefix("Digest: "))
        .unwrap_or_else(|| panic!("no Digest line in {text}"))
        .trim()
        .to_string()
}

/// A packaged corpus chart: its archive, name and version.
struct Packaged {
    corpus: &'static str,
    tgz: PathBuf,
    name: String,
    version: String,
}

/// Packages the corpus charts with `helm package` into `dir`.
fn package_charts(helm: &Path, home: &Home, dir: &Path) -> Option<Vec<Packaged>> {
    let shared = common::shared_dir()?;
    let mut out = Vec::new();
    for c in CHARTS {
        let src = shared.join("conformance/charts").join(c).join("chart");
        let o = ok(
            home.helm(helm).arg("package").arg(&src).arg("-d").arg(dir),
            None,
        );
        let line = String::from_utf8_lossy(&o.stdout).into_owned();
        let tgz = PathBuf::from(
            line.trim()
                .rsplit(": ")
                .next()
                .expect("package output names the archive"),
        );
        let chart = rudder::chart::loader::load_file(&tgz).expect("load packaged chart");
        out.push(Packaged {
            corpus: c,
            tgz,
            name: chart.metadata.name.clone(),
            version: chart.metadata.version.clone(),
        });
    }
    Some(out)
}

/// The flag that lets `helm registry login` use plain HTTP.
fn helm_login_plain(major: u8) -> &'static str {
    if major == 3 {
        "--insecure"
    } else {
        "--plain-http"
    }
}

fn helm_login(helm: &Path, major: u8, home: &Home, reg: &Registry) {
    ok(
        home.helm(helm)
            .args([
                "registry",
                "login",
                &reg.host,
                "-u",
                USER,
                "--password-stdin",
            ])
            .arg(helm_login_plain(major)),
        Some(PASS),
    );
}

fn rudder_login(home: &Home, reg: &Registry) -> Output {
    ok(
        home.rudder().args([
            "registry",
            "login",
            &reg.host,
            "-u",
            USER,
            "--password-stdin",
            "--insecure",
        ]),
        Some(PASS),
    )
}

/// helm pushes, rudder pulls (with helm's login); rudder pushes (with its
/// own login), helm pulls: bytes identical both ways, and rudder's manifest
/// digest is helm's.
fn interop(major: u8) {
    let Some(helm) = common::helm(major) else {
        return;
    };
    let Some(reg) = Registry::start(false) else {
        return;
    };
    let work = tempfile::tempdir().expect("tempdir");
    let helm_home = Home::new();
    let rudder_home = Home::new();
    let Some(charts) = package_charts(&helm, &helm_home, work.path()) else {
        return;
    };
    helm_login(&helm, major, &helm_home, &reg);
    let out = rudder_login(&rudder_home, &reg);
    assert!(stderr(&out).contains("Login Succeeded"), "{}", stderr(&out));
    for c in &charts {
        let bytes = std::fs::read(&c.tgz).expect("read tgz");
        // helm pushes, rudder pulls with the login helm wrote.
        let hp = ok(
            helm_home
                .helm(&helm)
                .arg("push")
                .arg(&c.tgz)
                .arg(reg.url(&format!("h{major}")))
                .arg("--plain-http"),
            None,
        );
        let helm_digest = digest_line(&hp);
        let pulled = oci::pull(
            &reg.url(&format!("h{major}/{}", c.name)),
            Some(&c.version),
            &helm_home.opts(),
        )
        .unwrap_or_else(|e| panic!("{}: rudder pull: {e}", c.corpus));
        assert!(pulled.archive == bytes, "{}: pulled bytes differ", c.corpus);
        assert_eq!(pulled.manifest_digest, helm_digest, "{}", c.corpus);
        assert_eq!(
            (pulled.name.as_str(), pulled.version.as_str()),
            (c.name.as_str(), c.version.as_str())
        );
        eprintln!(
            "INTEROP helm{major} push -> rudder pull: {} ({} B): archive bytes identical, manifest digest identical ({helm_digest})",
            c.corpus,
            bytes.len()
        );
        // rudder pushes with its own login, helm pulls with rudder's login.
        let rp = ok(
            rudder_home
                .rudder()
                .arg("push")
                .arg(&c.tgz)
                .arg(reg.url(&format!("r{major}")))
                .arg("--plain-http"),
            None,
        );
        let e = stderr(&rp);
        let want_ref = format!(
            "Pushed: {}/r{major}/{}:{}",
            reg.host,
            c.name,
            c.version.replace('+', "_")
        );
        assert!(e.starts_with(&want_ref), "{e}");
        let rudder_digest = digest_line(&rp);
        assert_eq!(
            rudder_digest, helm_digest,
            "{}: rudder's manifest is not helm's",
            c.corpus
        );
        let dest = work.path().join(format!("pull-{major}-{}", c.corpus));
        std::fs::create_dir_all(&dest).expect("mkdir");
        let rudder_cfg = rudder_home.registry_config();
        let hl = ok(
            helm_home
                .helm(&helm)
                .arg("pull")
                .arg(reg.url(&format!("r{major}/{}", c.name)))
                .args(["--version", &c.version, "--plain-http", "-d"])
                .arg(&dest)
                .arg("--registry-config")
                .arg(&rudder_cfg),
            None,
        );
        assert_eq!(digest_line(&hl), rudder_digest, "{}", c.corpus);
        let got = std::fs::read(dest.join(format!("{}-{}.tgz", c.name, c.version)))
            .expect("helm pulled the archive");
        assert!(got == bytes, "{}: helm pulled different bytes", c.corpus);
        eprintln!(
            "INTEROP rudder push -> helm{major} pull: {} ({} B): archive bytes identical, manifest digest identical ({rudder_digest})",
            c.corpus,
            bytes.len()
        );
    }
}

#[test]
fn helm3_and_rudder_push_and_pull_each_others_charts() {
    interop(3);
}

#[test]
fn helm4_and_rudder_push_and_pull_each_others_charts() {
    interop(4);
}

/// A login by one tool is used, and removed, by the other.
fn logins_are_shared(major: u8) {
    let Some(helm) = common::helm(major) else {
        return;
    };
    let Some(reg) = Registry::start(false) else {
        return;
    };
    let home = Home::new();
    // rudder logs in; helm logs out of rudder's login.
    rudder_login(&home, &reg);
    let cfg = home.registry_config();
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&cfg)
        .expect("config")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600, "rudder's config.json mode");
    let o = ok(
        home.helm(&helm).args(["registry", "logout", &reg.host]),
        None,
    );
    assert!(stderr(&o).contains(&format!("Removing login credentials for {}", reg.host)));
    // helm logs in; rudder logs out of helm's login.
    helm_login(&helm, major, &home, &reg);
    let o = ok(home.rudder().args(["registry", "logout", &reg.host]), None);
    assert_eq!(
        stderr(&o),
        format!("Removing login credentials for {}\n", reg.host)
    );
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&cfg).expect("config")).expect("json");
    assert_eq!(doc["auths"], serde_json::json!({}));
    // A second logout: Helm 3's error.
    let o = run(home.rudder().args(["registry", "logout", &reg.host]), None);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o), "Error: not logged in\n");
    // HELM_REGISTRY_CONFIG moves the file for both tools.
    let moved = home.path().join("elsewhere/creds.json");
    ok(
        home.rudder()
            .env("HELM_REGISTRY_CONFIG", &moved)
            .args([
                "registry",
                "login",
                &reg.host,
                "-u",
                USER,
                "--password-stdin",
            ])
            .arg("--insecure"),
        Some(PASS),
    );
    assert!(moved.is_file());
    let o = ok(
        home.helm(&helm)
            .env("HELM_REGISTRY_CONFIG", &moved)
            .args(["registry", "logout", &reg.host]),
        None,
    );
    assert!(stderr(&o).contains("Removing login credentials"));
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&moved).expect("moved")).expect("json");
    assert_eq!(
        doc["auths"],
        serde_json::json!({}),
        "helm did not remove it"
    );
    eprintln!("INTEROP logins: rudder login -> helm{major} logout, helm{major} login -> rudder logout, HELM_REGISTRY_CONFIG: ok");
}

#[test]
fn helm3_logins_and_rudder_logins_serve_each_other() {
    logins_are_shared(3);
}

#[test]
fn helm4_logins_and_rudder_logins_serve_each_other() {
    logins_are_shared(4);
}

/// Packages one small corpus chart with rudder's own packager.
/// `rudder registry login` to `reg` with `args`, which must fail with
/// exit code 1; its stderr.
fn refused_login(home: &Home, reg: &Registry, args: &[&std::ffi::OsStr]) -> String {
    let o = run(
        home.rudder()
            .args(["registry", "login", &reg.host, "-u", USER, "-p", PASS])
            .args(args),
        None,
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    stderr(&o)
}

fn small_chart(dir: &Path) -> Option<PathBuf> {
    let shared = common::shared_dir()?;
    let src = shared.join("conformance/charts/helm-alpine/chart");
    let chart = rudder::chart::loader::load(&src).expect("load alpine");
    Some(rudder::chart::save_archive(&chart, dir).expect("package alpine"))
}

#[test]
fn a_wrong_password_is_refused_with_a_clear_error_and_nothing_is_written() {
    let Some(reg) = Registry::start(false) else {
        return;
    };
    let home = Home::new();
    let o = run(
        home.rudder().args([
            "registry",
            "login",
            &reg.host,
            "-u",
            USER,
            "--password-stdin",
            "--insecure",
        ]),
        Some("wrong\n"),
    );
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.starts_with(&format!(
            "Error: login to registry {} failed: the registry refused user \"{USER}\" (401 Unauthorized)",
            reg.host
        )),
        "{e}"
    );
    assert!(
        !home.registry_config().exists(),
        "a refused login was stored"
    );
    // A stored login whose password is wrong: pull and push name the
    // registry and the user.
    rudder_login(&home, &reg);
    let mut cfg = rudder::source::registry_config::RegistryConfig::load(&home.registry_config())
        .expect("load");
    cfg.set_credential(
        &reg.host,
        &rudder::source::registry_config::Credential {
            username: USER.into(),
            password: "stale".into(),
        },
    )
    .expect("set");
    cfg.save().expect("save");
    let err = oci::pull(&reg.url("x/alpine"), Some("0.1.0"), &home.opts()).unwrap_err();
    assert!(matches!(err, OciError::Unauthorized { .. }), "{err:?}");
    let m = err.to_string();
    assert!(
        m.contains(&format!("registry {} refused user \"{USER}\"", reg.host)) && m.contains("401"),
        "{m}"
    );
    let work = tempfile::tempdir().expect("tempdir");
    let Some(tgz) = small_chart(work.path()) else {
        return;
    };
    let o = run(
        home.rudder()
            .arg("push")
            .arg(&tgz)
            .arg(reg.url("x"))
            .arg("--plain-http"),
        None,
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("refused user"), "{}", stderr(&o));
    // --username/--password take the place of the stored login.
    ok(
        home.rudder().arg("push").arg(&tgz).arg(reg.url("x")).args([
            "--plain-http",
            "--username",
            USER,
            "--password",
            PASS,
        ]),
        None,
    );
    let flags = OciOptions {
        username: Some(USER.into()),
        password: Some(PASS.into()),
        ..home.opts()
    };
    oci::pull(&reg.url("x/alpine"), Some("0.1.0"), &flags).expect("pull with flags");
    // Anonymous access is refused too, and says so.
    let anon = OciOptions {
        registry_config: Some(work.path().join("none.json")),
        ..home.opts()
    };
    let m = oci::pull(&reg.url("x/alpine"), Some("0.1.0"), &anon)
        .unwrap_err()
        .to_string();
    assert!(m.contains("refused anonymous access"), "{m}");
}

#[test]
fn a_version_that_is_not_semver_fails_as_in_helm() {
    let Some(reg) = Registry::start(false) else {
        return;
    };
    let home = Home::new();
    rudder_login(&home, &reg);
    let work = tempfile::tempdir().expect("tempdir");
    let Some(tgz) = small_chart(work.path()) else {
        return;
    };
    ok(
        home.rudder()
            .arg("push")
            .arg(&tgz)
            .arg(reg.url("ns"))
            .arg("--plain-http"),
        None,
    );
    // `--version latest` and `:latest`: Helm's Masterminds message.
    for (r, v) in [
        (reg.url("ns/alpine"), Some("latest")),
        (reg.url("ns/alpine:latest"), None),
    ] {
        let e = oci::pull(&r, v, &home.opts()).unwrap_err();
        assert!(
            e.to_string().starts_with("improper constraint: latest"),
            "{r}: {e}"
        );
    }
    if let Some(helm) = common::helm(3) {
        let o = run(
            home.helm(&helm)
                .arg("pull")
                .arg(reg.url("ns/alpine"))
                .args(["--version", "latest", "--plain-http", "-d"])
                .arg(work.path()),
            None,
        );
        assert_eq!(o.status.code(), Some(1));
        assert_eq!(stderr(&o), "Error: improper constraint: latest\n");
    }
    // A constraint resolves against the semver tags; the tag and
    // `--version` must agree.
    let got = oci::pull(&reg.url("ns/alpine"), Some("~0.1"), &home.opts()).expect("pull ~0.1");
    assert_eq!(got.version, "0.1.0");
    let got = oci::pull(&reg.url("ns/alpine"), None, &home.opts()).expect("pull newest");
    assert_eq!(got.reference, format!("{}/ns/alpine:0.1.0", reg.host));
    let e = oci::pull(&reg.url("ns/alpine:0.1.0"), Some("0.2.0"), &home.opts()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "chart reference and version mismatch: 0.2.0 is not 0.1.0"
    );
    let e = oci::pull(&reg.url("ns/alpine"), Some(">1"), &home.opts()).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("Could not locate a version matching provided version string >1"),
        "{e}"
    );
    let e = oci::pull(&reg.url("ns/missing"), Some("1.0.0"), &home.opts()).unwrap_err();
    assert!(matches!(e, OciError::NotFound { .. }), "{e:?}");
}

#[test]
fn a_tampered_chart_layer_fails_naming_both_digests() {
    let Some(reg) = Registry::start(false) else {
        return;
    };
    let home = Home::new();
    rudder_login(&home, &reg);
    let work = tempfile::tempdir().expect("tempdir");
    let Some(tgz) = small_chart(work.path()) else {
        return;
    };
    ok(
        home.rudder()
            .arg("push")
            .arg(&tgz)
            .arg(reg.url("t"))
            .arg("--plain-http"),
        None,
    );
    let bytes = std::fs::read(&tgz).expect("read");
    let good = oci::sha256_digest(&bytes);
    // Same size, other bytes, straight into the registry's storage.
    let mut bad = bytes.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0xff;
    std::fs::write(reg.blob_file(&good), &bad).expect("tamper");
    let e = oci::pull(&reg.url("t/alpine"), Some("0.1.0"), &home.opts()).unwrap_err();
    let OciError::DigestMismatch {
        expected, actual, ..
    } = &e
    else {
        panic!("{e:?}");
    };
    assert_eq!(expected, &good);
    assert_eq!(actual, &oci::sha256_digest(&bad));
    let m = e.to_string();
    assert!(m.contains(&good) && m.contains(actual), "{m}");
    // A cache that holds the chart layer: no download of it, so the
    // tampered blob does not matter; a cache with wrong bytes is ignored.
    let good_bytes = bytes.clone();
    let cache: oci::BlobCache =
        std::sync::Arc::new(move |d: &str| (d == good).then(|| good_bytes.clone()));
    let got = oci::pull_with_cache(&reg.url("t/alpine"), Some("0.1.0"), &home.opts(), cache)
        .expect("pull from the cache");
    assert!(got.cached && got.archive == bytes);
    let liar: oci::BlobCache = std::sync::Arc::new(|_: &str| Some(b"not it".to_vec()));
    let e =
        oci::pull_with_cache(&reg.url("t/alpine"), Some("0.1.0"), &home.opts(), liar).unwrap_err();
    assert!(matches!(e, OciError::DigestMismatch { .. }), "{e:?}");
    let good = oci::sha256_digest(&bytes);
    // A truncated blob: an error that names the expected digest.
    std::fs::write(reg.blob_file(&good), &bytes[..bytes.len() / 2]).expect("truncate");
    let e = oci::pull(&reg.url("t/alpine"), Some("0.1.0"), &home.opts()).unwrap_err();
    assert!(
        matches!(&e, OciError::DigestMismatch { expected, .. } if *expected == good),
        "{e:?}"
    );
}

#[test]
fn a_registry_that_hangs_times_out_with_a_clear_error() {
    let host = oci_registry::hanging_server();
    let opts = OciOptions {
        plain_http: true,
        registry_config: Some(PathBuf::from("/nonexistent/config.json")),
        timeout: Duration::from_secs(2),
        ..OciOptions::default()
    };
    let start = Instant::now();
    let e = oci::pull(&format!("oci://{host}/a/chart"), Some("1.0.0"), &opts).unwrap_err();
    let took = start.elapsed();
    assert!(took < Duration::from_secs(15), "took {took:?}");
    let m = e.to_string();
    assert!(
        m.contains(&host) && m.contains("did not answer"),
        "{m} ({e:?})"
    );
    // The CLI, with its deadline from the environment.
    let work = tempfile::tempdir().expect("tempdir");
    let Some(tgz) = small_chart(work.path()) else {
        return;
    };
    let home = Home::new();
    let start = Instant::now();
    let o = run(
        home.rudder()
            .env("RUDDER_OCI_TIMEOUT", "2")
            .arg("push")
            .arg(&tgz)
            .arg(format!("oci://{host}/a"))
            .arg("--plain-http"),
        None,
    );
    assert!(start.elapsed() < Duration::from_secs(15));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(&format!("registry {host} did not answer within 2s")),
        "{}",
        stderr(&o)
    );
}

#[test]
fn over_tls_with_a_throwaway_ca() {
    let Some(reg) = Registry::start(true) else {
        return;
    };
    let ca = reg.ca.clone().expect("ca");
    let home = Home::new();
    let work = tempfile::tempdir().expect("tempdir");
    let Some(tgz) = small_chart(work.path()) else {
        return;
    };
    let bytes = std::fs::read(&tgz).expect("read");
    // Without the CA the certificate is refused.
    let err = refused_login(&home, &reg, &[]);
    assert!(err.to_lowercase().contains("certificate"), "{err}");
    ok(
        home.rudder()
            .args(["registry", "login", &reg.host, "-u", USER, "-p", PASS])
            .arg("--ca-file")
            .arg(&ca),
        None,
    );
    let o = ok(
        home.rudder()
            .arg("push")
            .arg(&tgz)
            .arg(reg.url("tls"))
            .arg("--ca-file")
            .arg(&ca),
        None,
    );
    let rudder_digest = digest_line(&o);
    let opts = OciOptions {
        ca_file: Some(ca.clone()),
        registry_config: Some(home.registry_config()),
        ..OciOptions::default()
    };
    let got = oci::pull(&reg.url("tls/alpine"), Some("0.1.0"), &opts).expect("pull over TLS");
    assert!(got.archive == bytes);
    let insecure = OciOptions {
        insecure_skip_tls_verify: true,
        registry_config: Some(home.registry_config()),
        ..OciOptions::default()
    };
    let got = oci::pull(&reg.url("tls/alpine"), Some("0.1.0"), &insecure).expect("insecure pull");
    assert!(got.archive == bytes);
    eprintln!(
        "INTEROP TLS: rudder login/push/pull with --ca-file and --insecure-skip-tls-verify: ok"
    );
    // Helm 3.17 only: its resolver (containerd's) always speaks plain HTTP
    // to a loopback host, so it cannot reach a TLS registry on 127.0.0.1
    // (`unexpected status from HEAD request to http://127.0.0.1:...: 400`).
    if let Some(helm) = common::helm(3) {
        let o = run(
            home.helm(&helm)
                .arg("pull")
                .arg(reg.url("tls/alpine"))
                .args(["--version", "0.1.0", "--ca-file"])
                .arg(&ca)
                .arg("-d")
                .arg(work.path()),
            None,
        );
        eprintln!(
            "INTEROP TLS: helm3 pull from a loopback TLS registry: not testable (helm 3 uses http:// for loopback hosts; {}: {})",
            o.status,
            stderr(&o).trim()
        );
    }
    {
        let major = 4u8;
        let Some(helm) = common::helm(major) else {
            return;
        };
        let dest = work.path().join(format!("helm{major}"));
        std::fs::create_dir_all(&dest).expect("mkdir");
        let o = ok(
            home.helm(&helm)
                .arg("pull")
                .arg(reg.url("tls/alpine"))
                .args(["--version", "0.1.0", "--ca-file"])
                .arg(&ca)
                .arg("-d")
                .arg(&dest),
            None,
        );
        assert_eq!(digest_line(&o), rudder_digest);
        let got = std::fs::read(dest.join("alpine-0.1.0.tgz")).expect("pulled");
        assert!(got == bytes);
        eprintln!("INTEROP TLS: rudder push -> helm{major} pull --ca-file (rudder's login): archive bytes identical");
        // And back: helm pushes over TLS with rudder's login, rudder pulls.
        let o = ok(
            home.helm(&helm)
                .arg("push")
                .arg(&tgz)
                .arg(reg.url(&format!("tls-h{major}")))
                .arg("--ca-file")
                .arg(&ca),
            None,
        );
        assert_eq!(digest_line(&o), rudder_digest);
        let got = oci::pull(
            &reg.url(&format!("tls-h{major}/alpine")),
            Some("0.1.0"),
            &opts,
        )
        .expect("pull helm's push over TLS");
        assert!(got.archive == bytes);
        eprintln!("INTEROP TLS: helm{major} push --ca-file -> rudder pull --ca-file: archive bytes identical, manifest digest identical");
    }
}

#[test]
fn push_errors_are_helms() {
    let home = Home::new();
    let work = tempfile::tempdir().expect("tempdir");
    let o = run(
        home.rudder()
            .arg("push")
            .arg(work.path().join("nope.tgz"))
            .arg("oci://127.0.0.1:1/x"),
        None,
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).ends_with("nope.tgz: no such file\n"),
        "{}",
        stderr(&o)
    );
    let o = run(
        home.rudder()
            .arg("push")
            .arg(work.path())
            .arg("oci://127.0.0.1:1/x"),
        None,
    );
    assert_eq!(
        stderr(&o),
        "Error: cannot push directory, must provide chart archive (.tgz)\n"
    );
    let Some(tgz) = small_chart(work.path()) else {
        return;
    };
    let o = run(
        home.rudder()
            .arg("push")
            .arg(&tgz)
            .arg("http://127.0.0.1:1/x"),
        None,
    );
    assert_eq!(stderr(&o), "Error: scheme \"http\" not supported\n");
    let o = run(home.rudder().arg("push"), None);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with("Error: \"helm push\" requires at least 2 arguments"));
}

/// A Docker credential helper that keeps its entries in `$FAKE_CRED_DIR`.
const FAKE_HELPER: &str = r#"#!/bin/sh
d=${FAKE_CRED_DIR:?}
key() { printf '%s' "$1" | tr -c 'A-Za-z0-9.' '_'; }
case "$1" in
  store)
    in=$(cat)
    url=$(printf '%s' "$in" | sed -n 's/.*"ServerURL": *"\([^"]*\)".*/\1/p')
    printf '%s' "$in" > "$d/$(key "$url")"
    echo "store $url" >> "$d/calls" ;;
  get)
    url=$(cat)
    echo "get $url" >> "$d/calls"
    if [ -f "$d/$(key "$url")" ]; then cat "$d/$(key "$url")"; else echo "credentials not found in native keychain"; exit 1; fi ;;
  erase)
    url=$(cat)
    echo "erase $url" >> "$d/calls"
    if [ -f "$d/$(key "$url")" ]; then rm "$d/$(key "$url")"; else echo "credentials not found in native keychain"; exit 1; fi ;;
  list) echo '{}' ;;
esac
"#;

/// With `credsStore` in config.json, both tools keep the login in the
/// credential helper, and each finds the other's.
fn creds_store_is_shared(major: u8) {
    let Some(helm) = common::helm(major) else {
        return;
    };
    let Some(reg) = Registry::start(false) else {
        return;
    };
    let work = tempfile::tempdir().expect("tempdir");
    let bin = work.path().join("bin");
    let store = work.path().join("store");
    std::fs::create_dir_all(&bin).expect("mkdir");
    std::fs::create_dir_all(&store).expect("mkdir");
    let helper = bin.join("docker-credential-rudderfake");
    std::fs::write(&helper, FAKE_HELPER).expect("write helper");
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let home = Home::new();
    let cfg = home.registry_config();
    std::fs::create_dir_all(cfg.parent().expect("dir")).expect("mkdir");
    std::fs::write(&cfg, "{\"auths\":{},\"credsStore\":\"rudderfake\"}").expect("config");
    let with_env = |mut c: Command| {
        c.env("PATH", &path).env("FAKE_CRED_DIR", &store);
        c
    };
    let Some(tgz) = small_chart(work.path()) else {
        return;
    };
    let bytes = std::fs::read(&tgz).expect("read");
    // helm logs in (into the helper); rudder pushes with that login.
    ok(
        with_env(home.helm(&helm))
            .args([
                "registry",
                "login",
                &reg.host,
                "-u",
                USER,
                "--password-stdin",
            ])
            .arg(helm_login_plain(major)),
        Some(PASS),
    );
    let text = std::fs::read_to_string(&cfg).expect("config");
    assert!(!text.contains("auth\""), "helm wrote a secret: {text}");
    ok(
        with_env(home.rudder())
            .arg("push")
            .arg(&tgz)
            .arg(reg.url("cs"))
            .arg("--plain-http"),
        None,
    );
    // rudder logs out (the helper erases), logs in again (the helper
    // stores), and helm pulls with that login.
    ok(
        with_env(home.rudder()).args(["registry", "logout", &reg.host]),
        None,
    );
    assert!(
        std::fs::read_dir(&store)
            .expect("store")
            .flatten()
            .all(|e| e.file_name() == "calls"),
        "logout left the entry"
    );
    ok(
        with_env(home.rudder()).args([
            "registry",
            "login",
            &reg.host,
            "-u",
            USER,
            "--password-stdin",
            "--insecure",
        ]),
        Some(PASS),
    );
    let text = std::fs::read_to_string(&cfg).expect("config");
    assert!(!text.contains("auth\""), "rudder wrote a secret: {text}");
    let dest = work.path().join("pulled");
    std::fs::create_dir_all(&dest).expect("mkdir");
    ok(
        with_env(home.helm(&helm))
            .arg("pull")
            .arg(reg.url("cs/alpine"))
            .args(["--version", "0.1.0", "--plain-http", "-d"])
            .arg(&dest),
        None,
    );
    assert!(std::fs::read(dest.join("alpine-0.1.0.tgz")).expect("pulled") == bytes);
    let calls = std::fs::read_to_string(store.join("calls")).expect("calls");
    eprintln!(
        "INTEROP credsStore: helm{major} login -> rudder push, rudder logout/login -> helm{major} pull through docker-credential-rudderfake: ok ({} helper calls)",
        calls.lines().count()
    );
}

#[test]
fn helm3_and_rudder_share_a_credential_helper() {
    creds_store_is_shared(3);
}

#[test]
fn helm4_and_rudder_share_a_credential_helper() {
    creds_store_is_shared(4);
}

/// A `.prov` beside the archive travels as Helm's provenance layer: helm's
/// push and rudder's give one manifest, and each tool pulls the other's.
fn provenance_layer(major: u8) {
    let Some(helm) = common::helm(major) else {
        return;
    };
    let Some(reg) = Registry::start(false) else {
        return;
    };
    let work = tempfile::tempdir().expect("tempdir");
    let Some(tgz) = small_chart(work.path()) else {
        return;
    };
    // Not a real signature: the registry and the push do not check it.
    let prov = b"-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA512\n\nname: alpine\n".to_vec();
    std::fs::write(format!("{}.prov", tgz.display()), &prov).expect("write prov");
    let bytes = std::fs::read(&tgz).expect("read");
    let home = Home::new();
    helm_login(&helm, major, &home, &reg);
    let hp = ok(
        home.helm(&helm)
            .arg("push")
            .arg(&tgz)
            .arg(reg.url("ph"))
            .arg("--plain-http"),
        None,
    );
    let got = oci::pull(&reg.url("ph/alpine"), Some("0.1.0"), &home.opts()).expect("pull");
    assert!(got.archive == bytes);
    assert_eq!(got.prov.as_deref(), Some(prov.as_slice()));
    let rp = ok(
        home.rudder()
            .arg("push")
            .arg(&tgz)
            .arg(reg.url("pr"))
            .arg("--plain-http"),
        None,
    );
    assert_eq!(digest_line(&rp), digest_line(&hp));
    let dest = work.path().join("pulled");
    std::fs::create_dir_all(&dest).expect("mkdir");
    ok(
        home.helm(&helm)
            .arg("pull")
            .arg(reg.url("pr/alpine"))
            .args(["--version", "0.1.0", "--plain-http", "--prov", "-d"])
            .arg(&dest),
        None,
    );
    assert!(std::fs::read(dest.join("alpine-0.1.0.tgz")).expect("tgz") == bytes);
    assert!(std::fs::read(dest.join("alpine-0.1.0.tgz.prov")).expect("prov") == prov);
    eprintln!("INTEROP provenance layer: helm{major} push -> rudder pull and rudder push -> helm{major} pull --prov: archive and .prov bytes identical, manifest digest identical");
}

#[test]
fn helm3_and_rudder_carry_the_provenance_layer() {
    provenance_layer(3);
}

#[test]
fn helm4_and_rudder_carry_the_provenance_layer() {
    provenance_layer(4);
}

/// A version with build metadata: `+` is `_` in the tag, both ways.
#[test]
fn a_build_version_travels_as_an_underscore_tag() {
    let Some(reg) = Registry::start(false) else {
        return;
    };
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let work = tempfile::tempdir().expect("tempdir");
    let src = shared.join("conformance/charts/helm-alpine/chart");
    let mut chart = rudder::chart::loader::load(&src).expect("load alpine");
    chart.metadata.version = "0.1.0+build.7".into();
    let tgz = rudder::chart::save_archive(&chart, work.path()).expect("package");
    let bytes = std::fs::read(&tgz).expect("read");
    let home = Home::new();
    rudder_login(&home, &reg);
    let o = ok(
        home.rudder()
            .arg("push")
            .arg(&tgz)
            .arg(reg.url("u"))
            .arg("--plain-http"),
        None,
    );
    let e = stderr(&o);
    let r = format!("{}/u/alpine:0.1.0_build.7", reg.host);
    assert!(e.starts_with(&format!("Pushed: {r}\n")), "{e}");
    assert!(
        e.contains(&format!("{r} contains an underscore.\n\nOCI artifact")),
        "{e}"
    );
    let got = oci::pull(&reg.url("u/alpine"), Some("0.1.0+build.7"), &home.opts()).expect("pull");
    assert!(got.archive == bytes);
    assert_eq!(got.version, "0.1.0+build.7");
    // The tag's spelling is not a version: Helm refuses it too.
    let e = oci::pull(&reg.url("u/alpine"), Some("0.1.0_build.7"), &home.opts()).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("improper constraint: 0.1.0_build.7"),
        "{e}"
    );
    let got = oci::pull(&reg.url("u/alpine"), Some("~0.1"), &home.opts()).expect("pull");
    assert_eq!(got.reference, r);
    for major in [3u8, 4] {
        let Some(helm) = common::helm(major) else {
            return;
        };
        let hp = ok(
            home.helm(&helm)
                .arg("push")
                .arg(&tgz)
                .arg(reg.url(&format!("u{major}")))
                .arg("--plain-http"),
            None,
        );
        assert_eq!(digest_line(&hp), digest_line(&o), "helm{major}");
        let dest = work.path().join(format!("h{major}"));
        std::fs::create_dir_all(&dest).expect("mkdir");
        ok(
            home.helm(&helm)
                .arg("pull")
                .arg(reg.url("u/alpine"))
                .args(["--version", "0.1.0+build.7", "--plain-http", "-d"])
                .arg(&dest),
            None,
        );
        assert!(std::fs::read(dest.join("alpine-0.1.0+build.7.tgz")).expect("pulled") == bytes);
        eprintln!("INTEROP build metadata (+ as _): rudder push <-> helm{major} push/pull of 0.1.0+build.7: archive bytes identical, manifest digest identical");
    }
}

/// A registry without auth: anonymous push and pull, both tools.
#[test]
fn an_open_registry_is_used_anonymously() {
    let Some(reg) = Registry::start_with(false, false) else {
        return;
    };
    let work = tempfile::tempdir().expect("tempdir");
    let Some(tgz) = small_chart(work.path()) else {
        return;
    };
    let bytes = std::fs::read(&tgz).expect("read");
    let home = Home::new();
    let o = ok(
        home.rudder()
            .arg("push")
            .arg(&tgz)
            .arg(reg.url("open"))
            .arg("--plain-http"),
        None,
    );
    assert!(!home.registry_config().exists());
    let got = oci::pull(&reg.url("open/alpine"), None, &home.opts()).expect("anonymous pull");
    assert!(got.archive == bytes);
    if let Some(helm) = common::helm(3) {
        let dest = work.path().join("h3");
        std::fs::create_dir_all(&dest).expect("mkdir");
        let hl = ok(
            home.helm(&helm)
                .arg("pull")
                .arg(reg.url("open/alpine"))
                .args(["--version", "0.1.0", "--plain-http", "-d"])
                .arg(&dest),
            None,
        );
        assert_eq!(digest_line(&hl), digest_line(&o));
        assert!(std::fs::read(dest.join("alpine-0.1.0.tgz")).expect("pulled") == bytes);
    }
    // A login to an open registry succeeds (the registry asks for nothing).
    ok(
        home.rudder().args([
            "registry",
            "login",
            &reg.host,
            "-u",
            "any",
            "--password-stdin",
            "--insecure",
        ]),
        Some("thing"),
    );
}

/// The bearer flow: a registry behind a token service. rudder logs in
/// (the token service checks the password), pushes and pulls with tokens;
/// a wrong password is refused by the token service; helm pulls rudder's
/// push with rudder's login.
#[test]
fn a_registry_behind_a_token_service_is_used_with_bearer_tokens() {
    let Some(tr) = oci_registry::TokenRegistry::start(&[("bearer/alpine", &["pull", "push"])])
    else {
        return;
    };
    let reg = &tr.registry;
    let work = tempfile::tempdir().expect("tempdir");
    let Some(tgz) = small_chart(work.path()) else {
        return;
    };
    let bytes = std::fs::read(&tgz).expect("read");
    let home = Home::new();
    let o = run(
        home.rudder().args([
            "registry",
            "login",
            &reg.host,
            "-u",
            USER,
            "--password-stdin",
            "--insecure",
        ]),
        Some("wrong"),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("refused user"), "{}", stderr(&o));
    rudder_login(&home, reg);
    let o = ok(
        home.rudder()
            .arg("push")
            .arg(&tgz)
            .arg(reg.url("bearer"))
            .arg("--plain-http"),
        None,
    );
    let got = oci::pull(&reg.url("bearer/alpine"), Some("0.1.0"), &home.opts()).expect("pull");
    assert!(got.archive == bytes);
    let (refused, granted) = *tr.counts.lock().expect("counts");
    assert!(
        refused >= 1 && granted >= 2,
        "refused {refused}, granted {granted}"
    );
    for major in [3u8, 4] {
        let Some(helm) = common::helm(major) else {
            return;
        };
        let dest = work.path().join(format!("h{major}"));
        std::fs::create_dir_all(&dest).expect("mkdir");
        let hl = ok(
            home.helm(&helm)
                .arg("pull")
                .arg(reg.url("bearer/alpine"))
                .args(["--version", "0.1.0", "--plain-http", "-d"])
                .arg(&dest),
            None,
        );
        assert_eq!(digest_line(&hl), digest_line(&o));
        assert!(std::fs::read(dest.join("alpine-0.1.0.tgz")).expect("pulled") == bytes);
        eprintln!("INTEROP bearer token flow: rudder login/push -> helm{major} pull: archive bytes identical");
    }
}

/// The CLI on `oci://` references, against helm on the same registry and
/// the same login: `pull` (output and bytes) and `template` print what helm
/// prints; `template` again comes from the chart cache.
fn cli_references(major: u8) {
    let Some(helm) = common::helm(major) else {
        return;
    };
    let Some(reg) = Registry::start(false) else {
        return;
    };
    let work = tempfile::tempdir().expect("tempdir");
    let home = Home::new();
    let Some(charts) = package_charts(&helm, &home, work.path()) else {
        return;
    };
    helm_login(&helm, major, &home, &reg);
    for c in &charts {
        ok(
            home.helm(&helm)
                .arg("push")
                .arg(&c.tgz)
                .arg(reg.url("cli"))
                .arg("--plain-http"),
            None,
        );
        let reference = reg.url(&format!("cli/{}", c.name));
        let (hd, rd) = (work.path().join("h"), work.path().join("r"));
        std::fs::create_dir_all(&hd).expect("mkdir");
        let pull = |cmd: &mut Command, dest: &Path| {
            run(
                cmd.args([
                    "pull",
                    &reference,
                    "--version",
                    &c.version,
                    "--plain-http",
                    "-d",
                ])
                .arg(dest),
                None,
            )
        };
        let (h, r) = (
            pull(&mut home.helm(&helm), &hd),
            pull(&mut home.rudder(), &rd),
        );
        assert!(h.status.success() && r.status.success(), "{h:?}\n{r:?}");
        assert_eq!(
            format!("{}{}", text(&h.stdout), text(&h.stderr)),
            format!("{}{}", text(&r.stdout), text(&r.stderr)),
            "{}: pull output",
            c.corpus
        );
        let file = format!("{}-{}.tgz", c.name, c.version);
        assert!(
            std::fs::read(hd.join(&file)).expect("helm's")
                == std::fs::read(rd.join(&file)).expect("rudder's"),
            "{}: pulled bytes differ",
            c.corpus
        );
        let template = |cmd: &mut Command| {
            run(
                cmd.args([
                    "template",
                    "rel",
                    &reference,
                    "--version",
                    &c.version,
                    "--plain-http",
                ]),
                None,
            )
        };
        let (h, r) = (
            template(&mut home.helm(&helm)),
            template(&mut home.rudder()),
        );
        assert!(h.status.success() && r.status.success(), "{h:?}\n{r:?}");
        let same = h.stdout == r.stdout;
        let again = template(&mut home.rudder());
        if again.stdout != r.stdout {
            // The chart draws random values (bitnami-nginx makes a
            // certificate): two renders differ whoever makes them, so
            // only the documents' sources are compared.
            let sources = |o: &Output| -> Vec<String> {
                text(&o.stdout)
                    .lines()
                    .filter(|l| l.starts_with("# Source: "))
                    .map(str::to_string)
                    .collect()
            };
            assert_eq!(sources(&h), sources(&r), "{}: documents", c.corpus);
            eprintln!(
                "INTEROP helm{major} template oci://: {}: random values; the same documents",
                c.corpus
            );
            continue;
        }
        if same {
            eprintln!(
                "INTEROP helm{major} template oci://: {}: identical",
                c.corpus
            );
        } else {
            // rudder renders as Helm 3.17.2: where Helm 4 renders a chart
            // differently, the registry must still be transparent.
            assert_eq!(major, 4, "{}: helm {major} template differs", c.corpus);
            let local = run(home.rudder().args(["template", "rel"]).arg(&c.tgz), None);
            assert!(
                local.stdout == r.stdout,
                "{}: oci:// and the archive differ",
                c.corpus
            );
            eprintln!("INTEROP helm{major} template oci://: {}: Helm 4 renders it differently; rudder prints the same as for the archive", c.corpus);
        }
    }
}

#[test]
fn helm3_and_rudder_pull_and_template_oci_references_alike() {
    cli_references(3);
}

#[test]
fn helm4_and_rudder_pull_and_template_oci_references_alike() {
    cli_references(4);
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `dependency update` of a chart whose dependency is on a registry
/// (`repository: oci://...`), with an exact version and with a constraint
/// (which lists the tags): rudder writes helm's Chart.lock (apart from
/// `generated`) and the archive helm writes.
fn oci_dependency(major: u8) {
    let Some(helm) = common::helm(major) else {
        return;
    };
    let Some(reg) = Registry::start(false) else {
        return;
    };
    let work = tempfile::tempdir().expect("tempdir");
    let home = Home::new();
    let Some(charts) = package_charts(&helm, &home, work.path()) else {
        return;
    };
    helm_login(&helm, major, &home, &reg);
    let alpine = &charts[0];
    ok(
        home.helm(&helm)
            .arg("push")
            .arg(&alpine.tgz)
            .arg(reg.url("deps"))
            .arg("--plain-http"),
        None,
    );
    for version in [alpine.version.clone(), "~0.1".to_string()] {
        let chart_yaml = format!(
            "apiVersion: v2\nname: parent\nversion: 1.0.0\ndependencies:\n- name: {}\n  version: \"{version}\"\n  repository: {}\n",
            alpine.name,
            reg.url("deps")
        );
        let mut dirs = Vec::new();
        let mut stderrs = Vec::new();
        for tool in ["helm", "rudder"] {
            let d = work
                .path()
                .join(format!("{tool}-{major}-{}", version.len()));
            std::fs::create_dir_all(d.join("templates")).expect("mkdir");
            std::fs::write(d.join("Chart.yaml"), &chart_yaml).expect("write");
            let mut cmd = if tool == "helm" {
                home.helm(&helm)
            } else {
                home.rudder()
            };
            let out = ok(
                cmd.args(["dependency", "update", "--plain-http"]).arg(&d),
                None,
            );
            stderrs.push(stderr(&out));
            dirs.push(d);
        }
        // Helm's registry client reports each pull (`Pulled:`, `Digest:`).
        assert_eq!(
            stderrs[0], stderrs[1],
            "helm {major}, version {version}: stderr"
        );
        assert!(stderrs[0].starts_with("Pulled: "), "{}", stderrs[0]);
        let lock = |d: &Path| -> String {
            std::fs::read_to_string(d.join("Chart.lock"))
                .expect("Chart.lock")
                .lines()
                .filter(|l| !l.starts_with("generated:"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(
            lock(&dirs[0]),
            lock(&dirs[1]),
            "helm {major}, version {version}: Chart.lock"
        );
        let file = format!("charts/{}-{}.tgz", alpine.name, alpine.version);
        assert!(
            std::fs::read(dirs[0].join(&file)).expect("helm's archive")
                == std::fs::read(dirs[1].join(&file)).expect("rudder's archive"),
            "helm {major}, version {version}: {file} differs"
        );
        eprintln!("INTEROP helm{major} dependency update oci:// (version {version}): Chart.lock, {file} and stderr identical");
    }
}

#[test]
fn helm3_and_rudder_update_oci_dependencies_alike() {
    oci_dependency(3);
}

#[test]
fn helm4_and_rudder_update_oci_dependencies_alike() {
    oci_dependency(4);
}

/// A registry that requires a client certificate (mutual TLS), with
/// htpasswd auth: rudder logs in, pushes, pulls and templates with
/// `--ca-file`, `--cert-file` and `--key-file` (the OCI client presents the
/// certificate through rudder's relay), and helm 4 pulls what rudder pushed
/// with the same files. Without the certificate the registry refuses the
/// handshake, and rudder says so.
#[test]
fn a_registry_that_requires_a_client_certificate() {
    let Some(reg) = Registry::start_mutual_tls() else {
        return;
    };
    let ca = reg.ca.clone().expect("ca");
    let (cert, key) = reg.client.clone().expect("client certificate");
    let home = Home::new();
    let work = tempfile::tempdir().expect("tempdir");
    let Some(tgz) = small_chart(work.path()) else {
        return;
    };
    let bytes = std::fs::read(&tgz).expect("read");
    let tls = |c: &mut Command| {
        c.arg("--ca-file")
            .arg(&ca)
            .arg("--cert-file")
            .arg(&cert)
            .arg("--key-file")
            .arg(&key);
    };
    // Without the client certificate: the handshake is refused.
    let err = refused_login(&home, &reg, &["--ca-file".as_ref(), ca.as_os_str()]);
    assert!(err.to_lowercase().contains("certificate"), "{err}");
    eprintln!("without --cert-file: {}", err.trim());
    // A certificate the registry's CA did not sign (the relay's trust of
    // the server is the user's: a wrong --ca-file fails as it would
    // without the relay).
    let err = refused_login(
        &home,
        &reg,
        &[
            "--cert-file".as_ref(),
            cert.as_os_str(),
            "--key-file".as_ref(),
            key.as_os_str(),
        ],
    );
    assert!(
        err.contains("TLS handshake with") && err.contains(&reg.host),
        "{err}"
    );
    eprintln!("without --ca-file: {}", err.trim());
    let mut login = home.rudder();
    login.args(["registry", "login", &reg.host, "-u", USER, "-p", PASS]);
    tls(&mut login);
    ok(&mut login, None);
    let mut push = home.rudder();
    push.arg("push").arg(&tgz).arg(reg.url("mtls"));
    tls(&mut push);
    let rudder_digest = digest_line(&ok(&mut push, None));
    let dest = work.path().join("rudder");
    std::fs::create_dir_all(&dest).expect("mkdir");
    let mut pull = home.rudder();
    pull.arg("pull")
        .arg(reg.url("mtls/alpine"))
        .args(["--version", "0.1.0", "-d"])
        .arg(&dest);
    tls(&mut pull);
    ok(&mut pull, None);
    assert!(std::fs::read(dest.join("alpine-0.1.0.tgz")).expect("pulled") == bytes);
    let mut template = home.rudder();
    template
        .args(["template", "x"])
        .arg(reg.url("mtls/alpine"))
        .args(["--version", "0.1.0"]);
    tls(&mut template);
    let o = ok(&mut template, None);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("kind: Pod"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // The library: the same options, no CLI.
    let opts = OciOptions {
        ca_file: Some(ca.clone()),
        cert_file: Some(cert.clone()),
        key_file: Some(key.clone()),
        registry_config: Some(home.registry_config()),
        ..OciOptions::default()
    };
    let got = oci::pull(&reg.url("mtls/alpine"), Some("0.1.0"), &opts).expect("pull over mTLS");
    assert!(got.archive == bytes);
    let tags = oci::tags(&reg.url("mtls/alpine"), &opts).expect("tags over mTLS");
    assert_eq!(tags, vec!["0.1.0".to_string()]);
    eprintln!(
        "INTEROP mTLS: rudder login/push/pull/template with --cert-file/--key-file: ok; \
         without the certificate: refused"
    );
    // Helm 4 with the same files and rudder's login (helm 3 speaks plain
    // HTTP to loopback registries; see over_tls_with_a_throwaway_ca).
    let Some(helm) = common::helm(4) else {
        return;
    };
    let hdest = work.path().join("helm4");
    std::fs::create_dir_all(&hdest).expect("mkdir");
    let mut hpull = home.helm(&helm);
    hpull
        .arg("pull")
        .arg(reg.url("mtls/alpine"))
        .args(["--version", "0.1.0", "-d"])
        .arg(&hdest);
    tls(&mut hpull);
    let o = ok(&mut hpull, None);
    assert_eq!(digest_line(&o), rudder_digest);
    assert!(std::fs::read(hdest.join("alpine-0.1.0.tgz")).expect("pulled") == bytes);
    eprintln!("INTEROP mTLS: rudder push -> helm4 pull --cert-file (rudder's login): archive bytes identical");
}
