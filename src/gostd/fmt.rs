//! The string-level work of Go's `fmt` verbs that quote or name runes
//! (`%q`, `%+q`, `%#q`, `%U`, `%#U`, `%c`), ported from Go 1.23's
//! `fmt/format.go`. Padding, flags parsing and the other verbs are the
//! template engine's (`template::gofmt`), which formats its own values.
use super::gostr::truncate_runes;
use super::strconv::{can_backquote, quote, quote_rune, quote_rune_to_ascii, quote_to_ascii};
use super::unicode::is_print;

/// The largest Unicode code point (Go's `utf8.MaxRune`).
const MAX_RUNE: u64 = 0x10FFFF;

/// Go's `fmtQ` of a string (before padding): `%q`, or `%+q` with `plus`
/// (ASCII only), or with `sharp` a raw `` `string` `` when it can be one;
/// `prec` keeps that many runes first.
pub fn q_string(s: &str, sharp: bool, plus: bool, prec: Option<usize>) -> String {
    let truncated = match prec {
        Some(p) => truncate_runes(s, p),
        None => s.into(),
    };
    let s = truncated.as_ref();
    if sharp && can_backquote(s) {
        format!("`{s}`")
    } else if plus {
        quote_to_ascii(s)
    } else {
        quote(s)
    }
}

/// The rune Go's `%c` and `%q` make of an integer: U+FFFD past U+10FFFF
/// (negative numbers are huge as `uint64`) and for surrogates.
pub fn rune_of(c: u64) -> char {
    if c > MAX_RUNE {
        return char::REPLACEMENT_CHARACTER;
    }
    u32::try_from(c)
        .ok()
        .and_then(char::from_u32)
        .unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// Go's `fmtQc` of an integer (before padding): `%q`, or `%+q` with `plus`.
pub fn q_rune(c: u64, plus: bool) -> String {
    if plus {
        quote_rune_to_ascii(rune_of(c))
    } else {
        quote_rune(rune_of(c))
    }
}

/// Go's `fmtUnicode` (before padding): `U+0041`, at least `prec` hex
/// digits (4 by default), and with `sharp` the rune itself when printable
/// (`U+0041 'A'`).
pub fn unicode(u: u64, sharp: bool, prec: Option<usize>) -> String {
    let digits = prec.filter(|&p| p > 4).unwrap_or(4);
    let mut out = format!("U+{u:0digits$X}");
    if sharp && u <= MAX_RUNE {
        if let Some(c) = u32::try_from(u).ok().and_then(char::from_u32) {
            if is_print(c) {
                out.push_str(" '");
                out.push(c);
                out.push('\'');
            }
        }
    }
    out
}

/// Go's `%#U` of a rune: `U+002D '-'`, or `U+00A0` for one not printable.
pub fn unicode_sharp(c: char) -> String {
    unicode(u64::from(c as u32), true, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_like_go() {
        assert_eq!(q_string("a\u{a0}", false, false, None), "\"a\\u00a0\"");
        assert_eq!(q_string("é", false, true, None), "\"\\u00e9\"");
        assert_eq!(q_string("a\"b", true, false, None), "`a\"b`");
        assert_eq!(q_string("a`b", true, false, None), "\"a`b\"");
        assert_eq!(q_string("héllo", false, false, Some(2)), "\"hé\"");
        assert_eq!(q_rune(0x41, false), "'A'");
        assert_eq!(q_rune(0xe9, true), "'\\u00e9'");
        assert_eq!(q_rune(u64::MAX, false), "'\u{fffd}'");
        assert_eq!(q_rune(0xD800, false), "'\u{fffd}'");
        assert_eq!(unicode(0x41, true, None), "U+0041 'A'");
        assert_eq!(unicode(0xa0, true, None), "U+00A0");
        assert_eq!(unicode(0x41, false, Some(6)), "U+000041");
        assert_eq!(unicode_sharp('\u{1F600}'), "U+1F600 '\u{1F600}'");
    }
}
