//! sched-sim's SWF reader on arbitrary bytes: it must answer with a trace or an error, never
//! panic, and a trace it accepts must hold jobs the engine can replay (positive sizes and
//! walltimes that fit the machine).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use sched_sim::swf::{read, ReadOptions};

fuzz_target!(|data: &[u8]| {
    for opts in [
        ReadOptions::default(),
        ReadOptions {
            nodes: Some(64),
            limit: Some(5),
        },
    ] {
        if let Ok(trace) = read(data, Path::new("fuzz.swf"), &opts) {
            for j in &trace.jobs {
                assert!(j.nodes >= 1 && j.nodes <= trace.nodes, "{j:?}");
            }
        }
    }
});
