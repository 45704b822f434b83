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
//!   A plan that places nothing adds nothing and is not checked for capacity: what the running
//!   jobs alone hold is the driver's state, which no plan can make worse without a placement
//!   (most calls of a replay start nothing, and summing the running jobs' holds for them was
//!   a tenth of the validator's work).

use abi_stable::std_types::{RNone, RSome};
use smallvec::{smallvec, SmallVec};

use crate::idmap::IdSet;

use crate::policy::{Pending, Placement, Plan, Shape, Snapshot};
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
    // A plan naming no job asks nothing of the snapshot: half of a replay's calls (an arrival
    // that cannot start) answer so, and the lookups below cost a few hundred instructions.
    if plan.placements.is_empty()
        && plan.rejects.is_empty()
        && plan.views.is_empty()
        && plan.kills.is_empty()
    {
        return Ok(());
    }
    let mut v = Vec::new();
    // Only the jobs the plan names are looked up, by one pass over the queue with a binary
    // search in the plan's sorted ids: drivers validate every plan, and hashing a long queue
    // per call made a small plan's check cost O(queue) hashes.
    // Inline for the few jobs a plan of starts names: validating must not cost an allocation
    // per call (a replay calls a hundred thousand times).
    let mut wanted: SmallVec<[JobId; 8]> = plan
        .placements
        .iter()
        .map(|p| p.job)
        .chain(plan.rejects.iter().map(|r| r.job))
        .chain(plan.views.iter().map(|w| w.job))
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    // The named jobs' queue entries, beside `wanted` (sorted): lookups are binary searches in
    // a few ids, with no hashing and no table to allocate at every call.
    let mut found: SmallVec<[Option<&Pending>; 8]> = smallvec![None; wanted.len()];
    // The scan stops once every named job is found: the jobs a plan starts are mostly near
    // the head of the queue. (A queue naming one id twice is the driver's bug; the first
    // entry is the one checked.)
    let mut missing = wanted.len();
    // Most entries passed over lie outside the named ids' range (a plan of starts names one
    // job, found a dozen entries deep on average in a replay): two comparisons, no search.
    let named = wanted.first().zip(wanted.last()).map(|(&a, &b)| a..=b);
    for p in snapshot.pending {
        if missing == 0 {
            break;
        }
        if !named.as_ref().is_some_and(|r| r.contains(&p.id)) {
            continue;
        }
        if let Ok(k) = wanted.binary_search(&p.id) {
            if found[k].is_none() {
                found[k] = Some(p);
                missing -= 1;
            }
        }
    }
    let slot = |id: &JobId| wanted.binary_search(id).ok();
    let pending = |id: JobId| slot(&id).and_then(|k| found[k]);

    // Whether each named job was placed or rejected already.
    let mut seen: SmallVec<[bool; 8]> = smallvec![false; wanted.len()];
    let mut first_time =
        |id: &JobId| slot(id).is_some_and(|k| !std::mem::replace(&mut seen[k], true));
    for p in &plan.placements {
        let Some(job) = pending(p.job) else {
            v.push(Violation::NotPending(p.job));
            continue;
        };
        if !first_time(&p.job) {
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
            if let Some(d) = c.deadline.into_option() {
                if p.start > d {
                    v.push(Violation::PastDeadline {
                        job: p.job,
                        start: p.start,
                        deadline: d,
                    });
                }
            }
        }
        if let RSome(c) = p.claim_from {
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
        if pending(r.job).is_none() {
            v.push(Violation::NotPending(r.job));
        } else if !first_time(&r.job) {
            v.push(Violation::Duplicate(r.job));
        }
    }
    for view in &plan.views {
        if pending(view.job).is_none() && !snapshot.running.iter().any(|r| r.id == view.job) {
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
    // Capacity is only meaningful when every shape made sense, and only placements add to
    // what is held.
    if v.is_empty() && !plan.placements.is_empty() {
        check_capacity(snapshot, plan, pending, &killed, &mut v, false);
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
            pool_ok(*pool, r.pool.into_option())?;
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
            pool_ok(*pool, m.pool.into_option())?;
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
            pool_ok(*pool, e.pool.into_option())?;
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
            pool_ok(*pool, e.pool.into_option())?;
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
                pool_ok(*p, comp.pool.into_option())?;
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
                pool_ok(*pool, comp.pool.into_option())?;
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

fn check_capacity<'a>(
    snapshot: &Snapshot<'a>,
    plan: &Plan,
    pending: impl Fn(JobId) -> Option<&'a Pending>,
    killed: &IdSet,
    v: &mut Vec<Violation>,
    sweep_only: bool,
) {
    let now = snapshot.now;
    // Every interval of nodes held from now on, `(pool, from, to, nodes)`, non-empty.
    let segments = |f: &mut dyn FnMut(PoolId, Time, Time, u32)| {
        for r in snapshot
            .running
            .iter()
            .filter(|r| killed.is_empty() || !killed.contains(&r.id))
        {
            for h in &r.holds {
                let mut t = h.start;
                for s in &h.steps {
                    let end = t.saturating_add(s.duration);
                    let a = t.max(now);
                    if a < end && s.nodes > 0 {
                        f(h.pool, a, end, s.nodes);
                    }
                    t = end;
                }
            }
        }
        for p in &plan.placements {
            let Some(job) = pending(p.job) else {
                continue;
            };
            // A rigid shape is one interval: no holds to build.
            if let (
                Shape::Rigid {
                    pool,
                    nodes,
                    walltime,
                },
                RNone,
            ) = (&p.shape, p.claim_from)
            {
                let (a, end) = (p.start.max(now), p.start.saturating_add(*walltime));
                if a < end && *nodes > 0 {
                    f(*pool, a, end, *nodes);
                }
                continue;
            }
            // An early claim holds the first step's nodes from `claim_from` (or now) to the
            // start: counted as one interval with the first step, which halves the events of a
            // claimed placement (claimed jobs are re-planned at every call until they start).
            let claim_at = p
                .claim_from
                .into_option()
                .map(|c| c.max(now))
                .filter(|&a| a < p.start);
            for h in &p.shape.holds(&job.request, p.start) {
                let mut t = h.start;
                for (k, s) in h.steps.iter().enumerate() {
                    let end = t.saturating_add(s.duration);
                    let a = match claim_at {
                        Some(c) if k == 0 => c,
                        _ => t.max(now),
                    };
                    if a < end && s.nodes > 0 {
                        f(h.pool, a, end, s.nodes);
                    }
                    t = end;
                }
            }
        }
    };
    let over = |pool: PoolId, at: Time, used: i64| -> Option<Violation> {
        let p = snapshot.pool(pool);
        let nodes = p.map_or(0, |p| p.nodes);
        (used > i64::from(nodes)).then(|| Violation::OverCommit {
            pool: p.map_or_else(|| pool.to_string(), |p| p.name.to_string()),
            at,
            used: used as u64,
            nodes,
        })
    };
    // When every interval begins now (a driver's snapshot clips running holds to the present,
    // and a plan of starts places jobs now), each pool's use only falls from now on, so its
    // peak is the sum at now: no sweep over sorted change points needed. Any interval starting
    // later sends the check to the sweep.
    // The sums at now of the first pools met, without an allocation; more pools spill over.
    let mut first = [(PoolId(0), 0i64); 4];
    let mut used = 0;
    let mut more: Vec<(PoolId, i64)> = Vec::new();
    let mut later = sweep_only;
    segments(&mut |pool, a, _, nodes| {
        if later {
            // Decided already: the sweep follows.
        } else if a > now {
            later = true;
        } else if let Some(u) = first[..used]
            .iter_mut()
            .chain(more.iter_mut())
            .find(|(p, _)| *p == pool)
        {
            u.1 += i64::from(nodes);
        } else if used < first.len() {
            first[used] = (pool, i64::from(nodes));
            used += 1;
        } else {
            more.push((pool, i64::from(nodes)));
        }
    });
    if !later {
        // Reported in pool order.
        let sums = &mut first[..used];
        if more.is_empty() {
            sums.sort_unstable_by_key(|&(p, _)| p);
            v.extend(sums.iter().filter_map(|&(p, u)| over(p, now, u)));
        } else {
            more.extend_from_slice(sums);
            more.sort_unstable_by_key(|&(p, _)| p);
            v.extend(more.into_iter().filter_map(|(p, u)| over(p, now, u)));
        }
        return;
    }
    // (pool, time, delta): a sweep over sorted change points is O(m log m) for m steps.
    let mut events: Vec<(PoolId, Time, i64)> = Vec::new();
    segments(&mut |pool, a, b, nodes| {
        events.push((pool, a, i64::from(nodes)));
        events.push((pool, b, -i64::from(nodes)));
    });
    // Ends before starts at the same instant: a job may start the moment another ends.
    events.sort_unstable_by_key(|&(pool, t, d)| (pool, t, d));
    let mut i = 0;
    while i < events.len() {
        let pool = events[i].0;
        let mut used: i64 = 0;
        let mut reported = false;
        while i < events.len() && events[i].0 == pool {
            let t = events[i].1;
            while i < events.len() && events[i].0 == pool && events[i].1 == t {
                used += events[i].2;
                i += 1;
            }
            if !reported {
                if let Some(o) = over(pool, t, used) {
                    reported = true;
                    v.push(o);
                }
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
    use crate::policy::{Kill, Pending, PoolSteps, Running};
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
            claimed: Default::default(),
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
            claim_from: RNone,
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
            placements: crate::rvec![place(1, 0, 8, 10), place(2, 10, 8, 10)],
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
            placements: crate::rvec![place(1, 0, 5, 10), place(2, 9, 4, 10)],
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
            holds: abi_stable::rvec![PoolSteps::flat(PoolId(0), 0, 100, 6)],
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
            placements: crate::rvec![place(1, 50, 4, 10)],
            ..Plan::default()
        };
        assert!(validate(&snap, &plan).is_err());
        plan.kills.push(Kill::new(JobId(7), "local job preempted"));
        assert_eq!(validate(&snap, &plan), Ok(()));
    }

    /// Running jobs over-committing a pool (the driver's state) are refused with any placement
    /// on it, and not for a plan that places nothing.
    #[test]
    fn a_plan_that_places_nothing_is_not_refused_for_what_runs() {
        let pools = pools();
        let running: Vec<Running> = [(7, 6), (8, 6)]
            .into_iter()
            .map(|(id, n)| Running {
                id: JobId(id),
                user: 0,
                request: Request::rigid(n, 100),
                shape: Shape::rigid(PoolId(0), n, 100),
                start: 0,
                holds: abi_stable::rvec![PoolSteps::flat(PoolId(0), 0, 100, n)],
                killable: false,
            })
            .collect();
        let pend = vec![pending(1, Request::rigid(1, 10))];
        let snap = Snapshot {
            now: 50,
            pools: &pools,
            running: &running,
            pending: &pend,
        };
        let mut plan = Plan {
            wake_at: RSome(60),
            ..Plan::default()
        };
        assert_eq!(validate(&snap, &plan), Ok(()));
        plan.placements.push(place(1, 200, 1, 10));
        let err = validate(&snap, &plan).unwrap_err();
        assert!(
            matches!(
                err.violations[..],
                [Violation::OverCommit {
                    at: 50,
                    used: 12,
                    ..
                }]
            ),
            "{err}"
        );
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
            holds: abi_stable::rvec![PoolSteps::flat(PoolId(0), 0, 100, 6)],
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
            placements: crate::rvec![Placement {
                claim_from: c.into(),
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
            placements: crate::rvec![Placement {
                job: JobId(1),
                start: 5,
                shape: Shape::Evolving {
                    pool: PoolId(0),
                    steps: steps.into(),
                },
                claim_from: RNone,
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
            placements: crate::rvec![place(1, 0, 4, 30)],
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
            placements: crate::rvec![
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

    mod capacity {
        use super::*;
        use proptest::prelude::*;

        /// A hold or a placement: pool, start offset from now (may be negative for holds),
        /// steps (duration, nodes).
        type Part = (u32, i64, Vec<(u64, u32)>);

        fn part() -> impl Strategy<Value = Part> {
            (
                0u32..3,
                prop_oneof![Just(0i64), -5i64..5],
                prop::collection::vec((0u64..6, 0u32..5), 1..4),
            )
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            /// The shortcut for plans whose intervals all begin now finds exactly what the
            /// sweep over sorted change points finds.
            #[test]
            fn shortcut_agrees_with_the_sweep(
                holds in prop::collection::vec(part(), 0..5),
                placed in prop::collection::vec(part(), 0..4),
                claims in prop::collection::vec(prop::option::of(0u64..12), 4),
            ) {
                let now: Time = 10;
                let pools: Vec<Pool> = (0..2)
                    .map(|i| Pool { id: PoolId(i), name: format!("p{i}").into(), nodes: 6 })
                    .collect();
                let running: Vec<Running> = holds
                    .iter()
                    .enumerate()
                    .map(|(i, (pool, off, steps))| Running {
                        id: JobId(100 + i as u64),
                        user: 0,
                        request: Request::rigid(1, 1),
                        shape: Shape::rigid(PoolId(*pool), 1, 1),
                        start: 0,
                        holds: abi_stable::rvec![PoolSteps {
                            pool: PoolId(*pool),
                            start: (now as i64 + off) as Time,
                            steps: steps.iter().map(|&(d, n)| Step::new(d, n)).collect(),
                        }],
                        killable: false,
                    })
                    .collect();
                let queue: Vec<Pending> = placed
                    .iter()
                    .enumerate()
                    .map(|(i, (_, _, steps))| {
                        pending(i as u64, Request::evolving(
                            steps.iter().map(|&(d, n)| Step::new(d, n)).collect(),
                        ))
                    })
                    .collect();
                let plan = Plan {
                    placements: placed
                        .iter()
                        .zip(&claims)
                        .enumerate()
                        .map(|(i, ((pool, off, steps), claim))| Placement {
                            job: JobId(i as u64),
                            start: now + off.unsigned_abs(),
                            shape: Shape::Evolving {
                                pool: PoolId(*pool),
                                steps: steps.iter().map(|&(d, n)| Step::new(d, n)).collect(),
                            },
                            claim_from: (*claim).into(),
                        })
                        .collect(),
                    ..Plan::default()
                };
                let snap = Snapshot { now, pools: &pools, running: &running, pending: &queue };
                let map: crate::idmap::IdMap<&Pending> = queue.iter().map(|p| (p.id, p)).collect();
                let killed: IdSet = running.iter().take(1).map(|r| r.id).collect();
                let (mut fast, mut sweep) = (Vec::new(), Vec::new());
                let pending = |id: JobId| map.get(&id).copied();
                check_capacity(&snap, &plan, pending, &killed, &mut fast, false);
                check_capacity(&snap, &plan, pending, &killed, &mut sweep, true);
                prop_assert_eq!(fast, sweep);
            }

            /// A rigid placement, counted as one interval without building its holds, counts
            /// as the same job placed as one evolving step does (through its holds).
            #[test]
            fn a_rigid_placement_counts_as_its_holds(
                running in prop::collection::vec((0u32..2, 0u64..8, 1u32..5), 0..4),
                placed in prop::collection::vec((0u32..2, 0u64..6, 0u64..8, 0u32..5), 0..5),
            ) {
                let now: Time = 10;
                let pools: Vec<Pool> = (0..2)
                    .map(|i| Pool { id: PoolId(i), name: format!("p{i}").into(), nodes: 6 })
                    .collect();
                let running: Vec<Running> = running
                    .iter()
                    .enumerate()
                    .map(|(i, &(pool, wall, nodes))| Running {
                        id: JobId(100 + i as u64),
                        user: 0,
                        request: Request::rigid(nodes, wall),
                        shape: Shape::rigid(PoolId(pool), nodes, wall),
                        start: now,
                        holds: abi_stable::rvec![PoolSteps::flat(PoolId(pool), now, now + wall, nodes)],
                        killable: false,
                    })
                    .collect();
                let verdict = |rigid: bool| {
                    let queue: Vec<Pending> = placed
                        .iter()
                        .enumerate()
                        .map(|(i, &(_, _, wall, nodes))| {
                            pending(i as u64, if rigid {
                                Request::rigid(nodes, wall)
                            } else {
                                Request::evolving(vec![Step::new(wall, nodes)])
                            })
                        })
                        .collect();
                    let plan = Plan {
                        placements: placed
                            .iter()
                            .enumerate()
                            .map(|(i, &(pool, off, wall, nodes))| Placement {
                                job: JobId(i as u64),
                                start: now + off,
                                shape: if rigid {
                                    Shape::rigid(PoolId(pool), nodes, wall)
                                } else {
                                    Shape::Evolving {
                                        pool: PoolId(pool),
                                        steps: crate::rvec![Step::new(wall, nodes)],
                                    }
                                },
                                claim_from: RNone,
                            })
                            .collect(),
                        ..Plan::default()
                    };
                    let snap = Snapshot { now, pools: &pools, running: &running, pending: &queue };
                    validate(&snap, &plan)
                };
                prop_assert_eq!(verdict(true), verdict(false));
            }
        }
    }
}
