//! Where the protocol's and the store's types meet the scheduler's.
//!
//! batch-proto's types are plain serde data for the wire, and the store keeps its own row
//! type; sched-core's are laid out for the plugin ABI. The two never mix: the daemon converts
//! here, at its edges, so that the tools build without the scheduling core and a change of the
//! ABI's layout changes neither the wire nor the database. Both sides serialise alike (tested
//! below), so neither format depends on which side wrote it.
//!
//! Layer 0 of batchd: pure functions of plain data, using no other module of the crate.

use batch_proto as wire;
use sched_core::PoolId;
use serde::{Deserialize, Serialize};

/// A protocol value as the scheduler's type.
pub trait ToCore {
    /// The scheduler's type.
    type Core;
    /// The conversion.
    fn to_core(&self) -> Self::Core;
}

/// A scheduler value as the protocol's type.
pub trait ToWire {
    /// The protocol's type.
    type Wire;
    /// The conversion.
    fn to_wire(&self) -> Self::Wire;
}

impl ToCore for wire::Step {
    type Core = sched_core::Step;
    fn to_core(&self) -> sched_core::Step {
        sched_core::Step::new(self.duration, self.nodes)
    }
}

impl ToCore for [wire::Step] {
    type Core = Vec<sched_core::Step>;
    fn to_core(&self) -> Vec<sched_core::Step> {
        self.iter().map(ToCore::to_core).collect()
    }
}

impl ToCore for wire::MoldConfig {
    type Core = sched_core::MoldConfig;
    fn to_core(&self) -> sched_core::MoldConfig {
        sched_core::MoldConfig {
            nodes: self.nodes,
            walltime: self.walltime,
        }
    }
}

impl ToCore for wire::SpeedupModel {
    type Core = sched_core::SpeedupModel;
    fn to_core(&self) -> sched_core::SpeedupModel {
        match *self {
            wire::SpeedupModel::Amdahl { work, serial } => {
                sched_core::SpeedupModel::Amdahl { work, serial }
            }
            wire::SpeedupModel::Linear { work } => sched_core::SpeedupModel::Linear { work },
        }
    }
}

impl ToWire for sched_core::Step {
    type Wire = wire::Step;
    fn to_wire(&self) -> wire::Step {
        wire::Step::new(self.duration, self.nodes)
    }
}

impl ToWire for [sched_core::Step] {
    type Wire = Vec<wire::Step>;
    fn to_wire(&self) -> Vec<wire::Step> {
        self.iter().map(ToWire::to_wire).collect()
    }
}

impl ToWire for sched_core::MoldConfig {
    type Wire = wire::MoldConfig;
    fn to_wire(&self) -> wire::MoldConfig {
        wire::MoldConfig {
            nodes: self.nodes,
            walltime: self.walltime,
        }
    }
}

impl ToWire for sched_core::SpeedupModel {
    type Wire = wire::SpeedupModel;
    fn to_wire(&self) -> wire::SpeedupModel {
        match *self {
            sched_core::SpeedupModel::Amdahl { work, serial } => {
                wire::SpeedupModel::Amdahl { work, serial }
            }
            sched_core::SpeedupModel::Linear { work } => wire::SpeedupModel::Linear { work },
        }
    }
}

/// The shape a job was started with, as the store's `shape` column keeps it (JSON). Pools are
/// their ids, steps the protocol's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum StoredShape {
    /// A rigid job.
    Rigid {
        /// Pool id.
        pool: u32,
        /// Node count.
        nodes: u32,
        /// Time limit, ms.
        walltime: u64,
    },
    /// A moldable job's chosen configuration.
    Moldable {
        /// Pool id.
        pool: u32,
        /// Chosen node count.
        nodes: u32,
        /// Its time limit, ms.
        walltime: u64,
    },
    /// An evolving job's scheduled EP.
    Evolving {
        /// Pool id.
        pool: u32,
        /// The scheduled steps.
        steps: Vec<wire::Step>,
    },
    /// A co-allocated job's pool of each component.
    CoAllocated {
        /// Pool ids, in component order.
        pools: Vec<u32>,
    },
}

impl From<&sched_core::Shape> for StoredShape {
    fn from(s: &sched_core::Shape) -> Self {
        match s {
            sched_core::Shape::Rigid {
                pool,
                nodes,
                walltime,
            } => StoredShape::Rigid {
                pool: pool.0,
                nodes: *nodes,
                walltime: *walltime,
            },
            sched_core::Shape::Moldable {
                pool,
                nodes,
                walltime,
            } => StoredShape::Moldable {
                pool: pool.0,
                nodes: *nodes,
                walltime: *walltime,
            },
            sched_core::Shape::Evolving { pool, steps } => StoredShape::Evolving {
                pool: pool.0,
                steps: steps.to_wire(),
            },
            sched_core::Shape::CoAllocated { pools } => StoredShape::CoAllocated {
                pools: pools.iter().map(|p| p.0).collect(),
            },
        }
    }
}

impl From<StoredShape> for sched_core::Shape {
    fn from(s: StoredShape) -> Self {
        match s {
            StoredShape::Rigid {
                pool,
                nodes,
                walltime,
            } => sched_core::Shape::Rigid {
                pool: PoolId(pool),
                nodes,
                walltime,
            },
            StoredShape::Moldable {
                pool,
                nodes,
                walltime,
            } => sched_core::Shape::Moldable {
                pool: PoolId(pool),
                nodes,
                walltime,
            },
            StoredShape::Evolving { pool, steps } => sched_core::Shape::Evolving {
                pool: PoolId(pool),
                steps: steps.to_core().into(),
            },
            StoredShape::CoAllocated { pools } => sched_core::Shape::CoAllocated {
                pools: pools.into_iter().map(PoolId).collect(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json<T: Serialize>(v: &T) -> String {
        serde_json::to_string(v).unwrap()
    }

    #[test]
    fn wire_types_serialise_as_the_schedulers() {
        for (d, n) in [(0, 0), (500, 5), (u64::MAX, u32::MAX)] {
            let core = sched_core::Step::new(d, n);
            assert_eq!(json(&core.to_wire()), json(&core));
            assert_eq!(core.to_wire().to_core(), core);
        }
        let mold = sched_core::MoldConfig {
            nodes: 8,
            walltime: 35_000,
        };
        assert_eq!(json(&mold.to_wire()), json(&mold));
        assert_eq!(mold.to_wire().to_core(), mold);
        for model in [
            sched_core::SpeedupModel::Amdahl {
                work: 3_600_000,
                serial: 0.125,
            },
            sched_core::SpeedupModel::Linear { work: 60_000 },
        ] {
            assert_eq!(json(&model.to_wire()), json(&model));
            assert_eq!(model.to_wire().to_core(), model);
            for k in [0, 1, 3, 7, 64, 4096] {
                assert_eq!(
                    model.to_wire().walltime(k),
                    model.walltime(k),
                    "{model:?} on {k}"
                );
            }
        }
    }

    #[test]
    fn stored_shapes_read_and_write_the_schedulers_json() {
        let shapes = [
            sched_core::Shape::rigid(PoolId(0), 1, 5),
            sched_core::Shape::Moldable {
                pool: PoolId(2),
                nodes: 8,
                walltime: 35_000,
            },
            sched_core::Shape::Evolving {
                pool: PoolId(1),
                steps: vec![
                    sched_core::Step::new(500, 5),
                    sched_core::Step::new(3_600, 10),
                ]
                .into(),
            },
            sched_core::Shape::CoAllocated {
                pools: vec![PoolId(0), PoolId(3), PoolId(0)].into(),
            },
        ];
        for shape in shapes {
            let stored = StoredShape::from(&shape);
            let text = json(&shape);
            assert_eq!(json(&stored), text);
            let read: StoredShape = serde_json::from_str(&text).unwrap();
            assert_eq!(sched_core::Shape::from(read), shape);
        }
        // Rows already in databases read as they were written.
        let row = r#"{"Evolving":{"pool":1,"steps":[{"duration":500,"nodes":5}]}}"#;
        let read: StoredShape = serde_json::from_str(row).unwrap();
        assert_eq!(json(&read), row);
        assert_eq!(
            sched_core::Shape::from(read),
            sched_core::Shape::Evolving {
                pool: PoolId(1),
                steps: vec![sched_core::Step::new(500, 5)].into(),
            }
        );
    }
}
