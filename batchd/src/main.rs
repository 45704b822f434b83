//! `batchd`: the esched batch daemon. Runs in the foreground (use systemd or `&` to detach);
//! `batchd supervise JOBDIR` is the per-job supervisor it starts itself.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use batchd::cli::{Cli, Command};
use clap::Parser;

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
    batchd::logging::init(config.log_format);
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
