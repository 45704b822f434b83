//! Where the command-line tools get a policy from a name: the one seam between a tool and the
//! policy implementations.
//!
//! [`select`] is what the tools call: it loads the policy's plugin library through
//! `sched-abi` (a name, resolved in `$ESCHED_PLUGIN_DIR` or next to the executable, or a path
//! to a `.so`). [`builtin`] builds the same policies linked into this crate, kept for comparing
//! a loaded plugin against the linked code (`esim --linked`); [`choose`] picks one of the two.

use sched_abi::{HostedPolicy, Linked, PolicyHost};
use sched_core::{NamedPolicy, ParamError, Params, Policy};

/// The policies linked into the tools, by the name users type.
pub const BUILTIN: &[&str] = &[
    esched_fcfs::Fcfs::NAME,
    esched_easy::Easy::NAME,
    esched_cbf::Cbf::NAME,
    esched_evolving::EvolvingPolicy::NAME,
    esched_rpp::Rpp::NAME,
    esched_coorm::Coorm::NAME,
];

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

/// Builds the linked policy `name` with `params`.
pub fn builtin(name: &str, params: &Params) -> Result<Box<dyn Policy + Send>, PolicyError> {
    match name {
        n if n == esched_fcfs::Fcfs::NAME => make::<esched_fcfs::Fcfs>(params),
        n if n == esched_easy::Easy::NAME => make::<esched_easy::Easy>(params),
        n if n == esched_cbf::Cbf::NAME => make::<esched_cbf::Cbf>(params),
        n if n == esched_evolving::EvolvingPolicy::NAME => {
            make::<esched_evolving::EvolvingPolicy>(params)
        }
        n if n == esched_rpp::Rpp::NAME => make::<esched_rpp::Rpp>(params),
        n if n == esched_coorm::Coorm::NAME => make::<esched_coorm::Coorm>(params),
        _ => Err(PolicyError::Unknown {
            name: name.to_string(),
            known: BUILTIN.iter().map(|s| s.to_string()).collect(),
        }),
    }
}

fn make<P: NamedPolicy + Send + 'static>(
    params: &Params,
) -> Result<Box<dyn Policy + Send>, PolicyError> {
    let bad = |source| PolicyError::Params {
        name: P::NAME.to_string(),
        source,
    };
    let policy = P::from_params(params).map_err(bad)?;
    // from_params should already refuse unknown keys; checking here too keeps a typo from
    // passing silently through a policy that forgets to.
    params.finish().map_err(bad)?;
    Ok(Box::new(policy))
}

/// The policy a tool asked for by `spec`, loaded from its plugin library: a name (found in
/// `$ESCHED_PLUGIN_DIR` when set, else next to the executable) or a path to a shared library.
pub fn select(spec: &str, params: &Params) -> anyhow::Result<Box<dyn Policy + Send>> {
    Ok(Box::new(load(spec, params)?))
}

fn load(spec: &str, params: &Params) -> anyhow::Result<sched_abi::LoadedPolicy> {
    let dir = std::env::var_os("ESCHED_PLUGIN_DIR").map(std::path::PathBuf::from);
    match sched_abi::load(spec, dir.as_deref(), params) {
        Ok(p) => Ok(p),
        // A mistyped name should say which names exist, not only which files were tried.
        Err(e @ sched_abi::LoadError::NotFound { .. }) if !spec.contains('/') => Err(
            anyhow::anyhow!("{e} (policies shipped with esched: {})", BUILTIN.join(", ")),
        ),
        Err(e) => Err(e.into()),
    }
}

/// The policy `spec` under sched-abi's containment, the way the drivers call it: the plugin
/// library (its errors reach the host, where a plain [`select`] turns them into empty plans)
/// or, when `linked`, the linked copy, rebuilt after a panic as a plugin is.
pub fn hosted(spec: &str, params: &Params, linked: bool) -> anyhow::Result<PolicyHost> {
    fn named<P: NamedPolicy + Send + 'static>(
        params: &Params,
    ) -> Result<Box<dyn HostedPolicy + Send>, PolicyError> {
        Linked::named::<P>(params)
            .map(|l| Box::new(l) as Box<dyn HostedPolicy + Send>)
            .map_err(|source| PolicyError::Params {
                name: P::NAME.to_string(),
                source,
            })
    }
    let policy: Box<dyn HostedPolicy + Send> = if linked {
        match spec {
            n if n == esched_fcfs::Fcfs::NAME => named::<esched_fcfs::Fcfs>(params)?,
            n if n == esched_easy::Easy::NAME => named::<esched_easy::Easy>(params)?,
            n if n == esched_cbf::Cbf::NAME => named::<esched_cbf::Cbf>(params)?,
            n if n == esched_evolving::EvolvingPolicy::NAME => {
                named::<esched_evolving::EvolvingPolicy>(params)?
            }
            _ => {
                return Err(PolicyError::Unknown {
                    name: spec.to_string(),
                    known: BUILTIN.iter().map(|s| s.to_string()).collect(),
                }
                .into())
            }
        }
    } else {
        Box::new(load(spec, params)?)
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
        for name in BUILTIN {
            assert!(builtin(name, &Params::new()).is_ok(), "{name}");
        }
        let err = builtin("cfb", &Params::new()).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("unknown policy `cfb` (known: fcfs, easy, cbf, evolving, rpp, coorm)")
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
