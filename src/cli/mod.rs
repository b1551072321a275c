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
    // `rudder template` is the hot path: a small chart renders in about two
    // milliseconds, a tenth of them spent building the parser for every
    // subcommand. It is parsed with its own flags alone first; whatever
    // does not parse that way (help, mistakes) goes through the full
    // parser below, which prints exactly what it always did.
    if let Some(a) = template::parse_alone(std::env::args_os()) {
        return template::run(&a);
    }
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
