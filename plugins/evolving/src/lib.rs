//! # esched-evolving
//!
//! The `evolving` policy: Klein & Pérez's list scheduling of fully-predictably evolving
//! applications (Euro-Par 2011 workshops, Algorithms 1–2; INRIA RR-7205, Algorithms 2–3).
//!
//! A job declares its evolution profile (EP), a list of `(duration, nodes)` steps. The policy
//! takes the queue in order ([`schedule::ListScheduler`], Algorithm 1) and gives each job the
//! scheduled EP found by the base fit ([`fit::base_fit`], Algorithm 2): the requested EP delayed
//! and with its middle steps possibly expanded (held longer while the job waits for the next
//! step's nodes) up to `expand_limit` times, so that it completes as early as the jobs before it
//! allow. With `compact = true` the fit is post-processed ([`fit::compact`]) so that, for the
//! same completion time, the job starts as late as possible and wastes less.
//!
//! Rigid jobs in the same queue are single-step EPs; moldable and co-allocated jobs are seen as
//! rigid ([`sched_core::Request::as_rigid`]). Online, each call plans every pending job over the
//! resource EP of the running jobs, whose holds are fixed.
//!
//! Parameters: `expand_limit` (a real ≥ 1 or `inf`; 1 = noX, the default, 2 = 2X, `inf` =
//! infX) and `compact` (bool, default false). The papers' variants: noX = `expand_limit=1`,
//! 2X+c = `expand_limit=2 compact=true`, infX+c = `expand_limit=inf compact=true`.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod fit;
pub mod schedule;

use sched_core::{
    NamedPolicy, ParamError, Params, Placement, Plan, Policy, PoolId, Reject, RejectKind, Request,
    Shape, Snapshot, Step,
};

pub use fit::{ExpandLimit, Fitted};
pub use schedule::ListScheduler;

/// The `evolving` policy.
#[derive(Clone, Debug, PartialEq)]
pub struct EvolvingPolicy {
    limit: ExpandLimit,
    compact: bool,
}

impl EvolvingPolicy {
    /// A policy with expand limit `limit`, compacting when `compact` is set.
    pub fn new(limit: ExpandLimit, compact: bool) -> Self {
        EvolvingPolicy { limit, compact }
    }

    /// The expand limit.
    pub fn limit(&self) -> ExpandLimit {
        self.limit
    }

    /// Whether fits are compacted.
    pub fn compacts(&self) -> bool {
        self.compact
    }
}

impl Default for EvolvingPolicy {
    /// noX, the papers' recommendation ("the noX algorithm seems to be the best choice").
    fn default() -> Self {
        EvolvingPolicy::new(ExpandLimit::NONE, false)
    }
}

/// Parses an expand limit: a real ≥ 1, or `inf` / `infinity` / `infinite`.
pub fn parse_limit(text: &str) -> Result<ExpandLimit, String> {
    let t = text.trim().to_ascii_lowercase();
    let l = match t.as_str() {
        "inf" | "infinity" | "infinite" | "infx" => f64::INFINITY,
        _ => t
            .strip_suffix('x')
            .unwrap_or(&t)
            .parse::<f64>()
            .map_err(|e| e.to_string())?,
    };
    ExpandLimit::new(l).ok_or_else(|| "expected a real number ≥ 1 or `inf`".to_string())
}

impl NamedPolicy for EvolvingPolicy {
    const NAME: &'static str = "evolving";

    fn from_params(params: &Params) -> Result<Self, ParamError> {
        let limit = match params.get("expand_limit") {
            None => ExpandLimit::NONE,
            Some(v) => parse_limit(v).map_err(|reason| ParamError::BadValue {
                key: "expand_limit".into(),
                value: v.to_string(),
                reason,
            })?,
        };
        let compact = params.bool_or("compact", false)?;
        params.finish()?;
        Ok(EvolvingPolicy::new(limit, compact))
    }
}

/// What the policy schedules for one request: its EP, whether the placement is an evolving
/// shape, and the pool it must go to (if any).
struct Want<'a> {
    steps: WantSteps<'a>,
    evolving: bool,
    pool: Option<PoolId>,
}

/// The EP to schedule: an evolving request's own steps, borrowed, or the one step a rigid view
/// of another request gives (no allocation per job either way).
enum WantSteps<'a> {
    Borrowed(&'a [Step]),
    One([Step; 1]),
}

impl WantSteps<'_> {
    fn as_slice(&self) -> &[Step] {
        match self {
            WantSteps::Borrowed(s) => s,
            WantSteps::One(s) => s,
        }
    }
}

fn want(request: &Request) -> Result<Want<'_>, String> {
    match request {
        Request::Evolving(e) if e.steps.is_empty() => Err("evolving request has no steps".into()),
        Request::Evolving(e) => Ok(Want {
            steps: WantSteps::Borrowed(&e.steps),
            evolving: true,
            pool: e.pool.into_option(),
        }),
        other => {
            let r = other
                .as_rigid()
                .ok_or_else(|| format!("{} request offers no shape", other.kind()))?;
            // A co-allocated job packed into one pool must satisfy every fixed component.
            let pool = match other {
                Request::CoAllocated(c) => {
                    let mut fixed = c.components.iter().filter_map(|c| c.pool.into_option());
                    let first = fixed.next();
                    if fixed.any(|p| Some(p) != first) {
                        return Err("co-allocated components fix different pools; one pool cannot hold them".into());
                    }
                    first
                }
                _ => r.pool.into_option(),
            };
            Ok(Want {
                steps: WantSteps::One([Step::new(r.walltime, r.nodes)]),
                evolving: false,
                pool,
            })
        }
    }
}

impl Policy for EvolvingPolicy {
    fn plan(&mut self, snapshot: &Snapshot<'_>) -> Plan {
        let now = snapshot.now;
        let mut pools: Vec<(PoolId, ListScheduler)> = snapshot
            .pools
            .iter()
            .map(|p| (p.id, ListScheduler::new(p.nodes, self.limit, self.compact)))
            .collect();
        // The running jobs' scheduled EPs are fixed: they form the initial resource EP.
        for r in snapshot.running {
            for h in &r.holds {
                if let Some((_, s)) = pools.iter_mut().find(|(id, _)| *id == h.pool) {
                    s.hold(h.start, &h.steps);
                }
            }
        }
        let mut plan = Plan::default();
        plan.placements.reserve(snapshot.pending.len());
        for job in snapshot.pending {
            let w = match want(&job.request) {
                Ok(w) => w,
                Err(reason) => {
                    plan.rejects.push(Reject::other(job.id, reason));
                    continue;
                }
            };
            let steps = w.steps.as_slice();
            let widest = steps.iter().map(|s| s.nodes).max().unwrap_or(0);
            let eligible = || {
                pools
                    .iter()
                    .enumerate()
                    .filter(|(_, (id, _))| w.pool.is_none_or(|p| *id == p))
            };
            if !eligible().any(|(_, (_, s))| s.nodes() >= widest) {
                let largest = eligible().map(|(_, (_, s))| s.nodes()).max();
                let reject = match largest {
                    None => Reject::other(
                        job.id,
                        format!(
                            "no pool {} in this cluster",
                            w.pool.map_or_else(String::new, |p| p.to_string())
                        ),
                    ),
                    Some(n) => Reject::new(
                        job.id,
                        RejectKind::TooLarge,
                        format!("asks for {widest} nodes, the largest eligible pool has {n}"),
                    ),
                };
                plan.rejects.push(reject);
                continue;
            }
            let from = now.max(job.earliest_start).max(job.submit);
            // Among pools the job may use, the earliest completion, then the earliest start,
            // then the first pool: the papers have one pool; this keeps their criterion.
            let best = eligible()
                .filter_map(|(i, (_, s))| s.try_fit(steps, from).map(|f| (i, f)))
                .min_by_key(|(i, f)| (f.end(), f.start, *i));
            // None: blocked for ever by a running job without an end; the job stays pending.
            let Some((i, fitted)) = best else { continue };
            pools[i].1.commit(&fitted);
            let pool = pools[i].0;
            let start = fitted.start;
            let shape = if w.evolving {
                Shape::Evolving {
                    pool,
                    steps: fitted.steps.into(),
                }
            } else {
                Shape::Rigid {
                    pool,
                    nodes: steps[0].nodes,
                    walltime: steps[0].duration,
                }
            };
            plan.placements.push(Placement {
                job: job.id,
                start,
                shape,
                claim_from: sched_core::RNone,
            });
        }
        // A start in the future happens at another job's end, except when --begin delayed it:
        // ask to be called then.
        plan.wake_at = plan
            .placements
            .iter()
            .map(|p| p.start)
            .filter(|&s| s > now)
            .min()
            .into();
        plan
    }
}

// The plugin's one exported symbol; every call through it catches panics on this side.
sched_abi::export_policy!(EvolvingPolicy);

#[cfg(test)]
mod tests {
    use super::*;
    use sched_core::{JobId, Pending, Pool, Running};

    fn pending(id: u64, request: Request) -> Pending {
        Pending {
            wants_view: false,
            claimed: Default::default(),
            id: JobId(id),
            user: 0,
            submit: 0,
            earliest_start: 0,
            priority: 0,
            request,
        }
    }

    fn pool(nodes: u32) -> Vec<Pool> {
        vec![Pool {
            id: PoolId(0),
            name: "batch".into(),
            nodes,
        }]
    }

    #[test]
    fn params_parse_and_refuse() {
        let p = EvolvingPolicy::from_params(&Params::from_pairs([
            ("expand_limit", "inf"),
            ("compact", "yes"),
        ]))
        .unwrap();
        assert_eq!(p, EvolvingPolicy::new(ExpandLimit::INFINITE, true));
        let p =
            EvolvingPolicy::from_params(&Params::from_pairs([("expand_limit", "2.5")])).unwrap();
        assert_eq!(p.limit().factor(), 2.5);
        assert_eq!(
            EvolvingPolicy::from_params(&Params::new()).unwrap(),
            EvolvingPolicy::default()
        );
        let err = EvolvingPolicy::from_params(&Params::from_pairs([("expand_limit", "0.5")]))
            .unwrap_err();
        assert!(err.to_string().contains("expand_limit"), "{err}");
        let err = EvolvingPolicy::from_params(&Params::from_pairs([("expand_limit", "NaN")]))
            .unwrap_err();
        assert!(err.to_string().contains("≥ 1"), "{err}");
        let err =
            EvolvingPolicy::from_params(&Params::from_pairs([("compact", "1"), ("limit", "2")]))
                .unwrap_err();
        assert!(
            matches!(err, ParamError::Unknown { ref key, .. } if key == "limit"),
            "{err}"
        );
    }

    #[test]
    fn mixed_queue_over_running_job() {
        let pools = pool(10);
        // A running evolving job holds 6 nodes until 100, then 2 until 150.
        let running = vec![Running {
            id: JobId(1),
            user: 0,
            request: Request::evolving(vec![Step::new(100, 6), Step::new(50, 2)]),
            shape: Shape::Evolving {
                pool: PoolId(0),
                steps: sched_core::rvec![Step::new(100, 6), Step::new(50, 2)],
            },
            start: 0,
            holds: sched_core::rvec![sched_core::PoolSteps {
                pool: PoolId(0),
                start: 0,
                steps: sched_core::rvec![Step::new(100, 6), Step::new(50, 2)],
            }],
            killable: false,
        }];
        let pend = vec![
            pending(
                2,
                Request::evolving(vec![Step::new(30, 4), Step::new(20, 8)]),
            ),
            pending(3, Request::rigid(4, 40)),
            pending(4, Request::rigid(11, 1)),
        ];
        let snap = Snapshot {
            now: 10,
            pools: &pools,
            running: &running,
            pending: &pend,
        };
        let plan = EvolvingPolicy::default().plan(&snap);
        sched_core::validate(&snap, &plan).unwrap();
        // Job 2's second step (8 nodes) needs the running job down to 2 nodes: at 100. Its
        // first step is delayed to end there: [70, 100), then [100, 120).
        assert_eq!(plan.placements[0].start, 70);
        // Job 3 (4 nodes × 40) fits now beside the running job: 6 + 4 on [10, 50).
        assert_eq!(plan.placements[1].start, 10);
        assert_eq!(plan.rejects.len(), 1);
        assert_eq!(plan.rejects[0].job, JobId(4));
        assert_eq!(plan.wake_at.into_option(), Some(70));
    }

    #[test]
    fn a_pool_whose_nodes_leave_later_takes_what_ends_before() {
        // Every node held from 60,000 for ever (the pool's end): a job of 4,000 fits now.
        let pools = pool(4);
        let leaving = sched_core::FOREVER - 60_000;
        let running = vec![Running {
            id: JobId(99),
            user: 0,
            request: Request::rigid(4, leaving),
            shape: Shape::Rigid {
                pool: PoolId(0),
                nodes: 4,
                walltime: leaving,
            },
            start: 60_000,
            holds: sched_core::rvec![sched_core::PoolSteps {
                pool: PoolId(0),
                start: 60_000,
                steps: sched_core::rvec![Step::new(leaving, 4)],
            }],
            killable: false,
        }];
        let pend = vec![pending(
            2,
            Request::evolving(vec![Step::new(2_000, 3), Step::new(2_000, 1)]),
        )];
        let snap = Snapshot {
            now: 10,
            pools: &pools,
            running: &running,
            pending: &pend,
        };
        let plan = EvolvingPolicy::default().plan(&snap);
        sched_core::validate(&snap, &plan).unwrap();
        assert_eq!(plan.placements.len(), 1, "{plan:?}");
        assert_eq!(plan.placements[0].start, 10);
    }
}
