//! `Submit`: check, store, acknowledge; or, for `--test-only`, ask a fresh policy instance.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use batch_proto::{ErrorKind, ErrorReply, JobSpec, Response, SubmitRequest, TestOnlyReply};

use super::{internal, Caller, Reply};
use crate::core::submit::size_from_resources;
use crate::core::Active;
use crate::daemon::{Daemon, TEST_ONLY_SLOTS};
use crate::launch::now_ms;
use crate::record::JobRecord;
use sched_core::JobId;

pub async fn handle(d: &Arc<Daemon>, caller: &Caller, req: SubmitRequest) -> Reply {
    // What a client may send (fields batchd sets refused, every bound) was checked when the
    // request was decoded (`Request::check`); what depends on the time and pools follows.
    let mut spec = req.spec;
    let max_time = d.settings().config.max_time(spec.pool.as_deref());
    spec.resolve_unlimited(max_time);
    if let Err(e) = spec.check(now_ms(), max_time) {
        return ErrorReply::new(ErrorKind::InvalidSpec, e.to_string()).into();
    }
    let pools = d.settings().config.pools;
    let sizes = pools.iter().map(|p| (p.name.as_str(), p.node_size()));
    if let Err(m) = size_from_resources(&mut spec, sizes) {
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
    if let Some(m) = slurm_refusal(d, caller, &spec, &pools, now_ms()) {
        return ErrorReply::new(ErrorKind::InvalidSpec, m).into();
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
    if let Some(m) = co_allocation_refusal(d, caller, &spec).await {
        return ErrorReply::new(ErrorKind::InvalidSpec, m).into();
    }
    let now = now_ms();
    let recs = {
        let mut core = d.core();
        if let Err(e) = core.check_against(&spec) {
            return e.into();
        }
        core.clip_to_pools(&mut spec);
        core.submitted_records(caller.owner(), spec, now)
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
    d.stats.submitted(recs.len() as u64);
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
        if let Err(e) = core.check_against(&spec) {
            return e.into();
        }
        core.clip_to_pools(&mut spec);
        let mut snap = core.snapshot(now, config.grace_period_ms);
        let id = core.next_id();
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
        let pools: Vec<String> = core
            .pools()
            .iter()
            .map(|p| p.pool.name.to_string())
            .collect();
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

/// Why a job cannot go to the Slurm pool it is for (the pool it names, or the only pool): its
/// allocation belongs to batchd's user, so a root batchd runs no other user's job there; and
/// with `on_no_fit = "refuse"`, a job whose time limit passes the allocation's end.
fn slurm_refusal(
    d: &Daemon,
    caller: &Caller,
    spec: &batch_proto::JobSpec,
    pools: &[crate::config::PoolConfig],
    now: u64,
) -> Option<String> {
    let pool = match &spec.pool {
        Some(name) => pools.iter().find(|p| &p.name == name)?,
        None if pools.len() == 1 => &pools[0],
        None => return None,
    };
    let cfg = pool.slurm.as_ref()?;
    if caller.uid != d.euid {
        return Some(format!(
            "pool {} is a Slurm allocation of uid {}, who alone can run jobs in it",
            pool.name, d.euid
        ));
    }
    if cfg.on_no_fit != crate::config::NoFit::Refuse {
        return None;
    }
    let (alloc, _) = d.allocation(&pool.name)?;
    let end = alloc.end_ms?;
    let limit = spec.shape.time_limit();
    (now.saturating_add(limit) > end).then(|| {
        format!(
            "pool {}'s Slurm allocation {} ends in {} s, before the job's time limit of {} s",
            pool.name,
            alloc.id,
            end.saturating_sub(now) / 1000,
            limit / 1000
        )
    })
}

/// Why the policy in force would refuse a co-allocated job even on idle pools: a rigid policy
/// packs the components into one pool, and a job that fits none is refused at its first plan.
/// Refused here instead, with the policy's reason, as sbatch refuses a job no partition can
/// hold ("Requested node configuration is not available"): acknowledged, it would only end
/// CANCELLED a moment later. Co-allocated jobs alone pay for this plan; other shapes the pool
/// check above already answers.
///
/// A fresh instance plans the job alone on the pools (as `--test-only`'s, off the runtime,
/// within the time budget, in one of its slots so that no user piles up threads): a policy's
/// refusal of a job there is not about the queue. A plan that fails or takes too long, no free
/// slot, or a spec the pools' own check refuses (answered on the way on) refuses nothing here.
async fn co_allocation_refusal(d: &Arc<Daemon>, caller: &Caller, spec: &JobSpec) -> Option<String> {
    if !matches!(spec.shape, batch_proto::JobShape::CoAllocated { .. }) {
        return None;
    }
    let slot = Arc::clone(&d.test_only_slots).try_acquire_owned().ok()?;
    let config = d.settings().config;
    let budget = Duration::from_millis(config.policy.time_budget_ms);
    let now = now_ms();
    let snap = {
        let core = d.core();
        if core.check_against(spec).is_err() {
            return None;
        }
        let mut spec = spec.clone();
        core.clip_to_pools(&mut spec);
        let mut snap = core.snapshot(now, config.grace_period_ms);
        let rec = JobRecord::submitted(
            core.next_id(),
            caller.uid,
            caller.gid,
            &caller.user,
            spec,
            now,
        );
        snap.running.clear();
        snap.pending = vec![core.pending_of(&rec, now)];
        snap
    };
    let planning = tokio::task::spawn_blocking(move || {
        let _slot = slot;
        let mut host = crate::policy::build(&config).ok()?;
        let plan = host.plan(&snap.view());
        if host.last_failure().is_some() {
            return None;
        }
        plan.rejects
            .iter()
            .find(|r| r.kind != sched_core::RejectKind::DeadlineMissed)
            .map(|r| format!("refused by policy {}: {}", config.policy.name, r.reason))
    });
    match tokio::time::timeout(budget, planning).await {
        Ok(Ok(refusal)) => refusal,
        _ => None,
    }
}
