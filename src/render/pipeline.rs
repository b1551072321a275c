//! The render loop: chart + user values -> [`Rendered`], as Helm's
//! `action.Install` + `renderResources` + `engine.Render` do for
//! `helm template`.
//!
//! Order of work, each step as in Helm: installability and dependency
//! checks, dependency processing (conditions, tags, aliases, imports),
//! coalescing, schema validation, the chart's `kubeVersion` check, template
//! collection (root first, then subcharts), parsing every file once in
//! Helm's precedence order (deeper paths first, then descending names, so
//! the shallowest, smallest file's `define` wins), execution of non-partials
//! in the same order, NOTES extraction, splitting, hook classification and
//! the install-order sort.
use super::manifests::{sort_manifests_by, Manifest, ManifestError, RenderedHook};
use super::objects::{
    node_to_value, release_value, template_value, Capabilities, ChartObject, Files, KubeVersion,
};
use super::values::{coalesce_values, process_dependencies, Map, ValuesError, Warnings};
use crate::chart::{Chart, FileData, LoadError};
use crate::template::value::{MapKind, MapRef, Value};
use crate::template::{Source, TemplateError};
use crate::yaml::Node;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// What a template engine must offer the render loop. The crate's engine
/// implements it; tests can plug in a stand-in.
pub trait TemplateSet {
    /// Parses `text` as the template file `name` (its `define`s replace
    /// earlier ones of the same name).
    fn add_template(&mut self, name: &str, text: &str) -> Result<(), TemplateError>;
    /// Parses many files as `add_template` on each in order would (the
    /// first error wins); an engine may parse them concurrently, and keep
    /// the shared texts instead of copies.
    fn add_templates(&mut self, files: &[(&str, Source)]) -> Result<(), TemplateError> {
        files.iter().try_for_each(|(name, text)| {
            self.add_template(
                name,
                &crate::gostd::gostr::go_string_from_bytes(text.bytes()),
            )
        })
    }
    /// Executes the file `name` with `data`; the result has every
    /// `<no value>` removed.
    fn execute(&mut self, name: &str, data: &Value) -> Result<String, TemplateError>;
    /// Starts parsing `likely`, the files a later `add_and_execute` call
    /// will probably get, in its order, while the caller goes on; that
    /// call must give the same result whatever was parsed ahead. The
    /// default does nothing.
    fn parse_ahead(&mut self, likely: Vec<(String, Source)>) {
        let _ = likely;
    }
    /// A render starts: its output budget starts anew (the crate's engine
    /// caps a render's output, see
    /// [`RENDER_BUDGET_BYTES`](crate::template::RENDER_BUDGET_BYTES)). The
    /// default does nothing.
    fn begin_render(&mut self) {}
    /// Adds `files` as `add_templates` does, then executes, in order, each
    /// file that `data` gives data for (`None`: the file is not executed),
    /// handing each output to `done`. The error is the one `add_templates`
    /// and `execute` would give: a parse error before any execution error.
    /// An engine may execute a file before later ones are parsed, as long
    /// as the outcome is the same, and may call `data` more than once for
    /// a file.
    fn add_and_execute(
        &mut self,
        files: &[(&str, Source)],
        data: &mut dyn FnMut(usize) -> Option<Value>,
        done: &mut dyn FnMut(usize, String),
    ) -> Result<(), TemplateError> {
        self.add_templates(files)?;
        (0..files.len())
            .try_for_each(|i| execute_file(files, i, data, done, |name, d| self.execute(name, d)))
    }
}

/// One step of [`TemplateSet::add_and_execute`]: executes file `i` with
/// `execute` when `data` has data for it, and hands the output to `done`.
pub(crate) fn execute_file<E>(
    files: &[(&str, Source)],
    i: usize,
    data: &mut dyn FnMut(usize) -> Option<Value>,
    done: &mut dyn FnMut(usize, String),
    execute: impl FnOnce(&str, &Value) -> Result<String, E>,
) -> Result<(), E> {
    if let (Some((name, _)), Some(d)) = (files.get(i), data(i)) {
        done(i, execute(name, &d)?);
    }
    Ok(())
}

/// Settings of one render (what `helm template`'s flags control).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderOptions {
    /// `.Release.Name`.
    pub release_name: String,
    /// `.Release.Namespace`.
    pub namespace: String,
    /// `.Release.Revision`.
    pub revision: i64,
    /// `.Release.IsUpgrade` (and not `IsInstall`).
    pub is_upgrade: bool,
    /// `.Capabilities.KubeVersion` (`None`: Helm's default v1.32.0).
    pub kube_version: Option<String>,
    /// Extra `.Capabilities.APIVersions`.
    pub api_versions: Vec<String>,
    /// Skip `values.schema.json` validation.
    pub skip_schema_validation: bool,
    /// Append subchart NOTES to the notes (`--render-subchart-notes`).
    pub subchart_notes: bool,
    /// Missing keys are errors (Helm's SDK-only strict mode).
    pub strict: bool,
    /// Let `getHostByName` reach DNS.
    pub enable_dns: bool,
    /// Render as `helm lint`'s template rule does: the chart's
    /// dependencies and its `kubeVersion` constraint are not checked.
    #[serde(default)]
    pub lint: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            release_name: "release-name".into(),
            namespace: "default".into(),
            revision: 1,
            is_upgrade: false,
            kube_version: None,
            api_versions: Vec::new(),
            skip_schema_validation: false,
            subchart_notes: false,
            strict: false,
            enable_dns: false,
            lint: false,
        }
    }
}

/// A CRD file from a chart's `crds/` directory. The bytes are shared with
/// the chart (CRDs are often megabytes and only printed with
/// `--include-crds`); serde writes them as text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CrdFile {
    /// `<chart full path>/crds/<file>`.
    pub path: String,
    /// The raw file content.
    #[serde(with = "lossy_text")]
    pub content: FileData,
}

mod lossy_text {
    use crate::chart::FileData;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &FileData, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&String::from_utf8_lossy(v))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<FileData, D::Error> {
        Ok(FileData::from(String::deserialize(d)?))
    }
}

/// The result of rendering a chart.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Rendered {
    /// Every executed template's output by template name (NOTES excluded).
    pub files: BTreeMap<String, String>,
    /// Generic manifests in install order.
    pub manifests: Vec<Manifest>,
    /// Hooks in install (kind) order.
    pub hooks: Vec<RenderedHook>,
    /// CRD files of the chart and its enabled subcharts.
    pub crds: Vec<CrdFile>,
    /// The root chart's rendered NOTES.txt (empty when none).
    pub notes: String,
    /// Warnings Helm would log (coalescing, conditions, unknown hooks,
    /// deprecation).
    pub warnings: Vec<String>,
}

/// Why a render failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RenderError {
    /// The chart is a library chart.
    #[error("library charts are not installable")]
    NotInstallable,
    /// Declared dependencies are not present under `charts/`.
    #[error("An error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: {}", .0.join(", "))]
    MissingDependencies(Vec<String>),
    /// `--kube-version` did not parse.
    #[error(transparent)]
    KubeVersion(#[from] super::objects::KubeVersionError),
    /// Coalescing failed.
    #[error(transparent)]
    Values(#[from] ValuesError),
    /// `values.schema.json` rejected the values.
    #[error(
        "values don't meet the specifications of the schema(s) in the following chart(s):\n{0}"
    )]
    Schema(String),
    /// The chart's `kubeVersion` constraint excludes the target version.
    #[error(
        "chart requires kubeVersion: {constraint} which is incompatible with Kubernetes {version}"
    )]
    IncompatibleKubeVersion {
        /// The chart's constraint.
        constraint: String,
        /// The target version.
        version: String,
    },
    /// A template failed to parse or execute (Helm's message).
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// A rendered document is not valid YAML or not an object. `files` holds
    /// every rendered file for `--debug`.
    #[error("{error}")]
    Manifest {
        /// The decode error.
        error: ManifestError,
        /// The rendered files (name -> content).
        files: BTreeMap<String, String>,
    },
}

impl RenderError {
    /// Whether Helm had a (partial) release at this point, in which case
    /// `helm template` appends `Use --debug flag to render out invalid YAML`.
    pub fn has_partial_release(&self) -> bool {
        matches!(
            self,
            RenderError::IncompatibleKubeVersion { .. }
                | RenderError::Template(_)
                | RenderError::Manifest { .. }
        )
    }
}

/// Helm's `CheckDependencies`: every declared dependency must be loaded.
fn check_dependencies(chart: &Chart) -> Result<(), RenderError> {
    let missing: Vec<String> = chart
        .metadata
        .dependencies
        .iter()
        .filter(|r| !chart.dependencies.iter().any(|d| d.metadata.name == r.name))
        .map(|r| r.name.clone())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(RenderError::MissingDependencies(missing))
    }
}

fn is_library(chart: &Chart) -> bool {
    chart.metadata.chart_type.eq_ignore_ascii_case("library")
}

/// One template file to parse (and maybe execute).
struct TemplateFile {
    name: String,
    text: FileData,
    scope: MapRef,
    base_path: String,
}

fn new_map(kind: MapKind) -> (MapRef, Value) {
    let m: MapRef = Rc::new(RefCell::new(BTreeMap::new()));
    let v = Value::Map(m.clone(), kind);
    (m, v)
}

/// Builds the scope object of `chart` and collects its templates (Helm's
/// `recAllTpls`). Returns the scope for the parent's `.Subcharts`.
fn collect(
    chart: &Chart,
    full_path: &str,
    is_root: bool,
    values: &Value,
    shared: &(Value, Value),
    out: &mut Vec<TemplateFile>,
) -> Value {
    // Helm v3 passes each chart's scope as a `chartutil.Values`.
    let (scope, scope_value) = new_map(MapKind::Values);
    let (subcharts, subcharts_value) = new_map(MapKind::Interface);
    let own_values = if is_root {
        values.clone()
    } else {
        match values {
            Value::Map(m, _) => match m.borrow().get(&chart.metadata.name) {
                Some(Value::Map(sub, _)) => Value::Map(sub.clone(), MapKind::Values),
                _ => new_map(MapKind::Values).1,
            },
            _ => new_map(MapKind::Values).1,
        }
    };
    {
        let mut s = scope.borrow_mut();
        s.insert(
            "Chart".into(),
            Value::Object(Rc::new(ChartObject::new(
                Rc::new(chart.metadata.clone()),
                is_root,
            ))),
        );
        s.insert(
            "Files".into(),
            Value::Object(Rc::new(Files::new(&chart.files))),
        );
        s.insert("Release".into(), shared.0.clone());
        s.insert("Capabilities".into(), shared.1.clone());
        s.insert("Values".into(), own_values.clone());
        s.insert("Subcharts".into(), subcharts_value);
    }
    for sub in &chart.dependencies {
        let sub_path = subchart_path(full_path, sub);
        let sub_scope = collect(sub, &sub_path, false, &own_values, shared, out);
        subcharts
            .borrow_mut()
            .insert(sub.metadata.name.clone(), sub_scope);
    }
    let base_path = format!("{full_path}/templates");
    for (name, t) in own_templates(chart, full_path) {
        out.push(TemplateFile {
            name,
            text: t.data.clone(),
            scope: scope.clone(),
            base_path: base_path.clone(),
        });
    }
    scope_value
}

/// The path under which a subchart's files are named.
fn subchart_path(full_path: &str, sub: &Chart) -> String {
    format!("{full_path}/charts/{}", sub.metadata.name)
}

/// A chart's own template files that a render parses, with their full
/// names (a library chart contributes only its partials).
fn own_templates<'c>(
    chart: &'c Chart,
    full_path: &'c str,
) -> impl Iterator<Item = (String, &'c crate::chart::ChartFile)> {
    let library = is_library(chart);
    chart
        .templates
        .iter()
        .filter(move |t| {
            let base = t.name.rsplit('/').next().unwrap_or(&t.name);
            !library || base.starts_with('_')
        })
        .map(move |t| (format!("{full_path}/{}", t.name), t))
}

/// Helm's `sortTemplates`: more `/` first, then descending byte order.
fn sort_templates(files: &mut [TemplateFile]) {
    files.sort_by_cached_key(|t| helm_template_order(&t.name));
}

/// The sort key of Helm's template order (ascending keys): the key is
/// computed once per name, as counting slashes on every comparison was a
/// few percent of a large chart's instructions.
fn helm_template_order(name: &str) -> std::cmp::Reverse<(usize, String)> {
    let slashes = name.bytes().filter(|&c| c == b'/').count();
    std::cmp::Reverse((slashes, name.to_string()))
}

fn collect_crds(chart: &Chart, full_path: &str, out: &mut Vec<CrdFile>) {
    for f in &chart.files {
        let is_manifest = [".yaml", ".yml", ".json"]
            .iter()
            .any(|ext| f.name.ends_with(ext));
        if f.name.starts_with("crds/") && is_manifest {
            out.push(CrdFile {
                path: format!("{full_path}/{}", f.name),
                content: f.data.clone(),
            });
        }
    }
    for sub in &chart.dependencies {
        collect_crds(sub, &subchart_path(full_path, sub), out);
    }
}

/// The values a render would see, after dependency processing and
/// coalescing: `(processed chart, coalesced values)`.
pub fn prepare_values(
    chart: &Chart,
    user: &Map,
    warnings: &mut Warnings,
) -> Result<(Chart, Map), RenderError> {
    let mut chart = chart.clone();
    process_dependencies(
        warnings,
        &mut chart,
        user,
        &super::compat::is_compatible_range,
    )?;
    let vals = coalesce_values(warnings, &chart, user, false)?;
    Ok((chart, vals))
}

/// A chart ready to execute: processed dependencies, the warnings so far
/// and its templates in Helm's order, each with its scope.
struct Prepared {
    chart: Chart,
    warnings: Warnings,
    tpls: Vec<TemplateFile>,
}

/// Values, schema validation, Capabilities and scopes: everything a render
/// does between loading the chart and parsing its templates.
fn prepare_templates(
    chart: &Chart,
    user: &Map,
    opts: &RenderOptions,
    kube_version: Option<KubeVersion>,
) -> Result<Prepared, RenderError> {
    let mut warnings = Warnings::default();
    if chart.metadata.deprecated {
        warnings.0.push("This chart is deprecated".into());
    }
    let (chart, mut vals) = prepare_values(chart, user, &mut warnings)?;
    if opts.lint {
        // helm lint coalesces the chart's values once itself and once more
        // inside ToRenderValues; the second pass takes the nulls the first
        // copied from values.yaml as deletions, so they are gone.
        vals = coalesce_values(&mut Warnings::default(), &chart, &vals, false)?;
    }
    if !opts.skip_schema_validation {
        super::schema::validate(&chart, &vals).map_err(RenderError::Schema)?;
    }
    let caps = Capabilities::new(kube_version, &opts.api_versions);
    if !opts.lint
        && !chart.metadata.kube_version.is_empty()
        && !super::compat::is_compatible_range(
            &chart.metadata.kube_version,
            &caps.kube_version.version,
        )
    {
        return Err(RenderError::IncompatibleKubeVersion {
            constraint: chart.metadata.kube_version.clone(),
            version: caps.kube_version.version.clone(),
        });
    }

    let values = match node_to_value(&Node::Map(vals)) {
        Value::Map(m, _) => Value::Map(m, MapKind::Values),
        other => other,
    };
    let shared = (
        release_value(
            &opts.release_name,
            &opts.namespace,
            opts.is_upgrade,
            opts.revision,
        ),
        Value::Object(Rc::new(caps)),
    );
    let root_name = chart.metadata.name.clone();
    let mut tpls = Vec::new();
    collect(&chart, &root_name, true, &values, &shared, &mut tpls);
    sort_templates(&mut tpls);
    // Go's template map keeps one file per name.
    tpls.dedup_by(|a, b| a.name == b.name);
    Ok(Prepared {
        chart,
        warnings,
        tpls,
    })
}

/// The template files of `chart` as loaded, named as [`collect`] names
/// them: what a render will parse unless dependency processing disables
/// or renames a subchart.
fn likely_templates(chart: &Chart) -> Vec<(String, Source)> {
    fn walk(chart: &Chart, full_path: &str, out: &mut Vec<(String, Source)>) {
        for sub in &chart.dependencies {
            walk(sub, &subchart_path(full_path, sub), out);
        }
        out.extend(
            own_templates(chart, full_path)
                .map(|(name, t)| (name, Source::from_bytes(t.data.clone()))),
        );
    }
    let mut out = Vec::new();
    walk(chart, &chart.metadata.name, &mut out);
    out.sort_by_cached_key(|(name, _)| helm_template_order(name));
    out
}

/// Loads the chart at `path` ([`crate::chart::load()`]) to render it through
/// `engine`: the engine starts parsing the chart's templates
/// ([`TemplateSet::parse_ahead`]) as soon as they are read, while the
/// values files decode, and a later [`render_with`] on the same engine
/// takes those parses. The chart (or the error) is `load`'s.
///
/// ```
/// use rudder::render::{engine_for, load_for, render_with, RenderOptions};
/// # let dir = tempfile::tempdir().unwrap();
/// # std::fs::create_dir(dir.path().join("templates")).unwrap();
/// # std::fs::write(dir.path().join("Chart.yaml"), "apiVersion: v2\nname: demo\nversion: 0.1.0\n").unwrap();
/// # std::fs::write(dir.path().join("values.yaml"), "name: web\n").unwrap();
/// # std::fs::write(dir.path().join("templates/cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name }}\n").unwrap();
/// let opts = RenderOptions::default();
/// let mut engine = engine_for(&opts);
/// let chart = load_for(&mut engine, dir.path())?;
/// let rendered = render_with(&mut engine, &chart, &Default::default(), &opts)?;
/// assert!(rendered.manifests[0].content.contains("name: web"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn load_for(
    engine: &mut dyn TemplateSet,
    path: impl AsRef<std::path::Path>,
) -> Result<Chart, LoadError> {
    crate::chart::load_inspecting(path, &mut |chart| {
        engine.parse_ahead(likely_templates(chart))
    })
}

/// [`load_for`] with the files of a chart directory mapped, as
/// [`crate::chart::load_mapped`] maps them.
///
/// # Safety
///
/// As for [`crate::chart::load_mapped`]: the chart's files must not change
/// while the chart, or anything sharing its bytes (the engine's parsed
/// templates included), is alive.
#[allow(unsafe_code)]
pub unsafe fn load_mapped_for(
    engine: &mut dyn TemplateSet,
    path: impl AsRef<std::path::Path>,
) -> Result<Chart, LoadError> {
    // The caller vouched for the files (see Safety).
    crate::chart::load_mapped_inspecting(path, &mut |chart| {
        engine.parse_ahead(likely_templates(chart))
    })
}

/// Checks, values, and the execution of every non-partial template.
fn execute_all(
    engine: &mut dyn TemplateSet,
    chart: &Chart,
    user: &Map,
    opts: &RenderOptions,
) -> Result<(Chart, BTreeMap<String, String>, Warnings), RenderError> {
    let mut files = BTreeMap::new();
    let (chart, warnings) = execute_all_into(engine, chart, user, opts, &mut |name, out| {
        files.insert(name, out);
    })?;
    Ok((chart, files, warnings))
}

/// [`execute_all`], handing each executed file (name, output) to `sink` as
/// soon as it is done, in execution order.
fn execute_all_into(
    engine: &mut dyn TemplateSet,
    chart: &Chart,
    user: &Map,
    opts: &RenderOptions,
    sink: &mut dyn FnMut(String, String),
) -> Result<(Chart, Warnings), RenderError> {
    // helm lint renders a library chart too (only its partials exist
    // for the engine); installing one is refused.
    if is_library(chart) && !opts.lint {
        return Err(RenderError::NotInstallable);
    }
    if !opts.lint {
        check_dependencies(chart)?;
    }
    let kube_version = match &opts.kube_version {
        Some(k) => Some(KubeVersion::parse(k)?),
        None => None,
    };
    // Values, schema and scopes take a while; the templates they lead to
    // are mostly known already (those of disabled subcharts are not used,
    // renamed aliases are parsed again), so the engine may parse them
    // meanwhile.
    engine.parse_ahead(likely_templates(chart));
    let Prepared {
        chart,
        warnings,
        tpls,
    } = match prepare_templates(chart, user, opts, kube_version) {
        Ok(p) => p,
        Err(e) => {
            // Nothing will be executed: stop the parse.
            engine.parse_ahead(Vec::new());
            return Err(e);
        }
    };
    // A file's bytes are shared with its parse trees (parsing reads bytes
    // that are not UTF-8 with Go's lossy conversion).
    let named: Vec<(&str, Source)> = tpls
        .iter()
        .map(|t| (t.name.as_str(), Source::from_bytes(t.text.clone())))
        .collect();
    let mut data = |i: usize| {
        let t = tpls.get(i)?;
        let base = t.name.rsplit('/').next().unwrap_or(&t.name);
        if base.starts_with('_') {
            return None;
        }
        t.scope
            .borrow_mut()
            .insert("Template".into(), template_value(&t.name, &t.base_path));
        Some(Value::Map(t.scope.clone(), MapKind::Values))
    };
    let mut done = |i: usize, out: String| {
        if let Some(t) = tpls.get(i) {
            sink(t.name.clone(), out);
        }
    };
    engine.add_and_execute(&named, &mut data, &mut done)?;
    Ok((chart, warnings))
}

/// Template text (bytes, subcharts included) from which rendering decodes
/// the rendered documents on a second thread while templates still
/// execute. Below it, starting and waking a thread costs more than the
/// decoding it would take over.
const OVERLAP_MIN_TEMPLATE_BYTES: usize = 256 * 1024;

/// Rendered output handed to the decoding helper at a time.
const DECODE_BATCH_BYTES: usize = 64 * 1024;

fn template_bytes(chart: &Chart) -> usize {
    chart.templates.iter().map(|f| f.data.len()).sum::<usize>()
        + chart.dependencies.iter().map(template_bytes).sum::<usize>()
}

/// Each rendered document's head, by file name and document index, as
/// [`sort_manifests`] would decode them (NOTES files are skipped).
type DecodedHeads = std::collections::HashMap<String, Vec<Result<Node, String>>>;

fn decode_heads(name: &str, out: &str) -> Option<Vec<Result<Node, String>>> {
    if name.ends_with("NOTES.txt") || !super::manifests::holds_manifests(name, out) {
        return None;
    }
    Some(
        crate::manifest::split::split_manifests(out)
            .into_iter()
            .map(super::compat::parse_manifest_head)
            .collect(),
    )
}

/// Executes every template as [`execute_all`] does. With enough template
/// text, a scoped helper thread splits and decodes each file's documents
/// while the next files execute; the decoded heads come back with the files.
fn execute_and_decode(
    engine: &mut dyn TemplateSet,
    chart: &Chart,
    user: &Map,
    opts: &RenderOptions,
) -> Result<(Chart, BTreeMap<String, String>, Warnings, DecodedHeads), RenderError> {
    if template_bytes(chart) < OVERLAP_MIN_TEMPLATE_BYTES {
        let (chart, files, warnings) = execute_all(engine, chart, user, opts)?;
        return Ok((chart, files, warnings, DecodedHeads::new()));
    }
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<(String, String)>>();
        let helper = scope.spawn(move || {
            let mut files = BTreeMap::new();
            let mut decoded = DecodedHeads::new();
            for (name, out) in rx.into_iter().flatten() {
                if let Some(heads) = decode_heads(&name, &out) {
                    decoded.insert(name.clone(), heads);
                }
                files.insert(name, out);
            }
            (files, decoded)
        });
        // Files go over in batches of some output each: a send per file
        // woke the helper (a futex call and a context switch on each side)
        // some hundred times per large chart for little work each time.
        let mut batch = Vec::new();
        let mut batch_bytes = 0;
        let executed = execute_all_into(engine, chart, user, opts, &mut |name, out| {
            batch_bytes += out.len();
            batch.push((name, out));
            if batch_bytes >= DECODE_BATCH_BYTES {
                batch_bytes = 0;
                // The helper only stops by panicking; that surfaces at join.
                let _ = tx.send(std::mem::take(&mut batch));
            }
        });
        if !batch.is_empty() {
            let _ = tx.send(batch);
        }
        drop(tx);
        let (files, decoded) = match helper.join() {
            Ok(r) => r,
            Err(payload) => std::panic::resume_unwind(payload),
        };
        let (chart, warnings) = executed?;
        Ok((chart, files, warnings, decoded))
    })
}

/// Renders every template of `chart` and returns the executed files by
/// template name (NOTES included, partials excluded), without decoding the
/// output: what `helm lint` checks.
pub fn render_files(
    engine: &mut dyn TemplateSet,
    chart: &Chart,
    user: &Map,
    opts: &RenderOptions,
) -> Result<BTreeMap<String, String>, RenderError> {
    execute_all(engine, chart, user, opts).map(|(_, files, _)| files)
}

/// Renders `chart` with user-supplied values through `engine`.
pub fn render_with(
    engine: &mut dyn TemplateSet,
    chart: &Chart,
    user: &Map,
    opts: &RenderOptions,
) -> Result<Rendered, RenderError> {
    engine.begin_render();
    let (chart, mut files, mut warnings, decoded) = execute_and_decode(engine, chart, user, opts)?;
    let root_name = chart.metadata.name.clone();
    let root_notes = format!("{root_name}/templates/NOTES.txt");
    let mut notes = String::new();
    let note_names: Vec<String> = files
        .keys()
        .filter(|k| k.ends_with("NOTES.txt"))
        .cloned()
        .collect();
    for k in note_names {
        if let Some(v) = files.remove(&k) {
            if opts.subchart_notes || k == root_notes {
                if !notes.is_empty() {
                    notes.push('\n');
                }
                notes.push_str(&v);
            }
        }
    }

    let sorted = match sort_manifests_by(&files, &|path, index, doc| match decoded
        .get(path)
        .and_then(|heads| heads.get(index))
    {
        Some(head) => head.clone(),
        None => super::compat::parse_manifest_head(doc),
    }) {
        Ok(s) => s,
        Err(error) => return Err(RenderError::Manifest { error, files }),
    };
    warnings.0.extend(sorted.infos);
    let mut crds = Vec::new();
    collect_crds(&chart, &root_name, &mut crds);
    Ok(Rendered {
        files,
        manifests: sorted.manifests,
        hooks: sorted.hooks,
        crds,
        notes,
        warnings: warnings.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::{ChartFile, Metadata};

    /// Outputs each template's text verbatim and records execution order.
    #[derive(Default)]
    struct Verbatim {
        texts: BTreeMap<String, String>,
        parsed: Vec<String>,
        executed: Vec<String>,
    }

    impl TemplateSet for Verbatim {
        fn add_template(&mut self, name: &str, text: &str) -> Result<(), TemplateError> {
            self.parsed.push(name.to_string());
            self.texts.insert(name.to_string(), text.to_string());
            Ok(())
        }
        fn execute(&mut self, name: &str, data: &Value) -> Result<String, TemplateError> {
            self.executed.push(name.to_string());
            let fail = |message: String| TemplateError {
                kind: crate::template::TemplateErrorKind::Exec,
                template: name.to_string(),
                line: None,
                column: None,
                go: message.clone(),
                message,
            };
            let Value::Map(m, _) = data else {
                return Err(fail("no scope".into()));
            };
            let m = m.borrow();
            let t = m.get("Template").map(|t| t.to_string()).unwrap_or_default();
            if !t.contains(name) {
                return Err(fail(format!("bad .Template {t}")));
            }
            Ok(self.texts.get(name).cloned().unwrap_or_default())
        }
    }

    fn file(name: &str, data: &str) -> ChartFile {
        ChartFile {
            name: name.into(),
            data: data.as_bytes().to_vec().into(),
        }
    }

    fn chart() -> Chart {
        let sub = Chart {
            metadata: Metadata {
                name: "sub".into(),
                version: "1.0.0".into(),
                ..Default::default()
            },
            templates: vec![file(
                "templates/cm.yaml",
                "kind: ConfigMap\nmetadata:\n  name: s",
            )],
            files: vec![file("crds/c.yaml", "kind: CustomResourceDefinition\n")],
            ..Default::default()
        };
        Chart {
            metadata: Metadata {
                name: "top".into(),
                version: "1.0.0".into(),
                ..Default::default()
            },
            templates: vec![
                file("templates/_helpers.tpl", "{{ define \"x\" }}{{ end }}"),
                file("templates/a.yaml", "kind: Deployment\nmetadata:\n  name: a"),
                file(
                    "templates/deep/b.yaml",
                    "kind: Namespace\nmetadata:\n  name: b",
                ),
                file("templates/NOTES.txt", "notes here"),
            ],
            dependencies: vec![sub],
            ..Default::default()
        }
    }

    #[test]
    fn parse_order_and_outputs() {
        let mut e = Verbatim::default();
        let r = render_with(&mut e, &chart(), &Map::new(), &RenderOptions::default()).unwrap();
        assert_eq!(
            e.parsed,
            [
                "top/charts/sub/templates/cm.yaml",
                "top/templates/deep/b.yaml",
                "top/templates/a.yaml",
                "top/templates/_helpers.tpl",
                "top/templates/NOTES.txt",
            ]
        );
        assert!(!e.executed.iter().any(|n| n.contains("_helpers")));
        assert_eq!(r.notes, "notes here");
        let order: Vec<_> = r.manifests.iter().map(|m| m.head.name.as_str()).collect();
        assert_eq!(order, ["b", "s", "a"]);
        assert_eq!(r.crds[0].path, "top/charts/sub/crds/c.yaml");
        assert!(!r.files.contains_key("top/templates/NOTES.txt"));
    }

    /// A template error names its file, line and column as fields, and
    /// prints Helm's text: a parse error, an execution error in a helper
    /// (where Go places it), and `required`.
    #[test]
    fn template_errors_carry_their_place() {
        let place = |files: &[(&str, &str)]| {
            let mut c = chart();
            c.templates
                .extend(files.iter().map(|(name, text)| file(name, text)));
            match crate::render::render(&c, &Map::new(), &RenderOptions::default()) {
                Err(RenderError::Template(t)) => {
                    (t.kind, t.template.clone(), t.line, t.column, t.to_string())
                }
                other => panic!("not a template error: {other:?}"),
            }
        };
        use crate::template::TemplateErrorKind::{Exec, Parse};
        assert_eq!(
            place(&[("templates/p.yaml", "a: 1\nb: {{ .Values.x }\n")]),
            (
                Parse,
                "top/templates/p.yaml".into(),
                Some(2),
                Some(16),
                "parse error at (top/templates/p.yaml:2): unexpected \"}\" in operand".into()
            )
        );
        // `template` runs the define in place: the error is in its file.
        let helper = (
            "templates/_h.tpl",
            "{{ define \"h\" }}\n  {{ .Values.a.b }}{{ end }}",
        );
        assert_eq!(
            place(&[helper, ("templates/t.yaml", "x: {{ template \"h\" . }}")]),
            (
                Exec,
                "top/templates/_h.tpl".into(),
                Some(2),
                Some(12),
                "template: top/templates/_h.tpl:2:12: executing \"h\" at <.Values.a.b>: nil pointer evaluating interface {}.b".into()
            )
        );
        // `include` is a function: the error is at the call.
        let (kind, template, line, column, _) =
            place(&[helper, ("templates/i.yaml", "x: {{ include \"h\" . }}")]);
        assert_eq!(
            (kind, template.as_str(), line, column),
            (Exec, "top/templates/i.yaml", Some(1), Some(6))
        );
        assert_eq!(
            place(&[("templates/r.yaml", "a: {{ required \"need x\" .Values.x }}")]),
            (
                Exec,
                "top/templates/r.yaml".into(),
                Some(1),
                Some(6),
                "execution error at (top/templates/r.yaml:1:6): need x".into()
            )
        );
    }

    /// A template that is not UTF-8 keeps its bytes, as a Go string does:
    /// they reach the output raw, where the YAML decoder refuses them as
    /// Helm's does; bytes in a template comment never reach it.
    #[test]
    fn templates_that_are_not_utf8() {
        let mut c = chart();
        c.templates.push(ChartFile {
            name: "templates/bad.yaml".into(),
            data: b"kind: ConfigMap\nmetadata:\n  name: bad\ndata:\n  x: \"a\xffb {{ 1 }}\"\n"
                .to_vec()
                .into(),
        });
        let e = crate::render::render(&c, &Map::new(), &RenderOptions::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "YAML parse error on top/templates/bad.yaml: error converting YAML to JSON: yaml: invalid leading UTF-8 octet"
        );
        c.templates.last_mut().unwrap().data =
            b"kind: ConfigMap\nmetadata:\n  name: bad\n{{/* a\xffb */}}x: {{ 1 }}\n"
                .to_vec()
                .into();
        let r = crate::render::render(&c, &Map::new(), &RenderOptions::default()).unwrap();
        assert_eq!(
            r.files["top/templates/bad.yaml"],
            "kind: ConfigMap\nmetadata:\n  name: bad\nx: 1\n"
        );
        assert_eq!(
            r.files["top/templates/a.yaml"],
            "kind: Deployment\nmetadata:\n  name: a"
        );
    }

    /// Big charts decode documents on a helper thread while templates
    /// execute; the outcome, first error included, is the sequential one.
    #[test]
    fn overlapped_decoding_matches_sequential() {
        let padding = format!("# {}\n", "x".repeat(OVERLAP_MIN_TEMPLATE_BYTES));
        let mut big = chart();
        big.templates.push(file(
            "templates/padded.yaml",
            &format!(
                "{padding}kind: Secret\nmetadata:\n  name: p\n---\nkind: Pod\nmetadata:\n  name: q"
            ),
        ));
        assert!(template_bytes(&big) >= OVERLAP_MIN_TEMPLATE_BYTES);
        let opts = RenderOptions::default();
        let r = render_with(&mut Verbatim::default(), &big, &Map::new(), &opts).unwrap();
        let (_, mut files, _) =
            execute_all(&mut Verbatim::default(), &big, &Map::new(), &opts).unwrap();
        files.remove("top/templates/NOTES.txt");
        assert!(r.files == files, "{:?}", r.files.keys().collect::<Vec<_>>());
        let sequential = super::super::manifests::sort_manifests(
            &files,
            &super::super::compat::parse_manifest_head,
        )
        .unwrap();
        assert_eq!(r.manifests, sequential.manifests);
        let order: Vec<_> = r.manifests.iter().map(|m| m.head.name.as_str()).collect();
        assert_eq!(order, ["b", "p", "s", "q", "a"]);
        // Two undecodable files: the first in name order is reported.
        big.templates.push(file("templates/z.yaml", "kind: [x"));
        big.templates.push(file("templates/b.yaml", "just text"));
        let err = render_with(&mut Verbatim::default(), &big, &Map::new(), &opts).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("YAML parse error on top/templates/b.yaml"),
            "{err}"
        );
    }

    #[test]
    fn library_and_missing_dependencies() {
        let mut c = chart();
        c.metadata.chart_type = "Library".into();
        let mut e = Verbatim::default();
        assert_eq!(
            render_with(&mut e, &c, &Map::new(), &RenderOptions::default()).unwrap_err(),
            RenderError::NotInstallable
        );
        let mut c = chart();
        c.metadata.dependencies.push(crate::chart::Dependency {
            name: "nope".into(),
            ..Default::default()
        });
        let err = render_with(&mut e, &c, &Map::new(), &RenderOptions::default()).unwrap_err();
        assert!(err
            .to_string()
            .ends_with("missing in charts/ directory: nope"));
    }

    #[test]
    fn invalid_yaml_keeps_files_for_debug() {
        let mut c = chart();
        c.templates
            .push(file("templates/bad.yaml", "just a string"));
        let mut e = Verbatim::default();
        let err = render_with(&mut e, &c, &Map::new(), &RenderOptions::default()).unwrap_err();
        assert!(err.has_partial_release());
        match err {
            RenderError::Manifest { files, .. } => {
                assert!(files.contains_key("top/templates/bad.yaml"))
            }
            other => panic!("{other:?}"),
        }
    }
}
