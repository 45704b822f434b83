//! CooRM launcher sessions, the daemon's side (Klein & Pérez, *An RMS Architecture for
//! Efficiently Supporting Complex-Moldable Applications*, HPCC 2011, §III; docs/coorm.md).
//!
//! A session is a job whose spec has the shape `JobShape::Session`: it is queued at
//! `subscribe` (so its queue place, its priority, is the subscribe time: §III-C orders waiting
//! applications "by the time-stamps of their subscribe messages"), its request goes to the
//! policy as a co-allocated request with one component per pool, and it holds the nodes of
//! several pools once started. It runs no process: the launcher deploys the application on the
//! nodes `startNotify` names, and says `done`.
//!
//! This module is the bookkeeping without I/O but the sessions' channels: the request the
//! policy sees, the multi-pool start, the views of a plan turned into CAPs and pushed to the
//! sessions whose view changed. The connection itself is `server/session.rs`.
//!
//! Architecture invariant (batchd's): no policy logic. The views come from the policy's plan
//! (`Plan::views`); batchd only stores and forwards them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use batch_proto::{
    hostlist, CapStep, Change, ChangeNotify, ChangeType, JobShape, JobState, PoolLink,
    PoolProperties, PoolView, Response, SessionEnded, StartNotify, StartedPool,
};
use sched_core::{CoAllocated, Component, JobId, Plan, PoolId, PoolSteps, Request};
use tokio::sync::mpsc::UnboundedSender;

use crate::config::Config;
use crate::core::{Core, RunState};
use crate::daemon::{lock, Daemon};
use crate::launch::now_ms;
use crate::record::JobRecord;

/// A job's latest view, as the CAPs sent to its launcher.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobView {
    /// When the plan was made, ms since the epoch.
    pub now: u64,
    /// Per pool, in config order.
    pub pools: Vec<PoolView>,
}

/// One open session, as the scheduler loop reaches it.
struct Session {
    /// Frames pushed to the launcher (the connection's task writes them).
    tx: UnboundedSender<Response>,
    /// The pools that passed its filter (indices, config order).
    pools: Vec<usize>,
    /// The CAP last sent for each pool.
    sent: HashMap<usize, Vec<CapStep>>,
}

/// The open sessions, by job.
#[derive(Default)]
pub struct Sessions(Mutex<HashMap<u64, Session>>);

impl Sessions {
    /// Registers the session of `job` over `pools`; frames for it go to `tx`.
    pub fn open(&self, job: u64, pools: Vec<usize>, tx: UnboundedSender<Response>) {
        lock(&self.0).insert(
            job,
            Session {
                tx,
                pools,
                sent: HashMap::new(),
            },
        );
    }

    /// Forgets the session of `job` (its connection closed).
    pub fn close(&self, job: u64) {
        lock(&self.0).remove(&job);
    }

    /// Pushes `r` to the session of `job`, if it is open.
    fn push(&self, job: u64, r: Response) {
        if let Some(s) = lock(&self.0).get(&job) {
            let _ = s.tx.send(r);
        }
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
                    pool: Some(PoolId(core.pool_index(&p.pool)? as u32)),
                })
            })
            .collect(),
        walltime: *time_limit,
        deadline: None,
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
    for &(p, n) in &counts {
        let pool = &mut core.pools[p];
        let got = pool
            .map
            .grow(JobId(id), n as usize)
            .map_err(|e| format!("in {}: {e}", pool.pool.name))?;
        names.extend(pool.names(&got));
    }
    let key = crate::core::queue_key(&core.jobs[&id].rec);
    let first = &core.pools[counts[0].0].pool.name;
    let job = core.jobs.get_mut(&id).ok_or("job is gone")?;
    job.rec.state = JobState::Running;
    job.rec.start = Some(now);
    job.rec.pool = Some(first.clone());
    job.rec.nodes = counts.iter().map(|c| c.1).sum();
    job.rec.node_list = Some(hostlist::compress(&names));
    job.rec.shape = Some(sched_core::Shape::CoAllocated {
        pools: pools.to_vec(),
    });
    job.run = Some(RunState {
        pool: counts[0].0,
        job_dir,
        cancelling: false,
        evolving: None,
        more_pools: counts[1..].iter().map(|c| c.0).collect(),
    });
    let rec = job.rec.clone();
    core.queue.remove(&key);
    core.running.insert(id);
    core.expected.remove(&id);
    core.expected_ep.remove(&id);
    core.views.remove(&id);
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
fn same_cap(a: &[CapStep], b: &[CapStep]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .enumerate()
            .all(|(i, (x, y))| x.free == y.free && x.to == y.to && (i == 0 || x.from == y.from))
}

/// Records the views of `plan` (made at `now`) and pushes a `changeNotify` to each waiting
/// session whose view changed on one of its pools, with those pools' new CAPs (§III-B, step 6:
/// "every time information regarding … their estimated availability changes").
pub fn publish(d: &Daemon, now: u64, plan: &Plan) {
    let mut views = HashMap::new();
    {
        let core = d.core();
        for v in &plan.views {
            let pools = v
                .available
                .iter()
                .filter_map(|ps| {
                    let pool = core.pools.get(ps.pool.0 as usize)?;
                    Some(PoolView {
                        pool: pool.pool.name.clone(),
                        steps: cap(ps),
                    })
                })
                .collect();
            views.insert(v.job.0, JobView { now, pools });
        }
    }
    let names: Vec<String> = d.core().pools.iter().map(|p| p.pool.name.clone()).collect();
    {
        let mut sessions = lock(&d.sessions.0);
        for (&job, s) in sessions.iter_mut() {
            let Some(v) = views.get_mut(&job) else {
                continue;
            };
            let mut changes = Vec::new();
            for &p in &s.pools {
                let Some(pv) = v.pools.iter_mut().find(|pv| pv.pool == names[p]) else {
                    continue;
                };
                match s.sent.get(&p) {
                    // Unchanged but for the passing of time: what the launcher holds stays
                    // the view (so `eview` shows exactly the CAPs it was sent).
                    Some(old) if same_cap(old, &pv.steps) => pv.steps.clone_from(old),
                    _ => {
                        s.sent.insert(p, pv.steps.clone());
                        changes.push(Change {
                            pool: pv.pool.clone(),
                            kind: ChangeType::Availability,
                            cap: Some(pv.steps.clone()),
                        });
                    }
                }
            }
            if !changes.is_empty() {
                let _ =
                    s.tx.send(Response::ChangeNotify(ChangeNotify { job, now, changes }));
            }
        }
    }
    d.core().views = views;
}

/// Session job `rec` has just started: its launcher gets `startNotify`, and a timer ends the
/// job at its duration unless `done` comes first (§III-A: "the RMS shall kill an application
/// exceeding its allocation").
pub fn started(d: &Arc<Daemon>, rec: JobRecord) {
    let id = rec.id;
    let start = rec.start.unwrap_or_else(now_ms);
    let end = start.saturating_add(rec.time_limit());
    let pools = {
        let core = d.core();
        let mut out = Vec::new();
        if let Some(run) = core.jobs.get(&id).and_then(|a| a.run.as_ref()) {
            for &p in std::iter::once(&run.pool).chain(&run.more_pools) {
                let pool = &core.pools[p];
                out.push(StartedPool {
                    pool: pool.pool.name.clone(),
                    nodes: pool.names(pool.map.nodes_of(JobId(id))),
                });
            }
        }
        out
    };
    tracing::info!(job = id, nodes = ?rec.node_list, "launcher session started");
    d.store.write(rec);
    d.sessions.push(
        id,
        Response::StartNotify(StartNotify {
            job: id,
            start,
            end,
            pools,
        }),
    );
    let d = Arc::clone(d);
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(
            end.saturating_sub(now_ms()),
        ))
        .await;
        let running = d
            .core()
            .jobs
            .get(&id)
            .is_some_and(|a| a.rec.state == JobState::Running && a.rec.start == Some(start));
        if running {
            tracing::info!(job = id, "launcher session exceeded its duration; killed");
            end_job(
                &d,
                id,
                JobState::Timeout,
                "the session exceeded its requested duration",
            )
            .await;
        }
    });
}

/// Ends session job `id` now (running or pending) in `state`, frees its nodes and tells its
/// launcher why.
pub async fn end_job(d: &Arc<Daemon>, id: u64, state: JobState, reason: &str) {
    let rec = d.core().finish(id, |r| {
        r.state = state;
        r.end = Some(now_ms());
        r.detail = Some(reason.to_string());
    });
    let Some(rec) = rec else { return };
    d.sessions.push(
        id,
        Response::SessionEnded(SessionEnded {
            job: id,
            state: state.name().to_string(),
            reason: reason.to_string(),
        }),
    );
    d.nodes_freed();
    if let Err(e) = d.store.commit(rec).await {
        tracing::error!(job = id, "cannot store the end of the session's job: {e}");
    }
}

/// `done` from the launcher of running job `id`: the job is COMPLETING and keeps its nodes for
/// the fair-start delay (§III-C), then ends COMPLETED with its end at the `done`. Its time
/// limit is cut to end there, so that the policy sees the nodes busy exactly that long.
pub fn done_running(d: &Arc<Daemon>, id: u64, fair_start_ms: u64) {
    let at = now_ms();
    let rec = {
        let mut core = d.core();
        let Some(a) = core.jobs.get_mut(&id) else {
            return;
        };
        if a.rec.state != JobState::Running {
            return;
        }
        let start = a.rec.start.unwrap_or(at);
        if let JobShape::Session { time_limit, .. } = &mut a.rec.spec.shape {
            *time_limit = (at.saturating_add(fair_start_ms).saturating_sub(start)).max(1);
        }
        a.rec.state = JobState::Completing;
        a.rec.clone()
    };
    d.store.write(rec);
    // The policy must learn that the job now ends sooner.
    d.reschedule();
    let d = Arc::clone(d);
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(fair_start_ms)).await;
        let rec = d.core().finish(id, |r| {
            r.state = JobState::Completed;
            r.end = Some(at);
            r.exit_code = Some(0);
            r.signal = Some(0);
        });
        if let Some(rec) = rec {
            tracing::info!(job = id, "launcher session done; nodes freed");
            d.nodes_freed();
            if let Err(e) = d.store.commit(rec).await {
                tracing::error!(job = id, "cannot store the end of the session's job: {e}");
            }
        }
    });
}

/// Tells the session of `id` that its job ended without its `done` (e.g. `ecancel`).
pub fn tell_ended(d: &Daemon, id: u64, state: JobState, reason: &str) {
    d.sessions.push(
        id,
        Response::SessionEnded(SessionEnded {
            job: id,
            state: state.name().to_string(),
            reason: reason.to_string(),
        }),
    );
}

/// The pools of `config` that pass a subscribe filter (indices, config order), or why the
/// filter is wrong.
pub fn filter_pools(config: &Config, f: &batch_proto::SessionFilter) -> Result<Vec<usize>, String> {
    if let Some(n) = f
        .pools
        .iter()
        .find(|n| !config.pools.iter().any(|p| &p.name == *n))
    {
        let known: Vec<&str> = config.pools.iter().map(|p| p.name.as_str()).collect();
        return Err(format!(
            "no pool is called `{n}` (pools: {})",
            known.join(", ")
        ));
    }
    let pools: Vec<usize> = config
        .pools
        .iter()
        .enumerate()
        .filter(|(_, p)| f.pools.is_empty() || f.pools.contains(&p.name))
        .filter(|(_, p)| p.nodes >= f.min_nodes)
        .map(|(i, _)| i)
        .collect();
    if pools.is_empty() {
        return Err(format!(
            "no pool passes the filter (at least {} nodes{})",
            f.min_nodes,
            if f.pools.is_empty() {
                String::new()
            } else {
                format!(", among {}", f.pools.join(", "))
            }
        ));
    }
    Ok(pools)
}

/// The paper's CINFOs of `pools`.
pub fn pool_properties(config: &Config, pools: &[usize]) -> Vec<PoolProperties> {
    pools
        .iter()
        .filter_map(|&i| config.pools.get(i))
        .map(|p| PoolProperties {
            pool: p.name.clone(),
            nodes: p.nodes,
            speed: p.speed,
        })
        .collect()
}

/// The paper's ICINFO: the configured links whose both ends are among `pools`.
pub fn pool_links(config: &Config, pools: &[usize]) -> Vec<PoolLink> {
    let names: Vec<&str> = pools
        .iter()
        .filter_map(|&i| config.pools.get(i))
        .map(|p| p.name.as_str())
        .collect();
    config
        .links
        .iter()
        .filter(|l| l.pools.iter().all(|n| names.contains(&n.as_str())))
        .map(|l| PoolLink {
            a: l.pools[0].clone(),
            b: l.pools[1].clone(),
            latency_ms: l.latency_ms,
            bandwidth_mbps: l.bandwidth_mbps,
        })
        .collect()
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
            steps: vec![
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

    #[test]
    fn filters_name_known_pools_and_keep_big_enough_ones() {
        let mut c = Config::embedded();
        c.pools = vec![
            crate::config::PoolConfig {
                name: "a".into(),
                nodes: 4,
                max_time: Default::default(),
                speed: 1.0,
            },
            crate::config::PoolConfig {
                name: "b".into(),
                nodes: 16,
                max_time: Default::default(),
                speed: 1.5,
            },
        ];
        let f = |pools: &[&str], min| batch_proto::SessionFilter {
            pools: pools.iter().map(|s| s.to_string()).collect(),
            min_nodes: min,
        };
        assert_eq!(filter_pools(&c, &f(&[], 0)), Ok(vec![0, 1]));
        assert_eq!(filter_pools(&c, &f(&[], 8)), Ok(vec![1]));
        assert_eq!(filter_pools(&c, &f(&["a"], 0)), Ok(vec![0]));
        assert!(filter_pools(&c, &f(&["a"], 8))
            .unwrap_err()
            .contains("no pool passes"));
        assert!(filter_pools(&c, &f(&["zz"], 0))
            .unwrap_err()
            .contains("`zz`"));
        assert_eq!(pool_properties(&c, &[1])[0].speed, 1.5);
    }
}
