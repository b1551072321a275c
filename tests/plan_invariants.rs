//! Property tests: the planning invariants 1-6 of `upgrades.md` §8.2 over
//! generated release stores, cluster states and manifests.
//!
//! A case is a set of 2-5 releases with a random `needs` DAG and a random
//! file order. Each release has a last manifest (M_old) and a desired one
//! (M_new) built from slots: objects kept (maybe changed, maybe with an
//! apiVersion bump), removed, added or renamed, with or without
//! `helm.sh/resource-policy: keep`, and optionally a CRD (in the templates
//! or in `crds/`) with custom resources. The state is made by planning and
//! settling M_old, then perturbing the cluster: managed-field drift, drift
//! on unmanaged fields, out-of-band deletes, objects taken over by another
//! release, live keep annotations, and objects pre-created with another
//! release's ownership, with none, or with this release's. Some releases are
//! fresh installs (no M_old). M_new is then planned and checked.
//!
//! The expected action of every object is derived from the live state read
//! before planning (presence and ownership, the oracle of §8.2 "against Σ")
//! and from the generator's own record of what it changed (chart text,
//! managed drift).
mod plan_common;

use plan_common::*;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use rudder::chart::Chart;
use rudder::cluster::{ownership, Cluster, ObjectKey};
use rudder::manifest::order::{compare_kinds, INSTALL_ORDER};
use rudder::plan::{
    DesiredRelease, Need, ObjectAction, Plan, ReleaseAction, ReleasePlan, ReleaseRef, Stage,
};
use serde_json::{json, Value};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// The release that owns the foreign objects.
const INTRUDER: &str = "intruder";
/// Its namespace.
const INTRUDER_NS: &str = "elsewhere";

// ---------------------------------------------------------------- kinds

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    ConfigMap,
    Deployment,
    Hpa,
    Pdb,
    ServiceAccount,
    ClusterRole,
    Widget,
    Crd,
}

impl Kind {
    fn from_index(n: u8) -> Kind {
        match n % 7 {
            0 => Kind::ConfigMap,
            1 => Kind::Deployment,
            2 => Kind::Hpa,
            3 => Kind::Pdb,
            4 => Kind::ServiceAccount,
            5 => Kind::ClusterRole,
            _ => Kind::Widget,
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Kind::ConfigMap => "ConfigMap",
            Kind::Deployment => "Deployment",
            Kind::Hpa => "HorizontalPodAutoscaler",
            Kind::Pdb => "PodDisruptionBudget",
            Kind::ServiceAccount => "ServiceAccount",
            Kind::ClusterRole => "ClusterRole",
            Kind::Widget => "Widget",
            Kind::Crd => "CustomResourceDefinition",
        }
    }

    fn group(self, widget_group: &str) -> String {
        match self {
            Kind::ConfigMap | Kind::ServiceAccount => String::new(),
            Kind::Deployment => "apps".into(),
            Kind::Hpa => "autoscaling".into(),
            Kind::Pdb => "policy".into(),
            Kind::ClusterRole => "rbac.authorization.k8s.io".into(),
            Kind::Widget => widget_group.into(),
            Kind::Crd => "apiextensions.k8s.io".into(),
        }
    }

    /// The version; `alt` picks the other served version of the two-version
    /// kinds (an apiVersion bump when old and new differ).
    fn version(self, alt: bool) -> &'static str {
        match self {
            Kind::Hpa if alt => "v2",
            Kind::Pdb if alt => "v1beta1",
            _ => "v1",
        }
    }

    fn namespaced(self) -> bool {
        !matches!(self, Kind::ClusterRole | Kind::Crd)
    }

    fn slug(self) -> &'static str {
        match self {
            Kind::ConfigMap => "cm",
            Kind::Deployment => "deploy",
            Kind::Hpa => "hpa",
            Kind::Pdb => "pdb",
            Kind::ServiceAccount => "sa",
            Kind::ClusterRole => "crole",
            Kind::Widget => "widget",
            Kind::Crd => "crd",
        }
    }
}

fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

fn crd_text(group: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.{group}\nspec:\n  group: {group}\n  names:\n    kind: Widget\n    plural: widgets\n    singular: widget\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n"
    )
}

/// One document of a manifest, as the generator wrote it.
#[derive(Debug, Clone)]
struct Doc {
    text: String,
    /// The text without the keep annotation.
    core: String,
    version: String,
    keep: bool,
}

fn doc(kind: Kind, group: &str, name: &str, var: u8, alt: bool, keep: bool) -> Doc {
    if kind == Kind::Crd {
        return Doc {
            text: crd_text(group),
            core: crd_text(group),
            version: "v1".into(),
            keep: false,
        };
    }
    let version = kind.version(alt);
    let av = api_version(&kind.group(group), version);
    let labels = if kind == Kind::ServiceAccount {
        format!("  labels:\n    tier: v{var}\n")
    } else {
        String::new()
    };
    let ann = if keep {
        "  annotations:\n    helm.sh/resource-policy: keep\n"
    } else {
        ""
    };
    let body = match kind {
        Kind::ConfigMap => format!("data:\n  k: v{var}\n"),
        Kind::Deployment => format!(
            "spec:\n  replicas: {}\n  selector:\n    matchLabels:\n      app: {name}\n  template:\n    metadata:\n      labels:\n        app: {name}\n    spec:\n      containers:\n      - name: c\n        image: nginx:1.27\n",
            var + 1
        ),
        Kind::Hpa => format!(
            "spec:\n  scaleTargetRef:\n    apiVersion: apps/v1\n    kind: Deployment\n    name: {name}\n  minReplicas: 1\n  maxReplicas: {}\n",
            var + 2
        ),
        Kind::Pdb => format!(
            "spec:\n  maxUnavailable: {}\n  selector:\n    matchLabels:\n      app: {name}\n",
            var + 1
        ),
        Kind::ServiceAccount => String::new(),
        Kind::ClusterRole => {
            let verbs = ["get", "list", "watch"][..=(var as usize % 3)].join(", ");
            format!("rules:\n- apiGroups: [\"\"]\n  resources: [\"pods\"]\n  verbs: [{verbs}]\n")
        }
        Kind::Widget => format!("spec:\n  size: {var}\n"),
        Kind::Crd => unreachable!(),
    };
    Doc {
        text: format!(
            "apiVersion: {av}\nkind: {}\nmetadata:\n  name: {name}\n{labels}{ann}{body}",
            kind.kind()
        ),
        core: format!(
            "apiVersion: {av}\nkind: {}\nmetadata:\n  name: {name}\n{labels}{body}",
            kind.kind()
        ),
        version: version.into(),
        keep,
    }
}

/// What the generator does to a live object of M_old after settling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PertOld {
    None,
    /// kubectl changes a field the release manages.
    Drift,
    /// kubectl adds a label the release does not manage.
    Benign,
    /// Deleted out of band.
    Deleted,
    /// Re-stamped with another release's ownership.
    Hijack,
    /// kubectl adds `helm.sh/resource-policy: keep`.
    LiveKeep,
}

/// What exists before planning at a key of M_new that M_old lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PertNew {
    None,
    /// Pre-created, owned by another release.
    Foreign,
    /// Pre-created without Helm's ownership metadata.
    Unowned,
    /// Pre-created with this release's ownership metadata.
    OwnedThis,
}

// ---------------------------------------------------------------- specs

#[derive(Debug, Clone)]
struct SlotSpec {
    kind: u8,
    name: u8,
    /// 0 in both, 1 old only, 2 new only, 3 renamed.
    fate: u8,
    old_var: u8,
    new_var: u8,
    old_alt: bool,
    new_alt: bool,
    old_keep: bool,
    new_keep: bool,
    pert_old: u8,
    pert_new: u8,
}

#[derive(Debug, Clone)]
struct RelSpec {
    slots: Vec<SlotSpec>,
    /// 0 none, 1 in the templates, 2 in `crds/`.
    crd_mode: u8,
    crd_old: bool,
    crd_new: bool,
    create_ns: bool,
    ns_pre: bool,
    take_ownership: bool,
    fresh: bool,
    /// ClusterRoles named without the release prefix, so that releases of
    /// one plan claim the same object.
    shared: bool,
}

#[derive(Debug, Clone)]
struct WorldSpec {
    rels: Vec<RelSpec>,
    /// needs[i]: bit j (j < i) means release i needs release j.
    needs: Vec<u8>,
    /// The file order: a permutation of the release indices.
    order: Vec<usize>,
}

fn slot_strategy() -> impl Strategy<Value = SlotSpec> {
    (
        (0u8..7, 0u8..3, 0u8..4, 0u8..3, 0u8..3),
        (any::<bool>(), any::<bool>()),
        (prop::bool::weighted(0.2), prop::bool::weighted(0.2)),
        (0u8..8, 0u8..5),
    )
        .prop_map(
            |(
                (kind, name, fate, old_var, new_var),
                (old_alt, new_alt),
                (old_keep, new_keep),
                (pert_old, pert_new),
            )| SlotSpec {
                kind,
                name,
                fate,
                old_var,
                new_var,
                old_alt,
                new_alt,
                old_keep,
                new_keep,
                pert_old,
                pert_new,
            },
        )
}

fn rel_strategy() -> impl Strategy<Value = RelSpec> {
    (
        prop::collection::vec(slot_strategy(), 0..7),
        0u8..3,
        any::<bool>(),
        any::<bool>(),
        prop::bool::weighted(0.7),
        any::<bool>(),
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.3),
    )
        .prop_map(
            |(
                slots,
                crd_mode,
                crd_old,
                crd_new,
                create_ns,
                ns_pre,
                take_ownership,
                fresh,
                shared,
            )| {
                RelSpec {
                    shared,
                    slots,
                    crd_mode,
                    crd_old,
                    crd_new,
                    create_ns,
                    ns_pre,
                    take_ownership,
                    fresh,
                }
            },
        )
}

fn world_strategy() -> impl Strategy<Value = WorldSpec> {
    (2usize..=5).prop_flat_map(|n| {
        (
            prop::collection::vec(rel_strategy(), n),
            prop::collection::vec(any::<u8>(), n),
            Just((0..n).collect::<Vec<usize>>()).prop_shuffle(),
        )
            .prop_map(|(rels, needs, order)| WorldSpec { rels, needs, order })
    })
}

/// The same worlds without anything that breaks the symmetry of invariant
/// 6: no perturbation, no keep, no fresh install, no take-ownership.
fn clean_world_strategy() -> impl Strategy<Value = WorldSpec> {
    world_strategy().prop_map(|mut w| {
        for r in &mut w.rels {
            r.fresh = false;
            r.take_ownership = false;
            r.shared = false;
            for s in &mut r.slots {
                s.old_keep = false;
                s.new_keep = false;
                s.pert_old = 0;
                s.pert_new = 0;
            }
        }
        w
    })
}

// ---------------------------------------------------------------- model

#[derive(Debug, Clone)]
struct Obj {
    kind: Kind,
    key: ObjectKey,
    name: String,
    old: Option<Doc>,
    new: Option<Doc>,
    pert_old: PertOld,
    pert_new: PertNew,
}

#[derive(Debug, Clone)]
struct Rel {
    name: String,
    ns: String,
    group: String,
    objs: Vec<Obj>,
    /// The CRD of `crds/`, when the chart has one.
    crds_dir: Option<String>,
    create_ns: bool,
    ns_pre: bool,
    take_ownership: bool,
    fresh: bool,
    /// Indices of the releases this one needs.
    needs: Vec<usize>,
}

impl Rel {
    fn build(i: usize, spec: &RelSpec, needs_mask: u8) -> Rel {
        let name = format!("r{i}");
        let ns = format!("ns-r{i}");
        let group = format!("r{i}.example.com");
        let mut objs: Vec<Obj> = Vec::new();
        let mut seen = BTreeSet::new();
        let crd_mode = spec.crd_mode;
        for s in &spec.slots {
            let kind = Kind::from_index(s.kind);
            if kind == Kind::Widget && crd_mode == 0 {
                continue;
            }
            if !seen.insert((kind.slug(), s.name)) {
                continue;
            }
            let base = if spec.shared && kind == Kind::ClusterRole {
                format!("shared-{}-{}", kind.slug(), s.name)
            } else {
                format!("{name}-{}-{}", kind.slug(), s.name)
            };
            let pert_old = match s.pert_old {
                2 => PertOld::Drift,
                3 => PertOld::Benign,
                4 => PertOld::Deleted,
                5 => PertOld::Hijack,
                6 => PertOld::LiveKeep,
                _ => PertOld::None,
            };
            let pert_new = match s.pert_new {
                _ if kind == Kind::Widget => PertNew::None,
                2 => PertNew::Foreign,
                3 => PertNew::Unowned,
                4 => PertNew::OwnedThis,
                _ => PertNew::None,
            };
            let old = doc(kind, &group, &base, s.old_var, s.old_alt, s.old_keep);
            let mk = |name: &str, old: Option<Doc>, new: Option<Doc>| Obj {
                kind,
                key: ObjectKey::new(
                    &kind.group(&group),
                    kind.kind(),
                    if kind.namespaced() { &ns } else { "" },
                    name,
                ),
                name: name.to_string(),
                old,
                new,
                pert_old,
                pert_new,
            };
            match s.fate {
                0 => {
                    let new = doc(kind, &group, &base, s.new_var, s.new_alt, s.new_keep);
                    objs.push(mk(&base, Some(old), Some(new)));
                }
                1 => objs.push(mk(&base, Some(old), None)),
                2 => {
                    let new = doc(kind, &group, &base, s.new_var, s.new_alt, s.new_keep);
                    objs.push(mk(&base, None, Some(new)));
                }
                _ => {
                    let renamed = format!("{base}-renamed");
                    let new = doc(kind, &group, &renamed, s.new_var, s.new_alt, s.new_keep);
                    objs.push(mk(&base, Some(old), None));
                    objs.push(mk(&renamed, None, Some(new)));
                }
            }
        }
        let mut crds_dir = None;
        if crd_mode == 1 {
            let widget_old = objs
                .iter()
                .any(|o| o.kind == Kind::Widget && o.old.is_some());
            let widget_new = objs
                .iter()
                .any(|o| o.kind == Kind::Widget && o.new.is_some());
            let in_old = spec.crd_old || widget_old;
            let in_new = spec.crd_new || widget_new;
            if in_old || in_new {
                let d = doc(Kind::Crd, &group, "", 0, false, false);
                objs.push(Obj {
                    kind: Kind::Crd,
                    key: ObjectKey::new(
                        "apiextensions.k8s.io",
                        "CustomResourceDefinition",
                        "",
                        &format!("widgets.{group}"),
                    ),
                    name: format!("widgets.{group}"),
                    old: in_old.then(|| d.clone()),
                    new: in_new.then_some(d),
                    pert_old: PertOld::None,
                    pert_new: PertNew::None,
                });
            }
        } else if crd_mode == 2 {
            crds_dir = Some(crd_text(&group));
        }
        Rel {
            name,
            ns,
            group,
            objs,
            crds_dir,
            create_ns: spec.create_ns,
            ns_pre: spec.ns_pre || !spec.create_ns,
            take_ownership: spec.take_ownership,
            fresh: spec.fresh,
            needs: (0..i).filter(|j| needs_mask & (1 << j) != 0).collect(),
        }
    }

    fn reference(&self) -> ReleaseRef {
        ReleaseRef {
            namespace: self.ns.clone(),
            name: self.name.clone(),
        }
    }

    fn crd_key(&self) -> ObjectKey {
        ObjectKey::new(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            "",
            &format!("widgets.{}", self.group),
        )
    }

    fn ns_key(&self) -> ObjectKey {
        ObjectKey::new("", "Namespace", "", &self.ns)
    }

    /// The chart of M_old (`new == false`) or M_new, at `version`.
    fn chart(&self, new: bool, version: &str) -> Chart {
        let files: Vec<(String, &str)> = self
            .objs
            .iter()
            .filter(|o| o.kind != Kind::Crd)
            .filter_map(|o| {
                let d = if new { o.new.as_ref() } else { o.old.as_ref() };
                d.map(|d| {
                    (
                        format!("{}-{}.yaml", o.kind.slug(), o.name),
                        d.text.as_str(),
                    )
                })
            })
            .collect();
        let docs: Vec<(&str, &str)> = files.iter().map(|(f, t)| (f.as_str(), *t)).collect();
        let crds: Vec<(&str, &str)> = self
            .crds_dir
            .as_deref()
            .map(|t| ("widgets.yaml", t))
            .into_iter()
            .collect();
        let mut chart = chart_with_crds(&self.name, version, &docs, &crds);
        // A CRD among the templates (`chart` would move it to `crds/`).
        for o in self.objs.iter().filter(|o| o.kind == Kind::Crd) {
            if let Some(d) = if new { &o.new } else { &o.old } {
                push_template(&mut chart, "crd.yaml", &d.text);
            }
        }
        chart
    }

    /// The desired release; `rels` resolves the needs, `keep` filters them.
    fn desired(&self, chart: Chart, rels: &[Rel], keep: &dyn Fn(&Rel) -> bool) -> DesiredRelease {
        let mut d = desired(&self.name, &self.ns, chart);
        d.options.create_namespace = self.create_ns;
        d.options.take_ownership = self.take_ownership;
        d.needs = self
            .needs
            .iter()
            .map(|&j| &rels[j])
            .filter(|r| keep(r))
            .map(|r| Need {
                release: r.reference(),
                reason: String::new(),
            })
            .collect();
        d
    }

    /// M_old as this phase sees it (empty for a fresh install).
    fn m_old(&self) -> BTreeMap<ObjectKey, Doc> {
        if self.fresh {
            return BTreeMap::new();
        }
        self.objs
            .iter()
            .filter_map(|o| o.old.clone().map(|d| (o.key.clone(), d)))
            .collect()
    }

    fn m_new(&self) -> BTreeMap<ObjectKey, Doc> {
        self.objs
            .iter()
            .filter_map(|o| o.new.clone().map(|d| (o.key.clone(), d)))
            .collect()
    }
}

/// A whole case: the releases, in index order, and the file order.
struct Case {
    rels: Vec<Rel>,
    order: Vec<usize>,
}

impl Case {
    fn build(spec: &WorldSpec) -> Case {
        let mut rels: Vec<Rel> = spec
            .rels
            .iter()
            .enumerate()
            .map(|(i, r)| Rel::build(i, r, spec.needs[i]))
            .collect();
        // A shared object is one live object: perturbations drawn for it by
        // two releases would act on it twice, while the oracle models each
        // release's on its own (found with a 1500-case run: a drift undone by
        // the next release's perturbation). Only the first claim perturbs.
        let mut perturbed = BTreeSet::new();
        let mut claims: BTreeMap<ObjectKey, usize> = BTreeMap::new();
        for r in &mut rels {
            for o in &mut r.objs {
                *claims.entry(o.key.clone()).or_default() += 1;
                if !perturbed.insert(o.key.clone()) {
                    o.pert_old = PertOld::None;
                    o.pert_new = PertNew::None;
                }
            }
        }
        // Even a first claim's perturbation is not per-release: a pre-created
        // copy "owned by this release" of an object another release already
        // installed in phase A, which a later release of the plan then meets
        // with the content the first one gave it (found by CI: the oracle
        // expected the second release to update it). Objects two releases
        // claim are not perturbed.
        for r in &mut rels {
            for o in &mut r.objs {
                if claims.get(&o.key).copied().unwrap_or(0) > 1 {
                    o.pert_old = PertOld::None;
                    o.pert_new = PertNew::None;
                }
            }
        }
        // Likewise `take_ownership` on an object another release of the plan
        // owns moves it between releases mid-plan (the later release is then
        // rightly blocked), which the per-release oracle does not model
        // (found with a 1500-case run).
        for r in &mut rels {
            if r.objs
                .iter()
                .any(|o| claims.get(&o.key).copied().unwrap_or(0) > 1)
            {
                r.take_ownership = false;
            }
        }
        Case {
            rels,
            order: spec.order.clone(),
        }
    }

    /// Desired releases in file order: the phase-A install of M_old (only
    /// releases that are not fresh), or M_new.
    fn desired(&self, new: bool, version: &str) -> Vec<DesiredRelease> {
        let keep = |r: &Rel| new || !r.fresh;
        self.order
            .iter()
            .map(|&i| &self.rels[i])
            .filter(|r| keep(r))
            .map(|r| r.desired(r.chart(new, version), &self.rels, &keep))
            .collect()
    }

    /// The same list, each release (and its chart) built in reverse order
    /// and then placed in file order.
    fn desired_built_backwards(&self, new: bool, version: &str) -> Vec<DesiredRelease> {
        let keep = |r: &Rel| new || !r.fresh;
        let mut built: Vec<(usize, DesiredRelease)> = self
            .order
            .iter()
            .enumerate()
            .rev()
            .map(|(pos, &i)| (pos, &self.rels[i]))
            .filter(|(_, r)| keep(r))
            .map(|(pos, r)| (pos, r.desired(r.chart(new, version), &self.rels, &keep)))
            .collect();
        built.sort_by_key(|(pos, _)| *pos);
        built.into_iter().map(|(_, d)| d).collect()
    }
}

fn full_object(o: &Obj, d: &Doc, ns: &str) -> Value {
    let mut v: Value = serde_yaml::from_str(&d.text).expect("generated yaml");
    if o.kind.namespaced() {
        v["metadata"]["namespace"] = Value::String(ns.to_string());
    }
    v
}

fn partial(o: &Obj, d: &Doc, ns: &str) -> Value {
    let av = api_version(&o.key.group, &d.version);
    let mut meta = json!({"name": o.name});
    if o.kind.namespaced() {
        meta["namespace"] = Value::String(ns.to_string());
    }
    json!({"apiVersion": av, "kind": o.kind.kind(), "metadata": meta})
}

/// A change of a field the release manages.
fn drift(o: &Obj, d: &Doc, ns: &str) -> Value {
    let mut v = partial(o, d, ns);
    match o.kind {
        Kind::ConfigMap => v["data"] = json!({"k": "drifted"}),
        Kind::Deployment => v["spec"] = json!({"replicas": 9}),
        Kind::Hpa => v["spec"] = json!({"maxReplicas": 50}),
        Kind::Pdb => v["spec"] = json!({"maxUnavailable": 7}),
        Kind::ServiceAccount => v["metadata"]["labels"] = json!({"tier": "drifted"}),
        Kind::ClusterRole => {
            v["rules"] = json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["delete"]}])
        }
        Kind::Widget => v["spec"] = json!({"size": 99}),
        Kind::Crd => unreachable!(),
    }
    v
}

/// What the generator did to the cluster after settling M_old.
#[derive(Default)]
struct Perturbed {
    /// Keys whose managed fields kubectl changed.
    drifted: BTreeSet<ObjectKey>,
}

fn perturb(w: &World, case: &Case) -> Perturbed {
    let mut out = Perturbed::default();
    for r in &case.rels {
        let ns_live = w.live(&r.ns_key()).is_some();
        for o in &r.objs {
            match (&o.old, &o.new) {
                (Some(d), _) if !r.fresh => match o.pert_old {
                    PertOld::None => {}
                    PertOld::Drift => {
                        w.kubectl_apply(drift(o, d, &r.ns));
                        out.drifted.insert(o.key.clone());
                    }
                    PertOld::Benign => {
                        let mut v = partial(o, d, &r.ns);
                        v["metadata"]["labels"] = json!({"extra": "yes"});
                        w.kubectl_apply(v);
                    }
                    PertOld::Deleted => {
                        w.cluster.delete(&o.key, None).expect("delete");
                    }
                    PertOld::Hijack => {
                        w.foreign(partial(o, d, &r.ns), INTRUDER, INTRUDER_NS);
                    }
                    PertOld::LiveKeep => {
                        let mut v = partial(o, d, &r.ns);
                        v["metadata"]["annotations"] = json!({"helm.sh/resource-policy": "keep"});
                        w.kubectl_apply(v);
                    }
                },
                (_, Some(d)) if r.fresh || o.old.is_none() => {
                    if o.kind.namespaced() && !ns_live {
                        continue;
                    }
                    let full = full_object(o, d, &r.ns);
                    match o.pert_new {
                        PertNew::None => {}
                        PertNew::Foreign => {
                            w.foreign(full, INTRUDER, INTRUDER_NS);
                        }
                        PertNew::Unowned => {
                            w.kubectl_apply(full);
                        }
                        PertNew::OwnedThis => {
                            w.foreign(full, &r.name, &r.ns);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    out
}

fn make_namespaces(w: &World, case: &Case) {
    for r in &case.rels {
        if r.ns_pre {
            w.kubectl_apply(
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": r.ns}}),
            );
        }
    }
}

// ---------------------------------------------------------------- checks

/// What one release's plan is checked against.
struct Expect<'a> {
    rel: &'a Rel,
    install: bool,
    old: BTreeMap<ObjectKey, Doc>,
    new: BTreeMap<ObjectKey, Doc>,
    /// Live objects before planning, for every key of M_old, M_new, the
    /// `crds/` CRD and the release namespace.
    live: BTreeMap<ObjectKey, Option<Value>>,
    drifted: &'a BTreeSet<ObjectKey>,
    /// Keys that releases earlier in the plan create, update, adopt or
    /// leave unchanged (their owner once they have run), and which.
    claimed: BTreeMap<ObjectKey, String>,
}

impl<'a> Expect<'a> {
    /// `phase_new`: planning M_new (else the phase-A install of M_old).
    fn new(w: &World, rel: &'a Rel, phase_new: bool, drifted: &'a BTreeSet<ObjectKey>) -> Self {
        let install = !phase_new || rel.fresh;
        let old = if install {
            BTreeMap::new()
        } else {
            rel.m_old()
        };
        let new = rel.m_new_for(!phase_new);
        let mut live = BTreeMap::new();
        for k in old.keys().chain(new.keys()) {
            live.insert(k.clone(), w.live(k));
        }
        for k in [rel.crd_key(), rel.ns_key()] {
            live.insert(k.clone(), w.live(&k));
        }
        Expect {
            rel,
            install,
            old,
            new,
            live,
            drifted,
            claimed: BTreeMap::new(),
        }
    }

    fn live(&self, k: &ObjectKey) -> Option<&Value> {
        self.live.get(k).and_then(Option::as_ref)
    }

    fn owner(&self, k: &ObjectKey) -> Option<(String, String)> {
        self.live(k)
            .and_then(ownership::owner)
            .map(|(n, ns)| (n.to_string(), ns.to_string()))
    }

    fn owned_here(&self, k: &ObjectKey) -> bool {
        self.live(k)
            .is_some_and(|l| ownership::owned_by(l, &self.rel.name, &self.rel.ns))
    }

    /// The action §1.3-1.5 and §8.2 call for at a key of M_new.
    fn expected_new(&self, k: &ObjectKey) -> ObjectAction {
        let Some(_) = self.live(k) else {
            // Absent now, but an earlier release of the plan makes it: this
            // release meets it owned by that one (Helm's second install
            // fails the ownership check).
            if self.claimed.contains_key(k) {
                return if self.rel.take_ownership {
                    ObjectAction::Adopt
                } else {
                    ObjectAction::Skip
                };
            }
            return ObjectAction::Create;
        };
        let in_old = self.old.contains_key(k);
        let foreign = self.owner(k).is_some() && !self.owned_here(k);
        if !in_old || foreign {
            if self.rel.take_ownership || self.owned_here(k) {
                ObjectAction::Adopt
            } else {
                ObjectAction::Skip
            }
        } else {
            let (old, new) = (&self.old[k], &self.new[k]);
            // The keep annotation: the apply sets it unless live has it
            // (from the last apply, or kubectl's); it removes it when the
            // last manifest had it and the new one lacks it.
            let live_keep = old.keep
                || self
                    .rel
                    .objs
                    .iter()
                    .any(|o| o.key == *k && o.pert_old == PertOld::LiveKeep);
            let keep_changes = (new.keep && !live_keep) || (!new.keep && old.keep);
            if old.core != new.core || keep_changes || self.drifted.contains(k) {
                ObjectAction::Update
            } else {
                ObjectAction::Unchanged
            }
        }
    }

    /// The action at a key of M_old \ M_new.
    fn expected_removed(&self, k: &ObjectKey) -> ObjectAction {
        match self.live(k) {
            None => ObjectAction::Delete,
            Some(l) if ownership::keep(l) || self.old[k].keep => ObjectAction::Keep,
            Some(_) if self.owned_here(k) => ObjectAction::Delete,
            Some(_) => ObjectAction::Keep,
        }
    }
}

impl Rel {
    fn m_new_for(&self, install_of_old: bool) -> BTreeMap<ObjectKey, Doc> {
        // Phase A installs M_old: its "new" manifest is M_old.
        if install_of_old {
            self.objs
                .iter()
                .filter_map(|o| o.old.clone().map(|d| (o.key.clone(), d)))
                .collect()
        } else {
            self.m_new()
        }
    }
}

fn fail(msg: String) -> TestCaseError {
    TestCaseError::fail(msg)
}

fn show(rp: &ReleasePlan) -> String {
    let mut s = format!(
        "release {}/{} {:?} blocked={:?}\n",
        rp.namespace, rp.name, rp.action, rp.blocked
    );
    for o in &rp.objects {
        s.push_str(&format!(
            "  {:?} {:?} {} v{} ({}) {:?}\n",
            o.stage, o.action, o.key, o.key.version, o.reason, o.changed
        ));
    }
    s
}

/// Invariants 1-4 (within a release) for one release's plan.
fn check_release(rp: &ReleasePlan, e: &Expect) -> Result<(), TestCaseError> {
    let ctx = show(rp);
    let rel = e.rel;
    // The release action.
    if e.install {
        prop_assert_eq!(rp.action, ReleaseAction::Install, "{}", ctx);
    } else {
        prop_assert_eq!(rp.action, ReleaseAction::Upgrade, "{}", ctx);
    }

    // 1. Coverage and uniqueness, ignoring versions.
    let mut seen: BTreeMap<ObjectKey, usize> = BTreeMap::new();
    for (i, o) in rp.objects.iter().enumerate() {
        let k = o.key.object_key();
        if let Some(j) = seen.insert(k.clone(), i) {
            return Err(fail(format!("{k} appears twice (#{j} and #{i})\n{ctx}")));
        }
    }
    let crds_dir = rel.crds_dir.as_ref().map(|_| rel.crd_key());
    for (k, &i) in &seen {
        let o = &rp.objects[i];
        if let Some(d) = e.new.get(k) {
            // M_new: create, update, unchanged, adopt, or skip for conflicts.
            prop_assert_eq!(o.stage, Stage::Main, "{}: stage\n{}", k, ctx);
            prop_assert!(
                matches!(
                    o.action,
                    ObjectAction::Create
                        | ObjectAction::Update
                        | ObjectAction::Unchanged
                        | ObjectAction::Adopt
                        | ObjectAction::Skip
                ),
                "{}: {:?} for a key of M_new\n{}",
                k,
                o.action,
                ctx
            );
            prop_assert_eq!(
                &o.key.version,
                &d.version,
                "{}: applied version\n{}",
                k,
                ctx
            );
            // 2. Action correctness against the live state and the
            // generator's record of what changed.
            let want = e.expected_new(k);
            prop_assert_eq!(o.action, want, "{}: action\n{}", k, ctx);
            if o.action == ObjectAction::Update {
                prop_assert!(
                    !o.changed.is_empty(),
                    "{}: update without a diff\n{}",
                    k,
                    ctx
                );
            }
            if o.action == ObjectAction::Unchanged {
                prop_assert!(
                    o.changed.is_empty(),
                    "{}: unchanged with a diff\n{}",
                    k,
                    ctx
                );
            }
        } else if e.old.contains_key(k) {
            prop_assert!(
                matches!(o.action, ObjectAction::Delete | ObjectAction::Keep),
                "{}: {:?} for a key of M_old \\ M_new\n{}",
                k,
                o.action,
                ctx
            );
            prop_assert_eq!(o.action, e.expected_removed(k), "{}: removal\n{}", k, ctx);
        } else if Some(k) == crds_dir.as_ref() {
            prop_assert_eq!(o.stage, Stage::Crds, "{}\n{}", k, ctx);
            let want = if e.live(k).is_some() {
                ObjectAction::Skip
            } else {
                ObjectAction::Create
            };
            prop_assert_eq!(o.action, want, "{}: crds/ CRD\n{}", k, ctx);
        } else if *k == rel.ns_key() {
            prop_assert_eq!(o.stage, Stage::Namespaces, "{}\n{}", k, ctx);
            prop_assert_eq!(o.action, ObjectAction::Create, "{}\n{}", k, ctx);
            prop_assert!(rel.create_ns && e.live(k).is_none(), "{}\n{}", k, ctx);
        } else {
            return Err(fail(format!("{k} is in neither manifest\n{ctx}")));
        }
    }
    for k in e.new.keys().chain(e.old.keys()) {
        prop_assert!(seen.contains_key(k), "{} is missing\n{}", k, ctx);
    }
    if let Some(k) = &crds_dir {
        prop_assert!(seen.contains_key(k), "crds/ CRD {} is missing\n{}", k, ctx);
    }
    if rel.create_ns && e.live(&rel.ns_key()).is_none() {
        prop_assert!(
            seen.contains_key(&rel.ns_key()),
            "the release namespace is missing\n{}",
            ctx
        );
    }

    // 3. Ownership safety, from the live state alone.
    let mut conflicts = 0;
    for o in &rp.objects {
        let k = o.key.object_key();
        let live = e.live(&k);
        match o.action {
            ObjectAction::Delete => {
                prop_assert!(
                    e.old.contains_key(&k),
                    "{}: delete outside M_old\n{}",
                    k,
                    ctx
                );
                if let Some(l) = live {
                    prop_assert!(
                        ownership::owned_by(l, &rel.name, &rel.ns),
                        "{}: deletes an object the release does not own\n{}",
                        k,
                        ctx
                    );
                    prop_assert!(!ownership::keep(l), "{}: deletes a live keep\n{}", k, ctx);
                    prop_assert!(!e.old[&k].keep, "{}: deletes a manifest keep\n{}", k, ctx);
                }
            }
            ObjectAction::Create => {
                prop_assert!(live.is_none(), "{}: creates a live object\n{}", k, ctx);
            }
            ObjectAction::Update | ObjectAction::Unchanged => {
                let l = live.ok_or_else(|| fail(format!("{k}: update of nothing\n{ctx}")))?;
                prop_assert!(
                    ownership::owner(l).is_none() || ownership::owned_by(l, &rel.name, &rel.ns),
                    "{}: updates another release's object\n{}",
                    k,
                    ctx
                );
                prop_assert!(
                    e.old.contains_key(&k),
                    "{}: update outside M_old\n{}",
                    k,
                    ctx
                );
            }
            ObjectAction::Adopt => {
                prop_assert!(
                    live.is_some() || e.claimed.contains_key(&k),
                    "{}: adopts nothing\n{}",
                    k,
                    ctx
                );
                prop_assert!(
                    rel.take_ownership
                        || live.is_some_and(|l| ownership::owned_by(l, &rel.name, &rel.ns)),
                    "{}: adopted without take-ownership\n{}",
                    k,
                    ctx
                );
            }
            ObjectAction::Skip if o.stage == Stage::Main => {
                conflicts += 1;
                let verb = if e.install { "install" } else { "update" };
                let ns_part = if k.namespace.is_empty() {
                    String::new()
                } else {
                    format!(" in namespace {:?}", k.namespace)
                };
                let msg = format!(
                    "Unable to continue with {verb}: {} {:?}{ns_part} exists and cannot be imported into the current release: invalid ownership metadata",
                    k.kind, k.name
                );
                let blocked = rp.blocked.as_deref().unwrap_or("");
                prop_assert!(
                    blocked.lines().any(|l| l.starts_with(&msg)),
                    "{}: blocked message, want {:?}\n{}",
                    k,
                    msg,
                    ctx
                );
            }
            ObjectAction::Skip | ObjectAction::Keep => {}
        }
    }
    prop_assert_eq!(
        rp.blocked.is_some(),
        conflicts > 0,
        "blocked iff a conflict\n{}",
        ctx
    );

    // 4. Ordering within the release.
    for pair in rp.objects.windows(2) {
        prop_assert!(
            pair[0].stage <= pair[1].stage,
            "stages out of order: {} before {}\n{}",
            pair[0].key,
            pair[1].key,
            ctx
        );
        if pair[0].stage == Stage::Main && pair[1].stage == Stage::Main {
            prop_assert!(
                compare_kinds(INSTALL_ORDER, &pair[0].key.kind, &pair[1].key.kind)
                    != Ordering::Greater,
                "main out of install order: {} before {}\n{}",
                pair[0].key,
                pair[1].key,
                ctx
            );
        }
    }
    for o in &rp.objects {
        let pruning = matches!(o.action, ObjectAction::Delete | ObjectAction::Keep);
        prop_assert_eq!(
            pruning,
            o.stage == Stage::Prune,
            "{}: prune stage holds exactly deletes and keeps\n{}",
            o.key,
            ctx
        );
    }
    let pos = |k: &ObjectKey| rp.objects.iter().position(|o| o.key.object_key() == *k);
    if let Some(c) = pos(&rel.crd_key()) {
        let crd_pruned = rp.objects[c].stage == Stage::Prune;
        for (i, o) in rp.objects.iter().enumerate() {
            if o.key.kind != "Widget" || o.key.group != rel.group {
                continue;
            }
            let cr_pruned = o.stage == Stage::Prune;
            if !cr_pruned && !crd_pruned {
                prop_assert!(c < i, "{}: CR before its CRD\n{}", o.key, ctx);
            }
            if cr_pruned && crd_pruned {
                prop_assert!(i < c, "{}: CRD deleted before its CR\n{}", o.key, ctx);
            }
        }
    }
    for (i, n) in rp.objects.iter().enumerate() {
        if n.key.kind != "Namespace" || !n.key.group.is_empty() || n.stage == Stage::Prune {
            continue;
        }
        for (j, o) in rp.objects.iter().enumerate() {
            if o.key.namespace == n.key.name && o.stage != Stage::Prune {
                prop_assert!(i < j, "{}: before its namespace\n{}", o.key, ctx);
            }
        }
    }
    Ok(())
}

/// Whether a change makes the release the object's owner.
fn claims(stage: Stage, action: ObjectAction) -> bool {
    stage == Stage::Main
        && matches!(
            action,
            ObjectAction::Create
                | ObjectAction::Update
                | ObjectAction::Unchanged
                | ObjectAction::Adopt
        )
}

/// Invariant 3 across releases: no object is made or kept by two releases
/// of one plan, except by an explicit take-over (adopt, take-ownership).
fn check_claims(plan: &Plan) -> Result<(), TestCaseError> {
    let mut owner: BTreeMap<ObjectKey, &str> = BTreeMap::new();
    for rp in &plan.releases {
        for o in rp.objects.iter().filter(|o| claims(o.stage, o.action)) {
            let k = o.key.object_key();
            if let Some(first) = owner.get(&k) {
                prop_assert!(
                    o.action == ObjectAction::Adopt && rp.options.take_ownership,
                    "{} is claimed by {} and then {} ({:?})\n{}",
                    k,
                    first,
                    rp.name,
                    o.action,
                    show(rp)
                );
            }
            owner.insert(k, &rp.name);
        }
    }
    Ok(())
}

/// Invariant 4 across releases: a topological order of the needs, and the
/// edges are exactly the needs.
fn check_releases(plan: &Plan, want: &[&Rel], case: &Case) -> Result<(), TestCaseError> {
    let names: Vec<ReleaseRef> = plan.releases.iter().map(ReleasePlan::reference).collect();
    let mut sorted = names.clone();
    sorted.sort();
    let mut expected: Vec<ReleaseRef> = want.iter().map(|r| r.reference()).collect();
    expected.sort();
    prop_assert_eq!(sorted, expected, "releases");
    let index = |r: &ReleaseRef| names.iter().position(|n| n == r);
    let mut edges = BTreeSet::new();
    for r in want {
        for &j in &r.needs {
            let need = &case.rels[j];
            if !want.iter().any(|w| w.name == need.name) {
                continue;
            }
            edges.insert((need.reference(), r.reference()));
            prop_assert!(
                index(&need.reference()) < index(&r.reference()),
                "{} needs {} but comes first: {:?}",
                r.name,
                need.name,
                names
            );
        }
    }
    let got: BTreeSet<(ReleaseRef, ReleaseRef)> = plan
        .release_edges
        .iter()
        .map(|e| (e.from.clone(), e.to.clone()))
        .collect();
    prop_assert_eq!(got.len(), plan.release_edges.len(), "duplicate edges");
    prop_assert_eq!(got, edges, "release edges");
    prop_assert!(plan.release_edges.iter().all(|e| e.kind == "ready-before"));
    Ok(())
}

/// Invariant 5: the same state and inputs give the same bytes and id.
fn check_determinism(
    w: &World,
    plan: &Plan,
    again: &[DesiredRelease],
) -> Result<(), TestCaseError> {
    let json = rudder::plan::view::json(plan);
    let p2 = w.plan(again);
    prop_assert_eq!(&json, &rudder::plan::view::json(&p2), "replanning differs");
    prop_assert_eq!(&plan.id, &p2.id);
    prop_assert!(plan.verify_id(), "plan id does not match its content");
    Ok(())
}

fn plan_phase(
    w: &World,
    case: &Case,
    new: bool,
    drifted: &BTreeSet<ObjectKey>,
) -> Result<Plan, TestCaseError> {
    let version = if new { "2.0.0" } else { "1.0.0" };
    let ds = case.desired(new, version);
    let want: Vec<&Rel> = case.rels.iter().filter(|r| new || !r.fresh).collect();
    let mut expects: Vec<Expect> = want
        .iter()
        .map(|r| Expect::new(w, r, new, drifted))
        .collect();
    let plan = w.plan(&ds);
    // Plan order: what each release finds claimed by the earlier ones.
    let mut claimed: BTreeMap<ObjectKey, String> = BTreeMap::new();
    expects.sort_by_key(|e| plan.releases.iter().position(|p| p.name == e.rel.name));
    for e in &mut expects {
        e.claimed = claimed.clone();
        if let Some(rp) = plan.releases.iter().find(|p| p.name == e.rel.name) {
            for o in rp.objects.iter().filter(|o| claims(o.stage, o.action)) {
                claimed
                    .entry(o.key.object_key())
                    .or_insert_with(|| rp.name.clone());
            }
        }
    }
    for e in &expects {
        let rp = plan
            .releases
            .iter()
            .find(|p| p.name == e.rel.name)
            .ok_or_else(|| fail(format!("release {} missing", e.rel.name)))?;
        check_release(rp, e)?;
    }
    check_releases(&plan, &want, case)?;
    check_claims(&plan)?;
    if new {
        // Phase B only, to keep cases fast.
        check_determinism(w, &plan, &ds)?;
        check_determinism(w, &plan, &case.desired_built_backwards(new, version))?;
    }
    Ok(plan)
}

fn run_case(spec: &WorldSpec) -> Result<(), TestCaseError> {
    let case = Case::build(spec);
    let w = World::new();
    make_namespaces(&w, &case);
    let none = BTreeSet::new();
    // Phase A: install M_old (fresh releases wait for phase B).
    if case.rels.iter().any(|r| !r.fresh) {
        let plan_a = plan_phase(&w, &case, false, &none)?;
        w.settle(&plan_a);
    }
    let p = perturb(&w, &case);
    // Phase B: M_new against the perturbed state.
    plan_phase(&w, &case, true, &p.drifted)?;
    Ok(())
}

/// Invariant 6 on a clean case: forward and backward plans mirror.
fn run_inverse(spec: &WorldSpec) -> Result<(), TestCaseError> {
    let case = Case::build(spec);
    let w = World::new();
    make_namespaces(&w, &case);
    w.settle(&w.plan(&case.desired(false, "1.0.0")));
    let fwd = w.plan(&case.desired(true, "2.0.0"));
    prop_assert!(fwd.blocked().next().is_none(), "clean case blocked");
    w.settle(&fwd);
    // Idempotence (invariant 9's planning half): replanning M_new is a noop.
    let again = w.plan(&case.desired(true, "2.0.0"));
    for rp in &again.releases {
        prop_assert_eq!(rp.action, ReleaseAction::Noop, "{}", show(rp));
    }
    let back = w.plan(&case.desired(false, "3.0.0"));
    for f in &fwd.releases {
        let b = back
            .releases
            .iter()
            .find(|b| b.name == f.name)
            .ok_or_else(|| fail(format!("{} missing", f.name)))?;
        let ctx = format!("forward:\n{}backward:\n{}", show(f), show(b));
        let acts = |rp: &ReleasePlan| -> BTreeMap<ObjectKey, ObjectAction> {
            rp.objects
                .iter()
                .filter(|o| o.stage != Stage::Crds)
                .map(|o| (o.key.object_key(), o.action))
                .collect()
        };
        let (fa, ba) = (acts(f), acts(b));
        prop_assert_eq!(
            fa.keys().collect::<Vec<_>>(),
            ba.keys().collect::<Vec<_>>(),
            "same keys\n{}",
            ctx
        );
        for (k, a) in &fa {
            let want = match a {
                ObjectAction::Create => ObjectAction::Delete,
                ObjectAction::Delete => ObjectAction::Create,
                other => *other,
            };
            prop_assert!(
                matches!(
                    a,
                    ObjectAction::Create
                        | ObjectAction::Delete
                        | ObjectAction::Update
                        | ObjectAction::Unchanged
                ),
                "{}: {:?} in a clean case\n{}",
                k,
                a,
                ctx
            );
            prop_assert_eq!(ba[k], want, "{}: inverse\n{}", k, ctx);
        }
    }
    Ok(())
}

fn cases(default: u32) -> u32 {
    std::env::var("PLAN_INVARIANT_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(96),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Invariants 1-5 over install then perturbed upgrade.
    #[test]
    fn planning_invariants_hold(spec in world_strategy()) {
        run_case(&spec)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(64),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Invariant 6: plan(M_old -> M_new) and plan(M_new -> M_old) mirror.
    #[test]
    fn forward_and_backward_plans_mirror(spec in clean_world_strategy()) {
        run_inverse(&spec)?;
    }
}

/// A fixed case with every generator feature, so a regression shows even
/// with few random cases.
#[test]
fn every_feature_at_once() {
    let slot = |kind, fate, pert_old, pert_new, keep| SlotSpec {
        kind,
        name: 0,
        fate,
        old_var: 0,
        new_var: 1,
        old_alt: false,
        new_alt: true,
        old_keep: keep,
        new_keep: keep,
        pert_old,
        pert_new,
    };
    let rel = |slots, crd_mode, take_ownership, fresh| RelSpec {
        slots,
        crd_mode,
        crd_old: true,
        crd_new: false,
        create_ns: true,
        ns_pre: false,
        take_ownership,
        fresh,
        shared: false,
    };
    let spec = WorldSpec {
        rels: vec![
            rel(
                vec![
                    slot(0, 0, 2, 0, false), // ConfigMap changed + drift
                    slot(2, 0, 0, 0, false), // HPA v1 -> v2
                    slot(3, 0, 3, 0, false), // PDB v1 -> v1beta1, benign drift
                    slot(1, 1, 5, 0, false), // Deployment removed, hijacked
                    slot(4, 3, 0, 2, false), // ServiceAccount renamed, foreign
                    slot(5, 1, 0, 0, true),  // ClusterRole removed, keep
                    slot(6, 1, 0, 0, false), // Widget removed with its CRD
                ],
                1,
                false,
                false,
            ),
            rel(
                vec![slot(6, 2, 0, 0, false), slot(0, 2, 0, 3, false)],
                2,
                true,
                false,
            ),
            rel(vec![slot(0, 0, 4, 0, false)], 0, false, true),
        ],
        needs: vec![0, 1, 3],
        order: vec![2, 1, 0],
    };
    run_case(&spec).unwrap();
    let mut clean = spec;
    for r in &mut clean.rels {
        r.fresh = false;
        r.take_ownership = false;
        for s in &mut r.slots {
            s.old_keep = false;
            s.new_keep = false;
            s.pert_old = 0;
            s.pert_new = 0;
        }
    }
    run_inverse(&clean).unwrap();
}

/// Found by `planning_invariants_hold`: two releases of one plan that both
/// make an object absent live both planned `create`, so the second apply
/// would take the first release's object over. Helm, release by release,
/// refuses the second one; so does the plan now.
#[test]
fn two_releases_of_one_plan_creating_one_object() {
    const CR: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: shared\nrules: []\n";
    let w = World::new();
    let a = desired("a", "team-a", chart("a", "1.0.0", &[("cr.yaml", CR)]));
    let mut b = desired("b", "team-b", chart("b", "1.0.0", &[("cr.yaml", CR)]));
    let p = w.plan(&[a.clone(), b.clone()]);
    let act = |p: &Plan, i: usize| {
        p.releases[i]
            .objects
            .iter()
            .find(|o| o.key.kind == "ClusterRole")
            .map(|o| o.action)
    };
    assert_eq!(act(&p, 0), Some(ObjectAction::Create));
    assert_eq!(act(&p, 1), Some(ObjectAction::Skip));
    assert!(p.releases[0].blocked.is_none());
    let msg = p.releases[1].blocked.as_deref().unwrap_or("");
    assert!(
        msg.starts_with("Unable to continue with install: ClusterRole \"shared\" exists and cannot be imported into the current release: invalid ownership metadata; annotation validation error: key \"meta.helm.sh/release-name\" must equal \"b\": current value is \"a\""),
        "{msg}"
    );
    b.options.take_ownership = true;
    let p = w.plan(&[a, b]);
    assert_eq!(act(&p, 1), Some(ObjectAction::Adopt));
    assert!(p.blocked().next().is_none());
}
