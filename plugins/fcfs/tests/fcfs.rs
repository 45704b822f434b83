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

        /// Asked only for what starts now (esim's calls), FCFS answers at every call what the
        /// whole plan reduced to its starts says: the same starts, rejects and next expected
        /// start; so a replay gives every job the same start. `mix` switches between the two
        /// calls on the way, which must not leave the kept plan out of date.
        #[test]
        fn starts_only_answers_are_the_whole_plans_starts(
            (sizes, jobs) in workload(40, 2),
            mix in prop::collection::vec(any::<bool>(), 1..8),
        ) {
            let pools = pools(&sizes);
            let whole = replay(&mut Fcfs::new(), &pools, &jobs, |_, _| {});
            let mut mismatch: Option<String> = None;
            let mut starts = StartsOnly { fcfs: Fcfs::new(), mix, call: 0 };
            let out = replay(&mut starts, &pools, &jobs, |snap: &Snapshot<'_>, plan| {
                let reference = Fcfs::new().plan(snap).starts_only(snap.now);
                let got = plan.clone().starts_only(snap.now);
                if mismatch.is_none() && got != reference {
                    mismatch = Some(format!("at {}: got {got:?}\nwhole plan's {reference:?}", snap.now));
                }
            });
            prop_assert!(mismatch.is_none(), "{}", mismatch.unwrap_or_default());
            prop_assert_eq!(out.start, whole.start);
            prop_assert_eq!(out.rejected, whole.rejected);
        }
    }

    /// Calls `plan_starts` or `plan`, in the order `mix` repeats.
    struct StartsOnly {
        fcfs: Fcfs,
        mix: Vec<bool>,
        call: usize,
    }

    impl Policy for StartsOnly {
        fn plan(&mut self, snap: &Snapshot<'_>) -> sched_core::Plan {
            let starts = self.mix[self.call % self.mix.len()];
            self.call += 1;
            if starts {
                self.fcfs.plan_starts(snap)
            } else {
                self.fcfs.plan(snap)
            }
        }
    }
}
