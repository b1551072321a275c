//! TOML as Helm's `toToml`/`fromToml` see it (github.com/BurntSushi/toml v1.4).
//!
//! Encoding: a table's plain keys first (sorted by bytes), then its sub-tables
//! and arrays of tables; sub-tables indented by two spaces per level; a blank
//! line before top-level tables and before every `[[array]]` entry; floats in
//! Go's `'f'` format with `.0` added when integral; nil map values skipped.
//!
//! Decoding: integers are int64 ([`Node::Int`]), floats float64, date-times are
//! kept as RFC 3339 text. Errors follow BurntSushi's wording and its line
//! numbers (which count the line the lexer stopped on, so an error at the end
//! of the last line reports that line, or `0` for a one-line text).
use super::Node;
use std::collections::BTreeMap;

/// Nesting deeper than this is refused (`exceeded max depth`): the TOML
/// reader and writer recurse per level, on the caller's stack.
const MAX_TOML_DEPTH: usize = 200;

/// Why a value cannot be written as TOML.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TomlEncodeError {
    /// The top-level value is nil: Go panics inside reflection.
    #[error("reflect: call of reflect.Value.Type on zero Value")]
    Nil,
    /// A list holds a nil element.
    #[error("toml: cannot encode array with nil element")]
    NilElement,
    /// A list of tables at the top level has no key to be written under.
    #[error("toml: top-level values must be Go maps or structs")]
    NoKey,
    /// A float that TOML cannot hold in Go's encoder (never: inf/nan are written).
    #[error("toml: {0}")]
    Other(String),
}

fn is_table(n: &Node) -> bool {
    match n {
        Node::Map(_) => true,
        Node::Seq(items) => is_table_array(items),
        _ => false,
    }
}

fn is_table_array(items: &[Node]) -> bool {
    !items.is_empty() && items.iter().all(|x| matches!(x, Node::Map(_)))
}

fn bare_key(k: &str) -> bool {
    !k.is_empty()
        && k.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
}

fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn key_part(k: &str) -> String {
    if bare_key(k) {
        k.to_string()
    } else {
        quote(k)
    }
}

fn key_path(path: &[String]) -> String {
    path.iter()
        .map(|k| key_part(k))
        .collect::<Vec<_>>()
        .join(".")
}

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)` with `.0` added when there is
/// no fraction, as BurntSushi writes floats.
fn toml_float(f: f64) -> String {
    if f.is_nan() {
        return if f.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    let s = format!("{f}");
    if s.contains('.') {
        s
    } else {
        format!("{s}.0")
    }
}

struct Enc {
    out: String,
    written: bool,
}

impl Enc {
    fn w(&mut self, s: &str) {
        self.out.push_str(s);
        self.written = true;
    }

    fn newline(&mut self) {
        if self.written {
            self.w("\n");
        }
    }

    fn indent(path: &[String]) -> String {
        "  ".repeat(path.len().saturating_sub(1))
    }

    fn element(&mut self, n: &Node) -> Result<(), TomlEncodeError> {
        match n {
            Node::Null => return Err(TomlEncodeError::NilElement),
            Node::Bool(b) => self.w(if *b { "true" } else { "false" }),
            Node::Int(i) => self.w(&i.to_string()),
            Node::Float(f) => self.w(&toml_float(*f)),
            Node::Str(s) => self.w(&quote(s)),
            Node::Seq(items) => {
                if items.iter().any(|x| matches!(x, Node::Null)) {
                    return Err(TomlEncodeError::NilElement);
                }
                self.w("[");
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        self.w(", ");
                    }
                    self.element(x)?;
                }
                self.w("]");
            }
            Node::Map(m) => {
                self.w("{");
                let (direct, sub) = split(m);
                let n = direct.len() + sub.len();
                for (i, (k, v)) in direct.into_iter().chain(sub).enumerate() {
                    self.w(&key_part(k));
                    self.w(" = ");
                    self.element(v)?;
                    if i + 1 != n {
                        self.w(", ");
                    }
                }
                self.w("}");
            }
        }
        Ok(())
    }

    fn key_value(&mut self, path: &[String], v: &Node) -> Result<(), TomlEncodeError> {
        if path.is_empty() {
            return self.element(v);
        }
        let line = format!(
            "{}{} = ",
            Self::indent(path),
            key_part(&path[path.len() - 1])
        );
        self.w(&line);
        self.element(v)?;
        self.newline();
        Ok(())
    }

    fn encode(&mut self, path: &mut Vec<String>, v: &Node) -> Result<(), TomlEncodeError> {
        match v {
            Node::Null => Ok(()),
            Node::Map(m) => self.table(path, m),
            Node::Seq(items) if is_table_array(items) => {
                if path.is_empty() {
                    return Err(TomlEncodeError::NoKey);
                }
                if items.iter().any(|x| matches!(x, Node::Null)) {
                    return Err(TomlEncodeError::NilElement);
                }
                for item in items {
                    if let Node::Map(m) = item {
                        self.newline();
                        let header = format!("{}[[{}]]", Self::indent(path), key_path(path));
                        self.w(&header);
                        self.newline();
                        self.map_body(path, m)?;
                    }
                }
                Ok(())
            }
            other => self.key_value(path, other),
        }
    }

    fn table(
        &mut self,
        path: &mut Vec<String>,
        m: &BTreeMap<String, Node>,
    ) -> Result<(), TomlEncodeError> {
        if path.len() == 1 {
            self.newline();
        }
        if !path.is_empty() {
            let header = format!("{}[{}]", Self::indent(path), key_path(path));
            self.w(&header);
            self.newline();
        }
        self.map_body(path, m)
    }

    fn map_body(
        &mut self,
        path: &mut Vec<String>,
        m: &BTreeMap<String, Node>,
    ) -> Result<(), TomlEncodeError> {
        let (direct, sub) = split(m);
        for (k, v) in direct.into_iter().chain(sub) {
            path.push(k.clone());
            let r = self.encode(path, v);
            path.pop();
            r?;
        }
        Ok(())
    }
}

/// A map's entries: plain values first, then tables, each sorted by key;
/// nil values dropped.
type Entries<'a> = Vec<(&'a String, &'a Node)>;

fn split(m: &BTreeMap<String, Node>) -> (Entries<'_>, Entries<'_>) {
    let mut direct = Vec::new();
    let mut sub = Vec::new();
    for (k, v) in m {
        if matches!(v, Node::Null) {
            continue;
        }
        if is_table(v) {
            sub.push((k, v));
        } else {
            direct.push((k, v));
        }
    }
    (direct, sub)
}

/// BurntSushi's `Encoder.Encode` of a value, with its errors.
pub fn try_to_toml(node: &Node) -> Result<String, TomlEncodeError> {
    if matches!(node, Node::Null) {
        return Err(TomlEncodeError::Nil);
    }
    let mut e = Enc {
        out: String::new(),
        written: false,
    };
    e.encode(&mut Vec::new(), node)?;
    Ok(e.out)
}

/// Helm's `toToml`: the TOML text, or the encoder's error text when it fails
/// (a nil top-level value is reported by [`try_to_toml`] as an error that
/// Helm raises as a template error instead).
pub fn to_toml(node: &Node) -> String {
    match try_to_toml(node) {
        Ok(s) => s,
        Err(e) => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_values;

    // Outputs captured from real Helm v3.17.2 (`toToml`).
    #[test]
    fn encoder_matches_helm() {
        let cases = [
            (
                "m: [[1, 2], [a]]\np: []\nq: [1, a, true]\nz: x\nn: null\no: {}\na: {b: {c: 1, d: {e: 2}}, f: 3}\nl: [{n: 1}, {n: 2, m: {k: v}}]\n",
                "m = [[1.0, 2.0], [\"a\"]]\np = []\nq = [1.0, \"a\", true]\nz = \"x\"\n\n[a]\n  f = 3.0\n  [a.b]\n    c = 1.0\n    [a.b.d]\n      e = 2.0\n\n[[l]]\n  false = 1.0\n\n[[l]]\n  false = 2.0\n  [l.m]\n    k = \"v\"\n\n[o]\n",
            ),
            (
                "\"a b\": 1\n\"é\": 2\n\"a.b\": 3\n\"\": 4\n\"1\": 5\nA-b_c: 6\n\"q\\\"\": 7\ns1: \"line1\\nline2\"\ns2: \"tab\\there\"\ns3: \"quote\\\" back\\\\\"\ns5: \"\\u0001\\u007f\"\n",
                "\"\" = 4.0\n1 = 5.0\nA-b_c = 6.0\n\"a b\" = 1.0\n\"a.b\" = 3.0\n\"q\\\"\" = 7.0\ns1 = \"line1\\nline2\"\ns2 = \"tab\\there\"\ns3 = \"quote\\\" back\\\\\"\ns5 = \"\\u0001\\u007f\"\n\"é\" = 2.0\n",
            ),
            (
                "f1: 1e21\nf2: 1e-7\nf3: 0.1\nf4: -0.0\nf5: 123456789.123\nf8: 12345678901234567890\nf9: -1000000\n",
                "f1 = 1000000000000000000000.0\nf2 = 0.0000001\nf3 = 0.1\nf4 = -0.0\nf5 = 123456789.123\nf8 = 12345678901234567000.0\nf9 = -1000000.0\n",
            ),
        ];
        for (values, want) in cases {
            let n = parse_values(values).unwrap();
            assert_eq!(to_toml(&n), want, "{values}");
        }
    }

    #[test]
    fn nested_arrays_of_tables_and_inline_tables() {
        let t = |pairs: Vec<(&str, Node)>| {
            Node::Map(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
        };
        let n = t(vec![(
            "a",
            Node::Seq(vec![t(vec![(
                "b",
                Node::Seq(vec![t(vec![("c", Node::Int(1))])]),
            )])]),
        )]);
        assert_eq!(to_toml(&n), "[[a]]\n\n  [[a.b]]\n    c = 1\n");
        let n = t(vec![(
            "a",
            Node::Seq(vec![Node::Seq(vec![t(vec![("b", Node::Int(1))])])]),
        )]);
        assert_eq!(to_toml(&n), "a = [[{b = 1}]]\n");
        let n = t(vec![("a", t(vec![("b", t(vec![]))]))]);
        assert_eq!(to_toml(&n), "[a]\n  [a.b]\n");
        assert_eq!(to_toml(&Node::Str("s".into())), "\"s\"");
        assert_eq!(try_to_toml(&Node::Null), Err(TomlEncodeError::Nil));
    }
}

/// Why a TOML text could not be read; `Display` is BurntSushi's message:
/// `toml: line N (last key "k"): message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("toml: line {line}{}: {message}", last_key_suffix(.last_key))]
pub struct TomlError {
    /// The line BurntSushi reports (see the module notes).
    pub line: usize,
    /// The last key read before the error, if any.
    pub last_key: String,
    /// The message.
    pub message: String,
}

fn last_key_suffix(k: &str) -> String {
    if k.is_empty() {
        String::new()
    } else {
        format!(" (last key {})", crate::gostd::strconv::quote(k))
    }
}

/// Go's `%q` of a rune.
fn go_rune_q(c: char) -> String {
    match c {
        '\'' => "'\\''".into(),
        '"' => "'\"'".into(),
        c => {
            let q = crate::gostd::strconv::quote(&c.to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

struct P<'a> {
    s: &'a str,
    c: Vec<char>,
    i: usize,
    line: usize,
    root: Node,
    /// The table key-values go into.
    table: Vec<String>,
    last_key: Vec<String>,
    explicit: std::collections::HashSet<Vec<String>>,
    arrays: std::collections::HashSet<Vec<String>>,
    inline: std::collections::HashSet<Vec<String>>,
    depth: usize,
}

type R<T> = Result<T, TomlError>;

impl P<'_> {
    fn peek(&self) -> Option<char> {
        self.c.get(self.i).copied()
    }
    fn peek_at(&self, k: usize) -> Option<char> {
        self.c.get(self.i + k).copied()
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.i += 1;
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }
    fn last_key_text(&self) -> String {
        self.last_key.join(".")
    }
    fn err(&self, message: impl Into<String>) -> TomlError {
        TomlError {
            line: self.line,
            last_key: self.last_key_text(),
            message: message.into(),
        }
    }
    /// An error at the end of the text: BurntSushi reports one line less.
    fn eof(&self, what: &str) -> TomlError {
        TomlError {
            line: self.s.matches('\n').count(),
            last_key: self.last_key_text(),
            message: format!("unexpected EOF; expected {what}"),
        }
    }
    fn ws(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.i += 1;
        }
    }
    fn comment(&mut self) {
        if self.peek() == Some('#') {
            while !matches!(self.peek(), None | Some('\n')) {
                self.i += 1;
            }
        }
    }
    /// Whitespace, newlines and comments (inside arrays).
    fn ws_nl(&mut self) {
        loop {
            self.ws();
            self.comment();
            match self.peek() {
                Some('\n') => {
                    self.bump();
                }
                Some('\r') if self.peek_at(1) == Some('\n') => {
                    self.i += 1;
                    self.bump();
                }
                _ => return,
            }
        }
    }

    fn key(&mut self) -> R<Vec<String>> {
        let mut parts = Vec::new();
        loop {
            self.ws();
            let part = match self.peek() {
                Some('"') => {
                    self.i += 1;
                    self.basic_string()?
                }
                Some('\'') => {
                    self.i += 1;
                    self.literal_string()?
                }
                Some(c) if c.is_ascii_alphanumeric() || c == '_' || c == '-' => {
                    let st = self.i;
                    while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || c == '_' || c == '-')
                    {
                        self.i += 1;
                    }
                    self.c[st..self.i].iter().collect()
                }
                None => return Err(self.eof("key")),
                Some(c) => {
                    self.bump();
                    return Err(self.err(format!("bare keys cannot contain {}", go_rune_q(c))));
                }
            };
            parts.push(part);
            if parts.len() + self.table.len() > MAX_TOML_DEPTH {
                return Err(self.err("exceeded max depth"));
            }
            self.ws();
            if self.peek() == Some('.') {
                self.i += 1;
                continue;
            }
            return Ok(parts);
        }
    }

    fn basic_string(&mut self) -> R<String> {
        let mut out = String::new();
        loop {
            match self.peek() {
                None => return Err(self.eof("'\"'")),
                Some('"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some('\n') => {
                    self.bump();
                    return Err(self.err("strings cannot contain newlines"));
                }
                Some('\\') => {
                    self.i += 1;
                    out.push(self.escape()?);
                }
                Some(c) => {
                    self.i += 1;
                    out.push(c);
                }
            }
        }
    }

    fn escape(&mut self) -> R<char> {
        let Some(e) = self.bump() else {
            return Err(self.eof("'\"'"));
        };
        Ok(match e {
            'b' => '\u{8}',
            't' => '\t',
            'n' => '\n',
            'f' => '\u{c}',
            'r' => '\r',
            'e' => '\u{1b}',
            '"' => '"',
            '\\' => '\\',
            'u' | 'U' => {
                let n = if e == 'u' { 4 } else { 8 };
                let mut v = 0u32;
                for _ in 0..n {
                    match self.bump().and_then(|c| c.to_digit(16)) {
                        Some(d) => v = v * 16 + d,
                        None => {
                            return Err(self.err(format!(
                                "invalid escape: '\\{e}' must be followed by {n} hex digits"
                            )))
                        }
                    }
                }
                char::from_u32(v).ok_or_else(|| {
                    self.err(format!("invalid escape: \\{e}{v:0n$X} is not a valid Unicode code point"))
                })?
            }
            other => {
                return Err(self.err(format!(
                    "invalid escape character {}; only the following escape characters are allowed: \\b, \\t, \\n, \\f, \\r, \\\", \\\\, \\uXXXX, and \\UXXXXXXXX",
                    go_rune_q(other)
                )))
            }
        })
    }

    fn literal_string(&mut self) -> R<String> {
        let mut out = String::new();
        loop {
            match self.peek() {
                None => return Err(self.eof("\"'\"")),
                Some('\'') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some('\n') => {
                    self.bump();
                    return Err(self.err("strings cannot contain newlines"));
                }
                Some(c) => {
                    self.i += 1;
                    out.push(c);
                }
            }
        }
    }

    fn multiline(&mut self, quote: char) -> R<String> {
        // Opening delimiter consumed; a newline right after it is dropped.
        if self.peek() == Some('\n') {
            self.bump();
        } else if self.peek() == Some('\r') && self.peek_at(1) == Some('\n') {
            self.i += 1;
            self.bump();
        }
        let mut out = String::new();
        loop {
            match self.peek() {
                None => {
                    return Err(self.eof(if quote == '"' { "'\"'" } else { "\"'\"" }));
                }
                Some(c)
                    if c == quote
                        && self.peek_at(1) == Some(quote)
                        && self.peek_at(2) == Some(quote) =>
                {
                    self.i += 3;
                    // Up to two more quotes belong to the content.
                    let mut extra = 0;
                    while self.peek() == Some(quote) && extra < 2 {
                        out.push(quote);
                        self.i += 1;
                        extra += 1;
                    }
                    return Ok(out);
                }
                Some('\\') if quote == '"' => {
                    self.i += 1;
                    // A line-ending backslash trims the following whitespace.
                    let save = (self.i, self.line);
                    self.ws();
                    if matches!(self.peek(), Some('\n' | '\r')) {
                        while matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r')) {
                            self.bump();
                        }
                    } else {
                        (self.i, self.line) = save;
                        out.push(self.escape()?);
                    }
                }
                Some(c) => {
                    self.bump();
                    out.push(c);
                }
            }
        }
    }

    fn value(&mut self) -> R<Node> {
        if matches!(self.peek(), Some('[' | '{')) {
            self.depth += 1;
            if self.depth > MAX_TOML_DEPTH {
                return Err(self.err("exceeded max depth"));
            }
            let r = self.value_inner();
            self.depth -= 1;
            return r;
        }
        self.value_inner()
    }

    fn value_inner(&mut self) -> R<Node> {
        match self.peek() {
            None => Err(self.eof("value")),
            Some('"') => {
                if self.peek_at(1) == Some('"') && self.peek_at(2) == Some('"') {
                    self.i += 3;
                    self.multiline('"').map(Node::Str)
                } else {
                    self.i += 1;
                    self.basic_string().map(Node::Str)
                }
            }
            Some('\'') => {
                if self.peek_at(1) == Some('\'') && self.peek_at(2) == Some('\'') {
                    self.i += 3;
                    self.multiline('\'').map(Node::Str)
                } else {
                    self.i += 1;
                    self.literal_string().map(Node::Str)
                }
            }
            Some('[') => {
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.ws_nl();
                    match self.peek() {
                        Some(']') => {
                            self.i += 1;
                            return Ok(Node::Seq(items));
                        }
                        None => return Err(self.eof("value")),
                        _ => {}
                    }
                    items.push(self.value()?);
                    self.ws_nl();
                    match self.peek() {
                        Some(',') => self.i += 1,
                        Some(']') => {
                            self.i += 1;
                            return Ok(Node::Seq(items));
                        }
                        None => return Err(self.eof("array separator ',' or ']'")),
                        Some(c) => {
                            self.bump();
                            return Err(self.err(format!(
                                "expected a comma (',') or array terminator (']'), but got {}",
                                go_rune_q(c)
                            )));
                        }
                    }
                }
            }
            Some('{') => {
                self.i += 1;
                let mut m = Node::Map(BTreeMap::new());
                self.ws();
                if self.peek() == Some('}') {
                    self.i += 1;
                    return Ok(m);
                }
                loop {
                    let key = self.key()?;
                    if self.peek() != Some('=') {
                        return Err(self.expected_eq());
                    }
                    self.i += 1;
                    self.ws();
                    let v = self.value()?;
                    set_path(&mut m, &key, v)
                        .map_err(|k| self.err(format!("Key '{k}' has already been defined.")))?;
                    self.ws();
                    match self.peek() {
                        Some(',') => self.i += 1,
                        Some('}') => {
                            self.i += 1;
                            return Ok(m);
                        }
                        None => return Err(self.eof("'}'")),
                        Some(c) => {
                            self.bump();
                            return Err(self.err(format!(
                                "expected a comma or an inline table terminator '}}', but got {} instead",
                                go_rune_q(c)
                            )));
                        }
                    }
                }
            }
            Some(_) => self.scalar(),
        }
    }

    fn expected_eq(&mut self) -> TomlError {
        match self.bump() {
            None => self.eof("'='"),
            Some(c) => self.err(format!(
                "expected '.' or '=', but got {} instead",
                go_rune_q(c)
            )),
        }
    }

    fn scalar(&mut self) -> R<Node> {
        let st = self.i;
        let word_char =
            |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '-' | '.' | ':');
        while matches!(self.peek(), Some(c) if word_char(c)) {
            self.i += 1;
        }
        // `1979-05-27 07:32:00`: a date, one space, a time.
        let date_like = |t: &[char]| t.len() == 10 && t[4] == '-' && t[7] == '-';
        if date_like(&self.c[st..self.i])
            && self.peek() == Some(' ')
            && matches!(self.peek_at(1), Some(c) if c.is_ascii_digit())
            && matches!(self.peek_at(2), Some(c) if c.is_ascii_digit())
            && self.peek_at(3) == Some(':')
        {
            self.i += 1;
            while matches!(self.peek(), Some(c) if word_char(c)) {
                self.i += 1;
            }
        }
        let tok: String = self.c[st..self.i].iter().collect();
        if tok.is_empty() {
            let c = self.bump().unwrap_or(' ');
            return Err(self.err(format!("expected value but found {} instead", go_rune_q(c))));
        }
        match tok.as_str() {
            "true" => return Ok(Node::Bool(true)),
            "false" => return Ok(Node::Bool(false)),
            "inf" | "+inf" => return Ok(Node::Float(f64::INFINITY)),
            "-inf" => return Ok(Node::Float(f64::NEG_INFINITY)),
            "nan" | "+nan" | "-nan" => return Ok(Node::Float(f64::NAN)),
            _ => {}
        }
        let first = tok.chars().next().unwrap_or(' ');
        if !(first.is_ascii_digit() || first == '+' || first == '-') {
            return Err(self.err(format!(
                "expected value but found {} instead",
                crate::gostd::strconv::quote(&tok)
            )));
        }
        if let Some(dt) = datetime(&tok) {
            return Ok(Node::Str(dt));
        }
        if let Some(n) = toml_int(&tok) {
            return n
                .map(Node::Int)
                .map_err(|_| self.err(format!("{tok} is out of range for int64")));
        }
        if let Some(f) = toml_float_value(&tok) {
            return Ok(Node::Float(f));
        }
        Err(self.err(format!(
            "invalid number: {}",
            crate::gostd::strconv::quote(&tok)
        )))
    }

    fn end_of_line(&mut self) -> R<()> {
        self.ws();
        self.comment();
        match self.peek() {
            None => Ok(()),
            Some('\n') => {
                self.bump();
                Ok(())
            }
            Some('\r') if self.peek_at(1) == Some('\n') => {
                self.i += 1;
                self.bump();
                Ok(())
            }
            Some(c) => {
                self.bump();
                Err(self.err(format!(
                    "expected a top-level item to end with a newline, comment, or EOF, but got {} instead",
                    go_rune_q(c)
                )))
            }
        }
    }

    fn document(&mut self) -> R<()> {
        loop {
            self.ws_nl();
            match self.peek() {
                None => return Ok(()),
                Some('[') => {
                    let array = self.peek_at(1) == Some('[');
                    self.i += if array { 2 } else { 1 };
                    let line = self.line;
                    let key = self.key()?;
                    if self.peek() != Some(']') || (array && self.peek_at(1) != Some(']')) {
                        return match self.bump() {
                            None => Err(self.eof("']'")),
                            Some(c) => Err(self.err(format!(
                                "expected a closing bracket, but got {} instead",
                                go_rune_q(c)
                            ))),
                        };
                    }
                    self.i += if array { 2 } else { 1 };
                    self.last_key = key[..key.len() - 1].to_vec();
                    self.open_table(&key, array).map_err(|m| TomlError {
                        line,
                        last_key: String::new(),
                        message: m,
                    })?;
                    self.table = key;
                    self.last_key = self.table.clone();
                    self.end_of_line()?;
                }
                Some(_) => {
                    let line = self.line;
                    let key = self.key()?;
                    if self.peek() != Some('=') {
                        return Err(self.expected_eq());
                    }
                    self.i += 1;
                    self.last_key = self.table.iter().chain(&key).cloned().collect();
                    self.ws();
                    let v = self.value()?;
                    let mut full = self.table.clone();
                    full.extend(key.iter().cloned());
                    if full.len() > 1 && self.inline.contains(&full[..full.len() - 1]) {
                        return Err(TomlError {
                            line,
                            last_key: self.last_key_text(),
                            message: format!("Key '{}' has already been defined.", full.join(".")),
                        });
                    }
                    let is_inline = matches!(v, Node::Map(_));
                    let dup = TomlError {
                        line,
                        last_key: self.last_key_text(),
                        message: format!("Key '{}' has already been defined.", full.join(".")),
                    };
                    let table = self.table.clone();
                    let target =
                        resolve_table(&mut self.root, &table).ok_or_else(|| dup.clone())?;
                    set_path(target, &key, v).map_err(|_| dup)?;
                    if is_inline {
                        self.inline.insert(full);
                    }
                    self.end_of_line()?;
                }
            }
        }
    }

    fn open_table(&mut self, key: &[String], array: bool) -> Result<(), String> {
        let dup = || format!("Key '{}' has already been defined.", key.join("."));
        if self.inline.contains(key) {
            return Err(dup());
        }
        let parent = resolve_table(&mut self.root, &key[..key.len() - 1]).ok_or_else(dup)?;
        let Node::Map(m) = parent else {
            return Err(dup());
        };
        let last = &key[key.len() - 1];
        if array {
            match m.get_mut(last) {
                None => {
                    m.insert(last.clone(), Node::Seq(vec![Node::Map(BTreeMap::new())]));
                    self.arrays.insert(key.to_vec());
                }
                Some(Node::Seq(items)) if self.arrays.contains(key) => {
                    items.push(Node::Map(BTreeMap::new()));
                }
                Some(_) => return Err(dup()),
            }
            // Tables under the previous element are forgotten.
            let prefix = key.to_vec();
            self.explicit
                .retain(|p| !(p.len() > prefix.len() && p.starts_with(&prefix)));
            return Ok(());
        }
        match m.get(last) {
            None => {
                m.insert(last.clone(), Node::Map(BTreeMap::new()));
            }
            Some(Node::Map(_)) if !self.explicit.contains(key) => {}
            Some(_) => return Err(dup()),
        }
        self.explicit.insert(key.to_vec());
        Ok(())
    }
}

/// The map at `path`, creating implicit tables, stepping into the last
/// element of arrays of tables. `None` when a value is in the way.
fn resolve_table<'a>(root: &'a mut Node, path: &[String]) -> Option<&'a mut Node> {
    let mut cur = root;
    for k in path {
        let Node::Map(m) = cur else { return None };
        let next = m
            .entry(k.clone())
            .or_insert_with(|| Node::Map(BTreeMap::new()));
        cur = match next {
            Node::Seq(items) => items.last_mut()?,
            other => other,
        };
        if !matches!(cur, Node::Map(_)) {
            return None;
        }
    }
    Some(cur)
}

/// Sets a dotted key in a table; `Err(key)` when it is already defined.
fn set_path(table: &mut Node, key: &[String], v: Node) -> Result<(), String> {
    let Some((last, parents)) = key.split_last() else {
        return Err(String::new());
    };
    let t = resolve_table(table, parents).ok_or_else(|| key.join("."))?;
    let Node::Map(m) = t else {
        return Err(key.join("."));
    };
    if m.contains_key(last) {
        return Err(key.join("."));
    }
    m.insert(last.clone(), v);
    Ok(())
}

fn toml_int(tok: &str) -> Option<Result<i64, ()>> {
    let (neg, body) = match tok.as_bytes().first()? {
        b'+' => (false, &tok[1..]),
        b'-' => (true, &tok[1..]),
        _ => (false, tok),
    };
    let (radix, digits) = match body.get(..2) {
        Some("0x") if !neg && tok == body => (16, &body[2..]),
        Some("0o") if !neg && tok == body => (8, &body[2..]),
        Some("0b") if !neg && tok == body => (2, &body[2..]),
        _ => (10, body),
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
        || !digits.chars().all(|c| c == '_' || c.is_digit(radix))
    {
        return None;
    }
    if radix == 10 && digits.len() > 1 && digits.starts_with('0') {
        return None;
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    let mag = match u128::from_str_radix(&clean, radix) {
        Ok(m) => m,
        Err(_) => return Some(Err(())),
    };
    let v = if neg { -(mag as i128) } else { mag as i128 };
    Some(i64::try_from(v).map_err(|_| ()))
}

fn toml_float_value(tok: &str) -> Option<f64> {
    let clean: String = tok.chars().filter(|&c| c != '_').collect();
    if tok.contains("__") || tok.ends_with('_') {
        return None;
    }
    let body = clean.trim_start_matches(['+', '-']);
    let int_part: String = body.chars().take_while(|c| c.is_ascii_digit()).collect();
    if int_part.is_empty() || (int_part.len() > 1 && int_part.starts_with('0')) {
        return None;
    }
    if clean.contains('.') {
        let after = clean.split('.').nth(1).unwrap_or("");
        if !after.starts_with(|c: char| c.is_ascii_digit()) {
            return None;
        }
    }
    if !super::resolve::is_yaml_style_float(&clean) {
        return None;
    }
    clean.parse().ok()
}

/// A TOML date-time as Go's JSON would print the `time.Time` BurntSushi
/// builds (local forms are UTC-based).
fn datetime(tok: &str) -> Option<String> {
    let b = tok.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
    let is_time = |s: &str| {
        let t = s.as_bytes();
        t.len() >= 8
            && t[2] == b':'
            && t[5] == b':'
            && t[..2]
                .iter()
                .chain(&t[3..5])
                .chain(&t[6..8])
                .all(u8::is_ascii_digit)
    };
    if b.len() >= 8 && is_time(tok) && !(b.len() >= 10 && b[4] == b'-') {
        let frac = trim_frac(&tok[8..])?;
        return Some(format!("0000-01-01T{}{frac}Z", &tok[..8]));
    }
    if !(digits(0..4)
        && b.get(4) == Some(&b'-')
        && digits(5..7)
        && b.get(7) == Some(&b'-')
        && digits(8..10))
    {
        return None;
    }
    let date = &tok[..10];
    if b.len() == 10 {
        return Some(format!("{date}T00:00:00Z"));
    }
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let rest = &tok[11..];
    if !is_time(rest) {
        return None;
    }
    let time = &rest[..8];
    let mut tail = &rest[8..];
    let mut frac = String::new();
    if let Some(t) = tail.strip_prefix('.') {
        let n = t.bytes().take_while(u8::is_ascii_digit).count();
        frac = trim_frac(&tail[..n + 1])?;
        tail = &t[n..];
    }
    let zone = match tail {
        "" | "Z" | "z" => "Z".to_string(),
        z if z.len() == 6
            && (z.starts_with('+') || z.starts_with('-'))
            && z.as_bytes()[3] == b':' =>
        {
            z.to_string()
        }
        _ => return None,
    };
    Some(format!("{date}T{time}{frac}{zone}"))
}

/// RFC 3339 nano fraction: trailing zeros dropped, nothing when zero.
fn trim_frac(f: &str) -> Option<String> {
    if f.is_empty() {
        return Some(String::new());
    }
    let digits = f.strip_prefix('.')?;
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let t = digits.trim_end_matches('0');
    Some(if t.is_empty() {
        String::new()
    } else {
        format!(".{t}")
    })
}

/// Helm's `fromToml` reading (BurntSushi's `toml.Unmarshal` into
/// `map[string]interface{}`): a table of int64, float64, bool, string,
/// date-time (as RFC 3339 text), arrays and tables.
pub fn parse_toml(text: &str) -> Result<Node, TomlError> {
    let mut p = P {
        s: text,
        c: text.chars().collect(),
        i: 0,
        line: 1,
        root: Node::Map(BTreeMap::new()),
        table: Vec::new(),
        last_key: Vec::new(),
        explicit: Default::default(),
        arrays: Default::default(),
        inline: Default::default(),
        depth: 0,
    };
    if p.peek() == Some('\u{feff}') {
        p.i += 1;
    }
    p.document()?;
    Ok(p.root)
}

#[cfg(test)]
mod parse_tests {
    use super::*;
    use crate::yaml::to_json;

    // Messages and values captured from real Helm v3.17.2 (`fromToml`).
    #[test]
    fn errors_like_burntsushi() {
        let e = |s: &str| parse_toml(s).unwrap_err().to_string();
        assert_eq!(
            e("a = "),
            "toml: line 0 (last key \"a\"): unexpected EOF; expected value"
        );
        assert_eq!(
            e("a = 1\na = 2"),
            "toml: line 2 (last key \"a\"): Key 'a' has already been defined."
        );
        assert_eq!(
            e("[a]\nb = 1\n[a]\nc = 2"),
            "toml: line 3: Key 'a' has already been defined."
        );
        assert_eq!(
            e("a = \"x"),
            "toml: line 0 (last key \"a\"): unexpected EOF; expected '\"'"
        );
        assert_eq!(
            e("a = [1,\n"),
            "toml: line 1 (last key \"a\"): unexpected EOF; expected value"
        );
        assert_eq!(
            e("x\ny = 1"),
            "toml: line 2: expected '.' or '=', but got '\\n' instead"
        );
        assert_eq!(
            e("a = 1\nb = "),
            "toml: line 1 (last key \"b\"): unexpected EOF; expected value"
        );
        assert_eq!(
            e("a = 1\n\n\nb = tru"),
            "toml: line 4 (last key \"b\"): expected value but found \"tru\" instead"
        );
        assert_eq!(
            e("a = 99999999999999999999"),
            "toml: line 1 (last key \"a\"): 99999999999999999999 is out of range for int64"
        );
    }

    #[test]
    fn values_like_burntsushi() {
        let n = parse_toml("a = 1.5\nb = 1e3\nc = 2024-01-01\nd = \"x\"\ne = [1, \"a\"]\n[[f]]\ng = 1\n[[f]]\ng = 2\n[h.i]\nj = true").unwrap();
        assert_eq!(
            to_json(&n, true),
            "{\"a\":1.5,\"b\":1000,\"c\":\"2024-01-01T00:00:00Z\",\"d\":\"x\",\"e\":[1,\"a\"],\"f\":[{\"g\":1},{\"g\":2}],\"h\":{\"i\":{\"j\":true}}}"
        );
        let n =
            parse_toml("a = 1979-05-27T07:32:00Z\nb = 07:32:00\nc = 1979-05-27T07:32:00").unwrap();
        assert_eq!(to_json(&n, true), "{\"a\":\"1979-05-27T07:32:00Z\",\"b\":\"0000-01-01T07:32:00Z\",\"c\":\"1979-05-27T07:32:00Z\"}");
        let n = parse_toml("a = 1\n[b]\nc = 'd'\nl = [1, 2]").unwrap();
        assert_eq!(
            to_json(&n, true),
            "{\"a\":1,\"b\":{\"c\":\"d\",\"l\":[1,2]}}"
        );
        assert!(matches!(&n, Node::Map(m) if m["a"] == Node::Int(1)));
        let n =
            parse_toml("c = 0x1F\nd = 1_000\ns = \"\"\"\nx\\\n   y\"\"\"\nt = {a = 1, b.c = 2}")
                .unwrap();
        assert_eq!(
            to_json(&n, true),
            "{\"c\":31,\"d\":1000,\"s\":\"xy\",\"t\":{\"a\":1,\"b\":{\"c\":2}}}"
        );
        assert_eq!(parse_toml("").unwrap(), Node::Map(BTreeMap::new()));
        assert_eq!(parse_toml("# c").unwrap(), Node::Map(BTreeMap::new()));
    }
}
