//! `esched`'s command line (setup commands), in the library so that its man page and
//! completions are generated from it (`cargo xtask`).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// `esched`'s command line.
#[derive(Parser, Debug)]
#[command(
    name = "esched",
    version,
    about = "Setup commands for the esched tools"
)]
pub struct Cli {
    /// What to set up.
    #[command(subcommand)]
    pub command: Command,
}

/// `esched`'s subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
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
