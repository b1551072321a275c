//! Sprig defaults and flow (default, empty, coalesce, ternary, all, any,
//! deepCopy, hello). `fail` and `required` are Helm's (see `helm.rs`), and the
//! JSON functions of Sprig's defaults.go live in `serialization.rs`.
use super::util::{arg, params};
use super::{FuncResult, Param, Registry};
use crate::template::funcs::dicts::deep_copy;
use crate::template::value::Value;

/// Sprig's `empty`: nil, false, 0, "" and empty collections are empty;
/// objects that are Go maps (`.Files`) are empty without entries; other
/// objects (structs and non-nil pointers) never are.
pub fn is_empty(v: &Value) -> bool {
    match v {
        Value::Nil => true,
        Value::Bool(b) => !b,
        Value::Int(i) | Value::Int64(i) => *i == 0,
        Value::Float(f) => *f == 0.0,
        Value::Str(s) => s.is_empty(),
        Value::Bytes(b) => b.is_empty(),
        Value::List(l, _) => l.is_empty(),
        Value::Map(m, _) => m.borrow().is_empty(),
        Value::Object(o) => o.entries().is_some_and(|e| e.is_empty()),
    }
}

fn dfault(_: &mut dyn super::CallContext, args: &[Value]) -> FuncResult {
    // default d given...: only the first given value is looked at.
    match args.get(1) {
        Some(g) if !is_empty(g) => Ok(g.clone()),
        _ => Ok(arg(args, 0)),
    }
}

fn empty(_: &mut dyn super::CallContext, args: &[Value]) -> FuncResult {
    Ok(Value::Bool(is_empty(&arg(args, 0))))
}

fn coalesce(_: &mut dyn super::CallContext, args: &[Value]) -> FuncResult {
    Ok(args
        .iter()
        .find(|v| !is_empty(v))
        .cloned()
        .unwrap_or(Value::Nil))
}

fn all(_: &mut dyn super::CallContext, args: &[Value]) -> FuncResult {
    Ok(Value::Bool(args.iter().all(|v| !is_empty(v))))
}

fn any(_: &mut dyn super::CallContext, args: &[Value]) -> FuncResult {
    Ok(Value::Bool(args.iter().any(|v| !is_empty(v))))
}

fn ternary(_: &mut dyn super::CallContext, args: &[Value]) -> FuncResult {
    if matches!(args.get(2), Some(Value::Bool(true))) {
        Ok(arg(args, 0))
    } else {
        Ok(arg(args, 1))
    }
}

fn deep_copy_fn(_: &mut dyn super::CallContext, args: &[Value]) -> FuncResult {
    match args.first() {
        // copystructure panics on an untyped nil.
        None | Some(Value::Nil) => Err(super::util::err(
            "reflect: call of reflect.Value.Type on zero Value",
        )),
        Some(v) => Ok(deep_copy(v)),
    }
}

fn hello(_: &mut dyn super::CallContext, _args: &[Value]) -> FuncResult {
    Ok(Value::str("Hello!"))
}

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    r.add("hello", params::NONE, None, hello);
    r.add("default", params::A, Some(Param::Any), dfault);
    r.add("empty", params::A, None, empty);
    r.add("coalesce", params::NONE, Some(Param::Any), coalesce);
    r.add("all", params::NONE, Some(Param::Any), all);
    r.add("any", params::NONE, Some(Param::Any), any);
    r.add(
        "ternary",
        &[Param::Any, Param::Any, Param::Bool],
        None,
        ternary,
    );
    r.add("deepCopy", params::A, None, deep_copy_fn);
    r.add("mustDeepCopy", params::A, None, deep_copy_fn);
}

#[cfg(test)]
mod tests {
    use super::super::util::testctx::*;
    use super::*;

    fn show(name: &str, args: &[Value]) -> String {
        super::super::util::testctx::show(register, name, args)
    }

    #[test]
    fn defaults() {
        assert_eq!(show("default", &[s("d"), s("")]), "d");
        assert_eq!(show("default", &[i(5), f(0.0)]), "5");
        assert_eq!(show("default", &[s("d")]), "d");
        assert_eq!(
            show("default", &[Value::Bool(true), Value::Bool(false)]),
            "true"
        );
        assert_eq!(show("default", &[s("d"), l(vec![s("a")])]), "[a]");
        assert_eq!(show("default", &[s("d"), s("x"), s("y")]), "x");
    }

    #[test]
    fn empties() {
        assert_eq!(show("empty", &[Value::Nil]), "true");
        assert_eq!(show("empty", &[Value::empty_map()]), "true");
        assert_eq!(show("empty", &[s("0")]), "false");
        assert_eq!(show("coalesce", &[i(0), s(""), s("x"), s("y")]), "x");
        assert_eq!(show("coalesce", &[i(0), s(""), Value::Nil]), "<nil>");
        assert_eq!(show("all", &[i(1), s("")]), "false");
        assert_eq!(show("any", &[i(0), s("a")]), "true");
        assert_eq!(show("all", &[]), "true");
        assert_eq!(show("any", &[]), "false");
    }

    #[derive(Debug)]
    struct Files(Vec<(Value, Value)>);
    impl crate::template::value::GoObject for Files {
        fn type_name(&self) -> &str {
            "engine.files"
        }
        fn field(&self, _: &str) -> Option<Value> {
            None
        }
        fn entries(&self) -> Option<Vec<(Value, Value)>> {
            Some(self.0.clone())
        }
        fn fmt_go(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("map[]")
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }

    #[test]
    fn map_objects_are_empty_without_entries() {
        // Helm 3.17.2 with only Chart.yaml, values.yaml and templates/:
        // `empty .Files` = true, `empty (.Files.Glob "nope*")` = true, `default "x" .Files` = x.
        let none = Value::Object(std::rc::Rc::new(Files(vec![])));
        let one = Value::Object(std::rc::Rc::new(Files(vec![(s("a"), s("b"))])));
        assert_eq!(show("empty", std::slice::from_ref(&none)), "true");
        assert_eq!(show("default", &[s("x"), none]), "x");
        assert_eq!(show("empty", &[one]), "false");
    }

    #[test]
    fn ternary_picks() {
        assert_eq!(show("ternary", &[s("a"), s("b"), Value::Bool(true)]), "a");
        assert_eq!(show("ternary", &[s("a"), s("b"), Value::Bool(false)]), "b");
    }
}
