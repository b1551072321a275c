//! `Chart.yaml` and `Chart.lock`: decoding with sigs.k8s.io/yaml's quirks,
//! Helm's `Metadata.Validate`, and writing them back the way Helm does.
//!
//! Helm decodes Chart.yaml by converting YAML to JSON *using the target Go
//! type*: a number or bool that lands in a string field becomes a string
//! (integers in decimal, floats with float32 precision, so `1.10` is `"1.1"`),
//! then `encoding/json` fills the struct, matching keys case-insensitively
//! and ignoring unknown ones. [`decode_metadata`] reproduces that on a
//! [`Node`] from [`crate::yaml::parse_documents`] (which keeps integers).
use super::model::{Dependency, Lock, Maintainer, Metadata};
use super::semver::parse_lenient;
use crate::gostd::float::format_go_float32;
use crate::yaml::Node;
use std::collections::BTreeMap;

/// A Chart.yaml (or Chart.lock) that does not decode into Helm's types.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The YAML itself is malformed (the text starts with Helm's
    /// `error converting YAML to JSON: `).
    #[error("{0}")]
    Yaml(String),
    /// A value has a type the Go field cannot hold.
    #[error("error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {found} into {target}")]
    Type {
        /// The JSON kind found (`array`, `object`, `string`, `number`, `bool`).
        found: &'static str,
        /// `Go struct field Metadata.name of type string` or similar.
        target: String,
    },
}

/// A `Metadata.Validate` failure; displays as Helm's `validation: ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("validation: {0}")]
pub struct ValidationError(pub String);

/// What decoding noticed that the typed [`Metadata`] cannot hold: Helm's
/// `Validate` reports `null` entries in `maintainers` and `dependencies`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DecodeNotes {
    /// A `maintainers` entry was null.
    pub null_maintainer: bool,
    /// A `dependencies` entry was null.
    pub null_dependency: bool,
}

fn type_err(n: &Node, strct: &str, path: &str, ty: &str) -> DecodeError {
    DecodeError::Type {
        found: n.json_kind(),
        target: format!("Go struct field {strct}.{path} of type {ty}"),
    }
}

/// The string a YAML scalar becomes in a Go `string` field.
fn go_string(n: &Node, strct: &str, path: &str) -> Result<String, DecodeError> {
    Ok(match n {
        Node::Null => String::new(),
        Node::Str(s) => s.clone(),
        Node::Bool(b) => b.to_string(),
        Node::Int(i) => i.to_string(),
        Node::Float(f) => format_go_float32(*f as f32),
        other => return Err(type_err(other, strct, path, "string")),
    })
}

fn go_bool(n: &Node, strct: &str, path: &str) -> Result<bool, DecodeError> {
    match n {
        Node::Null => Ok(false),
        Node::Bool(b) => Ok(*b),
        other => Err(type_err(other, strct, path, "bool")),
    }
}

fn go_strings(n: &Node, strct: &str, path: &str) -> Result<Vec<String>, DecodeError> {
    match n {
        Node::Null => Ok(Vec::new()),
        Node::Seq(items) => items.iter().map(|i| go_string(i, strct, path)).collect(),
        other => Err(type_err(other, strct, path, "[]string")),
    }
}

fn go_string_map(
    n: &Node,
    strct: &str,
    path: &str,
    into: &mut BTreeMap<String, String>,
) -> Result<(), DecodeError> {
    match n {
        Node::Null => {
            into.clear();
            Ok(())
        }
        Node::Map(m) => {
            for (k, v) in m {
                into.insert(k.clone(), go_string(v, strct, path)?);
            }
            Ok(())
        }
        other => Err(type_err(other, strct, path, "map[string]string")),
    }
}

/// Iterates a mapping's keys resolved to Go field names: an exact match wins,
/// otherwise a case-insensitive one, as `encoding/json` does.
fn fields<'a>(
    m: &'a BTreeMap<String, Node>,
    known: &'static [&'static str],
) -> impl Iterator<Item = (&'static str, &'a Node)> + 'a {
    m.iter().filter_map(move |(k, v)| {
        known
            .iter()
            .find(|f| **f == k)
            .or_else(|| known.iter().find(|f| f.eq_ignore_ascii_case(k)))
            .map(|f| (*f, v))
    })
}

/// A maintainer's fields (Go's `chart.Maintainer`).
pub(crate) const MAINTAINER_FIELDS: &[&str] = &["name", "email", "url"];

/// A dependency's fields (Go's `chart.Dependency`), in declaration order.
pub(crate) const DEPENDENCY_FIELDS: &[&str] = &[
    "name",
    "version",
    "repository",
    "condition",
    "tags",
    "enabled",
    "import-values",
    "alias",
];

/// Chart.yaml's fields (Go's `chart.Metadata`), in declaration order.
pub(crate) const METADATA_FIELDS: &[&str] = &[
    "name",
    "home",
    "sources",
    "version",
    "description",
    "keywords",
    "maintainers",
    "icon",
    "apiVersion",
    "condition",
    "tags",
    "appVersion",
    "deprecated",
    "annotations",
    "kubeVersion",
    "dependencies",
    "type",
];

fn decode_maintainer(n: &Node) -> Result<Maintainer, DecodeError> {
    let mut out = Maintainer::default();
    let Node::Map(m) = n else {
        return Err(type_err(n, "Metadata", "maintainers", "chart.Maintainer"));
    };
    for (f, v) in fields(m, MAINTAINER_FIELDS) {
        let path = format!("maintainers.{f}");
        let s = go_string(v, "Maintainer", &path)?;
        match f {
            "name" => out.name = s,
            "email" => out.email = s,
            _ => out.url = s,
        }
    }
    Ok(out)
}

/// Decodes one dependency entry (Chart.yaml, requirements.yaml or a lock).
pub fn decode_dependency(n: &Node, strct: &str) -> Result<Dependency, DecodeError> {
    let mut d = Dependency::default();
    let Node::Map(m) = n else {
        return Err(type_err(n, strct, "dependencies", "chart.Dependency"));
    };
    let known = DEPENDENCY_FIELDS;
    for (f, v) in fields(m, known) {
        let path = format!("dependencies.{f}");
        match f {
            "name" => d.name = go_string(v, "Dependency", &path)?,
            "version" => d.version = go_string(v, "Dependency", &path)?,
            "repository" => d.repository = go_string(v, "Dependency", &path)?,
            "condition" => d.condition = go_string(v, "Dependency", &path)?,
            "tags" => d.tags = go_strings(v, "Dependency", &path)?,
            "enabled" => d.enabled = go_bool(v, "Dependency", &path)?,
            "import-values" => {
                d.import_values = match v {
                    Node::Null => Vec::new(),
                    Node::Seq(items) => items.clone(),
                    other => return Err(type_err(other, "Dependency", &path, "[]interface {}")),
                }
            }
            _ => d.alias = go_string(v, "Dependency", &path)?,
        }
    }
    Ok(d)
}

/// Applies a decoded Chart.yaml (or requirements.yaml) mapping onto
/// `md`, the way `json.Unmarshal` fills an existing struct.
pub fn apply_metadata(
    md: &mut Metadata,
    doc: &Node,
    notes: &mut DecodeNotes,
) -> Result<(), DecodeError> {
    let m = match doc {
        Node::Null => return Ok(()),
        Node::Map(m) => m,
        other => {
            return Err(DecodeError::Type {
                found: other.json_kind(),
                target: "Go value of type chart.Metadata".into(),
            })
        }
    };
    for (f, v) in fields(m, METADATA_FIELDS) {
        let s = |v: &Node| go_string(v, "Metadata", f);
        match f {
            "name" => md.name = s(v)?,
            "home" => md.home = s(v)?,
            "version" => md.version = s(v)?,
            "description" => md.description = s(v)?,
            "icon" => md.icon = s(v)?,
            "apiVersion" => md.api_version = s(v)?,
            "condition" => md.condition = s(v)?,
            "tags" => md.tags = s(v)?,
            "appVersion" => md.app_version = s(v)?,
            "kubeVersion" => md.kube_version = s(v)?,
            "type" => md.chart_type = s(v)?,
            "sources" => md.sources = go_strings(v, "Metadata", f)?,
            "keywords" => md.keywords = go_strings(v, "Metadata", f)?,
            "deprecated" => md.deprecated = go_bool(v, "Metadata", f)?,
            "annotations" => go_string_map(v, "Metadata", f, &mut md.annotations)?,
            "maintainers" => {
                md.maintainers = match v {
                    Node::Null => Vec::new(),
                    Node::Seq(items) => {
                        let mut out = Vec::new();
                        for i in items {
                            if matches!(i, Node::Null) {
                                notes.null_maintainer = true;
                                continue;
                            }
                            out.push(decode_maintainer(i)?);
                        }
                        out
                    }
                    other => return Err(type_err(other, "Metadata", f, "[]*chart.Maintainer")),
                }
            }
            _ => {
                md.dependencies = match v {
                    Node::Null => Vec::new(),
                    Node::Seq(items) => {
                        let mut out = Vec::new();
                        for i in items {
                            if matches!(i, Node::Null) {
                                notes.null_dependency = true;
                                continue;
                            }
                            out.push(decode_dependency(i, "Metadata")?);
                        }
                        out
                    }
                    other => return Err(type_err(other, "Metadata", f, "[]*chart.Dependency")),
                }
            }
        }
    }
    Ok(())
}

/// Parses YAML text into its first document, as yaml.v2's `Unmarshal` reads it.
pub fn first_document(text: &str) -> Result<Node, DecodeError> {
    crate::yaml::parse_document(text).map_err(|e| DecodeError::Yaml(e.to_string()))
}

/// Decodes Chart.yaml text. The `apiVersion` default (`v1`) is the loader's
/// business, not this function's.
pub fn decode_metadata(text: &str) -> Result<(Metadata, DecodeNotes), DecodeError> {
    let doc = first_document(text)?;
    let mut md = Metadata::default();
    let mut notes = DecodeNotes::default();
    apply_metadata(&mut md, &doc, &mut notes)?;
    Ok((md, notes))
}

/// Decodes Chart.lock / requirements.lock text.
pub fn decode_lock(text: &str) -> Result<Lock, DecodeError> {
    let doc = first_document(text)?;
    let mut lock = Lock::default();
    let m = match &doc {
        Node::Null => return Ok(lock),
        Node::Map(m) => m,
        other => {
            return Err(DecodeError::Type {
                found: other.json_kind(),
                target: "Go value of type chart.Lock".into(),
            })
        }
    };
    for (f, v) in fields(m, &["generated", "digest", "dependencies"]) {
        match f {
            "generated" => lock.generated = go_string(v, "Lock", f)?,
            "digest" => lock.digest = go_string(v, "Lock", f)?,
            _ => {
                lock.dependencies = match v {
                    Node::Null => Vec::new(),
                    Node::Seq(items) => items
                        .iter()
                        .filter(|i| !matches!(i, Node::Null))
                        .map(|i| decode_dependency(i, "Lock"))
                        .collect::<Result<_, _>>()?,
                    other => return Err(type_err(other, "Lock", f, "[]*chart.Dependency")),
                }
            }
        }
    }
    Ok(lock)
}

/// Helm's `sanitizeString`: whitespace becomes a space, unprintable runes go.
pub fn sanitize(s: &str) -> String {
    s.chars()
        .filter_map(|c| {
            if c.is_whitespace() {
                Some(' ')
            } else if c.is_control() || is_unprintable(c) {
                None
            } else {
                Some(c)
            }
        })
        .collect()
}

fn is_unprintable(c: char) -> bool {
    // Go's unicode.IsPrint rejects format characters, private use, surrogates
    // and unassigned code points; Rust's std has no full table, so cover the
    // format characters that matter in practice.
    matches!(c as u32,
        0x00AD | 0x0600..=0x0605 | 0x061C | 0x06DD | 0x070F | 0x180E | 0x200B..=0x200F
        | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F | 0xFEFF | 0xFFF9..=0xFFFB
        | 0xE000..=0xF8FF | 0xF0000..=0x10FFFF)
}

fn valid_alias(a: &str) -> bool {
    a.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl Metadata {
    /// Helm's `Metadata.Validate`: sanitises the free-text fields in place,
    /// then checks them in Helm's order with Helm's messages.
    pub fn validate(&mut self, notes: DecodeNotes) -> Result<(), ValidationError> {
        let err = |m: String| Err(ValidationError(m));
        for s in [
            &mut self.name,
            &mut self.description,
            &mut self.home,
            &mut self.icon,
            &mut self.condition,
            &mut self.tags,
            &mut self.app_version,
            &mut self.kube_version,
        ] {
            *s = sanitize(s);
        }
        for s in self.sources.iter_mut().chain(self.keywords.iter_mut()) {
            *s = sanitize(s);
        }
        if self.api_version.is_empty() {
            return err("chart.metadata.apiVersion is required".into());
        }
        if self.name.is_empty() {
            return err("chart.metadata.name is required".into());
        }
        if self.name.contains('/') || self.name.contains('\\') && cfg!(windows) {
            return err(format!("chart.metadata.name {:?} is invalid", self.name));
        }
        if self.name == "." || self.name == ".." {
            return err(format!(
                "chart.metadata.name {:?} is not allowed",
                self.name
            ));
        }
        if self.version.is_empty() {
            return err("chart.metadata.version is required".into());
        }
        if parse_lenient(&self.version).is_err() {
            return err(format!(
                "chart.metadata.version {:?} is invalid",
                self.version
            ));
        }
        if !matches!(self.chart_type.as_str(), "" | "application" | "library") {
            return err("chart.metadata.type must be application or library".into());
        }
        if notes.null_maintainer {
            return err("maintainers must not contain empty or null nodes".into());
        }
        for m in &mut self.maintainers {
            m.name = sanitize(&m.name);
            m.email = sanitize(&m.email);
            m.url = sanitize(&m.url);
        }
        if notes.null_dependency {
            return err("dependencies must not contain empty or null nodes".into());
        }
        let mut seen = std::collections::BTreeSet::new();
        for d in &mut self.dependencies {
            d.name = sanitize(&d.name);
            d.version = sanitize(&d.version);
            d.repository = sanitize(&d.repository);
            d.condition = sanitize(&d.condition);
            for t in &mut d.tags {
                *t = sanitize(t);
            }
            if !d.alias.is_empty() && !valid_alias(&d.alias) {
                return err(format!(
                    "dependency {:?} has disallowed characters in the alias",
                    d.name
                ));
            }
            let key = if d.alias.is_empty() {
                &d.name
            } else {
                &d.alias
            };
            if !seen.insert(key.clone()) {
                return err(format!(
                    "more than one dependency with name or alias {key:?}"
                ));
            }
        }
        Ok(())
    }
}

fn to_node<T: serde::Serialize>(v: &T) -> Node {
    serde_json::to_value(v)
        .ok()
        .and_then(|j| serde_json::from_value::<Node>(j).ok())
        .unwrap_or(Node::Null)
}

/// Chart.yaml as Helm writes it (`helm show chart`, `helm package`): only
/// non-empty fields, keys sorted.
///
/// Helm's `package` also drops `dependencies` from an apiVersion v1 chart
/// (they belong in requirements.yaml there), which loses them when a v1
/// chart declared them in Chart.yaml; rudder keeps them, so a package
/// always loads back to the same metadata.
pub fn metadata_to_yaml(md: &Metadata) -> String {
    crate::yaml::to_yaml(&to_node(md))
}

/// Chart.lock as Helm writes it. A missing `generated` is Go's zero time.
pub fn lock_to_yaml(lock: &Lock) -> String {
    let mut node = to_node(lock);
    if let Node::Map(m) = &mut node {
        if lock.generated.is_empty() {
            m.insert("generated".into(), Node::Str("0001-01-01T00:00:00Z".into()));
        }
        if lock.dependencies.is_empty() {
            m.insert("dependencies".into(), Node::Null);
        }
    }
    crate::yaml::to_yaml(&node)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(text: &str) -> Metadata {
        decode_metadata(text).unwrap().0
    }

    #[test]
    fn sigs_string_quirks() {
        assert_eq!(md("appVersion: 1.10").app_version, "1.1");
        assert_eq!(md("version: 1.0").version, "1");
        assert_eq!(md("appVersion: 0.1234567890").app_version, "0.12345679");
        assert_eq!(md("description: 12345678901").description, "12345678901");
        assert_eq!(
            md("keywords: [1.50, true, 0x10]").keywords,
            ["1.5", "true", "16"]
        );
        // JSON objects from sigs are key-sorted: "NAME" < "Name", so "Name" is applied last.
        assert_eq!(md("Name: a\nNAME: b").name, "a");
        assert_eq!(md("unknown: 1\nname: x").name, "x");
    }

    #[test]
    fn type_errors() {
        let e = decode_metadata("name: [a]").unwrap_err();
        assert_eq!(
            e.to_string(),
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go struct field Metadata.name of type string"
        );
        assert!(decode_metadata("- a").is_err());
        assert!(decode_metadata("deprecated: yes please").is_err());
        assert!(decode_metadata("name: x\n  bad: [").is_err());
    }

    #[test]
    fn validate_messages() {
        let v = |t: &str| {
            let (mut m, n) = decode_metadata(t).unwrap();
            if m.api_version.is_empty() {
                m.api_version = "v1".into();
            }
            m.validate(n).map_err(|e| e.to_string())
        };
        assert_eq!(
            v("version: 1").unwrap_err(),
            "validation: chart.metadata.name is required"
        );
        assert_eq!(
            v("name: a/b\nversion: 1").unwrap_err(),
            "validation: chart.metadata.name \"a/b\" is invalid"
        );
        assert_eq!(
            v("name: a").unwrap_err(),
            "validation: chart.metadata.version is required"
        );
        assert_eq!(
            v("name: a\nversion: 1.0.0.0").unwrap_err(),
            "validation: chart.metadata.version \"1.0.0.0\" is invalid"
        );
        assert_eq!(
            v("name: a\nversion: 1\ntype: x").unwrap_err(),
            "validation: chart.metadata.type must be application or library"
        );
        assert_eq!(
            v("name: a\nversion: 1\nmaintainers: [null]").unwrap_err(),
            "validation: maintainers must not contain empty or null nodes"
        );
        assert_eq!(
            v("name: a\nversion: 1\ndependencies: [{name: b, alias: 'x y'}]").unwrap_err(),
            "validation: dependency \"b\" has disallowed characters in the alias"
        );
        assert_eq!(
            v("name: a\nversion: 1\ndependencies: [{name: b}, {name: c, alias: b}]").unwrap_err(),
            "validation: more than one dependency with name or alias \"b\""
        );
        assert!(v("name: a\nversion: v1.2\ndescription: \"x\\ty\"").is_ok());
    }

    #[test]
    fn sanitizes() {
        assert_eq!(sanitize("a\tb\u{200b}c\u{7}"), "a bc");
    }
}
