//! CooRM launcher sessions end to end: a real batchd (`batchd::spawn`, policy `coorm`) on a
//! temporary socket, launchers through the `esched-launcher` library and the Python example.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use batch_proto::{
    ChangeType, Client, JobFilter, JobInfo, JobSpec, JobState, ListRequest, PoolNodes,
    ReconfigureRequest, Request, Response, ShowJobRequest, SubmitRequest, ViewRequest,
};
use batchd::config::{LinkConfig, PoolConfig};
use batchd::{Config, DaemonHandle};
use esched_launcher::{Error, Event, Launcher, SessionFilter, SessionRequest, View};

struct Cluster {
    dir: tempfile::TempDir,
    socket: PathBuf,
    config: Config,
    daemon: Option<DaemonHandle>,
}

fn pool(name: &str, nodes: u32, speed: f64) -> PoolConfig {
    PoolConfig {
        name: name.into(),
        nodes,
        hosts: None,
        ssh: None,
        slurm: None,
        max_time: Default::default(),
        speed,
        cpus_per_node: 1,
        mem_per_node: None,
    }
}

impl Cluster {
    /// Two pools of 4 nodes, `a` (speed 1) and `b` (speed 1.5), linked; policy `coorm`.
    fn new(fair_start_ms: u64) -> Cluster {
        Cluster::build(fair_start_ms, false)
    }

    /// With its config in a file (`config.toml` in its directory), so that it can be
    /// reconfigured.
    fn build(fair_start_ms: u64, file: bool) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Config::embedded();
        c.socket = Some(dir.path().join("batchd.sock"));
        c.state_dir = Some(dir.path().join("state"));
        c.supervisor = Some(PathBuf::from(env!("CARGO_BIN_EXE_batchd")));
        c.grace_period_ms = 300;
        c.repolicy_interval_ms = 20;
        c.pools = vec![pool("a", 4, 1.0), pool("b", 4, 1.5)];
        c.links = vec![LinkConfig {
            pools: ["a".into(), "b".into()],
            latency_ms: 10.0,
            bandwidth_mbps: 1000.0,
        }];
        c.policy.name = "coorm".into();
        c.coorm.fair_start_ms = fair_start_ms;
        let socket = c.socket.clone().unwrap();
        let path = file.then(|| {
            let p = dir.path().join("config.toml");
            std::fs::write(&p, c.to_toml()).unwrap();
            p
        });
        let daemon = batchd::spawn(c.clone(), path).unwrap();
        Cluster {
            dir,
            socket,
            config: c,
            daemon: Some(daemon),
        }
    }

    /// Stops batchd and starts it again on the same state.
    fn restart(&mut self) {
        if let Some(d) = self.daemon.take() {
            d.stop();
        }
        self.daemon = Some(batchd::spawn(self.config.clone(), None).unwrap());
    }

    fn client(&self) -> Client {
        Client::connect(&self.socket).unwrap()
    }

    /// A rigid job of `nodes` nodes of `pool` (60 s limit) running `script`.
    fn submit(&self, pool: &str, nodes: u32, script: &str) -> u64 {
        self.submit_limit(pool, nodes, script, 60_000)
    }

    /// A rigid job of `nodes` nodes of `pool` with time limit `limit_ms` running `script`.
    fn submit_limit(&self, pool: &str, nodes: u32, script: &str, limit_ms: u64) -> u64 {
        let mut s = JobSpec::new(
            format!("#!/bin/sh\n{script}\n"),
            self.dir.path().to_str().unwrap(),
            nodes,
            limit_ms,
        );
        s.pool = Some(pool.into());
        s.environment = vec![("PATH".into(), "/usr/bin:/bin".into())];
        match self
            .client()
            .request(&Request::Submit(SubmitRequest {
                spec: s,
                test_only: false,
            }))
            .unwrap()
        {
            Response::Submitted { id } => id,
            other => panic!("unexpected {other:?}"),
        }
    }

    fn show(&self, id: u64) -> JobInfo {
        self.client()
            .jobs(&Request::ShowJob(ShowJobRequest { id }))
            .unwrap()
            .remove(0)
    }

    fn wait_state(&self, id: u64, state: JobState) -> JobInfo {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let j = self.show(id);
            if j.state == state {
                return j;
            }
            assert!(
                Instant::now() < deadline,
                "job {id} never became {state}: {j:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn launcher(&self) -> Launcher {
        Launcher::subscribe(&self.socket, SessionFilter::default(), Some("test".into())).unwrap()
    }

    /// `eview`'s answer for `job`.
    fn eview(&self, job: u64) -> View {
        match self
            .client()
            .request(&Request::View(ViewRequest { job }))
            .unwrap()
        {
            Response::View(v) => View {
                now: v.now,
                pools: v.pools.into_iter().map(|p| (p.pool, p.steps)).collect(),
            },
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn req(pools: &[(&str, u32)], duration_ms: u64) -> SessionRequest {
    SessionRequest {
        pools: pools
            .iter()
            .map(|&(p, n)| PoolNodes {
                pool: p.into(),
                nodes: n,
            })
            .collect(),
        duration_ms,
    }
}

/// The next view change, skipping nothing else: a start here is a failure.
fn next_view(l: &mut Launcher) -> View {
    match l.next_event(Some(Duration::from_secs(20))).unwrap() {
        Event::ViewChanged(_) => l.view().clone(),
        Event::Started(s) => panic!("started too early: {s:?}"),
    }
}

/// A CAP as `(to, free)` steps.
type Steps = Vec<(Option<u64>, u32)>;

/// The view's CAPs without the first step's start (it is the plan's `now`).
fn shape(v: &View) -> Vec<(String, Steps)> {
    v.pools
        .iter()
        .map(|(p, cap)| (p.clone(), cap.iter().map(|s| (s.to, s.free)).collect()))
        .collect()
}

#[test]
fn a_launcher_follows_its_view_changes_its_request_and_starts_on_its_nodes() {
    // A fair-start delay long enough for `show` to see the job COMPLETING after its `done`.
    let c = Cluster::new(2_000);
    // Both pools full: `a` until a job that ends early (after the first view, even on a
    // loaded machine), `b` for a minute.
    let short = c.submit("a", 4, "sleep 4");
    let long = c.submit("b", 4, "sleep 60");
    c.wait_state(short, JobState::Running);
    c.wait_state(long, JobState::Running);

    let mut l = c.launcher();
    assert_eq!(l.pools(), ["a", "b"]);
    let info = l.clusters_info().unwrap();
    assert_eq!(
        info.iter()
            .map(|p| (p.pool.as_str(), p.nodes, p.speed))
            .collect::<Vec<_>>(),
        [("a", 4, 1.0), ("b", 4, 1.5)]
    );
    let links = l.inter_cluster_info().unwrap();
    assert_eq!(links.len(), 1);
    assert_eq!(
        (links[0].latency_ms, links[0].bandwidth_mbps),
        (10.0, 1000.0)
    );

    // The first view, before any request: nothing free now on either pool, everything once
    // the running jobs' limits are past.
    let v = next_view(&mut l);
    for p in ["a", "b"] {
        assert_eq!(v.free_at(p, v.now), 0, "{p} at subscribe: {v:?}");
        let last = v.pools[p].last().unwrap();
        assert_eq!((last.to, last.free), (None, 4), "{p}: {v:?}");
    }
    assert_eq!(shape(&c.eview(l.job())), shape(&v));

    // A request that needs `b`, so that it cannot start when `a` frees up.
    l.request(req(&[("a", 2), ("b", 2)], 10_000)).unwrap();
    let job = l.job();
    assert_eq!(c.show(job).state, JobState::Pending);

    // The job on `a` ends early: a new view, `a` free from now on.
    let v = loop {
        let v = next_view(&mut l);
        if v.free_at("a", v.now) == 4 {
            break v;
        }
    };
    assert_eq!(v.free_at("b", v.now), 0);
    assert_eq!(
        shape(&c.eview(job)),
        shape(&v),
        "eview shows what the launcher got"
    );

    // The launcher changes its mind: three nodes of `a` only. Its job keeps its id (its place).
    l.request(req(&[("a", 3)], 10_000)).unwrap();
    let start = loop {
        match l.next_event(Some(Duration::from_secs(20))).unwrap() {
            Event::Started(s) => break s,
            Event::ViewChanged(_) => {}
        }
    };
    assert_eq!(start.job, job);
    assert_eq!(start.pools.len(), 1);
    assert_eq!(start.pools[0].pool, "a");
    assert_eq!(start.pools[0].nodes, ["a001", "a002", "a003"]);
    assert_eq!(start.end - start.start, 10_000);

    // equeue sees it running with its nodes.
    let listed = c
        .client()
        .jobs(&Request::List(ListRequest {
            filter: JobFilter {
                ids: vec![job],
                ..Default::default()
            },
            ..Default::default()
        }))
        .unwrap();
    assert_eq!(listed[0].state, JobState::Running);
    assert_eq!(listed[0].node_list.as_deref(), Some("a[001-003]"));

    // `done`: the nodes stay busy for the fair-start delay, then the job is COMPLETED.
    let report = l.done().unwrap();
    // Both ends counted the session's frames alike (the message volume of §IV-D's Fig. 8).
    assert_eq!(report.consistent(), Some(true), "{report:?}");
    assert!(report.launcher.frames_received >= 5 && report.done_ack_bytes > 4);
    assert_eq!(c.show(job).state, JobState::Completing);
    let end = c.wait_state(job, JobState::Completed);
    let t = end.end_time.unwrap();
    assert!(t >= start.start && t < start.end, "{end:?}");
}

#[test]
fn requests_never_fail_disconnects_lose_the_job_and_overruns_are_killed() {
    let c = Cluster::new(0);
    // Larger than the platform: accepted, and never placed.
    let mut big = c.launcher();
    next_view(&mut big);
    big.request(req(&[("a", 40)], 1_000)).unwrap();
    let big_job = big.job();
    std::thread::sleep(Duration::from_millis(300));
    let j = c.show(big_job);
    assert_eq!(j.state, JobState::Pending);
    assert_eq!(j.expected_start, None, "{j:?}");
    // A launcher that leaves before its start loses its job.
    drop(big);
    let j = c.wait_state(big_job, JobState::Cancelled);
    assert!(j.detail.unwrap_or_default().contains("disconnected"));

    // A session that outlives its duration is killed and told so.
    let mut l = c.launcher();
    next_view(&mut l);
    l.request(req(&[("b", 1)], 300)).unwrap();
    let job = l.job();
    loop {
        match l.next_event(Some(Duration::from_secs(20))) {
            Ok(Event::Started(_)) | Ok(Event::ViewChanged(_)) => {}
            Err(Error::Ended(e)) => {
                assert_eq!((e.job, e.state.as_str()), (job, "TIMEOUT"));
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    c.wait_state(job, JobState::Timeout);
}

fn python() -> Option<PathBuf> {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then(|| PathBuf::from("python3"))
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/coorm")
        .join(name)
}

#[test]
fn the_python_example_launchers_run_against_a_live_batchd() {
    let Some(py) = python() else {
        eprintln!(
            "SKIPPED the_python_example_launchers_run_against_a_live_batchd: python3 is not installed"
        );
        return;
    };
    let c = Cluster::new(0);
    let out = std::process::Command::new(&py)
        .arg(example("launcher.py"))
        .args(["--socket", c.socket.to_str().unwrap()])
        .args(["--nodes", "3", "--duration", "20", "--work", "0.2"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("started on a001,a002,a003") || text.contains("started on b001,b002,b003"),
        "{text}"
    );
    assert!(text.contains("done ("), "{text}");
    assert_views_show_clock_times(&text);

    // The CEM-like application: the platform is empty, so it takes both pools: with 1000
    // node-seconds, b alone (speed 1.5) runs 167 s, both 100 s + 1.8 s of communication over
    // the 10 ms link (slept 200 times faster).
    let out = std::process::Command::new(&py)
        .arg(example("cem.py"))
        .args(["--socket", c.socket.to_str().unwrap()])
        .args(["--work", "1000", "--time-scale", "200"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("started job")
            && text.contains("a: a001,a002,a003,a004; b: b001,b002,b003,b004"),
        "{text}"
    );
    assert_views_show_clock_times(&text);
}

/// Every `view at T:` line of a launcher's output gives T as a time of day (`HH:MM:SS.mmm`), as
/// a person reads it, not milliseconds since the epoch.
fn assert_views_show_clock_times(text: &str) {
    let views: Vec<&str> = text.lines().filter(|l| l.starts_with("view at ")).collect();
    assert!(!views.is_empty(), "{text}");
    for l in views {
        let t = l["view at ".len()..]
            .split(':')
            .take(3)
            .collect::<Vec<_>>()
            .join(":");
        let b = t.as_bytes();
        assert!(
            t.len() == 12 && b[2] == b':' && b[5] == b':' && b[8] == b'.',
            "{l}"
        );
    }
}

#[test]
fn a_reconfigure_that_changes_the_links_tells_waiting_launchers_to_pull_them_again() {
    let c = Cluster::build(0, true);
    let mut l = c.launcher();
    next_view(&mut l);
    assert_eq!(l.inter_cluster_info().unwrap()[0].latency_ms, 10.0);
    // The same links again: nothing to tell.
    let reconfigure = || match c
        .client()
        .request(&Request::Reconfigure(ReconfigureRequest {}))
        .unwrap()
    {
        Response::Reconfigured(_) => {}
        other => panic!("unexpected {other:?}"),
    };
    reconfigure();
    let path = c.dir.path().join("config.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("latency_ms = 10.0"), "{text}");
    std::fs::write(
        &path,
        text.replace("latency_ms = 10.0", "latency_ms = 25.0"),
    )
    .unwrap();
    reconfigure();
    let changed = loop {
        match l.next_event(Some(Duration::from_secs(20))).unwrap() {
            Event::ViewChanged(ch) if ch.iter().any(|(_, k)| *k == ChangeType::Interinfo) => {
                break ch
            }
            Event::ViewChanged(_) => continue,
            Event::Started(s) => panic!("started without a request: {s:?}"),
        }
    };
    assert_eq!(
        changed,
        vec![
            ("a".to_string(), ChangeType::Interinfo),
            ("b".to_string(), ChangeType::Interinfo)
        ]
    );
    assert_eq!(l.inter_cluster_info().unwrap()[0].latency_ms, 25.0);
}

#[test]
fn a_started_session_keeps_its_nodes_over_a_restart_until_its_duration_ends() {
    let mut c = Cluster::new(200);
    let mut l = c.launcher();
    // Long enough to outlast the restart on a loaded machine.
    l.request(req(&[("a", 2), ("b", 1)], 8_000)).unwrap();
    let job = l.job();
    let start = loop {
        match l.next_event(Some(Duration::from_secs(20))).unwrap() {
            Event::Started(s) => break s,
            Event::ViewChanged(_) => {}
        }
    };
    assert_eq!(c.show(job).node_list.as_deref(), Some("a[001-002],b001"));
    c.restart();
    let j = c.show(job);
    assert_eq!(j.state, JobState::Running, "{j:?}");
    assert_eq!(j.node_list.as_deref(), Some("a[001-002],b001"));
    // Its nodes are still its own: a job of the whole of `a` waits for the session's end.
    let whole = c.submit("a", 4, "true");
    let end = c.wait_state(job, JobState::Timeout);
    assert!(
        end.end_time.unwrap() >= start.end,
        "ended before its duration: {end:?}"
    );
    let after = c.wait_state(whole, JobState::Completed);
    assert!(
        after.start_time.unwrap() >= end.end_time.unwrap(),
        "started on the session's nodes: {after:?} {end:?}"
    );
}

/// When `n` nodes of `pool` are free for good in `v`: the start of the last step (a CAP ends
/// with every node free once the running jobs' limits are past).
fn free_from(v: &View, pool: &str, n: u32) -> u64 {
    let cap = &v.pools[pool];
    let mut at = u64::MAX;
    for s in cap.iter().rev() {
        if s.free < n {
            break;
        }
        at = s.from;
    }
    at
}

// Klein & Pérez, §III-C and Fig. 5(a): App0 (here a batch job) ends early; App1, a launcher
// with priority, must re-select to use the freed pool, while App2 (a lower-priority batch job
// that asked for that pool) could start on it at once. The fair-start delay holds the freed
// nodes for `fair_start_ms` because a session waits, so App1's re-request, which comes after
// the pass that showed it the freed pool, still takes it, and App2 waits behind it.
#[test]
fn an_early_end_is_held_for_the_fair_start_delay_and_the_waiting_launcher_keeps_the_pool() {
    // Long enough for the launcher to see the freed pool and re-request it on a loaded
    // machine (a view pushed, read, a request stored with fsync, a pass).
    let fair_start = 3_000;
    let c = Cluster::new(fair_start);
    // `a` looks busy for a minute but its job ends within two seconds; `b` is busy for 30 s.
    let app0 = c.submit_limit("a", 4, "sleep 2", 60_000);
    let other = c.submit_limit("b", 4, "sleep 60", 30_000);
    c.wait_state(app0, JobState::Running);
    c.wait_state(other, JobState::Running);

    // App1 asks for the pool that its view frees first: `b`.
    let mut app1 = c.launcher();
    let pick = |v: &View| {
        if free_from(v, "a", 4) <= free_from(v, "b", 4) {
            "a"
        } else {
            "b"
        }
    };
    let v = next_view(&mut app1);
    let mut asked = pick(&v);
    assert_eq!(asked, "b", "{v:?}");
    app1.request(req(&[(asked, 4)], 5_000)).unwrap();
    // App2, behind it in the queue, wants `a`.
    let app2 = c.submit("a", 4, "sleep 5");
    assert!(app2 > app1.job());

    let start = loop {
        match app1.next_event(Some(Duration::from_secs(40))).unwrap() {
            Event::Started(s) => break s,
            Event::ViewChanged(_) => {
                let now = pick(app1.view());
                if now != asked {
                    asked = now;
                    match app1.request(req(&[(asked, 4)], 5_000)) {
                        Ok(()) | Err(Error::AlreadyStarted(_)) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
            }
        }
    };
    let ended = c.show(app0);
    assert_eq!(ended.state, JobState::Completed, "{ended:?}");
    let waiting = c.show(app2);
    assert_eq!(
        (start.pools[0].pool.as_str(), waiting.state),
        ("a", JobState::Pending),
        "App2 took the freed pool: {waiting:?}"
    );
    assert_eq!(start.pools[0].nodes, ["a001", "a002", "a003", "a004"]);
    // The freed nodes stayed idle for the delay, then went to App1.
    let freed = ended.end_time.unwrap();
    assert!(
        start.start >= freed + fair_start,
        "started {} ms after the end",
        start.start - freed
    );
    assert!(start.start < freed + 10_000, "{start:?} {ended:?}");
    app1.done().unwrap();
    c.wait_state(app2, JobState::Running);
}

// §III-B, step 6: views go to an application "until these resources become available and
// the application can start". The pass that starts a session must not send it the view it
// made on the way (which shows the nodes the job now holds as free).
#[test]
fn no_view_follows_the_start() {
    let c = Cluster::new(0);
    let early = c.submit("a", 4, "sleep 1.5");
    c.wait_state(early, JobState::Running);
    let mut l = c.launcher();
    next_view(&mut l);
    // It waits for `a`, whose job frees it long before its limit: the pass after that end both
    // changes its view and starts it.
    l.request(req(&[("a", 4)], 5_000)).unwrap();
    let started = loop {
        match l.next_event(Some(Duration::from_secs(20))).unwrap() {
            Event::Started(s) => break s,
            Event::ViewChanged(_) => {}
        }
    };
    assert_eq!(started.job, l.job());
    // Other jobs come and go meanwhile: the running session hears nothing.
    let other = c.submit("b", 2, "true");
    c.wait_state(other, JobState::Completed);
    match l.next_event(Some(Duration::from_millis(600))) {
        Err(Error::Client(batch_proto::ClientError::Timeout { .. })) => {}
        other => panic!("a frame after the start: {other:?}"),
    }
    l.done().unwrap();
}

// The Python launcher, as the Rust one: a `request` after the start is `AlreadyStarted`, and
// `run` goes on with the start.
#[test]
fn the_python_launcher_takes_a_request_after_the_start_as_already_started() {
    let Some(py) = python() else {
        eprintln!("SKIPPED: python3 is not installed");
        return;
    };
    let c = Cluster::new(0);
    let script = r#"
import sys
sys.path.insert(0, sys.argv[1])
from launcher import AlreadyStarted, Session
s = Session(sys.argv[2])
s.request({"a": 1}, 5000)
while s.next_event()[0] != "start":
    pass
try:
    s.request({"a": 2}, 5000)
    print("accepted")
except AlreadyStarted as e:
    print("already started", e.args[0] == s.job)
s.done()
"#;
    let out = std::process::Command::new(&py)
        .args(["-c", script])
        .arg(example(""))
        .arg(&c.socket)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.trim(), "already started True");
}
