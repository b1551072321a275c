//! `rudder registry login|logout` and `rudder push`, as Helm's: the same
//! flags, the same output (on stderr, as Helm prints it) and exit codes,
//! the same credentials file.
use clap::{Args, Subcommand};
use rudder::source::oci::{self, OciOptions};
use std::io::Read as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use super::chart::fail;

/// `rudder registry ...`.
#[derive(Debug, Args)]
pub struct RegistryArgs {
    #[command(subcommand)]
    command: RegistryCommand,
}

#[derive(Debug, Subcommand)]
enum RegistryCommand {
    /// Login to a registry (as `helm registry login`).
    Login(LoginArgs),
    /// Logout from a registry (as `helm registry logout`).
    Logout(LogoutArgs),
}

/// `rudder registry login HOST`.
#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The registry: `host[:port]`.
    host: String,
    /// Registry username.
    #[arg(short = 'u', long)]
    username: Option<String>,
    /// Registry password or identity token.
    #[arg(short = 'p', long)]
    password: Option<String>,
    /// Read password or identity token from stdin.
    #[arg(long)]
    password_stdin: bool,
    /// Allow connections to TLS registry without certs (and, as Helm 3
    /// does, plain HTTP when HTTPS fails).
    #[arg(long)]
    insecure: bool,
    /// Use insecure HTTP connections (Helm 4's flag).
    #[arg(long)]
    plain_http: bool,
    /// Identify registry client using this SSL certificate file.
    #[arg(long)]
    cert_file: Option<PathBuf>,
    /// Identify registry client using this SSL key file.
    #[arg(long)]
    key_file: Option<PathBuf>,
    /// Verify certificates of HTTPS-enabled servers using this CA bundle.
    #[arg(long)]
    ca_file: Option<PathBuf>,
    /// Path to the registry config file.
    #[arg(long)]
    registry_config: Option<PathBuf>,
}

/// `rudder registry logout HOST`.
#[derive(Debug, Args)]
pub struct LogoutArgs {
    /// The registry: `host[:port]`.
    host: String,
    /// Path to the registry config file.
    #[arg(long)]
    registry_config: Option<PathBuf>,
}

/// `rudder push CHART.tgz oci://HOST/PATH`.
#[derive(Debug, Args)]
pub struct PushArgs {
    /// The chart archive.
    chart: PathBuf,
    /// The destination: `oci://HOST/PATH`.
    remote: String,
    /// Use insecure HTTP connections for the chart upload.
    #[arg(long)]
    plain_http: bool,
    /// Skip tls certificate checks for the chart upload.
    #[arg(long)]
    insecure_skip_tls_verify: bool,
    /// Verify certificates of HTTPS-enabled servers using this CA bundle.
    #[arg(long)]
    ca_file: Option<PathBuf>,
    /// Identify registry client using this SSL certificate file.
    #[arg(long)]
    cert_file: Option<PathBuf>,
    /// Identify registry client using this SSL key file.
    #[arg(long)]
    key_file: Option<PathBuf>,
    /// Registry username (instead of the stored login).
    #[arg(long)]
    username: Option<String>,
    /// Registry password (instead of the stored login).
    #[arg(long)]
    password: Option<String>,
    /// Path to the registry config file.
    #[arg(long)]
    registry_config: Option<PathBuf>,
}

/// The deadline: `RUDDER_OCI_TIMEOUT`, else the library's default.
fn timeout() -> Duration {
    OciOptions::default().timeout
}

fn error(m: impl Into<String>) -> ExitCode {
    eprintln!("Error: {}", m.into());
    ExitCode::FAILURE
}

/// Runs `rudder registry ...`.
pub fn registry(a: RegistryArgs) -> ExitCode {
    match a.command {
        RegistryCommand::Login(l) => login(l),
        RegistryCommand::Logout(l) => logout(l),
    }
}

fn login(a: LoginArgs) -> ExitCode {
    // Helm's getUsernamePassword: stdin wins over --password.
    let password = if a.password_stdin {
        let mut s = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut s) {
            return error(format!("reading the password from stdin: {e}"));
        }
        // Helm trims the line ending only.
        let s = s.strip_suffix('\n').unwrap_or(&s);
        s.strip_suffix('\r').unwrap_or(s).to_string()
    } else if let Some(p) = a.password.clone().filter(|p| !p.is_empty()) {
        eprintln!("WARNING: Using --password via the CLI is insecure. Use --password-stdin.");
        p
    } else {
        // Helm prompts on the terminal here; rudder asks for a flag.
        return error("password required: give --password-stdin (or --password)");
    };
    // No user name: the password is an identity token, as in Helm.
    let username = a.username.clone().unwrap_or_default();
    let opts = OciOptions {
        plain_http: a.plain_http,
        ca_file: a.ca_file,
        cert_file: a.cert_file,
        key_file: a.key_file,
        registry_config: a.registry_config,
        timeout: timeout(),
        ..OciOptions::default()
    };
    match oci::login(&a.host, &username, &password, a.insecure, &opts) {
        Ok(()) => {
            eprintln!("Login Succeeded");
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

fn logout(a: LogoutArgs) -> ExitCode {
    let opts = OciOptions {
        registry_config: a.registry_config,
        ..OciOptions::default()
    };
    match oci::logout(&a.host, &opts) {
        Ok(()) => {
            eprintln!("Removing login credentials for {}", a.host);
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

/// Runs `rudder push`.
pub fn push(a: PushArgs) -> ExitCode {
    let path = a.chart.display().to_string();
    let meta = match std::fs::metadata(&a.chart) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return error(format!("{path}: no such file"))
        }
        Err(e) => return error(format!("{path}: {e}")),
    };
    if meta.is_dir() {
        return error("cannot push directory, must provide chart archive (.tgz)");
    }
    if let Some((scheme, _)) = a.remote.split_once("://") {
        if scheme != "oci" {
            return error(format!("scheme \"{scheme}\" not supported"));
        }
    } else {
        return error("scheme \"\" not supported");
    }
    let archive = match std::fs::read(&a.chart) {
        Ok(b) => b,
        Err(e) => return error(format!("{path}: {e}")),
    };
    let prov_path = PathBuf::from(format!("{path}.prov"));
    let prov = match std::fs::read(&prov_path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return error(format!("{}: {e}", prov_path.display())),
    };
    // Helm's creation time: the archive's modification time, RFC 3339 in
    // the local zone.
    let created = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| {
            rudder::gostd::time::GoTime::unix(i64::try_from(d.as_secs()).unwrap_or(0), 0)
                .format("2006-01-02T15:04:05Z07:00")
        })
        .unwrap_or_default();
    let opts = OciOptions {
        plain_http: a.plain_http,
        insecure_skip_tls_verify: a.insecure_skip_tls_verify,
        ca_file: a.ca_file,
        cert_file: a.cert_file,
        key_file: a.key_file,
        username: a.username,
        password: a.password,
        registry_config: a.registry_config,
        timeout: timeout(),
    };
    match oci::push(&archive, prov.as_deref(), &a.remote, &created, &path, &opts) {
        Ok(r) => {
            eprintln!("Pushed: {}", r.reference);
            eprintln!("Digest: {}", r.manifest_digest);
            if r.reference
                .rsplit(':')
                .next()
                .is_some_and(|t| t.contains('_'))
            {
                eprintln!("{} contains an underscore.", r.reference);
                eprintln!("{}", oci::UNDERSCORE_MESSAGE);
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}
