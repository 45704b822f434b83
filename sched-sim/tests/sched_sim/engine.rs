//! The engine's handling of events, plans, refusals and stalls.

use sched_core::validate::PlanError;
use sched_core::{JobId, Kill, Placement, Plan, Policy, PoolId, Reject, Shape, Snapshot, Time};
use sched_sim::{EndReason, Observer, SimError, Simulation};

use crate::common::{job, pools, TinyFcfs};

fn starts(r: &sched_sim::SimResults) -> Vec<(u64, Time, Time)> {
    r.jobs.iter().map(|j| (j.id.0, j.start, j.end)).collect()
}

#[test]
fn runs_actual_time_and_kills_at_walltime() {
    let jobs = vec![job(1, 0, 2, 100, 40), job(2, 0, 2, 100, 500)];
    let r = Simulation::new(pools(&[4]), "tiny")
        .run(&mut TinyFcfs, jobs)
        .unwrap();
    assert_eq!(starts(&r), vec![(1, 0, 40), (2, 0, 100)]);
    assert_eq!(r.jobs[1].reason, EndReason::Walltime);
    assert_eq!(r.counts.walltime_kills, 1);
    assert_eq!(r.jobs[0].area, 80);
    assert_eq!(r.summary.utilisation, (80.0 + 200.0) / 400.0);
}

#[test]
fn ends_come_before_submissions_of_the_same_instant() {
    // Job 2 arrives the millisecond job 1 ends: it must see the whole pool free.
    let jobs = vec![
        job(1, 0, 4, 100, 10),
        job(2, 10, 4, 100, 10),
        job(3, 10, 1, 5, 5),
    ];
    let r = Simulation::new(pools(&[4]), "tiny")
        .run(&mut TinyFcfs, jobs)
        .unwrap();
    assert_eq!(starts(&r), vec![(1, 0, 10), (2, 10, 20), (3, 20, 25)]);
    assert_eq!(r.jobs[2].wait, 10);
    // One call per instant: 0, 10, 20, 25.
    assert_eq!(r.counts.policy_calls, 4);
}

#[test]
fn queue_order_is_submit_then_workload_order() {
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    struct Record(std::rc::Rc<std::cell::RefCell<Vec<Vec<u64>>>>);
    impl Policy for Record {
        fn plan(&mut self, s: &Snapshot<'_>) -> Plan {
            self.0
                .borrow_mut()
                .push(s.pending.iter().map(|p| p.id.0).collect());
            TinyFcfs.plan(s)
        }
    }
    let jobs = vec![
        job(9, 5, 4, 10, 10),
        job(3, 0, 4, 10, 10),
        job(7, 5, 4, 10, 10),
    ];
    Simulation::new(pools(&[4]), "rec")
        .run(&mut Record(seen.clone()), jobs)
        .unwrap();
    assert_eq!(
        seen.borrow()[1],
        vec![9, 7],
        "at 5: job 3 runs, 9 then 7 wait in trace order"
    );
}

/// Starts every pending job now, whatever the pool holds.
struct Greedy {
    calls: usize,
    behave_after: usize,
}

impl Policy for Greedy {
    fn plan(&mut self, s: &Snapshot<'_>) -> Plan {
        self.calls += 1;
        if self.calls > self.behave_after {
            return TinyFcfs.plan(s);
        }
        let placements = s
            .pending
            .iter()
            .map(|p| {
                let r = p.request.as_rigid().unwrap();
                Placement {
                    job: p.id,
                    start: s.now,
                    shape: Shape::rigid(PoolId(0), r.nodes, r.walltime),
                    claim_from: sched_core::RNone,
                }
            })
            .collect();
        Plan {
            placements,
            ..Plan::default()
        }
    }
}

#[derive(Default)]
struct Verdicts(Vec<bool>);

impl Observer for Verdicts {
    fn on_plan(&mut self, _s: &Snapshot<'_>, _p: &Plan, verdict: Result<(), &PlanError>) {
        self.0.push(verdict.is_ok());
    }
}

#[test]
fn refused_plans_are_counted_and_replaced_by_the_last_valid_plan() {
    // Two 3-node jobs on 4 nodes: starting both over-commits. The first plan is refused and
    // the last valid one (job 0 only, which has started) leaves nothing to act on; the policy
    // behaves from the next call on, which the end of job 0 triggers.
    let jobs = vec![
        job(0, 0, 1, 50, 50),
        job(1, 10, 3, 100, 100),
        job(2, 10, 3, 100, 100),
    ];
    let mut v = Verdicts::default();
    let mut policy = Greedy {
        calls: 0,
        behave_after: 2,
    };
    let r = Simulation::new(pools(&[4]), "greedy")
        .observer(&mut v)
        .run(&mut policy, jobs)
        .unwrap();
    assert_eq!(v.0, vec![true, false, true, true, true]);
    assert_eq!(r.counts.refused_plans, 1);
    assert_eq!(starts(&r), vec![(0, 0, 50), (1, 50, 150), (2, 150, 250)]);
}

#[test]
fn a_stall_is_an_error_naming_the_stuck_jobs() {
    let jobs = vec![job(1, 0, 3, 100, 100), job(2, 0, 3, 100, 100)];
    let mut policy = Greedy {
        calls: 0,
        behave_after: usize::MAX,
    };
    let err = Simulation::new(pools(&[4]), "greedy")
        .run(&mut policy, jobs)
        .unwrap_err();
    assert!(
        matches!(
            &err,
            SimError::Stall {
                at: 0,
                count: 2,
                ..
            }
        ),
        "{err}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("policy `greedy`") && msg.contains("first stuck: 1, 2"),
        "{msg}"
    );
}

#[test]
fn wake_ups_and_planned_starts_bring_the_engine_back() {
    /// Holds every job until t = 100, by wake-up or by a planned start only.
    struct Later {
        by_wake: bool,
    }
    impl Policy for Later {
        fn plan(&mut self, s: &Snapshot<'_>) -> Plan {
            if s.now >= 100 {
                return TinyFcfs.plan(s);
            }
            if self.by_wake {
                return Plan {
                    wake_at: Some(100).into(),
                    ..Plan::default()
                };
            }
            let placements = s
                .pending
                .iter()
                .map(|p| Placement {
                    job: p.id,
                    start: 100,
                    shape: Shape::rigid(PoolId(0), 1, 10),
                    claim_from: sched_core::RNone,
                })
                .collect();
            Plan {
                placements,
                ..Plan::default()
            }
        }
    }
    for by_wake in [true, false] {
        let r = Simulation::new(pools(&[4]), "later")
            .run(&mut Later { by_wake }, vec![job(1, 0, 1, 10, 10)])
            .unwrap();
        assert_eq!(starts(&r), vec![(1, 100, 110)], "by_wake={by_wake}");
        assert_eq!(r.counts.policy_calls, 3);
    }
}

#[test]
fn kills_and_rejects_are_applied_and_counted() {
    /// Starts job 1, kills it at 30 (when job 2 arrives) and rejects job 3.
    struct Boss;
    impl Policy for Boss {
        fn plan(&mut self, s: &Snapshot<'_>) -> Plan {
            let mut plan = Plan::default();
            for p in s.pending {
                match p.id.0 {
                    3 => plan.rejects.push(Reject::other(p.id, "no")),
                    1 | 2 => plan.placements.push(Placement {
                        job: p.id,
                        start: s.now,
                        shape: Shape::rigid(PoolId(0), 4, 100),
                        claim_from: sched_core::RNone,
                    }),
                    _ => {}
                }
            }
            if s.pending.iter().any(|p| p.id.0 == 2) {
                plan.kills
                    .extend(s.running.iter().map(|r| Kill::new(r.id, "make room")));
            }
            plan
        }
    }
    let mut jobs = vec![
        job(1, 0, 4, 100, 100),
        job(2, 30, 4, 100, 100),
        job(3, 30, 1, 1, 1),
    ];
    jobs[0].killable = true;
    let r = Simulation::new(pools(&[4]), "boss")
        .run(&mut Boss, jobs)
        .unwrap();
    assert_eq!(starts(&r), vec![(1, 0, 30), (2, 30, 130)]);
    assert_eq!(r.jobs[0].reason, EndReason::Killed);
    assert_eq!((r.counts.killed, r.counts.rejected), (1, 1));
    assert_eq!(r.rejected, vec![JobId(3)]);
}

#[test]
fn running_holds_are_clipped_to_the_present() {
    struct Check(Vec<(Time, Time, u64)>);
    impl Policy for Check {
        fn plan(&mut self, s: &Snapshot<'_>) -> Plan {
            for r in s.running {
                for h in &r.holds {
                    self.0.push((s.now, h.start, h.end()));
                }
            }
            TinyFcfs.plan(s)
        }
    }
    let mut c = Check(Vec::new());
    Simulation::new(pools(&[4]), "check")
        .run(&mut c, vec![job(1, 0, 2, 100, 60), job(2, 25, 1, 10, 10)])
        .unwrap();
    // At 25, job 1 (started at 0, walltime 100) holds [25, 100).
    assert!(c.0.contains(&(25, 25, 100)), "{:?}", c.0);
}

#[test]
fn duplicate_ids_are_refused() {
    let err = Simulation::new(pools(&[4]), "t")
        .run(&mut TinyFcfs, vec![job(1, 0, 1, 1, 1), job(1, 5, 1, 1, 1)]);
    assert!(matches!(err, Err(SimError::DuplicateJob(JobId(1)))));
}

#[test]
fn per_event_order_calls_after_each_event_submissions_first() {
    /// Records, per call, the time and the running jobs.
    struct Rec(Vec<(Time, Vec<u64>)>);
    impl Policy for Rec {
        fn plan(&mut self, s: &Snapshot<'_>) -> Plan {
            self.0
                .push((s.now, s.running.iter().map(|r| r.id.0).collect()));
            TinyFcfs.plan(s)
        }
    }
    let jobs = vec![
        job(1, 0, 4, 100, 10),
        job(2, 10, 4, 100, 10),
        job(3, 10, 1, 5, 5),
    ];
    let mut rec = Rec(Vec::new());
    let r = Simulation::new(pools(&[4]), "rec")
        .events(sched_sim::EventOrder::PerEvent)
        .run(&mut rec, jobs)
        .unwrap();
    assert_eq!(starts(&r), vec![(1, 0, 10), (2, 10, 20), (3, 20, 25)]);
    // At 10: one call per submission (job 1 still running), then one for job 1's end.
    let at_10: Vec<_> = rec
        .0
        .iter()
        .filter(|(t, _)| *t == 10)
        .map(|(_, run)| run.clone())
        .collect();
    assert_eq!(at_10, vec![vec![1], vec![1], vec![]]);
    assert_eq!(r.counts.policy_calls, 6);
}

#[test]
fn a_panicking_policy_is_counted_and_its_last_valid_plan_used() {
    // TinyFcfs, except that it panics at the instant job 2 arrives (its second call). The last
    // valid plan (job 1, which has started) leaves nothing to do then; job 2 starts when job 1
    // ends and the policy is called again.
    struct Flaky {
        calls: usize,
    }
    impl Policy for Flaky {
        fn plan(&mut self, s: &Snapshot<'_>) -> Plan {
            self.calls += 1;
            if self.calls == 2 {
                panic!("flaky on call 2");
            }
            TinyFcfs.plan(s)
        }
    }
    let jobs = vec![job(1, 0, 1, 100, 100), job(2, 10, 1, 50, 50)];
    let mut v = Verdicts::default();
    let r = Simulation::new(pools(&[4]), "flaky")
        .observer(&mut v)
        .run(&mut Flaky { calls: 0 }, jobs)
        .unwrap();
    assert_eq!(starts(&r), vec![(1, 0, 100), (2, 100, 150)]);
    assert_eq!(
        (
            r.counts.policy_calls,
            r.counts.policy_panics,
            r.counts.policy_errors,
            r.counts.refused_plans
        ),
        (4, 1, 0, 0)
    );
    // The panicked call has no plan to observe.
    assert_eq!(v.0, vec![true, true, true]);
}
