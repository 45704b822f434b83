//! `ecancel`: see `ecancel --help` and docs/tools.md.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use cli_tools::batch::{cancel, cli::tool_main};

fn main() -> ExitCode {
    tool_main("ecancel", cancel::run)
}
