//! From-scratch planning cost of conservative backfilling: one `plan()` call by a fresh policy
//! on an empty 10,000-node pool with 1,000 / 10,000 / 100,000 queued rigid jobs.
//!
//! What to look for: 100,000 jobs in well under 1 s, the cost growing about as n·log n. Run with
//! `cargo bench -p esched-cbf --bench plan`; compare the 100k and 10k figures (≈ 10× · log
//! ratio ≈ 12.5× for n·log n).

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use esched_cbf::Cbf;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sched_core::time::{HOUR, MINUTE};
use sched_core::{JobId, Pending, Policy, Pool, PoolId, Request, Snapshot};

const NODES: u32 = 10_000;

/// `n` jobs submitted at 0: sizes log-uniform on 1..=10,000 (most jobs small, as in real
/// traces), walltimes uniform on 1 min..24 h.
fn queue(n: usize) -> Vec<Pending> {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    (0..n)
        .map(|i| {
            let nodes = (f64::from(NODES).powf(rng.gen::<f64>()).floor() as u32).clamp(1, NODES);
            let walltime = rng.gen_range(MINUTE..=24 * HOUR);
            Pending {
                wants_view: false,
                claimed: Default::default(),
                id: JobId(i as u64),
                user: 0,
                submit: 0,
                earliest_start: 0,
                priority: 0,
                request: Request::rigid(nodes, walltime),
            }
        })
        .collect()
}

fn plan_from_scratch(c: &mut Criterion) {
    let pools = [Pool {
        id: PoolId(0),
        name: "batch".into(),
        nodes: NODES,
    }];
    let mut group = c.benchmark_group("cbf_plan_from_scratch");
    group.sample_size(10);
    for n in [1_000, 10_000, 100_000] {
        let pending = queue(n);
        let snap = Snapshot {
            now: 0,
            pools: &pools,
            running: &[],
            pending: &pending,
        };
        group.bench_with_input(BenchmarkId::from_parameter(n), &snap, |b, snap| {
            b.iter_batched(Cbf::new, |mut cbf| cbf.plan(snap), BatchSize::PerIteration)
        });
    }
    group.finish();
}

criterion_group!(benches, plan_from_scratch);
criterion_main!(benches);
