//! `eview`: see `eview --help` and docs/tools.md.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;
use cli_tools::batch::{cli::run_tool, view};

fn main() -> ExitCode {
    let cli = view::ViewCli::parse();
    run_tool("eview", || view::run(cli))
}
