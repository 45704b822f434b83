//! Repeated runs of §3's experiments: one workload per seed, §2.3's metrics over a window
//! after a warm-up, means with 95 % confidence intervals over the seeds.

use sched_abi::PolicyHost;
use sched_core::time::Time;

use super::driver::{replay, CoallocError, CoallocSummary, Outcome};
use super::trace::{secs_to_ms, CoallocParams};
use super::workload::WorkloadSpec;

/// A mean and the half-width of its 95 % confidence interval (Student's t over the seeds).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Estimate {
    /// Sample mean.
    pub mean: f64,
    /// Half-width of the 95 % interval; 0 with one sample.
    pub ci: f64,
}

/// t_{0.975, df} for df = 1..=30; beyond, 1.96.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// The mean of `xs` with its 95 % confidence interval.
pub fn estimate(xs: &[f64]) -> Estimate {
    let n = xs.len();
    if n == 0 {
        return Estimate::default();
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return Estimate { mean, ci: 0.0 };
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let t = T975.get(n - 2).copied().unwrap_or(1.96);
    Estimate {
        mean,
        ci: t * (var / n as f64).sqrt(),
    }
}

/// One seed's results.
#[derive(Clone, Debug, PartialEq)]
pub struct SeedResult {
    /// §2.3's metrics over the measured window.
    pub summary: CoallocSummary,
    /// Per deadline bin (D − S over the workload's deadline range, equal widths): global jobs
    /// submitted in the window that started, and all of them.
    pub by_deadline: Vec<(u32, u32)>,
    /// Jobs in the workload.
    pub jobs: usize,
}

/// How an experiment is run.
#[derive(Clone, Debug, PartialEq)]
pub struct Protocol {
    /// Submissions span [0, horizon) seconds.
    pub horizon: f64,
    /// Metrics start at this time (seconds): the warm-up is left out.
    pub warmup: f64,
    /// Number of seeds (1, 2, …).
    pub seeds: u64,
    /// Bins of the success-by-deadline figures.
    pub deadline_bins: usize,
}

/// Runs `spec` (its horizon and seed replaced by the protocol's) once per seed with the policy
/// `make` builds for the trace's params.
pub fn run_seeds(
    spec: &WorkloadSpec,
    protocol: &Protocol,
    make: &dyn Fn(&CoallocParams) -> PolicyHost,
) -> Result<Vec<SeedResult>, CoallocError> {
    (1..=protocol.seeds)
        .map(|seed| {
            let mut s = spec.clone();
            s.horizon = protocol.horizon;
            s.seed = seed;
            run_one(&s, protocol, make)
        })
        .collect()
}

fn run_one(
    spec: &WorkloadSpec,
    protocol: &Protocol,
    make: &dyn Fn(&CoallocParams) -> PolicyHost,
) -> Result<SeedResult, CoallocError> {
    let trace = spec.generate();
    let mut host = make(&trace.params);
    let run = replay(&trace, &mut host)?;
    let ms = |s: f64| secs_to_ms(s).unwrap_or(0);
    let window: (Time, Time) = (ms(protocol.warmup), ms(protocol.horizon));
    let summary = run.summary(Some(window));
    let bins = protocol.deadline_bins.max(1);
    let (lo, hi) = (ms(spec.deadline.0), ms(spec.deadline.1));
    let width = (hi.saturating_sub(lo) / bins as u64).max(1);
    let mut by_deadline = vec![(0u32, 0u32); bins];
    for j in run
        .jobs
        .iter()
        .filter(|j| j.global && j.submit >= window.0 && j.submit < window.1)
    {
        let rel = j.deadline.unwrap_or(j.submit).saturating_sub(j.submit);
        let b = ((rel.saturating_sub(lo)) / width).min(bins as u64 - 1) as usize;
        by_deadline[b].1 += 1;
        by_deadline[b].0 += u32::from(j.outcome == Some(Outcome::Started));
    }
    Ok(SeedResult {
        summary,
        by_deadline,
        jobs: run.jobs.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_uses_students_t() {
        let e = estimate(&[1.0, 2.0, 3.0]);
        assert_eq!(e.mean, 2.0);
        // s = 1, n = 3, t_{0.975,2} = 4.303.
        assert!((e.ci - 4.303 / 3f64.sqrt()).abs() < 1e-9);
        assert_eq!(estimate(&[5.0]).ci, 0.0);
    }
}
