//! A job's state and why a pending job waits, with Slurm's names.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A job's state, with Slurm's names and two-letter codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobState {
    /// Waiting in the queue (`PD`).
    Pending,
    /// Holding nodes and running (`R`).
    Running,
    /// Told to stop (walltime or cancel), waiting for its processes to go (`CG`).
    Completing,
    /// Ended with exit code 0 (`CD`).
    Completed,
    /// Ended with a non-zero exit code or by a signal of its own (`F`).
    Failed,
    /// Cancelled by a user or refused by the policy (`CA`).
    Cancelled,
    /// Killed at its time limit (`TO`).
    Timeout,
    /// Killed by the policy to make room for another job (`PR`): a local job under the RPP's
    /// global priority (GP), at a co-allocated job's start deadline. The reason is in `detail`.
    Preempted,
    /// Removed before its start because it could no longer end by its `--deadline`
    /// (Slurm's end-by deadline) (`DL`).
    Deadline,
    /// Ended because a node it ran on went down (`NF`): its host stopped answering, or an
    /// administrator set the node DOWN. A job submitted with `--requeue` is queued again
    /// instead. The reason is in `detail`.
    NodeFail,
}

impl JobState {
    /// Every state, in display order.
    pub const ALL: [JobState; 10] = [
        JobState::Pending,
        JobState::Running,
        JobState::Completing,
        JobState::Completed,
        JobState::Failed,
        JobState::Cancelled,
        JobState::Timeout,
        JobState::Preempted,
        JobState::Deadline,
        JobState::NodeFail,
    ];

    /// Slurm's two-letter code (`PD`, `R`, `CG`, `CD`, `F`, `CA`, `TO`, `PR`, `DL`, `NF`).
    pub fn code(self) -> &'static str {
        match self {
            JobState::Pending => "PD",
            JobState::Running => "R",
            JobState::Completing => "CG",
            JobState::Completed => "CD",
            JobState::Failed => "F",
            JobState::Cancelled => "CA",
            JobState::Timeout => "TO",
            JobState::Preempted => "PR",
            JobState::Deadline => "DL",
            JobState::NodeFail => "NF",
        }
    }

    /// Slurm's long name (`PENDING`, `RUNNING`, …).
    pub fn name(self) -> &'static str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Running => "RUNNING",
            JobState::Completing => "COMPLETING",
            JobState::Completed => "COMPLETED",
            JobState::Failed => "FAILED",
            JobState::Cancelled => "CANCELLED",
            JobState::Timeout => "TIMEOUT",
            JobState::Preempted => "PREEMPTED",
            JobState::Deadline => "DEADLINE",
            JobState::NodeFail => "NODE_FAIL",
        }
    }

    /// Whether the job is over (accounting material).
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            JobState::Completed
                | JobState::Failed
                | JobState::Cancelled
                | JobState::Timeout
                | JobState::Preempted
                | JobState::Deadline
                | JobState::NodeFail
        )
    }

    /// Whether the job holds nodes.
    pub fn is_active(self) -> bool {
        matches!(self, JobState::Running | JobState::Completing)
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A state name or code that is not one of ours.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown job state `{0}` (expected one of PENDING/PD, RUNNING/R, COMPLETING/CG, COMPLETED/CD, FAILED/F, CANCELLED/CA, TIMEOUT/TO, PREEMPTED/PR, DEADLINE/DL, NODE_FAIL/NF)")]
pub struct UnknownState(pub String);

impl FromStr for JobState {
    type Err = UnknownState;
    /// Accepts the long name or the code, in any case (`pd`, `Running`, `CA`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let up = s.trim().to_ascii_uppercase();
        JobState::ALL
            .into_iter()
            .find(|st| {
                st.code() == up
                    || st.name() == up
                    || (up == "CANCELED" && *st == JobState::Cancelled)
            })
            .ok_or_else(|| UnknownState(s.to_string()))
    }
}

/// Why a pending job is not running, with Slurm's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PendingReason {
    /// Other jobs come first.
    Priority,
    /// Not enough free nodes yet.
    Resources,
    /// Waits for other jobs.
    Dependency,
    /// Its `--begin` time has not come.
    BeginTime,
    /// Held by its owner or root.
    Held,
    /// A dependency that can never be satisfied (e.g. `afterok` on a job that failed).
    DependencyNeverSatisfied,
    /// A task of a job array whose throttle (`--array ...%N`) is reached.
    JobArrayTaskLimit,
    /// A co-allocated job whose nodes are claimed (reserved, idle) until its start deadline.
    Reserved,
}

impl PendingReason {
    /// The name shown in `equeue`'s reason column.
    pub fn name(self) -> &'static str {
        match self {
            PendingReason::Priority => "Priority",
            PendingReason::Resources => "Resources",
            PendingReason::Dependency => "Dependency",
            PendingReason::BeginTime => "BeginTime",
            PendingReason::Held => "Held",
            PendingReason::DependencyNeverSatisfied => "DependencyNeverSatisfied",
            PendingReason::JobArrayTaskLimit => "JobArrayTaskLimit",
            PendingReason::Reserved => "Reserved",
        }
    }
}

impl fmt::Display for PendingReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
