//! Klein & Pérez's experiment with fully-predictably evolving applications (Euro-Par 2011 §5,
//! INRIA RR-7205 §5): the synthetic workload ([`workload`]), the offline runs of each variant
//! and the metrics of their Tables 1 and 2 ([`experiment`]), and the tables printed in the
//! papers' layout beside the papers' own figures ([`tables`]).
//!
//! Every test is the offline problem of the papers: all applications submitted at t = 0 in the
//! listed order, one `plan` call of the policy on a snapshot at now = 0 with all of them pending.

pub mod experiment;
pub mod tables;
pub mod workload;

pub use experiment::{
    run_experiment, schedule_test, AppSchedule, ExperimentError, MinAvgMax, Report, Row,
    TestSchedule, Variant,
};
pub use tables::{format_tables, paper_report, residual};
pub use workload::{generate, Test, WorkloadSpec};
