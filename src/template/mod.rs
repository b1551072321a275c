//! The Go `text/template` engine as Helm v3.17.2 uses it, with Sprig and
//! Helm's own functions.
//!
//! Layout: [`lexer`] -> [`parse`] (into [`ast`]) -> `exec`; values in
//! [`value`], Go's `fmt` in [`gofmt`], functions by family under [`funcs`].
//! [`Engine`] is Helm's template set: every chart file is parsed into it
//! (defines are shared), then each file is executed with its data, and the
//! errors read exactly as Helm prints them.
mod ahead;
pub mod ast;
pub(crate) mod exec;
pub mod funcs;
pub mod gofmt;
pub mod lexer;
pub mod parse;
use crate::stack;
pub mod value;

pub use ast::Source;
pub use value::{GoObject, ListKind, MapKind, Value};

/// The bytes Go would write for a rendered string.
///
/// Go strings may hold invalid UTF-8 (for instance `b64dec` of random bytes);
/// rudder keeps such a stray byte `b` inside its Rust strings as the
/// private-use character U+10FF00+`b`. Everything that writes rendered output
/// as bytes (manifest files, stdout, byte-for-byte comparisons) must go
/// through this function so those bytes come out raw, exactly as Helm writes
/// them. (JSON, as in release records, is different: Go's `encoding/json`
/// writes each invalid byte as U+FFFD.) Strings without stray bytes are
/// returned borrowed, unchanged.
pub fn output_bytes(s: &str) -> std::borrow::Cow<'_, [u8]> {
    funcs::util::go_bytes(s)
}

use ast::Tree;
use foldhash::HashMap;
use std::cell::RefCell;
use std::rc::Rc;

/// How the engine runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineOptions {
    /// `missingkey=error` (Helm's `Engine.Strict`, as `helm lint --strict`).
    pub strict: bool,
    /// The most bytes one execution may write (all nested templates included).
    pub max_output_bytes: usize,
    /// How many nested `include` calls of one name are allowed (Helm: 1000).
    pub max_include_depth: usize,
    /// Whether `getHostByName` may query DNS (`--enable-dns`).
    pub enable_dns: bool,
    /// Helm's `LintMode` (`helm lint`): `required` and `fail` do not stop
    /// the render; they log an `[INFO]` line (see [`Engine::take_log`]) and
    /// yield an empty string.
    pub lint_mode: bool,
    /// The most bytes all executions together may write, a render's output
    /// budget (since [`Engine::reset_render_budget`]). Default
    /// [`RENDER_BUDGET_BYTES`].
    pub max_render_bytes: usize,
}

/// A render's output budget, all templates together: 64 MiB. Helm has no
/// such limit (only rudder's per-execution cap stops one template), so 12
/// templates of 90 MB each take Helm 9 GB. No real chart comes near it:
/// Helm stores a release's whole manifest, gzipped, in one Secret of at
/// most 1 MiB, and the largest common charts render a few MiB. A render that
/// crosses it stops in the template that crossed it, with peak memory a
/// small multiple of the budget.
pub const RENDER_BUDGET_BYTES: usize = 64 * 1024 * 1024;

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            strict: false,
            max_output_bytes: 100 * 1024 * 1024,
            max_include_depth: 1000,
            enable_dns: false,
            lint_mode: false,
            max_render_bytes: RENDER_BUDGET_BYTES,
        }
    }
}

/// A template error: the template file it is in, where in it, and what
/// went wrong. `Display` is exactly what Helm prints after `Error: `.
///
/// ```
/// use rudder::template::{Engine, TemplateErrorKind, Value};
///
/// let mut engine = Engine::default();
/// engine.add_template("web/templates/cm.yaml", "a: 1\nb: {{ required \"b is required\" .b }}\n")?;
/// let err = engine.execute("web/templates/cm.yaml", &Value::empty_map()).unwrap_err();
/// assert_eq!(err.kind, TemplateErrorKind::Exec);
/// assert_eq!(err.template, "web/templates/cm.yaml");
/// assert_eq!((err.line, err.column), (Some(2), Some(6)));
/// assert_eq!(
///     err.to_string(),
///     "execution error at (web/templates/cm.yaml:2:6): b is required"
/// );
/// # Ok::<(), rudder::template::TemplateError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TemplateError {
    /// What failed.
    pub kind: TemplateErrorKind,
    /// The template file the error is in, as Go names it: the file a
    /// failing node was parsed from (a chart's `web/templates/x.yaml`, or
    /// `web/templates/_helpers.tpl` for a failing `define`), or the name
    /// that was asked for when there is no such template.
    pub template: String,
    /// The 1-based line of the error in `template`, as Go counts it (Go's
    /// lexer does not count newlines inside comments); `None` when the
    /// error has no place in the text (no such template, the output limit).
    pub line: Option<usize>,
    /// The column of the error in its line: the byte offset from the
    /// line's start, from 0, the number Go prints after the line in
    /// execution errors (`NAME:LINE:COL`). For a parse error, where Go
    /// prints no column, it is where the parser stopped (an unclosed
    /// action stops at the end of the text). `None` when
    /// `line` is.
    pub column: Option<usize>,
    /// Go's own text of the error (`template: NAME:LINE: MSG`), which
    /// plain `text/template` users such as `--name-template` print.
    pub go: String,
    /// What Helm prints (the `Display`): Go's text, reworded for parse
    /// errors (`parse error at (NAME:LINE): MSG`) and for `required` and
    /// `fail` (`execution error at (NAME:LINE:COL): MSG`).
    pub message: String,
}

/// What kind of [`TemplateError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TemplateErrorKind {
    /// The template text does not parse.
    Parse,
    /// Execution failed: a function's error, `required` or `fail`, a
    /// field of a non-map, ...
    Exec,
    /// No template of this name exists.
    NotFound,
    /// The output limit ([`EngineOptions::max_output_bytes`]) was reached.
    OutputLimit {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The render's output budget ([`EngineOptions::max_render_bytes`]) was
    /// crossed, in this template.
    RenderBudget {
        /// The budget, in bytes.
        budget: usize,
    },
}

impl TemplateError {
    fn from_parse(e: parse::ParseError) -> Self {
        let go = e.go_text();
        let at = (e.line > 0).then_some((e.line, e.column));
        TemplateError {
            kind: TemplateErrorKind::Parse,
            message: helm_parse_message(&e.name, &go),
            template: e.name,
            line: at.map(|(l, _)| l),
            column: at.map(|(_, c)| c),
            go,
        }
    }

    fn from_exec(name: &str, e: exec::GoError) -> Self {
        TemplateError {
            kind: TemplateErrorKind::Exec,
            message: helm_exec_message(name, &e.text),
            template: e.template,
            line: e.at.map(|(l, _)| l),
            column: e.at.map(|(_, c)| c),
            go: e.text,
        }
    }

    /// No template named `name`.
    fn not_found(name: &str) -> Self {
        let text = format!(
            "template: no template {} associated with template \"gotpl\"",
            crate::gostd::strconv::quote(name)
        );
        TemplateError {
            kind: TemplateErrorKind::NotFound,
            template: name.to_string(),
            line: None,
            column: None,
            go: text.clone(),
            message: text,
        }
    }

    /// The render's output budget was crossed while executing `name`.
    fn render_budget(name: &str, budget: usize) -> Self {
        let text = format!(
            "template: {name}: rendering output exceeded the render's budget of {budget} bytes (all templates together)"
        );
        TemplateError {
            kind: TemplateErrorKind::RenderBudget { budget },
            template: name.to_string(),
            line: None,
            column: None,
            go: text.clone(),
            message: text,
        }
    }

    /// The output limit was reached while executing `name`.
    fn output_limit(name: &str, limit: usize) -> Self {
        let text =
            format!("template: {name}: rendering output exceeded the limit of {limit} bytes");
        TemplateError {
            kind: TemplateErrorKind::OutputLimit { limit },
            template: name.to_string(),
            line: None,
            column: None,
            go: text.clone(),
            message: text,
        }
    }
}

/// Helm's `cleanupParseError`: keep the location token and the last `": "` part.
fn helm_parse_message(name: &str, go: &str) -> String {
    let tokens: Vec<&str> = go.split(": ").collect();
    if tokens.len() == 1 {
        return format!("parse error in ({name}): {go}");
    }
    let loc = tokens[1];
    let msg = tokens[tokens.len() - 1];
    format!("parse error at ({loc}): {msg}")
}

/// Helm's `cleanupExecError`: `required`/`fail` messages become
/// `execution error at (LOC): MSG`, everything else stays Go's text.
fn helm_exec_message(name: &str, go: &str) -> String {
    let tokens: Vec<&str> = go.splitn(3, ": ").collect();
    if tokens.len() != 3 {
        return format!("execution error in ({name}): {go}");
    }
    let loc = tokens[1];
    if let Some(start) = tokens[2].find("HELM_ERR_START") {
        let rest = &tokens[2][start + "HELM_ERR_START".len()..];
        if let Some(end) = rest.rfind("HELM_ERR_END") {
            return format!("execution error at ({loc}): {}", &rest[..end]);
        }
    }
    go.to_string()
}

/// A cached `tpl` parse: the trees of the text, or its parse error.
type TplParse = Result<Rc<Vec<Rc<Tree>>>, parse::ParseError>;

/// The cluster lookup behind the `lookup` function: `(apiVersion, kind,
/// namespace, name)` to the object (an empty map when there is none). An
/// error's text becomes the function's error (`error calling lookup: ...`).
pub type LookupFn =
    Box<dyn Fn(&str, &str, &str, &str) -> Result<Value, Box<dyn std::error::Error + Send + Sync>>>;

/// A set of parsed templates that share `define`s, with Helm's function map.
pub struct Engine {
    options: EngineOptions,
    registry: std::sync::Arc<funcs::Registry>,
    templates: HashMap<String, Rc<Tree>>,
    tpl_cache: RefCell<HashMap<String, TplParse>>,
    lookup: Option<LookupFn>,
    log: RefCell<Vec<String>>,
    /// Files being parsed ahead ([`Engine::parse_ahead`]) for the next
    /// [`Engine::add_templates_visiting`].
    ahead: Option<ahead::Ahead>,
    /// Bytes written by executions since the budget was reset.
    render_spent: std::cell::Cell<usize>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("options", &self.options)
            .field("templates", &self.templates.len())
            .finish()
    }
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new(EngineOptions::default())
    }
}

impl Engine {
    /// An empty template set with Helm's function map.
    pub fn new(options: EngineOptions) -> Self {
        Engine::with_registry(options, funcs::helm_registry())
    }

    /// An empty template set with a custom function map.
    pub fn with_registry(options: EngineOptions, registry: funcs::Registry) -> Self {
        Engine {
            options,
            registry: std::sync::Arc::new(registry),
            templates: HashMap::default(),
            tpl_cache: RefCell::new(HashMap::default()),
            lookup: None,
            log: RefCell::new(Vec::new()),
            ahead: None,
            render_spent: std::cell::Cell::new(0),
        }
    }

    /// The options.
    pub fn options(&self) -> &EngineOptions {
        &self.options
    }

    /// The function map.
    pub fn registry(&self) -> &funcs::Registry {
        &self.registry
    }

    /// Parses a template file as Helm does (`t.New(name).Parse(text)`); its
    /// defines replace earlier ones (an empty body never replaces a non-empty one).
    pub fn add_template(&mut self, name: &str, text: &str) -> Result<(), TemplateError> {
        let registry = &self.registry;
        let trees = parse::parse(name, text, &|f| registry.get(f).is_some())
            .map_err(TemplateError::from_parse)?;
        insert_trees_into(&mut self.templates, trees);
        Ok(())
    }

    /// Parses many template files: the same result (and the same first
    /// error) as [`Engine::add_template`] on each `(name, text)` in order.
    /// Large batches are parsed on several threads; the trees are still
    /// added in order, so `define` precedence is unchanged. The trees share
    /// each file's [`Source`] instead of copying its text.
    pub fn add_templates(&mut self, files: &[(&str, Source)]) -> Result<(), TemplateError> {
        let mut nothing = |_: &Engine, _: usize| Ok::<(), ()>(());
        match self.add_templates_visiting(files, &mut nothing) {
            Ok(()) | Err(Visited::Visit(())) => Ok(()),
            Err(Visited::Parse(e)) => Err(e),
        }
    }

    /// Starts parsing `likely` on helper threads and returns at once:
    /// `likely` are the files a later [`Engine::add_templates_visiting`]
    /// (or [`Engine::add_templates`]) call will probably get, in the order
    /// it will visit them (a render knows its templates before its values
    /// are ready). That call takes the parse of each file queued here with
    /// the same name and the same bytes (shared, not copied), parses the
    /// others itself, and stops the helpers; a wrong guess costs time,
    /// never a different result. Small batches (or a single core) start
    /// nothing. A call with the very files already being parsed ahead (same
    /// names, same bytes) lets that parse go on; any other replaces it.
    pub fn parse_ahead(&mut self, likely: Vec<(String, Source)>) {
        if self
            .ahead
            .as_ref()
            .is_some_and(|a| a.holds_exactly(&likely))
        {
            return;
        }
        let total: usize = likely.iter().map(|(_, s)| s.len()).sum();
        let helpers = crate::par::threads().saturating_sub(1);
        self.ahead = None;
        if total >= PARALLEL_PARSE_MIN_BYTES && helpers > 0 && likely.len() > 1 {
            let helpers = helpers.min(likely.len());
            self.ahead = Some(ahead::Ahead::start(self.registry.clone(), likely, helpers));
        }
    }

    /// Adds `files` as [`Engine::add_templates`] does and calls `visit`
    /// with the engine and each file's index, in order (a render executes
    /// the file there). When files were parsed ahead, a file is visited as
    /// soon as it and every file that may hold a `define` or `block` are
    /// added, while helpers still parse later files. The outcome is the one
    /// of adding every file first: the first parse error (in file order)
    /// wins over any visit's error, and a visit that fails before every
    /// file was added is repeated once they all are (a template that is
    /// not there yet can only make execution fail, never differ), so
    /// `visit` must be repeatable and should publish results only when it
    /// succeeds.
    pub fn add_templates_visiting<E>(
        &mut self,
        files: &[(&str, Source)],
        visit: &mut dyn FnMut(&Engine, usize) -> Result<(), E>,
    ) -> Result<(), Visited<E>> {
        let ahead = self.ahead.take();
        let queued: Vec<Option<usize>> = files
            .iter()
            .map(|(name, source)| ahead.as_ref().and_then(|a| a.find(name, source)))
            .collect();
        // What was not queued is parsed now, together.
        let todo: Vec<(&str, Source)> = files
            .iter()
            .zip(&queued)
            .filter(|(_, q)| q.is_none())
            .map(|((name, source), _)| (*name, source.clone()))
            .collect();
        let mut now = parse_batch(&self.registry, &todo).into_iter();
        let mut parsed: Vec<Option<ahead::ParseResult>> = queued
            .iter()
            .map(|q| if q.is_none() { now.next() } else { None })
            .collect();
        let Some(ahead) = ahead.filter(|_| queued.iter().any(Option::is_some)) else {
            for p in parsed.into_iter().flatten() {
                insert_trees_into(
                    &mut self.templates,
                    p.map_err(|e| Visited::Parse(TemplateError::from_parse(e)))?,
                );
            }
            for i in 0..files.len() {
                visit(self, i).map_err(Visited::Visit)?;
            }
            return Ok(());
        };
        let mut get = |i: usize| -> ahead::ParseResult {
            match (parsed.get_mut(i).and_then(Option::take), queued.get(i)) {
                (Some(p), _) => p,
                (None, Some(Some(k))) => ahead.take(*k),
                (None, _) => Ok(Vec::new()),
            }
        };
        let n = files.len();
        let mut added = vec![false; n];
        // Adds every file not added yet, in order; the first parse error
        // among them is the first of all (those added before parsed).
        let finish = |engine: &mut Engine,
                      added: &mut [bool],
                      get: &mut dyn FnMut(usize) -> ahead::ParseResult|
         -> Result<(), TemplateError> {
            for (i, done) in added.iter_mut().enumerate() {
                if !*done {
                    let trees = get(i).map_err(TemplateError::from_parse)?;
                    insert_trees_into(&mut engine.templates, trees);
                    *done = true;
                }
            }
            Ok(())
        };
        // Defines first, in file order. A define named like a file added
        // later would make the order matter: then every file is added
        // before the first visit.
        let file_names: std::collections::HashSet<&str> =
            files.iter().map(|(name, _)| *name).collect();
        let mut all_first = false;
        for (i, (name, source)) in files.iter().enumerate() {
            let defines = match queued[i] {
                Some(k) => ahead.may_define(k),
                None => ahead::may_define(source),
            };
            if !defines {
                continue;
            }
            match get(i) {
                Ok(trees) => {
                    all_first |= trees
                        .iter()
                        .any(|t| t.name != *name && file_names.contains(t.name.as_str()));
                    insert_trees_into(&mut self.templates, trees);
                    added[i] = true;
                }
                Err(e) => {
                    // An earlier file that does not define may fail too.
                    for (j, _) in added.iter().enumerate().take(i).filter(|(_, a)| !**a) {
                        if let Err(first) = get(j) {
                            return Err(Visited::Parse(TemplateError::from_parse(first)));
                        }
                    }
                    return Err(Visited::Parse(TemplateError::from_parse(e)));
                }
            }
        }
        if all_first {
            finish(self, &mut added, &mut get).map_err(Visited::Parse)?;
        }
        for i in 0..n {
            if !added[i] {
                match get(i) {
                    Ok(trees) => {
                        insert_trees_into(&mut self.templates, trees);
                        added[i] = true;
                    }
                    // Earlier files are all added, so this is the first.
                    Err(e) => return Err(Visited::Parse(TemplateError::from_parse(e))),
                }
            }
            if let Err(e) = visit(self, i) {
                if added.iter().all(|a| *a) {
                    return Err(Visited::Visit(e));
                }
                finish(self, &mut added, &mut get).map_err(Visited::Parse)?;
                visit(self, i).map_err(Visited::Visit)?;
            }
        }
        Ok(())
    }

    /// Takes the lines the engine logged since the last call, oldest first
    /// (in lint mode: `[INFO] Missing required value: ...` and
    /// `[INFO] Fail: ...`, which Helm writes to its log).
    pub fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.borrow_mut())
    }

    pub(crate) fn log_line(&self, line: String) {
        self.log.borrow_mut().push(line);
    }

    /// Starts a new render's output budget
    /// ([`EngineOptions::max_render_bytes`]): what earlier executions wrote
    /// no longer counts.
    pub fn reset_render_budget(&self) {
        self.render_spent.set(0);
    }

    /// Whether a template (file or define) of this name exists.
    pub fn has_template(&self, name: &str) -> bool {
        self.templates.contains_key(name)
    }

    /// The names of all templates, sorted.
    pub fn template_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.templates.keys().cloned().collect();
        v.sort();
        v
    }

    /// Installs a cluster lookup for `lookup` (offline default: an empty map).
    pub fn set_lookup(&mut self, f: LookupFn) {
        self.lookup = Some(f);
    }

    /// Executes one template with `data` and returns the text after Helm's
    /// removal of every `<no value>`.
    pub fn execute(&self, name: &str, data: &Value) -> Result<String, TemplateError> {
        match self.execute_plain(name, data) {
            // Only copy the output when there is something to remove.
            Ok(s) if s.contains("<no value>") => Ok(s.replace("<no value>", "")),
            r => r,
        }
    }

    /// Executes one template with `data` as Go's `Template.Execute` does:
    /// a missing value prints `<no value>` (what Helm's own uses of plain
    /// `text/template`, such as `--name-template`, print).
    pub fn execute_plain(&self, name: &str, data: &Value) -> Result<String, TemplateError> {
        let budget = self.options.max_render_bytes;
        let left = budget.saturating_sub(self.render_spent.get());
        let by_budget = left < self.options.max_output_bytes;
        let shared = exec::Shared::new(self, left.min(self.options.max_output_bytes));
        let set = Rc::new(exec::Set {
            local: HashMap::default(),
            parent: None,
        });
        if !self.templates.contains_key(name) {
            return Err(TemplateError::not_found(name));
        }
        match shared.execute_named(&set, name, data.clone()) {
            Ok(s) => {
                self.render_spent
                    .set(self.render_spent.get().saturating_add(s.len()));
                Ok(s)
            }
            Err(exec::ExecErr::Go(e)) => Err(TemplateError::from_exec(name, *e)),
            Err(exec::ExecErr::Limit(_)) if by_budget => {
                Err(TemplateError::render_budget(name, budget))
            }
            Err(exec::ExecErr::Limit(limit)) => Err(TemplateError::output_limit(name, limit)),
            Err(_) => Ok(String::new()),
        }
    }

    /// Parses `tpl` text as template "gotpl" (cached by text).
    fn parse_tpl(&self, text: &str) -> Result<Rc<Vec<Rc<Tree>>>, parse::ParseError> {
        if let Some(r) = self.tpl_cache.borrow().get(text) {
            return r.clone();
        }
        let registry = &self.registry;
        let r = parse::parse("gotpl", text, &|f| registry.get(f).is_some())
            .map(|ts| Rc::new(ts.into_iter().map(Rc::new).collect::<Vec<_>>()));
        let mut cache = self.tpl_cache.borrow_mut();
        if cache.len() > 10_000 {
            cache.clear();
        }
        cache.insert(text.to_string(), r.clone());
        r
    }
}

/// Why [`Engine::add_templates_visiting`] stopped.
#[derive(Debug)]
pub enum Visited<E> {
    /// A file did not parse (the first such file in order).
    Parse(TemplateError),
    /// A visit failed.
    Visit(E),
}

fn insert_trees_into(templates: &mut HashMap<String, Rc<Tree>>, trees: Vec<Tree>) {
    for t in trees {
        if ast::is_empty_list(&t.root) {
            if let Some(old) = templates.get(&t.name) {
                if !ast::is_empty_list(&old.root) {
                    continue;
                }
            }
        }
        templates.insert(t.name.clone(), Rc::new(t));
    }
}

/// Template text below which a batch is parsed on the calling thread alone
/// (a thread costs more than parsing a small chart).
const PARALLEL_PARSE_MIN_BYTES: usize = 192 * 1024;

/// Parses `files`, in order, on as many threads as pay off.
fn parse_batch(
    registry: &funcs::Registry,
    files: &[(&str, Source)],
) -> Vec<Result<Vec<Tree>, parse::ParseError>> {
    crate::par::map_ordered(
        files,
        |(_, text)| text.len(),
        PARALLEL_PARSE_MIN_BYTES,
        |(name, text)| parse::parse_source(name, text, &|f| registry.get(f).is_some()),
    )
}

#[cfg(test)]
mod tests;
