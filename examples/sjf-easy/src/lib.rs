//! # esched-sjf-easy: shortest job first with EASY backfilling, as a site would write it
//!
//! The queue is taken shortest requested walltime first (ties: queue order). In that order,
//! every job that fits now starts now; the first that does not gets a reservation at the
//! earliest time it fits, and later jobs still start now when they do not delay that
//! reservation (EASY's one protected job, Lifka 1995, with SJF's order instead of FCFS's).
//!
//! Each job runs as its rigid form (`Request::as_rigid`), on the pool it asks for or else on the
//! first pool. Jobs larger than their pool are rejected. Parameter `max_wait_h` (hours, default
//! none): a job waiting longer than that goes ahead of every shorter job, so long jobs cannot
//! starve.
//!
//! The whole plugin is the `impl Policy`, the `impl NamedPolicy` and the last line of this file.

use std::collections::BTreeMap;

use sched_core::time::HOUR;
use sched_core::{
    NamedPolicy, ParamError, Params, Pending, Placement, Plan, Policy, PoolId, Profile, RNone, Reject, RejectKind, Shape,
    Snapshot, Time,
};

/// Shortest job first, EASY backfilling.
#[derive(Clone, Debug, Default)]
pub struct SjfEasy {
    /// Waiting longer than this puts a job first in line.
    max_wait: Option<Time>,
}

impl SjfEasy {
    /// The queue in the order this policy serves it.
    fn order<'a>(&self, s: &Snapshot<'a>) -> Vec<&'a Pending> {
        let mut q: Vec<(usize, &Pending)> = s.pending.iter().enumerate().collect();
        let starving = |p: &Pending| self.max_wait.is_some_and(|w| s.now.saturating_sub(p.submit) > w);
        let wall = |p: &Pending| p.request.as_rigid().map_or(u64::MAX, |r| r.walltime);
        q.sort_by_key(|&(i, p)| (!starving(p), if starving(p) { 0 } else { wall(p) }, i));
        q.into_iter().map(|(_, p)| p).collect()
    }
}

impl Policy for SjfEasy {
    fn plan(&mut self, s: &Snapshot<'_>) -> Plan {
        let mut plan = Plan::default();
        let Some(first_pool) = s.pools.first().map(|p| p.id) else { return plan };
        // Nodes in use over time, per pool: the running jobs' holds, then what this plan adds.
        let mut used: BTreeMap<PoolId, Profile> = s.pools.iter().map(|p| (p.id, Profile::new())).collect();
        for h in s.running.iter().flat_map(|r| &r.holds) {
            if let Some(prof) = used.get_mut(&h.pool) {
                prof.add_steps(h.start, &h.steps, 1);
            }
        }
        let mut reserved: BTreeMap<PoolId, bool> = BTreeMap::new();
        for job in self.order(s) {
            let Some(r) = job.request.as_rigid() else {
                plan.rejects.push(Reject::other(job.id, "the request offers no shape"));
                continue;
            };
            let pool_id = r.pool.unwrap_or(first_pool);
            let (Some(pool), Some(prof)) = (s.pool(pool_id), used.get_mut(&pool_id)) else {
                plan.rejects.push(Reject::other(job.id, format!("no pool {pool_id}")));
                continue;
            };
            let cap = i64::from(pool.nodes);
            if r.nodes == 0 || i64::from(r.nodes) > cap {
                // Zero nodes is no size at all; more than the pool has, too large.
                let kind = if r.nodes == 0 { RejectKind::Other } else { RejectKind::TooLarge };
                plan.rejects.push(Reject::new(
                    job.id,
                    kind,
                    format!("asks for {} nodes, pool {} has {}", r.nodes, pool.name, pool.nodes),
                ));
                continue;
            }
            let from = s.now.max(job.earliest_start).max(job.submit);
            let limit = cap - i64::from(r.nodes);
            let start = if from == s.now && prof.max_over(s.now, s.now.saturating_add(r.walltime)) <= limit {
                Some(s.now)
            } else if !reserved.get(&pool_id).copied().unwrap_or(false) {
                // The pool's one protected job: its reservation enters the profile, so no later
                // job can start now in a way that delays it.
                reserved.insert(pool_id, true);
                prof.earliest_fit(from, r.walltime, limit)
            } else {
                None
            };
            if let Some(start) = start {
                prof.add(start, start.saturating_add(r.walltime), i64::from(r.nodes));
                plan.placements.push(Placement {
                    job: job.id,
                    start,
                    shape: Shape::rigid(pool_id, r.nodes, r.walltime),
                    claim_from: RNone,
                });
            }
        }
        // A job held back by `--begin` needs a call when it may start, even if nothing happens.
        plan.wake_at = s.pending.iter().map(|p| p.earliest_start).filter(|&t| t > s.now).min().into();
        plan
    }
}

impl NamedPolicy for SjfEasy {
    const NAME: &'static str = "sjf-easy";

    fn from_params(params: &Params) -> Result<Self, ParamError> {
        let max_wait = match params.get("max_wait_h") {
            None => None,
            Some(_) => {
                let h: f64 = params.parse_or("max_wait_h", 0.0)?;
                if !(h.is_finite() && h > 0.0) {
                    return Err(ParamError::BadValue {
                        key: "max_wait_h".into(),
                        value: h.to_string(),
                        reason: "must be a positive number of hours".into(),
                    });
                }
                Some((h * HOUR as f64) as Time)
            }
        };
        params.finish()?;
        Ok(SjfEasy { max_wait })
    }
}

sched_abi::export_policy!(SjfEasy);

#[cfg(test)]
mod tests {
    use super::*;
    use sched_core::{validate, JobId, Pool, PoolSteps, Request, Running};

    fn job(id: u64, nodes: u32, wall: u64) -> Pending {
        Pending { wants_view: false, claimed: Default::default(), id: JobId(id), user: 0, submit: 0, earliest_start: 0, priority: 0, request: Request::rigid(nodes, wall) }
    }

    #[test]
    fn shortest_first_then_backfill_without_delaying_the_reservation() {
        let pools = vec![Pool { id: PoolId(0), name: "p".into(), nodes: 10 }];
        // 6 nodes busy until t=100.
        let running = vec![Running {
            id: JobId(99),
            user: 0,
            request: Request::rigid(6, 100),
            shape: Shape::rigid(PoolId(0), 6, 100),
            start: 0,
            holds: sched_core::rvec![PoolSteps::flat(PoolId(0), 0, 100, 6)],
            killable: false,
        }];
        // Queue order: a long 4-node job, a 10-node job, a short 4-node one, a 2-node one of 200.
        let pending = vec![job(1, 4, 500), job(2, 10, 50), job(3, 4, 20), job(4, 2, 200)];
        let s = Snapshot { now: 0, pools: &pools, running: &running, pending: &pending };
        let plan = SjfEasy::default().plan(&s);
        let got: Vec<_> = plan.placements.iter().map(|p| (p.job.0, p.start)).collect();
        // SJF order: 3 (20), 2 (50), 4 (200), 1 (500). Job 3 starts; job 2 is reserved at 100;
        // job 4 would fit now but end at 200 > 100, and 2+4 nodes + job 2's 10 exceed the pool;
        // job 1 neither.
        assert_eq!(got, vec![(3, 0), (2, 100)]);
        assert_eq!(validate(&s, &plan), Ok(()));
    }

    #[test]
    fn max_wait_puts_a_starving_job_first_and_bad_values_name_the_key() {
        let p = SjfEasy::from_params(&Params::from_pairs([("max_wait_h", "1")])).unwrap();
        let pools = vec![Pool { id: PoolId(0), name: "p".into(), nodes: 4 }];
        let pending = vec![job(1, 4, 10 * HOUR), job(2, 4, 60)];
        let s = Snapshot { now: 2 * HOUR, pools: &pools, running: &[], pending: &pending };
        assert_eq!(p.order(&s).iter().map(|j| j.id.0).collect::<Vec<_>>(), vec![1, 2]);
        let e = SjfEasy::from_params(&Params::from_pairs([("max_wait_h", "-2")])).unwrap_err();
        assert!(e.to_string().contains("`max_wait_h`"), "{e}");
        let e = SjfEasy::from_params(&Params::from_pairs([("max_wait", "2")])).unwrap_err();
        assert!(e.to_string().contains("unknown parameter `max_wait`"), "{e}");
    }
}
