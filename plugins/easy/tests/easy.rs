//! EASY backfilling through its public surface, on random workloads.

#[path = "../../cbf/tests/support/replay.rs"]
mod replay;

mod properties {
    use esched_easy::Easy;
    use proptest::prelude::*;
    use sched_core::{JobId, Snapshot, Time};

    use crate::replay::{pools, replay, strategy::workload};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Every plan is valid (checked by `replay`), no job starts before its submission, a
        /// plan holds at most one future start, and the first waiting job's reservation never
        /// moves later while that job stays first.
        #[test]
        fn easy_never_delays_the_first_waiting_job((sizes, jobs) in workload(40, 2)) {
            let pools = pools(&sizes);
            let mut head: Option<(JobId, Time)> = None;
            let mut broken: Option<String> = None;
            let out = replay(&mut Easy::new(), &pools, &jobs, |snap: &Snapshot<'_>, plan| {
                let future: Vec<_> = plan.placements.iter().filter(|p| p.start > snap.now).collect();
                assert!(future.len() <= 1, "more than one reservation: {future:?}");
                let now_head = future.first().map(|p| (p.job, p.start));
                if let (Some((was, at)), Some((is, start))) = (head, now_head) {
                    if was == is && start > at && broken.is_none() {
                        broken = Some(format!("at {}: job {was}'s reservation moved from {at} to {start}", snap.now));
                    }
                }
                head = now_head;
            });
            prop_assert!(broken.is_none(), "{}", broken.unwrap_or_default());
            for (i, job) in jobs.iter().enumerate() {
                match out.start[i] {
                    Some(s) => prop_assert!(s >= job.submit, "job {i} started at {s} before its submission"),
                    None => prop_assert!(out.rejected[i], "job {i} neither started nor rejected"),
                }
            }
        }
    }
}
