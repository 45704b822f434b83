//! `List`: the queue, running jobs first, then pending jobs in queue order.

use std::sync::Arc;

use batch_proto::{JobInfo, JobState, ListRequest};

use super::{internal, Reply};
use crate::daemon::Daemon;
use crate::launch::now_ms;

/// Active jobs matching `filter`, with reasons and expected starts.
pub fn active_infos(d: &Daemon, filter: &batch_proto::JobFilter) -> Vec<JobInfo> {
    let core = d.core();
    let reasons = core.reasons(now_ms());
    let mut out = Vec::new();
    for a in core
        .jobs
        .values()
        .filter(|a| a.rec.state != JobState::Pending)
    {
        let info = a.rec.info(None, None);
        if filter.matches(&info) {
            out.push(info);
        }
    }
    for rec in core.pending_in_order() {
        let info = rec.info(
            reasons.get(&rec.id).copied(),
            core.expected.get(&rec.id).copied(),
        );
        if filter.matches(&info) {
            out.push(info);
        }
    }
    out
}

pub async fn handle(d: &Arc<Daemon>, req: ListRequest) -> Reply {
    let mut jobs = active_infos(d, &req.filter);
    if req.include_finished {
        match d
            .store
            .read(|c| crate::store::finished_between(c, None, None))
            .await
        {
            Ok(done) => jobs.extend(
                done.iter()
                    .map(|r| r.info(None, None))
                    .filter(|i| req.filter.matches(i)),
            ),
            Err(e) => return internal(e),
        }
    }
    Reply::Jobs(jobs)
}
