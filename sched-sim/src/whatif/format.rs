//! The snapshot file (`econtrol snapshot`): batchd's state as its policy sees it, with what a
//! replay needs besides (who waits for whom, who is held, the daemon's own expected starts).
//!
//! The format is JSON, documented in docs/whatif.md, and versioned by `version`. Version 1 held
//! only what a policy is shown (the eligible pending jobs, no names, holds, dependencies, node
//! states or expected starts); version 2 adds them. [`SnapshotFile::from_json`] reads both: a
//! version-1 file reads as a version 2 whose pending jobs are all eligible and whose other
//! additions are empty.

use std::collections::BTreeMap;

use sched_core::{Pending, Pool, Running, Time};
use serde::{Deserialize, Serialize};

/// The value of `format`, so that a file of another kind is named as such.
pub const FORMAT: &str = "esched-snapshot";

/// The version this build writes.
pub const VERSION: u32 = 2;

/// A snapshot file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// Not JSON, or not of the layout of its version.
    #[error("not an esched snapshot: {0}")]
    Json(#[from] serde_json::Error),
    /// Another kind of file.
    #[error("not an esched snapshot: `format` is `{0}`, not `{want}`", want = FORMAT)]
    Format(String),
    /// A version this build does not know.
    #[error("snapshot version {0} is not one this build reads (1 to {max}): use a newer esim", max = VERSION)]
    Version(u32),
}

/// The policy in force when the snapshot was taken.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PolicyInForce {
    /// Its name (a stock policy) or the path of its library.
    pub name: String,
    /// Its parameters, as the config gives them (`[policy.params]`).
    #[serde(default)]
    pub params: BTreeMap<String, String>,
    /// The daemon's `plugin_dir`, where it looks for a named policy's library.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_dir: Option<String>,
}

/// One node of a pool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeState {
    /// Its name.
    pub name: String,
    /// `idle`, `allocated`, `reserved` (claimed for a pending job), `down` or `drain`, as
    /// `einfo` says it.
    pub state: String,
    /// The job holding it, if one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<u64>,
}

/// A pool and its nodes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoolEntry {
    /// The pool as a policy sees it (`id`, `name`, `nodes`).
    #[serde(flatten)]
    pub pool: Pool,
    /// Its nodes, in order (version 2).
    #[serde(default)]
    pub node_states: Vec<NodeState>,
}

/// What an entry of `running` is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Holder {
    /// A job.
    #[default]
    Job,
    /// The idle nodes of a pool that are out of service (down or drained), shown to the policy
    /// as held for ever.
    OutOfService,
    /// The nodes of a pool that leave at a known time (its Slurm allocation's end), shown as
    /// held from then on.
    PoolEnd,
    /// The nodes an ended job freed, kept from the policy for CooRM's fair-start delay while a
    /// launcher waits (Klein & Pérez, §III-C).
    FairStart,
}

/// A running job, or nodes the policy sees as held ([`Holder`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunningEntry {
    /// As the policy sees it: `holds` until its expected end, from its start (an evolving
    /// job's and an overrunning job's from `now`; a fair-start hold's from the end that freed
    /// the nodes).
    #[serde(flatten)]
    pub job: Running,
    /// What this entry is.
    #[serde(default)]
    pub holder: Holder,
    /// Its name (version 2).
    #[serde(default)]
    pub name: String,
    /// Its owner's name (version 2; empty in version 1).
    #[serde(default)]
    pub user_name: String,
}

/// What a dependency waits for, Slurm's `--dependency` kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DepKind {
    /// The job has started.
    After,
    /// The job has ended.
    AfterAny,
    /// The job has completed (a replay's jobs all complete).
    AfterOk,
    /// The job has failed (a replay's jobs never do).
    AfterNotOk,
}

/// One dependency still open when the snapshot was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dependency {
    /// What it waits for.
    pub kind: DepKind,
    /// On which job.
    pub job: u64,
}

/// A pending job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingEntry {
    /// As a policy sees it (`earliest_start` is `--begin`; `priority` orders the queue).
    #[serde(flatten)]
    pub job: Pending,
    /// Its name (version 2).
    #[serde(default)]
    pub name: String,
    /// Its owner's name (version 2).
    #[serde(default)]
    pub user_name: String,
    /// Whether the policy was shown it: not held, its dependencies met, not held back by
    /// `singleton` or by its array's throttle. Version 1 held only these.
    #[serde(default = "yes")]
    pub eligible: bool,
    /// Held (`-H`, `econtrol hold`).
    #[serde(default)]
    pub held: bool,
    /// The dependencies still open, `singleton` included as `afterany` on the jobs of the same
    /// name and user that run or wait before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<Dependency>,
    /// The daemon's pending reason (`equeue`'s), when not eligible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The daemon's expected start from its latest plan (`equeue --start`), ms since the
    /// epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_start: Option<Time>,
}

fn yes() -> bool {
    true
}

/// A snapshot file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SnapshotFile {
    /// Always [`FORMAT`].
    pub format: String,
    /// The layout's version ([`VERSION`] when written by this build).
    pub version: u32,
    /// When it was taken, ms since the epoch: the policy's `now`.
    pub now: Time,
    /// The policy in force.
    pub policy: PolicyInForce,
    /// The pools, in config order (`id` is the index).
    pub pools: Vec<PoolEntry>,
    /// The running jobs and the nodes shown as held.
    pub running: Vec<RunningEntry>,
    /// Every pending job, in queue order (version 1: only the eligible ones).
    pub pending: Vec<PendingEntry>,
}

impl SnapshotFile {
    /// Reads a file of any version this build knows.
    pub fn from_json(text: &str) -> Result<SnapshotFile, FormatError> {
        #[derive(Deserialize)]
        struct Head {
            format: String,
            version: u32,
        }
        let head: Head = serde_json::from_str(text)?;
        if head.format != FORMAT {
            return Err(FormatError::Format(head.format));
        }
        if head.version > VERSION || head.version == 0 {
            return Err(FormatError::Version(head.version));
        }
        // Version 1 is version 2 without its additions, all of which default.
        Ok(serde_json::from_str(text)?)
    }

    /// The pools as a policy sees them.
    pub fn pools(&self) -> Vec<Pool> {
        self.pools.iter().map(|p| p.pool.clone()).collect()
    }

    /// The total node count.
    pub fn nodes(&self) -> u64 {
        self.pools.iter().map(|p| u64::from(p.pool.nodes)).sum()
    }
}
