//! eacct: the accounting history of finished jobs, as sacct.

use std::path::PathBuf;
use std::process::ExitCode;

use batch_proto::{AcctRequest, JobFilter, JobInfo, Request};
use clap::Parser;
use sched_core::time::Time;

use super::cli::{connect, now_ms, parse_ids, print_out, split_list};
use super::format::parse_states;
use super::time::{format_opt_timestamp, format_sacct_duration, parse_begin, LocalZone, Zone};

/// `eacct`'s command line.
#[derive(Parser, Debug)]
#[command(
    name = "eacct",
    version,
    about = "Show finished batchd jobs (like sacct)"
)]
pub struct AcctCli {
    /// Only these jobs.
    #[arg(short = 'j', long = "jobs", value_name = "IDS")]
    pub jobs: Vec<String>,
    /// Only these users' jobs (default: your own, or everyone's for root).
    #[arg(short = 'u', long = "user", value_name = "USERS")]
    pub users: Vec<String>,
    /// Every user's jobs.
    #[arg(short = 'a', long = "allusers")]
    pub all_users: bool,
    /// Only jobs with these names.
    #[arg(long = "name", value_name = "NAMES")]
    pub names: Vec<String>,
    /// Only jobs in these states (codes or names).
    #[arg(short = 's', long = "state", value_name = "STATES")]
    pub states: Vec<String>,
    /// Only jobs that ended at or after this time (YYYY-MM-DD[THH:MM[:SS]], HH:MM, now-1days...).
    #[arg(short = 'S', long = "starttime", value_name = "TIME")]
    pub start: Option<String>,
    /// Only jobs that ended before this time.
    #[arg(short = 'E', long = "endtime", value_name = "TIME")]
    pub end: Option<String>,
    /// No header lines.
    #[arg(short = 'n', long)]
    pub noheader: bool,
    /// Fields separated by `|`, with a trailing `|`.
    #[arg(short = 'p', long)]
    pub parsable: bool,
    /// Fields separated by `|`, without a trailing `|`.
    #[arg(short = 'P', long)]
    pub parsable2: bool,
    /// JSON: the daemon's job records.
    #[arg(long)]
    pub json: bool,
    /// Daemon socket (default: $ESCHED_SOCKET, else the standard place).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

impl AcctCli {
    /// The request; `me` is the user shown by default, `None` for root (everyone).
    pub fn request(
        &self,
        now: Time,
        zone: &dyn Zone,
        me: Option<String>,
    ) -> anyhow::Result<AcctRequest> {
        let mut users = split_list(&self.users);
        if users.is_empty() && !self.all_users && self.jobs.is_empty() {
            users.extend(me);
        }
        let states = split_list(&self.states)
            .iter()
            .map(|s| parse_states(s))
            .collect::<Result<Vec<_>, _>>()?
            .concat();
        let when = |s: &Option<String>| s.as_deref().map(|v| parse_begin(v, now, zone)).transpose();
        Ok(AcctRequest {
            filter: JobFilter {
                ids: parse_ids(&self.jobs)?,
                users,
                names: split_list(&self.names),
                states,
                pools: Vec::new(),
            },
            since: when(&self.start)?,
            until: when(&self.end)?,
        })
    }
}

const COLUMNS: [(&str, usize); 9] = [
    ("JobID", 12),
    ("JobName", 10),
    ("Partition", 10),
    ("State", 10),
    ("ExitCode", 8),
    ("Submit", 19),
    ("Start", 19),
    ("End", 19),
    ("Elapsed", 10),
];

fn values(job: &JobInfo, zone: &dyn Zone) -> [String; 9] {
    let elapsed = match (job.start_time, job.end_time) {
        (Some(s), Some(e)) => e.saturating_sub(s),
        _ => 0,
    };
    let exit = match (job.exit_code, job.signal) {
        (None, None) => "0:0".to_string(),
        _ => job.exit_status(),
    };
    [
        job.id.to_string(),
        job.name.clone(),
        job.pool.clone().unwrap_or_default(),
        job.state.name().to_string(),
        exit,
        format_opt_timestamp(Some(job.submit_time), zone),
        // sacct says "Unknown" for a start that never happened.
        job.start_time.map_or_else(
            || "Unknown".to_string(),
            |t| format_opt_timestamp(Some(t), zone),
        ),
        format_opt_timestamp(job.end_time, zone),
        format_sacct_duration(elapsed),
    ]
}

/// sacct's fixed-width cell: right-aligned, cut with a `+` when too long.
fn cell(v: &str, w: usize) -> String {
    if v.chars().count() > w {
        let cut: String = v.chars().take(w.saturating_sub(1)).collect();
        format!("{cut}+")
    } else {
        format!("{v:>w$}")
    }
}

/// The table of `jobs`.
pub fn render(jobs: &[JobInfo], cli: &AcctCli, zone: &dyn Zone) -> String {
    let mut out = String::new();
    let sep = cli.parsable || cli.parsable2;
    let line = |vals: &[String]| -> String {
        if sep {
            let mut l = vals.join("|");
            if cli.parsable {
                l.push('|');
            }
            l
        } else {
            let cells: Vec<String> = vals
                .iter()
                .zip(COLUMNS.iter())
                .map(|(v, (_, w))| cell(v, *w))
                .collect();
            cells.join(" ")
        }
    };
    if !cli.noheader {
        let names: Vec<String> = COLUMNS.iter().map(|(n, _)| n.to_string()).collect();
        out.push_str(&line(&names));
        out.push('\n');
        if !sep {
            let dashes: Vec<String> = COLUMNS.iter().map(|(_, w)| "-".repeat(*w)).collect();
            out.push_str(&dashes.join(" "));
            out.push('\n');
        }
    }
    for j in jobs {
        out.push_str(&line(&values(j, zone)));
        out.push('\n');
    }
    out
}

/// eacct.
pub fn run(cli: AcctCli) -> anyhow::Result<ExitCode> {
    let me = (!nix::unistd::getuid().is_root()).then(super::cli::current_user);
    let req = cli.request(now_ms(), &LocalZone, me)?;
    let mut client = connect(cli.socket.as_deref())?;
    let jobs = client.jobs(&Request::Acct(req))?;
    if cli.json {
        print_out(&(serde_json::to_string_pretty(&jobs)? + "\n"))?;
    } else {
        print_out(&render(&jobs, &cli, &LocalZone))?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::super::time::FixedZone;
    use super::*;
    use batch_proto::{JobShape, JobState};

    fn cli(args: &[&str]) -> AcctCli {
        AcctCli::try_parse_from(std::iter::once("eacct").chain(args.iter().copied())).unwrap()
    }

    fn job() -> JobInfo {
        JobInfo {
            id: 12,
            name: "a-very-long-job-name".into(),
            uid: 1000,
            user: "alice".into(),
            pool: Some("debug".into()),
            state: JobState::Failed,
            reason: None,
            detail: None,
            nodes: 1,
            node_list: Some("debug001".into()),
            submit_time: 1_000,
            start_time: Some(2_000),
            end_time: Some(3_727_000),
            expected_start: None,
            time_limit: 60_000,
            exit_code: Some(3),
            signal: None,
            work_dir: "/tmp".into(),
            stdout: "/tmp/o".into(),
            stderr: "/tmp/o".into(),
            shape: JobShape::Rigid {
                nodes: 1,
                time_limit: 60_000,
            },
            begin: None,
            dependencies: vec![],
            priority: 0,
            held: false,
            args: vec![],
            scheduled_ep: None,
            step: None,
            chosen: None,
        }
    }

    #[test]
    fn table_like_sacct() {
        let z = FixedZone(0);
        let t = render(&[job()], &cli(&[]), &z);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>(),
            [
                "JobID",
                "JobName",
                "Partition",
                "State",
                "ExitCode",
                "Submit",
                "Start",
                "End",
                "Elapsed"
            ]
        );
        assert!(lines[1].starts_with("------------ ----------"));
        assert_eq!(
            lines[2].split_whitespace().collect::<Vec<_>>(),
            [
                "12",
                "a-very-lo+",
                "debug",
                "FAILED",
                "3:0",
                "1970-01-01T00:00:01",
                "1970-01-01T00:00:02",
                "1970-01-01T01:02:07",
                "01:02:05"
            ]
        );
        let p = render(&[job()], &cli(&["-P", "-n"]), &z);
        assert_eq!(
            p,
            "12|a-very-long-job-name|debug|FAILED|3:0|1970-01-01T00:00:01|\
                       1970-01-01T00:00:02|1970-01-01T01:02:07|01:02:05\n"
        );
        assert!(render(&[job()], &cli(&["-p", "-n"]), &z).ends_with("|\n"));
    }

    #[test]
    fn requests() {
        let z = FixedZone(0);
        let r = cli(&["-S", "now-1hour", "-s", "F,CD"])
            .request(10_000_000, &z, Some("me".into()))
            .unwrap();
        assert_eq!(r.since, Some(10_000_000 - 3_600_000));
        assert_eq!(r.filter.users, vec!["me"]);
        assert_eq!(r.filter.states, vec![JobState::Failed, JobState::Completed]);
        let r = cli(&["-a"]).request(0, &z, Some("me".into())).unwrap();
        assert!(r.filter.users.is_empty());
        let r = cli(&["-j", "5"]).request(0, &z, Some("me".into())).unwrap();
        assert!(r.filter.users.is_empty() && r.filter.ids == vec![5]);
        assert!(cli(&["-S", "yesterday"]).request(0, &z, None).is_err());
    }
}
