//! The kinds the simulated API server serves: a built-in table (Kubernetes
//! 1.32's discovery, names as `kubectl api-resources` prints them) plus the
//! kinds of the CustomResourceDefinitions stored in the cluster.
use crate::cluster::ApiResource;
use crate::manifest::{builtin_scope, Scope};
use serde_json::Value;

/// `(group, preferred version, kind, plural, short names)`.
const BUILTIN: &[(&str, &str, &str, &str, &[&str])] = &[
    ("", "v1", "Binding", "bindings", &[]),
    ("", "v1", "ComponentStatus", "componentstatuses", &["cs"]),
    ("", "v1", "ConfigMap", "configmaps", &["cm"]),
    ("", "v1", "Endpoints", "endpoints", &["ep"]),
    ("", "v1", "Event", "events", &["ev"]),
    ("", "v1", "LimitRange", "limitranges", &["limits"]),
    ("", "v1", "Namespace", "namespaces", &["ns"]),
    ("", "v1", "Node", "nodes", &["no"]),
    (
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        &["pvc"],
    ),
    ("", "v1", "PersistentVolume", "persistentvolumes", &["pv"]),
    ("", "v1", "Pod", "pods", &["po"]),
    ("", "v1", "PodTemplate", "podtemplates", &[]),
    (
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        &["rc"],
    ),
    ("", "v1", "ResourceQuota", "resourcequotas", &["quota"]),
    ("", "v1", "Secret", "secrets", &[]),
    ("", "v1", "ServiceAccount", "serviceaccounts", &["sa"]),
    ("", "v1", "Service", "services", &["svc"]),
    (
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        &[],
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        &[],
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        &[],
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        &[],
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        &["crd", "crds"],
    ),
    (
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        "apiservices",
        &[],
    ),
    (
        "apps",
        "v1",
        "ControllerRevision",
        "controllerrevisions",
        &[],
    ),
    ("apps", "v1", "DaemonSet", "daemonsets", &["ds"]),
    ("apps", "v1", "Deployment", "deployments", &["deploy"]),
    ("apps", "v1", "ReplicaSet", "replicasets", &["rs"]),
    ("apps", "v1", "StatefulSet", "statefulsets", &["sts"]),
    (
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        &[],
    ),
    (
        "authentication.k8s.io",
        "v1",
        "TokenReview",
        "tokenreviews",
        &[],
    ),
    (
        "authorization.k8s.io",
        "v1",
        "LocalSubjectAccessReview",
        "localsubjectaccessreviews",
        &[],
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        &[],
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        &[],
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        "subjectaccessreviews",
        &[],
    ),
    (
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        &["hpa"],
    ),
    ("batch", "v1", "CronJob", "cronjobs", &["cj"]),
    ("batch", "v1", "Job", "jobs", &[]),
    (
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        "certificatesigningrequests",
        &["csr"],
    ),
    (
        "certificates.k8s.io",
        "v1alpha1",
        "ClusterTrustBundle",
        "clustertrustbundles",
        &[],
    ),
    ("coordination.k8s.io", "v1", "Lease", "leases", &[]),
    (
        "coordination.k8s.io",
        "v1alpha2",
        "LeaseCandidate",
        "leasecandidates",
        &[],
    ),
    (
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        "endpointslices",
        &[],
    ),
    ("events.k8s.io", "v1", "Event", "events", &["ev"]),
    (
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "FlowSchema",
        "flowschemas",
        &[],
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "PriorityLevelConfiguration",
        "prioritylevelconfigurations",
        &[],
    ),
    (
        "internal.apiserver.k8s.io",
        "v1alpha1",
        "StorageVersion",
        "storageversions",
        &[],
    ),
    ("networking.k8s.io", "v1", "Ingress", "ingresses", &["ing"]),
    (
        "networking.k8s.io",
        "v1",
        "IngressClass",
        "ingressclasses",
        &[],
    ),
    (
        "networking.k8s.io",
        "v1beta1",
        "IPAddress",
        "ipaddresses",
        &["ip"],
    ),
    (
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        &["netpol"],
    ),
    (
        "networking.k8s.io",
        "v1beta1",
        "ServiceCIDR",
        "servicecidrs",
        &[],
    ),
    ("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", &[]),
    (
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        &["pdb"],
    ),
    (
        "policy",
        "v1beta1",
        "PodSecurityPolicy",
        "podsecuritypolicies",
        &["psp"],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        &[],
    ),
    ("rbac.authorization.k8s.io", "v1", "Role", "roles", &[]),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        &[],
    ),
    (
        "resource.k8s.io",
        "v1beta1",
        "DeviceClass",
        "deviceclasses",
        &[],
    ),
    (
        "resource.k8s.io",
        "v1alpha3",
        "PodSchedulingContext",
        "podschedulingcontexts",
        &[],
    ),
    (
        "resource.k8s.io",
        "v1beta1",
        "ResourceClaim",
        "resourceclaims",
        &[],
    ),
    (
        "resource.k8s.io",
        "v1beta1",
        "ResourceClaimTemplate",
        "resourceclaimtemplates",
        &[],
    ),
    (
        "resource.k8s.io",
        "v1beta1",
        "ResourceSlice",
        "resourceslices",
        &[],
    ),
    (
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        &["pc"],
    ),
    ("storage.k8s.io", "v1", "CSIDriver", "csidrivers", &[]),
    ("storage.k8s.io", "v1", "CSINode", "csinodes", &[]),
    (
        "storage.k8s.io",
        "v1",
        "CSIStorageCapacity",
        "csistoragecapacities",
        &[],
    ),
    (
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
        &["sc"],
    ),
    (
        "storage.k8s.io",
        "v1",
        "VolumeAttachment",
        "volumeattachments",
        &[],
    ),
    (
        "storage.k8s.io",
        "v1beta1",
        "VolumeAttributesClass",
        "volumeattributesclasses",
        &["vac"],
    ),
    (
        "storagemigration.k8s.io",
        "v1alpha1",
        "StorageVersionMigration",
        "storageversionmigrations",
        &[],
    ),
];

/// The built-in kinds, in table order (core first).
pub(crate) fn builtin() -> Vec<ApiResource> {
    BUILTIN
        .iter()
        .map(|(group, version, kind, plural, short)| ApiResource {
            group: (*group).into(),
            version: (*version).into(),
            kind: (*kind).into(),
            plural: (*plural).into(),
            singular: kind.to_ascii_lowercase(),
            short_names: short.iter().map(|s| (*s).to_string()).collect(),
            namespaced: builtin_scope(group, kind) != Some(Scope::Cluster),
        })
        .collect()
}

/// The kind a CustomResourceDefinition object defines, or `None` when it
/// lacks `spec.group` or `spec.names.kind`.
pub(crate) fn from_crd(crd: &Value) -> Option<ApiResource> {
    let spec = crd.get("spec")?;
    let group = spec.get("group")?.as_str()?;
    let names = spec.get("names")?;
    let kind = names.get("kind")?.as_str()?;
    let plural = names
        .get("plural")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| format!("{}s", kind.to_ascii_lowercase()));
    let singular = names
        .get("singular")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_ascii_lowercase());
    let short_names = names
        .get("shortNames")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let namespaced = spec.get("scope").and_then(Value::as_str) != Some("Cluster");
    Some(ApiResource {
        group: group.into(),
        version: crd_version(spec).unwrap_or_else(|| "v1".into()),
        kind: kind.into(),
        plural,
        singular,
        short_names,
        namespaced,
    })
}

/// The storage version of a CRD spec (else the first served one, else the
/// first listed, else the old `spec.version`).
pub(crate) fn crd_version(spec: &Value) -> Option<String> {
    let versions = spec.get("versions").and_then(Value::as_array);
    let pick = |pred: &dyn Fn(&Value) -> bool| {
        versions.and_then(|vs| {
            vs.iter()
                .find(|v| pred(v))
                .and_then(|v| v.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
    };
    pick(&|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .or_else(|| pick(&|v| v.get("served").and_then(Value::as_bool) != Some(false)))
        .or_else(|| {
            spec.get("version")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of Helm's install order that is a real kind, and every
    /// built-in kind that a 1.32 server serves, is in the table with the
    /// scope `builtin_scope` gives it.
    #[test]
    fn table_covers_install_order_and_scopes() {
        let table = builtin();
        for kind in crate::manifest::order::INSTALL_ORDER {
            if kind.ends_with("List") {
                continue;
            }
            assert!(table.iter().any(|r| r.kind == *kind), "{kind} missing");
        }
        for r in &table {
            assert!(
                builtin_scope(&r.group, &r.kind).is_some(),
                "{}/{}",
                r.group,
                r.kind
            );
        }
        let ns: Vec<_> = table.iter().filter(|r| r.kind == "Namespace").collect();
        assert!(!ns[0].namespaced);
        let mut seen = std::collections::BTreeSet::new();
        for r in &table {
            assert!(
                seen.insert((r.group.clone(), r.kind.clone())),
                "{} twice",
                r.kind
            );
        }
    }
}
