//! `esubmit`: see `esubmit --help` and docs/tools.md.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use cli_tools::batch::{cli::tool_main, submit};

fn main() -> ExitCode {
    tool_main("esubmit", submit::run)
}
