//! Charts in OCI registries (`oci://HOST/PATH/NAME`), pulled and pushed as
//! Helm does (`pkg/registry` of Helm v3.17.2 and v4.1.4), over the OCI
//! distribution protocol of the [`oci_client`] crate.
//!
//! - [`pull`]: resolves the tag as Helm does (an exact semver version is the
//!   tag, with `+` written `_`; anything else is a constraint matched
//!   against the repository's semver tags, newest first), fetches the
//!   manifest, checks every blob against the digest the manifest gives
//!   (a mismatch names both) and returns the chart archive, and the
//!   provenance file when the manifest has one.
//! - [`push`]: uploads a `.tgz` exactly as `helm push` does: the config blob
//!   is the chart's `Chart.yaml` metadata as Go's `json.Marshal` prints it
//!   (`application/vnd.cncf.helm.config.v1+json`), the archive is the one
//!   layer (`application/vnd.cncf.helm.chart.content.v1.tar+gzip`, with the
//!   `.prov` beside it as a second layer), layers sorted by digest, and the
//!   manifest carries Helm's `org.opencontainers.image.*` annotations. The
//!   same archive with the same creation time gives helm's manifest digest.
//! - [`login`] / [`logout`]: check a user and password against the
//!   registry and record them in Helm's `config.json`
//!   ([`super::registry_config`]), where helm finds them too.
//!
//! Credentials come from [`OciOptions::username`]/[`OciOptions::password`],
//! else from the registry config (Helm's `HELM_REGISTRY_CONFIG`), else the
//! registry is used anonymously. The token flow (anonymous, basic, bearer)
//! is oci-client's. Every operation has a deadline
//! ([`OciOptions::timeout`]): a registry that accepts the connection and
//! never answers fails with [`OciError::Timeout`].
use super::registry_config::{Credential, RegistryConfig, RegistryConfigError};
use crate::template::funcs::semver::{parse_version, Constraints, SemverError};
use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::errors::{DigestError, OciDistributionError, OciErrorCode};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};
use serde::{Deserialize, Serialize};
use sha2::Digest as _;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Helm's media type of the config blob: the chart's metadata as JSON.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.cncf.helm.config.v1+json";
/// Helm's media type of the chart archive layer.
pub const CHART_LAYER_MEDIA_TYPE: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
/// Helm's media type of the provenance layer.
pub const PROV_LAYER_MEDIA_TYPE: &str = "application/vnd.cncf.helm.chart.provenance.v1.prov";
/// The chart layer's media type before Helm 3.8 (still read, as Helm does).
pub const LEGACY_CHART_LAYER_MEDIA_TYPE: &str = "application/tar+gzip";
/// The OCI image manifest's media type.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";

/// The largest blob rudder downloads: Helm's limit on a decompressed
/// chart, which a compressed archive cannot usefully exceed.
pub const MAX_BLOB_SIZE: u64 = crate::chart::loader::MAX_DECOMPRESSED_CHART_SIZE;

/// Helm's note for a tag with an underscore (`helm push`, `helm pull`).
pub const UNDERSCORE_MESSAGE: &str = "
OCI artifact references (e.g. tags) do not support the plus sign (+). To support
storing semantic versions, Helm adopts the convention of changing plus (+) to
an underscore (_) in chart version tags when pushing to a registry and back to
a plus (+) when pulling from a registry.";

/// How to reach a registry: transport, trust, credentials and deadline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OciOptions {
    /// `--plain-http`: HTTP instead of HTTPS.
    pub plain_http: bool,
    /// `--insecure-skip-tls-verify`: accept any server certificate.
    pub insecure_skip_tls_verify: bool,
    /// `--ca-file`: PEM certificates trusted besides the system's.
    pub ca_file: Option<PathBuf>,
    /// `--cert-file`: a client certificate (PEM).
    pub cert_file: Option<PathBuf>,
    /// `--key-file`: the client certificate's key (PEM).
    pub key_file: Option<PathBuf>,
    /// `--username`: overrides the stored login.
    pub username: Option<String>,
    /// `--password`: overrides the stored login.
    pub password: Option<String>,
    /// The registry config (`config.json`); `None` is Helm's location from
    /// the environment ([`super::HelmPaths`]).
    pub registry_config: Option<PathBuf>,
    /// The deadline of one whole operation (pull, push, login).
    pub timeout: Duration,
}

/// The environment variable that sets [`OciOptions::timeout`]'s default:
/// seconds (fractions allowed).
pub const TIMEOUT_ENV: &str = "RUDDER_OCI_TIMEOUT";

impl Default for OciOptions {
    fn default() -> Self {
        let timeout = std::env::var(TIMEOUT_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(Duration::from_secs_f64)
            .unwrap_or(Duration::from_secs(300));
        OciOptions {
            plain_http: false,
            insecure_skip_tls_verify: false,
            ca_file: None,
            cert_file: None,
            key_file: None,
            username: None,
            password: None,
            registry_config: None,
            timeout,
        }
    }
}

impl OciOptions {
    fn registry_config_path(&self) -> PathBuf {
        self.registry_config
            .clone()
            .unwrap_or_else(|| super::HelmPaths::from_env().registry_config)
    }
}

/// A chart pulled from a registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OciChart {
    /// What was pulled, as Helm prints it: `host/path/name:tag`.
    pub reference: String,
    /// The chart's name (its config blob's `name`).
    pub name: String,
    /// The chart's version (its config blob's `version`).
    pub version: String,
    /// The chart archive (`.tgz`), exactly as stored.
    pub archive: Vec<u8>,
    /// The provenance file, when the manifest has a provenance layer.
    pub prov: Option<Vec<u8>>,
    /// The chart layer's digest (`sha256:...`).
    pub digest: String,
    /// The manifest's digest (`sha256:...`), which `helm pull` prints.
    pub manifest_digest: String,
    /// Whether the archive came from the caller's cache ([`pull_with_cache`])
    /// rather than from the registry.
    pub cached: bool,
}

/// A content-addressed cache [`pull_with_cache`] asks before downloading
/// the chart layer: the bytes stored under a digest (`sha256:<hex>`), if
/// any. Bytes that do not have that digest are ignored.
pub type BlobCache = std::sync::Arc<dyn Fn(&str) -> Option<Vec<u8>> + Send + Sync>;

/// What [`push`] uploaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushResult {
    /// `host/path/name:tag`, as `helm push` prints it after `Pushed:`.
    pub reference: String,
    /// The manifest's digest, as `helm push` prints it after `Digest:`.
    pub manifest_digest: String,
    /// The config blob's digest.
    pub config_digest: String,
    /// The chart layer's digest.
    pub chart_digest: String,
    /// The provenance layer's digest, when one was pushed.
    pub prov_digest: Option<String>,
}

/// Why a registry operation failed. Each names the reference or registry.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    /// The reference does not parse.
    #[error("invalid OCI reference {reference:?}: {reason}")]
    BadReference {
        /// The reference as given.
        reference: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `--version` and the reference's tag disagree (Helm's message).
    #[error("chart reference and version mismatch: {version} is not {tag}")]
    VersionMismatch {
        /// The version asked for.
        version: String,
        /// The tag in the reference.
        tag: String,
    },
    /// The repository has no semver tag (Helm's message).
    #[error("Unable to locate any tags in provided repository: {reference}")]
    NoTags {
        /// The repository.
        reference: String,
    },
    /// The version is neither a version nor a constraint (Helm's message,
    /// `improper constraint: latest`).
    #[error("{source} (resolving {reference})")]
    Constraint {
        /// The repository.
        reference: String,
        /// Masterminds' error.
        #[source]
        source: SemverError,
    },
    /// No tag matches the constraint (Helm's message).
    #[error(
        "Could not locate a version matching provided version string {version} (in {reference})"
    )]
    NoMatch {
        /// The repository.
        reference: String,
        /// The constraint.
        version: String,
    },
    /// The registry refused the credentials (HTTP 401).
    #[error("{}", unauthorized_text(.host, .reference, .who))]
    Unauthorized {
        /// The registry.
        host: String,
        /// The reference, or the registry for a login.
        reference: String,
        /// `user "NAME"` or `anonymous access`.
        who: String,
    },
    /// The registry did not answer in time.
    #[error("registry {host} did not answer within {}s ({action} {reference})", .after.as_secs_f64())]
    Timeout {
        /// The registry.
        host: String,
        /// The reference.
        reference: String,
        /// `pulling`, `pushing`, `logging in to`.
        action: &'static str,
        /// The deadline.
        after: Duration,
    },
    /// The manifest or tag does not exist.
    #[error("{reference}: not found in registry {host}")]
    NotFound {
        /// The registry.
        host: String,
        /// The reference.
        reference: String,
    },
    /// A blob's bytes do not have the digest the manifest gives.
    #[error("digest mismatch for the {what} of {reference}: the manifest says {expected}, the registry sent {actual}")]
    DigestMismatch {
        /// The reference.
        reference: String,
        /// `chart layer`, `config blob`, `provenance layer`, `manifest`.
        what: &'static str,
        /// The digest the manifest (or reference) gives.
        expected: String,
        /// The digest of what arrived.
        actual: String,
    },
    /// A blob larger than its descriptor says or than [`MAX_BLOB_SIZE`].
    #[error("the {what} of {reference} is larger than {limit} bytes")]
    TooLarge {
        /// The reference.
        reference: String,
        /// Which blob.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// The manifest is not a Helm chart's (Helm's messages).
    #[error("{reference}: {reason}")]
    Manifest {
        /// The reference.
        reference: String,
        /// What is wrong.
        reason: String,
    },
    /// The chart archive to push does not load.
    #[error("{path}: {source}")]
    Chart {
        /// The archive (or `<archive>`).
        path: String,
        /// The loader's error.
        #[source]
        source: crate::chart::loader::LoadError,
    },
    /// A TLS file cannot be read or used.
    #[error("can't create TLS config for client: {file}: {reason}")]
    Tls {
        /// The file.
        file: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// `registry logout` of a host with no login (Helm 3's message).
    #[error("not logged in")]
    NotLoggedIn {
        /// The registry.
        host: String,
    },
    /// The credentials file or a credential helper failed.
    #[error(transparent)]
    Credentials(#[from] RegistryConfigError),
    /// Any other failure of the registry or the connection.
    #[error("{action} {reference} (registry {host}): {cause}")]
    Registry {
        /// The registry.
        host: String,
        /// The reference.
        reference: String,
        /// `pulling`, `pushing`, `logging in to`.
        action: &'static str,
        /// The cause, as oci-client or the server put it.
        cause: String,
    },
    /// The download thread could not run.
    #[error("running the registry client: {0}")]
    Runtime(#[source] std::io::Error),
}

fn unauthorized_text(host: &str, reference: &str, who: &str) -> String {
    if reference == host {
        format!(
            "login to registry {host} failed: the registry refused {who} (401 Unauthorized): wrong user name or password"
        )
    } else {
        format!(
            "registry {host} refused {who} for {reference} (401 Unauthorized): wrong user name or password? (log in with `rudder registry login {host}`)"
        )
    }
}

/// An `oci://` reference taken apart as Helm's `newReference` does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OciRef {
    /// `host[:port]`.
    pub registry: String,
    /// The repository path, chart name last.
    pub repository: String,
    /// The tag, with `+` already written `_`.
    pub tag: Option<String>,
    /// `sha256:...` after `@`.
    pub digest: Option<String>,
}

impl OciRef {
    /// Parses `oci://host/path/name[:tag][@digest]` (the scheme is
    /// optional, as in Helm).
    pub fn parse(raw: &str) -> Result<OciRef, OciError> {
        let bad = |reason: &str| OciError::BadReference {
            reference: raw.to_string(),
            reason: reason.to_string(),
        };
        let mut s = raw.strip_prefix("oci://").unwrap_or(raw).to_string();
        let mut digest = None;
        if let Some(i) = s.rfind('@') {
            digest = Some(s[i + 1..].to_string());
            s.truncate(i);
        }
        let mut tag = None;
        if let Some(i) = s.rfind(':') {
            let t = &s[i + 1..];
            if !t.contains('/') {
                if !t.is_empty() {
                    tag = Some(t.replace('+', "_"));
                }
                s.truncate(i);
            }
        }
        let Some((registry, repository)) = s.split_once('/') else {
            return Err(bad("it names no repository (want oci://HOST/PATH/NAME)"));
        };
        if registry.is_empty() || repository.is_empty() || repository.ends_with('/') {
            return Err(bad("want oci://HOST/PATH/NAME"));
        }
        let name_ok = repository.split('/').all(|c| {
            !c.is_empty()
                && c.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
                })
        });
        if !name_ok {
            return Err(bad(
                "a repository path is lowercase letters, digits and . _ - separated by /",
            ));
        }
        if let Some(t) = &tag {
            let ok = t.len() <= 128
                && t.bytes().enumerate().all(|(i, b)| {
                    b.is_ascii_alphanumeric() || b == b'_' || (i > 0 && matches!(b, b'.' | b'-'))
                });
            if !ok {
                return Err(bad(&format!("invalid tag {t:?}")));
            }
        }
        if let Some(d) = &digest {
            let ok = d
                .strip_prefix("sha256:")
                .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
            if !ok {
                return Err(bad(&format!("invalid digest {d:?}")));
            }
        }
        Ok(OciRef {
            registry: registry.to_string(),
            repository: repository.to_string(),
            tag,
            digest,
        })
    }

    /// The chart name: the repository's last path element.
    pub fn name(&self) -> &str {
        self.repository
            .rsplit('/')
            .next()
            .unwrap_or(&self.repository)
    }

    /// `host/path/name[:tag][@digest]`, as Helm prints references.
    pub fn display(&self) -> String {
        let mut s = format!("{}/{}", self.registry, self.repository);
        if let Some(t) = &self.tag {
            s.push(':');
            s.push_str(t);
        }
        if let Some(d) = &self.digest {
            s.push('@');
            s.push_str(d);
        }
        s
    }

    fn client_ref(&self) -> Reference {
        match (&self.tag, &self.digest) {
            (_, Some(d)) => {
                Reference::with_digest(self.registry.clone(), self.repository.clone(), d.clone())
            }
            (Some(t), None) => {
                Reference::with_tag(self.registry.clone(), self.repository.clone(), t.clone())
            }
            (None, None) => Reference::with_tag(
                self.registry.clone(),
                self.repository.clone(),
                "latest".into(),
            ),
        }
    }
}

/// One blob in a manifest (Go's `ocispec.Descriptor`, in its field order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Descriptor {
    /// The media type.
    #[serde(rename = "mediaType")]
    pub media_type: String,
    /// `sha256:...`.
    pub digest: String,
    /// The size in bytes.
    pub size: i64,
    /// Annotations (none in Helm's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// An OCI image manifest (Go's `ocispec.Manifest`, in its field order; the
/// `mediaType` Helm leaves out stays out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always 2.
    #[serde(rename = "schemaVersion")]
    pub schema_version: i64,
    /// The manifest's media type, when written in it.
    #[serde(rename = "mediaType", default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The config blob.
    pub config: Descriptor,
    /// The layers.
    #[serde(default)]
    pub layers: Vec<Descriptor>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// `sha256:<hex>` of `data`.
pub fn sha256_digest(data: &[u8]) -> String {
    format!("sha256:{:x}", sha2::Sha256::digest(data))
}

/// Masterminds' `StrictNewVersion`: `X.Y.Z[-pre][+build]`, no `v`, no
/// missing parts.
fn strict_version(v: &str) -> Option<crate::template::funcs::semver::Version> {
    let core = v.split(['-', '+']).next().unwrap_or(v);
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() != 3 || parts.iter().any(|p| p.is_empty()) || v.starts_with('v') {
        return None;
    }
    parse_version(v).ok()
}

/// The tag Helm's `GetTagMatchingVersionOrConstraint` picks from `tags`
/// (newest first) for `version`.
fn match_tag(tags: &[String], version: &str, reference: &str) -> Result<String, OciError> {
    let constraint = if version.is_empty() {
        Constraints::parse("*")
    } else {
        if let Some(t) = tags.iter().find(|t| t.as_str() == version) {
            return Ok(t.clone());
        }
        Constraints::parse(version)
    }
    .map_err(|source| OciError::Constraint {
        reference: reference.to_string(),
        source,
    })?;
    for t in tags {
        if let Ok(v) = parse_version(t) {
            if constraint.check(&v) {
                return Ok(t.clone());
            }
        }
    }
    Err(OciError::NoMatch {
        reference: reference.to_string(),
        version: version.to_string(),
    })
}

/// The chart versions a registry repository holds, as Helm's registry
/// client lists them (`Client.Tags`): its tags that are strict semver
/// versions once `_` is read as `+`, newest first. `reference` is
/// `oci://HOST/PATH/CHART` without a tag.
pub fn tags(reference: &str, opts: &OciOptions) -> Result<Vec<String>, OciError> {
    let r = OciRef::parse(reference)?;
    let host = r.registry.clone();
    let (auth, who) = auth_for(&host, opts)?;
    let client = client_for(&host, opts, opts.plain_http)?;
    let shown = reference.to_string();
    let read_timeout = read_timeout(opts);
    let task_host = host.clone();
    run(opts, &host, reference, "listing the tags of", async move {
        let host = task_host;
        let ctx = Ctx {
            host: &host,
            reference: &shown,
            action: "listing the tags of",
            who: &who,
            read_timeout,
            relay: client.relay.as_ref(),
        };
        client.store_auth_if_needed(&host, &auth).await;
        let listing = Reference::with_tag(host.clone(), r.repository.clone(), "latest".into());
        let tags = client
            .list_tags(&listing, &auth, None, None)
            .await
            .map_err(|e| ctx.err(e))?;
        Ok(semver_tags(&tags.tags))
    })
}

/// Helm's `Client.Tags`: the repository's tags that are strict semver
/// versions once `_` is read as `+`, newest first, as versions.
fn semver_tags(tags: &[String]) -> Vec<String> {
    let mut vs: Vec<_> = tags
        .iter()
        .filter_map(|t| strict_version(&t.replace('_', "+")))
        .collect();
    vs.sort_by(|a, b| b.compare(a));
    vs.iter().map(|v| v.to_string()).collect()
}

/// Reads a PEM bundle into its certificates.
fn pem_certificates(path: &std::path::Path) -> Result<Vec<Certificate>, OciError> {
    let text = std::fs::read_to_string(path).map_err(|e| OciError::Tls {
        file: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(b) = rest.find(BEGIN) {
        let Some(e) = rest[b..].find(END) else { break };
        let end = b + e + END.len();
        let mut pem = rest.as_bytes()[b..end].to_vec();
        pem.push(b'\n');
        out.push(Certificate {
            encoding: CertificateEncoding::Pem,
            data: pem,
        });
        rest = &rest[end..];
    }
    if out.is_empty() {
        return Err(OciError::Tls {
            file: path.to_path_buf(),
            reason: "no PEM certificate in it".into(),
        });
    }
    Ok(out)
}

/// The client's timeout for one read (and for connecting): the
/// operation's deadline, at most a minute.
fn read_timeout(opts: &OciOptions) -> Duration {
    opts.timeout.min(Duration::from_secs(60))
}

/// An oci-client client, and the relay that presents the client
/// certificate for it when there is one ([`super::oci_relay`]): the relay
/// stops when the client is dropped.
struct OciClient {
    client: Client,
    relay: Option<super::oci_relay::Relay>,
}

impl std::ops::Deref for OciClient {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

/// A client for `host` with `opts`' transport and trust. With both
/// `--cert-file` and `--key-file` (and not `--plain-http`), as Helm uses
/// them, HTTPS goes through a relay that presents the certificate.
fn client_for(host: &str, opts: &OciOptions, plain_http: bool) -> Result<OciClient, OciError> {
    super::ensure_tls_provider();
    let read = read_timeout(opts);
    let connect = read.min(Duration::from_secs(30));
    let relay = if plain_http {
        None
    } else {
        relay_for(host, opts, connect)?
    };
    let mut config = ClientConfig {
        protocol: if plain_http {
            ClientProtocol::Http
        } else {
            ClientProtocol::Https
        },
        // Charts are one small manifest, not a multi-platform image.
        platform_resolver: None,
        read_timeout: Some(read),
        connect_timeout: Some(connect),
        user_agent: concat!("rudder/", env!("CARGO_PKG_VERSION")),
        ..ClientConfig::default()
    };
    match &relay {
        // The relay checks the registry; the client trusts only the relay.
        Some(r) => {
            config.https_proxy = Some(r.proxy_url.clone());
            config.tls_certs_only = vec![Certificate {
                encoding: CertificateEncoding::Pem,
                data: r.ca_pem.clone(),
            }];
        }
        None => {
            config.accept_invalid_certificates = opts.insecure_skip_tls_verify;
            config.extra_root_certificates = match &opts.ca_file {
                Some(p) => pem_certificates(p)?,
                None => Vec::new(),
            };
        }
    }
    let client = Client::try_from(config).map_err(|e| OciError::Registry {
        host: host.to_string(),
        reference: host.to_string(),
        action: "connecting to",
        cause: e.to_string(),
    })?;
    Ok(OciClient { client, relay })
}

/// The relay that presents `opts`' client certificate, when it has one
/// (both `--cert-file` and `--key-file`, as Helm uses them).
fn relay_for(
    host: &str,
    opts: &OciOptions,
    connect: Duration,
) -> Result<Option<super::oci_relay::Relay>, OciError> {
    use super::http::{tls_config, HttpError, HttpOptions};
    use super::oci_relay::{Relay, RelayError};
    let (Some(cert), Some(key)) = (&opts.cert_file, &opts.key_file) else {
        return Ok(None);
    };
    let http = HttpOptions {
        ca_file: opts.ca_file.clone(),
        cert_file: Some(cert.clone()),
        key_file: Some(key.clone()),
        insecure_skip_tls_verify: opts.insecure_skip_tls_verify,
        ..HttpOptions::default()
    };
    let relay = tls_config(&http)
        .map_err(RelayError::from)
        .and_then(|tls| Relay::start(tls, connect));
    relay.map(Some).map_err(|e| match e {
        RelayError::Tls(HttpError::Tls {
            what,
            path,
            message,
        }) => OciError::Tls {
            file: path,
            reason: format!("{what}: {message}"),
        },
        other => OciError::Registry {
            host: host.to_string(),
            reference: host.to_string(),
            action: "connecting to",
            cause: other.to_string(),
        },
    })
}

/// The credential to use for `host`: the options' user and password, else
/// the registry config's login, else anonymous.
fn auth_for(host: &str, opts: &OciOptions) -> Result<(RegistryAuth, String), OciError> {
    if let (Some(u), Some(p)) = (&opts.username, &opts.password) {
        if !u.is_empty() || !p.is_empty() {
            return Ok((
                RegistryAuth::Basic(u.clone(), p.clone()),
                format!("user {u:?}"),
            ));
        }
    }
    let config = RegistryConfig::load(&opts.registry_config_path())?;
    Ok(match config.credential(host)? {
        Some(Credential { username, password }) if username.is_empty() => (
            RegistryAuth::Bearer(password),
            "the stored identity token".to_string(),
        ),
        Some(Credential { username, password }) => {
            let who = format!("user {username:?}");
            (RegistryAuth::Basic(username, password), who)
        }
        None => (RegistryAuth::Anonymous, "anonymous access".to_string()),
    })
}

/// What an oci-client error means, for `reference` on `host`.
struct Ctx<'a> {
    host: &'a str,
    reference: &'a str,
    action: &'static str,
    who: &'a str,
    /// The read timeout of the client.
    read_timeout: Duration,
    /// The client's relay, when it presents a client certificate.
    relay: Option<&'a super::oci_relay::Relay>,
}

impl Ctx<'_> {
    fn err(&self, e: OciDistributionError) -> OciError {
        match e {
            OciDistributionError::UnauthorizedError { .. }
            | OciDistributionError::AuthenticationFailure(_) => self.unauthorized(),
            OciDistributionError::ServerError { code: 401, .. } => self.unauthorized(),
            OciDistributionError::ImageManifestNotFoundError(_) => self.not_found(),
            OciDistributionError::ServerError { code: 404, .. } => self.not_found(),
            OciDistributionError::RegistryError { envelope, .. }
                if envelope.errors.iter().any(|e| {
                    matches!(
                        e.code,
                        OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown
                    )
                }) =>
            {
                self.not_found()
            }
            OciDistributionError::RegistryError { envelope, .. }
                if envelope
                    .errors
                    .iter()
                    .any(|e| e.code == OciErrorCode::Unauthorized) =>
            {
                self.unauthorized()
            }
            OciDistributionError::RequestError(r)
                if r.status() == Some(reqwest::StatusCode::UNAUTHORIZED) =>
            {
                self.unauthorized()
            }
            OciDistributionError::RequestError(r) if r.is_timeout() => OciError::Timeout {
                host: self.host.to_string(),
                reference: self.reference.to_string(),
                action: self.action,
                after: self.read_timeout,
            },
            // Through a relay, the client only sees a failed tunnel; the
            // relay knows why.
            other => OciError::Registry {
                host: self.host.to_string(),
                reference: self.reference.to_string(),
                action: self.action,
                cause: self
                    .relay
                    .and_then(|r| r.last_error())
                    .unwrap_or_else(|| chain(&other)),
            },
        }
    }

    fn unauthorized(&self) -> OciError {
        OciError::Unauthorized {
            host: self.host.to_string(),
            reference: self.reference.to_string(),
            who: self.who.to_string(),
        }
    }

    fn not_found(&self) -> OciError {
        OciError::NotFound {
            host: self.host.to_string(),
            reference: self.reference.to_string(),
        }
    }
}

/// An error with its sources, `a: b: c`.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

/// Runs `fut` on the source stage's runtime with `opts.timeout` as its
/// deadline.
fn run<T: Send + 'static>(
    opts: &OciOptions,
    host: &str,
    reference: &str,
    action: &'static str,
    fut: impl std::future::Future<Output = Result<T, OciError>> + Send + 'static,
) -> Result<T, OciError> {
    let after = opts.timeout;
    let out = super::block_on(async move { tokio::time::timeout(after, fut).await })
        .map_err(OciError::Runtime)?;
    match out {
        Ok(r) => r,
        Err(_) => Err(OciError::Timeout {
            host: host.to_string(),
            reference: reference.to_string(),
            action,
            after,
        }),
    }
}

/// A writer that refuses more than `limit` bytes.
struct Limited {
    buf: Vec<u8>,
    limit: u64,
}

impl tokio::io::AsyncWrite for Limited {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        data: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if (self.buf.len() + data.len()) as u64 > self.limit {
            return std::task::Poll::Ready(Err(std::io::Error::other(LimitExceeded)));
        }
        self.buf.extend_from_slice(data);
        std::task::Poll::Ready(Ok(data.len()))
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[derive(Debug, thiserror::Error)]
#[error("blob larger than its limit")]
struct LimitExceeded;

/// Downloads one blob, checking its size and digest against `desc`.
async fn fetch_blob(
    client: &Client,
    image: &Reference,
    desc: &Descriptor,
    what: &'static str,
    ctx: &Ctx<'_>,
) -> Result<Vec<u8>, OciError> {
    let limit = u64::try_from(desc.size).unwrap_or(0).min(MAX_BLOB_SIZE);
    if u64::try_from(desc.size).unwrap_or(u64::MAX) > MAX_BLOB_SIZE {
        return Err(OciError::TooLarge {
            reference: ctx.reference.to_string(),
            what,
            limit: MAX_BLOB_SIZE,
        });
    }
    let mut out = Limited {
        buf: Vec::new(),
        limit,
    };
    match client
        .pull_blob(image, desc.digest.as_str(), &mut out)
        .await
    {
        Ok(()) => {}
        Err(OciDistributionError::DigestError(DigestError::VerificationError {
            expected,
            actual,
        })) => {
            return Err(OciError::DigestMismatch {
                reference: ctx.reference.to_string(),
                what,
                expected,
                actual,
            })
        }
        Err(OciDistributionError::IoError(e))
            if e.get_ref().is_some_and(|i| i.is::<LimitExceeded>()) =>
        {
            return Err(OciError::TooLarge {
                reference: ctx.reference.to_string(),
                what,
                limit,
            })
        }
        Err(e) => return Err(ctx.err(e)),
    }
    // oci-client checked the digest as the bytes came; check it again on
    // the bytes kept, and the size the manifest gives.
    let actual = sha256_digest(&out.buf);
    if actual != desc.digest || out.buf.len() as u64 != limit {
        return Err(OciError::DigestMismatch {
            reference: ctx.reference.to_string(),
            what,
            expected: desc.digest.clone(),
            actual,
        });
    }
    Ok(out.buf)
}

/// Pulls chart `reference` (`oci://host/path/name[:tag][@digest]`) at
/// `version` (a version, a constraint, or `None` for the reference's tag or
/// the newest version), as `helm pull` does.
pub fn pull(
    reference: &str,
    version: Option<&str>,
    opts: &OciOptions,
) -> Result<OciChart, OciError> {
    pull_with_cache(
        reference,
        version,
        opts,
        std::sync::Arc::new(|_: &str| None),
    )
}

/// [`pull`], taking the chart archive from `cache` when it holds the chart
/// layer's digest: then only the manifest and the config blob are
/// downloaded. The cache's bytes are checked against the digest.
pub fn pull_with_cache(
    reference: &str,
    version: Option<&str>,
    opts: &OciOptions,
    cache: BlobCache,
) -> Result<OciChart, OciError> {
    let r = OciRef::parse(reference)?;
    let host = r.registry.clone();
    let (auth, who) = auth_for(&host, opts)?;
    let client = client_for(&host, opts, opts.plain_http)?;
    let shown = reference.to_string();
    let version = version.unwrap_or("").to_string();
    let read_timeout = read_timeout(opts);
    run(opts, &host, reference, "pulling", async move {
        pull_async(PullJob {
            client,
            r,
            version,
            auth,
            who,
            shown,
            read_timeout,
            cache,
        })
        .await
    })
}

/// One pull's inputs, moved onto the download thread.
struct PullJob {
    client: OciClient,
    r: OciRef,
    version: String,
    auth: RegistryAuth,
    who: String,
    shown: String,
    read_timeout: Duration,
    cache: BlobCache,
}

async fn pull_async(job: PullJob) -> Result<OciChart, OciError> {
    let PullJob {
        client,
        mut r,
        version,
        auth,
        who,
        shown,
        read_timeout,
        cache,
    } = job;
    let host = r.registry.clone();
    let ctx = Ctx {
        host: &host,
        reference: &shown,
        action: "pulling",
        who: &who,
        read_timeout,
        relay: client.relay.as_ref(),
    };
    // Helm's ValidateReference.
    let mut version = version;
    if version.is_empty() {
        version = r.tag.clone().unwrap_or_default();
    } else if let Some(t) = &r.tag {
        if *t != version {
            return Err(OciError::VersionMismatch {
                version,
                tag: t.clone(),
            });
        }
    }
    client.store_auth_if_needed(&host, &auth).await;
    let pinned = r.digest.clone();
    if pinned.is_none() || r.tag.is_some() {
        let tag = if parse_version(&version).is_ok() {
            version.clone()
        } else {
            let listing = Reference::with_tag(host.clone(), r.repository.clone(), "latest".into());
            let tags = client
                .list_tags(&listing, &auth, None, None)
                .await
                .map_err(|e| ctx.err(e))?;
            let tags = semver_tags(&tags.tags);
            if tags.is_empty() {
                return Err(OciError::NoTags { reference: shown });
            }
            match_tag(&tags, &version, &shown)?
        };
        r.tag = Some(tag.replace('+', "_"));
    }
    let display = r.display();
    let ctx = Ctx {
        reference: &display,
        ..ctx
    };
    // The tag alone names the manifest; a digest pins it.
    let by_tag = OciRef {
        digest: None,
        ..r.clone()
    };
    let image = if pinned.is_some() && r.tag.is_none() {
        r.client_ref()
    } else {
        by_tag.client_ref()
    };
    let (raw, manifest_digest) = client
        .pull_manifest_raw(&image, &auth, &[MANIFEST_MEDIA_TYPE])
        .await
        .map_err(|e| ctx.err(e))?;
    let actual = sha256_digest(&raw);
    if let Some(d) = &pinned {
        if *d != actual {
            return Err(OciError::DigestMismatch {
                reference: display.clone(),
                what: "manifest",
                expected: d.clone(),
                actual,
            });
        }
    }
    if manifest_digest.starts_with("sha256:") && manifest_digest != actual {
        return Err(OciError::DigestMismatch {
            reference: display.clone(),
            what: "manifest",
            expected: manifest_digest,
            actual,
        });
    }
    let manifest: Manifest = serde_json::from_slice(&raw).map_err(|e| OciError::Manifest {
        reference: display.clone(),
        reason: format!("the manifest is not an OCI image manifest: {e}"),
    })?;
    if manifest.config.media_type != CONFIG_MEDIA_TYPE {
        return Err(OciError::Manifest {
            reference: display.clone(),
            reason: format!("could not load config with mediatype {CONFIG_MEDIA_TYPE}"),
        });
    }
    let chart_desc = manifest
        .layers
        .iter()
        .rev()
        .find(|l| {
            l.media_type == CHART_LAYER_MEDIA_TYPE || l.media_type == LEGACY_CHART_LAYER_MEDIA_TYPE
        })
        .cloned()
        .ok_or_else(|| OciError::Manifest {
            reference: display.clone(),
            reason: format!(
                "manifest does not contain a layer with mediatype {CHART_LAYER_MEDIA_TYPE}"
            ),
        })?;
    let prov_desc = manifest
        .layers
        .iter()
        .find(|l| l.media_type == PROV_LAYER_MEDIA_TYPE)
        .cloned();
    let config = fetch_blob(&client, &image, &manifest.config, "config blob", &ctx).await?;
    let meta: crate::chart::model::Metadata =
        crate::yaml::json_from_slice(&config).map_err(|e| OciError::Manifest {
            reference: display.clone(),
            reason: format!("the config blob is not chart metadata: {e}"),
        })?;
    let from_cache = cache(&chart_desc.digest).filter(|b| {
        sha256_digest(b) == chart_desc.digest
            && i64::try_from(b.len()).ok() == Some(chart_desc.size)
    });
    let cached = from_cache.is_some();
    let archive = match from_cache {
        Some(b) => b,
        None => fetch_blob(&client, &image, &chart_desc, "chart layer", &ctx).await?,
    };
    let prov = match &prov_desc {
        Some(d) => Some(fetch_blob(&client, &image, d, "provenance layer", &ctx).await?),
        None => None,
    };
    Ok(OciChart {
        reference: display,
        name: meta.name,
        version: meta.version,
        archive,
        prov,
        digest: chart_desc.digest,
        manifest_digest: actual,
        cached,
    })
}

/// Helm's `generateOCIAnnotations`: the chart's fields as OCI annotations,
/// then the chart's own annotations (which may not replace the title or
/// version).
pub fn chart_annotations(
    meta: &crate::chart::model::Metadata,
    created: &str,
) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    let mut add = |k: &str, v: &str| {
        if !v.trim().is_empty() {
            m.insert(k.to_string(), v.to_string());
        }
    };
    add("org.opencontainers.image.description", &meta.description);
    add("org.opencontainers.image.title", &meta.name);
    add("org.opencontainers.image.version", &meta.version);
    add("org.opencontainers.image.url", &meta.home);
    add("org.opencontainers.image.created", created);
    if let Some(s) = meta.sources.first() {
        add("org.opencontainers.image.source", s);
    }
    if !meta.maintainers.is_empty() {
        let mut s = String::new();
        for (i, mt) in meta.maintainers.iter().enumerate() {
            s.push_str(&mt.name);
            if !mt.email.is_empty() {
                s.push_str(" (");
                s.push_str(&mt.email);
                s.push(')');
            }
            if i + 1 < meta.maintainers.len() {
                s.push_str(", ");
            }
        }
        add("org.opencontainers.image.authors", &s);
    }
    for (k, v) in &meta.annotations {
        if k != "org.opencontainers.image.version" && k != "org.opencontainers.image.title" {
            m.insert(k.clone(), v.clone());
        }
    }
    m
}

/// The blobs and manifest `helm push` would upload for `archive`.
#[derive(Debug, Clone, PartialEq)]
pub struct PushPlan {
    /// The chart's metadata.
    pub meta: crate::chart::model::Metadata,
    /// The config blob.
    pub config: Vec<u8>,
    /// The manifest, as Go's `json.Marshal` prints it.
    pub manifest: Vec<u8>,
    /// The manifest's descriptors of config and layers.
    pub manifest_parsed: Manifest,
}

/// Builds what `helm push` uploads for `archive` (and its `.prov`), with
/// `created` (RFC 3339) as the creation annotation.
pub fn push_plan(
    archive: &[u8],
    prov: Option<&[u8]>,
    created: &str,
    path: &str,
) -> Result<PushPlan, OciError> {
    let chart = crate::chart::loader::load_archive(archive).map_err(|source| OciError::Chart {
        path: path.to_string(),
        source,
    })?;
    let meta = chart.metadata.clone();
    let config = crate::gostd::json::marshal(&meta)
        .map_err(|e| OciError::Manifest {
            reference: path.to_string(),
            reason: format!("cannot encode the chart metadata: {e}"),
        })?
        .into_bytes();
    let desc = |media_type: &str, data: &[u8]| Descriptor {
        media_type: media_type.to_string(),
        digest: sha256_digest(data),
        size: data.len() as i64,
        annotations: BTreeMap::new(),
    };
    let mut layers = vec![desc(CHART_LAYER_MEDIA_TYPE, archive)];
    if let Some(p) = prov {
        layers.push(desc(PROV_LAYER_MEDIA_TYPE, p));
    }
    layers.sort_by(|a, b| a.digest.cmp(&b.digest));
    let manifest = Manifest {
        schema_version: 2,
        media_type: None,
        config: desc(CONFIG_MEDIA_TYPE, &config),
        layers,
        annotations: chart_annotations(&meta, created),
    };
    let bytes = crate::gostd::json::marshal(&manifest)
        .map_err(|e| OciError::Manifest {
            reference: path.to_string(),
            reason: format!("cannot encode the manifest: {e}"),
        })?
        .into_bytes();
    Ok(PushPlan {
        meta,
        config,
        manifest: bytes,
        manifest_parsed: manifest,
    })
}

/// Pushes chart `archive` (and its provenance file) to `remote`
/// (`oci://host/path`, the chart name and version are appended as Helm
/// does: `host/path/NAME:VERSION`, `+` written `_`). `created` is the
/// creation annotation (RFC 3339; `helm push` gives the archive's
/// modification time); `path` names the archive in errors.
pub fn push(
    archive: &[u8],
    prov: Option<&[u8]>,
    remote: &str,
    created: &str,
    path: &str,
    opts: &OciOptions,
) -> Result<PushResult, OciError> {
    let Some(base) = remote.strip_prefix("oci://") else {
        return Err(OciError::BadReference {
            reference: remote.to_string(),
            reason: "a push destination is oci://HOST/PATH".into(),
        });
    };
    let plan = push_plan(archive, prov, created, path)?;
    let base = base.trim_end_matches('/');
    let full = format!("{base}/{}:{}", plan.meta.name, plan.meta.version);
    let r = OciRef::parse(&full)?;
    if r.digest.is_some() || r.tag.as_deref() != Some(&plan.meta.version.replace('+', "_")) {
        return Err(OciError::BadReference {
            reference: remote.to_string(),
            reason: "a push destination has no tag or digest".into(),
        });
    }
    let host = r.registry.clone();
    let (auth, who) = auth_for(&host, opts)?;
    let client = client_for(&host, opts, opts.plain_http)?;
    let display = r.display();
    let archive = archive.to_vec();
    let prov = prov.map(<[u8]>::to_vec);
    let shown = display.clone();
    let task_host = host.clone();
    let read_timeout = read_timeout(opts);
    run(opts, &host, &display, "pushing", async move {
        let host = task_host;
        let ctx = Ctx {
            host: &host,
            reference: &shown,
            action: "pushing",
            who: &who,
            read_timeout,
            relay: client.relay.as_ref(),
        };
        let image = r.client_ref();
        client.store_auth_if_needed(&host, &auth).await;
        // Ask for a push token first, so that a refused login is reported
        // as such rather than as a failed upload.
        client
            .auth(&image, &auth, RegistryOperation::Push)
            .await
            .map_err(|e| ctx.err(e))?;
        let m = &plan.manifest_parsed;
        let mut blobs: Vec<(&Descriptor, Vec<u8>)> = Vec::new();
        for l in &m.layers {
            let data = if l.media_type == PROV_LAYER_MEDIA_TYPE {
                prov.clone().unwrap_or_default()
            } else {
                archive.clone()
            };
            blobs.push((l, data));
        }
        blobs.push((&m.config, plan.config.clone()));
        for (d, data) in blobs {
            let exists = client
                .blob_exists(&image, &d.digest)
                .await
                .map_err(|e| ctx.err(e))?;
            if !exists {
                client
                    .push_blob(&image, data, &d.digest)
                    .await
                    .map_err(|e| ctx.err(e))?;
            }
        }
        let ct = reqwest::header::HeaderValue::from_static(MANIFEST_MEDIA_TYPE);
        client
            .push_manifest_raw(&image, plan.manifest.clone(), ct)
            .await
            .map_err(|e| ctx.err(e))?;
        let prov_digest = m
            .layers
            .iter()
            .find(|l| l.media_type == PROV_LAYER_MEDIA_TYPE)
            .map(|l| l.digest.clone());
        let chart_digest = m
            .layers
            .iter()
            .find(|l| l.media_type == CHART_LAYER_MEDIA_TYPE)
            .map(|l| l.digest.clone())
            .unwrap_or_default();
        Ok(PushResult {
            reference: shown.clone(),
            manifest_digest: sha256_digest(&plan.manifest),
            config_digest: m.config.digest.clone(),
            chart_digest,
            prov_digest,
        })
    })
}

/// Checks `username`/`password` against registry `host` and, when the
/// registry takes them, records them in the registry config, as `helm
/// registry login` does. With `insecure` (Helm 3's `--insecure`), an HTTPS
/// failure is retried over plain HTTP, and certificates are not checked.
pub fn login(
    host: &str,
    username: &str,
    password: &str,
    insecure: bool,
    opts: &OciOptions,
) -> Result<(), OciError> {
    let mut opts = opts.clone();
    if insecure {
        opts.insecure_skip_tls_verify = true;
    }
    let first = check_login(host, username, password, &opts, opts.plain_http);
    let r = match first {
        Err(OciError::Registry { .. }) if insecure && !opts.plain_http => {
            check_login(host, username, password, &opts, true)
        }
        other => other,
    };
    r?;
    let path = opts.registry_config_path();
    let mut config = RegistryConfig::load(&path)?;
    config.set_credential(
        host,
        &Credential {
            username: username.to_string(),
            password: password.to_string(),
        },
    )?;
    config.save()?;
    Ok(())
}

fn check_login(
    host: &str,
    username: &str,
    password: &str,
    opts: &OciOptions,
    plain_http: bool,
) -> Result<(), OciError> {
    let client = client_for(host, opts, plain_http)?;
    let auth = RegistryAuth::Basic(username.to_string(), password.to_string());
    let owned_host = host.to_string();
    let who = format!("user {username:?}");
    let read_timeout = read_timeout(opts);
    run(opts, host, host, "logging in to", async move {
        let ctx = Ctx {
            host: &owned_host,
            reference: &owned_host,
            action: "logging in to",
            who: &who,
            read_timeout,
            relay: client.relay.as_ref(),
        };
        // A repository name no one uses: the check only needs the
        // registry's answer to these credentials.
        let probe = Reference::with_tag(
            owned_host.clone(),
            "rudder-login-check".into(),
            "latest".into(),
        );
        let token = client
            .auth(&probe, &auth, RegistryOperation::Pull)
            .await
            .map_err(|e| ctx.err(e))?;
        if token.is_some() {
            // A token service accepted the credentials.
            return Ok(());
        }
        // Basic auth (or none): the registry itself says.
        match client.list_tags(&probe, &auth, Some(1), None).await {
            Ok(_) => Ok(()),
            Err(e) => match ctx.err(e) {
                OciError::NotFound { .. } => Ok(()),
                other => Err(other),
            },
        }
    })
}

/// Forgets the login for `host` in the registry config (`helm registry
/// logout`); [`OciError::NotLoggedIn`] when there was none.
pub fn logout(host: &str, opts: &OciOptions) -> Result<(), OciError> {
    let mut config = RegistryConfig::load(&opts.registry_config_path())?;
    if !config.remove_credential(host)? {
        return Err(OciError::NotLoggedIn {
            host: host.to_string(),
        });
    }
    config.save()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse_as_helm_reads_them() {
        let r = OciRef::parse("oci://localhost:5000/a/b/chart:1.0.0+build.1").unwrap();
        assert_eq!(r.registry, "localhost:5000");
        assert_eq!(r.repository, "a/b/chart");
        assert_eq!(r.tag.as_deref(), Some("1.0.0_build.1"));
        assert_eq!(r.name(), "chart");
        let r = OciRef::parse("oci://localhost:5000/chart").unwrap();
        assert_eq!(r.tag, None);
        let d = format!("sha256:{}", "a".repeat(64));
        let r = OciRef::parse(&format!("oci://h/c:1.0.0@{d}")).unwrap();
        assert_eq!(r.digest.as_deref(), Some(d.as_str()));
        assert!(OciRef::parse("oci://host").is_err());
        assert!(OciRef::parse("oci://host/UPPER").is_err());
        assert!(OciRef::parse("oci://h/c@sha256:xyz").is_err());
    }

    #[test]
    fn tags_resolve_as_helm_resolves_them() {
        let tags = semver_tags(&[
            "1.0.0".into(),
            "latest".into(),
            "1.2.0_build.5".into(),
            "v2.0.0".into(),
            "1.10.0-rc.1".into(),
        ]);
        assert_eq!(tags, ["1.10.0-rc.1", "1.2.0+build.5", "1.0.0"]);
        // `*` leaves pre-releases out, as Masterminds does.
        assert_eq!(match_tag(&tags, "", "r").unwrap(), "1.2.0+build.5");
        assert_eq!(match_tag(&tags, "~1.0", "r").unwrap(), "1.0.0");
        assert_eq!(match_tag(&tags, "^1.1", "r").unwrap(), "1.2.0+build.5");
        let e = match_tag(&tags, "latest", "oci://h/c").unwrap_err();
        assert!(
            e.to_string().starts_with("improper constraint: latest"),
            "{e}"
        );
        let e = match_tag(&tags, ">5", "oci://h/c").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("Could not locate a version matching provided version string >5"),
            "{e}"
        );
    }

    #[test]
    fn annotations_follow_helm() {
        let meta = crate::chart::model::Metadata {
            name: "c".into(),
            version: "1.0.0".into(),
            description: " ".into(),
            sources: vec!["https://s".into(), "https://t".into()],
            maintainers: vec![
                crate::chart::model::Maintainer {
                    name: "a".into(),
                    email: "a@x".into(),
                    url: String::new(),
                },
                crate::chart::model::Maintainer {
                    name: "b".into(),
                    ..Default::default()
                },
            ],
            annotations: [
                (
                    "org.opencontainers.image.title".to_string(),
                    "no".to_string(),
                ),
                ("x".to_string(), "y".to_string()),
            ]
            .into_iter()
            .collect(),
            ..Default::default()
        };
        let a = chart_annotations(&meta, "2024-01-01T00:00:00Z");
        let want: BTreeMap<String, String> = [
            ("org.opencontainers.image.authors", "a (a@x), b"),
            ("org.opencontainers.image.created", "2024-01-01T00:00:00Z"),
            ("org.opencontainers.image.source", "https://s"),
            ("org.opencontainers.image.title", "c"),
            ("org.opencontainers.image.version", "1.0.0"),
            ("x", "y"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(a, want);
    }

    #[test]
    fn strict_versions_are_strict() {
        assert!(strict_version("1.2.3").is_some());
        assert!(strict_version("1.2.3-rc.1+b").is_some());
        assert!(strict_version("v1.2.3").is_none());
        assert!(strict_version("1.2").is_none());
        assert!(strict_version("latest").is_none());
    }
}
