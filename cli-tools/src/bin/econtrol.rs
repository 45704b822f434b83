//! `econtrol`: see `econtrol --help` and docs/tools.md.

use std::process::ExitCode;

use clap::Parser;
use cli_tools::batch::{cli::run_tool, control};

fn main() -> ExitCode {
    let cli = control::ControlCli::parse();
    run_tool("econtrol", || control::run(cli))
}
