//! Go's `strconv.FormatFloat`: the shortest form that `%v`, YAML and
//! JSONPath print (`'g'` with precision -1), and the `'e'`, `'f'` and `'g'`
//! forms with a precision that `printf` verbs use.

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`, which `%v` uses for float64:
/// the shortest representation that round-trips, exponent when exp < -4 || exp >= 21.
pub fn format_go_float(f: f64) -> String {
    format_go_float_bits(f, false)
}

/// Like [`format_go_float`] for a value that Go holds as float32.
pub fn format_go_float32(f: f32) -> String {
    format_go_float_bits(f as f64, true)
}

/// Go's text for NaN and the infinities, whatever the format.
fn not_finite(f: f64) -> Option<&'static str> {
    if f.is_nan() {
        Some("NaN")
    } else if f.is_infinite() {
        Some(if f > 0.0 { "+Inf" } else { "-Inf" })
    } else {
        None
    }
}

fn format_go_float_bits(f: f64, is32: bool) -> String {
    if let Some(s) = not_finite(f) {
        return s.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // Shortest round-trip digits from Rust's formatter, in scientific form.
    let sci = if is32 {
        format!("{:e}", f as f32)
    } else {
        format!("{:e}", f)
    };
    let (mant, exp) = match sci.split_once('e') {
        Some(p) => p,
        None => return sci,
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if neg { "-" } else { "" };
    // 'g' with the shortest precision decides with precision 6: exponent form
    // when exp < -4 || exp >= 6.
    let eprec = 6;
    if exp < -4 || exp >= eprec {
        let mut out = String::from(sign);
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let e = exp.abs();
        if e < 10 {
            out.push('0');
        }
        out.push_str(&e.to_string());
        out
    } else if exp < 0 {
        let mut out = String::from(sign);
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(&digits);
        out
    } else {
        let int_len = (exp + 1) as usize;
        let mut out = String::from(sign);
        if digits.len() <= int_len {
            out.push_str(&digits);
            for _ in digits.len()..int_len {
                out.push('0');
            }
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
        out
    }
}

/// Go's `strconv.FormatFloat(f, fmt, prec, 64)` for 'e', 'f', 'g' (prec -1 = shortest).
pub fn format_float(f: f64, fmt: char, prec: Option<usize>) -> String {
    if let Some(s) = not_finite(f) {
        return s.into();
    }
    let upper = fmt.is_ascii_uppercase();
    let lower = fmt.to_ascii_lowercase();
    let s = match lower {
        'e' => {
            let s = match prec {
                Some(p) => format!("{:.*e}", p, f),
                None => format!("{:e}", f),
            };
            fix_exp(&s)
        }
        'f' => match prec {
            Some(p) => format!("{:.*}", p, f),
            None => {
                // shortest digits in plain notation
                let s = format!("{}", f);
                if s == "-0" {
                    "-0".into()
                } else {
                    s
                }
            }
        },
        _ => match prec {
            None => format_go_float(f),
            Some(p) => {
                let p = if p == 0 { 1 } else { p };
                let sci = format!("{:.*e}", p - 1, f);
                let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
                let exp: i32 = exp.parse().unwrap_or(0);
                let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
                let trimmed = digits.trim_end_matches('0');
                let nd = trimmed.len().max(1) as i32;
                let mut eprec = p as i32;
                if eprec > nd && nd > exp {
                    eprec = nd;
                }
                if exp < -4 || exp >= eprec {
                    let prec_e = (nd - 1).max(0) as usize;
                    fix_exp(&format!("{:.*e}", prec_e, f))
                } else {
                    let decimals = (nd - 1 - exp).max(0) as usize;
                    format!("{:.*}", decimals, f)
                }
            }
        },
    };
    if upper {
        s.to_uppercase()
    } else {
        s
    }
}

/// Rust's `1.5e3` / `1.5e-3` exponent into Go's `1.5e+03` / `1.5e-03`.
fn fix_exp(s: &str) -> String {
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            if digits.len() < 2 {
                format!("{m}e{sign}0{digits}")
            } else {
                format!("{m}e{sign}{digits}")
            }
        }
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_float_formatting() {
        let cases = [
            (1000000.0, "1e+06"),
            (999999.0, "999999"),
            (12345678901.0, "1.2345678901e+10"),
            (1234567.0, "1.234567e+06"),
            (1000.0, "1000"),
            (3.0, "3"),
            (-0.0, "-0"),
            (0.00001, "1e-05"),
            (0.0001, "0.0001"),
            (1.5, "1.5"),
            (123456789.0, "1.23456789e+08"),
            (100000000000000000000.0, "1e+20"),
            (123456.5, "123456.5"),
        ];
        for (f, want) in cases {
            assert_eq!(format_go_float(f), want, "{f}");
        }
    }
}
