use sched_core::{
    validate, NamedPolicy, Params, Pending, Plan, Policy, Pool, PoolId, Running, Shape, Snapshot,
    Time,
};

use crate::Fcfs;
use sched_core::testkit::{pending_rigid as job, pools, running_rigid as running, start_of};

fn plan(p: &mut Fcfs, now: Time, pools: &[Pool], run: &[Running], pend: &[Pending]) -> Plan {
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

#[test]
fn never_starts_a_job_before_the_one_ahead() {
    let pools = pools(&[10]);
    let run = vec![running(1, 0, 6, 0, 100)];
    // Job 3 would fit in the hole now, but job 2 waits until 100: job 3 starts with it.
    let p = plan(
        &mut Fcfs::new(),
        0,
        &pools,
        &run,
        &[job(2, 8, 100), job(3, 2, 10), job(4, 4, 10)],
    );
    assert_eq!(
        [2, 3, 4].map(|j| start_of(&p, j)),
        [Some(100), Some(100), Some(200)]
    );
}

#[test]
fn early_end_moves_the_planned_starts_earlier_in_order() {
    let pools = pools(&[10]);
    let run = vec![running(1, 0, 10, 0, 100)];
    let pend = vec![
        job(2, 10, 50),
        job(3, 5, 50),
        job(4, 5, 200),
        job(5, 10, 10),
    ];
    let mut fcfs = Fcfs::new();
    let before = plan(&mut fcfs, 0, &pools, &run, &pend);
    assert_eq!(
        [2, 3, 4, 5].map(|j| start_of(&before, j)),
        [Some(100), Some(150), Some(150), Some(350)]
    );
    let after = plan(&mut fcfs, 40, &pools, &[], &pend);
    assert_eq!(
        [2, 3, 4, 5].map(|j| start_of(&after, j)),
        [Some(40), Some(90), Some(90), Some(290)]
    );
    let fresh = plan(&mut Fcfs::new(), 40, &pools, &[], &pend);
    assert_eq!(after.placements, fresh.placements);
    assert_eq!(fcfs.counters().rebuilds, 1);
}

#[test]
fn compression_stops_behind_the_freed_interval() {
    let pools = pools(&[10]);
    // Two running jobs; job 1 (4 nodes until 100) ends early at 10. The queue: job 2 needs all
    // 10 nodes, so it waits for job 7 (until 1000) either way; nothing behind it can move.
    let run = vec![running(1, 0, 4, 0, 100), running(7, 0, 6, 0, 1000)];
    let pend: Vec<Pending> = (2..50).map(|i| job(i, 10, 10)).collect();
    let mut fcfs = Fcfs::new();
    let before = plan(&mut fcfs, 0, &pools, &run, &pend);
    let after = plan(&mut fcfs, 10, &pools, &run[1..], &pend);
    assert_eq!(before.placements, after.placements);
    assert_eq!(fcfs.counters().compressions, 1);
    assert_eq!(
        fcfs.counters().refits,
        1,
        "only the first job is looked at again"
    );
}

#[test]
fn arrivals_queue_behind_the_last_planned_start() {
    let pools = pools(&[4]);
    let mut fcfs = Fcfs::new();
    let run = vec![running(1, 0, 4, 0, 100)];
    let p = plan(&mut fcfs, 0, &pools, &run, &[job(2, 4, 100)]);
    assert_eq!(start_of(&p, 2), Some(100));
    let mut late = job(3, 1, 1);
    late.submit = 5;
    late.earliest_start = 5;
    let p = plan(&mut fcfs, 5, &pools, &run, &[job(2, 4, 100), late]);
    assert_eq!(start_of(&p, 3), Some(200));
    assert_eq!(fcfs.counters().rebuilds, 1);
}

#[test]
fn rejected_jobs_do_not_hold_the_queue() {
    let pools = pools(&[8, 4]);
    let p = plan(
        &mut Fcfs::new(),
        0,
        &pools,
        &[],
        &[job(1, 9, 10), job(2, 6, 10), job(3, 4, 10)],
    );
    assert_eq!(p.rejects.len(), 1);
    assert_eq!(
        p.rejects[0].reason,
        "asks for 9 nodes, the largest pool has 8"
    );
    // Job 3 goes to pool 1 (pool 0 has only 2 free), at the same time as job 2.
    assert_eq!((start_of(&p, 2), start_of(&p, 3)), (Some(0), Some(0)));
    assert_eq!(p.placements[1].shape, Shape::rigid(PoolId(1), 4, 10));
}

#[test]
fn unknown_parameter_is_refused_by_name() {
    let err = Fcfs::from_params(&Params::from_pairs([("strict", "yes")])).unwrap_err();
    assert!(err.to_string().contains("`strict`"), "{err}");
    assert!(Fcfs::from_params(&Params::new()).is_ok());
    assert_eq!(Fcfs::NAME, "fcfs");
}

#[test]
fn moldable_jobs_start_with_the_same_configuration_with_or_without_the_book() {
    use sched_core::{JobId, Request};
    let moldable = |id: u64, configs: &[(u32, u64)]| Pending {
        request: Request::moldable(configs, 1.0),
        ..job(id, 1, 1)
    };
    // 10 nodes, 4 busy until 50. Job 1: 6 nodes for 40 now (ends 40) beats 10 nodes for 20 at
    // 50 (ends 70). Job 2, behind it: no room before 40; 2 × 100 at 40 ends 140, 10 × 5 at 50
    // ends 55: it waits for 50, and plan_starts says so as its wake-up.
    let pools = pools(&[10]);
    let run = [running(90, 0, 4, 0, 50)];
    let pend = [
        moldable(1, &[(10, 20), (6, 40)]),
        moldable(2, &[(2, 100), (10, 5)]),
    ];
    let full = plan(&mut Fcfs::new(), 0, &pools, &run, &pend);
    let snap = Snapshot {
        now: 0,
        pools: &pools,
        running: &run,
        pending: &pend,
    };
    let starts = Fcfs::new().plan_starts(&snap);
    validate(&snap, &starts).expect("valid plan");
    let shape_of = |p: &Plan, id: u64| {
        p.placements
            .iter()
            .find(|q| q.job == JobId(id))
            .map(|q| (q.start, q.shape.clone()))
    };
    let six = Some((
        0,
        Shape::Moldable {
            pool: PoolId(0),
            nodes: 6,
            walltime: 40,
        },
    ));
    assert_eq!(shape_of(&full, 1), six);
    assert_eq!(shape_of(&starts, 1), six);
    assert_eq!(start_of(&full, 2), Some(50));
    assert_eq!(starts.wake_at.into_option(), Some(50));
}
