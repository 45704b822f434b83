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
        print!("{}", config.effective().to_toml());
        return ExitCode::SUCCESS;
    }
    batchd::logging::init(config.log_format);
    match batchd::run(config, cli.config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("batchd: {e}");
            ExitCode::FAILURE
        }
    }
}
