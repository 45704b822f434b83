//! Behaviour of sched-core through its public surface; one binary, one module per topic.

mod profile_props;
