//! The discrete-event engine: replays jobs through a policy on a virtual clock in ms.
//!
//! Events are job submissions (from the workload, in submit order), job ends (the actual run
//! time, capped at what the job's shape holds: a job is killed at its walltime) and the
//! policy's wake-ups. At each instant the engine handles every end, then every submission,
//! then calls the policy once with a [`Snapshot`] ([`EventOrder::Instant`]; the other order,
//! [`EventOrder::PerEvent`], reproduces the pyss reference schedules). The call goes through
//! sched-abi's [`PolicyHost`], the containment batchd uses too: the plan is validated, and a
//! panic, a failed call or a refused plan is logged (naming the policy; the first
//! [`FAILURES_LOGGED`], then only counted) and replaced by the last valid plan, re-validated.
//! The engine kills, rejects and starts what the host's answer says; it has no check of its own.
//!
//! Cost per event: the pending and running lists are vectors updated in place (submissions
//! are appended, since the queue is in submit order; jobs leaving the head of the queue only
//! move its start, others close the gap behind them), ends are a binary heap. The snapshot's
//! running holds are clipped to the present in place, once per instant (the calls of one
//! instant share them), which is O(running), bounded by the nodes, and allocates nothing.
//! The engine gives the policy its account of how both lists changed at every call
//! ([`Changes`]): a job never changes in place, so what changed is the jobs that left and
//! arrived, and the policy's work per call need not be a pass over the queue (a plugin's is
//! told it through the boundary, which lends the lists without copying them).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

use sched_abi::{Borrowed, Check, Failure, HostedPolicy, PolicyHost};
use sched_core::idmap::IdMap;
use sched_core::metrics::{summarize, JobOutcome, Summary, DEFAULT_TAU};
use sched_core::policy::{
    Changes, ListChanges, Pending, Plan, Policy, PoolSteps, Running, Snapshot,
};
use sched_core::pool::Pool;
use sched_core::request::{JobId, Request};
use sched_core::time::{Duration, Time};
use sched_core::validate::PlanError;
use serde::Serialize;

use crate::swf::SwfJob;

/// How many policy failures (panics, errors, refused plans) a run logs one by one before it
/// only counts them.
pub const FAILURES_LOGGED: u64 = 20;

/// A job of the workload.
#[derive(Clone, Debug, PartialEq)]
pub struct SimJob {
    /// Its id; unique within the workload.
    pub id: JobId,
    /// Owner.
    pub user: u32,
    /// Submission time.
    pub submit: Time,
    /// What it asks for; the walltime in it is the estimate the policy sees.
    pub request: Request,
    /// How long it really runs; it is killed earlier if its shape holds less.
    pub runtime: Duration,
    /// Whether a policy may kill it while it runs.
    pub killable: bool,
}

impl From<&SwfJob> for SimJob {
    fn from(j: &SwfJob) -> Self {
        SimJob {
            id: j.id,
            user: j.user,
            submit: j.submit,
            request: Request::rigid(j.nodes, j.walltime),
            runtime: j.runtime,
            killable: false,
        }
    }
}

/// What the engine asks of the policy at each call (all of it is validated).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ValidateMode {
    /// The whole plan ([`sched_core::Policy::plan`]), future reservations included: catches a
    /// policy that plans an impossible future even when what starts now is fine.
    #[default]
    Full,
    /// Only what the engine acts on ([`sched_core::Policy::plan_starts`]: kills, rejects,
    /// placements starting now, the next expected start as a wake-up): still never
    /// over-commits a pool, but the reservations are neither answered nor checked. The same
    /// schedule as `Full`, without a long queue's expected starts at every call.
    Starts,
}

impl From<ValidateMode> for Check {
    fn from(m: ValidateMode) -> Check {
        match m {
            ValidateMode::Full => Check::Full,
            ValidateMode::Starts => Check::Starts,
        }
    }
}

/// How the events of one instant reach the policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventOrder {
    /// Every end, then every submission, then one policy call: the policy sees the instant
    /// whole (what batchd does with the events of one scheduling cycle).
    #[default]
    Instant,
    /// One policy call after each event, submissions before ends: the order of the pyss
    /// reference schedules, for job-by-job comparisons with them.
    PerEvent,
}

/// How a job left the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EndReason {
    /// It ran its full run time.
    Completed,
    /// It reached the end of its shape (its walltime) first and was killed.
    Walltime,
    /// The policy killed it.
    Killed,
}

/// What happened to one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct JobResult {
    /// The job.
    pub id: JobId,
    /// Submission.
    pub submit: Time,
    /// Start.
    pub start: Time,
    /// End.
    pub end: Time,
    /// Nodes held (the largest count of each pool's steps, summed over pools).
    pub nodes: u32,
    /// `start - submit`.
    pub wait: Duration,
    /// Node-milliseconds held.
    pub area: u128,
    /// Why it ended.
    pub reason: EndReason,
}

impl JobResult {
    /// The job as [`sched_core::metrics`] sees it.
    pub fn outcome(&self) -> JobOutcome {
        JobOutcome {
            id: self.id,
            submit: self.submit,
            start: self.start,
            end: self.end,
            area: self.area,
        }
    }
}

/// Counts of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Jobs in the workload.
    pub jobs: usize,
    /// Jobs that ran (started and ended).
    pub ran: usize,
    /// Jobs killed at their walltime.
    pub walltime_kills: usize,
    /// Jobs the policy killed.
    pub killed: usize,
    /// Jobs the policy rejected.
    pub rejected: usize,
    /// Plans refused by the validator (the last valid plan was used instead).
    pub refused_plans: usize,
    /// Policy calls that panicked (the last valid plan was used instead).
    pub policy_panics: usize,
    /// Policy calls that failed otherwise: an instance that could not be rebuilt after a panic
    /// (the last valid plan was used instead).
    pub policy_errors: usize,
    /// Calls to the policy.
    pub policy_calls: usize,
}

/// Wall-clock time spent, in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Timing {
    /// The whole run.
    pub total: f64,
    /// Inside `Policy::plan`.
    pub policy: f64,
    /// Inside the validator (the host's, on the policy's plans and on fallbacks).
    pub validate: f64,
}

/// The outcome of a run.
#[derive(Clone, Debug, Serialize)]
pub struct SimResults {
    /// Every job that ran, in queue order (submit time, then workload order).
    pub jobs: Vec<JobResult>,
    /// Jobs the policy rejected.
    pub rejected: Vec<JobId>,
    /// Counts.
    pub counts: Counts,
    /// Metrics over the jobs that ran (τ as configured).
    pub summary: Summary,
    /// Total nodes over all pools: the machine of the utilisation.
    pub nodes: u64,
    /// Where the time went.
    pub timing: Timing,
}

/// A run that cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Jobs wait, nothing runs, and the policy asked for no wake-up: time would stop.
    #[error(
        "stalled at {at} ms: {count} job(s) pending, nothing running and no wake-up from policy `{policy}`; first stuck: {}",
        fmt_ids(.jobs)
    )]
    Stall {
        /// The instant.
        at: Time,
        /// The policy.
        policy: String,
        /// How many jobs are stuck.
        count: usize,
        /// The first few stuck jobs, in queue order.
        jobs: Vec<JobId>,
    },
    /// Two jobs with one id.
    #[error("job id {0} appears twice in the workload")]
    DuplicateJob(JobId),
}

fn fmt_ids(ids: &[JobId]) -> String {
    ids.iter()
        .map(|j| j.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Sees what the engine does: for tests (plans and reservations) and progress bars.
pub trait Observer {
    /// A plan the policy answered and the validator's verdict on it, with the snapshot it
    /// answered. Not called for a call that panicked or failed (there is no plan).
    fn on_plan(
        &mut self,
        _snapshot: &Snapshot<'_>,
        _plan: &Plan,
        _verdict: Result<(), &PlanError>,
    ) {
    }
    /// A job ended; `ended` jobs of `total` are done (ended or rejected).
    fn on_job_end(&mut self, _result: &JobResult, _ended: usize, _total: usize) {}
}

/// A run's settings.
pub struct Simulation<'o> {
    /// The pools, indexed by `PoolId.0`.
    pub pools: Vec<Pool>,
    /// The policy's name, for messages.
    pub policy_name: String,
    /// What to validate.
    pub validate: ValidateMode,
    /// The bound of the bounded slowdown.
    pub tau: Duration,
    /// How the events of one instant reach the policy.
    pub events: EventOrder,
    observer: Option<&'o mut dyn Observer>,
}

impl<'o> Simulation<'o> {
    /// A run on `pools` of the policy named `policy_name`, validating full plans, τ = 10 s.
    pub fn new(pools: Vec<Pool>, policy_name: impl Into<String>) -> Self {
        Simulation {
            pools,
            policy_name: policy_name.into(),
            validate: ValidateMode::Full,
            tau: DEFAULT_TAU,
            events: EventOrder::Instant,
            observer: None,
        }
    }

    /// Reports plans and ends to `observer`.
    pub fn observer(mut self, observer: &'o mut dyn Observer) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Validates plans as `mode` says.
    pub fn validate(mut self, mode: ValidateMode) -> Self {
        self.validate = mode;
        self
    }

    /// Hands the events of an instant to the policy as `order` says.
    pub fn events(mut self, order: EventOrder) -> Self {
        self.events = order;
        self
    }

    /// Replays `jobs` through `policy`, contained by a [`PolicyHost`] of the run's own that
    /// catches its panics.
    pub fn run(self, policy: &mut dyn Policy, jobs: Vec<SimJob>) -> Result<SimResults, SimError> {
        let mut host = PolicyHost::new(Borrowed::new(self.policy_name.clone(), policy))
            .log_limit(Some(FAILURES_LOGGED));
        self.run_hosted(&mut host, jobs)
    }

    /// Replays `jobs` through the policy `host` contains (a plugin's, whose errors the host
    /// sees, unlike a [`Policy`]'s empty plan). The host validates as this simulation's
    /// [`ValidateMode`] says; the counts and timing are those of this run alone.
    pub fn run_hosted<P: HostedPolicy>(
        self,
        host: &mut PolicyHost<P>,
        jobs: Vec<SimJob>,
    ) -> Result<SimResults, SimError> {
        host.set_check(self.validate.into());
        Engine::new(self, jobs).and_then(|e| e.run(host))
    }
}

/// A job on the machine.
/// A running job's origin when it started after the last call.
const NEW: usize = usize::MAX;

struct Active {
    /// Index into `Engine::jobs`.
    job: usize,
    start: Time,
    end: Time,
    /// What the shape holds from the start on (the snapshot's copy is clipped to the present).
    held: Footprint,
    nodes: u32,
    reason: EndReason,
}

struct Engine<'o> {
    sim: Simulation<'o>,
    jobs: Vec<SimJob>,
    index: IdMap<usize>,
    next_submit: usize,
    /// The queue is `pending[head..]`: jobs leaving its head (FCFS starts them all there) only
    /// move `head`, instead of shifting a long queue at every start; the dead prefix is dropped
    /// once it is as long as the queue.
    pending: Vec<Pending>,
    /// The index into `jobs` of each entry of `pending`: increasing, since the queue is in
    /// submit order, so a leaving job's position is a binary search.
    pending_job: Vec<usize>,
    head: usize,
    running: Vec<Running>,
    active: Vec<Active>,
    /// The instant `running`'s holds were last clipped at (those of jobs started since hold
    /// nothing before it).
    clipped_at: Option<Time>,
    /// Positions in `pending` of the jobs a plan starts or rejects (reused between calls).
    leaving: Vec<usize>,
    /// How the queue changed since the last call, told to the policy ([`Changes`]): the queue
    /// is in submit order, so arrivals are appended.
    queue_changes: ListChanges,
    /// How the running list changed since the last call, told with the queue's to the policy
    /// ([`Changes`]): ended jobs leave it in place, started ones are appended.
    running_changes: ListChanges,
    /// For each entry of `running`, its position in the list the last call saw (`NEW` for a
    /// job started since).
    running_origin: Vec<usize>,
    /// `(end, start order, job index)`, earliest first.
    ends: BinaryHeap<Reverse<(Time, u64, usize)>>,
    started: u64,
    wake: Option<Time>,
    results: Vec<Option<JobResult>>,
    rejected: Vec<JobId>,
    done: usize,
    counts: Counts,
    timing: Timing,
}

impl<'o> Engine<'o> {
    fn new(sim: Simulation<'o>, mut jobs: Vec<SimJob>) -> Result<Self, SimError> {
        // Queue order is submit time, then workload order: a stable sort keeps the latter.
        jobs.sort_by_key(|j| j.submit);
        let mut index = IdMap::with_capacity_and_hasher(jobs.len(), Default::default());
        for (i, j) in jobs.iter().enumerate() {
            if index.insert(j.id, i).is_some() {
                return Err(SimError::DuplicateJob(j.id));
            }
        }
        let n = jobs.len();
        Ok(Engine {
            sim,
            jobs,
            index,
            next_submit: 0,
            pending: Vec::new(),
            pending_job: Vec::new(),
            head: 0,
            running: Vec::new(),
            active: Vec::new(),
            clipped_at: None,
            leaving: Vec::new(),
            queue_changes: ListChanges::default(),
            running_changes: ListChanges::default(),
            running_origin: Vec::new(),
            ends: BinaryHeap::new(),
            started: 0,
            wake: None,
            results: vec![None; n],
            rejected: Vec::new(),
            done: 0,
            counts: Counts {
                jobs: n,
                ..Counts::default()
            },
            timing: Timing::default(),
        })
    }

    /// The next job ending at `now`, removed from the heap.
    fn pop_end(&mut self, now: Time) -> Option<usize> {
        match self.ends.peek() {
            Some(&Reverse((t, _, i))) if t == now => {
                self.ends.pop();
                Some(i)
            }
            _ => None,
        }
    }

    /// Queues the next job of the workload if it is submitted at `now`.
    fn submit_next(&mut self, now: Time) -> bool {
        let Some(j) = self.jobs.get(self.next_submit) else {
            return false;
        };
        if j.submit != now {
            return false;
        }
        self.pending.push(Pending {
            wants_view: false,
            claimed: Default::default(),
            id: j.id,
            user: j.user,
            submit: j.submit,
            earliest_start: j.submit,
            priority: 0,
            request: j.request.clone(),
        });
        self.pending_job.push(self.next_submit);
        self.next_submit += 1;
        self.queue_changes.arrived += 1;
        true
    }

    fn next_event(&self) -> Option<Time> {
        let end = self.ends.peek().map(|Reverse((t, _, _))| *t);
        let submit = self.jobs.get(self.next_submit).map(|j| j.submit);
        [end, submit, self.wake].into_iter().flatten().min()
    }

    fn run<P: HostedPolicy>(mut self, policy: &mut PolicyHost<P>) -> Result<SimResults, SimError> {
        let t0 = Instant::now();
        let (stats0, timing0) = (policy.stats(), policy.timing());
        while let Some(now) = self.next_event() {
            if self.wake.is_some_and(|w| w <= now) {
                self.wake = None;
            }
            match self.sim.events {
                // Ends before submissions: a job submitted the instant another ends sees the
                // freed nodes, and the policy sees everything that happened at the instant
                // at once. The reference (pyss) handles every submission of a second before
                // its ends, and schedules after each event (see docs/results.md).
                EventOrder::Instant => {
                    while let Some(i) = self.pop_end(now) {
                        self.finish(i, now);
                    }
                    while self.submit_next(now) {}
                    self.call(policy, now);
                }
                EventOrder::PerEvent => {
                    let mut called = false;
                    while self.submit_next(now) {
                        self.call(policy, now);
                        called = true;
                    }
                    while let Some(i) = self.pop_end(now) {
                        self.finish(i, now);
                        self.call(policy, now);
                        called = true;
                    }
                    if !called {
                        self.call(policy, now);
                    }
                }
            }
            let queue = &self.pending[self.head..];
            if self.next_event().is_none() && !queue.is_empty() {
                return Err(SimError::Stall {
                    at: now,
                    policy: self.sim.policy_name.clone(),
                    count: queue.len(),
                    jobs: queue.iter().take(10).map(|p| p.id).collect(),
                });
            }
        }
        self.timing.total = t0.elapsed().as_secs_f64();
        let (stats, timing) = (policy.stats(), policy.timing());
        let count = |now: u64, before: u64| usize::try_from(now - before).unwrap_or(usize::MAX);
        self.counts.refused_plans = count(stats.refusals, stats0.refusals);
        self.counts.policy_panics = count(stats.panics, stats0.panics);
        self.counts.policy_errors = count(stats.errors, stats0.errors);
        self.timing.policy = (timing.policy - timing0.policy).as_secs_f64();
        self.timing.validate = (timing.validate - timing0.validate).as_secs_f64();
        Ok(self.results())
    }

    /// Ends the job at index `i` at `now`, if it is still running (a killed job's end event
    /// comes later and finds it gone).
    fn finish(&mut self, i: usize, now: Time) {
        let id = self.jobs[i].id;
        // A linear search and an order-keeping removal: the running list is bounded by the
        // nodes, the snapshot's clipping walks it at every instant anyway, and a list that keeps
        // its order crosses the plugin boundary as one dropped entry (a swap would resend the
        // moved job).
        let Some(pos) = self.running.iter().position(|r| r.id == id) else {
            return;
        };
        self.running.remove(pos);
        match self.running_origin.remove(pos) {
            NEW => self.running_changes.arrived -= 1,
            origin => self.running_changes.left.push(origin),
        }
        let a = self.active.remove(pos);
        let reason = if now < a.end {
            EndReason::Killed
        } else {
            a.reason
        };
        match reason {
            EndReason::Completed => {}
            EndReason::Walltime => self.counts.walltime_kills += 1,
            EndReason::Killed => self.counts.killed += 1,
        }
        let job = &self.jobs[a.job];
        let result = JobResult {
            id,
            submit: job.submit,
            start: a.start,
            end: now,
            nodes: a.nodes,
            wait: a.start.saturating_sub(job.submit),
            area: a.held.area(now),
            reason,
        };
        self.counts.ran += 1;
        self.done += 1;
        self.results[a.job] = Some(result);
        if let Some(o) = self.sim.observer.as_deref_mut() {
            o.on_job_end(&result, self.done, self.jobs.len());
        }
    }

    fn call<P: HostedPolicy>(&mut self, host: &mut PolicyHost<P>, now: Time) {
        // Jobs started since the last clip hold nothing before it, and those started at `now`
        // hold exactly their holds: only time passing changes what the others hold from now.
        // Clipping what was clipped at an earlier instant is clipping the whole holds, so the
        // snapshot's holds are clipped in place.
        if self.clipped_at != Some(now) {
            for r in &mut self.running {
                r.clip_holds(now);
            }
            self.clipped_at = Some(now);
        }
        let snapshot = Snapshot {
            now,
            pools: &self.sim.pools,
            running: &self.running,
            pending: &self.pending[self.head..],
        };
        // Several jobs may have ended since the last call, in any order of their positions.
        self.running_changes.left.sort_unstable();
        let changes = Changes {
            running: Some(std::mem::take(&mut self.running_changes)),
            pending: Some(std::mem::take(&mut self.queue_changes)),
        };
        let outcome = host.call_told(&snapshot, &changes);
        if let Changes {
            running: Some(mut running),
            pending: Some(mut pending),
        } = changes
        {
            running.clear();
            pending.clear();
            (self.running_changes, self.queue_changes) = (running, pending);
        }
        self.running_origin.clear();
        self.running_origin.extend(0..self.running.len());
        self.counts.policy_calls += 1;
        if let (Some(o), Some(proposed)) = (self.sim.observer.as_deref_mut(), outcome.proposed) {
            let verdict = match outcome.verdict {
                Err(Failure::Refused(e)) => Err(e),
                _ => Ok(()),
            };
            o.on_plan(&snapshot, proposed, verdict);
        }
        self.apply(outcome.plan, now);
    }

    fn apply(&mut self, plan: &Plan, now: Time) {
        for k in &plan.kills {
            if let Some(&i) = self.index.get(&k.job) {
                tracing::debug!("job {} killed at {now} ms: {}", k.job, k.reason);
                self.finish(i, now);
            }
        }
        let mut leaving = std::mem::take(&mut self.leaving);
        for r in &plan.rejects {
            tracing::debug!("job {} rejected at {now} ms: {}", r.job, r.reason);
            if let Some((k, _)) = self.find_pending(r.job) {
                leaving.push(k);
            }
            self.rejected.push(r.job);
            self.counts.rejected += 1;
            self.done += 1;
        }
        // A planned start is an expected start: the engine comes back at the earliest one, so
        // a policy need not ask for a wake-up at its own reservations.
        let mut next_start: Option<Time> = None;
        for p in &plan.placements {
            if p.start > now {
                next_start = Some(next_start.map_or(p.start, |t: Time| t.min(p.start)));
                continue;
            }
            let Some((k, i)) = self.find_pending(p.job) else {
                continue;
            };
            let job = &self.jobs[i];
            let holds = p.shape.holds(&job.request, now);
            let held = holds
                .iter()
                .map(PoolSteps::end)
                .max()
                .unwrap_or(now)
                .saturating_sub(now);
            let (run, reason) = if job.runtime <= held {
                (job.runtime, EndReason::Completed)
            } else {
                (held, EndReason::Walltime)
            };
            let end = now.saturating_add(run);
            let nodes = holds
                .iter()
                .map(|h| sched_core::request::max_nodes(&h.steps))
                .sum();
            let held = Footprint::of(&holds);
            self.running_origin.push(NEW);
            self.running_changes.arrived += 1;
            self.running.push(Running {
                id: job.id,
                user: job.user,
                request: job.request.clone(),
                shape: p.shape.clone(),
                start: now,
                holds: holds.into(),
                killable: job.killable,
            });
            self.active.push(Active {
                job: i,
                start: now,
                end,
                held,
                nodes,
                reason,
            });
            self.ends.push(Reverse((end, self.started, i)));
            self.started += 1;
            leaving.push(k);
        }
        self.remove_pending(&mut leaving);
        self.leaving = leaving;
        let wake = plan.wake_at.into_option().filter(|&w| w > now);
        self.wake = match (wake, next_start) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// The position in `pending` and the index in `jobs` of the queued job `id`. The jobs a plan
    /// starts are mostly near the head of the queue: a short scan there finds them without a
    /// lookup in the workload's index, whose entries are scattered over memory (a cache miss
    /// per start).
    fn find_pending(&self, id: JobId) -> Option<(usize, usize)> {
        const NEAR: usize = 32;
        if let Some(d) = self.pending[self.head..]
            .iter()
            .take(NEAR)
            .position(|p| p.id == id)
        {
            let k = self.head + d;
            return Some((k, self.pending_job[k]));
        }
        let &i = self.index.get(&id)?;
        Some((self.pending_pos(i)?, i))
    }

    /// The position in `pending` of the queued job at index `i` of `jobs`.
    fn pending_pos(&self, i: usize) -> Option<usize> {
        let k = self.head + self.pending_job[self.head..].binary_search(&i).ok()?;
        Some(k)
    }

    /// Removes the queued jobs at `positions` (into `pending`, any order, repeats allowed) and
    /// empties the list. A removal at the head of the queue moves `head`; any other closes the
    /// gaps from the first removed position on, in one pass.
    fn remove_pending(&mut self, positions: &mut Vec<usize>) {
        if positions.is_empty() {
            return;
        }
        positions.sort_unstable();
        positions.dedup();
        // What left the queue the policy just saw, for the account of the next call.
        self.queue_changes
            .left
            .extend(positions.iter().map(|&k| k - self.head));
        let first = positions[0];
        if positions.len() == 1 || positions.windows(2).all(|w| w[1] == w[0] + 1) {
            if first == self.head {
                self.head += positions.len();
            } else {
                let n = positions.len();
                self.pending.drain(first..first + n);
                self.pending_job.drain(first..first + n);
            }
        } else {
            // Close the gaps in one pass: each kept entry moves once, to its final place.
            let mut gone = positions.iter().copied().peekable();
            let mut w = first;
            for k in first..self.pending.len() {
                if gone.next_if_eq(&k).is_some() {
                    continue;
                }
                self.pending.swap(w, k);
                self.pending_job.swap(w, k);
                w += 1;
            }
            self.pending.truncate(w);
            self.pending_job.truncate(w);
        }
        positions.clear();
        // Drop the dead prefix once it is as long as the queue: each job is moved O(1) times
        // on average.
        if self.head > 0 && self.head >= self.pending.len() - self.head {
            self.pending.drain(..self.head);
            self.pending_job.drain(..self.head);
            self.head = 0;
        }
    }

    fn results(self) -> SimResults {
        let jobs: Vec<JobResult> = self.results.into_iter().flatten().collect();
        let nodes: u64 = self.sim.pools.iter().map(|p| u64::from(p.nodes)).sum();
        let outcomes: Vec<JobOutcome> = jobs.iter().map(JobResult::outcome).collect();
        SimResults {
            summary: summarize(&outcomes, nodes, self.sim.tau),
            jobs,
            rejected: self.rejected,
            counts: self.counts,
            nodes,
            timing: self.timing,
        }
    }
}

#[cfg(test)]
use sched_core::request::Step;

/// What `h` still holds from `now` on; `None` once it holds nothing.
#[cfg(test)]
fn clip(h: &PoolSteps, now: Time) -> Option<PoolSteps> {
    if h.start >= now {
        return Some(h.clone());
    }
    let mut t = h.start;
    let mut steps = Vec::with_capacity(h.steps.len());
    for s in &h.steps {
        let end = t.saturating_add(s.duration);
        if end > now {
            steps.push(Step::new(end - t.max(now), s.nodes));
        }
        t = end;
    }
    (!steps.is_empty()).then_some(PoolSteps {
        pool: h.pool,
        start: now,
        steps: steps.into(),
    })
}

/// What a started job holds, kept to count its node-milliseconds when it ends: one step of
/// one pool as its three numbers (a rigid job, without a second copy of its holds: two
/// allocations per start), any other shape as its holds.
enum Footprint {
    One {
        start: Time,
        duration: Duration,
        nodes: u32,
    },
    Holds(Vec<PoolSteps>),
}

impl Footprint {
    fn of(holds: &[PoolSteps]) -> Self {
        match holds {
            [h] if h.steps.len() == 1 => Footprint::One {
                start: h.start,
                duration: h.steps[0].duration,
                nodes: h.steps[0].nodes,
            },
            _ => Footprint::Holds(holds.to_vec()),
        }
    }

    /// Node-milliseconds held before `end`.
    fn area(&self, end: Time) -> u128 {
        match *self {
            Footprint::One {
                start,
                duration,
                nodes,
            } => {
                let e = start.saturating_add(duration).min(end);
                u128::from(e.saturating_sub(start)) * u128::from(nodes)
            }
            Footprint::Holds(ref holds) => area(holds, end),
        }
    }
}

/// Node-milliseconds `holds` cover before `end` (the replays' utilisation, here and in
/// what-if).
pub(crate) fn area(holds: &[PoolSteps], end: Time) -> u128 {
    let mut total = 0u128;
    for h in holds {
        let mut t = h.start;
        for s in &h.steps {
            let e = t.saturating_add(s.duration).min(end);
            if e > t {
                total += u128::from(e - t) * u128::from(s.nodes);
            }
            t = t.saturating_add(s.duration);
            // The steps after `end` cover nothing before it.
            if t >= end {
                break;
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use sched_core::pool::PoolId;

    #[test]
    fn clip_drops_the_past() {
        let h = PoolSteps {
            pool: PoolId(0),
            start: 10,
            steps: sched_core::rvec![Step::new(5, 2), Step::new(10, 4)],
        };
        assert_eq!(clip(&h, 5), Some(h.clone()));
        assert_eq!(
            clip(&h, 12),
            Some(PoolSteps {
                pool: PoolId(0),
                start: 12,
                steps: sched_core::rvec![Step::new(3, 2), Step::new(10, 4)]
            })
        );
        assert_eq!(
            clip(&h, 15),
            Some(PoolSteps {
                pool: PoolId(0),
                start: 15,
                steps: sched_core::rvec![Step::new(10, 4)]
            })
        );
        assert_eq!(clip(&h, 25), None);
    }

    #[test]
    fn clipping_in_place_instant_after_instant_is_clipping_the_whole_holds() {
        let holds = vec![
            PoolSteps {
                pool: PoolId(0),
                start: 10,
                steps: sched_core::rvec![Step::new(5, 2), Step::new(10, 4)],
            },
            PoolSteps {
                pool: PoolId(1),
                start: 12,
                steps: sched_core::rvec![Step::new(0, 3), Step::new(4, 1)],
            },
            PoolSteps {
                pool: PoolId(2),
                start: 30,
                steps: sched_core::rvec![Step::new(0, 7)],
            },
            PoolSteps {
                pool: PoolId(0),
                start: 11,
                steps: sched_core::rvec![Step::new(9, 1)],
            },
        ];
        let instants = [0, 10, 12, 14, 16, 20, 25, 30, 31];
        for skip in 0..instants.len() {
            let mut r = Running {
                id: JobId(1),
                user: 0,
                request: Request::rigid(1, 1),
                shape: sched_core::Shape::rigid(PoolId(0), 1, 1),
                start: 0,
                holds: holds.clone().into(),
                killable: false,
            };
            for &now in instants.iter().skip(skip) {
                r.clip_holds(now);
                let want: Vec<PoolSteps> = holds.iter().filter_map(|h| clip(h, now)).collect();
                assert_eq!(r.holds, want, "at {now}, from instant {skip}");
            }
        }
    }

    #[test]
    fn area_stops_at_the_end() {
        let h = PoolSteps {
            pool: PoolId(0),
            start: 10,
            steps: sched_core::rvec![Step::new(5, 2), Step::new(10, 4)],
        };
        assert_eq!(area(std::slice::from_ref(&h), 25), 50);
        assert_eq!(area(std::slice::from_ref(&h), 17), 18);
    }
}
