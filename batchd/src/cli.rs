//! batchd's command line, in the library so that its man page and completions are generated
//! from it (`cargo xtask`).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// esched's batch daemon: queue, policy loop and executor behind a Unix socket.
#[derive(Parser, Debug)]
#[command(name = "batchd", version, about)]
pub struct Cli {
    /// Configuration file (TOML); without it the built-in default runs (one pool `debug` of 8
    /// nodes, policy `cbf`).
    #[arg(short, long, value_name = "FILE", env = "ESCHED_CONFIG")]
    pub config: Option<PathBuf>,
    /// Print the effective configuration (every default filled in) and exit.
    #[arg(long)]
    pub print_config: bool,
    /// Stay in the foreground (the only mode: batchd never daemonises itself).
    #[arg(long, default_value_t = true)]
    pub foreground: bool,
    /// One of the hidden subcommands batchd runs itself (none: the daemon).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The roles batchd starts itself in, on its own hosts and jobs.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run one job's supervisor (started by batchd itself).
    #[command(hide = true)]
    Supervise {
        /// The job's directory.
        job_dir: PathBuf,
    },
    /// Serve batchd's session to this host (started by batchd over ssh).
    #[command(hide = true)]
    Agent {
        /// Where the jobs' directories are.
        #[arg(long)]
        spool: PathBuf,
        /// The host's node name.
        #[arg(long)]
        node: String,
    },
    /// Run a step's command with the job's own Slurm variables (started by batchd through
    /// srun on a Slurm pool's node).
    #[command(hide = true)]
    Task {
        /// The command and its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<String>,
    },
}
