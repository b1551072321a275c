//! Sprig type conversions (atoi, int, int64, float64, toString, toStrings, toDecimal).
use super::util::{arg, arg_str, params, sprint, string_list, strslice, strval};
use super::util::{to_float64, to_int, to_int64};
use super::{CallContext, FuncResult, Registry};
use crate::gostd::num::{parse_int, parse_int_lenient};
use crate::template::value::Value;

fn atoi(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::Int(parse_int_lenient(&arg_str(a, 0))))
}

fn int(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::Int(to_int(&arg(a, 0))))
}

fn int64(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::Int64(to_int64(&arg(a, 0))))
}

fn float64(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::Float(to_float64(&arg(a, 0))))
}

/// Sprig's `toDecimal`: the value printed with `fmt.Sprint` and read as an
/// octal number; 0 when that fails.
pub fn to_decimal(v: &Value) -> i64 {
    parse_int(&sprint(v), 8).unwrap_or(0)
}

fn to_decimal_fn(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::Int64(to_decimal(&arg(a, 0))))
}

fn to_string(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::str(strval(&arg(a, 0))))
}

fn to_strings(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(string_list(strslice(&arg(a, 0))))
}

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    r.add("atoi", params::S, None, atoi);
    r.add("int64", params::A, None, int64);
    r.add("int", params::A, None, int);
    r.add("float64", params::A, None, float64);
    r.add("toDecimal", params::A, None, to_decimal_fn);
    r.add("toString", params::A, None, to_string);
    r.add("toStrings", params::A, None, to_strings);
}

#[cfg(test)]
mod tests {
    use super::super::util::testctx::*;
    use super::*;

    fn show(name: &str, args: &[Value]) -> String {
        super::super::util::testctx::show(register, name, args)
    }

    #[test]
    fn conversions() {
        assert_eq!(show("atoi", &[s("42")]), "42");
        assert_eq!(show("atoi", &[s("x")]), "0");
        assert_eq!(show("atoi", &[s("3.5")]), "0");
        assert_eq!(show("atoi", &[s(" 4")]), "0");
        assert_eq!(
            show("atoi", &[s("99999999999999999999")]),
            "9223372036854775807"
        );
        assert_eq!(show("int", &[f(1.9)]), "1");
        assert_eq!(show("int", &[s("1e3")]), "0");
        assert_eq!(show("int64", &[f(1e21)]), "-9223372036854775808");
        assert_eq!(show("float64", &[s("1e3")]), "1000");
        assert_eq!(show("float64", &[s("x")]), "0");
        assert_eq!(show("toDecimal", &[s("0777")]), "511");
        assert_eq!(show("toDecimal", &[s("777")]), "511");
        assert_eq!(show("toDecimal", &[s("0x1F")]), "0");
        assert_eq!(show("toDecimal", &[i(10)]), "8");
        assert_eq!(show("toString", &[f(1e6)]), "1e+06");
        assert_eq!(show("toString", &[Value::Nil]), "<nil>");
        assert_eq!(
            show("toStrings", &[l(vec![i(1), s("a"), Value::Nil, f(2.5)])]),
            "[1 a 2.5]"
        );
    }
}
