//! CooRM's simulations (Klein & Pérez, HPCC 2011 §IV): launchers inside the simulator, the
//! resource model of §IV-A, workloads W0–W3 built from an SWF trace, and the OAR-like baseline.
//!
//! - [`platform`]: n_C pools of n_H hosts, pool i `1 + 0.1 (i − 1)` times faster, a
//!   hierarchical WAN latency model;
//! - [`workload`]: packs of consecutive trace jobs turned into rigid, simple-moldable (Amdahl)
//!   and CEM applications (W0–W3), one arrival per second;
//! - [`cem`]: the CEM-like performance model and its launcher's selection on a view;
//! - [`driver`]: the discrete-event run of a workload under CooRM (launchers answering views,
//!   instantly or after an adaptation delay) or the OAR-like baseline (the RMS chooses among
//!   enumerated configurations), with the re-policy interval, the fair-start delay, and the
//!   metrics of Fig. 6 (computed configurations, messages as JSON and CDR-like bytes);
//! - [`messages`]: the protocol messages of §III-B and their sizes.
//!
//! Both systems run the same policy loop, `esched_coorm::pass`, linked in and called directly,
//! not through sched-abi's `PolicyHost`: the host's contract is one snapshot in, one plan out,
//! validated before the driver acts on any of it, whereas a CooRM pass is a session. Its hook
//! hands each application's view to that application's launcher in the middle of the pass, an
//! instant launcher answers with a new request there and then (the simulated time does not
//! advance, §IV-A), and the entries after it are planned on profiles that already hold the
//! answer. No plan exists before the launchers have acted on their views. The OAR-like
//! baseline needs no hook, but it runs the same loop so that both systems are measured alike,
//! and Fig. 6's computed configurations are the pass's counters, which a plan does not carry.
//! The real-batchd side of `coorm-validation` runs the plugin through batchd's host.

pub mod cem;
pub mod driver;
pub mod messages;
pub mod platform;
pub mod workload;

pub use driver::{run, AppResult, Mode, RunParams, RunStats};
pub use platform::Platform;
pub use workload::{App, Kind, WorkloadKind};

#[cfg(test)]
mod tests;
