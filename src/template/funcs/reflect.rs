//! Sprig reflection (typeOf, typeIs, typeIsLike, kindOf, kindIs, deepEqual).
use super::util::{arg, arg_str, params};
use super::{CallContext, FuncResult, Param, Registry};
use crate::template::value::Value;
use std::rc::Rc;

/// Go's `reflect.DeepEqual` on template values: the dynamic types must be
/// identical (`int` 1 differs from `int64` 1 and from `float64` 1), lists and
/// maps compare element by element, NaN is never equal.
pub fn deep_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Nil, Value::Nil) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) | (Value::Int64(x), Value::Int64(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Bytes(x), Value::Bytes(y)) => x == y,
        (Value::List(x, kx), Value::List(y, ky)) => {
            kx == ky
                && (Rc::ptr_eq(x, y)
                    || (x.len() == y.len()
                        && x.iter().zip(y.iter()).all(|(p, q)| deep_equal(p, q))))
        }
        (Value::Map(x, kx), Value::Map(y, ky)) => {
            if kx != ky {
                return false;
            }
            if Rc::ptr_eq(x, y) {
                return true;
            }
            let (x, y) = (x.borrow(), y.borrow());
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| deep_equal(v, w)))
        }
        (Value::Object(x), Value::Object(y)) => {
            Rc::ptr_eq(x, y) || (x.type_name() == y.type_name() && a.to_string() == b.to_string())
        }
        _ => false,
    }
}

fn type_of(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::str(arg(a, 0).type_name()))
}

fn type_is(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::Bool(arg_str(a, 0) == arg(a, 1).type_name()))
}

fn type_is_like(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let target = arg_str(a, 0);
    let t = arg(a, 1).type_name();
    Ok(Value::Bool(target == t || format!("*{target}") == t))
}

/// The reflect kind `kindOf` reports. Helm's named types `engine.files`
/// (a `map[string][]byte`) and `chartutil.VersionSet` (a `[]string`) are
/// objects here, but their Go kind is that of the underlying type.
fn kind(v: &Value) -> &'static str {
    if let Value::Object(o) = v {
        let t = o.type_name();
        if t == "engine.files" || t.starts_with("map[") {
            return "map";
        }
        if t == "chartutil.VersionSet" || t.starts_with("[]") {
            return "slice";
        }
    }
    v.kind_name()
}

fn kind_of(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::str(kind(&arg(a, 0))))
}

fn kind_is(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::Bool(arg_str(a, 0) == kind(&arg(a, 1))))
}

fn deep_equal_fn(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::Bool(deep_equal(&arg(a, 0), &arg(a, 1))))
}

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    const SA: &[Param] = &[Param::String, Param::Any];
    r.add("typeOf", params::A, None, type_of);
    r.add("typeIs", SA, None, type_is);
    r.add("typeIsLike", SA, None, type_is_like);
    r.add("kindOf", params::A, None, kind_of);
    r.add("kindIs", SA, None, kind_is);
    r.add("deepEqual", params::AA, None, deep_equal_fn);
}

#[cfg(test)]
mod tests {
    use super::super::util::testctx::*;
    use super::*;

    fn show(name: &str, args: &[Value]) -> String {
        super::super::util::testctx::show(register, name, args)
    }

    #[derive(Debug)]
    struct Named(&'static str);
    impl crate::template::value::GoObject for Named {
        fn type_name(&self) -> &str {
            self.0
        }
        fn field(&self, _: &str) -> Option<Value> {
            None
        }
        fn fmt_go(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }

    #[test]
    fn named_helm_types_report_their_underlying_kind() {
        // Helm 3.17.2: kindOf .Files = map, kindOf .Capabilities.APIVersions = slice,
        // kindOf .Release = ptr, kindOf .Capabilities.KubeVersion = struct.
        let obj = |t| Value::Object(std::rc::Rc::new(Named(t)));
        assert_eq!(show("kindOf", &[obj("engine.files")]), "map");
        assert_eq!(show("kindOf", &[obj("chartutil.VersionSet")]), "slice");
        assert_eq!(
            show("kindIs", &[s("slice"), obj("chartutil.VersionSet")]),
            "true"
        );
        assert_eq!(show("kindOf", &[obj("*release.Release")]), "ptr");
        assert_eq!(show("kindOf", &[obj("chartutil.KubeVersion")]), "struct");
    }

    #[test]
    fn types_and_kinds() {
        assert_eq!(show("typeOf", &[i(1)]), "int");
        assert_eq!(show("typeOf", &[Value::Nil]), "<nil>");
        assert_eq!(show("typeOf", &[l(vec![])]), "[]interface {}");
        assert_eq!(show("kindOf", &[Value::Nil]), "invalid");
        assert_eq!(show("kindIs", &[s("slice"), l(vec![])]), "true");
        assert_eq!(show("typeIs", &[s("float64"), f(1.0)]), "true");
        assert_eq!(show("typeIsLike", &[s("float64"), f(1.0)]), "true");
    }

    #[test]
    fn deep_equality() {
        assert_eq!(
            show("deepEqual", &[l(vec![i(1), i(2)]), l(vec![i(1), i(2)])]),
            "true"
        );
        assert_eq!(show("deepEqual", &[i(1), f(1.0)]), "false");
        assert_eq!(
            show("deepEqual", &[l(vec![f(1.0)]), l(vec![i(1)])]),
            "false"
        );
        assert_eq!(
            show("deepEqual", &[Value::empty_map(), Value::empty_map()]),
            "true"
        );
    }
}
