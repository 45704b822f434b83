//! Jobs on the wire: the [`JobSpec`] a tool submits, the [`JobInfo`] the daemon reports, and
//! the vocabulary both share (states, pending reasons, dependencies).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::shape::{MoldConfig, SpeedupModel, Step};
use crate::EpochMs;

/// Defines [`JobInfo`] and [`JobInfoRef`] from one field list: each field of the borrowed twin
/// has the [`field::Field::Ref`] type of the owned one, the same name, docs and serde rules,
/// so the two serialise alike and cannot drift apart.
macro_rules! job_info {
    (
        $(#[$smeta:meta])*
        pub struct JobInfo {
            $( $(#[$fmeta:meta])* pub $f:ident : $t:ty, )*
        }
    ) => {
        $(#[$smeta])*
        pub struct JobInfo {
            $( $(#[$fmeta])* pub $f: $t, )*
        }

        /// A [`JobInfo`] borrowed from whatever holds its data: the daemon serialises a
        /// listing of 100,000 jobs from these straight into frames (building owned `JobInfo`s
        /// first cost more than the JSON itself: two string clones per job and 45 MB of fresh
        /// pages). Its JSON is a `JobInfo`'s.
        #[derive(Clone, Debug, Serialize)]
        pub struct JobInfoRef<'a> {
            $( $(#[$fmeta])* pub $f: <$t as field::Field>::Ref<'a>, )*
        }

        impl JobInfoRef<'_> {
            /// The owned [`JobInfo`] this serialises as.
            pub fn to_info(&self) -> JobInfo {
                JobInfo {
                    $( $f: <$t as field::Field>::own(&self.$f), )*
                }
            }
        }
    };
}

/// How each type a [`JobInfo`] field has is borrowed in a [`JobInfoRef`].
pub mod field {
    use std::borrow::Cow;

    use serde::Serialize;

    use super::{Dependency, JobShape, JobState, MoldConfig, PendingReason, Step, StepStatus};

    /// A field type and its borrowed form.
    pub trait Field: Sized {
        /// The borrowed form; it serialises as `Self` does.
        type Ref<'a>: Serialize + Clone + std::fmt::Debug
        where
            Self: 'a;
        /// Back to the owned form.
        fn own(r: &Self::Ref<'_>) -> Self;
    }

    /// Types lent by value (small, `Clone`).
    macro_rules! by_value {
        ($($t:ty),*) => {$(
            impl Field for $t {
                type Ref<'a> = $t;
                fn own(r: &$t) -> $t {
                    r.clone()
                }
            }
        )*};
    }
    by_value!(
        u64,
        u32,
        i64,
        i32,
        bool,
        JobState,
        PendingReason,
        StepStatus,
        MoldConfig,
        crate::array::ArrayTask,
        crate::signal::JobSignal
    );

    impl Field for String {
        type Ref<'a> = &'a str;
        fn own(r: &&str) -> String {
            (*r).to_owned()
        }
    }

    impl Field for JobShape {
        type Ref<'a> = &'a JobShape;
        fn own(r: &&JobShape) -> JobShape {
            (*r).clone()
        }
    }

    /// Lists lent as slices of what the daemon holds.
    macro_rules! by_slice {
        ($($t:ty),*) => {$(
            impl Field for Vec<$t> {
                type Ref<'a> = &'a [$t];
                fn own(r: &&[$t]) -> Vec<$t> {
                    r.to_vec()
                }
            }
        )*};
    }
    by_slice!(String, Dependency);

    /// Steps are lent converted when need be: the daemon holds the scheduler's own step type,
    /// not the protocol's.
    impl Field for Vec<Step> {
        type Ref<'a> = Cow<'a, [Step]>;
        fn own(r: &Cow<'_, [Step]>) -> Vec<Step> {
            r.to_vec()
        }
    }

    impl<T: Field> Field for Option<T> {
        type Ref<'a>
            = Option<T::Ref<'a>>
        where
            T: 'a;
        fn own(r: &Option<T::Ref<'_>>) -> Option<T> {
            r.as_ref().map(T::own)
        }
    }

    /// `skip_serializing_if` for strings and lists, owned or borrowed.
    pub fn is_empty<T: IsEmpty + ?Sized>(v: &T) -> bool {
        IsEmpty::is_empty(v)
    }

    /// What [`is_empty()`] can ask.
    pub trait IsEmpty {
        /// No character, no element.
        fn is_empty(&self) -> bool;
    }

    impl IsEmpty for String {
        fn is_empty(&self) -> bool {
            str::is_empty(self)
        }
    }

    impl IsEmpty for &str {
        fn is_empty(&self) -> bool {
            str::is_empty(self)
        }
    }

    impl<T> IsEmpty for Vec<T> {
        fn is_empty(&self) -> bool {
            <[T]>::is_empty(self)
        }
    }

    impl<T> IsEmpty for &[T] {
        fn is_empty(&self) -> bool {
            <[T]>::is_empty(self)
        }
    }
}

/// A job's state, with Slurm's names and two-letter codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobState {
    /// Waiting in the queue (`PD`).
    Pending,
    /// Holding nodes and running (`R`).
    Running,
    /// Told to stop (walltime or cancel), waiting for its processes to go (`CG`).
    Completing,
    /// Ended with exit code 0 (`CD`).
    Completed,
    /// Ended with a non-zero exit code or by a signal of its own (`F`).
    Failed,
    /// Cancelled by a user or refused by the policy (`CA`).
    Cancelled,
    /// Killed at its time limit (`TO`).
    Timeout,
    /// Killed by the policy to make room for another job (`PR`): a local job under the RPP's
    /// global priority (GP), at a co-allocated job's start deadline. The reason is in `detail`.
    Preempted,
}

impl JobState {
    /// Every state, in display order.
    pub const ALL: [JobState; 8] = [
        JobState::Pending,
        JobState::Running,
        JobState::Completing,
        JobState::Completed,
        JobState::Failed,
        JobState::Cancelled,
        JobState::Timeout,
        JobState::Preempted,
    ];

    /// Slurm's two-letter code (`PD`, `R`, `CG`, `CD`, `F`, `CA`, `TO`, `PR`).
    pub fn code(self) -> &'static str {
        match self {
            JobState::Pending => "PD",
            JobState::Running => "R",
            JobState::Completing => "CG",
            JobState::Completed => "CD",
            JobState::Failed => "F",
            JobState::Cancelled => "CA",
            JobState::Timeout => "TO",
            JobState::Preempted => "PR",
        }
    }

    /// Slurm's long name (`PENDING`, `RUNNING`, …).
    pub fn name(self) -> &'static str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Running => "RUNNING",
            JobState::Completing => "COMPLETING",
            JobState::Completed => "COMPLETED",
            JobState::Failed => "FAILED",
            JobState::Cancelled => "CANCELLED",
            JobState::Timeout => "TIMEOUT",
            JobState::Preempted => "PREEMPTED",
        }
    }

    /// Whether the job is over (accounting material).
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            JobState::Completed
                | JobState::Failed
                | JobState::Cancelled
                | JobState::Timeout
                | JobState::Preempted
        )
    }

    /// Whether the job holds nodes.
    pub fn is_active(self) -> bool {
        matches!(self, JobState::Running | JobState::Completing)
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A state name or code that is not one of ours.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown job state `{0}` (expected one of PENDING/PD, RUNNING/R, COMPLETING/CG, COMPLETED/CD, FAILED/F, CANCELLED/CA, TIMEOUT/TO, PREEMPTED/PR)")]
pub struct UnknownState(pub String);

impl FromStr for JobState {
    type Err = UnknownState;
    /// Accepts the long name or the code, in any case (`pd`, `Running`, `CA`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let up = s.trim().to_ascii_uppercase();
        JobState::ALL
            .into_iter()
            .find(|st| {
                st.code() == up
                    || st.name() == up
                    || (up == "CANCELED" && *st == JobState::Cancelled)
            })
            .ok_or_else(|| UnknownState(s.to_string()))
    }
}

/// Why a pending job is not running, with Slurm's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PendingReason {
    /// Other jobs come first.
    Priority,
    /// Not enough free nodes yet.
    Resources,
    /// Waits for other jobs.
    Dependency,
    /// Its `--begin` time has not come.
    BeginTime,
    /// Held by its owner or root.
    Held,
    /// A dependency that can never be satisfied (e.g. `afterok` on a job that failed).
    DependencyNeverSatisfied,
    /// A task of a job array whose throttle (`--array ...%N`) is reached.
    JobArrayTaskLimit,
    /// A co-allocated job whose nodes are claimed (reserved, idle) until its start deadline.
    Reserved,
}

impl PendingReason {
    /// The name shown in `equeue`'s reason column.
    pub fn name(self) -> &'static str {
        match self {
            PendingReason::Priority => "Priority",
            PendingReason::Resources => "Resources",
            PendingReason::Dependency => "Dependency",
            PendingReason::BeginTime => "BeginTime",
            PendingReason::Held => "Held",
            PendingReason::DependencyNeverSatisfied => "DependencyNeverSatisfied",
            PendingReason::JobArrayTaskLimit => "JobArrayTaskLimit",
            PendingReason::Reserved => "Reserved",
        }
    }
}

impl fmt::Display for PendingReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The kinds of job dependency Slurm's `--dependency` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DepKind {
    /// The other job has started (or ended).
    After,
    /// The other job has ended, however.
    AfterAny,
    /// The other job ended COMPLETED.
    AfterOk,
    /// The other job ended in any state but COMPLETED.
    AfterNotOk,
}

impl DepKind {
    /// The keyword in `--dependency`.
    pub fn keyword(self) -> &'static str {
        match self {
            DepKind::After => "after",
            DepKind::AfterAny => "afterany",
            DepKind::AfterOk => "afterok",
            DepKind::AfterNotOk => "afternotok",
        }
    }
}

/// One dependency of a job; a job runs when all of them hold.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dependency {
    /// On another job.
    On {
        /// The relation.
        kind: DepKind,
        /// The other job.
        job: u64,
    },
    /// No other job of the same name and user may run at the same time.
    Singleton,
}

impl Dependency {
    /// Parses Slurm's `--dependency` value: `afterok:12:13,afterany:9,singleton`. Every listed
    /// condition must hold (Slurm's `?` "any of" separator is refused, not guessed).
    pub fn parse_list(s: &str) -> Result<Vec<Dependency>, SpecError> {
        let bad = |why: &str| SpecError::Dependency(format!("`{s}`: {why}"));
        if s.contains('?') {
            return Err(bad("the `?` (any of) separator is not supported; use `,`"));
        }
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(bad("empty condition"));
            }
            if part.eq_ignore_ascii_case("singleton") {
                out.push(Dependency::Singleton);
                continue;
            }
            let mut it = part.split(':');
            let kw = it.next().unwrap_or_default().to_ascii_lowercase();
            let kind = match kw.as_str() {
                "after" => DepKind::After,
                "afterany" => DepKind::AfterAny,
                "afterok" => DepKind::AfterOk,
                "afternotok" => DepKind::AfterNotOk,
                _ => {
                    return Err(bad(&format!(
                        "unknown kind `{kw}` (expected after, afterany, afterok, afternotok or singleton)"
                    )))
                }
            };
            let mut n = 0;
            for id in it {
                // Slurm allows `after:ID+minutes`; we do not, and say so.
                let job: u64 = id
                    .trim()
                    .parse()
                    .map_err(|_| bad(&format!("`{id}` is not a job id")))?;
                if job == 0 {
                    return Err(bad("job ids start at 1"));
                }
                out.push(Dependency::On { kind, job });
                n += 1;
            }
            if n == 0 {
                return Err(bad(&format!(
                    "`{kw}` needs at least one job id (`{kw}:ID`)"
                )));
            }
        }
        Ok(out)
    }
}

impl fmt::Display for Dependency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dependency::On { kind, job } => write!(f, "{}:{job}", kind.keyword()),
            Dependency::Singleton => f.write_str("singleton"),
        }
    }
}

/// The shape a job asks for: rigid, an evolving profile, or moldable configurations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobShape {
    /// `nodes` nodes for at most `time_limit` ms.
    Rigid {
        /// Node count.
        nodes: u32,
        /// Time limit in ms; [`TIME_UNLIMITED`] (0) in a request asks for the pool's
        /// `max_time`.
        time_limit: u64,
    },
    /// An evolving profile (`--profile 500:5,3600:10`): steps of (duration ms, nodes).
    Evolving {
        /// The steps, in order.
        steps: Vec<Step>,
    },
    /// Moldable configurations (`--moldable 4:60,8:35`): (nodes, walltime ms) choices, and/or
    /// a run-time model over a range of node counts (`--moldable-model amdahl:WORK:SERIAL
    /// --nodes-range 1-32`). The policy picks one before the start.
    Moldable {
        /// The configurations offered (may be empty when `model` is given).
        configs: Vec<MoldConfig>,
        /// A run-time model valid over a range of node counts; an explicit configuration of
        /// the same node count wins over it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<MoldModel>,
        /// Weight ω of the job in the weighted sum of completion times (Dutot & Eyraud; the
        /// `bicriteria` policy uses it); `None` is 1.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        weight: Option<f64>,
    },
    /// A co-allocated (global) job (`--components 16,16,8`): components of these node counts,
    /// placed by the policy on pools (several may share one), all started together and run
    /// for at most `time_limit` ms. Its start deadline is [`JobSpec::deadline`].
    #[serde(rename = "coallocated")]
    CoAllocated {
        /// Node count of each component.
        components: Vec<u32>,
        /// Time limit in ms, the same for every component.
        time_limit: u64,
    },
    /// A CooRM launcher session's request (Klein & Pérez, HPCC 2011, §III-B): nodes on each
    /// of several pools, all for `time_limit` ms. Created by [`crate::SubscribeRequest`], never
    /// submitted; no pools means the launcher has not sent its request yet.
    Session {
        /// Nodes per pool, each pool at most once.
        pools: Vec<PoolNodes>,
        /// The allocation's duration in ms (0 while there is no request).
        time_limit: u64,
    },
}

/// Nodes of one pool, by name (a launcher session's request and its start).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolNodes {
    /// The pool.
    pub pool: String,
    /// Node count.
    pub nodes: u32,
}

/// A moldable job's run-time model p(k), valid for `min_nodes ≤ k ≤ max_nodes`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MoldModel {
    /// The model; its times are in ms.
    pub model: SpeedupModel,
    /// Smallest node count offered.
    pub min_nodes: u32,
    /// Largest node count offered.
    pub max_nodes: u32,
}

/// The widest node range a moldable model may offer: [`MAX_MOLDABLE_CHOICES`], the bound of
/// its range and explicit configurations together.
pub const MAX_MODEL_NODES: u32 = MAX_MOLDABLE_CHOICES as u32;

/// The largest weight a moldable job may have (weights are relative; this keeps weighted sums
/// of completion times finite and meaningful).
pub const MAX_WEIGHT: f64 = 1e6;

impl MoldModel {
    /// The longest run time the model allows: at its smallest node count, since p(k) does not
    /// grow with k.
    pub fn longest(&self) -> u64 {
        self.model.walltime(self.min_nodes)
    }

    /// How many node counts the range offers, `max − min + 1` (0 for a backwards range).
    pub fn width(&self) -> u64 {
        (u64::from(self.max_nodes) + 1).saturating_sub(u64::from(self.min_nodes))
    }

    fn validate(&self) -> Result<(), SpecError> {
        let bad = |m: String| Err(SpecError::Shape(m));
        if self.min_nodes == 0 || self.min_nodes > self.max_nodes {
            return bad(format!(
                "moldable node range {}-{} must be MIN-MAX with 1 <= MIN <= MAX",
                self.min_nodes, self.max_nodes
            ));
        }
        if self.max_nodes - self.min_nodes >= MAX_MODEL_NODES {
            return bad(format!(
                "moldable node range {}-{} offers more than {MAX_MODEL_NODES} node counts",
                self.min_nodes, self.max_nodes
            ));
        }
        let work = match self.model {
            SpeedupModel::Amdahl { work, serial } => {
                if !(0.0..=1.0).contains(&serial) {
                    return bad(format!(
                        "Amdahl serial fraction {serial} must be between 0 and 1"
                    ));
                }
                work
            }
            SpeedupModel::Linear { work } => work,
        };
        if work == 0 {
            return bad("a moldable model's work must be positive".into());
        }
        Ok(())
    }
}

impl JobShape {
    /// The most nodes the shape may hold at once.
    pub fn max_nodes(&self) -> u32 {
        match self {
            JobShape::Rigid { nodes, .. } => *nodes,
            JobShape::Evolving { steps } => crate::shape::max_nodes(steps),
            JobShape::Moldable { configs, model, .. } => configs
                .iter()
                .map(|c| c.nodes)
                .chain(model.map(|m| m.max_nodes))
                .max()
                .unwrap_or(0),
            JobShape::CoAllocated { components, .. } => {
                components.iter().fold(0u32, |t, &n| t.saturating_add(n))
            }
            JobShape::Session { pools, .. } => {
                pools.iter().fold(0u32, |t, p| t.saturating_add(p.nodes))
            }
        }
    }

    /// The fewest nodes the shape can run with: a moldable job's smallest configuration; the
    /// most nodes it holds at once for any other.
    pub fn least_nodes(&self) -> u32 {
        match self {
            JobShape::Moldable { configs, model, .. } => configs
                .iter()
                .map(|c| c.nodes)
                .chain(model.map(|m| m.min_nodes))
                .min()
                .unwrap_or(0),
            _ => self.max_nodes(),
        }
    }

    /// The longest the shape may run, in ms.
    pub fn time_limit(&self) -> u64 {
        match self {
            JobShape::Rigid { time_limit, .. } | JobShape::Session { time_limit, .. } => {
                *time_limit
            }
            JobShape::Evolving { steps } => crate::shape::total_duration(steps),
            JobShape::Moldable { configs, model, .. } => configs
                .iter()
                .map(|c| c.walltime)
                .chain(model.map(|m| m.longest()))
                .max()
                .unwrap_or(0),
            JobShape::CoAllocated { time_limit, .. } => *time_limit,
        }
    }

    /// Checks every duration of the shape against `max` ms (`by` names the bound).
    fn check_time(&self, max: u64, by: &str) -> Result<(), SpecError> {
        let longest = match self {
            JobShape::Rigid { time_limit, .. }
            | JobShape::CoAllocated { time_limit, .. }
            | JobShape::Session { time_limit, .. } => *time_limit,
            // Summed without overflow: a sum past u64::MAX is past any bound.
            JobShape::Evolving { steps } => {
                steps.iter().fold(0u64, |t, s| t.saturating_add(s.duration))
            }
            JobShape::Moldable { .. } => self.time_limit(),
        };
        if longest > max {
            return Err(SpecError::Bound {
                what: "time limit",
                reason: format!(
                    "{} is longer than {by}, {}",
                    format_limit(longest),
                    format_limit(max)
                ),
            });
        }
        Ok(())
    }

    /// Checks node counts and durations are positive, lists non-empty, and durations at most
    /// [`MAX_TIME_LIMIT`].
    pub fn validate(&self) -> Result<(), SpecError> {
        match self {
            // A time limit of TIME_UNLIMITED (0) asks for the pool's max_time, resolved by
            // batchd; the upper bound is checked below.
            JobShape::Rigid { nodes, .. } => {
                if *nodes == 0 {
                    return Err(SpecError::Shape("a job needs at least one node".into()));
                }
            }
            JobShape::Evolving { steps } => {
                if steps.is_empty() {
                    return Err(SpecError::Shape(
                        "an evolving profile needs at least one step".into(),
                    ));
                }
                if steps.len() > MAX_STEPS {
                    return Err(SpecError::Shape(format!(
                        "an evolving profile of {} steps; at most {MAX_STEPS} are accepted",
                        steps.len()
                    )));
                }
                if let Some(s) = steps.iter().find(|s| s.nodes == 0 || s.duration == 0) {
                    return Err(SpecError::Shape(format!(
                        "evolving step {}:{} must have a positive duration and node count",
                        s.duration, s.nodes
                    )));
                }
            }
            JobShape::Moldable {
                configs,
                model,
                weight,
            } => {
                if configs.is_empty() && model.is_none() {
                    return Err(SpecError::Shape(
                        "a moldable job needs at least one configuration".into(),
                    ));
                }
                if let Some(m) = model {
                    m.validate()?;
                }
                let choices = configs.len() as u64 + model.map_or(0, |m| m.width());
                if choices > MAX_MOLDABLE_CHOICES {
                    return Err(SpecError::Shape(format!(
                        "a moldable job offering {choices} node counts (configurations and \
                         --nodes-range together); at most {MAX_MOLDABLE_CHOICES} are accepted"
                    )));
                }
                if let Some(w) = weight {
                    if !(*w > 0.0 && *w <= MAX_WEIGHT) {
                        return Err(SpecError::Shape(format!(
                            "weight {w} must be positive and at most {MAX_WEIGHT}"
                        )));
                    }
                }
                if let Some(c) = configs.iter().find(|c| c.nodes == 0 || c.walltime == 0) {
                    return Err(SpecError::Shape(format!(
                        "moldable configuration {}:{} must have a positive node count and time",
                        c.nodes, c.walltime
                    )));
                }
            }
            JobShape::CoAllocated {
                components,
                time_limit,
            } => {
                if components.is_empty() || components.len() > MAX_COMPONENTS {
                    return Err(SpecError::Shape(format!(
                        "a co-allocated job needs 1 to {MAX_COMPONENTS} components"
                    )));
                }
                if components.contains(&0) {
                    return Err(SpecError::Shape(
                        "every component needs at least one node".into(),
                    ));
                }
                // Summed as u64: policies add the components as u32.
                let total: u64 = components.iter().map(|&n| u64::from(n)).sum();
                if total > u64::from(u32::MAX) {
                    return Err(SpecError::Shape(format!(
                        "components of {total} nodes in all; at most {} are accepted",
                        u32::MAX
                    )));
                }
                if *time_limit == 0 {
                    return Err(SpecError::Shape(
                        "a co-allocated job needs a time limit (-t)".into(),
                    ));
                }
            }
            JobShape::Session { pools, time_limit } => {
                if pools.len() > MAX_COMPONENTS {
                    return Err(SpecError::Shape(format!(
                        "a request naming {} pools; at most {MAX_COMPONENTS} are accepted",
                        pools.len()
                    )));
                }
                // Summed as u64: the counts are u32 each, and their sum must not wrap.
                let total: u64 = pools.iter().map(|p| u64::from(p.nodes)).sum();
                if total > u64::from(u32::MAX) {
                    return Err(SpecError::Shape(format!(
                        "a request of {total} nodes in all; at most {} are accepted",
                        u32::MAX
                    )));
                }
                if let Some(p) = pools.iter().find(|p| p.pool.len() > MAX_WORD) {
                    return Err(SpecError::Shape(format!(
                        "a pool name of {} bytes; at most {MAX_WORD} are accepted",
                        p.pool.len()
                    )));
                }
                if let Some(p) = pools.iter().find(|p| p.nodes == 0) {
                    return Err(SpecError::Shape(format!(
                        "a request needs at least one node on each pool it names ({})",
                        p.pool
                    )));
                }
                if let Some((i, p)) = pools
                    .iter()
                    .enumerate()
                    .find(|(i, p)| pools[..*i].iter().any(|q| q.pool == p.pool))
                {
                    return Err(SpecError::Shape(format!(
                        "pool {} is named twice in the request (entry {})",
                        p.pool,
                        i + 1
                    )));
                }
                if !pools.is_empty() && *time_limit == 0 {
                    return Err(SpecError::Shape(
                        "a request needs a positive duration".into(),
                    ));
                }
            }
        }
        self.check_time(MAX_TIME_LIMIT, "the longest allowed")
    }
}

/// Most components a co-allocated job may have (KOALA's jobs have a handful; a bound keeps a
/// typo from building a plan of millions of components), and most pools a CooRM session's
/// request may name.
pub const MAX_COMPONENTS: usize = 64;

/// Longest job name, in bytes.
pub const MAX_NAME: usize = 1024;

/// Longest path (working directory, output patterns), in bytes: Linux's `PATH_MAX` (4,096)
/// less its terminating NUL.
pub const MAX_PATH: usize = 4095;

/// Longest word (pool name, account, QOS, user name in a filter), in bytes.
pub const MAX_WORD: usize = 256;

/// Most arguments a job's script may be given.
pub const MAX_ARGS: usize = 4096;

/// Most environment variables a job may be given.
pub const MAX_ENV_VARS: usize = 4096;

/// Longest argument, and longest `NAME=value` of the environment, in bytes: Linux's
/// `MAX_ARG_STRLEN` (128 KiB) less the NUL; `execve` refuses a longer one.
pub const MAX_ARG_LEN: usize = 128 * 1024 - 1;

/// Most bytes of arguments and environment together (each string with its NUL, as `execve`
/// counts them): half of Linux's default `ARG_MAX` (2 MiB, a quarter of the 8 MiB stack), the
/// other half left to the variables batchd adds and to the pointers.
pub const MAX_EXEC_BYTES: usize = 1024 * 1024;

/// Most dependencies one job may have: each is looked up for every pending job at every policy
/// run.
pub const MAX_DEPENDENCIES: usize = 256;

/// Most steps an evolving profile may have: ten times the papers' largest profiles. The
/// evolving policy's fit may slide a profile over the others' one start at a time, refitting
/// its steps at each, its cost growing as the square of the steps: a queue of 100 such jobs
/// plans in 0.02 s at this bound, 1.6 s at 700 steps (docs/batchd.md, "Limits of a job",
/// `cargo bench -p esim --bench bounds`).
pub const MAX_STEPS: usize = 100;

/// Most node counts a moldable job may offer, its explicit configurations and its
/// `--nodes-range` together: a policy weighs every one at each fit, so a plan's cost grows with
/// their number (100 jobs: 0.025 s at this bound, 0.46 s at 65,536; docs/batchd.md, "Limits of
/// a job"). batchd also clips a range to the largest pool the job may use.
pub const MAX_MOLDABLE_CHOICES: u64 = 4096;

/// The longest time limit a job may have, in ms: 365 days. A pool's `max_time` may lower it,
/// never raise it; `-t UNLIMITED` means the pool's `max_time`, this when the pool has none.
/// Planners need finite walltimes (a reservation behind a job of u64::MAX ms never comes), and a
/// year is longer than any batch job while far from overflowing instants.
pub const MAX_TIME_LIMIT: u64 = 365 * DAY_MS;

/// How far ahead `--begin` may be, in ms from the submission: 365 days. A later begin is
/// almost surely a typo (`now+99999999999999`), and it would hold a queue slot for ever.
pub const MAX_BEGIN_AHEAD: u64 = 365 * DAY_MS;

/// The lowest priority a job may have.
pub const MIN_PRIORITY: i64 = -1_000_000;

/// The highest priority a job may have (only root may give a positive one).
pub const MAX_PRIORITY: i64 = 1_000_000;

/// A rigid job's `time_limit` on the wire meaning `UNLIMITED` (Slurm's `--time=0`): the
/// daemon replaces it with the pool's `max_time` (see [`JobSpec::resolve_unlimited`]); no job is
/// stored or listed with it.
pub const TIME_UNLIMITED: u64 = 0;

const DAY_MS: u64 = 86_400_000;

/// A duration in ms as Slurm writes a time limit, `D-HH:MM:SS` (`HH:MM:SS` under a day),
/// milliseconds rounded up to the second.
pub fn format_limit(ms: u64) -> String {
    let t = ms.div_ceil(1000);
    let (d, h, m, s) = (t / 86_400, t / 3600 % 24, t / 60 % 60, t % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// A submission's content that cannot be accepted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// Nodes, time or profile out of range.
    #[error("invalid request: {0}")]
    Shape(String),
    /// A bad `--dependency`.
    #[error("invalid dependency {0}")]
    Dependency(String),
    /// A number out of its documented range.
    #[error("invalid {what}: {reason}")]
    Bound {
        /// What the number is (`time limit`, `begin time`, `priority`).
        what: &'static str,
        /// Its value and its bound.
        reason: String,
    },
    /// Any other field.
    #[error("invalid {field}: {reason}")]
    Field {
        /// The field.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// Everything a job needs to be queued and run, as `esubmit` sends it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    /// The script's text (a `--wrap` command arrives as a small `#!/bin/sh` script).
    pub script: String,
    /// Arguments passed to the script.
    #[serde(default)]
    pub args: Vec<String>,
    /// Job name (default: the script's file name, or `wrap`).
    pub name: String,
    /// What it asks for.
    pub shape: JobShape,
    /// Pool by name; `None` lets the policy choose.
    #[serde(default)]
    pub pool: Option<String>,
    /// Earliest start, ms since the epoch (`--begin`).
    #[serde(default)]
    pub begin: Option<EpochMs>,
    /// Submitted held (`-H`): it waits for `econtrol release`.
    #[serde(default)]
    pub hold: bool,
    /// Conditions on other jobs; all must hold.
    #[serde(default)]
    pub dependencies: Vec<Dependency>,
    /// Pattern of the stdout file (sbatch's escapes, see [`crate::pattern`]), relative to
    /// `work_dir`; default
    /// `esched-%j.out`.
    #[serde(default)]
    pub stdout: Option<String>,
    /// Pattern of the stderr file; default: the stdout file.
    #[serde(default)]
    pub stderr: Option<String>,
    /// The submitter's environment, passed to the job.
    #[serde(default)]
    pub environment: Vec<(String, String)>,
    /// Directory the job runs in and patterns are relative to (absolute).
    pub work_dir: String,
    /// Larger runs first among equals (default 0).
    #[serde(default)]
    pub priority: i64,
    /// The submitter's umask (`esubmit` sends its own), applied to the job's output files and
    /// inherited by the job, as sbatch does. Absent (an older or raw client): [`DEFAULT_UMASK`],
    /// so the files stay private.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub umask: Option<u32>,
    // Slurm's habits (issue 15): a job array and the task batchd made of it, resources,
    // account, QOS. Boxed: a `Request::Submit` stays near the size of the other requests.
    /// A job array as submitted (`--array`): batchd queues one job per index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array: Option<Box<crate::array::ArraySpec>>,
    /// Set by batchd on each job it made of an array: the array and the task's index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_task: Option<Box<crate::array::ArrayTask>>,
    /// Tasks, CPUs and memory (`-n`, `-c`, `--mem`...): batchd turns them into the rigid
    /// shape's node count with the pool's node size (see [`crate::resources`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Box<crate::resources::Resources>>,
    /// Account (`-A`): stored and shown; no policy uses it yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// Quality of service (`-q`): stored and shown; no policy uses it yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<String>,
    /// Start deadline of a co-allocated job, ms since the epoch (`--deadline`): it starts by
    /// then or ends FAILED with reason `Deadline`. Only with [`JobShape::CoAllocated`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<EpochMs>,
    /// Requeue instead of ending PREEMPTED when the policy kills it (`--requeue`): back to
    /// PENDING with the same id, as Slurm does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub requeue: bool,
    // Slurm's habits (issue 15, continued): signals before the limit, output open mode, and
    // whether the job may be requeued by hand.
    /// `--signal`: a signal sent this long before the time limit (see
    /// [`crate::signal::JobSignal`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warn_signal: Option<crate::signal::JobSignal>,
    /// `--open-mode=append`: the output files are appended to, not truncated (sbatch's
    /// default is truncate).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub open_append: bool,
    /// `--no-requeue` given explicitly: the job is never requeued, not even by
    /// `econtrol requeue` (Slurm refuses it then too). Without either option esched's
    /// default holds: a preempted job is not requeued, `econtrol requeue` may requeue it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_requeue: bool,
    /// Set by batchd while `econtrol requeue` stops the running job (`Some(held)`), so that a
    /// restart of batchd in between still requeues it; never in a submission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_by_hand: Option<bool>,
    /// Set by batchd when the policy kills the running job (its reason): its nodes went to
    /// another job at once while its processes are stopped, so that a restart of batchd in
    /// between re-attaches it without nodes and still ends it PREEMPTED; never in a submission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preempted: Option<String>,
}

/// The umask of a job whose submission did not give one: output files readable by their
/// owner only. Private by default, since nothing says the submitter wanted them shared.
pub const DEFAULT_UMASK: u32 = 0o077;

/// Largest script accepted, in bytes of the script itself (Slurm's default `max_script_size`,
/// 4 MB). Checked before encoding: JSON escaping may double a script's size on the wire.
pub const MAX_SCRIPT: usize = 4 * 1024 * 1024;

impl JobSpec {
    /// The umask the job runs with: the submitter's, else [`DEFAULT_UMASK`].
    pub fn effective_umask(&self) -> u32 {
        self.umask.unwrap_or(DEFAULT_UMASK)
    }

    /// A rigid job running `script` in `work_dir`, with defaults elsewhere.
    pub fn new(
        script: impl Into<String>,
        work_dir: impl Into<String>,
        nodes: u32,
        time_limit: u64,
    ) -> Self {
        JobSpec {
            script: script.into(),
            args: Vec::new(),
            name: "script".into(),
            shape: JobShape::Rigid { nodes, time_limit },
            pool: None,
            begin: None,
            hold: false,
            dependencies: Vec::new(),
            stdout: None,
            stderr: None,
            environment: Vec::new(),
            work_dir: work_dir.into(),
            priority: 0,
            umask: None,
            array: None,
            array_task: None,
            resources: None,
            account: None,
            qos: None,
            deadline: None,
            requeue: false,
            warn_signal: None,
            open_append: false,
            no_requeue: false,
            requeue_by_hand: None,
            preempted: None,
        }
    }

    /// The one check of a submission's or an update's content: [`JobSpec::validate`], then the
    /// bounds that depend on the time and the pool: `--begin` at most [`MAX_BEGIN_AHEAD`] after
    /// `now` (ms since the epoch), and the time limit (each step's sum of an evolving job,
    /// each configuration's of a moldable one) at most `max_time` (the pool's `max_time`, or
    /// [`MAX_TIME_LIMIT`] when it has none). batchd runs it on every `Submit` and `Update`, so
    /// raw clients and the tools meet the same messages; the tools may run it first.
    pub fn check(&self, now: EpochMs, max_time: Option<u64>) -> Result<(), SpecError> {
        self.validate()?;
        if let Some(begin) = self.begin {
            if begin.saturating_sub(now) > MAX_BEGIN_AHEAD {
                let days = (begin - now) / DAY_MS;
                return Err(SpecError::Bound {
                    what: "begin time",
                    reason: format!(
                        "{days} days ahead; at most {} days ahead are accepted",
                        MAX_BEGIN_AHEAD / DAY_MS
                    ),
                });
            }
        }
        if let Some(d) = self.deadline {
            if d <= now {
                return Err(SpecError::Bound {
                    what: "deadline",
                    reason: "the start deadline has already passed".into(),
                });
            }
            if d - now > MAX_BEGIN_AHEAD {
                return Err(SpecError::Bound {
                    what: "deadline",
                    reason: format!(
                        "{} days ahead; at most {} days ahead are accepted",
                        (d - now) / DAY_MS,
                        MAX_BEGIN_AHEAD / DAY_MS
                    ),
                });
            }
        }
        if let Some(max) = max_time {
            self.shape
                .check_time(max.min(MAX_TIME_LIMIT), "the pool's max_time")?;
        }
        Ok(())
    }

    /// Replaces a rigid time limit of [`TIME_UNLIMITED`] with `max_time` (the pool's, `None`
    /// when it has none: [`MAX_TIME_LIMIT`]).
    pub fn resolve_unlimited(&mut self, max_time: Option<u64>) {
        if let JobShape::Rigid { time_limit, .. } = &mut self.shape {
            if *time_limit == TIME_UNLIMITED {
                *time_limit = max_time.unwrap_or(MAX_TIME_LIMIT).min(MAX_TIME_LIMIT);
            }
        }
    }

    /// Checks what can be checked without the daemon's state: fields, the shape, the time
    /// limit against [`MAX_TIME_LIMIT`] and the priority against
    /// [`MIN_PRIORITY`]`..=`[`MAX_PRIORITY`].
    pub fn validate(&self) -> Result<(), SpecError> {
        let field = |field, reason: &str| {
            Err(SpecError::Field {
                field,
                reason: reason.to_string(),
            })
        };
        self.shape.validate()?;
        if !(MIN_PRIORITY..=MAX_PRIORITY).contains(&self.priority) {
            return Err(SpecError::Bound {
                what: "priority",
                reason: format!(
                    "{} is outside {MIN_PRIORITY}..={MAX_PRIORITY}",
                    self.priority
                ),
            });
        }
        if self.script.trim().is_empty() {
            return field("script", "the script is empty");
        }
        if self.script.len() > MAX_SCRIPT {
            return Err(SpecError::Field {
                field: "script",
                reason: format!(
                    "the script is {} bytes, more than the limit of {MAX_SCRIPT} bytes",
                    self.script.len()
                ),
            });
        }
        if self.script.contains('\0') {
            return field("script", "the script contains a NUL byte");
        }
        if let Some(a) = &self.array {
            if let Err(reason) = a.check() {
                return Err(SpecError::Field {
                    field: "array",
                    reason,
                });
            }
            if self.array_task.is_some() {
                return field("array_task", "is set by batchd, not by a submission");
            }
        }
        if self.resources.as_ref().is_some_and(|r| !r.is_empty())
            && !matches!(self.shape, JobShape::Rigid { .. })
        {
            return field(
                "resources",
                "-n/-c/--mem... size rigid jobs; a moldable or evolving job gives its nodes",
            );
        }
        if self.requeue && self.no_requeue {
            return field("requeue", "--requeue and --no-requeue exclude each other");
        }
        if self
            .warn_signal
            .is_some_and(|w| nix::sys::signal::Signal::try_from(w.signal).is_err())
        {
            return field("warn_signal", "not a signal");
        }
        for (what, v) in [("account", &self.account), ("qos", &self.qos)] {
            if let Some(v) = v {
                if v.is_empty() || v.chars().any(|c| c.is_control() || c == ' ') {
                    return field(what, "must be a non-empty word");
                }
                too_long(what, v, MAX_WORD)?;
            }
        }
        if self.umask.is_some_and(|m| m > 0o777) {
            return field("umask", "must be at most 0777");
        }
        too_long("name", &self.name, MAX_NAME)?;
        if self.name.is_empty() || self.name.chars().any(|c| c.is_control()) {
            return field("name", "must be non-empty, without control characters");
        }
        too_long("work_dir", &self.work_dir, MAX_PATH)?;
        if !self.work_dir.starts_with('/') {
            return field("work_dir", "must be an absolute path");
        }
        if self.work_dir.contains('\0') {
            return field("work_dir", "contains a NUL byte");
        }
        for (what, p) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            if let Some(p) = p {
                too_long(what, p, MAX_PATH)?;
                if p.is_empty() || p.contains('\0') {
                    return field(what, "must be a non-empty path without NUL bytes");
                }
                if let Err(reason) = crate::pattern::check(p) {
                    return Err(SpecError::Field {
                        field: what,
                        reason: format!("'{p}': {reason}"),
                    });
                }
            }
        }
        self.check_exec()?;
        if let Some(p) = &self.pool {
            if p.is_empty() {
                return field("pool", "empty pool name");
            }
            too_long("pool", p, MAX_WORD)?;
        }
        if self.dependencies.len() > MAX_DEPENDENCIES {
            return Err(SpecError::Dependency(format!(
                "list of {} conditions: at most {MAX_DEPENDENCIES} are accepted",
                self.dependencies.len()
            )));
        }
        let coallocated = matches!(self.shape, JobShape::CoAllocated { .. });
        if coallocated && self.deadline.is_none() {
            return field(
                "deadline",
                "a co-allocated job needs a start deadline (--deadline)",
            );
        }
        if !coallocated && self.deadline.is_some() {
            return field(
                "deadline",
                "only co-allocated jobs (--components) have a start deadline",
            );
        }
        if coallocated && self.pool.is_some() {
            return field(
                "pool",
                "the policy places a co-allocated job's components; -p is for local jobs",
            );
        }
        if self
            .dependencies
            .iter()
            .any(|d| matches!(d, Dependency::On { job: 0, .. }))
        {
            return Err(SpecError::Dependency("job ids start at 1".into()));
        }
        Ok(())
    }
}

/// `Err` naming `what` when `v` is longer than `max` bytes.
fn too_long(what: &'static str, v: &str, max: usize) -> Result<(), SpecError> {
    if v.len() > max {
        return Err(SpecError::Field {
            field: what,
            reason: format!("{} bytes long; at most {max} are accepted", v.len()),
        });
    }
    Ok(())
}

impl JobSpec {
    /// The fields of a stored job that only batchd sets, which a submission must leave out:
    /// a job array's task (batchd makes one per index of `array`), the requeue under way, a
    /// policy's kill under way, and a launcher session's shape (made by `subscribe`). `None`
    /// when there is none; else the field and why.
    pub fn set_by_batchd(&self) -> Option<(&'static str, &'static str)> {
        if self.array_task.is_some() {
            return Some((
                "array_task",
                "is set by batchd on the tasks it makes of an array",
            ));
        }
        if self.requeue_by_hand.is_some() {
            return Some((
                "requeue_by_hand",
                "is set by batchd while it requeues a job",
            ));
        }
        if self.preempted.is_some() {
            return Some(("preempted", "is set by batchd when a policy kills a job"));
        }
        if matches!(self.shape, JobShape::Session { .. }) {
            return Some((
                "shape",
                "a launcher session's job is created by `subscribe`, not submitted",
            ));
        }
        None
    }

    /// What a client may send in a `Submit`: [`JobSpec::validate`], and none of the fields
    /// [`JobSpec::set_by_batchd`] names. The stored jobs an `Update` re-checks carry those
    /// fields legitimately and go through [`JobSpec::check`] only.
    pub fn validate_submission(&self) -> Result<(), SpecError> {
        if let Some((field, reason)) = self.set_by_batchd() {
            return Err(SpecError::Field {
                field,
                reason: format!("{reason}; a submission must not set it"),
            });
        }
        self.validate()
    }

    /// The script's arguments and environment: what `execve` takes ([`MAX_ARGS`],
    /// [`MAX_ENV_VARS`], [`MAX_ARG_LEN`], [`MAX_EXEC_BYTES`]), names without `=`, no NUL.
    fn check_exec(&self) -> Result<(), SpecError> {
        let bad = |field, reason: String| Err(SpecError::Field { field, reason });
        if self.args.len() > MAX_ARGS {
            return bad(
                "args",
                format!(
                    "{} arguments; at most {MAX_ARGS} are accepted",
                    self.args.len()
                ),
            );
        }
        if self.environment.len() > MAX_ENV_VARS {
            return bad(
                "environment",
                format!(
                    "{} variables; at most {MAX_ENV_VARS} are accepted",
                    self.environment.len()
                ),
            );
        }
        let mut bytes = 0usize;
        for a in &self.args {
            if a.contains('\0') {
                return bad("args", "an argument contains a NUL byte".into());
            }
            if a.len() > MAX_ARG_LEN {
                return bad(
                    "args",
                    format!(
                        "an argument of {} bytes; at most {MAX_ARG_LEN} are accepted",
                        a.len()
                    ),
                );
            }
            bytes += a.len() + 1;
        }
        for (k, v) in &self.environment {
            if k.is_empty() || k.contains('=') || k.contains('\0') || v.contains('\0') {
                let k: String = k.chars().take(64).collect();
                return bad(
                    "environment",
                    format!("`{}` is not a valid variable name", k.escape_debug()),
                );
            }
            let len = k.len() + 1 + v.len();
            if len > MAX_ARG_LEN {
                return bad(
                    "environment",
                    format!(
                        "a variable of {len} bytes (NAME=value); at most {MAX_ARG_LEN} are accepted"
                    ),
                );
            }
            bytes += len + 1;
        }
        if bytes > MAX_EXEC_BYTES {
            return bad(
                "args",
                format!(
                    "arguments and environment of {bytes} bytes together; at most \
                     {MAX_EXEC_BYTES} are accepted"
                ),
            );
        }
        Ok(())
    }
}

job_info! {
    /// What the daemon tells about a job: everything `equeue`, `eacct` and `econtrol show job`
    /// display. Empty and absent fields are left out of the JSON: a listing of 100,000 jobs
    /// must stay small.
    ///
    /// Defined with [`JobInfoRef`], its borrowed twin, from this one field list.
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    pub struct JobInfo {
        /// Job id.
        pub id: u64,
        /// Job name.
        pub name: String,
        /// Owner's uid.
        pub uid: u32,
        /// Owner's user name (the uid as text when it has none).
        pub user: String,
        /// The pool it runs in, or the one it asked for (`None`: any).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub pool: Option<String>,
        /// State.
        pub state: JobState,
        /// Why it is pending, when it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub reason: Option<PendingReason>,
        /// Free text about the state (a policy's reject reason, a start failure).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub detail: Option<String>,
        /// Nodes it holds (running, finished) or asks for at most (pending).
        pub nodes: u32,
        /// Its nodes in compressed host-list syntax, once started.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub node_list: Option<String>,
        /// Submission time, ms since the epoch.
        pub submit_time: EpochMs,
        /// Start time.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub start_time: Option<EpochMs>,
        /// End time.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub end_time: Option<EpochMs>,
        /// Expected start from the latest plan (pending jobs the policy placed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub expected_start: Option<EpochMs>,
        /// Time limit in ms (of the shape it runs with, or the longest it asked for).
        pub time_limit: u64,
        /// Exit code, once ended.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub exit_code: Option<i32>,
        /// Signal that ended it, once ended (0 for none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub signal: Option<i32>,
        /// Working directory (empty in a brief listing).
        #[serde(default, skip_serializing_if = "crate::job::field::is_empty")]
        pub work_dir: String,
        /// Resolved stdout path (empty in a brief listing).
        #[serde(default, skip_serializing_if = "crate::job::field::is_empty")]
        pub stdout: String,
        /// Resolved stderr path (empty in a brief listing).
        #[serde(default, skip_serializing_if = "crate::job::field::is_empty")]
        pub stderr: String,
        /// What it asked for.
        pub shape: JobShape,
        /// `--begin`, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub begin: Option<EpochMs>,
        /// Its dependencies.
        #[serde(default, skip_serializing_if = "crate::job::field::is_empty")]
        pub dependencies: Vec<Dependency>,
        /// Priority.
        pub priority: i64,
        /// Whether it is held.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        pub held: bool,
        /// Arguments of the script.
        #[serde(default, skip_serializing_if = "crate::job::field::is_empty")]
        pub args: Vec<String>,
        /// The scheduled EP of an evolving job (its steps as planned, each possibly expanded
        /// beyond the requested duration, without the leading delay): the one it runs with once
        /// started, the latest plan's while pending. `None` for other jobs, and for an evolving
        /// job the policy runs as rigid.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub scheduled_ep: Option<Vec<Step>>,
        /// Where a running evolving job is in its scheduled EP.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub step: Option<StepStatus>,
        /// A moldable job's configuration: the one it was started with, or, while pending, the
        /// one the latest plan expects it to start with. `nodes` and `time_limit` say the same;
        /// `None` for other jobs and for a pending moldable job the plan does not place.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub chosen: Option<MoldConfig>,
        /// The job's place in its array, for a task of a job array (shown `ARRAYID_INDEX`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub array: Option<crate::array::ArrayTask>,
        /// Account (`-A`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub account: Option<String>,
        /// Quality of service (`-q`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub qos: Option<String>,
        /// `--signal`: the signal sent before the time limit, and when.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub warn_signal: Option<crate::signal::JobSignal>,
    }
}

impl JobInfo {
    /// The id as squeue and sacct show it: `ARRAYID_INDEX` for an array task, else the id.
    pub fn label(&self) -> String {
        self.array
            .as_ref()
            .map_or_else(|| self.id.to_string(), crate::array::ArrayTask::label)
    }
}

/// What a running evolving job is doing in its current step, as the job itself is told in its
/// step file (see docs/evolving.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepPhase {
    /// Within the requested duration of the step.
    Running,
    /// The step's requested duration is over and the next step's nodes are not available yet:
    /// the scheduler expanded the step (or the nodes are late); the job keeps what it holds.
    Waiting,
    /// The next step has fewer nodes: the job may choose which of its nodes it frees
    /// (`erelease`) until the step ends; otherwise the nodes it got last are freed.
    Releasing,
}

impl StepPhase {
    /// The lowercase name used on the wire, in the step file and by the tools.
    pub fn name(self) -> &'static str {
        match self {
            StepPhase::Running => "running",
            StepPhase::Waiting => "waiting",
            StepPhase::Releasing => "releasing",
        }
    }
}

impl fmt::Display for StepPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A running evolving job's position in its scheduled EP.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepStatus {
    /// The current step, from 1.
    pub index: u32,
    /// Number of steps.
    pub count: u32,
    /// Nodes the job holds now (those in its node file).
    pub nodes: u32,
    /// What the job is doing in the step.
    pub phase: StepPhase,
    /// When the step ends as scheduled (ms since the epoch).
    pub ends: EpochMs,
    /// Nodes the job holds in the next step (`None` in the last step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_nodes: Option<u32>,
    /// Nodes the job has chosen to free at the end of the step (`erelease`), compressed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen_release: Option<String>,
}

impl StepStatus {
    /// `2/3`, as `equeue` shows it.
    pub fn short(&self) -> String {
        format!("{}/{}", self.index, self.count)
    }
}

impl JobInfo {
    /// `exit:signal`, as `eacct` shows it (`-` while unknown).
    pub fn exit_status(&self) -> String {
        match (self.exit_code, self.signal) {
            (None, None) => "-".to_string(),
            (c, s) => format!("{}:{}", c.unwrap_or(0), s.unwrap_or(0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_parse_from_names_and_codes() {
        for st in JobState::ALL {
            assert_eq!(st.code().parse::<JobState>().unwrap(), st);
            assert_eq!(st.name().to_lowercase().parse::<JobState>().unwrap(), st);
        }
        assert_eq!("canceled".parse::<JobState>().unwrap(), JobState::Cancelled);
        assert!("XX".parse::<JobState>().is_err());
        assert_eq!(
            serde_json::to_string(&JobState::Timeout).unwrap(),
            "\"TIMEOUT\""
        );
    }

    #[test]
    fn dependency_lists_parse_like_slurm() {
        let d = Dependency::parse_list("afterok:12:13,afterany:9,singleton").unwrap();
        assert_eq!(
            d,
            vec![
                Dependency::On {
                    kind: DepKind::AfterOk,
                    job: 12
                },
                Dependency::On {
                    kind: DepKind::AfterOk,
                    job: 13
                },
                Dependency::On {
                    kind: DepKind::AfterAny,
                    job: 9
                },
                Dependency::Singleton,
            ]
        );
        assert_eq!(d[0].to_string(), "afterok:12");
        for bad in [
            "afterok",
            "afterok:x",
            "before:3",
            "afterok:1?afterany:2",
            "",
            "after:0",
        ] {
            assert!(Dependency::parse_list(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_script_limit_counts_the_script_bytes_not_their_escaping() {
        let mut s = JobSpec::new("x", "/w", 1, 60_000);
        // Quotes double on the wire; a script at the limit still fits in one frame.
        s.script = "\"".repeat(MAX_SCRIPT);
        s.validate().unwrap();
        assert!(crate::frame::encode(&s).is_ok());
        s.script.push('x');
        let e = s.validate().unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "invalid script: the script is {} bytes, more than the limit of {MAX_SCRIPT} bytes",
                MAX_SCRIPT + 1
            )
        );
        s.script = "x".repeat(MAX_SCRIPT + 1);
        assert_eq!(s.validate().unwrap_err().to_string(), e);
    }

    #[test]
    fn spec_validation_names_the_field() {
        let ok = JobSpec::new("#!/bin/sh\ntrue\n", "/tmp", 1, 60_000);
        ok.validate().unwrap();
        let mut s = ok.clone();
        s.work_dir = "relative".into();
        assert!(s.validate().unwrap_err().to_string().contains("work_dir"));
        let mut s = ok.clone();
        s.shape = JobShape::Rigid {
            nodes: 0,
            time_limit: 1,
        };
        assert!(s.validate().unwrap_err().to_string().contains("node"));
        let mut s = ok.clone();
        s.environment.push(("A=B".into(), "x".into()));
        assert!(s.validate().is_err());
        let mut s = ok;
        s.shape = JobShape::Evolving { steps: vec![] };
        assert!(s.validate().is_err());
    }

    #[test]
    fn shapes_report_their_extent() {
        let e = JobShape::Evolving {
            steps: vec![Step::new(500, 5), Step::new(3600, 10)],
        };
        assert_eq!((e.max_nodes(), e.time_limit()), (10, 4100));
        let m = JobShape::Moldable {
            configs: vec![
                MoldConfig {
                    nodes: 4,
                    walltime: 60,
                },
                MoldConfig {
                    nodes: 8,
                    walltime: 35,
                },
            ],
            model: None,
            weight: None,
        };
        assert_eq!((m.max_nodes(), m.time_limit()), (8, 60));
        assert_eq!(m.least_nodes(), 4);
        let amdahl = JobShape::Moldable {
            configs: vec![MoldConfig {
                nodes: 64,
                walltime: 5,
            }],
            model: Some(MoldModel {
                model: SpeedupModel::Amdahl {
                    work: 1000,
                    serial: 0.5,
                },
                min_nodes: 2,
                max_nodes: 32,
            }),
            weight: Some(2.0),
        };
        // p(2) = 1000 × (0.5 + 0.5 / 2) = 750 ms, the longest; 2..=64 nodes.
        assert_eq!(
            (
                amdahl.least_nodes(),
                amdahl.max_nodes(),
                amdahl.time_limit()
            ),
            (2, 64, 750)
        );
        assert!(amdahl.validate().is_ok());
        let with = |f: &dyn Fn(&mut MoldModel), weight: Option<f64>| {
            let JobShape::Moldable { model, .. } = &amdahl else {
                unreachable!()
            };
            let mut m = model.unwrap();
            f(&mut m);
            JobShape::Moldable {
                configs: Vec::new(),
                model: Some(m),
                weight,
            }
            .validate()
            .unwrap_err()
            .to_string()
        };
        assert!(with(&|m| m.min_nodes = 0, None).contains("1 <= MIN <= MAX"));
        assert!(with(&|m| m.max_nodes = 1, None).contains("1 <= MIN <= MAX"));
        assert!(with(&|m| m.max_nodes = 1 << 20, None).contains("more than"));
        assert!(with(
            &|m| m.model = SpeedupModel::Amdahl {
                work: 10,
                serial: 1.5
            },
            None
        )
        .contains("between 0 and 1"));
        assert!(with(&|m| m.model = SpeedupModel::Linear { work: 0 }, None)
            .contains("work must be positive"));
        for w in [0.0, -1.0, f64::NAN, 1e7] {
            assert!(with(&|_| {}, Some(w)).contains("weight"), "{w}");
        }
    }
}

#[cfg(test)]
mod bounds {
    use super::*;

    const NOW: u64 = 1_800_000_000_000;

    fn spec() -> JobSpec {
        JobSpec::new("#!/bin/sh\ntrue\n", "/tmp", 1, 60_000)
    }

    fn refused(s: &JobSpec, max_time: Option<u64>) -> String {
        s.check(NOW, max_time)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn absurd_numbers_are_refused_with_one_line() {
        let mut s = spec();
        s.shape = JobShape::Rigid {
            nodes: 1,
            time_limit: u64::MAX,
        };
        let e = refused(&s, None);
        assert!(
            e.starts_with("invalid time limit: ") && e.contains("365-00:00:00"),
            "{e}"
        );
        let mut s = spec();
        // u64::MAX ms: the year 584,556,019.
        s.begin = Some(u64::MAX);
        let e = refused(&s, None);
        assert!(
            e.starts_with("invalid begin time: ") && e.contains("365 days"),
            "{e}"
        );
        let mut s = spec();
        s.priority = i64::MIN;
        assert_eq!(
            refused(&s, None),
            "invalid priority: -9223372036854775808 is outside -1000000..=1000000"
        );
        s.priority = i64::MAX;
        assert!(refused(&s, None).starts_with("invalid priority"));
        // An evolving job whose steps sum past u64::MAX, and a moldable one past the bound.
        s = spec();
        s.shape = JobShape::Evolving {
            steps: vec![Step::new(u64::MAX, 1), Step::new(u64::MAX, 2)],
        };
        assert!(refused(&s, None).starts_with("invalid time limit"));
        s.shape = JobShape::Moldable {
            configs: vec![MoldConfig {
                nodes: 1,
                walltime: MAX_TIME_LIMIT + 1,
            }],
            model: None,
            weight: None,
        };
        let e = refused(&s, None);
        assert!(
            e.starts_with("invalid time limit") && !e.contains('\n'),
            "{e}"
        );
    }

    #[test]
    fn the_bounds_themselves_are_accepted() {
        let mut s = spec();
        s.shape = JobShape::Rigid {
            nodes: 1,
            time_limit: MAX_TIME_LIMIT,
        };
        s.begin = Some(NOW + MAX_BEGIN_AHEAD);
        s.priority = MIN_PRIORITY;
        s.check(NOW, None).unwrap();
        s.priority = MAX_PRIORITY;
        s.check(NOW, None).unwrap();
        // A past begin is fine: eligible at once.
        s.begin = Some(1);
        s.check(NOW, None).unwrap();
        s.begin = Some(NOW + MAX_BEGIN_AHEAD + 1);
        assert!(s.check(NOW, None).is_err());
    }

    #[test]
    fn the_pools_max_time_bounds_and_fills_unlimited() {
        let hour = 3_600_000;
        let mut s = spec();
        s.shape = JobShape::Rigid {
            nodes: 1,
            time_limit: 2 * hour,
        };
        assert_eq!(
            refused(&s, Some(hour)),
            "invalid time limit: 02:00:00 is longer than the pool's max_time, 01:00:00"
        );
        s.check(NOW, Some(2 * hour)).unwrap();
        s.shape = JobShape::Rigid {
            nodes: 1,
            time_limit: TIME_UNLIMITED,
        };
        // Accepted before resolution (what a tool sends), resolved by the daemon.
        s.check(NOW, Some(hour)).unwrap();
        let mut a = s.clone();
        a.resolve_unlimited(Some(hour));
        assert_eq!(a.shape.time_limit(), hour);
        s.resolve_unlimited(None);
        assert_eq!(s.shape.time_limit(), MAX_TIME_LIMIT);
    }

    /// Each forged or oversized field is refused with one line naming it; the same spec at
    /// the bound is accepted.
    #[test]
    fn every_field_has_a_bound() {
        let refused = |f: &dyn Fn(&mut JobSpec)| {
            let mut s = spec();
            f(&mut s);
            let e = s.validate_submission().unwrap_err().to_string();
            assert!(!e.contains('\n'), "{e}");
            e
        };
        let accepted = |f: &dyn Fn(&mut JobSpec)| {
            let mut s = spec();
            f(&mut s);
            s.validate_submission().unwrap();
        };
        let task = crate::array::ArraySpec {
            indices: vec![99],
            throttle: None,
        }
        .task(7, 99);
        assert!(refused(&|s| s.array_task = Some(Box::new(task))).starts_with("invalid array_task"));
        assert!(refused(&|s| s.requeue_by_hand = Some(true)).starts_with("invalid requeue_by_hand"));
        assert!(refused(&|s| s.preempted = Some("x".into())).starts_with("invalid preempted"));
        assert!(refused(&|s| s.shape = JobShape::Session {
            pools: vec![],
            time_limit: 0
        })
        .contains("subscribe"));
        assert!(
            refused(&|s| s.array = Some(Box::new(crate::array::ArraySpec {
                indices: vec![5, 3],
                throttle: None
            })))
            .starts_with("invalid array: indices must ascend")
        );
        accepted(&|s| s.name = "n".repeat(MAX_NAME));
        assert_eq!(
            refused(&|s| s.name = "n".repeat(MAX_NAME + 1)),
            "invalid name: 1025 bytes long; at most 1024 are accepted"
        );
        accepted(&|s| s.args = vec!["a".into(); MAX_ARGS]);
        assert!(refused(&|s| s.args = vec!["a".into(); MAX_ARGS + 1]).contains("4097 arguments"));
        assert!(refused(&|s| s.args = vec!["a".repeat(MAX_ARG_LEN + 1)]).contains("argument of"));
        let var = |i: usize| (format!("V{i}"), String::new());
        accepted(&|s| s.environment = (0..MAX_ENV_VARS).map(var).collect());
        assert!(
            refused(&|s| s.environment = (0..=MAX_ENV_VARS).map(var).collect())
                .contains("4097 variables")
        );
        // Each string within its bound, all together over MAX_EXEC_BYTES.
        assert!(refused(&|s| s.args = vec!["a".repeat(MAX_ARG_LEN); 9])
            .contains("arguments and environment"));
        assert!(
            refused(&|s| s.work_dir = format!("/{}", "d".repeat(MAX_PATH))).contains("work_dir")
        );
        assert!(refused(&|s| s.stdout = Some("o".repeat(MAX_PATH + 1))).contains("stdout"));
        assert!(refused(&|s| s.account = Some("a".repeat(MAX_WORD + 1))).contains("account"));
        assert!(refused(&|s| s.pool = Some("p".repeat(MAX_WORD + 1))).contains("pool"));
        assert!(
            refused(&|s| s.dependencies = vec![Dependency::Singleton; MAX_DEPENDENCIES + 1])
                .starts_with("invalid dependency")
        );
        accepted(&|s| {
            s.shape = JobShape::Evolving {
                steps: vec![Step::new(1000, 1); MAX_STEPS],
            }
        });
        assert!(refused(&|s| s.shape = JobShape::Evolving {
            steps: vec![Step::new(1000, 1); MAX_STEPS + 1]
        })
        .contains(&format!("at most {MAX_STEPS}")));
        let model = |min_nodes, max_nodes| MoldModel {
            model: SpeedupModel::Linear { work: 1000 },
            min_nodes,
            max_nodes,
        };
        let wide = MAX_MOLDABLE_CHOICES as u32;
        accepted(&|s| {
            s.shape = JobShape::Moldable {
                configs: vec![],
                model: Some(model(1, wide)),
                weight: None,
            }
        });
        assert!(refused(&|s| s.shape = JobShape::Moldable {
            configs: vec![MoldConfig {
                nodes: 1,
                walltime: 5
            }],
            model: Some(model(1, wide)),
            weight: None,
        })
        .contains("node counts"));
        assert!(refused(&|s| s.shape = JobShape::Moldable {
            configs: vec![],
            model: Some(model(2, 65_537)),
            weight: None,
        })
        .contains("node counts"));
    }

    /// A session's counts summed without wrapping: {a: u32::MAX, b: 2} is refused, never seen
    /// as 1 node.
    #[test]
    fn session_node_counts_never_wrap() {
        let pools = |a: u32, b: u32| JobShape::Session {
            pools: vec![
                PoolNodes {
                    pool: "a".into(),
                    nodes: a,
                },
                PoolNodes {
                    pool: "b".into(),
                    nodes: b,
                },
            ],
            time_limit: 60_000,
        };
        let e = pools(u32::MAX, 2).validate().unwrap_err().to_string();
        assert_eq!(
            e,
            "invalid request: a request of 4294967297 nodes in all; at most 4294967295 are accepted"
        );
        assert_eq!(pools(u32::MAX, 2).max_nodes(), u32::MAX);
        pools(u32::MAX - 2, 2).validate().unwrap();
        assert_eq!(pools(3, 2).max_nodes(), 5);
    }

    #[test]
    fn limits_print_like_slurm() {
        assert_eq!(format_limit(90_000), "00:01:30");
        assert_eq!(format_limit(MAX_TIME_LIMIT), "365-00:00:00");
        assert_eq!(format_limit(1), "00:00:01");
    }
}
