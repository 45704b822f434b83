//! `ecancel`: see `ecancel --help` and docs/tools.md.

use std::process::ExitCode;

use clap::Parser;
use cli_tools::batch::{cancel, cli::run_tool};

fn main() -> ExitCode {
    let cli = cancel::CancelCli::parse();
    run_tool("ecancel", || cancel::run(cli))
}
