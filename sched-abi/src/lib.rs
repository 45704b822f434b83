//! # sched-abi
//!
//! The plugin boundary of esched: how a policy built as a shared library is found, checked,
//! called and contained, without rebuilding batchd or esim.
//!
//! - [`types`]: FFI-safe mirrors of [`sched_core::Snapshot`]'s lists (all four request kinds),
//!   with lossless conversions both ways; a [`sched_core::Plan`] needs none (ABI 4.0): sched-core
//!   lays it out for the boundary, and it crosses as it is;
//! - [`delta`]: delta snapshots (ABI 3.0): after the first call, only the lists' changes cross
//!   the boundary, applied by the plugin to the snapshot it kept;
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
//! [`host`], which are all the drivers use, but the containers a [`sched_core::Plan`] is made of
//! (`RVec`, `ROption`, `RString`, which sched-core re-exports).
#![deny(missing_docs)]
// abi_stable's derives name generated types `PolicyMod_Ref`, `FfiPolicy_TO`, and define impls
// inside generated constants.
#![allow(non_camel_case_types, non_local_definitions)]

pub mod delta;
mod export;
pub mod host;
pub mod loader;
pub mod module;
pub mod types;

pub use delta::{BoundaryStats, Continuity, QueueChanges};
pub use export::guard;
pub use host::{
    Borrowed, Check, Failure, HostStats, HostTiming, HostedPolicy, Linked, Outcome, PolicyHost,
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
