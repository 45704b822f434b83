//! # esched-cbf: conservative backfilling
//!
//! Every queued job gets a reservation in queue order, at the earliest time it fits given the
//! running jobs and the reservations of the jobs ahead of it; a later job may use any hole but
//! never delays an earlier job's reservation (Mu'alem & Feitelson's conservative backfilling,
//! the reference simulator pyss). When a job ends (before its walltime it frees
//! nodes; pyss compresses at every termination) or a queued job is cancelled, the schedule is
//! compressed in queue order and no job moves later.
//!
//! The schedule is kept between calls and updated from the difference between snapshots (see
//! [`Cbf`]), because the drivers call the policy at every arrival and every end.
//!
//! Other request kinds are planned as their rigid baseline (`Request::as_rigid`): an evolving
//! job holds its largest step's nodes for the sum of its steps. A job bound to a pool goes
//! there; any other goes to the pool where it starts earliest (ties: the lowest pool id). Jobs
//! that can never run (0 nodes, more nodes than any pool they may use, no shape, a missed
//! co-allocation deadline) are rejected with the reason.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use esched_rigid_common::book;
pub use esched_rigid_common::Counters;
use sched_core::{Changes, JobId, NamedPolicy, ParamError, Params, Plan, Policy, Snapshot, Time};

/// Conservative backfilling, stateful and incremental.
///
/// Each call diffs the snapshot against the book: running jobs that ended before their expected
/// end free the rest of their hold, reservations the driver started become running holds,
/// unknown running jobs (after a policy swap) are added, cancelled jobs are removed; then, if
/// a job ended or vanished, the schedule is compressed in queue order; new jobs at the end of
/// the queue get their earliest fit. A call costs one profile update per change plus O(q) to
/// answer, and q fit queries when it compresses (q: queued jobs; a fit query is logarithmic in
/// the profile's size when the schedule has few short holes, more on a fragmented one). When the
/// queue's order changes (an arrival ahead of queued jobs, a priority update), the schedule is
/// rebuilt from scratch in the new order, which may move jobs later than their previous
/// reservation: conservative backfilling's guarantee holds for a fixed order only.
///
/// Every queued job is placed each call; the driver starts those placed at `now`, the others'
/// starts are the expected starts `equeue --start` shows, and `wake_at` asks for a call at the
/// earliest of them, so that each job starts at its reservation even when no event happens then.
#[derive(Clone, Debug)]
pub struct Cbf {
    book: book::Book,
}

impl Default for Cbf {
    fn default() -> Self {
        Cbf {
            book: book::Book::new(false),
        }
    }
}

impl Cbf {
    /// A policy with an empty schedule.
    pub fn new() -> Self {
        Cbf::default()
    }

    /// The current reservation of a queued job, as of the last call.
    pub fn reservation(&self, job: JobId) -> Option<Time> {
        self.book.reservation(job)
    }

    /// What the schedule did so far (rebuilds, compressions): for tests and benchmarks.
    pub fn counters(&self) -> Counters {
        self.book.counters()
    }
}

impl Policy for Cbf {
    fn plan(&mut self, snapshot: &Snapshot<'_>) -> Plan {
        self.book.plan(snapshot)
    }

    /// The same book update as [`Cbf::plan`]; only the answer is smaller (the reservations
    /// starting now and the earliest other one as the wake-up), so nothing is decided
    /// differently.
    fn plan_starts(&mut self, snapshot: &Snapshot<'_>) -> Plan {
        self.book.plan_starts(snapshot)
    }

    fn recycle(&mut self, plan: Plan) {
        self.book.recycle(plan);
    }

    fn expect_changes(&mut self, changes: &Changes) {
        self.book.expect_changes(changes);
    }
}

impl NamedPolicy for Cbf {
    const NAME: &'static str = "cbf";

    fn from_params(params: &Params) -> Result<Self, ParamError> {
        params.finish()?;
        Ok(Cbf::new())
    }
}

#[cfg(test)]
mod tests;

sched_abi::export_policy!(Cbf);
