//! `batchd agent`: batchd's end of the one ssh session it holds to each host of a pool of
//! hosts. It starts the jobs batchd sends (each under its own supervisor, `batchd supervise`,
//! detached from the session as on batchd's own machine), passes cancels, limits and signals
//! to them, and reports each job's end. It keeps no state of its own: the jobs' directories
//! under the spool are the state, so that an agent started after an ssh drop or a restart of
//! batchd finds every job the last one started, and a job never depends on the agent (or the
//! ssh session) being alive. It ends when batchd closes the session.
//!
//! The protocol is one JSON object per line each way ([`ToAgent`], [`FromAgent`]).

use std::collections::BTreeMap;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use batch_proto::SignalScope;
use serde::{Deserialize, Serialize};

use crate::launch::{files, read_json, read_pid, JobPids, Outcome, Status};
use crate::sync::lock;

/// How often the agent looks at its jobs.
const POLL: Duration = Duration::from_millis(20);

/// An agent that has heard nothing from batchd this long ends: its session is gone without
/// its input closing (a network drop, which sshd may notice only much later), and a new
/// agent serves the host. batchd pings every `health_interval_ms` (at most 60 s).
pub const QUIET_EXIT: Duration = Duration::from_secs(180);

/// One run of a job: a requeued job runs again with its id, in a directory of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RunId {
    /// The job.
    pub job: u64,
    /// Its run (the record's `restarts`).
    pub run: u32,
}

impl RunId {
    /// The run's directory name under the host's spool (`12.0`).
    pub fn dir_name(self) -> String {
        format!("{}.{}", self.job, self.run)
    }

    fn parse(name: &str) -> Option<RunId> {
        let (j, r) = name.split_once('.')?;
        Some(RunId {
            job: j.parse().ok()?,
            run: r.parse().ok()?,
        })
    }
}

/// What batchd asks of a running job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobOp {
    /// Stop it (SIGTERM to its supervisor, which stops the job with the grace period).
    Cancel,
    /// Its new time limit, ms since the epoch.
    Limit {
        /// The deadline.
        deadline: u64,
    },
    /// A signal (`ecancel -s`).
    Signal {
        /// The signal number.
        signal: i32,
        /// Steps, batch shell or all.
        scope: SignalScope,
    },
    /// Kill its supervisor and processes at once and remove its directory: a run batchd has
    /// already recorded as ended (its host was down meanwhile).
    Kill,
    /// Remove its directory: batchd has stored its end.
    Reap,
    /// Rewrite files of its directory (an evolving job's node and step files).
    Files {
        /// Name and content of each.
        files: Vec<(String, String)>,
    },
}

/// batchd to the agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToAgent {
    /// Start a run: write its files in its directory, then start its supervisor.
    Start {
        /// The run.
        id: RunId,
        /// Name and content of each file (`launch.json`, `script`, `nodes`, …).
        files: Vec<(String, String)>,
    },
    /// Act on a run.
    Job {
        /// The run.
        id: RunId,
        /// What to do.
        op: JobOp,
    },
    /// Are you there? (answered with the same number).
    Ping(u64),
    /// Bytes for a relayed connection's client.
    Data {
        /// The connection.
        conn: u64,
        /// The bytes, in hexadecimal.
        data: String,
    },
    /// batchd closed a relayed connection.
    Close {
        /// The connection.
        conn: u64,
    },
    /// Run a part of a step here (`erun`'s tasks of this host, `StepPartRequest`), as `uid`.
    Part {
        /// batchd's number for it.
        key: u64,
        /// The user's uid.
        uid: u32,
        /// The user's gid.
        gid: u32,
        /// The program (`erun`).
        program: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its whole environment.
        env: Vec<(String, String)>,
        /// Its working directory.
        cwd: String,
    },
    /// Signal a part.
    PartSignal {
        /// The part.
        key: u64,
        /// The signal number.
        signal: i32,
    },
}

/// The agent to batchd.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FromAgent {
    /// The first line: the host's name as it calls itself, and every run whose directory is
    /// in the spool (running or ended, not yet reaped).
    Hello {
        /// `gethostname()`.
        host: String,
        /// The runs found.
        runs: Vec<RunId>,
    },
    /// A run's supervisor is started.
    Started {
        /// The run.
        id: RunId,
    },
    /// A run ended: its supervisor's status, or `None` when it left none.
    Ended {
        /// The run.
        id: RunId,
        /// What the supervisor recorded.
        status: Option<Status>,
    },
    /// A request about a run failed.
    Failed {
        /// The run.
        id: RunId,
        /// Why.
        error: String,
        /// It was a start: the run did not start.
        start: bool,
    },
    /// The answer to [`ToAgent::Ping`].
    Pong(u64),
    /// A tool on the host connected to the host's batchd socket ([`SOCKET`]): the peer as the
    /// kernel gives it, and the job whose session it runs in, when it runs in one.
    Open {
        /// The connection.
        conn: u64,
        /// The peer's uid.
        uid: u32,
        /// The peer's gid.
        gid: u32,
        /// The peer's pid and start time (clock ticks since the boot), on the host.
        pid: Option<(i32, u64)>,
        /// The job (and its run) whose processes the peer is one of.
        job: Option<RunId>,
    },
    /// Bytes from a relayed connection's client.
    Data {
        /// The connection.
        conn: u64,
        /// The bytes, in hexadecimal.
        data: String,
    },
    /// The client closed a relayed connection.
    Close {
        /// The connection.
        conn: u64,
    },
    /// Output of a part.
    PartOutput {
        /// The part.
        key: u64,
        /// 1 or 2.
        fd: u8,
        /// The bytes, in hexadecimal.
        data: String,
    },
    /// A part ended (or could not start: status 1 and its reason as output).
    PartEnd {
        /// The part.
        key: u64,
        /// Its exit status (128 + a signal that ended it).
        status: i32,
    },
}

/// The socket, in the host's directory under the spool, through which the tools of the jobs on
/// the host (`erun`, `erelease`, `esubmit`, ...) reach batchd: the agent relays each
/// connection over its session, with the peer's credentials as the host's kernel gives them.
pub const SOCKET: &str = "batchd.sock";

pub use batch_proto::jobstep::{hex, unhex};

/// A run the agent follows.
struct Run {
    dir: PathBuf,
    /// Its supervisor, when this agent started it.
    child: Option<Child>,
    /// Its end was reported.
    reported: bool,
}

struct Agent {
    jobs_dir: PathBuf,
    program: PathBuf,
    runs: Mutex<BTreeMap<RunId, Run>>,
    out: Mutex<std::io::Stdout>,
    /// When batchd last said something.
    heard: Mutex<std::time::Instant>,
    /// The parts running here, by key: their pids.
    parts: Mutex<std::collections::HashMap<u64, i32>>,
    /// The relayed connections' writers (a thread each, so that a client slow to read holds
    /// up nobody else), by number.
    conns: Mutex<std::collections::HashMap<u64, std::sync::mpsc::Sender<Option<Vec<u8>>>>>,
}

impl Agent {
    fn say(&self, msg: &FromAgent) {
        let Ok(mut line) = serde_json::to_string(msg) else {
            return;
        };
        line.push('\n');
        let mut out = lock(&self.out);
        // batchd gone: the agent ends when it reads the end of its input.
        let _ = out.write_all(line.as_bytes()).and_then(|()| out.flush());
    }

    fn start(&self, id: RunId, files: Vec<(String, String)>) -> Result<(), String> {
        let dir = self.jobs_dir.join(id.dir_name());
        if dir.exists() {
            return Err(format!("{} exists already", dir.display()));
        }
        crate::state::private_dir(&dir)
            .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        let spawned = write_files(&dir, &files).and_then(|()| {
            std::process::Command::new(&self.program)
                .arg("supervise")
                .arg(&dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(crate::jobctl::supervisor_log(&dir))
                .spawn()
                .map_err(|e| {
                    format!(
                        "cannot start the supervisor {}: {e}",
                        self.program.display()
                    )
                })
        });
        let child = match spawned {
            Ok(c) => c,
            Err(e) => {
                // Nothing ran: the run leaves nothing behind.
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        lock(&self.runs).insert(
            id,
            Run {
                dir,
                child: Some(child),
                reported: false,
            },
        );
        Ok(())
    }

    fn job(&self, id: RunId, op: JobOp) -> Result<(), String> {
        let dir = lock(&self.runs)
            .get(&id)
            .map(|r| r.dir.clone())
            .ok_or_else(|| format!("no run {} on this host", id.dir_name()))?;
        match op {
            JobOp::Cancel => crate::jobctl::cancel_in(&dir, id.job),
            JobOp::Limit { deadline } => crate::jobctl::set_deadline_in(&dir, id.job, deadline),
            JobOp::Signal { signal, scope } => {
                crate::jobctl::signal_in(&dir, id.job, signal, scope)
            }
            JobOp::Files { files } => write_files(&dir, &files),
            JobOp::Kill => {
                let uid = read_json::<crate::launch::Launch>(&dir.join(files::LAUNCH))
                    .ok()
                    .flatten()
                    .map(|l| l.uid);
                if let Some(uid) = uid {
                    crate::jobctl::kill_lost(id.job, &dir, uid);
                }
                self.reap(id)
            }
            JobOp::Reap => self.reap(id),
        }
    }

    fn reap(&self, id: RunId) -> Result<(), String> {
        let run = lock(&self.runs).remove(&id);
        if let Some(mut run) = run {
            if let Some(mut c) = run.child.take() {
                // Waited for, even if it is still going (just killed): no zombie is left.
                if matches!(c.try_wait(), Ok(None)) {
                    std::thread::spawn(move || {
                        let _ = c.wait();
                    });
                }
            }
            std::fs::remove_dir_all(&run.dir)
                .map_err(|e| format!("cannot remove {}: {e}", run.dir.display()))?;
        }
        Ok(())
    }

    /// Sends batchd what `from` gives, each chunk as it comes in the message `msg` makes of
    /// its hexadecimal, until its end.
    fn forward(&self, mut from: impl Read, msg: impl Fn(String) -> FromAgent) {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => self.say(&msg(hex(&buf[..n]))),
            }
        }
    }

    /// The run whose processes `pid` is one of: the one whose job's session it is in.
    ///
    /// The supervisor writes a leader into `job.pid` only once its fork has returned, and by
    /// then the job may already be running a tool (a script's first line is often `erun`).
    /// So a session whose leader is still alive and a child of the run's live supervisor is
    /// the run's too: the supervisor forks nothing else that leads a session.
    fn attest(&self, pid: i32) -> Option<RunId> {
        let session = crate::procs::stat(pid)?.session;
        let leader = crate::procs::stat(session).filter(|s| !s.exited());
        let runs = lock(&self.runs);
        runs.iter()
            .find(|(_, r)| {
                let listed = JobPids::read(&r.dir.join(files::JOB_PID))
                    .leaders
                    .iter()
                    .any(|l| {
                        l.pid == session && crate::procs::stat(l.pid).map(|s| s.start) == l.start
                    });
                listed
                    || leader.as_ref().is_some_and(|s| {
                        s.session == session
                            && read_pid(&r.dir.join(files::SUPERVISOR_PID)).is_some_and(|p| {
                                p == s.ppid && crate::jobctl::supervisor_alive(s.ppid, &r.dir)
                            })
                    })
            })
            .map(|(id, _)| *id)
    }

    /// Serves the host's socket: each connection relayed to batchd over the session.
    fn listen(self: Arc<Self>, listener: std::os::unix::net::UnixListener) {
        let mut next = 0u64;
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            next += 1;
            let conn = next;
            let agent = Arc::clone(&self);
            std::thread::spawn(move || agent.relay(conn, stream));
        }
    }

    /// One relayed connection, from the client to batchd (batchd's bytes come back through
    /// [`ToAgent::Data`]).
    fn relay(&self, conn: u64, mut stream: std::os::unix::net::UnixStream) {
        let Ok(cred) =
            nix::sys::socket::getsockopt(&stream, nix::sys::socket::sockopt::PeerCredentials)
        else {
            return;
        };
        let pid = cred.pid();
        let start = crate::procs::stat(pid).map(|s| s.start);
        let Ok(mut writer) = stream.try_clone() else {
            return;
        };
        let (tx, rx) = std::sync::mpsc::channel::<Option<Vec<u8>>>();
        std::thread::spawn(move || {
            while let Ok(Some(bytes)) = rx.recv() {
                if writer.write_all(&bytes).is_err() {
                    break;
                }
            }
            let _ = writer.shutdown(std::net::Shutdown::Both);
        });
        lock(&self.conns).insert(conn, tx);
        self.say(&FromAgent::Open {
            conn,
            uid: cred.uid(),
            gid: cred.gid(),
            pid: start.map(|s| (pid, s)),
            job: self.attest(pid),
        });
        self.forward(&mut stream, |data| FromAgent::Data { conn, data });
        lock(&self.conns).remove(&conn);
        self.say(&FromAgent::Close { conn });
    }

    /// batchd's bytes for connection `conn`, or its end (`None`, or bytes that are not
    /// hexadecimal).
    fn to_client(&self, conn: u64, data: Option<&str>) {
        let mut conns = lock(&self.conns);
        let bytes = data.and_then(unhex);
        let end = bytes.is_none();
        if let Some(tx) = conns.get(&conn) {
            let _ = tx.send(bytes);
        }
        if end {
            conns.remove(&conn);
        }
    }

    /// Starts a part of a step as `uid`/`gid`, its output and end reported as they come.
    #[allow(clippy::too_many_arguments)]
    fn part(
        self: &Arc<Self>,
        key: u64,
        uid: u32,
        gid: u32,
        program: &str,
        args: &[String],
        env: &[(String, String)],
        cwd: &str,
    ) {
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        let spawned = std::process::Command::new(program)
            .args(args)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(cwd)
            .uid(uid)
            .gid(gid)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                let text = format!("cannot start {program} on this host: {e}\n");
                self.say(&FromAgent::PartOutput {
                    key,
                    fd: 2,
                    data: hex(text.as_bytes()),
                });
                self.say(&FromAgent::PartEnd { key, status: 1 });
                return;
            }
        };
        lock(&self.parts).insert(key, child.id() as i32);
        let mut readers = Vec::new();
        for (fd, stream) in [
            (
                1u8,
                child
                    .stdout
                    .take()
                    .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
            ),
            (
                2u8,
                child
                    .stderr
                    .take()
                    .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
            ),
        ] {
            let Some(stream) = stream else { continue };
            let agent = Arc::clone(self);
            readers.push(std::thread::spawn(move || {
                agent.forward(stream, |data| FromAgent::PartOutput { key, fd, data });
            }));
        }
        let agent = Arc::clone(self);
        std::thread::spawn(move || {
            let status = child.wait();
            // Its output first, then its end.
            for r in readers {
                let _ = r.join();
            }
            lock(&agent.parts).remove(&key);
            let status = match status {
                Ok(s) => s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0)),
                Err(_) => 1,
            };
            agent.say(&FromAgent::PartEnd { key, status });
        });
    }

    /// Reports every run that ended since the last look.
    fn watch(&self) {
        let mut ended = Vec::new();
        {
            let mut runs = lock(&self.runs);
            for (id, run) in runs.iter_mut().filter(|(_, r)| !r.reported) {
                if run.dir.join(files::STATUS).exists() {
                    run.reported = true;
                    ended.push((*id, run.dir.clone(), true));
                    continue;
                }
                let gone = match run.child.as_mut() {
                    Some(c) => !matches!(c.try_wait(), Ok(None)),
                    None => !read_pid(&run.dir.join(files::SUPERVISOR_PID))
                        .is_some_and(|p| crate::jobctl::supervisor_alive(p, &run.dir)),
                };
                if gone {
                    run.reported = true;
                    ended.push((*id, run.dir.clone(), false));
                }
            }
        }
        for (id, dir, with_status) in ended {
            let mut status = read_json::<Status>(&dir.join(files::STATUS)).ok().flatten();
            if status.is_none() && !with_status {
                status = stop_leftovers(id.job, &dir);
            }
            self.say(&FromAgent::Ended { id, status });
        }
    }
}

/// Writes `files` into `dir`, each atomically: the script executable by its owner only (the
/// supervisor gives it to the job's user), `launch.json` private, the rest readable (the job
/// reads its node and step files as its user).
fn write_files(dir: &Path, files: &[(String, String)]) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    for (name, text) in files {
        if name.is_empty() || name.contains('/') || name.starts_with('.') {
            return Err(format!("invalid file name `{name}`"));
        }
        let path = dir.join(name);
        crate::launch::write_atomic(&path, text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let mode = match name.as_str() {
            files::SCRIPT => 0o700,
            files::LAUNCH => crate::state::PRIVATE_FILE,
            _ => 0o644,
        };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
            .map_err(|e| format!("cannot set the mode of {}: {e}", path.display()))?;
    }
    Ok(())
}

/// What is left of a run whose supervisor is gone without a status is stopped, as batchd does
/// on its own machine; the status to report when there was something to stop.
fn stop_leftovers(job: u64, dir: &Path) -> Option<Status> {
    let uid = read_json::<crate::launch::Launch>(&dir.join(files::LAUNCH))
        .ok()
        .flatten()?
        .uid;
    let pids = JobPids::read(&dir.join(files::JOB_PID));
    if pids.leaders.is_empty() {
        return None;
    }
    let stopped = crate::procs::stop_job(&pids, uid, job, Duration::from_secs(5));
    (stopped > 0).then(|| Status {
        outcome: Outcome::Lost,
        exit_code: 0,
        signal: nix::sys::signal::Signal::SIGKILL as i32,
        end_ms: crate::launch::now_ms(),
        detail: Some(format!(
            "the job's supervisor ended without recording an exit status; its host stopped the \
             {stopped} process(es) left of the job"
        )),
        usage: None,
    })
}

/// Runs the agent for host `node` over the spool `spool`, reading batchd's requests on stdin
/// until it closes; returns the process exit code.
pub fn run(spool: &Path, node: &str) -> i32 {
    if node.is_empty() || node.contains('/') || node.starts_with('.') {
        eprintln!("batchd agent: invalid node name `{node}`");
        return 2;
    }
    let jobs_dir = spool.join(node).join("jobs");
    if let Err(e) = crate::state::create_private_dir(&jobs_dir) {
        eprintln!("batchd agent: cannot make {}: {e}", jobs_dir.display());
        return 1;
    }
    let program = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("batchd agent: cannot find its own program: {e}");
            return 1;
        }
    };
    let mut runs = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(&jobs_dir) {
        for e in entries.flatten() {
            if let Some(id) = e.file_name().to_str().and_then(RunId::parse) {
                runs.insert(
                    id,
                    Run {
                        dir: e.path(),
                        child: None,
                        reported: false,
                    },
                );
            }
        }
    }
    let agent = Arc::new(Agent {
        jobs_dir,
        program,
        out: Mutex::new(std::io::stdout()),
        runs: Mutex::new(BTreeMap::new()),
        heard: Mutex::new(std::time::Instant::now()),
        conns: Mutex::new(std::collections::HashMap::new()),
        parts: Mutex::new(std::collections::HashMap::new()),
    });
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_default();
    agent.say(&FromAgent::Hello {
        host,
        runs: runs.keys().copied().collect(),
    });
    *lock(&agent.runs) = runs;
    // The host's batchd socket, for the tools of its jobs (anyone may connect, as to batchd's
    // own; who connects is told to batchd with each connection).
    let socket = spool.join(node).join(SOCKET);
    let _ = std::fs::remove_file(&socket);
    match std::os::unix::net::UnixListener::bind(&socket) {
        Ok(listener) => {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666));
            let agent = Arc::clone(&agent);
            std::thread::spawn(move || agent.listen(listener));
        }
        Err(e) => eprintln!("batchd agent: cannot listen on {}: {e}", socket.display()),
    }
    {
        let agent = Arc::clone(&agent);
        std::thread::spawn(move || loop {
            agent.watch();
            if lock(&agent.heard).elapsed() > QUIET_EXIT {
                eprintln!("batchd agent: nothing from batchd for {QUIET_EXIT:?}; ending");
                std::process::exit(0);
            }
            std::thread::sleep(POLL);
        });
    }
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        *lock(&agent.heard) = std::time::Instant::now();
        let req: ToAgent = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("batchd agent: unreadable request: {e}");
                continue;
            }
        };
        match req {
            ToAgent::Ping(n) => agent.say(&FromAgent::Pong(n)),
            ToAgent::Data { conn, data } => agent.to_client(conn, Some(&data)),
            ToAgent::Part {
                key,
                uid,
                gid,
                program,
                args,
                env,
                cwd,
            } => agent.part(key, uid, gid, &program, &args, &env, &cwd),
            ToAgent::PartSignal { key, signal } => {
                let pid = lock(&agent.parts).get(&key).copied();
                if let (Some(pid), Ok(sig)) = (pid, nix::sys::signal::Signal::try_from(signal)) {
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
                }
            }
            ToAgent::Close { conn } => agent.to_client(conn, None),
            ToAgent::Start { id, files } => match agent.start(id, files) {
                Ok(()) => agent.say(&FromAgent::Started { id }),
                Err(error) => agent.say(&FromAgent::Failed {
                    id,
                    error,
                    start: true,
                }),
            },
            ToAgent::Job { id, op } => {
                if let Err(error) = agent.job(id, op) {
                    agent.say(&FromAgent::Failed {
                        id,
                        error,
                        start: false,
                    });
                }
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relayed_bytes_round_trip_through_hexadecimal() {
        let bytes = [0u8, 1, 0x7f, 0x80, 0xff];
        assert_eq!(hex(&bytes), "00017f80ff");
        assert_eq!(unhex("00017f80ff").unwrap(), bytes);
        assert_eq!(unhex("0"), None);
        assert_eq!(unhex("zz"), None);
    }

    /// A job's first process may connect before its supervisor has written `job.pid` (the
    /// fork has not returned yet there): its session's leader, a child of the run's live
    /// supervisor, is enough. A process of no run is still no run's.
    #[test]
    fn a_tool_run_before_the_job_pid_file_is_written_is_the_jobs() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("7.0");
        std::fs::create_dir(&dir).expect("run dir");
        // A stand-in supervisor (its command line names `supervise`, as batchd's does) whose
        // child leads a session of its own, as a job's process does; no job.pid is written.
        let mut sup = std::process::Command::new("sh")
            .args([
                "-c",
                r#"setsid sh -c 'echo $$ > "$0/leader.tmp"; mv "$0/leader.tmp" "$0/leader"; exec sleep 30' "$1" & wait"#,
                "supervise",
            ])
            .arg(&dir)
            .spawn()
            .expect("sh runs");
        std::fs::write(dir.join(files::SUPERVISOR_PID), sup.id().to_string()).expect("pid file");
        let leader_file = dir.join("leader");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !leader_file.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let leader: i32 = read_pid(&leader_file).expect("the job's process started");
        let agent = Agent {
            jobs_dir: tmp.path().to_path_buf(),
            program: PathBuf::from("batchd"),
            runs: Mutex::new(BTreeMap::from([(
                RunId { job: 7, run: 0 },
                Run {
                    dir: dir.clone(),
                    child: None,
                    reported: false,
                },
            )])),
            out: Mutex::new(std::io::stdout()),
            heard: Mutex::new(std::time::Instant::now()),
            parts: Mutex::new(std::collections::HashMap::new()),
            conns: Mutex::new(std::collections::HashMap::new()),
        };
        let found = agent.attest(leader);
        let stranger = agent.attest(std::process::id() as i32);
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(leader),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = sup.wait();
        assert_eq!(found, Some(RunId { job: 7, run: 0 }));
        assert_eq!(stranger, None);
    }

    #[test]
    fn runs_are_named_and_found_by_job_and_run() {
        let id = RunId { job: 12, run: 3 };
        assert_eq!(id.dir_name(), "12.3");
        assert_eq!(RunId::parse("12.3"), Some(id));
        assert_eq!(RunId::parse("12"), None);
        assert_eq!(RunId::parse("x.1"), None);
    }

    #[test]
    fn the_protocol_is_one_json_object_a_line() {
        let m = ToAgent::Job {
            id: RunId { job: 1, run: 0 },
            op: JobOp::Signal {
                signal: 10,
                scope: SignalScope::Batch,
            },
        };
        let text = serde_json::to_string(&m).unwrap();
        assert!(!text.contains('\n'));
        assert_eq!(serde_json::from_str::<ToAgent>(&text).unwrap(), m);
    }
}
