//! # esched-rpp: the Repeated Placement Policy
//!
//! KOALA's policy for co-allocated jobs with start deadlines, as simulated by Ballier, Caron,
//! Epema & Mohamed ("Simulating Grid Schedulers with Deadlines and Co-Allocation", INRIA
//! RR-5815, 2006), §2.2, beside the FCFS local schedulers of §2.1. A
//! cluster of the paper is a pool.
//!
//! - A **global job** is a [`Request::CoAllocated`] with a deadline D: its components must all
//!   start at D. It is ignored until `S′ = max(S, D − I)` (Wait-X, `wait` = I; I = ∞ is pure
//!   RPP), then tried at `PT_0 = S′ + L_p(D − S′)`, `PT_{m+1} = PT_m + L_p(D − PT_m)`, at most
//!   `max_tries` times, and once more at D itself (our reading, see [`try_times`]). A try places
//!   every component by Worst Fit on the pools' idle nodes, all or nothing; a successful try
//!   *claims* the nodes at once: they stay idle (a placement with `claim_from`) until the job
//!   starts at exactly D.
//! - At D an unplaced job gets its final try; under **GP** local jobs are killed to make room
//!   if idle nodes do not suffice (as few as possible, then the least work lost; see [`Rpp`]),
//!   under **LP** the job fails (a reject).
//! - A **local job** is a [`Request::Rigid`] naming its pool; each pool's local jobs run first
//!   come, first served with no backfilling (the paper's local schedulers), on the nodes that
//!   are neither busy nor claimed.
//!
//! Parameters (`--param key=value`): `lp` (L_p in (0, 1], default 0.7), `wait` (I in seconds,
//! `inf` by default: pure RPP), `priority` (`GP` default, or `LP`), `max_tries` (M_p, `none` by
//! default: tries go on until they reach D at millisecond resolution), `victims` (GP's kills:
//! `fewest`, the default, or `youngest`).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use sched_core::idmap::IdMap;
use sched_core::request::CoAllocated;
use sched_core::{
    JobId, Kill, NamedPolicy, ParamError, Params, Placement, Plan, Policy, PoolId, PoolSteps,
    RSome, RString, Reject, RejectKind, Request, Shape, Snapshot, Time,
};

/// Which of the two kinds of jobs wins when a global job's deadline comes and nodes are short
/// (§2.2, after Bucur & Epema's priorities).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    /// Global priority: local jobs are killed at the deadline to make room.
    Gp,
    /// Local priority: the global job fails instead.
    Lp,
}

/// How GP chooses the pools and the local jobs to kill at a deadline (the paper leaves it
/// open: §2.1 "the scheduler can kill those local jobs if needed").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Victims {
    /// As few kills as the placement allows, then the least work lost (see
    /// [`victims::fewest`]'s rule).
    #[default]
    Fewest,
    /// Pools by Worst Fit on idle plus killable nodes, then in each the youngest local jobs
    /// first (latest start, then highest id) until the components fit.
    Youngest,
}

/// The policy's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// L_p, in (0, 1]. The paper writes 0 < L_p < 1 (§2.2) but sweeps it up to 1 (§3.2,
    /// Figures 2–3), where the first try is at the deadline: we accept 1.
    pub lp: f64,
    /// I of Wait-X in ms; `None` is I = ∞ (pure RPP).
    pub wait: Option<u64>,
    /// GP or LP.
    pub priority: Priority,
    /// M_p: tries before the final one at D; `None` for no bound but the clock's resolution.
    pub max_tries: Option<u32>,
    /// GP's choice of victims.
    pub victims: Victims,
}

impl Default for Config {
    /// The paper's defaults (§3.1, §3.2): L_p = 0.7, pure RPP, GP, no bound on the tries.
    fn default() -> Self {
        Config {
            lp: 0.7,
            wait: None,
            priority: Priority::Gp,
            max_tries: None,
            victims: Victims::Fewest,
        }
    }
}

impl Config {
    /// When the tries of a job submitted at `submit` with deadline `deadline` start: S′.
    fn ignore_until(&self, submit: Time, deadline: Time) -> Time {
        // §2.2: "The scheduler will simply ignore the job until T = D − I"; a job submitted
        // later than D − I is considered from its submission on.
        match self.wait {
            Some(i) => submit.max(deadline.saturating_sub(i)),
            None => submit,
        }
    }

    /// The try after one at `t` that failed, `tries` tries being done: the next PT_m, or D.
    fn next_try(&self, t: Time, deadline: Time, tries: u32) -> Time {
        if t >= deadline || self.max_tries.is_some_and(|m| tries >= m) {
            return deadline;
        }
        // §2.2: PT_{m+1} = PT_m + L_p·(D − PT_m). In exact arithmetic the tries never reach D;
        // on the millisecond clock we round the step up, so every try is at least 1 ms after
        // the previous one and the sequence reaches D after finitely many tries: that is the
        // bound on M_p when `max_tries` is `none`.
        let step = ((deadline - t) as f64 * self.lp).ceil().max(1.0) as u64;
        t.saturating_add(step).min(deadline)
    }

    /// The first try: PT_0 = S′ + L_p·(D − S′), or D when `max_tries` is 0.
    fn first_try(&self, submit: Time, deadline: Time) -> Time {
        let s = self.ignore_until(submit, deadline);
        if self.max_tries == Some(0) || s >= deadline {
            return deadline;
        }
        let step = ((deadline - s) as f64 * self.lp).ceil().max(1.0) as u64;
        s.saturating_add(step).min(deadline)
    }
}

/// Every try time of a job submitted at `submit` with start deadline `deadline` if every try
/// fails: PT_0, PT_1, … (at most `max_tries` of them, all before D), then D itself.
///
/// The paper (§2.2) says a job not placed at PT_M fails, and that under GP local jobs are
/// killed when a global job "has reached its deadline". We read both together: the last try is
/// at D (which PT_m only approaches), and GP's kills happen at that try. A try time that falls
/// on D is that final try, not one more.
pub fn try_times(config: &Config, submit: Time, deadline: Time) -> Vec<Time> {
    let mut out = vec![config.first_try(submit, deadline)];
    let mut tries = 0;
    while let Some(&t) = out.last() {
        if t >= deadline {
            break;
        }
        tries += 1;
        out.push(config.next_try(t, deadline, tries));
    }
    out
}

/// What the policy remembers of a global job between calls.
#[derive(Clone, Debug)]
struct Global {
    /// The next try (a PT_m or D), while not placed.
    next: Time,
    /// PT_m tries done so far (the final try at D not counted).
    tries: u32,
    /// Where and since when its nodes are claimed, once a try succeeded before D.
    claim: Option<(Vec<usize>, Time)>,
    /// Last call that saw the job pending: state of jobs gone (started, rejected, cancelled)
    /// is dropped.
    seen: u64,
    /// Last call that started or rejected it (no wake-up for it then).
    settled: u64,
    /// Its components as (nodes, fixed pool index), computed once.
    comps: Vec<(u32, Option<usize>)>,
    /// Its deadline.
    deadline: Time,
}

/// The Repeated Placement Policy with FCFS local queues per pool.
///
/// State between calls: for each global job, its next try time, the number of tries done,
/// and its claim. Every call answers with: the claimed jobs' placements (start D, claimed
/// since their successful try), the tries due now, then each pool's local queue in FCFS order,
/// and `wake_at` the earliest next try or claimed start. At one instant, global jobs are served
/// before local ones (the placement queue's tries and starts come first, then the local
/// schedulers get what is left), global jobs among themselves in queue order.
///
/// GP's victims: only running rigid jobs the driver marks killable (local jobs). The final
/// try places by Worst Fit on idle nodes first; only when that fails are jobs killed, by
/// [`Victims`]: `fewest` (default) searches the pools and victims for the fewest kills, then
/// the least work lost; `youngest` picks the pools by Worst Fit on idle plus killable nodes and
/// kills in each the youngest first until the component(s) there fit.
#[derive(Clone, Debug, Default)]
pub struct Rpp {
    config: Config,
    jobs: IdMap<Global>,
    calls: u64,
}

impl Rpp {
    /// A policy with `config` and no job seen yet.
    pub fn new(config: Config) -> Self {
        Rpp {
            config,
            jobs: IdMap::default(),
            calls: 0,
        }
    }

    /// Its parameters.
    pub fn config(&self) -> &Config {
        &self.config
    }
}

/// Nodes `h` holds at `now`.
fn held_at(h: &PoolSteps, now: Time) -> u32 {
    if now < h.start {
        return 0;
    }
    let mut t = h.start;
    for s in &h.steps {
        let end = t.saturating_add(s.duration);
        if now < end {
            return s.nodes;
        }
        t = end;
    }
    0
}

/// Worst Fit (§2.2: "the components are placed on the clusters with the most idle
/// processors"), all or nothing: a pool index per component, or `None` if one does not fit.
/// Several components may share a pool (§2.2). Components bound to a pool go there first;
/// the others largest first (the paper's components all have one size, so its order does not
/// matter there), each on the pool with the most free nodes left, ties to the lowest index.
fn worst_fit(free: &[i64], comps: &[(u32, Option<usize>)]) -> Option<Vec<usize>> {
    let mut free = free.to_vec();
    let mut out = vec![usize::MAX; comps.len()];
    for (i, &(n, fixed)) in comps.iter().enumerate() {
        if let Some(p) = fixed {
            if free[p] < i64::from(n) {
                return None;
            }
            free[p] -= i64::from(n);
            out[i] = p;
        }
    }
    let mut order: Vec<usize> = (0..comps.len()).filter(|&i| comps[i].1.is_none()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(comps[i].0));
    for i in order {
        let n = i64::from(comps[i].0);
        let (p, &f) = free
            .iter()
            .enumerate()
            .max_by_key(|&(j, f)| (*f, std::cmp::Reverse(j)))?;
        if f < n {
            return None;
        }
        free[p] -= n;
        out[i] = p;
    }
    Some(out)
}

/// A call's working state: free nodes and killable local jobs per pool, and the plan so far.
struct Call<'s, 'a> {
    snap: &'s Snapshot<'a>,
    idle: Vec<i64>,
    /// Running killable rigid jobs per pool: (start, id, nodes), oldest first; built at the
    /// first GP kill of a call (rare), not at every call.
    killable: Option<Vec<Vec<(Time, JobId, u32)>>>,
    plan: Plan,
}

impl Call<'_, '_> {
    fn pool_index(&self, id: PoolId) -> Option<usize> {
        // Snapshots index pools by `PoolId.0`; search only if a driver does otherwise.
        match self.snap.pools.get(id.0 as usize) {
            Some(p) if p.id == id => Some(id.0 as usize),
            _ => self.snap.pools.iter().position(|p| p.id == id),
        }
    }

    fn reject(&mut self, job: JobId, kind: RejectKind, reason: impl Into<RString>) {
        self.plan.rejects.push(Reject::new(job, kind, reason));
    }

    fn place(&mut self, job: JobId, start: Time, pools: &[usize], claim_from: Option<Time>) {
        let pools = pools.iter().map(|&i| self.snap.pools[i].id).collect();
        self.plan.placements.push(Placement {
            job,
            start,
            shape: Shape::CoAllocated { pools },
            claim_from: claim_from.into(),
        });
    }

    fn take(&mut self, comps: &[(u32, Option<usize>)], pools: &[usize]) {
        for (&(n, _), &p) in comps.iter().zip(pools) {
            self.idle[p] -= i64::from(n);
        }
    }

    /// GP at the deadline: the pools by Worst Fit on idle plus killable nodes, then kills in
    /// each pool, youngest first, until its components fit. `None` if even that fails.
    fn place_killing(
        &mut self,
        job: JobId,
        comps: &[(u32, Option<usize>)],
        rule: Victims,
    ) -> Option<Vec<usize>> {
        if self.killable.is_none() {
            let mut k = vec![Vec::new(); self.snap.pools.len()];
            let now = self.snap.now;
            // §2.1: "The scheduler can kill those local jobs if needed": the local jobs are the
            // rigid ones the driver lets us kill. Jobs killed earlier in this call are gone
            // from the lists already, since the lists are built once per call.
            for r in self.snap.running {
                if !r.killable || !matches!(r.request, Request::Rigid(_)) {
                    continue;
                }
                for h in &r.holds {
                    let n = held_at(h, now);
                    if let (Some(p), true) = (self.pool_index(h.pool), n > 0) {
                        k[p].push((r.start, r.id, n));
                    }
                }
            }
            for l in &mut k {
                l.sort_unstable();
            }
            self.killable = Some(k);
        }
        let killable = self.killable.as_mut()?;
        if rule == Victims::Fewest {
            let (pools, victims) = victims::fewest(self.snap.now, &self.idle, killable, comps)?;
            for (_, victim, n) in victims {
                for (p, list) in killable.iter_mut().enumerate() {
                    if let Some(at) = list.iter().position(|v| v.1 == victim) {
                        list.remove(at);
                        self.idle[p] += i64::from(n);
                    }
                }
                self.plan.kills.push(Kill::for_job(
                    victim,
                    job,
                    "preempted at a co-allocated job's start deadline (GP)",
                ));
            }
            return Some(pools);
        }
        let avail: Vec<i64> = self
            .idle
            .iter()
            .zip(killable.iter())
            .map(|(i, k)| i + k.iter().map(|&(_, _, n)| i64::from(n)).sum::<i64>())
            .collect();
        let pools = worst_fit(&avail, comps)?;
        let mut need = vec![0i64; self.idle.len()];
        for (&(n, _), &p) in comps.iter().zip(&pools) {
            need[p] += i64::from(n);
        }
        for (p, &want) in need.iter().enumerate() {
            while self.idle[p] < want {
                let (_, victim, n) = killable[p].pop()?;
                self.idle[p] += i64::from(n);
                self.plan.kills.push(Kill::for_job(
                    victim,
                    job,
                    "preempted at a co-allocated job's start deadline (GP)",
                ));
            }
        }
        Some(pools)
    }
}

/// The components of `c` as (nodes, fixed pool index), or why the job can never run here.
fn components(call: &Call<'_, '_>, c: &CoAllocated) -> Result<Vec<(u32, Option<usize>)>, String> {
    if c.components.is_empty() {
        return Err("a co-allocated job needs at least one component".into());
    }
    let largest = call.snap.pools.iter().map(|p| p.nodes).max().unwrap_or(0);
    c.components
        .iter()
        .map(|comp| {
            let fixed = match comp.pool.into_option() {
                Some(id) => Some(
                    call.pool_index(id)
                        .ok_or_else(|| format!("component on unknown {id}"))?,
                ),
                None => None,
            };
            let room = fixed.map_or(largest, |i| call.snap.pools[i].nodes);
            if comp.nodes == 0 || comp.nodes > room {
                return Err(format!(
                    "a component of {} nodes can never fit (largest pool it may use: {room})",
                    comp.nodes
                ));
            }
            Ok((comp.nodes, fixed))
        })
        .collect()
}

impl Policy for Rpp {
    fn plan(&mut self, snap: &Snapshot<'_>) -> Plan {
        self.calls += 1;
        let epoch = self.calls;
        let now = snap.now;
        let mut call = Call {
            snap,
            idle: snap.pools.iter().map(|p| i64::from(p.nodes)).collect(),
            killable: None,
            plan: Plan::default(),
        };
        for r in snap.running {
            for h in &r.holds {
                if let Some(p) = call.pool_index(h.pool) {
                    call.idle[p] -= i64::from(held_at(h, now));
                }
            }
        }

        // Pass 1: new global jobs get their try schedule, claimed ones keep their nodes.
        let mut due: Vec<JobId> = Vec::new();
        for p in snap.pending {
            let Request::CoAllocated(c) = &p.request else {
                continue;
            };
            let g = match self.jobs.get_mut(&p.id) {
                Some(g) => g,
                None => {
                    let comps = match components(&call, c) {
                        Ok(comps) => comps,
                        Err(why) => {
                            call.reject(p.id, RejectKind::Other, why);
                            continue;
                        }
                    };
                    let RSome(deadline) = c.deadline else {
                        call.reject(
                            p.id,
                            RejectKind::Other,
                            "the RPP needs a start deadline (--deadline)",
                        );
                        continue;
                    };
                    let submit = p.submit.max(p.earliest_start);
                    // Nodes the driver holds for the job from a claim this instance did not
                    // make (it was rebuilt: a restart of the driver, a swap of policy): the
                    // claim stands, as §2.2's claimed processors stay with their job until D.
                    // Counted from now: when it began is the driver's, not ours, to know.
                    let kept: Option<Vec<usize>> = (!p.claimed.is_empty()
                        && p.claimed.len() == comps.len())
                    .then(|| p.claimed.iter().map(|&id| call.pool_index(id)).collect())
                    .flatten();
                    self.jobs.entry(p.id).or_insert(Global {
                        next: self.config.first_try(submit, deadline),
                        tries: 0,
                        claim: kept.map(|pools| (pools, now)),
                        seen: epoch,
                        settled: 0,
                        comps,
                        deadline,
                    })
                }
            };
            g.seen = epoch;
            let deadline = g.deadline;
            if let Some((pools, since)) = &g.claim {
                for (&(n, _), &i) in g.comps.iter().zip(pools) {
                    call.idle[i] -= i64::from(n);
                }
                match now.cmp(&deadline) {
                    // §3 (Figure 1's wasted time): claimed nodes stay idle until D, and the job
                    // starts exactly at D.
                    std::cmp::Ordering::Less => call.place(p.id, deadline, pools, Some(*since)),
                    std::cmp::Ordering::Equal => {
                        call.place(p.id, now, pools, None);
                        g.settled = epoch;
                    }
                    std::cmp::Ordering::Greater => {
                        // Only a driver that calls late gets here (batchd tells a call that
                        // comes a little late the instant it asked for, so only a long delay
                        // does); a start after D is a failure, the same as a failed final try.
                        for (&(n, _), &i) in g.comps.iter().zip(pools) {
                            call.idle[i] += i64::from(n);
                        }
                        g.claim = None;
                        g.settled = epoch;
                        call.reject(
                            p.id,
                            RejectKind::DeadlineMissed,
                            "Deadline: the start deadline passed before the scheduler ran",
                        );
                    }
                }
            } else if deadline < now {
                g.settled = epoch;
                call.reject(
                    p.id,
                    RejectKind::DeadlineMissed,
                    "Deadline: the start deadline has already passed",
                );
            } else if g.next <= now {
                due.push(p.id);
            }
        }

        // Pass 2: the tries due now, in queue order (§2.2: not necessarily FCFS overall).
        for id in due {
            let Some(g) = self.jobs.get_mut(&id) else {
                continue;
            };
            let deadline = g.deadline;
            if let Some(pools) = worst_fit(&call.idle, &g.comps) {
                call.take(&g.comps, &pools);
                if now < deadline {
                    // §2.2: "the processors allocated to the job are claimed immediately".
                    call.place(id, deadline, &pools, Some(now));
                    g.claim = Some((pools, now));
                } else {
                    call.place(id, now, &pools, None);
                    g.settled = epoch;
                }
                continue;
            }
            if now < deadline {
                g.tries += 1;
                g.next = self.config.next_try(g.next, deadline, g.tries);
                continue;
            }
            // The final try, at D.
            g.settled = epoch;
            match self.config.priority {
                Priority::Gp => match call.place_killing(id, &g.comps, self.config.victims) {
                    Some(pools) => {
                        call.take(&g.comps, &pools);
                        call.place(id, now, &pools, None);
                    }
                    None => call.reject(id, RejectKind::DeadlineMissed,
                        "Deadline: no room for every component at the start deadline, even killing local jobs (GP)",
                    ),
                },
                Priority::Lp => call.reject(id, RejectKind::DeadlineMissed,
                    "Deadline: no room for every component at the start deadline (LP)",
                ),
            }
        }

        // Pass 3: local queues, FCFS per pool without backfilling (§2.1).
        let mut blocked = vec![false; snap.pools.len()];
        let mut open = snap.pools.len();
        for p in snap.pending {
            // Every pool's head blocked: nothing behind can start (FCFS), and any job that can
            // never run is refused when it reaches its queue's head.
            if open == 0 {
                break;
            }
            let rigid = match &p.request {
                Request::CoAllocated(_) => continue,
                Request::Rigid(r) => r,
                other => {
                    call.reject(
                        p.id,
                        RejectKind::Other,
                        format!(
                            "the RPP runs local rigid jobs and co-allocated jobs, not {} ones",
                            other.kind()
                        ),
                    );
                    continue;
                }
            };
            let Some(pool) = rigid.pool.into_option().and_then(|id| call.pool_index(id)) else {
                call.reject(
                    p.id,
                    RejectKind::Other,
                    "a local job must name a known pool (-p)",
                );
                continue;
            };
            if blocked[pool] {
                continue;
            }
            if rigid.nodes == 0 || rigid.nodes > snap.pools[pool].nodes {
                // Zero nodes is not too large, only impossible.
                let kind = if rigid.nodes == 0 {
                    RejectKind::Other
                } else {
                    RejectKind::TooLarge
                };
                call.reject(
                    p.id,
                    kind,
                    format!(
                        "{} nodes can never run in pool {} of {} nodes",
                        rigid.nodes, snap.pools[pool].name, snap.pools[pool].nodes
                    ),
                );
                continue;
            }
            if p.earliest_start <= now && i64::from(rigid.nodes) <= call.idle[pool] {
                call.idle[pool] -= i64::from(rigid.nodes);
                call.plan.placements.push(Placement {
                    job: p.id,
                    start: now,
                    shape: Shape::rigid(snap.pools[pool].id, rigid.nodes, rigid.walltime),
                    claim_from: sched_core::RNone,
                });
            } else {
                blocked[pool] = true;
                open -= 1;
            }
        }

        self.jobs
            .retain(|_, g| g.seen == epoch && g.settled != epoch);
        call.plan.wake_at = self
            .jobs
            .values()
            .map(|g| match g.claim {
                Some(_) => g.deadline,
                // A driver that called late must still call again: never a wake-up in the past.
                None => g.next.max(now + 1),
            })
            .filter(|&t| t > now)
            .min()
            .into();
        call.plan
    }
}

impl NamedPolicy for Rpp {
    const NAME: &'static str = "rpp";

    fn from_params(params: &Params) -> Result<Self, ParamError> {
        let bad = |key: &str, value: &str, reason: &str| ParamError::BadValue {
            key: key.into(),
            value: value.into(),
            reason: reason.into(),
        };
        let lp: f64 = params.parse_or("lp", 0.7)?;
        if !(lp > 0.0 && lp <= 1.0) {
            return Err(bad("lp", &lp.to_string(), "L_p must be in (0, 1]"));
        }
        let wait = match params.get("wait").map(str::trim) {
            None => None,
            Some(v) if is_infinite(v) => None,
            Some(v) => {
                let secs: f64 = v
                    .parse()
                    .map_err(|_| bad("wait", v, "seconds, or inf for pure RPP"))?;
                if !(secs >= 0.0 && secs.is_finite()) {
                    return Err(bad("wait", v, "seconds ≥ 0, or inf for pure RPP"));
                }
                Some((secs * 1000.0).round() as u64)
            }
        };
        let priority = match params.get("priority").map(str::trim) {
            None => Priority::Gp,
            Some(v) if v.eq_ignore_ascii_case("gp") => Priority::Gp,
            Some(v) if v.eq_ignore_ascii_case("lp") => Priority::Lp,
            Some(v) => return Err(bad("priority", v, "GP or LP")),
        };
        let max_tries = match params.get("max_tries").map(str::trim) {
            None => None,
            Some(v) if v.eq_ignore_ascii_case("none") || is_infinite(v) => None,
            Some(v) => Some(
                v.parse()
                    .map_err(|_| bad("max_tries", v, "a count ≥ 0, or none"))?,
            ),
        };
        let victims = match params.get("victims").map(str::trim) {
            None => Victims::Fewest,
            Some(v) if v.eq_ignore_ascii_case("fewest") => Victims::Fewest,
            Some(v) if v.eq_ignore_ascii_case("youngest") => Victims::Youngest,
            Some(v) => return Err(bad("victims", v, "fewest or youngest")),
        };
        params.finish()?;
        Ok(Rpp::new(Config {
            lp,
            wait,
            priority,
            max_tries,
            victims,
        }))
    }
}

fn is_infinite(v: &str) -> bool {
    matches!(
        v.to_ascii_lowercase().as_str(),
        "inf" | "infinity" | "∞" | "none"
    )
}

mod victims;

#[cfg(test)]
mod tests;

sched_abi::export_policy!(Rpp);
