//! # batch-proto
//!
//! The protocol spoken on batchd's Unix socket, shared by the daemon and the user tools
//! (`esubmit`, `equeue`, `ecancel`, `einfo`, `eacct`, `econtrol`).
//!
//! - [`frame`]: a frame is a 4-byte big-endian length and a JSON payload; the length is checked
//!   against [`MAX_FRAME`] before anything is allocated;
//! - [`message`]: the [`Request`] enum (one struct per variant) and the [`Response`] enum;
//! - [`job`]: what a job is on the wire: its [`JobSpec`] at submission, its [`JobInfo`]
//!   afterwards, states, pending reasons and dependencies;
//! - [`client`]: a blocking client for the tools: connect, exchange versions, ask, read;
//! - [`socket`]: where the socket lives, resolved the same way by daemon and tools;
//! - [`jobstep`]: a job's steps (`ID.batch`, `ID.0`, ...) and what they used;
//! - [`hostlist`]: Slurm's compressed host lists (`debug[001-004,007]`);
//! - [`check`]: the bounds of every request, [`Request::check`], run by both sides.
//!
//! The first frame on every connection is [`Hello`] from the client; the daemon answers with
//! its own `Hello` or with an error naming both protocol versions. After that, any number of
//! request/response pairs may follow on the same connection.
//!
//! Architecture invariant: no logic here beyond (de)serialisation and validation of input.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod array;
pub mod check;
pub mod client;
pub mod clock;
pub mod coorm;
pub mod frame;
pub mod hostlist;
pub mod job;
pub mod jobstep;
pub mod message;
pub mod pattern;
pub mod resources;
pub mod shape;
pub mod signal;
pub mod socket;
pub mod time;

pub use array::{ArraySpec, ArrayTask, JobRef};
pub use check::{RequestError, MAX_FILTER_IDS, MAX_FILTER_WORDS};
pub use client::{Client, ClientError, ClientTraffic};
pub use coorm::*;
pub use frame::{FrameError, MAX_FRAME};
pub use job::{
    DepKind, Dependency, InertOptions, JobInfo, JobInfoRef, JobShape, JobSpec, JobState, MoldModel,
    PendingReason, PoolNodes, SpecError, StepPhase, StepStatus, MAX_BEGIN_AHEAD, MAX_COMPONENTS,
    MAX_MODEL_NODES, MAX_MOLDABLE_CHOICES, MAX_NAME, MAX_PRIORITY, MAX_STEPS, MAX_TIME_LIMIT,
    MAX_WEIGHT, MIN_PRIORITY, TIME_UNLIMITED,
};
pub use jobstep::{
    JobStep, StepEndRequest, StepId, StepPartRequest, StepPartSignalRequest, StepStartRequest,
    StepStarted, Usage,
};
pub use message::*;
pub use shape::{MoldConfig, SpeedupModel, Step};
pub use signal::parse_signal;

/// Version of the protocol; bumped on any incompatible change of the messages. Client and
/// daemon refuse to talk when theirs differ.
pub const PROTOCOL_VERSION: u32 = 1;

/// Version of the software that built this crate, exchanged at connect for the logs.
pub const SOFTWARE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Milliseconds since the Unix epoch: the time unit of every instant on the wire.
pub type EpochMs = u64;
