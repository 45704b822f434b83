//! What esim prints: the summary table, its JSON form, the per-job CSV.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::Context;
use sched_core::metrics::Summary;
use sched_core::Params;
use sched_sim::swf::{Skipped, Trace};
use sched_sim::{Counts, EventOrder, JobResult, SimResults, Timing, ValidateMode};
use serde::Serialize;

/// The summary of a run, as printed (`--json` serialises it as is).
#[derive(Debug, Serialize)]
pub struct Report {
    /// The policy's name.
    pub policy: String,
    /// Its parameters.
    pub params: Vec<(String, String)>,
    /// The trace file.
    pub trace: String,
    /// Machine size, nodes.
    pub nodes: u32,
    /// Job lines in the trace.
    pub trace_jobs: usize,
    /// Jobs skipped by the reader, per reason.
    pub skipped: Skipped,
    /// Counts of the run.
    pub counts: Counts,
    /// Metrics (seconds; bounded slowdown with τ = 10 s).
    pub summary: Summary,
    /// Wall-clock seconds.
    pub timing: Timing,
    /// What was validated.
    pub validate: ValidateMode,
    /// How the events of an instant reached the policy.
    pub events: EventOrder,
}

impl Report {
    /// The report of `results`, a replay of `trace`.
    pub fn new(
        policy: &str,
        params: &Params,
        trace: &Trace,
        results: &SimResults,
        (validate, events): (ValidateMode, EventOrder),
    ) -> Self {
        Report {
            policy: policy.to_string(),
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            trace: trace.path.display().to_string(),
            nodes: trace.nodes,
            trace_jobs: trace.lines,
            skipped: trace.skipped.clone(),
            counts: results.counts.clone(),
            summary: results.summary,
            timing: results.timing,
            validate,
            events,
        }
    }

    /// The human table.
    pub fn table(&self) -> String {
        let s = &self.summary;
        let c = &self.counts;
        let t = &self.timing;
        let mut out = String::new();
        let mut row = |k: &str, v: String| {
            let _ = writeln!(out, "{k:<18} {v}");
        };
        let params = if self.params.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                self.params
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        row("policy", format!("{}{params}", self.policy));
        row("trace", format!("{} ({} nodes)", self.trace, self.nodes));
        let skipped = if self.skipped.total() == 0 {
            "0 skipped".to_string()
        } else {
            let why: Vec<String> = self
                .skipped
                .reasons()
                .iter()
                .map(|(r, n)| format!("{n} {r}"))
                .collect();
            format!("{} skipped: {}", self.skipped.total(), why.join("; "))
        };
        row("jobs", format!("{} run, {skipped}", c.ran));
        if c.rejected + c.killed + c.walltime_kills > 0 {
            row(
                "",
                format!(
                    "{} rejected, {} killed by the policy, {} killed at walltime",
                    c.rejected, c.killed, c.walltime_kills
                ),
            );
        }
        row("utilisation", format!("{:.2} %", 100.0 * s.utilisation));
        row(
            "makespan",
            format!("{:.0} s ({:.1} days)", s.makespan, s.makespan / 86_400.0),
        );
        row(
            "wait",
            format!(
                "mean {:.0} s, median {:.0} s, p95 {:.0} s",
                s.wait.mean, s.wait.median, s.wait.p95
            ),
        );
        row(
            "bounded slowdown",
            format!(
                "mean {:.2}, median {:.2}, p95 {:.2} (τ = 10 s)",
                s.bounded_slowdown.mean, s.bounded_slowdown.median, s.bounded_slowdown.p95
            ),
        );
        row(
            "policy calls",
            format!(
                "{} ({} plans refused, {} panics, {} errors)",
                c.policy_calls, c.refused_plans, c.policy_panics, c.policy_errors
            ),
        );
        row(
            "time",
            format!(
                "{:.2} s total: policy {:.2} s ({:.0} %), validator {:.2} s ({:.0} %)",
                t.total,
                t.policy,
                pct(t.policy, t.total),
                t.validate,
                pct(t.validate, t.total)
            ),
        );
        out
    }
}

fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}

/// Header of `--jobs`. The `_ms` suffixes tell `compare_schedule.py` (and readers) the unit;
/// it recognises `id`, `submit_ms`, `start_ms` and `end_ms`, and takes the processor count of
/// a job from the reference when the candidate calls it `nodes`.
pub const JOBS_HEADER: &str = "id,submit_ms,start_ms,end_ms,nodes,wait_ms";

/// Writes one CSV row per job.
pub fn write_jobs_csv(path: &Path, jobs: &[JobResult]) -> anyhow::Result<()> {
    let ctx = || format!("{}", path.display());
    let mut w = BufWriter::new(File::create(path).with_context(ctx)?);
    writeln!(w, "{JOBS_HEADER}").with_context(ctx)?;
    // Integers by `itoa`, not `writeln!`: the formatting machinery was a twentieth of a short
    // replay (one row per job, six numbers each).
    let mut num = itoa::Buffer::new();
    let mut row: Vec<u8> = Vec::with_capacity(128);
    for j in jobs {
        row.clear();
        for (k, v) in [j.id.0, j.submit, j.start, j.end, u64::from(j.nodes), j.wait]
            .into_iter()
            .enumerate()
        {
            if k > 0 {
                row.push(b',');
            }
            row.extend_from_slice(num.format(v).as_bytes());
        }
        row.push(b'\n');
        w.write_all(&row).with_context(ctx)?;
    }
    w.flush().with_context(ctx)?;
    Ok(())
}
