//! Where the policy comes from: the one place that turns the config's `[policy]` into a
//! callable policy.
//!
//! The name (or path) is resolved by `sched_abi`'s loader: a path is used as given, a name is
//! looked up as `libesched_<name>.so` in `plugin_dir`, or, without one, next to the batchd
//! executable (and in its `deps/`, where cargo leaves the plugins of a workspace build). When
//! no usable library is found for one of the stock policies (`esched_stock::STOCK`), the copy
//! linked into batchd runs instead, so a lone batchd binary still runs its default config.
//! Either way the result is a [`sched_abi::PolicyHost`]: panics are caught (`sched_abi`'s
//! export macro, or [`sched_abi::Linked`]) and every plan is validated there, with the last
//! valid plan used when a call fails; the scheduler acts on what the host answers.
//!
//! The policy in force is an [`InForce`]: the host behind a lock that only the call running on
//! it holds, and the host's [`HostShare`], which the scheduler, a reconfigure and the stats read
//! without that lock, so that a call that never ends blocks none of them.

use std::sync::{Arc, Mutex};

use sched_abi::{HostShare, HostedPolicy, LoadError, PolicyHost};
use sched_core::{ParamError, Params};

use crate::config::{Config, ConfigError};

/// A policy ready to be called, under containment, with its name for the logs.
pub type BoxedPolicy = PolicyHost;

type Hosted = Box<dyn HostedPolicy + Send>;

/// The policy in force: cheap to clone, one per start or reconfigure.
#[derive(Clone, Debug)]
pub struct InForce {
    /// The host, locked for the length of a call (on a blocking thread).
    pub host: Arc<Mutex<BoxedPolicy>>,
    /// Its last valid plan, counters and call in flight, readable while a call runs.
    pub share: HostShare,
    /// When it came into force, ms since the epoch: its counters count from then.
    pub since: u64,
}

impl InForce {
    /// Puts `host` in force from `since`.
    pub fn new(mut host: BoxedPolicy, since: u64) -> InForce {
        let share = host.share();
        InForce {
            host: Arc::new(Mutex::new(host)),
            share,
            since,
        }
    }
}

/// The linked copy of a stock policy, if `name` is one.
fn builtin(name: &str, params: &Params) -> Option<Result<Hosted, PolicyError>> {
    let stock = esched_stock::find(name)?;
    Some((stock.hosted)(params).map_err(|e| {
        let key = match &e {
            ParamError::Unknown { key, .. } | ParamError::BadValue { key, .. } => key.clone(),
        };
        PolicyError::param(&key, format!("policy `{name}`: {e}"))
    }))
}

/// Why the config's policy cannot be built, with the config key at fault: `policy.name` for a
/// name that finds no usable policy, `policy.params.KEY` for a parameter the policy refuses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyError {
    /// The key at fault, as the config file spells it.
    pub key: String,
    /// The loader's or the policy's message.
    pub message: String,
}

impl PolicyError {
    fn name(message: impl Into<String>) -> Self {
        PolicyError {
            key: "policy.name".into(),
            message: message.into(),
        }
    }

    fn param(key: &str, message: String) -> Self {
        PolicyError {
            key: if key.is_empty() {
                "policy.params".into()
            } else {
                format!("policy.params.{key}")
            },
            message,
        }
    }

    /// The error as one of the config file `file`'s.
    pub fn in_file(self, file: &str) -> ConfigError {
        ConfigError::key(file, &self.key, self.message)
    }
}

/// Builds the policy `config` names; the error is the loader's message.
///
/// For a stock policy name any load failure falls back to the linked copy, with a warning
/// that carries the loader's error: a stale `libesched_cbf.so` left next to the binary by an
/// older build (an ABI mismatch) must not stop the default config from running. A path or
/// any other name has no fallback.
pub fn build(config: &Config) -> Result<BoxedPolicy, String> {
    hosted(config).map(PolicyHost::boxed).map_err(|e| e.message)
}

/// [`build`] with its error as a config error of `file` under the key at fault, for the
/// checks of a configuration file (`--print-config`, a start).
pub fn check(config: &Config, file: &str) -> Result<BoxedPolicy, ConfigError> {
    hosted(config)
        .map(PolicyHost::boxed)
        .map_err(|e| e.in_file(file))
}

fn hosted(config: &Config) -> Result<Hosted, PolicyError> {
    let name = config.policy.name.as_str();
    let params = config.policy_params();
    match sched_abi::load(name, config.plugin_dir.as_deref(), &params) {
        Ok(p) => {
            tracing::info!(policy = name, path = %p.library().path().display(), "policy loaded");
            Ok(Box::new(p))
        }
        // Bad parameters are the config's fault: the linked copy would refuse them too.
        Err(LoadError::Params {
            key,
            policy,
            path,
            message,
        }) => Err(PolicyError::param(
            &key,
            LoadError::Params {
                policy,
                path,
                key: key.clone(),
                message,
            }
            .to_string(),
        )),
        Err(e) => match builtin(name, &params) {
            Some(p) => {
                if matches!(e, LoadError::NotFound { .. }) {
                    tracing::info!(policy = name, "no plugin library; running the linked copy");
                } else {
                    tracing::warn!(
                        policy = name,
                        "plugin library unusable ({e}); running the linked copy"
                    );
                }
                p
            }
            None if matches!(e, LoadError::NotFound { .. }) && !name.contains('/') => {
                let hint = esched_stock::nearest(name)
                    .map_or_else(String::new, |n| format!("; did you mean `{n}`?"));
                Err(PolicyError::name(format!(
                    "{e} (policies shipped with esched: {}{hint})",
                    esched_stock::known()
                )))
            }
            None => Err(PolicyError::name(e.to_string())),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stock_policies_build_and_unknown_ones_fail_with_the_loader_message() {
        let mut c = Config::embedded();
        for name in esched_stock::names() {
            c.policy.name = name.into();
            let p = build(&c).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(p.name(), name);
        }
        c.policy.name = "no-such-policy".into();
        let e = build(&c).err().unwrap();
        assert!(
            e.contains("no-such-policy")
                && e.contains("not found")
                && e.contains(&esched_stock::known()),
            "{e}"
        );
        c.policy.name = "cbf".into();
        c.policy
            .params
            .insert("bogus".into(), toml::Value::Integer(1));
        assert!(build(&c).err().unwrap().contains("bogus"));
    }

    #[test]
    fn a_config_error_names_the_key_at_fault_and_the_nearest_policy() {
        let mut c = Config::embedded();
        c.policy.name = "cbff".into();
        let e = check(&c, "x.toml").err().unwrap();
        assert_eq!(e.location, "key `policy.name`: ");
        assert!(e.reason.contains("did you mean `cbf`?"), "{e}");
        c.policy.name = "cbf".into();
        c.policy
            .params
            .insert("bogus".into(), toml::Value::Integer(1));
        let e = check(&c, "x.toml").err().unwrap();
        assert_eq!(e.location, "key `policy.params.bogus`: ", "{e}");
        c.policy.params.clear();
        assert!(check(&c, "x.toml").is_ok());
    }
}
