//! First come, first served through its public surface, on random workloads.

#[path = "../../cbf/tests/support/replay.rs"]
mod replay;

mod properties {
    use esched_fcfs::Fcfs;
    use proptest::prelude::*;
    use sched_core::{Policy, Snapshot};

    use crate::replay::{pools, replay, strategy::workload};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Every plan is valid (checked by `replay`), no job starts before its submission, jobs
        /// start in queue order, and the incremental plan is at every call the one a fresh
        /// policy plans from scratch (so the early stop of the compression loses nothing).
        #[test]
        fn fcfs_starts_jobs_in_queue_order((sizes, jobs) in workload(40, 2)) {
            let pools = pools(&sizes);
            let mut fcfs = Fcfs::new();
            let mut mismatch: Option<String> = None;
            let out = replay(&mut fcfs, &pools, &jobs, |snap: &Snapshot<'_>, plan| {
                let fresh = Fcfs::new().plan(snap);
                if mismatch.is_none() && fresh.placements != plan.placements {
                    mismatch = Some(format!(
                        "at {}: incremental {:?}\nfresh {:?}", snap.now, plan.placements, fresh.placements
                    ));
                }
                let starts: Vec<u64> = plan.placements.iter().map(|p| p.start).collect();
                assert!(starts.windows(2).all(|w| w[0] <= w[1]), "planned starts out of order: {starts:?}");
            });
            prop_assert!(mismatch.is_none(), "{}", mismatch.unwrap_or_default());
            let mut last = 0;
            for (i, job) in jobs.iter().enumerate() {
                match out.start[i] {
                    Some(s) => {
                        prop_assert!(s >= job.submit, "job {i} started at {s} before its submission");
                        prop_assert!(s >= last, "job {i} started at {s}, before a job ahead of it ({last})");
                        last = s;
                    }
                    None => prop_assert!(out.rejected[i], "job {i} neither started nor rejected"),
                }
            }
            prop_assert_eq!(fcfs.counters().rebuilds, 1);
        }
    }
}
