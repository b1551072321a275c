//! toYaml/fromYaml/toJson/fromJson/toToml/fromToml and their variants, with
//! Helm's and Sprig's exact behaviour:
//!
//! - Helm's `fromYaml`, `fromJson` and `fromToml` never fail: the error text
//!   comes back as data (`map[Error:...]`), and `fromYamlArray`/`fromJsonArray`
//!   return a one-element list holding it.
//! - `toYaml`/`toYamlPretty`/`toJson` return an empty string when Go's encoder
//!   fails (a non-finite float); Sprig's `toRawJson` panics (a template error);
//!   the `must*` variants return the error.
//! - `toYaml` and `toYamlPretty` trim one trailing newline.
use super::{CallContext, FuncError, FuncResult, Param, Registry};
use crate::template::value::Value;
use crate::yaml::{self, Node};
use base64::Engine as _;
use std::collections::BTreeMap;

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    use Param::{Any, String as S};
    r.add("toYaml", &[Any], None, to_yaml);
    r.add("toYamlPretty", &[Any], None, to_yaml_pretty);
    r.add("fromYaml", &[S], None, from_yaml);
    r.add("fromYamlArray", &[S], None, from_yaml_array);
    r.add("toJson", &[Any], None, to_json);
    r.add("fromJson", &[S], None, from_json);
    r.add("fromJsonArray", &[S], None, from_json_array);
    r.add("toToml", &[Any], None, to_toml);
    r.add("fromToml", &[S], None, from_toml);
    r.add("toPrettyJson", &[Any], None, to_pretty_json);
    r.add("toRawJson", &[Any], None, to_raw_json);
    r.add("mustToJson", &[Any], None, must_to_json);
    r.add("mustToPrettyJson", &[Any], None, must_to_pretty_json);
    r.add("mustToRawJson", &[Any], None, must_to_raw_json);
    r.add("mustFromJson", &[S], None, must_from_json);
}

/// Adds the functions of this family that Sprig itself has (the JSON
/// ones), for [`super::sprig_registry`].
pub fn register_sprig(r: &mut Registry) {
    use Param::{Any, String as S};
    r.add("toJson", &[Any], None, to_json);
    r.add("fromJson", &[S], None, from_json);
    r.add("toPrettyJson", &[Any], None, to_pretty_json);
    r.add("toRawJson", &[Any], None, to_raw_json);
    r.add("mustToJson", &[Any], None, must_to_json);
    r.add("mustToPrettyJson", &[Any], None, must_to_pretty_json);
    r.add("mustToRawJson", &[Any], None, must_to_raw_json);
    r.add("mustFromJson", &[S], None, must_from_json);
}

/// The value `encoding/json` would see: maps sorted by key, `int`/`int64`
/// as integers, `[]byte` as base64 text, objects through their
/// `to_json_value` (a `time.Time` becomes its RFC 3339 text).
pub fn value_to_node(v: &Value) -> Node {
    crate::stack::deeper(|| value_to_node_inner(v))
}

fn value_to_node_inner(v: &Value) -> Node {
    match v {
        Value::Nil => Node::Null,
        Value::Bool(b) => Node::Bool(*b),
        Value::Int(i) | Value::Int64(i) => Node::Int(*i),
        Value::Float(f) => Node::Float(*f),
        Value::Str(s) => Node::Str(s.to_string()),
        Value::Bytes(b) => Node::Str(base64::engine::general_purpose::STANDARD.encode(b)),
        Value::List(items, _) => Node::Seq(items.iter().map(value_to_node).collect()),
        Value::Map(m, _) => Node::Map(
            m.borrow()
                .iter()
                .map(|(k, x)| (k.clone(), value_to_node(x)))
                .collect(),
        ),
        Value::Object(o) => value_to_node(&o.to_json_value()),
    }
}

/// A parsed document as template data: `[]interface{}` lists and
/// `map[string]interface{}` maps; integers (from TOML) are `int64`.
pub fn node_to_value(n: &Node) -> Value {
    Value::from_node(n)
}

fn arg(args: &[Value]) -> Node {
    args.first().map(value_to_node).unwrap_or(Node::Null)
}

fn str_arg(args: &[Value]) -> &str {
    match args.first() {
        Some(Value::Str(s)) => s,
        _ => "",
    }
}

fn error_map(msg: String) -> Value {
    let mut m = BTreeMap::new();
    m.insert("Error".to_string(), Value::str(msg));
    Value::map(m)
}

fn trim_newline(s: String) -> Value {
    Value::str(s.strip_suffix('\n').unwrap_or(&s))
}

fn to_yaml(ctx: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    super::check_args_size(ctx, args)?;
    Ok(trim_newline(yaml::to_yaml(&arg(args))))
}

/// The value yaml.v3 sees (`toYamlPretty` encodes the Go value itself, not
/// its JSON): a `[]byte` is a list of numbers.
fn value_to_node_v3(v: &Value) -> Node {
    crate::stack::deeper(|| value_to_node_v3_inner(v))
}

fn value_to_node_v3_inner(v: &Value) -> Node {
    match v {
        Value::Bytes(b) => Node::Seq(b.iter().map(|x| Node::Int(i64::from(*x))).collect()),
        Value::List(items, _) => Node::Seq(items.iter().map(value_to_node_v3).collect()),
        Value::Map(m, _) => Node::Map(
            m.borrow()
                .iter()
                .map(|(k, x)| (k.clone(), value_to_node_v3(x)))
                .collect(),
        ),
        other => value_to_node(other),
    }
}

fn to_yaml_pretty(ctx: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    super::check_args_size(ctx, args)?;
    let n = args.first().map(value_to_node_v3).unwrap_or(Node::Null);
    Ok(trim_newline(yaml::to_yaml_pretty(&n)))
}

fn from_yaml(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    Ok(match yaml::parse_values(str_arg(args)) {
        Ok(n) => node_to_value(&n),
        Err(e) => error_map(e.to_string()),
    })
}

fn from_yaml_array(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    Ok(match yaml::parse_values_array(str_arg(args)) {
        Ok(n) => node_to_value(&n),
        Err(e) => Value::list(vec![Value::str(e.to_string())]),
    })
}

/// JSON text as a Go string: a rune from U+10FF80 on stays one rune (see
/// [`crate::gostd::gostr`]).
fn json_text(text: String) -> Value {
    Value::str(crate::gostd::gostr::into_go_string(text))
}

fn to_json(ctx: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    super::check_args_size(ctx, args)?;
    Ok(json_text(yaml::to_json(&arg(args), true)))
}

fn to_pretty_json(ctx: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    super::check_args_size(ctx, args)?;
    Ok(json_text(yaml::to_json_pretty(&arg(args), "  ")))
}

fn to_raw_json(ctx: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    super::check_args_size(ctx, args)?;
    yaml::try_to_json(&arg(args), false)
        .map(json_text)
        .map_err(|e| FuncError::msg(e.to_string()))
}

fn must_to_json(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    yaml::try_to_json(&arg(args), true)
        .map(json_text)
        .map_err(|e| FuncError::msg(e.to_string()))
}

fn must_to_pretty_json(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    yaml::try_to_json_pretty(&arg(args), "  ")
        .map(json_text)
        .map_err(|e| FuncError::msg(e.to_string()))
}

fn must_to_raw_json(c: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    to_raw_json(c, args)
}

/// Go's `json.Unmarshal` into a `map[string]interface{}`: the decoded map
/// (possibly partial) and the error text, if any.
fn json_into_map(text: &str) -> (BTreeMap<String, Node>, Option<String>) {
    match yaml::parse_json_partial(text) {
        (Node::Map(m), e) => (m, e.map(|e| e.to_string())),
        (Node::Null, None) => (BTreeMap::new(), None),
        (_, Some(e)) => (BTreeMap::new(), Some(e.to_string())),
        (other, None) => (
            BTreeMap::new(),
            Some(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                other.json_kind()
            )),
        ),
    }
}

fn from_json(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let (mut m, err) = json_into_map(str_arg(args));
    if let Some(e) = err {
        m.insert("Error".to_string(), Node::Str(e));
    }
    Ok(node_to_value(&Node::Map(m)))
}

fn from_json_array(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let r = match yaml::parse_json(str_arg(args)) {
        Ok(Node::Null) => Ok(Node::Seq(Vec::new())),
        Ok(s @ Node::Seq(_)) => Ok(s),
        Ok(other) => Err(format!(
            "json: cannot unmarshal {} into Go value of type []interface {{}}",
            other.json_kind()
        )),
        Err(e) => Err(e.to_string()),
    };
    Ok(match r {
        Ok(n) => node_to_value(&n),
        Err(e) => Value::list(vec![Value::str(e)]),
    })
}

fn must_from_json(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    yaml::parse_json(str_arg(args))
        .map(|n| node_to_value(&n))
        .map_err(|e| FuncError::msg(e.to_string()))
}

fn to_toml(ctx: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    super::check_args_size(ctx, args)?;
    match yaml::try_to_toml(&arg(args)) {
        Ok(s) => Ok(Value::str(s)),
        // Go panics inside reflection for a nil value: a template error.
        Err(e @ yaml::TomlEncodeError::Nil) => Err(FuncError::msg(e.to_string())),
        Err(e) => Ok(Value::str(e.to_string())),
    }
}

fn from_toml(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    Ok(match yaml::parse_toml(str_arg(args)) {
        Ok(n) => node_to_value(&n),
        Err(e) => error_map(e.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::template::funcs::util::testctx::TestCtx as NoCtx;

    fn call(f: super::super::NativeFn, args: &[Value]) -> String {
        match f(&mut NoCtx, args) {
            Ok(v) => v.to_string(),
            Err(FuncError::Msg(m)) | Err(FuncError::Fail(m)) => format!("ERR {m}"),
        }
    }

    // Expectations from real Helm v3.17.2 (conformance cases and probes).
    #[test]
    fn from_functions_return_errors_as_data() {
        let s = |x: &str| Value::str(x);
        assert_eq!(
            call(from_yaml, &[s("a: [")]),
            "map[Error:error converting YAML to JSON: yaml: line 1: did not find expected node content]"
        );
        assert_eq!(
            call(from_yaml, &[s("- a\n- b")]),
            "map[Error:error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}]"
        );
        assert_eq!(
            call(from_yaml, &[s("on: 1\nyes: 2\nkey: off")]),
            "map[key:false true:2]"
        );
        assert_eq!(call(from_yaml, &[s("a: 1\n---\nb: 2")]), "map[a:1]");
        assert_eq!(call(from_yaml, &[s("")]), "map[]");
        assert_eq!(call(from_yaml_array, &[s("")]), "[]");
        assert_eq!(
            call(from_yaml_array, &[s("a: 1")]),
            "[error unmarshaling JSON: while decoding JSON: json: cannot unmarshal object into Go value of type []interface {}]"
        );
        assert_eq!(
            call(from_json, &[s("{bad")]),
            "map[Error:invalid character 'b' looking for beginning of object key string]"
        );
        assert_eq!(
            call(from_json_array, &[s("{}")]),
            "[json: cannot unmarshal object into Go value of type []interface {}]"
        );
        assert_eq!(
            call(from_json, &[s("{\"n\": 12345678901234567890}")]),
            "map[n:1.2345678901234567e+19]"
        );
        assert_eq!(
            call(from_json, &[s("{\"a\":1e400,\"b\":2}")]),
            "map[Error:json: cannot unmarshal number 1e400 into Go value of type float64 a:<nil> b:2]"
        );
        assert_eq!(
            call(from_json, &[s("1")]),
            "map[Error:json: cannot unmarshal number into Go value of type map[string]interface {}]"
        );
        assert_eq!(call(from_json, &[s("null")]), "map[]");
        assert_eq!(call(from_json_array, &[s("null")]), "[]");
        assert_eq!(call(must_from_json, &[s("[1]")]), "[1]");
        assert_eq!(
            call(must_from_json, &[s("{bad")]),
            "ERR invalid character 'b' looking for beginning of object key string"
        );
    }

    #[test]
    fn to_functions() {
        let mut m = BTreeMap::new();
        m.insert("b".to_string(), Value::Int(1));
        m.insert(
            "a".to_string(),
            Value::list(vec![Value::Int(1), Value::Int(2)]),
        );
        m.insert("e".to_string(), Value::empty_map());
        m.insert("l".to_string(), Value::list(vec![]));
        let d = Value::map(m);
        assert_eq!(
            call(to_pretty_json, std::slice::from_ref(&d)),
            "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": 1,\n  \"e\": {},\n  \"l\": []\n}"
        );
        assert_eq!(call(to_yaml, &[Value::Nil]), "null");
        assert_eq!(call(to_yaml, &[Value::str("")]), "\"\"");
        assert_eq!(call(to_yaml, &[Value::empty_map()]), "{}");
        assert_eq!(call(to_json, &[Value::Float(1.5)]), "1.5");
        let bytes = Value::Bytes(std::rc::Rc::from(&b"hi"[..]));
        assert_eq!(
            call(to_yaml_pretty, std::slice::from_ref(&bytes)),
            "- 104\n- 105"
        );
        assert_eq!(call(to_yaml, &[bytes]), "aGk=");
        assert_eq!(call(to_yaml_pretty, &[Value::Float(1000000.0)]), "1e+06");
        let mut m = BTreeMap::new();
        m.insert(
            "a".to_string(),
            Value::list(vec![Value::Int(1), Value::Int(2)]),
        );
        let l = Value::list(vec![Value::map(m), Value::list(vec![Value::empty_map()])]);
        assert_eq!(
            call(to_yaml, std::slice::from_ref(&l)),
            "- a:\n  - 1\n  - 2\n- - {}"
        );
        assert_eq!(call(to_yaml_pretty, &[l]), "- a:\n    - 1\n    - 2\n- - {}");
        assert_eq!(call(to_json, &[Value::Float(f64::INFINITY)]), "");
        assert_eq!(
            call(to_raw_json, &[Value::Float(f64::INFINITY)]),
            "ERR json: unsupported value: +Inf"
        );
        assert_eq!(call(to_toml, &[Value::str("s")]), "\"s\"");
        assert_eq!(
            call(to_toml, &[Value::Nil]),
            "ERR reflect: call of reflect.Value.Type on zero Value"
        );
        assert_eq!(
            call(to_json, &[Value::Bytes(std::rc::Rc::from(&b"hi"[..]))]),
            "\"aGk=\""
        );
    }
}
