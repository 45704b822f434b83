//! `ealloc` (Slurm's `salloc`): see `ealloc --help` and docs/tools.md.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use cli_tools::batch::cli::tool_main;
use cli_tools::batch::step::alloc;

fn main() -> ExitCode {
    tool_main("ealloc", alloc::run_salloc)
}
