//! The daemon's counters and timings, in the spirit of Slurm's `sdiag`: jobs submitted, started
//! and ended by outcome, scheduling passes, policy calls and store commits with their duration
//! percentiles, client connections. `econtrol show stats` reads them (`server/stats.rs`) and so
//! does the Prometheus endpoint ([`crate::metrics`]).
//!
//! Counting is a relaxed atomic add or a short lock around a fixed ring of recent durations:
//! nothing here waits on I/O or on the core's lock. Counters count from the daemon's start;
//! percentiles are over the last [`WINDOW`] samples, so that they follow the present load
//! rather than the whole life of the daemon.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use batch_proto::{JobState, Timing};

/// Samples a [`Timings`] keeps for its percentiles.
pub const WINDOW: usize = 1024;

/// The durations of one kind of work: how many, their sum and maximum since the start, and the
/// last [`WINDOW`] of them for percentiles.
#[derive(Debug, Default)]
pub struct Timings {
    inner: Mutex<Ring>,
}

#[derive(Debug, Default)]
struct Ring {
    count: u64,
    total_us: u64,
    max_us: u64,
    recent: Vec<u64>,
    /// Where the next sample goes once `recent` is full.
    next: usize,
}

impl Timings {
    /// Adds one duration.
    pub fn record(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        let mut r = crate::sync::lock(&self.inner);
        r.count += 1;
        r.total_us = r.total_us.saturating_add(us);
        r.max_us = r.max_us.max(us);
        if r.recent.len() < WINDOW {
            r.recent.push(us);
        } else {
            let i = r.next;
            r.recent[i] = us;
        }
        r.next = (r.next + 1) % WINDOW;
    }

    /// The count, total and maximum since the start, and the percentiles of the recent window,
    /// in ms with microseconds as a fraction.
    pub fn summary(&self) -> Timing {
        let (count, total_us, max_us, mut recent) = {
            let r = crate::sync::lock(&self.inner);
            (r.count, r.total_us, r.max_us, r.recent.clone())
        };
        recent.sort_unstable();
        let ms = |us: u64| us as f64 / 1000.0;
        Timing {
            count,
            total_ms: ms(total_us),
            p50_ms: percentile(&recent, 50).map(ms),
            p90_ms: percentile(&recent, 90).map(ms),
            p99_ms: percentile(&recent, 99).map(ms),
            max_ms: (count > 0).then(|| ms(max_us)),
        }
    }
}

/// The nearest-rank `p`th percentile of `sorted` (the smallest sample with at least p % of the
/// samples at or below it), none of an empty window.
fn percentile(sorted: &[u64], p: usize) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

/// Every counter of the daemon but the store's (kept by the store's writer thread) and the
/// policy host's (kept by `sched_abi`).
#[derive(Debug, Default)]
pub struct Stats {
    /// Jobs accepted (each task of an array counts).
    pub submitted: AtomicU64,
    /// Runs started (a requeued job that starts again counts again).
    pub started: AtomicU64,
    /// Jobs ended COMPLETED.
    pub completed: AtomicU64,
    /// Jobs ended CANCELLED, pending or running.
    pub cancelled: AtomicU64,
    /// Jobs ended in any other final state (FAILED, TIMEOUT, PREEMPTED, DEADLINE,
    /// NODE_FAIL), pending or running.
    pub failed: AtomicU64,
    /// Scheduling passes that called the policy, or would have but for one still running.
    pub passes: Timings,
    /// Policy calls, from their dispatch to the validated answer, as the scheduler waits for
    /// them (a call abandoned at its budget counts its budget).
    pub policy_calls: Timings,
    /// Client connections accepted, the relayed ones from hosts included.
    pub connections: AtomicU64,
    /// Client connections open now.
    pub open_connections: AtomicU64,
}

impl Stats {
    /// Counts `n` submitted jobs.
    pub fn submitted(&self, n: u64) {
        self.submitted.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts a start.
    pub fn started(&self) {
        self.started.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a job's end in `state`; a state that is not final counts nothing.
    pub fn ended(&self, state: JobState) {
        let counter = match state {
            JobState::Completed => &self.completed,
            JobState::Cancelled => &self.cancelled,
            s if s.is_finished() => &self.failed,
            _ => return,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a connection for as long as the guard lives.
    pub fn connection(&self) -> OpenConnection<'_> {
        self.connections.fetch_add(1, Ordering::Relaxed);
        self.open_connections.fetch_add(1, Ordering::Relaxed);
        OpenConnection(self)
    }

    /// A counter's value.
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// An open connection, counted in [`Stats::open_connections`] until dropped.
pub struct OpenConnection<'a>(&'a Stats);

impl Drop for OpenConnection<'_> {
    fn drop(&mut self) {
        self.0.open_connections.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank_over_the_recent_window() {
        let t = Timings::default();
        assert_eq!(t.summary(), Timing::default());
        for ms in 1..=100u64 {
            t.record(Duration::from_millis(ms));
        }
        let s = t.summary();
        assert_eq!(s.count, 100);
        assert_eq!(s.total_ms, 5050.0);
        assert_eq!(
            (s.p50_ms, s.p90_ms, s.p99_ms, s.max_ms),
            (Some(50.0), Some(90.0), Some(99.0), Some(100.0))
        );
        // A window's worth of fast samples pushes the slow ones out of the percentiles, not
        // out of the count, the total or the maximum.
        for _ in 0..WINDOW {
            t.record(Duration::from_micros(250));
        }
        let s = t.summary();
        assert_eq!(s.count, 100 + WINDOW as u64);
        assert_eq!((s.p99_ms, s.max_ms), (Some(0.25), Some(100.0)));
    }

    #[test]
    fn ends_count_by_outcome_and_connections_by_guard() {
        let s = Stats::default();
        for st in [
            JobState::Completed,
            JobState::Cancelled,
            JobState::Failed,
            JobState::Timeout,
            JobState::Running,
        ] {
            s.ended(st);
        }
        assert_eq!(
            [&s.completed, &s.cancelled, &s.failed].map(Stats::get),
            [1, 1, 2]
        );
        let a = s.connection();
        let b = s.connection();
        drop(a);
        assert_eq!(
            (Stats::get(&s.connections), Stats::get(&s.open_connections)),
            (2, 1)
        );
        drop(b);
        assert_eq!(Stats::get(&s.open_connections), 0);
    }
}
