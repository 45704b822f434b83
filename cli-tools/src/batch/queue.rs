//! equeue: the queue, as squeue shows it.

use std::path::PathBuf;
use std::process::ExitCode;

use batch_proto::{JobFilter, JobInfo, ListRequest, Request};
use clap::Parser;
use sched_core::time::Time;

use super::cli::{connect, now_ms, parse_ids, print_out, split_list};
use super::format::{parse_states, Format, DEFAULT_FORMAT, START_FORMAT};
use super::time::{LocalZone, Zone};

/// `equeue`'s command line.
#[derive(Parser, Debug)]
#[command(
    name = "equeue",
    version,
    about = "Show batchd's queue (like squeue)",
    after_help = "Format fields (-o): %i id, %P pool, %j name, %u user, %U uid, %t state code, \
                  %T state, %M time used, %l time limit, %L time left, %D nodes, %R node list \
                  or (reason), %r reason, %N node list, %S start (expected while pending), %V \
                  submit, %e end, %Z work dir, %E dependencies, %Q priority, %s step of a running \
                  evolving job (2/3; - for others), %K a moldable job's configuration NODESxTIME_LIMIT \
                  (chosen, or expected by the plan while pending; - for others). %.N right-justifies in N columns, %N or \
                  %-N left-justifies; longer values are cut."
)]
pub struct QueueCli {
    /// Only these users' jobs (names or uids, comma-separated).
    #[arg(short = 'u', long = "user", value_name = "USERS")]
    pub users: Vec<String>,
    /// Only your own jobs.
    #[arg(long)]
    pub me: bool,
    /// Only these jobs (comma-separated ids).
    #[arg(short = 'j', long = "jobs", value_name = "IDS")]
    pub jobs: Vec<String>,
    /// Only jobs in these states (codes or names, comma-separated, or `all`); finished states
    /// show jobs from the accounting history too.
    #[arg(short = 't', long = "states", value_name = "STATES")]
    pub states: Vec<String>,
    /// Only jobs of these pools.
    #[arg(
        short = 'p',
        long = "pool",
        visible_alias = "partition",
        value_name = "POOLS"
    )]
    pub pools: Vec<String>,
    /// Only jobs with these names.
    #[arg(short = 'n', long = "name", value_name = "NAMES")]
    pub names: Vec<String>,
    /// Show expected start times (START_TIME) of pending jobs.
    #[arg(long)]
    pub start: bool,
    /// Output format, squeue style.
    #[arg(short = 'o', long = "format", value_name = "FORMAT")]
    pub format: Option<String>,
    /// No header line.
    #[arg(long)]
    pub noheader: bool,
    /// JSON: the daemon's job records.
    #[arg(long)]
    pub json: bool,
    /// Daemon socket (default: $ESCHED_SOCKET, else the standard place).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

impl QueueCli {
    /// The request this command line makes: a brief listing unless `--json` (the complete
    /// records) or the format shows a field a brief listing leaves out.
    pub fn request(&self) -> anyhow::Result<ListRequest> {
        let mut users = split_list(&self.users);
        if self.me {
            users.push(super::cli::current_user());
        }
        let states = split_list(&self.states)
            .iter()
            .map(|s| parse_states(s))
            .collect::<Result<Vec<_>, _>>()?
            .concat();
        let include_finished = states.iter().any(|s| s.is_finished());
        Ok(ListRequest {
            filter: JobFilter {
                ids: parse_ids(&self.jobs)?,
                users,
                names: split_list(&self.names),
                states,
                pools: split_list(&self.pools),
            },
            include_finished,
            brief: !self.json && self.format()?.brief_suffices(),
        })
    }

    /// The format in force: `-o`, else `--start`'s or the default.
    pub fn format(&self) -> anyhow::Result<Format> {
        let text = match (&self.format, self.start) {
            (Some(f), _) => f.as_str(),
            (None, true) => START_FORMAT,
            (None, false) => DEFAULT_FORMAT,
        };
        Ok(Format::parse(text)?)
    }
}

/// The table of `jobs`, header first unless `noheader`.
pub fn render(
    jobs: &[JobInfo],
    format: &Format,
    noheader: bool,
    now: Time,
    zone: &dyn Zone,
) -> String {
    let mut table = Table::new(format, noheader, now, zone);
    table.rows(jobs);
    table.out
}

/// A table written part by part, as a listing's frames arrive.
struct Table<'a> {
    format: &'a Format,
    now: Time,
    zone: &'a dyn Zone,
    out: String,
    scratch: String,
}

impl<'a> Table<'a> {
    fn new(format: &'a Format, noheader: bool, now: Time, zone: &'a dyn Zone) -> Self {
        let mut out = String::new();
        if !noheader {
            out.push_str(&format.header());
            out.push('\n');
        }
        Table {
            format,
            now,
            zone,
            out,
            scratch: String::new(),
        }
    }

    fn rows(&mut self, jobs: &[JobInfo]) {
        self.out.reserve(jobs.len() * 96);
        for j in jobs {
            self.format
                .write_row(&mut self.out, &mut self.scratch, j, self.now, self.zone);
            self.out.push('\n');
        }
    }
}

/// equeue.
pub fn run(cli: QueueCli) -> anyhow::Result<ExitCode> {
    let req = Request::List(cli.request()?);
    let format = cli.format()?;
    let mut client = connect(cli.socket.as_deref())?;
    if cli.json {
        let jobs = client.jobs(&req)?;
        print_out(&(serde_json::to_string_pretty(&jobs)? + "\n"))?;
    } else {
        // Rows are written as each part of the listing arrives, and the whole table printed
        // at the end: an error part-way prints the error alone, not half a queue.
        let zone = LocalZone;
        let mut table = Table::new(&format, cli.noheader, now_ms(), &zone);
        client.jobs_each(&req, |part| table.rows(&part))?;
        print_out(&table.out)?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use batch_proto::JobState;

    fn cli(args: &[&str]) -> QueueCli {
        QueueCli::try_parse_from(std::iter::once("equeue").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn filters_become_the_request() {
        let r = cli(&[
            "-u",
            "alice,bob",
            "-j",
            "3",
            "-j",
            "4,5",
            "-t",
            "PD,r",
            "-p",
            "debug",
        ])
        .request()
        .unwrap();
        assert_eq!(r.filter.users, vec!["alice", "bob"]);
        assert_eq!(r.filter.ids, vec![3, 4, 5]);
        assert_eq!(r.filter.states, vec![JobState::Pending, JobState::Running]);
        assert_eq!(r.filter.pools, vec!["debug"]);
        assert!(!r.include_finished);
        assert!(cli(&["-t", "CD"]).request().unwrap().include_finished);
        assert!(cli(&["-t", "XX"]).request().is_err());
        assert!(cli(&["-j", "x"]).request().is_err());
    }

    #[test]
    fn listing_is_brief_unless_json_or_a_full_field() {
        let brief = |args: &[&str]| cli(args).request().unwrap().brief;
        assert!(brief(&[]));
        assert!(brief(&["--start"]));
        assert!(brief(&["-t", "CD", "-o", "%i %T %e"]));
        assert!(!brief(&["--json"]));
        assert!(!brief(&["--json", "--start"]));
        assert!(!brief(&["-o", "%i %Z"]));
        assert!(!brief(&["-o", "%E"]));
        assert!(cli(&["-o", "%q"]).request().is_err());
    }

    #[test]
    fn start_switches_the_default_format() {
        assert!(cli(&["--start"])
            .format()
            .unwrap()
            .header()
            .contains("START_TIME"));
        assert!(cli(&[])
            .format()
            .unwrap()
            .header()
            .contains("NODELIST(REASON)"));
        assert_eq!(cli(&["-o", "%i"]).format().unwrap().header(), "JOBID");
        for args in [&[][..], &["--start"][..]] {
            let h = cli(args).format().unwrap().header();
            assert!(h.ends_with(" NODES  STEP NODELIST(REASON)"), "{h}");
        }
    }

    #[test]
    fn help_lists_the_step_field() {
        use clap::CommandFactory;
        let help = QueueCli::command().render_help().to_string();
        assert!(help.contains("%s step"), "{help}");
    }
}
