//! Arguments several tools take alike, declared once and flattened into each tool's command
//! line (`#[command(flatten)]`): the daemon's socket, the pool filter of the job tools, and
//! how a list of states is read.

use std::path::{Path, PathBuf};

use batch_proto::JobState;
use clap::Args;

use super::cli::split_list;
use super::error::SpecError;
use super::format::parse_states;

/// `--socket PATH`.
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct SocketArg {
    /// Daemon socket (default: $ESCHED_SOCKET, else the standard place).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

impl SocketArg {
    /// The socket given, if any.
    pub fn path(&self) -> Option<&Path> {
        self.socket.as_deref()
    }
}

/// `--socket PATH` for a tool with subcommands: accepted after the subcommand too.
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct GlobalSocketArg {
    /// Daemon socket (default: $ESCHED_SOCKET, else the standard place).
    #[arg(long, global = true, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

impl GlobalSocketArg {
    /// The socket given, if any.
    pub fn path(&self) -> Option<&Path> {
        self.socket.as_deref()
    }
}

/// `-p/--pool` (`--partition`) of the tools that select jobs.
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct PoolFilter {
    /// Only jobs of these pools.
    #[arg(
        short = 'p',
        long = "pool",
        visible_alias = "partition",
        value_name = "POOLS"
    )]
    pub pools: Vec<String>,
}

impl PoolFilter {
    /// The pools named, each option's comma-separated list flattened.
    pub fn pools(&self) -> Vec<String> {
        split_list(&self.pools)
    }
}

/// The states named by state options (codes or names, comma-separated, `all`), in order.
pub fn job_states(values: &[String]) -> Result<Vec<JobState>, SpecError> {
    Ok(split_list(values)
        .iter()
        .map(|s| parse_states(s))
        .collect::<Result<Vec<_>, _>>()?
        .concat())
}
