//! The cost of the plugin boundary: CBF planning a queue of 10,000 rigid jobs on a
//! 10,000-node pool (90 % busy), linked directly vs loaded from `libesched_cbf.so`.
//!
//! Two cases, because CBF keeps its schedule between calls:
//! - `fresh`: a new instance per call, so each call builds the whole schedule (what a policy
//!   swap or a restart costs); the policy's own work dominates;
//! - `warm`: repeated calls on the same snapshot by one instance, which only answers from its
//!   kept schedule (O(queue)); here the boundary's O(queue) copies weigh the most.
//!
//! `boundary/*` time the copies alone: snapshot to its FFI mirror and back, plan likewise.
//!
//! Run: `cargo bench -p sched-abi --bench boundary`. The cdylib is the one cargo builds for the
//! dev-dependency on esched-cbf (next to this bench, in `deps/`).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sched_abi::types::{FfiPlan, FfiSnapshot, OwnedSnapshot};
use sched_abi::PolicyLibrary;
use sched_core::time::{HOUR, MINUTE};
use sched_core::{
    JobId, NamedPolicy, Params, Pending, Plan, Policy, Pool, PoolId, PoolSteps, Request, Running,
    Shape, Snapshot,
};

const NOW: u64 = 30 * 24 * HOUR;
const QUEUE: usize = 10_000;
const NODES: u32 = 10_000;

struct Workload {
    pools: Vec<Pool>,
    running: Vec<Running>,
    pending: Vec<Pending>,
}

impl Workload {
    fn snapshot(&self) -> Snapshot<'_> {
        Snapshot {
            now: NOW,
            pools: &self.pools,
            running: &self.running,
            pending: &self.pending,
        }
    }
}

/// Sizes mixing single nodes and powers of two up to a tenth of the pool; walltimes
/// log-uniform between 1 min and 36 h, in whole minutes.
fn job(rng: &mut ChaCha8Rng) -> (u32, u64) {
    let nodes = match rng.gen_range(0..10) {
        0..=2 => 1,
        3..=7 => 1 << rng.gen_range(1..=9),
        _ => rng.gen_range(1..=NODES / 10),
    };
    let (lo, hi) = ((MINUTE as f64).ln(), ((36 * HOUR) as f64).ln());
    let wall = (rng.gen_range(lo..hi).exp() as u64 / MINUTE).max(1) * MINUTE;
    (nodes, wall)
}

fn workload() -> Workload {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let pool = PoolId(0);
    let (mut running, mut busy, mut id) = (Vec::new(), 0u32, 0u64);
    while busy < NODES / 10 * 9 {
        let (k, wall) = job(&mut rng);
        let k = k.min(NODES - busy);
        let start = NOW - rng.gen_range(0..wall);
        running.push(Running {
            id: JobId(id),
            user: 0,
            request: Request::rigid(k, wall),
            shape: Shape::rigid(pool, k, wall),
            start,
            holds: vec![PoolSteps::flat(pool, NOW, start + wall, k)],
            killable: false,
        });
        busy += k;
        id += 1;
    }
    let pending = (0..QUEUE as u64)
        .map(|i| {
            let (k, wall) = job(&mut rng);
            let submit = NOW - (QUEUE as u64 - i) * MINUTE;
            Pending {
                wants_view: false,
                id: JobId(id + i + 1),
                user: rng.gen_range(0..100),
                submit,
                earliest_start: submit,
                priority: 0,
                request: Request::rigid(k, wall),
            }
        })
        .collect();
    Workload {
        pools: vec![Pool {
            id: pool,
            name: "bench".into(),
            nodes: NODES,
        }],
        running,
        pending,
    }
}

fn bench(c: &mut Criterion) {
    let w = workload();
    let snap = w.snapshot();
    let lib = match PolicyLibrary::open("cbf", None) {
        Ok(lib) => lib,
        Err(e) => panic!("{e}"),
    };
    let linked = || esched_cbf::Cbf::from_params(&Params::new()).expect("cbf takes no parameters");
    let plugin = || {
        lib.instantiate(&Params::new())
            .expect("cbf plugin instantiates")
    };

    // Both give the same plan, or the comparison means nothing.
    let a = linked().plan(&snap);
    let b = plugin().try_plan(&snap).expect("no panic");
    assert_eq!(a, b, "plugin and linked CBF disagree");
    assert_eq!(a.placements.len(), QUEUE);

    let mut g = c.benchmark_group("cbf_10000_fresh");
    g.sample_size(10);
    g.bench_function("linked", |bch| {
        bch.iter_batched(linked, |mut p| p.plan(&snap), BatchSize::PerIteration)
    });
    g.bench_function("plugin", |bch| {
        bch.iter_batched(plugin, |mut p| p.try_plan(&snap), BatchSize::PerIteration)
    });
    g.finish();

    let mut g = c.benchmark_group("cbf_10000_warm");
    g.sample_size(20);
    let mut warm_linked = linked();
    warm_linked.plan(&snap);
    g.bench_function("linked", |bch| bch.iter(|| warm_linked.plan(&snap)));
    let mut warm_plugin = plugin();
    let _ = warm_plugin.try_plan(&snap);
    g.bench_function("plugin", |bch| bch.iter(|| warm_plugin.try_plan(&snap)));
    g.finish();

    let mut g = c.benchmark_group("boundary_10000");
    g.sample_size(20);
    g.bench_function("snapshot_there_and_back", |bch| {
        bch.iter(|| OwnedSnapshot::from(&FfiSnapshot::from(&snap)))
    });
    g.bench_function("plan_there_and_back", |bch| {
        bch.iter(|| Plan::from(&FfiPlan::from(&a)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
