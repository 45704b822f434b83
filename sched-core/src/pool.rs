//! Node pools: named sets of identical nodes (Slurm's partitions, KOALA's clusters).

use abi_stable::std_types::RString;
use serde::{Deserialize, Serialize};

/// Index of a pool in a snapshot's pool list.
#[repr(transparent)]
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    abi_stable::StableAbi,
)]
pub struct PoolId(pub u32);

impl std::fmt::Display for PoolId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pool#{}", self.0)
    }
}

/// A pool of `nodes` identical nodes.
#[repr(C)]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, abi_stable::StableAbi)]
pub struct Pool {
    /// Stable identifier, used by requests and plans.
    pub id: PoolId,
    /// Human name (`debug`, `batch`, a KOALA cluster's name).
    pub name: RString,
    /// Number of nodes.
    pub nodes: u32,
}
