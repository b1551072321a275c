//! HTTP(S) downloads for chart repositories and chart URLs, as Helm's
//! HTTP getter makes them (`pkg/getter/httpgetter.go`): basic auth, a CA
//! bundle, a client certificate, `--insecure-skip-tls-verify`, and Helm's
//! rule that credentials go only to the repository's own host unless
//! `--pass-credentials` says otherwise.
//!
//! Where Helm would wait forever or follow blindly, rudder stops with an
//! error that names the URL:
//! - a server that stops answering: no byte for [`HttpOptions::read_timeout`]
//!   (60 s by default; `RUDDER_HTTP_TIMEOUT` moves it for the CLI);
//! - a body shorter than its `Content-Length` (a truncated download);
//! - a body over [`HttpOptions::max_bytes`] (the input cap of every file
//!   rudder reads, 64 MiB);
//! - a redirect to another host on a request that carries credentials:
//!   the credentials would not follow it, and the download would fail
//!   later with a less useful 401.
//!
//! Requests are async (reqwest, on rustls with ring, the TLS stack kube-rs
//! uses); [`get_all`] runs many at once from blocking code. The system's
//! root certificates are read on the first HTTPS handshake of the process,
//! not when a client is built: plain-HTTP downloads never read them.
use crate::source::repofile::RepoEntry;
use reqwest::Url;
use std::path::PathBuf;
use std::time::Duration;

/// How to reach a repository or a chart URL.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpOptions {
    /// Basic-auth user (empty: none).
    pub username: String,
    /// Basic-auth password.
    pub password: String,
    /// Send the credentials to every host, not only the repository's
    /// (`--pass-credentials`).
    pub pass_credentials_all: bool,
    /// CA bundle (PEM) that verifies servers, added to the system's roots.
    pub ca_file: Option<PathBuf>,
    /// Client certificate (PEM) for mutual TLS.
    pub cert_file: Option<PathBuf>,
    /// The client certificate's key (PEM).
    pub key_file: Option<PathBuf>,
    /// Accept any server certificate.
    pub insecure_skip_tls_verify: bool,
    /// How long a connection may take to open.
    pub connect_timeout: Duration,
    /// How long a response may go without a byte.
    pub read_timeout: Duration,
    /// The largest body read.
    pub max_bytes: u64,
}

/// The environment variable that sets [`HttpOptions::read_timeout`] for
/// the CLI: seconds, or a Go duration (`90s`, `2m`).
pub const TIMEOUT_ENV: &str = "RUDDER_HTTP_TIMEOUT";

impl Default for HttpOptions {
    fn default() -> Self {
        let read_timeout = std::env::var(TIMEOUT_ENV)
            .ok()
            .and_then(|v| parse_timeout(&v))
            .unwrap_or(Duration::from_secs(60));
        HttpOptions {
            username: String::new(),
            password: String::new(),
            pass_credentials_all: false,
            ca_file: None,
            cert_file: None,
            key_file: None,
            insecure_skip_tls_verify: false,
            connect_timeout: Duration::from_secs(30),
            read_timeout,
            max_bytes: crate::input::MAX_INPUT_BYTES,
        }
    }
}

fn parse_timeout(v: &str) -> Option<Duration> {
    if let Ok(secs) = v.trim().parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    crate::duration::parse(v.trim())
        .ok()
        .filter(|d| !d.is_zero())
}

impl HttpOptions {
    /// The options a `repositories.yaml` entry carries.
    pub fn from_entry(e: &RepoEntry) -> HttpOptions {
        let path = |s: &str| (!s.is_empty()).then(|| PathBuf::from(s));
        HttpOptions {
            username: e.username.clone(),
            password: e.password.clone(),
            pass_credentials_all: e.pass_credentials_all,
            ca_file: path(&e.ca_file),
            cert_file: path(&e.cert_file),
            key_file: path(&e.key_file),
            insecure_skip_tls_verify: e.insecure_skip_tls_verify,
            ..HttpOptions::default()
        }
    }

    fn has_credentials(&self) -> bool {
        !self.username.is_empty() || !self.password.is_empty()
    }
}

/// Why a download failed. Every variant names the URL.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The URL does not parse.
    #[error("invalid URL {url:?}: {message}")]
    Url {
        /// The URL.
        url: String,
        /// The parser's complaint.
        message: String,
    },
    /// The TLS files could not be read or used.
    #[error("{what} {path}: {message}")]
    Tls {
        /// Which file (`CA file`, `client certificate`, ...).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        message: String,
    },
    /// The server answered with an error status (Helm's message).
    #[error("failed to fetch {url} : {status}{hint}")]
    Status {
        /// The URL.
        url: String,
        /// `404 Not Found`, ...
        status: String,
        /// A hint for 401/403 (credentials).
        hint: String,
    },
    /// The connection failed, or TLS did.
    #[error("{url}: {message}")]
    Connect {
        /// The URL.
        url: String,
        /// The cause chain.
        message: String,
    },
    /// No byte came for the read timeout.
    #[error("{url}: the server sent nothing for {}s (timeout; {TIMEOUT_ENV} sets it)", after.as_secs())]
    Timeout {
        /// The URL.
        url: String,
        /// The timeout.
        after: Duration,
    },
    /// The body ended before its `Content-Length`.
    #[error("{url}: the download was cut short: {got} of {want} bytes")]
    Truncated {
        /// The URL.
        url: String,
        /// Bytes received.
        got: u64,
        /// Bytes announced.
        want: u64,
    },
    /// The body is larger than the cap.
    #[error("{url}: the download is larger than {limit} bytes")]
    TooLarge {
        /// The URL.
        url: String,
        /// The cap.
        limit: u64,
    },
    /// A request with credentials was redirected to another host.
    #[error("{from} redirected to another host ({to}); credentials are sent only to the repository's host (--pass-credentials sends them everywhere)")]
    CrossHostRedirect {
        /// The URL asked for.
        from: String,
        /// Where it was sent.
        to: String,
    },
}

/// A configured client for one repository (or one chart URL).
#[derive(Debug, Clone)]
pub struct Getter {
    client: reqwest::Client,
    opts: HttpOptions,
    /// The repository's URL: credentials go to its scheme and host.
    home: Option<Url>,
}

#[derive(Debug)]
struct RedirectError {
    from: String,
    to: String,
}

impl std::fmt::Display for RedirectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "redirect from {} to {}", self.from, self.to)
    }
}

impl std::error::Error for RedirectError {}

fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

fn read_tls(what: &'static str, p: &PathBuf) -> Result<Vec<u8>, HttpError> {
    crate::input::read(p).map_err(|e| HttpError::Tls {
        what,
        path: p.clone(),
        message: e.to_string(),
    })
}

/// The TLS settings of a client with `opts`: the CA bundle and the client
/// certificate are read now (their errors name the files), the system's
/// roots only on the first HTTPS handshake ([`LazyVerifier`]), so that a
/// client that only ever speaks plain HTTP never reads them.
pub(crate) fn tls_config(opts: &HttpOptions) -> Result<rustls::ClientConfig, HttpError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let tls_err = |what: &'static str, path: &PathBuf, message: String| HttpError::Tls {
        what,
        path: path.clone(),
        message,
    };
    let mut extra_roots = Vec::new();
    if let Some(ca) = &opts.ca_file {
        let pem = read_tls("CA file", ca)?;
        for c in CertificateDer::pem_slice_iter(&pem) {
            extra_roots.push(c.map_err(|e| {
                tls_err("CA file", ca, format!("invalid certificate encoding: {e}"))
            })?);
        }
    }
    let identity = match (&opts.cert_file, &opts.key_file) {
        (Some(cert), Some(key)) => {
            let cert_pem = read_tls("client certificate", cert)?;
            let key_pem = read_tls("client key", key)?;
            let chain = CertificateDer::pem_slice_iter(&cert_pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| tls_err("client certificate", cert, e.to_string()))?;
            if chain.is_empty() {
                return Err(tls_err(
                    "client certificate",
                    cert,
                    "no certificate found".into(),
                ));
            }
            let private = PrivateKeyDer::from_pem_slice(&key_pem)
                .map_err(|e| tls_err("client key", key, e.to_string()))?;
            Some((chain, private, cert))
        }
        _ => None,
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| HttpError::Connect {
            url: String::new(),
            message: format!("TLS versions: {e}"),
        })?;
    let verifier: Arc<dyn ServerCertVerifier> = if opts.insecure_skip_tls_verify {
        Arc::new(AcceptAnyCertificate)
    } else {
        Arc::new(LazyVerifier {
            provider,
            extra_roots,
            built: std::sync::OnceLock::new(),
        })
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match identity {
        Some((chain, key, cert)) => builder
            .with_client_auth_cert(chain, key)
            .map_err(|e| tls_err("client certificate", cert, e.to_string()))?,
        None => builder.with_no_client_auth(),
    };
    // reqwest is built without HTTP/2: it offers what it would offer itself.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::sync::Arc;

type BuiltVerifier = Result<Arc<rustls_platform_verifier::Verifier>, rustls::Error>;

/// The verifier over the system's roots alone, built once per process.
static SYSTEM_VERIFIER: std::sync::OnceLock<BuiltVerifier> = std::sync::OnceLock::new();

/// The verifier reqwest would build (the platform verifier: the system's
/// roots plus the CA bundle's), built on the first certificate it is asked
/// to check, once per process for the system's roots alone. Loading the
/// system's roots reads ~150 files; a plain-HTTP download never needs them.
#[derive(Debug)]
struct LazyVerifier {
    provider: Arc<rustls::crypto::CryptoProvider>,
    extra_roots: Vec<CertificateDer<'static>>,
    built: std::sync::OnceLock<BuiltVerifier>,
}

impl LazyVerifier {
    fn verifier(&self) -> BuiltVerifier {
        let build = || {
            rustls_platform_verifier::Verifier::new_with_extra_roots(
                self.extra_roots.iter().cloned(),
                self.provider.clone(),
            )
            .map(Arc::new)
        };
        if self.extra_roots.is_empty() {
            SYSTEM_VERIFIER.get_or_init(build).clone()
        } else {
            self.built.get_or_init(build).clone()
        }
    }
}

impl ServerCertVerifier for LazyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verifier()?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// `--insecure-skip-tls-verify`: any certificate, any signature (what
/// reqwest's `danger_accept_invalid_certs` does).
#[derive(Debug)]
struct AcceptAnyCertificate;

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        use SignatureScheme as S;
        vec![
            S::RSA_PKCS1_SHA1,
            S::ECDSA_SHA1_Legacy,
            S::RSA_PKCS1_SHA256,
            S::ECDSA_NISTP256_SHA256,
            S::RSA_PKCS1_SHA384,
            S::ECDSA_NISTP384_SHA384,
            S::RSA_PKCS1_SHA512,
            S::ECDSA_NISTP521_SHA512,
            S::RSA_PSS_SHA256,
            S::RSA_PSS_SHA384,
            S::RSA_PSS_SHA512,
            S::ED25519,
            S::ED448,
        ]
    }
}

impl Getter {
    /// A client with `opts`, for the repository at `home` (credentials go
    /// to its host; `None`: to the host of each URL asked for).
    pub fn new(opts: &HttpOptions, home: Option<&str>) -> Result<Getter, HttpError> {
        crate::source::ensure_tls_provider();
        let home = match home {
            Some(h) => Some(parse_url(h)?),
            None => None,
        };
        let creds = opts.has_credentials() && !opts.pass_credentials_all;
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= 10 {
                return attempt.error("stopped after 10 redirects");
            }
            let first = attempt.previous().first().cloned();
            match first {
                Some(first) if creds && !same_origin(&first, attempt.url()) => {
                    let err = RedirectError {
                        from: first.to_string(),
                        to: attempt.url().to_string(),
                    };
                    attempt.error(err)
                }
                _ => attempt.follow(),
            }
        });
        let tls = tls_config(opts)?;
        let b = reqwest::Client::builder()
            .user_agent(concat!("Helm/3.17.2 rudder/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(opts.connect_timeout)
            .read_timeout(opts.read_timeout)
            .redirect(policy)
            .tls_backend_preconfigured(tls);
        let client = b.build().map_err(|e| HttpError::Connect {
            url: home.as_ref().map(|u| u.to_string()).unwrap_or_default(),
            message: crate::error_chain(&e),
        })?;
        Ok(Getter {
            client,
            opts: opts.clone(),
            home,
        })
    }

    /// Downloads `url` whole.
    pub async fn get(&self, url: &str) -> Result<Vec<u8>, HttpError> {
        let u = parse_url(url)?;
        let mut req = self.client.get(u.clone());
        let send_creds = self.opts.has_credentials()
            && (self.opts.pass_credentials_all
                || self.home.as_ref().is_none_or(|h| same_origin(h, &u)));
        if send_creds {
            req = req.basic_auth(&self.opts.username, Some(&self.opts.password));
        }
        let mut resp = req.send().await.map_err(|e| self.send_error(url, e))?;
        let status = resp.status();
        if !status.is_success() {
            let hint = match status.as_u16() {
                401 if !send_creds => {
                    " (the repository asks for credentials: --username/--password)"
                }
                401 | 403 => " (check the username and password)",
                _ => "",
            };
            return Err(HttpError::Status {
                url: url.to_string(),
                status: status.to_string(),
                hint: hint.to_string(),
            });
        }
        let want = resp.content_length();
        let limit = self.opts.max_bytes;
        if want.is_some_and(|w| w > limit) {
            return Err(HttpError::TooLarge {
                url: url.to_string(),
                limit,
            });
        }
        let mut body = Vec::with_capacity(want.unwrap_or(0).min(limit) as usize);
        loop {
            let chunk = match resp.chunk().await {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => {
                    if let Some(w) = want.filter(|&w| (body.len() as u64) < w) {
                        if !e.is_timeout() {
                            return Err(HttpError::Truncated {
                                url: url.to_string(),
                                got: body.len() as u64,
                                want: w,
                            });
                        }
                    }
                    return Err(self.send_error(url, e));
                }
            };
            if body.len() as u64 + chunk.len() as u64 > limit {
                return Err(HttpError::TooLarge {
                    url: url.to_string(),
                    limit,
                });
            }
            body.extend_from_slice(&chunk);
        }
        if let Some(w) = want.filter(|&w| body.len() as u64 != w) {
            return Err(HttpError::Truncated {
                url: url.to_string(),
                got: body.len() as u64,
                want: w,
            });
        }
        Ok(body)
    }

    fn send_error(&self, url: &str, e: reqwest::Error) -> HttpError {
        if e.is_timeout() {
            return HttpError::Timeout {
                url: url.to_string(),
                after: self.opts.read_timeout,
            };
        }
        let mut src: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        while let Some(s) = src {
            if let Some(r) = s.downcast_ref::<RedirectError>() {
                return HttpError::CrossHostRedirect {
                    from: r.from.clone(),
                    to: r.to.clone(),
                };
            }
            src = s.source();
        }
        HttpError::Connect {
            url: url.to_string(),
            message: crate::error_chain(&e),
        }
    }
}

/// Getters by their options and home: many downloads from one repository
/// share one client (and its connection pool) rather than each building
/// its own.
#[derive(Debug, Default)]
pub struct GetterCache {
    by_key: std::collections::HashMap<String, Getter>,
}

impl GetterCache {
    /// A getter for `opts` and `home`, built once per distinct pair.
    pub fn get(&mut self, opts: &HttpOptions, home: Option<&str>) -> Result<Getter, HttpError> {
        let key = serde_json::to_string(&(opts, home)).unwrap_or_default();
        if let Some(g) = self.by_key.get(&key) {
            return Ok(g.clone());
        }
        let g = Getter::new(opts, home)?;
        self.by_key.insert(key, g.clone());
        Ok(g)
    }
}

fn parse_url(url: &str) -> Result<Url, HttpError> {
    Url::parse(url).map_err(|e| HttpError::Url {
        url: url.to_string(),
        message: e.to_string(),
    })
}

/// Resolves a chart URL from an index against the repository's URL, as
/// Helm's `ResolveReferenceURL` does: an absolute URL stays; a relative one
/// is joined to the repository URL taken as a directory, keeping the
/// repository URL's query.
pub fn resolve_reference(base: &str, reference: &str) -> Result<String, HttpError> {
    if let Ok(u) = Url::parse(reference) {
        return Ok(u.to_string());
    }
    let mut b = parse_url(base)?;
    let query = b.query().map(str::to_string);
    let path = format!("{}/", b.path().trim_end_matches('/'));
    b.set_path(&path);
    let mut r = b.join(reference).map_err(|e| HttpError::Url {
        url: reference.to_string(),
        message: e.to_string(),
    })?;
    r.set_query(query.as_deref());
    Ok(r.to_string())
}

/// The URL of a repository's index: `index.yaml` under its URL.
pub fn index_url(repo_url: &str) -> Result<String, HttpError> {
    resolve_reference(repo_url, "index.yaml")
}

/// Downloads every `(getter, url)` at once, from blocking code; the
/// answers come back in the same order.
pub fn get_all(jobs: Vec<(Getter, String)>) -> Vec<Result<Vec<u8>, HttpError>> {
    download_all(jobs, |_, body| body, false)
}

/// [`get_all`], with `check` applied to the body of job `i` as soon as it
/// is in (on the runtime's blocking threads, while the other downloads go
/// on), so that checking the first archives overlaps waiting for the
/// last, and checks use every core.
pub fn get_all_checked<T, F>(jobs: Vec<(Getter, String)>, check: F) -> Vec<Result<T, HttpError>>
where
    T: Send + 'static,
    F: Fn(usize, Vec<u8>) -> T + Send + Sync + 'static,
{
    download_all(jobs, check, true)
}

/// [`get_all_checked`], with the check on a blocking thread (`offload`)
/// or, for a check that costs nothing ([`get_all`]'s), where the body
/// came in.
fn download_all<T, F>(
    jobs: Vec<(Getter, String)>,
    check: F,
    offload: bool,
) -> Vec<Result<T, HttpError>>
where
    T: Send + 'static,
    F: Fn(usize, Vec<u8>) -> T + Send + Sync + 'static,
{
    let n = jobs.len();
    if n == 0 {
        // No runtime, no thread, for nothing to download.
        return Vec::new();
    }
    let check = std::sync::Arc::new(check);
    let run = async move {
        let mut set = tokio::task::JoinSet::new();
        for (i, (g, url)) in jobs.into_iter().enumerate() {
            let check = check.clone();
            set.spawn(async move {
                let body = match g.get(&url).await {
                    Ok(body) => body,
                    Err(e) => return (i, Err(e)),
                };
                if !offload {
                    return (i, Ok(check(i, body)));
                }
                // The check (a chart's decompression, its digest) is CPU
                // work: off the runtime's one thread, so that it runs
                // while the other downloads go on, and checks run side
                // by side on every core.
                let checked = tokio::task::spawn_blocking(move || check(i, body)).await;
                (
                    i,
                    checked.map_err(|e| HttpError::Connect {
                        url,
                        message: format!("checking the download failed: {e}"),
                    }),
                )
            });
        }
        let mut out: Vec<Option<Result<T, HttpError>>> = (0..n).map(|_| None).collect();
        while let Some(done) = set.join_next().await {
            if let Ok((i, r)) = done {
                out[i] = Some(r);
            }
        }
        out
    };
    match crate::source::block_on(run) {
        Ok(out) => out
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| {
                    Err(HttpError::Connect {
                        url: String::new(),
                        message: "a download task failed".into(),
                    })
                })
            })
            .collect(),
        Err(e) => (0..n)
            .map(|_| {
                Err(HttpError::Connect {
                    url: String::new(),
                    message: format!("starting the download runtime: {e}"),
                })
            })
            .collect(),
    }
}

/// Downloads one URL from blocking code.
pub fn get_one(getter: &Getter, url: &str) -> Result<Vec<u8>, HttpError> {
    let mut r = get_all(vec![(getter.clone(), url.to_string())]);
    r.pop().unwrap_or_else(|| {
        Err(HttpError::Connect {
            url: url.to_string(),
            message: "a download task failed".into(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_resolve_as_helm_resolves_them() {
        let r = |b, u| resolve_reference(b, u).unwrap();
        assert_eq!(r("http://h/charts", "a-1.tgz"), "http://h/charts/a-1.tgz");
        assert_eq!(r("http://h/charts/", "a-1.tgz"), "http://h/charts/a-1.tgz");
        assert_eq!(
            r("http://h/charts?key=v", "a-1.tgz"),
            "http://h/charts/a-1.tgz?key=v"
        );
        assert_eq!(r("http://h/charts", "https://o/x.tgz"), "https://o/x.tgz");
        assert_eq!(r("http://h", "sub/a.tgz"), "http://h/sub/a.tgz");
        assert_eq!(
            index_url("http://h:8080/r").unwrap(),
            "http://h:8080/r/index.yaml"
        );
    }

    #[test]
    fn timeouts_read_seconds_or_go_durations() {
        assert_eq!(parse_timeout("5"), Some(Duration::from_secs(5)));
        assert_eq!(parse_timeout("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_timeout("x"), None);
    }
}
