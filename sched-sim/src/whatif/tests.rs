use sched_abi::{Linked, PolicyHost};
use sched_core::{Params, Pending, PoolId, Request, Shape};

use super::*;

const NOW: Time = 1_000_000;

fn pool(nodes: u32) -> PoolEntry {
    PoolEntry {
        pool: sched_core::Pool {
            id: PoolId(0),
            name: "p".into(),
            nodes,
        },
        node_states: Vec::new(),
    }
}

fn running(id: u64, nodes: u32, start: Time, end: Time) -> RunningEntry {
    RunningEntry {
        job: Running {
            id: JobId(id),
            user: 1,
            request: Request::rigid(nodes, end - start),
            shape: Shape::rigid(PoolId(0), nodes, end - start),
            start,
            // As batchd writes them: from the job's start.
            holds: vec![PoolSteps::flat(PoolId(0), start, end, nodes)].into(),
            killable: false,
        },
        holder: Holder::Job,
        name: format!("r{id}"),
        user_name: "ann".into(),
    }
}

fn pending(id: u64, nodes: u32, walltime: u64) -> PendingEntry {
    PendingEntry {
        job: Pending {
            id: JobId(id),
            user: 1,
            submit: NOW - 1_000,
            earliest_start: NOW - 1_000,
            priority: 0,
            request: Request::rigid(nodes, walltime),
            wants_view: false,
            claimed: Default::default(),
        },
        name: format!("j{id}"),
        user_name: "ann".into(),
        eligible: true,
        held: false,
        dependencies: Vec::new(),
        reason: None,
        expected_start: None,
    }
}

fn file(nodes: u32, running: Vec<RunningEntry>, pending: Vec<PendingEntry>) -> SnapshotFile {
    SnapshotFile {
        format: format::FORMAT.into(),
        version: format::VERSION,
        now: NOW,
        policy: PolicyInForce {
            name: "cbf".into(),
            ..PolicyInForce::default()
        },
        pools: vec![pool(nodes)],
        running,
        pending,
    }
}

fn host<P: sched_core::NamedPolicy + Send + 'static>() -> PolicyHost<Linked> {
    PolicyHost::new(Linked::named::<P>(&Params::new()).unwrap())
}

fn starts(r: &Replay) -> Vec<Option<Time>> {
    r.pending.iter().map(|j| j.start).collect()
}

/// A queue whose jobs overtake one another under backfilling.
fn mixed() -> SnapshotFile {
    file(
        4,
        vec![running(1, 3, NOW - 500, NOW + 10_000)],
        vec![
            pending(2, 4, 5_000),
            pending(3, 1, 8_000),
            pending(4, 2, 3_000),
            pending(5, 1, 20_000),
            pending(6, 3, 1_000),
        ],
    )
}

#[test]
fn under_walltime_cbf_starts_every_job_at_its_first_plans_expected_start() {
    let snap = mixed();
    let mut first = host::<esched_cbf::Cbf>();
    let pools = snap.pools();
    let running: Vec<Running> = snap.running.iter().map(|r| r.job.clone()).collect();
    let pending: Vec<Pending> = snap.pending.iter().map(|p| p.job.clone()).collect();
    let plan = first.plan(&Snapshot {
        now: NOW,
        pools: &pools,
        running: &running,
        pending: &pending,
    });
    let expected: Vec<Option<Time>> = snap
        .pending
        .iter()
        .map(|p| {
            plan.placements
                .iter()
                .find(|q| q.job == p.job.id)
                .map(|q| q.start.max(NOW))
        })
        .collect();
    let r = replay(&snap, &mut host::<esched_cbf::Cbf>(), &Runtime::Walltime).unwrap();
    assert_eq!(starts(&r), expected);
    assert!(expected.iter().all(Option::is_some));
    // Job 3 backfills at once beside the running job; job 2 waits for it.
    assert_eq!(r.pending[1].start, Some(NOW));
    assert_eq!(r.pending[0].start, Some(NOW + 10_000));
    assert_eq!(r.summary.started, 5);
}

#[test]
fn shorter_run_times_move_starts_earlier_and_the_metrics_follow() {
    let snap = mixed();
    let full = replay(&snap, &mut host::<esched_cbf::Cbf>(), &Runtime::Walltime).unwrap();
    let half = replay(&snap, &mut host::<esched_cbf::Cbf>(), &Runtime::Ratio(0.5)).unwrap();
    assert_eq!(
        half.pending[0].start,
        Some(NOW + 4_750),
        "the running job ends at half its limit"
    );
    assert!(half.summary.wait.mean < full.summary.wait.mean);
    assert!(half.summary.horizon < full.summary.horizon);
    assert_eq!(half.running[0].end, Some(NOW + 4_750));
    // Under the history model, a user without a past runs to the limit.
    let mut h = History::default();
    h.ratios.insert("bob".into(), 0.5);
    let hist = replay(&snap, &mut host::<esched_cbf::Cbf>(), &Runtime::History(h)).unwrap();
    assert_eq!(starts(&hist), starts(&full));
}

#[test]
fn utilisation_is_the_jobs_node_time_over_the_horizon() {
    let snap = file(
        2,
        vec![running(1, 2, NOW - 3_000, NOW + 1_000)],
        vec![pending(2, 1, 1_000)],
    );
    let r = replay(&snap, &mut host::<esched_cbf::Cbf>(), &Runtime::Walltime).unwrap();
    assert_eq!(r.pending[0].start, Some(NOW + 1_000));
    assert_eq!(r.summary.horizon, 2.0);
    // 2 nodes × 1 s + 1 node × 1 s over 2 nodes × 2 s: the running job's 3 s before the
    // snapshot are not in the horizon.
    assert!(
        (r.summary.utilisation - 0.75).abs() < 1e-9,
        "{}",
        r.summary.utilisation
    );
}

#[test]
fn dependencies_are_released_as_the_replay_goes_and_held_jobs_never_start() {
    let mut after = pending(3, 1, 1_000);
    after.eligible = false;
    after.dependencies = vec![Dependency {
        kind: DepKind::AfterOk,
        job: 2,
    }];
    let mut started = pending(4, 1, 1_000);
    started.eligible = false;
    started.dependencies = vec![Dependency {
        kind: DepKind::After,
        job: 2,
    }];
    let mut held = pending(5, 1, 1_000);
    held.eligible = false;
    held.held = true;
    let mut never = pending(6, 1, 1_000);
    never.eligible = false;
    never.dependencies = vec![Dependency {
        kind: DepKind::AfterNotOk,
        job: 2,
    }];
    let snap = file(
        4,
        vec![running(1, 4, NOW - 10, NOW + 2_000)],
        vec![pending(2, 2, 3_000), after, started, held, never],
    );
    let r = replay(&snap, &mut host::<esched_cbf::Cbf>(), &Runtime::Walltime).unwrap();
    assert_eq!(
        starts(&r),
        vec![
            Some(NOW + 2_000),
            Some(NOW + 5_000),
            Some(NOW + 2_000),
            None,
            None
        ]
    );
    assert_eq!(r.pending[3].outcome, Outcome::Held);
    assert_eq!(r.pending[4].outcome, Outcome::DependencyNever);
    assert_eq!(r.summary.not_started, 2);
}

/// The most nodes the replay's jobs hold at once.
fn peak(r: &Replay) -> u32 {
    let jobs: Vec<&JobPlan> = r.running.iter().chain(&r.pending).collect();
    jobs.iter()
        .filter_map(|j| j.start)
        .map(|t| {
            jobs.iter()
                .filter(|j| j.start.is_some_and(|s| s <= t) && j.end.is_some_and(|e| e > t))
                .map(|j| j.parts.iter().map(|p| p.1).sum::<u32>())
                .sum()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn every_policy_places_every_job_within_the_pool() {
    let snap = mixed();
    let easy = replay(&snap, &mut host::<esched_easy::Easy>(), &Runtime::Walltime).unwrap();
    let fcfs = replay(
        &snap,
        &mut host::<esched_fcfs::Fcfs>(),
        &Runtime::Ratio(0.3),
    )
    .unwrap();
    for r in [&easy, &fcfs] {
        assert_eq!(r.summary.started, 5);
        assert!(peak(r) <= 4, "{}", peak(r));
        assert!(peak(r) >= 3);
    }
    // FCFS starts no job before one ahead of it in the queue.
    let s: Vec<Time> = fcfs.pending.iter().filter_map(|j| j.start).collect();
    assert!(s.windows(2).all(|w| w[0] <= w[1]), "{s:?}");
}

#[test]
fn the_stored_version_1_file_still_loads_and_replays() {
    let text = include_str!("../../tests/data/snapshot-v1.json");
    let snap = SnapshotFile::from_json(text).unwrap();
    assert_eq!(snap.version, 1);
    assert!(snap.pending.iter().all(|p| p.eligible && !p.held));
    let r = replay(&snap, &mut host::<esched_cbf::Cbf>(), &Runtime::Walltime).unwrap();
    // Job 3 backfills beside the running job; job 2 takes the whole pool at its end.
    assert_eq!(
        starts(&r),
        vec![Some(1_800_000_300_000), Some(1_800_000_000_000)]
    );
}

#[test]
fn files_of_other_kinds_or_newer_versions_are_named_as_such() {
    let mut snap = mixed();
    let text = serde_json::to_string(&snap).unwrap();
    assert_eq!(SnapshotFile::from_json(&text).unwrap(), snap);
    snap.version = format::VERSION + 1;
    let e = SnapshotFile::from_json(&serde_json::to_string(&snap).unwrap()).unwrap_err();
    assert!(e.to_string().contains("use a newer esim"), "{e}");
    snap.format = "swf".into();
    let e = SnapshotFile::from_json(&serde_json::to_string(&snap).unwrap()).unwrap_err();
    assert!(e.to_string().contains("`swf`"), "{e}");
}

#[test]
fn nodes_held_for_the_fair_start_delay_are_no_jobs_time() {
    // One node of two kept idle for 5 s; a 1 s job runs on the other at once.
    let mut hold = running(1, 1, NOW - 1_000, NOW + 5_000);
    hold.holder = Holder::FairStart;
    let snap = file(2, vec![hold], vec![pending(2, 1, 1_000)]);
    let r = replay(&snap, &mut host::<esched_cbf::Cbf>(), &Runtime::Walltime).unwrap();
    assert_eq!(r.pending[0].start, Some(NOW));
    // The horizon ends with the job, and only its node-time is used: 1 node × 1 s of 2 × 1 s.
    assert_eq!(r.summary.horizon, 1.0);
    assert!(
        (r.summary.utilisation - 0.5).abs() < 1e-9,
        "{}",
        r.summary.utilisation
    );
}
