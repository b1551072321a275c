//! `rudder cluster get|list|apply|delete|api-resources`: kubectl's verbs
//! against a cluster (the simulated one by default), printed as kubectl
//! prints them.
use clap::{Args, Subcommand};
use rudder::cluster::{self, ApiResource, ApplyOptions, Cluster, ClusterError, ObjectKey};
use serde_json::{json, Value};
use std::io::Write;
use std::process::ExitCode;

/// `rudder cluster ...`.
#[derive(Debug, Args)]
pub struct ClusterArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, Subcommand)]
enum What {
    /// Display one or many objects (as `kubectl get`).
    Get(GetArgs),
    /// List objects of one kind, or of every kind.
    #[command(visible_alias = "ls")]
    List(ListArgs),
    /// Server-side apply objects from files (as `kubectl apply --server-side`).
    Apply(ApplyArgs),
    /// Delete objects by kind and name (as `kubectl delete`).
    Delete(DeleteArgs),
    /// Print the kinds the cluster serves (as `kubectl api-resources`).
    ApiResources,
}

/// `-n`, `-A`, `-o`, `-l`.
#[derive(Debug, Args)]
struct Select {
    /// The namespace (default `default`).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// Output format: json or yaml (a table when not given).
    #[arg(short = 'o', long)]
    output: Option<String>,
    /// Label selector (`key=value[,key=value...]`, equality only).
    #[arg(short = 'l', long)]
    selector: Option<String>,
}

/// `rudder cluster get KIND [NAME...]`.
#[derive(Debug, Args)]
struct GetArgs {
    /// The kind: singular, plural, short name, Kind or `kind.group`.
    kind: String,
    /// Object names (all objects when none).
    names: Vec<String>,
    #[command(flatten)]
    sel: Select,
    /// All namespaces.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
}

/// `rudder cluster list [KIND]`.
#[derive(Debug, Args)]
struct ListArgs {
    /// The kind (every kind when not given).
    kind: Option<String>,
    #[command(flatten)]
    sel: Select,
    /// All namespaces.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
}

/// `rudder cluster apply -f FILE`.
#[derive(Debug, Args)]
struct ApplyArgs {
    /// Files with the objects (YAML or JSON, several documents); `-` for stdin.
    #[arg(short = 'f', long = "filename", required = true)]
    files: Vec<String>,
    /// The namespace of namespaced objects that have none (default `default`).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// Take over fields other managers own.
    #[arg(long)]
    force_conflicts: bool,
    /// The field manager.
    #[arg(long, default_value = "kubectl")]
    field_manager: String,
    /// `server` to compute the result without persisting it.
    #[arg(long, value_parser = ["none", "server"], default_value = "none")]
    dry_run: String,
    /// Output format for the applied objects: json or yaml.
    #[arg(short = 'o', long)]
    output: Option<String>,
}

/// `rudder cluster delete KIND NAME...`.
#[derive(Debug, Args)]
struct DeleteArgs {
    /// The kind.
    kind: String,
    /// Object names.
    #[arg(required = true)]
    names: Vec<String>,
    /// The namespace (default `default`).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// Treat a missing object as deleted.
    #[arg(long)]
    ignore_not_found: bool,
}

/// A command's outcome: what to print on stdout, the error lines (already
/// in kubectl's wording) and whether it failed.
#[derive(Default)]
struct Outcome {
    out: String,
    errors: Vec<String>,
}

impl Outcome {
    fn fail(msg: String) -> Outcome {
        Outcome {
            out: String::new(),
            errors: vec![msg],
        }
    }
}

/// Runs `rudder cluster ...`.
pub fn run(a: ClusterArgs) -> ExitCode {
    let o = match connect() {
        Err(e) => Outcome::fail(e),
        Ok(c) => match &a.what {
            What::Get(g) => get(c.as_ref(), g),
            What::List(l) => list(c.as_ref(), l),
            What::Apply(ap) => apply(c.as_ref(), ap),
            What::Delete(d) => delete(c.as_ref(), d),
            What::ApiResources => api_resources(c.as_ref()),
        },
    };
    let mut so = std::io::stdout().lock();
    let _ = so.write_all(o.out.as_bytes());
    let _ = so.flush();
    for e in &o.errors {
        eprintln!("{e}");
    }
    if o.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The cluster of the global `--cluster` flag (`sim:.rudder/cluster`).
fn connect() -> Result<Box<dyn Cluster>, String> {
    let url = super::global()
        .cluster_url()
        .map_err(|e| format!("error: {e}"))?;
    cluster::open(&url).map_err(|e| format!("error: {e}"))
}

fn server_error(e: &ClusterError) -> String {
    let reason = match e {
        ClusterError::NotFound { .. } | ClusterError::NamespaceNotFound { .. } => "NotFound",
        ClusterError::AlreadyExists { .. } => "AlreadyExists",
        ClusterError::Conflict { .. } | ClusterError::FieldConflict { .. } => "Conflict",
        ClusterError::Invalid { .. } => "Invalid",
        ClusterError::UnknownKind { .. } | ClusterError::BadObject(_) => "BadRequest",
        ClusterError::Server { code: 403, .. } => "Forbidden",
        _ => return format!("error: {e}"),
    };
    format!("Error from server ({reason}): {e}")
}

/// `plural.group` (`deployments.apps`, `configmaps`).
fn resource_name(r: &ApiResource, plural: bool) -> String {
    let base = if plural { &r.plural } else { &r.singular };
    if r.group.is_empty() {
        base.clone()
    } else {
        format!("{base}.{}", r.group)
    }
}

fn not_found(r: &ApiResource, name: &str) -> String {
    format!(
        "Error from server (NotFound): {} {name:?} not found",
        resource_name(r, true)
    )
}

/// Resolves kubectl's spellings of a kind: singular, plural, short name,
/// Kind, each optionally followed by `.group`, case-insensitively.
fn resolve(c: &dyn Cluster, spelled: &str) -> Result<ApiResource, String> {
    let resources = c.api_resources().map_err(|e| server_error(&e))?;
    let want = spelled.to_ascii_lowercase();
    let matches = |r: &ApiResource, name: &str| {
        r.plural == name
            || r.singular == name
            || r.kind.to_ascii_lowercase() == name
            || r.short_names.iter().any(|s| s.to_ascii_lowercase() == name)
    };
    // `deployments.apps`, `deploy.apps`, also `deployments.v1.apps`.
    let found = resources.iter().find(|r| matches(r, &want)).or_else(|| {
        resources.iter().find(|r| {
            want.split_once('.').is_some_and(|(name, group)| {
                let group = group
                    .strip_prefix(&format!("{}.", r.version))
                    .unwrap_or(group);
                matches(r, name) && r.group == group
            })
        })
    });
    found
        .cloned()
        .ok_or_else(|| format!("error: the server doesn't have a resource type {spelled:?}"))
}

fn parse_selector(s: &Option<String>) -> Result<Vec<(String, String)>, String> {
    let Some(s) = s else {
        return Ok(Vec::new());
    };
    s.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p
                .split_once("==")
                .or_else(|| p.split_once('='))
                .ok_or_else(|| {
                    format!(
                        "error: unable to parse requirement: {p:?}: only key=value is supported"
                    )
                })?;
            Ok((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq)]
enum Format {
    Table,
    Json,
    Yaml,
    Name,
}

fn format_of(o: &Option<String>) -> Result<Format, String> {
    match o.as_deref() {
        None | Some("wide") => Ok(Format::Table),
        Some("json") => Ok(Format::Json),
        Some("yaml") => Ok(Format::Yaml),
        Some("name") => Ok(Format::Name),
        Some(f) => Err(format!(
            "error: unable to match a printer suitable for the output format {f:?}, allowed formats are: json,name,yaml"
        )),
    }
}

fn to_json(v: &Value) -> String {
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    match serde::Serialize::serialize(v, &mut ser) {
        Ok(()) => {
            let mut s = String::from_utf8_lossy(&buf).into_owned();
            s.push('\n');
            s
        }
        Err(e) => format!("{e}\n"),
    }
}

fn to_yaml(v: &Value) -> String {
    serde_yaml::to_string(v).unwrap_or_else(|e| format!("{e}\n"))
}

fn as_list(items: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}})
}

/// kubectl's `HumanDuration`.
fn age(created: Option<&str>) -> String {
    let Some(t) = created.and_then(|c| c.parse::<jiff::Timestamp>().ok()) else {
        return "<unknown>".into();
    };
    let secs = (jiff::Timestamp::now().as_second() - t.as_second()).max(0);
    let (m, h, d) = (secs / 60, secs / 3600, secs / 86400);
    if secs < 120 {
        format!("{secs}s")
    } else if m < 10 {
        let s = secs % 60;
        if s == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{s}s")
        }
    } else if m < 180 {
        format!("{m}m")
    } else if h < 8 {
        let mm = m % 60;
        if mm == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{mm}m")
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 192 {
        let hh = h % 24;
        if hh == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{hh}h")
        }
    } else if h < 24 * 365 * 2 {
        format!("{d}d")
    } else {
        let y = d / 365;
        let dd = d % 365;
        if y < 8 && dd != 0 {
            format!("{y}y{dd}d")
        } else {
            format!("{y}y")
        }
    }
}

fn meta<'a>(o: &'a Value, f: &str) -> Option<&'a str> {
    o.get("metadata")?.get(f)?.as_str()
}

/// A kubectl-style table: columns padded to the widest cell plus three spaces.
fn table(rows: &[Vec<String>]) -> String {
    let mut widths = Vec::new();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if widths.len() <= i {
                widths.push(0);
            }
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            line.push_str(c);
            if i + 1 < r.len() {
                let pad = widths[i] - c.chars().count() + 3;
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Prints objects of one or more kinds.
fn render(groups: &[(ApiResource, Vec<Value>)], fmt: Format, all_ns: bool, prefix: bool) -> String {
    let items: Vec<Value> = groups.iter().flat_map(|(_, v)| v.iter().cloned()).collect();
    match fmt {
        Format::Json => to_json(&as_list(items)),
        Format::Yaml => to_yaml(&as_list(items)),
        Format::Name => groups
            .iter()
            .flat_map(|(r, v)| {
                v.iter().map(move |o| {
                    format!(
                        "{}/{}\n",
                        resource_name(r, false),
                        meta(o, "name").unwrap_or("")
                    )
                })
            })
            .collect(),
        Format::Table => {
            let mut blocks = Vec::new();
            for (r, objs) in groups.iter().filter(|(_, v)| !v.is_empty()) {
                let ns_col = all_ns && r.namespaced;
                let mut rows = vec![];
                let mut head = vec![];
                if ns_col {
                    head.push("NAMESPACE".to_string());
                }
                head.extend(["NAME".to_string(), "AGE".to_string()]);
                rows.push(head);
                for o in objs {
                    let mut row = vec![];
                    if ns_col {
                        row.push(meta(o, "namespace").unwrap_or("").to_string());
                    }
                    let name = meta(o, "name").unwrap_or("").to_string();
                    row.push(if prefix {
                        format!("{}/{name}", resource_name(r, false))
                    } else {
                        name
                    });
                    row.push(age(meta(o, "creationTimestamp")));
                    rows.push(row);
                }
                blocks.push(table(&rows));
            }
            blocks.join("\n")
        }
    }
}

fn no_resources(ns: Option<&str>) -> String {
    match ns {
        Some(ns) => format!("No resources found in {ns} namespace."),
        None => "No resources found".to_string(),
    }
}

fn get(c: &dyn Cluster, a: &GetArgs) -> Outcome {
    let r = match resolve(c, &a.kind) {
        Ok(r) => r,
        Err(e) => return Outcome::fail(e),
    };
    let fmt = match format_of(&a.sel.output) {
        Ok(f) => f,
        Err(e) => return Outcome::fail(e),
    };
    let ns = a.sel.namespace.clone().unwrap_or_else(|| "default".into());
    if a.names.is_empty() {
        return list_kinds(c, vec![r], &a.sel, a.all_namespaces, fmt, false);
    }
    let mut found = Vec::new();
    let mut errors = Vec::new();
    for name in &a.names {
        let key = ObjectKey::new(&r.group, &r.kind, if r.namespaced { &ns } else { "" }, name);
        match c.get(&key) {
            Ok(Some(o)) => found.push(o),
            Ok(None) => errors.push(not_found(&r, name)),
            Err(e) => errors.push(server_error(&e)),
        }
    }
    let out = if found.is_empty() {
        String::new()
    } else if found.len() == 1 && a.names.len() == 1 && matches!(fmt, Format::Json | Format::Yaml) {
        if fmt == Format::Json {
            to_json(&found[0])
        } else {
            to_yaml(&found[0])
        }
    } else {
        render(&[(r, found)], fmt, false, false)
    };
    Outcome { out, errors }
}

fn list_kinds(
    c: &dyn Cluster,
    kinds: Vec<ApiResource>,
    sel: &Select,
    all_ns: bool,
    fmt: Format,
    prefix: bool,
) -> Outcome {
    let labels = match parse_selector(&sel.selector) {
        Ok(l) => l,
        Err(e) => return Outcome::fail(e),
    };
    let ns = sel.namespace.clone().unwrap_or_else(|| "default".into());
    let mut groups = Vec::new();
    for r in kinds {
        let in_ns = if all_ns || !r.namespaced {
            None
        } else {
            Some(ns.as_str())
        };
        match c.list(&r.group, &r.kind, in_ns, &labels) {
            Ok(v) => groups.push((r, v)),
            Err(e) => return Outcome::fail(server_error(&e)),
        }
    }
    let empty = groups.iter().all(|(_, v)| v.is_empty());
    if empty && fmt == Format::Table {
        let any_namespaced = groups.iter().any(|(r, _)| r.namespaced);
        let msg = no_resources(if all_ns || !any_namespaced {
            None
        } else {
            Some(&ns)
        });
        // kubectl prints this on stderr and succeeds.
        eprintln!("{msg}");
        return Outcome::default();
    }
    Outcome {
        out: render(&groups, fmt, all_ns, prefix),
        errors: Vec::new(),
    }
}

fn list(c: &dyn Cluster, a: &ListArgs) -> Outcome {
    let fmt = match format_of(&a.sel.output) {
        Ok(f) => f,
        Err(e) => return Outcome::fail(e),
    };
    let kinds = match &a.kind {
        Some(k) => match resolve(c, k) {
            Ok(r) => vec![r],
            Err(e) => return Outcome::fail(e),
        },
        None => match c.api_resources() {
            Ok(mut rs) => {
                // Install order first (as Helm lists), then by kind.
                rs.sort_by(|x, y| {
                    rudder::manifest::order::compare_kinds(
                        rudder::manifest::order::INSTALL_ORDER,
                        &x.kind,
                        &y.kind,
                    )
                    .then_with(|| x.group.cmp(&y.group))
                });
                rs
            }
            Err(e) => return Outcome::fail(server_error(&e)),
        },
    };
    let prefix = a.kind.is_none();
    list_kinds(c, kinds, &a.sel, a.all_namespaces, fmt, prefix)
}

/// The objects in a YAML or JSON text (several documents; `kind: List`
/// expanded; empty documents skipped).
fn parse_objects(text: &str, source: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    // The guarded reader every YAML input goes through (alias bombs and
    // nesting past Helm's 10,000 levels refused at once, in linear time).
    let docs = rudder::yaml::parse_documents(text)
        .map_err(|e| format!("error: error parsing {source}: {e}"))?;
    for doc in &docs {
        let v = rudder::yaml::to_json_value(doc);
        match v {
            Value::Null => {}
            Value::Object(ref m)
                if m.get("kind")
                    .and_then(Value::as_str)
                    .is_some_and(|k| k.ends_with("List"))
                    && m.get("items").is_some_and(Value::is_array) =>
            {
                if let Some(items) = m.get("items").and_then(Value::as_array) {
                    out.extend(items.iter().filter(|i| !i.is_null()).cloned());
                }
            }
            Value::Object(_) => out.push(v),
            _ => {
                return Err(format!(
                    "error: error parsing {source}: a document is not a Kubernetes object"
                ))
            }
        }
    }
    Ok(out)
}

fn apply(c: &dyn Cluster, a: &ApplyArgs) -> Outcome {
    let fmt = match format_of(&a.output) {
        Ok(f) => f,
        Err(e) => return Outcome::fail(e),
    };
    let mut o = Outcome::default();
    let opts = ApplyOptions {
        field_manager: a.field_manager.clone(),
        force: a.force_conflicts,
        dry_run: a.dry_run == "server",
    };
    let mut applied = Vec::new();
    for f in &a.files {
        let text = if f == "-" {
            match rudder::input::read_from(std::io::stdin()).map(String::from_utf8) {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    o.errors.push(format!("error: reading stdin: {e}"));
                    continue;
                }
                Err(e) => {
                    o.errors.push(format!("error: reading stdin: {e}"));
                    continue;
                }
            }
        } else {
            match rudder::input::read_to_string(f) {
                Ok(s) => s,
                Err(e) => {
                    o.errors
                        .push(format!("error: the path {f:?} cannot be read: {e}"));
                    continue;
                }
            }
        };
        let objs = match parse_objects(&text, f) {
            Ok(v) => v,
            Err(e) => {
                o.errors.push(e);
                continue;
            }
        };
        for mut obj in objs {
            match apply_one(c, &mut obj, a, &opts) {
                Ok((r, live)) => {
                    let name = meta(&live, "name").unwrap_or("").to_string();
                    let suffix = if opts.dry_run {
                        "serverside-applied (server dry run)"
                    } else {
                        "serverside-applied"
                    };
                    if fmt == Format::Table {
                        o.out
                            .push_str(&format!("{}/{name} {suffix}\n", resource_name(&r, false)));
                    } else if fmt == Format::Name {
                        o.out
                            .push_str(&format!("{}/{name}\n", resource_name(&r, false)));
                    }
                    applied.push(live);
                }
                Err(e) => o.errors.push(e),
            }
        }
    }
    match fmt {
        Format::Json | Format::Yaml => {
            let v = if applied.len() == 1 {
                applied.remove(0)
            } else {
                as_list(applied)
            };
            o.out = if fmt == Format::Json {
                to_json(&v)
            } else {
                to_yaml(&v)
            };
        }
        _ => {}
    }
    o
}

fn apply_one(
    c: &dyn Cluster,
    obj: &mut Value,
    a: &ApplyArgs,
    opts: &ApplyOptions,
) -> Result<(ApiResource, Value), String> {
    let (av, kind, name) = match (
        obj.get("apiVersion").and_then(Value::as_str),
        obj.get("kind").and_then(Value::as_str),
        meta(obj, "name"),
    ) {
        (Some(av), Some(k), Some(n)) => (av.to_string(), k.to_string(), n.to_string()),
        _ => {
            return Err(format!(
                "error: unable to decode an object: apiVersion, kind and metadata.name are required: {}",
                serde_json::to_string(obj).unwrap_or_default()
            ))
        }
    };
    let group = av.rsplit_once('/').map_or("", |(g, _)| g);
    let resources = c.api_resources().map_err(|e| server_error(&e))?;
    let Some(r) = resources
        .into_iter()
        .find(|r| r.group == group && r.kind == kind)
    else {
        return Err(format!(
            "error: resource mapping not found for name: {name:?} namespace: {:?}: no matches for kind {kind:?} in version {av:?}\nensure CRDs are installed first",
            meta(obj, "namespace").unwrap_or("")
        ));
    };
    if r.namespaced {
        let default_ns = a.namespace.clone().unwrap_or_else(|| "default".into());
        match meta(obj, "namespace").filter(|n| !n.is_empty()) {
            Some(ns) if a.namespace.as_deref().is_some_and(|n| n != ns) => {
                return Err(format!(
                    "error: the namespace from the provided object {ns:?} does not match the namespace {default_ns:?}. You must pass '--namespace={ns}' to perform this operation."
                ));
            }
            Some(_) => {}
            None => {
                if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                    m.insert("namespace".into(), Value::String(default_ns));
                }
            }
        }
    }
    let live = c.apply(obj, opts).map_err(|e| server_error(&e))?;
    Ok((r, live))
}

fn delete(c: &dyn Cluster, a: &DeleteArgs) -> Outcome {
    let r = match resolve(c, &a.kind) {
        Ok(r) => r,
        Err(e) => return Outcome::fail(e),
    };
    let ns = a.namespace.clone().unwrap_or_else(|| "default".into());
    let mut o = Outcome::default();
    for name in &a.names {
        let key = ObjectKey::new(&r.group, &r.kind, if r.namespaced { &ns } else { "" }, name);
        match c.delete(&key, None) {
            Ok(Some(_)) => o
                .out
                .push_str(&format!("{} {name:?} deleted\n", resource_name(&r, false))),
            Ok(None) if a.ignore_not_found => {}
            Ok(None) => o.errors.push(not_found(&r, name)),
            Err(e) => o.errors.push(server_error(&e)),
        }
    }
    o
}

fn api_resources(c: &dyn Cluster) -> Outcome {
    let rs = match c.api_resources() {
        Ok(r) => r,
        Err(e) => return Outcome::fail(server_error(&e)),
    };
    let mut rows = vec![["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
        .map(String::from)
        .to_vec()];
    for r in rs {
        rows.push(vec![
            r.plural.clone(),
            r.short_names.join(","),
            r.api_version(),
            r.namespaced.to_string(),
            r.kind.clone(),
        ]);
    }
    Outcome {
        out: table(&rows),
        errors: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_spellings() {
        let c = rudder::cluster::sim::SimCluster::in_memory();
        for s in [
            "configmap",
            "configmaps",
            "cm",
            "ConfigMap",
            "CM",
            "configmaps.",
        ] {
            let r = resolve(&c, s.trim_end_matches('.')).unwrap();
            assert_eq!(r.kind, "ConfigMap", "{s}");
        }
        for s in [
            "deployment",
            "deploy",
            "deployments.apps",
            "Deployment.apps",
            "deploy.v1.apps",
        ] {
            assert_eq!(resolve(&c, s).unwrap().kind, "Deployment", "{s}");
        }
        assert!(resolve(&c, "widgets").is_err());
        assert_eq!(age(None), "<unknown>");
    }
}
