//! The shape a job asks for, and what it implies (extent, time limit, validation).

use serde::{Deserialize, Serialize};

use super::limits::*;
use super::spec::SpecError;
use crate::shape::{MoldConfig, SpeedupModel, Step};

/// The shape a job asks for: rigid, an evolving profile, or moldable configurations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobShape {
    /// `nodes` nodes for at most `time_limit` ms.
    Rigid {
        /// Node count.
        nodes: u32,
        /// Time limit in ms; [`TIME_UNLIMITED`] (0) in a request asks for the pool's
        /// `max_time`.
        time_limit: u64,
    },
    /// An evolving profile (`--evolving-profile 500:5,3600:10`): steps of (duration ms, nodes).
    Evolving {
        /// The steps, in order.
        steps: Vec<Step>,
    },
    /// Moldable configurations (`--moldable 4:60,8:35`): (nodes, walltime ms) choices, and/or
    /// a run-time model over a range of node counts (`--moldable-model amdahl:WORK:SERIAL
    /// --nodes-range 1-32`). The policy picks one before the start.
    Moldable {
        /// The configurations offered (may be empty when `model` is given).
        configs: Vec<MoldConfig>,
        /// A run-time model valid over a range of node counts; an explicit configuration of
        /// the same node count wins over it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<MoldModel>,
        /// Weight ω of the job in the weighted sum of completion times (Dutot & Eyraud; the
        /// `bicriteria` policy uses it); `None` is 1.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        weight: Option<f64>,
    },
    /// A co-allocated (global) job (`--components 16,16,8`): components of these node counts,
    /// placed by the policy on pools (several may share one), all started together and run
    /// for at most `time_limit` ms. Its start deadline is [`JobSpec::deadline`](super::JobSpec::deadline).
    #[serde(rename = "coallocated")]
    CoAllocated {
        /// Node count of each component.
        components: Vec<u32>,
        /// Time limit in ms, the same for every component.
        time_limit: u64,
    },
    /// A CooRM launcher session's request (Klein & Pérez, HPCC 2011, §III-B): nodes on each
    /// of several pools, all for `time_limit` ms. Created by [`crate::SubscribeRequest`], never
    /// submitted; no pools means the launcher has not sent its request yet.
    Session {
        /// Nodes per pool, each pool at most once.
        pools: Vec<PoolNodes>,
        /// The allocation's duration in ms (0 while there is no request).
        time_limit: u64,
    },
}

/// Nodes of one pool, by name (a launcher session's request and its start).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolNodes {
    /// The pool.
    pub pool: String,
    /// Node count.
    pub nodes: u32,
}

/// A moldable job's run-time model p(k), valid for `min_nodes ≤ k ≤ max_nodes`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MoldModel {
    /// The model; its times are in ms.
    pub model: SpeedupModel,
    /// Smallest node count offered.
    pub min_nodes: u32,
    /// Largest node count offered.
    pub max_nodes: u32,
}

/// The widest node range a moldable model may offer: [`MAX_MOLDABLE_CHOICES`], the bound of
/// its range and explicit configurations together.
pub const MAX_MODEL_NODES: u32 = MAX_MOLDABLE_CHOICES as u32;

/// The largest weight a moldable job may have (weights are relative; this keeps weighted sums
/// of completion times finite and meaningful).
pub const MAX_WEIGHT: f64 = 1e6;

impl MoldModel {
    /// The longest run time the model allows: at its smallest node count, since p(k) does not
    /// grow with k.
    pub fn longest(&self) -> u64 {
        self.model.walltime(self.min_nodes)
    }

    /// How many node counts the range offers, `max − min + 1` (0 for a backwards range).
    pub fn width(&self) -> u64 {
        (u64::from(self.max_nodes) + 1).saturating_sub(u64::from(self.min_nodes))
    }

    fn validate(&self) -> Result<(), SpecError> {
        let bad = |m: String| Err(SpecError::Shape(m));
        if self.min_nodes == 0 || self.min_nodes > self.max_nodes {
            return bad(format!(
                "moldable node range {}-{} must be MIN-MAX with 1 <= MIN <= MAX",
                self.min_nodes, self.max_nodes
            ));
        }
        if self.max_nodes - self.min_nodes >= MAX_MODEL_NODES {
            return bad(format!(
                "moldable node range {}-{} offers more than {MAX_MODEL_NODES} node counts",
                self.min_nodes, self.max_nodes
            ));
        }
        let work = match self.model {
            SpeedupModel::Amdahl { work, serial } => {
                if !(0.0..=1.0).contains(&serial) {
                    return bad(format!(
                        "Amdahl serial fraction {serial} must be between 0 and 1"
                    ));
                }
                work
            }
            SpeedupModel::Linear { work } => work,
        };
        if work == 0 {
            return bad("a moldable model's work must be positive".into());
        }
        Ok(())
    }
}

impl JobShape {
    /// The most nodes the shape may hold at once.
    pub fn max_nodes(&self) -> u32 {
        match self {
            JobShape::Rigid { nodes, .. } => *nodes,
            JobShape::Evolving { steps } => crate::shape::max_nodes(steps),
            JobShape::Moldable { configs, model, .. } => configs
                .iter()
                .map(|c| c.nodes)
                .chain(model.map(|m| m.max_nodes))
                .max()
                .unwrap_or(0),
            JobShape::CoAllocated { components, .. } => {
                components.iter().fold(0u32, |t, &n| t.saturating_add(n))
            }
            JobShape::Session { pools, .. } => {
                pools.iter().fold(0u32, |t, p| t.saturating_add(p.nodes))
            }
        }
    }

    /// The fewest nodes the shape can run with: a moldable job's smallest configuration; the
    /// most nodes it holds at once for any other.
    pub fn least_nodes(&self) -> u32 {
        match self {
            JobShape::Moldable { configs, model, .. } => configs
                .iter()
                .map(|c| c.nodes)
                .chain(model.map(|m| m.min_nodes))
                .min()
                .unwrap_or(0),
            _ => self.max_nodes(),
        }
    }

    /// The longest the shape may run, in ms.
    pub fn time_limit(&self) -> u64 {
        match self {
            JobShape::Rigid { time_limit, .. } | JobShape::Session { time_limit, .. } => {
                *time_limit
            }
            JobShape::Evolving { steps } => crate::shape::total_duration(steps),
            JobShape::Moldable { configs, model, .. } => configs
                .iter()
                .map(|c| c.walltime)
                .chain(model.map(|m| m.longest()))
                .max()
                .unwrap_or(0),
            JobShape::CoAllocated { time_limit, .. } => *time_limit,
        }
    }

    /// Checks every duration of the shape against `max` ms (`by` names the bound).
    pub(super) fn check_time(&self, max: u64, by: &str) -> Result<(), SpecError> {
        let longest = match self {
            JobShape::Rigid { time_limit, .. }
            | JobShape::CoAllocated { time_limit, .. }
            | JobShape::Session { time_limit, .. } => *time_limit,
            // Summed without overflow: a sum past u64::MAX is past any bound.
            JobShape::Evolving { steps } => {
                steps.iter().fold(0u64, |t, s| t.saturating_add(s.duration))
            }
            JobShape::Moldable { .. } => self.time_limit(),
        };
        if longest > max {
            return Err(SpecError::Bound {
                what: "time limit",
                reason: format!(
                    "{} is longer than {by}, {}",
                    format_limit(longest),
                    format_limit(max)
                ),
            });
        }
        Ok(())
    }

    /// Checks node counts and durations are positive, lists non-empty, and durations at most
    /// [`MAX_TIME_LIMIT`].
    pub fn validate(&self) -> Result<(), SpecError> {
        match self {
            // A time limit of TIME_UNLIMITED (0) asks for the pool's max_time, resolved by
            // batchd; the upper bound is checked below.
            JobShape::Rigid { nodes, .. } => {
                if *nodes == 0 {
                    return Err(SpecError::Shape("a job needs at least one node".into()));
                }
            }
            JobShape::Evolving { steps } => {
                if steps.is_empty() {
                    return Err(SpecError::Shape(
                        "an evolving profile needs at least one step".into(),
                    ));
                }
                if steps.len() > MAX_STEPS {
                    return Err(SpecError::Shape(format!(
                        "an evolving profile of {} steps; at most {MAX_STEPS} are accepted",
                        steps.len()
                    )));
                }
                if let Some(s) = steps.iter().find(|s| s.nodes == 0 || s.duration == 0) {
                    return Err(SpecError::Shape(format!(
                        "evolving step {}:{} must have a positive duration and node count",
                        s.duration, s.nodes
                    )));
                }
            }
            JobShape::Moldable {
                configs,
                model,
                weight,
            } => {
                if configs.is_empty() && model.is_none() {
                    return Err(SpecError::Shape(
                        "a moldable job needs at least one configuration".into(),
                    ));
                }
                if let Some(m) = model {
                    m.validate()?;
                }
                let choices = configs.len() as u64 + model.map_or(0, |m| m.width());
                if choices > MAX_MOLDABLE_CHOICES {
                    return Err(SpecError::Shape(format!(
                        "a moldable job offering {choices} node counts (configurations and \
                         --nodes-range together); at most {MAX_MOLDABLE_CHOICES} are accepted"
                    )));
                }
                if let Some(w) = weight {
                    if !(*w > 0.0 && *w <= MAX_WEIGHT) {
                        return Err(SpecError::Shape(format!(
                            "weight {w} must be positive and at most {MAX_WEIGHT}"
                        )));
                    }
                }
                if let Some(c) = configs.iter().find(|c| c.nodes == 0 || c.walltime == 0) {
                    return Err(SpecError::Shape(format!(
                        "moldable configuration {}:{} must have a positive node count and time",
                        c.nodes, c.walltime
                    )));
                }
            }
            JobShape::CoAllocated {
                components,
                time_limit,
            } => {
                if components.is_empty() || components.len() > MAX_COMPONENTS {
                    return Err(SpecError::Shape(format!(
                        "a co-allocated job needs 1 to {MAX_COMPONENTS} components"
                    )));
                }
                if components.contains(&0) {
                    return Err(SpecError::Shape(
                        "every component needs at least one node".into(),
                    ));
                }
                // Summed as u64: policies add the components as u32.
                let total: u64 = components.iter().map(|&n| u64::from(n)).sum();
                if total > u64::from(u32::MAX) {
                    return Err(SpecError::Shape(format!(
                        "components of {total} nodes in all; at most {} are accepted",
                        u32::MAX
                    )));
                }
                if *time_limit == 0 {
                    return Err(SpecError::Shape(
                        "a co-allocated job needs a time limit (-t)".into(),
                    ));
                }
            }
            JobShape::Session { pools, time_limit } => {
                if pools.len() > MAX_COMPONENTS {
                    return Err(SpecError::Shape(format!(
                        "a request naming {} pools; at most {MAX_COMPONENTS} are accepted",
                        pools.len()
                    )));
                }
                // Summed as u64: the counts are u32 each, and their sum must not wrap.
                let total: u64 = pools.iter().map(|p| u64::from(p.nodes)).sum();
                if total > u64::from(u32::MAX) {
                    return Err(SpecError::Shape(format!(
                        "a request of {total} nodes in all; at most {} are accepted",
                        u32::MAX
                    )));
                }
                if let Some(p) = pools.iter().find(|p| p.pool.len() > MAX_WORD) {
                    return Err(SpecError::Shape(format!(
                        "a pool name of {} bytes; at most {MAX_WORD} are accepted",
                        p.pool.len()
                    )));
                }
                if let Some(p) = pools.iter().find(|p| p.nodes == 0) {
                    return Err(SpecError::Shape(format!(
                        "a request needs at least one node on each pool it names ({})",
                        p.pool
                    )));
                }
                if let Some((i, p)) = pools
                    .iter()
                    .enumerate()
                    .find(|(i, p)| pools[..*i].iter().any(|q| q.pool == p.pool))
                {
                    return Err(SpecError::Shape(format!(
                        "pool {} is named twice in the request (entry {})",
                        p.pool,
                        i + 1
                    )));
                }
                if !pools.is_empty() && *time_limit == 0 {
                    return Err(SpecError::Shape(
                        "a request needs a positive duration".into(),
                    ));
                }
            }
        }
        self.check_time(MAX_TIME_LIMIT, "the longest allowed")
    }
}
