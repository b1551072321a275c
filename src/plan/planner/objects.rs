//! The rendered objects against the cluster: the last manifest indexed by
//! identity, the live objects read in one batch, and for each rendered
//! object the decision (create, adopt, update, unchanged, or skip on an
//! ownership conflict) with its diff ([`super::diff`]) and wait rule. The
//! dry run is skipped where it cannot matter (`provably_unchanged`), and
//! an object whose CRD this plan applies first is checked against that
//! CRD instead ([`crate::plan::crds`]).
use super::applied::{recheck, text_digest, PENDING};
use super::desired::{Body, Desired, Known, Unread};
use super::diff::{changed_fields, dry_projection, managed_diff, provably_unchanged, unified_diff};
use super::documents::{parse_doc, set_namespace, OldDoc};
use super::shared::conflict;
use super::{record_precondition, Draft, PlanError, Planner};
use crate::cluster::{ownership, ObjectKey};
use crate::manifest::order::{compare_kinds, INSTALL_ORDER};
use crate::plan::crds::Kinds;
use crate::plan::input::WaitStrategy;
use crate::plan::model::*;
use serde_json::Value;
use std::sync::Arc;

/// The last manifest by identity.
pub(super) struct OldIndex<'o> {
    /// Each document's key, in the manifest's order.
    pub(super) keys: Vec<PlanKey>,
    /// Each document by its object's identity.
    by_key: foldhash::HashMap<ObjectKey, &'o OldDoc<'o>>,
}

/// A rendered object, keyed and stamped for this release.
struct Keyed {
    /// The document's text.
    text: String,
    /// The object, in its namespace and with this release's ownership; or
    /// the document proved unchanged without reading it.
    object: Object,
    /// Its identity.
    key: ObjectKey,
}

/// A rendered object, read or not.
enum Object {
    /// Read, in its namespace, with this release's ownership.
    Value(Value),
    /// Not read ([`Body::Unread`]).
    Unread(Unread),
}

/// The rendered objects, each with its plan key, and the set of their
/// identities.
type KeyedObjects = (Vec<(Keyed, PlanKey)>, KeySet);

/// A set of object keys (hashed: keys of one release share long prefixes,
/// which makes ordered comparisons slow).
pub(super) type KeySet = foldhash::HashSet<ObjectKey>;

impl Draft<'_, '_> {
    /// The last manifest by identity (the documents a desired one stands
    /// for take its object: `known`).
    pub(super) fn index_old<'o>(
        &self,
        old_docs: &'o [OldDoc],
        known: &foldhash::HashMap<&str, Known<'_>>,
    ) -> Result<OldIndex<'o>, PlanError> {
        let mut keys = Vec::with_capacity(old_docs.len());
        let mut by_key = foldhash::HashMap::default();
        for doc in old_docs {
            let key = match (&doc.value, known.get(doc.text)) {
                (Some(v), _) => self.qualify(v)?,
                (None, Some(Known::Value(v))) => self.qualify(v)?,
                (None, Some(Known::Key(k))) => (*k).clone(),
                (None, None) => self.qualify(&Value::Null)?,
            };
            by_key.insert(key.object_key(), doc);
            keys.push(key);
        }
        Ok(OldIndex { keys, by_key })
    }

    /// The rendered objects with their plan keys, in their namespace and
    /// stamped with this release's ownership; and the set of their keys.
    /// An object rendered twice refuses the plan.
    fn key_objects(&self, desired: Vec<Desired>) -> Result<KeyedObjects, PlanError> {
        let d = self.d;
        let mut new_keys = KeySet::default();
        let mut keyed = Vec::with_capacity(desired.len());
        for Desired { source, text, body } in desired {
            let (object, pkey) = match body {
                Body::Parsed(mut value) => {
                    let pkey = self.qualify(&value)?;
                    set_namespace(&mut value, &pkey.namespace);
                    ownership::stamp(&mut value, &d.name, &d.namespace);
                    (Object::Value(value), pkey)
                }
                Body::Unread(u) => {
                    let pkey = u.key.clone();
                    (Object::Unread(u), pkey)
                }
            };
            let key = pkey.object_key();
            if !new_keys.insert(key.clone()) {
                return Err(PlanError::Manifest {
                    release: self.rref.clone(),
                    origin: source,
                    message: format!("{key} is rendered twice"),
                });
            }
            keyed.push((Keyed { text, object, key }, pkey));
        }
        Ok((keyed, new_keys))
    }

    /// A document not read, read now: parsed, in its namespace, with this
    /// release's ownership.
    fn read_now(&self, text: &str, pkey: &PlanKey) -> Result<Value, PlanError> {
        let mut value = parse_doc(&self.rref, &format!("object {pkey}"), text)?;
        set_namespace(&mut value, &pkey.namespace);
        ownership::stamp(&mut value, &self.d.name, &self.d.namespace);
        Ok(value)
    }

    /// Whether the release may take a live object that its last manifest
    /// lacks or another release owns: it adopts it with take-ownership or
    /// when it owns it already; otherwise the object is skipped, and the
    /// release blocked with Helm's refusal.
    fn claim(
        &mut self,
        change: &mut ObjectChange,
        key: &ObjectKey,
        live: &Value,
        old: Option<&OldDoc>,
        owner_ok: bool,
    ) -> bool {
        let d = self.d;
        let foreign =
            ownership::owner(live).filter(|o| *o != (d.name.as_str(), d.namespace.as_str()));
        if old.is_some() && foreign.is_none() {
            return true;
        }
        if d.options.take_ownership {
            change.action = ObjectAction::Adopt;
            change.reason = match ownership::owner(live) {
                Some((n, ns)) if !owner_ok => {
                    format!("taken over from release {ns}/{n} (take-ownership)")
                }
                Some(_) => "owned by this release but not in its last manifest".into(),
                None => "exists without Helm's ownership metadata; adopted (take-ownership)".into(),
            };
        } else if owner_ok {
            change.action = ObjectAction::Adopt;
            change.reason = "owned by this release but not in its last manifest".into();
        } else {
            let why = ownership::check(live, &d.name, &d.namespace)
                .unwrap_or_else(|| "invalid ownership metadata".into());
            self.blocked.push(conflict(self.action, key, &why));
            change.action = ObjectAction::Skip;
            change.reason = format!("ownership conflict: {why}");
            return false;
        }
        true
    }
}

impl Planner<'_> {
    /// The rendered objects against their live state, in Helm's install
    /// order; and the set of their keys.
    pub(super) fn plan_objects(
        &self,
        r: &mut Draft<'_, '_>,
        desired: Vec<Desired>,
        old: &OldIndex<'_>,
        planned_kinds: &Kinds,
    ) -> Result<(Vec<ObjectChange>, KeySet), PlanError> {
        // The objects' keys first, then their live state in one batch
        // (those not read came with theirs).
        let (mut keyed, new_keys) = r.key_objects(desired)?;
        // A document not read stays so only where the last manifest has
        // it, of the same text, and no CRD of this plan defines its kind
        // (then it is checked against that CRD).
        for (obj, pkey) in &mut keyed {
            if !matches!(obj.object, Object::Unread(_)) {
                continue;
            }
            let in_old = old
                .by_key
                .get(&obj.key)
                .is_some_and(|o| o.text == obj.text.trim());
            let planned = !planned_kinds.is_empty()
                && planned_kinds
                    .planned(&r.ctx.reads, pkey)
                    .map_err(r.cluster_error())?
                    .is_some();
            if in_old && !planned {
                continue;
            }
            // (Its live object is read again below, from the batch's reads.)
            obj.object = Object::Value(r.read_now(&obj.text, pkey)?);
        }
        let keys: Vec<ObjectKey> = keyed
            .iter()
            .filter(|(o, _)| matches!(o.object, Object::Value(_)))
            .map(|(o, _)| o.key.clone())
            .collect();
        let mut lives = r
            .ctx
            .reads
            .get_many(&keys)
            .map_err(r.cluster_error())?
            .into_iter();
        let mut main = Vec::with_capacity(keyed.len());
        for (obj, pkey) in keyed {
            let change = match obj.object {
                Object::Unread(u) => r.unread(obj.text, obj.key, pkey, u),
                Object::Value(value) => {
                    let live = lives.next().flatten();
                    let obj = Read {
                        text: &obj.text,
                        value,
                        key: obj.key,
                    };
                    self.plan_object(r, obj, pkey, live, old, planned_kinds)?
                }
            };
            main.push(change);
        }
        // Helm's install order (the render already sorted; keep it stable).
        main.sort_by(|a, b| compare_kinds(INSTALL_ORDER, &a.key.kind, &b.key.kind));
        Ok((main, new_keys))
    }

    /// One rendered object against its live state.
    fn plan_object(
        &self,
        r: &mut Draft<'_, '_>,
        obj: Read<'_>,
        pkey: PlanKey,
        live: Option<Arc<Value>>,
        old: &OldIndex<'_>,
        planned_kinds: &Kinds,
    ) -> Result<ObjectChange, PlanError> {
        record_precondition(&mut r.preconditions, &obj.key, live.as_deref());
        let planned = if planned_kinds.is_empty() {
            None
        } else {
            planned_kinds
                .planned(&r.ctx.reads, &pkey)
                .map_err(r.cluster_error())?
        };
        let old = old.by_key.get(&obj.key).copied();
        let opts = &r.d.options;
        let wait = if opts.waits() {
            wait_rule(&obj.key.kind, opts.wait_strategy, opts.wait_for_jobs)
        } else {
            None
        };
        let mut change = ObjectChange {
            key: pkey,
            action: ObjectAction::Create,
            stage: Stage::Main,
            reason: String::new(),
            changed: Vec::new(),
            diff: String::new(),
            wait,
            desired: None,
            planned_crd: None,
        };
        let compared = match live {
            None => {
                change.reason = if old.is_some() {
                    r.drift = true;
                    "in the last manifest but absent live (deleted out of band)".into()
                } else {
                    "absent live".into()
                };
                true
            }
            Some(live) => {
                let compared =
                    self.against_live(r, &mut change, &obj, &live, old, planned.is_some())?;
                if change.action == ObjectAction::Unchanged {
                    r.keep_applied(&obj, &live);
                }
                compared
            }
        };
        if let Some(p) = planned.as_ref().filter(|_| compared) {
            r.blocked
                .extend(p.annotate(&mut change, &obj.value, &r.rref));
        }
        if self.opts.with_records && change.action.writes() {
            // The executor completes it with what its apply left.
            r.applied.push((
                obj.key.to_string(),
                format!("{PENDING}{}", text_digest(obj.text)),
            ));
        }
        change.desired = Some(obj.value.into());
        Ok(change)
    }

    /// An object that exists live: whether the release may take it, and
    /// what an apply changes in it. Returns whether it was compared (not:
    /// settled by an ownership conflict, or provably unchanged).
    fn against_live(
        &self,
        r: &mut Draft<'_, '_>,
        change: &mut ObjectChange,
        obj: &Read<'_>,
        live: &Value,
        old: Option<&OldDoc>,
        planned: bool,
    ) -> Result<bool, PlanError> {
        let (d, value, key) = (r.d, &obj.value, &obj.key);
        let owner_ok = ownership::owned_by(live, &d.name, &d.namespace);
        if !r.claim(change, key, live, old, owner_ok) {
            return Ok(false);
        }
        // A document of the same text as the desired one applied what
        // the desired one does: it removes nothing (stamping only adds
        // fields, and a cluster-scoped object, whose namespace the
        // stamp drops, has none live), so there is nothing to compare.
        let old_applied = old.and_then(|o| o.value.as_ref());
        // A dry run only where it can matter: not for an object the
        // last successful apply set from this very text and that is
        // still as that apply left it.
        let same_text =
            r.base_is_last_deployed && owner_ok && old.is_some_and(|o| o.text == obj.text.trim());
        if same_text && provably_unchanged(value, live) {
            change.action = ObjectAction::Unchanged;
            change.reason = "live matches the desired object".into();
            return Ok(false);
        }
        // An object whose CRD this plan applies first is
        // compared as rendered: the server cannot dry-run it.
        let dry = if planned {
            value.clone()
        } else {
            self.cluster.dry_run(value).map_err(r.cluster_error())?
        };
        let changed = changed_fields(&dry, value, live, old_applied);
        if change.action != ObjectAction::Adopt {
            if changed.is_empty() {
                change.action = ObjectAction::Unchanged;
                change.reason = "live matches the desired object".into();
            } else {
                change.action = ObjectAction::Update;
                let chart_changed = old.is_none_or(|o| o.text != obj.text);
                change.reason = if chart_changed {
                    "the desired object changed".into()
                } else {
                    r.drift = true;
                    format!("drift: live differs at {}", changed.join(", "))
                };
            }
        }
        if !changed.is_empty() {
            let (_, projected) = managed_diff(&dry, value, live, old_applied);
            change.diff = unified_diff(
                &projected,
                &dry_projection(&dry, value),
                key,
                self.opts.show_secrets,
            );
        }
        change.changed = changed;
        Ok(true)
    }
}

/// A rendered object read, in its namespace and with this release's
/// ownership.
struct Read<'t> {
    /// The document's text.
    text: &'t str,
    /// The object.
    value: Value,
    /// Its identity.
    key: ObjectKey,
}

impl Draft<'_, '_> {
    /// An unchanged object keeps its entry of the base record's
    /// [`crate::release::Release::applied`] when the live object still
    /// holds it (whether or not its document was read: the new record is
    /// the same either way).
    fn keep_applied(&mut self, obj: &Read<'_>, live: &Value) {
        let key = obj.key.to_string();
        let Some(recorded) = self
            .base_applied
            .and_then(|a| a.get(&key))
            .filter(|s| s.starts_with("sha256:"))
        else {
            return;
        };
        if let Some(entry) = recheck(recorded, &text_digest(obj.text), live) {
            self.applied.push((key, entry));
        }
    }

    /// A document proved unchanged without reading it: what an apply of
    /// its text left is still live ([`super::applied`]).
    fn unread(&mut self, text: String, key: ObjectKey, pkey: PlanKey, u: Unread) -> ObjectChange {
        record_precondition(&mut self.preconditions, &key, Some(&u.live));
        let opts = &self.d.options;
        let wait = if opts.waits() {
            wait_rule(&key.kind, opts.wait_strategy, opts.wait_for_jobs)
        } else {
            None
        };
        self.applied.push((key.to_string(), u.state));
        ObjectChange {
            desired: Some(DesiredObject::unread(UnreadDocument {
                text,
                namespace: pkey.namespace.clone(),
                release: self.d.name.clone(),
                release_namespace: self.d.namespace.clone(),
            })),
            key: pkey,
            action: ObjectAction::Unchanged,
            stage: Stage::Main,
            reason: "live matches the desired object".into(),
            changed: Vec::new(),
            diff: String::new(),
            wait,
            planned_crd: None,
        }
    }
}

/// The wait rule for a kind, or `None` when the kind is ready once written.
pub fn wait_rule(kind: &str, strategy: WaitStrategy, wait_for_jobs: bool) -> Option<WaitRule> {
    let rule = match strategy {
        WaitStrategy::None => return None,
        WaitStrategy::Kstatus => {
            "kstatus Current: observedGeneration == generation, no failed or in-progress conditions"
        }
        WaitStrategy::Legacy => match kind {
            "Deployment" => "new ReplicaSet observed and ready >= replicas - maxUnavailable",
            "StatefulSet" => "updated and ready == replicas, currentRevision == updateRevision",
            "DaemonSet" => {
                "updatedNumberScheduled == desired, numberReady >= desired - maxUnavailable"
            }
            "ReplicaSet" | "ReplicationController" => "every selected pod Ready",
            "Pod" => "condition Ready=True",
            "PersistentVolumeClaim" => "phase Bound",
            "Service" => "clusterIP assigned (LoadBalancer: ingress assigned)",
            "CustomResourceDefinition" => "condition Established=True",
            "Job" if wait_for_jobs => "succeeded >= completions, not failed",
            _ => return None,
        },
    };
    Some(WaitRule {
        strategy,
        rule: if strategy == WaitStrategy::Legacy {
            format!("{kind}: {rule}")
        } else {
            rule.to_string()
        },
    })
}
