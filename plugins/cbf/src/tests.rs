use sched_core::{
    validate, JobId, NamedPolicy, Params, Pending, Placement, Plan, Policy, Pool, PoolId, RNone,
    RSome, Request, Rigid, Running, Shape, Snapshot, Time,
};

use crate::Cbf;
use sched_core::testkit::{
    on_pool as on, pending_rigid as job, pool_of, pools, running_rigid as running, start_of,
};

fn plan(p: &mut Cbf, now: Time, pools: &[Pool], run: &[Running], pend: &[Pending]) -> Plan {
    let snap = Snapshot {
        now,
        pools,
        running: run,
        pending: pend,
    };
    let plan = p.plan(&snap);
    validate(&snap, &plan).expect("valid plan");
    plan
}

/// The state every scenario starts from: 10 nodes, job 1 holds 6 until 100.
fn hole() -> (Vec<Pool>, Vec<Running>) {
    (pools(&[10]), vec![running(1, 0, 6, 0, 100)])
}

#[test]
fn small_job_backfills_into_the_hole() {
    let (pools, run) = hole();
    // Job 2 needs 8 nodes: at 100. Job 3 (4 nodes, 50) fits in the hole now, before 100.
    // Job 4 (4 nodes, 150) would overlap job 2's reservation: it waits until job 2 ends.
    let pend = vec![job(2, 8, 100), job(3, 4, 50), job(4, 4, 150)];
    let p = plan(&mut Cbf::new(), 0, &pools, &run, &pend);
    assert_eq!(start_of(&p, 2), Some(100));
    assert_eq!(start_of(&p, 3), Some(0));
    assert_eq!(start_of(&p, 4), Some(200));
}

#[test]
fn later_job_never_delays_an_earlier_reservation() {
    let (pools, run) = hole();
    let mut cbf = Cbf::new();
    let pend = vec![job(2, 8, 100)];
    assert_eq!(
        start_of(&plan(&mut cbf, 0, &pools, &run, &pend), 2),
        Some(100)
    );
    // A long 4-node job arriving later would fit now, but would hold nodes job 2 needs at 100.
    let pend = vec![job(2, 8, 100), job(3, 4, 1000)];
    let p = plan(&mut cbf, 10, &pools, &run, &pend);
    assert_eq!(start_of(&p, 2), Some(100));
    assert_eq!(start_of(&p, 3), Some(200));
}

#[test]
fn early_end_compresses_without_moving_any_job_later() {
    let pools = pools(&[10]);
    let run = vec![running(1, 0, 10, 0, 100)];
    let pend = vec![
        job(2, 10, 50),
        job(3, 5, 50),
        job(4, 5, 200),
        job(5, 10, 10),
    ];
    let mut cbf = Cbf::new();
    let before = plan(&mut cbf, 0, &pools, &run, &pend);
    assert_eq!(
        [2, 3, 4, 5].map(|j| start_of(&before, j)),
        [Some(100), Some(150), Some(150), Some(350)]
    );
    // Job 1 ends at 40 instead of 100: everything moves 60 earlier, nothing later.
    let after = plan(&mut cbf, 40, &pools, &[], &pend);
    for j in [2, 3, 4, 5] {
        assert!(
            start_of(&after, j) <= start_of(&before, j),
            "job {j} moved later"
        );
    }
    assert_eq!(start_of(&after, 2), Some(40));
    assert_eq!(start_of(&after, 5), Some(290));
    assert_eq!(cbf.counters().compressions, 1);
    assert_eq!(
        cbf.counters().rebuilds,
        1,
        "only the first call builds from scratch"
    );
    // Here the compressed schedule is also what a fresh policy plans from scratch.
    let fresh = plan(&mut Cbf::new(), 40, &pools, &[], &pend);
    assert_eq!(after.placements, fresh.placements);
}

#[test]
fn cancellation_compresses_the_jobs_behind() {
    let pools = pools(&[4]);
    let pend = vec![job(1, 4, 100), job(2, 4, 100), job(3, 4, 100)];
    let mut cbf = Cbf::new();
    let p = plan(&mut cbf, 0, &pools, &[], &pend);
    assert_eq!(
        [1, 2, 3].map(|j| start_of(&p, j)),
        [Some(0), Some(100), Some(200)]
    );
    // Job 1 started; job 2 is cancelled: job 3 moves to 100.
    let run = vec![running(1, 0, 4, 0, 100)];
    let p = plan(&mut cbf, 5, &pools, &run, &[job(3, 4, 100)]);
    assert_eq!(start_of(&p, 3), Some(100));
    assert_eq!(cbf.counters().rebuilds, 1);
}

#[test]
fn started_reservations_become_running_without_a_rebuild() {
    let pools = pools(&[4]);
    let mut cbf = Cbf::new();
    let pend = vec![job(1, 2, 100), job(2, 2, 100), job(3, 4, 10)];
    let p = plan(&mut cbf, 0, &pools, &[], &pend);
    assert_eq!(
        [1, 2, 3].map(|j| start_of(&p, j)),
        [Some(0), Some(0), Some(100)]
    );
    let run = vec![running(1, 0, 2, 0, 100), running(2, 0, 2, 0, 100)];
    let p = plan(&mut cbf, 0, &pools, &run, &pend[2..]);
    assert_eq!(start_of(&p, 3), Some(100));
    // Both run to their limit: a compression (as at every end), but job 3 is already at
    // `now`, so nothing is refitted; no rebuild.
    let p = plan(&mut cbf, 100, &pools, &[], &pend[2..]);
    assert_eq!(start_of(&p, 3), Some(100));
    assert_eq!(
        cbf.counters(),
        crate::Counters {
            calls: 3,
            rebuilds: 1,
            compressions: 1,
            refits: 0,
            checks: 0,
            told: 0,
        }
    );
}

#[test]
fn an_arrival_ahead_of_the_queue_rebuilds_in_the_new_order() {
    let pools = pools(&[4]);
    let mut cbf = Cbf::new();
    let run = vec![running(9, 0, 4, 0, 100)];
    let p = plan(&mut cbf, 0, &pools, &run, &[job(1, 4, 100)]);
    assert_eq!(start_of(&p, 1), Some(100));
    // Job 2 has a higher priority: the driver queues it first; job 1 moves later.
    let p = plan(&mut cbf, 10, &pools, &run, &[job(2, 4, 50), job(1, 4, 100)]);
    assert_eq!((start_of(&p, 2), start_of(&p, 1)), (Some(100), Some(150)));
    assert_eq!(cbf.counters().rebuilds, 2);
}

#[test]
fn unknown_running_jobs_are_counted_after_a_policy_swap() {
    let pools = pools(&[4]);
    let mut cbf = Cbf::new();
    let p = plan(&mut cbf, 0, &pools, &[], &[job(1, 4, 100)]);
    assert_eq!(start_of(&p, 1), Some(0));
    // Another policy started job 7 instead; ours must not over-commit.
    let run = vec![running(7, 0, 3, 0, 60)];
    let p = plan(&mut cbf, 0, &pools, &run, &[job(1, 4, 100)]);
    assert_eq!(start_of(&p, 1), Some(60));
}

#[test]
fn begin_time_is_respected_and_wakes_the_driver() {
    let pools = pools(&[4]);
    let mut j = job(1, 1, 10);
    j.earliest_start = 500;
    let p = plan(&mut Cbf::new(), 0, &pools, &[], &[j]);
    assert_eq!(start_of(&p, 1), Some(500));
    assert_eq!(
        p.wake_at.into_option(),
        Some(500),
        "no event would start a job waiting for its begin time"
    );
}

#[test]
fn never_places_before_now() {
    let pools = pools(&[4]);
    let p = plan(&mut Cbf::new(), 1_000, &pools, &[], &[job(1, 4, 100)]);
    assert_eq!(start_of(&p, 1), Some(1_000));
}

#[test]
fn unbound_jobs_go_where_they_start_earliest_ties_to_the_lowest_id() {
    let pools = pools(&[8, 8, 16]);
    let run = vec![running(1, 0, 8, 0, 100), running(2, 1, 4, 0, 50)];
    let pend = vec![
        job(3, 8, 10),
        job(4, 4, 10),
        job(5, 12, 10),
        on(0, job(6, 2, 10)),
    ];
    let p = plan(&mut Cbf::new(), 0, &pools, &run, &pend);
    // Job 3: pool 2 is free now. Job 4: pool 1 has 4 free now (pool 2 has 8 too: lowest id).
    assert_eq!(
        (pool_of(&p, 3), start_of(&p, 3)),
        (Some(PoolId(2)), Some(0))
    );
    assert_eq!(
        (pool_of(&p, 4), start_of(&p, 4)),
        (Some(PoolId(1)), Some(0))
    );
    // Job 5 fits only pool 2, after job 3. Job 6 is bound to pool 0, full until 100.
    assert_eq!(
        (pool_of(&p, 5), start_of(&p, 5)),
        (Some(PoolId(2)), Some(10))
    );
    assert_eq!(
        (pool_of(&p, 6), start_of(&p, 6)),
        (Some(PoolId(0)), Some(100))
    );
}

#[test]
fn impossible_jobs_are_rejected_with_a_reason() {
    let pools = pools(&[8, 4]);
    let pend = vec![
        job(1, 9, 10),
        on(1, job(2, 5, 10)),
        job(3, 0, 10),
        on(7, job(4, 1, 10)),
        job(5, 8, 10),
    ];
    let p = plan(&mut Cbf::new(), 0, &pools, &[], &pend);
    let reason = |id| {
        p.rejects
            .iter()
            .find(|r| r.job == JobId(id))
            .map(|r| r.reason.clone())
    };
    assert_eq!(
        reason(1).as_deref(),
        Some("asks for 9 nodes, the largest pool has 8")
    );
    assert_eq!(
        reason(2).as_deref(),
        Some("asks for 5 nodes in pool `p1`, which has 4")
    );
    assert!(reason(3).is_some_and(|r| r.contains("0 nodes")));
    assert!(reason(4).is_some_and(|r| r.contains("does not exist")));
    assert_eq!(start_of(&p, 5), Some(0));
    assert_eq!(p.placements.len(), 1);
}

#[test]
fn evolving_jobs_are_planned_as_their_rigid_baseline() {
    use sched_core::Step;
    let pools = pools(&[10]);
    let pend = vec![
        Pending {
            wants_view: false,
            claimed: Default::default(),
            request: Request::evolving(vec![Step::new(50, 2), Step::new(100, 8)]),
            ..job(1, 0, 0)
        },
        job(2, 3, 10),
    ];
    let p = plan(&mut Cbf::new(), 0, &pools, &[], &pend);
    assert_eq!(p.placements[0].shape, Shape::rigid(PoolId(0), 8, 150));
    // 8 nodes are held from 0 for the whole 150: job 2 (3 nodes) waits.
    assert_eq!(start_of(&p, 2), Some(150));
}

#[test]
fn co_allocated_job_past_its_deadline_is_rejected() {
    use sched_core::{CoAllocated, Component};
    let pools = pools(&[4]);
    let run = vec![running(9, 0, 4, 0, 100)];
    let co = |deadline| {
        Request::CoAllocated(CoAllocated {
            components: sched_core::rvec![
                Component {
                    nodes: 2,
                    pool: RNone,
                },
                Component {
                    nodes: 2,
                    pool: RNone,
                },
            ],
            walltime: 10,
            deadline: RSome(deadline),
        })
    };
    let pend = vec![
        Pending {
            wants_view: false,
            claimed: Default::default(),
            request: co(50),
            ..job(1, 0, 0)
        },
        Pending {
            wants_view: false,
            claimed: Default::default(),
            request: co(100),
            ..job(2, 0, 0)
        },
    ];
    let p = plan(&mut Cbf::new(), 0, &pools, &run, &pend);
    assert!(p
        .rejects
        .iter()
        .any(|r| r.job == JobId(1) && r.reason.contains("deadline")));
    assert_eq!(start_of(&p, 2), Some(100));
}

#[test]
fn unknown_parameter_is_refused_by_name() {
    let err = Cbf::from_params(&Params::from_pairs([("reservation_depth", "4")])).unwrap_err();
    assert!(err.to_string().contains("`reservation_depth`"), "{err}");
    assert!(Cbf::from_params(&Params::new()).is_ok());
    assert_eq!(Cbf::NAME, "cbf");
}

#[test]
fn placements_are_rigid_shapes_of_the_request() {
    let pools = pools(&[4]);
    let pend = vec![Pending {
        wants_view: false,
        claimed: Default::default(),
        request: Request::Rigid(Rigid {
            pool: RNone,
            nodes: 3,
            walltime: 7,
        }),
        ..job(1, 0, 0)
    }];
    let p = plan(&mut Cbf::new(), 0, &pools, &[], &pend);
    assert_eq!(
        p.placements,
        vec![Placement {
            job: JobId(1),
            start: 0,
            shape: Shape::rigid(PoolId(0), 3, 7),
            claim_from: sched_core::RNone
        }]
    );
}

#[test]
fn compression_refits_one_job_at_a_time_like_the_reference() {
    // pyss's `_reschedule_jobs`: each job is refitted while the jobs behind it keep their
    // reservations. Job 4 (2 nodes) waits for job 2 (until 200); job 5 backfilled at 100. Job 2
    // ends early at 10: job 4 could run at 100, but job 5's reservation holds [100, 140) while
    // job 4 is refitted, so job 4 goes to 140; job 5 then moves to 10. A fresh plan would give
    // job 4 the start at 100.
    let pools = pools(&[2]);
    let run = vec![running(1, 0, 1, 0, 100), running(2, 0, 1, 0, 200)];
    let pend = vec![job(4, 2, 50), job(5, 1, 40)];
    let mut cbf = Cbf::new();
    let p = plan(&mut cbf, 0, &pools, &run, &pend);
    assert_eq!((start_of(&p, 4), start_of(&p, 5)), (Some(200), Some(100)));
    let p = plan(&mut cbf, 10, &pools, &run[..1], &pend);
    assert_eq!((start_of(&p, 4), start_of(&p, 5)), (Some(140), Some(10)));
    let fresh = plan(&mut Cbf::new(), 10, &pools, &run[..1], &pend);
    assert_eq!(
        (start_of(&fresh, 4), start_of(&fresh, 5)),
        (Some(100), Some(10))
    );
}

/// A seeded generator of numbers below `m` (Knuth's MMIX LCG, high bits): repeatable random
/// queues without a dependency.
fn lcg(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut x = seed;
    move |m| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % m
    }
}

/// The 600 jobs of `pend` planned in one call (fit hints in use) and 100 at a time at the
/// same instant (fitted without them) get the same plan.
fn hints_change_nothing(pools: &[Pool], run: &[Running], pend: &[Pending]) {
    assert_eq!(pend.len(), 600);
    let at_once = plan(&mut Cbf::new(), 0, pools, run, pend);
    let mut cbf = Cbf::new();
    let mut in_steps = Plan::default();
    for k in (100..=600).step_by(100) {
        in_steps = plan(&mut cbf, 0, pools, run, &pend[..k]);
    }
    assert_eq!(cbf.counters().rebuilds, 1);
    assert_eq!(at_once.placements, in_steps.placements);
    assert_eq!(at_once.rejects, in_steps.rejects);
}

#[test]
fn fit_hints_of_a_long_plan_from_scratch_change_nothing() {
    // 600 jobs in one call use the dominance hints; the same jobs arriving 100 at a time (at
    // the same instant, so nothing else changes) are fitted without them.
    let pools = pools(&[64, 32]);
    let mut rnd = lcg(7);
    let pend: Vec<Pending> = (0..600)
        .map(|i| {
            let j = job(i, ((1 + rnd(64) as u32) >> rnd(6)).max(1), 1 + rnd(5_000));
            if rnd(4) == 0 {
                on(1, job(i, 1 + rnd(32) as u32, 1 + rnd(5_000)))
            } else {
                j
            }
        })
        .collect();
    let run = vec![running(1000, 0, 10, 0, 700)];
    hints_change_nothing(&pools, &run, &pend);
}

#[test]
fn fit_hints_of_repeated_requests_change_nothing() {
    // Few distinct requests, so that most jobs are bounded by the fit of an equal one before
    // them; planned at once (hints) and 100 at a time (none), the plans must be the same.
    let pools = pools(&[64, 32]);
    let mut rnd = lcg(11);
    let pend: Vec<Pending> = (0..600)
        .map(|i| {
            let j = job(i, 1 << rnd(6), 500 * (1 + rnd(4)));
            if rnd(4) == 0 {
                on(1, j)
            } else {
                j
            }
        })
        .collect();
    let run = vec![running(1000, 0, 10, 0, 700), running(1001, 0, 5, 0, 300)];
    hints_change_nothing(&pools, &run, &pend);
}

/// A driver's account of the changes (`Policy::expect_changes`) stands in for comparing only
/// when the driver did what the last answer said. Here it did not start the job planned to
/// start now, or it let a reservation pass without a call; either way CBF answers as untold
/// (a rebuild, the jobs at the present), never with a start in the past.
#[test]
fn an_account_after_a_plan_not_carried_out_is_not_trusted() {
    use sched_core::{Changes, ListChanges};
    let pools = pools(&[8]);
    let told_of = |left: Vec<usize>| Changes {
        running: Some(ListChanges { left, arrived: 0 }),
        pending: Some(ListChanges::default()),
    };
    // (running before, queue, expected starts at the first call, the later call's instant,
    // the running jobs then and their account)
    let not_started = (
        vec![running(1, 0, 4, 0, 100)],
        vec![job(2, 4, 50), job(3, 8, 10)],
        [(2, Some(0)), (3, Some(100))],
        5,
        vec![running(1, 0, 4, 0, 100)],
        told_of(vec![]),
    );
    let passed_unseen = (
        vec![running(1, 0, 8, 0, 100)],
        vec![job(3, 8, 10)],
        [(3, Some(100)), (2, None)],
        150,
        Vec::new(),
        told_of(vec![0]),
    );
    for (run, pend, first_starts, later, run_later, changes) in [not_started, passed_unseen] {
        let (mut told, mut untold) = (Cbf::new(), Cbf::new());
        let first = plan(&mut told, 0, &pools, &run, &pend);
        plan(&mut untold, 0, &pools, &run, &pend);
        for (id, start) in first_starts {
            assert_eq!(start_of(&first, id), start);
        }
        told.expect_changes(&changes);
        let a = plan(&mut told, later, &pools, &run_later, &pend);
        let b = plan(&mut untold, later, &pools, &run_later, &pend);
        assert_eq!(a, b, "at {later}");
        assert!(a.placements.iter().all(|p| p.start >= later), "{a:?}");
    }
}
