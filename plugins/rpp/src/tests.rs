use sched_core::request::{Component, Rigid};
use sched_core::{validate, Pending, Pool, RNone, Running};

use super::*;

fn pools(sizes: &[u32]) -> Vec<Pool> {
    sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| Pool {
            id: PoolId(i as u32),
            name: format!("c{i}").into(),
            nodes: n,
        })
        .collect()
}

fn global(id: u64, submit: Time, comps: &[u32], walltime: u64, deadline: Time) -> Pending {
    Pending {
        wants_view: false,
        claimed: Default::default(),
        id: JobId(id),
        user: 0,
        submit,
        earliest_start: submit,
        priority: 0,
        request: Request::CoAllocated(CoAllocated {
            components: comps
                .iter()
                .map(|&nodes| Component { nodes, pool: RNone })
                .collect(),
            walltime,
            deadline: RSome(deadline),
        }),
    }
}

fn local(id: u64, submit: Time, pool: u32, nodes: u32, walltime: u64) -> Pending {
    Pending {
        wants_view: false,
        claimed: Default::default(),
        id: JobId(id),
        user: 0,
        submit,
        earliest_start: submit,
        priority: 0,
        request: Request::Rigid(Rigid {
            pool: RSome(PoolId(pool)),
            nodes,
            walltime,
        }),
    }
}

fn running(id: u64, start: Time, pool: u32, nodes: u32, walltime: u64) -> Running {
    Running {
        id: JobId(id),
        user: 0,
        request: Request::Rigid(Rigid {
            pool: RSome(PoolId(pool)),
            nodes,
            walltime,
        }),
        shape: Shape::rigid(PoolId(pool), nodes, walltime),
        start,
        holds: sched_core::rvec![PoolSteps::flat(
            PoolId(pool),
            start,
            start + walltime,
            nodes,
        )],
        killable: true,
    }
}

/// One call, checked by the validator as a driver would.
fn call(p: &mut Rpp, now: Time, pools: &[Pool], run: &[Running], pend: &[Pending]) -> Plan {
    let snap = Snapshot {
        now,
        pools,
        running: run,
        pending: pend,
    };
    let plan = p.plan(&snap);
    assert_eq!(validate(&snap, &plan), Ok(()), "{plan:?}");
    plan
}

fn config(lp: f64, wait: Option<u64>, priority: Priority, max_tries: Option<u32>) -> Config {
    Config {
        lp,
        wait,
        priority,
        max_tries,
        victims: Victims::Fewest,
    }
}

#[test]
fn try_times_follow_the_papers_recurrence_and_end_at_the_deadline() {
    let c = config(0.5, None, Priority::Gp, None);
    let t = try_times(&c, 0, 1000);
    assert_eq!(&t[..4], &[500, 750, 875, 938]);
    assert_eq!(t.last(), Some(&1000));
    assert!(t.windows(2).all(|w| w[0] < w[1]), "{t:?}");
    // M_p = 2: two PT tries, then the final one at D.
    let c2 = config(0.5, None, Priority::Gp, Some(2));
    assert_eq!(try_times(&c2, 0, 1000), vec![500, 750, 1000]);
    // L_p = 1: the first try is at the deadline.
    assert_eq!(
        try_times(&config(1.0, None, Priority::Gp, None), 0, 1000),
        vec![1000]
    );
    // Wait-100 ms: ignored until D − I = 900, so PT_0 = 950.
    let w = config(0.5, Some(100), Priority::Gp, None);
    assert_eq!(try_times(&w, 0, 1000)[0], 950);
    // Wait-0: a single try at D.
    assert_eq!(
        try_times(&config(0.7, Some(0), Priority::Gp, None), 0, 1000),
        vec![1000]
    );
}

#[test]
fn a_successful_try_claims_nodes_until_the_job_starts_at_its_deadline() {
    let pools = pools(&[10]);
    let mut p = Rpp::new(config(0.5, None, Priority::Gp, None));
    let pend = vec![global(1, 0, &[4, 4], 300, 1000)];
    let plan = call(&mut p, 0, &pools, &[], &pend);
    assert!(plan.placements.is_empty());
    assert_eq!(plan.wake_at.into_option(), Some(500));
    let plan = call(&mut p, 500, &pools, &[], &pend);
    assert_eq!(plan.placements.len(), 1);
    let pl = &plan.placements[0];
    assert_eq!((pl.start, pl.claim_from.into_option()), (1000, Some(500)));
    assert_eq!(plan.wake_at.into_option(), Some(1000));
    // A local job of 4 nodes does not fit beside the 8 claimed nodes, one of 2 does.
    let mut pend2 = pend.clone();
    pend2.push(local(2, 600, 0, 4, 50));
    pend2.push(local(3, 600, 0, 2, 50));
    let plan = call(&mut p, 600, &pools, &[], &pend2);
    let started: Vec<_> = plan
        .placements
        .iter()
        .filter(|pl| pl.start == 600)
        .collect();
    assert!(
        started.is_empty(),
        "FCFS: job 3 must wait behind job 2: {plan:?}"
    );
    let plan = call(&mut p, 1000, &pools, &[], &pend);
    assert_eq!(plan.placements[0].start, 1000);
    assert_eq!(plan.placements[0].claim_from.into_option(), None);
}

#[test]
fn a_failed_try_wakes_at_the_next_try_time() {
    let pools = pools(&[8]);
    let run = vec![running(9, 0, 0, 8, 10_000)];
    let mut p = Rpp::new(config(0.5, None, Priority::Lp, None));
    let pend = vec![global(1, 0, &[4], 100, 1000)];
    assert_eq!(
        call(&mut p, 0, &pools, &run, &pend).wake_at.into_option(),
        Some(500)
    );
    assert_eq!(
        call(&mut p, 500, &pools, &run, &pend).wake_at.into_option(),
        Some(750)
    );
    // A call between tries (another job's event) tries nothing and keeps the schedule.
    assert_eq!(
        call(&mut p, 600, &pools, &run, &pend).wake_at.into_option(),
        Some(750)
    );
}

#[test]
fn gp_kills_the_youngest_local_jobs_at_the_deadline() {
    let pools = pools(&[8]);
    let run = vec![
        running(10, 0, 0, 3, 10_000),
        running(11, 50, 0, 3, 10_000),
        running(12, 20, 0, 2, 10_000),
    ];
    let mut p = Rpp::new(Config {
        victims: Victims::Youngest,
        ..config(1.0, None, Priority::Gp, None)
    });
    let pend = vec![global(1, 0, &[4], 100, 100)];
    let plan = call(&mut p, 100, &pools, &run, &pend);
    let killed: Vec<u64> = plan.kills.iter().map(|k| k.job.0).collect();
    assert_eq!(killed, vec![11, 12]);
    assert!(plan
        .kills
        .iter()
        .all(|k| k.for_job == sched_core::RSome(JobId(1))
            && k.for_job == sched_core::RSome(JobId(1))));
    assert_eq!(plan.placements[0].start, 100);
}

#[test]
fn gp_kills_no_more_local_jobs_than_needed() {
    // Two pools of 8. Pool 0: three young 2-node local jobs, 2 idle nodes; pool 1: an old
    // 6-node job and a 1-node job, 1 idle. Both have 8 idle plus killable nodes, and Worst
    // Fit's tie goes to pool 0. A global job of one 7-node component at its deadline: the
    // youngest-first rule takes pool 0 and kills its three jobs; one kill in pool 1 suffices.
    let pools = pools(&[8, 8]);
    let run = vec![
        running(10, 50, 0, 2, 10_000),
        running(11, 60, 0, 2, 10_000),
        running(12, 70, 0, 2, 10_000),
        running(20, 0, 1, 6, 10_000),
        running(21, 0, 1, 1, 10_000),
    ];
    let pend = vec![global(1, 0, &[7], 100, 100)];
    let kills = |victims: Victims| {
        let mut p = Rpp::new(Config {
            victims,
            ..config(1.0, None, Priority::Gp, None)
        });
        let plan = call(&mut p, 100, &pools, &run, &pend);
        assert_eq!(plan.placements.len(), 1, "{plan:?}");
        assert_eq!(plan.placements[0].start, 100);
        let mut k: Vec<u64> = plan.kills.iter().map(|k| k.job.0).collect();
        k.sort_unstable();
        (plan.placements[0].shape.clone(), k)
    };
    let (shape, killed) = kills(Victims::Youngest);
    assert_eq!(killed, vec![10, 11, 12]);
    assert_eq!(
        shape,
        Shape::CoAllocated {
            pools: sched_core::rvec![PoolId(0)]
        }
    );
    let (shape, killed) = kills(Victims::Fewest);
    assert_eq!(killed, vec![20]);
    assert_eq!(
        shape,
        Shape::CoAllocated {
            pools: sched_core::rvec![PoolId(1)]
        }
    );
}

#[test]
fn gp_kills_the_job_that_loses_least_work_among_equally_few() {
    // One pool of 8, full: 4-node jobs started at 0 and 90, at D = 100 a 4-node component.
    // One kill either way; the younger has run 10 ms (40 node-ms lost) against 400.
    let pools = pools(&[8]);
    let run = vec![running(10, 0, 0, 4, 10_000), running(11, 90, 0, 4, 10_000)];
    let mut p = Rpp::new(config(1.0, None, Priority::Gp, None));
    let plan = call(&mut p, 100, &pools, &run, &[global(1, 0, &[4], 100, 100)]);
    let killed: Vec<u64> = plan.kills.iter().map(|k| k.job.0).collect();
    assert_eq!(killed, vec![11]);
}

#[test]
fn lp_fails_the_job_instead_of_killing() {
    let pools = pools(&[8]);
    let run = vec![running(10, 0, 0, 6, 10_000)];
    let mut p = Rpp::new(config(1.0, None, Priority::Lp, None));
    let pend = vec![global(1, 0, &[4], 100, 100)];
    let plan = call(&mut p, 100, &pools, &run, &pend);
    assert!(plan.kills.is_empty());
    assert_eq!(plan.rejects.len(), 1);
    assert!(plan.rejects[0].reason.starts_with("Deadline"));
}

#[test]
fn worst_fit_prefers_the_idlest_pool_and_may_share_one() {
    assert_eq!(
        worst_fit(&[10, 6], &[(4, None), (4, None)]),
        Some(vec![0, 0])
    );
    assert_eq!(
        worst_fit(&[6, 10], &[(4, None), (4, None)]),
        Some(vec![1, 0])
    );
    assert_eq!(worst_fit(&[5, 5], &[(4, None), (4, None), (4, None)]), None);
    assert_eq!(
        worst_fit(&[5, 9], &[(4, Some(0)), (4, None)]),
        Some(vec![0, 1])
    );
}

#[test]
fn params_parse_and_refuse_nonsense() {
    let p = Rpp::from_params(&Params::from_pairs([
        ("lp", "0.5"),
        ("wait", "10"),
        ("priority", "lp"),
        ("max_tries", "3"),
    ]))
    .unwrap();
    assert_eq!(
        p.config(),
        &config(0.5, Some(10_000), Priority::Lp, Some(3))
    );
    let p = Rpp::from_params(&Params::from_pairs([("wait", "inf")])).unwrap();
    assert_eq!(p.config().wait, None);
    assert_eq!(p.config().victims, Victims::Fewest);
    let p = Rpp::from_params(&Params::from_pairs([("victims", "youngest")])).unwrap();
    assert_eq!(p.config().victims, Victims::Youngest);
    for (k, v) in [
        ("lp", "0"),
        ("lp", "1.5"),
        ("wait", "-1"),
        ("priority", "XP"),
        ("victims", "oldest"),
    ] {
        assert!(
            Rpp::from_params(&Params::from_pairs([(k, v)])).is_err(),
            "{k}={v}"
        );
    }
    assert!(Rpp::from_params(&Params::from_pairs([("lq", "0.5")])).is_err());
}

#[test]
fn a_call_after_the_deadline_fails_the_job_as_a_deadline_failure() {
    // batchd tells a slightly late call the instant it asked for; a call long after the
    // deadline (a daemon that was down) fails claimed and unplaced jobs alike, with the
    // `Deadline` reason the driver turns into FAILED.
    let pools = pools(&[10]);
    let mut p = Rpp::new(config(0.5, None, Priority::Gp, None));
    let pend = vec![
        global(1, 0, &[4], 300, 1000),
        global(2, 0, &[20], 300, 1000),
    ];
    let plan = call(&mut p, 500, &pools, &[], &pend);
    assert_eq!(plan.placements.len(), 1);
    // Job 2 can never fit: refused at once, not a deadline failure.
    assert!(!plan.rejects[0].reason.starts_with("Deadline"));
    let plan = call(&mut p, 1001, &pools, &[], &pend[..1]);
    assert!(plan.placements.is_empty());
    assert!(plan.rejects[0].reason.starts_with("Deadline"), "{plan:?}");
    // Seen for the first time after its deadline: the same.
    let mut p = Rpp::new(Config::default());
    let plan = call(&mut p, 2000, &pools, &[], &pend[..1]);
    assert!(plan.rejects[0].reason.starts_with("Deadline"), "{plan:?}");
}

#[test]
fn a_rebuilt_policy_keeps_the_claims_the_driver_holds() {
    let ps = pools(&[4, 4]);
    // Claimed by an earlier instance: 3 nodes of c1 and 2 of c0, held by the driver.
    let mut g = global(1, 0, &[3, 2], 100, 1_000);
    g.claimed = sched_core::rvec![PoolId(1), PoolId(0)];
    let waiting = local(2, 0, 1, 2, 50);
    let mut fresh = Rpp::new(config(0.7, None, Priority::Gp, None));
    let plan = call(&mut fresh, 400, &ps, &[], &[g.clone(), waiting.clone()]);
    let placed = plan.placements.iter().find(|p| p.job == JobId(1)).unwrap();
    assert_eq!(placed.start, 1_000, "a claimed job starts at its deadline");
    assert_eq!(
        placed.shape,
        Shape::CoAllocated {
            pools: sched_core::rvec![PoolId(1), PoolId(0)]
        }
    );
    assert_eq!(placed.claim_from, RSome(400));
    // The claimed nodes are not idle: c1 has one left, too few for the local job of 2.
    assert!(
        plan.placements
            .iter()
            .all(|p| p.job != JobId(2) || p.start >= 1_000),
        "{plan:?}"
    );
    // At D it starts on its claimed pools.
    let plan = call(&mut fresh, 1_000, &ps, &[], &[g, waiting]);
    let started = plan.placements.iter().find(|p| p.job == JobId(1)).unwrap();
    assert_eq!(started.start, 1_000);
    assert_eq!(
        started.shape,
        Shape::CoAllocated {
            pools: sched_core::rvec![PoolId(1), PoolId(0)]
        }
    );
}
