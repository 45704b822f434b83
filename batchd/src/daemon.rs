//! The daemon's shared state and the operations every part uses: finishing a job, kicking the
//! scheduler, looking up user names.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use batch_proto::JobState;
use tokio::sync::Notify;

use crate::config::Config;
use crate::core::Core;
use crate::launch::{now_ms, Outcome, Status};
use crate::policy::{BoxedPolicy, InForce};
use crate::record::JobRecord;
use crate::store::Store;
use crate::sync::lock;

/// Settings that a reconfigure may change.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The config in force.
    pub config: Config,
    /// The file it came from (`None`: the embedded default).
    pub config_path: Option<PathBuf>,
    /// The supervisor program.
    pub supervisor: PathBuf,
}

/// Everything the tasks of one daemon share.
pub struct Daemon {
    /// Jobs and nodes.
    pub core: Mutex<Core>,
    /// The database.
    pub store: Store,
    /// The policy in force (called on a blocking thread); swapped whole by a reconfigure,
    /// never waiting for the old host's lock.
    pub policy: RwLock<InForce>,
    /// Settings.
    pub settings: RwLock<Settings>,
    /// Wakes the scheduler loop.
    pub kick: Notify,
    /// Wakes evolving jobs waiting for nodes.
    pub freed: Notify,
    /// The state directory.
    pub state_dir: PathBuf,
    /// The daemon's effective uid.
    pub euid: u32,
    /// Open CooRM launcher sessions.
    pub sessions: crate::sessions::Sessions,
    /// `--test-only` plans running (a stuck one holds its slot until its thread returns).
    pub test_only_slots: Arc<tokio::sync::Semaphore>,
    /// `--test-only` plans abandoned at the time budget since the start.
    pub test_only_timeouts: AtomicU64,
    /// When the daemon started, ms since the epoch.
    pub started: u64,
    /// The hosts of the pools of hosts, and the link to each.
    pub links: crate::hostlink::Links,
    /// Taken while a running evolving job's kept progress (`evolve.json`) is computed and
    /// written: its follower and `erelease` both write it, and the later write must not be
    /// the older state (a chosen release lost at a restart).
    pub progress_writes: tokio::sync::Mutex<()>,
    /// Connections relayed from the hosts' batchd sockets, to the server.
    pub relay: tokio::sync::mpsc::UnboundedSender<crate::hostlink::Relayed>,
    relayed: Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<crate::hostlink::Relayed>>>,
    users: Mutex<HashMap<u32, String>>,
    /// The Slurm allocation each pool of `[pool.slurm]` stands on now, by pool
    /// ([`crate::slurm`]); kept in the state directory's `slurm.json`.
    pub allocations: Mutex<std::collections::BTreeMap<String, crate::slurm::Allocation>>,
    /// Taken while a job's sibling allocations are brought in line with its nodes
    /// ([`crate::allocations::settle`]).
    pub settling: tokio::sync::Mutex<()>,
    /// Counters and timings for `econtrol show stats` and the metrics endpoint.
    pub stats: crate::stats::Stats,
}

/// `--test-only` plans that may run at once: each is a fresh policy instance planning the whole
/// queue on a blocking thread, and one that never ends keeps its thread, so the cap bounds the
/// threads a user can leave stuck.
pub const TEST_ONLY_SLOTS: usize = 4;

impl Daemon {
    /// Runs `act` on running job `id` until it succeeds: a job started a moment ago may not have
    /// its supervisor's pid file yet, so short retries (2 s in all) cover the supervisor's start.
    /// A job that ends meanwhile needs nothing more. The last error when none succeeded.
    pub async fn while_starting(
        &self,
        id: u64,
        mut act: impl FnMut() -> Result<(), String>,
    ) -> Result<(), String> {
        let mut last = String::new();
        for _ in 0..50 {
            match act() {
                Ok(()) => return Ok(()),
                Err(e) => last = e,
            }
            if self.core().job(id).is_none() {
                return Ok(());
            }
            tokio::time::sleep(std::time::Duration::from_millis(40)).await;
        }
        Err(last)
    }

    /// A daemon over loaded state.
    pub fn new(
        core: Core,
        store: Store,
        policy: BoxedPolicy,
        settings: Settings,
        state_dir: PathBuf,
        links: crate::hostlink::Links,
        allocations: std::collections::BTreeMap<String, crate::slurm::Allocation>,
    ) -> Daemon {
        let started = now_ms();
        let (relay, relayed) = tokio::sync::mpsc::unbounded_channel();
        Daemon {
            core: Mutex::new(core),
            store,
            policy: RwLock::new(InForce::new(policy, started)),
            settings: RwLock::new(settings),
            kick: Notify::new(),
            freed: Notify::new(),
            state_dir,
            euid: nix::unistd::geteuid().as_raw(),
            sessions: Default::default(),
            test_only_slots: Arc::new(tokio::sync::Semaphore::new(TEST_ONLY_SLOTS)),
            test_only_timeouts: AtomicU64::new(0),
            started,
            links,
            progress_writes: tokio::sync::Mutex::new(()),
            relay,
            relayed: Mutex::new(Some(relayed)),
            users: Mutex::new(HashMap::new()),
            allocations: Mutex::new(allocations),
            settling: tokio::sync::Mutex::new(()),
            stats: crate::stats::Stats::default(),
        }
    }

    /// The allocation pool `pool` stands on, and its `[pool.slurm]`, when it is a Slurm pool
    /// holding one.
    pub fn allocation(
        &self,
        pool: &str,
    ) -> Option<(crate::slurm::Allocation, crate::config::SlurmConfig)> {
        let cfg = self
            .settings()
            .config
            .pools
            .iter()
            .find(|p| p.name == pool)
            .and_then(|p| p.slurm.clone())?;
        let alloc = crate::sync::lock(&self.allocations).get(pool).cloned()?;
        Some((alloc, cfg))
    }

    /// The Slurm allocation of each part of job `id` that runs in one (the job's pool, or
    /// its components' pools), with its pool's `[pool.slurm]`.
    pub fn slurm_allocations_of(&self, id: u64) -> Vec<(crate::config::SlurmConfig, u64)> {
        self.slurm_pools_of(id)
            .iter()
            .filter_map(|p| self.allocation(p))
            .flat_map(|(a, cfg)| {
                let siblings: Vec<u64> = a
                    .siblings
                    .iter()
                    .filter(|s| s.job == id)
                    .map(|s| s.id)
                    .collect();
                std::iter::once(a.id)
                    .chain(siblings)
                    .map(move |x| (cfg.clone(), x))
            })
            .collect()
    }

    /// The Slurm job id of the allocation node `node` of pool `pool` is in for job `id`.
    pub fn allocation_of_node(&self, pool: &str, node: &str, id: u64) -> Option<u64> {
        crate::sync::lock(&self.allocations)
            .get(pool)
            .and_then(|a| a.of_node(node, id))
    }

    /// Job `id`'s Slurm allocations, as `econtrol show job` shows them: the pool's, then each
    /// sibling with its nodes (`7,9(n4)`); `None` for a job in no Slurm pool.
    pub fn slurm_allocations_text(&self, id: u64) -> Option<String> {
        let pools = self.slurm_pools_of(id);
        let held = crate::sync::lock(&self.allocations);
        let parts: Vec<String> = pools
            .iter()
            .filter_map(|p| held.get(p))
            .flat_map(|a| {
                std::iter::once(a.id.to_string()).chain(
                    a.siblings.iter().filter(|s| s.job == id).map(|s| {
                        format!("{}({})", s.id, batch_proto::hostlist::compress(&s.nodes))
                    }),
                )
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join(","))
    }

    /// The pools of running job `id` (its pool, or its components' pools) that are Slurm
    /// pools holding an allocation.
    pub fn slurm_pools_of(&self, id: u64) -> Vec<String> {
        let parts = self.core().parts_of(id);
        parts
            .into_iter()
            .map(|(p, _)| p)
            .filter(|p| self.allocation(p).is_some())
            .collect()
    }

    /// The receiving end of [`Daemon::relay`], for the server (once).
    pub fn take_relayed(
        &self,
    ) -> Option<tokio::sync::mpsc::UnboundedReceiver<crate::hostlink::Relayed>> {
        lock(&self.relayed).take()
    }

    /// The core state, locked.
    pub fn core(&self) -> MutexGuard<'_, Core> {
        lock(&self.core)
    }

    /// The settings in force.
    pub fn settings(&self) -> Settings {
        self.settings
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The policy in force.
    pub fn policy(&self) -> InForce {
        self.policy
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Puts `policy` in force. The old host is not locked: a call still running on it ends
    /// on its own, and the host goes with it.
    pub fn set_policy(&self, policy: InForce) {
        *self.policy.write().unwrap_or_else(|p| p.into_inner()) = policy;
    }

    /// The name of the policy in force.
    pub fn policy_name(&self) -> String {
        self.policy().share.name().to_string()
    }

    /// Asks for a policy run.
    pub fn reschedule(&self) {
        self.kick.notify_one();
    }

    /// Nodes went back to the pool: a policy run may start jobs on them, and an evolving job
    /// owed nodes may take them.
    pub fn nodes_freed(&self) {
        self.reschedule();
        self.freed.notify_waiters();
    }

    /// The link to the host running job `id`'s batch script and the run it is, when the job
    /// runs in a pool of hosts (`None`: on this machine, or not running).
    pub fn remote(&self, id: u64) -> Option<(Arc<crate::hostlink::HostLink>, crate::agent::RunId)> {
        self.remote_parts(id).into_iter().next()
    }

    /// The hosts running job `id`, one per part, in component order: the first host of each
    /// component of a co-allocated job on pools of hosts (each runs its component), the first
    /// host of any other job on a pool of hosts; empty for a job on this machine. A component
    /// on a pool of virtual nodes has no part.
    pub fn remote_parts(
        &self,
        id: u64,
    ) -> Vec<(Arc<crate::hostlink::HostLink>, crate::agent::RunId)> {
        let (firsts, run) = {
            let core = self.core();
            let Some(a) = core.job(id).filter(|a| a.run.is_some()) else {
                return Vec::new();
            };
            let components = core.components_of(id);
            let firsts: Vec<(String, String)> = if components.is_empty() {
                match (&a.rec.pool, core.batch_node(id)) {
                    (Some(p), Some(first)) => vec![(p.clone(), first)],
                    _ => Vec::new(),
                }
            } else {
                components
                    .into_iter()
                    .filter_map(|(p, nodes)| Some((p, nodes.first()?.clone())))
                    .collect()
            };
            (firsts, a.rec.restarts)
        };
        firsts
            .into_iter()
            .filter(|(pool, _)| self.links.is_remote(pool))
            .filter_map(|(_, host)| {
                let link = self.links.of_host(&host)?;
                Some((Arc::clone(link), crate::agent::RunId { job: id, run }))
            })
            .collect()
    }

    /// The directory of job `id`.
    pub fn job_dir(&self, id: u64) -> PathBuf {
        self.state_dir.join("jobs").join(id.to_string())
    }

    /// The name of user `uid` (the number as text when it has none).
    pub fn user_name(&self, uid: u32) -> String {
        if let Some(n) = lock(&self.users).get(&uid) {
            return n.clone();
        }
        let name = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
            .ok()
            .flatten()
            .map_or_else(|| uid.to_string(), |u| u.name);
        lock(&self.users).insert(uid, name.clone());
        name
    }

    /// [`Daemon::job_ended`] of run `run` only: nothing when the job is no longer running,
    /// or runs again (requeued) with another run number.
    pub async fn job_ended_run(&self, run: crate::agent::RunId, status: Option<Status>) {
        let current = self
            .core()
            .job(run.job)
            .is_some_and(|a| a.run.is_some() && a.rec.restarts == run.run);
        if current {
            self.job_ended(run.job, status).await;
        }
    }

    /// Records the end of running job `id` as the supervisor reported it, stores it, removes
    /// the job's directory and asks for a policy run.
    pub async fn job_ended(&self, id: u64, status: Option<Status>) {
        // Whatever parts of it on hosts were seen ended belong to this run; its steps' parts
        // on other hosts go with it.
        self.links.forget_parts(id);
        self.links
            .signal_parts(id, None, nix::sys::signal::Signal::SIGKILL as i32);
        // A requeued job runs again with its id, so in the same directory: the old run's goes
        // before the job is queued again, or it could be removed under the new run's feet.
        let coming = self.core().will_requeue(id);
        let dir_removed = coming && self.remove_job_dir(id);
        let (rec, requeued) = {
            let mut core = self.core();
            // A requeue decided since (rare): its directory goes now, still before the queue.
            if !dir_removed && core.will_requeue(id) {
                self.remove_job_dir(id);
            }
            let preempted = core.take_preempted(id);
            let by_hand = core.take_requeue(id);
            let rec = core.finish(id, |r| {
                apply_status(r, status.as_ref());
                // Killed by the policy, or for a node gone down: whatever the process said,
                // that is how the job ended.
                if let Some(why) = &preempted {
                    r.state = if r.spec.node_failed {
                        JobState::NodeFail
                    } else {
                        JobState::Preempted
                    };
                    r.detail = Some(why.clone());
                }
            });
            match (rec, preempted, by_hand) {
                // `econtrol requeue` asked for it, whatever ended the job meanwhile.
                (Some(mut rec), _, Some(held)) => {
                    rec.held = held;
                    (Some(core.requeue(rec, "econtrol requeue".into())), true)
                }
                (Some(rec), Some(why), None) if rec.spec.requeue => {
                    (Some(core.requeue(rec, why)), true)
                }
                (rec, _, _) => (rec, false),
            }
        };
        let Some(rec) = rec else { return };
        let mail = self.settings().config.mail_program;
        if requeued {
            crate::mail::notify(mail.as_deref(), &rec, crate::mail::Event::Requeue);
            tracing::info!(job = id, "job requeued");
            self.nodes_freed();
            if let Err(e) = self.store.commit(rec).await {
                tracing::error!(job = id, "cannot store the requeue: {e}");
            }
            return;
        }
        tracing::info!(job = id, state = %rec.state, exit = ?rec.exit_code, signal = ?rec.signal, "job ended");
        self.stats.ended(rec.state);
        crate::mail::notify(mail.as_deref(), &rec, crate::mail::Event::End);
        self.nodes_freed();
        match self.store.commit(rec).await {
            Ok(()) => {
                if let Err(e) = std::fs::remove_dir_all(self.job_dir(id)) {
                    tracing::debug!(job = id, "cannot remove job directory: {e}");
                }
            }
            // The directory keeps the status file, so a restart records the end again.
            Err(e) => tracing::error!(job = id, "cannot store the end of the job: {e}"),
        }
    }

    /// Removes job `id`'s directory; whether it is gone.
    fn remove_job_dir(&self, id: u64) -> bool {
        match std::fs::remove_dir_all(self.job_dir(id)) {
            Ok(()) => true,
            Err(e) => {
                tracing::debug!(job = id, "cannot remove job directory: {e}");
                e.kind() == std::io::ErrorKind::NotFound
            }
        }
    }

    /// Ends a job that never ran (cancelled while pending, rejected by the policy).
    pub async fn end_pending(
        &self,
        id: u64,
        state: JobState,
        detail: Option<String>,
    ) -> Result<Option<JobRecord>, crate::store::StoreError> {
        let rec = self.core().finish(id, |r| {
            r.state = state;
            r.end = Some(now_ms());
            if detail.is_some() {
                r.detail = detail;
            }
        });
        if let Some(r) = &rec {
            self.stats.ended(r.state);
            self.store.commit(r.clone()).await?;
        }
        Ok(rec)
    }
}

/// Sets a record's final fields from the supervisor's status (`None`: no status was left).
pub fn apply_status(r: &mut JobRecord, status: Option<&Status>) {
    match status {
        None => {
            r.state = JobState::Failed;
            r.end = Some(now_ms());
            r.detail = Some("the job's supervisor ended without recording an exit status".into());
        }
        Some(s) => {
            r.end = Some(s.end_ms.max(r.start.unwrap_or(0)));
            r.exit_code = Some(s.exit_code);
            r.signal = Some(s.signal);
            r.state = match s.outcome {
                Outcome::Timeout => JobState::Timeout,
                Outcome::Cancelled => JobState::Cancelled,
                Outcome::StartFailed | Outcome::Lost => JobState::Failed,
                Outcome::Exited if s.exit_code == 0 && s.signal == 0 => JobState::Completed,
                Outcome::Exited => JobState::Failed,
            };
            if s.detail.is_some() {
                r.detail = s.detail.clone();
            }
            if s.outcome != Outcome::StartFailed {
                // Listed first, as sacct lists a job's batch step.
                let batch = batch_step(r, s);
                r.steps.insert(0, batch);
            }
        }
    }
    end_steps(r);
}

/// Job `r`'s batch step, ended as `s` says: the script on the job's first node, with what its
/// processes used. Its state is the job's, but a job stopped at its limit or by a cancel has
/// its batch step CANCELLED, as sacct shows it.
fn batch_step(r: &JobRecord, s: &Status) -> batch_proto::JobStep {
    let first = r.first_node();
    batch_proto::JobStep {
        id: batch_proto::StepId::Batch,
        name: "batch".into(),
        state: match r.state {
            JobState::Timeout | JobState::Cancelled | JobState::Preempted => JobState::Cancelled,
            s => s,
        },
        start: r.start.unwrap_or(s.end_ms),
        end: Some(s.end_ms.max(r.start.unwrap_or(0))),
        node_list: first,
        nodes: 1,
        tasks: 1,
        cpus_per_task: r
            .spec
            .resources
            .as_ref()
            .map_or(1, |x| x.cpus_per_task.unwrap_or(1).max(1)),
        exit_code: Some(s.exit_code),
        signal: Some(s.signal),
        // The supervisor measures every process the script waited for, `erun`'s tasks
        // included; those are the steps' own, so the batch step keeps the rest, as slurmstepd
        // counts a batch step apart from its srun steps.
        usage: s.usage.map(|u| {
            let steps = r
                .steps
                .iter()
                .filter_map(|x| x.usage)
                .fold(batch_proto::Usage::default(), batch_proto::Usage::merge);
            batch_proto::Usage {
                max_rss_kib: u.max_rss_kib,
                user_ms: u.user_ms.saturating_sub(steps.user_ms),
                system_ms: u.system_ms.saturating_sub(steps.system_ms),
            }
        }),
    }
}

/// The steps of ended job `r` that did not report their end (their `erun` was killed with
/// the job): CANCELLED at the job's end.
fn end_steps(r: &mut JobRecord) {
    let end = r.end;
    for s in r.steps.iter_mut().filter(|s| s.state == JobState::Running) {
        s.state = JobState::Cancelled;
        s.end = end;
    }
}
