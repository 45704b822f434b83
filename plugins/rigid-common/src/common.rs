//! What the three rigid policies (cbf, easy, fcfs) share: how a pending job is seen as rigid,
//! which jobs are refused for good, the per-pool "nodes used" profiles and the choice of pool.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use sched_core::idmap::IdHasher;

use sched_core::request::total_duration;
use sched_core::{
    Duration, JobId, Pending, Pool, PoolId, PoolSteps, Profile, Reject, RejectKind, Request, Rigid,
    Shape, Step, Time,
};

/// Why a pending job is refused for good: its kind, for the driver, and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// What kind of refusal.
    pub kind: RejectKind,
    /// Why, for humans.
    pub reason: String,
}

impl Refusal {
    /// A refusal of kind `kind`.
    pub fn new(kind: RejectKind, reason: impl Into<String>) -> Self {
        Refusal {
            kind,
            reason: reason.into(),
        }
    }

    /// A refusal of none of the typed kinds.
    pub fn other(reason: impl Into<String>) -> Self {
        Refusal::new(RejectKind::Other, reason)
    }

    /// The plan's reject of `job` for this refusal.
    pub fn reject(self, job: JobId) -> Reject {
        Reject::new(job, self.kind, self.reason)
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

/// A pending job as a rigid-only policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    /// Nodes for the whole run.
    pub nodes: u32,
    /// Time limit.
    pub walltime: Duration,
    /// The only pool the job may use, when it is bound to one.
    pub pool: Option<PoolId>,
    /// Never start before this: the later of submission and `--begin`.
    pub earliest: Time,
    /// Co-allocated jobs only: the latest allowed start.
    pub deadline: Option<Time>,
    /// One configuration of a moldable request: placed as [`Shape::Moldable`].
    pub moldable: bool,
}

impl Job {
    /// The rigid view of `p` on `pools`, or why the job can never run under a rigid policy.
    ///
    /// A job is refused for good when it asks for no nodes (Slurm refuses a node count of 0
    /// too: a job holding nothing cannot be protected by a reservation nor charged), offers no
    /// shape at all, names an unknown pool, or asks for more nodes than every pool it may use
    /// has. A zero walltime is accepted: such a job holds nothing and starts at its earliest
    /// allowed time.
    ///
    /// A moldable request's view is its first configuration that some pool can hold; the
    /// policies pick among all of them with [`Job::options`] and [`Cluster::choose`].
    pub fn of(p: &Pending, pools: &[Pool]) -> Result<Job, Refusal> {
        if let Request::Moldable(_) = &p.request {
            return Job::options(p, pools).map(|o| o[0]);
        }
        // Klein & Pérez §5 (rigid baseline): an evolving job is its largest step's node count for
        // the sum of its steps' durations; `as_rigid` implements exactly that, and packs a
        // co-allocated job's components into one pool.
        let Some(rigid) = p.request.as_rigid() else {
            return Err(Refusal::other(format!(
                "the {} request offers no configuration to run with",
                p.request.kind()
            )));
        };
        let pool = match &p.request {
            Request::CoAllocated(c) => {
                let mut fixed = c.components.iter().filter_map(|c| c.pool.into_option());
                let first = fixed.next();
                if let Some(other) = fixed.find(|q| Some(*q) != first) {
                    return Err(Refusal::other(format!(
                        "co-allocated components are fixed to {} and {}; a rigid policy packs a job into one pool",
                        first.map_or_else(String::new, |f| f.to_string()),
                        other
                    )));
                }
                first
            }
            _ => rigid.pool.into_option(),
        };
        let deadline = match &p.request {
            Request::CoAllocated(c) => c.deadline.into_option(),
            _ => None,
        };
        Job::checked(p, pools, &rigid, pool, deadline, false)
    }

    /// Every rigid view a pending job offers: one per configuration of a moldable request that
    /// some pool it may use can hold (explicit configurations first, then the model's, as
    /// [`sched_core::Moldable::choices`] lists them), the one of [`Job::of`] for any other.
    /// Refused for good, with the reason of the first configuration, when none can run.
    pub fn options(p: &Pending, pools: &[Pool]) -> Result<Vec<Job>, Refusal> {
        let Request::Moldable(m) = &p.request else {
            return Job::of(p, pools).map(|j| vec![j]);
        };
        let choices = m.choices();
        let mut first_error = None;
        let mut out = Vec::with_capacity(choices.len());
        let mut seen = std::collections::HashSet::with_capacity(choices.len());
        for c in &choices {
            // A node count offered twice means its first walltime (`Moldable::walltime_on`,
            // which plans are checked against). A set, not a scan of the earlier choices: a
            // range of thousands of counts made that scan quadratic.
            if !seen.insert(c.nodes) {
                continue;
            }
            let rigid = Rigid {
                pool: m.pool,
                nodes: c.nodes,
                walltime: c.walltime,
            };
            match Job::checked(p, pools, &rigid, m.pool.into_option(), None, true) {
                Ok(j) => out.push(j),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if out.is_empty() {
            return Err(match first_error {
                Some(e) if choices.len() > 1 => Refusal::new(
                    e.kind,
                    format!(
                        "none of its {} moldable configurations can run: {e}",
                        choices.len()
                    ),
                ),
                Some(e) => e,
                None => Refusal::other("the moldable request offers no configuration to run with"),
            });
        }
        Ok(out)
    }

    /// [`Job::of`] and, for a moldable request only, [`Job::options`]: what a policy needs to
    /// place any job, without a list for the requests that offer one shape.
    pub fn view(p: &Pending, pools: &[Pool]) -> Result<(Job, Options), Refusal> {
        if let Request::Moldable(_) = p.request {
            let options = Job::options(p, pools)?;
            Ok((options[0], Some(options.into_boxed_slice())))
        } else {
            Job::of(p, pools).map(|j| (j, None))
        }
    }

    /// The job of `rigid`'s nodes and walltime on `pool`, or why no pool can ever hold it.
    fn checked(
        p: &Pending,
        pools: &[Pool],
        rigid: &Rigid,
        pool: Option<PoolId>,
        deadline: Option<Time>,
        moldable: bool,
    ) -> Result<Job, Refusal> {
        if rigid.nodes == 0 {
            return Err(Refusal::other(
                "asks for 0 nodes; a job needs at least one node",
            ));
        }
        match pool {
            Some(id) => match pools.iter().find(|q| q.id == id) {
                None => {
                    return Err(Refusal::other(format!(
                        "asks for {id}, which does not exist"
                    )))
                }
                Some(q) if q.nodes < rigid.nodes => {
                    return Err(Refusal::new(
                        RejectKind::TooLarge,
                        format!(
                            "asks for {} nodes in pool `{}`, which has {}",
                            rigid.nodes, q.name, q.nodes
                        ),
                    ))
                }
                Some(_) => {}
            },
            None => {
                let largest = pools.iter().map(|q| q.nodes).max().unwrap_or(0);
                if largest < rigid.nodes {
                    return Err(Refusal::new(
                        RejectKind::TooLarge,
                        format!(
                            "asks for {} nodes, the largest pool has {largest}",
                            rigid.nodes
                        ),
                    ));
                }
            }
        }
        Ok(Job {
            nodes: rigid.nodes,
            walltime: rigid.walltime,
            pool,
            earliest: p.earliest_start.max(p.submit),
            deadline,
            moldable,
        })
    }

    /// The shape of this job on the pool `pool`.
    pub fn shape(&self, pool: PoolId) -> Shape {
        if self.moldable {
            Shape::Moldable {
                pool,
                nodes: self.nodes,
                walltime: self.walltime,
            }
        } else {
            Shape::rigid(pool, self.nodes, self.walltime)
        }
    }

    /// Whether the job may run on `pool`.
    pub fn allows(&self, pool: &Pool) -> bool {
        self.pool.is_none_or(|p| p == pool.id) && pool.nodes >= self.nodes
    }

    /// The reason to refuse the job when `start` misses its deadline.
    pub fn missed_deadline(&self, start: Option<Time>) -> Option<Refusal> {
        let d = self.deadline?;
        // A person reads the reason (`equeue`, `eacct`) and the policy knows no time zone, only
        // the clock it is given, so the reason speaks of durations, never of clock times.
        let reason = match start {
            Some(s) if s <= d => return None,
            Some(s) => format!(
                "cannot start by its deadline: its earliest start is {} after it",
                span(s - d)
            ),
            None => "cannot start by its deadline: no pool can start it".to_string(),
        };
        // Of kind `Other`, so that batchd ends a job the rigid policies refuse here CANCELLED,
        // its detail naming the policy; `DeadlineMissed` (the RPP's) ends it FAILED.
        Some(Refusal::other(reason))
    }
}

/// `ms` as Slurm writes a duration, `[D-]HH:MM:SS`, with the milliseconds of a span under a
/// second (a deadline missed by a few milliseconds would otherwise read `00:00:00`).
pub fn span(ms: Time) -> String {
    if ms < 1000 {
        return format!("{ms} ms");
    }
    let s = ms / 1000;
    let (d, h, m, s) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// A moldable request's options ([`Job::options`]); `None` for any other request.
pub type Options = Option<Box<[Job]>>;

/// The pools of a snapshot sorted by id (ties between pools go to the lowest id) with one
/// "nodes used" profile each.
#[derive(Clone, Debug, Default)]
pub struct Cluster {
    /// The pools, by id.
    pub pools: Vec<Pool>,
    /// Nodes in use (running holds and whatever the policy reserved), per pool.
    pub used: Vec<Profile>,
}

impl Cluster {
    /// Empty profiles over `pools`.
    pub fn new(pools: &[Pool]) -> Self {
        let mut pools = pools.to_vec();
        pools.sort_by_key(|p| p.id);
        let used = vec![Profile::new(); pools.len()];
        Cluster { pools, used }
    }

    /// Whether the snapshot's pools are the ones these profiles were built for.
    pub fn same_pools(&self, pools: &[Pool]) -> bool {
        pools.len() == self.pools.len()
            && pools
                .iter()
                .all(|p| self.index(p.id).is_some_and(|i| self.pools[i] == *p))
    }

    /// Position of pool `id` in [`Cluster::pools`].
    pub fn index(&self, id: PoolId) -> Option<usize> {
        self.pools.binary_search_by_key(&id, |p| p.id).ok()
    }

    /// Forgets everything before `now` in every profile.
    pub fn forget_before(&mut self, now: Time) {
        for u in &mut self.used {
            u.forget_before(now);
        }
    }

    /// Adds (`sign = 1`) or removes (`sign = -1`) the part of `holds` from `from` on. The past
    /// is clipped because profiles forget it: a removal reaching before the first remembered
    /// change point would leave negative values there.
    pub fn add_holds(&mut self, holds: &[PoolSteps], from: Time, sign: i64) {
        for h in holds {
            let Some(i) = self.index(h.pool) else {
                continue;
            };
            add_steps_from(&mut self.used[i], h.start, &h.steps, from, sign);
        }
    }

    /// Adds (`sign = 1`) or removes (`sign = -1`) `job` on pool index `pool` at `start`,
    /// without the part before `from`.
    pub fn add_job(&mut self, pool: usize, start: Time, job: &Job, from: Time, sign: i64) {
        let end = start.saturating_add(job.walltime);
        self.used[pool].add(start.max(from), end, sign * i64::from(job.nodes));
    }

    /// The earliest start `≥ from` of `job` over the pools it may use and that pool's index;
    /// ties go to the lowest pool id. `None` when it never fits (a hold that never ends).
    pub fn earliest(&self, job: &Job, from: Time) -> Option<(usize, Time)> {
        self.earliest_hinted(job, from, None)
    }

    /// [`Cluster::earliest`], starting each pool's search at the bound `hints` know of, and
    /// teaching them the fits found.
    pub fn earliest_hinted(
        &self,
        job: &Job,
        from: Time,
        mut hints: Option<&mut FitHints>,
    ) -> Option<(usize, Time)> {
        let mut best: Option<(usize, Time)> = None;
        for (i, pool) in self.pools.iter().enumerate() {
            if !job.allows(pool) {
                continue;
            }
            let limit = i64::from(pool.nodes) - i64::from(job.nodes);
            let start = hints.as_deref().map_or(from, |h| h.bound(i, job, from));
            let fit = self.used[i].earliest_fit(start, job.walltime, limit);
            if let (Some(h), Some(t)) = (hints.as_deref_mut(), fit) {
                h.learn(i, job, from, t);
            }
            if let Some(t) = fit {
                if best.is_none_or(|(_, b)| t < b) {
                    best = Some((i, t));
                }
                if t == from {
                    break;
                }
            }
        }
        best
    }

    /// Whether `job`, planned on pool index `pool` at `start` (its hold counted in the
    /// profile), could start there at some `t` in `[from, bound)` once its own hold is lifted;
    /// `bound ≤ start`. It asks the profile with the hold in place, so a job that cannot move
    /// costs one bounded scan instead of a removal, a fit and an addition.
    ///
    /// A window starting before `start` either ends by `start`, where the job's own hold adds
    /// nothing, so it fits with the hold in place too; or it runs into the job's own slot,
    /// where without the hold the profile is at most the pool minus the job's nodes because
    /// with it it is at most the pool; so such a window exists iff the step just before
    /// `start` is free for the job, and it can begin where the last busy step before ends.
    pub fn could_start_before(
        &self,
        pool: usize,
        job: &Job,
        start: Time,
        from: Time,
        bound: Time,
    ) -> bool {
        let limit = i64::from(self.pools[pool].nodes) - i64::from(job.nodes);
        self.used[pool].run_before(from, job.walltime, limit, bound, start)
    }

    /// The OAR rule for moldable jobs: among `options` (the rigid views of one request, see
    /// [`Job::options`]), the one that completes earliest when fitted at its earliest start
    /// `≥ from` given the profiles as they are, with that pool index and start. Ties go to the
    /// fewer nodes (they leave more room to the jobs behind), then to the earlier start, then
    /// to the first offered. `None` when no option ever fits (a hold that never ends).
    ///
    /// The choice is made once, when the job is fitted; a later refit keeps it (moving to
    /// another configuration could delay jobs planned behind it).
    pub fn choose(&self, options: &[Job], from: Time) -> Option<(Job, usize, Time)> {
        let mut best: Option<(Job, usize, Time)> = None;
        for job in options {
            let Some((i, t)) = self.earliest(job, from) else {
                continue;
            };
            let key = |j: &Job, t: Time| (t.saturating_add(j.walltime), j.nodes, t);
            if best.is_none_or(|(b, _, bt)| key(job, t) < key(&b, bt)) {
                best = Some((*job, i, t));
            }
        }
        best
    }

    /// Where and when a job seen as [`Job::view`] goes at the earliest from `from`: `job` at
    /// its earliest fit, or, with `options`, the one [`Cluster::choose`] picks.
    pub fn place(
        &self,
        job: &Job,
        options: Option<&[Job]>,
        from: Time,
    ) -> Option<(Job, usize, Time)> {
        match options {
            Some(o) => self.choose(o, from),
            None => self.earliest(job, from).map(|(i, t)| (*job, i, t)),
        }
    }

    /// A pool (lowest id first) where `job` can run on `[now, now + walltime)`.
    pub fn fits_now(&self, job: &Job, now: Time) -> Option<usize> {
        if job.earliest > now {
            return None;
        }
        let end = now.saturating_add(job.walltime);
        self.pools.iter().enumerate().find_map(|(i, pool)| {
            let limit = i64::from(pool.nodes) - i64::from(job.nodes);
            (job.allows(pool)
                && self.used[i].value_at(now) <= limit
                && self.used[i].max_over(now, end) <= limit)
                .then_some(i)
        })
    }

    /// Free nodes of the emptiest pool at `now`: no job of more nodes can start now.
    pub fn most_free_now(&self, now: Time) -> i64 {
        self.pools
            .iter()
            .zip(&self.used)
            .map(|(p, u)| i64::from(p.nodes) - u.value_at(now))
            .max()
            .unwrap_or(0)
    }

    /// Whether some pool is over-committed at some time `≥ now`.
    pub fn over_committed(&self, now: Time) -> bool {
        self.pools
            .iter()
            .zip(&self.used)
            .any(|(p, u)| u.max_over(now, Time::MAX) > i64::from(p.nodes))
    }
}

/// Lower bounds on earliest fits while the profiles only grow (one plan from scratch): a job
/// with more nodes and a longer walltime than a job already fitted from the same time cannot
/// fit on that pool before it did, since any window holding it would have held the smaller job
/// then. Searching from that bound instead of `now` skips the packed part of the schedule that
/// the fit query would otherwise walk through gap by gap.
///
/// Per pool, a 2-D Fenwick tree of prefix maxima over (node count, walltime) buckets. Buckets
/// are monotone (exact below 16, then 8 per power of two), so a strictly smaller bucket means a
/// strictly smaller value and only true dominance is used.
///
/// Equal jobs dominate each other too, which buckets cannot see: a map of the latest fit per
/// exact (node count, walltime) adds that bound. Real queues repeat the same few requests (the
/// same script, powers of two, round walltimes); on `esim bench`'s queue of 100,000 it cuts
/// by 45 % the profile nodes the fit queries visit.
#[derive(Clone, Debug)]
pub struct FitHints {
    from: Time,
    cells: Vec<Time>,
    /// The latest fit per pool and exact (nodes, walltime).
    same: HashMap<(usize, u32, Duration), Time, BuildHasherDefault<IdHasher>>,
}

const NODE_BUCKETS: usize = 240;
const TIME_BUCKETS: usize = 496;
const CELLS: usize = (NODE_BUCKETS + 1) * (TIME_BUCKETS + 1);

fn bucket(x: u64) -> usize {
    if x < 16 {
        x as usize
    } else {
        let e = 63 - x.leading_zeros() as usize;
        16 + (e - 4) * 8 + ((x >> (e - 3)) & 7) as usize
    }
}

impl FitHints {
    /// Hints for fits searched from `from` on `pools` pools.
    pub fn new(from: Time, pools: usize) -> Self {
        FitHints {
            from,
            cells: vec![0; CELLS * pools],
            same: HashMap::default(),
        }
    }

    /// The latest fit of a job dominated by `job` on pool `pool`, or `from`.
    fn bound(&self, pool: usize, job: &Job, from: Time) -> Time {
        if from < self.from {
            return from;
        }
        let cells = &self.cells[pool * CELLS..][..CELLS];
        let mut best = self
            .same
            .get(&(pool, job.nodes, job.walltime))
            .map_or(from, |&t| t.max(from));
        let mut i = bucket(u64::from(job.nodes));
        while i > 0 {
            let mut j = bucket(job.walltime);
            while j > 0 {
                best = best.max(cells[i * (TIME_BUCKETS + 1) + j]);
                j &= j - 1;
            }
            i &= i - 1;
        }
        best
    }

    /// Records that `job`, searched from `from`, fits on `pool` at `t` at the earliest.
    fn learn(&mut self, pool: usize, job: &Job, from: Time, t: Time) {
        if from != self.from {
            return;
        }
        let same = self
            .same
            .entry((pool, job.nodes, job.walltime))
            .or_insert(t);
        *same = (*same).max(t);
        let cells = &mut self.cells[pool * CELLS..][..CELLS];
        let mut i = bucket(u64::from(job.nodes)) + 1;
        while i <= NODE_BUCKETS {
            let mut j = bucket(job.walltime) + 1;
            while j <= TIME_BUCKETS {
                let c = &mut cells[i * (TIME_BUCKETS + 1) + j];
                *c = (*c).max(t);
                j += j & j.wrapping_neg();
            }
            i += i & i.wrapping_neg();
        }
    }
}

/// Adds `sign ×` the EP `steps` begun at `start`, without the part before `from`.
pub fn add_steps_from(profile: &mut Profile, start: Time, steps: &[Step], from: Time, sign: i64) {
    let mut t = start;
    for s in steps {
        let end = t.saturating_add(s.duration);
        let a = t.max(from);
        if a < end && s.nodes > 0 {
            profile.add(a, end, sign * i64::from(s.nodes));
        }
        t = end;
    }
}

/// Whether two lists of holds are the same from `from` on (a driver may restate what a running
/// job holds from a different start each call).
#[inline]
pub fn same_holds_from(a: &[PoolSteps], b: &[PoolSteps], from: Time) -> bool {
    // The common case, one pool and one step each (a rigid job), without the iterators.
    if let ([x], [y]) = (a, b) {
        if let ([s], [t]) = (x.steps.as_slice(), y.steps.as_slice()) {
            let seg = |ps: &PoolSteps, s: &Step| {
                let end = ps.start.saturating_add(s.duration);
                let a = ps.start.max(from);
                (a < end && s.nodes > 0).then_some((ps.pool, a, end, s.nodes))
            };
            return seg(x, s) == seg(y, t);
        }
    }
    segments_from(a, from).eq(segments_from(b, from))
}

/// Whether `holds` are, from `from` on, what one job of `nodes` nodes on `pool` from `start`
/// for `duration` holds: [`same_holds_from`] against that job's holds, without building them.
pub fn holds_one_interval(
    holds: &[PoolSteps],
    from: Time,
    pool: PoolId,
    start: Time,
    duration: Duration,
    nodes: u32,
) -> bool {
    let end = start.saturating_add(duration);
    let a = start.max(from);
    let want = (a < end && nodes > 0).then_some((pool, a, end, nodes));
    segments_from(holds, from).eq(want)
}

/// The intervals `h` holds from `from` on, `(pool, begin, end, nodes)`, non-empty.
fn segments_from(
    h: &[PoolSteps],
    from: Time,
) -> impl Iterator<Item = (PoolId, Time, Time, u32)> + '_ {
    h.iter().flat_map(move |ps| {
        let mut t = ps.start;
        ps.steps.iter().filter_map(move |s| {
            let end = t.saturating_add(s.duration);
            let a = t.max(from);
            t = end;
            (a < end && s.nodes > 0).then_some((ps.pool, a, end, s.nodes))
        })
    })
}

/// The end of the last hold: when the job is expected to free its nodes.
pub fn holds_end(holds: &[PoolSteps]) -> Time {
    holds
        .iter()
        .map(|h| h.start.saturating_add(total_duration(&h.steps)))
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missed_deadline_is_told_as_a_duration_never_as_a_clock_reading() {
        let job = Job {
            nodes: 1,
            walltime: 60_000,
            pool: None,
            earliest: 0,
            // An epoch time in milliseconds, as batchd's clock gives it.
            deadline: Some(1_795_765_159_301),
            moldable: false,
        };
        assert!(job.missed_deadline(Some(1_795_765_159_301)).is_none());
        let late = job
            .missed_deadline(Some(1_795_765_159_301 + 3_723_000))
            .unwrap();
        assert_eq!(
            late.reason,
            "cannot start by its deadline: its earliest start is 01:02:03 after it"
        );
        assert!(!job.missed_deadline(None).unwrap().reason.contains("1795"));
        assert_eq!(span(999), "999 ms");
        assert_eq!(span(90_061_000), "1-01:01:01");
    }
}
