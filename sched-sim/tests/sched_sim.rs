//! sched-sim through its public surface: the engine's event handling with small hand-made
//! policies, and property tests of the real policies on random workloads.

#[path = "sched_sim/common.rs"]
mod common;
#[path = "sched_sim/engine.rs"]
mod engine;
#[path = "sched_sim/props.rs"]
mod props;
