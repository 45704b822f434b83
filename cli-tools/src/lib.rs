//! # cli-tools: esched's command-line programs
//!
//! The binaries in `src/bin/` are thin `main`s over this library:
//!
//! - [`batch`]: the Slurm-like batch tools (`esubmit`, `equeue`, `ecancel`, `einfo`, `eacct`,
//!   `econtrol`, `erelease`): their command lines, Slurm's time and `--begin` forms, `#ESUB`
//!   directives, squeue-style formats, each talking to batchd through `batch-proto`;
//! - [`esim`]: the trace-driven simulator's subcommands (replay, bench, schedule, the papers'
//!   experiments), over `sched-sim`;
//! - [`policies`]: the one seam where esim builds a policy (a plugin by name or path, or a
//!   linked one with `--linked`).
//!
//! Architecture invariant: no scheduling logic lives here.

pub mod batch;
pub mod esim;
pub mod policies;
