//! Where the command-line tools get a policy from a name: the one seam between a tool and the
//! policy implementations.
//!
//! [`select`] is what the tools call: it loads the policy's plugin library through
//! `sched-abi` (a name, resolved in `$ESCHED_PLUGIN_DIR` or next to the executable, or a path
//! to a `.so`); a stock policy whose library is nowhere runs its linked copy, with a note. [`builtin`] builds the same policies linked into this crate (the table of
//! `esched_stock`), kept for comparing a loaded plugin against the linked code
//! (`esim --linked`); [`choose`] picks one of the two.

use esched_stock::Stock;
use sched_abi::{HostedPolicy, PolicyHost};
use sched_core::{ParamError, Params, Policy};

/// A policy that cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// No policy of that name.
    #[error("unknown policy `{name}` (known: {})", .known.join(", "))]
    Unknown {
        /// The name asked for.
        name: String,
        /// The names that exist.
        known: Vec<String>,
    },
    /// The policy refuses its parameters.
    #[error("policy `{name}`: {source}")]
    Params {
        /// The policy.
        name: String,
        /// Why.
        source: ParamError,
    },
}

/// The stock policy `name`, or the error that lists them all.
fn stock(name: &str) -> Result<&'static Stock, PolicyError> {
    esched_stock::find(name).ok_or_else(|| PolicyError::Unknown {
        name: name.to_string(),
        known: esched_stock::names().map(str::to_string).collect(),
    })
}

/// `--policy`'s long help, naming the stock policies from their table.
pub fn policy_help() -> String {
    format!(
        "The policy: a name (a stock one: {}; loaded from `libesched_<name>.so` in \
         `$ESCHED_PLUGIN_DIR` or next to esim, else the copy linked into esim; always that copy \
         with --linked) or the path of a \
         policy library",
        esched_stock::known()
    )
}

/// Builds the linked policy `name` with `params`.
pub fn builtin(name: &str, params: &Params) -> Result<Box<dyn Policy + Send>, PolicyError> {
    let stock = stock(name)?;
    (stock.policy)(params).map_err(|source| PolicyError::Params {
        name: stock.name.to_string(),
        source,
    })
}

/// The policy a tool asked for by `spec`, loaded from its plugin library: a name (found in
/// `$ESCHED_PLUGIN_DIR` when set, else next to the executable) or a path to a shared library.
/// A stock policy's name with no library to be found runs the linked copy ([`load`]).
pub fn select(spec: &str, params: &Params) -> anyhow::Result<Box<dyn Policy + Send>> {
    match load(spec, params)? {
        Source::Plugin(p) => Ok(p),
        Source::Linked(_) => Ok(builtin(spec, params)?),
    }
}

/// Where a policy named on the command line comes from.
enum Source {
    /// Its plugin library (boxed: it is boxed for its caller anyway).
    Plugin(Box<sched_abi::LoadedPolicy>),
    /// The copy linked into this executable: a stock policy whose library is nowhere.
    Linked(&'static Stock),
}

/// Stock policies already said to run their linked copy, so that a command calling the
/// loader for each of many runs says it once.
static SAID_LINKED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Loads `spec`'s plugin library. A stock policy's name whose library is found nowhere (an
/// esim installed alone, by `cargo install` or scripts/install.sh) falls back to the copy
/// linked into esim, and says so on stderr once per process and policy; any other failure
/// (a stale library, an ABI mismatch, a path that does not exist) stays an error, since a
/// comparison of plugin against linked code must not silently run the linked one twice.
fn load(spec: &str, params: &Params) -> anyhow::Result<Source> {
    let dir = std::env::var_os("ESCHED_PLUGIN_DIR").map(std::path::PathBuf::from);
    match sched_abi::load(spec, dir.as_deref(), params) {
        Ok(p) => Ok(Source::Plugin(Box::new(p))),
        Err(sched_abi::LoadError::NotFound { tried, .. })
            if !spec.contains('/') && esched_stock::find(spec).is_some() =>
        {
            let stock = stock(spec)?;
            let mut said = SAID_LINKED.lock().unwrap_or_else(|e| e.into_inner());
            if !said.iter().any(|s| s == spec) {
                said.push(spec.to_string());
                let tried: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
                eprintln!(
                    "esim: no plugin library for `{spec}` (tried {}); running the copy linked \
                     into esim",
                    tried.join(", ")
                );
            }
            Ok(Source::Linked(stock))
        }
        // A mistyped name should say which names exist, not only which files were tried.
        Err(e @ sched_abi::LoadError::NotFound { .. }) if !spec.contains('/') => {
            Err(anyhow::anyhow!(
                "{e} (policies shipped with esched: {})",
                esched_stock::known()
            ))
        }
        Err(e) => Err(e.into()),
    }
}

/// The policy `spec` under sched-abi's containment, the way the drivers call it: the plugin
/// library (its errors reach the host, where a plain [`select`] turns them into empty plans)
/// or, when `linked` or when a stock policy has no library ([`load`]), the linked copy,
/// rebuilt after a panic as a plugin is.
pub fn hosted(spec: &str, params: &Params, linked: bool) -> anyhow::Result<PolicyHost> {
    let linked_copy = |stock: &Stock| -> anyhow::Result<Box<dyn HostedPolicy + Send>> {
        (stock.hosted)(params).map_err(|source| {
            PolicyError::Params {
                name: stock.name.to_string(),
                source,
            }
            .into()
        })
    };
    let policy: Box<dyn HostedPolicy + Send> = if linked {
        linked_copy(stock(spec)?)?
    } else {
        match load(spec, params)? {
            Source::Plugin(p) => p,
            Source::Linked(stock) => linked_copy(stock)?,
        }
    };
    Ok(PolicyHost::boxed(policy))
}

/// [`builtin`] when `linked`, else [`select`].
pub fn choose(spec: &str, params: &Params, linked: bool) -> anyhow::Result<Box<dyn Policy + Send>> {
    if linked {
        Ok(builtin(spec, params)?)
    } else {
        select(spec, params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_builds_and_unknown_names_list_them() {
        for name in esched_stock::names() {
            assert!(builtin(name, &Params::new()).is_ok(), "{name}");
            assert!(hosted(name, &Params::new(), true).is_ok(), "{name}");
        }
        let err = builtin("cfb", &Params::new()).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("unknown policy `cfb` (known: fcfs, easy, cbf, evolving, bicriteria, rpp, coorm)")
        );
    }

    #[test]
    fn unknown_parameters_are_refused() {
        let p = Params::from_pairs([("no_such_knob", "1")]);
        let err = builtin("cbf", &p)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("no_such_knob"), "{err}");
    }
}
