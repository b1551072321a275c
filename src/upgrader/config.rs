//! The cluster config the upgrader reads (YAML).
//!
//! ```yaml
//! kubernetesVersion: v1.21.4
//! controllers: 1
//! networkPlugin: calico
//! selfHostedKubelet: true
//! podCIDR: 10.2.0.0/16
//! serviceCIDR: 10.3.0.0/16
//! clusterDomain: cluster.local
//! components: [node-local-dns, metrics-server]
//! certificates:
//!   caCert: certs/ca.crt
//!   ...
//! ```
//!
//! Unknown fields are errors; every error names the file, the field and the
//! line. Certificate paths are relative to the config file's directory and
//! are read when the config is loaded, so a missing file is reported before
//! anything is planned or written.
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A config that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ClusterConfigError {
    /// The file cannot be read.
    #[error("reading config {path}: {error}")]
    Read {
        /// The config file.
        path: PathBuf,
        /// The I/O error (its text ends the message).
        error: std::io::Error,
    },
    /// The YAML is malformed or does not fit the config (wrong type,
    /// unknown or missing field).
    #[error("config {path}:{line}:{column}: {message}")]
    Parse {
        /// The config file.
        path: PathBuf,
        /// 1-based line of the problem: the value or mapping that does not
        /// fit, the second document of a text that has several, the end
        /// of a text that ends too early.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// serde's message (it names the field), without the place.
        message: String,
    },
    /// A field has a value of the right type that cannot be used.
    #[error("config {path}: field {field}: {message}")]
    Invalid {
        /// The config file.
        path: PathBuf,
        /// The field (`podCIDR`, `certificates.caCert`).
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A certificate file cannot be read.
    #[error("config {path}: field certificates.{field}: cannot read {file}: {error}")]
    Certificate {
        /// The config file.
        path: PathBuf,
        /// The certificate field.
        field: String,
        /// The certificate file, as resolved.
        file: PathBuf,
        /// The I/O error (its text ends the message).
        error: std::io::Error,
    },
}

/// The network plugin. Only Calico is supported, as in Lokomotive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkPlugin {
    /// Project Calico.
    Calico,
}

/// An optional component.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OptionalComponent {
    /// The node-local DNS cache.
    NodeLocalDns,
    /// metrics-server (the resource metrics API).
    MetricsServer,
}

/// Image overrides; each defaults to the upstream image of
/// `kubernetesVersion` (or the pinned version of the add-on).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Images {
    /// kube-apiserver.
    #[serde(default)]
    pub kube_apiserver: Option<String>,
    /// kube-controller-manager.
    #[serde(default)]
    pub kube_controller_manager: Option<String>,
    /// kube-scheduler.
    #[serde(default)]
    pub kube_scheduler: Option<String>,
    /// kube-proxy.
    #[serde(default)]
    pub kube_proxy: Option<String>,
    /// The self-hosted kubelet.
    #[serde(default)]
    pub kubelet: Option<String>,
    /// CoreDNS.
    #[serde(default)]
    pub coredns: Option<String>,
    /// pod-checkpointer.
    #[serde(default)]
    pub pod_checkpointer: Option<String>,
    /// The HAProxy sidecar of a single-controller kube-apiserver.
    #[serde(default)]
    pub haproxy: Option<String>,
    /// calico-node.
    #[serde(default)]
    pub calico_node: Option<String>,
    /// calico-cni.
    #[serde(default)]
    pub calico_cni: Option<String>,
    /// calico-kube-controllers.
    #[serde(default)]
    pub calico_controllers: Option<String>,
    /// node-local-dns.
    #[serde(default)]
    pub node_local_dns: Option<String>,
    /// metrics-server.
    #[serde(default)]
    pub metrics_server: Option<String>,
}

/// Certificate and key files (paths relative to the config file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CertificatePaths {
    /// The cluster CA certificate.
    pub ca_cert: PathBuf,
    /// The cluster CA key (controller-manager signs kubelet certificates).
    pub ca_key: PathBuf,
    /// kube-apiserver's serving certificate.
    pub apiserver_cert: PathBuf,
    /// kube-apiserver's serving key.
    pub apiserver_key: PathBuf,
    /// The service-account signing key.
    pub service_account_key: PathBuf,
    /// The service-account public key.
    pub service_account_pub: PathBuf,
}

/// A bootstrap token (TLS bootstrap of new nodes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BootstrapToken {
    /// The token id (6 characters `[a-z0-9]`).
    pub token_id: String,
    /// The token secret (16 characters `[a-z0-9]`).
    pub token_secret: String,
}

/// The cluster config as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterConfig {
    /// The Kubernetes version (`v1.21.4`).
    pub kubernetes_version: String,
    /// Image overrides.
    #[serde(default)]
    pub images: Images,
    /// The number of controller nodes (1, or more for HA).
    pub controllers: u32,
    /// The network plugin (`calico`).
    pub network_plugin: NetworkPlugin,
    /// Whether kubelet runs as a self-hosted DaemonSet.
    #[serde(default = "yes")]
    pub self_hosted_kubelet: bool,
    /// The pod network.
    #[serde(rename = "podCIDR", default = "default_pod_cidr")]
    pub pod_cidr: String,
    /// The service network.
    #[serde(rename = "serviceCIDR", default = "default_service_cidr")]
    pub service_cidr: String,
    /// The cluster domain.
    #[serde(default = "default_domain")]
    pub cluster_domain: String,
    /// etcd client URLs.
    #[serde(default = "default_etcd")]
    pub etcd_servers: Vec<String>,
    /// Optional components, installed after the control plane.
    #[serde(default)]
    pub components: Vec<OptionalComponent>,
    /// Bootstrap tokens for new nodes.
    #[serde(default)]
    pub bootstrap_tokens: Vec<BootstrapToken>,
    /// Extra kube-apiserver flags (`--flag=value`).
    #[serde(default)]
    pub apiserver_extra_flags: Vec<String>,
    /// Per-component annotations put on the component's workloads. The
    /// demo uses `sim.rudder.io/ready: never` on kube-apiserver to play a
    /// bad flag on the simulated cluster.
    #[serde(default)]
    pub workload_annotations: BTreeMap<String, BTreeMap<String, String>>,
    /// Per-component labels put on the component's pod templates. Tests on
    /// the test bed use `testbed.kwok.io/behavior: never-ready` on
    /// kube-apiserver to play a bad flag there.
    #[serde(default)]
    pub pod_labels: BTreeMap<String, BTreeMap<String, String>>,
    /// Certificate files.
    pub certificates: CertificatePaths,
}

fn yes() -> bool {
    true
}
fn default_pod_cidr() -> String {
    "10.2.0.0/16".into()
}
fn default_service_cidr() -> String {
    "10.3.0.0/16".into()
}
fn default_domain() -> String {
    "cluster.local".into()
}
fn default_etcd() -> Vec<String> {
    vec!["https://127.0.0.1:2379".into()]
}

/// The PEM contents of the certificate files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Certificates {
    /// CA certificate.
    pub ca_cert: String,
    /// CA key.
    pub ca_key: String,
    /// kube-apiserver certificate.
    pub apiserver_cert: String,
    /// kube-apiserver key.
    pub apiserver_key: String,
    /// Service-account signing key.
    pub service_account_key: String,
    /// Service-account public key.
    pub service_account_pub: String,
}

/// A loaded config: the fields, the certificates read, and where it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The config file.
    pub path: PathBuf,
    /// The config.
    pub config: ClusterConfig,
    /// The certificate contents.
    pub certificates: Certificates,
}

/// An IPv4 network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    /// The network address.
    pub base: u32,
    /// The prefix length.
    pub prefix: u8,
}

impl Cidr {
    /// Parses `a.b.c.d/n`.
    pub fn parse(s: &str) -> Option<Cidr> {
        let (ip, prefix) = s.split_once('/')?;
        let ip: std::net::Ipv4Addr = ip.parse().ok()?;
        let prefix: u8 = prefix.parse().ok()?;
        if prefix > 30 {
            return None;
        }
        let mask = if prefix == 0 {
            0
        } else {
            u32::MAX << (32 - prefix)
        };
        Some(Cidr {
            base: u32::from(ip) & mask,
            prefix,
        })
    }

    /// The `n`-th address of the network (`.1` is 1).
    pub fn nth(&self, n: u32) -> String {
        std::net::Ipv4Addr::from(self.base.wrapping_add(n)).to_string()
    }
}

/// Nesting past this is refused before serde_yaml reads the text (which
/// costs it time quadratic in the depth: 8,000 levels took 0.33 s).
const MAX_NESTING: usize = 1000;

/// How deeply `node` nests (a scalar is 0), without recursion.
fn nesting(node: &crate::yaml::Node) -> usize {
    use crate::yaml::Node;
    let mut max = 0;
    let mut todo = vec![(node, 0usize)];
    while let Some((n, d)) = todo.pop() {
        max = max.max(d);
        match n {
            Node::Seq(items) => todo.extend(items.iter().map(|x| (x, d + 1))),
            Node::Map(m) => todo.extend(m.values().map(|x| (x, d + 1))),
            _ => {}
        }
    }
    max
}

/// serde_yaml's error as [`ClusterConfigError::Parse`]. serde_yaml appends the
/// place to its message (` at line 3 column 16`); the error keeps it in
/// its fields only. A few errors have no place in serde_yaml: a text of
/// several documents (placed at the second one's start), a text that ends
/// too early (placed at its end), too much alias expansion (placed at the
/// start).
fn parse_error(text: &str, path: &Path, e: &serde_yaml::Error) -> ClusterConfigError {
    let mut message = e.to_string();
    let (line, column) = match e.location() {
        Some(l) => {
            let place = format!(" at line {} column {}", l.line(), l.column());
            if let Some(bare) = message.strip_suffix(&place) {
                message = bare.to_string();
            }
            (l.line(), l.column())
        }
        None if message.contains("more than one document") => second_document(text),
        None if message.starts_with("EOF") => {
            let last = text.rsplit('\n').next().unwrap_or_default();
            (text.matches('\n').count() + 1, last.chars().count() + 1)
        }
        None => (1, 1),
    };
    ClusterConfigError::Parse {
        path: path.to_path_buf(),
        line,
        column,
        message,
    }
}

/// Where the second YAML document of `text` starts (a document starts at
/// a `---` line, or at the first content outside a document), at column
/// 1; the start when there is none.
fn second_document(text: &str) -> (usize, usize) {
    let marker = |l: &str, m: &str| {
        l.strip_prefix(m)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r']))
    };
    let (mut in_document, mut started) = (false, 0);
    for (i, l) in text.lines().enumerate() {
        let content = !l.trim().is_empty() && !l.trim_start().starts_with(['#', '%']);
        if marker(l, "...") {
            in_document = false;
        } else if marker(l, "---") || (content && !in_document) {
            started += 1;
            if started == 2 {
                return (i + 1, 1);
            }
            in_document = true;
        }
    }
    (1, 1)
}

impl ClusterConfig {
    /// Parses config text; `path` is only used in errors.
    pub fn parse(text: &str, path: &Path) -> Result<ClusterConfig, ClusterConfigError> {
        // The guarded reader first: it refuses alias bombs and nesting past
        // Helm's 10,000 levels at once and in linear time, where serde_yaml
        // would expand the aliases, or take time quadratic in the nesting.
        let parse_err = |line: usize, column: usize, message: String| ClusterConfigError::Parse {
            path: path.to_path_buf(),
            line,
            column,
            message,
        };
        let node = crate::yaml::parse_document(text).map_err(|e| {
            let (line, column) = e.position().unwrap_or((1, 1));
            parse_err(line, column, e.yaml_v2_message())
        })?;
        // A config nests four levels; serde_yaml refuses more than 128
        // itself (after the unknown or mistyped field it meets first, the
        // better error), but reads deep text in time quadratic in its depth.
        if nesting(&node) > MAX_NESTING {
            return Err(parse_err(1, 1, "recursion limit exceeded".into()));
        }
        let c: ClusterConfig =
            serde_yaml::from_str(text).map_err(|e| parse_error(text, path, &e))?;
        c.validate(path)?;
        Ok(c)
    }

    fn validate(&self, path: &Path) -> Result<(), ClusterConfigError> {
        let bad = |field: &str, message: String| ClusterConfigError::Invalid {
            path: path.to_path_buf(),
            field: field.to_string(),
            message,
        };
        let v = self.kubernetes_version.strip_prefix('v').unwrap_or("");
        if semver::Version::parse(v).is_err() {
            return Err(bad(
                "kubernetesVersion",
                format!(
                    "{:?} is not a version like v1.21.4",
                    self.kubernetes_version
                ),
            ));
        }
        if self.controllers == 0 {
            return Err(bad("controllers", "must be at least 1".into()));
        }
        for (field, v) in [
            ("podCIDR", &self.pod_cidr),
            ("serviceCIDR", &self.service_cidr),
        ] {
            if Cidr::parse(v).is_none() {
                return Err(bad(
                    field,
                    format!("{v:?} is not an IPv4 CIDR like 10.3.0.0/16"),
                ));
            }
        }
        let label = regex_lite::Regex::new(
            r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
        )
        .map_err(|e| bad("clusterDomain", e.to_string()))?;
        if !label.is_match(&self.cluster_domain) {
            return Err(bad(
                "clusterDomain",
                format!("{:?} is not a DNS domain", self.cluster_domain),
            ));
        }
        if self.etcd_servers.is_empty() {
            return Err(bad("etcdServers", "needs at least one URL".into()));
        }
        let id = regex_lite::Regex::new(r"^[a-z0-9]{6}$").map_err(|e| bad("x", e.to_string()))?;
        let secret =
            regex_lite::Regex::new(r"^[a-z0-9]{16}$").map_err(|e| bad("x", e.to_string()))?;
        for (i, t) in self.bootstrap_tokens.iter().enumerate() {
            if !id.is_match(&t.token_id) {
                return Err(bad(
                    &format!("bootstrapTokens[{i}].tokenId"),
                    "must be 6 characters [a-z0-9]".into(),
                ));
            }
            if !secret.is_match(&t.token_secret) {
                return Err(bad(
                    &format!("bootstrapTokens[{i}].tokenSecret"),
                    "must be 16 characters [a-z0-9]".into(),
                ));
            }
        }
        for (i, f) in self.apiserver_extra_flags.iter().enumerate() {
            if !f.starts_with("--") {
                return Err(bad(
                    &format!("apiserverExtraFlags[{i}]"),
                    format!("{f:?} is not a flag (--name=value)"),
                ));
            }
        }
        let label_key = regex_lite::Regex::new(
            r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$",
        )
        .map_err(|e| bad("podLabels", e.to_string()))?;
        let label_value =
            regex_lite::Regex::new(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
                .map_err(|e| bad("podLabels", e.to_string()))?;
        for (c, labels) in &self.pod_labels {
            for (k, v) in labels {
                if !label_key.is_match(k) {
                    return Err(bad(
                        &format!("podLabels.{c}"),
                        format!("{k:?} is not a valid label key"),
                    ));
                }
                if !label_value.is_match(v) {
                    return Err(bad(
                        &format!("podLabels.{c}.{k}"),
                        format!("{v:?} is not a valid label value"),
                    ));
                }
            }
        }
        for (field, k) in self
            .workload_annotations
            .keys()
            .map(|k| ("workloadAnnotations", k))
            .chain(self.pod_labels.keys().map(|k| ("podLabels", k)))
        {
            if super::control_plane::Kind::from_name(k).is_none() {
                return Err(bad(
                    &format!("{field}.{k}"),
                    format!(
                        "unknown component {k:?}; known: {}",
                        super::control_plane::Kind::ALL
                            .iter()
                            .map(|k| k.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for c in &self.components {
            if !seen.insert(*c) {
                return Err(bad("components", format!("{c:?} is listed twice")));
            }
        }
        Ok(())
    }

    /// The image of a component: the override, or the default for the version.
    pub fn image(&self, which: &str) -> String {
        let v = &self.kubernetes_version;
        let i = &self.images;
        let (o, d) = match which {
            "kube-apiserver" => (
                &i.kube_apiserver,
                format!("registry.k8s.io/kube-apiserver:{v}"),
            ),
            "kube-controller-manager" => (
                &i.kube_controller_manager,
                format!("registry.k8s.io/kube-controller-manager:{v}"),
            ),
            "kube-scheduler" => (
                &i.kube_scheduler,
                format!("registry.k8s.io/kube-scheduler:{v}"),
            ),
            "kube-proxy" => (&i.kube_proxy, format!("registry.k8s.io/kube-proxy:{v}")),
            "kubelet" => (&i.kubelet, format!("quay.io/kinvolk/kubelet:{v}")),
            "coredns" => (&i.coredns, "registry.k8s.io/coredns/coredns:v1.8.4".into()),
            "pod-checkpointer" => (
                &i.pod_checkpointer,
                "quay.io/kinvolk/pod-checkpointer:83e25e5968391b9eb342042c435d1b3eeddb2be1".into(),
            ),
            "haproxy" => (&i.haproxy, "haproxy:2.4.2-alpine".into()),
            "calico-node" => (&i.calico_node, "calico/node:v3.19.1".into()),
            "calico-cni" => (&i.calico_cni, "calico/cni:v3.19.1".into()),
            "calico-controllers" => (
                &i.calico_controllers,
                "calico/kube-controllers:v3.19.1".into(),
            ),
            "node-local-dns" => (
                &i.node_local_dns,
                "registry.k8s.io/dns/k8s-dns-node-cache:1.17.0".into(),
            ),
            "metrics-server" => (
                &i.metrics_server,
                "registry.k8s.io/metrics-server/metrics-server:v0.5.0".into(),
            ),
            _ => (&None, String::new()),
        };
        o.clone().unwrap_or(d)
    }
}

impl Loaded {
    /// Reads and checks a config file and the certificate files it names.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Loaded, ClusterConfigError> {
        let path = path.as_ref();
        let text =
            crate::input::read_to_string(path).map_err(|error| ClusterConfigError::Read {
                path: path.to_path_buf(),
                error,
            })?;
        Loaded::from_text(&text, path)
    }

    /// Parses config text as if read from `path` (certificate paths are
    /// relative to its directory).
    pub fn from_text(text: &str, path: &Path) -> Result<Loaded, ClusterConfigError> {
        let config = ClusterConfig::parse(text, path)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let p = &config.certificates;
        let read = |field: &str, f: &Path| {
            let file = if f.is_absolute() {
                f.to_path_buf()
            } else {
                dir.join(f)
            };
            std::fs::read_to_string(&file).map_err(|error| ClusterConfigError::Certificate {
                path: path.to_path_buf(),
                field: field.to_string(),
                file,
                error,
            })
        };
        let certificates = Certificates {
            ca_cert: read("caCert", &p.ca_cert)?,
            ca_key: read("caKey", &p.ca_key)?,
            apiserver_cert: read("apiserverCert", &p.apiserver_cert)?,
            apiserver_key: read("apiserverKey", &p.apiserver_key)?,
            service_account_key: read("serviceAccountKey", &p.service_account_key)?,
            service_account_pub: read("serviceAccountPub", &p.service_account_pub)?,
        };
        Ok(Loaded {
            path: path.to_path_buf(),
            config,
            certificates,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: &str = "kubernetesVersion: v1.21.4\ncontrollers: 1\nnetworkPlugin: calico\ncertificates:\n  caCert: a\n  caKey: a\n  apiserverCert: a\n  apiserverKey: a\n  serviceAccountKey: a\n  serviceAccountPub: a\n";

    #[test]
    fn defaults_and_errors_name_field_and_line() {
        let c = ClusterConfig::parse(MIN, Path::new("c.yaml")).unwrap();
        assert_eq!(c.service_cidr, "10.3.0.0/16");
        assert!(c.self_hosted_kubelet);
        let e = ClusterConfig::parse(
            &MIN.replace("controllers: 1", "controllers: one"),
            Path::new("c.yaml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("config c.yaml:2:"), "{e}");
        assert!(e.contains("controllers"), "{e}");
        let e = ClusterConfig::parse(
            &format!("{MIN}components: [grafana]\n"),
            Path::new("c.yaml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("c.yaml:11:") && e.contains("grafana"), "{e}");
        let e = ClusterConfig::parse(&MIN.replace("controllers: 1\n", ""), Path::new("c.yaml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing field `controllers`"), "{e}");
        // The place is in the fields, not repeated in the message.
        let e = ClusterConfig::parse(
            &MIN.replace("networkPlugin: calico", "networkPlugin: flannel"),
            Path::new("c.yaml"),
        )
        .unwrap_err();
        assert!(
            matches!(&e, ClusterConfigError::Parse { line: 3, column: 16, message, .. }
                if message == "networkPlugin: unknown variant `flannel`, expected `calico`"),
            "{e:?}"
        );
        // The places serde_yaml does not give.
        let place = |text: &str| match ClusterConfig::parse(text, Path::new("c.yaml")) {
            Err(ClusterConfigError::Parse { line, column, .. }) => (line, column),
            other => panic!("{other:?}"),
        };
        assert_eq!(place(&format!("{MIN}---\nb: 1\n")), (11, 1));
        assert_eq!(place(&format!("# c\n---\n{MIN}...\n---\nb: 1\n")), (14, 1));
        assert_eq!(place(&format!("---\n{MIN}---\n")), (12, 1));
        let e = ClusterConfig::parse(
            &MIN.replace("kubernetesVersion: v1.21.4", "kubernetesVersion: latest"),
            Path::new("c.yaml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("field kubernetesVersion"), "{e}");
    }

    #[test]
    fn cidr_addresses() {
        let c = Cidr::parse("10.96.0.0/16").unwrap();
        assert_eq!(c.nth(10), "10.96.0.10");
        assert!(Cidr::parse("10.96.0.0").is_none());
        assert!(Cidr::parse("300.1.1.1/8").is_none());
    }
}
