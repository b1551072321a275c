//! The hooks a release's plan runs: the pre- and post- hooks of its
//! event (install or upgrade), each phase in Helm's order (weight, then
//! name), with Helm's default delete policy.
use super::desired::Output;
use super::documents::{parse_doc, set_namespace};
use super::{Draft, PlanError};
use crate::plan::model::HookPlan;
use crate::release::Release;
use crate::render::{self, Rendered};

impl Draft<'_, '_> {
    /// The hooks of the render's event, pre- then post-.
    pub(super) fn hooks(&self, out: &Output) -> Result<Vec<HookPlan>, PlanError> {
        let phase_pre = if out.is_upgrade {
            "pre-upgrade"
        } else {
            "pre-install"
        };
        let phase_post = if out.is_upgrade {
            "post-upgrade"
        } else {
            "post-install"
        };
        let mut hooks = Vec::new();
        for phase in [phase_pre, phase_post] {
            let mut these: Vec<&render::RenderedHook> = out
                .rendered
                .hooks
                .iter()
                .filter(|h| h.events.iter().any(|e| e.as_str() == phase))
                .collect();
            these.sort_by(|a, b| {
                a.weight
                    .cmp(&b.weight)
                    .then_with(|| a.head.name.cmp(&b.head.name))
            });
            for h in these {
                let mut value = parse_doc(&self.rref, &h.source, &h.content)?;
                let key = self.qualify(&value)?;
                set_namespace(&mut value, &key.namespace);
                let policies = if h.delete_policies.is_empty() {
                    vec!["before-hook-creation".to_string()]
                } else {
                    h.delete_policies.clone()
                };
                hooks.push(HookPlan {
                    key,
                    phase: phase.to_string(),
                    weight: h.weight,
                    delete_policies: policies,
                    desired: Some(value),
                });
            }
        }
        Ok(hooks)
    }
}

/// Whether the base recorded the same hooks as the render made (the same
/// templates, the same text, in order).
pub(super) fn hooks_same(base: &Release, rendered: &Rendered) -> bool {
    base.hooks.len() == rendered.hooks.len()
        && base
            .hooks
            .iter()
            .zip(&rendered.hooks)
            .all(|(a, b)| a.manifest == b.content && a.path == b.source)
}
