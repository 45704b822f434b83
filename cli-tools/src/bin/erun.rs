//! `erun` (Slurm's `srun`): see `erun --help` and docs/tools.md.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use cli_tools::batch::cli::tool_main;
use cli_tools::batch::step;

fn main() -> ExitCode {
    tool_main(step::tool_name(), step::run)
}
