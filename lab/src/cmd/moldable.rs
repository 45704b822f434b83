//! `esim moldable`: one moldable instance in, Dutot & Eyraud's algorithm, its baselines and the
//! lower bounds out (plugins/bicriteria, docs/moldable.md).
//!
//! Input (a file, or stdin when the file is absent or `-`), times in seconds:
//! `{"m": M, "tasks": [{"w": W, "p": [p(1), …, p(M)]}, …]}`; tasks must be monotonic (run time
//! non-increasing and work non-decreasing in k, within a relative 1e-9), others are refused.
//! Output (stdout): `{"makespan": "mrt"|"canonical", "bounds": {"cmax_lb", "minsum_lb",
//! "minsum_lb_paper"}, "algorithms": {"BiCrit": B, "Gang": A, "Seq-LPTF": A, "List-MRT": A,
//! "List-wLPTF": A, "List-SAF": A}}`, each A `{"cmax", "sum_wc", "tasks": [{"start", "procs"},
//! …]}` with tasks in input order; B is an A (the schedule BiCrit returns) with three more
//! fields: `"kept"` (`"batch"` or `"compacted"`), `"batch"` and `"compacted"` (each an A: the
//! batch schedule and the best compaction by ΣωC).
//! Every schedule is validated before anything is written.

use std::io::Read;
use std::path::PathBuf;

use crate::moldable::solve::{solve, Input};
use anyhow::Context;
use clap::Args;
use esched_bicriteria::bicrit::BiCritParams;
use esched_bicriteria::makespan::Makespan;

/// `esim moldable`.
#[derive(Debug, Args)]
pub struct MoldableArgs {
    /// The instance, as JSON (stdin when absent or `-`).
    #[arg(value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Random batch orders BiCrit tries after its own (the best compact schedule by ΣωC is
    /// kept).
    #[arg(long, default_value_t = BiCritParams::default().shuffles)]
    pub shuffles: usize,
    /// Seed of the shuffles.
    #[arg(long, default_value_t = BiCritParams::default().seed)]
    pub seed: u64,
    /// The dual-approximation makespan algorithm: `mrt` (Mounié, Rapine & Trystram's two
    /// shelves, the paper's) or `canonical` (the canonical-allotment test).
    #[arg(long, default_value_t = Makespan::default())]
    pub makespan: Makespan,
    /// Indent the JSON.
    #[arg(long)]
    pub pretty: bool,
}

/// Reads the instance, solves it, prints the document.
pub fn run(args: &MoldableArgs) -> anyhow::Result<()> {
    let text = match &args.input {
        Some(p) if p.as_os_str() != "-" => {
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?
        }
        _ => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("reading stdin")?;
            s
        }
    };
    let input: Input = serde_json::from_str(&text).context("bad instance")?;
    let inst = input.instance().context("bad instance")?;
    let params = BiCritParams {
        shuffles: args.shuffles,
        seed: args.seed,
        makespan: args.makespan,
    };
    let out = solve(&inst, params)?;
    let json = if args.pretty {
        serde_json::to_string_pretty(&out)?
    } else {
        serde_json::to_string(&out)?
    };
    println!("{json}");
    Ok(())
}
