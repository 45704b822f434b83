//! `esim moldable-experiments`: Dutot & Eyraud's §4 — m = 200, 25–400 tasks, four workload
//! models, 40 runs per point; the min/avg/max ratios of the six algorithms to the lower bounds
//! printed as tables and written as SVG plots like Figures 3–7, and the whole run time.
//! The generators and their choices: `crate::moldable::experiment` and docs/moldable.md.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use crate::moldable::experiment::{format_tables, run_experiment, svg_figures, Model, Spec};
use anyhow::{bail, Context};
use clap::Args;
use esched_bicriteria::bicrit::BiCritParams;
use esched_bicriteria::makespan::Makespan;

/// `esim moldable-experiments`.
#[derive(Debug, Args)]
pub struct ExperimentArgs {
    /// Runs per point (the paper: 40).
    #[arg(long, default_value_t = 40)]
    pub runs: usize,
    /// Processors (the paper: 200).
    #[arg(long, default_value_t = 200)]
    pub m: usize,
    /// Numbers of tasks: FROM..TO:STEP (inclusive) or a comma-separated list.
    #[arg(long, default_value = "25..400:25")]
    pub tasks: String,
    /// Models, comma-separated: weakly, highly, mixed, cirne.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "weakly,highly,mixed,cirne"
    )]
    pub models: Vec<String>,
    /// Seed of the instance generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// BiCrit's random batch orders (on in the paper's experiments).
    #[arg(long, default_value_t = BiCritParams::default().shuffles)]
    pub shuffles: usize,
    /// The dual-approximation makespan algorithm (C*max, the Cmax bound, the list baselines'
    /// allotment): `mrt` (the paper's [7]) or `canonical`.
    #[arg(long, default_value_t = Makespan::default())]
    pub makespan: Makespan,
    /// Directory for the SVG plots (created if missing). `--svg-dir` is an older spelling.
    #[arg(
        long = "out",
        alias = "svg-dir",
        value_name = "DIR",
        default_value = "moldable-figures"
    )]
    pub svg_dir: PathBuf,
    /// Print the results as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// `FROM..TO:STEP` or `a,b,c`.
fn parse_tasks(s: &str) -> anyhow::Result<Vec<usize>> {
    let bad = || format!("bad --tasks `{s}` (expected FROM..TO:STEP or a,b,c)");
    let ns: Vec<usize> = if let Some((range, step)) = s.split_once(':') {
        let (a, b) = range.split_once("..").with_context(bad)?;
        let (a, b, step): (usize, usize, usize) = (
            a.trim().parse().with_context(bad)?,
            b.trim().parse().with_context(bad)?,
            step.trim().parse().with_context(bad)?,
        );
        if step == 0 || a > b {
            bail!(bad());
        }
        (a..=b).step_by(step).collect()
    } else {
        s.split(',')
            .map(|v| v.trim().parse().with_context(bad))
            .collect::<anyhow::Result<_>>()?
    };
    if ns.is_empty() || ns.contains(&0) {
        bail!(bad());
    }
    Ok(ns)
}

/// Runs the experiment, prints it, writes the plots.
pub fn run(args: &ExperimentArgs) -> anyhow::Result<()> {
    if args.runs == 0 || args.m == 0 {
        bail!("--runs and --m must be at least 1");
    }
    let models = args
        .models
        .iter()
        .map(|m| {
            Model::parse(m.trim())
                .with_context(|| format!("unknown model `{m}` (weakly, highly, mixed, cirne)"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let spec = Spec {
        m: args.m,
        ns: parse_tasks(&args.tasks)?,
        runs: args.runs,
        models,
        seed: args.seed,
        params: BiCritParams {
            shuffles: args.shuffles,
            seed: args.seed,
            makespan: args.makespan,
        },
    };
    let started = Instant::now();
    let reports = run_experiment(&spec, |model, n| {
        eprintln!(
            "esim: {} n = {n} done ({:.1} s)",
            model.name(),
            started.elapsed().as_secs_f64()
        );
    })?;
    let elapsed = started.elapsed();
    std::fs::create_dir_all(&args.svg_dir)
        .with_context(|| format!("creating {}", args.svg_dir.display()))?;
    for (name, svg) in svg_figures(&reports, &spec) {
        let p = args.svg_dir.join(name);
        std::fs::write(&p, svg).with_context(|| format!("writing {}", p.display()))?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &reports)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", format_tables(&reports, &spec))?;
    }
    writeln!(
        out,
        "whole run: {:.1} s ({} instances); plots in {}",
        elapsed.as_secs_f64(),
        spec.models.len() * spec.ns.len() * spec.runs,
        args.svg_dir.display()
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_ranges_and_lists() {
        assert_eq!(parse_tasks("25..100:25").unwrap(), vec![25, 50, 75, 100]);
        assert_eq!(parse_tasks("5,7").unwrap(), vec![5, 7]);
        assert!(parse_tasks("0,5").is_err());
        assert!(parse_tasks("10..5:1").is_err());
        assert!(parse_tasks("x").is_err());
    }
}
