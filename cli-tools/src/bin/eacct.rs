//! `eacct`: see `eacct --help` and docs/tools.md.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use cli_tools::batch::{acct, cli::tool_main};

fn main() -> ExitCode {
    tool_main("eacct", acct::run)
}
