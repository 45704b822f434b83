//! `eacct`: see `eacct --help` and docs/tools.md.

use std::process::ExitCode;

use clap::Parser;
use cli_tools::batch::{acct, cli::run_tool};

fn main() -> ExitCode {
    let cli = acct::AcctCli::parse();
    run_tool("eacct", || acct::run(cli))
}
