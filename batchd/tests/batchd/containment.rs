//! The containment that runs in batchd: the policy is called through sched-abi's `PolicyHost`,
//! so a plugin that panics or plans an over-commit is logged with its name, the last valid plan
//! is acted on instead, and the daemon goes on. Real batchd processes, with the test plugins of
//! `sched-abi/fixtures/test-*` (built as this crate's dev-dependencies) and their log on stderr.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use batch_proto::{Client, JobState, Request, ShowJobRequest};

use super::*;

/// A test plugin as cargo left it next to this test's batchd.
pub(super) fn plugin(name: &str) -> PathBuf {
    let exe = Path::new(env!("CARGO_BIN_EXE_batchd"));
    let file = format!("libesched_{}.so", name.replace('-', "_"));
    let dir = exe.parent().unwrap();
    [dir.join("deps").join(&file), dir.join(&file)]
        .into_iter()
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("{file} not built next to {}", exe.display()))
}

/// A batchd process of its own, its log in a file.
pub(super) struct Daemon {
    pub(super) dir: tempfile::TempDir,
    pub(super) child: Child,
    socket: PathBuf,
}

impl Daemon {
    fn start(policy: &str, params: &[(&str, i64)]) -> Daemon {
        Daemon::start_with(policy, params, |_| {})
    }

    /// A daemon running the test plugin `policy` with `params`, its config adjusted by `tweak`
    /// and written to `batchd.toml` in its directory.
    pub(super) fn start_with(
        policy: &str,
        params: &[(&str, i64)],
        tweak: impl FnOnce(&mut Config),
    ) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(dir.path());
        cfg.policy.name = plugin(policy).display().to_string();
        for (k, v) in params {
            cfg.policy
                .params
                .insert((*k).to_string(), toml::Value::Integer(*v));
        }
        tweak(&mut cfg);
        let file = dir.path().join("batchd.toml");
        std::fs::write(&file, cfg.to_toml()).unwrap();
        let log = std::fs::File::create(dir.path().join("batchd.log")).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_batchd"))
            .arg("--config")
            .arg(&file)
            .env("RUST_LOG", "info")
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap();
        let socket = cfg.socket.clone().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Client::connect(&socket).is_err() {
            assert!(Instant::now() < deadline, "batchd never listened");
            std::thread::sleep(Duration::from_millis(20));
        }
        Daemon { dir, child, socket }
    }

    pub(super) fn client(&self) -> Client {
        Client::connect(&self.socket).unwrap()
    }

    pub(super) fn submit(&self, script: &str, nodes: u32) -> u64 {
        super::submit_on(&mut self.client(), self.spec(script, nodes, 60_000))
    }

    /// A job of `nodes` nodes and a time limit of `limit` ms running `script`.
    pub(super) fn spec(&self, script: &str, nodes: u32, limit: u64) -> JobSpec {
        let mut s = JobSpec::new(
            format!("#!/bin/sh\n{script}\n"),
            self.dir.path().to_str().unwrap(),
            nodes,
            limit,
        );
        s.environment = vec![("PATH".into(), "/usr/bin:/bin".into())];
        s
    }

    pub(super) fn state(&self, id: u64) -> JobState {
        let jobs = self
            .client()
            .jobs(&Request::ShowJob(ShowJobRequest { id }))
            .unwrap();
        jobs[0].state
    }

    pub(super) fn wait_state(&self, id: u64, state: JobState) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.state(id) != state {
            assert!(
                Instant::now() < deadline,
                "job {id} never became {state}; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(super) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("batchd.log")).unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.child.wait();
    }
}

#[test]
fn an_over_committing_plugin_is_refused_by_name_and_the_daemon_goes_on() {
    let d = Daemon::start("test-overcommit", &[]);
    // The whole pool (8 nodes), then one more node: the plugin starts both at once.
    let big = d.submit("sleep 1", 8);
    d.wait_state(big, JobState::Running);
    let small = d.submit("true", 1);
    std::thread::sleep(Duration::from_millis(300));
    // Refused: the last valid plan (the big job's, which has started) starts nothing.
    assert_eq!(d.state(small), JobState::Pending);
    d.wait_state(big, JobState::Completed);
    d.wait_state(small, JobState::Completed);
    let log = d.log();
    assert!(
        log.contains("policy `test-overcommit`: plan refused: pool debug over-committed")
            && log.contains("keeping its last valid plan"),
        "{log}"
    );
}

#[test]
fn a_panicking_plugin_is_logged_by_name_and_rebuilt_and_the_daemon_goes_on() {
    let d = Daemon::start("test-panic", &[("panic_on_job", 2)]);
    let first = d.submit("true", 1);
    d.wait_state(first, JobState::Completed);
    // The plugin panics whenever job 2 is pending: nothing else starts meanwhile.
    let trap = d.submit("true", 1);
    let other = d.submit("true", 1);
    let logged = |log: &str| {
        log.contains("policy `test-panic` panicked: job 2 is pending and this policy was told to panic on it")
            && log.contains("keeping its last valid plan")
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !logged(&d.log()) {
        assert!(Instant::now() < deadline, "{}", d.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(d.state(other), JobState::Pending);
    // Without job 2 the plugin (a fresh instance) plans again.
    d.client()
        .request(&Request::Cancel(batch_proto::CancelRequest {
            filter: batch_proto::JobFilter {
                ids: vec![trap],
                ..Default::default()
            },
            signal: None,
            scope: Default::default(),
        }))
        .unwrap();
    d.wait_state(other, JobState::Completed);
}
