//! YAML reading with gopkg.in/yaml.v2's typing, on yaml-rust2's event stream.
//!
//! Three layers, as in Go:
//! 1. events -> a node tree with anchors (the libyaml parser's job);
//! 2. the tree -> yaml.v2 values ([`V`]): YAML 1.1 scalar resolution, explicit
//!    tags, aliases, merge keys, duplicate keys (last wins);
//! 3. sigs.k8s.io/yaml's conversion to JSON-able values: keys stringified,
//!    `null` keys rejected, infinities rejected, numbers made float64 when the
//!    JSON round trip applies.
use super::error::YamlError;
use super::json::json_kind;
use super::resolve::{self, Scalar};
use super::Node;
use crate::gostd::float::{format_go_float, format_go_float32};
use crate::gostd::gostr::into_go_string;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::{Marker, ScanError, TScalarStyle};

/// A value as yaml.v2 decodes it into `interface{}`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum V {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    Seq(Vec<V>),
    /// `map[interface{}]interface{}`: insertion order, unique keys.
    Map(Vec<(V, V)>),
}

#[derive(Debug)]
enum RawKind {
    Scalar {
        value: String,
        style: TScalarStyle,
        tag: Option<String>,
    },
    Seq(Vec<Raw>),
    Map(Vec<(Raw, Raw)>),
    Alias(Rc<Raw>, String),
}

#[derive(Debug)]
struct Raw {
    kind: RawKind,
    line: usize,
    col: usize,
}

enum Frame {
    Seq(Vec<Raw>, usize, Marker),
    Map(Vec<Raw>, usize, Marker),
}

/// Why one pass of [`load_once`] stopped.
enum LoadFail {
    Yaml(YamlError),
    /// yaml-rust2 (YAML 1.2) refused a line inside a flow collection for its
    /// indentation, which libyaml ignores: `(line, flow start line)`, 1-based.
    FlowIndent(usize, usize),
    /// The same text with a YAML 1.1 spelling yaml-rust2 lacks rewritten.
    Rewrite(String),
    /// A keyed load met something only the full decoder handles (an
    /// anchor, alias or tag, a merge or non-string key, a non-finite float).
    NotPlain,
}

/// Indents the continuation lines of the quoted scalar starting at `start`
/// (up to its closing quote, or to the end) two columns past its first line.
fn reindent_quoted<C: Ch>(chars: &[C], start: usize) -> Option<String> {
    let quote = chars.get(start)?.ch();
    if quote != '"' && quote != '\'' {
        return None;
    }
    // The end of the scalar.
    let mut i = start + 1;
    while i < chars.len() {
        let c = chars[i].ch();
        if quote == '"' && c == '\\' {
            i += 2;
            continue;
        }
        if c == quote {
            if quote == '\'' && at(chars, i + 1) == Some('\'') {
                i += 2;
                continue;
            }
            break;
        }
        i += 1;
    }
    let end = i.min(chars.len());
    let line_start = chars[..start]
        .iter()
        .rposition(|c| c.ch() == '\n')
        .map_or(0, |p| p + 1);
    let indent = chars[line_start..]
        .iter()
        .take_while(|c| c.ch() == ' ')
        .count();
    let want = indent + 2;
    let mut out: Vec<char> = Vec::with_capacity(chars.len() + 64);
    let mut changed = false;
    for (k, c) in chars.iter().map(|c| c.ch()).enumerate() {
        out.push(c);
        if c == '\n' && k >= start && k < end {
            let have = chars[k + 1..].iter().take_while(|c| c.ch() == ' ').count();
            if have < want {
                out.extend(std::iter::repeat_n(' ', want - have));
                changed = true;
            }
        }
    }
    changed.then(|| out.into_iter().collect())
}

/// yaml.v2 accepts `\'` in a double-quoted scalar (an apostrophe); yaml-rust2
/// does not. Rewrites those escapes in the scalar starting at `start`.
fn rewrite_quote_escapes<C: Ch>(chars: &[C], start: usize) -> Option<String> {
    if at(chars, start) != Some('"') {
        return None;
    }
    let mut out: Vec<char> = chars[..=start].iter().map(|c| c.ch()).collect();
    let mut i = start + 1;
    let mut changed = false;
    while i < chars.len() {
        match chars[i].ch() {
            '"' => break,
            '\\' if at(chars, i + 1) == Some('\'') => {
                out.push('\'');
                changed = true;
                i += 2;
                continue;
            }
            '\\' => {
                out.push('\\');
                if let Some(c) = at(chars, i + 1) {
                    out.push(c);
                }
                i += 2;
                continue;
            }
            c => out.push(c),
        }
        i += 1;
    }
    if !changed {
        return None;
    }
    out.extend(chars.get(i..).unwrap_or(&[]).iter().map(|c| c.ch()));
    Some(out.into_iter().collect())
}

/// Reads the documents of a stream as node trees. `None` for an empty document.
/// With `first_only`, stops after the first document, like `yaml.Unmarshal`.
fn load(text: &str, first_only: bool) -> Result<Vec<Option<Raw>>, YamlError> {
    Ok(load_keyed(text, first_only, None)?.unwrap_or_default())
}

/// [`load`], optionally building only the values of the root mapping's
/// entries named in `keep` (the others become empty strings once their
/// content is checked). `Ok(None)`: the document is not plain enough for
/// that (see [`LoadFail::NotPlain`]); load it whole.
fn load_keyed(
    text: &str,
    first_only: bool,
    keep: Option<&[&str]>,
) -> Result<Option<Vec<Option<Raw>>>, YamlError> {
    // libyaml skips a byte order mark at the start of the stream.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    precheck(text)?;
    let mut owned: Option<String> = None;
    for _ in 0..200 {
        let current = owned.as_deref().unwrap_or(text);
        match load_once(current, first_only, keep) {
            Ok(docs) => return Ok(Some(docs)),
            Err(LoadFail::NotPlain) => return Ok(None),
            Err(LoadFail::Yaml(e)) => return Err(e),
            Err(LoadFail::Rewrite(t)) => owned = Some(t),
            Err(LoadFail::FlowIndent(line, start)) => {
                // Whitespace inside a flow collection carries no meaning:
                // indent the refused line past the collection's own line.
                let lines: Vec<&str> = current.split('\n').collect();
                let start_indent = lines
                    .get(start.saturating_sub(1))
                    .map(|l| l.len() - l.trim_start_matches(' ').len())
                    .unwrap_or(0);
                let mut out = String::with_capacity(current.len() + 64);
                for (i, l) in lines.iter().enumerate() {
                    if i > 0 {
                        out.push('\n');
                    }
                    if i + 1 == line {
                        let have = l.len() - l.trim_start_matches(' ').len();
                        let want = start_indent + 2;
                        if have >= want {
                            // No progress possible: report yaml-rust2's error.
                            return match load_once(current, first_only, keep) {
                                Ok(docs) => Ok(Some(docs)),
                                Err(LoadFail::NotPlain) => Ok(None),
                                Err(LoadFail::Yaml(e)) => Err(e),
                                Err(LoadFail::FlowIndent(..) | LoadFail::Rewrite(_)) => {
                                    Err(flow_indent_error(line))
                                }
                            };
                        }
                        out.push_str(&" ".repeat(want - have));
                    }
                    out.push_str(l);
                }
                owned = Some(out);
            }
        }
    }
    Err(flow_indent_error(0))
}

fn flow_indent_error(line: usize) -> YamlError {
    YamlError::Syntax {
        problem: "did not find expected ',' or ']'".into(),
        line,
        column: 1,
        go_line: line.saturating_sub(1),
        document: 0,
    }
}

/// Checks libyaml makes that yaml-rust2 does not: only `%YAML 1.1`
/// documents, and no `...` before the first document.
fn precheck(text: &str) -> Result<(), YamlError> {
    for (i, line) in text.lines().enumerate() {
        // Before the first token libyaml is at the start of a line in block
        // context, where it skips spaces but not tabs, and no token starts
        // with a tab.
        if line.trim_start_matches(' ').starts_with('\t') {
            return Err(YamlError::Syntax {
                problem: "found character that cannot start any token".into(),
                line: i + 1,
                column: line.len() - line.trim_start_matches(' ').len() + 1,
                go_line: if i == 0 { 0 } else { i + 1 },
                document: 0,
            });
        }
        let t = line.trim_end();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some(v) = t.strip_prefix("%YAML") {
            let v = v.split('#').next().unwrap_or("").trim();
            if v != "1.1" {
                return Err(YamlError::Syntax {
                    problem: "found incompatible YAML document".into(),
                    line: i + 1,
                    column: 1,
                    go_line: i,
                    document: 0,
                });
            }
            continue;
        }
        if t.starts_with('%') {
            continue;
        }
        if t == "..." || t.starts_with("... ") {
            return Err(YamlError::Syntax {
                problem: "did not find expected node content".into(),
                line: i + 1,
                column: 1,
                go_line: i,
                document: 0,
            });
        }
        break;
    }
    Ok(())
}

/// The escapes of the double-quoted scalar starting at `start`: libyaml
/// (YAML 1.1) does not know `\/`, which yaml-rust2 accepts.
fn check_double_quoted<C: Ch>(chars: &[C], start: usize, document: usize) -> Result<(), YamlError> {
    if at(chars, start) != Some('"') {
        return Ok(());
    }
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i].ch() {
            '"' => return Ok(()),
            '\\' => {
                if at(chars, i + 1) == Some('/') {
                    let line0 = chars[..i].iter().filter(|c| c.ch() == '\n').count();
                    return Err(YamlError::Syntax {
                        problem: "found unknown escape character".into(),
                        line: line0 + 1,
                        column: 1,
                        go_line: if line0 == 0 { 0 } else { line0 + 1 },
                        document,
                    });
                }
                i += 2;
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// libyaml (YAML 1.1) reads U+2028 and U+2029 as line breaks. Inside a
/// single-quoted scalar it keeps such a break but, as for any folded line,
/// drops the blanks before it and the indentation after it (so
/// `'a \u{2028}    b'` is `a\u{2028}b`, which is how its emitter writes that
/// string); yaml-rust2 (YAML 1.2) keeps the blanks.
fn fold_unicode_breaks(value: String) -> String {
    if !value.contains(['\u{2028}', '\u{2029}']) {
        return value;
    }
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        if matches!(c, '\u{2028}' | '\u{2029}') {
            while out.ends_with([' ', '\t']) {
                out.pop();
            }
            out.push(c);
            while matches!(chars.peek(), Some(' ' | '\t')) {
                chars.next();
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// libyaml gives an empty string for a block scalar without content unless
/// it keeps trailing breaks (`|+`), and then one line break per blank line
/// after the header's line; yaml-rust2 gives a line break either way.
fn block_scalar_value<C: Ch>(chars: &[C], start: usize, value: String) -> String {
    if value.is_empty() || !value.chars().all(|c| c == '\n') {
        return value;
    }
    let mut rest = chars.iter().skip(start).map(|c| c.ch());
    let header: String = rest.by_ref().take_while(|&c| c != '\n').collect();
    let header = header.split('#').next().unwrap_or("");
    if !header.contains('+') {
        return String::new();
    }
    // Blank lines (spaces only) that end with a line break.
    let mut breaks = 0;
    for c in rest {
        match c {
            '\n' => breaks += 1,
            ' ' => {}
            _ => break,
        }
    }
    "\n".repeat(breaks)
}

/// Helm's nesting limit: libyaml (go-yaml's scanner) refuses more than
/// 10,000 nested block collections, or 10,000 nested flow collections, with
/// `exceeded max depth of 10000`, and Go's `encoding/json` more than 10,000
/// levels in all. rudder refuses more than 10,000 levels in all with
/// libyaml's message (Helm gives `encoding/json`'s `exceeded max depth` for
/// the few documents that nest block and flow collections past 10,000
/// together but neither kind past it). yaml-rust2 reads flow collections
/// only 255 deep, so deeper ones are refused (see [`flow_depth_error`]).
///
/// The walkers over a document (decoding, converting, emitting, JSON
/// reading) grow their stack on demand ([`crate::stack`]). Dropping a deep
/// mapping is Rust's own recursion: 10,000 levels fit a main thread's 8 MiB
/// stack in debug builds, not a 2 MiB one (sequences do).
pub(crate) const MAX_DEPTH: usize = 10_000;

/// Refuses a collection that starts `depth` levels deep (the first level is
/// 1), as libyaml does: a scanner error at the collection's line.
fn check_depth(depth: usize, mark: &Marker, document: usize) -> Result<(), LoadFail> {
    if depth > MAX_DEPTH {
        return Err(LoadFail::Yaml(depth_error(
            mark.line(),
            mark.col() + 1,
            document,
        )));
    }
    Ok(())
}

/// How deeply flow collections nest yaml-rust2 reads: it counts their
/// levels in a byte and stops at 256 with `recursion limit exceeded`.
const PARSER_FLOW_DEPTH: usize = 255;

/// The error for flow collections nested past what yaml-rust2 reads
/// ([`PARSER_FLOW_DEPTH`]): Helm's, at the line where the nesting passes
/// [`MAX_DEPTH`], when it does; else rudder's own (Helm would read such a
/// document).
fn flow_depth_error<C: Ch>(chars: &[C], e: &ScanError, document: usize) -> YamlError {
    // Brackets outside quoted scalars and comments, from the refusal on:
    // nesting there only grows until the collections close.
    let mut depth = PARSER_FLOW_DEPTH + 1;
    let mut line = e.marker().line();
    let mut quote: Option<char> = None;
    let mut comment = false;
    let mut i = e.marker().index() + 1;
    while i < chars.len() {
        let c = chars[i].ch();
        i += 1;
        if c == '\n' {
            line += 1;
            comment = false;
            continue;
        }
        if comment {
            continue;
        }
        match quote {
            Some('"') if c == '\\' => i += 1,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '"' | '\'' => quote = Some(c),
                '#' => comment = true,
                '[' | '{' => {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return depth_error(line, 1, document);
                    }
                }
                ']' | '}' => break,
                _ => {}
            },
        }
    }
    YamlError::Decode {
        message: format!(
            "flow collections ([...], {{...}}) nested more than {PARSER_FLOW_DEPTH} deep are not supported (Helm reads up to {MAX_DEPTH})"
        ),
        line: e.marker().line(),
        column: e.marker().col() + 1,
        document,
    }
}

/// libyaml's error for nesting past [`MAX_DEPTH`] at a 1-based line.
pub(crate) fn depth_error(line: usize, column: usize, document: usize) -> YamlError {
    YamlError::Syntax {
        problem: format!("exceeded max depth of {MAX_DEPTH}"),
        line,
        column,
        // Scanner errors print the 1-based line, none on the first line.
        go_line: if line <= 1 { 0 } else { line },
        document,
    }
}

/// A character of the text as yaml-rust2's marks index it: a `char`, or a
/// byte of an all-ASCII text, where byte and character indexes agree.
trait Ch: Copy {
    fn ch(self) -> char;
}

impl Ch for char {
    fn ch(self) -> char {
        self
    }
}

impl Ch for u8 {
    fn ch(self) -> char {
        char::from(self)
    }
}

/// The character at index `i`.
fn at<C: Ch>(chars: &[C], i: usize) -> Option<char> {
    chars.get(i).map(|c| c.ch())
}

fn load_once(
    text: &str,
    first_only: bool,
    keep: Option<&[&str]>,
) -> Result<Vec<Option<Raw>>, LoadFail> {
    // Nearly every chart file is ASCII: its bytes serve as the character
    // array, which spares a 4-bytes-per-character copy of every document.
    if text.is_ascii() {
        load_chars(text, text.as_bytes(), first_only, keep)
    } else {
        let chars: Vec<char> = text.chars().collect();
        load_chars(text, &chars, first_only, keep)
    }
}

fn load_chars<C: Ch>(
    text: &str,
    chars: &[C],
    first_only: bool,
    keep: Option<&[&str]>,
) -> Result<Vec<Option<Raw>>, LoadFail> {
    let mut parser = Parser::new_from_str(text);
    let mut loader = Loader::new(text, chars, keep);
    loop {
        let (ev, mark) = match parser.next_token() {
            Ok(x) => x,
            Err(e) => return Err(loader.scan_failure(&e)),
        };
        loader.refuse_what_libyaml_refuses(&ev, &mark)?;
        match loader.event(ev, mark)? {
            Step::Node(node, anchor) => loader.place(node, anchor)?,
            Step::Next => {}
            Step::DocumentEnd if first_only => break,
            Step::DocumentEnd => {}
            Step::StreamEnd => break,
        }
    }
    Ok(loader.finish())
}

/// What one parser event gave [`load_chars`].
enum Step {
    /// A complete node and its anchor id (0 for none), to place in its parent.
    Node(Raw, usize),
    /// Nothing to place yet.
    Next,
    /// The end of a document.
    DocumentEnd,
    /// The end of the stream.
    StreamEnd,
}

/// The state of [`load_chars`]: the open collections and the documents read.
struct Loader<'a, C: Ch> {
    text: &'a str,
    chars: &'a [C],
    keep: Option<&'a [&'a str]>,
    docs: Vec<Option<Raw>>,
    stack: Vec<Frame>,
    /// Children completed so far in each open collection (a skipped one
    /// keeps none in its items).
    counts: Vec<usize>,
    /// With `keep`: frames from this stack index on belong to a root entry
    /// that is checked, not built.
    skip_from: Option<usize>,
    anchors: HashMap<usize, Rc<Raw>>,
    root: Option<Raw>,
    doc_index: usize,
    in_doc: bool,
    /// Open flow collections (`[`, `{`) on the stack: asking the stack on
    /// every scalar would cost time quadratic in the nesting.
    flow_open: usize,
}

impl<'a, C: Ch> Loader<'a, C> {
    fn new(text: &'a str, chars: &'a [C], keep: Option<&'a [&'a str]>) -> Self {
        Loader {
            text,
            chars,
            keep,
            docs: Vec::new(),
            stack: Vec::new(),
            counts: Vec::new(),
            skip_from: None,
            anchors: HashMap::new(),
            root: None,
            doc_index: 0,
            in_doc: false,
            flow_open: 0,
        }
    }

    fn is_flow(&self, m: &Marker) -> bool {
        matches!(at(self.chars, m.index()), Some('[' | '{'))
    }

    /// The documents read, the last one even without its end.
    fn finish(mut self) -> Vec<Option<Raw>> {
        if self.in_doc {
            self.docs.push(self.root.take());
        }
        self.docs
    }

    /// What a scanner error means: a text libyaml reads differently from
    /// yaml-rust2 comes back rewritten, anything else is go-yaml's error.
    fn scan_failure(&self, e: &ScanError) -> LoadFail {
        let chars = self.chars;
        if e.info().contains("invalid indentation in quoted scalar") {
            // libyaml does not check the indentation of a quoted
            // scalar's continuation lines (their leading blanks are
            // folded away anyway): indent them and read again.
            if let Some(fixed) = reindent_quoted(chars, e.marker().index()) {
                return LoadFail::Rewrite(fixed);
            }
        }
        if e.info()
            .contains("must be followed by a valid YAML whitespace")
        {
            // libyaml takes a tab after ':' as the separating blank
            // (after a simple key's ':' tabs are skipped like
            // spaces); yaml-rust2 wants a space there.
            let pos = e.marker().index();
            let colon = (pos.saturating_sub(2)..=pos + 1)
                .find(|&i| at(chars, i) == Some(':') && at(chars, i + 1) == Some('\t'));
            if let Some(i) = colon {
                let mut fixed: Vec<char> = chars.iter().map(|c| c.ch()).collect();
                fixed[i + 1] = ' ';
                return LoadFail::Rewrite(fixed.into_iter().collect());
            }
        }
        if e.info() == "tab cannot be used as indentation"
            && at(chars, e.marker().index()) == Some('\t')
        {
            // The leading blanks of a quoted scalar's continuation
            // line are folded away; libyaml takes tabs there too.
            let mut fixed: Vec<char> = chars.iter().map(|c| c.ch()).collect();
            fixed[e.marker().index()] = ' ';
            return LoadFail::Rewrite(fixed.into_iter().collect());
        }
        if e.info().ends_with("found unknown escape character") {
            if let Some(fixed) = rewrite_quote_escapes(chars, e.marker().index()) {
                return LoadFail::Rewrite(fixed);
            }
        }
        if e.info().starts_with("invalid indentation") {
            let flow_start = self.stack.iter().rev().find_map(|f| {
                let m = match f {
                    Frame::Seq(_, _, m) | Frame::Map(_, _, m) => m,
                };
                self.is_flow(m).then(|| m.line())
            });
            if let Some(start) = flow_start {
                return LoadFail::FlowIndent(e.marker().line(), start);
            }
        }
        if e.info() == "recursion limit exceeded" {
            return LoadFail::Yaml(flow_depth_error(chars, e, self.doc_index));
        }
        LoadFail::Yaml(syntax_error(self.text, e, self.doc_index))
    }

    /// The syntax errors libyaml gives where yaml-rust2 reads on.
    fn refuse_what_libyaml_refuses(&self, ev: &Event, mark: &Marker) -> Result<(), LoadFail> {
        let chars = self.chars;
        let syntax = |problem: &str, line: usize, column: usize, go_line: usize| {
            Err(LoadFail::Yaml(YamlError::Syntax {
                problem: problem.into(),
                line,
                column,
                go_line,
                document: self.doc_index,
            }))
        };
        if matches!(
            ev,
            Event::Scalar(..)
                | Event::SequenceStart(..)
                | Event::MappingStart(..)
                | Event::Alias(_)
        ) && tab_after_block_entry(chars, mark.index())
        {
            // After a block entry '-' a simple key may start, so libyaml
            // skips spaces but not tabs there, and no token starts with one.
            let go_line = if mark.line() <= 1 { 0 } else { mark.line() };
            return syntax(
                "found character that cannot start any token",
                mark.line(),
                mark.col() + 1,
                go_line,
            );
        }
        let Event::Scalar(value, style, _, _) = ev else {
            return Ok(());
        };
        if *style == TScalarStyle::Plain && self.flow_open == 0 {
            if let Some(line) = tab_in_plain_continuation(chars, mark.index(), value) {
                // libyaml's plain scalar reads on over the following
                // blank lines and refuses a tab left of its indentation.
                return syntax(
                    "found a tab character that violates indentation",
                    line + 1,
                    1,
                    line + 1,
                );
            }
        }
        if is_empty_implicit_key(&self.stack, &self.counts, chars, value, *style, mark) {
            // libyaml needs a key before ':' (only an explicit `?` may
            // leave it empty): a block mapping wants a key, a flow
            // collection a node.
            let problem = if self.flow_open > 0 {
                "did not find expected node content"
            } else {
                "did not find expected key"
            };
            return syntax(
                problem,
                mark.line(),
                mark.col() + 1,
                mark.line().saturating_sub(1),
            );
        }
        Ok(())
    }

    /// Reads one parser event: a node it completes, or the state it changes.
    fn event(&mut self, ev: Event, mark: Marker) -> Result<Step, LoadFail> {
        if matches!(ev, Event::SequenceEnd | Event::MappingEnd) {
            self.counts.pop();
            if let Some(Frame::Seq(_, _, m) | Frame::Map(_, _, m)) = self.stack.last() {
                self.flow_open -= usize::from(self.is_flow(m));
            }
        }
        let is_map_start = matches!(ev, Event::MappingStart(..));
        Ok(match ev {
            Event::StreamStart | Event::Nothing => Step::Next,
            Event::StreamEnd => Step::StreamEnd,
            Event::DocumentStart => {
                self.in_doc = true;
                self.anchors.clear();
                self.root = None;
                Step::Next
            }
            Event::DocumentEnd => {
                self.docs.push(self.root.take());
                self.in_doc = false;
                self.doc_index += 1;
                Step::DocumentEnd
            }
            Event::Alias(_) if self.keep.is_some() => return Err(LoadFail::NotPlain),
            Event::Scalar(_, _, _, Some(_)) if self.keep.is_some() => {
                return Err(LoadFail::NotPlain)
            }
            Event::Alias(id) => Step::Node(self.alias(id, &mark)?, 0),
            Event::Scalar(value, style, anchor, tag) => {
                Step::Node(self.scalar(value, style, tag, &mark)?, anchor)
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                check_depth(self.stack.len() + 1, &mark, self.doc_index)?;
                self.flow_open += usize::from(self.is_flow(&mark));
                if self.skip_from.is_none()
                    && skipped_root_value(&self.stack, &self.counts, self.keep)
                {
                    self.skip_from = Some(self.stack.len());
                }
                self.stack.push(if is_map_start {
                    Frame::Map(Vec::new(), anchor, mark)
                } else {
                    Frame::Seq(Vec::new(), anchor, mark)
                });
                self.counts.push(0);
                Step::Next
            }
            Event::SequenceEnd | Event::MappingEnd => match self.stack.pop() {
                Some(frame) => {
                    let (node, anchor) = collection(frame);
                    Step::Node(node, anchor)
                }
                None => Step::Next,
            },
        })
    }

    /// The node an alias stands for.
    fn alias(&self, id: usize, mark: &Marker) -> Result<Raw, LoadFail> {
        let name = anchor_name_at(self.text, mark);
        match self.anchors.get(&id) {
            Some(target) => Ok(Raw {
                kind: RawKind::Alias(Rc::clone(target), name),
                line: mark.line(),
                col: mark.col() + 1,
            }),
            None => Err(LoadFail::Yaml(YamlError::Decode {
                message: format!("anchor '{name}' value contains itself"),
                line: mark.line(),
                column: mark.col() + 1,
                document: self.doc_index,
            })),
        }
    }

    /// A scalar node, with its value as libyaml reads it.
    fn scalar(
        &self,
        value: String,
        style: TScalarStyle,
        tag: Option<Tag>,
        mark: &Marker,
    ) -> Result<Raw, LoadFail> {
        let value = match style {
            TScalarStyle::DoubleQuoted => {
                check_double_quoted(self.chars, mark.index(), self.doc_index)
                    .map_err(LoadFail::Yaml)?;
                value
            }
            TScalarStyle::Literal | TScalarStyle::Folded => {
                block_scalar_value(self.chars, mark.index(), value)
            }
            TScalarStyle::SingleQuoted => fold_unicode_breaks(value),
            _ => value,
        };
        Ok(Raw {
            kind: RawKind::Scalar {
                value,
                style,
                tag: tag.map(|t| tag_name(&t)),
            },
            line: mark.line(),
            col: mark.col() + 1,
        })
    }

    /// Places a completed node in its parent (or as the document's root).
    fn place(&mut self, node: Raw, anchor: usize) -> Result<(), LoadFail> {
        // With `keep`: a node inside a skipped entry is checked and
        // dropped; the skipped entry's value itself becomes a stand-in.
        let in_skipped = self.skip_from.is_some_and(|d| self.stack.len() > d);
        let root_value = !in_skipped && skipped_root_value(&self.stack, &self.counts, self.keep);
        if in_skipped || root_value {
            let key = matches!(self.stack.last(), Some(Frame::Map(..)))
                && self.counts.last().is_some_and(|c| c % 2 == 0);
            if anchor > 0 || !lean_node_ok(&node, key) {
                return Err(LoadFail::NotPlain);
            }
        }
        if let Some(c) = self.counts.last_mut() {
            *c += 1;
        }
        if in_skipped {
            return Ok(());
        }
        let node = if root_value {
            self.skip_from = None;
            Raw {
                kind: RawKind::Scalar {
                    value: String::new(),
                    style: TScalarStyle::SingleQuoted,
                    tag: None,
                },
                line: node.line,
                col: node.col,
            }
        } else if anchor > 0 {
            let rc = Rc::new(node);
            self.anchors.insert(anchor, Rc::clone(&rc));
            // The anchored node itself is used through the shared pointer.
            let name = String::new();
            Raw {
                line: rc.line,
                col: rc.col,
                kind: RawKind::Alias(rc, name),
            }
        } else {
            node
        };
        match self.stack.last_mut() {
            Some(Frame::Seq(items, ..)) | Some(Frame::Map(items, ..)) => items.push(node),
            None => self.root = Some(node),
        }
        Ok(())
    }
}

/// The node of a closed collection, and its anchor id.
fn collection(frame: Frame) -> (Raw, usize) {
    match frame {
        Frame::Seq(items, anchor, m) => (
            Raw {
                kind: RawKind::Seq(items),
                line: m.line(),
                col: m.col() + 1,
            },
            anchor,
        ),
        Frame::Map(items, anchor, m) => {
            let mut pairs = Vec::with_capacity(items.len() / 2);
            let mut it = items.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                pairs.push((k, v));
            }
            (
                Raw {
                    kind: RawKind::Map(pairs),
                    line: m.line(),
                    col: m.col() + 1,
                },
                anchor,
            )
        }
    }
}

/// Normalises a tag to yaml.v2's short form (`!!str`, `!local`).
/// For a one-line plain scalar that ends its line, the 0-based line of the
/// first tab libyaml would meet left of the scalar's indentation + 1 while
/// reading the blank lines after it. The indentation is taken as the
/// leading spaces of the scalar's line, which never exceeds libyaml's.
fn tab_in_plain_continuation<C: Ch>(chars: &[C], start: usize, value: &str) -> Option<usize> {
    if value.contains('\n') || start > chars.len() {
        return None;
    }
    let line_start = chars[..start]
        .iter()
        .rposition(|c| c.ch() == '\n')
        .map_or(0, |p| p + 1);
    let indent = chars[line_start..start]
        .iter()
        .take_while(|c| c.ch() == ' ')
        .count();
    let mut i = start + value.chars().count();
    while i < chars.len() && matches!(chars[i].ch(), ' ' | '\t') {
        i += 1;
    }
    if i >= chars.len() || !matches!(chars[i].ch(), '\n' | '\r') {
        return None;
    }
    loop {
        if at(chars, i) == Some('\r') {
            i += 1;
        }
        if at(chars, i) == Some('\n') {
            i += 1;
        }
        let mut col = 0;
        while i < chars.len() && matches!(chars[i].ch(), ' ' | '\t') {
            if chars[i].ch() == '\t' && col < indent + 1 {
                return Some(chars[..i].iter().filter(|c| c.ch() == '\n').count());
            }
            col += 1;
            i += 1;
        }
        if i >= chars.len() || !matches!(chars[i].ch(), '\n' | '\r') {
            return None;
        }
    }
}

/// Whether the node starting at `index` follows a block entry `-` across
/// blanks that include a tab (`- \tx`), which libyaml refuses.
fn tab_after_block_entry<C: Ch>(chars: &[C], index: usize) -> bool {
    let mut j = index.min(chars.len());
    let mut saw_tab = false;
    while j > 0 && matches!(chars[j - 1].ch(), ' ' | '\t') {
        saw_tab |= chars[j - 1].ch() == '\t';
        j -= 1;
    }
    if !saw_tab || j == 0 || chars[j - 1].ch() != '-' {
        return false;
    }
    // The '-' is a block entry: only indentation and other entries before it.
    let line_start = chars[..j - 1]
        .iter()
        .rposition(|c| c.ch() == '\n')
        .map_or(0, |p| p + 1);
    let before = &chars[line_start..j - 1];
    before.iter().all(|c| matches!(c.ch(), ' ' | '-'))
        && before
            .windows(2)
            .all(|w| w[0].ch() != '-' || matches!(w[1].ch(), ' ' | '\t'))
}

/// Whether a scalar event is the empty implicit key yaml-rust2 (YAML 1.2)
/// reads for a ':' with nothing before it, which libyaml refuses; an
/// explicit `?` before the ':' makes the empty key legal.
fn is_empty_implicit_key<C: Ch>(
    stack: &[Frame],
    counts: &[usize],
    chars: &[C],
    value: &str,
    style: TScalarStyle,
    mark: &Marker,
) -> bool {
    let (Some(Frame::Map(..)), Some(count)) = (stack.last(), counts.last()) else {
        return false;
    };
    if count % 2 != 0
        || style != TScalarStyle::Plain
        || !(value.is_empty() || value == "~")
        || at(chars, mark.index()) != Some(':')
    {
        return false;
    }
    let before = chars[..mark.index()]
        .iter()
        .rev()
        .map(|c| c.ch())
        .find(|c| !matches!(c, ' ' | '\t' | '\n' | '\r'));
    before != Some('?')
}

fn tag_name(t: &Tag) -> String {
    if t.handle == "tag:yaml.org,2002:" {
        format!("!!{}", t.suffix)
    } else if t.handle == "!" || t.handle.is_empty() {
        if t.suffix == "!" {
            "!".to_string()
        } else {
            format!("!{}", t.suffix)
        }
    } else {
        format!("{}{}", t.handle, t.suffix)
    }
}

/// The name of the alias or anchor that starts at `mark` (`*name`).
fn anchor_name_at(text: &str, mark: &Marker) -> String {
    // Marks count characters: in an ASCII text they are byte offsets, and
    // only the name is read (not the rest of the text, once per alias).
    let rest: Box<dyn Iterator<Item = char>> = if text.is_ascii() {
        Box::new(text.get(mark.index()..).unwrap_or("").chars())
    } else {
        Box::new(text.chars().skip(mark.index()))
    };
    rest.skip_while(|c| matches!(c, '*' | '&'))
        .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | '[' | ']' | '{' | '}'))
        .collect()
}

/// Translates a yaml-rust2 error into libyaml's wording and yaml.v2's line.
fn syntax_error(text: &str, e: &ScanError, document: usize) -> YamlError {
    let info = e.info();
    let m = e.marker();
    if info.contains("unknown anchor") {
        let name = anchor_name_at(text, m);
        return YamlError::Decode {
            message: format!("unknown anchor '{name}' referenced"),
            line: m.line(),
            column: m.col() + 1,
            document,
        };
    }
    let (problem, is_parser) = libyaml_problem(info);
    // yaml.v2 prints the problem mark's 0-based line for parser errors and
    // the 1-based line for scanner errors, and no line at all when the mark
    // is on the first line.
    let mut line0 = m.line().saturating_sub(1);
    if problem == "found unexpected end of stream" {
        // libyaml marks the end of the text, yaml-rust2 the scalar's start.
        line0 = text.matches('\n').count();
    } else if problem == "found a tab character where an indentation space is expected" {
        // libyaml marks the tab in the block scalar's indentation,
        // yaml-rust2 the block scalar's header.
        let tab_line = text
            .lines()
            .enumerate()
            .skip(m.line())
            .find(|(_, l)| l.trim_start_matches(' ').starts_with('\t'));
        if let Some((k, _)) = tab_line {
            line0 = k;
        }
    } else if problem == "found a tab character that violates indentation" {
        // libyaml marks the tab, on a continuation line.
        line0 += 1;
    }
    let go_line = if line0 == 0 {
        0
    } else if is_parser {
        line0
    } else {
        line0 + 1
    };
    YamlError::Syntax {
        problem,
        line: m.line(),
        column: m.col() + 1,
        go_line,
        document,
    }
}

/// libyaml's problem text for a yaml-rust2 message, and whether libyaml
/// raises it in the parser (as opposed to the scanner).
fn libyaml_problem(info: &str) -> (String, bool) {
    let parser_problems = [
        ("did not find expected node content", true),
        ("did not find expected key", true),
        ("did not find expected '-' indicator", true),
        ("did not find expected ',' or '}'", true),
        ("expected ',' or ']'", true),
        ("did not find expected <document start>", true),
        ("did not find expected <document-start>", true),
        ("the handle wasn't declared", true),
        ("found incompatible YAML document", true),
        ("duplicate version directive", true),
        ("invalid trailing content after double-quoted scalar", true),
        ("illegal placement of ':' indicator", true),
        ("\"-\" is only valid inside a block", true),
    ];
    for (p, parser) in parser_problems {
        if info.ends_with(p) {
            let text = match p {
                "expected ',' or ']'" => "did not find expected ',' or ']'",
                "did not find expected <document-start>" => {
                    "did not find expected <document start>"
                }
                "the handle wasn't declared" => "found undefined tag handle",
                "duplicate version directive" => "found duplicate %YAML directive",
                "invalid trailing content after double-quoted scalar" => {
                    "did not find expected key"
                }
                "illegal placement of ':' indicator" => "did not find expected ',' or ']'",
                "\"-\" is only valid inside a block" => "did not find expected node content",
                other => other,
            };
            return (text.to_string(), parser);
        }
    }
    let scanner = if info.starts_with("unexpected character")
        || info.starts_with("tab")
        || info.contains("tabs disallowed")
    {
        "found character that cannot start any token".to_string()
    } else if info.ends_with("did not find expected hexadecimal number") {
        // libyaml's spelling.
        "did not find expected hexdecimal number".to_string()
    } else if info.ends_with("a block scalar content cannot start with a tab") {
        "found a tab character where an indentation space is expected".to_string()
    } else if info.ends_with("found a tab") {
        "found a tab character that violates indentation".to_string()
    } else if info == "simple key expect ':'" || info == "simple key expected" {
        "could not find expected ':'".to_string()
    } else if let Some((_, p)) = info.split_once(", ") {
        if info.starts_with("while ") {
            p.to_string()
        } else {
            info.to_string()
        }
    } else {
        info.to_string()
    };
    (scanner, false)
}

/// Decoder state: yaml.v2 counts decodes and alias expansions to stop
/// "billion laughs" documents.
struct Decoder {
    decode_count: u64,
    /// Nodes decoded while expanding an alias.
    alias_count: u64,
    alias_depth: usize,
    /// Current nesting, aliases expanded.
    depth: usize,
    document: usize,
    /// yaml.v2's `UnmarshalStrict`: a key set twice in a mapping is an
    /// error (the first value stays), reported once decoding is done.
    strict: bool,
    /// The strict mode's `line N: key K already set in map` errors.
    duplicates: Vec<String>,
}

fn allowed_alias_ratio(decode_count: u64) -> f64 {
    const LOW: f64 = 400_000.0;
    const HIGH: f64 = 4_000_000.0;
    let d = decode_count as f64;
    if d <= LOW {
        0.99
    } else if d >= HIGH {
        0.10
    } else {
        0.99 - 0.89 * ((d - LOW) / (HIGH - LOW))
    }
}

impl Decoder {
    fn fail(&self, raw: &Raw, message: String) -> YamlError {
        YamlError::Decode {
            message,
            line: raw.line,
            column: raw.col,
            document: self.document,
        }
    }

    fn decode(&mut self, raw: &Raw) -> Result<V, YamlError> {
        // Alias chains can nest deeper than the text does: the value must
        // not nest deeper than a text may.
        if self.depth >= MAX_DEPTH && !matches!(raw.kind, RawKind::Scalar { .. }) {
            return Err(depth_error(raw.line, raw.col, self.document));
        }
        self.depth += 1;
        let r = crate::stack::deeper(|| self.decode_inner(raw));
        self.depth -= 1;
        r
    }

    fn decode_inner(&mut self, raw: &Raw) -> Result<V, YamlError> {
        self.decode_count += 1;
        if self.alias_depth > 0 {
            self.alias_count += 1;
        }
        if self.alias_count > 100
            && self.decode_count > 1000
            && self.alias_count as f64 / self.decode_count as f64
                > allowed_alias_ratio(self.decode_count)
        {
            return Err(self.fail(raw, "document contains excessive aliasing".into()));
        }
        match &raw.kind {
            RawKind::Scalar { value, style, tag } => {
                self.scalar(raw, value, *style, tag.as_deref())
            }
            RawKind::Seq(items) => {
                let mut out = Vec::with_capacity(items.len());
                for it in items {
                    out.push(self.decode(it)?);
                }
                Ok(V::Seq(out))
            }
            RawKind::Map(pairs) => {
                let mut out = MapOut {
                    pairs: Vec::with_capacity(pairs.len()),
                    index: HashMap::new(),
                };
                self.mapping_into(pairs, &mut out)?;
                Ok(V::Map(out.pairs))
            }
            RawKind::Alias(target, name) => {
                if name.is_empty() {
                    // An anchored node: one level, not two.
                    return crate::stack::deeper(|| self.decode_inner(target));
                }
                self.alias_depth += 1;
                let r = self.decode(target);
                self.alias_depth -= 1;
                r
            }
        }
    }

    fn scalar(
        &mut self,
        raw: &Raw,
        value: &str,
        style: TScalarStyle,
        tag: Option<&str>,
    ) -> Result<V, YamlError> {
        let Some(tag) = tag else {
            if style != TScalarStyle::Plain {
                return Ok(V::Str(value.to_string()));
            }
            return Ok(scalar_value(resolve::resolve_plain(value), value));
        };
        match tag {
            "!!str" => Ok(V::Str(value.to_string())),
            "!!binary" => {
                use base64::Engine;
                let cleaned: String = value.chars().filter(|c| !c.is_whitespace()).collect();
                match base64::engine::general_purpose::STANDARD.decode(cleaned.as_bytes()) {
                    Ok(b) => Ok(V::Str(String::from_utf8_lossy(&b).into_owned())),
                    Err(_) => {
                        Err(self.fail(raw, "!!binary value contains invalid base64 data".into()))
                    }
                }
            }
            "!!bool" | "!!int" | "!!float" | "!!null" | "!!timestamp" => {
                let resolved = if tag == "!!timestamp" {
                    resolve::resolve_plain(value)
                } else {
                    match resolve::resolve_plain(value) {
                        // Only an untagged or !!timestamp scalar is tried as a timestamp.
                        Scalar::Timestamp => resolve_without_timestamp(value),
                        other => other,
                    }
                };
                let rtag = match &resolved {
                    Scalar::Null => "!!null",
                    Scalar::Bool(_) => "!!bool",
                    Scalar::Int(_) | Scalar::Uint(_) => "!!int",
                    Scalar::Float(_) => "!!float",
                    Scalar::Timestamp => "!!timestamp",
                    Scalar::Str => "!!str",
                };
                if rtag == tag {
                    return Ok(scalar_value(resolved, value));
                }
                if tag == "!!float" {
                    match resolved {
                        Scalar::Int(i) => return Ok(V::Float(i as f64)),
                        Scalar::Uint(u) => return Ok(V::Float(u as f64)),
                        _ => {}
                    }
                }
                Err(self.fail(raw, format!("cannot decode {rtag} `{value}` as a {tag}")))
            }
            // Any other tag (local, `!`, !!map on a scalar, ...) keeps the text.
            _ => Ok(V::Str(value.to_string())),
        }
    }

    fn mapping_into(&mut self, pairs: &[(Raw, Raw)], out: &mut MapOut) -> Result<(), YamlError> {
        for (k, v) in pairs {
            if is_merge_key(k) {
                self.merge(v, out)?;
                continue;
            }
            let key = self.decode(k)?;
            if matches!(key, V::Seq(_) | V::Map(_)) {
                return Err(self.fail(k, format!("invalid map key: {}", go_syntax(&key, true))));
            }
            let val = self.decode(v)?;
            if self.strict && out.contains(&key) {
                self.duplicates.push(format!(
                    "line {}: key {} already set in map",
                    v.line,
                    go_syntax(&key, true)
                ));
                continue;
            }
            out.insert(key, val);
        }
        Ok(())
    }

    fn merge(&mut self, v: &Raw, out: &mut MapOut) -> Result<(), YamlError> {
        let want_map = |d: &Decoder| {
            d.fail(
                v,
                "map merge requires map or sequence of maps as the value".into(),
            )
        };
        match target(v) {
            Raw {
                kind: RawKind::Map(pairs),
                ..
            } => {
                self.decode_count += 1;
                let alias = is_alias(v);
                self.alias_depth += usize::from(alias);
                let r = self.mapping_into(pairs, out);
                self.alias_depth -= usize::from(alias);
                r
            }
            Raw {
                kind: RawKind::Seq(items),
                ..
            } if !is_named_alias(v) => {
                for item in items.iter().rev() {
                    match target(item) {
                        Raw {
                            kind: RawKind::Map(pairs),
                            ..
                        } => {
                            self.decode_count += 1;
                            let alias = is_alias(item);
                            self.alias_depth += usize::from(alias);
                            let r = self.mapping_into(pairs, out);
                            self.alias_depth -= usize::from(alias);
                            r?;
                        }
                        _ => return Err(want_map(self)),
                    }
                }
                Ok(())
            }
            _ => Err(want_map(self)),
        }
    }
}

/// The node an alias (or an anchored node) stands for.
fn target(r: &Raw) -> &Raw {
    match &r.kind {
        RawKind::Alias(t, _) => target(t),
        _ => r,
    }
}

fn is_alias(r: &Raw) -> bool {
    is_named_alias(r)
}

/// A real `*alias` (anchored nodes are stored as unnamed aliases).
fn is_named_alias(r: &Raw) -> bool {
    matches!(&r.kind, RawKind::Alias(_, n) if !n.is_empty())
}

/// yaml.v2's `isMerge`: a plain, untagged `<<`, or one tagged `!!merge`.
fn is_merge_key(k: &Raw) -> bool {
    match &target(k).kind {
        RawKind::Scalar { value, style, tag } => {
            value == "<<"
                && ((tag.is_none() && *style == TScalarStyle::Plain)
                    || tag.as_deref() == Some("!!merge"))
        }
        _ => false,
    }
}

fn resolve_without_timestamp(value: &str) -> Scalar {
    let plain: String = value.chars().filter(|&c| c != '_').collect();
    if let Some(i) = crate::gostd::num::parse_int(&plain, 0) {
        return Scalar::Int(i);
    }
    if let Some(u) = crate::gostd::num::parse_uint(&plain, 0) {
        return Scalar::Uint(u);
    }
    if resolve::is_yaml_style_float(&plain) {
        if let Some(f) = resolve::parse_go_float(&plain) {
            return Scalar::Float(f);
        }
    }
    Scalar::Str
}

/// The value sigs.k8s.io/yaml gives an untagged plain scalar (numbers
/// float64).
pub(super) fn plain_node(text: &str) -> Node {
    let v = scalar_value(resolve::resolve_plain(text), text);
    // Converting a scalar cannot fail (only map keys can).
    convert(v, Numbers::Float64, 0).unwrap_or_default()
}

fn scalar_value(s: Scalar, text: &str) -> V {
    match s {
        Scalar::Null => V::Null,
        Scalar::Bool(b) => V::Bool(b),
        Scalar::Int(i) => V::Int(i),
        Scalar::Uint(u) => V::Uint(u),
        Scalar::Float(f) => V::Float(f),
        Scalar::Timestamp | Scalar::Str => V::Str(text.to_string()),
    }
}

/// A mapping being decoded: its entries in insertion order, and where each
/// key is, so that assigning a key costs the same however many there are
/// (a linear search made a 100,000-key flow mapping take minutes).
struct MapOut {
    pairs: Vec<(V, V)>,
    index: HashMap<KeyId, usize>,
}

/// A scalar key as Go's map compares it (`==` on the dynamic type and
/// value): floats by value (`-0 == 0`), NaN equal to nothing.
#[derive(PartialEq, Eq, Hash)]
enum KeyId {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(u64),
    Str(String),
}

impl KeyId {
    fn of(k: &V) -> Option<KeyId> {
        Some(match k {
            V::Null => KeyId::Null,
            V::Bool(b) => KeyId::Bool(*b),
            V::Int(i) => KeyId::Int(*i),
            V::Uint(u) => KeyId::Uint(*u),
            V::Float(f) if f.is_nan() => return None,
            V::Float(f) => KeyId::Float(if *f == 0.0 { 0 } else { f.to_bits() }),
            V::Str(s) => KeyId::Str(s.clone()),
            // Refused before they are assigned.
            V::Seq(_) | V::Map(_) => return None,
        })
    }
}

fn go_key_eq(a: &V, b: &V) -> bool {
    match (a, b) {
        (V::Float(x), V::Float(y)) => x == y,
        _ => a == b,
    }
}

/// Mappings with fewer entries are searched, not indexed.
const INDEX_FROM: usize = 16;

impl MapOut {
    /// Whether an equal key is already set (Go's `MapIndex(k).IsValid()`).
    fn contains(&mut self, key: &V) -> bool {
        let Some(id) = KeyId::of(key) else {
            return false;
        };
        if self.pairs.len() < INDEX_FROM {
            return self.pairs.iter().any(|(k, _)| go_key_eq(k, key));
        }
        if self.index.is_empty() {
            for (i, (k, _)) in self.pairs.iter().enumerate() {
                if let Some(kid) = KeyId::of(k) {
                    self.index.insert(kid, i);
                }
            }
        }
        self.index.contains_key(&id)
    }

    /// Go map assignment: replaces an equal key in place, else appends.
    fn insert(&mut self, key: V, val: V) {
        let Some(id) = KeyId::of(&key) else {
            self.pairs.push((key, val));
            return;
        };
        if self.pairs.len() < INDEX_FROM {
            match self.pairs.iter_mut().find(|(k, _)| go_key_eq(k, &key)) {
                Some(slot) => slot.1 = val,
                None => self.pairs.push((key, val)),
            }
            return;
        }
        if self.index.is_empty() {
            for (i, (k, _)) in self.pairs.iter().enumerate() {
                if let Some(kid) = KeyId::of(k) {
                    self.index.insert(kid, i);
                }
            }
        }
        match self.index.get(&id) {
            Some(&i) => self.pairs[i].1 = val,
            None => {
                self.index.insert(id, self.pairs.len());
                self.pairs.push((key, val));
            }
        }
    }
}

/// Go's `%#v` of a decoded value (used in yaml.v2 and sigs.k8s.io/yaml errors).
pub(crate) fn go_syntax(v: &V, top: bool) -> String {
    match v {
        V::Null => {
            if top {
                "<nil>".into()
            } else {
                "interface {}(nil)".into()
            }
        }
        V::Bool(b) => b.to_string(),
        V::Int(i) => i.to_string(),
        V::Uint(u) => format!("0x{u:x}"),
        V::Float(f) => format_go_float(*f),
        V::Str(s) => crate::gostd::strconv::quote(s),
        V::Seq(items) => {
            let inner: Vec<String> = items.iter().map(|x| go_syntax(x, false)).collect();
            format!("[]interface {{}}{{{}}}", inner.join(", "))
        }
        V::Map(pairs) => {
            let mut sorted: Vec<&(V, V)> = pairs.iter().collect();
            sorted.sort_by(|a, b| fmt_key_cmp(&a.0, &b.0));
            let parts: Vec<String> = sorted
                .into_iter()
                .map(|(k, x)| format!("{}:{}", go_syntax(k, false), go_syntax(x, false)))
                .collect();
            format!("map[interface {{}}]interface {{}}{{{}}}", parts.join(", "))
        }
    }
}

/// fmt's order for `interface{}` map keys in Helm's binary (probed): nil,
/// then by concrete type (string, uint64, int, float64, bool), then by value.
fn fmt_key_cmp(a: &V, b: &V) -> std::cmp::Ordering {
    let rank = |v: &V| match v {
        V::Null => 0,
        V::Str(_) => 1,
        V::Uint(_) => 2,
        V::Int(_) => 3,
        V::Float(_) => 4,
        V::Bool(_) => 5,
        V::Seq(_) | V::Map(_) => 6,
    };
    match (a, b) {
        (V::Str(x), V::Str(y)) => x.cmp(y),
        (V::Uint(x), V::Uint(y)) => x.cmp(y),
        (V::Int(x), V::Int(y)) => x.cmp(y),
        (V::Float(x), V::Float(y)) => x.total_cmp(y),
        (V::Bool(x), V::Bool(y)) => x.cmp(y),
        _ => rank(a).cmp(&rank(b)),
    }
}

/// How numbers come out of the sigs.k8s.io/yaml conversion.
#[derive(Clone, Copy, PartialEq)]
enum Numbers {
    /// After the JSON round trip into `interface{}`: every number is float64.
    Float64,
    /// yaml.v2's own types: ints stay ints.
    Keep,
}

/// sigs.k8s.io/yaml's `convertToJSONableObject` followed by the checks
/// `json.Marshal` makes (non-finite floats).
fn to_jsonable(v: V, numbers: Numbers, document: usize) -> Result<Node, YamlError> {
    let node = convert(v, numbers, document)?;
    check_finite(&node, document)?;
    Ok(node)
}

fn convert(v: V, numbers: Numbers, document: usize) -> Result<Node, YamlError> {
    crate::stack::deeper(|| convert_inner(v, numbers, document))
}

fn convert_inner(v: V, numbers: Numbers, document: usize) -> Result<Node, YamlError> {
    Ok(match v {
        V::Null => Node::Null,
        V::Bool(b) => Node::Bool(b),
        V::Int(i) => match numbers {
            Numbers::Float64 => Node::Float(i as f64),
            Numbers::Keep => Node::Int(i),
        },
        V::Uint(u) => Node::Float(u as f64),
        V::Float(f) => Node::Float(f),
        V::Str(s) => Node::Str(into_go_string(s)),
        V::Seq(items) => Node::Seq(
            items
                .into_iter()
                .map(|x| convert(x, numbers, document))
                .collect::<Result<_, _>>()?,
        ),
        V::Map(pairs) => {
            let mut out = BTreeMap::new();
            for (k, x) in pairs {
                let key = match &k {
                    V::Str(s) => into_go_string(s.clone()),
                    V::Int(i) => i.to_string(),
                    V::Float(f) => {
                        let s = format_go_float32(*f as f32);
                        match s.as_str() {
                            "+Inf" => ".inf".into(),
                            "-Inf" => "-.inf".into(),
                            "NaN" => ".nan".into(),
                            _ => s,
                        }
                    }
                    V::Bool(b) => b.to_string(),
                    V::Null | V::Uint(_) | V::Seq(_) | V::Map(_) => {
                        let ty = match &k {
                            V::Null => "%!s(<nil>)",
                            V::Uint(_) => "uint64",
                            V::Seq(_) => "[]interface {}",
                            _ => "map[interface {}]interface {}",
                        };
                        return Err(YamlError::Key {
                            message: format!(
                                "unsupported map key of type: {ty}, key: {}, value: {}",
                                go_syntax(&k, true),
                                go_syntax(&x, true)
                            ),
                            document,
                        });
                    }
                };
                out.insert(key, convert(x, numbers, document)?);
            }
            Node::Map(out)
        }
    })
}

fn check_finite(n: &Node, document: usize) -> Result<(), YamlError> {
    crate::stack::deeper(|| check_finite_inner(n, document))
}

fn check_finite_inner(n: &Node, document: usize) -> Result<(), YamlError> {
    match n {
        Node::Float(f) if !f.is_finite() => Err(YamlError::UnsupportedValue {
            value: format_go_float(*f),
            document,
        }),
        Node::Seq(items) => items.iter().try_for_each(|x| check_finite(x, document)),
        Node::Map(m) => m.values().try_for_each(|x| check_finite(x, document)),
        _ => Ok(()),
    }
}

fn decoder(document: usize) -> Decoder {
    Decoder {
        decode_count: 0,
        alias_count: 0,
        alias_depth: 0,
        depth: 0,
        document,
        strict: false,
        duplicates: Vec::new(),
    }
}

fn decode_docs(text: &str, first_only: bool) -> Result<Vec<Option<V>>, YamlError> {
    let docs = load(text, first_only)?;
    let mut out = Vec::with_capacity(docs.len());
    for (i, d) in docs.into_iter().enumerate() {
        out.push(match d {
            Some(raw) => Some(decoder(i).decode(&raw)?),
            None => None,
        });
    }
    Ok(out)
}

/// True when decoding `raw` and converting it to JSON surely succeeds: no
/// anchors or aliases, no tags, no merge keys, every key a string and no
/// non-finite float. Conservative: `false` only means "take the full path".
fn surely_plain(raw: &Raw) -> bool {
    crate::stack::deeper(|| surely_plain_inner(raw))
}

fn surely_plain_inner(raw: &Raw) -> bool {
    match &raw.kind {
        RawKind::Scalar { value, style, tag } => {
            tag.is_none() && (*style != TScalarStyle::Plain || !maybe_non_finite(value))
        }
        RawKind::Seq(items) => items.iter().all(surely_plain),
        RawKind::Map(pairs) => pairs
            .iter()
            .all(|(k, v)| is_string_key(k) && surely_plain(v)),
        RawKind::Alias(..) => false,
    }
}

/// With `keep`: whether the next node completed at this point is the value
/// of a root-mapping entry whose key is not kept.
fn skipped_root_value(stack: &[Frame], counts: &[usize], keep: Option<&[&str]>) -> bool {
    let (Some(keep), [Frame::Map(items, ..)], [count]) = (keep, stack, counts) else {
        return false;
    };
    if count % 2 == 0 {
        return false;
    }
    match items.last().map(|k| &k.kind) {
        Some(RawKind::Scalar { value, .. }) => !keep.contains(&value.as_str()),
        _ => true,
    }
}

/// A node of a skipped entry passes the checks [`surely_plain`] makes;
/// `key`: it is a mapping key. A skipped collection arrives without items
/// (each was checked as it completed).
fn lean_node_ok(node: &Raw, key: bool) -> bool {
    if key {
        is_string_key(node)
    } else {
        surely_plain(node)
    }
}

/// Whether a plain scalar may resolve to an infinite or NaN float. yaml.v2
/// only reads those from the `.inf`/`.nan` words (a numeral out of range
/// stays a string), so anything longer than `-.inf` or not starting with
/// `.`, `+` or `-` is surely not one.
pub(super) fn maybe_non_finite(value: &str) -> bool {
    value.len() <= 5
        && matches!(value.as_bytes().first(), Some(b'.' | b'+' | b'-'))
        && matches!(resolve::resolve_plain(value), Scalar::Float(f) if !f.is_finite())
}

/// An untagged scalar key that decodes to a string (never `<<`).
fn is_string_key(k: &Raw) -> bool {
    match &k.kind {
        RawKind::Scalar {
            value,
            style,
            tag: None,
        } => {
            *style != TScalarStyle::Plain
                || (value != "<<"
                    && matches!(
                        resolve::resolve_plain(value),
                        Scalar::Str | Scalar::Timestamp
                    ))
        }
        _ => false,
    }
}

/// Refuses text holding raw bytes (see [`crate::gostd::gostr`]), as go-yaml's
/// reader refuses bytes that are not UTF-8.
fn check_encoding(text: &str) -> Result<(), YamlError> {
    match crate::gostd::gostr::raw_bytes_error(text) {
        Some(problem) => Err(YamlError::Encoding { problem }),
        None => Ok(()),
    }
}

/// [`parse_yaml_to_json`] restricted to some top-level keys: when the first
/// document is a mapping, the result holds only the entries named in `keys`;
/// any other document is returned whole. Errors are those of
/// [`parse_yaml_to_json`] on the whole text, but a plain document (no
/// anchors, tags, merge keys or odd keys) skips building the entries it
/// does not keep, which is most of a large manifest.
pub fn parse_yaml_to_json_keys(text: &str, keys: &[&str]) -> Result<Node, YamlError> {
    check_encoding(text)?;
    if let Some(entries) = super::block::plain_root_entries(text) {
        // A document of the plain subset: the kept entries alone decode to
        // what they would inside the whole one, which is surely valid.
        let mut kept = String::new();
        for e in entries.iter().filter(|e| keys.contains(&e.key)) {
            // Every span but the document's last ends with a line break.
            kept.push_str(&text[e.span.clone()]);
        }
        if kept.is_empty() {
            return Ok(Node::Map(BTreeMap::new()));
        }
        if let Some(node) = super::block::decode_plain(&kept) {
            return Ok(node);
        }
    }
    parse_kept_entries(text, keys)
}

/// [`parse_yaml_to_json_keys`] with the event parser.
fn parse_kept_entries(text: &str, keys: &[&str]) -> Result<Node, YamlError> {
    if let Some(docs) = load_keyed(text, true, Some(keys))? {
        let Some(raw) = docs.into_iter().next().flatten() else {
            return Ok(Node::Null);
        };
        if let RawKind::Map(pairs) = &raw.kind {
            if surely_plain(&raw) {
                let mut out = BTreeMap::new();
                for (k, v) in pairs {
                    if let RawKind::Scalar { value, .. } = &k.kind {
                        if keys.contains(&value.as_str()) {
                            // A later duplicate replaces the entry, as a Go map does.
                            let val = decoder(0).decode(v)?;
                            out.insert(value.clone(), to_jsonable(val, Numbers::Float64, 0)?);
                        }
                    }
                }
                return Ok(Node::Map(out));
            }
        }
    }
    // Not plain: the skipped entries matter after all; decode everything.
    match parse_yaml_to_json(text)? {
        Node::Map(mut m) => {
            m.retain(|k, _| keys.contains(&k.as_str()));
            Ok(Node::Map(m))
        }
        other => Ok(other),
    }
}

/// sigs.k8s.io/yaml's `YAMLToJSON` of the first document, decoded into
/// `interface{}`: the shape is free, every number is float64. An empty
/// document is [`Node::Null`].
pub fn parse_yaml_to_json(text: &str) -> Result<Node, YamlError> {
    check_encoding(text)?;
    match super::block::decode_plain(text) {
        Some(node) => Ok(node),
        None => parse_full(text),
    }
}

/// [`parse_yaml_to_json`] with the event parser only (also what the fast
/// path is tested against).
pub(crate) fn parse_full(text: &str) -> Result<Node, YamlError> {
    let docs = decode_docs(text, true)?;
    match docs.into_iter().next().flatten() {
        Some(v) => to_jsonable(v, Numbers::Float64, 0),
        None => Ok(Node::Null),
    }
}

/// Reads values YAML as Helm does (`sigs.k8s.io/yaml.Unmarshal` into
/// `map[string]interface{}`): YAML 1.1 scalars, keys stringified, every
/// number a float64, first document only. An empty or `null` document gives
/// an empty map; any other non-mapping document is an error.
pub fn parse_values(text: &str) -> Result<Node, YamlError> {
    match parse_yaml_to_json(text)? {
        Node::Null => Ok(Node::Map(BTreeMap::new())),
        m @ Node::Map(_) => Ok(m),
        other => Err(YamlError::Type {
            found: json_kind(&other).into(),
            target: "map[string]interface {}".into(),
        }),
    }
}

/// Like [`parse_values`] for a `[]interface{}` target (Helm's `fromYamlArray`):
/// an empty document gives an empty list.
pub fn parse_values_array(text: &str) -> Result<Node, YamlError> {
    match parse_yaml_to_json(text)? {
        Node::Null => Ok(Node::Seq(Vec::new())),
        s @ Node::Seq(_) => Ok(s),
        other => Err(YamlError::Type {
            found: json_kind(&other).into(),
            target: "[]interface {}".into(),
        }),
    }
}

/// Reads every document of a YAML stream (manifests, Chart.yaml) with
/// yaml.v2's types: integers stay [`Node::Int`] (an unsigned value beyond
/// int64 becomes a [`Node::Float`]), floats are [`Node::Float`], keys are
/// stringified as sigs.k8s.io/yaml does. An empty or comment-only document is
/// [`Node::Null`]. Errors carry the document index and the line/column.
pub fn parse_documents(text: &str) -> Result<Vec<Node>, YamlError> {
    check_encoding(text)?;
    let docs = decode_docs(text, false)?;
    docs.into_iter()
        .enumerate()
        .map(|(i, d)| match d {
            Some(v) => to_jsonable(v, Numbers::Keep, i),
            None => Ok(Node::Null),
        })
        .collect()
}

/// [`parse_document`] as yaml.v2's `UnmarshalStrict` reads it (what
/// sigs.k8s.io/yaml's `UnmarshalStrict` starts with, e.g. for Helm's
/// repository index): a key set twice in one mapping is an error,
/// `yaml: unmarshal errors:` and a `line N: key "k" already set in map`
/// line for each.
pub fn parse_document_strict(text: &str) -> Result<Node, YamlError> {
    check_encoding(text)?;
    let Some(raw) = load(text, true)?.into_iter().next().flatten() else {
        return Ok(Node::Null);
    };
    let mut dec = decoder(0);
    dec.strict = true;
    let v = dec.decode(&raw)?;
    if !dec.duplicates.is_empty() {
        return Err(YamlError::Decode {
            message: format!("unmarshal errors:\n  {}", dec.duplicates.join("\n  ")),
            line: 0,
            column: 0,
            document: 0,
        });
    }
    to_jsonable(v, Numbers::Keep, 0)
}

/// Reads the first document of a YAML text with yaml.v2's types, as
/// [`parse_documents`] does, or [`Node::Null`] when there is none.
pub fn parse_document(text: &str) -> Result<Node, YamlError> {
    check_encoding(text)?;
    let docs = decode_docs(text, true)?;
    match docs.into_iter().next().flatten() {
        Some(v) => to_jsonable(v, Numbers::Keep, 0),
        None => Ok(Node::Null),
    }
}
