//! The parser of Go's `text/template` (Go 1.23): the same grammar, the same
//! variable scoping and the same error messages.
use super::ast::{
    arg_pos, is_empty_list, Action, Arg, BodyNode, Chain, Command, Control, List, Name, Number,
    Pipe, Source, StringLit, TemplateCall, TextSpan, Tree,
};
use super::lexer::{lex, Item, Lexed, Tok};
use crate::gostd::num::{parse_float, parse_int, parse_uint};
use std::sync::Arc;

/// How deeply parentheses and control structures may nest. Real templates
/// stay far below; the bound keeps hostile input from exhausting the stack.
const MAX_DEPTH: usize = 1000;

/// A parse error, in Go's terms.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    /// The parse name (file name).
    pub name: String,
    /// 1-based line, as Go's lexer counts it (newlines inside comments do
    /// not count).
    pub line: usize,
    /// The column of the token the error is at: its byte offset in its
    /// line, from 0 (Go's column in execution errors; Go's parse errors
    /// print only the line).
    pub column: usize,
    /// Go's message (after `template: NAME:LINE: `).
    pub msg: String,
}

impl ParseError {
    /// Go's full error text: `template: NAME:LINE: MSG`.
    pub fn go_text(&self) -> String {
        format!("template: {}:{}: {}", self.name, self.line, self.msg)
    }
}

type PResult<T> = Result<T, ParseError>;

struct Parser<'a> {
    items: Vec<Item>,
    /// The lexer's account of the text: its error, and what error lines need.
    lexed: Lexed,
    idx: usize,
    furthest: usize,
    vars: Vec<Name>,
    names: Interner,
    range_depth: usize,
    depth: usize,
    /// Where the action being parsed starts (its `{{`), if any.
    action_pos: Option<usize>,
    parse_name: Arc<str>,
    text: &'a str,
    source: Source,
    has_func: &'a dyn Fn(&str) -> bool,
    trees: Vec<Tree>,
    // Work stacks: children are pushed here while a list, pipeline or
    // command is open and moved out into an exactly sized Vec when it
    // closes (growing each Vec from empty wasted a quarter of the AST's
    // memory on spare capacity).
    node_stack: Vec<BodyNode>,
    cmd_stack: Vec<Command>,
    arg_stack: Vec<Arg>,
    /// The names of the field chain being parsed.
    name_stack: Vec<Name>,
}

/// Parses `text` as template `name`: returns the file's own tree first, then
/// its `define`/`block` trees, in source order.
pub fn parse(name: &str, text: &str, has_func: &dyn Fn(&str) -> bool) -> PResult<Vec<Tree>> {
    parse_source(name, &Source::from(text), has_func)
}

/// [`parse`] over shared text: the trees keep `source` rather than a copy.
/// Bytes that are not UTF-8 are kept as Go keeps them, as raw-byte
/// characters (see [`crate::gostd::gostr`]), in a converted copy: they come
/// out of the template as they went in.
pub fn parse_source(
    name: &str,
    source: &Source,
    has_func: &dyn Fn(&str) -> bool,
) -> PResult<Vec<Tree>> {
    let converted;
    let (text, source) = match source.as_str() {
        Some(text) => (text, source),
        None => {
            converted = Source::from(crate::gostd::gostr::go_string_from_bytes(source.bytes()));
            (converted.as_str().unwrap_or_default(), &converted)
        }
    };
    let mut items = TOKENS.with(|t| std::mem::take(&mut *t.borrow_mut()));
    let lexed = lex(text, &mut items);
    let mut p = Parser {
        items,
        lexed,
        idx: 0,
        furthest: 0,
        vars: vec!["$".into()],
        names: NAMES.with(|n| std::mem::take(&mut *n.borrow_mut())),
        range_depth: 0,
        depth: 0,
        action_pos: None,
        parse_name: Arc::from(name),
        text,
        source: source.clone(),
        has_func,
        trees: Vec::new(),
        node_stack: Vec::new(),
        cmd_stack: Vec::new(),
        arg_stack: Vec::new(),
        name_stack: Vec::new(),
    };
    let root = p.parse_top();
    // Hand the token buffer back for the next template (unless a huge one
    // made it worth freeing).
    let mut items = std::mem::take(&mut p.items);
    if items.capacity() <= MAX_KEPT_TOKENS {
        items.clear();
        TOKENS.with(|t| *t.borrow_mut() = items);
    }
    let names = std::mem::take(&mut p.names);
    if names.0.len() <= MAX_KEPT_NAMES {
        NAMES.with(|n| *n.borrow_mut() = names);
    }
    let main = Tree {
        name: name.to_string(),
        parse_name: p.parse_name.clone(),
        text: p.source.clone(),
        root: root?,
    };
    let mut out = vec![main];
    out.append(&mut p.trees);
    Ok(out)
}

/// The largest token buffer kept between templates (8 MiB of tokens).
const MAX_KEPT_TOKENS: usize = 256 * 1024;

/// The most interned names kept between templates.
const MAX_KEPT_NAMES: usize = 64 * 1024;

thread_local! {
    // One token buffer per thread, reused from template to template: its
    // pages are touched once rather than once per template.
    static TOKENS: std::cell::RefCell<Vec<Item>> = const { std::cell::RefCell::new(Vec::new()) };
    // The names interned on this thread, shared by the templates it parses.
    static NAMES: std::cell::RefCell<Interner> = std::cell::RefCell::new(Interner::default());
}

/// A set of names: each distinct name is allocated once.
#[derive(Default)]
struct Interner(foldhash::HashSet<Name>);

/// Longer names and literals are allocated each time: they rarely repeat,
/// and the set outlives the parse on its thread.
const MAX_INTERNED_LEN: usize = 64;

impl Interner {
    fn intern(&mut self, s: &str) -> Name {
        if s.len() > MAX_INTERNED_LEN {
            return Name::from(s);
        }
        if let Some(n) = self.0.get(s) {
            return Name::clone(n);
        }
        let n: Name = Arc::from(s);
        self.0.insert(Name::clone(&n));
        n
    }
}

/// Moves `stack[base..]` into a box of exactly that length, leaving the
/// stack's buffer in place for the next list, command or chain.
fn take_tail<T>(stack: &mut Vec<T>, base: usize) -> Box<[T]> {
    if base == 0 {
        // `split_off(0)` would hand over the whole buffer (spare room
        // included) and allocate a new one for the stack.
        let mut all = Vec::with_capacity(stack.len());
        all.append(stack);
        return all.into_boxed_slice();
    }
    stack.split_off(base).into_boxed_slice()
}

fn unquote(tok: &Item, src: &str) -> Result<String, String> {
    let s = tok.text(src);
    if tok.typ == Tok::RawString {
        let inner = s.get(1..s.len().saturating_sub(1)).unwrap_or("");
        // Go drops carriage returns from raw strings; most have none.
        if memchr::memchr(b'\r', inner.as_bytes()).is_none() {
            return Ok(inner.to_string());
        }
        return Ok(inner.replace('\r', ""));
    }
    crate::gostd::strconv::unquote(s).map_err(|e| e.to_string())
}

/// Go's `parse.newNumber`.
fn new_number(tok: &Item, src: &str) -> Result<Number, String> {
    let text = tok.text(src);
    let mut n = Number {
        text: text.into(),
        is_int: false,
        is_uint: false,
        is_float: false,
        is_complex: false,
        int: 0,
        float: 0.0,
        complex: (0.0, 0.0),
    };
    match tok.typ {
        Tok::CharConstant => {
            let (c, tail) = crate::gostd::strconv::unquote_char(text.get(1..).unwrap_or(""), '\'')
                .map_err(|e| e.to_string())?;
            if tail != "'" {
                return Err(format!("malformed character constant: {text}"));
            }
            n.int = c as i64;
            n.is_int = true;
            n.is_uint = true;
            n.float = c as i64 as f64;
            n.is_float = true;
            return Ok(n);
        }
        Tok::Complex => {
            // real part, then a signed imaginary part ending in 'i'
            let body = &text[..text.len() - 1];
            let split = body
                .char_indices()
                .skip(1)
                .filter(|(i, c)| {
                    (*c == '+' || *c == '-')
                        && !matches!(body.as_bytes()[i - 1], b'e' | b'E' | b'p' | b'P')
                })
                .map(|(i, _)| i)
                .last();
            let Some(at) = split else {
                return Err(format!(
                    "illegal number syntax: {}",
                    crate::gostd::strconv::quote(text)
                ));
            };
            match (parse_float(&body[..at]), parse_float(&body[at..])) {
                (Some(re), Some(im)) => n.complex = (re, im),
                _ => {
                    return Err(format!(
                        "illegal number syntax: {}",
                        crate::gostd::strconv::quote(text)
                    ))
                }
            }
            n.is_complex = true;
            return Ok(n);
        }
        _ => {}
    }
    if let Some(im) = text.strip_suffix('i').and_then(parse_float) {
        n.is_complex = true;
        n.complex = (0.0, im);
        return Ok(n);
    }
    let uval = parse_uint(text, 0);
    n.is_uint = uval.is_some();
    if let Some(i) = parse_int(text, 0) {
        n.is_int = true;
        n.int = i;
        // ParseUint refuses `-0`.
        n.is_uint |= i == 0;
    }
    if n.is_int {
        n.is_float = true;
        n.float = n.int as f64;
    } else if n.is_uint {
        n.is_float = true;
        n.float = uval.unwrap_or(0) as f64;
    } else if let Some(f) = parse_float(text) {
        if !text.contains(['.', 'e', 'E', 'p', 'P']) {
            return Err(format!(
                "integer overflow: {}",
                crate::gostd::strconv::quote(text)
            ));
        }
        n.is_float = true;
        n.float = f;
        if f.fract() == 0.0 && f.abs() < 9.2e18 {
            n.is_int = true;
            n.int = f as i64;
        }
        if f.fract() == 0.0 && (0.0..1.8e19).contains(&f) {
            n.is_uint = true;
        }
    }
    if !n.is_int && !n.is_uint && !n.is_float {
        return Err(format!(
            "illegal number syntax: {}",
            crate::gostd::strconv::quote(text)
        ));
    }
    Ok(n)
}

enum Ended {
    End,
    Else,
}

impl<'a> Parser<'a> {
    /// The line of byte offset `pos`, as Go's lexer counts it.
    fn line(&self, pos: usize) -> usize {
        self.lexed.line(self.text, pos)
    }
    /// A token's text.
    fn val(&self, it: &Item) -> &str {
        it.text(self.text)
    }
    fn errorf(&self, msg: impl Into<String>) -> ParseError {
        let at = self
            .items
            .get(self.furthest.min(self.items.len().saturating_sub(1)))
            .map(|i| i.offset());
        let column = at.map_or(0, |pos| {
            let before = self.text.as_bytes().get(..pos).unwrap_or_default();
            pos - before
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |nl| nl + 1)
        });
        ParseError {
            name: self.parse_name.to_string(),
            line: at.map_or(1, |pos| self.line(pos)),
            column,
            msg: msg.into(),
        }
    }

    fn next(&mut self) -> Item {
        let last = self.items.len().saturating_sub(1);
        let i = self.idx.min(last);
        if self.idx <= last {
            self.idx += 1;
        }
        if i > self.furthest {
            self.furthest = i;
        }
        self.items[i]
    }
    fn backup(&mut self) {
        self.idx = self.idx.saturating_sub(1);
    }
    fn peek(&mut self) -> Item {
        let it = self.next();
        self.backup();
        it
    }
    fn next_non_space(&mut self) -> Item {
        loop {
            let it = self.next();
            if it.typ != Tok::Space {
                return it;
            }
        }
    }
    fn peek_non_space(&mut self) -> Item {
        let it = self.next_non_space();
        self.backup();
        it
    }
    fn unexpected(&self, it: &Item, context: &str) -> ParseError {
        if it.typ == Tok::Error {
            let lex_error = self.lexed.error.as_deref().unwrap_or_default();
            let mut extra = String::new();
            let action_line = self.action_pos.map(|pos| self.line(pos));
            if let Some(action_line) = action_line.filter(|&l| l != self.line(it.offset())) {
                extra = format!(" in action started at {}:{}", self.parse_name, action_line);
                if lex_error.ends_with(" action") {
                    extra = extra[" in action".len()..].to_string();
                }
            }
            return self.errorf(format!("{lex_error}{extra}"));
        }
        self.errorf(format!(
            "unexpected {} in {}",
            it.describe(self.text),
            context
        ))
    }
    fn expect(&mut self, typ: Tok, context: &str) -> PResult<Item> {
        let it = self.next_non_space();
        if it.typ != typ {
            return Err(self.unexpected(&it, context));
        }
        Ok(it)
    }
    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.errorf("max expression depth exceeded"));
        }
        Ok(())
    }

    fn parse_top(&mut self) -> PResult<List> {
        let mut nodes = Vec::new();
        loop {
            let pk = self.peek();
            if pk.typ == Tok::Eof {
                break;
            }
            if pk.typ == Tok::LeftDelim {
                let save = self.idx;
                self.next();
                if self.next_non_space().typ == Tok::Define {
                    self.parse_definition()?;
                    continue;
                }
                self.idx = save;
            }
            match self.text_or_action()? {
                TA::Node(n) => nodes.push(n),
                TA::End => return Err(self.errorf("unexpected {{end}}")),
                TA::Else => return Err(self.errorf("unexpected {{else}}")),
                TA::None => {}
            }
        }
        Ok(List {
            nodes: nodes.into_boxed_slice(),
        })
    }

    fn add_tree(&mut self, name: String, root: List) -> PResult<()> {
        if let Some(existing) = self.trees.iter_mut().find(|t| t.name == name) {
            if is_empty_list(&existing.root) {
                existing.root = root;
                return Ok(());
            }
            if !is_empty_list(&root) {
                return Err(self.errorf(format!(
                    "template: multiple definition of template {}",
                    crate::gostd::strconv::quote(&name)
                )));
            }
            return Ok(());
        }
        self.trees.push(Tree {
            name,
            parse_name: self.parse_name.clone(),
            text: self.source.clone(),
            root,
        });
        Ok(())
    }

    fn parse_definition(&mut self) -> PResult<()> {
        let context = "define clause";
        let tok = self.next_non_space();
        if tok.typ != Tok::String && tok.typ != Tok::RawString {
            return Err(self.unexpected(&tok, context));
        }
        let name = unquote(&tok, self.text).map_err(|e| self.errorf(e))?;
        self.expect(Tok::RightDelim, context)?;
        let saved_vars = std::mem::replace(&mut self.vars, vec!["$".into()]);
        let saved_range = std::mem::replace(&mut self.range_depth, 0);
        let (list, end) = self.item_list()?;
        self.vars = saved_vars;
        self.range_depth = saved_range;
        if let Ended::Else = end {
            return Err(self.errorf(format!("unexpected {{{{else}}}} in {context}")));
        }
        self.add_tree(name, list)
    }

    fn item_list(&mut self) -> PResult<(List, Ended)> {
        let base = self.node_stack.len();
        while self.peek_non_space().typ != Tok::Eof {
            let ended = match self.text_or_action()? {
                TA::Node(n) => {
                    self.node_stack.push(n);
                    continue;
                }
                TA::End => Ended::End,
                TA::Else => Ended::Else,
                TA::None => continue,
            };
            let nodes = take_tail(&mut self.node_stack, base);
            return Ok((List { nodes }, ended));
        }
        Err(self.errorf("unexpected EOF"))
    }

    fn text_or_action(&mut self) -> PResult<TA> {
        let tok = self.next_non_space();
        match tok.typ {
            Tok::Text => match TextSpan::new(&self.source, tok.offset(), tok.end as usize) {
                Some(t) => Ok(TA::Node(BodyNode::Text(t))),
                None => Err(self.errorf("template text too large")),
            },
            Tok::LeftDelim => {
                self.action_pos = Some(tok.offset());
                let r = self.action();
                self.action_pos = None;
                r
            }
            _ => Err(self.unexpected(&tok, "input")),
        }
    }

    fn action(&mut self) -> PResult<TA> {
        let tok = self.next_non_space();
        match tok.typ {
            Tok::Block => return self.block_control().map(TA::Node),
            Tok::Break | Tok::Continue => {
                let word = if tok.typ == Tok::Break {
                    "break"
                } else {
                    "continue"
                };
                let t2 = self.next_non_space();
                if t2.typ != Tok::RightDelim {
                    return Err(self.unexpected(&t2, &format!("{{{{{word}}}}}")));
                }
                if self.range_depth == 0 {
                    return Err(self.errorf(format!("{{{{{word}}}}} outside {{{{range}}}}")));
                }
                return Ok(TA::Node(if tok.typ == Tok::Break {
                    BodyNode::Break
                } else {
                    BodyNode::Continue
                }));
            }
            Tok::Else => {
                let pk = self.peek_non_space();
                if pk.typ == Tok::If || pk.typ == Tok::With {
                    return Ok(TA::Else);
                }
                self.expect(Tok::RightDelim, "else")?;
                return Ok(TA::Else);
            }
            Tok::End => {
                self.expect(Tok::RightDelim, "end")?;
                return Ok(TA::End);
            }
            Tok::If => return self.control("if").map(|c| TA::Node(BodyNode::If(c))),
            Tok::Range => return self.control("range").map(|c| TA::Node(BodyNode::Range(c))),
            Tok::With => return self.control("with").map(|c| TA::Node(BodyNode::With(c))),
            Tok::Template => return self.template_control().map(TA::Node),
            _ => {}
        }
        self.backup();
        let tok = self.peek();
        let pipe = self.pipeline("command", Tok::RightDelim)?;
        Ok(TA::Node(BodyNode::Action(Box::new(Action {
            pos: tok.pos,
            pipe,
        }))))
    }

    fn control(&mut self, context: &str) -> PResult<Box<Control>> {
        self.enter()?;
        let nvars = self.vars.len();
        let r = super::stack::grow(64 * 1024, 1024 * 1024, || self.control_inner(context));
        self.vars.truncate(nvars);
        self.depth -= 1;
        r
    }

    fn control_inner(&mut self, context: &str) -> PResult<Box<Control>> {
        let pipe = self.pipeline(context, Tok::RightDelim)?;
        if context == "range" {
            self.range_depth += 1;
        }
        let res = self.item_list();
        if context == "range" {
            self.range_depth -= 1;
        }
        let (list, next) = res?;
        let mut else_list = None;
        if let Ended::Else = next {
            let pk = self.peek();
            if context == "if" && pk.typ == Tok::If {
                self.next();
                let c = self.control("if")?;
                else_list = Some(List {
                    nodes: Box::new([BodyNode::If(c)]),
                });
            } else if context == "with" && pk.typ == Tok::With {
                self.next();
                let c = self.control("with")?;
                else_list = Some(List {
                    nodes: Box::new([BodyNode::With(c)]),
                });
            } else {
                let (l, n2) = self.item_list()?;
                if let Ended::Else = n2 {
                    return Err(self.errorf("expected end; found {{else}}"));
                }
                else_list = Some(l);
            }
        }
        Ok(Box::new(Control {
            pos: pipe.pos,
            pipe,
            list,
            else_list,
        }))
    }

    fn template_name(&mut self, tok: &Item, context: &str) -> PResult<String> {
        match tok.typ {
            Tok::String | Tok::RawString => unquote(tok, self.text).map_err(|e| self.errorf(e)),
            _ => Err(self.unexpected(tok, context)),
        }
    }

    fn template_control(&mut self) -> PResult<BodyNode> {
        let context = "template clause";
        let tok = self.next_non_space();
        let name = self.template_name(&tok, context)?;
        let mut pipe = None;
        if self.next_non_space().typ != Tok::RightDelim {
            self.backup();
            pipe = Some(self.pipeline(context, Tok::RightDelim)?);
        }
        Ok(BodyNode::Template(Box::new(TemplateCall {
            pos: tok.pos,
            name,
            pipe,
        })))
    }

    fn block_control(&mut self) -> PResult<BodyNode> {
        let context = "block clause";
        let tok = self.next_non_space();
        let name = self.template_name(&tok, context)?;
        let pipe = self.pipeline(context, Tok::RightDelim)?;
        let saved_vars = std::mem::replace(&mut self.vars, vec!["$".into()]);
        let saved_range = std::mem::replace(&mut self.range_depth, 0);
        let res = self.item_list();
        self.vars = saved_vars;
        self.range_depth = saved_range;
        let (list, end) = res?;
        if let Ended::Else = end {
            return Err(self.errorf(format!("unexpected {{{{else}}}} in {context}")));
        }
        self.add_tree(name.clone(), list)?;
        Ok(BodyNode::Template(Box::new(TemplateCall {
            pos: tok.pos,
            name,
            pipe: Some(pipe),
        })))
    }

    fn pipeline(&mut self, context: &str, end: Tok) -> PResult<Pipe> {
        let tok = self.peek_non_space();
        let mut pipe = Pipe {
            pos: tok.pos,
            is_assign: false,
            decl: Box::default(),
            cmds: Box::default(),
        };
        let mut decl = Vec::new();
        let cmd_base = self.cmd_stack.len();
        // declarations
        loop {
            let v = self.peek_non_space();
            if v.typ != Tok::Variable {
                break;
            }
            let save = self.idx;
            self.next_non_space();
            let after = self.peek();
            let nx = self.peek_non_space();
            if nx.typ == Tok::Assign || nx.typ == Tok::Declare {
                pipe.is_assign = nx.typ == Tok::Assign;
                self.next_non_space();
                let name = self.name(&v, 0);
                decl.push(Name::clone(&name));
                self.vars.push(name);
                break;
            } else if nx.typ == Tok::Char && self.val(&nx) == "," {
                self.next_non_space();
                let name = self.name(&v, 0);
                decl.push(Name::clone(&name));
                self.vars.push(name);
                if context == "range" && decl.len() < 2 {
                    let pk = self.peek_non_space();
                    match pk.typ {
                        Tok::Variable | Tok::RightDelim | Tok::RightParen => continue,
                        _ => return Err(self.errorf("range can only initialize variables")),
                    }
                }
                return Err(self.errorf(format!("too many declarations in {context}")));
            } else {
                let _ = after;
                self.idx = save;
                break;
            }
        }
        loop {
            let tok = self.next_non_space();
            if tok.typ == end {
                pipe.decl = decl.into_boxed_slice();
                pipe.cmds = take_tail(&mut self.cmd_stack, cmd_base);
                self.check_pipeline(&pipe, context)?;
                return Ok(pipe);
            }
            match tok.typ {
                Tok::Bool
                | Tok::CharConstant
                | Tok::Complex
                | Tok::Dot
                | Tok::Field
                | Tok::Identifier
                | Tok::Number
                | Tok::Nil
                | Tok::RawString
                | Tok::String
                | Tok::Variable
                | Tok::LeftParen => {
                    self.backup();
                    let c = self.command()?;
                    self.cmd_stack.push(c);
                }
                _ => return Err(self.unexpected(&tok, context)),
            }
        }
    }

    fn check_pipeline(&self, pipe: &Pipe, context: &str) -> PResult<()> {
        if pipe.cmds.is_empty() {
            return Err(self.errorf(format!("missing value for {context}")));
        }
        for (i, c) in pipe.cmds.iter().enumerate().skip(1) {
            if matches!(
                c.args.first(),
                Some(Arg::Bool(..) | Arg::Dot(_) | Arg::Nil(_) | Arg::Number(..) | Arg::String(..))
            ) {
                return Err(self.errorf(format!(
                    "non executable command in pipeline stage {}",
                    i + 1
                )));
            }
        }
        Ok(())
    }

    fn command(&mut self) -> PResult<Command> {
        let pos = self.peek_non_space().pos;
        let arg_base = self.arg_stack.len();
        loop {
            self.peek_non_space();
            if let Some(op) = self.operand()? {
                self.arg_stack.push(op);
            }
            let tok = self.next();
            match tok.typ {
                Tok::Space => continue,
                Tok::RightDelim | Tok::RightParen => self.backup(),
                Tok::Pipe => {}
                _ => return Err(self.unexpected(&tok, "operand")),
            }
            break;
        }
        if self.arg_stack.len() == arg_base {
            return Err(self.errorf("empty command"));
        }
        let args = take_tail(&mut self.arg_stack, arg_base);
        Ok(Command { pos, args })
    }

    fn operand(&mut self) -> PResult<Option<Arg>> {
        match self.term()? {
            // Field and variable terms already took their own fields.
            Some(node @ (Arg::Field(..) | Arg::Variable(..))) => Ok(Some(node)),
            Some(node) => self.with_fields(node, None),
            None => Ok(None),
        }
    }

    /// `node` followed by the field tokens that come next: a field or
    /// variable gets them after `first` (its own name), any other term
    /// becomes a chain. The names gather on a stack shared by all chains and
    /// are boxed once, at their final length.
    fn with_fields(&mut self, node: Arg, first: Option<Name>) -> PResult<Option<Arg>> {
        let base = self.name_stack.len();
        let had = usize::from(first.is_some());
        self.name_stack.extend(first);
        let cpos = if self.peek().typ == Tok::Field {
            self.peek().offset()
        } else {
            node.pos()
        };
        while self.peek().typ == Tok::Field {
            let t = self.next();
            let name = self.name(&t, 1);
            self.name_stack.push(name);
        }
        // An exactly sized copy: one allocation (none for no names).
        let names = take_tail(&mut self.name_stack, base);
        // A field or variable that took more fields sits where they start.
        let at = |pos| {
            if names.len() > had {
                arg_pos(cpos)
            } else {
                pos
            }
        };
        Ok(Some(match node {
            Arg::Field(pos, _) => Arg::Field(at(pos), names),
            Arg::Variable(pos, _) => Arg::Variable(at(pos), names),
            node if names.is_empty() => node,
            Arg::Bool(..) | Arg::String(..) | Arg::Number(..) | Arg::Nil(_) | Arg::Dot(_) => {
                let q = crate::gostd::strconv::quote(&node.to_string());
                return Err(self.errorf(format!("unexpected . after term {q}")));
            }
            other => Arg::Chain(
                arg_pos(cpos),
                Box::new(Chain {
                    node: other,
                    fields: names,
                }),
            ),
        }))
    }

    /// The token's text from byte `skip` on, interned.
    fn name(&mut self, tok: &Item, skip: usize) -> Name {
        let text = tok.text(self.text).get(skip..).unwrap_or("");
        self.names.intern(text)
    }

    fn term(&mut self) -> PResult<Option<Arg>> {
        let tok = self.next_non_space();
        Ok(Some(match tok.typ {
            Tok::Identifier => {
                if !(self.has_func)(self.val(&tok)) {
                    return Err(self.errorf(format!(
                        "function {} not defined",
                        crate::gostd::strconv::quote(self.val(&tok))
                    )));
                }
                Arg::Identifier(tok.pos, self.name(&tok, 0))
            }
            Tok::Dot => Arg::Dot(tok.pos),
            Tok::Nil => Arg::Nil(tok.pos),
            Tok::Variable => {
                let name = self.val(&tok).split('.').next().unwrap_or("");
                if !self.vars.iter().any(|v| **v == *name) {
                    return Err(self.errorf(format!(
                        "undefined variable {}",
                        crate::gostd::strconv::quote(name)
                    )));
                }
                let first = self.name(&tok, 0);
                return self.with_fields(Arg::Variable(tok.pos, Box::new([])), Some(first));
            }
            Tok::Field => {
                let first = self.name(&tok, 1);
                return self.with_fields(Arg::Field(tok.pos, Box::new([])), Some(first));
            }
            Tok::Bool => Arg::Bool(tok.pos, self.val(&tok) == "true"),
            Tok::CharConstant | Tok::Complex | Tok::Number => {
                let n = new_number(&tok, self.text).map_err(|e| self.errorf(e))?;
                Arg::Number(tok.pos, Box::new(n))
            }
            Tok::LeftParen => {
                self.enter()?;
                let p = super::stack::grow(64 * 1024, 1024 * 1024, || {
                    self.pipeline("parenthesized pipeline", Tok::RightParen)
                });
                self.depth -= 1;
                Arg::Pipe(Box::new(p?))
            }
            Tok::String | Tok::RawString => {
                let s = unquote(&tok, self.text).map_err(|e| self.errorf(e))?;
                Arg::String(
                    tok.pos,
                    Box::new(StringLit {
                        quoted: self.name(&tok, 0),
                        value: self.names.intern(&s),
                    }),
                )
            }
            _ => {
                self.backup();
                return Ok(None);
            }
        }))
    }
}

enum TA {
    Node(BodyNode),
    End,
    Else,
    #[allow(dead_code)]
    None,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Vec<Tree>, String> {
        parse("t", s, &|n| n != "nope").map_err(|e| e.go_text())
    }

    /// Error lines are counted from token offsets; these cases put
    /// newlines in trimmed text, raw strings, comments and spaces before
    /// the error (lines and messages as Helm 3.17 prints them: Go's lexer
    /// does not count the newlines inside a comment).
    #[test]
    fn error_lines_count_newlines_outside_comments() {
        let cases = [
            (
                "a\n{{ `x\ny\nz` }}\n{{ /* c\nd */ }}",
                "t:5: unexpected \"/\" in command",
            ),
            ("{{- \"a\"\n -}}\n\n{{ if }}", "t:4: missing value for if"),
            (
                "{{ print\n\n `q\nr` \n  1 | nope }}",
                "t:5: function \"nope\" not defined",
            ),
            (
                "line1\n{{ print (1\n\n }}",
                "t:4: unclosed left paren in action started at t:2",
            ),
            (
                "a\n{{/* c\nd */}}\n{{ .x }} {{ nope }}",
                "t:3: function \"nope\" not defined",
            ),
            (
                "{{ 3 \n -}}\n{{ \"unterminated\n}}",
                "t:3: unterminated quoted string",
            ),
            (
                "{{- /* a\nb */ -}}\n\n{{ if }}",
                "t:3: missing value for if",
            ),
            (
                "x{{/* 1\n2 */}}\n{{/* 3\n4\n5 */}}{{ print (1\n }}",
                "t:3: unclosed left paren in action started at t:2",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(
                p(text).unwrap_err(),
                format!("template: {want}"),
                "{text:?}"
            );
        }
    }

    #[test]
    fn errors() {
        assert_eq!(
            p("{{ if }}{{ end }}").unwrap_err(),
            "template: t:1: missing value for if"
        );
        assert_eq!(
            p("{{ $y }}").unwrap_err(),
            "template: t:1: undefined variable \"$y\""
        );
        assert_eq!(
            p("a\n\n{{end}}").unwrap_err(),
            "template: t:3: unexpected {{end}}"
        );
        assert_eq!(
            p("{{ nope }}").unwrap_err(),
            "template: t:1: function \"nope\" not defined"
        );
        assert_eq!(
            p("{{ 1.2.3 }}").unwrap_err(),
            "template: t:1: unexpected \".3\" in operand"
        );
        assert_eq!(
            p("{{ .x | 3 }}").unwrap_err(),
            "template: t:1: non executable command in pipeline stage 2"
        );
        assert_eq!(
            p("{{ break }}").unwrap_err(),
            "template: t:1: {{break}} outside {{range}}"
        );
    }

    #[test]
    fn strings_of_nodes() {
        let t = p("{{ $x := .a.b | printf \"%d\" (len .c) }}").unwrap();
        assert_eq!(
            t[0].root.nodes[0].to_string(),
            "{{$x := .a.b | printf \"%d\" (len .c)}}"
        );
    }

    /// The names of one parse thread share their allocation; positions of
    /// field chains are Go's (the first field after the term).
    #[test]
    fn names_are_interned() {
        let t = p("{{ .Values.a }}{{ .Values.b }}{{ $x := 1 }}{{ $x.y.z }}{{ (len .Values).w }}")
            .unwrap();
        let args: Vec<&Arg> = t[0]
            .root
            .nodes
            .iter()
            .filter_map(|n| match n {
                BodyNode::Action(a) => Some(&a.pipe.cmds[0].args[0]),
                _ => None,
            })
            .collect();
        let (Arg::Field(p1, a), Arg::Field(p2, b)) = (args[0], args[1]) else {
            panic!("fields expected: {args:?}");
        };
        assert!(Arc::ptr_eq(&a[0], &b[0]), "one \"Values\" for both");
        assert_eq!((*p1, *p2), (10, 25));
        assert_eq!(args[3].to_string(), "$x.y.z");
        let Arg::Variable(pv, v) = args[3] else {
            panic!("variable expected: {:?}", args[3]);
        };
        assert_eq!((*pv, v.len()), (48, 3));
        assert!(matches!(args[4], Arg::Chain(..)));
        assert_eq!(args[4].to_string(), "(len .Values).w");
    }
}
