//! ebench, batchd's benchmark client: its command line ([`cli`]); the program is `main.rs`.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod cli;
