//! # esched-rigid-common: what the rigid policies share
//!
//! cbf, easy and fcfs see every request as rigid (`Request::as_rigid`) and plan it into
//! per-pool "nodes used" profiles. This crate holds that common ground:
//!
//! - [`common`]: the rigid view of a pending job ([`Job`]), the jobs refused for good, the
//!   per-pool profiles and the choice of pool ([`Cluster`]), fit hints;
//! - [`book`]: the reservation book that cbf (any order) and fcfs (`in_order`) keep between
//!   calls and update from the difference between two snapshots.
//!
//! It is a plain library on purpose, not a policy: every policy crate is also a cdylib that
//! exports its own plugin root module, and a policy library linking another policy's rlib would
//! carry that one's root module too.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod book;
pub mod common;

pub use book::{Book, Counters};
pub use common::{Cluster, FitHints, Job, Refusal};
