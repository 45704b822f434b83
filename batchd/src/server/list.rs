//! `List`: the queue, running jobs first, then pending jobs in queue order.

use std::sync::Arc;

use batch_proto::{JobInfo, JobState, ListRequest};

use super::{internal, Reply};
use crate::daemon::Daemon;
use crate::launch::now_ms;

/// Active jobs matching `filter`, with reasons and expected starts.
pub fn active_infos(d: &Daemon, filter: &batch_proto::JobFilter) -> Vec<JobInfo> {
    let core = d.core();
    let mut out = Vec::with_capacity(if filter.is_empty() {
        core.jobs.len()
    } else {
        0
    });
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
    for (rec, reason) in core.pending_with_reasons(now_ms()) {
        // Cheap check first: `-j` names ids.
        if !filter.ids.is_empty() && !filter.ids.contains(&rec.id) {
            continue;
        }
        let info = rec.info(Some(reason), core.expected.get(&rec.id).copied());
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
    if req.brief {
        for j in &mut jobs {
            j.work_dir = String::new();
            j.stdout = String::new();
            j.stderr = String::new();
            j.args = Vec::new();
            j.dependencies = Vec::new();
            j.detail = None;
        }
    }
    Reply::Jobs(jobs)
}
