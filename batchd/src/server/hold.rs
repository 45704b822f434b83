//! `Hold` and `Unhold` (`econtrol hold` and `econtrol release`): pending jobs only, by their
//! owner or root.

use std::sync::Arc;

use batch_proto::{ActionReport, ErrorKind, JobFailure, JobState, Response};

use super::{internal, Caller, Reply};
use crate::daemon::Daemon;

/// The ids of a request, ascending, each once: a repeated id is answered once. Bounded by
/// `batch_proto::MAX_FILTER_IDS` (checked at decode), so that the answer fits in a frame.
pub(super) fn unique(mut ids: Vec<u64>) -> Vec<u64> {
    ids.sort_unstable();
    ids.dedup();
    ids
}

async fn set_held(d: &Arc<Daemon>, caller: &Caller, ids: Vec<u64>, held: bool) -> Reply {
    let mut report = ActionReport::default();
    let mut changed = Vec::new();
    for chunk in unique(ids).chunks(super::cancel::LOCK_CHUNK) {
        let mut core = d.core();
        for &id in chunk {
            let fail = |kind, message: String| JobFailure::new(id, kind, message);
            let known = core.state_of(id).is_some();
            let Some(a) = core.job(id) else {
                report.failed.push(if known {
                    fail(
                        ErrorKind::InvalidState,
                        format!("job {id} has already finished"),
                    )
                } else {
                    fail(
                        ErrorKind::InvalidJobId,
                        format!("Invalid job id specified: {id}"),
                    )
                });
                continue;
            };
            if !caller.may_touch(a.rec.uid) {
                report.failed.push(fail(
                    ErrorKind::PermissionDenied,
                    format!("Access/permission denied for job {id}"),
                ));
                continue;
            }
            if a.rec.state != JobState::Pending {
                report.failed.push(fail(
                    ErrorKind::InvalidState,
                    format!("job {id} is not pending"),
                ));
                continue;
            }
            if a.rec.held == held {
                report.failed.push(fail(
                    ErrorKind::InvalidState,
                    format!(
                        "job {id} is {}",
                        if held { "already held" } else { "not held" }
                    ),
                ));
                continue;
            }
            if let Some(rec) = core.set_held(id, held) {
                changed.push(rec);
            }
        }
    }
    let ids: Vec<u64> = changed.iter().map(|r| r.id).collect();
    if let Err(e) = d.store.commit_all(changed).await {
        return internal(e);
    }
    report.done = ids;
    if !report.done.is_empty() {
        d.reschedule();
    }
    Response::Acted(report).into()
}

pub async fn hold(d: &Arc<Daemon>, caller: &Caller, ids: Vec<u64>) -> Reply {
    set_held(d, caller, ids, true).await
}

pub async fn unhold(d: &Arc<Daemon>, caller: &Caller, ids: Vec<u64>) -> Reply {
    set_held(d, caller, ids, false).await
}
