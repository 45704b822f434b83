//! `List`: the queue, running jobs first, then pending jobs in queue order.

use std::sync::Arc;

use batch_proto::{JobFilter, JobInfo, JobState, ListRequest};

use super::{internal, Reply};
use crate::daemon::Daemon;
use crate::launch::now_ms;
use crate::record::JobRecord;

/// `filter` checked on the stored record, before any `JobInfo` is built: most listings
/// (`-t R`, `-u alice`, `-j 7`) keep a small part of a large queue. Same rules as
/// [`JobFilter::matches`].
pub fn record_matches(filter: &JobFilter, r: &JobRecord) -> bool {
    (filter.ids.is_empty() || filter.ids.contains(&r.id))
        && (filter.users.is_empty()
            || filter
                .users
                .iter()
                .any(|u| *u == r.user || u.parse::<u32>() == Ok(r.uid)))
        && (filter.names.is_empty() || filter.names.contains(&r.spec.name))
        && (filter.states.is_empty() || filter.states.contains(&r.state))
        && (filter.pools.is_empty()
            || r.pool
                .as_ref()
                .or(r.spec.pool.as_ref())
                .is_some_and(|p| filter.pools.contains(p)))
}

/// Active jobs matching `filter`, with reasons and expected starts.
pub fn active_infos(d: &Daemon, filter: &JobFilter) -> Vec<JobInfo> {
    let core = d.core();
    let mut out = Vec::with_capacity(if filter.is_empty() {
        core.jobs.len()
    } else {
        0
    });
    for a in core.jobs.values() {
        if a.rec.state != JobState::Pending && record_matches(filter, &a.rec) {
            out.push(core.info_of(&a.rec, None));
        }
    }
    // Pending reasons need the whole queue in order; skip it when no pending job can match.
    if filter.states.is_empty() || filter.states.contains(&JobState::Pending) {
        for (rec, reason) in core.pending_with_reasons(now_ms()) {
            if record_matches(filter, rec) {
                out.push(core.info_of(rec, Some(reason)));
            }
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
                    .filter(|r| record_matches(&req.filter, r))
                    .map(|r| r.info(None, None)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use batch_proto::JobSpec;

    /// The record-level filter and the wire-level one agree.
    #[test]
    fn record_filter_agrees_with_info_filter() {
        let mut r = JobRecord {
            id: 7,
            uid: 1000,
            gid: 1000,
            user: "alice".into(),
            spec: JobSpec::new("#!/bin/sh\n", "/tmp", 1, 10),
            submit: 0,
            state: JobState::Running,
            held: false,
            start: Some(1),
            end: None,
            exit_code: None,
            signal: None,
            pool: Some("debug".into()),
            node_list: None,
            nodes: 1,
            shape: None,
            detail: None,
            stdout: String::new(),
            stderr: String::new(),
        };
        r.spec.name = "sim".into();
        let filters = [
            JobFilter::default(),
            JobFilter {
                ids: vec![7],
                ..Default::default()
            },
            JobFilter {
                ids: vec![8],
                ..Default::default()
            },
            JobFilter {
                users: vec!["alice".into()],
                ..Default::default()
            },
            JobFilter {
                users: vec!["1000".into()],
                ..Default::default()
            },
            JobFilter {
                users: vec!["bob".into()],
                ..Default::default()
            },
            JobFilter {
                names: vec!["sim".into()],
                ..Default::default()
            },
            JobFilter {
                states: vec![JobState::Pending],
                ..Default::default()
            },
            JobFilter {
                states: vec![JobState::Running],
                ..Default::default()
            },
            JobFilter {
                pools: vec!["debug".into()],
                ..Default::default()
            },
            JobFilter {
                pools: vec!["gpu".into()],
                ..Default::default()
            },
        ];
        for f in &filters {
            assert_eq!(
                record_matches(f, &r),
                f.matches(&r.info(None, None)),
                "{f:?}"
            );
        }
        r.pool = None;
        r.spec.pool = Some("gpu".into());
        for f in &filters {
            assert_eq!(
                record_matches(f, &r),
                f.matches(&r.info(None, None)),
                "{f:?}"
            );
        }
    }
}
