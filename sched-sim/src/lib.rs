//! # sched-sim
//!
//! The simulator behind `esim`: replays a workload through a [`sched_core::Policy`] on a
//! virtual clock, with the same contract and the same plan validator as batchd.
//!
//! - [`swf`]: the Standard Workload Format reader (plain or gzip), with the field mapping of
//!   the reference schedules so that runs compare job by job;
//! - [`engine`]: the discrete-event engine ([`Simulation`]), its per-job results and counts,
//!   and an [`Observer`] hook that sees every plan (for tests and progress bars).
//!
//! - [`coalloc`]: co-allocation with start deadlines (Ballier et al.): the `esim coalloc`
//!   driver, §3.1's workload and the experiments' statistics.
//!
//! - [`coorm`]: CooRM's simulations (Klein & Pérez, HPCC 2011 §IV): launchers in the
//!   simulator, the multi-pool resource model, workloads W0–W3, the OAR-like baseline
//!   (docs/coorm.md).
//!
//! No real processes: time is virtual, in integer milliseconds.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod coalloc;
pub mod coorm;
pub mod engine;
pub mod evolving;
pub mod swf;

pub use engine::{
    Counts, EndReason, EventOrder, JobResult, Observer, SimError, SimJob, SimResults, Simulation,
    Timing, ValidateMode,
};
pub use swf::{ReadOptions, SwfError, SwfJob, Trace};
