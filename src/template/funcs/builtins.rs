//! Go text/template's builtins: and, or, not, len, index, slice, print*, html,
//! js, urlquery, eq/ne/lt/le/gt/ge, call.
//!
//! `and`, `or` and `call` are evaluated specially by the engine (short
//! circuit, callee name); the functions here are their plain fallbacks.
use super::{CallContext, FuncError, FuncResult, Param, Registry};
use crate::template::gofmt::{sprint, sprintf, sprintln};
use crate::template::value::{go_eq, go_le, go_lt, ListKind, MapKind, Value};

const ANY: &[Param] = &[Param::Any];
const ANY2: &[Param] = &[Param::Any, Param::Any];

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    r.add_builtin("and", ANY, Some(Param::Any), and);
    r.add_builtin("or", ANY, Some(Param::Any), or);
    r.add_builtin("not", ANY, None, not);
    r.add_builtin("len", ANY, None, len);
    r.add_builtin("index", ANY, Some(Param::Any), index);
    r.add_builtin("slice", ANY, Some(Param::Any), slice);
    r.add_builtin("print", &[], Some(Param::Any), print);
    r.add_builtin("printf", &[Param::String], Some(Param::Any), printf);
    r.add_builtin("println", &[], Some(Param::Any), println);
    r.add_builtin("html", &[], Some(Param::Any), html);
    r.add_builtin("js", &[], Some(Param::Any), js);
    r.add_builtin("urlquery", &[], Some(Param::Any), urlquery);
    r.add_builtin("eq", ANY, Some(Param::Any), eq);
    r.add_builtin("ne", ANY2, None, ne);
    r.add_builtin("lt", ANY2, None, lt);
    r.add_builtin("le", ANY2, None, le);
    r.add_builtin("gt", ANY2, None, gt);
    r.add_builtin("ge", ANY2, None, ge);
    r.add_builtin("call", ANY, Some(Param::Any), call);
}

fn and(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    for v in a {
        if !v.is_truthy() {
            return Ok(v.clone());
        }
    }
    Ok(a.last().cloned().unwrap_or_default())
}

fn or(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    for v in a {
        if v.is_truthy() {
            return Ok(v.clone());
        }
    }
    Ok(a.last().cloned().unwrap_or_default())
}

fn not(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::Bool(!a.first().is_some_and(Value::is_truthy)))
}

fn len(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let v = a.first().cloned().unwrap_or_default();
    let n = match &v {
        Value::Nil => return Err(FuncError::msg("len of nil pointer")),
        Value::Str(s) => super::util::go_len(s),
        Value::Bytes(b) => b.len(),
        Value::List(l, _) => l.len(),
        Value::Map(m, _) => m.borrow().len(),
        Value::Object(o) => match crate::template::exec::object_entries(o.as_ref()) {
            Some(e) => e.len(),
            None => return Err(FuncError::msg(format!("len of type {}", v.type_name()))),
        },
        other => return Err(FuncError::msg(format!("len of type {}", other.type_name()))),
    };
    Ok(Value::Int(n as i64))
}

fn index_arg(index: &Value, cap: usize) -> Result<usize, FuncError> {
    let x = match index {
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Nil => return Err(FuncError::msg("cannot index slice/array with nil")),
        other => {
            return Err(FuncError::msg(format!(
                "cannot index slice/array with type {}",
                other.type_name()
            )))
        }
    };
    if x < 0 || x as u64 > cap as u64 {
        return Err(FuncError::msg(format!("index out of range: {x}")));
    }
    Ok(x as usize)
}

fn map_key(index: &Value) -> Result<String, FuncError> {
    match index {
        Value::Str(s) => Ok(s.to_string()),
        Value::Nil => Err(FuncError::msg("value is nil; should be of type string")),
        other => Err(FuncError::msg(format!(
            "value has type {}; should be string",
            other.type_name()
        ))),
    }
}

fn index(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let mut item = a.first().cloned().unwrap_or_default();
    if item.is_nil() {
        return Err(FuncError::msg("index of untyped nil"));
    }
    for idx in &a[1..] {
        item = match &item {
            Value::Nil => return Err(FuncError::msg("index of nil pointer")),
            Value::List(l, _) => {
                let x = index_arg(idx, l.len())?;
                match l.get(x) {
                    Some(v) => v.clone(),
                    None => return Err(FuncError::msg("reflect: slice index out of range")),
                }
            }
            Value::Bytes(b) => {
                let x = index_arg(idx, b.len())?;
                match b.get(x) {
                    Some(v) => Value::Int(*v as i64),
                    None => return Err(FuncError::msg("reflect: slice index out of range")),
                }
            }
            Value::Str(s) => {
                let x = index_arg(idx, s.len())?;
                match s.as_bytes().get(x) {
                    Some(v) => Value::Int(*v as i64),
                    None => return Err(FuncError::msg("reflect: string index out of range")),
                }
            }
            Value::Map(m, kind) => {
                let k = map_key(idx)?;
                let got = m.borrow().get(&k).cloned();
                match got {
                    Some(v) => v,
                    None if *kind == MapKind::String => Value::str(""),
                    None => Value::Nil,
                }
            }
            Value::Object(o) => match crate::template::exec::object_entries(o.as_ref()) {
                Some(entries) => {
                    let k = map_key(idx)?;
                    entries
                        .into_iter()
                        .find(|(ek, _)| ek.as_str() == Some(k.as_str()))
                        .map(|(_, v)| v)
                        .unwrap_or(Value::Nil)
                }
                None => {
                    return Err(FuncError::msg(format!(
                        "can't index item of type {}",
                        item.type_name()
                    )))
                }
            },
            other => {
                return Err(FuncError::msg(format!(
                    "can't index item of type {}",
                    other.type_name()
                )))
            }
        };
    }
    Ok(item)
}

fn slice(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let item = a.first().cloned().unwrap_or_default();
    if item.is_nil() {
        return Err(FuncError::msg("slice of untyped nil"));
    }
    let idx = &a[1..];
    if idx.len() > 3 {
        return Err(FuncError::msg(format!(
            "too many slice indexes: {}",
            idx.len()
        )));
    }
    let len = match &item {
        Value::Str(s) => {
            if idx.len() == 3 {
                return Err(FuncError::msg("cannot 3-index slice a string"));
            }
            s.len()
        }
        Value::List(l, _) => l.len(),
        Value::Bytes(b) => b.len(),
        other => {
            return Err(FuncError::msg(format!(
                "can't slice item of type {}",
                other.type_name()
            )))
        }
    };
    let mut bounds = [0usize, len, len];
    for (i, v) in idx.iter().enumerate() {
        bounds[i] = index_arg(v, len)?;
    }
    if bounds[0] > bounds[1] {
        return Err(FuncError::msg(format!(
            "invalid slice index: {} > {}",
            bounds[0], bounds[1]
        )));
    }
    if idx.len() < 3 {
        bounds[2] = len;
    } else if bounds[1] > bounds[2] {
        return Err(FuncError::msg(format!(
            "invalid slice index: {} > {}",
            bounds[1], bounds[2]
        )));
    }
    let (lo, hi) = (bounds[0], bounds[1]);
    Ok(match &item {
        Value::Str(s) => match s.get(lo..hi) {
            Some(x) => Value::str(x),
            None => Value::str(String::from_utf8_lossy(&s.as_bytes()[lo..hi]).as_ref()),
        },
        Value::List(l, k) => Value::List(std::rc::Rc::new(l[lo..hi].to_vec()), *k),
        Value::Bytes(b) => Value::Bytes(b[lo..hi].to_vec().into()),
        _ => Value::Nil,
    })
}

fn print(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    super::check_args_size(ctx, a)?;
    Ok(Value::str(sprint(a)))
}

fn printf(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    super::check_args_size(ctx, a)?;
    let f = a.first().and_then(|v| v.as_str()).unwrap_or("");
    Ok(Value::str(sprintf(f, &a[1.min(a.len())..])))
}

fn println(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    super::check_args_size(ctx, a)?;
    Ok(Value::str(sprintln(a)))
}

fn eval_args(a: &[Value]) -> String {
    if let [Value::Str(s)] = a {
        return s.to_string();
    }
    sprint(a)
}

/// Go's `template.HTMLEscapeString`.
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\0' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

fn html(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::str(html_escape(&eval_args(a))))
}

/// Go's `template.JSEscapeString`.
pub fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c if (c as u32) >= 0x80 && c.is_control() => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

fn js(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::str(js_escape(&eval_args(a))))
}

/// Go's `url.QueryEscape`.
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn urlquery(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::str(query_escape(&eval_args(a))))
}

fn cmp_err(r: Result<bool, String>) -> FuncResult {
    r.map(Value::Bool).map_err(FuncError::Msg)
}

fn eq(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let first = a.first().cloned().unwrap_or_default();
    cmp_err(go_eq(&first, &a[1.min(a.len())..]))
}

fn two(a: &[Value]) -> (Value, Value) {
    (
        a.first().cloned().unwrap_or_default(),
        a.get(1).cloned().unwrap_or_default(),
    )
}

fn ne(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let (x, y) = two(a);
    cmp_err(go_eq(&x, &[y]).map(|b| !b))
}

fn lt(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let (x, y) = two(a);
    cmp_err(go_lt(&x, &y))
}

fn le(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let (x, y) = two(a);
    cmp_err(go_le(&x, &y))
}

fn gt(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let (x, y) = two(a);
    cmp_err(go_le(&x, &y).map(|b| !b))
}

fn ge(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let (x, y) = two(a);
    cmp_err(go_lt(&x, &y).map(|b| !b))
}

fn call(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    match a.first() {
        None | Some(Value::Nil) => Err(FuncError::msg("call of nil")),
        Some(v) => Err(FuncError::msg(format!(
            "non-function of type {}",
            v.type_name()
        ))),
    }
}

#[allow(dead_code)]
fn _kinds(_: ListKind) {}
