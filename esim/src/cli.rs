//! esim's command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use sched_sim::{EventOrder, ValidateMode};

/// Replay a workload trace (SWF, plain or .gz) through a scheduling policy on a virtual clock.
///
/// `esim --policy cbf --trace FILE` is the same as `esim run --policy cbf --trace FILE`.
#[derive(Debug, Parser)]
#[command(
    name = "esim",
    version,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    /// What to do (default: run).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options of `run`, accepted without the subcommand.
    #[command(flatten)]
    pub run: RunArgs,
}

/// esim's subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Replay a trace through a policy (the default).
    Run(RunArgs),
    /// Measure how long a policy takes to plan queues of growing size, and a trace replay.
    Bench(BenchArgs),
    /// Klein & Pérez's Tables 1–2: rigid and five evolving variants on the papers' workload.
    EvolvingTables(esched_lab::cmd::tables::TablesArgs),
    /// Schedule Klein & Pérez test instances (JSON in, JSON out) with one plan call each.
    Schedule(esched_lab::cmd::schedule::ScheduleArgs),
    /// Dutot & Eyraud's moldable scheduling on one instance (JSON in, bounds and six
    /// algorithms' schedules out).
    Moldable(esched_lab::cmd::moldable::MoldableArgs),
    /// Dutot & Eyraud's §4 experiments: ratios to the bounds, tables and SVG plots.
    MoldableExperiments(esched_lab::cmd::moldable_experiments::ExperimentArgs),
    /// Dutot & Eyraud's online scheme (§2.2) on a real trace made moldable: bicriteria against
    /// cbf with the OAR rule, side by side.
    MoldableOnline(esched_lab::cmd::moldable_online::OnlineArgs),
    /// Replay a co-allocation trace (JSON) through the rpp policy: every job's fate as JSON.
    Coalloc(esched_lab::cmd::coalloc::CoallocArgs),
    /// Ballier et al.'s §3 experiments (Figures 1–9): tables, SVG plots, run time.
    CoallocExperiments(esched_lab::cmd::coalloc_experiments::ExperimentsArgs),
    /// Klein & Pérez's CooRM §IV: Fig. 6 (scalability, 1–8 pools, OAR-like vs CooRM W0–W3)
    /// and Fig. 7 (fairness against the adaptation delay) from an SWF trace: tables, SVG.
    CoormExperiments(esched_lab::cmd::coorm_experiments::ExperimentsArgs),
    /// Klein & Pérez's CooRM §IV-D (Fig. 8): one workload simulated and run on a real batchd
    /// with one launcher process per application; message volume and CPU time side by side.
    CoormValidation(esched_lab::cmd::coorm_validation::ValidationArgs),
    /// Replay a daemon's snapshot (`econtrol snapshot FILE`) under the policy in force and
    /// other policies, with no new arrivals: every pending job's expected start, wait, bounded
    /// slowdown and utilisation side by side (docs/whatif.md).
    Whatif(crate::whatif::WhatifArgs),
    /// One application's launcher process of `coorm-validation` (started by it).
    #[command(hide = true)]
    CoormLauncher(esched_lab::cmd::coorm_validation::LauncherArgs),
}

/// What the engine asks of the policy at each call, all of it validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ValidateArg {
    /// The whole plan, every queued job's expected start included (what batchd asks for).
    Full,
    /// Only what is acted on now (starts, kills, rejects, the next expected start as a wake-up).
    Starts,
}

impl From<ValidateArg> for ValidateMode {
    fn from(v: ValidateArg) -> Self {
        match v {
            ValidateArg::Full => ValidateMode::Full,
            ValidateArg::Starts => ValidateMode::Starts,
        }
    }
}

/// How the events of one instant reach the policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EventsArg {
    /// All ends, then all submissions, then one policy call.
    Instant,
    /// One policy call per event, submissions first (the pyss reference's order).
    PerEvent,
}

impl From<EventsArg> for EventOrder {
    fn from(v: EventsArg) -> Self {
        match v {
            EventsArg::Instant => EventOrder::Instant,
            EventsArg::PerEvent => EventOrder::PerEvent,
        }
    }
}

/// `esim run`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("picture").args(["svg", "png"]).multiple(true)))]
pub struct RunArgs {
    /// The policy: a name (loaded from `libesched_<name>.so` in `$ESCHED_PLUGIN_DIR` or next
    /// to esim) or the path of a policy library.
    #[arg(long, default_value = "cbf", long_help = crate::policies::policy_help())]
    pub policy: String,
    /// The trace, in the Standard Workload Format, plain or gzip-compressed.
    #[arg(long, value_name = "FILE", required = true)]
    pub trace: Option<PathBuf>,
    /// A policy parameter; repeatable. Overrides the same key of --params-file.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// A TOML file whose top-level keys are the policy's parameters.
    #[arg(long, value_name = "FILE")]
    pub params_file: Option<PathBuf>,
    /// Machine size in nodes (default: the trace's MaxProcs, else MaxNodes header).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..))]
    pub nodes: Option<u32>,
    /// Write per-job results to this CSV file. Columns: id,submit_ms,start_ms,end_ms,nodes,wait_ms
    /// (times in milliseconds from the trace's origin), then Batsim's jobs-CSV columns as
    /// evalys reads them (seconds): job_id, submission_time, requested_number_of_resources,
    /// requested_time, success, final_state, starting_time, execution_time, finish_time,
    /// waiting_time, turnaround_time, stretch, allocated_resources (an interval set, `0-3 7`).
    #[arg(long, value_name = "FILE")]
    pub jobs: Option<PathBuf>,
    /// Write the replayed schedule to this file as an SWF trace (wait = start − submit, the
    /// simulated run time, nodes allocated and requested, requested time, status); esim and
    /// pyss read it back.
    #[arg(long, value_name = "FILE")]
    pub swf: Option<PathBuf>,
    /// Draw the replay to this SVG file: a Gantt chart of the jobs on the nodes, with
    /// utilisation and queue length beneath (see --window for long traces).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Draw the replay to this PNG file: the --svg picture, rendered (with an embedded font).
    #[arg(long, value_name = "FILE")]
    pub png: Option<PathBuf>,
    /// The time window --svg and --png draw, FROM..TO from the trace's origin: seconds, or with
    /// a unit (`2d..3d`, `36h..48h`, `90m..120m`, `0..3600s`).
    #[arg(long, value_name = "FROM..TO", value_parser = parse_window, requires = "picture")]
    pub window: Option<Window>,
    /// Print the summary as JSON on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Replay only the first N jobs of the trace (after skipping unusable ones).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// No progress bar, no warnings (errors only).
    #[arg(long, short)]
    pub quiet: bool,
    /// What to ask the policy for and validate: `starts` only what the replay acts on (the
    /// starts, kills and rejects of each call, and when to call again), `full` the whole plan
    /// with every queued job's expected start, as batchd asks: slower on long queues, and it
    /// also checks that the policy never plans an impossible future. Same schedule either way.
    #[arg(long, value_enum, default_value = "starts")]
    pub validate: ValidateArg,
    /// How the events of one instant reach the policy: `instant` (every end, then every
    /// submission, then one call) or `per-event` (one call per event, submissions first, as
    /// the pyss reference schedules do; for job-by-job comparisons with them).
    #[arg(long, value_enum, default_value = "instant")]
    pub events: EventsArg,
    /// Use the policy linked into esim instead of loading its plugin library (to compare the
    /// two).
    #[arg(long)]
    pub linked: bool,
}

/// `esim bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The policy to measure.
    #[arg(long, default_value = "cbf")]
    pub policy: String,
    /// Queue sizes to plan, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
    pub sizes: Vec<usize>,
    /// Nodes of the one pool.
    #[arg(long, default_value_t = 10_000, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..))]
    pub nodes: u32,
    /// Runs per size; the median is reported.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Seed of the random workload.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Also time a full replay of this trace (SWF, plain or .gz) with the policy.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// What the replay asks the policy for and validates (see `esim run --validate`).
    #[arg(long, value_enum, default_value = "starts")]
    pub validate: ValidateArg,
    /// Use the policy linked into esim instead of loading its plugin library (to compare the
    /// two).
    #[arg(long)]
    pub linked: bool,
}

/// A time window, seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window(pub f64, pub f64);

/// `FROM..TO`, each a number of seconds with an optional unit (s, m, h, d).
pub fn parse_window(s: &str) -> Result<Window, String> {
    let Some((a, b)) = s.split_once("..") else {
        return Err(format!("`{s}`: expected FROM..TO (e.g. 2d..3d)"));
    };
    let secs = |t: &str| -> Result<f64, String> {
        let t = t.trim();
        let (num, unit) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
            Some((k, _)) => t.split_at(k),
            None => (t, "s"),
        };
        let mult = match unit {
            "s" => 1.0,
            "m" | "min" => 60.0,
            "h" => 3600.0,
            "d" => 86_400.0,
            other => return Err(format!("`{t}`: unknown unit `{other}` (s, m, h, d)")),
        };
        let v: f64 = num
            .trim()
            .parse()
            .map_err(|_| format!("`{t}`: not a number of seconds"))?;
        if !v.is_finite() || v < 0.0 {
            return Err(format!("`{t}`: a time from the trace's origin is ≥ 0"));
        }
        Ok(v * mult)
    };
    let (a, b) = (secs(a)?, secs(b)?);
    if b <= a {
        return Err(format!("`{s}`: the window ends before it starts"));
    }
    Ok(Window(a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_take_units_and_refuse_empty_ones() {
        assert_eq!(parse_window("2d..3d"), Ok(Window(172_800.0, 259_200.0)));
        assert_eq!(parse_window("0..90m"), Ok(Window(0.0, 5400.0)));
        assert!(parse_window("5..5").is_err());
        assert!(parse_window("5").is_err());
        assert!(parse_window("1w..2w").is_err());
    }
}
