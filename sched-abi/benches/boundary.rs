//! The cost of the plugin boundary: CBF planning a queue of 10,000 rigid jobs on a
//! 10,000-node pool (90 % busy), linked directly vs loaded from `libesched_cbf.so`.
//!
//! Two cases, because CBF keeps its schedule between calls:
//! - `fresh`: a new instance per call, so each call builds the whole schedule (what a policy
//!   swap or a restart costs); the policy's own work dominates;
//! - `warm`: repeated calls on the same snapshot by one instance, which only answers from its
//!   kept schedule (O(queue)).
//!
//! - `incremental`: calls that alternate between two snapshots differing as a replay's do from
//!   call to call (a job arrived at the end of the queue, then gone again), by one instance: the
//!   policy updates its kept schedule. `starts` asks for `plan_starts` (esim), `plan` for the
//!   whole plan (batchd), whose 10,000 expected starts are built at every call. `*_told_*` is
//!   the policy driven as esim drives it, told the driver's account of what changed, so that it
//!   need not compare the queue with its own.
//!
//! Nothing of a snapshot is copied at the boundary (the plugin plans on the host's lists) and a
//! plan crosses as it is, so plugin and linked differ by the calls through the vtable alone.
//!
//! Run: `cargo bench -p sched-abi --bench boundary`. The cdylib is the one cargo builds for the
//! dev-dependency on esched-cbf (next to this bench, in `deps/`).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sched_abi::PolicyLibrary;
use sched_core::time::{HOUR, MINUTE};
use sched_core::{
    Changes, JobId, ListChanges, NamedPolicy, Params, Pending, Policy, Pool, PoolId, PoolSteps,
    Request, Running, Shape, Snapshot,
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
            holds: sched_core::rvec![PoolSteps::flat(pool, NOW, start + wall, k)],
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
                claimed: Default::default(),
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
    // Told that nothing changed, as esim tells it.
    let unchanged = Changes {
        running: Some(ListChanges::default()),
        pending: Some(ListChanges::default()),
    };
    let mut told_linked = linked();
    told_linked.plan(&snap);
    g.bench_function("linked_told", |bch| {
        bch.iter(|| {
            told_linked.expect_changes(&unchanged);
            told_linked.plan(&snap)
        })
    });
    let mut told_plugin = plugin();
    let _ = told_plugin.try_plan(&snap);
    g.bench_function("plugin_told", |bch| {
        bch.iter(|| {
            told_plugin.expect_changes(&unchanged);
            told_plugin.try_plan(&snap)
        })
    });
    g.finish();

    // B: one more job arrived at the end of the queue; A and B taking turns (an arrival, then
    // its cancellation: changes CBF answers from its kept schedule).
    let mut b_pending = w.pending.clone();
    let mut arrived = b_pending[QUEUE / 2].clone();
    arrived.id = JobId(u64::MAX / 2);
    b_pending.push(arrived);
    let snap_b = Snapshot {
        pending: &b_pending,
        ..snap
    };
    let pair = [snap, snap_b];
    let mut g = c.benchmark_group("cbf_10000_incremental");
    g.sample_size(20);
    for starts in [true, false] {
        let what = if starts { "starts" } else { "plan" };
        let mut warm_linked = linked();
        warm_linked.plan(&snap);
        let mut k = 0usize;
        g.bench_function(format!("linked_{what}"), |bch| {
            bch.iter(|| {
                k += 1;
                let s = &pair[k % 2];
                if starts {
                    warm_linked.plan_starts(s)
                } else {
                    warm_linked.plan(s)
                }
            })
        });
        let mut warm_plugin = plugin();
        let _ = warm_plugin.try_plan(&snap);
        let mut k = 0usize;
        g.bench_function(format!("plugin_{what}"), |bch| {
            bch.iter(|| {
                k += 1;
                let s = &pair[k % 2];
                if starts {
                    warm_plugin.try_plan_starts(s)
                } else {
                    warm_plugin.try_plan(s)
                }
            })
        });
        // As esim drives it: told the driver's account of the queue's changes (an arrival at
        // the end, then the same job leaving), so that the policy need not compare the queue.
        let accounts = [
            Changes {
                running: Some(ListChanges::default()),
                pending: Some(ListChanges {
                    left: vec![QUEUE],
                    arrived: 0,
                }),
            },
            Changes {
                running: Some(ListChanges::default()),
                pending: Some(ListChanges {
                    left: Vec::new(),
                    arrived: 1,
                }),
            },
        ];
        let mut told_linked = linked();
        told_linked.plan(&snap);
        let mut k = 0usize;
        g.bench_function(format!("linked_told_{what}"), |bch| {
            bch.iter(|| {
                k += 1;
                told_linked.expect_changes(&accounts[k % 2]);
                let s = &pair[k % 2];
                if starts {
                    told_linked.plan_starts(s)
                } else {
                    told_linked.plan(s)
                }
            })
        });
        let mut told_plugin = plugin();
        let _ = told_plugin.try_plan(&snap);
        let mut k = 0usize;
        g.bench_function(format!("plugin_told_{what}"), |bch| {
            bch.iter(|| {
                k += 1;
                told_plugin.expect_changes(&accounts[k % 2]);
                let s = &pair[k % 2];
                if starts {
                    told_plugin.try_plan_starts(s)
                } else {
                    told_plugin.try_plan(s)
                }
            })
        });
        // Same answers both ways on the same sequence.
        let (mut l, mut p) = (linked(), plugin());
        for s in pair.iter().chain(&pair) {
            let want = if starts { l.plan_starts(s) } else { l.plan(s) };
            let got = if starts {
                p.try_plan_starts(s)
            } else {
                p.try_plan(s)
            };
            assert_eq!(got.as_ref(), Ok(&want), "plugin and linked CBF disagree");
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
