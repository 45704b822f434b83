//! `esubmit`: see `esubmit --help` and docs/tools.md.

use std::process::ExitCode;

use clap::Parser;
use cli_tools::batch::{cli::run_tool, submit};

fn main() -> ExitCode {
    let cli = submit::SubmitCli::parse();
    run_tool("esubmit", || submit::run(cli))
}
