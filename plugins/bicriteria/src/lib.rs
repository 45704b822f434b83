//! # esched-bicriteria: Dutot & Eyraud's bi-criteria scheduling of moldable jobs
//!
//! P.-F. Dutot and L. Eyraud, "Bi-criteria algorithm for scheduling jobs on cluster
//! platforms", SPAA 2004 (`shared/seeds/002`): moldable tasks whose run time p_i(k) depends on
//! the k processors they get, scheduled for both the makespan Cmax (the administrators') and the
//! weighted sum of completion times ΣωC (the users').
//!
//! - [`instance`]: the offline instance (m processors, tasks with weights and p(1..m)) and its
//!   monotony check;
//! - [`schedule`]: schedules, their criteria, the validator every schedule passes, Graham's
//!   list scheduling;
//! - [`makespan`]: the dual-approximation makespan algorithm (C*max, the Cmax lower bound, the
//!   allotment of the list baselines);
//! - [`bicrit`]: the algorithm of §3.2 (batches, merging, knapsack, leftovers, compaction,
//!   shuffles);
//! - [`baselines`]: Gang, Seq-LPTF, List-MRT, List-wLPTF, List-SAF (§4.1);
//! - [`bounds`]: the lower bounds of §3.3, the LP as printed and corrected;
//! - [`solve`]: everything on one instance at once (what `esim moldable` prints);
//! - [`experiment`]: the instance generators and the runs of §4, tables and SVG plots;
//! - [`policy`]: the online policy of §2.2 ([`BiCriteria`], plugin name `bicriteria`).
//!
//! docs/moldable.md gives every choice the paper leaves open and the findings checked.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod baselines;
pub mod bicrit;
pub mod bounds;
pub mod experiment;
pub mod instance;
pub mod makespan;
pub mod policy;
pub mod schedule;
pub mod solve;

pub use policy::BiCriteria;

sched_abi::export_policy!(BiCriteria);
