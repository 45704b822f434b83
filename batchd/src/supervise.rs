//! The per-job supervisor, run as `batchd supervise JOBDIR` (Slurm's slurmstepd in small).
//!
//! The daemon starts it in a session of its own, so it outlives a restart (or a `kill -9`) of
//! the daemon. It forks the job into another session and process group, sends `--signal`'s
//! signal before the time limit, enforces the limit (SIGTERM to the job's group, SIGKILL
//! after the grace period, a line in the job's stderr), turns a SIGTERM of its own into a cancel of the job, and records the outcome in
//! `status.json` for whichever daemon is running when the job ends.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag};
use nix::unistd::{Gid, Pid, Uid};

use crate::launch::{
    files, format_utc, now_ms, read_json, write_json, JobPids, Launch, Leader, Outcome, Status,
};

const NONE: u8 = 0;
const TIMEOUT: u8 = 1;
const CANCELLED: u8 = 2;

/// Runs the supervisor for the job in `job_dir`; returns the process exit code.
pub fn supervise(job_dir: &Path) -> i32 {
    // A session of its own: the daemon's terminal, session and process group may go away.
    // (It fails only for a group leader, i.e. when started by hand from a shell; harmless.)
    let _ = nix::unistd::setsid();
    // Block the signals the helper thread waits for, before any thread exists, so every thread
    // inherits the mask and `sigwait` is the only receiver. The child unblocks them. Blocked
    // before the pid file exists: a cancel sent as soon as the daemon can read it must wait
    // for the helper, not kill the supervisor before it records anything.
    let mut waited = SigSet::empty();
    waited.add(Signal::SIGTERM);
    waited.add(Signal::SIGINT);
    waited.add(Signal::SIGHUP);
    // "Your time limit changed" (`econtrol update TimeLimit=`): see `limit.json`.
    waited.add(Signal::SIGUSR2);
    if let Err(e) = waited.thread_block() {
        return fail(job_dir, format!("cannot block signals: {e}"));
    }
    let me = std::process::id();
    if let Err(e) = crate::launch::write_atomic(
        &job_dir.join(files::SUPERVISOR_PID),
        me.to_string().as_bytes(),
    ) {
        eprintln!(
            "batchd supervise: cannot write pid file in {}: {e}",
            job_dir.display()
        );
        return 1;
    }
    let launch: Launch = match read_json(&job_dir.join(files::LAUNCH)) {
        Ok(Some(l)) => l,
        Ok(None) => return fail(job_dir, "launch.json is missing".into()),
        Err(e) => return fail(job_dir, format!("launch.json: {e}")),
    };
    // One process per component of a co-allocated job, started one right after the other
    // (no wait between them), each in a session and group of its own; one for other jobs.
    let extras: Vec<Vec<(String, String)>> = if launch.components.is_empty() {
        vec![Vec::new()]
    } else {
        launch.components.clone()
    };
    let mut children = Vec::new();
    let mut outputs: Option<(File, File)> = None;
    let mut notes = None;
    // Every component's process (leader of its group and session), with its start time and
    // the boot, written as each is forked: signals reach each, and a daemon that finds this
    // supervisor gone stops them all, and only them (`crate::procs`).
    let mut pids = JobPids {
        boot: crate::procs::boot_id(),
        leaders: Vec::new(),
    };
    for (k, extra) in extras.iter().enumerate() {
        let wrap = launch.wrap.get(k).map_or(&[][..], Vec::as_slice);
        match spawn_job(&launch, extra, wrap, outputs.as_ref()) {
            Ok((child, n, files)) => {
                let pid = child.id() as i32;
                pids.leaders.push(Leader {
                    pid,
                    start: crate::procs::stat(pid).map(|s| s.start),
                });
                if let Err(e) = crate::launch::write_atomic(
                    &job_dir.join(files::JOB_PID),
                    pids.to_text().as_bytes(),
                ) {
                    eprintln!("batchd supervise: cannot write job pid: {e}");
                }
                children.push(child);
                notes.get_or_insert(n);
                outputs.get_or_insert(files);
            }
            Err(e) => {
                for c in &children {
                    let _ = kill(Pid::from_raw(-(c.id() as i32)), Signal::SIGKILL);
                }
                return fail(job_dir, e);
            }
        }
    }
    drop(outputs);
    let Some(notes) = notes else {
        return fail(job_dir, "no process to start".into());
    };
    let notes = Arc::new(notes);
    let groups: Arc<Vec<Group>> = Arc::new(
        children
            .iter()
            .map(|c| Group {
                pid: Pid::from_raw(c.id() as i32),
                gone: AtomicBool::new(false),
            })
            .collect(),
    );
    let outcome = Arc::new(AtomicU8::new(NONE));
    let grace = Duration::from_millis(launch.grace_ms);
    // The time limit's instant; a changed limit (`limit.json`) replaces the launch's.
    let deadline = Arc::new(AtomicU64::new(
        read_limit(job_dir).unwrap_or(launch.deadline_ms),
    ));

    {
        let outcome = Arc::clone(&outcome);
        let l = launch.clone();
        let notes = Arc::clone(&notes);
        let groups = Arc::clone(&groups);
        let deadline = Arc::clone(&deadline);
        let dir = job_dir.to_path_buf();
        std::thread::spawn(move || loop {
            match waited.wait() {
                Ok(Signal::SIGUSR2) => {
                    if let Some(d) = read_limit(&dir) {
                        deadline.store(d, Ordering::SeqCst);
                    }
                }
                Ok(Signal::SIGTERM) | Ok(Signal::SIGINT) => {
                    if outcome
                        .compare_exchange(NONE, CANCELLED, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok()
                    {
                        note(
                            &notes,
                            &format!(
                                "*** JOB {} CANCELLED AT {} ***",
                                l.job_id,
                                format_utc(now_ms())
                            ),
                        );
                        stop_groups(&groups, grace, &dir);
                    }
                }
                // The daemon's restarts must not touch the job.
                Ok(_) => {}
                Err(e) => {
                    eprintln!("batchd supervise: sigwait: {e}");
                    return;
                }
            }
        });
    }
    {
        let outcome = Arc::clone(&outcome);
        let l = launch.clone();
        let notes = Arc::clone(&notes);
        let groups = Arc::clone(&groups);
        let deadline = Arc::clone(&deadline);
        let dir = job_dir.to_path_buf();
        std::thread::spawn(move || {
            sleep_until(&deadline, 0);
            if outcome
                .compare_exchange(NONE, TIMEOUT, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                note(
                    &notes,
                    &format!(
                        "*** JOB {} CANCELLED AT {} DUE TO TIME LIMIT ***",
                        l.job_id,
                        format_utc(now_ms())
                    ),
                );
                stop_groups(&groups, grace, &dir);
            }
        });
    }

    if let Some(w) = launch.warn {
        let outcome = Arc::clone(&outcome);
        let groups = Arc::clone(&groups);
        let dir = job_dir.to_path_buf();
        // How long before the limit, which may move.
        let before = launch.deadline_ms.saturating_sub(w.at_ms);
        let deadline = Arc::clone(&deadline);
        std::thread::spawn(move || {
            sleep_until(&deadline, before);
            // A job already told to stop (cancel, time limit) gets no notice.
            if outcome.load(Ordering::SeqCst) == NONE {
                warn_job(&groups, w.signal, w.batch_only, &dir);
            }
        });
    }

    // The job ends when every component's process has; its status is the first component's
    // that failed, else the last one's.
    let mut status: Option<std::process::ExitStatus> = None;
    for (mut child, group) in children.into_iter().zip(groups.iter()) {
        // Seen ended but not reaped yet: its pid, and so its group's id, cannot be reused by
        // another process while what the script left running in the group is killed (Slurm's
        // proctrack ends a step's processes with it too); then the group is forgotten, so
        // that no later signal reaches a group that reused its id.
        loop {
            match waitid(
                Id::Pid(group.pid),
                WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT,
            ) {
                Ok(_) => break,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return fail(job_dir, format!("waiting for the job: {e}")),
            }
        }
        // A job being stopped (cancel, time limit): its steps' tasks, which got the SIGTERM
        // from their `erun`, have the grace period to end before the SIGKILL.
        if outcome.load(Ordering::SeqCst) != NONE {
            let until = std::time::Instant::now() + grace;
            while std::time::Instant::now() < until
                && !crate::procs::session_members(group.pid.as_raw()).is_empty()
            {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        kill_session(group.pid);
        group.gone.store(true, Ordering::SeqCst);
        let s = loop {
            match child.wait() {
                Ok(s) => break s,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return fail(job_dir, format!("waiting for the job: {e}")),
            }
        };
        if status.is_none_or(|st| st.success()) {
            status = Some(s);
        }
    }
    let Some(status) = status else {
        return fail(job_dir, "no process to wait for".into());
    };
    let outcome = match outcome.load(Ordering::SeqCst) {
        TIMEOUT => Outcome::Timeout,
        CANCELLED => Outcome::Cancelled,
        _ => Outcome::Exited,
    };
    let st = Status {
        outcome,
        exit_code: status.code().unwrap_or(0),
        signal: status.signal().unwrap_or(0),
        end_ms: now_ms(),
        detail: None,
        // Every process the job started that its processes waited for: the batch step's use.
        usage: batch_proto::Usage::of_children(),
    };
    match write_json(&job_dir.join(files::STATUS), &st) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("batchd supervise: cannot write status: {e}");
            1
        }
    }
}

/// The changed time limit in `job_dir`'s `limit.json`, if any.
fn read_limit(job_dir: &Path) -> Option<u64> {
    read_json::<crate::launch::Limit>(&job_dir.join(files::LIMIT))
        .ok()
        .flatten()
        .map(|l| l.deadline_ms)
}

/// Sleeps until `before` ms ahead of `deadline`, which may change meanwhile (it is looked at
/// again at least every second).
fn sleep_until(deadline: &AtomicU64, before: u64) {
    loop {
        let at = deadline.load(Ordering::SeqCst).saturating_sub(before);
        let now = now_ms();
        if now >= at {
            return;
        }
        std::thread::sleep(Duration::from_millis((at - now).min(1000)));
    }
}

/// A component's process group, as the supervisor's threads signal it.
struct Group {
    /// Its id (its leader's pid).
    pid: Pid,
    /// Its leader was seen ended and its group killed: the id may be another's soon.
    gone: AtomicBool,
}

/// The groups whose leader has not ended.
fn live(groups: &[Group]) -> Vec<Pid> {
    groups
        .iter()
        .filter(|g| !g.gone.load(Ordering::SeqCst))
        .map(|g| g.pid)
        .collect()
}

/// Sends `--signal`'s `signal` to the job: to each batch shell (the process the supervisor
/// started, leader of its group) with `batch_only`, else to the job's running steps (their
/// `erun`, which passes it to its tasks), never the batch shell: sbatch's rule.
fn warn_job(groups: &[Group], signal: i32, batch_only: bool, job_dir: &Path) {
    let Ok(sig) = Signal::try_from(signal) else {
        eprintln!("batchd supervise: --signal {signal} is not a signal");
        return;
    };
    if batch_only {
        for shell in live(groups) {
            let _ = kill(shell, sig);
        }
        return;
    }
    crate::procs::signal_steps(job_dir, sig);
}

/// SIGKILL to group `g` and to whatever else is left in its session (an `erun`'s tasks run in
/// process groups of their own).
fn kill_session(g: Pid) {
    let _ = kill(Pid::from_raw(-g.as_raw()), Signal::SIGKILL);
    for pid in crate::procs::session_members(g.as_raw()) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// Records a job that could not be started.
fn fail(job_dir: &Path, detail: String) -> i32 {
    eprintln!("batchd supervise: {detail}");
    let st = Status {
        outcome: Outcome::StartFailed,
        exit_code: 1,
        signal: 0,
        end_ms: now_ms(),
        detail: Some(detail),
        usage: None,
    };
    match write_json(&job_dir.join(files::STATUS), &st) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// SIGTERM to the job's process groups (one per component) and to its steps' `erun`s that are
/// elsewhere (an allocation's, run from a login shell), SIGKILL after `grace` to the groups
/// that were still there and whose leader has not ended meanwhile (an `erun` kills its own
/// tasks after the same grace, `ESCHED_KILL_WAIT_MS`).
fn stop_groups(groups: &[Group], grace: Duration, job_dir: &Path) {
    let ids: Vec<i32> = groups.iter().map(|g| g.pid.as_raw()).collect();
    crate::procs::signal_steps_outside(job_dir, Signal::SIGTERM, &ids);
    let live: Vec<&Group> = groups
        .iter()
        .filter(|g| !g.gone.load(Ordering::SeqCst))
        .filter(|g| kill(Pid::from_raw(-g.pid.as_raw()), Signal::SIGTERM).is_ok())
        .collect();
    if live.is_empty() {
        return;
    }
    std::thread::sleep(grace);
    for g in live {
        if !g.gone.load(Ordering::SeqCst) {
            kill_session(g.pid);
        }
    }
}

/// Appends a line to the job's stderr file, as slurmstepd does. `stderr` shares the job's
/// open file (and its offset), so the line lands after what the job wrote, and no path is
/// opened again as root: the user may have replaced it with a symlink meanwhile.
fn note(stderr: &File, line: &str) {
    let mut f = stderr;
    if let Err(e) = writeln!(f, "batchd: {line}") {
        eprintln!("batchd supervise: cannot write to the job's stderr: {e}");
    }
}

/// Opens an output file (created 0666 less the submitter's umask, which is in force while the
/// supervisor opens it: a umask of 077 keeps it private, as with sbatch; truncated, or
/// appended to with `--open-mode=append`).
fn open_output(path: &Path, append: bool) -> Result<File, String> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(!append)
        .append(append)
        .mode(0o666)
        .open(path)
        .map_err(|e| format!("cannot open output file {}: {e}", path.display()))
}

/// Runs `f` with the job user's effective ids and groups when `switch` is set: a supervisor
/// running as root must open the job's files with the user's rights (a user's symlink must not
/// lead root into /etc), and the files are then the user's.
fn as_user<T>(
    switch: bool,
    groups: &[Gid],
    uid: Uid,
    gid: Gid,
    f: impl FnOnce() -> T,
) -> Result<T, String> {
    if !switch {
        return Ok(f());
    }
    let err = |what: &str, e: nix::Error| format!("cannot {what}: {e}");
    nix::unistd::setgroups(groups).map_err(|e| err("set the user's groups", e))?;
    nix::unistd::setegid(gid).map_err(|e| err("switch to the user's group", e))?;
    nix::unistd::seteuid(uid).map_err(|e| err("switch to the user", e))?;
    let out = f();
    nix::unistd::seteuid(Uid::from_raw(0)).map_err(|e| err("switch back to root", e))?;
    nix::unistd::setegid(Gid::from_raw(0)).map_err(|e| err("switch back to root's group", e))?;
    Ok(out)
}

/// Starts the job's process with `extra` variables over its environment; returns it, a handle
/// on its stderr file for the supervisor's notes, and its output files. `outputs`: the files a
/// first component's process got, shared (not opened and truncated again) by the others.
#[allow(unsafe_code)] // the one unsafe block below says why it is sound
fn spawn_job(
    l: &Launch,
    extra: &[(String, String)],
    wrap: &[String],
    outputs: Option<&(File, File)>,
) -> Result<(std::process::Child, File, (File, File)), String> {
    let as_root = Uid::effective().is_root();
    let switch_user = as_root && l.uid != 0;
    let groups = if switch_user {
        let name = std::ffi::CString::new(l.user.as_str())
            .map_err(|_| "user name has a NUL byte".to_string())?;
        // A user unknown to NSS (e.g. a uid without a passwd entry) gets its primary group only.
        nix::unistd::getgrouplist(&name, Gid::from_raw(l.gid))
            .unwrap_or_else(|_| vec![Gid::from_raw(l.gid)])
    } else {
        Vec::new()
    };
    let (uid, gid) = (Uid::from_raw(l.uid), Gid::from_raw(l.gid));
    // The submitter's umask, in force while the output files are opened and in the job; the
    // supervisor's own files (status, pid) keep its own, so that no umask of the user's can
    // make them unreadable to the daemon. Bits beyond 0777 cannot come from a valid launch;
    // masked rather than failed.
    let job_umask =
        nix::sys::stat::Mode::from_bits_truncate((l.umask & 0o777) as nix::libc::mode_t);
    let dup = |f: &File| {
        f.try_clone()
            .map_err(|e| format!("cannot duplicate output file: {e}"))
    };
    let shared = match outputs {
        Some((o, e)) => Some((dup(o)?, dup(e)?)),
        None => None,
    };
    let own_umask = nix::sys::stat::umask(job_umask);
    let opened = if let Some(files) = shared {
        Ok(Ok(files))
    } else {
        as_user(
            switch_user,
            &groups,
            uid,
            gid,
            || -> Result<(File, File), String> {
                let stdout = open_output(&l.stdout, l.append)?;
                let stderr = if l.stderr == l.stdout {
                    stdout
                        .try_clone()
                        .map_err(|e| format!("cannot duplicate output file: {e}"))?
                } else {
                    open_output(&l.stderr, l.append)?
                };
                Ok((stdout, stderr))
            },
        )
    };
    nix::sys::stat::umask(own_umask);
    let (stdout, stderr) = opened??;
    let kept = (dup(&stdout)?, dup(&stderr)?);
    let notes = stderr
        .try_clone()
        .map_err(|e| format!("cannot duplicate output file: {e}"))?;
    if as_root {
        // The script lives in the state directory; only its owner may read it.
        let _ = nix::unistd::chown(&l.script, Some(uid), Some(gid));
    }
    let _ = std::fs::set_permissions(&l.script, std::fs::Permissions::from_mode(0o700));
    let mut cmd = match wrap.split_first() {
        // A step of a Slurm allocation: srun runs the script on the job's node.
        Some((program, first)) => {
            let mut c = Command::new(program);
            c.args(first);
            if l.via_shell {
                c.arg("/bin/sh");
            }
            c.arg(&l.script);
            c
        }
        None if l.via_shell => {
            let mut c = Command::new("/bin/sh");
            c.arg(&l.script);
            c
        }
        None => Command::new(&l.script),
    };
    cmd.args(&l.args)
        .env_clear()
        .envs(l.env.iter().map(|(k, v)| (k, v)))
        .envs(extra.iter().map(|(k, v)| (k, v)))
        .current_dir(&l.work_dir)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr);
    // SAFETY: the closure runs in the forked child before exec; it only makes async-signal-safe
    // system calls (sigprocmask, umask, setsid, setgroups, setgid, setuid) on data prepared
    // before the fork, and the supervisor forks from its only thread.
    unsafe {
        cmd.pre_exec(move || {
            SigSet::empty()
                .thread_set_mask()
                .map_err(std::io::Error::from)?;
            nix::sys::stat::umask(job_umask);
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            if switch_user {
                nix::unistd::setgroups(&groups).map_err(std::io::Error::from)?;
                nix::unistd::setgid(gid).map_err(std::io::Error::from)?;
                nix::unistd::setuid(uid).map_err(std::io::Error::from)?;
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|e| {
        format!(
            "cannot start {} in {}: {e}",
            if l.via_shell { "/bin/sh" } else { "the script" },
            l.work_dir.display()
        )
    })?;
    Ok((child, notes, kept))
}
