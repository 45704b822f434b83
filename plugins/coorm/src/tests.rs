use proptest::prelude::*;
use sched_core::testkit::{pending_rigid, pools, running_rigid, start_of};
use sched_core::{
    cap_value_at, validate, CoAllocated, Component, JobId, MoldConfig, Moldable, Pending, Plan,
    Policy, Pool, PoolId, RNone, RSome, Request, Running, Snapshot, Time, View, FOREVER,
};

use crate::pass::{pass, Ask, Config, Entry, Planned};
use crate::{select, Coorm};

fn plan(now: Time, pools: &[Pool], run: &[Running], pend: &[Pending]) -> Plan {
    let snap = Snapshot {
        now,
        pools,
        running: run,
        pending: pend,
    };
    let plan = Coorm::new().plan(&snap);
    validate(&snap, &plan).expect("valid plan");
    plan
}

/// A CooRM launcher's job: `parts` (pool, hosts) for `walltime`, wanting its view.
fn launcher(id: u64, parts: &[(u32, u32)], walltime: u64) -> Pending {
    Pending {
        wants_view: true,
        claimed: Default::default(),
        request: Request::CoAllocated(CoAllocated {
            components: parts
                .iter()
                .map(|&(p, n)| Component {
                    nodes: n,
                    pool: RSome(PoolId(p)),
                })
                .collect(),
            walltime,
            deadline: RNone,
        }),
        ..pending_rigid(id, 1, 1)
    }
}

fn view(p: &Plan, job: u64) -> &View {
    p.views
        .iter()
        .find(|v| v.job == JobId(job))
        .expect("a view")
}

fn steps(v: &View, pool: u32) -> Vec<(u64, u32)> {
    let c = v.available.iter().find(|c| c.pool == PoolId(pool)).unwrap();
    c.steps.iter().map(|s| (s.duration, s.nodes)).collect()
}

#[test]
fn view_is_the_profiles_before_the_job_and_ends_free_forever() {
    // Two pools of 10; job 1 runs 6 nodes of pool 0 until 100.
    let pools = pools(&[10, 10]);
    let run = vec![running_rigid(1, 0, 6, 0, 100)];
    // Launcher 2 takes 8 of pool 0 and 5 of pool 1 for 50: both free at 100.
    // Launcher 3 sees pool 0 without job 1 after 100 but with launcher 2 on [100, 150).
    let pend = vec![
        launcher(2, &[(0, 8), (1, 5)], 50),
        launcher(3, &[(1, 10)], 10),
    ];
    let p = plan(0, &pools, &run, &pend);
    assert_eq!(steps(view(&p, 2), 0), vec![(100, 4), (FOREVER, 10)]);
    assert_eq!(steps(view(&p, 2), 1), vec![(FOREVER, 10)]);
    assert_eq!(start_of(&p, 2), Some(100));
    assert_eq!(
        steps(view(&p, 3), 0),
        vec![(100, 4), (50, 2), (FOREVER, 10)]
    );
    assert_eq!(
        steps(view(&p, 3), 1),
        vec![(100, 10), (50, 5), (FOREVER, 10)]
    );
    // Launcher 3 wants all of pool 1 for 10: it fits before launcher 2 (backfilling).
    assert_eq!(start_of(&p, 3), Some(0));
    assert_eq!(p.wake_at.into_option(), Some(100));
}

#[test]
fn no_views_for_jobs_that_do_not_ask() {
    let pools = pools(&[10]);
    let pend = vec![pending_rigid(1, 4, 10), pending_rigid(2, 4, 10)];
    let p = plan(0, &pools, &[], &pend);
    assert!(p.views.is_empty());
    assert_eq!(start_of(&p, 1), Some(0));
}

#[test]
fn launcher_without_request_gets_its_view_and_reserves_nothing() {
    let pools = pools(&[10]);
    let pend = vec![launcher(1, &[], 0), pending_rigid(2, 10, 10)];
    let p = plan(5, &pools, &[], &pend);
    assert_eq!(steps(view(&p, 1), 0), vec![(FOREVER, 10)]);
    assert_eq!(start_of(&p, 1), None);
    assert_eq!(start_of(&p, 2), Some(5));
    assert!(p.rejects.is_empty());
}

#[test]
fn request_larger_than_a_pool_waits_forever_without_reject() {
    let pools = pools(&[10, 4]);
    let pend = vec![launcher(1, &[(0, 2), (1, 5)], 10), pending_rigid(2, 10, 10)];
    let p = plan(0, &pools, &[], &pend);
    assert_eq!(start_of(&p, 1), None);
    assert!(p.rejects.is_empty());
    // It reserves nothing: job 2 starts now on pool 0.
    assert_eq!(start_of(&p, 2), Some(0));
}

#[test]
fn unknown_pool_is_refused() {
    let pools = pools(&[10]);
    let p = plan(0, &pools, &[], &[launcher(1, &[(7, 1)], 10)]);
    assert_eq!(p.rejects.len(), 1);
}

#[test]
fn co_allocation_waits_until_every_pool_fits() {
    // Pool 0 busy until 100, pool 1 busy on [0, 200) by 5 of 10.
    let pools = pools(&[10, 10]);
    let run = vec![
        running_rigid(1, 0, 10, 0, 100),
        running_rigid(2, 1, 5, 0, 200),
    ];
    let p = plan(0, &pools, &run, &[launcher(3, &[(0, 1), (1, 6)], 10)]);
    assert_eq!(start_of(&p, 3), Some(200));
}

#[test]
fn moldable_jobs_take_the_earliest_completing_configuration() {
    let pools = pools(&[10, 10]);
    let run = vec![running_rigid(1, 0, 8, 0, 1000)];
    let m = Pending {
        request: Request::Moldable(Moldable {
            pool: RNone,
            configs: sched_core::rvec![
                MoldConfig {
                    nodes: 2,
                    walltime: 500,
                },
                MoldConfig {
                    nodes: 8,
                    walltime: 100,
                },
            ],
            model: RNone,
            min_nodes: 0,
            max_nodes: 0,
            weight: 1.0,
        }),
        ..pending_rigid(2, 1, 1)
    };
    let snap_pools = pools.clone();
    let p = plan(0, &snap_pools, &run, std::slice::from_ref(&m));
    // 8 nodes on pool 1 now ends at 100, the best.
    assert_eq!(start_of(&p, 2), Some(0));
    assert_eq!(
        p.placements[0].shape,
        sched_core::Shape::Moldable {
            pool: PoolId(1),
            nodes: 8,
            walltime: 100
        }
    );
}

#[test]
fn the_hook_answers_instantly_and_later_jobs_see_its_answer() {
    let pools = pools(&[10]);
    let snap = Snapshot {
        now: 0,
        pools: &pools,
        running: &[],
        pending: &[],
    };
    let entries = vec![
        Entry {
            job: JobId(1),
            earliest: 0,
            wants_view: true,
            ask: Ask::ViewOnly,
        },
        Entry {
            job: JobId(2),
            earliest: 0,
            wants_view: true,
            ask: Ask::ViewOnly,
        },
    ];
    let out = pass(&snap, &entries, |k, v| {
        (k == 0).then(|| {
            assert_eq!(v.free_at(PoolId(0), 0), Some(10));
            Ask::Fixed {
                components: vec![(PoolId(0), 6)],
                walltime: 30,
            }
        })
    });
    assert!(matches!(out.planned[0], Planned::Placed { start: 0, .. }));
    assert_eq!(out.plan.views[1].free_at(PoolId(0), 0), Some(4));
    assert_eq!(out.plan.views[1].free_at(PoolId(0), 30), Some(10));
    assert_eq!(out.counters.views, 2);
}

/// Pool sizes, running jobs `(pool, nodes, end)`, requests `[(pool, hosts)]`, walltimes.
type Case = (
    Vec<u32>,
    Vec<(u32, u32, u64)>,
    Vec<Vec<(u32, u32)>>,
    Vec<u64>,
);

fn arb_case() -> impl Strategy<Value = Case> {
    (
        proptest::collection::vec(1u32..12, 1..4),
        proptest::collection::vec((0u32..4, 1u32..12, 1u64..300), 0..5),
        proptest::collection::vec(proptest::collection::vec((0u32..4, 0u32..14), 0..3), 1..7),
        proptest::collection::vec(1u64..200, 7),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// A view never shows more free nodes than the pool has (nor fewer than 0: the type is
    /// unsigned, and an over-committed pool shows 0); the job's own placement fits its view;
    /// the plan never over-commits a pool (the validator's check); the view ends free forever.
    #[test]
    fn views_are_bounded_placements_fit_their_views(case in arb_case(), now in 0u64..50) {
        let (sizes, run, reqs, walls) = case;
        let pools = pools(&sizes);
        let np = sizes.len() as u32;
        let running: Vec<Running> = run
            .iter()
            .enumerate()
            .filter(|(_, (p, n, _))| *n <= sizes[(*p % np) as usize])
            .map(|(i, &(p, n, end))| running_rigid(100 + i as u64, p % np, n, 0, now + end))
            .collect();
        // Running jobs must not over-commit a pool between them.
        for (i, &s) in sizes.iter().enumerate() {
            let used: u32 = running.iter().filter(|r| r.holds[0].pool == PoolId(i as u32)).map(|r| r.holds[0].steps[0].nodes).sum();
            prop_assume!(used <= s);
        }
        let pend: Vec<Pending> = reqs
            .iter()
            .enumerate()
            .map(|(j, parts)| {
                let parts: Vec<(u32, u32)> = parts.iter().map(|&(p, n)| (p % np, n)).collect();
                launcher(j as u64 + 1, &parts, walls[j])
            })
            .collect();
        let p = plan(now, &pools, &running, &pend);
        prop_assert_eq!(p.views.len(), pend.len());
        for v in &p.views {
            for c in &v.available {
                let size = sizes[c.pool.0 as usize];
                prop_assert_eq!(c.start, now);
                prop_assert!(c.steps.iter().all(|s| s.nodes <= size));
                prop_assert_eq!(c.steps.last().map(|s| s.duration), Some(FOREVER));
                prop_assert_eq!(c.steps.last().map(|s| s.nodes), Some(size));
            }
        }
        for pl in &p.placements {
            let j = pend.iter().position(|q| q.id == pl.job).unwrap();
            let Request::CoAllocated(c) = &pend[j].request else { unreachable!() };
            let v = view(&p, pl.job.0);
            let mut need = vec![0u32; sizes.len()];
            for comp in &c.components {
                need[comp.pool.unwrap().0 as usize] += comp.nodes;
            }
            // Sampled at every change point of the view inside the job's window.
            for (i, &n) in need.iter().enumerate() {
                if n == 0 || c.walltime == 0 { continue; }
                let cap = &v.available[i];
                let mut t = cap.start;
                let mut times = vec![pl.start];
                for s in &cap.steps { if s.duration == FOREVER { break; } t += s.duration; if t > pl.start && t < pl.start + c.walltime { times.push(t); } }
                for t in times {
                    prop_assert!(cap_value_at(cap, t).unwrap() >= n, "job {} at {} on pool {}", pl.job, t, i);
                }
            }
            // And the launcher's own search on its view finds the same start.
            let needs: Vec<(PoolId, u32)> = c.components.iter().map(|c| (c.pool.unwrap(), c.nodes)).collect();
            prop_assert_eq!(select::earliest_all_in_view(v, &needs, c.walltime, now), Some(pl.start));
        }
        // Larger than a pool: no placement, no reject.
        for q in &pend {
            let Request::CoAllocated(c) = &q.request else { unreachable!() };
            let mut need = vec![0u32; sizes.len()];
            for comp in &c.components { need[comp.pool.unwrap().0 as usize] += comp.nodes; }
            let too_big = need.iter().zip(&sizes).any(|(n, s)| n > s);
            let placed = p.placements.iter().any(|pl| pl.job == q.id);
            prop_assert_eq!(placed, !too_big && !c.components.is_empty());
        }
        prop_assert!(p.rejects.is_empty());
    }

    /// The launcher's earliest-completing choice on its view is the policy's on the profiles:
    /// the ground of CooRM = OAR-like starts on W0.
    #[test]
    fn selection_on_the_view_matches_the_policy(case in arb_case(), cfgs in proptest::collection::vec((0u32..4, 1u32..12, 1u64..300), 1..6)) {
        let (sizes, run, _, _) = case;
        let pools = pools(&sizes);
        let np = sizes.len() as u32;
        let running: Vec<Running> = run
            .iter()
            .enumerate()
            .map(|(i, &(p, n, end))| running_rigid(100 + i as u64, p % np, n.min(sizes[(p % np) as usize]), 0, end))
            .collect();
        let configs: Vec<Config> = cfgs.iter().map(|&(p, n, w)| Config { pool: PoolId(p % np), nodes: n, walltime: w }).collect();
        let snap = Snapshot { now: 0, pools: &pools, running: &running, pending: &[] };
        let entries = vec![Entry { job: JobId(1), earliest: 0, wants_view: true, ask: Ask::Configs(configs.clone()) }];
        let mut from_view = None;
        let out = pass(&snap, &entries, |_, v| { from_view = Some(select::earliest_completion(v, &configs, 0)); None });
        let from_policy = match &out.planned[0] {
            Planned::Placed { start, config, .. } => config.map(|c| (c, *start)),
            _ => None,
        };
        prop_assert_eq!(from_view, Some(from_policy));
    }
}
