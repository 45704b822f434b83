//! Evolving jobs while they run (Klein & Pérez: fully-predictably evolving applications).
//!
//! A job the policy starts with an evolving shape holds, step after step, the node counts of
//! its scheduled EP: the requested steps, each possibly expanded. Nobody but the driver knows
//! node IDs, so batchd does the mapping of RR-7205 §4.1 (`sched_core::nodemap`) in real time:
//!
//! - at each step boundary the job grows from the free set or shrinks; a shrink frees the
//!   nodes the job chose (`erelease`, condition C4) or, if it did not choose, the nodes it got
//!   last — never its first, where its driver runs;
//! - before a boundary that shrinks it (`release_notice_ms`, at most the whole step), the job
//!   is told to choose; after the requested duration of an expanded step it is told it waits
//!   for the next step's nodes;
//! - at every change its node file and step file are rewritten (atomically) and its process
//!   gets the configured signal (SIGWINCH by default, ignored by programs that do not care).
//!
//! The step boundaries are those of the scheduled EP from the job's real start: the profile
//! is fully predictable, so they do not move. Should a growth find too few free nodes (a job
//! killed at its time limit has not let go yet), the job waits for them, told so, and the
//! policy's snapshot keeps the missing nodes for it (see
//! [`EvoRun::holds`](crate::evorun::EvoRun::holds)).
//!
//! This module is the I/O half: [`follow`] wakes at each change, lets
//! [`Core::evolve`](crate::core::Core::evolve) decide it (the state machine is
//! [`crate::evorun`]), writes the job's files and signals the job. The file formats and the signal are documented in docs/evolving.md ("Running evolving
//! jobs"); the same text is in the step file's header.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::daemon::Daemon;
use crate::launch::{files, now_ms, write_job_files, JobPids};

/// Follows running evolving job `id` through its scheduled EP until its last step (see the
/// module's text). Started with the job and for a job re-attached after a restart.
pub async fn follow(d: Arc<Daemon>, id: u64) {
    loop {
        let settings = d.settings();
        let notice = settings.config.evolving.release_notice_ms;
        let signal = settings
            .config
            .evolving
            .signal()
            .unwrap_or(Signal::SIGWINCH);
        // Registered before looking, so that a job end between the look and the wait is not
        // missed.
        let freed = d.freed.notified();
        let now = now_ms();
        let Some(ev) = d.core().evolve(id, now, notice) else {
            return;
        };
        if ev.freed {
            d.nodes_freed();
        }
        // Nodes beyond a Slurm pool's allocation it grows onto come in a sibling allocation
        // (and one it shrank out of goes back) before the job is told.
        if ev.record.is_some() && !d.slurm_pools_of(id).is_empty() {
            if let Err(e) = crate::allocations::settle(&d, id).await {
                tracing::error!(job = id, "{e}");
            }
        }
        if let Some(mut files) = ev.files {
            let _order = d.progress_writes.lock().await;
            // The progress as it is now, not as it was computed: an erelease's choice made
            // meanwhile is kept.
            if files.progress.is_some() {
                let now = d.core().progress(id);
                files.progress = now.or(files.progress);
            }
            tracing::info!(
                job = id,
                nodes = ?ev.record.as_ref().and_then(|r| r.node_list.clone()),
                "evolving job resized or told of its step"
            );
            let dir = ev.job_dir.clone();
            match tokio::task::spawn_blocking(move || write_job_files(&dir, &files)).await {
                Ok(Ok(())) => match d.remote(id) {
                    Some((link, run)) => tell_remote(&link, run, &ev.job_dir, signal),
                    // In a Slurm allocation, the job's process here is srun, which does not
                    // pass every signal on: Slurm signals the step.
                    None if !d.slurm_allocations_of(id).is_empty() => {
                        let allocations = d.slurm_allocations_of(id);
                        let sent = tokio::task::spawn_blocking(move || {
                            crate::slurm::signal_steps(&allocations, id, signal as i32, true)
                        })
                        .await;
                        if let Ok(Err(e)) = sent {
                            tracing::warn!(job = id, "cannot tell the job of its new nodes: {e}");
                        }
                    }
                    None => tell(&ev.job_dir, id, signal),
                },
                Ok(Err(e)) => tracing::error!(job = id, "cannot write the job's files: {e}"),
                Err(e) => tracing::error!(job = id, "writing the job's files: {e}"),
            }
        }
        if let Some(rec) = ev.record {
            if let Err(e) = d.store.commit(rec).await {
                tracing::error!(job = id, "cannot store the job's new nodes: {e}");
            }
        }
        let Some(next) = ev.next else { return };
        let wait = Duration::from_millis(next.saturating_sub(now_ms()));
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = freed => {}
        }
    }
}

/// [`tell`] for a job on a host: its new step and node files (step first, as written here)
/// and the signal go through its host's session.
fn tell_remote(
    link: &crate::hostlink::HostLink,
    run: crate::agent::RunId,
    dir: &Path,
    signal: Signal,
) {
    let sent: Vec<(String, String)> = [files::STEP, files::NODES]
        .iter()
        .filter_map(|f| {
            std::fs::read_to_string(dir.join(f))
                .ok()
                .map(|t| (f.to_string(), t))
        })
        .collect();
    let ops = [
        crate::agent::JobOp::Files { files: sent },
        crate::agent::JobOp::Signal {
            signal: signal as i32,
            scope: batch_proto::SignalScope::Batch,
        },
    ];
    for op in ops {
        if let Err(e) = link.send_job(run, op) {
            tracing::warn!(job = run.job, "cannot tell the job of its new nodes: {e}");
        }
    }
}

/// Signals the job's own process (not its group: helpers it started, `sleep` included, would
/// die of a signal they do not expect). Before the job has started there is nobody to tell:
/// it reads its files when it starts.
fn tell(dir: &Path, id: u64, signal: Signal) {
    // Only a process provably the job's: a pid outliving its process may be another's.
    let pids = JobPids::read(&dir.join(files::JOB_PID));
    for pid in crate::procs::live_leaders(&pids, id) {
        if let Err(e) = kill(Pid::from_raw(pid), signal) {
            tracing::debug!(job = id, "cannot signal the job: {e}");
        }
    }
}
