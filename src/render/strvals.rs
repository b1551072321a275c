//! Helm's `strvals`: the `--set` family's `a.b[0].c=v,x={1,2}` syntax.
//!
//! Values come out as [`Node`]s with Helm's typing: `--set` gives bools, nil,
//! int64 ([`Node::Int`]) for base-10 integers that do not start with `0`, and
//! strings otherwise; `--set-string` and `--set-file` always give strings;
//! `--set-json` gives JSON values (numbers are float64).
use crate::yaml::Node;
use std::collections::BTreeMap;

/// The deepest `a.b.c` nesting Helm accepts.
pub const MAX_NESTED_NAME_LEVEL: usize = 30;
/// The largest list index Helm accepts.
pub const MAX_INDEX: i64 = 65536;

/// A `--set*` expression that Helm would reject.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StrvalsError(pub String);

fn err<T>(m: impl Into<String>) -> Result<T, StrvalsError> {
    Err(StrvalsError(m.into()))
}

/// How right-hand sides are turned into values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `--set`: typed scalars.
    Typed,
    /// `--set-string`: always strings.
    String,
    /// `--set-json`: JSON values.
    Json,
    /// `--set-file`: the right-hand side names a file whose content is the value.
    File,
}

/// Reads `--set-file` paths: the file's content, or an error whose text
/// becomes the [`StrvalsError`] (`open x: no such file or directory`).
pub type FileReader<'a> =
    &'a dyn Fn(&str) -> Result<String, Box<dyn std::error::Error + Send + Sync>>;

/// Outcome of a read that stops at one of a set of runes.
enum Stop {
    Rune(char),
    Eof,
}

/// A mirror of Go's `strvals` parser (and its `literalParser` when `literal`).
///
/// Go's maps are references and its slices share backing arrays, so the Go
/// parser's partial writes survive an `io.EOF` that ends the input early
/// (`a[0]=1,a[0].b=` keeps `b`). Maps are therefore edited in place here, and
/// a list handed to [`Parser::list_item`] keeps, on error, exactly the
/// in-place changes Go would have made to the shared array (never growth).
struct Parser<'a> {
    chars: Vec<char>,
    pos: usize,
    mode: Mode,
    files: Option<FileReader<'a>>,
    literal: bool,
}

/// Sentinel errors of the Go parser: end of input, or "this is not a `{}` list".
enum PErr {
    Eof,
    NotList,
    Err(StrvalsError),
}

impl From<StrvalsError> for PErr {
    fn from(e: StrvalsError) -> Self {
        PErr::Err(e)
    }
}

fn perr(m: impl Into<String>) -> PErr {
    PErr::Err(StrvalsError(m.into()))
}

fn go_type(n: Option<&Node>) -> &'static str {
    match n {
        None | Some(Node::Null) => "nil",
        Some(Node::Bool(_)) => "bool",
        Some(Node::Int(_)) => "int64",
        Some(Node::Float(_)) => "float64",
        Some(Node::Str(_)) => "string",
        Some(Node::Seq(_)) => "[]interface {}",
        Some(Node::Map(_)) => "map[string]interface {}",
    }
}

/// The message of the panic Go's failed type assertion raises, as the
/// parser's `recover` reports it.
fn conversion(found: Option<&Node>, want: &str) -> PErr {
    perr(format!(
        "unable to parse key: interface conversion: interface {{}} is {}, not {want}",
        go_type(found)
    ))
}

/// Go's `%q` of a string.
fn quote(s: &str) -> String {
    crate::gostd::strconv::quote(s)
}

/// Go's `%q` of a `[]rune`: `['a' 'b']`.
fn quote_runes(s: &str) -> String {
    let runes: Vec<String> = s.chars().map(crate::gostd::strconv::quote_rune).collect();
    format!("[{}]", runes.join(" "))
}

/// Go's `strconv.Atoi`, with its error text.
fn atoi(s: &str) -> Result<i64, String> {
    let syntax = || format!("strconv.Atoi: parsing {}: invalid syntax", quote(s));
    let range = || format!("strconv.Atoi: parsing {}: value out of range", quote(s));
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() {
        return Err(syntax());
    }
    let mut n: u64 = 0;
    for b in digits.bytes() {
        if !b.is_ascii_digit() {
            return Err(syntax());
        }
        n = match n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
        {
            Some(n) => n,
            None => return Err(range()),
        };
    }
    if neg {
        if n > 1u64 << 63 {
            return Err(range());
        }
        Ok((n as i128).wrapping_neg() as i64)
    } else {
        i64::try_from(n).map_err(|_| range())
    }
}

fn typed_val(s: String, as_string: bool) -> Node {
    if as_string {
        return Node::Str(s);
    }
    if s.eq_ignore_ascii_case("true") {
        return Node::Bool(true);
    }
    if s.eq_ignore_ascii_case("false") {
        return Node::Bool(false);
    }
    if s.eq_ignore_ascii_case("null") {
        return Node::Null;
    }
    if s == "0" {
        return Node::Int(0);
    }
    if !s.is_empty() && !s.starts_with('0') {
        // strconv.ParseInt accepts a sign, digits only.
        let digits = s.strip_prefix(['+', '-']).unwrap_or(&s);
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(i) = s.parse::<i64>() {
                return Node::Int(i);
            }
        }
    }
    Node::Str(s)
}

/// JSON numbers decode to float64 in Go.
fn json_numbers_to_float(n: Node) -> Node {
    match n {
        Node::Int(i) => Node::Float(i as f64),
        Node::Seq(v) => Node::Seq(v.into_iter().map(json_numbers_to_float).collect()),
        Node::Map(m) => Node::Map(
            m.into_iter()
                .map(|(k, v)| (k, json_numbers_to_float(v)))
                .collect(),
        ),
        other => other,
    }
}

/// The length of the JSON number at the start of `s` as Go's scanner ends it
/// (at the first byte that cannot continue it), or an error when it stops
/// in the middle (`1.`, `-`, `1e+`).
fn json_number_len(s: &[u8]) -> Result<usize, String> {
    let digits = |from: usize| s[from..].iter().take_while(|b| b.is_ascii_digit()).count();
    let bad = |at: usize, ctx: &str| match s.get(at) {
        Some(&c) => Err(format!("invalid character {:?} {ctx}", c as char)),
        None => Err("unexpected EOF".to_string()),
    };
    let mut i = 0;
    if s.first() == Some(&b'-') {
        i = 1;
    }
    match s.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i += digits(i),
        _ => return bad(i, "in numeric literal"),
    }
    if s.get(i) == Some(&b'.') {
        i += 1;
        let n = digits(i);
        if n == 0 {
            return bad(i, "after decimal point in numeric literal");
        }
        i += n;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(s.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let n = digits(i);
        if n == 0 {
            return bad(i, "in exponent of numeric literal");
        }
        i += n;
    }
    Ok(i)
}

/// Decodes the first JSON value of `rest` as Go's `json.Decoder` does:
/// the value and the bytes it used (leading blanks included).
fn decode_json(rest: &str) -> Result<(Node, usize), String> {
    let bytes = rest.as_bytes();
    let lead = bytes
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        .count();
    let body = &rest[lead..];
    match body.as_bytes().first() {
        None => Err("EOF".to_string()),
        Some(b'{' | b'[' | b'"') => {
            let mut stream = serde_json::Deserializer::from_str(body).into_iter::<Node>();
            match stream.next() {
                Some(Ok(v)) => Ok((json_numbers_to_float(v), lead + stream.byte_offset())),
                Some(Err(e)) => Err(e.to_string()),
                None => Err("unexpected EOF".to_string()),
            }
        }
        Some(b'-' | b'0'..=b'9') => {
            let n = json_number_len(body.as_bytes())?;
            let text = &body[..n];
            match text.parse::<f64>() {
                Ok(f) if f.is_finite() => Ok((Node::Float(f), lead + n)),
                _ => Err(format!(
                    "json: cannot unmarshal number {text} into Go value of type float64"
                )),
            }
        }
        Some(_) => {
            for (word, node) in [
                ("true", Node::Bool(true)),
                ("false", Node::Bool(false)),
                ("null", Node::Null),
            ] {
                if body.starts_with(&word[..1]) {
                    if body.starts_with(word) {
                        return Ok((node, lead + word.len()));
                    }
                    return Err(format!("invalid character in literal {word}"));
                }
            }
            let c = body.chars().next().unwrap_or(' ');
            Err(format!(
                "invalid character {c:?} looking for beginning of value"
            ))
        }
    }
}

impl<'a> Parser<'a> {
    fn read(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied();
        if c.is_some() {
            self.pos += 1;
        }
        c
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    /// Reads until a stop rune (consumed); `\` escapes unless literal.
    fn runes_until(&mut self, stop: &[char]) -> (String, Stop) {
        let mut v = String::new();
        loop {
            match self.read() {
                None => return (v, Stop::Eof),
                Some(r) if stop.contains(&r) => return (v, Stop::Rune(r)),
                Some('\\') if !self.literal => match self.read() {
                    None => return (v, Stop::Eof),
                    Some(n) => v.push(n),
                },
                Some(r) => v.push(r),
            }
        }
    }

    /// The rest of the input (the literal parser's value).
    fn rest(&mut self) -> String {
        let v: String = self.chars[self.pos..].iter().collect();
        self.pos = self.chars.len();
        v
    }

    fn reader(&self, rs: String) -> Result<Node, StrvalsError> {
        match self.mode {
            Mode::Typed => Ok(typed_val(rs, false)),
            Mode::String | Mode::Json => Ok(typed_val(rs, true)),
            Mode::File => match self.files {
                Some(f) => f(&rs)
                    .map(Node::Str)
                    .map_err(|e| StrvalsError(e.to_string())),
                None => Ok(Node::Str(rs)),
            },
        }
    }

    fn parse(&mut self, data: &mut BTreeMap<String, Node>) -> Result<(), StrvalsError> {
        loop {
            match self.key(data, 0) {
                Ok(()) => continue,
                Err(PErr::Eof) => return Ok(()),
                Err(PErr::NotList) => return err("not a list"),
                Err(PErr::Err(e)) => return Err(e),
            }
        }
    }

    /// Consumes blanks up to a comma or the end (true), or stops before
    /// anything else (false).
    fn empty_val(&mut self) -> bool {
        loop {
            match self.read() {
                None | Some(',') => return true,
                Some(r) if crate::manifest::split::is_go_space(r) => continue,
                Some(_) => {
                    self.unread();
                    return false;
                }
            }
        }
    }

    fn json_value(&mut self) -> Result<Node, PErr> {
        let rest: String = self.chars[self.pos..].iter().collect();
        let (v, used) = decode_json(&rest).map_err(perr)?;
        self.pos += rest.get(..used).map_or(0, |s| s.chars().count());
        Ok(v)
    }

    /// `keyIndex`, with `key`'s and `listItem`'s wrapping of its error.
    fn key_index(&mut self) -> Result<i64, PErr> {
        let (v, stop) = self.runes_until(&[']']);
        if let Stop::Eof = stop {
            return Err(perr("error parsing index: EOF"));
        }
        atoi(&v).map_err(|e| perr(format!("error parsing index: {e}")))
    }

    /// The value after `=`: `Ok(None)` is Go's `io.EOF` from `valList`
    /// (nothing after the `=`), which sets an empty string.
    fn value(&mut self) -> Result<Node, PErr> {
        match self.val_list() {
            Ok(vl) => Ok(Node::Seq(vl)),
            Err(PErr::NotList) => {
                let (rs, _) = self.runes_until(&[',']);
                Ok(self.reader(rs)?)
            }
            Err(e) => Err(e),
        }
    }

    fn key(&mut self, data: &mut BTreeMap<String, Node>, level: usize) -> Result<(), PErr> {
        let stop: &[char] = if self.literal {
            &['=', '[', '.']
        } else {
            &['=', '[', ',', '.']
        };
        let (k, last) = self.runes_until(stop);
        match last {
            Stop::Eof => {
                if k.is_empty() {
                    Err(PErr::Eof)
                } else {
                    Err(perr(format!("key {} has no value", quote(&k))))
                }
            }
            Stop::Rune('[') => {
                let i = self.key_index()?;
                let mut list = match data.get(&k) {
                    None => Vec::new(),
                    Some(Node::Seq(l)) => l.clone(),
                    Some(other) => return Err(conversion(Some(other), "[]interface {}")),
                };
                let res = self.list_item(&mut list, i, level);
                set(data, &k, Node::Seq(list));
                res
            }
            Stop::Rune('=') => {
                if self.literal {
                    let v = self.rest();
                    set(data, &k, Node::Str(v));
                    return Ok(());
                }
                if self.mode == Mode::Json {
                    if self.empty_val() {
                        set(data, &k, Node::Null);
                        return Ok(());
                    }
                    let v = self.json_value()?;
                    set(data, &k, v);
                    self.empty_val();
                    return Ok(());
                }
                match self.value() {
                    Ok(v) => {
                        set(data, &k, v);
                        Ok(())
                    }
                    Err(PErr::Eof) => {
                        set(data, &k, Node::Str(String::new()));
                        Err(PErr::Eof)
                    }
                    Err(e) => Err(e),
                }
            }
            Stop::Rune(',') => {
                set(data, &k, Node::Str(String::new()));
                Err(perr(format!(
                    "key {} has no value (cannot end with ,)",
                    quote(&k)
                )))
            }
            Stop::Rune(_) => {
                // '.'
                let level = level + 1;
                if level > MAX_NESTED_NAME_LEVEL {
                    return Err(perr(format!(
                        "value name nested level is greater than maximum supported nested level of {MAX_NESTED_NAME_LEVEL}"
                    )));
                }
                match data.get_mut(&k) {
                    Some(Node::Map(inner)) => {
                        // Go edits the map already there.
                        let e = self.key(inner, level);
                        if e.is_ok() && inner.is_empty() {
                            return Err(perr(format!("key map {} has no value", quote(&k))));
                        }
                        e
                    }
                    Some(other) => Err(conversion(Some(other), "map[string]interface {}")),
                    None => {
                        let mut inner = BTreeMap::new();
                        let e = self.key(&mut inner, level);
                        if e.is_ok() && inner.is_empty() {
                            return Err(perr(format!("key map {} has no value", quote(&k))));
                        }
                        if !inner.is_empty() {
                            set(data, &k, Node::Map(inner));
                        }
                        e
                    }
                }
            }
        }
    }

    /// `listItem`: on success `list` is the new list; on error it keeps only
    /// the in-place changes Go makes to the shared backing array.
    fn list_item(&mut self, list: &mut Vec<Node>, i: i64, level: usize) -> Result<(), PErr> {
        if i < 0 {
            return Err(perr(format!("negative {i} index not allowed")));
        }
        // An index past the list (or past usize) is "not in the list".
        let at = usize::try_from(i).ok().filter(|&n| n < list.len());
        let (k, last) = self.runes_until(&['[', '.', '=']);
        if !k.is_empty() {
            return Err(perr(format!(
                "unexpected data at end of array index: {}",
                quote_runes(&k)
            )));
        }
        match last {
            Stop::Eof => Err(PErr::Eof),
            Stop::Rune('=') => {
                if self.literal {
                    let v = self.rest();
                    return set_index(list, i, Node::Str(v));
                }
                if self.mode == Mode::Json {
                    if self.empty_val() {
                        return set_index(list, i, Node::Null);
                    }
                    let v = self.json_value()?;
                    set_index(list, i, v)?;
                    self.empty_val();
                    return Ok(());
                }
                match self.value() {
                    Ok(v) => set_index(list, i, v),
                    Err(PErr::Eof) => set_index(list, i, Node::Str(String::new())),
                    Err(e) => Err(e),
                }
            }
            Stop::Rune('[') => {
                let next = self.key_index()?;
                let mut crt = match at.map(|n| &list[n]) {
                    None | Some(Node::Null) => Vec::new(),
                    Some(Node::Seq(l)) => l.clone(),
                    Some(other) => return Err(conversion(Some(other), "[]interface {}")),
                };
                match self.list_item(&mut crt, next, level) {
                    Ok(()) => set_index(list, i, Node::Seq(crt)),
                    Err(e) => {
                        // The nested list shares its array with list[i].
                        if let Some(n) = at {
                            if matches!(list[n], Node::Seq(_)) {
                                list[n] = Node::Seq(crt);
                            }
                        }
                        Err(e)
                    }
                }
            }
            Stop::Rune(_) => {
                // '.'
                match at {
                    Some(n) => {
                        if !matches!(list[n], Node::Map(_)) {
                            // Go: "indices out of order", an empty map in place.
                            list[n] = Node::Map(BTreeMap::new());
                        }
                        match &mut list[n] {
                            Node::Map(inner) => self.key(inner, level),
                            _ => Ok(()),
                        }
                    }
                    None => {
                        let mut inner = BTreeMap::new();
                        self.key(&mut inner, level)?;
                        set_index(list, i, Node::Map(inner))
                    }
                }
            }
        }
    }

    fn val_list(&mut self) -> Result<Vec<Node>, PErr> {
        match self.read() {
            None => return Err(PErr::Eof),
            Some('{') => {}
            Some(_) => {
                self.unread();
                return Err(PErr::NotList);
            }
        }
        let mut list = Vec::new();
        loop {
            let (rs, last) = self.runes_until(&[',', '}']);
            match last {
                Stop::Eof => return Err(perr("list must terminate with '}'")),
                Stop::Rune('}') => {
                    if let Some(r) = self.read() {
                        if r != ',' {
                            self.unread();
                        }
                    }
                    list.push(self.reader(rs)?);
                    return Ok(list);
                }
                Stop::Rune(_) => list.push(self.reader(rs)?),
            }
        }
    }
}

fn set(data: &mut BTreeMap<String, Node>, key: &str, val: Node) {
    if !key.is_empty() {
        data.insert(key.to_string(), val);
    }
}

/// Go's `setIndex`.
fn set_index(list: &mut Vec<Node>, i: i64, val: Node) -> Result<(), PErr> {
    if i < 0 {
        return Err(perr(format!("negative {i} index not allowed")));
    }
    if i > MAX_INDEX {
        return Err(perr(format!(
            "index of {i} is greater than maximum supported index of {MAX_INDEX}"
        )));
    }
    let Ok(i) = usize::try_from(i) else {
        return Err(perr(format!("error processing index {i}")));
    };
    if list.len() <= i {
        list.resize(i + 1, Node::Null);
    }
    list[i] = val;
    Ok(())
}

/// Parses one `--set*` argument into `base` (Helm's `strvals.ParseInto` and
/// friends).
///
/// As in Go, an error can leave part of the argument applied to `base`.
///
/// ```
/// use rudder::render::strvals::{parse_into, Mode};
/// use rudder::yaml::Node;
/// let mut values = std::collections::BTreeMap::new();
/// parse_into("image.tag=v2,replicas=3,ports[0]=80", &mut values, Mode::Typed, None).unwrap();
/// let yaml = rudder::yaml::to_yaml(&Node::Map(values.clone()));
/// assert_eq!(yaml, "image:\n  tag: v2\nports:\n- 80\nreplicas: 3\n");
/// // --set-string keeps every value a string.
/// parse_into("replicas=3", &mut values, Mode::String, None).unwrap();
/// assert_eq!(values["replicas"], Node::Str("3".into()));
/// // Helm's errors, word for word.
/// let err = parse_into("a[=1,b=2", &mut values, Mode::Typed, None).unwrap_err();
/// assert_eq!(err.to_string(), "error parsing index: EOF");
/// ```
pub fn parse_into(
    s: &str,
    base: &mut BTreeMap<String, Node>,
    mode: Mode,
    files: Option<FileReader<'_>>,
) -> Result<(), StrvalsError> {
    let mut p = Parser {
        chars: s.chars().collect(),
        pos: 0,
        mode,
        files,
        literal: false,
    };
    p.parse(base)
}

/// `--set-literal` (Helm's `strvals.ParseLiteralInto`): keys as in
/// [`parse_into`] but without `\` escapes or `,`, and everything after the
/// first `=` one string.
pub fn parse_literal_into(s: &str, base: &mut BTreeMap<String, Node>) -> Result<(), StrvalsError> {
    let mut p = Parser {
        chars: s.chars().collect(),
        pos: 0,
        mode: Mode::String,
        files: None,
        literal: true,
    };
    p.parse(base)
}

/// A `--set-file` or `-f` path that Go's `url.Parse` refuses. It prints
/// Go's error (`parse "a\tb": net/url: invalid control character in URL`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parse {}: {message}", quote(.url))]
pub struct FileUrlError {
    /// The part of the path Go names: the whole path, or the path without
    /// its `#` fragment.
    pub url: String,
    /// Go's reason (`net/url: invalid control character in URL`).
    pub message: String,
}

/// The error Go's `url.Parse` gives for a `--set-file` or `-f` path, which
/// Helm parses as a URL before reading it. Covers the control-character,
/// scheme, first-segment-colon and `%` escape checks; host parsing is not
/// modelled.
///
/// ```
/// let e = rudder::render::strvals::check_file_url("a\tb").unwrap_err();
/// assert_eq!(e.to_string(), "parse \"a\\tb\": net/url: invalid control character in URL");
/// ```
pub fn check_file_url(raw: &str) -> Result<(), FileUrlError> {
    let (u, frag) = match raw.split_once('#') {
        Some((u, f)) => (u, Some(f)),
        None => (raw, None),
    };
    let fail = |url: &str, message: String| {
        Err(FileUrlError {
            url: url.to_string(),
            message,
        })
    };
    let escapes = |s: &str| -> Result<(), String> {
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' {
                let ok =
                    i + 2 < b.len() && b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit();
                if !ok {
                    let end = (i + 3).min(b.len());
                    let bad = String::from_utf8_lossy(&b[i..end]).into_owned();
                    return Err(format!("invalid URL escape {}", quote(&bad)));
                }
                i += 3;
            } else {
                i += 1;
            }
        }
        Ok(())
    };
    if u.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return fail(u, "net/url: invalid control character in URL".into());
    }
    if u != "*" {
        // getScheme
        let mut scheme = "";
        let mut rest = u;
        for (i, c) in u.bytes().enumerate() {
            match c {
                b'a'..=b'z' | b'A'..=b'Z' => {}
                b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
                b':' if i == 0 => return fail(u, "missing protocol scheme".into()),
                b':' => {
                    scheme = &u[..i];
                    rest = &u[i + 1..];
                    break;
                }
                _ => break,
            }
        }
        if rest.ends_with('?') && rest.matches('?').count() == 1 {
            rest = &rest[..rest.len() - 1];
        } else if let Some((r, _)) = rest.split_once('?') {
            rest = r;
        }
        if !rest.starts_with('/') {
            if !scheme.is_empty() {
                // Opaque: `mailto:x`.
                return frag.map_or(Ok(()), |f| escapes(f).or_else(|e| fail(raw, e)));
            }
            let segment = rest.split('/').next().unwrap_or("");
            if segment.contains(':') {
                return fail(u, "first path segment in URL cannot contain colon".into());
            }
        }
        let path = if (!scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
            rest[2..].find('/').map_or("", |n| &rest[2 + n..])
        } else {
            rest
        };
        if let Err(e) = escapes(path) {
            return fail(u, e);
        }
    }
    if let Some(f) = frag {
        if let Err(e) = escapes(f) {
            return fail(raw, e);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> Node {
        let mut m = BTreeMap::new();
        parse_into(s, &mut m, Mode::Typed, None).unwrap();
        Node::Map(m)
    }

    fn yaml(n: &Node) -> String {
        serde_json::to_string(n).unwrap()
    }

    #[test]
    fn typing() {
        assert_eq!(
            yaml(&set(
                "a=true,b=null,c=0,d=12,e=1.5,f=007,g=0x10,h=-3,i=FALSE"
            )),
            r#"{"a":true,"b":null,"c":0,"d":12,"e":"1.5","f":"007","g":"0x10","h":-3,"i":false}"#
        );
        assert_eq!(set("d=12"), Node::Map([("d".into(), Node::Int(12))].into()));
    }

    #[test]
    fn nesting_lists_escapes() {
        assert_eq!(yaml(&set("a.b.c=x")), r#"{"a":{"b":{"c":"x"}}}"#);
        assert_eq!(yaml(&set("a[2]=x")), r#"{"a":[null,null,"x"]}"#);
        assert_eq!(yaml(&set("a={x,y},b=z")), r#"{"a":["x","y"],"b":"z"}"#);
        assert_eq!(yaml(&set(r"a=x\,y")), r#"{"a":"x,y"}"#);
        assert_eq!(yaml(&set("a[0].b=1,a[0].c=2")), r#"{"a":[{"b":1,"c":2}]}"#);
        assert_eq!(yaml(&set("a=")), r#"{"a":""}"#);
    }

    #[test]
    fn existing_list_is_updated() {
        let mut m = BTreeMap::new();
        m.insert(
            "a".to_string(),
            Node::Seq(vec![Node::Int(1), Node::Int(2), Node::Int(3)]),
        );
        parse_into("a[1]=x", &mut m, Mode::Typed, None).unwrap();
        assert_eq!(yaml(&Node::Map(m)), r#"{"a":[1,"x",3]}"#);
    }

    #[test]
    fn json_mode() {
        let mut m = BTreeMap::new();
        parse_into(r#"a={"x":1000000},b=,c=[1,"2"]"#, &mut m, Mode::Json, None).unwrap();
        assert_eq!(m["a"], Node::Map([("x".into(), Node::Float(1e6))].into()));
        assert_eq!(m["b"], Node::Null);
        assert_eq!(
            m["c"],
            Node::Seq(vec![Node::Float(1.0), Node::Str("2".into())])
        );
    }

    #[test]
    fn errors() {
        let mut m = BTreeMap::new();
        assert_eq!(
            parse_into("a", &mut m, Mode::Typed, None).unwrap_err().0,
            "key \"a\" has no value"
        );
        let deep = (0..32)
            .map(|i| format!("k{i}"))
            .collect::<Vec<_>>()
            .join(".")
            + "=1";
        assert!(parse_into(&deep, &mut BTreeMap::new(), Mode::Typed, None)
            .unwrap_err()
            .0
            .contains("nested level"));
        assert!(parse_into("a={x", &mut BTreeMap::new(), Mode::Typed, None).is_err());
    }

    #[test]
    fn string_mode() {
        let mut m = BTreeMap::new();
        parse_into("a=12,b=true", &mut m, Mode::String, None).unwrap();
        assert_eq!(m["a"], Node::Str("12".into()));
        assert_eq!(m["b"], Node::Str("true".into()));
    }
}
