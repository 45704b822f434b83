//! `batchd`: the esched batch daemon. Runs in the foreground (use systemd or `&` to detach);
//! `batchd supervise JOBDIR` is the per-job supervisor it starts itself.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// esched's batch daemon: queue, policy loop and executor behind a Unix socket.
#[derive(Parser, Debug)]
#[command(name = "batchd", version, about)]
struct Cli {
    /// Configuration file (TOML); without it the built-in default runs (one pool `debug` of 8
    /// nodes, policy `cbf`).
    #[arg(short, long, value_name = "FILE", env = "ESCHED_CONFIG")]
    config: Option<PathBuf>,
    /// Print the effective configuration (every default filled in) and exit.
    #[arg(long)]
    print_config: bool,
    /// Stay in the foreground (the only mode: batchd never daemonises itself).
    #[arg(long, default_value_t = true)]
    foreground: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    match &cli.command {
        Some(Command::Supervise { job_dir }) => {
            return ExitCode::from(batchd::supervise::supervise(job_dir).clamp(0, 255) as u8);
        }
        Some(Command::Agent { spool, node }) => {
            // Whatever the agent creates without an explicit mode is private, as batchd's.
            nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
            return ExitCode::from(batchd::agent::run(spool, node).clamp(0, 255) as u8);
        }
        Some(Command::Task { command }) => {
            return ExitCode::from(batchd::slurm::task(command).clamp(0, 255) as u8);
        }
        None => {}
    }
    // Colour codes only for a person at a terminal, not in a log file or journal.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        // One event, one line, whatever a client managed to put in it.
        .with_writer(move || batchd::logging::LineSafe::new(std::io::stderr(), ansi))
        .with_ansi(ansi)
        .init();
    // Whatever batchd creates without an explicit mode is its own: the state holds users'
    // environments. (Job output files get the submitter's umask in the supervisor.)
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    let config = match &cli.config {
        Some(p) => batchd::Config::load(p),
        None => Ok(batchd::Config::embedded()),
    };
    let config = match config {
        Ok(c) => c,
        Err(e) => {
            eprintln!("batchd: {e}");
            return ExitCode::from(2);
        }
    };
    if cli.print_config {
        // The configuration printed is one batchd would start on: its policy is loaded and
        // its parameters checked as at a start.
        let file = cli
            .config
            .as_ref()
            .map_or_else(|| "<built-in>".to_string(), |p| p.display().to_string());
        if let Err(e) = batchd::policy::check(&config, &file) {
            eprintln!("batchd: {e}");
            return ExitCode::from(2);
        }
        print!("{}", config.print_effective());
        return ExitCode::SUCCESS;
    }
    match batchd::run(config, cli.config) {
        Ok(()) => ExitCode::SUCCESS,
        // Every fault of the configuration, the policy's name and parameters included, exits
        // 2; a start refused for another reason (a socket in use, a state directory held by
        // another batchd) exits 1.
        Err(e @ batchd::Error::Config(_)) => {
            eprintln!("batchd: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("batchd: {e}");
            ExitCode::FAILURE
        }
    }
}
