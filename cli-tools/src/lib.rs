//! # cli-tools: esched's Slurm-like batch tools
//!
//! The binaries in `src/bin/` (`esubmit`, `equeue`, `ecancel`, `einfo`, `eacct`, `econtrol`,
//! `erelease`, `eview`) are thin `main`s over [`batch`]: their
//! command lines, Slurm's time and `--begin` forms, `#ESUB` directives, squeue-style formats,
//! each talking to batchd through `batch-proto`. The simulator is the `esim` crate, so that these
//! tools link no policy.
//!
//! Architecture invariant: no scheduling logic lives here, and no policy crate is linked.
#![forbid(unsafe_code)]

pub mod batch;
