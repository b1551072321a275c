//! A line-by-line recognizer for the plain block YAML that rendered
//! manifests nearly always are, so that reading a manifest's head does not
//! have to run the full event parser over the whole document.
//!
//! [`plain_root_entries`] accepts a deliberately small subset of YAML in
//! which every document is surely well-formed for libyaml and decodes
//! without error for sigs.k8s.io/yaml: a root block mapping at column 0;
//! nested block mappings and sequences (including `- key: value` items and
//! sequences at their key's indentation); keys of letters, digits and
//! `_ . - /` that resolve to strings; values that are single-line plain
//! scalars (no `: `, no trailing `:`, no `.inf`/`.nan`), single-line quoted
//! scalars (double-quoted with a few escapes only), `|`/`>` block scalars
//! without an explicit indentation, or the empty `{}` and `[]`; comments and
//! blank lines anywhere a block structure allows them. Anything else (flow
//! collections, anchors, aliases, tags, multi-line plain or quoted
//! scalars, tabs outside block scalar text, non-ASCII text, document
//! markers, indentation between two levels, ...) gets `None`, and the
//! caller uses the full parser, which reports errors exactly as Helm does.
//! Accepting is what must be right; refusing is always safe.
//!
//! [`decode_plain`] builds the value of such a document directly (values
//! files, `fromYaml`, a manifest's kept head entries), for the forms whose
//! meaning is simple to get right; it too leaves the rest to the full
//! parser.

use super::parse::{maybe_non_finite, plain_node};
use super::resolve::{resolve_plain, starts_string, Scalar};
use super::Node;
use crate::gostd::gostr::into_go_string;
use std::collections::BTreeMap;

/// A root-mapping entry: its key and the byte range of its text (from the
/// key's line up to the next root entry, trailing comments included).
pub(crate) struct RootEntry<'a> {
    pub key: &'a str,
    pub span: std::ops::Range<usize>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Map,
    Seq,
}

/// Nesting deeper than this is left to the full parser (which enforces
/// yaml.v2's depth limit with its error).
const MAX_STACK: usize = 64;

/// libyaml refuses a simple key longer than 1024 characters.
const MAX_KEY: usize = 1000;

/// What the previous content line left open.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    /// Nothing: the next line must sit at an indentation already open.
    Closed,
    /// `key:` with nothing after it: a nested block may follow, indented
    /// more, or a sequence at the key's own indentation.
    MapValue,
    /// `-` with nothing after it: a nested block may follow, indented more.
    SeqItem,
}

/// The root mapping's entries when `text` is one document of the subset
/// described in the module docs, else `None`.
pub(crate) fn plain_root_entries(text: &str) -> Option<Vec<RootEntry<'_>>> {
    let b = text.as_bytes();
    if has_special_characters(text) {
        return None;
    }
    // An explicit document start on the first content line.
    let mut started = false;
    let any_tab = memchr::memchr(b'\t', b).is_some();
    let mut stack: Vec<(Kind, usize)> = Vec::with_capacity(16);
    let mut open = Open::Closed;
    let mut entries: Vec<RootEntry<'_>> = Vec::new();
    let mut pos = 0;
    while pos < b.len() {
        let end = memchr::memchr(b'\n', &b[pos..]).map_or(b.len(), |i| pos + i);
        let line = &b[pos..end];
        let next = end + 1;
        let ind = line.iter().take_while(|&&c| c == b' ').count();
        let rest = &line[ind..];
        if any_tab && rest.contains(&b'\t') && !rest.starts_with(b"#") {
            return None;
        }
        if rest.is_empty() || rest[0] == b'#' {
            pos = next;
            continue;
        }
        if ind == 0 && (rest.starts_with(b"---") || rest.starts_with(b"...")) {
            if rest.starts_with(b"---") && stack.is_empty() && !started && trailer(&rest[3..]) {
                started = true;
                pos = next;
                continue;
            }
            return None;
        }
        let dash = is_dash(rest);
        // Place the line in the structure.
        if stack.is_empty() {
            if ind != 0 || dash {
                return None;
            }
            stack.push((Kind::Map, 0));
        } else {
            let (_, top) = *stack.last()?;
            match open {
                Open::MapValue | Open::SeqItem if ind > top => {
                    if dash {
                        stack.push((Kind::Seq, ind));
                    } else if key_at(rest).is_some() {
                        stack.push((Kind::Map, ind));
                    } else {
                        // The open value is a scalar (or `{}`) on its own line.
                        open = Open::Closed;
                        pos = finish(b, value(rest, false)?, next, top)?;
                        continue;
                    }
                }
                Open::MapValue if ind == top && dash => stack.push((Kind::Seq, ind)),
                _ => {}
            }
            if stack.len() > MAX_STACK {
                return None;
            }
            while stack.last().is_some_and(|&(_, i)| i > ind) {
                stack.pop();
            }
            let &(kind, top) = stack.last()?;
            if top != ind {
                return None;
            }
            if kind == Kind::Seq && !dash {
                // The sequence at a key's indentation ends here.
                stack.pop();
                if stack.last() != Some(&(Kind::Map, ind)) {
                    return None;
                }
            } else if kind == Kind::Map && dash {
                return None;
            }
        }
        open = Open::Closed;
        let &(kind, indent) = stack.last()?;
        let after = match kind {
            Kind::Map => {
                let (key, value_at) = key_at(rest)?;
                if stack.len() == 1 {
                    if let Some(last) = entries.last_mut() {
                        last.span.end = pos;
                    }
                    // A slice of `text` cut at ASCII bytes: valid UTF-8.
                    let key = std::str::from_utf8(key).ok()?;
                    entries.push(RootEntry {
                        key,
                        span: pos..b.len(),
                    });
                }
                value(&rest[value_at..], true)?
            }
            Kind::Seq => {
                // `-` then blanks, then the item (or nothing).
                let body = &rest[1..];
                let skip = body.iter().take_while(|&&c| c == b' ').count();
                let body = &body[skip..];
                if body.is_empty() || body[0] == b'#' {
                    Value::Open(Open::SeqItem)
                } else if is_dash(body) {
                    return None;
                } else if let Some((_, value_at)) = key_at(body) {
                    // `- key: value`: a mapping at the key's column.
                    let col = indent + 1 + skip;
                    stack.push((Kind::Map, col));
                    value(&body[value_at..], true)?
                } else {
                    value(body, false)?
                }
            }
        };
        if let Value::Open(o) = after {
            open = o;
        }
        pos = finish(b, after, next, stack.last()?.1)?;
    }
    if stack.is_empty() {
        return None;
    }
    Some(entries)
}

/// Whether `text` holds a character outside this reader's subset.
fn has_special_characters(text: &str) -> bool {
    let b = text.as_bytes();
    // Printable text, newlines and tabs only: no CR, no control characters,
    // and none of the characters YAML 1.1 also takes as line breaks (NEL,
    // LS, PS) or libyaml treats specially (BOM) or refuses (C1 controls,
    // U+FFFE/U+FFFF). Other non-ASCII characters only ever sit inside
    // scalars and comments, where every special byte this reader looks for
    // is ASCII. Folded without an early exit so that it compiles to vector
    // code.
    let (control, high) = b.iter().fold((false, false), |(control, high), &c| {
        (
            control | ((c < 0x20 && c != b'\n' && c != b'\t') | (c == 0x7f)),
            high | (c >= 0x80),
        )
    });
    control
        || (high
            && text.chars().any(|c| {
                matches!(
                    c,
                    '\u{80}'
                        ..='\u{9f}'
                            | '\u{2028}'
                            | '\u{2029}'
                            | '\u{feff}'
                            | '\u{fffe}'
                            | '\u{ffff}'
                )
            }))
}

/// Whether a line's content is a block sequence entry (`-` then a blank or
/// the line's end).
fn is_dash(rest: &[u8]) -> bool {
    rest.first() == Some(&b'-') && matches!(rest.get(1), None | Some(b' '))
}

/// A simple key at the start of `rest` followed by `:` and a blank or the
/// line's end: the key's bytes and where the value starts.
fn key_at(rest: &[u8]) -> Option<(&[u8], usize)> {
    let first = *rest.first()?;
    if first == b'"' || first == b'\'' {
        // A quoted key without escapes: always a string.
        let len = memchr::memchr(first, &rest[1..])?;
        let key = &rest[1..1 + len];
        let end = len + 2;
        if len > MAX_KEY
            || key.contains(&b'\\')
            || rest.get(end) != Some(&b':')
            || !matches!(rest.get(end + 1), None | Some(b' '))
        {
            return None;
        }
        return Some((key, end + 1));
    }
    if !(first.is_ascii_alphanumeric() || first == b'_' || first == b'.' || first == b'/') {
        return None;
    }
    let len = rest
        .iter()
        .take_while(|&&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-' | b'/'))
        .count();
    if len > MAX_KEY
        || rest.get(len) != Some(&b':')
        || !matches!(rest.get(len + 1), None | Some(b' '))
    {
        return None;
    }
    let key = &rest[..len];
    // Most keys start with a byte that makes any plain scalar a string;
    // the others are resolved (ASCII by construction).
    if !starts_string(first) {
        let text = std::str::from_utf8(key).ok()?;
        if !matches!(resolve_plain(text), Scalar::Str | Scalar::Timestamp) {
            return None;
        }
    }
    Some((key, len + 1))
}

/// What a value leaves for the lines after it.
enum Value {
    Done,
    Open(Open),
    /// A block scalar's text starts on the next line.
    Block,
    /// A plain scalar that may go on over more indented lines.
    Plain,
    /// A quoted scalar still open at the line's end, with its quote.
    Quoted(u8),
}

/// Checks the value part of a line (after `key:` or `- `, or a line of its
/// own); `from_key`: it follows a mapping key.
fn value(v: &[u8], from_key: bool) -> Option<Value> {
    let skip = v.iter().take_while(|&&c| c == b' ').count();
    let v = &v[skip..];
    let open = if from_key {
        Open::MapValue
    } else {
        Open::SeqItem
    };
    let Some(&first) = v.first() else {
        return Some(Value::Open(open));
    };
    match first {
        b'#' if skip > 0 || !from_key => Some(Value::Open(open)),
        b'|' | b'>' => {
            let mut i = 1;
            if matches!(v.get(i), Some(b'-' | b'+')) {
                i += 1;
            }
            trailer(&v[i..]).then_some(Value::Block)
        }
        b'\'' | b'"' => match quoted_end(v, 1, first)? {
            Some(end) => trailer(&v[end..]).then_some(Value::Done),
            None => Some(Value::Quoted(first)),
        },
        b'[' => {
            let end = flow_seq_end(v)?;
            trailer(&v[end..]).then_some(Value::Done)
        }
        b'{' => (v.get(1) == Some(&b'}') && trailer(&v[2..])).then_some(Value::Done),
        b'-' | b'?' | b':' if !matches!(v.get(1), None | Some(b' ')) => plain(v),
        b'-' | b'?' | b':' | b',' | b']' | b'}' | b'#' | b'&' | b'*' | b'!' | b'%' | b'@'
        | b'`' => None,
        _ => plain(v),
    }
}

/// Where the quoted scalar whose text starts at `from` in `v` ends on this
/// line (just past its closing `quote`), `Some(None)` if it goes on past
/// the line's end, `None` for an escape outside the accepted set.
fn quoted_end(v: &[u8], from: usize, quote: u8) -> Option<Option<usize>> {
    let mut i = from;
    loop {
        let Some(&c) = v.get(i) else {
            return Some(None);
        };
        if c == quote {
            if quote == b'\'' && v.get(i + 1) == Some(&b'\'') {
                i += 2;
                continue;
            }
            return Some(Some(i + 1));
        }
        if c == b'\\' && quote == b'"' {
            match v.get(i + 1) {
                // An escaped line break.
                None => return Some(None),
                Some(
                    b'\\' | b'"' | b'n' | b't' | b'r' | b'0' | b'a' | b'b' | b'e' | b'f' | b'v'
                    | b' ',
                ) => i += 2,
                Some(_) => return None,
            }
            continue;
        }
        i += 1;
    }
}

/// A one-line flow sequence of quoted scalars and plain words: where it
/// ends (just past `]`).
fn flow_seq_end(v: &[u8]) -> Option<usize> {
    let blanks = |i: usize| {
        i + v[i.min(v.len())..]
            .iter()
            .take_while(|&&c| c == b' ')
            .count()
    };
    let mut i = blanks(1);
    if v.get(i) == Some(&b']') {
        return Some(i + 1);
    }
    loop {
        match *v.get(i)? {
            q @ (b'"' | b'\'') => i = quoted_end(v, i + 1, q)??,
            c if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b'/' => {
                let len = v[i..]
                    .iter()
                    .take_while(|&&c| {
                        c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-' | b'/')
                    })
                    .count();
                if non_finite(&v[i..i + len]) {
                    return None;
                }
                i += len;
            }
            _ => return None,
        }
        i = blanks(i);
        match *v.get(i)? {
            b']' => return Some(i + 1),
            b',' => {
                i = blanks(i + 1);
                if v.get(i) == Some(&b']') {
                    // A trailing comma is left to the full parser.
                    return None;
                }
            }
            _ => return None,
        }
    }
}

/// Whether a plain scalar's text resolves to an infinite or NaN float
/// (which sigs.k8s.io/yaml cannot turn into JSON).
fn non_finite(s: &[u8]) -> bool {
    std::str::from_utf8(s).is_ok_and(maybe_non_finite)
}

/// A plain scalar's first line, up to a ` #` comment or the line's end.
fn plain(v: &[u8]) -> Option<Value> {
    let comment = v.windows(2).position(|w| w == b" #");
    let mut s = &v[..comment.unwrap_or(v.len())];
    while let [head @ .., b' '] = s {
        s = head;
    }
    if s.last() == Some(&b':') || s.windows(2).any(|w| w == b": ") || non_finite(s) {
        return None;
    }
    // After a comment the scalar cannot go on.
    Some(if comment.is_some() {
        Value::Done
    } else {
        Value::Plain
    })
}

/// Consumes what a value's line leaves open (block scalar text, plain
/// continuation lines, the rest of a quoted scalar) inside a container at
/// column `parent`; returns where the next line to read starts.
fn finish(b: &[u8], after: Value, next: usize, parent: usize) -> Option<usize> {
    match after {
        Value::Done | Value::Open(_) => Some(next),
        Value::Block => block_scalar_end(b, next, parent),
        Value::Plain => plain_end(b, next, parent),
        Value::Quoted(q) => quoted_lines_end(b, next, parent, q),
    }
}

/// The continuation lines of a plain scalar: each more indented than
/// `parent`, without tabs, `: `, ` #` or a trailing `:`. Blank lines may
/// come between. A continuation line may start with an indicator (`-`,
/// `"`, `[`, ...): libyaml reads indicators only where a token starts, and
/// inside a plain scalar only `: `, ` #`, a comment line and a less
/// indented line end it (kubebuilder's CRDs wrap descriptions before a
/// quote or a dash).
fn plain_end(b: &[u8], start: usize, parent: usize) -> Option<usize> {
    let mut pos = start;
    let mut last_end = start;
    while pos < b.len() {
        let end = memchr::memchr(b'\n', &b[pos..]).map_or(b.len(), |i| pos + i);
        let line = &b[pos..end];
        let ind = line.iter().take_while(|&&c| c == b' ').count();
        if ind < line.len() {
            let rest = &line[ind..];
            if ind <= parent || rest[0] == b'#' {
                break;
            }
            if rest.contains(&b'\t')
                || rest.last() == Some(&b':')
                || rest.windows(2).any(|w| w == b": " || w == b" #")
            {
                return None;
            }
            last_end = end + 1;
        }
        pos = end + 1;
    }
    Some(last_end.min(b.len().max(start)))
}

/// The lines of a quoted scalar after its first: each more indented than
/// `parent` and without tabs, up to the closing quote and a clean trailer.
fn quoted_lines_end(b: &[u8], start: usize, parent: usize, quote: u8) -> Option<usize> {
    let mut pos = start;
    while pos < b.len() {
        let end = memchr::memchr(b'\n', &b[pos..]).map_or(b.len(), |i| pos + i);
        let line = &b[pos..end];
        let ind = line.iter().take_while(|&&c| c == b' ').count();
        if line.contains(&b'\t') || (ind < line.len() && ind <= parent) {
            return None;
        }
        if let Some(close) = quoted_end(line, ind, quote)? {
            return trailer(&line[close..]).then_some(end + 1);
        }
        pos = end + 1;
    }
    None
}

/// Whether what follows a value on its line is only blanks and perhaps a
/// comment (which needs a blank before its `#`).
fn trailer(t: &[u8]) -> bool {
    let skip = t.iter().take_while(|&&c| c == b' ').count();
    match t.get(skip) {
        None => true,
        Some(b'#') => skip > 0,
        Some(_) => false,
    }
}

/// Checks the text of a block scalar whose indicator line ended just before
/// `start`, inside a container at column `parent`; returns where the first
/// line after the scalar starts.
fn block_scalar_end(b: &[u8], start: usize, parent: usize) -> Option<usize> {
    let mut pos = start;
    // Blank lines before the first text line, and the most spaces on one.
    let mut lead_max = 0;
    let mut indent: Option<usize> = None;
    while pos < b.len() {
        let end = memchr::memchr(b'\n', &b[pos..]).map_or(b.len(), |i| pos + i);
        let line = &b[pos..end];
        let ind = line.iter().take_while(|&&c| c == b' ').count();
        let blank = ind == line.len();
        match indent {
            None if blank => lead_max = lead_max.max(ind),
            None => {
                if ind <= parent {
                    // An empty scalar; this line belongs to the structure.
                    return (lead_max <= parent).then_some(pos);
                }
                if line[ind] == b'\t' || lead_max > ind {
                    return None;
                }
                indent = Some(ind);
            }
            Some(block) => {
                if !blank && ind < block {
                    if ind <= parent && line[ind] != b'\t' {
                        return Some(pos);
                    }
                    return None;
                }
            }
        }
        pos = end + 1;
    }
    if indent.is_none() && lead_max > parent {
        return None;
    }
    Some(b.len())
}

/// Decodes a document of the plain subset (see [`plain_root_entries`]) to
/// what sigs.k8s.io/yaml gives for it (every number a float64), or `None`
/// when the document is outside the subset or uses a form this decoder does
/// not build (folded or keep-chomped block scalars, quoted scalars over
/// several lines, whitespace-only block lines past the text's indentation);
/// the caller then uses the full parser.
pub(crate) fn decode_plain(text: &str) -> Option<Node> {
    plain_root_entries(text)?;
    let b = text.as_bytes();
    let mut lines = Vec::with_capacity(b.len() / 24 + 1);
    let mut pos = 0;
    while pos < b.len() {
        let end = memchr::memchr(b'\n', &b[pos..]).map_or(b.len(), |i| pos + i);
        lines.push((pos, end));
        pos = end + 1;
    }
    let mut d = Decoder { b, lines, i: 0 };
    d.map_at(0, None)
}

/// Builds the value of a document [`plain_root_entries`] accepted, line by
/// line; `i` is the next line to read.
struct Decoder<'a> {
    b: &'a [u8],
    lines: Vec<(usize, usize)>,
    i: usize,
}

impl<'a> Decoder<'a> {
    fn line(&self, i: usize) -> &'a [u8] {
        let (s, e) = self.lines[i];
        &self.b[s..e]
    }

    fn indent(&self, i: usize) -> usize {
        self.line(i).iter().take_while(|&&c| c == b' ').count()
    }

    /// The next line with content (not blank, not a comment), not consumed.
    fn peek_content(&mut self) -> Option<usize> {
        while self.i < self.lines.len() {
            let line = self.line(self.i);
            let ind = self.indent(self.i);
            if ind < line.len() && line[ind] != b'#' {
                return Some(self.i);
            }
            self.i += 1;
        }
        None
    }

    /// A block mapping at column `col`; `first`: its first entry starts on
    /// the current line at this offset (a `- key:` item).
    fn map_at(&mut self, col: usize, mut first: Option<usize>) -> Option<Node> {
        let mut out = BTreeMap::new();
        loop {
            let (l, at) = match first.take() {
                Some(at) => (self.i, at),
                None => match self.peek_content() {
                    Some(l) if self.indent(l) == col && !is_dash(&self.line(l)[col..]) => (l, col),
                    _ => break,
                },
            };
            let rest = &self.line(l)[at..];
            let (key, value_at) = key_at(rest)?;
            let key = std::str::from_utf8(key).ok()?.to_string();
            self.i = l + 1;
            let v = self.value(&rest[value_at..], col, true)?;
            out.insert(key, v);
        }
        Some(Node::Map(out))
    }

    /// A block sequence at column `col`.
    fn seq_at(&mut self, col: usize) -> Option<Node> {
        let mut out = Vec::new();
        while let Some(l) = self.peek_content() {
            let line = self.line(l);
            if self.indent(l) != col || !is_dash(&line[col..]) {
                break;
            }
            let skip = line[col + 1..].iter().take_while(|&&c| c == b' ').count();
            let at = col + 1 + skip;
            let body = &line[at..];
            if !body.is_empty() && body[0] != b'#' && key_at(body).is_some() {
                out.push(self.map_at(at, Some(at))?);
                continue;
            }
            self.i = l + 1;
            out.push(self.value(body, col, false)?);
        }
        Some(Node::Seq(out))
    }

    /// The value after `key:` or `- ` (the rest of that line is `v`, the
    /// line is consumed), in a container at column `col`.
    fn value(&mut self, v: &[u8], col: usize, from_key: bool) -> Option<Node> {
        let skip = v.iter().take_while(|&&c| c == b' ').count();
        let v = &v[skip..];
        if !v.is_empty() && v[0] != b'#' {
            return self.scalar(v, col);
        }
        let Some(n) = self.peek_content() else {
            return Some(Node::Null);
        };
        let ind = self.indent(n);
        let rest = &self.line(n)[ind..];
        if ind > col {
            if is_dash(rest) {
                self.seq_at(ind)
            } else if key_at(rest).is_some() {
                self.map_at(ind, None)
            } else {
                self.i = n + 1;
                self.scalar(rest, col)
            }
        } else if from_key && ind == col && is_dash(rest) {
            self.seq_at(col)
        } else {
            Some(Node::Null)
        }
    }

    /// A scalar (or `{}`/`[...]`) starting with `v` on the line just
    /// consumed, inside a container at column `parent`.
    fn scalar(&mut self, v: &[u8], parent: usize) -> Option<Node> {
        match v[0] {
            b'|' => self.literal(v, parent),
            b'>' => None,
            b'\'' | b'"' => {
                let end = quoted_end(v, 1, v[0])??;
                unquote(&v[..end]).map(|s| Node::Str(into_go_string(s)))
            }
            b'[' => {
                let mut items = Vec::new();
                let end = flow_seq_end(v)?;
                let mut i = 1;
                while i < end - 1 {
                    let c = v[i];
                    if c == b' ' || c == b',' {
                        i += 1;
                        continue;
                    }
                    if c == b'\'' || c == b'"' {
                        let e = quoted_end(v, i + 1, c)??;
                        items.push(Node::Str(into_go_string(unquote(&v[i..e])?)));
                        i = e;
                    } else {
                        let len = v[i..end - 1]
                            .iter()
                            .take_while(|&&c| c != b' ' && c != b',')
                            .count();
                        items.push(plain_node(std::str::from_utf8(&v[i..i + len]).ok()?));
                        i += len;
                    }
                }
                Some(Node::Seq(items))
            }
            b'{' => Some(Node::Map(BTreeMap::new())),
            _ => {
                let comment = v.windows(2).position(|w| w == b" #");
                let first = trim_end(&v[..comment.unwrap_or(v.len())]);
                let mut text = std::str::from_utf8(first).ok()?.to_string();
                if comment.is_none() {
                    // Continuation lines, folded.
                    let mut blanks = 0;
                    while self.i < self.lines.len() {
                        let line = self.line(self.i);
                        let ind = self.indent(self.i);
                        if ind == line.len() {
                            blanks += 1;
                            self.i += 1;
                            continue;
                        }
                        if ind <= parent || line[ind] == b'#' {
                            break;
                        }
                        if blanks == 0 {
                            text.push(' ');
                        } else {
                            text.extend(std::iter::repeat_n('\n', blanks));
                        }
                        blanks = 0;
                        text.push_str(std::str::from_utf8(trim_end(&line[ind..])).ok()?);
                        self.i += 1;
                    }
                }
                Some(plain_node(&text))
            }
        }
    }

    /// A literal block scalar (`|` or `|-`) whose text starts on line `i`.
    fn literal(&mut self, v: &[u8], parent: usize) -> Option<Node> {
        let strip = match v.get(1) {
            Some(b'-') => true,
            Some(b'+') => return None,
            _ => false,
        };
        let mut out = String::new();
        let mut indent: Option<usize> = None;
        // Line breaks seen since the last text line.
        let mut breaks = 0;
        while self.i < self.lines.len() {
            let line = self.line(self.i);
            let ind = self.indent(self.i);
            let blank = ind == line.len();
            match indent {
                None if blank => {
                    breaks += 1;
                    self.i += 1;
                    continue;
                }
                None if ind <= parent => break,
                None => indent = Some(ind),
                Some(block) if blank => {
                    if ind > block {
                        return None;
                    }
                    breaks += 1;
                    self.i += 1;
                    continue;
                }
                Some(block) if ind < block => break,
                Some(_) => {}
            }
            let block = indent?;
            if !out.is_empty() {
                breaks += 1;
            }
            out.extend(std::iter::repeat_n('\n', breaks));
            breaks = 0;
            out.push_str(std::str::from_utf8(&line[block..]).ok()?);
            self.i += 1;
        }
        if indent.is_none() {
            return Some(Node::Str(String::new()));
        }
        // Clipped text ends with one line break, even at the text's end.
        if !strip {
            out.push('\n');
        }
        Some(Node::Str(into_go_string(out)))
    }
}

fn trim_end(mut s: &[u8]) -> &[u8] {
    while let [head @ .., b' '] = s {
        s = head;
    }
    s
}

/// The text of a one-line quoted scalar `q` (quotes included), with the
/// escapes [`quoted_end`] accepts.
fn unquote(q: &[u8]) -> Option<String> {
    let inner = std::str::from_utf8(&q[1..q.len() - 1]).ok()?;
    if q[0] == b'\'' {
        return Some(inner.replace("''", "'"));
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            '\\' => '\\',
            '"' => '"',
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            '0' => '\0',
            'a' => '\u{7}',
            'b' => '\u{8}',
            'e' => '\u{1b}',
            'f' => '\u{c}',
            'v' => '\u{b}',
            ' ' => ' ',
            _ => return None,
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::plain_root_entries;

    fn keys(text: &str) -> Option<Vec<String>> {
        plain_root_entries(text).map(|es| {
            es.iter()
                .map(|e| format!("{}={:?}", e.key, &text[e.span.clone()]))
                .collect()
        })
    }

    #[test]
    fn accepts_a_typical_manifest() {
        let doc = "# Source: x\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n    app.kubernetes.io/name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        args:\n          - --flag=1\n          - \"quoted\"\n        env: []\n        command: |\n          echo hi\n\n          exit 0\n      volumes:\n        - name: v\n          configMap: {}\n";
        let got = keys(doc).expect("accepted");
        assert_eq!(got.len(), 4);
        assert!(got[2].starts_with("metadata=\"metadata:\\n  name: web"));
    }

    #[test]
    fn refuses_what_needs_the_full_parser() {
        for doc in [
            "a: b\n  c: d\n",           // mapping value in a continuation line
            "a: [1, {b: 2}]\n",         // nested flow collection
            "a: [1, 2,]\n",             // trailing comma
            "a: &x 1\nb: *x\n",         // anchor, alias
            "a: !!str 1\n",             // tag
            "a: b: c\n",                // mapping value in a plain scalar
            "a:\n  b: 1\n   c: 2\n",    // indentation between levels
            "a: 'x\ny'\n",              // quoted text back at the key's column
            "a: b\n  # c\n  d\n",       // a comment ends a plain scalar
            "a: \"\\/\"\n",             // escape libyaml refuses
            "a: .inf\n",                // non-finite float
            "yes: 1\n",                 // non-string key
            "- a\n",                    // root sequence
            "a: 1\n---\nb: 2\n",        // document marker
            "a:\tb\n",                  // tab
            "a: |2\n  x\n",             // explicit indentation
            "a: |\n    x\n  y\nb: 1\n", // text less indented than its block
            "a: -\n",                   // block entry as a value
            "a: 1\r\n",                 // CR
            "\"a\\\"b\": 1\n",          // quoted key with an escape
        ] {
            assert!(keys(doc).is_none(), "accepted {doc:?}");
        }
    }

    /// Inside a plain scalar, a continuation line may start with what would
    /// be an indicator at the start of a token (checked against Helm 3.17:
    /// `fromYaml` of this text gives these strings).
    #[test]
    fn continuation_lines_starting_with_indicators() {
        use crate::yaml::Node;
        let doc = "a:\n- b\n - c\nd: one\n  \"two\", [three]\n  - four\n  {five} &six *seven !eight |nine >ten %x @y `z ?q\ne:\n  - x\n    - y\n    \"z\"\n";
        assert_eq!(keys(doc).expect("accepted").len(), 3);
        let fast = super::decode_plain(doc).expect("decoded");
        assert_eq!(fast, crate::yaml::parse::parse_full(doc).unwrap());
        let Node::Map(m) = fast else {
            panic!("{fast:?}")
        };
        assert_eq!(
            m["d"],
            Node::Str(
                "one \"two\", [three] - four {five} &six *seven !eight |nine >ten %x @y `z ?q"
                    .into()
            )
        );
        assert_eq!(m["a"], Node::Seq(vec![Node::Str("b - c".into())]));
    }

    #[test]
    fn sequences_at_key_indentation_and_compact_maps() {
        let doc = "a:\n- b\n- c: 1\n  d: 2\n-\n  e: 3\nf: x # c\n";
        assert_eq!(keys(doc).expect("accepted").len(), 2);
    }

    #[test]
    fn values_over_several_lines_and_on_their_own_line() {
        let doc = "a:\n  {}\nb: one\n  two\n\n  three\nc: 'x\n  y'\nd: \"p\\\n  q\"\n\"e\": [x, \"y\", 'z']\nf:\n  - :x\n";
        assert_eq!(keys(doc).expect("accepted").len(), 6);
    }

    #[test]
    fn decodes_like_the_full_parser() {
        let doc = "# values\nimage:\n  repository: quay.io/x # c\n  tag: \"v1.2\"\n  pullPolicy:\nreplicas: 3\nratio: 0.5\non_: yes\nlist:\n- a\n- 'b''c'\n- \"d\\te\"\n-\n- k: 1\n  l: [x, \"y\", 2]\nlong: one\n  two\n\n\n  three\nscript: |\n  #!/bin/sh\n\n    indented\n  end\n\nstrip: |-\n  x\nempty: {}\nnone: []\nstamp: 2001-12-14\n";
        let fast = super::decode_plain(doc).expect("decoded");
        assert_eq!(fast, crate::yaml::parse::parse_full(doc).unwrap());
        // Forms left to the full parser.
        for doc in [
            "a: >\n  x\n",
            "a: |+\n  x\n",
            "a: 'x\n  y'\n",
            "a: |\n  x\n    \n  y\n",
        ] {
            assert!(super::decode_plain(doc).is_none(), "{doc:?}");
        }
    }

    #[test]
    fn block_scalars() {
        assert!(keys("a: |\n  x\n\n   y\n\tz\nb: 1\n").is_none());
        assert!(keys("a: |-\n  x\n  \ty\nb: 1\n").is_some());
        assert!(keys("a: >\nb: 1\n").is_some());
        assert!(keys("a: |\n   \n  x\n").is_none());
        assert!(keys("- a: |\n    x\n  b: 1\n").is_none()); // root sequence
        assert!(keys("a:\n  - b: |\n      x\n    c: 1\n    d: |+\n\ne: 2\n").is_some());
        assert!(keys("a:\n- b: |\n    x\n  c: 1\n").is_some());
    }

    /// The claim that matters: whatever the recognizer accepts, the full
    /// parser reads without error, and the kept entries decode alone to
    /// what they decode to in the whole document.
    fn check_accepted(text: &str) -> Result<bool, String> {
        use crate::yaml::{parse_yaml_to_json, parse_yaml_to_json_keys, Node};
        let Some(_) = plain_root_entries(text) else {
            return Ok(false);
        };
        let keys = ["apiVersion", "kind", "metadata"];
        let full = parse_yaml_to_json(text)
            .map_err(|e| format!("accepted but the full parser fails: {e}\n{text}"))?;
        let full = match full {
            Node::Map(mut m) => {
                m.retain(|k, _| keys.contains(&k.as_str()));
                Node::Map(m)
            }
            other => return Err(format!("accepted a non-mapping: {other:?}\n{text}")),
        };
        if let Some(node) = super::decode_plain(text) {
            let whole = crate::yaml::parse::parse_full(text)
                .map_err(|e| format!("decoded but the full parser fails: {e}\n{text}"))?;
            if node != whole {
                return Err(format!("decoded {node:?}\nfull    {whole:?}\n{text}"));
            }
        }
        let keyed = parse_yaml_to_json_keys(text, &keys)
            .map_err(|e| format!("kept entries fail alone: {e}\n{text}"))?;
        if keyed != full {
            return Err(format!("differ: {keyed:?} vs {full:?}\n{text}"));
        }
        Ok(true)
    }

    #[test]
    fn corpus_manifests_mostly_take_the_fast_path() {
        let shared =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/charts");
        if !shared.is_dir() {
            assert!(
                std::env::var_os("RUDDER_REQUIRE_ORACLE").is_none(),
                "../shared/conformance/charts is missing"
            );
            eprintln!("SKIPPED: ../shared/conformance/charts is missing");
            if let Some(log) = std::env::var_os("RUDDER_SKIP_LOG") {
                use std::io::Write;
                if let Ok(mut f) = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(log)
                {
                    let _ = writeln!(
                        f,
                        "rudder(lib)::yaml::block::tests::corpus_manifests_mostly_take_the_fast_path\t../shared (the conformance corpus)"
                    );
                }
            }
            return;
        }
        let mut stack = vec![shared];
        let (mut docs, mut accepted) = (0usize, 0usize);
        let (mut files, mut decoded_files) = (0usize, 0usize);
        while let Some(dir) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in rd.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                    continue;
                }
                // Helm's rendered output (the documents rudder reads heads
                // of) is counted; chart files (values, Chart.yaml, CRDs,
                // raw templates) are checked, and whole files decoded.
                let rendered = p.components().any(|c| c.as_os_str() == "expected");
                let yaml = matches!(
                    p.extension().and_then(|x| x.to_str()),
                    Some("yaml" | "yml" | "tpl")
                );
                if !rendered && !yaml {
                    continue;
                }
                let Ok(text) = std::fs::read_to_string(&p) else {
                    continue;
                };
                if !rendered {
                    if let Err(e) = check_accepted(&text) {
                        panic!("{}: {e}", p.display());
                    }
                    files += 1;
                    if super::decode_plain(&text).is_some() {
                        decoded_files += 1;
                    }
                    continue;
                }
                for doc in crate::manifest::split::split_manifests(&text) {
                    docs += 1;
                    match check_accepted(doc) {
                        Ok(true) => accepted += 1,
                        Ok(false) => {}
                        Err(e) => panic!("{}: {e}", p.display()),
                    }
                }
            }
        }
        eprintln!(
            "plain block recognizer: {accepted} of {docs} rendered corpus documents; \
             {decoded_files} of {files} chart YAML files decoded whole"
        );
        assert!(docs > 500, "too few documents: {docs}");
        assert!(
            accepted * 10 >= docs * 9,
            "only {accepted} of {docs} accepted"
        );
    }

    mod props {
        use super::check_accepted;
        use proptest::prelude::*;

        fn line() -> impl Strategy<Value = String> {
            let indent = prop::sample::select(vec!["", " ", "  ", "   ", "    ", "      "]);
            let key = prop::sample::select(vec![
                "apiVersion",
                "kind",
                "metadata",
                "name",
                "spec",
                "y",
                "1",
                "a.b/c",
                "_x",
                ".inf",
                "2001-01-01",
                "k-",
                "\"helm.sh/hook\"",
                "'q'",
                "\"a\\\"b\"",
                "\"kind\"",
            ]);
            let value = prop::sample::select(vec![
                "",
                " x",
                " .inf",
                " -.Inf",
                " a: b",
                " a:",
                " x #c",
                " x#c",
                " #c",
                " 'q''q'",
                " 'open",
                " \"e\\n\"",
                " \"\\/\"",
                " \"\\x41\"",
                " []",
                " {}",
                " [a]",
                " -1",
                " -",
                " - a",
                " |",
                " >-",
                " |+",
                " |2",
                " &a x",
                " *a",
                " !!str x",
                " @x",
                " ? x",
                " http://h",
                " 'a' b",
                " \"a\" #c",
                "\t",
                " %x",
                " {a: 1}",
                " y",
                " [a, \"b\"]",
                " ['x', y]",
                " [a,]",
                " [.inf]",
                " [a b]",
                " [ ]",
                " 'multi",
                " \"multi",
                " \"esc\\",
                " :x",
                " ?x",
                " a - b",
                " x\t",
            ]);
            let text = prop::sample::select(vec![
                "text",
                "  more",
                "\tz",
                "# not a comment",
                "",
                "   ",
                "  more'",
                "  end\"",
                "  {}",
                "  []",
                "  \"q\"",
                "  'q'",
                "   - x",
                "  :x",
                "  a: b",
                "  x #c",
                "  |",
                "'q'",
                "\"",
                " - y",
            ]);
            (
                indent,
                prop_oneof![
                    (key.clone(), value.clone()).prop_map(|(k, v)| format!("{k}:{v}")),
                    value.clone().prop_map(|v| format!("-{v}")),
                    (key, value).prop_map(|(k, v)| format!("- {k}:{v}")),
                    Just("# comment".to_string()),
                    Just("---".to_string()),
                    text.prop_map(str::to_string),
                ],
            )
                .prop_map(|(i, l)| format!("{i}{l}"))
        }

        /// A generated document tree; leaves are value texts as written
        /// after `key:` or `- `.
        #[derive(Debug, Clone)]
        enum Tree {
            Map(Vec<(&'static str, Tree)>),
            Seq(Vec<Tree>),
            Leaf(&'static str),
            /// A block scalar: indicator, then lines (indented past the
            /// container by the given extra columns).
            Block(&'static str, Vec<&'static str>, usize),
            /// A value over several lines: first line, continuation lines.
            Lines(&'static str, Vec<&'static str>),
        }

        fn tree() -> impl Strategy<Value = Tree> {
            let key = prop::sample::select(vec![
                "apiVersion",
                "kind",
                "metadata",
                "name",
                "labels",
                "spec",
                "a.b/c",
                "_x",
                "\"helm.sh/hook\"",
                "'q'",
                "2001-01-01",
                "y",
                "on",
                "1",
                "k-",
            ]);
            let leaf = prop_oneof![
                8 => prop::sample::select(vec![
                    " x", " v1", " \"q\"", " 'it''s'", " \"e\\n\"", " []", " {}", " -1", " 1.5",
                    " .inf", " http://h:80/x", " a #c", " a#b", " :x", " [a, \"b\", 'c']",
                    " [a,]", " \"\\/\"", " a: b", " &a x", " *a", " !!str x", " ~", "", " # c",
                    " @x", " [ ]", " {a: 1}", " 'a' b", " true", " null", " café", " 'ü'",
                    " \"\u{2028}\"", " # ≥ 1",
                ]).prop_map(Tree::Leaf),
                1 => (
                    prop::sample::select(vec!["|", "|-", ">", "|+", ">-", "|2"]),
                    prop::collection::vec(
                        prop::sample::select(vec!["text", "", "  more", "# hash", "\tx", "- a", "k: v"]),
                        0..4,
                    ),
                    0usize..3,
                ).prop_map(|(i, l, e)| Tree::Block(i, l, e)),
                1 => (
                    prop::sample::select(vec![" one", " 'one", " \"one", " \"one\\"]),
                    prop::collection::vec(
                        prop::sample::select(vec!["two", "", "three'", "four\"", "- x", "k: v", "# c", "a #b"]),
                        1..3,
                    ),
                ).prop_map(|(f, l)| Tree::Lines(f, l)),
            ];
            leaf.prop_recursive(4, 24, 4, move |inner| {
                prop_oneof![
                    prop::collection::vec((key.clone(), inner.clone()), 1..4).prop_map(Tree::Map),
                    prop::collection::vec(inner, 1..4).prop_map(Tree::Seq),
                ]
            })
        }

        /// Writes `t` as the value after a `key:` or `- ` at column `col`
        /// (the container's column), children `step` columns deeper.
        fn write_value(t: &Tree, col: usize, step: usize, out: &mut String) {
            match t {
                Tree::Leaf(v) => {
                    out.push_str(v);
                    out.push('\n');
                }
                Tree::Block(ind, lines, extra) => {
                    out.push(' ');
                    out.push_str(ind);
                    out.push('\n');
                    for l in lines {
                        if !l.is_empty() {
                            out.push_str(&" ".repeat(col + 1 + extra));
                        }
                        out.push_str(l);
                        out.push('\n');
                    }
                }
                Tree::Lines(first, rest) => {
                    out.push_str(first);
                    out.push('\n');
                    for l in rest {
                        if !l.is_empty() {
                            out.push_str(&" ".repeat(col + 2));
                        }
                        out.push_str(l);
                        out.push('\n');
                    }
                }
                Tree::Map(_) | Tree::Seq(_) => {
                    out.push('\n');
                    write_block(t, col + step, step, out);
                }
            }
        }

        fn write_block(t: &Tree, col: usize, step: usize, out: &mut String) {
            let pad = " ".repeat(col);
            match t {
                Tree::Map(entries) => {
                    for (k, v) in entries {
                        out.push_str(&pad);
                        out.push_str(k);
                        out.push(':');
                        // A sequence may sit at its key's column.
                        let step = if matches!(v, Tree::Seq(_)) && step == 3 {
                            0
                        } else {
                            step.max(1)
                        };
                        write_value(v, col, step, out);
                    }
                }
                Tree::Seq(items) => {
                    for item in items {
                        out.push_str(&pad);
                        out.push('-');
                        match item {
                            Tree::Map(entries) if step % 2 == 0 => {
                                // Compact: the first entry on the dash's line.
                                for (i, (k, v)) in entries.iter().enumerate() {
                                    if i == 0 {
                                        out.push(' ');
                                    } else {
                                        out.push_str(&" ".repeat(col + 2));
                                    }
                                    out.push_str(k);
                                    out.push(':');
                                    write_value(v, col + 2, 2, out);
                                }
                            }
                            _ => write_value(item, col, step.max(1), out),
                        }
                    }
                }
                leaf => {
                    out.push_str(&pad);
                    out.push_str("k:");
                    write_value(leaf, col, step, out);
                }
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(8192))]
            #[test]
            fn accepted_generated_trees_parse_and_keep_their_heads(
                t in tree(),
                step in 1usize..5,
                edit in prop::option::weighted(0.3, (any::<prop::sample::Index>(), 0usize..4)),
                cut_newline in prop::bool::weighted(0.2),
                doc_start in prop::bool::weighted(0.1),
            ) {
                let root = match t {
                    Tree::Map(_) => t,
                    other => Tree::Map(vec![("apiVersion", Tree::Leaf(" v1")), ("spec", other)]),
                };
                let mut text = String::new();
                write_block(&root, 0, step, &mut text);
                if cut_newline {
                    text.pop();
                }
                if doc_start {
                    text.insert_str(0, "--- # doc\n");
                }
                if let Some((at, how)) = edit {
                    // A near miss: one line moved, doubled, or cut short.
                    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
                    let i = at.index(lines.len());
                    match how {
                        0 => lines[i].insert(0, ' '),
                        1 => { if lines[i].starts_with(' ') { lines[i].remove(0); } }
                        2 => { let l = lines[i].clone(); lines.insert(i, l); }
                        _ => { let n = lines[i].len() / 2; lines[i].truncate(n); }
                    }
                    text = lines.join("\n");
                    text.push('\n');
                }
                if let Err(e) = check_accepted(&text) {
                    prop_assert!(false, "{}", e);
                }
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(8192))]
            #[test]
            fn accepted_documents_parse_and_keep_their_heads(
                lines in prop::collection::vec(line(), 1..14),
                crlf in prop::bool::weighted(0.05),
            ) {
                let mut text = lines.join("\n");
                text.push('\n');
                if crlf {
                    text = text.replace('\n', "\r\n");
                }
                if let Err(e) = check_accepted(&text) {
                    prop_assert!(false, "{}", e);
                }
            }
        }
    }
}
