//! equeue: the queue, as squeue shows it.

use std::process::ExitCode;

use std::collections::HashMap;

use batch_proto::time::Time;
use batch_proto::{JobFilter, JobInfo, JobState, ListRequest, PendingReason, Request};
use clap::Parser;

use super::args::{job_states, PoolFilter, SocketArg};
use super::cli::{check_users, connect, now_ms, parse_refs, print_out, split_list};
use super::format::{
    fold_indices, Format, SortSpec, SortValue, DEFAULT_FORMAT, DEFAULT_SORT, LONG_FORMAT,
    START_FORMAT,
};
use super::time::{local_zone, Zone};

/// `equeue`'s command line.
#[derive(Parser, Debug)]
#[command(
    name = "equeue",
    version,
    disable_help_flag = true,
    about = "Show batchd's queue (like squeue)",
    after_help = "Format fields (-o): %i id, %P pool, %j name, %u user, %U uid, %t state code, \
                  %T state, %M time used, %l time limit, %L time left, %D nodes, %R node list \
                  or (reason), %r reason, %N node list, %S start (expected while pending), %V \
                  submit, %e end, %Z work dir, %E dependencies, %Q priority, %s step of a running \
                  evolving job (2/3; - for others), %a account, %q QOS, %K array task index and %F \
                  array job id (N/A for other jobs), %b a moldable job's configuration NODESxTIME_LIMIT \
                  (chosen, or expected by the plan while pending; - for others), %A job id (a \
                  task's own). %.N right-justifies in N columns, %N or %-N left-justifies; longer \
                  values are cut. -O names (any case): Account, ArrayJobID, ArrayTaskID, \
                  Dependency, EndTime, JobArrayID (%i), JobID (%A), Name, NodeList, NumNodes, \
                  Partition, Priority, PriorityLong, QOS, Reason, ReasonList, StartTime, State, \
                  StateCompact, SubmitTime, TimeLeft, TimeLimit, TimeUsed, UserID, UserName, \
                  WorkDir, Step."
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
    #[command(flatten)]
    pub pools: PoolFilter,
    /// Only jobs with these names.
    #[arg(short = 'n', long = "name", value_name = "NAMES")]
    pub names: Vec<String>,
    /// Only jobs with these accounts (comma-separated).
    #[arg(short = 'A', long = "account", value_name = "ACCOUNTS")]
    pub accounts: Vec<String>,
    /// Only jobs on these nodes (host lists, comma-separated: `debug[001-002]`).
    #[arg(short = 'w', long = "nodelist", value_name = "NODES")]
    pub nodelist: Vec<String>,
    /// One line per array task; without it an array's pending tasks are folded into one
    /// line, `ID_[1-3,5%2]`, as squeue does.
    #[arg(short = 'r', long = "array")]
    pub array: bool,
    /// Show expected start times (START_TIME) of pending jobs.
    #[arg(long)]
    pub start: bool,
    /// Output format, squeue style.
    #[arg(short = 'o', long = "format", value_name = "FORMAT")]
    pub format: Option<String>,
    /// Output format by field names, squeue's -O: `name[:[.][size][suffix]],...` (JobID,
    /// Name, UserName, State, StateCompact, TimeUsed, TimeLimit, NumNodes, NodeList,
    /// ReasonList, Partition, ...; see below).
    #[arg(
        short = 'O',
        long = "Format",
        value_name = "FIELDS",
        conflicts_with = "format"
    )]
    pub long_format: Option<String>,
    /// squeue's long listing: STATE spelt out and TIME_LIMIT, after a line with the time.
    #[arg(short = 'l', long = "long")]
    pub long: bool,
    /// Sort by these -o letters, `+` ascending (default) or `-` descending, e.g. `-S -t,i`
    /// (default `P,t,-p`: pool, state with pending first, priority highest first).
    #[arg(
        short = 'S',
        long = "sort",
        value_name = "KEYS",
        allow_hyphen_values = true
    )]
    pub sort: Option<String>,
    /// List again every SECONDS, each listing after a line with the time, until interrupted.
    #[arg(short = 'i', long = "iterate", value_name = "SECONDS",
          conflicts_with_all = ["json", "records"],
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub iterate: Option<u64>,
    /// No header line (`-h`, as in Slurm; help is `--help` only).
    #[arg(short = 'h', long)]
    pub noheader: bool,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// JSON as Slurm 22.05's `squeue --json` prints it: `{"meta", "errors", "jobs"}`.
    #[arg(long, conflicts_with = "records")]
    pub json: bool,
    /// JSON: the daemon's job records as they come over the wire.
    #[arg(long)]
    pub records: bool,
    /// List the running jobs' steps (`ID.batch`, `ID.0`, ...) instead of the jobs.
    #[arg(short = 's', long = "steps")]
    pub steps: bool,
    /// The daemon's socket.
    #[command(flatten)]
    pub socket: SocketArg,
}

impl QueueCli {
    /// The request this command line makes: a brief listing unless `--json` or `--records`
    /// (the complete records) or the format shows a field a brief listing leaves out.
    pub fn request(&self) -> anyhow::Result<ListRequest> {
        let mut users = split_list(&self.users);
        if self.me {
            users.push(super::cli::current_user());
        }
        let states = job_states(&self.states)?;
        let (ids, tasks) = parse_refs(&self.jobs)?;
        // squeue shows a job named by -j for MinJobAge after it ended ([`LocalFilter`]).
        let include_finished = states.iter().any(|s| s.is_finished())
            || (states.is_empty() && !(ids.is_empty() && tasks.is_empty()));
        Ok(ListRequest {
            filter: JobFilter {
                ids,
                tasks,
                users,
                names: split_list(&self.names),
                states,
                pools: self.pools.pools(),
            },
            include_finished,
            brief: !self.json && !self.records && !self.steps && self.format()?.brief_suffices(),
        })
    }

    /// The format in force: `-o` or `-O`, else `$SQUEUE_FORMAT2` (as `-O`) or
    /// `$SQUEUE_FORMAT` (as `-o`), else `--start`'s, `-l`'s or the default.
    pub fn format(&self) -> anyhow::Result<Format> {
        self.format_with(&|k| std::env::var(k).ok())
    }

    /// [`QueueCli::format`] with `env` for the environment. squeue reads its variables
    /// before its options, so `-o`/`-O` win over them and they win over `-l` and `--start`.
    pub fn format_with(&self, env: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<Format> {
        if let Some(f) = &self.long_format {
            return Ok(Format::parse_long(f)?);
        }
        if let Some(f) = &self.format {
            return Ok(Format::parse(f)?);
        }
        if let Some(f) = env("SQUEUE_FORMAT2").filter(|f| !f.is_empty()) {
            return Ok(Format::parse_long(&f)?);
        }
        if let Some(f) = env("SQUEUE_FORMAT").filter(|f| !f.is_empty()) {
            return Ok(Format::parse(&f)?);
        }
        let text = match (self.start, self.long) {
            (true, _) => START_FORMAT,
            (false, true) => LONG_FORMAT,
            (false, false) => DEFAULT_FORMAT,
        };
        Ok(Format::parse(text)?)
    }

    /// The order in force: `-S`, else `$SQUEUE_SORT`, else squeue's default.
    pub fn sort(&self) -> anyhow::Result<SortSpec> {
        self.sort_with(&|k| std::env::var(k).ok())
    }

    /// [`QueueCli::sort`] with `env` for the environment.
    pub fn sort_with(&self, env: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<SortSpec> {
        let from_env = env("SQUEUE_SORT").filter(|s| !s.is_empty());
        Ok(SortSpec::parse(
            self.sort
                .as_deref()
                .or(from_env.as_deref())
                .unwrap_or(DEFAULT_SORT),
        )?)
    }

    /// The selection equeue makes itself, of what batchd sent: `-A` and `-w`.
    pub fn local_filter(&self) -> anyhow::Result<LocalFilter> {
        let mut nodes = Vec::new();
        // Whole values: a host list has commas inside its brackets (`d[001,003]`).
        for list in &self.nodelist {
            nodes.extend(
                batch_proto::hostlist::expand_at_most(list, MAX_NODES_SELECTED)
                    .map_err(|e| anyhow::anyhow!("invalid node list '{list}': {e}"))?,
            );
        }
        nodes.sort();
        nodes.dedup();
        let by_id = !self.jobs.is_empty() && self.states.is_empty();
        Ok(LocalFilter {
            accounts: split_list(&self.accounts),
            nodes,
            ended_within: by_id.then_some(MIN_JOB_AGE),
        })
    }

    /// Whether a line with the time comes first, as squeue prints one with `-l` and `-i`.
    fn dated(&self) -> bool {
        (self.long || self.iterate.is_some()) && !self.noheader
    }
}

/// The table of `jobs`, header first unless `noheader`, in `sort`'s order; unless `unfolded`
/// (`-r`), each array's pending tasks are one line.
pub fn render(jobs: &[JobInfo], view: &View, now: Time, zone: &Zone) -> String {
    let mut table = Table::new(view, now, zone);
    table.rows(jobs);
    table.finish()
}

/// How long squeue keeps showing a job named by `-j` after it ended: Slurm's default
/// `MinJobAge`, 300 s, for which slurmctld keeps a finished job.
pub const MIN_JOB_AGE: Time = 300_000;

/// The most node names `-w` may name, expanded.
const MAX_NODES_SELECTED: usize = 100_000;

/// squeue's selections that batchd's filter has not: by account (`-A`) and by node (`-w`).
#[derive(Clone, Debug, Default)]
pub struct LocalFilter {
    /// Accounts; empty: any.
    pub accounts: Vec<String>,
    /// Node names, sorted; empty: any. A job is kept when it holds one of them.
    pub nodes: Vec<String>,
    /// `-j` without `-t`: a finished job is kept only when it ended this recently (ms), as
    /// squeue shows one until slurmctld forgets it.
    pub ended_within: Option<Time>,
}

impl LocalFilter {
    /// Whether `job` is kept, `now` for [`LocalFilter::ended_within`].
    pub fn keeps(&self, job: &JobInfo, now: Time) -> bool {
        if let Some(age) = self.ended_within {
            if job.state.is_finished() && job.end_time.is_none_or(|e| e.saturating_add(age) < now) {
                return false;
            }
        }
        let account = || {
            job.account
                .as_deref()
                .is_some_and(|a| self.accounts.iter().any(|x| x == a))
        };
        let node = || {
            job.node_list.as_deref().is_some_and(|l| {
                batch_proto::hostlist::expand(l)
                    .is_ok_and(|ns| ns.iter().any(|n| self.nodes.binary_search(n).is_ok()))
            })
        };
        (self.accounts.is_empty() || account()) && (self.nodes.is_empty() || node())
    }
}

/// How a listing is shown: its format, order, header and folding of arrays.
pub struct View {
    /// The columns.
    pub format: Format,
    /// The order.
    pub sort: SortSpec,
    /// No header line.
    pub noheader: bool,
    /// One line per array task (`-r`).
    pub unfolded: bool,
    /// `-A` and `-w`.
    pub filter: LocalFilter,
}

/// An array's pending tasks that share one line: the first task stands for them all.
struct Fold {
    job: JobInfo,
    indices: Vec<u64>,
}

/// A table built as a listing's frames arrive: each job's line is rendered at once (with the
/// values it sorts by), except pending array tasks, gathered into folds until the end. Lines
/// and key texts go into two buffers, not a String each: at 100,000 jobs the allocations
/// would cost more than the rendering.
struct Table<'a> {
    view: &'a View,
    now: Time,
    zone: &'a Zone,
    /// Every line, one after the other.
    lines: String,
    /// Where each line ends in `lines`.
    ends: Vec<usize>,
    /// `view.sort.len()` values per line.
    keys: Vec<SortValue>,
    /// The text of the keys that are text.
    key_text: String,
    folds: Vec<Fold>,
    /// Fold of each (array, reason, held): tasks waiting for different reasons stay apart.
    fold_of: HashMap<(u64, Option<PendingReason>, bool), usize>,
    scratch: String,
}

impl<'a> Table<'a> {
    fn new(view: &'a View, now: Time, zone: &'a Zone) -> Self {
        Table {
            view,
            now,
            zone,
            lines: String::new(),
            ends: Vec::new(),
            keys: Vec::new(),
            key_text: String::new(),
            folds: Vec::new(),
            fold_of: HashMap::new(),
            scratch: String::new(),
        }
    }

    fn rows(&mut self, jobs: &[JobInfo]) {
        self.lines.reserve(jobs.len() * 96);
        self.ends.reserve(jobs.len());
        self.keys.reserve(jobs.len() * self.view.sort.len());
        let (view, now) = (self.view, self.now);
        for j in jobs.iter().filter(|j| view.filter.keeps(j, now)) {
            match (&j.array, j.state) {
                (Some(t), JobState::Pending) if !self.view.unfolded => {
                    let key = (t.array_id, j.reason, j.held);
                    match self.fold_of.get(&key) {
                        Some(&k) => self.folds[k].indices.push(t.index),
                        None => {
                            self.fold_of.insert(key, self.folds.len());
                            self.folds.push(Fold {
                                job: j.clone(),
                                indices: vec![t.index],
                            });
                        }
                    }
                }
                _ => self.row(j, None),
            }
        }
    }

    fn row(&mut self, job: &JobInfo, tasks: Option<&str>) {
        self.view.format.write_row_folded(
            &mut self.lines,
            &mut self.scratch,
            job,
            tasks,
            self.now,
            self.zone,
        );
        self.ends.push(self.lines.len());
        self.view.sort.push_values(
            job,
            tasks,
            self.now,
            self.zone,
            &mut self.keys,
            &mut self.key_text,
        );
    }

    /// The header and the lines in order.
    fn finish(mut self) -> String {
        for f in std::mem::take(&mut self.folds) {
            if f.indices.len() == 1 {
                self.row(&f.job, None);
            } else {
                let tasks = fold_indices(&f.indices, f.job.array.and_then(|t| t.throttle));
                self.row(&f.job, Some(&tasks));
            }
        }
        // Jobs equal under the keys stay in batchd's order (by id).
        let order = self
            .view
            .sort
            .order(&self.keys, &self.key_text, self.ends.len());
        let mut out = String::with_capacity(self.lines.len() + self.ends.len() + 256);
        if !self.view.noheader {
            out.push_str(&self.view.format.header());
            out.push('\n');
        }
        for i in order {
            let start = if i == 0 { 0 } else { self.ends[i - 1] };
            out.push_str(&self.lines[start..self.ends[i]]);
            out.push('\n');
        }
        out
    }
}

/// squeue's line before a long (`-l`) or repeated (`-i`) listing: the time, as `ctime`
/// words it (`Tue Nov 24 07:10:00 2026`).
pub fn date_line(now: Time, zone: &Zone) -> String {
    let secs = i64::try_from(now / 1000).unwrap_or(i64::MAX);
    let ts = jiff::Timestamp::from_second(secs).unwrap_or(jiff::Timestamp::MAX);
    zone.to_datetime(ts)
        .strftime("%a %b %d %H:%M:%S %Y")
        .to_string()
}

/// equeue.
pub fn run(cli: QueueCli) -> anyhow::Result<ExitCode> {
    check_users(&split_list(&cli.users), "Invalid user")?;
    let req = Request::List(cli.request()?);
    let view = View {
        format: cli.format()?,
        sort: cli.sort()?,
        noheader: cli.noheader,
        unfolded: cli.array,
        filter: cli.local_filter()?,
    };
    let mut client = connect(cli.socket.path())?;
    if cli.steps && !cli.json && !cli.records {
        let jobs = client.jobs(&req)?;
        print_out(&steps_table(&jobs, cli.noheader, now_ms()))?;
        return Ok(ExitCode::SUCCESS);
    }
    if cli.json || cli.records {
        let mut jobs = client.jobs(&req)?;
        let now = now_ms();
        jobs.retain(|j| view.filter.keeps(j, now));
        if cli.records {
            print_out(&(serde_json::to_string_pretty(&jobs)? + "\n"))?;
            return Ok(ExitCode::SUCCESS);
        }
        let cpus = super::slurm_json::pool_cpus(&mut client)?;
        let groups = super::slurm_json::system_groups();
        let ctx = super::slurm_json::Ctx {
            now,
            cpus: &cpus,
            group: &groups,
        };
        super::slurm_json::print(&super::slurm_json::squeue(&jobs, &ctx))?;
        return Ok(ExitCode::SUCCESS);
    }
    let zone = local_zone();
    loop {
        // Rows are rendered as each part of the listing arrives, and the whole table printed
        // at the end: an error part-way prints the error alone, not half a queue.
        let now = now_ms();
        let mut table = Table::new(&view, now, &zone);
        let mut rows = 0;
        client.jobs_each(&req, |part| {
            rows += part.iter().filter(|j| view.filter.keeps(j, now)).count();
            table.rows(&part)
        })?;
        if rows == 0 {
            unknown_ids(&mut client, &req, &view.filter, now)?;
        }
        let mut out = String::new();
        if cli.dated() {
            out.push_str(&date_line(now, &zone));
            out.push('\n');
        }
        out.push_str(&table.finish());
        let Some(secs) = cli.iterate else {
            print_out(&out)?;
            return Ok(ExitCode::SUCCESS);
        };
        // squeue -i: a blank line after each listing, then the next after the interval.
        out.push('\n');
        print_out(&out)?;
        std::thread::sleep(std::time::Duration::from_secs(secs));
    }
}

/// `squeue -s`: the running steps of `jobs`, in squeue's default step format
/// (`%.15i %.8j %.9P %.8u %.9M %N`).
pub fn steps_table(jobs: &[batch_proto::JobInfo], noheader: bool, now: u64) -> String {
    let mut out = String::new();
    let row = |v: [&str; 6]| {
        format!(
            "{:>15} {:>8} {:>9} {:>8} {:>9} {}\n",
            cut(v[0], 15),
            cut(v[1], 8),
            cut(v[2], 9),
            cut(v[3], 8),
            cut(v[4], 9),
            v[5]
        )
    };
    if !noheader {
        out.push_str(&row([
            "STEPID",
            "NAME",
            "PARTITION",
            "USER",
            "TIME",
            "NODELIST",
        ]));
    }
    for j in jobs {
        for s in j
            .job_steps
            .iter()
            .filter(|s| s.state == batch_proto::JobState::Running)
        {
            let time = super::time::format_squeue_duration(now.saturating_sub(s.start));
            out.push_str(&row([
                &s.label(&j.label()),
                &super::escape::shown(&s.name),
                &super::escape::shown(j.pool.as_deref().unwrap_or("")),
                &super::escape::shown(&j.user),
                &time,
                &super::escape::shown(&s.node_list),
            ]));
        }
    }
    out
}

/// `s` cut to `w` characters, as squeue's `%.W` cuts.
fn cut(s: &str, w: usize) -> String {
    s.chars().take(w).collect()
}

/// squeue's answer to `-j` ids none of which is in the queue (finished, or never there):
/// `Invalid job id specified` and exit 1, so that `while squeue -j $id; do ...` ends. Ids
/// that are queued but filtered out by the other options print an empty table, exit 0.
fn unknown_ids(
    client: &mut batch_proto::Client,
    req: &Request,
    filter: &LocalFilter,
    now: Time,
) -> anyhow::Result<()> {
    let Request::List(list) = req else {
        return Ok(());
    };
    if list.filter.ids.is_empty() && list.filter.tasks.is_empty() {
        return Ok(());
    }
    let only_ids = Request::List(ListRequest {
        filter: JobFilter {
            ids: list.filter.ids.clone(),
            tasks: list.filter.tasks.clone(),
            ..JobFilter::default()
        },
        include_finished: list.include_finished,
        brief: true,
    });
    let ended_within = LocalFilter {
        ended_within: filter.ended_within,
        ..LocalFilter::default()
    };
    if !client
        .jobs(&only_ids)?
        .iter()
        .any(|j| ended_within.keeps(j, now))
    {
        anyhow::bail!("Invalid job id specified");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(!brief(&["--records"]));
        assert!(!brief(&["-o", "%i %Z"]));
        assert!(!brief(&["-o", "%E"]));
        assert!(cli(&["-o", "%y"]).request().is_err());
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
        // squeue 22.05's default columns, with nothing between NODES and NODELIST(REASON):
        // `squeue | awk '{print $8}'` is the node list.
        let none = |_: &str| None;
        assert_eq!(
            cli(&[]).format_with(&none).unwrap().header(),
            "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)"
        );
        let h = cli(&["--start"]).format_with(&none).unwrap().header();
        assert!(h.ends_with(" START_TIME  NODES NODELIST(REASON)"), "{h}");
    }

    fn view(args: &[&str]) -> View {
        let c = cli(args);
        View {
            format: c.format().unwrap(),
            sort: c.sort().unwrap(),
            noheader: c.noheader,
            unfolded: c.array,
            filter: c.local_filter().unwrap(),
        }
    }

    /// Tasks 0..n of array 10 (job ids 10..): 0 running, the others pending.
    fn array(n: u64, throttle: Option<u32>) -> Vec<JobInfo> {
        (0..n)
            .map(|k| {
                let mut j = crate::batch::format::tests::job();
                j.id = 10 + k;
                j.array = Some(crate::batch::format::tests::task(10, k, throttle));
                if k > 0 {
                    j.state = JobState::Pending;
                    j.node_list = None;
                    j.start_time = None;
                    j.reason = Some(if k > 2 {
                        PendingReason::JobArrayTaskLimit
                    } else {
                        PendingReason::Priority
                    });
                }
                j
            })
            .collect()
    }

    #[test]
    fn pending_array_tasks_fold_like_squeue() {
        let z = crate::batch::time::fixed_zone(0);
        let jobs = array(6, Some(2));
        let out = render(&jobs, &view(&["-h", "-o", "%i %t %r"]), 0, &z);
        // Pending first (squeue's default order), a line per reason; the running task alone.
        assert_eq!(
            out,
            "10_[1-2%2] PD Priority\n10_[3-5%2] PD JobArrayTaskLimit\n10_0 R None\n"
        );
        let out = render(&jobs, &view(&["-h", "-r", "-o", "%i", "-S", "i"]), 0, &z);
        assert_eq!(out.lines().count(), 6);
        assert!(out.starts_with("10_0\n10_1\n"), "{out}");
        // A lone pending task keeps its own id.
        let out = render(&array(2, None), &view(&["-h", "-o", "%i"]), 0, &z);
        assert_eq!(out, "10_1\n10_0\n");
    }

    #[test]
    fn long_listing_and_sort_option() {
        let z = crate::batch::time::fixed_zone(0);
        let c = cli(&["-l"]);
        assert!(c.dated());
        assert!(!cli(&["-l", "-h"]).dated());
        assert!(cli(&["-i", "5"]).dated());
        assert_eq!(
            c.format().unwrap().header(),
            "             JOBID PARTITION     NAME     USER    STATE       TIME TIME_LIMI  NODES NODELIST(REASON)"
        );
        // -o and -O exclude each other; -o wins over -l.
        assert!(QueueCli::try_parse_from(["equeue", "-o", "%i", "-O", "jobid"]).is_err());
        assert_eq!(cli(&["-l", "-o", "%i"]).format().unwrap().header(), "JOBID");
        assert!(cli(&["-S", "nope"]).sort().is_err());
        assert!(QueueCli::try_parse_from(["equeue", "-i", "0"]).is_err());
        assert!(QueueCli::try_parse_from(["equeue", "-i", "1", "--json"]).is_err());
        assert!(QueueCli::try_parse_from(["equeue", "-i", "1", "--records"]).is_err());
        assert!(QueueCli::try_parse_from(["equeue", "--json", "--records"]).is_err());
        let out = render(
            &array(3, None),
            &view(&["-h", "-r", "-o", "%i", "-S", "-i"]),
            0,
            &z,
        );
        assert_eq!(out, "10_2\n10_1\n10_0\n");
        assert_eq!(
            date_line(86_400_000 + 3_723_000, &z),
            "Fri Jan 02 01:02:03 1970"
        );
    }

    /// squeue 22.05 reads `SQUEUE_FORMAT` (as `-o`), `SQUEUE_FORMAT2` (as `-O`) and
    /// `SQUEUE_SORT` (as `-S`); the options win over them, they win over `-l` and `--start`.
    #[test]
    fn squeue_variables_are_read_as_squeue_reads_them() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let f = env(&[("SQUEUE_FORMAT", "%i %j")]);
        assert_eq!(cli(&[]).format_with(&f).unwrap().header(), "JOBID NAME");
        assert_eq!(cli(&["-l"]).format_with(&f).unwrap().header(), "JOBID NAME");
        assert_eq!(cli(&["-o", "%u"]).format_with(&f).unwrap().header(), "USER");
        let f2 = env(&[("SQUEUE_FORMAT2", "jobid:6,name:5")]);
        assert_eq!(cli(&[]).format_with(&f2).unwrap().header(), "JOBID NAME ");
        assert_eq!(
            cli(&["-O", "state:6"]).format_with(&f2).unwrap().header(),
            "STATE "
        );
        let z = crate::batch::time::fixed_zone(0);
        let sort = env(&[("SQUEUE_SORT", "-i")]);
        let c = cli(&["-h", "-r", "-o", "%i"]);
        let v = View {
            format: c.format().unwrap(),
            sort: c.sort_with(&sort).unwrap(),
            noheader: true,
            unfolded: true,
            filter: LocalFilter::default(),
        };
        assert_eq!(render(&array(3, None), &v, 0, &z), "10_2\n10_1\n10_0\n");
        assert!(cli(&["-S", "i"]).sort_with(&sort).is_ok());
        assert!(cli(&[])
            .format_with(&env(&[("SQUEUE_FORMAT", "%y")]))
            .is_err());
    }

    /// squeue `-A ACCOUNTS` and `-w NODES` keep the jobs of those accounts and on those
    /// nodes; `-o %all` prints every field, each followed by `|`; `%C %c %m` (and `-O
    /// NumCPUs,MinCpus,MinMemory`) are the CPUs, CPUs per node and memory asked for.
    #[test]
    fn accounts_nodes_all_fields_and_cpus() {
        let z = crate::batch::time::fixed_zone(0);
        let mut a = crate::batch::format::tests::job();
        a.account = Some("proj".into());
        a.node_list = Some("debug[001-003]".into());
        let mut b = a.clone();
        b.id = 43;
        b.account = None;
        b.node_list = Some("debug[004-005]".into());
        b.resources = Some(batch_proto::resources::Resources {
            ntasks: Some(8),
            cpus_per_task: Some(2),
            ntasks_per_node: Some(2),
            mem_per_node: Some(4096),
            ..Default::default()
        });
        let jobs = [a, b];
        let out = |args: &[&str]| render(&jobs, &view(args), 0, &z);
        assert_eq!(out(&["-h", "-o", "%i", "-A", "proj"]), "42\n");
        assert_eq!(out(&["-h", "-o", "%i", "-w", "debug[002,009]"]), "42\n");
        assert_eq!(
            out(&["-h", "-o", "%i", "-w", "debug005", "-w", "x1"]),
            "43\n"
        );
        assert_eq!(out(&["-h", "-o", "%i", "-A", "other"]), "");
        assert!(cli(&["-w", "d[3-1]"]).local_filter().is_err());
        assert_eq!(
            out(&["-h", "-o", "%i %C %c %m", "-S", "i"]),
            "42 3 1 0\n43 16 4 4G\n"
        );
        assert_eq!(
            out(&[
                "-h",
                "-O",
                "JobID:4,NumCPUs:4,MinCpus:4,MinMemory:4",
                "-S",
                "i"
            ]),
            "42  3   1   0   \n43  16  4   4G  \n"
        );
        let all = cli(&["-o", "%all"]).format().unwrap().header();
        assert!(
            all.starts_with("JOBID|JOBID|PARTITION|NAME|USER|") && all.ends_with("|MIN_MEMORY|"),
            "{all}"
        );
    }

    /// squeue 22.05 `-j ID` shows a job that ended less than MinJobAge (300 s) ago, in its
    /// final state; an older one is gone (`Invalid job id specified`). Without `-j` finished
    /// jobs are not listed, with `-t` they are whenever they ended.
    #[test]
    fn a_job_named_by_id_is_shown_for_a_while_after_it_ended() {
        let r = cli(&["-j", "42"]).request().unwrap();
        assert!(r.include_finished);
        assert!(!cli(&[]).request().unwrap().include_finished);
        assert!(
            !cli(&["-j", "42", "-t", "R"])
                .request()
                .unwrap()
                .include_finished
        );
        let f = cli(&["-j", "42"]).local_filter().unwrap();
        let mut j = crate::batch::format::tests::job();
        j.state = JobState::Completed;
        j.end_time = Some(1_000_000);
        assert!(f.keeps(&j, 1_000_000 + MIN_JOB_AGE));
        assert!(!f.keeps(&j, 1_000_001 + MIN_JOB_AGE));
        let mut running = j.clone();
        running.state = JobState::Running;
        running.end_time = None;
        assert!(f.keeps(&running, u64::MAX));
        assert!(cli(&["-j", "42", "-t", "CD"])
            .local_filter()
            .unwrap()
            .keeps(&j, u64::MAX));
        let z = crate::batch::time::fixed_zone(0);
        let v = View {
            filter: f,
            ..view(&["-h", "-o", "%i %t"])
        };
        assert_eq!(render(&[j], &v, 1_000_000, &z), "42 CD\n");
    }

    #[test]
    fn help_lists_the_step_field() {
        use clap::CommandFactory;
        let help = QueueCli::command().render_help().to_string();
        assert!(help.contains("%s step"), "{help}");
    }
}
