//! Restarts that keep every running job, whatever its kind: a co-allocated job over two pools
//! (each component re-attached, its nodes given to no one else), a job whose supervisor died
//! while batchd was down (its processes stopped before its end is recorded), a job whose pool
//! left the config (killed, not orphaned), and a signal that reaches every component.

use super::*;
use batch_proto::{InfoRequest, JobShape};
use std::process::{Child, Command, Stdio};

/// Two pools of 4 nodes, `site-a` and `site-b`, under the RPP.
fn two_sites(c: &mut Config) {
    c.pools = vec![pool("site-a", 4), pool("site-b", 4)];
    c.policy.name = "rpp".into();
}

/// A co-allocated job of two components of 2 nodes running `script` (60 s limit), whose start
/// deadline is `within_ms` from now.
fn coallocated(dir: &Path, script: &str, within_ms: u64) -> JobSpec {
    let mut s = JobSpec::new(
        format!("#!/bin/sh\n{script}\n"),
        dir.to_str().unwrap(),
        1,
        60_000,
    );
    s.shape = JobShape::CoAllocated {
        components: vec![2, 2],
        time_limit: 60_000,
    };
    s.deadline = Some(batchd::launch::now_ms() + within_ms);
    s.environment = vec![("PATH".into(), "/usr/bin:/bin".into())];
    s
}

/// A real batchd, killed (`kill -9`) when dropped: a failing test leaves no daemon behind.
struct RealBatchd(Child);

impl RealBatchd {
    /// `kill -9`, and the wait for it to be gone.
    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for RealBatchd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The real batchd on `config` (written to a file in `dir`), its log in `dir/batchd.log`.
fn real_batchd(dir: &Path, config: &Config) -> RealBatchd {
    let file = dir.join("batchd.toml");
    std::fs::write(&file, config.to_toml()).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_batchd"))
        .arg("--config")
        .arg(&file)
        .stderr(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join("batchd.log"))
                .unwrap(),
        )
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let daemon = RealBatchd(child);
    let sock = config.socket.as_ref().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Client::connect(sock).is_err() {
        assert!(Instant::now() < deadline, "batchd never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    daemon
}

fn show_on(sock: &Path, id: u64) -> JobInfo {
    Client::connect(sock)
        .unwrap()
        .jobs(&Request::ShowJob(ShowJobRequest { id }))
        .unwrap()
        .remove(0)
}

fn wait_on(sock: &Path, id: u64, what: &str, done: impl Fn(&JobInfo) -> bool) -> JobInfo {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let j = show_on(sock, id);
        if done(&j) {
            return j;
        }
        assert!(
            Instant::now() < deadline,
            "job {id} never became {what}: {j:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `(allocated, idle)` nodes of each pool.
fn node_counts(sock: &Path) -> Vec<(u32, u32)> {
    match Client::connect(sock)
        .unwrap()
        .request(&Request::Info(InfoRequest {}))
        .unwrap()
    {
        Response::Info(i) => i
            .pools
            .iter()
            .map(|p| (p.allocated, p.total - p.allocated - p.reserved))
            .collect(),
        other => panic!("{other:?}"),
    }
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet: it runs nothing).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|s| s == "Z" || s == "X"),
    }
}

/// The pids a pid file lists: the first field of each line (`job.pid` adds each process's
/// start time, and the boot on a line of its own).
fn pids(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect()
}

#[test]
fn a_coallocated_job_survives_kill_9_of_batchd_and_keeps_its_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    two_sites(&mut cfg);
    let sock = cfg.socket.clone().unwrap();
    let mut daemon = real_batchd(dir.path(), &cfg);
    let spec = coallocated(
        dir.path(),
        "sleep 4; echo \"done $ESCHED_COMPONENT\"",
        1_000,
    );
    let job = submit_on(&mut Client::connect(&sock).unwrap(), spec);
    let before = wait_on(&sock, job, "running", |j| j.state == JobState::Running);
    let pidfile = dir.path().join(format!("state/jobs/{job}/job.pid"));
    let deadline = Instant::now() + Duration::from_secs(10);
    // Written as each component is forked: one process group per component.
    while pids(&pidfile).len() < 2 {
        assert!(
            Instant::now() < deadline,
            "job.pid lists {:?}",
            pids(&pidfile)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(pids(&pidfile).len(), 2);

    daemon.kill();
    let daemon = real_batchd(dir.path(), &cfg);

    let after = show_on(&sock, job);
    assert_eq!(after.state, JobState::Running, "{after:?}");
    assert_eq!(after.node_list, before.node_list);
    assert_eq!(node_counts(&sock), vec![(2, 2), (2, 2)]);
    // A local job of the whole of site-a must wait for the co-allocated job's end.
    let mut local = cluster_spec(dir.path(), "true", 4);
    local.pool = Some("site-a".into());
    let local = submit_on(&mut Client::connect(&sock).unwrap(), local);
    let end = wait_on(&sock, job, "ended", |j| j.state.is_finished());
    assert_eq!(end.state, JobState::Completed, "{end:?}");
    let ran = wait_on(&sock, local, "ended", |j| j.state.is_finished());
    assert!(
        ran.start_time.unwrap() >= end.end_time.unwrap(),
        "a job was placed on the nodes of a running co-allocated job: {ran:?} {end:?}"
    );
    assert_eq!(ran.state, JobState::Completed);
    let out = std::fs::read_to_string(dir.path().join(format!("slurm-{job}.out"))).unwrap();
    assert!(
        out.contains("done 0") && out.contains("done 1"),
        "both components ran to their end: {out}"
    );
    drop(daemon);
}

/// A rigid job of `nodes` nodes running `script` in `dir`.
fn cluster_spec(dir: &Path, script: &str, nodes: u32) -> JobSpec {
    let mut s = JobSpec::new(
        format!("#!/bin/sh\n{script}\n"),
        dir.to_str().unwrap(),
        nodes,
        60_000,
    );
    s.environment = vec![("PATH".into(), "/usr/bin:/bin".into())];
    s
}

#[test]
fn a_job_whose_supervisor_died_while_batchd_was_down_leaves_no_process() {
    let mut c = Cluster::new();
    let job = c.submit(c.spec("sleep 60 & sleep 60; wait"));
    c.wait_state(job, JobState::Running);
    let jobdir = c.path(&format!("state/jobs/{job}"));
    let deadline = Instant::now() + Duration::from_secs(10);
    let group = loop {
        if let Some(&g) = pids(&jobdir.join("job.pid")).first() {
            break g;
        }
        assert!(Instant::now() < deadline, "no job.pid");
        std::thread::sleep(Duration::from_millis(20));
    };
    let supervisor = pids(&jobdir.join("supervisor.pid"))[0];
    c.stop();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(supervisor),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !gone(supervisor) {
        assert!(Instant::now() < deadline, "the supervisor did not die");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!gone(group), "the job runs on without its supervisor");
    c.boot();
    let end = c.wait_for(job, "ended", |j| j.state.is_finished());
    assert_eq!(end.state, JobState::Failed, "{end:?}");
    let detail = end.detail.unwrap_or_default();
    assert!(detail.contains("stopped"), "{detail}");
    assert!(gone(group), "the job's shell was left running");
    // Nothing of the job's session is left: its two sleeps included.
    let left: Vec<i32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| !gone(pid))
        .filter(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    let (_, rest) = s.rsplit_once(')')?;
                    rest.split_whitespace().nth(3)?.parse::<i32>().ok()
                })
                == Some(group)
        })
        .collect();
    assert!(left.is_empty(), "processes of the job left: {left:?}");
}

#[test]
fn a_running_job_whose_pool_left_the_config_is_killed_before_it_is_recorded_failed() {
    let mut c = cluster(|cfg| cfg.pools = vec![pool("debug", 4), pool("gone", 4)]);
    let mut spec = c.spec("sleep 60");
    spec.pool = Some("gone".into());
    let job = c.submit(spec);
    c.wait_state(job, JobState::Running);
    let jobdir = c.path(&format!("state/jobs/{job}"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids(&jobdir.join("job.pid")).is_empty() {
        assert!(Instant::now() < deadline, "no job.pid");
        std::thread::sleep(Duration::from_millis(20));
    }
    let group = pids(&jobdir.join("job.pid"))[0];
    let supervisor = pids(&jobdir.join("supervisor.pid"))[0];
    c.stop();
    c.config.pools.truncate(1);
    c.boot();
    let end = c.show(job);
    assert_eq!(end.state, JobState::Failed, "{end:?}");
    assert!(
        end.detail
            .as_deref()
            .is_some_and(|d| d.contains("lost at daemon restart")),
        "{end:?}"
    );
    assert!(gone(group), "the job's process was left running");
    assert!(gone(supervisor), "its supervisor was left running");
}

#[test]
fn a_signal_reaches_every_component_of_a_coallocated_job() {
    let c = cluster(two_sites);
    let script = "trap 'echo got > sig-$ESCHED_COMPONENT' USR1\n\
                  i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done";
    let job = c.submit(coallocated(c.dir.path(), script, 500));
    c.wait_state(job, JobState::Running);
    // The traps are set once the shells run: signal until both answered.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !(c.path("sig-0").exists() && c.path("sig-1").exists()) {
        assert!(
            Instant::now() < deadline,
            "a component never got the signal"
        );
        // Each component's shell traps it: scancel -b reaches every component's shell.
        match c.cancel_scoped(
            vec![job],
            Some(nix::sys::signal::Signal::SIGUSR1 as i32),
            batch_proto::SignalScope::Batch,
        ) {
            Response::Acted(r) => assert_eq!(r.done, vec![job], "{r:?}"),
            other => panic!("{other:?}"),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    c.cancel(vec![job], None);
    c.wait_state(job, JobState::Cancelled);
}

#[test]
fn a_claim_survives_a_restart_and_the_job_starts_at_its_deadline_on_it() {
    let mut c = cluster(two_sites);
    // The RPP's first try comes at 70 % of the way to the deadline and claims the nodes; the
    // 2.4 s left cover the restart on a loaded machine.
    let spec = coallocated(c.dir.path(), "sleep 1", 8_000);
    let deadline_ms = spec.deadline.unwrap();
    let job = c.submit(spec);
    let reserved = |c: &Cluster| {
        let info = match c.client().request(&Request::Info(InfoRequest {})).unwrap() {
            Response::Info(i) => i,
            other => panic!("{other:?}"),
        };
        info.pools.iter().map(|p| p.reserved).sum::<u32>()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while reserved(&c) != 4 {
        assert!(
            Instant::now() < deadline,
            "the job's nodes were never claimed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    c.stop();
    c.boot();
    let j = c.show(job);
    assert_eq!(
        (j.state, j.reason),
        (JobState::Pending, Some(PendingReason::Reserved)),
        "{j:?}"
    );
    assert_eq!(reserved(&c), 4, "the claim is held again after the restart");
    // A local job of the whole of site-a cannot take the claimed nodes.
    let mut local = c.spec("true");
    local.pool = Some("site-a".into());
    local.shape = JobShape::Rigid {
        nodes: 4,
        time_limit: 60_000,
    };
    let local = c.submit(local);
    let started = c.wait_for(job, "running", |j| j.state != JobState::Pending);
    assert_eq!(started.state, JobState::Running, "{started:?}");
    // At its deadline (the RPP's last try), not at the claim.
    assert!(
        started.start_time.unwrap() >= deadline_ms,
        "started before its deadline {deadline_ms}: {started:?}"
    );
    let done = c.wait_state(job, JobState::Completed);
    let ran = c.wait_for(local, "ended", |j| j.state.is_finished());
    assert!(
        ran.start_time.unwrap() >= done.end_time.unwrap(),
        "the local job ran on the claimed nodes: {ran:?} {done:?}"
    );
}

#[test]
fn a_restart_while_a_killed_job_stops_keeps_its_nodes_with_the_job_they_went_to() {
    let mut c = cluster(|cfg| {
        two_sites(cfg);
        // Long enough for the restart, under load, to come while the killed job still runs.
        cfg.grace_period_ms = 10_000;
    });
    // A local job of all of site-a that ignores SIGTERM: the GP kill takes the grace period.
    let mut local = c.spec("trap '' TERM; sleep 60");
    local.pool = Some("site-a".into());
    local.shape = JobShape::Rigid {
        nodes: 4,
        time_limit: 60_000,
    };
    let local = c.submit(local);
    c.wait_state(local, JobState::Running);
    // A global job of both pools whole: at its deadline the RPP kills the local job for it.
    // And it outlives the restart.
    let mut global = coallocated(c.dir.path(), "sleep 8", 1_000);
    global.shape = JobShape::CoAllocated {
        components: vec![4, 4],
        time_limit: 60_000,
    };
    let global = c.submit(global);
    c.wait_state(global, JobState::Running);
    // Running in the core comes before its supervisor starts: a restart in between would
    // requeue the global job (it never started), which is not the case under test.
    let pidfile = c.path(&format!("state/jobs/{global}/supervisor.pid"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pidfile.exists() {
        assert!(
            Instant::now() < deadline,
            "the global job's supervisor did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(c.show(local).state, JobState::Running, "still stopping");
    c.stop();
    c.boot();
    let g = c.show(global);
    assert_eq!(g.state, JobState::Running, "{g:?}");
    assert_eq!(
        g.node_list.as_deref(),
        Some("site-a[001-004],site-b[001-004]")
    );
    let l = c.wait_for(local, "ended", |j| j.state.is_finished());
    assert_eq!(l.state, JobState::Preempted, "{l:?}");
    let g = c.wait_for(global, "ended", |j| j.state.is_finished());
    assert_eq!(g.state, JobState::Completed, "{g:?}");
}
