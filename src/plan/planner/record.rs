//! The last phase of a release's plan: whether an upgrade is a `noop`,
//! the recovery point, the record the executor writes, and the digests
//! and content id ([`Plan::compute_id`]) that make a saved plan
//! tamper-evident.
use super::action::Start;
use super::desired::Output;
use super::diff::redact_secret;
use super::hooks::hooks_same;
use super::{Draft, Planner};
use crate::plan::input::DesiredRelease;
use crate::plan::model::*;
use crate::release::{self, Release, Status};
use crate::render::Rendered;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

impl Planner<'_> {
    /// The release's plan from what its phases found: a `noop` when an
    /// upgrade changes nothing, else the action chosen from the history,
    /// with its recovery point and the record the executor writes.
    pub(super) fn finish(
        &self,
        r: Draft<'_, '_>,
        start: Start<'_>,
        out: Output,
        objects: Vec<ObjectChange>,
        hooks: Vec<HookPlan>,
    ) -> ReleasePlan {
        let d = r.d;
        let from = start.base_revision(&out.manifest, &out.to.manifest_digest);
        let action = if self.is_noop(&r, &start, &out, from.as_ref(), &objects) {
            ReleaseAction::Noop
        } else {
            start.action
        };
        let recovery = recovery(&start, action, d.options.history_max, from.as_ref());
        let base = start.base;
        let (reason, to) = if action == ReleaseAction::Noop {
            let b = base.map_or(0, |b| b.version);
            let what = if base.is_some_and(|b| values_digest(&b.config) != out.to.values_digest) {
                "same chart and manifest (the values differ, but no template reads them), and no live drift: no new revision"
            } else {
                "same chart, values and manifest, and no live drift: no new revision"
            };
            (
                what.to_string(),
                ToRevision {
                    revision: b,
                    ..out.to
                },
            )
        } else {
            (start.reason, out.to)
        };
        let record = if self.opts.with_records && action != ReleaseAction::Noop {
            Some(record_value(
                d,
                &out.rendered,
                out.manifest,
                start.next,
                // (Sorted once: the keys share long prefixes.)
                r.applied.into_iter().collect(),
            ))
        } else {
            None
        };
        let blocked = if r.blocked.is_empty() {
            None
        } else {
            Some(r.blocked.join("\n"))
        };
        let mut preconditions = r.preconditions;
        preconditions.objects.sort_by(|a, b| a.key.cmp(&b.key));
        preconditions.objects.dedup();
        ReleasePlan {
            blocked,
            warnings: out.warnings,
            objects,
            hooks,
            recovery,
            preconditions,
            record_digest: record.as_ref().map_or(String::new(), json_digest),
            record,
            ..release_plan(d, action, reason, from, to)
        }
    }

    /// Whether an upgrade is a `noop`: the same chart, values and
    /// manifest as the deployed base, nothing drifted or blocked, every
    /// object unchanged, the same hooks. Values no template reads do not
    /// count. No revision is written for a noop (nelm's rule, not Helm's),
    /// unless the options ask for one always.
    fn is_noop(
        &self,
        r: &Draft<'_, '_>,
        start: &Start<'_>,
        out: &Output,
        from: Option<&FromRevision>,
        objects: &[ObjectChange],
    ) -> bool {
        if start.action != ReleaseAction::Upgrade
            || !r.blocked.is_empty()
            || self.opts.always_revision
        {
            return false;
        }
        let (Some(b), Some(f)) = (start.base, from) else {
            return false;
        };
        let to = &out.to;
        b.info.status == Status::Deployed
            && f.chart == to.chart
            && f.manifest_digest == to.manifest_digest
            && (f.values_digest == to.values_digest || !out.reads_values(r.d))
            && !r.drift
            && objects
                .iter()
                .all(|o| matches!(o.action, ObjectAction::Unchanged | ObjectAction::Skip))
            && hooks_same(b, &out.rendered)
    }
}

/// Where a failed apply returns to (the base, unless the release is
/// installed), and which old revisions the history limit removes.
fn recovery(
    start: &Start<'_>,
    action: ReleaseAction,
    history_max: usize,
    from: Option<&FromRevision>,
) -> Recovery {
    if action == ReleaseAction::Noop {
        return Recovery::default();
    }
    let base = start.base.filter(|_| action != ReleaseAction::Install);
    Recovery {
        rollback_revision: base.map(|b| b.version),
        // (The base's digest is `from`'s: not hashed twice.)
        rollback_manifest_digest: base.map_or(String::new(), |b| match from {
            Some(f) if f.revision == b.version => f.manifest_digest.clone(),
            _ => digest(b.manifest.as_bytes()),
        }),
        prune_revisions: prune_revisions(
            start.history,
            history_max,
            start.deployed.map(|d| d.version),
        ),
    }
}

/// A release's plan with nothing in it yet: the parts every plan has.
pub(super) fn release_plan(
    d: &DesiredRelease,
    action: ReleaseAction,
    reason: String,
    from: Option<FromRevision>,
    to: ToRevision,
) -> ReleasePlan {
    ReleasePlan {
        name: d.name.clone(),
        namespace: d.namespace.clone(),
        action,
        reason,
        from,
        to,
        needs: d.needs.iter().map(|n| n.release.clone()).collect(),
        options: d.options.clone(),
        blocked: None,
        warnings: Vec::new(),
        preflight: Vec::new(),
        objects: Vec::new(),
        hooks: Vec::new(),
        recovery: Recovery::default(),
        preconditions: Preconditions::default(),
        record: None,
        record_digest: String::new(),
    }
}

/// `sha256:<hex>` of `v`'s compact JSON, hashed as it is written.
fn json_digest(v: &Value) -> String {
    struct Hashing(Sha256);
    impl std::io::Write for Hashing {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.update(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut h = Hashing(Sha256::new());
    // (Writing into a hash cannot fail; a value always serialises.)
    let _ = serde_json::to_writer(std::io::BufWriter::with_capacity(1 << 16, &mut h), v);
    hex_digest(h.0.finalize().as_slice())
}

/// `sha256:<hex>` of bytes.
pub fn digest(bytes: &[u8]) -> String {
    hex_digest(Sha256::digest(bytes).as_slice())
}

fn hex_digest(h: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(7 + 2 * h.len());
    s.push_str("sha256:");
    for b in h {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s
}

pub(super) fn values_digest(v: &BTreeMap<String, crate::yaml::Node>) -> String {
    digest(&serde_json::to_vec(v).unwrap_or_default())
}

fn prune_revisions(history: &[Release], max: usize, deployed: Option<u64>) -> Vec<u64> {
    if max == 0 {
        return Vec::new();
    }
    let keep = max - 1;
    let mut out = Vec::new();
    for r in history {
        if history.len() - out.len() <= keep {
            break;
        }
        if Some(r.version) == deployed {
            continue;
        }
        out.push(r.version);
    }
    out
}

/// The record the executor writes, as Helm's release JSON minus `info`.
fn record_value(
    d: &DesiredRelease,
    rendered: &Rendered,
    manifest: String,
    version: u64,
    applied: BTreeMap<String, String>,
) -> Value {
    let mut chart = (*d.chart).clone();
    chart.dependencies.clear();
    let hooks: Vec<release::Hook> = rendered.hooks.iter().map(release::Hook::from).collect();
    let rel = Release {
        name: d.name.clone(),
        chart: Some(chart),
        config: d.values.clone(),
        // (Moved in below: not copied twice.)
        manifest: String::new(),
        hooks,
        version,
        namespace: d.namespace.clone(),
        applied,
        ..Default::default()
    };
    let mut v = serde_json::to_value(&rel).unwrap_or(Value::Null);
    if let Some(m) = v.as_object_mut() {
        if !manifest.is_empty() {
            m.insert("manifest".into(), Value::String(manifest));
        }
        m.remove("info");
        m.insert("notes".into(), Value::String(rendered.notes.clone()));
    }
    v
}

/// `v`'s compact JSON as the plan id sees it (see [`Plan::compute_id`]).
fn hashed_json<T: serde::Serialize>(v: &T) -> Vec<u8> {
    crate::plan::model::hashing(|| serde_json::to_vec(v)).unwrap_or_default()
}

impl Plan {
    /// The content hash of the plan: sha256 over its canonical JSON with
    /// `id` empty, diffs (a presentation) cleared and `redacted` false.
    pub fn compute_id(&self) -> String {
        // The bytes are those of one `serde_json::to_writer` of the plan:
        // the plan without its releases, split where the empty list is,
        // with each release's JSON in between. Releases serialise on
        // several cores, a window at a time so that the copies stay small;
        // the hash takes them in order.
        let head = Plan {
            api_version: self.api_version.clone(),
            id: String::new(),
            tool: self.tool.clone(),
            field_manager: self.field_manager.clone(),
            cluster: self.cluster.clone(),
            store: self.store.clone(),
            failure_policy: self.failure_policy.clone(),
            releases: Vec::new(),
            release_edges: self.release_edges.clone(),
            redacted: false,
        };
        let head = hashed_json(&head);
        const EMPTY: &[u8] = b"\"releases\":[]";
        let at = head
            .windows(EMPTY.len())
            .position(|w| w == EMPTY)
            .map_or(head.len(), |i| i + EMPTY.len() - 1);
        let mut h = Sha256::new();
        h.update(&head[..at]);
        let mut first = true;
        for window in self.releases.chunks(64) {
            let parts = crate::par::map_ordered(
                window,
                |r| r.objects.len() + r.hooks.len() + 1,
                256,
                hashed_json,
            );
            for p in parts {
                if !first {
                    h.update(b",");
                }
                first = false;
                h.update(&p);
            }
        }
        h.update(&head[at..]);
        hex_digest(h.finalize().as_slice())
    }

    /// Whether the plan's id matches its content and every record it
    /// carries matches its digest (the plan was not edited).
    pub fn verify_id(&self) -> bool {
        !self.redacted
            && self.compute_id() == self.id
            && self.releases.iter().all(|r| match &r.record {
                None => true,
                Some(rec) => {
                    digest(&serde_json::to_vec(rec).unwrap_or_default()) == r.record_digest
                        && digest(
                            rec.get("manifest")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .as_bytes(),
                        ) == r.to.manifest_digest
                }
            })
    }

    /// The plan with secret values replaced by hashes (Secret objects'
    /// `data`/`stringData`) and records removed: what is printed.
    pub fn redact(&self) -> Plan {
        let mut p = self.clone();
        p.redacted = true;
        for r in &mut p.releases {
            r.record = None;
            for o in &mut r.objects {
                // (Only a Secret's values are redacted: a document not
                // read is read only when its key says it is one.)
                let Some(d) = o.desired.as_mut() else {
                    continue;
                };
                let secret = if d.is_read() {
                    d.value().get("kind").and_then(Value::as_str) == Some("Secret")
                } else {
                    o.key.kind == "Secret"
                };
                if secret {
                    let mut v = d.value().clone();
                    redact_secret(&mut v);
                    *d = v.into();
                }
            }
            for h in &mut r.hooks {
                if let Some(d) = h.desired.as_mut() {
                    redact_secret(d);
                }
            }
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::planner::Renderer;
    use crate::render::{self, RenderError, RenderOptions};

    /// One ConfigMap per release, its name from the release's.
    struct OneConfigMap;

    impl Renderer for OneConfigMap {
        fn render(&self, rel: &DesiredRelease, _: &RenderOptions) -> Result<Rendered, RenderError> {
            let name = format!("{}-cm", rel.name);
            Ok(Rendered {
                files: BTreeMap::new(),
                manifests: vec![render::Manifest {
                    source: "c/templates/cm.yaml".into(),
                    content: format!(
                        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  a: \"1\""
                    ),
                    head: render::Head {
                        api_version: "v1".into(),
                        kind: "ConfigMap".into(),
                        name,
                        namespace: String::new(),
                        annotations: BTreeMap::new(),
                    },
                }],
                hooks: vec![],
                crds: vec![],
                notes: String::new(),
                warnings: vec![],
            })
        }
    }

    #[test]
    fn the_id_is_the_hash_of_the_whole_plan_serialised_at_once() {
        // compute_id serialises releases apart (on several threads, a
        // window at a time); its bytes must be those of one serialisation.
        let store = crate::release::store::memory::MemoryStore::new();
        let cluster = crate::cluster::sim::SimCluster::in_memory();
        for n in [0, 1, 3, 64, 65, 300] {
            let releases: Vec<DesiredRelease> = (0..n)
                .map(|i| {
                    DesiredRelease::new(&format!("r{i}"), "default", crate::chart::Chart::default())
                })
                .collect();
            let plan = Planner::new(&store, "memory:", &cluster)
                .with_renderer(&OneConfigMap)
                .plan(&releases)
                .unwrap();
            assert_eq!(plan.releases.len(), n);
            let whole = digest(&hashed_json(&plan));
            assert_eq!(plan.id, whole, "{n} releases");
            assert!(plan.verify_id());
        }
    }

    #[test]
    fn prune_keeps_the_deployed_revision() {
        let mk = |v, s| {
            let mut r = Release {
                version: v,
                ..Default::default()
            };
            r.info.status = s;
            r
        };
        let h = vec![
            mk(1, Status::Superseded),
            mk(2, Status::Deployed),
            mk(3, Status::Failed),
        ];
        assert_eq!(prune_revisions(&h, 2, Some(2)), vec![1, 3]);
        assert_eq!(prune_revisions(&h, 0, Some(2)), Vec::<u64>::new());
        assert_eq!(prune_revisions(&h, 10, Some(2)), Vec::<u64>::new());
    }
}
