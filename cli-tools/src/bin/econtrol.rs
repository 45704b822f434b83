//! `econtrol`: see `econtrol --help` and docs/tools.md.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use cli_tools::batch::{cli::tool_main, control};

fn main() -> ExitCode {
    tool_main("econtrol", control::run)
}
