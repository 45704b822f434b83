//! A slow policy for the time-budget tests of batchd: `fcfs`, except that `plan` first sleeps
//! `sleep_ms` whenever a pending job asks for exactly `sleep_on_nodes` nodes, so that a test
//! makes exactly the calls it chooses stall (and only while that job is pending).
//!
//! It plans with `fcfs` (expected starts included) rather than a first fit of its own, so
//! that a plan it made before stalling has starts still to come, which a driver's fallback can
//! carry out. Parameters: `sleep_ms` (default 0) and `sleep_on_nodes` (default 0: never).

use std::time::Duration;

use esched_fcfs::Fcfs;
use sched_core::{NamedPolicy, ParamError, Params, Plan, Policy, Snapshot};

/// fcfs, slow on demand.
#[derive(Debug, Default)]
pub struct Sleepy {
    inner: Fcfs,
    sleep: Duration,
    on_nodes: u32,
}

impl Sleepy {
    fn stalls(&self, s: &Snapshot<'_>) -> bool {
        self.on_nodes > 0
            && s.pending.iter().any(|p| {
                p.request
                    .as_rigid()
                    .is_some_and(|r| r.nodes == self.on_nodes)
            })
    }
}

impl Policy for Sleepy {
    fn plan(&mut self, s: &Snapshot<'_>) -> Plan {
        if self.stalls(s) {
            std::thread::sleep(self.sleep);
        }
        self.inner.plan(s)
    }

    fn plan_starts(&mut self, s: &Snapshot<'_>) -> Plan {
        if self.stalls(s) {
            std::thread::sleep(self.sleep);
        }
        self.inner.plan_starts(s)
    }
}

impl NamedPolicy for Sleepy {
    const NAME: &'static str = "test-sleep";

    fn from_params(params: &Params) -> Result<Self, ParamError> {
        let sleep_ms: u64 = params.parse_or("sleep_ms", 0)?;
        let on_nodes: u32 = params.parse_or("sleep_on_nodes", 0)?;
        params.finish()?;
        Ok(Sleepy {
            inner: Fcfs::new(),
            sleep: Duration::from_millis(sleep_ms),
            on_nodes,
        })
    }
}

sched_abi::export_policy!(Sleepy);
