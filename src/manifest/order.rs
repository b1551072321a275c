//! Helm's `InstallOrder` kind sort (`releaseutil.kind_sorter`).
//!
//! Known kinds sort by their rank in the install order; unknown kinds come
//! after all known ones, sorted byte-wise by kind name. The sort is stable,
//! so objects of the same kind keep their file/document order.
use std::cmp::Ordering;

/// Helm v3's install order, first to last.
pub const INSTALL_ORDER: &[&str] = &[
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
];

/// Helm v3's uninstall order, first to last.
pub const UNINSTALL_ORDER: &[&str] = &[
    "APIService",
    "Ingress",
    "IngressClass",
    "Service",
    "CronJob",
    "Job",
    "StatefulSet",
    "HorizontalPodAutoscaler",
    "Deployment",
    "ReplicaSet",
    "ReplicationController",
    "Pod",
    "DaemonSet",
    "RoleBindingList",
    "RoleBinding",
    "RoleList",
    "Role",
    "ClusterRoleBindingList",
    "ClusterRoleBinding",
    "ClusterRoleList",
    "ClusterRole",
    "CustomResourceDefinition",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "ConfigMap",
    "SecretList",
    "Secret",
    "ServiceAccount",
    "PodDisruptionBudget",
    "PodSecurityPolicy",
    "LimitRange",
    "ResourceQuota",
    "NetworkPolicy",
    "Namespace",
    "PriorityClass",
];

/// Helm's `lessByKind` as an ordering over kind names for a given order.
pub fn compare_kinds(order: &[&str], a: &str, b: &str) -> Ordering {
    let rank = |k: &str| order.iter().position(|x| *x == k);
    match (rank(a), rank(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.as_bytes().cmp(b.as_bytes()),
    }
}

/// Stable-sorts items by kind in install order.
pub fn sort_by_install_order<T>(items: &mut [T], kind: impl Fn(&T) -> &str) {
    items.sort_by(|a, b| compare_kinds(INSTALL_ORDER, kind(a), kind(b)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_first_unknown_alphabetical_stable() {
        let mut v = vec![
            ("Zeta", 0),
            ("Deployment", 1),
            ("", 2),
            ("Namespace", 3),
            ("Alpha", 4),
            ("Deployment", 5),
            ("Service", 6),
        ];
        sort_by_install_order(&mut v, |x| x.0);
        let got: Vec<_> = v.iter().map(|x| x.1).collect();
        assert_eq!(got, [3, 6, 1, 5, 2, 4, 0]);
    }
}
