//! The control-plane components as [`Component`]s: handlebars templates
//! embedded from `fixtures/upgrader/<component>/` and the values computed
//! from the cluster config.
use super::config::{Cidr, Loaded, OptionalComponent};
use crate::chart::component::BoxError;
use crate::chart::{Component, HandlebarsComponent};
use base64::Engine;
use serde::Serialize;
use sha2::Digest;
use std::collections::BTreeMap;

/// The namespace of every upgrader release (Lokomotive's `kube-system`).
pub const NAMESPACE: &str = "kube-system";

/// A component the upgrader manages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Bootstrap tokens and the RBAC of TLS bootstrap.
    BootstrapSecrets,
    /// pod-checkpointer: keeps control-plane pods running while the API is down.
    PodCheckpointer,
    /// kube-apiserver.
    KubeApiserver,
    /// controller-manager, scheduler, CoreDNS and kube-proxy.
    Kubernetes,
    /// Calico with its CRDs.
    Calico,
    /// The self-hosted kubelet.
    Kubelet,
    /// The node-local DNS cache.
    NodeLocalDns,
    /// metrics-server.
    MetricsServer,
}

type Templates = &'static [(&'static str, &'static str)];

macro_rules! templates {
    ($dir:literal: $($file:literal),* $(,)?) => {
        &[$(($file, include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/upgrader/", $dir, "/", $file, ".hbs")))),*]
    };
}

impl Kind {
    /// Every component, in upgrade order.
    pub const ALL: [Kind; 8] = [
        Kind::BootstrapSecrets,
        Kind::PodCheckpointer,
        Kind::KubeApiserver,
        Kind::Kubernetes,
        Kind::Calico,
        Kind::Kubelet,
        Kind::NodeLocalDns,
        Kind::MetricsServer,
    ];

    /// The component's (and release's) name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::BootstrapSecrets => "bootstrap-secrets",
            Kind::PodCheckpointer => "pod-checkpointer",
            Kind::KubeApiserver => "kube-apiserver",
            Kind::Kubernetes => "kubernetes",
            Kind::Calico => "calico",
            Kind::Kubelet => "kubelet",
            Kind::NodeLocalDns => "node-local-dns",
            Kind::MetricsServer => "metrics-server",
        }
    }

    /// The component of a name.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether this is part of the control plane (as opposed to an
    /// optional component): it changes how progress is worded.
    pub fn is_control_plane(self) -> bool {
        !matches!(self, Kind::NodeLocalDns | Kind::MetricsServer)
    }

    /// The optional component's kind.
    pub fn optional(c: OptionalComponent) -> Kind {
        match c {
            OptionalComponent::NodeLocalDns => Kind::NodeLocalDns,
            OptionalComponent::MetricsServer => Kind::MetricsServer,
        }
    }

    /// The embedded templates: manifest file name and handlebars source.
    pub fn templates(self) -> Templates {
        match self {
            Kind::BootstrapSecrets => templates!("bootstrap-secrets": "secrets.yaml", "rbac.yaml"),
            Kind::PodCheckpointer => {
                templates!("pod-checkpointer": "rbac.yaml", "daemonset.yaml")
            }
            Kind::KubeApiserver => templates!("kube-apiserver":
                "secret.yaml", "rbac.yaml", "haproxy.yaml", "workload.yaml", "pdb.yaml"),
            Kind::Kubernetes => templates!("kubernetes":
                "controller-manager.yaml", "scheduler.yaml", "coredns.yaml", "kube-proxy.yaml"),
            Kind::Calico => {
                templates!("calico": "crds.yaml", "rbac.yaml", "config.yaml", "calico-node.yaml", "kube-controllers.yaml")
            }
            Kind::Kubelet => templates!("kubelet": "kubelet.yaml"),
            Kind::NodeLocalDns => templates!("node-local-dns": "node-local-dns.yaml"),
            Kind::MetricsServer => templates!("metrics-server": "rbac.yaml", "metrics-server.yaml"),
        }
    }
}

/// Component images, resolved.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageValues {
    apiserver: String,
    controller_manager: String,
    scheduler: String,
    proxy: String,
    kubelet: String,
    coredns: String,
    pod_checkpointer: String,
    haproxy: String,
    calico_node: String,
    calico_cni: String,
    calico_controllers: String,
    node_local_dns: String,
    metrics_server: String,
}

/// A bootstrap token, base64-encoded for a Secret.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenValues {
    id: String,
    id_b64: String,
    secret_b64: String,
}

/// What the templates see as `config`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Values {
    kubernetes_version: String,
    controllers: u32,
    /// One controller: Deployments with `maxUnavailable: 0` and PDBs.
    single: bool,
    images: ImageValues,
    pod_cidr: String,
    service_cidr: String,
    cluster_domain: String,
    dns_ip: String,
    local_dns_ip: String,
    etcd_servers: String,
    ca_cert: String,
    ca_key: String,
    apiserver_cert: String,
    apiserver_key: String,
    service_account_key: String,
    service_account_pub: String,
    /// sha256 of the secret data, as a pod annotation, so that new
    /// certificates roll the pods (Lokomotive `e5db43382`).
    certs_checksum: String,
    bootstrap_tokens: Vec<TokenValues>,
    extra_flags: Vec<String>,
    /// The workload annotations of this component, as a JSON flow map.
    annotations: String,
    /// Labels added to this component's pod templates; values JSON-quoted.
    pod_labels: BTreeMap<String, String>,
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
}

impl Values {
    /// The values of `kind` for a loaded config.
    pub fn new(l: &Loaded, kind: Kind) -> Values {
        let c = &l.config;
        let svc = Cidr::parse(&c.service_cidr);
        let certs = &l.certificates;
        let mut h = sha2::Sha256::new();
        for p in [
            &certs.ca_cert,
            &certs.ca_key,
            &certs.apiserver_cert,
            &certs.apiserver_key,
            &certs.service_account_key,
            &certs.service_account_pub,
        ] {
            h.update(p.as_bytes());
            h.update([0u8]);
        }
        let checksum = h
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>();
        let annotations = c
            .workload_annotations
            .get(kind.name())
            .cloned()
            .unwrap_or_default();
        Values {
            kubernetes_version: c.kubernetes_version.clone(),
            controllers: c.controllers,
            single: c.controllers == 1,
            images: ImageValues {
                apiserver: c.image("kube-apiserver"),
                controller_manager: c.image("kube-controller-manager"),
                scheduler: c.image("kube-scheduler"),
                proxy: c.image("kube-proxy"),
                kubelet: c.image("kubelet"),
                coredns: c.image("coredns"),
                pod_checkpointer: c.image("pod-checkpointer"),
                haproxy: c.image("haproxy"),
                calico_node: c.image("calico-node"),
                calico_cni: c.image("calico-cni"),
                calico_controllers: c.image("calico-controllers"),
                node_local_dns: c.image("node-local-dns"),
                metrics_server: c.image("metrics-server"),
            },
            pod_cidr: c.pod_cidr.clone(),
            service_cidr: c.service_cidr.clone(),
            cluster_domain: c.cluster_domain.clone(),
            dns_ip: svc.map(|s| s.nth(10)).unwrap_or_default(),
            local_dns_ip: "169.254.20.10".into(),
            etcd_servers: c.etcd_servers.join(","),
            ca_cert: b64(&certs.ca_cert),
            ca_key: b64(&certs.ca_key),
            apiserver_cert: b64(&certs.apiserver_cert),
            apiserver_key: b64(&certs.apiserver_key),
            service_account_key: b64(&certs.service_account_key),
            service_account_pub: b64(&certs.service_account_pub),
            certs_checksum: checksum,
            bootstrap_tokens: c
                .bootstrap_tokens
                .iter()
                .map(|t| TokenValues {
                    id: t.token_id.clone(),
                    id_b64: b64(&t.token_id),
                    secret_b64: b64(&t.token_secret),
                })
                .collect(),
            extra_flags: c.apiserver_extra_flags.clone(),
            annotations: serde_json::to_string(&annotations).unwrap_or_else(|_| "{}".into()),
            pod_labels: c
                .pod_labels
                .get(kind.name())
                .into_iter()
                .flatten()
                .map(|(k, v)| {
                    let quoted = serde_json::to_string(v).unwrap_or_else(|_| "\"\"".into());
                    (k.clone(), quoted)
                })
                .collect(),
        }
    }
}

/// One control-plane (or optional) component: its kind and its rendered
/// handlebars templates.
#[derive(Debug, Clone)]
pub struct ControlPlaneComponent {
    kind: Kind,
    inner: HandlebarsComponent<Values>,
}

impl ControlPlaneComponent {
    /// The component `kind` of a loaded config.
    pub fn new(l: &Loaded, kind: Kind) -> ControlPlaneComponent {
        let templates: BTreeMap<String, String> = kind
            .templates()
            .iter()
            .map(|(f, s)| (f.to_string(), s.to_string()))
            .collect();
        ControlPlaneComponent {
            kind,
            inner: HandlebarsComponent::new(
                kind.name(),
                NAMESPACE,
                templates,
                Values::new(l, kind),
            ),
        }
    }

    /// Which component.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The values the templates see.
    pub fn values(&self) -> &Values {
        self.inner.config()
    }
}

impl Component for ControlPlaneComponent {
    fn name(&self) -> &str {
        self.kind.name()
    }

    fn namespace(&self) -> &str {
        NAMESPACE
    }

    fn render_manifests(&self) -> Result<BTreeMap<String, String>, BoxError> {
        self.inner.render_manifests()
    }
}
