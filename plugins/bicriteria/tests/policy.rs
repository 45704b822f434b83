//! The online policy driven on a virtual clock through sched-core's plan validator: every plan
//! is valid (shapes included: each started configuration is one the job offered), and every
//! job that fits the pool runs while the others are refused. Jobs end at a random fraction of
//! their walltime, so the batches' online compaction is exercised.

use std::collections::BTreeMap;

use esched_bicriteria::BiCriteria;
use proptest::prelude::*;
use sched_core::testkit::pools;
use sched_core::{validate, JobId, Pending, Policy, Request, Running, Shape, Snapshot, Time};

#[derive(Clone, Debug)]
struct Job {
    submit: Time,
    request: Request,
    /// Fraction of its walltime the job really runs (ends early below 1).
    run_frac: f64,
}

fn job() -> impl Strategy<Value = Job> {
    (
        0u64..20_000,
        prop::collection::vec((1u32..=10, 1_000u64..10_000), 1..=3),
        any::<bool>(),
        1u32..=10,
        0.3f64..=1.0,
    )
        .prop_map(|(submit, cfgs, rigid, w, run_frac)| {
            let request = if rigid {
                Request::rigid(cfgs[0].0, cfgs[0].1)
            } else {
                Request::moldable(&cfgs, w as f64)
            };
            Job {
                submit,
                request,
                run_frac,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn online_plans_are_valid_and_every_fitting_job_runs(
        jobs in prop::collection::vec(job(), 1..=12),
    ) {
        let pools = pools(&[8]);
        let mut pol = BiCriteria::default();
        let mut now: Time = 0;
        let mut running: Vec<(Running, Time)> = Vec::new();
        let mut started: BTreeMap<usize, Time> = BTreeMap::new();
        let mut rejected: Vec<usize> = Vec::new();
        for _ in 0..10_000 {
            running.retain(|(_, end)| *end > now);
            let pending: Vec<Pending> = jobs
                .iter()
                .enumerate()
                .filter(|(i, j)| j.submit <= now && !started.contains_key(i) && !rejected.contains(i))
                .map(|(i, j)| Pending { wants_view: false, claimed: Default::default(),
                    id: JobId(i as u64),
                    user: 0,
                    submit: j.submit,
                    earliest_start: j.submit,
                    priority: 0,
                    request: j.request.clone(),
                })
                .collect();
            let run_now: Vec<Running> = running.iter().map(|(r, _)| r.clone()).collect();
            let snap = Snapshot { now, pools: &pools, running: &run_now, pending: &pending };
            let plan = pol.plan(&snap);
            prop_assert!(validate(&snap, &plan).is_ok(), "{:?}", validate(&snap, &plan));
            for r in &plan.rejects {
                rejected.push(r.job.0 as usize);
            }
            for pl in plan.placements.iter().filter(|p| p.start == now) {
                let i = pl.job.0 as usize;
                let walltime = match pl.shape {
                    Shape::Moldable { walltime, .. } | Shape::Rigid { walltime, .. } => walltime,
                    _ => unreachable!("only rigid and moldable shapes"),
                };
                let real = ((walltime as f64 * jobs[i].run_frac) as u64).max(1);
                started.insert(i, now);
                running.push((
                    Running {
                        id: pl.job,
                        user: 0,
                        request: jobs[i].request.clone(),
                        shape: pl.shape.clone(),
                        start: now,
                        holds: pl.shape.holds(&jobs[i].request, now).into(),
                        killable: false,
                    },
                    now + real,
                ));
            }
            if started.len() + rejected.len() == jobs.len() {
                break;
            }
            let next = jobs
                .iter()
                .map(|j| j.submit)
                .filter(|&t| t > now)
                .chain(running.iter().map(|(_, e)| *e))
                .chain(plan.wake_at.into_option().filter(|&t| t > now))
                .min();
            match next {
                Some(t) => now = t,
                None => prop_assert!(false, "stuck at {now}: {:?}", plan),
            }
        }
        for (i, j) in jobs.iter().enumerate() {
            let fits = match &j.request {
                Request::Rigid(r) => r.nodes <= 8,
                Request::Moldable(m) => m.configs.iter().any(|c| c.nodes <= 8),
                _ => true,
            };
            prop_assert_eq!(fits, started.contains_key(&i), "job {} fits = {}", i, fits);
        }
    }
}
