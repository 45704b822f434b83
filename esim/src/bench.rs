//! `esim bench`: how long a policy takes to plan queues of growing size, and a trace replay.
//!
//! The queue workload is random but seeded: rigid jobs whose sizes mix single nodes, powers
//! of two and other sizes up to a tenth of the pool, and walltimes log-uniform between 1 min
//! and 36 h, as in the PWA logs; the pool is 90 % busy with running jobs. Each size is planned
//! by a fresh policy in one call, several times, and the median is reported, together with
//! the ratio to the previous size and the ratio an n·log n cost would give.

use std::time::Instant;

use anyhow::bail;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sched_core::time::{HOUR, MINUTE};
use sched_core::{
    validate, JobId, Params, Pending, Pool, PoolId, PoolSteps, Request, Running, Shape, Snapshot,
    Time,
};
use sched_sim::swf::{self, ReadOptions};

use super::cli::BenchArgs;
use crate::policies;

/// The instant the benchmark's snapshot is taken at.
const NOW: Time = 30 * 24 * HOUR;

/// A benchmark's snapshot data.
pub struct Workload {
    /// The one pool.
    pub pools: Vec<Pool>,
    /// Running jobs filling about 90 % of it.
    pub running: Vec<Running>,
    /// The queue.
    pub pending: Vec<Pending>,
}

impl Workload {
    /// The snapshot at [`NOW`].
    pub fn snapshot(&self) -> Snapshot<'_> {
        Snapshot {
            now: NOW,
            pools: &self.pools,
            running: &self.running,
            pending: &self.pending,
        }
    }
}

fn size(rng: &mut ChaCha8Rng, nodes: u32) -> u32 {
    let cap = (nodes / 10).max(1);
    let max_k = 31 - cap.leading_zeros();
    match rng.gen_range(0..10) {
        0..=2 => 1,
        3..=7 => 1 << rng.gen_range(1..=max_k.max(1)).min(max_k),
        _ => rng.gen_range(1..=cap),
    }
    .min(nodes)
}

fn walltime(rng: &mut ChaCha8Rng) -> u64 {
    let (lo, hi) = ((MINUTE as f64).ln(), ((36 * HOUR) as f64).ln());
    let t = rng.gen_range(lo..hi).exp() as u64;
    // Users ask in whole minutes.
    (t / MINUTE).max(1) * MINUTE
}

/// `n` queued rigid jobs on a pool of `nodes` nodes, 90 % busy, from `seed`.
pub fn workload(n: usize, nodes: u32, seed: u64) -> Workload {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let pool = PoolId(0);
    let mut running = Vec::new();
    let mut busy = 0u32;
    let mut id = 0u64;
    while busy < nodes / 10 * 9 {
        let k = size(&mut rng, nodes).min(nodes - busy);
        let wall = walltime(&mut rng);
        let elapsed = rng.gen_range(0..wall);
        let start = NOW - elapsed;
        running.push(Running {
            id: JobId(id),
            user: rng.gen_range(0..100),
            request: Request::rigid(k, wall),
            shape: Shape::rigid(pool, k, wall),
            start,
            holds: sched_core::rvec![PoolSteps::flat(pool, NOW, start + wall, k)],
            killable: false,
        });
        busy += k;
        id += 1;
    }
    let mut submits: Vec<Time> = (0..n).map(|_| NOW - rng.gen_range(0..NOW)).collect();
    submits.sort_unstable();
    let pending = submits
        .into_iter()
        .map(|submit| {
            id += 1;
            Pending {
                wants_view: false,
                claimed: Default::default(),
                id: JobId(id),
                user: rng.gen_range(0..100),
                submit,
                earliest_start: submit,
                priority: 0,
                request: Request::rigid(size(&mut rng, nodes), walltime(&mut rng)),
            }
        })
        .collect();
    Workload {
        pools: vec![Pool {
            id: pool,
            name: "bench".into(),
            nodes,
        }],
        running,
        pending,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[(v.len() - 1) / 2]
}

/// Runs `esim bench`.
pub fn bench(args: &BenchArgs) -> anyhow::Result<()> {
    if args.runs == 0 || args.sizes.is_empty() || args.nodes == 0 {
        bail!("--runs, --sizes and --nodes must be positive");
    }
    // Fail on a bad name before any work.
    policies::choose(&args.policy, &Params::new(), args.linked)?;
    println!(
        "policy {} planning a queue of rigid jobs on a {}-node pool (90 % busy), one call by a fresh policy, median of {} runs, seed {}",
        args.policy, args.nodes, args.runs, args.seed
    );
    println!(
        "{:>9} {:>11} {:>11} {:>11} {:>13} {:>12} {:>10}",
        "queue", "plan (s)", "min (s)", "× previous", "n·log n ×", "validate (s)", "starts now"
    );
    let mut prev: Option<(usize, f64)> = None;
    for &n in &args.sizes {
        let w = workload(n, args.nodes, args.seed);
        let snap = w.snapshot();
        let mut times = Vec::with_capacity(args.runs);
        let mut last = None;
        for _ in 0..args.runs {
            let mut policy = policies::choose(&args.policy, &Params::new(), args.linked)?;
            let t = Instant::now();
            let plan = policy.plan(&snap);
            times.push(t.elapsed().as_secs_f64());
            last = Some(plan);
        }
        let Some(plan) = last else { bail!("no run") };
        let t = Instant::now();
        let verdict = validate(&snap, &plan);
        let t_validate = t.elapsed().as_secs_f64();
        if let Err(e) = verdict {
            bail!(
                "policy `{}` planned an invalid schedule for {n} jobs: {e}",
                args.policy
            );
        }
        if plan.placements.len() != n {
            bail!(
                "policy `{}` placed {} of {n} jobs",
                args.policy,
                plan.placements.len()
            );
        }
        let starts = plan.placements.iter().filter(|p| p.start <= NOW).count();
        let med = median(times.clone());
        let min = times.iter().copied().fold(f64::INFINITY, f64::min);
        let (ratio, nlogn) = match prev {
            Some((pn, pt)) => {
                let f = |x: usize| x as f64 * (x as f64).ln();
                (format!("{:.1}", med / pt), format!("{:.1}", f(n) / f(pn)))
            }
            None => ("-".into(), "-".into()),
        };
        println!("{n:>9} {med:>11.4} {min:>11.4} {ratio:>11} {nlogn:>13} {t_validate:>12.4} {starts:>10}");
        prev = Some((n, med));
    }
    if let Some(path) = &args.trace {
        let trace = swf::read_path(path, &ReadOptions::default())?;
        trace.warn_skipped();
        let mut policy = policies::hosted(&args.policy, &Params::new(), args.linked)?;
        let r = super::run::replay(
            &trace,
            &args.policy,
            &mut policy,
            (args.validate.into(), sched_sim::EventOrder::Instant),
            None,
        )?;
        let t = r.timing;
        println!(
            "replay of {} ({} jobs, {} nodes, validate {:?}): {:.2} s total, policy {:.2} s, validator {:.2} s, {} policy calls, {} refused",
            path.display(),
            r.counts.jobs,
            trace.nodes,
            args.validate,
            t.total,
            t.policy,
            t.validate,
            r.counts.policy_calls,
            r.counts.refused_plans
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_is_seeded_and_fits_the_pool() {
        let a = workload(200, 1000, 7);
        let b = workload(200, 1000, 7);
        assert_eq!(a.pending, b.pending);
        assert_eq!(a.pending.len(), 200);
        let busy: u32 = a.running.iter().map(|r| r.holds[0].steps[0].nodes).sum();
        assert!((900..=1000).contains(&busy), "{busy}");
        assert!(a
            .pending
            .iter()
            .all(|p| matches!(&p.request, Request::Rigid(r) if r.nodes >= 1 && r.nodes <= 100)));
        assert!(a.pending.windows(2).all(|w| w[0].submit <= w[1].submit));
    }
}
