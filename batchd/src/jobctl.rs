//! A job's supervisor and processes reached through its directory, on the machine where they
//! run: batchd's own for its virtual nodes, a host's agent for a pool of hosts
//! ([`crate::agent`]). Blocking; nothing here knows the daemon.

use std::path::Path;

use batch_proto::SignalScope;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::launch::{files, read_pid, JobPids};

/// The supervisor's stderr: its log in the job's directory `dir` (private; nothing if it
/// cannot be made).
pub fn supervisor_log(dir: &Path) -> std::process::Stdio {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(crate::state::PRIVATE_FILE)
        .open(dir.join(files::LOG))
        .map_or_else(|_| std::process::Stdio::null(), std::process::Stdio::from)
}

/// Kills job `id`'s supervisor (its directory `dir`), if it lives, and every process left of
/// the job (run as `uid`) at once: for a running job that cannot be re-attached at start-up,
/// whose end is recorded before the daemon serves. Blocking.
pub fn kill_lost(id: u64, dir: &Path, uid: u32) {
    if let Some(pid) =
        read_pid(&dir.join(files::SUPERVISOR_PID)).filter(|&p| supervisor_alive(p, dir))
    {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
    let pids = JobPids::read(&dir.join(files::JOB_PID));
    let killed = crate::procs::kill_job_now(&pids, uid, id);
    if killed > 0 {
        tracing::warn!(
            job = id,
            processes = killed,
            "killed the processes of a job that cannot be re-attached"
        );
    }
}

/// Whether `pid` is a live (not zombie) supervisor of the job in `dir`: a recycled pid
/// belongs to some other program, or to another job's supervisor.
pub fn supervisor_alive(pid: i32, dir: &Path) -> bool {
    if crate::procs::stat(pid).is_none_or(|s| s.exited()) {
        return false;
    }
    // Batchd's own user runs its supervisors; a user's process can name itself anything.
    if crate::procs::uid(pid) != Some(nix::unistd::geteuid().as_raw()) {
        return false;
    }
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let mut args = cmdline.split(|&b| b == 0);
    if !args.any(|a| a == b"supervise") {
        return false;
    }
    let Some(arg) = args.next() else {
        return false;
    };
    use std::os::unix::ffi::OsStrExt;
    let named = Path::new(std::ffi::OsStr::from_bytes(arg));
    named == dir
        || matches!(
            (named.canonicalize(), dir.canonicalize()),
            (Ok(a), Ok(b)) if a == b
        )
}

/// Tells the supervisor of job `id`, whose directory is `dir`, to cancel it (SIGTERM to its
/// group, SIGKILL after the grace period).
pub fn cancel_in(dir: &Path, id: u64) -> Result<(), String> {
    let pid = read_pid(&dir.join(files::SUPERVISOR_PID))
        .ok_or_else(|| format!("job {id} has no supervisor yet"))?;
    // A pid file outliving its supervisor must not make batchd signal whoever has the pid now.
    if !supervisor_alive(pid, dir) {
        return Err(format!("the supervisor of job {id} is gone"));
    }
    kill(Pid::from_raw(pid), Signal::SIGTERM)
        .map_err(|e| format!("cannot signal the supervisor of job {id}: {e}"))
}

/// Tells the supervisor of job `id`, whose directory is `dir`, its new time limit, `deadline`
/// ms since the epoch: written to `limit.json`, read by the supervisor on SIGUSR2 (and at its
/// start, after a restart of the daemon in between).
pub fn set_deadline_in(dir: &Path, id: u64, deadline: u64) -> Result<(), String> {
    crate::launch::write_json(
        &dir.join(files::LIMIT),
        &crate::launch::Limit {
            deadline_ms: deadline,
        },
    )
    .map_err(|e| format!("cannot write the new limit of job {id}: {e}"))?;
    let pid = read_pid(&dir.join(files::SUPERVISOR_PID))
        .ok_or_else(|| format!("job {id} has no supervisor yet"))?;
    if !supervisor_alive(pid, dir) {
        return Err(format!("the supervisor of job {id} is gone"));
    }
    kill(Pid::from_raw(pid), Signal::SIGUSR2)
        .map_err(|e| format!("cannot signal the supervisor of job {id}: {e}"))
}

/// Sends `signal` to the process groups of job `id`, whose directory is `dir`: every
/// component's whose process still runs (only leaders that are provably the job's: a group id
/// outlives its leader only as long as its members, then may be another's).
pub fn signal_in(dir: &Path, id: u64, signal: i32, scope: SignalScope) -> Result<(), String> {
    let sig = Signal::try_from(signal).map_err(|_| format!("invalid signal {signal}"))?;
    // scancel: "signals other than SIGKILL are not sent to the batch step" by default; a
    // SIGKILL reaches everything.
    let scope = match (scope, sig) {
        (SignalScope::Steps, Signal::SIGKILL) => SignalScope::Full,
        (s, _) => s,
    };
    if scope == SignalScope::Steps {
        // No step running: nothing to signal, as with scancel.
        crate::procs::signal_steps(dir, sig);
        return Ok(());
    }
    let pids = JobPids::read(&dir.join(files::JOB_PID));
    if pids.leaders.is_empty() {
        return Err(format!("job {id} has not started its process yet"));
    }
    let groups = crate::procs::live_leaders(&pids, id);
    if groups.is_empty() {
        return Err(format!("job {id} has no process left to signal"));
    }
    // A component whose group is already gone does not make the others' signal fail.
    let mut reached = false;
    let mut last = None;
    for &g in &groups {
        // `-b`: the batch shell alone; `-f`: its whole group, and the steps (whose tasks
        // are in groups of their own, reached through their `erun`).
        let target = match scope {
            SignalScope::Batch => g,
            _ => -g,
        };
        match kill(Pid::from_raw(target), sig) {
            Ok(()) => reached = true,
            Err(e) => last = Some(e),
        }
    }
    if scope == SignalScope::Full && sig != Signal::SIGKILL {
        crate::procs::signal_steps_outside(dir, sig, &groups);
    }
    match (reached, last) {
        (false, Some(e)) => Err(format!("cannot signal job {id}: {e}")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_not_a_supervisor() {
        assert!(!supervisor_alive(
            std::process::id() as i32,
            Path::new("/x")
        ));
        assert!(!supervisor_alive(i32::MAX, Path::new("/x")));
    }
}
