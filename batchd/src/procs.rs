//! A job's processes as `/proc` shows them.
//!
//! The supervisor starts each of a job's processes (one per component) with `setsid`, so a job
//! is a set of sessions, whose ids the supervisor writes to `job.pid`. When a supervisor is gone
//! without recording the job's end (killed while batchd was down, say), what is left of those
//! sessions is stopped here before the job is recorded as ended: a job recorded as ended never
//! leaves processes behind, and its nodes are not given to another job while they still run.
//! (Slurm's proctrack plugins play this part with cgroups; a session is what a job has here
//! without root-only machinery.)
//!
//! A session id outlives its leader only while some member lives (the kernel does not reuse a
//! pid still in use as a session or group id), so a session found here is the job's own; the
//! owner's uid is checked besides, against a recycled id after every member has gone.

use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// What `/proc/PID/stat` says of a process that matters here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// The state letter (`R`, `S`, `Z`, …).
    pub state: char,
    /// Its process group.
    pub pgrp: i32,
    /// Its session.
    pub session: i32,
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
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let _ppid = f.next()?;
    let pgrp = f.next()?.parse().ok()?;
    let session = f.next()?.parse().ok()?;
    Some(Stat {
        state,
        pgrp,
        session,
    })
}

/// Process `pid`'s stat, if it exists.
pub fn stat(pid: i32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
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

/// The live processes of user `uid` in one of `sessions`.
pub fn session_members(sessions: &[i32], uid: u32) -> Vec<i32> {
    all()
        .into_iter()
        .filter(|(_, s)| !s.exited() && sessions.contains(&s.session))
        .filter(|(pid, _)| self::uid(*pid) == Some(uid))
        .map(|(pid, _)| pid)
        .collect()
}

/// Sends `sig` to every live process of user `uid` in `sessions`; how many there were.
fn signal_sessions(sessions: &[i32], uid: u32, sig: Signal) -> usize {
    let members = session_members(sessions, uid);
    for &pid in &members {
        let _ = kill(Pid::from_raw(pid), sig);
    }
    members.len()
}

/// How often a stop looks again for what is left.
const POLL: Duration = Duration::from_millis(50);

/// The longest a stop waits for SIGKILLed processes to be gone: they die at once unless stuck
/// in the kernel (uninterruptible I/O), which no signal shortens.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// Stops what is left of a job whose supervisor is gone: SIGTERM to every process of user
/// `uid` in `sessions`, SIGKILL after `grace` to those still there (as a cancel does), then
/// waits until none is left (at most a few seconds more). Returns how many processes it found.
pub async fn stop_sessions(sessions: &[i32], uid: u32, grace: Duration) -> usize {
    let found = signal_sessions(sessions, uid, Signal::SIGTERM);
    if found == 0 {
        return 0;
    }
    let until = Instant::now() + grace;
    while Instant::now() < until && !session_members(sessions, uid).is_empty() {
        tokio::time::sleep(POLL).await;
    }
    let until = Instant::now() + KILL_WAIT;
    while signal_sessions(sessions, uid, Signal::SIGKILL) > 0 && Instant::now() < until {
        tokio::time::sleep(POLL).await;
    }
    found
}

/// [`stop_sessions`] without a grace period, blocking: for a job that cannot be re-attached
/// at start-up, before the daemon serves.
pub fn kill_sessions_now(sessions: &[i32], uid: u32) -> usize {
    let found = signal_sessions(sessions, uid, Signal::SIGKILL);
    let until = Instant::now() + KILL_WAIT;
    while found > 0 && signal_sessions(sessions, uid, Signal::SIGKILL) > 0 && Instant::now() < until
    {
        std::thread::sleep(POLL);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_read_after_the_command_name() {
        let s = parse_stat("42 (sh) S 1 42 40 0 -1").unwrap();
        assert_eq!((s.state, s.pgrp, s.session), ('S', 42, 40));
        let s = parse_stat("43 (a) b (c)) Z 42 41 40 0").unwrap();
        assert_eq!((s.state, s.pgrp, s.session), ('Z', 41, 40));
        assert!(s.exited());
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn our_own_group_has_us_unless_we_lead_it() {
        let me = std::process::id() as i32;
        let group = nix::unistd::getpgrp().as_raw();
        assert_eq!(group_members(&[group]).contains(&me), me != group);
        let session = stat(me).unwrap().session;
        let uid = nix::unistd::getuid().as_raw();
        assert!(session_members(&[session], uid).contains(&me));
        assert!(!session_members(&[session], uid.wrapping_add(1)).contains(&me));
    }

    #[test]
    fn a_stop_ends_every_process_of_the_sessions() {
        use std::os::unix::process::CommandExt;
        // A session of its own with a child that ignores SIGTERM: the grace period ends
        // with SIGKILL.
        let mut leader = std::process::Command::new("/bin/sh");
        leader.arg("-c").arg("trap '' TERM; sleep 30 & wait");
        // SAFETY: setsid is async-signal-safe and the closure touches no shared state.
        unsafe {
            leader.pre_exec(|| {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                Ok(())
            });
        }
        let mut child = leader.spawn().unwrap();
        let sid = child.id() as i32;
        let uid = nix::unistd::getuid().as_raw();
        let until = Instant::now() + Duration::from_secs(5);
        while session_members(&[sid], uid).len() < 2 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(session_members(&[sid], uid).len(), 2);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let found = rt.block_on(stop_sessions(&[sid], uid, Duration::from_millis(200)));
        assert_eq!(found, 2);
        let _ = child.wait();
        assert!(session_members(&[sid], uid).is_empty());
    }
}
