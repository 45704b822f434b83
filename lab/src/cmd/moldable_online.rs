//! `esim moldable-online`: the online experiment of Dutot & Eyraud §2.2 on a real trace — every
//! SWF job made moldable by Downey's speed-up model (`crate::moldable::online`), replayed under
//! `bicriteria` (with each makespan algorithm) and under `cbf` with the OAR rule, plus `cbf` on
//! the trace as it is (rigid, same exact run times) for reference; one table side by side.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use crate::moldable::online::{format_table, moldable_jobs, replay, Row};
use anyhow::{bail, Context};
use clap::Args;
use esched_bicriteria::bicrit::BiCritParams;
use esched_bicriteria::makespan::Makespan;
use esched_bicriteria::BiCriteria;
use esched_cbf::Cbf;
use sched_core::{Duration, Request};
use sched_sim::swf::{self, ReadOptions};
use sched_sim::SimJob;

/// `esim moldable-online`.
#[derive(Debug, Args)]
pub struct OnlineArgs {
    /// The trace (SWF, plain or .gz).
    #[arg(long, value_name = "FILE", default_value = "traces/KTH-SP2-sample.swf")]
    pub trace: PathBuf,
    /// Replay only the first N jobs.
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub limit: usize,
    /// Machine size (default: the trace's header).
    #[arg(long, value_name = "N")]
    pub nodes: Option<u32>,
    /// Downey's variance σ of every job's speed-up (0: linear up to A; 2: poor).
    #[arg(long, default_value_t = 1.0)]
    pub sigma: f64,
    /// BiCrit's random batch orders.
    #[arg(long, default_value_t = BiCritParams::default().shuffles)]
    pub shuffles: usize,
    /// Print the rows as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Replays the trace under every policy and prints the table.
pub fn run(args: &OnlineArgs) -> anyhow::Result<()> {
    if !(args.sigma >= 0.0 && args.sigma.is_finite()) {
        bail!("--sigma must be a finite number ≥ 0");
    }
    let trace = swf::read_path(
        &args.trace,
        &ReadOptions {
            nodes: args.nodes,
            limit: Some(args.limit),
        },
    )
    .with_context(|| format!("reading {}", args.trace.display()))?;
    trace.warn_skipped();
    let moldable = moldable_jobs(&trace, args.sigma);
    let mut rows = Vec::new();
    let started = Instant::now();
    for makespan in Makespan::ALL {
        let name = format!("bicriteria (makespan {makespan})");
        let mut p = BiCriteria::new(BiCritParams {
            shuffles: args.shuffles,
            makespan,
            ..BiCritParams::default()
        });
        let r = replay("bicriteria", &mut p, trace.nodes, moldable.clone())?;
        rows.push(Row::new(&name, &trace, &r));
        eprintln!(
            "esim: {name} done ({:.1} s)",
            started.elapsed().as_secs_f64()
        );
    }
    let r = replay("cbf", &mut Cbf::new(), trace.nodes, moldable)?;
    rows.push(Row::new("cbf (OAR rule)", &trace, &r));
    // The trace as it is, each job on its own size for its own run time (walltime = run time,
    // as the moldable jobs have): what moldability changes.
    let rigid: Vec<SimJob> = trace
        .jobs
        .iter()
        .map(|j| {
            let mut s = SimJob::from(j);
            s.request = Request::rigid(j.nodes, j.runtime.max(1));
            s.runtime = Duration::MAX;
            s
        })
        .collect();
    let r = replay("cbf", &mut Cbf::new(), trace.nodes, rigid)?;
    rows.push(Row::new("cbf, rigid (the trace's sizes)", &trace, &r));
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "{}: {} jobs on {} nodes, Downey sigma = {}, weights 1, exact run times",
            args.trace.display(),
            trace.jobs.len(),
            trace.nodes,
            args.sigma
        )?;
        write!(out, "{}", format_table(&rows))?;
        writeln!(out, "whole run: {:.1} s", started.elapsed().as_secs_f64())?;
    }
    Ok(())
}
