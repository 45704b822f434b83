//! The online experiment of Dutot & Eyraud §2.2, which the paper describes but does not run: a
//! real SWF trace replayed with every job made moldable, under the `bicriteria` policy (BiCrit
//! in batches, §2.2) and under `cbf` with the OAR rule (each moldable job takes the
//! configuration that completes earliest when it is fitted), side by side.
//!
//! **Speed-up model** (Downey 1997, "A model for speedup of parallel programs"; the model
//! Cirne & Berman build on): a job of the trace that ran r seconds on n processors is given the
//! average parallelism A = n — the size its user chose is taken as the parallelism the program
//! has on average — and a variance σ (one value for all jobs, `--sigma`). Its run time on k
//! processors is p(k) = r · S(n) / S(k), with Downey's S(k) for (A, σ), so p(n) = r. It offers
//! the counts n/8, n/4, n/2, n and 2n (rounded up, within 1..=m, without repeats): beyond
//! 2A − 1 Downey's speed-up is flat, so larger counts only waste processors.
//!
//! **Estimates**: the walltime of each configuration is p(k) itself, and the job runs exactly
//! that long on the configuration chosen — the model is taken as known to the scheduler, as
//! Dutot & Eyraud's p_i(k) are. The trace's own over-estimates cannot be carried over: the
//! simulator runs a job for one given time whatever configuration it gets, so a job made to run
//! "until its walltime" is the only way its run time can follow the count chosen.
//!
//! **Weights**: ω = 1 for every job (ΣωC = ΣC; the trace gives no weights). C is counted from
//! the trace's first submission.

use sched_core::{Duration, Pool, PoolId, Request};
use sched_sim::swf::Trace;
use sched_sim::{SimJob, SimResults, Simulation};
use serde::Serialize;

/// Downey's speed-up S(n) for average parallelism `a` ≥ 1 and variance `sigma` ≥ 0 (Downey
/// 1997, the low- and high-variance models).
pub fn downey(n: f64, a: f64, sigma: f64) -> f64 {
    if sigma <= 1.0 {
        if n <= a {
            a * n / (a + sigma * (n - 1.0) / 2.0)
        } else if n <= 2.0 * a - 1.0 {
            a * n / (sigma * (a - 0.5) + n * (1.0 - sigma / 2.0))
        } else {
            a
        }
    } else if n <= a + a * sigma - sigma {
        n * a * (sigma + 1.0) / (sigma * (n + a - 1.0) + a)
    } else {
        a
    }
}

/// The configurations `(nodes, walltime ms)` offered by a job of `n` nodes that ran `runtime`
/// ms, on a machine of `m` nodes (see the module doc).
pub fn configs(n: u32, runtime: Duration, m: u32, sigma: f64) -> Vec<(u32, Duration)> {
    let a = f64::from(n.max(1));
    let s_n = downey(a, a, sigma);
    let mut counts: Vec<u32> = [n.div_ceil(8), n.div_ceil(4), n.div_ceil(2), n, 2 * n]
        .into_iter()
        .map(|k| k.clamp(1, m))
        .collect();
    counts.sort_unstable();
    counts.dedup();
    counts
        .into_iter()
        .map(|k| {
            let t = if k == n {
                runtime
            } else {
                (runtime as f64 * s_n / downey(f64::from(k), a, sigma)).ceil() as Duration
            };
            // A zero-length job would be no job; 1 ms keeps every time positive.
            (k, t.max(1))
        })
        .collect()
}

/// The trace's jobs made moldable.
pub fn moldable_jobs(trace: &Trace, sigma: f64) -> Vec<SimJob> {
    trace
        .jobs
        .iter()
        .map(|j| {
            let mut job = SimJob::from(j);
            job.request = Request::moldable(&configs(j.nodes, j.runtime, trace.nodes, sigma), 1.0);
            // Runs until the walltime of the configuration it gets: p(k) (module doc).
            job.runtime = Duration::MAX;
            job
        })
        .collect()
}

/// One policy's row of the table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The policy.
    pub policy: String,
    /// Jobs that ran.
    pub jobs: usize,
    /// Jobs rejected.
    pub rejected: usize,
    /// Mean wait, seconds.
    pub mean_wait_s: f64,
    /// Mean bounded slowdown (τ = the simulator's, 10 s).
    pub mean_bounded_slowdown: f64,
    /// ΣωC with ω = 1, C from the first submission, seconds.
    pub sum_wc_s: f64,
    /// Used node-time / (nodes × makespan).
    pub utilisation: f64,
    /// Last end − first submission, seconds.
    pub makespan_s: f64,
    /// Mean nodes of the configurations chosen.
    pub mean_nodes: f64,
}

impl Row {
    /// The row of one replay.
    pub fn new(policy: &str, trace: &Trace, r: &SimResults) -> Row {
        let origin = trace.jobs.iter().map(|j| j.submit).min().unwrap_or(0);
        let sum_wc_ms: f64 = r
            .jobs
            .iter()
            .map(|j| j.end.saturating_sub(origin) as f64)
            .sum();
        let n = r.jobs.len().max(1) as f64;
        Row {
            policy: policy.to_string(),
            jobs: r.jobs.len(),
            rejected: r.rejected.len(),
            mean_wait_s: r.summary.wait.mean,
            mean_bounded_slowdown: r.summary.bounded_slowdown.mean,
            sum_wc_s: sum_wc_ms / 1000.0,
            utilisation: r.summary.utilisation,
            makespan_s: r.summary.makespan,
            mean_nodes: r.jobs.iter().map(|j| f64::from(j.nodes)).sum::<f64>() / n,
        }
    }
}

/// Replays `jobs` on one pool of `nodes` under `policy`.
pub fn replay(
    name: &str,
    policy: &mut dyn sched_core::Policy,
    nodes: u32,
    jobs: Vec<SimJob>,
) -> Result<SimResults, sched_sim::SimError> {
    let pools = vec![Pool {
        id: PoolId(0),
        name: "sim".into(),
        nodes,
    }];
    Simulation::new(pools, name).run(policy, jobs)
}

/// The side-by-side table.
pub fn format_table(rows: &[Row]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<34} | {:>6} | {:>4} | {:>12} | {:>10} | {:>12} | {:>6} | {:>12} | {:>6}",
        "policy",
        "jobs",
        "rej",
        "mean wait s",
        "mean bsld",
        "sum wC s",
        "util",
        "makespan s",
        "nodes"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:<34} | {:>6} | {:>4} | {:>12.1} | {:>10.2} | {:>12.4e} | {:>6.3} | {:>12.0} | {:>6.1}",
            r.policy,
            r.jobs,
            r.rejected,
            r.mean_wait_s,
            r.mean_bounded_slowdown,
            r.sum_wc_s,
            r.utilisation,
            r.makespan_s,
            r.mean_nodes
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_keep_the_trace_time_at_its_size_and_are_monotonic() {
        // n = 8, 100 s, σ = 1 on 64 nodes: counts 1, 2, 4, 8, 16; p(8) = 100 s exactly.
        let c = configs(8, 100_000, 64, 1.0);
        let counts: Vec<u32> = c.iter().map(|x| x.0).collect();
        assert_eq!(counts, vec![1, 2, 4, 8, 16]);
        assert_eq!(c[3].1, 100_000);
        for w in c.windows(2) {
            // Run time non-increasing, work non-decreasing (within the 1 ms rounding).
            assert!(w[1].1 <= w[0].1, "{c:?}");
            assert!(
                u64::from(w[1].0) * w[1].1 + 16 >= u64::from(w[0].0) * w[0].1,
                "{c:?}"
            );
        }
        // Downey, σ = 1, A = 8: S(1) = 1, so p(1) = 100·S(8) = 100·8·8/(8 + 3.5) s.
        let s8 = downey(8.0, 8.0, 1.0);
        assert!((s8 - 64.0 / 11.5).abs() < 1e-12);
        assert_eq!(c[0].1, (100_000.0 * s8).ceil() as u64);
        // A one-node job offers 1 and 2; a machine of 4 caps the counts.
        assert_eq!(configs(1, 5_000, 64, 1.0).len(), 2);
        assert!(configs(8, 1_000, 4, 1.0).iter().all(|x| x.0 <= 4));
    }
}
