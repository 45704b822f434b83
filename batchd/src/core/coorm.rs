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
use sched_core::{CoAllocated, Component, JobId, Plan, PoolId, PoolSteps, RNone, RSome, Request};

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

/// The views of `plan` (made at `now`) as CAPs, by job.
pub fn views_of(core: &Core, now: u64, plan: &Plan) -> HashMap<u64, JobView> {
    plan.views
        .iter()
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
