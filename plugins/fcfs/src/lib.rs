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
#![forbid(unsafe_code)]

pub use esched_rigid_common::Counters;
use esched_rigid_common::{book, Cluster, Job};
use sched_core::{
    JobId, NamedPolicy, ParamError, Params, Placement, Plan, Policy, Request, Snapshot, Time,
};

/// First come, first served, with the whole planned schedule kept between calls.
///
/// It is the conservative-backfilling book of the cbf crate with one more constraint, so it
/// shares that code: a job's planned start is never before the planned start of the job ahead.
/// An arrival costs one fit query; a start costs one profile update; an end or a cancellation
/// recomputes the planned starts in queue order, but stops at the first job that did not move
/// and starts after every changed interval, since nothing behind it can move either (an end at
/// the expected time stops at the first job); answering costs O(q) for the q placements
/// returned. A queue reordering (priorities) rebuilds the plan from scratch, q fit queries.
///
/// Asked only for what starts now ([`Policy::plan_starts`], esim's replays), it keeps no book:
/// the jobs that start now are the queue's head while each fits now behind the ones before it,
/// and the first that does not is the only expected start the driver needs (as a wake-up).
/// That is one fit per started job plus one, against a whole-queue answer per call (a replay
/// of a long FCFS queue spent most of its time planning and validating starts nobody used).
#[derive(Clone, Debug)]
pub struct Fcfs {
    book: book::Book,
    /// The book missed calls answered by [`Fcfs::starts_now`]: rebuild it before using it.
    stale: bool,
}

impl Default for Fcfs {
    fn default() -> Self {
        Fcfs {
            book: book::Book::new(true),
            stale: false,
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
        if std::mem::take(&mut self.stale) {
            self.book = book::Book::new(true);
        }
        self.book.plan(snapshot)
    }

    fn plan_starts(&mut self, snapshot: &Snapshot<'_>) -> Plan {
        match starts_now(snapshot) {
            Some(plan) => {
                self.stale = true;
                plan
            }
            // A co-allocation deadline is judged against a job's planned start however deep in
            // the queue it is, which only the whole plan knows.
            None => self.plan(snapshot).starts_only(snapshot.now),
        }
    }
}

/// The FCFS plan's starts at `now`, its rejects, and its earliest expected start as the
/// wake-up, without the rest of the plan.
///
/// The book plans each job at its earliest fit no earlier than the job ahead, in queue order,
/// among the running jobs and the jobs ahead only (its in-order compression lifts the jobs
/// behind). So a job starts now exactly when every valid job ahead of it starts now and it fits
/// now in the profile of the running jobs and those; the first that does not has the earliest
/// expected start of all, since the starts of the jobs behind it are no earlier. Pool choice
/// and rejects are the book's (`Cluster::earliest`, `Job::of`). `None` when a job has a
/// co-allocation deadline.
///
/// Behind the first job that waits, only rejects are looked for: the plain rigid requests
/// that [`Job::of`] surely accepts are passed over without building their view, so that a long
/// queue costs a glance per job per call.
fn starts_now(snap: &Snapshot<'_>) -> Option<Plan> {
    let now = snap.now;
    let mut plan = Plan::default();
    let mut cluster = Cluster::new(snap.pools);
    for r in snap.running {
        cluster.add_holds(&r.holds, now, 1);
    }
    let largest = snap.pools.iter().map(|p| p.nodes).max().unwrap_or(0);
    let mut blocked = false;
    for p in snap.pending {
        match &p.request {
            Request::Rigid(r)
                if blocked && r.pool.is_none() && (1..=largest).contains(&r.nodes) =>
            {
                continue
            }
            Request::CoAllocated(c) if c.deadline.is_some() => return None,
            _ => {}
        }
        let (job, options) = match Job::view(p, &cluster.pools) {
            Ok(view) => view,
            Err(refused) => {
                plan.rejects.push(refused.reject(p.id));
                continue;
            }
        };
        if blocked {
            continue;
        }
        // A moldable job's configuration is the book's: the earliest completion from here
        // (the jobs ahead all start now), `Cluster::choose`.
        match cluster.place(&job, options.as_deref(), now.max(job.earliest)) {
            Some((job, i, start)) if start <= now => {
                cluster.add_job(i, now, &job, now, 1);
                plan.placements.push(Placement {
                    job: p.id,
                    start: now,
                    shape: job.shape(cluster.pools[i].id),
                    claim_from: sched_core::RNone,
                });
            }
            slot => {
                let slot = slot.map(|(_, i, start)| (i, start));
                // Nothing behind starts before it; a job that never fits (a hold that never
                // ends) blocks the queue for good, with no wake-up.
                blocked = true;
                plan.wake_at = slot.map(|(_, start)| start).into();
            }
        }
    }
    Some(plan)
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
