//! `erelease`: see `erelease --help` and docs/tools.md.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use cli_tools::batch::{cli::tool_main, release};

fn main() -> ExitCode {
    tool_main("erelease", release::run)
}
