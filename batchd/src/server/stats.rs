//! `Stats`: the daemon's figures (`econtrol show stats`), read without waiting for the policy.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use batch_proto::{DaemonStats, JobState, Response};

use super::Reply;
use crate::daemon::Daemon;
use crate::launch::now_ms;
use crate::stats::Stats;

fn ms(d: Duration) -> f64 {
    // Microseconds as a fraction: a small plan takes well under a millisecond.
    d.as_micros() as f64 / 1000.0
}

pub fn handle(d: &Arc<Daemon>) -> Reply {
    Response::Stats(figures(d)).into()
}

/// The daemon's figures now, for `econtrol show stats` and the metrics endpoint.
pub fn figures(d: &Arc<Daemon>) -> DaemonStats {
    let policy = d.policy();
    let host = policy.share.stats();
    let times = policy.share.call_times();
    let flight = policy.share.in_flight();
    let (pending, running) = {
        let core = d.core();
        let pending = core
            .jobs()
            .values()
            .filter(|a| a.rec.state == JobState::Pending)
            .count() as u64;
        (pending, core.jobs().len() as u64 - pending)
    };
    DaemonStats {
        started: d.started,
        now: now_ms(),
        policy: policy.share.name().to_string(),
        policy_since: policy.since,
        time_budget_ms: d.settings().config.policy.time_budget_ms,
        policy_calls: host.calls,
        policy_panics: host.panics,
        policy_errors: host.errors,
        refused_plans: host.refusals,
        policy_timeouts: host.timeouts,
        call_running_ms: flight.map(|f| u64::try_from(f.elapsed.as_millis()).unwrap_or(u64::MAX)),
        call_past_budget: flight.is_some_and(|f| f.abandoned.is_some()),
        last_plan_ms: times.last.map(ms),
        longest_plan_ms: times.longest.map(ms),
        test_only_timeouts: d.test_only_timeouts.load(Ordering::Relaxed),
        pending,
        running,
        jobs_submitted: Stats::get(&d.stats.submitted),
        jobs_started: Stats::get(&d.stats.started),
        jobs_completed: Stats::get(&d.stats.completed),
        jobs_failed: Stats::get(&d.stats.failed),
        jobs_cancelled: Stats::get(&d.stats.cancelled),
        passes: d.stats.passes.summary(),
        policy_call: d.stats.policy_calls.summary(),
        store_commit: d.store.commit_times(),
        connections: Stats::get(&d.stats.connections),
        connections_open: Stats::get(&d.stats.open_connections),
    }
}
