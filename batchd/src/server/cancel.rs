//! `Cancel`: pending jobs end CANCELLED at once; running jobs are stopped by their supervisor
//! (SIGTERM to the group, SIGKILL after the grace period) and end CANCELLED when they are
//! gone; with `signal`, running jobs get just that signal: their steps, their batch shell, or
//! both and everything the script started, as the request's scope says (scancel's default,
//! `-b`, `-f`).

use std::sync::Arc;

use batch_proto::{
    ActionReport, CancelRequest, ErrorKind, ErrorReply, JobFailure, JobState, Response,
    SignalScope, MAX_FRAME,
};

use super::{internal, Caller, Reply};
use crate::core::Core;
use crate::daemon::Daemon;
use crate::launch::now_ms;

/// Jobs changed per hold of the core lock when many are: the scheduler and other clients get
/// the lock between two chunks.
pub(super) const LOCK_CHUNK: usize = 1024;

/// What a cancel does to one selected job, decided before anything is done.
enum Outcome {
    Failed(JobFailure),
    /// Pending: ends CANCELLED.
    End,
    /// Running: signalled, or stopped (`None`).
    Signal(Option<i32>),
}

fn outcome(core: &Core, caller: &Caller, id: u64, signal: Option<i32>) -> Option<Outcome> {
    let a = core.job(id)?;
    let fail = |kind, message: String| Outcome::Failed(JobFailure::new(id, kind, message));
    Some(if !caller.may_touch(a.rec.uid) {
        fail(
            ErrorKind::PermissionDenied,
            format!("Access/permission denied for job {id}"),
        )
    } else {
        match (a.rec.state, signal) {
            (JobState::Pending, None) => Outcome::End,
            (JobState::Pending, Some(_)) => fail(
                ErrorKind::InvalidState,
                format!("job {id} is pending; only running jobs can be signalled"),
            ),
            (_, sig) => Outcome::Signal(sig),
        }
    })
}

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
    // Sorted once, each id and task once: a repeated id is answered once.
    let settings = d.settings();
    let filter = filter
        .prepare()
        .known_pools(|p| settings.config.pools.iter().any(|c| c.name == p));
    let mut report = ActionReport::default();
    let mut pending = Vec::new();
    let mut running = Vec::new();
    {
        let mut core = d.core();
        for &id in filter.ids() {
            if core.job(id).is_none() {
                report.failed.push(match core.state_of(id) {
                    Some(_) => JobFailure::new(
                        id,
                        ErrorKind::InvalidState,
                        format!("Job/step already completing or completed: {id}"),
                    ),
                    None => JobFailure::new(
                        id,
                        ErrorKind::InvalidJobId,
                        format!("Invalid job id specified: {id}"),
                    ),
                });
            }
        }
        // An array task (`ID_N`) that is not in the queue, as an unknown id above: one pass
        // over the queue marks the tasks it holds.
        let tasks = filter.tasks();
        if !tasks.is_empty() {
            let mut queued = vec![false; tasks.len()];
            for a in core.jobs().values() {
                if let Some(t) = a.rec.spec.array_task.as_deref() {
                    if let Ok(i) = tasks.binary_search(&(t.array_id, t.index)) {
                        queued[i] = true;
                    }
                }
            }
            for (&(array, index), _) in tasks.iter().zip(&queued).filter(|(_, q)| !**q) {
                report.failed.push(JobFailure::new(
                    array,
                    ErrorKind::InvalidJobId,
                    format!("Invalid job id specified: {array}_{index}"),
                ));
            }
        }
        let selected: Vec<(u64, Outcome)> = core
            .jobs()
            .values()
            .filter(|a| filter.selects(a.rec.filter_key()))
            .filter_map(|a| Some((a.rec.id, outcome(&core, caller, a.rec.id, req.signal)?)))
            .collect();
        // The answer is bounded before anything is done: a running job counts as a possible
        // failure (its signal may fail), every other one as what it will be.
        let failures = report.failed.len()
            + selected
                .iter()
                .filter(|(_, o)| !matches!(o, Outcome::End))
                .count();
        let done = selected
            .iter()
            .filter(|(_, o)| matches!(o, Outcome::End))
            .map(|(id, _)| *id);
        if ActionReport::frame_bound(done, failures) > MAX_FRAME {
            return ErrorReply::new(
                ErrorKind::BadRequest,
                format!(
                    "the cancel selects {} jobs, more than one answer can report; narrow it \
                     (by job id, user, name, state or pool) and cancel in several steps",
                    selected.len()
                ),
            )
            .into();
        }
        for (id, o) in selected {
            match o {
                Outcome::Failed(f) => report.failed.push(f),
                Outcome::End => pending.push(id),
                Outcome::Signal(Some(sig)) => running.push((id, Some((sig, req.scope)))),
                Outcome::Signal(None) => {
                    if let Some(id) = stop(d, &mut core, id) {
                        running.push((id, None));
                    } else {
                        report.done.push(id);
                    }
                }
            }
        }
    }
    match end_pending(d, pending).await {
        Ok((ended, started)) => {
            report.done.extend(ended);
            running.extend(started.into_iter().map(|id| (id, None)));
        }
        Err(e) => return internal(e),
    }
    signal_and_answer(d, running, report).await
}

/// Marks the running job `id` as being cancelled (a cancel overrides a requeue on its way: the
/// job ends CANCELLED); `Some(id)` when it must be told to stop, `None` when a cancel is
/// already on its way.
fn stop(d: &Daemon, core: &mut Core, id: u64) -> Option<u64> {
    let (rec, send) = core.start_cancel(id)?;
    d.store.write(rec);
    send.then_some(id)
}

/// Ends the pending jobs `ids` CANCELLED, [`LOCK_CHUNK`] of them per hold of the core lock,
/// and stores them in one group commit. Returns the jobs ended, and those that started
/// meanwhile (now being stopped, as a running job's cancel does).
async fn end_pending(
    d: &Arc<Daemon>,
    ids: Vec<u64>,
) -> Result<(Vec<u64>, Vec<u64>), crate::store::StoreError> {
    let now = now_ms();
    let (mut ended, mut started, mut meanwhile) = (Vec::new(), Vec::new(), Vec::new());
    for chunk in ids.chunks(LOCK_CHUNK) {
        let mut core = d.core();
        for &id in chunk {
            match core.job(id).map(|a| a.rec.state) {
                Some(JobState::Pending) => {
                    let rec = core.finish(id, |r| {
                        r.state = JobState::Cancelled;
                        r.end = Some(now);
                    });
                    ended.extend(rec);
                }
                Some(_) => match stop(d, &mut core, id) {
                    Some(id) => started.push(id),
                    None => meanwhile.push(id),
                },
                // Ended meanwhile, by itself or by another cancel.
                None => meanwhile.push(id),
            }
        }
    }
    let mut ids: Vec<u64> = ended.iter().map(|r| r.id).collect();
    for r in &ended {
        d.stats.ended(r.state);
    }
    d.store.commit_all(ended).await?;
    for &id in &ids {
        crate::coorm::tell_ended(d, id, JobState::Cancelled, "cancelled before its start");
    }
    ids.extend(meanwhile);
    Ok((ids, started))
}

/// Signals each running job (its end does the rest) and answers with what was done: the
/// last steps of `ecancel` and of `econtrol requeue`. A signal (`ecancel -s`) is sent before
/// the answer, which says whether it could be; a stop after it, so that a client inside the
/// job it stops gets its answer (a stop that fails is logged).
pub(super) async fn signal_and_answer(
    d: &Arc<Daemon>,
    running: impl IntoIterator<Item = (u64, Option<(i32, SignalScope)>)>,
    mut report: ActionReport,
) -> Reply {
    let mut stops = Vec::new();
    for (id, sig) in running {
        if sig.is_none() {
            stops.push(id);
            report.done.push(id);
            continue;
        }
        match send(d, id, sig).await {
            Ok(()) => report.done.push(id),
            Err(message) => {
                tracing::warn!(job = id, "cannot signal the job: {message}");
                report
                    .failed
                    .push(JobFailure::new(id, ErrorKind::Internal, message));
            }
        }
    }
    report.done.sort_unstable();
    if !report.done.is_empty() {
        d.reschedule();
    }
    if stops.is_empty() {
        return Response::Acted(report).into();
    }
    let d = Arc::clone(d);
    let after: super::After = Box::pin(async move {
        for id in stops {
            if let Err(message) = send(&d, id, None).await {
                tracing::warn!(job = id, "cannot stop the job: {message}");
            }
        }
        d.reschedule();
    });
    Reply::Then(Response::Acted(report), after)
}

/// Signals a running job (cancels it when `sig` is `None`), retrying while its supervisor
/// starts ([`Daemon::while_starting`]).
pub(super) async fn send(
    d: &Arc<Daemon>,
    id: u64,
    sig: Option<(i32, SignalScope)>,
) -> Result<(), String> {
    let session = d
        .core()
        .jobs()
        .get(&id)
        .is_some_and(|a| crate::core::coorm::is_session(&a.rec));
    if session && sig.is_none() {
        // A session's job has no process of batchd's: it ends here, and its launcher is
        // told to stop its application.
        crate::coorm::end_job(d, id, JobState::Cancelled, "cancelled").await;
        return Ok(());
    }
    d.while_starting(id, || match sig {
        Some((s, scope)) => crate::executor::signal(d, id, s, scope),
        None => crate::executor::cancel(d, id),
    })
    .await
}
