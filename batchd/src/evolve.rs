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
//! policy's snapshot keeps the missing nodes for it (see [`EvoRun::holds`]).
//!
//! The file formats and the signal are documented in docs/evolving.md ("Running evolving
//! jobs"); the same text is in the step file's header.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use batch_proto::{hostlist, JobShape, ReleaseNodesReply, StepPhase, StepStatus};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use sched_core::nodemap::NodeId;
use sched_core::{JobId, PoolId, PoolSteps, Shape, Step, Time};
use serde::{Deserialize, Serialize};

use crate::core::Core;
use crate::daemon::Daemon;
use crate::launch::{files, now_ms, read_json, read_pid, write_atomic, write_json};
use crate::record::JobRecord;

/// How often a job waiting for nodes looks again when no job end wakes it.
const OWED_RETRY: Duration = Duration::from_secs(1);

/// Where a running evolving job is in its scheduled EP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvoRun {
    /// The steps as requested.
    pub requested: Vec<Step>,
    /// The scheduled EP it was started with (same node counts, durations at least those
    /// requested).
    pub scheduled: Vec<Step>,
    /// The step (from 0) whose node count the job holds, or is owed.
    pub step: usize,
    /// What the job was last told it is doing.
    pub phase: StepPhase,
    /// The nodes the job chose to free when `step` ends.
    pub chosen: Option<Vec<NodeId>>,
}

/// What an evolving job's directory keeps across a daemon restart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Saved {
    /// Its nodes in the order it got them (the node file).
    pub nodes: Option<Vec<String>>,
    /// Its progress.
    pub progress: Option<Progress>,
}

/// The step the job's nodes belong to, and its choice for the next boundary
/// (`evolve.json`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// The step (from 0).
    pub step: usize,
    /// Host names chosen with `erelease`.
    #[serde(default)]
    pub chosen: Vec<String>,
}

impl Saved {
    /// Reads what `job_dir` holds; missing or unreadable files give `None` parts (the job is
    /// then re-attached with its record's sorted node list and the step of the present).
    pub fn read(job_dir: &Path) -> Saved {
        let nodes = std::fs::read_to_string(job_dir.join(files::NODES))
            .ok()
            .map(|t| t.lines().map(str::to_string).collect::<Vec<_>>())
            .filter(|v| !v.is_empty());
        let progress = read_json::<Progress>(&job_dir.join(files::PROGRESS))
            .ok()
            .flatten();
        Saved { nodes, progress }
    }
}

impl EvoRun {
    /// The state of a job just started, if it was started with an evolving shape.
    pub fn started(rec: &JobRecord) -> Option<EvoRun> {
        let (Some(Shape::Evolving { steps, .. }), JobShape::Evolving { steps: requested }) =
            (&rec.shape, &rec.spec.shape)
        else {
            return None;
        };
        if steps.is_empty() || steps.len() != requested.len() {
            return None;
        }
        Some(EvoRun {
            requested: requested.clone(),
            scheduled: steps.clone(),
            step: 0,
            phase: StepPhase::Running,
            chosen: None,
        })
    }

    /// The state of a job re-attached after a restart.
    pub fn adopted(
        rec: &JobRecord,
        saved: &Saved,
        index_of: impl Fn(&str) -> Option<NodeId>,
    ) -> Option<EvoRun> {
        let mut run = EvoRun::started(rec)?;
        match &saved.progress {
            Some(p) if p.step < run.scheduled.len() => {
                run.step = p.step;
                let chosen: Option<Vec<NodeId>> = p.chosen.iter().map(|n| index_of(n)).collect();
                run.chosen = chosen.filter(|c| !c.is_empty());
            }
            _ => run.step = run.step_at(rec.start.unwrap_or(0), now_ms()),
        }
        Some(run)
    }

    /// When step `i` begins (`i == len`: when the last one ends).
    fn boundary(&self, start: Time, i: usize) -> Time {
        start.saturating_add(sched_core::request::total_duration(
            &self.scheduled[..i.min(self.scheduled.len())],
        ))
    }

    /// The step the schedule is in at `now` (the last one once it is over).
    pub fn step_at(&self, start: Time, now: Time) -> usize {
        let mut t = start;
        for (i, s) in self.scheduled.iter().enumerate() {
            t = t.saturating_add(s.duration);
            if now < t {
                return i;
            }
        }
        self.scheduled.len().saturating_sub(1)
    }

    /// What the job holds from `now` on, for the policy's snapshot: its scheduled EP, except
    /// that the present step counts what it really holds. More than scheduled: a shrink not
    /// made yet (it is, within milliseconds). Fewer: nodes it is owed and waits for, counted
    /// from `late` (when whatever holds them past its time limit is gone), so that no new job
    /// is placed on them.
    pub fn holds(&self, pool: PoolId, start: Time, now: Time, held: u32, late: Time) -> PoolSteps {
        let k = self.step_at(start, now);
        let want = self.scheduled[k].nodes;
        let next = self.boundary(start, k + 1).max(now);
        let mut steps = Vec::with_capacity(self.scheduled.len() - k + 1);
        let mut push = |from: Time, to: Time, nodes: u32| {
            if to > from {
                steps.push(Step::new(to - from, nodes));
            }
        };
        if held < want {
            let mid = late.clamp(now, next);
            push(now, mid, held);
            push(mid, next, want);
        } else {
            push(now, next, held);
        }
        steps.extend_from_slice(&self.scheduled[k + 1..]);
        PoolSteps {
            pool,
            start: now,
            steps,
        }
    }

    /// What the job is doing at `now` holding `held` nodes.
    fn phase_at(&self, start: Time, now: Time, held: usize, notice: u64) -> StepPhase {
        let k = self.step_at(start, now);
        let want = self.scheduled[k].nodes as usize;
        if held < want {
            return StepPhase::Waiting;
        }
        let Some(next) = self.scheduled.get(k + 1) else {
            return StepPhase::Running;
        };
        let (begin, end) = (self.boundary(start, k), self.boundary(start, k + 1));
        if (next.nodes as usize) < want && now >= end.saturating_sub(notice).max(begin) {
            StepPhase::Releasing
        } else if now >= begin.saturating_add(self.requested[k].duration) {
            // Klein & Pérez: an expanded step is one whose successor could not get its
            // nodes in time; past the requested duration the application only waits.
            StepPhase::Waiting
        } else {
            StepPhase::Running
        }
    }

    /// The next instant something changes for the job, after `now`.
    fn next_event(&self, start: Time, now: Time, held: usize, notice: u64) -> Option<Time> {
        let k = self.step_at(start, now);
        let mut next: Option<Time> = None;
        let mut consider = |t: Time| {
            if t > now {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        };
        if let Some(following) = self.scheduled.get(k + 1) {
            let (begin, end) = (self.boundary(start, k), self.boundary(start, k + 1));
            consider(end);
            consider(begin.saturating_add(self.requested[k].duration));
            if following.nodes < self.scheduled[k].nodes {
                consider(end.saturating_sub(notice));
            }
        }
        if held < self.scheduled[k].nodes as usize {
            consider(now.saturating_add(OWED_RETRY.as_millis() as u64));
        }
        next
    }
}

/// The files a job reads: its nodes and, for an evolving job, its step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobFiles {
    /// Host names, in the order the job got them.
    pub nodes: Vec<String>,
    /// The step file's text.
    pub step: Option<String>,
    /// The progress to keep for a restart.
    pub progress: Option<Progress>,
}

impl JobFiles {
    /// Writes them into `dir`, node file last: a job that sees a new node file also sees the
    /// step file that goes with it.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        if let Some(p) = &self.progress {
            write_json(&dir.join(files::PROGRESS), p)?;
        }
        if let Some(step) = &self.step {
            write_atomic(&dir.join(files::STEP), step.as_bytes())?;
        }
        let mut text = self.nodes.join("\n");
        text.push('\n');
        write_atomic(&dir.join(files::NODES), text.as_bytes())?;
        // The job may run as another user; it must read them.
        for f in [files::NODES, files::STEP] {
            let p = dir.join(f);
            if p.exists() {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644))?;
            }
        }
        Ok(())
    }
}

/// What one look at an evolving job did.
#[derive(Debug)]
pub struct Evolved {
    /// Nodes went back to the pool: the policy may use them.
    pub freed: bool,
    /// The record to store (its node list changed).
    pub record: Option<JobRecord>,
    /// The job's files as they are now, when they changed: rewrite them and signal it.
    pub files: Option<JobFiles>,
    /// When to look again (`None`: in its last step, nothing more happens).
    pub next: Option<Time>,
    /// The job's directory.
    pub job_dir: PathBuf,
}

/// The step file: shell assignments a job script can source (`. "$ESCHED_STEPFILE"`).
fn step_text(id: u64, st: &StepStatus, nodelist: &str, default_release: &str) -> String {
    let releasing = st.phase == StepPhase::Releasing;
    let release_count = match (releasing, st.next_nodes) {
        (true, Some(n)) => st.nodes.saturating_sub(n),
        _ => 0,
    };
    format!(
        "# esched step file of job {id}: sh assignments, rewritten whole at every change, after\n\
         # which the job's process is signalled. See docs/evolving.md.\n\
         ESCHED_STEP={}\n\
         ESCHED_STEPS={}\n\
         ESCHED_STEP_STATE={}\n\
         ESCHED_STEP_NODES={}\n\
         ESCHED_STEP_END_MS={}\n\
         ESCHED_NEXT_STEP_NODES={}\n\
         ESCHED_RELEASE_COUNT={release_count}\n\
         ESCHED_RELEASE_DEFAULT={}\n\
         ESCHED_RELEASE_CHOSEN={}\n\
         ESCHED_STEP_NODELIST={nodelist}\n",
        st.index,
        st.count,
        st.phase,
        st.nodes,
        st.ends,
        st.next_nodes.unwrap_or(0),
        if releasing { default_release } else { "" },
        st.chosen_release.as_deref().unwrap_or(""),
    )
}

impl Core {
    /// Where running evolving job `id` is (`None` for other jobs).
    pub fn step_status(&self, id: u64) -> Option<StepStatus> {
        let a = self.jobs.get(&id)?;
        let run = a.run.as_ref()?;
        let (evo, start) = (run.evolving.as_ref()?, a.rec.start?);
        let p = self.pools.get(run.pool)?;
        let k = evo.step;
        Some(StepStatus {
            index: k as u32 + 1,
            count: evo.scheduled.len() as u32,
            nodes: self.nodes_of(id).len() as u32,
            phase: evo.phase,
            ends: evo.boundary(start, k + 1),
            next_nodes: evo.scheduled.get(k + 1).map(|s| s.nodes),
            chosen_release: evo.chosen.as_ref().map(|c| hostlist::compress(&p.names(c))),
        })
    }

    /// The files of running job `id` as they are: its node file, and for an
    /// evolving job its step file.
    pub fn job_files(&self, id: u64) -> Option<JobFiles> {
        let a = self.jobs.get(&id)?;
        let run = a.run.as_ref()?;
        let p = self.pools.get(run.pool)?;
        let held = self.nodes_of(id);
        let nodes = p.names(held);
        let step = self.step_status(id).map(|st| {
            let default = st
                .next_nodes
                .and_then(|n| p.map.default_release(JobId(id), n as usize).ok())
                .map(|d| hostlist::compress(&p.names(&d)))
                .unwrap_or_default();
            step_text(id, &st, &hostlist::compress(&nodes), &default)
        });
        Some(JobFiles {
            nodes,
            step,
            progress: self.progress(id),
        })
    }

    /// What running evolving job `id`'s directory keeps for a restart: its step and choice.
    pub fn progress(&self, id: u64) -> Option<Progress> {
        let run = self.jobs.get(&id)?.run.as_ref()?;
        let evo = run.evolving.as_ref()?;
        let p = self.pools.get(run.pool)?;
        Some(Progress {
            step: evo.step,
            chosen: evo.chosen.as_ref().map(|c| p.names(c)).unwrap_or_default(),
        })
    }

    /// Brings running evolving job `id` to where its scheduled EP is at `now`: shrinks or
    /// grows it at a step boundary, updates what it is told. `None` once there is nothing
    /// more to do for it (it ended, is being cancelled, or is not evolving).
    pub fn evolve(&mut self, id: u64, now: Time, notice: u64) -> Option<Evolved> {
        let job = JobId(id);
        let a = self.jobs.get_mut(&id)?;
        let start = a.rec.start?;
        let run = a.run.as_mut()?;
        if run.cancelling {
            return None;
        }
        let evo = run.evolving.as_mut()?;
        let pool = self.pools.get_mut(run.pool)?;
        let before = (pool.map.nodes_of(job).to_vec(), evo.step, evo.phase);

        let k = evo.step_at(start, now);
        // RR-7205 Alg. 1 reads a job's chosen release only at the change point it was made
        // for: a choice for an earlier boundary (a restart skipped it) does not carry over.
        let chosen = if k == evo.step + 1 {
            evo.chosen.take()
        } else {
            None
        };
        if k != evo.step {
            evo.step = k;
            evo.chosen = None;
        }
        let want = evo.scheduled[k].nodes as usize;
        let held = pool.map.nodes_of(job).len();
        let mut freed = false;
        if held > want {
            // C4: the job's choice if it still names nodes it holds, else the default (the
            // nodes added last, never the first).
            let by_choice = chosen.is_some_and(|c| pool.map.shrink_chosen(job, want, &c).is_ok());
            if !by_choice {
                if let Err(e) = pool.map.shrink_default(job, want) {
                    tracing::error!(job = id, "cannot shrink: {e}");
                }
            }
            freed = true;
        } else if held < want {
            if let Err(e) = pool.map.grow(job, want) {
                tracing::info!(job = id, "waiting for nodes: {e}");
            }
        }
        let held = pool.map.nodes_of(job).len();
        evo.phase = evo.phase_at(start, now, held, notice);
        let next = evo.next_event(start, now, held, notice);
        let after = (pool.map.nodes_of(job).to_vec(), evo.step, evo.phase);
        let nodes_changed = before.0 != after.0;
        let changed = before != after;
        let job_dir = run.job_dir.clone();
        let record = if nodes_changed {
            let names = pool.names(&after.0);
            a.rec.nodes = names.len() as u32;
            a.rec.node_list = Some(hostlist::compress(&names));
            Some(a.rec.clone())
        } else {
            None
        };
        let files = if changed {
            Some(self.job_files(id)?)
        } else {
            None
        };
        Some(Evolved {
            freed,
            record,
            files,
            next,
            job_dir,
        })
    }

    /// Records the nodes running evolving job `id` frees when its current step ends
    /// (`erelease`). Refused unless the next step holds fewer nodes and `names` are exactly
    /// that many distinct nodes of the job (C4).
    pub fn choose_release(
        &mut self,
        id: u64,
        names: &[String],
        now: Time,
    ) -> Result<ReleaseNodesReply, String> {
        let Some(a) = self.jobs.get(&id) else {
            return Err(format!("job {id} is not running"));
        };
        let Some(run) = a.run.as_ref() else {
            return Err(format!("job {id} is not running"));
        };
        let Some(evo) = run.evolving.as_ref() else {
            return Err(format!(
                "job {id} does not run as an evolving job; it holds its nodes until it ends"
            ));
        };
        let start = a.rec.start.unwrap_or(0);
        let k = evo.step;
        let Some(next) = evo.scheduled.get(k + 1) else {
            return Err(format!(
                "job {id} is in its last step; its nodes go when it ends"
            ));
        };
        let pool = &self.pools[run.pool];
        let holds = pool.map.nodes_of(JobId(id));
        let want = evo.scheduled[k].nodes as usize;
        if next.nodes as usize >= want || holds.len() < want {
            return Err(format!(
                "job {id} frees no node at the end of step {} ({} → {} nodes)",
                k + 1,
                want,
                next.nodes
            ));
        }
        let must = holds.len() - next.nodes as usize;
        if names.len() != must {
            return Err(format!(
                "job {id} must free {must} node(s) at the end of step {}, not {}",
                k + 1,
                names.len()
            ));
        }
        let mut idx = Vec::with_capacity(names.len());
        for n in names {
            match pool.node_index(n) {
                Some(i) if holds.contains(&i) => {
                    if idx.contains(&i) {
                        return Err(format!("{n} is named twice"));
                    }
                    idx.push(i);
                }
                _ => return Err(format!("{n} is not a node of job {id}")),
            }
        }
        let at = evo.boundary(start, k + 1);
        if now >= at {
            return Err(format!("step {} of job {id} is over", k + 1));
        }
        let nodes = hostlist::compress(&pool.names(&idx));
        if let Some(evo) = self
            .jobs
            .get_mut(&id)
            .and_then(|a| a.run.as_mut())
            .and_then(|r| r.evolving.as_mut())
        {
            evo.chosen = Some(idx);
        }
        Ok(ReleaseNodesReply {
            job: id,
            nodes,
            at,
            next_step: k as u32 + 2,
        })
    }
}

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
        if let Some(files) = ev.files {
            tracing::info!(
                job = id,
                nodes = ?ev.record.as_ref().and_then(|r| r.node_list.clone()),
                "evolving job resized or told of its step"
            );
            let dir = ev.job_dir.clone();
            match tokio::task::spawn_blocking(move || files.write(&dir)).await {
                Ok(Ok(())) => tell(&ev.job_dir, id, signal),
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

/// Signals the job's own process (not its group: helpers it started, `sleep` included, would
/// die of a signal they do not expect). Before the job has started there is nobody to tell:
/// it reads its files when it starts.
fn tell(dir: &Path, id: u64, signal: Signal) {
    let Some(pid) = read_pid(&dir.join(files::JOB_PID)) else {
        return;
    };
    if let Err(e) = kill(Pid::from_raw(pid), signal) {
        tracing::debug!(job = id, "cannot signal the job: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(requested: &[(u64, u32)], scheduled: &[(u64, u32)]) -> EvoRun {
        let steps = |v: &[(u64, u32)]| v.iter().map(|&(d, n)| Step::new(d, n)).collect();
        EvoRun {
            requested: steps(requested),
            scheduled: steps(scheduled),
            step: 0,
            phase: StepPhase::Running,
            chosen: None,
        }
    }

    #[test]
    fn steps_phases_and_events_follow_the_scheduled_ep() {
        // 2 → 4 → 1 nodes; the first step expanded from 10 to 15 (the 4 nodes come late).
        let e = run(&[(10, 2), (10, 4), (10, 1)], &[(15, 2), (10, 4), (10, 1)]);
        let s = 1000;
        assert_eq!(e.step_at(s, s), 0);
        assert_eq!(e.step_at(s, s + 14), 0);
        assert_eq!(e.step_at(s, s + 15), 1);
        assert_eq!(e.step_at(s, s + 35), 2);
        assert_eq!(e.step_at(s, s + 99), 2);
        assert_eq!(e.phase_at(s, s + 9, 2, 3), StepPhase::Running);
        assert_eq!(e.phase_at(s, s + 10, 2, 3), StepPhase::Waiting);
        assert_eq!(e.next_event(s, s, 2, 3), Some(s + 10));
        assert_eq!(e.next_event(s, s + 10, 2, 3), Some(s + 15));
        // Step 2 shrinks next: told 3 ms ahead.
        assert_eq!(e.phase_at(s, s + 21, 4, 3), StepPhase::Running);
        assert_eq!(e.next_event(s, s + 15, 4, 3), Some(s + 22));
        assert_eq!(e.phase_at(s, s + 22, 4, 3), StepPhase::Releasing);
        // A notice longer than the step: told from the step's start.
        assert_eq!(e.phase_at(s, s + 15, 4, 100), StepPhase::Releasing);
        // Owed nodes: waiting, and a retry.
        assert_eq!(e.phase_at(s, s + 16, 3, 3), StepPhase::Waiting);
        assert_eq!(e.next_event(s, s + 16, 3, 3), Some(s + 22));
        let last = run(&[(10, 2), (10, 4)], &[(10, 2), (10, 4)]);
        assert_eq!(last.next_event(s, s + 12, 3, 3), Some(s + 12 + 1000));
        assert_eq!(e.next_event(s, s + 30, 1, 3), None);
    }

    #[test]
    fn holds_count_the_present_and_the_rest_of_the_schedule() {
        let e = run(&[(10, 2), (10, 4), (10, 1)], &[(10, 2), (10, 4), (10, 1)]);
        let p = PoolId(0);
        // On time: the scheduled EP from now.
        let h = e.holds(p, 0, 5, 2, 1005);
        assert_eq!(h.start, 5);
        assert_eq!(
            h.steps,
            vec![Step::new(5, 2), Step::new(10, 4), Step::new(10, 1)]
        );
        assert_eq!(h.end(), 30);
        // Owed two nodes at t = 12: what it has until `late`, then what it is owed.
        let h = e.holds(p, 0, 12, 2, 15);
        assert_eq!(
            h.steps,
            vec![Step::new(3, 2), Step::new(5, 4), Step::new(10, 1)]
        );
        // A shrink not made yet counts as still held.
        let h = e.holds(p, 0, 21, 4, 1021);
        assert_eq!(h.steps, vec![Step::new(9, 4)]);
    }

    /// A core with one 8-node pool, evolving job 1 (2 → 4 → 1 nodes, 10 s each) started at
    /// t = 0, and rigid job 2 on `rigid` nodes.
    fn cluster(rigid: u32) -> Core {
        use crate::core::Active;
        let mut c = Core::new(&[crate::config::PoolConfig {
            name: "debug".into(),
            nodes: 8,
            max_time: Default::default(),
            speed: 1.0,
        }]);
        let steps = vec![
            Step::new(10_000, 2),
            Step::new(10_000, 4),
            Step::new(10_000, 1),
        ];
        let mut spec = batch_proto::JobSpec::new("#!/bin/sh\n", "/tmp", 1, 1000);
        spec.shape = JobShape::Evolving {
            steps: steps.clone(),
        };
        let evolving = JobRecord::submitted(1, 1, 1, "u", spec, 0);
        let rigid_rec = JobRecord::submitted(
            2,
            1,
            1,
            "u",
            batch_proto::JobSpec::new("#!/bin/sh\n", "/tmp", rigid, 100_000),
            0,
        );
        c.insert(Active {
            rec: evolving,
            run: None,
        });
        c.insert(Active {
            rec: rigid_rec,
            run: None,
        });
        let shape = Shape::Evolving {
            pool: PoolId(0),
            steps,
        };
        c.start(1, &shape, 0, PathBuf::from("/j1")).unwrap();
        c.start(
            2,
            &Shape::rigid(PoolId(0), rigid, 100_000),
            0,
            PathBuf::new(),
        )
        .unwrap();
        c
    }

    #[test]
    fn a_job_grows_at_its_boundary_and_frees_its_last_nodes_by_default() {
        let mut c = cluster(2);
        assert_eq!(c.nodes_of(1), &[0, 1]);
        let ev = c.evolve(1, 5_000, 3_000).unwrap();
        assert!(ev.files.is_none() && ev.record.is_none());
        assert_eq!(ev.next, Some(10_000));
        let ev = c.evolve(1, 10_000, 3_000).unwrap();
        assert!(ev.files.is_some() && !ev.freed);
        assert_eq!(c.nodes_of(1), &[0, 1, 4, 5]);
        assert_eq!(
            ev.record.unwrap().node_list.as_deref(),
            Some("debug[001-002,005-006]")
        );
        assert_eq!(ev.files.unwrap().nodes[2], "debug005");
        assert_eq!(ev.next, Some(17_000));
        // Told to choose three seconds before the shrink; the default spares the first node.
        let ev = c.evolve(1, 17_000, 3_000).unwrap();
        assert!(ev.files.is_some());
        let step = ev.files.unwrap().step.unwrap();
        assert!(step.contains("ESCHED_STEP_STATE=releasing"), "{step}");
        assert!(
            step.contains("ESCHED_RELEASE_DEFAULT=debug[002,005-006]"),
            "{step}"
        );
        let ev = c.evolve(1, 20_000, 3_000).unwrap();
        assert!(ev.files.is_some() && ev.freed);
        assert_eq!(c.nodes_of(1), &[0]);
        assert_eq!(ev.next, None);
        assert_eq!(c.pools[0].free(), 5);
    }

    #[test]
    fn the_job_chooses_what_it_frees_and_bad_choices_are_refused() {
        let mut c = cluster(2);
        c.evolve(1, 10_000, 3_000).unwrap();
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // Wrong count, a node of another job, a repeat.
        assert!(c
            .choose_release(1, &names(&["debug001"]), 18_000)
            .unwrap_err()
            .contains("must free 3"));
        assert!(c
            .choose_release(1, &names(&["debug001", "debug003", "debug005"]), 18_000)
            .unwrap_err()
            .contains("debug003 is not a node of job 1"));
        assert!(c
            .choose_release(1, &names(&["debug001", "debug001", "debug005"]), 18_000)
            .unwrap_err()
            .contains("twice"));
        // The job may give up even its first node: the choice is its own (C4).
        let r = c
            .choose_release(1, &names(&["debug001", "debug002", "debug005"]), 18_000)
            .unwrap();
        assert_eq!((r.at, r.next_step), (20_000, 3));
        assert_eq!(r.nodes, "debug[001-002,005]");
        assert_eq!(
            c.step_status(1).unwrap().chosen_release.as_deref(),
            Some("debug[001-002,005]")
        );
        c.evolve(1, 20_000, 3_000).unwrap();
        assert_eq!(c.nodes_of(1), &[5]);
        assert!(c
            .choose_release(1, &names(&["debug006"]), 21_000)
            .unwrap_err()
            .contains("last step"));
        // A rigid job has nothing to choose.
        assert!(c
            .choose_release(2, &names(&["debug003"]), 21_000)
            .unwrap_err()
            .contains("does not run as an evolving job"));
    }

    #[test]
    fn a_growth_without_free_nodes_waits_and_keeps_its_claim_in_the_snapshot() {
        // The rigid job holds 6 of 8 nodes past the evolving job's first step (it overran).
        let mut c = cluster(6);
        let ev = c.evolve(1, 10_000, 3_000).unwrap();
        assert!(ev.files.is_some());
        assert_eq!(c.nodes_of(1).len(), 2);
        assert_eq!(c.step_status(1).unwrap().phase, StepPhase::Waiting);
        assert_eq!(ev.next, Some(11_000));
        let snap = c.snapshot(10_000, 500);
        let held = snap.running.iter().find(|r| r.id == JobId(1)).unwrap();
        assert_eq!(
            held.holds[0].steps,
            vec![
                Step::new(1_000, 2),
                Step::new(9_000, 4),
                Step::new(10_000, 1)
            ]
        );
        c.finish(2, |r| r.state = batch_proto::JobState::Completed);
        let ev = c.evolve(1, 10_300, 3_000).unwrap();
        assert!(ev.files.is_some());
        assert_eq!(c.nodes_of(1), &[0, 1, 2, 3]);
        assert_eq!(c.step_status(1).unwrap().phase, StepPhase::Running);
    }

    #[test]
    fn a_restarted_daemon_keeps_the_first_node_first_and_applies_the_saved_choice() {
        let mut c = cluster(2);
        c.evolve(1, 10_000, 3_000).unwrap();
        c.choose_release(
            1,
            &["debug002".into(), "debug005".into(), "debug006".into()],
            18_000,
        )
        .unwrap();
        let files = c.job_files(1).unwrap();
        let rec = c.jobs[&1].rec.clone();
        // A new daemon: the record's host list is sorted; the node file has the order.
        let mut fresh = cluster(2);
        fresh.finish(1, |_| {});
        let mut rec2 = rec.clone();
        rec2.id = 3;
        let saved = Saved {
            nodes: Some(vec![
                "debug006".into(),
                "debug001".into(),
                "debug002".into(),
                "debug005".into(),
            ]),
            progress: files.progress.clone(),
        };
        fresh.adopt(rec2, PathBuf::from("/j3"), saved).unwrap();
        assert_eq!(fresh.nodes_of(3), &[5, 0, 1, 4]);
        fresh.evolve(3, 20_000, 3_000).unwrap();
        assert_eq!(fresh.nodes_of(3), &[0]);
    }

    #[test]
    fn after_a_crash_between_node_file_and_record_the_node_file_wins() {
        // The record still lists the four nodes of step 2; the job was shrunk to debug001 and
        // its node file says so; debug002 already went to another job.
        let mut c = cluster(2);
        c.evolve(1, 10_000, 3_000).unwrap();
        let rec = c.jobs[&1].rec.clone();
        assert_eq!(rec.node_list.as_deref(), Some("debug[001-002,005-006]"));
        let mut fresh = cluster(2);
        fresh.finish(1, |_| {});
        let mut other = JobRecord::submitted(
            9,
            1,
            1,
            "u",
            batch_proto::JobSpec::new("#!/bin/sh\n", "/tmp", 1, 100_000),
            0,
        );
        other.state = batch_proto::JobState::Running;
        other.start = Some(20_000);
        other.pool = Some("debug".into());
        other.node_list = Some("debug002".into());
        fresh
            .adopt(other, PathBuf::new(), Saved::default())
            .unwrap();
        let mut rec3 = rec;
        rec3.id = 3;
        let saved = Saved {
            nodes: Some(vec!["debug001".into()]),
            progress: Some(Progress {
                step: 2,
                chosen: vec![],
            }),
        };
        fresh.adopt(rec3, PathBuf::new(), saved).unwrap();
        assert_eq!(fresh.nodes_of(3), &[0]);
        assert_eq!(fresh.jobs[&3].rec.node_list.as_deref(), Some("debug001"));
        let ev = fresh.evolve(3, 21_000, 3_000).unwrap();
        assert!(!ev.freed && ev.record.is_none());
    }

    #[test]
    fn the_step_file_is_sh_assignments_with_every_key() {
        let st = StepStatus {
            index: 2,
            count: 3,
            nodes: 4,
            phase: StepPhase::Releasing,
            ends: 77,
            next_nodes: Some(1),
            chosen_release: None,
        };
        let t = step_text(7, &st, "debug[001-004]", "debug[002-004]");
        assert!(t.contains("\nESCHED_STEP=2\n"));
        assert!(t.contains("\nESCHED_STEP_STATE=releasing\n"));
        assert!(t.contains("\nESCHED_RELEASE_COUNT=3\n"));
        assert!(t.contains("\nESCHED_RELEASE_DEFAULT=debug[002-004]\n"));
        assert!(t.contains("\nESCHED_RELEASE_CHOSEN=\n"));
        for line in t.lines().filter(|l| !l.starts_with('#')) {
            let (k, v) = line.split_once('=').unwrap();
            assert!(k.chars().all(|c| c.is_ascii_uppercase() || c == '_'), "{k}");
            assert!(!v.contains(char::is_whitespace), "{v}");
        }
    }
}
