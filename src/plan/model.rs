//! The plan: a value that says what an upgrade will do.
//!
//! Field names follow `upgrades.md` §8.1 where it has one. A plan holds no
//! timestamps and no temporary paths, so two plans of the same inputs
//! serialise byte-identically, and [`Plan::id`] is a hash of that
//! serialisation.
use super::input::{ReleaseOptions, ReleaseRef, WaitStrategy};
use crate::cluster::{ClusterIdentity, ObjectKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;

thread_local! {
    /// Set while [`Plan`]'s id is computed: fields outside the id are skipped.
    static HASHING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with the fields outside the plan id (`id`, `redacted`, diffs,
/// records and their digests) left out of serialisation.
pub(crate) fn hashing<T>(f: impl FnOnce() -> T) -> T {
    HASHING.with(|h| h.set(true));
    let r = f();
    HASHING.with(|h| h.set(false));
    r
}

fn in_hash() -> bool {
    HASHING.with(|h| h.get())
}

fn skip_str(s: &str) -> bool {
    s.is_empty() || in_hash()
}

fn skip_in_hash<T>(_: &T) -> bool {
    in_hash()
}

fn skip_record(r: &Option<Value>) -> bool {
    r.is_none() || in_hash()
}

/// The plan format's `apiVersion`.
pub const PLAN_API_VERSION: &str = "rudder.io/v1alpha1";

/// A whole plan: releases in execution order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// [`PLAN_API_VERSION`].
    pub api_version: String,
    /// A content hash (`sha256:...`) over the canonical serialisation of
    /// the plan, without this field, `redacted`, the diffs (a
    /// presentation) and the records (bound by `recordDigest` instead), so
    /// a printed plan and its saved copy have the same id.
    #[serde(skip_serializing_if = "skip_in_hash")]
    pub id: String,
    /// The tool that made the plan.
    pub tool: Tool,
    /// The field manager the executor applies with.
    pub field_manager: String,
    /// The cluster the plan was made against.
    pub cluster: ClusterIdentity,
    /// The release store the plan was made against (its URL).
    pub store: String,
    /// What happens when a release fails.
    pub failure_policy: FailurePolicy,
    /// Releases in execution order (every desired release, `noop` ones too).
    pub releases: Vec<ReleasePlan>,
    /// The `needs` edges: `from` is ready before `to` starts.
    pub release_edges: Vec<ReleaseEdge>,
    /// Whether secret values in this serialisation are replaced by
    /// `(redacted)` (`(redacted, changed)` in diffs where they change).
    #[serde(skip_serializing_if = "skip_in_hash")]
    pub redacted: bool,
}

/// Name and version of the planning tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tool {
    /// `rudder`.
    pub name: String,
    /// The crate version.
    pub version: String,
}

/// What the executor does on failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailurePolicy {
    /// Per release: `rollback` (atomic) or `none`, from each release's
    /// options; this is the plan-wide default.
    pub per_release: String,
    /// Across releases: `stop` (Lokomotive's rule),
    /// `rollback-completed-in-reverse`, or `rollback-all-in-reverse` (an
    /// atomic plan, `--atomic-plan`: a failure in any release returns every
    /// release the apply changed, the failed one included, to
    /// `recovery.rollbackRevision`, or uninstalls it where that is null).
    pub cross_release: String,
}

/// One `needs` edge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseEdge {
    /// The release that goes first.
    pub from: ReleaseRef,
    /// The release that needs it.
    pub to: ReleaseRef,
    /// Always `ready-before`.
    pub kind: String,
    /// Why the edge exists.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// What happens to a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReleaseAction {
    /// A new release, or one whose history ends uninstalled.
    Install,
    /// A new revision of an existing release.
    Upgrade,
    /// Nothing changes; no revision is written (nelm's rule).
    Noop,
    /// The last record is stuck `pending-*`: the executor must settle it first.
    Recover,
    /// The releases file marks the release absent.
    Uninstall,
}

impl ReleaseAction {
    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ReleaseAction::Install => "install",
            ReleaseAction::Upgrade => "upgrade",
            ReleaseAction::Noop => "noop",
            ReleaseAction::Recover => "recover",
            ReleaseAction::Uninstall => "uninstall",
        }
    }
}

/// The revision a release starts from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FromRevision {
    /// The revision the upgrade replaces (the deployed one).
    pub revision: u64,
    /// Its status.
    pub status: String,
    /// `name-version` of its chart.
    pub chart: String,
    /// Its app version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub app_version: String,
    /// `sha256:` of its manifest.
    pub manifest_digest: String,
    /// `sha256:` of its user values.
    pub values_digest: String,
}

/// The revision a release goes to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToRevision {
    /// The new revision (last + 1), or the current one for a noop.
    pub revision: u64,
    /// `name-version` of the chart.
    pub chart: String,
    /// The chart's app version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub app_version: String,
    /// `sha256:` of the rendered manifest.
    pub manifest_digest: String,
    /// `sha256:` of the user values.
    pub values_digest: String,
}

/// Where a failed release returns to, and what pruning removes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Recovery {
    /// The revision to return to on failure; `None` for an install (which
    /// is uninstalled instead).
    pub rollback_revision: Option<u64>,
    /// That revision's manifest digest.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rollback_manifest_digest: String,
    /// History revisions that `history_max` pruning removes after success.
    pub prune_revisions: Vec<u64>,
}

/// What the executor re-checks before its first write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    /// The newest record as seen at planning (`None`: there was none).
    pub last_record: Option<RecordPrecondition>,
    /// Every live object the plan read, as it was.
    pub objects: Vec<ObjectPrecondition>,
}

/// A record's revision and status at planning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordPrecondition {
    /// Revision.
    pub revision: u64,
    /// Status.
    pub status: String,
}

/// A live object's identity and version at planning. `uid` empty means the
/// object was absent, and must still be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectPrecondition {
    /// The object.
    pub key: ObjectKey,
    /// Its uid (empty: absent).
    pub uid: String,
    /// Its resourceVersion (empty: absent).
    pub resource_version: String,
}

/// An object's place in the plan: group, version, kind, namespace, name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PlanKey {
    /// API group (`""` for core).
    pub group: String,
    /// The version the plan applies (or the live one, for deletes).
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Namespace (`""` when cluster-scoped).
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl PlanKey {
    /// The identity without the version.
    pub fn object_key(&self) -> ObjectKey {
        ObjectKey::new(&self.group, &self.kind, &self.namespace, &self.name)
    }

    /// `group/version` (`version` for core).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl std::fmt::Display for PlanKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.object_key().fmt(f)
    }
}

/// What happens to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObjectAction {
    /// Absent live: created.
    Create,
    /// Live differs on the fields the release manages: applied.
    Update,
    /// Live equals the desired object on those fields: no write.
    Unchanged,
    /// Removed from the chart and owned by this release: deleted.
    Delete,
    /// Removed from the chart but kept (`helm.sh/resource-policy: keep`,
    /// or the live object is not this release's).
    Keep,
    /// Exists live, not in the last manifest, and may be adopted.
    Adopt,
    /// Not touched: a CRD that exists (Helm never updates CRDs), or an
    /// ownership conflict that blocks the release.
    Skip,
}

impl ObjectAction {
    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectAction::Create => "create",
            ObjectAction::Update => "update",
            ObjectAction::Unchanged => "unchanged",
            ObjectAction::Delete => "delete",
            ObjectAction::Keep => "keep",
            ObjectAction::Adopt => "adopt",
            ObjectAction::Skip => "skip",
        }
    }

    /// Whether the executor writes for this action.
    pub fn writes(self) -> bool {
        matches!(
            self,
            ObjectAction::Create
                | ObjectAction::Update
                | ObjectAction::Delete
                | ObjectAction::Adopt
        )
    }
}

/// The part of a release's execution an object belongs to, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// CRDs from the chart's `crds/`.
    Crds,
    /// The release namespace (`createNamespace`).
    Namespaces,
    /// The manifest's objects, in Helm's install order.
    Main,
    /// Deletes, in reverse install order.
    Prune,
}

/// A wait rule for one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitRule {
    /// `legacy` (Helm 3's rule for the kind) or `kstatus`.
    pub strategy: WaitStrategy,
    /// The rule, in words (`Deployment: new ReplicaSet ready`...).
    pub rule: String,
}

/// One object's change.
///
/// Serialised as its fields; while the plan's id is computed the desired
/// object of an action that writes nothing (`unchanged`, `keep`, `skip`)
/// is left out: the executor never reads it, and leaving it out spares
/// reading the documents the planner proved unchanged without reading them
/// ([`DesiredObject`]).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectChange {
    /// The object.
    pub key: PlanKey,
    /// What happens to it.
    pub action: ObjectAction,
    /// Where in the release's execution.
    pub stage: Stage,
    /// Why.
    pub reason: String,
    /// JSON pointers of the fields that change (empty unless update/adopt).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
    /// A unified YAML diff, live -> desired, for people.
    #[serde(default, skip_serializing_if = "skip_str")]
    pub diff: String,
    /// What the wait checks, when the release waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<WaitRule>,
    /// The object as it will be applied (ownership metadata included;
    /// secret values redacted in redacted plans). `None` for deletes.
    #[serde(default)]
    pub desired: Option<DesiredObject>,
    /// Set when the object's kind comes from a CRD that this plan creates
    /// or changes first (in an earlier release it needs, or in its own
    /// chart): the object is planned against that CRD, not dry-run on the
    /// server, which does not serve it yet.
    #[serde(default)]
    pub planned_crd: Option<PlannedCrd>,
}

/// [`ObjectChange`] as it is serialised (the same fields, borrowed).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ObjectChangeOut<'a> {
    key: &'a PlanKey,
    action: ObjectAction,
    stage: Stage,
    reason: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    changed: &'a [String],
    #[serde(skip_serializing_if = "skip_str_ref")]
    diff: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    wait: Option<&'a WaitRule>,
    #[serde(skip_serializing_if = "Option::is_none")]
    desired: Option<&'a DesiredObject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    planned_crd: Option<&'a PlannedCrd>,
}

fn skip_str_ref(s: &&str) -> bool {
    skip_str(s)
}

impl Serialize for ObjectChange {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ObjectChangeOut {
            key: &self.key,
            action: self.action,
            stage: self.stage,
            reason: &self.reason,
            changed: &self.changed,
            diff: &self.diff,
            wait: self.wait.as_ref(),
            desired: self
                .desired
                .as_ref()
                .filter(|_| self.action.writes() || !in_hash()),
            planned_crd: self.planned_crd.as_ref(),
        }
        .serialize(s)
    }
}

/// An object as the plan applies it ([`ObjectChange::desired`]): a JSON
/// value. For an object the planner proved unchanged without reading its
/// document (the same text as an apply whose result the live object still
/// holds), the document's text, read into the value on first use: most
/// plans never look at those, and reading them was most of a plan's time.
/// It dereferences to the value; it serialises, compares and prints as it.
#[derive(Clone)]
pub struct DesiredObject(std::sync::Arc<DesiredInner>);

#[derive(Clone)]
enum DesiredInner {
    Value(Value),
    Text {
        source: UnreadDocument,
        value: std::sync::OnceLock<Value>,
    },
}

/// A rendered document not read yet, and how the planner makes it the
/// object it applies: in `namespace` (none: cluster-scoped), stamped with
/// release `release` of `release_namespace`'s ownership metadata.
#[derive(Clone, Debug)]
pub(crate) struct UnreadDocument {
    /// The document's text.
    pub(crate) text: String,
    /// The object's namespace (empty: cluster-scoped).
    pub(crate) namespace: String,
    /// The release's name.
    pub(crate) release: String,
    /// The release's namespace.
    pub(crate) release_namespace: String,
}

impl DesiredObject {
    /// A document read later ([`super::planner`] reads it).
    pub(crate) fn unread(source: UnreadDocument) -> DesiredObject {
        DesiredObject(std::sync::Arc::new(DesiredInner::Text {
            source,
            value: std::sync::OnceLock::new(),
        }))
    }

    /// The value.
    pub fn value(&self) -> &Value {
        match &*self.0 {
            DesiredInner::Value(v) => v,
            DesiredInner::Text { source, value } => {
                value.get_or_init(|| super::planner::read_unread(source))
            }
        }
    }

    /// Whether the value was made (not a document still unread).
    pub fn is_read(&self) -> bool {
        match &*self.0 {
            DesiredInner::Value(_) => true,
            DesiredInner::Text { value, .. } => value.get().is_some(),
        }
    }

    /// The value, owned (a copy when it is shared).
    pub fn into_value(self) -> Value {
        match std::sync::Arc::try_unwrap(self.0) {
            Ok(DesiredInner::Value(v)) => v,
            Ok(DesiredInner::Text { source, value }) => value
                .into_inner()
                .unwrap_or_else(|| super::planner::read_unread(&source)),
            Err(shared) => DesiredObject(shared).value().clone(),
        }
    }
}

impl From<Value> for DesiredObject {
    fn from(v: Value) -> Self {
        DesiredObject(std::sync::Arc::new(DesiredInner::Value(v)))
    }
}

impl std::ops::Deref for DesiredObject {
    type Target = Value;
    fn deref(&self) -> &Value {
        self.value()
    }
}

impl PartialEq for DesiredObject {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0) || self.value() == other.value()
    }
}

impl std::fmt::Debug for DesiredObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.value(), f)
    }
}

impl Serialize for DesiredObject {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for DesiredObject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(DesiredObject::from)
    }
}

/// The CRD of the plan a custom resource is planned against (see
/// [`ObjectChange::planned_crd`] and [`crate::plan::crds`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedCrd {
    /// The CRD's name (`widgets.example.com`).
    pub name: String,
    /// The release that applies it (this release, for its own CRDs).
    pub release: ReleaseRef,
    /// What that release does to it: `create` (absent live) or `update`
    /// (its entry for the object's version changes).
    pub action: ObjectAction,
    /// The object's version.
    pub version: String,
    /// Whether the object was checked against the CRD's schema for that
    /// version (the CRD has one).
    pub schema_checked: bool,
    /// What the check found, in the API server's words; any makes the
    /// object `skip` and blocks the release.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<String>,
}

/// A hook the release runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookPlan {
    /// The hook object.
    pub key: PlanKey,
    /// `pre-install`, `post-upgrade`, ...
    pub phase: String,
    /// `helm.sh/hook-weight`.
    pub weight: i64,
    /// `helm.sh/hook-delete-policy` (Helm's default `before-hook-creation`).
    pub delete_policies: Vec<String>,
    /// The hook object as it will be created (redacted in redacted plans).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired: Option<Value>,
}

/// One release's plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleasePlan {
    /// Release name.
    pub name: String,
    /// Release namespace.
    pub namespace: String,
    /// What happens.
    pub action: ReleaseAction,
    /// Why.
    pub reason: String,
    /// Where it starts (`None` for an install).
    pub from: Option<FromRevision>,
    /// Where it goes.
    pub to: ToRevision,
    /// The releases that must be ready first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<ReleaseRef>,
    /// The options the executor follows.
    pub options: ReleaseOptions,
    /// Set when the release cannot proceed (an ownership conflict): Helm's
    /// error text. The executor refuses a plan with a blocked release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
    /// What the user should know that does not stop the release, one
    /// sentence each: values given to a chart whose templates read none
    /// (a chart built from a component), which change nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// What will certainly keep the release from becoming ready, found
    /// before anything is written ([`super::preflight`]): a node selector
    /// no node matches, a missing StorageClass, ServiceAccount, Secret,
    /// ConfigMap or image pull secret. Never blocks `apply` by itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preflight: Vec<super::preflight::PreflightWarning>,
    /// Objects in execution order: CRDs, namespaces, main, prune.
    pub objects: Vec<ObjectChange>,
    /// Pre-hooks by weight, then post-hooks by weight.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookPlan>,
    /// Where to return on failure; what pruning removes.
    pub recovery: Recovery,
    /// What the executor re-checks first.
    pub preconditions: Preconditions,
    /// The release record the executor writes (Helm's JSON), without its
    /// status, which the executor sets. Secret values redacted in
    /// redacted plans; `None` in plans printed without `--save`.
    #[serde(default, skip_serializing_if = "skip_record")]
    pub record: Option<Value>,
    /// `sha256:` of `record`'s JSON when the plan carries it (checked
    /// before the record is written).
    #[serde(default, skip_serializing_if = "skip_str")]
    pub record_digest: String,
}

impl ReleasePlan {
    /// `namespace/name`.
    pub fn reference(&self) -> ReleaseRef {
        ReleaseRef {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }

    /// How many objects have each action.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for o in &self.objects {
            match o.action {
                ObjectAction::Create => c.create += 1,
                ObjectAction::Update => c.update += 1,
                ObjectAction::Unchanged => c.unchanged += 1,
                ObjectAction::Delete => c.delete += 1,
                ObjectAction::Keep => c.keep += 1,
                ObjectAction::Adopt => c.adopt += 1,
                ObjectAction::Skip => c.skip += 1,
            }
        }
        c
    }
}

/// Object counts per action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counts {
    /// Creates.
    pub create: usize,
    /// Updates.
    pub update: usize,
    /// Unchanged.
    pub unchanged: usize,
    /// Deletes.
    pub delete: usize,
    /// Kept.
    pub keep: usize,
    /// Adopted.
    pub adopt: usize,
    /// Skipped.
    pub skip: usize,
}

impl Plan {
    /// Whether applying the plan would change anything.
    pub fn has_changes(&self) -> bool {
        self.releases
            .iter()
            .any(|r| r.action != ReleaseAction::Noop)
    }

    /// The releases that cannot proceed.
    pub fn blocked(&self) -> impl Iterator<Item = &ReleasePlan> {
        self.releases.iter().filter(|r| r.blocked.is_some())
    }
}
