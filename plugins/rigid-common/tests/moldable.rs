//! Moldable jobs under the rigid policies' common ground: the OAR rule (the configuration that
//! completes earliest given the plan so far, ties to fewer nodes), through the public surface.

use esched_rigid_common::{Book, Job};
use proptest::prelude::*;
use sched_core::testkit::{pending_rigid, pools, running_rigid};
use sched_core::{
    validate, JobId, Moldable, Pending, Plan, Pool, PoolId, RNone, RSome, Request, Running, Shape,
    Snapshot, SpeedupModel, Time,
};

fn moldable(id: u64, configs: &[(u32, u64)]) -> Pending {
    Pending {
        request: Request::moldable(configs, 1.0),
        ..pending_rigid(id, 1, 1)
    }
}

fn plan(book: &mut Book, now: Time, pools: &[Pool], run: &[Running], pend: &[Pending]) -> Plan {
    let snap = Snapshot {
        now,
        pools,
        running: run,
        pending: pend,
    };
    let plan = book.plan(&snap);
    if let Err(e) = validate(&snap, &plan) {
        panic!("invalid plan {plan:?}: {e}");
    }
    plan
}

fn placed(plan: &Plan, id: u64) -> (Time, u32, u64) {
    let p = plan
        .placements
        .iter()
        .find(|p| p.job == JobId(id))
        .unwrap_or_else(|| panic!("job {id} not placed in {plan:?}"));
    match p.shape {
        Shape::Moldable {
            nodes, walltime, ..
        }
        | Shape::Rigid {
            nodes, walltime, ..
        } => (p.start, nodes, walltime),
        ref other => panic!("unexpected shape {other:?}"),
    }
}

#[test]
fn the_configuration_that_completes_earliest_wins_not_the_first() {
    // 10 nodes, 6 busy until 100: 4 nodes now end at 200, 8 nodes at 100 end at 150.
    let pools = pools(&[10]);
    let run = [running_rigid(90, 0, 6, 0, 100)];
    for in_order in [false, true] {
        let mut book = Book::new(in_order);
        let p = plan(
            &mut book,
            0,
            &pools,
            &run,
            &[moldable(1, &[(4, 200), (8, 50)])],
        );
        assert_eq!(placed(&p, 1), (100, 8, 50), "in order: {in_order}");
        assert!(matches!(p.placements[0].shape, Shape::Moldable { .. }));
    }
}

#[test]
fn ties_go_to_fewer_nodes() {
    let pools = pools(&[10]);
    let p = plan(
        &mut Book::new(false),
        0,
        &pools,
        &[],
        &[moldable(1, &[(8, 100), (2, 100), (4, 100)])],
    );
    assert_eq!(placed(&p, 1), (0, 2, 100));
}

#[test]
fn the_choice_sees_the_reservations_ahead_and_is_kept_by_compressions() {
    // Job 1 (rigid, 8 nodes on [0, 100)) ahead; moldable job 2 may take 2 nodes for 300 (now,
    // beside job 1, ends 300) or 10 nodes for 50 (after job 1, ends 150): the latter.
    let pools = pools(&[10]);
    let mut book = Book::new(false);
    let pend = [pending_rigid(1, 8, 100), moldable(2, &[(2, 300), (10, 50)])];
    let p = plan(&mut book, 0, &pools, &[], &pend);
    assert_eq!(placed(&p, 2), (100, 10, 50));
    // Job 1 is cancelled: the compression moves job 2 earlier, in its chosen configuration.
    let p = plan(&mut book, 10, &pools, &[], &pend[1..]);
    assert_eq!(placed(&p, 2), (10, 10, 50));
    assert_eq!(book.counters().rebuilds, 1);
}

#[test]
fn configurations_no_pool_holds_are_dropped_and_none_left_is_refused() {
    let pools = pools(&[8, 4]);
    let options = Job::options(&moldable(1, &[(16, 10), (8, 20), (2, 80)]), &pools).unwrap();
    let kept: Vec<(u32, u64)> = options.iter().map(|j| (j.nodes, j.walltime)).collect();
    assert_eq!(kept, [(8, 20), (2, 80)]);
    assert!(options.iter().all(|j| j.moldable));
    // The rigid view is the first configuration that can run, not the first offered.
    let view = Job::of(&moldable(1, &[(16, 10), (8, 20)]), &pools).unwrap();
    assert_eq!((view.nodes, view.walltime), (8, 20));
    let err = Job::options(&moldable(1, &[(16, 10), (9, 20)]), &pools).unwrap_err();
    assert_eq!(
        err.reason,
        "none of its 2 moldable configurations can run: asks for 16 nodes, the largest pool has 8"
    );
    assert_eq!(err.kind, sched_core::RejectKind::TooLarge);
    let p = plan(
        &mut Book::new(false),
        0,
        &pools,
        &[],
        &[moldable(1, &[(16, 10)])],
    );
    assert_eq!(p.rejects.len(), 1);
}

#[test]
fn a_model_offers_every_node_count_of_its_range() {
    // Amdahl, 1000 ms on one node, 10 % serial, 1..=8 nodes, on an empty pool of 8: the most
    // nodes complete earliest (p(8) = 100 + 900/8 = 212.5 → 213 ms).
    let mut p = moldable(1, &[]);
    p.request = Request::Moldable(Moldable {
        pool: RNone,
        configs: sched_core::RVec::new(),
        model: RSome(SpeedupModel::Amdahl {
            work: 1000,
            serial: 0.1,
        }),
        min_nodes: 1,
        max_nodes: 32,
        weight: 1.0,
    });
    let pools = pools(&[8]);
    assert_eq!(Job::options(&p, &pools).unwrap().len(), 8);
    let plan = plan(&mut Book::new(false), 0, &pools, &[], &[p]);
    assert_eq!(placed(&plan, 1), (0, 8, 213));
}

/// The earliest fit of `nodes × walltime` from `from` on pool `pool` of `size` nodes among
/// `busy` intervals (pool, start, end, nodes), by brute force: a fit starts at `from` or at an
/// end of something.
fn brute_earliest(
    busy: &[(usize, Time, Time, u32)],
    pool: usize,
    size: u32,
    nodes: u32,
    walltime: u64,
    from: Time,
) -> Option<Time> {
    let used_at = |t: Time| -> u32 {
        busy.iter()
            .filter(|b| b.0 == pool && b.1 <= t && t < b.2)
            .map(|b| b.3)
            .sum()
    };
    let mut candidates: Vec<Time> = busy.iter().map(|b| b.2).filter(|&e| e > from).collect();
    candidates.push(from);
    candidates.sort_unstable();
    candidates.into_iter().find(|&t| {
        // Usage only rises at starts: check `t` and every start inside the window.
        let end = t + walltime;
        std::iter::once(t)
            .chain(busy.iter().map(|b| b.1).filter(|&s| s > t && s < end))
            .all(|x| used_at(x) + nodes <= size)
    })
}

fn job_strategy() -> impl Strategy<Value = Vec<(u32, u64)>> {
    prop::collection::vec((1u32..=12, 1u64..=60), 1..=4)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Planned from scratch, every plan is valid (no pool over-committed, every shape one the
    /// request offers), and each moldable job's configuration completes no later than any of
    /// its other configurations would have, fitted at the time of the choice: among the
    /// running jobs and the jobs ahead of it, from its lower bound (FCFS: the start of the job
    /// ahead).
    #[test]
    fn each_choice_completes_no_later_than_any_other(
        sizes in prop::collection::vec(2u32..=10, 1..=2),
        running in prop::collection::vec((0usize..2, 1u32..=6, 1u64..=80), 0..=3),
        queue in prop::collection::vec((any::<bool>(), job_strategy()), 1..=8),
        in_order in any::<bool>(),
    ) {
        let pools = pools(&sizes);
        // Running jobs that fit together (the generator may draw too many for a pool).
        let mut free = sizes.clone();
        let run: Vec<Running> = running
            .iter()
            .enumerate()
            .filter(|(_, &(p, n, _))| {
                let ok = p < free.len() && n <= free[p];
                if ok {
                    free[p] -= n;
                }
                ok
            })
            .map(|(i, &(p, n, end))| running_rigid(100 + i as u64, p as u32, n, 0, end))
            .collect();
        let pend: Vec<Pending> = queue
            .iter()
            .enumerate()
            .map(|(i, (is_moldable, configs))| {
                if *is_moldable {
                    moldable(i as u64, configs)
                } else {
                    pending_rigid(i as u64, configs[0].0, configs[0].1)
                }
            })
            .collect();
        let mut book = Book::new(in_order);
        let p = plan(&mut book, 0, &pools, &run, &pend);
        let mut busy: Vec<(usize, Time, Time, u32)> = run
            .iter()
            .map(|r| {
                let h = &r.holds[0];
                (h.pool.0 as usize, h.start, h.start + h.steps[0].duration, h.steps[0].nodes)
            })
            .collect();
        let mut prev: Time = 0;
        for (i, job) in pend.iter().enumerate() {
            let Some(pl) = p.placements.iter().find(|q| q.job == job.id) else {
                prop_assert!(p.rejects.iter().any(|r| r.job == job.id), "job {} lost", i);
                continue;
            };
            let (start, nodes, walltime) = placed(&p, i as u64);
            let pool = match pl.shape {
                Shape::Rigid { pool, .. } | Shape::Moldable { pool, .. } => pool,
                _ => PoolId(u32::MAX),
            };
            let from = if in_order { prev } else { 0 };
            if let Request::Moldable(m) = &job.request {
                let is_moldable = matches!(pl.shape, Shape::Moldable { .. });
                prop_assert!(is_moldable, "job {} placed as {:?}", i, pl.shape);
                for c in m.choices() {
                    // A node count offered twice allows its first walltime only.
                    if m.walltime_on(c.nodes) != Some(c.walltime) {
                        continue;
                    }
                    for (q, &size) in sizes.iter().enumerate() {
                        if c.nodes > size {
                            continue;
                        }
                        if let Some(t) = brute_earliest(&busy, q, size, c.nodes, c.walltime, from) {
                            prop_assert!(
                                start + walltime <= t + c.walltime,
                                "job {} chose {}×{} ending {}, but {}×{} on pool {} ends {}",
                                i, nodes, walltime, start + walltime, c.nodes, c.walltime, q,
                                t + c.walltime
                            );
                        }
                    }
                }
            }
            busy.push((pool.0 as usize, start, start + walltime, nodes));
            prev = start;
        }
    }
}
