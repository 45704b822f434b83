//! Dutot & Eyraud's moldable scheduling (SPAA 2004) beyond the policy itself: the instance,
//! schedules, the dual approximation and BiCrit are `esched_bicriteria`'s (what the online
//! policy runs); these are what only the experiments need.
//!
//! - [`baselines`]: Gang, Seq-LPTF, List-MRT, List-wLPTF, List-SAF (§4.1);
//! - [`bounds`]: the lower bounds of §3.3, the LP as printed and corrected;
//! - [`solve`]: everything on one instance at once (what `esim moldable` prints);
//! - [`experiment`]: the instance generators and the runs of §4, tables and SVG plots;
//! - [`online`]: the online experiment (§2.2) on a real trace made moldable.
//!
//! docs/moldable.md gives every choice the paper leaves open and the findings checked.

pub mod baselines;
pub mod bounds;
pub mod experiment;
pub mod online;
pub mod solve;

/// Instances built in one line for the unit tests.
#[cfg(test)]
pub(crate) mod testkit {
    use esched_bicriteria::instance::{Instance, Task};

    /// `m` processors and tasks given as `(ω, [p(1), …])`.
    pub(crate) fn weighted(m: usize, tasks: &[(f64, &[f64])]) -> Instance {
        let tasks = tasks
            .iter()
            .map(|&(w, p)| Task { w, p: p.to_vec() })
            .collect();
        Instance::new(m, tasks).expect("a valid test instance")
    }
}
