//! A job as batchd stores it: the submitted spec plus everything that happened to it.
//!
//! Layer 1 of batchd, plain data: it depends on no other module of the crate.

use batch_proto::{FilterKey, JobSpec, JobState};
use serde::{Deserialize, Serialize};

/// One job's stored record (one row of the `jobs` table).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Job id.
    pub id: u64,
    /// Owner's uid (from SO_PEERCRED).
    pub uid: u32,
    /// Owner's primary gid (from SO_PEERCRED).
    pub gid: u32,
    /// Owner's name.
    pub user: String,
    /// What was submitted (updated by `econtrol update`).
    pub spec: JobSpec,
    /// Submission time, ms since the epoch.
    pub submit: u64,
    /// State.
    pub state: JobState,
    /// Held by its owner or root.
    pub held: bool,
    /// Start time.
    pub start: Option<u64>,
    /// End time.
    pub end: Option<u64>,
    /// Exit code.
    pub exit_code: Option<i32>,
    /// Signal that ended it (0: none).
    pub signal: Option<i32>,
    /// Pool it runs or ran in.
    pub pool: Option<String>,
    /// Its nodes, compressed.
    pub node_list: Option<String>,
    /// Node count it holds or held.
    pub nodes: u32,
    /// Shape it was started with.
    pub shape: Option<sched_core::Shape>,
    /// Free text about the outcome (reject reason, start failure).
    pub detail: Option<String>,
    /// Resolved stdout path.
    pub stdout: String,
    /// Resolved stderr path.
    pub stderr: String,
    /// Its steps: each `erun` step of the current run (`ID.0`, ...), running or ended, and
    /// the batch step once ended (a running job's is made up by the view).
    pub steps: Vec<batch_proto::JobStep>,
    /// How many times it was requeued (Slurm's `SLURM_RESTART_COUNT`).
    pub restarts: u32,
}

/// The record's fields kept in one JSON column: they are empty for most jobs, and a new one
/// needs no new column.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Extra {
    /// [`JobRecord::steps`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<batch_proto::JobStep>,
    /// [`JobRecord::restarts`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub restarts: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Extra {
    /// Whether there is nothing to store.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty() && self.restarts == 0
    }
}

impl JobRecord {
    /// A job just submitted by `uid`/`gid` (`user`): pending, held if its spec asks, its
    /// output paths resolved from the spec's patterns (default sbatch's: `slurm-%j.out`, and
    /// `slurm-%A_%a.out` for an array task; stderr joins stdout unless the spec names its own
    /// file).
    pub fn submitted(id: u64, uid: u32, gid: u32, user: &str, spec: JobSpec, submit: u64) -> Self {
        // sbatch(1), --output: "the default file name is "slurm-%A_%a.out" [for job arrays] …
        // For other jobs, the default file name is "slurm-%j.out"": a Slurm user's scripts and
        // tools look for these names.
        let default = if spec.array_task.is_some() {
            "slurm-%A_%a.out"
        } else {
            "slurm-%j.out"
        };
        let out = spec.stdout.as_deref().unwrap_or(default);
        let vars = batch_proto::pattern::PatternVars {
            id,
            name: &spec.name,
            user,
            array: spec.array_task.as_deref().map(|t| (t.array_id, t.index)),
            node: None,
        };
        let stdout = expand_pattern(out, &vars, &spec.work_dir);
        let stderr = match &spec.stderr {
            Some(p) => expand_pattern(p, &vars, &spec.work_dir),
            None => stdout.clone(),
        };
        JobRecord {
            id,
            uid,
            gid,
            user: user.to_string(),
            held: spec.hold,
            spec,
            submit,
            state: JobState::Pending,
            start: None,
            end: None,
            exit_code: None,
            signal: None,
            pool: None,
            node_list: None,
            nodes: 0,
            shape: None,
            detail: None,
            stdout,
            stderr,
            steps: Vec::new(),
            restarts: 0,
        }
    }

    /// The short name of the job's first node, where its batch script runs
    /// (`SLURMD_NODENAME`, an output pattern's `%N`); empty before the start.
    pub fn first_node(&self) -> String {
        self.node_list
            .as_deref()
            .and_then(|l| batch_proto::hostlist::expand(l).ok())
            .and_then(|v| v.into_iter().next())
            .unwrap_or_default()
    }

    /// Numbered step `n`, if recorded.
    pub fn step_mut(&mut self, n: u32) -> Option<&mut batch_proto::JobStep> {
        self.steps
            .iter_mut()
            .find(|s| s.id == batch_proto::StepId::Number(n))
    }

    /// The pool it runs or ran in, else the one it asked for (what listings show and filter
    /// on).
    pub fn shown_pool(&self) -> Option<&str> {
        self.pool.as_deref().or(self.spec.pool.as_deref())
    }

    /// What a [`JobFilter`](batch_proto::JobFilter) looks at in this job.
    pub fn filter_key(&self) -> FilterKey<'_> {
        FilterKey {
            id: self.id,
            uid: self.uid,
            user: &self.user,
            name: &self.spec.name,
            state: self.state,
            pool: self.shown_pool(),
            array: self.spec.array_task.as_deref(),
        }
    }

    /// The time limit of the started shape, else the longest the request allows.
    pub fn time_limit(&self) -> u64 {
        match &self.shape {
            Some(sched_core::Shape::Rigid { walltime, .. })
            | Some(sched_core::Shape::Moldable { walltime, .. }) => *walltime,
            Some(sched_core::Shape::Evolving { steps, .. }) => {
                sched_core::request::total_duration(steps)
            }
            _ => self.spec.shape.time_limit(),
        }
    }
}

/// The next `erun` step's number after `steps`: one more than the highest so far.
pub fn next_step(steps: &[batch_proto::JobStep]) -> u32 {
    steps
        .iter()
        .filter_map(|s| match s.id {
            batch_proto::StepId::Number(n) => Some(n + 1),
            batch_proto::StepId::Batch => None,
        })
        .max()
        .unwrap_or(0)
}

/// Expands an output pattern (sbatch's escapes, `batch_proto::pattern`; `%N` waits for the
/// launch) and makes it absolute under `work_dir`.
pub fn expand_pattern(
    pattern: &str,
    vars: &batch_proto::pattern::PatternVars<'_>,
    work_dir: &str,
) -> String {
    let out = batch_proto::pattern::expand(pattern, vars);
    if out.starts_with('/') {
        out
    } else {
        format!("{}/{}", work_dir.trim_end_matches('/'), out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_expand_like_slurm() {
        let mut vars = batch_proto::pattern::PatternVars {
            id: 7,
            name: "n",
            user: "u",
            array: None,
            node: None,
        };
        assert_eq!(
            expand_pattern("slurm-%j.out", &vars, "/w"),
            "/w/slurm-7.out"
        );
        assert_eq!(
            expand_pattern("/o/%x-%u-%5j-%%-%A_%a", &vars, "/w/"),
            "/o/n-u-00007-%-7_4294967294"
        );
        vars.array = Some((5, 2));
        assert_eq!(expand_pattern("o-%A_%a", &vars, "/w"), "/w/o-5_2");
    }
}
