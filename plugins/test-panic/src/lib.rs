//! A policy that panics on demand, for sched-abi's containment tests.
//!
//! Otherwise it is a plain greedy policy: in queue order, start now every job that fits in
//! pool 0's free nodes. Parameters: `panic_on_job = ID` panics in `plan` whenever job ID is
//! pending; `panic_on_call = N` panics in the Nth call to `plan` of the process (once: the count
//! survives the instance a panic discards, so a replay goes on); `panic_in_new = true` panics in
//! the constructor.

use std::sync::atomic::{AtomicU64, Ordering};

use sched_core::{
    NamedPolicy, ParamError, Params, Placement, Plan, Policy, PoolId, Shape, Snapshot,
};

/// Greedy, with a trap.
#[derive(Debug, Default)]
pub struct Panicky {
    panic_on_job: Option<u64>,
    panic_on_call: Option<u64>,
}

/// Calls to `plan` in this process, over every instance.
static CALLS: AtomicU64 = AtomicU64::new(0);

impl Policy for Panicky {
    fn plan(&mut self, s: &Snapshot<'_>) -> Plan {
        let call = CALLS.fetch_add(1, Ordering::SeqCst) + 1;
        if self.panic_on_call == Some(call) {
            panic!("call {call}: this policy was told to panic on it");
        }
        if let Some(id) = self.panic_on_job {
            if s.pending.iter().any(|p| p.id.0 == id) {
                panic!("job {id} is pending and this policy was told to panic on it");
            }
        }
        let pool = PoolId(0);
        let held: u64 = s
            .running
            .iter()
            .flat_map(|r| &r.holds)
            .filter(|h| h.pool == pool && h.start <= s.now && h.end() > s.now)
            .map(|h| {
                let mut t = h.start;
                h.steps
                    .iter()
                    .find(|st| {
                        t = t.saturating_add(st.duration);
                        t > s.now
                    })
                    .map_or(0, |st| u64::from(st.nodes))
            })
            .sum();
        let mut free = s
            .pool(pool)
            .map_or(0, |p| u64::from(p.nodes))
            .saturating_sub(held);
        let mut plan = Plan::default();
        for p in s.pending {
            let Some(r) = p.request.as_rigid() else {
                continue;
            };
            if r.pool.into_option().is_some_and(|q| q != pool)
                || p.earliest_start.max(p.submit) > s.now
            {
                continue;
            }
            if u64::from(r.nodes) <= free {
                free -= u64::from(r.nodes);
                plan.placements.push(Placement {
                    job: p.id,
                    start: s.now,
                    shape: Shape::rigid(pool, r.nodes, r.walltime),
                    claim_from: sched_core::RNone,
                });
            }
        }
        plan
    }
}

impl NamedPolicy for Panicky {
    const NAME: &'static str = "test-panic";

    fn from_params(params: &Params) -> Result<Self, ParamError> {
        let panic_on_job = params
            .get("panic_on_job")
            .map(|_| params.parse_or("panic_on_job", 0u64))
            .transpose()?;
        let panic_on_call = params
            .get("panic_on_call")
            .map(|_| params.parse_or("panic_on_call", 0u64))
            .transpose()?;
        if params.bool_or("panic_in_new", false)? {
            panic!("told to panic in the constructor");
        }
        params.finish()?;
        Ok(Panicky {
            panic_on_job,
            panic_on_call,
        })
    }
}

sched_abi::export_policy!(Panicky);
