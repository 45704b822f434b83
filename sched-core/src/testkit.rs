//! Builders for the tests of policies and drivers: numbered pools, rigid pending and running
//! jobs, and lookups in a plan. Compiled for this crate's tests and, for other crates' tests,
//! with the `testkit` feature (`sched-core = { workspace = true, features = ["testkit"] }` in
//! their `[dev-dependencies]`).

use crate::policy::{ListChanges, Pending, Plan, PoolSteps, Running, Shape};
use crate::pool::{Pool, PoolId};
use crate::request::{JobId, Request};
use crate::time::{Duration, Time};
use abi_stable::std_types::RSome;

/// Pools of the given sizes, with ids `0..n` and names `p0`, `p1`…
pub fn pools(sizes: &[u32]) -> Vec<Pool> {
    sizes
        .iter()
        .enumerate()
        .map(|(i, &nodes)| Pool {
            id: PoolId(i as u32),
            name: format!("p{i}").into(),
            nodes,
        })
        .collect()
}

/// A rigid job of `nodes` × `walltime` on any pool, submitted at 0 by user 0.
pub fn pending_rigid(id: u64, nodes: u32, walltime: Duration) -> Pending {
    Pending {
        wants_view: false,
        claimed: Default::default(),
        id: JobId(id),
        user: 0,
        submit: 0,
        earliest_start: 0,
        priority: 0,
        request: Request::rigid(nodes, walltime),
    }
}

/// `p` bound to pool `pool` (rigid requests only; others are returned unchanged).
pub fn on_pool(pool: u32, mut p: Pending) -> Pending {
    if let Request::Rigid(r) = &mut p.request {
        r.pool = RSome(PoolId(pool));
    }
    p
}

/// A rigid job running on `pool` with `nodes` nodes on `[start, end)`, not killable.
pub fn running_rigid(id: u64, pool: u32, nodes: u32, start: Time, end: Time) -> Running {
    Running {
        id: JobId(id),
        user: 0,
        request: Request::rigid(nodes, end - start),
        shape: Shape::rigid(PoolId(pool), nodes, end - start),
        start,
        holds: abi_stable::rvec![PoolSteps::flat(PoolId(pool), start, end, nodes)],
        killable: false,
    }
}

/// The planned start of job `id`, if the plan places it.
pub fn start_of(plan: &Plan, id: u64) -> Option<Time> {
    placement(plan, id).map(|p| p.start)
}

/// The pool job `id` is placed on, if the plan places it with a single-pool shape.
pub fn pool_of(plan: &Plan, id: u64) -> Option<PoolId> {
    placement(plan, id).and_then(|p| match p.shape {
        Shape::Rigid { pool, .. } | Shape::Moldable { pool, .. } | Shape::Evolving { pool, .. } => {
            Some(pool)
        }
        Shape::CoAllocated { .. } => None,
    })
}

fn placement(plan: &Plan, id: u64) -> Option<&crate::policy::Placement> {
    plan.placements.iter().find(|p| p.job == JobId(id))
}

/// The account of how a list of job ids became `after` from `before`, as a driver that never
/// edits a job in place tells it ([`ListChanges`]: the positions that left, the entries
/// appended), when one describes the change: the kept entries in order, then only new ids.
pub fn account(before: &[JobId], after: &[JobId]) -> Option<ListChanges> {
    let mut c = ListChanges::default();
    let mut j = 0;
    for (k, id) in before.iter().enumerate() {
        if after.get(j) == Some(id) {
            j += 1;
        } else {
            c.left.push(k);
        }
    }
    c.arrived = after.len() - j;
    // Arrivals must be new ids, not ones moved back.
    (!after[j..].iter().any(|id| before.contains(id))).then_some(c)
}
