//! Property tests of the real policies on random workloads (1–2 pools, random submit times,
//! sizes, walltimes and actual run times ≤ walltime), checked independently of the engine's
//! own bookkeeping: from the per-job results and from the plans an observer records.

use std::collections::HashMap;

use proptest::prelude::*;
use sched_core::validate::PlanError;
use sched_core::{JobId, NamedPolicy, Params, Plan, Policy, PoolId, Request, Snapshot, Time};
use sched_sim::{EventOrder, Observer, SimJob, SimResults, Simulation};

use crate::common::pools;

#[derive(Clone, Debug)]
struct Work {
    pools: Vec<u32>,
    jobs: Vec<SimJob>,
}

fn work() -> impl Strategy<Value = Work> {
    prop::collection::vec(1u32..=12, 1..=2)
        .prop_flat_map(|pools| {
            let max = *pools.iter().max().unwrap_or(&1);
            let np = pools.len() as u32;
            // (submit s, nodes, walltime s, run time as % of walltime, pool choice; np = any)
            let job = (0u64..80, 1u32..=max, 1u64..=30, 1u64..=100, 0u32..=np);
            (Just(pools), prop::collection::vec(job, 1..40))
        })
        .prop_map(|(pools, mut raw)| {
            // Whole seconds, so that many events share an instant, as in SWF traces.
            raw.sort_by_key(|r| r.0);
            let jobs = raw
                .into_iter()
                .enumerate()
                .map(|(i, (submit, n, wall, pct, pc))| {
                    let pool = pools.get(pc as usize).map(|_| PoolId(pc));
                    let nodes = pool.map_or(n, |p| n.min(pools[p.0 as usize]));
                    let walltime = wall * 1000;
                    SimJob {
                        id: JobId(i as u64 + 1),
                        user: (i % 3) as u32,
                        submit: submit * 1000,
                        request: Request::Rigid(sched_core::Rigid {
                            pool: pool.into(),
                            nodes,
                            walltime,
                        }),
                        runtime: (walltime * pct / 100).max(1),
                        killable: false,
                    }
                })
                .collect();
            Work { pools, jobs }
        })
}

/// Records what the tests check about plans.
#[derive(Default)]
struct Watch {
    refused: Vec<String>,
    /// The start each job got in the first plan after it was queued.
    first_reservation: HashMap<JobId, Time>,
    /// The queue's head and its latest reservation.
    head: Option<(JobId, Time)>,
    /// Each head's first reservation as head.
    head_reservation: HashMap<JobId, Time>,
    head_delays: Vec<String>,
    /// Nodes per pool of every started job.
    held: HashMap<JobId, Vec<(PoolId, u32)>>,
}

impl Observer for Watch {
    fn on_plan(&mut self, s: &Snapshot<'_>, plan: &Plan, verdict: Result<(), &PlanError>) {
        if let Err(e) = verdict {
            self.refused.push(format!("at {}: {e}", s.now));
            return;
        }
        let placed: HashMap<JobId, &sched_core::Placement> =
            plan.placements.iter().map(|p| (p.job, p)).collect();
        for p in s.pending {
            if let Some(pl) = placed.get(&p.id) {
                self.first_reservation.entry(p.id).or_insert(pl.start);
                if pl.start <= s.now {
                    let holds = pl.shape.holds(&p.request, pl.start);
                    let per_pool = holds
                        .iter()
                        .map(|h| (h.pool, sched_core::request::max_nodes(&h.steps)))
                        .collect();
                    self.held.insert(p.id, per_pool);
                }
            }
        }
        if let Some(h) = s.pending.first() {
            if let Some(pl) = placed.get(&h.id) {
                if let Some((prev, t)) = self.head {
                    if prev == h.id && pl.start > t {
                        self.head_delays.push(format!(
                            "head {} moved from {t} to {} at {}",
                            h.id, pl.start, s.now
                        ));
                    }
                }
                self.head = Some((h.id, pl.start));
                self.head_reservation.entry(h.id).or_insert(pl.start);
            }
        }
    }
}

/// Replays `w` with `P`, the events of an instant handed over at once or one by one.
fn run<P: NamedPolicy>(w: &Work, per_event: bool) -> Result<(Watch, SimResults), TestCaseError> {
    let order = if per_event {
        EventOrder::PerEvent
    } else {
        EventOrder::Instant
    };
    let mut policy =
        P::from_params(&Params::new()).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut watch = Watch::default();
    let r = Simulation::new(pools(&w.pools), P::NAME)
        .observer(&mut watch)
        .events(order)
        .run(&mut policy as &mut dyn Policy, w.jobs.clone())
        .map_err(|e| TestCaseError::fail(format!("{}: {e}", P::NAME)))?;
    check_common(P::NAME, w, &watch, &r)?;
    Ok((watch, r))
}

/// What every policy must do: valid plans, every job run, none before its submission, for
/// exactly its run time, and no pool over-committed at any instant.
fn check_common(name: &str, w: &Work, watch: &Watch, r: &SimResults) -> Result<(), TestCaseError> {
    prop_assert!(
        watch.refused.is_empty(),
        "{name}: refused plans {:?}",
        watch.refused
    );
    prop_assert_eq!(r.counts.ran, w.jobs.len(), "{}: not every job ran", name);
    let by_id: HashMap<JobId, &SimJob> = w.jobs.iter().map(|j| (j.id, j)).collect();
    for j in &r.jobs {
        let job = by_id[&j.id];
        prop_assert!(
            j.start >= job.submit,
            "{name}: job {} starts at {} before its submission {}",
            j.id,
            j.start,
            job.submit
        );
        prop_assert_eq!(
            j.end - j.start,
            job.runtime,
            "{}: job {} ran the wrong time",
            name,
            j.id
        );
    }
    for (pi, &cap) in w.pools.iter().enumerate() {
        let pool = PoolId(pi as u32);
        let mut ev: Vec<(Time, i64)> = Vec::new();
        for j in &r.jobs {
            let held = watch.held.get(&j.id).cloned().unwrap_or_default();
            for (_, n) in held.into_iter().filter(|(p, _)| *p == pool) {
                ev.push((j.start, i64::from(n)));
                ev.push((j.end, -i64::from(n)));
            }
        }
        // Ends before starts at one instant.
        ev.sort();
        let mut used = 0i64;
        for (t, d) in ev {
            used += d;
            prop_assert!(
                used <= i64::from(cap),
                "{name}: pool {pi} holds {used} of {cap} nodes at {t}"
            );
        }
    }
    Ok(())
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fcfs_starts_jobs_in_queue_order(w in work(), per_event in any::<bool>()) {
        let (_, r) = run::<esched_fcfs::Fcfs>(&w, per_event)?;
        // Results come in queue order (submit time, then workload order).
        for pair in r.jobs.windows(2) {
            prop_assert!(pair[0].start <= pair[1].start, "job {} starts at {} after job {} at {}", pair[0].id, pair[0].start, pair[1].id, pair[1].start);
        }
    }

    #[test]
    fn easy_never_delays_the_first_queued_job(w in work(), per_event in any::<bool>()) {
        let (watch, r) = run::<esched_easy::Easy>(&w, per_event)?;
        prop_assert!(watch.head_delays.is_empty(), "{:?}", watch.head_delays);
        for j in &r.jobs {
            if let Some(&res) = watch.head_reservation.get(&j.id) {
                prop_assert!(j.start <= res, "head job {} reserved at {res} started at {}", j.id, j.start);
            }
        }
    }

    #[test]
    fn cbf_never_starts_a_job_after_its_first_reservation(w in work(), per_event in any::<bool>()) {
        let (watch, r) = run::<esched_cbf::Cbf>(&w, per_event)?;
        for j in &r.jobs {
            let res = watch.first_reservation.get(&j.id).copied();
            prop_assert!(res.is_some(), "job {} never had a reservation", j.id);
            prop_assert!(Some(j.start) <= res, "job {} reserved at {:?} started at {}", j.id, res, j.start);
        }
    }
}
