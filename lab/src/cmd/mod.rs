//! esim's paper subcommands: their arguments (clap `Args`, mounted in esim's command line)
//! and what each runs.
//!
//! A command that takes a policy by name gets it from the tool that mounts it ([`Policies`]):
//! the tool knows which policies it ships and where their plugin libraries are.

use sched_abi::PolicyHost;
use sched_core::Params;

pub mod coalloc;
pub mod coalloc_experiments;
pub mod coorm_experiments;
pub mod coorm_validation;
pub mod moldable;
pub mod moldable_experiments;
pub mod moldable_online;
pub mod schedule;
pub mod svg;
pub mod tables;

/// Where the lab's commands get a policy by name.
pub trait Policies {
    /// The policy `spec` (a name or a library path) built with `params`, under sched-abi's
    /// containment: its plugin library, or, when `linked`, the copy linked into the tool.
    fn hosted(&self, spec: &str, params: &Params, linked: bool) -> anyhow::Result<PolicyHost>;
}

/// The `results.json` that command `what` wrote in `out`, read back for `--replot`.
fn read_results<T: serde::de::DeserializeOwned>(
    out: &std::path::Path,
    what: &str,
) -> anyhow::Result<T> {
    use anyhow::Context;
    let path = out.join("results.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{}: not the results.json of esim {what}", path.display()))
}
