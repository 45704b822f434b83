//! # sched-sim
//!
//! The simulator behind `esim`: replays a workload through a [`sched_core::Policy`] on a
//! virtual clock, with the same contract and the same plan validator as batchd.
//!
//! - [`swf`]: the Standard Workload Format reader (plain or gzip), with the field mapping of
//!   the reference schedules so that runs compare job by job;
//! - [`engine`]: the discrete-event engine ([`Simulation`]), its per-job results and counts,
//!   and an [`Observer`] hook that sees every plan (for tests and progress bars);
//! - [`whatif`]: a daemon's snapshot file (`econtrol snapshot`) and its replay through a policy
//!   with no new arrivals (`esim whatif`, `econtrol whatif`).
//!
//! The papers' own simulators (co-allocation, CooRM, the evolving experiment) are the lab's
//! (`esched-lab`): this crate depends on no policy.
//!
//! No real processes: time is virtual, in integer milliseconds.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod engine;
pub mod swf;
pub mod whatif;

pub use engine::{
    Counts, EndReason, EventOrder, JobResult, Observer, SimError, SimJob, SimResults, Simulation,
    Timing, ValidateMode,
};
pub use swf::{ReadOptions, SwfError, SwfJob, Trace};
