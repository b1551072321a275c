//! Values: user-value merging, Helm's coalescing with chart defaults and
//! globals, and dependency processing (conditions, tags, aliases,
//! import-values).
//!
//! Everything works on [`Node`] trees; the render loop converts the final
//! tree to template values once. The rules follow `pkg/chartutil`'s
//! `coalesce.go` and `dependencies.go` of Helm v3.17.2, including their
//! quirks (a user `null` deletes a chart default, nulls survive while
//! dependencies are processed, globals flow down but never up).
use crate::chart::{Chart, Dependency};
use crate::yaml::Node;
use std::collections::BTreeMap;

/// A values map.
pub type Map = BTreeMap<String, Node>;

/// The key under which global values live.
pub const GLOBAL_KEY: &str = "global";

/// Errors from coalescing values.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValuesError {
    /// A subchart's key holds a non-map value (`--set sub=1`).
    #[error("type mismatch on {name}: {shown}")]
    TypeMismatch {
        /// The subchart name.
        name: String,
        /// Go's `%t` rendering of the value.
        shown: String,
    },
}

/// Collected warnings, printed by the CLI the way Helm logs them: each with
/// the `coalesce.go:LINE: ` or `dependencies.go:LINE: ` prefix of Go's
/// `log` in Helm v3.17.2.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Warnings(pub Vec<String>);

impl Warnings {
    fn push(&mut self, s: String) {
        self.0.push(s);
    }
}

/// Why a values file did not parse. It prints Helm's text:
/// `failed to parse FILE: MESSAGE`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed to parse {file}: {message}")]
pub struct ValuesFileError {
    /// The file, as it was named (a `-f` argument, a releases file's
    /// `values:` entry, `-` for standard input).
    pub file: String,
    /// The 1-based line the YAML decoder names, when it names one.
    pub line: Option<usize>,
    /// Helm's message, as it follows the file name in Helm's error
    /// (`error converting YAML to JSON: yaml: line 2: could not find
    /// expected ':'`).
    pub message: String,
}

impl ValuesFileError {
    fn new(file: &str, message: String) -> ValuesFileError {
        let line = message.split("line ").nth(1).and_then(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        });
        ValuesFileError {
            file: file.to_string(),
            line,
            message,
        }
    }
}

/// Parses the text of the values file `file` (`-f`) into a map (an empty
/// file gives an empty map); `file` only names the file in the error.
///
/// ```
/// use rudder::render::values::parse_values_file;
/// let m = parse_values_file("values.yaml", "replicas: 3\nimage:\n  tag: v1\n").unwrap();
/// // Numbers come back as float64, as after Helm's YAML-to-JSON round trip.
/// assert_eq!(m["replicas"], rudder::yaml::Node::Float(3.0));
/// let err = parse_values_file("prod.yaml", "a: 1\nb\n").unwrap_err();
/// assert_eq!((err.file.as_str(), err.line), ("prod.yaml", Some(3)));
/// assert!(err.to_string().starts_with(
///     "failed to parse prod.yaml: error converting YAML to JSON: yaml: line 3:"
/// ));
/// ```
pub fn parse_values_file(file: &str, text: &str) -> Result<Map, ValuesFileError> {
    match super::compat::parse_values(text).map_err(|m| ValuesFileError::new(file, m))? {
        Node::Map(m) => Ok(m),
        _ => Ok(Map::new()),
    }
}

/// [`parse_values_file`] of a file's bytes: bytes that are not UTF-8 are
/// Helm's YAML reader error (`error converting YAML to JSON: yaml: invalid
/// leading UTF-8 octet`) rather than U+FFFD.
pub fn parse_values_bytes(file: &str, data: &[u8]) -> Result<Map, ValuesFileError> {
    if let Some(e) = crate::gostd::gostr::utf8_error(data) {
        return Err(ValuesFileError::new(
            file,
            format!("error converting YAML to JSON: yaml: {e}"),
        ));
    }
    parse_values_file(file, &String::from_utf8_lossy(data))
}

/// Helm's `mergeMaps` for `-f` files: maps merge deeply, everything else
/// (lists, scalars, null) replaces.
pub fn merge_maps(base: &mut Map, new: Map) {
    crate::stack::deeper(|| merge_maps_inner(base, new))
}

fn merge_maps_inner(base: &mut Map, new: Map) {
    for (k, v) in new {
        match (base.get_mut(&k), v) {
            (Some(Node::Map(b)), Node::Map(n)) => merge_maps(b, n),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

fn concat_prefix(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}.{b}")
    }
}

/// Go's `%v` of a value, for warnings.
fn show(n: &Node) -> String {
    crate::render::objects::node_to_value(n).to_string()
}

/// Go's `%t` of a value (`type mismatch` errors).
fn show_t(n: &Node) -> String {
    match n {
        Node::Bool(b) => b.to_string(),
        Node::Null => "%!t(<nil>)".to_string(),
        Node::Int(i) => format!("%!t(int64={i})"),
        Node::Float(f) => format!("%!t(float64={})", crate::gostd::float::format_go_float(*f)),
        Node::Str(s) => format!("%!t(string={s})"),
        Node::Seq(items) => {
            let inner: Vec<String> = items.iter().map(show_t).collect();
            format!("[{}]", inner.join(" "))
        }
        Node::Map(m) => {
            let inner: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("%!t(string={k}):{}", show_t(v)))
                .collect();
            format!("map[{}]", inner.join(" "))
        }
    }
}

/// `coalesceTablesFullKey`: `dst` has precedence; `merge` keeps nulls.
pub fn coalesce_tables(w: &mut Warnings, dst: &mut Map, src: &Map, prefix: &str, merge: bool) {
    crate::stack::deeper(|| coalesce_tables_inner(w, dst, src, prefix, merge))
}

fn coalesce_tables_inner(w: &mut Warnings, dst: &mut Map, src: &Map, prefix: &str, merge: bool) {
    for (key, val) in src {
        // The key's full path: only nested tables and warnings need it.
        let full = || concat_prefix(prefix, key);
        match dst.get_mut(key) {
            Some(Node::Null) if !merge => {
                dst.remove(key);
            }
            None => {
                dst.insert(key.clone(), val.clone());
            }
            Some(dv) => {
                if let Node::Map(sv) = val {
                    if let Node::Map(dm) = dv {
                        coalesce_tables(w, dm, sv, &full(), merge);
                    } else {
                        w.push(format!(
                            "coalesce.go:298: warning: cannot overwrite table with non table for {} ({})",
                            full(),
                            show(val)
                        ));
                    }
                } else if matches!(dv, Node::Map(_)) && !matches!(val, Node::Null) {
                    w.push(format!(
                        "coalesce.go:301: warning: destination for {} is a table. Ignoring non-table value ({})",
                        full(),
                        show(val)
                    ));
                }
            }
        }
    }
}

/// Helm's `CoalesceValues` (`merge = false`) and `MergeValues` (`merge = true`):
/// the user values with the chart's (and its subcharts') defaults filled in.
pub fn coalesce_values(
    w: &mut Warnings,
    chart: &Chart,
    user: &Map,
    merge: bool,
) -> Result<Map, ValuesError> {
    let mut dest = user.clone();
    coalesce(w, chart, &mut dest, "", merge)?;
    Ok(dest)
}

fn coalesce(
    w: &mut Warnings,
    chart: &Chart,
    dest: &mut Map,
    prefix: &str,
    merge: bool,
) -> Result<(), ValuesError> {
    coalesce_chart_values(w, chart, dest, prefix, merge);
    coalesce_deps(w, chart, dest, prefix, merge)
}

fn is_subchart_name(chart: &Chart, key: &str) -> bool {
    chart.dependencies.iter().any(|d| d.metadata.name == key)
}

fn coalesce_chart_values(w: &mut Warnings, chart: &Chart, v: &mut Map, prefix: &str, merge: bool) {
    let sub_prefix = concat_prefix(prefix, &chart.metadata.name);
    let Some(Node::Map(defaults)) = &chart.values else {
        return;
    };
    for (key, val) in defaults {
        match v.get_mut(key) {
            Some(Node::Null) if !merge => {
                v.remove(key);
            }
            Some(Node::Map(dest)) => match val {
                Node::Map(src) => {
                    let merge = merge || is_subchart_name(chart, key);
                    coalesce_tables(w, dest, src, &concat_prefix(&sub_prefix, key), merge);
                }
                Node::Null => {}
                _ => w.push(format!(
                    "coalesce.go:237: warning: skipped value for {sub_prefix}.{key}: Not a table."
                )),
            },
            Some(_) => {}
            None => {
                v.insert(key.clone(), val.clone());
            }
        }
    }
}

fn coalesce_deps(
    w: &mut Warnings,
    chart: &Chart,
    dest: &mut Map,
    prefix: &str,
    merge: bool,
) -> Result<(), ValuesError> {
    for sub in &chart.dependencies {
        let name = &sub.metadata.name;
        match dest.get(name) {
            None => {
                dest.insert(name.clone(), Node::Map(Map::new()));
            }
            Some(Node::Map(_)) => {}
            Some(other) => {
                return Err(ValuesError::TypeMismatch {
                    name: name.clone(),
                    shown: show_t(other),
                })
            }
        }
        let sub_prefix = concat_prefix(prefix, &chart.metadata.name);
        let parent_global = dest.get(GLOBAL_KEY).cloned();
        let Some(Node::Map(dv)) = dest.get_mut(name) else {
            continue;
        };
        coalesce_globals(w, dv, parent_global.as_ref(), &sub_prefix);
        coalesce(w, sub, dv, &sub_prefix, merge)?;
    }
    Ok(())
}

/// Copies the parent's `global` into a subchart's values: parent globals win
/// over the ones given under `<sub>.global`.
fn coalesce_globals(w: &mut Warnings, dest: &mut Map, src_global: Option<&Node>, prefix: &str) {
    let mut dg = match dest.get(GLOBAL_KEY) {
        None => Map::new(),
        Some(Node::Map(m)) => m.clone(),
        Some(_) => {
            w.push("coalesce.go:138: warning: skipping globals because destination global is not a table.".into());
            return;
        }
    };
    let sg = match src_global {
        None => Map::new(),
        Some(Node::Map(m)) => m.clone(),
        Some(_) => {
            w.push(
                "coalesce.go:145: warning: skipping globals because source global is not a table."
                    .into(),
            );
            return;
        }
    };
    for (key, val) in sg {
        if let Node::Map(vm) = &val {
            let mut vv = vm.clone();
            match dg.get(&key) {
                None => {
                    dg.insert(key, Node::Map(vv));
                }
                Some(Node::Map(destv)) => {
                    coalesce_tables(w, &mut vv, destv, &concat_prefix(prefix, &key), true);
                    dg.insert(key, Node::Map(vv));
                }
                Some(_) => {
                    w.push(format!(
                        "Conflict: cannot merge map onto non-map for {key:?}. Skipping."
                    ));
                }
            }
        } else if matches!(dg.get(&key), Some(Node::Map(_))) {
            w.push(format!("key {key} is table. Skipping"));
        } else {
            dg.insert(key, val);
        }
    }
    dest.insert(GLOBAL_KEY.to_string(), Node::Map(dg));
}

// ---------------------------------------------------------------------------
// Paths (`Values.Table`, `Values.PathValue`)

/// `Values.Table`: the map at a dotted path.
pub fn table<'a>(vals: &'a Map, path: &str) -> Option<&'a Map> {
    table_lookup(vals, path).ok()
}

/// `Values.Table` with its error: the path segment that is missing or not
/// a map (Helm's `ErrNoTable`, printed as `"KEY" is not a table`).
fn table_lookup<'a, 'p>(vals: &'a Map, path: &'p str) -> Result<&'a Map, &'p str> {
    let mut cur = vals;
    for part in path.split('.') {
        match cur.get(part) {
            Some(Node::Map(m)) => cur = m,
            _ => return Err(part),
        }
    }
    Ok(cur)
}

/// `Values.PathValue`: a non-table leaf at a dotted path.
pub fn path_value<'a>(vals: &'a Map, path: &str) -> Option<&'a Node> {
    if path.is_empty() {
        return None;
    }
    let (parent, key) = match path.rsplit_once('.') {
        Some((p, k)) => (table(vals, p)?, k),
        None => (vals, path),
    };
    match parent.get(key) {
        Some(Node::Map(_)) | None => None,
        Some(v) => Some(v),
    }
}

// ---------------------------------------------------------------------------
// Dependencies

/// Masterminds' `IsCompatibleRange`: whether `version` satisfies `constraint`.
/// An empty or invalid constraint, or an invalid version, is not compatible.
pub type RangeCheck<'a> = &'a dyn Fn(&str, &str) -> bool;

/// Helm's `ProcessDependenciesWithMerge`: decides which subcharts are enabled
/// (conditions, tags), applies aliases and import-values. Mutates `chart`.
pub fn process_dependencies(
    w: &mut Warnings,
    chart: &mut Chart,
    user: &Map,
    compatible: RangeCheck<'_>,
) -> Result<(), ValuesError> {
    process_enabled(w, chart, user, "", compatible)?;
    process_import_values(w, chart)
}

fn process_enabled(
    w: &mut Warnings,
    c: &mut Chart,
    v: &Map,
    path: &str,
    compatible: RangeCheck<'_>,
) -> Result<(), ValuesError> {
    if c.metadata.dependencies.is_empty() {
        return Ok(());
    }
    let loaded = std::mem::take(&mut c.dependencies);
    let mut deps: Vec<Chart> = Vec::new();
    for existing in &loaded {
        let declared = c.metadata.dependencies.iter().any(|req| {
            existing.metadata.name == req.name
                && compatible(&req.version, &existing.metadata.version)
        });
        if !declared {
            deps.push(existing.clone());
        }
    }
    for req in c.metadata.dependencies.iter_mut() {
        if let Some(found) = loaded.iter().find(|ch| {
            ch.metadata.name == req.name && compatible(&req.version, &ch.metadata.version)
        }) {
            let mut out = found.clone();
            if !req.alias.is_empty() {
                out.metadata.name = req.alias.clone();
            }
            deps.push(out);
        }
        if !req.alias.is_empty() {
            req.name = req.alias.clone();
        }
    }
    c.dependencies = deps;
    for d in c.metadata.dependencies.iter_mut() {
        d.enabled = true;
    }
    let cvals = coalesce_values(w, c, v, false)?;
    process_tags(w, &mut c.metadata.dependencies, &cvals);
    process_conditions(w, &mut c.metadata.dependencies, &cvals, path);
    let removed: Vec<String> = c
        .metadata
        .dependencies
        .iter()
        .filter(|d| !d.enabled)
        .map(|d| d.name.clone())
        .collect();
    c.dependencies
        .retain(|d| !removed.contains(&d.metadata.name));
    c.metadata
        .dependencies
        .retain(|d| !removed.contains(&d.name));
    for sub in c.dependencies.iter_mut() {
        let subpath = format!("{path}{}.", sub.metadata.name);
        process_enabled(w, sub, &cvals, &subpath, compatible)?;
    }
    Ok(())
}

fn process_tags(w: &mut Warnings, reqs: &mut [Dependency], cvals: &Map) {
    let Some(Node::Map(tags)) = cvals.get("tags") else {
        return;
    };
    for r in reqs.iter_mut() {
        let (mut has_true, mut has_false) = (false, false);
        for k in &r.tags {
            match tags.get(k) {
                Some(Node::Bool(true)) => has_true = true,
                Some(Node::Bool(false)) => has_false = true,
                Some(_) => w.push(format!(
                    "dependencies.go:94: Warning: Tag '{k}' for chart {} returned non-bool value",
                    r.name
                )),
                None => {}
            }
        }
        r.enabled = has_true || !has_false;
    }
}

fn process_conditions(w: &mut Warnings, reqs: &mut [Dependency], cvals: &Map, path: &str) {
    for r in reqs.iter_mut() {
        for c in r.condition.trim().split(',') {
            if c.is_empty() {
                continue;
            }
            match path_value(cvals, &format!("{path}{c}")) {
                Some(Node::Bool(b)) => {
                    r.enabled = *b;
                    break;
                }
                Some(_) => w.push(format!(
                    "dependencies.go:63: Warning: Condition path '{c}' for chart {} returned non-bool value",
                    r.name
                )),
                None => {}
            }
        }
    }
}

fn path_to_map(path: &str, data: Map) -> Map {
    if path == "." {
        return data;
    }
    let parts: Vec<&str> = path.split('.').filter(|p| !p.is_empty()).collect();
    let mut cur = data;
    for p in parts.iter().rev() {
        let mut m = Map::new();
        m.insert(p.to_string(), Node::Map(cur));
        cur = m;
    }
    cur
}

fn process_import_values(w: &mut Warnings, c: &mut Chart) -> Result<(), ValuesError> {
    for d in c.dependencies.iter_mut() {
        process_import_values(w, d)?;
    }
    if c.metadata.dependencies.is_empty() {
        return Ok(());
    }
    let mut cvals = coalesce_values(w, c, &Map::new(), true)?;
    let mut b = Map::new();
    for r in c.metadata.dependencies.iter_mut() {
        let mut out = Vec::new();
        for riv in &r.import_values {
            match riv {
                Node::Map(iv) => {
                    let child = match iv.get("child") {
                        Some(Node::Str(s)) => s.clone(),
                        _ => String::new(),
                    };
                    let parent = match iv.get("parent") {
                        Some(Node::Str(s)) => s.clone(),
                        _ => String::new(),
                    };
                    out.push(child_parent(&child, &parent));
                    match table_lookup(&cvals, &format!("{}.{}", r.name, child)) {
                        Ok(vv) => {
                            let m = path_to_map(&parent, vv.clone());
                            coalesce_tables(w, &mut b, &m, "", true);
                        }
                        Err(key) => w.push(format!(
                            "dependencies.go:269: Warning: ImportValues missing table from chart {}: {key:?} is not a table",
                            r.name
                        )),
                    }
                }
                Node::Str(iv) => {
                    let child = format!("exports.{iv}");
                    out.push(child_parent(&child, "."));
                    match table_lookup(&cvals, &format!("{}.{}", r.name, child)) {
                        Ok(vm) => {
                            let vm = vm.clone();
                            coalesce_tables(w, &mut b, &vm, "", true);
                        }
                        Err(key) => w.push(format!(
                            "dependencies.go:286: Warning: ImportValues missing table: {key:?} is not a table"
                        )),
                    }
                }
                _ => {}
            }
        }
        r.import_values = out;
    }
    coalesce_tables(w, &mut cvals, &b, "", true);
    c.values = Some(Node::Map(cvals));
    Ok(())
}

fn child_parent(child: &str, parent: &str) -> Node {
    let mut m = Map::new();
    m.insert("child".into(), Node::Str(child.into()));
    m.insert("parent".into(), Node::Str(parent.into()));
    Node::Map(m)
}

/// Whether a chart's templates may read the values a release gives it.
///
/// `false` only when that is certain: no template of the chart or of its
/// subcharts refers to the template data at all, that is no operand is
/// `.`, a field (`.Values.x`, `.Release.Name`) or a variable (`$`, `$x`),
/// so neither `.Values` nor `include "x" .` nor `toYaml $` appears. The
/// templates then print fixed text, and values change nothing: a chart
/// built by [`crate::chart::chart_from_component`] is such a chart (its
/// only actions print the literal `{{`). A template that does not parse
/// counts as one that reads values.
///
/// ```
/// use std::collections::BTreeMap;
/// let mut m = BTreeMap::new();
/// m.insert("cm.yaml".to_string(),
///     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: '{{ b }}'\n".to_string());
/// let chart = rudder::chart::chart_from_manifests("demo", "default", &m).unwrap();
/// assert!(!rudder::render::values::reads_values(&chart));
/// ```
pub fn reads_values(chart: &Chart) -> bool {
    use crate::template::ast::Source;
    // Nearly every real chart names `.Values` somewhere: no parse needed.
    if chart_texts(chart).any(|t| memchr::memmem::find(t, b".Values").is_some()) {
        return true;
    }
    let mut stack = vec![chart];
    while let Some(c) = stack.pop() {
        for f in &c.templates {
            let text = f.data.text();
            let trees =
                match crate::template::parse::parse_source(&f.name, &Source::from(&*text), &|_| {
                    true
                }) {
                    Ok(t) => t,
                    Err(_) => return true,
                };
            if trees.iter().any(|t| list_reads_data(&t.root)) {
                return true;
            }
        }
        stack.extend(c.dependencies.iter());
    }
    false
}

/// The template texts of a chart and its subcharts.
fn chart_texts(chart: &Chart) -> impl Iterator<Item = &[u8]> {
    let mut all = Vec::new();
    let mut stack = vec![chart];
    while let Some(c) = stack.pop() {
        all.extend(c.templates.iter().map(|f| f.data.as_slice()));
        stack.extend(c.dependencies.iter());
    }
    all.into_iter()
}

fn list_reads_data(l: &crate::template::ast::List) -> bool {
    use crate::template::ast::BodyNode as Node;
    l.nodes.iter().any(|n| match n {
        Node::Text(_) | Node::Break | Node::Continue => false,
        Node::Action(a) => pipe_reads_data(&a.pipe),
        Node::If(c) | Node::With(c) | Node::Range(c) => {
            pipe_reads_data(&c.pipe)
                || list_reads_data(&c.list)
                || c.else_list.as_ref().is_some_and(list_reads_data)
        }
        Node::Template(t) => t.pipe.as_ref().is_some_and(pipe_reads_data),
    })
}

fn pipe_reads_data(p: &crate::template::ast::Pipe) -> bool {
    p.cmds.iter().any(|c| c.args.iter().any(arg_reads_data))
}

fn arg_reads_data(a: &crate::template::ast::Arg) -> bool {
    use crate::template::ast::Arg;
    match a {
        Arg::Field(..) | Arg::Variable(..) | Arg::Dot(_) => true,
        Arg::Chain(_, c) => arg_reads_data(&c.node),
        Arg::Pipe(p) => pipe_reads_data(p),
        Arg::Identifier(..) | Arg::Nil(_) | Arg::Bool(..) | Arg::Number(..) | Arg::String(..) => {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::Metadata;

    fn map(json: &str) -> Map {
        match serde_json::from_str::<Node>(json).unwrap() {
            Node::Map(m) => m,
            _ => panic!("not a map"),
        }
    }

    fn chart(name: &str, values: &str, deps: Vec<Chart>) -> Chart {
        Chart {
            metadata: Metadata {
                name: name.into(),
                version: "0.1.0".into(),
                ..Default::default()
            },
            values: Some(Node::Map(map(values))),
            dependencies: deps,
            ..Default::default()
        }
    }

    fn js(m: &Map) -> String {
        serde_json::to_string(m).unwrap()
    }

    #[test]
    fn user_null_deletes_default_and_unknown_null_stays() {
        let c = chart("p", r#"{"a":1,"b":{"c":2,"d":3}}"#, vec![]);
        let mut w = Warnings::default();
        let out = coalesce_values(
            &mut w,
            &c,
            &map(r#"{"a":null,"b":{"c":null},"e":null}"#),
            false,
        )
        .unwrap();
        assert_eq!(js(&out), r#"{"b":{"d":3},"e":null}"#);
    }

    #[test]
    fn globals_flow_down_parent_wins() {
        let sub = chart("sub", r#"{"global":{"g":"sub","h":"sub"},"x":1}"#, vec![]);
        let c = chart("p", r#"{"global":{"g":"parent"},"sub":{"x":2}}"#, vec![sub]);
        let mut w = Warnings::default();
        let out = coalesce_values(&mut w, &c, &Map::new(), false).unwrap();
        assert_eq!(
            js(&out),
            r#"{"global":{"g":"parent"},"sub":{"global":{"g":"parent","h":"sub"},"x":2}}"#
        );
    }

    #[test]
    fn subchart_type_mismatch() {
        let c = chart("p", "{}", vec![chart("sub", "{}", vec![])]);
        let mut w = Warnings::default();
        let e = coalesce_values(&mut w, &c, &map(r#"{"sub":1}"#), false).unwrap_err();
        assert_eq!(e.to_string(), "type mismatch on sub: %!t(int64=1)");
        let e = coalesce_values(&mut w, &c, &map(r#"{"sub":true}"#), false).unwrap_err();
        assert_eq!(e.to_string(), "type mismatch on sub: true");
    }

    #[test]
    fn merge_maps_replaces_lists() {
        let mut a = map(r#"{"a":{"b":1,"c":[1,2]},"d":1}"#);
        merge_maps(&mut a, map(r#"{"a":{"c":[3]},"d":null}"#));
        assert_eq!(js(&a), r#"{"a":{"b":1,"c":[3]},"d":null}"#);
    }

    #[test]
    fn path_value_needs_leaf() {
        let v = map(r#"{"a":{"b":true,"c":{}}}"#);
        assert_eq!(path_value(&v, "a.b"), Some(&Node::Bool(true)));
        assert_eq!(path_value(&v, "a.c"), None);
        assert_eq!(path_value(&v, "x.y"), None);
    }

    fn chart_with(templates: &[(&str, &str)]) -> Chart {
        let mut c = Chart::default();
        c.metadata.name = "c".into();
        c.metadata.version = "0.1.0".into();
        c.templates = templates
            .iter()
            .map(|(n, t)| crate::chart::ChartFile {
                name: format!("templates/{n}"),
                data: (*t).into(),
            })
            .collect();
        c
    }

    #[test]
    fn reads_values_is_false_only_when_no_template_touches_the_data() {
        let fixed = "a: 1\nb: {{ `{{` }}\nc: {{ printf \"%d\" 3 | quote }}\n{{- if true }}d: {{ (list 1 2) | len }}{{ end }}\n";
        assert!(!reads_values(&chart_with(&[("a.yaml", fixed)])));
        assert!(!reads_values(&chart_with(&[])));
        for reads in [
            "a: {{ .Values.a }}",
            "a: {{ index . \"Values\" }}",
            "{{ include \"x\" . }}",
            "a: {{ toYaml $ }}",
            "{{ $x := 1 }}{{ $x }}",
            "{{ range . }}{{ end }}",
            "{{ with .Release }}{{ .Name }}{{ end }}",
            "{{ template \"x\" .Chart }}",
            "{{ (dict).a }}{{ (.).a }}",
            "{{ if",
        ] {
            assert!(
                reads_values(&chart_with(&[("a.yaml", fixed), ("b.yaml", reads)])),
                "{reads}"
            );
        }
        // A subchart that reads values.
        let mut parent = chart_with(&[("a.yaml", fixed)]);
        parent
            .dependencies
            .push(chart_with(&[("s.yaml", "s: {{ .Values.s }}")]));
        assert!(reads_values(&parent));
    }
}
