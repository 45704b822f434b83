//! ecancel: cancel or signal jobs, as scancel.

use std::process::ExitCode;

use batch_proto::{CancelRequest, ClientError, JobFilter, Request, Response, SignalScope};
use clap::Parser;

use super::args::{job_states, PoolFilter, SocketArg};
use super::cli::{check_users, connect, parse_refs, split_list};

/// `ecancel`'s command line.
#[derive(Parser, Debug)]
#[command(
    name = "ecancel",
    version,
    about = "Cancel or signal batchd jobs (like scancel)"
)]
pub struct CancelCli {
    /// Job ids (space- or comma-separated).
    #[arg(value_name = "JOBID")]
    pub ids: Vec<String>,
    /// Only jobs of these users.
    #[arg(short = 'u', long = "user", value_name = "USERS")]
    pub users: Vec<String>,
    /// Only your own jobs.
    #[arg(long)]
    pub me: bool,
    /// Only jobs running on any of these nodes (a host list).
    #[arg(short = 'w', long = "nodelist", value_name = "NODES")]
    pub nodelist: Option<String>,
    /// Only jobs with these names.
    #[arg(
        short = 'n',
        long = "name",
        visible_alias = "jobname",
        value_name = "NAMES"
    )]
    pub names: Vec<String>,
    /// Only jobs in these states (codes or names).
    #[arg(short = 't', long = "state", value_name = "STATES")]
    pub states: Vec<String>,
    /// Only jobs of these pools.
    #[command(flatten)]
    pub pools: PoolFilter,
    /// Send this signal to running jobs instead of cancelling them (name like TERM, SIGUSR1,
    /// or a number). It reaches the jobs' steps (`erun`'s tasks), not the batch shell, unless
    /// `-b` or `-f` says otherwise; SIGKILL reaches everything.
    #[arg(short = 's', long = "signal", value_name = "SIGNAL")]
    pub signal: Option<String>,
    /// Signal the batch shell only, not the steps.
    #[arg(short = 'b', long = "batch", conflicts_with = "full")]
    pub batch: bool,
    /// Signal the batch shell, everything it started, and the steps.
    #[arg(short = 'f', long = "full")]
    pub full: bool,
    /// The daemon's socket.
    #[command(flatten)]
    pub socket: SocketArg,
}

/// A signal by name (`TERM`, `SIGTERM`, any case) or number.
pub fn parse_signal(s: &str) -> anyhow::Result<i32> {
    batch_proto::parse_signal(s)
        .map(|sig| sig as i32)
        .ok_or_else(|| anyhow::anyhow!("Invalid job signal: {s}"))
}

impl CancelCli {
    /// The request this command line makes.
    pub fn request(&self) -> anyhow::Result<CancelRequest> {
        let states = job_states(&self.states)?;
        let mut users = split_list(&self.users);
        if self.me {
            users.push(super::cli::current_user());
        }
        let (ids, tasks) = parse_refs(&self.ids)?;
        let filter = JobFilter {
            ids,
            tasks,
            users,
            names: split_list(&self.names),
            states,
            pools: self.pools.pools(),
        };
        if filter.is_empty() && self.nodelist.is_none() {
            anyhow::bail!("No job identification provided");
        }
        let mut signal = self.signal.as_deref().map(parse_signal).transpose()?;
        // scancel: `-b` or `-f` without `-s` sends SIGKILL to what they name.
        if signal.is_none() && (self.batch || self.full) {
            signal = Some(nix::libc::SIGKILL);
        }
        let scope = if self.batch {
            SignalScope::Batch
        } else if self.full {
            SignalScope::Full
        } else {
            SignalScope::Steps
        };
        Ok(CancelRequest {
            filter,
            signal,
            scope,
        })
    }
}

/// ecancel. Jobs that could not be cancelled are each reported on one line, as scancel does,
/// and make the exit status 1.
pub fn run(cli: CancelCli) -> anyhow::Result<ExitCode> {
    check_users(&split_list(&cli.users), "Invalid user name")?;
    let mut req = cli.request()?;
    let mut client = connect(cli.socket.path())?;
    if let Some(list) = cli.nodelist.as_deref() {
        // scancel -w: the jobs of the selection that run on any of these nodes.
        let nodes = super::cli::node_names(list)?;
        let running = client.jobs(&Request::List(batch_proto::ListRequest {
            filter: req.filter.clone(),
            include_finished: false,
            brief: true,
        }))?;
        let ids: Vec<u64> = running
            .iter()
            .filter(|j| super::cli::ran_on(j, &nodes))
            .map(|j| j.id)
            .collect();
        if ids.is_empty() {
            return Ok(ExitCode::SUCCESS);
        }
        req.filter = JobFilter {
            ids,
            ..JobFilter::default()
        };
    }
    match client.request(&Request::Cancel(req))? {
        Response::Acted(report) => {
            for f in &report.failed {
                let what = if cli.signal.is_some() {
                    "Signal"
                } else {
                    "Kill"
                };
                eprintln!(
                    "ecancel: error: {what} job error on job id {}: {}",
                    f.id, f.message
                );
            }
            Ok(if report.failed.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        other => Err(ClientError::unexpected("cancel", &other).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use batch_proto::JobState;

    fn cli(args: &[&str]) -> CancelCli {
        CancelCli::try_parse_from(std::iter::once("ecancel").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn signals() {
        assert_eq!(parse_signal("TERM").unwrap(), 15);
        assert_eq!(parse_signal("sigusr1").unwrap(), nix::libc::SIGUSR1);
        assert_eq!(parse_signal("9").unwrap(), 9);
        assert!(parse_signal("NOPE").is_err());
        assert!(parse_signal("999").is_err());
    }

    #[test]
    fn requests() {
        let r = cli(&["4", "5,6", "-t", "pending", "-s", "USR1"])
            .request()
            .unwrap();
        assert_eq!(r.filter.ids, vec![4, 5, 6]);
        assert_eq!(r.filter.states, vec![JobState::Pending]);
        assert_eq!(r.signal, Some(nix::libc::SIGUSR1));
        assert_eq!(r.scope, SignalScope::Steps);
        // --me is the caller's own jobs; -w alone is a selection.
        let r = cli(&["--me"]).request().unwrap();
        assert_eq!(r.filter.users.len(), 1);
        assert!(cli(&["-w", "debug001"]).request().is_ok());
        let r = cli(&["4", "-b", "-s", "USR1"]).request().unwrap();
        assert_eq!(r.scope, SignalScope::Batch);
        // scancel -f without -s: SIGKILL to everything.
        let r = cli(&["4", "-f"]).request().unwrap();
        assert_eq!((r.signal, r.scope), (Some(9), SignalScope::Full));
        let e = cli(&[]).request().unwrap_err().to_string();
        assert_eq!(e, "No job identification provided");
        assert_eq!(
            cli(&["-n", "x", "-u", "bob"])
                .request()
                .unwrap()
                .filter
                .names,
            vec!["x"]
        );
    }
}
