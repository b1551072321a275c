//! Execution of parsed templates with Go 1.23 `text/template` semantics.
//!
//! Go keeps a "current node" that every evaluation step updates and that
//! error messages quote (`at <...>`); the executor does the same at the same
//! steps, so the quoted node and its `LINE:COL` match Go's, quirks included.
//! Deep recursion (nested `include`, `template`, `tpl`) runs on a growable
//! stack, and total nesting is bounded, so hostile input cannot overflow it.
use super::ast::{Arg, BodyNode, Command, List, Name, Number, Pipe, TemplateCall, Tree};
use super::funcs::{too_large, CallContext, FuncError, FuncResult, FuncSpec, Param};
use super::value::{GoObject, ListKind, MapKind, Value};
use super::Engine;
use crate::gostd::strconv::quote;
use foldhash::HashMap;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// The most templates (`template`, `include`, `tpl`) that may be nested.
pub const MAX_NESTING: usize = 5000;

/// The most nodes one execution may visit: Go would loop for ever on some
/// hostile templates (exponential `template` recursion); this engine stops.
pub const MAX_STEPS: u64 = 50_000_000;

/// Stack space kept free before growing (bytes), and the size of each new segment.
const RED_ZONE: usize = 128 * 1024;
const STACK_SEGMENT: usize = 4 * 1024 * 1024;

/// Why execution stopped.
#[derive(Debug, Clone)]
pub(crate) enum ExecErr {
    /// A Go `ExecError` (or a wrapped function error).
    Go(Box<GoError>),
    /// The output limit was reached.
    Limit(usize),
    /// `{{break}}` unwinding to its range.
    Break,
    /// `{{continue}}` unwinding to its range.
    Continue,
}

/// A Go execution error: Go's full text, and where it happened.
#[derive(Debug, Clone)]
pub(crate) struct GoError {
    /// Go's full text (`template: NAME:LINE:COL: executing ...`).
    pub(crate) text: String,
    /// The template file the error is in (Go's `ParseName`; the template's
    /// name when there is no tree).
    pub(crate) template: String,
    /// The line and Go's column of the failing node, when there is one.
    pub(crate) at: Option<(usize, usize)>,
}

impl ExecErr {
    fn go(text: String, template: &str, at: Option<(usize, usize)>) -> ExecErr {
        ExecErr::Go(Box::new(GoError {
            text,
            template: template.to_string(),
            at,
        }))
    }
}

type R<T> = Result<T, ExecErr>;

/// Templates visible to one execution: `tpl` layers its own parse on top of
/// the set it was called from (Helm clones the set).
pub(crate) struct Set {
    pub(crate) local: HashMap<String, Rc<Tree>>,
    pub(crate) parent: Option<Rc<Set>>,
}

impl Set {
    fn lookup(&self, engine: &Engine, name: &str) -> Option<Rc<Tree>> {
        if let Some(t) = self.local.get(name) {
            return Some(t.clone());
        }
        match &self.parent {
            Some(p) => p.lookup(engine, name),
            None => engine.templates.get(name).cloned(),
        }
    }
}

/// State shared by every template executed for one `Engine::execute`.
pub(crate) struct Shared<'e> {
    pub(crate) engine: &'e Engine,
    included: RefCell<HashMap<String, usize>>,
    written: Cell<usize>,
    /// The most bytes this execution may write: the per-execution cap, or
    /// what is left of the engine's render budget when that is less.
    pub(crate) limit: usize,
    nesting: Cell<usize>,
    steps: Cell<u64>,
    limit_hit: Cell<bool>,
}

impl<'e> Shared<'e> {
    pub(crate) fn new(engine: &'e Engine, limit: usize) -> Self {
        Shared {
            engine,
            included: RefCell::new(HashMap::default()),
            written: Cell::new(0),
            limit,
            nesting: Cell::new(0),
            steps: Cell::new(0),
            limit_hit: Cell::new(false),
        }
    }

    /// Runs template `name` of `set` with `data` (Go's `ExecuteTemplate`).
    pub(crate) fn execute_named(
        &self,
        set: &Rc<Set>,
        name: &str,
        data: Value,
    ) -> Result<String, ExecErr> {
        let Some(tree) = set.lookup(self.engine, name) else {
            return Err(ExecErr::go(
                format!(
                    "template: no template {} associated with template \"gotpl\"",
                    quote(name)
                ),
                name,
                None,
            ));
        };
        self.execute_tree(set, &tree, data)
    }

    fn execute_tree(&self, set: &Rc<Set>, tree: &Rc<Tree>, data: Value) -> Result<String, ExecErr> {
        let n = self.nesting.get();
        if n >= MAX_NESTING {
            return Err(ExecErr::go(
                format!(
                    "template: {}: exceeded maximum template depth ({})",
                    tree.name, MAX_NESTING
                ),
                &tree.parse_name,
                None,
            ));
        }
        self.nesting.set(n + 1);
        // A file's output is usually about as long as its text; nested
        // templates (includes) are short and start empty.
        let mut out = if n == 0 {
            String::with_capacity(tree.text.len())
        } else {
            String::new()
        };
        let mut st = State {
            sh: self,
            set: set.clone(),
            tree,
            vars: vec![("$".into(), data.clone())],
            cur: Cur::None,
            last_iface: Cell::new(false),
        };
        let dot = Tv {
            v: data,
            iface: false,
        };
        let r = super::stack::grow(RED_ZONE, STACK_SEGMENT, || {
            st.walk_list(&dot, &tree.root, &mut out)
        });
        self.nesting.set(n);
        match r {
            Ok(()) => Ok(out),
            Err(ExecErr::Break) | Err(ExecErr::Continue) => Ok(out),
            Err(e) => Err(e),
        }
    }
}

/// A value with Go's knowledge of whether its static type is `interface {}`
/// (a map element): that decides between "nil pointer evaluating" and an
/// empty result, and what "wrong type" errors print.
#[derive(Clone, Debug)]
struct Tv {
    v: Value,
    iface: bool,
}

impl Tv {
    fn concrete(v: Value) -> Tv {
        Tv { v, iface: false }
    }
}

/// The node Go's state points at, for error messages.
#[derive(Clone, Copy)]
enum Cur<'t> {
    None,
    Arg(&'t Arg),
    Cmd(&'t Command),
    Pipe(&'t Pipe),
    Node(&'t BodyNode),
    Tmpl(&'t TemplateCall),
}

impl<'t> Cur<'t> {
    fn pos_ctx(&self) -> Option<(usize, String)> {
        match self {
            Cur::None => None,
            Cur::Arg(a) => Some((a.pos(), a.to_string())),
            Cur::Cmd(c) => Some((c.pos as usize, c.to_string())),
            Cur::Pipe(p) => Some((p.pos as usize, p.to_string())),
            Cur::Node(n) => Some((node_pos(n), n.to_string())),
            Cur::Tmpl(t) => Some((t.pos as usize, t.to_string())),
        }
    }
}

fn node_pos(n: &BodyNode) -> usize {
    match n {
        BodyNode::Action(a) => a.pos as usize,
        BodyNode::If(c) | BodyNode::With(c) | BodyNode::Range(c) => c.pos as usize,
        BodyNode::Template(t) => t.pos as usize,
        _ => 0,
    }
}

struct State<'s, 'e, 't> {
    sh: &'s Shared<'e>,
    set: Rc<Set>,
    tree: &'t Tree,
    vars: Vec<(Name, Value)>,
    cur: Cur<'t>,
    /// Whether the last argument checked was a typed nil (`interface {}`),
    /// which Go's reflect-based builtins (`len`) treat unlike an invalid value.
    last_iface: Cell<bool>,
}

fn go_float_text(v: &Value) -> String {
    super::gofmt::format_v(v)
}

impl<'s, 'e, 't> State<'s, 'e, 't> {
    fn errorf<T>(&self, msg: impl AsRef<str>) -> R<T> {
        let name = &self.tree.name;
        let (text, at) = match self.cur.pos_ctx() {
            None => (format!("template: {}: {}", name, msg.as_ref()), None),
            Some((pos, ctx)) => (
                format!(
                    "template: {}: executing {} at <{}>: {}",
                    self.tree.location(pos),
                    quote(name),
                    ctx,
                    msg.as_ref()
                ),
                Some(self.tree.position(pos)),
            ),
        };
        Err(ExecErr::go(text, &self.tree.parse_name, at))
    }

    fn write(&self, out: &mut String, s: &str) -> R<()> {
        let total = self.sh.written.get() + s.len();
        let max = self.sh.limit;
        if total > max {
            self.sh.limit_hit.set(true);
            return Err(ExecErr::Limit(max));
        }
        self.sh.written.set(total);
        if out.capacity() - out.len() < s.len() {
            // Grow by doubling, but never past the limit: a buffer near the
            // limit must not double to twice its size.
            let need = out.len() + s.len();
            let want = out.capacity().saturating_mul(2).clamp(need, need.max(max));
            out.reserve_exact(want - out.len());
        }
        out.push_str(s);
        Ok(())
    }

    fn walk_list(&mut self, dot: &Tv, list: &'t List, out: &mut String) -> R<()> {
        for n in &list.nodes {
            self.walk(dot, n, out)?;
        }
        Ok(())
    }

    fn walk(&mut self, dot: &Tv, node: &'t BodyNode, out: &mut String) -> R<()> {
        self.cur = Cur::Node(node);
        let steps = self.sh.steps.get() + 1;
        self.sh.steps.set(steps);
        if steps > MAX_STEPS {
            return self.errorf(format!("execution exceeded {MAX_STEPS} steps"));
        }
        match node {
            BodyNode::Text(t) => self.write(out, t),
            BodyNode::Action(a) => {
                let v = self.eval_pipeline(dot, &a.pipe)?;
                if a.pipe.decl.is_empty() {
                    self.cur = Cur::Node(node);
                    match &v {
                        Value::Nil => self.write(out, "<no value>")?,
                        // A string prints as itself: no formatted copy.
                        Value::Str(s) => self.write(out, s)?,
                        other => self.write(out, &other.to_string())?,
                    }
                }
                Ok(())
            }
            BodyNode::If(c) | BodyNode::With(c) => {
                let mark = self.vars.len();
                let r = super::stack::grow(RED_ZONE, STACK_SEGMENT, || {
                    let v = self.eval_pipeline(dot, &c.pipe)?;
                    if v.is_truthy() {
                        if matches!(node, BodyNode::With(_)) {
                            self.walk_list(&Tv::concrete(v), &c.list, out)
                        } else {
                            self.walk_list(dot, &c.list, out)
                        }
                    } else if let Some(e) = &c.else_list {
                        self.walk_list(dot, e, out)
                    } else {
                        Ok(())
                    }
                });
                self.vars.truncate(mark);
                r
            }
            BodyNode::Range(c) => {
                let mark = self.vars.len();
                let r = super::stack::grow(RED_ZONE, STACK_SEGMENT, || {
                    self.walk_range(dot, node, c, out)
                });
                self.vars.truncate(mark);
                r
            }
            BodyNode::Template(t) => self.walk_template(t, dot, out),
            BodyNode::Break => Err(ExecErr::Break),
            BodyNode::Continue => Err(ExecErr::Continue),
        }
    }

    fn walk_range(
        &mut self,
        dot: &Tv,
        node: &'t BodyNode,
        c: &'t super::ast::Control,
        out: &mut String,
    ) -> R<()> {
        self.cur = Cur::Node(node);
        let val = self.eval_pipeline(dot, &c.pipe)?;
        let mark = self.vars.len();
        let items: Vec<(Value, Value, bool)> = match &val {
            Value::List(l, kind) => l
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    (
                        Value::Int(i as i64),
                        v.clone(),
                        *kind == ListKind::Interface,
                    )
                })
                .collect(),
            Value::Bytes(b) => b
                .iter()
                .enumerate()
                .map(|(i, v)| (Value::Int(i as i64), Value::Int(*v as i64), false))
                .collect(),
            Value::Map(m, kind) => m
                .borrow()
                .iter()
                .map(|(k, v)| (Value::str(k.as_str()), v.clone(), *kind != MapKind::String))
                .collect(),
            Value::Nil => Vec::new(),
            Value::Object(o) => match object_entries(o.as_ref()) {
                Some(e) => e.into_iter().map(|(k, v)| (k, v, false)).collect(),
                None => {
                    return self.errorf(format!("range can't iterate over {}", go_float_text(&val)))
                }
            },
            other => {
                return self.errorf(format!("range can't iterate over {}", go_float_text(other)))
            }
        };
        if items.is_empty() {
            if let Some(e) = &c.else_list {
                return self.walk_list(dot, e, out);
            }
            return Ok(());
        }
        let decl = &c.pipe.decl;
        for (idx, elem, iface) in items {
            if !decl.is_empty() {
                if c.pipe.is_assign {
                    if decl.len() > 1 {
                        self.set_var(&decl[0], idx.clone())?;
                    } else {
                        self.set_var(&decl[0], elem.clone())?;
                    }
                } else {
                    let n = self.vars.len();
                    self.vars[n - 1].1 = elem.clone();
                }
            }
            if decl.len() > 1 {
                if c.pipe.is_assign {
                    self.set_var(&decl[1], elem.clone())?;
                } else {
                    let n = self.vars.len();
                    self.vars[n - 2].1 = idx.clone();
                }
            }
            let r = self.walk_list(&Tv { v: elem, iface }, &c.list, out);
            self.vars.truncate(mark);
            match r {
                Ok(()) | Err(ExecErr::Continue) => {}
                Err(ExecErr::Break) => break,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn walk_template(&mut self, t: &'t TemplateCall, dot: &Tv, out: &mut String) -> R<()> {
        self.cur = Cur::Tmpl(t);
        let Some(tree) = self.set.lookup(self.sh.engine, &t.name) else {
            return self.errorf(format!("template {} not defined", quote(&t.name)));
        };
        if self.sh.nesting.get() >= MAX_NESTING {
            return self.errorf(format!("exceeded maximum template depth ({MAX_NESTING})"));
        }
        let data = match &t.pipe {
            Some(p) => self.eval_pipeline(dot, p)?,
            None => Value::Nil,
        };
        let _ = dot;
        let s = self.sh.execute_tree(&self.set, &tree, data)?;
        self.write_nested(out, s)
    }

    fn write_nested(&self, out: &mut String, s: String) -> R<()> {
        // Already counted when written into the nested buffer.
        if out.is_empty() {
            *out = s;
        } else {
            out.push_str(&s);
        }
        Ok(())
    }

    fn set_var(&mut self, name: &str, v: Value) -> R<()> {
        for (n, val) in self.vars.iter_mut().rev() {
            if **n == *name {
                *val = v;
                return Ok(());
            }
        }
        self.errorf(format!("undefined variable: {name}"))
    }

    fn var_value(&self, name: &str) -> R<Value> {
        for (n, val) in self.vars.iter().rev() {
            if **n == *name {
                return Ok(val.clone());
            }
        }
        self.errorf(format!("undefined variable: {name}"))
    }

    fn eval_pipeline(&mut self, dot: &Tv, pipe: &'t Pipe) -> R<Value> {
        self.cur = Cur::Pipe(pipe);
        let mut value: Option<Value> = None;
        for cmd in &pipe.cmds {
            let v = super::stack::grow(RED_ZONE, STACK_SEGMENT, || {
                self.eval_command(dot, cmd, value.take())
            })?;
            value = Some(v.v);
        }
        let value = value.unwrap_or_default();
        for name in &pipe.decl {
            if pipe.is_assign {
                self.set_var(name, value.clone())?;
            } else {
                self.vars.push((name.clone(), value.clone()));
            }
        }
        Ok(value)
    }

    fn not_a_function(&self, args: &'t [Arg], fin: &Option<Value>) -> R<()> {
        if args.len() > 1 || fin.is_some() {
            return self.errorf(format!("can't give argument to non-function {}", args[0]));
        }
        Ok(())
    }

    fn eval_command(&mut self, dot: &Tv, cmd: &'t Command, fin: Option<Value>) -> R<Tv> {
        let first = &cmd.args[0];
        match first {
            Arg::Field(_, idents) => {
                self.cur = Cur::Arg(first);
                return self.eval_field_chain(dot, dot.clone(), first, idents, &cmd.args, fin);
            }
            Arg::Chain(..) => return self.eval_chain(dot, first, &cmd.args, fin),
            Arg::Identifier(_, name) => {
                return self.eval_function(dot, first, name, Cur::Cmd(cmd), &cmd.args, fin);
            }
            Arg::Pipe(p) => {
                self.not_a_function(&cmd.args, &fin)?;
                return self.eval_pipeline(dot, p).map(Tv::concrete);
            }
            Arg::Variable(..) => return self.eval_variable(dot, first, &cmd.args, fin),
            _ => {}
        }
        self.cur = Cur::Arg(first);
        self.not_a_function(&cmd.args, &fin)?;
        match first {
            Arg::Bool(_, b) => Ok(Tv::concrete(Value::Bool(*b))),
            Arg::Dot(_) => Ok(dot.clone()),
            Arg::Nil(_) => self.errorf("nil is not a command"),
            Arg::Number(_, n) => self.ideal_constant(first, n).map(Tv::concrete),
            Arg::String(_, s) => Ok(Tv::concrete(Value::str(&*s.value))),
            _ => self.errorf(format!(
                "can't evaluate command {}",
                quote(&first.to_string())
            )),
        }
    }

    fn ideal_constant(&mut self, node: &'t Arg, n: &Number) -> R<Value> {
        self.cur = Cur::Arg(node);
        let t = &n.text;
        let is_hex_int = t.len() > 2
            && t.starts_with('0')
            && (t.as_bytes()[1] == b'x' || t.as_bytes()[1] == b'X')
            && !t.contains(['p', 'P']);
        let is_rune = t.starts_with('\'');
        if n.is_complex {
            return Ok(Value::Object(Rc::new(GoComplex(n.complex.0, n.complex.1))));
        }
        if n.is_float && !is_hex_int && !is_rune && t.contains(['.', 'e', 'E', 'p', 'P']) {
            return Ok(Value::Float(n.float));
        }
        if n.is_int {
            return Ok(Value::Int(n.int));
        }
        if n.is_uint {
            return self.errorf(format!("{t} overflows int"));
        }
        Ok(Value::Nil)
    }

    fn eval_chain(
        &mut self,
        dot: &Tv,
        chain: &'t Arg,
        args: &'t [Arg],
        fin: Option<Value>,
    ) -> R<Tv> {
        self.cur = Cur::Arg(chain);
        let Arg::Chain(_, c) = chain else {
            return self.errorf("internal error: not a chain");
        };
        let (inner, fields) = (&c.node, &c.fields);
        if let Arg::Nil(_) = inner {
            return self.errorf(format!("indirection through explicit nil in {chain}"));
        }
        let recv = self.eval_arg_untyped(dot, inner)?;
        self.eval_field_chain(dot, recv, chain, fields, args, fin)
    }

    fn eval_variable(
        &mut self,
        dot: &Tv,
        var: &'t Arg,
        args: &'t [Arg],
        fin: Option<Value>,
    ) -> R<Tv> {
        self.cur = Cur::Arg(var);
        let Arg::Variable(_, idents) = var else {
            return self.errorf("internal error: not a variable");
        };
        let Some((head, fields)) = idents.split_first() else {
            return self.errorf("internal error: empty variable");
        };
        // The lexer ends a variable's name before a dot, so `head` is
        // normally the bare `$name`; a dotted one is split here.
        let mut parts = head.split('.');
        let first = parts.next().unwrap_or("");
        let value = self.var_value(first)?;
        let dotted: Vec<Name> = parts.map(Name::from).collect();
        let names: std::borrow::Cow<'_, [Name]> = if dotted.is_empty() {
            std::borrow::Cow::Borrowed(fields)
        } else {
            std::borrow::Cow::Owned(dotted.into_iter().chain(fields.iter().cloned()).collect())
        };
        if names.is_empty() {
            self.not_a_function(args, &fin)?;
            return Ok(Tv::concrete(value));
        }
        self.eval_field_chain(dot, Tv::concrete(value), var, &names, args, fin)
    }

    fn eval_field_chain(
        &mut self,
        dot: &Tv,
        mut recv: Tv,
        node: &'t Arg,
        idents: &[Name],
        args: &'t [Arg],
        fin: Option<Value>,
    ) -> R<Tv> {
        let n = idents.len();
        for id in &idents[..n - 1] {
            recv = self.eval_field(dot, id, node, &[], None, recv)?;
        }
        self.eval_field(dot, &idents[n - 1], node, args, fin, recv)
    }

    fn eval_field(
        &mut self,
        dot: &Tv,
        name: &str,
        node: &'t Arg,
        args: &'t [Arg],
        fin: Option<Value>,
        recv: Tv,
    ) -> R<Tv> {
        let strict = self.sh.engine.options.strict;
        // Only the errors name the receiver's type.
        let typ = || {
            if recv.iface {
                "interface {}".to_string()
            } else {
                recv.v.type_name()
            }
        };
        let has_args = args.len() > 1 || fin.is_some();
        match &recv.v {
            Value::Nil => {
                if !recv.iface {
                    if strict {
                        return self.errorf(format!("nil data; no entry for key {}", quote(name)));
                    }
                    return Ok(Tv::concrete(Value::Nil));
                }
                self.errorf(format!("nil pointer evaluating interface {{}}.{name}"))
            }
            Value::Map(m, kind) => {
                if *kind == MapKind::Values && matches!(name, "YAML" | "AsMap" | "Table" | "Encode")
                {
                    return self.values_method(dot, name, node, args, fin, &recv.v);
                }
                if has_args {
                    return self.errorf(format!("{name} is not a method but has arguments"));
                }
                let got = m.borrow().get(name).cloned();
                match got {
                    Some(v) => Ok(Tv {
                        v,
                        iface: *kind != MapKind::String,
                    }),
                    None => {
                        if strict {
                            return self
                                .errorf(format!("map has no entry for key {}", quote(name)));
                        }
                        if *kind == MapKind::String {
                            Ok(Tv::concrete(Value::str("")))
                        } else {
                            Ok(Tv {
                                v: Value::Nil,
                                iface: true,
                            })
                        }
                    }
                }
            }
            Value::Object(o) => {
                let o = o.clone();
                if let Some((params, variadic)) = o.method_params(name) {
                    let spec = Callee::Method(o.clone(), params, variadic);
                    return self.eval_call(dot, spec, Cur::Arg(node), name, args, fin);
                }
                if has_args {
                    if o.field(name).is_some() && o.call(name, &[]).is_none() {
                        return self.errorf(format!(
                            "{name} has arguments but cannot be invoked as function"
                        ));
                    }
                    let spec = Callee::Method(o.clone(), &[], Some(Param::Any));
                    return self.eval_call(dot, spec, Cur::Arg(node), name, args, fin);
                }
                if let Some(v) = o.field(name) {
                    return Ok(Tv::concrete(v));
                }
                match o.call(name, &[]) {
                    Some(Ok(v)) => Ok(Tv {
                        iface: matches!(v, Value::Nil),
                        v,
                    }),
                    Some(Err(FuncError::Msg(e) | FuncError::Fail(e))) => {
                        self.cur = Cur::Arg(node);
                        self.errorf(format!("error calling {name}: {e}"))
                    }
                    None => self.errorf(format!("can't evaluate field {name} in type {}", typ())),
                }
            }
            _ => self.errorf(format!("can't evaluate field {name} in type {}", typ())),
        }
    }

    fn values_method(
        &mut self,
        dot: &Tv,
        name: &str,
        node: &'t Arg,
        args: &'t [Arg],
        fin: Option<Value>,
        recv: &Value,
    ) -> R<Tv> {
        let nargs = args.len().saturating_sub(1) + usize::from(fin.is_some());
        let want = if matches!(name, "Table" | "Encode") {
            1
        } else {
            0
        };
        if nargs != want {
            return self.errorf(format!(
                "wrong number of args for {name}: want {want} got {nargs}"
            ));
        }
        let Value::Map(m, _) = recv else {
            return self.errorf("internal error: not a map");
        };
        match name {
            "AsMap" => Ok(Tv::concrete(Value::Map(m.clone(), MapKind::Interface))),
            "YAML" => {
                let plain = Value::Map(m.clone(), MapKind::Interface);
                let Some(spec) = self.sh.engine.registry.get("toYaml").cloned() else {
                    self.cur = Cur::Arg(node);
                    return self.errorf("error calling YAML: toYaml is not available");
                };
                let mut ctx = Ctx {
                    sh: self.sh,
                    set: self.set.clone(),
                };
                match (spec.f)(&mut ctx, &[plain]) {
                    Ok(Value::Str(s)) => Ok(Tv::concrete(Value::str(format!("{s}\n")))),
                    Ok(other) => Ok(Tv::concrete(other)),
                    Err(FuncError::Msg(e)) | Err(FuncError::Fail(e)) => {
                        self.cur = Cur::Arg(node);
                        self.errorf(format!("error calling YAML: {e}"))
                    }
                }
            }
            "Table" => {
                let arg = match args.get(1) {
                    Some(a) => self.eval_arg(dot, Param::String, a)?,
                    None => self.validate(Tv::concrete(fin.unwrap_or_default()), Param::String)?,
                };
                let path = match &arg {
                    Value::Str(s) => s.to_string(),
                    _ => String::new(),
                };
                let mut cur = Value::Map(m.clone(), MapKind::Values);
                for part in path.split('.') {
                    let next = match &cur {
                        Value::Map(mm, _) => mm.borrow().get(part).cloned(),
                        _ => None,
                    };
                    match next {
                        Some(Value::Map(mm, _)) => cur = Value::Map(mm, MapKind::Values),
                        _ => {
                            self.cur = Cur::Arg(node);
                            return self.errorf(format!(
                                "error calling Table: {} is not a table",
                                quote(&path)
                            ));
                        }
                    }
                }
                Ok(Tv::concrete(cur))
            }
            _ => {
                let v = match args.get(1) {
                    Some(a) => self.eval_arg(dot, Param::Any, a)?,
                    None => fin.unwrap_or_default(),
                };
                let got = if matches!(v, Value::Nil) {
                    "interface {}".to_string()
                } else {
                    v.type_name()
                };
                self.errorf(format!(
                    "wrong type for value; expected io.Writer; got {got}"
                ))
            }
        }
    }

    fn eval_function(
        &mut self,
        dot: &Tv,
        ident: &'t Arg,
        name: &str,
        err_node: Cur<'t>,
        args: &'t [Arg],
        fin: Option<Value>,
    ) -> R<Tv> {
        self.cur = Cur::Arg(ident);
        let Some(spec) = self.sh.engine.registry.get(name).cloned() else {
            return self.errorf(format!("{} is not a defined function", quote(name)));
        };
        let builtin = self.sh.engine.registry.is_builtin(name);
        self.eval_call(dot, Callee::Func(spec, builtin), err_node, name, args, fin)
    }

    fn eval_call(
        &mut self,
        dot: &Tv,
        callee: Callee,
        err_node: Cur<'t>,
        name: &str,
        args: &'t [Arg],
        fin: Option<Value>,
    ) -> R<Tv> {
        let args = if args.is_empty() { args } else { &args[1..] };
        let (params, variadic) = match &callee {
            Callee::Func(s, _) => (s.params, s.variadic),
            Callee::Method(_, p, v) => (*p, *v),
        };
        let num_in = args.len() + usize::from(fin.is_some());
        let num_fixed = params.len();
        if variadic.is_some() {
            if num_in < num_fixed {
                return self.errorf(format!(
                    "wrong number of args for {name}: want at least {num_fixed} got {}",
                    args.len()
                ));
            }
        } else if num_in != num_fixed {
            return self.errorf(format!(
                "wrong number of args for {name}: want {num_fixed} got {num_in}"
            ));
        }
        let builtin = matches!(&callee, Callee::Func(_, true));
        if builtin && (name == "and" || name == "or") {
            let mut v = Value::Nil;
            for a in args {
                v = self.eval_arg(dot, Param::Any, a)?;
                if v.is_truthy() == (name == "or") {
                    return Ok(Tv::concrete(v));
                }
            }
            if let Some(f) = fin {
                v = f;
            }
            return Ok(Tv::concrete(v));
        }
        self.last_iface.set(false);
        let mut argv = Vec::with_capacity(num_in);
        let mut i = 0;
        while i < num_fixed && i < args.len() {
            argv.push(self.eval_arg(dot, params[i], &args[i])?);
            i += 1;
        }
        if let Some(vp) = variadic {
            while i < args.len() {
                argv.push(self.eval_arg(dot, vp, &args[i])?);
                i += 1;
            }
        }
        if let Some(f) = fin {
            let t = match variadic {
                Some(vp) => {
                    if num_in - 1 < num_fixed {
                        params[num_in - 1]
                    } else {
                        vp
                    }
                }
                None => params[params.len() - 1],
            };
            argv.push(self.validate(Tv::concrete(f), t)?);
        }
        if builtin
            && name == "len"
            && argv.first().is_some_and(Value::is_nil)
            && !self.last_iface.get()
        {
            self.cur = err_node;
            return self
                .errorf("error calling len: reflect: call of reflect.Value.Type on zero Value");
        }
        if builtin && name == "call" {
            let callee_name = args.first().map(|a| a.to_string()).unwrap_or_default();
            let msg = match argv.first() {
                None | Some(Value::Nil) => "call of nil".to_string(),
                Some(v) => format!("non-function {callee_name} of type {}", v.type_name()),
            };
            self.cur = err_node;
            return self.errorf(format!("error calling call: {msg}"));
        }
        let result = match &callee {
            Callee::Func(spec, _) => {
                let mut ctx = Ctx {
                    sh: self.sh,
                    set: self.set.clone(),
                };
                (spec.f)(&mut ctx, &argv)
            }
            Callee::Method(o, _, _) => match o.call(name, &argv) {
                Some(r) => r,
                None => {
                    return self.errorf(format!(
                        "can't evaluate field {name} in type {}",
                        o.type_name()
                    ));
                }
            },
        };
        // The value cap, for every function: those that can grow a value
        // much beyond their arguments check before allocating (check_size).
        let max = self.sh.engine.options.max_output_bytes;
        let result = match result {
            Ok(Value::Str(s)) if s.len() > max => Err(too_large(s.len() as u128, max)),
            Ok(Value::Bytes(b)) if b.len() > max => Err(too_large(b.len() as u128, max)),
            other => other,
        };
        match result {
            Ok(v) => Ok(Tv {
                iface: matches!(v, Value::Nil),
                v,
            }),
            Err(_) if self.sh.limit_hit.get() => {
                // The output limit stops everything, even inside include/tpl.
                Err(ExecErr::Limit(self.sh.limit))
            }
            Err(e) => {
                self.cur = err_node;
                let msg = match e {
                    FuncError::Msg(m) => m,
                    FuncError::Fail(m) => format!("HELM_ERR_START{m}HELM_ERR_END"),
                };
                self.errorf(format!("error calling {name}: {msg}"))
            }
        }
    }

    /// Go's `evalArg(dot, nil, n)`: any value, nil allowed.
    fn eval_arg_untyped(&mut self, dot: &Tv, n: &'t Arg) -> R<Tv> {
        self.cur = Cur::Arg(n);
        match n {
            Arg::Dot(_) => Ok(dot.clone()),
            Arg::Field(_, idents) => {
                self.eval_field_chain(dot, dot.clone(), n, idents, std::slice::from_ref(n), None)
            }
            Arg::Variable(..) => self.eval_variable(dot, n, &[], None),
            Arg::Pipe(p) => self.eval_pipeline(dot, p).map(Tv::concrete),
            Arg::Identifier(_, name) => self.eval_function(dot, n, name, Cur::Arg(n), &[], None),
            Arg::Chain(..) => self.eval_chain(dot, n, &[], None),
            Arg::Number(_, num) => self.ideal_constant(n, num).map(Tv::concrete),
            Arg::String(_, s) => Ok(Tv::concrete(Value::str(&*s.value))),
            Arg::Bool(_, b) => Ok(Tv::concrete(Value::Bool(*b))),
            Arg::Nil(_) => Ok(Tv::concrete(Value::Nil)),
        }
    }

    fn eval_arg(&mut self, dot: &Tv, param: Param, n: &'t Arg) -> R<Value> {
        self.cur = Cur::Arg(n);
        match n {
            Arg::Dot(_) => return self.validate(dot.clone(), param),
            Arg::Nil(_) => {
                if param.can_be_nil() {
                    return Ok(Value::Nil);
                }
                return self.errorf(format!("cannot assign nil to {}", param.go_type()));
            }
            Arg::Field(_, idents) => {
                let v = self.eval_field_chain(
                    dot,
                    dot.clone(),
                    n,
                    idents,
                    std::slice::from_ref(n),
                    None,
                )?;
                return self.validate(v, param);
            }
            Arg::Variable(..) => {
                let v = self.eval_variable(dot, n, &[], None)?;
                return self.validate(v, param);
            }
            Arg::Pipe(p) => {
                let v = self.eval_pipeline(dot, p)?;
                return self.validate(Tv::concrete(v), param);
            }
            Arg::Identifier(_, name) => {
                let v = self.eval_function(dot, n, name, Cur::Arg(n), &[], None)?;
                return self.validate(v, param);
            }
            Arg::Chain(..) => {
                let v = self.eval_chain(dot, n, &[], None)?;
                return self.validate(v, param);
            }
            _ => {}
        }
        match param {
            Param::Bool => match n {
                Arg::Bool(_, b) => Ok(Value::Bool(*b)),
                _ => self.errorf(format!("expected bool; found {n}")),
            },
            Param::Float64 => match n {
                Arg::Number(_, num) if num.is_float => Ok(Value::Float(num.float)),
                _ => self.errorf(format!("expected float; found {n}")),
            },
            Param::Int | Param::Int64 => match n {
                Arg::Number(_, num) if num.is_int => Ok(if param == Param::Int {
                    Value::Int(num.int)
                } else {
                    Value::Int64(num.int)
                }),
                _ => self.errorf(format!("expected integer; found {n}")),
            },
            Param::String => match n {
                Arg::String(_, s) => Ok(Value::str(&*s.value)),
                _ => self.errorf(format!("expected string; found {n}")),
            },
            Param::Any => match n {
                Arg::Bool(_, b) => Ok(Value::Bool(*b)),
                Arg::Number(_, num) => self.ideal_constant(n, num),
                Arg::String(_, s) => Ok(Value::str(&*s.value)),
                _ => self.errorf(format!(
                    "can't handle assignment of {n} to empty interface argument"
                )),
            },
            Param::List | Param::Map | Param::StringList => self.errorf(format!(
                "can't handle {n} for arg of type {}",
                param.go_type()
            )),
        }
    }

    fn validate(&self, tv: Tv, param: Param) -> R<Value> {
        self.last_iface.set(tv.iface);
        if let Value::Nil = tv.v {
            if param == Param::Any {
                return Ok(Value::Nil);
            }
            if tv.iface {
                return self.errorf(format!(
                    "wrong type for value; expected {}; got interface {{}}",
                    param.go_type()
                ));
            }
            if param.can_be_nil() {
                return Ok(Value::Nil);
            }
            return self.errorf(format!("invalid value; expected {}", param.go_type()));
        }
        if param.accepts(&tv.v) {
            return Ok(tv.v);
        }
        self.errorf(format!(
            "wrong type for value; expected {}; got {}",
            param.go_type(),
            tv.v.type_name()
        ))
    }
}

/// The Go map or slice behind a map-like object (`.Files`, a glob result):
/// its own entries, or the view it gives `toJson`.
pub(crate) fn object_entries(o: &dyn GoObject) -> Option<Vec<(Value, Value)>> {
    if let Some(e) = o.entries() {
        return Some(e);
    }
    match o.to_json_value() {
        Value::Map(m, _) => Some(
            m.borrow()
                .iter()
                .map(|(k, v)| (Value::str(k.as_str()), v.clone()))
                .collect(),
        ),
        Value::List(l, _) => Some(
            l.iter()
                .enumerate()
                .map(|(i, v)| (Value::Int(i as i64), v.clone()))
                .collect(),
        ),
        _ => None,
    }
}

/// A Go `complex128` constant (only printable: no function takes one).
#[derive(Debug)]
struct GoComplex(f64, f64);

impl GoObject for GoComplex {
    fn type_name(&self) -> &str {
        "complex128"
    }
    fn field(&self, _name: &str) -> Option<Value> {
        None
    }
    fn fmt_go(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let re = crate::gostd::float::format_go_float(self.0);
        let im = crate::gostd::float::format_go_float(self.1);
        let sign = if im.starts_with(['-', '+']) { "" } else { "+" };
        write!(f, "({re}{sign}{im}i)")
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

enum Callee {
    Func(FuncSpec, bool),
    Method(Rc<dyn GoObject>, &'static [Param], Option<Param>),
}

/// What functions see of the engine while they run.
pub(crate) struct Ctx<'s, 'e> {
    pub(crate) sh: &'s Shared<'e>,
    pub(crate) set: Rc<Set>,
}

fn go_err(e: ExecErr) -> FuncError {
    match e {
        ExecErr::Go(e) => FuncError::Msg(e.text),
        ExecErr::Limit(n) => FuncError::Msg(format!("output limit of {n} bytes exceeded")),
        ExecErr::Break | ExecErr::Continue => {
            FuncError::Msg("break or continue outside range".into())
        }
    }
}

impl CallContext for Ctx<'_, '_> {
    fn include(&mut self, name: &str, data: Value) -> FuncResult {
        let max = self.sh.engine.options.max_include_depth;
        {
            let mut inc = self.sh.included.borrow_mut();
            match inc.get_mut(name) {
                Some(v) => {
                    if *v > max {
                        return Err(FuncError::Msg(format!(
                            "rendering template has a nested reference name: {name}: unable to execute template"
                        )));
                    }
                    *v += 1;
                }
                None => {
                    inc.insert(name.to_string(), 1);
                }
            }
        }
        let r = self.sh.execute_named(&self.set, name, data);
        if let Some(v) = self.sh.included.borrow_mut().get_mut(name) {
            *v = v.saturating_sub(1);
        }
        match r {
            Ok(s) => Ok(Value::str(s)),
            Err(e @ ExecErr::Limit(_)) => Err(go_err(e)),
            Err(e) => Err(go_err(e)),
        }
    }

    fn tpl(&mut self, text: &str, data: Value) -> FuncResult {
        let trees = match self.sh.engine.parse_tpl(text) {
            Ok(t) => t,
            Err(e) => {
                return Err(FuncError::Msg(format!(
                    "cannot parse template {}: {}",
                    quote(text),
                    e.go_text()
                )))
            }
        };
        let mut local = HashMap::default();
        for t in trees.iter() {
            if super::ast::is_empty_list(&t.root) && t.name != "gotpl" {
                if let Some(old) = self.set.lookup(self.sh.engine, &t.name) {
                    if !super::ast::is_empty_list(&old.root) {
                        continue;
                    }
                }
            }
            local.insert(t.name.clone(), t.clone());
        }
        let set = Rc::new(Set {
            local,
            parent: Some(self.set.clone()),
        });
        match self.sh.execute_named(&set, "gotpl", data) {
            Ok(s) => Ok(Value::str(s.replace("<no value>", ""))),
            Err(ExecErr::Go(e)) => Err(FuncError::Msg(format!(
                "error during tpl function execution for {}: {}",
                quote(text),
                e.text
            ))),
            Err(e) => Err(go_err(e)),
        }
    }

    fn lookup(&mut self, api_version: &str, kind: &str, namespace: &str, name: &str) -> FuncResult {
        match &self.sh.engine.lookup {
            Some(f) => {
                f(api_version, kind, namespace, name).map_err(|e| FuncError::Msg(e.to_string()))
            }
            None => Ok(Value::empty_map()),
        }
    }

    fn network_enabled(&self) -> bool {
        self.sh.engine.options.enable_dns
    }

    fn max_value_bytes(&self) -> usize {
        self.sh.engine.options.max_output_bytes
    }

    fn lint_mode(&self) -> bool {
        self.sh.engine.options.lint_mode
    }

    fn log(&mut self, line: String) {
        self.sh.engine.log_line(line);
    }
}
