//! Go's `strconv` quoting: `Quote`, `QuoteToASCII`, `QuoteToGraphic`, their
//! rune forms, `CanBackquote`, `Unquote` and `UnquoteChar`, ported from Go
//! 1.23's `strconv/quote.go`.
//!
//! Every function reads a Go string (see [`super::gostr`]): its bytes are
//! decoded as Go's `utf8.DecodeRuneInString` does, so a byte that is not
//! part of valid UTF-8 is written `\xNN`, and a real rune comes out as
//! itself or as its escape depending on [`is_print`] (Go's exact tables).
use super::gostr::{decode_runes, go_bytes, go_string_from_bytes};
use super::unicode::{in_graphic_list, is_print};
use std::fmt::Write as _;

/// Go's `strconv.ErrSyntax`: the text is not a valid quoted literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid syntax")]
pub struct SyntaxError;

/// Which runes a quoting function writes as they are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// `Quote`: the printable runes.
    Print,
    /// `QuoteToASCII`: the printable ASCII runes.
    Ascii,
    /// `QuoteToGraphic`: the printable runes and the spaces of category Zs.
    Graphic,
}

/// Go's `strconv.Quote`: a double-quoted Go literal of `s`.
pub fn quote(s: &str) -> String {
    quote_with(s, '"', Keep::Print)
}

/// Go's `strconv.QuoteToASCII` (`%+q`): as [`quote`], with every non-ASCII rune escaped.
pub fn quote_to_ascii(s: &str) -> String {
    quote_with(s, '"', Keep::Ascii)
}

/// Go's `strconv.QuoteToGraphic`: as [`quote`], keeping the spaces of category Zs.
pub fn quote_to_graphic(s: &str) -> String {
    quote_with(s, '"', Keep::Graphic)
}

/// Go's `strconv.QuoteRune`: a single-quoted Go literal of `r`.
pub fn quote_rune(r: char) -> String {
    quote_rune_with(r, Keep::Print)
}

/// Go's `strconv.QuoteRuneToASCII`.
pub fn quote_rune_to_ascii(r: char) -> String {
    quote_rune_with(r, Keep::Ascii)
}

/// Go's `strconv.QuoteRuneToGraphic`.
pub fn quote_rune_to_graphic(r: char) -> String {
    quote_rune_with(r, Keep::Graphic)
}

/// Go's `strconv.CanBackquote`: whether `s` can be written as a raw string
/// literal (one line, no control character but tab, no backquote, no BOM,
/// valid UTF-8).
pub fn can_backquote(s: &str) -> bool {
    decode_runes(&go_bytes(s)).all(|r| match r {
        Err(_) | Ok('\u{FEFF}') | Ok('`') | Ok('\u{7F}') => false,
        Ok(c) => c >= ' ' || c == '\t',
    })
}

/// Go's `strconv.Unquote` of a double-quoted literal: the Go string it
/// stands for (`\xff` is the byte 0xFF; a byte that is not UTF-8 in the
/// literal itself becomes U+FFFD, as in Go).
pub fn unquote(s: &str) -> Result<String, SyntaxError> {
    let b = go_bytes(s);
    let inner = b
        .strip_prefix(b"\"")
        .and_then(|x| x.strip_suffix(b"\""))
        .ok_or(SyntaxError)?;
    if !inner.contains(&b'\\') && !inner.contains(&b'\n') && !inner.contains(&b'"') {
        if let Ok(text) = std::str::from_utf8(inner) {
            return Ok(go_string_from_bytes(text.as_bytes()));
        }
    }
    let mut out = Vec::with_capacity(inner.len());
    let mut rest = inner;
    while !rest.is_empty() {
        if rest[0] == b'\n' {
            return Err(SyntaxError);
        }
        let (value, multibyte, used) = unquote_char_bytes(rest, b'"')?;
        rest = &rest[used..];
        match char::from_u32(value) {
            Some(c) if multibyte => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
            // `\x` and octal escapes are single bytes, possibly not UTF-8.
            _ => out.push(value as u8),
        }
    }
    Ok(go_string_from_bytes(&out))
}

/// Go's `strconv.UnquoteChar`: the first character of `s` (an escape as in
/// a literal quoted by `quote`) and the text after it.
pub fn unquote_char(s: &str, quote: char) -> Result<(char, String), SyntaxError> {
    let b = go_bytes(s);
    let quote = u8::try_from(quote).map_err(|_| SyntaxError)?;
    let (value, _, used) = unquote_char_bytes(&b, quote)?;
    let c = char::from_u32(value).ok_or(SyntaxError)?;
    Ok((c, go_string_from_bytes(&b[used..])))
}

/// `UnquoteChar` on bytes: the value, whether it is a rune to encode
/// (rather than one byte), and the bytes read.
fn unquote_char_bytes(s: &[u8], quote: u8) -> Result<(u32, bool, usize), SyntaxError> {
    let (&c, rest) = s.split_first().ok_or(SyntaxError)?;
    if c == quote && (quote == b'\'' || quote == b'"') {
        return Err(SyntaxError);
    }
    if c >= 0x80 {
        return Ok(match decode_runes(s).next() {
            Some(Ok(r)) => (r as u32, true, r.len_utf8()),
            _ => (char::REPLACEMENT_CHARACTER as u32, true, 1),
        });
    }
    if c != b'\\' {
        return Ok((u32::from(c), false, 1));
    }
    let (&e, rest) = rest.split_first().ok_or(SyntaxError)?;
    let simple = |v: char| Ok((v as u32, false, 2));
    match e {
        b'a' => simple('\x07'),
        b'b' => simple('\x08'),
        b'f' => simple('\x0c'),
        b'n' => simple('\n'),
        b'r' => simple('\r'),
        b't' => simple('\t'),
        b'v' => simple('\x0b'),
        b'\\' => simple('\\'),
        b'\'' | b'"' if e == quote => simple(char::from(e)),
        b'x' | b'u' | b'U' => {
            let n = match e {
                b'x' => 2,
                b'u' => 4,
                _ => 8,
            };
            let digits = rest.get(..n).ok_or(SyntaxError)?;
            let mut v: u32 = 0;
            for &d in digits {
                v = v << 4 | char::from(d).to_digit(16).ok_or(SyntaxError)?;
            }
            if e == b'x' {
                // A single byte, possibly not UTF-8.
                return Ok((v, false, 2 + n));
            }
            if char::from_u32(v).is_none() {
                return Err(SyntaxError);
            }
            Ok((v, true, 2 + n))
        }
        b'0'..=b'7' => {
            let mut v = u32::from(e - b'0');
            for &d in rest.get(..2).ok_or(SyntaxError)? {
                if !(b'0'..=b'7').contains(&d) {
                    return Err(SyntaxError);
                }
                v = v << 3 | u32::from(d - b'0');
            }
            if v > 255 {
                return Err(SyntaxError);
            }
            Ok((v, false, 4))
        }
        _ => Err(SyntaxError),
    }
}

fn quote_with(s: &str, quote: char, keep: Keep) -> String {
    let bytes = go_bytes(s);
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push(quote);
    for r in decode_runes(&bytes) {
        match r {
            Ok(c) => push_escaped(&mut out, c, quote, keep),
            Err(b) => push_hex(&mut out, "\\x", u32::from(b), 2),
        }
    }
    out.push(quote);
    out
}

fn quote_rune_with(r: char, keep: Keep) -> String {
    let mut out = String::with_capacity(8);
    out.push('\'');
    push_escaped(&mut out, r, '\'', keep);
    out.push('\'');
    out
}

/// Go's `appendEscapedRune`.
fn push_escaped(out: &mut String, r: char, quote: char, keep: Keep) {
    if r == quote || r == '\\' {
        out.push('\\');
        out.push(r);
        return;
    }
    let kept = match keep {
        Keep::Ascii => r.is_ascii() && is_print(r),
        Keep::Print => is_print(r),
        Keep::Graphic => is_print(r) || in_graphic_list(r),
    };
    if kept {
        out.push(r);
        return;
    }
    match r {
        '\x07' => out.push_str("\\a"),
        '\x08' => out.push_str("\\b"),
        '\x0c' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\x0b' => out.push_str("\\v"),
        c if c < ' ' || c == '\x7f' => push_hex(out, "\\x", c as u32, 2),
        c if (c as u32) < 0x10000 => push_hex(out, "\\u", c as u32, 4),
        c => push_hex(out, "\\U", c as u32, 8),
    }
}

fn push_hex(out: &mut String, prefix: &str, n: u32, digits: usize) {
    out.push_str(prefix);
    // Writing to a String cannot fail.
    let _ = write!(out, "{n:0digits$x}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gostd::gostr::go_string;

    /// The examples of Go's `strconv` documentation and quote tests.
    #[test]
    fn go_examples() {
        assert_eq!(
            quote("\"Fran & Freddie's Diner\t☺\""),
            r#""\"Fran & Freddie's Diner\t☺\"""#
        );
        assert_eq!(quote("\u{263a}\u{fffd}"), "\"☺\u{fffd}\"");
        assert_eq!(quote("\u{7}\u{8}\u{c}\r\n\t\u{b}"), r#""\a\b\f\r\n\t\v""#);
        assert_eq!(quote("\\"), r#""\\""#);
        // A Go string holds U+10FFFF as its bytes (see `gostr`).
        assert_eq!(quote(&go_string("\u{10ffff}")), r#""\U0010ffff""#);
        assert_eq!(quote("\x04"), r#""\x04""#);
        assert_eq!(quote("!\u{00bf}"), "\"!\u{00bf}\"");
        assert_eq!(quote("\u{a0}"), r#""\u00a0""#);
        assert_eq!(
            quote_to_ascii("\"Fran & Freddie's Diner\t☺\""),
            r#""\"Fran & Freddie's Diner\t\u263a\"""#
        );
        assert_eq!(quote_to_ascii(&go_string("\u{10ffff}")), r#""\U0010ffff""#);
        assert_eq!(quote_to_graphic("\u{a0}\u{3000}"), "\"\u{a0}\u{3000}\"");
        assert_eq!(
            quote_to_graphic(&go_string("\u{ff}\u{10ffff}\u{7}")),
            "\"ÿ\\U0010ffff\\a\""
        );
        assert_eq!(quote_rune('☺'), "'☺'");
        assert_eq!(quote_rune('\''), r"'\''");
        assert_eq!(quote_rune('"'), "'\"'");
        assert_eq!(quote_rune_to_ascii('☺'), r"'\u263a'");
        assert_eq!(quote_rune_to_graphic('\u{2000}'), "'\u{2000}'");
        assert_eq!(quote_rune('\u{2000}'), r"'\u2000'");
    }

    #[test]
    fn raw_bytes_are_hex_escaped() {
        assert_eq!(quote(&go_string_from_bytes(b"h\xc3")), r#""h\xc3""#);
        assert_eq!(quote(&go_string_from_bytes(b"\xff\xfe")), r#""\xff\xfe""#);
        // A real U+FFFD stays as it is.
        assert_eq!(quote("\u{fffd}"), "\"\u{fffd}\"");
        // The bytes of U+10FFFF read as that rune.
        assert_eq!(
            quote(&go_string_from_bytes("\u{10ffff}".as_bytes())),
            r#""\U0010ffff""#
        );
    }

    #[test]
    fn unquote_like_go() {
        assert_eq!(unquote(r#""a\tb""#), Ok("a\tb".into()));
        assert_eq!(
            unquote(r#""\u263a\U0001F600\x41\101""#),
            Ok("☺\u{1F600}AA".into())
        );
        // `\x` escapes are bytes: two of them can make one rune.
        assert_eq!(unquote(r#""\xc3\xa9""#), Ok("é".into()));
        assert_eq!(go_bytes(&unquote(r#""\xff""#).unwrap()).as_ref(), b"\xff");
        assert_eq!(
            go_bytes(&unquote(r#""\U0010ffff""#).unwrap()).as_ref(),
            "\u{10ffff}".as_bytes()
        );
        assert_eq!(
            unquote(&go_string_from_bytes(b"\"\xff\"")),
            Ok("\u{fffd}".into())
        );
        for bad in [
            r#""\'""#,
            r#""\ud800""#,
            r#""\U00110000""#,
            r#""\400""#,
            r#""\x4""#,
            "\"a\nb\"",
            "\"a",
            r#""a"b""#,
            r#""\q""#,
        ] {
            assert_eq!(unquote(bad), Err(SyntaxError), "{bad}");
        }
        assert_eq!(unquote_char(r"\''", '\''), Ok(('\'', "'".into())));
        assert_eq!(unquote_char(r"\xff'", '\''), Ok(('\u{ff}', "'".into())));
        assert_eq!(unquote_char("'", '\''), Err(SyntaxError));
    }

    #[test]
    fn backquote() {
        assert!(can_backquote("abc\tdef ☺"));
        assert!(!can_backquote("a`b"));
        assert!(!can_backquote("a\nb"));
        assert!(!can_backquote("\u{feff}"));
        assert!(!can_backquote("\u{7f}"));
        assert!(!can_backquote(&go_string_from_bytes(b"\xff")));
    }

    proptest::proptest! {
        #[test]
        fn unquote_reads_back_quote(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..48)) {
            let s = go_string_from_bytes(&data);
            proptest::prop_assert_eq!(unquote(&quote(&s)), Ok(s.clone()));
            proptest::prop_assert_eq!(unquote(&quote_to_ascii(&s)), Ok(s.clone()));
            proptest::prop_assert_eq!(unquote(&quote_to_graphic(&s)), Ok(s));
        }

        #[test]
        fn unquote_reads_back_quoted_text(text in "\\PC*") {
            let s = go_string(&text).into_owned();
            proptest::prop_assert_eq!(unquote(&quote(&s)), Ok(s));
        }
    }
}
