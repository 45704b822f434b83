//! `esim coalloc`: one co-allocation trace in (JSON, docs/coalloc.md), every job's fate out.
//!
//! The policy is the `rpp` plugin, loaded like `esim run` loads policies (or linked in with
//! `--linked`), built from the trace's `params`; the replay is the lab's co-allocation
//! driver, which validates every plan.

use std::io::Read;
use std::path::PathBuf;

use crate::coalloc::{replay, CoallocTrace};
use anyhow::Context;
use clap::Args;

use super::Policies;

/// `esim coalloc`.
#[derive(Debug, Args)]
pub struct CoallocArgs {
    /// The trace: `{"params": {...}, "jobs": [...]}` (docs/coalloc.md); `-` reads stdin.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// The policy: a name or a library path; it gets the trace's params as `lp`, `wait`,
    /// `priority`, `max_tries`.
    #[arg(long, default_value = "rpp")]
    pub policy: String,
    /// Use the policy linked into esim instead of loading its plugin library.
    #[arg(long)]
    pub linked: bool,
    /// One line of JSON instead of indented JSON.
    #[arg(long)]
    pub compact: bool,
}

/// Reads the trace at `path` (`-`: stdin).
pub fn read_trace(path: &std::path::Path) -> anyhow::Result<CoallocTrace> {
    let text = if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading the trace from stdin")?;
        s
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
    };
    serde_json::from_str(&text)
        .with_context(|| format!("{}: not a co-allocation trace", path.display()))
}

/// Runs `esim coalloc`.
pub fn run(args: &CoallocArgs, policies: &dyn Policies) -> anyhow::Result<()> {
    let trace = read_trace(&args.trace)?;
    trace.check()?;
    let params = trace.params.policy_params();
    let mut host = policies.hosted(&args.policy, &params, args.linked)?;
    let run = replay(&trace, &mut host)?;
    let out = run.output();
    let text = if args.compact {
        serde_json::to_string(&out)?
    } else {
        serde_json::to_string_pretty(&out)?
    };
    println!("{text}");
    Ok(())
}
