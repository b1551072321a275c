//! Command-line dispatch. Each sub-command family lives in its own file and
//! only parses flags and calls the library.
use clap::{Args, Parser, Subcommand};
use std::process::ExitCode;
use std::sync::OnceLock;

mod chart;
mod cluster;
mod exec;
mod plan;
mod release;
mod template;
mod values;

/// Flags every subcommand takes: where records and objects are.
#[derive(Debug, Args, Clone, Default)]
pub struct GlobalArgs {
    /// Release store: `file:DIR` (embedded, the default `file:.rudder` on
    /// the simulated cluster), `memory:`, `postgresql://...`, or Helm's
    /// `secret` (the default on a real cluster) / `configmap` drivers.
    /// Without it, `HELM_DRIVER` is honoured as Helm does.
    #[arg(long, global = true)]
    pub store: Option<String>,
    /// Cluster: `sim:DIR` (the embedded simulated cluster, default
    /// `sim:.rudder/cluster`) or `kube` (a real one; also chosen by
    /// `--kubeconfig`, `--kube-context` or `KUBECONFIG`).
    #[arg(long, global = true)]
    pub cluster: Option<String>,
    /// Path to the kubeconfig file of a real cluster.
    #[arg(long, global = true)]
    pub kubeconfig: Option<String>,
    /// The kubeconfig context to use.
    #[arg(long = "kube-context", global = true)]
    pub kube_context: Option<String>,
}

/// The default store of the embedded setup.
pub const DEFAULT_STORE: &str = "file:.rudder";
/// The default cluster of the embedded setup.
pub const DEFAULT_CLUSTER: &str = "sim:.rudder/cluster";

impl GlobalArgs {
    /// Whether the flags and environment choose a real cluster:
    /// `--cluster kube`, or no `--cluster` and any of `--kubeconfig`,
    /// `--kube-context` or a non-empty `KUBECONFIG` (`~/.kube/config` alone
    /// does not).
    pub fn real_cluster(&self) -> bool {
        match self.cluster.as_deref() {
            Some(c) => c == "kube" || c.starts_with("kube?") || c.starts_with("kube:"),
            None => {
                self.kubeconfig.is_some()
                    || self.kube_context.is_some()
                    || std::env::var_os("KUBECONFIG").is_some_and(|v| !v.is_empty())
            }
        }
    }

    /// The store URL in effect: `--store`, else `HELM_DRIVER` as Helm reads
    /// it (`secret`, `configmap`, `memory`, `sql` with
    /// `HELM_DRIVER_SQL_CONNECTION_STRING`), else the Secrets driver on a
    /// real cluster and `file:.rudder` on the simulated one.
    pub fn store_url(&self) -> Result<String, String> {
        if let Some(s) = &self.store {
            return Ok(s.clone());
        }
        let driver = std::env::var("HELM_DRIVER").unwrap_or_default();
        match driver.as_str() {
            "" => {}
            "secret" | "secrets" | "configmap" | "configmaps" => return Ok(driver),
            "memory" => return Ok("memory:".into()),
            "sql" => {
                let dsn = std::env::var("HELM_DRIVER_SQL_CONNECTION_STRING").unwrap_or_default();
                if dsn.is_empty() {
                    return Err("HELM_DRIVER=sql needs HELM_DRIVER_SQL_CONNECTION_STRING".into());
                }
                return Ok(dsn);
            }
            other => return Err(format!("unknown driver {other:?}")),
        }
        Ok(if self.real_cluster() {
            "secret".to_string()
        } else {
            DEFAULT_STORE.to_string()
        })
    }

    /// The cluster URL in effect (`sim:DIR`, or `kube?kubeconfig=..&context=..`
    /// for a real one), or an error for what this build does not support.
    pub fn cluster_url(&self) -> Result<String, String> {
        if !self.real_cluster() {
            return Ok(self
                .cluster
                .clone()
                .unwrap_or_else(|| DEFAULT_CLUSTER.to_string()));
        }
        #[cfg(feature = "kube")]
        {
            if let Some(c) = self.cluster.as_deref().filter(|c| *c != "kube") {
                return Ok(c.to_string());
            }
            Ok(rudder::cluster::kube::url_for(
                &rudder::cluster::kube::KubeOptions {
                    kubeconfig: self.kubeconfig.clone(),
                    context: self.kube_context.clone(),
                },
            ))
        }
        #[cfg(not(feature = "kube"))]
        {
            Err("real Kubernetes clusters need rudder built with the kube feature: use --cluster sim:DIR".into())
        }
    }
}

static GLOBAL: OnceLock<GlobalArgs> = OnceLock::new();

/// The global flags of this invocation.
pub fn global() -> &'static GlobalArgs {
    GLOBAL.get_or_init(GlobalArgs::default)
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
}

/// Parses the command line, runs it and maps errors to Helm's `Error: ...` form.
pub fn main() -> ExitCode {
    // `rudder template` is the hot path: a small chart renders in about two
    // milliseconds, a tenth of them spent building the parser for every
    // subcommand. It is parsed with its own flags alone first; whatever
    // does not parse that way (help, mistakes) goes through the full
    // parser below, which prints exactly what it always did.
    if let Some(a) = template::parse_alone(std::env::args_os()) {
        return template::run(&a);
    }
    let cli = Cli::parse();
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
    }
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
        ];
        for s in same {
            let fast = template::parse_alone(argv(s)).expect(s);
            let Command::Template(full) = Cli::try_parse_from(argv(s)).expect(s).command else {
                panic!("{s}: not template");
            };
            assert_eq!(format!("{fast:?}"), format!("{full:?}"), "{s}");
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
