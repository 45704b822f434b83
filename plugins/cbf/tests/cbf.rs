//! Conservative backfilling through its public surface, on random workloads.

#[path = "support/replay.rs"]
mod replay;

mod properties {
    use std::collections::HashMap;

    use esched_cbf::Cbf;
    use proptest::prelude::*;
    use sched_core::{Changes, JobId, Policy, Profile, Request, Shape, Snapshot, Time};

    use crate::replay::{pools, replay, strategy::workload};

    /// A naive conservative backfilling to check the incremental one against: it rebuilds its
    /// profiles from scratch at every call and, when jobs ended, refits every reservation in
    /// queue order, one at a time, as pyss's `_reschedule_jobs` does at a termination. Rigid
    /// jobs, no cancellations (the replay has none).
    #[derive(Default)]
    struct Oracle {
        reserved: HashMap<JobId, (usize, Time, Time)>,
        ends: HashMap<JobId, Time>,
    }

    impl Oracle {
        fn plan(&mut self, snap: &Snapshot<'_>) -> Vec<(JobId, usize, Time)> {
            let now = snap.now;
            let mut used = vec![Profile::new(); snap.pools.len()];
            for r in snap.running {
                for h in &r.holds {
                    used[h.pool.0 as usize].add_steps(h.start, &h.steps, 1);
                }
            }
            let ended = self
                .ends
                .keys()
                .filter(|id| !snap.running.iter().any(|r| r.id == **id))
                .count();
            self.ends = snap
                .running
                .iter()
                .map(|r| (r.id, r.expected_end()))
                .collect();
            let rigid = |id: JobId| {
                let job = snap.pending.iter().find(|q| q.id == id).expect("pending");
                let Request::Rigid(r) = &job.request else {
                    panic!("rigid workloads only")
                };
                (r.clone(), now.max(job.submit))
            };
            let earliest = |used: &[Profile], id: JobId| {
                let (r, from) = rigid(id);
                snap.pools
                    .iter()
                    .enumerate()
                    .filter(|(i, q)| {
                        q.nodes >= r.nodes
                            && r.pool.into_option().is_none_or(|w| w.0 as usize == *i)
                    })
                    .filter_map(|(i, q)| {
                        used[i]
                            .earliest_fit(from, r.walltime, i64::from(q.nodes - r.nodes))
                            .map(|t| (t, i))
                    })
                    .min()
                    .map(|(t, i)| (i, t))
            };
            let add = |used: &mut [Profile], id: JobId, (pool, start): (usize, Time), sign: i64| {
                let (r, _) = rigid(id);
                used[pool].add(start, start + r.walltime, sign * i64::from(r.nodes));
            };
            let known: Vec<JobId> = snap
                .pending
                .iter()
                .map(|p| p.id)
                .filter(|id| self.reserved.contains_key(id))
                .collect();
            // A job started by the last plan may have ended already, before it was ever seen
            // running. pyss compresses at every end, early or not.
            let ended_unseen = self
                .reserved
                .keys()
                .filter(|id| !known.contains(id) && !snap.running.iter().any(|r| r.id == **id))
                .count();
            let passes = ended + ended_unseen;
            self.reserved.retain(|id, _| known.contains(id));
            let slot_of = |r: &HashMap<JobId, (usize, Time, Time)>, id: &JobId| (r[id].0, r[id].1);
            for id in &known {
                add(&mut used, *id, slot_of(&self.reserved, id), 1);
            }
            let reserve = |used: &mut [Profile], id: JobId, reserved: &mut HashMap<_, _>| {
                let Some(slot) = earliest(used, id) else {
                    return;
                };
                add(used, id, slot, 1);
                reserved.insert(id, (slot.0, slot.1, slot.1 + rigid(id).0.walltime));
            };
            if passes > 0 {
                for id in &known {
                    add(&mut used, *id, slot_of(&self.reserved, id), -1);
                    reserve(&mut used, *id, &mut self.reserved);
                }
            }
            for p in snap.pending.iter().filter(|p| !known.contains(&p.id)) {
                reserve(&mut used, p.id, &mut self.reserved);
            }
            snap.pending
                .iter()
                .filter_map(|p| {
                    self.reserved
                        .get(&p.id)
                        .map(|&(pool, t, _)| (p.id, pool, t))
                })
                .collect()
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Every plan is valid (checked by `replay`), no job starts before its submission, no
        /// job starts later than the reservation it got when it was first queued, and every plan
        /// is the one a naive, non-incremental conservative backfilling gives.
        #[test]
        fn cbf_keeps_its_first_reservations((sizes, jobs) in workload(40, 2)) {
            let pools = pools(&sizes);
            let mut cbf = Cbf::new();
            let mut first: HashMap<JobId, Time> = HashMap::new();
            let mut mismatch: Option<String> = None;
            let mut oracle = Oracle::default();
            let out = replay(&mut cbf, &pools, &jobs, |snap: &Snapshot<'_>, plan| {
                for p in &plan.placements {
                    first.entry(p.job).or_insert(p.start);
                }
                let expected = oracle.plan(snap);
                let got: Vec<(JobId, usize, Time)> = plan
                    .placements
                    .iter()
                    .map(|p| match p.shape {
                        Shape::Rigid { pool, .. } => (p.job, pool.0 as usize, p.start),
                        ref other => panic!("not a rigid shape: {other:?}"),
                    })
                    .collect();
                if mismatch.is_none() && got != expected {
                    mismatch = Some(format!("at {}: planned {got:?}\nnaive CBF {expected:?}", snap.now));
                }
            });
            prop_assert!(mismatch.is_none(), "{}", mismatch.unwrap_or_default());
            for (i, job) in jobs.iter().enumerate() {
                let id = JobId(i as u64);
                match out.start[i] {
                    Some(s) => {
                        prop_assert!(s >= job.submit, "job {i} started at {s} before its submission");
                        let r = first[&id];
                        prop_assert!(s <= r, "job {i} started at {s}, after its first reservation {r}");
                    }
                    None => prop_assert!(out.rejected[i], "job {i} neither started nor rejected"),
                }
                let fits_somewhere = sizes.iter().enumerate().any(|(p, &n)| {
                    n >= job.nodes && job.pool.is_none_or(|q| q as usize == p)
                });
                prop_assert_eq!(out.rejected[i], !fits_somewhere, "job {} rejection", i);
            }
            // Queue order is submit order and never changes here: one build, then increments.
            prop_assert_eq!(cbf.counters().rebuilds, 1);
        }

        /// Asked only for what starts now (esim's calls), CBF answers at every call what its
        /// whole plan reduced to its starts says, and a replay gives every job the same start.
        /// `mix` switches between the two calls on the way.
        #[test]
        fn starts_only_answers_are_the_whole_plans_starts(
            (sizes, jobs) in workload(40, 2),
            mix in prop::collection::vec(any::<bool>(), 1..8),
        ) {
            let pools = pools(&sizes);
            let mut whole = Cbf::new();
            let expected = replay(&mut whole, &pools, &jobs, |_, _| {});
            let mut mismatch: Option<String> = None;
            let mut starts = StartsOnly { cbf: Cbf::new(), shadow: Cbf::new(), mix, call: 0, mismatch: None };
            let out = replay(&mut starts, &pools, &jobs, |_, _| {});
            if let Some(m) = starts.mismatch.take() {
                mismatch = Some(m);
            }
            prop_assert!(mismatch.is_none(), "{}", mismatch.unwrap_or_default());
            prop_assert_eq!(out.start, expected.start);
            prop_assert_eq!(out.rejected, expected.rejected);
        }

        /// Told how each snapshot's running jobs and queue differ from the last one's
        /// (`Policy::expect_changes`, as esim's engine and a plugin's boundary tell it), CBF
        /// answers every call as it does untold. An account holds for one call: `skip` leaves
        /// some calls untold. Debug builds also check, at every call told, that the book's
        /// running jobs are the snapshot's.
        #[test]
        fn told_changes_answer_as_untold(
            (sizes, jobs) in workload(40, 2),
            skip in prop::collection::vec(prop::bool::weighted(0.2), 1..8),
        ) {
            let pools = pools(&sizes);
            let mut untold = Cbf::new();
            let mut plans = Vec::new();
            let expected = replay(&mut untold, &pools, &jobs, |_, plan| plans.push(plan.clone()));
            let mut told = Told { cbf: Cbf::new(), last: None, told: 0, skip, call: 0 };
            let mut call = 0;
            let mut mismatch: Option<String> = None;
            let out = replay(&mut told, &pools, &jobs, |snap, plan| {
                if mismatch.is_none() && plans.get(call) != Some(plan) {
                    mismatch = Some(format!("at {} (call {call}): told {plan:?}\nuntold {:?}", snap.now, plans.get(call)));
                }
                call += 1;
            });
            prop_assert!(mismatch.is_none(), "{}", mismatch.unwrap_or_default());
            prop_assert_eq!(out.start, expected.start);
            // The replay keeps the running list's order: most calls are told (all but the ones
            // skipped), and most accounts of the queue are used.
            let untold = (0..out.calls).filter(|&k| told.skip[k % told.skip.len()]).count();
            prop_assert!(2 * told.told + 2 * untold + 2 >= out.calls, "told {} of {} calls", told.told, out.calls);
            let used = told.cbf.counters().told as usize;
            prop_assert!(3 * used + 3 * untold + 3 >= out.calls, "queue told {} of {} calls", used, out.calls);
        }
    }

    /// Tells CBF, before every call but those `skip` marks, how the snapshot differs from the
    /// last one (worked out from the two lists of ids), when it is drops and arrivals at the
    /// end only.
    struct Told {
        cbf: Cbf,
        last: Option<(Vec<JobId>, Vec<JobId>)>,
        told: usize,
        skip: Vec<bool>,
        call: usize,
    }

    impl Policy for Told {
        fn plan(&mut self, snap: &Snapshot<'_>) -> sched_core::Plan {
            let ids = (
                snap.running.iter().map(|r| r.id).collect::<Vec<_>>(),
                snap.pending.iter().map(|p| p.id).collect::<Vec<_>>(),
            );
            let skip = self.skip[self.call % self.skip.len()];
            self.call += 1;
            if let (Some((running, pending)), false) = (&self.last, skip) {
                let changes = Changes {
                    running: sched_core::testkit::account(running, &ids.0),
                    pending: sched_core::testkit::account(pending, &ids.1),
                };
                self.told += usize::from(changes.running.is_some());
                self.cbf.expect_changes(&changes);
            }
            self.last = Some(ids);
            self.cbf.plan(snap)
        }
    }

    /// Calls `plan_starts` or `plan`, in the order `mix` repeats, and checks each answer
    /// against a shadow policy's whole plan reduced to its starts.
    struct StartsOnly {
        cbf: Cbf,
        shadow: Cbf,
        mix: Vec<bool>,
        call: usize,
        mismatch: Option<String>,
    }

    impl Policy for StartsOnly {
        fn plan(&mut self, snap: &Snapshot<'_>) -> sched_core::Plan {
            let starts = self.mix[self.call % self.mix.len()];
            self.call += 1;
            let reference = self.shadow.plan(snap).starts_only(snap.now);
            let got = if starts {
                self.cbf.plan_starts(snap)
            } else {
                self.cbf.plan(snap)
            };
            let reduced = got.clone().starts_only(snap.now);
            if self.mismatch.is_none() && reduced != reference {
                self.mismatch = Some(format!(
                    "at {}: got {reduced:?}\nwhole plan's {reference:?}",
                    snap.now
                ));
            }
            got
        }
    }
}
