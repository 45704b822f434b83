//! A cheating policy for sched-abi's containment tests: it starts every pending job now, on
//! pool 0, whatever the pool holds. The host's validator must refuse its plans.

use sched_core::{
    NamedPolicy, ParamError, Params, Placement, Plan, Policy, PoolId, Shape, Snapshot,
};

/// Starts everything now.
#[derive(Debug, Default)]
pub struct OverCommit;

impl Policy for OverCommit {
    fn plan(&mut self, s: &Snapshot<'_>) -> Plan {
        let placements = s
            .pending
            .iter()
            .filter_map(|p| {
                let r = p.request.as_rigid()?;
                Some(Placement {
                    job: p.id,
                    start: s.now.max(p.earliest_start).max(p.submit),
                    shape: Shape::rigid(r.pool.unwrap_or(PoolId(0)), r.nodes, r.walltime),
                    claim_from: sched_core::RNone,
                })
            })
            .collect();
        Plan {
            placements,
            ..Plan::default()
        }
    }
}

impl NamedPolicy for OverCommit {
    const NAME: &'static str = "test-overcommit";

    fn from_params(params: &Params) -> Result<Self, ParamError> {
        params.finish()?;
        Ok(OverCommit)
    }
}

sched_abi::export_policy!(OverCommit);
