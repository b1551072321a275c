//! `rudder template [NAME] CHART`: render a chart locally, with
//! `helm template`'s flags, output and exit codes.
use clap::Args;
use rudder::gostd::gostr::go_string_from_bytes;
use rudder::release::codec::check_user_labels;
use rudder::render::names::{template_name, validate_release_name};
use rudder::render::output::{
    debug_dump, release_manifest, template_stdout, template_stdout_of, write_output_dir,
    OutputOptions,
};
use rudder::render::postrender::PostRenderer;
use rudder::render::{RenderError, RenderOptions};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// `argv` parsed as `rudder template ...` by the template subcommand's
/// parser (and the global flags) alone; `None` for another subcommand, or
/// when that parser fails or wants to print help (the full parser then
/// handles the arguments).
pub fn parse_alone(
    argv: impl IntoIterator<Item = std::ffi::OsString>,
) -> Option<(super::GlobalArgs, TemplateArgs)> {
    use clap::FromArgMatches;
    let mut argv = argv.into_iter();
    argv.next()?;
    let sub = argv.next()?;
    if sub != "template" {
        return None;
    }
    let cmd =
        super::GlobalArgs::augment_args(TemplateArgs::augment_args(clap::Command::new("template")));
    let matches = cmd
        .try_get_matches_from(std::iter::once(sub).chain(argv))
        .ok()?;
    let global = super::GlobalArgs::from_arg_matches(&matches).ok()?;
    Some((global, TemplateArgs::from_arg_matches(&matches).ok()?))
}

/// Flags of `rudder template` (a subset of `helm template`'s, same meaning).
#[derive(Debug, Args)]
pub struct TemplateArgs {
    /// `[NAME] CHART`: the release name (default `release-name`) and the
    /// chart directory or `.tgz`.
    #[arg(required = true, num_args = 1..)]
    args: Vec<String>,
    #[command(flatten)]
    values: super::values::ValuesArgs,
    #[command(flatten)]
    source: super::source::ChartPathArgs,
    /// The release namespace.
    #[arg(short = 'n', long = "namespace")]
    namespace: Option<String>,
    /// `.Capabilities.KubeVersion`.
    #[arg(long = "kube-version")]
    kube_version: Option<String>,
    /// Extra `.Capabilities.APIVersions`.
    #[arg(short = 'a', long = "api-versions")]
    api_versions: Vec<String>,
    /// Print CRDs from `crds/` too.
    #[arg(long = "include-crds")]
    include_crds: bool,
    /// Only show manifests rendered from these templates.
    #[arg(short = 's', long = "show-only")]
    show_only: Vec<String>,
    /// Leave out test hooks.
    #[arg(long = "skip-tests")]
    skip_tests: bool,
    /// Leave out hooks.
    #[arg(long = "no-hooks")]
    no_hooks: bool,
    /// Set `.Release.IsUpgrade` instead of `.Release.IsInstall`.
    #[arg(long = "is-upgrade")]
    is_upgrade: bool,
    /// Use the release name in the `--output-dir` path.
    #[arg(long = "release-name")]
    release_name: bool,
    /// Write files under this directory instead of stdout.
    #[arg(long = "output-dir")]
    output_dir: Option<PathBuf>,
    /// Skip `values.schema.json` validation.
    #[arg(long = "skip-schema-validation")]
    skip_schema_validation: bool,
    /// Append subchart NOTES (no effect on `template` output).
    #[arg(long = "render-subchart-notes")]
    render_subchart_notes: bool,
    /// Let `getHostByName` use DNS.
    #[arg(long = "enable-dns")]
    enable_dns: bool,
    /// Accepted for compatibility; rudder never contacts a cluster here.
    #[arg(long = "validate")]
    validate: bool,
    /// The release name from a Go template (Sprig functions, no data);
    /// the chart is then the only argument.
    #[arg(long = "name-template")]
    name_template: Option<String>,
    /// Generate the name; `helm template` keeps `release-name` (the chart
    /// is then the only argument).
    #[arg(short = 'g', long = "generate-name")]
    generate_name: bool,
    /// Do not install CRDs (no effect on `template` output, as in Helm).
    #[arg(long = "skip-crds")]
    skip_crds: bool,
    /// Labels of the release record, `key=value[,key=value]`: checked as
    /// Helm checks them, no effect on the output.
    #[arg(short = 'l', long = "labels")]
    labels: Vec<String>,
    /// The release description (no effect on `template` output).
    #[arg(long = "description")]
    description: Option<String>,
    /// An executable the rendered manifests are piped through; its
    /// stdout replaces them (hooks are not piped).
    #[arg(long = "post-renderer")]
    post_renderer: Option<String>,
    /// An argument for the post-renderer (repeatable, one argument each).
    #[arg(long = "post-renderer-args")]
    post_renderer_args: Vec<String>,
}

/// Helm's `stringToString` flag value: one `=` makes the whole value one
/// pair (commas included), more are comma-separated (CSV) pairs.
fn parse_labels(values: &[String]) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for val in values {
        let bad = |what: &str| {
            format!(
                "invalid argument {} for \"-l, --labels\" flag: {what} must be formatted as key=value",
                rudder::gostd::strconv::quote(val)
            )
        };
        let pairs: Vec<String> = match val.matches('=').count() {
            0 => return Err(bad(val)),
            1 => vec![val.trim_matches('"').to_string()],
            _ => csv_fields(val).map_err(|e| {
                format!(
                    "invalid argument {} for \"-l, --labels\" flag: {e}",
                    rudder::gostd::strconv::quote(val)
                )
            })?,
        };
        for pair in pairs {
            match pair.split_once('=') {
                Some((k, v)) => {
                    out.insert(k.to_string(), v.to_string());
                }
                None => return Err(bad(&pair)),
            }
        }
    }
    Ok(out)
}

/// One record of Go's `encoding/csv` reader: comma-separated fields,
/// `"..."` quoting with `""` for a quote.
fn csv_fields(s: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut chars = s.chars().peekable();
    let mut col = 0usize;
    loop {
        let mut f = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            col += 1;
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        f.push('"');
                    }
                    Some('"') => break,
                    Some(c) => f.push(c),
                    None => {
                        return Err(format!(
                            "parse error on line 1, column {}: extraneous or missing \" in quoted-field",
                            s.len() + 1
                        ))
                    }
                }
            }
            match chars.peek() {
                None | Some(',') => {}
                Some(_) => {
                    return Err(format!(
                    "parse error on line 1, column {}: extraneous or missing \" in quoted-field",
                    col + f.len() + 2
                ))
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                if c == '"' {
                    return Err(format!(
                        "parse error on line 1, column {}: bare \" in non-quoted-field",
                        col + f.len() + 1
                    ));
                }
                f.push(c);
                chars.next();
            }
        }
        col += f.len();
        fields.push(f);
        if chars.next().is_none() {
            return Ok(fields);
        }
        col += 1;
    }
}

/// A failure with Helm's message and whether the release was partial.
struct Failure {
    message: String,
}

impl<T: std::fmt::Display> From<T> for Failure {
    fn from(e: T) -> Self {
        Failure {
            message: e.to_string(),
        }
    }
}

fn run_inner(a: &TemplateArgs, debug: bool, stdout: &mut String) -> Result<(), Failure> {
    // Flag values are checked as the flag parser checks them, first.
    let labels = parse_labels(&a.labels)?;
    let post_renderer = match &a.post_renderer {
        Some(p) if !p.is_empty() => Some(
            PostRenderer::new(p, a.post_renderer_args.clone()).map_err(|e| {
                format!(
                    "invalid argument {} for \"--post-renderer\" flag: {e}",
                    rudder::gostd::strconv::quote(p)
                )
            })?,
        ),
        _ => None,
    };
    let kube_version = match &a.kube_version {
        Some(k) if !k.is_empty() => Some(
            rudder::render::objects::KubeVersion::parse(k)?
                .version
                .clone(),
        ),
        _ => None,
    };
    let (name, chart_arg) = name_and_chart(a)?;
    // A path on disk is the hot path; anything else (`REPO/CHART`,
    // `oci://`, a URL, `--repo`) is fetched into the chart cache first.
    let chart_path = if std::path::Path::new(&chart_arg).exists() {
        chart_arg
    } else {
        rudder::source::resolve::locate(&chart_arg, &a.source.locate())
            .map_err(|e| Failure::from(rudder::error_chain(&e)))?
            .display()
            .to_string()
    };
    let user = a.values.user_values()?;
    // Helm's `availableName`, after the chart and the values are read.
    let check_name = || validate_release_name(&name);
    let (opts, out_opts) = options(a, &name, kube_version);
    // The engine is built here rather than inside `render::render` so that
    // it parses the templates while the chart's values load, and can be
    // leaked with the chart and the result below.
    let mut engine = rudder::render::engine_for(&opts);
    // The chart's files are read, not mapped: a mapped file that another
    // process truncates during the render kills the process with SIGBUS
    // (issue 33), and reading costs no measurable time (the conformance
    // charts render as fast either way; see the commit that made this change).
    let chart = rudder::render::load_for(&mut engine, &chart_path)?;
    let result = rudder::render::render_with(&mut engine, &chart, &user, &opts);
    // Helm checks the name before processing dependencies and the labels
    // after the values' schema: errors of the steps before those win.
    let early = |e: &RenderError| {
        matches!(
            e,
            RenderError::NotInstallable | RenderError::MissingDependencies(_)
        )
    };
    match &result {
        Err(e) if early(e) => {}
        _ => check_name()?,
    }
    match &result {
        Err(e) if !e.has_partial_release() => {}
        _ => check_user_labels(&labels)?,
    }
    // The process ends right after printing: freeing the parse trees, the
    // chart and the rendered objects one by one is wasted work (3-7% of a
    // large chart's run).
    std::mem::forget(engine);
    std::mem::forget(chart);
    let rendered = match result {
        Ok(r) => r,
        Err(e) => return Err(render_failure(e, debug, stdout)),
    };
    for w in &rendered.warnings {
        eprintln!("{}", warning_line(w));
    }
    print(
        a,
        &rendered,
        &out_opts,
        post_renderer.as_ref(),
        &name,
        debug,
        stdout,
    )?;
    std::mem::forget(rendered);
    Ok(())
}

/// The release name and the chart path from `[NAME] CHART`: Helm's
/// `Install.NameAndChart`, with `helm template`'s default name.
fn name_and_chart(a: &TemplateArgs) -> Result<(String, String), Failure> {
    let name_template = a.name_template.as_deref().unwrap_or("");
    match a.args.as_slice() {
        [_, _, rest @ ..] if !rest.is_empty() => Err(Failure::from(format!(
            "expected at most two arguments, unexpected arguments: {}",
            rest.join(", ")
        ))),
        [name, chart] => {
            if a.generate_name {
                return Err(Failure::from(
                    "cannot set --generate-name and also specify a name",
                ));
            }
            if !name_template.is_empty() {
                return Err(Failure::from(
                    "cannot set --name-template and also specify a name",
                ));
            }
            Ok((name.clone(), chart.clone()))
        }
        [chart] => match template_name(name_template)? {
            Some(n) => Ok((n, chart.clone())),
            None => Ok(("release-name".to_string(), chart.clone())),
        },
        _ => Err(Failure::from(super::usage::min_args_message("template"))),
    }
}

/// The render's options and the output's, from the flags.
fn options(
    a: &TemplateArgs,
    name: &str,
    kube_version: Option<String>,
) -> (RenderOptions, OutputOptions) {
    // `--namespace=` overrides HELM_NAMESPACE with nothing: Helm then
    // takes the kubeconfig's, `default` without one.
    let namespace = a
        .namespace
        .clone()
        .or_else(|| std::env::var("HELM_NAMESPACE").ok())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "default".to_string());
    let opts = RenderOptions {
        release_name: name.to_string(),
        namespace,
        revision: 1,
        is_upgrade: a.is_upgrade,
        kube_version,
        api_versions: a.api_versions.clone(),
        skip_schema_validation: a.skip_schema_validation,
        subchart_notes: a.render_subchart_notes,
        strict: false,
        enable_dns: a.enable_dns,
        lint: false,
    };
    let out_opts = OutputOptions {
        include_crds: a.include_crds,
        skip_tests: a.skip_tests,
        no_hooks: a.no_hooks,
        show_only: a.show_only.clone(),
    };
    (opts, out_opts)
}

/// The failure of a render that failed; with `--debug`, what Helm prints
/// of it first goes to `stdout`.
fn render_failure(e: RenderError, debug: bool, stdout: &mut String) -> Failure {
    let partial = e.has_partial_release();
    if debug {
        if let RenderError::Manifest { files, .. } = &e {
            stdout.push_str(&debug_dump(files.iter()));
        } else if partial {
            stdout.push('\n');
        }
        return Failure::from(e);
    }
    let mut message = e.to_string();
    if partial {
        message.push_str("\n\nUse --debug flag to render out invalid YAML");
    }
    Failure { message }
}

/// Prints the rendered chart as the flags ask: to `stdout`, through the
/// post-renderer, or into `--output-dir`.
fn print(
    a: &TemplateArgs,
    rendered: &rudder::render::Rendered,
    out_opts: &OutputOptions,
    post_renderer: Option<&PostRenderer>,
    name: &str,
    debug: bool,
    stdout: &mut String,
) -> Result<(), Failure> {
    match (&a.output_dir, post_renderer) {
        (None, None) => stdout.push_str(&template_stdout(rendered, out_opts)?),
        (None, Some(pr)) => {
            let manifest = release_manifest(rendered, out_opts.include_crds);
            match pr.run(&rudder::template::output_bytes(&manifest)) {
                Ok(out) => {
                    let out = go_string_from_bytes(&out);
                    stdout.push_str(&template_stdout_of(&out, rendered, out_opts)?);
                }
                Err(e) => {
                    // The release exists with an empty manifest: --debug
                    // prints that and the hooks.
                    if debug {
                        let no_show = OutputOptions {
                            show_only: Vec::new(),
                            ..out_opts.clone()
                        };
                        stdout.push_str(&template_stdout_of("", rendered, &no_show)?);
                    }
                    let mut message = format!("error while running post render on files: {e}");
                    if !debug {
                        message.push_str("\n\nUse --debug flag to render out invalid YAML");
                    }
                    return Err(Failure { message });
                }
            }
        }
        (Some(dir), pr) => {
            // With --output-dir the files are written before the
            // post-renderer runs, on nothing.
            if let Some(pr) = pr {
                pr.run(b"").map_err(|e| Failure {
                    message: format!(
                        "error while running post render on files: {e}\n\nUse --debug flag to render out invalid YAML"
                    ),
                })?;
            }
            let release_dir = a.release_name.then_some(name);
            stdout.push_str(&write_output_dir(rendered, out_opts, dir, release_dir)?);
        }
    }
    Ok(())
}

/// Helm prints the deprecation notice as a `WARNING:` line and logs the rest.
fn warning_line(w: &str) -> String {
    if w == "This chart is deprecated" {
        format!("WARNING: {w}")
    } else {
        w.to_string()
    }
}

/// Runs `rudder template`.
pub fn run(a: &TemplateArgs) -> ExitCode {
    let mut stdout = String::new();
    let result = run_inner(a, super::global().debug, &mut stdout);
    let mut lock = std::io::stdout().lock();
    // A closed stdout is not worth a second error.
    let _ = lock.write_all(&rudder::template::output_bytes(&stdout));
    let _ = lock.flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("Error: {}", f.message);
            ExitCode::from(1)
        }
    }
}
