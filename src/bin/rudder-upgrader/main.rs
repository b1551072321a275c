//! `rudder-upgrader`: Lokomotive's control-plane upgrade as plan-then-apply,
//! a thin command line over [`rudder::upgrader`].
use clap::{Args, Parser, Subcommand};
use rudder::upgrader::{self, config::Loaded, Options};
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

mod demo;
#[path = "../../cli/global.rs"]
mod global;

use global::GlobalArgs;

/// rudder-upgrader: keep a cluster's control plane up to date, release by
/// release, in the order the Kubernetes version-skew policy demands.
#[derive(Debug, Parser)]
#[command(name = "rudder-upgrader", version, about)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(flatten)]
    common: Common,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Args)]
struct Common {
    /// The cluster config (YAML).
    #[arg(long, global = true, default_value = "cluster.yaml")]
    config: PathBuf,
    /// Also upgrade the self-hosted kubelets.
    #[arg(long, global = true)]
    upgrade_kubelets: bool,
    /// The deadline of each component's release, and of its rollback (a Go duration).
    #[arg(long, global = true, default_value = "5m0s")]
    timeout: String,
    /// Plan and print what would be done; write nothing.
    #[arg(long, global = true)]
    dry_run: bool,
    /// Fail a wait at once, instead of at its deadline, when a pod is
    /// unschedulable for 15 s, cannot pull its image, or crash-loops past
    /// 3 restarts; the component is then rolled back.
    #[arg(long, global = true)]
    fail_fast: bool,
    /// How many lines of a failing container's log the failure report
    /// shows, where the cluster serves logs (0: none).
    #[arg(long, global = true, default_value_t = rudder::exec::DEFAULT_LOG_LINES)]
    log_lines: u32,
    /// Refuse to apply a plan with preflight warnings.
    #[arg(long, global = true)]
    strict_preflight: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show the plan: every component's release, in upgrade order, and what changes.
    Plan {
        /// Output format: table, json, or html (a self-contained page with
        /// the upgrade order as a graph and every diff).
        #[arg(short = 'o', long, default_value = "table")]
        output: String,
    },
    /// Plan, show the summary, then execute (asks for `yes` on a terminal).
    Apply {
        /// Do not ask for confirmation.
        #[arg(long)]
        confirm: bool,
    },
    /// Show a component's release history.
    History {
        /// The component (kube-apiserver, calico, ...).
        component: String,
    },
    /// Roll a component back to a revision (default: the one before the last).
    Rollback {
        /// The component.
        component: String,
        /// The revision.
        revision: Option<u64>,
    },
    /// Run the whole story on the simulated cluster in a scratch directory.
    Demo {
        /// The directory (default: a new temporary one).
        dir: Option<PathBuf>,
    },
}

fn options(c: &Common) -> Result<Options, String> {
    let timeout = rudder::duration::parse(&c.timeout).map_err(|e| {
        format!(
            "invalid argument {:?} for \"--timeout\" flag: {e}",
            c.timeout
        )
    })?;
    if timeout.is_zero() {
        return Err("--timeout must be more than 0: a zero timeout would wait forever".into());
    }
    Ok(Options {
        upgrade_kubelets: c.upgrade_kubelets,
        timeout,
        fail_fast: c.fail_fast.then(rudder::exec::FailFast::default),
        log_lines: c.log_lines,
        ..Options::default()
    })
}

fn targets(g: &GlobalArgs) -> Result<rudder::targets::Targets, String> {
    let open = || upgrader::open(&g.store_url()?, &g.cluster_url()?);
    open().map_err(|e| rudder::error_chain(&e))
}

fn retry_command() -> String {
    let mut args: Vec<String> = std::env::args()
        .map(|a| {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c)) {
                format!("'{}'", a.replace('\'', r"'\''"))
            } else {
                a
            }
        })
        .collect();
    if let Some(first) = args.first_mut() {
        *first = "rudder-upgrader".into();
    }
    args.join(" ")
}

fn run(cli: Cli) -> Result<ExitCode, String> {
    let err = |e: upgrader::UpgraderError| rudder::error_chain(&e);
    match cli.command {
        Command::Demo { dir } => {
            let tmp;
            let dir = match dir {
                Some(d) => {
                    std::fs::create_dir_all(&d)
                        .map_err(|e| format!("creating {}: {e}", d.display()))?;
                    d
                }
                None => {
                    tmp = std::env::temp_dir()
                        .join(format!("rudder-upgrader-demo-{}", std::process::id()));
                    std::fs::create_dir_all(&tmp)
                        .map_err(|e| format!("creating {}: {e}", tmp.display()))?;
                    tmp
                }
            };
            let mut out = std::io::stdout();
            let mut progress = std::io::stderr();
            let ok = demo::run(&dir, demo::Timing::default(), &mut out, Some(&mut progress))
                .map_err(err)?;
            Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::History { component } => {
            let t = targets(&cli.global)?;
            print!("{}", upgrader::history(&t, &component).map_err(err)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Rollback {
            component,
            revision,
        } => {
            let opts = options(&cli.common)?;
            if rudder::upgrader::control_plane::Kind::from_name(&component).is_none() {
                return Err(upgrader::UpgraderError::UnknownComponent(component).to_string());
            }
            let t = targets(&cli.global)?;
            if cli.common.dry_run {
                println!("Rollback of {component} (dry run: nothing written)");
                return Ok(ExitCode::SUCCESS);
            }
            let (to, v) = upgrader::rollback(&t, &component, revision, &opts).map_err(err)?;
            println!(
                "Rolled back component '{component}' to revision {to} (recorded as revision {v})."
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Plan { output } => {
            if !matches!(output.as_str(), "table" | "json" | "html") {
                return Err(format!(
                    "invalid format type {output:?}: want table, json or html"
                ));
            }
            let opts = options(&cli.common)?;
            let loaded =
                Loaded::from_file(&cli.common.config).map_err(|e| rudder::error_chain(&e))?;
            let releases = upgrader::desired_releases(&loaded, &opts).map_err(err)?;
            let t = targets(&cli.global)?;
            let plan = upgrader::plan_only(&t, &releases).map_err(err)?;
            let shown = plan.redact();
            if output == "json" {
                print!("{}", rudder::plan::view::json(&shown));
            } else if output == "html" {
                print!("{}", rudder::plan::view::html(&shown));
            } else {
                let color = std::io::stdout().is_terminal()
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
                print!("{}", rudder::plan::view::human(&shown, color));
            }
            if let Some(b) = plan.blocked().next() {
                return Err(b.blocked.clone().unwrap_or_default());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Apply { confirm } => {
            let opts = options(&cli.common)?;
            let loaded =
                Loaded::from_file(&cli.common.config).map_err(|e| rudder::error_chain(&e))?;
            let releases = upgrader::desired_releases(&loaded, &opts).map_err(err)?;
            let t = targets(&cli.global)?;
            let plan = if cli.common.dry_run {
                upgrader::plan_only(&t, &releases)
            } else {
                upgrader::plan(&t, &releases)
            }
            .map_err(err)?;
            print!("{}", upgrader::summary(&plan));
            if cli.common.strict_preflight && plan.releases.iter().any(|r| !r.preflight.is_empty())
            {
                return Err(
                    "the plan has preflight warnings (above) and --strict-preflight is given: nothing was written"
                        .into(),
                );
            }
            if cli.common.dry_run {
                println!("(dry run: nothing written)");
                return Ok(ExitCode::SUCCESS);
            }
            if !confirm && std::io::stdin().is_terminal() {
                print!("Do you want to proceed with cluster apply? [type \"yes\" to continue]: ");
                let _ = std::io::stdout().flush();
                let mut answer = String::new();
                let _ = std::io::stdin().lock().read_line(&mut answer);
                if answer.trim() != "yes" {
                    println!("Cluster apply cancelled");
                    return Ok(ExitCode::SUCCESS);
                }
            }
            let tty = std::io::stdout().is_terminal();
            let mut out = std::io::stdout();
            let mut progress = std::io::stderr();
            let r = upgrader::apply(
                &t,
                &plan,
                &opts,
                &mut out,
                Some(&mut progress),
                tty,
                &retry_command(),
            )
            .map_err(err)?;
            Ok(if r.success() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}

fn main() -> ExitCode {
    // The fault tests drive this binary with RUDDER_SIM_*; the library
    // ignores them unless told.
    rudder::enable_env_faults();
    let cli = Cli::parse();
    match run(cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("Error: {e}");
            ExitCode::FAILURE
        }
    }
}
