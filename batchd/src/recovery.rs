//! Start-up: the database's active jobs back in memory, running jobs re-attached to their
//! supervisors.
//!
//! Pending jobs return to the queue (queue order is recomputed from priority and id). A job
//! the database says is running is re-attached to its nodes and watched: if its supervisor
//! left a status file, the job ended while the daemon was away and its end is recorded now; if
//! the supervisor still lives, the daemon waits for it; if neither, the job is recorded FAILED.

use std::path::Path;

use batch_proto::JobState;

use crate::core::{Active, Core};
use crate::launch::now_ms;
use crate::record::JobRecord;
use crate::store::Loaded;

/// What start-up found.
#[derive(Debug, Default)]
pub struct Recovered {
    /// Running jobs to watch.
    pub adopted: Vec<u64>,
    /// Jobs that could not be re-attached, with their final record to store.
    pub lost: Vec<JobRecord>,
    /// Pending jobs back in the queue.
    pub pending: usize,
}

/// Fills `core` from what the store loaded.
pub fn restore(core: &mut Core, loaded: Loaded, state_dir: &Path) -> Recovered {
    let mut out = Recovered::default();
    core.next_id = loaded.next_id;
    core.finished = loaded.finished;
    for e in &loaded.unreadable {
        tracing::error!("{e}; the row is left in the database untouched");
    }
    for rec in loaded.active {
        let id = rec.id;
        let dir = state_dir.join("jobs").join(id.to_string());
        match rec.state {
            JobState::Pending => {
                core.insert(Active { rec, run: None });
                out.pending += 1;
            }
            _ => match core.adopt(rec, dir.clone(), crate::evolve::Saved::read(&dir)) {
                Ok(()) => out.adopted.push(id),
                Err(lost) => {
                    let (mut rec, why) = *lost;
                    tracing::error!(job = id, "cannot re-attach the running job: {why}");
                    rec.state = JobState::Failed;
                    rec.end = Some(now_ms());
                    rec.detail = Some(format!("lost at daemon restart: {why}"));
                    core.finished.insert(id, JobState::Failed);
                    out.lost.push(rec);
                }
            },
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
            .is_some_and(|id| core.jobs.contains_key(&id));
        if !active {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}
