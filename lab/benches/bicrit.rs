//! BiCrit on 400 tasks and 200 processors, the largest instances of Dutot & Eyraud §4 (the
//! paper: under 2 s; here well under 10 ms is expected), one instance per workload model, with the
//! default 10 shuffles of the batch order — the same call `esim moldable` makes. The dual
//! approximation (λ*) is part of the measured call. Run with
//! `cargo bench -p esched-lab --bench bicrit`; criterion prints the median among its
//! estimates.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use esched_bicriteria::bicrit::{bicrit, BiCritParams};
use esched_lab::moldable::experiment::{generate, Model};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn bicrit_400x200(c: &mut Criterion) {
    let mut g = c.benchmark_group("bicrit_400_tasks_200_procs");
    for model in Model::ALL {
        let inst = generate(model, 400, 200, &mut ChaCha8Rng::seed_from_u64(11));
        g.bench_with_input(BenchmarkId::from_parameter(model.name()), &inst, |b, i| {
            b.iter(|| bicrit(i, BiCritParams::default()))
        });
    }
    g.finish();
}

criterion_group!(benches, bicrit_400x200);
criterion_main!(benches);
