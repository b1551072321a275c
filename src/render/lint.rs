//! The `helm lint` rules that need rendering: the render stage's side of
//! [`crate::chart::lint`].
//!
//! [`Linter`] renders a chart as `helm lint` does (release
//! `test-release`, default capabilities, no YAML decoding of the output) for
//! the chart module's rendered-template rules (YAML validity, object names,
//! selectors), and [`deprecation_warning`] is the deprecated-API rule:
//! Kubernetes' `deprecation.WarningMessage` for API versions that client-go
//! v0.32 still registers.
use super::objects::KubeVersion;
use super::pipeline::{prepare_values, render_files, RenderOptions};
use super::values::{coalesce_values, Map, Warnings};
use crate::chart::component::BoxError;
use crate::chart::lint::LintRenderer;
use crate::chart::Chart;
use crate::template::{Engine, EngineOptions};
use crate::yaml::Node;
use std::collections::BTreeMap;

/// Renders for `helm lint`, in Helm's lint mode (`required` and `fail`
/// log instead of failing; see [`LintRenderer::take_log`]).
#[derive(Debug, Clone, Default)]
pub struct Linter {
    /// User values (`--set`, `-f`) used while rendering.
    pub values: Map,
    /// `--kube-version`, if given.
    pub kube_version: Option<String>,
    /// `--skip-schema-validation`: the template rule renders without
    /// checking values against the charts' schemas (Helm v3.17.2 still
    /// runs the values.yaml rule's check).
    pub skip_schema_validation: bool,
    log: std::cell::RefCell<Vec<String>>,
}

impl LintRenderer for Linter {
    fn render_for_lint(
        &self,
        chart: &Chart,
        namespace: &str,
    ) -> Result<BTreeMap<String, String>, BoxError> {
        let opts = RenderOptions {
            release_name: "test-release".into(),
            namespace: namespace.to_string(),
            kube_version: self.kube_version.clone(),
            skip_schema_validation: self.skip_schema_validation,
            lint: true,
            ..RenderOptions::default()
        };
        let mut engine = Engine::new(EngineOptions {
            lint_mode: true,
            ..EngineOptions::default()
        });
        // Helm's template rule coalesces the values twice (`CoalesceValues`,
        // then again in `ToRenderValues`), logging what each pass skips,
        // before anything renders.
        let mut w = Warnings::default();
        if let Ok((processed, vals)) = prepare_values(chart, &self.values, &mut w) {
            let _ = coalesce_values(&mut w, &processed, &vals, false);
        }
        self.log.borrow_mut().extend(w.0);
        let r = render_files(&mut engine, chart, &self.values, &opts).map_err(BoxError::from);
        self.log.borrow_mut().extend(engine.take_log());
        r
    }

    fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.borrow_mut())
    }

    fn validate_values_schema(&self, values: &Node, schema: &[u8]) -> Result<(), BoxError> {
        // Helm's values rule: the user values coalesced over values.yaml
        // as tables only (`CoalesceTables`), subcharts' values untouched;
        // what it would warn about is not logged.
        let mut map = self.values.clone();
        if let Node::Map(m) = values {
            let mut w = Warnings::default();
            super::values::coalesce_tables(&mut w, &mut map, m, "", false);
            self.log.borrow_mut().extend(w.0);
        }
        if schema.is_empty() {
            return Ok(());
        }
        Ok(super::schema::validate_single(&map, schema)?)
    }

    fn deprecation(&self, api_version: &str, kind: &str) -> Option<String> {
        let (major, minor) = self.lint_kube_version();
        deprecation_warning(api_version, kind, major, minor)
    }
}

/// The Kubernetes version Helm v3.17's lint checks deprecations against
/// when `--kube-version` is not given: that of its client-go (v0.32).
const LINT_KUBE_VERSION: (u32, u32) = (1, 32);

impl Linter {
    /// Lints an in-memory chart with every rule of `helm lint`, rendering
    /// it with this renderer's values and Kubernetes version, in
    /// `namespace` (see [`crate::chart::lint::lint_chart`]).
    ///
    /// ```
    /// let mut manifests = std::collections::BTreeMap::new();
    /// manifests.insert(
    ///     "cm.yaml".to_string(),
    ///     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n".to_string(),
    /// );
    /// let chart = rudder::chart::chart_from_manifests("app", "default", &manifests)?;
    /// let result = rudder::render::lint::Linter::default().lint_chart(&chart, "default");
    /// assert!(!result.failed(true), "{:?}", result.messages);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lint_chart(&self, chart: &Chart, namespace: &str) -> crate::chart::lint::LintResult {
        crate::chart::lint::lint_chart(
            chart,
            &crate::chart::lint::LintOptions {
                namespace: namespace.to_string(),
                renderer: self,
            },
        )
    }

    /// `(major, minor)` of `--kube-version`, or Helm's lint default.
    fn lint_kube_version(&self) -> (u32, u32) {
        self.kube_version
            .as_deref()
            .and_then(|v| KubeVersion::parse(v).ok())
            .and_then(|k| Some((k.major.parse().ok()?, k.minor.parse().ok()?)))
            .unwrap_or(LINT_KUBE_VERSION)
    }
}

/// `(group/version, kind, deprecated in (major, minor), removed in, replacement)`.
type Deprecation = (
    &'static str,
    &'static str,
    (u32, u32),
    Option<(u32, u32)>,
    Option<&'static str>,
);

const DEPRECATIONS: &[Deprecation] = &[
    (
        "extensions/v1beta1",
        "Ingress",
        (1, 14),
        Some((1, 22)),
        Some("networking.k8s.io/v1 Ingress"),
    ),
    (
        "networking.k8s.io/v1beta1",
        "Ingress",
        (1, 19),
        Some((1, 22)),
        Some("networking.k8s.io/v1 Ingress"),
    ),
    (
        "networking.k8s.io/v1beta1",
        "IngressClass",
        (1, 19),
        Some((1, 22)),
        Some("networking.k8s.io/v1 IngressClass"),
    ),
    (
        "policy/v1beta1",
        "PodDisruptionBudget",
        (1, 21),
        Some((1, 25)),
        Some("policy/v1 PodDisruptionBudget"),
    ),
    (
        "batch/v1beta1",
        "CronJob",
        (1, 21),
        Some((1, 25)),
        Some("batch/v1 CronJob"),
    ),
    (
        "autoscaling/v2beta1",
        "HorizontalPodAutoscaler",
        (1, 22),
        Some((1, 25)),
        Some("autoscaling/v2 HorizontalPodAutoscaler"),
    ),
    (
        "autoscaling/v2beta2",
        "HorizontalPodAutoscaler",
        (1, 23),
        Some((1, 26)),
        Some("autoscaling/v2 HorizontalPodAutoscaler"),
    ),
    (
        "discovery.k8s.io/v1beta1",
        "EndpointSlice",
        (1, 21),
        Some((1, 25)),
        Some("discovery.k8s.io/v1 EndpointSlice"),
    ),
    (
        "events.k8s.io/v1beta1",
        "Event",
        (1, 22),
        Some((1, 25)),
        Some("events.k8s.io/v1 Event"),
    ),
    (
        "rbac.authorization.k8s.io/v1beta1",
        "Role",
        (1, 17),
        Some((1, 22)),
        Some("rbac.authorization.k8s.io/v1 Role"),
    ),
    (
        "rbac.authorization.k8s.io/v1beta1",
        "RoleBinding",
        (1, 17),
        Some((1, 22)),
        Some("rbac.authorization.k8s.io/v1 RoleBinding"),
    ),
    (
        "rbac.authorization.k8s.io/v1beta1",
        "ClusterRole",
        (1, 17),
        Some((1, 22)),
        Some("rbac.authorization.k8s.io/v1 ClusterRole"),
    ),
    (
        "rbac.authorization.k8s.io/v1beta1",
        "ClusterRoleBinding",
        (1, 17),
        Some((1, 22)),
        Some("rbac.authorization.k8s.io/v1 ClusterRoleBinding"),
    ),
    (
        "storage.k8s.io/v1beta1",
        "StorageClass",
        (1, 19),
        Some((1, 22)),
        Some("storage.k8s.io/v1 StorageClass"),
    ),
    (
        "storage.k8s.io/v1beta1",
        "VolumeAttachment",
        (1, 19),
        Some((1, 22)),
        Some("storage.k8s.io/v1 VolumeAttachment"),
    ),
    (
        "storage.k8s.io/v1beta1",
        "CSIDriver",
        (1, 19),
        Some((1, 22)),
        Some("storage.k8s.io/v1 CSIDriver"),
    ),
    (
        "storage.k8s.io/v1beta1",
        "CSINode",
        (1, 17),
        Some((1, 22)),
        Some("storage.k8s.io/v1 CSINode"),
    ),
    (
        "storage.k8s.io/v1beta1",
        "CSIStorageCapacity",
        (1, 24),
        Some((1, 27)),
        Some("storage.k8s.io/v1 CSIStorageCapacity"),
    ),
    (
        "admissionregistration.k8s.io/v1beta1",
        "MutatingWebhookConfiguration",
        (1, 16),
        Some((1, 22)),
        Some("admissionregistration.k8s.io/v1 MutatingWebhookConfiguration"),
    ),
    (
        "admissionregistration.k8s.io/v1beta1",
        "ValidatingWebhookConfiguration",
        (1, 16),
        Some((1, 22)),
        Some("admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration"),
    ),
    (
        "apiextensions.k8s.io/v1beta1",
        "CustomResourceDefinition",
        (1, 16),
        Some((1, 22)),
        Some("apiextensions.k8s.io/v1 CustomResourceDefinition"),
    ),
    (
        "scheduling.k8s.io/v1beta1",
        "PriorityClass",
        (1, 14),
        Some((1, 22)),
        Some("scheduling.k8s.io/v1 PriorityClass"),
    ),
    (
        "coordination.k8s.io/v1beta1",
        "Lease",
        (1, 19),
        Some((1, 22)),
        Some("coordination.k8s.io/v1 Lease"),
    ),
    (
        "certificates.k8s.io/v1beta1",
        "CertificateSigningRequest",
        (1, 19),
        Some((1, 22)),
        Some("certificates.k8s.io/v1 CertificateSigningRequest"),
    ),
    (
        "node.k8s.io/v1beta1",
        "RuntimeClass",
        (1, 20),
        Some((1, 25)),
        Some("node.k8s.io/v1 RuntimeClass"),
    ),
    (
        "flowcontrol.apiserver.k8s.io/v1beta1",
        "FlowSchema",
        (1, 23),
        Some((1, 26)),
        Some("flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema"),
    ),
    (
        "flowcontrol.apiserver.k8s.io/v1beta1",
        "PriorityLevelConfiguration",
        (1, 23),
        Some((1, 26)),
        Some("flowcontrol.apiserver.k8s.io/v1beta3 PriorityLevelConfiguration"),
    ),
    (
        "flowcontrol.apiserver.k8s.io/v1beta2",
        "FlowSchema",
        (1, 26),
        Some((1, 29)),
        Some("flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema"),
    ),
    (
        "flowcontrol.apiserver.k8s.io/v1beta2",
        "PriorityLevelConfiguration",
        (1, 26),
        Some((1, 29)),
        Some("flowcontrol.apiserver.k8s.io/v1beta3 PriorityLevelConfiguration"),
    ),
    (
        "flowcontrol.apiserver.k8s.io/v1beta3",
        "FlowSchema",
        (1, 29),
        Some((1, 32)),
        Some("flowcontrol.apiserver.k8s.io/v1 FlowSchema"),
    ),
    (
        "flowcontrol.apiserver.k8s.io/v1beta3",
        "PriorityLevelConfiguration",
        (1, 29),
        Some((1, 32)),
        Some("flowcontrol.apiserver.k8s.io/v1 PriorityLevelConfiguration"),
    ),
    (
        "extensions/v1beta1",
        "DaemonSet",
        (1, 8),
        Some((1, 16)),
        Some("apps/v1 DaemonSet"),
    ),
    (
        "extensions/v1beta1",
        "Deployment",
        (1, 8),
        Some((1, 16)),
        Some("apps/v1 Deployment"),
    ),
    (
        "extensions/v1beta1",
        "ReplicaSet",
        (1, 8),
        Some((1, 16)),
        Some("apps/v1 ReplicaSet"),
    ),
    (
        "extensions/v1beta1",
        "NetworkPolicy",
        (1, 9),
        Some((1, 16)),
        Some("networking.k8s.io/v1 NetworkPolicy"),
    ),
    (
        "apps/v1beta1",
        "Deployment",
        (1, 8),
        Some((1, 16)),
        Some("apps/v1 Deployment"),
    ),
    (
        "apps/v1beta1",
        "StatefulSet",
        (1, 8),
        Some((1, 16)),
        Some("apps/v1 StatefulSet"),
    ),
    (
        "apps/v1beta2",
        "Deployment",
        (1, 9),
        Some((1, 16)),
        Some("apps/v1 Deployment"),
    ),
    (
        "apps/v1beta2",
        "StatefulSet",
        (1, 9),
        Some((1, 16)),
        Some("apps/v1 StatefulSet"),
    ),
    (
        "apps/v1beta2",
        "DaemonSet",
        (1, 9),
        Some((1, 16)),
        Some("apps/v1 DaemonSet"),
    ),
    (
        "apps/v1beta2",
        "ReplicaSet",
        (1, 9),
        Some((1, 16)),
        Some("apps/v1 ReplicaSet"),
    ),
];

/// The deprecated-API warning for an object, if its API version is
/// deprecated at the given Kubernetes version.
pub fn deprecation_warning(
    api_version: &str,
    kind: &str,
    major: u32,
    minor: u32,
) -> Option<String> {
    let (_, _, dep, removed, replacement) = DEPRECATIONS
        .iter()
        .find(|(gv, k, ..)| *gv == api_version && *k == kind)?;
    if (major, minor) < *dep {
        return None;
    }
    let mut msg = format!(
        "{api_version} {kind} is deprecated in v{}.{}+",
        dep.0, dep.1
    );
    if let Some(r) = removed {
        msg.push_str(&format!(", unavailable in v{}.{}+", r.0, r.1));
    }
    if let Some(r) = replacement {
        msg.push_str("; use ");
        msg.push_str(r);
    }
    Some(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hpa_v2beta2_message() {
        assert_eq!(
            deprecation_warning("autoscaling/v2beta2", "HorizontalPodAutoscaler", 1, 32).unwrap(),
            "autoscaling/v2beta2 HorizontalPodAutoscaler is deprecated in v1.23+, unavailable in v1.26+; use autoscaling/v2 HorizontalPodAutoscaler"
        );
        assert!(
            deprecation_warning("autoscaling/v2beta2", "HorizontalPodAutoscaler", 1, 22).is_none()
        );
        assert!(deprecation_warning("apps/v1", "Deployment", 1, 32).is_none());
    }
}
