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
//!    every desired value already (see `provably_unchanged`); a custom
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
use super::input::{DesiredRelease, ReleaseRef, WaitStrategy};
use super::model::*;
use super::order::{self, OrderError};
use crate::cluster::reads::Reads;
use crate::cluster::{ownership, Cluster, ClusterError, ObjectKey, Scope};
use crate::manifest::order::{compare_kinds, INSTALL_ORDER};
use crate::release::{self, Release, Status};
use crate::render::{self, RenderError, RenderOptions, Rendered};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap};

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
        // cores; the results come back in order, and the first error in
        // that order is the one reported, as a sequential loop would.
        let mut plans =
            crate::par::map_claimed(&order, 2, |&i| self.plan_release(&releases[i], i, &ctx))
                .into_iter()
                .collect::<Result<Vec<_>, _>>()?;
        block_shared_creates(&mut plans);
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

    fn plan_release(
        &self,
        d: &DesiredRelease,
        index: usize,
        ctx: &Context<'_>,
    ) -> Result<ReleasePlan, PlanError> {
        let rref = d.reference();
        // This release's CRDs, for the releases that need it (published
        // empty if it returns before they are known).
        let mut publisher = ctx.crds.publisher(index);
        let store_err = |source| PlanError::Store {
            release: rref.clone(),
            source: Box::new(source),
        };
        // An unreadable newest record refuses the plan: building on the
        // revision before it would rewrite history.
        let mut history =
            match release::Releases::new(self.store).history_checked(&d.namespace, &d.name) {
                Ok(h) => h,
                Err(release::OpError::Store(release::StoreError::NotFound)) => Vec::new(),
                Err(e) => return Err(store_err(e)),
            };
        history.sort_by_key(|r| r.version);
        let last = history.last();
        let deployed = history
            .iter()
            .rev()
            .find(|r| r.info.status == Status::Deployed);
        let next = last.map_or(1, |l| l.version + 1);
        // A revision no store may hold could never be finished: refuse the
        // plan rather than leave a pending record behind.
        if let Some(l) = last.filter(|l| release::store::check_revision(l.version + 1).is_err()) {
            return Err(store_err(release::OpError::NoNextRevision {
                name: l.name.clone(),
                last: l.version,
            }));
        }

        // The release action and the revision the diff starts from.
        let (mut action, reason, base): (ReleaseAction, String, Option<&Release>) = match last {
            None if d.absent => (
                ReleaseAction::Noop,
                "not installed, and the file marks it absent".into(),
                None,
            ),
            None => (ReleaseAction::Install, "no release record".into(), None),
            Some(l) if d.absent => {
                if l.info.status == Status::Uninstalled {
                    (
                        ReleaseAction::Noop,
                        format!("already uninstalled (revision {})", l.version),
                        None,
                    )
                } else {
                    (
                        ReleaseAction::Uninstall,
                        "the file marks the release absent".into(),
                        deployed.or(Some(l)),
                    )
                }
            }
            Some(l) if l.info.status.is_pending() => (
                ReleaseAction::Recover,
                format!(
                    "revision {} is stuck in {}: an earlier run was interrupted; it is settled first, then the release is upgraded{}",
                    l.version,
                    l.info.status.as_str(),
                    deployed.map_or(String::new(), |d| format!(" from revision {}", d.version))
                ),
                deployed,
            ),
            Some(l) if l.info.status == Status::Uninstalled => (
                ReleaseAction::Install,
                format!(
                    "revision {} is uninstalled (history kept): installed as revision {next}",
                    l.version
                ),
                None,
            ),
            Some(l) if l.info.status == Status::Failed => match deployed {
                Some(dep) => (
                    ReleaseAction::Upgrade,
                    format!(
                        "revision {} failed: upgrading from the last deployed revision {}",
                        l.version, dep.version
                    ),
                    Some(dep),
                ),
                None => (
                    ReleaseAction::Upgrade,
                    format!(
                        "revision {} failed and none is deployed: upgrading from it",
                        l.version
                    ),
                    Some(l),
                ),
            },
            Some(l) => (
                ReleaseAction::Upgrade,
                "new revision".into(),
                deployed.or(Some(l)),
            ),
        };

        let opts = &d.options;
        let mut preconditions = Preconditions {
            last_record: last.map(|l| RecordPrecondition {
                revision: l.version,
                status: l.info.status.as_str().to_string(),
            }),
            objects: Vec::new(),
        };
        let from = base.map(|b| FromRevision {
            revision: b.version,
            status: b.info.status.as_str().to_string(),
            chart: b.chart_label(),
            app_version: b.app_version(),
            manifest_digest: digest(b.manifest.as_bytes()),
            values_digest: values_digest(&b.config),
        });
        let no_cache = foldhash::HashMap::default();

        if action == ReleaseAction::Uninstall || (action == ReleaseAction::Noop && d.absent) {
            let mut objects = Vec::new();
            if action == ReleaseAction::Uninstall {
                let old_docs = match base {
                    Some(b) => parse_record_manifest(&rref, b, &no_cache)?,
                    None => Vec::new(),
                };
                for doc in old_docs.iter().rev() {
                    let value = doc.parsed();
                    let key = self.qualify(ctx, &rref, value, &d.namespace)?;
                    let live = self.get(ctx, &rref, &key.object_key(), &mut preconditions)?;
                    objects.push(removal(&key, live.as_deref(), &d.name, &d.namespace, value));
                }
                sort_prune(&mut objects);
            }
            let to = ToRevision {
                revision: last.map_or(0, |l| l.version),
                chart: base.map_or(String::new(), Release::chart_label),
                app_version: base.map_or(String::new(), Release::app_version),
                manifest_digest: base.map_or(String::new(), |b| digest(b.manifest.as_bytes())),
                values_digest: base.map_or(String::new(), |b| values_digest(&b.config)),
            };
            return Ok(ReleasePlan {
                name: d.name.clone(),
                namespace: d.namespace.clone(),
                action,
                reason,
                from,
                to,
                needs: d.needs.iter().map(|n| n.release.clone()).collect(),
                options: opts.clone(),
                blocked: None,
                warnings: Vec::new(),
                preflight: Vec::new(),
                objects,
                hooks: Vec::new(),
                recovery: Recovery::default(),
                preconditions,
                record: None,
                record_digest: String::new(),
            });
        }

        // Render for the revision the plan writes.
        let is_upgrade = matches!(action, ReleaseAction::Upgrade | ReleaseAction::Recover);
        let ropts = RenderOptions {
            release_name: d.name.clone(),
            namespace: d.namespace.clone(),
            revision: next as i64,
            is_upgrade,
            kube_version: Some(ctx.server_version.clone()),
            api_versions: ctx.api_versions.clone(),
            ..RenderOptions::default()
        };
        let chart_label = format!("{}-{}", d.chart.metadata.name, d.chart.metadata.version);
        let rendered = self
            .renderer
            .render(d, &ropts)
            .map_err(|source| PlanError::Render {
                release: rref.clone(),
                chart: chart_label.clone(),
                source: Box::new(source),
            })?;
        let manifest = render::output::release_manifest(&rendered, false);
        // Values that no template reads change nothing: say so, and do not
        // let them alone make a new revision.
        let reads = std::cell::OnceCell::new();
        let reads_values = || *reads.get_or_init(|| render::values::reads_values(&d.chart));
        let mut warnings = Vec::new();
        if !d.values.is_empty() && !reads_values() {
            let keys: Vec<&str> = d.values.keys().map(String::as_str).collect();
            warnings.push(format!(
                "values given ({}) are ignored: no template of chart {chart_label} reads values{}",
                keys.join(", "),
                if d.chart.values.is_none() {
                    ", and it has no default values (a chart built from a component renders fixed manifests)"
                } else {
                    ""
                }
            ));
        }
        let to = ToRevision {
            revision: next,
            chart: chart_label.clone(),
            app_version: d.chart.metadata.app_version.clone(),
            manifest_digest: digest(manifest.as_bytes()),
            values_digest: values_digest(&d.values),
        };

        // CRDs of crds/: created when missing, never updated or deleted.
        let mut objects = Vec::new();
        let mut new_kinds: HashMap<(String, String), Scope> = HashMap::new();
        let mut own_crds = Vec::new();
        for crd in &rendered.crds {
            let text = String::from_utf8_lossy(&crd.content);
            for doc in crate::manifest::split::split_manifests(&text) {
                let value = parse_doc(&rref, &crd.path, doc)?;
                if value.is_null() {
                    continue;
                }
                let Some(key) = ObjectKey::of(&value) else {
                    return Err(PlanError::Manifest {
                        release: rref.clone(),
                        origin: crd.path.clone(),
                        message: "a CRD without apiVersion, kind or metadata.name".into(),
                    });
                };
                note_crd_kind(&value, &mut new_kinds);
                own_crds.extend(super::crds::CrdDef::of(&value, &rref, true));
                let pkey = plan_key(&value, &key);
                let live = self.get(ctx, &rref, &key, &mut preconditions)?;
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
        // CRDs among the templates also define kinds for this release.
        let mut desired_docs = Vec::with_capacity(rendered.manifests.len());
        for m in &rendered.manifests {
            let value = parse_doc(&rref, &m.source, &m.content)?;
            if value.is_null() {
                continue;
            }
            note_crd_kind(&value, &mut new_kinds);
            own_crds.extend(super::crds::CrdDef::of(&value, &rref, false));
            desired_docs.push((m.source.clone(), m.content.as_str(), value));
        }
        // Kinds from CRDs this plan applies before these objects: the
        // release's own, and those of the releases it needs (waited for).
        publisher.publish(own_crds.clone());
        let planned_kinds = ctx.crds.kinds_for(index, own_crds);
        planned_kinds.add_scopes(&mut new_kinds);
        // The last manifest; documents that did not change are not parsed
        // again: the desired document of the same text stands for them.
        // foldhash: the keys are whole documents, SipHash is slow on them.
        let known: foldhash::HashMap<&str, &Value> = desired_docs
            .iter()
            .map(|(_, text, v)| (text.trim(), v))
            .collect();
        let old_docs = match base {
            Some(b) => parse_record_manifest(&rref, b, &known)?,
            None => Vec::new(),
        };

        // The release namespace.
        if opts.create_namespace {
            let key = ObjectKey::new("", "Namespace", "", &d.namespace);
            let declared = desired_docs
                .iter()
                .any(|(_, _, v)| ObjectKey::of(v).as_ref() == Some(&key));
            if !declared {
                let live = self.get(ctx, &rref, &key, &mut preconditions)?;
                if live.is_none() {
                    let ns = serde_json::json!({
                        "apiVersion": "v1",
                        "kind": "Namespace",
                        "metadata": {"name": d.namespace},
                    });
                    objects.push(ObjectChange {
                        key: plan_key(&ns, &key),
                        action: ObjectAction::Create,
                        stage: Stage::Namespaces,
                        reason: "release namespace absent (createNamespace)".into(),
                        changed: Vec::new(),
                        diff: String::new(),
                        wait: None,
                        desired: Some(ns),
                        planned_crd: None,
                    });
                }
            }
        }

        // Index of the last manifest by identity.
        let mut old_keys = Vec::with_capacity(old_docs.len());
        let mut old_by_key: BTreeMap<ObjectKey, &OldDoc> = BTreeMap::new();
        for doc in &old_docs {
            let value = match &doc.value {
                Some(v) => v,
                None => known
                    .get(doc.text.as_str())
                    .copied()
                    .unwrap_or(&Value::Null),
            };
            let key = self.qualify_with(ctx, &rref, value, &d.namespace, &new_kinds)?;
            old_by_key.insert(key.object_key(), doc);
            old_keys.push(key);
        }
        drop(known);

        // The base is the last record and deployed: the live objects of
        // unchanged documents are what its apply left, unless they drifted.
        let base_is_last_deployed = !self.opts.always_dry_run
            && action == ReleaseAction::Upgrade
            && base.is_some_and(|b| {
                b.info.status == Status::Deployed && last.map(|l| l.version) == Some(b.version)
            });
        let mut blocked: Vec<String> = Vec::new();
        let mut drift = false;
        let mut main = Vec::with_capacity(desired_docs.len());
        let mut new_keys = BTreeSet::new();
        // The objects' keys first, then their live state in one batch.
        let mut keyed = Vec::with_capacity(desired_docs.len());
        for (source, text, mut value) in desired_docs {
            let pkey = self.qualify_with(ctx, &rref, &value, &d.namespace, &new_kinds)?;
            set_namespace(&mut value, &pkey.namespace);
            ownership::stamp(&mut value, &d.name, &d.namespace);
            let key = pkey.object_key();
            if !new_keys.insert(key.clone()) {
                return Err(PlanError::Manifest {
                    release: rref.clone(),
                    origin: source,
                    message: format!("{key} is rendered twice"),
                });
            }
            keyed.push((text, value, pkey, key));
        }
        let keys: Vec<ObjectKey> = keyed.iter().map(|(_, _, _, k)| k.clone()).collect();
        let lives = ctx
            .reads
            .get_many(&keys)
            .map_err(|source| PlanError::Cluster {
                release: rref.clone(),
                source: Box::new(source),
            })?;
        for ((text, value, pkey, key), live) in keyed.into_iter().zip(lives) {
            record_precondition(&mut preconditions, &key, live.as_deref());
            let planned = if planned_kinds.is_empty() {
                None
            } else {
                planned_kinds
                    .planned(&ctx.reads, &pkey)
                    .map_err(|source| PlanError::Cluster {
                        release: rref.clone(),
                        source: Box::new(source),
                    })?
            };
            let old = old_by_key.get(&key).copied();
            let wait = if opts.waits() {
                wait_rule(&key.kind, opts.wait_strategy, opts.wait_for_jobs)
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
            match live {
                None => {
                    change.action = ObjectAction::Create;
                    change.reason = if old.is_some() {
                        drift = true;
                        "in the last manifest but absent live (deleted out of band)".into()
                    } else {
                        "absent live".into()
                    };
                }
                Some(live) => {
                    let owner_ok = ownership::owned_by(&live, &d.name, &d.namespace);
                    let foreign = ownership::owner(&live)
                        .filter(|o| *o != (d.name.as_str(), d.namespace.as_str()));
                    if old.is_none() || foreign.is_some() {
                        if opts.take_ownership {
                            change.action = ObjectAction::Adopt;
                            change.reason = match ownership::owner(&live) {
                                Some((n, ns)) if !owner_ok => format!("taken over from release {ns}/{n} (take-ownership)"),
                                Some(_) => "owned by this release but not in its last manifest".into(),
                                None => "exists without Helm's ownership metadata; adopted (take-ownership)".into(),
                            };
                        } else if owner_ok {
                            change.action = ObjectAction::Adopt;
                            change.reason =
                                "owned by this release but not in its last manifest".into();
                        } else {
                            let why = ownership::check(&live, &d.name, &d.namespace)
                                .unwrap_or_else(|| "invalid ownership metadata".into());
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
                            let msg = format!(
                                "Unable to continue with {verb}: {} {:?}{ns_part} exists and cannot be imported into the current release: {why}",
                                key.kind, key.name
                            );
                            blocked.push(msg.clone());
                            change.action = ObjectAction::Skip;
                            change.reason = format!("ownership conflict: {why}");
                            change.desired = Some(value);
                            main.push((text, change));
                            continue;
                        }
                    }
                    // A document of the same text as the desired one applied what
                    // the desired one does: it removes nothing (stamping only adds
                    // fields, and a cluster-scoped object, whose namespace the
                    // stamp drops, has none live), so there is nothing to compare.
                    let old_applied = old.and_then(|o| o.value.as_ref());
                    // A dry run only where it can matter: not for an object the
                    // last successful apply set from this very text and that is
                    // still as that apply left it.
                    let same_text = base_is_last_deployed
                        && owner_ok
                        && old.is_some_and(|o| o.text == text.trim());
                    if same_text && provably_unchanged(&value, &live) {
                        change.action = ObjectAction::Unchanged;
                        change.reason = "live matches the desired object".into();
                        change.desired = Some(value);
                        main.push((text, change));
                        continue;
                    }
                    // An object whose CRD this plan applies first is
                    // compared as rendered: the server cannot dry-run it.
                    let dry =
                        match planned {
                            Some(_) => value.clone(),
                            None => self.cluster.dry_run(&value).map_err(|source| {
                                PlanError::Cluster {
                                    release: rref.clone(),
                                    source: Box::new(source),
                                }
                            })?,
                        };
                    let changed = changed_fields(&dry, &value, &live, old_applied);
                    if change.action != ObjectAction::Adopt {
                        if changed.is_empty() {
                            change.action = ObjectAction::Unchanged;
                            change.reason = "live matches the desired object".into();
                        } else {
                            change.action = ObjectAction::Update;
                            let chart_changed = old.is_none_or(|o| o.text != text);
                            change.reason = if chart_changed {
                                "the desired object changed".into()
                            } else {
                                drift = true;
                                format!("drift: live differs at {}", changed.join(", "))
                            };
                        }
                    }
                    if !changed.is_empty() {
                        let (_, projected) = managed_diff(&dry, &value, &live, old_applied);
                        change.diff = unified_diff(
                            &projected,
                            &dry_projection(&dry, &value),
                            &key,
                            self.opts.show_secrets,
                        );
                    }
                    change.changed = changed;
                }
            }
            if let Some(p) = &planned {
                blocked.extend(p.annotate(&mut change, &value, &rref));
            }
            change.desired = Some(value);
            main.push((text, change));
        }
        // Helm's install order (the render already sorted; keep it stable).
        main.sort_by(|a, b| compare_kinds(INSTALL_ORDER, &a.1.key.kind, &b.1.key.kind));
        objects.extend(main.into_iter().map(|(_, c)| c));

        // What the last manifest had and the new one lacks.
        let mut prune = Vec::new();
        for (doc, key) in old_docs.iter().zip(&old_keys) {
            // (A document of a desired one's text has its key: only parsed
            // ones get past this.)
            if new_keys.contains(&key.object_key()) {
                continue;
            }
            let live = self.get(ctx, &rref, &key.object_key(), &mut preconditions)?;
            prune.push(removal(
                key,
                live.as_deref(),
                &d.name,
                &d.namespace,
                doc.parsed(),
            ));
        }
        // Objects that failed revisions after the base created, and that
        // neither the base nor the new manifest has: Helm no longer tracks
        // them and leaves them for good (helm/helm#11748). They are deleted
        // when this release still owns them live.
        if let Some(b) = base {
            let mut seen: BTreeSet<ObjectKey> = new_keys.iter().cloned().collect();
            seen.extend(old_keys.iter().map(PlanKey::object_key));
            for r in history
                .iter()
                .filter(|r| r.version > b.version && r.info.status == Status::Failed)
                .rev()
            {
                for doc in parse_record_manifest(&rref, r, &no_cache)? {
                    // A kind no longer served cannot have live objects left.
                    let Ok(key) =
                        self.qualify_with(ctx, &rref, doc.parsed(), &d.namespace, &new_kinds)
                    else {
                        continue;
                    };
                    if !seen.insert(key.object_key()) {
                        continue;
                    }
                    let live = self.get(ctx, &rref, &key.object_key(), &mut preconditions)?;
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
                            prune.push(c);
                        }
                        _ => {}
                    }
                }
            }
        }
        sort_prune(&mut prune);
        objects.extend(prune);

        // Hooks.
        let phase_pre = if is_upgrade {
            "pre-upgrade"
        } else {
            "pre-install"
        };
        let phase_post = if is_upgrade {
            "post-upgrade"
        } else {
            "post-install"
        };
        let mut hooks = Vec::new();
        for phase in [phase_pre, phase_post] {
            let mut these: Vec<&render::RenderedHook> = rendered
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
                let mut value = parse_doc(&rref, &h.source, &h.content)?;
                let key = self.qualify_with(ctx, &rref, &value, &d.namespace, &new_kinds)?;
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

        // Noop: same chart, same values, same manifest, nothing drifted.
        if action == ReleaseAction::Upgrade && blocked.is_empty() && !self.opts.always_revision {
            if let (Some(b), Some(f)) = (base, &from) {
                let same = b.info.status == Status::Deployed
                    && f.chart == to.chart
                    && f.manifest_digest == to.manifest_digest
                    && (f.values_digest == to.values_digest || !reads_values())
                    && !drift
                    && objects
                        .iter()
                        .all(|o| matches!(o.action, ObjectAction::Unchanged | ObjectAction::Skip))
                    && hooks_same(b, &rendered);
                if same {
                    action = ReleaseAction::Noop;
                }
            }
        }
        let (reason, to) = if action == ReleaseAction::Noop {
            let b = base.map_or(0, |b| b.version);
            let what = if base.is_some_and(|b| values_digest(&b.config) != to.values_digest) {
                "same chart and manifest (the values differ, but no template reads them), and no live drift: no new revision"
            } else {
                "same chart, values and manifest, and no live drift: no new revision"
            };
            (what.to_string(), ToRevision { revision: b, ..to })
        } else {
            (reason, to)
        };

        let recovery = if action == ReleaseAction::Noop {
            Recovery::default()
        } else {
            Recovery {
                rollback_revision: base
                    .filter(|_| action != ReleaseAction::Install)
                    .map(|b| b.version),
                rollback_manifest_digest: base
                    .filter(|_| action != ReleaseAction::Install)
                    .map_or(String::new(), |b| digest(b.manifest.as_bytes())),
                prune_revisions: prune_revisions(
                    &history,
                    opts.history_max,
                    deployed.map(|d| d.version),
                ),
            }
        };

        let record = if self.opts.with_records && action != ReleaseAction::Noop {
            Some(record_value(d, &rendered, &manifest, next))
        } else {
            None
        };
        let blocked = if blocked.is_empty() {
            None
        } else {
            Some(blocked.join("\n"))
        };
        preconditions.objects.sort_by(|a, b| a.key.cmp(&b.key));
        preconditions.objects.dedup();
        Ok(ReleasePlan {
            name: d.name.clone(),
            namespace: d.namespace.clone(),
            action,
            reason,
            from,
            to,
            needs: d.needs.iter().map(|n| n.release.clone()).collect(),
            options: opts.clone(),
            blocked,
            warnings,
            preflight: Vec::new(),
            objects,
            hooks,
            recovery,
            preconditions,
            record_digest: record.as_ref().map_or(String::new(), |r| {
                digest(&serde_json::to_vec(r).unwrap_or_default())
            }),
            record,
        })
    }

    /// Reads a live object and records it as a precondition.
    fn get(
        &self,
        ctx: &Context<'_>,
        rref: &ReleaseRef,
        key: &ObjectKey,
        pre: &mut Preconditions,
    ) -> Result<Option<std::sync::Arc<Value>>, PlanError> {
        let live = ctx.reads.get(key).map_err(|source| PlanError::Cluster {
            release: rref.clone(),
            source: Box::new(source),
        })?;
        record_precondition(pre, key, live.as_deref());
        Ok(live)
    }

    fn qualify(
        &self,
        ctx: &Context<'_>,
        rref: &ReleaseRef,
        value: &Value,
        release_ns: &str,
    ) -> Result<PlanKey, PlanError> {
        self.qualify_with(ctx, rref, value, release_ns, &HashMap::new())
    }

    /// The object's plan key, with the namespace Helm applies it in: the
    /// release namespace for namespaced kinds without one, none for
    /// cluster-scoped kinds.
    fn qualify_with(
        &self,
        ctx: &Context<'_>,
        rref: &ReleaseRef,
        value: &Value,
        release_ns: &str,
        new_kinds: &HashMap<(String, String), Scope>,
    ) -> Result<PlanKey, PlanError> {
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
        if api_version.is_empty() || kind.is_empty() || name.is_empty() {
            return Err(PlanError::Manifest {
                release: rref.clone(),
                origin: describe(value),
                message: "an object needs apiVersion, kind and metadata.name".into(),
            });
        }
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let scope = match ctx.scopes.get(&(group.to_string(), kind.to_string())) {
            Some(s) => *s,
            None => new_kinds
                .get(&(group.to_string(), kind.to_string()))
                .copied()
                .unwrap_or(Scope::Namespaced),
        };
        let namespace = match scope {
            Scope::Cluster => String::new(),
            Scope::Namespaced => meta
                .and_then(|m| m.get("namespace"))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .unwrap_or(release_ns)
                .to_string(),
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

/// A document of a recorded manifest.
struct OldDoc {
    /// The document text as recorded (for a cheap "did it change" test).
    text: String,
    /// The parsed document; `None` when a desired document has the same
    /// text (its parse stands for this one).
    value: Option<Value>,
}

impl OldDoc {
    /// The parsed document: [`Value::Null`] for one that a desired
    /// document stands for (never asked of those).
    fn parsed(&self) -> &Value {
        self.value.as_ref().unwrap_or(&Value::Null)
    }
}

fn parse_record_manifest(
    rref: &ReleaseRef,
    rel: &Release,
    known: &foldhash::HashMap<&str, &Value>,
) -> Result<Vec<OldDoc>, PlanError> {
    let mut out = Vec::new();
    for doc in crate::manifest::split::split_manifests(&rel.manifest) {
        // Helm's manifest documents start with a `# Source:` comment line.
        let body = match doc.strip_prefix("# Source: ") {
            Some(rest) => rest.split_once('\n').map_or("", |(_, b)| b),
            None => doc,
        };
        let text = body.trim();
        if known.contains_key(text) {
            out.push(OldDoc {
                text: text.to_string(),
                value: None,
            });
            continue;
        }
        let source = format!("release {rref} revision {}", rel.version);
        let value = parse_doc(rref, &source, body)?;
        if value.is_null() {
            continue;
        }
        out.push(OldDoc {
            text: text.to_string(),
            value: Some(value),
        });
    }
    Ok(out)
}

fn parse_doc(rref: &ReleaseRef, source: &str, text: &str) -> Result<Value, PlanError> {
    let node = crate::yaml::parse_yaml_to_json(text).map_err(|e| PlanError::Manifest {
        release: rref.clone(),
        origin: source.to_string(),
        message: e.to_string(),
    })?;
    let value = node_to_value(node).map_err(|e| PlanError::Manifest {
        release: rref.clone(),
        origin: source.to_string(),
        message: e.to_string(),
    })?;
    if !(value.is_object() || value.is_null()) {
        return Err(PlanError::Manifest {
            release: rref.clone(),
            origin: source.to_string(),
            message: "a document is not an object".into(),
        });
    }
    Ok(value)
}

/// `serde_json::to_value(&node)`, by moving the node's parts instead of
/// serialising them: the same value and the same error, without the copies.
fn node_to_value(node: crate::yaml::Node) -> Result<Value, serde_json::Error> {
    use crate::yaml::Node;
    Ok(match node {
        Node::Null => Value::Null,
        Node::Bool(b) => Value::Bool(b),
        Node::Int(i) => Value::Number(i.into()),
        Node::Float(f) => {
            // Node's Serialize: an integral float is written as an i128,
            // which serde_json's value serializer takes as u64 or i64, or
            // refuses as out of range.
            if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e21 {
                let i = f as i128;
                if let Ok(u) = u64::try_from(i) {
                    Value::Number(u.into())
                } else if let Ok(n) = i64::try_from(i) {
                    Value::Number(n.into())
                } else {
                    return serde_json::to_value(Node::Float(f));
                }
            } else {
                Value::from(f)
            }
        }
        Node::Str(s) => Value::String(s),
        Node::Seq(items) => Value::Array(
            items
                .into_iter()
                .map(node_to_value)
                .collect::<Result<_, _>>()?,
        ),
        Node::Map(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                out.insert(k, node_to_value(v)?);
            }
            Value::Object(out)
        }
    })
}

fn describe(value: &Value) -> String {
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("?");
    let name = value
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("?");
    format!("{kind} {name:?}")
}

fn note_crd_kind(value: &Value, kinds: &mut HashMap<(String, String), Scope>) {
    if value.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
        return;
    }
    let spec = value.get("spec");
    let group = spec.and_then(|s| s.get("group")).and_then(Value::as_str);
    let kind = spec
        .and_then(|s| s.get("names"))
        .and_then(|n| n.get("kind"))
        .and_then(Value::as_str);
    let scope = match spec.and_then(|s| s.get("scope")).and_then(Value::as_str) {
        Some("Cluster") => Scope::Cluster,
        _ => Scope::Namespaced,
    };
    if let (Some(g), Some(k)) = (group, kind) {
        kinds.insert((g.to_string(), k.to_string()), scope);
    }
}

fn plan_key(value: &Value, key: &ObjectKey) -> PlanKey {
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let version = api_version.rsplit_once('/').map_or(api_version, |(_, v)| v);
    PlanKey {
        group: key.group.clone(),
        version: version.to_string(),
        kind: key.kind.clone(),
        namespace: key.namespace.clone(),
        name: key.name.clone(),
    }
}

fn set_namespace(value: &mut Value, namespace: &str) {
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        if namespace.is_empty() {
            meta.remove("namespace");
        } else {
            meta.insert("namespace".into(), Value::String(namespace.to_string()));
        }
    }
}

/// The delete-or-keep decision for an object the new manifest lacks
/// (`manifest`: its document in the last manifest).
fn removal(
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
fn sort_prune(objects: &mut [ObjectChange]) {
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

fn hooks_same(base: &Release, rendered: &Rendered) -> bool {
    base.hooks.len() == rendered.hooks.len()
        && base
            .hooks
            .iter()
            .zip(&rendered.hooks)
            .all(|(a, b)| a.manifest == b.content && a.path == b.source)
}

/// Releases of one plan that both make an object absent live: each release
/// is planned against the live state, so both would `create` it, and the
/// later apply would silently take it over. Helm run release by release
/// refuses the later one (its ownership check meets the object the earlier
/// release made). So the later release is blocked with Helm's message, or,
/// with take-ownership, adopts the object.
fn block_shared_creates(plans: &mut [ReleasePlan]) {
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
                        let verb = if p.action == ReleaseAction::Install {
                            "install"
                        } else {
                            "update"
                        };
                        let ns_part = if key.namespace.is_empty() {
                            String::new()
                        } else {
                            format!(" in namespace {:?}", key.namespace)
                        };
                        msgs.push(format!(
                            "Unable to continue with {verb}: {} {:?}{ns_part} exists and cannot be imported into the current release: {why}",
                            key.kind, key.name
                        ));
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

/// The fields that differ between the live object and the dry-run result,
/// on the fields the release sets (`desired`) and those its last manifest
/// set that an apply would remove. Returns the JSON pointers and the live
/// object projected on those fields.
pub fn managed_diff(
    dry: &Value,
    desired: &Value,
    live: &Value,
    old_applied: Option<&Value>,
) -> (Vec<String>, Value) {
    let mut changed = Vec::new();
    let mut ptr = String::new();
    let projected = project(dry, desired, live, &mut ptr, &mut changed);
    let before = changed.len();
    removed_anywhere(dry, desired, live, old_applied, &mut changed);
    let mut projected = projected.unwrap_or(Value::Null);
    // Removed fields are outside the desired object's shape: show them
    // from the live object, so the diff has their `-` lines.
    for p in &changed[before..] {
        if let Some(v) = live.pointer(p) {
            insert_at(&mut projected, p, v.clone());
        }
    }
    (changed, projected)
}

/// Sets `value` at JSON pointer `ptr` inside `root`, creating the objects
/// on the way (pointers here only walk objects).
fn insert_at(root: &mut Value, ptr: &str, value: Value) {
    let mut cur = root;
    let segs: Vec<String> = ptr
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    for (i, seg) in segs.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Value::Object(m) = cur else { return };
        if i + 1 == segs.len() {
            m.insert(seg.clone(), value);
            return;
        }
        cur = m
            .entry(seg.clone())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

/// Whether the live object of a document the last successful apply set
/// from the same text provably equals what an apply of `desired` would
/// make it, on the fields the plan compares, without the server's dry run:
///
/// - rudder's server-side apply set it (a `rudder` `Apply` entry in its
///   managedFields);
/// - no other manager owns a field the desired object sets that rudder
///   does not own too (a `kubectl edit`, `patch`, `scale` or client-side
///   `apply`, and another manager's forced server-side apply, take the
///   fields they change from rudder, so a changed field has another owner
///   and not rudder; the status subresource and map-presence `.` entries
///   are no such fields);
/// - every field the desired object sets has that value live, and rudder
///   owns no field live that the desired object lacks (an apply would
///   remove it).
///
/// The server's dry run of an object already stored with the desired
/// values leaves them as they are (its defaults fill absent fields only,
/// and its normal forms are what the live object holds), so the dry run's
/// comparison would find nothing either. Anything else (a Secret's
/// `stringData`, values in another spelling than the server stores, a
/// removed field) fails the value test, and takes the dry run.
fn provably_unchanged(desired: &Value, live: &Value) -> bool {
    let entries: &[Value] = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);

    let is_rudder = |e: &Value| e["manager"] == FIELD_MANAGER && e["operation"] == "Apply";
    let Some(rudder) = entries.iter().find(|e| is_rudder(e)) else {
        return false;
    };
    let rudder = fields_v1(rudder);
    for e in entries {
        if is_rudder(e) || e.get("subresource").and_then(Value::as_str) == Some("status") {
            continue;
        }
        if let Some(f) = fields_v1(e) {
            if owns_desired_field(f, Some(desired), rudder) {
                return false;
            }
        }
    }
    changed_fields(desired, desired, live, None).is_empty()
}

/// An entry's `fieldsV1` tree.
fn fields_v1(entry: &Value) -> Option<&Map<String, Value>> {
    entry.get("fieldsV1").and_then(Value::as_object)
}

/// Whether a managedFields `fieldsV1` tree names a field that `desired`
/// sets and rudder's own tree does not (a field shared with rudder has
/// rudder's value: changing it would have taken it from rudder). Inside a
/// list the desired object sets (`desired` is `None` there) every field
/// counts; `.`, the presence of a map or list item, is not a field.
fn owns_desired_field(
    owned: &Map<String, Value>,
    desired: Option<&Value>,
    rudder: Option<&Map<String, Value>>,
) -> bool {
    owned.iter().any(|(k, sub)| {
        if k == "." {
            return false;
        }
        let desired_sub = match (k.strip_prefix("f:"), desired) {
            (Some(name), Some(d)) => match d.get(name) {
                None => return false,
                Some(v) => Some(v),
            },
            // A list item, or a field inside one.
            _ => None,
        };
        let rudder_sub = rudder.and_then(|r| r.get(k)).and_then(Value::as_object);
        match sub {
            Value::Object(m) if !m.is_empty() => {
                owns_desired_field(m, desired_sub.filter(|v| v.is_object()), rudder_sub)
            }
            _ => rudder_sub.is_none(),
        }
    })
}

/// The pointers of [`managed_diff`] alone, without projecting the live
/// object (most objects are unchanged and need no diff).
fn changed_fields(
    dry: &Value,
    desired: &Value,
    live: &Value,
    old_applied: Option<&Value>,
) -> Vec<String> {
    let mut changed = Vec::new();
    let mut ptr = String::new();
    walk(dry, desired, live, &mut ptr, &mut changed, false);
    removed_anywhere(dry, desired, live, old_applied, &mut changed);
    changed
}

/// The fields an apply of `desired` removes from `live`: those the last
/// manifest set, and those rudder's own applies own on the live object.
fn removed_anywhere(
    dry: &Value,
    desired: &Value,
    live: &Value,
    old_applied: Option<&Value>,
    changed: &mut Vec<String>,
) {
    if let Some(old) = old_applied {
        let mut ptr = String::new();
        removed_fields(old, desired, live, &mut ptr, changed);
    }
    // The fields rudder's own applies set (managedFields, manager rudder,
    // operation Apply): an apply that no longer sets one removes it,
    // whichever revision set it. After a failed upgrade the last deployed
    // manifest does not know the fields the failed one added.
    let entries = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array);
    let mut removed = Vec::new();
    for e in entries.into_iter().flatten() {
        if e["manager"] != FIELD_MANAGER || e["operation"] != "Apply" {
            continue;
        }
        if let Some(Value::Object(f)) = e.get("fieldsV1") {
            let mut ptr = String::new();
            removed_owned(f, desired, live, &mut ptr, &mut removed);
        }
    }
    // Only what the server's dry run drops: a Secret's stringData lands in
    // data, which rudder then owns although the desired object never names it.
    for p in removed {
        if dry.pointer(&p).is_none() && !changed.contains(&p) {
            changed.push(p);
        }
    }
}

/// Appends a JSON-pointer segment (`~` as `~0`, `/` as `~1`).
fn push_escaped(ptr: &mut String, seg: &str) {
    if !seg.contains(['~', '/']) {
        ptr.push_str(seg);
        return;
    }
    for c in seg.chars() {
        match c {
            '~' => ptr.push_str("~0"),
            '/' => ptr.push_str("~1"),
            c => ptr.push(c),
        }
    }
}

fn skip_top(ptr: &str, key: &str) -> bool {
    ptr.is_empty() && key == "status"
}

/// Walks the shape of `desired`, comparing `dry` (the server's view of the
/// desired object) with `live`; returns `live` restricted to that shape.
fn project(
    dry: &Value,
    desired: &Value,
    live: &Value,
    ptr: &mut String,
    changed: &mut Vec<String>,
) -> Option<Value> {
    walk(dry, desired, live, ptr, changed, true)
}

/// [`project`]; with `build` false only `changed` is filled (the returned
/// value is a placeholder), which spares copying the live object.
fn walk(
    dry: &Value,
    desired: &Value,
    live: &Value,
    ptr: &mut String,
    changed: &mut Vec<String>,
    build: bool,
) -> Option<Value> {
    let copy = |v: &Value| if build { v.clone() } else { Value::Null };
    match desired {
        Value::Object(dm) => {
            let Value::Object(lm) = live else {
                changed.push(ptr_or_root(ptr));
                return Some(copy(live));
            };
            let empty = Map::new();
            let drym = dry.as_object().unwrap_or(&empty);
            let mut out = Map::new();
            for (k, dv) in dm {
                if skip_top(ptr, k) {
                    continue;
                }
                let len = ptr.len();
                ptr.push('/');
                push_escaped(ptr, k);
                // The server may drop or rename a desired field (Secret
                // stringData); compare what the dry run kept.
                let dryv = drym.get(k);
                match (dryv, lm.get(k)) {
                    (None, None) => {}
                    (None, Some(lv)) => {
                        // The dry run removed the field: nothing to compare.
                        let _ = lv;
                    }
                    (Some(_), None) => changed.push(ptr.clone()),
                    (Some(dv2), Some(lv)) => {
                        // A Secret's stringData lands in data: compare all of it.
                        let shape =
                            if k == "data" && ptr == "/data" && dm.contains_key("stringData") {
                                dv2
                            } else {
                                dv
                            };
                        if let Some(p) = walk(dv2, shape, lv, ptr, changed, build) {
                            if build {
                                out.insert(k.clone(), p);
                            }
                        }
                    }
                }
                ptr.truncate(len);
            }
            // Fields the dry run added beside the desired ones (stringData -> data).
            for (k, dv2) in drym {
                if dm.contains_key(k) || !ptr.is_empty() || !matches!(k.as_str(), "data") {
                    continue;
                }
                let len = ptr.len();
                ptr.push('/');
                push_escaped(ptr, k);
                match lm.get(k) {
                    None => changed.push(ptr.clone()),
                    Some(lv) => {
                        if let Some(p) = walk(dv2, dv2, lv, ptr, changed, build) {
                            if build {
                                out.insert(k.clone(), p);
                            }
                        }
                    }
                }
                ptr.truncate(len);
            }
            Some(Value::Object(out))
        }
        Value::Array(da) => {
            let Value::Array(la) = live else {
                changed.push(ptr_or_root(ptr));
                return Some(copy(live));
            };
            let drya = dry.as_array();
            if la.len() != da.len() || drya.map(Vec::len) != Some(da.len()) {
                changed.push(ptr_or_root(ptr));
                return Some(copy(live));
            }
            let mut out = Vec::with_capacity(if build { la.len() } else { 0 });
            for (i, (dv, lv)) in da.iter().zip(la).enumerate() {
                let len = ptr.len();
                ptr.push('/');
                {
                    use std::fmt::Write as _;
                    let _ = write!(ptr, "{i}");
                }
                let dv2 = drya.and_then(|a| a.get(i)).unwrap_or(dv);
                if let Some(p) = walk(dv2, dv, lv, ptr, changed, build) {
                    if build {
                        out.push(p);
                    }
                }
                ptr.truncate(len);
            }
            Some(Value::Array(out))
        }
        _ => {
            if !same_scalar(dry, live) {
                changed.push(ptr_or_root(ptr));
            }
            Some(copy(live))
        }
    }
}

fn ptr_or_root(ptr: &str) -> String {
    if ptr.is_empty() {
        "/".into()
    } else {
        ptr.to_string()
    }
}

fn same_scalar(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// Fields that `owned` (a managedFields `fieldsV1` tree) names, the
/// desired object lacks and live still has. Only `f:name` entries are
/// followed; list items (`k:`, `v:`, `i:`) are left out, since a list the
/// desired object still sets is compared whole. The same walk as
/// [`removed_fields`], over the server's record of what an apply set.
fn removed_owned(
    owned: &Map<String, Value>,
    desired: &Value,
    live: &Value,
    ptr: &mut String,
    out: &mut Vec<String>,
) {
    let Value::Object(lm) = live else { return };
    for (k, sub) in owned {
        let Some(name) = k.strip_prefix("f:") else {
            continue;
        };
        if skip_top(ptr, name) {
            continue;
        }
        let Some(lv) = lm.get(name) else { continue };
        let len = ptr.len();
        ptr.push('/');
        push_escaped(ptr, name);
        match (desired.get(name), sub) {
            (None, _) if !out.iter().any(|c| c == ptr) => out.push(ptr.clone()),
            (None, _) => {}
            (Some(dv), Value::Object(m)) if dv.is_object() => {
                removed_owned(m, dv, lv, ptr, out);
            }
            _ => {}
        }
        ptr.truncate(len);
    }
}

/// Leaves the last manifest set, the new one lacks, and live still has:
/// an apply removes them.
fn removed_fields(
    old: &Value,
    desired: &Value,
    live: &Value,
    ptr: &mut String,
    changed: &mut Vec<String>,
) {
    let (Value::Object(om), Value::Object(lm)) = (old, live) else {
        return;
    };
    for (k, ov) in om {
        if skip_top(ptr, k) || (ptr.is_empty() && k == "metadata" && !ov.is_object()) {
            continue;
        }
        let Some(lv) = lm.get(k) else { continue };
        let len = ptr.len();
        ptr.push('/');
        push_escaped(ptr, k);
        match desired.get(k) {
            None => {
                if !changed.iter().any(|c| c == ptr) {
                    changed.push(ptr.clone());
                }
            }
            Some(dv) if ov.is_object() && dv.is_object() => {
                removed_fields(ov, dv, lv, ptr, changed);
            }
            Some(_) => {}
        }
        ptr.truncate(len);
    }
}

/// The dry-run result restricted to the desired object's shape (what the
/// apply will make those fields).
fn dry_projection(dry: &Value, desired: &Value) -> Value {
    let mut sink = Vec::new();
    let mut ptr = String::new();
    project(dry, desired, dry, &mut ptr, &mut sink).unwrap_or(Value::Null)
}

/// What a redacted secret value shows. No digest of the value: a digest
/// lets anyone who reads the plan check a guessed value offline, and a
/// keyed one needs a key kept beside every store (the Secrets, ConfigMaps
/// and SQL drivers have no such place). Diffs still say which values
/// change ([`REDACTED_CHANGED`]).
pub const REDACTED: &str = "(redacted)";

/// A redacted secret value that differs from the live one, in a diff.
pub const REDACTED_CHANGED: &str = "(redacted, changed)";

/// A Secret's values by key, as bytes: `data` base64-decoded, then
/// `stringData` over it (as the API server folds it in).
fn secret_values(obj: &Value) -> BTreeMap<String, Vec<u8>> {
    use base64::Engine;
    let mut out = BTreeMap::new();
    for field in ["data", "stringData"] {
        if let Some(m) = obj.get(field).and_then(Value::as_object) {
            for (k, v) in m {
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let bytes = if field == "data" {
                    base64::engine::general_purpose::STANDARD
                        .decode(text.as_bytes())
                        .unwrap_or_else(|_| text.clone().into_bytes())
                } else {
                    text.into_bytes()
                };
                out.insert(k.clone(), bytes);
            }
        }
    }
    out
}

/// Replaces a Secret's `data` and `stringData` values by [`REDACTED`], or
/// by [`REDACTED_CHANGED`] where `live` (the other side of a diff) has no
/// such value or another one.
fn redact_against(obj: &mut Value, live: Option<&BTreeMap<String, Vec<u8>>>) {
    if obj.get("kind").and_then(Value::as_str) != Some("Secret") {
        return;
    }
    let mine = secret_values(obj);
    for field in ["data", "stringData"] {
        if let Some(m) = obj.get_mut(field).and_then(Value::as_object_mut) {
            for (k, v) in m.iter_mut() {
                let changed = live.is_some_and(|l| l.get(k) != mine.get(k));
                *v = Value::String(if changed { REDACTED_CHANGED } else { REDACTED }.into());
            }
        }
    }
}

/// Replaces a Secret's `data` and `stringData` values by [`REDACTED`].
pub fn redact_secret(obj: &mut Value) {
    redact_against(obj, None);
}

fn unified_diff(live: &Value, desired: &Value, key: &ObjectKey, show_secrets: bool) -> String {
    let (mut a, mut b) = (live.clone(), desired.clone());
    if !show_secrets && key.kind == "Secret" && key.group.is_empty() {
        a["kind"] = Value::String("Secret".into());
        b["kind"] = Value::String("Secret".into());
        let live = secret_values(&a);
        redact_secret(&mut a);
        redact_against(&mut b, Some(&live));
    }
    let ya = serde_yaml::to_string(&a).unwrap_or_default();
    let yb = serde_yaml::to_string(&b).unwrap_or_default();
    let d = similar::TextDiff::from_lines(&ya, &yb);
    d.unified_diff()
        .context_radius(3)
        .header(&format!("live {key}"), &format!("desired {key}"))
        .to_string()
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

fn values_digest(v: &BTreeMap<String, crate::yaml::Node>) -> String {
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
fn record_value(d: &DesiredRelease, rendered: &Rendered, manifest: &str, version: u64) -> Value {
    let mut chart = (*d.chart).clone();
    chart.dependencies.clear();
    let hooks: Vec<release::Hook> = rendered.hooks.iter().map(release::Hook::from).collect();
    let rel = Release {
        name: d.name.clone(),
        chart: Some(chart),
        config: d.values.clone(),
        manifest: manifest.to_string(),
        hooks,
        version,
        namespace: d.namespace.clone(),
        ..Default::default()
    };
    let mut v = serde_json::to_value(&rel).unwrap_or(Value::Null);
    if let Some(m) = v.as_object_mut() {
        m.remove("info");
        m.insert("notes".into(), Value::String(rendered.notes.clone()));
    }
    v
}

/// `v`'s compact JSON as the plan id sees it (see [`Plan::compute_id`]).
fn hashed_json<T: serde::Serialize>(v: &T) -> Vec<u8> {
    super::model::hashing(|| serde_json::to_vec(v)).unwrap_or_default()
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
                if let Some(d) = o.desired.as_mut() {
                    redact_secret(d);
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
    use serde_json::json;

    #[test]
    fn diff_compares_only_managed_fields() {
        let desired = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "1"}});
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "uid": "u", "resourceVersion": "3"}, "data": {"a": "1"}});
        let (changed, _) = managed_diff(&desired, &desired, &live, None);
        assert!(changed.is_empty(), "{changed:?}");
        let live2 = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "2"}});
        let (changed, _) = managed_diff(&desired, &desired, &live2, None);
        assert_eq!(changed, vec!["/data/a"]);
    }

    #[test]
    fn fields_rudder_applied_and_the_desired_object_lacks_count_as_changes() {
        // A failed upgrade applied annotation x; the last deployed manifest
        // never had it, so only the live object's managedFields tell.
        let desired = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "annotations": {"keep": "1"}}, "data": {"a": "1"}});
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "annotations": {"keep": "1", "x": "never", "y": "kubectl"},
                "managedFields": [
                    {"manager": "rudder", "operation": "Apply", "fieldsV1": {"f:metadata": {"f:annotations":
                        {"f:keep": {}, "f:x": {}}}, "f:data": {".": {}, "f:a": {}}}},
                    {"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:metadata": {"f:annotations":
                        {"f:y": {}}}}},
                    {"manager": "rudder", "operation": "Update", "fieldsV1": {"f:metadata": {"f:annotations":
                        {"f:z": {}}}}}
                ]},
            "data": {"a": "1"}});
        let (changed, _) = managed_diff(&desired, &desired, &live, None);
        assert_eq!(changed, vec!["/metadata/annotations/x"]);
        assert_eq!(
            changed_fields(&desired, &desired, &live, None),
            vec!["/metadata/annotations/x"]
        );
        // Once the apply dropped it, nothing is left to change.
        let mut after = live.clone();
        after["metadata"]["annotations"]
            .as_object_mut()
            .unwrap()
            .remove("x");
        assert!(changed_fields(&desired, &desired, &after, None).is_empty());
    }

    #[test]
    fn only_fields_taken_from_rudder_stop_the_shortcut() {
        let desired = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "annotations": {"a": "1"}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "web", "image": "i"}]}}}});
        let mut live = desired.clone();
        live["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = json!("1");
        let rudder = json!({"manager": "rudder", "operation": "Apply", "fieldsV1": {
            "f:metadata": {"f:annotations": {"f:a": {}}},
            "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"web\"}": {".": {}, "f:name": {}, "f:image": {}}}}}}}});
        // A controller's own annotation, and an applier that shares the
        // container's name with rudder: nothing was taken from rudder.
        let controller = json!({"manager": "kube-controller-manager", "operation": "Update",
            "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:deployment.kubernetes.io/revision": {}}}}});
        let sharer = json!({"manager": "other", "operation": "Apply", "fieldsV1": {"f:spec": {
            "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:name": {}}}}}}}});
        let status = json!({"manager": "kube-controller-manager", "operation": "Update",
            "subresource": "status", "fieldsV1": {"f:spec": {"f:replicas": {}}}});
        live["metadata"]["managedFields"] = json!([rudder, controller, sharer, status]);
        assert!(provably_unchanged(&desired, &live));
        // kubectl scale took replicas (same value again, but not rudder's).
        let mut scaled = live.clone();
        scaled["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]
            .as_object_mut()
            .unwrap()
            .remove("f:replicas");
        scaled["metadata"]["managedFields"]
            .as_array_mut()
            .unwrap()
            .push(
                json!({"manager": "kubectl", "operation": "Update", "subresource": "scale",
                "fieldsV1": {"f:spec": {"f:replicas": {}}}}),
            );
        assert!(!provably_unchanged(&desired, &scaled));
        // Another value, with rudder's fields as they were: the values tell.
        let mut edited = live.clone();
        edited["spec"]["replicas"] = json!(3);
        assert!(!provably_unchanged(&desired, &edited));
        // Not applied by rudder at all.
        let mut foreign = live.clone();
        foreign["metadata"]["managedFields"][0]["manager"] = json!("helm");
        assert!(!provably_unchanged(&desired, &foreign));
    }

    #[test]
    fn removed_fields_count_as_changes() {
        let old = json!({"data": {"a": "1", "b": "2"}});
        let desired = json!({"data": {"a": "1"}});
        let live = json!({"data": {"a": "1", "b": "2"}});
        let (changed, _) = managed_diff(&desired, &desired, &live, Some(&old));
        assert_eq!(changed, vec!["/data/b"]);
    }

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
    fn secrets_redact_without_digests_and_diffs_mark_changes() {
        let mut s = json!({"kind": "Secret", "data": {"p": "c2VjcmV0"}});
        redact_secret(&mut s);
        assert_eq!(s["data"]["p"], REDACTED);
        // A diff: the same value in data (live) and stringData (desired)
        // is unchanged; another value, or a new key, is changed.
        let live = json!({"kind": "Secret", "metadata": {"name": "s"}, "data": {"p": "c2VjcmV0", "q": "YQ=="}});
        let desired = json!({"kind": "Secret", "metadata": {"name": "s"}, "stringData": {"p": "secret", "q": "b", "r": "c"}});
        let key = ObjectKey::new("", "Secret", "ns", "s");
        let d = unified_diff(&live, &desired, &key, false);
        assert!(!d.contains("secret\n") && !d.contains("c2VjcmV0"), "{d}");
        assert!(d.contains("+  p: (redacted)\n"), "{d}");
        assert!(d.contains("+  q: (redacted, changed)\n"), "{d}");
        assert!(d.contains("+  r: (redacted, changed)\n"), "{d}");
        assert!(d.contains("-  q: (redacted)\n"), "{d}");
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
