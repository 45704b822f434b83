//! `Cancel`: pending jobs end CANCELLED at once; running jobs are stopped by their supervisor
//! (SIGTERM to the group, SIGKILL after the grace period) and end CANCELLED when they are
//! gone; with `signal`, running jobs' groups get just that signal.

use std::sync::Arc;
use std::time::Duration;

use batch_proto::{
    ActionReport, CancelRequest, ErrorKind, ErrorReply, JobFailure, JobState, Response,
};

use super::{internal, Caller, Reply};
use crate::daemon::Daemon;

pub async fn handle(d: &Arc<Daemon>, caller: &Caller, req: CancelRequest) -> Reply {
    let mut filter = req.filter;
    if filter.is_empty() {
        return ErrorReply::new(
            ErrorKind::BadRequest,
            "no job selected: give job ids, a user, a name, a state or a pool",
        )
        .into();
    }
    // Without ids or users, a user's `-n NAME` or `-t STATE` means their own jobs (root's: all).
    if filter.ids.is_empty() && filter.users.is_empty() && caller.uid != 0 {
        filter.users.push(caller.uid.to_string());
    }
    let mut report = ActionReport::default();
    let mut pending = Vec::new();
    let mut running = Vec::new();
    {
        let mut core = d.core();
        for &id in &filter.ids {
            if !core.jobs.contains_key(&id) {
                report.failed.push(match core.state_of(id) {
                    Some(_) => JobFailure {
                        id,
                        kind: ErrorKind::InvalidState,
                        message: format!("Job/step already completing or completed: {id}"),
                    },
                    None => JobFailure {
                        id,
                        kind: ErrorKind::InvalidJobId,
                        message: format!("Invalid job id specified: {id}"),
                    },
                });
            }
        }
        // An array task (`ID_N`) that is not in the queue, as an unknown id above.
        for &(array, index) in &filter.tasks {
            let queued = core.jobs.values().any(|a| {
                a.rec
                    .spec
                    .array_task
                    .as_deref()
                    .is_some_and(|t| t.array_id == array && t.index == index)
            });
            if !queued {
                report.failed.push(JobFailure {
                    id: array,
                    kind: ErrorKind::InvalidJobId,
                    message: format!("Invalid job id specified: {array}_{index}"),
                });
            }
        }
        let selected: Vec<u64> = core
            .jobs
            .values()
            .filter(|a| filter.selects(a.rec.filter_key()))
            .map(|a| a.rec.id)
            .collect();
        for id in selected {
            // A cancel overrides a requeue on its way: the job ends CANCELLED.
            if req.signal.is_none()
                && core
                    .jobs
                    .get(&id)
                    .is_some_and(|a| caller.may_touch(a.rec.uid))
            {
                core.drop_requeue(id);
            }
            let Some(a) = core.jobs.get_mut(&id) else {
                continue;
            };
            if !caller.may_touch(a.rec.uid) {
                report.failed.push(JobFailure {
                    id,
                    kind: ErrorKind::PermissionDenied,
                    message: format!("Access/permission denied for job {id}"),
                });
                continue;
            }
            match (a.rec.state, req.signal) {
                (JobState::Pending, None) => pending.push(id),
                (JobState::Pending, Some(_)) => report.failed.push(JobFailure {
                    id,
                    kind: ErrorKind::InvalidState,
                    message: format!("job {id} is pending; only running jobs can be signalled"),
                }),
                (_, Some(sig)) => running.push((id, Some(sig))),
                (_, None) => {
                    let already = a.run.as_ref().is_some_and(|r| r.cancelling);
                    if let Some(run) = a.run.as_mut() {
                        run.cancelling = true;
                    }
                    a.rec.state = JobState::Completing;
                    d.store.write(a.rec.clone());
                    if already {
                        report.done.push(id);
                    } else {
                        running.push((id, None));
                    }
                }
            }
        }
    }
    for id in pending {
        match d.end_pending(id, JobState::Cancelled, None).await {
            Ok(_) => {
                crate::coorm::tell_ended(d, id, JobState::Cancelled, "cancelled before its start");
                report.done.push(id)
            }
            Err(e) => return internal(e),
        }
    }
    signal_and_answer(d, running, report).await
}

/// Signals each running job (its end does the rest), then answers with what was done: the
/// last steps of `ecancel` and of `econtrol requeue`.
pub(super) async fn signal_and_answer(
    d: &Arc<Daemon>,
    running: impl IntoIterator<Item = (u64, Option<i32>)>,
    mut report: ActionReport,
) -> Reply {
    for (id, sig) in running {
        match send(d, id, sig).await {
            Ok(()) => report.done.push(id),
            Err(message) => report.failed.push(JobFailure {
                id,
                kind: ErrorKind::Internal,
                message,
            }),
        }
    }
    report.done.sort_unstable();
    if !report.done.is_empty() {
        d.reschedule();
    }
    Response::Acted(report).into()
}

/// Signals a running job; a job started a moment ago may not have its pid files yet, so a
/// few short retries cover the supervisor's start.
pub(super) async fn send(d: &Arc<Daemon>, id: u64, sig: Option<i32>) -> Result<(), String> {
    let mut last = String::new();
    for _ in 0..50 {
        let session = d
            .core()
            .jobs
            .get(&id)
            .is_some_and(|a| crate::core::coorm::is_session(&a.rec));
        if session && sig.is_none() {
            // A session's job has no process of batchd's: it ends here, and its launcher is
            // told to stop its application.
            crate::coorm::end_job(d, id, JobState::Cancelled, "cancelled").await;
            return Ok(());
        }
        let r = match sig {
            Some(s) => crate::executor::signal(d, id, s),
            None => crate::executor::cancel(d, id),
        };
        match r {
            Ok(()) => return Ok(()),
            Err(e) => last = e,
        }
        if !d.core().jobs.contains_key(&id) {
            // It ended meanwhile.
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    Err(last)
}
