//! # sched-core
//!
//! The scheduling core of esched, shared by every policy and both drivers (batchd and esim):
//!
//! - [`time`]: integer milliseconds everywhere;
//! - [`pool`] and [`request`]: node pools and the four request kinds of the papers (rigid,
//!   moldable, evolving, co-allocated);
//! - [`profile`]: step functions over time with the operations of Klein & Pérez §3.1 and the
//!   earliest-fit query of backfilling;
//! - [`policy`]: the contract — a [`Snapshot`] in, a [`Plan`] out;
//! - [`validate`]: the plan validator, the only thing between a policy and the nodes;
//! - [`metrics`]: per-job and per-run figures.
//!
//! Architecture invariant: this crate does no I/O, no async and no FFI. What a snapshot and a
//! plan hold is laid out for the plugin boundary all the same (`#[repr(C)]`, abi_stable's
//! `RVec`, `ROption` and `RString`, re-exported here): a plugin plans on the host's lists, lent,
//! and its plan crosses back as it is, moved; nothing is converted.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod idmap;
pub mod metrics;
pub mod nodemap;
pub mod policy;
pub mod pool;
pub mod profile;
pub mod request;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod time;
pub mod validate;

pub use policy::{
    cap_value_at, kill_reason_for, Changes, Kill, ListChanges, NamedPolicy, ParamError, Params,
    Pending, Placement, Plan, Policy, PoolSteps, Reject, RejectKind, Running, Shape, Snapshot,
    View, FOREVER,
};
pub use pool::{Pool, PoolId};
pub use profile::Profile;
pub use request::{
    CoAllocated, Component, Evolving, JobId, MoldConfig, Moldable, Request, Rigid, SpeedupModel,
    Step,
};
pub use time::{Duration, Time};
pub use validate::{validate, PlanError, Violation};

/// The containers of a snapshot's entries and of a [`Plan`] (abi_stable's, whose layout the
/// plugin boundary checks), so that a policy needs no dependency of its own to use them.
pub use abi_stable::rvec;
pub use abi_stable::std_types::{RNone, ROption, RSome, RString, RVec};
