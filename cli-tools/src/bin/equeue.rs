//! `equeue`: see `equeue --help` and docs/tools.md.

use std::process::ExitCode;

use clap::Parser;
use cli_tools::batch::{cli::run_tool, queue};

fn main() -> ExitCode {
    let cli = queue::QueueCli::parse();
    run_tool("equeue", || queue::run(cli))
}
