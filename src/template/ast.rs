//! The parse tree of a Go template, with Go's `String()` forms (they appear
//! verbatim in error messages: `at <.Values.a.b>`).
use std::fmt;
use std::sync::Arc;

/// A parsed template: a file's main body or one `define`/`block`.
#[derive(Debug)]
pub struct Tree {
    /// The template name (`conf/templates/x.txt`, or the define's name).
    pub name: String,
    /// The name of the file it was parsed from (Go's `ParseName`).
    pub parse_name: Arc<str>,
    /// The whole text of that file, for line/column positions.
    pub text: Source,
    /// The body.
    pub root: List,
}

impl Tree {
    /// Go's `ErrorContext` location: `NAME:LINE:COL` with a 0-based byte column.
    pub fn location(&self, pos: usize) -> String {
        let (line, col) = self.position(pos);
        format!("{}:{}:{}", self.parse_name, line, col)
    }

    /// The line (1-based) and column (Go's: the 0-based byte offset in the
    /// line) of byte offset `pos` of the text, as [`Tree::location`] gives them.
    pub fn position(&self, pos: usize) -> (usize, usize) {
        let pos = pos.min(self.text.len());
        let before = self.text.bytes().get(..pos).unwrap_or_default();
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        let col = match before.iter().rposition(|&b| b == b'\n') {
            Some(nl) => pos - (nl + 1),
            None => pos,
        };
        (line, col)
    }
}

/// The text of a parsed file, shared by its trees and text nodes instead of
/// copied: a string, or bytes such as a chart file (which may be a memory
/// map). Parsing checks once that the bytes are UTF-8.
#[derive(Clone)]
pub struct Source(Arc<dyn AsRef<[u8]> + Send + Sync>);

impl Source {
    /// Shares `bytes` as template text.
    pub fn from_bytes<B>(bytes: B) -> Source
    where
        B: AsRef<[u8]> + Send + Sync + 'static,
    {
        Source(Arc::new(bytes))
    }
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        (*self.0).as_ref()
    }
    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.bytes().len()
    }
    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.bytes().is_empty()
    }
    /// The whole text; `None` if the bytes are not UTF-8 (checked on each
    /// call, in time linear in the length).
    pub fn as_str(&self) -> Option<&str> {
        self.get(0, self.len())
    }
    /// The whole text, bytes that are not UTF-8 replaced by U+FFFD.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        crate::chart::model::lossy_text(self.bytes())
    }
    /// The text of bytes `start..end`; `None` if the range is outside or
    /// not on character boundaries.
    pub fn get(&self, start: usize, end: usize) -> Option<&str> {
        std::str::from_utf8(self.bytes().get(start..end)?).ok()
    }
    /// Whether byte `i` starts a character (or is the end).
    fn is_boundary(&self, i: usize) -> bool {
        match self.bytes().get(i) {
            Some(&b) => (b as i8) >= -0x40,
            None => i == self.len(),
        }
    }
}

impl From<&str> for Source {
    fn from(s: &str) -> Self {
        Source(Arc::new(s.to_owned()))
    }
}

impl From<String> for Source {
    fn from(s: String) -> Self {
        Source(Arc::new(s))
    }
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&String::from_utf8_lossy(self.bytes()), f)
    }
}

/// Plain text of a template: a byte range of the file's text, shared with
/// the tree instead of copied. Dereferences to the text.
#[derive(Debug, Clone)]
pub struct TextSpan {
    src: Source,
    start: u32,
    end: u32,
}

impl TextSpan {
    /// The text `src[start..end]`; `None` if the range is not inside `src`
    /// (on character boundaries) or does not fit in 32 bits.
    pub fn new(src: &Source, start: usize, end: usize) -> Option<TextSpan> {
        if start > end || !src.is_boundary(start) || !src.is_boundary(end) {
            return None;
        }
        Some(TextSpan {
            src: src.clone(),
            start: u32::try_from(start).ok()?,
            end: u32::try_from(end).ok()?,
        })
    }
}

impl std::ops::Deref for TextSpan {
    type Target = str;
    fn deref(&self) -> &str {
        // A range on character boundaries of UTF-8 text is UTF-8 itself;
        // the check costs about as much as copying the text out.
        self.src
            .get(self.start as usize, self.end as usize)
            .unwrap_or("")
    }
}

/// A list of nodes.
#[derive(Debug, Default)]
pub struct List {
    /// The nodes (boxed at their final number: a parse tree holds tens of
    /// thousands of lists and nodes, so no spare room).
    pub nodes: Box<[BodyNode]>,
}

/// A body node.
#[derive(Debug)]
pub enum BodyNode {
    /// Plain text.
    Text(TextSpan),
    /// `{{pipeline}}`
    Action(Box<Action>),
    /// `{{if}}`
    If(Box<Control>),
    /// `{{with}}`
    With(Box<Control>),
    /// `{{range}}`
    Range(Box<Control>),
    /// `{{template "name" pipeline}}`
    Template(Box<TemplateCall>),
    /// `{{break}}`
    Break,
    /// `{{continue}}`
    Continue,
}

/// An action that prints its pipeline (unless it declares variables).
#[derive(Debug)]
pub struct Action {
    /// Position.
    pub pos: u32,
    /// The pipeline.
    pub pipe: Pipe,
}

/// `if`, `with` and `range`.
#[derive(Debug)]
pub struct Control {
    /// Position of the pipeline.
    pub pos: u32,
    /// The condition or range pipeline.
    pub pipe: Pipe,
    /// The body.
    pub list: List,
    /// The `else` body.
    pub else_list: Option<List>,
}

/// `{{template "name" pipeline}}`.
#[derive(Debug)]
pub struct TemplateCall {
    /// Position of the name.
    pub pos: u32,
    /// The template name.
    pub name: String,
    /// The argument pipeline.
    pub pipe: Option<Pipe>,
}

/// A name or literal from a template's source (field, variable, function,
/// string or number text). Parsing interns them, so the thousands of
/// `.Values` in a chart share one allocation.
pub type Name = Arc<str>;

/// A pipeline with optional variable declarations.
#[derive(Debug)]
pub struct Pipe {
    /// Position.
    pub pos: u32,
    /// `=` instead of `:=`.
    pub is_assign: bool,
    /// Declared variables (names with `$`).
    pub decl: Box<[Name]>,
    /// The commands.
    pub cmds: Box<[Command]>,
}

/// One command: an operand followed by arguments.
#[derive(Debug)]
pub struct Command {
    /// Position.
    pub pos: u32,
    /// The words.
    pub args: Box<[Arg]>,
}

/// A parsed number constant with Go's interpretations.
#[derive(Debug, Clone)]
pub struct Number {
    /// The source text.
    pub text: Name,
    /// Valid as a signed integer.
    pub is_int: bool,
    /// Valid as an unsigned integer.
    pub is_uint: bool,
    /// Valid as a float.
    pub is_float: bool,
    /// A complex constant.
    pub is_complex: bool,
    /// Integer value.
    pub int: i64,
    /// Float value.
    pub float: f64,
    /// Real and imaginary parts of a complex constant.
    pub complex: (f64, f64),
}

/// A byte offset of an operand in its template's text. 32 bits, like
/// [`TextSpan`]'s, keep [`Arg`] at 24 bytes: operands are the most numerous
/// nodes of a parse tree.
pub type ArgPos = u32;

/// An operand.
#[derive(Debug)]
pub enum Arg {
    /// `.A.B`
    Field(ArgPos, Box<[Name]>),
    /// `(pipe).A.B` or `fn.A`
    Chain(ArgPos, Box<Chain>),
    /// A function name.
    Identifier(ArgPos, Name),
    /// `$x.A`
    Variable(ArgPos, Box<[Name]>),
    /// `.`
    Dot(ArgPos),
    /// `nil`
    Nil(ArgPos),
    /// `true`/`false`
    Bool(ArgPos, bool),
    /// A number.
    Number(ArgPos, Box<Number>),
    /// A string.
    String(ArgPos, Box<StringLit>),
    /// `(pipeline)`
    Pipe(Box<Pipe>),
}

/// The operand and fields of [`Arg::Chain`].
#[derive(Debug)]
pub struct Chain {
    /// The operand the fields apply to.
    pub node: Arg,
    /// The field names.
    pub fields: Box<[Name]>,
}

/// A string constant.
#[derive(Debug)]
pub struct StringLit {
    /// The quoted source form.
    pub quoted: Name,
    /// The value.
    pub value: Name,
}

impl Arg {
    /// Byte position.
    pub fn pos(&self) -> usize {
        match self {
            Arg::Field(p, _)
            | Arg::Chain(p, _)
            | Arg::Identifier(p, _)
            | Arg::Variable(p, _)
            | Arg::Dot(p)
            | Arg::Nil(p)
            | Arg::Bool(p, _)
            | Arg::Number(p, _)
            | Arg::String(p, _) => *p as usize,
            Arg::Pipe(p) => p.pos as usize,
        }
    }
}

/// An [`ArgPos`] for byte offset `pos` (saturating: template texts are far
/// below 4 GiB).
pub fn arg_pos(pos: usize) -> ArgPos {
    ArgPos::try_from(pos).unwrap_or(ArgPos::MAX)
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Field(_, idents) => {
                for i in idents {
                    write!(f, ".{i}")?;
                }
                Ok(())
            }
            Arg::Chain(_, chain) => {
                let (node, fields) = (&chain.node, &chain.fields);
                if let Arg::Pipe(p) = node {
                    write!(f, "({p})")?;
                } else {
                    write!(f, "{node}")?;
                }
                for i in fields {
                    write!(f, ".{i}")?;
                }
                Ok(())
            }
            Arg::Identifier(_, n) => f.write_str(n),
            Arg::Variable(_, idents) => f.write_str(&idents.join(".")),
            Arg::Dot(_) => f.write_str("."),
            Arg::Nil(_) => f.write_str("nil"),
            Arg::Bool(_, b) => write!(f, "{b}"),
            Arg::Number(_, n) => f.write_str(&n.text),
            Arg::String(_, s) => f.write_str(&s.quoted),
            Arg::Pipe(p) => write!(f, "{p}"),
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, a) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            if let Arg::Pipe(p) = a {
                write!(f, "({p})")?;
            } else {
                write!(f, "{a}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.decl.is_empty() {
            f.write_str(&self.decl.join(", "))?;
            f.write_str(if self.is_assign { " = " } else { " := " })?;
        }
        for (i, c) in self.cmds.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

impl fmt::Display for TemplateCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q = crate::gostd::strconv::quote(&self.name);
        match &self.pipe {
            Some(p) => write!(f, "{{{{template {q} {p}}}}}"),
            None => write!(f, "{{{{template {q}}}}}"),
        }
    }
}

impl fmt::Display for List {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for n in &self.nodes {
            write!(f, "{n}")?;
        }
        Ok(())
    }
}

impl fmt::Display for BodyNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyNode::Text(t) => write!(f, "{}", crate::gostd::strconv::quote(t)),
            BodyNode::Action(a) => write!(f, "{{{{{}}}}}", a.pipe),
            BodyNode::If(c) => ctl(f, "if", c),
            BodyNode::With(c) => ctl(f, "with", c),
            BodyNode::Range(c) => ctl(f, "range", c),
            BodyNode::Template(t) => write!(f, "{t}"),
            BodyNode::Break => f.write_str("{{break}}"),
            BodyNode::Continue => f.write_str("{{continue}}"),
        }
    }
}

fn ctl(f: &mut fmt::Formatter<'_>, kw: &str, c: &Control) -> fmt::Result {
    write!(f, "{{{{{kw} {}}}}}{}", c.pipe, c.list)?;
    if let Some(e) = &c.else_list {
        write!(f, "{{{{else}}}}{e}")?;
    }
    f.write_str("{{end}}")
}

/// Whether a tree body is only whitespace text (Go's `IsEmptyTree`).
pub fn is_empty_list(l: &List) -> bool {
    l.nodes.iter().all(|n| match n {
        BodyNode::Text(t) => t.trim().is_empty(),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operands_stay_small() {
        // The most numerous nodes of a parse tree (1.76 MB of operand
        // vectors at kube-prometheus-stack's peak, at 48 bytes each before
        // positions went to 32 bits and strings and chains behind a box).
        assert_eq!(std::mem::size_of::<Arg>(), 24);
    }

    #[test]
    fn sources_and_spans() {
        let bad = Source::from_bytes(vec![b'a', 0xff]);
        assert!(bad.as_str().is_none());
        assert_eq!(bad.text(), "a\u{fffd}");
        let src = Source::from_bytes(b"h\xc3\xa9llo {{ x }}".to_vec());
        assert_eq!(src.as_str(), Some("héllo {{ x }}"));
        assert_eq!(src.len(), 14);
        // Inside the two bytes of 'é': not a span.
        assert!(TextSpan::new(&src, 0, 2).is_none());
        assert!(TextSpan::new(&src, 2, 1).is_none());
        assert!(TextSpan::new(&src, 0, 15).is_none());
        assert_eq!(&*TextSpan::new(&src, 0, 3).unwrap(), "hé");
        assert_eq!(&*TextSpan::new(&src, 7, 14).unwrap(), "{{ x }}");
        assert_eq!(&*TextSpan::new(&src, 14, 14).unwrap(), "");
        let t = Tree {
            name: "t".into(),
            parse_name: "t".into(),
            text: Source::from("a\nbc"),
            root: List::default(),
        };
        assert_eq!(t.location(3), "t:2:1");
    }
}
