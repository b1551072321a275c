//! Every YAML and JSON parse and emit in rudder, with Go's semantics,
//! apart from the Go-struct JSON of release records ([`crate::gostd::json`]).
//!
//! Helm reads YAML with `sigs.k8s.io/yaml` on top of `gopkg.in/yaml.v2`
//! (YAML 1.1 scalars, numbers become float64 after the JSON round trip) and
//! writes it with the same pair (sorted keys, yaml.v2's quoting and folding).
//! No Rust crate matches that byte for byte, so this module owns it, and the
//! parser crate underneath (yaml-rust2's event stream) can change here
//! without touching anything else.
//!
//! Reading:
//! - [`parse_values`]: values files, `-f`, `fromYaml` (a map; numbers float64).
//! - [`parse_values_array`]: `fromYamlArray`; [`parse_yaml_to_json`]: any shape.
//! - [`parse_documents`] / [`parse_document`]: manifests and Chart.yaml, with
//!   yaml.v2's int/float types kept; [`parse_document_strict`] refuses
//!   duplicate keys (yaml.v2 `UnmarshalStrict`, Helm's index.yaml).
//! - [`parse_json`]: `encoding/json` into `interface{}`; [`parse_toml`]: `fromToml`.
//!
//! Writing:
//! - [`to_yaml`] (`toYaml`, sigs.k8s.io/yaml.Marshal), [`to_yaml_pretty`]
//!   (`toYamlPretty`, yaml.v3), [`to_json`] / [`to_json_pretty`]
//!   (`encoding/json`), [`to_toml`] (BurntSushi), and Go's number texts
//!   [`format_go_float`], [`format_json_float`].
use std::collections::BTreeMap;

mod block;
mod emit;
mod error;
mod json;
mod parse;
#[cfg(test)]
mod probe_emit;
#[cfg(test)]
mod probe_parse;
mod resolve;
mod toml;
#[cfg(test)]
mod yaml_tests;

pub use emit::{to_yaml, to_yaml_pretty, try_to_yaml, yaml_key_cmp, EmitError};
pub use error::YamlError;
pub use json::{
    format_json_float, json_from_slice, json_from_str, parse_json, parse_json_partial, to_json,
    to_json_pretty, to_json_value, try_to_json, try_to_json_pretty, JsonEncodeError, JsonError,
};
pub(crate) use parse::MAX_DEPTH;
pub use parse::{
    parse_document, parse_document_strict, parse_documents, parse_values, parse_values_array,
    parse_yaml_to_json, parse_yaml_to_json_keys,
};
pub use toml::{parse_toml, to_toml, try_to_toml, TomlEncodeError, TomlError};

/// A parsed YAML (or JSON) document: the data model shared by charts, values,
/// manifests and releases.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Node {
    /// `null`, `~` or an empty scalar.
    #[default]
    Null,
    /// A boolean (YAML 1.1: also `yes`/`no`/`on`/`off`/`y`/`n`).
    Bool(bool),
    /// An integer that kept its integer type (yaml.v2 `int`).
    Int(i64),
    /// A float64 (every number after sigs.k8s.io/yaml's JSON round trip).
    Float(f64),
    /// A string.
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping with string keys, sorted: Go maps have no order.
    Map(BTreeMap<String, Node>),
}

/// Go's shortest float formatting, kept here for callers of the yaml API;
/// it lives in [`crate::gostd::float`].
pub use crate::gostd::float::{format_go_float, format_go_float32};

#[cfg(test)]
mod tests {
    use super::*;

    /// The release store writes Node through serde_json; Go's encoding/json
    /// (Helm's `toJson`, probed) writes these bytes.
    #[test]
    fn serde_json_writes_go_float_bytes() {
        let cases = [
            (-0.0, "-0"),
            (1e21, "1e+21"),
            (1.5e300, "1.5e+300"),
            (1e20, "100000000000000000000"),
            (0.000001, "0.000001"),
            (0.0000015, "0.0000015"),
            (1e-7, "1e-7"),
            (-2.5e-8, "-2.5e-8"),
            (0.1, "0.1"),
            (1e6, "1000000"),
            (3.0, "3"),
        ];
        for (f, want) in cases {
            let n = Node::Seq(vec![Node::Float(f)]);
            assert_eq!(serde_json::to_string(&n).unwrap(), format!("[{want}]"));
            assert_eq!(to_json(&n, true), format!("[{want}]"));
            let pretty = serde_json::to_string_pretty(&n).unwrap();
            assert_eq!(pretty, format!("[\n  {want}\n]"));
        }
        // Other serializers still see plain numbers.
        let m = Node::Map([("a".to_string(), Node::Float(-0.5))].into_iter().collect());
        assert_eq!(serde_yaml::to_string(&m).unwrap(), "a: -0.5\n");
        assert_eq!(serde_json::to_value(Node::Float(1e6)).unwrap(), 1000000);
        // Round trip through the store's reader keeps the value.
        let back: Node = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
    }
}

impl Node {
    /// The JSON kind Go names in `cannot unmarshal X into ...` errors:
    /// null, bool, number, string, array or object.
    pub fn json_kind(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "bool",
            Node::Int(_) | Node::Float(_) => "number",
            Node::Str(_) => "string",
            Node::Seq(_) => "array",
            Node::Map(_) => "object",
        }
    }
}

mod serde_impl {
    //! Node <-> serde, with Go `encoding/json` number conventions.
    //!
    //! Serialize: with serde_json's serializer (`to_string`, `to_vec`,
    //! `to_writer`, which the release store uses) a finite float64 is written
    //! as Go's `encoding/json` bytes through a raw value (`-0`, `1e+21`,
    //! `0.000001`, `1e-7`), so stored records match Helm's. With any other
    //! serializer an integral float64 below 1e21 is written as an integer, as
    //! Go writes it (`1000000`, not `1e6`), and other floats as the
    //! serializer's f64.
    //!
    //! Deserialize: integers that fit i64 become [`Node::Int`] (so `--set`
    //! integers survive a release round trip), other numbers [`Node::Float`].
    //! Go's `json.Unmarshal` into `interface{}` would make every number a
    //! float64; callers that need that use [`crate::yaml::parse_json`].
    use super::Node;
    use serde::de::{self, MapAccess, SeqAccess, Visitor};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;
    use std::fmt;

    impl Serialize for Node {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match self {
                Node::Null => s.serialize_unit(),
                Node::Bool(b) => s.serialize_bool(*b),
                Node::Int(i) => s.serialize_i64(*i),
                Node::Float(f) => {
                    if f.is_finite() && is_serde_json::<S>() {
                        // serde_json recognises its raw value and writes the
                        // text as it is; its own f64 spelling is not Go's.
                        let text = super::format_json_float(*f);
                        let raw = serde_json::value::RawValue::from_string(text)
                            .map_err(serde::ser::Error::custom)?;
                        raw.serialize(s)
                    } else if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e21 {
                        s.serialize_i128(*f as i128)
                    } else {
                        s.serialize_f64(*f)
                    }
                }
                // Bytes that are not UTF-8 as Go's JSON writes them.
                Node::Str(v) => s.serialize_str(&crate::gostd::gostr::to_valid(v)),
                Node::Seq(items) => items.serialize(s),
                Node::Map(m) => m.serialize(s),
            }
        }
    }

    /// Whether `S` is serde_json's text serializer (any writer, any
    /// formatter), the one serializer that writes a raw value verbatim;
    /// other serializers would see the raw value as a one-field struct.
    fn is_serde_json<S>() -> bool {
        std::any::type_name::<S>().starts_with("&mut serde_json::ser::Serializer<")
    }

    struct NodeVisitor;

    impl<'de> Visitor<'de> for NodeVisitor {
        type Value = Node;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON or YAML value")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
            Ok(Node::Null)
        }
        fn visit_none<E: de::Error>(self) -> Result<Node, E> {
            Ok(Node::Null)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
            Node::deserialize(d)
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
            Ok(Node::Bool(v))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
            Ok(Node::Int(v))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
            Ok(i64::try_from(v)
                .map(Node::Int)
                .unwrap_or(Node::Float(v as f64)))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
            Ok(Node::Float(v))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
            Ok(Node::Str(v.to_string()))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
            Ok(Node::Str(v))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Node, A::Error> {
            let mut out = Vec::new();
            while let Some(x) = a.next_element()? {
                out.push(x);
            }
            Ok(Node::Seq(out))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Node, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((k, v)) = a.next_entry::<String, Node>()? {
                out.insert(k, v);
            }
            Ok(Node::Map(out))
        }
    }

    impl<'de> Deserialize<'de> for Node {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
            d.deserialize_any(NodeVisitor)
        }
    }
}
