//! `Submit`: check, store, acknowledge; or, for `--test-only`, ask a fresh policy instance.

use std::sync::Arc;

use batch_proto::{
    Dependency, ErrorKind, ErrorReply, JobSpec, Response, SubmitRequest, TestOnlyReply,
};

use super::{internal, Caller, Reply};
use crate::core::{Active, Core};
use crate::daemon::Daemon;
use crate::launch::now_ms;
use crate::record::JobRecord;
use sched_core::JobId;

/// Checks `spec` against the cluster: pool, size, dependencies.
pub fn check_against(core: &Core, spec: &JobSpec) -> Result<(), ErrorReply> {
    let invalid = |m: String| ErrorReply::new(ErrorKind::InvalidSpec, m);
    // A moldable job needs room for its smallest configuration only: a policy drops the
    // configurations no pool can hold.
    let need = spec.shape.least_nodes();
    match &spec.pool {
        Some(name) => {
            let Some(i) = core.pool_index(name) else {
                let names: Vec<&str> = core.pools.iter().map(|p| p.pool.name.as_str()).collect();
                return Err(invalid(format!(
                    "invalid pool `{name}` (pools: {})",
                    names.join(", ")
                )));
            };
            let nodes = core.pools[i].pool.nodes;
            if need > nodes {
                return Err(invalid(format!(
                    "Requested node configuration is not available: {need} nodes, pool {name} has {nodes}"
                )));
            }
        }
        None => {
            let max = core.pools.iter().map(|p| p.pool.nodes).max().unwrap_or(0);
            if need > max {
                return Err(invalid(format!(
                    "Requested node configuration is not available: {need} nodes, the largest pool has {max}"
                )));
            }
        }
    }
    for d in &spec.dependencies {
        if let Dependency::On { job, .. } = d {
            if core.state_of(*job).is_none() {
                return Err(invalid(format!(
                    "Job dependency problem: job {job} does not exist"
                )));
            }
        }
    }
    Ok(())
}

pub async fn handle(d: &Arc<Daemon>, caller: &Caller, req: SubmitRequest) -> Reply {
    let mut spec = req.spec;
    if matches!(spec.shape, batch_proto::JobShape::Session { .. }) {
        return ErrorReply::new(
            ErrorKind::InvalidSpec,
            "a launcher session's job is created by `subscribe`, not submitted",
        )
        .into();
    }
    let max_time = d.settings().config.max_time(spec.pool.as_deref());
    spec.resolve_unlimited(max_time);
    if let Err(e) = spec.check(now_ms(), max_time) {
        return ErrorReply::new(ErrorKind::InvalidSpec, e.to_string()).into();
    }
    if d.euid != 0 && caller.uid != d.euid {
        return ErrorReply::new(
            ErrorKind::PermissionDenied,
            format!(
                "batchd runs as uid {} and can run jobs of that user only",
                d.euid
            ),
        )
        .into();
    }
    if spec.priority > 0 && caller.uid != 0 {
        return ErrorReply::new(
            ErrorKind::PermissionDenied,
            "only root may give a job a positive priority",
        )
        .into();
    }
    if req.test_only {
        return test_only(d, caller, spec).await;
    }
    let now = now_ms();
    let rec = {
        let mut core = d.core();
        if let Err(e) = check_against(&core, &spec) {
            return e.into();
        }
        let id = core.next_id;
        core.next_id += 1;
        JobRecord::submitted(id, caller.uid, caller.gid, &caller.user, spec, now)
    };
    let id = rec.id;
    // Acknowledged only once committed: an acknowledged job survives a crash.
    if let Err(e) = d.store.commit(rec.clone()).await {
        tracing::error!(job = id, "submission not stored: {e}");
        return internal(e);
    }
    d.core().insert(Active { rec, run: None });
    d.reschedule();
    tracing::debug!(job = id, uid = caller.uid, "submitted");
    Response::Submitted { id }.into()
}

/// When the job would start if submitted now: a fresh instance of the policy in force plans
/// the present queue plus this job, so the running policy's state is not disturbed.
async fn test_only(d: &Arc<Daemon>, caller: &Caller, spec: JobSpec) -> Reply {
    let config = d.settings().config;
    let now = now_ms();
    let (snap, id, pools) = {
        let core = d.core();
        if let Err(e) = check_against(&core, &spec) {
            return e.into();
        }
        let mut snap = core.snapshot(now, config.grace_period_ms);
        let id = core.next_id;
        let rec = JobRecord::submitted(id, caller.uid, caller.gid, &caller.user, spec.clone(), now);
        let eligible = !spec.hold && core.dep_status(&rec) == crate::core::DepStatus::Satisfied;
        if eligible {
            let pos = snap
                .pending
                .iter()
                .position(|p| p.priority < spec.priority)
                .unwrap_or(snap.pending.len());
            snap.pending.insert(pos, core.pending_of(&rec, now));
        }
        let pools: Vec<String> = core.pools.iter().map(|p| p.pool.name.clone()).collect();
        (snap, id, pools)
    };
    let planned = tokio::task::spawn_blocking(move || {
        let mut host = crate::policy::build(&config)?;
        let plan = host.plan(&snap.view());
        // A fresh host has no earlier plan to fall back on: a failed call is the answer.
        match host.last_failure() {
            Some(why) => Err(why.to_string()),
            None => Ok(plan),
        }
    })
    .await;
    let plan = match planned {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => return ErrorReply::new(ErrorKind::PolicyLoad, e).into(),
        Err(e) => return internal(e),
    };
    let placed = plan.placements.iter().find(|p| p.job == JobId(id));
    let reply = match placed {
        Some(p) => {
            let (pool, nodes) = crate::core::Core::shape_needs(&p.shape).unzip();
            TestOnlyReply {
                expected_start: Some(p.start.max(now)),
                pool: pool.and_then(|i| pools.get(i).cloned()),
                nodes,
            }
        }
        None => TestOnlyReply {
            expected_start: None,
            pool: None,
            nodes: None,
        },
    };
    Response::TestOnly(reply).into()
}
