//! What an apply removes: the objects of the last manifest that the new
//! one lacks, and those failed revisions left behind; each deleted when
//! its live ownership metadata names this release and kept otherwise,
//! deletes in reverse install order.
use super::action::Start;
use super::documents::{parse_record_manifest, OldDoc};
use super::objects::KeySet;
use super::{Draft, PlanError};
use crate::cluster::ownership;
use crate::manifest::order::{compare_kinds, INSTALL_ORDER};
use crate::plan::model::*;
use crate::release::Status;
use serde_json::Value;

impl Draft<'_, '_> {
    /// The objects of the last manifest (`old_docs`, keyed by `old_keys`)
    /// that the new one (`new_keys`) lacks.
    pub(super) fn prune(
        &mut self,
        old_docs: &[OldDoc],
        old_keys: &[PlanKey],
        new_keys: &KeySet,
    ) -> Result<Vec<ObjectChange>, PlanError> {
        let d = self.d;
        let mut prune = Vec::new();
        for (doc, key) in old_docs.iter().zip(old_keys) {
            // (A document of a desired one's text has its key: only parsed
            // ones get past this.)
            if new_keys.contains(&key.object_key()) {
                continue;
            }
            let live = self.get(&key.object_key())?;
            prune.push(removal(
                key,
                live.as_deref(),
                &d.name,
                &d.namespace,
                doc.parsed(),
            ));
        }
        Ok(prune)
    }

    /// Objects that failed revisions after the base created, and that
    /// neither the base nor the new manifest has: Helm no longer tracks
    /// them and leaves them for good (helm/helm#11748). They are deleted
    /// when this release still owns them live.
    pub(super) fn failed_leftovers(
        &mut self,
        start: &Start<'_>,
        old_keys: &[PlanKey],
        new_keys: &KeySet,
    ) -> Result<Vec<ObjectChange>, PlanError> {
        let mut out = Vec::new();
        let Some(b) = start.base else {
            return Ok(out);
        };
        let failed_after =
            |r: &&crate::release::Release| r.version > b.version && r.info.status == Status::Failed;
        if !start.history.iter().any(|r| failed_after(&r)) {
            return Ok(out);
        }
        let d = self.d;
        let no_cache: foldhash::HashMap<&str, super::desired::Known<'_>> =
            foldhash::HashMap::default();
        let mut seen: KeySet = new_keys.iter().cloned().collect();
        seen.extend(old_keys.iter().map(PlanKey::object_key));
        for r in start
            .history
            .iter()
            .filter(|r| r.version > b.version && r.info.status == Status::Failed)
            .rev()
        {
            for doc in parse_record_manifest(&self.rref, r, &no_cache)? {
                // A kind no longer served cannot have live objects left.
                let Ok(key) = self.qualify(doc.parsed()) else {
                    continue;
                };
                if !seen.insert(key.object_key()) {
                    continue;
                }
                let live = self.get(&key.object_key())?;
                match live.as_deref() {
                    Some(l) if ownership::owned_by(l, &d.name, &d.namespace) => {
                        let mut c =
                            removal(&key, live.as_deref(), &d.name, &d.namespace, doc.parsed());
                        c.reason = match c.action {
                            ObjectAction::Delete => format!(
                                "left behind by failed revision {}; in no manifest since",
                                r.version
                            ),
                            _ => format!(
                                "left behind by failed revision {}; {}",
                                r.version, c.reason
                            ),
                        };
                        out.push(c);
                    }
                    _ => {}
                }
            }
        }
        Ok(out)
    }
}

/// The delete-or-keep decision for an object the new manifest lacks
/// (`manifest`: its document in the last manifest).
pub(super) fn removal(
    key: &PlanKey,
    live: Option<&Value>,
    release: &str,
    namespace: &str,
    manifest: &Value,
) -> ObjectChange {
    let manifest_keep = ownership::keep(manifest);
    let (action, reason) = match live {
        None => (
            ObjectAction::Delete,
            "removed from the chart; already absent live".to_string(),
        ),
        Some(l) if ownership::keep(l) => (
            ObjectAction::Keep,
            "removed from the chart; kept: helm.sh/resource-policy: keep".to_string(),
        ),
        Some(_) if manifest_keep => (
            ObjectAction::Keep,
            "removed from the chart; kept: helm.sh/resource-policy: keep in the last manifest"
                .to_string(),
        ),
        Some(l) if ownership::owned_by(l, release, namespace) => {
            (ObjectAction::Delete, "removed from the chart".to_string())
        }
        Some(l) => (
            ObjectAction::Keep,
            match ownership::owner(l) {
                Some((n, ns)) => {
                    format!("removed from the chart; kept: live object belongs to release {ns}/{n}")
                }
                None => "removed from the chart; kept: live object has no Helm ownership metadata"
                    .to_string(),
            },
        ),
    };
    ObjectChange {
        key: key.clone(),
        action,
        stage: Stage::Prune,
        reason,
        changed: Vec::new(),
        diff: String::new(),
        wait: None,
        desired: None,
        planned_crd: None,
    }
}

/// Deletes run in reverse install order, custom resources before CRDs.
pub(super) fn sort_prune(objects: &mut [ObjectChange]) {
    objects.sort_by(|a, b| {
        let crd = |o: &ObjectChange| o.key.kind == "CustomResourceDefinition";
        let known = |o: &ObjectChange| INSTALL_ORDER.contains(&o.key.kind.as_str());
        // Custom resources (unknown kinds, not CRDs) first, then reverse install order.
        (known(a) || crd(a))
            .cmp(&(known(b) || crd(b)))
            .then_with(|| compare_kinds(INSTALL_ORDER, &b.key.kind, &a.key.kind))
            .then_with(|| a.key.cmp(&b.key))
    });
}
