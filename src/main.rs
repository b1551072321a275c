//! The `rudder` command line: a thin shell over the `rudder` library.
use std::process::ExitCode;

mod cli;

fn main() -> ExitCode {
    cli::main()
}
