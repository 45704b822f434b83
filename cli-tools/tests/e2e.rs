//! End-to-end tests: a real `batchd` on a temporary socket and state directory, driven through
//! the real tool binaries (`esubmit`, `equeue`, `ecancel`, `eacct`, `econtrol`, `einfo`).
//!
//! batchd and the policy plugins belong to other packages, so Cargo does not build them for
//! this test; the harness runs `cargo build --profile test -p batchd -p esched-cbf -p
//! esched-easy -p esched-bicriteria` once before the first daemon starts (a no-op when they are up to date, as after
//! `cargo test --workspace`).

#[path = "e2e/harness.rs"]
mod harness;

#[path = "e2e/jobs.rs"]
mod jobs;

#[path = "e2e/cancel.rs"]
mod cancel;

#[path = "e2e/steps.rs"]
mod steps;

#[path = "e2e/workflow.rs"]
mod workflow;

#[path = "e2e/durability.rs"]
mod durability;

#[path = "e2e/reconfigure.rs"]
mod reconfigure;

#[path = "e2e/protocol.rs"]
mod protocol;

#[path = "e2e/evolving.rs"]
mod evolving;

#[path = "e2e/limits.rs"]
mod limits;

#[path = "e2e/coalloc.rs"]
mod coalloc;

#[path = "e2e/escaping.rs"]
mod escaping;
#[path = "e2e/hosts.rs"]
mod hosts;
#[path = "e2e/moldable.rs"]
mod moldable;
#[path = "e2e/nodes.rs"]
mod nodes;
#[path = "e2e/slurm.rs"]
mod slurm;
#[path = "e2e/views.rs"]
mod views;

#[path = "e2e/eview.rs"]
mod eview;

#[path = "e2e/inslurm.rs"]
mod inslurm;

#[path = "e2e/ops.rs"]
mod ops;
#[path = "e2e/pictures.rs"]
mod pictures;
#[path = "e2e/whatif.rs"]
mod whatif;
