//! `rudder verify CHART.tgz [--keyring FILE]`: `helm verify`, a thin
//! wrapper over [`rudder::source::provenance::verify_chart`].
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// `rudder verify` flags (Helm's).
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The chart archive (`.tgz`); its provenance file is `PATH.prov`.
    // Strings, not paths: Helm takes "" and fails to open it.
    pub path: String,
    /// Keyring containing public keys (default `$GNUPGHOME/pubring.gpg`,
    /// else `~/.gnupg/pubring.gpg`, as Helm's).
    #[arg(long)]
    pub keyring: Option<String>,
}

/// Runs `rudder verify`: Helm's three lines on success (exit 0), Helm's
/// `Error: ...` otherwise (exit 1).
pub fn run(a: VerifyArgs) -> ExitCode {
    let keyring = a
        .keyring
        .map(PathBuf::from)
        .unwrap_or_else(rudder::source::provenance::default_keyring);
    match rudder::source::provenance::verify_chart(std::path::Path::new(&a.path), &keyring) {
        Ok(v) => {
            print!("{}", v.helm_output());
            ExitCode::SUCCESS
        }
        Err(e) => super::chart::fail(&e),
    }
}
