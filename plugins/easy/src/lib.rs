//! # esched-easy: EASY backfilling
//!
//! Jobs start in queue order while they fit now; the first one that does not fit gets a
//! reservation at its earliest fit, the only reservation; any later job starts now if it fits
//! now without delaying that reservation (Lifka's EASY scheduler, as in Mu'alem & Feitelson
//! and the reference simulator pyss). Jobs behind the first waiting one get no
//! planned start: EASY promises nothing to them.
//!
//! Other request kinds are planned as their rigid baseline (`Request::as_rigid`). A job bound
//! to a pool goes there; any other goes to the lowest-id pool where it fits now, and the first
//! waiting job to the pool where it starts earliest (ties: the lowest id). Jobs that can never
//! run (0 nodes, more nodes than any pool they may use, no shape, a missed co-allocation
//! deadline) are rejected with the reason.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use esched_rigid_common::{Cluster, Job};
use sched_core::{NamedPolicy, ParamError, Params, Placement, Plan, Policy, Snapshot, Time};

/// EASY backfilling.
///
/// Stateless between calls: each call builds one "nodes used" profile per pool from the running
/// jobs' holds (O(r log r) for r running jobs) and walks the queue once, one O(log n) fit query
/// per job, and stops looking for starts once no pool has a free node now; the queue's tail
/// is still read for jobs to reject. The first waiting job's reservation cannot move later
/// from one call to the next while it stays first: jobs started beside it fitted around it.
#[derive(Clone, Debug, Default)]
pub struct Easy;

impl Easy {
    /// The policy.
    pub fn new() -> Self {
        Easy
    }
}

impl Policy for Easy {
    fn plan(&mut self, snap: &Snapshot<'_>) -> Plan {
        let now = snap.now;
        let mut plan = Plan::default();
        let mut cluster = Cluster::new(snap.pools);
        for r in snap.running {
            cluster.add_holds(&r.holds, now, 1);
        }
        let mut head_found = false;
        let mut free = cluster.most_free_now(now);
        let mut wake: Option<Time> = None;
        let mut wake_at = |t: Time| {
            if t > now && wake.is_none_or(|w| t < w) {
                wake = Some(t);
            }
        };
        for p in snap.pending {
            let (job, options) = match Job::view(p, &cluster.pools) {
                Ok(view) => view,
                Err(refused) => {
                    plan.rejects.push(refused.reject(p.id));
                    continue;
                }
            };
            // A moldable job is seen as its option that completes earliest given the running
            // jobs and the reservation so far (the OAR rule, `Cluster::choose`): it starts now
            // only if that option starts now, else that option is the reservation.
            let job = match &options {
                Some(o) => cluster
                    .choose(o, now.max(job.earliest))
                    .map_or(job, |(chosen, _, _)| chosen),
                None => job,
            };
            if job.deadline.is_some_and(|d| d < now) {
                if let Some(refused) = job.missed_deadline(Some(now)) {
                    plan.rejects.push(refused.reject(p.id));
                }
                continue;
            }
            // Fits now: start. Behind the first waiting job this is the backfill, and the profile
            // holds that job's reservation, so a fit now cannot delay it.
            if i64::from(job.nodes) <= free {
                if let Some(i) = cluster.fits_now(&job, now) {
                    cluster.add_job(i, now, &job, now, 1);
                    free = cluster.most_free_now(now);
                    plan.placements.push(Placement {
                        job: p.id,
                        start: now,
                        shape: job.shape(cluster.pools[i].id),
                        claim_from: sched_core::RNone,
                    });
                    continue;
                }
            }
            if head_found {
                // Only a `--begin` time passing starts it without an event.
                wake_at(job.earliest);
                continue;
            }
            // The first job that cannot start now: the only reservation.
            let slot = cluster.earliest(&job, now.max(job.earliest));
            if let Some(refused) = job.missed_deadline(slot.map(|s| s.1)) {
                plan.rejects.push(refused.reject(p.id));
                continue;
            }
            head_found = true;
            // A job that fits nowhere ever (a hold that never ends) protects nothing.
            let Some((i, start)) = slot else { continue };
            if start == job.earliest {
                wake_at(start);
            }
            cluster.add_job(i, start, &job, now, 1);
            plan.placements.push(Placement {
                job: p.id,
                start,
                shape: job.shape(cluster.pools[i].id),
                claim_from: sched_core::RNone,
            });
        }
        plan.wake_at = wake.into();
        plan
    }
}

impl NamedPolicy for Easy {
    const NAME: &'static str = "easy";

    fn from_params(params: &Params) -> Result<Self, ParamError> {
        params.finish()?;
        Ok(Easy)
    }
}

#[cfg(test)]
mod tests;

sched_abi::export_policy!(Easy);
