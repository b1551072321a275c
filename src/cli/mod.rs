//! Command-line dispatch. Each sub-command family lives in its own file and
//! only parses flags and calls the library.
use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// rudder: build, render and release Helm charts.
#[derive(Debug, Parser)]
#[command(name = "rudder", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {}

/// Parses the command line, runs it and maps errors to Helm's `Error: ...` form.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {}
}
