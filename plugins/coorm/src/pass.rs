//! The policy loop of §III-C (Klein & Pérez, HPCC 2011) over per-pool profiles, with the views
//! filled on the way.

use esched_rigid_common::{Cluster, Job, Refusal};
use sched_core::{
    Duration, JobId, Pending, Placement, Plan, Pool, PoolId, PoolSteps, RSome, Request, Shape,
    Snapshot, Step, Time, View, FOREVER,
};

/// One configuration of a moldable job: `nodes` nodes of `pool` for `walltime`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// The pool.
    pub pool: PoolId,
    /// Node count.
    pub nodes: u32,
    /// Run time at that count on that pool.
    pub walltime: Duration,
}

/// What a queued job asks of the loop.
#[derive(Clone, Debug, PartialEq)]
pub enum Ask {
    /// A subscribed launcher without a request yet: a view, nothing reserved, never placed.
    ViewOnly,
    /// A CooRM request (§III-A): `nodes` hosts on each fixed pool, in component order, for
    /// `walltime`, all starting together.
    Fixed {
        /// `(pool, hosts)` per component.
        components: Vec<(PoolId, u32)>,
        /// Duration of the allocation.
        walltime: Duration,
    },
    /// A job without launcher, planned as cbf plans it (its pool is where it starts earliest,
    /// ties to the lowest pool id).
    Rigid(Job),
    /// OAR's moldable jobs (§IV-A, the baseline): the RMS picks the configuration that
    /// completes earliest; ties go to the first in the list.
    Configs(Vec<Config>),
    /// Refused for good, with the reason (an unknown pool, or what cbf refuses).
    Reject(Refusal),
}

/// A queued job as the loop sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The job.
    pub job: JobId,
    /// Never before this (submission, `--begin`).
    pub earliest: Time,
    /// Whether to fill its view.
    pub wants_view: bool,
    /// What it asks.
    pub ask: Ask,
}

impl Entry {
    /// How the policy reads a pending job of a snapshot over `pools`.
    ///
    /// A co-allocated request with every component on a fixed pool and no deadline is a CooRM
    /// request ([`Ask::Fixed`]; none at all: [`Ask::ViewOnly`]); a moldable request is the
    /// baseline's [`Ask::Configs`] (each choice on each pool it allows); anything else is seen
    /// as cbf sees it ([`Job::of`]), refusals included.
    pub fn of(p: &Pending, pools: &[Pool]) -> Entry {
        let earliest = p.earliest_start.max(p.submit);
        let ask = match &p.request {
            Request::CoAllocated(c)
                if c.deadline.is_none() && c.components.iter().all(|c| c.pool.is_some()) =>
            {
                if c.components.is_empty() {
                    Ask::ViewOnly
                } else {
                    let components: Vec<(PoolId, u32)> = c
                        .components
                        .iter()
                        .filter_map(|c| c.pool.into_option().map(|p| (p, c.nodes)))
                        .collect();
                    match components
                        .iter()
                        .find(|(p, _)| !pools.iter().any(|q| q.id == *p))
                    {
                        Some((p, _)) => Ask::Reject(Refusal::other(format!(
                            "asks for {p}, which does not exist"
                        ))),
                        None => Ask::Fixed {
                            components,
                            walltime: c.walltime,
                        },
                    }
                }
            }
            Request::Moldable(m) => {
                let mut by_id: Vec<&Pool> = pools.iter().collect();
                by_id.sort_by_key(|p| p.id);
                let configs: Vec<Config> = by_id
                    .iter()
                    .filter(|q| m.pool.into_option().is_none_or(|p| p == q.id))
                    .flat_map(|q| {
                        m.choices().into_iter().map(move |c| Config {
                            pool: q.id,
                            nodes: c.nodes,
                            walltime: c.walltime,
                        })
                    })
                    .filter(|c| c.nodes > 0)
                    .collect();
                if configs.is_empty() {
                    Ask::Reject(Refusal::other(
                        "the moldable request offers no configuration",
                    ))
                } else {
                    Ask::Configs(configs)
                }
            }
            _ => match Job::of(p, pools) {
                Ok(j) => Ask::Rigid(j),
                Err(e) => Ask::Reject(e),
            },
        };
        Entry {
            job: p.id,
            earliest,
            wants_view: p.wants_view,
            ask,
        }
    }
}

/// What the loop decided for one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Planned {
    /// Placed at `start` with `components` (`(pool, nodes)`) for `walltime`; `config` is the
    /// index of the chosen configuration of an [`Ask::Configs`].
    Placed {
        /// Start (≤ now: start now).
        start: Time,
        /// `(pool, nodes)` per component.
        components: Vec<(PoolId, u32)>,
        /// Duration.
        walltime: Duration,
        /// Which configuration, for [`Ask::Configs`].
        config: Option<usize>,
    },
    /// A request larger than a pool (or stuck behind a hold that never ends): infinite start.
    Never,
    /// A launcher without a request.
    Waiting,
    /// Refused.
    Rejected(Refusal),
}

/// What the calls did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Passes run.
    pub passes: u64,
    /// Views built.
    pub views: u64,
    /// Configurations the policy enumerated for [`Ask::Configs`] jobs (OAR's cost).
    pub configs: u64,
}

impl Counters {
    /// Adds `o` to `self`.
    pub fn add(&mut self, o: &Counters) {
        self.passes += o.passes;
        self.views += o.views;
        self.configs += o.configs;
    }
}

/// The result of a pass.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// The plan (placements, rejects, views, `wake_at`).
    pub plan: Plan,
    /// Per entry, in entry order: what was decided.
    pub planned: Vec<Planned>,
    /// The entries' asks after the hook (what they were planned with).
    pub asks: Vec<Ask>,
    /// What the pass did.
    pub counters: Counters,
}

/// The CAP of pool index `i` of `cl` from `now` on (the representation of [`View`]): free
/// nodes, consecutive steps different, the last one [`FOREVER`]. A pool over-committed by the
/// running jobs shows 0, never a negative count.
pub fn cap(cl: &Cluster, i: usize, now: Time) -> PoolSteps {
    let size = i64::from(cl.pools[i].nodes);
    let free = |used: i64| (size - used).clamp(0, size) as u32;
    let used = &cl.used[i];
    let mut cur = free(used.value_at(now));
    let mut t = now;
    let mut steps = Vec::new();
    for (p, v) in used.change_points() {
        if p <= now {
            continue;
        }
        let f = free(v);
        if f != cur {
            steps.push(Step::new(p - t, cur));
            t = p;
            cur = f;
        }
    }
    steps.push(Step::new(FOREVER, cur));
    PoolSteps {
        pool: cl.pools[i].id,
        start: now,
        steps: steps.into(),
    }
}

/// The view of every pool of `cl` at `now`, for `job`.
pub fn view_of(cl: &Cluster, job: JobId, now: Time) -> View {
    View {
        job,
        available: (0..cl.pools.len()).map(|i| cap(cl, i, now)).collect(),
    }
}

/// The earliest `t ≥ from` at which every `(pool index, nodes)` of `needs` fits for `walltime`
/// at once (§III-C step 2, "the first hole where its request fits", all clusters together);
/// `None` when some part never fits.
pub fn earliest_all(
    cl: &Cluster,
    needs: &[(usize, u32)],
    walltime: Duration,
    from: Time,
) -> Option<Time> {
    if needs.iter().any(|&(i, n)| n > cl.pools[i].nodes) {
        return None;
    }
    if walltime == 0 {
        return Some(from);
    }
    // Each pool's earliest fit from `t` is a lower bound for the common start: move `t` to
    // the latest of them until every pool fits at `t` (t only grows, through change points).
    let mut t = from;
    loop {
        let mut moved = false;
        for &(i, n) in needs.iter().filter(|(_, n)| *n > 0) {
            let limit = i64::from(cl.pools[i].nodes) - i64::from(n);
            let s = cl.used[i].earliest_fit(t, walltime, limit)?;
            if s > t {
                t = s;
                moved = true;
            }
        }
        if !moved {
            return Some(t);
        }
    }
}

/// Hosts per pool index, duplicates summed, for the components of a request.
fn needs_of(cl: &Cluster, components: &[(PoolId, u32)]) -> Option<Vec<(usize, u32)>> {
    let mut needs: Vec<(usize, u32)> = Vec::new();
    for &(p, n) in components {
        let i = cl.index(p)?;
        match needs.iter_mut().find(|(j, _)| *j == i) {
            Some((_, m)) => *m = m.saturating_add(n),
            None => needs.push((i, n)),
        }
    }
    Some(needs)
}

/// The earliest-completing configuration of `configs` in `cl` from `from`: its index and
/// start; ties on the end go to the first in the list (the baseline's rule, and the one
/// [`crate::select::earliest_completion`] applies to a view).
pub fn earliest_completion(cl: &Cluster, configs: &[Config], from: Time) -> Option<(usize, Time)> {
    let mut best: Option<(usize, Time, Time)> = None;
    for (k, c) in configs.iter().enumerate() {
        let Some(i) = cl.index(c.pool) else { continue };
        let Some(s) = earliest_all(cl, &[(i, c.nodes)], c.walltime, from) else {
            continue;
        };
        let end = s.saturating_add(c.walltime);
        if best.is_none_or(|(_, _, e)| end < e) {
            best = Some((k, s, end));
        }
    }
    best.map(|(k, s, _)| (k, s))
}

/// The §III-C loop over `entries` (queue order) on the snapshot's pools and running jobs.
///
/// For each entry: 1) if it wants a view, its view is the current profiles, and `hook(index,
/// &view)` may answer with a new ask that the entry is planned with (an in-process launcher
/// answering "instantly", §IV-A; a driver without launchers passes `|_, _| None`); 2) its
/// earliest start where the whole ask fits; 3) the profiles take its allocation.
pub fn pass(
    snapshot: &Snapshot<'_>,
    entries: &[Entry],
    mut hook: impl FnMut(usize, &View) -> Option<Ask>,
) -> Outcome {
    let now = snapshot.now;
    let mut cl = Cluster::new(snapshot.pools);
    for r in snapshot.running {
        cl.add_holds(&r.holds, now, 1);
    }
    let mut out = Outcome {
        counters: Counters {
            passes: 1,
            ..Counters::default()
        },
        ..Outcome::default()
    };
    for (k, e) in entries.iter().enumerate() {
        let mut ask = e.ask.clone();
        if e.wants_view {
            let view = view_of(&cl, e.job, now);
            out.counters.views += 1;
            if let Some(a) = hook(k, &view) {
                ask = a;
            }
            out.plan.views.push(view);
        }
        let from = now.max(e.earliest);
        let planned = match &ask {
            Ask::ViewOnly => Planned::Waiting,
            Ask::Reject(why) => Planned::Rejected(why.clone()),
            Ask::Fixed {
                components,
                walltime,
            } => match needs_of(&cl, components) {
                None => Planned::Rejected(Refusal::other("asks for a pool that does not exist")),
                Some(needs) => match earliest_all(&cl, &needs, *walltime, from) {
                    None => Planned::Never,
                    Some(start) => {
                        for &(i, n) in &needs {
                            cl.used[i].add(start, start.saturating_add(*walltime), i64::from(n));
                        }
                        Planned::Placed {
                            start,
                            components: components.clone(),
                            walltime: *walltime,
                            config: None,
                        }
                    }
                },
            },
            Ask::Rigid(job) => match cl.earliest(job, from.max(job.earliest)) {
                None => Planned::Never,
                Some((i, start)) => match job.missed_deadline(Some(start)) {
                    Some(why) => Planned::Rejected(why),
                    None => {
                        cl.add_job(i, start, job, now, 1);
                        Planned::Placed {
                            start,
                            components: vec![(cl.pools[i].id, job.nodes)],
                            walltime: job.walltime,
                            config: None,
                        }
                    }
                },
            },
            Ask::Configs(configs) => {
                out.counters.configs += configs.len() as u64;
                match earliest_completion(&cl, configs, from) {
                    None => Planned::Never,
                    Some((c, start)) => {
                        let cfg = configs[c];
                        if let Some(i) = cl.index(cfg.pool) {
                            cl.used[i].add(
                                start,
                                start.saturating_add(cfg.walltime),
                                i64::from(cfg.nodes),
                            );
                        }
                        Planned::Placed {
                            start,
                            components: vec![(cfg.pool, cfg.nodes)],
                            walltime: cfg.walltime,
                            config: Some(c),
                        }
                    }
                }
            }
        };
        match &planned {
            Planned::Placed {
                start,
                components,
                walltime,
                ..
            } => {
                let shape = match &ask {
                    Ask::Fixed { .. } => Shape::CoAllocated {
                        pools: components.iter().map(|c| c.0).collect(),
                    },
                    Ask::Configs(_) => Shape::Moldable {
                        pool: components[0].0,
                        nodes: components[0].1,
                        walltime: *walltime,
                    },
                    _ => Shape::rigid(components[0].0, components[0].1, *walltime),
                };
                if *start > now {
                    out.plan.wake_at = RSome(out.plan.wake_at.map_or(*start, |w| w.min(*start)));
                }
                out.plan.placements.push(Placement {
                    job: e.job,
                    start: *start,
                    shape,
                    claim_from: sched_core::RNone,
                });
            }
            Planned::Rejected(why) => out.plan.rejects.push(why.clone().reject(e.job)),
            Planned::Never | Planned::Waiting => {}
        }
        out.planned.push(planned);
        out.asks.push(ask);
    }
    out
}
