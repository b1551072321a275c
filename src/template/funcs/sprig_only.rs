//! Sprig functions that Helm's chart engine removes or replaces, for the
//! places where Helm uses Sprig's own map (`sprig.TxtFuncMap()`, as
//! `--name-template` does): `env`, `expandenv` and Sprig's plain `fail`.
use super::{CallContext, FuncError, FuncResult, Param, Registry};
use crate::template::value::Value;

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    r.add("env", &[Param::String], None, env);
    r.add("expandenv", &[Param::String], None, expandenv);
    r.add("fail", &[Param::String], None, fail);
}

fn s(a: &[Value], i: usize) -> &str {
    a.get(i).and_then(|v| v.as_str()).unwrap_or("")
}

/// Go's `os.Getenv`: unset and invalid variables read as "".
fn getenv(name: &str) -> String {
    std::env::var(name).unwrap_or_default()
}

fn env(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::str(getenv(s(a, 0))))
}

fn expandenv(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::str(expand(s(a, 0), getenv)))
}

/// Sprig's `fail`: the message is the error, without Helm's markers.
fn fail(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Err(FuncError::msg(s(a, 0)))
}

/// Go's `os.Expand`: `$NAME` and `${NAME}` replaced by `mapping(NAME)`,
/// shell special variables (`$1`, `$*`, ...) as one character, bad
/// syntax (`${`, `${}`) eaten, and a `$` before anything else kept.
pub fn expand(s: &str, mapping: impl Fn(&str) -> String) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut j = 0;
    while j < b.len() {
        if b[j] == b'$' && j + 1 < b.len() {
            out.push_str(&s[i..j]);
            let (name, w) = shell_name(&s[j + 1..]);
            if name.is_empty() && w == 0 {
                out.push('$');
            } else if !name.is_empty() {
                out.push_str(&mapping(name));
            }
            j += w;
            i = j + 1;
        }
        j += 1;
    }
    out.push_str(&s[i.min(s.len())..]);
    out
}

fn is_shell_special(c: u8) -> bool {
    matches!(
        c,
        b'*' | b'#' | b'$' | b'@' | b'!' | b'?' | b'-' | b'0'..=b'9'
    )
}

/// Go's `getShellName`: the name after a `$` and how many bytes it took.
fn shell_name(s: &str) -> (&str, usize) {
    let b = s.as_bytes();
    if b[0] == b'{' {
        if b.len() > 2 && is_shell_special(b[1]) && b[2] == b'}' {
            return (&s[1..2], 3);
        }
        for (i, &c) in b.iter().enumerate().skip(1) {
            if c == b'}' {
                if i == 1 {
                    return ("", 2);
                }
                return (&s[1..i], i + 1);
            }
        }
        return ("", 1);
    }
    if is_shell_special(b[0]) {
        return (&s[0..1], 1);
    }
    let n = b
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .count();
    (&s[..n], n)
}

#[cfg(test)]
mod tests {
    use super::expand;

    #[test]
    fn expand_as_go() {
        let m = |n: &str| match n {
            "X" => "x".to_string(),
            "1" => "one".to_string(),
            _ => String::new(),
        };
        for (input, want) in [
            ("a-$X-${X}", "a-x-x"),
            ("$", "$"),
            ("a$", "a$"),
            ("$$", ""),
            ("${}", ""),
            ("${", ""),
            ("${X", "X"),
            ("$1b", "oneb"),
            ("${1}", "one"),
            ("$.x", "$.x"),
            ("${X}}", "x}"),
            ("é$X", "éx"),
        ] {
            assert_eq!(expand(input, m), want, "{input}");
        }
    }
}
