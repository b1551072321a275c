//! Go's `encoding/json` spelling: how `json.Marshal` writes a float64 and a
//! whole value, as Helm's release records and `toJson` show it.
use serde::Serialize;

/// Go's `encoding/json` text of a finite float64: `'f'` format unless the
/// magnitude is below 1e-6 or at least 1e21, then `'e'` with the exponent
/// unpadded (`1e-7`, `1e+21`), as ES6 prints numbers. NaN and infinities
/// have no JSON text; the caller reports them (Go: `json: unsupported value`).
pub fn format_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format!("{f:e}");
        // Rust gives `1.5e-7` and `1e21`; Go gives `1.5e-7` and `1e+21`.
        match s.split_once('e') {
            Some((m, e)) => {
                let (sign, digits) = match e.strip_prefix('-') {
                    Some(d) => ('-', d),
                    None => ('+', e),
                };
                format!("{m}e{sign}{digits}")
            }
            None => s,
        }
    } else {
        // Rust's Display is the shortest round-trip digits in plain notation.
        format!("{f}")
    }
}

/// Go's `json.Marshal` of a value whose numbers Go holds as float64 (every
/// number in Helm's values, and the small integers of a release): compact,
/// `<`, `>`, `&`, U+2028 and U+2029 escaped as `\u003c`-style sequences,
/// numbers spelled as Go spells a float64: `12345678901234567000`, not the
/// exact integer; `0.000001`; `1e-7`; `1e+21`. Struct fields keep their
/// declaration order, as Go's do.
pub fn marshal<T: Serialize + ?Sized>(v: &T) -> serde_json::Result<String> {
    let s = serde_json::to_string(v)?;
    Ok(respell(&s))
}

/// Rewrites serde_json's compact output into Go's spelling (escapes and numbers).
fn respell(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    let mut chars = s.char_indices().peekable();
    let mut in_str = false;
    while let Some((i, ch)) = chars.next() {
        if in_str {
            match ch {
                '\\' => {
                    out.push(ch);
                    if let Some((_, e)) = chars.next() {
                        out.push(e);
                    }
                }
                '"' => {
                    in_str = false;
                    out.push(ch);
                }
                '<' => out.push_str("\\u003c"),
                '>' => out.push_str("\\u003e"),
                '&' => out.push_str("\\u0026"),
                '\u{2028}' => out.push_str("\\u2028"),
                '\u{2029}' => out.push_str("\\u2029"),
                c => out.push(c),
            }
            continue;
        }
        match ch {
            '"' => {
                in_str = true;
                out.push(ch);
            }
            '-' | '0'..='9' => {
                let mut end = i + ch.len_utf8();
                while let Some(&(j, c)) = chars.peek() {
                    if c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-') {
                        end = j + 1;
                        chars.next();
                    } else {
                        break;
                    }
                }
                out.push_str(&float64_number(&s[i..end]));
            }
            c => out.push(c),
        }
    }
    out
}

/// One JSON number token as Go's `encoding/json` writes the float64 it denotes.
fn float64_number(tok: &str) -> String {
    if !tok.contains(['.', 'e', 'E']) {
        // Integers a float64 holds exactly print the same either way.
        if let Ok(i) = tok.parse::<i64>() {
            if i.unsigned_abs() <= 1 << 53 {
                return tok.to_string();
            }
        }
    }
    match tok.parse::<f64>() {
        Ok(f) if f.is_finite() => format_float(f),
        _ => tok.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_go_way() {
        let cases = [
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (0.000001, "0.000001"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (1.0, "1"),
            (-0.0, "-0"),
            (12345678.9, "12345678.9"),
            (12345678901234567890.0, "12345678901234567000"),
            (0.00001, "0.00001"),
            (1.5e300, "1.5e+300"),
            (-2.5e-300, "-2.5e-300"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
        ];
        for (f, want) in cases {
            assert_eq!(format_float(f), want, "{f}");
        }
    }

    #[test]
    fn marshal_spells_as_go() {
        let v = serde_json::json!({"a": "<&>", "b": 12345678901234567890u64, "c": 0.000001,
            "d": 1e-7, "e": 1e21, "f": 1.5, "g": -3, "h": "\\\"1e5\"", "i": 9007199254740993u64});
        assert_eq!(
            marshal(&v).unwrap(),
            r#"{"a":"\u003c\u0026\u003e","b":12345678901234567000,"c":0.000001,"d":1e-7,"e":1e+21,"f":1.5,"g":-3,"h":"\\\"1e5\"","i":9007199254740992}"#
        );
    }

    proptest::proptest! {
        /// Go's float64 text reads back as the same float.
        #[test]
        fn float_text_round_trips(f in proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL | proptest::num::f64::ZERO) {
            proptest::prop_assert_eq!(format_float(f).parse::<f64>().ok(), Some(f));
        }
    }
}
