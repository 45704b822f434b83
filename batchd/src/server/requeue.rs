//! `Requeue` (`econtrol requeue`, `requeuehold`; Slurm's `scontrol requeue`): a running batch
//! job is stopped as a cancel stops it and, once its processes are gone, is pending again
//! with its id (`Core::start_requeue`, the end in `Daemon::job_ended`); a finished one is
//! pending again at once. Pending jobs, launcher sessions and jobs submitted with
//! `--no-requeue` are refused, with Slurm's words.

use std::sync::Arc;

use batch_proto::{ActionReport, ErrorKind, JobFailure, JobState, RequeueRequest};

use super::{internal, Caller, Reply};
use crate::daemon::Daemon;
use crate::record::JobRecord;

/// Why `rec` cannot be requeued by `caller`, if it cannot.
fn refusal(caller: &Caller, rec: &JobRecord) -> Option<JobFailure> {
    let id = rec.id;
    let fail = |kind, message: String| Some(JobFailure::new(id, kind, message));
    if !caller.may_touch(rec.uid) {
        return fail(
            ErrorKind::PermissionDenied,
            format!("Access/permission denied for job {id}"),
        );
    }
    if crate::core::coorm::is_session(rec) {
        return fail(
            ErrorKind::InvalidState,
            format!("job {id} is a launcher session, not a batch job"),
        );
    }
    if rec.spec.no_requeue {
        // Slurm's ESLURM_DISABLED, for a job submitted with --no-requeue.
        return fail(
            ErrorKind::InvalidState,
            format!("Requested operation is presently disabled for job {id} (--no-requeue)"),
        );
    }
    if rec.state == JobState::Pending {
        return fail(
            ErrorKind::InvalidState,
            format!("Job is pending execution: {id}"),
        );
    }
    None
}

pub async fn handle(d: &Arc<Daemon>, caller: &Caller, req: RequeueRequest) -> Reply {
    let mut report = ActionReport::default();
    let mut stop = Vec::new();
    let mut finished = Vec::new();
    let mut stored = Vec::new();
    let fail = |id, kind, message: String| JobFailure::new(id, kind, message);
    for chunk in super::hold::unique(req.ids).chunks(super::cancel::LOCK_CHUNK) {
        let mut core = d.core();
        for &id in chunk {
            let Some(a) = core.job(id) else {
                if core.state_of(id).is_some() {
                    finished.push(id);
                } else {
                    report.failed.push(fail(
                        id,
                        ErrorKind::InvalidJobId,
                        format!("Invalid job id specified: {id}"),
                    ));
                }
                continue;
            };
            if let Some(f) = refusal(caller, &a.rec) {
                report.failed.push(f);
                continue;
            }
            if a.run.as_ref().is_some_and(|r| r.cancelling) && !core.is_requeuing(id) {
                report.failed.push(fail(
                    id,
                    ErrorKind::InvalidState,
                    format!("Job/step already completing or completed: {id}"),
                ));
                continue;
            }
            match core.start_requeue(id, req.hold) {
                Some((rec, send)) => {
                    stored.push(rec);
                    if send {
                        stop.push(id);
                    } else {
                        report.done.push(id);
                    }
                }
                None => report.failed.push(fail(
                    id,
                    ErrorKind::InvalidState,
                    format!("job {id} holds no nodes yet"),
                )),
            }
        }
    }
    // The requeue is durable before it is acknowledged or the job stopped: a batchd that dies
    // meanwhile still requeues the job when it finds it again.
    if let Err(e) = d.store.commit_all(stored).await {
        return internal(e);
    }
    // The finished jobs read in one visit to the database, not one each.
    let recs = match d
        .store
        .read(move |c| {
            finished
                .into_iter()
                .map(|id| Ok((id, crate::store::job_by_id(c, id)?)))
                .collect::<Result<Vec<_>, _>>()
        })
        .await
    {
        Ok(recs) => recs,
        Err(e) => return internal(e),
    };
    let mut requeued = Vec::new();
    for chunk in recs.chunks(super::cancel::LOCK_CHUNK) {
        let mut core = d.core();
        for (id, rec) in chunk {
            let id = *id;
            let Some(rec) = rec else {
                report.failed.push(fail(
                    id,
                    ErrorKind::InvalidJobId,
                    format!("Invalid job id specified: {id}"),
                ));
                continue;
            };
            if let Some(f) = refusal(caller, rec) {
                report.failed.push(f);
                continue;
            }
            // Requeued meanwhile by another request: not twice.
            if core.job(id).is_some() {
                report.failed.push(fail(
                    id,
                    ErrorKind::InvalidState,
                    format!("Job is pending execution: {id}"),
                ));
                continue;
            }
            requeued.push(core.requeue_finished(rec.clone(), req.hold, "econtrol requeue".into()));
        }
    }
    let ids: Vec<u64> = requeued.iter().map(|r| r.id).collect();
    if let Err(e) = d.store.commit_all(requeued).await {
        return internal(e);
    }
    report.done.extend(ids);
    super::cancel::signal_and_answer(d, stop.into_iter().map(|id| (id, None)), report).await
}
