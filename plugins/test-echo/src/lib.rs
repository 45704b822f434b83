//! A policy that says what it was given, for sched-abi's borrowed-snapshot tests: its plan is
//! two rejects, of job 0, whose reason is the `Debug` text of the snapshot it planned on, and of
//! job 1, that of the account it was told before ([`Policy::expect_changes`], `None` when not
//! told), so a test can compare what the plugin saw with what the host had, field for field
//! (`f64`s print exactly). The host's validator would refuse it; tests call the plugin without
//! one.
//!
//! `panic_every = N` panics on every Nth call of the instance (counted per instance, so the
//! instance rebuilt after a panic starts counting again), to check that a fresh instance plans
//! on the host's snapshot and is not told an account of a snapshot it never saw.

use sched_core::{Changes, JobId, NamedPolicy, ParamError, Params, Plan, Policy, Reject, Snapshot};

/// Echoes its snapshot and the account it was told.
#[derive(Debug, Default)]
pub struct Echo {
    panic_every: Option<u64>,
    calls: u64,
    told: Option<Changes>,
}

impl Policy for Echo {
    fn plan(&mut self, s: &Snapshot<'_>) -> Plan {
        self.calls += 1;
        if self.panic_every.is_some_and(|n| self.calls % n == 0) {
            panic!("call {} of this instance: told to panic", self.calls);
        }
        Plan {
            rejects: sched_core::rvec![
                Reject::other(JobId(0), format!("{s:?}")),
                Reject::other(JobId(1), format!("{:?}", self.told.take())),
            ],
            ..Plan::default()
        }
    }

    fn expect_changes(&mut self, changes: &Changes) {
        self.told = Some(changes.clone());
    }

    // `plan_starts` is the default: it keeps rejects, so both calls echo.
}

impl NamedPolicy for Echo {
    const NAME: &'static str = "test-echo";

    fn from_params(params: &Params) -> Result<Self, ParamError> {
        let panic_every: u64 = params.parse_or("panic_every", 0)?;
        params.finish()?;
        Ok(Echo {
            panic_every: (panic_every > 0).then_some(panic_every),
            calls: 0,
            told: None,
        })
    }
}

sched_abi::export_policy!(Echo);
