//! A job's steps, as Slurm's `srun` makes them: the batch step (the script itself, `ID.batch`)
//! and each `erun` inside the job (`ID.0`, `ID.1`, ...), with what they used.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::job::JobState;
use crate::EpochMs;

/// Which step of a job: its batch script, or a numbered `erun` step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepId {
    /// The batch script (`ID.batch`). Ordered first, as sacct lists it.
    Batch,
    /// An `erun` step, numbered from 0 in the order they started.
    Number(u32),
}

impl fmt::Display for StepId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepId::Batch => f.write_str("batch"),
            StepId::Number(n) => write!(f, "{n}"),
        }
    }
}

/// What a step's processes used, as `getrusage` reports their waited-for children: the
/// largest resident set of any one process and the CPU time of all of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Peak resident set size of the largest process, KiB (sacct's `MaxRSS`).
    pub max_rss_kib: u64,
    /// User CPU time, ms (sacct's `UserCPU`).
    pub user_ms: u64,
    /// System CPU time, ms (sacct's `SystemCPU`).
    pub system_ms: u64,
}

impl Usage {
    /// User and system CPU time, ms (sacct's `TotalCPU`).
    pub fn total_cpu_ms(&self) -> u64 {
        self.user_ms + self.system_ms
    }

    /// What this process's waited-for children (and theirs, as each waited) used so far:
    /// the measure both a job's supervisor and `erun` take once their processes have ended.
    pub fn of_children() -> Option<Usage> {
        let ru =
            nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).ok()?;
        let ms = |t: nix::sys::time::TimeVal| {
            (t.tv_sec().max(0) as u64) * 1000 + (t.tv_usec().max(0) as u64) / 1000
        };
        Some(Usage {
            // Linux reports ru_maxrss in KiB.
            max_rss_kib: ru.max_rss().max(0) as u64,
            user_ms: ms(ru.user_time()),
            system_ms: ms(ru.system_time()),
        })
    }

    /// The usage of two sets of processes together: CPU times add, the peak is the larger.
    pub fn merge(self, other: Usage) -> Usage {
        Usage {
            max_rss_kib: self.max_rss_kib.max(other.max_rss_kib),
            user_ms: self.user_ms + other.user_ms,
            system_ms: self.system_ms + other.system_ms,
        }
    }
}

/// Tasks on each of `n` nodes: `per_node` each when given, else `tasks` spread as evenly as
/// they go, the first nodes taking one more (Slurm's block distribution).
pub fn layout(tasks: u32, n: u32, per_node: u32) -> Vec<u32> {
    if per_node > 0 {
        return vec![per_node; n as usize];
    }
    let (base, extra) = (tasks / n, tasks % n);
    (0..n).map(|i| base + u32::from(i < extra)).collect()
}

/// Slurm's run-length form of per-node counts (`SLURM_TASKS_PER_NODE`,
/// `SLURM_JOB_CPUS_PER_NODE`): `2(x3),1` for 2, 2, 2, 1.
pub fn per_node_text(counts: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < counts.len() {
        let n = counts[i..].iter().take_while(|&&c| c == counts[i]).count();
        out.push(if n > 1 {
            format!("{}(x{n})", counts[i])
        } else {
            counts[i].to_string()
        });
        i += n;
    }
    out.join(",")
}

/// One step of a job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobStep {
    /// Which step.
    pub id: StepId,
    /// Its name: `batch`, or the command `erun` ran (its `-J`).
    pub name: String,
    /// `RUNNING` until it ends; then `COMPLETED`, `FAILED` or `CANCELLED` (sacct's step
    /// states).
    pub state: JobState,
    /// Start time.
    pub start: EpochMs,
    /// End time, once ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<EpochMs>,
    /// Its nodes, compressed.
    pub node_list: String,
    /// Node count.
    pub nodes: u32,
    /// Task count.
    pub tasks: u32,
    /// CPUs per task (`-c`).
    pub cpus_per_task: u32,
    /// The tasks' worst exit code, once ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended a task (0: none), once ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// What its processes used, once ended (absent when it could not be measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

impl JobStep {
    /// The step's id as sacct and squeue show it: `JOB.batch`, `JOB.0`.
    pub fn label(&self, job: &str) -> String {
        format!("{job}.{}", self.id)
    }
}

/// `erun` inside job `job_id` starts a step.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepStartRequest {
    /// The job.
    pub job_id: u64,
    /// The step's name.
    pub name: String,
    /// Nodes it runs on (at most the job's); 0: all the job's nodes.
    pub nodes: u32,
    /// Tasks.
    pub tasks: u32,
    /// CPUs per task.
    pub cpus_per_task: u32,
    /// Node names it must run on (`-w`), a subset of the job's; empty: the job's first `nodes`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_names: Vec<String>,
    /// Nodes it must not run on (`-x`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// Tasks on each node (`--ntasks-per-node`; 0: spread `tasks` over the nodes).
    #[serde(default)]
    pub tasks_per_node: u32,
    /// `--overlap`: shares its nodes' CPUs with the other steps, and they with it.
    #[serde(default)]
    pub overlap: bool,
    /// `--exact`/`--exclusive`/`-c`: takes only the CPUs its tasks need, not the whole of each
    /// node's.
    #[serde(default)]
    pub exact: bool,
}

/// The step is recorded: its number and its nodes, in the job's order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepStarted {
    /// Its number.
    pub step: u32,
    /// Its nodes' names, in order.
    pub hosts: Vec<String>,
    /// Tasks on each of `hosts` (block distribution: task ids fill the first node first).
    pub tasks: Vec<u32>,
    /// The job's nodes, compressed.
    pub job_node_list: String,
    /// The nodes are machines of their own (a pool of hosts): `erun` runs the tasks of its
    /// own host, and each other host's through [`StepPartRequest`]. `false`: virtual nodes,
    /// every task here.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub on_hosts: bool,
    /// The nodes are a Slurm allocation's: `erun` runs each other node's tasks as a step of
    /// it, by [`SlurmStep::command`], rather than through batchd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<SlurmStep>,
}

/// How a command becomes a step of the Slurm allocation a job runs in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlurmStep {
    /// The `srun` program.
    pub srun: String,
    /// The Slurm job id of the allocation each node of the step is in (by the order of the
    /// step's nodes); 0: a node of batchd's own machine, where the command runs as it is.
    pub allocations: Vec<u64>,
    /// The esched job, whose steps are named `esched-JOB`.
    pub job: u64,
    /// What runs the command on the node, before it: `batchd task --`, which gives the command
    /// the job's own Slurm variables back.
    pub task: Vec<String>,
    /// CPUs of each node, all of which the step gets (`--cpus-per-task`), as sbatch's batch
    /// step has its node's: the job's tasks there run inside it. 0: Slurm's default, one.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cpus: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl SlurmStep {
    /// `srun` running `command` (program and arguments) as a one-task step on `node`, the
    /// `k`th node of the step. `--overlap`: the job's steps share its nodes, which batchd keeps
    /// for it alone; without it, Slurm 22.05 makes a step wait for the CPUs another step of the
    /// job holds.
    pub fn command(&self, k: usize, node: &str, command: &[String]) -> Vec<String> {
        let alloc = self.allocations.get(k).copied().unwrap_or(0);
        if alloc == 0 {
            let mut argv = self.task.clone();
            argv.extend(command.iter().cloned());
            return argv;
        }
        let mut argv = vec![
            self.srun.clone(),
            format!("--jobid={alloc}"),
            format!("--nodelist={node}"),
            "--nodes=1".into(),
            "--ntasks=1".into(),
        ];
        if self.cpus > 0 {
            argv.push(format!("--cpus-per-task={}", self.cpus));
        }
        argv.extend([
            "--overlap".into(),
            "--quiet".into(),
            format!("--job-name=esched-{}", self.job),
            "--".into(),
        ]);
        argv.extend(self.task.iter().cloned());
        argv.extend(command.iter().cloned());
        argv
    }
}

/// Whether variable `name` is one `srun` reads as an option or replaces with its own.
pub fn is_slurm_variable(name: &str) -> bool {
    name.starts_with("SLURM_") || name.starts_with("SRUN_") || name.starts_with("SBATCH_")
}

/// The prefix under which a job's own Slurm variables cross `srun` (see
/// [`is_slurm_variable`]); `batchd task` puts them back.
pub const KEEP_PREFIX: &str = "ESCHED_KEEP_";

/// `env` as it crosses `srun`: each Slurm variable under [`KEEP_PREFIX`].
pub fn crossing(env: &[(String, String)]) -> Vec<(String, String)> {
    env.iter()
        .map(|(k, v)| {
            if is_slurm_variable(k) {
                (format!("{KEEP_PREFIX}{k}"), v.clone())
            } else {
                (k.clone(), v.clone())
            }
        })
        .collect()
}

/// `erun` asks batchd to run its step's tasks of one other host of the job: the same `erun`
/// there (`program`, with `args` and `env`, in `cwd`), as the caller, which runs that node's
/// tasks only. The connection then carries the part's output
/// ([`crate::Response::StepPartOutput`]) until its end ([`crate::Response::StepPartEnded`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepPartRequest {
    /// The job.
    pub job_id: u64,
    /// The step.
    pub step: u32,
    /// The host, one of the step's nodes.
    pub node: String,
    /// The program (erun's own path: the tools are where they are on every host).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its whole environment.
    pub env: Vec<(String, String)>,
    /// Its working directory.
    pub cwd: String,
}

/// `erun` passes a signal on to its step's parts on other hosts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepPartSignalRequest {
    /// The job.
    pub job_id: u64,
    /// The step.
    pub step: u32,
    /// The signal number.
    pub signal: i32,
}

/// `bytes` in hexadecimal (how output crosses the protocol's JSON frames).
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The bytes of hexadecimal `text` (`None` if it is not).
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// `erun` reports the end of its step.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepEndRequest {
    /// The job.
    pub job_id: u64,
    /// The step.
    pub step: u32,
    /// The tasks' worst exit code.
    pub exit_code: i32,
    /// The signal that ended a task (0: none).
    pub signal: i32,
    /// What the tasks used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// `erun` was told to stop (a cancel, the time limit) and passed that on to its tasks:
    /// a task ended by a signal makes the step CANCELLED, not FAILED.
    #[serde(default)]
    pub stopped: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_ids_read_as_sacct_writes_them() {
        let s = JobStep {
            id: StepId::Batch,
            name: "batch".into(),
            state: JobState::Running,
            start: 1,
            end: None,
            node_list: "n1".into(),
            nodes: 1,
            tasks: 1,
            cpus_per_task: 1,
            exit_code: None,
            signal: None,
            usage: None,
        };
        assert_eq!(s.label("12"), "12.batch");
        assert_eq!(
            JobStep {
                id: StepId::Number(3),
                ..s.clone()
            }
            .label("7_2"),
            "7_2.3"
        );
        // The batch step sorts before the numbered ones, as sacct lists them.
        assert!(StepId::Batch < StepId::Number(0));
        let json = serde_json::to_string(&StepId::Number(4)).unwrap_or_default();
        assert_eq!(json, r#"{"number":4}"#);
    }

    #[test]
    fn per_node_counts_as_slurm_writes_them() {
        assert_eq!(per_node_text(&[2, 2, 2, 1]), "2(x3),1");
        assert_eq!(per_node_text(&[4]), "4");
        assert_eq!(per_node_text(&[3, 2]), "3,2");
    }

    #[test]
    fn usage_of_two_sets_adds_cpu_and_keeps_the_larger_peak() {
        let a = Usage {
            max_rss_kib: 10,
            user_ms: 5,
            system_ms: 1,
        };
        let b = Usage {
            max_rss_kib: 20,
            user_ms: 1,
            system_ms: 2,
        };
        let m = a.merge(b);
        assert_eq!(m.max_rss_kib, 20);
        assert_eq!(m.total_cpu_ms(), 9);
    }
}
