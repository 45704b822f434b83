//! A policy that says what it was given, for sched-abi's delta-snapshot tests: its plan is one
//! reject, of job 0, whose reason is the `Debug` text of the snapshot it planned on, so a test
//! can compare what the plugin saw with what the host had, field for field (`f64`s print
//! exactly). The host's validator would refuse it; tests call the plugin without one.
//!
//! `panic_every = N` panics on every Nth call of the instance (counted per instance, so the
//! instance rebuilt after a panic starts counting again), to check that a fresh instance is
//! sent the whole snapshot.

use sched_core::{JobId, JobReason, NamedPolicy, ParamError, Params, Plan, Policy, Snapshot};

/// Echoes its snapshot.
#[derive(Debug, Default)]
pub struct Echo {
    panic_every: Option<u64>,
    calls: u64,
}

impl Policy for Echo {
    fn plan(&mut self, s: &Snapshot<'_>) -> Plan {
        self.calls += 1;
        if self.panic_every.is_some_and(|n| self.calls % n == 0) {
            panic!("call {} of this instance: told to panic", self.calls);
        }
        Plan {
            rejects: sched_core::rvec![JobReason {
                job: JobId(0),
                reason: format!("{s:?}").into(),
            }],
            ..Plan::default()
        }
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
        })
    }
}

sched_abi::export_policy!(Echo);
