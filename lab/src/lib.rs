//! # esched-lab: the papers' experiments
//!
//! Everything esched does to reproduce the papers it implements, kept apart from the product
//! crates (batchd, the policies a daemon loads, sched-sim's engine and trace readers):
//!
//! - [`coalloc`]: co-allocation with start deadlines (Ballier et al.): the `esim coalloc`
//!   driver, §3.1's workload and the experiments' statistics;
//! - [`coorm`]: CooRM's simulations (Klein & Pérez, HPCC 2011 §IV): launchers in the
//!   simulator, the multi-pool resource model, workloads W0–W3, the OAR-like baseline
//!   (docs/coorm.md);
//! - [`evolving`]: Klein & Pérez's offline experiment with evolving applications (Euro-Par
//!   2011 §5): workload, runs and Tables 1–2;
//! - [`moldable`]: Dutot & Eyraud's moldable scheduling (SPAA 2004): the baselines, the LP
//!   lower bounds, and the offline experiments of §4 with their tables and SVG plots;
//! - [`cmd`]: esim's paper subcommands (`evolving-tables`, `schedule`, `moldable`,
//!   `moldable-experiments`, `coalloc`, `coalloc-experiments`, `coorm-experiments`,
//!   `coorm-validation`), which esim mounts in its command line.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod cmd;
pub mod coalloc;
pub mod coorm;
pub mod evolving;
pub mod measure;
pub mod moldable;
