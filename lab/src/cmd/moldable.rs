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
    let mut out = serde_json::to_value(solve(&inst, params)?)?;
    tidy_floats(&mut out);
    let json = if args.pretty {
        serde_json::to_string_pretty(&out)?
    } else {
        serde_json::to_string(&out)?
    };
    println!("{json}");
    Ok(())
}

/// Rounds every number of `v` to the nanosecond (9 decimals; times are in seconds): sums of
/// run times otherwise print their binary rounding (`3.5000000000000004` for 1.2 + 2.3), which
/// reads as a difference where there is none. The schedule was validated unrounded.
fn tidy_floats(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Number(n) if n.is_f64() => {
            if let Some(r) = n
                .as_f64()
                .map(|x| (x * 1e9).round() / 1e9)
                .and_then(serde_json::Number::from_f64)
            {
                *n = r;
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(tidy_floats),
        serde_json::Value::Object(o) => o.values_mut().for_each(tidy_floats),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn printed_numbers_lose_their_binary_rounding_only() {
        let mut v = serde_json::json!({"a": [1.2 + 2.3, 0.1 + 0.2], "b": 7, "c": 1.0 / 3.0});
        super::tidy_floats(&mut v);
        assert_eq!(v.to_string(), r#"{"a":[3.5,0.3],"b":7,"c":0.333333333}"#);
    }
}
