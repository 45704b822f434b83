//! eacct: the accounting history of jobs, as sacct: finished ones from batchd's history,
//! pending and running ones from its queue.

use std::path::PathBuf;
use std::process::ExitCode;

use batch_proto::{AcctRequest, JobFilter, JobInfo, ListRequest, Request};
use clap::Parser;
use sched_core::time::Time;

use super::cli::{connect, now_ms, parse_refs, print_out, split_list};
use super::format::parse_states;
use super::time::{format_opt_timestamp, format_sacct_duration, local_zone, parse_acct_time, Zone};

/// `eacct`'s command line.
#[derive(Parser, Debug)]
#[command(
    name = "eacct",
    version,
    about = "Show batchd jobs' accounting, finished and running (like sacct)"
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
    /// Only jobs that ended at or after this time, or have not ended (YYYY-MM-DD[THH:MM[:SS]],
    /// HH:MM[:SS] today, midnight, noon, now-1days...).
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
    /// Jobs only, no steps: what eacct always shows (esched jobs have no steps).
    #[arg(short = 'X', long = "allocations")]
    pub allocations: bool,
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
        zone: &Zone,
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
        let when = |s: &Option<String>| {
            s.as_deref()
                .map(|v| parse_acct_time(v, now, zone))
                .transpose()
        };
        let (ids, tasks) = parse_refs(&self.jobs)?;
        Ok(AcctRequest {
            filter: JobFilter {
                ids,
                tasks,
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

fn values(job: &JobInfo, zone: &Zone) -> [String; 9] {
    let elapsed = match (job.start_time, job.end_time) {
        (Some(s), Some(e)) => e.saturating_sub(s),
        _ => 0,
    };
    let exit = match (job.exit_code, job.signal) {
        (None, None) => "0:0".to_string(),
        _ => job.exit_status(),
    };
    [
        job.label(),
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
pub fn render(jobs: &[JobInfo], cli: &AcctCli, zone: &Zone) -> String {
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
    // Why a job ended as it did (preempted, failed at its deadline, rejected) is what its
    // owner asks sacct's `Reason` for; the column appears when some listed job has one, so
    // the usual table keeps sacct's default columns.
    let reasons = jobs.iter().any(|j| j.detail.is_some());
    let with_reason = |mut l: String, r: &str| {
        if reasons {
            l.push_str(if sep { "|" } else { " " });
            l.push_str(r);
            if sep && cli.parsable {
                l.push('|');
            }
        }
        l
    };
    if !cli.noheader {
        let names: Vec<String> = COLUMNS.iter().map(|(n, _)| n.to_string()).collect();
        let l = line(&names);
        out.push_str(&with_reason(
            if reasons && cli.parsable {
                l[..l.len() - 1].to_string()
            } else {
                l
            },
            "Reason",
        ));
        out.push('\n');
        if !sep {
            let dashes: Vec<String> = COLUMNS.iter().map(|(_, w)| "-".repeat(*w)).collect();
            out.push_str(&with_reason(dashes.join(" "), "------"));
            out.push('\n');
        }
    }
    for j in jobs {
        let l = line(&values(j, zone));
        let l = if reasons && cli.parsable {
            l[..l.len() - 1].to_string()
        } else {
            l
        };
        out.push_str(&with_reason(l, j.detail.as_deref().unwrap_or("None")));
        out.push('\n');
    }
    out
}

/// The jobs of the live queue (pending, running) that `req` selects, as sacct lists them
/// beside finished ones: a job not ended yet was in the window `[since, until)` when it was
/// submitted before `until` (it is still there now, after any `since` in the past).
fn live_in_window(live: Vec<JobInfo>, req: &AcctRequest, now: Time) -> Vec<JobInfo> {
    live.into_iter()
        .filter(|j| !j.state.is_finished())
        .filter(|j| req.until.is_none_or(|u| j.submit_time < u))
        .filter(|_| req.since.is_none_or(|s| s <= now))
        .collect()
}

/// Finished jobs from the history and live ones from the queue, one row each, by id. The
/// queue is read first: a job that ends in between is then in both, and its finished record
/// is the one kept.
fn merge(live: Vec<JobInfo>, finished: Vec<JobInfo>) -> Vec<JobInfo> {
    let mut all = finished;
    for j in live {
        if !all.iter().any(|f| f.id == j.id) {
            all.push(j);
        }
    }
    all.sort_by_key(|j| j.id);
    all
}

/// eacct.
pub fn run(cli: AcctCli) -> anyhow::Result<ExitCode> {
    let me = (!nix::unistd::getuid().is_root()).then(super::cli::current_user);
    let now = now_ms();
    let req = cli.request(now, &local_zone(), me)?;
    let mut client = connect(cli.socket.as_deref())?;
    let live = client.jobs(&Request::List(ListRequest {
        filter: req.filter.clone(),
        include_finished: false,
        brief: false,
    }))?;
    let live = live_in_window(live, &req, now);
    let finished = client.jobs(&Request::Acct(req))?;
    let jobs = merge(live, finished);
    if cli.json {
        print_out(&(serde_json::to_string_pretty(&jobs)? + "\n"))?;
    } else {
        print_out(&render(&jobs, &cli, &local_zone()))?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::super::time::fixed_zone;
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
            array: None,
            account: None,
            qos: None,
            warn_signal: None,
        }
    }

    #[test]
    fn table_like_sacct() {
        let z = fixed_zone(0);
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
    fn live_jobs_join_the_history() {
        let mut running = job();
        running.id = 13;
        running.state = JobState::Running;
        running.end_time = None;
        running.submit_time = 5_000;
        let mut ended = job();
        ended.id = 13;
        ended.state = JobState::Completed;
        let req = |since, until| AcctRequest {
            since,
            until,
            ..AcctRequest::default()
        };
        let r = live_in_window(vec![running.clone()], &req(Some(1_000), None), 10_000);
        assert_eq!(r.len(), 1);
        assert!(live_in_window(vec![running.clone()], &req(None, Some(5_000)), 10_000).is_empty());
        assert!(live_in_window(vec![running.clone()], &req(Some(20_000), None), 10_000).is_empty());
        let m = merge(vec![running.clone()], vec![job()]);
        assert_eq!(m.iter().map(|j| j.id).collect::<Vec<_>>(), [12, 13]);
        let m = merge(vec![running], vec![ended]);
        assert_eq!((m.len(), m[0].state), (1, JobState::Completed));
    }

    #[test]
    fn requests() {
        let z = fixed_zone(0);
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
