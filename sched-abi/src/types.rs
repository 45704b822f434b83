//! What crosses the boundary with a call: the snapshot, borrowed, and a driver's account of
//! what changed in it.
//!
//! Nothing of a snapshot is copied or converted: sched-core lays out every
//! type a snapshot's lists hold for the boundary itself (`#[repr(C)]`, enums `#[repr(u8)]`,
//! abi_stable's `RVec`, `ROption` and `RString` for what they own), so the plugin plans on the
//! host's own lists through [`FfiSnapshot`]'s slices, for the length of the call. A plan needs
//! no conversion either: it crosses as it is, moved. The snapshot is lent rather than copied
//! because a copy in the plugin, whether sent whole or kept up to date by deltas, would cost a
//! pass over every job the host holds at every call.
//!
//! What may change, and how (see also `docs/plugins.md`):
//! - these data types, and sched-core's that they borrow, are frozen for a major ABI version:
//!   a new field, a new variant or a renamed one is a major bump ([`crate::ABI_VERSION`]),
//!   because their layout is checked exactly;
//! - the root module and the policy object are prefix types: new functions are appended after
//!   the field marked `#[sabi(last_prefix_field)]` in a minor bump, and an older plugin simply
//!   lacks them.

use abi_stable::std_types::{ROption, RSlice};
use abi_stable::StableAbi;
use sched_core::{Changes, ListChanges, Pending, Pool, Running, Snapshot, Time};

/// A [`Snapshot`] across the boundary: the host's lists, borrowed for the call.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct FfiSnapshot<'a> {
    /// [`Snapshot::now`].
    pub now: Time,
    /// [`Snapshot::pools`].
    pub pools: RSlice<'a, Pool>,
    /// [`Snapshot::running`].
    pub running: RSlice<'a, Running>,
    /// [`Snapshot::pending`].
    pub pending: RSlice<'a, Pending>,
}

impl<'a> From<&Snapshot<'a>> for FfiSnapshot<'a> {
    fn from(s: &Snapshot<'a>) -> Self {
        FfiSnapshot {
            now: s.now,
            pools: s.pools.into(),
            running: s.running.into(),
            pending: s.pending.into(),
        }
    }
}

impl<'a> FfiSnapshot<'a> {
    /// The snapshot the host lent: the same lists, not a copy.
    pub fn as_snapshot(&self) -> Snapshot<'a> {
        Snapshot {
            now: self.now,
            pools: self.pools.as_slice(),
            running: self.running.as_slice(),
            pending: self.pending.as_slice(),
        }
    }
}

/// A [`ListChanges`] across the boundary, borrowed.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct FfiListChanges<'a> {
    /// [`ListChanges::left`].
    pub left: RSlice<'a, usize>,
    /// [`ListChanges::arrived`].
    pub arrived: usize,
}

impl<'a> From<&'a ListChanges> for FfiListChanges<'a> {
    fn from(c: &'a ListChanges) -> Self {
        FfiListChanges {
            left: c.left.as_slice().into(),
            arrived: c.arrived,
        }
    }
}

impl FfiListChanges<'_> {
    /// Copies the account into `into`, reusing its buffer.
    pub fn copy_into(&self, into: &mut ListChanges) {
        into.left.clear();
        into.left.extend_from_slice(self.left.as_slice());
        into.arrived = self.arrived;
    }
}

/// A [`Changes`] across the boundary, borrowed.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct FfiChanges<'a> {
    /// [`Changes::running`].
    pub running: ROption<FfiListChanges<'a>>,
    /// [`Changes::pending`].
    pub pending: ROption<FfiListChanges<'a>>,
}

impl FfiChanges<'_> {
    /// No account: the policy is not told.
    pub const NOT_TOLD: FfiChanges<'static> = FfiChanges {
        running: ROption::RNone,
        pending: ROption::RNone,
    };
}

impl<'a> From<&'a Changes> for FfiChanges<'a> {
    fn from(c: &'a Changes) -> Self {
        FfiChanges {
            running: c.running.as_ref().map(FfiListChanges::from).into(),
            pending: c.pending.as_ref().map(FfiListChanges::from).into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sched_core::{JobId, PoolId, Request};

    #[test]
    fn a_snapshot_crosses_as_the_same_lists() {
        let pools = [Pool {
            id: PoolId(0),
            name: "batch".into(),
            nodes: 8,
        }];
        let pending = [Pending {
            id: JobId(7),
            user: 1,
            submit: 2,
            earliest_start: 3,
            priority: 4,
            request: Request::rigid(2, 60),
            wants_view: true,
            claimed: Default::default(),
        }];
        let snap = Snapshot {
            now: 5,
            pools: &pools,
            running: &[],
            pending: &pending,
        };
        let back = FfiSnapshot::from(&snap).as_snapshot();
        assert_eq!(back.now, 5);
        assert!(std::ptr::eq(back.pools, snap.pools));
        assert!(std::ptr::eq(back.pending, snap.pending));
        assert!(back.running.is_empty());
    }

    #[test]
    fn an_account_crosses_and_is_copied_into_a_kept_buffer() {
        let changes = Changes {
            running: Some(ListChanges {
                left: vec![1, 4],
                arrived: 2,
            }),
            pending: None,
        };
        let ffi = FfiChanges::from(&changes);
        assert!(ffi.pending.is_none());
        let mut kept = ListChanges {
            left: vec![9, 9, 9],
            arrived: 5,
        };
        ffi.running.unwrap().copy_into(&mut kept);
        assert_eq!(Some(kept), changes.running);
    }
}
