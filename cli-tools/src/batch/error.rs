//! The one error type of the tools' parsers.

use thiserror::Error;

/// A user-supplied value that cannot be understood. Its message is the one line a tool prints.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SpecError {
    /// A value of an option is malformed.
    #[error("invalid {what} '{input}': {reason}")]
    Invalid {
        /// What the value was meant to be ("time limit", "dependency", ...).
        what: &'static str,
        /// The value as given.
        input: String,
        /// Why it was refused.
        reason: String,
    },
    /// A `#ESUB` directive line is malformed.
    #[error("line {line} of the script: {reason}")]
    Directive {
        /// 1-based line number in the script.
        line: usize,
        /// Why it was refused.
        reason: String,
    },
    /// A value that came from somewhere other than the command line, with where it came from.
    #[error("{inner} (from {origin})")]
    Sourced {
        /// `ESUB_TIMELIMIT`, `#ESUB directive`, ...
        origin: String,
        /// The underlying error.
        inner: Box<SpecError>,
    },
    /// Options that cannot be given together.
    #[error("conflicting options: {0}")]
    Conflict(String),
    /// A value refused by batch-proto's own validation, which words its message itself.
    #[error("{0}")]
    Proto(String),
}
