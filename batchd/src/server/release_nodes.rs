//! `ReleaseNodes` (`erelease`): a running evolving job names the nodes it frees when its
//! current step ends — Klein & Pérez's condition C4. The job's owner or root only.

use std::sync::Arc;

use batch_proto::check::MAX_RELEASE_NODES;
use batch_proto::{hostlist, ErrorKind, ErrorReply, ReleaseNodesRequest, Response};

use super::{Caller, Reply};
use crate::daemon::Daemon;
use crate::launch::now_ms;

pub async fn handle(d: &Arc<Daemon>, caller: &Caller, r: ReleaseNodesRequest) -> Reply {
    // The list's length is bounded at decode (`MAX_HOSTLIST`), its expansion here.
    let names = match hostlist::expand_at_most(&r.nodes, MAX_RELEASE_NODES) {
        Ok(n) if !n.is_empty() => n,
        Ok(_) => return ErrorReply::new(ErrorKind::BadRequest, "no node named").into(),
        Err(e) => {
            // The reason, not the list: it may be a megabyte long.
            let reason: String = e.reason.chars().take(200).collect();
            return ErrorReply::new(
                ErrorKind::BadRequest,
                format!("invalid host list: {reason}"),
            )
            .into();
        }
    };
    // Before the core's lock, which it takes: where the job's batch script runs, if on a host.
    let batch_host = d.remote(r.job).map(|(l, _)| l.host.clone());
    if let Some(h) = batch_host.filter(|h| names.contains(h)) {
        return ErrorReply::new(
            ErrorKind::InvalidState,
            format!("{h} runs the job's batch script: a job on a pool of hosts keeps it"),
        )
        .into();
    }
    let (reply, progress, dir) = {
        let mut core = d.core();
        let Some(a) = core.job(r.job) else {
            return match core.state_of(r.job) {
                Some(_) => ErrorReply::new(
                    ErrorKind::InvalidState,
                    format!("job {} has already finished", r.job),
                ),
                None => ErrorReply::invalid_job(r.job),
            }
            .into();
        };
        if !caller.may_touch(a.rec.uid) {
            return ErrorReply::new(
                ErrorKind::PermissionDenied,
                format!("Access/permission denied for job {}", r.job),
            )
            .into();
        }
        let dir = d.job_dir(r.job);
        match core.choose_release(r.job, &names, now_ms()) {
            Ok(reply) => (reply, core.progress(r.job), dir),
            Err(e) => return ErrorReply::new(ErrorKind::InvalidState, e).into(),
        }
    };
    // The choice is kept in the job's directory, so that a daemon restarted before the step
    // ends still frees the nodes the job named. (The step file shows it from the next change:
    // the job that chose knows its choice.)
    let _order = d.progress_writes.lock().await;
    // The progress as it is now: the job's follower may have moved it on meanwhile.
    let now = d.core().progress(r.job);
    if let Some(progress) = now.or(progress) {
        let path = dir.join(crate::launch::files::PROGRESS);
        let written =
            match tokio::task::spawn_blocking(move || crate::launch::write_json(&path, &progress))
                .await
            {
                Ok(w) => w.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
        if let Err(e) = written {
            tracing::warn!(
                job = r.job,
                "cannot keep the chosen release in the job's directory: {e}"
            );
        }
    }
    tracing::info!(job = r.job, nodes = %reply.nodes, at = reply.at, "release chosen");
    Response::NodesReleased(reply).into()
}
