//! A tiny event loop for the policies' property tests: jobs arrive at their submit time, run
//! for their run time (at most their walltime) from the start a plan gives them, and the policy
//! is called after every arrival and every end, as the simulator does. Every plan is validated.
//!
//! Shared by the cbf, easy and fcfs test binaries through `#[path]`. It is deliberately not a
//! simulator (no traces, no metrics): `sched-sim` is that.

use sched_core::policy::Pending;
use sched_core::{
    validate, JobId, Kill, Placement, Plan, Policy, Pool, PoolId, RSome, Reject, Request, Rigid,
    Running, Shape, Snapshot, Time,
};

pub use sched_core::testkit::pools;

/// One job of a test workload.
#[derive(Clone, Debug)]
pub struct Spec {
    pub submit: Time,
    pub nodes: u32,
    pub walltime: u64,
    /// How long it really runs; clamped to the walltime.
    pub runtime: u64,
    pub pool: Option<u32>,
}

/// What became of each job (by index): its start, or `None` if rejected.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub start: Vec<Option<Time>>,
    pub rejected: Vec<bool>,
    pub calls: usize,
}

/// Replays `jobs` (sorted by submit time; queue order = index order) through `policy`.
/// `check` sees every snapshot with its plan, after validation.
pub fn replay<P: Policy>(
    policy: &mut P,
    pools: &[Pool],
    jobs: &[Spec],
    mut check: impl FnMut(&Snapshot<'_>, &Plan),
) -> Outcome {
    let mut out = Outcome {
        start: vec![None; jobs.len()],
        rejected: vec![false; jobs.len()],
        calls: 0,
    };
    let mut pending: Vec<Pending> = Vec::new();
    let mut running: Vec<(Running, Time)> = Vec::new();
    let mut next_job = 0;
    let mut wake: Option<Time> = None;
    let mut now: Time = 0;
    loop {
        // One event at a time: the earliest end first, then the earliest arrival, then a wake-up.
        let end = running.iter().map(|r| r.1).min();
        let arrival = jobs.get(next_job).map(|j| j.submit);
        let t = [end, arrival, wake].into_iter().flatten().min();
        let Some(t) = t else { break };
        assert!(t >= now, "time went backwards: {t} < {now}");
        now = t;
        if end == Some(t) {
            let i = running.iter().position(|r| r.1 == t).expect("an end at t");
            // In order, as esim's engine removes it (a driver's account of the changes can
            // name it then).
            running.remove(i);
        } else if arrival == Some(t) {
            let j = &jobs[next_job];
            pending.push(Pending {
                wants_view: false,
                claimed: Default::default(),
                id: JobId(next_job as u64),
                user: 0,
                submit: j.submit,
                earliest_start: j.submit,
                priority: 0,
                request: Request::Rigid(Rigid {
                    pool: j.pool.map(PoolId).into(),
                    nodes: j.nodes,
                    walltime: j.walltime,
                }),
            });
            next_job += 1;
        }
        let run: Vec<Running> = running.iter().map(|r| r.0.clone()).collect();
        let snap = Snapshot {
            now,
            pools,
            running: &run,
            pending: &pending,
        };
        let plan = policy.plan(&snap);
        out.calls += 1;
        if let Err(e) = validate(&snap, &plan) {
            panic!("at {now}: {e}\nsnapshot running {run:?}\npending {pending:?}\nplan {plan:?}");
        }
        check(&snap, &plan);
        wake = plan.wake_at.into_option().filter(|&w| w > now);
        for r in &plan.rejects {
            out.rejected[r.job.0 as usize] = true;
        }
        let mut started = Vec::new();
        for p in plan.placements.iter().filter(|p| p.start <= now) {
            let i = p.job.0 as usize;
            let job = pending
                .iter()
                .find(|q| q.id == p.job)
                .expect("placed job is pending");
            out.start[i] = Some(now);
            let holds = p.shape.holds(&job.request, now);
            let runtime = jobs[i].runtime.clamp(0, jobs[i].walltime);
            running.push((
                Running {
                    id: p.job,
                    user: 0,
                    request: job.request.clone(),
                    shape: p.shape.clone(),
                    start: now,
                    holds: holds.into(),
                    killable: false,
                },
                now + runtime,
            ));
            started.push(p.job);
        }
        pending.retain(|q| !started.contains(&q.id) && !plan.rejects.iter().any(|r| r.job == q.id));
        // The plan goes back to the policy with junk in it, as a driver may give it back
        // (`Policy::recycle`): nothing of it may show in a later answer.
        let mut junk = plan;
        junk.placements.push(Placement {
            job: JobId(u64::MAX),
            start: now,
            shape: Shape::rigid(PoolId(0), 1, 1),
            claim_from: sched_core::RNone,
        });
        junk.rejects
            .push(Reject::other(JobId(u64::MAX - 1), "junk"));
        junk.kills.push(Kill::new(JobId(u64::MAX - 2), "junk"));
        junk.wake_at = RSome(now);
        policy.recycle(junk);
    }
    assert!(
        pending.is_empty(),
        "jobs left pending with nothing more to happen: {pending:?}"
    );
    out
}

pub mod strategy {
    use super::Spec;
    use proptest::prelude::*;

    /// Up to `max_jobs` jobs over pools of `sizes`, some bound to a pool, some too large for
    /// every pool (to be rejected), with run times at or below their walltimes.
    pub fn workload(
        max_jobs: usize,
        pool_count: usize,
    ) -> impl Strategy<Value = (Vec<u32>, Vec<Spec>)> {
        prop::collection::vec(1u32..=16, 1..=pool_count)
            .prop_flat_map(move |sizes| {
                let n = sizes.len() as u32;
                let biggest = sizes.iter().copied().max().unwrap_or(1);
                let job = (
                    0u64..40,
                    1u32..=biggest + 1,
                    1u64..=100,
                    0u64..=100,
                    prop::option::weighted(0.3, 0..n),
                    any::<bool>(),
                )
                    .prop_map(|(gap, nodes, walltime, runtime, pool, exact)| {
                        // Half the jobs run to their limit, as killed or well-estimated jobs do.
                        let runtime = if exact {
                            walltime
                        } else {
                            runtime.clamp(1, walltime)
                        };
                        (
                            gap,
                            Spec {
                                submit: 0,
                                nodes,
                                walltime,
                                runtime,
                                pool,
                            },
                        )
                    });
                (Just(sizes), prop::collection::vec(job, 1..=max_jobs))
            })
            .prop_map(|(sizes, jobs)| {
                let mut t = 0;
                let jobs = jobs
                    .into_iter()
                    .map(|(gap, mut s)| {
                        t += gap;
                        s.submit = t;
                        s
                    })
                    .collect();
                (sizes, jobs)
            })
    }
}
