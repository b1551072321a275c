//! What one release of a plan means for another: each release is planned
//! against the live state alone, so two that create the same object are
//! settled here as Helm, run release by release, would (the later one is
//! refused, or adopts it with take-ownership); and Helm's refusal of an
//! object another owner holds.
use crate::cluster::{ownership, ObjectKey};
use crate::plan::model::*;
use std::collections::HashMap;

/// Helm's refusal of an object it cannot import into the release
/// (`why`: what its ownership metadata says).
pub(super) fn conflict(action: ReleaseAction, key: &ObjectKey, why: &str) -> String {
    let verb = if action == ReleaseAction::Install {
        "install"
    } else {
        "update"
    };
    let ns_part = if key.namespace.is_empty() {
        String::new()
    } else {
        format!(" in namespace {:?}", key.namespace)
    };
    format!(
        "Unable to continue with {verb}: {} {:?}{ns_part} exists and cannot be imported into the current release: {why}",
        key.kind, key.name
    )
}

/// Releases of one plan that both make an object absent live: each release
/// is planned against the live state, so both would `create` it, and the
/// later apply would silently take it over. Helm run release by release
/// refuses the later one (its ownership check meets the object the earlier
/// release made). So the later release is blocked with Helm's message, or,
/// with take-ownership, adopts the object.
pub(super) fn block_shared_creates(plans: &mut [ReleasePlan]) {
    // Object -> where the desired object (stamped with its owner) of the
    // last release of the plan that makes or keeps it is: (release, object)
    // indices. Decisions never change a desired object, so the indices
    // stay valid while actions change.
    let mut made: HashMap<ObjectKey, (usize, usize)> = HashMap::new();
    let claims = |a: ObjectAction| {
        matches!(
            a,
            ObjectAction::Create
                | ObjectAction::Update
                | ObjectAction::Unchanged
                | ObjectAction::Adopt
        )
    };
    for pi in 0..plans.len() {
        // (object index, new action, new reason) of this release.
        let mut changes: Vec<(usize, ObjectAction, String)> = Vec::new();
        let mut msgs = Vec::new();
        {
            let p = &plans[pi];
            for (oi, o) in p.objects.iter().enumerate() {
                if o.stage != Stage::Main || !claims(o.action) {
                    continue;
                }
                let key = o.key.object_key();
                let first = made
                    .get(&key)
                    .and_then(|&(fp, fo)| plans[fp].objects[fo].desired.as_ref());
                if let Some(first) = first {
                    let owner = ownership::owner(first)
                        .map_or(String::new(), |(n, ns)| format!("{ns}/{n}"));
                    if p.options.take_ownership {
                        changes.push((
                            oi,
                            ObjectAction::Adopt,
                            format!(
                                "created earlier in this plan by release {owner}; taken over (take-ownership)"
                            ),
                        ));
                    } else {
                        let why = ownership::check(first, &p.name, &p.namespace)
                            .unwrap_or_else(|| "invalid ownership metadata".into());
                        msgs.push(conflict(p.action, &key, &why));
                        changes.push((
                            oi,
                            ObjectAction::Skip,
                            format!(
                                "ownership conflict: created earlier in this plan by release {owner}: {why}"
                            ),
                        ));
                        continue;
                    }
                }
                if o.desired.is_some() {
                    made.insert(key, (pi, oi));
                }
            }
        }
        let p = &mut plans[pi];
        for (oi, action, reason) in changes {
            p.objects[oi].action = action;
            p.objects[oi].reason = reason;
        }
        if !msgs.is_empty() {
            let mut all: Vec<String> = p.blocked.take().into_iter().collect();
            all.extend(msgs);
            p.blocked = Some(all.join("\n"));
        }
    }
}
