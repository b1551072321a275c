//! Sprig's shared coercions (strval, toInt64, toFloat64, ...), used by every family.
//!
//! These follow `github.com/spf13/cast` v1.7.0 (which Sprig v3.3.0 calls for
//! `int`, `int64`, `float64` and its math) and Sprig's own `strval`/`strslice`.
//!
//! # Go strings that are not UTF-8
//!
//! Go strings are byte strings: `substr 0 2 "héllo"` yields `h\xc3`. A Rust
//! `str` cannot hold that, so a byte that is not part of a valid UTF-8
//! sequence is stored as the private-use character `U+10FF00 + byte`
//! ([`go_string_from_bytes`]); [`go_bytes`] turns such a string back into
//! Go's exact bytes. The engine should write rendered output through
//! [`go_bytes`] so that these bytes come out raw.
use super::{FuncError, Param};
use crate::template::value::{ListKind, Value};
use std::borrow::Cow;
use std::rc::Rc;

pub use crate::gostd::gostr::{go_bytes, go_string_from_bytes, raw_byte_of};

/// Go's `len(s)` of a string: its byte count (raw bytes count once).
pub fn go_len(s: &str) -> usize {
    go_bytes(s).len()
}

/// A Go string value made from bytes (see [`go_string_from_bytes`]).
pub fn str_value_from_bytes(bytes: &[u8]) -> Value {
    Value::str(go_string_from_bytes(bytes))
}

/// Sprig's `strval`: a string as is, `[]byte` as text, anything else with
/// Go's `%v` (objects print through their `String` method, which `%v` uses).
pub fn strval(v: &Value) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        Value::Bytes(b) => go_string_from_bytes(b),
        other => other.to_string(),
    }
}

/// Go's `float64 -> int64` conversion on amd64: truncation, and
/// `-9223372036854775808` for NaN and values out of range.
pub fn float_to_int64(f: f64) -> i64 {
    // 2^63 is exactly representable; the valid range is [-2^63, 2^63).
    const TWO63: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() || !(-TWO63..TWO63).contains(&f) {
        i64::MIN
    } else {
        f.trunc() as i64
    }
}

/// spf13/cast's `trimZeroDecimal`: `"1.00"` -> `"1"`, anything else unchanged.
fn trim_zero_decimal(s: &str) -> &str {
    let b = s.as_bytes();
    let mut found_zero = false;
    for i in (1..=b.len()).rev() {
        match b[i - 1] {
            b'.' => {
                if found_zero {
                    return &s[..i - 1];
                }
            }
            b'0' => found_zero = true,
            _ => return s,
        }
    }
    s
}

/// spf13/cast `ToInt64`: ints as is, floats truncated (Go conversion),
/// bools 0/1, nil 0, strings with `strconv.ParseInt(trimZeroDecimal(s), 0, 0)`,
/// and 0 for anything it cannot cast.
pub fn to_int64(v: &Value) -> i64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Float(f) => float_to_int64(*f),
        Value::Bool(b) => *b as i64,
        Value::Str(s) => crate::gostd::num::parse_int(trim_zero_decimal(s), 0).unwrap_or(0),
        _ => 0,
    }
}

/// spf13/cast `ToInt` (same as [`to_int64`] on a 64-bit platform).
pub fn to_int(v: &Value) -> i64 {
    to_int64(v)
}

/// spf13/cast `ToFloat64`: numbers converted, bools 0/1, nil 0, strings with
/// `strconv.ParseFloat`, and 0 for anything it cannot cast.
pub fn to_float64(v: &Value) -> f64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => *b as i64 as f64,
        Value::Str(s) => crate::gostd::num::parse_float(s).unwrap_or(0.0),
        _ => 0.0,
    }
}

/// Sprig's `strslice` (`toStrings`): a list's non-nil elements through
/// [`strval`], `[]` for nil, and a one-element list for anything else.
pub fn strslice(v: &Value) -> Vec<String> {
    match v {
        Value::List(items, ListKind::String) => items.iter().map(strval).collect(),
        Value::List(items, _) => items
            .iter()
            .filter(|x| !matches!(x, Value::Nil))
            .map(strval)
            .collect(),
        // []byte is a slice too: each byte prints as a number.
        Value::Bytes(b) => b.iter().map(|x| x.to_string()).collect(),
        Value::Nil => Vec::new(),
        other => vec![strval(other)],
    }
}

/// A `[]string` value.
pub fn string_list(items: Vec<String>) -> Value {
    Value::List(
        Rc::new(items.into_iter().map(Value::str).collect()),
        ListKind::String,
    )
}

/// A `[]int` value.
pub fn int_list(items: Vec<i64>) -> Value {
    Value::List(
        Rc::new(items.into_iter().map(Value::Int).collect()),
        ListKind::Int,
    )
}

/// The elements of a Go slice value (`[]byte` gives its bytes as `uint8`
/// numbers, shown here as ints); `None` when the value is not a slice.
pub fn slice_items(v: &Value) -> Option<Vec<Value>> {
    match v {
        Value::List(items, _) => Some(items.as_ref().clone()),
        Value::Bytes(b) => Some(b.iter().map(|x| Value::Int(*x as i64)).collect()),
        _ => None,
    }
}

/// The string held by an argument the engine converted to `string`.
pub fn arg_str(args: &[Value], i: usize) -> Cow<'_, str> {
    match args.get(i) {
        Some(Value::Str(s)) => Cow::Borrowed(s),
        Some(Value::Nil) | None => Cow::Borrowed(""),
        Some(other) => Cow::Owned(strval(other)),
    }
}

/// The integer held by an argument the engine converted to `int`/`int64`.
pub fn arg_int(args: &[Value], i: usize) -> i64 {
    args.get(i).map(to_int64).unwrap_or(0)
}

/// The argument itself (nil when missing).
pub fn arg(args: &[Value], i: usize) -> Value {
    args.get(i).cloned().unwrap_or(Value::Nil)
}

/// Maps every rune of a Go string like `strings.Map`: raw bytes (invalid
/// UTF-8) become U+FFFD, as Go's decoder reads them.
pub fn map_runes(s: &str, f: impl Fn(char) -> char) -> String {
    let mapped: String = match go_bytes(s) {
        Cow::Borrowed(_) => s.chars().map(f).collect(),
        Cow::Owned(b) => crate::gostd::gostr::decode_runes(&b)
            .map(|r| f(r.unwrap_or(char::REPLACEMENT_CHARACTER)))
            .collect(),
    };
    crate::gostd::gostr::into_go_string(mapped)
}

/// Go's `fmt.Sprint(v)` for one operand (`%v`, strings as is).
pub fn sprint(v: &Value) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        other => other.to_string(),
    }
}

/// A Go panic or error message returned as a function error.
pub fn err(msg: impl Into<String>) -> FuncError {
    FuncError::Msg(msg.into())
}

/// Go's message for a nil pointer dereference panic.
pub const NIL_DEREF: &str = "runtime error: invalid memory address or nil pointer dereference";

/// Parameter lists used by many functions.
pub mod params {
    use super::Param;
    /// `(string)`
    pub const S: &[Param] = &[Param::String];
    /// `(string, string)`
    pub const SS: &[Param] = &[Param::String, Param::String];
    /// `(string, string, string)`
    pub const SSS: &[Param] = &[Param::String, Param::String, Param::String];
    /// `(interface{})`
    pub const A: &[Param] = &[Param::Any];
    /// `(interface{}, interface{})`
    pub const AA: &[Param] = &[Param::Any, Param::Any];
    /// `()`
    pub const NONE: &[Param] = &[];
    /// `(int, string)`
    pub const IS: &[Param] = &[Param::Int, Param::String];
}

#[cfg(test)]
pub(crate) mod testctx {
    //! A minimal call context for unit tests.
    use super::super::{CallContext, FuncResult, Registry};
    use crate::template::value::Value;

    /// A context that supports no engine callbacks.
    pub struct TestCtx;

    impl CallContext for TestCtx {
        fn include(&mut self, _name: &str, _data: Value) -> FuncResult {
            Ok(Value::Nil)
        }
        fn tpl(&mut self, _text: &str, _data: Value) -> FuncResult {
            Ok(Value::Nil)
        }
        fn lookup(&mut self, _a: &str, _k: &str, _n: &str, _name: &str) -> FuncResult {
            Ok(Value::empty_map())
        }
    }

    /// Calls a function of a registry built by `reg` with already converted arguments.
    pub fn call(reg: fn(&mut Registry), name: &str, args: &[Value]) -> FuncResult {
        let mut r = Registry::new();
        reg(&mut r);
        let spec = match r.get(name) {
            Some(s) => s.clone(),
            None => panic!("function {name} not registered"),
        };
        (spec.f)(&mut TestCtx, args)
    }

    /// Calls and formats the result with Go's `%v`, or `ERR: msg`.
    pub fn show(reg: fn(&mut Registry), name: &str, args: &[Value]) -> String {
        match call(reg, name, args) {
            Ok(v) => v.to_string(),
            Err(super::super::FuncError::Msg(m)) | Err(super::super::FuncError::Fail(m)) => {
                format!("ERR: {m}")
            }
        }
    }

    /// A string value.
    pub fn s(x: &str) -> Value {
        Value::str(x)
    }
    /// An int value.
    pub fn i(x: i64) -> Value {
        Value::Int(x)
    }
    /// A float64 value.
    pub fn f(x: f64) -> Value {
        Value::Float(x)
    }
    /// A list value.
    pub fn l(x: Vec<Value>) -> Value {
        Value::list(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cast_int64() {
        assert_eq!(to_int64(&Value::str("1e3")), 0);
        assert_eq!(to_int64(&Value::str("12")), 12);
        assert_eq!(to_int64(&Value::str("12abc")), 0);
        assert_eq!(to_int64(&Value::str("1.9")), 0);
        assert_eq!(to_int64(&Value::str("1.00")), 1);
        assert_eq!(to_int64(&Value::str("0x1F")), 31);
        assert_eq!(to_int64(&Value::str("017")), 15);
        assert_eq!(to_int64(&Value::str("1_000")), 1000);
        assert_eq!(to_int64(&Value::str("1__0")), 0);
        assert_eq!(to_int64(&Value::str(" 4")), 0);
        assert_eq!(to_int64(&Value::str("-9223372036854775808")), i64::MIN);
        assert_eq!(to_int64(&Value::str("9223372036854775808")), 0);
        assert_eq!(to_int64(&Value::Float(1e21)), i64::MIN);
        assert_eq!(
            to_int64(&Value::Float(9_223_372_036_854_775_807.0)),
            i64::MIN
        );
        assert_eq!(to_int64(&Value::Float(-42.9)), -42);
        assert_eq!(to_int64(&Value::Bool(true)), 1);
        assert_eq!(to_int64(&Value::Nil), 0);
    }

    #[test]
    fn cast_float64() {
        assert_eq!(to_float64(&Value::str("1e3")), 1000.0);
        assert_eq!(to_float64(&Value::str("x")), 0.0);
        assert_eq!(to_float64(&Value::str("1e400")), 0.0);
        assert_eq!(to_float64(&Value::str("0x1p4")), 16.0);
        assert_eq!(to_float64(&Value::str("1_0")), 10.0);
        assert_eq!(to_float64(&Value::str("1__0")), 0.0);
        assert_eq!(to_float64(&Value::str("1._5")), 0.0);
        assert!(to_float64(&Value::str("-Inf")).is_infinite());
        assert_eq!(to_float64(&Value::Int(3)), 3.0);
    }

    #[test]
    fn raw_bytes_roundtrip() {
        let b = b"h\xc3";
        let s = go_string_from_bytes(b);
        assert_eq!(go_bytes(&s).as_ref(), b);
        assert_eq!(go_len(&s), 2);
        assert_eq!(go_string_from_bytes("héllo".as_bytes()), "héllo");
    }

    #[test]
    fn to_strings_rules() {
        let l = Value::list(vec![
            Value::Int(1),
            Value::str("a"),
            Value::Nil,
            Value::Float(2.5),
        ]);
        assert_eq!(strslice(&l), vec!["1", "a", "2.5"]);
        assert!(strslice(&Value::Nil).is_empty());
        assert_eq!(strslice(&Value::Int(3)), vec!["3"]);
    }

    proptest::proptest! {
        #[test]
        fn raw_bytes_survive(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let s = go_string_from_bytes(&data);
            let back = go_bytes(&s).into_owned();
            proptest::prop_assert_eq!(back, data);
        }
    }
}
