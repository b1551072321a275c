//! Custom resources whose CRD the plan itself creates or changes.
//!
//! A release's custom resources may need a CRD that a release it needs
//! (directly or through others) installs or upgrades in the same plan
//! (helmfile#2238, helm-diff#804). The server cannot answer for such an
//! object before the CRD is applied: its kind (or the version, or the field)
//! is not served yet, so a server dry run fails with `no matches for kind`
//! or `field not declared in schema`. The planner plans such an object
//! against the state the earlier releases leave instead:
//!
//! - absent live, it is a `create`; present (the CRD is upgraded), it is
//!   compared with the live object on the fields the release sets, without
//!   the server's dry run;
//! - it is checked in-process against the CRD's schema for its version, as
//!   the plan has it ([`validate`]); a violation blocks the release with
//!   the server's words;
//! - the object change says so ([`PlannedCrd`]).
//!
//! The server checks the object again when it is applied.
//!
//! Which CRDs count: those of the release's own chart (`crds/` and
//! templates), then those of the releases it needs, directly or through
//! others (they are applied, and Established, before it starts); the last
//! one in plan order wins. A CRD counts for an object when the plan
//! creates it (absent live), or, rendered among a chart's templates (Helm
//! never updates the CRDs of `crds/`), when its entry for the object's
//! version differs from the live CRD's (served, schema) or is missing
//! live. Otherwise the cluster already serves what the object needs, and
//! the server's dry run answers as for any object.
//!
//! Releases are planned on several threads; a release publishes its CRDs
//! as soon as its chart is rendered ([`Board`]), and a release that needs
//! others waits for theirs before it reads its objects. Releases are taken
//! in plan order and the ones a release needs come before it, so no wait
//! can close a circle.
//!
//! # The schema subset
//!
//! [`validate`] checks an OpenAPI v3 structural schema as the API server
//! does, for: `type` (`object`, `array`, `string`, `integer`, `number`,
//! `boolean`), `nullable`, `x-kubernetes-int-or-string`, `enum`,
//! `required`, `properties`, `additionalProperties` (a schema, or `false`),
//! fields the schema does not declare (rejected, as rudder applies with
//! `fieldValidation=Strict`, unless `x-kubernetes-preserve-unknown-fields`),
//! `x-kubernetes-embedded-resource` (its `apiVersion`, `kind` and
//! `metadata` are allowed), `items`, `minimum`/`maximum` (with
//! `exclusiveMinimum`/`exclusiveMaximum`), `minLength`/`maxLength`,
//! `pattern`, and `minItems`/`maxItems`. It does not check `format`,
//! `multipleOf`, `uniqueItems`, `minProperties`/`maxProperties`,
//! `allOf`/`anyOf`/`oneOf`/`not`, `x-kubernetes-list-type` uniqueness, or
//! CEL rules (`x-kubernetes-validations`); the server does, when the object
//! is applied. The root's `apiVersion`, `kind` and `metadata` are left to
//! the server. A `null` value is an unset field (server-side apply drops
//! it), unless the schema says `nullable`.
use super::input::{DesiredRelease, ReleaseRef};
use super::model::{ObjectAction, ObjectChange, PlanKey, PlannedCrd, ReleasePlan, Stage};
use crate::cluster::reads::Reads;
use crate::cluster::{ClusterError, ObjectKey, Scope};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex};

/// A CRD as a chart renders it: what a later object of its kind needs.
#[derive(Debug, Clone, PartialEq)]
pub struct CrdDef {
    /// `metadata.name` (`widgets.example.com`).
    pub name: String,
    /// `spec.group`.
    pub group: String,
    /// `spec.names.kind`.
    pub kind: String,
    /// `spec.scope`.
    pub scope: Scope,
    /// The release that applies it.
    pub release: ReleaseRef,
    /// From the chart's `crds/` (created when absent, never updated).
    pub from_crds_dir: bool,
    /// The rendered CRD.
    pub value: Value,
}

impl CrdDef {
    /// The definition in `value`, when it is a CRD with a group and a kind.
    pub fn of(value: &Value, release: &ReleaseRef, from_crds_dir: bool) -> Option<CrdDef> {
        if value.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
            return None;
        }
        let name = value.pointer("/metadata/name").and_then(Value::as_str)?;
        let spec = value.get("spec")?;
        let group = spec.get("group").and_then(Value::as_str)?;
        let kind = spec.pointer("/names/kind").and_then(Value::as_str)?;
        let scope = match spec.get("scope").and_then(Value::as_str) {
            Some("Cluster") => Scope::Cluster,
            _ => Scope::Namespaced,
        };
        Some(CrdDef {
            name: name.to_string(),
            group: group.to_string(),
            kind: kind.to_string(),
            scope,
            release: release.clone(),
            from_crds_dir,
            value: value.clone(),
        })
    }

    /// The `spec.versions` entry of `version` in a CRD.
    fn version_entry<'v>(crd: &'v Value, version: &str) -> Option<&'v Value> {
        crd.pointer("/spec/versions")
            .and_then(Value::as_array)?
            .iter()
            .find(|v| v.get("name").and_then(Value::as_str) == Some(version))
    }

    /// The schema of `version` in a CRD (per version, or the whole CRD's).
    fn schema_of<'v>(crd: &'v Value, version: &str) -> Option<&'v Value> {
        Self::version_entry(crd, version)
            .and_then(|v| v.pointer("/schema/openAPIV3Schema"))
            .or_else(|| crd.pointer("/spec/validation/openAPIV3Schema"))
    }

    /// Whether the CRD serves `version`.
    fn serves(crd: &Value, version: &str) -> bool {
        Self::version_entry(crd, version)
            .is_some_and(|v| v.get("served").and_then(Value::as_bool) == Some(true))
    }

    /// What the plan does to this CRD that matters to an object of
    /// `version`, given the live CRD: `None` when the cluster already
    /// serves what the object needs (the server's dry run answers).
    fn change_for(&self, live: Option<&Value>, version: &str) -> Option<ObjectAction> {
        let Some(live) = live else {
            return Some(ObjectAction::Create);
        };
        if self.from_crds_dir {
            return None;
        }
        let entry = |crd: &Value| {
            (
                Self::serves(crd, version),
                Self::schema_of(crd, version).cloned(),
            )
        };
        (entry(&self.value) != entry(live)).then_some(ObjectAction::Update)
    }
}

/// The CRDs each release of a plan renders, published as releases are
/// rendered, and read by the releases that need them (see the module
/// docs).
pub struct Board {
    /// Per release (index into the plan's input): the releases it needs,
    /// directly or not, in plan order.
    ancestors: Vec<Vec<usize>>,
    /// Per release: its CRDs once published.
    published: Mutex<Vec<Option<Arc<Vec<CrdDef>>>>>,
    changed: Condvar,
}

impl Board {
    /// A board for `releases`, planned in `order` (indices into
    /// `releases`, each after every release it needs).
    pub fn new(releases: &[DesiredRelease], order: &[usize]) -> Board {
        let index: HashMap<ReleaseRef, usize> = releases
            .iter()
            .enumerate()
            .map(|(i, r)| (r.reference(), i))
            .collect();
        let position: HashMap<usize, usize> =
            order.iter().enumerate().map(|(p, &i)| (i, p)).collect();
        let mut ancestors: Vec<Vec<usize>> = vec![Vec::new(); releases.len()];
        // In plan order, so a release's needs are complete when it is met.
        for &i in order {
            let mut all: HashSet<usize> = HashSet::new();
            for n in &releases[i].needs {
                if let Some(&j) = index.get(&n.release) {
                    all.insert(j);
                    all.extend(ancestors[j].iter().copied());
                }
            }
            let mut all: Vec<usize> = all.into_iter().collect();
            all.sort_by_key(|j| position.get(j).copied().unwrap_or(usize::MAX));
            ancestors[i] = all;
        }
        Board {
            ancestors,
            published: Mutex::new(vec![None; releases.len()]),
            changed: Condvar::new(),
        }
    }

    /// The publisher of release `i`: [`Publisher::publish`], or nothing
    /// when dropped unpublished (an error, a release with nothing to
    /// render), so no reader waits for ever.
    pub fn publisher(&self, i: usize) -> Publisher<'_> {
        Publisher {
            board: self,
            index: i,
            done: false,
        }
    }

    fn set(&self, i: usize, crds: Vec<CrdDef>) {
        let mut p = self.published.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = p.get_mut(i) {
            if slot.is_none() {
                *slot = Some(Arc::new(crds));
            }
        }
        self.changed.notify_all();
    }

    /// The kinds release `i` may use: its own CRDs (`own`), then those of
    /// the releases it needs, waited for.
    pub fn kinds_for(&self, i: usize, own: Vec<CrdDef>) -> Kinds {
        let wanted = self.ancestors.get(i).cloned().unwrap_or_default();
        let mut p = self.published.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if wanted.iter().all(|&j| p.get(j).is_none_or(Option::is_some)) {
                break;
            }
            p = self.changed.wait(p).unwrap_or_else(|e| e.into_inner());
        }
        let mut by_kind: HashMap<(String, String), CrdDef> = HashMap::new();
        // Plan order: a later release's CRD is the one the cluster has last.
        for &j in &wanted {
            for d in p
                .get(j)
                .and_then(Option::as_ref)
                .into_iter()
                .flat_map(|v| v.iter())
            {
                by_kind.insert((d.group.clone(), d.kind.clone()), d.clone());
            }
        }
        // The release's own CRDs are applied after every one it needs.
        for d in own {
            by_kind.insert((d.group.clone(), d.kind.clone()), d);
        }
        Kinds { by_kind }
    }
}

/// Publishes one release's CRDs on a [`Board`].
pub struct Publisher<'b> {
    board: &'b Board,
    index: usize,
    done: bool,
}

impl Publisher<'_> {
    /// Publishes the release's CRDs.
    pub fn publish(&mut self, crds: Vec<CrdDef>) {
        self.board.set(self.index, crds);
        self.done = true;
    }
}

impl Drop for Publisher<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.board.set(self.index, Vec::new());
        }
    }
}

/// The CRDs one release's objects may be planned against.
#[derive(Debug, Default)]
pub struct Kinds {
    by_kind: HashMap<(String, String), CrdDef>,
}

/// An object planned against a CRD of the plan (see the module docs).
#[derive(Debug)]
pub struct Planned<'k> {
    def: &'k CrdDef,
    version: String,
    action: ObjectAction,
}

impl Kinds {
    /// The scopes of the kinds these CRDs define, for kinds `scopes` lacks.
    pub fn add_scopes(&self, scopes: &mut HashMap<(String, String), Scope>) {
        for (k, d) in &self.by_kind {
            scopes.entry(k.clone()).or_insert(d.scope);
        }
    }

    /// Whether no CRD is known.
    pub fn is_empty(&self) -> bool {
        self.by_kind.is_empty()
    }

    /// Whether the object `key` is planned against a CRD of the plan: its
    /// kind comes from one that the plan creates, or changes for the
    /// object's version. Reads the live CRD (batched, shared).
    pub fn planned(
        &self,
        reads: &Reads<'_>,
        key: &PlanKey,
    ) -> Result<Option<Planned<'_>>, ClusterError> {
        let Some(def) = self.by_kind.get(&(key.group.clone(), key.kind.clone())) else {
            return Ok(None);
        };
        let live = reads.get(&ObjectKey::new(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            "",
            &def.name,
        ))?;
        Ok(def
            .change_for(live.as_deref(), &key.version)
            .map(|action| Planned {
                def,
                version: key.version.clone(),
                action,
            }))
    }
}

impl Planned<'_> {
    /// Marks `change` as planned against the CRD and checks `desired`
    /// against its schema. On a violation the object is skipped and the
    /// release's blocking message is returned (the server's words).
    pub fn annotate(
        &self,
        change: &mut ObjectChange,
        desired: &Value,
        own: &ReleaseRef,
    ) -> Option<String> {
        let d = self.def;
        let key = &change.key;
        let mut violations = Vec::new();
        let schema = CrdDef::schema_of(&d.value, &self.version);
        if !CrdDef::serves(&d.value, &self.version) {
            violations.push(format!(
                "no matches for kind {:?} in version \"{}/{}\"",
                key.kind, key.group, self.version
            ));
        } else if let Some(s) = schema {
            violations = validate(s, desired);
        }
        let verb = if self.action == ObjectAction::Create {
            "creates"
        } else {
            "updates"
        };
        let whose = if &d.release == own {
            "this release".to_string()
        } else {
            format!("release {}", d.release)
        };
        let checked = if schema.is_some() {
            format!("checked against its {} schema", self.version)
        } else {
            format!("its {} has no schema to check", self.version)
        };
        let note = format!(
            "kind from CRD {}, which {whose} {verb} first ({checked}; no server dry run)",
            d.name
        );
        change.reason = if change.reason.is_empty() {
            note
        } else {
            format!("{}; {note}", change.reason)
        };
        change.planned_crd = Some(PlannedCrd {
            name: d.name.clone(),
            release: d.release.clone(),
            action: self.action,
            version: self.version.clone(),
            schema_checked: schema.is_some(),
            violations: violations.clone(),
        });
        if violations.is_empty() {
            return None;
        }
        change.action = ObjectAction::Skip;
        change.reason = format!(
            "invalid against the schema of CRD {} ({}): {}",
            d.name,
            self.version,
            violations.join("; ")
        );
        let ns_part = if key.namespace.is_empty() {
            String::new()
        } else {
            format!(" in namespace {:?}", key.namespace)
        };
        Some(format!(
            "{}.{} {:?}{ns_part} is invalid: [{}] (checked against CRD {} version {}, which {whose} {verb} first)",
            key.kind,
            key.group,
            key.name,
            violations.join(", "),
            d.name,
            self.version
        ))
    }
}

/// Warns each release that writes custom resources of a kind the cluster
/// does not serve (`served` says which it does) when only releases it does
/// not need (directly or through others) define that kind: they are not
/// applied before it, and may run at the same time, so its apply may fail
/// with `no matches for kind`. One warning per kind and release; `plans`
/// in plan order.
pub fn warn_unordered(plans: &mut [ReleasePlan], served: impl Fn(&str, &str) -> bool) {
    // Which releases define each kind, in plan order.
    let mut definers: HashMap<(String, String), Vec<(ReleaseRef, String)>> = HashMap::new();
    for p in plans.iter() {
        let r = p.reference();
        for o in &p.objects {
            // (The key first: a document not read is read only if needed.)
            let Some(d) = o
                .desired
                .as_ref()
                .filter(|_| o.key.kind == "CustomResourceDefinition")
                .and_then(|v| CrdDef::of(v, &r, false))
            else {
                continue;
            };
            let list = definers.entry((d.group, d.kind)).or_default();
            if !list.iter().any(|(x, _)| *x == r) {
                list.push((r.clone(), d.name));
            }
        }
    }
    if definers.is_empty() {
        return;
    }
    let mut ancestors: HashMap<ReleaseRef, HashSet<ReleaseRef>> = HashMap::new();
    for p in plans.iter_mut() {
        let me = p.reference();
        let mut mine = HashSet::new();
        for n in &p.needs {
            mine.insert(n.clone());
            mine.extend(ancestors.get(n).into_iter().flatten().cloned());
        }
        // Per kind, the objects that need it, in plan order.
        let mut wanting: Vec<((String, String), Vec<String>)> = Vec::new();
        for o in &p.objects {
            let k = (o.key.group.clone(), o.key.kind.clone());
            if o.stage != Stage::Main
                || !o.action.writes()
                || o.planned_crd.is_some()
                || served(&k.0, &k.1)
            {
                continue;
            }
            let Some(defs) = definers.get(&k) else {
                continue;
            };
            if defs.iter().any(|(r, _)| *r == me || mine.contains(r)) {
                continue;
            }
            match wanting.iter_mut().find(|(x, _)| *x == k) {
                Some((_, names)) => names.push(o.key.name.clone()),
                None => wanting.push((k, vec![o.key.name.clone()])),
            }
        }
        for ((group, kind), names) in wanting {
            let defs = &definers[&(group.clone(), kind.clone())];
            let (r, crd) = &defs[defs.len() - 1];
            p.warnings.push(format!(
                "{kind}.{group} {}: its kind comes from CRD {crd}, which release {r} applies, but this release does not need {r}: add it to needs, or the apply may fail with no matches for kind {kind:?}",
                names.join(", ")
            ));
        }
        ancestors.insert(me, mine);
    }
}

/// The violations of `obj` against a CRD's structural schema, in the API
/// server's words: at each level the missing required fields, then the
/// fields in name order (see the module docs for the subset checked). The root's `apiVersion`, `kind` and `metadata` are not
/// checked.
pub fn validate(schema: &Value, obj: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(schema, obj, "", true, &mut out);
    out
}

fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool) == Some(true)
}

/// The JSON type of a value as the server names it.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

fn type_ok(ty: &str, v: &Value) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => is_integer(v),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        _ => true,
    }
}

/// A value as the server quotes it in a message.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Object(_) | Value::Array(_) => format!("{:?}", v.to_string()),
        other => other.to_string(),
    }
}

fn child(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

/// JSON-schema numbers compared as the server does (integers and
/// integral floats alike).
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn check(schema: &Value, v: &Value, path: &str, root: bool, out: &mut Vec<String>) {
    let Some(s) = schema.as_object() else { return };
    if v.is_null() {
        // Server-side apply drops a null (it unsets the field).
        return;
    }
    let shown_path = if path.is_empty() { "<root>" } else { path };
    if flag(schema, "x-kubernetes-int-or-string") {
        if !(is_integer(v) || v.is_string()) {
            out.push(format!(
                "{shown_path}: Invalid value: \"{}\": {shown_path} in body must be of type integer,string: {}",
                type_name(v),
                shown(v)
            ));
            return;
        }
    } else if let Some(ty) = s.get("type").and_then(Value::as_str) {
        if !type_ok(ty, v) {
            out.push(format!(
                "{shown_path}: Invalid value: \"{}\": {shown_path} in body must be of type {ty}: {}",
                type_name(v),
                shown(v)
            ));
            return;
        }
    }
    if let Some(allowed) = s.get("enum").and_then(Value::as_array) {
        if !allowed.iter().any(|a| same_value(a, v)) {
            let list: Vec<String> = allowed.iter().map(shown).collect();
            out.push(format!(
                "{shown_path}: Unsupported value: {}: supported values: {}",
                shown(v),
                list.join(", ")
            ));
        }
    }
    match v {
        Value::String(text) => check_string(s, text, shown_path, out),
        Value::Number(n) => check_number(s, n.as_f64().unwrap_or(0.0), v, shown_path, out),
        Value::Array(items) => {
            let len = items.len() as u64;
            if let Some(min) = s.get("minItems").and_then(Value::as_u64) {
                if len < min {
                    out.push(format!(
                        "{shown_path}: Invalid value: {len}: {shown_path} in body should have at least {min} items"
                    ));
                }
            }
            if let Some(max) = s.get("maxItems").and_then(Value::as_u64) {
                if len > max {
                    out.push(format!(
                        "{shown_path}: Too many: {len}: must have at most {max} items"
                    ));
                }
            }
            if let Some(item) = s.get("items") {
                for (i, x) in items.iter().enumerate() {
                    check(item, x, &format!("{path}[{i}]"), false, out);
                }
            }
        }
        Value::Object(m) => check_object(s, m, path, root, out),
        _ => {}
    }
}

fn check_string(s: &Map<String, Value>, text: &str, path: &str, out: &mut Vec<String>) {
    let len = text.chars().count() as u64;
    if let Some(min) = s.get("minLength").and_then(Value::as_u64) {
        if len < min {
            out.push(format!(
                "{path}: Invalid value: {text:?}: {path} in body should be at least {min} chars long"
            ));
        }
    }
    if let Some(max) = s.get("maxLength").and_then(Value::as_u64) {
        if len > max {
            out.push(format!(
                "{path}: Too long: may not be more than {max} bytes"
            ));
        }
    }
    if let Some(p) = s.get("pattern").and_then(Value::as_str) {
        // A pattern Rust's regex cannot read is left to the server.
        if let Ok(re) = regex::Regex::new(p) {
            if !re.is_match(text) {
                out.push(format!(
                    "{path}: Invalid value: {text:?}: {path} in body should match '{p}'"
                ));
            }
        }
    }
}

fn check_number(s: &Map<String, Value>, x: f64, v: &Value, path: &str, out: &mut Vec<String>) {
    let excl = |k: &str| s.get(k).and_then(Value::as_bool) == Some(true);
    if let Some(min) = s.get("minimum").and_then(Value::as_f64) {
        let (bad, words) = if excl("exclusiveMinimum") {
            (x <= min, "greater than")
        } else {
            (x < min, "greater than or equal to")
        };
        if bad {
            out.push(format!(
                "{path}: Invalid value: {v}: {path} in body should be {words} {}",
                s["minimum"]
            ));
        }
    }
    if let Some(max) = s.get("maximum").and_then(Value::as_f64) {
        let (bad, words) = if excl("exclusiveMaximum") {
            (x >= max, "less than")
        } else {
            (x > max, "less than or equal to")
        };
        if bad {
            out.push(format!(
                "{path}: Invalid value: {v}: {path} in body should be {words} {}",
                s["maximum"]
            ));
        }
    }
}

fn check_object(
    s: &Map<String, Value>,
    m: &Map<String, Value>,
    path: &str,
    root: bool,
    out: &mut Vec<String>,
) {
    let schema = Value::Object(s.clone());
    let empty = Map::new();
    let props = s
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    // Required fields first, as the server lists them.
    for r in s
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let nullable = props.get(r).is_some_and(|p| flag(p, "nullable"));
        match m.get(r) {
            None => out.push(format!("{}: Required value", child(path, r))),
            Some(Value::Null) if !nullable => {
                out.push(format!("{}: Required value", child(path, r)))
            }
            _ => {}
        }
    }
    let preserve = flag(&schema, "x-kubernetes-preserve-unknown-fields");
    let embedded = flag(&schema, "x-kubernetes-embedded-resource");
    let additional = s.get("additionalProperties");
    for (k, v) in m {
        if (root || embedded) && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        let p = child(path, k);
        if let Some(ps) = props.get(k) {
            check(ps, v, &p, false, out);
            continue;
        }
        match additional {
            Some(a @ Value::Object(_)) => check(a, v, &p, false, out),
            Some(Value::Bool(true)) => {}
            _ if preserve => {}
            _ => out.push(format!(".{p}: field not declared in schema")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["size"],
                    "properties": {
                        "size": {"type": "integer", "minimum": 1, "maximum": 10},
                        "mode": {"type": "string", "enum": ["fast", "slow"]},
                        "name": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"},
                        "port": {"x-kubernetes-int-or-string": true},
                        "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "closed": {"type": "object", "additionalProperties": false,
                                   "properties": {"a": {"type": "boolean"}}},
                        "opt": {"type": "string", "nullable": true}
                    }
                },
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }
        })
    }

    fn widget(spec: Value) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": "w", "namespace": "n", "labels": {"x": "y"}},
               "spec": spec})
    }

    #[test]
    fn a_valid_object_has_no_violations() {
        let w = widget(json!({
            "size": 3, "mode": "fast", "name": "abc", "port": "http", "tags": ["a"],
            "labels": {"k": "v"}, "free": {"any": {"thing": [1, 2]}},
            "closed": {"a": true}, "opt": null
        }));
        assert_eq!(validate(&schema(), &w), Vec::<String>::new());
        // An integral float is an integer; int-or-string takes either.
        let w = widget(json!({"size": 3.0, "port": 8080}));
        assert_eq!(validate(&schema(), &w), Vec::<String>::new());
    }

    #[test]
    fn violations_in_the_servers_words() {
        let w = widget(json!({
            "size": "three", "mode": "medium", "name": "ABCDEFG", "port": true,
            "tags": ["a", 2, "c"], "labels": {"k": 1}, "closed": {"b": 1}, "color": "red"
        }));
        assert_eq!(
            validate(&schema(), &w),
            vec![
                ".spec.closed.b: field not declared in schema",
                ".spec.color: field not declared in schema",
                r#"spec.labels.k: Invalid value: "integer": spec.labels.k in body must be of type string: 1"#,
                r#"spec.mode: Unsupported value: "medium": supported values: "fast", "slow""#,
                "spec.name: Too long: may not be more than 5 bytes",
                r#"spec.name: Invalid value: "ABCDEFG": spec.name in body should match '^[a-z]+$'"#,
                r#"spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: true"#,
                r#"spec.size: Invalid value: "string": spec.size in body must be of type integer: "three""#,
                "spec.tags: Too many: 3: must have at most 2 items",
                r#"spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of type string: 2"#,
            ]
        );
    }

    #[test]
    fn required_bounds_and_unknown_top_level_fields() {
        let mut w = widget(json!({"size": 0}));
        w["extra"] = json!(1);
        assert_eq!(
            validate(&schema(), &w),
            vec![
                ".extra: field not declared in schema",
                "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1",
            ]
        );
        let w = widget(json!({"mode": "fast"}));
        assert_eq!(validate(&schema(), &w), vec!["spec.size: Required value"]);
        let w = widget(json!({"size": null}));
        assert_eq!(validate(&schema(), &w), vec!["spec.size: Required value"]);
        let w = widget(json!({"size": 11}));
        assert_eq!(
            validate(&schema(), &w),
            vec!["spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"]
        );
    }

    #[test]
    fn preserve_unknown_fields_at_the_root_accepts_anything() {
        let s = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        assert!(validate(&s, &widget(json!({"anything": [1]}))).is_empty());
        // An embedded resource keeps its own apiVersion, kind and metadata.
        let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                         "properties": {"data": {"type": "object", "additionalProperties": {"type": "string"}}}}}}}});
        let w = widget(json!({"template": {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c"}, "data": {"a": "b"}}}));
        assert!(validate(&s, &w).is_empty());
    }

    fn crd(versions: Value, scope: &str) -> Value {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "widgets.example.com"},
               "spec": {"group": "example.com", "scope": scope,
                        "names": {"kind": "Widget", "plural": "widgets"},
                        "versions": versions}})
    }

    fn v(name: &str, served: bool, props: Value) -> Value {
        json!({"name": name, "served": served, "storage": true,
               "schema": {"openAPIV3Schema": {"type": "object", "properties": props}}})
    }

    fn desired(name: &str, needs: &[&str]) -> DesiredRelease {
        let docs = std::collections::BTreeMap::from([(
            "c.yaml".to_string(),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n".to_string(),
        )]);
        let chart = crate::chart::chart_from_manifests(name, "n", &docs).unwrap();
        let mut d = DesiredRelease::new(name, "n", chart);
        d.needs = needs
            .iter()
            .map(|n| crate::plan::Need {
                release: ReleaseRef {
                    namespace: "n".into(),
                    name: n.to_string(),
                },
                reason: String::new(),
            })
            .collect();
        d
    }

    #[test]
    fn a_release_waits_for_the_crds_of_the_releases_it_needs_only() {
        // c needs b needs a; d needs nothing. Input order d, c, b, a;
        // plan order d, a, b, c.
        let rels = [
            desired("d", &[]),
            desired("c", &["b"]),
            desired("b", &["a"]),
            desired("a", &[]),
        ];
        let order = crate::plan::order::release_order(&rels).unwrap();
        assert_eq!(order, [0, 3, 2, 1]);
        let board = Board::new(&rels, &order);
        assert_eq!(board.ancestors, [vec![], vec![3, 2], vec![3], vec![]]);
        let def = |rel: usize, kind: &str| {
            let v = crd(json!([v("v1", true, json!({}))]), "Namespaced");
            let mut d = CrdDef::of(&v, &rels[rel].reference(), false).unwrap();
            d.kind = kind.into();
            d
        };
        std::thread::scope(|s| {
            // c asks first, on its own thread: it waits for a and b.
            let c = s.spawn(|| board.kinds_for(1, Vec::new()));
            // d needs nothing: it does not wait (nothing is published yet).
            assert!(board.kinds_for(0, Vec::new()).is_empty());
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(!c.is_finished());
            board
                .publisher(3)
                .publish(vec![def(3, "Widget"), def(3, "Gadget")]);
            // b publishes nothing (dropped unpublished), and redefines
            // nothing; a's Gadget stays a's.
            drop(board.publisher(2));
            let kinds = c.join().unwrap();
            let mut found: Vec<(&str, &str)> = kinds
                .by_kind
                .values()
                .map(|d| (d.kind.as_str(), d.release.name.as_str()))
                .collect();
            found.sort();
            assert_eq!(found, [("Gadget", "a"), ("Widget", "a")]);
        });
        // A later release's CRD of the same kind, and the release's own,
        // win over earlier ones.
        let board = Board::new(&rels, &order);
        board.publisher(3).publish(vec![def(3, "Widget")]);
        board.publisher(2).publish(vec![def(2, "Widget")]);
        let kinds = board.kinds_for(1, Vec::new());
        assert_eq!(kinds.by_kind.values().next().unwrap().release.name, "b");
        let kinds = board.kinds_for(1, vec![def(1, "Widget")]);
        assert_eq!(kinds.by_kind.values().next().unwrap().release.name, "c");
    }

    #[test]
    fn a_crd_counts_when_absent_or_changed_for_the_version() {
        let r = ReleaseRef {
            namespace: "a".into(),
            name: "a".into(),
        };
        let v1 = crd(
            json!([v("v1", true, json!({"spec": {"type": "object"}}))]),
            "Cluster",
        );
        let d = CrdDef::of(&v1, &r, false).unwrap();
        assert_eq!(
            (d.group.as_str(), d.kind.as_str(), d.scope),
            ("example.com", "Widget", Scope::Cluster)
        );
        assert_eq!(d.change_for(None, "v1"), Some(ObjectAction::Create));
        assert_eq!(d.change_for(Some(&v1), "v1"), None);
        let v2 = crd(
            json!([
                v("v1", true, json!({"spec": {"type": "object"}})),
                v(
                    "v2",
                    true,
                    json!({"spec": {"type": "object", "properties": {"c": {"type": "string"}}}})
                )
            ]),
            "Cluster",
        );
        let d2 = CrdDef::of(&v2, &r, false).unwrap();
        assert_eq!(d2.change_for(Some(&v1), "v2"), Some(ObjectAction::Update));
        // v1 is the same in both: the live CRD answers for it.
        assert_eq!(d2.change_for(Some(&v1), "v1"), None);
        // crds/ are never updated: the live CRD stays.
        let d3 = CrdDef::of(&v2, &r, true).unwrap();
        assert_eq!(d3.change_for(Some(&v1), "v2"), None);
        assert!(CrdDef::of(&json!({"kind": "ConfigMap"}), &r, false).is_none());
    }
}
