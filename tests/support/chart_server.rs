//! A small HTTP(S) chart-repository server for integration tests (issue 31):
//! it serves the static files under a directory (an `index.yaml` and chart
//! archives), optionally behind basic auth and TLS from a throwaway CA (with
//! client certificates required, for `--cert-file`/`--key-file`), and can
//! misbehave on chosen paths (hang, truncate, redirect, fail, stall, serve
//! other bytes). Every request is logged, so a test can check which
//! credentials went to which host and whether a cached chart was fetched
//! again.
//!
//! Include it with `#[path = "support/chart_server.rs"] mod chart_server;`.
//!
//! ```ignore
//! let server = ChartServer::start(dir.path(), ServerOptions::default()
//!     .with_basic_auth("user", "secret")
//!     .with_fault("/demo-0.1.0.tgz", Fault::Truncate(100)));
//! // ... run `rudder repo add demo {server.url()} --username user ...`
//! assert_eq!(server.count("/index.yaml"), 1);
//! ```
//!
//! A thread per connection, HTTP/1.1 keep-alive, `Content-Length` on every
//! answer; GET and HEAD only. The server stops when dropped: open
//! connections (hung ones included) are closed then.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use base64::Engine as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// How the server misbehaves on one path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Read the request and never answer; the connection stays open until
    /// the server is dropped.
    Hang,
    /// Announce the whole file's `Content-Length`, send only its first `n`
    /// bytes, then close the connection.
    Truncate(usize),
    /// Answer `302 Found` with this URL as `Location` (e.g. another
    /// server's, on another port).
    RedirectTo(String),
    /// Answer with this status code and a one-line text body.
    Status(u16),
    /// Wait this long, then serve the file as usual.
    Slow(Duration),
    /// Serve these bytes instead of the file's (for digest mismatches); the
    /// file need not exist.
    Replace(Vec<u8>),
}

/// What the server requires and how it misbehaves.
#[derive(Clone, Debug, Default)]
pub struct ServerOptions {
    /// Basic-auth user and password every request must carry (401 otherwise).
    pub basic_auth: Option<(String, String)>,
    /// Serve HTTPS with a certificate from a fresh throwaway CA
    /// ([`ChartServer::ca_pem`]), valid for `127.0.0.1` and `localhost`.
    pub tls: bool,
    /// Require a client certificate signed by that CA (implies `tls`); see
    /// [`ChartServer::client_cert_pem`] and [`ChartServer::client_key_pem`].
    pub client_cert: bool,
    /// Faults by request path (without the query), e.g. `"/demo-0.1.0.tgz"`.
    pub faults: HashMap<String, Fault>,
}

impl ServerOptions {
    /// Requires basic auth with this user and password.
    pub fn with_basic_auth(mut self, user: &str, password: &str) -> Self {
        self.basic_auth = Some((user.to_string(), password.to_string()));
        self
    }

    /// Serves HTTPS.
    pub fn with_tls(mut self) -> Self {
        self.tls = true;
        self
    }

    /// Serves HTTPS and requires a client certificate.
    pub fn with_client_cert(mut self) -> Self {
        self.tls = true;
        self.client_cert = true;
        self
    }

    /// Misbehaves on `path` (which starts with `/`).
    pub fn with_fault(mut self, path: &str, fault: Fault) -> Self {
        self.faults.insert(path.to_string(), fault);
        self
    }
}

/// One request as the server received it (logged before auth is checked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `HEAD`, ...
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The `Authorization` header, if sent.
    pub authorization: Option<String>,
    /// The `Host` header (`127.0.0.1:PORT`), empty if not sent.
    pub host: String,
}

/// The throwaway CA's certificate and a client certificate it signed.
struct Pki {
    ca_pem: String,
    client_cert_pem: String,
    client_key_pem: String,
}

struct Shared {
    root: PathBuf,
    basic_auth: Option<(String, String)>,
    faults: Mutex<HashMap<String, Fault>>,
    requests: Mutex<Vec<Request>>,
    stop: AtomicBool,
    /// Open connections, to close them when the server stops.
    conns: Mutex<HashMap<u64, TcpStream>>,
}

/// A running chart server; stops when dropped.
pub struct ChartServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    pki: Option<Pki>,
    accept: Option<JoinHandle<()>>,
}

impl ChartServer {
    /// Starts serving the files under `root` on `127.0.0.1`, on a free port.
    /// Files are read per request, so they may be written after the start
    /// (e.g. an `index.yaml` that names [`ChartServer::url`]).
    pub fn start(root: &Path, opts: ServerOptions) -> ChartServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let (tls, pki) = if opts.tls || opts.client_cert {
            let (config, pki) = tls_setup(opts.client_cert);
            (Some(Arc::new(config)), Some(pki))
        } else {
            (None, None)
        };
        let shared = Arc::new(Shared {
            root: root.to_path_buf(),
            basic_auth: opts.basic_auth,
            faults: Mutex::new(opts.faults),
            requests: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            conns: Mutex::new(HashMap::new()),
        });
        let for_loop = Arc::clone(&shared);
        let accept = thread::spawn(move || accept_loop(listener, for_loop, tls));
        ChartServer {
            addr,
            shared,
            pki,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:PORT`, or `https://...` with TLS (no trailing slash).
    pub fn url(&self) -> String {
        let scheme = if self.pki.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn pki(&self) -> &Pki {
        self.pki
            .as_ref()
            .expect("the server was started without TLS")
    }

    /// The CA certificate (PEM) to trust, for `--ca-file`. Panics without TLS.
    pub fn ca_pem(&self) -> &str {
        &self.pki().ca_pem
    }

    /// A client certificate (PEM) the server accepts, for `--cert-file`.
    pub fn client_cert_pem(&self) -> &str {
        &self.pki().client_cert_pem
    }

    /// The client certificate's private key (PKCS#8 PEM), for `--key-file`.
    pub fn client_key_pem(&self) -> &str {
        &self.pki().client_key_pem
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// How many requests (of any method) asked for `path`.
    pub fn count(&self, path: &str) -> usize {
        let log = self.shared.requests.lock().unwrap();
        log.iter().filter(|r| r.path == path).count()
    }

    /// Forgets the requests logged so far.
    pub fn clear_requests(&self) {
        self.shared.requests.lock().unwrap().clear();
    }

    /// Sets (`Some`) or removes (`None`) the fault on `path` while running.
    pub fn set_fault(&self, path: &str, fault: Option<Fault>) {
        let mut faults = self.shared.faults.lock().unwrap();
        match fault {
            Some(f) => faults.insert(path.to_string(), f),
            None => faults.remove(path),
        };
    }
}

impl Drop for ChartServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop, which sees `stop` and returns; after the join
        // no connection can be registered any more.
        let _ = TcpStream::connect(self.addr);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        for (_, conn) in self.shared.conns.lock().unwrap().drain() {
            let _ = conn.shutdown(Shutdown::Both);
        }
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>, tls: Option<Arc<rustls::ServerConfig>>) {
    let next_id = AtomicU64::new(0);
    for conn in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(tcp) = conn else { continue };
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(clone) = tcp.try_clone() {
            shared.conns.lock().unwrap().insert(id, clone);
        }
        let (shared, tls) = (Arc::clone(&shared), tls.clone());
        thread::spawn(move || {
            let _ = tcp.set_nodelay(true);
            match tls {
                None => serve(tcp, &shared),
                Some(config) => {
                    if let Ok(conn) = rustls::ServerConnection::new(config) {
                        serve(rustls::StreamOwned::new(conn, tcp), &shared);
                    }
                }
            }
            shared.conns.lock().unwrap().remove(&id);
        });
    }
}

/// A parsed request head.
struct Head {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    http10: bool,
}

impl Head {
    fn header(&self, name: &str) -> Option<&str> {
        let found = self
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name));
        found.map(|(_, v)| v.as_str())
    }
}

/// Serves requests on one connection until it closes or must close.
fn serve<S: Read + Write>(stream: S, shared: &Shared) {
    let mut reader = BufReader::new(stream);
    while let Ok(Some(head)) = read_head(&mut reader) {
        let close = head.http10
            || head
                .header("connection")
                .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        match respond(&head, reader.get_mut(), shared) {
            Ok(true) if !close => continue,
            _ => return,
        }
    }
}

/// Reads a request head (and discards its body); `None` at a clean EOF.
fn read_head<R: BufRead>(r: &mut R) -> io::Result<Option<Head>> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "bad request");
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    let mut head = Head {
        method: method.to_string(),
        target: target.to_string(),
        headers: Vec::new(),
        http10: version == "HTTP/1.0",
    };
    let mut size = line.len();
    loop {
        line.clear();
        size += r.read_line(&mut line)?;
        if line.is_empty() || size > 64 * 1024 {
            return Err(bad());
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        let (name, value) = l.split_once(':').ok_or_else(bad)?;
        head.headers
            .push((name.trim().to_string(), value.trim().to_string()));
    }
    let body: u64 = head
        .header("content-length")
        .map_or(Ok(0), str::parse)
        .map_err(|_| bad())?;
    io::copy(&mut r.take(body), &mut io::sink())?;
    Ok(Some(head))
}

/// Answers one request; `Ok(false)` when the connection must close.
fn respond<W: Write>(head: &Head, w: &mut W, shared: &Shared) -> io::Result<bool> {
    let path = head
        .target
        .split(['?', '#'])
        .next()
        .unwrap_or("")
        .to_string();
    let authorization = head.header("authorization").map(str::to_string);
    shared.requests.lock().unwrap().push(Request {
        method: head.method.clone(),
        path: path.clone(),
        authorization: authorization.clone(),
        host: head.header("host").unwrap_or("").to_string(),
    });
    let is_head = head.method == "HEAD";
    if let Some((user, password)) = &shared.basic_auth {
        let expected =
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        let given = authorization.as_deref().and_then(|a| a.split_once(' '));
        if !given.is_some_and(|(scheme, creds)| {
            scheme.eq_ignore_ascii_case("basic") && creds.trim() == expected
        }) {
            let challenge = [("WWW-Authenticate", "Basic realm=\"chart-server\"")];
            return send(w, 401, &challenge, b"unauthorized\n", is_head);
        }
    }
    if !is_head && head.method != "GET" {
        return send(
            w,
            405,
            &[("Allow", "GET, HEAD")],
            b"method not allowed\n",
            false,
        );
    }
    let fault = shared.faults.lock().unwrap().get(&path).cloned();
    match fault {
        Some(Fault::Hang) => {
            while !shared.stop.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(20));
            }
            Ok(false)
        }
        Some(Fault::Status(code)) => {
            send(w, code, &[], format!("status {code}\n").as_bytes(), is_head)
        }
        Some(Fault::RedirectTo(url)) => send(w, 302, &[("Location", &url)], b"", is_head),
        Some(Fault::Replace(bytes)) => send(w, 200, &[], &bytes, is_head),
        Some(Fault::Slow(delay)) => {
            thread::sleep(delay);
            serve_file(&shared.root, &path, w, is_head, None)
        }
        Some(Fault::Truncate(n)) => serve_file(&shared.root, &path, w, is_head, Some(n)),
        None => serve_file(&shared.root, &path, w, is_head, None),
    }
}

/// Sends the file at `path` under `root` (404 if none), or only its first
/// `truncate` bytes under the whole file's `Content-Length`, then closes.
fn serve_file<W: Write>(
    root: &Path,
    path: &str,
    w: &mut W,
    is_head: bool,
    truncate: Option<usize>,
) -> io::Result<bool> {
    let Some(file) = local_path(root, path) else {
        return send(w, 400, &[], b"bad path\n", is_head);
    };
    let Ok(body) = std::fs::read(&file) else {
        return send(w, 404, &[], b"not found\n", is_head);
    };
    match truncate {
        None => send(w, 200, &[], &body, is_head),
        Some(n) => {
            write_head(w, 200, &[], body.len())?;
            if !is_head {
                w.write_all(&body[..n.min(body.len())])?;
            }
            w.flush()?;
            Ok(false)
        }
    }
}

/// The file a request path names under `root`, percent-decoded; `None` for
/// a path that leaves `root`.
fn local_path(root: &Path, path: &str) -> Option<PathBuf> {
    let bytes = path.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                decoded.push(b);
                i += 3;
            }
            (b, _) => {
                decoded.push(b);
                i += 1;
            }
        }
    }
    let rel = PathBuf::from(String::from_utf8(decoded).ok()?.trim_start_matches('/'));
    rel.components()
        .all(|c| matches!(c, Component::Normal(_)))
        .then(|| root.join(rel))
}

fn write_head<W: Write>(
    w: &mut W,
    status: u16,
    headers: &[(&str, &str)],
    len: usize,
) -> io::Result<()> {
    let reason = match status {
        200 => "OK",
        302 => "Found",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    };
    let mut head = format!("HTTP/1.1 {status} {reason}\r\nContent-Length: {len}\r\n");
    head.push_str("Content-Type: application/octet-stream\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    w.write_all(head.as_bytes())
}

/// Sends a whole answer; keeps the connection open.
fn send<W: Write>(
    w: &mut W,
    status: u16,
    headers: &[(&str, &str)],
    body: &[u8],
    is_head: bool,
) -> io::Result<bool> {
    write_head(w, status, headers, body.len())?;
    if !is_head {
        w.write_all(body)?;
    }
    w.flush()?;
    Ok(true)
}

/// A throwaway CA, a server certificate for 127.0.0.1 and localhost, a
/// client certificate, and the rustls configuration that uses them.
fn tls_setup(require_client_cert: bool) -> (rustls::ServerConfig, Pki) {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "rudder test CA");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().expect("CA key");
    let ca_cert = ca_params.self_signed(&ca_key).expect("CA certificate");
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf = |names: Vec<String>, usage: ExtendedKeyUsagePurpose| {
        let mut params = CertificateParams::new(names.clone()).expect("leaf parameters");
        params
            .distinguished_name
            .push(DnType::CommonName, names[0].as_str());
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![usage];
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate().expect("leaf key");
        let cert = params.signed_by(&key, &issuer).expect("leaf certificate");
        (cert, key)
    };
    let names = vec!["127.0.0.1".to_string(), "localhost".to_string()];
    let (server_cert, server_key) = leaf(names, ExtendedKeyUsagePurpose::ServerAuth);
    let (client_cert, client_key) = leaf(
        vec!["rudder-test-client".to_string()],
        ExtendedKeyUsagePurpose::ClientAuth,
    );

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .expect("TLS versions");
    let builder = if require_client_cert {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(ca_cert.der().clone())
            .expect("CA into the root store");
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .expect("client verifier");
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let chain: Vec<CertificateDer<'static>> =
        vec![server_cert.der().clone(), ca_cert.der().clone()];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
    let config = builder
        .with_single_cert(chain, key)
        .expect("server certificate");
    let pki = Pki {
        ca_pem: ca_cert.pem(),
        client_cert_pem: client_cert.pem(),
        client_key_pem: client_key.serialize_pem(),
    };
    (config, pki)
}
