//! eacct: the accounting history of jobs, as sacct: finished ones from batchd's history,
//! pending and running ones from its queue.

use std::process::ExitCode;

use batch_proto::time::{Time, MINUTE, SECOND};
use std::collections::HashMap;

use batch_proto::{
    AcctRequest, JobFilter, JobInfo, JobState, JobStep, ListRequest, Request, StepId, Usage,
};
use clap::Parser;

use super::args::{job_states, SocketArg};
use super::cli::{connect, now_ms, parse_refs, print_out, split_list};
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
    /// Only jobs of these pools.
    #[arg(short = 'r', long = "partition", value_name = "POOLS")]
    pub partitions: Vec<String>,
    /// Only jobs of these accounts.
    #[arg(short = 'A', long = "accounts", value_name = "ACCOUNTS")]
    pub accounts: Vec<String>,
    /// Only jobs that ran on any of these nodes (a host list).
    #[arg(short = 'N', long = "nodelist", value_name = "NODES")]
    pub nodelist: Option<String>,
    /// The long format: every field of sacct's `--long` that esched has.
    #[arg(short = 'l', long = "long", conflicts_with_all = ["brief", "format"])]
    pub long: bool,
    /// The brief format: JobID, State, ExitCode.
    #[arg(short = 'b', long = "brief", conflicts_with = "format")]
    pub brief: bool,
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
    /// Jobs only, without their steps (`ID.batch`, `ID.0`, ...).
    #[arg(short = 'X', long = "allocations")]
    pub allocations: bool,
    /// The columns: sacct's field names in any case, comma-separated, each with an optional
    /// `%W` width (`%-W` left-justifies), e.g. `JobID,JobName%30,State`; default
    /// `$SACCT_FORMAT`, else JobID,JobName,Partition,State,ExitCode,Submit,Start,End,Elapsed.
    #[arg(short = 'o', long = "format", value_name = "FIELDS")]
    pub format: Option<String>,
    /// List the fields `--format` takes.
    #[arg(short = 'e', long = "helpformat")]
    pub helpformat: bool,
    /// JSON as Slurm 22.05's `sacct --json` prints it: `{"meta", "errors", "jobs"}`, each
    /// job with its `steps`.
    #[arg(long, conflicts_with = "records")]
    pub json: bool,
    /// JSON: the daemon's job records as they come over the wire.
    #[arg(long)]
    pub records: bool,
    /// Write the selected jobs that ran to this file as an SWF trace (wait = start − submit,
    /// run time, nodes, time limit as the requested time, status), as esim and pyss read it.
    #[arg(long, value_name = "FILE")]
    pub swf: Option<std::path::PathBuf>,
    /// Draw the selected jobs to this SVG file: a Gantt chart of the jobs on the pools' nodes
    /// over the past day (or from --starttime to --endtime), with utilisation and queue length.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<std::path::PathBuf>,
    /// Draw that picture to this PNG file.
    #[arg(long, value_name = "FILE")]
    pub png: Option<std::path::PathBuf>,
    /// The daemon's socket.
    #[command(flatten)]
    pub socket: SocketArg,
}

impl AcctCli {
    /// The `--format` in force: the option (or `-b`'s, `-l`'s), else `$SACCT_FORMAT` (as
    /// sacct), else none.
    pub fn format_text(&self) -> Option<String> {
        if self.brief {
            return Some(BRIEF_FIELDS.to_string());
        }
        if self.long {
            return Some(LONG_FIELDS.to_string());
        }
        self.format.clone().or_else(|| {
            std::env::var("SACCT_FORMAT")
                .ok()
                .filter(|f| !f.trim().is_empty())
        })
    }

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
        let states = job_states(&self.states)?;
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
                pools: split_list(&self.partitions),
            },
            since: when(&self.start)?,
            until: when(&self.end)?,
        })
    }
}

/// One sacct field eacct knows: its name (as sacct spells it in the header), sacct's default
/// width, and its value.
struct Field {
    name: &'static str,
    width: usize,
    value: fn(&JobInfo, &Ctx) -> String,
    step: StepValue,
}

/// What a field shows on a step's row (`ID.batch`, `ID.0`): blank, as sacct leaves the
/// job-only fields, the job's value, or the step's own.
enum StepValue {
    Blank,
    Job,
    Own(fn(&JobInfo, &JobStep, &Ctx) -> String),
}

impl Field {
    /// The field's value on `row`.
    fn of(&self, row: &Row<'_>, c: &Ctx<'_>) -> String {
        match (row.step, &self.step) {
            (None, _) | (Some(_), StepValue::Job) => (self.value)(row.job, c),
            (Some(_), StepValue::Blank) => String::new(),
            (Some(s), StepValue::Own(f)) => f(row.job, s, c),
        }
    }
}

/// One row of the table: a job, or one of its steps.
struct Row<'a> {
    job: &'a JobInfo,
    step: Option<&'a JobStep>,
}

fn step_elapsed(s: &JobStep, now: Time) -> u64 {
    s.end.unwrap_or(now).saturating_sub(s.start)
}

/// What a value may depend on beyond the job: the clock (running jobs' Elapsed), the zone,
/// and each pool's CPUs per node (for the CPU fields).
struct Ctx<'a> {
    now: Time,
    zone: &'a Zone,
    cpus: &'a HashMap<String, u32>,
}

impl Ctx<'_> {
    /// CPUs per node of job `j`'s pool (1 when unknown).
    fn cpus_per_node(&self, j: &JobInfo) -> u32 {
        j.pool
            .as_deref()
            .and_then(|p| self.cpus.get(p))
            .copied()
            .unwrap_or(1)
            .max(1)
    }

    /// CPUs job `j` holds (none before its start).
    fn job_cpus(&self, j: &JobInfo) -> u64 {
        if j.start_time.is_none() {
            return 0;
        }
        u64::from(j.nodes) * u64::from(self.cpus_per_node(j))
    }

    /// CPUs step `s` of job `j` holds: its tasks' (the batch step: its node's).
    fn step_cpus(&self, j: &JobInfo, s: &JobStep) -> u64 {
        match s.id {
            StepId::Batch => u64::from(self.cpus_per_node(j)),
            StepId::Number(_) => u64::from(s.tasks) * u64::from(s.cpus_per_task.max(1)),
        }
    }
}

/// sacct's CPU times: `MM:SS.mmm` under an hour, then `HH:MM:SS`, `D-HH:MM:SS`.
pub fn format_cpu_time(ms: u64) -> String {
    let secs = ms / 1000;
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else if h > 0 {
        format!("{h:02}:{m:02}:{s:02}")
    } else {
        format!("{m:02}:{s:02}.{:03}", ms % 1000)
    }
}

/// sacct's memory sizes: KiB with a `K` suffix (`MaxRSS`).
fn kib(n: u64) -> String {
    format!("{n}K")
}

/// A job's usage: the sum of its steps' (the batch step's counts only the batch script's own
/// processes, erun's tasks being the steps').
fn job_usage(j: &JobInfo) -> Option<Usage> {
    j.job_steps
        .iter()
        .filter_map(|s| s.usage)
        .reduce(Usage::merge)
}

fn cpu_field(u: Option<Usage>, f: fn(&Usage) -> u64) -> String {
    u.map(|u| format_cpu_time(f(&u))).unwrap_or_default()
}

fn elapsed(job: &JobInfo, now: Time) -> u64 {
    match (job.start_time, job.end_time) {
        (Some(s), Some(e)) => e.saturating_sub(s),
        // sacct counts a running job's Elapsed up to now.
        (Some(s), None) if job.state != JobState::Pending => now.saturating_sub(s),
        _ => 0,
    }
}

/// sacct's `Eligible`: when the job could first start (its `--begin`, else its submission).
/// How long the job waited (or has waited) from eligible to start: sacct's Planned, formerly
/// Reserved (both names are accepted).
fn planned(j: &JobInfo, c: &Ctx<'_>) -> String {
    let end = j.start_time.unwrap_or(c.now);
    format_sacct_duration(end.saturating_sub(eligible(j)))
}

/// sacct says "Unknown" for a start or an end that has not happened (yet).
fn timestamp_or_unknown(t: Option<Time>, zone: &Zone) -> String {
    t.map_or_else(
        || "Unknown".to_string(),
        |t| format_opt_timestamp(Some(t), zone),
    )
}

fn eligible(job: &JobInfo) -> Time {
    job.begin
        .map_or(job.submit_time, |b| b.max(job.submit_time))
}

fn opt_or(v: Option<&str>, none: &str) -> String {
    v.unwrap_or(none).to_string()
}

/// The fields, in `--helpformat` order; widths are sacct's defaults.
const FIELDS: &[Field] = &[
    Field {
        name: "Account",
        step: StepValue::Job,
        width: 10,
        value: |j, _| opt_or(j.account.as_deref(), ""),
    },
    Field {
        name: "AllocNodes",
        step: StepValue::Own(|_, s, _| s.nodes.to_string()),
        width: 10,
        value: |j, _| {
            if j.start_time.is_some() {
                j.nodes.to_string()
            } else {
                "0".into()
            }
        },
    },
    Field {
        name: "Elapsed",
        step: StepValue::Own(|_, s, c| format_sacct_duration(step_elapsed(s, c.now))),
        width: 10,
        value: |j, c| format_sacct_duration(elapsed(j, c.now)),
    },
    Field {
        name: "ElapsedRaw",
        step: StepValue::Own(|_, s, c| (step_elapsed(s, c.now) / SECOND).to_string()),
        width: 10,
        value: |j, c| (elapsed(j, c.now) / SECOND).to_string(),
    },
    Field {
        name: "Eligible",
        step: StepValue::Own(|_, s, c| format_opt_timestamp(Some(s.start), c.zone)),
        width: 19,
        value: |j, c| format_opt_timestamp(Some(eligible(j)), c.zone),
    },
    Field {
        name: "End",
        step: StepValue::Own(|_, s, c| timestamp_or_unknown(s.end, c.zone)),
        width: 19,
        value: |j, c| timestamp_or_unknown(j.end_time, c.zone),
    },
    Field {
        name: "ExitCode",
        step: StepValue::Own(|_, s, _| {
            format!("{}:{}", s.exit_code.unwrap_or(0), s.signal.unwrap_or(0))
        }),
        width: 8,
        value: |j, _| match (j.exit_code, j.signal) {
            (None, None) => "0:0".to_string(),
            _ => j.exit_status(),
        },
    },
    Field {
        name: "JobID",
        step: StepValue::Own(|j, s, _| s.label(&j.label())),
        width: 12,
        value: |j, _| j.label(),
    },
    Field {
        name: "JobIDRaw",
        step: StepValue::Own(|j, s, _| s.label(&j.id.to_string())),
        width: 12,
        value: |j, _| j.id.to_string(),
    },
    Field {
        name: "JobName",
        step: StepValue::Own(|_, s, _| s.name.clone()),
        width: 10,
        value: |j, _| j.name.clone(),
    },
    Field {
        name: "NNodes",
        step: StepValue::Own(|_, s, _| s.nodes.to_string()),
        width: 8,
        value: |j, _| j.nodes.to_string(),
    },
    Field {
        name: "NodeList",
        step: StepValue::Own(|_, s, _| s.node_list.clone()),
        width: 15,
        value: |j, _| match j.node_list.as_deref() {
            Some(l) if !l.is_empty() => l.to_string(),
            _ => "None assigned".to_string(),
        },
    },
    Field {
        name: "Partition",
        step: StepValue::Blank,
        width: 10,
        value: |j, _| opt_or(j.pool.as_deref(), ""),
    },
    Field {
        name: "Planned",
        step: StepValue::Blank,
        width: 10,
        value: planned,
    },
    Field {
        name: "Priority",
        step: StepValue::Blank,
        width: 10,
        value: |j, _| j.priority.to_string(),
    },
    Field {
        name: "QOS",
        step: StepValue::Blank,
        width: 10,
        value: |j, _| opt_or(j.qos.as_deref(), ""),
    },
    Field {
        name: "Reason",
        step: StepValue::Blank,
        width: 20,
        value: |j, _| match (&j.detail, j.reason) {
            (Some(d), _) => d.clone(),
            (None, Some(r)) => r.name().to_string(),
            (None, None) => "None".to_string(),
        },
    },
    Field {
        name: "Reserved",
        step: StepValue::Blank,
        width: 10,
        value: planned,
    },
    Field {
        name: "Start",
        step: StepValue::Own(|_, s, c| format_opt_timestamp(Some(s.start), c.zone)),
        width: 19,
        value: |j, c| timestamp_or_unknown(j.start_time, c.zone),
    },
    Field {
        name: "State",
        step: StepValue::Own(|_, s, _| s.state.name().to_string()),
        width: 10,
        value: |j, _| j.state.name().to_string(),
    },
    Field {
        name: "Submit",
        step: StepValue::Own(|_, s, c| format_opt_timestamp(Some(s.start), c.zone)),
        width: 19,
        value: |j, c| format_opt_timestamp(Some(j.submit_time), c.zone),
    },
    Field {
        name: "Timelimit",
        step: StepValue::Blank,
        width: 10,
        value: |j, _| format_sacct_duration(j.time_limit),
    },
    Field {
        name: "TimelimitRaw",
        step: StepValue::Blank,
        width: 12,
        // Minutes, rounded up as Slurm stores limits.
        value: |j, _| j.time_limit.div_ceil(MINUTE).to_string(),
    },
    Field {
        name: "UID",
        step: StepValue::Blank,
        width: 6,
        value: |j, _| j.uid.to_string(),
    },
    Field {
        name: "User",
        step: StepValue::Blank,
        width: 9,
        value: |j, _| j.user.clone(),
    },
    Field {
        name: "WorkDir",
        step: StepValue::Blank,
        width: 15,
        value: |j, _| j.work_dir.clone(),
    },
    Field {
        name: "AllocCPUS",
        width: 10,
        value: |j, c| c.job_cpus(j).to_string(),
        step: StepValue::Own(|j, s, c| c.step_cpus(j, s).to_string()),
    },
    Field {
        name: "AllocTRES",
        width: 10,
        value: |j, c| {
            if j.start_time.is_none() {
                String::new()
            } else {
                format!("cpu={},node={}", c.job_cpus(j), j.nodes)
            }
        },
        step: StepValue::Own(|j, s, c| format!("cpu={},node={}", c.step_cpus(j, s), s.nodes)),
    },
    Field {
        name: "CPUTime",
        width: 10,
        value: |j, c| format_sacct_duration(elapsed(j, c.now) / 1000 * c.job_cpus(j) * 1000),
        step: StepValue::Own(|j, s, c| {
            format_sacct_duration(step_elapsed(s, c.now) / 1000 * c.step_cpus(j, s) * 1000)
        }),
    },
    Field {
        name: "CPUTimeRAW",
        width: 10,
        value: |j, c| (elapsed(j, c.now) / SECOND * c.job_cpus(j)).to_string(),
        step: StepValue::Own(|j, s, c| {
            (step_elapsed(s, c.now) / SECOND * c.step_cpus(j, s)).to_string()
        }),
    },
    Field {
        name: "DerivedExitCode",
        width: 15,
        // The highest exit code of the job's steps, as sacct derives it.
        value: |j, _| {
            let worst = j
                .job_steps
                .iter()
                .filter_map(|s| s.exit_code)
                .max()
                .unwrap_or(0);
            let sig = j
                .job_steps
                .iter()
                .filter(|s| s.exit_code == Some(worst))
                .filter_map(|s| s.signal)
                .max()
                .unwrap_or(0);
            format!("{worst}:{sig}")
        },
        step: StepValue::Blank,
    },
    Field {
        name: "MaxRSS",
        width: 10,
        value: |_, _| String::new(),
        step: StepValue::Own(|_, s, _| s.usage.map(|u| kib(u.max_rss_kib)).unwrap_or_default()),
    },
    Field {
        name: "NTasks",
        width: 8,
        value: |_, _| String::new(),
        step: StepValue::Own(|_, s, _| s.tasks.to_string()),
    },
    Field {
        name: "ReqCPUS",
        width: 8,
        value: |j, c| (u64::from(j.nodes) * u64::from(c.cpus_per_node(j))).to_string(),
        step: StepValue::Own(|j, s, c| c.step_cpus(j, s).to_string()),
    },
    Field {
        name: "SystemCPU",
        width: 10,
        value: |j, _| cpu_field(job_usage(j), |u| u.system_ms),
        step: StepValue::Own(|_, s, _| cpu_field(s.usage, |u| u.system_ms)),
    },
    Field {
        name: "TotalCPU",
        width: 10,
        value: |j, _| cpu_field(job_usage(j), Usage::total_cpu_ms),
        step: StepValue::Own(|_, s, _| cpu_field(s.usage, Usage::total_cpu_ms)),
    },
    Field {
        name: "UserCPU",
        width: 10,
        value: |j, _| cpu_field(job_usage(j), |u| u.user_ms),
        step: StepValue::Own(|_, s, _| cpu_field(s.usage, |u| u.user_ms)),
    },
];

/// `-b`'s columns, sacct's.
const BRIEF_FIELDS: &str = "JobID,State,ExitCode";

/// `-l`'s columns: sacct's `--long` list, less the fields esched has no figure for (virtual
/// memory, pages, disk I/O, energy, CPU frequencies).
const LONG_FIELDS: &str = "JobID,JobIDRaw,JobName,Partition,MaxRSS,NTasks,AllocCPUS,Elapsed,\
State,ExitCode,ReqCPUS,AllocTRES,TotalCPU,UserCPU,SystemCPU";

/// Whether `job` passes the filters sacct applies beyond batchd's: accounts (`-A`) and nodes
/// (`-N`, any of the job's nodes).
fn selected(job: &JobInfo, accounts: &[String], nodes: &[String]) -> bool {
    (accounts.is_empty() || job.account.as_ref().is_some_and(|a| accounts.contains(a)))
        && (nodes.is_empty() || super::cli::ran_on(job, nodes))
}

/// eacct's columns when no `--format` is given.
const DEFAULT_FIELDS: &str = "JobID,JobName,Partition,State,ExitCode,Submit,Start,End,Elapsed";

/// One column of a `--format`: a field and its width (negative: left-justified).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Column {
    field: usize,
    width: isize,
}

/// A parsed `--format`/`-o` list: sacct's field names in any case, each with an optional
/// `%W` width (`%-W` left-justifies), comma-separated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcctFormat {
    columns: Vec<Column>,
}

impl AcctFormat {
    /// Parses a list; an unknown field is sacct's error, `Invalid field requested: "NAME"`.
    pub fn parse(list: &str) -> anyhow::Result<AcctFormat> {
        let mut columns = Vec::new();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, width) = match item.split_once('%') {
                Some((n, w)) => (n, Some(w)),
                None => (item, None),
            };
            let field = FIELDS
                .iter()
                .position(|f| f.name.eq_ignore_ascii_case(name))
                .ok_or_else(|| anyhow::anyhow!("Invalid field requested: \"{name}\""))?;
            let width = match width {
                None => FIELDS[field].width as isize,
                Some(w) => w
                    .parse::<isize>()
                    .ok()
                    .filter(|w| *w != 0 && w.unsigned_abs() <= 1000)
                    .ok_or_else(|| anyhow::anyhow!("Invalid field width: \"{item}\""))?,
            };
            columns.push(Column { field, width });
        }
        if columns.is_empty() {
            anyhow::bail!("No fields requested in format \"{list}\"");
        }
        Ok(AcctFormat { columns })
    }

    fn default_format() -> AcctFormat {
        // The default list names known fields only.
        AcctFormat::parse(DEFAULT_FIELDS).unwrap_or(AcctFormat {
            columns: Vec::new(),
        })
    }
}

/// `--helpformat`: the field names, four a line as sacct prints them.
pub fn help_format() -> String {
    let mut out = String::new();
    let mut fields: Vec<&Field> = FIELDS.iter().collect();
    fields.sort_by_key(|f| f.name.to_ascii_lowercase());
    for row in fields.chunks(4) {
        let line: Vec<String> = row.iter().map(|f| format!("{:<20}", f.name)).collect();
        out.push_str(line.concat().trim_end());
        out.push('\n');
    }
    out
}

/// sacct's fixed-width cell: right-aligned (left with a negative width), cut with a `+` when
/// too long.
fn cell(v: &str, width: isize) -> String {
    let w = width.unsigned_abs();
    if v.chars().count() > w {
        let cut: String = v.chars().take(w.saturating_sub(1)).collect();
        format!("{cut}+")
    } else if width < 0 {
        format!("{v:<w$}")
    } else {
        format!("{v:>w$}")
    }
}

/// The table of `jobs`, `now` being the time running jobs' Elapsed counts to.
pub fn render(jobs: &[JobInfo], cli: &AcctCli, now: Time, zone: &Zone) -> anyhow::Result<String> {
    render_with(jobs, cli, now, zone, &HashMap::new())
}

/// [`render`] with each pool's CPUs per node (`cpus`), which the CPU fields need.
pub fn render_with(
    jobs: &[JobInfo],
    cli: &AcctCli,
    now: Time,
    zone: &Zone,
    cpus: &HashMap<String, u32>,
) -> anyhow::Result<String> {
    let given = cli.format_text();
    let mut format = match given.as_deref() {
        Some(f) => AcctFormat::parse(f)?,
        None => AcctFormat::default_format(),
    };
    // Why a job ended as it did (preempted, failed at its deadline, rejected) is what its
    // owner asks sacct's `Reason` for; without `--format` the column appears when some listed
    // job has one, so the usual table keeps sacct's default columns.
    // The column is as wide as its longest reason, so that the header's dashes cover it, and a
    // job without one leaves its cell blank: sacct's `None` there would read as a reason.
    let mut auto_reason = None;
    if given.is_none() && jobs.iter().any(|j| j.detail.is_some()) {
        let widest = jobs
            .iter()
            .filter_map(|j| j.detail.as_deref())
            .map(|d| super::escape::shown(d).chars().count())
            .max()
            .unwrap_or(0)
            .max("Reason".len());
        auto_reason = Some(format.columns.len());
        format.columns.push(Column {
            field: FIELDS.iter().position(|f| f.name == "Reason").unwrap_or(0),
            width: -isize::try_from(widest).unwrap_or(isize::MAX),
        });
    }
    let ctx = Ctx { now, zone, cpus };
    let sep = cli.parsable || cli.parsable2;
    let line = |vals: Vec<String>, header: bool| -> String {
        if sep {
            let mut l = vals.join("|");
            if cli.parsable {
                l.push('|');
            }
            l
        } else {
            let cells: Vec<String> = vals
                .iter()
                .zip(&format.columns)
                .map(|(v, c)| match c.width {
                    0 => v.clone(),
                    // A header is cut without the `+`, as sacct's.
                    w if header => cell(&v.chars().take(w.unsigned_abs()).collect::<String>(), w),
                    w => cell(v, w),
                })
                .collect();
            cells.join(" ")
        }
    };
    let mut out = String::new();
    if !cli.noheader {
        let names = format
            .columns
            .iter()
            .map(|c| FIELDS[c.field].name.to_string())
            .collect();
        let l = line(names, true);
        out.push_str(if sep { &l } else { l.trim_end() });
        out.push('\n');
        if !sep {
            let dashes: Vec<String> = format
                .columns
                .iter()
                .map(|c| {
                    if c.width == 0 {
                        "------".to_string()
                    } else {
                        "-".repeat(c.width.unsigned_abs())
                    }
                })
                .collect();
            out.push_str(&dashes.join(" "));
            out.push('\n');
        }
    }
    let rows = jobs.iter().flat_map(|j| {
        let steps = if cli.allocations {
            &[][..]
        } else {
            &j.job_steps[..]
        };
        std::iter::once(Row { job: j, step: None }).chain(steps.iter().map(move |s| Row {
            job: j,
            step: Some(s),
        }))
    });
    for row in rows {
        let vals = format
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if auto_reason == Some(i) && (row.job.detail.is_none() || row.step.is_some()) {
                    return String::new();
                }
                super::escape::shown(&FIELDS[c.field].of(&row, &ctx)).into_owned()
            })
            .collect();
        let l = line(vals, false);
        // A left-justified last column would pad the line with blanks.
        out.push_str(if sep { &l } else { l.trim_end() });
        out.push('\n');
    }
    Ok(out)
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
    if cli.helpformat {
        print_out(&help_format())?;
        return Ok(ExitCode::SUCCESS);
    }
    // A bad format is refused before batchd is asked.
    if let Some(f) = cli.format_text() {
        AcctFormat::parse(&f)?;
    }
    let me = (!nix::unistd::getuid().is_root()).then(super::cli::current_user);
    let now = now_ms();
    let req = cli.request(now, &local_zone(), me)?;
    let mut client = connect(cli.socket.path())?;
    let live = client.jobs(&Request::List(ListRequest {
        filter: req.filter.clone(),
        include_finished: false,
        brief: false,
    }))?;
    let live = live_in_window(live, &req, now);
    let finished = client.jobs(&Request::Acct(req))?;
    let accounts = split_list(&cli.accounts);
    let nodes = match cli.nodelist.as_deref() {
        Some(l) => super::cli::node_names(l)?,
        None => Vec::new(),
    };
    let mut jobs = merge(live, finished);
    jobs.retain(|j| selected(j, &accounts, &nodes));
    if cli.swf.is_some() || cli.svg.is_some() || cli.png.is_some() {
        let info = match client.request(&Request::Info(batch_proto::InfoRequest {}))? {
            batch_proto::Response::Info(info) => info,
            other => return Err(batch_proto::ClientError::unexpected("info", &other).into()),
        };
        let socket = cli.socket.path().map_or_else(
            batch_proto::socket::default_socket_path,
            std::path::Path::to_path_buf,
        );
        let socket = socket.display().to_string();
        if let Some(path) = &cli.swf {
            let file = std::fs::File::create(path)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            super::pictures::write_swf(std::io::BufWriter::new(file), &jobs, Some(&info), &socket)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        }
        if cli.svg.is_some() || cli.png.is_some() {
            let zone = local_zone();
            let since = cli
                .start
                .as_deref()
                .map(|v| parse_acct_time(v, now, &zone))
                .transpose()?;
            let until = cli
                .end
                .as_deref()
                .map(|v| parse_acct_time(v, now, &zone))
                .transpose()?;
            let until = until.unwrap_or(now);
            let since = since.unwrap_or(until.saturating_sub(24 * 60 * MINUTE));
            let g = super::pictures::gantt(
                &info,
                &jobs,
                now,
                (since, until.max(since + SECOND)),
                &zone,
                format!("eacct: jobs of the batchd of {socket}"),
                "The jobs eacct selected.",
            );
            super::pictures::write_picture(&g, cli.svg.as_deref(), cli.png.as_deref())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if cli.records {
        print_out(&(serde_json::to_string_pretty(&jobs)? + "\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let cpus = super::slurm_json::pool_cpus(&mut client)?;
    if cli.json {
        let groups = super::slurm_json::system_groups();
        let ctx = super::slurm_json::Ctx {
            now,
            cpus: &cpus,
            group: &groups,
        };
        super::slurm_json::print(&super::slurm_json::sacct_with(
            &jobs,
            &ctx,
            !cli.allocations,
        ))?;
    } else {
        print_out(&render_with(&jobs, &cli, now, &local_zone(), &cpus)?)?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::super::time::fixed_zone;
    use super::*;
    use batch_proto::JobShape;

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
            job_steps: Vec::new(),
            inert: None,
            resources: None,
            slurm_allocations: None,
        }
    }

    #[test]
    fn table_like_sacct() {
        let z = fixed_zone(0);
        let t = render(&[job()], &cli(&[]), 0, &z).unwrap();
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
        let p = render(&[job()], &cli(&["-P", "-n"]), 0, &z).unwrap();
        assert_eq!(
            p,
            "12|a-very-long-job-name|debug|FAILED|3:0|1970-01-01T00:00:01|\
                       1970-01-01T00:00:02|1970-01-01T01:02:07|01:02:05\n"
        );
        assert!(render(&[job()], &cli(&["-p", "-n"]), 0, &z)
            .unwrap()
            .ends_with("|\n"));
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
    fn format_takes_sacct_names_in_any_case_with_widths() {
        let z = fixed_zone(0);
        let t = |args: &[&str]| render(&[job()], &cli(args), 0, &z);
        assert_eq!(
            t(&["-o", "jobid,JOBNAME%4,state%-8,nnodes"]).unwrap(),
            "       JobID JobN State      NNodes\n\
             ------------ ---- -------- --------\n\
             \x20         12 a-v+ FAILED          1\n"
        );
        assert_eq!(
            t(&[
                "--format=JobIDRaw,ElapsedRaw,Timelimit,TimelimitRaw,User,UID,NodeList",
                "-P",
                "-n"
            ])
            .unwrap(),
            "12|3725|00:01:00|1|alice|1000|debug001\n"
        );
        // -p keeps the trailing separator; widths mean nothing to parsable output.
        assert_eq!(
            t(&["-o", "JobID%2,Account,QOS,Reason", "-p"]).unwrap(),
            "JobID|Account|QOS|Reason|\n12|||None|\n"
        );
        let e = t(&["-o", "JobID,Nosuch"]).unwrap_err().to_string();
        assert_eq!(e, "Invalid field requested: \"Nosuch\"");
        assert!(t(&["-o", "JobID%x"]).is_err());
        assert!(t(&["-o", ","]).is_err());
    }

    #[test]
    fn the_reason_column_fits_its_reasons_and_is_blank_without_one() {
        let z = fixed_zone(0);
        let plain = job();
        let mut failed = job();
        failed.id = 13;
        failed.detail = Some("Deadline: no room for every component at the start deadline".into());
        let out = render(&[plain, failed], &cli(&[]), 65_000, &z).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].ends_with(" Reason"), "{out}");
        let widest = "Deadline: no room for every component at the start deadline".len();
        assert!(
            lines[1].ends_with(&format!(" {}", "-".repeat(widest))),
            "{out}"
        );
        // Every line is as long as the header's dashes at most: nothing sticks out.
        assert!(lines.iter().all(|l| l.len() <= lines[1].len()), "{out}");
        assert!(!lines[2].contains("None"), "{out}");
        assert!(lines[3].ends_with("at the start deadline"), "{out}");
    }

    #[test]
    fn running_and_pending_values_as_sacct() {
        let z = fixed_zone(0);
        let mut r = job();
        r.state = JobState::Running;
        r.end_time = None;
        r.exit_code = None;
        let out = render(
            &[r],
            &cli(&["-P", "-n", "-o", "State,Elapsed,End,ExitCode,AllocNodes"]),
            62_000,
            &z,
        )
        .unwrap();
        assert_eq!(out, "RUNNING|00:01:00|Unknown|0:0|1\n");
        let mut p = job();
        p.state = JobState::Pending;
        p.start_time = None;
        p.end_time = None;
        p.node_list = None;
        p.reason = Some(batch_proto::PendingReason::Resources);
        p.begin = Some(5_000);
        let out = render(
            &[p],
            &cli(&[
                "-P",
                "-n",
                "-o",
                "Start,NodeList,Reason,Eligible,Planned,AllocNodes",
            ]),
            65_000,
            &z,
        )
        .unwrap();
        assert_eq!(
            out,
            "Unknown|None assigned|Resources|1970-01-01T00:00:05|00:01:00|0\n"
        );
    }

    #[test]
    fn helpformat_lists_every_field() {
        let h = help_format();
        for f in FIELDS {
            assert!(h.contains(f.name), "{h}");
        }
        assert!(h.lines().all(|l| l.split_whitespace().count() <= 4));
        // Every default column is a known field.
        assert_eq!(AcctFormat::default_format().columns.len(), 9);
    }

    #[test]
    fn brief_long_partition_accounts_and_nodes_as_sacct() {
        assert_eq!(
            cli(&["-b"]).format_text().as_deref(),
            Some("JobID,State,ExitCode")
        );
        // Every field of -l is one eacct knows.
        let long = cli(&["-l"]).format_text().unwrap_or_default();
        assert!(AcctFormat::parse(&long).is_ok());
        assert!(AcctCli::try_parse_from(["eacct", "-b", "-o", "JobID"]).is_err());
        let z = fixed_zone(0);
        let r = cli(&["-r", "debug,gpu"]).request(0, &z, None).unwrap();
        assert_eq!(r.filter.pools, vec!["debug", "gpu"]);
        let mut j = job();
        j.account = Some("proj".into());
        j.node_list = Some("debug[001-002]".into());
        let s = |a: &[&str], n: &[&str]| {
            selected(
                &j,
                &a.iter().map(|x| x.to_string()).collect::<Vec<_>>(),
                &n.iter().map(|x| x.to_string()).collect::<Vec<_>>(),
            )
        };
        assert!(s(&[], &[]) && s(&["proj"], &[]) && !s(&["other"], &[]));
        assert!(s(&[], &["debug002"]) && !s(&[], &["debug003"]));
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
