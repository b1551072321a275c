//! Helm's own functions that reach the engine: include, tpl, required, fail, lookup.
use super::{CallContext, FuncError, FuncResult, Param, Registry};
use crate::template::value::Value;

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    r.add("include", &[Param::String, Param::Any], None, include);
    r.add("tpl", &[Param::String, Param::Any], None, tpl);
    r.add("required", &[Param::String, Param::Any], None, required);
    r.add("fail", &[Param::String], None, fail);
    r.add(
        "lookup",
        &[Param::String, Param::String, Param::String, Param::String],
        None,
        lookup,
    );
}

fn s(a: &[Value], i: usize) -> &str {
    a.get(i).and_then(|v| v.as_str()).unwrap_or("")
}

fn include(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    ctx.include(s(a, 0), a.get(1).cloned().unwrap_or_default())
}

fn tpl(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    ctx.tpl(s(a, 0), a.get(1).cloned().unwrap_or_default())
}

/// `required` rejects only nil and the empty string; the message is kept
/// verbatim (verified with Helm: `%s` stays `%s`).
/// In lint mode a missing value is logged and rendered as "".
fn required(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let v = a.get(1).cloned().unwrap_or_default();
    let missing = match &v {
        Value::Nil => true,
        Value::Str(x) => x.is_empty(),
        _ => false,
    };
    if !missing {
        return Ok(v);
    }
    if ctx.lint_mode() {
        ctx.log(format!("[INFO] Missing required value: {}", s(a, 0)));
        return Ok(Value::str(""));
    }
    Err(FuncError::Fail(s(a, 0).to_string()))
}

/// In lint mode the failure is logged and the call renders as "".
fn fail(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    if ctx.lint_mode() {
        ctx.log(format!("[INFO] Fail: {}", s(a, 0)));
        return Ok(Value::str(""));
    }
    Err(FuncError::Fail(s(a, 0).to_string()))
}

fn lookup(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    ctx.lookup(s(a, 0), s(a, 1), s(a, 2), s(a, 3))
}
