//! The chart-path flags (Helm's `ChartPathOptions`) that every command
//! taking a chart reference has, and their translation into
//! [`rudder::source::resolve::LocateOptions`].
use clap::Args;
use rudder::source::resolve::LocateOptions;
use std::path::PathBuf;

/// `--version`, `--repo`, credentials and TLS for a chart reference.
#[derive(Debug, Args, Clone, Default)]
pub struct ChartPathArgs {
    /// Specify a version constraint for the chart version to use. This
    /// constraint can be a specific tag (e.g. 1.1.1) or it may reference a
    /// valid range (e.g. ^2.0.0). If this is not specified, the latest
    /// version is used.
    #[arg(long)]
    pub version: Option<String>,
    /// Use development versions, too. Equivalent to version '>0.0.0-0'. If
    /// --version is set, this is ignored.
    #[arg(long)]
    pub devel: bool,
    /// Chart repository url where to locate the requested chart.
    #[arg(long)]
    pub repo: Option<String>,
    /// Chart repository username where to locate the requested chart.
    #[arg(long)]
    pub username: Option<String>,
    /// Chart repository password where to locate the requested chart.
    #[arg(long)]
    pub password: Option<String>,
    /// Verify certificates of HTTPS-enabled servers using this CA bundle.
    #[arg(long = "ca-file")]
    pub ca_file: Option<PathBuf>,
    /// Identify HTTPS client using this SSL certificate file.
    #[arg(long = "cert-file")]
    pub cert_file: Option<PathBuf>,
    /// Identify HTTPS client using this SSL key file.
    #[arg(long = "key-file")]
    pub key_file: Option<PathBuf>,
    /// Skip tls certificate checks for the chart download.
    #[arg(long = "insecure-skip-tls-verify")]
    pub insecure_skip_tls_verify: bool,
    /// Pass credentials to all domains.
    #[arg(long = "pass-credentials")]
    pub pass_credentials: bool,
    /// Use insecure HTTP connections for the chart download.
    #[arg(long = "plain-http")]
    pub plain_http: bool,
    /// Verify the package before using it.
    #[arg(long)]
    pub verify: bool,
    /// Location of public keys used for verification.
    #[arg(long)]
    pub keyring: Option<PathBuf>,
}

impl ChartPathArgs {
    /// The library's options for these flags, with Helm's files where the
    /// global flags and the environment say they are.
    pub fn locate(&self) -> LocateOptions {
        let mut o = LocateOptions::from_env();
        o.paths = super::global().helm_paths();
        o.version = self.version.clone().unwrap_or_default();
        o.devel = self.devel;
        o.repo_url = self.repo.clone().filter(|r| !r.is_empty());
        o.plain_http = self.plain_http;
        o.http.username = self.username.clone().unwrap_or_default();
        o.http.password = self.password.clone().unwrap_or_default();
        o.http.ca_file = self.ca_file.clone();
        o.http.cert_file = self.cert_file.clone();
        o.http.key_file = self.key_file.clone();
        o.http.insecure_skip_tls_verify = self.insecure_skip_tls_verify;
        o.http.pass_credentials_all = self.pass_credentials;
        o.verify = self.verify;
        o.keyring = self.keyring.clone();
        o
    }
}

/// Loads the chart `arg` names, wherever it is: a path, `REPO/CHART`,
/// `oci://...` or a URL.
pub fn load_chart(arg: &str, flags: &ChartPathArgs) -> Result<rudder::Chart, String> {
    rudder::source::resolve::load_chart(arg, &flags.locate()).map_err(|e| rudder::error_chain(&e))
}

/// The options a releases file's charts are found with: Helm's files where
/// the global flags and the environment say they are (each release has its
/// own version, each repository of the file its own credentials).
pub fn releases_file_options() -> LocateOptions {
    let mut o = LocateOptions::from_env();
    o.paths = super::global().helm_paths();
    o
}
