//! What a job asks for. All four request kinds of the papers exist from day one, because the
//! plugin ABI carries them and is hard to change later.
//!
//! They are laid out for that boundary (`#[repr(C)]`, enums `#[repr(u8)]`, abi_stable's `RVec`
//! and `ROption`): a plugin reads the host's requests where they are, not a copy. Their JSON is
//! what it was with `Vec` and `Option`.

use abi_stable::std_types::{RNone, ROption, RSome, RVec};
use abi_stable::StableAbi;
use serde::{Deserialize, Serialize};

use crate::pool::PoolId;
use crate::time::{Duration, Time};

/// A job's identifier (Slurm's job id, an SWF job number).
#[repr(transparent)]
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    abi_stable::StableAbi,
)]
pub struct JobId(pub u64);

impl std::fmt::Display for JobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One step of an evolution profile: `nodes` nodes for `duration` (Klein & Pérez §3.1).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, abi_stable::StableAbi,
)]
pub struct Step {
    /// How long the step lasts.
    pub duration: Duration,
    /// How many nodes it holds meanwhile.
    pub nodes: u32,
}

impl Step {
    /// A step of `nodes` nodes for `duration`.
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

/// A rigid request: `nodes` nodes for at most `walltime`.
#[repr(C)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, StableAbi)]
pub struct Rigid {
    /// The pool asked for, or any pool the policy likes.
    pub pool: ROption<PoolId>,
    /// Node count.
    pub nodes: u32,
    /// Time limit; the job is killed when it runs out.
    pub walltime: Duration,
}

/// One configuration a moldable job accepts: `nodes` nodes for `walltime`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, StableAbi)]
pub struct MoldConfig {
    /// Node count.
    pub nodes: u32,
    /// Time limit at that node count.
    pub walltime: Duration,
}

/// A run-time model p(k): the time a moldable job needs on `k` nodes (Dutot & Eyraud §2 use an
/// arbitrary monotone p_i(k); these are the usual parametric families).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, StableAbi)]
pub enum SpeedupModel {
    /// Amdahl's law: `p(k) = work · (serial + (1 − serial) / k)`, `serial` in `[0, 1]`.
    Amdahl {
        /// Run time on one node.
        work: Duration,
        /// Serial fraction, in `[0, 1]`.
        serial: f64,
    },
    /// Perfect speed-up: `p(k) = work / k`.
    Linear {
        /// Run time on one node.
        work: Duration,
    },
}

impl SpeedupModel {
    /// Run time on `k ≥ 1` nodes, rounded up to the millisecond.
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

/// A moldable request: the policy picks one configuration before the start (Dutot & Eyraud).
#[repr(C)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, StableAbi)]
pub struct Moldable {
    /// The pool asked for, or any.
    pub pool: ROption<PoolId>,
    /// Explicit configurations offered (may be empty when `model` is given).
    pub configs: RVec<MoldConfig>,
    /// A run-time model valid for every node count in `min_nodes..=max_nodes`.
    pub model: ROption<SpeedupModel>,
    /// Smallest node count the model may be used at.
    pub min_nodes: u32,
    /// Largest node count the model may be used at.
    pub max_nodes: u32,
    /// Weight ω of the job in the weighted-completion-time criterion (Dutot & Eyraud).
    pub weight: f64,
}

impl Moldable {
    /// The walltime this request allows on `nodes` nodes, if `nodes` is an offered choice:
    /// an explicit configuration wins over the model.
    pub fn walltime_on(&self, nodes: u32) -> Option<Duration> {
        if let Some(c) = self.configs.iter().find(|c| c.nodes == nodes) {
            return Some(c.walltime);
        }
        match self.model {
            RSome(m) if nodes >= self.min_nodes.max(1) && nodes <= self.max_nodes => {
                Some(m.walltime(nodes))
            }
            _ => None,
        }
    }

    /// Every configuration offered, explicit ones first, then the model's, by node count.
    pub fn choices(&self) -> Vec<MoldConfig> {
        let mut out = self.configs.to_vec();
        if let RSome(m) = self.model {
            // The explicit counts sorted once: a wide range against many configurations made
            // a scan per count quadratic.
            let mut explicit: Vec<u32> = self.configs.iter().map(|c| c.nodes).collect();
            explicit.sort_unstable();
            for k in self.min_nodes.max(1)..=self.max_nodes {
                if explicit.binary_search(&k).is_err() {
                    out.push(MoldConfig {
                        nodes: k,
                        walltime: m.walltime(k),
                    });
                }
            }
        }
        out
    }
}

/// A fully-predictably evolving request: its node count changes by steps (Klein & Pérez).
#[repr(C)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, StableAbi)]
pub struct Evolving {
    /// The pool asked for, or any.
    pub pool: ROption<PoolId>,
    /// The requested EP, in order, without any leading delay.
    pub steps: RVec<Step>,
}

/// One component of a co-allocated job.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, StableAbi)]
pub struct Component {
    /// Node count of the component.
    pub nodes: u32,
    /// A fixed pool (KOALA's "fixed" request), or `RNone` to let the policy place it.
    pub pool: ROption<PoolId>,
}

/// A multi-component job whose components must start together over several pools, before a
/// start deadline (Ballier, Caron, Epema, Mohamed).
///
/// It is also the request of a CooRM launcher (Klein & Pérez HPCC 2011 §III-A): every component
/// on a fixed pool (the hosts it wants there), one walltime, no deadline (requests never fail).
/// A launcher that subscribed and has sent no request yet is a CooRM job with **no
/// components**: it reserves nothing, is never placed, and still gets its view at its rank.
#[repr(C)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, StableAbi)]
pub struct CoAllocated {
    /// The components, in order.
    pub components: RVec<Component>,
    /// Time limit, the same for every component.
    pub walltime: Duration,
    /// Latest start time allowed; a job that cannot start by then is rejected.
    pub deadline: ROption<Time>,
}

/// What a job asks for.
#[repr(u8)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, StableAbi)]
pub enum Request {
    /// Fixed node count and time limit.
    Rigid(Rigid),
    /// Several acceptable (nodes, walltime) shapes.
    Moldable(Moldable),
    /// A node count that changes by steps.
    Evolving(Evolving),
    /// Components over several pools, started together.
    CoAllocated(CoAllocated),
}

impl Request {
    /// A rigid request of `nodes` nodes for `walltime`, on any pool.
    pub fn rigid(nodes: u32, walltime: Duration) -> Self {
        Request::Rigid(Rigid {
            pool: RNone,
            nodes,
            walltime,
        })
    }

    /// A moldable request offering `configs` (nodes, walltime) on any pool, without a
    /// run-time model, of weight `weight`.
    pub fn moldable(configs: &[(u32, Duration)], weight: f64) -> Self {
        Request::Moldable(Moldable {
            pool: RNone,
            configs: configs
                .iter()
                .map(|&(nodes, walltime)| MoldConfig { nodes, walltime })
                .collect(),
            model: RNone,
            min_nodes: 0,
            max_nodes: 0,
            weight,
        })
    }

    /// An evolving request of the given steps, on any pool.
    pub fn evolving(steps: Vec<Step>) -> Self {
        Request::Evolving(Evolving {
            pool: RNone,
            steps: steps.into(),
        })
    }

    /// The pool the request names, when it names one (co-allocated: the first fixed component).
    pub fn pool(&self) -> Option<PoolId> {
        match self {
            Request::Rigid(r) => r.pool.into_option(),
            Request::Moldable(m) => m.pool.into_option(),
            Request::Evolving(e) => e.pool.into_option(),
            Request::CoAllocated(c) => c.components.iter().find_map(|c| c.pool.into_option()),
        }
    }

    /// The request seen as rigid, the way a policy that knows only rigid jobs sees it: the
    /// largest node count for the whole duration (Klein & Pérez's rigid baseline: maximum
    /// nodes over the steps, sum of durations); moldable: the first offered configuration;
    /// co-allocated: all components summed. `None` when the request offers no shape at all.
    pub fn as_rigid(&self) -> Option<Rigid> {
        match self {
            Request::Rigid(r) => Some(r.clone()),
            Request::Moldable(m) => m.choices().first().map(|c| Rigid {
                pool: m.pool,
                nodes: c.nodes,
                walltime: c.walltime,
            }),
            Request::Evolving(e) => Some(Rigid {
                pool: e.pool,
                nodes: max_nodes(&e.steps),
                walltime: total_duration(&e.steps),
            }),
            Request::CoAllocated(c) => Some(Rigid {
                pool: RNone,
                nodes: c.components.iter().map(|c| c.nodes).sum(),
                walltime: c.walltime,
            }),
        }
    }

    /// Short name of the kind, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Request::Rigid(_) => "rigid",
            Request::Moldable(_) => "moldable",
            Request::Evolving(_) => "evolving",
            Request::CoAllocated(_) => "co-allocated",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evolving_as_rigid_takes_max_nodes_and_sum_of_durations() {
        let r = Request::evolving(vec![
            Step::new(500, 5),
            Step::new(3600, 10),
            Step::new(10, 1),
        ]);
        let rigid = r.as_rigid().unwrap();
        assert_eq!((rigid.nodes, rigid.walltime), (10, 4110));
    }

    #[test]
    fn moldable_explicit_config_beats_model() {
        let m = Moldable {
            pool: RNone,
            configs: abi_stable::rvec![MoldConfig {
                nodes: 4,
                walltime: 100,
            }],
            model: RSome(SpeedupModel::Linear { work: 1000 }),
            min_nodes: 1,
            max_nodes: 8,
            weight: 1.0,
        };
        assert_eq!(m.walltime_on(4), Some(100));
        assert_eq!(m.walltime_on(5), Some(200));
        assert_eq!(m.walltime_on(9), None);
        assert_eq!(m.choices().len(), 8);
    }

    proptest::proptest! {
        /// `choices` lists what a scan of the explicit configurations per count listed: the
        /// explicit ones first, then the model's counts none of them names, in order.
        #[test]
        fn choices_skip_the_explicit_counts(
            explicit in proptest::collection::vec((1u32..12, 1u64..50), 0..6),
            min in 0u32..6,
            width in 0u32..10,
        ) {
            let m = Moldable {
                pool: RNone,
                configs: explicit.iter().map(|&(nodes, walltime)| MoldConfig { nodes, walltime }).collect(),
                model: RSome(SpeedupModel::Linear { work: 1000 }),
                min_nodes: min,
                max_nodes: min + width,
                weight: 1.0,
            };
            let mut naive = m.configs.to_vec();
            for k in min.max(1)..=min + width {
                if !m.configs.iter().any(|c| c.nodes == k) {
                    naive.push(MoldConfig { nodes: k, walltime: SpeedupModel::Linear { work: 1000 }.walltime(k) });
                }
            }
            proptest::prop_assert_eq!(m.choices(), naive);
        }
    }

    #[test]
    fn amdahl_is_monotone_and_bounded_by_serial_part() {
        let m = SpeedupModel::Amdahl {
            work: 10_000,
            serial: 0.1,
        };
        assert_eq!(m.walltime(1), 10_000);
        assert!(m.walltime(2) < m.walltime(1));
        assert!(m.walltime(1000) >= 1_000);
    }
}
