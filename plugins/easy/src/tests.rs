use sched_core::{
    validate, JobId, NamedPolicy, Params, Pending, Plan, Policy, Pool, PoolId, Running, Shape,
    Snapshot, Time,
};

use crate::Easy;
use sched_core::testkit::{
    on_pool as on, pending_rigid as job, pools, running_rigid as running, start_of,
};

fn plan(now: Time, pools: &[Pool], run: &[Running], pend: &[Pending]) -> Plan {
    let snap = Snapshot {
        now,
        pools,
        running: run,
        pending: pend,
    };
    let plan = Easy::new().plan(&snap);
    validate(&snap, &plan).expect("valid plan");
    plan
}

#[test]
fn starts_in_order_while_jobs_fit() {
    let pools = pools(&[10]);
    let p = plan(
        0,
        &pools,
        &[],
        &[job(1, 4, 10), job(2, 6, 10), job(3, 1, 10)],
    );
    assert_eq!(
        [1, 2, 3].map(|j| start_of(&p, j)),
        [Some(0), Some(0), Some(10)]
    );
}

#[test]
fn backfills_a_short_job_into_the_hole_before_the_reservation() {
    let pools = pools(&[10]);
    let run = vec![running(1, 0, 6, 0, 100)];
    // Job 2 needs 8 nodes: reserved at 100. Job 3 (4 nodes) ends by 100: it starts now.
    let p = plan(0, &pools, &run, &[job(2, 8, 100), job(3, 4, 100)]);
    assert_eq!((start_of(&p, 2), start_of(&p, 3)), (Some(100), Some(0)));
}

#[test]
fn does_not_backfill_a_job_that_would_delay_the_reservation() {
    let pools = pools(&[10]);
    let run = vec![running(1, 0, 6, 0, 100)];
    // Job 3 (4 nodes, 101) would still hold 4 nodes at 100, when job 2 needs 8 of 10.
    let p = plan(0, &pools, &run, &[job(2, 8, 100), job(3, 4, 101)]);
    assert_eq!(start_of(&p, 2), Some(100));
    assert_eq!(
        start_of(&p, 3),
        None,
        "no start, and EASY gives only one reservation"
    );
    // A long job on nodes the reservation leaves spare (2 of 10) may run past it.
    let p = plan(0, &pools, &run, &[job(2, 8, 100), job(3, 2, 1000)]);
    assert_eq!(start_of(&p, 3), Some(0));
}

#[test]
fn only_the_first_waiting_job_gets_a_reservation() {
    let pools = pools(&[4]);
    let run = vec![running(1, 0, 4, 0, 100)];
    let p = plan(
        0,
        &pools,
        &run,
        &[job(2, 4, 10), job(3, 4, 10), job(4, 4, 10)],
    );
    assert_eq!(p.placements.len(), 1);
    assert_eq!(start_of(&p, 2), Some(100));
}

#[test]
fn head_goes_to_the_pool_where_it_starts_earliest() {
    let pools = pools(&[8, 8]);
    let run = vec![running(1, 0, 8, 0, 100), running(2, 1, 6, 0, 50)];
    let p = plan(
        0,
        &pools,
        &run,
        &[job(3, 4, 10), on(1, job(4, 2, 10)), job(5, 1, 10)],
    );
    let pool_of = |id| match &p
        .placements
        .iter()
        .find(|q| q.job == JobId(id))
        .unwrap()
        .shape
    {
        Shape::Rigid { pool, .. } => *pool,
        _ => unreachable!(),
    };
    assert_eq!((start_of(&p, 3), pool_of(3)), (Some(50), PoolId(1)));
    // Job 4 is bound to pool 1 and fits now; job 5 does not fit (pool 1 is full after job 4).
    assert_eq!(start_of(&p, 4), Some(0));
    assert_eq!(start_of(&p, 5), None);
}

#[test]
fn rejects_jobs_no_pool_can_hold() {
    let pools = pools(&[8]);
    let p = plan(
        0,
        &pools,
        &[],
        &[job(1, 9, 10), job(2, 0, 10), job(3, 8, 10)],
    );
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
    assert!(reason(2).is_some_and(|r| r.contains("0 nodes")));
    // Rejected jobs are not the first waiting job: job 3 starts.
    assert_eq!(start_of(&p, 3), Some(0));
}

#[test]
fn begin_time_is_respected_and_wakes_the_driver() {
    let pools = pools(&[8]);
    let mut later = job(1, 2, 10);
    later.earliest_start = 300;
    let p = plan(0, &pools, &[], &[later, job(2, 2, 10)]);
    assert_eq!((start_of(&p, 1), start_of(&p, 2)), (Some(300), Some(0)));
    assert_eq!(p.wake_at.into_option(), Some(300));
}

#[test]
fn unknown_parameter_is_refused_by_name() {
    let err = Easy::from_params(&Params::from_pairs([("depth", "2")])).unwrap_err();
    assert!(err.to_string().contains("`depth`"), "{err}");
    assert!(Easy::from_params(&Params::new()).is_ok());
    assert_eq!(Easy::NAME, "easy");
}

fn moldable(id: u64, configs: &[(u32, u64)]) -> Pending {
    use sched_core::Request;
    Pending {
        request: Request::moldable(configs, 1.0),
        ..job(id, 1, 1)
    }
}

#[test]
fn moldable_jobs_take_the_configuration_that_completes_earliest() {
    // 10 nodes, 6 busy until 100. Job 1: 4 nodes now end at 200, 10 nodes at 100 end at 150:
    // the reservation is 10 × 50 at 100. Job 2 may backfill 4 × 90 now (ends 90, before the
    // reservation) or wait for 10 × 10 after it (ends 160): it starts now on 4 nodes.
    let pools = pools(&[10]);
    let run = [running(90, 0, 6, 0, 100)];
    let p = plan(
        0,
        &pools,
        &run,
        &[
            moldable(1, &[(4, 200), (10, 50)]),
            moldable(2, &[(10, 10), (4, 90)]),
        ],
    );
    let shape = |id: u64| {
        let pl = p.placements.iter().find(|q| q.job == JobId(id)).unwrap();
        (pl.start, pl.shape.clone())
    };
    assert_eq!(
        shape(1),
        (
            100,
            Shape::Moldable {
                pool: PoolId(0),
                nodes: 10,
                walltime: 50
            }
        )
    );
    assert_eq!(
        shape(2),
        (
            0,
            Shape::Moldable {
                pool: PoolId(0),
                nodes: 4,
                walltime: 90
            }
        )
    );
}
