//! A job's processes as `/proc` shows them.
//!
//! The supervisor starts each of a job's processes (one per component) with `setsid`, so a job
//! is a set of sessions, each led by the process the supervisor forked; `job.pid` lists the
//! leaders with their start times and the boot they ran in ([`crate::launch::JobPids`]). When a
//! supervisor is gone without recording the job's end (killed while batchd was down, say), what
//! is left of those sessions is stopped here before the job is recorded as ended: a job
//! recorded as ended never leaves processes behind, and its nodes are not given to another job
//! while they still run. (Slurm's proctrack plugins play this part with cgroups; a session is
//! what a job has here without root-only machinery.)
//!
//! Pids are reused, so a recorded id is trusted only as far as it can be proved the job's
//! ([`job_members`]): never across a reboot (another boot id); a session whose leader lives is
//! the job's only if the leader started when the supervisor recorded (a session cannot be
//! entered from outside, so all its members are then the job's); a session whose leader is
//! gone keeps its id reserved while any member lives, but the id may have been reused by a
//! later session whose own leader left too, so each member must also carry the job's
//! `ESCHED_JOB_ID` in its environment and belong to the job's user. A job process that cleared
//! its environment after its leader died is left alone rather than risk another's.

use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::launch::{JobPids, StepPid};

/// What `/proc/PID/stat` says of a process that matters here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// The state letter (`R`, `S`, `Z`, …).
    pub state: char,
    /// Its parent.
    pub ppid: i32,
    /// Its process group.
    pub pgrp: i32,
    /// Its session.
    pub session: i32,
    /// When it started, in clock ticks since the boot.
    pub start: u64,
}

impl Stat {
    /// Whether the process has exited (a zombie waiting for its parent, or dead).
    pub fn exited(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}

/// Parses a `/proc/PID/stat` line: the fields after the command name, which ends at the last
/// `)` (a name may hold spaces and parentheses).
pub fn parse_stat(line: &str) -> Option<Stat> {
    let (_, rest) = line.rsplit_once(')')?;
    // Fields from the third on (proc(5)): state, ppid, pgrp, session, …, starttime (22nd).
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        state: f.first()?.chars().next()?,
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        session: f.get(3)?.parse().ok()?,
        start: f.get(19)?.parse().ok()?,
    })
}

/// Process `pid`'s stat, if it exists.
pub fn stat(pid: i32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`).
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Process `pid`'s real uid.
pub fn uid(pid: i32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().next())
        .and_then(|u| u.parse().ok())
}

/// Whether process `pid`'s environment holds `ESCHED_JOB_ID=job`.
fn runs_job(pid: i32, job: u64) -> bool {
    let want = format!("ESCHED_JOB_ID={job}");
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| env.split(|&b| b == 0).any(|v| v == want.as_bytes()))
        .unwrap_or(false)
}

/// Every process in `/proc` with its stat.
fn all() -> Vec<(i32, Stat)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, stat(pid)?)))
        .collect()
}

/// The live processes whose process group is one of `groups`, the groups' leaders left out.
pub fn group_members(groups: &[i32]) -> Vec<i32> {
    all()
        .into_iter()
        .filter(|(pid, s)| !s.exited() && !groups.contains(pid) && groups.contains(&s.pgrp))
        .map(|(pid, _)| pid)
        .collect()
}

/// Whether `step`'s `erun` still runs (same pid, same start time: a reused pid is not it).
pub fn step_alive(step: &StepPid) -> bool {
    stat(step.pid).is_some_and(|s| s.start == step.start && !s.exited())
}

/// Sends `sig` to each running step's `erun` of the job in `dir` (`steps.json`), which passes
/// it to its tasks; how many were reached.
pub fn signal_steps(dir: &std::path::Path, sig: nix::sys::signal::Signal) -> usize {
    signal_steps_outside(dir, sig, &[])
}

/// [`signal_steps`], but for the `erun`s in one of process groups `groups`, which a signal to
/// those groups reaches already (once is what a task must get).
pub fn signal_steps_outside(
    dir: &std::path::Path,
    sig: nix::sys::signal::Signal,
    groups: &[i32],
) -> usize {
    StepPid::read_all(dir)
        .iter()
        .filter(|s| step_alive(s))
        .filter(|s| stat(s.pid).is_some_and(|st| !groups.contains(&st.pgrp)))
        .filter(|s| nix::sys::signal::kill(nix::unistd::Pid::from_raw(s.pid), sig).is_ok())
        .count()
}

/// The live processes of session `sid`, its leader left out: what a job's `erun` started in
/// process groups of their own is still in the job's session.
pub fn session_members(sid: i32) -> Vec<i32> {
    all()
        .into_iter()
        .filter(|(pid, s)| !s.exited() && *pid != sid && s.session == sid)
        .map(|(pid, _)| pid)
        .collect()
}

/// The leaders of `pids` that live and are provably job `job`'s (they started when the
/// supervisor recorded, in this boot; one recorded without its start must carry the job's
/// `ESCHED_JOB_ID`): the process groups a signal to the job may reach.
pub fn live_leaders(pids: &JobPids, job: u64) -> Vec<i32> {
    if !same_boot(pids) {
        return Vec::new();
    }
    pids.leaders
        .iter()
        .filter(|l| {
            stat(l.pid).is_some_and(|s| {
                !s.exited()
                    && match l.start {
                        Some(t) => t == s.start,
                        None => runs_job(l.pid, job),
                    }
            })
        })
        .map(|l| l.pid)
        .collect()
}

/// Whether `pids` were recorded in this boot (a record without a boot is taken as this one's:
/// its leaders are then checked by their environment).
fn same_boot(pids: &JobPids) -> bool {
    match (&pids.boot, boot_id()) {
        (Some(recorded), Some(now)) => *recorded == now,
        _ => true,
    }
}

/// The live processes of job `job` (run as `uid`) in the sessions `pids` lists, as far as they
/// can be told apart from others' (see the module's documentation).
pub fn job_members(pids: &JobPids, uid: u32, job: u64) -> Vec<i32> {
    members(pids, uid, job, &mut Vec::new())
}

/// [`job_members`], `proven` the sessions already proved the job's whole (their leader lived
/// with the recorded start): they stay so while any member lives, since the kernel does not
/// reuse a session id in use, even after their leader dies (of the stop's SIGTERM, say) and
/// leaves members that carry no `ESCHED_JOB_ID`. Sessions proved here are added to it.
fn members(pids: &JobPids, uid: u32, job: u64, proven: &mut Vec<i32>) -> Vec<i32> {
    if !same_boot(pids) || pids.leaders.is_empty() {
        return Vec::new();
    }
    let procs = all();
    let mut out = Vec::new();
    for l in &pids.leaders {
        let leader = procs.iter().find(|(p, s)| *p == l.pid && !s.exited());
        let whole = match (leader, l.start) {
            _ if proven.contains(&l.pid) => true,
            // Alive and the same process: the whole session is the job's.
            (Some((_, s)), Some(t)) if s.start == t => {
                proven.push(l.pid);
                true
            }
            // Alive but started at another time: the id was reused; nothing here is the job's.
            (Some(_), Some(_)) => continue,
            // Gone (or recorded without its start): each member must show it is the job's.
            _ => false,
        };
        out.extend(
            procs
                .iter()
                .filter(|(_, s)| !s.exited() && s.session == l.pid)
                .filter(|(p, _)| self::uid(*p) == Some(uid))
                .filter(|(p, _)| whole || runs_job(*p, job))
                .map(|(p, _)| *p),
        );
    }
    out
}

/// Sends `sig` to every process [`members`] finds; how many there were.
fn signal_job(pids: &JobPids, uid: u32, job: u64, sig: Signal, proven: &mut Vec<i32>) -> usize {
    let found = members(pids, uid, job, proven);
    for &pid in &found {
        let _ = kill(Pid::from_raw(pid), sig);
    }
    found.len()
}

/// How often a stop looks again for what is left.
const POLL: Duration = Duration::from_millis(50);

/// The longest a stop waits for SIGKILLed processes to be gone: they die at once unless stuck
/// in the kernel (uninterruptible I/O), which no signal shortens.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// Stops what is left of job `job` (run as `uid`) once its supervisor is gone: SIGTERM to
/// every process of its sessions, SIGKILL after `grace` to those still there (as a cancel
/// does), then waits until none is left (at most a few seconds more). Returns how many
/// processes it found. Blocking: it reads `/proc` every few tens of milliseconds.
pub fn stop_job(pids: &JobPids, uid: u32, job: u64, grace: Duration) -> usize {
    // What the first look proves the job's stays so for the whole stop.
    let mut proven = Vec::new();
    let found = signal_job(pids, uid, job, Signal::SIGTERM, &mut proven);
    if found == 0 {
        return 0;
    }
    let until = Instant::now() + grace;
    while Instant::now() < until && !members(pids, uid, job, &mut proven).is_empty() {
        std::thread::sleep(POLL);
    }
    let until = Instant::now() + KILL_WAIT;
    while signal_job(pids, uid, job, Signal::SIGKILL, &mut proven) > 0 && Instant::now() < until {
        std::thread::sleep(POLL);
    }
    found
}

/// [`stop_job`] without a grace period: for a job that cannot be re-attached at start-up,
/// before the daemon serves.
pub fn kill_job_now(pids: &JobPids, uid: u32, job: u64) -> usize {
    stop_job(pids, uid, job, Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::Leader;

    #[test]
    fn stat_fields_are_read_after_the_command_name() {
        let tail = "0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 777 0 0";
        let s = parse_stat(&format!("42 (sh) S 1 42 40 {tail}")).unwrap();
        assert_eq!(
            (s.state, s.ppid, s.pgrp, s.session, s.start),
            ('S', 1, 42, 40, 777)
        );
        let s = parse_stat(&format!("43 (a) b (c)) Z 42 41 40 {tail}")).unwrap();
        assert_eq!((s.state, s.pgrp, s.session), ('Z', 41, 40));
        assert!(s.exited());
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("42 (sh) S 1 42 40"), None);
    }

    #[test]
    fn our_own_group_has_us_unless_we_lead_it() {
        let me = std::process::id() as i32;
        let group = nix::unistd::getpgrp().as_raw();
        assert_eq!(group_members(&[group]).contains(&me), me != group);
    }

    /// A child in a session of its own running `script`, the `JobPids` a supervisor would
    /// record for it, and its pid.
    #[allow(unsafe_code)] // the one unsafe block below says why it is sound
    fn session(script: &str, job: u64) -> (std::process::Child, JobPids) {
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(script)
            .env("ESCHED_JOB_ID", job.to_string());
        // SAFETY: setsid is async-signal-safe and the closure touches no shared state.
        unsafe {
            cmd.pre_exec(|| {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        let pid = child.id() as i32;
        let pids = JobPids {
            boot: boot_id(),
            leaders: vec![Leader {
                pid,
                start: stat(pid).map(|s| s.start),
            }],
        };
        (child, pids)
    }

    fn wait_members(pids: &JobPids, job: u64, n: usize) {
        let uid = nix::unistd::getuid().as_raw();
        let until = Instant::now() + Duration::from_secs(5);
        while job_members(pids, uid, job).len() < n && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(job_members(pids, uid, job).len(), n);
    }

    #[test]
    fn a_stop_ends_every_process_of_the_sessions() {
        // A child that ignores SIGTERM: the grace period ends with SIGKILL.
        let (mut child, pids) = session("trap '' TERM; sleep 30 & wait", 7);
        wait_members(&pids, 7, 2);
        let uid = nix::unistd::getuid().as_raw();
        // Another boot's record, another user's or a leader of another start: nothing.
        let other_boot = JobPids {
            boot: Some("another-boot".into()),
            ..pids.clone()
        };
        assert!(job_members(&other_boot, uid, 7).is_empty());
        assert!(job_members(&pids, uid.wrapping_add(1), 7).is_empty());
        let mut reused = pids.clone();
        reused.leaders[0].start = reused.leaders[0].start.map(|t| t + 1);
        assert!(job_members(&reused, uid, 7).is_empty());
        assert_eq!(live_leaders(&reused, 7), Vec::<i32>::new());
        assert_eq!(live_leaders(&pids, 7), vec![pids.leaders[0].pid]);
        let mut bare = pids.clone();
        bare.leaders[0].start = None;
        assert_eq!(live_leaders(&bare, 7), vec![pids.leaders[0].pid]);
        assert_eq!(live_leaders(&bare, 8), Vec::<i32>::new());
        assert_eq!(stop_job(&pids, uid, 7, Duration::from_millis(200)), 2);
        let _ = child.wait();
        assert!(job_members(&pids, uid, 7).is_empty());
    }

    #[test]
    fn a_session_proved_whole_stays_so_when_its_leader_dies_of_the_stop() {
        // The leader dies of SIGTERM; its child without the job's variable ignores SIGTERM and
        // must still get the SIGKILL.
        let (mut child, pids) = session("env -i /bin/sh -c \"trap '' TERM; sleep 30\" & wait", 6);
        wait_members(&pids, 6, 3);
        let uid = nix::unistd::getuid().as_raw();
        assert_eq!(stop_job(&pids, uid, 6, Duration::from_millis(300)), 3);
        let _ = child.wait();
        let sid = pids.leaders[0].pid;
        let left = all()
            .into_iter()
            .filter(|(_, s)| !s.exited() && s.session == sid)
            .count();
        assert_eq!(left, 0, "a process of the job was left");
    }

    #[test]
    fn after_its_leader_a_session_is_the_jobs_only_where_its_members_say_so() {
        // The leader leaves two children: one of job 8's, one that cleared its environment.
        let (mut child, pids) = session("sleep 30 & env -i /bin/sleep 30 & exit 0", 8);
        let _ = child.wait();
        let uid = nix::unistd::getuid().as_raw();
        let until = Instant::now() + Duration::from_secs(5);
        let sid = pids.leaders[0].pid;
        let in_session = || {
            all()
                .into_iter()
                .filter(|(_, s)| !s.exited() && s.session == sid)
                .count()
        };
        // Until `env -i` has run its sleep, that process still has the job's environment.
        while (in_session() < 2 || job_members(&pids, uid, 8).len() != 1) && Instant::now() < until
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(in_session(), 2);
        assert_eq!(job_members(&pids, uid, 8).len(), 1);
        assert!(job_members(&pids, uid, 9).is_empty());
        assert_eq!(kill_job_now(&pids, uid, 8), 1);
        // The one without the job's variable is left; end it here.
        for (p, s) in all() {
            if s.session == sid && !s.exited() {
                let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
            }
        }
    }
}
