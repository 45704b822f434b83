//! The parts of a job's shape on the wire: evolution steps, moldable configurations and
//! run-time models.
//!
//! They are plain serde types of the protocol, not the scheduler's request types: the tools
//! build without the scheduling core and its plugin ABI, and the daemon converts at its edge.
//! Their JSON is the one the daemon's requests and stored rows have always had.

use serde::{Deserialize, Serialize};

use crate::time::Duration;

/// One step of an evolution profile: `nodes` nodes for `duration` ms (Klein & Pérez §3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Step {
    /// How long the step lasts, in ms.
    pub duration: Duration,
    /// How many nodes it holds meanwhile.
    pub nodes: u32,
}

impl Step {
    /// A step of `nodes` nodes for `duration` ms.
    pub const fn new(duration: Duration, nodes: u32) -> Self {
        Step { duration, nodes }
    }
}

/// Sum of the durations of `steps` (saturating).
pub fn total_duration(steps: &[Step]) -> Duration {
    steps
        .iter()
        .fold(0, |acc: Duration, s| acc.saturating_add(s.duration))
}

/// Largest node count of `steps` (0 for none).
pub fn max_nodes(steps: &[Step]) -> u32 {
    steps.iter().map(|s| s.nodes).max().unwrap_or(0)
}

/// One configuration a moldable job accepts: `nodes` nodes for `walltime` ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoldConfig {
    /// Node count.
    pub nodes: u32,
    /// Time limit at that node count, in ms.
    pub walltime: Duration,
}

/// A run-time model p(k): the time a moldable job needs on `k` nodes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum SpeedupModel {
    /// Amdahl's law: `p(k) = work · (serial + (1 − serial) / k)`, `serial` in `[0, 1]`.
    Amdahl {
        /// Run time on one node, in ms.
        work: Duration,
        /// Serial fraction, in `[0, 1]`.
        serial: f64,
    },
    /// Perfect speed-up: `p(k) = work / k`.
    Linear {
        /// Run time on one node, in ms.
        work: Duration,
    },
}

impl SpeedupModel {
    /// Run time on `k ≥ 1` nodes, rounded up to the millisecond: the scheduler's own formula,
    /// so that the tools and the daemon's checks see the walltimes the policy will.
    pub fn walltime(&self, k: u32) -> Duration {
        let k = f64::from(k.max(1));
        let t = match *self {
            SpeedupModel::Amdahl { work, serial } => {
                let s = serial.clamp(0.0, 1.0);
                work as f64 * (s + (1.0 - s) / k)
            }
            SpeedupModel::Linear { work } => work as f64 / k,
        };
        t.ceil().max(0.0) as Duration
    }
}
