//! CooRM views are the same in batchd and in esim's simulator for the same snapshot:
//! random snapshots (pools, running jobs, waiting launcher sessions with and without a
//! request) go through batchd's path — the policy `coorm` as batchd builds it
//! (`batchd::policy::build`, the plugin or its linked copy), the plan's views turned into the
//! CAPs a `changeNotify` carries (`batchd::core::coorm::cap`) — and through the simulator's
//! (`esched_lab::coorm::driver::launcher_views`, the views its launchers get in one pass); the
//! CAPs must be equal, pool by pool, for every session.

use batchd::core::coorm::cap;
use esched_coorm::pass::Ask;
use esched_lab::coorm::driver::{launcher_views, Waiting};
use proptest::prelude::*;
use sched_core::{
    CoAllocated, Component, JobId, Pending, Pool, PoolId, PoolSteps, RNone, RSome, Request,
    Running, Shape, Snapshot,
};

/// A session's request: `(pool index, nodes)` parts and a duration; `None` before the first.
type SessionReq = Option<(Vec<(usize, u32)>, u64)>;

#[derive(Clone, Debug)]
struct Case {
    now: u64,
    pools: Vec<u32>,
    /// `(pool index, nodes, started this long ago, ends this long from now)`.
    running: Vec<(usize, u32, u64, u64)>,
    sessions: Vec<SessionReq>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        1_000_000u64..2_000_000_000_000,
        prop::collection::vec(1u32..=12, 1..=4),
        prop::collection::vec((0usize..4, 1u32..=12, 0u64..100_000, 1u64..500_000), 0..8),
        prop::collection::vec(
            prop::option::weighted(
                0.8,
                (
                    prop::collection::vec((0usize..4, 1u32..=14), 1..=3),
                    1u64..400_000,
                ),
            ),
            1..=7,
        ),
    )
        .prop_map(|(now, pools, running, sessions)| {
            let n = pools.len();
            // Running jobs all hold their nodes now: keep those that fit beside the others.
            let mut used = vec![0u32; n];
            let running = running
                .into_iter()
                .filter_map(|(p, nodes, ago, left)| {
                    let p = p % n;
                    (used[p] + nodes <= pools[p]).then(|| {
                        used[p] += nodes;
                        (p, nodes, ago, left)
                    })
                })
                .collect();
            // A session names a pool at most once (batchd refuses a request that does not);
            // a count may exceed the pool (accepted, never placed: §III-A).
            let sessions = sessions
                .into_iter()
                .map(|r| {
                    r.map(|(parts, d)| {
                        let mut seen = Vec::new();
                        let parts = parts
                            .into_iter()
                            .map(|(p, k)| (p % n, k))
                            .filter(|(p, _)| {
                                let fresh = !seen.contains(p);
                                seen.push(*p);
                                fresh
                            })
                            .collect();
                        (parts, d)
                    })
                })
                .collect();
            Case {
                now,
                pools,
                running,
                sessions,
            }
        })
}

fn policy() -> batchd::policy::BoxedPolicy {
    let mut c = batchd::Config::embedded();
    c.policy.name = "coorm".into();
    batchd::policy::build(&c).expect("batchd builds the coorm policy")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn batchd_sends_the_caps_the_simulators_launchers_get(c in case()) {
        let pools: Vec<Pool> = c
            .pools
            .iter()
            .enumerate()
            .map(|(i, &nodes)| Pool { id: PoolId(i as u32), name: format!("p{i}").into(), nodes })
            .collect();
        let running: Vec<Running> = c
            .running
            .iter()
            .enumerate()
            .map(|(k, &(p, nodes, ago, left))| {
                let (start, end) = (c.now - ago, c.now + left);
                let pool = PoolId(p as u32);
                Running {
                    id: JobId(k as u64 + 1),
                    user: 1,
                    request: Request::rigid(nodes, end - start),
                    shape: Shape::rigid(pool, nodes, end - start),
                    start,
                    holds: sched_core::rvec![PoolSteps::flat(pool, start, end, nodes)],
                    killable: true,
                }
            })
            .collect();
        // Sessions subscribed one second apart, in job-id (priority) order; the request as
        // batchd's `core::coorm::request_of` builds it (no request: no component).
        let n = c.sessions.len() as u64;
        let submit = |k: usize| c.now - (n - k as u64) * 1000;
        let pending: Vec<Pending> = c
            .sessions
            .iter()
            .enumerate()
            .map(|(k, r)| {
                let (components, walltime) = match r {
                    Some((parts, d)) => (
                        parts
                            .iter()
                            .map(|&(p, nodes)| Component { nodes, pool: RSome(PoolId(p as u32)) })
                            .collect(),
                        *d,
                    ),
                    None => (Vec::new(), 0),
                };
                Pending {
                    id: JobId(100 + k as u64),
                    user: 1,
                    submit: submit(k),
                    earliest_start: submit(k),
                    priority: 0,
                    request: Request::CoAllocated(CoAllocated { components: components.into(), walltime, deadline: RNone }),
                    wants_view: true,
                    claimed: Default::default(),
                }
            })
            .collect();
        let snap = Snapshot { now: c.now, pools: &pools, running: &running, pending: &pending };
        let plan = policy().plan(&snap);
        let waiting: Vec<Waiting> = c
            .sessions
            .iter()
            .enumerate()
            .map(|(k, r)| Waiting {
                job: JobId(100 + k as u64),
                submit: submit(k),
                ask: r.as_ref().map(|(parts, d)| Ask::Fixed {
                    components: parts.iter().map(|&(p, nodes)| (PoolId(p as u32), nodes)).collect(),
                    walltime: *d,
                }),
            })
            .collect();
        let sim = launcher_views(&snap, &waiting);
        prop_assert_eq!(sim.len(), waiting.len());
        prop_assert_eq!(plan.views.len(), waiting.len(), "every session gets a view: {:?}", plan);
        for s in &sim {
            let b = plan.views.iter().find(|v| v.job == s.job);
            prop_assert!(b.is_some(), "no batchd view for job {}", s.job.0);
            let b = b.unwrap();
            prop_assert_eq!(b.available.len(), pools.len());
            prop_assert_eq!(s.available.len(), pools.len());
            for (x, y) in b.available.iter().zip(&s.available) {
                prop_assert_eq!(x.pool, y.pool);
                prop_assert_eq!(cap(x), cap(y), "job {} pool {}", s.job.0, x.pool.0);
            }
        }
    }
}
