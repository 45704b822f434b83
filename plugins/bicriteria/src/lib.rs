//! # esched-bicriteria: Dutot & Eyraud's bi-criteria scheduling of moldable jobs
//!
//! P.-F. Dutot and L. Eyraud, "Bi-criteria algorithm for scheduling jobs on cluster
//! platforms", SPAA 2004: moldable tasks whose run time p_i(k) depends on
//! the k processors they get, scheduled for both the makespan Cmax (the administrators') and the
//! weighted sum of completion times ΣωC (the users').
//!
//! - [`instance`]: the offline instance (m processors, tasks with weights and p(1..m)) and its
//!   monotony check;
//! - [`schedule`]: schedules, their criteria, the validator every schedule passes, Graham's
//!   list scheduling;
//! - [`makespan`]: the dual-approximation makespan algorithm (C*max, the Cmax lower bound, the
//!   allotment of the list baselines);
//! - [`mrt`]: Mounié, Rapine & Trystram's two-shelf 3/2 + ε dual approximation, the makespan
//!   algorithm the paper names (the default; [`makespan::Makespan`] selects);
//! - [`bicrit`]: the algorithm of §3.2 (batches, merging, knapsack, leftovers, compaction,
//!   shuffles);
//! - [`policy`]: the online policy of §2.2 ([`BiCriteria`], plugin name `bicriteria`).
//!
//! The baselines, the LP lower bounds and the experiments of §4 are the lab's
//! (`esched-lab`'s `moldable` module): a daemon loads only the policy.
//!
//! docs/moldable.md gives every choice the paper leaves open and the findings checked.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod bicrit;
pub mod instance;
pub mod makespan;
pub mod mrt;
pub mod policy;
pub mod schedule;

pub use policy::BiCriteria;

sched_abi::export_policy!(BiCriteria);
