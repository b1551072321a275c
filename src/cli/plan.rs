//! `rudder plan FILE` and `rudder diff upgrade NAME CHART`: upgrade plans
//! for people and tools. Planning never writes to the store or the cluster.
use clap::{Args, Subcommand};
use rudder::plan::planner::{PlanOptions, Planner};
use rudder::plan::{view, DesiredRelease, ObjectAction, Plan, ReleaseAction};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

/// `rudder plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The releases file.
    file: String,
    /// Output format: table (for people), json, yaml, or html (a
    /// self-contained page with the upgrade order as a graph and every diff).
    #[arg(short = 'o', long, default_value = "table")]
    output: String,
    /// Also write the plan, with what applying it needs (secret values
    /// included), to this file (mode 0600).
    #[arg(long)]
    save: Option<String>,
    /// Exit 0 when nothing changes and 2 when something does (errors exit 1).
    #[arg(long)]
    detailed_exitcode: bool,
    /// Show secret values in diffs and output instead of `(redacted)`.
    #[arg(long)]
    show_secrets: bool,
    /// Plan one transaction (as `apply --atomic-plan`, or `atomicPlan:
    /// true` in the file): a failure in any release rolls every release
    /// back to the rollback point the plan shows.
    #[arg(long)]
    atomic_plan: bool,
}

/// `rudder diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    #[command(subcommand)]
    command: DiffCommand,
}

#[derive(Debug, Subcommand)]
enum DiffCommand {
    /// Show a diff explaining what a helm upgrade would change.
    Upgrade(DiffUpgradeArgs),
}

/// `rudder diff upgrade NAME CHART` (helm-diff's flags and output shape).
#[derive(Debug, Args)]
pub struct DiffUpgradeArgs {
    /// Release name.
    name: String,
    /// The chart: a directory, a `.tgz`, `REPO/CHART`, `oci://...` or a URL.
    chart: String,
    /// Namespace of the release.
    #[arg(short = 'n', long, default_value = "default")]
    namespace: String,
    #[command(flatten)]
    values: super::values::ValuesArgs,
    #[command(flatten)]
    source: super::source::ChartPathArgs,
    /// Return a non-zero exit code (2) when there are changes.
    #[arg(long)]
    detailed_exitcode: bool,
    /// Show secret values instead of `(redacted)`.
    #[arg(long)]
    show_secrets: bool,
    /// Lines of context around changes (helm-diff's default is -1: all).
    #[arg(short = 'C', long, default_value_t = -1)]
    context: i64,
    /// Diff a release that is not installed yet, showing everything as new
    /// (helm-diff's flag; `--install` is its alias). Without it a release
    /// with no record is an error, as in helm-diff.
    #[arg(long, visible_alias = "install")]
    allow_unreleased: bool,
}

fn color_for_stdout() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn open_targets() -> Result<rudder::targets::Targets, String> {
    let g = super::global();
    let open = || rudder::targets::Targets::open(&g.store_url()?, &g.cluster_url()?);
    open().map_err(|e| rudder::error_chain(&e))
}

fn make_plan(
    releases: &[DesiredRelease],
    show_secrets: bool,
    with_records: bool,
    atomic_plan: bool,
) -> Result<Plan, String> {
    let t = open_targets()?;
    eprintln!(
        "Planning against cluster {} and store {}",
        t.cluster_desc(),
        t.store_url
    );
    let before = super::request_counts_if_asked(t.cluster.as_ref());
    let plan = Planner::new(t.store.as_ref(), &t.store_url, t.cluster.as_ref())
        .with_options(PlanOptions {
            show_secrets,
            with_records,
            cross_release: if atomic_plan {
                rudder::plan::planner::ATOMIC_PLAN.into()
            } else {
                PlanOptions::default().cross_release
            },
            ..PlanOptions::default()
        })
        .plan(releases)
        .map_err(|e| super::chart::error_chain(&e));
    super::report_requests("plan", t.cluster.as_ref(), before);
    plan
}

/// Writes `text` to `path` with mode 0600, atomically.
fn save_private(path: &str, text: &str) -> Result<(), String> {
    rudder::fsutil::atomic_write(
        Path::new(path),
        text.as_bytes(),
        rudder::fsutil::Mode::PRIVATE,
    )
    .map_err(|e| format!("writing {path}: {}", rudder::error_chain(&e)))
}

/// Runs `rudder plan`.
pub fn plan(a: PlanArgs) -> ExitCode {
    let format = a.output.as_str();
    if !matches!(format, "table" | "json" | "yaml" | "html") {
        eprintln!("Error: invalid format type {format:?}: want table, json, yaml or html");
        return ExitCode::FAILURE;
    }
    let loaded = rudder::plan::file::read(Path::new(&a.file)).and_then(|f| {
        let opts = super::source::releases_file_options();
        Ok((f.atomic_plan, f.load_releases_with(&opts)?))
    });
    let (atomic_plan, releases) = match loaded {
        Ok(r) => r,
        Err(e) => {
            eprintln!("Error: {}", rudder::error_chain(&e));
            return ExitCode::FAILURE;
        }
    };
    let atomic_plan = atomic_plan || a.atomic_plan;
    let plan = match make_plan(&releases, a.show_secrets, a.save.is_some(), atomic_plan) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("Error: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(path) = &a.save {
        if let Err(e) = save_private(path, &view::json(&plan)) {
            eprintln!("Error: {e}");
            return ExitCode::FAILURE;
        }
    }
    let shown = if a.show_secrets {
        let mut p = plan.clone();
        for r in &mut p.releases {
            r.record = None;
        }
        p
    } else {
        plan.redact()
    };
    let text = match format {
        "json" => view::json(&shown),
        "yaml" => view::yaml(&shown),
        "html" => view::html(&shown),
        _ => view::human(&shown, color_for_stdout()),
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    if let Some(b) = plan.blocked().next() {
        eprintln!("Error: {}", b.blocked.as_deref().unwrap_or_default());
        return ExitCode::FAILURE;
    }
    if a.detailed_exitcode && plan.has_changes() {
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

/// Runs `rudder diff`.
pub fn diff(a: DiffArgs) -> ExitCode {
    match a.command {
        DiffCommand::Upgrade(u) => diff_upgrade(u),
    }
}

fn diff_upgrade(a: DiffUpgradeArgs) -> ExitCode {
    let run = || -> Result<Plan, String> {
        let chart = super::source::load_chart(&a.chart, &a.source)?;
        let mut d = DesiredRelease::new(&a.name, &a.namespace, chart);
        d.values = a.values.user_values()?;
        d.options.create_namespace = false;
        make_plan(std::slice::from_ref(&d), a.show_secrets, false, false)
    };
    let plan = match run() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("Error: {e}");
            return ExitCode::FAILURE;
        }
    };
    // helm-diff: a release the store has no record of is "not present in
    // Helm": an error unless --allow-unreleased, which shows it all as new.
    let unreleased = plan
        .releases
        .iter()
        .any(|r| r.action == ReleaseAction::Install && r.preconditions.last_record.is_none());
    if unreleased {
        if !a.allow_unreleased {
            eprintln!(
                "Error: release {:?} not found in namespace {:?} (release: not found); include --allow-unreleased to diff it as a new release",
                a.name, a.namespace
            );
            return ExitCode::FAILURE;
        }
        println!("********************\n\n\tRelease was not present in Helm.  Diff will show entire contents as new.\n\n********************");
    }
    let shown = if a.show_secrets {
        plan.clone()
    } else {
        plan.redact()
    };
    let mut out = String::new();
    let mut changed = false;
    for r in &shown.releases {
        for o in &r.objects {
            let verb = match o.action {
                ObjectAction::Create => "has been added",
                ObjectAction::Update | ObjectAction::Adopt => "has changed",
                ObjectAction::Delete => "has been removed",
                _ => continue,
            };
            changed = true;
            let group = if o.key.group.is_empty() {
                String::new()
            } else {
                format!(" ({})", o.key.group)
            };
            out.push_str(&format!(
                "{}, {}, {}{} {verb}:\n",
                o.key.namespace, o.key.name, o.key.kind, group
            ));
            match o.action {
                ObjectAction::Create => {
                    let y = o
                        .desired
                        .as_ref()
                        .map(|d| serde_yaml::to_string(d).unwrap_or_default())
                        .unwrap_or_default();
                    for line in y.lines() {
                        out.push_str(&format!("+ {line}\n"));
                    }
                }
                ObjectAction::Delete => {
                    out.push_str(&format!("- {} {}\n", o.key.kind, o.key.name));
                }
                _ => {
                    for line in o.diff.lines().skip(2) {
                        if line.starts_with("@@") {
                            if a.context >= 0 {
                                out.push_str("...\n");
                            }
                            continue;
                        }
                        let (mark, rest) = line.split_at(line.len().min(1));
                        let mark = if mark == " " { " " } else { mark };
                        out.push_str(&format!("{mark} {rest}\n"));
                    }
                }
            }
            out.push('\n');
        }
        if r.action == ReleaseAction::Noop {
            changed = false;
        }
    }
    let _ = std::io::stdout().write_all(out.as_bytes());
    if let Some(b) = plan.blocked().next() {
        eprintln!("Error: {}", b.blocked.as_deref().unwrap_or_default());
        return ExitCode::FAILURE;
    }
    if a.detailed_exitcode && changed {
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}
