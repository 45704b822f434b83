//! The plan validator: the one piece of code between a policy and the nodes.
//!
//! Both drivers run every plan through [`validate`] before acting on it. A plan is refused as a
//! whole if any of these fails:
//! - every placement, reject and view names a pending job, at most once, and no job is both
//!   placed and rejected; every kill names a running, killable job;
//! - a placement starts neither before `now` nor before the job's earliest start, and a
//!   co-allocated job starts by its deadline;
//! - each shape honours its request (see [`check_shape`]);
//! - no pool is ever over-committed: the running jobs' holds (less the killed ones'), the
//!   placements' holds and their early claims never exceed the pool's nodes at any time ≥ now.

use crate::idmap::{IdMap, IdSet};

use crate::policy::{Placement, Plan, PoolSteps, Shape, Snapshot};
use crate::pool::PoolId;
use crate::request::{JobId, Request};
use crate::time::Time;

/// One way a plan breaks the contract.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    /// A placement, reject or view for a job that is not pending.
    #[error("job {0} is not pending")]
    NotPending(JobId),
    /// A job placed or rejected twice, or both.
    #[error("job {0} is placed or rejected more than once")]
    Duplicate(JobId),
    /// A start before the present.
    #[error("job {job} placed at {start} ms, before now ({now} ms)")]
    StartInPast {
        /// The job.
        job: JobId,
        /// Its planned start.
        start: Time,
        /// The present.
        now: Time,
    },
    /// A start before the job's submission or `--begin` time.
    #[error("job {job} placed at {start} ms, before its earliest start {earliest} ms")]
    StartTooEarly {
        /// The job.
        job: JobId,
        /// Its planned start.
        start: Time,
        /// Its earliest allowed start.
        earliest: Time,
    },
    /// A co-allocated job placed after its start deadline.
    #[error("job {job} placed at {start} ms, after its start deadline {deadline} ms")]
    PastDeadline {
        /// The job.
        job: JobId,
        /// Its planned start.
        start: Time,
        /// Its deadline.
        deadline: Time,
    },
    /// A shape that does not honour the request.
    #[error("job {job}: {what}")]
    BadShape {
        /// The job.
        job: JobId,
        /// What does not match.
        what: String,
    },
    /// A claim that begins after the start it is for.
    #[error("job {job}: claim from {claim} ms is after its start {start} ms")]
    ClaimAfterStart {
        /// The job.
        job: JobId,
        /// Claim begin.
        claim: Time,
        /// Start.
        start: Time,
    },
    /// A kill of a job that is not running, or not killable.
    #[error("job {0} cannot be killed: not running or not killable")]
    BadKill(JobId),
    /// More nodes in use than the pool has.
    #[error("pool {pool} over-committed at {at} ms: {used} nodes in use of {nodes}")]
    OverCommit {
        /// The pool's name.
        pool: String,
        /// First instant of the over-commit.
        at: Time,
        /// Nodes the plan uses then.
        used: u64,
        /// Nodes the pool has.
        nodes: u32,
    },
}

/// A refused plan: every violation found, in the order checked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("plan refused: {}", .violations.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("; "))]
pub struct PlanError {
    /// What is wrong, never empty.
    pub violations: Vec<Violation>,
}

/// Checks `plan` against `snapshot`; `Ok` when the driver may act on it.
pub fn validate(snapshot: &Snapshot<'_>, plan: &Plan) -> Result<(), PlanError> {
    let mut v = Vec::new();
    // Only the jobs the plan names are looked up, by one pass over the queue with a binary
    // search in the plan's sorted ids: drivers validate every plan, and hashing a long queue
    // per call made a small plan's check cost O(queue) hashes.
    let mut wanted: Vec<JobId> = plan
        .placements
        .iter()
        .map(|p| p.job)
        .chain(plan.rejects.iter().map(|r| r.job))
        .chain(plan.views.iter().map(|w| w.job))
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut pending: IdMap<&crate::policy::Pending> =
        IdMap::with_capacity_and_hasher(wanted.len(), Default::default());
    if !wanted.is_empty() {
        for p in snapshot.pending {
            if wanted.binary_search(&p.id).is_ok() {
                pending.insert(p.id, p);
            }
        }
    }

    let mut seen = IdSet::with_capacity_and_hasher(plan.placements.len(), Default::default());
    for p in &plan.placements {
        let Some(job) = pending.get(&p.job) else {
            v.push(Violation::NotPending(p.job));
            continue;
        };
        if !seen.insert(p.job) {
            v.push(Violation::Duplicate(p.job));
        }
        if p.start < snapshot.now {
            v.push(Violation::StartInPast {
                job: p.job,
                start: p.start,
                now: snapshot.now,
            });
        }
        if p.start < job.earliest_start.max(job.submit) {
            v.push(Violation::StartTooEarly {
                job: p.job,
                start: p.start,
                earliest: job.earliest_start.max(job.submit),
            });
        }
        if let Request::CoAllocated(c) = &job.request {
            if let Some(d) = c.deadline {
                if p.start > d {
                    v.push(Violation::PastDeadline {
                        job: p.job,
                        start: p.start,
                        deadline: d,
                    });
                }
            }
        }
        if let Some(c) = p.claim_from {
            if c > p.start {
                v.push(Violation::ClaimAfterStart {
                    job: p.job,
                    claim: c,
                    start: p.start,
                });
            }
        }
        if let Err(what) = check_shape(snapshot, &job.request, &p.shape) {
            v.push(Violation::BadShape { job: p.job, what });
        }
    }
    for r in &plan.rejects {
        if !pending.contains_key(&r.job) {
            v.push(Violation::NotPending(r.job));
        } else if !seen.insert(r.job) {
            v.push(Violation::Duplicate(r.job));
        }
    }
    for view in &plan.views {
        if !pending.contains_key(&view.job) && !snapshot.running.iter().any(|r| r.id == view.job) {
            v.push(Violation::NotPending(view.job));
        }
    }
    let mut killed = IdSet::default();
    for k in &plan.kills {
        match snapshot.running.iter().find(|r| r.id == k.job) {
            Some(r) if r.killable => {
                killed.insert(k.job);
            }
            _ => v.push(Violation::BadKill(k.job)),
        }
    }
    // Capacity is only meaningful when every shape made sense.
    if v.is_empty() {
        check_capacity(snapshot, plan, &pending, &killed, &mut v);
    }
    if v.is_empty() {
        Ok(())
    } else {
        Err(PlanError { violations: v })
    }
}

/// Whether `shape` honours `request` on the snapshot's pools; the reason when it does not.
///
/// A rigid shape is also accepted for any request a rigid-only policy may turn into one (the
/// papers' rigid baseline): an evolving job as its maximum nodes for the sum of its durations,
/// one of a moldable job's configurations, a co-allocated job packed whole into one pool its
/// components allow.
pub fn check_shape(
    snapshot: &Snapshot<'_>,
    request: &Request,
    shape: &Shape,
) -> Result<(), String> {
    let pool_ok = |pool: PoolId, wanted: Option<PoolId>| -> Result<(), String> {
        if snapshot.pool(pool).is_none() {
            return Err(format!("unknown pool {pool}"));
        }
        match wanted {
            Some(w) if w != pool => Err(format!("placed on {pool}, request asks for {w}")),
            _ => Ok(()),
        }
    };
    match (request, shape) {
        (
            Request::Rigid(r),
            Shape::Rigid {
                pool,
                nodes,
                walltime,
            },
        ) => {
            pool_ok(*pool, r.pool)?;
            if (*nodes, *walltime) != (r.nodes, r.walltime) {
                return Err(format!(
                    "rigid shape {nodes} nodes × {walltime} ms, request is {} × {}",
                    r.nodes, r.walltime
                ));
            }
            Ok(())
        }
        (
            Request::Moldable(m),
            Shape::Moldable {
                pool,
                nodes,
                walltime,
            },
        )
        | (
            Request::Moldable(m),
            Shape::Rigid {
                pool,
                nodes,
                walltime,
            },
        ) => {
            pool_ok(*pool, m.pool)?;
            match m.walltime_on(*nodes) {
                Some(w) if w == *walltime => Ok(()),
                Some(w) => Err(format!(
                    "moldable on {nodes} nodes allows {w} ms, plan says {walltime}"
                )),
                None => Err(format!(
                    "moldable request offers no configuration on {nodes} nodes"
                )),
            }
        }
        (Request::Evolving(e), Shape::Evolving { pool, steps }) => {
            pool_ok(*pool, e.pool)?;
            if steps.len() != e.steps.len() {
                return Err(format!(
                    "scheduled EP has {} steps, requested {}",
                    steps.len(),
                    e.steps.len()
                ));
            }
            for (i, (s, r)) in steps.iter().zip(&e.steps).enumerate() {
                if s.nodes != r.nodes {
                    return Err(format!(
                        "step {} holds {} nodes, requested {}",
                        i + 1,
                        s.nodes,
                        r.nodes
                    ));
                }
                if s.duration < r.duration {
                    return Err(format!(
                        "step {} shortened to {} ms, requested {} ms",
                        i + 1,
                        s.duration,
                        r.duration
                    ));
                }
            }
            Ok(())
        }
        (
            Request::Evolving(e),
            Shape::Rigid {
                pool,
                nodes,
                walltime,
            },
        ) => {
            pool_ok(*pool, e.pool)?;
            let want = request.as_rigid().map(|r| (r.nodes, r.walltime));
            if Some((*nodes, *walltime)) != want {
                return Err(format!(
                    "evolving job as rigid must be max nodes × total duration {want:?}, plan says ({nodes}, {walltime})"
                ));
            }
            Ok(())
        }
        (Request::CoAllocated(c), Shape::CoAllocated { pools }) => {
            if pools.len() != c.components.len() {
                return Err(format!(
                    "{} pools for {} components",
                    pools.len(),
                    c.components.len()
                ));
            }
            for (p, comp) in pools.iter().zip(&c.components) {
                pool_ok(*p, comp.pool)?;
            }
            Ok(())
        }
        (
            Request::CoAllocated(c),
            Shape::Rigid {
                pool,
                nodes,
                walltime,
            },
        ) => {
            for comp in &c.components {
                pool_ok(*pool, comp.pool)?;
            }
            let total: u32 = c.components.iter().map(|c| c.nodes).sum();
            if (*nodes, *walltime) != (total, c.walltime) {
                return Err(format!(
                    "co-allocated job as rigid must be {total} × {} ms",
                    c.walltime
                ));
            }
            Ok(())
        }
        (r, s) => Err(format!(
            "a {} request cannot be placed with a {} shape",
            r.kind(),
            shape_kind(s)
        )),
    }
}

fn shape_kind(s: &Shape) -> &'static str {
    match s {
        Shape::Rigid { .. } => "rigid",
        Shape::Moldable { .. } => "moldable",
        Shape::Evolving { .. } => "evolving",
        Shape::CoAllocated { .. } => "co-allocated",
    }
}

fn check_capacity(
    snapshot: &Snapshot<'_>,
    plan: &Plan,
    pending: &IdMap<&crate::policy::Pending>,
    killed: &IdSet,
    v: &mut Vec<Violation>,
) {
    // (pool, time, delta): a sweep over sorted change points is O(m log m) for m steps.
    let mut events: Vec<(PoolId, Time, i64)> = Vec::new();
    let now = snapshot.now;
    let mut push = |ps: &PoolSteps, from: Time| {
        let mut t = ps.start;
        for s in &ps.steps {
            let end = t.saturating_add(s.duration);
            let (a, b) = (t.max(from), end);
            if a < b && s.nodes > 0 {
                events.push((ps.pool, a, i64::from(s.nodes)));
                events.push((ps.pool, b, -i64::from(s.nodes)));
            }
            t = end;
        }
    };
    for r in snapshot.running.iter().filter(|r| !killed.contains(&r.id)) {
        for h in &r.holds {
            push(h, now);
        }
    }
    for p in &plan.placements {
        let Some(job) = pending.get(&p.job) else {
            continue;
        };
        // An early claim holds the first step's nodes from `claim_from` (or now) to the
        // start: counted as one interval with the first step, which halves the events of a
        // claimed placement (claimed jobs are re-planned at every call until they start).
        let claim_at = p.claim_from.map(|c| c.max(now)).filter(|&a| a < p.start);
        for h in &p.shape.holds(&job.request, p.start) {
            let mut t = h.start;
            for (k, s) in h.steps.iter().enumerate() {
                let end = t.saturating_add(s.duration);
                let a = match claim_at {
                    Some(c) if k == 0 => c,
                    _ => t.max(now),
                };
                if a < end && s.nodes > 0 {
                    events.push((h.pool, a, i64::from(s.nodes)));
                    events.push((h.pool, end, -i64::from(s.nodes)));
                }
                t = end;
            }
        }
    }
    // Ends before starts at the same instant: a job may start the moment another ends.
    events.sort_unstable_by_key(|&(pool, t, d)| (pool, t, d));
    let mut i = 0;
    while i < events.len() {
        let pool = events[i].0;
        let nodes = snapshot.pool(pool).map_or(0, |p| p.nodes);
        let mut used: i64 = 0;
        let mut reported = false;
        while i < events.len() && events[i].0 == pool {
            let t = events[i].1;
            while i < events.len() && events[i].0 == pool && events[i].1 == t {
                used += events[i].2;
                i += 1;
            }
            if used > i64::from(nodes) && !reported {
                reported = true;
                v.push(Violation::OverCommit {
                    pool: snapshot
                        .pool(pool)
                        .map_or_else(|| pool.to_string(), |p| p.name.clone()),
                    at: t,
                    used: used as u64,
                    nodes,
                });
            }
        }
    }
}

/// The placements of `plan` that start at or before `now`: what the driver starts.
pub fn starts_now(plan: &Plan, now: Time) -> impl Iterator<Item = &Placement> {
    plan.placements.iter().filter(move |p| p.start <= now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{JobReason, Pending, Running};
    use crate::pool::Pool;
    use crate::request::Step;

    fn pools() -> Vec<Pool> {
        vec![Pool {
            id: PoolId(0),
            name: "debug".into(),
            nodes: 8,
        }]
    }

    fn pending(id: u64, req: Request) -> Pending {
        Pending {
            wants_view: false,
            id: JobId(id),
            user: 0,
            submit: 0,
            earliest_start: 0,
            priority: 0,
            request: req,
        }
    }

    fn place(id: u64, start: Time, nodes: u32, walltime: u64) -> Placement {
        Placement {
            job: JobId(id),
            start,
            shape: Shape::rigid(PoolId(0), nodes, walltime),
            claim_from: None,
        }
    }

    #[test]
    fn accepts_back_to_back_jobs() {
        let pools = pools();
        let pend = vec![
            pending(1, Request::rigid(8, 10)),
            pending(2, Request::rigid(8, 10)),
        ];
        let snap = Snapshot {
            now: 0,
            pools: &pools,
            running: &[],
            pending: &pend,
        };
        let plan = Plan {
            placements: vec![place(1, 0, 8, 10), place(2, 10, 8, 10)],
            ..Plan::default()
        };
        assert_eq!(validate(&snap, &plan), Ok(()));
    }

    #[test]
    fn refuses_over_commit_and_names_pool() {
        let pools = pools();
        let pend = vec![
            pending(1, Request::rigid(5, 10)),
            pending(2, Request::rigid(4, 10)),
        ];
        let snap = Snapshot {
            now: 0,
            pools: &pools,
            running: &[],
            pending: &pend,
        };
        let plan = Plan {
            placements: vec![place(1, 0, 5, 10), place(2, 9, 4, 10)],
            ..Plan::default()
        };
        let err = validate(&snap, &plan).unwrap_err();
        assert_eq!(
            err.violations,
            vec![Violation::OverCommit {
                pool: "debug".into(),
                at: 9,
                used: 9,
                nodes: 8
            }]
        );
    }

    #[test]
    fn running_holds_count_and_kills_free_them() {
        let pools = pools();
        let running = vec![Running {
            id: JobId(7),
            user: 0,
            request: Request::rigid(6, 100),
            shape: Shape::rigid(PoolId(0), 6, 100),
            start: 0,
            holds: vec![PoolSteps::flat(PoolId(0), 0, 100, 6)],
            killable: true,
        }];
        let pend = vec![pending(1, Request::rigid(4, 10))];
        let snap = Snapshot {
            now: 50,
            pools: &pools,
            running: &running,
            pending: &pend,
        };
        let mut plan = Plan {
            placements: vec![place(1, 50, 4, 10)],
            ..Plan::default()
        };
        assert!(validate(&snap, &plan).is_err());
        plan.kills.push(JobReason {
            job: JobId(7),
            reason: "local job preempted".into(),
        });
        assert_eq!(validate(&snap, &plan), Ok(()));
    }

    #[test]
    fn early_claims_count_from_their_start() {
        let pools = pools();
        let running = vec![Running {
            id: JobId(7),
            user: 0,
            request: Request::rigid(6, 100),
            shape: Shape::rigid(PoolId(0), 6, 100),
            start: 0,
            holds: vec![PoolSteps::flat(PoolId(0), 0, 100, 6)],
            killable: false,
        }];
        let pend = vec![pending(1, Request::rigid(4, 10))];
        let snap = Snapshot {
            now: 10,
            pools: &pools,
            running: &running,
            pending: &pend,
        };
        let with_claim = |c: Option<Time>| Plan {
            placements: vec![Placement {
                claim_from: c,
                ..place(1, 200, 4, 10)
            }],
            ..Plan::default()
        };
        assert_eq!(validate(&snap, &with_claim(None)), Ok(()));
        assert_eq!(validate(&snap, &with_claim(Some(100))), Ok(()));
        // Claimed from 50 (counted from now at the earliest), while job 7 holds 6 of 8 nodes.
        let err = validate(&snap, &with_claim(Some(5))).unwrap_err();
        assert_eq!(
            err.violations,
            vec![Violation::OverCommit {
                pool: "debug".into(),
                at: 10,
                used: 10,
                nodes: 8
            }]
        );
    }

    #[test]
    fn evolving_shape_may_expand_but_not_shrink_or_change_nodes() {
        let pools = pools();
        let req = Request::evolving(vec![Step::new(10, 2), Step::new(20, 4)]);
        let pend = vec![pending(1, req)];
        let snap = Snapshot {
            now: 0,
            pools: &pools,
            running: &[],
            pending: &pend,
        };
        let shape = |steps: Vec<Step>| Plan {
            placements: vec![Placement {
                job: JobId(1),
                start: 5,
                shape: Shape::Evolving {
                    pool: PoolId(0),
                    steps,
                },
                claim_from: None,
            }],
            ..Plan::default()
        };
        assert_eq!(
            validate(&snap, &shape(vec![Step::new(15, 2), Step::new(20, 4)])),
            Ok(())
        );
        assert!(validate(&snap, &shape(vec![Step::new(5, 2), Step::new(20, 4)])).is_err());
        assert!(validate(&snap, &shape(vec![Step::new(10, 3), Step::new(20, 4)])).is_err());
        // The rigid baseline: max nodes for the total duration.
        let rigid = Plan {
            placements: vec![place(1, 0, 4, 30)],
            ..Plan::default()
        };
        assert_eq!(validate(&snap, &rigid), Ok(()));
    }

    #[test]
    fn refuses_unknown_jobs_past_starts_and_double_placements() {
        let pools = pools();
        let pend = vec![pending(1, Request::rigid(1, 10))];
        let snap = Snapshot {
            now: 100,
            pools: &pools,
            running: &[],
            pending: &pend,
        };
        let plan = Plan {
            placements: vec![
                place(1, 50, 1, 10),
                place(1, 100, 1, 10),
                place(9, 100, 1, 1),
            ],
            ..Plan::default()
        };
        let err = validate(&snap, &plan).unwrap_err();
        assert!(err.violations.contains(&Violation::NotPending(JobId(9))));
        assert!(err.violations.contains(&Violation::Duplicate(JobId(1))));
        assert!(err
            .violations
            .iter()
            .any(|v| matches!(v, Violation::StartInPast { .. })));
    }
}
