//! The scheduler loop: snapshot, policy, validator, act.
//!
//! The policy runs when something changes (submit, end, cancel, release, reconfigure: all call
//! [`Daemon::reschedule`]) or at the plan's `wake_at`. A pass runs at once when none is running
//! and the last one ended at least a gap ago ([`Pacing`]), so a submission after a quiet spell,
//! or right after the end of the job before it, starts within milliseconds, while a burst of
//! events costs a pass per gap at most: events during a pass or during the gap after it are
//! folded into the next pass. While a node is free, the gap is what the last pass cost times
//! `[scheduling] gap_factor`, within `min_gap_ms..=max_gap_ms`: a pass over many pending jobs
//! costs more, so they come further apart, and the share of the time the daemon spends planning
//! stays below 1 / (1 + gap_factor). While no node is free no job can start, and a pass would
//! only update expected starts and pending reasons: the gap is then `max_gap_ms`, so a burst of
//! submissions into a full cluster costs few passes; a job's end that frees nodes during that
//! gap shortens it. A `repolicy_interval_ms` below `max_gap_ms` lowers the longest gap to it.
//!
//! While CooRM launcher sessions are open, passes follow the paper's rule instead, as the
//! simulator does: they begin at least `repolicy_interval_ms` apart (§III-C: the policy runs
//! "at most once every re-policy interval"); each pass may send every waiting launcher a new
//! view, and the interval bounds how often a launcher must select again.
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

use sched_core::Plan;

use crate::core::{Forget, SnapshotData};
use crate::daemon::Daemon;
use crate::launch::now_ms;
use crate::policy::{BoxedPolicy, InForce};
use crate::sync::lock;

/// Runs the loop until the task is dropped.
pub async fn run(d: Arc<Daemon>) {
    let mut last: Option<Pass> = None;
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
        // Wait out the gap; a change meanwhile (a job's end freeing nodes) may shorten it.
        let pacing = Pacing::of(&d.settings().config);
        loop {
            match pacing.next_pass(last, Conditions::of(&d)) {
                Some(next) if Instant::now() < next => tokio::select! {
                    _ = tokio::time::sleep_until(next.into()) => break,
                    _ = d.kick.notified() => {}
                },
                _ => break,
            }
        }
        // The pass below sees every change whose kick came until now: a kick left from the gap
        // would only ask for a second pass over the same state.
        tokio::select! {
            biased;
            _ = d.kick.notified() => {}
            _ = std::future::ready(()) => {}
        }
        let began = Instant::now();
        let (ran, wake) = run_once_at(&d, wake_at).await;
        wake_at = wake;
        if ran {
            last = Some(Pass {
                began,
                ended: Instant::now(),
            });
        }
    }
}

/// When a pass that called the policy began and ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    /// When it began.
    pub began: Instant,
    /// When it ended.
    pub ended: Instant,
}

/// How far apart passes come (docs/batchd.md, *Scheduling*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pacing {
    /// The shortest gap between the end of a pass and the beginning of the next.
    pub min_gap: Duration,
    /// The longest gap the cost of a pass can ask for, and the gap while no node is free.
    pub max_gap: Duration,
    /// The gap is the last pass's cost times this, within `min_gap..=max_gap`.
    pub factor: u32,
    /// The re-policy interval: the shortest time between the beginnings of two passes while
    /// launcher sessions are open.
    pub interval: Duration,
}

impl Pacing {
    /// The pacing `config` asks for. A re-policy interval below `max_gap_ms` lowers the
    /// longest gap to it: a config that asks for passes that often gets them.
    pub fn of(config: &crate::config::Config) -> Pacing {
        let s = &config.scheduling;
        let max_gap = s.max_gap_ms.min(config.repolicy_interval_ms);
        Pacing {
            min_gap: Duration::from_millis(s.min_gap_ms),
            max_gap: Duration::from_millis(max_gap.max(s.min_gap_ms)),
            factor: s.gap_factor,
            interval: Duration::from_millis(config.repolicy_interval_ms),
        }
    }

    /// The gap after a pass that cost `cost`.
    pub fn gap(&self, cost: Duration) -> Duration {
        cost.saturating_mul(self.factor)
            .clamp(self.min_gap, self.max_gap.max(self.min_gap))
    }

    /// The earliest instant the next pass may begin, after the last pass that called the
    /// policy (`None`: none yet, so at once), under `now`. Any instant at or before now means
    /// at once.
    pub fn next_pass(&self, last: Option<Pass>, now: Conditions) -> Option<Instant> {
        let last = last?;
        let mut at = if now.sessions {
            // The paper's rule, and only it, as the simulator (esim) applies it.
            last.began + self.interval
        } else if now.free_nodes {
            last.ended + self.gap(last.ended.saturating_duration_since(last.began))
        } else {
            // No job can start: the pass would only update expected starts and reasons.
            last.ended + self.max_gap.max(self.min_gap)
        };
        if now.stuck {
            at = at.max(last.began + STUCK_INTERVAL);
        }
        Some(at)
    }
}

/// What the pacing of the next pass depends on besides the last pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Conditions {
    /// A node is free in some pool, so a pass may start a job: it comes after the cost-based
    /// gap, otherwise after `max_gap`.
    pub free_nodes: bool,
    /// CooRM launcher sessions are open: passes begin the re-policy interval apart, whatever
    /// they cost and whether a node is free.
    pub sessions: bool,
    /// A call abandoned at its time budget still runs: each pass only acts on the same stale
    /// fallback, and its snapshot and validation cost as much as a real call's, so passes
    /// begin at least a second apart (the call's return asks for a pass at once).
    pub stuck: bool,
}

impl Conditions {
    /// The daemon's conditions now.
    pub fn of(d: &Daemon) -> Conditions {
        Conditions {
            free_nodes: d.core().pools().iter().any(|p| p.free() > 0),
            sessions: !d.sessions.is_empty(),
            stuck: d
                .policy()
                .share
                .in_flight()
                .is_some_and(|f| f.abandoned.is_some()),
        }
    }
}

/// The shortest time between two runs while a call abandoned at its budget still runs.
const STUCK_INTERVAL: Duration = Duration::from_secs(1);

/// One policy call and its consequences; returns whether the policy was called, and when it
/// wants to be called again.
///
/// With no eligible pending job there is nothing to place, so the policy is not called and the
/// call does not count as a pass: the end of the last job on an idle cluster must not delay the
/// start of the next submission (a stateful policy sees the end in its next snapshot).
pub async fn run_once(d: &Arc<Daemon>) -> (bool, Option<u64>) {
    run_once_at(d, None).await
}

/// How late a policy call may come after the instant the previous plan asked for (`wake_at`)
/// and still be told that instant as its `now`, in ms beyond the longest wait between passes.
const WAKE_SLACK_MS: u64 = 1_000;

/// [`run_once`], told the `wake_at` the loop slept for. Timers fire late (by a few ms, or by
/// the gap after the last pass, or the re-policy interval while launcher sessions are open),
/// and a policy that acts *at* an instant (the RPP starts a claimed job exactly at its deadline
/// and fails a job it cannot place then) would see the instant passed and fail the job. A call
/// that comes at most the longer of the re-policy interval and `[scheduling] max_gap_ms`, plus
/// [`WAKE_SLACK_MS`], after the asked instant is told that instant; starts are stamped with the
/// real time anyway (see `act`).
pub async fn run_once_at(d: &Arc<Daemon>, wake_at: Option<u64>) -> (bool, Option<u64>) {
    // A pass's time (`econtrol show stats`) counts from here: the snapshot is its work too.
    let began = Instant::now();
    let real = now_ms();
    let slack = {
        let c = &d.settings().config;
        c.repolicy_interval_ms.max(c.scheduling.max_gap_ms) + WAKE_SLACK_MS
    };
    let now = match wake_at {
        Some(w) if w <= real && real - w <= slack => w,
        _ => real,
    };
    // Slurm's end-by deadline: a job that can no longer end by it is removed before the policy
    // sees it (a rule of the job's, not a decision of the policy's).
    let (missed, next_miss) = d.core().missed_deadlines(now);
    for id in missed {
        let why = "DeadLine: the job can no longer end by its --deadline".to_string();
        tracing::info!(job = id, "{why}");
        if let Err(e) = d
            .end_pending(id, batch_proto::JobState::Deadline, Some(why))
            .await
        {
            tracing::error!(job = id, "cannot store the missed deadline: {e}");
        }
    }
    let grace = d.settings().config.grace_period_ms;
    let (snap, released) = {
        let mut core = d.core();
        let snap = core.snapshot(now, grace);
        if snap.pending.is_empty() {
            core.forget_expectations(Forget::NothingToPlace);
            // A held job may still miss its deadline: wake for it.
            return (false, next_miss);
        }
        // Nodes held for the fair-start delay come back then: a pass must see them (CooRM
        // §III-C; esim's release event).
        (snap, core.fair_start_release(now))
    };
    let snap = Arc::new(snap);
    let policy = d.policy();
    let snapped = Instant::now();
    let (plan, called) = if policy.share.dispatch() {
        let budget = Duration::from_millis(d.settings().config.policy.time_budget_ms);
        let call = call(d, &policy, &snap, budget).await;
        d.stats.policy_calls.record(snapped.elapsed());
        match call {
            Some(plan) => (plan, true),
            None => {
                d.stats.passes.record(began.elapsed());
                return (true, None);
            }
        }
    } else {
        // A call abandoned at its budget still runs: no second one meanwhile.
        (Arc::new(policy.share.fallback(&snap.view())), false)
    };
    let planned_in = snapped.elapsed();
    act(d, &snap, &plan).await;
    // For `eview` of jobs without a launcher: their views are computed only when asked.
    d.core().keep_plan(Arc::clone(&snap), Arc::clone(&plan));
    d.stats.passes.record(began.elapsed());
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
    let wake = [
        plan.wake_at.into_option().filter(|&t| t > now),
        next_miss,
        released,
    ]
    .into_iter()
    .flatten()
    .min();
    (true, wake)
}

/// Starts a call of `host` on `snap` on a thread of its own, not tokio's blocking pool: a pool
/// that clients' listings fill (each waits there for its reader) would queue the policy behind
/// them, and the wait would count against the policy's budget. A thread costs tens of
/// microseconds, little beside a pass; the pool serves only when no thread can be started.
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

/// Applies a valid plan to the core and carries out what it returns: the records it changed
/// stored, the jobs it started launched, the views published, the jobs it rejected ended, the
/// jobs it killed stopped.
async fn act(d: &Arc<Daemon>, snap: &SnapshotData, plan: &Plan) {
    let now = snap.now;
    let policy = d.policy_name();
    let effects = {
        let mut core = d.core();
        let mut effects = core.apply_plan(plan, now, &policy, now_ms, |id| d.job_dir(id));
        // Queued to the store under the lock, so that no later change of these jobs is
        // stored before them; a killed job's before the start of any job placed on its nodes.
        for rec in effects.store.drain(..) {
            d.store.write(rec);
        }
        effects
    };
    for rec in effects.started {
        if crate::core::coorm::is_session(&rec) {
            crate::coorm::started(d, rec);
        } else {
            tokio::spawn(crate::executor::launch(Arc::clone(d), rec));
        }
    }
    crate::coorm::publish(d, now, plan);
    for r in effects.rejected {
        tracing::warn!(job = r.job, "{}", r.detail);
        if let Err(e) = d.end_pending(r.job, r.state, Some(r.detail)).await {
            tracing::error!(job = r.job, "cannot store the rejection: {e}");
        }
    }
    for k in effects.killed {
        tracing::warn!(job = k.job, for_job = ?k.for_job, "killed by policy: {}", k.reason);
        if let Err(e) = crate::executor::cancel(d, k.job) {
            tracing::error!(job = k.job, "{e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// The default config's pacing.
    fn pacing() -> Pacing {
        Pacing::of(&crate::config::Config::embedded())
    }

    /// A node free, no session, no stuck call.
    fn free() -> Conditions {
        Conditions {
            free_nodes: true,
            ..Conditions::default()
        }
    }

    /// A pass that began at `t0 + began` ms and cost `cost` ms.
    fn pass(t0: Instant, began: u64, cost: u64) -> Pass {
        Pass {
            began: t0 + ms(began),
            ended: t0 + ms(began + cost),
        }
    }

    // Slurm 22.05 makes "a quick and simple scheduling attempt at events such as job submission
    // or completion" (sched_config.html), its main loop at most every `sched_min_interval`
    // (2 µs by default): a job that fits an idle cluster starts at once. A submission 20 ms
    // after a 1 ms pass (the previous job's start, the job having ended since) runs its pass at
    // once, not at the end of a 100 ms re-policy interval.
    #[test]
    fn a_submission_right_after_the_previous_jobs_end_is_scheduled_at_once() {
        let t0 = Instant::now();
        let last = pass(t0, 0, 1);
        let next = pacing().next_pass(Some(last), free()).unwrap();
        assert!(next <= t0 + ms(20), "{:?} after the pass", next - t0);
    }

    #[test]
    fn the_first_pass_runs_at_once() {
        let all = Conditions {
            free_nodes: false,
            sessions: true,
            stuck: true,
        };
        assert_eq!(pacing().next_pass(None, all), None);
    }

    #[test]
    fn the_gap_is_a_multiple_of_the_last_pass_within_its_bounds() {
        let p = Pacing {
            min_gap: ms(2),
            max_gap: ms(100),
            factor: 2,
            interval: ms(1_000),
        };
        assert_eq!(p.gap(Duration::ZERO), ms(2));
        assert_eq!(p.gap(ms(10)), ms(20));
        assert_eq!(p.gap(ms(80)), ms(100));
        let t0 = Instant::now();
        // From the end of the pass: a 30 ms pass is followed by 60 ms without one.
        assert_eq!(
            p.next_pass(Some(pass(t0, 0, 30)), free()),
            Some(t0 + ms(90))
        );
        // A bound set upside down keeps the floor.
        let q = Pacing {
            max_gap: ms(1),
            ..p
        };
        assert_eq!(q.gap(ms(10)), ms(2));
    }

    // A config that asks for passes every 10 ms (`repolicy_interval_ms = 10`) gets them, even
    // into a full cluster; the floor still holds.
    #[test]
    fn a_short_re_policy_interval_lowers_the_longest_gap() {
        let mut c = crate::config::Config::embedded();
        c.repolicy_interval_ms = 10;
        assert_eq!(Pacing::of(&c).max_gap, ms(10));
        c.repolicy_interval_ms = 1;
        assert_eq!(Pacing::of(&c).max_gap, ms(2));
        c.repolicy_interval_ms = 1_000;
        assert_eq!(Pacing::of(&c).max_gap, ms(100));
    }

    // CooRM (§III-C) re-runs the policy "at most once every re-policy interval" while launchers
    // select on their views: neither the cost-based gap nor a full cluster changes it, so
    // batchd's passes come when the simulator's do (docs/coorm.md).
    #[test]
    fn open_sessions_keep_the_re_policy_interval() {
        let t0 = Instant::now();
        let p = Pacing {
            interval: ms(1),
            ..pacing()
        };
        let sessions = Conditions {
            sessions: true,
            ..free()
        };
        let last = pass(t0, 0, 10);
        assert_eq!(p.next_pass(Some(last), sessions), Some(t0 + ms(1)));
        let full = Conditions {
            free_nodes: false,
            ..sessions
        };
        assert_eq!(p.next_pass(Some(last), full), Some(t0 + ms(1)));
        let p = pacing();
        assert_eq!(
            p.next_pass(Some(pass(t0, 0, 1)), sessions),
            Some(t0 + p.interval)
        );
    }

    #[test]
    fn a_stuck_call_spaces_passes_a_second_apart() {
        let t0 = Instant::now();
        let stuck = Conditions {
            stuck: true,
            ..free()
        };
        let next = pacing().next_pass(Some(pass(t0, 0, 1)), stuck);
        assert_eq!(next, Some(t0 + STUCK_INTERVAL));
    }

    // A burst of events costs a pass per gap: with passes of cost c, the daemon plans at most
    // c / (c + gap) of the time, at most half of it with the default factor.
    #[test]
    fn a_burst_is_coalesced_into_passes_a_gap_apart() {
        let p = pacing();
        let t0 = Instant::now();
        let last = pass(t0, 0, 40);
        let next = p.next_pass(Some(last), free()).unwrap();
        assert_eq!(next - last.ended, p.gap(ms(40)));
        assert!(p.gap(ms(40)) >= ms(40));
    }

    // With every node busy no pass can start a job: a burst of submissions into a full cluster
    // is planned once per `max_gap`, as often as Slurm's periodic main loop, not at every event.
    #[test]
    fn without_a_free_node_passes_come_max_gap_apart() {
        let p = pacing();
        let t0 = Instant::now();
        let last = pass(t0, 0, 1);
        let full = Conditions::default();
        assert_eq!(p.next_pass(Some(last), full), Some(last.ended + p.max_gap));
        // A job's end frees a node: the short gap again.
        assert!(p.next_pass(Some(last), free()).unwrap() <= t0 + ms(20));
    }
}
