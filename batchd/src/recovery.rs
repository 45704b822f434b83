//! Start-up: the database's active jobs back in memory, running jobs re-attached to their
//! supervisors.
//!
//! Pending jobs return to the queue (queue order is recomputed from priority and id). A job
//! the database says is running is re-attached to its nodes, every component of one that
//! spans pools, and watched (`executor::watch_adopted`): if its supervisor left a status
//! file, the job ended while the daemon was away and its end is recorded then; if the
//! supervisor still lives, the daemon waits for it; if neither, what is left of the job's
//! processes is stopped before the job is recorded FAILED, its nodes held until then. A job
//! stored as running whose supervisor never started (the daemon died between storing the
//! start and spawning the supervisor) never ran: it goes back to the queue. A running job
//! that cannot have its nodes back (its pool left the config) is stopped, its processes
//! killed, before it is recorded FAILED: no job recorded as ended leaves processes behind.
//! A running job the policy had killed (its record marked preempted) is re-attached without
//! nodes, which went to another job, and stopped again; it still ends PREEMPTED (or
//! requeued). A launcher session's running job keeps its nodes until its duration ends, as
//! after its launcher disconnects; a waiting one is cancelled, its connection being gone. A
//! pending co-allocated job whose record keeps a claim's pools gets its claim back once every
//! running job has its nodes.

use std::path::Path;

use batch_proto::JobState;

use crate::core::{Active, Core};
use crate::launch::{files, now_ms, read_saved};
use crate::record::JobRecord;
use crate::store::Loaded;

/// What start-up found.
#[derive(Debug, Default)]
pub struct Recovered {
    /// Running jobs to watch.
    pub adopted: Vec<u64>,
    /// Of `adopted`, the jobs being stopped whose stop is to be sent again (the daemon may
    /// have died before sending it): those a policy had killed, re-attached without nodes
    /// (they went to another job), and those `econtrol requeue` was stopping.
    pub preempted: Vec<u64>,
    /// Running launcher sessions' jobs, re-attached: they end at their duration.
    pub sessions: Vec<u64>,
    /// Jobs that could not be re-attached, with their final record to store.
    pub lost: Vec<JobRecord>,
    /// Of `lost`, those that were running: their processes must be stopped before their end
    /// is stored (their ids, directories and users' uids).
    pub to_stop: Vec<(u64, std::path::PathBuf, u32)>,
    /// Pending jobs back in the queue.
    pub pending: usize,
    /// Jobs stored as running that never started, back in the queue, and pending jobs whose
    /// claim could not be made again: their records to store.
    pub requeued: Vec<JobRecord>,
}

/// Whether the job in `dir` never got a supervisor: no pid file, no status. The supervisor
/// writes its pid before anything else, milliseconds after it is spawned, and a restart takes
/// longer than that.
fn never_started(dir: &Path) -> bool {
    !dir.join(files::SUPERVISOR_PID).exists() && !dir.join(files::STATUS).exists()
}

/// `rec` as it was before its start.
fn requeue(mut rec: JobRecord) -> JobRecord {
    rec.state = JobState::Pending;
    rec.start = None;
    rec.pool = None;
    rec.node_list = None;
    rec.nodes = 0;
    rec.shape = None;
    rec.detail = Some("requeued: batchd stopped before the job's process started".into());
    // A kill that found no process yet is moot: the job runs again from the start.
    rec.spec.preempted = None;
    rec.spec.node_failed = false;
    rec
}

/// `rec`, running but impossible to re-attach (`why`), as it is recorded: FAILED.
fn lost_record(core: &mut Core, mut rec: JobRecord, why: &str) -> JobRecord {
    tracing::error!(job = rec.id, "cannot re-attach the running job: {why}");
    rec.state = JobState::Failed;
    rec.end = Some(now_ms());
    rec.detail = Some(format!("lost at daemon restart: {why}"));
    core.restore_finished(rec.id, JobState::Failed);
    rec
}

/// Fills `core` from what the store loaded.
///
/// A job of a pool of hosts (`remote` says which pools are; a co-allocated job's record names
/// its pools joined by commas) runs on its hosts: it is re-attached, and its hosts' agents
/// report it, its end, or that it never started there.
pub fn restore(
    core: &mut Core,
    loaded: Loaded,
    state_dir: &Path,
    remote: &dyn Fn(&str) -> bool,
) -> Recovered {
    let mut out = Recovered::default();
    // Pending co-allocated jobs whose record keeps a claim's pools.
    let mut claimed = Vec::new();
    core.restore_history(loaded.next_id, loaded.finished);
    for e in &loaded.unreadable {
        tracing::error!("{e}; the row is left in the database untouched");
    }
    for rec in loaded.active {
        let id = rec.id;
        let dir = state_dir.join("jobs").join(id.to_string());
        match rec.state {
            // A waiting launcher's session does not survive the daemon: its connection is gone.
            JobState::Pending if crate::core::coorm::is_session(&rec) => {
                let mut rec = rec;
                rec.state = JobState::Cancelled;
                rec.end = Some(now_ms());
                rec.detail = Some("its launcher session ended when batchd stopped".into());
                core.restore_finished(id, rec.state);
                out.lost.push(rec);
            }
            // A started one keeps its nodes until its duration ends, as when its launcher
            // disconnects after the start (it runs no process of batchd's).
            _ if crate::core::coorm::is_session(&rec) => {
                match core.adopt(rec, dir, Default::default(), now_ms()) {
                    Ok(()) => out.sessions.push(id),
                    Err(lost) => {
                        let (rec, why) = *lost;
                        out.lost.push(lost_record(core, rec, &why));
                    }
                }
            }
            JobState::Pending => {
                if rec.shape.is_some() {
                    claimed.push(id);
                }
                core.insert(Active { rec, run: None });
                out.pending += 1;
            }
            // On a host, only the host knows whether its start happened: its agent's
            // inventory decides (`crate::hosts`).
            JobState::Running
                if !rec
                    .pool
                    .as_deref()
                    .is_some_and(|p| p.split(',').any(remote))
                    && never_started(&dir) =>
            {
                tracing::warn!(job = id, "batchd stopped before the job's supervisor started; the job is back in the queue");
                let _ = std::fs::remove_dir_all(&dir);
                let mut rec = requeue(rec);
                // A requeue by hand on its way: held if it was `requeuehold`.
                if let Some(held) = rec.spec.requeue_by_hand.take() {
                    rec.held = held;
                }
                out.requeued.push(rec.clone());
                core.insert(Active { rec, run: None });
                out.pending += 1;
            }
            _ => {
                // `econtrol requeue` was stopping it: its end still requeues it.
                let by_hand = rec.spec.requeue_by_hand;
                match core.adopt(rec, dir.clone(), read_saved(&dir), now_ms()) {
                    Ok(()) => {
                        if let Some(held) = by_hand {
                            core.restore_requeue(id, held);
                        }
                        // The requeue's stop comes after its answer: a daemon killed right
                        // after the answer may not have sent it.
                        if core.preempted_why(id).is_some() || by_hand.is_some() {
                            out.preempted.push(id);
                        }
                        out.adopted.push(id)
                    }
                    Err(lost) => {
                        let (rec, why) = *lost;
                        out.to_stop.push((id, dir, rec.uid));
                        out.lost.push(lost_record(core, rec, &why));
                    }
                }
            }
        }
    }
    // Claims last: the nodes running jobs hold are theirs already, whatever their ids.
    for id in claimed {
        if let Some(rec) = core.restore_claim(id) {
            out.requeued.push(rec);
        }
    }
    out
}

/// Removes directories of jobs that are no longer active (left by a crash between a job's end
/// and the removal of its directory).
pub fn sweep_job_dirs(core: &Core, state_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(state_dir.join("jobs")) else {
        return;
    };
    for e in entries.flatten() {
        let active = e
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u64>().ok())
            .is_some_and(|id| core.job(id).is_some());
        if !active {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use batch_proto::JobSpec;

    fn running(id: u64, nodes: &str) -> JobRecord {
        let spec = JobSpec::new("#!/bin/sh\n", "/tmp", 2, 60_000);
        let mut r = JobRecord::submitted(id, 1, 1, "u", spec, 0);
        r.state = JobState::Running;
        r.start = Some(5);
        r.pool = Some("debug".into());
        r.node_list = Some(nodes.into());
        r.nodes = 2;
        r.shape = Some(sched_core::Shape::rigid(sched_core::PoolId(0), 2, 60_000));
        r
    }

    #[test]
    fn a_job_whose_supervisor_never_started_goes_back_to_the_queue() {
        let state = tempfile::tempdir().unwrap();
        // Job 1's supervisor started (its pid file is there); job 2's never did.
        let d1 = state.path().join("jobs").join("1");
        std::fs::create_dir_all(&d1).unwrap();
        std::fs::write(d1.join(files::SUPERVISOR_PID), "999999").unwrap();
        std::fs::create_dir_all(state.path().join("jobs").join("2")).unwrap();
        let mut core = Core::new([("debug", 4)]);
        let loaded = crate::store::Loaded {
            active: vec![running(1, "debug[001-002]"), running(2, "debug[003-004]")],
            finished: Default::default(),
            next_id: 3,
            unreadable: vec![],
        };
        let out = restore(&mut core, loaded, state.path(), &|_| false);
        assert_eq!(out.adopted, vec![1]);
        assert_eq!(out.pending, 1);
        assert_eq!(out.requeued.len(), 1);
        let r = &out.requeued[0];
        assert_eq!(
            (r.id, r.state, r.start, r.nodes),
            (2, JobState::Pending, None, 0)
        );
        assert_eq!(core.jobs()[&2].rec.state, JobState::Pending);
        assert_eq!(core.pools()[0].free(), 2);
        assert_eq!(core.snapshot(10, 0).pending.len(), 1);
        assert!(!state.path().join("jobs").join("2").exists());
    }

    #[test]
    fn a_requeue_by_hand_on_its_way_survives_a_restart() {
        let state = tempfile::tempdir().unwrap();
        let d1 = state.path().join("jobs").join("1");
        std::fs::create_dir_all(&d1).unwrap();
        std::fs::write(d1.join(files::SUPERVISOR_PID), "999999").unwrap();
        let mut r = running(1, "debug[001-002]");
        r.state = JobState::Completing;
        r.spec.requeue_by_hand = Some(true);
        let mut core = Core::new([("debug", 4)]);
        let loaded = crate::store::Loaded {
            active: vec![r],
            finished: Default::default(),
            next_id: 2,
            unreadable: vec![],
        };
        let out = restore(&mut core, loaded, state.path(), &|_| false);
        assert_eq!(out.adopted, vec![1]);
        // Its stop is sent again: the daemon may have died between the answer and the stop.
        assert_eq!(out.preempted, vec![1]);
        assert_eq!(core.take_requeue(1), Some(true));
    }

    #[test]
    fn a_job_on_hosts_is_left_to_its_hosts_agents_whatever_its_local_directory_says() {
        let state = tempfile::tempdir().unwrap();
        let mut core = Core::new([("a", 2), ("b", 2)]);
        let mut r = running(1, "a[1-2]");
        r.pool = Some("a".into());
        r.shape = Some(sched_core::Shape::rigid(sched_core::PoolId(0), 2, 60_000));
        // No supervisor here, nor a directory: the start happened on a host, or did not.
        let loaded = crate::store::Loaded {
            active: vec![r],
            finished: Default::default(),
            next_id: 2,
            unreadable: vec![],
        };
        let out = restore(&mut core, loaded, state.path(), &|p| p == "a");
        assert_eq!(out.adopted, vec![1]);
        assert!(out.requeued.is_empty());
    }
}
