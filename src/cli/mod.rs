//! Command-line dispatch. Each sub-command family lives in its own file and
//! only parses flags and calls the library.
use clap::{Parser, Subcommand};
use std::process::ExitCode;
use std::sync::OnceLock;

mod chart;
mod cluster;
mod dependency;
mod exec;
mod fixtures;
mod global;
mod plan;
mod pull;
#[cfg(feature = "remote")]
mod registry;
mod release;
mod repo;
mod repo_index;
mod source;
mod template;
mod usage;
mod values;
#[cfg(feature = "provenance")]
mod verify;

pub use global::GlobalArgs;

static GLOBAL: OnceLock<GlobalArgs> = OnceLock::new();

/// The global flags of this invocation.
pub fn global() -> &'static GlobalArgs {
    GLOBAL.get_or_init(GlobalArgs::default)
}

/// The environment variable that makes `plan` and `apply` report their
/// API requests on stderr.
pub const REQUEST_STATS_ENV: &str = "RUDDER_REQUEST_STATS";

/// The cluster's request counts now, when `RUDDER_REQUEST_STATS` asks for
/// them (set and not empty or `0`).
pub fn request_counts_if_asked(
    cluster: &dyn rudder::cluster::Cluster,
) -> Option<rudder::cluster::RequestCounts> {
    let asked = std::env::var_os(REQUEST_STATS_ENV).is_some_and(|v| !v.is_empty() && v != "0");
    if asked {
        cluster.request_counts()
    } else {
        None
    }
}

/// Prints `requests: plan: 14 requests (get 2, list 6, ...)` on stderr:
/// what `step` sent since `before` (from [`request_counts_if_asked`]).
pub fn report_requests(
    step: &str,
    cluster: &dyn rudder::cluster::Cluster,
    before: Option<rudder::cluster::RequestCounts>,
) {
    if let (Some(b), Some(now)) = (before, cluster.request_counts()) {
        eprintln!("requests: {step}: {}", now.since(&b));
    }
}

/// rudder: build, render and release Helm charts.
#[derive(Debug, Parser)]
#[command(name = "rudder", version, about)]
pub struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List releases (as `helm list`).
    #[command(visible_alias = "ls")]
    List(release::ListArgs),
    /// Fetch release history (as `helm history`).
    #[command(visible_alias = "hist")]
    History(release::HistoryArgs),
    /// Display the status of the named release (as `helm status`).
    Status(release::StatusArgs),
    /// Download extended information of a named release (as `helm get`).
    Get(release::GetArgs),
    /// Build charts (`chart from-manifests`).
    Chart(chart::ChartArgs),
    /// Package a chart directory into a chart archive (as `helm package`).
    Package(chart::PackageArgs),
    /// Examine a chart for possible issues (as `helm lint`).
    Lint(chart::LintArgs),
    /// Show information of a chart (as `helm show`).
    Show(chart::ShowArgs),
    /// Locally render templates (as `helm template`).
    Template(template::TemplateArgs),
    /// Build the embedded fixture components' charts into a folder.
    BuildFixtures(chart::BuildFixturesArgs),
    /// Install a chart (as `helm install`).
    Install(exec::InstallArgs),
    /// Upgrade a release (as `helm upgrade`).
    Upgrade(exec::UpgradeArgs),
    /// Roll a release back to a revision (as `helm rollback`).
    Rollback(exec::RollbackArgs),
    /// Uninstall a release (as `helm uninstall`).
    #[command(visible_aliases = ["un", "delete", "del"])]
    Uninstall(exec::UninstallArgs),
    /// Plan a releases file and execute the plan, or execute a saved plan.
    Apply(exec::ApplyArgs),
    /// Plan a releases file: what changes, in which order (nothing is written).
    Plan(plan::PlanArgs),
    /// Show what an upgrade would change (as helm-diff).
    Diff(plan::DiffArgs),
    /// Read and write objects in a cluster (as kubectl get/apply/delete).
    Cluster(cluster::ClusterArgs),
    /// Add, list, remove, update and index chart repositories (as `helm repo`).
    Repo(repo::RepoArgs),
    /// Download a chart from a repository, a URL or a registry (as `helm pull`).
    #[command(visible_alias = "fetch")]
    Pull(pull::PullArgs),
    /// Verify that a chart at the given path has been signed and is valid (as `helm verify`).
    #[cfg(feature = "provenance")]
    Verify(verify::VerifyArgs),
    /// Manage a chart's dependencies (as `helm dependency`).
    #[command(visible_aliases = ["dep", "dependencies"])]
    Dependency(dependency::DependencyArgs),
    /// Login to or logout from a registry (as `helm registry`).
    #[cfg(feature = "remote")]
    Registry(registry::RegistryArgs),
    /// Push a chart to a remote (as `helm push`).
    #[cfg(feature = "remote")]
    Push(registry::PushArgs),
}

/// Parses the command line, runs it and maps errors to Helm's `Error: ...` form.
pub fn main() -> ExitCode {
    // `rudder template` is the hot path: a small chart renders in about two
    // milliseconds, a tenth of them spent building the parser for every
    // subcommand. It is parsed with its own flags alone first; whatever
    // does not parse that way (help, mistakes) goes through the full
    // parser below, which prints exactly what it always did.
    if let Some((g, a)) = template::parse_alone(std::env::args_os()) {
        let _ = GLOBAL.set(g);
        return template::run(&a);
    }
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match parse_helm_style(&argv) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let _ = GLOBAL.set(cli.global.clone());
    match cli.command {
        Command::List(a) => release::list(a),
        Command::History(a) => release::history(a),
        Command::Status(a) => release::status(a),
        Command::Get(a) => release::get(a),
        Command::Chart(a) => chart::chart(a),
        Command::Package(a) => chart::package(a),
        Command::Lint(a) => chart::lint(a),
        Command::Show(a) => chart::show(a),
        Command::BuildFixtures(a) => chart::build_fixtures(a),
        Command::Template(a) => template::run(&a),
        Command::Cluster(a) => cluster::run(a),
        Command::Plan(a) => plan::plan(a),
        Command::Install(a) => exec::install(a),
        Command::Upgrade(a) => exec::upgrade(a),
        Command::Rollback(a) => exec::rollback(a),
        Command::Uninstall(a) => exec::uninstall(a),
        Command::Apply(a) => exec::apply(a),
        Command::Diff(a) => plan::diff(a),
        Command::Repo(a) => repo::run(a),
        Command::Pull(a) => pull::run(a),
        #[cfg(feature = "provenance")]
        Command::Verify(a) => verify::run(a),
        Command::Dependency(a) => dependency::run(a),
        #[cfg(feature = "remote")]
        Command::Registry(a) => registry::registry(a),
        #[cfg(feature = "remote")]
        Command::Push(a) => registry::push(a),
    }
}

/// Parses `argv` as Helm would for the Helm-shaped commands (Helm's
/// messages, exit 1; help to stdout, exit 0) and as clap does otherwise.
fn parse_helm_style(argv: &[std::ffi::OsString]) -> Result<Cli, ExitCode> {
    use clap::CommandFactory;
    let root = Cli::command();
    let parsed = usage::normalize(&root, argv);
    let line = match parsed {
        usage::Parsed::Clap => argv.to_vec(),
        usage::Parsed::Normalized(n) => n,
        usage::Parsed::Error(m) => {
            eprintln!("Error: {m}");
            return Err(ExitCode::from(1));
        }
        usage::Parsed::Help(path) => {
            let mut cmd = root;
            cmd.build();
            let mut found = Some(&mut cmd);
            for p in &path {
                found = found.and_then(|c| c.find_subcommand_mut(p));
            }
            if let Some(c) = found {
                print!("{}", c.render_help());
            }
            return Err(ExitCode::SUCCESS);
        }
    };
    Cli::try_parse_from(&line).map_err(|e| {
        use clap::error::ErrorKind;
        match e.kind() {
            ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                let _ = e.print();
                ExitCode::SUCCESS
            }
            ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand if argv.len() <= 1 => {
                // `rudder` alone: Helm prints its help and succeeds.
                print!("{}", Cli::command().render_help());
                ExitCode::SUCCESS
            }
            _ => match usage::clap_error_text(&Cli::command(), &line, &e) {
                Some(m) => {
                    eprintln!("Error: {m}");
                    ExitCode::from(1)
                }
                None => {
                    let _ = e.print();
                    ExitCode::from(2)
                }
            },
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<std::ffi::OsString> {
        s.split_whitespace().map(Into::into).collect()
    }

    /// The template fast path takes exactly the arguments the full parser
    /// would read the same way, and leaves everything else to it.
    #[test]
    fn template_alone_parses_as_the_full_parser() {
        let same = [
            "rudder template chart",
            "rudder template rel chart -n ns --kube-version 1.31.0 --output-dir out",
            "rudder template rel chart -f a.yaml,b.yaml --set a=1 --set-string b=2 --include-crds",
            "rudder template chart --show-only templates/a.yaml --skip-tests --no-hooks --is-upgrade",
            "rudder template chart --debug --store memory: --name-template x -g --skip-crds",
            "rudder template chart -l a=b --labels c=d,e=f --description d --post-renderer cat --post-renderer-args a",
        ];
        for s in same {
            let (fast_global, fast) = template::parse_alone(argv(s)).expect(s);
            let cli = Cli::try_parse_from(argv(s)).expect(s);
            let Command::Template(full) = cli.command else {
                panic!("{s}: not template");
            };
            assert_eq!(format!("{fast:?}"), format!("{full:?}"), "{s}");
            assert_eq!(
                format!("{fast_global:?}"),
                format!("{:?}", cli.global),
                "{s}"
            );
        }
        let left = [
            "rudder",
            "rudder lint chart",
            "rudder template",
            "rudder template --help",
            "rudder template -h chart",
            "rudder template chart --no-such-flag",
            "rudder template chart --namespace",
        ];
        for s in left {
            assert!(template::parse_alone(argv(s)).is_none(), "{s}");
        }
    }
}
