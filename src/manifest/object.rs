//! One Kubernetes object: its parsed form and its identity.
use crate::yaml::Node;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a parsed document is not a usable Kubernetes object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    /// The document is a scalar or a sequence.
    #[error("the document is {found}, not a mapping")]
    NotAMapping {
        /// What the document is (`a string`, `a sequence`, ...).
        found: &'static str,
    },
    /// A required field is missing or empty.
    #[error("{field} is missing")]
    Missing {
        /// The field's path, such as `metadata.name`.
        field: &'static str,
    },
    /// A field has the wrong type.
    #[error("{field} must be {expected}, not {found}")]
    WrongType {
        /// The field's path.
        field: &'static str,
        /// What it should be.
        expected: &'static str,
        /// What it is.
        found: &'static str,
    },
}

/// Describes a node's type in words, for error messages.
pub fn describe(node: &Node) -> &'static str {
    match node {
        Node::Null => "null",
        Node::Bool(_) => "a boolean",
        Node::Int(_) | Node::Float(_) => "a number",
        Node::Str(_) => "a string",
        Node::Seq(_) => "a sequence",
        Node::Map(_) => "a mapping",
    }
}

/// Splits `apiVersion` into group and version: `apps/v1` is (`apps`, `v1`),
/// `v1` is (`""`, `v1`).
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.rsplit_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// The identity of an object in a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectId {
    /// API group (`""` for the core group).
    pub group: String,
    /// API version within the group.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Namespace (`""` for cluster-scoped objects).
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        write!(f, "{}/{} ", group, self.kind)?;
        if !self.namespace.is_empty() {
            write!(f, "{}/", self.namespace)?;
        }
        write!(f, "{}", self.name)
    }
}

/// A parsed Kubernetes object: the fields that identify it and the whole
/// document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Object {
    /// `apiVersion` (may be empty; see [`Object::require_identity`]).
    pub api_version: String,
    /// `kind` (may be empty).
    pub kind: String,
    /// `metadata.name` (may be empty).
    pub name: String,
    /// `metadata.namespace`, if set and non-empty.
    pub namespace: Option<String>,
    /// The whole document.
    pub node: Node,
}

fn str_field<'a>(
    map: &'a std::collections::BTreeMap<String, Node>,
    key: &str,
    field: &'static str,
) -> Result<&'a str, ObjectError> {
    match map.get(key) {
        None | Some(Node::Null) => Ok(""),
        Some(Node::Str(s)) => Ok(s),
        Some(other) => Err(ObjectError::WrongType {
            field,
            expected: "a string",
            found: describe(other),
        }),
    }
}

impl Object {
    /// Reads the identifying fields of a document. The document must be a
    /// mapping; missing fields are left empty.
    pub fn from_node(node: Node) -> Result<Object, ObjectError> {
        let Node::Map(map) = &node else {
            return Err(ObjectError::NotAMapping {
                found: describe(&node),
            });
        };
        let api_version = str_field(map, "apiVersion", "apiVersion")?.to_string();
        let kind = str_field(map, "kind", "kind")?.to_string();
        let (name, namespace) = match map.get("metadata") {
            None | Some(Node::Null) => (String::new(), None),
            Some(Node::Map(meta)) => {
                let name = str_field(meta, "name", "metadata.name")?.to_string();
                let ns = str_field(meta, "namespace", "metadata.namespace")?;
                (name, (!ns.is_empty()).then(|| ns.to_string()))
            }
            Some(other) => {
                return Err(ObjectError::WrongType {
                    field: "metadata",
                    expected: "a mapping",
                    found: describe(other),
                })
            }
        };
        Ok(Object {
            api_version,
            kind,
            name,
            namespace,
            node,
        })
    }

    /// Fails unless `apiVersion`, `kind` and `metadata.name` are set.
    pub fn require_identity(&self) -> Result<(), ObjectError> {
        if self.api_version.is_empty() {
            return Err(ObjectError::Missing {
                field: "apiVersion",
            });
        }
        if self.kind.is_empty() {
            return Err(ObjectError::Missing { field: "kind" });
        }
        if self.name.is_empty() {
            return Err(ObjectError::Missing {
                field: "metadata.name",
            });
        }
        Ok(())
    }

    /// The API group.
    pub fn group(&self) -> &str {
        split_api_version(&self.api_version).0
    }

    /// The identity, with the namespace the caller resolved.
    pub fn id(&self, namespace: &str) -> ObjectId {
        let (group, version) = split_api_version(&self.api_version);
        ObjectId {
            group: group.to_string(),
            version: version.to_string(),
            kind: self.kind.clone(),
            namespace: namespace.to_string(),
            name: self.name.clone(),
        }
    }

    /// Whether this is a `*List` wrapper (`kind` ends in `List`).
    pub fn is_list(&self) -> bool {
        self.kind.ends_with("List")
    }

    /// The annotations, as strings (non-string values are skipped).
    pub fn annotation(&self, key: &str) -> Option<&str> {
        match self.metadata()?.get("annotations")? {
            Node::Map(a) => match a.get(key)? {
                Node::Str(s) => Some(s),
                _ => None,
            },
            _ => None,
        }
    }

    fn metadata(&self) -> Option<&std::collections::BTreeMap<String, Node>> {
        match &self.node {
            Node::Map(m) => match m.get("metadata")? {
                Node::Map(meta) => Some(meta),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Expands `*List` objects into their items, recursively; other objects are
/// returned as they are. `None`/null items are skipped.
pub fn flatten_lists(obj: Object) -> Result<Vec<Object>, ObjectError> {
    if !obj.is_list() {
        return Ok(vec![obj]);
    }
    let items = match &obj.node {
        Node::Map(m) => m.get("items").cloned().unwrap_or(Node::Null),
        _ => Node::Null,
    };
    let items = match items {
        Node::Null => Vec::new(),
        Node::Seq(items) => items,
        other => {
            return Err(ObjectError::WrongType {
                field: "items",
                expected: "a sequence",
                found: describe(&other),
            })
        }
    };
    let mut out = Vec::new();
    for item in items {
        if matches!(item, Node::Null) {
            continue;
        }
        out.extend(flatten_lists(Object::from_node(item)?)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn map(pairs: &[(&str, Node)]) -> Node {
        Node::Map(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<BTreeMap<_, _>>(),
        )
    }

    fn s(x: &str) -> Node {
        Node::Str(x.into())
    }

    #[test]
    fn identity() {
        let n = map(&[
            ("apiVersion", s("apps/v1")),
            ("kind", s("Deployment")),
            ("metadata", map(&[("name", s("a")), ("namespace", s("ns"))])),
        ]);
        let o = Object::from_node(n).unwrap();
        assert_eq!(o.group(), "apps");
        assert_eq!(o.namespace.as_deref(), Some("ns"));
        assert_eq!(o.id("ns").to_string(), "apps/Deployment ns/a");
        o.require_identity().unwrap();
    }

    #[test]
    fn non_mapping() {
        assert_eq!(
            Object::from_node(s("bar")).unwrap_err(),
            ObjectError::NotAMapping { found: "a string" }
        );
    }

    #[test]
    fn lists_flatten() {
        let item = |n: &str| {
            map(&[
                ("apiVersion", s("v1")),
                ("kind", s("ConfigMap")),
                ("metadata", map(&[("name", s(n))])),
            ])
        };
        let inner = map(&[
            ("kind", s("ConfigMapList")),
            ("items", Node::Seq(vec![item("b")])),
        ]);
        let l = map(&[
            ("kind", s("List")),
            ("items", Node::Seq(vec![item("a"), Node::Null, inner])),
        ]);
        let out = flatten_lists(Object::from_node(l).unwrap()).unwrap();
        let names: Vec<_> = out.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let bad = map(&[("kind", s("List")), ("items", s("x"))]);
        assert!(flatten_lists(Object::from_node(bad).unwrap()).is_err());
    }
}
