//! A job as the daemon shows it: the one place that decides what each [`JobInfo`] field says
//! for a record (pending or running, with the latest plan's expected start and scheduled EP,
//! an evolving job's step), borrowed so that a listing of 100,000 jobs serialises without
//! copying ([`JobInfoRef`]: the fields of [`JobInfo`], defined with it from one list; only a
//! scheduled EP is converted, from the scheduler's steps to the protocol's), and turned into
//! an owned `JobInfo` for the requests that answer with one.
//!
//! Layer 4 of batchd: it reads `core` and `record`, nothing reads it but the I/O layer.

use std::borrow::Cow;

#[cfg(doc)]
use batch_proto::ListRequest;
use batch_proto::{JobInfo, JobInfoRef, JobShape, JobState, PendingReason};
use sched_core::Shape;

use crate::convert::ToWire;
use crate::core::Core;
use crate::record::JobRecord;

/// One job as the daemon shows it, borrowed from its record: batch-proto's [`JobInfoRef`],
/// whose fields are [`JobInfo`]'s by construction (one field list), so it serialises as one.
pub type JobView<'a> = JobInfoRef<'a>;

/// The wire view of active job `rec`: its record, the latest plan's expected start and
/// scheduled EP while it waits, its step while it runs evolving.
pub fn active_info(core: &Core, rec: &JobRecord, reason: Option<PendingReason>) -> JobInfo {
    job_view(Some(core), rec, reason, false).to_info()
}

/// The wire view of record `rec` alone (a finished job): no pending reason, expected start or
/// step, which only `core` knows.
pub fn record_info(rec: &JobRecord) -> JobInfo {
    job_view(None, rec, None, false).to_info()
}

/// `rec` as [`active_info`] shows it when `core` is given (an active job), else as
/// [`record_info`] without reason or expected start (a finished one). `brief` leaves
/// out the work directory, output paths, arguments, dependencies, detail and scheduled EP:
/// no `equeue` column but `%Z` and `%E` shows them ([`ListRequest::brief`]).
pub fn job_view<'a>(
    core: Option<&'a Core>,
    rec: &'a JobRecord,
    reason: Option<PendingReason>,
    brief: bool,
) -> JobView<'a> {
    let pending = rec.state == JobState::Pending;
    let full = !brief;
    let scheduled_ep = match (core, pending) {
        _ if brief => None,
        (Some(c), true) => c.expected_ep(rec.id).map(|s| s.to_wire()),
        _ => match &rec.shape {
            Some(sched_core::Shape::Evolving { steps, .. }) => Some(steps.to_wire()),
            _ => None,
        },
    }
    .map(Cow::Owned);
    // A moldable job's configuration: stored with its started shape, or the latest plan's
    // expectation while pending. `nodes` and `time_limit` follow it.
    let chosen = match (&rec.spec.shape, pending, &rec.shape) {
        (JobShape::Moldable { .. }, true, _) => {
            core.and_then(|c| c.expected_mold(rec.id).map(|m| m.to_wire()))
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
        ) => Some(batch_proto::MoldConfig {
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
        pool: rec.shown_pool(),
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
            Some(c) if pending => c.expected_start(rec.id),
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
        array: rec.spec.array_task.as_deref().copied(),
        account: rec.spec.account.as_deref(),
        qos: rec.spec.qos.as_deref(),
        warn_signal: rec.spec.warn_signal,
        job_steps: if brief {
            Cow::Borrowed(&[])
        } else {
            job_steps(rec)
        },
        inert: rec.spec.inert.as_deref(),
        resources: rec.spec.resources.as_deref(),
        slurm_allocations: None,
    }
}

/// `rec`'s steps as sacct lists them: a running job's batch step (recorded only at its end)
/// first, then the recorded ones.
fn job_steps(rec: &JobRecord) -> Cow<'_, [batch_proto::JobStep]> {
    let running = matches!(rec.state, JobState::Running | JobState::Completing);
    let Some(start) = rec
        .start
        .filter(|_| running && !crate::core::coorm::is_session(rec))
    else {
        return Cow::Borrowed(&rec.steps);
    };
    let first = rec.first_node();
    let mut v = Vec::with_capacity(rec.steps.len() + 1);
    v.push(batch_proto::JobStep {
        id: batch_proto::StepId::Batch,
        name: "batch".into(),
        state: JobState::Running,
        start,
        end: None,
        node_list: first,
        nodes: 1,
        tasks: 1,
        cpus_per_task: rec
            .spec
            .resources
            .as_ref()
            .and_then(|r| r.cpus_per_task)
            .unwrap_or(1),
        exit_code: None,
        signal: None,
        usage: None,
    });
    v.extend(rec.steps.iter().cloned());
    Cow::Owned(v)
}
