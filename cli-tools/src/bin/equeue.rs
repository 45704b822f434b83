//! `equeue`: see `equeue --help` and docs/tools.md.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use cli_tools::batch::{cli::tool_main, queue};

fn main() -> ExitCode {
    tool_main("equeue", queue::run)
}
