//! # esched-coorm: the CooRM policy
//!
//! Klein & Pérez, *An RMS Architecture for Efficiently Supporting Complex-Moldable
//! Applications* (HPCC 2011): applications choose their resources themselves, through a
//! launcher, from a **view** the RMS sends them, one Cluster Availability Profile (CAP) per pool.
//! This crate is the "simple RMS policy" of §III-C:
//!
//! > for each waiting application, ordered by the time-stamps of their `subscribe` messages,
//! > 1) set the view of the current application to the current profiles; 2) find the first
//! > "hole" where its request fits and store the found start-time; 3) update the profiles to
//! > reflect the allocation of resources to this application.
//!
//! - [`pass`]: that loop, over per-pool "nodes used" profiles built afresh from the running
//!   jobs at each call (the paper re-runs it from scratch at every re-policy interval), with
//!   a hook that lets an in-process launcher answer its view before the loop moves on (what
//!   esim's instant launchers are), and the OAR-like moldable choice of the baseline of §IV-A;
//! - [`select`]: the selections a launcher runs on its view (the earliest-completing
//!   configuration of a list), the same arithmetic as the policy's, so that CooRM and the
//!   OAR-like baseline give the same starts;
//! - [`Coorm`]: the policy behind the plugin ABI.
//!
//! Choices the paper leaves open (see also `docs/coorm.md`):
//! - the queue order is the driver's (a launcher's priority is its subscribe time, kept across
//!   request updates); rigid jobs without launcher are planned as cbf plans them (their pool
//!   is the one where they start earliest, ties to the lowest id), in the same loop;
//! - a CooRM request is `Request::CoAllocated` with every component on a fixed pool and no
//!   deadline; a launcher with no request yet has **no components**: it gets its view at its
//!   rank and reserves nothing;
//! - requests never fail (§III-A): one that asks more of a pool than the pool has gets an
//!   infinite start: no placement and no reject (footnote 4);
//! - the **fair-start** delay is a driver matter: the driver keeps a finished job's nodes held
//!   (in the snapshot's running holds) until `done + fair-start`, so the policy needs nothing.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod pass;
pub mod select;

use sched_core::{NamedPolicy, ParamError, Params, Plan, Policy, Snapshot};

pub use pass::{Ask, Config, Counters, Entry, Outcome, Planned};

/// The CooRM policy (§III-C), stateless: each call rebuilds the profiles from the running jobs
/// and walks the queue in order; the views of the jobs that want one are filled on the way.
#[derive(Clone, Debug, Default)]
pub struct Coorm {
    counters: Counters,
}

impl Coorm {
    /// A new policy.
    pub fn new() -> Self {
        Coorm::default()
    }

    /// What the calls so far did (views built, configurations enumerated), for tests and
    /// measurements.
    pub fn counters(&self) -> Counters {
        self.counters
    }
}

impl Policy for Coorm {
    fn plan(&mut self, snapshot: &Snapshot<'_>) -> Plan {
        let entries: Vec<Entry> = snapshot
            .pending
            .iter()
            .map(|p| Entry::of(p, snapshot.pools))
            .collect();
        let out = pass::pass(snapshot, &entries, |_, _| None);
        self.counters.add(&out.counters);
        out.plan
    }
}

impl NamedPolicy for Coorm {
    const NAME: &'static str = "coorm";

    fn from_params(params: &Params) -> Result<Self, ParamError> {
        params.finish()?;
        Ok(Coorm::new())
    }
}

#[cfg(test)]
mod tests;

sched_abi::export_policy!(Coorm);
