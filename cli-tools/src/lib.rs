//! Being written.

pub mod batch;
pub mod esim;
pub mod policies;
