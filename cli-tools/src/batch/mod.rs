//! The logic behind the SLURM-like user tools (`esubmit`, `equeue`, `ecancel`, `einfo`,
//! `eacct`, `econtrol`, `erelease`): option values in Slurm's formats, `#ESUB` script
//! directives, and squeue-style output. The binaries in `src/bin/` are glue over this module and `batch-proto`.

pub mod acct;
pub mod args;
pub mod cancel;
pub mod cli;
pub mod compat;
pub mod control;
pub mod directives;
pub mod error;
pub mod escape;
pub mod format;
pub mod info;
pub mod pictures;
pub mod queue;
pub mod release;
pub mod setup;
pub mod slurm_json;
pub mod spec;
pub mod step;
pub mod submit;
pub mod time;
pub mod view;
pub mod whatif;

pub use error::SpecError;
