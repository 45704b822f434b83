//! The hosts of the pools of hosts and batchd's link to each: the ssh command that reaches it
//! and, while its agent answers, the channel to it. The session itself is run by
//! [`crate::hosts`].

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};

use crate::agent::{JobOp, RunId, ToAgent};
use crate::config::{Config, SshConfig};
use crate::launch::Status;
use crate::sync::lock;

/// How a link stands.
#[derive(Clone, Debug, Default)]
pub struct LinkState {
    /// The agent answers.
    pub up: bool,
    /// When `up` last changed, ms since the epoch (batchd's start for a link never up).
    pub since: u64,
    /// What ssh said last when the link failed.
    pub error: String,
    /// The last time anything came from the agent, ms since the epoch.
    pub heard: u64,
}

/// A connection a tool on a host made to the host's batchd socket, relayed by the host's
/// agent: batchd's end of it, and the peer as the host's kernel and agent give it.
#[derive(Debug)]
pub struct Relayed {
    /// batchd's end (the other end is pumped to and from the agent).
    pub stream: std::os::unix::net::UnixStream,
    /// The host.
    pub host: String,
    /// The peer's uid and gid.
    pub uid: u32,
    /// The peer's gid.
    pub gid: u32,
    /// The peer's pid and start time, on the host.
    pub pid: Option<(i32, u64)>,
    /// The job run whose processes the peer is one of, as the agent found it.
    pub job: Option<RunId>,
}

/// What comes of a step's part on a host, for the `erun` that asked for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartEvent {
    /// Output: 1 or 2, and the bytes in hexadecimal.
    Output(u8, String),
    /// Its end, with its exit status.
    End(i32),
}

/// A step's part running on a host.
#[derive(Debug)]
pub struct Part {
    /// Its job.
    pub job: u64,
    /// Its step.
    pub step: u32,
    /// Where its output and end go.
    pub tx: mpsc::UnboundedSender<PartEvent>,
}

/// Why a start did not happen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartError {
    /// The agent refused it (it could not write the files or start the supervisor).
    Refused(String),
    /// No answer came (the session was not open, or ended): the run may or may not have
    /// started; the agent's inventory tells when the host answers again.
    Unanswered(String),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Refused(e) | StartError::Unanswered(e) => f.write_str(e),
        }
    }
}

/// batchd's link to one host.
#[derive(Debug)]
pub struct HostLink {
    /// The host (its node's name).
    pub host: String,
    /// Its pool.
    pub pool: String,
    /// Its pool's ssh settings.
    pub ssh: SshConfig,
    /// The ssh program and its arguments up to the remote command.
    argv: Vec<String>,
    /// The remote command (`batchd agent …`), one shell word each.
    remote: Vec<String>,
    tx: Mutex<Option<mpsc::UnboundedSender<ToAgent>>>,
    state: Mutex<LinkState>,
    /// Starts sent and not answered yet.
    starts: Mutex<HashMap<RunId, oneshot::Sender<Result<(), String>>>>,
    /// Jobs being started through this link (their run is not in the agent's inventory yet).
    launching: Mutex<HashSet<u64>>,
    /// An administrator's DRAIN (reason and user) the health check's DOWN went over: the
    /// node goes back to it, not into service, when the host answers again.
    pub drained: Mutex<Option<(String, String)>>,
    /// The step parts running on the host, by key.
    pub parts: Mutex<HashMap<u64, Part>>,
    /// The relayed connections: what the agent sends for each goes to its writer (`None`:
    /// the client closed it), by number.
    pub conns: Mutex<HashMap<u64, mpsc::UnboundedSender<Option<Vec<u8>>>>>,
}

/// `word` quoted for a POSIX shell (ssh hands the remote command to the login shell).
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
    {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

impl HostLink {
    fn new(host: &str, pool: &str, ssh: &SshConfig, control_dir: &Path, program: &Path) -> Self {
        let mut argv = vec![
            "ssh".to_string(),
            "-T".into(),
            "-o".into(),
            "BatchMode=yes".into(),
            // One connection per host, shared by every session batchd opens to it.
            "-o".into(),
            "ControlMaster=auto".into(),
            "-o".into(),
            format!("ControlPath={}/%C", control_dir.display()),
            "-o".into(),
            "ControlPersist=600".into(),
            "-o".into(),
            format!(
                "ConnectTimeout={}",
                ssh.down_after().div_ceil(1000).clamp(1, 60)
            ),
            "-o".into(),
            format!(
                "ServerAliveInterval={}",
                ssh.health_interval().div_ceil(1000).clamp(1, 60)
            ),
            "-o".into(),
            "ServerAliveCountMax=3".into(),
        ];
        if let Some(u) = &ssh.user {
            argv.extend(["-l".into(), u.clone()]);
        }
        if let Some(i) = &ssh.identity_file {
            argv.extend(["-i".into(), i.display().to_string()]);
        }
        if let Some(p) = ssh.port {
            argv.extend(["-p".into(), p.to_string()]);
        }
        argv.extend(ssh.options.iter().cloned());
        argv.push("--".into());
        argv.push(host.to_string());
        let remote = vec![
            ssh.batchd
                .clone()
                .unwrap_or_else(|| program.to_path_buf())
                .display()
                .to_string(),
            "agent".into(),
            "--spool".into(),
            ssh.spool().display().to_string(),
            "--node".into(),
            host.to_string(),
        ];
        HostLink {
            host: host.to_string(),
            pool: pool.to_string(),
            ssh: ssh.clone(),
            argv,
            remote,
            tx: Mutex::new(None),
            state: Mutex::new(LinkState {
                since: crate::launch::now_ms(),
                ..Default::default()
            }),
            starts: Mutex::new(HashMap::new()),
            launching: Mutex::new(HashSet::new()),
            drained: Mutex::new(None),
            conns: Mutex::new(HashMap::new()),
            parts: Mutex::new(HashMap::new()),
        }
    }

    /// The command that opens the agent's session: ssh's arguments, then the remote command
    /// as one shell-quoted string.
    pub fn command(&self) -> (String, Vec<String>) {
        let mut args: Vec<String> = self.argv[1..].to_vec();
        args.push(
            self.remote
                .iter()
                .map(|w| shell_quote(w))
                .collect::<Vec<_>>()
                .join(" "),
        );
        (self.argv[0].clone(), args)
    }

    /// The host's batchd socket, which its agent relays ([`crate::agent::SOCKET`]).
    pub fn socket(&self) -> PathBuf {
        self.ssh.spool().join(&self.host).join(crate::agent::SOCKET)
    }

    /// Run `run`'s directory on the host.
    pub fn run_dir(&self, run: RunId) -> PathBuf {
        self.ssh
            .spool()
            .join(&self.host)
            .join("jobs")
            .join(run.dir_name())
    }

    /// How the link stands.
    pub fn state(&self) -> LinkState {
        lock(&self.state).clone()
    }

    /// Changes how the link stands with `f`.
    pub fn update(&self, f: impl FnOnce(&mut LinkState)) {
        f(&mut lock(&self.state));
    }

    /// The agent's session is open (`Some`) or closed.
    pub fn set_channel(&self, tx: Option<mpsc::UnboundedSender<ToAgent>>) {
        let closed = tx.is_none();
        *lock(&self.tx) = tx;
        if closed {
            // Nothing will answer the starts under way.
            for (_, reply) in lock(&self.starts).drain() {
                let _ = reply.send(Err(self.ended()));
            }
            // The relayed connections went with the session, and the parts' ends with them.
            for (_, tx) in lock(&self.conns).drain() {
                let _ = tx.send(None);
            }
            for (_, part) in lock(&self.parts).drain() {
                let _ = part.tx.send(PartEvent::End(255));
            }
        }
    }

    /// Sends `msg` to the agent.
    pub fn send(&self, msg: ToAgent) -> Result<(), String> {
        match lock(&self.tx).as_ref() {
            Some(tx) => tx
                .send(msg)
                .map_err(|_| format!("the ssh session to {} ended", self.host)),
            None => Err(format!(
                "host {} does not answer ({})",
                self.host,
                self.state().error
            )),
        }
    }

    /// Sends `op` for run `id`.
    pub fn send_job(&self, id: RunId, op: JobOp) -> Result<(), String> {
        self.send(ToAgent::Job { id, op })
    }

    /// Sends a start of run `id` and waits for the agent's answer.
    pub async fn start(&self, id: RunId, files: Vec<(String, String)>) -> Result<(), StartError> {
        let (reply, answer) = oneshot::channel();
        lock(&self.starts).insert(id, reply);
        if let Err(e) = self.send(ToAgent::Start { id, files }) {
            lock(&self.starts).remove(&id);
            return Err(StartError::Unanswered(e));
        }
        match answer.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) if e == self.ended() => Err(StartError::Unanswered(e)),
            Ok(Err(e)) => Err(StartError::Refused(e)),
            Err(_) => Err(StartError::Unanswered(self.ended())),
        }
    }

    fn ended(&self) -> String {
        format!("the ssh session to {} ended", self.host)
    }

    /// The agent answered the start of `id`.
    pub fn answer_start(&self, id: RunId, result: Result<(), String>) {
        if let Some(reply) = lock(&self.starts).remove(&id) {
            let _ = reply.send(result);
        }
    }

    /// Marks job `id` as being started (`true`) or not through this link.
    pub fn set_launching(&self, id: u64, on: bool) {
        if on {
            lock(&self.launching).insert(id);
        } else {
            lock(&self.launching).remove(&id);
        }
    }

    /// Whether job `id` is being started through this link.
    pub fn is_launching(&self, id: u64) -> bool {
        lock(&self.launching).contains(&id)
    }
}

/// Every host of the pools of hosts, by name.
#[derive(Debug, Default)]
pub struct Links {
    by_host: HashMap<String, Arc<HostLink>>,
    pools: HashSet<String>,
    /// The parts of co-allocated jobs that ended, by run: each part's status once reported.
    ends: Mutex<HashMap<RunId, Vec<Option<Option<Status>>>>>,
    /// The last key given to a step's part.
    part_keys: std::sync::atomic::AtomicU64,
}

impl Links {
    /// The links of `config`'s pools of hosts; control sockets under `control_dir`; `program`
    /// is the batchd the hosts run when their pool names none.
    pub fn new(config: &Config, control_dir: &Path, program: &Path) -> Links {
        let mut links = Links::default();
        for p in &config.pools {
            let Some(hosts) = p.host_names() else {
                continue;
            };
            links.pools.insert(p.name.clone());
            let ssh = p.ssh.clone().unwrap_or_default();
            for h in hosts {
                let link = HostLink::new(&h, &p.name, &ssh, control_dir, program);
                links.by_host.insert(h, Arc::new(link));
            }
        }
        links
    }

    /// Whether pool `pool` is a pool of hosts.
    pub fn is_remote(&self, pool: &str) -> bool {
        self.pools.contains(pool)
    }

    /// The link to `host`.
    pub fn of_host(&self, host: &str) -> Option<&Arc<HostLink>> {
        self.by_host.get(host)
    }

    /// Every link.
    pub fn all(&self) -> impl Iterator<Item = &Arc<HostLink>> {
        self.by_host.values()
    }

    /// Part `k` of `parts` of run `run` ended with `status`; every part's status, in part
    /// order, once the last one has (and then forgotten).
    pub fn part_ended(
        &self,
        run: RunId,
        k: usize,
        parts: usize,
        status: Option<Status>,
    ) -> Option<Vec<Option<Status>>> {
        let mut ends = lock(&self.ends);
        let seen = ends.entry(run).or_insert_with(|| vec![None; parts]);
        if seen.len() != parts || k >= parts {
            *seen = vec![None; parts];
        }
        seen[k] = Some(status);
        if seen.iter().all(Option::is_some) {
            ends.remove(&run).map(|v| v.into_iter().flatten().collect())
        } else {
            None
        }
    }

    /// A key for a new step part.
    pub fn part_key(&self) -> u64 {
        self.part_keys
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .wrapping_add(1)
    }

    /// Sends `signal` to the step parts of job `job` (of its step `step`, or all) on every
    /// host.
    pub fn signal_parts(&self, job: u64, step: Option<u32>, signal: i32) {
        for link in self.by_host.values() {
            let keys: Vec<u64> = lock(&link.parts)
                .iter()
                .filter(|(_, p)| p.job == job && step.is_none_or(|s| s == p.step))
                .map(|(k, _)| *k)
                .collect();
            for key in keys {
                let _ = link.send(ToAgent::PartSignal { key, signal });
            }
        }
    }

    /// Forgets the parts of job `job` seen ended: it ended some other way (a cancel that
    /// could not reach a part, a part's directory gone).
    pub fn forget_parts(&self, job: u64) {
        lock(&self.ends).retain(|r, _| r.job != job);
    }
}

/// The directory of ssh's control sockets under the state directory.
pub fn control_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("ssh")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_words_are_quoted_for_the_login_shell() {
        assert_eq!(shell_quote("/usr/bin/batchd"), "/usr/bin/batchd");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn the_command_reaches_the_agent_through_a_shared_connection() {
        let ssh = SshConfig {
            user: Some("root".into()),
            port: Some(2222),
            options: vec!["-F".into(), "/etc/esched/ssh config".into()],
            spool: Some("/var/spool/my esched".into()),
            ..Default::default()
        };
        let l = HostLink::new(
            "node1",
            "hosts",
            &ssh,
            Path::new("/s/ssh"),
            Path::new("/opt/batchd"),
        );
        let (prog, args) = l.command();
        assert_eq!(prog, "ssh");
        let joined = args.join(" ");
        assert!(joined.contains("-o ControlMaster=auto -o ControlPath=/s/ssh/%C"));
        assert!(joined.contains("-l root -p 2222 -F /etc/esched/ssh config -- node1"));
        assert_eq!(
            args.last().unwrap(),
            "/opt/batchd agent --spool '/var/spool/my esched' --node node1"
        );
    }
}
