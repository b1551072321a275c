//! What the release should be: the chart rendered for the revision the
//! plan writes (with the cluster's version and API resources as
//! `.Capabilities`), the CRDs of `crds/` (created when missing, never
//! updated or deleted), the rendered documents, and the release namespace
//! (`createNamespace`).
use super::action::Start;
use super::applied::{recheck, text_digest};
use super::documents::{note_crd_kind, parse_doc, plan_key};
use super::record::{digest, values_digest};
use super::{Draft, PlanError, Planner};
use crate::cluster::ObjectKey;
use crate::plan::crds::CrdDef;
use crate::plan::input::DesiredRelease;
use crate::plan::model::*;
use crate::release::Release;
use crate::render::{self, Manifest, RenderOptions, Rendered};
use serde_json::Value;
use std::cell::OnceCell;
use std::sync::Arc;

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
pub(super) struct Desired {
    /// The template it came from.
    pub(super) source: String,
    /// The document's text.
    pub(super) text: String,
    /// The object, or why it was not read.
    pub(super) body: Body,
}

/// A rendered document's object.
pub(super) enum Body {
    /// The parsed document.
    Parsed(Value),
    /// Not read: the live object still holds what an apply of this very
    /// text left ([`super::applied`]), so it is unchanged.
    Unread(Unread),
}

/// A document proved unchanged without reading it.
pub(super) struct Unread {
    /// The object's key (the record's, whose digest binds it to the text).
    pub(super) key: PlanKey,
    /// The live object.
    pub(super) live: Arc<Value>,
    /// What the apply left ([`super::applied::applied_entry`]), for the
    /// next record.
    pub(super) state: String,
}

/// What the last manifest's documents of a desired document's text stand
/// for: its parsed object, or the key of one not read.
#[derive(Clone, Copy)]
pub(super) enum Known<'a> {
    /// The parsed document.
    Value(&'a Value),
    /// The key of a document not read.
    Key(&'a PlanKey),
}

/// The desired objects by their (trimmed) text. foldhash: the keys are
/// whole documents, SipHash is slow on them.
pub(super) fn by_text(desired: &[Desired]) -> foldhash::HashMap<&str, Known<'_>> {
    desired
        .iter()
        .map(|d| {
            let known = match &d.body {
                Body::Parsed(v) => Known::Value(v),
                Body::Unread(u) => Known::Key(&u.key),
            };
            (d.text.trim(), known)
        })
        .collect()
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
                    desired: Some(value.into()),
                    planned_crd: None,
                });
            }
        }
        Ok((objects, own_crds))
    }

    /// The rendered documents, empty ones left out. CRDs among them also
    /// define kinds for this release (added to `own_crds`). A document is
    /// not read when the base record says what an apply of its text left
    /// on its object and the live object still holds that
    /// ([`super::applied`]): it is unchanged.
    pub(super) fn desired_docs(
        &mut self,
        manifests: Vec<Manifest>,
        own_crds: &mut Vec<CrdDef>,
        base: Option<&Release>,
    ) -> Result<Vec<Desired>, PlanError> {
        // (Hashed: the keys share long prefixes, slow to compare in order.)
        let applied: Option<foldhash::HashMap<&str, &str>> = base
            .filter(|_| self.base_is_last_deployed)
            .map(|b| &b.applied)
            .filter(|a| !a.is_empty())
            .map(|a| a.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect());
        // Documents whose record entry may say they are unchanged: their
        // key from the render's head, the text digest, the recorded state.
        let mut maybe: Vec<(usize, PlanKey, String, &str)> = Vec::new();
        let mut desired = Vec::with_capacity(manifests.len());
        for (i, m) in manifests.into_iter().enumerate() {
            if let Some(applied) = &applied {
                if let Some((key, state)) = self.recorded(&m.head, applied) {
                    maybe.push((i, key, text_digest(&m.content), state));
                }
            }
            desired.push(Desired {
                source: m.source,
                text: m.content,
                body: Body::Parsed(Value::Null),
            });
        }
        // Their live objects, in one batch; each still as the recorded
        // apply left it stays unread.
        let keys: Vec<ObjectKey> = maybe.iter().map(|(_, k, _, _)| k.object_key()).collect();
        let lives = if keys.is_empty() {
            Vec::new()
        } else {
            self.ctx
                .reads
                .get_many(&keys)
                .map_err(self.cluster_error())?
        };
        for ((i, key, text, recorded), live) in maybe.into_iter().zip(lives) {
            let Some(live) = live else { continue };
            if let Some(state) = recheck(recorded, &text, &live) {
                desired[i].body = Body::Unread(Unread { key, live, state });
            }
        }
        let mut out = Vec::with_capacity(desired.len());
        for mut d in desired {
            if let Body::Parsed(v) = &mut d.body {
                *v = parse_doc(&self.rref, &d.source, &d.text)?;
                if v.is_null() {
                    continue;
                }
                note_crd_kind(v, &mut self.new_kinds);
                own_crds.extend(CrdDef::of(v, &self.rref, false));
            }
            out.push(d);
        }
        Ok(out)
    }

    /// The key a render's head names, and the state the record says an
    /// apply of its document left there; `None` for a CRD (its kinds are
    /// needed), a head without identity, or no record entry.
    fn recorded<'b>(
        &self,
        head: &crate::render::Head,
        applied: &foldhash::HashMap<&str, &'b str>,
    ) -> Option<(PlanKey, &'b str)> {
        if head.kind == "CustomResourceDefinition" {
            return None;
        }
        let key = self
            .qualify_parts(&head.api_version, &head.kind, &head.name, &head.namespace)
            .ok()?;
        let state = *applied.get(key.object_key().to_string().as_str())?;
        (state.starts_with("sha256:")).then_some((key, state))
    }

    /// The release namespace, created when `createNamespace` asks for it,
    /// the chart does not declare it, and it is absent live.
    pub(super) fn release_namespace(
        &mut self,
        desired: &[Desired],
    ) -> Result<Option<ObjectChange>, PlanError> {
        let d = self.d;
        if !d.options.create_namespace {
            return Ok(None);
        }
        let key = ObjectKey::new("", "Namespace", "", &d.namespace);
        let declared = desired.iter().any(|doc| match &doc.body {
            Body::Parsed(v) => ObjectKey::of(v).as_ref() == Some(&key),
            Body::Unread(u) => u.key.object_key() == key,
        });
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
            desired: Some(ns.into()),
            planned_crd: None,
        }))
    }
}
