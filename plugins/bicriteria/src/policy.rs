//! The online policy (Dutot & Eyraud §2.2): "jobs are scheduled by batches depending on their
//! arrival time; an arriving job is scheduled in the next starting batch".
//!
//! Per pool, the policy keeps the **current batch**: the jobs that were waiting when it began,
//! each with the configuration BiCrit chose and its rank in BiCrit's compaction list. While any
//! of them is pending or running, jobs that arrive wait (no placement) for the next batch. When
//! the last of them has ended, the next batch begins with every job then waiting: BiCrit runs
//! on them as an offline instance (m = the pool's nodes, p(k) = the shortest walltime among the
//! job's configurations of at most k nodes, ω = the job's weight, 1 for rigid jobs).
//!
//! At every call, the batch's pending jobs are list-scheduled again in BiCrit's order with
//! their chosen configurations, around what is running now (its holds until the expected
//! ends): that is §3.2's compaction done online, so a job that ends before its walltime lets
//! the rest of its batch start earlier, and a job from before a policy swap only delays the
//! batch. C*max, K and the t_j are recomputed for each batch from its own jobs; nothing of a
//! batch is changed by later arrivals.
//!
//! What is left of the guarantee: §2.2's argument turns a ρ-approximation per batch into a
//! 2ρ-competitive online algorithm for Cmax; BiCrit has no proven ρ (the paper says so, §3.1),
//! so neither has this policy. A rigid job is a moldable job with one configuration; other
//! request kinds are refused with the reason, as are jobs larger than their pool.

use std::collections::{BTreeMap, BTreeSet};

use sched_core::{
    JobId, NamedPolicy, ParamError, Params, Pending, Placement, Plan, Policy, PoolId, RSome,
    Reject, RejectKind, Request, Running, Shape, Snapshot, Time,
};

use crate::bicrit::{bicrit, compaction_list, BiCritParams};
use crate::instance::{Instance, Task};
use crate::schedule::{list_schedule_from, Rigid};

/// A job of the current batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Member {
    job: JobId,
    /// Nodes of the chosen configuration.
    nodes: u32,
    /// Its walltime.
    walltime: u64,
}

/// The bi-criteria policy, stateful: one current batch per pool.
#[derive(Clone, Debug, Default)]
pub struct BiCriteria {
    params: BiCritParams,
    /// Per pool, the current batch in BiCrit's compaction order.
    batches: BTreeMap<PoolId, Vec<Member>>,
}

impl BiCriteria {
    /// A policy with these BiCrit parameters.
    pub fn new(params: BiCritParams) -> Self {
        BiCriteria {
            params,
            batches: BTreeMap::new(),
        }
    }
}

impl NamedPolicy for BiCriteria {
    const NAME: &'static str = "bicriteria";

    fn from_params(params: &Params) -> Result<Self, ParamError> {
        let d = BiCritParams::default();
        let p = BiCritParams {
            shuffles: params.parse_or("shuffles", d.shuffles)?,
            seed: params.parse_or("seed", d.seed)?,
            makespan: params.parse_or("makespan", d.makespan)?,
        };
        params.finish()?;
        Ok(BiCriteria::new(p))
    }
}

/// A waiting job with the configurations it offers, `(nodes, walltime)`.
type Offer<'a> = (&'a Pending, Vec<(u32, u64)>);

/// The configurations a job offers, `(nodes, walltime)`, or why it is refused.
fn configs(p: &Pending) -> Result<Vec<(u32, u64)>, String> {
    match &p.request {
        Request::Rigid(r) => Ok(vec![(r.nodes, r.walltime)]),
        // One walltime per node count: the one the contract allows (`walltime_on`: the first
        // explicit configuration of that count, else the model's).
        Request::Moldable(m) => {
            let mut seen = BTreeSet::new();
            Ok(m.choices()
                .into_iter()
                .filter(|c| seen.insert(c.nodes))
                .map(|c| (c.nodes, c.walltime))
                .collect())
        }
        other => Err(format!(
            "bicriteria schedules rigid and moldable jobs, not {}",
            other.kind()
        )),
    }
}

fn weight(p: &Pending) -> f64 {
    match &p.request {
        Request::Moldable(m) if m.weight.is_finite() && m.weight >= 0.0 => m.weight,
        _ => 1.0,
    }
}

/// Nodes of `pool` that `r` holds from now on, with the expected end (relative to `now`).
fn held(r: &Running, pool: PoolId, now: Time) -> Option<(f64, usize)> {
    let nodes: u32 = r
        .holds
        .iter()
        .filter(|h| h.pool == pool)
        .map(|h| h.steps.iter().map(|s| s.nodes).max().unwrap_or(0))
        .sum();
    let end = r
        .holds
        .iter()
        .filter(|h| h.pool == pool)
        .map(|h| h.end())
        .max()?;
    (nodes > 0 && end > now).then(|| ((end - now) as f64, nodes as usize))
}

impl BiCriteria {
    /// Forms a new batch on `pool` (`m` nodes) from `jobs` with their configurations: BiCrit
    /// with times in milliseconds (integers, so every sum is exact in f64).
    fn new_batch(&self, m: u32, jobs: &[Offer<'_>]) -> Vec<Member> {
        let m_us = m as usize;
        // For each job and k: the best configuration of at most k nodes.
        let mut best: Vec<Vec<Option<(u32, u64)>>> = Vec::with_capacity(jobs.len());
        let mut tasks = Vec::with_capacity(jobs.len());
        for (p, cfgs) in jobs {
            let mut row: Vec<Option<(u32, u64)>> = vec![None; m_us];
            for &(n, w) in cfgs {
                if n >= 1 && n <= m {
                    let slot = &mut row[n as usize - 1];
                    if slot.is_none_or(|(_, w0)| w < w0) {
                        *slot = Some((n, w));
                    }
                }
            }
            for k in 1..m_us {
                if let (Some((_, wp)), cur) = (row[k - 1], row[k]) {
                    if cur.is_none_or(|(_, w)| wp <= w) {
                        row[k] = row[k - 1];
                    }
                }
            }
            tasks.push(Task {
                w: weight(p),
                // A zero walltime would be a zero-length task; 1 ms keeps times positive.
                p: row
                    .iter()
                    .map(|c| c.map_or(f64::INFINITY, |(_, w)| w.max(1) as f64))
                    .collect(),
            });
            best.push(row);
        }
        let inst = Instance::from_configs(m_us, tasks);
        let run = bicrit(&inst, self.params);
        compaction_list(&inst, &run.batches, &run.batch_order)
            .into_iter()
            .filter_map(|r| {
                let (nodes, walltime) = best[r.task][r.procs - 1]?;
                Some(Member {
                    job: jobs[r.task].0.id,
                    nodes,
                    walltime,
                })
            })
            .collect()
    }
}

impl Policy for BiCriteria {
    fn plan(&mut self, snap: &Snapshot<'_>) -> Plan {
        let mut plan = Plan::default();
        let Some(largest) = snap
            .pools
            .iter()
            .max_by_key(|p| (p.nodes, std::cmp::Reverse(p.id)))
        else {
            plan.rejects = snap
                .pending
                .iter()
                .map(|p| Reject::other(p.id, "no pool"))
                .collect();
            return plan;
        };
        let pending: BTreeMap<JobId, &Pending> = snap.pending.iter().map(|p| (p.id, p)).collect();
        let running: BTreeSet<JobId> = snap.running.iter().map(|r| r.id).collect();
        // Waiting jobs by pool, with their configurations; refusals.
        let mut waiting: BTreeMap<PoolId, Vec<Offer<'_>>> = BTreeMap::new();
        for p in snap.pending {
            let pool_id = p.request.pool().unwrap_or(largest.id);
            let Some(pool) = snap.pool(pool_id) else {
                plan.rejects.push(Reject::other(
                    p.id,
                    format!("pool {} does not exist", pool_id.0),
                ));
                continue;
            };
            match configs(p) {
                Err(reason) => plan.rejects.push(Reject::other(p.id, reason)),
                Ok(c) if !c.iter().any(|&(n, _)| n >= 1 && n <= pool.nodes) => {
                    plan.rejects.push(Reject::new(
                        p.id,
                        RejectKind::TooLarge,
                        format!(
                            "no configuration fits pool {} ({} nodes)",
                            pool.name, pool.nodes
                        ),
                    ))
                }
                Ok(c) => waiting.entry(pool_id).or_default().push((p, c)),
            }
        }
        self.batches.retain(|id, _| snap.pool(*id).is_some());
        for pool in snap.pools {
            let empty = {
                let batch = self.batches.entry(pool.id).or_default();
                // Members that ended or were cancelled leave the batch.
                batch.retain(|mb| pending.contains_key(&mb.job) || running.contains(&mb.job));
                batch.is_empty()
            };
            if empty {
                // §2.2: the next batch starts with every job waiting now (and allowed to start).
                let jobs: Vec<_> = waiting
                    .remove(&pool.id)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|(p, _)| p.earliest_start <= snap.now)
                    .collect();
                if !jobs.is_empty() {
                    let b = self.new_batch(pool.nodes, &jobs);
                    self.batches.insert(pool.id, b);
                }
            }
            let batch = &self.batches[&pool.id];
            let busy: Vec<(f64, usize)> = snap
                .running
                .iter()
                .filter_map(|r| held(r, pool.id, snap.now))
                .collect();
            let list: Vec<(Member, Rigid)> = batch
                .iter()
                .filter(|mb| pending.contains_key(&mb.job))
                .enumerate()
                .map(|(i, &mb)| {
                    (
                        mb,
                        Rigid {
                            task: i,
                            procs: mb.nodes as usize,
                            dur: mb.walltime as f64,
                        },
                    )
                })
                .collect();
            let rigid: Vec<Rigid> = list.iter().map(|(_, r)| *r).collect();
            let starts = list_schedule_from(pool.nodes as usize, &busy, &rigid);
            for ((mb, _), s) in list.iter().zip(starts) {
                if !s.is_finite() {
                    continue;
                }
                let start = snap.now + s as u64;
                let shape = match &pending[&mb.job].request {
                    Request::Moldable(_) => Shape::Moldable {
                        pool: pool.id,
                        nodes: mb.nodes,
                        walltime: mb.walltime,
                    },
                    _ => Shape::rigid(pool.id, mb.nodes, mb.walltime),
                };
                if start > snap.now {
                    plan.wake_at = RSome(plan.wake_at.map_or(start, |w: Time| w.min(start)));
                }
                plan.placements.push(Placement {
                    job: mb.job,
                    start,
                    shape,
                    claim_from: sched_core::RNone,
                });
            }
        }
        // Jobs waiting for a later --begin are called back then.
        for p in snap.pending {
            if p.earliest_start > snap.now {
                let t = p.earliest_start;
                plan.wake_at = RSome(plan.wake_at.map_or(t, |w: Time| w.min(t)));
            }
        }
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sched_core::testkit::{pending_rigid, pools};
    use sched_core::validate;

    fn moldable(id: u64, submit: Time, weight: f64, cfgs: &[(u32, u64)]) -> Pending {
        Pending {
            wants_view: false,
            claimed: Default::default(),
            id: JobId(id),
            user: 0,
            submit,
            earliest_start: submit,
            priority: 0,
            request: Request::moldable(cfgs, weight),
        }
    }

    #[test]
    fn a_job_arriving_during_a_batch_waits_for_the_next() {
        let pools = pools(&[8]);
        let mut pol = BiCriteria::default();
        let a = moldable(1, 0, 1.0, &[(4, 30_000), (8, 17_000)]);
        let snap = Snapshot {
            now: 0,
            pools: &pools,
            running: &[],
            pending: std::slice::from_ref(&a),
        };
        let plan = pol.plan(&snap);
        validate(&snap, &plan).unwrap();
        assert_eq!(plan.placements.len(), 1);
        let pl = &plan.placements[0];
        assert_eq!(pl.start, 0);
        let Shape::Moldable {
            nodes, walltime, ..
        } = pl.shape
        else {
            panic!("{:?}", pl.shape)
        };
        // Alone, the job gets the configuration that ends first.
        assert_eq!((nodes, walltime), (8, 17_000));
        // It runs; a rigid job arrives at 1 s: it waits (no placement) until job 1 ends.
        let run = sched_core::Running {
            id: JobId(1),
            user: 0,
            request: a.request.clone(),
            shape: pl.shape.clone(),
            start: 0,
            holds: pl.shape.holds(&a.request, 0).into(),
            killable: false,
        };
        let mut b = pending_rigid(2, 2, 5_000);
        b.submit = 1_000;
        b.earliest_start = 1_000;
        let running = [run];
        let snap = Snapshot {
            now: 1_000,
            pools: &pools,
            running: &running,
            pending: std::slice::from_ref(&b),
        };
        let plan = pol.plan(&snap);
        validate(&snap, &plan).unwrap();
        assert!(plan.placements.is_empty(), "{plan:?}");
        // Job 1 ended: the next batch takes job 2.
        let snap = Snapshot {
            now: 17_000,
            pools: &pools,
            running: &[],
            pending: std::slice::from_ref(&b),
        };
        let plan = pol.plan(&snap);
        validate(&snap, &plan).unwrap();
        assert_eq!(plan.placements[0].start, 17_000);
    }

    #[test]
    fn refuses_what_it_cannot_run() {
        let pools = pools(&[4]);
        let mut pol = BiCriteria::default();
        let jobs = [
            pending_rigid(1, 5, 1_000),
            moldable(2, 0, 1.0, &[(8, 1_000)]),
            Pending {
                wants_view: false,
                claimed: Default::default(),
                request: Request::evolving(vec![sched_core::Step::new(10, 1)]),
                ..pending_rigid(3, 1, 1)
            },
        ];
        let snap = Snapshot {
            now: 0,
            pools: &pools,
            running: &[],
            pending: &jobs,
        };
        let plan = pol.plan(&snap);
        validate(&snap, &plan).unwrap();
        assert_eq!(plan.rejects.len(), 3, "{plan:?}");
        assert!(BiCriteria::from_params(&Params::from_pairs([("shufles", "1")])).is_err());
        let p = BiCriteria::from_params(&Params::from_pairs([("makespan", "canonical")])).unwrap();
        assert_eq!(p.params.makespan, crate::makespan::Makespan::Canonical);
        assert_eq!(
            BiCriteria::default().params.makespan,
            crate::makespan::Makespan::Mrt
        );
        assert!(BiCriteria::from_params(&Params::from_pairs([("makespan", "shelves")])).is_err());
    }
}
