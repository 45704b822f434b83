//! What a tool submits: [`JobSpec`], and the errors a submission may be refused with.

use serde::{Deserialize, Serialize};

use super::dependency::Dependency;
use super::inert::InertOptions;
use super::limits::*;
use super::shape::JobShape;
use crate::EpochMs;

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
    /// `slurm-%j.out` (`slurm-%A_%a.out` for an array task), as sbatch's.
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
    // Slurm's habits: a job array and the task batchd made of it, resources,
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
    // More of Slurm's habits: signals before the limit, output open mode, and
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
    /// Set by batchd with `preempted` when the job is stopped because one of its nodes went
    /// down: it then ends NODE_FAIL (or is requeued with `--requeue`); never in a submission.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub node_failed: bool,
    /// Slurm's `--deadline` of a job that is not co-allocated, ms since the epoch: the job
    /// starts only while it can end by then (its start plus its time limit); once it cannot,
    /// it is removed, DEADLINE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_by: Option<EpochMs>,
    /// Where the submission ran (`SLURM_SUBMIT_DIR`), which `-D` does not change; `None`:
    /// `work_dir`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submit_dir: Option<String>,
    /// Slurm options stored and shown that change nothing here (`--wckey`, `--comment`,
    /// `--nice`, `--mail-type`...; see [`InertOptions`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inert: Option<Box<InertOptions>>,
}

/// Checks that instant `t` (a deadline) is after `now` (else `passed`) and at most
/// [`MAX_BEGIN_AHEAD`] ahead.
fn ahead(what: &'static str, t: EpochMs, now: EpochMs, passed: &str) -> Result<(), SpecError> {
    if t <= now {
        return Err(SpecError::Bound {
            what,
            reason: passed.into(),
        });
    }
    if t - now > MAX_BEGIN_AHEAD {
        return Err(SpecError::Bound {
            what,
            reason: format!(
                "{} days ahead; at most {} days ahead are accepted",
                (t - now) / DAY_MS,
                MAX_BEGIN_AHEAD / DAY_MS
            ),
        });
    }
    Ok(())
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
            node_failed: false,
            end_by: None,
            submit_dir: None,
            inert: None,
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
        if let Some(d) = self.end_by {
            ahead("deadline", d, now, "it has already passed")?;
        }
        if let Some(d) = self.deadline {
            ahead("deadline", d, now, "the start deadline has already passed")?;
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
        if let Some(i) = &self.inert {
            i.validate()?;
        }
        if self.umask.is_some_and(|m| m > 0o777) {
            return field("umask", "must be at most 0777");
        }
        too_long("name", &self.name, MAX_NAME)?;
        if self.name.is_empty() || self.name.chars().any(|c| c.is_control()) {
            return field("name", "must be non-empty, without control characters");
        }
        too_long("work_dir", &self.work_dir, MAX_PATH)?;
        if let Some(d) = &self.submit_dir {
            too_long("submit_dir", d, MAX_PATH)?;
        }
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
        if coallocated && self.end_by.is_some() {
            return field(
                "end_by",
                "a co-allocated job's --deadline is its start deadline (deadline)",
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
        if self.node_failed {
            return Some((
                "node_failed",
                "is set by batchd when a job's node goes down",
            ));
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
