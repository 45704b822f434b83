//! What esim prints: the summary table, its JSON form, the per-job CSV.

use std::fmt::Write as _;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use anyhow::Context;
use esched_report::batsim::{self, FinalState};
use esched_report::nodes::{self, IntervalSet, Span};
use esched_report::plot::{self, Gantt, GanttJob, JobKind, TimeAxis};
use esched_report::swf;
use sched_core::metrics::Summary;
use sched_core::Params;
use sched_sim::swf::{Skipped, SwfJob, Trace};
use sched_sim::{Counts, EndReason, EventOrder, JobResult, SimResults, Timing, ValidateMode};
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

/// Header of `--jobs`: esim's own columns, then Batsim's jobs-CSV columns
/// ([`esched_report::batsim::COLUMNS`], times in seconds) so that evalys reads the file as it
/// reads Batsim's. The `_ms` suffixes tell `compare_schedule.py` (and readers) the unit;
/// it recognises `id`, `submit_ms`, `start_ms` and `end_ms`, and takes the processor count of
/// a job from the reference when the candidate calls it `nodes`.
pub const JOBS_HEADER: &str = "id,submit_ms,start_ms,end_ms,nodes,wait_ms";

/// What a replay knows of each job besides its result: the trace's request and the nodes
/// the job was placed on.
pub struct JobDetails<'a> {
    /// The trace's jobs, by id.
    pub requested: std::collections::HashMap<u64, &'a SwfJob>,
    /// The nodes of each job of the results, in their order (empty sets when the schedule
    /// could not be placed on numbered nodes).
    pub placed: Vec<IntervalSet>,
}

impl<'a> JobDetails<'a> {
    /// The details of `results`, a replay of `trace`.
    pub fn new(trace: &'a Trace, results: &[JobResult]) -> Self {
        let requested = trace.jobs.iter().map(|j| (j.id.0, j)).collect();
        let spans: Vec<Span> = results
            .iter()
            .map(|j| Span {
                start: j.start,
                end: j.end,
                nodes: j.nodes,
            })
            .collect();
        let placed = match nodes::place(&spans, trace.nodes) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!("the schedule cannot be placed on numbered nodes: {e}");
                vec![IntervalSet::default(); results.len()]
            }
        };
        JobDetails { requested, placed }
    }
}

/// Batsim's final state of a job that ran.
pub fn final_state(reason: EndReason) -> FinalState {
    match reason {
        EndReason::Completed => FinalState::CompletedSuccessfully,
        EndReason::Walltime => FinalState::CompletedWalltimeReached,
        EndReason::Killed => FinalState::CompletedKilled,
    }
}

/// Writes one CSV row per job: [`JOBS_HEADER`]'s columns, then Batsim's.
pub fn write_jobs_csv(
    path: &Path,
    jobs: &[JobResult],
    details: &JobDetails<'_>,
) -> anyhow::Result<()> {
    let ctx = || format!("{}", path.display());
    let mut w = csv::Writer::from_writer(BufWriter::new(File::create(path).with_context(ctx)?));
    let header: Vec<&str> = JOBS_HEADER
        .split(',')
        .chain(batsim::COLUMNS.iter().copied())
        .collect();
    w.write_record(&header).with_context(ctx)?;
    let mut num = itoa::Buffer::new();
    let mut row: Vec<String> = Vec::with_capacity(header.len());
    for (k, j) in jobs.iter().enumerate() {
        row.clear();
        for v in [j.id.0, j.submit, j.start, j.end, u64::from(j.nodes), j.wait] {
            row.push(num.format(v).to_string());
        }
        let req = details.requested.get(&j.id.0);
        let b = batsim::Row {
            id: j.id.0.to_string(),
            submit: j.submit,
            requested_nodes: req.map_or(j.nodes, |r| r.nodes),
            requested_time: req.map(|r| r.walltime),
            state: final_state(j.reason),
            start: j.start,
            end: j.end,
            allocated: details.placed.get(k).cloned().unwrap_or_default(),
        };
        row.extend(b.fields());
        w.write_record(&row).with_context(ctx)?;
    }
    w.flush().with_context(ctx)?;
    Ok(())
}

/// Writes the replayed schedule as an SWF trace: what ran, as it ran (see
/// [`esched_report::swf`]), with a header that says what produced it.
pub fn write_swf(
    path: &Path,
    report: &Report,
    jobs: &[JobResult],
    details: &JobDetails<'_>,
) -> anyhow::Result<()> {
    let ctx = || format!("{}", path.display());
    let records: Vec<swf::Record> = jobs
        .iter()
        .map(|j| {
            let req = details.requested.get(&j.id.0);
            swf::Record {
                id: j.id.0,
                submit: swf::secs(j.submit),
                wait: swf::secs(j.start) - swf::secs(j.submit).min(swf::secs(j.start)),
                run: swf::secs(j.end) - swf::secs(j.start).min(swf::secs(j.end)),
                allocated: j.nodes,
                requested: req.map_or(j.nodes, |r| r.nodes),
                requested_time: req.map(|r| swf::secs(r.walltime)),
                status: match j.reason {
                    EndReason::Completed => swf::Status::Completed,
                    EndReason::Walltime => swf::Status::Failed,
                    EndReason::Killed => swf::Status::Cancelled,
                },
                user: req.map(|r| r.user).filter(|&u| u > 0),
            }
        })
        .collect();
    let params: Vec<String> = report
        .params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let header =
        swf::Header {
            computer: format!(
                "esim {} (simulated), policy {}",
                env!("CARGO_PKG_VERSION"),
                report.policy
            ),
            notes: vec![
            format!(
                "the schedule of policy {}{} replaying {} on {} nodes ({} jobs ran, {} rejected); \
                 times in seconds from the input trace's origin",
                report.policy,
                if params.is_empty() { String::new() } else { format!(" ({})", params.join(", ")) },
                report.trace,
                report.nodes,
                report.counts.ran,
                report.counts.rejected,
            ),
            "field 4 is the simulated run time (cut at the requested time); status 1 completed, \
             0 killed at its requested time, 5 killed by the policy"
                .to_string(),
        ],
            unix_start: None,
            max_nodes: Some(report.nodes),
            jobs: records.len(),
        };
    let file = BufWriter::new(File::create(path).with_context(ctx)?);
    swf::write(file, &header, &records).with_context(ctx)?;
    Ok(())
}

/// Writes the picture `svg` to `svg_path` as it is and to `png_path` rendered as PNG.
pub fn write_picture(
    svg: &str,
    svg_path: Option<&Path>,
    png_path: Option<&Path>,
) -> anyhow::Result<()> {
    if let Some(path) = svg_path {
        std::fs::write(path, svg).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = png_path {
        let png = esched_report::png::from_svg(svg, 1.0)?;
        std::fs::write(path, png).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Draws the replayed schedule as SVG: a Gantt chart of `window` (seconds from the trace's
/// origin; default the whole replay), with utilisation and queue length beneath.
pub fn svg(
    report: &Report,
    jobs: &[JobResult],
    details: &JobDetails<'_>,
    window: Option<(f64, f64)>,
) -> anyhow::Result<String> {
    let s = |ms: u64| ms as f64 / 1000.0;
    let gantt_jobs: Vec<GanttJob> = jobs
        .iter()
        .zip(&details.placed)
        .map(|(j, nodes)| GanttJob {
            id: j.id.0.to_string(),
            label: format!("({} nodes, waited {} s)", j.nodes, j.wait / 1000),
            start: s(j.start),
            end: s(j.end),
            nodes: nodes.clone(),
            kind: JobKind::Ran,
        })
        .collect();
    let timeline: Vec<(f64, f64, f64, u32)> = jobs
        .iter()
        .map(|j| (s(j.submit), s(j.start), s(j.end), j.nodes))
        .collect();
    let panels = plot::load_panels(&timeline, report.nodes);
    let mut g = Gantt {
        title: format!(
            "{}: {} on {} nodes",
            file_name(&report.trace),
            report.policy,
            report.nodes
        ),
        caption: String::new(),
        nodes: report.nodes,
        groups: vec![],
        jobs: gantt_jobs,
        window,
        time: TimeAxis::Relative,
        now: None,
        panels,
        ..Gantt::default()
    };
    let (a, b) = g.window();
    g.caption = format!(
        "esim replay of {} ({} jobs ran) with policy {} on {} nodes; window {}..{} s from the \
         trace's origin, {} jobs drawn. Each rectangle is a job on the nodes it was placed on \
         (lowest-numbered free nodes first); beneath, the share of nodes busy and the number \
         of jobs waiting.",
        report.trace,
        report.counts.ran,
        report.policy,
        report.nodes,
        a.round(),
        b.round(),
        g.visible().count(),
    );
    Ok(g.svg()?)
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
