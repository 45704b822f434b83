//! Jobs on the wire: the [`JobSpec`] a tool submits, the [`JobInfo`] the daemon reports, and
//! the vocabulary both share (states, pending reasons, dependencies).

mod dependency;
mod inert;
mod info;
mod limits;
mod shape;
mod spec;
mod state;

pub use dependency::{DepKind, Dependency};
pub use inert::{InertOptions, MAIL_TYPES, MAX_NICE, PROFILE_TYPES};
pub use info::{field, JobInfo, JobInfoRef, StepPhase, StepStatus};
pub use limits::*;
pub use shape::{JobShape, MoldModel, PoolNodes, MAX_MODEL_NODES, MAX_WEIGHT};
pub use spec::{JobSpec, SpecError, DEFAULT_UMASK, MAX_SCRIPT};
pub use state::{JobState, PendingReason, UnknownState};

#[cfg(test)]
mod bounds;
#[cfg(test)]
mod tests;
