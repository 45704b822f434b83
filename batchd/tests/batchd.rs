//! batchd through its public surface: `batchd::spawn` in a temporary directory, spoken to with
//! batch-proto's client. The end-to-end tests through the real CLI binaries live in cli-tools.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use batch_proto::frame::{read_frame, write_frame};
use batch_proto::{
    CancelRequest, Client, ErrorKind, Hello, JobFilter, JobInfo, JobSpec, JobState, ListRequest,
    PendingReason, Request, Response, ShowJobRequest, SubmitRequest,
};
use batchd::{Config, DaemonHandle};

#[path = "batchd/bounds.rs"]
mod bounds;
#[path = "batchd/budget.rs"]
mod budget;
#[path = "batchd/containment.rs"]
mod containment;

struct Cluster {
    dir: tempfile::TempDir,
    config: Config,
    config_path: Option<PathBuf>,
    daemon: Option<DaemonHandle>,
}

fn config(dir: &Path) -> Config {
    let mut c = Config::embedded();
    c.socket = Some(dir.join("batchd.sock"));
    c.state_dir = Some(dir.join("state"));
    c.supervisor = Some(PathBuf::from(env!("CARGO_BIN_EXE_batchd")));
    c.grace_period_ms = 300;
    c.repolicy_interval_ms = 20;
    c
}

/// Submits `spec` on an open connection and returns its id (tests that submit many jobs keep
/// one connection).
fn submit_on(client: &mut Client, spec: JobSpec) -> u64 {
    match client
        .request(&Request::Submit(SubmitRequest {
            spec,
            test_only: false,
        }))
        .unwrap()
    {
        Response::Submitted { id } => id,
        other => panic!("unexpected {other:?}"),
    }
}

/// A pool of `nodes` plain nodes.
fn pool(name: &str, nodes: u32) -> batchd::config::PoolConfig {
    batchd::config::PoolConfig {
        name: name.into(),
        nodes,
        hosts: None,
        ssh: None,
        slurm: None,
        max_time: Default::default(),
        speed: 1.0,
        cpus_per_node: 1,
        mem_per_node: None,
    }
}

/// A booted cluster whose config `tweak` adjusts first.
fn cluster(tweak: impl FnOnce(&mut Config)) -> Cluster {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path());
    tweak(&mut config);
    let mut c = Cluster {
        dir,
        config,
        config_path: None,
        daemon: None,
    };
    c.boot();
    c
}

impl Cluster {
    fn new() -> Cluster {
        cluster(|_| {})
    }

    fn boot(&mut self) {
        self.daemon = Some(batchd::spawn(self.config.clone(), self.config_path.clone()).unwrap());
    }

    fn stop(&mut self) {
        if let Some(d) = self.daemon.take() {
            d.stop();
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn client(&self) -> Client {
        Client::connect(self.config.socket.as_ref().unwrap()).unwrap()
    }

    fn spec(&self, script: &str) -> JobSpec {
        let mut s = JobSpec::new(
            format!("#!/bin/sh\n{script}\n"),
            self.dir.path().to_str().unwrap(),
            1,
            60_000,
        );
        s.environment = vec![("PATH".into(), "/usr/bin:/bin".into())];
        s
    }

    fn submit(&self, spec: JobSpec) -> u64 {
        submit_on(&mut self.client(), spec)
    }

    fn show(&self, id: u64) -> JobInfo {
        let mut jobs = self
            .client()
            .jobs(&Request::ShowJob(ShowJobRequest { id }))
            .unwrap();
        assert_eq!(jobs.len(), 1);
        jobs.remove(0)
    }

    fn wait_for(&self, id: u64, what: &str, done: impl Fn(&JobInfo) -> bool) -> JobInfo {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let j = self.show(id);
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

    fn wait_state(&self, id: u64, state: JobState) -> JobInfo {
        self.wait_for(id, state.name(), |j| j.state == state)
    }

    fn cancel(&self, ids: Vec<u64>, signal: Option<i32>) -> Response {
        self.cancel_scoped(ids, signal, Default::default())
    }

    /// A cancel whose signal reaches `scope` (scancel's default: the steps; `-b`: the batch
    /// shell; `-f`: everything).
    fn cancel_scoped(
        &self,
        ids: Vec<u64>,
        signal: Option<i32>,
        scope: batch_proto::SignalScope,
    ) -> Response {
        let filter = JobFilter {
            ids,
            ..Default::default()
        };
        self.client()
            .request(&Request::Cancel(CancelRequest {
                filter,
                signal,
                scope,
            }))
            .unwrap()
    }
}

fn pid_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('Z')),
    }
}

fn wait_file(path: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(s) = std::fs::read_to_string(path) {
            if !s.is_empty() {
                return s;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} never written",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn job_runs_to_completion_with_its_output_and_environment() {
    let c = Cluster::new();
    let mut spec = c.spec("echo \"id=$ESCHED_JOB_ID nodes=$ESCHED_NODELIST n=$ESCHED_NNODES pool=$ESCHED_POOL name=$ESCHED_JOB_NAME arg=$1\"\necho oops >&2");
    spec.shape = batch_proto::JobShape::Rigid {
        nodes: 3,
        time_limit: 60_000,
    };
    spec.name = "hello".into();
    spec.args = vec!["first".into()];
    let id = c.submit(spec);
    let j = c.wait_state(id, JobState::Completed);
    assert_eq!((j.exit_code, j.signal), (Some(0), Some(0)));
    assert_eq!(j.node_list.as_deref(), Some("debug[001-003]"));
    assert!(j.start_time.is_some() && j.end_time >= j.start_time);
    let out = std::fs::read_to_string(c.path(&format!("slurm-{id}.out"))).unwrap();
    assert_eq!(
        out,
        format!("id={id} nodes=debug[001-003] n=3 pool=debug name=hello arg=first\noops\n")
    );
    // Finished jobs are in the accounting.
    let acct = c.client().jobs(&Request::Acct(Default::default())).unwrap();
    assert_eq!(acct.iter().map(|j| j.id).collect::<Vec<_>>(), vec![id]);
}

// Slurm 22.05 makes "a quick and simple scheduling attempt at events such as job submission or
// completion" (sched_config.html): a job that fits an idle cluster starts at once, however
// recently the last job started. The re-policy interval, here a minute, paces passes only
// while CooRM launcher sessions are open; the second job's pass comes right after the first
// job's, and the 20 s wait of `wait_state` is far below the minute.
#[test]
fn a_job_submitted_right_after_another_ends_starts_without_waiting_for_the_re_policy_interval() {
    let c = cluster(|c| c.repolicy_interval_ms = 60_000);
    let mut client = c.client();
    for _ in 0..3 {
        let id = submit_on(&mut client, c.spec("true"));
        c.wait_state(id, JobState::Completed);
    }
}

#[test]
fn failing_script_ends_failed_with_its_exit_code_and_separate_stderr() {
    let c = Cluster::new();
    let mut spec = c.spec("echo out; echo err >&2; exit 3");
    spec.stdout = Some("o-%j-%x.txt".into());
    spec.stderr = Some("e-%j.txt".into());
    spec.name = "bad".into();
    let id = c.submit(spec);
    let j = c.wait_state(id, JobState::Failed);
    assert_eq!(j.exit_status(), "3:0");
    assert_eq!(
        std::fs::read_to_string(c.path(&format!("o-{id}-bad.txt"))).unwrap(),
        "out\n"
    );
    assert_eq!(
        std::fs::read_to_string(c.path(&format!("e-{id}.txt"))).unwrap(),
        "err\n"
    );
}

#[test]
fn job_past_its_walltime_is_stopped_and_ends_timeout() {
    let c = Cluster::new();
    let mut spec = c.spec("echo started\nsleep 30");
    // Long enough for the supervisor, the shell and its echo to start on a loaded machine.
    spec.shape = batch_proto::JobShape::Rigid {
        nodes: 1,
        time_limit: 2_000,
    };
    let id = c.submit(spec);
    let j = c.wait_state(id, JobState::Timeout);
    assert_eq!(j.signal, Some(15), "{j:?}");
    let ran = j.end_time.unwrap() - j.start_time.unwrap();
    assert!(ran >= 2_000, "stopped after {ran} ms");
    let out = std::fs::read_to_string(c.path(&format!("slurm-{id}.out"))).unwrap();
    assert!(out.starts_with("started\n"), "{out}");
    assert!(
        out.contains(&format!("*** JOB {id} CANCELLED AT"))
            && out.contains("DUE TO TIME LIMIT ***"),
        "{out}"
    );
}

#[test]
fn cancel_of_pending_and_running_jobs() {
    let c = Cluster::new();
    // A running job with a background child in its process group.
    let mut big = c.spec("sleep 60 &\necho $! > child.pid\nwait");
    big.shape = batch_proto::JobShape::Rigid {
        nodes: 8,
        time_limit: 60_000,
    };
    let running = c.submit(big);
    let waiting = c.submit(c.spec("true"));
    c.wait_state(running, JobState::Running);
    let child: i32 = wait_file(&c.path("child.pid")).trim().parse().unwrap();
    // The plan that gives the queued job its expected start may come one re-policy interval
    // after its submission, later than the running job's first output.
    let j = c.wait_for(waiting, "an expected start from the plan", |j| {
        j.expected_start.is_some()
    });
    assert_eq!(
        (j.state, j.reason),
        (JobState::Pending, Some(PendingReason::Resources))
    );

    let Response::Acted(r) = c.cancel(vec![waiting], None) else {
        panic!()
    };
    assert_eq!(r.done, vec![waiting]);
    assert_eq!(c.show(waiting).state, JobState::Cancelled);

    let Response::Acted(r) = c.cancel(vec![running], None) else {
        panic!()
    };
    assert_eq!(r.done, vec![running]);
    let j = c.wait_state(running, JobState::Cancelled);
    assert!(j.end_time.is_some());
    let deadline = Instant::now() + Duration::from_secs(5);
    while !pid_gone(child) {
        assert!(
            Instant::now() < deadline,
            "the job's background child {child} survived the cancel"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Cancelling a finished or unknown job is an error per job.
    let Response::Acted(r) = c.cancel(vec![running, 999], None) else {
        panic!()
    };
    let kinds: Vec<ErrorKind> = r.failed.iter().map(|f| f.kind).collect();
    assert_eq!(
        kinds,
        vec![ErrorKind::InvalidState, ErrorKind::InvalidJobId]
    );
}

#[test]
fn signal_reaches_the_job_without_cancelling_it() {
    let c = Cluster::new();
    let id = c.submit(c.spec(
        "trap 'echo got USR1; exit 0' USR1\necho ready > ready.txt\nwhile :; do sleep 0.05; done",
    ));
    c.wait_state(id, JobState::Running);
    wait_file(&c.path("ready.txt"));
    // The batch shell traps it: scancel -b (without it the signal goes to the steps only).
    let Response::Acted(r) = c.cancel_scoped(vec![id], Some(10), batch_proto::SignalScope::Batch)
    else {
        panic!()
    };
    assert_eq!(r.done, vec![id]);
    c.wait_state(id, JobState::Completed);
    assert!(std::fs::read_to_string(c.path(&format!("slurm-{id}.out")))
        .unwrap()
        .contains("got USR1"));
}

#[test]
fn dependencies_and_holds() {
    let c = Cluster::new();
    let bad = c.submit(c.spec("exit 1"));
    c.wait_state(bad, JobState::Failed);
    let mut s = c.spec("true");
    s.dependencies = batch_proto::Dependency::parse_list(&format!("afterok:{bad}")).unwrap();
    let never = c.submit(s);
    let mut s = c.spec("true");
    s.dependencies = batch_proto::Dependency::parse_list(&format!("afternotok:{bad}")).unwrap();
    let runs = c.submit(s);
    let mut s = c.spec("true");
    s.hold = true;
    let held = c.submit(s);
    c.wait_state(runs, JobState::Completed);
    let j = c.show(never);
    assert_eq!(
        (j.state, j.reason),
        (
            JobState::Pending,
            Some(PendingReason::DependencyNeverSatisfied)
        )
    );
    assert_eq!(c.show(held).reason, Some(PendingReason::Held));
    let r = c
        .client()
        .request(&Request::Unhold(batch_proto::UnholdRequest {
            ids: vec![held],
        }))
        .unwrap();
    assert!(
        matches!(r, Response::Acted(ref a) if a.done == vec![held]),
        "{r:?}"
    );
    c.wait_state(held, JobState::Completed);
}

#[test]
fn bad_submissions_are_refused_with_a_reason() {
    let c = Cluster::new();
    let mut too_big = c.spec("true");
    too_big.shape = batch_proto::JobShape::Rigid {
        nodes: 9,
        time_limit: 1000,
    };
    let mut bad_pool = c.spec("true");
    bad_pool.pool = Some("gpu".into());
    let mut bad_dep = c.spec("true");
    bad_dep.dependencies = batch_proto::Dependency::parse_list("afterok:4242").unwrap();
    let mut relative = c.spec("true");
    relative.work_dir = "here".into();
    for (spec, needle) in [
        (too_big, "not available"),
        (bad_pool, "gpu"),
        (bad_dep, "4242"),
        (relative, "work_dir"),
    ] {
        let r = c
            .client()
            .send(&Request::Submit(SubmitRequest {
                spec,
                test_only: false,
            }))
            .unwrap();
        match r {
            Response::Error(e) => {
                assert_eq!(e.kind, ErrorKind::InvalidSpec);
                assert!(e.message.contains(needle), "{}", e.message);
            }
            other => panic!("accepted: {other:?}"),
        }
    }
    // Nothing was queued.
    assert!(c
        .client()
        .jobs(&Request::List(ListRequest::default()))
        .unwrap()
        .is_empty());
}

#[test]
fn test_only_gives_an_expected_start_and_queues_nothing() {
    let c = Cluster::new();
    let r = c
        .client()
        .request(&Request::Submit(SubmitRequest {
            spec: c.spec("true"),
            test_only: true,
        }))
        .unwrap();
    let Response::TestOnly(t) = r else {
        panic!("{r:?}")
    };
    assert!(t.expected_start.is_some());
    assert_eq!(t.pool.as_deref(), Some("debug"));
    assert!(c
        .client()
        .jobs(&Request::List(ListRequest::default()))
        .unwrap()
        .is_empty());
    assert_eq!(c.submit(c.spec("true")), 1, "test-only consumed no id");
}

#[test]
fn pending_jobs_and_ids_survive_a_restart() {
    let mut c = Cluster::new();
    let mut ids = Vec::new();
    for i in 0..20 {
        let mut s = c.spec("true");
        s.hold = true;
        s.name = format!("j{i}");
        ids.push(c.submit(s));
    }
    let finished = c.submit(c.spec("exit 7"));
    c.wait_state(finished, JobState::Failed);
    c.stop();
    c.boot();
    let listed = c
        .client()
        .jobs(&Request::List(ListRequest::default()))
        .unwrap();
    assert_eq!(listed.iter().map(|j| j.id).collect::<Vec<_>>(), ids);
    assert!(listed
        .iter()
        .all(|j| j.state == JobState::Pending && j.held));
    assert_eq!(c.show(finished).exit_status(), "7:0");
    assert_eq!(c.submit(c.spec("true")), finished + 1);
}

#[test]
fn a_job_running_across_a_restart_is_recorded_when_it_ends() {
    let mut c = Cluster::new();
    let id = c.submit(c.spec("touch started\nsleep 1\nexit 4"));
    c.wait_state(id, JobState::Running);
    wait_file_exists(&c.path("started"));
    c.stop();
    // The job ends while no daemon runs.
    std::thread::sleep(Duration::from_millis(1500));
    c.boot();
    let j = c.wait_state(id, JobState::Failed);
    assert_eq!(j.exit_status(), "4:0");
    // Its nodes are free again: a full-size job runs.
    let mut s = c.spec("true");
    s.shape = batch_proto::JobShape::Rigid {
        nodes: 8,
        time_limit: 10_000,
    };
    let next = c.submit(s);
    c.wait_state(next, JobState::Completed);
}

#[test]
fn a_running_job_is_readopted_and_finishes_after_a_restart() {
    let mut c = Cluster::new();
    let id = c.submit(c.spec("touch started\nsleep 1.5\necho done"));
    c.wait_state(id, JobState::Running);
    wait_file_exists(&c.path("started"));
    c.stop();
    c.boot();
    assert_eq!(c.show(id).state, JobState::Running);
    c.wait_state(id, JobState::Completed);
    assert_eq!(
        std::fs::read_to_string(c.path(&format!("slurm-{id}.out"))).unwrap(),
        "done\n"
    );
}

fn wait_file_exists(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never created",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn malformed_truncated_and_oversize_frames_get_an_error_and_the_daemon_stays_up() {
    let c = Cluster::new();
    let sock = c.config.socket.clone().unwrap();
    let hello = |s: &mut UnixStream| {
        write_frame(s, &Request::Hello(Hello::current())).unwrap();
        let r: Response = read_frame(s).unwrap();
        assert!(matches!(r, Response::Hello(_)));
    };
    let expect_error = |s: &mut UnixStream| match read_frame::<_, Response>(s).unwrap() {
        Response::Error(e) => assert_eq!(e.kind, ErrorKind::BadRequest, "{e:?}"),
        other => panic!("{other:?}"),
    };
    // Not JSON.
    let mut s = UnixStream::connect(&sock).unwrap();
    hello(&mut s);
    s.write_all(&5u32.to_be_bytes()).unwrap();
    s.write_all(b"{nope").unwrap();
    expect_error(&mut s);
    // JSON, but no request.
    let mut s = UnixStream::connect(&sock).unwrap();
    hello(&mut s);
    write_frame(&mut s, &serde_json::json!({"Launch": {"missiles": true}})).unwrap();
    expect_error(&mut s);
    // Truncated: the header promises more than comes.
    let mut s = UnixStream::connect(&sock).unwrap();
    hello(&mut s);
    s.write_all(&100u32.to_be_bytes()).unwrap();
    s.write_all(b"{\"Version\"").unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    expect_error(&mut s);
    // Oversize header, before any hello.
    let mut s = UnixStream::connect(&sock).unwrap();
    s.write_all(&u32::MAX.to_be_bytes()).unwrap();
    expect_error(&mut s);
    let mut rest = Vec::new();
    assert_eq!(
        s.read_to_end(&mut rest).unwrap(),
        0,
        "the connection is closed"
    );
    // A request before the hello.
    let mut s = UnixStream::connect(&sock).unwrap();
    write_frame(&mut s, &Request::Info(Default::default())).unwrap();
    expect_error(&mut s);
    // Another protocol version.
    let mut s = UnixStream::connect(&sock).unwrap();
    write_frame(
        &mut s,
        &Request::Hello(Hello {
            proto_version: 999,
            software_version: "x".into(),
        }),
    )
    .unwrap();
    match read_frame::<_, Response>(&mut s).unwrap() {
        Response::Error(e) => {
            assert_eq!(e.kind, ErrorKind::VersionMismatch);
            assert_eq!(
                e.message,
                format!(
                    "protocol version mismatch: client 999, daemon {}",
                    batch_proto::PROTOCOL_VERSION
                )
            );
        }
        other => panic!("{other:?}"),
    }
    // Still serving.
    let id = c.submit(c.spec("true"));
    c.wait_state(id, JobState::Completed);
}

#[test]
fn reconfigure_swaps_the_policy_and_keeps_the_old_one_on_failure() {
    let mut c = Cluster::new();
    c.stop();
    let file = c.path("batchd.toml");
    let base = c.config.clone();
    let write = |policy: &str| {
        let mut cfg = base.clone();
        cfg.policy.name = policy.into();
        std::fs::write(&file, cfg.to_toml()).unwrap();
    };
    write("cbf");
    c.config_path = Some(file.clone());
    c.config = Config::load(&file).unwrap();
    c.boot();
    let mut s = c.spec("sleep 1");
    s.shape = batch_proto::JobShape::Rigid {
        nodes: 8,
        time_limit: 10_000,
    };
    let running = c.submit(s);
    let mut s = c.spec("true");
    s.hold = true;
    let queued = c.submit(s);
    c.wait_state(running, JobState::Running);

    write("easy");
    let r = c
        .client()
        .request(&Request::Reconfigure(Default::default()))
        .unwrap();
    assert!(
        matches!(r, Response::Reconfigured(ref x) if x.policy == "easy"),
        "{r:?}"
    );
    write("no-such-policy");
    let err = c
        .client()
        .request(&Request::Reconfigure(Default::default()))
        .unwrap_err();
    assert!(err.to_string().contains("no-such-policy"), "{err}");
    assert!(err.to_string().contains("key `policy.name`"), "{err}");
    // A parameter the policy refuses is named by its key too.
    let mut cfg = base.clone();
    cfg.policy.name = "cbf".into();
    cfg.policy
        .params
        .insert("bogus".into(), toml::Value::Integer(1));
    std::fs::write(&file, cfg.to_toml()).unwrap();
    let err = c
        .client()
        .request(&Request::Reconfigure(Default::default()))
        .unwrap_err();
    assert!(
        err.to_string().contains("key `policy.params.bogus`"),
        "{err}"
    );
    let Response::Version(v) = c
        .client()
        .request(&Request::Version(Default::default()))
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(v.policy, "easy");
    // Nothing was lost: the queued job is there and runs once released.
    assert_eq!(c.show(queued).state, JobState::Pending);
    c.client()
        .request(&Request::Unhold(batch_proto::UnholdRequest {
            ids: vec![queued],
        }))
        .unwrap();
    c.wait_state(running, JobState::Completed);
    c.wait_state(queued, JobState::Completed);
}

#[test]
fn info_lists_pools_and_allocated_nodes() {
    let c = Cluster::new();
    let mut s = c.spec("sleep 30");
    s.shape = batch_proto::JobShape::Rigid {
        nodes: 2,
        time_limit: 60_000,
    };
    let id = c.submit(s);
    c.wait_state(id, JobState::Running);
    let Response::Info(info) = c
        .client()
        .request(&Request::Info(Default::default()))
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(info.pools.len(), 1);
    let p = &info.pools[0];
    assert_eq!((p.name.as_str(), p.total, p.allocated), ("debug", 8, 2));
    assert_eq!(p.node_list, "debug[001-008]");
    assert_eq!(p.nodes[0].job, Some(id));
    c.cancel(vec![id], None);
    c.wait_state(id, JobState::Cancelled);
}

#[test]
fn brief_listing_leaves_out_paths_and_full_listing_has_them() {
    let c = Cluster::new();
    let mut s = c.spec("true");
    s.hold = true;
    s.args = vec!["a".into()];
    let id = c.submit(s);
    let full = c
        .client()
        .jobs(&Request::List(ListRequest::default()))
        .unwrap();
    assert_eq!(
        full[0].stdout,
        c.path(&format!("slurm-{id}.out")).display().to_string()
    );
    assert_eq!(full[0].args, vec!["a".to_string()]);
    let brief = c
        .client()
        .jobs(&Request::List(ListRequest {
            brief: true,
            ..Default::default()
        }))
        .unwrap();
    assert_eq!(
        (brief[0].id, brief[0].held, brief[0].reason),
        (id, true, Some(PendingReason::Held))
    );
    assert!(brief[0].stdout.is_empty() && brief[0].work_dir.is_empty() && brief[0].args.is_empty());
}

/// Through the socket: a listing with finished jobs comes after the active ones, brief or
/// full; one of more than a frame's worth of jobs arrives whole and in queue order.
#[test]
fn listings_with_finished_jobs_and_many_frames() {
    let c = Cluster::new();
    let mut s = c.spec("true");
    s.args = vec!["a".into()];
    let done = c.submit(s);
    c.wait_state(done, JobState::Completed);
    let mut s = c.spec("true");
    s.hold = true;
    let held = c.submit(s);
    let list = |brief, include_finished| {
        c.client()
            .jobs(&Request::List(ListRequest {
                brief,
                include_finished,
                ..Default::default()
            }))
            .unwrap()
    };
    let ids = |v: &[JobInfo]| v.iter().map(|j| j.id).collect::<Vec<_>>();
    assert_eq!(ids(&list(true, false)), vec![held]);
    let full = list(false, true);
    let brief = list(true, true);
    assert_eq!(ids(&full), vec![held, done]);
    assert_eq!(ids(&brief), vec![held, done]);
    let (f, b) = (&full[1], &brief[1]);
    assert_eq!((f.state, f.exit_code), (JobState::Completed, Some(0)));
    assert_eq!(
        (b.state, b.exit_code, b.end_time),
        (f.state, f.exit_code, f.end_time)
    );
    assert_eq!(f.args, vec!["a".to_string()]);
    assert!(!f.stdout.is_empty() && !f.work_dir.is_empty());
    assert!(b.args.is_empty() && b.stdout.is_empty() && b.work_dir.is_empty());
    // 500 jobs to a frame: 10,001 make twenty-one.
    let mut client = c.client();
    for _ in 0..10_000 {
        let mut s = c.spec("true");
        s.hold = true;
        submit_on(&mut client, s);
    }
    let all = ids(&list(true, false));
    assert_eq!(all.len(), 10_001);
    assert!(all.windows(2).all(|w| w[0] < w[1]), "queue order");
    assert_eq!(all[0], held);
}

/// The real binary: refuses a bad config with one line, reconfigures on SIGHUP, stops on
/// SIGTERM leaving its state behind.
mod binary {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn bad_config_is_refused_with_file_key_and_reason() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.toml");
        std::fs::write(
            &file,
            "[[pool]]\nname = \"debug\"\nnodes = 0\n[policy]\nname = \"cbf\"\n",
        )
        .unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_batchd"))
            .arg("--config")
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err.trim(),
            format!(
                "batchd: {}: key `pool[0].nodes`: pool `debug` has zero nodes",
                file.display()
            )
        );
    }

    /// A policy that is not found, or a parameter it refuses, is a fault of the configuration
    /// like any other: the same exit status 2, under its own key, with `--print-config` as at
    /// a start (it prints only a configuration batchd would start on).
    #[test]
    fn a_bad_policy_is_a_config_error_at_start_and_in_print_config() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("s.sock");
        let state = dir.path().join("state");
        for (policy, key, says) in [
            ("name = \"cbff\"\n", "policy.name", "did you mean `cbf`?"),
            (
                "name = \"cbf\"\n[policy.params]\nbogus = 1\n",
                "policy.params.bogus",
                "unknown parameter `bogus`",
            ),
        ] {
            let file = dir.path().join("bad.toml");
            std::fs::write(
                &file,
                format!(
                    "socket = {sock:?}\nstate_dir = {state:?}\n[[pool]]\nname = \"debug\"\nnodes = 2\n[policy]\n{policy}"
                ),
            )
            .unwrap();
            for print in [true, false] {
                let mut cmd = Command::new(env!("CARGO_BIN_EXE_batchd"));
                cmd.arg("--config").arg(&file);
                if print {
                    cmd.arg("--print-config");
                }
                let out = cmd.output().unwrap();
                let err = String::from_utf8_lossy(&out.stderr);
                assert_eq!(out.status.code(), Some(2), "{policy} {print}: {err}");
                let line = err.lines().last().unwrap_or_default();
                assert!(
                    line.starts_with(&format!("batchd: {}: key `{key}`: ", file.display()))
                        && line.contains(says),
                    "{err}"
                );
                assert!(out.stdout.is_empty());
            }
        }
    }

    #[test]
    fn sighup_reconfigures_and_sigterm_stops() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("batchd.toml");
        let mut cfg = config(dir.path());
        std::fs::write(&file, cfg.to_toml()).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_batchd"))
            .arg("--config")
            .arg(&file)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let sock = cfg.socket.clone().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut client = loop {
            if let Ok(c) = Client::connect(&sock) {
                break c;
            }
            assert!(Instant::now() < deadline, "batchd never listened");
            std::thread::sleep(Duration::from_millis(20));
        };
        let policy =
            |c: &mut Client| match c.request(&Request::Version(Default::default())).unwrap() {
                Response::Version(v) => v.policy,
                other => panic!("{other:?}"),
            };
        assert_eq!(policy(&mut client), "cbf");
        cfg.policy.name = "fcfs".into();
        std::fs::write(&file, cfg.to_toml()).unwrap();
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while policy(&mut client) != "fcfs" {
            assert!(
                Instant::now() < deadline,
                "SIGHUP did not switch the policy"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let status = child.wait().unwrap();
        assert!(status.success(), "{status}");
        assert!(!sock.exists(), "the socket is removed at a clean stop");
        assert!(dir.path().join("state/batchd.sqlite").exists());
    }
}

#[test]
fn evolving_and_moldable_jobs_run_under_the_default_policy() {
    let c = Cluster::new();
    let mut e = c.spec("echo $ESCHED_NNODES");
    e.shape = batch_proto::JobShape::Evolving {
        steps: vec![
            batch_proto::Step::new(200, 2),
            batch_proto::Step::new(5_000, 4),
        ],
    };
    let mut m = c.spec("echo $ESCHED_NNODES");
    m.shape = batch_proto::JobShape::Moldable {
        configs: vec![
            batch_proto::MoldConfig {
                nodes: 3,
                walltime: 5_000,
            },
            batch_proto::MoldConfig {
                nodes: 6,
                walltime: 3_000,
            },
        ],
        model: None,
        weight: None,
    };
    let (e, m) = (c.submit(e), c.submit(m));
    let rigid = c.submit(c.spec("true"));
    for id in [e, m, rigid] {
        c.wait_state(id, JobState::Completed);
    }
    // An evolving job holds its largest step for its whole run.
    assert_eq!(c.show(e).nodes, 4);
    let n: u32 = std::fs::read_to_string(c.path(&format!("slurm-{m}.out")))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(n == 3 || n == 6, "{n}");
}

/// At each change of its nodes an evolving job's own process gets `[evolving] signal`
/// (WINCH), after its node file is rewritten.
#[test]
fn an_evolving_job_is_signalled_when_its_nodes_change() {
    let mut c = Cluster::new();
    c.stop();
    c.config.policy.name = "evolving".into();
    c.boot();
    let mut spec = c.spec(
        "trap 'wc -l < \"$ESCHED_NODEFILE\" >> winch.log' WINCH\n\
         i=0; while [ $i -lt 60 ]; do sleep 0.1; i=$((i+1)); done",
    );
    spec.shape = batch_proto::JobShape::Evolving {
        steps: vec![
            batch_proto::Step::new(1_000, 1),
            batch_proto::Step::new(5_000, 3),
        ],
    };
    let id = c.submit(spec);
    c.wait_state(id, JobState::Running);
    let log = c.path("winch.log");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&log)
        .unwrap_or_default()
        .trim()
        .is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "the job was never told its nodes changed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let said = std::fs::read_to_string(&log).unwrap();
    assert_eq!(said.lines().next().map(str::trim), Some("3"), "{said}");
    c.cancel(vec![id], None);
}

#[test]
fn an_evolving_job_keeps_its_nodes_order_and_choice_across_a_restart() {
    use batch_proto::{ReleaseNodesRequest, StepPhase};
    let mut c = Cluster::new();
    c.stop();
    c.config.policy.name = "evolving".into();
    c.boot();
    // The last step is long enough for a restart under load to come while it runs.
    let mut spec = c.spec("sleep 10");
    spec.shape = batch_proto::JobShape::Evolving {
        steps: vec![
            batch_proto::Step::new(1_000, 1),
            batch_proto::Step::new(3_000, 3),
            batch_proto::Step::new(8_000, 1),
        ],
    };
    let id = c.submit(spec);
    let j = c.wait_for(id, "in step 2", |j| {
        j.step.as_ref().is_some_and(|s| s.index == 2)
    });
    assert_eq!(j.node_list.as_deref(), Some("debug[001-003]"));
    // The default release notice is longer than the step: it is told at once.
    let st = c.wait_for(id, "releasing", |j| {
        j.step
            .as_ref()
            .is_some_and(|s| s.phase == StepPhase::Releasing)
    });
    assert_eq!(st.step.and_then(|s| s.next_nodes), Some(1));
    let release = |nodes: &str| {
        c.client()
            .request(&Request::ReleaseNodes(ReleaseNodesRequest {
                job: id,
                nodes: nodes.into(),
            }))
            .map_err(|e| e.to_string())
    };
    // Not its node; wrong count: refused, naming why.
    let e = release("debug002,debug004").unwrap_err();
    assert!(e.contains("debug004 is not a node of job"), "{e}");
    let e = release("debug001").unwrap_err();
    assert!(e.contains("must free 2"), "{e}");
    // It keeps its third node, not the first the default would keep.
    match release("debug[001-002]") {
        Ok(Response::NodesReleased(r)) => assert_eq!((r.job, r.next_step), (id, 3)),
        other => panic!("{other:?}"),
    }
    c.stop();
    c.boot();
    let j = c.wait_for(id, "in step 3", |j| {
        j.step.as_ref().is_some_and(|s| s.index == 3)
    });
    assert_eq!(j.node_list.as_deref(), Some("debug003"));
    assert_eq!(j.nodes, 1);
    let done = c.wait_state(id, JobState::Completed);
    assert_eq!(done.node_list.as_deref(), Some("debug003"));
}

/// One daemon per state directory, bounded clients, private state, escaped logs. (In a
/// subdirectory: cargo would build a file beside this one as a test binary of its own.)
#[path = "batchd/hardening.rs"]
mod hardening;

/// Many or hostile clients: the log, launcher sessions, other users' connections.
#[path = "batchd/clients.rs"]
mod clients;

/// Restarts that keep every running job and claim, and leave no process behind.
#[path = "batchd/restart.rs"]
mod restart;

/// Requests over the protocol's bounds, forged and malformed submissions.
#[path = "batchd/requests.rs"]
mod requests;
