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
use sched_core::Params;

use crate::config::Config;

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
fn builtin(name: &str, params: &Params) -> Option<Result<Hosted, String>> {
    let stock = esched_stock::find(name)?;
    Some((stock.hosted)(params).map_err(|e| format!("policy `{name}`: {e}")))
}

/// Builds the policy `config` names; the error is the loader's message.
///
/// For a stock policy name any load failure falls back to the linked copy, with a warning
/// that carries the loader's error: a stale `libesched_cbf.so` left next to the binary by an
/// older build (an ABI mismatch) must not stop the default config from running. A path or
/// any other name has no fallback.
pub fn build(config: &Config) -> Result<BoxedPolicy, String> {
    hosted(config).map(PolicyHost::boxed)
}

fn hosted(config: &Config) -> Result<Hosted, String> {
    let name = config.policy.name.as_str();
    let params = config.policy_params();
    match sched_abi::load(name, config.plugin_dir.as_deref(), &params) {
        Ok(p) => {
            tracing::info!(policy = name, path = %p.library().path().display(), "policy loaded");
            Ok(Box::new(p))
        }
        // Bad parameters are the config's fault: the linked copy would refuse them too.
        Err(e @ LoadError::Params { .. }) => Err(e.to_string()),
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
            None if matches!(e, LoadError::NotFound { .. }) && !name.contains('/') => Err(format!(
                "{e} (policies shipped with esched: {})",
                esched_stock::known()
            )),
            None => Err(e.to_string()),
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
}
