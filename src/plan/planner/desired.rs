//! What the release should be: the chart rendered for the revision the
//! plan writes (with the cluster's version and API resources as
//! `.Capabilities`), the CRDs of `crds/` (created when missing, never
//! updated or deleted), the rendered documents, and the release namespace
//! (`createNamespace`).
use super::action::Start;
use super::documents::{note_crd_kind, parse_doc, plan_key};
use super::record::{digest, values_digest};
use super::{Draft, PlanError, Planner};
use crate::cluster::ObjectKey;
use crate::plan::crds::CrdDef;
use crate::plan::input::DesiredRelease;
use crate::plan::model::*;
use crate::render::{self, RenderOptions, Rendered};
use serde_json::Value;
use std::cell::OnceCell;

/// The chart rendered for the revision the plan writes.
pub(super) struct Output {
    /// What the chart rendered.
    pub(super) rendered: Rendered,
    /// The release manifest of the rendered templates.
    pub(super) manifest: String,
    /// Warnings for the plan (values no template reads).
    pub(super) warnings: Vec<String>,
    /// The revision the plan goes to.
    pub(super) to: ToRevision,
    /// Whether the render is an upgrade's (`.Release.IsUpgrade`).
    pub(super) is_upgrade: bool,
    /// Whether a template reads values, once asked.
    reads: OnceCell<bool>,
}

impl Output {
    /// Whether a template of the chart reads values (worked out at most
    /// once, and only when asked).
    pub(super) fn reads_values(&self, d: &DesiredRelease) -> bool {
        *self
            .reads
            .get_or_init(|| render::values::reads_values(&d.chart))
    }
}

/// A rendered document: its template, its text, its object.
pub(super) struct Desired<'r> {
    /// The template it came from.
    pub(super) source: String,
    /// The document's text.
    pub(super) text: &'r str,
    /// The parsed document.
    pub(super) value: Value,
}

/// The desired objects by their (trimmed) text. foldhash: the keys are
/// whole documents, SipHash is slow on them.
pub(super) fn by_text<'a>(desired: &'a [Desired<'_>]) -> foldhash::HashMap<&'a str, &'a Value> {
    desired.iter().map(|d| (d.text.trim(), &d.value)).collect()
}

impl Planner<'_> {
    /// Renders the chart for the revision the plan writes.
    pub(super) fn render(&self, r: &Draft<'_, '_>, start: &Start<'_>) -> Result<Output, PlanError> {
        let d = r.d;
        let is_upgrade = matches!(
            start.action,
            ReleaseAction::Upgrade | ReleaseAction::Recover
        );
        let ropts = RenderOptions {
            release_name: d.name.clone(),
            namespace: d.namespace.clone(),
            revision: start.next as i64,
            is_upgrade,
            kube_version: Some(r.ctx.server_version.clone()),
            api_versions: r.ctx.api_versions.clone(),
            ..RenderOptions::default()
        };
        let chart_label = format!("{}-{}", d.chart.metadata.name, d.chart.metadata.version);
        let rendered = self
            .renderer
            .render(d, &ropts)
            .map_err(|source| PlanError::Render {
                release: r.rref.clone(),
                chart: chart_label.clone(),
                source: Box::new(source),
            })?;
        let manifest = render::output::release_manifest(&rendered, false);
        let to = ToRevision {
            revision: start.next,
            chart: chart_label.clone(),
            app_version: d.chart.metadata.app_version.clone(),
            manifest_digest: digest(manifest.as_bytes()),
            values_digest: values_digest(&d.values),
        };
        let mut out = Output {
            rendered,
            manifest,
            warnings: Vec::new(),
            to,
            is_upgrade,
            reads: OnceCell::new(),
        };
        // Values that no template reads change nothing: say so, and do not
        // let them alone make a new revision.
        if !d.values.is_empty() && !out.reads_values(d) {
            let keys: Vec<&str> = d.values.keys().map(String::as_str).collect();
            out.warnings.push(format!(
                "values given ({}) are ignored: no template of chart {chart_label} reads values{}",
                keys.join(", "),
                if d.chart.values.is_none() {
                    ", and it has no default values (a chart built from a component renders fixed manifests)"
                } else {
                    ""
                }
            ));
        }
        Ok(out)
    }
}

impl Draft<'_, '_> {
    /// The CRDs of `crds/`: created when missing, never updated or
    /// deleted. Also their definitions, for the objects of their kinds.
    pub(super) fn crds_dir(
        &mut self,
        rendered: &Rendered,
    ) -> Result<(Vec<ObjectChange>, Vec<CrdDef>), PlanError> {
        let d = self.d;
        let opts = &d.options;
        let mut objects = Vec::new();
        let mut own_crds = Vec::new();
        for crd in &rendered.crds {
            let text = String::from_utf8_lossy(&crd.content);
            for doc in crate::manifest::split::split_manifests(&text) {
                let value = parse_doc(&self.rref, &crd.path, doc)?;
                if value.is_null() {
                    continue;
                }
                let Some(key) = ObjectKey::of(&value) else {
                    return Err(PlanError::Manifest {
                        release: self.rref.clone(),
                        origin: crd.path.clone(),
                        message: "a CRD without apiVersion, kind or metadata.name".into(),
                    });
                };
                note_crd_kind(&value, &mut self.new_kinds);
                own_crds.extend(CrdDef::of(&value, &self.rref, true));
                let pkey = plan_key(&value, &key);
                let live = self.get(&key)?;
                let (action, reason) = if live.is_some() {
                    (
                        ObjectAction::Skip,
                        "CRD exists; Helm never updates or deletes CRDs from crds/".to_string(),
                    )
                } else {
                    (ObjectAction::Create, "CRD absent live".to_string())
                };
                objects.push(ObjectChange {
                    key: pkey,
                    action,
                    stage: Stage::Crds,
                    reason,
                    changed: Vec::new(),
                    diff: String::new(),
                    wait: (action == ObjectAction::Create && opts.waits()).then(|| WaitRule {
                        strategy: opts.wait_strategy,
                        rule: "CustomResourceDefinition: condition Established=True".into(),
                    }),
                    desired: Some(value),
                    planned_crd: None,
                });
            }
        }
        Ok((objects, own_crds))
    }

    /// The rendered documents, empty ones left out. CRDs among them also
    /// define kinds for this release (added to `own_crds`).
    pub(super) fn desired_docs<'r>(
        &mut self,
        rendered: &'r Rendered,
        own_crds: &mut Vec<CrdDef>,
    ) -> Result<Vec<Desired<'r>>, PlanError> {
        let mut desired = Vec::with_capacity(rendered.manifests.len());
        for m in &rendered.manifests {
            let value = parse_doc(&self.rref, &m.source, &m.content)?;
            if value.is_null() {
                continue;
            }
            note_crd_kind(&value, &mut self.new_kinds);
            own_crds.extend(CrdDef::of(&value, &self.rref, false));
            desired.push(Desired {
                source: m.source.clone(),
                text: m.content.as_str(),
                value,
            });
        }
        Ok(desired)
    }

    /// The release namespace, created when `createNamespace` asks for it,
    /// the chart does not declare it, and it is absent live.
    pub(super) fn release_namespace(
        &mut self,
        desired: &[Desired<'_>],
    ) -> Result<Option<ObjectChange>, PlanError> {
        let d = self.d;
        if !d.options.create_namespace {
            return Ok(None);
        }
        let key = ObjectKey::new("", "Namespace", "", &d.namespace);
        let declared = desired
            .iter()
            .any(|doc| ObjectKey::of(&doc.value).as_ref() == Some(&key));
        if declared || self.get(&key)?.is_some() {
            return Ok(None);
        }
        let ns = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": d.namespace},
        });
        Ok(Some(ObjectChange {
            key: plan_key(&ns, &key),
            action: ObjectAction::Create,
            stage: Stage::Namespaces,
            reason: "release namespace absent (createNamespace)".into(),
            changed: Vec::new(),
            diff: String::new(),
            wait: None,
            desired: Some(ns),
            planned_crd: None,
        }))
    }
}
