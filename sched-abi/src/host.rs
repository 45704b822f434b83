//! Host-side containment, shared by batchd and esim: every plan is checked before a driver
//! acts on it, and a policy that panics or cheats never stops the driver.
//!
//! [`PolicyHost`] calls a [`HostedPolicy`] (a plugin's [`LoadedPolicy`], or a policy linked in
//! the process through [`Linked`]), runs [`sched_core::validate`] on its plan and, when the call
//! panicked or the plan was refused, logs an error naming the policy and the reason, counts it,
//! and answers with the last valid plan instead (see [`PolicyHost::plan`]).

use std::panic::{catch_unwind, AssertUnwindSafe};

use sched_core::{validate, NamedPolicy, ParamError, Params, Plan, Policy, Snapshot};

use crate::loader::{LoadedPolicy, PluginError};

/// A policy the host can contain: a name for the logs and a plan call that reports panics.
pub trait HostedPolicy: Send {
    /// The policy's name.
    fn name(&self) -> &str;
    /// The plan, or why there is none.
    fn try_plan(&mut self, snapshot: &Snapshot<'_>) -> Result<Plan, PluginError>;
}

impl HostedPolicy for LoadedPolicy {
    fn name(&self) -> &str {
        LoadedPolicy::name(self)
    }

    fn try_plan(&mut self, snapshot: &Snapshot<'_>) -> Result<Plan, PluginError> {
        LoadedPolicy::try_plan(self, snapshot)
    }
}

type Factory = Box<dyn FnMut() -> Result<Box<dyn Policy + Send>, ParamError> + Send>;

/// A policy linked into the process, with a panic caught the way the export macro catches one
/// in a plugin.
///
/// Built with [`Linked::named`], a panicked instance is replaced by a fresh one from the same
/// parameters, as a plugin's is; built with [`Linked::new`] there is no way to rebuild it and
/// the same instance is called again.
pub struct Linked {
    name: String,
    policy: Option<Box<dyn Policy + Send>>,
    factory: Option<Factory>,
}

impl Linked {
    /// Wraps an existing instance.
    pub fn new(name: impl Into<String>, policy: Box<dyn Policy + Send>) -> Self {
        Linked {
            name: name.into(),
            policy: Some(policy),
            factory: None,
        }
    }

    /// Builds `P` from `params`, and rebuilds it from them after a panic.
    pub fn named<P: NamedPolicy + Send + 'static>(params: &Params) -> Result<Self, ParamError> {
        let build = |params: &Params| -> Result<Box<dyn Policy + Send>, ParamError> {
            let p = P::from_params(params)?;
            params.finish()?;
            Ok(Box::new(p))
        };
        let first = build(params)?;
        let params = params.clone();
        Ok(Linked {
            name: P::NAME.to_string(),
            policy: Some(first),
            factory: Some(Box::new(move || build(&params))),
        })
    }
}

impl HostedPolicy for Linked {
    fn name(&self) -> &str {
        &self.name
    }

    fn try_plan(&mut self, snapshot: &Snapshot<'_>) -> Result<Plan, PluginError> {
        if self.policy.is_none() {
            let factory = self.factory.as_mut().ok_or_else(|| PluginError::Rebuild {
                policy: self.name.clone(),
                message: "no factory".into(),
            })?;
            let fresh = factory().map_err(|e| PluginError::Rebuild {
                policy: self.name.clone(),
                message: e.to_string(),
            })?;
            self.policy = Some(fresh);
        }
        let Some(policy) = self.policy.as_mut() else {
            return Err(PluginError::Rebuild {
                policy: self.name.clone(),
                message: "no instance".into(),
            });
        };
        // Same rule as for plugins: a panicked instance is not trusted again when it can be
        // rebuilt.
        match catch_unwind(AssertUnwindSafe(|| policy.plan(snapshot))) {
            Ok(plan) => Ok(plan),
            Err(payload) => {
                if self.factory.is_some() {
                    if let Some(poisoned) = self.policy.take() {
                        std::mem::forget(poisoned);
                    }
                }
                let message = if let Some(s) = payload.downcast_ref::<&str>() {
                    (*s).to_string()
                } else if let Some(s) = payload.downcast_ref::<String>() {
                    s.clone()
                } else {
                    "panic with a non-text payload".to_string()
                };
                Err(PluginError::Panicked {
                    policy: self.name.clone(),
                    message,
                })
            }
        }
    }
}

/// How often a hosted policy failed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostStats {
    /// Plan calls.
    pub calls: u64,
    /// Calls that panicked (or whose instance could not be rebuilt).
    pub panics: u64,
    /// Plans the validator refused.
    pub refusals: u64,
}

/// A policy under containment. See the [module documentation](self).
pub struct PolicyHost {
    policy: Box<dyn HostedPolicy>,
    last_valid: Option<Plan>,
    stats: HostStats,
    last_failure: Option<String>,
}

impl std::fmt::Debug for PolicyHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyHost")
            .field("policy", &self.policy.name())
            .field("stats", &self.stats)
            .finish()
    }
}

impl PolicyHost {
    /// Contains `policy`.
    pub fn new(policy: impl HostedPolicy + 'static) -> Self {
        Self::boxed(Box::new(policy))
    }

    /// Contains a boxed `policy`.
    pub fn boxed(policy: Box<dyn HostedPolicy>) -> Self {
        PolicyHost {
            policy,
            last_valid: None,
            stats: HostStats::default(),
            last_failure: None,
        }
    }

    /// The contained policy's name.
    pub fn name(&self) -> &str {
        self.policy.name()
    }

    /// Failure counters so far.
    pub fn stats(&self) -> HostStats {
        self.stats
    }

    /// The message of the last failure (panic or refusal), if any.
    pub fn last_failure(&self) -> Option<&str> {
        self.last_failure.as_deref()
    }

    /// A plan the driver may act on: the policy's when it is valid, otherwise the fallback.
    ///
    /// The fallback is the last valid plan, reduced to what is still safe to act on: the
    /// placements and views of jobs still pending (a placement whose start has passed is
    /// moved to now), and its wake-up when still ahead. Its kills and rejects are dropped: they
    /// are irreversible, and a decision the driver has not yet carried out must come from a
    /// policy that just made it. If what remains does not validate against the present
    /// snapshot, the fallback is the empty plan.
    pub fn plan(&mut self, snapshot: &Snapshot<'_>) -> Plan {
        self.stats.calls += 1;
        let name = self.policy.name().to_string();
        match self.policy.try_plan(snapshot) {
            Ok(plan) => match validate(snapshot, &plan) {
                Ok(()) => {
                    self.last_valid = Some(plan.clone());
                    return plan;
                }
                Err(err) => {
                    self.stats.refusals += 1;
                    let msg = format!("policy `{name}`: {err}");
                    tracing::error!(policy = %name, "{msg}; keeping its last valid plan");
                    self.last_failure = Some(msg);
                }
            },
            Err(err) => {
                self.stats.panics += 1;
                let msg = err.to_string();
                tracing::error!(policy = %name, "{msg}; keeping its last valid plan");
                self.last_failure = Some(msg);
            }
        }
        self.fallback(snapshot)
    }

    fn fallback(&self, snapshot: &Snapshot<'_>) -> Plan {
        let Some(last) = &self.last_valid else {
            return Plan::default();
        };
        let pending: std::collections::HashSet<_> = snapshot.pending.iter().map(|p| p.id).collect();
        let running: std::collections::HashSet<_> = snapshot.running.iter().map(|r| r.id).collect();
        let plan = Plan {
            placements: last
                .placements
                .iter()
                .filter(|p| pending.contains(&p.job))
                .map(|p| {
                    let mut p = p.clone();
                    if p.start < snapshot.now {
                        // An expected start that has passed means "start now"; a claim that
                        // began earlier begins now too.
                        p.start = snapshot.now;
                        p.claim_from = p.claim_from.map(|c| c.max(snapshot.now));
                    }
                    p
                })
                .collect(),
            kills: Vec::new(),
            rejects: Vec::new(),
            wake_at: last.wake_at.filter(|&t| t > snapshot.now),
            views: last
                .views
                .iter()
                .filter(|v| pending.contains(&v.job) || running.contains(&v.job))
                .cloned()
                .collect(),
        };
        match validate(snapshot, &plan) {
            Ok(()) => plan,
            Err(err) => {
                tracing::warn!(policy = %self.policy.name(), "last valid plan no longer fits ({err}); using an empty plan");
                Plan::default()
            }
        }
    }
}

impl Policy for PolicyHost {
    fn plan(&mut self, snapshot: &Snapshot<'_>) -> Plan {
        PolicyHost::plan(self, snapshot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sched_core::{JobId, Pending, Placement, Pool, PoolId, Request, Shape};

    /// Starts every pending job now on pool 0; panics when told to; over-commits when told to.
    struct Scripted {
        panic: std::sync::Arc<std::sync::atomic::AtomicBool>,
    }

    impl Policy for Scripted {
        fn plan(&mut self, s: &Snapshot<'_>) -> Plan {
            if self.panic.load(std::sync::atomic::Ordering::SeqCst) {
                panic!("scripted failure");
            }
            Plan {
                placements: s
                    .pending
                    .iter()
                    .map(|p| Placement {
                        job: p.id,
                        start: s.now,
                        shape: Shape::rigid(PoolId(0), 1, 10),
                        claim_from: None,
                    })
                    .collect(),
                ..Plan::default()
            }
        }
    }

    fn job(id: u64) -> Pending {
        Pending {
            id: JobId(id),
            user: 0,
            submit: 0,
            earliest_start: 0,
            priority: 0,
            request: Request::rigid(1, 10),
        }
    }

    #[test]
    fn keeps_last_valid_plan_filtered_after_a_panic_and_counts_refusals() {
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut host = PolicyHost::new(Linked::new(
            "scripted",
            Box::new(Scripted {
                panic: flag.clone(),
            }),
        ));
        let pools = vec![Pool {
            id: PoolId(0),
            name: "p".into(),
            nodes: 2,
        }];
        let pend = vec![job(1), job(2)];
        let snap = Snapshot {
            now: 0,
            pools: &pools,
            running: &[],
            pending: &pend,
        };
        let first = host.plan(&snap);
        assert_eq!(first.placements.len(), 2);

        flag.store(true, std::sync::atomic::Ordering::SeqCst);
        let pend2 = vec![job(2)];
        let snap2 = Snapshot {
            now: 5,
            pools: &pools,
            running: &[],
            pending: &pend2,
        };
        let fallback = host.plan(&snap2);
        assert_eq!(
            fallback
                .placements
                .iter()
                .map(|p| (p.job, p.start))
                .collect::<Vec<_>>(),
            vec![(JobId(2), 5)]
        );
        assert_eq!(host.stats().panics, 1);
        assert!(host
            .last_failure()
            .is_some_and(|m| m.contains("scripted") && m.contains("scripted failure")));

        // Three jobs of one node on two nodes: refused, and the fallback still fits.
        flag.store(false, std::sync::atomic::Ordering::SeqCst);
        let pend3 = vec![job(2), job(3), job(4)];
        let snap3 = Snapshot {
            now: 6,
            pools: &pools,
            running: &[],
            pending: &pend3,
        };
        let refused = host.plan(&snap3);
        assert_eq!(
            host.stats(),
            HostStats {
                calls: 3,
                panics: 1,
                refusals: 1
            }
        );
        assert_eq!(refused.placements.len(), 1);
        assert_eq!(validate(&snap3, &refused), Ok(()));
    }
}
