//! A temporary cluster: config, state directory and socket in a temp dir, one real batchd,
//! and helpers that run the tools against it. Every wait is a bounded poll.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use batch_proto::{Client, JobInfo, JobState};

/// How long any wait may last before the test fails.
pub const TIMEOUT: Duration = Duration::from_secs(20);
/// Poll period of every wait.
pub const POLL: Duration = Duration::from_millis(20);

/// `target/debug` (or whichever profile directory holds the tool binaries).
pub fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_esubmit"))
        .parent()
        .expect("a binary lives in a directory")
        .to_path_buf()
}

/// Builds batchd and the policies the tests use, once per test process.
pub fn ensure_built() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            // The policies the tests name, beside batchd (`plugin_dir`).
            esched_test_support::cargo_build(
                &bin_dir(),
                &[
                    "-p",
                    "batchd",
                    "--bin",
                    "batchd",
                    "-p",
                    "esched-cbf",
                    "-p",
                    "esched-easy",
                    "-p",
                    "esched-bicriteria",
                ],
            )?;
            let exe = bin_dir().join("batchd");
            if exe.exists() {
                Ok(exe)
            } else {
                Err(format!("{} missing after cargo build", exe.display()))
            }
        })
        .clone()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A running test cluster.
pub struct Cluster {
    /// Temp dir holding everything; removed on drop.
    pub dir: tempfile::TempDir,
    /// The socket.
    pub socket: PathBuf,
    /// The config file batchd reads.
    pub config: PathBuf,
    /// Where jobs are submitted from (their default output directory).
    pub work: PathBuf,
    log: PathBuf,
    daemon: Option<Child>,
    /// The uid and gid batchd and the tools run as, when not the test's own.
    user: Option<(u32, u32)>,
    /// Variables batchd gets besides the test's environment.
    daemon_env: Vec<(String, String)>,
}

/// The config text of a cluster of `nodes` nodes in pool `debug` running `policy`.
pub fn config_text(dir: &Path, nodes: u32, policy: &str) -> String {
    format!(
        "socket = {:?}\nstate_dir = {:?}\nplugin_dir = {:?}\nrepolicy_interval_ms = 10\n\
         grace_period_ms = 500\nsync = \"normal\"\n\n[[pool]]\nname = \"debug\"\nnodes = {nodes}\n\n\
         [policy]\nname = {policy:?}\n",
        dir.join("batchd.sock"),
        dir.join("state"),
        plugin_dir(),
    )
}

/// Where the policy libraries `ensure_built` built are. Under the `test` profile cargo leaves
/// a cdylib in `deps/` only (it is not copied up next to the binaries), and a copy next to them
/// may be a stale one from an earlier plain `cargo build`: `deps/` is always the latest.
pub fn plugin_dir() -> PathBuf {
    let deps = bin_dir().join("deps");
    if deps.join("libesched_bicriteria.so").exists() {
        deps
    } else {
        bin_dir()
    }
}

impl Cluster {
    /// A cluster of `nodes` nodes under `policy`, its daemon up and answering.
    pub fn start(nodes: u32, policy: &str) -> Cluster {
        Cluster::start_with(nodes, policy, "")
    }

    /// [`Cluster::start`] with `extra` appended to the config (after `[policy]`'s name).
    pub fn start_with(nodes: u32, policy: &str, extra: &str) -> Cluster {
        Cluster::start_configured(nodes, policy, "", extra)
    }

    /// [`Cluster::start_with`] with top-level keys `top` too (before the first table).
    pub fn start_configured(nodes: u32, policy: &str, top: &str, extra: &str) -> Cluster {
        Cluster::start_from(|dir| format!("{top}\n{}{extra}", config_text(dir, nodes, policy)))
    }

    /// A cluster whose whole config is `config(dir)`, `dir` its temporary directory (the
    /// socket `dir/batchd.sock`, the state `dir/state`, as [`config_text`] has them).
    pub fn start_from(config: impl FnOnce(&Path) -> String) -> Cluster {
        Cluster::start_as(None, Vec::new(), config)
    }

    /// [`Cluster::start_from`] with batchd and the tools run as `user` (uid and gid; the test
    /// must be root), batchd with `env` besides the test's environment.
    pub fn start_as(
        user: Option<(u32, u32)>,
        env: Vec<(String, String)>,
        config: impl FnOnce(&Path) -> String,
    ) -> Cluster {
        let dir = tempfile::Builder::new()
            .prefix("esched-e2e-")
            .tempdir()
            .expect("temp dir");
        // Another uid (the permission test) must reach the socket and the binaries.
        set_mode(dir.path(), 0o755);
        let work = dir.path().join("work");
        std::fs::create_dir(&work).expect("work dir");
        set_mode(&work, 0o777);
        let path = dir.path().join("batchd.toml");
        std::fs::write(&path, config(dir.path())).expect("config");
        let config = path;
        if let Some((uid, gid)) = user {
            let own = |p: &Path| {
                std::os::unix::fs::chown(p, Some(uid), Some(gid)).expect("chown to the test user")
            };
            own(dir.path());
            own(&work);
            own(&config);
        }
        let mut c = Cluster {
            user,
            daemon_env: env,
            socket: dir.path().join("batchd.sock"),
            log: dir.path().join("batchd.log"),
            config,
            work,
            dir,
            daemon: None,
        };
        c.launch();
        c
    }

    /// Starts batchd on the existing state and waits until it answers.
    pub fn launch(&mut self) {
        let exe = ensure_built();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("log file");
        let mut cmd = Command::new(exe);
        if let Some((uid, gid)) = self.user {
            cmd.uid(uid).gid(gid);
        }
        let child = cmd
            .arg("--config")
            .arg(&self.config)
            .env("RUST_LOG", "info")
            .envs(self.daemon_env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log fd"))
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("spawn batchd");
        self.daemon = Some(child);
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Ok(mut c) = Client::connect(&self.socket) {
                if c.request(&batch_proto::Request::Version(
                    batch_proto::VersionRequest {},
                ))
                .is_ok()
                {
                    return;
                }
            }
            if let Some(status) = self
                .daemon
                .as_mut()
                .and_then(|d| d.try_wait().ok().flatten())
            {
                panic!("batchd exited at start with {status}:\n{}", self.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "batchd did not answer within {TIMEOUT:?}:\n{}",
                self.log_text()
            );
            std::thread::sleep(POLL);
        }
    }

    /// `kill -9` of the daemon (its jobs' supervisors live on).
    pub fn kill9(&mut self) {
        if let Some(mut d) = self.daemon.take() {
            let _ = d.kill();
            let _ = d.wait();
        }
    }

    /// The daemon's process, while it runs.
    pub fn daemon_alive(&mut self) -> bool {
        self.daemon
            .as_mut()
            .is_some_and(|d| matches!(d.try_wait(), Ok(None)))
    }

    /// The daemon's log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Rewrites the config file (for reconfigure).
    pub fn write_config(&self, nodes: u32, policy: &str) {
        std::fs::write(&self.config, config_text(self.dir.path(), nodes, policy)).expect("config");
    }

    /// A command for tool `name`, talking to this cluster, run from the work directory.
    pub fn tool(&self, name: &str) -> Command {
        let mut cmd = Command::new(bin_dir().join(name));
        if let Some((uid, gid)) = self.user {
            cmd.uid(uid).gid(gid);
        }
        cmd.env("ESCHED_SOCKET", &self.socket)
            .env_remove("ESUB_PARTITION")
            .env_remove("ESUB_TIMELIMIT")
            .env_remove("ESUB_JOB_NAME")
            .env_remove("SBATCH_PARTITION")
            .env_remove("SBATCH_TIMELIMIT")
            .env_remove("SBATCH_JOB_NAME")
            .current_dir(&self.work)
            .stdin(Stdio::null());
        cmd
    }

    /// Runs `name args`, returning its output whatever the exit status.
    pub fn run(&self, name: &str, args: &[&str]) -> Output {
        self.tool(name).args(args).output().expect("run tool")
    }

    /// Runs `name args` and returns its stdout, failing the test on a non-zero exit.
    pub fn ok(&self, name: &str, args: &[&str]) -> String {
        let out = self.run(name, args);
        assert!(
            out.status.success(),
            "{name} {args:?} failed ({}): {}\n--- batchd log ---\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            tail(&self.log_text())
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Writes an executable script into the work directory.
    pub fn script(&self, name: &str, body: &str) -> PathBuf {
        let p = self.work.join(name);
        let mut f = std::fs::File::create(&p).expect("script");
        f.write_all(body.as_bytes()).expect("write script");
        set_mode(&p, 0o755);
        p
    }

    /// `esubmit --parsable args`: the new job's id.
    pub fn submit(&self, args: &[&str]) -> u64 {
        let mut all = vec!["--parsable"];
        all.extend_from_slice(args);
        let out = self.ok("esubmit", &all);
        out.trim()
            .parse()
            .unwrap_or_else(|_| panic!("esubmit printed {out:?}"))
    }

    /// `equeue --records` (the daemon's job records) with extra filters.
    pub fn queue(&self, args: &[&str]) -> Vec<JobInfo> {
        let mut all = vec!["--records"];
        all.extend_from_slice(args);
        serde_json::from_str(&self.ok("equeue", &all)).expect("equeue --records is JSON")
    }

    /// The job as equeue (while queued) or eacct (once finished) reports it.
    pub fn job(&self, id: u64) -> Option<JobInfo> {
        let ids = id.to_string();
        let acct: Vec<JobInfo> =
            serde_json::from_str(&self.ok("eacct", &["--records", "-j", &ids]))
                .expect("eacct --records");
        if let Some(j) = acct.into_iter().find(|j| j.id == id) {
            return Some(j);
        }
        // An id the queue does not know is an error to equeue (`Invalid job id specified`).
        let out = self.run("equeue", &["--records", "-j", &ids]);
        let jobs: Vec<JobInfo> = serde_json::from_slice(&out.stdout).unwrap_or_default();
        jobs.into_iter().find(|j| j.id == id)
    }

    /// Polls until `pred` holds for job `id`, returning it; fails after [`TIMEOUT`].
    pub fn wait_job(&self, id: u64, what: &str, pred: impl Fn(&JobInfo) -> bool) -> JobInfo {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let j = self.job(id);
            if let Some(j) = j.as_ref().filter(|j| pred(j)) {
                return j.clone();
            }
            assert!(
                Instant::now() < deadline,
                "job {id} not {what} within {TIMEOUT:?}; last seen: {j:?}\n--- batchd log ---\n{}",
                tail(&self.log_text())
            );
            std::thread::sleep(POLL);
        }
    }

    /// Waits for job `id` to reach `state`.
    pub fn wait_state(&self, id: u64, state: JobState) -> JobInfo {
        self.wait_job(id, state.name(), |j| j.state == state)
    }

    /// Polls until `cond` holds; fails after [`TIMEOUT`] with `what`.
    pub fn wait_until(&self, what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + TIMEOUT;
        while !cond() {
            assert!(
                Instant::now() < deadline,
                "{what} not within {TIMEOUT:?}\n--- batchd log ---\n{}",
                tail(&self.log_text())
            );
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "--- batchd log ({}) ---\n{}",
                self.log.display(),
                tail(&self.log_text())
            );
        }
        // Jobs outlive the daemon by design: cancel them first so no sleeper is left behind.
        if self.daemon_alive() {
            let _ = self.tool("ecancel").args(["-t", "PD,R,CG"]).output();
            let deadline = Instant::now() + Duration::from_secs(3);
            while Instant::now() < deadline {
                match self
                    .tool("equeue")
                    .args(["--records", "-t", "R,CG"])
                    .output()
                {
                    Ok(o)
                        if o.status.success()
                            && String::from_utf8_lossy(&o.stdout).trim() == "[]" =>
                    {
                        break
                    }
                    Ok(o) if !o.status.success() => break,
                    Err(_) => break,
                    _ => std::thread::sleep(POLL),
                }
            }
        }
        if let Some(mut d) = self.daemon.take() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(d.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            let deadline = Instant::now() + Duration::from_secs(3);
            while Instant::now() < deadline && matches!(d.try_wait(), Ok(None)) {
                std::thread::sleep(POLL);
            }
            let _ = d.kill();
            let _ = d.wait();
        }
        // Processes a test recorded (pid files under work/) must not outlive it.
        for pid in recorded_pids(&self.work) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// Pids listed in `*.pids` files of `dir`.
pub fn recorded_pids(dir: &Path) -> Vec<i32> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.path().extension().is_some_and(|x| x == "pids") {
                let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                out.extend(
                    text.split_whitespace()
                        .filter_map(|s| s.parse::<i32>().ok()),
                );
            }
        }
    }
    out
}

/// Whether `pid` is gone: no such process, or only a zombie left for its reaper.
pub fn process_gone(pid: i32) -> bool {
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Err(nix::errno::Errno::ESRCH) => true,
        _ => std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
            })
            .unwrap_or(true),
    }
}

fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// The last lines of a log, for failure messages.
pub fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// Stdout and stderr of a finished tool, as text.
pub fn texts(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Runs `tool args` expecting Slurm's failure: exit 1 and the one line `TOOL: error: ...`
/// containing `wanted`.
pub fn refused(c: &Cluster, tool: &str, args: &[&str], wanted: &str) {
    let out = c.run(tool, args);
    let (stdout, stderr) = texts(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{tool} {args:?}: {stdout}{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{tool} {args:?}: {stderr}");
    assert!(
        stderr.starts_with(&format!("{tool}: error: ")) && stderr.contains(wanted),
        "{tool} {args:?}: {stderr}"
    );
}

/// A set of machines a script of `scripts/` stands on this one (`ssh-hosts.sh`,
/// `slurm-cluster.sh`): its directory, and the variable that gives its port.
pub struct Stood {
    /// The script's directory (its keys, configs and logs).
    pub dir: tempfile::TempDir,
    script: PathBuf,
    port: (&'static str, String),
}

impl Stood {
    /// `script install`, then `script up DIR ARGS...` with `port` in its environment, in a new
    /// temporary directory; `None`, with one SKIPPED line printed, where the script cannot
    /// install what it needs or says so (exit 77). `what` names the software for that line.
    pub fn up(
        script: &str,
        what: &str,
        port: (&'static str, String),
        args: &[&str],
    ) -> Option<Stood> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scripts")
            .join(script);
        let install = Command::new("bash")
            .arg(&script)
            .arg("install")
            .output()
            .expect("run the script");
        if !install.status.success() {
            println!(
                "SKIPPED: {what} cannot be installed: {}",
                String::from_utf8_lossy(&install.stderr).trim()
            );
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("esched-stood-")
            .tempdir()
            .expect("temp dir");
        // Other users (a job's, batchd's) reach what is in it.
        set_mode(dir.path(), 0o755);
        let out = Command::new("bash")
            .arg(&script)
            .arg("up")
            .arg(dir.path())
            .args(args)
            .env(port.0, &port.1)
            .output()
            .expect("run the script");
        match out.status.code() {
            Some(0) => Some(Stood { dir, script, port }),
            Some(77) => {
                println!("SKIPPED: {}", String::from_utf8_lossy(&out.stdout).trim());
                None
            }
            _ => panic!(
                "{} up failed: {}{}",
                script.display(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }

    /// `script VERB DIR ARG`, which must succeed.
    pub fn run(&self, verb: &str, arg: &str) {
        let out = self.command(verb, &[arg]);
        assert!(
            out.status.success(),
            "{} {verb} {arg}: {}",
            self.script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn command(&self, verb: &str, args: &[&str]) -> Output {
        Command::new("bash")
            .arg(&self.script)
            .arg(verb)
            .arg(self.dir.path())
            .args(args)
            .env(self.port.0, &self.port.1)
            .output()
            .expect("run the script")
    }
}

impl Drop for Stood {
    fn drop(&mut self) {
        let _ = self.command("down", &[]);
    }
}

/// Now, ms since the epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Releases the held jobs `ids` at once; when, ms since the epoch.
pub fn release(c: &Cluster, ids: &[u64]) -> u64 {
    let list: Vec<String> = ids.iter().map(u64::to_string).collect();
    let mut args = vec!["release"];
    args.extend(list.iter().map(String::as_str));
    let released = now_ms();
    c.ok("econtrol", &args);
    released
}

/// Each job's start after the queue's release, in ms, in the order of `ids`; every job must
/// complete.
pub fn starts_after_release(c: &Cluster, ids: &[u64], released: u64) -> Vec<i64> {
    ids.iter()
        .map(|&id| {
            let j = c.wait_job(id, "ended", |j| j.state.is_finished());
            assert_eq!(j.state, JobState::Completed, "{j:?}");
            j.start_time.expect("a start") as i64 - released as i64
        })
        .collect()
}

/// The same workload of rigid, moldable and evolving jobs on a pool of four nodes, held and
/// released at once, on `c`: the jobs, and when they were released.
pub fn mixed_workload(c: &Cluster) -> (Vec<u64>, u64) {
    let ids = vec![
        c.submit(&["-H", "-N2", "-t", "1", "--wrap", "sleep 2"]),
        c.submit(&["-H", "-N3", "-t", "1", "--wrap", "sleep 1"]),
        c.submit(&["-H", "--moldable", "1:0:05,4:0:02", "--wrap", "sleep 1"]),
        c.submit(&["-H", "--evolving-profile", "2:1,2:3", "--wrap", "sleep 3"]),
        c.submit(&["-H", "-N4", "-t", "1", "--wrap", "sleep 1"]),
        c.submit(&["-H", "-N1", "-t", "1", "--wrap", "true"]),
    ];
    let released = release(c, &ids);
    (ids, released)
}

/// [`mixed_workload`]'s starts after its release on four virtual nodes of a pool called `pool`,
/// under CBF: what a pool of real nodes of that name is compared with.
pub fn mixed_workload_on_virtual_nodes(pool: &str) -> Vec<i64> {
    let virt = Cluster::start_from(|dir| {
        config_text(dir, 4, "cbf").replace("\"debug\"", &format!("{pool:?}"))
    });
    let (ids, released) = mixed_workload(&virt);
    starts_after_release(&virt, &ids, released)
}
