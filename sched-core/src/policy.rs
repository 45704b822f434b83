//! The policy contract: a snapshot of the cluster and the queue in, a plan out.
//!
//! The same contract is driven by batchd (real processes) and esim (a virtual clock), in
//! process or through the plugin ABI of `sched-abi`, which carries these types as they are: a
//! snapshot's lists are lent to a plugin, its plan is moved back.
//! A policy may keep state between calls but must give the same plan for the same snapshot and
//! state: no clock, no randomness without a seed parameter.

use std::collections::BTreeMap;

use abi_stable::std_types::{ROption, RString, RVec};
use abi_stable::StableAbi;
use serde::{Deserialize, Serialize};

use crate::pool::{Pool, PoolId};
use crate::request::{JobId, Request, Step};
use crate::time::Time;

/// Nodes of one pool held over time: the EP `steps` delayed to `start`. Used for what a
/// running job holds from now on, and for the availability profiles (CAPs) of views.
#[repr(C)]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, StableAbi)]
pub struct PoolSteps {
    /// The pool.
    pub pool: PoolId,
    /// When the first step begins.
    pub start: Time,
    /// The steps, back to back; nothing is held after the last.
    pub steps: RVec<Step>,
}

impl PoolSteps {
    /// `nodes` nodes of `pool` on `[start, end)`.
    pub fn flat(pool: PoolId, start: Time, end: Time, nodes: u32) -> Self {
        PoolSteps {
            pool,
            start,
            steps: abi_stable::rvec![Step::new(end.saturating_sub(start), nodes)],
        }
    }

    /// When the last step ends.
    pub fn end(&self) -> Time {
        self.start
            .saturating_add(crate::request::total_duration(&self.steps))
    }

    /// Cuts what was held before `now` off, in place: a hold that began earlier begins at
    /// `now`, with the steps (or parts of steps) that end after it. `false` when nothing is held
    /// after `now` (the steps are then empty). A hold that begins at or after `now` is left as
    /// it is. This is how a driver brings a running job's holds to the present between calls
    /// (esim's engine, instant after instant: clipping what was clipped is clipping the whole).
    #[inline]
    pub fn clip_to(&mut self, now: Time) -> bool {
        if self.start >= now {
            return true;
        }
        // A rigid job's one step, the common case, without the general loop.
        if let [s] = self.steps.as_mut_slice() {
            let end = self.start.saturating_add(s.duration);
            self.start = now;
            if end > now {
                s.duration = end - now;
                return true;
            }
            self.steps.clear();
            return false;
        }
        let mut t = self.start;
        let mut w = 0;
        for r in 0..self.steps.len() {
            let s = self.steps[r];
            let end = t.saturating_add(s.duration);
            if end > now {
                self.steps[w] = Step::new(end - t.max(now), s.nodes);
                w += 1;
            }
            t = end;
        }
        self.steps.truncate(w);
        self.start = now;
        !self.steps.is_empty()
    }
}

/// A job waiting in the queue.
#[repr(C)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, StableAbi)]
pub struct Pending {
    /// The job.
    pub id: JobId,
    /// Owner's uid (fair-share and fair-start policies group by it).
    pub user: u32,
    /// Submission time.
    pub submit: Time,
    /// Earliest allowed start (`--begin`); at least `submit`.
    pub earliest_start: Time,
    /// Larger runs first among equals; the queue is already sorted by the driver.
    pub priority: i64,
    /// What it asks for.
    pub request: Request,
    /// Whether the job has a launcher that wants its view (CooRM, Klein & Pérez HPCC 2011
    /// §III-A): a policy that fills views fills one for these jobs only, so that views cost
    /// nothing when nobody asks. Absent from older serialised snapshots, hence `false`.
    #[serde(default)]
    pub wants_view: bool,
    /// The pools of the nodes the driver already holds for this job, one per component, kept
    /// from an earlier plan's claim (a placement with `claim_from`: KOALA's RPP claims a
    /// co-allocated job's nodes at a successful try and holds them idle until its start);
    /// empty when it holds none. A policy that keeps state between calls learns from it the
    /// claims it made before it was (re)built: after a restart of the driver, or a swap of
    /// policy. Absent from older serialised snapshots, hence empty, and left out when empty.
    #[serde(default, skip_serializing_if = "RVec::is_empty")]
    pub claimed: RVec<PoolId>,
}

/// A job that holds nodes now.
#[repr(C)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, StableAbi)]
pub struct Running {
    /// The job.
    pub id: JobId,
    /// Owner's uid.
    pub user: u32,
    /// What it asked for.
    pub request: Request,
    /// The shape it was started with.
    pub shape: Shape,
    /// When it started.
    pub start: Time,
    /// The nodes it holds, per pool, until its expected end (its walltime, or the rest of its
    /// scheduled EP). The steps may begin before now (batchd gives a rigid job's from its
    /// start, an evolving job's and an overrunning job's from now): what lies before now is
    /// past, and a policy plans from now on.
    pub holds: RVec<PoolSteps>,
    /// Whether a policy may kill it (a local job under KOALA's GP/LP priorities).
    pub killable: bool,
}

impl Running {
    /// Brings the holds to `now` ([`PoolSteps::clip_to`]), dropping those that hold nothing
    /// after it.
    #[inline]
    pub fn clip_holds(&mut self, now: Time) {
        // Rigid jobs hold one pool: no retain loop unless the hold ends.
        if let [h] = self.holds.as_mut_slice() {
            if !h.clip_to(now) {
                self.holds.clear();
            }
            return;
        }
        // `RVec` has no `retain_mut`: a stable compaction in place.
        let mut kept = 0;
        for i in 0..self.holds.len() {
            if self.holds[i].clip_to(now) {
                self.holds.swap(kept, i);
                kept += 1;
            }
        }
        self.holds.truncate(kept);
    }

    /// When the job's holds end: its expected (latest) end.
    pub fn expected_end(&self) -> Time {
        self.holds
            .iter()
            .map(PoolSteps::end)
            .max()
            .unwrap_or(self.start)
    }
}

/// What a policy sees.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot<'a> {
    /// The present.
    pub now: Time,
    /// The pools, indexed by `PoolId.0`.
    pub pools: &'a [Pool],
    /// Jobs holding nodes.
    pub running: &'a [Running],
    /// Jobs waiting, in queue (priority) order.
    pub pending: &'a [Pending],
}

impl Snapshot<'_> {
    /// The pool with this id.
    pub fn pool(&self, id: PoolId) -> Option<&Pool> {
        self.pools.iter().find(|p| p.id == id)
    }
}

/// The shape a placement gives a job; it must honour the job's request.
#[repr(u8)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, StableAbi)]
pub enum Shape {
    /// A rigid job as requested, on `pool`.
    Rigid {
        /// Where.
        pool: PoolId,
        /// How many nodes (the requested count).
        nodes: u32,
        /// Time limit (the requested one).
        walltime: crate::time::Duration,
    },
    /// One of a moldable job's offered configurations, on `pool`.
    Moldable {
        /// Where.
        pool: PoolId,
        /// Chosen node count.
        nodes: u32,
        /// The walltime the request gives for that count.
        walltime: crate::time::Duration,
    },
    /// The scheduled EP of an evolving job without its leading delay: the requested steps, each
    /// possibly expanded (longer), never shortened, never with another node count.
    Evolving {
        /// Where.
        pool: PoolId,
        /// The scheduled steps.
        steps: RVec<Step>,
    },
    /// One pool per component of a co-allocated job, in component order; all start together.
    CoAllocated {
        /// Pool of each component.
        pools: RVec<PoolId>,
    },
}

impl Shape {
    /// The rigid shape of `nodes` nodes for `walltime` on `pool`.
    pub fn rigid(pool: PoolId, nodes: u32, walltime: crate::time::Duration) -> Self {
        Shape::Rigid {
            pool,
            nodes,
            walltime,
        }
    }

    /// The nodes this shape holds when started at `start`, per pool.
    pub fn holds(&self, request: &Request, start: Time) -> Vec<PoolSteps> {
        match self {
            Shape::Rigid {
                pool,
                nodes,
                walltime,
            }
            | Shape::Moldable {
                pool,
                nodes,
                walltime,
            } => {
                vec![PoolSteps {
                    pool: *pool,
                    start,
                    steps: abi_stable::rvec![Step::new(*walltime, *nodes)],
                }]
            }
            Shape::Evolving { pool, steps } => {
                vec![PoolSteps {
                    pool: *pool,
                    start,
                    steps: steps.clone(),
                }]
            }
            Shape::CoAllocated { pools } => {
                let Request::CoAllocated(c) = request else {
                    return Vec::new();
                };
                pools
                    .iter()
                    .zip(&c.components)
                    .map(|(p, comp)| PoolSteps {
                        pool: *p,
                        start,
                        steps: abi_stable::rvec![Step::new(c.walltime, comp.nodes)],
                    })
                    .collect()
            }
        }
    }
}

/// A decision to run a pending job at `start` with `shape`.
#[repr(C)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, StableAbi)]
pub struct Placement {
    /// The job.
    pub job: JobId,
    /// When it starts; the driver starts it when `start <= now`, otherwise this is its
    /// expected start.
    pub start: Time,
    /// With what.
    pub shape: Shape,
    /// Nodes held idle from this time until `start` (KOALA's RPP claims components early);
    /// `RNone` when nothing is claimed before the start.
    #[serde(default)]
    pub claim_from: ROption<Time>,
}

/// What kind of refusal a reject is, for a driver to act on without reading its text.
#[repr(u8)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, StableAbi)]
pub enum RejectKind {
    /// Any other reason (a request the policy does not run, an unknown pool, ...): the text
    /// says which.
    #[default]
    Other,
    /// The job cannot start by its start deadline (a co-allocated job's `--deadline`): it has
    /// failed.
    DeadlineMissed,
    /// The job asks for more nodes than its pool, or than any pool or the whole cluster, has.
    TooLarge,
}

impl RejectKind {
    /// Whether this is [`RejectKind::Other`] (what an absent kind reads as).
    pub fn is_other(&self) -> bool {
        *self == RejectKind::Other
    }
}

/// A pending job the policy refuses for good, and why.
#[repr(C)]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, StableAbi)]
pub struct Reject {
    /// The job.
    pub job: JobId,
    /// Why, for the logs and the job's record.
    pub reason: RString,
    /// What kind of refusal it is.
    #[serde(default, skip_serializing_if = "RejectKind::is_other")]
    pub kind: RejectKind,
}

impl Reject {
    /// `job` refused as `kind`, and why.
    pub fn new(job: JobId, kind: RejectKind, reason: impl Into<RString>) -> Self {
        Reject {
            job,
            reason: reason.into(),
            kind,
        }
    }

    /// `job` refused for another reason than the typed ones ([`RejectKind::Other`]).
    pub fn other(job: JobId, reason: impl Into<RString>) -> Self {
        Reject::new(job, RejectKind::Other, reason)
    }
}

/// A running job the policy kills, and why.
#[repr(C)]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, StableAbi)]
pub struct Kill {
    /// The job.
    pub job: JobId,
    /// Why, for the logs and the job's record.
    pub reason: RString,
    /// The job it is killed to make room for, if one (KOALA's GP: local jobs killed at a
    /// co-allocated job's deadline).
    #[serde(default, skip_serializing_if = "ROption::is_none")]
    pub for_job: ROption<JobId>,
}

impl Kill {
    /// `job` killed, and why.
    pub fn new(job: JobId, reason: impl Into<RString>) -> Self {
        Kill {
            job,
            reason: reason.into(),
            for_job: ROption::RNone,
        }
    }

    /// `job` killed to make room for `beneficiary`; `why` is the human part, and the text
    /// names the beneficiary too ([`kill_reason_for`]).
    pub fn for_job(job: JobId, beneficiary: JobId, why: &str) -> Self {
        Kill {
            job,
            reason: kill_reason_for(beneficiary, why).into(),
            for_job: ROption::RSome(beneficiary),
        }
    }
}

/// The text of a kill made to make room for another job ([`Kill::for_job`]): `why` and
/// `[for job N]`, so that a reader of the logs, a job's record or esim's output sees which job
/// each kill served. Drivers read the beneficiary from [`Kill::for_job`].
pub fn kill_reason_for(job: JobId, why: &str) -> String {
    format!("{why} [for job {job}]")
}

/// The duration of the last step of a CAP: "free forever after" (see [`View`]).
pub const FOREVER: crate::time::Duration = crate::time::Duration::MAX;

/// A per-job view of the cluster (CooRM's CAPs, Klein & Pérez HPCC 2011 §III-A): what the job
/// may count on, per pool, after the jobs ahead of it in the queue.
///
/// Representation of a CAP (Cluster Availability Profile), one [`PoolSteps`] per pool:
/// - `start` is the snapshot's `now` (a CAP says nothing of the past);
/// - the steps, back to back, give the number of **free** nodes (not held) on each interval;
///   consecutive steps have different counts, and a step may have 0 nodes;
/// - the **last step has duration [`FOREVER`]**: its count holds for ever after (once every
///   hold and reservation has ended, normally the pool's size). A CAP therefore never ends;
///   [`PoolSteps::end`] saturates to `Time::MAX` for it.
///
/// Every pool of the snapshot has a CAP, in pool-id order, even when the job's request does not
/// use it: a launcher chooses its pools from the view (§III-B).
#[repr(C)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, StableAbi)]
pub struct View {
    /// The job the view is for.
    pub job: JobId,
    /// Free nodes over time, per pool (the CAPs).
    pub available: RVec<PoolSteps>,
}

impl View {
    /// Free nodes of `pool` at `t` (`None` for a pool the view does not know or a `t` before
    /// its CAP starts).
    pub fn free_at(&self, pool: PoolId, t: Time) -> Option<u32> {
        let cap = self.available.iter().find(|c| c.pool == pool)?;
        cap_value_at(cap, t)
    }
}

/// The value of the CAP `cap` at `t`, `None` before it starts (see [`View`]).
pub fn cap_value_at(cap: &PoolSteps, t: Time) -> Option<u32> {
    if t < cap.start {
        return None;
    }
    let mut from = cap.start;
    for s in &cap.steps {
        let end = from.saturating_add(s.duration);
        if t < end || s.duration == FOREVER {
            return Some(s.nodes);
        }
        from = end;
    }
    None
}

/// A policy's answer.
#[repr(C)]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, StableAbi)]
pub struct Plan {
    /// Pending jobs placed now or later.
    pub placements: RVec<Placement>,
    /// Running jobs to kill (only killable ones).
    pub kills: RVec<Kill>,
    /// Pending jobs to refuse for good (e.g. a missed co-allocation deadline).
    pub rejects: RVec<Reject>,
    /// When to call the policy again even if nothing happens.
    #[serde(default)]
    pub wake_at: ROption<Time>,
    /// Views sent to the jobs' launchers.
    pub views: RVec<View>,
}

impl Plan {
    /// This plan without its expected starts: the placements starting after `now` are dropped
    /// and `wake_at` is brought forward to the earliest of them, so that a driver which comes
    /// back at a plan's expected starts comes back at the same instants.
    pub fn starts_only(mut self, now: Time) -> Plan {
        let mut earliest = self.wake_at.into_option();
        self.placements.retain(|p| {
            if p.start > now {
                earliest = Some(earliest.map_or(p.start, |w| w.min(p.start)));
                false
            } else {
                true
            }
        });
        self.wake_at = earliest.into();
        self
    }
}

/// A policy's parameters, from `--param key=value` or the policy's TOML table, as text.
///
/// A policy reads what it knows with the typed getters and then calls [`Params::finish`], which
/// refuses any key it did not read: a typo in a config must not go unnoticed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Params {
    values: BTreeMap<String, String>,
    #[serde(skip)]
    read: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

/// A parameter a policy cannot accept.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// A key the policy does not know.
    #[error("unknown parameter `{key}`{}", expected_list(.known))]
    Unknown {
        /// The key.
        key: String,
        /// The keys the policy knows.
        known: Vec<String>,
    },
    /// A value that does not parse or is out of range.
    #[error("bad value `{value}` for parameter `{key}`: {reason}")]
    BadValue {
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
}

fn expected_list(known: &[String]) -> String {
    if known.is_empty() {
        " (this policy takes no parameters)".to_string()
    } else {
        format!(" (known: {})", known.join(", "))
    }
}

impl Params {
    /// No parameters.
    pub fn new() -> Self {
        Params::default()
    }

    /// Parameters from `(key, value)` pairs.
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Params {
            values: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            read: Default::default(),
        }
    }

    /// Sets `key` to `value`.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.values.insert(key.into(), value.into());
    }

    /// All `(key, value)` pairs, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The raw text of `key`, marking it as known.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.read.borrow_mut().insert(key.to_string());
        self.values.get(key).map(String::as_str)
    }

    /// `key` parsed as `T`, or `default` when absent.
    pub fn parse_or<T>(&self, key: &str, default: T) -> Result<T, ParamError>
    where
        T: std::str::FromStr,
        T::Err: std::fmt::Display,
    {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v.trim().parse().map_err(|e: T::Err| ParamError::BadValue {
                key: key.to_string(),
                value: v.to_string(),
                reason: e.to_string(),
            }),
        }
    }

    /// `key` as a boolean (`true/false/yes/no/on/off/1/0`), or `default` when absent.
    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, ParamError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                "true" | "yes" | "on" | "1" => Ok(true),
                "false" | "no" | "off" | "0" => Ok(false),
                _ => Err(ParamError::BadValue {
                    key: key.to_string(),
                    value: v.to_string(),
                    reason: "expected true or false".to_string(),
                }),
            },
        }
    }

    /// Refuses every key that no getter asked for.
    pub fn finish(&self) -> Result<(), ParamError> {
        let read = self.read.borrow();
        match self.values.keys().find(|k| !read.contains(*k)) {
            None => Ok(()),
            Some(k) => Err(ParamError::Unknown {
                key: k.clone(),
                known: read.iter().cloned().collect(),
            }),
        }
    }
}

/// How one list of a snapshot (its running jobs, or its queue) differs from the same list in
/// the previous snapshot a driver gave the same policy: the entries that left, by their
/// positions in the previous list, and how many were appended at its end. Every other entry
/// is the same job with the same content, but for a running job's holds clipped by time.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ListChanges {
    /// Positions in the previous list of the entries no longer in it, increasing.
    pub left: Vec<usize>,
    /// Entries appended at the end since.
    pub arrived: usize,
}

impl Clone for ListChanges {
    fn clone(&self) -> Self {
        ListChanges {
            left: self.left.clone(),
            arrived: self.arrived,
        }
    }

    /// Into the kept buffer (a derived `clone_from` allocates a new one): drivers and policies
    /// copy an account at every call.
    fn clone_from(&mut self, source: &Self) {
        self.left.clone_from(&source.left);
        self.arrived = source.arrived;
    }
}

impl ListChanges {
    /// Forgets the account.
    pub fn clear(&mut self) {
        self.left.clear();
        self.arrived = 0;
    }

    /// Follows the account on `list`, a copy of the previous list (its ids, say): drops the
    /// entries that left and appends `arrivals`, the new list's last `arrived` ones. The
    /// account must fit `list` ([`ListChanges::fits`]).
    pub fn apply<T>(&self, list: &mut Vec<T>, arrivals: impl IntoIterator<Item = T>) {
        let mut left = self.left.iter().peekable();
        let mut k = 0;
        list.retain(|_| {
            let gone = left.next_if_eq(&&k).is_some();
            k += 1;
            !gone
        });
        list.extend(arrivals);
    }

    /// Whether the account can describe a list of `before` entries becoming one of `after`:
    /// positions increasing and in range, lengths that add up. (Whether the entries are the
    /// ones said is the teller's word.)
    pub fn fits(&self, before: usize, after: usize) -> bool {
        self.left.windows(2).all(|w| w[0] < w[1])
            && self.left.last().is_none_or(|&p| p < before)
            && before - self.left.len() + self.arrived == after
    }
}

/// What a driver vouches for about the next snapshot ([`Policy::expect_changes`]): how each
/// of its lists differs from the previous snapshot's, when it knows (`None`: not told).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// The running jobs' list.
    pub running: Option<ListChanges>,
    /// The queue.
    pub pending: Option<ListChanges>,
}

/// A scheduling policy.
pub trait Policy {
    /// Answers a snapshot with a plan. Called by the driver whenever something changed, or at
    /// the plan's `wake_at`.
    fn plan(&mut self, snapshot: &Snapshot<'_>) -> Plan;

    /// The plan reduced to what a driver acts on at once: the placements starting at `now`,
    /// the kills, the rejects and the views, with `wake_at` no later than the earliest start
    /// it leaves out (see [`Plan::starts_only`]). A driver that shows no expected starts (esim)
    /// asks for this instead of [`Policy::plan`]: answering a long queue's every expected start
    /// at every call is most of the cost of a replay.
    ///
    /// It must start, kill and reject exactly what `plan` would for the same snapshot and
    /// state; a policy overrides it only to do less work, never to decide otherwise.
    fn plan_starts(&mut self, snapshot: &Snapshot<'_>) -> Plan {
        self.plan(snapshot).starts_only(snapshot.now)
    }

    /// Takes back an earlier answer the driver is done with, so that a later one may reuse its
    /// buffers: drivers call hundreds of thousands of times, and a plan's lists were an
    /// allocation each per call. What the plan holds means nothing; a policy that keeps it
    /// must clear it before use. Drivers need not give plans back, and policies need not keep
    /// them (the default drops it).
    fn recycle(&mut self, plan: Plan) {
        drop(plan);
    }

    /// Takes a driver's word, before a call, for how its snapshot differs from the previous
    /// one this policy was called with ([`Changes`]), so that it need not compare what did not
    /// change (a replay's calls each change one job of lists of dozens to thousands). It holds
    /// for the next call only. Drivers tell only what they vouch for (esim's engine does, through
    /// the plugin boundary to a plugin's policy; batchd does not); a policy must be as correct
    /// when never told, and the validator checks its plans against the snapshot either way.
    fn expect_changes(&mut self, changes: &Changes) {
        let _ = changes;
    }
}

/// A policy that can be built from its name's parameters: what `sched-abi`'s export macro and
/// the drivers' registries need.
pub trait NamedPolicy: Policy + Sized {
    /// The name users type (`cbf`, `easy`, `evolving`…).
    const NAME: &'static str;
    /// Builds the policy, refusing unknown keys and bad values.
    fn from_params(params: &Params) -> Result<Self, ParamError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Queued and running jobs are stored by batchd and sent by the tools as JSON: laying them
    /// out for the plugin boundary must not change a byte of it, and what an older writer left
    /// out still reads as absent. The texts are those of the plain serde types.
    #[test]
    fn snapshot_entries_read_and_write_the_json_they_did_before_their_abi_layout() {
        use crate::request::{
            CoAllocated, Component, Evolving, MoldConfig, Moldable, Rigid, SpeedupModel,
        };
        use abi_stable::std_types::{RNone, RSome};
        let requests = [
            (
                Request::Rigid(Rigid {
                    pool: RSome(PoolId(2)),
                    nodes: 3,
                    walltime: 4,
                }),
                r#"{"Rigid":{"pool":2,"nodes":3,"walltime":4}}"#,
            ),
            (
                Request::rigid(5, 60),
                r#"{"Rigid":{"pool":null,"nodes":5,"walltime":60}}"#,
            ),
            (
                Request::Moldable(Moldable {
                    pool: RNone,
                    configs: crate::rvec![MoldConfig {
                        nodes: 2,
                        walltime: 9
                    }],
                    model: RSome(SpeedupModel::Amdahl {
                        work: 100,
                        serial: 0.25,
                    }),
                    min_nodes: 1,
                    max_nodes: 8,
                    weight: 1.5,
                }),
                r#"{"Moldable":{"pool":null,"configs":[{"nodes":2,"walltime":9}],"model":{"Amdahl":{"work":100,"serial":0.25}},"min_nodes":1,"max_nodes":8,"weight":1.5}}"#,
            ),
            (
                Request::Moldable(Moldable {
                    pool: RSome(PoolId(0)),
                    configs: RVec::new(),
                    model: RSome(SpeedupModel::Linear { work: 7 }),
                    min_nodes: 1,
                    max_nodes: 2,
                    weight: 1.0,
                }),
                r#"{"Moldable":{"pool":0,"configs":[],"model":{"Linear":{"work":7}},"min_nodes":1,"max_nodes":2,"weight":1.0}}"#,
            ),
            (
                Request::Evolving(Evolving {
                    pool: RSome(PoolId(1)),
                    steps: crate::rvec![Step::new(5, 1), Step::new(7, 3)],
                }),
                r#"{"Evolving":{"pool":1,"steps":[{"duration":5,"nodes":1},{"duration":7,"nodes":3}]}}"#,
            ),
            (
                Request::CoAllocated(CoAllocated {
                    components: crate::rvec![
                        Component {
                            nodes: 2,
                            pool: RNone
                        },
                        Component {
                            nodes: 4,
                            pool: RSome(PoolId(0))
                        },
                    ],
                    walltime: 60,
                    deadline: RSome(1000),
                }),
                r#"{"CoAllocated":{"components":[{"nodes":2,"pool":null},{"nodes":4,"pool":0}],"walltime":60,"deadline":1000}}"#,
            ),
            (
                Request::CoAllocated(CoAllocated {
                    components: RVec::new(),
                    walltime: 60,
                    deadline: RNone,
                }),
                r#"{"CoAllocated":{"components":[],"walltime":60,"deadline":null}}"#,
            ),
        ];
        for (request, json) in &requests {
            assert_eq!(&serde_json::to_string(request).unwrap(), json);
            assert_eq!(&serde_json::from_str::<Request>(json).unwrap(), request);
        }
        // Optional fields left out read as absent, as they did when they were `Option`s.
        let short: Request =
            serde_json::from_str(r#"{"Rigid":{"nodes":5,"walltime":60}}"#).unwrap();
        assert_eq!(short, Request::rigid(5, 60));
        let short: Request =
            serde_json::from_str(r#"{"CoAllocated":{"components":[{"nodes":2}],"walltime":60}}"#)
                .unwrap();
        let Request::CoAllocated(c) = short else {
            panic!("not co-allocated: {short:?}");
        };
        assert_eq!((c.components[0].pool, c.deadline), (RNone, RNone));

        let pending = Pending {
            id: JobId(7),
            user: 1,
            submit: 2,
            earliest_start: 3,
            priority: -4,
            request: requests[0].0.clone(),
            wants_view: true,
            claimed: Default::default(),
        };
        let json = r#"{"id":7,"user":1,"submit":2,"earliest_start":3,"priority":-4,"request":{"Rigid":{"pool":2,"nodes":3,"walltime":4}},"wants_view":true}"#;
        assert_eq!(serde_json::to_string(&pending).unwrap(), json);
        assert_eq!(serde_json::from_str::<Pending>(json).unwrap(), pending);
        let running = Running {
            id: JobId(8),
            user: 1,
            request: requests[4].0.clone(),
            shape: Shape::rigid(PoolId(1), 3, 12),
            start: 5,
            holds: crate::rvec![PoolSteps::flat(PoolId(1), 5, 17, 3)],
            killable: true,
        };
        let json = r#"{"id":8,"user":1,"request":{"Evolving":{"pool":1,"steps":[{"duration":5,"nodes":1},{"duration":7,"nodes":3}]}},"shape":{"Rigid":{"pool":1,"nodes":3,"walltime":12}},"start":5,"holds":[{"pool":1,"start":5,"steps":[{"duration":12,"nodes":3}]}],"killable":true}"#;
        assert_eq!(serde_json::to_string(&running).unwrap(), json);
        assert_eq!(serde_json::from_str::<Running>(json).unwrap(), running);
        let pool = Pool {
            id: PoolId(1),
            name: "batch".into(),
            nodes: 16,
        };
        let json = r#"{"id":1,"name":"batch","nodes":16}"#;
        assert_eq!(serde_json::to_string(&pool).unwrap(), json);
        assert_eq!(serde_json::from_str::<Pool>(json).unwrap(), pool);
    }

    /// A plan's JSON is what it was with `Vec`, `Option` and `String` (batchd's answers, esim's
    /// outputs): lists, `null` or a number, text; an absent optional field reads as none.
    #[test]
    fn a_plan_reads_and_writes_the_json_it_did_before_its_abi_layout() {
        let plan = Plan {
            placements: crate::rvec![Placement {
                job: JobId(7),
                start: 10,
                shape: Shape::CoAllocated {
                    pools: crate::rvec![PoolId(0), PoolId(2)],
                },
                claim_from: crate::RSome(5),
            }],
            rejects: crate::rvec![
                Reject::other(JobId(8), "why"),
                Reject::new(JobId(9), RejectKind::DeadlineMissed, "late")
            ],
            kills: crate::rvec![Kill::for_job(JobId(3), JobId(9), "room")],
            ..Plan::default()
        };
        let text = serde_json::to_string(&plan).expect("a plan serialises");
        assert_eq!(
            text,
            r#"{"placements":[{"job":7,"start":10,"shape":{"CoAllocated":{"pools":[0,2]}},"claim_from":5}],"kills":[{"job":3,"reason":"room [for job 9]","for_job":9}],"rejects":[{"job":8,"reason":"why"},{"job":9,"reason":"late","kind":"DeadlineMissed"}],"wake_at":null,"views":[]}"#
        );
        assert_eq!(serde_json::from_str::<Plan>(&text).ok(), Some(plan));
        let bare: Placement = serde_json::from_str(
            r#"{"job":1,"start":2,"shape":{"Rigid":{"pool":0,"nodes":3,"walltime":4}}}"#,
        )
        .expect("claim_from may be absent");
        assert_eq!(bare.claim_from, crate::RNone);
        let bare: Plan =
            serde_json::from_str(r#"{"placements":[],"kills":[],"rejects":[],"views":[]}"#)
                .expect("wake_at may be absent");
        assert_eq!(bare.wake_at, crate::RNone);
    }

    #[test]
    fn an_account_applied_to_the_previous_list_gives_the_new_one() {
        let c = ListChanges {
            left: vec![0, 2, 3],
            arrived: 2,
        };
        assert!(c.fits(5, 4));
        let mut list = vec!['a', 'b', 'c', 'd', 'e'];
        c.apply(&mut list, ['f', 'g']);
        assert_eq!(list, ['b', 'e', 'f', 'g']);
        assert!(!c.fits(3, 2), "a position past the list");
        assert!(!ListChanges {
            left: vec![1, 1],
            arrived: 0
        }
        .fits(3, 1));
        let mut kept = ListChanges::default();
        kept.clone_from(&c);
        assert_eq!(kept, c);
    }

    #[test]
    fn params_refuse_unknown_keys_and_name_them() {
        let p = Params::from_pairs([("expand_limit", "2"), ("compakt", "true")]);
        assert_eq!(p.parse_or("expand_limit", 1.0f64).unwrap(), 2.0);
        let err = p.finish().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown parameter `compakt` (known: expand_limit)"
        );
    }

    #[test]
    fn kill_reasons_name_their_beneficiary() {
        let r = kill_reason_for(JobId(42), "preempted at a co-allocated job's deadline (GP)");
        assert_eq!(
            r,
            "preempted at a co-allocated job's deadline (GP) [for job 42]"
        );
    }

    #[test]
    fn clipping_keeps_what_is_held_after_now() {
        let mut h = PoolSteps {
            pool: PoolId(0),
            start: 10,
            steps: crate::rvec![Step::new(5, 2), Step::new(10, 4), Step::new(3, 1)],
        };
        let later = h.clone();
        assert!(h.clone().clip_to(10) && later.clone().clip_to(3));
        assert!(h.clip_to(17));
        assert_eq!(h.start, 17);
        assert_eq!(h.steps, vec![Step::new(8, 4), Step::new(3, 1)]);
        assert_eq!(h.end(), later.end());
        assert!(!h.clip_to(28));
        assert!(h.steps.is_empty());
    }

    #[test]
    fn params_bad_value_names_key() {
        let p = Params::from_pairs([("compact", "maybe")]);
        let err = p.bool_or("compact", false).unwrap_err();
        assert!(err.to_string().contains("`compact`"), "{err}");
    }
}
