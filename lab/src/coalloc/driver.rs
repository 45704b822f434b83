//! The co-allocation driver: replays a [`CoallocTrace`] through a policy on a virtual clock.
//!
//! A dedicated driver rather than sched-sim's engine: co-allocation needs what the engine does
//! not track (claimed nodes held idle before a start, the job each kill served, a global job's
//! time of placement, lost local jobs, concrete processors so that a claimed node can be shown
//! never to go to another job). The contract is the same: a [`Snapshot`] in, a plan out, through
//! sched-abi's [`PolicyHost`] and its validator before anything is done. A refused plan or a
//! policy that panics ends the run with an error (a policy bug, never a result): the host's
//! fallback plan, right for a daemon that must go on, would make the figures a mix of two
//! schedulers.
//!
//! Events at one instant: every end first, then every submission (in trace order among equal
//! submit times), then one policy call. Each placement the policy makes now starts now; a
//! placement later with `claim_from` at or before now claims its nodes now (they stay idle
//! until the start); a claim the policy stops repeating is released. Killed local jobs are
//! lost (not resubmitted), as in the paper's kill rate.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::BuildHasherDefault;

use sched_core::idmap::IdHasher;

use serde::Serialize;

use sched_abi::{Failure, HostedPolicy, PolicyHost};
use sched_core::request::{CoAllocated, Component, Rigid};
use sched_core::time::{as_secs_f64, Time};
use sched_core::{
    JobId, Pending, PlanError, Pool, PoolId, PoolSteps, RNone, RSome, Request, Running, Shape,
    Snapshot,
};

use super::trace::{secs_to_ms, CoallocTrace, TraceError, TraceId, TraceJob};

/// A replay that cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum CoallocError {
    /// The trace is malformed.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The validator refused a plan.
    #[error("at {at} ms the policy's plan was refused: {error}")]
    Refused {
        /// When.
        at: Time,
        /// Why.
        error: PlanError,
    },
    /// The policy's call panicked or failed.
    #[error("at {at} ms the policy failed: {message}")]
    Failed {
        /// When.
        at: Time,
        /// The host's account of the failure.
        message: String,
    },
    /// Jobs wait, nothing will ever happen.
    #[error("stalled at {at} ms with {count} job(s) pending and no event or wake-up")]
    Stall {
        /// When.
        at: Time,
        /// Pending jobs.
        count: usize,
    },
    /// The driver could not find free processors for what the validator accepted: a bug.
    #[error("at {at} ms no free processors in cluster {pool} for job {job}")]
    NoProcessors {
        /// When.
        at: Time,
        /// The cluster.
        pool: u32,
        /// The job's index.
        job: usize,
    },
}

/// What became of a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// A local job that ran to its end.
    Completed,
    /// A local job killed for a global job (GP).
    Killed,
    /// A local job the policy refused (never with valid traces and rpp).
    Rejected,
    /// A global job that started at its deadline.
    Started,
    /// A global job that could not be placed by its deadline.
    Failed,
}

/// One job of a replay, times in ms.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRun {
    /// Global (co-allocated) or local.
    pub global: bool,
    /// A local job's cluster.
    pub cluster: u32,
    /// Submission.
    pub submit: Time,
    /// A global job's deadline.
    pub deadline: Option<Time>,
    /// Run time.
    pub runtime: Time,
    /// Processors per component (a local job: one component).
    pub size: u32,
    /// Number of components.
    pub components: u32,
    /// When its successful try was (a global job).
    pub placed_at: Option<Time>,
    /// Start.
    pub start: Option<Time>,
    /// End (a killed job's kill time).
    pub end: Option<Time>,
    /// Cluster of each component, once started.
    pub clusters: Vec<u32>,
    /// Its fate; `None` only during the replay.
    pub outcome: Option<Outcome>,
    /// Indices of the local jobs killed for it.
    pub killed: Vec<usize>,
    /// The processors of each component once started: (cluster, processor indices).
    pub processors: Vec<(u32, Vec<u32>)>,
    /// Claims: (from, to, processors) during which its processors were held idle.
    pub claims: Vec<(Time, Time, u32)>,
}

impl JobRun {
    /// Processors it holds while it runs.
    pub fn width(&self) -> u32 {
        self.size * self.components
    }
}

/// A finished replay.
#[derive(Clone, Debug)]
pub struct CoallocRun {
    /// Every job, in trace order.
    pub jobs: Vec<JobRun>,
    /// Their names in the output.
    pub ids: Vec<TraceId>,
    /// C.
    pub clusters: u32,
    /// N.
    pub procs: u32,
    /// The last event's time.
    pub last_event: Time,
    /// Calls to the policy.
    pub policy_calls: u64,
}

/// State of a job in the replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Unsubmitted,
    Pending,
    Running,
    Done,
}

struct Driver {
    pools: Vec<Pool>,
    jobs: Vec<JobRun>,
    requests: Vec<Request>,
    state: Vec<St>,
    order: Vec<usize>,
    next_submit: usize,
    pending: Vec<Pending>,
    /// Local jobs beyond the queue depth, per cluster, in submit order.
    backlog: Vec<std::collections::VecDeque<Pending>>,
    /// Local jobs of each cluster in `pending`.
    shown: Vec<u32>,
    running: Vec<Running>,
    ends: BinaryHeap<Reverse<(Time, usize)>>,
    wake: Option<Time>,
    /// Owner of each processor per cluster (`FREE` when idle).
    owner: Vec<Vec<u32>>,
    /// Claimed jobs: (since, processors per component).
    claimed: HashMap<usize, (Time, Processors), BuildHasherDefault<IdHasher>>,
    /// The call that last saw each job's claim in a plan.
    claim_seen: Vec<u64>,
    calls: u64,
}

const FREE: u32 = u32::MAX;

/// A job's processors: (cluster, processor indices) per component.
type Processors = Vec<(u32, Vec<u32>)>;

/// Replays `trace` through the policy of `host` (built by the caller from
/// [`super::CoallocParams`]), which must validate whole plans ([`sched_abi::Check::Full`], a
/// host's default): a claim is a placement in the future.
pub fn replay<P: HostedPolicy>(
    trace: &CoallocTrace,
    host: &mut PolicyHost<P>,
) -> Result<CoallocRun, CoallocError> {
    trace.check()?;
    let p = &trace.params;
    let pools: Vec<Pool> = (0..p.clusters)
        .map(|c| Pool {
            id: PoolId(c),
            name: format!("cluster{c}").into(),
            nodes: p.procs,
        })
        .collect();
    let ms = |s: f64| secs_to_ms(s).unwrap_or(0); // checked above
    let mut jobs = Vec::with_capacity(trace.jobs.len());
    let mut requests = Vec::with_capacity(trace.jobs.len());
    for j in &trace.jobs {
        let (run, req) = match *j {
            TraceJob::Local {
                cluster,
                submit,
                size,
                runtime,
                ..
            } => (
                JobRun::new(false, cluster, ms(submit), None, ms(runtime), size, 1),
                Request::Rigid(Rigid {
                    pool: RSome(PoolId(cluster)),
                    nodes: size,
                    walltime: ms(runtime),
                }),
            ),
            TraceJob::Global {
                submit,
                components,
                size,
                runtime,
                deadline,
                ..
            } => (
                JobRun::new(
                    true,
                    0,
                    ms(submit),
                    Some(ms(deadline)),
                    ms(runtime),
                    size,
                    components,
                ),
                // §2.1: unordered jobs, every component of one size; the run time is known
                // exactly (the paper's model has no estimates), so it is the walltime.
                Request::CoAllocated(CoAllocated {
                    components: sched_core::rvec![
                        Component {
                            nodes: size,
                            pool: RNone
                        };
                        components as usize
                    ],
                    walltime: ms(runtime),
                    deadline: RSome(ms(deadline)),
                }),
            ),
        };
        jobs.push(run);
        requests.push(req);
    }
    let ids = trace
        .jobs
        .iter()
        .enumerate()
        .map(|(i, j)| j.id().cloned().unwrap_or(TraceId::Num(i as u64)))
        .collect();
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| jobs[i].submit);
    let n = jobs.len();
    let mut d = Driver {
        owner: vec![vec![FREE; p.procs as usize]; p.clusters as usize],
        pools,
        jobs,
        requests,
        state: vec![St::Unsubmitted; n],
        order,
        next_submit: 0,
        pending: Vec::new(),
        backlog: vec![std::collections::VecDeque::new(); p.clusters as usize],
        shown: vec![0; p.clusters as usize],
        running: Vec::new(),
        ends: BinaryHeap::new(),
        wake: None,
        claimed: HashMap::default(),
        claim_seen: vec![0; n],
        calls: 0,
    };
    let last_event = d.run(host)?;
    Ok(CoallocRun {
        jobs: d.jobs,
        ids,
        clusters: p.clusters,
        procs: p.procs,
        last_event,
        policy_calls: d.calls,
    })
}

impl JobRun {
    fn new(
        global: bool,
        cluster: u32,
        submit: Time,
        deadline: Option<Time>,
        runtime: Time,
        size: u32,
        components: u32,
    ) -> Self {
        JobRun {
            global,
            cluster,
            submit,
            deadline,
            runtime,
            size,
            components,
            placed_at: None,
            start: None,
            end: None,
            clusters: Vec::new(),
            outcome: None,
            killed: Vec::new(),
            processors: Vec::new(),
            claims: Vec::new(),
        }
    }
}

impl Driver {
    /// Local jobs per cluster the snapshot shows: N (see the module's doc).
    fn depth(&self) -> u32 {
        self.pools.first().map_or(0, |p| p.nodes)
    }

    fn next_event(&mut self) -> Option<Time> {
        // Killed jobs leave stale ends behind: drop them so that they are no events.
        while let Some(&Reverse((_, i))) = self.ends.peek() {
            if self.state[i] == St::Running {
                break;
            }
            self.ends.pop();
        }
        let submit = self
            .order
            .get(self.next_submit)
            .map(|&i| self.jobs[i].submit);
        let end = self.ends.peek().map(|Reverse((t, _))| *t);
        [submit, end, self.wake].into_iter().flatten().min()
    }

    fn run<P: HostedPolicy>(&mut self, host: &mut PolicyHost<P>) -> Result<Time, CoallocError> {
        let mut last = 0;
        while let Some(now) = self.next_event() {
            last = now;
            if self.wake.is_some_and(|w| w <= now) {
                self.wake = None;
            }
            while let Some(&Reverse((t, i))) = self.ends.peek() {
                if t != now {
                    break;
                }
                self.ends.pop();
                if self.state[i] == St::Running {
                    self.finish(i, now, Outcome::Completed);
                }
            }
            while let Some(&i) = self.order.get(self.next_submit) {
                if self.jobs[i].submit != now {
                    break;
                }
                self.next_submit += 1;
                self.state[i] = St::Pending;
                let job = Pending {
                    wants_view: false,
                    claimed: Default::default(),
                    id: JobId(i as u64),
                    user: 0,
                    submit: now,
                    earliest_start: now,
                    priority: 0,
                    request: self.requests[i].clone(),
                };
                if self.jobs[i].global {
                    self.pending.push(job);
                } else {
                    let c = self.jobs[i].cluster as usize;
                    if self.shown[c] < self.depth() {
                        self.shown[c] += 1;
                        self.pending.push(job);
                    } else {
                        self.backlog[c].push_back(job);
                    }
                }
            }
            self.call(host, now)?;
            if self.next_event().is_none() && !self.pending.is_empty() {
                return Err(CoallocError::Stall {
                    at: now,
                    count: self.pending.len(),
                });
            }
        }
        Ok(last)
    }

    fn finish(&mut self, i: usize, now: Time, outcome: Outcome) {
        self.state[i] = St::Done;
        let j = &mut self.jobs[i];
        j.end = Some(now);
        // A global job's outcome stays `started` (the output format of docs/coalloc.md): it ran from its deadline.
        if !j.global {
            j.outcome = Some(outcome);
        }
        for (pool, procs) in &j.processors {
            for &p in procs {
                self.owner[*pool as usize][p as usize] = FREE;
            }
        }
        let id = JobId(i as u64);
        self.running.retain(|r| r.id != id);
    }

    /// `n` free processors of `pool` for job `i`.
    fn take(&mut self, pool: u32, n: u32, i: usize, now: Time) -> Result<Vec<u32>, CoallocError> {
        let owner = &mut self.owner[pool as usize];
        let mut got = Vec::with_capacity(n as usize);
        for (p, o) in owner.iter_mut().enumerate() {
            if got.len() == n as usize {
                break;
            }
            if *o == FREE {
                *o = i as u32;
                got.push(p as u32);
            }
        }
        if got.len() < n as usize {
            for &p in &got {
                owner[p as usize] = FREE;
            }
            return Err(CoallocError::NoProcessors {
                at: now,
                pool,
                job: i,
            });
        }
        Ok(got)
    }

    fn release(&mut self, procs: &[(u32, Vec<u32>)]) {
        for (pool, ps) in procs {
            for &p in ps {
                self.owner[*pool as usize][p as usize] = FREE;
            }
        }
    }

    /// Ends job `i`'s claim at `now`, accounting the idle time it held.
    fn unclaim(&mut self, i: usize, now: Time) -> Option<Vec<(u32, Vec<u32>)>> {
        let (since, procs) = self.claimed.remove(&i)?;
        let n: u32 = procs.iter().map(|(_, p)| p.len() as u32).sum();
        self.jobs[i].claims.push((since, now, n));
        Some(procs)
    }

    fn call<P: HostedPolicy>(
        &mut self,
        host: &mut PolicyHost<P>,
        now: Time,
    ) -> Result<(), CoallocError> {
        self.calls += 1;
        let snap = Snapshot {
            now,
            pools: &self.pools,
            running: &self.running,
            pending: &self.pending,
        };
        let outcome = host.call(&snap);
        match outcome.verdict {
            Ok(()) => {}
            Err(Failure::Refused(error)) => {
                return Err(CoallocError::Refused {
                    at: now,
                    error: error.clone(),
                })
            }
            Err(Failure::Failed(e)) => {
                return Err(CoallocError::Failed {
                    at: now,
                    message: e.to_string(),
                })
            }
            Err(f @ Failure::Abandoned { .. }) => {
                return Err(CoallocError::Failed {
                    at: now,
                    message: format!("{f:?}"),
                })
            }
        }
        let plan = outcome.plan;
        self.wake = plan.wake_at.into_option().filter(|&w| w > now);
        let idx = |j: JobId| j.0 as usize;
        for k in &plan.kills {
            let i = idx(k.job);
            self.finish(i, now, Outcome::Killed);
            if let RSome(b) = k.for_job {
                if let Some(job) = self.jobs.get_mut(idx(b)) {
                    job.killed.push(i);
                }
            }
        }
        let mut gone: Vec<usize> = Vec::new();
        for r in &plan.rejects {
            let i = idx(r.job);
            if let Some(procs) = self.unclaim(i, now) {
                self.release(&procs);
            }
            let j = &mut self.jobs[i];
            j.outcome = Some(if j.global {
                Outcome::Failed
            } else {
                Outcome::Rejected
            });
            self.state[i] = St::Done;
            gone.push(i);
        }
        // Claims and starts come after the kills and rejects have freed their processors; both
        // take free processors, and the validator has checked that the counts fit.
        for pl in &plan.placements {
            let i = idx(pl.job);
            let Shape::CoAllocated { pools } = &pl.shape else {
                continue;
            };
            if pl.start > now && pl.claim_from.into_option().is_some_and(|c| c <= now) {
                self.claim_seen[i] = self.calls;
                let same = self
                    .claimed
                    .get(&i)
                    .map(|(_, procs)| procs.iter().map(|(p, _)| *p).eq(pools.iter().map(|p| p.0)));
                if same == Some(true) {
                    continue;
                }
                if let Some(procs) = self.unclaim(i, now) {
                    self.release(&procs);
                }
                let mut procs = Vec::with_capacity(pools.len());
                for p in pools {
                    let got = self.take(p.0, self.jobs[i].size, i, now)?;
                    procs.push((p.0, got));
                }
                self.jobs[i].placed_at = pl.claim_from.into_option();
                self.claimed.insert(i, (now, procs));
            }
        }
        // A claim the policy no longer makes is released.
        let withdrawn: Vec<usize> = self
            .claimed
            .keys()
            .copied()
            .filter(|&i| self.claim_seen[i] != self.calls)
            .collect();
        for i in withdrawn {
            if !plan
                .placements
                .iter()
                .any(|p| idx(p.job) == i && p.start <= now)
            {
                if let Some(procs) = self.unclaim(i, now) {
                    self.release(&procs);
                }
            }
        }
        for pl in plan.placements.iter().filter(|p| p.start <= now) {
            let i = idx(pl.job);
            let mut procs = self.unclaim(i, now).unwrap_or_default();
            let wanted: Vec<u32> = match &pl.shape {
                Shape::CoAllocated { pools } => pools.iter().map(|p| p.0).collect(),
                Shape::Rigid { pool, .. }
                | Shape::Moldable { pool, .. }
                | Shape::Evolving { pool, .. } => vec![pool.0],
            };
            if !procs.iter().map(|(p, _)| *p).eq(wanted.iter().copied()) {
                self.release(&procs);
                procs.clear();
                for &p in &wanted {
                    let got = self.take(p, self.jobs[i].size, i, now)?;
                    procs.push((p, got));
                }
            }
            let request = self.requests[i].clone();
            let holds: Vec<PoolSteps> = pl.shape.holds(&request, now);
            let j = &mut self.jobs[i];
            j.start = Some(now);
            j.clusters = wanted;
            j.processors = procs;
            if j.global {
                j.placed_at.get_or_insert(now);
                j.outcome = Some(Outcome::Started);
            }
            self.ends.push(Reverse((now + j.runtime, i)));
            self.state[i] = St::Running;
            gone.push(i);
            self.running.push(Running {
                id: pl.job,
                user: 0,
                request,
                shape: pl.shape.clone(),
                start: now,
                holds: holds.into(),
                // §2.1: local jobs may be killed; whether they are is the policy's (GP/LP).
                killable: !self.jobs[i].global,
            });
        }
        if !gone.is_empty() {
            let state = &self.state;
            self.pending.retain(|p| state[idx(p.id)] == St::Pending);
            for &i in &gone {
                if !self.jobs[i].global {
                    let c = self.jobs[i].cluster as usize;
                    self.shown[c] -= 1;
                    while self.shown[c] < self.depth() {
                        let Some(job) = self.backlog[c].pop_front() else {
                            break;
                        };
                        self.shown[c] += 1;
                        self.pending.push(job);
                    }
                }
            }
        }
        Ok(())
    }
}

/// The §2.3 metrics of a replay over a window.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CoallocSummary {
    /// Global jobs submitted in the window.
    pub global_jobs: usize,
    /// Local jobs submitted in the window.
    pub local_jobs: usize,
    /// % of those global jobs started at their deadline.
    pub success_rate: f64,
    /// % of those local jobs killed (§2.3's kill rate).
    pub kill_rate: f64,
    /// % killed among those local jobs that started before the window's end, while global
    /// jobs still arrive: a job that starts later faces fewer deadlines the longer the
    /// queues, so `kill_rate` of a saturated configuration depends on the run's length.
    pub kill_rate_started: f64,
    /// % of those local jobs that started at or after the window's end, or never: above a few
    /// percent the local queues do not keep up (a saturated configuration).
    pub started_late: f64,
    /// % of the processors' time busy running jobs (claimed idle time not counted).
    pub total_load: f64,
    /// % of the processors' time running global jobs.
    pub global_load: f64,
    /// % of the processors' time running local jobs (killed ones until their kill).
    pub local_load: f64,
    /// % of the processors' time claimed and idle before a global job's start.
    pub wasted: f64,
    /// Mean response time (end − submit) of the completed local jobs, in seconds.
    pub local_response_time: f64,
    /// Mean wait (start − submit) of the completed local jobs, in seconds.
    pub local_wait: f64,
    /// Window start, in seconds.
    pub from: f64,
    /// Window end, in seconds.
    pub to: f64,
}

fn overlap(a: Time, b: Time, from: Time, to: Time) -> u128 {
    u128::from(b.min(to).saturating_sub(a.max(from)))
}

fn pct(num: f64, den: f64) -> f64 {
    if den > 0.0 {
        100.0 * num / den
    } else {
        0.0
    }
}

impl CoallocRun {
    /// The metrics over `[from, to)`: rates over the jobs submitted in it, loads over the
    /// processors' time in it. `None`: the whole replay, `[0, last event]`.
    pub fn summary(&self, window: Option<(Time, Time)>) -> CoallocSummary {
        let (from, to) = window.unwrap_or((0, self.last_event));
        let inside = |j: &&JobRun| j.submit >= from && j.submit < to.max(from + 1);
        let (mut g, mut started, mut l, mut killed) = (0usize, 0usize, 0usize, 0usize);
        let (mut early, mut early_killed) = (0usize, 0usize);
        let end = to.max(from + 1);
        let (mut resp, mut wait, mut done) = (0f64, 0f64, 0usize);
        let (mut area_g, mut area_l, mut area_w) = (0u128, 0u128, 0u128);
        for j in &self.jobs {
            if let (Some(s), Some(e)) = (j.start, j.end) {
                let a = overlap(s, e, from, to) * u128::from(j.width());
                if j.global {
                    area_g += a;
                } else {
                    area_l += a;
                }
            }
            for &(a, b, n) in &j.claims {
                area_w += overlap(a, b, from, to) * u128::from(n);
            }
        }
        for j in self.jobs.iter().filter(inside) {
            if j.global {
                g += 1;
                started += usize::from(j.outcome == Some(Outcome::Started));
            } else {
                l += 1;
                if j.start.is_some_and(|s| s < end) {
                    early += 1;
                    early_killed += usize::from(j.outcome == Some(Outcome::Killed));
                }
                match (j.outcome, j.start, j.end) {
                    (Some(Outcome::Killed), _, _) => killed += 1,
                    (Some(Outcome::Completed), Some(s), Some(e)) => {
                        done += 1;
                        resp += as_secs_f64(e - j.submit);
                        wait += as_secs_f64(s - j.submit);
                    }
                    _ => {}
                }
            }
        }
        let cap = f64::from(self.clusters) * f64::from(self.procs) * to.saturating_sub(from) as f64;
        CoallocSummary {
            global_jobs: g,
            local_jobs: l,
            success_rate: pct(started as f64, g as f64),
            kill_rate: pct(killed as f64, l as f64),
            kill_rate_started: pct(early_killed as f64, early as f64),
            started_late: pct((l - early) as f64, l as f64),
            total_load: pct((area_g + area_l) as f64, cap),
            global_load: pct(area_g as f64, cap),
            local_load: pct(area_l as f64, cap),
            wasted: pct(area_w as f64, cap),
            local_response_time: if done > 0 { resp / done as f64 } else { 0.0 },
            local_wait: if done > 0 { wait / done as f64 } else { 0.0 },
            from: as_secs_f64(from),
            to: as_secs_f64(to),
        }
    }

    /// The output of `esim coalloc`: the summary of the whole replay and every job's fate in
    /// trace order, times in seconds.
    pub fn output(&self) -> CoallocOutput {
        let secs = |t: Option<Time>| t.map(as_secs_f64);
        let jobs = self
            .jobs
            .iter()
            .zip(&self.ids)
            .map(|(j, id)| {
                let outcome = j.outcome.unwrap_or(Outcome::Failed);
                if j.global {
                    JobFate::Global {
                        id: id.clone(),
                        placed_at: secs(j.placed_at.filter(|_| j.start.is_some())),
                        start: secs(j.start),
                        end: secs(j.end),
                        clusters: j.clusters.clone(),
                        outcome,
                        killed: j.killed.iter().map(|&k| self.ids[k].clone()).collect(),
                    }
                } else {
                    JobFate::Local {
                        id: id.clone(),
                        cluster: j.cluster,
                        start: secs(j.start),
                        end: secs(j.end),
                        outcome,
                    }
                }
            })
            .collect();
        CoallocOutput {
            summary: self.summary(None),
            policy_calls: self.policy_calls,
            jobs,
        }
    }
}

/// One job's fate in `esim coalloc`'s output.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum JobFate {
    /// A local job.
    Local {
        /// The input's id, or its index.
        id: TraceId,
        /// Its cluster.
        cluster: u32,
        /// Start, seconds.
        start: Option<f64>,
        /// End (a killed job's kill time), seconds.
        end: Option<f64>,
        /// `completed` or `killed`.
        outcome: Outcome,
    },
    /// A global job.
    Global {
        /// The input's id, or its index.
        id: TraceId,
        /// Time of the successful try, seconds.
        placed_at: Option<f64>,
        /// Start (its deadline), seconds.
        start: Option<f64>,
        /// End, seconds.
        end: Option<f64>,
        /// Cluster of each component.
        clusters: Vec<u32>,
        /// `started` or `failed`.
        outcome: Outcome,
        /// The local jobs killed for it (their ids, or indices).
        killed: Vec<TraceId>,
    },
}

/// `esim coalloc`'s output.
#[derive(Clone, Debug, Serialize)]
pub struct CoallocOutput {
    /// §2.3's metrics over the whole replay.
    pub summary: CoallocSummary,
    /// Calls to the policy.
    pub policy_calls: u64,
    /// One entry per input job, in input order.
    pub jobs: Vec<JobFate>,
}
