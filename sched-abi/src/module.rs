//! The root module a policy library exports, and the policy object it builds.

use abi_stable::library::RootModule;
use abi_stable::sabi_types::VersionStrings;
use abi_stable::std_types::{RBox, RStr, RString, RVec, Tuple2};
use abi_stable::{declare_root_module_statics, sabi_trait, StableAbi};

use sched_core::Plan;

use crate::types::{FfiChanges, FfiSnapshot};

/// A version of the esched policy ABI: plugins and hosts of the same `major` work together.
///
/// The rule: a change to any data type of [`crate::types`], or of sched-core's that cross the
/// boundary as they are (`Plan` and what it holds, `Pool`, `Pending`, `Running`, `Request` and
/// its kinds: a field, a variant), or to the
/// methods of [`FfiPolicy`] (abi_stable checks a trait object's vtable exactly: a 3.0 host
/// refused a 2.0 plugin lacking one appended method as a layout mismatch) bumps `major`; a
/// function appended to [`PolicyMod`] after its `last_prefix_field` bumps `minor`. A host reads
/// appended root-module functions as optional, so any minor works with any other.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbiVersion {
    /// Incompatible changes.
    pub major: u32,
    /// Compatible additions.
    pub minor: u32,
}

impl AbiVersion {
    /// Whether a plugin of version `plugin` can be used by a host of this version.
    pub fn accepts(self, plugin: AbiVersion) -> bool {
        self.major == plugin.major
    }
}

impl std::fmt::Display for AbiVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The ABI this build of `sched-abi` speaks.
pub const ABI_VERSION: AbiVersion = AbiVersion { major: 7, minor: 0 };

/// [`ABI_VERSION`] as text, for abi_stable's own version check; must agree with it (a unit test
/// checks).
const ABI_VERSION_STR: &str = "7.0.0";

/// What went wrong on the plugin's side of a call.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FfiErrorKind {
    /// The constructor does not know a parameter.
    UnknownParam,
    /// The constructor cannot accept a parameter's value.
    BadParam,
    /// The policy panicked; the message is the panic's.
    Panic,
}

/// An error returned across the boundary (never a panic: that would abort the process).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct FfiError {
    /// What kind of failure.
    pub kind: FfiErrorKind,
    /// The parameter at fault, or empty.
    pub key: RString,
    /// Readable text.
    pub message: RString,
}

/// The policy object a plugin builds: a [`sched_core::Policy`] behind a stable vtable.
///
/// `Send` so a driver can run a slow plan off its async runtime.
#[sabi_trait]
pub trait FfiPolicy: Send {
    /// [`sched_core::Policy::plan_starts`] (`starts`) or [`sched_core::Policy::plan`] of the
    /// host's snapshot, lent for the call (nothing of it is copied), into
    /// `plan`: the policy's answer is swapped in, and the plan `plan` held goes to
    /// [`sched_core::Policy::recycle`] (a [`Plan`] crosses the boundary as it
    /// is: its lists carry their own allocator, so either side may grow or free them); a panic
    /// comes back as [`FfiErrorKind::Panic`].
    ///
    /// `changes` is the driver's account of how the snapshot differs from the last one this
    /// instance planned on, told to the policy first ([`sched_core::Policy::expect_changes`])
    /// when it says anything (both lists `RNone`: not told).
    #[sabi(last_prefix_field)]
    fn plan(
        &mut self,
        snapshot: &FfiSnapshot<'_>,
        changes: &FfiChanges<'_>,
        starts: bool,
        plan: &mut Plan,
    ) -> abi_stable::std_types::RResult<(), FfiError>;
}

/// An owned policy object from a plugin.
pub type PolicyBox = FfiPolicy_TO<'static, RBox<()>>;

/// Parameters as they cross the boundary: `(key, value)` text pairs.
pub type FfiParams = RVec<Tuple2<RString, RString>>;

/// The root module of an esched policy library.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = PolicyMod_Ref)))]
#[sabi(missing_field(option))]
pub struct PolicyMod {
    /// The ABI the plugin was built for.
    pub abi_version: AbiVersion,
    /// The policy's name ([`sched_core::NamedPolicy::NAME`]).
    pub name: RStr<'static>,
    /// Builds a policy from its parameters.
    #[sabi(last_prefix_field)]
    pub new: extern "C" fn(FfiParams) -> abi_stable::std_types::RResult<PolicyBox, FfiError>,
}

impl RootModule for PolicyMod_Ref {
    declare_root_module_statics! {PolicyMod_Ref}
    const BASE_NAME: &'static str = "esched_policy";
    const NAME: &'static str = "esched_policy";
    const VERSION_STRINGS: VersionStrings = VersionStrings::new(ABI_VERSION_STR);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_text_agrees_with_constant() {
        assert_eq!(ABI_VERSION_STR, format!("{ABI_VERSION}.0"));
    }

    #[test]
    fn only_major_decides() {
        assert!(ABI_VERSION.accepts(AbiVersion {
            major: ABI_VERSION.major,
            minor: ABI_VERSION.minor + 3
        }));
        assert!(!ABI_VERSION.accepts(AbiVersion {
            major: ABI_VERSION.major + 1,
            minor: 0
        }));
    }
}
