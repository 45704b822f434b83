//! FFI-safe mirrors of the policy contract, field by field, and lossless conversions both ways.
//!
//! Every type here is `#[repr(C)]` (enums `#[repr(u8)]`) and derives [`StableAbi`], so the
//! loader can check that a plugin was built against the same layout. They are plain data:
//! owned `R*` containers, integers for ids, no references and no function pointers, so a value
//! built on one side of the boundary is freed on the other without a shared allocator.
//!
//! What may change, and how (see also `docs/plugins.md`):
//! - these data types are frozen for a major ABI version: a new field, a new variant or a
//!   renamed one is a major bump ([`crate::ABI_VERSION`]), because their layout is checked
//!   exactly;
//! - the root module and the policy object are prefix types: new functions are appended after
//!   the field marked `#[sabi(last_prefix_field)]` in a minor bump, and an older plugin simply
//!   lacks them.

use abi_stable::std_types::{ROption, RString, RVec};
use abi_stable::StableAbi;
use sched_core::{
    CoAllocated, Component, Evolving, JobId, JobReason, MoldConfig, Moldable, Pending, Placement,
    Plan, Pool, PoolId, PoolSteps, Request, Rigid, Running, Shape, Snapshot, SpeedupModel, Step,
    View,
};

fn ropt<T, U>(o: Option<T>, f: impl FnOnce(T) -> U) -> ROption<U> {
    o.map(f).into()
}

fn rvec<'a, T: 'a, U>(v: impl IntoIterator<Item = &'a T>, f: impl FnMut(&'a T) -> U) -> RVec<U> {
    v.into_iter().map(f).collect()
}

fn pool_id(p: &u32) -> PoolId {
    PoolId(*p)
}

/// [`Step`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub struct FfiStep {
    /// [`Step::duration`].
    pub duration: u64,
    /// [`Step::nodes`].
    pub nodes: u32,
}

impl From<&Step> for FfiStep {
    fn from(s: &Step) -> Self {
        FfiStep {
            duration: s.duration,
            nodes: s.nodes,
        }
    }
}

impl From<&FfiStep> for Step {
    fn from(s: &FfiStep) -> Self {
        Step {
            duration: s.duration,
            nodes: s.nodes,
        }
    }
}

/// [`Pool`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct FfiPool {
    /// [`Pool::id`].
    pub id: u32,
    /// [`Pool::name`].
    pub name: RString,
    /// [`Pool::nodes`].
    pub nodes: u32,
}

impl From<&Pool> for FfiPool {
    fn from(p: &Pool) -> Self {
        FfiPool {
            id: p.id.0,
            name: p.name.as_str().into(),
            nodes: p.nodes,
        }
    }
}

impl From<&FfiPool> for Pool {
    fn from(p: &FfiPool) -> Self {
        Pool {
            id: PoolId(p.id),
            name: p.name.to_string(),
            nodes: p.nodes,
        }
    }
}

/// [`Rigid`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct FfiRigid {
    /// [`Rigid::pool`].
    pub pool: ROption<u32>,
    /// [`Rigid::nodes`].
    pub nodes: u32,
    /// [`Rigid::walltime`].
    pub walltime: u64,
}

/// [`MoldConfig`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub struct FfiMoldConfig {
    /// [`MoldConfig::nodes`].
    pub nodes: u32,
    /// [`MoldConfig::walltime`].
    pub walltime: u64,
}

/// [`SpeedupModel`] across the boundary.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq)]
pub enum FfiSpeedupModel {
    /// [`SpeedupModel::Amdahl`].
    Amdahl {
        /// Run time on one node.
        work: u64,
        /// Serial fraction.
        serial: f64,
    },
    /// [`SpeedupModel::Linear`].
    Linear {
        /// Run time on one node.
        work: u64,
    },
}

impl From<&SpeedupModel> for FfiSpeedupModel {
    fn from(m: &SpeedupModel) -> Self {
        match *m {
            SpeedupModel::Amdahl { work, serial } => FfiSpeedupModel::Amdahl { work, serial },
            SpeedupModel::Linear { work } => FfiSpeedupModel::Linear { work },
        }
    }
}

impl From<&FfiSpeedupModel> for SpeedupModel {
    fn from(m: &FfiSpeedupModel) -> Self {
        match *m {
            FfiSpeedupModel::Amdahl { work, serial } => SpeedupModel::Amdahl { work, serial },
            FfiSpeedupModel::Linear { work } => SpeedupModel::Linear { work },
        }
    }
}

/// [`Moldable`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct FfiMoldable {
    /// [`Moldable::pool`].
    pub pool: ROption<u32>,
    /// [`Moldable::configs`].
    pub configs: RVec<FfiMoldConfig>,
    /// [`Moldable::model`].
    pub model: ROption<FfiSpeedupModel>,
    /// [`Moldable::min_nodes`].
    pub min_nodes: u32,
    /// [`Moldable::max_nodes`].
    pub max_nodes: u32,
    /// [`Moldable::weight`].
    pub weight: f64,
}

/// [`Evolving`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct FfiEvolving {
    /// [`Evolving::pool`].
    pub pool: ROption<u32>,
    /// [`Evolving::steps`].
    pub steps: RVec<FfiStep>,
}

/// [`Component`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub struct FfiComponent {
    /// [`Component::nodes`].
    pub nodes: u32,
    /// [`Component::pool`].
    pub pool: ROption<u32>,
}

/// [`CoAllocated`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct FfiCoAllocated {
    /// [`CoAllocated::components`].
    pub components: RVec<FfiComponent>,
    /// [`CoAllocated::walltime`].
    pub walltime: u64,
    /// [`CoAllocated::deadline`].
    pub deadline: ROption<u64>,
}

/// [`Request`] across the boundary: all four kinds of the papers.
#[repr(u8)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub enum FfiRequest {
    /// [`Request::Rigid`].
    Rigid(FfiRigid),
    /// [`Request::Moldable`].
    Moldable(FfiMoldable),
    /// [`Request::Evolving`].
    Evolving(FfiEvolving),
    /// [`Request::CoAllocated`].
    CoAllocated(FfiCoAllocated),
}

impl From<&Request> for FfiRequest {
    fn from(r: &Request) -> Self {
        match r {
            Request::Rigid(r) => FfiRequest::Rigid(FfiRigid {
                pool: ropt(r.pool, |p| p.0),
                nodes: r.nodes,
                walltime: r.walltime,
            }),
            Request::Moldable(m) => FfiRequest::Moldable(FfiMoldable {
                pool: ropt(m.pool, |p| p.0),
                configs: rvec(&m.configs, |c| FfiMoldConfig {
                    nodes: c.nodes,
                    walltime: c.walltime,
                }),
                model: ropt(m.model.as_ref(), FfiSpeedupModel::from),
                min_nodes: m.min_nodes,
                max_nodes: m.max_nodes,
                weight: m.weight,
            }),
            Request::Evolving(e) => FfiRequest::Evolving(FfiEvolving {
                pool: ropt(e.pool, |p| p.0),
                steps: rvec(&e.steps, FfiStep::from),
            }),
            Request::CoAllocated(c) => FfiRequest::CoAllocated(FfiCoAllocated {
                components: rvec(&c.components, |c| FfiComponent {
                    nodes: c.nodes,
                    pool: ropt(c.pool, |p| p.0),
                }),
                walltime: c.walltime,
                deadline: c.deadline.into(),
            }),
        }
    }
}

impl From<&FfiRequest> for Request {
    fn from(r: &FfiRequest) -> Self {
        match r {
            FfiRequest::Rigid(r) => Request::Rigid(Rigid {
                pool: r.pool.as_ref().map(pool_id).into_option(),
                nodes: r.nodes,
                walltime: r.walltime,
            }),
            FfiRequest::Moldable(m) => Request::Moldable(Moldable {
                pool: m.pool.as_ref().map(pool_id).into_option(),
                configs: m
                    .configs
                    .iter()
                    .map(|c| MoldConfig {
                        nodes: c.nodes,
                        walltime: c.walltime,
                    })
                    .collect(),
                model: m.model.as_ref().map(SpeedupModel::from).into_option(),
                min_nodes: m.min_nodes,
                max_nodes: m.max_nodes,
                weight: m.weight,
            }),
            FfiRequest::Evolving(e) => Request::Evolving(Evolving {
                pool: e.pool.as_ref().map(pool_id).into_option(),
                steps: e.steps.iter().map(Step::from).collect(),
            }),
            FfiRequest::CoAllocated(c) => Request::CoAllocated(CoAllocated {
                components: c
                    .components
                    .iter()
                    .map(|c| Component {
                        nodes: c.nodes,
                        pool: c.pool.as_ref().map(pool_id).into_option(),
                    })
                    .collect(),
                walltime: c.walltime,
                deadline: c.deadline.into_option(),
            }),
        }
    }
}

/// [`PoolSteps`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct FfiPoolSteps {
    /// [`PoolSteps::pool`].
    pub pool: u32,
    /// [`PoolSteps::start`].
    pub start: u64,
    /// [`PoolSteps::steps`].
    pub steps: RVec<FfiStep>,
}

impl From<&PoolSteps> for FfiPoolSteps {
    fn from(p: &PoolSteps) -> Self {
        FfiPoolSteps {
            pool: p.pool.0,
            start: p.start,
            steps: rvec(&p.steps, FfiStep::from),
        }
    }
}

impl From<&FfiPoolSteps> for PoolSteps {
    fn from(p: &FfiPoolSteps) -> Self {
        PoolSteps {
            pool: PoolId(p.pool),
            start: p.start,
            steps: p.steps.iter().map(Step::from).collect(),
        }
    }
}

/// [`Shape`] across the boundary.
#[repr(u8)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub enum FfiShape {
    /// [`Shape::Rigid`].
    Rigid {
        /// Where.
        pool: u32,
        /// How many nodes.
        nodes: u32,
        /// Time limit.
        walltime: u64,
    },
    /// [`Shape::Moldable`].
    Moldable {
        /// Where.
        pool: u32,
        /// Chosen node count.
        nodes: u32,
        /// Walltime at that count.
        walltime: u64,
    },
    /// [`Shape::Evolving`].
    Evolving {
        /// Where.
        pool: u32,
        /// The scheduled steps.
        steps: RVec<FfiStep>,
    },
    /// [`Shape::CoAllocated`].
    CoAllocated {
        /// Pool of each component.
        pools: RVec<u32>,
    },
}

impl From<&Shape> for FfiShape {
    fn from(s: &Shape) -> Self {
        match s {
            Shape::Rigid {
                pool,
                nodes,
                walltime,
            } => FfiShape::Rigid {
                pool: pool.0,
                nodes: *nodes,
                walltime: *walltime,
            },
            Shape::Moldable {
                pool,
                nodes,
                walltime,
            } => FfiShape::Moldable {
                pool: pool.0,
                nodes: *nodes,
                walltime: *walltime,
            },
            Shape::Evolving { pool, steps } => FfiShape::Evolving {
                pool: pool.0,
                steps: rvec(steps, FfiStep::from),
            },
            Shape::CoAllocated { pools } => FfiShape::CoAllocated {
                pools: rvec(pools, |p| p.0),
            },
        }
    }
}

impl From<&FfiShape> for Shape {
    fn from(s: &FfiShape) -> Self {
        match s {
            FfiShape::Rigid {
                pool,
                nodes,
                walltime,
            } => Shape::Rigid {
                pool: PoolId(*pool),
                nodes: *nodes,
                walltime: *walltime,
            },
            FfiShape::Moldable {
                pool,
                nodes,
                walltime,
            } => Shape::Moldable {
                pool: PoolId(*pool),
                nodes: *nodes,
                walltime: *walltime,
            },
            FfiShape::Evolving { pool, steps } => Shape::Evolving {
                pool: PoolId(*pool),
                steps: steps.iter().map(Step::from).collect(),
            },
            FfiShape::CoAllocated { pools } => Shape::CoAllocated {
                pools: pools.iter().map(pool_id).collect(),
            },
        }
    }
}

/// [`Pending`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct FfiPending {
    /// [`Pending::id`].
    pub id: u64,
    /// [`Pending::user`].
    pub user: u32,
    /// [`Pending::submit`].
    pub submit: u64,
    /// [`Pending::earliest_start`].
    pub earliest_start: u64,
    /// [`Pending::priority`].
    pub priority: i64,
    /// [`Pending::request`].
    pub request: FfiRequest,
    /// [`Pending::wants_view`].
    pub wants_view: bool,
}

impl From<&Pending> for FfiPending {
    fn from(p: &Pending) -> Self {
        FfiPending {
            id: p.id.0,
            user: p.user,
            submit: p.submit,
            earliest_start: p.earliest_start,
            priority: p.priority,
            request: (&p.request).into(),
            wants_view: p.wants_view,
        }
    }
}

impl From<&FfiPending> for Pending {
    fn from(p: &FfiPending) -> Self {
        Pending {
            wants_view: p.wants_view,
            id: JobId(p.id),
            user: p.user,
            submit: p.submit,
            earliest_start: p.earliest_start,
            priority: p.priority,
            request: (&p.request).into(),
        }
    }
}

/// [`Running`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct FfiRunning {
    /// [`Running::id`].
    pub id: u64,
    /// [`Running::user`].
    pub user: u32,
    /// [`Running::request`].
    pub request: FfiRequest,
    /// [`Running::shape`].
    pub shape: FfiShape,
    /// [`Running::start`].
    pub start: u64,
    /// [`Running::holds`].
    pub holds: RVec<FfiPoolSteps>,
    /// [`Running::killable`].
    pub killable: bool,
}

impl From<&Running> for FfiRunning {
    fn from(r: &Running) -> Self {
        FfiRunning {
            id: r.id.0,
            user: r.user,
            request: (&r.request).into(),
            shape: (&r.shape).into(),
            start: r.start,
            holds: rvec(&r.holds, FfiPoolSteps::from),
            killable: r.killable,
        }
    }
}

impl From<&FfiRunning> for Running {
    fn from(r: &FfiRunning) -> Self {
        Running {
            id: JobId(r.id),
            user: r.user,
            request: (&r.request).into(),
            shape: (&r.shape).into(),
            start: r.start,
            holds: r.holds.iter().map(PoolSteps::from).collect(),
            killable: r.killable,
        }
    }
}

/// [`Snapshot`] across the boundary, owning its lists (a [`Snapshot`] borrows them).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default, PartialEq)]
pub struct FfiSnapshot {
    /// [`Snapshot::now`].
    pub now: u64,
    /// [`Snapshot::pools`].
    pub pools: RVec<FfiPool>,
    /// [`Snapshot::running`].
    pub running: RVec<FfiRunning>,
    /// [`Snapshot::pending`].
    pub pending: RVec<FfiPending>,
}

impl From<&Snapshot<'_>> for FfiSnapshot {
    fn from(s: &Snapshot<'_>) -> Self {
        FfiSnapshot {
            now: s.now,
            pools: rvec(s.pools, FfiPool::from),
            running: rvec(s.running, FfiRunning::from),
            pending: rvec(s.pending, FfiPending::from),
        }
    }
}

impl FfiSnapshot {
    /// Overwrites `self` with `s`, reusing the lists' buffers: a host calls a policy thousands
    /// of times with queues of similar size, and fresh multi-megabyte buffers cost page faults.
    pub fn refill_from(&mut self, s: &Snapshot<'_>) {
        self.now = s.now;
        self.pools.clear();
        self.pools.extend(s.pools.iter().map(FfiPool::from));
        self.running.clear();
        self.running.extend(s.running.iter().map(FfiRunning::from));
        self.pending.clear();
        self.pending.extend(s.pending.iter().map(FfiPending::from));
    }
}

/// One run of a list edit in a [`FfiListDelta`]: keep the next `keep` entries of the list the
/// plugin holds, drop the `drop` after them, then insert the next `insert` of the delta's items.
/// Entries after the last run are kept.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FfiEdit {
    /// Entries kept, in order.
    pub keep: u64,
    /// Entries dropped after them.
    pub drop: u64,
    /// Items inserted after those (taken in order from [`FfiListDelta::items`]).
    pub insert: u64,
}

/// How one list of a snapshot changed since the previous call (since ABI 3.0): runs of
/// kept, dropped and inserted entries; an entry whose content changed is dropped and inserted
/// again. The new list is the old one with the runs applied.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct FfiListDelta<T> {
    /// The runs, in list order.
    pub edits: RVec<FfiEdit>,
    /// The inserted entries, in list order.
    pub items: RVec<T>,
}

impl<T> Default for FfiListDelta<T> {
    fn default() -> Self {
        FfiListDelta {
            edits: RVec::new(),
            items: RVec::new(),
        }
    }
}

/// A [`Snapshot`] as the changes since the one the plugin holds (since ABI 3.0).
///
/// Each delta is numbered (`generation`, never 0) and names the one it applies to (`base`);
/// `base` 0 is the empty snapshot, so a delta with `base` 0 is a whole snapshot. A plugin whose
/// snapshot is not `base` answers [`FfiDeltaAnswer::Stale`] without planning, and the host sends
/// the whole snapshot.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default, PartialEq)]
pub struct FfiSnapshotDelta {
    /// The generation this delta applies to; 0: the empty snapshot.
    pub base: u64,
    /// The generation of the snapshot once applied.
    pub generation: u64,
    /// [`Snapshot::now`] (always sent).
    pub now: u64,
    /// Whether the base's running jobs' holds are brought to `now` first
    /// ([`sched_core::Running::clip_holds`]), before the running list's runs apply: a running
    /// job whose holds only moved on with time is then kept, not sent again.
    pub clip_running: bool,
    /// [`Snapshot::pools`]' changes.
    pub pools: FfiListDelta<FfiPool>,
    /// [`Snapshot::running`]'s changes.
    pub running: FfiListDelta<FfiRunning>,
    /// [`Snapshot::pending`]'s changes.
    pub pending: FfiListDelta<FfiPending>,
}

/// What a plugin did with a [`FfiSnapshotDelta`] (since ABI 3.0).
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FfiDeltaAnswer {
    /// Applied; the plan is in the buffer.
    Planned,
    /// Not applied: the plugin does not hold the delta's `base` (a new instance, or edits that
    /// do not fit what it holds). Nothing was planned; send the whole snapshot.
    Stale,
}

/// The lists a [`Snapshot`] borrows, rebuilt on the plugin's side of the boundary.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OwnedSnapshot {
    /// [`Snapshot::now`].
    pub now: u64,
    /// [`Snapshot::pools`].
    pub pools: Vec<Pool>,
    /// [`Snapshot::running`].
    pub running: Vec<Running>,
    /// [`Snapshot::pending`].
    pub pending: Vec<Pending>,
}

impl OwnedSnapshot {
    /// The snapshot borrowing these lists.
    pub fn as_snapshot(&self) -> Snapshot<'_> {
        Snapshot {
            now: self.now,
            pools: &self.pools,
            running: &self.running,
            pending: &self.pending,
        }
    }
}

impl From<&Snapshot<'_>> for OwnedSnapshot {
    fn from(s: &Snapshot<'_>) -> Self {
        OwnedSnapshot {
            now: s.now,
            pools: s.pools.to_vec(),
            running: s.running.to_vec(),
            pending: s.pending.to_vec(),
        }
    }
}

impl OwnedSnapshot {
    /// Overwrites `self` with `s`, reusing the lists' buffers (see [`FfiSnapshot::refill_from`]).
    pub fn refill_from(&mut self, s: &FfiSnapshot) {
        self.now = s.now;
        self.pools.clear();
        self.pools.extend(s.pools.iter().map(Pool::from));
        self.running.clear();
        self.running.extend(s.running.iter().map(Running::from));
        self.pending.clear();
        self.pending.extend(s.pending.iter().map(Pending::from));
    }
}

impl From<&FfiSnapshot> for OwnedSnapshot {
    fn from(s: &FfiSnapshot) -> Self {
        OwnedSnapshot {
            now: s.now,
            pools: s.pools.iter().map(Pool::from).collect(),
            running: s.running.iter().map(Running::from).collect(),
            pending: s.pending.iter().map(Pending::from).collect(),
        }
    }
}

/// [`Placement`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct FfiPlacement {
    /// [`Placement::job`].
    pub job: u64,
    /// [`Placement::start`].
    pub start: u64,
    /// [`Placement::shape`].
    pub shape: FfiShape,
    /// [`Placement::claim_from`].
    pub claim_from: ROption<u64>,
}

impl From<&Placement> for FfiPlacement {
    fn from(p: &Placement) -> Self {
        FfiPlacement {
            job: p.job.0,
            start: p.start,
            shape: (&p.shape).into(),
            claim_from: p.claim_from.into(),
        }
    }
}

impl From<&FfiPlacement> for Placement {
    fn from(p: &FfiPlacement) -> Self {
        Placement {
            job: JobId(p.job),
            start: p.start,
            shape: (&p.shape).into(),
            claim_from: p.claim_from.into_option(),
        }
    }
}

/// [`JobReason`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct FfiJobReason {
    /// [`JobReason::job`].
    pub job: u64,
    /// [`JobReason::reason`].
    pub reason: RString,
}

impl From<&JobReason> for FfiJobReason {
    fn from(r: &JobReason) -> Self {
        FfiJobReason {
            job: r.job.0,
            reason: r.reason.as_str().into(),
        }
    }
}

impl From<&FfiJobReason> for JobReason {
    fn from(r: &FfiJobReason) -> Self {
        JobReason {
            job: JobId(r.job),
            reason: r.reason.to_string(),
        }
    }
}

/// [`View`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct FfiView {
    /// [`View::job`].
    pub job: u64,
    /// [`View::available`].
    pub available: RVec<FfiPoolSteps>,
}

impl From<&View> for FfiView {
    fn from(v: &View) -> Self {
        FfiView {
            job: v.job.0,
            available: rvec(&v.available, FfiPoolSteps::from),
        }
    }
}

impl From<&FfiView> for View {
    fn from(v: &FfiView) -> Self {
        View {
            job: JobId(v.job),
            available: v.available.iter().map(PoolSteps::from).collect(),
        }
    }
}

/// [`Plan`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default, PartialEq, Eq)]
pub struct FfiPlan {
    /// [`Plan::placements`].
    pub placements: RVec<FfiPlacement>,
    /// [`Plan::kills`].
    pub kills: RVec<FfiJobReason>,
    /// [`Plan::rejects`].
    pub rejects: RVec<FfiJobReason>,
    /// [`Plan::wake_at`].
    pub wake_at: ROption<u64>,
    /// [`Plan::views`].
    pub views: RVec<FfiView>,
}

impl From<&Plan> for FfiPlan {
    fn from(p: &Plan) -> Self {
        FfiPlan {
            placements: rvec(&p.placements, FfiPlacement::from),
            kills: rvec(&p.kills, FfiJobReason::from),
            rejects: rvec(&p.rejects, FfiJobReason::from),
            wake_at: p.wake_at.into(),
            views: rvec(&p.views, FfiView::from),
        }
    }
}

impl FfiPlan {
    /// Overwrites `self` with `p`, reusing the lists' buffers.
    pub fn refill_from(&mut self, p: &Plan) {
        // Most answers of a replay start one job or none and kill, reject and show nothing:
        // an empty list stays untouched (each clear and extend is a call through its vtable).
        fn refill<A, B: for<'a> From<&'a A>>(dst: &mut RVec<B>, src: &[A]) {
            if !(dst.is_empty() && src.is_empty()) {
                dst.clear();
                dst.extend(src.iter().map(B::from));
            }
        }
        refill(&mut self.placements, &p.placements);
        refill(&mut self.kills, &p.kills);
        refill(&mut self.rejects, &p.rejects);
        self.wake_at = p.wake_at.into();
        refill(&mut self.views, &p.views);
    }
}

impl FfiPlan {
    /// Copies the plan into `plan`, reusing its buffers: [`Plan::from`] without allocating
    /// when they are large enough.
    pub fn refill_into(&self, plan: &mut Plan) {
        fn refill<A, B: for<'a> From<&'a A>>(dst: &mut Vec<B>, src: &[A]) {
            if !(dst.is_empty() && src.is_empty()) {
                dst.clear();
                dst.extend(src.iter().map(B::from));
            }
        }
        refill(&mut plan.placements, &self.placements);
        refill(&mut plan.kills, &self.kills);
        refill(&mut plan.rejects, &self.rejects);
        plan.wake_at = self.wake_at.into_option();
        refill(&mut plan.views, &self.views);
    }
}

impl From<&FfiPlan> for Plan {
    fn from(p: &FfiPlan) -> Self {
        let mut plan = Plan::default();
        p.refill_into(&mut plan);
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pool() -> impl Strategy<Value = Option<PoolId>> {
        proptest::option::of((0u32..4).prop_map(PoolId))
    }

    fn steps() -> impl Strategy<Value = Vec<Step>> {
        proptest::collection::vec(
            (any::<u64>(), any::<u32>()).prop_map(|(d, n)| Step::new(d, n)),
            0..4,
        )
    }

    fn model() -> impl Strategy<Value = SpeedupModel> {
        prop_oneof![
            (any::<u64>(), 0.0f64..=1.0)
                .prop_map(|(work, serial)| SpeedupModel::Amdahl { work, serial }),
            any::<u64>().prop_map(|work| SpeedupModel::Linear { work }),
        ]
    }

    fn request() -> impl Strategy<Value = Request> {
        prop_oneof![
            (pool(), any::<u32>(), any::<u64>()).prop_map(
                |(pool, nodes, walltime)| Request::Rigid(Rigid {
                    pool,
                    nodes,
                    walltime
                })
            ),
            (
                pool(),
                proptest::collection::vec(
                    (any::<u32>(), any::<u64>())
                        .prop_map(|(nodes, walltime)| MoldConfig { nodes, walltime }),
                    0..3
                ),
                proptest::option::of(model()),
                any::<u32>(),
                any::<u32>(),
                -1e9f64..1e9
            )
                .prop_map(|(pool, configs, model, min_nodes, max_nodes, weight)| {
                    Request::Moldable(Moldable {
                        pool,
                        configs,
                        model,
                        min_nodes,
                        max_nodes,
                        weight,
                    })
                }),
            (pool(), steps()).prop_map(|(pool, steps)| Request::Evolving(Evolving { pool, steps })),
            (
                proptest::collection::vec(
                    (any::<u32>(), pool()).prop_map(|(nodes, pool)| Component { nodes, pool }),
                    0..3
                ),
                any::<u64>(),
                proptest::option::of(any::<u64>())
            )
                .prop_map(|(components, walltime, deadline)| {
                    Request::CoAllocated(CoAllocated {
                        components,
                        walltime,
                        deadline,
                    })
                }),
        ]
    }

    fn shape() -> impl Strategy<Value = Shape> {
        prop_oneof![
            (0u32..4, any::<u32>(), any::<u64>()).prop_map(|(p, nodes, walltime)| Shape::Rigid {
                pool: PoolId(p),
                nodes,
                walltime
            }),
            (0u32..4, any::<u32>(), any::<u64>()).prop_map(|(p, nodes, walltime)| {
                Shape::Moldable {
                    pool: PoolId(p),
                    nodes,
                    walltime,
                }
            }),
            (0u32..4, steps()).prop_map(|(p, steps)| Shape::Evolving {
                pool: PoolId(p),
                steps
            }),
            proptest::collection::vec((0u32..4).prop_map(PoolId), 0..3)
                .prop_map(|pools| Shape::CoAllocated { pools }),
        ]
    }

    fn pool_steps() -> impl Strategy<Value = PoolSteps> {
        (0u32..4, any::<u64>(), steps()).prop_map(|(p, start, steps)| PoolSteps {
            pool: PoolId(p),
            start,
            steps,
        })
    }

    fn pending() -> impl Strategy<Value = Pending> {
        (
            any::<u64>(),
            any::<u32>(),
            any::<u64>(),
            any::<u64>(),
            any::<i64>(),
            request(),
            any::<bool>(),
        )
            .prop_map(
                |(id, user, submit, earliest_start, priority, request, wants_view)| Pending {
                    wants_view,
                    id: JobId(id),
                    user,
                    submit,
                    earliest_start,
                    priority,
                    request,
                },
            )
    }

    fn running() -> impl Strategy<Value = Running> {
        (
            any::<u64>(),
            any::<u32>(),
            request(),
            shape(),
            any::<u64>(),
            proptest::collection::vec(pool_steps(), 0..3),
            any::<bool>(),
        )
            .prop_map(
                |(id, user, request, shape, start, holds, killable)| Running {
                    id: JobId(id),
                    user,
                    request,
                    shape,
                    start,
                    holds,
                    killable,
                },
            )
    }

    fn reason() -> impl Strategy<Value = JobReason> {
        (any::<u64>(), ".{0,12}").prop_map(|(job, reason)| JobReason {
            job: JobId(job),
            reason,
        })
    }

    fn plan() -> impl Strategy<Value = Plan> {
        let placement = (
            any::<u64>(),
            any::<u64>(),
            shape(),
            proptest::option::of(any::<u64>()),
        )
            .prop_map(|(job, start, shape, claim_from)| Placement {
                job: JobId(job),
                start,
                shape,
                claim_from,
            });
        let view = (any::<u64>(), proptest::collection::vec(pool_steps(), 0..3)).prop_map(
            |(job, available)| View {
                job: JobId(job),
                available,
            },
        );
        (
            proptest::collection::vec(placement, 0..5),
            proptest::collection::vec(reason(), 0..3),
            proptest::collection::vec(reason(), 0..3),
            proptest::option::of(any::<u64>()),
            proptest::collection::vec(view, 0..3),
        )
            .prop_map(|(placements, kills, rejects, wake_at, views)| Plan {
                placements,
                kills,
                rejects,
                wake_at,
                views,
            })
    }

    proptest! {
        #[test]
        fn snapshot_round_trips(
            now in any::<u64>(),
            pools in proptest::collection::vec((0u32..4, "[a-z]{0,8}", any::<u32>())
                .prop_map(|(id, name, nodes)| Pool { id: PoolId(id), name, nodes }), 0..4),
            running in proptest::collection::vec(running(), 0..5),
            pending in proptest::collection::vec(pending(), 0..8),
        ) {
            let snap = Snapshot { now, pools: &pools, running: &running, pending: &pending };
            let ffi = FfiSnapshot::from(&snap);
            let back = OwnedSnapshot::from(&ffi);
            prop_assert_eq!(&back, &OwnedSnapshot::from(&snap));
            // Refilling buffers that held another snapshot gives the same.
            let mut ffi2 = FfiSnapshot::from(&Snapshot { now: 1, pools: &pools, running: &running[..running.len() / 2], pending: &pending[pending.len() / 2..] });
            ffi2.refill_from(&snap);
            prop_assert_eq!(&ffi2, &ffi);
            let mut back2 = OwnedSnapshot::default();
            back2.pending.push(pending.first().cloned().unwrap_or_else(|| Pending { wants_view: false, id: JobId(0), user: 0, submit: 0, earliest_start: 0, priority: 0, request: Request::rigid(1, 1) }));
            back2.refill_from(&ffi);
            prop_assert_eq!(back2, back);
        }

        #[test]
        fn plan_round_trips(plan in plan()) {
            let ffi = FfiPlan::from(&plan);
            prop_assert_eq!(&Plan::from(&ffi), &plan);
            let mut reused = FfiPlan::from(&Plan { wake_at: Some(3), ..plan.clone() });
            reused.refill_from(&Plan::default());
            prop_assert_eq!(&reused, &FfiPlan::default());
            reused.refill_from(&plan);
            prop_assert_eq!(reused, ffi);
        }
    }

    /// One hand-built value of every variant, so a new variant that proptest's strategies miss
    /// still shows up here as a non-exhaustive match.
    #[test]
    fn every_request_kind_and_shape_round_trips() {
        let requests = [
            Request::Rigid(Rigid {
                pool: Some(PoolId(2)),
                nodes: 3,
                walltime: 4,
            }),
            Request::Moldable(Moldable {
                pool: None,
                configs: vec![MoldConfig {
                    nodes: 2,
                    walltime: 9,
                }],
                model: Some(SpeedupModel::Amdahl {
                    work: 100,
                    serial: 0.25,
                }),
                min_nodes: 1,
                max_nodes: 8,
                weight: 1.5,
            }),
            Request::Evolving(Evolving {
                pool: Some(PoolId(1)),
                steps: vec![Step::new(5, 1), Step::new(7, 3)],
            }),
            Request::CoAllocated(CoAllocated {
                components: vec![
                    Component {
                        nodes: 2,
                        pool: None,
                    },
                    Component {
                        nodes: 4,
                        pool: Some(PoolId(0)),
                    },
                ],
                walltime: 60,
                deadline: Some(1000),
            }),
        ];
        for r in &requests {
            let kind = match r {
                Request::Rigid(_)
                | Request::Moldable(_)
                | Request::Evolving(_)
                | Request::CoAllocated(_) => r.kind(),
            };
            assert_eq!(&Request::from(&FfiRequest::from(r)), r, "{kind}");
        }
        let shapes = [
            Shape::Rigid {
                pool: PoolId(0),
                nodes: 1,
                walltime: 2,
            },
            Shape::Moldable {
                pool: PoolId(1),
                nodes: 3,
                walltime: 4,
            },
            Shape::Evolving {
                pool: PoolId(2),
                steps: vec![Step::new(1, 1)],
            },
            Shape::CoAllocated {
                pools: vec![PoolId(0), PoolId(3)],
            },
        ];
        for s in &shapes {
            assert_eq!(&Shape::from(&FfiShape::from(s)), s);
        }
    }
}
