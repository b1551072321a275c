//! A real OCI registry for tests: the CNCF distribution registry built by
//! `scripts/registry`, started on a free loopback port with a generated
//! config (htpasswd auth with a bcrypt hash, storage in a temporary
//! directory), optionally with TLS from a throwaway CA made with the
//! `openssl` command. Killed when dropped. [`TokenRegistry`] puts one
//! behind a token service (the bearer flow), with a JWT signed by a
//! throwaway RSA key.
//!
//! The binary is `$RUDDER_REGISTRY_BIN` (set by `.ci/run`), else what
//! `scripts/registry build` prints (cached, needs Go the first time).
//! Without it, [`registry_bin`] reports the skip (a failure under
//! `RUDDER_REQUIRE_ORACLE=1`).
#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::missing;

/// The user every test registry accepts.
pub const USER: &str = "rudder";
/// Its password.
pub const PASS: &str = "s3cret-pass";

fn locate() -> Result<PathBuf, String> {
    if let Ok(p) = std::env::var("RUDDER_REGISTRY_BIN") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        return Err(format!(
            "the OCI registry (RUDDER_REGISTRY_BIN={} is not a file)",
            p.display()
        ));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/registry");
    // `path` answers from the cache; `build` builds when Go is there.
    for sub in ["path", "build"] {
        let out = Command::new("bash")
            .arg(&script)
            .arg(sub)
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| format!("the OCI registry (cannot run scripts/registry: {e})"))?;
        if out.status.success() {
            let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if p.is_file() {
                return Ok(p);
            }
        } else if sub == "build" {
            return Err(format!(
                "the OCI registry (scripts/registry build failed: {})",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    Err("the OCI registry (scripts/registry build)".into())
}

/// The registry binary, or `None` after a visible skip message.
pub fn registry_bin() -> Option<PathBuf> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match BIN.get_or_init(locate) {
        Ok(p) => Some(p.clone()),
        Err(what) => missing(what),
    }
}

/// The `openssl` command, or `None` after a visible skip message.
pub fn openssl() -> Option<PathBuf> {
    let ok = Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Some(PathBuf::from("openssl"))
    } else {
        missing("the openssl command (to make a throwaway CA for the TLS registry)")
    }
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local addr").port()
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("run command");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Makes `ca.crt`, `server.crt` and `server.key` in `dir`: a throwaway CA
/// and a certificate for 127.0.0.1 and localhost signed by it (P-256).
pub fn make_ca(openssl: &Path, dir: &Path) {
    run(Command::new(openssl)
        .current_dir(dir)
        .args(["req", "-x509", "-nodes", "-days", "2"])
        .args(EC_KEY)
        .args([
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-subj",
            "/CN=rudder test CA",
        ])
        .args(["-addext", "basicConstraints=critical,CA:TRUE"])
        .args(["-addext", "keyUsage=critical,keyCertSign,cRLSign"]));
    sign_leaf(
        openssl,
        dir,
        "server",
        "/CN=127.0.0.1",
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    );
}

/// Makes `client.crt` and `client.key` in `dir` (where [`make_ca`] made
/// the CA): a client certificate the CA signed, for mutual TLS.
pub fn make_client_cert(openssl: &Path, dir: &Path) {
    sign_leaf(
        openssl,
        dir,
        "client",
        "/CN=rudder test client",
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n\
         extendedKeyUsage=clientAuth\n",
    );
}

/// A new P-256 key, as openssl's arguments.
const EC_KEY: [&str; 4] = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];

/// `NAME.key` and `NAME.crt` in `dir`: a key and a certificate for
/// `subject` with the extensions `ext`, signed by the CA there.
fn sign_leaf(openssl: &Path, dir: &Path, name: &str, subject: &str, ext: &str) {
    let (key, csr, crt, cnf) = (
        format!("{name}.key"),
        format!("{name}.csr"),
        format!("{name}.crt"),
        format!("{name}-ext.cnf"),
    );
    run(Command::new(openssl)
        .current_dir(dir)
        .args(["req", "-nodes"])
        .args(EC_KEY)
        .args(["-keyout", &key, "-out", &csr, "-subj", subject]));
    std::fs::write(dir.join(&cnf), ext).expect("write the extensions");
    run(Command::new(openssl).current_dir(dir).args([
        "x509",
        "-req",
        "-in",
        &csr,
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        &crt,
        "-days",
        "2",
        "-extfile",
        &cnf,
    ]));
}

/// A running registry.
pub struct Registry {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub host: String,
    /// Config, htpasswd, certificates, storage (`data/`) and `registry.log`.
    pub dir: tempfile::TempDir,
    /// The CA certificate, for a TLS registry.
    pub ca: Option<PathBuf>,
    /// The client certificate and key a mutual-TLS registry accepts.
    pub client: Option<(PathBuf, PathBuf)>,
}

impl Registry {
    /// Starts a registry over plain HTTP, or over HTTPS with a fresh CA.
    /// `None` (after a skip message) when the binary or openssl is missing.
    pub fn start(tls: bool) -> Option<Registry> {
        Registry::start_with(tls, true)
    }

    /// [`Registry::start`], with htpasswd auth or open to anyone.
    pub fn start_with(tls: bool, auth: bool) -> Option<Registry> {
        Registry::start_full(tls, auth, false)
    }

    /// A registry over HTTPS with htpasswd auth that also requires a client
    /// certificate signed by its CA ([`Registry::client`]).
    pub fn start_mutual_tls() -> Option<Registry> {
        Registry::start_full(true, true, true)
    }

    fn start_full(tls: bool, auth: bool, client_cert: bool) -> Option<Registry> {
        let bin = registry_bin()?;
        let dir = tempfile::tempdir().expect("tempdir");
        let ca = if tls {
            let openssl = openssl()?;
            make_ca(&openssl, dir.path());
            if client_cert {
                make_client_cert(&openssl, dir.path());
            }
            Some(dir.path().join("ca.crt"))
        } else {
            None
        };
        let client =
            client_cert.then(|| (dir.path().join("client.crt"), dir.path().join("client.key")));
        // Cost 5: the registry checks the hash on every request.
        let hash = bcrypt::hash(PASS, 5).expect("bcrypt");
        std::fs::write(dir.path().join("htpasswd"), format!("{USER}:{hash}\n"))
            .expect("write htpasswd");
        for attempt in 0..3 {
            let port = free_port();
            let host = format!("127.0.0.1:{port}");
            let tls_block = if tls {
                let mutual = if client_cert {
                    format!(
                        "    clientcas:\n      - {d}/ca.crt\n    clientauth: require-and-verify-client-cert\n",
                        d = dir.path().display()
                    )
                } else {
                    String::new()
                };
                format!(
                    "  tls:\n    certificate: {d}/server.crt\n    key: {d}/server.key\n{mutual}",
                    d = dir.path().display()
                )
            } else {
                String::new()
            };
            let auth_block = if auth {
                format!(
                    "auth:\n  htpasswd:\n    realm: rudder-test\n    path: {}/htpasswd\n",
                    dir.path().display()
                )
            } else {
                String::new()
            };
            let config = format!(
                "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\n\
                 storage:\n  filesystem:\n    rootdirectory: {d}/data\n  delete:\n    enabled: true\n\
                 http:\n  addr: {host}\n{tls_block}{auth_block}",
                d = dir.path().display()
            );
            let cfg = dir.path().join("config.yml");
            std::fs::write(&cfg, config).expect("write config");
            let log = std::fs::File::create(dir.path().join("registry.log")).expect("log");
            let mut child = Command::new(&bin)
                .arg("serve")
                .arg(&cfg)
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("log"))
                .stderr(log)
                .spawn()
                .expect("start the registry");
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut up = false;
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if TcpStream::connect(&host).is_ok() {
                    up = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            if up {
                return Some(Registry {
                    child,
                    host,
                    dir,
                    ca,
                    client,
                });
            }
            let _ = child.kill();
            let _ = child.wait();
            let log = std::fs::read_to_string(dir.path().join("registry.log")).unwrap_or_default();
            eprintln!("registry did not start (attempt {attempt}): {log}");
        }
        panic!("the registry did not start three times");
    }

    /// `oci://HOST/PATH`.
    pub fn url(&self, path: &str) -> String {
        format!("oci://{}/{path}", self.host)
    }

    /// The file holding blob `digest` (`sha256:...`) in the storage.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.dir
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// The registry's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server that accepts connections and never answers; it stops with
/// the test process.
pub fn hanging_server() -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let host = l.local_addr().expect("addr").to_string();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in l.incoming().flatten() {
            held.push(s);
        }
    });
    host
}

/// A registry behind a token service (the bearer flow): the registry
/// answers `401 Bearer realm=...`, the token service (a thread here)
/// checks the user's basic credentials and hands out a JWT signed with a
/// throwaway RSA key (made and used with `openssl`), which grants `access`
/// (`(repository, actions)`) to anyone who logged in.
pub struct TokenRegistry {
    /// The registry.
    pub registry: Registry,
    /// How many token requests the service refused and granted.
    pub counts: std::sync::Arc<std::sync::Mutex<(u32, u32)>>,
}

fn b64url(b: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

/// A JWT for `access`, signed RS256 with `key`, carrying `cert` in `x5c`.
fn sign_token(openssl: &Path, dir: &Path, access: &[(&str, &[&str])]) -> String {
    let pem = std::fs::read_to_string(dir.join("token.crt")).expect("token cert");
    let body: String = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<Vec<_>>()
        .concat();
    let header = serde_json::json!({"typ": "JWT", "alg": "RS256", "x5c": [body]});
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let access: Vec<serde_json::Value> = access
        .iter()
        .map(|(name, actions)| {
            serde_json::json!({"type": "repository", "name": name, "actions": actions})
        })
        .collect();
    let claims = serde_json::json!({
        "iss": "rudder-test-issuer", "sub": USER, "aud": "rudder-test",
        "exp": now + 3600, "nbf": now - 60, "iat": now - 60, "jti": format!("t{now}"),
        "access": access,
    });
    let signing_input = format!(
        "{}.{}",
        b64url(header.to_string().as_bytes()),
        b64url(claims.to_string().as_bytes())
    );
    std::fs::write(dir.join("jwt.in"), &signing_input).expect("write");
    run(Command::new(openssl).current_dir(dir).args([
        "dgst",
        "-sha256",
        "-sign",
        "token.key",
        "-out",
        "jwt.sig",
        "jwt.in",
    ]));
    let sig = std::fs::read(dir.join("jwt.sig")).expect("sig");
    format!("{signing_input}.{}", b64url(&sig))
}

impl TokenRegistry {
    /// Starts the token service and the registry that trusts it.
    pub fn start(access: &[(&str, &[&str])]) -> Option<TokenRegistry> {
        let bin = registry_bin()?;
        let openssl = openssl()?;
        let dir = tempfile::tempdir().expect("tempdir");
        run(Command::new(&openssl).current_dir(dir.path()).args([
            "req",
            "-x509",
            "-nodes",
            "-days",
            "2",
            "-newkey",
            "rsa:2048",
            "-keyout",
            "token.key",
            "-out",
            "token.crt",
            "-subj",
            "/CN=rudder token signer",
        ]));
        let token = sign_token(&openssl, dir.path(), access);
        // The token service.
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let realm = format!("http://{}/token", listener.local_addr().expect("addr"));
        let counts = std::sync::Arc::new(std::sync::Mutex::new((0u32, 0u32)));
        let c2 = counts.clone();
        std::thread::spawn(move || {
            use base64::Engine as _;
            use std::io::{BufRead as _, BufReader, Write as _};
            let good = format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASS}"))
            );
            for s in listener.incoming().flatten() {
                let mut r = BufReader::new(s);
                let mut auth = String::new();
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some((k, v)) = line.split_once(':') {
                        if k.eq_ignore_ascii_case("authorization") {
                            auth = v.trim().to_string();
                        }
                    }
                }
                let mut s = r.into_inner();
                let granted = auth == good;
                if let Ok(mut c) = c2.lock() {
                    if granted {
                        c.1 += 1;
                    } else {
                        c.0 += 1;
                    }
                }
                let resp = if granted {
                    let body = format!("{{\"token\":\"{token}\",\"access_token\":\"{token}\",\"expires_in\":3600}}");
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )
                } else {
                    let body = "{\"details\":\"wrong user name or password\"}";
                    format!(
                        "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )
                };
                let _ = s.write_all(resp.as_bytes());
            }
        });
        let port = free_port();
        let host = format!("127.0.0.1:{port}");
        let config = format!(
            "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\n\
             storage:\n  filesystem:\n    rootdirectory: {d}/data\n\
             http:\n  addr: {host}\n\
             auth:\n  token:\n    realm: {realm}\n    service: rudder-test\n    issuer: rudder-test-issuer\n    rootcertbundle: {d}/token.crt\n",
            d = dir.path().display()
        );
        let cfg = dir.path().join("config.yml");
        std::fs::write(&cfg, config).expect("config");
        let log = std::fs::File::create(dir.path().join("registry.log")).expect("log");
        let child = Command::new(&bin)
            .arg("serve")
            .arg(&cfg)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start the registry");
        let registry = Registry {
            child,
            host: host.clone(),
            dir,
            ca: None,
            client: None,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(&host).is_err() {
            if Instant::now() > deadline {
                panic!("the token registry did not start: {}", registry.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(TokenRegistry { registry, counts })
    }
}
