//! The Go `text/template` engine as Helm v3.17.2 uses it, with Sprig and
//! Helm's own functions.
//!
//! Layout: [`lexer`] -> [`parse`] (into [`ast`]) -> `exec`; values in
//! [`value`], Go's `fmt` in [`gofmt`], functions by family under [`funcs`].
//! [`Engine`] is Helm's template set: every chart file is parsed into it
//! (defines are shared), then each file is executed with its data, and the
//! errors read exactly as Helm prints them.
pub mod ast;
pub(crate) mod exec;
pub mod funcs;
pub mod gofmt;
pub mod lexer;
pub mod parse;
mod stack;
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
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            strict: false,
            max_output_bytes: 100 * 1024 * 1024,
            max_include_depth: 1000,
            enable_dns: false,
            lint_mode: false,
        }
    }
}

/// A template error. `Display` is exactly what Helm prints after `Error: `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// The template text does not parse.
    #[error("{helm}")]
    Parse {
        /// The file name.
        name: String,
        /// The 1-based line of the error.
        line: usize,
        /// Go's own message (`template: NAME:LINE: MSG`).
        go: String,
        /// Helm's rewording: `parse error at (NAME:LINE): MSG`.
        helm: String,
    },
    /// Execution failed.
    #[error("{helm}")]
    Exec {
        /// Go's full error text (with Helm's `HELM_ERR_START` markers, if any).
        go: String,
        /// What Helm prints: the Go text, or `execution error at (LOC): MSG`
        /// for `required` and `fail`.
        helm: String,
    },
    /// The named template does not exist.
    #[error("template: no template {} associated with template \"gotpl\"", gofmt::quote_go(.0))]
    NotFound(String),
    /// The output limit ([`EngineOptions::max_output_bytes`]) was reached.
    #[error("rendering output exceeded the limit of {0} bytes")]
    OutputLimit(usize),
}

impl TemplateError {
    fn from_parse(e: parse::ParseError) -> Self {
        let go = e.go_text();
        TemplateError::Parse {
            name: e.name.clone(),
            line: e.line,
            helm: helm_parse_message(&e.name, &go),
            go,
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

/// The cluster lookup behind the `lookup` function.
pub type LookupFn = Box<dyn Fn(&str, &str, &str, &str) -> Result<Value, String>>;

/// A set of parsed templates that share `define`s, with Helm's function map.
pub struct Engine {
    options: EngineOptions,
    registry: funcs::Registry,
    templates: HashMap<String, Rc<Tree>>,
    tpl_cache: RefCell<HashMap<String, TplParse>>,
    lookup: Option<LookupFn>,
    log: RefCell<Vec<String>>,
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
            registry,
            templates: HashMap::default(),
            tpl_cache: RefCell::new(HashMap::default()),
            lookup: None,
            log: RefCell::new(Vec::new()),
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
        self.insert_trees(trees);
        Ok(())
    }

    /// Parses many template files: the same result (and the same first
    /// error) as [`Engine::add_template`] on each `(name, text)` in order.
    /// Large batches are parsed on several threads; the trees are still
    /// added in order, so `define` precedence is unchanged. The trees share
    /// each file's [`Source`] instead of copying its text.
    pub fn add_templates(&mut self, files: &[(&str, Source)]) -> Result<(), TemplateError> {
        for parsed in parse_batch(&self.registry, files) {
            self.insert_trees(parsed.map_err(TemplateError::from_parse)?);
        }
        Ok(())
    }

    fn insert_trees(&mut self, trees: Vec<Tree>) {
        for t in trees {
            if ast::is_empty_list(&t.root) {
                if let Some(old) = self.templates.get(&t.name) {
                    if !ast::is_empty_list(&old.root) {
                        continue;
                    }
                }
            }
            self.templates.insert(t.name.clone(), Rc::new(t));
        }
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
        let shared = exec::Shared::new(self);
        let set = Rc::new(exec::Set {
            local: HashMap::default(),
            parent: None,
        });
        if !self.templates.contains_key(name) {
            return Err(TemplateError::NotFound(name.to_string()));
        }
        match shared.execute_named(&set, name, data.clone()) {
            // Only copy the output when there is something to remove.
            Ok(s) if s.contains("<no value>") => Ok(s.replace("<no value>", "")),
            Ok(s) => Ok(s),
            Err(exec::ExecErr::Go(go)) => Err(TemplateError::Exec {
                helm: helm_exec_message(name, &go),
                go,
            }),
            Err(exec::ExecErr::Limit(n)) => Err(TemplateError::OutputLimit(n)),
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
