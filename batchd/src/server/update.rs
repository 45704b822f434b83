//! `Update`: change a pending job's name, size, time limit, begin time, priority, pool or
//! dependencies, or a running job's time limit (scontrol's rules: its owner may lower it, only
//! root or batchd's user may raise it).

use std::sync::Arc;

use batch_proto::{
    ActionReport, ErrorKind, ErrorReply, JobShape, JobState, Response, UpdateRequest,
};

use super::{internal, Caller, Reply};
use crate::daemon::Daemon;

pub async fn handle(d: &Arc<Daemon>, caller: &Caller, req: UpdateRequest) -> Reply {
    let id = req.id;
    // Read before the core is locked: one lock at a time.
    let config = d.settings().config;
    let running = d
        .core()
        .job(id)
        .is_some_and(|a| a.rec.state == JobState::Running);
    if running {
        return running_limit(d, caller, req).await;
    }
    let rec = {
        let mut core = d.core();
        let Some(a) = core.job(id) else {
            return ErrorReply::invalid_job(id).into();
        };
        if !caller.may_touch(a.rec.uid) {
            return ErrorReply::permission_denied(id).into();
        }
        if a.rec.state != JobState::Pending {
            return ErrorReply::new(ErrorKind::InvalidState, format!("job {id} is not pending"))
                .into();
        }
        let mut spec = a.rec.spec.clone();
        if let Some(n) = req.name {
            spec.name = n;
        }
        if req.time_limit.is_some() || req.nodes.is_some() {
            let JobShape::Rigid { nodes, time_limit } = &mut spec.shape else {
                return ErrorReply::new(
                    ErrorKind::InvalidSpec,
                    "only a rigid job's nodes and time limit can be changed",
                )
                .into();
            };
            *nodes = req.nodes.unwrap_or(*nodes);
            *time_limit = req.time_limit.unwrap_or(*time_limit);
        }
        if let Some(b) = req.begin {
            spec.begin = (b != 0).then_some(b);
        }
        if let Some(p) = req.pool {
            // A new pool sizes `-n/-c/--mem` anew with its nodes (check_against checks it).
            spec.pool = Some(p);
            let sizes = config
                .pools
                .iter()
                .map(|p| (p.name.as_str(), p.node_size()));
            if let Err(m) = crate::core::submit::size_from_resources(&mut spec, sizes) {
                return ErrorReply::new(ErrorKind::InvalidSpec, m).into();
            }
        }
        if let Some(deps) = req.dependencies {
            spec.dependencies = deps;
        }
        if let Some(p) = req.priority {
            if p > spec.priority && caller.uid != 0 {
                return ErrorReply::new(
                    ErrorKind::PermissionDenied,
                    "only root may raise a job's priority",
                )
                .into();
            }
            spec.priority = p;
        }
        let max_time = config.max_time(spec.pool.as_deref());
        spec.resolve_unlimited(max_time);
        if let Err(e) = spec.check(crate::launch::now_ms(), max_time) {
            return ErrorReply::new(ErrorKind::InvalidSpec, e.to_string()).into();
        }
        if let Err(e) = core.check_against(&spec) {
            return e.into();
        }
        let Some(rec) = core.replace_spec(id, spec) else {
            return ErrorReply::invalid_job(id).into();
        };
        rec
    };
    if let Err(e) = d.store.commit(rec).await {
        return internal(e);
    }
    d.reschedule();
    Response::Acted(ActionReport {
        done: vec![id],
        failed: vec![],
    })
    .into()
}

/// A running job's new time limit: recorded, then told to its supervisor, which stops the
/// job at the new end (and sends its `--signal` relative to it).
async fn running_limit(d: &Arc<Daemon>, caller: &Caller, req: UpdateRequest) -> Reply {
    let id = req.id;
    let only_limit = req.name.is_none()
        && req.nodes.is_none()
        && req.begin.is_none()
        && req.priority.is_none()
        && req.pool.is_none()
        && req.dependencies.is_none();
    let Some(limit) = req.time_limit.filter(|_| only_limit) else {
        return ErrorReply::new(
            ErrorKind::InvalidState,
            format!("job {id} is running: only its TimeLimit can be changed"),
        )
        .into();
    };
    let admin = caller.uid == 0 || caller.uid == d.euid;
    let (stored, rec) = {
        let mut core = d.core();
        let Some(a) = core.job(id) else {
            return ErrorReply::invalid_job(id).into();
        };
        if !caller.may_touch(a.rec.uid) {
            return ErrorReply::permission_denied(id).into();
        }
        let limit = if limit == batch_proto::TIME_UNLIMITED {
            batch_proto::MAX_TIME_LIMIT
        } else {
            limit
        };
        if limit > batch_proto::MAX_TIME_LIMIT {
            return ErrorReply::new(
                ErrorKind::InvalidSpec,
                "invalid time limit: longer than the longest allowed, 365-00:00:00",
            )
            .into();
        }
        if limit > a.rec.time_limit() && !admin {
            // scontrol: "Access/permission denied" for a user raising their own job's limit.
            return ErrorReply::new(
                ErrorKind::PermissionDenied,
                format!("Access/permission denied: only root may raise the time limit of running job {id}"),
            )
            .into();
        }
        let Some(rec) = core.set_running_limit(id, limit) else {
            return ErrorReply::new(
                ErrorKind::InvalidSpec,
                "only a rigid or moldable running job's time limit can be changed",
            )
            .into();
        };
        // Queued under the lock: the job's end, stored later, is not overwritten by it.
        (d.store.enqueue(rec.clone()), rec)
    };
    if let Err(e) = stored.await {
        return internal(e);
    }
    let deadline = rec.start.unwrap_or(0).saturating_add(rec.time_limit());
    if let Err(e) = crate::executor::set_deadline(d, id, deadline) {
        tracing::warn!(job = id, "cannot tell the supervisor the new limit: {e}");
        return internal(e);
    }
    d.reschedule();
    Response::Acted(ActionReport {
        done: vec![id],
        failed: vec![],
    })
    .into()
}
