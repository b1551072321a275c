//! Go's `fmt` package over template values: `Sprintf` (for `printf` and the
//! Sprig functions built on it), `Sprint` and `Sprintln`.
//!
//! The verbs, flags and the error forms (`%!d(string=x)`, `%!v(MISSING)`,
//! `%!(EXTRA int=1)`, `%!(NOVERB)`) follow Go 1.23. Quoting and the verbs
//! that name runes are [`crate::gostd`]'s.
use super::value::{ListKind, Value};
use crate::gostd::float::{format_float, format_go_float};
use crate::gostd::{fmt as verbs, gostr, strconv};

/// Go's `fmt.Sprintf(format, args...)`.
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let b = format.as_bytes();
    let mut i = 0;
    let mut argn = 0;
    let mut reordered = false;
    while i < b.len() {
        let start = i;
        while i < b.len() && b[i] != b'%' {
            i += 1;
        }
        out.push_str(&format[start..i]);
        if i >= b.len() {
            break;
        }
        i += 1; // skip %
        let mut sp = Spec::default();
        // flags
        while i < b.len() {
            match b[i] {
                b'#' => sp.sharp = true,
                b'0' => sp.zero = true,
                b'+' => sp.plus = true,
                b'-' => sp.minus = true,
                b' ' => sp.space = true,
                _ => break,
            }
            i += 1;
        }
        // argument index
        if i < b.len() && b[i] == b'[' {
            if let Some((n, len)) = parse_arg_index(&format[i..]) {
                argn = n;
                reordered = true;
                i += len;
            }
        }
        // width
        if i < b.len() && b[i] == b'*' {
            i += 1;
            match args.get(argn) {
                Some(Value::Int(n)) | Some(Value::Int64(n)) => {
                    let mut n = *n;
                    if n < 0 {
                        sp.minus = true;
                        n = -n;
                    }
                    sp.width = Some(n.min(1_000_000) as usize);
                }
                _ => out.push_str("%!(BADWIDTH)"),
            }
            argn += 1;
        } else {
            let (n, len) = parse_num(&b[i..]);
            if len > 0 {
                sp.width = Some(n);
                i += len;
            }
        }
        // precision
        if i < b.len() && b[i] == b'.' {
            i += 1;
            if i < b.len() && b[i] == b'*' {
                i += 1;
                match args.get(argn) {
                    Some(Value::Int(n)) | Some(Value::Int64(n)) if *n >= 0 => {
                        sp.prec = Some((*n).min(1_000_000) as usize)
                    }
                    _ => out.push_str("%!(BADPREC)"),
                }
                argn += 1;
            } else {
                let (n, len) = parse_num(&b[i..]);
                sp.prec = Some(n);
                i += len;
            }
        }
        if i < b.len() && b[i] == b'[' {
            if let Some((n, len)) = parse_arg_index(&format[i..]) {
                argn = n;
                reordered = true;
                i += len;
            }
        }
        if i >= b.len() {
            out.push_str("%!(NOVERB)");
            break;
        }
        let verb = match format[i..].chars().next() {
            Some(c) => c,
            None => break,
        };
        i += verb.len_utf8();
        if verb == '%' {
            out.push('%');
            continue;
        }
        match args.get(argn) {
            None => {
                out.push_str("%!");
                out.push(verb);
                out.push_str("(MISSING)");
            }
            Some(v) => {
                argn += 1;
                if sp.minus {
                    sp.zero = false;
                }
                if verb == 'v' {
                    // Go turns '+' and '#' into the %+v / %#v forms.
                    sp.plus = false;
                    if sp.sharp {
                        sp.sharp = false;
                        if let Value::Str(s) = v {
                            pad(
                                &mut out,
                                &verbs::q_string(s, false, false, sp.prec),
                                &sp,
                                false,
                            );
                        } else {
                            fmt_sharp_v(&mut out, v, 0);
                        }
                        continue;
                    }
                }
                fmt_arg(&mut out, v, verb, &sp, 0);
            }
        }
    }
    if !reordered && argn < args.len() {
        out.push_str("%!(EXTRA ");
        for (k, a) in args[argn..].iter().enumerate() {
            if k > 0 {
                out.push_str(", ");
            }
            if matches!(a, Value::Nil) {
                out.push_str("<nil>");
            } else {
                out.push_str(&a.type_name());
                out.push('=');
                fmt_arg(&mut out, a, 'v', &Spec::default(), 0);
            }
        }
        out.push(')');
    }
    out
}

fn parse_arg_index(s: &str) -> Option<(usize, usize)> {
    let end = s.find(']')?;
    let n: usize = s[1..end].parse().ok()?;
    if n == 0 {
        return None;
    }
    Some((n - 1, end + 1))
}

fn parse_num(b: &[u8]) -> (usize, usize) {
    let mut n: usize = 0;
    let mut len = 0;
    while len < b.len() && b[len].is_ascii_digit() {
        n = n
            .saturating_mul(10)
            .saturating_add((b[len] - b'0') as usize)
            .min(1_000_000);
        len += 1;
    }
    (n, len)
}

/// Go's `fmt.Sprint(args...)`: spaces between operands when neither is a string.
pub fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    let mut prev_string = false;
    for (i, a) in args.iter().enumerate() {
        let is_string = matches!(a, Value::Str(_));
        if i > 0 && !is_string && !prev_string {
            out.push(' ');
        }
        fmt_arg(&mut out, a, 'v', &Spec::default(), 0);
        prev_string = is_string;
    }
    out
}

/// Go's `fmt.Sprintln(args...)`: always spaces, then a newline.
pub fn sprintln(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        fmt_arg(&mut out, a, 'v', &Spec::default(), 0);
    }
    out.push('\n');
    out
}

/// Go's `%v` of one value.
pub fn format_v(v: &Value) -> String {
    let mut out = String::new();
    fmt_arg(&mut out, v, 'v', &Spec::default(), 0);
    out
}

#[derive(Default, Clone)]
struct Spec {
    sharp: bool,
    zero: bool,
    plus: bool,
    minus: bool,
    space: bool,
    width: Option<usize>,
    prec: Option<usize>,
}

fn pad(out: &mut String, s: &str, sp: &Spec, numeric_zero: bool) {
    let w = sp.width.unwrap_or(0);
    let n = gostr::rune_count(s);
    if n >= w {
        out.push_str(s);
        return;
    }
    let fill = w - n;
    if sp.minus {
        out.push_str(s);
        out.extend(std::iter::repeat_n(' ', fill));
    } else if sp.zero && numeric_zero {
        // zeros go after the sign
        let (sign, rest) = if s.starts_with(['-', '+', ' ']) {
            s.split_at(1)
        } else {
            ("", s)
        };
        out.push_str(sign);
        out.extend(std::iter::repeat_n('0', fill));
        out.push_str(rest);
    } else if sp.zero {
        out.extend(std::iter::repeat_n('0', fill));
        out.push_str(s);
    } else {
        out.extend(std::iter::repeat_n(' ', fill));
        out.push_str(s);
    }
}

fn bad_verb(out: &mut String, v: &Value, verb: char) {
    out.push_str("%!");
    out.push(verb);
    out.push('(');
    match v {
        Value::Nil => out.push_str("<nil>"),
        _ => {
            out.push_str(&v.type_name());
            out.push('=');
            fmt_arg(out, v, 'v', &Spec::default(), 0);
        }
    }
    out.push(')');
}

fn fmt_arg(out: &mut String, v: &Value, verb: char, sp: &Spec, depth: usize) {
    if verb == 'T' {
        pad(out, &v.type_name(), sp, false);
        return;
    }
    if verb == 'p' {
        match v {
            Value::Map(..) | Value::List(..) | Value::Object(_) => {
                pad(out, "0xc000010000", sp, false);
            }
            _ => bad_verb(out, v, verb),
        }
        return;
    }
    match v {
        Value::Nil => match verb {
            'v' => pad(out, "<nil>", sp, false),
            _ => bad_verb(out, v, verb),
        },
        Value::Bool(b) => match verb {
            'v' | 't' => pad(out, if *b { "true" } else { "false" }, sp, false),
            _ => bad_verb(out, v, verb),
        },
        Value::Int(i) | Value::Int64(i) => fmt_int(out, v, *i, verb, sp),
        Value::Float(f) => fmt_float(out, v, *f, verb, sp),
        Value::Str(s) => fmt_str(out, v, &gostr::go_bytes(s), verb, sp),
        Value::Bytes(b) => match verb {
            's' | 'q' | 'x' | 'X' => fmt_str(out, v, b, verb, sp),
            _ => {
                let mut s = String::from("[");
                for (k, x) in b.iter().enumerate() {
                    if k > 0 {
                        s.push(' ');
                    }
                    fmt_int(&mut s, &Value::Int(*x as i64), *x as i64, verb, sp);
                }
                s.push(']');
                out.push_str(&s);
            }
        },
        Value::List(l, _) => {
            out.push('[');
            for (k, x) in l.iter().enumerate() {
                if k > 0 {
                    out.push(' ');
                }
                fmt_arg(out, x, verb, sp, depth + 1);
            }
            out.push(']');
        }
        Value::Map(m, _) => {
            out.push_str("map[");
            for (k, (key, x)) in m.borrow().iter().enumerate() {
                if k > 0 {
                    out.push(' ');
                }
                fmt_str(out, &Value::Nil, &gostr::go_bytes(key), verb, sp);
                out.push(':');
                fmt_arg(out, x, verb, sp, depth + 1);
            }
            out.push(']');
        }
        Value::Object(o) => {
            if depth > 0 && o.type_name().starts_with('*') && !matches!(verb, 's' | 'v') {
                out.push_str("0xc000010000");
                return;
            }
            match verb {
                'v' | 's' | 'q' => {
                    let s = format!("{}", v);
                    if verb == 'q' {
                        pad(out, &strconv::quote(&s), sp, false);
                    } else {
                        pad(out, &s, sp, false);
                    }
                }
                _ => bad_verb(out, v, verb),
            }
        }
    }
}

/// Go's `%#v` (Go syntax) of a value other than a top-level string:
/// `[]interface {}{"a", 1}`, `map[string]interface {}{"k":"v"}`.
fn fmt_sharp_v(out: &mut String, v: &Value, depth: usize) {
    match v {
        Value::Nil if depth > 0 => out.push_str("interface {}(nil)"),
        Value::Str(s) => out.push_str(&strconv::quote(s)),
        Value::List(l, _) => {
            out.push_str(&v.type_name());
            out.push('{');
            for (k, x) in l.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                fmt_sharp_v(out, x, depth + 1);
            }
            out.push('}');
        }
        Value::Map(m, _) => {
            out.push_str(&v.type_name());
            out.push('{');
            for (k, (key, x)) in m.borrow().iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                out.push_str(&strconv::quote(key));
                out.push(':');
                fmt_sharp_v(out, x, depth + 1);
            }
            out.push('}');
        }
        other => fmt_arg(out, other, 'v', &Spec::default(), depth),
    }
}

fn with_sign(neg: bool, digits: &str, sp: &Spec) -> String {
    let mut s = String::new();
    if neg {
        s.push('-');
    } else if sp.plus {
        s.push('+');
    } else if sp.space {
        s.push(' ');
    }
    s.push_str(digits);
    s
}

fn fmt_int(out: &mut String, v: &Value, i: i64, verb: char, sp: &Spec) {
    let neg = i < 0;
    let u = i.unsigned_abs();
    let mut digits = match verb {
        'v' | 'd' => u.to_string(),
        'b' => format!("{u:b}"),
        'o' | 'O' => format!("{u:o}"),
        'x' => format!("{u:x}"),
        'X' => format!("{u:X}"),
        // Go reads the integer as uint64 for these three.
        'c' => {
            let c = verbs::rune_of(i as u64).to_string();
            pad(out, &gostr::go_string(&c), sp, false);
            return;
        }
        'q' => {
            pad(out, &verbs::q_rune(i as u64, sp.plus), sp, false);
            return;
        }
        'U' => {
            pad(out, &verbs::unicode(i as u64, sp.sharp, sp.prec), sp, false);
            return;
        }
        'e' | 'E' | 'f' | 'F' | 'g' | 'G' => {
            bad_verb(out, v, verb);
            return;
        }
        _ => {
            bad_verb(out, v, verb);
            return;
        }
    };
    if let Some(p) = sp.prec {
        if digits.len() < p {
            digits = "0".repeat(p - digits.len()) + &digits;
        }
        if p == 0 && u == 0 {
            digits.clear();
        }
    }
    if sp.sharp {
        match verb {
            'o' if !digits.starts_with('0') => digits.insert(0, '0'),
            'x' => digits.insert_str(0, "0x"),
            'X' => digits.insert_str(0, "0X"),
            'b' => digits.insert_str(0, "0b"),
            _ => {}
        }
    }
    if verb == 'O' {
        digits.insert_str(0, "0o");
    }
    let s = with_sign(neg, &digits, sp);
    let zero_ok = sp.prec.is_none();
    let sp2 = Spec {
        zero: sp.zero && zero_ok,
        ..sp.clone()
    };
    pad(out, &s, &sp2, true);
}

fn fmt_float(out: &mut String, v: &Value, f: f64, verb: char, sp: &Spec) {
    let body = match verb {
        'v' => match sp.prec {
            None => format_go_float(f),
            Some(p) => format_float(f, 'g', Some(p)),
        },
        'e' | 'E' | 'f' | 'F' => format_float(f, verb, Some(sp.prec.unwrap_or(6))),
        'g' | 'G' => format_float(f, verb, sp.prec),
        _ => {
            bad_verb(out, v, verb);
            return;
        }
    };
    let (neg, digits) = match body.strip_prefix('-') {
        Some(d) => (true, d.to_string()),
        None => (false, body.strip_prefix('+').unwrap_or(&body).to_string()),
    };
    let s = if f.is_infinite() && !neg {
        if sp.plus {
            "+Inf".to_string()
        } else if sp.space {
            " Inf".to_string()
        } else {
            "+Inf".to_string()
        }
    } else {
        with_sign(neg, &digits, sp)
    };
    let numeric = f.is_finite();
    pad(out, &s, sp, numeric);
}

/// `b` holds Go's bytes: raw bytes (see [`gostr`]) come back as such.
fn fmt_str(out: &mut String, v: &Value, b: &[u8], verb: char, sp: &Spec) {
    let s: std::borrow::Cow<'_, str> = gostr::go_string_from_bytes(b).into();
    match verb {
        'v' | 's' => {
            let s = match sp.prec {
                Some(p) => gostr::truncate_runes(&s, p).into_owned(),
                None => s.into_owned(),
            };
            pad(out, &s, sp, false);
        }
        'q' => pad(
            out,
            &verbs::q_string(&s, sp.sharp, sp.plus, sp.prec),
            sp,
            false,
        ),
        'x' | 'X' => {
            let mut h = String::new();
            let bytes = match sp.prec {
                Some(p) => &b[..p.min(b.len())],
                None => b,
            };
            for (k, x) in bytes.iter().enumerate() {
                if sp.space && k > 0 {
                    h.push(' ');
                }
                if sp.sharp && (sp.space || k == 0) {
                    h.push_str(if verb == 'x' { "0x" } else { "0X" });
                }
                if verb == 'x' {
                    h.push_str(&format!("{x:02x}"));
                } else {
                    h.push_str(&format!("{x:02X}"));
                }
            }
            pad(out, &h, sp, false);
        }
        _ => {
            if matches!(v, Value::Nil) {
                // map keys: always strings
                bad_verb(out, &Value::str(s.as_ref()), verb);
            } else {
                bad_verb(out, v, verb);
            }
        }
    }
}

/// The `%s` text of a list kind's element type (for error messages).
pub fn list_kind_name(k: ListKind) -> &'static str {
    match k {
        ListKind::Interface => "[]interface {}",
        ListKind::String => "[]string",
        ListKind::Int => "[]int",
        ListKind::InterfaceList => "[][]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> Value {
        Value::str(x)
    }

    #[test]
    fn verbs() {
        assert_eq!(sprintf("%d", &[Value::Float(3.0)]), "%!d(float64=3)");
        assert_eq!(sprintf("%s", &[Value::Int(3)]), "%!s(int=3)");
        assert_eq!(sprintf("%v", &[Value::Nil]), "<nil>");
        assert_eq!(sprintf("%d", &[]), "%!d(MISSING)");
        assert_eq!(sprintf("x", &[Value::Int(1)]), "x%!(EXTRA int=1)");
        assert_eq!(
            sprintf(
                "%05.2f|%-4d|%x",
                &[Value::Float(1.23456), Value::Int(7), s("hi")]
            ),
            "01.23|7   |6869"
        );
        assert_eq!(sprintf("%q", &[s("a\"b\n")]), "\"a\\\"b\\n\"");
        assert_eq!(sprintf("%e", &[Value::Float(1234.5)]), "1.234500e+03");
        assert_eq!(sprintf("%g", &[Value::Float(1e21)]), "1e+21");
        assert_eq!(sprintf("%.3g", &[Value::Float(1234.5)]), "1.23e+03");
        assert_eq!(
            sprintf("%s", &[Value::list(vec![Value::Float(1.0)])]),
            "[%!s(float64=1)]"
        );
        assert_eq!(sprintf("%T", &[Value::Int64(1)]), "int64");
        assert_eq!(sprintf("%5s|%-5s|", &[s("ab"), s("cd")]), "   ab|cd   |");
        assert_eq!(
            sprintf("%c%U", &[Value::Int(65), Value::Int(65)]),
            "AU+0041"
        );
        assert_eq!(sprintf("100%%", &[]), "100%");
        assert_eq!(sprintf("%+v %#v", &[Value::Int(1), s("s")]), "1 \"s\"");
        assert_eq!(sprintf("%", &[]), "%!(NOVERB)");
    }

    #[test]
    fn q_escapes_what_go_cannot_print() {
        for c in [
            '\u{a0}', '\u{378}', '\u{61c}', '\u{1680}', '\u{2000}', '\u{3000}',
        ] {
            let want = format!("\"\\u{:04x}\"", c as u32);
            assert_eq!(sprintf("%q", &[s(&c.to_string())]), want);
        }
        assert_eq!(sprintf("%q", &[s("\u{e0001}")]), "\"\\U000e0001\"");
        assert_eq!(sprintf("%+q|%#q", &[s("é"), s("é")]), "\"\\u00e9\"|`é`");
        assert_eq!(
            sprintf("%q|%#U", &[Value::Int(0xa0), Value::Int(0xa0)]),
            "'\\u00a0'|U+00A0"
        );
    }

    #[test]
    fn sprint_spacing() {
        let args = [Value::Int(1), Value::Int(2), s("a"), s("b"), Value::Int(3)];
        assert_eq!(sprint(&args), "1 2ab3");
    }
}
