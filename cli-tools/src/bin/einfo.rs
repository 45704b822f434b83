//! `einfo`: see `einfo --help` and docs/tools.md.

use std::process::ExitCode;

use clap::Parser;
use cli_tools::batch::{cli::run_tool, info};

fn main() -> ExitCode {
    let cli = info::InfoCli::parse();
    run_tool("einfo", || info::run(cli))
}
