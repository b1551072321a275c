//! Sprig list functions.
//!
//! Most take `interface{}` and check the reflect kind: a nil argument is a
//! nil-pointer panic in Go (`reflect.TypeOf(nil).Kind()`), another non-slice
//! an error such as `Cannot find first on type string`.
use super::defaults::is_empty;
use super::reflect::deep_equal;
use super::util::{arg, arg_int, err, slice_items, to_int, NIL_DEREF};
use super::{CallContext, FuncError, FuncResult, Param, Registry};
use crate::template::value::{ListKind, Value};
use std::rc::Rc;

/// The elements of a slice argument, a nil-pointer error for nil, or the
/// error `msg` (with `%s` replaced by the Go kind) for other types.
fn items(v: &Value, msg: &str) -> Result<Vec<Value>, FuncError> {
    if matches!(v, Value::Nil) {
        return Err(err(NIL_DEREF));
    }
    slice_items(v).ok_or_else(|| err(msg.replace("%s", v.kind_name())))
}

fn list(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::list(a.to_vec()))
}

fn push(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let mut l = items(&arg(a, 0), "Cannot push on type %s")?;
    l.push(arg(a, 1));
    Ok(Value::list(l))
}

fn prepend(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let mut l = items(&arg(a, 0), "Cannot prepend on type %s")?;
    l.insert(0, arg(a, 1));
    Ok(Value::list(l))
}

fn chunk(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let size = arg_int(a, 0);
    let l = items(&arg(a, 1), "Cannot chunk type %s")?;
    let len = l.len() as i64;
    let cs = ((len - 1) as f64 / size as f64).floor() + 1.0;
    let cs = super::util::float_to_int64(cs);
    if cs < 0 {
        return Err(err("runtime error: makeslice: len out of range"));
    }
    let mut out = Vec::new();
    for i in 0..cs {
        let mut clen = size;
        if i == cs - 1 {
            clen = ((len as f64) % (size as f64)).floor() as i64;
            if clen == 0 {
                clen = size;
            }
        }
        if clen < 0 {
            return Err(err("runtime error: makeslice: len out of range"));
        }
        let mut part = Vec::with_capacity(clen as usize);
        for j in 0..clen {
            let ix = i * size + j;
            match l.get(ix as usize) {
                Some(v) if ix >= 0 => part.push(v.clone()),
                _ => return Err(err("reflect: slice index out of range")),
            }
        }
        out.push(Value::list(part));
    }
    // [][]interface{}: the element type is visible only through typeOf.
    Ok(Value::List(Rc::new(out), ListKind::InterfaceList))
}

fn last(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let l = items(&arg(a, 0), "Cannot find last on type %s")?;
    Ok(l.last().cloned().unwrap_or(Value::Nil))
}

fn first(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let l = items(&arg(a, 0), "Cannot find first on type %s")?;
    Ok(l.first().cloned().unwrap_or(Value::Nil))
}

fn rest(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let l = items(&arg(a, 0), "Cannot find rest on type %s")?;
    Ok(Value::list(l.into_iter().skip(1).collect()))
}

fn initial(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let mut l = items(&arg(a, 0), "Cannot find initial on type %s")?;
    l.pop();
    Ok(Value::list(l))
}

fn reverse(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let mut l = items(&arg(a, 0), "Cannot find reverse on type %s")?;
    l.reverse();
    Ok(Value::list(l))
}

fn compact(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let l = items(&arg(a, 0), "Cannot compact on type %s")?;
    Ok(Value::list(
        l.into_iter().filter(|v| !is_empty(v)).collect(),
    ))
}

fn in_list(hay: &[Value], needle: &Value) -> bool {
    hay.iter().any(|h| deep_equal(needle, h))
}

fn uniq(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let l = items(&arg(a, 0), "Cannot find uniq on type %s")?;
    let mut out: Vec<Value> = Vec::new();
    for v in l {
        if !in_list(&out, &v) {
            out.push(v);
        }
    }
    Ok(Value::list(out))
}

fn without(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let l = items(&arg(a, 0), "Cannot find without on type %s")?;
    let omit = a.get(1..).unwrap_or(&[]);
    Ok(Value::list(
        l.into_iter().filter(|v| !in_list(omit, v)).collect(),
    ))
}

fn has(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let hay = arg(a, 1);
    if matches!(hay, Value::Nil) {
        return Ok(Value::Bool(false));
    }
    let l = items(&hay, "Cannot find has on type %s")?;
    Ok(Value::Bool(in_list(&l, &arg(a, 0))))
}

fn slice(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let v = arg(a, 0);
    let l = items(&v, "list should be type of slice or array but %s")?;
    if l.is_empty() {
        return Ok(Value::Nil);
    }
    let start = a.get(1).map(to_int).unwrap_or(0);
    let end = if a.len() < 3 {
        l.len() as i64
    } else {
        to_int(&a[2])
    };
    if start < 0 || end < start || end > l.len() as i64 {
        return Err(err("reflect.Value.Slice: slice index out of bounds"));
    }
    let part = l[start as usize..end as usize].to_vec();
    Ok(match v {
        Value::List(_, kind) => Value::List(Rc::new(part), kind),
        Value::Bytes(b) => Value::Bytes(b[start as usize..end as usize].into()),
        _ => Value::list(part),
    })
}

fn concat(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let mut out = Vec::new();
    for v in a {
        out.extend(items(v, "Cannot concat type %s as list")?);
    }
    Ok(Value::list(out))
}

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    let any = Some(Param::Any);
    const A: &[Param] = &[Param::Any];
    const AA: &[Param] = &[Param::Any, Param::Any];
    r.add("list", &[], any, list);
    r.add("tuple", &[], any, list);
    r.add("append", AA, None, push);
    r.add("push", AA, None, push);
    r.add("mustAppend", AA, None, push);
    r.add("mustPush", AA, None, push);
    r.add("prepend", AA, None, prepend);
    r.add("mustPrepend", AA, None, prepend);
    r.add("first", A, None, first);
    r.add("mustFirst", A, None, first);
    r.add("rest", A, None, rest);
    r.add("mustRest", A, None, rest);
    r.add("last", A, None, last);
    r.add("mustLast", A, None, last);
    r.add("initial", A, None, initial);
    r.add("mustInitial", A, None, initial);
    r.add("reverse", A, None, reverse);
    r.add("mustReverse", A, None, reverse);
    r.add("uniq", A, None, uniq);
    r.add("mustUniq", A, None, uniq);
    r.add("without", A, any, without);
    r.add("mustWithout", A, any, without);
    r.add("has", AA, None, has);
    r.add("mustHas", AA, None, has);
    r.add("slice", A, any, slice);
    r.add("mustSlice", A, any, slice);
    r.add("concat", &[], any, concat);
    r.add("chunk", &[Param::Int, Param::Any], None, chunk);
    r.add("mustChunk", &[Param::Int, Param::Any], None, chunk);
    r.add("compact", A, None, compact);
    r.add("mustCompact", A, None, compact);
}

#[cfg(test)]
mod tests {
    use super::super::util::testctx::*;
    use super::*;

    fn show(name: &str, args: &[Value]) -> String {
        super::super::util::testctx::show(register, name, args)
    }

    #[test]
    fn basics() {
        assert_eq!(
            show(
                "list",
                &[i(1), s("a"), f(2.5), Value::Nil, Value::Bool(true)]
            ),
            "[1 a 2.5 <nil> true]"
        );
        assert_eq!(show("rest", &[l(vec![i(1), i(2), i(3)])]), "[2 3]");
        assert_eq!(show("initial", &[l(vec![i(1), i(2), i(3)])]), "[1 2]");
        assert_eq!(show("rest", &[l(vec![])]), "[]");
        assert_eq!(
            show("first", &[s("abc")]),
            "ERR: Cannot find first on type string"
        );
        assert_eq!(show("first", &[Value::Nil]), format!("ERR: {NIL_DEREF}"));
        assert_eq!(
            show("mustFirst", &[i(3)]),
            "ERR: Cannot find first on type int"
        );
        assert_eq!(show("append", &[l(vec![i(1), i(2)]), i(3)]), "[1 2 3]");
        assert_eq!(show("prepend", &[l(vec![i(1), i(2)]), i(0)]), "[0 1 2]");
        assert_eq!(
            show(
                "concat",
                &[
                    l(vec![i(1), i(2)]),
                    l(vec![i(3)]),
                    l(vec![]),
                    l(vec![i(4), i(5)])
                ]
            ),
            "[1 2 3 4 5]"
        );
        assert_eq!(show("reverse", &[l(vec![i(1), i(2), i(3)])]), "[3 2 1]");
    }

    #[test]
    fn equality_based() {
        assert_eq!(
            show(
                "uniq",
                &[l(vec![i(1), i(1), s("1"), i(2), s("a"), s("a"), f(1.0)])]
            ),
            "[1 1 2 a 1]"
        );
        assert_eq!(
            show("without", &[l(vec![i(1), i(2), i(3), i(2)]), i(2)]),
            "[1 3]"
        );
        assert_eq!(
            show("without", &[l(vec![i(1), i(2), i(3)]), i(1), i(3)]),
            "[2]"
        );
        assert_eq!(show("has", &[i(4), l(vec![i(1), i(4)])]), "true");
        assert_eq!(show("has", &[s("4"), l(vec![i(1), i(4)])]), "false");
        assert_eq!(show("has", &[i(1), Value::Nil]), "false");
        assert_eq!(
            show(
                "compact",
                &[l(vec![
                    i(1),
                    i(0),
                    s(""),
                    Value::Nil,
                    Value::Bool(false),
                    s("a"),
                    l(vec![]),
                    Value::empty_map()
                ])]
            ),
            "[1 a]"
        );
    }

    #[test]
    fn chunks_and_slices() {
        assert_eq!(
            show("chunk", &[i(2), l(vec![i(1), i(2), i(3), i(4), i(5)])]),
            "[[1 2] [3 4] [5]]"
        );
        assert_eq!(show("chunk", &[i(3), l(vec![])]), "[]");
        assert_eq!(show("slice", &[l(vec![i(1), i(2), i(3)]), i(1)]), "[2 3]");
        assert_eq!(
            show("slice", &[l(vec![i(1), i(2), i(3)]), i(1), i(2)]),
            "[2]"
        );
        assert_eq!(
            show("slice", &[s("abc"), i(1), i(2)]),
            "ERR: list should be type of slice or array but string"
        );
    }
}
