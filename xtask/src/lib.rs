//! esched's build chores, as a library so its tests call what `cargo xtask` runs: the shell
//! completions and man pages of every binary, generated from the binaries' own clap
//! definitions (so they cannot drift from `--help`).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::CommandFactory;
use clap_complete::Shell;

/// Every binary esched ships, by the name it is installed under, with its command line.
pub fn binaries() -> Vec<clap::Command> {
    use cli_tools::batch as b;
    let named = |cmd: clap::Command, name: &'static str| cmd.name(name).bin_name(name);
    vec![
        named(b::submit::SubmitCli::command(), "esubmit"),
        named(b::queue::QueueCli::command(), "equeue"),
        named(b::cancel::CancelCli::command(), "ecancel"),
        named(b::info::InfoCli::command(), "einfo"),
        named(b::acct::AcctCli::command(), "eacct"),
        named(b::control::ControlCli::command(), "econtrol"),
        named(b::view::ViewCli::command(), "eview"),
        named(b::step::RunCli::command(), "erun"),
        named(b::step::alloc::AllocCli::command(), "ealloc"),
        named(b::release::ReleaseCli::command(), "erelease"),
        named(b::setup::Cli::command(), "esched"),
        named(esim::cli::Cli::command(), "esim"),
        named(batchd::cli::Cli::command(), "batchd"),
        named(esched_bench::cli::Cli::command(), "ebench"),
    ]
}

/// The file a shell loads `bin`'s completion from, by that shell's convention for its
/// completion directories (bash-completion's `completions/NAME`, zsh's `_NAME` on `fpath`,
/// fish's `NAME.fish`).
pub fn completion_file(shell: Shell, bin: &str) -> String {
    match shell {
        Shell::Zsh => format!("_{bin}"),
        Shell::Fish => format!("{bin}.fish"),
        Shell::Elvish => format!("{bin}.elv"),
        Shell::PowerShell => format!("_{bin}.ps1"),
        _ => bin.to_string(),
    }
}

/// Writes the `shell` completion of every binary into `dir` (created if need be); returns the
/// files written.
pub fn completions(shell: Shell, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    for mut cmd in binaries() {
        let bin = cmd.get_name().to_string();
        let path = dir.join(completion_file(shell, &bin));
        let mut out = Vec::new();
        clap_complete::generate(shell, &mut cmd, &bin, &mut out);
        fs::write(&path, out).with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// Writes the man page (section 1) of every binary into `dir` (created if need be), and one
/// page per visible subcommand (`esim-run.1`, `econtrol-show.1`, as git names its own);
/// returns the files written.
pub fn man_pages(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    for cmd in binaries() {
        let mut cmd = cmd;
        // Help and version flags are added to every subcommand only by a build.
        cmd.build();
        let bin = cmd.get_name().to_string();
        written.push(page(&cmd, &bin, dir)?);
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            if sub.get_name() == "help" {
                continue;
            }
            let name = format!("{bin}-{}", sub.get_name());
            let sub = sub
                .clone()
                .name(name.clone())
                .bin_name(format!("{bin} {}", sub.get_name()));
            written.push(page(&sub, &name, dir)?);
        }
    }
    Ok(written)
}

fn page(cmd: &clap::Command, name: &str, dir: &Path) -> anyhow::Result<PathBuf> {
    let path = dir.join(format!("{name}.1"));
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .title(name.to_uppercase())
        .section("1")
        .source(format!("esched {}", env!("CARGO_PKG_VERSION")))
        .manual("esched")
        .render(&mut out)
        .with_context(|| format!("cannot render the page of {name}"))?;
    fs::write(&path, out).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}
