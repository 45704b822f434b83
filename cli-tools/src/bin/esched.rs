//! `esched`: setup commands for the esched tools; `esched slurm-compat DIR` makes the
//! directory of Slurm's command names (docs/tools.md).
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use cli_tools::batch::cli::tool_main;
use cli_tools::batch::compat;

/// `esched`'s command line.
#[derive(Parser, Debug)]
#[command(
    name = "esched",
    version,
    about = "Setup commands for the esched tools"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Make DIR a directory of Slurm's command names (sbatch, squeue, scancel, sacct, sinfo,
    /// scontrol, srun, salloc) linked to the esched tools; put it first on PATH to drive
    /// esched with Slurm's names (`export PATH=DIR:$PATH`).
    SlurmCompat {
        /// The directory (created if need be).
        dir: PathBuf,
        /// Replace files of those names that are not links.
        #[arg(long)]
        force: bool,
    },
}

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
