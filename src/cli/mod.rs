//! Command-line dispatch. Each sub-command family lives in its own file and
//! only parses flags and calls the library.
use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod chart;
mod release;
mod template;

/// rudder: build, render and release Helm charts.
#[derive(Debug, Parser)]
#[command(name = "rudder", version, about)]
pub struct Cli {
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
}

/// Parses the command line, runs it and maps errors to Helm's `Error: ...` form.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
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
    }
}
