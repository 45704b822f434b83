//! esubmit: its options (`options.rs`), how the command line, the environment and the
//! script's directives combine into one submission (`resolve.rs`), and its I/O (`run.rs`).

mod options;
mod resolve;
mod run;

pub use options::{SubmitCli, SubmitOpts};
pub use resolve::{
    apply_export, parse_components, parse_deadline, script_opts, wrap_script, Context, Submission,
    DEFAULT_TIME_LIMIT, ENV_VARS,
};
pub use run::{read_script, run};

#[cfg(test)]
mod tests;
