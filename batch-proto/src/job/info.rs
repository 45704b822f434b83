//! What the daemon tells about a job: [`JobInfo`], its borrowed twin [`JobInfoRef`], and a
//! running evolving job's step.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::dependency::Dependency;
use super::shape::JobShape;
use super::state::{JobState, PendingReason};
use crate::shape::{MoldConfig, Step};
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

    impl Field for super::super::inert::InertOptions {
        type Ref<'a> = &'a super::super::inert::InertOptions;
        fn own(r: &&Self) -> Self {
            (*r).clone()
        }
    }

    impl Field for crate::resources::Resources {
        type Ref<'a> = &'a crate::resources::Resources;
        fn own(r: &&Self) -> Self {
            (*r).clone()
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

    /// A job's steps (`ID.batch`, `ID.0`): its running batch step is made up for the view, so
    /// lent owned then.
    impl Field for Vec<crate::jobstep::JobStep> {
        type Ref<'a> = Cow<'a, [crate::jobstep::JobStep]>;
        fn own(r: &Cow<'_, [crate::jobstep::JobStep]>) -> Vec<crate::jobstep::JobStep> {
            r.to_vec()
        }
    }

    impl IsEmpty for Cow<'_, [crate::jobstep::JobStep]> {
        fn is_empty(&self) -> bool {
            <[crate::jobstep::JobStep]>::is_empty(self)
        }
    }

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
        /// Its steps, as sacct lists them: the batch step (`ID.batch`) and each `erun` step
        /// (`ID.0`, ...), running or ended (empty in a brief listing).
        #[serde(default, skip_serializing_if = "crate::job::field::is_empty")]
        pub job_steps: Vec<crate::jobstep::JobStep>,
        /// Slurm options stored that change nothing here (`--wckey`, `--comment`, `--nice`...).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub inert: Option<super::inert::InertOptions>,
        /// Tasks, CPUs and memory as submitted (`-n`, `-c`, `--mem`...), for squeue's `%C`,
        /// `%c` and `%m`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub resources: Option<crate::resources::Resources>,
        /// A running job of a Slurm pool: the Slurm allocations it runs in, its pool's and
        /// each sibling obtained for its nodes beyond it, with those nodes (`7,9(n4)`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub slurm_allocations: Option<String>,
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
