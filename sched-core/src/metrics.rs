//! Per-job and per-run metrics, the usual ones of the parallel-job scheduling literature.
//!
//! Per job: wait, response, slowdown and bounded slowdown (Feitelson et al., τ = 10 s by
//! default). Per run: makespan (last end − first submit), utilisation (used node-time over the
//! machine's node-time during the makespan), and mean/median/p95 of wait and bounded slowdown.

use serde::{Deserialize, Serialize};

use crate::request::JobId;
use crate::time::{as_secs_f64, Duration, Time, SECOND};

/// The bound of the bounded slowdown, 10 s.
pub const DEFAULT_TAU: Duration = 10 * SECOND;

/// What happened to one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobOutcome {
    /// The job.
    pub id: JobId,
    /// Submission.
    pub submit: Time,
    /// Start.
    pub start: Time,
    /// End.
    pub end: Time,
    /// Node-milliseconds it held (nodes × run time for a rigid job; the EP's area otherwise).
    pub area: u128,
}

/// One job's metrics, in seconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobMetrics {
    /// start − submit.
    pub wait: f64,
    /// end − submit.
    pub response: f64,
    /// response / run time (run time of 0 counted as 1 ms).
    pub slowdown: f64,
    /// max(1, response / max(run time, τ)).
    pub bounded_slowdown: f64,
}

impl JobOutcome {
    /// The job's metrics with bound `tau`.
    pub fn metrics(&self, tau: Duration) -> JobMetrics {
        let wait = self.start.saturating_sub(self.submit);
        let response = self.end.saturating_sub(self.submit);
        let run = self.end.saturating_sub(self.start);
        JobMetrics {
            wait: as_secs_f64(wait),
            response: as_secs_f64(response),
            slowdown: response as f64 / run.max(1) as f64,
            bounded_slowdown: (response as f64 / run.max(tau).max(1) as f64).max(1.0),
        }
    }
}

/// Mean, median and 95th percentile of a sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (lower median for an even count).
    pub median: f64,
    /// 95th percentile (nearest rank).
    pub p95: f64,
    /// Largest value.
    pub max: f64,
}

impl Stats {
    /// Stats of `values` (all 0 for an empty sample).
    pub fn of(mut values: Vec<f64>) -> Stats {
        if values.is_empty() {
            return Stats::default();
        }
        sort_total(&mut values);
        let n = values.len();
        let rank = |q: f64| values[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        Stats {
            mean: values.iter().sum::<f64>() / n as f64,
            median: values[(n - 1) / 2],
            p95: rank(0.95),
            max: values[n - 1],
        }
    }
}

/// Sorts `values` as `sort_by(f64::total_cmp)` does, by sorting integer keys that order as
/// `total_cmp` orders (the same bit trick): a replay's summary sorts four samples of one value
/// per job, and comparing integers is several times cheaper than `total_cmp`. Values equal
/// under `total_cmp` have the same bits, so the order, and the mean summed along it, are those
/// of the stable sort.
fn sort_total(values: &mut [f64]) {
    let key = |v: f64| {
        let b = v.to_bits() as i64;
        b ^ (((b >> 63) as u64) >> 1) as i64
    };
    let mut keys: Vec<i64> = values.iter().map(|&v| key(v)).collect();
    keys.sort_unstable();
    for (v, k) in values.iter_mut().zip(keys) {
        // The key's map is its own inverse.
        *v = f64::from_bits(key(f64::from_bits(k as u64)) as u64);
    }
}

/// A run's summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Jobs counted.
    pub jobs: usize,
    /// Last end − first submit, seconds.
    pub makespan: f64,
    /// Used node-time / (nodes × makespan), in `[0, 1]`.
    pub utilisation: f64,
    /// Wait, seconds.
    pub wait: Stats,
    /// Response, seconds.
    pub response: Stats,
    /// Bounded slowdown.
    pub bounded_slowdown: Stats,
    /// Slowdown (unbounded): mean only is meaningful, kept for completeness.
    pub slowdown: Stats,
}

/// Summarises `outcomes` on a machine of `nodes` nodes with bound `tau`.
pub fn summarize(outcomes: &[JobOutcome], nodes: u64, tau: Duration) -> Summary {
    if outcomes.is_empty() {
        return Summary::default();
    }
    let first = outcomes.iter().map(|o| o.submit).min().unwrap_or(0);
    let last = outcomes.iter().map(|o| o.end).max().unwrap_or(0);
    let makespan = last.saturating_sub(first);
    let area: u128 = outcomes.iter().map(|o| o.area).sum();
    let utilisation = if makespan == 0 || nodes == 0 {
        0.0
    } else {
        area as f64 / (nodes as f64 * makespan as f64)
    };
    let m: Vec<JobMetrics> = outcomes.iter().map(|o| o.metrics(tau)).collect();
    Summary {
        jobs: outcomes.len(),
        makespan: as_secs_f64(makespan),
        utilisation,
        wait: Stats::of(m.iter().map(|m| m.wait).collect()),
        response: Stats::of(m.iter().map(|m| m.response).collect()),
        bounded_slowdown: Stats::of(m.iter().map(|m| m.bounded_slowdown).collect()),
        slowdown: Stats::of(m.iter().map(|m| m.slowdown).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(submit: u64, start: u64, end: u64, nodes: u128) -> JobOutcome {
        JobOutcome {
            id: JobId(0),
            submit,
            start,
            end,
            area: nodes * u128::from(end - start),
        }
    }

    #[test]
    fn bounded_slowdown_uses_tau_for_short_jobs() {
        // 1 s job that waited 99 s: response 100 s, bounded by τ = 10 s → 10.
        let m = job(0, 99_000, 100_000, 1).metrics(DEFAULT_TAU);
        assert_eq!(m.bounded_slowdown, 10.0);
        assert_eq!(m.slowdown, 100.0);
        assert_eq!(m.wait, 99.0);
        // A job that did not wait has bounded slowdown 1.
        assert_eq!(
            job(0, 0, 1_000, 1).metrics(DEFAULT_TAU).bounded_slowdown,
            1.0
        );
    }

    #[test]
    fn integer_keys_sort_as_total_cmp() {
        let mut values = vec![
            3.5,
            -0.0,
            0.0,
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -2.25,
            1e-300,
            -1e-300,
            f64::MIN_POSITIVE,
            7.0,
            3.5,
        ];
        let mut want = values.clone();
        want.sort_by(f64::total_cmp);
        sort_total(&mut values);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&values), bits(&want));
    }

    #[test]
    fn utilisation_and_makespan() {
        let s = summarize(
            &[job(0, 0, 10_000, 2), job(0, 10_000, 20_000, 2)],
            4,
            DEFAULT_TAU,
        );
        assert_eq!(s.makespan, 20.0);
        assert_eq!(s.utilisation, 0.5);
        assert_eq!(s.wait.mean, 5.0);
        assert_eq!(s.wait.median, 0.0);
        assert_eq!(s.wait.p95, 10.0);
    }
}
