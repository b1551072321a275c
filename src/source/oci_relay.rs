//! Client certificates for OCI registries (`--cert-file`/`--key-file`).
//!
//! oci-client builds its HTTP client itself and has no setting for a client
//! identity, and the OCI distribution protocol is not to be re-implemented
//! around it. What it has is an HTTPS proxy setting and a trust list. So,
//! for a registry that wants a client certificate, rudder gives the client a
//! relay on loopback as its proxy:
//!
//! - the client sends `CONNECT host:port` to the relay;
//! - the relay opens TLS to `host:port` itself, with rudder's usual trust
//!   (`--ca-file`, the system's roots, `--insecure-skip-tls-verify`) and the
//!   client certificate, exactly as for a chart repository;
//! - it answers the client with a certificate for `host` signed by a CA
//!   made for this relay alone, in memory, which is the only CA the client
//!   trusts;
//! - then it copies bytes both ways.
//!
//! Every HTTPS request of the client goes through it: the registry, its
//! token service and any host a blob redirects to, each with the client
//! certificate. The relay listens on 127.0.0.1 only, lives as long as the
//! client, and a failure to reach or shake hands with a host is kept and
//! reported in place of the client's "unsuccessful tunnel".
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The longest `CONNECT` request head the relay reads.
const MAX_HEAD: usize = 16 * 1024;

/// Why a relay could not be set up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RelayError {
    /// The client certificate, its key or the CA bundle could not be used.
    #[error(transparent)]
    Tls(#[from] super::http::HttpError),
    /// The relay's own certificates could not be made.
    #[error("making the relay's certificates: {0}")]
    Certificates(String),
    /// The loopback listener or the relay's thread could not start.
    #[error("starting the relay: {0}")]
    Start(#[source] std::io::Error),
}

/// A relay running on a thread of its own; dropping it stops it.
pub(crate) struct Relay {
    /// `http://127.0.0.1:PORT`, the client's HTTPS proxy.
    pub proxy_url: String,
    /// The relay CA's certificate (PEM), the client's only trusted root.
    pub ca_pem: Vec<u8>,
    errors: Arc<Mutex<Option<String>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Relay {
    /// Starts a relay that reaches registries with `tls` (the client
    /// certificate and rudder's trust), connecting within `connect_timeout`.
    pub(crate) fn start(
        tls: rustls::ClientConfig,
        connect_timeout: Duration,
    ) -> Result<Relay, RelayError> {
        let ca = RelayCa::new()?;
        let ca_pem = ca.cert_pem.clone().into_bytes();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(RelayError::Start)?;
        listener.set_nonblocking(true).map_err(RelayError::Start)?;
        let port = listener.local_addr().map_err(RelayError::Start)?.port();
        let errors = Arc::new(Mutex::new(None));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(RelayError::Start)?;
        let shared = Arc::new(Shared {
            upstream: tokio_rustls::TlsConnector::from(Arc::new(tls)),
            ca,
            errors: errors.clone(),
            connect_timeout,
        });
        let thread = std::thread::Builder::new()
            .name("rudder-oci-relay".into())
            .spawn(move || {
                rt.block_on(async move {
                    tokio::select! {
                        _ = stopped => {}
                        _ = accept_all(listener, shared) => {}
                    }
                });
            })
            .map_err(RelayError::Start)?;
        Ok(Relay {
            proxy_url: format!("http://127.0.0.1:{port}"),
            ca_pem,
            errors,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The last failure to reach a host through the relay, if any.
    pub(crate) fn last_error(&self) -> Option<String> {
        self.errors.lock().ok().and_then(|e| e.clone())
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves every connection to `listener`, each on a task of its own.
async fn accept_all(listener: std::net::TcpListener, shared: Arc<Shared>) {
    let Ok(listener) = TcpListener::from_std(listener) else {
        return;
    };
    loop {
        let Ok((conn, _)) = listener.accept().await else {
            // Out of descriptors, say: wait, do not spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            if let Err(e) = shared.serve(conn).await {
                shared.note(e);
            }
        });
    }
}

/// What every connection of one relay shares.
struct Shared {
    upstream: tokio_rustls::TlsConnector,
    ca: RelayCa,
    errors: Arc<Mutex<Option<String>>>,
    connect_timeout: Duration,
}

impl Shared {
    fn note(&self, e: String) {
        if let Ok(mut last) = self.errors.lock() {
            *last = Some(e);
        }
    }

    /// One proxied connection: `CONNECT`, TLS to the host, TLS to the
    /// client, then bytes both ways until either side closes.
    async fn serve(&self, mut client: TcpStream) -> Result<(), String> {
        let authority = read_connect(&mut client).await?;
        let (host, port) = split_authority(&authority)
            .ok_or_else(|| format!("the relay got a CONNECT to {authority:?}"))?;
        let upstream = match self.connect(&host, port).await {
            Ok(s) => s,
            Err(e) => {
                // Kept before the client hears of the failure, so that the
                // error it reports can name the cause.
                self.note(e);
                let _ = client
                    .write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                    .await;
                return Ok(());
            }
        };
        client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await
            .map_err(|e| format!("relay: {e}"))?;
        let acceptor = tokio_rustls::TlsAcceptor::from(self.ca.server_config(&host)?);
        let mut inner = acceptor
            .accept(client)
            .await
            .map_err(|e| format!("relay: TLS with the registry client: {e}"))?;
        let mut upstream = upstream;
        // A reset by either side ends the connection like a close does.
        let _ = tokio::io::copy_bidirectional(&mut inner, &mut upstream).await;
        Ok(())
    }

    async fn connect(
        &self,
        host: &str,
        port: u16,
    ) -> Result<tokio_rustls::client::TlsStream<TcpStream>, String> {
        let addr = format!("{host}:{port}");
        let tcp = tokio::time::timeout(self.connect_timeout, TcpStream::connect(&addr))
            .await
            .map_err(|_| {
                format!(
                    "connecting to {addr}: no answer within {}s",
                    self.connect_timeout.as_secs()
                )
            })?
            .map_err(|e| format!("connecting to {addr}: {e}"))?;
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| format!("connecting to {addr}: {e}"))?;
        tokio::time::timeout(self.connect_timeout, self.upstream.connect(name, tcp))
            .await
            .map_err(|_| format!("TLS handshake with {addr}: no answer"))?
            .map_err(|e| format!("TLS handshake with {addr}: {}", crate::error_chain(&e)))
    }
}

/// Reads the client's `CONNECT host:port HTTP/1.1` head; the authority.
async fn read_connect(client: &mut TcpStream) -> Result<String, String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_HEAD {
            return Err("relay: the CONNECT request is too long".into());
        }
        let n = client
            .read(&mut buf)
            .await
            .map_err(|e| format!("relay: {e}"))?;
        if n == 0 {
            return Err("relay: the client closed before its CONNECT".into());
        }
        head.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&head);
    let line = text.lines().next().unwrap_or_default();
    let mut parts = line.split_whitespace();
    match (parts.next(), parts.next()) {
        (Some("CONNECT"), Some(authority)) => Ok(authority.to_string()),
        _ => Err(format!("relay: not a CONNECT request: {line:?}")),
    }
}

/// `host:port` or `[v6]:port` into host (without brackets) and port.
fn split_authority(authority: &str) -> Option<(String, u16)> {
    let (host, port) = authority.rsplit_once(':')?;
    let port = port.parse().ok()?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    (!host.is_empty()).then(|| (host.to_string(), port))
}

/// The relay's CA, and the server configurations it signed, per host.
struct RelayCa {
    cert_pem: String,
    params: rcgen::CertificateParams,
    key: rcgen::KeyPair,
    issued: Mutex<HashMap<String, Arc<rustls::ServerConfig>>>,
}

impl RelayCa {
    fn new() -> Result<RelayCa, RelayError> {
        let err = |e: rcgen::Error| RelayError::Certificates(e.to_string());
        let key = rcgen::KeyPair::generate().map_err(err)?;
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(err)?;
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "rudder OCI relay");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).map_err(err)?;
        Ok(RelayCa {
            cert_pem: cert.pem(),
            params,
            key,
            issued: Mutex::new(HashMap::new()),
        })
    }

    /// A TLS server configuration presenting a certificate for `host`.
    fn server_config(&self, host: &str) -> Result<Arc<rustls::ServerConfig>, String> {
        if let Some(c) = self.issued.lock().ok().and_then(|m| m.get(host).cloned()) {
            return Ok(c);
        }
        let err = |e: rcgen::Error| format!("relay: a certificate for {host}: {e}");
        let key = rcgen::KeyPair::generate().map_err(err)?;
        let params = rcgen::CertificateParams::new(vec![host.to_string()]).map_err(err)?;
        let issuer = rcgen::Issuer::from_params(&self.params, &self.key);
        let cert = params.signed_by(&key, &issuer).map_err(err)?;
        let provider = rustls::crypto::CryptoProvider::get_default()
            .cloned()
            .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
        let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("relay: {e}"))?
            .with_no_client_auth()
            .with_single_cert(vec![CertificateDer::from(cert.der().to_vec())], key_der)
            .map_err(|e| format!("relay: {e}"))?;
        // The bytes are copied through unread: both sides speak what the
        // registry side agreed, HTTP/1.1.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        if let Ok(mut m) = self.issued.lock() {
            m.insert(host.to_string(), config.clone());
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_split_into_host_and_port() {
        assert_eq!(
            split_authority("r.example:5000"),
            Some(("r.example".into(), 5000))
        );
        assert_eq!(split_authority("[::1]:443"), Some(("::1".into(), 443)));
        assert_eq!(split_authority("r.example"), None);
        assert_eq!(split_authority(":443"), None);
        assert_eq!(split_authority("r.example:port"), None);
    }
}
