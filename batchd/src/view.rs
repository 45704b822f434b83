//! A job as the daemon shows it: the one place that decides what each [`JobInfo`] field says
//! for a record (pending or running, with the latest plan's expected start and scheduled EP,
//! an evolving job's step), borrowed so that a listing of 100,000 jobs serialises without
//! copying, and turned into an owned `JobInfo` for the requests that answer with one.
//!
//! Layer 3 of batchd: it reads `core` and `record`, nothing reads it but the I/O layer.

#[cfg(doc)]
use batch_proto::ListRequest;
use batch_proto::{Dependency, JobInfo, JobShape, JobState, PendingReason, StepStatus};
use sched_core::{MoldConfig, Shape, Step};
use serde::Serialize;

use crate::core::Core;
use crate::record::JobRecord;

/// One job as the daemon shows it: the fields of [`JobInfo`], under the same names and with
/// the same rules for leaving them out of the JSON, borrowed from the record. A listing of
/// 100,000 jobs is serialised from these straight into frames: building owned `JobInfo`s
/// first cost more than the JSON itself (two string clones per job and 45 MB of fresh pages).
/// [`active_info`] and [`record_info`] are [`JobView::into_info`], so the rules live
/// here only; `views_decode_as_info` (server/list.rs) checks that a view's JSON decodes as its
/// own `into_info`, less what a brief listing leaves out.
#[derive(Serialize)]
pub struct JobView<'a> {
    id: u64,
    name: &'a str,
    uid: u32,
    user: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pool: Option<&'a str>,
    state: JobState,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<PendingReason>,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
    nodes: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    node_list: Option<&'a str>,
    submit_time: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    start_time: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_time: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expected_start: Option<u64>,
    time_limit: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signal: Option<i32>,
    #[serde(skip_serializing_if = "str::is_empty")]
    work_dir: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    stdout: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    stderr: &'a str,
    shape: &'a JobShape,
    #[serde(skip_serializing_if = "Option::is_none")]
    begin: Option<u64>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    dependencies: &'a [Dependency],
    priority: i64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    held: bool,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    args: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    scheduled_ep: Option<&'a [Step]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    step: Option<StepStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    chosen: Option<MoldConfig>,
}

/// The wire view of active job `rec`: its record, the latest plan's expected start and
/// scheduled EP while it waits, its step while it runs evolving.
pub fn active_info(core: &Core, rec: &JobRecord, reason: Option<PendingReason>) -> JobInfo {
    JobView::new(Some(core), rec, reason, false).into_info()
}

/// The wire view of record `rec` alone (a finished job): no pending reason, expected start or
/// step, which only `core` knows.
pub fn record_info(rec: &JobRecord) -> JobInfo {
    JobView::new(None, rec, None, false).into_info()
}

impl<'a> JobView<'a> {
    /// `rec` as [`active_info`] shows it when `core` is given (an active job), else as
    /// [`record_info`] without reason or expected start (a finished one). `brief` leaves
    /// out the work directory, output paths, arguments, dependencies, detail and scheduled EP:
    /// no `equeue` column but `%Z` and `%E` shows them ([`ListRequest::brief`]).
    pub fn new(
        core: Option<&'a Core>,
        rec: &'a JobRecord,
        reason: Option<PendingReason>,
        brief: bool,
    ) -> Self {
        let pending = rec.state == JobState::Pending;
        let full = !brief;
        let scheduled_ep = match (core, pending) {
            _ if brief => None,
            (Some(c), true) => c.expected_ep.get(&rec.id).map(Vec::as_slice),
            _ => match &rec.shape {
                Some(sched_core::Shape::Evolving { steps, .. }) => Some(steps.as_slice()),
                _ => None,
            },
        };
        // A moldable job's configuration: stored with its started shape, or the latest plan's
        // expectation while pending. `nodes` and `time_limit` follow it.
        let chosen = match (&rec.spec.shape, pending, &rec.shape) {
            (JobShape::Moldable { .. }, true, _) => {
                core.and_then(|c| c.expected_mold.get(&rec.id).copied())
            }
            (
                JobShape::Moldable { .. },
                false,
                Some(Shape::Moldable {
                    nodes, walltime, ..
                })
                | Some(Shape::Rigid {
                    nodes, walltime, ..
                }),
            ) => Some(MoldConfig {
                nodes: *nodes,
                walltime: *walltime,
            }),
            _ => None,
        };
        JobView {
            id: rec.id,
            name: &rec.spec.name,
            uid: rec.uid,
            user: &rec.user,
            pool: rec.pool.as_deref().or(rec.spec.pool.as_deref()),
            state: rec.state,
            reason: if pending { reason } else { None },
            detail: rec.detail.as_deref().filter(|_| full),
            nodes: match chosen {
                Some(c) => c.nodes,
                None if pending || rec.nodes == 0 => rec.spec.shape.max_nodes(),
                None => rec.nodes,
            },
            node_list: rec.node_list.as_deref(),
            submit_time: rec.submit,
            start_time: rec.start,
            end_time: rec.end,
            expected_start: match core {
                Some(c) if pending => c.expected.get(&rec.id).copied(),
                _ => None,
            },
            time_limit: chosen.map_or_else(|| rec.time_limit(), |c| c.walltime),
            exit_code: rec.exit_code,
            signal: rec.signal,
            work_dir: if full { &rec.spec.work_dir } else { "" },
            stdout: if full { &rec.stdout } else { "" },
            stderr: if full { &rec.stderr } else { "" },
            shape: &rec.spec.shape,
            begin: rec.spec.begin,
            dependencies: if full { &rec.spec.dependencies } else { &[] },
            priority: rec.spec.priority,
            held: rec.held,
            args: if full { &rec.spec.args } else { &[] },
            scheduled_ep,
            // A pending job has no step; `step_status` would only look it up again.
            step: match core {
                Some(c) if !pending => c.step_status(rec.id),
                _ => None,
            },
            chosen,
        }
    }

    /// The owned [`JobInfo`] this view serialises as.
    pub fn into_info(self) -> JobInfo {
        JobInfo {
            id: self.id,
            name: self.name.to_string(),
            uid: self.uid,
            user: self.user.to_string(),
            pool: self.pool.map(str::to_string),
            state: self.state,
            reason: self.reason,
            detail: self.detail.map(str::to_string),
            nodes: self.nodes,
            node_list: self.node_list.map(str::to_string),
            submit_time: self.submit_time,
            start_time: self.start_time,
            end_time: self.end_time,
            expected_start: self.expected_start,
            time_limit: self.time_limit,
            exit_code: self.exit_code,
            signal: self.signal,
            work_dir: self.work_dir.to_string(),
            stdout: self.stdout.to_string(),
            stderr: self.stderr.to_string(),
            shape: self.shape.clone(),
            begin: self.begin,
            dependencies: self.dependencies.to_vec(),
            priority: self.priority,
            held: self.held,
            args: self.args.to_vec(),
            scheduled_ep: self.scheduled_ep.map(<[Step]>::to_vec),
            step: self.step,
            chosen: self.chosen,
        }
    }
}
