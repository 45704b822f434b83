//! esubmit's options and how they combine: command line beats environment (`ESUB_*`, like
//! sbatch's `SBATCH_*`) beats `#ESUB` directives in the script.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use batch_proto::{ClientError, JobShape, JobSpec, MoldModel, Request, Response, SubmitRequest};

use batch_proto::time::{Duration, Time, HOUR};
use clap::{Args, Parser};

use super::cli::{connect, now_ms, print_out};
use super::directives::{marked_args, MAGIC, SBATCH_MAGIC};
use super::error::SpecError;
use super::spec::{
    parse_moldable, parse_moldable_model, parse_nodes, parse_nodes_range, parse_profile,
    parse_weight,
};
use super::time::{format_timestamp, local_zone, parse_begin, parse_time_limit, TimeLimit, Zone};
use batch_proto::Dependency;

/// The options esubmit takes on its command line and in `#ESUB` lines. Values are kept as
/// text here and parsed by [`SubmitOpts::resolve`], once the three sources are merged, so an
/// error can say which source the bad value came from.
#[derive(Args, Debug, Default, Clone, PartialEq, Eq)]
pub struct SubmitOpts {
    /// Number of nodes.
    #[arg(short = 'N', long, value_name = "N")]
    pub nodes: Option<String>,
    /// Time limit: min, min:sec, h:m:s, d-h, d-h:m or d-h:m:s (default 1:00:00).
    #[arg(short = 't', long, value_name = "TIME")]
    pub time: Option<String>,
    /// Job name (default: the script's file name, or "wrap").
    #[arg(short = 'J', long = "job-name", value_name = "NAME")]
    pub job_name: Option<String>,
    /// Standard output file; %j job id, %x job name, %u user, %% a percent sign.
    #[arg(short = 'o', long, value_name = "PATTERN")]
    pub output: Option<String>,
    /// Standard error file (default: with standard output).
    #[arg(short = 'e', long, value_name = "PATTERN")]
    pub error: Option<String>,
    /// Pool to run in (Slurm's partition).
    #[arg(
        short = 'p',
        long = "pool",
        visible_alias = "partition",
        value_name = "POOL"
    )]
    pub pool: Option<String>,
    /// Earliest start: HH:MM[:SS], now+N[seconds|minutes|hours|days], YYYY-MM-DD[THH:MM[:SS]],
    /// today, tomorrow.
    #[arg(short = 'b', long, value_name = "TIME")]
    pub begin: Option<String>,
    /// Submit held: the job waits for `econtrol release`.
    #[arg(short = 'H', long)]
    pub hold: bool,
    /// afterok|afterany|afternotok|after:ID[:ID...][,...] or singleton.
    #[arg(short = 'd', long, value_name = "LIST")]
    pub dependency: Option<String>,
    /// Evolving job: steps SECONDS:NODES[,SECONDS:NODES...].
    #[arg(long, value_name = "STEPS")]
    pub profile: Option<String>,
    /// Moldable job: configurations NODES:TIME[,NODES:TIME...], TIME in -t's forms (a bare
    /// number is minutes). The policy picks one before the start.
    #[arg(long, value_name = "CONFIGS")]
    pub moldable: Option<String>,
    /// Moldable job whose run time on k nodes follows a model, for every k of --nodes-range:
    /// amdahl:WORK:SERIAL gives WORK × (SERIAL + (1 − SERIAL) / k), where WORK is the run
    /// time on one node in -t's forms (amdahl:2:00:00:0.1 is two hours) and SERIAL the serial
    /// fraction, a number in [0, 1]; linear:WORK is SERIAL = 0. Times are rounded up to the
    /// millisecond; with --moldable too, its configurations win at their node counts.
    #[arg(long, value_name = "MODEL")]
    pub moldable_model: Option<String>,
    /// The node counts --moldable-model offers: MIN-MAX (or one count).
    #[arg(long, value_name = "MIN-MAX")]
    pub nodes_range: Option<String>,
    /// Moldable job's weight in the weighted sum of completion times, a positive number
    /// (default 1; the bicriteria policy favours heavier jobs).
    #[arg(long, value_name = "W")]
    pub weight: Option<String>,
    /// Co-allocated (global) job: node counts of its components, N[,N...], placed by the
    /// policy on pools and started together; needs --deadline.
    #[arg(long, value_name = "NODES")]
    pub components: Option<String>,
    /// Start deadline of a co-allocated job: the forms of --begin, or +N[unit] from now
    /// (`+10min`); a job not started by then ends FAILED with reason Deadline.
    #[arg(long, value_name = "TIME")]
    pub deadline: Option<String>,
    /// If the policy preempts the job, requeue it (back to PENDING, same id) instead of ending
    /// it PREEMPTED.
    #[arg(long, overrides_with = "no_requeue")]
    pub requeue: bool,
    /// Never requeue the job: a preempted job ends PREEMPTED (the default).
    #[arg(long = "no-requeue", overrides_with = "requeue")]
    pub no_requeue: bool,
    /// Working directory of the job (default: the current directory).
    #[arg(short = 'D', long, value_name = "DIR")]
    pub chdir: Option<String>,
    /// Environment passed on: ALL (default), NONE, or [ALL,]VAR[=value][,...].
    #[arg(long, value_name = "LIST")]
    pub export: Option<String>,
    /// Print the expected start time and submit nothing.
    #[arg(long = "test-only")]
    pub test_only: bool,
    /// Print only the job id.
    #[arg(long)]
    pub parsable: bool,
    // Slurm's habits (issue 15), grouped so that other branches' options merge beside them.
    /// Job array: indices 0-15, 1,3,5, 0-15:4 (step), with %N at most N tasks at once.
    #[arg(short = 'a', long, value_name = "INDICES")]
    pub array: Option<String>,
    /// Tasks: the job gets the nodes N tasks need (a pool's cpus_per_node over -c).
    #[arg(short = 'n', long = "ntasks", value_name = "N")]
    pub ntasks: Option<String>,
    /// CPUs per task (default 1), counted against a pool's cpus_per_node.
    #[arg(short = 'c', long = "cpus-per-task", value_name = "N")]
    pub cpus_per_task: Option<String>,
    /// Tasks on each node.
    #[arg(long = "ntasks-per-node", value_name = "N")]
    pub ntasks_per_node: Option<String>,
    /// Memory per node (K, M, G, T; default M), checked against a pool's mem_per_node.
    #[arg(long, value_name = "SIZE")]
    pub mem: Option<String>,
    /// Memory per CPU; fewer tasks per node when a node's memory runs out first.
    #[arg(long = "mem-per-cpu", value_name = "SIZE")]
    pub mem_per_cpu: Option<String>,
    /// Nodes to itself: what every job gets here (nodes are never shared).
    #[arg(long)]
    pub exclusive: bool,
    /// Account: stored and shown, no policy uses it yet.
    #[arg(short = 'A', long, value_name = "NAME")]
    pub account: Option<String>,
    /// Quality of service: stored and shown, no policy uses it yet.
    #[arg(short = 'q', long, value_name = "NAME")]
    pub qos: Option<String>,
    /// Not supported (batchd sends no mail): refused rather than ignored.
    #[arg(long = "mail-type", value_name = "TYPE", hide = true)]
    pub mail_type: Option<String>,
    /// Not supported (batchd sends no mail): refused rather than ignored.
    #[arg(long = "mail-user", value_name = "USER", hide = true)]
    pub mail_user: Option<String>,
    // Slurm's habits, continued: signals before the limit and the output files' open mode.
    /// [{R|B}:]SIG[@SECONDS]: send SIG (a name or number) SECONDS (0-65535, default 60)
    /// before the time limit; B: the batch shell only, else the script's processes but not
    /// the batch shell. The job is still killed at its limit.
    #[arg(long, value_name = "[B:]SIG[@SECONDS]")]
    pub signal: Option<String>,
    /// append|truncate (the default): how the output files are opened.
    #[arg(long = "open-mode", value_name = "MODE")]
    pub open_mode: Option<String>,
}

/// `esubmit`'s command line.
#[derive(Parser, Debug)]
#[command(
    name = "esubmit",
    version,
    about = "Submit a batch script to batchd (like sbatch)",
    after_help = "Options may also be given as '#ESUB' lines at the top of the script and \
                  through ESUB_PARTITION, ESUB_TIMELIMIT, ESUB_JOB_NAME, ESUB_OUTPUT, \
                  ESUB_ERROR, ESUB_HOLD, ESUB_EXPORT, ESUB_SIGNAL, ESUB_OPEN_MODE, ESUB_ACCOUNT, \
                  ESUB_QOS, ESUB_ARRAY_INX, ESUB_REQUEUE, ESUB_NO_REQUEUE, ESUB_EXCLUSIVE, \
                  ESUB_WAIT; the command line beats the environment, \
                  which beats the script. Slurm's '#SBATCH' lines and SBATCH_* variables are read \
                  too; an '#ESUB' line or ESUB_* variable wins over its Slurm spelling."
)]
pub struct SubmitCli {
    /// The options.
    #[command(flatten)]
    pub opts: SubmitOpts,
    /// Wrap a command line in a /bin/sh script instead of giving SCRIPT.
    #[arg(long, value_name = "COMMAND", conflicts_with = "script")]
    pub wrap: Option<String>,
    /// The batch script and its arguments (everything after SCRIPT goes to the script).
    #[arg(
        value_name = "SCRIPT [ARGS]",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub script: Vec<String>,
    /// Wait for the job (every task of an array) to end, and exit with its exit code (the
    /// highest of an array's; 1 for a job cancelled, killed or timed out without one).
    #[arg(short = 'W', long)]
    pub wait: bool,
    /// Daemon socket (default: $ESCHED_SOCKET, else the standard place).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

/// How often `esubmit -W` asks whether its job has ended.
const WAIT_POLL: std::time::Duration = std::time::Duration::from_millis(500);

/// `esubmit -W`: polls until the job `id` (every task of the array `id`) has ended, and gives
/// sbatch's exit status: the job's exit code (the highest of the tasks'), 1 for one that ended
/// without one (cancelled before it ran, killed by a signal) or whose code is above 255.
fn wait_for(client: &mut batch_proto::Client, id: u64) -> anyhow::Result<ExitCode> {
    let req = Request::List(batch_proto::ListRequest {
        filter: batch_proto::JobFilter {
            ids: vec![id],
            ..Default::default()
        },
        include_finished: true,
        brief: true,
    });
    loop {
        let jobs = client.jobs(&req)?;
        if !jobs.is_empty() && jobs.iter().all(|j| j.state.is_finished()) {
            let code = jobs
                .iter()
                .map(|j| match (j.exit_code, j.signal.unwrap_or(0)) {
                    (Some(c), 0) => c,
                    _ => 1,
                })
                .max()
                .unwrap_or(1);
            return Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)));
        }
        std::thread::sleep(WAIT_POLL);
    }
}

/// The options of `#ESUB` lines, parsed with the same rules as the command line.
#[derive(Parser, Debug)]
#[command(
    name = "#ESUB",
    no_binary_name = true,
    disable_help_flag = true,
    disable_version_flag = true
)]
struct DirectiveCli {
    #[command(flatten)]
    opts: SubmitOpts,
}

/// Where a value came from, for error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    CommandLine,
    Env(&'static str),
    Script,
}

/// The Slurm spelling of each of [`ENV_VARS`] (`ESUB_X` is `SBATCH_X`, read when `ESUB_X` is
/// not set, so an environment set up for sbatch keeps working).
const SBATCH_ENV_VARS: [&str; 15] = [
    "SBATCH_PARTITION",
    "SBATCH_TIMELIMIT",
    "SBATCH_JOB_NAME",
    "SBATCH_OUTPUT",
    "SBATCH_ERROR",
    "SBATCH_HOLD",
    "SBATCH_EXPORT",
    "SBATCH_SIGNAL",
    "SBATCH_OPEN_MODE",
    "SBATCH_ACCOUNT",
    "SBATCH_QOS",
    "SBATCH_ARRAY_INX",
    "SBATCH_REQUEUE",
    "SBATCH_NO_REQUEUE",
    "SBATCH_EXCLUSIVE",
];

/// The environment variables esubmit reads, and the option each sets.
pub const ENV_VARS: [&str; 15] = [
    "ESUB_PARTITION",
    "ESUB_TIMELIMIT",
    "ESUB_JOB_NAME",
    "ESUB_OUTPUT",
    "ESUB_ERROR",
    "ESUB_HOLD",
    "ESUB_EXPORT",
    "ESUB_SIGNAL",
    "ESUB_OPEN_MODE",
    "ESUB_ACCOUNT",
    "ESUB_QOS",
    "ESUB_ARRAY_INX",
    "ESUB_REQUEUE",
    "ESUB_NO_REQUEUE",
    "ESUB_EXCLUSIVE",
];

/// A resolved submission: the job as batchd receives it (batch-proto's [`JobSpec`], the one
/// representation of a submission), and what esubmit itself does with the answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Submission {
    /// The job.
    pub job: JobSpec,
    /// Only ask for the expected start.
    pub test_only: bool,
    /// Print only the id.
    pub parsable: bool,
}

impl Submission {
    /// Checks the job with batch-proto's own bounds, as batchd will check it (`now` for
    /// `--begin`'s horizon; the pool's `max_time` is the daemon's to check).
    pub fn check(&self, now: Time) -> Result<(), SpecError> {
        self.job
            .check(now, None)
            .map_err(|e| SpecError::Proto(e.to_string()))
    }
}

fn sourced(origin: Origin, e: SpecError) -> SpecError {
    match origin {
        Origin::CommandLine => e,
        Origin::Env(v) => SpecError::Sourced {
            origin: v.to_string(),
            inner: Box::new(e),
        },
        Origin::Script => SpecError::Sourced {
            origin: "#ESUB/#SBATCH directive".into(),
            inner: Box::new(e),
        },
    }
}

/// The text of the script `--wrap` makes, as sbatch makes one.
pub fn wrap_script(command: &str) -> String {
    format!("#!/bin/sh\n# This script was generated by esubmit --wrap.\n{command}\n")
}

/// Parses the directive lines of `script` as options: `#ESUB` lines, and `#SBATCH` lines for
/// the options no `#ESUB` line gives (an `#ESUB` line wins for the same option).
pub fn script_opts(script: &str) -> Result<SubmitOpts, SpecError> {
    let esub = marked_opts(script, MAGIC)?;
    let sbatch = marked_opts(script, SBATCH_MAGIC)?;
    Ok(esub.or(sbatch))
}

fn marked_opts(script: &str, magic: &'static str) -> Result<SubmitOpts, SpecError> {
    let words = marked_args(script, magic)?;
    DirectiveCli::try_parse_from(&words)
        .map(|c| c.opts)
        .map_err(|e| SpecError::Invalid {
            what: if magic == MAGIC {
                "#ESUB directive"
            } else {
                "#SBATCH directive"
            },
            input: words.join(" "),
            reason: super::cli::clap_error_line(&e),
        })
}

/// The inputs [`SubmitOpts::resolve`] needs besides the options.
pub struct Context<'a> {
    /// The environment of esubmit (also the source of `ESUB_*`).
    pub env: &'a [(String, String)],
    /// The current directory, absolute.
    pub cwd: &'a Path,
    /// Now, for `--begin`.
    pub now: Time,
    /// Time zone, for `--begin`.
    pub zone: &'a Zone,
}

impl SubmitOpts {
    /// The options given twice over, each field from `self` unless only `other` has it.
    /// Every option of [`SubmitOpts`] is named here: a new one must say how it merges.
    #[must_use]
    pub fn or(self, other: SubmitOpts) -> SubmitOpts {
        let SubmitOpts {
            nodes,
            time,
            job_name,
            output,
            error,
            pool,
            begin,
            hold,
            dependency,
            profile,
            moldable,
            moldable_model,
            nodes_range,
            weight,
            components,
            deadline,
            requeue,
            no_requeue,
            chdir,
            export,
            test_only,
            parsable,
            array,
            ntasks,
            cpus_per_task,
            ntasks_per_node,
            mem,
            mem_per_cpu,
            exclusive,
            account,
            qos,
            mail_type,
            mail_user,
            signal,
            open_mode,
        } = self;
        SubmitOpts {
            nodes: nodes.or(other.nodes),
            time: time.or(other.time),
            job_name: job_name.or(other.job_name),
            output: output.or(other.output),
            error: error.or(other.error),
            pool: pool.or(other.pool),
            begin: begin.or(other.begin),
            hold: hold || other.hold,
            dependency: dependency.or(other.dependency),
            profile: profile.or(other.profile),
            moldable: moldable.or(other.moldable),
            moldable_model: moldable_model.or(other.moldable_model),
            nodes_range: nodes_range.or(other.nodes_range),
            weight: weight.or(other.weight),
            components: components.or(other.components),
            deadline: deadline.or(other.deadline),
            // One choice, whichever of the pair says it: the first source that says either.
            requeue: if requeue || no_requeue {
                requeue
            } else {
                other.requeue
            },
            no_requeue: if requeue || no_requeue {
                no_requeue
            } else {
                other.no_requeue
            },
            chdir: chdir.or(other.chdir),
            export: export.or(other.export),
            test_only: test_only || other.test_only,
            parsable: parsable || other.parsable,
            array: array.or(other.array),
            ntasks: ntasks.or(other.ntasks),
            cpus_per_task: cpus_per_task.or(other.cpus_per_task),
            ntasks_per_node: ntasks_per_node.or(other.ntasks_per_node),
            mem: mem.or(other.mem),
            mem_per_cpu: mem_per_cpu.or(other.mem_per_cpu),
            exclusive: exclusive || other.exclusive,
            account: account.or(other.account),
            qos: qos.or(other.qos),
            mail_type: mail_type.or(other.mail_type),
            mail_user: mail_user.or(other.mail_user),
            signal: signal.or(other.signal),
            open_mode: open_mode.or(other.open_mode),
        }
    }

    /// The variables of [`ENV_VARS`] that are set, each under its `ESUB_` name; an unset
    /// `ESUB_X` is taken from `SBATCH_X` (the error then names `SBATCH_X`).
    fn from_env(env: &[(String, String)]) -> Vec<(&'static str, &'static str, String)> {
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        ENV_VARS
            .iter()
            .zip(SBATCH_ENV_VARS.iter())
            .filter_map(|(e, s)| {
                get(e)
                    .map(|v| (*e, *e, v))
                    .or_else(|| get(s).map(|v| (*e, *s, v)))
            })
            .collect()
    }

    /// Merges command line, environment and script options and parses every value.
    /// `script_name` names the job when nothing else does.
    pub fn resolve(
        &self,
        script_opts: &SubmitOpts,
        script: String,
        args: Vec<String>,
        script_name: &str,
        ctx: &Context<'_>,
    ) -> Result<Submission, SpecError> {
        let env = Self::from_env(ctx.env);
        let env_val = |k: &'static str| {
            env.iter()
                .find(|(n, _, _)| *n == k)
                .map(|(_, from, v)| (*from, v.clone()))
        };
        let pick = |cli: &Option<String>, var: Option<&'static str>, scr: &Option<String>| {
            if let Some(v) = cli {
                return Some((v.clone(), Origin::CommandLine));
            }
            if let Some(k) = var {
                if let Some((from, v)) = env_val(k) {
                    return Some((v, Origin::Env(from)));
                }
            }
            scr.clone().map(|v| (v, Origin::Script))
        };
        let s = script_opts;
        let nodes = pick(&self.nodes, None, &s.nodes)
            .map(|(v, o)| parse_nodes(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let time_limit = pick(&self.time, Some("ESUB_TIMELIMIT"), &s.time)
            .map(|(v, o)| parse_time_limit(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let name = pick(&self.job_name, Some("ESUB_JOB_NAME"), &s.job_name)
            .map(|(v, _)| v)
            .unwrap_or_else(|| script_name.to_string());
        let output = pick(&self.output, Some("ESUB_OUTPUT"), &s.output).map(|(v, _)| v);
        let error = pick(&self.error, Some("ESUB_ERROR"), &s.error).map(|(v, _)| v);
        let pool = pick(&self.pool, Some("ESUB_PARTITION"), &s.pool).map(|(v, _)| v);
        let begin = pick(&self.begin, None, &s.begin)
            .map(|(v, o)| parse_begin(&v, ctx.now, ctx.zone).map_err(|e| sourced(o, e)))
            .transpose()?;
        let hold = self.hold || env_val("ESUB_HOLD").is_some() || s.hold;
        let dependency = pick(&self.dependency, None, &s.dependency)
            .map(|(v, o)| {
                Dependency::parse_list(&v).map_err(|e| sourced(o, SpecError::Proto(e.to_string())))
            })
            .transpose()?
            .unwrap_or_default();
        let profile = pick(&self.profile, None, &s.profile)
            .map(|(v, o)| parse_profile(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let moldable = pick(&self.moldable, None, &s.moldable)
            .map(|(v, o)| parse_moldable(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let model = pick(&self.moldable_model, None, &s.moldable_model)
            .map(|(v, o)| parse_moldable_model(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let range = pick(&self.nodes_range, None, &s.nodes_range)
            .map(|(v, o)| parse_nodes_range(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let weight = pick(&self.weight, None, &s.weight)
            .map(|(v, o)| parse_weight(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let components = pick(&self.components, None, &s.components)
            .map(|(v, o)| parse_components(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let deadline = pick(&self.deadline, None, &s.deadline)
            .map(|(v, o)| parse_deadline(&v, ctx.now, ctx.zone).map_err(|e| sourced(o, e)))
            .transpose()?;
        // The command line's choice wins over the environment's, which wins over the
        // script's, either way: `Some(true)` requeue, `Some(false)` an explicit --no-requeue.
        let requeue_choice = if self.requeue || self.no_requeue {
            Some(self.requeue)
        } else if env_val("ESUB_REQUEUE").is_some() {
            Some(true)
        } else if env_val("ESUB_NO_REQUEUE").is_some() {
            Some(false)
        } else if s.requeue || s.no_requeue {
            Some(s.requeue)
        } else {
            None
        };
        let requeue = requeue_choice == Some(true);
        let no_requeue = requeue_choice == Some(false);
        let warn_signal = pick(&self.signal, Some("ESUB_SIGNAL"), &s.signal)
            .map(|(v, o)| {
                batch_proto::signal::JobSignal::parse(&v).map_err(|reason| {
                    sourced(
                        o,
                        SpecError::Invalid {
                            what: "--signal",
                            input: v.clone(),
                            reason,
                        },
                    )
                })
            })
            .transpose()?;
        let open_append = match pick(&self.open_mode, Some("ESUB_OPEN_MODE"), &s.open_mode) {
            None => false,
            Some((v, o)) => match v.trim().to_ascii_lowercase().as_str() {
                // sbatch takes any prefix of either word ("a", "t", "app").
                m if !m.is_empty() && "append".starts_with(m) => true,
                m if !m.is_empty() && "truncate".starts_with(m) => false,
                _ => {
                    return Err(sourced(
                        o,
                        SpecError::Invalid {
                            what: "--open-mode",
                            input: v.clone(),
                            reason: "expected append or truncate".into(),
                        },
                    ))
                }
            },
        };
        let array = pick(&self.array, Some("ESUB_ARRAY_INX"), &s.array)
            .map(|(v, o)| {
                batch_proto::ArraySpec::parse(&v).map_err(|reason| {
                    sourced(
                        o,
                        SpecError::Invalid {
                            what: "array",
                            input: v.clone(),
                            reason,
                        },
                    )
                })
            })
            .transpose()?;
        for (opt, v) in [
            ("--mail-type", pick(&self.mail_type, None, &s.mail_type)),
            ("--mail-user", pick(&self.mail_user, None, &s.mail_user)),
        ] {
            if let Some((v, o)) = v {
                return Err(sourced(
                    o,
                    SpecError::Invalid {
                        what: opt,
                        input: v,
                        reason: "not supported: batchd sends no mail".into(),
                    },
                ));
            }
        }
        let count = |what: &'static str, v: &Option<String>, scr: &Option<String>| {
            pick(v, None, scr)
                .map(|(v, o)| {
                    v.trim()
                        .parse::<u32>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| {
                            sourced(
                                o,
                                SpecError::Invalid {
                                    what,
                                    input: v.clone(),
                                    reason: "expected a positive number".into(),
                                },
                            )
                        })
                })
                .transpose()
        };
        let size = |what: &'static str, v: &Option<String>, scr: &Option<String>| {
            pick(v, None, scr)
                .map(|(v, o)| {
                    batch_proto::resources::parse_mem(&v).map_err(|reason| {
                        sourced(
                            o,
                            SpecError::Invalid {
                                what,
                                input: v.clone(),
                                reason,
                            },
                        )
                    })
                })
                .transpose()
        };
        let resources = batch_proto::resources::Resources {
            nodes,
            ntasks: count("task count", &self.ntasks, &s.ntasks)?,
            cpus_per_task: count("CPUs per task", &self.cpus_per_task, &s.cpus_per_task)?,
            ntasks_per_node: count("tasks per node", &self.ntasks_per_node, &s.ntasks_per_node)?,
            mem_per_node: size("memory size", &self.mem, &s.mem)?,
            mem_per_cpu: size("memory size", &self.mem_per_cpu, &s.mem_per_cpu)?,
            exclusive: self.exclusive || env_val("ESUB_EXCLUSIVE").is_some() || s.exclusive,
        };
        let account = pick(&self.account, Some("ESUB_ACCOUNT"), &s.account).map(|(v, _)| v);
        let qos = pick(&self.qos, Some("ESUB_QOS"), &s.qos).map(|(v, _)| v);
        let conflict = |reason: &str| SpecError::Conflict(reason.to_string());
        let moldable_model =
            match (model, range) {
                (Some(model), Some((min_nodes, max_nodes))) => Some(MoldModel {
                    model,
                    min_nodes,
                    max_nodes,
                }),
                (Some(_), None) => {
                    return Err(conflict(
                        "--moldable-model needs --nodes-range MIN-MAX (the node counts it offers)",
                    ))
                }
                (None, Some(_)) => return Err(conflict(
                    "--nodes-range goes with --moldable-model (use --moldable for explicit sizes)",
                )),
                (None, None) => None,
            };
        let is_moldable = moldable.is_some() || moldable_model.is_some();
        if weight.is_some() && !is_moldable {
            return Err(conflict(
                "--weight applies to moldable jobs (--moldable or --moldable-model)",
            ));
        }
        if profile.is_some() && is_moldable {
            return Err(conflict(
                "--profile and --moldable/--moldable-model exclude each other",
            ));
        }
        if (profile.is_some() || is_moldable) && (nodes.is_some() || time_limit.is_some()) {
            return Err(conflict(
                "--profile/--moldable/--moldable-model give the nodes and times; drop -N/--nodes and -t/--time",
            ));
        }
        if components.is_some()
            && (profile.is_some() || is_moldable || nodes.is_some() || pool.is_some())
        {
            return Err(conflict(
                "--components gives the nodes and lets the policy choose the pools; drop -N, -p, --profile and --moldable",
            ));
        }
        if components.is_some() != deadline.is_some() {
            return Err(conflict(
                "--components and --deadline go together (a co-allocated job has a start deadline)",
            ));
        }
        let workdir = match pick(&self.chdir, None, &s.chdir) {
            Some((d, _)) => ctx.cwd.join(d),
            None => ctx.cwd.to_path_buf(),
        };
        let export = pick(&self.export, Some("ESUB_EXPORT"), &s.export);
        let env = match export {
            Some((v, o)) => apply_export(&v, ctx.env).map_err(|e| sourced(o, e))?,
            None => ctx.env.to_vec(),
        };
        if !script.starts_with("#!") {
            return Err(SpecError::Invalid {
                what: "batch script",
                input: script_name.to_string(),
                reason: "the first line must start with #! followed by an interpreter".into(),
            });
        }
        let time_limit = match time_limit {
            None => DEFAULT_TIME_LIMIT,
            Some(TimeLimit::Limited(d)) => d,
            // batchd gives the job its pool's max_time (365 days for a pool without one).
            Some(TimeLimit::Unlimited) => batch_proto::TIME_UNLIMITED,
        };
        let shape = if let Some(components) = components {
            if time_limit == batch_proto::TIME_UNLIMITED {
                return Err(SpecError::Conflict(
                    "a co-allocated job needs a finite time limit (-t)".into(),
                ));
            }
            JobShape::CoAllocated {
                components,
                time_limit,
            }
        } else if let Some(steps) = profile {
            JobShape::Evolving { steps }
        } else if is_moldable {
            JobShape::Moldable {
                configs: moldable.unwrap_or_default(),
                model: moldable_model,
                weight,
            }
        } else {
            JobShape::Rigid {
                nodes: nodes.unwrap_or(1),
                time_limit,
            }
        };
        let work_dir = workdir
            .to_str()
            .ok_or_else(|| SpecError::Invalid {
                what: "working directory",
                input: workdir.display().to_string(),
                reason: "not valid UTF-8".into(),
            })?
            .to_string();
        let job = JobSpec {
            script,
            args,
            name,
            shape,
            pool,
            begin,
            hold,
            dependencies: dependency,
            stdout: output,
            stderr: error,
            environment: env,
            work_dir,
            priority: 0,
            umask: None,
            array: array.map(Box::new),
            array_task: None,
            resources: (!resources.is_empty()).then(|| Box::new(resources)),
            account,
            qos,
            deadline,
            requeue,
            warn_signal,
            open_append,
            no_requeue,
            requeue_by_hand: None,
            preempted: None,
        };
        Ok(Submission {
            job,
            test_only: self.test_only || s.test_only,
            parsable: self.parsable || s.parsable,
        })
    }
}

/// The reason of an inner parser's error, without its own `invalid … '…'` prefix.
fn reason_of(e: SpecError) -> String {
    match e {
        SpecError::Invalid { reason, .. } => reason,
        other => other.to_string(),
    }
}

/// Parses `--components`: node counts `N[,N...]` (each as `-N` takes it).
pub fn parse_components(input: &str) -> Result<Vec<u32>, SpecError> {
    let out = input
        .split(',')
        .map(|n| parse_nodes(n.trim()))
        .collect::<Result<Vec<u32>, _>>()
        .map_err(|e| SpecError::Invalid {
            what: "components",
            input: input.to_string(),
            reason: reason_of(e),
        })?;
    if out.len() > batch_proto::MAX_COMPONENTS {
        return Err(SpecError::Invalid {
            what: "components",
            input: input.to_string(),
            reason: format!("at most {} components", batch_proto::MAX_COMPONENTS),
        });
    }
    Ok(out)
}

/// Parses `--deadline`: every form of `--begin` ([`parse_begin`]: `HH:MM[:SS]`, `now+N<unit>`,
/// ISO dates, …), and `+N<unit>` for `now+N<unit>` (Slurm's `--deadline` takes the forms of
/// `--begin`; the short one is ours). It must be in the future.
pub fn parse_deadline(input: &str, now: Time, zone: &Zone) -> Result<Time, SpecError> {
    let s = input.trim();
    // `+N` is an offset from now to the millisecond (deadlines of a second or two must not
    // lose the part of a second `now` has, as `now+N` of --begin does).
    let t = match s.strip_prefix('+') {
        Some(rest) => parse_begin(&format!("now+{rest}"), now, zone)
            .and_then(|t| Ok(now + t.saturating_sub(parse_begin("now", now, zone)?))),
        None => parse_begin(s, now, zone),
    }
    .map_err(|e| SpecError::Invalid {
        what: "deadline",
        input: input.to_string(),
        reason: reason_of(e),
    })?;
    if t <= now {
        return Err(SpecError::Invalid {
            what: "deadline",
            input: input.to_string(),
            reason: "it has already passed".into(),
        });
    }
    Ok(t)
}

/// Applies `--export`: `ALL` (everything), `NONE` (nothing), or a list of names (taken from
/// `env`) and `NAME=value` pairs, with everything else too when the list contains `ALL`.
pub fn apply_export(
    spec: &str,
    env: &[(String, String)],
) -> Result<Vec<(String, String)>, SpecError> {
    let mut all = false;
    let mut out: Vec<(String, String)> = Vec::new();
    for item in spec.split(',').map(str::trim) {
        if item.eq_ignore_ascii_case("all") {
            all = true;
        } else if item.eq_ignore_ascii_case("none") {
            continue;
        } else if let Some((k, v)) = item.split_once('=') {
            if k.is_empty() {
                return Err(SpecError::Invalid {
                    what: "export list",
                    input: spec.to_string(),
                    reason: format!("'{item}' has no variable name"),
                });
            }
            out.push((k.to_string(), v.to_string()));
        } else if item.is_empty() {
            return Err(SpecError::Invalid {
                what: "export list",
                input: spec.to_string(),
                reason: "empty item".into(),
            });
        } else if let Some(kv) = env.iter().find(|(k, _)| k == item) {
            out.push(kv.clone());
        }
    }
    if all {
        let mut full: Vec<(String, String)> = env
            .iter()
            .filter(|(k, _)| !out.iter().any(|(o, _)| o == k))
            .cloned()
            .collect();
        full.extend(out);
        return Ok(full);
    }
    Ok(out)
}

/// Time limit of a job submitted without `-t`. Slurm takes the partition's DefaultTime; batchd
/// pools have none, and a finite limit is what lets backfilling work, so the tools pick one.
pub const DEFAULT_TIME_LIMIT: Duration = HOUR;

/// Reads a batch script from `r` (`what` names it in errors): at most
/// [`batch_proto::job::MAX_SCRIPT`] bytes, of text.
pub fn read_script(r: impl Read, what: &str) -> anyhow::Result<String> {
    let max = batch_proto::job::MAX_SCRIPT;
    let mut bytes = Vec::new();
    r.take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {what}"))?;
    if bytes.len() > max {
        anyhow::bail!("{what} is larger than the limit of {max} bytes for a batch script");
    }
    // A NUL byte or invalid UTF-8: an executable or an archive given by mistake.
    match String::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => Ok(text),
        _ => anyhow::bail!("{what} is a binary file, not a batch script (a script is text)"),
    }
}

/// This process's umask, sent with the job so that its output files get it, as with sbatch.
fn current_umask() -> u32 {
    use nix::sys::stat::{umask, Mode};
    // Reading the umask means setting it; put it back at once (the tool has one thread).
    let old = umask(Mode::from_bits_truncate(0o077));
    umask(old);
    old.bits() & 0o777
}

/// esubmit: read the script, merge the options, submit, print the id.
pub fn run(cli: SubmitCli) -> anyhow::Result<ExitCode> {
    let (script, args, script_name) = match (&cli.wrap, cli.script.split_first()) {
        (Some(cmd), _) => (wrap_script(cmd), Vec::new(), "wrap".to_string()),
        (None, Some((path, rest))) => {
            // The first word that is not an option is the script: a word that still looks like
            // one is an option esubmit does not know, not a file name.
            if path.starts_with('-') && path != "-" {
                anyhow::bail!("unrecognized option '{path}'");
            }
            let file =
                std::fs::File::open(path).with_context(|| format!("Unable to open file {path}"))?;
            let text = read_script(file, path)?;
            let name = Path::new(path)
                .file_name()
                .map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned());
            (text, rest.to_vec(), name)
        }
        (None, None) => (
            read_script(std::io::stdin(), "the script on stdin")?,
            Vec::new(),
            "stdin".to_string(),
        ),
    };
    // Variables that are not UTF-8 cannot cross the JSON protocol; they are left out.
    let env: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let cwd = std::env::current_dir().context("cannot determine the current directory")?;
    let zone = local_zone();
    let ctx = Context {
        env: &env,
        cwd: &cwd,
        now: now_ms(),
        zone: &zone,
    };
    let from_script = script_opts(&script)?;
    let spec = cli
        .opts
        .resolve(&from_script, script, args, &script_name, &ctx)?;
    spec.check(ctx.now)?;
    let mut job = spec.job;
    job.umask = Some(current_umask());
    let mut client = connect(cli.socket.as_deref())?;
    let req = Request::Submit(SubmitRequest {
        spec: job,
        test_only: spec.test_only,
    });
    match client.request(&req)? {
        Response::Submitted { id } => {
            if spec.parsable {
                print_out(&format!("{id}\n"))?;
            } else {
                print_out(&format!("Submitted batch job {id}\n"))?;
            }
            // SBATCH_WAIT: any value, as sbatch reads it.
            let wait_env = ["ESUB_WAIT", "SBATCH_WAIT"]
                .iter()
                .any(|w| env.iter().any(|(k, _)| k == w));
            if cli.wait || wait_env {
                return wait_for(&mut client, id);
            }
        }
        Response::TestOnly(r) => {
            let line = match (r.expected_start, r.pool, r.nodes) {
                (Some(t), pool, nodes) => format!(
                    "esubmit: Job would start at {} using {} nodes in pool {}",
                    format_timestamp(t, &local_zone()),
                    nodes.map_or_else(|| "?".to_string(), |n| n.to_string()),
                    pool.unwrap_or_else(|| "?".to_string()),
                ),
                (None, _, _) => {
                    "esubmit: Job would not be placed by the current plan (it waits for a \
                     dependency, a begin time or nodes that do not exist)"
                        .to_string()
                }
            };
            eprintln!("{line}");
        }
        other => return Err(ClientError::unexpected("submit", &other).into()),
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::super::time::fixed_zone;
    use super::*;
    use batch_proto::time::{MINUTE, SECOND};
    use batch_proto::{MoldConfig, Step};

    const SCRIPT: &str =
        "#!/bin/sh\n#ESUB -N 2\n#ESUB -t 10 -J fromscript -p batch\n#ESUB -o out.txt\necho hi\n";

    fn cli(args: &[&str]) -> SubmitCli {
        SubmitCli::try_parse_from(std::iter::once("esubmit").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn scripts_are_read_as_text_within_the_limit() {
        assert_eq!(
            read_script(&b"#!/bin/sh\ntrue\n"[..], "s").unwrap(),
            "#!/bin/sh\ntrue\n"
        );
        let e = read_script(&b"\x7fELF\x02\x01\x01\0\0"[..], "a.out").unwrap_err();
        assert_eq!(
            e.to_string(),
            "a.out is a binary file, not a batch script (a script is text)"
        );
        let e = read_script(&b"#!/bin/sh\n\xff\xfe\n"[..], "x").unwrap_err();
        assert!(e.to_string().contains("binary"), "{e}");
        let max = batch_proto::job::MAX_SCRIPT;
        // The limit is on the script's bytes: quotes (doubled by JSON) count once.
        let quotes = "\"".repeat(max);
        assert_eq!(read_script(quotes.as_bytes(), "q").unwrap().len(), max);
        let e = read_script("x".repeat(max + 1).as_bytes(), "big").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("big is larger than the limit of {max} bytes for a batch script")
        );
    }

    /// The rigid time limit of `j`.
    fn limit(j: &JobSpec) -> Duration {
        match j.shape {
            JobShape::Rigid { time_limit, .. } => time_limit,
            _ => panic!("not rigid: {:?}", j.shape),
        }
    }

    /// `s` as esubmit sends it: checked with batch-proto's bounds.
    fn wire(s: &JobSpec) -> Result<JobSpec, SpecError> {
        let sub = Submission {
            job: s.clone(),
            test_only: false,
            parsable: false,
        };
        sub.check(1_000_000).map(|()| sub.job)
    }

    fn resolve(c: &SubmitCli, script: &str, env: &[(&str, &str)]) -> Result<JobSpec, SpecError> {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let ctx = Context {
            env: &env,
            cwd: Path::new("/home/u"),
            now: 1_000_000,
            zone: &fixed_zone(0),
        };
        let so = script_opts(script)?;
        c.opts
            .resolve(&so, script.to_string(), vec![], "job.sh", &ctx)
            .map(|s| s.job)
    }

    #[test]
    fn script_args_go_to_the_script() {
        let c = cli(&["-N", "3", "job.sh", "-N", "5", "--x"]);
        assert_eq!(c.opts.nodes.as_deref(), Some("3"));
        assert_eq!(c.script, vec!["job.sh", "-N", "5", "--x"]);
        let w = cli(&["--wrap", "echo hi", "--partition", "p"]);
        assert_eq!(w.wrap.as_deref(), Some("echo hi"));
        assert_eq!(w.opts.pool.as_deref(), Some("p"));
        assert!(w.script.is_empty());
    }

    #[test]
    fn script_alone_sets_options() {
        let s = resolve(&cli(&["job.sh"]), SCRIPT, &[]).unwrap();
        assert_eq!(s.shape.max_nodes(), 2);
        assert_eq!(limit(&s), 10 * MINUTE);
        assert_eq!(s.name, "fromscript");
        assert_eq!(s.pool.as_deref(), Some("batch"));
        assert_eq!(s.stdout.as_deref(), Some("out.txt"));
        assert_eq!(s.work_dir, "/home/u");
    }

    #[test]
    fn command_line_beats_env_beats_script() {
        let env = [
            ("ESUB_PARTITION", "envpool"),
            ("ESUB_TIMELIMIT", "0:30"),
            ("ESUB_JOB_NAME", "envname"),
        ];
        let s = resolve(&cli(&["-J", "cliname", "job.sh"]), SCRIPT, &env).unwrap();
        assert_eq!(s.name, "cliname");
        assert_eq!(s.pool.as_deref(), Some("envpool"));
        assert_eq!(limit(&s), 30 * SECOND);
        assert_eq!(s.shape.max_nodes(), 2);
        let s = resolve(
            &cli(&["-p", "clipool", "-t", "1:00:00", "job.sh"]),
            SCRIPT,
            &env,
        )
        .unwrap();
        assert_eq!(s.pool.as_deref(), Some("clipool"));
        assert_eq!(limit(&s), 3600 * SECOND);
    }

    #[test]
    fn errors_say_where_the_value_came_from() {
        let e = resolve(&cli(&["job.sh"]), SCRIPT, &[("ESUB_TIMELIMIT", "soon")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid time limit 'soon': 'soon' is not a number (from ESUB_TIMELIMIT)"
        );
        let e = resolve(&cli(&["job.sh"]), "#!/bin/sh\n#ESUB -N zero\n", &[]).unwrap_err();
        assert!(
            e.to_string().ends_with("(from #ESUB/#SBATCH directive)"),
            "{e}"
        );
        let e = resolve(&cli(&["job.sh"]), "#!/bin/sh\n#ESUB --bogus\n", &[]).unwrap_err();
        assert!(e.to_string().contains("--bogus"), "{e}");
        let e = resolve(&cli(&["job.sh"]), "echo no shebang\n", &[]).unwrap_err();
        assert!(e.to_string().contains("#!"), "{e}");
        let e = resolve(
            &cli(&["--profile", "60:2,60:4", "-t", "5", "job.sh"]),
            "#!/bin/sh\n",
            &[],
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "conflicting options: --profile/--moldable/--moldable-model give the nodes and times; drop -N/--nodes and -t/--time"
        );
    }

    #[test]
    fn sbatch_lines_and_variables_are_read_and_esub_wins() {
        let script = "#!/bin/sh\n#SBATCH -J x -N 2 -t 5\n#SBATCH -o out-%j.txt\n#ESUB -N 3\n";
        let s = resolve(&cli(&["job.sh"]), script, &[]).unwrap();
        assert_eq!((s.name.as_str(), s.shape.max_nodes()), ("x", 3));
        assert_eq!(limit(&s), 5 * MINUTE);
        assert_eq!(s.stdout.as_deref(), Some("out-%j.txt"));
        let env = [("SBATCH_PARTITION", "sp"), ("SBATCH_TIMELIMIT", "7")];
        let s = resolve(&cli(&["job.sh"]), "#!/bin/sh\n", &env).unwrap();
        assert_eq!(s.pool.as_deref(), Some("sp"));
        assert_eq!(limit(&s), 7 * MINUTE);
        let env = [("SBATCH_PARTITION", "sp"), ("ESUB_PARTITION", "ep")];
        let s = resolve(&cli(&["job.sh"]), "#!/bin/sh\n", &env).unwrap();
        assert_eq!(s.pool.as_deref(), Some("ep"));
        let e = resolve(
            &cli(&["job.sh"]),
            "#!/bin/sh\n",
            &[("SBATCH_TIMELIMIT", "x")],
        )
        .unwrap_err();
        assert!(e.to_string().ends_with("(from SBATCH_TIMELIMIT)"), "{e}");
        let e = resolve(&cli(&["job.sh"]), "#!/bin/sh\n#SBATCH --bogus\n", &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid #SBATCH directive '--bogus': unrecognized option '--bogus'"
        );
    }

    #[test]
    fn resources_account_and_mail() {
        let s = resolve(
            &cli(&[
                "-n",
                "8",
                "-c",
                "2",
                "--mem=4G",
                "--exclusive",
                "-A",
                "proj",
                "job.sh",
            ]),
            "#!/bin/sh\n#SBATCH -q high -N 2\n",
            &[],
        )
        .unwrap();
        let r = s.resources.clone().unwrap();
        assert_eq!(
            (
                r.nodes,
                r.ntasks,
                r.cpus_per_task,
                r.mem_per_node,
                r.exclusive
            ),
            (Some(2), Some(8), Some(2), Some(4096), true)
        );
        assert_eq!(
            (s.account.as_deref(), s.qos.as_deref()),
            (Some("proj"), Some("high"))
        );
        // --exclusive alone asks nothing of batchd.
        let s = resolve(&cli(&["--exclusive", "job.sh"]), "#!/bin/sh\n", &[]).unwrap();
        assert!(s.resources.is_none());
        let e = resolve(&cli(&["--mail-type=END", "job.sh"]), "#!/bin/sh\n", &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid --mail-type 'END': not supported: batchd sends no mail"
        );
        let e = resolve(
            &cli(&["job.sh"]),
            "#!/bin/sh\n#SBATCH --mail-user=me\n",
            &[],
        )
        .unwrap_err();
        assert!(
            e.to_string().ends_with("(from #ESUB/#SBATCH directive)"),
            "{e}"
        );
        assert!(resolve(&cli(&["-n", "0", "job.sh"]), "#!/bin/sh\n", &[]).is_err());
        assert!(resolve(&cli(&["--mem", "4X", "job.sh"]), "#!/bin/sh\n", &[]).is_err());
    }

    #[test]
    fn signal_open_mode_and_requeue_choices_from_every_source() {
        let s = resolve(
            &cli(&["--signal=B:USR1@90", "--open-mode=append", "job.sh"]),
            "#!/bin/sh\n",
            &[],
        )
        .unwrap();
        let w = s.warn_signal.unwrap();
        assert_eq!((w.signal, w.before, w.batch_only), (10, 90, true));
        assert!(s.open_append && !s.requeue && !s.no_requeue);
        let script = "#!/bin/sh\n#SBATCH --signal=TERM --open-mode=a --no-requeue\n";
        let s = resolve(&cli(&["job.sh"]), script, &[]).unwrap();
        assert_eq!(s.warn_signal.map(|w| (w.signal, w.before)), Some((15, 60)));
        assert!(s.open_append && s.no_requeue && !s.requeue);
        // The environment beats the script, the command line the environment.
        let env = [
            ("SBATCH_SIGNAL", "USR2@5"),
            ("SBATCH_OPEN_MODE", "truncate"),
            ("SBATCH_REQUEUE", "1"),
            ("SBATCH_ACCOUNT", "proj"),
            ("SBATCH_QOS", "low"),
            ("SBATCH_ARRAY_INX", "1-3"),
        ];
        let s = resolve(&cli(&["job.sh"]), script, &env).unwrap();
        assert_eq!(s.warn_signal.map(|w| w.before), Some(5));
        assert!(!s.open_append && s.requeue && !s.no_requeue);
        assert_eq!(
            (s.account.as_deref(), s.qos.as_deref()),
            (Some("proj"), Some("low"))
        );
        assert_eq!(s.array.map(|a| a.indices), Some(vec![1, 2, 3]));
        let s = resolve(&cli(&["--no-requeue", "job.sh"]), "#!/bin/sh\n", &env).unwrap();
        assert!(s.no_requeue && !s.requeue);
        let s = resolve(
            &cli(&["job.sh"]),
            "#!/bin/sh\n",
            &[("SBATCH_EXCLUSIVE", "")],
        )
        .unwrap();
        assert!(s.resources.is_none(), "--exclusive changes nothing");
        for (args, env, want) in [
            (
                &["--signal=USR1@99999", "job.sh"][..],
                &[][..],
                "invalid --signal 'USR1@99999'",
            ),
            (&["--open-mode=x", "job.sh"], &[], "invalid --open-mode 'x'"),
            (
                &["job.sh"],
                &[("SBATCH_SIGNAL", "HUP@x")],
                "(from SBATCH_SIGNAL)",
            ),
        ] {
            let e = resolve(&cli(args), "#!/bin/sh\n", env)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want) && !e.contains('\n'), "{args:?}: {e}");
        }
    }

    #[test]
    fn defaults_and_flags() {
        let s = resolve(
            &cli(&["-H", "--begin", "now+10", "-d", "afterok:4", "job.sh"]),
            "#!/bin/sh\ntrue\n",
            &[],
        )
        .unwrap();
        assert_eq!(
            (s.shape.max_nodes(), limit(&s), s.name.as_str()),
            (1, DEFAULT_TIME_LIMIT, "job.sh")
        );
        assert!(s.hold);
        assert_eq!(s.begin, Some(1_010_000));
        assert_eq!(s.dependencies.len(), 1);
        let s = resolve(&cli(&["job.sh"]), "#!/bin/sh\n#ESUB --hold\n", &[]).unwrap();
        assert!(s.hold);
        let s = resolve(&cli(&["job.sh"]), "#!/bin/sh\n", &[("ESUB_HOLD", "1")]).unwrap();
        assert!(s.hold);
    }

    #[test]
    fn profile_and_moldable_conflicts() {
        let s = resolve(
            &cli(&["--profile", "10:1,20:2", "job.sh"]),
            "#!/bin/sh\n",
            &[],
        )
        .unwrap();
        assert!(matches!(&s.shape, JobShape::Evolving { steps } if steps.len() == 2));
        assert!(resolve(
            &cli(&["--profile", "10:1", "--moldable", "1:1", "job.sh"]),
            "#!/bin/sh\n",
            &[]
        )
        .is_err());
        // The script's -N conflicts with the command line's --moldable.
        assert!(resolve(&cli(&["--moldable", "1:1", "job.sh"]), SCRIPT, &[]).is_err());
    }

    #[test]
    fn chdir_is_relative_to_cwd() {
        let s = resolve(&cli(&["-D", "sub", "job.sh"]), "#!/bin/sh\n", &[]).unwrap();
        assert_eq!(s.work_dir, "/home/u/sub");
        let s = resolve(&cli(&["-D", "/abs", "job.sh"]), "#!/bin/sh\n", &[]).unwrap();
        assert_eq!(s.work_dir, "/abs");
    }

    #[test]
    fn export_lists() {
        let env: Vec<(String, String)> = [("A", "1"), ("B", "2")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(apply_export("ALL", &env).unwrap(), env);
        assert!(apply_export("NONE", &env).unwrap().is_empty());
        assert_eq!(
            apply_export("B,C=3", &env).unwrap(),
            vec![("B".into(), "2".into()), ("C".into(), "3".into())]
        );
        assert_eq!(
            apply_export("ALL,A=9", &env).unwrap(),
            vec![("B".into(), "2".into()), ("A".into(), "9".into())]
        );
        assert!(apply_export("=x", &env).is_err());
    }

    #[test]
    fn wrap_makes_a_shell_script() {
        let w = wrap_script("echo hi");
        assert!(w.starts_with("#!/bin/sh\n") && w.contains("\necho hi\n"));
        assert!(script_opts(&w).unwrap() == SubmitOpts::default());
    }

    #[test]
    fn wire_specs() {
        let s = resolve(&cli(&["-N", "2", "job.sh"]), "#!/bin/sh\n", &[("X", "1")]).unwrap();
        let j = wire(&s).unwrap();
        assert_eq!(
            j.shape,
            JobShape::Rigid {
                nodes: 2,
                time_limit: DEFAULT_TIME_LIMIT
            }
        );
        assert_eq!(
            (j.work_dir.as_str(), j.name.as_str()),
            ("/home/u", "job.sh")
        );
        assert_eq!(j.environment, vec![("X".to_string(), "1".to_string())]);
        let s = resolve(&cli(&["-t", "UNLIMITED", "job.sh"]), "#!/bin/sh\n", &[]).unwrap();
        assert_eq!(
            wire(&s).unwrap().shape,
            JobShape::Rigid {
                nodes: 1,
                time_limit: batch_proto::TIME_UNLIMITED
            }
        );
        // Parsed, then refused by batch-proto's bounds with their one-line messages.
        let s = resolve(
            &cli(&["-t", "99999999999999", "job.sh"]),
            "#!/bin/sh\n",
            &[],
        )
        .unwrap();
        assert_eq!(
            wire(&s).unwrap_err().to_string(),
            "invalid time limit: 69444444444-10:39:00 is longer than the longest allowed, 365-00:00:00"
        );
        let s = resolve(
            &cli(&["--begin", "now+99999999999999", "job.sh"]),
            "#!/bin/sh\n",
            &[],
        )
        .unwrap();
        assert_eq!(
            wire(&s).unwrap_err().to_string(),
            "invalid begin time: 1157407407 days ahead; at most 365 days ahead are accepted"
        );
        let s = resolve(
            &cli(&["--begin", "now+365days", "-t", "365-0", "job.sh"]),
            "#!/bin/sh\n",
            &[],
        )
        .unwrap();
        assert!(wire(&s).is_ok());
        let s = resolve(
            &cli(&["--profile", "500:5,3600:10", "job.sh"]),
            "#!/bin/sh\n",
            &[],
        )
        .unwrap();
        assert_eq!(
            wire(&s).unwrap().shape,
            JobShape::Evolving {
                steps: vec![Step::new(500_000, 5), Step::new(3_600_000, 10)]
            }
        );
        let s = resolve(
            &cli(&["--moldable", "4:60", "-d", "afterok:3", "job.sh"]),
            "#!/bin/sh\n",
            &[],
        )
        .unwrap();
        let j = wire(&s).unwrap();
        assert_eq!(
            j.shape,
            JobShape::Moldable {
                configs: vec![MoldConfig {
                    nodes: 4,
                    walltime: 60 * MINUTE
                }],
                model: None,
                weight: None,
            }
        );
        assert_eq!(j.dependencies.len(), 1);
        let s = resolve(
            &cli(&[
                "--moldable-model",
                "amdahl:1:00:00:0.25",
                "--nodes-range",
                "2-16",
                "--moldable",
                "32:5",
                "--weight",
                "3",
                "job.sh",
            ]),
            "#!/bin/sh\n",
            &[],
        )
        .unwrap();
        assert_eq!(
            wire(&s).unwrap().shape,
            JobShape::Moldable {
                configs: vec![MoldConfig {
                    nodes: 32,
                    walltime: 5 * MINUTE
                }],
                model: Some(MoldModel {
                    model: batch_proto::SpeedupModel::Amdahl {
                        work: 60 * MINUTE,
                        serial: 0.25
                    },
                    min_nodes: 2,
                    max_nodes: 16
                }),
                weight: Some(3.0),
            }
        );
    }

    #[test]
    fn moldable_options_from_directives_and_their_conflicts() {
        let script = "#!/bin/sh\n#ESUB --moldable-model linear:10\n#ESUB --nodes-range 1-4\n#ESUB --weight 2\n";
        let s = resolve(&cli(&["job.sh"]), script, &[]).unwrap();
        match wire(&s).unwrap().shape {
            JobShape::Moldable { model, weight, .. } => {
                assert_eq!(weight, Some(2.0));
                assert_eq!(model.map(|m| (m.min_nodes, m.max_nodes)), Some((1, 4)));
            }
            other => panic!("not moldable: {other:?}"),
        }
        let refused = |args: &[&str]| {
            resolve(&cli(args), "#!/bin/sh\n", &[])
                .unwrap_err()
                .to_string()
        };
        for (args, why) in [
            (
                &["--moldable-model", "amdahl:60:0.1", "job.sh"][..],
                "needs --nodes-range",
            ),
            (
                &["--nodes-range", "1-4", "job.sh"][..],
                "goes with --moldable-model",
            ),
            (
                &["--weight", "2", "job.sh"][..],
                "--weight applies to moldable jobs",
            ),
            (
                &["--weight", "0", "--moldable", "1:1", "job.sh"][..],
                "invalid weight '0'",
            ),
            (
                &["--moldable", "1:1", "--profile", "1:1", "job.sh"][..],
                "exclude each other",
            ),
            (
                &[
                    "--moldable-model",
                    "linear:5",
                    "--nodes-range",
                    "1-2",
                    "-N",
                    "2",
                    "job.sh",
                ][..],
                "drop -N/--nodes",
            ),
            (
                &[
                    "--moldable-model",
                    "amdahl:5:2",
                    "--nodes-range",
                    "1-2",
                    "job.sh",
                ][..],
                "not a number in [0, 1]",
            ),
        ] {
            let e = refused(args);
            assert!(e.contains(why) && !e.contains('\n'), "{args:?}: {e}");
        }
        // A directive's bad value says where it came from.
        let e = resolve(
            &cli(&["job.sh"]),
            "#!/bin/sh\n#ESUB --nodes-range 4-1\n",
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(e.ends_with("(from #ESUB/#SBATCH directive)"), "{e}");
    }

    #[test]
    fn global_jobs_take_components_a_deadline_and_requeue_from_any_source() {
        let script = "#!/bin/sh\n#ESUB --components 4,2 --deadline +10min --requeue\ntrue\n";
        let spec = wire(&resolve(&cli(&["job.sh"]), script, &[]).unwrap()).unwrap();
        assert_eq!(
            spec.shape,
            JobShape::CoAllocated {
                components: vec![4, 2],
                time_limit: DEFAULT_TIME_LIMIT
            }
        );
        assert_eq!(spec.deadline, Some(1_000_000 + 10 * MINUTE));
        assert!(spec.requeue);
        let s = resolve(&cli(&["--no-requeue", "job.sh"]), script, &[]).unwrap();
        assert!(!s.requeue);
        // An #ESUB line's choice wins over an #SBATCH line's, either way.
        let both = "#!/bin/sh\n#ESUB --no-requeue\n#SBATCH --requeue\n";
        assert!(!resolve(&cli(&["job.sh"]), both, &[]).unwrap().requeue);
        // A local job: rigid, bound to its pool, requeued when preempted.
        let spec = resolve(
            &cli(&["-p", "a", "--requeue", "job.sh"]),
            "#!/bin/sh\n",
            &[],
        )
        .unwrap();
        assert_eq!((spec.pool.as_deref(), spec.requeue), (Some("a"), true));
    }

    #[test]
    fn deadlines_parse_like_begin_times_and_must_be_ahead() {
        let z = fixed_zone(0);
        // 1_000_000 ms is 00:16:40 on 1970-01-01.
        let now = 1_000_000;
        assert_eq!(parse_deadline("+2s", now, &z).unwrap(), now + 2 * SECOND);
        assert_eq!(
            parse_deadline("+10min", now, &z).unwrap(),
            now + 10 * MINUTE
        );
        assert_eq!(
            parse_deadline("now+1hour", now, &z).unwrap(),
            1_000 * SECOND + 3_600 * SECOND
        );
        assert_eq!(parse_deadline("10:30", now, &z).unwrap(), 37_800 * SECOND);
        for bad in ["yesterday", "+", "now-1minute", "1970-01-01T00:00:00"] {
            let e = parse_deadline(bad, now, &z).unwrap_err().to_string();
            assert!(e.starts_with("invalid deadline"), "{bad}: {e}");
        }
        assert_eq!(parse_components("16, 16,8").unwrap(), vec![16, 16, 8]);
        for bad in ["", "4,", "0", "2,-1", "x"] {
            assert!(parse_components(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn global_options_that_do_not_go_together_are_refused() {
        let base = ["--components", "2,2", "--deadline", "+1min"];
        for extra in [&["-N", "2"][..], &["-p", "a"], &["--profile", "60:2"]] {
            let mut args: Vec<&str> = base.to_vec();
            args.extend_from_slice(extra);
            args.push("job.sh");
            let e = resolve(&cli(&args), "#!/bin/sh\n", &[]).unwrap_err();
            assert!(matches!(e, SpecError::Conflict(_)), "{extra:?}: {e}");
        }
        let e = resolve(&cli(&["--components", "2", "job.sh"]), "#!/bin/sh\n", &[]).unwrap_err();
        assert!(e.to_string().contains("--deadline"), "{e}");
        let e = resolve(&cli(&["--deadline", "+1min", "job.sh"]), "#!/bin/sh\n", &[]).unwrap_err();
        assert!(e.to_string().contains("--components"), "{e}");
    }
}
