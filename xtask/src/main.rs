//! `cargo xtask`: esched's build chores (see `cargo xtask --help` and README, "Install").
#![forbid(unsafe_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use clap_complete::Shell;

/// esched's build chores.
#[derive(Parser, Debug)]
#[command(name = "cargo xtask", about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Write the completion scripts of every esched binary for SHELL into DIR (bash:
    /// `DIR/esubmit`, for bash-completion's `completions/`; zsh: `DIR/_esubmit`, for a
    /// directory on `fpath`; fish: `DIR/esubmit.fish`).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: Shell,
        /// Where to write them (created if need be).
        dir: PathBuf,
    },
    /// Write the man pages (section 1) of every esched binary and of their subcommands into
    /// DIR, e.g. `~/.local/share/man/man1`.
    Man {
        /// Where to write them (created if need be).
        dir: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let written = match cli.command {
        Command::Completions { shell, dir } => xtask::completions(shell, &dir),
        Command::Man { dir } => xtask::man_pages(&dir),
    };
    match written {
        Ok(files) => {
            let mut out = std::io::stdout().lock();
            for f in files {
                // A closed pipe (`| head`) ends the listing, not the run: the files are written.
                if writeln!(out, "{}", f.display()).is_err() {
                    break;
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::FAILURE
        }
    }
}
