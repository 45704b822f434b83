//! A policy that claims ABI 0.9 with today's layout, through the export macro's hidden arm:
//! the loader must refuse it, naming both versions.

use sched_core::{NamedPolicy, ParamError, Params, Plan, Policy, Snapshot};

/// Plans nothing.
#[derive(Debug, Default)]
pub struct OldAbi;

impl Policy for OldAbi {
    fn plan(&mut self, _: &Snapshot<'_>) -> Plan {
        Plan::default()
    }
}

impl NamedPolicy for OldAbi {
    const NAME: &'static str = "test-oldabi";

    fn from_params(params: &Params) -> Result<Self, ParamError> {
        params.finish()?;
        Ok(OldAbi)
    }
}

sched_abi::export_policy!(@with_abi_version sched_abi::AbiVersion { major: 0, minor: 9 }, OldAbi);
