//! What-if replays: a daemon's snapshot ([`SnapshotFile`]) played forward through a policy,
//! with no new arrivals, to see when each pending job would start under it.
//!
//! The replay calls the policy the way batchd's scheduler does: through sched-abi's
//! [`PolicyHost`] (the same containment and validator), with the whole plan asked for
//! (`Policy::plan`), on a snapshot built the way batchd builds its own. Its first call is on the
//! snapshot as taken, so under the daemon's own policy its first plan is the daemon's, expected
//! starts included. It then acts as batchd acts on a plan (a placement at or before `now` starts,
//! a later one is an expected start, kills and rejects are carried out) and moves to the next
//! event: a job's end, a planned start, the policy's `wake_at`, or a job's `--begin`. A job ends
//! when the run-time model says ([`Runtime`]); under [`Runtime::Walltime`] every job runs to the
//! end of what its shape holds, which is what a plan assumes, so a policy whose plan it keeps
//! (CBF, FCFS) starts every job at the first plan's expected start, which is the daemon's
//! `equeue --start`.
//!
//! What waits on something else is released as the replay goes: a dependency when the job it
//! names starts (`after`) or ends (`afterany`, `afterok`; a replayed job always completes, so
//! `afternotok` never holds), and a held job never starts.

use std::collections::{HashMap, HashSet};

use sched_abi::{HostedPolicy, PolicyHost};
use sched_core::metrics::{JobOutcome, Stats, DEFAULT_TAU};
use sched_core::{JobId, PoolSteps, Running, Snapshot, Time, FOREVER};
use serde::{Deserialize, Serialize};

pub mod format;

pub use format::{
    DepKind, Dependency, FormatError, Holder, NodeState, PendingEntry, PolicyInForce, PoolEntry,
    RunningEntry, SnapshotFile,
};

/// How long a job runs in a replay, as a share of what its shape holds (its time limit).
#[derive(Clone, Debug, PartialEq)]
pub enum Runtime {
    /// To its limit (the default): what every plan assumes.
    Walltime,
    /// This share of its limit, for every job.
    Ratio(f64),
    /// Each user's share, from past jobs ([`History`]); users without a past run to their
    /// limit.
    History(History),
}

/// Each user's past ratio of run time to time limit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    /// By user name.
    pub ratios: HashMap<String, f64>,
}

impl Runtime {
    /// The share of its limit a job of `user` runs.
    pub fn ratio(&self, user: &str) -> f64 {
        match self {
            Runtime::Walltime => 1.0,
            Runtime::Ratio(r) => *r,
            Runtime::History(h) => h.ratios.get(user).copied().unwrap_or(1.0),
        }
    }

    /// When a job that started at `start` and holds nodes until `held_end` ends under this model
    /// (at `held_end` at the latest, never before `now`).
    fn end(&self, user: &str, start: Time, held_end: Time, now: Time) -> Time {
        let r = self.ratio(user).clamp(0.0, 1.0);
        if r >= 1.0 || held_end == FOREVER {
            return held_end;
        }
        let limit = held_end.saturating_sub(start);
        let run = (limit as f64 * r).ceil() as u64;
        // A foreign snapshot may hold a job's nodes until before now: it ends now.
        start.saturating_add(run).clamp(now, held_end.max(now))
    }
}

/// What became of a pending job in a replay.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// It started (and ended) in the replay.
    Started,
    /// It is held: it never starts until released.
    Held,
    /// A dependency can never be met.
    DependencyNever,
    /// The policy rejected it.
    Rejected,
    /// Nothing more happened and the policy never started it (too large for what stays in
    /// service, or a policy that leaves it out).
    NotStarted,
}

/// One job of a replay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobPlan {
    /// The job.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// Its owner.
    pub user: String,
    /// Submission, ms since the epoch.
    pub submit: Time,
    /// Start, ms since the epoch (for a running job, when it started).
    pub start: Option<Time>,
    /// End under the run-time model.
    pub end: Option<Time>,
    /// Nodes per pool, `(pool id, nodes)`: the most it holds of each.
    pub parts: Vec<(u32, u32)>,
    /// What became of it.
    pub outcome: Outcome,
}

/// Mean, median and 95th percentile, in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// 95th percentile (nearest rank).
    pub p95: f64,
}

impl From<Stats> for Spread {
    fn from(s: Stats) -> Self {
        Spread {
            mean: s.mean,
            median: s.median,
            p95: s.p95,
        }
    }
}

/// A replay's figures over the pending jobs that started in it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Pending jobs that started.
    pub started: usize,
    /// Pending jobs that did not (held, waiting for ever, rejected, never placed).
    pub not_started: usize,
    /// Wait (start − submit), seconds.
    pub wait: Spread,
    /// Bounded slowdown, max(1, (end − submit) / max(run, τ)), τ = 10 s.
    pub bounded_slowdown: Spread,
    /// The horizon: from the snapshot to the last end of a job, seconds.
    pub horizon: f64,
    /// Node-time used by jobs (running and started) over the horizon, as a share of the
    /// pools' node-time over it.
    pub utilisation: f64,
}

/// One policy's replay of a snapshot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Replay {
    /// The pending jobs, in queue order.
    pub pending: Vec<JobPlan>,
    /// The jobs running at the snapshot, with their ends under the model.
    pub running: Vec<JobPlan>,
    /// Its figures.
    pub summary: Summary,
    /// Calls to the policy.
    pub calls: usize,
}

/// A replay that cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The policy failed (panic, error, refused plan) on a call.
    #[error("policy `{policy}` failed {} s after the snapshot: {why}", sched_core::time::as_secs_f64(*after))]
    Policy {
        /// The policy.
        policy: String,
        /// When, ms after the snapshot.
        after: Time,
        /// Why.
        why: String,
    },
}

struct Queued<'a> {
    entry: &'a PendingEntry,
    /// Left the queue (started or rejected).
    gone: bool,
}

/// A job on the machine in the replay.
struct OnMachine {
    /// Index into `pending` (or `NONE` for a job running at the snapshot).
    queued: usize,
    /// Index into the snapshot's running list for a job running at the snapshot.
    running: usize,
    end: Time,
    holds: Vec<PoolSteps>,
}

const NONE: usize = usize::MAX;

/// Replays `snap` through the policy `host` contains, jobs running as `runtime` says.
pub fn replay<P: HostedPolicy>(
    snap: &SnapshotFile,
    host: &mut PolicyHost<P>,
    runtime: &Runtime,
) -> Result<Replay, ReplayError> {
    let pools = snap.pools();
    let mut now = snap.now;
    let mut queue: Vec<Queued> = snap
        .pending
        .iter()
        .map(|entry| Queued { entry, gone: false })
        .collect();
    let index: HashMap<u64, usize> = snap
        .pending
        .iter()
        .enumerate()
        .map(|(i, p)| (p.job.id.0, i))
        .collect();
    let mut running: Vec<Running> = Vec::with_capacity(snap.running.len());
    let mut machine: Vec<OnMachine> = Vec::with_capacity(snap.running.len());
    for (k, r) in snap.running.iter().enumerate() {
        let held_end = r.job.expected_end();
        let end = match r.holder {
            Holder::Job => runtime.end(&r.user_name, r.job.start, held_end, now),
            _ => held_end,
        };
        running.push(r.job.clone());
        machine.push(OnMachine {
            queued: NONE,
            running: k,
            end,
            holds: r.job.holds.to_vec(),
        });
    }
    let mut started: HashMap<u64, Time> = HashMap::new();
    let mut ended: HashSet<u64> = HashSet::new();
    let mut starts: Vec<Option<(Time, Vec<PoolSteps>)>> = vec![None; queue.len()];
    let mut ends: Vec<Option<Time>> = vec![None; queue.len()];
    let mut rejected: Vec<bool> = vec![false; queue.len()];
    let mut running_ends: Vec<Time> = machine.iter().map(|m| m.end).collect();
    let mut area: u128 = 0;
    let mut last_end = now;
    let mut calls = 0;
    let mut pending = Vec::with_capacity(queue.len());
    loop {
        // Ends first: the policy sees every end of the instant.
        let mut i = 0;
        while i < machine.len() {
            if machine[i].end <= now {
                let m = machine.remove(i);
                running.remove(i);
                // Jobs' node-time only (a fair-start hold keeps nodes idle), and over the
                // horizon only: a running job's holds begin at its start, before the snapshot.
                if m.queued != NONE || snap.running[m.running].holder == Holder::Job {
                    area += crate::engine::area(&m.holds, m.end)
                        - crate::engine::area(&m.holds, snap.now.min(m.end));
                    last_end = last_end.max(m.end);
                }
                let id = match m.queued {
                    NONE => {
                        running_ends[m.running] = m.end;
                        snap.running[m.running].job.id.0
                    }
                    q => {
                        ends[q] = Some(m.end);
                        snap.pending[q].job.id.0
                    }
                };
                ended.insert(id);
            } else {
                i += 1;
            }
        }
        pending.clear();
        for q in queue.iter().filter(|q| !q.gone) {
            if ready(q.entry, &started, &ended) {
                pending.push(q.entry.job.clone());
            }
        }
        for r in &mut running {
            r.clip_holds(now);
        }
        let mut next: Option<Time> = machine
            .iter()
            .map(|m| m.end)
            .filter(|&e| e != FOREVER)
            .min();
        if !pending.is_empty() {
            let view = Snapshot {
                now,
                pools: &pools,
                running: &running,
                pending: &pending,
            };
            let failures = failures(host);
            let plan = host.plan(&view);
            calls += 1;
            // A replay of a failing policy would replay its fallback, not the policy: say so.
            if self::failures(host) != failures {
                return Err(ReplayError::Policy {
                    policy: host.name().to_string(),
                    after: now - snap.now,
                    why: host.last_failure().unwrap_or("unknown failure").to_string(),
                });
            }
            for k in &plan.kills {
                if let Some(i) = running.iter().position(|r| r.id == k.job) {
                    machine[i].end = now;
                    next = Some(now);
                }
            }
            for r in &plan.rejects {
                if let Some(&q) = index.get(&r.job.0) {
                    queue[q].gone = true;
                    rejected[q] = true;
                }
            }
            for p in &plan.placements {
                if p.start > now {
                    next = Some(next.map_or(p.start, |t| t.min(p.start)));
                    continue;
                }
                let Some(&q) = index.get(&p.job.0) else {
                    continue;
                };
                let entry = &snap.pending[q];
                let holds = p.shape.holds(&entry.job.request, now);
                let held_end = holds.iter().map(PoolSteps::end).max().unwrap_or(now);
                let end = runtime.end(&entry.user_name, now, held_end, now);
                queue[q].gone = true;
                started.insert(p.job.0, now);
                starts[q] = Some((now, holds.clone()));
                running.push(Running {
                    id: p.job,
                    user: entry.job.user,
                    request: entry.job.request.clone(),
                    shape: p.shape.clone(),
                    start: now,
                    holds: holds.clone().into(),
                    killable: false,
                });
                machine.push(OnMachine {
                    queued: q,
                    running: NONE,
                    end,
                    holds,
                });
                next = Some(next.map_or(end, |t| t.min(end)));
            }
            if let Some(w) = plan.wake_at.into_option().filter(|&w| w > now) {
                next = Some(next.map_or(w, |t| t.min(w)));
            }
            // A start releases the jobs that wait for it (`after`): batchd's next pass, right
            // after the one that started it, shows them to the policy at the same instant.
            let shown: HashSet<JobId> = pending.iter().map(|p| p.id).collect();
            if queue.iter().any(|q| {
                !q.gone && !shown.contains(&q.entry.job.id) && ready(q.entry, &started, &ended)
            }) {
                next = Some(now);
            }
        }
        // A job whose `--begin` comes later is in the snapshot with it: the plan answers it.
        match next {
            Some(t) if t > now => now = t,
            Some(_) => {}
            None => break,
        }
    }
    let pending_plans: Vec<JobPlan> = snap
        .pending
        .iter()
        .enumerate()
        .map(|(q, e)| {
            let outcome = if starts[q].is_some() {
                Outcome::Started
            } else if rejected[q] {
                Outcome::Rejected
            } else if e.held {
                Outcome::Held
            } else if e.dependencies.iter().any(|d| d.kind == DepKind::AfterNotOk)
                || e.reason.as_deref() == Some("DependencyNeverSatisfied")
            {
                Outcome::DependencyNever
            } else {
                Outcome::NotStarted
            };
            JobPlan {
                id: e.job.id.0,
                name: e.name.clone(),
                user: e.user_name.clone(),
                submit: e.job.submit,
                start: starts[q].as_ref().map(|s| s.0),
                end: ends[q],
                parts: starts[q].as_ref().map(|s| parts(&s.1)).unwrap_or_default(),
                outcome,
            }
        })
        .collect();
    let running_plans: Vec<JobPlan> = snap
        .running
        .iter()
        .enumerate()
        .filter(|(_, r)| r.holder == Holder::Job)
        .map(|(k, r)| JobPlan {
            id: r.job.id.0,
            name: r.name.clone(),
            user: r.user_name.clone(),
            submit: r.job.start,
            start: Some(r.job.start),
            end: Some(running_ends[k]),
            parts: parts(&r.job.holds),
            outcome: Outcome::Started,
        })
        .collect();
    // Nodes shown as held (out of service, a pool's end, a fair-start delay) are no job's:
    // they never count in `area` nor in the horizon.
    let summary = summarize(snap, &pending_plans, area, last_end);
    Ok(Replay {
        pending: pending_plans,
        running: running_plans,
        summary,
        calls,
    })
}

/// Calls that did not give the policy's own plan so far.
fn failures<P: HostedPolicy>(host: &PolicyHost<P>) -> u64 {
    let s = host.stats();
    s.panics + s.errors + s.refusals
}

/// Whether a pending job is shown to the policy at this point of the replay.
fn ready(e: &PendingEntry, started: &HashMap<u64, Time>, ended: &HashSet<u64>) -> bool {
    if e.eligible {
        return true;
    }
    if e.held || e.dependencies.is_empty() {
        // Held, or kept out for a reason the replay cannot lift (an array's throttle, a
        // dependency that can never be met).
        return false;
    }
    e.dependencies.iter().all(|d| match d.kind {
        DepKind::After => started.contains_key(&d.job) || ended.contains(&d.job),
        DepKind::AfterAny | DepKind::AfterOk => ended.contains(&d.job),
        DepKind::AfterNotOk => false,
    })
}

/// The most nodes each pool's holds reach.
fn parts(holds: &[PoolSteps]) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for h in holds {
        let n = h.steps.iter().map(|s| s.nodes).max().unwrap_or(0);
        match out.iter_mut().find(|(p, _)| *p == h.pool.0) {
            Some(e) => e.1 = e.1.max(n),
            None => out.push((h.pool.0, n)),
        }
    }
    out
}

fn summarize(snap: &SnapshotFile, jobs: &[JobPlan], area: u128, last_end: Time) -> Summary {
    let mut waits = Vec::new();
    let mut slowdowns = Vec::new();
    for j in jobs {
        if let (Some(start), Some(end)) = (j.start, j.end) {
            let m = JobOutcome {
                id: JobId(j.id),
                submit: j.submit,
                start,
                end,
                area: 0,
            }
            .metrics(DEFAULT_TAU);
            waits.push(m.wait);
            slowdowns.push(m.bounded_slowdown);
        }
    }
    let horizon = last_end.saturating_sub(snap.now);
    let capacity = u128::from(horizon) * u128::from(snap.nodes());
    Summary {
        started: waits.len(),
        not_started: jobs.len() - waits.len(),
        wait: Stats::of(waits).into(),
        bounded_slowdown: Stats::of(slowdowns).into(),
        horizon: sched_core::time::as_secs_f64(horizon),
        utilisation: if capacity == 0 {
            0.0
        } else {
            area as f64 / capacity as f64
        },
    }
}

#[cfg(test)]
mod tests;
