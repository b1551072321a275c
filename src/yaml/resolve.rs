//! yaml.v2's implicit typing of plain scalars (YAML 1.1 as go-yaml v2 does it).
//!
//! The rules, as go-yaml v2 applies them:
//! - a fixed table of words: `y/Y/yes/Yes/YES/true/True/TRUE/on/On/ON` are true,
//!   `n/N/no/No/NO/false/False/FALSE/off/Off/OFF` false, `""/~/null/Null/NULL`
//!   null, `.nan/.inf/+.inf/-.inf` (three spellings each) floats;
//! - otherwise only scalars whose first byte is a digit, a sign or `.` can be
//!   numbers: underscores are dropped, then Go's `ParseInt(s, 0, 64)` (so `0x`,
//!   `0o`, `0b` and a leading `0` for octal), `ParseUint`, and finally a float
//!   when the text matches `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`
//!   and is in range (`1e400` stays a string);
//! - `YYYY-M-D` dates and timestamps resolve to `!!timestamp`, which decoding into
//!   `interface{}` turns back into the original string, but which the encoder
//!   must quote.
use crate::gostd::num::{parse_int, parse_uint};

/// A scalar resolved the way yaml.v2 resolves it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scalar {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    /// A timestamp-shaped string (kept as text).
    Timestamp,
    Str,
}

/// Looks a word up in yaml.v2's fixed table.
fn lookup_word(s: &str) -> Option<Scalar> {
    Some(match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Scalar::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Scalar::Bool(false)
        }
        "" | "~" | "null" | "Null" | "NULL" => Scalar::Null,
        ".nan" | ".NaN" | ".NAN" => Scalar::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Scalar::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Scalar::Float(f64::NEG_INFINITY),
        _ => return None,
    })
}

/// Whether every plain scalar starting with byte `first` resolves to a
/// string (yaml.v2's hint for it is "always a string").
pub(crate) fn starts_string(first: u8) -> bool {
    hint_byte(Some(first)) == 0
}

/// The hint yaml.v2 takes from a scalar's first byte (`None`: the empty
/// scalar): 0 means "always a string".
fn hint_byte(first: Option<u8>) -> u8 {
    match first {
        None => b'N',
        Some(b'+' | b'-') => b'S',
        Some(b'0'..=b'9') => b'D',
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => b'M',
        Some(b'.') => b'.',
        _ => 0,
    }
}

/// Resolves an untagged plain scalar.
pub(crate) fn resolve_plain(s: &str) -> Scalar {
    let h = hint_byte(s.as_bytes().first().copied());
    if h == 0 {
        return Scalar::Str;
    }
    if let Some(v) = lookup_word(s) {
        return v;
    }
    match h {
        b'.' => match parse_go_float(s) {
            Some(f) => Scalar::Float(f),
            None => Scalar::Str,
        },
        b'D' | b'S' => {
            if is_timestamp(s) {
                return Scalar::Timestamp;
            }
            let plain: String = s.chars().filter(|&c| c != '_').collect();
            if let Some(i) = parse_int(&plain, 0) {
                return Scalar::Int(i);
            }
            if let Some(u) = parse_uint(&plain, 0) {
                return Scalar::Uint(u);
            }
            if is_yaml_style_float(&plain) {
                if let Some(f) = parse_go_float(&plain) {
                    return Scalar::Float(f);
                }
            }
            Scalar::Str
        }
        _ => Scalar::Str,
    }
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
pub(crate) fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let st = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - st
    };
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            digits(&mut i);
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat(s, 64)` for the decimal forms yaml.v2 can reach
/// (its float pattern); `None` on overflow (Go returns ErrRange there).
pub(crate) fn parse_go_float(s: &str) -> Option<f64> {
    // Underscores, hex floats and words (`inf`) do not reach here except
    // through the `.` hint, where yaml.v2 would fail anyway.
    if !is_yaml_style_float(s) {
        return None;
    }
    crate::gostd::num::parse_float(s)
}

/// yaml.v2's `isBase60Float`: `[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?`.
/// Such strings are quoted on output for YAML 1.1 readers.
pub(crate) fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    if i >= b.len() || !b[i].is_ascii_digit() {
        return false;
    }
    i += 1;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while i < b.len() && b[i] == b':' {
        i += 1;
        // [0-5]?[0-9]
        if i + 1 < b.len() && (b'0'..=b'5').contains(&b[i]) && b[i + 1].is_ascii_digit() {
            i += 2;
        } else if i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        } else {
            return false;
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// Whether Go's `time.Parse` accepts `s` with one of yaml.v2's timestamp
/// layouts: `2006-1-2T15:4:5.999999999Z07:00` (also with `t`),
/// `2006-1-2 15:4:5.999999999` and `2006-1-2`.
pub(crate) fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    // Quick check from yaml.v2: exactly four digits then '-'.
    let n = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if n != 4 || b.get(4) != Some(&b'-') {
        return false;
    }
    let mut p = Cursor { b, i: 5 };
    let year: u32 = match s[..4].parse() {
        Ok(y) => y,
        Err(_) => return false,
    };
    let Some(month) = p.num(1, 2) else {
        return false;
    };
    if !p.eat(b'-') {
        return false;
    }
    let Some(day) = p.num(1, 2) else {
        return false;
    };
    if !(1..=12).contains(&month) || day < 1 || day > days_in(year, month) {
        return false;
    }
    if p.done() {
        return true;
    }
    let sep = b[p.i];
    let zoned = match sep {
        b'T' | b't' => true,
        b' ' => false,
        _ => return false,
    };
    p.i += 1;
    let Some(h) = p.num(1, 2) else { return false };
    if !p.eat(b':') {
        return false;
    }
    let Some(m) = p.num(1, 2) else { return false };
    if !p.eat(b':') {
        return false;
    }
    let Some(sec) = p.num(1, 2) else {
        return false;
    };
    if h > 23 || m > 59 || sec > 59 {
        return false;
    }
    // Optional fraction.
    if p.peek() == Some(b'.') || p.peek() == Some(b',') {
        p.i += 1;
        if p.num(1, 9).is_none() {
            return false;
        }
    }
    if !zoned {
        return p.done();
    }
    match p.peek() {
        Some(b'Z') => {
            p.i += 1;
            p.done()
        }
        Some(b'+' | b'-') => {
            p.i += 1;
            let ok = p.fixed2().is_some_and(|hh| hh <= 24)
                && p.eat(b':')
                && p.fixed2().is_some_and(|mm| mm <= 59);
            ok && p.done()
        }
        _ => false,
    }
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }
    fn done(&self) -> bool {
        self.i == self.b.len()
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn num(&mut self, min: usize, max: usize) -> Option<u32> {
        let st = self.i;
        while self.i < self.b.len() && self.i - st < max && self.b[self.i].is_ascii_digit() {
            self.i += 1;
        }
        if self.i - st < min {
            return None;
        }
        std::str::from_utf8(&self.b[st..self.i]).ok()?.parse().ok()
    }
    fn fixed2(&mut self) -> Option<u32> {
        let st = self.i;
        let v = self.num(2, 2)?;
        if self.i - st == 2 {
            Some(v)
        } else {
            None
        }
    }
}

fn days_in(year: u32, month: u32) -> u32 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml11_words() {
        for s in ["y", "Yes", "ON", "true", "True"] {
            assert_eq!(resolve_plain(s), Scalar::Bool(true), "{s}");
        }
        for s in ["n", "NO", "off", "False"] {
            assert_eq!(resolve_plain(s), Scalar::Bool(false), "{s}");
        }
        for s in ["yEs", "oN", "tRUE", "nan", "inf", "Infinity"] {
            assert_eq!(resolve_plain(s), Scalar::Str, "{s}");
        }
        assert_eq!(resolve_plain(""), Scalar::Null);
        assert_eq!(resolve_plain("~"), Scalar::Null);
        assert_eq!(resolve_plain("<<"), Scalar::Str);
    }

    #[test]
    fn numbers() {
        assert_eq!(resolve_plain("0x1F"), Scalar::Int(31));
        assert_eq!(resolve_plain("017"), Scalar::Int(15));
        assert_eq!(resolve_plain("0o17"), Scalar::Int(15));
        assert_eq!(resolve_plain("0b101"), Scalar::Int(5));
        assert_eq!(resolve_plain("-0b101"), Scalar::Int(-5));
        assert_eq!(resolve_plain("1_000"), Scalar::Int(1000));
        assert_eq!(resolve_plain("+1"), Scalar::Int(1));
        assert_eq!(resolve_plain("08"), Scalar::Float(8.0));
        assert_eq!(resolve_plain("1e3"), Scalar::Float(1000.0));
        assert_eq!(resolve_plain(".5"), Scalar::Float(0.5));
        assert_eq!(resolve_plain("1."), Scalar::Float(1.0));
        assert_eq!(resolve_plain("1e400"), Scalar::Str);
        assert_eq!(resolve_plain("1:30"), Scalar::Str);
        assert_eq!(resolve_plain("0x"), Scalar::Str);
        assert_eq!(resolve_plain("+.inf"), Scalar::Float(f64::INFINITY));
        assert_eq!(
            resolve_plain("12345678901234567890"),
            Scalar::Uint(12345678901234567890)
        );
        assert_eq!(resolve_plain("-9223372036854775808"), Scalar::Int(i64::MIN));
        assert_eq!(resolve_plain("1.2.3"), Scalar::Str);
        assert_eq!(resolve_plain("-"), Scalar::Str);
    }

    #[test]
    fn timestamps_and_base60() {
        assert_eq!(resolve_plain("2024-01-01"), Scalar::Timestamp);
        assert_eq!(resolve_plain("2024-1-1"), Scalar::Timestamp);
        assert_eq!(
            resolve_plain("2001-12-14t21:59:43.10-05:00"),
            Scalar::Timestamp
        );
        assert_eq!(resolve_plain("2001-12-14 21:59:43.10"), Scalar::Timestamp);
        assert_eq!(resolve_plain("2024-02-30"), Scalar::Str);
        assert_eq!(resolve_plain("2024-13-01"), Scalar::Str);
        assert!(is_base60_float("1:30"));
        assert!(is_base60_float("190:20:30.15"));
        assert!(!is_base60_float("1:60"));
        assert!(!is_base60_float("a:1"));
    }
}
