//! Which built-in Kubernetes kinds are namespaced.
//!
//! The table lists the kinds served by a stock API server (Kubernetes 1.32),
//! keyed by API group and kind. A kind that is not in the table is unknown to
//! rudder: callers decide what to do with it (the chart builder looks at the
//! chart's own CustomResourceDefinitions, and otherwise treats the kind as
//! namespaced, which is what almost every custom resource is).
use serde::{Deserialize, Serialize};

/// Whether objects of a kind live in a namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Scope {
    /// The object lives in a namespace.
    Namespaced,
    /// The object is cluster-wide; a `metadata.namespace` on it is ignored.
    Cluster,
}

const CLUSTER: &[(&str, &str)] = &[
    ("", "ComponentStatus"),
    ("", "Namespace"),
    ("", "Node"),
    ("", "PersistentVolume"),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    ("authentication.k8s.io", "SelfSubjectReview"),
    ("authentication.k8s.io", "TokenReview"),
    ("authorization.k8s.io", "SelfSubjectAccessReview"),
    ("authorization.k8s.io", "SelfSubjectRulesReview"),
    ("authorization.k8s.io", "SubjectAccessReview"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("certificates.k8s.io", "ClusterTrustBundle"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("networking.k8s.io", "IngressClass"),
    ("networking.k8s.io", "IPAddress"),
    ("networking.k8s.io", "ServiceCIDR"),
    ("node.k8s.io", "RuntimeClass"),
    ("policy", "PodSecurityPolicy"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("resource.k8s.io", "DeviceClass"),
    ("resource.k8s.io", "ResourceSlice"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("storage.k8s.io", "VolumeAttributesClass"),
    ("storagemigration.k8s.io", "StorageVersionMigration"),
    ("internal.apiserver.k8s.io", "StorageVersion"),
];

const NAMESPACED: &[(&str, &str)] = &[
    ("", "Binding"),
    ("", "ConfigMap"),
    ("", "Endpoints"),
    ("", "Event"),
    ("", "LimitRange"),
    ("", "PersistentVolumeClaim"),
    ("", "Pod"),
    ("", "PodTemplate"),
    ("", "ReplicationController"),
    ("", "ResourceQuota"),
    ("", "Secret"),
    ("", "Service"),
    ("", "ServiceAccount"),
    ("apps", "ControllerRevision"),
    ("apps", "DaemonSet"),
    ("apps", "Deployment"),
    ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"),
    ("authorization.k8s.io", "LocalSubjectAccessReview"),
    ("autoscaling", "HorizontalPodAutoscaler"),
    ("batch", "CronJob"),
    ("batch", "Job"),
    ("coordination.k8s.io", "Lease"),
    ("coordination.k8s.io", "LeaseCandidate"),
    ("discovery.k8s.io", "EndpointSlice"),
    ("events.k8s.io", "Event"),
    ("networking.k8s.io", "Ingress"),
    ("networking.k8s.io", "NetworkPolicy"),
    ("policy", "PodDisruptionBudget"),
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("resource.k8s.io", "ResourceClaim"),
    ("resource.k8s.io", "ResourceClaimTemplate"),
    ("resource.k8s.io", "PodSchedulingContext"),
    ("storage.k8s.io", "CSIStorageCapacity"),
    // Older groups that served the same kinds.
    ("extensions", "DaemonSet"),
    ("extensions", "Deployment"),
    ("extensions", "Ingress"),
    ("extensions", "NetworkPolicy"),
    ("extensions", "ReplicaSet"),
];

/// The scope of a built-in kind in an API group (`""` is the core group), or
/// `None` when the kind is not built in.
///
/// ```
/// use rudder::manifest::{builtin_scope, Scope};
/// assert_eq!(builtin_scope("apps", "Deployment"), Some(Scope::Namespaced));
/// assert_eq!(builtin_scope("rbac.authorization.k8s.io", "ClusterRole"), Some(Scope::Cluster));
/// assert_eq!(builtin_scope("example.com", "Widget"), None);
/// ```
pub fn builtin_scope(group: &str, kind: &str) -> Option<Scope> {
    if CLUSTER.iter().any(|(g, k)| *g == group && *k == kind) {
        Some(Scope::Cluster)
    } else if NAMESPACED.iter().any(|(g, k)| *g == group && *k == kind) {
        Some(Scope::Namespaced)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_do_not_overlap() {
        for (g, k) in CLUSTER {
            assert!(!NAMESPACED.contains(&(g, k)), "{g}/{k} in both tables");
        }
    }

    #[test]
    fn core_kinds() {
        assert_eq!(builtin_scope("", "Namespace"), Some(Scope::Cluster));
        assert_eq!(builtin_scope("", "Service"), Some(Scope::Namespaced));
        assert_eq!(builtin_scope("apps", "Service"), None);
    }
}
