//! Documents as the planner reads them: rendered and recorded YAML
//! parsed into objects, a recorded manifest split into its documents
//! (those a desired document of the same text stands for left unparsed),
//! and the small readings of an object every phase needs (its key, the
//! kinds a CRD defines, its namespace).
use super::PlanError;
use crate::cluster::{ObjectKey, Scope};
use crate::plan::input::ReleaseRef;
use crate::plan::model::PlanKey;
use crate::release::Release;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// A document of a recorded manifest.
pub(super) struct OldDoc<'m> {
    /// The document text as recorded (for a cheap "did it change" test).
    pub(super) text: &'m str,
    /// The parsed document; `None` when a desired document has the same
    /// text (its parse stands for this one).
    pub(super) value: Option<Value>,
}

impl OldDoc<'_> {
    /// The parsed document: [`Value::Null`] for one that a desired
    /// document stands for (never asked of those).
    pub(super) fn parsed(&self) -> &Value {
        self.value.as_ref().unwrap_or(&Value::Null)
    }
}

pub(super) fn parse_record_manifest<'m>(
    rref: &ReleaseRef,
    rel: &'m Release,
    known: &foldhash::HashMap<&str, super::desired::Known<'_>>,
) -> Result<Vec<OldDoc<'m>>, PlanError> {
    let mut out = Vec::new();
    for doc in crate::manifest::split::split_manifests(&rel.manifest) {
        // Helm's manifest documents start with a `# Source:` comment line.
        let body = match doc.strip_prefix("# Source: ") {
            Some(rest) => rest.split_once('\n').map_or("", |(_, b)| b),
            None => doc,
        };
        let text = body.trim();
        if known.contains_key(text) {
            out.push(OldDoc { text, value: None });
            continue;
        }
        let source = format!("release {rref} revision {}", rel.version);
        let value = parse_doc(rref, &source, body)?;
        if value.is_null() {
            continue;
        }
        out.push(OldDoc {
            text,
            value: Some(value),
        });
    }
    Ok(out)
}

pub(super) fn parse_doc(rref: &ReleaseRef, source: &str, text: &str) -> Result<Value, PlanError> {
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

pub(super) fn describe(value: &Value) -> String {
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("?");
    let name = value
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("?");
    format!("{kind} {name:?}")
}

pub(super) fn note_crd_kind(value: &Value, kinds: &mut HashMap<(String, String), Scope>) {
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

pub(super) fn plan_key(value: &Value, key: &ObjectKey) -> PlanKey {
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

pub(super) fn set_namespace(value: &mut Value, namespace: &str) {
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        if namespace.is_empty() {
            meta.remove("namespace");
        } else {
            meta.insert("namespace".into(), Value::String(namespace.to_string()));
        }
    }
}
