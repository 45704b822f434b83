//! `Reconfigure` (and SIGHUP): re-read the config file and switch to the policy it names.
//!
//! Queued and running jobs are untouched: only the policy, its parameters and time budget, the
//! re-policy interval, the pacing of passes and the grace period change. The swap does not wait for a call running
//! on the old policy (a call past its budget may never end): that call ends on its own and its
//! plan is dropped. Pools, socket and state directory take effect at a
//! restart only; a changed pool list is refused. A policy that fails to load leaves the old
//! one in force and the reply carries the error as a config error: the file, the key at fault
//! (`policy.name`, `policy.params.KEY`) and the loader's message.

use std::sync::Arc;

use batch_proto::{ErrorKind, ErrorReply, ReconfigureReply};

use crate::config::Config;
use crate::daemon::Daemon;
use crate::launch::now_ms;
use crate::policy::InForce;

/// Re-reads the config and swaps the policy.
pub async fn reconfigure(d: &Arc<Daemon>) -> Result<ReconfigureReply, ErrorReply> {
    let settings = d.settings();
    let path = settings.config_path.clone();
    let config = match &path {
        Some(p) => {
            Config::load(p).map_err(|e| ErrorReply::new(ErrorKind::Config, e.to_string()))?
        }
        None => Config::embedded(),
    };
    if config.pools != settings.config.pools {
        return Err(ErrorReply::new(
            ErrorKind::Config,
            "the pools changed: pools take effect only when batchd restarts; nothing was changed",
        ));
    }
    if config.socket != settings.config.socket || config.state_dir != settings.config.state_dir {
        tracing::warn!("socket and state_dir changes take effect only when batchd restarts");
    }
    // The endpoint and the log format are set up at start: the settings keep those in force,
    // so that nothing reads back a configuration that is not the one running.
    let mut config = config;
    if config.metrics != settings.config.metrics || config.log_format != settings.config.log_format
    {
        tracing::warn!("[metrics] and log_format changes take effect only when batchd restarts");
    }
    config.metrics = settings.config.metrics.clone();
    config.log_format = settings.config.log_format;
    let built = {
        let config = config.clone();
        // The error names the file and the key at fault, as at start and `--print-config`.
        let file = path
            .as_ref()
            .map_or_else(|| "<built-in>".to_string(), |p| p.display().to_string());
        tokio::task::spawn_blocking(move || crate::policy::check(&config, &file)).await
    };
    let policy = match built {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            tracing::error!("reconfigure: keeping policy {}: {e}", d.policy_name());
            return Err(ErrorReply::new(ErrorKind::PolicyLoad, e.to_string()));
        }
        Err(e) => return Err(ErrorReply::new(ErrorKind::Internal, e.to_string())),
    };
    let name = policy.name().to_string();
    d.set_policy(InForce::new(policy, now_ms()));
    // Launcher sessions pull the links again if theirs changed (CooRM's `interinfo`).
    crate::coorm::links_changed(d, &settings.config, &config);
    d.core().set_fair_start(config.coorm.fair_start_ms);
    d.settings.write().unwrap_or_else(|p| p.into_inner()).config = config;
    // The new policy has no expected starts yet; the next run gives them.
    d.core().forget_expectations(crate::core::Forget::NewPolicy);
    d.reschedule();
    tracing::info!(policy = %name, "reconfigured");
    Ok(ReconfigureReply {
        policy: name,
        config: path.map(|p| p.display().to_string()),
    })
}
