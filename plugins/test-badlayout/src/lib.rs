//! An abi_stable library whose root module has esched's name and version but another layout:
//! the loader must report an ABI (layout) mismatch, never call into it.
#![allow(non_camel_case_types)]

use abi_stable::library::RootModule;
use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::sabi_types::VersionStrings;
use abi_stable::std_types::RStr;
use abi_stable::{declare_root_module_statics, export_root_module, StableAbi};

/// Not esched's `PolicyMod`: a field of another type and no constructor.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = PolicyMod_Ref)))]
#[sabi(missing_field(option))]
pub struct PolicyMod {
    /// An ABI version of the wrong shape.
    pub abi_version: u64,
    /// The name.
    #[sabi(last_prefix_field)]
    pub name: RStr<'static>,
}

impl RootModule for PolicyMod_Ref {
    declare_root_module_statics! {PolicyMod_Ref}
    const BASE_NAME: &'static str = "esched_policy";
    const NAME: &'static str = "esched_policy";
    // The host's own version: only the layout may be what refuses it.
    const VERSION_STRINGS: VersionStrings = VersionStrings::new("7.0.0");
}

/// The root module.
#[export_root_module]
pub fn root() -> PolicyMod_Ref {
    PolicyMod {
        abi_version: 2,
        name: RStr::from_str("test-badlayout"),
    }
    .leak_into_prefix()
}
