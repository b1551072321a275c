//! Sprig dict functions.
//!
//! Go maps are references, so `set`, `unset`, `merge` and `mergeOverwrite`
//! mutate the map they receive (also `.Values` and its sub-maps) and every
//! holder sees the change.
use super::defaults::is_empty;
use super::util::{arg, arg_str, err, params, strval};
use super::{CallContext, FuncError, FuncResult, Param, Registry};
use crate::template::value::{ListKind, MapKind, MapRef, Value};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// A deep copy (mitchellh/copystructure): maps and lists are copied
/// recursively and keep their Go types; objects are shared.
pub fn deep_copy(v: &Value) -> Value {
    match v {
        Value::List(items, kind) => {
            Value::List(Rc::new(items.iter().map(deep_copy).collect()), *kind)
        }
        Value::Map(m, kind) => {
            let copied: BTreeMap<String, Value> = m
                .borrow()
                .iter()
                .map(|(k, v)| (k.clone(), deep_copy(v)))
                .collect();
            Value::Map(Rc::new(RefCell::new(copied)), *kind)
        }
        other => other.clone(),
    }
}

/// Merges `src` into `dst` with mergo's rules for `map[string]interface{}`
/// (`mergo.Merge`, or `mergo.MergeWithOverwrite` when `overwrite`):
/// nested maps merge recursively in place; without overwrite a key is only
/// set when `dst` lacks it or holds an empty value; with overwrite every
/// source value wins (also empty ones and nil), except that a non-empty
/// destination map receiving a map is merged into instead.
pub fn merge_maps(dst: &MapRef, src: &MapRef, overwrite: bool) {
    merge_visit(dst, src, overwrite, &mut Vec::new());
}

/// One level of [`merge_maps`]; `seen` holds the destination maps already
/// being merged (mergo's visited set), so cyclic maps terminate.
fn merge_visit(dst: &MapRef, src: &MapRef, overwrite: bool, seen: &mut Vec<*const ()>) {
    let id = Rc::as_ptr(dst) as *const ();
    if Rc::ptr_eq(dst, src) || seen.contains(&id) {
        return;
    }
    seen.push(id);
    let entries: Vec<(String, Value)> = src
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, sv) in entries {
        if matches!(sv, Value::Nil) {
            if overwrite {
                dst.borrow_mut().insert(k, Value::Nil);
            }
            continue;
        }
        if overwrite && matches!(sv, Value::List(..) | Value::Bytes(_)) {
            // mergo's slice branch stores the source slice right away.
            dst.borrow_mut().insert(k, sv);
            continue;
        }
        let dv = dst.borrow().get(&k).cloned();
        if let (Some(Value::Map(dm, _)), Value::Map(sm, _)) = (&dv, &sv) {
            merge_visit(dm, sm, overwrite, seen);
        }
        // A non-empty destination is kept for a source list, and for a
        // source map when it is a map itself (merged in place above).
        if let Some(d) = &dv {
            let keep = matches!(sv, Value::List(..) | Value::Bytes(_))
                || (matches!(sv, Value::Map(..)) && matches!(d, Value::Map(..)));
            if keep && !is_empty(d) {
                continue;
            }
        }
        let dst_empty = dv.as_ref().map(is_empty).unwrap_or(true);
        if overwrite || dst_empty {
            dst.borrow_mut().insert(k, sv);
        }
    }
}

/// Go's interface-conversion panic text for asserting `v` to `want`.
pub fn interface_conversion(v: &Value, want: &str) -> FuncError {
    let got = match v {
        Value::Nil => "nil".to_string(),
        other => other.type_name(),
    };
    err(format!(
        "interface conversion: interface {{}} is {got}, not {want}"
    ))
}

fn map_arg(args: &[Value], i: usize) -> Option<MapRef> {
    match args.get(i) {
        Some(Value::Map(m, _)) => Some(m.clone()),
        _ => None,
    }
}

fn dict(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let mut m = BTreeMap::new();
    let mut i = 0;
    while i < args.len() {
        let key = strval(&args[i]);
        let val = args.get(i + 1).cloned().unwrap_or_else(|| Value::str(""));
        m.insert(key, val);
        i += 2;
    }
    Ok(Value::map(m))
}

fn get(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let key = arg_str(args, 1);
    Ok(map_arg(args, 0)
        .and_then(|m| m.borrow().get(key.as_ref()).cloned())
        .unwrap_or_else(|| Value::str("")))
}

/// A map passed as a `map[string]interface{}` parameter: Go converts a
/// `chartutil.Values` to the parameter type, so that is what comes back.
fn as_param_map(m: &MapRef) -> Value {
    Value::Map(m.clone(), MapKind::Interface)
}

fn set(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let key = arg_str(args, 1).into_owned();
    match args.first() {
        Some(Value::Map(m, _)) => {
            m.borrow_mut().insert(key, arg(args, 2));
            Ok(as_param_map(m))
        }
        _ => Err(err("assignment to entry in nil map")),
    }
}

fn unset(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let key = arg_str(args, 1);
    match args.first() {
        Some(Value::Map(m, _)) => {
            m.borrow_mut().remove(key.as_ref());
            Ok(as_param_map(m))
        }
        other => Ok(other.cloned().unwrap_or(Value::Nil)),
    }
}

fn has_key(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let key = arg_str(args, 1);
    Ok(Value::Bool(
        map_arg(args, 0).is_some_and(|m| m.borrow().contains_key(key.as_ref())),
    ))
}

fn pluck(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let key = arg_str(args, 0);
    let mut out = Vec::new();
    for i in 1..args.len() {
        if let Some(m) = map_arg(args, i) {
            if let Some(v) = m.borrow().get(key.as_ref()) {
                out.push(v.clone());
            }
        }
    }
    Ok(Value::list(out))
}

fn keys(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let mut out = Vec::new();
    for i in 0..args.len() {
        if let Some(m) = map_arg(args, i) {
            out.extend(m.borrow().keys().map(|k| Value::str(k.as_str())));
        }
    }
    Ok(Value::List(Rc::new(out), ListKind::String))
}

fn pick(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let mut out = BTreeMap::new();
    if let Some(m) = map_arg(args, 0) {
        let m = m.borrow();
        for k in &args[1..] {
            let k = strval(k);
            if let Some(v) = m.get(&k) {
                out.insert(k, v.clone());
            }
        }
    }
    Ok(Value::map(out))
}

fn omit(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let drop: Vec<String> = args.iter().skip(1).map(strval).collect();
    let mut out = BTreeMap::new();
    if let Some(m) = map_arg(args, 0) {
        for (k, v) in m.borrow().iter() {
            if !drop.contains(k) {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Ok(Value::map(out))
}

fn merge_impl(args: &[Value], overwrite: bool) -> FuncResult {
    let dst = match args.first() {
        Some(Value::Map(m, _)) => as_param_map(m),
        // A nil destination map: mergo allocates a new one.
        _ => Value::empty_map(),
    };
    if let Value::Map(dm, _) = &dst {
        for src in &args[1.min(args.len())..] {
            if let Value::Map(sm, _) = src {
                merge_maps(dm, sm, overwrite);
            }
        }
    }
    Ok(dst)
}

fn merge(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    merge_impl(args, false)
}

fn merge_overwrite(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    merge_impl(args, true)
}

fn values(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    let out = map_arg(args, 0)
        .map(|m| m.borrow().values().cloned().collect())
        .unwrap_or_default();
    Ok(Value::list(out))
}

fn dig(_: &mut dyn CallContext, args: &[Value]) -> FuncResult {
    if args.len() < 3 {
        return Err(err("dig needs at least three arguments"));
    }
    let last = &args[args.len() - 1];
    let mut dict = match last {
        Value::Map(m, MapKind::Interface) => m.clone(),
        other => return Err(interface_conversion(other, "map[string]interface {}")),
    };
    let default = args[args.len() - 2].clone();
    let mut ks = Vec::with_capacity(args.len() - 2);
    for k in &args[..args.len() - 2] {
        match k {
            Value::Str(s) => ks.push(s.to_string()),
            other => return Err(interface_conversion(other, "string")),
        }
    }
    let mut idx = 0;
    loop {
        let step = match dict.borrow().get(&ks[idx]) {
            Some(v) => v.clone(),
            None => return Ok(default),
        };
        idx += 1;
        if idx == ks.len() {
            return Ok(step);
        }
        dict = match &step {
            Value::Map(m, MapKind::Interface) => m.clone(),
            other => return Err(interface_conversion(other, "map[string]interface {}")),
        };
    }
}

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    const MS: &[Param] = &[Param::Map, Param::String];
    r.add("dict", params::NONE, Some(Param::Any), dict);
    r.add("get", MS, None, get);
    r.add("set", &[Param::Map, Param::String, Param::Any], None, set);
    r.add("unset", MS, None, unset);
    r.add("hasKey", MS, None, has_key);
    r.add("pluck", params::S, Some(Param::Map), pluck);
    r.add("keys", params::NONE, Some(Param::Map), keys);
    r.add("pick", &[Param::Map], Some(Param::String), pick);
    r.add("omit", &[Param::Map], Some(Param::String), omit);
    r.add("merge", &[Param::Map], Some(Param::Map), merge);
    r.add(
        "mergeOverwrite",
        &[Param::Map],
        Some(Param::Map),
        merge_overwrite,
    );
    r.add("mustMerge", &[Param::Map], Some(Param::Map), merge);
    r.add(
        "mustMergeOverwrite",
        &[Param::Map],
        Some(Param::Map),
        merge_overwrite,
    );
    r.add("values", &[Param::Map], None, values);
    r.add("dig", params::NONE, Some(Param::Any), dig);
}

#[cfg(test)]
mod tests {
    use super::super::util::testctx::*;
    use super::*;

    fn show(name: &str, args: &[Value]) -> String {
        super::super::util::testctx::show(register, name, args)
    }
    fn d(pairs: &[(&str, Value)]) -> Value {
        Value::map(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn dict_building() {
        assert_eq!(show("dict", &[s("b"), i(2), s("a"), i(1)]), "map[a:1 b:2]");
        assert_eq!(show("dict", &[s("a"), i(1), s("b")]), "map[a:1 b:]");
        assert_eq!(
            show(
                "dict",
                &[
                    i(1),
                    s("one"),
                    Value::Bool(true),
                    s("t"),
                    Value::Nil,
                    s("n")
                ]
            ),
            "map[1:one <nil>:n true:t]"
        );
    }

    #[test]
    fn get_set_unset() {
        let m = d(&[("a", i(1)), ("b", i(2))]);
        assert_eq!(show("get", &[m.clone(), s("a")]), "1");
        assert_eq!(show("get", &[m.clone(), s("z")]), "");
        show("unset", &[m.clone(), s("a")]);
        assert_eq!(m.to_string(), "map[b:2]");
        show("set", &[m.clone(), s("c"), s("x")]);
        assert_eq!(m.to_string(), "map[b:2 c:x]");
        assert_eq!(show("hasKey", &[d(&[("a", Value::Nil)]), s("a")]), "true");
    }

    #[test]
    fn merging() {
        let a = d(&[("a", i(1)), ("n", d(&[("x", i(1))]))]);
        let b = d(&[
            ("a", i(2)),
            ("b", i(2)),
            ("n", d(&[("x", i(2)), ("y", i(2))])),
        ]);
        assert_eq!(
            show("merge", &[a.clone(), b]),
            "map[a:1 b:2 n:map[x:1 y:2]]"
        );
        let a = d(&[("a", i(1)), ("n", d(&[("x", i(1)), ("k", i(0))]))]);
        let b = d(&[("a", i(2)), ("n", d(&[("x", i(2))]))]);
        assert_eq!(show("mergeOverwrite", &[a, b]), "map[a:2 n:map[k:0 x:2]]");
        let a = d(&[("a", i(1)), ("b", s("x")), ("c", l(vec![i(1)]))]);
        let b = d(&[("a", i(0)), ("b", s("")), ("c", l(vec![]))]);
        assert_eq!(show("mergeOverwrite", &[a, b]), "map[a:0 b: c:[]]");
        let a = d(&[("a", i(0))]);
        assert_eq!(
            show("merge", &[a.clone(), d(&[("a", i(3)), ("z", Value::Nil)])]),
            "map[a:3]"
        );
    }

    #[test]
    fn cyclic_maps_terminate() {
        let a = Value::empty_map();
        let b = d(&[("k", i(1))]);
        if let (Value::Map(am, _), Value::Map(bm, _)) = (&a, &b) {
            am.borrow_mut().insert("x".into(), a.clone());
            bm.borrow_mut().insert("x".into(), b.clone());
            merge_maps(am, bm, false);
            assert!(am.borrow().contains_key("k"));
        }
    }

    #[test]
    fn dig_rules() {
        let m = d(&[("a", d(&[("b", i(1))]))]);
        assert_eq!(show("dig", &[s("a"), s("b"), s("d"), m.clone()]), "1");
        assert_eq!(show("dig", &[s("a"), s("z"), s("d"), m.clone()]), "d");
        assert_eq!(
            show("dig", &[s("a"), s("b"), s("d"), d(&[("a", i(1))])]),
            "ERR: interface conversion: interface {} is int, not map[string]interface {}"
        );
        let vals = Value::Map(Rc::new(RefCell::new(BTreeMap::new())), MapKind::Values);
        assert_eq!(
            show("dig", &[s("a"), s("d"), vals]),
            "ERR: interface conversion: interface {} is chartutil.Values, not map[string]interface {}"
        );
    }

    #[test]
    fn pick_omit_pluck() {
        let m = d(&[("a", i(1)), ("b", i(2)), ("c", i(3))]);
        assert_eq!(
            show("pick", &[m.clone(), s("a"), s("c"), s("zz")]),
            "map[a:1 c:3]"
        );
        assert_eq!(show("omit", &[m.clone(), s("a"), s("zz")]), "map[b:2 c:3]");
        assert_eq!(
            show("pluck", &[s("a"), m.clone(), d(&[("a", i(9))])]),
            "[1 9]"
        );
        assert_eq!(show("keys", std::slice::from_ref(&m)), "[a b c]");
        assert_eq!(show("values", &[m]), "[1 2 3]");
    }
}
