//! esched's standard outputs and pictures, shared by esim, the lab and the batch tools:
//!
//! - [`swf`]: a schedule written as a Standard Workload Format trace (the Parallel Workloads
//!   Archive's definition), which esim and pyss read back;
//! - [`batsim`]: the columns of Batsim's jobs CSV, as evalys reads it;
//! - [`nodes`]: node interval sets (`0-3 7`) and the placement of a schedule that counts
//!   nodes onto numbered nodes;
//! - [`plot`]: the one plotting module, on plotters' SVG backend: Gantt charts of jobs on nodes
//!   over time, with utilisation and queue length beneath, and line charts for papers'
//!   figures;
//! - [`png`]: those pictures as PNG (the SVG rasterised, with an embedded font);
//! - [`text`]: a Gantt chart as text, for a terminal.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod batsim;
pub mod nodes;
pub mod plot;
pub mod png;
pub mod swf;
pub mod text;
