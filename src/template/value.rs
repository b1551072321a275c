//! The dynamic value model of the template engine.
//!
//! Go's template engine works on `interface{}` values whose dynamic Go type
//! matters: `eq` refuses to compare float64 with int, `typeOf` prints the type,
//! Sprig converts differently per type. [`Value`] keeps exactly the Go type
//! distinctions that Helm's functions can observe.
//!
//! Maps are shared and mutable (`Rc<RefCell<..>>`) because Go maps are
//! references: `set`, `unset` and `merge` mutate the map that every other holder
//! sees, including `.Values`. Lists are immutable, shared slices.
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

/// The map type behind [`Value::Map`]: sorted by key, as Go prints and ranges maps.
pub type MapRef = Rc<RefCell<BTreeMap<String, Value>>>;

/// The Go element type of a list, visible through `typeOf` and `printf "%T"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListKind {
    /// `[]interface {}`
    Interface,
    /// `[]string`
    String,
    /// `[]int`
    Int,
    /// `[][]interface {}` (what Sprig's `chunk` returns)
    InterfaceList,
}

/// The Go type of a map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MapKind {
    /// `map[string]interface {}`
    Interface,
    /// `map[string]string`
    String,
    /// `chartutil.Values`, which adds the methods `YAML`, `AsMap`, `Table`, `Encode`.
    Values,
}

/// A Helm or Sprig object with fields and methods (`.Release`, `.Capabilities`,
/// `.Files`, a `*semver.Version`, a `time.Time`, ...).
pub trait GoObject: fmt::Debug {
    /// The Go type name as `printf "%T"` shows it, e.g. `*chart.Metadata`.
    fn type_name(&self) -> &str;
    /// A field or a method without arguments. `None` means the type has no such
    /// field (the engine reports Go's "can't evaluate field" error).
    fn field(&self, name: &str) -> Option<Value>;
    /// A method call with arguments. `None` means no such method; an
    /// error is reported as Go reports a method's error
    /// (`error calling NAME: MSG`).
    fn call(&self, _name: &str, _args: &[Value]) -> Option<super::funcs::FuncResult> {
        None
    }
    /// The Go signature of a method that takes arguments, so the engine can
    /// convert them and report Go's arity and type errors before calling
    /// [`GoObject::call`]. `None` (the default) passes any arguments as they are.
    fn method_params(
        &self,
        _name: &str,
    ) -> Option<(&'static [super::funcs::Param], Option<super::funcs::Param>)> {
        None
    }
    /// For objects that are Go maps (`.Files`): the entries in key order, for
    /// `range`, `len` and `index`. `None` means the object cannot be iterated.
    fn entries(&self) -> Option<Vec<(Value, Value)>> {
        None
    }
    /// The Go reflect kind (`kindOf`): by default `ptr` for pointer types
    /// (a type name starting with `*`), else `struct`; map types such as
    /// Helm's `files` return `map`.
    fn kind(&self) -> &'static str {
        if self.type_name().starts_with('*') {
            "ptr"
        } else {
            "struct"
        }
    }
    /// Go's `%v` formatting of the object.
    fn fmt_go(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
    /// The value `encoding/json` would marshal (used by `toJson`/`toYaml`).
    fn to_json_value(&self) -> Value {
        Value::Nil
    }
    /// Lets functions downcast to a concrete object type.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// A template value with its Go dynamic type.
#[derive(Clone, Default)]
pub enum Value {
    /// Go `nil` (an absent `interface{}`).
    #[default]
    Nil,
    /// `bool`
    Bool(bool),
    /// `int` (template integer constants, `len`, `int`, ...)
    Int(i64),
    /// `int64` (Sprig math, `--set` integers)
    Int64(i64),
    /// `float64` (every number from YAML or JSON)
    Float(f64),
    /// `string`
    Str(Rc<str>),
    /// `[]byte` (`.Files.GetBytes`, glob results)
    Bytes(Rc<[u8]>),
    /// A slice; see [`ListKind`].
    List(Rc<Vec<Value>>, ListKind),
    /// A map with string keys; see [`MapKind`].
    Map(MapRef, MapKind),
    /// A Helm or Sprig object.
    Object(Rc<dyn GoObject>),
}

impl Value {
    /// A `string` value.
    pub fn str(s: impl Into<Rc<str>>) -> Value {
        Value::Str(s.into())
    }
    /// A `[]interface {}` value.
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(items), ListKind::Interface)
    }
    /// A new `map[string]interface {}` value.
    pub fn map(entries: BTreeMap<String, Value>) -> Value {
        Value::Map(Rc::new(RefCell::new(entries)), MapKind::Interface)
    }
    /// An empty `map[string]interface {}`.
    pub fn empty_map() -> Value {
        Value::map(BTreeMap::new())
    }
    /// Go's truthiness (`if`, `and`, `or`, `not`, `default`): false, 0, "",
    /// nil and empty collections are false.
    pub fn is_truthy(&self) -> bool {
        match self {
            Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i) | Value::Int64(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Bytes(b) => !b.is_empty(),
            Value::List(l, _) => !l.is_empty(),
            Value::Map(m, _) => !m.borrow().is_empty(),
            Value::Object(_) => true,
        }
    }
    /// The Go type name, as `typeOf` and `%T` print it.
    pub fn type_name(&self) -> String {
        match self {
            Value::Nil => "<nil>".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Int64(_) => "int64".into(),
            Value::Float(_) => "float64".into(),
            Value::Str(_) => "string".into(),
            Value::Bytes(_) => "[]uint8".into(),
            Value::List(_, ListKind::Interface) => "[]interface {}".into(),
            Value::List(_, ListKind::String) => "[]string".into(),
            Value::List(_, ListKind::Int) => "[]int".into(),
            Value::List(_, ListKind::InterfaceList) => "[][]interface {}".into(),
            Value::Map(_, MapKind::Interface) => "map[string]interface {}".into(),
            Value::Map(_, MapKind::String) => "map[string]string".into(),
            Value::Map(_, MapKind::Values) => "chartutil.Values".into(),
            Value::Object(o) => o.type_name().to_string(),
        }
    }
    /// The Go reflect kind name, as `kindOf` prints it.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Nil => "invalid",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Int64(_) => "int64",
            Value::Float(_) => "float64",
            Value::Str(_) => "string",
            Value::Bytes(_) | Value::List(..) => "slice",
            Value::Map(..) => "map",
            Value::Object(o) => o.kind(),
        }
    }
}

use crate::gostd::float::format_go_float;

/// Go's `%v` formatting (what `{{ . }}`, `print` and `toString` show).
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Nil => f.write_str("<nil>"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) | Value::Int64(i) => write!(f, "{i}"),
            Value::Float(x) => f.write_str(&format_go_float(*x)),
            Value::Str(s) => f.write_str(s),
            Value::Bytes(b) => {
                f.write_str("[")?;
                for (i, x) in b.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" ")?;
                    }
                    write!(f, "{x}")?;
                }
                f.write_str("]")
            }
            Value::List(l, _) => {
                f.write_str("[")?;
                for (i, x) in l.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" ")?;
                    }
                    write!(f, "{x}")?;
                }
                f.write_str("]")
            }
            Value::Map(m, _) => {
                f.write_str("map[")?;
                for (i, (k, v)) in m.borrow().iter().enumerate() {
                    if i > 0 {
                        f.write_str(" ")?;
                    }
                    write!(f, "{k}:{v}")?;
                }
                f.write_str("]")
            }
            Value::Object(o) => o.fmt_go(f),
        }
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.type_name(), self)
    }
}

impl Value {
    /// Converts a parsed YAML/JSON node: integers become `int64`, floats
    /// `float64`, mappings `map[string]interface {}`, sequences `[]interface {}`.
    pub fn from_node(node: &crate::yaml::Node) -> Value {
        crate::stack::deeper(|| Value::from_node_inner(node))
    }

    fn from_node_inner(node: &crate::yaml::Node) -> Value {
        use crate::yaml::Node;
        match node {
            Node::Null => Value::Nil,
            Node::Bool(b) => Value::Bool(*b),
            Node::Int(i) => Value::Int64(*i),
            Node::Float(f) => Value::Float(*f),
            Node::Str(s) => Value::str(s.as_str()),
            Node::Seq(items) => Value::list(items.iter().map(Value::from_node).collect()),
            Node::Map(m) => Value::map(
                m.iter()
                    .map(|(k, v)| (k.clone(), Value::from_node(v)))
                    .collect(),
            ),
        }
    }

    /// Whether this is Go `nil`.
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }

    /// The string inside a `string` value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// Go's "basic kind" used by `eq`/`lt`: which values compare with each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BasicKind {
    Invalid,
    Bool,
    Int,
    Float,
    String,
}

fn basic_kind(v: &Value) -> BasicKind {
    match v {
        Value::Bool(_) => BasicKind::Bool,
        Value::Int(_) | Value::Int64(_) => BasicKind::Int,
        Value::Float(_) => BasicKind::Float,
        Value::Str(_) => BasicKind::String,
        _ => BasicKind::Invalid,
    }
}

/// The reflect kind family used by Go's `canCompare`.
fn reflect_kind(v: &Value) -> &'static str {
    match v {
        Value::Nil => "invalid",
        Value::Bytes(_) | Value::List(..) => "slice",
        Value::Map(..) => "map",
        Value::Object(_) => "object",
        _ => "basic",
    }
}

/// Go's builtin `eq arg1 arg2...`: true when arg1 equals any of the others,
/// with Go's errors ("incompatible types for comparison", ...).
pub(crate) fn go_eq(arg1: &Value, others: &[Value]) -> Result<bool, String> {
    if others.is_empty() {
        return Err("missing argument for comparison".into());
    }
    let k1 = basic_kind(arg1);
    for arg in others {
        let k2 = basic_kind(arg);
        let truth = if k1 != k2 {
            if !arg1.is_nil() && !arg.is_nil() {
                return Err("incompatible types for comparison".into());
            }
            false
        } else {
            match (arg1, arg) {
                (Value::Bool(a), Value::Bool(b)) => a == b,
                (Value::Float(a), Value::Float(b)) => a == b,
                (Value::Int(a) | Value::Int64(a), Value::Int(b) | Value::Int64(b)) => a == b,
                (Value::Str(a), Value::Str(b)) => a == b,
                _ => {
                    let (r1, r2) = (reflect_kind(arg1), reflect_kind(arg));
                    if r1 != r2 && r1 != "invalid" && r2 != "invalid" {
                        return Err(format!(
                            "non-comparable types {}: {}, {}: {}",
                            super::gofmt::sprintf("%s", std::slice::from_ref(arg1)),
                            arg1.type_name(),
                            arg.type_name(),
                            super::gofmt::format_v(arg)
                        ));
                    }
                    if arg1.is_nil() || arg.is_nil() {
                        arg1.is_nil() == arg.is_nil()
                    } else {
                        match (arg1, arg) {
                            (Value::Object(a), Value::Object(b)) => Rc::ptr_eq(a, b),
                            _ => {
                                return Err(format!(
                                    "non-comparable type {}: {}",
                                    super::gofmt::sprintf("%s", std::slice::from_ref(arg)),
                                    arg.type_name()
                                ))
                            }
                        }
                    }
                }
            }
        };
        if truth {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Go's builtin `lt a b`, with its errors.
pub(crate) fn go_lt(a: &Value, b: &Value) -> Result<bool, String> {
    let k1 = basic_kind(a);
    if k1 == BasicKind::Invalid {
        return Err("invalid type for comparison".into());
    }
    let k2 = basic_kind(b);
    if k2 == BasicKind::Invalid {
        return Err("invalid type for comparison".into());
    }
    if k1 != k2 {
        return Err("incompatible types for comparison".into());
    }
    Ok(match (a, b) {
        (Value::Float(x), Value::Float(y)) => x < y,
        (Value::Int(x) | Value::Int64(x), Value::Int(y) | Value::Int64(y)) => x < y,
        (Value::Str(x), Value::Str(y)) => x < y,
        _ => return Err("invalid type for comparison".into()),
    })
}

/// Go's builtin `le a b`.
pub(crate) fn go_le(a: &Value, b: &Value) -> Result<bool, String> {
    let lt = go_lt(a, b)?;
    if lt {
        return Ok(true);
    }
    go_eq(a, std::slice::from_ref(b))
}
