//! The write commands: `install`, `upgrade`, `rollback`, `uninstall` (with
//! helm v3.17's flags, output and exit codes) and `apply` (a releases file
//! or a saved plan). Each plans with the library's planner and runs the
//! library's executor; nothing here decides what to write.
use super::values::ValuesArgs;
use clap::Args;
use rudder::exec::{self, Event, ExecOptions, Executor, WallClock};
use rudder::plan::input::parse_duration;
use rudder::plan::planner::{PlanOptions, Planner};
use rudder::plan::{DesiredRelease, Plan, ReleaseOptions, WaitStrategy};
use rudder::release::view::{self, Format, StatusOptions};
use rudder::release::{Releases, Status};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Mutex;

/// Flags shared by install and upgrade (Helm's names).
#[derive(Debug, Args, Clone)]
pub struct ReleaseFlags {
    /// Namespace of the release.
    #[arg(short = 'n', long, default_value = "default")]
    namespace: String,
    #[command(flatten)]
    values: ValuesArgs,
    #[command(flatten)]
    source: super::source::ChartPathArgs,
    /// Wait until every object is ready before marking the release deployed.
    #[arg(long)]
    wait: bool,
    /// Readiness rules: `legacy` (Helm 3) or `kstatus` (Helm 4's watcher).
    #[arg(long, default_value = "legacy")]
    wait_strategy: String,
    /// Also wait for Jobs to complete.
    #[arg(long)]
    wait_for_jobs: bool,
    /// One deadline for the whole release (a Go duration).
    #[arg(long, default_value = "5m0s")]
    timeout: String,
    /// Roll back (upgrade) or uninstall (install) on failure; implies --wait.
    #[arg(long, visible_alias = "rollback-on-failure")]
    atomic: bool,
    /// Delete the objects this run created when it fails (always done with --atomic).
    #[arg(long)]
    cleanup_on_fail: bool,
    /// Revisions to keep (0: no limit).
    #[arg(long, default_value_t = 10)]
    history_max: usize,
    /// Create the release namespace if it is missing.
    #[arg(long)]
    create_namespace: bool,
    /// Print what would be done, write nothing.
    #[arg(long)]
    dry_run: bool,
    /// A custom description for the release.
    #[arg(long)]
    description: Option<String>,
    /// Adopt existing objects whatever their ownership.
    #[arg(long)]
    take_ownership: bool,
    /// Take over fields that other field managers own (Helm 4).
    #[arg(long)]
    force_conflicts: bool,
    /// Output format of the result: table, json or yaml.
    #[arg(short = 'o', long, default_value = "table")]
    output: String,
}

/// `rudder install NAME CHART`.
#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Release name.
    name: String,
    /// The chart: a directory, a `.tgz`, `REPO/CHART`, `oci://...` or a URL.
    chart: String,
    #[command(flatten)]
    flags: ReleaseFlags,
    /// Reuse the name of an uninstalled or failed release.
    #[arg(long)]
    replace: bool,
}

/// `rudder upgrade [--install] NAME CHART`.
#[derive(Debug, Args)]
pub struct UpgradeArgs {
    /// Release name.
    name: String,
    /// The chart: a directory, a `.tgz`, `REPO/CHART`, `oci://...` or a URL.
    chart: String,
    #[command(flatten)]
    flags: ReleaseFlags,
    /// Install the release when it does not exist.
    #[arg(short = 'i', long)]
    install: bool,
    /// Merge the last release's values with the new ones (and keep its chart defaults).
    #[arg(long)]
    reuse_values: bool,
    /// Use only the new values and the chart's defaults.
    #[arg(long)]
    reset_values: bool,
    /// Reset to the new chart's defaults, then merge the last release's values.
    #[arg(long)]
    reset_then_reuse_values: bool,
}

/// `rudder rollback NAME [REVISION]`.
#[derive(Debug, Args)]
pub struct RollbackArgs {
    /// Release name.
    name: String,
    /// The revision to return to (default: the one before the last).
    revision: Option<u64>,
    /// Namespace of the release.
    #[arg(short = 'n', long, default_value = "default")]
    namespace: String,
    /// Wait until every object is ready.
    #[arg(long)]
    wait: bool,
    /// Also wait for Jobs.
    #[arg(long)]
    wait_for_jobs: bool,
    /// Deadline (a Go duration).
    #[arg(long, default_value = "5m0s")]
    timeout: String,
    /// Revisions to keep.
    #[arg(long, default_value_t = 10)]
    history_max: usize,
    /// Delete new objects when the rollback fails.
    #[arg(long)]
    cleanup_on_fail: bool,
    /// Print what would be done, write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Take over fields that other field managers own.
    #[arg(long)]
    force_conflicts: bool,
}

/// `rudder uninstall NAME`.
#[derive(Debug, Args)]
pub struct UninstallArgs {
    /// Release names.
    #[arg(required = true)]
    names: Vec<String>,
    /// Namespace of the release.
    #[arg(short = 'n', long, default_value = "default")]
    namespace: String,
    /// Keep the release history (status `uninstalled`).
    #[arg(long)]
    keep_history: bool,
    /// A custom description.
    #[arg(long)]
    description: Option<String>,
    /// Succeed when the release does not exist.
    #[arg(long)]
    ignore_not_found: bool,
    /// Print what would be done, write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Wait until every deleted object is gone (Helm's `uninstall --wait`).
    #[arg(long)]
    wait: bool,
    /// How long `--wait` waits (a Go duration).
    #[arg(long, default_value = "5m0s")]
    timeout: String,
}

/// `rudder apply FILE | --plan plan.json`.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The releases file.
    #[arg(required_unless_present = "plan")]
    file: Option<String>,
    /// Execute a saved plan instead (`rudder plan --save`).
    #[arg(long)]
    plan: Option<String>,
    /// Progress as JSON events on stdout.
    #[arg(short = 'o', long, default_value = "table")]
    output: String,
    /// Take over fields that other field managers own.
    #[arg(long)]
    force_conflicts: bool,
    /// When a release fails, also roll back the releases this run completed.
    #[arg(long)]
    rollback_completed: bool,
    /// The plan is one transaction: a failure in any release rolls back
    /// every release this apply changed (uninstalls the ones it installed),
    /// newest first. Also `atomicPlan: true` in the releases file.
    #[arg(long, conflicts_with = "rollback_completed")]
    atomic_plan: bool,
    /// How many releases run at the same time (those with no `needs` path
    /// between them), and how many objects of one kind a release writes
    /// at once.
    #[arg(long, default_value_t = exec::DEFAULT_CONCURRENCY, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=256))]
    concurrency: usize,
    /// Fail a wait at once, instead of at its deadline, when a pod is
    /// unschedulable for 15 s, cannot pull its image, or crash-loops past
    /// 3 restarts; the release then rolls back as --atomic says.
    #[arg(long)]
    fail_fast: bool,
    /// How many lines of a failing container's log the failure report
    /// shows, where the cluster serves logs (0: none).
    #[arg(long, default_value_t = exec::DEFAULT_LOG_LINES)]
    log_lines: u32,
    /// Refuse to apply a plan with preflight warnings.
    #[arg(long)]
    strict_preflight: bool,
}

/// Progress on stderr, or JSON events. On a terminal: what happened
/// (a release started, failed, finished) as lines that stay, under which
/// one line per running release is redrawn as it goes. Off a terminal:
/// whole lines only, each release's lines tagged with its name, so that
/// releases running at the same time interleave by whole lines.
struct Printer {
    tty: bool,
    json: bool,
    live: Mutex<Live>,
}

/// The redrawn lines of the running releases.
#[derive(Default)]
struct Live {
    /// Running releases, in the order they started, and their line.
    lines: Vec<(String, String)>,
    /// How many lines are on the screen below the lines that stay.
    drawn: usize,
}

impl Printer {
    fn new(json: bool) -> Printer {
        Printer {
            tty: std::io::stderr().is_terminal() && !json,
            json,
            live: Mutex::new(Live::default()),
        }
    }

    /// Erases the redrawn lines (at the end of a command).
    fn finish_line(&self) {
        if !self.tty {
            return;
        }
        if let Ok(mut live) = self.live.lock() {
            live.lines.clear();
            self.redraw(&mut live, None);
        }
    }

    /// Writes `line` (if any) as a line that stays, then the running
    /// releases' lines, over the ones drawn before. Autowrap is off while
    /// drawing, so each takes exactly one row.
    fn redraw(&self, live: &mut Live, line: Option<&str>) {
        let mut err = std::io::stderr().lock();
        let mut out = String::from("\x1b[?7l");
        for _ in 0..live.drawn {
            out.push_str("\x1b[1A\x1b[2K");
        }
        out.push('\r');
        if let Some(l) = line {
            out.push_str(l);
            out.push('\n');
        }
        for (_, l) in &live.lines {
            out.push_str(l);
            out.push('\n');
        }
        out.push_str("\x1b[?7h");
        live.drawn = live.lines.len();
        let _ = err.write_all(out.as_bytes());
        let _ = err.flush();
    }
}

impl exec::Progress for Printer {
    fn event(&self, e: &Event) {
        if self.json {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", serde_json::to_string(e).unwrap_or_default());
            return;
        }
        // (a line that stays, the release's running line, whether it ended)
        let (stays, running, ended): (Option<String>, Option<(&str, String)>, bool) = match e {
            Event::ReleaseStarted {
                release,
                action,
                revision,
            } => {
                let l = format!("{release}: {action} to revision {revision}");
                (Some(l.clone()), Some((release, l)), false)
            }
            Event::ObjectWritten {
                release,
                verb,
                object,
            } => (
                None,
                Some((release, format!("{release}: {verb} {object}"))),
                false,
            ),
            Event::Waiting {
                release,
                object,
                message,
                reasons,
            } => {
                let mut l = format!("{release}: waiting for {object}: {message}");
                for r in reasons {
                    l.push_str(&format!("; why: {r}"));
                }
                ((!self.tty).then(|| l.clone()), Some((release, l)), false)
            }
            Event::Failed { release, error } => (
                Some(format!("{release}: failed: {error}")),
                Some((release, format!("{release}: failed, settling"))),
                false,
            ),
            Event::Recovered { release, what } => (
                Some(format!("{release}: recovered an interrupted run: {what}")),
                None,
                false,
            ),
            Event::ReleaseDone { release, outcome } => (
                Some(format!("{release}: {outcome}")),
                Some((release, String::new())),
                true,
            ),
        };
        if !self.tty {
            if let Some(l) = stays {
                eprintln!("{l}");
            }
            return;
        }
        let Ok(mut live) = self.live.lock() else {
            return;
        };
        if let Some((release, line)) = running {
            let at = live.lines.iter().position(|(r, _)| r == release);
            match (at, ended) {
                (Some(i), true) => {
                    live.lines.remove(i);
                }
                (Some(i), false) => live.lines[i].1 = line,
                (None, false) => live.lines.push((release.to_string(), line)),
                (None, true) => {}
            }
        }
        self.redraw(&mut live, stays.as_deref());
    }
}

use rudder::targets::Targets;

fn open_targets() -> Result<Targets, String> {
    let g = super::global();
    let open = || Targets::open(&g.store_url()?, &g.cluster_url()?);
    open().map_err(|e| rudder::error_chain(&e))
}

/// The executor over these targets, reporting to `printer`.
fn executor<'a>(t: &'a Targets, clock: &'a WallClock, printer: &'a Printer) -> Executor<'a> {
    t.executor(clock).with_progress(printer)
}

fn options(f: &ReleaseFlags) -> Result<ReleaseOptions, String> {
    let timeout = parse_duration(&f.timeout).map_err(|e| {
        format!(
            "invalid argument {:?} for \"--timeout\" flag: {e}",
            f.timeout
        )
    })?;
    let wait_strategy = match f.wait_strategy.as_str() {
        "legacy" => WaitStrategy::Legacy,
        "kstatus" | "watcher" => WaitStrategy::Kstatus,
        other => {
            return Err(format!(
                "invalid wait strategy {other:?}: want legacy or kstatus"
            ))
        }
    };
    Ok(ReleaseOptions {
        atomic: f.atomic,
        wait: f.wait || f.atomic,
        wait_strategy,
        wait_for_jobs: f.wait_for_jobs,
        timeout,
        history_max: f.history_max,
        create_namespace: f.create_namespace,
        take_ownership: f.take_ownership,
        description: f.description.clone().unwrap_or_default(),
    })
}

fn print_release(rel: &rudder::release::Release, output: &str) -> Result<(), String> {
    let format = Format::parse(output).ok_or("invalid format type")?;
    let mut out = std::io::stdout().lock();
    // Helm's install and upgrade print with `statusPrinter{rel,
    // settings.Debug, ...}`: --debug adds the values, hooks and manifest.
    let opts = StatusOptions {
        debug: super::global().debug,
        ..StatusOptions::default()
    };
    let _ = out.write_all(view::status(rel, format, opts).as_bytes());
    Ok(())
}

/// Prints the plan's preflight warnings on stderr, one line each.
fn print_preflight(plan: &Plan) {
    for r in &plan.releases {
        for w in &r.preflight {
            eprintln!("{}/{}: preflight: {w}", r.namespace, r.name);
        }
    }
}

/// Prints the plan's warnings on stderr, one line each.
fn print_warnings(plan: &Plan) {
    for r in &plan.releases {
        for w in &r.warnings {
            eprintln!("{}/{}: warning: {w}", r.namespace, r.name);
        }
    }
}

/// Plans one release and executes it; returns the executor's report.
fn plan_and_run(
    t: &Targets,
    d: DesiredRelease,
    force_conflicts: bool,
    printer: &Printer,
    dry_run: bool,
) -> Result<(Plan, Option<exec::Report>), String> {
    let plan = Planner::new(t.store.as_ref(), &t.store_url, t.cluster.as_ref())
        .with_options(PlanOptions {
            always_revision: true,
            ..PlanOptions::default()
        })
        .plan(std::slice::from_ref(&d))
        .map_err(|e| super::chart::error_chain(&e))?;
    if let Some(b) = plan.blocked().next() {
        return Err(b.blocked.clone().unwrap_or_default());
    }
    print_warnings(&plan);
    if dry_run {
        return Ok((plan, None));
    }
    let clock = WallClock::default();
    let report = executor(t, &clock, printer)
        .with_options(ExecOptions {
            force_conflicts,
            ..ExecOptions::default()
        })
        .apply(&plan)
        .map_err(|e| rudder::error_chain(&e));
    printer.finish_line();
    Ok((plan, Some(report?)))
}

fn recover_first(t: &Targets, ns: &str, name: &str, printer: &Printer) -> Result<(), String> {
    let clock = WallClock::default();
    let ex = executor(t, &clock, printer);
    ex.recover(ns, name).map_err(|e| rudder::error_chain(&e))?;
    Ok(())
}

fn fail(prefix: &str, e: &str) -> ExitCode {
    eprintln!("Error: {prefix}{e}");
    ExitCode::FAILURE
}

fn announce(t: &Targets) {
    eprintln!(
        "Using cluster {} and store {}",
        t.cluster_desc(),
        t.store_url
    );
}

/// Runs `rudder install`.
pub fn install(a: InstallArgs) -> ExitCode {
    let printer = Printer::new(false);
    let run = || -> Result<(), String> {
        let t = open_targets()?;
        announce(&t);
        let f = &a.flags;
        let hist = t
            .store
            .history(&f.namespace, &a.name)
            .map_err(|e| rudder::error_chain(&e))?;
        if let Some(last) = hist.iter().max_by_key(|r| r.version) {
            let reusable = matches!(last.info.status, Status::Uninstalled | Status::Failed);
            if !(a.replace && reusable) {
                return Err("cannot re-use a name that is still in use".into());
            }
        }
        let chart = super::source::load_chart(&a.chart, &a.flags.source)?;
        let mut d = DesiredRelease::new(&a.name, &f.namespace, chart);
        d.values = f.values.user_values()?;
        d.options = options(f)?;
        let (plan, report) = plan_and_run(&t, d, f.force_conflicts, &printer, f.dry_run)?;
        finish(&t, &plan, report, &f.namespace, &a.name, &f.output, None)
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail("INSTALLATION FAILED: ", &e),
    }
}

fn finish(
    t: &Targets,
    plan: &Plan,
    report: Option<exec::Report>,
    ns: &str,
    name: &str,
    output: &str,
    banner: Option<&str>,
) -> Result<(), String> {
    let Some(report) = report else {
        let r = &plan.releases[0];
        println!(
            "NAME: {name}\nNAMESPACE: {ns}\nSTATUS: pending-{}\nREVISION: {}\n(dry run: {} object(s) would be written)",
            if r.from.is_some() { "upgrade" } else { "install" },
            r.to.revision,
            r.objects.iter().filter(|o| o.action.writes()).count()
        );
        return Ok(());
    };
    if let Some(e) = report.first_error() {
        return Err(e.to_string());
    }
    if let Some(b) = banner {
        if output == "table" {
            println!("{b}");
        }
    }
    let rel = Releases::new(t.store.as_ref())
        .last(ns, name)
        .map_err(|e| rudder::error_chain(&e))?;
    print_release(&rel, output)
}

/// Runs `rudder upgrade`.
pub fn upgrade(a: UpgradeArgs) -> ExitCode {
    let printer = Printer::new(false);
    let run = || -> Result<(), String> {
        let t = open_targets()?;
        announce(&t);
        let f = &a.flags;
        recover_first(&t, &f.namespace, &a.name, &printer)?;
        let hist = t
            .store
            .history(&f.namespace, &a.name)
            .map_err(|e| rudder::error_chain(&e))?;
        let last = hist.iter().max_by_key(|r| r.version).cloned();
        let installing = match &last {
            None => true,
            Some(l) => l.info.status == Status::Uninstalled,
        };
        if installing && !a.install {
            return Err(format!("{:?} has no deployed releases", a.name));
        }
        if let Some(l) = &last {
            if l.info.status.is_pending() {
                return Err("another operation (install/upgrade/rollback) is in progress".into());
            }
        }
        let mut chart = super::source::load_chart(&a.chart, &a.flags.source)?;
        let mut values = f.values.user_values()?;
        if let Some(l) = last.as_ref().filter(|_| !installing) {
            if (a.reuse_values || a.reset_then_reuse_values) && !a.reset_values {
                let mut merged = l.config.clone();
                rudder::render::values::merge_maps(&mut merged, values);
                values = merged;
                if a.reuse_values {
                    if let Some(old) = &l.chart {
                        chart.values = old.values.clone();
                    }
                }
            }
        }
        let mut d = DesiredRelease::new(&a.name, &f.namespace, chart);
        d.values = values;
        d.options = options(f)?;
        let banner = if installing {
            eprintln!("Release {:?} does not exist. Installing it now.", a.name);
            None
        } else {
            Some(format!(
                "Release {:?} has been upgraded. Happy Helming!",
                a.name
            ))
        };
        let (plan, report) = plan_and_run(&t, d, f.force_conflicts, &printer, f.dry_run)?;
        finish(
            &t,
            &plan,
            report,
            &f.namespace,
            &a.name,
            &f.output,
            banner.as_deref(),
        )
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail("UPGRADE FAILED: ", &e),
    }
}

/// Runs `rudder rollback`.
pub fn rollback(a: RollbackArgs) -> ExitCode {
    let printer = Printer::new(false);
    let run = || -> Result<(), String> {
        let t = open_targets()?;
        announce(&t);
        // An unknown release: Helm's wording, before anything (the journal
        // included) is touched.
        if t.store
            .history(&a.namespace, &a.name)
            .map_err(|e| rudder::error_chain(&e))?
            .is_empty()
        {
            return Err("release: not found".into());
        }
        recover_first(&t, &a.namespace, &a.name, &printer)?;
        let ops = Releases::new(t.store.as_ref());
        let last = ops
            .last(&a.namespace, &a.name)
            .map_err(|e| rudder::error_chain(&e))?;
        let to = a
            .revision
            .filter(|r| *r > 0)
            .unwrap_or(last.version.saturating_sub(1));
        if !t
            .store
            .history(&a.namespace, &a.name)
            .map_err(|e| rudder::error_chain(&e))?
            .iter()
            .any(|r| r.version == to)
        {
            return Err(format!("release has no {to} version"));
        }
        if last.info.status.is_pending() {
            return Err("another operation (install/upgrade/rollback) is in progress".into());
        }
        if a.dry_run {
            println!(
                "Rollback of {} to revision {to} (dry run: nothing written)",
                a.name
            );
            return Ok(());
        }
        let timeout = parse_duration(&a.timeout).map_err(|e| {
            format!(
                "invalid argument {:?} for \"--timeout\" flag: {e}",
                a.timeout
            )
        })?;
        let opts = ReleaseOptions {
            atomic: false,
            wait: a.wait,
            wait_for_jobs: a.wait_for_jobs,
            timeout,
            history_max: a.history_max,
            ..ReleaseOptions::default()
        };
        let clock = WallClock::default();
        let ex = executor(&t, &clock, &printer).with_options(ExecOptions {
            force_conflicts: a.force_conflicts,
            ..ExecOptions::default()
        });
        let mut j = t
            .journal
            .lock(&a.namespace, &a.name)
            .map_err(|e| rudder::error_chain(&e))?;
        let r = ex.rollback_release(&a.namespace, &a.name, to, &opts, &mut j, "rudder rollback");
        printer.finish_line();
        r.map_err(operation_text)?;
        println!("Rollback was a success! Happy Helming!");
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail("", &e),
    }
}

/// Runs `rudder uninstall`.
pub fn uninstall(a: UninstallArgs) -> ExitCode {
    let printer = Printer::new(false);
    let run = || -> Result<(), String> {
        let wait = if a.wait {
            Some(parse_duration(&a.timeout).map_err(|e| {
                format!(
                    "invalid argument {:?} for \"--timeout\" flag: {e}",
                    a.timeout
                )
            })?)
        } else {
            None
        };
        let t = open_targets()?;
        announce(&t);
        for name in &a.names {
            let hist = t
                .store
                .history(&a.namespace, name)
                .map_err(|e| rudder::error_chain(&e))?;
            if hist.is_empty() {
                if a.ignore_not_found {
                    continue;
                }
                return Err(format!(
                    "uninstall: Release not loaded: {name}: release: not found"
                ));
            }
            if a.dry_run {
                println!("release {name:?} would be uninstalled (dry run)");
                continue;
            }
            let clock = WallClock::default();
            let ex = executor(&t, &clock, &printer);
            let mut j = t
                .journal
                .lock(&a.namespace, name)
                .map_err(|e| rudder::error_chain(&e))?;
            ex.uninstall_release(&a.namespace, name, a.keep_history, wait, &mut j)
                .map_err(operation_text)?;
            if let Some(desc) = &a.description {
                if a.keep_history {
                    if let Ok(last) = Releases::new(t.store.as_ref()).last(&a.namespace, name) {
                        let mut n = last.clone();
                        n.info.description = desc.clone();
                        let _ = t.store.update(&last, &n);
                    }
                }
            }
            println!("release {name:?} uninstalled");
        }
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail("", &e),
    }
}

/// Runs `rudder apply`.
pub fn apply(a: ApplyArgs) -> ExitCode {
    let json = a.output == "json";
    let printer = Printer::new(json);
    let run = || -> Result<exec::Report, String> {
        let t = open_targets()?;
        announce(&t);
        // An atomic plan that a crash interrupted is unwound first.
        {
            let clock = WallClock::default();
            executor(&t, &clock, &printer)
                .recover_transactions()
                .map_err(|e| rudder::error_chain(&e))?;
        }
        let mut atomic_plan = a.atomic_plan;
        let releases = match (&a.plan, &a.file) {
            (Some(_), _) => None,
            (None, Some(f)) => {
                let file =
                    rudder::plan::file::read(Path::new(f)).map_err(|e| rudder::error_chain(&e))?;
                atomic_plan |= file.atomic_plan;
                let releases = file
                    .load_releases_with(&super::source::releases_file_options())
                    .map_err(|e| rudder::error_chain(&e))?;
                for r in &releases {
                    recover_first(&t, &r.namespace, &r.name, &printer)?;
                }
                Some(releases)
            }
            (None, None) => return Err("apply needs a releases file or --plan".into()),
        };
        let clock = WallClock::default();
        let execute = |plan: &Plan| {
            if a.strict_preflight && plan.releases.iter().any(|r| !r.preflight.is_empty()) {
                return Err(exec::ExecError::Stale(
                    "preflight warnings and --strict-preflight: fix them first (see `rudder plan`)"
                        .into(),
                ));
            }
            let before = super::request_counts_if_asked(t.cluster.as_ref());
            let r = executor(&t, &clock, &printer)
                .with_options(ExecOptions {
                    force_conflicts: a.force_conflicts,
                    cross_release: if atomic_plan {
                        exec::CrossRelease::AtomicPlan
                    } else if a.rollback_completed {
                        exec::CrossRelease::RollbackCompleted
                    } else {
                        exec::CrossRelease::Stop
                    },
                    concurrency: a.concurrency,
                    fail_fast: a.fail_fast.then(exec::FailFast::default),
                    log_lines: a.log_lines,
                    ..ExecOptions::default()
                })
                .apply(plan);
            printer.finish_line();
            super::report_requests("apply", t.cluster.as_ref(), before);
            r
        };
        let report = match (&a.plan, releases) {
            (Some(p), _) => {
                let text =
                    rudder::input::read_to_string(p).map_err(|e| format!("open {p}: {e}"))?;
                let plan: Plan = rudder::yaml::json_from_str(&text)
                    .map_err(|e| format!("{p}: not a rudder plan: {e}"))?;
                print_warnings(&plan);
                print_preflight(&plan);
                execute(&plan).map_err(|e| rudder::error_chain(&e))
            }
            (None, Some(releases)) => {
                // The plan is this run's own, made a moment ago: when the
                // cluster moved in between (a controller updating a status
                // bumps resourceVersion), nothing was written, so plan again.
                let mut tries = 0;
                loop {
                    let before = super::request_counts_if_asked(t.cluster.as_ref());
                    let plan = Planner::new(t.store.as_ref(), &t.store_url, t.cluster.as_ref())
                        .with_options(PlanOptions {
                            cross_release: if atomic_plan {
                                rudder::plan::planner::ATOMIC_PLAN.into()
                            } else {
                                PlanOptions::default().cross_release
                            },
                            ..PlanOptions::default()
                        })
                        .plan(&releases)
                        .map_err(|e| super::chart::error_chain(&e))?;
                    super::report_requests("plan", t.cluster.as_ref(), before);
                    if tries == 0 {
                        print_warnings(&plan);
                        print_preflight(&plan);
                    }
                    match execute(&plan) {
                        Err(exec::ExecError::Stale(why)) if tries < 3 => {
                            tries += 1;
                            eprintln!("the cluster changed while planning ({why}); planning again");
                        }
                        r => break r.map_err(|e| rudder::error_chain(&e)),
                    }
                }
            }
            (None, None) => return Err("apply needs a releases file or --plan".into()),
        };
        printer.finish_line();
        report
    };
    match run() {
        Ok(report) => {
            if json {
                println!("{}", serde_json::to_string(&report).unwrap_or_default());
            } else {
                for r in &report.releases {
                    match &r.error {
                        Some(e) => println!(
                            "{}: {} (revision {}): {e}",
                            r.release, r.outcome, r.revision
                        ),
                        None => println!("{}: {} (revision {})", r.release, r.outcome, r.revision),
                    }
                }
                for d in &report.diagnoses {
                    print!("{d}");
                }
            }
            if report.success() {
                ExitCode::SUCCESS
            } else {
                if let Some(e) = report.first_error() {
                    eprintln!("Error: {e}");
                }
                ExitCode::FAILURE
            }
        }
        Err(e) => fail("", &e),
    }
}

/// A failed rollback or uninstall in Helm's words: the failure, or the
/// store's error, without the release the command line already names.
fn operation_text(e: exec::ExecError) -> String {
    match e {
        exec::ExecError::ReleaseFailed { message, .. } => message,
        exec::ExecError::Store { source, .. } => rudder::error_chain(source.as_ref()),
        e => rudder::error_chain(&e),
    }
}
