//! FFI-safe mirrors of the snapshot's lists, field by field, and lossless conversions both
//! ways.
//!
//! Every type here is `#[repr(C)]` (enums `#[repr(u8)]`) and derives [`StableAbi`], so the
//! loader can check that a plugin was built against the same layout. They are plain data:
//! owned `R*` containers, integers for ids, no references and no function pointers, so a value
//! built on one side of the boundary is freed on the other without a shared allocator.
//!
//! What a plan holds needs no mirror (since ABI 4.0): sched-core lays [`sched_core::Plan`],
//! its placements and shapes, [`Step`] and [`PoolSteps`] out for the boundary itself, so a
//! plan crosses it as it is and the snapshot's mirrors use those types where they hold them.
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
    CoAllocated, Component, Evolving, JobId, MoldConfig, Moldable, Pending, Pool, PoolId,
    PoolSteps, Request, Rigid, Running, Shape, Snapshot, SpeedupModel, Step,
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
    pub steps: RVec<Step>,
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
                steps: e.steps.iter().copied().collect(),
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
                steps: e.steps.to_vec(),
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
    pub shape: Shape,
    /// [`Running::start`].
    pub start: u64,
    /// [`Running::holds`].
    pub holds: RVec<PoolSteps>,
    /// [`Running::killable`].
    pub killable: bool,
}

impl From<&Running> for FfiRunning {
    fn from(r: &Running) -> Self {
        FfiRunning {
            id: r.id.0,
            user: r.user,
            request: (&r.request).into(),
            shape: r.shape.clone(),
            start: r.start,
            holds: r.holds.iter().cloned().collect(),
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
            shape: r.shape.clone(),
            start: r.start,
            holds: r.holds.to_vec(),
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
                steps: steps.into(),
            }),
            proptest::collection::vec((0u32..4).prop_map(PoolId), 0..3).prop_map(|pools| {
                Shape::CoAllocated {
                    pools: pools.into(),
                }
            }),
        ]
    }

    fn pool_steps() -> impl Strategy<Value = PoolSteps> {
        (0u32..4, any::<u64>(), steps()).prop_map(|(p, start, steps)| PoolSteps {
            pool: PoolId(p),
            start,
            steps: steps.into(),
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
    }

    /// One hand-built value of every request kind, so a new kind that proptest's strategies
    /// miss still shows up here as a non-exhaustive match.
    #[test]
    fn every_request_kind_round_trips() {
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
    }
}
