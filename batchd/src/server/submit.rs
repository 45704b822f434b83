//! `Submit`: check, store, acknowledge; or, for `--test-only`, ask a fresh policy instance.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use batch_proto::{
    Dependency, ErrorKind, ErrorReply, JobShape, JobSpec, Response, SubmitRequest, TestOnlyReply,
};

use super::{internal, Caller, Reply};
use crate::config::PoolConfig;
use crate::core::{Active, Core};
use crate::daemon::{Daemon, TEST_ONLY_SLOTS};
use crate::launch::now_ms;
use crate::record::JobRecord;
use sched_core::JobId;

/// Checks `spec` against the cluster: pool, size, dependencies.
pub fn check_against(core: &Core, spec: &JobSpec) -> Result<(), ErrorReply> {
    let invalid = |m: String| ErrorReply::new(ErrorKind::InvalidSpec, m);
    // A co-allocated job's components may go to different pools: each must fit in one, and
    // all of them in the whole cluster.
    let need = match &spec.shape {
        JobShape::CoAllocated { components, .. } => {
            let total: u64 = core.pools.iter().map(|p| u64::from(p.pool.nodes)).sum();
            let want: u64 = components.iter().map(|&n| u64::from(n)).sum();
            if want > total {
                return Err(invalid(format!(
                    "Requested node configuration is not available: {want} nodes in all, the pools have {total}"
                )));
            }
            components.iter().copied().max().unwrap_or(0)
        }
        // A moldable job needs room for its smallest configuration only: a policy drops the
        // configurations no pool can hold.
        shape => shape.least_nodes(),
    };
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

/// Clips a moldable job's `--nodes-range` to the largest pool it may run in (its own, or the
/// largest of all): as Slurm clips a node range to what the partition holds, since node counts
/// no pool has could never be chosen, and a policy would weigh each of them at every fit. A
/// range wholly beyond the pools is left alone (`check_against` judged the job by its
/// smallest count).
pub fn clip_to_pools(core: &Core, spec: &mut JobSpec) {
    let largest = match &spec.pool {
        Some(name) => core.pool_index(name).map(|i| core.pools[i].pool.nodes),
        None => core.pools.iter().map(|p| p.pool.nodes).max(),
    };
    if let (JobShape::Moldable { model: Some(m), .. }, Some(largest)) = (&mut spec.shape, largest) {
        if m.max_nodes > largest && m.min_nodes <= largest {
            m.max_nodes = largest;
        }
    }
}

pub async fn handle(d: &Arc<Daemon>, caller: &Caller, req: SubmitRequest) -> Reply {
    // What a client may send (fields batchd sets refused, every bound) was checked when the
    // request was decoded (`Request::check`); what depends on the time and pools follows.
    let mut spec = req.spec;
    let max_time = d.settings().config.max_time(spec.pool.as_deref());
    spec.resolve_unlimited(max_time);
    if let Err(e) = spec.check(now_ms(), max_time) {
        return ErrorReply::new(ErrorKind::InvalidSpec, e.to_string()).into();
    }
    if let Err(m) = size_from_resources(&mut spec, &d.settings().config.pools) {
        return ErrorReply::new(ErrorKind::InvalidSpec, m).into();
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
    let recs = {
        let mut core = d.core();
        if let Err(e) = check_against(&core, &spec) {
            return e.into();
        }
        clip_to_pools(&core, &mut spec);
        array_records(&mut core.next_id, caller, spec, now)
    };
    let Some(id) = recs.first().map(|r| r.id) else {
        return internal("an array without tasks");
    };
    // Acknowledged only once committed: an acknowledged job survives a crash. The tasks of an
    // array are queued to the writer in order and the last one awaited, so all are written.
    let last = recs.len() - 1;
    for (k, rec) in recs.iter().enumerate() {
        if k < last {
            d.store.write(rec.clone());
        } else if let Err(e) = d.store.commit(rec.clone()).await {
            tracing::error!(job = id, "submission not stored: {e}");
            return internal(e);
        }
    }
    {
        let mut core = d.core();
        for rec in recs {
            core.insert(Active { rec, run: None });
        }
    }
    d.reschedule();
    tracing::debug!(job = id, uid = caller.uid, "submitted");
    Response::Submitted { id }.into()
}

/// Sets a rigid job's node count from its `-n/-c/--mem...` (batch_proto::resources) with the
/// node size of its pool; without `-p`, of every pool that can hold it, the largest count, so
/// that whichever pool the policy picks, the job has enough. No pool can hold it: refused with
/// Slurm's words and the reason.
fn size_from_resources(spec: &mut JobSpec, pools: &[PoolConfig]) -> Result<(), String> {
    let Some(r) = spec.resources.as_ref().filter(|r| !r.is_empty()) else {
        return Ok(());
    };
    let JobShape::Rigid { nodes, .. } = &mut spec.shape else {
        return Ok(());
    };
    let mut counts = pools
        .iter()
        .filter(|p| spec.pool.as_ref().is_none_or(|name| *name == p.name))
        .map(|p| r.node_count(p.node_size()));
    let Some(first) = counts.next() else {
        // An unknown pool: check_against says so.
        return Ok(());
    };
    let best = counts.fold(first, |a, b| match (a, b) {
        (Ok(a), Ok(b)) => Ok(a.max(b)),
        (Ok(a), Err(_)) | (Err(_), Ok(a)) => Ok(a),
        (Err(e), Err(_)) => Err(e),
    });
    *nodes = best.map_err(|why| format!("Requested node configuration is not available: {why}"))?;
    Ok(())
}

/// The records a submission makes, ids taken from `next_id`: one job, or one per task of a job
/// array, each an ordinary pending job that knows its array (the array's id is its first
/// task's job id, as in Slurm).
fn array_records(
    next_id: &mut u64,
    caller: &Caller,
    mut spec: JobSpec,
    now: u64,
) -> Vec<JobRecord> {
    let Some(array) = spec.array.take() else {
        let id = *next_id;
        *next_id += 1;
        return vec![JobRecord::submitted(
            id,
            caller.uid,
            caller.gid,
            &caller.user,
            spec,
            now,
        )];
    };
    let first = *next_id;
    *next_id += array.indices.len() as u64;
    array
        .indices
        .iter()
        .zip(first..)
        .map(|(&index, id)| {
            let mut task = spec.clone();
            task.array_task = Some(Box::new(array.task(first, index)));
            JobRecord::submitted(id, caller.uid, caller.gid, &caller.user, task, now)
        })
        .collect()
}

/// When the job would start if submitted now: a fresh instance of the policy in force plans
/// the present queue plus this job, so the running policy's state is not disturbed.
///
/// The plan has the scheduler's time budget, and at most [`TEST_ONLY_SLOTS`] run at once: a
/// plan past its budget is answered with an error and left to end on its thread, which keeps
/// its slot until then, so no user can pile up stuck threads.
async fn test_only(d: &Arc<Daemon>, caller: &Caller, mut spec: JobSpec) -> Reply {
    let Ok(slot) = Arc::clone(&d.test_only_slots).try_acquire_owned() else {
        return ErrorReply::new(
            ErrorKind::Busy,
            format!(
                "{TEST_ONLY_SLOTS} --test-only plans are already running (the most at once); try again later"
            ),
        )
        .into();
    };
    let config = d.settings().config;
    let budget = Duration::from_millis(config.policy.time_budget_ms);
    let now = now_ms();
    let (snap, id, pools) = {
        let core = d.core();
        if let Err(e) = check_against(&core, &spec) {
            return e.into();
        }
        clip_to_pools(&core, &mut spec);
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
        let pools: Vec<String> = core.pools.iter().map(|p| p.pool.name.to_string()).collect();
        (snap, id, pools)
    };
    let planning = tokio::task::spawn_blocking(move || {
        let _slot = slot;
        let mut host = crate::policy::build(&config)?;
        let plan = host.plan(&snap.view());
        // A fresh host has no earlier plan to fall back on: a failed call is the answer.
        match host.last_failure() {
            Some(why) => Err(why.to_string()),
            None => Ok(plan),
        }
    });
    let planned = match tokio::time::timeout(budget, planning).await {
        Ok(planned) => planned,
        Err(_) => {
            d.test_only_timeouts.fetch_add(1, Ordering::Relaxed);
            let name = d.policy_name();
            let ms = budget.as_millis();
            tracing::warn!(
                policy = %name,
                uid = caller.uid,
                "policy `{name}`: no --test-only plan within its time budget of {ms} ms; abandoned (it runs on until it returns)"
            );
            return ErrorReply::new(
                ErrorKind::Busy,
                format!("policy `{name}` gave no plan within its time budget of {ms} ms; nothing was queued"),
            )
            .into();
        }
    };
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
