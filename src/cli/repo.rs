//! `rudder repo ...`: Helm's chart repository commands. Only `index` so
//! far ([`super::repo_index`]); `add`, `update`, `list` and `remove` join
//! [`RepoCommand`] here.
use clap::{Args, Subcommand};
use std::process::ExitCode;

/// `rudder repo ...`.
#[derive(Debug, Args)]
pub struct RepoArgs {
    #[command(subcommand)]
    command: RepoCommand,
}

/// The `repo` subcommands.
#[derive(Debug, Subcommand)]
pub enum RepoCommand {
    /// Generate an index file given a directory containing packaged charts
    /// (as `helm repo index`).
    Index(super::repo_index::IndexArgs),
}

/// Runs `rudder repo ...`.
pub fn run(a: RepoArgs) -> ExitCode {
    match a.command {
        RepoCommand::Index(a) => super::repo_index::run(&a),
    }
}
