//! esubmit's options, as clap reads them from the command line and from `#ESUB` lines.

use clap::{Args, Parser};

use super::super::args::SocketArg;

/// The options esubmit takes on its command line and in `#ESUB` lines. Values are kept as
/// text here and parsed by [`SubmitOpts::resolve`], once the three sources are merged, so an
/// error can say which source the bad value came from.
#[derive(Args, Debug, Default, Clone, PartialEq, Eq)]
pub struct SubmitOpts {
    /// Number of nodes.
    #[arg(short = 'N', long, value_name = "N")]
    pub nodes: Option<String>,
    /// Time limit: min, min:sec, h:m:s, d-h, d-h:m or d-h:m:s, seconds rounded up to the
    /// minute; Ns keeps seconds; UNLIMITED (default: the pool's max_time).
    #[arg(short = 't', long, value_name = "TIME")]
    pub time: Option<String>,
    /// Job name (default: the script's file name, or "wrap").
    #[arg(short = 'J', long = "job-name", value_name = "NAME")]
    pub job_name: Option<String>,
    /// Standard output file (default slurm-%j.out in the submit directory, slurm-%A_%a.out for
    /// an array task): %j job
    /// id, %J job id (.step), %A array job id, %a array task id, %b task id modulo 10, %x job
    /// name, %u user, %N first node, %n node index, %s step, %t task id, %% a percent sign; a
    /// width between % and the letter zero-pads a number (%5j).
    #[arg(short = 'o', long, value_name = "PATTERN")]
    pub output: Option<String>,
    /// Standard error file, with --output's patterns (default: with standard output).
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
    /// Earliest start: now, now+N or now-N with a unit (s, min, h, d, w, or seconds|minutes|
    /// hours|days|weeks; seconds without one), HH:MM[:SS] (the next one), YYYY-MM-DD[THH:MM[:SS]],
    /// today, tomorrow, midnight, noon, elevenses, fika, teatime.
    #[arg(short = 'b', long, value_name = "TIME")]
    pub begin: Option<String>,
    /// Submit held: the job waits for `econtrol release`.
    #[arg(short = 'H', long)]
    pub hold: bool,
    /// afterok|afterany|afternotok|after:ID[:ID...][,...] or singleton.
    #[arg(short = 'd', long, value_name = "LIST")]
    pub dependency: Option<String>,
    /// Evolving job: steps SECONDS:NODES[,SECONDS:NODES...].
    #[arg(long = "evolving-profile", value_name = "STEPS")]
    pub evolving_profile: Option<String>,
    /// Slurm's profiling (all, none, energy, task, lustre, network): stored and shown, no
    /// effect. A value that cannot be Slurm's is an evolving job's steps (--evolving-profile).
    #[arg(long, value_name = "TYPES|STEPS")]
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
    // Slurm's habits, grouped so that other branches' options merge beside them.
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
    /// Mail events (NONE, BEGIN, END, FAIL, REQUEUE, ALL, TIME_LIMIT..., comma-separated):
    /// stored and shown; no mail is sent.
    #[arg(long = "mail-type", value_name = "TYPE")]
    pub mail_type: Option<String>,
    /// Mail recipient: stored and shown; no mail is sent.
    #[arg(long = "mail-user", value_name = "USER")]
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
    // Slurm options stored and shown that change nothing here (batch-proto's InertOptions).
    /// Workload characterization key: stored and shown, no effect.
    #[arg(long, value_name = "KEY")]
    pub wckey: Option<String>,
    /// A comment: stored and shown, no effect.
    #[arg(long, value_name = "TEXT")]
    pub comment: Option<String>,
    /// Slurm's priority adjustment (100 without a value): stored and shown; the priority is
    /// not changed.
    #[arg(
        long,
        value_name = "N",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "100",
        allow_hyphen_values = true
    )]
    pub nice: Option<String>,
    /// The shortest time limit Slurm may cut the job to: stored and shown; the job keeps -t.
    #[arg(long = "time-min", value_name = "TIME")]
    pub time_min: Option<String>,
    /// Keep the job if a node fails (=off: do not): stored and shown; nodes here do not fail.
    #[arg(
        short = 'k',
        long = "no-kill",
        value_name = "off",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "on"
    )]
    pub no_kill: Option<String>,
    /// Temporary disk per node (K, M, G, T; default M): stored and shown, nodes declare none.
    #[arg(long, value_name = "SIZE")]
    pub tmp: Option<String>,
    /// compute_bound, memory_bound, multithread or nomultithread: stored and shown; nodes are
    /// whole here.
    #[arg(long, value_name = "HINT")]
    pub hint: Option<String>,
    /// Task distribution (block, cyclic, plane=N...): stored and shown; nodes are whole here.
    #[arg(short = 'm', long, value_name = "DIST")]
    pub distribution: Option<String>,
    /// Ignore the script's `#PBS` lines (without it a script with any is refused: esubmit does
    /// not read them).
    #[arg(long = "ignore-pbs")]
    pub ignore_pbs: bool,
}

/// `esubmit`'s command line.
#[derive(Parser, Debug)]
#[command(
    name = "esubmit",
    version,
    args_override_self = true,
    about = "Submit a batch script to batchd (like sbatch)",
    after_help = "Options may also be given as '#ESUB' lines at the top of the script and \
                  through ESUB_PARTITION, ESUB_TIMELIMIT, ESUB_JOB_NAME, ESUB_OUTPUT, \
                  ESUB_ERROR, ESUB_HOLD, ESUB_EXPORT, ESUB_SIGNAL, ESUB_OPEN_MODE, ESUB_ACCOUNT, \
                  ESUB_QOS, ESUB_ARRAY_INX, ESUB_REQUEUE, ESUB_NO_REQUEUE, ESUB_EXCLUSIVE, \
                  ESUB_WCKEY, ESUB_NO_KILL, ESUB_HINT, ESUB_DISTRIBUTION, ESUB_PROFILE, \
                  ESUB_IGNORE_PBS, ESUB_MEM_PER_NODE, ESUB_MEM_PER_CPU, ESUB_WAIT; \
                  the command line beats the environment, \
                  which beats the script. Slurm's '#SBATCH' lines and SBATCH_* variables are read \
                  too; an '#ESUB' line or ESUB_* variable wins over its Slurm spelling. An option given \
                  twice takes its last value."
)]
pub struct SubmitCli {
    /// The options.
    #[command(flatten)]
    pub opts: SubmitOpts,
    /// Wrap a command line in a /bin/sh script instead of giving SCRIPT.
    #[arg(long, value_name = "COMMAND", conflicts_with = "script")]
    pub wrap: Option<String>,
    /// The batch script and its arguments (everything after SCRIPT goes to the script).
    #[arg(value_name = "SCRIPT [ARGS]", trailing_var_arg = true)]
    pub script: Vec<String>,
    /// Wait for the job (every task of an array) to end, and exit with its exit code (the
    /// highest of an array's; 1 for a job cancelled, killed or timed out without one).
    #[arg(short = 'W', long)]
    pub wait: bool,
    /// With --test-only: also the expected start under this policy (`NAME` or
    /// `NAME:KEY=VALUE,…`, as `esim whatif --policy`), from a replay of the daemon's queue with
    /// the job in it; repeatable (docs/whatif.md).
    #[arg(long = "policy", value_name = "SPEC")]
    pub policies: Vec<String>,
    /// The daemon's socket.
    #[command(flatten)]
    pub socket: SocketArg,
}
