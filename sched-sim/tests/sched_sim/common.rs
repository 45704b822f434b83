//! Helpers shared by the test modules.

use sched_core::{JobId, Plan, Policy, PoolId, Request, Shape, Snapshot};
use sched_sim::SimJob;

pub use sched_core::testkit::pools;

pub fn job(id: u64, submit: u64, nodes: u32, walltime: u64, runtime: u64) -> SimJob {
    SimJob {
        id: JobId(id),
        user: 0,
        submit,
        request: Request::rigid(nodes, walltime),
        runtime,
        killable: false,
    }
}

/// Strict first-come-first-served on pool 0, written here so the engine's tests do not
/// depend on the policy crates: starts queued jobs in order while the head fits now.
#[derive(Default)]
pub struct TinyFcfs;

impl Policy for TinyFcfs {
    fn plan(&mut self, s: &Snapshot<'_>) -> Plan {
        let pool = PoolId(0);
        let used: u32 = s
            .running
            .iter()
            .flat_map(|r| &r.holds)
            .map(|h| h.steps.first().map_or(0, |st| st.nodes))
            .sum();
        let mut free = s.pools[0].nodes.saturating_sub(used);
        let mut plan = Plan::default();
        for p in s.pending {
            let Some(r) = p.request.as_rigid() else { break };
            if r.nodes > free {
                break;
            }
            free -= r.nodes;
            plan.placements.push(sched_core::Placement {
                job: p.id,
                start: s.now,
                shape: Shape::rigid(pool, r.nodes, r.walltime),
                claim_from: sched_core::RNone,
            });
        }
        plan
    }
}
