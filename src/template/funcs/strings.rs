//! Sprig string functions.
//!
//! Several of them work on bytes in Go (`substr`, `trunc`, `abbrev`,
//! `initials`, `nospace`, `wrap`): they are implemented on the exact Go bytes
//! and can produce strings that are not UTF-8 (see `util`).
use super::util::{
    arg, arg_int, arg_str, err, go_bytes, go_string_from_bytes, map_runes, params, raw_byte_of,
    string_list, strslice, strval,
};
use super::{CallContext, FuncResult, Param, Registry};
use crate::gostd::{gostr, strconv, unicode};
use crate::template::value::{MapKind, Value};
use std::collections::BTreeMap;
use std::rc::Rc;

const RUNE_ERROR: char = char::REPLACEMENT_CHARACTER;

/// The rune Go's UTF-8 decoder reads for a char of a Go string (raw bytes
/// read as U+FFFD).
fn decoded(c: char) -> char {
    if raw_byte_of(c).is_some() {
        RUNE_ERROR
    } else {
        c
    }
}

fn s_ok(s: impl Into<Rc<str>>) -> FuncResult {
    Ok(Value::Str(s.into()))
}

fn bytes_ok(b: &[u8]) -> FuncResult {
    s_ok(go_string_from_bytes(b))
}

/// Go's `strings.SplitN` (`n < 0`: all parts; `n == 0`: none; an empty
/// separator splits after each UTF-8 sequence).
pub fn go_split_n(s: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<char> = s.chars().collect();
        let limit = if n < 0 || n as usize > chars.len() {
            chars.len()
        } else {
            n as usize
        };
        let mut out: Vec<String> = Vec::with_capacity(limit);
        for (i, c) in chars.iter().enumerate() {
            if out.len() + 1 == limit && i < chars.len() {
                out.push(chars[i..].iter().collect());
                break;
            }
            out.push(c.to_string());
        }
        return out;
    }
    if n < 0 {
        s.split(sep).map(str::to_string).collect()
    } else {
        s.splitn(n as usize, sep).map(str::to_string).collect()
    }
}

fn split_map(parts: Vec<String>) -> Value {
    let m: BTreeMap<String, Value> = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| (format!("_{i}"), Value::str(p)))
        .collect();
    Value::Map(Rc::new(std::cell::RefCell::new(m)), MapKind::String)
}

/// Go's `strings.TrimSpace`.
pub fn go_trim_space(s: &str) -> &str {
    s.trim_matches(unicode::is_space)
}

fn trim(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    s_ok(go_trim_space(&arg_str(a, 0)))
}

fn upper(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    s_ok(map_runes(&arg_str(a, 0), unicode::to_upper))
}

fn lower(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    s_ok(map_runes(&arg_str(a, 0), unicode::to_lower))
}

/// Go's `strings.Title` word-boundary rule.
fn is_title_separator(c: char) -> bool {
    if c.is_ascii() {
        return !(c.is_ascii_alphanumeric() || c == '_');
    }
    if unicode::is_letter(c) || unicode::is_digit(c) {
        return false;
    }
    unicode::is_space(c)
}

/// Go's `strings.Title`: the first letter of each word in title case.
pub fn go_title(s: &str) -> String {
    let mut prev = ' ';
    let out: String = gostr::runes(s)
        .map(|c| {
            let out = if is_title_separator(prev) {
                unicode::to_title(c)
            } else {
                c
            };
            prev = c;
            out
        })
        .collect();
    gostr::into_go_string(out)
}

fn title(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    s_ok(go_title(&arg_str(a, 0)))
}

fn untitle(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let s = arg_str(a, 0);
    let mut next = true;
    let out: String = gostr::runes(&s)
        .map(|c| {
            if unicode::is_space(c) {
                next = true;
                c
            } else if next {
                next = false;
                unicode::to_lower(c)
            } else {
                c
            }
        })
        .collect();
    s_ok(gostr::into_go_string(out))
}

/// Go's message for a failed string slice expression `s[lo:hi]`.
fn slice_panic(lo: Option<i64>, hi: Option<i64>, len: usize) -> super::FuncError {
    let msg = match (lo, hi) {
        (None, Some(h)) if h >= 0 => {
            format!("runtime error: slice bounds out of range [:{h}] with length {len}")
        }
        (None, Some(h)) => format!("runtime error: slice bounds out of range [:{h}]"),
        (Some(l), None) if l < 0 => format!("runtime error: slice bounds out of range [{l}:]"),
        (Some(l), None) => format!("runtime error: slice bounds out of range [{l}:{len}]"),
        (Some(l), Some(h)) => format!("runtime error: slice bounds out of range [{l}:{h}]"),
        (None, None) => "runtime error: slice bounds out of range".to_string(),
    };
    err(msg)
}

fn substr(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let start = arg_int(a, 0);
    let end = arg_int(a, 1);
    let s = arg_str(a, 2);
    let b = go_bytes(&s);
    let len = b.len() as i64;
    if start < 0 {
        if end < 0 || end > len {
            return Err(slice_panic(None, Some(end), b.len()));
        }
        return bytes_ok(&b[..end as usize]);
    }
    if end < 0 || end > len {
        if start > len {
            return Err(slice_panic(Some(start), None, b.len()));
        }
        return bytes_ok(&b[start as usize..]);
    }
    if start > end {
        return Err(slice_panic(Some(start), Some(end), b.len()));
    }
    bytes_ok(&b[start as usize..end as usize])
}

fn trunc(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let c = arg_int(a, 0);
    let s = arg_str(a, 1);
    let b = go_bytes(&s);
    let len = b.len() as i64;
    if c < 0 && len + c > 0 {
        return bytes_ok(&b[(len + c) as usize..]);
    }
    if c >= 0 && len > c {
        return bytes_ok(&b[..c as usize]);
    }
    s_ok(s.as_ref())
}

/// goutils `AbbreviateFull` on bytes; `None` where it returns an error.
fn abbreviate_full(b: &[u8], offset: i64, max_width: i64) -> Option<Vec<u8>> {
    if b.is_empty() {
        return Some(Vec::new());
    }
    if max_width < 4 {
        return None;
    }
    let len = b.len() as i64;
    if len <= max_width {
        return Some(b.to_vec());
    }
    let mut offset = offset.min(len);
    if len - offset < max_width - 3 {
        offset = len - (max_width - 3);
    }
    if offset <= 4 {
        let mut out = b[..(max_width - 3) as usize].to_vec();
        out.extend_from_slice(b"...");
        return Some(out);
    }
    if max_width < 7 {
        return None;
    }
    let mut out = b"...".to_vec();
    if offset + max_width - 3 < len {
        out.extend(abbreviate_full(&b[offset as usize..], 0, max_width - 3)?);
    } else {
        out.extend_from_slice(&b[(len - (max_width - 3)) as usize..]);
    }
    Some(out)
}

fn abbrev(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let width = arg_int(a, 0);
    let s = arg_str(a, 1);
    if width < 4 {
        return s_ok(s.as_ref());
    }
    bytes_ok(&abbreviate_full(&go_bytes(&s), 0, width).unwrap_or_default())
}

fn abbrevboth(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let left = arg_int(a, 0);
    let right = arg_int(a, 1);
    let s = arg_str(a, 2);
    if right < 4 || (left > 0 && right < 7) {
        return s_ok(s.as_ref());
    }
    bytes_ok(&abbreviate_full(&go_bytes(&s), left, right).unwrap_or_default())
}

fn repeat(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let n = arg_int(a, 0);
    let s = arg_str(a, 1);
    if n < 0 {
        return Err(err("strings: negative Repeat count"));
    }
    let total = (s.len() as u128) * (n as u128);
    super::check_size(ctx, total)?;
    if total > (1u128 << 31) {
        return Err(err("strings: Repeat output length overflow"));
    }
    s_ok(s.repeat(n as usize))
}

fn trim_all(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let cutset: Vec<char> = arg_str(a, 0).chars().collect();
    let s = arg_str(a, 1);
    s_ok(s.trim_matches(|c| cutset.contains(&c)))
}

fn trim_suffix(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let suf = arg_str(a, 0);
    let s = arg_str(a, 1);
    s_ok(s.strip_suffix(suf.as_ref()).unwrap_or(&s))
}

fn trim_prefix(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let pre = arg_str(a, 0);
    let s = arg_str(a, 1);
    s_ok(s.strip_prefix(pre.as_ref()).unwrap_or(&s))
}

/// goutils `DeleteWhiteSpace`: works byte by byte, each byte read as the
/// rune of the same value (so non-ASCII text is re-encoded as Latin-1
/// whenever a space was removed).
fn nospace(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let s = arg_str(a, 0);
    let b = go_bytes(&s);
    let mut out = String::new();
    let mut count = 0;
    for &x in b.iter() {
        let c = char::from(x);
        if !unicode::is_space(c) {
            out.push(c);
            count += 1;
        }
    }
    if count == b.len() {
        return s_ok(s.as_ref());
    }
    s_ok(out)
}

/// goutils `Initials`: byte by byte, each byte read as a rune.
fn initials(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let s = arg_str(a, 0);
    let mut out = String::new();
    let mut gap = true;
    for &x in go_bytes(&s).iter() {
        let c = char::from(x);
        if unicode::is_space(c) {
            gap = true;
        } else if gap {
            out.push(c);
            gap = false;
        }
    }
    s_ok(out)
}

/// goutils `SwapCase`: upper and title to lower, lower to title after a
/// space (or at the start) and to upper elsewhere.
fn swapcase(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let s = arg_str(a, 0);
    let mut ws = true;
    let out: String = gostr::runes(&s)
        .map(|c| {
            if unicode::is_upper(c) || unicode::is_title(c) {
                ws = false;
                unicode::to_lower(c)
            } else if unicode::is_lower(c) {
                if ws {
                    ws = false;
                    unicode::to_title(c)
                } else {
                    unicode::to_upper(c)
                }
            } else {
                ws = unicode::is_space(c);
                c
            }
        })
        .collect();
    s_ok(gostr::into_go_string(out))
}

fn is_connector(c: char) -> bool {
    c == '-' || c == '_' || unicode::is_space(c)
}

/// Letters that are not CJK ideographs (xstrings `isAlphabet`).
fn is_alphabet(c: char) -> bool {
    if !unicode::is_letter(c) {
        return false;
    }
    let u = c as u32;
    !((0x4E00..=0x9FCC).contains(&u)
        || (0x3400..=0x4D85).contains(&u)
        || (0x20000..=0x2B81D).contains(&u))
}

/// xstrings `ToPascalCase` (v1.5.0), which Sprig's `camelcase` calls.
pub fn pascal_case(s: &str) -> String {
    let chars: Vec<char> = s.chars().map(decoded).collect();
    if chars.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let mut i = 0;
    let mut r0 = RUNE_ERROR;
    let mut first_upper = false;
    while i < chars.len() {
        r0 = chars[i];
        i += 1;
        if !is_connector(r0) {
            first_upper = unicode::is_upper(r0);
            r0 = unicode::to_upper(r0);
            break;
        }
        out.push(r0);
    }
    if i >= chars.len() {
        out.push(r0);
        return out;
    }
    while i < chars.len() {
        let r1 = r0;
        r0 = chars[i];
        i += 1;
        if is_connector(r0) && is_connector(r1) {
            out.push(r1);
            continue;
        }
        if is_connector(r1) {
            first_upper = unicode::is_upper(r0);
            r0 = unicode::to_upper(r0);
        } else {
            if first_upper {
                if unicode::is_upper(r0) {
                    r0 = unicode::to_lower(r0);
                } else {
                    first_upper = false;
                }
            }
            out.push(r1);
        }
    }
    out.push(r0);
    out
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Wt {
    Invalid,
    Number,
    Upper,
    Alpha,
    Connector,
    Punct,
    Other,
}

/// Reads the next decodable rune from `pos`, skipping U+FFFD and raw bytes;
/// returns it and how many runes were consumed (`prev` when none is left).
fn next_valid(ch: &[char], pos: usize, prev: char) -> (char, usize) {
    let mut size = 0;
    for &c in &ch[pos.min(ch.len())..] {
        size += 1;
        if decoded(c) != RUNE_ERROR {
            return (c, size);
        }
    }
    (prev, size)
}

/// xstrings `nextWord`: the type of the word at `pos`, where it ends and
/// where the rest starts.
fn next_word(ch: &[char], pos: usize) -> (Wt, usize, usize) {
    let n = ch.len();
    if pos >= n {
        return (Wt::Invalid, pos, pos);
    }
    let (mut r, mut size) = next_valid(ch, pos, RUNE_ERROR);
    let mut offset = size;
    let mut rem = pos;
    if r == RUNE_ERROR {
        return (Wt::Invalid, pos + offset, pos + offset);
    }
    let wt;
    if is_connector(r) || unicode::is_punct(r) {
        let conn = is_connector(r);
        wt = if conn { Wt::Connector } else { Wt::Punct };
        rem += size;
        while rem < n {
            (r, size) = next_valid(ch, rem, r);
            let same = if conn {
                is_connector(r)
            } else {
                unicode::is_punct(r)
            };
            if !same {
                break;
            }
            offset += size;
            rem += size;
        }
    } else if unicode::is_upper(r) {
        wt = Wt::Upper;
        rem += size;
        if rem < n {
            (r, size) = next_valid(ch, rem, r);
            if unicode::is_upper(r) {
                let mut prev_size = size;
                offset += size;
                rem += size;
                while rem < n {
                    (r, size) = next_valid(ch, rem, r);
                    if !unicode::is_upper(r) {
                        break;
                    }
                    prev_size = size;
                    offset += size;
                    rem += size;
                }
                if rem < n && is_alphabet(r) {
                    offset -= prev_size;
                    rem = pos + offset;
                }
            } else if is_alphabet(r) {
                offset += size;
                rem += size;
                while rem < n {
                    (r, size) = next_valid(ch, rem, r);
                    if !is_alphabet(r) || unicode::is_upper(r) {
                        break;
                    }
                    offset += size;
                    rem += size;
                }
            }
        }
    } else if is_alphabet(r) {
        wt = Wt::Alpha;
        rem += size;
        while rem < n {
            (r, size) = next_valid(ch, rem, r);
            if !is_alphabet(r) || unicode::is_upper(r) {
                break;
            }
            offset += size;
            rem += size;
        }
    } else if unicode::is_number(r) {
        wt = Wt::Number;
        rem += size;
        while rem < n {
            (r, size) = next_valid(ch, rem, r);
            if !unicode::is_number(r) {
                break;
            }
            offset += size;
            rem += size;
        }
    } else {
        wt = Wt::Other;
        rem += size;
        while rem < n {
            (r, size) = next_valid(ch, rem, r);
            if size == 0
                || is_connector(r)
                || is_alphabet(r)
                || unicode::is_number(r)
                || unicode::is_punct(r)
            {
                break;
            }
            offset += size;
            rem += size;
        }
    }
    (wt, pos + offset, rem)
}

/// Words other than upper-case and connector words are copied byte for byte
/// (raw bytes stay raw); the others are re-encoded rune by rune.
fn to_lower_word(out: &mut String, wt: Wt, word: &[char], conn: char) {
    if wt != Wt::Upper && wt != Wt::Connector {
        out.extend(word.iter());
        return;
    }
    for c in word.iter().map(|&c| decoded(c)) {
        if is_connector(c) {
            out.push(conn);
        } else if unicode::is_upper(c) {
            out.push(unicode::to_lower(c));
        } else {
            out.push(c);
        }
    }
}

/// xstrings `camelCaseToLowerCase` (`snakecase` with `_`, `kebabcase` with `-`).
pub fn camel_to_lower(s: &str, conn: char) -> String {
    let ch: Vec<char> = s.chars().collect();
    let n = ch.len();
    if n == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut start = 0;
    let (mut wt, mut wend, mut rem) = next_word(&ch, 0);
    macro_rules! advance {
        () => {{
            start = rem;
            let r = next_word(&ch, rem);
            wt = r.0;
            wend = r.1;
            rem = r.2;
        }};
    }
    while rem < n {
        if wt != Wt::Connector {
            to_lower_word(&mut out, wt, &ch[start..wend], conn);
        }
        let prev = wt;
        let last = (start, wend);
        advance!();
        match prev {
            Wt::Number => {
                while wt == Wt::Alpha || wt == Wt::Number {
                    to_lower_word(&mut out, wt, &ch[start..wend], conn);
                    advance!();
                }
                if !matches!(wt, Wt::Invalid | Wt::Punct | Wt::Connector) {
                    out.push(conn);
                }
            }
            Wt::Connector => to_lower_word(&mut out, prev, &ch[last.0..last.1], conn),
            Wt::Punct => {}
            _ => {
                if wt != Wt::Number {
                    if !matches!(wt, Wt::Connector | Wt::Punct) {
                        out.push(conn);
                    }
                    continue;
                }
                if rem >= n {
                    continue;
                }
                let num = (start, wend);
                advance!();
                if wt != Wt::Alpha {
                    to_lower_word(&mut out, Wt::Number, &ch[num.0..num.1], conn);
                    if !matches!(wt, Wt::Connector | Wt::Punct) {
                        out.push(conn);
                    }
                    continue;
                }
                out.push(conn);
                to_lower_word(&mut out, Wt::Number, &ch[num.0..num.1], conn);
                while wt == Wt::Alpha || wt == Wt::Number {
                    to_lower_word(&mut out, wt, &ch[start..wend], conn);
                    advance!();
                }
                if !matches!(wt, Wt::Invalid | Wt::Connector | Wt::Punct) {
                    out.push(conn);
                }
            }
        }
    }
    to_lower_word(&mut out, wt, &ch[start.min(n)..wend.min(n)], conn);
    out
}

fn snakecase(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    s_ok(camel_to_lower(&arg_str(a, 0), '_'))
}

fn kebabcase(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    s_ok(camel_to_lower(&arg_str(a, 0), '-'))
}

fn camelcase(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    s_ok(pascal_case(&arg_str(a, 0)))
}

/// goutils `WrapCustom` on bytes.
fn wrap_custom(s: &str, width: i64, nl: &str, long_words: bool) -> Vec<u8> {
    let b = go_bytes(s);
    if b.is_empty() {
        return Vec::new();
    }
    let nl = if nl.is_empty() { "\n" } else { nl };
    let nlb = go_bytes(nl);
    let w = width.max(1) as usize;
    let len = b.len();
    let mut offset = 0usize;
    let mut out = Vec::with_capacity(len + 8);
    while len - offset > w {
        if b[offset] == b' ' {
            offset += 1;
            continue;
        }
        let end = w + offset + 1;
        let last_space = b[offset..end].iter().rposition(|&x| x == b' ');
        if let Some(sp) = last_space {
            let at = sp + offset;
            out.extend_from_slice(&b[offset..at]);
            out.extend_from_slice(&nlb);
            offset = at + 1;
        } else if long_words {
            let end = w + offset;
            out.extend_from_slice(&b[offset..end]);
            out.extend_from_slice(&nlb);
            offset += w;
        } else {
            let end = w + offset;
            match b[end..].iter().position(|&x| x == b' ') {
                None => {
                    out.extend_from_slice(&b[offset..]);
                    offset = len;
                }
                Some(idx) => {
                    let at = idx + end;
                    out.extend_from_slice(&b[offset..at]);
                    out.extend_from_slice(&nlb);
                    offset = at + 1;
                }
            }
        }
    }
    out.extend_from_slice(&b[offset..]);
    out
}

fn wrap(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    bytes_ok(&wrap_custom(&arg_str(a, 1), arg_int(a, 0), "", false))
}

fn wrap_with(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    // A break goes at a space, or inside a word once per `width` bytes.
    let (s, nl) = (arg_str(a, 2), arg_str(a, 1));
    let spaces = s.bytes().filter(|&b| b == b' ').count() as u128;
    let breaks = spaces + s.len() as u128 / arg_int(a, 0).max(1) as u128 + 1;
    super::check_size(ctx, s.len() as u128 + breaks * nl.len() as u128)?;
    bytes_ok(&wrap_custom(
        &arg_str(a, 2),
        arg_int(a, 0),
        &arg_str(a, 1),
        true,
    ))
}

fn contains(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::Bool(arg_str(a, 1).contains(arg_str(a, 0).as_ref())))
}

fn has_prefix(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::Bool(
        arg_str(a, 1).starts_with(arg_str(a, 0).as_ref()),
    ))
}

fn has_suffix(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(Value::Bool(arg_str(a, 1).ends_with(arg_str(a, 0).as_ref())))
}

fn quote(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    super::check_args_size(ctx, a)?;
    let parts: Vec<String> = a
        .iter()
        .filter(|v| !matches!(v, Value::Nil))
        .map(|v| strconv::quote(&strval(v)))
        .collect();
    s_ok(parts.join(" "))
}

fn squote(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    super::check_args_size(ctx, a)?;
    let parts: Vec<String> = a
        .iter()
        .filter(|v| !matches!(v, Value::Nil))
        .map(|v| format!("'{v}'"))
        .collect();
    s_ok(parts.join(" "))
}

fn cat(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    super::check_args_size(ctx, a)?;
    let parts: Vec<String> = a
        .iter()
        .filter(|v| !matches!(v, Value::Nil))
        .map(|v| v.to_string())
        .collect();
    s_ok(parts.join(" "))
}

/// Sprig's `indent`: pads the start and every line after a newline
/// (a negative count is `strings.Repeat`'s panic).
pub fn indent_str(spaces: i64, s: &str) -> Result<String, super::FuncError> {
    if spaces < 0 {
        return Err(err("strings: negative Repeat count"));
    }
    let pad = " ".repeat(spaces as usize);
    let mut out = pad.clone();
    out.push_str(&s.replace('\n', &format!("\n{pad}")));
    Ok(out)
}

/// The size `indent_str(spaces, s)` would have, checked against the cap.
fn check_indent(ctx: &dyn CallContext, spaces: i64, s: &str) -> Result<(), super::FuncError> {
    let lines = s.bytes().filter(|&b| b == b'\n').count() as u128 + 1;
    super::check_size(ctx, s.len() as u128 + 1 + lines * spaces.max(0) as u128)
}

fn indent(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let s = arg_str(a, 1);
    check_indent(ctx, arg_int(a, 0), &s)?;
    s_ok(indent_str(arg_int(a, 0), &s)?)
}

fn nindent(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let s = arg_str(a, 1);
    check_indent(ctx, arg_int(a, 0), &s)?;
    s_ok(format!("\n{}", indent_str(arg_int(a, 0), &s)?))
}

fn replace(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let old = arg_str(a, 0);
    let new = arg_str(a, 1);
    let src = arg_str(a, 2);
    if new.len() > old.len() {
        // Go's Replace with an empty `old` inserts at every rune boundary.
        let n = if old.is_empty() {
            src.chars().count() as u128 + 1
        } else {
            src.matches(old.as_ref()).count() as u128
        };
        super::check_size(ctx, src.len() as u128 + n * (new.len() - old.len()) as u128)?;
    }
    s_ok(src.replace(old.as_ref(), &new))
}

fn plural(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    if arg_int(a, 2) == 1 {
        Ok(arg(a, 0))
    } else {
        Ok(arg(a, 1))
    }
}

fn split(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(split_map(go_split_n(&arg_str(a, 1), &arg_str(a, 0), -1)))
}

fn splitn(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(split_map(go_split_n(
        &arg_str(a, 2),
        &arg_str(a, 0),
        arg_int(a, 1),
    )))
}

fn split_list(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    Ok(string_list(go_split_n(&arg_str(a, 1), &arg_str(a, 0), -1)))
}

fn join(ctx: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let list = arg(a, 1);
    let sep = arg_str(a, 0);
    let max = ctx.max_value_bytes() as u128;
    let items = match &list {
        Value::List(l, _) => l.len() as u128,
        _ => 1,
    };
    super::check_size(
        ctx,
        super::value_bytes(&list, max) + items * sep.len() as u128,
    )?;
    s_ok(strslice(&list).join(&sep))
}

fn sort_alpha(_: &mut dyn CallContext, a: &[Value]) -> FuncResult {
    let v = arg(a, 0);
    match v {
        Value::List(..) | Value::Bytes(_) => {
            let mut items = strslice(&v);
            items.sort_by(|x, y| go_bytes(x).cmp(&go_bytes(y)));
            Ok(string_list(items))
        }
        other => Ok(string_list(vec![strval(&other)])),
    }
}

/// Adds this family's functions to the registry.
pub fn register(r: &mut Registry) {
    use params::{IS, S, SS, SSS};
    r.add("abbrev", IS, None, abbrev);
    r.add(
        "abbrevboth",
        &[Param::Int, Param::Int, Param::String],
        None,
        abbrevboth,
    );
    r.add("trunc", IS, None, trunc);
    r.add("trim", S, None, trim);
    r.add("upper", S, None, upper);
    r.add("lower", S, None, lower);
    r.add("title", S, None, title);
    r.add("untitle", S, None, untitle);
    r.add(
        "substr",
        &[Param::Int, Param::Int, Param::String],
        None,
        substr,
    );
    r.add("repeat", IS, None, repeat);
    r.add("trimall", SS, None, trim_all);
    r.add("trimAll", SS, None, trim_all);
    r.add("trimSuffix", SS, None, trim_suffix);
    r.add("trimPrefix", SS, None, trim_prefix);
    r.add("nospace", S, None, nospace);
    r.add("initials", S, None, initials);
    r.add("swapcase", S, None, swapcase);
    r.add("snakecase", S, None, snakecase);
    r.add("camelcase", S, None, camelcase);
    r.add("kebabcase", S, None, kebabcase);
    r.add("wrap", IS, None, wrap);
    r.add(
        "wrapWith",
        &[Param::Int, Param::String, Param::String],
        None,
        wrap_with,
    );
    r.add("contains", SS, None, contains);
    r.add("hasPrefix", SS, None, has_prefix);
    r.add("hasSuffix", SS, None, has_suffix);
    r.add("quote", params::NONE, Some(Param::Any), quote);
    r.add("squote", params::NONE, Some(Param::Any), squote);
    r.add("cat", params::NONE, Some(Param::Any), cat);
    r.add("indent", IS, None, indent);
    r.add("nindent", IS, None, nindent);
    r.add("replace", SSS, None, replace);
    r.add(
        "plural",
        &[Param::String, Param::String, Param::Int],
        None,
        plural,
    );
    r.add("split", SS, None, split);
    r.add("splitList", SS, None, split_list);
    r.add(
        "splitn",
        &[Param::String, Param::Int, Param::String],
        None,
        splitn,
    );
    r.add("join", &[Param::String, Param::Any], None, join);
    r.add("sortAlpha", params::A, None, sort_alpha);
}

#[cfg(test)]
mod tests {
    use super::super::util::testctx::*;
    use super::*;

    fn show(name: &str, args: &[Value]) -> String {
        super::super::util::testctx::show(register, name, args)
    }

    #[test]
    fn trims() {
        assert_eq!(show("trim", &[s("  a b \n")]), "a b");
        assert_eq!(show("trimAll", &[s("$"), s("$$5.00$")]), "5.00");
        assert_eq!(show("trimall", &[s("ab"), s("abxba")]), "x");
        assert_eq!(show("trimPrefix", &[s("-"), s("--x")]), "-x");
        assert_eq!(show("trimSuffix", &[s("-"), s("x--")]), "x-");
        assert_eq!(show("trim", &[s("\u{a0}\u{2003}x\u{3000}")]), "x");
    }

    #[test]
    fn titles() {
        assert_eq!(
            show("title", &[s("hello wORLD-foo bar_baz 1st")]),
            "Hello WORLD-Foo Bar_baz 1st"
        );
        assert_eq!(
            show("title", &[s("don't stop o'neil")]),
            "Don'T Stop O'Neil"
        );
        assert_eq!(show("untitle", &[s("Hello World")]), "hello world");
        assert_eq!(show("swapcase", &[s("Hello World ÉÀ")]), "hELLO wORLD éà");
    }

    #[test]
    fn byte_cuts() {
        assert_eq!(show("substr", &[i(0), i(3), s("hello")]), "hel");
        assert_eq!(show("substr", &[i(2), i(-1), s("hello")]), "llo");
        assert_eq!(show("substr", &[i(-1), i(2), s("hello")]), "he");
        assert_eq!(show("substr", &[i(1), i(99), s("hello")]), "ello");
        assert_eq!(show("substr", &[i(5), i(9), s("hello")]), "");
        assert_eq!(
            show("substr", &[i(4), i(2), s("hello")]),
            "ERR: runtime error: slice bounds out of range [4:2]"
        );
        let cut = call(register, "substr", &[i(0), i(2), s("héllo")]).unwrap();
        if let Value::Str(x) = cut {
            assert_eq!(go_bytes(&x).as_ref(), b"h\xc3");
        } else {
            panic!("not a string");
        }
        assert_eq!(show("trunc", &[i(3), s("hello")]), "hel");
        assert_eq!(show("trunc", &[i(-3), s("hello")]), "llo");
        assert_eq!(show("trunc", &[i(10), s("hi")]), "hi");
        assert_eq!(show("trunc", &[i(-10), s("hi")]), "hi");
        assert_eq!(show("trunc", &[i(0), s("hi")]), "");
        assert_eq!(show("initials", &[s("élan")]), "Ã");
        assert_eq!(show("initials", &[s("hello big world")]), "hbw");
    }

    #[test]
    fn cases() {
        assert_eq!(show("camelcase", &[s("hello_world")]), "HelloWorld");
        assert_eq!(show("camelcase", &[s("hello-world foo")]), "HelloWorldFoo");
        assert_eq!(show("camelcase", &[s("http_server")]), "HttpServer");
        assert_eq!(show("camelcase", &[s("_leading")]), "_Leading");
        assert_eq!(show("camelcase", &[s("GOLANG_IS_GREAT")]), "GolangIsGreat");
        assert_eq!(show("kebabcase", &[s("HelloWorld")]), "hello-world");
        assert_eq!(show("kebabcase", &[s("hello_world")]), "hello-world");
        assert_eq!(show("kebabcase", &[s("HTTPServer")]), "http-server");
        assert_eq!(show("snakecase", &[s("FirstName")]), "first_name");
        assert_eq!(show("snakecase", &[s("NoHTTPS")]), "no_https");
        assert_eq!(show("snakecase", &[s("GO PATH")]), "go_path");
        assert_eq!(show("snakecase", &[s("http2xx")]), "http_2xx");
        assert_eq!(show("snakecase", &[s("HTTP20xOK")]), "http_20x_ok");
        assert_eq!(show("snakecase", &[s("Duration2m3s")]), "duration_2m3s");
        assert_eq!(show("snakecase", &[s("Bld4Floor3rd")]), "bld4_floor_3rd");
        // Checked against Helm 3.17: the lone connector is written twice.
        assert_eq!(show("camelcase", &[s("_")]), "__");
        assert_eq!(show("snakecase", &[s("ABC123def")]), "abc_123def");
        assert_eq!(show("kebabcase", &[s("a.b-c d__e")]), "a.b-c-d--e");
        assert_eq!(show("swapcase", &[s("hELLO world")]), "Hello WORLD");
        assert_eq!(show("untitle", &[s("Hello WORLD")]), "hello wORLD");
        assert_eq!(
            show("wrapWith", &[i(3), s("-"), s("abcdefgh")]),
            "abc-def-gh"
        );
    }

    #[test]
    fn wraps_and_misc() {
        assert_eq!(
            show("wrap", &[i(5), s("hello world foo bar")]),
            "hello\nworld\nfoo\nbar"
        );
        assert_eq!(
            show("wrapWith", &[i(5), s("\t"), s("Hello World")]),
            "Hello\tWorld"
        );
        assert_eq!(show("indent", &[i(2), s("a\nb\n")]), "  a\n  b\n  ");
        assert_eq!(show("nindent", &[i(2), s("x")]), "\n  x");
        assert_eq!(show("plural", &[s("one"), s("many"), i(1)]), "one");
        assert_eq!(show("plural", &[s("one"), s("many"), i(0)]), "many");
        assert_eq!(
            show("cat", &[s("a"), i(1), s("b"), Value::Nil, f(2.5)]),
            "a 1 b 2.5"
        );
        assert_eq!(
            show("quote", &[f(1e6), Value::Nil, s("a\"b")]),
            "\"1e+06\" \"a\\\"b\""
        );
        assert_eq!(show("squote", &[s("a"), i(2)]), "'a' '2'");
        assert_eq!(show("contains", &[s("cat"), s("catch")]), "true");
        assert_eq!(show("contains", &[s("catch"), s("cat")]), "false");
        assert_eq!(show("abbrev", &[i(5), s("hello world")]), "he...");
        assert_eq!(
            show("abbrevboth", &[i(5), i(10), s("1234 5678 9123")]),
            "...5678..."
        );
        assert_eq!(show("nospace", &[s("h e l l o")]), "hello");
        assert_eq!(show("repeat", &[i(3), s("ab")]), "ababab");
    }

    #[test]
    fn splits_joins() {
        assert_eq!(show("splitList", &[s(","), s("a,b,,c")]), "[a b  c]");
        assert_eq!(show("splitList", &[s(","), s("")]), "[]");
        assert_eq!(show("split", &[s("/"), s("foo/bar")]), "map[_0:foo _1:bar]");
        assert_eq!(
            show("splitn", &[s("/"), i(2), s("a/b/c")]),
            "map[_0:a _1:b/c]"
        );
        assert_eq!(show("splitList", &[s(""), s("abc")]), "[a b c]");
        assert_eq!(
            show(
                "join",
                &[
                    s(","),
                    l(vec![s("a"), i(1), f(2.5), Value::Nil, Value::Bool(true)])
                ]
            ),
            "a,1,2.5,true"
        );
        assert_eq!(
            show(
                "sortAlpha",
                &[l(vec![s("b"), s("A"), s("a"), s("10"), s("9")])]
            ),
            "[10 9 A a b]"
        );
        assert_eq!(show("sortAlpha", &[Value::Nil]), "[<nil>]");
    }
}
