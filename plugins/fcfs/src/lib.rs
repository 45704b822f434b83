//! # esched-fcfs: first come, first served
//!
//! Jobs start in queue order: a job never starts before the one ahead of it, so its planned
//! start is the earliest fit at or after `max(now, start of the job ahead)`. Every queued job's
//! planned start is returned each call (what `equeue --start` shows); the driver starts those
//! planned at `now`.
//!
//! Other request kinds are planned as their rigid baseline (`Request::as_rigid`). A job bound
//! to a pool goes there; any other goes to the pool where it starts earliest (ties: the lowest
//! id). Jobs that can never run (0 nodes, more nodes than any pool they may use, no shape, a
//! missed co-allocation deadline) are rejected with the reason.
#![deny(missing_docs)]

use esched_rigid_common::book;
pub use esched_rigid_common::Counters;
use sched_core::{JobId, NamedPolicy, ParamError, Params, Plan, Policy, Snapshot, Time};

/// First come, first served, with the whole planned schedule kept between calls.
///
/// It is the conservative-backfilling book of the cbf crate with one more constraint, so it
/// shares that code: a job's planned start is never before the planned start of the job ahead.
/// An arrival costs one fit query; a start costs one profile update; an end or a cancellation
/// recomputes the planned starts in queue order, but stops at the first job that did not move
/// and starts after every changed interval, since nothing behind it can move either (an end at
/// the expected time stops at the first job); answering costs O(q) for the q placements
/// returned. A queue reordering (priorities) rebuilds the plan from scratch, q fit queries.
#[derive(Clone, Debug)]
pub struct Fcfs {
    book: book::Book,
}

impl Default for Fcfs {
    fn default() -> Self {
        Fcfs {
            book: book::Book::new(true),
        }
    }
}

impl Fcfs {
    /// A policy with an empty schedule.
    pub fn new() -> Self {
        Fcfs::default()
    }

    /// The planned start of a queued job, as of the last call.
    pub fn planned_start(&self, job: JobId) -> Option<Time> {
        self.book.reservation(job)
    }

    /// What the schedule did so far: for tests and benchmarks.
    pub fn counters(&self) -> Counters {
        self.book.counters()
    }
}

impl Policy for Fcfs {
    fn plan(&mut self, snapshot: &Snapshot<'_>) -> Plan {
        self.book.plan(snapshot)
    }
}

impl NamedPolicy for Fcfs {
    const NAME: &'static str = "fcfs";

    fn from_params(params: &Params) -> Result<Self, ParamError> {
        params.finish()?;
        Ok(Fcfs::new())
    }
}

#[cfg(test)]
mod tests;

sched_abi::export_policy!(Fcfs);
