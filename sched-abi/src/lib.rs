//! # sched-abi
//!
//! The plugin boundary of esched: how a policy built as a shared library is found, checked,
//! called and contained, without rebuilding batchd or esim.
//!
//! - [`types`]: what crosses with a call: a [`sched_core::Snapshot`]'s lists, borrowed (ABI
//!   5.0), and a driver's account of what changed in them. Nothing is mirrored or converted:
//!   sched-core lays out a snapshot's types (all four request kinds) and a
//!   [`sched_core::Plan`] for the boundary, so the plugin plans on the host's lists, and a
//!   plan crosses as it is, moved;
//! - [`module`]: the root module a policy library exports (ABI version, name, constructor) and
//!   the policy object it builds;
//! - [`export_policy!`]: the one line that turns a `Policy + NamedPolicy` type into a plugin,
//!   catching every panic on the plugin's side;
//! - [`loader`]: [`load`] by name or path, with a distinct [`LoadError`] for each way a file
//!   can fail to be a usable policy; a thin facade over abi_stable;
//! - [`host`]: [`PolicyHost`], the containment both drivers use (batchd's scheduler and its
//!   `--test-only` answers, esim's engine): validate every plan, and on a panic, an error or a
//!   refused plan log it with the policy's name, count it and act on the last valid plan,
//!   re-validated. The drivers have no check of their own.
//!
//! Boundary facts (see `docs/plugins.md`): a loaded library is never unloaded; a panic must not
//! cross an exported function (it would abort the process), which the export macro guarantees;
//! calls are synchronous.
//!
//! Architecture invariant: nothing of abi_stable appears in the signatures of [`loader`] and
//! [`host`], which are all the drivers use, but the containers sched-core's types are made of
//! (`RVec`, `ROption`, `RString`, which sched-core re-exports).
#![deny(missing_docs)]
// abi_stable's derives name generated types `PolicyMod_Ref`, `FfiPolicy_TO`, and define impls
// inside generated constants.
#![allow(non_camel_case_types, non_local_definitions)]
// Unsafe only where a library's symbol is read and the time-stamp counter, each block saying
// why it is sound; the export macro's expands in the plugin crates.
#![deny(unsafe_code)]

mod clock;
mod export;
pub mod host;
pub mod loader;
// abi_stable's `#[sabi_trait]` implements unsafe traits and calls through unsafe blocks in
// what it generates for `FfiPolicy`: sound by abi_stable's layout checks at load.
#[allow(unsafe_code)]
pub mod module;
pub mod types;

pub use export::guard;
pub use host::{
    Borrowed, CallTimes, Check, Failure, HostShare, HostStats, HostTiming, HostedPolicy, InFlight,
    Linked, Outcome, PolicyHost,
};
pub use loader::{load, LoadError, LoadedPolicy, PluginError, PolicyLibrary};
pub use module::{AbiVersion, PolicyMod, PolicyMod_Ref, ABI_VERSION};

/// What the expansion of [`export_policy!`] refers to; not part of the public interface.
#[doc(hidden)]
pub mod __private {
    pub use crate::export::root_module;
    pub use abi_stable::library::{CheckTypeLayout, LibHeader, RootModuleResult};

    /// abi_stable's shim that calls a root-module constructor, catching its panics.
    pub fn call_root_module_loader(f: fn() -> crate::PolicyMod_Ref) -> RootModuleResult {
        abi_stable::library::__call_root_module_loader(f)
    }
}
