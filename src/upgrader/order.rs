//! The upgrade order, as data: which component needs which, and why.
//!
//! bootstrap-secrets → pod-checkpointer → kube-apiserver → kubernetes →
//! calico → kubelet (only with `--upgrade-kubelets`) → the optional
//! components, each needing the one before it. The reasons are
//! Lokomotive's (`pkg/platform/platform_test.go` and the commits quoted in
//! its history) and the Kubernetes version-skew policy.
use super::config::ClusterConfig;
use super::control_plane::Kind;
use serde::Serialize;

/// One edge of the order: `component` needs `needs` to be ready first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Edge {
    /// The component.
    pub component: Kind,
    /// The component it needs (the one before it).
    pub needs: Kind,
    /// Why.
    pub reason: &'static str,
}

/// Why `kind` comes right after the component before it.
pub fn reason(kind: Kind) -> &'static str {
    match kind {
        Kind::BootstrapSecrets => "",
        Kind::PodCheckpointer => {
            "bootstrap-secrets goes first, to allow nodes to proceed with the bootstrapping process (Lokomotive #916, #949)"
        }
        Kind::KubeApiserver => {
            "pod-checkpointer must be up to date and running before kube-apiserver is upgraded: if that upgrade fails, the checkpointed pods keep the API available (Lokomotive #72, 438f77a92)"
        }
        Kind::Kubernetes => {
            "version-skew policy: kube-apiserver is upgraded before kube-controller-manager, kube-scheduler and kube-proxy"
        }
        Kind::Calico => "calico requires a functional kube-proxy to converge (Lokomotive #918)",
        Kind::Kubelet => {
            "version-skew policy: kubelets are upgraded after the control plane, and after calico so that restarted kubelets have pod networking"
        }
        Kind::NodeLocalDns | Kind::MetricsServer => {
            "optional components are installed after the control plane: they require pod networking"
        }
    }
}

/// The components of a config, in upgrade order.
pub fn components(config: &ClusterConfig, upgrade_kubelets: bool) -> Vec<Kind> {
    let mut v = vec![
        Kind::BootstrapSecrets,
        Kind::PodCheckpointer,
        Kind::KubeApiserver,
        Kind::Kubernetes,
        Kind::Calico,
    ];
    if upgrade_kubelets && config.self_hosted_kubelet {
        v.push(Kind::Kubelet);
    }
    let mut optional: Vec<Kind> = config
        .components
        .iter()
        .map(|c| Kind::optional(*c))
        .collect();
    optional.sort();
    v.extend(optional);
    v
}

/// The edges between consecutive components.
pub fn edges(order: &[Kind]) -> Vec<Edge> {
    order
        .windows(2)
        .map(|w| Edge {
            component: w[1],
            needs: w[0],
            reason: reason(w[1]),
        })
        .collect()
}
