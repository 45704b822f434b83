//! `erelease`: see `erelease --help` and docs/tools.md.

use std::process::ExitCode;

use clap::Parser;
use cli_tools::batch::{cli::run_tool, release};

fn main() -> ExitCode {
    let cli = release::ReleaseCli::parse();
    run_tool("erelease", || release::run(cli))
}
