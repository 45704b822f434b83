//! Co-allocation with start deadlines (Ballier, Caron, Epema & Mohamed, INRIA RR-5815):
//! multi-component global jobs beside per-cluster local jobs, replayed through a policy (the
//! `rpp` plugin in esim) on a virtual clock.
//!
//! - [`trace`]: `esim coalloc`'s input (JSON, seconds as reals; docs/coalloc.md) and its checks;
//! - [`driver`]: the replay ([`replay`]), every job's fate and §2.3's metrics;
//! - [`workload`]: §3.1's synthetic workload (Realistic Synthetic Distribution of sizes,
//!   Poisson arrivals from the requested loads, exponential run times);
//! - [`experiments`]: seeds, means and confidence intervals for the §3 sweeps.

pub mod driver;
pub mod experiments;
pub mod trace;
pub mod workload;

pub use driver::{
    replay, CoallocError, CoallocOutput, CoallocRun, CoallocSummary, JobFate, JobRun, Outcome,
};
pub use trace::{
    CoallocParams, CoallocTrace, PriorityName, TraceError, TraceId, TraceJob, VictimsName,
};
pub use workload::{Rsd, WorkloadSpec};
