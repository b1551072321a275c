//! `rudder template [NAME] CHART`: render a chart locally, with
//! `helm template`'s flags, output and exit codes.
use clap::Args;
use rudder::render::output::{debug_dump, template_stdout, write_output_dir, OutputOptions};
use rudder::render::{RenderError, RenderOptions};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// `argv` parsed as `rudder template ...` by the template subcommand's
/// parser alone; `None` for another subcommand, or when that parser fails
/// or wants to print help (the full parser then handles the arguments).
pub fn parse_alone(argv: impl IntoIterator<Item = std::ffi::OsString>) -> Option<TemplateArgs> {
    use clap::FromArgMatches;
    let mut argv = argv.into_iter();
    argv.next()?;
    let sub = argv.next()?;
    if sub != "template" {
        return None;
    }
    let cmd = TemplateArgs::augment_args(clap::Command::new("template"));
    let matches = cmd
        .try_get_matches_from(std::iter::once(sub).chain(argv))
        .ok()?;
    TemplateArgs::from_arg_matches(&matches).ok()
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
    /// On invalid YAML, print every rendered file, then fail.
    #[arg(long = "debug")]
    debug: bool,
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

fn run_inner(a: &TemplateArgs, stdout: &mut String) -> Result<(), Failure> {
    let kube_version = match &a.kube_version {
        Some(k) if !k.is_empty() => Some(
            rudder::render::objects::KubeVersion::parse(k)?
                .version
                .clone(),
        ),
        _ => None,
    };
    let (name, chart_path) = match a.args.as_slice() {
        [chart] => ("release-name".to_string(), chart.clone()),
        [name, chart] => (name.clone(), chart.clone()),
        [_, _, rest @ ..] => {
            return Err(Failure::from(format!(
                "expected at most two arguments, unexpected arguments: {}",
                rest.join(", ")
            )))
        }
        [] => return Err(Failure::from("requires at least 1 arg(s), only received 0")),
    };
    if !std::path::Path::new(&chart_path).exists() {
        return Err(Failure::from(format!("path \"{chart_path}\" not found")));
    }
    let user = a.values.user_values()?;
    let namespace = a
        .namespace
        .clone()
        .or_else(|| {
            std::env::var("HELM_NAMESPACE")
                .ok()
                .filter(|s| !s.is_empty())
        })
        .unwrap_or_else(|| "default".to_string());
    let opts = RenderOptions {
        release_name: name.clone(),
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
    // The engine is built here rather than inside `render::render` so that
    // it parses the templates while the chart's values load, and can be
    // leaked with the chart and the result below.
    let mut engine = rudder::render::engine_for(&opts);
    // SAFETY: this process only renders the chart and exits. It assumes
    // nobody edits or truncates the chart's files during the few
    // milliseconds that takes (an edit could change the output, a
    // truncation would kill the process).
    let chart = unsafe { rudder::render::load_mapped_for(&mut engine, &chart_path) }?;
    let result = rudder::render::render_with(&mut engine, &chart, &user, &opts);
    // The process ends right after printing: freeing the parse trees, the
    // chart and the rendered objects one by one is wasted work (3-7% of a
    // large chart's run).
    std::mem::forget(engine);
    std::mem::forget(chart);
    let rendered = match result {
        Ok(r) => r,
        Err(e) => {
            let partial = e.has_partial_release();
            if a.debug {
                if let RenderError::Manifest { files, .. } = &e {
                    stdout.push_str(&debug_dump(files.iter()));
                } else if partial {
                    stdout.push('\n');
                }
                return Err(Failure::from(e));
            }
            let mut message = e.to_string();
            if partial {
                message.push_str("\n\nUse --debug flag to render out invalid YAML");
            }
            return Err(Failure { message });
        }
    };
    for w in &rendered.warnings {
        eprintln!("{}", warning_line(w));
    }
    match &a.output_dir {
        None => stdout.push_str(&template_stdout(&rendered, &out_opts)?),
        Some(dir) => {
            let release_dir = a.release_name.then_some(name.as_str());
            stdout.push_str(&write_output_dir(&rendered, &out_opts, dir, release_dir)?);
        }
    }
    std::mem::forget(rendered);
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
    let result = run_inner(a, &mut stdout);
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
