//! What the daemon hands a job's supervisor (`launch.json`) and what the supervisor leaves
//! behind (`status.json`, `supervisor.pid`, `job.pid`), all in the job's directory under
//! `<state_dir>/jobs/<id>/`. Files are written atomically (temporary file, fsync, rename,
//! fsync of the directory) so a reader never sees half a file, even after a crash.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::core::JobFiles;
use crate::evorun::{Progress, Saved};

/// File names inside a job directory.
pub mod files {
    /// The launch description (mode 0600: it holds the job's environment).
    pub const LAUNCH: &str = "launch.json";
    /// The script (mode 0700, owned by the job's user).
    pub const SCRIPT: &str = "script";
    /// The supervisor's pid, written by the supervisor at start.
    pub const SUPERVISOR_PID: &str = "supervisor.pid";
    /// The job's processes: the boot, then one line per component's process (the id of its
    /// process group and session, and its start time), written as each is forked
    /// ([`JobPids`]).
    pub const JOB_PID: &str = "job.pid";
    /// The outcome, written once the job's process has ended.
    pub const STATUS: &str = "status.json";
    /// The supervisor's own stderr.
    pub const LOG: &str = "supervisor.log";
    /// The job's nodes, one host name per line, in the order it got them
    /// (`$ESCHED_NODEFILE`).
    pub const NODES: &str = "nodes";
    /// An evolving job's step, as sh assignments (`$ESCHED_STEPFILE`).
    pub const STEP: &str = "step";
    /// An evolving job's step and chosen release, kept for a daemon restart.
    pub const PROGRESS: &str = "evolve.json";
    /// The running `erun` steps' processes ([`super::StepPid`]): who a signal to the steps
    /// (`ecancel -s`, `--signal`) goes to.
    pub const STEPS: &str = "steps.json";
    /// A time limit changed while the job runs ([`super::Limit`]), which the supervisor
    /// follows.
    pub const LIMIT: &str = "limit.json";
    /// In batchd's own copy of the directory of a job of a pool of hosts: the host whose
    /// agent started it, written once the agent said so. A restart of batchd that finds the
    /// job running without it knows the start never happened.
    pub const STARTED_ON: &str = "host";
}

/// A running job's time limit as changed by `econtrol update TimeLimit=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limit {
    /// The new instant of the time limit, ms since the epoch.
    pub deadline_ms: u64,
}

/// A running step's `erun` process, as `steps.json` lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepPid {
    /// The step's number.
    pub step: u32,
    /// `erun`'s pid.
    pub pid: i32,
    /// Its start time in clock ticks since the boot: a reused pid is not the step's.
    pub start: u64,
    /// The CPUs it holds on each of its nodes (none for an `--overlap` step): the next step
    /// gets what is left.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<(String, u32)>,
}

impl StepPid {
    /// The running steps of the job in `dir` (none when the file is missing or unreadable).
    pub fn read_all(dir: &Path) -> Vec<StepPid> {
        read_json(&dir.join(files::STEPS))
            .ok()
            .flatten()
            .unwrap_or_default()
    }
}

/// Everything the supervisor needs to run one job, with no access to the daemon.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Launch {
    /// Job id.
    pub job_id: u64,
    /// Job name.
    pub name: String,
    /// User name (for `initgroups`).
    pub user: String,
    /// Uid to run as (ignored unless the supervisor runs as root).
    pub uid: u32,
    /// Primary gid.
    pub gid: u32,
    /// The script file.
    pub script: PathBuf,
    /// Whether the script is run by `/bin/sh` (it has no `#!` line).
    pub via_shell: bool,
    /// Script arguments.
    pub args: Vec<String>,
    /// The whole environment of the job.
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub work_dir: PathBuf,
    /// Stdout file.
    pub stdout: PathBuf,
    /// Stderr file (may equal stdout).
    pub stderr: PathBuf,
    /// Instant of the time limit, ms since the epoch.
    pub deadline_ms: u64,
    /// SIGTERM-to-SIGKILL delay, ms.
    pub grace_ms: u64,
    /// The submitter's umask: the job's output files are created under it and the job
    /// inherits it, as with sbatch.
    #[serde(default = "default_umask")]
    pub umask: u32,
    /// A co-allocated job's components: the variables each component's process gets over
    /// `env` (`ESCHED_COMPONENT`, its `ESCHED_NODELIST`, …). The script runs once per
    /// component, all processes started together; empty for every other job (one process).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<Vec<(String, String)>>,
    /// `--signal`: the signal to send before the time limit, and to whom.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warn: Option<Warn>,
    /// `--open-mode=append`: the output files are appended to rather than truncated.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub append: bool,
    /// The command each process runs under, by component (one for a job that is not
    /// co-allocated): on a pool of `[pool.slurm]`, the `srun` that makes it a step of the
    /// pool's allocation ([`crate::slurm::step_of`]); empty: the script is run itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wrap: Vec<Vec<String>>,
}

/// A signal the supervisor sends before the time limit (sbatch's `--signal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warn {
    /// The signal's number.
    pub signal: i32,
    /// When, ms since the epoch (the deadline less the job's `@SECONDS`, not before the
    /// start).
    pub at_ms: u64,
    /// The batch shell only (`B:`); else every process of the job but the batch shell.
    pub batch_only: bool,
}

fn default_umask() -> u32 {
    batch_proto::job::DEFAULT_UMASK
}

/// How a job's process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It ended on its own (or by a signal someone else sent).
    Exited,
    /// It was stopped at its time limit.
    Timeout,
    /// It was stopped because the supervisor was told to (a cancel).
    Cancelled,
    /// It could not be started.
    StartFailed,
    /// Its supervisor was gone without recording the end; the daemon stopped what was left
    /// of its processes (never written by a supervisor).
    Lost,
}

/// The supervisor's record of the end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// How.
    pub outcome: Outcome,
    /// Exit code (0 when killed by a signal).
    pub exit_code: i32,
    /// The terminating signal, 0 for none.
    pub signal: i32,
    /// When, ms since the epoch.
    pub end_ms: u64,
    /// Why a start failed.
    #[serde(default)]
    pub detail: Option<String>,
    /// What the job's processes used (the batch step's usage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<batch_proto::Usage>,
}

/// Writes a running job's files into its directory `dir`, node file last: a job that sees a
/// new node file also sees the step file that goes with it.
pub fn write_job_files(dir: &Path, jf: &JobFiles) -> std::io::Result<()> {
    if let Some(p) = &jf.progress {
        write_json(&dir.join(files::PROGRESS), p)?;
    }
    if let Some(step) = &jf.step {
        write_atomic(&dir.join(files::STEP), step.as_bytes())?;
    }
    let mut text = jf.nodes.join("\n");
    text.push('\n');
    write_atomic(&dir.join(files::NODES), text.as_bytes())?;
    // The job may run as another user; it must read them.
    for f in [files::NODES, files::STEP] {
        let p = dir.join(f);
        if p.exists() {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644))?;
        }
    }
    Ok(())
}

/// What an evolving job's directory `job_dir` keeps for a restart; missing or unreadable files
/// give `None` parts (the job is then re-attached with its record's sorted node list and the
/// step of the present).
pub fn read_saved(job_dir: &Path) -> Saved {
    let nodes = std::fs::read_to_string(job_dir.join(files::NODES))
        .ok()
        .map(|t| t.lines().map(str::to_string).collect::<Vec<_>>())
        .filter(|v| !v.is_empty());
    let progress = read_json::<Progress>(&job_dir.join(files::PROGRESS))
        .ok()
        .flatten();
    Saved { nodes, progress }
}

/// Writes `bytes` to `path` atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // A temporary name of its own per call: two tasks may rewrite the same file at once (an
    // evolving job's files, from its follower and from `erelease`).
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.{}.{seq}.tmp", std::process::id()));
    {
        // Private (0600) from its creation: these files hold what users submitted.
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(crate::state::PRIVATE_FILE)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()?;
    Ok(())
}

/// Writes `value` as JSON to `path` atomically.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    write_atomic(path, &bytes)
}

/// Reads JSON from `path`; `Ok(None)` when the file does not exist.
pub fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> std::io::Result<Option<T>> {
    match std::fs::read(path) {
        Ok(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(std::io::Error::other),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Reads a pid file.
pub fn read_pid(path: &Path) -> Option<i32> {
    std::fs::read_to_string(path)
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|&p: &i32| p > 0)
}

/// What `job.pid` records of a job's processes: the boot they run in and, for each component,
/// the process the supervisor forked (leader of its process group and session) with its start
/// time, so that a reader can tell these processes from later ones that reuse their ids
/// (`crate::procs`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobPids {
    /// `/proc/sys/kernel/random/boot_id` when the supervisor wrote the file.
    pub boot: Option<String>,
    /// One per component started so far, in component order.
    pub leaders: Vec<Leader>,
}

/// A component's process, as `job.pid` records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leader {
    /// Its pid (= its process group and session id).
    pub pid: i32,
    /// Its start time in clock ticks since the boot (`/proc/PID/stat`'s 22nd field).
    pub start: Option<u64>,
}

impl JobPids {
    /// The file's text: `boot ID`, then `PID START` a line, one per component.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        if let Some(b) = &self.boot {
            out.push_str(&format!("boot {b}\n"));
        }
        for l in &self.leaders {
            match l.start {
                Some(t) => out.push_str(&format!("{} {t}\n", l.pid)),
                None => out.push_str(&format!("{}\n", l.pid)),
            }
        }
        out
    }

    /// Reads [`JobPids::to_text`]'s format; a line of a bare pid (a leader without its start)
    /// is read too. Unreadable lines are skipped.
    pub fn parse(text: &str) -> JobPids {
        let mut out = JobPids::default();
        for line in text.lines() {
            let mut f = line.split_whitespace();
            match f.next() {
                Some("boot") => out.boot = f.next().map(str::to_string),
                Some(pid) => {
                    if let Some(pid) = pid.parse::<i32>().ok().filter(|&p| p > 0) {
                        out.leaders.push(Leader {
                            pid,
                            start: f.next().and_then(|t| t.parse().ok()),
                        });
                    }
                }
                None => {}
            }
        }
        out
    }

    /// The pids of `job.pid` at `path`; empty when there is none.
    pub fn read(path: &Path) -> JobPids {
        std::fs::read_to_string(path)
            .map(|t| JobPids::parse(&t))
            .unwrap_or_default()
    }
}

pub use batch_proto::clock::now_ms;

/// `ms` since the epoch as `YYYY-MM-DDTHH:MM:SS` (UTC), Slurm's time format.
pub fn format_utc(ms: u64) -> String {
    // jiff is the project's one calendar (the tools format local times with it too).
    let secs = i64::try_from(ms / 1000).unwrap_or(i64::MAX);
    jiff::Timestamp::from_second(secs)
        .unwrap_or(jiff::Timestamp::MAX)
        .strftime("%Y-%m-%dT%H:%M:%S")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_pids_read_what_they_write_and_bare_pids() {
        let p = JobPids {
            boot: Some("b-1".into()),
            leaders: vec![
                Leader {
                    pid: 42,
                    start: Some(7),
                },
                Leader {
                    pid: 43,
                    start: None,
                },
            ],
        };
        assert_eq!(p.to_text(), "boot b-1\n42 7\n43\n");
        assert_eq!(JobPids::parse(&p.to_text()), p);
        let bare = JobPids::parse("42\n-1\nx\n");
        assert_eq!(
            bare,
            JobPids {
                boot: None,
                leaders: vec![Leader {
                    pid: 42,
                    start: None
                }]
            }
        );
    }

    #[test]
    fn utc_format_matches_known_instants() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00");
        assert_eq!(format_utc(951_782_400_000), "2000-02-29T00:00:00");
        assert_eq!(format_utc(1_700_000_000_123), "2023-11-14T22:13:20");
    }

    #[test]
    fn atomic_json_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("status.json");
        assert_eq!(read_json::<Status>(&p).unwrap(), None);
        let s = Status {
            outcome: Outcome::Timeout,
            exit_code: 0,
            signal: 15,
            end_ms: 5,
            detail: None,
            usage: Some(batch_proto::Usage {
                max_rss_kib: 7,
                user_ms: 8,
                system_ms: 9,
            }),
        };
        write_json(&p, &s).unwrap();
        assert_eq!(read_json::<Status>(&p).unwrap(), Some(s));
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary left"
        );
    }
}
