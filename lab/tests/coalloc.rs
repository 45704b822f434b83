//! The co-allocation driver with the rpp policy, through the public surface: a hand-checked
//! trace, and the invariants of docs/coalloc.md on random ones.

use std::collections::HashMap;

use esched_lab::coalloc::{
    replay, CoallocParams, CoallocRun, CoallocTrace, Outcome, PriorityName, TraceJob, VictimsName,
};
use esched_rpp::Rpp;
use proptest::prelude::*;
use sched_abi::{Borrowed, PolicyHost};
use sched_core::NamedPolicy;

fn run(trace: &CoallocTrace) -> CoallocRun {
    let mut policy = Rpp::from_params(&trace.params.policy_params()).unwrap();
    replay(
        trace,
        &mut PolicyHost::new(Borrowed::new("rpp", &mut policy)),
    )
    .unwrap()
}

fn parse(json: &str) -> CoallocTrace {
    serde_json::from_str(json).unwrap()
}

const TRACE: &str = r#"{
  "params": {"clusters": 2, "procs": 8, "lp": 0.5},
  "jobs": [
    {"type": "local", "id": "a", "cluster": 0, "submit": 0, "size": 6, "runtime": 1000},
    {"type": "local", "id": "b", "cluster": 1, "submit": 0, "size": 2, "runtime": 50},
    {"type": "global", "id": "g", "submit": 0, "components": 2, "size": 4, "runtime": 100,
     "deadline": 100},
    {"type": "local", "id": "c", "cluster": 1, "submit": 10, "size": 4, "runtime": 500}
  ]
}"#;

#[test]
fn gp_kills_the_local_job_that_loses_least_at_the_deadline() {
    let out = serde_json::to_value(run(&parse(TRACE)).output()).unwrap();
    let jobs = &out["jobs"];
    // Tries at 50, 75, 88, … fail (c0 has 2 idle processors, c1 4); at D = 100 one kill is
    // needed whatever the pools: job a (6 processors × 100 s lost) for [0, 1] or [0, 0], job c
    // (4 × 90 s) for [1, 1]. The fewest kills, then the least work: c.
    assert_eq!(jobs[2]["outcome"], "started");
    assert_eq!(jobs[2]["clusters"], serde_json::json!([1, 1]));
    assert_eq!(jobs[2]["killed"], serde_json::json!(["c"]));
    assert_eq!(jobs[3]["outcome"], "killed");
    assert_eq!(jobs[3]["end"], 100.0);
    assert_eq!(jobs[0]["outcome"], "completed");
    assert!((out["summary"]["kill_rate"].as_f64().unwrap() - 100.0 / 3.0).abs() < 1e-9);
}

#[test]
fn gp_youngest_first_kills_in_the_worst_fit_pool() {
    let mut t = parse(TRACE);
    t.params.victims = VictimsName::Youngest;
    let out = serde_json::to_value(run(&t).output()).unwrap();
    let jobs = &out["jobs"];
    // At D = 100 Worst Fit over idle plus killable processors ties 8–8 and takes cluster 0
    // first, where job a is killed.
    assert_eq!(jobs[2]["outcome"], "started");
    assert_eq!(jobs[2]["start"], 100.0);
    assert_eq!(jobs[2]["end"], 200.0);
    assert_eq!(jobs[2]["clusters"], serde_json::json!([0, 1]));
    assert_eq!(jobs[2]["killed"], serde_json::json!(["a"]));
    assert_eq!(jobs[0]["outcome"], "killed");
    assert_eq!(jobs[0]["end"], 100.0);
    assert_eq!(jobs[3]["outcome"], "completed");
    assert_eq!(jobs[3]["start"], 10.0);
    assert_eq!(out["summary"]["success_rate"], 100.0);
    assert!((out["summary"]["kill_rate"].as_f64().unwrap() - 100.0 / 3.0).abs() < 1e-9);
}

#[test]
fn lp_fails_the_same_job() {
    let mut t = parse(TRACE);
    t.params.priority = PriorityName::Lp;
    let r = run(&t);
    assert_eq!(r.jobs[2].outcome, Some(Outcome::Failed));
    assert_eq!(r.jobs[0].outcome, Some(Outcome::Completed));
    let out = serde_json::to_value(r.output()).unwrap();
    assert_eq!(out["jobs"][2]["start"], serde_json::Value::Null);
    assert_eq!(out["jobs"][2]["killed"], serde_json::json!([]));
}

#[test]
fn a_placed_job_claims_at_its_try_and_components_may_share_a_cluster() {
    let mut t = parse(TRACE);
    t.jobs.pop(); // without job c, cluster 1 has 8 idle processors at PT_0 = 50
    let r = run(&t);
    let g = &r.jobs[2];
    assert_eq!(g.placed_at, Some(50_000));
    assert_eq!(g.start, Some(100_000));
    assert_eq!(g.clusters, vec![1, 1]);
    // Claimed 8 processors idle from 50 s to 100 s.
    assert_eq!(g.claims, vec![(50_000, 100_000, 8)]);
    let s = r.summary(None);
    assert!(
        (s.wasted - 100.0 * 8.0 * 50.0 / (16.0 * 1000.0)).abs() < 1e-9,
        "{s:?}"
    );
}

#[test]
fn missing_params_take_the_papers_defaults() {
    let t = parse(r#"{"jobs": []}"#);
    assert_eq!(t.params, CoallocParams::default());
    assert_eq!(
        (t.params.clusters, t.params.procs, t.params.lp),
        (4, 32, 0.7)
    );
    assert!(serde_json::from_str::<CoallocTrace>(r#"{"params": {"l_p": 1}, "jobs": []}"#).is_err());
    let bad = parse(
        r#"{"jobs": [{"type": "local", "cluster": 4, "submit": 0, "size": 1, "runtime": 1}]}"#,
    );
    let mut rpp = Rpp::default();
    let err = replay(&bad, &mut PolicyHost::new(Borrowed::new("rpp", &mut rpp)))
        .unwrap_err()
        .to_string();
    assert_eq!(err, "job 0: cluster 4 does not exist (clusters are 0..3)");
}

/// A random small trace: 2–3 clusters of 8 processors, busy enough for claims, kills and
/// failures.
fn traces() -> impl Strategy<Value = CoallocTrace> {
    let local = (0u32..3, 0u32..400, 1u32..=8, 1u32..200)
        .prop_map(|(c, s, n, r)| (false, c, f64::from(s), n, f64::from(r), 0.0, 1));
    let global = (0u32..400, 1u32..=6, 1u32..200, 0u32..300, 2u32..=3)
        .prop_map(|(s, n, r, d, k)| (true, 0, f64::from(s), n, f64::from(r), f64::from(s + d), k));
    (
        prop::collection::vec(prop_oneof![local, global], 1..40),
        2u32..=3,
        prop_oneof![Just(0.3), Just(0.7), Just(1.0)],
        prop_oneof![Just(None), Just(Some(0.0)), Just(Some(50.0))],
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(jobs, clusters, lp, wait, gp, fewest)| CoallocTrace {
            params: CoallocParams {
                clusters,
                procs: 8,
                lp,
                wait,
                priority: if gp {
                    PriorityName::Gp
                } else {
                    PriorityName::Lp
                },
                max_tries: None,
                victims: if fewest {
                    VictimsName::Fewest
                } else {
                    VictimsName::Youngest
                },
            },
            jobs: jobs
                .into_iter()
                .map(|(g, c, submit, size, runtime, deadline, components)| {
                    if g {
                        TraceJob::Global {
                            id: None,
                            submit,
                            components,
                            size,
                            runtime,
                            deadline,
                        }
                    } else {
                        TraceJob::Local {
                            id: None,
                            cluster: c % clusters,
                            submit,
                            size,
                            runtime,
                        }
                    }
                })
                .collect(),
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Every plan passed the validator (a refusal fails `run`), and on top of that, on
    /// concrete processors: no processor is held by two jobs at once, claims included (so no
    /// cluster is over-committed and a claimed processor never goes to another job); the
    /// components of a started global job start together at its deadline on the processors it
    /// claimed; under LP no local job is killed; local jobs start in FCFS order per cluster.
    #[test]
    fn coallocation_invariants(trace in traces()) {
        let r = run(&trace);
        // (cluster, processor) → (from, to, job) spans.
        type Spans = HashMap<(u32, u32), Vec<(u64, u64, usize)>>;
        let mut busy = Spans::new();
        for (i, j) in r.jobs.iter().enumerate() {
            prop_assert!(j.outcome.is_some());
            if let (Some(s), Some(e)) = (j.start, j.end) {
                // Held from the claim (a global job placed before its deadline) to the end.
                let from = if j.global { j.placed_at.unwrap_or(s) } else { s };
                prop_assert_eq!(j.processors.len() as u32, j.components);
                for (pool, procs) in &j.processors {
                    prop_assert_eq!(procs.len() as u32, j.size);
                    for &p in procs {
                        busy.entry((*pool, p)).or_default().push((from, e, i));
                    }
                }
            }
            if j.global {
                match j.outcome {
                    Some(Outcome::Started) => {
                        prop_assert_eq!(j.start, j.deadline);
                        prop_assert_eq!(j.clusters.len() as u32, j.components);
                        let claimed: u64 = j.claims.iter().map(|c| c.1 - c.0).sum();
                        let placed = j.placed_at.unwrap();
                        prop_assert!(placed <= j.start.unwrap());
                        prop_assert_eq!(claimed, j.start.unwrap() - placed);
                    }
                    Some(Outcome::Failed) => {
                        prop_assert!(j.start.is_none());
                        prop_assert!(j.killed.is_empty());
                    }
                    other => prop_assert!(false, "global outcome {:?}", other),
                }
            } else if trace.params.priority == PriorityName::Lp {
                prop_assert_ne!(j.outcome, Some(Outcome::Killed));
            }
        }
        for (proc_, mut spans) in busy {
            spans.sort_unstable();
            for w in spans.windows(2) {
                prop_assert!(w[0].1 <= w[1].0, "processor {:?} held by jobs {} and {} at once", proc_, w[0].2, w[1].2);
            }
        }
        // FCFS per cluster: queue order is submit time, then trace order.
        let mut locals: Vec<(u32, u64, usize)> = r.jobs.iter().enumerate()
            .filter(|(_, j)| !j.global)
            .map(|(i, j)| (j.cluster, j.submit, i))
            .collect();
        locals.sort_unstable();
        for w in locals.windows(2) {
            if w[0].0 == w[1].0 {
                prop_assert!(r.jobs[w[0].2].start <= r.jobs[w[1].2].start);
            }
        }
        // Every kill is attributed to the global job it made room for, at its start.
        for j in r.jobs.iter().filter(|j| j.global) {
            for &k in &j.killed {
                prop_assert_eq!(r.jobs[k].end, j.start);
                prop_assert_eq!(r.jobs[k].outcome, Some(Outcome::Killed));
            }
        }
    }
}

/// A policy that starts every pending job at once on cluster 0, whatever its request: the
/// host's validator refuses its first plan and the replay stops there with an error, never a
/// result made of the host's fallback.
#[test]
fn a_refused_plan_ends_the_replay_with_an_error() {
    struct Cheat;
    impl sched_core::Policy for Cheat {
        fn plan(&mut self, s: &sched_core::Snapshot<'_>) -> sched_core::Plan {
            sched_core::Plan {
                placements: s
                    .pending
                    .iter()
                    .map(|p| sched_core::Placement {
                        job: p.id,
                        start: s.now,
                        shape: sched_core::Shape::Rigid {
                            pool: sched_core::PoolId(0),
                            nodes: 1000,
                            walltime: 1,
                        },
                        claim_from: sched_core::RNone,
                    })
                    .collect(),
                ..Default::default()
            }
        }
    }
    let mut cheat = Cheat;
    let err = replay(
        &parse(TRACE),
        &mut PolicyHost::new(Borrowed::new("cheat", &mut cheat)),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("at 0 ms the policy's plan was refused: "),
        "{err}"
    );
}
