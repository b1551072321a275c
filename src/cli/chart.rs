//! `rudder chart from-manifests`, `package`, `lint`, `show chart|values` and
//! `build-fixtures`: thin wrappers over [`rudder::chart`].
use clap::{Args, Subcommand};
use rudder::chart::{self, lint, BuildOptions, Chart};
use std::collections::BTreeMap;
use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

type CliResult = Result<(), Box<dyn Error>>;

pub use rudder::error_chain;

/// Prints `Error: ...` to stderr and returns a failing exit code.
pub fn fail(e: &dyn Error) -> ExitCode {
    eprintln!("Error: {}", error_chain(e));
    ExitCode::FAILURE
}

fn finish(r: CliResult) -> ExitCode {
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(e.as_ref()),
    }
}

/// `rudder chart ...`.
#[derive(Debug, Args)]
pub struct ChartArgs {
    #[command(subcommand)]
    command: ChartCommand,
}

#[derive(Debug, Subcommand)]
enum ChartCommand {
    /// Build a chart from rendered Kubernetes manifests.
    FromManifests(FromManifestsArgs),
}

/// `rudder chart from-manifests`.
#[derive(Debug, Args)]
pub struct FromManifestsArgs {
    /// Chart (and release) name.
    #[arg(long)]
    name: String,
    /// Chart version.
    #[arg(long, default_value = chart::build::DEFAULT_VERSION)]
    version: String,
    /// Release namespace (a Namespace object of that name is dropped).
    #[arg(long)]
    namespace: String,
    /// Manifest files or directories (template names are paths relative to a
    /// directory given, or a file's base name).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Output: a chart directory, or a `.tgz` file for a package.
    #[arg(long, short = 'o')]
    output: PathBuf,
    /// Replace an existing output: a `.tgz` file, or a directory holding a
    /// chart (one with a Chart.yaml). Without it both are refused.
    #[arg(long)]
    force: bool,
}

/// `rudder package`.
#[derive(Debug, Args)]
pub struct PackageArgs {
    /// The chart directories (or archives) to package, in order.
    charts: Vec<PathBuf>,
    /// Location to write the chart.
    #[arg(short = 'd', long, default_value = ".")]
    destination: PathBuf,
    /// Set the version on the chart to this semver version.
    #[arg(long)]
    version: Option<String>,
    /// Set the appVersion on the chart to this version.
    #[arg(long)]
    app_version: Option<String>,
}

/// `rudder lint`.
#[derive(Debug, Args)]
pub struct LintArgs {
    /// Chart directories or archives.
    #[arg(default_value = ".")]
    charts: Vec<PathBuf>,
    /// Fail on lint warnings.
    #[arg(long)]
    strict: bool,
    /// Print only warnings and errors.
    #[arg(long)]
    quiet: bool,
    /// Namespace to render templates in.
    #[arg(short = 'n', long, default_value = "default")]
    namespace: String,
    #[command(flatten)]
    values: super::values::ValuesArgs,
    /// Kubernetes version used for capabilities and deprecation checks.
    #[arg(long)]
    kube_version: Option<String>,
    /// Lint dependent charts.
    #[arg(long)]
    with_subcharts: bool,
    /// Disable JSON schema validation.
    #[arg(long)]
    skip_schema_validation: bool,
    #[command(flatten)]
    source: super::source::ChartPathArgs,
}

/// `rudder show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(subcommand)]
    what: ShowWhat,
}

#[derive(Debug, Subcommand)]
enum ShowWhat {
    /// Show the chart's definition (Chart.yaml as Helm writes it).
    Chart {
        /// The chart: a directory, a `.tgz`, `REPO/CHART`, `oci://...` or a URL.
        chart: String,
        #[command(flatten)]
        source: super::source::ChartPathArgs,
    },
    /// Show the chart's values.yaml.
    Values {
        /// The chart: a directory, a `.tgz`, `REPO/CHART`, `oci://...` or a URL.
        chart: String,
        #[command(flatten)]
        source: super::source::ChartPathArgs,
        /// Supply a JSONPath expression to filter the output.
        #[arg(long)]
        jsonpath: Option<String>,
    },
    /// Show the chart's README.
    Readme {
        /// The chart: a directory, a `.tgz`, `REPO/CHART`, `oci://...` or a URL.
        chart: String,
        #[command(flatten)]
        source: super::source::ChartPathArgs,
    },
    /// Show the chart's CRDs (its subcharts' too).
    Crds {
        /// The chart: a directory, a `.tgz`, `REPO/CHART`, `oci://...` or a URL.
        chart: String,
        #[command(flatten)]
        source: super::source::ChartPathArgs,
    },
    /// Show all information of the chart.
    All {
        /// The chart: a directory, a `.tgz`, `REPO/CHART`, `oci://...` or a URL.
        chart: String,
        #[command(flatten)]
        source: super::source::ChartPathArgs,
    },
}

/// `rudder build-fixtures`.
#[derive(Debug, Args)]
pub struct BuildFixturesArgs {
    /// Folder to write the charts to (a directory and a package per chart).
    #[arg(long, short = 'o')]
    output: PathBuf,
}

/// Runs `rudder chart ...`.
pub fn chart(a: ChartArgs) -> ExitCode {
    match a.command {
        ChartCommand::FromManifests(a) => finish(from_manifests(a)),
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Msg(String);

fn msg(s: impl Into<String>) -> Box<dyn Error> {
    Box::new(Msg(s.into()))
}

fn collect_dir(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) -> CliResult {
    collect_dir_guarded(root, dir, out, &mut Vec::new())
}

/// Walks `dir` recursively, following symlinks but refusing cycles.
fn collect_dir_guarded(
    root: &Path,
    dir: &Path,
    out: &mut Vec<(String, PathBuf)>,
    stack: &mut Vec<PathBuf>,
) -> CliResult {
    let canon = std::fs::canonicalize(dir).map_err(|e| msg(format!("{}: {e}", dir.display())))?;
    if stack.contains(&canon) {
        return Err(msg(format!("{}: symbolic link cycle", dir.display())));
    }
    stack.push(canon);
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| msg(format!("{}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect_dir_guarded(root, &p, out, stack)?;
        } else {
            let rel = p.strip_prefix(root).unwrap_or(&p);
            let name = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            out.push((name, p));
        }
    }
    stack.pop();
    Ok(())
}

/// Reads manifest files: directories recursively (names relative to them),
/// files by base name.
fn read_manifests(paths: &[PathBuf]) -> Result<BTreeMap<String, String>, Box<dyn Error>> {
    let mut found = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| msg(format!("{}: {e}", p.display())))?;
        if meta.is_dir() {
            collect_dir(p, p, &mut found)?;
        } else {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            found.push((name, p.clone()));
        }
    }
    let mut out = BTreeMap::new();
    let mut from: BTreeMap<String, PathBuf> = BTreeMap::new();
    for (name, path) in found {
        if let Some(prev) = from.get(&name) {
            return Err(msg(format!(
                "{} and {} both give the manifest name {name:?}",
                prev.display(),
                path.display()
            )));
        }
        let bytes = std::fs::read(&path).map_err(|e| msg(format!("{}: {e}", path.display())))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| msg(format!("{}: not UTF-8 text", path.display())))?;
        from.insert(name.clone(), path);
        out.insert(name, text);
    }
    Ok(out)
}

fn write_chart_dir(c: &Chart, dir: &Path, force: bool) -> CliResult {
    if dir.exists() {
        let non_empty = std::fs::read_dir(dir)
            .map_err(|e| msg(format!("{}: {e}", dir.display())))?
            .next()
            .is_some();
        if non_empty {
            // --force replaces a chart, never any other directory: its
            // old files would otherwise become part of the new chart.
            if !force {
                return Err(msg(format!(
                    "output directory {} is not empty (--force replaces a chart directory)",
                    dir.display()
                )));
            }
            if !dir.join("Chart.yaml").is_file() {
                return Err(msg(format!(
                    "output directory {} is not empty and holds no chart (no Chart.yaml): not replacing it, even with --force",
                    dir.display()
                )));
            }
            std::fs::remove_dir_all(dir).map_err(|e| msg(format!("{}: {e}", dir.display())))?;
        }
    }
    chart::save_dir(c, dir)?;
    Ok(())
}

fn from_manifests(a: FromManifestsArgs) -> CliResult {
    let manifests = read_manifests(&a.paths)?;
    let mut opts = BuildOptions::new(&a.name, &a.namespace);
    opts.version = a.version;
    let c = chart::chart_from_manifests_with(&opts, &manifests)?;
    let out = a.output;
    if out.to_string_lossy().ends_with(".tgz") {
        if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| msg(format!("{}: {e}", parent.display())))?;
        }
        if !a.force && std::fs::symlink_metadata(&out).is_ok() {
            return Err(msg(format!(
                "output {} exists (--force replaces it)",
                out.display()
            )));
        }
        chart::package::save_to_file(&c, &out)?;
    } else {
        write_chart_dir(&c, &out, a.force)?;
    }
    println!(
        "Built chart {} {} in {}",
        c.metadata.name,
        c.metadata.version,
        out.display()
    );
    Ok(())
}

/// Runs `rudder package`.
pub fn package(a: PackageArgs) -> ExitCode {
    // Helm packages the charts in order and stops at the first failure,
    // after reporting the ones it saved.
    finish((|| {
        // (No path at all is a usage error, caught before this.)
        for p in &a.charts {
            package_one(p, &a)?;
        }
        Ok(())
    })())
}

/// Packages one chart as `helm package` does, and says where it went.
fn package_one(chart_path: &Path, a: &PackageArgs) -> CliResult {
    let mut c = chart::load(chart_path)?;
    // Helm rewrites Chart.yaml's fields (and so the archive name), then
    // checks the version is SemVer (Masterminds' lenient parse).
    // An empty flag leaves the field alone, as in Helm.
    if let Some(v) = a.version.as_ref().filter(|v| !v.is_empty()) {
        c.metadata.version = v.clone();
    }
    if chart::semver::parse_lenient(&c.metadata.version).is_err() {
        return Err(msg("Invalid Semantic Version"));
    }
    if let Some(v) = a.app_version.as_ref().filter(|v| !v.is_empty()) {
        c.metadata.app_version = v.clone();
    }
    // Helm saves into the working directory for `.`, else joins the
    // destination as given (Go's filepath.Join, lexically cleaned).
    let dest = if a.destination == Path::new(".") {
        std::env::current_dir().map_err(|e| msg(format!("getwd: {e}")))?
    } else {
        a.destination.clone()
    };
    let path = chart::save_archive(&c, &dest)?;
    println!(
        "Successfully packaged chart and saved it to: {}",
        path.display()
    );
    Ok(())
}

/// `--with-subcharts`: Helm walks each path's `charts/` folder (lexical
/// order, symlinks not followed) and adds every folder holding a
/// `Chart.yaml` and every `.tgz`/`.tar.gz` file, after the given paths.
fn with_subcharts(paths: &[PathBuf]) -> Vec<PathBuf> {
    fn walk(p: &Path, out: &mut Vec<PathBuf>) {
        let Ok(meta) = std::fs::symlink_metadata(p) else {
            return;
        };
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        if name.as_deref() == Some("Chart.yaml") {
            out.push(p.parent().map(Path::to_path_buf).unwrap_or_default());
        } else {
            let s = p.to_string_lossy();
            if s.ends_with(".tgz") || s.ends_with(".tar.gz") {
                out.push(p.to_path_buf());
            }
        }
        if !meta.is_dir() {
            return;
        }
        let Ok(rd) = std::fs::read_dir(p) else { return };
        let mut names: Vec<_> = rd.filter_map(|e| e.ok().map(|e| e.file_name())).collect();
        names.sort();
        for n in names {
            walk(&p.join(n), out);
        }
    }
    let mut out = paths.to_vec();
    for p in paths {
        walk(&p.join("charts"), &mut out);
    }
    out
}

/// Runs `rudder lint`.
pub fn lint(a: LintArgs) -> ExitCode {
    let kube_version = match &a.kube_version {
        Some(v) => match rudder::render::objects::KubeVersion::parse(v) {
            Ok(_) => Some(v.clone()),
            Err(e) => return fail(&e),
        },
        None => None,
    };
    // A chart that is not on disk but names one elsewhere (`REPO/CHART`,
    // `oci://...`, a URL) is fetched and linted from the cache; anything
    // else is left to lint, which reports a missing path as Helm does.
    let mut given = Vec::new();
    for p in &a.charts {
        let arg = p.to_string_lossy();
        let remote = !p.exists()
            && rudder::source::reference::parse_arg(&arg, a.source.repo.as_deref())
                .is_ok_and(|r| !matches!(r, rudder::source::ChartRef::Local { .. }));
        if remote {
            match rudder::source::resolve::locate(&arg, &a.source.locate()) {
                Ok(path) => given.push(path),
                Err(e) => return fail(&e),
            }
        } else {
            given.push(p.clone());
        }
    }
    let charts = if a.with_subcharts {
        with_subcharts(&given)
    } else {
        given
    };
    let values = match a.values.user_values() {
        Ok(v) => v,
        Err(e) => return fail(&*msg(e)),
    };
    // Each path gets its own renderer, as each `helm lint` path gets its
    // own engine.
    let results: Vec<_> = charts
        .iter()
        .map(|p| {
            let mut renderer = rudder::render::lint::Linter::default();
            renderer.values = values.clone();
            renderer.kube_version = kube_version.clone();
            renderer.skip_schema_validation = a.skip_schema_validation;
            let opts = lint::LintOptions {
                namespace: a.namespace.clone(),
                renderer: &renderer,
            };
            lint::lint(p, &opts)
        })
        .collect();
    // Helm's engine logs these while it renders, before the report, with
    // Go's log prefix (the source line in Helm's engine.go).
    for line in results.iter().flat_map(|r| &r.log) {
        if line.starts_with("coalesce.go:") || line.starts_with("dependencies.go:") {
            // Values and dependency warnings come with their origin already.
            eprintln!("{line}");
            continue;
        }
        let origin = if line.starts_with("[INFO] Fail:") {
            "engine.go:227"
        } else {
            "engine.go:206"
        };
        eprintln!("{origin}: {line}");
    }
    let rep = lint::report(&results, a.strict, a.quiet);
    print!("{}", rep.stdout);
    if rep.failed {
        eprintln!("Error: {}", rep.summary);
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// What `helm show` prints, in its order: Chart.yaml, values, README,
/// CRDs (`all` separates the parts present with `---`).
#[derive(Clone, Copy, PartialEq)]
enum ShowPart {
    Chart,
    Values,
    Readme,
    Crds,
    All,
}

fn show_text(c: &Chart, part: ShowPart, jsonpath: Option<&str>) -> Result<String, Box<dyn Error>> {
    let all = part == ShowPart::All;
    let mut out = String::new();
    if part == ShowPart::Chart || all {
        out.push_str(&chart::metadata::metadata_to_yaml(&c.metadata));
        out.push('\n');
    }
    // Helm has values (possibly empty) exactly when values.yaml exists.
    let raw_values = c.raw.iter().find(|f| f.name == "values.yaml");
    if let (true, Some(v)) = (part == ShowPart::Values || all, raw_values) {
        if all {
            out.push_str("---\n");
        }
        match jsonpath.filter(|j| !j.is_empty()) {
            Some(t) => {
                let values = c
                    .values
                    .clone()
                    .unwrap_or(rudder::yaml::Node::Map(Default::default()));
                let text = rudder::jsonpath::show_values(t, &values)
                    .map_err(|e| msg(format!("error parsing jsonpath {t}: {e}")))?;
                out.push_str(&text);
            }
            None => {
                out.push_str(&String::from_utf8_lossy(&v.data));
                out.push('\n');
            }
        }
    }
    if part == ShowPart::Readme || all {
        if let Some(r) = c.readme() {
            if all {
                out.push_str("---\n");
            }
            out.push_str(&String::from_utf8_lossy(&r.data));
            out.push('\n');
        }
    }
    if part == ShowPart::Crds || all {
        let crds = c.crd_objects();
        if let Some(first) = crds.first() {
            if all && !first.data.starts_with(b"---") {
                out.push_str("---\n");
            }
            for f in crds {
                out.push_str(&String::from_utf8_lossy(&f.data));
                out.push('\n');
            }
        }
    }
    Ok(out)
}

/// Runs `rudder show ...`.
pub fn show(a: ShowArgs) -> ExitCode {
    finish((|| {
        let (p, part, jsonpath) = match a.what {
            ShowWhat::Chart { chart, source } => ((chart, source), ShowPart::Chart, None),
            ShowWhat::Values {
                chart,
                source,
                jsonpath,
            } => ((chart, source), ShowPart::Values, jsonpath),
            ShowWhat::Readme { chart, source } => ((chart, source), ShowPart::Readme, None),
            ShowWhat::Crds { chart, source } => ((chart, source), ShowPart::Crds, None),
            ShowWhat::All { chart, source } => ((chart, source), ShowPart::All, None),
        };
        let c = super::source::load_chart(&p.0, &p.1).map_err(msg)?;
        let text = show_text(&c, part, jsonpath.as_deref())?;
        let mut o = std::io::stdout().lock();
        std::io::Write::write_all(&mut o, text.as_bytes())
            .and_then(|()| std::io::Write::flush(&mut o))
            .map_err(|e| msg(e.to_string()))?;
        Ok(())
    })())
}

/// Runs `rudder build-fixtures`: builds every fixture component's chart and
/// writes `<output>/<name>/` and `<output>/<name>-<version>.tgz`.
pub fn build_fixtures(a: BuildFixturesArgs) -> ExitCode {
    finish((|| {
        std::fs::create_dir_all(&a.output)
            .map_err(|e| msg(format!("{}: {e}", a.output.display())))?;
        let charts = super::fixtures::charts().map_err(|e| -> Box<dyn Error> { e })?;
        for c in charts {
            let dir = a.output.join(&c.metadata.name);
            // Replace a chart this command wrote before, nothing else.
            if dir.exists() {
                let ours =
                    chart::load_dir(&dir).is_ok_and(|old| old.metadata.name == c.metadata.name);
                if !ours {
                    return Err(msg(format!(
                        "{} exists and is not a {} chart",
                        dir.display(),
                        c.metadata.name
                    )));
                }
                std::fs::remove_dir_all(&dir)
                    .map_err(|e| msg(format!("{}: {e}", dir.display())))?;
            }
            chart::save_dir(&c, &dir)?;
            let pkg = chart::save_archive(&c, &a.output)?;
            println!(
                "{}: {} and {}",
                c.metadata.name,
                dir.display(),
                pkg.display()
            );
        }
        Ok(())
    })())
}
