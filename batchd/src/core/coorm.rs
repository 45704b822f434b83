//! CooRM launcher sessions' jobs in the core (Klein & Pérez, HPCC 2011, §III; docs/coorm.md),
//! without I/O: the request the policy sees, the multi-pool start, the plan's views as CAPs.
//!
//! A session's job has the spec shape `JobShape::Session`: queued at `subscribe` (its queue
//! place, its priority, is the subscribe time: §III-C orders waiting applications "by the
//! time-stamps of their subscribe messages"), its request goes to the policy as a co-allocated
//! request with one component per pool, and it holds the nodes of several pools once started.
//! It runs no process: the launcher deploys the application on the nodes it is told. The
//! sessions themselves are the I/O layer's (`crate::coorm`, `crate::sessions`).

use std::collections::HashMap;
use std::path::PathBuf;

use batch_proto::{hostlist, CapStep, JobShape, JobState, PoolView};
use sched_core::{
    CoAllocated, Component, JobId, Plan, PoolId, PoolSteps, RNone, RSome, Request, Rigid, Running,
    Shape,
};

use super::{queue_key, Core, RunState};
use crate::record::JobRecord;

/// A job's latest view, as the CAPs sent to its launcher.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobView {
    /// When the plan was made, ms since the epoch.
    pub now: u64,
    /// Per pool, in config order.
    pub pools: Vec<PoolView>,
}

/// Nodes that an end freed while a launcher session waited, kept from the policy until
/// `until`: Klein & Pérez, §III-C, "resources allocated to an application are not immediately
/// released after a `done` message, but are artificially marked as occupied for a fair-start
/// amount of time (see Figure 5(b)) […]. This additional delay, allows high-priority
/// applications with intelligent resource selection enough time to adapt and request the
/// resources that will be freed after the fair-start delay expires." The paper's every
/// application has a launcher, so every end is a `done`; in batchd the delay protects a waiting
/// launcher from whatever ended (Fig. 5(a): a quicker job takes the nodes before the launcher
/// with priority has re-selected), so it applies to every end while a session waits, as esim's
/// driver (`lab/src/coorm/driver.rs`, `Ev::End`) applies it to every end. With no session
/// waiting no one needs the time to adapt, and the nodes are not idled.
///
/// The nodes are free in their pools' maps; the snapshot shows them to the policy as a running
/// job of their own ([`fair_start_job`]) holding them on `[from, until)`, so that the
/// validator refuses any plan that starts a job on them before `until`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FairStart {
    /// The job that ended.
    pub job: u64,
    /// Its owner.
    pub user: u32,
    /// Its end.
    pub from: u64,
    /// The end of the delay.
    pub until: u64,
    /// Pool index and nodes freed in it.
    pub parts: Vec<(usize, u32)>,
}

/// The id under which the fair-start hold of ended job `job` reaches a policy: not the job's
/// own, so that a policy that keeps running jobs by id (CBF's book) sees the job end (and the
/// rest of its hold freed) and a new, short hold begin; between the ids of real jobs and those
/// of `leaving_job` (below 2^63 − 2^32).
pub fn fair_start_job(job: u64) -> JobId {
    JobId((1 << 62) + job)
}

/// Whether `id` is a fair-start hold's ([`fair_start_job`]): from 2^62 up, below the pools'
/// leaving stand-ins (2^63 − 1 − pool).
pub fn is_fair_start_hold(id: JobId) -> bool {
    ((1u64 << 62)..(1u64 << 63) - (1u64 << 32)).contains(&id.0)
}

impl Core {
    /// Sets the fair-start delay, `[coorm] fair_start_ms`, for the ends to come.
    pub fn set_fair_start(&mut self, ms: u64) {
        self.fair_start_ms = ms;
    }

    /// Whether a launcher session's job waits for its start: pending, not held, its
    /// dependencies met (one that cannot start has nothing to adapt, and holding nodes idle
    /// for it would only delay others).
    pub fn a_session_waits(&self) -> bool {
        self.sessions.iter().any(|id| {
            self.jobs.get(id).is_some_and(|a| {
                a.rec.state == JobState::Pending
                    && self.queue.contains(&super::queue_key(&a.rec))
                    && self.dep_status(&a.rec) == super::DepStatus::Satisfied
            })
        })
    }

    /// `rec` has just ended and freed `freed` (pool index, nodes): while a session waits, the
    /// nodes are kept from the policy for the fair-start delay from the job's end (see
    /// [`FairStart`]). The holds past their end are forgotten.
    pub(super) fn hold_for_fair_start(&mut self, rec: &JobRecord, freed: Vec<(usize, u32)>) {
        let Some(end) = rec.end else { return };
        self.fair_starts.retain(|h| h.until > end);
        if self.fair_start_ms == 0 || freed.is_empty() || !self.a_session_waits() {
            return;
        }
        tracing::debug!(
            job = rec.id,
            until = end.saturating_add(self.fair_start_ms),
            "a launcher session waits: the freed nodes are held for the fair-start delay"
        );
        self.fair_starts.push(FairStart {
            job: rec.id,
            user: rec.uid,
            from: end,
            until: end.saturating_add(self.fair_start_ms),
            parts: freed,
        });
    }

    /// The fair-start holds in force at `now`.
    pub fn fair_starts(&self, now: u64) -> impl Iterator<Item = &FairStart> {
        self.fair_starts.iter().filter(move |h| h.until > now)
    }

    /// The earliest end of a fair-start hold after `now`: the policy must run again then, when
    /// the nodes come back (esim's `Ev::Release`).
    pub fn fair_start_release(&self, now: u64) -> Option<u64> {
        self.fair_starts(now).map(|h| h.until).min()
    }

    /// The fair-start holds in force at `now`, as running jobs for the snapshot.
    pub(super) fn fair_start_holds(&self, now: u64) -> impl Iterator<Item = Running> + '_ {
        self.fair_starts(now).map(|h| {
            let walltime = h.until.saturating_sub(h.from);
            let pools: Vec<PoolId> = h.parts.iter().map(|p| PoolId(p.0 as u32)).collect();
            let (request, shape) = match h.parts.as_slice() {
                &[(p, nodes)] => {
                    let pool = PoolId(p as u32);
                    (
                        Request::Rigid(Rigid {
                            pool: RSome(pool),
                            nodes,
                            walltime,
                        }),
                        Shape::Rigid {
                            pool,
                            nodes,
                            walltime,
                        },
                    )
                }
                parts => (
                    Request::CoAllocated(CoAllocated {
                        components: parts
                            .iter()
                            .map(|&(p, nodes)| Component {
                                nodes,
                                pool: RSome(PoolId(p as u32)),
                            })
                            .collect(),
                        walltime,
                        deadline: RNone,
                    }),
                    Shape::CoAllocated {
                        pools: pools.clone().into(),
                    },
                ),
            };
            Running {
                id: fair_start_job(h.job),
                user: h.user,
                request,
                shape,
                start: h.from,
                holds: h
                    .parts
                    .iter()
                    .map(|&(p, n)| PoolSteps::flat(PoolId(p as u32), h.from, h.until, n))
                    .collect::<Vec<_>>()
                    .into(),
                killable: false,
            }
        })
    }
}

/// Whether `rec` is a launcher session's job.
pub fn is_session(rec: &JobRecord) -> bool {
    matches!(rec.spec.shape, JobShape::Session { .. })
}

/// The policy's request for a session's job: one component per pool of its request, fixed to
/// that pool. A session without a request yet asks for no component: it gets a view at its
/// rank and reserves nothing (the policy must leave it unplaced).
pub fn request_of(core: &Core, rec: &JobRecord) -> Request {
    let JobShape::Session { pools, time_limit } = &rec.spec.shape else {
        return core.request_of(rec);
    };
    Request::CoAllocated(CoAllocated {
        components: pools
            .iter()
            .filter_map(|p| {
                Some(Component {
                    nodes: p.nodes,
                    pool: RSome(PoolId(core.pool_index(&p.pool)? as u32)),
                })
            })
            .collect(),
        walltime: *time_limit,
        deadline: RNone,
    })
}

/// Starts session job `id` with a co-allocated shape: its request's nodes on each pool of
/// `pools` (component order), the lowest free IDs of each.
pub fn start(
    core: &mut Core,
    id: u64,
    pools: &[PoolId],
    now: u64,
    job_dir: PathBuf,
) -> Result<JobRecord, String> {
    let job = core.jobs.get(&id).ok_or("job is gone")?;
    let JobShape::Session { pools: wanted, .. } = &job.rec.spec.shape else {
        return Err("only launcher sessions' jobs start co-allocated in batchd".into());
    };
    if job.rec.state != JobState::Pending || job.run.is_some() {
        return Err("job is no longer eligible".into());
    }
    if wanted.len() != pools.len() || wanted.is_empty() {
        return Err("the plan's pools do not match the session's request".into());
    }
    let counts: Vec<(usize, u32)> = pools
        .iter()
        .zip(wanted)
        .map(|(p, w)| (p.0 as usize, w.nodes))
        .collect();
    for &(p, n) in &counts {
        let pool = core.pools.get(p).ok_or("the plan names an unknown pool")?;
        if pool.free() < n {
            return Err(format!(
                "only {} nodes free in {}",
                pool.free(),
                pool.pool.name
            ));
        }
    }
    let mut names = Vec::new();
    let mut components = Vec::new();
    for &(p, n) in &counts {
        let pool = &mut core.pools[p];
        let got = pool
            .map
            .grow(JobId(id), n as usize)
            .map_err(|e| format!("in {}: {e}", pool.pool.name))?;
        names.extend(pool.names(&got));
        components.push((p, got));
    }
    let key = queue_key(&core.jobs[&id].rec);
    let first = &core.pools[counts[0].0].pool.name;
    let job = core.jobs.get_mut(&id).ok_or("job is gone")?;
    job.rec.state = JobState::Running;
    job.rec.start = Some(now);
    job.rec.pool = Some(first.to_string());
    job.rec.nodes = counts.iter().fold(0u32, |t, c| t.saturating_add(c.1));
    job.rec.node_list = Some(hostlist::compress(&names));
    job.rec.shape = Some(sched_core::Shape::CoAllocated {
        pools: pools.to_vec().into(),
    });
    job.run = Some(RunState {
        pool: counts[0].0,
        job_dir,
        cancelling: false,
        evolving: None,
        components,
    });
    let rec = job.rec.clone();
    core.now_running(id, &key);
    Ok(rec)
}

/// A pool's availability in a view as CAP steps: consecutive steps of equal count merged, a
/// step reaching [`sched_core::time::NEVER`] (or past `now` + 100 years) open-ended.
pub fn cap(ps: &PoolSteps) -> Vec<CapStep> {
    const FOREVER: u64 = 100 * 365 * 86_400_000;
    let mut out: Vec<CapStep> = Vec::new();
    let mut t = ps.start;
    for s in &ps.steps {
        let end = t.saturating_add(s.duration);
        let to = (end < sched_core::time::NEVER && end.saturating_sub(ps.start) < FOREVER)
            .then_some(end);
        match out.last_mut() {
            Some(last) if last.free == s.nodes && last.to == Some(t) => last.to = to,
            _ => out.push(CapStep {
                from: t,
                to,
                free: s.nodes,
            }),
        }
        if to.is_none() {
            break;
        }
        t = end;
    }
    out
}

/// Whether two CAPs differ only by the start of their first step: a CAP starts at the plan's
/// `now`, and a later policy run that changes nothing else is no change for the launcher
/// (§III-B sends `changeNotify` when "their estimated availability changes").
pub fn same_cap(a: &[CapStep], b: &[CapStep]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .enumerate()
            .all(|(i, (x, y))| x.free == y.free && x.to == y.to && (i == 0 || x.from == y.from))
}

/// The views of `plan` (made at `now`) as CAPs, by job, for the jobs that still wait. A job
/// the same plan has started has none: §III-B, step 6, sends `changeNotify` "until these
/// resources become available and the application can start", and after its `startNotify` a
/// view would show the pools it now holds as free.
pub fn views_of(core: &Core, now: u64, plan: &Plan) -> HashMap<u64, JobView> {
    plan.views
        .iter()
        .filter(|v| {
            core.jobs
                .get(&v.job.0)
                .is_some_and(|a| a.rec.state == JobState::Pending)
        })
        .map(|v| {
            let pools = v
                .available
                .iter()
                .filter_map(|ps| {
                    let pool = core.pools.get(ps.pool.0 as usize)?;
                    Some(PoolView {
                        pool: pool.pool.name.to_string(),
                        steps: cap(ps),
                    })
                })
                .collect();
            (v.job.0, JobView { now, pools })
        })
        .collect()
}

/// The view of pending job `id` computed from the latest plan (§III-A's CAPs for a job
/// without a launcher): per pool, in config order, the nodes free over time from the plan's
/// `now` once the running jobs (fair-start holds and nodes out of service included), the jobs
/// the plan started, and the jobs ahead of `id` in the queue at their planned starts hold
/// theirs; `id` itself and the jobs behind it are left out, as the `coorm` policy leaves them
/// out of a launcher's view (§III-C: "set the view of the current application to the current
/// profiles" before placing it). `None` when no plan is kept, or when the plan gives `id` no
/// expected start (a policy that plans none for it, or a job it did not place). Computed only
/// when asked (`eview`): a policy run costs nothing more.
pub fn planned_view(core: &Core, id: u64) -> Option<JobView> {
    let (snap, plan) = core.last_plan()?;
    let now = snap.now;
    let rank = snap.pending.iter().position(|p| p.id.0 == id)?;
    plan.placements
        .iter()
        .find(|p| p.job.0 == id && p.start > now)?;
    let ahead: HashMap<JobId, &Request> = snap.pending[..rank]
        .iter()
        .map(|p| (p.id, &p.request))
        .collect();
    let requests: HashMap<JobId, &Request> =
        snap.pending.iter().map(|p| (p.id, &p.request)).collect();
    let mut used: Vec<sched_core::Profile> = snap
        .pools
        .iter()
        .map(|_| sched_core::Profile::new())
        .collect();
    let mut add = |h: &PoolSteps| {
        if let Some(u) = snap
            .pools
            .iter()
            .position(|p| p.id == h.pool)
            .and_then(|i| used.get_mut(i))
        {
            u.add_steps(h.start, &h.steps, 1);
        }
    };
    for r in snap.running.iter() {
        r.holds.iter().for_each(&mut add);
    }
    for p in plan.placements.iter() {
        let request = if p.start <= now {
            requests.get(&p.job)
        } else {
            ahead.get(&p.job)
        };
        if let Some(request) = request {
            p.shape.holds(request, p.start).iter().for_each(&mut add);
        }
    }
    let pools = snap
        .pools
        .iter()
        .zip(&used)
        .map(|(pool, u)| {
            let size = i64::from(pool.nodes);
            let free = |v: i64| (size - v).clamp(0, size) as u32;
            let mut steps = Vec::new();
            let (mut t, mut cur) = (now, free(u.value_at(now)));
            for (at, v) in u.change_points().filter(|&(at, _)| at > now) {
                let f = free(v);
                if f != cur {
                    steps.push(sched_core::Step::new(at - t, cur));
                    (t, cur) = (at, f);
                }
            }
            steps.push(sched_core::Step::new(sched_core::time::NEVER, cur));
            PoolView {
                pool: pool.name.to_string(),
                steps: cap(&PoolSteps {
                    pool: pool.id,
                    start: now,
                    steps: steps.into(),
                }),
            }
        })
        .collect();
    Some(JobView { now, pools })
}

/// `done` at `at` from the launcher of running session job `id`: the job is COMPLETING and
/// keeps its nodes for the fair-start delay `fair_start_ms` (§III-C); its time limit is cut to
/// end then, so that the policy sees the nodes busy exactly that long. Returns the record to
/// store, or `None` when the job is not running.
pub fn done(core: &mut Core, id: u64, at: u64, fair_start_ms: u64) -> Option<JobRecord> {
    let a = core.jobs.get_mut(&id)?;
    if a.rec.state != JobState::Running {
        return None;
    }
    let start = a.rec.start.unwrap_or(at);
    if let JobShape::Session { time_limit, .. } = &mut a.rec.spec.shape {
        *time_limit = (at.saturating_add(fair_start_ms).saturating_sub(start)).max(1);
    }
    a.rec.state = JobState::Completing;
    Some(a.rec.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sched_core::Step;

    #[test]
    fn fair_start_holds_are_told_from_jobs_and_pools_leaving() {
        assert!(is_fair_start_hold(fair_start_job(1)));
        assert!(is_fair_start_hold(fair_start_job(u64::from(u32::MAX))));
        assert!(!is_fair_start_hold(JobId(1)));
        assert!(!is_fair_start_hold(super::super::leaving_job(0)));
        assert!(!is_fair_start_hold(super::super::leaving_job(7)));
    }

    #[test]
    fn caps_merge_equal_steps_and_end_open() {
        let ps = PoolSteps {
            pool: PoolId(0),
            start: 1_000,
            steps: sched_core::rvec![
                Step::new(500, 2),
                Step::new(500, 2),
                Step::new(1_000, 4),
                Step::new(sched_core::time::NEVER, 8),
            ],
        };
        assert_eq!(
            cap(&ps),
            vec![
                CapStep {
                    from: 1_000,
                    to: Some(2_000),
                    free: 2
                },
                CapStep {
                    from: 2_000,
                    to: Some(3_000),
                    free: 4
                },
                CapStep {
                    from: 3_000,
                    to: None,
                    free: 8
                },
            ]
        );
    }

    fn job(id: u64, shape: JobShape) -> super::super::Active {
        let mut spec = batch_proto::JobSpec::new("#!/bin/sh\n", "/tmp", 2, 1000);
        spec.shape = shape;
        super::super::Active {
            rec: JobRecord::submitted(id, 1, 1, "u", spec, 0),
            run: None,
        }
    }

    fn session() -> JobShape {
        JobShape::Session {
            pools: Vec::new(),
            time_limit: 0,
        }
    }

    /// Job 1, rigid, runs on 2 of pool `a`'s 4 nodes from 0; job 2 waits, a launcher's session
    /// if `waiting_session`.
    fn ends_at_100(waiting_session: bool) -> Core {
        let mut c = Core::new([("a", 4)]);
        c.set_fair_start(50);
        c.insert(job(
            1,
            JobShape::Rigid {
                nodes: 2,
                time_limit: 1000,
            },
        ));
        let shape = if waiting_session {
            session()
        } else {
            JobShape::Rigid {
                nodes: 2,
                time_limit: 1000,
            }
        };
        c.insert(job(2, shape));
        c.start(
            1,
            &sched_core::Shape::rigid(PoolId(0), 2, 1000),
            0,
            PathBuf::new(),
        )
        .unwrap();
        c.finish(1, |r| r.end = Some(100));
        c
    }

    // §III-C: freed resources "are artificially marked as occupied for a fair-start amount of
    // time" while an application may need the time to adapt: a batch job's end counts.
    #[test]
    fn an_end_while_a_session_waits_holds_the_nodes_for_the_fair_start_delay() {
        let c = ends_at_100(true);
        assert_eq!(c.pools()[0].free(), 4, "the nodes are free in the map");
        let snap = c.snapshot(120, 0);
        let held: Vec<_> = snap
            .running
            .iter()
            .map(|r| {
                (
                    r.id,
                    r.holds[0].start,
                    r.holds[0].end(),
                    r.holds[0].steps[0].nodes,
                )
            })
            .collect();
        assert_eq!(held, vec![(fair_start_job(1), 100, 150, 2)]);
        assert_eq!(c.fair_start_release(120), Some(150));
        // Past its end the hold is gone.
        assert!(c.snapshot(150, 0).running.is_empty());
        assert_eq!(c.fair_start_release(150), None);
    }

    #[test]
    fn without_a_waiting_session_an_end_frees_the_nodes_at_once() {
        let c = ends_at_100(false);
        assert!(c.snapshot(120, 0).running.is_empty());
        assert_eq!(c.fair_start_release(100), None);
    }

    // The view of a job without a launcher, from a kept plan: the running job, then the job
    // ahead of it at its planned start; itself and the job behind it left out.
    #[test]
    fn a_planned_view_counts_the_jobs_ahead_only() {
        let rigid = |nodes| JobShape::Rigid {
            nodes,
            time_limit: 1000,
        };
        let mut c = Core::new([("a", 4)]);
        c.insert(job(1, rigid(3)));
        c.start(
            1,
            &sched_core::Shape::rigid(PoolId(0), 3, 1000),
            0,
            PathBuf::new(),
        )
        .unwrap();
        for (id, n) in [(2, 4), (3, 2), (4, 1)] {
            c.insert(job(id, rigid(n)));
        }
        let snap = c.snapshot(100, 0);
        let place = |id, start, nodes| sched_core::Placement {
            job: JobId(id),
            start,
            shape: sched_core::Shape::rigid(PoolId(0), nodes, 1000),
            claim_from: RNone,
        };
        let plan = Plan {
            placements: vec![place(2, 1000, 4), place(3, 2000, 2), place(4, 2000, 1)].into(),
            ..Plan::default()
        };
        assert_eq!(planned_view(&c, 3), None, "no plan kept yet");
        c.keep_plan(std::sync::Arc::new(snap), std::sync::Arc::new(plan));
        let steps = |id| -> Vec<(u64, Option<u64>, u32)> {
            planned_view(&c, id).unwrap().pools[0]
                .steps
                .iter()
                .map(|s| (s.from, s.to, s.free))
                .collect()
        };
        assert_eq!(steps(2), vec![(100, Some(1000), 1), (1000, None, 4)]);
        assert_eq!(
            steps(3),
            vec![(100, Some(1000), 1), (1000, Some(2000), 0), (2000, None, 4)]
        );
        c.forget_expectations(super::super::Forget::NothingToPlace);
        assert_eq!(planned_view(&c, 3), None);
    }

    #[test]
    fn a_cap_that_only_aged_is_the_same() {
        let c = |from, to, free| CapStep { from, to, free };
        let old = [c(10, Some(50), 2), c(50, None, 4)];
        assert!(same_cap(&old, &[c(20, Some(50), 2), c(50, None, 4)]));
        assert!(!same_cap(&old, &[c(20, Some(60), 2), c(60, None, 4)]));
        assert!(!same_cap(&old, &[c(20, None, 4)]));
        assert!(!same_cap(&old, &[c(10, Some(50), 3), c(50, None, 4)]));
    }
}
