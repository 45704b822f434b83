//! The messages: one [`Request`] enum with a struct per variant, one [`Response`] enum.
//!
//! Every variant name and field name is part of the protocol: add, never rename or remove
//! (bump [`crate::PROTOCOL_VERSION`] otherwise).

use serde::{Deserialize, Serialize};

use crate::coorm::{
    ChangeNotify, DoneRequest, ListClustersInfoRequest, ListInterClusterInfoRequest, PoolLink,
    PoolProperties, SessionEnded, SessionRequest, SessionTraffic, StartNotify, SubscribeRequest,
    Subscribed, ViewReply, ViewRequest,
};
use crate::job::{Dependency, JobInfo, JobSpec, JobState};
use crate::EpochMs;

/// The first message in each direction: who speaks which protocol.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// [`crate::PROTOCOL_VERSION`] of the sender.
    pub proto_version: u32,
    /// Software version of the sender (for the logs and `--version`).
    pub software_version: String,
}

impl Hello {
    /// This build's hello.
    pub fn current() -> Self {
        Hello {
            proto_version: crate::PROTOCOL_VERSION,
            software_version: crate::SOFTWARE_VERSION.to_string(),
        }
    }
}

/// What a client asks.
// A request is decoded, handled and dropped one at a time per connection, never kept in a
// collection, so a submission's size (a whole JobSpec inline) costs nothing worth a box at
// every construction site.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Request {
    /// The handshake; must be the first message of a connection and only there.
    Hello(Hello),
    /// The daemon's versions and policy.
    Version(VersionRequest),
    /// Queue a job, or with `test_only` ask when it would start.
    Submit(SubmitRequest),
    /// Jobs in the queue (pending and running, optionally finished); answered with
    /// [`Response::JobsPart`]s and a final [`Response::Jobs`].
    List(ListRequest),
    /// Cancel or signal jobs.
    Cancel(CancelRequest),
    /// Hold pending jobs.
    Hold(HoldRequest),
    /// Let held jobs start again (`econtrol release`, Slurm's `scontrol release`). Called
    /// `Unhold` in the code so that "release" means one thing there, giving nodes back
    /// ([`Request::ReleaseNodes`]); on the wire it keeps its name, `Release`.
    #[serde(rename = "Release")]
    Unhold(UnholdRequest),
    /// Change a pending job.
    Update(UpdateRequest),
    /// One job in full, pending, running or finished.
    ShowJob(ShowJobRequest),
    /// Pools and nodes.
    Info(InfoRequest),
    /// Finished jobs (accounting); answered like [`Request::List`].
    Acct(AcctRequest),
    /// Re-read the config file and switch policy.
    Reconfigure(ReconfigureRequest),
    /// A running evolving job names the nodes it frees at the end of its current step
    /// (`erelease`; Klein & Pérez's condition C4).
    ReleaseNodes(ReleaseNodesRequest),
    /// Open a CooRM launcher session ([`crate::coorm`]); the connection stays a session.
    Subscribe(SubscribeRequest),
    /// A session's pools' properties.
    ListClustersInfo(ListClustersInfoRequest),
    /// The links between a session's pools.
    ListInterClusterInfo(ListInterClusterInfoRequest),
    /// A session's request, or its update.
    Request(SessionRequest),
    /// A session's application is done.
    Done(DoneRequest),
    /// A job's latest view (`eview`).
    View(ViewRequest),
    /// Put running or finished batch jobs back in the queue (`econtrol requeue`).
    Requeue(RequeueRequest),
    /// The daemon's figures (`econtrol show stats`, Slurm's `sdiag`).
    Stats(StatsRequest),
    /// `erun` starts a step of a running job.
    StepStart(crate::jobstep::StepStartRequest),
    /// `erun`'s step ended.
    StepEnd(crate::jobstep::StepEndRequest),
    /// Take nodes out of service or back (`econtrol update NodeName=… State=…`).
    UpdateNodes(UpdateNodesRequest),
    /// `erun` runs its step's tasks of another host (a job on a pool of hosts).
    StepPart(crate::jobstep::StepPartRequest),
    /// `erun` signals its step's parts on other hosts.
    StepPartSignal(crate::jobstep::StepPartSignalRequest),
    /// The daemon's state as its policy sees it, for a what-if replay (`econtrol snapshot`);
    /// answered with [`Response::Snapshot`].
    Snapshot(SnapshotRequest),
}

impl Request {
    /// The variant's name, for logs and errors.
    pub fn verb(&self) -> &'static str {
        match self {
            Request::Hello(_) => "hello",
            Request::Version(_) => "version",
            Request::Submit(_) => "submit",
            Request::List(_) => "list",
            Request::Cancel(_) => "cancel",
            Request::Hold(_) => "hold",
            Request::Unhold(_) => "unhold",
            Request::Update(_) => "update",
            Request::ShowJob(_) => "show-job",
            Request::Info(_) => "info",
            Request::Acct(_) => "acct",
            Request::Reconfigure(_) => "reconfigure",
            Request::ReleaseNodes(_) => "release-nodes",
            Request::Subscribe(_) => "subscribe",
            Request::ListClustersInfo(_) => "listClustersInfo",
            Request::ListInterClusterInfo(_) => "listInterClusterInfo",
            Request::Request(_) => "request",
            Request::Done(_) => "done",
            Request::View(_) => "view",
            Request::Requeue(_) => "requeue",
            Request::Stats(_) => "stats",
            Request::StepStart(_) => "step-start",
            Request::StepEnd(_) => "step-end",
            Request::UpdateNodes(_) => "update-nodes",
            Request::StepPart(_) => "step-part",
            Request::StepPartSignal(_) => "step-part-signal",
            Request::Snapshot(_) => "snapshot",
        }
    }
}

/// Ask for the daemon's versions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionRequest {}

/// Submit a job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubmitRequest {
    /// The job.
    pub spec: JobSpec,
    /// Only say when it would start (`--test-only`); nothing is queued.
    #[serde(default)]
    pub test_only: bool,
}

/// Which jobs a listing, cancel or accounting query is about. Empty lists match everything;
/// a job must match every non-empty list.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobFilter {
    /// Job ids; an array's id also selects every task of the array.
    #[serde(default)]
    pub ids: Vec<u64>,
    /// Array tasks as `(array id, index)` (`ID_N`). A job passes `ids` and `tasks` when either
    /// selects it (both empty: every job).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<(u64, u64)>,
    /// Owners, by user name or numeric uid.
    #[serde(default)]
    pub users: Vec<String>,
    /// Job names.
    #[serde(default)]
    pub names: Vec<String>,
    /// States.
    #[serde(default)]
    pub states: Vec<JobState>,
    /// Pools by name.
    #[serde(default)]
    pub pools: Vec<String>,
}

impl JobFilter {
    /// Whether `ids` and `tasks` select the job `id` (with its place in an array, if any).
    pub fn selects_id(&self, id: u64, task: Option<&crate::array::ArrayTask>) -> bool {
        self.prepare().selects_id(id, task)
    }

    /// Whether no list narrows the selection.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
            && self.tasks.is_empty()
            && self.users.is_empty()
            && self.names.is_empty()
            && self.states.is_empty()
            && self.pools.is_empty()
    }

    /// Whether `job` passes the filter.
    pub fn matches(&self, job: &JobInfo) -> bool {
        self.selects(FilterKey::from(job))
    }

    /// Whether the job `key` describes passes the filter (see [`PreparedFilter::selects`]).
    /// Each call sorts the filter's lists: to test many jobs, [`JobFilter::prepare`] once.
    pub fn selects(&self, key: FilterKey<'_>) -> bool {
        self.prepare().selects(key)
    }

    /// The filter with its lists sorted and without repeats, for lookups in O(log n): what the
    /// daemon tests each job of its queue against, built once per request.
    pub fn prepare(&self) -> PreparedFilter<'_> {
        fn set<T: Ord>(v: impl IntoIterator<Item = T>) -> Vec<T> {
            let mut v: Vec<T> = v.into_iter().collect();
            v.sort_unstable();
            v.dedup();
            v
        }
        PreparedFilter {
            ids: set(self.ids.iter().copied()),
            tasks: set(self.tasks.iter().copied()),
            users: set(self.users.iter().map(String::as_str)),
            uids: set(self.users.iter().filter_map(|u| u.parse::<u32>().ok())),
            names: set(self.names.iter().map(String::as_str)),
            states: self.states.iter().fold(0, |m, &s| m | state_bit(s)),
            pools: set(self.pools.iter().map(String::as_str)),
            poolless: true,
        }
    }
}

fn state_bit(s: JobState) -> u16 {
    1 << (s as u16)
}

/// A [`JobFilter`] ready to test many jobs: its lists as sorted sets (sorted vectors, not
/// hashes: a client chooses the keys, and a binary search has no worst case to aim at).
/// Built by [`JobFilter::prepare`]; [`PreparedFilter::selects`] is the one job filter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreparedFilter<'a> {
    ids: Vec<u64>,
    tasks: Vec<(u64, u64)>,
    users: Vec<&'a str>,
    /// The users given as numbers, which also select by uid.
    uids: Vec<u32>,
    names: Vec<&'a str>,
    /// One bit per [`JobState`]; 0: any state.
    states: u16,
    pools: Vec<&'a str>,
    /// Whether a pending job without a pool passes the pool list (see
    /// [`PreparedFilter::known_pools`]).
    poolless: bool,
}

impl PreparedFilter<'_> {
    /// The filter for a daemon that knows its pools (`exists`): a pending job without a pool
    /// passes the pool list only when the list names a pool that exists, one where the policy
    /// may start it (`-p nosuchpool` selects nothing).
    #[must_use]
    pub fn known_pools(mut self, exists: impl Fn(&str) -> bool) -> Self {
        self.poolless = self.pools.iter().any(|p| exists(p));
        self
    }

    /// The job ids named, ascending, each once.
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }

    /// The array tasks named as `(array id, index)`, ascending, each once.
    pub fn tasks(&self) -> &[(u64, u64)] {
        &self.tasks
    }

    /// The lowest and highest job id a job the filter selects can have, when its ids or tasks
    /// narrow it: a named id, or a task of a named array, whose tasks' ids follow the array's
    /// (at most [`crate::array::MAX_ARRAY_SIZE`] of them). `None`: any id. A store reads only
    /// that span of its history.
    pub fn id_span(&self) -> Option<(u64, u64)> {
        let lo = self
            .ids
            .first()
            .copied()
            .into_iter()
            .chain(self.tasks.first().map(|t| t.0))
            .min()?;
        let hi = self
            .ids
            .last()
            .copied()
            .into_iter()
            .chain(self.tasks.last().map(|t| t.0))
            .max()?;
        Some((
            lo,
            hi.saturating_add(crate::array::MAX_ARRAY_SIZE as u64 - 1),
        ))
    }

    /// Whether a job in `state` can pass the filter's states (no state listed: any).
    pub fn admits_state(&self, state: JobState) -> bool {
        self.states == 0 || self.states & state_bit(state) != 0
    }

    /// Whether `ids` and `tasks` select the job `id` (with its place in an array, if any): an
    /// array's id selects every task of it; both lists empty select every job.
    pub fn selects_id(&self, id: u64, task: Option<&crate::array::ArrayTask>) -> bool {
        (self.ids.is_empty() && self.tasks.is_empty())
            || self.ids.binary_search(&id).is_ok()
            || task.is_some_and(|t| {
                self.ids.binary_search(&t.array_id).is_ok()
                    || self.tasks.binary_search(&(t.array_id, t.index)).is_ok()
            })
    }

    /// Whether the job `key` describes passes the filter: the one set of rules, for the
    /// daemon's stored records and the tools' [`JobInfo`]s alike. Empty lists match
    /// everything; a job must match every non-empty one (ids and tasks count as one, see
    /// [`PreparedFilter::selects_id`]). A user given as a number selects by uid as well as by
    /// name. A pending job without a pool passes every pool list: the policy may start it in
    /// any pool, as Slurm lists a job submitted without `-p` under its default partition
    /// (`squeue -p P`, `scancel -p P`); any other job without a pool passes none.
    pub fn selects(&self, key: FilterKey<'_>) -> bool {
        self.selects_id(key.id, key.array)
            && (self.users.is_empty()
                || self.users.binary_search(&key.user).is_ok()
                || self.uids.binary_search(&key.uid).is_ok())
            && (self.names.is_empty() || self.names.binary_search(&key.name).is_ok())
            && self.admits_state(key.state)
            && (self.pools.is_empty()
                || match key.pool {
                    Some(p) => self.pools.binary_search(&p).is_ok(),
                    None => self.poolless && key.state == JobState::Pending,
                })
    }
}

/// What a [`JobFilter`] looks at in a job, borrowed: the daemon takes it from its stored record
/// before building any [`JobInfo`] (most listings keep a small part of a large queue), a tool
/// from a `JobInfo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilterKey<'a> {
    /// Job id.
    pub id: u64,
    /// Owner's uid.
    pub uid: u32,
    /// Owner's name.
    pub user: &'a str,
    /// Job name.
    pub name: &'a str,
    /// State.
    pub state: JobState,
    /// The pool it runs in, else the one it asked for.
    pub pool: Option<&'a str>,
    /// Its place in a job array, for an array task.
    pub array: Option<&'a crate::array::ArrayTask>,
}

impl<'a> From<&'a JobInfo> for FilterKey<'a> {
    fn from(j: &'a JobInfo) -> Self {
        FilterKey {
            id: j.id,
            uid: j.uid,
            user: &j.user,
            name: &j.name,
            state: j.state,
            pool: j.pool.as_deref(),
            array: j.array.as_ref(),
        }
    }
}

/// List jobs in the queue.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListRequest {
    /// Which jobs.
    #[serde(default)]
    pub filter: JobFilter,
    /// Also finished jobs (they are otherwise left to `Acct`).
    #[serde(default)]
    pub include_finished: bool,
    /// Leave out what no `equeue` column but `%Z` and `%E` shows (work directory, output
    /// paths, arguments, dependencies, detail, scheduled EP); everything the default and
    /// `--start` columns read stays. `equeue` asks for it unless `--json`, `%Z` or `%E`:
    /// about 220 instead of 390 bytes per job in a 100,000-job listing.
    #[serde(default)]
    pub brief: bool,
}

/// Cancel (or signal) the selected jobs. At least one filter must be given.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelRequest {
    /// Which jobs.
    pub filter: JobFilter,
    /// Send only this signal (number) to running jobs instead of cancelling them; pending
    /// jobs are unaffected by a signal.
    #[serde(default)]
    pub signal: Option<i32>,
    /// Which of a running job's processes `signal` reaches (Slurm's default: the steps).
    #[serde(default)]
    pub scope: SignalScope,
}

/// Which processes of a running job a signal reaches, as scancel chooses them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SignalScope {
    /// Every step (`erun`'s tasks), not the batch shell: scancel's default.
    #[default]
    Steps,
    /// The batch shell only (`scancel -b`).
    Batch,
    /// The batch shell, what it started, and every step (`scancel -f`).
    Full,
}

/// Hold pending jobs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldRequest {
    /// The jobs.
    pub ids: Vec<u64>,
}

/// Let held jobs start again.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnholdRequest {
    /// The jobs.
    pub ids: Vec<u64>,
}

/// Requeue jobs (`econtrol requeue`, `requeuehold`; Slurm's `scontrol requeue`): each
/// running job is killed (as a cancel kills it) and, once its processes are gone, pending again
/// with the same id; a finished job is pending again at once. Pending jobs and jobs submitted
/// with `--no-requeue` are refused.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequeueRequest {
    /// The jobs.
    pub ids: Vec<u64>,
    /// Requeue them held (`requeuehold`): they wait for `econtrol release`.
    #[serde(default)]
    pub hold: bool,
}

/// What an administrator sets a node to (scontrol's `State=` of a node).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum NodeAdminState {
    /// Out of service at once: a job running on it ends NODE_FAIL (or is requeued).
    Down,
    /// No new job; a running one finishes (DRAINING until it does, then DRAINED).
    Drain,
    /// Back in service from DOWN or DRAIN.
    Resume,
    /// Back in service from DRAIN only (a DOWN node stays down).
    Undrain,
}

impl std::str::FromStr for NodeAdminState {
    type Err = String;
    /// scontrol's names in any case.
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_uppercase().as_str() {
            "DOWN" => Ok(NodeAdminState::Down),
            "DRAIN" => Ok(NodeAdminState::Drain),
            "RESUME" => Ok(NodeAdminState::Resume),
            "UNDRAIN" => Ok(NodeAdminState::Undrain),
            _ => Err(format!(
                "invalid node state `{s}` (expected DOWN, DRAIN, RESUME or UNDRAIN)"
            )),
        }
    }
}

/// Set nodes' administrative state (`econtrol update NodeName=… State=… Reason=…`); root or
/// batchd's user only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpdateNodesRequest {
    /// The nodes, a host list (`debug[001-004]`, `node03`).
    pub nodes: String,
    /// What they become.
    pub state: NodeAdminState,
    /// Why (required with DOWN and DRAIN, as scontrol requires it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Change fields of a pending job (`econtrol update`); `None` leaves a field alone.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UpdateRequest {
    /// The job.
    pub id: u64,
    /// New name.
    #[serde(default)]
    pub name: Option<String>,
    /// New time limit (ms) for a rigid job.
    #[serde(default)]
    pub time_limit: Option<u64>,
    /// New node count for a rigid job.
    #[serde(default)]
    pub nodes: Option<u32>,
    /// New `--begin` (ms since the epoch; 0 clears it).
    #[serde(default)]
    pub begin: Option<EpochMs>,
    /// New priority (root only may raise it).
    #[serde(default)]
    pub priority: Option<i64>,
    /// New pool of a pending job (scontrol's `Partition=`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// New dependencies of a pending job, replacing its own (`Dependency=`; empty: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependencies: Option<Vec<Dependency>>,
}

/// Show one job.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShowJobRequest {
    /// The job.
    pub id: u64,
}

/// Pools and nodes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InfoRequest {}

/// Finished jobs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcctRequest {
    /// Which jobs.
    #[serde(default)]
    pub filter: JobFilter,
    /// Only jobs that ended at or after this time.
    #[serde(default)]
    pub since: Option<EpochMs>,
    /// Only jobs that ended before this time.
    #[serde(default)]
    pub until: Option<EpochMs>,
}

/// Re-read the config and switch policy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReconfigureRequest {}

/// Ask for the daemon's figures.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatsRequest {}

/// Ask for a snapshot file (docs/whatif.md): pools and nodes, running jobs, every pending job
/// in queue order, the policy in force, read at one instant.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SnapshotRequest {
    /// A job to put in the queue of the snapshot as `--test-only` would, with the id the next
    /// submission would get (`esubmit --test-only --policy`); nothing is queued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with_job: Option<JobSpec>,
}

/// The nodes a running evolving job frees when its current step ends and the next one holds
/// fewer. Only while the job is told it is releasing (its step file says so); the count must
/// be exactly the difference; a second request replaces the first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseNodesRequest {
    /// The job.
    pub job: u64,
    /// Its nodes to free, in host-list syntax (`debug[002-003]`).
    pub nodes: String,
}

/// What a [`ReleaseNodesRequest`] recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseNodesReply {
    /// The job.
    pub job: u64,
    /// The nodes that leave it, compressed.
    pub nodes: String,
    /// When they leave it: the end of the current step (ms since the epoch).
    pub at: EpochMs,
    /// The step that begins then, from 1.
    pub next_step: u32,
}

/// What the daemon answers.
// `Stats` (its three timings) is the largest answer; it is asked for now and then, by hand or
// by a scrape, so a box would save nothing that counts.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Response {
    /// Handshake accepted.
    Hello(Hello),
    /// Versions.
    Version(VersionInfo),
    /// The job was queued (and stored).
    Submitted {
        /// Its id.
        id: u64,
    },
    /// `--test-only`: when it would start.
    TestOnly(TestOnlyReply),
    /// Jobs, in queue order (or by end time for accounting): the last (or only) part of a
    /// listing.
    Jobs(Vec<JobInfo>),
    /// A part of a long listing; more parts follow, the last one as [`Response::Jobs`]. The
    /// daemon splits listings so no frame nears [`crate::MAX_FRAME`]; [`crate::Client::jobs`]
    /// gathers them.
    JobsPart(Vec<JobInfo>),
    /// What a cancel, hold or release did.
    Acted(ActionReport),
    /// Pools and nodes.
    Info(ClusterInfo),
    /// The new config is in force.
    Reconfigured(ReconfigureReply),
    /// The nodes an evolving job chose to free are recorded.
    NodesReleased(ReleaseNodesReply),
    /// A launcher session is open.
    Subscribed(Subscribed),
    /// The session's pools' properties.
    ClustersInfo(Vec<PoolProperties>),
    /// The links between the session's pools (pairs without a configured link are absent).
    InterClusterInfo(Vec<PoolLink>),
    /// A session's request is recorded (the job keeps its place in the queue).
    Requested {
        /// The session's job.
        job: u64,
    },
    /// `done` is recorded; the session is over.
    DoneAck {
        /// The session's job.
        job: u64,
        /// What batchd counted on the session's connection before this answer (hello and
        /// subscribe included): a launcher measuring its traffic can check its own count.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        traffic: Option<SessionTraffic>,
    },
    /// Pushed to a session: its view changed.
    ChangeNotify(ChangeNotify),
    /// Pushed to a session: its job started.
    StartNotify(StartNotify),
    /// Pushed to a session: its job ended without `done` (killed at its duration, cancelled);
    /// the connection closes after it.
    SessionEnded(SessionEnded),
    /// A job's view.
    View(ViewReply),
    /// The request failed.
    Error(ErrorReply),
    /// The daemon's figures.
    Stats(DaemonStats),
    /// A step is recorded as started.
    StepStarted(crate::jobstep::StepStarted),
    /// Nodes' states were changed: the nodes, expanded.
    NodesUpdated(Vec<String>),
    /// Output of a step's part on another host.
    StepPartOutput {
        /// 1 (its standard output) or 2 (its standard error).
        fd: u8,
        /// The bytes, in hexadecimal.
        data: String,
    },
    /// A step's part on another host ended: its `erun`'s exit status.
    StepPartEnded {
        /// The status (the worst exit code, or 128 + a signal).
        status: i32,
    },
    /// A step's end is recorded.
    StepEnded {
        /// The job.
        job: u64,
        /// The step.
        step: u32,
    },
    /// The snapshot file asked for, as JSON (its layout is sched-sim's `whatif::SnapshotFile`,
    /// which this crate does not depend on).
    Snapshot {
        /// The file.
        file: serde_json::Value,
        /// The id `with_job` got in it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        with_job: Option<u64>,
    },
}

/// The daemon's versions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionInfo {
    /// Protocol version.
    pub proto_version: u32,
    /// Software version.
    pub software_version: String,
    /// Name of the policy in force.
    pub policy: String,
}

/// Where and when a job would start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestOnlyReply {
    /// Expected start, ms since the epoch; `None` when the policy did not place it (e.g. it
    /// waits for a dependency).
    pub expected_start: Option<EpochMs>,
    /// The pool, when placed.
    pub pool: Option<String>,
    /// Node count, when placed.
    pub nodes: Option<u32>,
}

/// A job an action could not be applied to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobFailure {
    /// The job.
    pub id: u64,
    /// Why.
    pub kind: ErrorKind,
    /// Said for humans.
    pub message: String,
}

/// The outcome of an action over several jobs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionReport {
    /// Jobs the action was applied to.
    pub done: Vec<u64>,
    /// Jobs it could not be applied to.
    pub failed: Vec<JobFailure>,
}

/// One node's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeState {
    /// Free.
    Idle,
    /// Held by a job.
    Allocated,
    /// Claimed for a co-allocated job that starts later (held idle until its start deadline;
    /// `job` names it): Slurm's `resv`.
    Reserved,
}

/// One node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInfo {
    /// Stable name (`debug003`; a host's name in a pool of hosts).
    pub name: String,
    /// State.
    pub state: NodeState,
    /// The job holding it.
    pub job: Option<u64>,
    /// Out of service (DOWN) or leaving it (DRAIN) and why; `None`: up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<NodeCondition>,
}

/// Why a node is out of service: sinfo's `REASON`, `USER` and `TIMESTAMP`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeCondition {
    /// DOWN: no job runs on it; DRAIN: no new job starts on it.
    pub down: bool,
    /// The reason given (by an administrator, or batchd's health check).
    pub reason: String,
    /// Who set it (`root`, or `batchd` for the health check).
    pub user: String,
    /// Since when, ms since the epoch.
    pub since: u64,
}

/// One pool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolInfo {
    /// Name.
    pub name: String,
    /// Node count.
    pub total: u32,
    /// The longest time limit of the pool's jobs in ms (its `max_time`); `None`: unbounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_time: Option<u64>,
    /// Nodes held by jobs.
    pub allocated: u32,
    /// Nodes claimed for co-allocated jobs that start later (idle, not free).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reserved: u32,
    /// Its nodes in compressed host-list syntax.
    pub node_list: String,
    /// Each node.
    pub nodes: Vec<NodeInfo>,
    /// CPUs of each node (the pool's `cpus_per_node`).
    #[serde(default = "one")]
    pub cpus_per_node: u32,
    /// Memory of each node in MiB (the pool's `mem_per_node`), when configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_per_node: Option<u64>,
}

fn one() -> u32 {
    1
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterInfo {
    /// Pools, in config order.
    pub pools: Vec<PoolInfo>,
    /// Policy in force.
    pub policy: String,
    /// Pending jobs.
    pub pending: u64,
    /// Running jobs.
    pub running: u64,
}

/// A successful reconfigure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReconfigureReply {
    /// Policy now in force.
    pub policy: String,
    /// The file read (`None`: the embedded default).
    pub config: Option<String>,
}

/// The daemon's figures (`econtrol show stats`, in the spirit of Slurm's `sdiag`). Times are
/// ms since the epoch, durations ms. The policy's counters count from `policy_since`: the
/// start, or the reconfigure that put the policy in force.
///
/// Every field has a default, so that fields added later (add, never rename) leave older
/// answers readable.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DaemonStats {
    /// When the daemon started.
    pub started: EpochMs,
    /// When these figures were taken (the daemon's clock).
    pub now: EpochMs,
    /// The policy in force.
    pub policy: String,
    /// When it came into force.
    pub policy_since: EpochMs,
    /// How long one plan may take (`[policy] time_budget_ms`).
    pub time_budget_ms: u64,
    /// Plans asked of the policy (its calls).
    pub policy_calls: u64,
    /// Calls that panicked.
    pub policy_panics: u64,
    /// Calls that failed otherwise (an instance that could not be rebuilt after a panic).
    pub policy_errors: u64,
    /// Plans the validator refused.
    pub refused_plans: u64,
    /// Calls abandoned at the time budget.
    pub policy_timeouts: u64,
    /// How long the call in flight has run, if one is.
    pub call_running_ms: Option<u64>,
    /// Whether the call in flight was abandoned at its budget (it runs on; until it returns
    /// the scheduler acts on the last valid plan without calling the policy).
    pub call_past_budget: bool,
    /// The latest call's time, from its dispatch to its validated answer (an abandoned one's
    /// too, once it returned), with microseconds as a fraction.
    pub last_plan_ms: Option<f64>,
    /// The longest call's time, as `last_plan_ms`.
    pub longest_plan_ms: Option<f64>,
    /// `--test-only` plans abandoned at the time budget since the start.
    pub test_only_timeouts: u64,
    /// Pending jobs.
    pub pending: u64,
    /// Running jobs.
    pub running: u64,
    /// Jobs accepted since the start (each task of an array counts).
    pub jobs_submitted: u64,
    /// Runs started since the start (a requeued job that starts again counts again).
    pub jobs_started: u64,
    /// Jobs ended COMPLETED since the start.
    pub jobs_completed: u64,
    /// Jobs ended in another final state but CANCELLED since the start (FAILED, TIMEOUT,
    /// PREEMPTED, DEADLINE, NODE_FAIL), pending or running.
    pub jobs_failed: u64,
    /// Jobs ended CANCELLED since the start, pending or running.
    pub jobs_cancelled: u64,
    /// Scheduling passes that called the policy (or found a call still running), from the
    /// snapshot to the acts.
    pub passes: Timing,
    /// Policy calls as the scheduler waits for them, from dispatch to validated plan.
    pub policy_call: Timing,
    /// Database transactions (a group commit is one), from `BEGIN` to `COMMIT`.
    pub store_commit: Timing,
    /// Client connections accepted since the start.
    pub connections: u64,
    /// Client connections open now (this one included).
    pub connections_open: u64,
}

/// How many times one kind of work was done since the daemon's start, how long it took in all
/// and at most, and the percentiles of the last 1,024 durations (none before the first), all
/// in ms with microseconds as a fraction.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Timing {
    /// How many.
    pub count: u64,
    /// Their total time.
    pub total_ms: f64,
    /// Median of the recent ones.
    pub p50_ms: Option<f64>,
    /// 90th percentile of the recent ones.
    pub p90_ms: Option<f64>,
    /// 99th percentile of the recent ones.
    pub p99_ms: Option<f64>,
    /// The longest since the start.
    pub max_ms: Option<f64>,
}

/// Kinds of error, for the tools to choose an exit code or a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Client and daemon speak different protocol versions.
    VersionMismatch,
    /// A message that could not be decoded, or out of place.
    BadRequest,
    /// A submission that cannot be accepted.
    InvalidSpec,
    /// No such job.
    InvalidJobId,
    /// Not the job's owner nor root.
    PermissionDenied,
    /// An action that does not apply in the job's state (e.g. hold a running job).
    InvalidState,
    /// The config file could not be read or is wrong.
    Config,
    /// The policy could not be loaded.
    PolicyLoad,
    /// The daemon failed internally (e.g. its database).
    Internal,
    /// Not now: the policy gave no answer within its time budget, or as many such requests
    /// as the daemon runs at once are running; the same request may succeed later.
    Busy,
}

/// A failed request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct ErrorReply {
    /// Kind.
    pub kind: ErrorKind,
    /// One line for humans.
    pub message: String,
}

impl ErrorReply {
    /// An error of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ErrorReply {
            kind,
            message: message.into(),
        }
    }

    /// The message every tool prints when client and daemon disagree on the protocol.
    pub fn version_mismatch(client: u32, daemon: u32) -> Self {
        ErrorReply::new(
            ErrorKind::VersionMismatch,
            format!("protocol version mismatch: client {client}, daemon {daemon}"),
        )
    }

    /// Slurm's wording for an action on someone else's job.
    pub fn permission_denied(id: u64) -> Self {
        ErrorReply::new(
            ErrorKind::PermissionDenied,
            format!("Access/permission denied for job {id}"),
        )
    }

    /// Slurm's wording for an unknown job.
    pub fn invalid_job(id: u64) -> Self {
        ErrorReply::new(
            ErrorKind::InvalidJobId,
            format!("Invalid job id specified: {id}"),
        )
    }
}

impl From<ErrorReply> for Response {
    fn from(e: ErrorReply) -> Self {
        Response::Error(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{JobShape, PendingReason};
    use crate::{frame, JobSpec};
    use crate::{MoldConfig, Step};

    fn info() -> JobInfo {
        JobInfo {
            id: 7,
            name: "x".into(),
            uid: 1000,
            user: "alice".into(),
            pool: Some("debug".into()),
            state: JobState::Pending,
            reason: Some(PendingReason::Dependency),
            detail: None,
            nodes: 2,
            node_list: None,
            submit_time: 1,
            start_time: None,
            end_time: None,
            expected_start: Some(5),
            time_limit: 60_000,
            exit_code: None,
            signal: None,
            work_dir: "/tmp".into(),
            stdout: "/tmp/slurm-7.out".into(),
            stderr: "/tmp/slurm-7.out".into(),
            shape: JobShape::Rigid {
                nodes: 2,
                time_limit: 60_000,
            },
            begin: None,
            dependencies: vec![Dependency::Singleton],
            priority: 0,
            held: false,
            args: vec![],
            scheduled_ep: None,
            step: None,
            chosen: None,
            array: None,
            account: None,
            qos: None,
            warn_signal: None,
            job_steps: Vec::new(),
            inert: None,
            resources: None,
            slurm_allocations: None,
        }
    }

    fn round_trip<T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(v: &T) {
        let bytes = frame::encode(v).unwrap();
        let back: T = frame::decode(&bytes[frame::HEADER_LEN..]).unwrap();
        assert_eq!(&back, v);
    }

    #[test]
    fn every_request_round_trips() {
        let mut spec = JobSpec::new("#!/bin/sh\necho hi\n", "/tmp", 1, 1000);
        spec.dependencies = Dependency::parse_list("afterok:1,singleton").unwrap();
        spec.environment = vec![("A".into(), "b c".into())];
        let mut evolving = spec.clone();
        evolving.shape = JobShape::Evolving {
            steps: vec![Step::new(500, 5), Step::new(3600, 10)],
        };
        let mut moldable = spec.clone();
        moldable.shape = JobShape::Moldable {
            configs: vec![MoldConfig {
                nodes: 4,
                walltime: 60_000,
            }],
            model: Some(crate::MoldModel {
                model: crate::SpeedupModel::Amdahl {
                    work: 3_600_000,
                    serial: 0.05,
                },
                min_nodes: 1,
                max_nodes: 32,
            }),
            weight: Some(2.5),
        };
        let reqs = vec![
            Request::Hello(Hello::current()),
            Request::Version(VersionRequest {}),
            Request::Submit(SubmitRequest {
                spec,
                test_only: false,
            }),
            Request::Submit(SubmitRequest {
                spec: evolving,
                test_only: true,
            }),
            Request::Submit(SubmitRequest {
                spec: moldable,
                test_only: false,
            }),
            Request::List(ListRequest {
                filter: JobFilter {
                    users: vec!["alice".into()],
                    ..Default::default()
                },
                include_finished: true,
                brief: true,
            }),
            Request::Cancel(CancelRequest {
                filter: JobFilter {
                    states: vec![JobState::Pending],
                    ..Default::default()
                },
                signal: Some(10),
                scope: SignalScope::Batch,
            }),
            Request::Hold(HoldRequest { ids: vec![1, 2] }),
            Request::Unhold(UnholdRequest { ids: vec![3] }),
            Request::Update(UpdateRequest {
                id: 4,
                name: Some("n".into()),
                ..Default::default()
            }),
            Request::ShowJob(ShowJobRequest { id: 9 }),
            Request::Info(InfoRequest {}),
            Request::Acct(AcctRequest {
                since: Some(3),
                ..Default::default()
            }),
            Request::Reconfigure(ReconfigureRequest {}),
            Request::Stats(StatsRequest {}),
        ];
        for r in &reqs {
            round_trip(r);
        }
    }

    /// `Unhold` is the code's name only: on the wire it is still `Release`, so tools and
    /// daemons of this protocol version understand each other whichever side was rebuilt.
    #[test]
    fn unhold_keeps_its_wire_name() {
        let r = Request::Unhold(UnholdRequest { ids: vec![3] });
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(json, r#"{"Release":{"ids":[3]}}"#);
        assert_eq!(serde_json::from_str::<Request>(&json).unwrap(), r);
    }

    /// A key from a `JobInfo` and the filter agree; the pool is the one shown.
    #[test]
    fn filters_select_by_key() {
        let key = FilterKey {
            id: 7,
            uid: 1000,
            user: "alice",
            name: "sim",
            state: JobState::Running,
            pool: None,
            array: None,
        };
        assert!(JobFilter::default().selects(key));
        let by_pool = JobFilter {
            pools: vec!["debug".into()],
            ..Default::default()
        };
        assert!(!by_pool.selects(key));
        assert!(by_pool.selects(FilterKey {
            pool: Some("debug"),
            ..key
        }));
        assert!(!by_pool.selects(FilterKey {
            pool: Some("other"),
            ..key
        }));
        // Slurm 22.05: `squeue -p P` lists a pending job submitted without -p when P is the
        // default partition; here the policy may start it in any pool, so every -p lists it.
        let pending = FilterKey {
            state: JobState::Pending,
            ..key
        };
        assert!(by_pool.selects(pending));
        // Unless no pool named exists: then nothing can go there.
        assert!(by_pool
            .prepare()
            .known_pools(|p| p == "debug")
            .selects(pending));
        assert!(!by_pool
            .prepare()
            .known_pools(|p| p == "other")
            .selects(pending));
        let by_uid = JobFilter {
            users: vec!["1000".into()],
            ..Default::default()
        };
        assert!(by_uid.selects(key));
        assert!(!by_uid.selects(FilterKey { uid: 1, ..key }));
    }

    #[test]
    fn every_response_round_trips() {
        let resps = vec![
            Response::Hello(Hello::current()),
            Response::Version(VersionInfo {
                proto_version: 1,
                software_version: "x".into(),
                policy: "cbf".into(),
            }),
            Response::Submitted { id: 42 },
            Response::TestOnly(TestOnlyReply {
                expected_start: Some(1),
                pool: Some("debug".into()),
                nodes: Some(2),
            }),
            Response::Jobs(vec![info()]),
            Response::JobsPart(vec![info(), info()]),
            Response::Acted(ActionReport {
                done: vec![1],
                failed: vec![JobFailure {
                    id: 2,
                    kind: ErrorKind::PermissionDenied,
                    message: "no".into(),
                }],
            }),
            Response::Info(ClusterInfo {
                pools: vec![PoolInfo {
                    name: "debug".into(),
                    total: 1,
                    max_time: Some(60_000),
                    allocated: 1,
                    reserved: 0,
                    node_list: "debug001".into(),
                    nodes: vec![NodeInfo {
                        name: "debug001".into(),
                        state: NodeState::Allocated,
                        job: Some(1),
                        condition: None,
                    }],
                    cpus_per_node: 1,
                    mem_per_node: None,
                }],
                policy: "cbf".into(),
                pending: 0,
                running: 1,
            }),
            Response::Reconfigured(ReconfigureReply {
                policy: "easy".into(),
                config: None,
            }),
            Response::Error(ErrorReply::version_mismatch(2, 1)),
            Response::Error(ErrorReply::new(ErrorKind::Busy, "later")),
            Response::Stats(DaemonStats {
                started: 1,
                now: 2,
                policy: "cbf".into(),
                policy_timeouts: 3,
                call_running_ms: Some(4),
                call_past_budget: true,
                last_plan_ms: Some(0.125),
                ..Default::default()
            }),
        ];
        for r in &resps {
            round_trip(r);
        }
    }

    /// Stats are read by tools of other builds: fields left out (a daemon older than a field,
    /// or newer fields a tool does not know) never fail the answer.
    #[test]
    fn stats_take_defaults_and_ignore_unknown_fields() {
        let s: Response =
            serde_json::from_str(r#"{"Stats":{"policy":"easy","pending":2,"later_field":1}}"#)
                .unwrap();
        let Response::Stats(s) = s else { panic!() };
        assert_eq!((s.policy.as_str(), s.pending), ("easy", 2));
        assert_eq!((s.policy_timeouts, s.call_running_ms), (0, None));
        assert_eq!(ErrorKind::Busy, serde_json::from_str("\"busy\"").unwrap());
    }

    #[test]
    fn mismatch_message_names_both_versions() {
        assert_eq!(
            ErrorReply::version_mismatch(2, 1).to_string(),
            "protocol version mismatch: client 2, daemon 1"
        );
    }

    /// The filter's rule as it reads on the lists themselves: the oracle of the prepared one.
    fn naive(f: &JobFilter, key: FilterKey<'_>) -> bool {
        ((f.ids.is_empty() && f.tasks.is_empty())
            || f.ids.contains(&key.id)
            || key.array.is_some_and(|t| {
                f.ids.contains(&t.array_id) || f.tasks.contains(&(t.array_id, t.index))
            }))
            && (f.users.is_empty()
                || f.users
                    .iter()
                    .any(|u| u == key.user || u.parse::<u32>() == Ok(key.uid)))
            && (f.names.is_empty() || f.names.iter().any(|n| n == key.name))
            && (f.states.is_empty() || f.states.contains(&key.state))
            && (f.pools.is_empty()
                || match key.pool {
                    Some(p) => f.pools.iter().any(|q| q == p),
                    // A pending job without a pool may go to any pool named.
                    None => key.state == JobState::Pending,
                })
    }

    proptest::proptest! {
        /// The prepared filter (sorted sets) selects exactly what the rule on the lists does,
        /// repeats and all.
        #[test]
        fn the_prepared_filter_is_the_rule(
            ids in proptest::collection::vec(0u64..12, 0..4),
            tasks in proptest::collection::vec((0u64..12, 0u64..3), 0..3),
            users in proptest::collection::vec(proptest::sample::select(vec!["alice", "bob", "1000", "7"]), 0..3),
            names in proptest::collection::vec(proptest::sample::select(vec!["a", "b"]), 0..2),
            states in proptest::collection::vec(proptest::sample::select(JobState::ALL.to_vec()), 0..3),
            pools in proptest::collection::vec(proptest::sample::select(vec!["debug", "gpu"]), 0..2),
            id in 0u64..12,
            array in proptest::option::of((0u64..12, 0u64..3)),
            uid in proptest::sample::select(vec![7u32, 1000, 5]),
            user in proptest::sample::select(vec!["alice", "bob", "7"]),
            name in proptest::sample::select(vec!["a", "b"]),
            state in proptest::sample::select(JobState::ALL.to_vec()),
            pool in proptest::option::of(proptest::sample::select(vec!["debug", "gpu"])),
        ) {
            let f = JobFilter {
                ids,
                tasks,
                users: users.into_iter().map(String::from).collect(),
                names: names.into_iter().map(String::from).collect(),
                states,
                pools: pools.into_iter().map(String::from).collect(),
            };
            let task = array.map(|(a, i)| crate::ArraySpec { indices: vec![i], throttle: None }.task(a, i));
            let key = FilterKey { id, uid, user, name, state, pool, array: task.as_ref() };
            let prepared = f.prepare();
            proptest::prop_assert_eq!(prepared.selects(key), naive(&f, key));
            proptest::prop_assert_eq!(f.selects(key), naive(&f, key));
            proptest::prop_assert!(prepared.ids().windows(2).all(|w| w[0] < w[1]));
            // A job it selects has its id in the span, a task's id following its array's.
            let real = array.is_none_or(|(a, _)| (a..a + crate::array::MAX_ARRAY_SIZE as u64).contains(&id));
            if let (true, true, Some((lo, hi))) = (real, prepared.selects(key), prepared.id_span()) {
                proptest::prop_assert!(lo <= id && id <= hi, "{id} outside {lo}..={hi}");
            }
            proptest::prop_assert_eq!(prepared.id_span().is_none(), f.ids.is_empty() && f.tasks.is_empty());
        }
    }

    #[test]
    fn filters_match_on_every_list() {
        let j = info();
        assert!(JobFilter::default().matches(&j));
        assert!(JobFilter {
            users: vec!["1000".into()],
            ..Default::default()
        }
        .matches(&j));
        assert!(JobFilter {
            users: vec!["alice".into()],
            ..Default::default()
        }
        .matches(&j));
        assert!(!JobFilter {
            users: vec!["bob".into()],
            ..Default::default()
        }
        .matches(&j));
        let f = JobFilter {
            ids: vec![7],
            states: vec![JobState::Running],
            ..Default::default()
        };
        assert!(!f.matches(&j));
        assert!(JobFilter {
            pools: vec!["debug".into()],
            ..Default::default()
        }
        .matches(&j));
    }
}
