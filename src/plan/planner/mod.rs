//! The planner: desired releases + the release store + the cluster -> a
//! [`Plan`]. It reads and never writes.
//!
//! For each release, in the order of `needs`:
//!
//! 1. the store's history decides the release action (§ "Actions" below)
//!    and the revision the plan goes to;
//! 2. the chart is rendered for that revision, with the cluster's version
//!    and API resources as `.Capabilities`;
//! 3. every rendered object is compared with the **live** object, after the
//!    cluster's dry run of the desired one, on the fields the release sets
//!    (and the fields its last manifest set, which an apply would remove);
//!    the live objects are read in batches (a LIST per kind and namespace
//!    where the cluster finds that cheaper, shared by every release of the
//!    plan: [`Reads`]), and the dry run is skipped where it cannot matter:
//!    for a document of the same text as in the last successful apply
//!    (the base is the last record, and deployed) whose live object
//!    rudder applied, no other manager owns a field of, and that holds
//!    every desired value already (see `provably_unchanged`); a document
//!    is not even read when the base record says what an apply of its very
//!    text left on its object and the live object still holds exactly that
//!    ([`applied`]: it is `unchanged`, and its object is read only if the
//!    plan's reader asks, [`DesiredObject`]); a custom
//!    resource whose CRD this plan creates or changes first (in its own
//!    chart or a release it needs) is planned against that CRD instead,
//!    checked against its schema ([`super::crds`]);
//! 4. objects of the last manifest that the new one lacks are deleted when
//!    their live ownership metadata names this release, and kept otherwise.
//!
//! Actions: a missing record installs revision 1; a history that ends
//! `uninstalled` installs last+1; a `pending-*` last record is `recover`;
//! a `failed` last record upgrades from the last deployed one (Helm's
//! `prepareUpgrade`); otherwise `upgrade`, or `noop` when the chart, the
//! values and the manifest are the same and no live object drifted. No
//! revision is written for a noop: that is nelm's rule, not Helm's (Helm
//! writes a revision on every upgrade).
//!
//! The phases, one file each: `action` (the history and the release
//! action), `desired` (the render, the CRDs of `crds/`, the release
//! namespace), `objects` (the last manifest's index, the live reads and
//! the decision for each object, compared by `diff`), `prune` (what the
//! new manifest lacks, and what failed revisions left), `hooks`, and
//! `record` (noop, recovery, the record, the plan's id). `shared` settles
//! what one release of a plan means for another; `documents` parses.
mod action;
pub mod applied;
mod desired;
mod diff;
mod documents;
mod hooks;
mod objects;
mod prune;
mod record;
mod shared;

pub use diff::{managed_diff, redact_secret, REDACTED, REDACTED_CHANGED};
pub use objects::wait_rule;
pub use record::digest;

use super::input::{DesiredRelease, ReleaseRef};
use super::model::*;
use super::order::{self, OrderError};
use crate::cluster::reads::Reads;
use crate::cluster::{Cluster, ClusterError, ObjectKey, Scope};
use crate::release;
use crate::render::{self, RenderError, RenderOptions, Rendered};
use action::Start;
use documents::{describe, parse_record_manifest};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// The field manager rudder applies with.
pub const FIELD_MANAGER: &str = "rudder";

/// The `failurePolicy.crossRelease` of an atomic plan (`--atomic-plan`,
/// `atomicPlan: true`): a failure in any release returns every release the
/// apply changed to its rollback point, newest first, the failed one too.
pub const ATOMIC_PLAN: &str = "rollback-all-in-reverse";

/// Why planning failed. Each names the release, file or object involved.
///
/// An error of another stage (store, cluster, render) is the `source()`,
/// and its text is not repeated in this one's: print the chain (as
/// `anyhow` or the CLI do) to see both. The source is the error itself,
/// not its box, so `downcast_ref::<RenderError>()` finds it.
#[derive(Debug)]
pub enum PlanError {
    /// The order of `needs` is impossible (a cycle, a dangling need).
    Order(OrderError),
    /// Reading the release store failed (the store's error is the source).
    Store {
        /// `namespace/name`.
        release: ReleaseRef,
        /// The store's error.
        source: Box<release::OpError>,
    },
    /// Reading the cluster failed (the cluster's error is the source).
    Cluster {
        /// `namespace/name`.
        release: ReleaseRef,
        /// The cluster's error.
        source: Box<ClusterError>,
    },
    /// The chart did not render (the render error, Helm's text, is the
    /// source).
    Render {
        /// `namespace/name`.
        release: ReleaseRef,
        /// `name-version`.
        chart: String,
        /// The render error (Helm's text).
        source: Box<RenderError>,
    },
    /// A rendered or recorded document is not an object rudder can apply.
    Manifest {
        /// `namespace/name`.
        release: ReleaseRef,
        /// The template or record the document came from.
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// Two releases of the plan are the same release.
    Duplicate(ReleaseRef),
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanError::Order(e) => std::fmt::Display::fmt(e, f),
            PlanError::Store { release, .. } => {
                write!(f, "release {release}: reading the release store")
            }
            PlanError::Cluster { release, .. } => write!(f, "release {release}"),
            PlanError::Render { release, chart, .. } => {
                write!(f, "release {release}: rendering chart {chart}")
            }
            PlanError::Manifest {
                release,
                origin,
                message,
            } => write!(f, "release {release}: {origin}: {message}"),
            PlanError::Duplicate(release) => write!(f, "release {release} is listed twice"),
        }
    }
}

impl std::error::Error for PlanError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // Transparent: the order error stands for this one.
            PlanError::Order(e) => e.source(),
            PlanError::Store { source, .. } => Some(&**source),
            PlanError::Cluster { source, .. } => Some(&**source),
            PlanError::Render { source, .. } => Some(&**source),
            PlanError::Manifest { .. } | PlanError::Duplicate(_) => None,
        }
    }
}

impl From<OrderError> for PlanError {
    fn from(e: OrderError) -> Self {
        PlanError::Order(e)
    }
}

/// Renders a desired release for a revision. The default is
/// [`render::render`]; benchmarks and tests can hand pre-rendered output.
/// `Sync`: the planner plans (and so renders) several releases at once.
pub trait Renderer: Sync {
    /// Renders `rel` with `opts` (revision, upgrade flag, capabilities).
    fn render(&self, rel: &DesiredRelease, opts: &RenderOptions) -> Result<Rendered, RenderError>;
}

/// Helm's renderer ([`render::render`]).
pub struct HelmRenderer;

impl Renderer for HelmRenderer {
    fn render(&self, rel: &DesiredRelease, opts: &RenderOptions) -> Result<Rendered, RenderError> {
        render::render(&rel.chart, &rel.values, opts)
    }
}

/// Settings of one planning run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanOptions {
    /// Put real secret values in the diffs (`--show-secrets`). The plan's
    /// objects always hold real values; [`Plan::redact`] hides them.
    pub show_secrets: bool,
    /// Across releases: `stop`, `rollback-completed-in-reverse`, or
    /// [`ATOMIC_PLAN`] (`--atomic-plan`: the plan is one transaction).
    pub cross_release: String,
    /// Include the release records the executor writes (a saved plan).
    pub with_records: bool,
    /// Never plan `noop`: a release whose chart, values and objects are
    /// unchanged still gets a new revision (Helm's `upgrade`).
    pub always_revision: bool,
    /// Ask the server's dry run about every object that exists live, also
    /// those that provably did not change (the same document text as the
    /// last successful apply, and a live object still as that apply left
    /// it; see [`Planner`]). The plan is the same either way; this costs
    /// one request per object.
    pub always_dry_run: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            show_secrets: false,
            cross_release: "stop".into(),
            with_records: true,
            always_revision: false,
            always_dry_run: false,
        }
    }
}

/// The planner: reads the store and the cluster, writes nothing.
pub struct Planner<'a> {
    store: &'a dyn release::Store,
    store_url: String,
    cluster: &'a dyn Cluster,
    renderer: &'a dyn Renderer,
    opts: PlanOptions,
}

impl<'a> Planner<'a> {
    /// A planner over a store (named by `store_url` in the plan) and a cluster.
    pub fn new(store: &'a dyn release::Store, store_url: &str, cluster: &'a dyn Cluster) -> Self {
        Planner {
            store,
            store_url: store_url.to_string(),
            cluster,
            renderer: &HelmRenderer,
            opts: PlanOptions::default(),
        }
    }

    /// Renders with `r` instead of Helm's renderer.
    pub fn with_renderer(mut self, r: &'a dyn Renderer) -> Self {
        self.renderer = r;
        self
    }

    /// Sets the options.
    pub fn with_options(mut self, opts: PlanOptions) -> Self {
        self.opts = opts;
        self
    }

    /// Plans `releases`.
    pub fn plan(&self, releases: &[DesiredRelease]) -> Result<Plan, PlanError> {
        let mut seen = BTreeSet::new();
        for r in releases {
            if !seen.insert(r.reference()) {
                return Err(PlanError::Duplicate(r.reference()));
            }
        }
        let order = order::release_order(releases)?;
        let identity =
            self.cluster
                .identity()
                .map_err(|source| PlanError::Cluster {
                    release: releases.first().map(DesiredRelease::reference).unwrap_or(
                        ReleaseRef {
                            namespace: String::new(),
                            name: String::new(),
                        },
                    ),
                    source: Box::new(source),
                })?;
        let mut ctx = Context::new(self.cluster, &identity);
        ctx.crds = super::crds::Board::new(releases, &order);
        // Releases plan independently (what one plan says about another is
        // settled after, by `block_shared_creates`), so they share the
        // cores, or, on a remote cluster, wait for its answers side by
        // side; the results come back in order, and the first error in
        // that order is the one reported, as a sequential loop would.
        let threads = crate::par::threads().max(self.cluster.request_parallelism());
        let mut plans = crate::par::map_claimed_on(&order, 2, threads, |&i| {
            self.plan_release(&releases[i], i, &ctx)
        })
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
        shared::block_shared_creates(&mut plans);
        super::crds::warn_unordered(&mut plans, |g, k| {
            ctx.scopes.contains_key(&(g.to_string(), k.to_string()))
        });
        super::preflight::check(&mut plans, self.cluster);
        let mut edges = Vec::new();
        for &i in &order {
            let r = &releases[i];
            for n in &r.needs {
                edges.push(ReleaseEdge {
                    from: n.release.clone(),
                    to: r.reference(),
                    kind: "ready-before".into(),
                    reason: n.reason.clone(),
                });
            }
        }
        let mut plan = Plan {
            api_version: PLAN_API_VERSION.into(),
            id: String::new(),
            tool: Tool {
                name: "rudder".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            field_manager: FIELD_MANAGER.into(),
            cluster: identity,
            store: self.store_url.clone(),
            failure_policy: FailurePolicy {
                per_release: "rollback".into(),
                cross_release: self.opts.cross_release.clone(),
            },
            releases: plans,
            release_edges: edges,
            redacted: false,
        };
        plan.id = plan.compute_id();
        Ok(plan)
    }

    /// Plans one release, phase by phase (the steps of the module doc).
    fn plan_release(
        &self,
        d: &DesiredRelease,
        index: usize,
        ctx: &Context<'_>,
    ) -> Result<ReleasePlan, PlanError> {
        // This release's CRDs, for the releases that need it (published
        // empty if it returns before they are known).
        let mut publisher = ctx.crds.publisher(index);
        let history = self.history(d)?;
        let start = Start::choose(d, &history);
        let mut r = Draft::new(d, ctx, &start, &self.opts);
        if start.removes_only(d) {
            return r.plan_removal(start);
        }
        let mut out = self.render(&r, &start)?;
        let (mut objects, mut own_crds) = r.crds_dir(&out.rendered)?;
        // (The manifest is written: the documents move on.)
        let manifests = std::mem::take(&mut out.rendered.manifests);
        let desired = r.desired_docs(manifests, &mut own_crds, start.base)?;
        // Kinds from CRDs this plan applies before these objects: the
        // release's own, and those of the releases it needs (waited for).
        publisher.publish(own_crds.clone());
        let planned_kinds = ctx.crds.kinds_for(index, own_crds);
        planned_kinds.add_scopes(&mut r.new_kinds);
        // The last manifest; documents that did not change are not parsed
        // again: the desired document of the same text stands for them.
        let known = desired::by_text(&desired);
        let old_docs = match start.base {
            Some(b) => parse_record_manifest(&r.rref, b, &known)?,
            None => Vec::new(),
        };
        objects.extend(r.release_namespace(&desired)?);
        let old = r.index_old(&old_docs, &known)?;
        drop(known);
        let (main, new_keys) = self.plan_objects(&mut r, desired, &old, &planned_kinds)?;
        objects.extend(main);
        let mut prune = r.prune(&old_docs, &old.keys, &new_keys)?;
        prune.extend(r.failed_leftovers(&start, &old.keys, &new_keys)?);
        prune::sort_prune(&mut prune);
        objects.extend(prune);
        let hooks = r.hooks(&out)?;
        Ok(self.finish(r, start, out, objects, hooks))
    }
}

/// What planning knows of the cluster, read once.
struct Context<'c> {
    /// Every live object the plan reads, read once, batched.
    reads: Reads<'c>,
    /// The CRDs each release renders, for the releases that need it.
    crds: super::crds::Board,
    server_version: String,
    api_versions: Vec<String>,
    scopes: HashMap<(String, String), Scope>,
}

impl<'c> Context<'c> {
    fn new(cluster: &'c dyn Cluster, identity: &crate::cluster::ClusterIdentity) -> Context<'c> {
        let resources = cluster.api_resources().unwrap_or_default();
        let mut scopes = HashMap::with_capacity(resources.len());
        let mut api_versions = BTreeSet::new();
        for r in &resources {
            scopes.insert(
                (r.group.clone(), r.kind.clone()),
                if r.namespaced {
                    Scope::Namespaced
                } else {
                    Scope::Cluster
                },
            );
            api_versions.insert(r.api_version());
            api_versions.insert(format!("{}/{}", r.api_version(), r.kind));
        }
        Context {
            reads: Reads::new(cluster),
            crds: super::crds::Board::new(&[], &[]),
            server_version: identity.server_version.clone(),
            api_versions: api_versions.into_iter().collect(),
            scopes,
        }
    }
}

/// One release being planned: what its phases share, and what they
/// collect on the way (preconditions, blocking messages, drift).
struct Draft<'p, 'c> {
    /// The release as the file wants it.
    d: &'p DesiredRelease,
    /// `namespace/name`, for errors.
    rref: ReleaseRef,
    /// What planning knows of the cluster.
    ctx: &'p Context<'c>,
    /// The action the history chose (a `noop` upgrade is found last).
    action: ReleaseAction,
    /// Whether an object may skip the dry run when provably unchanged:
    /// the base is the last record and deployed, so the live objects of
    /// unchanged documents are what its apply left, unless they drifted.
    base_is_last_deployed: bool,
    /// The scopes of kinds this plan's CRDs define, beside the cluster's.
    new_kinds: HashMap<(String, String), Scope>,
    /// The live objects read, as the executor re-checks them.
    preconditions: Preconditions,
    /// Why the release cannot be applied as planned.
    blocked: Vec<String>,
    /// Whether a live object drifted from the last manifest.
    drift: bool,
    /// The new record's [`release::Release::applied`]: what an apply of
    /// each object's text leaves, or, for the objects the executor
    /// writes, their text digest for it to complete.
    applied: Vec<(String, String)>,
    /// The base record's [`release::Release::applied`].
    base_applied: Option<&'p std::collections::BTreeMap<String, String>>,
}

impl<'p, 'c> Draft<'p, 'c> {
    fn new(
        d: &'p DesiredRelease,
        ctx: &'p Context<'c>,
        start: &Start<'p>,
        opts: &PlanOptions,
    ) -> Self {
        Draft {
            d,
            rref: d.reference(),
            ctx,
            action: start.action,
            base_is_last_deployed: !opts.always_dry_run
                && start.action == ReleaseAction::Upgrade
                && start.base.is_some_and(|b| {
                    b.info.status == release::Status::Deployed
                        && start.last.map(|l| l.version) == Some(b.version)
                }),
            new_kinds: HashMap::new(),
            preconditions: start.preconditions(),
            blocked: Vec::new(),
            drift: false,
            applied: Vec::new(),
            base_applied: start.base.map(|b| &b.applied),
        }
    }

    /// A cluster error, as this release's.
    fn cluster_error(&self) -> impl FnOnce(ClusterError) -> PlanError + '_ {
        |source| PlanError::Cluster {
            release: self.rref.clone(),
            source: Box::new(source),
        }
    }

    /// Reads a live object and records it as a precondition.
    fn get(&mut self, key: &ObjectKey) -> Result<Option<Arc<Value>>, PlanError> {
        let live = self.ctx.reads.get(key).map_err(self.cluster_error())?;
        record_precondition(&mut self.preconditions, key, live.as_deref());
        Ok(live)
    }

    /// The object's plan key, with the namespace Helm applies it in: the
    /// release namespace for namespaced kinds without one, none for
    /// cluster-scoped kinds (the cluster's, or those of this plan's CRDs).
    fn qualify(&self, value: &Value) -> Result<PlanKey, PlanError> {
        let api_version = value
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
        let meta = value.get("metadata");
        let name = meta
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let namespace = meta
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .unwrap_or("");
        self.qualify_parts(api_version, kind, name, namespace)
            .map_err(|()| PlanError::Manifest {
                release: self.rref.clone(),
                origin: describe(value),
                message: "an object needs apiVersion, kind and metadata.name".into(),
            })
    }

    /// [`Draft::qualify`] of an object's apiVersion, kind, name and
    /// namespace (empty when unset); `Err` when one of the first three is
    /// empty.
    fn qualify_parts(
        &self,
        api_version: &str,
        kind: &str,
        name: &str,
        namespace: &str,
    ) -> Result<PlanKey, ()> {
        if api_version.is_empty() || kind.is_empty() || name.is_empty() {
            return Err(());
        }
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let scope = match self.ctx.scopes.get(&(group.to_string(), kind.to_string())) {
            Some(s) => *s,
            None => self
                .new_kinds
                .get(&(group.to_string(), kind.to_string()))
                .copied()
                .unwrap_or(Scope::Namespaced),
        };
        let namespace = match scope {
            Scope::Cluster => String::new(),
            Scope::Namespaced if namespace.is_empty() => self.d.namespace.clone(),
            Scope::Namespaced => namespace.to_string(),
        };
        Ok(PlanKey {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
            namespace,
            name: name.to_string(),
        })
    }
}

/// The object a document proved unchanged without reading it stands for
/// ([`DesiredObject`]): parsed, in its namespace, with its release's
/// ownership metadata, as the planner makes every object it applies. The
/// text was applied before, so it parses; if it did not, the object would
/// be `null`.
pub(crate) fn read_unread(doc: &UnreadDocument) -> Value {
    let rref = ReleaseRef {
        namespace: doc.release_namespace.clone(),
        name: doc.release.clone(),
    };
    let Ok(mut value) = documents::parse_doc(&rref, "", &doc.text) else {
        return Value::Null;
    };
    documents::set_namespace(&mut value, &doc.namespace);
    crate::cluster::ownership::stamp(&mut value, &doc.release, &doc.release_namespace);
    value
}

/// Records a live object's uid and resourceVersion (empty when absent) as a
/// precondition.
fn record_precondition(pre: &mut Preconditions, key: &ObjectKey, live: Option<&Value>) {
    let meta = live.and_then(|v| v.get("metadata"));
    let field = |f: &str| {
        meta.and_then(|m| m.get(f))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    pre.objects.push(ObjectPrecondition {
        key: key.clone(),
        uid: field("uid"),
        resource_version: field("resourceVersion"),
    });
}
