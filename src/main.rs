//! The `rudder` command line: a thin shell over the `rudder` library.
use std::process::ExitCode;

mod cli;

// Rendering allocates many small strings, maps and trees; mimalloc serves
// them faster than glibc's malloc and returns less fragmented memory.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    cli::main()
}
