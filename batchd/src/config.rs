//! batchd's configuration: TOML, with an embedded default (`src/default.toml`).
//!
//! Unknown keys are refused (`deny_unknown_fields`): a typo must not silently fall back to a
//! default. Errors name the file, the key and the reason on one line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The configuration compiled into the binary.
pub const DEFAULT_CONFIG: &str = include_str!("default.toml");

/// How hard a commit is pushed to the disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sync {
    /// SQLite `synchronous=FULL`: the write-ahead log is fsync'd at every commit, so an
    /// acknowledged submission survives a power cut as well as a `kill -9`.
    #[default]
    Full,
    /// SQLite `synchronous=NORMAL`: survives `kill -9` of batchd (the log is in the kernel's
    /// page cache), but a power cut may lose the last commits.
    Normal,
}

/// One pool of virtual nodes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolConfig {
    /// Name (`debug`); its virtual nodes are called `debug001`, `debug002`, ….
    pub name: String,
    /// Node count (of a pool of hosts: the count of its hosts, which it may leave out).
    #[serde(default)]
    pub nodes: u32,
    /// The pool's hosts, a Slurm host list (`node[01-16]`): a pool of real machines reached
    /// over OpenSSH (`[pool.ssh]`), its nodes named by their hosts. Without it, the pool's
    /// nodes are virtual, and its jobs run on batchd's own machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<String>,
    /// How a pool of `hosts` is reached (defaults when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh: Option<SshConfig>,
    /// A pool of nodes held in a Slurm allocation that batchd asks for (`[pool.slurm]`): its
    /// `nodes` are the allocation's size, named by Slurm, and its jobs run as steps of the
    /// allocation (docs/hosts.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<SlurmConfig>,
    /// The longest time limit a job of the pool may have, and what `-t UNLIMITED` gives it
    /// (Slurm's partition `MaxTime`): minutes, a string in any of `-t`'s forms (`"1-12:00"`),
    /// or `"UNLIMITED"` (the default: up to `batch_proto::MAX_TIME_LIMIT`, 365 days).
    #[serde(default)]
    pub max_time: MaxTime,
    /// CPUs of each node (Slurm's `CPUs`), what `-n`, `-c` and `--ntasks-per-node` are counted
    /// against (default 1: a task per node).
    #[serde(default = "default_cpus_per_node")]
    pub cpus_per_node: u32,
    /// Memory of each node in MiB (Slurm's `RealMemory`), what `--mem` and `--mem-per-cpu`
    /// are checked against; unset: memory requests are not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_per_node: Option<u64>,
    /// Relative speed of its nodes (CooRM's CINFO, sent to launchers; 1.0 the reference).
    #[serde(default = "default_speed")]
    pub speed: f64,
}

fn default_cluster_name() -> String {
    "esched".into()
}

fn default_cpus_per_node() -> u32 {
    1
}

/// How batchd reaches the hosts of a pool (`[pool.ssh]`): plain OpenSSH, in batch mode, one
/// multiplexed connection per host (docs/hosts.md).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SshConfig {
    /// The user batchd logs in as on every host (default: batchd's own user). Jobs of other
    /// users need it to be root, whose supervisor switches to each job's user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The private key (default: ssh's own choice, `~/.ssh/id_*` or the agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_file: Option<PathBuf>,
    /// The port (default: ssh's, 22 unless the ssh config says otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// More options for `ssh`, as given on its command line (`["-F", "/etc/esched/ssh_config"]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// The batchd program on the hosts (default: the path of this batchd, as on a cluster
    /// whose nodes share its installation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batchd: Option<PathBuf>,
    /// Where jobs' directories are made on the hosts, under a directory per host (default
    /// `/var/spool/esched`); the login user must be able to create it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spool: Option<PathBuf>,
    /// How often each host is asked whether it answers, in ms (default 1,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_interval_ms: Option<u64>,
    /// A host that has not answered for this long is set DOWN, in ms (default 10,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_after_ms: Option<u64>,
}

impl SshConfig {
    /// [`SshConfig::health_interval_ms`] or its default.
    pub fn health_interval(&self) -> u64 {
        self.health_interval_ms.unwrap_or(1_000).max(1)
    }

    /// [`SshConfig::down_after_ms`] or its default.
    pub fn down_after(&self) -> u64 {
        self.down_after_ms.unwrap_or(10_000).max(1)
    }

    /// [`SshConfig::spool`] or its default.
    pub fn spool(&self) -> PathBuf {
        self.spool
            .clone()
            .unwrap_or_else(|| PathBuf::from("/var/spool/esched"))
    }
}

/// What a job that cannot end before its Slurm allocation does (`[pool.slurm] on_no_fit`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoFit {
    /// It waits: when the allocation has ended, batchd asks for a new one for the jobs that
    /// wait.
    #[default]
    Wait,
    /// It is refused at submission, with the allocation's end as the reason.
    Refuse,
}

/// The Slurm allocation a pool stands on (`[pool.slurm]`): what batchd asks `salloc` for, as
/// an ordinary user of the cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmConfig {
    /// The partition (`salloc -p`; default: Slurm's default partition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// The account (`salloc -A`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// The allocation's time limit in Slurm's format (`salloc -t`, e.g. `"8:00:00"`; default:
    /// the partition's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<String>,
    /// More options for `salloc`, as given on its command line (`["--qos=long"]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// Where Slurm's commands are (`salloc`, `srun`, `squeue`, `sinfo`, `scancel`); default:
    /// batchd's `PATH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bin_dir: Option<PathBuf>,
    /// What a job that cannot end before the allocation does: `"wait"` (the default) or
    /// `"refuse"`.
    #[serde(default)]
    pub on_no_fit: NoFit,
    /// Nodes beyond the allocation the pool may grow onto (default 0): the policy plans on
    /// `nodes + grow` nodes, and a job given one of the extra nodes (an evolving job growing
    /// past the allocation) runs there in a sibling allocation batchd asks for then, for that
    /// job's remaining time, and gives back when the job lets the node go.
    #[serde(default)]
    pub grow: u32,
    /// How often Slurm is asked how the allocation and its nodes stand, in ms (default 2,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
}

impl SlurmConfig {
    /// [`SlurmConfig::poll_interval_ms`] or its default.
    pub fn poll_interval(&self) -> u64 {
        self.poll_interval_ms.unwrap_or(2_000).max(100)
    }

    /// The path of Slurm's command `name`.
    pub fn program(&self, name: &str) -> PathBuf {
        match &self.bin_dir {
            Some(d) => d.join(name),
            None => PathBuf::from(name),
        }
    }
}

impl PoolConfig {
    /// The pool's nodes as policies see them: its `nodes`, and a Slurm pool's `grow` beyond.
    pub fn size(&self) -> u32 {
        self.nodes
            .saturating_add(self.slurm.as_ref().map_or(0, |s| s.grow))
    }

    /// The pool's hosts, expanded, when it has `hosts` (checked by [`Config::parse`]).
    pub fn host_names(&self) -> Option<Vec<String>> {
        self.hosts
            .as_deref()
            .and_then(|h| batch_proto::hostlist::expand_at_most(h, MAX_HOSTS).ok())
    }

    /// What one node of the pool has, for `batch_proto::resources`.
    pub fn node_size(&self) -> batch_proto::resources::NodeSize {
        batch_proto::resources::NodeSize {
            cpus: self.cpus_per_node,
            mem: self.mem_per_node,
        }
    }
}

fn default_speed() -> f64 {
    1.0
}

/// The network between two pools (CooRM's ICINFO, sent to launchers; `[[link]]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// The two pools, by name.
    pub pools: [String; 2],
    /// One-way latency, ms.
    pub latency_ms: f64,
    /// Bandwidth, Mbit/s.
    pub bandwidth_mbps: f64,
}

/// CooRM launcher sessions (docs/coorm.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoormConfig {
    /// The fair-start delay (Klein & Pérez, HPCC 2011, §III-C), ms: the nodes a session frees
    /// with `done`, and those any other end frees while a session waits, stay busy this long,
    /// so a higher-priority launcher with a slower selection can ask for them before a
    /// quicker, later job takes them.
    #[serde(default = "default_fair_start")]
    pub fair_start_ms: u64,
}

impl Default for CoormConfig {
    fn default() -> Self {
        CoormConfig {
            fair_start_ms: default_fair_start(),
        }
    }
}

/// §IV-A's value, 5 s.
fn default_fair_start() -> u64 {
    5_000
}

/// A pool's `max_time`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MaxTime {
    /// No bound of the pool's: `batch_proto::MAX_TIME_LIMIT`.
    #[default]
    Unlimited,
    /// At most this many minutes (positive, at most 365 days).
    Minutes(u64),
}

impl MaxTime {
    /// Whether it is the default.
    pub fn is_unlimited(&self) -> bool {
        *self == MaxTime::Unlimited
    }

    /// The bound in ms, `None` for UNLIMITED.
    pub fn ms(self) -> Option<u64> {
        match self {
            MaxTime::Unlimited => None,
            MaxTime::Minutes(m) => Some(m.saturating_mul(60_000)),
        }
    }
}

impl Serialize for MaxTime {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            MaxTime::Unlimited => s.serialize_str("UNLIMITED"),
            MaxTime::Minutes(m) => s.serialize_u64(*m),
        }
    }
}

impl<'de> Deserialize<'de> for MaxTime {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = MaxTime;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("minutes, a Slurm time (\"1-12:00:00\") or \"UNLIMITED\"")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<MaxTime, E> {
                let max = batch_proto::MAX_TIME_LIMIT / 60_000;
                match u64::try_from(v) {
                    Ok(m) if (1..=max).contains(&m) => Ok(MaxTime::Minutes(m)),
                    _ => Err(E::custom(format!(
                        "max_time {v} is not in 1..={max} minutes (365 days); use \"UNLIMITED\" for the longest"
                    ))),
                }
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<MaxTime, E> {
                self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
            }
            // Slurm's forms, as a partition's MaxTime and `-t` take them (`"2-00:00:00"`,
            // `"90"`), with seconds rounded up to the minute: MaxTime is kept in minutes.
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<MaxTime, E> {
                match batch_proto::time::slurm_duration_secs(v) {
                    Ok(None) => Ok(MaxTime::Unlimited),
                    Ok(Some(secs)) => self.visit_u64(secs.div_ceil(60)),
                    Err(why) => Err(E::custom(format!("max_time `{v}`: {why}"))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// Which policy runs, and its parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// A policy name (`cbf`, `easy`, `fcfs`, …, looked up in the plugin directory) or a path
    /// to a policy library.
    pub name: String,
    /// How long one plan may take, in ms: a call still running then is abandoned and the
    /// last valid plan acted on (docs/batchd.md, *Scheduling*). Before `params`: TOML writes
    /// a table's plain keys before its sub-tables.
    #[serde(default = "default_time_budget")]
    pub time_budget_ms: u64,
    /// The policy's parameters; values are scalars, passed to the policy as text.
    #[serde(default)]
    pub params: BTreeMap<String, toml::Value>,
}

/// 5 s: half of Slurm's default `MessageTimeout` (10 s), which is what Slurm's main scheduling
/// loop derives its own time limit (`max_sched_time`) from.
fn default_time_budget() -> u64 {
    5_000
}

/// The longest budget a config may give, in ms (10 minutes).
pub const MAX_TIME_BUDGET_MS: u64 = 600_000;

/// The whole configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Socket path (default: see `batch_proto::socket`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<PathBuf>,
    /// State directory: database, job directories (default `$XDG_STATE_HOME/esched`, or
    /// `~/.local/state/esched`; `/var/lib/esched` as root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_dir: Option<PathBuf>,
    /// Directory of policy libraries (default: the directory of the batchd executable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_dir: Option<PathBuf>,
    /// The program run as each job's supervisor, as `PROGRAM supervise JOBDIR` (default: this
    /// batchd executable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor: Option<PathBuf>,
    /// The re-policy interval, ms: while CooRM launcher sessions are open, the shortest time
    /// between the beginnings of two policy runs (§III-C); other passes are paced by
    /// [`SchedulingConfig`], this being the longest gap when it is below `max_gap_ms`.
    #[serde(default = "default_interval")]
    pub repolicy_interval_ms: u64,
    /// Time between SIGTERM and SIGKILL at the time limit and at a cancel, in ms.
    #[serde(default = "default_grace")]
    pub grace_period_ms: u64,
    /// The cluster's name, as jobs see it (`SLURM_CLUSTER_NAME`) and sacct shows it.
    #[serde(default = "default_cluster_name")]
    pub cluster_name: String,
    /// The program that sends the mails jobs ask for with `--mail-type` (Slurm's `MailProg`),
    /// run as `PROGRAM -s SUBJECT RECIPIENT`; none: no mail is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mail_program: Option<PathBuf>,
    /// Database durability.
    #[serde(default)]
    pub sync: Sync,
    /// How log lines are written to stderr: `text` (for people) or `json` (one JSON object a
    /// line, for a log collector). Read at start; a reconfigure keeps the format in force.
    #[serde(default)]
    pub log_format: LogFormat,
    /// The pools, in order (default: one pool `debug` of 8 nodes).
    #[serde(rename = "pool", default = "default_pools")]
    pub pools: Vec<PoolConfig>,
    /// The policy (default: `cbf`, no parameters).
    #[serde(default = "default_policy")]
    pub policy: PolicyConfig,
    /// How evolving jobs are told about their steps.
    #[serde(default)]
    pub evolving: EvolvingConfig,
    /// What one client may hold of the daemon: connections, time, buffers.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// The links between pools, for launchers (none by default).
    #[serde(rename = "link", default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<LinkConfig>,
    /// CooRM launcher sessions.
    #[serde(default)]
    pub coorm: CoormConfig,
    /// How far apart the scheduler's passes come.
    #[serde(default)]
    pub scheduling: SchedulingConfig,
    /// The Prometheus endpoint (off unless `listen` is set).
    #[serde(default, skip_serializing_if = "MetricsConfig::is_off")]
    pub metrics: MetricsConfig,
}

/// The format of batchd's log lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// tracing's human-readable lines.
    #[default]
    Text,
    /// One JSON object a line (`timestamp`, `level`, `fields`, `target`).
    Json,
}

/// `[metrics]`: the figures of `econtrol show stats` in Prometheus' text format at
/// `http://LISTEN/metrics` (docs/batchd.md, "Observability").
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// The TCP address to answer on, `HOST:PORT` (e.g. `127.0.0.1:9464`); none: no endpoint.
    /// Read at start; a reconfigure keeps the endpoint in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
}

impl MetricsConfig {
    /// Whether no endpoint is asked for.
    pub fn is_off(&self) -> bool {
        self.listen.is_none()
    }

    /// The address to listen on, checked.
    pub fn address(&self) -> Result<Option<std::net::SocketAddr>, String> {
        self.listen
            .as_deref()
            .map(|a| {
                a.parse().map_err(|e| {
                    format!("`{a}` is not an address and port such as 127.0.0.1:9464: {e}")
                })
            })
            .transpose()
    }
}

/// How far apart the scheduler's passes come (docs/batchd.md, *Scheduling*): a pass runs at
/// once when none is running and the last one ended at least a gap ago; while a node is free
/// the gap is the last pass's cost times `gap_factor`, within `min_gap_ms..=max_gap_ms`,
/// otherwise `max_gap_ms`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulingConfig {
    /// The shortest gap, ms.
    #[serde(default = "default_min_gap")]
    pub min_gap_ms: u64,
    /// The longest gap a pass's cost can ask for, and the gap while no node is free, ms.
    #[serde(default = "default_max_gap")]
    pub max_gap_ms: u64,
    /// The gap in units of the last pass's cost: the daemon spends at most 1 / (1 + this) of
    /// its time in passes under a stream of events.
    #[serde(default = "default_gap_factor")]
    pub gap_factor: u32,
}

impl Default for SchedulingConfig {
    fn default() -> Self {
        SchedulingConfig {
            min_gap_ms: default_min_gap(),
            max_gap_ms: default_max_gap(),
            gap_factor: default_gap_factor(),
        }
    }
}

fn default_min_gap() -> u64 {
    2
}

fn default_max_gap() -> u64 {
    100
}

fn default_gap_factor() -> u32 {
    1
}

/// The socket API's limits (docs/batchd.md, "Limits"): no client, careless or hostile, holds
/// more of the daemon than these.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// Open connections at most; lowered at start to what `RLIMIT_NOFILE` leaves after the
    /// daemon's own descriptors.
    #[serde(default = "default_max_connections")]
    pub max_connections: u32,
    /// Open connections of one uid at most.
    #[serde(default = "default_max_connections_per_user")]
    pub max_connections_per_user: u32,
    /// A connection waiting this long for its next request is closed, in ms.
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout_ms: u64,
    /// A frame, once begun, must be complete within this, in ms: a request from its first
    /// byte, each reply frame from its first write (a client that stops reading is dropped).
    #[serde(default = "default_frame_timeout")]
    pub frame_timeout_ms: u64,
    /// Connections beyond `max_connections` that only root and batchd's own user may open:
    /// whatever other users hold, the administrator's tools get in.
    #[serde(default = "default_reserved_connections")]
    pub reserved_connections: u32,
    /// Open CooRM launcher sessions of one uid at most (each holds a connection for as long
    /// as its launcher waits or runs, and is never closed to make room).
    #[serde(default = "default_max_sessions_per_user")]
    pub max_sessions_per_user: u32,
    /// A launcher session that has made no `request` this long after its `subscribe` is
    /// closed and its job cancelled, in ms; once it has made one, it may wait for its start
    /// as long as it takes.
    #[serde(default = "default_session_idle_timeout")]
    pub session_idle_timeout_ms: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_connections: default_max_connections(),
            max_connections_per_user: default_max_connections_per_user(),
            idle_timeout_ms: default_idle_timeout(),
            frame_timeout_ms: default_frame_timeout(),
            reserved_connections: default_reserved_connections(),
            max_sessions_per_user: default_max_sessions_per_user(),
            session_idle_timeout_ms: default_session_idle_timeout(),
        }
    }
}

fn default_max_connections() -> u32 {
    1024
}

fn default_max_connections_per_user() -> u32 {
    128
}

fn default_idle_timeout() -> u64 {
    30_000
}

fn default_frame_timeout() -> u64 {
    10_000
}

fn default_reserved_connections() -> u32 {
    4
}

fn default_max_sessions_per_user() -> u32 {
    16
}

fn default_session_idle_timeout() -> u64 {
    60_000
}

/// The most hosts a pool may list.
pub const MAX_HOSTS: usize = 65_536;

fn default_pools() -> Vec<PoolConfig> {
    vec![PoolConfig {
        name: "debug".into(),
        nodes: 8,
        hosts: None,
        ssh: None,
        slurm: None,
        max_time: MaxTime::default(),
        cpus_per_node: 1,
        mem_per_node: None,
        speed: 1.0,
    }]
}

fn default_policy() -> PolicyConfig {
    PolicyConfig {
        name: "cbf".into(),
        time_budget_ms: default_time_budget(),
        params: BTreeMap::new(),
    }
}

/// How batchd talks to running evolving jobs (see docs/evolving.md, "Running evolving jobs").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvolvingConfig {
    /// The signal sent to the job's process each time its node file or step file changes:
    /// a name (`WINCH`, `SIGUSR1`) or a number. The default, SIGWINCH, is ignored by processes
    /// that do not handle it, so a job script that never looks at its step file is not killed.
    #[serde(default = "default_resize_signal")]
    pub signal: String,
    /// How long before the end of a step followed by a smaller one the job is told to choose
    /// the nodes it frees, in ms (at most the whole step).
    #[serde(default = "default_release_notice")]
    pub release_notice_ms: u64,
}

impl Default for EvolvingConfig {
    fn default() -> Self {
        EvolvingConfig {
            signal: default_resize_signal(),
            release_notice_ms: default_release_notice(),
        }
    }
}

impl EvolvingConfig {
    /// The signal, parsed.
    pub fn signal(&self) -> Result<nix::sys::signal::Signal, String> {
        parse_signal(&self.signal)
    }
}

/// A signal by name (with or without `SIG`, any case) or number.
pub fn parse_signal(s: &str) -> Result<nix::sys::signal::Signal, String> {
    let t = s.trim();
    match batch_proto::parse_signal(t) {
        Some(nix::sys::signal::Signal::SIGKILL | nix::sys::signal::Signal::SIGSTOP) => {
            Err(format!("`{t}` cannot be handled by a job"))
        }
        Some(sig) => Ok(sig),
        None => Err(format!("`{t}` is not a signal name or number")),
    }
}

fn default_resize_signal() -> String {
    "WINCH".into()
}

fn default_release_notice() -> u64 {
    10_000
}

fn default_interval() -> u64 {
    100
}

fn default_grace() -> u64 {
    30_000
}

/// A configuration that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {location}{reason}")]
pub struct ConfigError {
    /// The file (`<built-in>` for the embedded default).
    pub file: String,
    /// `line L, column C: ` or `key K: `, or empty.
    pub location: String,
    /// What is wrong.
    pub reason: String,
}

impl ConfigError {
    /// An error about `key` in `file`.
    pub fn key(file: &str, key: &str, reason: impl Into<String>) -> Self {
        ConfigError {
            file: file.to_string(),
            location: format!("key `{key}`: "),
            reason: reason.into(),
        }
    }
}

impl Config {
    /// The embedded default.
    pub fn embedded() -> Config {
        // The default is part of the build and tested; a failure here is a bug in this crate.
        match Config::parse(DEFAULT_CONFIG, "<built-in>") {
            Ok(c) => c,
            Err(e) => panic!("embedded default config is invalid: {e}"),
        }
    }

    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: file.clone(),
            location: String::new(),
            reason: format!("cannot read: {e}"),
        })?;
        Config::parse(&text, &file)
    }

    /// Parses and checks `text`, naming `file` in errors.
    pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
        let mut config: Config = toml::from_str(text).map_err(|e| {
            let location = match e.span() {
                Some(span) => {
                    let before = &text[..span.start.min(text.len())];
                    let line = before.matches('\n').count() + 1;
                    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                    format!("line {line}, column {col}: ")
                }
                None => String::new(),
            };
            // The parser's message may span lines (`invalid table header` / `expected …`):
            // the error is promised on one line.
            let reason: Vec<&str> = e
                .message()
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            ConfigError {
                file: file.to_string(),
                location,
                reason: reason.join(": "),
            }
        })?;
        config.count_hosts(file)?;
        config.check(file)?;
        Ok(config)
    }

    /// Sets each pool of hosts' node count from its host list, checking the list.
    fn count_hosts(&mut self, file: &str) -> Result<(), ConfigError> {
        let mut seen = std::collections::HashSet::new();
        for (i, p) in self.pools.iter_mut().enumerate() {
            if p.slurm.is_some() {
                let key = format!("pool[{i}].slurm");
                if p.hosts.is_some() || p.ssh.is_some() {
                    return Err(ConfigError::key(
                        file,
                        &key,
                        format!(
                            "pool `{}` is a Slurm allocation: its nodes are Slurm's, not \
                             `hosts` reached over ssh",
                            p.name
                        ),
                    ));
                }
                if p.nodes == 0 {
                    return Err(ConfigError::key(
                        file,
                        &format!("pool[{i}].nodes"),
                        format!(
                            "pool `{}` needs `nodes`, the size of its Slurm allocation",
                            p.name
                        ),
                    ));
                }
                continue;
            }
            let Some(list) = &p.hosts else {
                if p.ssh.is_some() {
                    return Err(ConfigError::key(
                        file,
                        &format!("pool[{i}].ssh"),
                        format!("pool `{}` has no `hosts` to reach over ssh", p.name),
                    ));
                }
                continue;
            };
            let key = format!("pool[{i}].hosts");
            let names = batch_proto::hostlist::expand_at_most(list, MAX_HOSTS)
                .map_err(|e| ConfigError::key(file, &key, format!("`{list}`: {e}")))?;
            if names.is_empty() {
                return Err(ConfigError::key(file, &key, "no host listed"));
            }
            for n in &names {
                if !seen.insert(n.clone()) {
                    return Err(ConfigError::key(
                        file,
                        &key,
                        format!("host `{n}` is listed twice (a host is one node of one pool)"),
                    ));
                }
            }
            let count = names.len() as u32;
            if p.nodes != 0 && p.nodes != count {
                return Err(ConfigError::key(
                    file,
                    &format!("pool[{i}].nodes"),
                    format!(
                        "pool `{}` lists {count} hosts but says nodes = {}; leave `nodes` out",
                        p.name, p.nodes
                    ),
                ));
            }
            p.nodes = count;
        }
        Ok(())
    }

    /// The checks TOML's types cannot express.
    fn check(&self, file: &str) -> Result<(), ConfigError> {
        if let Err(e) = self.metrics.address() {
            return Err(ConfigError::key(file, "metrics.listen", e));
        }
        if self.pools.is_empty() {
            return Err(ConfigError::key(
                file,
                "pool",
                "at least one [[pool]] is needed",
            ));
        }
        for (i, p) in self.pools.iter().enumerate() {
            let valid_name = !p.name.is_empty()
                && p.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                && !p.name.ends_with(|c: char| c.is_ascii_digit());
            if !valid_name {
                return Err(ConfigError::key(
                    file,
                    &format!("pool[{i}].name"),
                    format!(
                        "`{}` must be letters, digits, `_` or `-`, not ending in a digit (node names append digits)",
                        p.name
                    ),
                ));
            }
            if p.nodes == 0 {
                return Err(ConfigError::key(
                    file,
                    &format!("pool[{i}].nodes"),
                    format!("pool `{}` has zero nodes", p.name),
                ));
            }
            if !(p.speed.is_finite() && p.speed > 0.0) {
                return Err(ConfigError::key(
                    file,
                    &format!("pool[{i}].speed"),
                    format!("pool `{}`: the speed must be a positive number", p.name),
                ));
            }
            if self.pools[..i].iter().any(|q| q.name == p.name) {
                return Err(ConfigError::key(
                    file,
                    &format!("pool[{i}].name"),
                    format!("duplicate pool name `{}`", p.name),
                ));
            }
        }
        if self.policy.name.trim().is_empty() {
            return Err(ConfigError::key(file, "policy.name", "empty policy name"));
        }
        if !(1..=MAX_TIME_BUDGET_MS).contains(&self.policy.time_budget_ms) {
            return Err(ConfigError::key(
                file,
                "policy.time_budget_ms",
                format!("must be in 1..={MAX_TIME_BUDGET_MS}"),
            ));
        }
        for (k, v) in &self.policy.params {
            if matches!(v, toml::Value::Array(_) | toml::Value::Table(_)) {
                return Err(ConfigError::key(
                    file,
                    &format!("policy.params.{k}"),
                    "parameters must be strings, numbers or booleans",
                ));
            }
        }
        if let Err(e) = self.evolving.signal() {
            return Err(ConfigError::key(file, "evolving.signal", e));
        }
        let l = &self.limits;
        for (key, value) in [
            ("limits.max_connections", u64::from(l.max_connections)),
            (
                "limits.max_connections_per_user",
                u64::from(l.max_connections_per_user),
            ),
            ("limits.idle_timeout_ms", l.idle_timeout_ms),
            ("limits.frame_timeout_ms", l.frame_timeout_ms),
            (
                "limits.max_sessions_per_user",
                u64::from(l.max_sessions_per_user),
            ),
            ("limits.session_idle_timeout_ms", l.session_idle_timeout_ms),
        ] {
            if value == 0 {
                return Err(ConfigError::key(file, key, "must be positive"));
            }
        }
        for (i, l) in self.links.iter().enumerate() {
            let key = |k: &str| format!("link[{i}].{k}");
            if let Some(n) = l
                .pools
                .iter()
                .find(|n| !self.pools.iter().any(|p| &p.name == *n))
            {
                return Err(ConfigError::key(
                    file,
                    &key("pools"),
                    format!("no pool is called `{n}`"),
                ));
            }
            if l.pools[0] == l.pools[1] {
                return Err(ConfigError::key(
                    file,
                    &key("pools"),
                    "a link joins two different pools",
                ));
            }
            for (k, v) in [
                ("latency_ms", l.latency_ms),
                ("bandwidth_mbps", l.bandwidth_mbps),
            ] {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(ConfigError::key(file, &key(k), "must be a number ≥ 0"));
                }
            }
            if self.links[..i].iter().any(|m| {
                let mut a = m.pools.clone();
                let mut b = l.pools.clone();
                a.sort();
                b.sort();
                a == b
            }) {
                return Err(ConfigError::key(
                    file,
                    &key("pools"),
                    "a link between these pools is already configured",
                ));
            }
        }
        if self.repolicy_interval_ms == 0 || self.repolicy_interval_ms > 60_000 {
            return Err(ConfigError::key(
                file,
                "repolicy_interval_ms",
                "must be in 1..=60000",
            ));
        }
        let g = &self.scheduling;
        if g.max_gap_ms > 60_000 {
            return Err(ConfigError::key(
                file,
                "scheduling.max_gap_ms",
                "must be in 0..=60000",
            ));
        }
        if g.min_gap_ms > g.max_gap_ms {
            return Err(ConfigError::key(
                file,
                "scheduling.min_gap_ms",
                "must be at most scheduling.max_gap_ms",
            ));
        }
        if g.gap_factor > 1_000 {
            return Err(ConfigError::key(
                file,
                "scheduling.gap_factor",
                "must be in 0..=1000",
            ));
        }
        Ok(())
    }

    /// The `max_time` (ms) a job submitted to `pool` is held to; `None` when unbounded but for
    /// `batch_proto::MAX_TIME_LIMIT`. Without a pool the policy may place the job in any, so
    /// the smallest `max_time` of all pools applies. An unknown pool has none (the submission
    /// is refused for its pool).
    pub fn max_time(&self, pool: Option<&str>) -> Option<u64> {
        match pool {
            Some(name) => self
                .pools
                .iter()
                .find(|p| p.name == name)
                .and_then(|p| p.max_time.ms()),
            None => self.pools.iter().filter_map(|p| p.max_time.ms()).min(),
        }
    }

    /// The policy parameters as text, the way policies read them.
    pub fn policy_params(&self) -> sched_core::Params {
        sched_core::Params::from_pairs(self.policy.params.iter().map(|(k, v)| {
            let text = match v {
                toml::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), text)
        }))
    }

    /// The socket path in force.
    pub fn socket_path(&self) -> PathBuf {
        self.socket
            .clone()
            .unwrap_or_else(batch_proto::socket::default_socket_path)
    }

    /// The state directory in force.
    pub fn state_path(&self) -> PathBuf {
        self.state_dir.clone().unwrap_or_else(default_state_dir)
    }

    /// The plugin directory in force: the configured one, else the executable's directory.
    pub fn plugin_path(&self) -> Option<PathBuf> {
        self.plugin_dir.clone().or_else(|| {
            std::env::current_exe()
                .ok()
                .and_then(|p| p.parent().map(Path::to_path_buf))
        })
    }

    /// The configuration with every default path filled in, for `--print-config`.
    pub fn effective(&self) -> Config {
        let mut c = self.clone();
        c.socket = Some(self.socket_path());
        c.state_dir = Some(self.state_path());
        c.plugin_dir = self.plugin_path();
        c.supervisor = Some(crate::supervisor_program(self));
        c
    }

    /// [`Config::effective`] as `--print-config` prints it: every key with its value, and a
    /// comment for each key left unset on purpose (TOML has no null), so that nothing is
    /// missing from what claims to be the whole configuration.
    pub fn print_effective(&self) -> String {
        let c = self.effective();
        let mut out = String::new();
        let mut pool = None::<usize>;
        let mut top = true;
        for line in c.to_toml().lines() {
            if top && line.starts_with('[') {
                top = false;
                if c.mail_program.is_none() {
                    out.push_str("# mail_program: unset, no mail is sent\n\n");
                }
            }
            out.push_str(line);
            out.push('\n');
            if line.trim() == "[[pool]]" {
                pool = Some(pool.map_or(0, |i| i + 1));
            } else if line.starts_with('[') {
                pool = None;
            }
            let p = pool.and_then(|i| c.pools.get(i));
            if line.starts_with("cpus_per_node = ") && p.is_some_and(|p| p.mem_per_node.is_none()) {
                out.push_str("# mem_per_node: unset, memory requests are not checked\n");
            }
        }
        if c.metrics.is_off() {
            out.push_str("\n# [metrics]\n# listen: unset, no Prometheus endpoint\n");
        }
        out
    }

    /// As TOML text.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# cannot print config: {e}\n"))
    }
}

/// `/var/lib/esched` for root; else `$XDG_STATE_HOME/esched`, else `~/.local/state/esched`,
/// else `/tmp/esched-$UID/state`.
pub fn default_state_dir() -> PathBuf {
    let uid = nix::unistd::geteuid().as_raw();
    if uid == 0 {
        return PathBuf::from("/var/lib/esched");
    }
    let env = |k: &str| {
        std::env::var_os(k)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(d) = env("XDG_STATE_HOME") {
        return d.join("esched");
    }
    if let Some(h) = env("HOME") {
        return h.join(".local/state/esched");
    }
    PathBuf::from(format!("/tmp/esched-{uid}/state"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_of_hosts_counts_its_hosts_and_refuses_what_cannot_be() {
        let c = Config::parse(
            "[[pool]]\nname = \"hosts\"\nhosts = \"node[01-16]\"\n[pool.ssh]\nuser = \"root\"\n",
            "f",
        )
        .unwrap();
        assert_eq!(c.pools[0].nodes, 16);
        assert_eq!(c.pools[0].host_names().unwrap()[15], "node16");
        assert_eq!(
            c.pools[0].ssh.as_ref().unwrap().spool(),
            Path::new("/var/spool/esched")
        );
        let bad = |text: &str| Config::parse(text, "f").unwrap_err().to_string();
        assert!(
            bad("[[pool]]\nname = \"h\"\nhosts = \"n[1-4]\"\nnodes = 3\n")
                .contains("lists 4 hosts but says nodes = 3")
        );
        assert!(bad(
            "[[pool]]\nname = \"a\"\nhosts = \"n[1-2]\"\n[[pool]]\nname = \"b\"\nhosts = \"n2\"\n"
        )
        .contains("host `n2` is listed twice"));
        assert!(bad("[[pool]]\nname = \"h\"\nhosts = \"n[4-1]\"\n").contains("pool[0].hosts"));
        assert!(
            bad("[[pool]]\nname = \"h\"\nnodes = 2\n[pool.ssh]\nport = 22\n")
                .contains("has no `hosts` to reach over ssh")
        );
    }

    #[test]
    fn embedded_default_is_one_debug_pool_of_eight_with_cbf() {
        let c = Config::embedded();
        assert_eq!(
            c.pools,
            vec![PoolConfig {
                hosts: None,
                ssh: None,
                slurm: None,
                name: "debug".into(),
                nodes: 8,
                max_time: Default::default(),
                cpus_per_node: 1,
                mem_per_node: None,
                speed: 1.0,
            }]
        );
        assert_eq!(c.policy.name, "cbf");
        assert_eq!(
            (c.repolicy_interval_ms, c.grace_period_ms, c.sync),
            (100, 30_000, Sync::Full)
        );
        assert_eq!(c.policy.time_budget_ms, 5_000);
    }

    #[test]
    fn a_pool_max_time_takes_slurm_time_forms() {
        let with = |v: &str| {
            Config::parse(
                &format!("[[pool]]\nname = \"p\"\nnodes = 1\nmax_time = {v}\n"),
                "x",
            )
            .map(|c| c.pools[0].max_time)
        };
        assert_eq!(with("90"), Ok(MaxTime::Minutes(90)));
        assert_eq!(with("\"90\""), Ok(MaxTime::Minutes(90)));
        assert_eq!(with("\"1-12:00:00\""), Ok(MaxTime::Minutes(36 * 60)));
        assert_eq!(with("\"2:30:00\""), Ok(MaxTime::Minutes(150)));
        // Seconds round up to the minute, as Slurm keeps MaxTime in minutes.
        assert_eq!(with("\"10:30\""), Ok(MaxTime::Minutes(11)));
        assert_eq!(with("\"UNLIMITED\""), Ok(MaxTime::Unlimited));
        let e = with("\"soon\"").unwrap_err().to_string();
        assert!(e.contains("max_time `soon`: 'soon' is not a number"), "{e}");
        assert!(with("\"0\"").is_err());
        assert!(with("\"400-00:00:00\"").is_err());
    }

    #[test]
    fn effective_config_round_trips() {
        let c = Config::embedded().effective();
        let back = Config::parse(&c.to_toml(), "x").unwrap();
        assert_eq!(back, c);
        // --print-config shows every key, those left unset as a comment.
        let printed = Config::embedded().print_effective();
        for key in [
            "supervisor = ",
            "max_time = ",
            "cpus_per_node = ",
            "# mem_per_node: unset",
        ] {
            assert!(printed.contains(key), "{key}: {printed}");
        }
        assert_eq!(Config::parse(&printed, "x").unwrap(), c);
    }

    #[test]
    fn the_resize_signal_is_a_signal_a_job_can_handle() {
        let with = |sig: &str| {
            Config::parse(
                &format!("{DEFAULT_CONFIG}\n[evolving]\nsignal = \"{sig}\"\n").replace(
                    "[evolving]\nsignal = \"WINCH\"\nrelease_notice_ms = 10000\n",
                    "",
                ),
                "t.toml",
            )
        };
        assert_eq!(
            with("usr1").unwrap().evolving.signal(),
            Ok(nix::sys::signal::Signal::SIGUSR1)
        );
        assert_eq!(
            with("KILL").unwrap_err().to_string(),
            "t.toml: key `evolving.signal`: `KILL` cannot be handled by a job"
        );
        assert!(with("nope")
            .unwrap_err()
            .to_string()
            .contains("not a signal"));
    }

    #[test]
    fn unknown_key_is_refused_with_position() {
        let e = Config::parse(
            "[[pool]]\nname = \"a\"\nnodes = 2\nnodez = 3\n[policy]\nname=\"cbf\"\n",
            "f.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("f.toml: line 4, column 1: "), "{e}");
        assert!(e.contains("nodez"), "{e}");
    }

    #[test]
    fn semantic_errors_name_the_key() {
        let cases = [
            ("[[pool]]\nname=\"a\"\nnodes=0\n[policy]\nname=\"cbf\"\n", "pool[0].nodes"),
            (
                "[[pool]]\nname=\"a\"\nnodes=1\n[[pool]]\nname=\"a\"\nnodes=1\n[policy]\nname=\"cbf\"\n",
                "pool[1].name",
            ),
            ("[[pool]]\nname=\"a1\"\nnodes=1\n[policy]\nname=\"cbf\"\n", "pool[0].name"),
            ("pool = []\n[policy]\nname=\"cbf\"\n", "`pool`"),
            ("[[pool]]\nname=\"a\"\nnodes=1\n[policy]\nname=\"cbf\"\nparams={x=[1]}\n", "policy.params.x"),
            ("[policy]\nname=\"cbf\"\ntime_budget_ms=0\n", "policy.time_budget_ms"),
            ("[policy]\nname=\"cbf\"\ntime_budget_ms=600001\n", "policy.time_budget_ms"),
            ("[scheduling]\nmin_gap_ms=50\nmax_gap_ms=10\n", "scheduling.min_gap_ms"),
            ("[scheduling]\nmax_gap_ms=60001\n", "scheduling.max_gap_ms"),
            ("[scheduling]\ngap_factor=1001\n", "scheduling.gap_factor"),
        ];
        for (text, key) in cases {
            let e = Config::parse(text, "f").unwrap_err().to_string();
            assert!(e.contains(key), "{e} should name {key}");
        }
    }

    #[test]
    fn example_configs_are_valid() {
        for (name, text) in [
            (
                "batchd.toml",
                include_str!("../../examples/configs/batchd.toml"),
            ),
            (
                "easy-two-pools.toml",
                include_str!("../../examples/configs/easy-two-pools.toml"),
            ),
            (
                "coorm.toml",
                include_str!("../../examples/configs/coorm.toml"),
            ),
            (
                "plugin-by-path.toml",
                include_str!("../../examples/configs/plugin-by-path.toml"),
            ),
            (
                "rpp-two-pools.toml",
                include_str!("../../examples/configs/rpp-two-pools.toml"),
            ),
        ] {
            Config::parse(text, name).unwrap_or_else(|e| panic!("{e}"));
        }
    }

    /// The example that says it lists every key lists every key `--print-config` prints (as
    /// a setting or a commented one), and every table.
    #[test]
    fn the_complete_example_lists_every_printed_key() {
        let example = include_str!("../../examples/configs/batchd.toml");
        let listed = |key: &str| {
            example.lines().any(|l| {
                let l = l.trim_start_matches('#').trim_start();
                l.strip_prefix(key)
                    .is_some_and(|r| r.trim_start().starts_with('='))
            })
        };
        let c = Config::embedded();
        for line in c.print_effective().lines() {
            let line = line.trim_start_matches('#').trim();
            if line.starts_with('[') {
                assert!(
                    example.contains(line),
                    "table {line} missing from the example"
                );
                continue;
            }
            let Some(key) = line.split([' ', '=', ':']).next().filter(|k| !k.is_empty()) else {
                continue;
            };
            assert!(listed(key), "key `{key}` missing from the example");
        }
    }

    #[test]
    fn a_config_without_pools_or_policy_takes_the_documented_defaults() {
        let embedded = Config::embedded();
        let c = Config::parse("grace_period_ms = 1000\n", "f").unwrap();
        assert_eq!(c.pools, embedded.pools);
        assert_eq!(c.policy, embedded.policy);
        assert_eq!(c.limits, LimitsConfig::default());
        let c = Config::parse("[policy]\nname = \"easy\"\n", "f").unwrap();
        assert_eq!((c.pools, c.policy.name.as_str()), (embedded.pools, "easy"));
        let c = Config::parse("[[pool]]\nname = \"gpu\"\nnodes = 2\n", "f").unwrap();
        assert_eq!(
            (c.pools[0].name.as_str(), c.policy),
            ("gpu", embedded.policy)
        );
    }

    #[test]
    fn every_config_error_is_one_line() {
        for text in [
            "[[pool]\nname = \"a\"\n",
            "[policy\nname = \"cbf\"\n",
            "x = \n",
            "[limits]\nidle_timeout_ms = 0\n",
            "[limits]\nmax_connections = -1\n",
            "pool = 3\n",
        ] {
            let e = Config::parse(text, "f.toml").unwrap_err().to_string();
            assert!(!e.contains('\n'), "{text:?}: {e:?}");
            assert!(e.starts_with("f.toml: "), "{e}");
        }
    }

    #[test]
    fn params_become_text() {
        let c = Config::parse(
            "[[pool]]\nname=\"a\"\nnodes=1\n[policy]\nname=\"x\"\n[policy.params]\nlimit = 2\nmode = \"fast\"\non = true\n",
            "f",
        )
        .unwrap();
        let p = c.policy_params();
        assert_eq!(p.get("limit"), Some("2"));
        assert_eq!(p.get("mode"), Some("fast"));
        assert_eq!(p.get("on"), Some("true"));
    }
}
