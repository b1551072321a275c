//! Charts from rendered manifests: `chart_from_manifests`.
//!
//! The input is a map from file name to YAML text, typically what a
//! component rendered. The output is a chart that **stock** Helm renders back
//! to exactly the input objects:
//!
//! - each file becomes `templates/<name>` holding its objects, re-emitted as
//!   YAML (sorted keys, `---` between documents); names that are not
//!   `.yaml`/`.yml` get a `.yaml` extension (`.json` is replaced), so `helm
//!   lint` accepts them;
//! - `*List` objects are flattened into their items; CustomResourceDefinitions
//!   move to `crds/<name>.yaml` (Helm installs them first and does not
//!   template them); a `Namespace` named like the release namespace is dropped;
//! - every `{{` in a template is written as ``{{`{{`}}``, which Go templates
//!   print as `{{`; nothing else in the text is special to them;
//! - `<no value>` is refused: Helm deletes it from every rendered file;
//! - files Helm would skip (a `_` base name, a dot in any path component,
//!   `NOTES.txt`) are refused with an error naming them, as are names that
//!   are absolute or climb out of `templates/`.
//!
//! Before returning, every template is checked by splitting and parsing it
//! the way Helm does after rendering; a document that would not come back
//! unchanged (for example a keep-chomped block scalar at the very end, which
//! Helm's whitespace trimming would cut) gets a trailing comment line, and if
//! that does not help it is an error.
//!
//! Validation: each object needs `apiVersion`, `kind` and `metadata.name`;
//! the name must be one Kubernetes accepts for the kind; no two objects may
//! share group, kind, namespace and name. An object without a namespace is
//! in the release namespace if its kind is namespaced: built-in kinds use
//! [`crate::manifest::builtin_scope`], custom kinds the scope of the chart's
//! own CRDs, and **unknown kinds are treated as namespaced** (what nearly all
//! custom resources are). Hook annotations must name events Helm knows.
use super::metadata::{metadata_to_yaml, DecodeNotes, ValidationError};
use super::model::{Chart, ChartFile, Metadata};
use crate::manifest::object::{describe, flatten_lists};
use crate::manifest::{builtin_scope, validate_name, Object, ObjectError, ObjectId, Scope};
use crate::yaml::Node;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The chart version used when none is given.
pub const DEFAULT_VERSION: &str = "0.1.0";

/// Where in the input something is: a file and, when known, a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    /// The input file name.
    pub file: String,
    /// The document's index in the file's YAML stream, from 1.
    pub document: Option<usize>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.document {
            Some(d) => write!(f, "{}: document {}", self.file, d),
            None => write!(f, "{}", self.file),
        }
    }
}

/// Why a chart could not be built from manifests.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The file name is unusable (empty, absolute, `..`, ...).
    #[error("{file}: invalid manifest file name: {reason}")]
    BadFileName {
        /// The input name.
        file: String,
        /// Why.
        reason: String,
    },
    /// Helm would skip the file, so its objects would silently vanish.
    #[error("{file}: Helm would not render this file ({reason}); rename it")]
    SkippedByHelm {
        /// The input name.
        file: String,
        /// Why Helm skips it.
        reason: &'static str,
    },
    /// Two input files map to the same template.
    #[error("{file}: becomes {template}, which {other} already becomes")]
    NameCollision {
        /// The input name.
        file: String,
        /// The earlier input name.
        other: String,
        /// The template both map to.
        template: String,
    },
    /// The YAML is malformed.
    #[error("{file}: invalid YAML: {message}")]
    Yaml {
        /// The input name.
        file: String,
        /// The parser's message.
        message: String,
    },
    /// A document is not a mapping.
    #[error("{at}: the document is {found}, not a mapping (a Kubernetes object)")]
    NotAMapping {
        /// Where.
        at: Location,
        /// What it is.
        found: &'static str,
    },
    /// An object lacks identity fields or has malformed ones.
    #[error("{at}: {error}")]
    Object {
        /// Where.
        at: Location,
        /// What is wrong (its text ends the message).
        error: ObjectError,
    },
    /// The name is not one Kubernetes accepts for the kind.
    #[error("{at}: {kind} name {name:?} is invalid: {message}")]
    InvalidName {
        /// Where.
        at: Location,
        /// The kind.
        kind: String,
        /// The name.
        name: String,
        /// Kubernetes' message.
        message: String,
    },
    /// The text `<no value>` would be deleted by Helm.
    #[error("{at}: contains the text \"<no value>\", which Helm deletes from every rendered file")]
    NoValue {
        /// Where.
        at: Location,
    },
    /// A hook annotation names an event Helm does not know (Helm would drop
    /// the object).
    #[error("{at}: unknown helm.sh/hook event {event:?}; Helm would drop this object")]
    UnknownHookEvent {
        /// Where.
        at: Location,
        /// The event.
        event: String,
    },
    /// Two objects share an identity.
    #[error("{at}: duplicate object {id}, first defined at {first}")]
    Duplicate {
        /// Where the second one is.
        at: Location,
        /// Where the first one is.
        first: Location,
        /// The shared identity.
        id: Box<ObjectId>,
    },
    /// A document cannot be written so that Helm reads it back unchanged.
    #[error("{at}: cannot be written so that Helm reads it back unchanged")]
    NotRoundTrippable {
        /// Where.
        at: Location,
    },
    /// The chart metadata is invalid (name, version).
    #[error("invalid chart metadata: {0}")]
    Metadata(ValidationError),
}

/// Options for [`chart_from_manifests_with`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildOptions {
    /// The chart name.
    pub name: String,
    /// The release namespace.
    pub namespace: String,
    /// The chart version ([`DEFAULT_VERSION`] by default).
    pub version: String,
    /// Chart.yaml `description` (omitted when empty).
    pub description: String,
    /// Chart.yaml `appVersion` (omitted when empty).
    pub app_version: String,
}

impl BuildOptions {
    /// Options with the default version and no description.
    pub fn new(name: &str, namespace: &str) -> BuildOptions {
        BuildOptions {
            name: name.into(),
            namespace: namespace.into(),
            version: DEFAULT_VERSION.into(),
            description: String::new(),
            app_version: String::new(),
        }
    }
}

/// Builds a chart (version [`DEFAULT_VERSION`]) from manifests; see the
/// module documentation for every rule.
///
/// ```
/// use std::collections::BTreeMap;
/// let mut m = BTreeMap::new();
/// m.insert("cm.yaml".to_string(),
///     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rules\ndata:\n  x: '{{ $labels }}'\n".to_string());
/// let chart = rudder::chart::chart_from_manifests("demo", "monitoring", &m).unwrap();
/// let t = chart.templates[0].data.text();
/// assert!(t.contains("{{`{{`}} $labels }}"));
/// ```
pub fn chart_from_manifests(
    name: &str,
    namespace: &str,
    manifests: &BTreeMap<String, String>,
) -> Result<Chart, BuildError> {
    chart_from_manifests_with(&BuildOptions::new(name, namespace), manifests)
}

/// Events Helm accepts in `helm.sh/hook`.
const HOOK_EVENTS: &[&str] = &[
    "pre-install",
    "post-install",
    "pre-delete",
    "post-delete",
    "pre-upgrade",
    "post-upgrade",
    "pre-rollback",
    "post-rollback",
    "test",
    "test-success",
];

fn template_name(file: &str) -> Result<String, BuildError> {
    let bad = |reason: &str| BuildError::BadFileName {
        file: file.into(),
        reason: reason.into(),
    };
    if file.is_empty() {
        return Err(bad("the name is empty"));
    }
    if file.starts_with('/')
        || file.contains('\\')
        || file.contains(':') && file.as_bytes().get(1) == Some(&b':')
    {
        return Err(bad("it must be a relative path with '/' separators"));
    }
    for part in file.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return Err(bad(
                "it must be a clean relative path (no empty, '.' or '..' parts)",
            ));
        }
        if part.starts_with('.') {
            return Err(BuildError::SkippedByHelm {
                file: file.into(),
                reason: "a name starting with '.' is ignored when Helm loads a chart directory",
            });
        }
    }
    let base = file.rsplit('/').next().unwrap_or(file);
    if base.starts_with('_') {
        return Err(BuildError::SkippedByHelm {
            file: file.into(),
            reason: "a name starting with '_' is a partial that Helm renders to nothing",
        });
    }
    if base.ends_with("NOTES.txt") {
        return Err(BuildError::SkippedByHelm {
            file: file.into(),
            reason: "NOTES.txt is printed as release notes, not installed",
        });
    }
    // `helm lint` accepts only these exact (lower-case) extensions.
    let lower = file.to_ascii_lowercase();
    let out = if file.ends_with(".yaml") || file.ends_with(".yml") {
        file.to_string()
    } else if lower.ends_with(".yaml") || lower.ends_with(".json") {
        format!("{}.yaml", &file[..file.len() - 5])
    } else if lower.ends_with(".yml") {
        format!("{}.yml", &file[..file.len() - 4])
    } else {
        format!("{file}.yaml")
    };
    Ok(format!("templates/{out}"))
}

/// Escapes text for a Go template so that it renders to itself.
pub fn escape_template_text(text: &str) -> String {
    text.replace("{{", "{{`{{`}}")
}

fn contains_no_value(n: &Node) -> bool {
    match n {
        Node::Str(s) => s.contains("<no value>"),
        Node::Seq(items) => items.iter().any(contains_no_value),
        Node::Map(m) => m
            .iter()
            .any(|(k, v)| k.contains("<no value>") || contains_no_value(v)),
        _ => false,
    }
}

/// Splits rendered text the way Helm's `releaseutil.SplitManifests` does.
pub fn helm_split(text: &str) -> Vec<String> {
    static SEP: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    let Some(sep) = SEP.get_or_init(|| regex::Regex::new(r"(?:^|\s*\n)---\s*").ok()) else {
        return vec![text.to_string()];
    };
    sep.split(text)
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(str::to_string)
        .collect()
}

struct Placed {
    at: Location,
    obj: Object,
}

/// Builds a chart from manifests with explicit options.
pub fn chart_from_manifests_with(
    opts: &BuildOptions,
    manifests: &BTreeMap<String, String>,
) -> Result<Chart, BuildError> {
    let mut metadata = Metadata {
        api_version: "v2".into(),
        name: opts.name.clone(),
        version: opts.version.clone(),
        description: opts.description.clone(),
        app_version: opts.app_version.clone(),
        chart_type: "application".into(),
        ..Metadata::default()
    };
    metadata
        .validate(DecodeNotes::default())
        .map_err(BuildError::Metadata)?;

    // Template names first, so naming problems are reported before content.
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    let mut by_template: BTreeMap<String, String> = BTreeMap::new();
    for file in manifests.keys() {
        let t = template_name(file)?;
        if let Some(other) = by_template.get(&t) {
            return Err(BuildError::NameCollision {
                file: file.clone(),
                other: other.clone(),
                template: t,
            });
        }
        by_template.insert(t.clone(), file.clone());
        names.insert(file.clone(), t);
    }

    let mut templates: Vec<(String, Vec<Placed>)> = Vec::new();
    let mut crds: Vec<Placed> = Vec::new();
    for (file, text) in manifests {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let docs = crate::yaml::parse_documents(text).map_err(|e| BuildError::Yaml {
            file: file.clone(),
            message: e.to_string(),
        })?;
        let mut kept = Vec::new();
        for (i, doc) in docs.into_iter().enumerate() {
            let at = Location {
                file: file.clone(),
                document: Some(i + 1),
            };
            if matches!(doc, Node::Null) {
                continue;
            }
            if !matches!(doc, Node::Map(_)) {
                return Err(BuildError::NotAMapping {
                    found: describe(&doc),
                    at,
                });
            }
            let obj = Object::from_node(doc).map_err(|error| BuildError::Object {
                at: at.clone(),
                error,
            })?;
            let objs = flatten_lists(obj).map_err(|error| BuildError::Object {
                at: at.clone(),
                error,
            })?;
            for obj in objs {
                check_object(&obj, &at)?;
                if obj.kind == "Namespace" && obj.group().is_empty() && obj.name == opts.namespace {
                    continue;
                }
                let placed = Placed {
                    at: at.clone(),
                    obj,
                };
                if placed.obj.kind == "CustomResourceDefinition" {
                    crds.push(placed);
                } else {
                    kept.push(placed);
                }
            }
        }
        let t = names.get(file).cloned().unwrap_or_default();
        templates.push((t, kept));
    }

    check_duplicates(&opts.namespace, &templates, &crds)?;

    let mut chart = Chart {
        metadata,
        ..Chart::default()
    };
    for (t, objs) in &templates {
        if objs.is_empty() {
            continue;
        }
        let mut text = String::new();
        for (i, p) in objs.iter().enumerate() {
            if i > 0 {
                text.push_str("---\n");
            }
            text.push_str(&emit_document(p)?);
        }
        chart.templates.push(ChartFile {
            name: t.clone(),
            data: escape_template_text(&text).into_bytes().into(),
        });
    }
    let mut crd_files: BTreeMap<String, String> = BTreeMap::new();
    for p in &crds {
        crd_files.insert(format!("crds/{}.yaml", p.obj.name), emit_document(p)?);
    }
    for (name, text) in crd_files {
        chart.files.push(ChartFile {
            name,
            data: text.into_bytes().into(),
        });
    }
    chart.raw.push(ChartFile {
        name: "Chart.yaml".into(),
        data: metadata_to_yaml(&chart.metadata).into_bytes().into(),
    });
    chart.raw.push(ChartFile {
        name: "values.yaml".into(),
        data: b"# Generated by rudder from rendered manifests: this chart takes no values.\n"
            .to_vec()
            .into(),
    });
    chart.raw.extend(chart.templates.iter().cloned());
    chart.raw.extend(chart.files.iter().cloned());
    Ok(chart)
}

fn check_object(obj: &Object, at: &Location) -> Result<(), BuildError> {
    obj.require_identity().map_err(|error| BuildError::Object {
        at: at.clone(),
        error,
    })?;
    if let Err(invalid) = validate_name(&obj.kind, &obj.name) {
        return Err(BuildError::InvalidName {
            at: at.clone(),
            kind: obj.kind.clone(),
            name: obj.name.clone(),
            message: invalid.to_string(),
        });
    }
    if contains_no_value(&obj.node) {
        return Err(BuildError::NoValue { at: at.clone() });
    }
    if let Some(events) = obj.annotation("helm.sh/hook") {
        for e in events.split(',') {
            let e = e.trim().to_ascii_lowercase();
            if !HOOK_EVENTS.contains(&e.as_str()) {
                return Err(BuildError::UnknownHookEvent {
                    at: at.clone(),
                    event: e,
                });
            }
        }
    }
    Ok(())
}

/// The scope of custom kinds defined by the chart's CRDs, by (group, kind).
fn crd_scopes(crds: &[Placed]) -> BTreeMap<(String, String), Scope> {
    let mut out = BTreeMap::new();
    for p in crds {
        let Node::Map(m) = &p.obj.node else { continue };
        let Some(Node::Map(spec)) = m.get("spec") else {
            continue;
        };
        let group = match spec.get("group") {
            Some(Node::Str(g)) => g.clone(),
            _ => continue,
        };
        let kind = match spec.get("names") {
            Some(Node::Map(n)) => match n.get("kind") {
                Some(Node::Str(k)) => k.clone(),
                _ => continue,
            },
            _ => continue,
        };
        let scope = match spec.get("scope") {
            Some(Node::Str(s)) if s == "Cluster" => Scope::Cluster,
            _ => Scope::Namespaced,
        };
        out.insert((group, kind), scope);
    }
    out
}

fn check_duplicates(
    namespace: &str,
    templates: &[(String, Vec<Placed>)],
    crds: &[Placed],
) -> Result<(), BuildError> {
    let scopes = crd_scopes(crds);
    let mut seen: BTreeMap<(String, String, String, String), Location> = BTreeMap::new();
    let all = crds
        .iter()
        .chain(templates.iter().flat_map(|(_, o)| o.iter()));
    for p in all {
        let group = p.obj.group().to_string();
        let scope = builtin_scope(&group, &p.obj.kind)
            .or_else(|| scopes.get(&(group.clone(), p.obj.kind.clone())).copied())
            .unwrap_or(Scope::Namespaced);
        let ns = match scope {
            Scope::Cluster => String::new(),
            Scope::Namespaced => p
                .obj
                .namespace
                .clone()
                .unwrap_or_else(|| namespace.to_string()),
        };
        let key = (group, p.obj.kind.clone(), ns.clone(), p.obj.name.clone());
        if let Some(first) = seen.get(&key) {
            return Err(BuildError::Duplicate {
                at: p.at.clone(),
                first: first.clone(),
                id: Box::new(p.obj.id(&ns)),
            });
        }
        seen.insert(key, p.at.clone());
    }
    Ok(())
}

/// Emits one object and makes sure Helm's split-trim-parse gives it back.
fn emit_document(p: &Placed) -> Result<String, BuildError> {
    let text = crate::yaml::to_yaml(&p.obj.node);
    if reads_back(&text, &p.obj.node) {
        return Ok(text);
    }
    let guarded = format!("{text}# end of {}\n", p.obj.name);
    if reads_back(&guarded, &p.obj.node) {
        return Ok(guarded);
    }
    Err(BuildError::NotRoundTrippable { at: p.at.clone() })
}

/// Equality as Kubernetes sees it: an integral float is the same number as
/// the integer (Go's YAML writer prints `1.0` as `1`).
pub fn same_data(a: &Node, b: &Node) -> bool {
    match (a, b) {
        (Node::Int(i), Node::Float(f)) | (Node::Float(f), Node::Int(i)) => *f == *i as f64,
        (Node::Float(x), Node::Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Node::Seq(x), Node::Seq(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_data(p, q))
        }
        (Node::Map(x), Node::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k1, v1), (k2, v2))| k1 == k2 && same_data(v1, v2))
        }
        _ => a == b,
    }
}

fn reads_back(text: &str, want: &Node) -> bool {
    let docs = helm_split(text);
    if docs.len() != 1 {
        return false;
    }
    // Helm prints each manifest followed by a newline.
    match crate::yaml::parse_documents(&format!("{}\n", docs[0])) {
        Ok(nodes) => {
            let nodes: Vec<_> = nodes
                .into_iter()
                .filter(|n| !matches!(n, Node::Null))
                .collect();
            nodes.len() == 1 && same_data(&nodes[0], want)
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(files: &[(&str, &str)], ns: &str) -> Result<Chart, BuildError> {
        let m = files
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        chart_from_manifests("foo", ns, &m)
    }

    fn text(c: &Chart, name: &str) -> String {
        let f = c
            .templates
            .iter()
            .chain(c.files.iter())
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("no {name}"));
        String::from_utf8(f.data.to_vec()).unwrap()
    }

    const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bar\n";

    #[test]
    fn scalar_document_is_an_error() {
        let e = build(&[("foo.yaml", "bar")], "ns").unwrap_err();
        assert_eq!(
            e.to_string(),
            "foo.yaml: document 1: the document is a string, not a mapping (a Kubernetes object)"
        );
    }

    #[test]
    fn skips_empty_null_and_comment_documents() {
        let c = build(
            &[
                ("a.yaml", "---\n# only a comment\n---\nnull\n---\n"),
                ("b.yaml", POD),
            ],
            "ns",
        )
        .unwrap();
        assert_eq!(c.templates.len(), 1);
        assert_eq!(c.templates[0].name, "templates/b.yaml");
        assert_eq!(c.metadata.version, "0.1.0");
        assert_eq!(c.metadata.api_version, "v2");
    }

    #[test]
    fn namespace_handling() {
        let ns = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: foo\n";
        let c = build(&[("n.yaml", ns)], "foo").unwrap();
        assert!(c.templates.is_empty());
        let c = build(&[("n.yaml", &format!("{ns}---\n{POD}"))], "foo").unwrap();
        assert!(text(&c, "templates/n.yaml").contains("kind: Pod"));
        assert!(!text(&c, "templates/n.yaml").contains("Namespace"));
        let c = build(&[("n.yaml", ns)], "bar").unwrap();
        assert!(text(&c, "templates/n.yaml").contains("kind: Namespace"));
    }

    #[test]
    fn crds_move_and_lists_flatten() {
        let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Cluster\n  names:\n    kind: Widget\n";
        let list = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: example.com/v1\n  kind: Widget\n  metadata:\n    name: a\n- apiVersion: example.com/v1\n  kind: Widget\n  metadata:\n    name: b\n";
        let c = build(&[("crd.yaml", crd), ("w.yaml", list)], "ns").unwrap();
        assert_eq!(c.files.len(), 1);
        assert_eq!(c.files[0].name, "crds/widgets.example.com.yaml");
        let w = text(&c, "templates/w.yaml");
        assert_eq!(w.matches("kind: Widget").count(), 2);
        assert!(!w.contains("kind: List"));
        // Cluster-scoped per the CRD: namespace is ignored for duplicates.
        let dup =
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: a\n  namespace: other\n";
        let e = build(
            &[("crd.yaml", crd), ("w.yaml", list), ("x.yaml", dup)],
            "ns",
        )
        .unwrap_err();
        assert!(matches!(e, BuildError::Duplicate { .. }), "{e}");
    }

    #[test]
    fn duplicates_use_release_namespace() {
        let explicit = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bar\n  namespace: ns\n";
        let e = build(&[("a.yaml", POD), ("b.yaml", explicit)], "ns").unwrap_err();
        assert_eq!(
            e.to_string(),
            "b.yaml: document 1: duplicate object core/Pod ns/bar, first defined at a.yaml: document 1"
        );
        assert!(build(&[("a.yaml", POD), ("b.yaml", explicit)], "other").is_ok());
    }

    #[test]
    fn names_and_identity() {
        let e = build(&[("a.yaml", "kind: Pod\nmetadata:\n  name: x\n")], "ns").unwrap_err();
        assert_eq!(e.to_string(), "a.yaml: document 1: apiVersion is missing");
        let e = build(
            &[(
                "a.yaml",
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: X_y\n",
            )],
            "ns",
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("a.yaml: document 1: Pod name \"X_y\" is invalid"),
            "{e}"
        );
        let rbac = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: system:metrics-server\n";
        assert!(build(&[("a.yaml", rbac)], "ns").is_ok());
    }

    #[test]
    fn escapes_and_refuses_no_value() {
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    a: '{{ x }}'\ndata:\n  rules: |\n    summary: {{ $labels.instance }} {{{{\n";
        let c = build(&[("c.yaml", cm)], "ns").unwrap();
        let t = text(&c, "templates/c.yaml");
        assert!(!t.replace("{{`{{`}}", "").contains("{{"), "{t}");
        let nv =
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: x <no value> y\n";
        let e = build(&[("c.yaml", &format!("{POD}---\n{nv}"))], "ns").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("c.yaml: document 2: contains the text"),
            "{e}"
        );
    }

    #[test]
    fn refuses_files_helm_skips() {
        for f in [
            "_helpers.yaml",
            ".hidden.yaml",
            "sub/.x/a.yaml",
            "NOTES.txt",
            "a/myNOTES.txt",
        ] {
            let e = build(&[(f, POD)], "ns").unwrap_err();
            assert!(matches!(e, BuildError::SkippedByHelm { .. }), "{f}: {e}");
            assert!(e.to_string().starts_with(f), "{e}");
        }
        for f in ["/abs.yaml", "../x.yaml", "a//b.yaml", "./a.yaml", ""] {
            assert!(
                matches!(
                    build(&[(f, POD)], "ns"),
                    Err(BuildError::BadFileName { .. })
                ),
                "{f}"
            );
        }
    }

    #[test]
    fn template_names() {
        let c = build(
            &[
                ("a.json", POD),
                ("dir/b", POD.replace("bar", "b").as_str()),
                ("c.yml", &POD.replace("bar", "c")),
            ],
            "ns",
        )
        .unwrap();
        let names: Vec<_> = c.templates.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "templates/a.yaml",
                "templates/c.yml",
                "templates/dir/b.yaml"
            ]
        );
        let e = build(&[("a.json", POD), ("a.yaml", POD)], "ns").unwrap_err();
        assert!(matches!(e, BuildError::NameCollision { .. }));
    }

    #[test]
    fn unknown_hook_event() {
        let h = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    helm.sh/hook: pre-instal\n";
        assert!(matches!(
            build(&[("h.yaml", h)], "ns"),
            Err(BuildError::UnknownHookEvent { .. })
        ));
    }
}
