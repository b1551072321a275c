//! Go's `strconv` number parsing: `ParseInt`, `ParseUint` and `ParseFloat`
//! (decimal and hexadecimal floats), as YAML resolution, template number
//! literals and Sprig's conversions use them. Each returns `None` where Go
//! returns an error (a syntax error, or a value out of range).

/// Go's `strconv.ParseUint(s, base, 64)`. Base 0 reads the `0x`, `0o`,
/// `0b` and `0` prefixes and allows `_` between digits, as Go literals do;
/// no sign is accepted.
pub fn parse_uint(s: &str, base: u32) -> Option<u64> {
    let b = s.as_bytes();
    if b.is_empty() || !(base == 0 || (2..=36).contains(&base)) {
        return None;
    }
    let base0 = base == 0;
    let (base, digits) = if !base0 {
        (base, b)
    } else if b[0] != b'0' {
        (10, b)
    } else if b.len() >= 3 && matches!(b[1].to_ascii_lowercase(), b'b' | b'o' | b'x') {
        let base = match b[1].to_ascii_lowercase() {
            b'b' => 2,
            b'o' => 8,
            _ => 16,
        };
        (base, &b[2..])
    } else {
        (8, &b[1..])
    };
    let mut n: u64 = 0;
    let mut underscores = false;
    for &c in digits {
        let d = match c {
            b'_' if base0 => {
                underscores = true;
                continue;
            }
            b'0'..=b'9' => u32::from(c - b'0'),
            b'a'..=b'z' => u32::from(c - b'a') + 10,
            b'A'..=b'Z' => u32::from(c - b'A') + 10,
            _ => return None,
        };
        if d >= base {
            return None;
        }
        n = n.checked_mul(u64::from(base))?.checked_add(u64::from(d))?;
    }
    if underscores && !underscore_ok(s) {
        return None;
    }
    Some(n)
}

/// Go's `strconv.ParseInt(s, base, 64)`: an optional sign, then
/// [`parse_uint`]'s digits; out of the `i64` range is `None`.
pub fn parse_int(s: &str, base: u32) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let un = parse_uint(body, base)?;
    let cutoff = 1u64 << 63;
    if neg {
        (un <= cutoff).then(|| (un as i64).wrapping_neg())
    } else {
        (un < cutoff).then_some(un as i64)
    }
}

/// The value Go's `strconv.ParseInt(s, 10, 64)` (and `Atoi`) returns when
/// its error is ignored, as Sprig does: 0 on a syntax error, the value
/// clamped to the `i64` range on a range error.
pub fn parse_int_lenient(s: &str) -> i64 {
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return 0;
    }
    match parse_uint(digits, 10) {
        Some(n) if neg && n <= 1 << 63 => (n as i64).wrapping_neg(),
        Some(n) if !neg && n < 1 << 63 => n as i64,
        _ if neg => i64::MIN,
        _ => i64::MAX,
    }
}

/// Go's `underscoreOK`: `_` only between digits, or between a base prefix
/// and a digit (`1_000`, `0x_ff`; not `_1`, `1__0`, `1_`).
fn underscore_ok(s: &str) -> bool {
    let mut b = s.as_bytes();
    if let Some(b'-' | b'+') = b.first() {
        b = &b[1..];
    }
    // The last character class: '^' start, '0' digit or prefix, '_', '!' other.
    let mut saw = b'^';
    let mut i = 0;
    let mut hex = false;
    if b.len() >= 2 && b[0] == b'0' && matches!(b[1].to_ascii_lowercase(), b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = b[1].eq_ignore_ascii_case(&b'x');
    }
    for &c in &b[i..] {
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
    }
    saw != b'_'
}

/// Go's `strconv.ParseFloat(s, 64)`: decimal (`1.5e3`, `1_000.5`),
/// hexadecimal with a `p` exponent (`0x1.8p1`), `inf`, `infinity` and `nan`
/// in any case. A finite text beyond the float64 range is `None` (Go's
/// range error).
pub fn parse_float(s: &str) -> Option<f64> {
    let lower = s.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    if lower.len() - unsigned.len() > 1 {
        return None;
    }
    match unsigned {
        "inf" | "infinity" => {
            return Some(if lower.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            })
        }
        // Go's `special` reads `nan` without a sign only.
        "nan" => return (unsigned.len() == lower.len()).then_some(f64::NAN),
        _ => {}
    }
    if s.contains('_') && !underscore_ok(s) {
        return None;
    }
    let clean = lower.replace('_', "");
    if clean.trim_start_matches(['+', '-']).starts_with("0x") {
        return parse_hex_float(&clean);
    }
    if !clean
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'+' | b'-'))
    {
        return None;
    }
    let v: f64 = clean.parse().ok()?;
    (!v.is_infinite()).then_some(v)
}

/// A hexadecimal float (`0x1.8p1`, lower case, no `_`): mantissa digits,
/// then the binary exponent Go requires.
fn parse_hex_float(lower: &str) -> Option<f64> {
    let (neg, rest) = match lower.as_bytes().first() {
        Some(b'-') => (true, &lower[1..]),
        Some(b'+') => (false, &lower[1..]),
        _ => (false, lower),
    };
    let (mant, exp) = rest.strip_prefix("0x")?.split_once('p')?;
    // Go caps the exponent while reading it (at 10000), so a long one is
    // still a number: infinity (a range error) or zero.
    let (eneg, edigits) = match exp.as_bytes().first() {
        Some(b'-') => (true, &exp[1..]),
        Some(b'+') => (false, &exp[1..]),
        _ => (false, exp),
    };
    if edigits.is_empty() || !edigits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let e = edigits
        .bytes()
        .fold(0i64, |e, c| (e * 10 + i64::from(c - b'0')).min(100_000));
    let exp = if eneg { -e } else { e };
    let (ip, fp) = mant.split_once('.').unwrap_or((mant, ""));
    if ip.is_empty() && fp.is_empty() {
        return None;
    }
    // The mantissa in a u64 of at most 60 bits; digits past that only
    // matter as a sticky bit, so the one rounding (u64 to f64) is Go's.
    let (mut m, mut e2, mut sticky) = (0u64, exp, false);
    for (k, c) in ip.chars().chain(fp.chars()).enumerate() {
        let d = u64::from(c.to_digit(16)?);
        if m >> 56 == 0 {
            m = m * 16 + d;
            if k >= ip.len() {
                e2 -= 4;
            }
        } else {
            sticky |= d != 0;
            if k < ip.len() {
                e2 += 4;
            }
        }
    }
    let v = ldexp((m | u64::from(sticky)) as f64, e2);
    if v.is_infinite() {
        return None;
    }
    Some(if neg { -v } else { v })
}

/// `x * 2^e` without overflowing the power on the way.
fn ldexp(mut x: f64, mut e: i64) -> f64 {
    while e > 1000 && x.is_finite() {
        x *= 2f64.powi(1000);
        e -= 1000;
    }
    while e < -1000 && x != 0.0 {
        x *= 2f64.powi(-1000);
        e += 1000;
    }
    x * 2f64.powi(e as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Examples of Go's `strconv` documentation (`ExampleParseInt`,
    /// `ExampleParseUint`, `ExampleParseFloat`) and the Go spec's literals.
    #[test]
    fn go_documented_examples() {
        assert_eq!(parse_int("-354634382", 10), Some(-354_634_382));
        assert_eq!(
            parse_int("-3546343826724305832", 10),
            Some(-3_546_343_826_724_305_832)
        );
        assert_eq!(parse_uint("42", 10), Some(42));
        assert_eq!(parse_uint("-42", 10), None);
        assert_eq!(parse_float("3.1415926535"), "3.1415926535".parse().ok());
        assert_eq!(parse_float("NaN").map(f64::is_nan), Some(true));
        assert_eq!(parse_float("nan").map(f64::is_nan), Some(true));
        assert_eq!(parse_float("inf"), Some(f64::INFINITY));
        assert_eq!(parse_float("+Inf"), Some(f64::INFINITY));
        assert_eq!(parse_float("-Inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_float("-0"), Some(-0.0));
        assert_eq!(parse_float("+0"), Some(0.0));
        assert_eq!(parse_float("1e309"), None);
        // Go spec literals.
        let ints = [
            ("0b1011", Some(11)),
            ("0o660", Some(0o660)),
            ("0660", Some(0o660)),
            ("0xBadFace", Some(0xbad_face)),
            ("0x_67_7a_2f_cc_40_c6", Some(0x677a_2fcc_40c6)),
            ("170_141183_460469_231731", None),
            ("42_", None),
            ("4__2", None),
            ("0_xBadFace", None),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("9223372036854775808", None),
        ];
        for (text, want) in ints {
            assert_eq!(parse_int(text, 0), want, "{text}");
        }
        assert_eq!(parse_int("1_000", 10), None);
        assert_eq!(parse_uint("18446744073709551615", 0), Some(u64::MAX));
        assert_eq!(parse_uint("0", 0), Some(0));
        assert_eq!(parse_uint("0x", 0), None);
        assert_eq!(parse_uint("", 0), None);
        let floats = [
            ("1_5.5", Some(15.5)),
            ("0x1p-2", Some(0.25)),
            ("0x2.p10", Some(2048.0)),
            ("0x1.Fp+0", Some(1.9375)),
            ("0X.8p-0", Some(0.5)),
            ("0X_1FFFP-16", Some(0.1249847412109375)),
            ("0x15e-2", None),
            ("0x1.8", None),
            ("1p-2", None),
            ("0x.p1", None),
            ("1_.5", None),
            ("--1", None),
        ];
        for (text, want) in floats {
            assert_eq!(parse_float(text), want, "{text}");
        }
        // `Atoi`'s value when its error is ignored.
        assert_eq!(parse_int_lenient("-42"), -42);
        assert_eq!(parse_int_lenient("x1"), 0);
        assert_eq!(parse_int_lenient("0x10"), 0);
        assert_eq!(parse_int_lenient("99999999999999999999"), i64::MAX);
        assert_eq!(parse_int_lenient("-99999999999999999999"), i64::MIN);
        assert_eq!(parse_int_lenient("-9223372036854775808"), i64::MIN);
    }

    #[test]
    fn long_hex_mantissas_round_once() {
        let cases = [
            // 2^53 + 1 rounds to even (2^53); one more bit past it rounds up.
            ("0x20000000000001p0", Some(9_007_199_254_740_992.0)),
            (
                "0x20000000000001000000001p-36",
                Some(9_007_199_254_740_994.0),
            ),
            ("0x1p-1074", Some(5e-324)),
            ("0x1p1024", None),
            ("0x1.fffffffffffffp1023", Some(f64::MAX)),
            ("0x1p-99999999999999999999", Some(0.0)),
            ("0x1p+99999999999999999999", None),
            ("0x1p", None),
            ("0x1p+-1", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_float(text), want, "{text}");
        }
    }

    proptest::proptest! {
        #[test]
        fn ints_read_their_decimal_text(n in proptest::num::i64::ANY) {
            proptest::prop_assert_eq!(parse_int(&n.to_string(), 0), Some(n));
            proptest::prop_assert_eq!(parse_int(&n.to_string(), 10), Some(n));
        }

        #[test]
        fn floats_read_their_shortest_text(f in proptest::num::f64::NORMAL) {
            proptest::prop_assert_eq!(parse_float(&format!("{f}")), Some(f));
            proptest::prop_assert_eq!(parse_float(&format!("{f:e}")), Some(f));
        }
    }
}
