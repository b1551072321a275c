//! Go strings in Rust strings, and the UTF-8 check of Helm's YAML reader.
//!
//! Go strings are byte strings: `substr 0 2 "héllo"` yields `h\xc3`, and a
//! template file may hold bytes that are not UTF-8. A Rust `str` cannot
//! hold those, so a byte that is not part of a valid UTF-8 sequence is
//! stored as the private-use character `U+10FF00 + byte`
//! ([`go_string_from_bytes`]); [`go_bytes`] turns such a string back into
//! Go's exact bytes. Rendered output is written through [`go_bytes`] so
//! that these bytes come out raw, and the YAML parsers refuse such text as
//! go-yaml does ([`utf8_error`]).
//!
//! The 128 real runes U+10FF80 to U+10FFFF share that range, so a Go string
//! holds them as the raw bytes of their UTF-8 form: [`go_string_from_bytes`]
//! and [`go_string`] (for text decoded elsewhere, such as a YAML escape)
//! make that form, and [`go_bytes`] and [`decode_runes`] read such a rune
//! back as Go does.
use std::borrow::Cow;

/// First code point of the private-use range that stands for raw bytes.
const RAW_BYTE_BASE: u32 = 0x10_FF00;

/// Builds a Go string from arbitrary bytes: valid UTF-8 stays as is, every
/// other byte becomes the private-use character `U+10FF00 + byte`.
pub fn go_string_from_bytes(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => go_string(s).into_owned(),
        Err(_) => {
            let mut out = String::with_capacity(bytes.len() + 8);
            let mut rest = bytes;
            while !rest.is_empty() {
                match std::str::from_utf8(rest) {
                    Ok(s) => {
                        out.push_str(&go_string(s));
                        break;
                    }
                    Err(e) => {
                        let good = e.valid_up_to();
                        // The prefix is valid by construction.
                        out.push_str(&go_string(
                            std::str::from_utf8(&rest[..good]).unwrap_or_default(),
                        ));
                        let bad = e.error_len().unwrap_or(rest.len() - good).max(1);
                        for &b in &rest[good..good + bad] {
                            out.push(raw_byte_char(b));
                        }
                        rest = &rest[good + bad..];
                    }
                }
            }
            out
        }
    }
}

/// The Go string of valid text `s`: as is, but for the runes U+10FF80 to
/// U+10FFFF, which become the raw bytes of their UTF-8 form (see the
/// module docs).
pub fn go_string(s: &str) -> Cow<'_, str> {
    if !has_raw_bytes(s) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 12);
    let mut buf = [0u8; 4];
    for c in s.chars() {
        if raw_byte_of(c).is_some() {
            out.extend(c.encode_utf8(&mut buf).bytes().map(raw_byte_char));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// [`go_string`] of an owned string, without a copy when it is already one.
pub fn into_go_string(s: String) -> String {
    match go_string(&s) {
        Cow::Borrowed(_) => s,
        Cow::Owned(o) => o,
    }
}

/// The runes of Go bytes as Go's `range` over a string reads them: `Err(b)`
/// for a byte that does not start a valid UTF-8 sequence (Go's
/// `utf8.RuneError` of width 1).
pub fn decode_runes(b: &[u8]) -> impl Iterator<Item = Result<char, u8>> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        let (r, width) = decode_at(b, i)?;
        i += width;
        Some(r)
    })
}

/// Go's `utf8.DecodeRune` of `b[i..]`, with the bytes it reads.
fn decode_at(b: &[u8], i: usize) -> Option<(Result<char, u8>, usize)> {
    let first = *b.get(i)?;
    let width = match first {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    };
    let rune = b
        .get(i..i + width)
        .and_then(|seq| std::str::from_utf8(seq).ok())
        .and_then(|s| s.chars().next());
    Some(match rune {
        Some(c) => (Ok(c), width),
        None => (Err(first), 1),
    })
}

/// The runes of a Go string as Go's `range` reads them: a byte that is not
/// UTF-8 reads as U+FFFD, and U+10FF80..U+10FFFF as themselves.
pub fn runes(s: &str) -> Runes<'_> {
    Runes {
        bytes: go_bytes(s),
        i: 0,
    }
}

/// The iterator of [`runes`].
pub struct Runes<'a> {
    bytes: Cow<'a, [u8]>,
    i: usize,
}

impl Iterator for Runes<'_> {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        let (r, width) = decode_at(&self.bytes, self.i)?;
        self.i += width;
        Some(r.unwrap_or(char::REPLACEMENT_CHARACTER))
    }
}

/// The number of runes Go counts in a Go string
/// (`utf8.RuneCountInString`: a byte that is not UTF-8 counts as one).
pub fn rune_count(s: &str) -> usize {
    if !has_raw_bytes(s) {
        return s.chars().count();
    }
    decode_runes(&go_bytes(s)).count()
}

/// The first `n` runes of a Go string, as Go counts them.
pub fn truncate_runes(s: &str, n: usize) -> Cow<'_, str> {
    if !has_raw_bytes(s) {
        return match s.char_indices().nth(n) {
            Some((end, _)) => Cow::Borrowed(&s[..end]),
            None => Cow::Borrowed(s),
        };
    }
    let bytes = go_bytes(s);
    let mut end = 0;
    for r in decode_runes(&bytes).take(n) {
        end += match r {
            Ok(c) => c.len_utf8(),
            Err(_) => 1,
        };
    }
    Cow::Owned(go_string_from_bytes(&bytes[..end]))
}

fn raw_byte_char(b: u8) -> char {
    char::from_u32(RAW_BYTE_BASE + b as u32).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// If `c` stands for a raw (non-UTF-8) byte, that byte.
pub fn raw_byte_of(c: char) -> Option<u8> {
    let u = c as u32;
    if (RAW_BYTE_BASE + 0x80..=RAW_BYTE_BASE + 0xFF).contains(&u) {
        Some((u - RAW_BYTE_BASE) as u8)
    } else {
        None
    }
}

/// Whether `s` holds a raw-byte character. Every one (U+10FF80 to
/// U+10FFFF) is encoded starting with the byte 0xF4: most strings, and all
/// of a chart's usual output, are done with one vectorized search instead
/// of a decode per char.
fn has_raw_bytes(s: &str) -> bool {
    memchr::memchr(0xF4, s.as_bytes()).is_some() && s.chars().any(|c| raw_byte_of(c).is_some())
}

/// The exact Go bytes of a string (see the module docs on raw bytes).
pub fn go_bytes(s: &str) -> Cow<'_, [u8]> {
    if !has_raw_bytes(s) {
        return Cow::Borrowed(s.as_bytes());
    }
    let mut out = Vec::with_capacity(s.len());
    let mut buf = [0u8; 4];
    for c in s.chars() {
        match raw_byte_of(c) {
            Some(b) => out.push(b),
            None => out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes()),
        }
    }
    Cow::Owned(out)
}

/// The Go string `s` as Go's `encoding/json` reads it: each raw byte
/// becomes U+FFFD (what `json.Marshal`, and so `toJson`, `toYaml` and
/// release records, make of bytes that are not UTF-8).
pub fn to_valid(s: &str) -> Cow<'_, str> {
    if !has_raw_bytes(s) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        decode_runes(&go_bytes(s))
            .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect(),
    )
}

/// The reader error go-yaml gives for the Go string `s` (see
/// [`utf8_error`]), if it holds bytes that are not UTF-8.
pub fn raw_bytes_error(s: &str) -> Option<&'static str> {
    if !has_raw_bytes(s) {
        return None;
    }
    match go_bytes(s) {
        Cow::Borrowed(_) => None,
        Cow::Owned(b) => utf8_error(&b),
    }
}

/// The reader error Helm's YAML parser (go-yaml v2) gives for bytes that
/// are not UTF-8, e.g. `invalid leading UTF-8 octet`; `None` for valid
/// UTF-8 (and for UTF-16 text, which go-yaml detects by its BOM).
/// Where Helm would show U+FFFD, this is an error instead, as in Helm.
pub fn utf8_error(data: &[u8]) -> Option<&'static str> {
    if std::str::from_utf8(data).is_ok()
        || data.starts_with(&[0xFF, 0xFE])
        || data.starts_with(&[0xFE, 0xFF])
    {
        return None;
    }
    let mut i = 0;
    while i < data.len() {
        let b = data[i];
        let width = match b {
            _ if b & 0x80 == 0 => 1,
            _ if b & 0xE0 == 0xC0 => 2,
            _ if b & 0xF0 == 0xE0 => 3,
            _ if b & 0xF8 == 0xF0 => 4,
            _ => return Some("invalid leading UTF-8 octet"),
        };
        if width > data.len() - i {
            return Some("incomplete UTF-8 octet sequence");
        }
        let mut value: u32 = match width {
            1 => u32::from(b & 0x7F),
            2 => u32::from(b & 0x1F),
            3 => u32::from(b & 0x0F),
            _ => u32::from(b & 0x07),
        };
        for &t in &data[i + 1..i + width] {
            if t & 0xC0 != 0x80 {
                return Some("invalid trailing UTF-8 octet");
            }
            value = (value << 6) + u32::from(t & 0x3F);
        }
        let long_enough = match width {
            1 => true,
            2 => value >= 0x80,
            3 => value >= 0x800,
            _ => value >= 0x10000,
        };
        if !long_enough {
            return Some("invalid length of a UTF-8 sequence");
        }
        if (0xD800..=0xDFFF).contains(&value) || value > 0x10FFFF {
            return Some("invalid Unicode character");
        }
        i += width;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runes_of_the_raw_byte_range_are_their_bytes() {
        let text = "a\u{10ffff}\u{10ff80}b";
        let s = go_string_from_bytes(text.as_bytes());
        assert_eq!(go_bytes(&s).as_ref(), text.as_bytes());
        assert_eq!(go_string(text), s);
        assert_eq!(to_valid(&s), text);
        assert_eq!(go_string("plain"), "plain");
    }

    #[test]
    fn runes_as_go_counts_them() {
        let s = go_string_from_bytes(b"a\xffb\xf4\x8f\xbf\xbf\xc3\xa9");
        assert_eq!(rune_count(&s), 5);
        assert_eq!(runes(&s).collect::<String>(), "a\u{fffd}b\u{10ffff}\u{e9}");
        assert_eq!(
            go_bytes(&truncate_runes(&s, 4)).as_ref(),
            b"a\xffb\xf4\x8f\xbf\xbf"
        );
        assert_eq!(truncate_runes("héllo", 2), "hé");
        assert_eq!(rune_count("héllo"), 5);
    }

    #[test]
    fn decode_like_go() {
        let runes: Vec<_> =
            decode_runes(b"a\xc3\xa9\xc3\xff\xf4\x8f\xbf\xbf\xed\xa0\x80").collect();
        assert_eq!(
            runes,
            vec![
                Ok('a'),
                Ok('\u{e9}'),
                Err(0xc3),
                Err(0xff),
                Ok('\u{10ffff}'),
                Err(0xed),
                Err(0xa0),
                Err(0x80)
            ]
        );
        assert_eq!(
            to_valid(&go_string_from_bytes(b"\xf4\x8f")),
            "\u{fffd}\u{fffd}"
        );
    }
}
