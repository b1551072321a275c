//! `helm lint`: Helm's chart-level rules, reported the way Helm reports them.
//!
//! Rule groups run in Helm's order: Chart.yaml, values.yaml, templates,
//! dependencies. The checks on *rendered* templates (indentation, YAML
//! syntax, object names, selectors, `List` annotations), schema validation
//! of values and deprecated-API warnings need a renderer, which a later
//! pipeline stage provides through [`LintRenderer`]
//! (`rudder::render::lint::Linter`). A renderer is required: no rule is
//! skipped without a word.
//!
//! [`lint`] lints a chart directory or archive, as `helm lint PATH` does;
//! [`lint_chart`] lints a chart in memory.
use super::component::BoxError;
use super::loader::{load_archive_files, load_dir};
use super::model::Chart;
use crate::manifest::names::{name_errors, rule_for_kind};
use crate::yaml::Node;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// How serious a lint finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Severity {
    /// Informational.
    Info,
    /// A warning (fails the chart with `--strict`).
    Warning,
    /// An error.
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Severity::Info => "INFO",
            Severity::Warning => "WARNING",
            Severity::Error => "ERROR",
        })
    }
}

/// One finding: `[SEVERITY] path: text`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LintMessage {
    /// Severity.
    pub severity: Severity,
    /// `Chart.yaml`, `values.yaml`, `templates/`, `templates/x.yaml`, or the
    /// chart directory.
    pub path: String,
    /// The message.
    pub text: String,
}

impl fmt::Display for LintMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}: {}", self.severity, self.path, self.text)
    }
}

/// Renders a chart's templates the way `helm lint` does (release
/// `test-release`, lint mode); implemented by the render stage.
pub trait LintRenderer {
    /// Rendered text by template path (`<chart>/templates/x.yaml`), or the
    /// render error (its text is the lint message).
    fn render_for_lint(
        &self,
        chart: &Chart,
        namespace: &str,
    ) -> Result<BTreeMap<String, String>, BoxError>;

    /// Validates values.yaml against `values.schema.json` (Helm's values
    /// rule; `schema` is empty when the chart has none, which passes); the
    /// error is the schema error text. The default accepts all.
    fn validate_values_schema(&self, _values: &Node, _schema: &[u8]) -> Result<(), BoxError> {
        Ok(())
    }

    /// Helm's deprecated-API warning for a rendered object of this API
    /// version and kind, if any. The default knows no deprecations.
    fn deprecation(&self, _api_version: &str, _kind: &str) -> Option<String> {
        None
    }

    /// Takes what rendering logged since the last call (see
    /// [`LintResult::log`]). The default logs nothing.
    fn take_log(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Options for [`lint`] and [`lint_chart`].
///
/// There is no way to lint without rendering: every rule of `helm lint`
/// runs, or the lint fails. `rudder::render::lint::Linter` is the
/// renderer that `helm lint` uses.
pub struct LintOptions<'a> {
    /// The namespace templates are rendered in.
    pub namespace: String,
    /// Renders the templates (and validates values against the schema) for
    /// the rules that need it.
    pub renderer: &'a dyn LintRenderer,
}

/// The result of linting one path.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LintResult {
    /// The path as given.
    pub path: String,
    /// Findings, in rule order.
    pub messages: Vec<LintMessage>,
    /// Set when the path could not be linted at all (Helm prints
    /// `Error <text>` instead of messages).
    pub error: Option<String>,
    /// What rendering logged meanwhile, in order (lint mode's `[INFO]`
    /// lines from `required` and `fail`; Helm writes them to stderr).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<String>,
}

impl LintResult {
    /// Whether the chart fails: any error, or any warning when `strict`.
    pub fn failed(&self, strict: bool) -> bool {
        let bar = if strict {
            Severity::Warning
        } else {
            Severity::Error
        };
        self.error.is_some() || self.messages.iter().any(|m| m.severity >= bar)
    }
}

struct Linter {
    messages: Vec<LintMessage>,
}

impl Linter {
    fn add(&mut self, severity: Severity, path: &str, text: impl Into<String>) {
        self.messages.push(LintMessage {
            severity,
            path: path.to_string(),
            text: text.into(),
        });
    }

    /// Adds the finding if any; returns whether the rule passed.
    fn rule(&mut self, severity: Severity, path: &str, r: Result<(), String>) -> bool {
        match r {
            Ok(()) => true,
            Err(e) => {
                self.add(severity, path, e);
                false
            }
        }
    }
}

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::io::Result<TempDir> {
        use std::time::{SystemTime, UNIX_EPOCH};
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let t = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let p = std::env::temp_dir().join(format!("rudder-lint-{}-{n}-{t}", std::process::id()));
        std::fs::create_dir(&p)?;
        Ok(TempDir(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Lints a chart directory or archive, as `helm lint PATH` does.
pub fn lint(path: &Path, opts: &LintOptions<'_>) -> LintResult {
    let shown = path.display().to_string();
    let mut result = LintResult {
        path: shown.clone(),
        ..LintResult::default()
    };
    let _tmp;
    let chart_dir = if shown.ends_with(".tgz") || shown.ends_with(".tar.gz") {
        match expand_archive(path) {
            Ok((tmp, dir)) => {
                _tmp = tmp;
                dir
            }
            Err(e) => {
                result.error = Some(e);
                return result;
            }
        }
    } else {
        path.to_path_buf()
    };
    if let Err(e) = std::fs::metadata(chart_dir.join("Chart.yaml")) {
        result.error = Some(format!(
            "unable to check Chart.yaml file in chart: stat {}: {}",
            chart_dir.join("Chart.yaml").display(),
            super::loader::io_message(&e)
        ));
        return result;
    }
    result.messages = lint_dir(&chart_dir, opts);
    result.log = opts.renderer.take_log();
    result
}

/// Lints a chart in memory: loaded, built by
/// [`chart_from_manifests`](super::chart_from_manifests), or changed in
/// code. Every rule of `helm lint` runs, the rendered-template ones
/// included.
///
/// The Chart.yaml and values.yaml rules check [`Chart::metadata`] and
/// [`Chart::values`] as they are in memory, changes made in code included;
/// the raw Chart.yaml of a loaded chart is read only for the types of its
/// fields (a float `version: 1.0`). Dependency findings name the chart
/// rather than a directory. The result's `path` is the chart's name. On a
/// loaded chart directory the findings are those of [`lint`].
///
/// ```
/// use rudder::chart::lint::{lint_chart, LintOptions};
/// use std::collections::BTreeMap;
///
/// let mut manifests = BTreeMap::new();
/// manifests.insert(
///     "deploy.yaml".to_string(),
///     "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec: {}\n".to_string(),
/// );
/// let chart = rudder::chart::chart_from_manifests("web", "default", &manifests)?;
/// let renderer = rudder::render::lint::Linter::default();
/// let opts = LintOptions { namespace: "default".into(), renderer: &renderer };
/// let result = lint_chart(&chart, &opts);
/// let found: Vec<String> = result.messages.iter().map(|m| m.to_string()).collect();
/// assert_eq!(found, [
///     "[INFO] Chart.yaml: icon is recommended",
///     // The rendered rules ran.
///     "[ERROR] templates/deploy.yaml: a Deployment must contain matchLabels or matchExpressions, and \"web\" does not",
/// ]);
/// assert!(result.failed(false));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn lint_chart(chart: &Chart, opts: &LintOptions<'_>) -> LintResult {
    let mut l = Linter {
        messages: Vec::new(),
    };
    let raw = |name: &str| {
        chart
            .raw
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.data.text().into_owned())
    };
    // The raw Chart.yaml only tells the types of fields (a float
    // `version:`), and only while it still says what the metadata says.
    let raw_chartfile = raw("Chart.yaml")
        .filter(|t| super::metadata::decode_metadata(t).is_ok_and(|(m, _)| m == chart.metadata))
        .and_then(|t| crate::yaml::parse_values(&t).ok())
        .unwrap_or(Node::Null);
    lint_metadata(&chart.metadata, &raw_chartfile, &mut l);
    let schema = chart.schema.as_deref().unwrap_or_default();
    let values = match (&chart.values, raw("values.yaml")) {
        (Some(v), _) => Some(v.clone()),
        // An empty values.yaml.
        (None, Some(_)) => Some(Node::Map(Default::default())),
        (None, None) => None,
    };
    match values {
        Some(v) => {
            if let Err(e) = opts.renderer.validate_values_schema(&v, schema) {
                l.add(Severity::Error, "values.yaml", e.to_string());
            }
        }
        None => l.add(Severity::Info, "values.yaml", "file does not exist"),
    }
    lint_chart_templates(chart, &opts.namespace, opts.renderer, &mut l);
    lint_chart_dependencies(chart, &chart.metadata.name, &mut l);
    LintResult {
        path: chart.metadata.name.clone(),
        messages: l.messages,
        error: None,
        log: opts.renderer.take_log(),
    }
}

fn expand_archive(path: &Path) -> Result<(TempDir, PathBuf), String> {
    let data = std::fs::read(path)
        .map_err(|e| format!("open {}: {}", path.display(), super::loader::io_message(&e)))?;
    let files = load_archive_files(&data).map_err(|e| format!("unable to extract tarball: {e}"))?;
    let name = files
        .iter()
        .find(|f| f.name == "Chart.yaml")
        .and_then(|f| super::metadata::decode_metadata(&f.data.text()).ok())
        .map(|(m, _)| m.name)
        .filter(|n| !n.is_empty() && !n.contains('/') && n != "." && n != "..")
        .ok_or_else(|| "unable to extract tarball: chart name not specified".to_string())?;
    let tmp = TempDir::new().map_err(|e| format!("unable to create temporary directory: {e}"))?;
    let root = tmp.0.join(&name);
    for f in &files {
        let target = root.join(&f.name);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("unable to extract tarball: {e}"))?;
        }
        std::fs::write(&target, &f.data).map_err(|e| format!("unable to extract tarball: {e}"))?;
    }
    let base = path
        .file_name()
        .map(|b| b.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(i) = base.rfind('-').filter(|i| *i > 0) else {
        return Err(format!(
            "unable to parse chart archive {base:?}, missing '-'"
        ));
    };
    let dir = tmp.0.join(&base[..i]);
    Ok((tmp, dir))
}

/// Go's `%T` name for a value decoded by sigs.k8s.io/yaml.
fn go_type(n: &Node) -> &'static str {
    match n {
        Node::Null => "%!s(<nil>)",
        Node::Bool(_) => "bool",
        Node::Int(_) | Node::Float(_) => "float64",
        Node::Str(_) => "string",
        Node::Seq(_) => "[]interface {}",
        Node::Map(_) => "map[string]interface {}",
    }
}

fn has_scheme(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && !rest.is_empty()
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// govalidator's `IsRequestURL`: parses as an absolute request URI with a scheme.
fn is_request_url(s: &str) -> bool {
    has_scheme(s)
}

/// An approximation of govalidator's `IsURL`.
fn is_url(s: &str) -> bool {
    if s.is_empty() || s.len() >= 2083 || s.starts_with('.') || s.chars().any(char::is_whitespace) {
        return false;
    }
    let rest = match s.split_once("://") {
        Some((scheme, rest)) => {
            if !scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            {
                return false;
            }
            rest
        }
        None => s,
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or(host);
    let host = host.split(':').next().unwrap_or(host);
    !host.is_empty()
        && (host == "localhost" || host.contains('.'))
        && host
            .chars()
            .all(|c| c.is_alphanumeric() || "-._".contains(c))
}

/// An approximation of govalidator's `IsEmail`.
fn is_email(s: &str) -> bool {
    let Some((user, domain)) = s.rsplit_once('@') else {
        return false;
    };
    !user.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !s.chars().any(|c| c.is_whitespace())
}

/// Reads a YAML file of the chart as text, or adds Helm's `unable to parse
/// YAML` error (`sep` before the reason: the Chart.yaml and values.yaml
/// rules word it differently) for a read failure or bytes that are not
/// UTF-8.
fn read_yaml_text(path: &Path, p: &str, sep: &str, l: &mut Linter) -> Option<String> {
    let why = match std::fs::read(path) {
        Ok(t) => match crate::gostd::gostr::utf8_error(&t) {
            Some(problem) => crate::yaml::YamlError::Encoding { problem }.to_string(),
            None => return Some(String::from_utf8_lossy(&t).into_owned()),
        },
        Err(e) => format!("read {}: {}", path.display(), super::loader::io_message(&e)),
    };
    l.add(
        Severity::Error,
        p,
        format!("unable to parse YAML{sep}{why}"),
    );
    None
}

fn lint_chartfile(dir: &Path, l: &mut Linter) {
    let p = "Chart.yaml";
    let path = dir.join(p);
    if path.is_dir() {
        l.add(Severity::Error, p, "should be a file, not a directory");
    }
    let Some(text) = read_yaml_text(&path, p, "\n\t", l) else {
        return;
    };
    lint_chartfile_text(&text, l);
}

/// The Chart.yaml rules on the file's text.
fn lint_chartfile_text(text: &str, l: &mut Linter) {
    let p = "Chart.yaml";
    let cf = match super::metadata::decode_metadata(text) {
        Ok((m, _)) => m,
        Err(e) => {
            l.add(Severity::Error, p, format!("unable to parse YAML\n\t{e}"));
            return;
        }
    };
    let raw = crate::yaml::parse_values(text).unwrap_or(Node::Null);
    lint_metadata(&cf, &raw, l);
}

/// The Chart.yaml rules on decoded metadata; `raw` is the file as plain
/// YAML (for the rules on field types), or null.
fn lint_metadata(cf: &super::model::Metadata, raw: &Node, l: &mut Linter) {
    let p = "Chart.yaml";
    let raw_field = |k: &str| match raw {
        Node::Map(m) => m.get(k),
        _ => None,
    };
    let name_rule = if cf.name.is_empty() {
        Err("name is required".to_string())
    } else if cf.name.contains('/') {
        Err(format!("chart name {:?} is invalid", cf.name))
    } else {
        Ok(())
    };
    l.rule(Severity::Error, p, name_rule);
    let api = match cf.api_version.as_str() {
        "" => Err("apiVersion is required. The value must be either \"v1\" or \"v2\"".to_string()),
        "v1" | "v2" => Ok(()),
        other => Err(format!(
            "apiVersion '{other}' is not valid. The value must be either \"v1\" or \"v2\""
        )),
    };
    l.rule(Severity::Error, p, api);
    for (key, label) in [("version", "version"), ("appVersion", "appVersion")] {
        if key == "appVersion" {
            // Helm checks the version value before the appVersion type.
            let v = if cf.version.is_empty() {
                Err("version is required".to_string())
            } else if super::semver::parse_lenient(&cf.version).is_err() {
                Err(format!("version '{}' is not a valid SemVer", cf.version))
            } else {
                Ok(())
            };
            l.rule(Severity::Error, p, v);
        }
        if let Some(v) = raw_field(key) {
            if !matches!(v, Node::Str(_)) {
                l.add(
                    Severity::Error,
                    p,
                    format!(
                        "{label} should be of type string but it's of type {}",
                        go_type(v)
                    ),
                );
            }
        }
    }
    let maint = cf.maintainers.iter().try_for_each(|m| {
        if m.name.is_empty() {
            Err("each maintainer requires a name".to_string())
        } else if !m.email.is_empty() && !is_email(&m.email) {
            Err(format!(
                "invalid email '{}' for maintainer '{}'",
                m.email, m.name
            ))
        } else if !m.url.is_empty() && !is_url(&m.url) {
            Err(format!(
                "invalid url '{}' for maintainer '{}'",
                m.url, m.name
            ))
        } else {
            Ok(())
        }
    });
    l.rule(Severity::Error, p, maint);
    let sources = cf.sources.iter().try_for_each(|s| {
        if s.is_empty() || !is_request_url(s) {
            Err(format!("invalid source URL '{s}'"))
        } else {
            Ok(())
        }
    });
    l.rule(Severity::Error, p, sources);
    if cf.icon.is_empty() {
        l.add(Severity::Info, p, "icon is recommended");
    } else if !is_request_url(&cf.icon) {
        l.add(
            Severity::Error,
            p,
            format!("invalid icon URL '{}'", cf.icon),
        );
    }
    if !cf.chart_type.is_empty() && cf.api_version != "v2" {
        l.add(
            Severity::Error,
            p,
            format!(
                "chart type is not valid in apiVersion '{}'. It is valid in apiVersion 'v2'",
                cf.api_version
            ),
        );
    }
    if !cf.dependencies.is_empty() && cf.api_version != "v2" {
        l.add(
            Severity::Error,
            p,
            format!(
                "dependencies are not valid in the Chart file with apiVersion '{}'. They are valid in apiVersion 'v2'",
                cf.api_version
            ),
        );
    }
}

fn lint_values(dir: &Path, opts: &LintOptions<'_>, l: &mut Linter) {
    let p = "values.yaml";
    let path = dir.join(p);
    if std::fs::metadata(&path).is_err() {
        l.add(Severity::Info, p, "file does not exist");
        return;
    }
    let Some(text) = read_yaml_text(&path, p, ": ", l) else {
        return;
    };
    let schema = std::fs::read(dir.join("values.schema.json")).unwrap_or_default();
    lint_values_text(&text, &schema, opts.renderer, l);
}

/// The values.yaml rule on the file's text and the chart's schema (empty
/// when it has none).
fn lint_values_text(text: &str, schema: &[u8], renderer: &dyn LintRenderer, l: &mut Linter) {
    let p = "values.yaml";
    if let Err(e) = crate::yaml::parse_values(text) {
        // Lint reads values into `chartutil.Values`, which names the type.
        let e = match e {
            crate::yaml::YamlError::Type { found, .. } => crate::yaml::YamlError::Type {
                found,
                target: "chartutil.Values".into(),
            },
            other => other,
        };
        l.add(Severity::Error, p, format!("unable to parse YAML: {e}"));
        return;
    }
    // Helm coalesces the user values over values.yaml whether or not
    // there is a schema (logging what it skips); an empty schema passes.
    let values = crate::yaml::parse_values(text).unwrap_or_default();
    if let Err(e) = renderer.validate_values_schema(&values, schema) {
        l.add(Severity::Error, p, e.to_string());
    }
}

fn ext_of(name: &str) -> &str {
    let base = name.rsplit('/').next().unwrap_or(name);
    match base.rfind('.') {
        Some(i) => &base[i..],
        None => "",
    }
}

fn lint_templates(dir: &Path, opts: &LintOptions<'_>, l: &mut Linter) {
    let p = "templates/";
    let tdir = dir.join("templates");
    if let Ok(m) = std::fs::metadata(&tdir) {
        if !m.is_dir() {
            l.add(Severity::Warning, p, "not a directory");
            return;
        }
    }
    let chart = match load_dir(dir) {
        Ok(c) => c,
        Err(e) => {
            l.add(Severity::Error, p, e.to_string());
            return;
        }
    };
    lint_chart_templates(&chart, &opts.namespace, opts.renderer, l);
}

/// The template rules on a loaded chart: its sources, then what they
/// render to.
fn lint_chart_templates(
    chart: &Chart,
    namespace: &str,
    renderer: &dyn LintRenderer,
    l: &mut Linter,
) {
    let p = "templates/";
    let rendered = match renderer.render_for_lint(chart, namespace) {
        Ok(m) => m,
        Err(e) => {
            l.add(Severity::Error, p, e.to_string());
            return;
        }
    };
    let crd_hook = regex::Regex::new(r#""?helm\.sh/hook"?:\s+crd-install"#).ok();
    let release_time = regex::Regex::new(r"\.Release\.Time").ok();
    for t in &chart.templates {
        let fp = t.name.as_str();
        let ext = ext_of(fp);
        if !matches!(ext, ".yaml" | ".yml" | ".tpl" | ".txt") {
            l.add(
                Severity::Error,
                fp,
                format!("file extension '{ext}' not valid. Valid extensions are .yaml, .yml, .tpl, or .txt"),
            );
        }
        let text = String::from_utf8_lossy(&t.data);
        if crd_hook.as_ref().is_some_and(|r| r.is_match(&text)) {
            l.add(Severity::Warning, fp, "manifest is a crd-install hook. This hook is no longer supported in v3 and all CRDs should also exist the crds/ directory at the top level of the chart");
        }
        if release_time.as_ref().is_some_and(|r| r.is_match(&text)) {
            l.add(
                Severity::Error,
                fp,
                ".Release.Time has been removed in v3, please replace with the `now` function in your templates",
            );
        }
        if ext != ".yaml" {
            continue;
        }
        let content = rendered
            .get(&format!("{}/{}", chart.metadata.name, fp))
            .cloned()
            .unwrap_or_default();
        if !lint_rendered(fp, &content, Some(renderer), l) {
            return;
        }
    }
}

/// The documents of a rendered file as Kubernetes' `YAMLReader` cuts them:
/// at every line that starts with `---` followed only by blanks or a `#`
/// comment; any other text after `---` is an error. Blank documents are
/// skipped (the decoder never sees them).
fn k8s_yaml_documents(content: &str) -> Vec<Result<&str, String>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut pos = 0;
    for line in content.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("---") {
            let rest = rest.trim();
            if !rest.is_empty() && !rest.starts_with('#') {
                out.push(Err(format!("invalid Yaml document separator: {rest}")));
                return out;
            }
            if !content[start..pos].trim().is_empty() {
                out.push(Ok(&content[start..pos]));
            }
            start = pos + line.len();
        }
        pos += line.len();
    }
    if !content[start..].trim().is_empty() {
        out.push(Ok(&content[start..]));
    }
    out
}

/// The rendered-content rules for one `.yaml` template; false stops linting
/// the chart's remaining templates (as Helm does after a YAML error).
fn lint_rendered(
    fp: &str,
    content: &str,
    renderer: Option<&dyn LintRenderer>,
    l: &mut Linter,
) -> bool {
    if let Some(line) = content.lines().find(|x| !x.trim().is_empty()) {
        if line.starts_with(' ') || line.starts_with('\t') {
            l.add(
                Severity::Warning,
                fp,
                format!("document starts with an illegal indent: {line:?}, which may cause parsing problems"),
            );
        }
    }
    // Helm reads the rendered file with Kubernetes' YAML reader: documents
    // are cut at lines starting with `---` (a comment may follow, even
    // with no blank: `---# note`), and each is decoded on its own.
    for chunk in k8s_yaml_documents(content) {
        let doc = match chunk
            .and_then(|c| crate::yaml::parse_yaml_to_json(c).map_err(|e| e.to_string()))
        {
            Ok(d) => d,
            Err(e) => {
                l.add(Severity::Error, fp, format!("unable to parse YAML: {e}"));
                return false;
            }
        };
        let Node::Map(m) = &doc else { continue };
        let s = |n: Option<&Node>| match n {
            Some(Node::Str(x)) => x.clone(),
            _ => String::new(),
        };
        let kind = s(m.get("kind"));
        let name = match m.get("metadata") {
            Some(Node::Map(md)) => s(md.get("name")),
            _ => String::new(),
        };
        let errs = if kind.eq_ignore_ascii_case("certificatesigningrequest") {
            Vec::new()
        } else {
            name_errors(rule_for_kind(&kind), &name)
        };
        if !errs.is_empty() {
            let each: Vec<String> = errs
                .iter()
                .map(|e| format!("metadata.name: Invalid value: {name:?}: {e}"))
                .collect();
            let agg = if each.len() == 1 {
                each[0].clone()
            } else {
                format!("[{}]", each.join(", "))
            };
            l.add(
                Severity::Warning,
                fp,
                format!("object name does not conform to Kubernetes naming requirements: {name:?}: {agg}"),
            );
        }
        let api_version = s(m.get("apiVersion"));
        if !api_version.is_empty() && !kind.is_empty() {
            if let Some(text) = renderer.and_then(|r| r.deprecation(&api_version, &kind)) {
                l.add(Severity::Warning, fp, text);
            }
        }
        if matches!(
            kind.as_str(),
            "Deployment" | "ReplicaSet" | "DaemonSet" | "StatefulSet"
        ) && !(content.contains("matchLabels") || content.contains("matchExpressions"))
        {
            l.add(
                Severity::Error,
                fp,
                format!(
                    "a {kind} must contain matchLabels or matchExpressions, and {name:?} does not"
                ),
            );
        }
        if kind == "List" {
            if let Some(Node::Seq(items)) = m.get("items") {
                let bad = items.iter().any(|i| match i {
                    Node::Map(im) => match im.get("metadata") {
                        Some(Node::Map(md)) => match md.get("annotations") {
                            Some(Node::Map(a)) => a.contains_key("helm.sh/resource-policy"),
                            _ => false,
                        },
                        _ => false,
                    },
                    _ => false,
                });
                if bad {
                    l.add(
                        Severity::Error,
                        fp,
                        "Annotation 'helm.sh/resource-policy' within List objects are ignored",
                    );
                }
            }
        }
    }
    true
}

fn lint_dependencies(dir: &Path, l: &mut Linter) {
    let c = match load_dir(dir) {
        Ok(c) => c,
        Err(e) => {
            l.add(Severity::Error, "", format!("unable to load chart\n\t{e}"));
            return;
        }
    };
    let at = std::path::absolute(dir)
        .unwrap_or_else(|_| dir.to_path_buf())
        .display()
        .to_string();
    lint_chart_dependencies(&c, &at, l);
}

/// The dependency rules on a loaded chart; findings name `at`.
fn lint_chart_dependencies(c: &Chart, at: &str, l: &mut Linter) {
    let declared: Vec<&str> = c
        .metadata
        .dependencies
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    let present: Vec<&str> = c
        .dependencies
        .iter()
        .map(|d| d.metadata.name.as_str())
        .collect();
    let undeclared: Vec<&str> = present
        .iter()
        .filter(|p| !declared.contains(p))
        .copied()
        .collect();
    if !undeclared.is_empty() {
        l.add(
            Severity::Error,
            at,
            format!(
                "chart metadata is missing these dependencies: {}",
                undeclared.join(",")
            ),
        );
    }
    let mut keys = std::collections::BTreeSet::new();
    let mut shadowing = Vec::new();
    for d in &c.metadata.dependencies {
        let key = if d.alias.is_empty() {
            &d.name
        } else {
            &d.alias
        };
        if !keys.insert(key.clone()) {
            shadowing.push(key.clone());
        }
    }
    if !shadowing.is_empty() {
        l.add(
            Severity::Error,
            at,
            format!(
                "multiple dependencies with name or alias: {}",
                shadowing.join(",")
            ),
        );
    }
    let missing: Vec<&str> = declared
        .iter()
        .filter(|d| !present.contains(d))
        .copied()
        .collect();
    if !missing.is_empty() {
        l.add(
            Severity::Warning,
            at,
            format!(
                "chart directory is missing these dependencies: {}",
                missing.join(",")
            ),
        );
    }
}

/// Runs every rule group on a chart directory.
pub fn lint_dir(dir: &Path, opts: &LintOptions<'_>) -> Vec<LintMessage> {
    let mut l = Linter {
        messages: Vec::new(),
    };
    lint_chartfile(dir, &mut l);
    lint_values(dir, opts, &mut l);
    lint_templates(dir, opts, &mut l);
    lint_dependencies(dir, &mut l);
    l.messages
}

/// What `helm lint` prints for a set of results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LintReport {
    /// Standard output: per path `==> Linting PATH`, its messages (or
    /// `Error ...` lines) and a blank line; then the summary line, unless the
    /// run failed or `quiet` found nothing to say.
    pub stdout: String,
    /// `N chart(s) linted, M chart(s) failed`; Helm's error when `failed`.
    pub summary: String,
    /// Whether any chart failed (exit non-zero with `Error: <summary>`).
    pub failed: bool,
}

/// Formats results the way `helm lint [--strict] [--quiet]` does.
pub fn report(results: &[LintResult], strict: bool, quiet: bool) -> LintReport {
    let mut out = String::new();
    let mut failed = 0;
    let mut noisy = 0;
    for r in results {
        let has_findings =
            r.error.is_some() || r.messages.iter().any(|m| m.severity > Severity::Info);
        if has_findings {
            noisy += 1;
        }
        if r.failed(strict) {
            failed += 1;
        }
        if quiet && !has_findings {
            continue;
        }
        out.push_str(&format!("==> Linting {}\n", r.path));
        if let Some(e) = &r.error {
            if r.messages.is_empty() {
                out.push_str(&format!("Error {e}\n"));
            }
        }
        for m in &r.messages {
            if !quiet || m.severity > Severity::Info {
                out.push_str(&format!("{m}\n"));
            }
        }
        out.push('\n');
    }
    let summary = format!(
        "{} chart(s) linted, {} chart(s) failed",
        results.len(),
        failed
    );
    if failed == 0 && (!quiet || noisy > 0) {
        out.push_str(&summary);
        out.push('\n');
    }
    LintReport {
        stdout: out,
        summary,
        failed: failed > 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_emails() {
        assert!(is_request_url("https://example.com/x"));
        assert!(!is_request_url("example.com"));
        assert!(!is_request_url(""));
        assert!(is_email("a@b.co"));
        assert!(!is_email("a@b"));
        assert!(is_url("https://example.com"));
        assert!(is_url("example.com/x"));
        assert!(!is_url("not a url"));
    }

    #[test]
    fn rendered_rules() {
        let mut l = Linter {
            messages: Vec::new(),
        };
        assert!(lint_rendered(
            "templates/d.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: Bad_Name\n",
            None,
            &mut l
        ));
        let texts: Vec<_> = l.messages.iter().map(|m| m.to_string()).collect();
        assert_eq!(texts.len(), 2, "{texts:?}");
        assert!(texts[0].starts_with("[WARNING] templates/d.yaml: object name does not conform to Kubernetes naming requirements: \"Bad_Name\": metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"));
        assert_eq!(texts[1], "[ERROR] templates/d.yaml: a Deployment must contain matchLabels or matchExpressions, and \"Bad_Name\" does not");
    }

    #[test]
    fn documents_cut_like_kubernetes_yaml_reader() {
        let docs = k8s_yaml_documents("a: 1\n---# note\nb: 2\n---\n\n--- \nc: 3");
        assert_eq!(docs, vec![Ok("a: 1\n"), Ok("b: 2\n"), Ok("c: 3")]);
        // The reader fails before handing out the document it buffered.
        assert_eq!(
            k8s_yaml_documents("a: 1\n--- b: 2\n"),
            vec![Err("invalid Yaml document separator: b: 2".to_string())]
        );
    }

    #[test]
    fn report_format() {
        let r = LintResult {
            path: "x".into(),
            messages: vec![LintMessage {
                severity: Severity::Info,
                path: "Chart.yaml".into(),
                text: "icon is recommended".into(),
            }],
            error: None,
            log: Vec::new(),
        };
        let rep = report(&[r], true, false);
        assert_eq!(
            rep.stdout,
            "==> Linting x\n[INFO] Chart.yaml: icon is recommended\n\n1 chart(s) linted, 0 chart(s) failed\n"
        );
        assert!(!rep.failed);
    }
}
