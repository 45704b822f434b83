//! The scheduler loop: snapshot, policy, validator, act.
//!
//! The policy runs when something changes (submit, end, cancel, release, reconfigure: all call
//! [`Daemon::reschedule`]) or at the plan's `wake_at`, at most once per re-policy interval. The
//! first call after a quiet spell runs at once, so an idle cluster starts a job within
//! milliseconds of its submission; calls during a burst are coalesced to one per interval.
//!
//! The policy is called through its `sched_abi::PolicyHost` (see `crate::policy`), which
//! validates every plan; a panic, an error or a refused plan is logged there with the policy's
//! name, and the host answers with the last valid plan, re-validated against this snapshot. The
//! loop acts on the host's answer and has no check of its own.
//!
//! A call has a time budget (`[policy] time_budget_ms`). A call still running then is
//! abandoned through the host's `HostShare`, which logs and counts it and answers with the
//! same fallback the host gives on a failure; the loop acts on that and goes on. A thread
//! cannot be stopped, so the call runs on; until it returns, later runs act on the share's
//! fallback without calling the policy (one call in flight at most, so stuck calls do not pile
//! up), and its return asks for a run; those fallback runs come at most once a second. The
//! call's thread (one of its own, not tokio's blocking pool, which clients' listings may fill)
//! holds the host and the snapshot, never the daemon, so that a stuck call does not keep the
//! daemon (and its database) from shutting down.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use batch_proto::JobState;
use sched_core::Plan;

use crate::core::SnapshotData;
use crate::daemon::{lock, Daemon};
use crate::launch::now_ms;
use crate::policy::{BoxedPolicy, InForce};

/// Runs the loop until the task is dropped.
pub async fn run(d: Arc<Daemon>) {
    let mut last: Option<Instant> = None;
    let mut wake_at: Option<u64> = None;
    loop {
        let sleep = match wake_at {
            Some(t) => Duration::from_millis(t.saturating_sub(now_ms())),
            // Nothing planned: still look now and then (begin times, lost wake-ups).
            None => Duration::from_secs(30),
        };
        tokio::select! {
            _ = d.kick.notified() => {}
            _ = tokio::time::sleep(sleep) => {}
        }
        let mut interval = Duration::from_millis(d.settings().config.repolicy_interval_ms);
        // While an abandoned call still runs, each run only acts on the same stale fallback,
        // and its snapshot and validation cost as much as a real call's: at most one a second
        // (the call's return asks for a run at once).
        if d.policy()
            .share
            .in_flight()
            .is_some_and(|f| f.abandoned.is_some())
        {
            interval = interval.max(STUCK_INTERVAL);
        }
        if let Some(l) = last {
            let next = l + interval;
            if Instant::now() < next {
                tokio::time::sleep_until(next.into()).await;
            }
        }
        let began = Instant::now();
        let (ran, wake) = run_once_at(&d, wake_at).await;
        wake_at = wake;
        if ran {
            last = Some(began);
        }
    }
}

/// The shortest time between two runs while a call abandoned at its budget still runs.
const STUCK_INTERVAL: Duration = Duration::from_secs(1);

/// One policy call and its consequences; returns whether the policy was called, and when it
/// wants to be called again.
///
/// With no eligible pending job there is nothing to place, so the policy is not called and the
/// call does not count against the interval: the end of the last job on an idle cluster must not
/// delay the start of the next submission (a stateful policy sees the end in its next snapshot).
pub async fn run_once(d: &Arc<Daemon>) -> (bool, Option<u64>) {
    run_once_at(d, None).await
}

/// How late a policy call may come after the instant the previous plan asked for (`wake_at`)
/// and still be told that instant as its `now`, in ms beyond the re-policy interval.
const WAKE_SLACK_MS: u64 = 1_000;

/// [`run_once`], told the `wake_at` the loop slept for. Timers fire late (by a few ms, or by
/// the re-policy interval when the last call was recent), and a policy that acts *at* an
/// instant (the RPP starts a claimed job exactly at its deadline and fails a job it cannot
/// place then) would see the instant passed and fail the job. A call that comes at most the
/// re-policy interval plus [`WAKE_SLACK_MS`] after the asked instant is told that instant;
/// starts are stamped with the real time anyway (see `act`).
pub async fn run_once_at(d: &Arc<Daemon>, wake_at: Option<u64>) -> (bool, Option<u64>) {
    let real = now_ms();
    let slack = d.settings().config.repolicy_interval_ms + WAKE_SLACK_MS;
    let now = match wake_at {
        Some(w) if w <= real && real - w <= slack => w,
        _ => real,
    };
    let grace = d.settings().config.grace_period_ms;
    let snap = {
        let mut core = d.core();
        let snap = core.snapshot(now, grace);
        if snap.pending.is_empty() {
            core.expected.clear();
            core.expected_mold.clear();
            return (false, None);
        }
        snap
    };
    let snap = Arc::new(snap);
    let policy = d.policy();
    let snapped = Instant::now();
    let (plan, called) = if policy.share.dispatch() {
        let budget = Duration::from_millis(d.settings().config.policy.time_budget_ms);
        match call(d, &policy, &snap, budget).await {
            Some(plan) => (plan, true),
            None => return (true, None),
        }
    } else {
        // A call abandoned at its budget still runs: no second one meanwhile.
        (Arc::new(policy.share.fallback(&snap.view())), false)
    };
    let planned_in = snapped.elapsed();
    act(d, &snap, &plan).await;
    tracing::debug!(
        pending = snap.pending.len(),
        running = snap.running.len(),
        placed = plan.placements.len(),
        called,
        snapshot = ?Duration::from_millis(now_ms().saturating_sub(real)).saturating_sub(planned_in),
        plan = ?planned_in,
        wake_at = ?plan.wake_at.into_option(),
        "policy run"
    );
    (true, plan.wake_at.into_option().filter(|&t| t > now))
}

/// Starts a call of `host` on `snap` on a thread of its own, not tokio's blocking pool: a pool
/// that clients' listings fill (each waits there for its reader) would queue the policy behind
/// them, and the wait would count against the policy's budget. One thread per call is cheap at
/// the re-policy interval's rate; the pool serves only when no thread can be started.
fn start(host: Arc<Mutex<BoxedPolicy>>, snap: Arc<SnapshotData>) -> oneshot::Receiver<Arc<Plan>> {
    let (tx, rx) = oneshot::channel();
    let (again, view) = (Arc::clone(&host), Arc::clone(&snap));
    let spawned = std::thread::Builder::new()
        .name("batchd-policy".into())
        .spawn(move || {
            let _ = tx.send(lock(&host).plan_shared(&snap.view()));
        });
    if let Err(e) = spawned {
        tracing::warn!(
            "cannot start a thread for the policy ({e}); calling it on the blocking pool"
        );
        let (tx, rx) = oneshot::channel();
        tokio::task::spawn_blocking(move || {
            let _ = tx.send(lock(&again).plan_shared(&view.view()));
        });
        return rx;
    }
    rx
}

/// One policy call, dispatched on the share, on a thread of its own ([`start`]), waited for at
/// most `budget`; then abandoned, and the share's fallback is the answer. `None` when the
/// thread failed outside the host's containment (logged).
async fn call(
    d: &Arc<Daemon>,
    policy: &InForce,
    snap: &Arc<SnapshotData>,
    budget: Duration,
) -> Option<Arc<Plan>> {
    let mut running = start(Arc::clone(&policy.host), Arc::clone(snap));
    let joined = match tokio::time::timeout(budget, &mut running).await {
        Ok(joined) => joined,
        Err(_) => match policy.share.abandon(&snap.view(), budget) {
            Some(fallback) => {
                // Its return frees the policy for the next run, which should come at once.
                let d = Arc::clone(d);
                tokio::spawn(async move {
                    let _ = running.await;
                    d.reschedule();
                });
                return Some(Arc::new(fallback));
            }
            // It returned between the timer and the abandon: its answer stands.
            None => running.await,
        },
    };
    match joined {
        Ok(plan) => Some(plan),
        Err(e) => {
            tracing::error!(policy = %policy.share.name(), "policy call failed: {e}");
            None
        }
    }
}

/// Carries out a valid plan: starts what starts now, records expected starts, rejects and
/// kills.
async fn act(d: &Arc<Daemon>, snap: &SnapshotData, plan: &Plan) {
    let now = snap.now;
    let mut started = Vec::new();
    {
        let mut core = d.core();
        core.expected.clear();
        core.expected_ep.clear();
        core.expected_mold.clear();
        // Kills first: the nodes of the jobs killed go to the placements of this plan.
        for k in &plan.kills {
            let why = format!("preempted by policy {}: {}", d.policy_name(), k.reason);
            // Queued to the store before the start of any job placed on its nodes.
            if let Some(rec) = core.preempt(k.job.0, why) {
                d.store.write(rec);
            }
        }
        // Claims the plan no longer makes are given back (a job that starts now keeps its
        // claimed nodes: `start` takes them).
        let claimed: Vec<u64> = core.claims.keys().copied().collect();
        for id in claimed {
            if !plan.placements.iter().any(|p| p.job.0 == id) {
                if let Some(rec) = core.unclaim(id) {
                    d.store.write(rec);
                }
            }
        }
        for p in &plan.placements {
            let id = p.job.0;
            if let (sched_core::RSome(_), sched_core::Shape::CoAllocated { pools }, true) =
                (p.claim_from, &p.shape, p.start > now)
            {
                // Stored, so that a restart keeps the claim (`Core::restore_claim`).
                match core.claim(id, pools) {
                    Ok(Some(rec)) => d.store.write(rec),
                    Ok(None) => {}
                    Err(why) => tracing::warn!(job = id, "cannot claim nodes: {why}"),
                }
            }
            if p.start > now {
                core.expected.insert(id, p.start);
                match &p.shape {
                    sched_core::Shape::Evolving { steps, .. } => {
                        core.expected_ep.insert(id, steps.to_vec());
                    }
                    // cbf, easy, fcfs and bicriteria place a moldable job as `Moldable`; a
                    // policy that places it as `Rigid` gets no expected configuration shown.
                    sched_core::Shape::Moldable {
                        nodes, walltime, ..
                    } => {
                        core.expected_mold.insert(
                            id,
                            sched_core::MoldConfig {
                                nodes: *nodes,
                                walltime: *walltime,
                            },
                        );
                    }
                    _ => {}
                }
                continue;
            }
            // Real time has moved on since the snapshot; the start is stamped with the present
            // so that the walltime is counted from when the process really starts.
            match core.start(id, &p.shape, now_ms(), d.job_dir(id)) {
                Ok(rec) => started.push(rec),
                Err(why) => tracing::debug!(job = id, "not started: {why}"),
            }
        }
    }
    for rec in started {
        if crate::core::coorm::is_session(&rec) {
            crate::coorm::started(d, rec);
        } else {
            tokio::spawn(crate::executor::launch(Arc::clone(d), rec));
        }
    }
    crate::coorm::publish(d, now, plan);
    for r in &plan.rejects {
        // A co-allocated job that could not start by its deadline has failed (the issue's
        // "ends FAILED with reason Deadline"); the RPP words those rejects `Deadline: …`.
        let (state, detail) = if r.reason.starts_with("Deadline") {
            (JobState::Failed, r.reason.to_string())
        } else {
            (
                JobState::Cancelled,
                format!("rejected by policy {}: {}", d.policy_name(), r.reason),
            )
        };
        tracing::warn!(job = r.job.0, "{detail}");
        if let Err(e) = d.end_pending(r.job.0, state, Some(detail)).await {
            tracing::error!(job = r.job.0, "cannot store the rejection: {e}");
        }
    }
    for k in &plan.kills {
        tracing::warn!(job = k.job.0, "killed by policy: {}", k.reason);
        if let Err(e) = crate::executor::cancel(d, k.job.0) {
            tracing::error!(job = k.job.0, "{e}");
        }
    }
}
