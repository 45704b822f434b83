//! `esched`: setup commands for the esched tools; `esched slurm-compat DIR` makes the
//! directory of Slurm's command names (docs/tools.md).
#![forbid(unsafe_code)]

use std::process::ExitCode;

use anyhow::Context;
use cli_tools::batch::cli::tool_main;
use cli_tools::batch::compat;
use cli_tools::batch::setup::{Cli, Command};

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::SlurmCompat { dir, force } => {
            let exe = std::env::current_exe().context("cannot find the esched executable")?;
            let tools = exe
                .parent()
                .context("the esched executable has no directory")?
                .to_path_buf();
            let dir = if dir.is_absolute() {
                dir
            } else {
                std::env::current_dir()?.join(dir)
            };
            for (link, target) in compat::create(&dir, &tools, force)? {
                println!("{} -> {}", link.display(), target.display());
            }
            eprintln!(
                "esched: put it first on PATH: export PATH={}:$PATH",
                dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn main() -> ExitCode {
    tool_main("esched", run)
}
