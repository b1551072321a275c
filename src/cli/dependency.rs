//! `rudder dependency update|build|list` (aliases `dep`, `dependencies`):
//! Helm's `helm dependency` commands, flags, output and exit codes, over
//! [`rudder::source::deps`].
use clap::{Args, Subcommand};
#[cfg(not(feature = "remote"))]
use rudder::source::deps::LocalFetcher;
use rudder::source::deps::{self, DepsError, Fetcher, Manager};
use std::process::ExitCode;

/// `rudder dependency ...`.
#[derive(Debug, Args)]
pub struct DependencyArgs {
    #[command(subcommand)]
    command: DependencyCommand,
}

#[derive(Debug, Subcommand)]
enum DependencyCommand {
    /// List the dependencies for the given chart.
    #[command(visible_alias = "ls")]
    List(ListArgs),
    /// Update charts/ based on the contents of Chart.yaml.
    #[command(visible_alias = "up")]
    Update(FetchArgs),
    /// Rebuild the charts/ directory based on the Chart.lock file.
    Build(FetchArgs),
}

/// `rudder dependency list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// The chart (a directory or an archive; default `.`).
    chart: Vec<String>,
    /// Maximum column width for output table.
    #[arg(long, default_value_t = 80)]
    max_col_width: usize,
}

/// `rudder dependency update` and `build`. The transport flags are Helm's;
/// they take effect with the fetcher that downloads (the local one reads
/// `file://` and `charts/` dependencies only).
#[derive(Debug, Args)]
#[allow(dead_code)]
pub struct FetchArgs {
    /// The chart directory (default `.`).
    chart: Vec<String>,
    /// Verify the packages against signatures.
    #[arg(long)]
    verify: bool,
    /// Keyring containing public keys.
    #[arg(long)]
    keyring: Option<String>,
    /// Do not refresh the local repository cache.
    #[arg(long)]
    skip_refresh: bool,
    /// Chart repository username where to locate the requested chart.
    #[arg(long)]
    username: Option<String>,
    /// Chart repository password where to locate the requested chart.
    #[arg(long)]
    password: Option<String>,
    /// Identify HTTPS client using this SSL certificate file.
    #[arg(long)]
    cert_file: Option<String>,
    /// Identify HTTPS client using this SSL key file.
    #[arg(long)]
    key_file: Option<String>,
    /// Skip tls certificate checks for the chart download.
    #[arg(long)]
    insecure_skip_tls_verify: bool,
    /// Use insecure HTTP connections for the chart download.
    #[arg(long)]
    plain_http: bool,
    /// Verify certificates of HTTPS-enabled servers using this CA bundle.
    #[arg(long)]
    ca_file: Option<String>,
}

fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("Error: {message}");
    ExitCode::FAILURE
}

/// Helm's `require.MaximumNArgs(1)` and `filepath.Clean(args[0])`.
fn chart_path(args: &[String], command: &str) -> Result<String, String> {
    match args {
        [] => Ok(".".into()),
        [one] => Ok(deps::clean(one)),
        _ => Err(format!(
            "\"helm dependency {command}\" accepts at most 1 argument\n\nUsage:  helm dependency {command} CHART [flags]"
        )),
    }
}

/// Runs `rudder dependency ...`.
pub fn run(a: DependencyArgs) -> ExitCode {
    match a.command {
        DependencyCommand::List(l) => list(l),
        DependencyCommand::Update(f) => fetch(f, "update"),
        DependencyCommand::Build(f) => fetch(f, "build"),
    }
}

fn list(a: ListArgs) -> ExitCode {
    let path = match chart_path(&a.chart, "list") {
        Ok(p) => p,
        Err(m) => return fail(m),
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match deps::list(&path, a.max_col_width, &mut out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(rudder::error_chain(&e)),
    }
}

/// `--keyring`, by default Helm's (`~/.gnupg/pubring.gpg`).
#[cfg(feature = "remote")]
fn keyring(a: &FetchArgs) -> std::path::PathBuf {
    match &a.keyring {
        Some(k) => k.into(),
        #[cfg(feature = "provenance")]
        None => rudder::source::provenance::default_keyring(),
        #[cfg(not(feature = "provenance"))]
        None => std::path::PathBuf::new(),
    }
}

fn fetch(a: FetchArgs, command: &str) -> ExitCode {
    let path = match chart_path(&a.chart, command) {
        Ok(p) => p,
        Err(m) => return fail(m),
    };
    let paths = super::global().helm_paths();
    #[cfg(feature = "remote")]
    let fetcher = {
        let path = |s: &Option<String>| {
            s.as_ref()
                .filter(|s| !s.is_empty())
                .map(std::path::PathBuf::from)
        };
        let mut f = deps::fetch::RepoFetcher::new(
            paths.clone(),
            rudder::source::http::HttpOptions {
                username: a.username.clone().unwrap_or_default(),
                password: a.password.clone().unwrap_or_default(),
                ca_file: path(&a.ca_file),
                cert_file: path(&a.cert_file),
                key_file: path(&a.key_file),
                insecure_skip_tls_verify: a.insecure_skip_tls_verify,
                ..Default::default()
            },
            a.plain_http,
        );
        f.verify = a
            .verify
            .then(|| deps::verify::Verify::for_command(command == "update", keyring(&a)));
        f
    };
    #[cfg(not(feature = "remote"))]
    let fetcher = LocalFetcher {
        repository_config: paths.repository_config.clone(),
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut m = Manager {
        chart_path: path,
        skip_update: a.skip_refresh,
        debug: super::global().debug,
        fetcher: &fetcher as &dyn Fetcher,
        out: &mut out,
    };
    let r = if command == "build" {
        m.build()
    } else {
        m.update().map(|_| ())
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        // `helm dependency build` adds a hint to a missing repository.
        Err(e @ DepsError::RepoNotFound(_)) if command == "build" => fail(format!(
            "{}. Please add the missing repos via 'helm repo add'",
            rudder::error_chain(&e)
        )),
        Err(e) => fail(rudder::error_chain(&e)),
    }
}
