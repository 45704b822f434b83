//! `einfo`: see `einfo --help` and docs/tools.md.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use cli_tools::batch::{cli::tool_main, info};

fn main() -> ExitCode {
    tool_main("einfo", info::run)
}
