//! The CBF-shaped workload on a profile: a 10,000-node pool and `n` queued rigid jobs, each
//! placed at its earliest fit from time 0 and then added, in queue order: what conservative
//! backfilling does when it plans a whole queue. `tree` (the profile as it is, switching
//! representation by size and scan length) runs 1,000 / 10,000 / 100,000 jobs, `flat_only`,
//! `chunked_only` and `tree_only` the same with each representation alone (where the tree
//! starts to win places `FLAT_MAX` and `SCAN_LIMIT`), the `BTreeMap` oracle 1,000 / 10,000 for
//! the ratio. Every job's fit must pass the free runs left by those before it, too short for
//! it: the shape where the treap's fences pay.
//!
//! What to look for: 100,000 jobs planned in well under 1 s, cost growing about n·log n.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use sched_core::profile::naive::NaiveProfile;
use sched_core::profile::Large;
use sched_core::time::{HOUR, MINUTE};
use sched_core::Profile;

const POOL: u32 = 10_000;

/// `(nodes, walltime)` of `n` jobs from a fixed-seed generator: nodes a power of two up to
/// 8,192 or the whole pool (small jobs as common as large ones, as in real traces), walltimes
/// uniform in 1 min..24 h.
fn jobs(n: usize) -> Vec<(u32, u64)> {
    let mut state: u64 = 0x5eed_cb0f;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..n)
        .map(|_| {
            let e = next() % 15;
            let nodes = if e == 14 { POOL } else { 1 << e };
            let walltime = MINUTE + next() % (24 * HOUR - MINUTE);
            (nodes, walltime)
        })
        .collect()
}

/// The operations a CBF planner needs, so that both profiles run the same code.
trait Plannable: Default {
    fn fit(&self, duration: u64, limit: i64) -> Option<u64>;
    fn reserve(&mut self, t0: u64, t1: u64, nodes: i64);
    fn points(&self) -> usize;
}

impl Plannable for Profile {
    fn fit(&self, duration: u64, limit: i64) -> Option<u64> {
        self.earliest_fit(0, duration, limit)
    }
    fn reserve(&mut self, t0: u64, t1: u64, nodes: i64) {
        self.add(t0, t1, nodes);
    }
    fn points(&self) -> usize {
        self.len()
    }
}

/// A profile in one representation only: flat (`FLAT`), chunks (`CHUNKED`) or the treap
/// (`TREE`), instead of switching by size and scan length.
struct Only<const K: u8>(Profile);

const FLAT: u8 = 0;
const CHUNKED: u8 = 1;
const TREE: u8 = 2;

impl<const K: u8> Default for Only<K> {
    fn default() -> Self {
        Only(match K {
            FLAT => Profile::with_flat_max(usize::MAX),
            CHUNKED => Profile::with_layout(0, Large::Chunked),
            _ => Profile::with_layout(0, Large::Tree),
        })
    }
}

impl<const K: u8> Plannable for Only<K> {
    fn fit(&self, duration: u64, limit: i64) -> Option<u64> {
        self.0.fit(duration, limit)
    }
    fn reserve(&mut self, t0: u64, t1: u64, nodes: i64) {
        self.0.reserve(t0, t1, nodes);
    }
    fn points(&self) -> usize {
        self.0.points()
    }
}

impl Plannable for NaiveProfile {
    fn fit(&self, duration: u64, limit: i64) -> Option<u64> {
        self.earliest_fit(0, duration, limit)
    }
    fn reserve(&mut self, t0: u64, t1: u64, nodes: i64) {
        self.add(t0, t1, nodes);
    }
    fn points(&self) -> usize {
        self.len()
    }
}

/// Plans every job in queue order on an empty pool; returns the number of change points so
/// that the work cannot be optimised away.
fn plan<P: Plannable>(jobs: &[(u32, u64)]) -> usize {
    let mut used = P::default();
    for &(nodes, walltime) in jobs {
        let limit = i64::from(POOL - nodes);
        if let Some(start) = used.fit(walltime, limit) {
            used.reserve(start, start + walltime, i64::from(nodes));
        }
    }
    used.points()
}

fn cbf_plan(c: &mut Criterion) {
    let mut group = c.benchmark_group("cbf_plan");
    group.sample_size(10);
    for n in [1_000, 10_000, 100_000] {
        let js = jobs(n);
        group.bench_with_input(BenchmarkId::new("tree", n), &js, |b, js| {
            b.iter(|| plan::<Profile>(js))
        });
    }
    // Each representation alone, to place the flat limit: where does the tree start to win?
    for n in [1_000, 10_000, 100_000] {
        let js = jobs(n);
        group.bench_with_input(BenchmarkId::new("flat_only", n), &js, |b, js| {
            b.iter(|| plan::<Only<FLAT>>(js))
        });
        group.bench_with_input(BenchmarkId::new("chunked_only", n), &js, |b, js| {
            b.iter(|| plan::<Only<CHUNKED>>(js))
        });
        group.bench_with_input(BenchmarkId::new("tree_only", n), &js, |b, js| {
            b.iter(|| plan::<Only<TREE>>(js))
        });
    }
    for n in [1_000, 10_000] {
        let js = jobs(n);
        group.bench_with_input(BenchmarkId::new("naive", n), &js, |b, js| {
            b.iter(|| plan::<NaiveProfile>(js))
        });
    }
    group.finish();
}

criterion_group!(benches, cbf_plan);
criterion_main!(benches);
