//! `esim`: replays a workload trace through a policy on a virtual clock and reports the
//! schedule's figures; `esim bench` measures planning cost.
//!
//! `esim [run options]` and `esim run [run options]` are the same command; other subcommands
//! sit beside `run` in [`Command`]. The papers' subcommands are the lab's (`esched_lab::cmd`),
//! mounted here with esim's policies ([`policies`]).
#![forbid(unsafe_code)]

pub mod bench;
pub mod cli;
pub mod output;
pub mod policies;
pub mod progress;
pub mod run;
pub mod whatif;

use std::process::ExitCode;

use clap::Parser;
use esched_lab::cmd;

pub use cli::{BenchArgs, Cli, Command, RunArgs};

/// Runs esim with the process's arguments: one `esim: error: …` line and exit 1 on failure.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    let quiet = match &cli.command {
        Some(Command::Run(r)) => r.quiet,
        Some(Command::Bench(_)) => false,
        Some(Command::EvolvingTables(_)) => false,
        Some(Command::Schedule(_)) => false,
        Some(Command::Moldable(_)) | Some(Command::MoldableExperiments(_)) => false,
        Some(Command::MoldableOnline(_)) => false,
        Some(Command::Coalloc(_)) | Some(Command::CoallocExperiments(_)) => false,
        Some(Command::CoormExperiments(_)) | Some(Command::CoormValidation(_)) => false,
        Some(Command::CoormLauncher(_)) => true,
        Some(Command::Whatif(_)) => false,
        None => cli.run.quiet,
    };
    init_logs(quiet);
    let result = match cli.command {
        Some(Command::Run(args)) => run::run(&args),
        Some(Command::Bench(args)) => bench::bench(&args),
        Some(Command::EvolvingTables(args)) => cmd::tables::tables(&args),
        Some(Command::Schedule(args)) => cmd::schedule::run(&args, &Tools),
        Some(Command::Moldable(args)) => cmd::moldable::run(&args),
        Some(Command::MoldableExperiments(args)) => cmd::moldable_experiments::run(&args),
        Some(Command::MoldableOnline(args)) => cmd::moldable_online::run(&args),
        Some(Command::Coalloc(args)) => cmd::coalloc::run(&args, &Tools),
        Some(Command::CoallocExperiments(args)) => cmd::coalloc_experiments::run(&args),
        Some(Command::CoormExperiments(args)) => cmd::coorm_experiments::run_experiments(&args),
        Some(Command::CoormValidation(args)) => cmd::coorm_validation::run_validation(&args),
        Some(Command::CoormLauncher(args)) => cmd::coorm_validation::launcher(&args),
        Some(Command::Whatif(args)) => whatif::run(&args),
        None => run::run(&cli.run),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("esim: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// A command line clap refuses: help and version as clap prints them, anything else as one
/// `esim: error: …` line (clap's message without its usage and hint lines) and exit status 2.
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let _ = e.print();
        return ExitCode::from(2);
    }
    eprintln!("esim: error: {}", error_line(&e.render().to_string()));
    ExitCode::from(2)
}

/// clap's rendered message on one line: what precedes its `Usage:` line, trimmed and joined.
fn error_line(rendered: &str) -> String {
    rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:"))
        .filter(|l| !l.is_empty())
        .map(|l| l.trim_start_matches("error: "))
        .collect::<Vec<_>>()
        .join(" ")
}

/// esim's policies, for the lab's commands that take one by name.
struct Tools;

impl cmd::Policies for Tools {
    fn hosted(
        &self,
        spec: &str,
        params: &sched_core::Params,
        linked: bool,
    ) -> anyhow::Result<sched_abi::PolicyHost> {
        policies::hosted(spec, params, linked)
    }
}

/// Logs go to stderr, warnings and up unless `RUST_LOG` says otherwise; `--quiet` keeps only
/// errors.
fn init_logs(quiet: bool) {
    use tracing_subscriber::EnvFilter;
    let default = if quiet { "error" } else { "warn" };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .without_time()
        .try_init();
}
