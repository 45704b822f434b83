//! The plugin side: [`export_policy!`](crate::export_policy) and what its expansion calls.
//!
//! Everything a plugin exports goes through [`guard`], which catches a panic before it reaches
//! the `extern "C"` frame (where it would abort the host) and returns it as an [`FfiError`] of
//! kind [`FfiErrorKind::Panic`] carrying the panic's message and location.

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};

use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, ROk, ROption, RResult, RStr, RString};
use sched_core::{Changes, ListChanges, NamedPolicy, ParamError, Params, Plan, Policy};

use crate::module::{
    AbiVersion, FfiError, FfiErrorKind, FfiParams, FfiPolicy, FfiPolicy_TO, PolicyBox, PolicyMod,
    PolicyMod_Ref,
};
use crate::types::{FfiChanges, FfiListChanges, FfiSnapshot};

/// Exports a policy type from a `cdylib` crate as an esched plugin.
///
/// The type must implement [`sched_core::Policy`], [`sched_core::NamedPolicy`] and `Send`.
/// One line at the end of the plugin's `lib.rs`:
///
/// ```ignore
/// sched_abi::export_policy!(Cbf);
/// ```
///
/// The crate needs `crate-type = ["cdylib", "rlib"]` (the `rlib` lets drivers and tests link
/// it directly) and no direct dependency on abi_stable. The expansion defines the one symbol
/// the loader looks for, `esched_policy_root_<crate name>`, so several policy crates can be
/// linked into one binary; every call into the plugin catches panics on the plugin's side.
#[macro_export]
macro_rules! export_policy {
    ($policy:ty $(,)?) => {
        $crate::export_policy!(@with_abi_version $crate::ABI_VERSION, $policy);
    };
    // Not part of the public interface: lets the loader's tests build a plugin that claims
    // another ABI version while keeping today's layout.
    (@with_abi_version $version:expr, $policy:ty) => {
        /// The root module header of this esched policy library, read by `sched_abi::load`.
        #[doc(hidden)]
        // Named after the crate, not abi_stable's fixed `#[export_root_module]` symbol: a
        // driver links several policy crates' rlibs into one binary, and one fixed name would
        // be defined once per policy there. The loader derives the name from the file name
        // (`lib<crate>.so`), or finds it in the file when the library was renamed.
        #[export_name = concat!("esched_policy_root_", env!("CARGO_CRATE_NAME"))]
        pub static ESCHED_POLICY_ROOT_MODULE: $crate::__private::LibHeader = {
            extern "C" fn esched_erased_root_module() -> $crate::__private::RootModuleResult {
                fn build() -> $crate::PolicyMod_Ref {
                    $crate::__private::root_module::<$policy>($version)
                }
                $crate::__private::call_root_module_loader(build)
            }
            // SAFETY: the constructor returns a `PolicyMod_Ref` erased by abi_stable's own
            // loader shim, which is what `from_constructor::<PolicyMod_Ref>` requires.
            unsafe {
                $crate::__private::LibHeader::from_constructor::<$crate::PolicyMod_Ref>(
                    esched_erased_root_module,
                    $crate::__private::CheckTypeLayout::Yes,
                )
            }
        };
    };
}

/// The prefix of the symbol [`export_policy!`](crate::export_policy) defines; the crate's
/// name follows.
pub(crate) const ROOT_SYMBOL_PREFIX: &str = "esched_policy_root_";

/// What [`guard`] and the panic hook share on a thread.
struct Guarded {
    /// Set while the thread runs plugin code under [`guard`].
    active: Cell<bool>,
    /// The last panic's message and location, recorded by the hook.
    last_panic: RefCell<Option<String>>,
}

thread_local! {
    // One thread-local, not two: in a shared library each access is a call to
    // `__tls_get_addr`, and [`guard`] runs at every call of a replay.
    static GUARDED: Guarded = const {
        Guarded {
            active: Cell::new(false),
            last_panic: RefCell::new(None),
        }
    };
}

/// Installs, once per library, a panic hook that records a guarded panic's message and
/// location instead of printing it: the host logs it with the plugin's name. A panic outside
/// a guarded call (possible only if the host shares this `std`) goes to the previous hook.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // `try_with`: a panic while the thread's locals are torn down must not panic again
            // here (that would abort); it is not a guarded one.
            if GUARDED.try_with(|g| g.active.get()).unwrap_or(false) {
                let text = match info.location() {
                    Some(l) => format!(
                        "{} (at {}:{})",
                        payload_text(info.payload()),
                        l.file(),
                        l.line()
                    ),
                    None => payload_text(info.payload()),
                };
                GUARDED.with(|g| *g.last_panic.borrow_mut() = Some(text));
            } else {
                previous(info);
            }
        }));
    });
}

fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-text payload".to_string()
    }
}

/// Runs `f`, turning a panic into an [`FfiError`] of kind [`FfiErrorKind::Panic`].
pub fn guard<T>(f: impl FnOnce() -> RResult<T, FfiError>) -> RResult<T, FfiError> {
    let outer = GUARDED.with(|g| {
        g.last_panic.borrow_mut().take();
        g.active.replace(true)
    });
    // The policy's state after a panic is not trusted: the host drops (leaks) the instance,
    // so unwind safety of what `f` touched does not matter.
    let result = catch_unwind(AssertUnwindSafe(f));
    GUARDED.with(|g| g.active.set(outer));
    match result {
        Ok(r) => r,
        Err(payload) => {
            let message = GUARDED
                .with(|g| g.last_panic.borrow_mut().take())
                .unwrap_or_else(|| payload_text(&*payload));
            // Dropping the payload runs plugin code too; a payload whose destructor panics
            // would abort, so it is forgotten instead.
            std::mem::forget(payload);
            RErr(FfiError {
                kind: FfiErrorKind::Panic,
                key: RString::new(),
                message: message.into(),
            })
        }
    }
}

fn param_error(e: ParamError) -> FfiError {
    let (kind, key) = match &e {
        ParamError::Unknown { key, .. } => (FfiErrorKind::UnknownParam, key.clone()),
        ParamError::BadValue { key, .. } => (FfiErrorKind::BadParam, key.clone()),
    };
    FfiError {
        kind,
        key: key.into(),
        message: e.to_string().into(),
    }
}

/// A policy behind the [`FfiPolicy`] vtable.
struct Exported<P> {
    policy: P,
    /// Buffers of the accounts told to the policy ([`Policy::expect_changes`]), running jobs'
    /// and queue's, kept from call to call.
    told: [ListChanges; 2],
}

impl<P: Policy + Send + 'static> FfiPolicy for Exported<P> {
    fn plan(
        &mut self,
        snapshot: &FfiSnapshot<'_>,
        changes: &FfiChanges<'_>,
        starts: bool,
        out: &mut Plan,
    ) -> RResult<(), FfiError> {
        guard(|| {
            if changes.running.is_some() || changes.pending.is_some() {
                self.tell(changes);
            }
            // The host's own lists: nothing was copied to get here.
            let s = snapshot.as_snapshot();
            let plan = if starts {
                self.policy.plan_starts(&s)
            } else {
                self.policy.plan(&s)
            };
            // The answer crosses as it is; the host's last buffer goes back to the policy.
            self.policy.recycle(std::mem::replace(out, plan));
            ROk(())
        })
    }
}

impl<P: Policy> Exported<P> {
    /// [`Policy::expect_changes`] with the host's account, copied into the kept buffers, lent
    /// to the policy for the call and taken back.
    fn tell(&mut self, changes: &FfiChanges<'_>) {
        let [running, pending] = &mut self.told;
        let lent = |from: ROption<FfiListChanges<'_>>, buffer: &mut ListChanges| {
            from.into_option().map(|c| {
                c.copy_into(buffer);
                std::mem::take(buffer)
            })
        };
        let told = Changes {
            running: lent(changes.running, running),
            pending: lent(changes.pending, pending),
        };
        self.policy.expect_changes(&told);
        if let Some(r) = told.running {
            self.told[0] = r;
        }
        if let Some(p) = told.pending {
            self.told[1] = p;
        }
    }
}

extern "C" fn new_policy<P: NamedPolicy + Send + 'static>(
    params: FfiParams,
) -> RResult<PolicyBox, FfiError> {
    guard(|| {
        let params = Params::from_pairs(
            params
                .into_iter()
                .map(|t| (t.0.into_string(), t.1.into_string())),
        );
        let policy = match P::from_params(&params).and_then(|p| params.finish().map(|()| p)) {
            Ok(p) => p,
            Err(e) => return RErr(param_error(e)),
        };
        ROk(FfiPolicy_TO::from_value(
            Exported {
                policy,
                told: Default::default(),
            },
            TD_Opaque,
        ))
    })
}

/// The root module of a plugin exporting `P`, claiming ABI `abi_version`.
pub fn root_module<P: NamedPolicy + Send + 'static>(abi_version: AbiVersion) -> PolicyMod_Ref {
    install_panic_hook();
    PolicyMod {
        abi_version,
        name: RStr::from_str(P::NAME),
        new: new_policy::<P>,
    }
    .leak_into_prefix()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_turns_a_panic_into_an_error_with_its_message() {
        install_panic_hook();
        let r: RResult<(), FfiError> = guard(|| panic!("boom {}", 42));
        let e = r.unwrap_err();
        assert_eq!(e.kind, FfiErrorKind::Panic);
        assert!(e.message.as_str().starts_with("boom 42"), "{}", e.message);
        assert!(e.message.as_str().contains("export.rs"), "{}", e.message);
        assert!(!GUARDED.with(|g| g.active.get()));
    }
}
