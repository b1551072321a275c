//! Go `encoding/json`: `Marshal`/`MarshalIndent` of a [`Node`] and
//! `Unmarshal` into `interface{}` with Go's error messages.
use super::Node;
use crate::gostd::strconv::quote;
use std::collections::BTreeMap;

/// Why a JSON text could not be decoded; `Display` is Go's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonError {
    /// A syntax error (`invalid character 'b' looking for beginning of object key string`).
    #[error("{message}")]
    Syntax {
        /// Go's message.
        message: String,
        /// Byte offset of the error.
        offset: usize,
    },
    /// Well-formed JSON of the wrong shape or out of range
    /// (`json: cannot unmarshal array into Go value of type map[string]interface {}`).
    #[error("json: cannot unmarshal {found} into Go value of type {target}")]
    Type {
        /// What was found (`array`, `object`, `number 1e400`, ...).
        found: String,
        /// The Go type wanted.
        target: String,
    },
}

/// Why a value could not be written as JSON (Go: `json: unsupported value: +Inf`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("json: unsupported value: {value}")]
pub struct JsonEncodeError {
    /// Go's text of the value.
    pub value: String,
}

pub use crate::gostd::json::format_float as format_json_float;

/// Go's JSON string escaping. Bytes that are not UTF-8 (see
/// [`crate::gostd::gostr`]) are written `\ufffd`, as Go does.
pub(crate) fn write_string(out: &mut String, s: &str, escape_html: bool) {
    out.push('"');
    match crate::gostd::gostr::go_bytes(s) {
        std::borrow::Cow::Borrowed(_) => s.chars().for_each(|c| write_char(out, c, escape_html)),
        std::borrow::Cow::Owned(b) => {
            for r in crate::gostd::gostr::decode_runes(&b) {
                match r {
                    Ok(c) => write_char(out, c, escape_html),
                    Err(_) => out.push_str("\\ufffd"),
                }
            }
        }
    }
    out.push('"');
}

fn write_char(out: &mut String, c: char, escape_html: bool) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '<' | '>' | '&' if escape_html => {
            out.push_str(&format!("\\u{:04x}", c as u32));
        }
        '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
        c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
        c => out.push(c),
    }
}

fn encode(
    out: &mut String,
    n: &Node,
    escape_html: bool,
    indent: Option<&str>,
    depth: usize,
) -> Result<(), JsonEncodeError> {
    crate::stack::deeper(|| encode_inner(out, n, escape_html, indent, depth))
}

fn encode_inner(
    out: &mut String,
    n: &Node,
    escape_html: bool,
    indent: Option<&str>,
    depth: usize,
) -> Result<(), JsonEncodeError> {
    let newline = |out: &mut String, d: usize| {
        if let Some(ind) = indent {
            out.push('\n');
            for _ in 0..d {
                out.push_str(ind);
            }
        }
    };
    match n {
        Node::Null => out.push_str("null"),
        Node::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Node::Int(i) => out.push_str(&i.to_string()),
        Node::Float(f) => {
            if !f.is_finite() {
                return Err(JsonEncodeError {
                    value: crate::gostd::float::format_go_float(*f),
                });
            }
            out.push_str(&format_json_float(*f));
        }
        Node::Str(s) => write_string(out, s, escape_html),
        Node::Seq(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, depth + 1);
                encode(out, x, escape_html, indent, depth + 1)?;
            }
            newline(out, depth);
            out.push(']');
        }
        Node::Map(m) => {
            if m.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, depth + 1);
                write_string(out, k, escape_html);
                out.push(':');
                if indent.is_some() {
                    out.push(' ');
                }
                encode(out, x, escape_html, indent, depth + 1)?;
            }
            newline(out, depth);
            out.push('}');
        }
    }
    Ok(())
}

/// Go's `json.Marshal` (with `escape_html`) or an encoder with
/// `SetEscapeHTML(false)` (without), as one line, without a trailing newline.
/// Errors on non-finite floats, as Go does.
pub fn try_to_json(node: &Node, escape_html: bool) -> Result<String, JsonEncodeError> {
    let mut out = String::new();
    encode(&mut out, node, escape_html, None, 0)?;
    Ok(out)
}

/// Go's `json.MarshalIndent(v, "", indent)` (HTML-escaping as Marshal does).
pub fn try_to_json_pretty(node: &Node, indent: &str) -> Result<String, JsonEncodeError> {
    let mut out = String::new();
    encode(&mut out, node, true, Some(indent), 0)?;
    Ok(out)
}

/// Go's `json.Marshal` of a node, sorted keys, no trailing newline. With
/// `escape_html`, `<`, `>` and `&` become `\u003c`, `\u003e`, `\u0026`
/// (`toJson`); without, they stay (`toRawJson`). U+2028/U+2029 are always
/// escaped. A non-finite float yields Go's error text instead (as Helm's
/// `toJson` returns an empty string on error, callers that need the
/// distinction use [`try_to_json`]).
pub fn to_json(node: &Node, escape_html: bool) -> String {
    try_to_json(node, escape_html).unwrap_or_default()
}

/// Go's `json.MarshalIndent(node, "", indent)`; empty on unsupported values.
pub fn to_json_pretty(node: &Node, indent: &str) -> String {
    try_to_json_pretty(node, indent).unwrap_or_default()
}

/// Go's `strconv.Quote`-based `quoteChar` used in JSON syntax errors.
fn quote_char(c: char) -> String {
    match c {
        '\'' => "'\\''".into(),
        '"' => "'\"'".into(),
        c => {
            let q = quote(&c.to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

struct Dec<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
    /// Go keeps decoding after a type error and reports the first one.
    type_err: Option<JsonError>,
    depth: usize,
}

/// Go's scanner refuses JSON nested deeper than 10000 levels; this reader
/// stops at the YAML reader's limit so that every recursive walk over the
/// result stays inside a thread's stack.
const MAX_JSON_DEPTH: usize = super::parse::MAX_DEPTH;

impl Dec<'_> {
    fn err_at(&self, ctx: &str) -> JsonError {
        match self.s.get(self.i..).and_then(|r| r.chars().next()) {
            None => JsonError::Syntax {
                message: "unexpected end of JSON input".into(),
                offset: self.i,
            },
            Some(c) => JsonError::Syntax {
                message: format!("invalid character {} {ctx}", quote_char(c)),
                offset: self.i,
            },
        }
    }
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }
    fn value(&mut self, ctx: &str) -> Result<Node, JsonError> {
        self.ws();
        if matches!(self.b.get(self.i), Some(b'[' | b'{')) {
            self.depth += 1;
            if self.depth > MAX_JSON_DEPTH {
                return Err(JsonError::Syntax {
                    message: "exceeded max depth".into(),
                    offset: self.i,
                });
            }
            let r = crate::stack::deeper(|| self.scalar_or_collection(ctx));
            self.depth -= 1;
            return r;
        }
        self.scalar_or_collection(ctx)
    }

    fn scalar_or_collection(&mut self, ctx: &str) -> Result<Node, JsonError> {
        match self.b.get(self.i) {
            None => Err(self.err_at(ctx)),
            Some(b'{') => {
                self.i += 1;
                let mut m = BTreeMap::new();
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(Node::Map(m));
                }
                loop {
                    self.ws();
                    if self.b.get(self.i) != Some(&b'"') {
                        return Err(self.err_at("looking for beginning of object key string"));
                    }
                    let k = self.string()?;
                    self.ws();
                    if self.b.get(self.i) != Some(&b':') {
                        return Err(self.err_at("after object key"));
                    }
                    self.i += 1;
                    let v = self.value("looking for beginning of value")?;
                    m.insert(k, v);
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Node::Map(m));
                        }
                        _ => return Err(self.err_at("after object key:value pair")),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut v = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Node::Seq(v));
                }
                loop {
                    v.push(self.value("looking for beginning of value")?);
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Node::Seq(v));
                        }
                        _ => return Err(self.err_at("after array element")),
                    }
                }
            }
            Some(b'"') => Ok(Node::Str(self.string()?)),
            Some(b't') => self.literal("true", Node::Bool(true)),
            Some(b'f') => self.literal("false", Node::Bool(false)),
            Some(b'n') => self.literal("null", Node::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.err_at(ctx)),
        }
    }
    fn literal(&mut self, word: &str, v: Node) -> Result<Node, JsonError> {
        let wb = word.as_bytes();
        self.i += 1;
        for (k, &want) in wb.iter().enumerate().skip(1) {
            match self.b.get(self.i) {
                Some(&c) if c == want => self.i += 1,
                _ => {
                    return Err(self.err_at(&format!(
                        "in literal {word} (expecting {})",
                        quote_char(wb[k] as char)
                    )))
                }
            }
        }
        Ok(v)
    }
    fn number(&mut self) -> Result<Node, JsonError> {
        let st = self.i;
        if self.b[self.i] == b'-' {
            self.i += 1;
            match self.b.get(self.i) {
                Some(b'0'..=b'9') => {}
                _ => return Err(self.err_at("in numeric literal")),
            }
        }
        if self.b.get(self.i) == Some(&b'0') {
            self.i += 1;
        } else {
            while matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
                self.i += 1;
            }
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if !matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
                return Err(self.err_at("after decimal point in numeric literal"));
            }
            while matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
                self.i += 1;
            }
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
                return Err(self.err_at("in exponent of numeric literal"));
            }
            while matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
                self.i += 1;
            }
        }
        let text = &self.s[st..self.i];
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(Node::Float(f)),
            _ => {
                if self.type_err.is_none() {
                    self.type_err = Some(JsonError::Type {
                        found: format!("number {text}"),
                        target: "float64".into(),
                    });
                }
                Ok(Node::Null)
            }
        }
    }
    fn hex4(&mut self) -> Result<u32, JsonError> {
        let mut v = 0u32;
        for _ in 0..4 {
            match self.b.get(self.i).and_then(|c| (*c as char).to_digit(16)) {
                Some(d) => {
                    v = v * 16 + d;
                    self.i += 1;
                }
                None => return Err(self.err_at("in \\u hexadecimal character escape")),
            }
        }
        Ok(v)
    }
    fn string(&mut self) -> Result<String, JsonError> {
        self.i += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.s.get(self.i..).and_then(|r| r.chars().next()) else {
                return Err(self.err_at(""));
            };
            match c {
                '"' => {
                    self.i += 1;
                    return Ok(crate::gostd::gostr::into_go_string(out));
                }
                '\\' => {
                    self.i += 1;
                    let Some(&e) = self.b.get(self.i) else {
                        return Err(self.err_at(""));
                    };
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let ch = if (0xD800..0xDC00).contains(&hi)
                                && self.b.get(self.i) == Some(&b'\\')
                                && self.b.get(self.i + 1) == Some(&b'u')
                            {
                                let save = self.i;
                                self.i += 2;
                                let lo = self.hex4()?;
                                if (0xDC00..0xE000).contains(&lo) {
                                    char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
                                } else {
                                    self.i = save;
                                    None
                                }
                            } else {
                                char::from_u32(hi)
                            };
                            out.push(ch.unwrap_or('\u{fffd}'));
                        }
                        _ => {
                            self.i -= 1;
                            return Err(self.err_at("in string escape code"));
                        }
                    }
                }
                c if (c as u32) < 0x20 => return Err(self.err_at("in string literal")),
                c => {
                    out.push(c);
                    self.i += c.len_utf8();
                }
            }
        }
    }
}

/// Go's `json.Unmarshal` into `interface{}`: numbers become [`Node::Float`],
/// objects maps (duplicate keys: last wins). Errors are Go's messages.
pub fn parse_json(text: &str) -> Result<Node, JsonError> {
    match parse_json_partial(text) {
        (_, Some(e)) => Err(e),
        (n, None) => Ok(n),
    }
}

/// Like [`parse_json`], but as Go leaves the target after a type error: the
/// data decoded so far (an out-of-range number becomes null) together with
/// the first error. After a syntax error the data is [`Node::Null`].
pub fn parse_json_partial(text: &str) -> (Node, Option<JsonError>) {
    match parse_json_inner(text) {
        Ok((n, e)) => (n, e),
        Err(e) => (Node::Null, Some(e)),
    }
}

fn parse_json_inner(text: &str) -> Result<(Node, Option<JsonError>), JsonError> {
    let mut d = Dec {
        s: text,
        b: text.as_bytes(),
        i: 0,
        type_err: None,
        depth: 0,
    };
    let v = d.value("looking for beginning of value")?;
    d.ws();
    if d.i < d.b.len() {
        return Err(d.err_at("after top-level value"));
    }
    Ok((v, d.type_err))
}

/// The JSON kind Go names in `cannot unmarshal X into ...`.
pub(crate) fn json_kind(n: &Node) -> &'static str {
    n.json_kind()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_syntax_errors() {
        let e = |s: &str| parse_json(s).unwrap_err().to_string();
        assert_eq!(
            e("{bad"),
            "invalid character 'b' looking for beginning of object key string"
        );
        assert_eq!(e(""), "unexpected end of JSON input");
        assert_eq!(
            e("[1,]"),
            "invalid character ']' looking for beginning of value"
        );
        assert_eq!(e("[1 2]"), "invalid character '2' after array element");
        assert_eq!(e("{\"a\" 1}"), "invalid character '1' after object key");
        assert_eq!(
            e("{\"a\":1 2}"),
            "invalid character '2' after object key:value pair"
        );
        assert_eq!(e("1 2"), "invalid character '2' after top-level value");
        assert_eq!(e("tru"), "unexpected end of JSON input");
        assert_eq!(
            e("trux"),
            "invalid character 'x' in literal true (expecting 'e')"
        );
        assert_eq!(e("\"a\nb\""), "invalid character '\\n' in string literal");
        assert_eq!(
            e("'a'"),
            "invalid character '\\'' looking for beginning of value"
        );
        assert_eq!(
            e("1e400"),
            "json: cannot unmarshal number 1e400 into Go value of type float64"
        );
    }

    #[test]
    fn escapes() {
        let n = Node::Str("<a&b>\u{2028}\u{1}\u{8}é".into());
        assert_eq!(
            to_json(&n, true),
            "\"\\u003ca\\u0026b\\u003e\\u2028\\u0001\\bé\""
        );
        assert_eq!(to_json(&n, false), "\"<a&b>\\u2028\\u0001\\bé\"");
    }
}

/// The nesting of a JSON text: the most `[`/`{` open at once outside strings
/// (a linear scan that parses nothing; malformed text is the decoder's
/// business).
fn json_nesting(b: &[u8]) -> usize {
    let (mut depth, mut max, mut in_str, mut esc) = (0usize, 0usize, false, false);
    for &c in b {
        if in_str {
            match c {
                _ if esc => esc = false,
                b'\\' => esc = true,
                b'"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Stack one nesting level of a serde_json decode may take, debug builds
/// included, with room to spare.
const JSON_LEVEL_STACK: usize = 8 * 1024;

/// `serde_json::from_slice` with Go's `encoding/json` nesting limit (10,000
/// levels, `exceeded max depth of 10000`) in place of serde_json's 128: a
/// release record or a simulated cluster's state holds values as deep as
/// Helm accepts. Text nested deeper than serde_json's own limit is decoded
/// on a stack segment sized for its depth.
pub fn json_from_slice<T: serde::de::DeserializeOwned>(b: &[u8]) -> serde_json::Result<T> {
    let depth = json_nesting(b);
    if depth > super::parse::MAX_DEPTH {
        return Err(serde::de::Error::custom(format!(
            "exceeded max depth of {}",
            super::parse::MAX_DEPTH
        )));
    }
    if depth <= 100 {
        return serde_json::from_slice(b);
    }
    let decode = || {
        let mut de = serde_json::Deserializer::from_slice(b);
        de.disable_recursion_limit();
        let v = T::deserialize(&mut de)?;
        de.end()?;
        Ok(v)
    };
    stacker::grow(depth * JSON_LEVEL_STACK + (1 << 20), decode)
}

/// [`json_from_slice`] for text.
pub fn json_from_str<T: serde::de::DeserializeOwned>(s: &str) -> serde_json::Result<T> {
    json_from_slice(s.as_bytes())
}

#[cfg(test)]
mod deep_tests {
    use super::*;

    #[test]
    fn json_from_slice_reads_helms_depth_on_a_small_stack() {
        let ok = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
        let bad = format!("{}1{}", "[".repeat(10_001), "]".repeat(10_001));
        let r = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let v: serde_json::Result<Node> = json_from_str(&ok);
                let deep_ok = v.is_ok();
                // The value is dropped here, on this thread, too.
                drop(v);
                let e = json_from_str::<Node>(&bad).unwrap_err().to_string();
                (deep_ok, e)
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(r.0);
        assert_eq!(r.1, "exceeded max depth of 10000");
        assert_eq!(json_nesting(br#"{"a":"[[[{","b":[{}]}"#), 3);
        assert_eq!(
            json_from_str::<Node>("[1,2]").unwrap(),
            Node::Seq(vec![Node::Int(1), Node::Int(2)])
        );
    }
}

/// A node as a `serde_json::Value` (what `kubectl` sends for a YAML
/// object): integers stay integers, an integral float64 below 2^63 becomes
/// an integer as Go's JSON writes it, other floats stay floats (a
/// non-finite one, which JSON cannot hold, becomes `null`). Deep nodes are
/// walked on a growing stack.
pub fn to_json_value(n: &Node) -> serde_json::Value {
    use serde_json::Value;
    crate::stack::deeper(|| match n {
        Node::Null => Value::Null,
        Node::Bool(b) => Value::Bool(*b),
        Node::Int(i) => Value::from(*i),
        Node::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Value::from(*f as i64),
        Node::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        Node::Str(s) => Value::String(crate::gostd::gostr::to_valid(s).into_owned()),
        Node::Seq(items) => Value::Array(items.iter().map(to_json_value).collect()),
        Node::Map(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), to_json_value(v)))
                .collect(),
        ),
    })
}
