//! Host-side containment, the one path both drivers (batchd's scheduler and esim's engine)
//! take to a policy's plan: every plan is checked before a driver acts on it, and a policy that
//! panics, fails or cheats never stops the driver.
//!
//! [`PolicyHost`] calls a [`HostedPolicy`] (a plugin's [`LoadedPolicy`], a policy linked in the
//! process through [`Linked`], or one borrowed for a single run through [`Borrowed`]), runs
//! [`sched_core::validate`] on its plan and, when the call panicked, failed (an instance that
//! could not be rebuilt after a panic) or the plan was refused, logs an error naming the policy
//! and the reason, counts it ([`HostStats`]), and answers with the last valid plan instead,
//! re-validated against the present snapshot (see [`PolicyHost::call`]). There is no other copy
//! of this check-and-log in the drivers: they act on what the host answers.
//!
//! A driver that runs the host's calls on another thread and must not wait for ever on one
//! (batchd: a call has a time budget) takes a [`HostShare`] from [`PolicyHost::share`]: a
//! cloneable handle on the host's last valid plan and counters that answers with the same
//! fallback while the host is busy, counts a call the driver abandons at its budget, and keeps
//! at most one call in flight. Sharing is opt-in: a host without a share (esim's) pays one
//! branch a call for it.

use abi_stable::std_types::RVec;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sched_core::{
    validate, Changes, NamedPolicy, ParamError, Params, Plan, PlanError, Policy, Snapshot,
};

use crate::clock::Clock;
use crate::loader::{LoadedPolicy, PluginError};

/// A policy the host can contain: a name for the logs and a plan call that reports panics.
pub trait HostedPolicy {
    /// The policy's name.
    fn name(&self) -> &str;
    /// The plan, or why there is none.
    fn try_plan(&mut self, snapshot: &Snapshot<'_>) -> Result<Plan, PluginError>;
    /// [`Policy::plan_starts`]: only what a driver acts on at once, or why there is none.
    fn try_plan_starts(&mut self, snapshot: &Snapshot<'_>) -> Result<Plan, PluginError> {
        self.try_plan(snapshot).map(|p| p.starts_only(snapshot.now))
    }
    /// Takes the driver's word for how the next snapshot differs from the last one
    /// ([`Changes`]): the policy is told it ([`Policy::expect_changes`]), through the boundary
    /// for a plugin's.
    fn expect_changes(&mut self, _changes: &Changes) {}
    /// Takes back a plan the host is done with, so that a later answer may reuse its buffers
    /// (a plugin's goes back to the plugin's policy with the next call).
    fn recycle(&mut self, _plan: Plan) {}
    /// One call: [`HostedPolicy::expect_changes`] with `changes` when given, then
    /// [`HostedPolicy::try_plan_starts`] (`starts`) or [`HostedPolicy::try_plan`]. A plugin's
    /// host lends the account to the plugin for this call instead of copying it to keep until
    /// the next one.
    fn try_call(
        &mut self,
        snapshot: &Snapshot<'_>,
        changes: Option<&Changes>,
        starts: bool,
    ) -> Result<Plan, PluginError> {
        if let Some(c) = changes {
            self.expect_changes(c);
        }
        if starts {
            self.try_plan_starts(snapshot)
        } else {
            self.try_plan(snapshot)
        }
    }
}

impl HostedPolicy for LoadedPolicy {
    fn name(&self) -> &str {
        LoadedPolicy::name(self)
    }

    fn try_plan(&mut self, snapshot: &Snapshot<'_>) -> Result<Plan, PluginError> {
        LoadedPolicy::try_plan(self, snapshot)
    }

    fn try_plan_starts(&mut self, snapshot: &Snapshot<'_>) -> Result<Plan, PluginError> {
        LoadedPolicy::try_plan_starts(self, snapshot)
    }

    fn expect_changes(&mut self, changes: &Changes) {
        LoadedPolicy::expect_changes(self, changes);
    }

    fn recycle(&mut self, plan: Plan) {
        LoadedPolicy::recycle(self, plan);
    }

    fn try_call(
        &mut self,
        snapshot: &Snapshot<'_>,
        changes: Option<&Changes>,
        starts: bool,
    ) -> Result<Plan, PluginError> {
        LoadedPolicy::try_call_lent(self, snapshot, changes, starts)
    }
}

impl<T: HostedPolicy + ?Sized> HostedPolicy for Box<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn try_plan(&mut self, snapshot: &Snapshot<'_>) -> Result<Plan, PluginError> {
        (**self).try_plan(snapshot)
    }

    fn try_plan_starts(&mut self, snapshot: &Snapshot<'_>) -> Result<Plan, PluginError> {
        (**self).try_plan_starts(snapshot)
    }

    fn expect_changes(&mut self, changes: &Changes) {
        (**self).expect_changes(changes);
    }

    fn recycle(&mut self, plan: Plan) {
        (**self).recycle(plan);
    }

    fn try_call(
        &mut self,
        snapshot: &Snapshot<'_>,
        changes: Option<&Changes>,
        starts: bool,
    ) -> Result<Plan, PluginError> {
        (**self).try_call(snapshot, changes, starts)
    }
}

impl<T: HostedPolicy + ?Sized> HostedPolicy for &mut T {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn try_plan(&mut self, snapshot: &Snapshot<'_>) -> Result<Plan, PluginError> {
        (**self).try_plan(snapshot)
    }

    fn try_plan_starts(&mut self, snapshot: &Snapshot<'_>) -> Result<Plan, PluginError> {
        (**self).try_plan_starts(snapshot)
    }

    fn expect_changes(&mut self, changes: &Changes) {
        (**self).expect_changes(changes);
    }

    fn recycle(&mut self, plan: Plan) {
        (**self).recycle(plan);
    }

    fn try_call(
        &mut self,
        snapshot: &Snapshot<'_>,
        changes: Option<&Changes>,
        starts: bool,
    ) -> Result<Plan, PluginError> {
        (**self).try_call(snapshot, changes, starts)
    }
}

/// Calls `policy`, turning a panic into [`PluginError::Panicked`] the way the export macro does
/// on a plugin's side.
fn plan_catching(
    name: &str,
    policy: &mut dyn Policy,
    snapshot: &Snapshot<'_>,
    check: Check,
) -> Result<Plan, PluginError> {
    catch_unwind(AssertUnwindSafe(|| match check {
        Check::Full => policy.plan(snapshot),
        Check::Starts => policy.plan_starts(snapshot),
    }))
    .map_err(|payload| {
        let message = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "panic with a non-text payload".to_string()
        };
        PluginError::Panicked {
            policy: name.to_string(),
            message,
        }
    })
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
        self.call(snapshot, Check::Full)
    }

    fn try_plan_starts(&mut self, snapshot: &Snapshot<'_>) -> Result<Plan, PluginError> {
        self.call(snapshot, Check::Starts)
    }

    fn recycle(&mut self, plan: Plan) {
        if let Some(policy) = self.policy.as_mut() {
            policy.recycle(plan);
        }
    }

    fn expect_changes(&mut self, changes: &Changes) {
        // Relative to what this instance was last called with: a fresh one is not told.
        if let Some(policy) = self.policy.as_mut() {
            policy.expect_changes(changes);
        }
    }
}

impl Linked {
    fn call(&mut self, snapshot: &Snapshot<'_>, check: Check) -> Result<Plan, PluginError> {
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
        let result = plan_catching(&self.name, policy.as_mut(), snapshot, check);
        // Same rule as for plugins: a panicked instance is not trusted again when it can be
        // rebuilt.
        if result.is_err() && self.factory.is_some() {
            if let Some(poisoned) = self.policy.take() {
                std::mem::forget(poisoned);
            }
        }
        result
    }
}

/// A policy borrowed for the length of a run (esim's engine given `&mut dyn Policy`), with its
/// panics caught; there is no way to rebuild it, so the same instance is called again.
pub struct Borrowed<'a> {
    name: String,
    policy: &'a mut dyn Policy,
}

impl<'a> Borrowed<'a> {
    /// Borrows `policy`, named `name` in the logs.
    pub fn new(name: impl Into<String>, policy: &'a mut dyn Policy) -> Self {
        Borrowed {
            name: name.into(),
            policy,
        }
    }
}

impl HostedPolicy for Borrowed<'_> {
    fn name(&self) -> &str {
        &self.name
    }

    fn try_plan(&mut self, snapshot: &Snapshot<'_>) -> Result<Plan, PluginError> {
        plan_catching(&self.name, self.policy, snapshot, Check::Full)
    }

    fn try_plan_starts(&mut self, snapshot: &Snapshot<'_>) -> Result<Plan, PluginError> {
        plan_catching(&self.name, self.policy, snapshot, Check::Starts)
    }
}

/// How often a hosted policy failed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostStats {
    /// Plan calls.
    pub calls: u64,
    /// Calls that panicked.
    pub panics: u64,
    /// Calls that failed otherwise: the instance discarded after a panic could not be rebuilt.
    pub errors: u64,
    /// Plans the validator refused.
    pub refusals: u64,
    /// Calls the driver abandoned at their time budget ([`HostShare::abandon`]; only a shared
    /// host has any).
    pub timeouts: u64,
}

/// Where a host's calls spent their time (wall clock, summed over calls).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostTiming {
    /// Inside the policy.
    pub policy: Duration,
    /// Inside the validator (the policy's plans and the fallbacks).
    pub validate: Duration,
}

/// What the host asks of the policy, and so what it validates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Check {
    /// The whole plan ([`Policy::plan`]), future reservations included, all validated: catches
    /// a policy that plans an impossible future even when what starts now is fine (batchd,
    /// which shows expected starts; `esim --validate full`).
    #[default]
    Full,
    /// Only what a driver acts on at once ([`Policy::plan_starts`]: kills, rejects, placements
    /// starting now, and a wake-up at the earliest start left out), all validated: still never
    /// over-commits a pool, but the policy's reservations are neither sent nor checked (esim's
    /// default: a replay acts on nothing else).
    Starts,
}

/// Why the host did not use the policy's own plan.
#[derive(Clone, Copy, Debug)]
pub enum Failure<'h> {
    /// The call panicked or failed: there is no plan of the policy's.
    Failed(&'h PluginError),
    /// The validator refused the plan.
    Refused(&'h PlanError),
    /// The driver abandoned the call at its time budget before it returned
    /// ([`HostShare::abandon`]): whatever it answered is dropped, unjudged.
    Abandoned {
        /// The budget it was abandoned at.
        budget: Duration,
        /// How long it ran, from its dispatch to its answer.
        took: Duration,
    },
}

/// The answer of one [`PolicyHost::call`].
#[derive(Clone, Copy, Debug)]
pub struct Outcome<'h> {
    /// What the policy answered, when it answered (valid or refused).
    pub proposed: Option<&'h Plan>,
    /// `Ok` when `plan` is the policy's own, else why it is not.
    pub verdict: Result<(), Failure<'h>>,
    /// The plan to act on: the policy's when valid, else the fallback (see
    /// [`PolicyHost::call`]).
    pub plan: &'h Plan,
}

/// A policy under containment. See the [module documentation](self).
///
/// `P` is the contained policy; the default, a boxed [`HostedPolicy`] that can be sent to
/// another thread, is what batchd holds and swaps on reconfigure.
pub struct PolicyHost<P: HostedPolicy = Box<dyn HostedPolicy + Send>> {
    policy: P,
    check: Check,
    /// How many failures are logged one by one before the host only counts them.
    log_limit: Option<u64>,
    /// The latest plan the validator accepted (what the fallback is made of).
    last_valid: Option<Plan>,
    /// The latest refused plan (kept for [`Outcome::proposed`]).
    refused: Plan,
    /// The latest fallback (kept for [`Outcome::plan`]).
    fallback: Plan,
    error: Option<PluginError>,
    plan_error: Option<PlanError>,
    stats: HostStats,
    clock: Clock,
    /// Time spent so far, in the clock's ticks: in the policy, then in the validator.
    ticks: (u64, u64),
    last_failure: Option<String>,
    /// What the host's [`HostShare`]s see, once one was asked for.
    share: Option<Arc<Shared>>,
}

impl<P: HostedPolicy> std::fmt::Debug for PolicyHost<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyHost")
            .field("policy", &self.policy.name())
            .field("check", &self.check)
            .field("stats", &self.stats)
            .finish()
    }
}

impl PolicyHost {
    /// Contains a boxed `policy`.
    pub fn boxed(policy: Box<dyn HostedPolicy + Send>) -> Self {
        PolicyHost::new(policy)
    }
}

impl<P: HostedPolicy> PolicyHost<P> {
    /// Contains `policy`; full plans are validated and every failure is logged.
    pub fn new(policy: P) -> Self {
        PolicyHost {
            policy,
            check: Check::Full,
            log_limit: None,
            last_valid: None,
            refused: Plan::default(),
            fallback: Plan::default(),
            error: None,
            plan_error: None,
            stats: HostStats::default(),
            clock: Clock::new(),
            ticks: (0, 0),
            last_failure: None,
            share: None,
        }
    }

    /// Validates what `check` says of each plan.
    pub fn check(mut self, check: Check) -> Self {
        self.check = check;
        self
    }

    /// Validates what `check` says of each plan from now on.
    pub fn set_check(&mut self, check: Check) {
        self.check = check;
    }

    /// Logs the first `limit` failures one by one, then one line saying the rest are only
    /// counted (a replay of a trace may call a broken policy a hundred thousand times).
    /// `None`, the default, logs them all: a daemon's log must show each.
    pub fn log_limit(mut self, limit: Option<u64>) -> Self {
        self.log_limit = limit;
        self
    }

    /// The contained policy's name.
    pub fn name(&self) -> &str {
        self.policy.name()
    }

    /// Failure counters so far.
    pub fn stats(&self) -> HostStats {
        match &self.share {
            // Timeouts are counted by the share: the host is busy when one happens.
            Some(share) => HostStats {
                timeouts: share.lock().stats.timeouts,
                ..self.stats
            },
            None => self.stats,
        }
    }

    /// A handle on this host's last valid plan and counters, for a driver that runs its calls
    /// on another thread (see [`HostShare`]). Every call publishes to it from then on (a copy
    /// of each valid plan, the counters); a host never shared does neither.
    pub fn share(&mut self) -> HostShare {
        let shared = self.share.get_or_insert_with(|| {
            Arc::new(Shared {
                name: self.policy.name().to_string(),
                state: Mutex::new(SharedState {
                    last_valid: self.last_valid.clone().map(Arc::new),
                    stats: self.stats,
                    ..SharedState::default()
                }),
            })
        });
        HostShare(Arc::clone(shared))
    }

    /// Time spent so far.
    pub fn timing(&self) -> HostTiming {
        HostTiming {
            policy: self.clock.duration(self.ticks.0),
            validate: self.clock.duration(self.ticks.1),
        }
    }

    /// The message of the last failure (panic, error or refusal), if any.
    pub fn last_failure(&self) -> Option<&str> {
        self.last_failure.as_deref()
    }

    /// A plan the driver may act on: [`PolicyHost::call`]'s, copied.
    pub fn plan(&mut self, snapshot: &Snapshot<'_>) -> Plan {
        self.call(snapshot).plan.clone()
    }

    /// [`PolicyHost::plan`] for a shared host ([`PolicyHost::share`]): a valid plan comes as
    /// the very copy the host published to its share, so a call copies its plan once, as
    /// `plan` does; a fallback is copied as `plan` copies it.
    pub fn plan_shared(&mut self, snapshot: &Snapshot<'_>) -> Arc<Plan> {
        let outcome = self.call(snapshot);
        if outcome.verdict.is_err() {
            return Arc::new(outcome.plan.clone());
        }
        let published = self
            .share
            .as_ref()
            .and_then(|s| s.lock().last_valid.clone());
        published.unwrap_or_else(|| Arc::new(self.last_valid.clone().unwrap_or_default()))
    }

    /// [`PolicyHost::call`] with the driver's word for how the snapshot differs from the last
    /// one it gave ([`Changes`]): it spares a policy comparing what did not change. The policy
    /// is told it within the call ([`HostedPolicy::try_call`]), so its time counts as the
    /// policy's.
    pub fn call_told(&mut self, snapshot: &Snapshot<'_>, changes: &Changes) -> Outcome<'_> {
        self.call_with(snapshot, Some(changes))
    }

    /// Calls the policy and answers with what the driver may act on, and why.
    ///
    /// The policy's plan is used when it validates. Otherwise the failure is logged (naming the
    /// policy) and counted, and the fallback is used: the last valid plan, reduced to what is
    /// still safe to act on: the placements and views of jobs still pending (a placement whose
    /// start has passed is moved to now), and its wake-up when still ahead. Its kills and
    /// rejects are dropped: they are irreversible, and a decision the driver has not yet carried
    /// out must come from a policy that just made it. If what remains does not validate against
    /// the present snapshot, the fallback is the empty plan.
    ///
    /// Nothing is copied on the path of a valid plan: the answer borrows the host.
    pub fn call(&mut self, snapshot: &Snapshot<'_>) -> Outcome<'_> {
        self.call_with(snapshot, None)
    }

    /// [`PolicyHost::call`], the policy told `changes` first when given.
    fn call_with(&mut self, snapshot: &Snapshot<'_>, changes: Option<&Changes>) -> Outcome<'_> {
        self.stats.calls += 1;
        // Cleared at the end of the call, or by this guard if the call unwinds past the host.
        let _guard = self.share.as_ref().map(Shared::begin);
        let t0 = self.clock.now();
        let starts = match self.check {
            Check::Full => false,
            Check::Starts => true,
        };
        let result = self.policy.try_call(snapshot, changes, starts);
        // One clock reading ends the policy's time and starts the validator's: a replay makes
        // a hundred thousand calls, and each reading is a measurable part of a small one.
        let t1 = self.clock.now();
        self.ticks.0 += t1.saturating_sub(t0);
        // Set once the share is told the call ended: `Some((budget, took))` when the driver
        // abandoned it at its budget.
        let mut ended = false;
        let mut late = None;
        match result {
            Ok(plan) => {
                let verdict = validate(snapshot, &plan);
                self.ticks.1 += self.clock.now().saturating_sub(t1);
                match verdict {
                    Ok(()) => {
                        // Kept unless the driver abandoned the call meanwhile: then nobody
                        // waits for it, it was made for a snapshot the driver has moved past,
                        // and acting on it later could undo what was done meanwhile. The share
                        // decides under its lock, so that it never hands out a plan the host
                        // dropped.
                        if let Some(share) = &self.share {
                            late = share.end(self.stats, Some(&plan));
                            ended = true;
                        }
                        if late.is_none() {
                            if let Some(old) = self.last_valid.replace(plan) {
                                self.policy.recycle(old);
                            }
                            let Some(plan) = &self.last_valid else {
                                unreachable!("the valid plan was just kept")
                            };
                            return Outcome {
                                proposed: Some(plan),
                                verdict: Ok(()),
                                plan,
                            };
                        }
                        self.policy.recycle(plan);
                        self.error = None;
                        self.plan_error = None;
                    }
                    Err(err) => {
                        self.stats.refusals += 1;
                        self.failed(format!("policy `{}`: {err}", self.policy.name()));
                        self.refused = plan;
                        self.plan_error = Some(err);
                        self.error = None;
                    }
                }
            }
            Err(err) => {
                match err {
                    PluginError::Panicked { .. } => self.stats.panics += 1,
                    PluginError::Rebuild { .. } => self.stats.errors += 1,
                }
                self.failed(err.to_string());
                self.error = Some(err);
                self.plan_error = None;
            }
        }
        let t = self.clock.now();
        self.fallback = self.fallback(snapshot);
        self.ticks.1 += self.clock.now().saturating_sub(t);
        if !ended {
            late = self.share.as_ref().and_then(|s| s.end(self.stats, None));
        }
        if let Some((budget, took)) = late {
            let name = self.policy.name();
            tracing::warn!(
                policy = %name,
                "policy `{name}`: the call abandoned at its time budget of {} ms returned after {} ms; its plan is dropped",
                budget.as_millis(),
                took.as_millis()
            );
        }
        let verdict = match (&self.error, &self.plan_error, late) {
            (Some(e), _, _) => Err(Failure::Failed(e)),
            (None, Some(e), _) => Err(Failure::Refused(e)),
            (None, None, Some((budget, took))) => Err(Failure::Abandoned { budget, took }),
            // One of the three is set on every path that reaches here.
            (None, None, None) => Ok(()),
        };
        Outcome {
            proposed: self.plan_error.is_some().then_some(&self.refused),
            verdict,
            plan: &self.fallback,
        }
    }

    /// Logs a failure (within the log limit) and keeps its message.
    fn failed(&mut self, msg: String) {
        let failures = self.stats.panics + self.stats.errors + self.stats.refusals;
        let name = self.policy.name();
        match self.log_limit {
            Some(limit) if failures > limit => {}
            Some(limit) if failures == limit => {
                tracing::error!(policy = %name, "{msg}; keeping its last valid plan");
                tracing::error!(
                    policy = %name,
                    "policy `{name}`: further failures are counted, not logged"
                );
            }
            _ => tracing::error!(policy = %name, "{msg}; keeping its last valid plan"),
        }
        self.last_failure = Some(msg);
    }

    fn fallback(&self, snapshot: &Snapshot<'_>) -> Plan {
        fallback_of(self.policy.name(), self.last_valid.as_ref(), snapshot)
    }
}

/// The fallback of [`PolicyHost::call`] made of `last`, the last valid plan of policy `name`
/// (see there): the one reduction and re-validation, for the host and its shares.
fn fallback_of(name: &str, last: Option<&Plan>, snapshot: &Snapshot<'_>) -> Plan {
    let Some(last) = last else {
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
        kills: RVec::new(),
        rejects: RVec::new(),
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
            tracing::warn!(policy = %name, "last valid plan no longer fits ({err}); using an empty plan");
            Plan::default()
        }
    }
}

/// What a shared host publishes for its [`HostShare`]s.
struct Shared {
    /// The policy's name, for the logs.
    name: String,
    /// Held only to read or publish, never across a policy call.
    state: Mutex<SharedState>,
}

#[derive(Default)]
struct SharedState {
    /// A copy of the host's last valid plan.
    last_valid: Option<Arc<Plan>>,
    /// The host's counters as of its last call; `timeouts` is counted here.
    stats: HostStats,
    /// The call in flight, from its dispatch to its answer.
    running: Option<Running>,
    times: CallTimes,
}

#[derive(Clone, Copy, Debug)]
struct Running {
    since: Instant,
    /// The budget the driver abandoned it at.
    abandoned: Option<Duration>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, SharedState> {
        // The state is plain values, each written whole: a panic elsewhere leaves it usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The host begins a call: in flight from now, unless the driver dispatched it earlier.
    fn begin(self: &Arc<Self>) -> EndGuard {
        let mut st = self.lock();
        st.stats.calls += 1;
        if st.running.is_none() {
            st.running = Some(Running {
                since: Instant::now(),
                abandoned: None,
            });
        }
        EndGuard(Arc::clone(self))
    }

    /// The host's call is over: records how long it took since its dispatch, publishes the
    /// counters and, when it gave one, its new valid plan, unless the driver abandoned the
    /// call: then the plan is not published and the answer is the budget it was abandoned at
    /// and how long it took.
    fn end(&self, stats: HostStats, valid: Option<&Plan>) -> Option<(Duration, Duration)> {
        // The copy is made before the lock is taken: a driver reading the share waits only
        // for the swap.
        let valid = valid.map(|p| Arc::new(p.clone()));
        let mut st = self.lock();
        let running = st.running.take();
        let took = running.map_or(Duration::ZERO, |r| r.since.elapsed());
        let abandoned = running.and_then(|r| r.abandoned);
        st.stats = HostStats {
            timeouts: st.stats.timeouts,
            ..stats
        };
        let old = if abandoned.is_none() && valid.is_some() {
            std::mem::replace(&mut st.last_valid, valid)
        } else {
            None
        };
        st.times.last = Some(took);
        st.times.longest = Some(st.times.longest.map_or(took, |l| l.max(took)));
        drop(st);
        // A long plan's memory is given back outside the lock.
        drop(old);
        abandoned.map(|budget| (budget, took))
    }
}

/// Ends a shared host's call if it unwinds past the host, so that the share does not show a
/// call in flight for ever.
struct EndGuard(Arc<Shared>);

impl Drop for EndGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().running = None;
        }
    }
}

/// A handle on a [`PolicyHost`]'s last valid plan and counters ([`PolicyHost::share`]), for a
/// driver that runs the host's calls on another thread and must go on when one takes too
/// long (batchd's time budget).
///
/// While the host is busy the driver cannot reach it (a thread cannot be stopped, and the host
/// is the call's until it returns); the share answers in its place with the very fallback the
/// host would give on a failure ([`PolicyHost::call`]: the last valid plan, reduced to the
/// jobs still pending and re-validated against the present snapshot). So the validator stays
/// the one judge, reached through the one path: a share holds no plan the host did not
/// validate, and re-validates what it hands out.
///
/// At most one call is in flight per host: [`HostShare::dispatch`] marks one and refuses a
/// second until the first returns, abandoned or not. An abandoned call ([`HostShare::abandon`])
/// runs on; when it returns, the host drops its plan unjudged and logs how long it took.
#[derive(Clone)]
pub struct HostShare(Arc<Shared>);

impl std::fmt::Debug for HostShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostShare")
            .field("policy", &self.0.name)
            .field("in_flight", &self.in_flight())
            .finish()
    }
}

/// The call in flight on a shared host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InFlight {
    /// How long it has run since its dispatch.
    pub elapsed: Duration,
    /// The budget the driver abandoned it at, if it did.
    pub abandoned: Option<Duration>,
}

/// How long a shared host's calls took, from dispatch to a validated answer (wall clock).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallTimes {
    /// The latest call's (an abandoned one's too, once it returned).
    pub last: Option<Duration>,
    /// The longest call's.
    pub longest: Option<Duration>,
}

impl HostShare {
    /// The policy's name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The host's counters, timeouts included, as of its last call.
    pub fn stats(&self) -> HostStats {
        self.0.lock().stats
    }

    /// How long the host's calls took.
    pub fn call_times(&self) -> CallTimes {
        self.0.lock().times
    }

    /// The call in flight, if any.
    pub fn in_flight(&self) -> Option<InFlight> {
        self.0.lock().running.map(|r| InFlight {
            elapsed: r.since.elapsed(),
            abandoned: r.abandoned,
        })
    }

    /// Marks a call in flight from now, before the driver hands it to another thread (so that
    /// it counts, and can be abandoned, even before that thread reaches the host). `false`
    /// when one is already in flight: the driver must not make another call, but act on
    /// [`HostShare::fallback`] until it returns.
    pub fn dispatch(&self) -> bool {
        let mut st = self.0.lock();
        if st.running.is_some() {
            return false;
        }
        st.running = Some(Running {
            since: Instant::now(),
            abandoned: None,
        });
        true
    }

    /// What the host would answer on a failure, without calling the policy: its last valid
    /// plan reduced and re-validated against `snapshot` (see [`PolicyHost::call`]).
    pub fn fallback(&self, snapshot: &Snapshot<'_>) -> Plan {
        let last = self.0.lock().last_valid.clone();
        fallback_of(&self.0.name, last.as_deref(), snapshot)
    }

    /// The driver gives up waiting for the call in flight at its time `budget`: counts a
    /// timeout, logs it with the policy's name and the budget, and answers with
    /// [`HostShare::fallback`]. The call runs on (its plan is dropped when it returns); until
    /// then [`HostShare::dispatch`] refuses another. `None` when no call is in flight: it
    /// returned meanwhile, and its answer is the one to act on.
    pub fn abandon(&self, snapshot: &Snapshot<'_>, budget: Duration) -> Option<Plan> {
        let last = {
            let mut st = self.0.lock();
            let running = st.running.as_mut()?;
            if running.abandoned.is_none() {
                running.abandoned = Some(budget);
                st.stats.timeouts += 1;
                let name = &self.0.name;
                tracing::error!(
                    policy = %name,
                    "policy `{name}`: no plan within its time budget of {} ms; the call is abandoned (it runs on until it returns); keeping its last valid plan",
                    budget.as_millis()
                );
            }
            st.last_valid.clone()
        };
        Some(fallback_of(&self.0.name, last.as_deref(), snapshot))
    }
}

impl<P: HostedPolicy> Policy for PolicyHost<P> {
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
                        claim_from: sched_core::RNone,
                    })
                    .collect(),
                ..Plan::default()
            }
        }
    }

    fn job(id: u64) -> Pending {
        Pending {
            wants_view: false,
            claimed: Default::default(),
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
                errors: 0,
                refusals: 1,
                timeouts: 0
            }
        );
        assert_eq!(refused.placements.len(), 1);
        assert_eq!(validate(&snap3, &refused), Ok(()));
    }
}
