//! CooRM launcher sessions (Klein & Pérez, *An RMS Architecture for Efficiently Supporting
//! Complex-Moldable Applications*, HPCC 2011, §III-B), on batchd's socket.
//!
//! A launcher sends [`SubscribeRequest`] after the hello; from then on the connection is a
//! session: the launcher's requests are answered in order, and between the answers batchd
//! pushes [`Response::ChangeNotify`](crate::Response::ChangeNotify),
//! [`Response::StartNotify`](crate::Response::StartNotify) and
//! [`Response::SessionEnded`](crate::Response::SessionEnded). docs/coorm.md ("Protocol") gives
//! the frames and an example exchange.

use serde::{Deserialize, Serialize};

use crate::job::PoolNodes;
use crate::EpochMs;

/// The paper's FILTER: which pools a launcher wants to hear about.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionFilter {
    /// Pools by name; empty: every pool.
    #[serde(default)]
    pub pools: Vec<String>,
    /// Only pools with at least this many nodes (the paper's "minimum number of hosts").
    #[serde(default)]
    pub min_nodes: u32,
}

/// `subscribe`: open a launcher session. Its job is queued at once; the subscribe time (the
/// job id's order) is its priority until it ends, whatever requests it sends.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscribeRequest {
    /// The pools of interest.
    #[serde(default)]
    pub filter: SessionFilter,
    /// The job's name (default `launcher`).
    #[serde(default)]
    pub name: Option<String>,
}

/// The answer to [`SubscribeRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscribed {
    /// The session's job.
    pub job: u64,
    /// The pools that passed the filter, in config order.
    pub pools: Vec<String>,
}

/// `listClustersInfo`: the subscribed pools' properties (no fields).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListClustersInfoRequest {}

/// `listInterClusterInfo`: the links between the subscribed pools (no fields).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListInterClusterInfoRequest {}

/// The paper's CINFO: one pool's properties.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoolProperties {
    /// The pool.
    pub pool: String,
    /// Its node count.
    pub nodes: u32,
    /// Relative speed of its nodes (1.0: the reference; config key `speed`).
    pub speed: f64,
}

/// The paper's ICINFO: the network between two pools (config `[[links]]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoolLink {
    /// One end.
    pub a: String,
    /// The other end.
    pub b: String,
    /// One-way latency, ms.
    pub latency_ms: f64,
    /// Bandwidth, Mbit/s.
    pub bandwidth_mbps: f64,
}

/// `request` (and its updates): nodes per pool for `duration_ms`. Always accepted: a request
/// larger than the platform waits for ever (§III-A, footnote 4). Only before the start.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRequest {
    /// Nodes per pool (subscribed pools only, each at most once, each count positive).
    pub pools: Vec<PoolNodes>,
    /// How long the allocation lasts, ms; a job still running then is killed.
    pub duration_ms: u64,
}

/// `done`: the application has finished; its nodes are freed (after the fair-start delay) and
/// the session ends. Before the start it withdraws the job.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DoneRequest {}

/// What changed about one pool (the paper's CHANGE type).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeType {
    /// The pool's properties: pull them with `listClustersInfo`.
    Info,
    /// The links: pull them with `listInterClusterInfo`.
    Interinfo,
    /// The pool's availability: the new CAP is in the message.
    Availability,
}

/// One step of a Cluster Availability Profile: `free` nodes on `[from, to)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapStep {
    /// Start, ms since the epoch.
    pub from: EpochMs,
    /// End, ms since the epoch; `None`: for ever (the last step).
    pub to: Option<EpochMs>,
    /// Nodes expected free.
    pub free: u32,
}

/// One change (the paper's CHANGE: `{CID, type, CAP}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The pool.
    pub pool: String,
    /// What changed.
    #[serde(rename = "type")]
    pub kind: ChangeType,
    /// The new CAP, for [`ChangeType::Availability`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<Vec<CapStep>>,
}

/// `changeNotify`: pushed at subscribe and whenever the session's view changes, until its start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeNotify {
    /// The session's job.
    pub job: u64,
    /// When the view was computed, ms since the epoch.
    pub now: EpochMs,
    /// The pools whose view changed.
    pub changes: Vec<Change>,
}

/// One pool's share of a start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartedPool {
    /// The pool.
    pub pool: String,
    /// The nodes (the paper's RIDs), in the order they were given.
    pub nodes: Vec<String>,
}

/// `startNotify`: the request's nodes are the launcher's, from `start` to `end`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartNotify {
    /// The session's job.
    pub job: u64,
    /// Start, ms since the epoch.
    pub start: EpochMs,
    /// When the job is killed unless `done` came first.
    pub end: EpochMs,
    /// The nodes per pool.
    pub pools: Vec<StartedPool>,
}

/// Why a session ended without the launcher's `done`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionEnded {
    /// The session's job.
    pub job: u64,
    /// The job's final state name (`TIMEOUT`, `CANCELLED`, …).
    pub state: String,
    /// Said for humans.
    pub reason: String,
}

/// Frames and bytes on one launcher session's connection, as one side counted them. Bytes are
/// whole frames (the 4-byte length included); the JSON alone is `bytes − 4 · frames`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionTraffic {
    /// Frames the launcher sent (batchd received).
    pub frames_in: u64,
    /// Their bytes.
    pub bytes_in: u64,
    /// Frames batchd sent (the launcher received).
    pub frames_out: u64,
    /// Their bytes.
    pub bytes_out: u64,
}

impl SessionTraffic {
    /// JSON bytes, both ways, without the frames' length prefixes.
    pub fn json_bytes(&self) -> u64 {
        (self.bytes_in + self.bytes_out)
            .saturating_sub(crate::frame::HEADER_LEN as u64 * (self.frames_in + self.frames_out))
    }

    /// `self + o`.
    pub fn add(&mut self, o: &SessionTraffic) {
        self.frames_in += o.frames_in;
        self.bytes_in += o.bytes_in;
        self.frames_out += o.frames_out;
        self.bytes_out += o.bytes_out;
    }
}

/// `eview`: ask for a job's latest view.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewRequest {
    /// The job.
    pub job: u64,
}

/// One pool of a view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolView {
    /// The pool.
    pub pool: String,
    /// Its CAP.
    pub steps: Vec<CapStep>,
}

/// A job's view as the latest policy run computed it (the same CAPs its launcher was sent).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewReply {
    /// The job.
    pub job: u64,
    /// When it was computed, ms since the epoch.
    pub now: EpochMs,
    /// Per pool.
    pub pools: Vec<PoolView>,
}
