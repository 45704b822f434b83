//! Behaviour of the `evolving` policy through its public surface: random workloads checked
//! against the papers' conditions (C1: each scheduled EP is the requested one delayed and/or
//! expanded within the limit; C2: the pool is never overflown) and against an exhaustive search
//! for the earliest completion time on tiny instances.

use esched_evolving::fit::{base_fit, base_fit_with, compact, compact_latest, Jump};
use esched_evolving::{EvolvingPolicy, ExpandLimit, Fitted, ListScheduler};
use proptest::prelude::*;
use sched_core::profile::Large;
use sched_core::request::total_duration;
use sched_core::{
    validate, JobId, Pending, Plan, Policy, Pool, PoolId, PoolSteps, Profile, Request, Running,
    Shape, Snapshot, Step,
};

fn limit_strategy() -> impl Strategy<Value = ExpandLimit> {
    prop_oneof![
        Just(1.0),
        Just(1.5),
        Just(2.0),
        Just(3.0),
        Just(f64::INFINITY)
    ]
    .prop_map(|l| ExpandLimit::new(l).expect("≥ 1"))
}

fn ep_strategy(nnodes: u32, max_steps: usize, max_d: u64) -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        (1..=max_d, 1..=nnodes).prop_map(|(d, n)| Step::new(d, n)),
        1..=max_steps,
    )
}

/// Everything held at every change point, summed independently of `Profile`.
fn peak(holds: &[(u64, Vec<Step>)]) -> i64 {
    let mut events: Vec<(u64, i64)> = Vec::new();
    for (start, steps) in holds {
        let mut t = *start;
        for s in steps {
            events.push((t, i64::from(s.nodes)));
            events.push((t + s.duration, -i64::from(s.nodes)));
            t += s.duration;
        }
    }
    events.sort_by_key(|&(t, d)| (t, d));
    let mut cur = 0;
    let mut max = 0;
    for (_, d) in events {
        cur += d;
        max = max.max(cur);
    }
    max
}

mod invariants {
    use super::*;

    #[derive(Debug, Clone)]
    struct Workload {
        nnodes: u32,
        now: u64,
        running: Vec<(u64, Vec<Step>)>,
        queue: Vec<(Request, u64)>,
    }

    fn workload() -> impl Strategy<Value = Workload> {
        (1u32..=100).prop_flat_map(|nnodes| {
            let running = prop::collection::vec(
                (
                    0u64..2000,
                    prop::collection::vec(
                        (1u64..5000, 0..=nnodes / 2).prop_map(|(d, n)| Step::new(d, n)),
                        1..4,
                    ),
                ),
                0..=2,
            );
            let job = prop_oneof![
                3 => ep_strategy(nnodes, 10, 5000).prop_map(Request::evolving),
                1 => (1..=nnodes, 1u64..5000).prop_map(|(n, w)| Request::rigid(n, w)),
            ];
            (
                Just(nnodes),
                0u64..3000,
                running,
                prop::collection::vec((job, 0u64..6000), 1..30),
            )
                .prop_map(|(nnodes, now, running, queue)| Workload {
                    nnodes,
                    now,
                    running,
                    queue,
                })
        })
    }

    fn snapshot_parts(w: &Workload) -> (Vec<Pool>, Vec<Running>, Vec<Pending>) {
        let pools = vec![Pool {
            id: PoolId(0),
            name: "p".into(),
            nodes: w.nnodes,
        }];
        let running = w
            .running
            .iter()
            .enumerate()
            .map(|(i, (start, steps))| Running {
                id: JobId(1000 + i as u64),
                user: 0,
                request: Request::evolving(steps.clone()),
                shape: Shape::Evolving {
                    pool: PoolId(0),
                    steps: steps.clone().into(),
                },
                start: *start,
                holds: sched_core::rvec![PoolSteps {
                    pool: PoolId(0),
                    start: *start,
                    steps: steps.clone().into(),
                }],
                killable: false,
            })
            .collect();
        let pending = w
            .queue
            .iter()
            .enumerate()
            .map(|(i, (r, begin))| Pending {
                wants_view: false,
                claimed: Default::default(),
                id: JobId(i as u64),
                user: 0,
                submit: 0,
                earliest_start: *begin,
                priority: 0,
                request: r.clone(),
            })
            .collect();
        (pools, running, pending)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// C1 and C2 on random mixed queues over running jobs, for every limit, with and
        /// without compacting.
        #[test]
        fn scheduled_eps_honour_requests_and_pool(w in workload(), limit in limit_strategy(), compact in any::<bool>()) {
            let (pools, running, pending) = snapshot_parts(&w);
            let snap = Snapshot { now: w.now, pools: &pools, running: &running, pending: &pending };
            let mut policy = EvolvingPolicy::new(limit, compact);
            let plan: Plan = policy.plan(&snap);
            prop_assert_eq!(validate(&snap, &plan), Ok(()));
            prop_assert!(plan.rejects.is_empty());
            prop_assert_eq!(plan.placements.len(), pending.len(), "every job fits a pool it is no wider than");
            // Same snapshot, same plan.
            prop_assert_eq!(&policy.plan(&snap), &plan);
            let mut holds: Vec<(u64, Vec<Step>)> = w.running.clone();
            for (p, job) in plan.placements.iter().zip(&pending) {
                prop_assert_eq!(p.job, job.id, "placements follow the queue order");
                prop_assert!(p.start >= w.now.max(job.earliest_start));
                match (&job.request, &p.shape) {
                    (Request::Evolving(e), Shape::Evolving { steps, .. }) => {
                        let n = steps.len();
                        prop_assert_eq!(n, e.steps.len());
                        for (k, (s, r)) in steps.iter().zip(&e.steps).enumerate() {
                            prop_assert_eq!(s.nodes, r.nodes);
                            prop_assert!(s.duration >= r.duration);
                            prop_assert!(s.duration <= limit.max_duration(r.duration), "step {} over the limit", k);
                            if k == 0 || k + 1 == n {
                                // The first step is delayed instead (EP l. 19–20); nothing
                                // follows the last one.
                                prop_assert_eq!(s.duration, r.duration, "step {} expanded", k);
                            }
                        }
                        holds.push((p.start, steps.to_vec()));
                    }
                    (Request::Rigid(r), Shape::Rigid { nodes, walltime, .. }) => {
                        prop_assert_eq!((*nodes, *walltime), (r.nodes, r.walltime));
                        holds.push((p.start, vec![Step::new(*walltime, *nodes)]));
                    }
                    (r, s) => prop_assert!(false, "{:?} placed as {:?}", r, s),
                }
            }
            prop_assert!(peak(&holds) <= i64::from(w.nnodes));
        }
    }
}

mod optimality {
    use super::*;

    /// Exhaustive search on the integer grid: every start of the first step from `from`, every
    /// expansion of each middle step within the limit; the first and last steps keep their
    /// durations. Returns `(earliest completion, latest start among schedules completing then)`.
    pub fn brute(
        req: &[Step],
        res: &Profile,
        nnodes: u32,
        limit: ExpandLimit,
        from: u64,
    ) -> (u64, u64) {
        let last_change = res.change_points().last().map_or(0, |(t, _)| t).max(from);
        let total = total_duration(req);
        // Starting at the last change point without expansion always works, so nothing later
        // can complete earlier.
        let bound = last_change + total;
        let search = Search {
            req,
            res,
            nnodes,
            limit,
            bound,
        };
        let mut best: Option<(u64, u64)> = None;
        for s0 in from..=last_change {
            search.dfs(0, s0, s0, &mut best);
        }
        best.expect("starting after the last change point always fits")
    }

    struct Search<'a> {
        req: &'a [Step],
        res: &'a Profile,
        nnodes: u32,
        limit: ExpandLimit,
        bound: u64,
    }

    impl Search<'_> {
        fn free(&self, t0: u64, t1: u64, n: u32) -> bool {
            (t0..t1).all(|t| self.res.value_at(t) + i64::from(n) <= i64::from(self.nnodes))
        }

        /// Step `k` starts at `s`; the first step started at `s0`.
        fn dfs(&self, k: usize, s: u64, s0: u64, best: &mut Option<(u64, u64)>) {
            let st = self.req[k];
            if k + 1 == self.req.len() {
                let end = s + st.duration;
                if self.free(s, end, st.nodes) {
                    let cand = (end, s0);
                    *best = Some(match *best {
                        None => cand,
                        Some((e, b)) if end < e || (end == e && s0 > b) => cand,
                        Some(b) => b,
                    });
                }
                return;
            }
            let longest = if k == 0 {
                st.duration
            } else {
                self.limit.max_duration(st.duration)
            };
            let mut len = st.duration;
            while len <= longest && s + len <= self.bound {
                if !self.free(s, s + len, st.nodes) {
                    break; // longer holds of this step contain the same conflict
                }
                self.dfs(k + 1, s + len, s0, best);
                len += 1;
            }
        }
    }

    #[derive(Debug, Clone)]
    struct Tiny {
        nnodes: u32,
        from: u64,
        apps: Vec<Vec<Step>>,
    }

    fn tiny() -> impl Strategy<Value = Tiny> {
        (1u32..=6).prop_flat_map(|nnodes| {
            // Zero-duration steps included: they hold nothing, which the jumps must allow for.
            let ep = prop::collection::vec(
                (0u64..=4, 1..=nnodes).prop_map(|(d, n)| Step::new(d, n)),
                1..=4,
            );
            (Just(nnodes), 0u64..4, prop::collection::vec(ep, 1..=6))
                .prop_map(|(nnodes, from, apps)| Tiny { nnodes, from, apps })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1500))]

        /// Base fit gives each application, in list order, the earliest completion time its
        /// predecessors allow (EP §4.2); the compacting search keeps that completion and starts
        /// as late as any schedule completing then; compacting as used never wastes more than
        /// the base fit.
        #[test]
        fn base_fit_completes_earliest_and_compacting_starts_latest(t in tiny(), limit in limit_strategy()) {
            let mut sched = ListScheduler::new(t.nnodes, limit, false);
            for (i, req) in t.apps.iter().enumerate() {
                let res = sched.resources().clone();
                let base: Fitted = base_fit(req, &res, t.nnodes, limit, t.from).expect("fits");
                // The paper's max/loc jumps, the single-query jumps and the scan (the default)
                // stop at the same solution.
                let paper = base_fit_with(req, &res, t.nnodes, limit, t.from, Jump::Loc);
                prop_assert_eq!(paper.as_ref(), Some(&base));
                let last = base_fit_with(req, &res, t.nnodes, limit, t.from, Jump::LastConflict);
                prop_assert_eq!(last.as_ref(), Some(&base));
                prop_assert_eq!(Jump::default(), Jump::Scan);
                let (earliest, latest_start) = brute(req, &res, t.nnodes, limit, t.from);
                prop_assert_eq!(base.end(), earliest, "app {} of {:?}: {:?}", i, t, base);
                // The compacting search: same completion, the latest start of all schedules
                // completing then.
                let latest = compact_latest(req, &res, t.nnodes, limit, &base);
                prop_assert_eq!(latest.end(), base.end());
                prop_assert_eq!(latest.start, latest_start, "app {}: compacted {:?} base {:?}", i, latest, base);
                // What the policy uses: that, unless it wastes more than the base fit.
                let c = compact(req, &res, t.nnodes, limit, &base);
                let expected = if latest.waste(req) <= base.waste(req) { &latest } else { &base };
                prop_assert_eq!(&c, expected);
                prop_assert_eq!(c.end(), base.end());
                prop_assert!(c.start >= base.start);
                prop_assert!(c.waste(req) <= base.waste(req));
                // The compacted EP is itself a valid fit.
                let mut r2 = res.clone();
                r2.add_steps(c.start, &c.steps, 1);
                prop_assert!(r2.max_over(0, u64::MAX) <= i64::from(t.nnodes));
                for (s, r) in c.steps.iter().zip(req) {
                    prop_assert!(s.duration >= r.duration && s.duration <= limit.max_duration(r.duration));
                }
                let placed = sched.place(req, t.from).expect("fits");
                prop_assert_eq!(placed, base);
            }
        }
    }

    #[test]
    fn brute_force_agrees_on_hand_example() {
        // 10 nodes, 8 busy on [0, 100): (10,1) (10,1) (5,6) completes at 105 whatever the limit.
        let mut res = Profile::new();
        res.add(0, 100, 8);
        let req = [Step::new(10, 1), Step::new(10, 1), Step::new(5, 6)];
        assert_eq!(brute(&req, &res, 10, ExpandLimit::INFINITE, 0), (105, 80));
        assert_eq!(brute(&req, &res, 10, ExpandLimit::NONE, 0), (105, 80));
    }
}

mod jumps {
    use super::*;

    /// A queue of EPs list-scheduled into a profile held flat or as a tree, then one more EP.
    fn queue() -> impl Strategy<Value = (u32, Vec<Vec<Step>>, Vec<Step>, u64, bool)> {
        (2u32..=40).prop_flat_map(|nnodes| {
            (
                Just(nnodes),
                prop::collection::vec(ep_strategy(nnodes, 6, 50), 0..=40),
                ep_strategy(nnodes, 8, 50),
                0u64..200,
                any::<bool>(),
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The three ways of jumping past conflicts give the same fit over profiles of hundreds
        /// of change points, in both representations of the profile (the scan and the queries
        /// take different paths through each).
        #[test]
        fn every_jump_gives_the_same_fit((nnodes, apps, req, from, tree) in queue(), limit in limit_strategy()) {
            let mut res = if tree { Profile::with_layout(0, Large::Tree) } else { Profile::new() };
            for app in &apps {
                let f = base_fit(app, &res, nnodes, limit, 0).expect("no running job: fits");
                res.add_steps(f.start, &f.steps, 1);
            }
            prop_assert_eq!(res.is_flat(), !tree || res.is_empty());
            let scan = base_fit_with(&req, &res, nnodes, limit, from, Jump::Scan);
            prop_assert!(scan.is_some());
            for jump in [Jump::Loc, Jump::LastConflict] {
                prop_assert_eq!(&base_fit_with(&req, &res, nnodes, limit, from, jump), &scan, "{:?}", jump);
            }
        }
    }
}
