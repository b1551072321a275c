//! Checks the test chart server (tests/support/chart_server.rs) itself: each
//! fault, auth and TLS over plain sockets and rustls, and real Helm v3
//! (`HELM3_BIN`) adding, updating and pulling from it with basic auth, a CA
//! file and a client certificate. Without Helm those tests print a skip
//! message, unless `RUDDER_REQUIRE_ORACLE=1`, which makes them fail.

#[path = "support/chart_server.rs"]
mod chart_server;
mod common;

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use chart_server::{ChartServer, Fault, ServerOptions};

/// An answer as a client saw it.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        let found = self
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name));
        found.map(|(_, v)| v.as_str())
    }
}

/// Sends a GET on an open connection and reads the answer: the body up to
/// its `Content-Length`, or less if the server closes first.
fn get_on<S: Read + Write>(conn: &mut BufReader<S>, path: &str, auth: Option<&str>) -> Answer {
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: test\r\n");
    if let Some(a) = auth {
        req.push_str(&format!("Authorization: {a}\r\n"));
    }
    req.push_str("\r\n");
    conn.get_mut().write_all(req.as_bytes()).unwrap();
    conn.get_mut().flush().unwrap();
    let mut line = String::new();
    conn.read_line(&mut line).unwrap();
    let status = line.split(' ').nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        line.clear();
        conn.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (n, v) = l.split_once(':').unwrap();
        headers.push((n.trim().to_string(), v.trim().to_string()));
    }
    let mut answer = Answer {
        status,
        headers,
        body: Vec::new(),
    };
    let len: u64 = answer.header("content-length").unwrap().parse().unwrap();
    conn.take(len).read_to_end(&mut answer.body).unwrap();
    answer
}

fn connect(server: &ChartServer) -> BufReader<TcpStream> {
    BufReader::new(TcpStream::connect(server.addr()).unwrap())
}

fn get(server: &ChartServer, path: &str) -> Answer {
    get_on(&mut connect(server), path, None)
}

/// A directory with an index.yaml and a 1000-byte "chart".
fn repo_dir() -> (tempfile::TempDir, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let chart: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(
        dir.path().join("index.yaml"),
        "apiVersion: v1\nentries: {}\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("charts")).unwrap();
    std::fs::write(dir.path().join("charts/demo-0.1.0.tgz"), &chart).unwrap();
    (dir, chart)
}

#[test]
fn serves_files_keeps_alive_and_logs_requests() {
    let (dir, chart) = repo_dir();
    let server = ChartServer::start(dir.path(), ServerOptions::default());
    assert!(server.url().starts_with("http://127.0.0.1:"));
    let mut conn = connect(&server);
    let index = get_on(&mut conn, "/index.yaml", None);
    assert_eq!(
        (index.status, index.body.as_slice()),
        (200, &b"apiVersion: v1\nentries: {}\n"[..])
    );
    // The same connection serves a second request (keep-alive).
    let tgz = get_on(&mut conn, "/charts/demo-0.1.0.tgz?x=1", None);
    assert_eq!((tgz.status, &tgz.body), (200, &chart));
    assert_eq!(get(&server, "/charts/%64emo-0.1.0.tgz").body, chart);
    assert_eq!(get(&server, "/missing.tgz").status, 404);
    assert_eq!(get(&server, "/../etc/passwd").status, 400);
    assert_eq!(get(&server, "/charts/%2e%2e/index.yaml").status, 400);
    let log = server.requests();
    assert_eq!(log.len(), 6);
    assert_eq!(
        (log[1].method.as_str(), log[1].path.as_str()),
        ("GET", "/charts/demo-0.1.0.tgz")
    );
    assert_eq!(
        (log[1].host.as_str(), log[1].authorization.as_deref()),
        ("test", None)
    );
    assert_eq!(server.count("/charts/demo-0.1.0.tgz"), 1);
    server.clear_requests();
    assert!(server.requests().is_empty());
}

#[test]
fn basic_auth_answers_401_with_a_challenge_unless_the_credentials_match() {
    let (dir, _) = repo_dir();
    let server = ChartServer::start(
        dir.path(),
        ServerOptions::default().with_basic_auth("user", "s3cret"),
    );
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let right = format!("Basic {}", b64("user:s3cret"));
    let wrong = format!("Basic {}", b64("user:nope"));
    for auth in [None, Some(wrong.as_str())] {
        let a = get_on(&mut connect(&server), "/index.yaml", auth);
        assert_eq!(a.status, 401);
        assert_eq!(
            a.header("www-authenticate"),
            Some("Basic realm=\"chart-server\"")
        );
    }
    assert_eq!(
        get_on(&mut connect(&server), "/index.yaml", Some(&right)).status,
        200
    );
    let sent: Vec<_> = server
        .requests()
        .into_iter()
        .map(|r| r.authorization)
        .collect();
    assert_eq!(sent, [None, Some(wrong), Some(right)]);
}

#[test]
fn hang_reads_the_request_and_never_answers_until_the_server_drops() {
    let (dir, _) = repo_dir();
    let server = ChartServer::start(
        dir.path(),
        ServerOptions::default().with_fault("/index.yaml", Fault::Hang),
    );
    let mut conn = TcpStream::connect(server.addr()).unwrap();
    conn.write_all(b"GET /index.yaml HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    conn.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut buf = [0u8; 16];
    let err = conn.read(&mut buf).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{err}"
    );
    assert_eq!(server.count("/index.yaml"), 1);
    let start = Instant::now();
    drop(server);
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(
        conn.read(&mut buf).unwrap(),
        0,
        "dropping the server closes the hung connection"
    );
    assert!(start.elapsed() < Duration::from_secs(2));
}

#[test]
fn truncate_announces_the_whole_length_and_sends_n_bytes() {
    let (dir, chart) = repo_dir();
    let path = "/charts/demo-0.1.0.tgz";
    let server = ChartServer::start(
        dir.path(),
        ServerOptions::default().with_fault(path, Fault::Truncate(100)),
    );
    let mut conn = connect(&server);
    let a = get_on(&mut conn, path, None);
    assert_eq!(a.header("content-length"), Some("1000"));
    assert_eq!(a.body, chart[..100]);
    let mut rest = Vec::new();
    assert_eq!(
        conn.read_to_end(&mut rest).unwrap(),
        0,
        "the connection is closed"
    );
}

#[test]
fn redirect_status_and_replace() {
    let (dir, chart) = repo_dir();
    let other = ChartServer::start(dir.path(), ServerOptions::default());
    let target = format!("{}/charts/demo-0.1.0.tgz", other.url());
    let server = ChartServer::start(
        dir.path(),
        ServerOptions::default()
            .with_fault("/charts/demo-0.1.0.tgz", Fault::RedirectTo(target.clone()))
            .with_fault("/index.yaml", Fault::Status(503))
            .with_fault("/other.tgz", Fault::Replace(b"not a chart".to_vec())),
    );
    let a = get(&server, "/charts/demo-0.1.0.tgz");
    assert_eq!(
        (a.status, a.header("location")),
        (302, Some(target.as_str()))
    );
    assert_eq!(get(&server, "/index.yaml").status, 503);
    let r = get(&server, "/other.tgz");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"not a chart"[..]));
    // A fault set while running, and removed again.
    server.set_fault("/index.yaml", None);
    server.set_fault(
        "/charts/demo-0.1.0.tgz",
        Some(Fault::Replace(b"x".to_vec())),
    );
    assert_eq!(get(&server, "/index.yaml").status, 200);
    assert_eq!(get(&server, "/charts/demo-0.1.0.tgz").body, b"x");
    assert_eq!(get(&other, "/charts/demo-0.1.0.tgz").body, chart);
}

#[test]
fn slow_requests_are_served_in_parallel() {
    let (dir, chart) = repo_dir();
    let delay = Duration::from_millis(600);
    let path = "/charts/demo-0.1.0.tgz";
    let server = ChartServer::start(
        dir.path(),
        ServerOptions::default().with_fault(path, Fault::Slow(delay)),
    );
    let start = Instant::now();
    thread_scope_gets(&server, path, 4, &chart);
    let took = start.elapsed();
    // Four requests in a row would take 2.4 s; in parallel about 0.6 s.
    assert!(
        took >= delay && took < delay * 2,
        "4 slow requests took {took:?}"
    );
}

fn thread_scope_gets(server: &ChartServer, path: &str, n: usize, expected: &[u8]) {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n).map(|_| s.spawn(|| get(server, path))).collect();
        for h in handles {
            assert_eq!(h.join().unwrap().body, expected);
        }
    });
}

/// A rustls client that trusts `ca_pem`, with a client certificate if given.
fn tls_client(
    server: &ChartServer,
    client: Option<(&str, &str)>,
) -> BufReader<rustls::StreamOwned<rustls::ClientConnection, TcpStream>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(server.ca_pem().as_bytes()).unwrap())
        .unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_slice(cert.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
            )
            .unwrap(),
    };
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = TcpStream::connect(server.addr()).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    BufReader::new(rustls::StreamOwned::new(conn, tcp))
}

#[test]
fn tls_from_a_throwaway_ca_and_client_certificates() {
    let (dir, chart) = repo_dir();
    let server = ChartServer::start(dir.path(), ServerOptions::default().with_tls());
    assert!(server.url().starts_with("https://127.0.0.1:"));
    assert!(server.ca_pem().starts_with("-----BEGIN CERTIFICATE-----"));
    let a = get_on(
        &mut tls_client(&server, None),
        "/charts/demo-0.1.0.tgz",
        None,
    );
    assert_eq!((a.status, &a.body), (200, &chart));

    let mtls = ChartServer::start(dir.path(), ServerOptions::default().with_client_cert());
    let (cert, key) = (mtls.client_cert_pem(), mtls.client_key_pem());
    assert!(key.starts_with("-----BEGIN PRIVATE KEY-----"));
    let a = get_on(
        &mut tls_client(&mtls, Some((cert, key))),
        "/index.yaml",
        None,
    );
    assert_eq!(a.status, 200);
    // Without a client certificate the handshake fails: no request is logged.
    let mut anonymous = tls_client(&mtls, None);
    let req = b"GET /index.yaml HTTP/1.1\r\nHost: x\r\n\r\n";
    let sent = anonymous
        .get_mut()
        .write_all(req)
        .and_then(|_| anonymous.get_mut().flush());
    let mut line = String::new();
    let read = sent.and_then(|_| anonymous.read_line(&mut line));
    assert!(
        read.is_err() || line.is_empty(),
        "answered without a client certificate: {line}"
    );
    assert_eq!(mtls.count("/index.yaml"), 1);
}

/// Runs helm with throwaway homes; returns (success, stderr).
fn helm(bin: &Path, home: &Path, args: &[&str]) -> (bool, String) {
    let out = common::helm_command(bin, home)
        .env("HOME", home)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A chart packaged by helm itself and an index.yaml with relative URLs.
fn helm_repo(bin: &Path, home: &Path) -> (tempfile::TempDir, Vec<u8>) {
    let root = tempfile::tempdir().unwrap();
    let src = home.join("src");
    std::fs::create_dir_all(&src).unwrap();
    let src_s = src.join("demo").to_string_lossy().into_owned();
    let root_s = root.path().to_string_lossy().into_owned();
    for args in [
        vec!["create", &src_s],
        vec!["package", &src_s, "-d", &root_s],
        vec!["repo", "index", &root_s],
    ] {
        let (ok, err) = helm(bin, home, &args);
        assert!(ok, "helm {args:?}: {err}");
    }
    let tgz = std::fs::read(root.path().join("demo-0.1.0.tgz")).unwrap();
    (root, tgz)
}

/// `helm repo add` + `repo update` + `pull` of demo, checking the bytes.
fn helm_add_update_pull(bin: &Path, home: &Path, url: &str, extra: &[&str], tgz: &[u8]) {
    let mut add = vec!["repo", "add", "demo", url];
    add.extend_from_slice(extra);
    let (ok, err) = helm(bin, home, &add);
    assert!(ok, "helm repo add: {err}");
    let (ok, err) = helm(bin, home, &["repo", "update", "demo"]);
    assert!(ok, "helm repo update: {err}");
    let out = home.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let (ok, err) = helm(
        bin,
        home,
        &["pull", "demo/demo", "-d", &out.to_string_lossy()],
    );
    assert!(ok, "helm pull: {err}");
    assert_eq!(
        std::fs::read(out.join("demo-0.1.0.tgz")).unwrap(),
        tgz,
        "pulled bytes"
    );
}

#[test]
fn helm3_uses_basic_auth_and_fails_on_a_wrong_password() {
    let Some(bin) = common::helm(3) else { return };
    let home = tempfile::tempdir().unwrap();
    let (root, tgz) = helm_repo(&bin, home.path());
    let server = ChartServer::start(
        root.path(),
        ServerOptions::default().with_basic_auth("user", "s3cret"),
    );
    let (ok, err) = helm(
        &bin,
        home.path(),
        &[
            "repo",
            "add",
            "bad",
            &server.url(),
            "--username",
            "user",
            "--password",
            "wrong",
        ],
    );
    assert!(
        !ok && err.contains("401"),
        "helm repo add with a wrong password: {err}"
    );
    helm_add_update_pull(
        &bin,
        home.path(),
        &server.url(),
        &["--username", "user", "--password", "s3cret"],
        &tgz,
    );
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("user:s3cret")
    );
    let log = server.requests();
    let chart = log
        .iter()
        .find(|r| r.path == "/demo-0.1.0.tgz")
        .expect("helm fetched the chart");
    assert_eq!(chart.authorization.as_deref(), Some(expected.as_str()));
    assert_eq!(chart.host, server.addr().to_string());
    // add and update each fetched the index; pull fetched the chart once.
    assert_eq!(
        (server.count("/index.yaml"), server.count("/demo-0.1.0.tgz")),
        (3, 1)
    );
}

#[test]
fn helm3_over_tls_with_a_ca_file_and_a_client_certificate() {
    let Some(bin) = common::helm(3) else { return };
    let home = tempfile::tempdir().unwrap();
    let (root, tgz) = helm_repo(&bin, home.path());
    let server = ChartServer::start(
        root.path(),
        ServerOptions::default()
            .with_basic_auth("u", "p")
            .with_tls(),
    );
    let ca = home.path().join("ca.pem");
    std::fs::write(&ca, server.ca_pem()).unwrap();
    let ca_s = ca.to_string_lossy().into_owned();
    let auth = ["--username", "u", "--password", "p"];
    let (ok, err) = helm(
        &bin,
        home.path(),
        &[&["repo", "add", "untrusted", &server.url()][..], &auth].concat(),
    );
    assert!(
        !ok && err.contains("certificate"),
        "helm trusted the throwaway CA without --ca-file: {err}"
    );
    helm_add_update_pull(
        &bin,
        home.path(),
        &server.url(),
        &[&auth[..], &["--ca-file", &ca_s]].concat(),
        &tgz,
    );

    let home = tempfile::tempdir().unwrap();
    let mtls = ChartServer::start(root.path(), ServerOptions::default().with_client_cert());
    std::fs::write(&ca, mtls.ca_pem()).unwrap();
    let (cert, key) = (
        home.path().join("client.pem"),
        home.path().join("client.key"),
    );
    std::fs::write(&cert, mtls.client_cert_pem()).unwrap();
    std::fs::write(&key, mtls.client_key_pem()).unwrap();
    let (ok, err) = helm(
        &bin,
        home.path(),
        &["repo", "add", "nocert", &mtls.url(), "--ca-file", &ca_s],
    );
    assert!(!ok, "helm got in without a client certificate: {err}");
    let (cert_s, key_s) = (
        cert.to_string_lossy().into_owned(),
        key.to_string_lossy().into_owned(),
    );
    helm_add_update_pull(
        &bin,
        home.path(),
        &mtls.url(),
        &[
            "--ca-file",
            &ca_s,
            "--cert-file",
            &cert_s,
            "--key-file",
            &key_s,
        ],
        &tgz,
    );
}
