//! The daemon's in-memory state: active jobs, node allocation, the latest plan's expected
//! starts, and every transition of them (start, adopt, finish, an evolving job's resize in
//! [`evolving`], the files a job reads in [`job_files`]). Everything here is synchronous,
//! quick and pure: no file, process, signal, clock or async runtime, and no knowledge of the
//! daemon that holds it. Callers hold the lock briefly and do the I/O (database, files,
//! processes) outside it, from what these methods return.
//!
//! Layer 3 of batchd (see ARCHITECTURE.md, "Architecture invariant: batchd in layers";
//! `scripts/check-layers.sh` keeps it so).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;

use batch_proto::{hostlist, DepKind, Dependency, JobShape, JobState, PendingReason};
use sched_core::nodemap::{NodeId, NodeMap};
use sched_core::{
    CoAllocated, Component, Evolving, JobId, MoldConfig, Moldable, Pending, Pool, PoolId,
    PoolSteps, RNone, Request, Rigid, Running, Shape,
};

use crate::convert::ToCore;
use crate::evorun::{EvoRun, Saved};
use crate::record::JobRecord;

pub mod coorm;
pub mod evolving;
pub mod job_files;
pub mod plan;
pub mod submit;

pub use evolving::Evolved;
pub use job_files::JobFiles;
pub use plan::{Effects, Forget, Killed, Rejected};
pub use submit::Owner;

/// The owner, in a pool's [`NodeMap`], of the idle nodes that are out of service (DOWN or
/// drained): holding them keeps every allocation path (starts, claims, an evolving job's
/// growth) off them without each path knowing of node states. Job ids never reach it.
const OUT_OF_SERVICE: JobId = JobId(u64::MAX);

/// The id under which the `out` idle nodes out of service of pool `pool` reach a policy, as a
/// running job holding them for ever: far above any job id, and changing with `out`, so that a
/// policy that keeps running jobs by id from one call to the next (CBF's book) sees a new job
/// rather than one whose holding changed under the same id.
fn out_of_service_job(pool: usize, out: u32) -> JobId {
    JobId(u64::MAX - ((pool as u64) << 32) - u64::from(out))
}

/// The id under which the end of pool `pool`'s nodes reaches a policy, as a running job that
/// holds them from then on: below the ids of [`out_of_service_job`] (which take at most 2^32
/// per pool).
fn leaving_job(pool: usize) -> JobId {
    JobId(u64::MAX / 2 - pool as u64)
}

/// The most nodes `h` holds at any time from `t` on (an evolving job may grow after `t`).
fn held_from(h: &PoolSteps, t: u64) -> u32 {
    let mut at = h.start;
    let mut most = 0;
    for s in h.steps.iter() {
        at = at.saturating_add(s.duration);
        if at > t {
            most = most.max(s.nodes);
        }
    }
    most
}

/// One pool and which job holds each node.
#[derive(Debug)]
pub struct PoolState {
    /// The pool as it is configured (`nodes` counts every node, in service or not).
    pub pool: Pool,
    /// Which job holds which node (node IDs are indices in the pool), each job's nodes in the
    /// order it got them: the first one runs an evolving job's driver (Klein & Pérez, C4).
    pub map: NodeMap,
    /// The nodes' names when they are hosts (a pool of `hosts`), by node ID; `None`: virtual
    /// nodes named after the pool (`debug001`).
    hosts: Option<Vec<String>>,
    /// Nodes DOWN or DRAIN, and why. A held node keeps its job until the job lets it go;
    /// an idle one is held by [`OUT_OF_SERVICE`].
    conditions: BTreeMap<NodeId, batch_proto::NodeCondition>,
    /// When the pool's nodes leave, ms since the epoch (the end of the Slurm allocation it
    /// stands on); `None`: never.
    ends: Option<u64>,
}

impl PoolState {
    fn new(pool: Pool) -> Self {
        // `0..n` has no duplicate, the only error `NodeMap::new` knows.
        let map = NodeMap::new(0..pool.nodes).unwrap_or_default();
        PoolState {
            pool,
            map,
            hosts: None,
            conditions: BTreeMap::new(),
            ends: None,
        }
    }

    /// Free node count (nodes out of service are not free).
    pub fn free(&self) -> u32 {
        self.map.free_count() as u32
    }

    /// The nodes policies may plan on: every node but the idle ones out of service. A node
    /// draining under a running job counts until the job lets it go, so that what running
    /// jobs hold never exceeds the pool.
    pub fn usable(&self) -> u32 {
        self.pool.nodes - self.map.nodes_of(OUT_OF_SERVICE).len() as u32
    }

    /// The job holding node `i`.
    pub fn holder(&self, i: NodeId) -> Option<u64> {
        self.map
            .owner(i)
            .filter(|&j| j != OUT_OF_SERVICE)
            .map(|j| j.0)
    }

    /// Node `i`'s condition, when it is DOWN or DRAIN.
    pub fn condition(&self, i: NodeId) -> Option<&batch_proto::NodeCondition> {
        self.conditions.get(&i)
    }

    /// The name of node `i`.
    pub fn node_name(&self, i: NodeId) -> String {
        match &self.hosts {
            Some(h) => h.get(i as usize).cloned().unwrap_or_default(),
            None => hostlist::node_name(&self.pool.name, i, self.pool.nodes),
        }
    }

    /// The names of `nodes`, in their order.
    pub fn names(&self, nodes: &[NodeId]) -> Vec<String> {
        nodes.iter().map(|&i| self.node_name(i)).collect()
    }

    /// The node called `name` in this pool.
    pub fn node_index(&self, name: &str) -> Option<NodeId> {
        match &self.hosts {
            Some(h) => h.iter().position(|n| n == name).map(|i| i as NodeId),
            None => hostlist::node_index(&self.pool.name, name, self.pool.nodes),
        }
    }

    /// Takes every idle node that is out of service out of the free set: after any change
    /// that frees nodes or conditions.
    fn retire(&mut self) {
        let idle: Vec<NodeId> = self
            .conditions
            .keys()
            .copied()
            .filter(|&i| self.map.owner(i).is_none())
            .collect();
        // Free nodes, each once: `claim` cannot fail.
        let _ = self.map.claim(OUT_OF_SERVICE, &idle);
    }

    /// Releases every node `job` holds; those out of service stay out.
    fn release_all(&mut self, job: JobId) {
        self.map.release_all(job);
        self.retire();
    }
}

/// What a running job holds (its nodes are in its pool's [`NodeMap`]).
#[derive(Clone, Debug)]
pub struct RunState {
    /// Pool index.
    pub pool: usize,
    /// Its directory under the state directory.
    pub job_dir: PathBuf,
    /// A cancel was sent to its supervisor.
    pub cancelling: bool,
    /// Where an evolving job started with its scheduled EP is in it (`None` for every other
    /// job, an evolving one run as rigid included).
    pub evolving: Option<EvoRun>,
    /// A job's components when it spans pools or parts of pools: pool index and nodes of
    /// each, in component order (`pool` is the first one's): a co-allocated job's components,
    /// a launcher session's pools (one each). Empty for every other job.
    pub components: Vec<(usize, Vec<NodeId>)>,
}

/// An active (pending, running, completing) job.
#[derive(Clone, Debug)]
pub struct Active {
    /// The stored record.
    pub rec: JobRecord,
    /// Set once started.
    pub run: Option<RunState>,
}

/// Whether a job's dependencies allow it to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DepStatus {
    /// All hold.
    Satisfied,
    /// Some may still hold later.
    Waiting,
    /// One never can.
    Never,
}

/// What a node's new state asks of the I/O layer.
#[derive(Debug, Default)]
pub struct NodeChange {
    /// Records to store (jobs stopped for the node, claims given back).
    pub store: Vec<JobRecord>,
    /// Running jobs to stop: they ran on a node that went down.
    pub stop: Vec<u64>,
    /// Nodes came back in service: a policy run may start jobs.
    pub freed: bool,
}

/// The in-memory state.
#[derive(Debug)]
pub struct Core {
    /// Pools, in config order; `PoolId(i)` is index `i`.
    pools: Vec<PoolState>,
    /// Active jobs by id.
    jobs: BTreeMap<u64, Active>,
    /// Final state of every finished job.
    finished: HashMap<u64, JobState>,
    /// Next job id.
    next_id: u64,
    /// Expected start of pending jobs from the latest plan.
    expected: HashMap<u64, u64>,
    /// The latest plan's scheduled EP of pending evolving jobs it placed as evolving.
    expected_ep: HashMap<u64, Vec<sched_core::Step>>,
    /// The latest plan's configuration of pending moldable jobs it placed.
    expected_mold: HashMap<u64, MoldConfig>,
    /// Pending jobs that are not held, in queue order. With the next two sets, it spares the
    /// policy loop a walk over every record: at 100,000 queued jobs that walk (and a sort)
    /// at each run held the lock long enough to cut submissions to a tenth.
    queue: BTreeSet<QueueKey>,
    /// Held pending jobs, in queue order.
    held: BTreeSet<QueueKey>,
    /// Running and completing jobs.
    running: BTreeSet<u64>,
    /// Nodes claimed by pending co-allocated jobs (KOALA's RPP claims a placement's nodes at
    /// once and holds them idle until the start deadline): pool index and nodes of each
    /// component, in component order. The nodes are the job's in their pools' maps, so no
    /// other job gets them; `einfo` shows them reserved.
    claims: HashMap<u64, Vec<(usize, Vec<NodeId>)>>,
    /// Running jobs the policy killed, with its reason: their end is PREEMPTED (or a requeue).
    preempted: HashMap<u64, String>,
    /// Running jobs `econtrol requeue` is stopping: at their end they are pending again with
    /// their id (held if the value is true, `requeuehold`).
    requeues: HashMap<u64, bool>,
    /// The latest plan's views (CooRM's CAPs), by job: what `eview` shows and launchers are
    /// sent.
    views: HashMap<u64, coorm::JobView>,
    /// Active launcher sessions' jobs (a handful): whether one waits decides the fair-start
    /// delay of every end, without a walk over the queue.
    sessions: BTreeSet<u64>,
    /// `[coorm] fair_start_ms`.
    fair_start_ms: u64,
    /// Nodes ends freed while a launcher session waited, kept from the policy until the end
    /// of their fair-start delay (see [`coorm::FairStart`]).
    fair_starts: Vec<coorm::FairStart>,
    /// The latest plan and the snapshot it was made on, kept (two reference counts, nothing
    /// copied) so that `eview` of a job without a launcher's view can compute one when asked
    /// ([`coorm::planned_view`]); forgotten with the expected starts.
    last_plan: Option<(
        std::sync::Arc<SnapshotData>,
        std::sync::Arc<sched_core::Plan>,
    )>,
}

/// Queue order: higher priority first, then lower id.
pub(crate) type QueueKey = (std::cmp::Reverse<i64>, u64);

/// The data of one policy call, owned so the call can run on another thread.
#[derive(Clone, Debug, Default)]
pub struct SnapshotData {
    /// The present.
    pub now: u64,
    /// Pools.
    pub pools: Vec<Pool>,
    /// Running jobs.
    pub running: Vec<Running>,
    /// Eligible pending jobs, in queue order.
    pub pending: Vec<Pending>,
}

impl SnapshotData {
    /// The borrowed view policies take.
    pub fn view(&self) -> sched_core::Snapshot<'_> {
        sched_core::Snapshot {
            now: self.now,
            pools: &self.pools,
            running: &self.running,
            pending: &self.pending,
        }
    }
}

pub(crate) fn queue_key(r: &JobRecord) -> QueueKey {
    (std::cmp::Reverse(r.spec.priority), r.id)
}

impl Core {
    /// An empty state over `pools`, `(name, node count)` in config order.
    pub fn new<'a>(pools: impl IntoIterator<Item = (&'a str, u32)>) -> Core {
        Core {
            pools: pools
                .into_iter()
                .enumerate()
                .map(|(i, (name, nodes))| {
                    PoolState::new(Pool {
                        id: PoolId(i as u32),
                        name: name.into(),
                        nodes,
                    })
                })
                .collect(),
            jobs: BTreeMap::new(),
            finished: HashMap::new(),
            next_id: 1,
            expected: HashMap::new(),
            expected_ep: HashMap::new(),
            expected_mold: HashMap::new(),
            queue: BTreeSet::new(),
            held: BTreeSet::new(),
            running: BTreeSet::new(),
            claims: HashMap::new(),
            preempted: HashMap::new(),
            requeues: HashMap::new(),
            views: HashMap::new(),
            sessions: BTreeSet::new(),
            fair_start_ms: 0,
            fair_starts: Vec::new(),
            last_plan: None,
        }
    }

    /// Names pool `pool`'s nodes after `hosts` (one per node, in node-ID order): a pool of
    /// hosts. Ignored when the count differs from the pool's.
    pub fn name_hosts(&mut self, pool: usize, hosts: Vec<String>) {
        if let Some(p) = self.pools.get_mut(pool) {
            if hosts.len() == p.pool.nodes as usize {
                p.hosts = Some(hosts);
            }
        }
    }

    /// Sets when pool `pool`'s nodes leave (`None`: never): no job is planned to hold one
    /// beyond.
    pub fn set_pool_end(&mut self, pool: usize, ends: Option<u64>) {
        if let Some(p) = self.pools.get_mut(pool) {
            p.ends = ends;
        }
    }

    /// When pool `pool`'s nodes leave, ms since the epoch.
    pub fn pool_end(&self, pool: usize) -> Option<u64> {
        self.pools.get(pool).and_then(|p| p.ends)
    }

    /// Every node out of service or leaving it, by name: what outlives a restart.
    pub fn node_conditions(&self) -> Vec<(String, batch_proto::NodeCondition)> {
        self.pools
            .iter()
            .flat_map(|p| {
                p.conditions
                    .iter()
                    .map(|(&i, c)| (p.node_name(i), c.clone()))
            })
            .collect()
    }

    /// The pool and ID of the node called `name`.
    pub fn find_node(&self, name: &str) -> Option<(usize, NodeId)> {
        self.pools
            .iter()
            .enumerate()
            .find_map(|(p, pool)| pool.node_index(name).map(|i| (p, i)))
    }

    /// Sets node `name` DOWN or DRAIN (`Some`, with why) or back in service (`None`). A job
    /// running on a node set DOWN is stopped as a node failure ([`Core::node_fail`]) and a
    /// claim on it given back; the records to store and the running jobs to stop are
    /// returned. Setting DRAIN over DOWN keeps it down (scontrol's DRAIN on a DOWN node).
    pub fn set_node_condition(
        &mut self,
        name: &str,
        condition: Option<batch_proto::NodeCondition>,
    ) -> Result<NodeChange, String> {
        let (p, i) = self
            .find_node(name)
            .ok_or_else(|| format!("no node called {name}"))?;
        let mut change = NodeChange::default();
        let pool = &mut self.pools[p];
        match condition {
            None => {
                if pool.conditions.remove(&i).is_some() {
                    pool.map.release_all(OUT_OF_SERVICE);
                    pool.retire();
                    change.freed = true;
                }
                return Ok(change);
            }
            Some(c) => {
                let down = c.down;
                pool.conditions.insert(i, c);
                let holder = pool.holder(i);
                pool.retire();
                let Some(job) = holder else {
                    return Ok(change);
                };
                // A claim (a co-allocated job waiting for its start deadline) lets go of a node
                // leaving service, drained or down: the job is placed again.
                if self.claims.contains_key(&job) {
                    change.store.extend(self.unclaim(job));
                    return Ok(change);
                }
                if !down {
                    return Ok(change);
                }
                let why = format!("node {name} is down");
                if let Some(rec) = self.node_fail(job, why) {
                    change.store.push(rec);
                    change.stop.push(job);
                }
            }
        }
        Ok(change)
    }

    /// Stops running job `id` because a node of it went down: as a preemption
    /// ([`Core::preempt`]: its nodes are given back at once, those out of service stay out),
    /// but its end is NODE_FAIL, or a requeue for a job submitted with `--requeue`.
    pub fn node_fail(&mut self, id: u64, why: String) -> Option<JobRecord> {
        if self.preempted.contains_key(&id) {
            return None;
        }
        if let Some(a) = self.jobs.get_mut(&id) {
            a.rec.spec.node_failed = true;
        }
        let rec = self.preempt(id, why);
        if rec.is_none() {
            if let Some(a) = self.jobs.get_mut(&id) {
                a.rec.spec.node_failed = false;
            }
        }
        rec
    }

    /// The nodes running job `id` holds, in the order it got them.
    pub fn nodes_of(&self, id: u64) -> &[NodeId] {
        let Some(run) = self.jobs.get(&id).and_then(|a| a.run.as_ref()) else {
            return &[];
        };
        self.pools
            .get(run.pool)
            .map_or(&[], |p| p.map.nodes_of(JobId(id)))
    }

    /// The node running job `id`'s batch script: the first node it got (its pool's node map
    /// keeps the order), else, once it holds none (stopped, its nodes given back), its
    /// record's first.
    pub fn batch_node(&self, id: u64) -> Option<String> {
        let a = self.jobs.get(&id)?;
        let run = a.run.as_ref()?;
        let first = self
            .nodes_of(id)
            .first()
            .and_then(|&n| Some(self.pools.get(run.pool)?.node_name(n)));
        Some(first.unwrap_or_else(|| a.rec.first_node()))
    }

    /// Index of the pool called `name`.
    pub fn pool_index(&self, name: &str) -> Option<usize> {
        self.pools.iter().position(|p| p.pool.name == name)
    }

    /// The state of job `id`, active or finished.
    pub fn state_of(&self, id: u64) -> Option<JobState> {
        self.jobs
            .get(&id)
            .map(|a| a.rec.state)
            .or_else(|| self.finished.get(&id).copied())
    }

    /// Pools, in config order; `PoolId(i)` is index `i`.
    pub fn pools(&self) -> &[PoolState] {
        &self.pools
    }

    /// Active job `id`.
    pub fn job(&self, id: u64) -> Option<&Active> {
        self.jobs.get(&id)
    }

    /// Active jobs by id.
    pub fn jobs(&self) -> &BTreeMap<u64, Active> {
        &self.jobs
    }

    /// Whether pending job `id` holds claimed nodes.
    pub fn is_claimed(&self, id: u64) -> bool {
        self.claims.contains_key(&id)
    }

    /// The latest plan's expected start of pending job `id`.
    pub fn expected_start(&self, id: u64) -> Option<u64> {
        self.expected.get(&id).copied()
    }

    /// The latest plan's scheduled EP of pending evolving job `id`.
    pub fn expected_ep(&self, id: u64) -> Option<&[sched_core::Step]> {
        self.expected_ep.get(&id).map(Vec::as_slice)
    }

    /// The latest plan's configuration of pending moldable job `id`.
    pub fn expected_mold(&self, id: u64) -> Option<MoldConfig> {
        self.expected_mold.get(&id).copied()
    }

    /// The latest plan's view (CooRM's CAPs) of job `id`.
    pub fn view_of(&self, id: u64) -> Option<&coorm::JobView> {
        self.views.get(&id)
    }

    /// Keeps the latest plan's views (see [`coorm::views_of`]).
    pub fn set_views(&mut self, views: HashMap<u64, coorm::JobView>) {
        self.views = views;
    }

    /// Why the policy killed running job `id`, if it did (it ends PREEMPTED or requeued).
    pub fn preempted_why(&self, id: u64) -> Option<&str> {
        self.preempted.get(&id).map(String::as_str)
    }

    /// Forgets that the policy killed job `id` (it has just ended); the reason if it did.
    pub fn take_preempted(&mut self, id: u64) -> Option<String> {
        self.preempted.remove(&id)
    }

    /// Whether running job `id` is being requeued by hand ([`Core::start_requeue`]).
    pub fn is_requeuing(&self, id: u64) -> bool {
        self.requeues.contains_key(&id)
    }

    /// Whether job `id`, once it ends, goes back to the queue with its id: a requeue by hand
    /// is on its way, or the policy killed it and it asked to be requeued (`--requeue`).
    pub fn will_requeue(&self, id: u64) -> bool {
        self.is_requeuing(id)
            || (self.preempted.contains_key(&id)
                && self.jobs.get(&id).is_some_and(|a| a.rec.spec.requeue))
    }

    /// Starts the cancel of running job `id`: a requeue by hand on its way is dropped (the job
    /// ends CANCELLED), the job is COMPLETING while its supervisor stops it. Returns its record
    /// to store and whether it must be told to stop (not when a cancel is on its way already).
    pub fn start_cancel(&mut self, id: u64) -> Option<(JobRecord, bool)> {
        self.drop_requeue(id);
        let a = self.jobs.get_mut(&id)?;
        let already = a.run.as_ref().is_some_and(|r| r.cancelling);
        if let Some(run) = a.run.as_mut() {
            run.cancelling = true;
        }
        a.rec.state = JobState::Completing;
        Some((a.rec.clone(), !already))
    }

    /// At start-up: the id the next job gets and the final state of every finished job, as
    /// the store loaded them.
    pub fn restore_history(&mut self, next_id: u64, finished: HashMap<u64, JobState>) {
        self.next_id = next_id;
        self.finished = finished;
    }

    /// At start-up: job `id`, stored as active, is finished as `state` instead (it cannot be
    /// re-attached, or its launcher session is gone); it is not in the active set.
    pub fn restore_finished(&mut self, id: u64, state: JobState) {
        self.finished.insert(id, state);
    }

    /// At start-up: re-attached job `id` was being requeued by hand (`held` for
    /// `requeuehold`); its end still requeues it.
    pub fn restore_requeue(&mut self, id: u64, held: bool) {
        self.requeues.insert(id, held);
    }

    /// Adds a job (pending, or running with `run` set) to the active set.
    pub fn insert(&mut self, a: Active) {
        let id = a.rec.id;
        self.unindex(id);
        match (a.rec.state, a.rec.held) {
            (JobState::Pending, false) => {
                self.queue.insert(queue_key(&a.rec));
            }
            (JobState::Pending, true) => {
                self.held.insert(queue_key(&a.rec));
            }
            _ => {
                self.running.insert(id);
            }
        }
        if coorm::is_session(&a.rec) {
            self.sessions.insert(id);
        }
        self.jobs.insert(id, a);
    }

    fn unindex(&mut self, id: u64) {
        if let Some(a) = self.jobs.get(&id) {
            let k = queue_key(&a.rec);
            self.queue.remove(&k);
            self.held.remove(&k);
        }
        self.running.remove(&id);
    }

    /// Holds or releases pending job `id` (`held`), keeping the queue in order; the record as
    /// changed, to store.
    pub fn set_held(&mut self, id: u64, held: bool) -> Option<JobRecord> {
        self.update_pending(id, |r| r.held = held)
    }

    /// Replaces pending job `id`'s spec (an update, checked by the caller), keeping the queue
    /// in order; the record as changed, to store.
    pub fn replace_spec(&mut self, id: u64, spec: batch_proto::JobSpec) -> Option<JobRecord> {
        self.update_pending(id, |r| r.spec = spec)
    }

    /// Pending jobs that can no longer end by their `--deadline` (Slurm's end-by deadline) at
    /// `now`, even with their shortest time limit; and the next instant another will, for the
    /// scheduler's wake-up.
    pub fn missed_deadlines(&self, now: u64) -> (Vec<u64>, Option<u64>) {
        let mut missed = Vec::new();
        let mut next: Option<u64> = None;
        for a in self
            .jobs
            .values()
            .filter(|a| a.rec.state == JobState::Pending)
        {
            let Some(end_by) = a.rec.spec.end_by else {
                continue;
            };
            let shortest = match &a.rec.spec.shape {
                JobShape::Moldable { configs, .. } if !configs.is_empty() => {
                    configs.iter().map(|c| c.walltime).min().unwrap_or(0)
                }
                _ => a.rec.time_limit(),
            };
            // The last instant it may start and still end by the deadline.
            let last = end_by.saturating_sub(shortest);
            if now > last {
                missed.push(a.rec.id);
            } else {
                next = Some(next.map_or(last + 1, |n| n.min(last + 1)));
            }
        }
        (missed, next)
    }

    /// Sets running job `id`'s time limit to `walltime` ms from its start (`econtrol update
    /// TimeLimit=`): the plans that follow see its nodes free at the new end. A rigid or
    /// moldable job's only (an evolving job's steps are its limit); the record as changed.
    pub fn set_running_limit(&mut self, id: u64, walltime: u64) -> Option<JobRecord> {
        let a = self.jobs.get_mut(&id)?;
        if a.rec.state != JobState::Running || a.run.is_none() {
            return None;
        }
        match &mut a.rec.shape {
            Some(sched_core::Shape::Rigid { walltime: w, .. })
            | Some(sched_core::Shape::Moldable { walltime: w, .. }) => *w = walltime,
            _ => return None,
        }
        Some(a.rec.clone())
    }

    /// Changes running (or completing) job `id`'s steps with `f`, which sees the record as it
    /// was; the record as changed, to store, and what `f` said. `None` for a job that does not
    /// run (a step belongs to a run).
    pub fn change_steps<R>(
        &mut self,
        id: u64,
        f: impl FnOnce(&JobRecord, &mut Vec<batch_proto::JobStep>) -> R,
    ) -> Option<(JobRecord, R)> {
        let a = self.jobs.get_mut(&id)?;
        let runs = matches!(a.rec.state, JobState::Running | JobState::Completing);
        if !runs || a.run.is_none() {
            return None;
        }
        let mut steps = std::mem::take(&mut a.rec.steps);
        let out = f(&a.rec, &mut steps);
        a.rec.steps = steps;
        Some((a.rec.clone(), out))
    }

    /// Changes a pending job's record keeping the queue in order.
    fn update_pending(&mut self, id: u64, f: impl FnOnce(&mut JobRecord)) -> Option<JobRecord> {
        let mut a = self.jobs.get(&id)?.clone();
        f(&mut a.rec);
        let rec = a.rec.clone();
        self.insert(a);
        Some(rec)
    }

    /// Pending jobs that are not held, in queue order.
    fn queued(&self) -> impl Iterator<Item = &JobRecord> {
        self.queue
            .iter()
            .filter_map(|(_, id)| self.jobs.get(id))
            .map(|a| &a.rec)
    }

    /// Pending jobs in queue order, held ones included.
    pub fn pending_in_order(&self) -> Vec<&JobRecord> {
        let mut keys: Vec<&QueueKey> = self.queue.iter().chain(self.held.iter()).collect();
        keys.sort_unstable();
        keys.iter()
            .filter_map(|(_, id)| self.jobs.get(id))
            .map(|a| &a.rec)
            .collect()
    }

    /// Whether `rec`'s dependencies on other jobs hold (singleton is decided with the queue,
    /// see [`Core::snapshot`]).
    pub fn dep_status(&self, rec: &JobRecord) -> DepStatus {
        let mut status = DepStatus::Satisfied;
        for d in &rec.spec.dependencies {
            let Dependency::On { kind, job } = d else {
                continue;
            };
            let st = self.state_of(*job);
            let s = match (kind, st) {
                // A job that was never known (or whose record is unreadable) cannot satisfy.
                (_, None) => DepStatus::Never,
                (DepKind::After, Some(JobState::Pending)) => DepStatus::Waiting,
                (DepKind::After, Some(_)) => DepStatus::Satisfied,
                (_, Some(s)) if !s.is_finished() => DepStatus::Waiting,
                (DepKind::AfterAny, Some(_)) => DepStatus::Satisfied,
                (DepKind::AfterOk, Some(JobState::Completed)) => DepStatus::Satisfied,
                (DepKind::AfterOk, Some(_)) => DepStatus::Never,
                (DepKind::AfterNotOk, Some(JobState::Completed)) => DepStatus::Never,
                (DepKind::AfterNotOk, Some(_)) => DepStatus::Satisfied,
            };
            match s {
                DepStatus::Never => return DepStatus::Never,
                DepStatus::Waiting => status = DepStatus::Waiting,
                DepStatus::Satisfied => {}
            }
        }
        status
    }

    /// How the policy sees a waiting job. A submit time in the future (a clock that stepped
    /// back) is clamped to `now`, and `--begin` becomes the earliest start.
    pub fn pending_of(&self, rec: &JobRecord, now: u64) -> Pending {
        let submit = rec.submit.min(now);
        Pending {
            // Only launcher sessions ask for views (CooRM §III-A): nobody else pays for them.
            wants_view: coorm::is_session(rec),
            claimed: self
                .claims
                .get(&rec.id)
                .map(|c| c.iter().map(|(p, _)| PoolId(*p as u32)).collect())
                .unwrap_or_default(),
            id: JobId(rec.id),
            user: rec.uid,
            submit,
            earliest_start: rec.spec.begin.unwrap_or(0).max(submit),
            priority: rec.spec.priority,
            request: self.request_of(rec),
        }
    }

    /// The policy request for a pending job.
    pub fn request_of(&self, rec: &JobRecord) -> Request {
        let pool = rec
            .spec
            .pool
            .as_deref()
            .and_then(|n| self.pool_index(n))
            .map(|i| PoolId(i as u32));
        match &rec.spec.shape {
            JobShape::Rigid { nodes, time_limit } => Request::Rigid(Rigid {
                pool: pool.into(),
                nodes: *nodes,
                walltime: *time_limit,
            }),
            JobShape::Evolving { steps } => Request::Evolving(Evolving {
                pool: pool.into(),
                steps: steps.to_core().into(),
            }),
            JobShape::CoAllocated {
                components,
                time_limit,
            } => Request::CoAllocated(CoAllocated {
                components: components
                    .iter()
                    .map(|&nodes| Component { nodes, pool: RNone })
                    .collect(),
                walltime: *time_limit,
                deadline: rec.spec.deadline.into(),
            }),
            JobShape::Session { .. } => coorm::request_of(self, rec),
            JobShape::Moldable {
                configs,
                model,
                weight,
            } => Request::Moldable(Moldable {
                pool: pool.into(),
                configs: configs.iter().map(ToCore::to_core).collect(),
                model: model.map(|m| m.model.to_core()).into(),
                min_nodes: model.map_or(0, |m| m.min_nodes),
                max_nodes: model.map_or(0, |m| m.max_nodes),
                weight: weight.unwrap_or(1.0),
            }),
        }
    }

    /// For each `(uid, name)` of a pending singleton job, the lowest id of the pending jobs of
    /// that user and name, singleton or not (empty, and cheap, when no job is a singleton).
    fn first_pending_of_singletons(&self) -> HashMap<(u32, &str), u64> {
        let mut wanted: HashMap<(u32, &str), u64> = self
            .pending_in_order()
            .into_iter()
            .filter(|r| r.spec.dependencies.contains(&Dependency::Singleton))
            .map(|r| ((r.uid, r.spec.name.as_str()), u64::MAX))
            .collect();
        if wanted.is_empty() {
            return wanted;
        }
        for r in self.pending_in_order() {
            if let Some(first) = wanted.get_mut(&(r.uid, r.spec.name.as_str())) {
                *first = (*first).min(r.id);
            }
        }
        wanted
    }

    /// `(uid, name)` of every running job, for `singleton`.
    fn running_names(&self) -> HashSet<(u32, &str)> {
        self.running
            .iter()
            .filter_map(|id| self.jobs.get(id))
            .map(|a| (a.rec.uid, a.rec.spec.name.as_str()))
            .collect()
    }

    /// Running tasks of each throttled job array (`--array ...%N`), by array id.
    fn running_tasks(&self) -> HashMap<u64, u32> {
        let mut n = HashMap::new();
        for a in self.running.iter().filter_map(|id| self.jobs.get(id)) {
            if let Some(t) = a
                .rec
                .spec
                .array_task
                .as_deref()
                .filter(|t| t.throttle.is_some())
            {
                *n.entry(t.array_id).or_insert(0) += 1;
            }
        }
        n
    }

    /// Every pending job in queue order, whether it goes into the policy's snapshot, and the
    /// reason when something other than the queue keeps it waiting.
    ///
    /// Left out of the snapshot: held jobs, jobs whose dependencies do not hold yet (or never
    /// will), a singleton job while another job of its name and user runs or an earlier
    /// one waits, and the tasks of a throttled array beyond its throttle (running tasks and
    /// the earlier eligible ones count: the policy may start every task it is shown). Jobs with a future `--begin` go in with that `earliest_start`, so the plan
    /// gives them an expected start (`equeue --start`).
    pub fn classify(&self, now: u64) -> Vec<(&JobRecord, bool, Option<PendingReason>)> {
        self.classify_these(now, self.pending_in_order().into_iter())
    }

    fn classify_these<'a>(
        &'a self,
        now: u64,
        jobs: impl Iterator<Item = &'a JobRecord>,
    ) -> Vec<(&'a JobRecord, bool, Option<PendingReason>)> {
        let mut singles = self.running_names();
        let earlier = self.first_pending_of_singletons();
        let mut tasks = self.running_tasks();
        jobs.map(|rec| {
            if rec.held {
                return (rec, false, Some(PendingReason::Held));
            }
            match self.dep_status(rec) {
                DepStatus::Never => {
                    return (rec, false, Some(PendingReason::DependencyNeverSatisfied))
                }
                DepStatus::Waiting => return (rec, false, Some(PendingReason::Dependency)),
                DepStatus::Satisfied => {}
            }
            // Slurm's singleton: after every earlier job of the same name and user has ended,
            // running or still pending (an earlier one is one submitted before: a lower id).
            if rec.spec.dependencies.contains(&Dependency::Singleton)
                && (earlier
                    .get(&(rec.uid, rec.spec.name.as_str()))
                    .is_some_and(|&first| first < rec.id)
                    || !singles.insert((rec.uid, rec.spec.name.as_str())))
            {
                return (rec, false, Some(PendingReason::Dependency));
            }
            if let Some((array, Some(limit))) = rec
                .spec
                .array_task
                .as_deref()
                .map(|t| (t.array_id, t.throttle))
            {
                let n = tasks.entry(array).or_insert(0);
                if *n >= limit {
                    return (rec, false, Some(PendingReason::JobArrayTaskLimit));
                }
                *n += 1;
            }
            let later = rec.spec.begin.unwrap_or(0) > now;
            (rec, true, later.then_some(PendingReason::BeginTime))
        })
        .collect()
    }

    /// The snapshot for a policy call at `now` (see [`Core::classify`] for who is in it).
    pub fn snapshot(&self, now: u64, grace_ms: u64) -> SnapshotData {
        let mut running = Vec::new();
        for a in self.running.iter().filter_map(|id| self.jobs.get(id)) {
            let (Some(run), Some(shape), Some(start)) = (&a.run, &a.rec.shape, a.rec.start) else {
                continue;
            };
            // A preempted job gave its nodes away (see `Core::preempt`).
            if self.preempted.contains_key(&a.rec.id) {
                continue;
            }
            let nodes = self.nodes_of(a.rec.id).len() as u32;
            let pool = PoolId(run.pool as u32);
            let end = start.saturating_add(a.rec.time_limit());
            // Past its limit a job still holds its nodes until the supervisor has killed it:
            // count them for the grace period from now.
            let late = now.saturating_add(grace_ms.max(1_000));
            let holds = if run.components.is_empty() {
                vec![match &run.evolving {
                    _ if end <= now => PoolSteps::flat(pool, now, late, nodes),
                    Some(evo) => evo.holds(pool, start, now, nodes, late),
                    None => PoolSteps::flat(pool, start, end, nodes),
                }]
            } else {
                run.components
                    .iter()
                    .map(|(p, held)| {
                        let (p, n) = (PoolId(*p as u32), held.len() as u32);
                        if end <= now {
                            PoolSteps::flat(p, now, late, n)
                        } else {
                            PoolSteps::flat(p, start, end, n)
                        }
                    })
                    .collect()
            };
            running.push(Running {
                id: JobId(a.rec.id),
                user: a.rec.uid,
                request: self.request_of(&a.rec),
                shape: shape.clone(),
                start,
                holds: holds.into(),
                // A local job (KOALA, §2.1): a rigid job its owner bound to a pool with -p; a
                // policy that kills (the RPP under GP) may kill only these.
                killable: a.rec.spec.pool.is_some()
                    && matches!(a.rec.spec.shape, JobShape::Rigid { .. }),
            });
        }
        running.extend(self.fair_start_holds(now));
        // Held jobs never go to the policy: only the queue proper is walked.
        let pending = self
            .classify_these(now, self.queued())
            .into_iter()
            .filter(|(_, eligible, _)| *eligible)
            .map(|(rec, _, _)| self.pending_of(rec, now))
            .collect();
        // Nodes out of service are shown to the policy as held by a job without end (one per
        // pool): it plans around them, the validator refuses a plan over them, and a job
        // larger than what is in service waits for a node to come back rather than being
        // rejected as larger than the pool (a smaller pool would make policies reject it).
        for (i, p) in self.pools.iter().enumerate() {
            let out = p.pool.nodes - p.usable();
            if out == 0 {
                continue;
            }
            let pool = PoolId(i as u32);
            running.push(Running {
                id: out_of_service_job(i, out),
                user: 0,
                request: Request::Rigid(Rigid {
                    pool: sched_core::RSome(pool),
                    nodes: out,
                    walltime: sched_core::FOREVER,
                }),
                shape: Shape::Rigid {
                    pool,
                    nodes: out,
                    walltime: sched_core::FOREVER,
                },
                start: now,
                holds: vec![PoolSteps::flat(pool, now, sched_core::FOREVER, out)].into(),
                killable: false,
            });
        }
        // A pool whose nodes leave at a known time (its Slurm allocation's end) is shown as
        // held from then on by a job without end: no plan holds a node past it. What running
        // jobs still hold then (at most, from then on) is left out of it, so that the holds never
        // exceed the pool.
        for (i, p) in self.pools.iter().enumerate() {
            let Some(ends) = p.ends else { continue };
            let pool = PoolId(i as u32);
            let ends = ends.max(now);
            let still: u32 = running
                .iter()
                .flat_map(|r| r.holds.iter())
                .filter(|h| h.pool == pool)
                .map(|h| held_from(h, ends))
                .sum();
            let nodes = p.pool.nodes.saturating_sub(still);
            if nodes == 0 {
                continue;
            }
            running.push(Running {
                id: leaving_job(i),
                user: 0,
                request: Request::Rigid(Rigid {
                    pool: sched_core::RSome(pool),
                    nodes,
                    walltime: sched_core::FOREVER,
                }),
                shape: Shape::Rigid {
                    pool,
                    nodes,
                    walltime: sched_core::FOREVER,
                },
                start: ends,
                holds: vec![PoolSteps::flat(pool, ends, sched_core::FOREVER, nodes)].into(),
                killable: false,
            });
        }
        let pools = self.pools.iter().map(|p| p.pool.clone()).collect();
        SnapshotData {
            now,
            pools,
            running,
            pending,
        }
    }

    /// Every pending job in queue order with its reason: the exclusions of
    /// [`Core::classify`], then `Resources` for the first eligible job and `Priority` for the
    /// rest (Slurm's usage).
    pub fn pending_with_reasons(&self, now: u64) -> Vec<(&JobRecord, PendingReason)> {
        let mut first = true;
        self.classify(now)
            .into_iter()
            .map(|(rec, _, reason)| {
                // Claimed nodes wait idle for the job's start deadline.
                let reason = reason.or_else(|| {
                    self.claims
                        .contains_key(&rec.id)
                        .then_some(PendingReason::Reserved)
                });
                let r = reason.unwrap_or_else(|| {
                    let r = if first {
                        PendingReason::Resources
                    } else {
                        PendingReason::Priority
                    };
                    first = false;
                    r
                });
                (rec, r)
            })
            .collect()
    }

    /// The reason of pending job `id`.
    pub fn reason_of(&self, now: u64, id: u64) -> Option<PendingReason> {
        self.pending_with_reasons(now)
            .into_iter()
            .find(|(r, _)| r.id == id)
            .map(|(_, r)| r)
    }

    /// Nodes a shape needs in its pool, and the pool.
    pub fn shape_needs(shape: &Shape) -> Option<(usize, u32)> {
        match shape {
            Shape::Rigid { pool, nodes, .. } | Shape::Moldable { pool, nodes, .. } => {
                Some((pool.0 as usize, *nodes))
            }
            // An evolving job starts with its first step's nodes; `evolve` resizes it.
            Shape::Evolving { pool, steps } => {
                Some((pool.0 as usize, steps.first().map_or(0, |s| s.nodes)))
            }
            // Several pools: see `Core::start_coallocated`.
            Shape::CoAllocated { .. } => None,
        }
    }

    /// Allocates nodes and marks job `id` running with `shape` at `now`; returns its updated
    /// record, or why it cannot start now.
    pub fn start(
        &mut self,
        id: u64,
        shape: &Shape,
        now: u64,
        job_dir: PathBuf,
    ) -> Result<JobRecord, String> {
        if let Shape::CoAllocated { pools } = shape {
            // Both co-allocated kinds come as one pool per component: a launcher session's
            // job (CooRM) holds what it asked of each pool; a global job (RPP) its claims.
            if matches!(
                self.jobs.get(&id).map(|j| &j.rec.spec.shape),
                Some(JobShape::Session { .. })
            ) {
                return coorm::start(self, id, pools, now, job_dir);
            }
            return self.start_coallocated(id, pools, shape, now, job_dir);
        }
        let (pool_idx, n) =
            Self::shape_needs(shape).ok_or("co-allocated shapes are not supported by batchd")?;
        let pool = self
            .pools
            .get_mut(pool_idx)
            .ok_or("the plan names an unknown pool")?;
        let Some(job) = self.jobs.get_mut(&id) else {
            return Err("job is gone".into());
        };
        if job.rec.state != JobState::Pending || job.rec.held {
            return Err("job is no longer eligible".into());
        }
        if job.run.is_some() {
            return Err("job already holds nodes".into());
        }
        // The lowest free IDs (nodemap's interpretation of RR Alg. 1's "randomly chosen").
        let free = pool
            .map
            .grow(JobId(id), n as usize)
            .map_err(|e| format!("in {}: {e}", pool.pool.name))?;
        let names = pool.names(&free);
        job.rec.state = JobState::Running;
        job.rec.start = Some(now);
        job.rec.pool = Some(pool.pool.name.to_string());
        job.rec.nodes = n;
        job.rec.node_list = Some(hostlist::compress(&names));
        job.rec.shape = Some(shape.clone());
        let key = queue_key(&job.rec);
        job.run = Some(RunState {
            pool: pool_idx,
            job_dir,
            cancelling: false,
            evolving: EvoRun::started(&job.rec),
            components: Vec::new(),
        });
        let rec = job.rec.clone();
        self.now_running(id, &key);
        Ok(rec)
    }

    /// Moves a job that has just got its nodes from the queue to the running set, and forgets
    /// what the last plan expected of it while it waited (start, EP, configuration, view): the
    /// last step of every way a job starts (one pool, co-allocated, a CooRM session's).
    pub(crate) fn now_running(&mut self, id: u64, key: &QueueKey) {
        self.queue.remove(key);
        self.running.insert(id);
        self.expected.remove(&id);
        self.expected_ep.remove(&id);
        self.expected_mold.remove(&id);
        self.views.remove(&id);
    }

    /// Claims nodes for pending co-allocated job `id` placed on `pools` (one per component),
    /// unless it holds a claim already: the lowest free nodes of each pool, all or nothing.
    /// Returns the job's record to store when it claims anew: the record keeps the claim's
    /// pools as its shape, so that a restart claims the same pools again
    /// ([`Core::restore_claim`]) and tells the policy, new, what its predecessor claimed.
    pub fn claim(&mut self, id: u64, pools: &[PoolId]) -> Result<Option<JobRecord>, String> {
        if self.claims.contains_key(&id) {
            return Ok(None);
        }
        let Some(JobShape::CoAllocated { components, .. }) =
            self.jobs.get(&id).map(|a| &a.rec.spec.shape)
        else {
            return Err("not a pending co-allocated job".into());
        };
        if components.len() != pools.len() {
            return Err("the plan's pools do not match the components".into());
        }
        let wanted: Vec<(usize, u32)> = pools
            .iter()
            .map(|p| p.0 as usize)
            .zip(components.iter().copied())
            .collect();
        let mut got = Vec::new();
        for (p, n) in wanted {
            let grown = self
                .pools
                .get_mut(p)
                .ok_or_else(|| "the plan names an unknown pool".to_string())
                .and_then(|pool| {
                    // `grow` takes the total: several components may share a pool.
                    let holds = pool.map.nodes_of(JobId(id)).len();
                    pool.map
                        .grow(JobId(id), holds + n as usize)
                        .map_err(|e| format!("in {}: {e}", pool.pool.name))
                });
            match grown {
                Ok(nodes) => got.push((p, nodes)),
                Err(e) => {
                    self.claims.insert(id, got);
                    self.unclaim(id);
                    return Err(e);
                }
            }
        }
        self.claims.insert(id, got);
        let Some(a) = self.jobs.get_mut(&id) else {
            return Ok(None);
        };
        a.rec.shape = Some(Shape::CoAllocated {
            pools: pools.to_vec().into(),
        });
        Ok(Some(a.rec.clone()))
    }

    /// Claims again, at start-up, the nodes of pending job `id` whose stored record holds a
    /// claim's pools ([`Core::claim`]); call it once every running job has its nodes back.
    /// The nodes are the lowest free ones of those pools, not necessarily the same as
    /// before: nothing runs on claimed nodes, only their count per pool matters. Returns the
    /// record to store when the claim cannot be made again (its pools left the config, say):
    /// the claim is dropped and the policy tries the job again.
    pub fn restore_claim(&mut self, id: u64) -> Option<JobRecord> {
        let a = self.jobs.get_mut(&id)?;
        let Some(Shape::CoAllocated { pools }) = a.rec.shape.take() else {
            return None;
        };
        match self.claim(id, &pools) {
            Ok(_) => None,
            Err(why) => {
                tracing::warn!(job = id, "its claim cannot be made again ({why}); dropped");
                self.jobs.get(&id).map(|a| a.rec.clone())
            }
        }
    }

    /// Running job `id` is killed by the policy (`why`): its nodes go back to the pools at
    /// once, so that the job it was killed for starts in the same plan, at the deadline
    /// (KOALA's GP kills at the deadline and the global job starts then, RR-5815 §2.2). Its
    /// processes get the cancel's SIGTERM and, after the grace period, SIGKILL; until they
    /// are gone they share the nodes. Its end is PREEMPTED, or a requeue. Returns its record
    /// to store, marked preempted, before the start of any job placed on its nodes is stored:
    /// a restart in between must not give it those nodes back ([`Core::adopt`]).
    pub fn preempt(&mut self, id: u64, why: String) -> Option<JobRecord> {
        let a = self.jobs.get_mut(&id)?;
        let run = a.run.as_mut()?;
        let pools: Vec<usize> = std::iter::once(run.pool)
            .chain(run.components.iter().map(|c| c.0))
            .collect();
        // Being stopped, as after a cancel: a restart re-attaches it so too.
        run.cancelling = true;
        a.rec.spec.preempted = Some(why.clone());
        let rec = a.rec.clone();
        for p in pools {
            if let Some(pool) = self.pools.get_mut(p) {
                pool.release_all(JobId(id));
            }
        }
        self.preempted.insert(id, why);
        Some(rec)
    }

    /// Gives back the nodes pending job `id` claimed, if any; returns its record to store
    /// when it had a claim (the claim's pools are no longer its shape).
    pub fn unclaim(&mut self, id: u64) -> Option<JobRecord> {
        let claim = self.claims.remove(&id)?;
        for (p, _) in claim {
            if let Some(pool) = self.pools.get_mut(p) {
                pool.release_all(JobId(id));
            }
        }
        let a = self.jobs.get_mut(&id)?;
        if a.rec.state != JobState::Pending {
            return None;
        }
        a.rec.shape = None;
        Some(a.rec.clone())
    }

    /// Starts co-allocated job `id` with one component on each of `pools`: on the nodes it
    /// claimed if it did, otherwise on the lowest free ones, all components at the same
    /// instant `now`.
    fn start_coallocated(
        &mut self,
        id: u64,
        pools: &[PoolId],
        shape: &Shape,
        now: u64,
        job_dir: PathBuf,
    ) -> Result<JobRecord, String> {
        match self.jobs.get(&id) {
            None => return Err("job is gone".into()),
            Some(a) if a.rec.state != JobState::Pending || a.rec.held || a.run.is_some() => {
                return Err("job is no longer eligible".into())
            }
            Some(_) => {}
        }
        self.claim(id, pools)?;
        let components = self.claims.remove(&id).unwrap_or_default();
        let mut names = Vec::new();
        let mut pool_names: Vec<String> = Vec::new();
        for (p, nodes) in &components {
            let pool = &self.pools[*p];
            names.extend(pool.names(nodes));
            if !pool_names.iter().any(|n| n == pool.pool.name.as_str()) {
                pool_names.push(pool.pool.name.to_string());
            }
        }
        let Some(job) = self.jobs.get_mut(&id) else {
            return Err("job is gone".into());
        };
        job.rec.state = JobState::Running;
        job.rec.start = Some(now);
        // Slurm lists a job of several partitions as `a,b`.
        job.rec.pool = Some(pool_names.join(","));
        job.rec.nodes = names.len() as u32;
        job.rec.node_list = Some(hostlist::compress(&names));
        job.rec.shape = Some(shape.clone());
        let key = queue_key(&job.rec);
        job.run = Some(RunState {
            pool: components.first().map_or(0, |c| c.0),
            job_dir,
            cancelling: false,
            evolving: None,
            components,
        });
        let rec = job.rec.clone();
        self.now_running(id, &key);
        Ok(rec)
    }

    /// Each component of running co-allocated job `id`: its pool's name and its nodes' names
    /// (empty for every other job).
    pub fn components_of(&self, id: u64) -> Vec<(String, Vec<String>)> {
        let Some(run) = self.jobs.get(&id).and_then(|a| a.run.as_ref()) else {
            return Vec::new();
        };
        run.components
            .iter()
            .filter_map(|(p, nodes)| {
                let pool = self.pools.get(*p)?;
                Some((pool.pool.name.to_string(), pool.names(nodes)))
            })
            .collect()
    }

    /// The pool and nodes of each part of running job `id`: each component of a co-allocated
    /// job, else the job's one pool with its nodes in the order it got them (the first runs its
    /// batch script). Empty for a job that does not run.
    pub fn parts_of(&self, id: u64) -> Vec<(String, Vec<String>)> {
        let components = self.components_of(id);
        if !components.is_empty() {
            return components;
        }
        let Some(run) = self.jobs.get(&id).and_then(|a| a.run.as_ref()) else {
            return Vec::new();
        };
        self.pools
            .get(run.pool)
            .map(|p| (p.pool.name.to_string(), p.names(self.nodes_of(id))))
            .into_iter()
            .collect()
    }

    /// Puts job `rec` (just finished: preempted, or requeued by hand) back in the queue with
    /// its id, as Slurm's requeue does: pending again (held if `rec.held`), its run's fields
    /// cleared, the reason kept in `detail`. Returns the record as queued.
    pub fn requeue(&mut self, mut rec: JobRecord, why: String) -> JobRecord {
        rec.state = JobState::Pending;
        rec.start = None;
        rec.end = None;
        rec.exit_code = None;
        rec.signal = None;
        rec.pool = None;
        rec.node_list = None;
        rec.nodes = 0;
        rec.shape = None;
        rec.detail = Some(format!("requeued: {why}"));
        // The steps were the last run's; the next run numbers its own from 0 (sacct shows a
        // requeued job's last run).
        rec.steps.clear();
        rec.restarts = rec.restarts.saturating_add(1);
        rec.spec.requeue_by_hand = None;
        rec.spec.preempted = None;
        rec.spec.node_failed = false;
        self.finished.remove(&rec.id);
        self.insert(Active {
            rec: rec.clone(),
            run: None,
        });
        rec
    }

    /// Starts a requeue of running job `id` by hand (`econtrol requeue`, `held` for
    /// `requeuehold`): the job is COMPLETING while its supervisor stops it as for a cancel,
    /// and pending again at its end ([`Core::take_requeue`]). Returns its record to store and
    /// whether a stop must be sent (not when one is on its way already).
    pub fn start_requeue(&mut self, id: u64, held: bool) -> Option<(JobRecord, bool)> {
        let a = self.jobs.get_mut(&id)?;
        let run = a.run.as_mut()?;
        let send = !run.cancelling;
        run.cancelling = true;
        a.rec.state = JobState::Completing;
        // Stored with the record: a restart of batchd before the job's end still requeues it.
        a.rec.spec.requeue_by_hand = Some(held);
        let rec = a.rec.clone();
        self.requeues.insert(id, held);
        Some((rec, send))
    }

    /// Whether job `id` (just ended) was being requeued by hand; `Some(held)` if so.
    pub fn take_requeue(&mut self, id: u64) -> Option<bool> {
        self.requeues.remove(&id)
    }

    /// Drops a requeue by hand of job `id` on its way (a cancel came after it); the record to
    /// store if there was one.
    pub fn drop_requeue(&mut self, id: u64) -> Option<JobRecord> {
        self.requeues.remove(&id)?;
        let a = self.jobs.get_mut(&id)?;
        a.rec.spec.requeue_by_hand = None;
        Some(a.rec.clone())
    }

    /// Puts finished job `rec` back in the queue with its id (`econtrol requeue` of a finished
    /// job), held if `held`; its run's fields cleared, as [`Core::requeue`].
    pub fn requeue_finished(&mut self, mut rec: JobRecord, held: bool, why: String) -> JobRecord {
        rec.held = held;
        self.requeue(rec, why)
    }

    /// Re-attaches a running job found in the database at start-up (`now`) to its nodes.
    ///
    /// `saved` is what the job's directory says: the order its nodes came in (the node file;
    /// the record's host list is sorted, and an evolving job's first node must stay the
    /// first, a co-allocated job's components keep their own nodes) and an evolving job's
    /// progress. A job that spans pools (a co-allocated job, a launcher session's) gets every
    /// component back ([`Core::adopt_components`]).
    pub fn adopt(
        &mut self,
        mut rec: JobRecord,
        job_dir: PathBuf,
        saved: Saved,
        now: u64,
    ) -> Result<(), Box<(JobRecord, String)>> {
        // Killed by the policy before the restart: its nodes are another job's already. It
        // is watched to its end, holding nothing, as before the restart.
        if let Some(why) = rec.spec.preempted.clone() {
            let pool = rec
                .pool
                .as_deref()
                .and_then(|p| p.split(',').next())
                .and_then(|p| self.pool_index(p))
                .unwrap_or(0);
            let id = rec.id;
            self.insert(Active {
                rec,
                run: Some(RunState {
                    pool,
                    job_dir,
                    cancelling: true,
                    evolving: None,
                    components: Vec::new(),
                }),
            });
            self.preempted.insert(id, why);
            return Ok(());
        }
        if let Some(Shape::CoAllocated { pools }) = &rec.shape {
            let pools = pools.to_vec();
            return self.adopt_components(rec, job_dir, saved.nodes.as_deref(), &pools);
        }
        let pool_idx = match rec.pool.as_deref().and_then(|p| self.pool_index(p)) {
            Some(i) => i,
            None => return Err(Box::new((rec, "its pool is no longer configured".into()))),
        };
        let mut names = match rec.node_list.as_deref().map(hostlist::expand) {
            Some(Ok(n)) => n,
            _ => return Err(Box::new((rec, "its node list is unreadable".into()))),
        };
        let pool = &mut self.pools[pool_idx];
        // The node file is written before the record is stored at a resize: if the daemon
        // died between the two, the file is the newer truth (and the nodes a shrink gave up
        // may already be another job's).
        if let Some(ordered) = &saved.nodes {
            let idx: Option<BTreeSet<NodeId>> =
                ordered.iter().map(|n| pool.node_index(n)).collect();
            if idx.is_some_and(|set| set.len() == ordered.len()) {
                names.clone_from(ordered);
                rec.nodes = names.len() as u32;
                rec.node_list = Some(hostlist::compress(&names));
            }
        }
        let mut idx = Vec::new();
        for name in &names {
            match pool.node_index(name) {
                Some(i) if pool.map.owner(i).is_none() => idx.push(i),
                _ => {
                    return Err(Box::new((
                        rec,
                        format!("node {name} is not free in pool {}", pool.pool.name),
                    )))
                }
            }
        }
        if let Err(e) = pool.map.claim(JobId(rec.id), &idx) {
            return Err(Box::new((rec, e.to_string())));
        }
        let cancelling = rec.state == JobState::Completing;
        let evolving = EvoRun::adopted(&rec, &saved, now, |n| pool.node_index(n));
        self.insert(Active {
            rec,
            run: Some(RunState {
                pool: pool_idx,
                job_dir,
                cancelling,
                evolving,
                components: Vec::new(),
            }),
        });
        Ok(())
    }

    /// Re-attaches running job `rec`, started with one component on each of `pools`: every
    /// component to its own nodes, all or nothing (a component that cannot have its nodes back
    /// gives back those of the others).
    fn adopt_components(
        &mut self,
        rec: JobRecord,
        job_dir: PathBuf,
        ordered: Option<&[String]>,
        pools: &[PoolId],
    ) -> Result<(), Box<(JobRecord, String)>> {
        let lost = |rec: JobRecord, why: String| Err(Box::new((rec, why)));
        let counts: Vec<u32> = match &rec.spec.shape {
            JobShape::CoAllocated { components, .. } => components.clone(),
            JobShape::Session { pools, .. } => pools.iter().map(|p| p.nodes).collect(),
            _ => {
                return lost(
                    rec,
                    "its record has a co-allocated shape but not a co-allocated request".into(),
                )
            }
        };
        if counts.len() != pools.len() {
            return lost(rec, "its components do not match its shape".into());
        }
        let parts = match self.component_nodes(&rec, ordered, pools, &counts) {
            Ok(p) => p,
            Err(why) => return lost(rec, why),
        };
        let job = JobId(rec.id);
        let mut components: Vec<(usize, Vec<NodeId>)> = Vec::with_capacity(parts.len());
        for (p, names) in parts {
            let pool = &mut self.pools[p];
            let idx: Option<Vec<NodeId>> = names
                .iter()
                .map(|n| pool.node_index(n).filter(|&i| pool.map.owner(i).is_none()))
                .collect();
            let claimed = match idx {
                Some(idx) => pool
                    .map
                    .claim(job, &idx)
                    .map(|()| idx)
                    .map_err(|e| e.to_string()),
                None => Err(format!(
                    "a node of {} is not free in pool {}",
                    hostlist::compress(&names),
                    pool.pool.name
                )),
            };
            match claimed {
                Ok(idx) => components.push((p, idx)),
                Err(why) => {
                    for (p, _) in &components {
                        self.pools[*p].release_all(job);
                    }
                    return lost(rec, why);
                }
            }
        }
        let cancelling = rec.state == JobState::Completing;
        self.insert(Active {
            rec,
            run: Some(RunState {
                pool: components.first().map_or(0, |c| c.0),
                job_dir,
                cancelling,
                evolving: None,
                components,
            }),
        });
        Ok(())
    }

    /// Each component's pool and node names, in component order, for re-attaching `rec`
    /// (placed on `pools`, `counts` nodes each). The node file (`ordered`) lists them in
    /// component order and is the one source that tells apart two components in one pool;
    /// without it (a launcher session's job has no node file) the record's host list is split
    /// by pool, each component's pool known by name (so that a reordered config does not
    /// matter): a session's request names them, a co-allocated job's record lists them in
    /// the order of their first component (`a,b`).
    fn component_nodes(
        &self,
        rec: &JobRecord,
        ordered: Option<&[String]>,
        pools: &[PoolId],
        counts: &[u32],
    ) -> Result<Vec<(usize, Vec<String>)>, String> {
        let total: usize = counts.iter().map(|&n| n as usize).sum();
        let owner = |name: &str| self.pools.iter().position(|p| p.node_index(name).is_some());
        if let Some(names) = ordered.filter(|n| n.len() == total) {
            let mut out = Vec::with_capacity(counts.len());
            let mut rest = names;
            for &n in counts {
                let (mine, more) = rest.split_at(n as usize);
                rest = more;
                let Some(p) = mine.first().and_then(|m| owner(m)) else {
                    return Err(format!(
                        "node {} is in no configured pool",
                        mine.first().map_or("", String::as_str)
                    ));
                };
                if let Some(stray) = mine.iter().find(|m| self.pools[p].node_index(m).is_none()) {
                    return Err(format!(
                        "its node file puts {stray} in a component of pool {}",
                        self.pools[p].pool.name
                    ));
                }
                out.push((p, mine.to_vec()));
            }
            return Ok(out);
        }
        let Some(Ok(names)) = rec.node_list.as_deref().map(hostlist::expand) else {
            return Err("its node list is unreadable".into());
        };
        let mut by_pool: HashMap<usize, std::collections::VecDeque<String>> = HashMap::new();
        for n in names {
            let p = owner(&n).ok_or_else(|| format!("node {n} is in no configured pool"))?;
            by_pool.entry(p).or_default().push_back(n);
        }
        let wanted = self.component_pool_names(rec, pools)?;
        let mut out = Vec::with_capacity(counts.len());
        for (name, &n) in wanted.iter().zip(counts) {
            let p = self
                .pool_index(name)
                .ok_or_else(|| format!("its pool {name} is no longer configured"))?;
            let have = by_pool.entry(p).or_default();
            if have.len() < n as usize {
                return Err(format!("its node list has too few nodes of pool {name}"));
            }
            out.push((p, have.drain(..n as usize).collect()));
        }
        Ok(out)
    }

    /// The name of each component's pool of running job `rec`, placed on `pools`.
    fn component_pool_names(
        &self,
        rec: &JobRecord,
        pools: &[PoolId],
    ) -> Result<Vec<String>, String> {
        if let JobShape::Session { pools: asked, .. } = &rec.spec.shape {
            return Ok(asked.iter().map(|p| p.pool.clone()).collect());
        }
        // `start_coallocated` names the pools in the order of their first component.
        let listed: Vec<&str> = rec.pool.as_deref().unwrap_or("").split(',').collect();
        let mut seen: Vec<PoolId> = Vec::new();
        for p in pools {
            if !seen.contains(p) {
                seen.push(*p);
            }
        }
        if listed.len() != seen.len() {
            return Err("its pools do not match its components".into());
        }
        Ok(pools
            .iter()
            .map(|p| {
                let rank = seen.iter().position(|s| s == p).unwrap_or(0);
                listed[rank].to_string()
            })
            .collect())
    }

    /// Removes job `id` from the active set, freeing its nodes; `finish` then writes the final
    /// fields (state, end, exit status, detail) of the record, which has left the core by then:
    /// the core keeps only its final state. Returns the final record, to store.
    pub fn finish(&mut self, id: u64, finish: impl FnOnce(&mut JobRecord)) -> Option<JobRecord> {
        self.unindex(id);
        self.unclaim(id);
        let mut a = self.jobs.remove(&id)?;
        // A session's `done` has kept its nodes for the fair-start delay already.
        let delayed = coorm::is_session(&a.rec) && a.rec.state == JobState::Completing;
        let mut freed: Vec<(usize, u32)> = Vec::new();
        if let Some(run) = &a.run {
            let pools = std::iter::once(run.pool).chain(run.components.iter().map(|c| c.0));
            for p in pools {
                if let Some(pool) = self.pools.get_mut(p) {
                    let before = pool.free();
                    pool.release_all(JobId(id));
                    let n = pool.free().saturating_sub(before);
                    if n > 0 {
                        freed.push((p, n));
                    }
                }
            }
        }
        finish(&mut a.rec);
        self.sessions.remove(&id);
        if !delayed {
            self.hold_for_fair_start(&a.rec, freed);
        }
        self.finished.insert(id, a.rec.state);
        self.expected.remove(&id);
        self.expected_ep.remove(&id);
        self.expected_mold.remove(&id);
        Some(a.rec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use batch_proto::JobSpec;

    fn core_with(n: u32) -> Core {
        Core::new([("debug", n)])
    }

    fn rec(id: u64) -> JobRecord {
        let spec = JobSpec::new("#!/bin/sh\n", "/tmp", 2, 1000);
        JobRecord::submitted(id, 1, 1, "u", spec, 0)
    }

    #[test]
    fn a_job_misses_its_end_by_deadline_once_its_limit_no_longer_fits() {
        let mut c = Core::new([("debug", 4)]);
        // Limit 1 s, end by 5 s: it may start until 4 s.
        let mut r = rec(1);
        r.spec.end_by = Some(5_000);
        c.insert(Active { rec: r, run: None });
        c.insert(Active {
            rec: rec(2),
            run: None,
        });
        assert_eq!(c.missed_deadlines(4_000), (vec![], Some(4_001)));
        assert_eq!(c.missed_deadlines(4_001), (vec![1], None));
        // A moldable job has until its shortest configuration no longer fits.
        let mut m = rec(3);
        m.spec.end_by = Some(10_000);
        m.spec.shape = JobShape::Moldable {
            configs: vec![
                batch_proto::MoldConfig {
                    nodes: 1,
                    walltime: 8_000,
                },
                batch_proto::MoldConfig {
                    nodes: 2,
                    walltime: 3_000,
                },
            ],
            model: None,
            weight: None,
        };
        c.insert(Active { rec: m, run: None });
        assert_eq!(c.missed_deadlines(6_500).0, vec![1]);
        assert_eq!(c.missed_deadlines(7_001).0, vec![1, 3]);
    }

    fn add(c: &mut Core, r: JobRecord) {
        c.insert(Active { rec: r, run: None });
    }

    #[test]
    fn start_allocates_lowest_free_nodes_and_finish_frees_them() {
        let mut c = core_with(4);
        add(&mut c, rec(1));
        add(&mut c, rec(2));
        let shape = Shape::rigid(PoolId(0), 2, 1000);
        let r = c.start(1, &shape, 10, PathBuf::from("/x")).unwrap();
        assert_eq!(r.node_list.as_deref(), Some("debug[001-002]"));
        assert_eq!(
            c.parts_of(1),
            [(
                "debug".to_string(),
                vec!["debug001".to_string(), "debug002".into()]
            )]
        );
        assert!(c.parts_of(2).is_empty(), "not running");
        let r = c.start(2, &shape, 10, PathBuf::from("/y")).unwrap();
        assert_eq!(r.node_list.as_deref(), Some("debug[003-004]"));
        assert_eq!(c.pools[0].free(), 0);
        let fin = c.finish(1, |r| r.state = JobState::Completed).unwrap();
        assert_eq!(fin.state, JobState::Completed);
        assert_eq!(c.pools[0].free(), 2);
        assert_eq!(c.state_of(1), Some(JobState::Completed));
        add(&mut c, rec(3));
        assert!(c
            .start(3, &Shape::rigid(PoolId(0), 3, 1), 11, PathBuf::new())
            .is_err());
    }

    fn out(down: bool, reason: &str) -> Option<batch_proto::NodeCondition> {
        Some(batch_proto::NodeCondition {
            down,
            reason: reason.into(),
            user: "root".into(),
            since: 5,
        })
    }

    #[test]
    fn a_pools_end_is_a_hold_from_then_on_beside_what_running_jobs_hold_past_it() {
        let mut c = core_with(4);
        add(&mut c, rec(1));
        // A job of 2 nodes until 1,010; the pool's nodes leave at 500.
        c.start(
            1,
            &Shape::rigid(PoolId(0), 2, 1000),
            10,
            PathBuf::from("/x"),
        )
        .unwrap();
        c.set_pool_end(0, Some(500));
        let snap = c.snapshot(20, 0);
        assert_eq!(snap.pools[0].nodes, 4, "the pool keeps its size");
        let leaving = snap
            .running
            .iter()
            .find(|r| r.id == leaving_job(0))
            .expect("the pool's end");
        // From 500 for ever, the two nodes the running job does not hold then.
        assert_eq!(leaving.holds[0].start, 500);
        assert_eq!(leaving.holds[0].steps[0].nodes, 2);
        assert_eq!(leaving.holds[0].end(), sched_core::FOREVER);
        // An end already past is now.
        c.set_pool_end(0, Some(5));
        let snap = c.snapshot(20, 0);
        let leaving = snap
            .running
            .iter()
            .find(|r| r.id == leaving_job(0))
            .unwrap();
        assert_eq!(leaving.holds[0].start, 20);
        c.set_pool_end(0, None);
        assert_eq!(c.snapshot(20, 0).running.len(), 1);
    }

    #[test]
    fn a_drained_node_keeps_its_job_then_stays_out_until_resumed() {
        let mut c = core_with(4);
        add(&mut c, rec(1));
        let shape = Shape::rigid(PoolId(0), 2, 1000);
        c.start(1, &shape, 10, PathBuf::from("/x")).unwrap();
        let ch = c
            .set_node_condition("debug001", out(false, "disk"))
            .unwrap();
        assert!(ch.stop.is_empty() && ch.store.is_empty());
        // Draining: still the job's; the idle nodes are untouched.
        assert_eq!(c.pools[0].holder(0), Some(1));
        assert_eq!(c.pools[0].free(), 2);
        let snap = c.snapshot(20, 0);
        assert_eq!(snap.running.len(), 1, "nothing out of service yet");
        c.finish(1, |r| r.state = JobState::Completed).unwrap();
        // Drained: out of service, not free, held for ever in the policy's eyes.
        assert_eq!(c.pools[0].free(), 3);
        assert_eq!(c.pools[0].holder(0), None);
        assert_eq!(c.pools[0].usable(), 3);
        let snap = c.snapshot(30, 0);
        assert_eq!(snap.pools[0].nodes, 4, "the pool keeps its size");
        assert_eq!(snap.running.len(), 1);
        assert_eq!(snap.running[0].holds[0].steps[0].nodes, 1);
        assert_eq!(snap.running[0].holds[0].end(), sched_core::FOREVER);
        add(&mut c, rec(2));
        let r = c.start(2, &Shape::rigid(PoolId(0), 3, 1000), 30, PathBuf::new());
        assert_eq!(r.unwrap().node_list.as_deref(), Some("debug[002-004]"));
        assert_eq!(c.node_conditions().len(), 1);
        let ch = c.set_node_condition("debug001", None).unwrap();
        assert!(ch.freed);
        assert_eq!(c.pools[0].free(), 1);
        assert!(c.node_conditions().is_empty());
        assert!(c.set_node_condition("debug009", None).is_err());
    }

    #[test]
    fn a_node_set_down_stops_its_job_as_a_node_failure_and_gives_back_the_others() {
        let mut c = core_with(4);
        add(&mut c, rec(1));
        c.start(
            1,
            &Shape::rigid(PoolId(0), 2, 1000),
            10,
            PathBuf::from("/x"),
        )
        .unwrap();
        let ch = c.set_node_condition("debug002", out(true, "dead")).unwrap();
        assert_eq!(ch.stop, vec![1]);
        assert!(ch.store[0].spec.node_failed);
        assert_eq!(
            ch.store[0].spec.preempted.as_deref(),
            Some("node debug002 is down")
        );
        // Its healthy node is free again; the down one is not.
        assert_eq!(c.pools[0].free(), 3);
        assert_eq!(c.pools[0].usable(), 3);
        // Stopped once: a second DOWN on its other node changes nothing for it.
        let ch = c.set_node_condition("debug001", out(true, "dead")).unwrap();
        assert!(ch.stop.is_empty());
        assert_eq!(c.pools[0].usable(), 2);
        // Two nodes out: the policy sees one holder of both, under a new id.
        let snap = c.snapshot(20, 0);
        let held: Vec<u32> = snap
            .running
            .iter()
            .map(|r| r.holds[0].steps[0].nodes)
            .collect();
        assert_eq!(held, vec![2]);
    }

    #[test]
    fn dependencies_and_reasons() {
        let mut c = core_with(4);
        c.finished.insert(1, JobState::Failed);
        c.finished.insert(2, JobState::Completed);
        let mut a = rec(10);
        a.spec.dependencies = Dependency::parse_list("afterok:1").unwrap();
        let mut b = rec(11);
        b.spec.dependencies = Dependency::parse_list("afterok:2,afternotok:1").unwrap();
        let mut h = rec(12);
        h.held = true;
        let mut w = rec(13);
        w.spec.dependencies = Dependency::parse_list("afterany:11").unwrap();
        let mut later = rec(14);
        later.spec.begin = Some(1_000_000);
        for r in [a, b, h, w, later, rec(15)] {
            add(&mut c, r);
        }
        let reasons: HashMap<u64, PendingReason> = c
            .pending_with_reasons(100)
            .into_iter()
            .map(|(r, why)| (r.id, why))
            .collect();
        assert_eq!(reasons[&10], PendingReason::DependencyNeverSatisfied);
        assert_eq!(reasons[&11], PendingReason::Resources);
        assert_eq!(reasons[&12], PendingReason::Held);
        assert_eq!(reasons[&13], PendingReason::Dependency);
        assert_eq!(reasons[&14], PendingReason::BeginTime);
        assert_eq!(reasons[&15], PendingReason::Priority);
        let snap = c.snapshot(100, 0);
        let ids: Vec<u64> = snap.pending.iter().map(|p| p.id.0).collect();
        assert_eq!(ids, vec![11, 14, 15]);
        assert_eq!(snap.pending[1].earliest_start, 1_000_000);
    }

    #[test]
    fn only_one_singleton_of_a_name_is_eligible() {
        let mut c = core_with(4);
        for id in [1, 2] {
            let mut r = rec(id);
            r.spec.dependencies = vec![Dependency::Singleton];
            add(&mut c, r);
        }
        let snap = c.snapshot(0, 0);
        assert_eq!(snap.pending.len(), 1);
        assert_eq!(c.reason_of(0, 2), Some(PendingReason::Dependency));
    }

    #[test]
    fn a_singleton_waits_for_an_earlier_pending_job_of_its_name_singleton_or_not() {
        // Slurm 22.05: singleton starts "after any previously launched jobs sharing the same
        // job name and user have terminated" - a pending one without singleton too.
        let mut c = core_with(4);
        let mut held = rec(1);
        held.held = true;
        add(&mut c, held);
        let mut r = rec(2);
        r.spec.dependencies = vec![Dependency::Singleton];
        add(&mut c, r);
        // Another name, or a later job of the name, does not hold it back.
        let mut other = rec(3);
        other.spec.name = "other".into();
        add(&mut c, other);
        let ids: Vec<u64> = c.snapshot(0, 0).pending.iter().map(|p| p.id.0).collect();
        assert_eq!(ids, vec![3]);
        assert_eq!(c.reason_of(0, 2), Some(PendingReason::Dependency));
    }

    #[test]
    fn priority_orders_the_queue() {
        let mut c = core_with(4);
        add(&mut c, rec(1));
        let mut r = rec(2);
        r.spec.priority = 5;
        add(&mut c, r);
        let ids: Vec<u64> = c.pending_in_order().iter().map(|r| r.id).collect();
        assert_eq!(ids, vec![2, 1]);
    }

    #[test]
    fn queue_index_follows_holds_priorities_starts_and_ends() {
        let mut c = core_with(4);
        for id in 1..=4 {
            add(&mut c, rec(id));
        }
        c.update_pending(3, |r| r.spec.priority = 9);
        c.update_pending(2, |r| r.held = true);
        let order: Vec<u64> = c.pending_in_order().iter().map(|r| r.id).collect();
        assert_eq!(order, vec![3, 1, 2, 4]);
        let snap: Vec<u64> = c.snapshot(0, 0).pending.iter().map(|p| p.id.0).collect();
        assert_eq!(snap, vec![3, 1, 4]);
        c.start(3, &Shape::rigid(PoolId(0), 2, 1000), 0, PathBuf::new())
            .unwrap();
        let snap = c.snapshot(0, 0);
        assert_eq!(
            snap.pending.iter().map(|p| p.id.0).collect::<Vec<_>>(),
            vec![1, 4]
        );
        assert_eq!(
            snap.running.iter().map(|r| r.id.0).collect::<Vec<_>>(),
            vec![3]
        );
        c.finish(3, |r| r.state = JobState::Completed);
        c.finish(1, |r| r.state = JobState::Cancelled);
        c.update_pending(2, |r| r.held = false);
        let snap = c.snapshot(0, 0);
        assert!(snap.running.is_empty());
        assert_eq!(
            snap.pending.iter().map(|p| p.id.0).collect::<Vec<_>>(),
            vec![2, 4]
        );
    }

    #[test]
    fn a_requeue_by_hand_stops_the_job_then_queues_it_with_its_id() {
        let mut c = core_with(4);
        add(&mut c, rec(1));
        c.start(1, &Shape::rigid(PoolId(0), 2, 1000), 0, PathBuf::new())
            .unwrap();
        let (r, send) = c.start_requeue(1, true).unwrap();
        assert_eq!(r.state, JobState::Completing);
        assert!(send);
        // Asked twice: the stop is on its way already.
        assert!(!c.start_requeue(1, true).unwrap().1);
        // A pending job holds no nodes to stop.
        add(&mut c, rec(2));
        assert!(c.start_requeue(2, false).is_none());
        assert_eq!(c.take_requeue(1), Some(true));
        assert_eq!(c.take_requeue(1), None);
        let mut done = c.finish(1, |r| r.state = JobState::Cancelled).unwrap();
        assert_eq!(
            done.spec.requeue_by_hand,
            Some(true),
            "stored for a restart"
        );
        assert_eq!(c.pools[0].free(), 4);
        done.held = true;
        let q = c.requeue(done, "econtrol requeue".into());
        assert_eq!((q.id, q.state, q.held), (1, JobState::Pending, true));
        assert_eq!(q.spec.requeue_by_hand, None);
        assert_eq!(c.reason_of(0, 1), Some(PendingReason::Held));
        // A finished job straight back in the queue.
        c.finished.insert(9, JobState::Completed);
        let mut old = rec(9);
        old.state = JobState::Completed;
        old.exit_code = Some(0);
        let q = c.requeue_finished(old, false, "econtrol requeue".into());
        assert_eq!(
            (q.state, q.exit_code, q.held),
            (JobState::Pending, None, false)
        );
        assert_eq!(c.state_of(9), Some(JobState::Pending));
    }

    fn two_pools() -> Core {
        Core::new([("a", 4), ("b", 4)])
    }

    fn global(id: u64) -> JobRecord {
        let mut r = rec(id);
        r.spec.shape = JobShape::CoAllocated {
            components: vec![3, 2],
            time_limit: 1000,
        };
        r.spec.deadline = Some(5_000);
        r
    }

    #[test]
    fn claimed_nodes_are_the_ones_a_global_job_starts_on() {
        let mut c = two_pools();
        add(&mut c, global(1));
        let pools = [PoolId(1), PoolId(0)];
        c.claim(1, &pools).unwrap();
        assert_eq!((c.pools[0].free(), c.pools[1].free()), (2, 1));
        assert_eq!(c.reason_of(0, 1), Some(PendingReason::Reserved));
        // A second claim of the same plan changes nothing.
        c.claim(1, &pools).unwrap();
        assert_eq!(c.pools[1].free(), 1);
        let shape = Shape::CoAllocated {
            pools: pools.to_vec().into(),
        };
        let r = c.start(1, &shape, 5_000, PathBuf::new()).unwrap();
        assert_eq!(r.pool.as_deref(), Some("b,a"));
        assert_eq!(r.node_list.as_deref(), Some("b[001-003],a[001-002]"));
        assert_eq!(r.nodes, 5);
        assert!(c.claims.is_empty());
        // Two components in one pool get nodes of their own.
        add(&mut c, global(2));
        let shared = Shape::CoAllocated {
            pools: sched_core::rvec![PoolId(0), PoolId(0)],
        };
        assert!(c.start(2, &shared, 5_000, PathBuf::new()).is_err());
        assert_eq!(c.pools[0].free(), 2);
        c.finish(2, |r| r.state = JobState::Cancelled);
        let mut g = global(3);
        g.spec.shape = JobShape::CoAllocated {
            components: vec![1, 1],
            time_limit: 1000,
        };
        add(&mut c, g);
        let r = c.start(3, &shared, 5_000, PathBuf::new()).unwrap();
        assert_eq!(r.node_list.as_deref(), Some("a[003-004]"));
        assert_eq!(
            c.components_of(3),
            vec![
                ("a".to_string(), vec!["a003".to_string()]),
                ("a".to_string(), vec!["a004".to_string()]),
            ]
        );
        assert_eq!(r.pool.as_deref(), Some("a"));
        c.finish(3, |r| r.state = JobState::Completed);
        assert_eq!(
            c.components_of(1),
            vec![
                (
                    "b".to_string(),
                    vec!["b001".into(), "b002".into(), "b003".into()]
                ),
                ("a".to_string(), vec!["a001".into(), "a002".into()]),
            ]
        );
        let snap = c.snapshot(5_000, 0);
        let holds: Vec<(u32, u32)> = snap.running[0]
            .holds
            .iter()
            .map(|h| (h.pool.0, h.steps[0].nodes))
            .collect();
        assert_eq!(holds, vec![(1, 3), (0, 2)]);
        c.finish(1, |r| r.state = JobState::Completed);
        assert_eq!((c.pools[0].free(), c.pools[1].free()), (4, 4));
    }

    /// Job `id` of `global`'s shape started on `pools` in a fresh two-pool core, stopped as a
    /// restart stops it: its record and its node file.
    fn started_record(id: u64, pools: &[PoolId], other: bool) -> (JobRecord, Vec<String>) {
        let mut c = Core::new([("a", 8), ("b", 4)]);
        if other {
            // Another job first, so the job's nodes are not the lowest.
            add(&mut c, rec(9));
            c.start(9, &Shape::rigid(PoolId(0), 1, 1000), 0, PathBuf::new())
                .unwrap();
        }
        add(&mut c, global(id));
        let shape = Shape::CoAllocated {
            pools: pools.to_vec().into(),
        };
        let r = c.start(id, &shape, 5_000, PathBuf::new()).unwrap();
        let file = c.components_of(id).into_iter().flat_map(|c| c.1).collect();
        (r, file)
    }

    #[test]
    fn a_restart_gives_each_component_of_a_coallocated_job_its_own_nodes() {
        // Both components in pool a: only the node file tells them apart.
        let (r, file) = started_record(1, &[PoolId(0), PoolId(0)], true);
        assert_eq!(r.node_list.as_deref(), Some("a[002-006]"));
        let mut c = Core::new([("a", 8), ("b", 4)]);
        let saved = Saved {
            nodes: Some(file.clone()),
            progress: None,
        };
        c.adopt(r.clone(), PathBuf::from("/j"), saved, 6_000)
            .unwrap();
        assert_eq!(
            c.components_of(1),
            vec![
                ("a".to_string(), file[..3].to_vec()),
                ("a".to_string(), file[3..].to_vec()),
            ]
        );
        assert_eq!((c.pools[0].free(), c.pools[1].free()), (3, 4));
        let snap = c.snapshot(6_000, 0);
        let holds: Vec<(u32, u32)> = snap.running[0]
            .holds
            .iter()
            .map(|h| (h.pool.0, h.steps[0].nodes))
            .collect();
        assert_eq!(holds, vec![(0, 3), (0, 2)]);
        c.finish(1, |r| r.state = JobState::Completed);
        assert_eq!(c.pools[0].free(), 8);

        // Two pools, and a config whose pools come in another order: the names decide, with
        // the node file or without it (the record's list split by pool).
        let (r, file) = started_record(2, &[PoolId(1), PoolId(0)], false);
        assert_eq!(r.pool.as_deref(), Some("b,a"));
        for saved in [Some(file), None] {
            let mut c = Core::new([("b", 4), ("a", 8)]);
            let saved = Saved {
                nodes: saved,
                progress: None,
            };
            c.adopt(r.clone(), PathBuf::from("/j"), saved, 6_000)
                .unwrap();
            assert_eq!(
                c.components_of(2),
                vec![
                    (
                        "b".to_string(),
                        vec!["b001".into(), "b002".into(), "b003".into()]
                    ),
                    ("a".to_string(), vec!["a001".into(), "a002".into()]),
                ]
            );
            assert_eq!((c.pools[0].free(), c.pools[1].free()), (1, 6));
        }
    }

    #[test]
    fn a_component_that_cannot_have_its_nodes_back_gives_back_the_others() {
        let (r, file) = started_record(1, &[PoolId(0), PoolId(1)], false);
        let saved = || Saved {
            nodes: Some(file.clone()),
            progress: None,
        };
        // Pool b is gone from the config.
        let mut c = Core::new([("a", 8)]);
        let err = c.adopt(r.clone(), PathBuf::new(), saved(), 0).unwrap_err();
        assert!(err.1.contains("no configured pool"), "{}", err.1);
        assert_eq!(c.pools[0].free(), 8);
        // A node of b is another job's: a's nodes are given back too.
        let mut c = Core::new([("a", 8), ("b", 4)]);
        add(&mut c, rec(7));
        c.start(7, &Shape::rigid(PoolId(1), 1, 1000), 0, PathBuf::new())
            .unwrap();
        let err = c.adopt(r, PathBuf::new(), saved(), 0).unwrap_err();
        assert!(err.1.contains("not free in pool b"), "{}", err.1);
        assert_eq!((c.pools[0].free(), c.pools[1].free()), (8, 3));
        assert!(!c.jobs.contains_key(&1));
    }

    #[test]
    fn a_claim_is_kept_in_the_record_claimed_again_at_a_restart_and_told_to_the_policy() {
        let mut c = two_pools();
        add(&mut c, global(1));
        let stored = c.claim(1, &[PoolId(1), PoolId(0)]).unwrap().unwrap();
        assert_eq!(
            stored.shape,
            Some(Shape::CoAllocated {
                pools: sched_core::rvec![PoolId(1), PoolId(0)]
            })
        );
        assert_eq!(c.claim(1, &[PoolId(1), PoolId(0)]).unwrap(), None);
        let told = &c.snapshot(0, 0).pending[0];
        assert_eq!(told.claimed.to_vec(), vec![PoolId(1), PoolId(0)]);

        // A restart: a running job first takes b001, then the claim is made again.
        let mut fresh = two_pools();
        add(&mut fresh, rec(5));
        fresh
            .start(5, &Shape::rigid(PoolId(1), 1, 1000), 0, PathBuf::new())
            .unwrap();
        fresh.insert(Active {
            rec: stored.clone(),
            run: None,
        });
        assert_eq!(fresh.restore_claim(1), None);
        assert_eq!((fresh.pools[0].free(), fresh.pools[1].free()), (2, 0));
        assert_eq!(fresh.reason_of(0, 1), Some(PendingReason::Reserved));
        assert_eq!(
            fresh.snapshot(0, 0).pending[0].claimed.to_vec(),
            vec![PoolId(1), PoolId(0)]
        );
        // Given back: the record forgets it.
        let back = fresh.unclaim(1).unwrap();
        assert_eq!(back.shape, None);
        assert!(fresh.snapshot(0, 0).pending[0].claimed.is_empty());

        // A claim that no longer fits (a pool gone) is dropped, the record to store without it.
        let mut small = Core::new([("a", 4)]);
        small.insert(Active {
            rec: stored,
            run: None,
        });
        let dropped = small.restore_claim(1).unwrap();
        assert_eq!(dropped.shape, None);
        assert!(small.claims.is_empty());
        assert_eq!(small.pools[0].free(), 4);
    }

    #[test]
    fn a_claim_that_does_not_fit_takes_nothing_and_unclaim_gives_back() {
        let mut c = two_pools();
        add(&mut c, global(1));
        add(&mut c, global(2));
        c.claim(1, &[PoolId(0), PoolId(1)]).unwrap();
        // Job 2's 3 nodes would fit in b, its 2 no longer in a: nothing is taken.
        assert!(c.claim(2, &[PoolId(1), PoolId(0)]).is_err());
        assert_eq!((c.pools[0].free(), c.pools[1].free()), (1, 2));
        assert!(!c.claims.contains_key(&2));
        c.unclaim(1);
        assert_eq!((c.pools[0].free(), c.pools[1].free()), (4, 4));
        // Cancelling a claimed job frees its nodes too.
        c.claim(2, &[PoolId(1), PoolId(0)]).unwrap();
        c.finish(2, |r| r.state = JobState::Cancelled);
        assert_eq!((c.pools[0].free(), c.pools[1].free()), (4, 4));
    }

    #[test]
    fn only_pool_bound_rigid_jobs_are_killable_and_preemption_hands_over_nodes() {
        let mut c = two_pools();
        let mut local = rec(1);
        local.spec.pool = Some("a".into());
        add(&mut c, local);
        add(&mut c, rec(2));
        c.start(1, &Shape::rigid(PoolId(0), 2, 1000), 0, PathBuf::new())
            .unwrap();
        c.start(2, &Shape::rigid(PoolId(0), 2, 1000), 0, PathBuf::new())
            .unwrap();
        let killable: Vec<(u64, bool)> = c
            .snapshot(0, 0)
            .running
            .iter()
            .map(|r| (r.id.0, r.killable))
            .collect();
        assert_eq!(killable, vec![(1, true), (2, false)]);
        let marked = c.preempt(1, "for job 3".into()).unwrap();
        assert_eq!(marked.spec.preempted.as_deref(), Some("for job 3"));
        assert_eq!(c.pools[0].free(), 2);
        // A restart while it is stopped: it comes back without nodes, whoever holds its old
        // ones, still preempted.
        let mut again = two_pools();
        add(&mut again, rec(4));
        again
            .start(4, &Shape::rigid(PoolId(0), 4, 1000), 0, PathBuf::new())
            .unwrap();
        again
            .adopt(marked, PathBuf::from("/j"), Saved::default(), 0)
            .unwrap();
        assert!(again.nodes_of(1).is_empty());
        assert_eq!(
            again.preempted.get(&1).map(String::as_str),
            Some("for job 3")
        );
        assert_eq!(again.snapshot(0, 0).running.len(), 1);
        // The preempted job is out of the policy's view, still active until its end.
        assert_eq!(c.snapshot(0, 0).running.len(), 1);
        assert_eq!(c.state_of(1), Some(JobState::Running));
        // A requeue puts it back with its id, pending, its run forgotten.
        let why = c.preempted.remove(&1).unwrap();
        let r = c.finish(1, |r| r.state = JobState::Preempted).unwrap();
        let queued = c.requeue(r, why);
        let a = &c.jobs[&1];
        assert_eq!(queued, a.rec);
        assert_eq!(a.rec.state, JobState::Pending);
        assert!(a.rec.start.is_none() && a.rec.node_list.is_none() && a.run.is_none());
        assert_eq!(a.rec.detail.as_deref(), Some("requeued: for job 3"));
        assert_eq!(
            a.rec.spec.preempted, None,
            "a requeued job is not preempted any more"
        );
        assert_eq!(
            c.snapshot(0, 0)
                .pending
                .iter()
                .map(|p| p.id.0)
                .collect::<Vec<_>>(),
            vec![1]
        );
    }
}
