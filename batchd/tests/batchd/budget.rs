//! A policy call's time budget, with real batchd processes and `sched-abi/fixtures/test-sleep` (fcfs that
//! sleeps `sleep_ms` in `plan` while a job of `sleep_on_nodes` nodes is pending): a stalling
//! call is abandoned at the budget, logged by name, counted in the stats, and the daemon goes
//! on with the last valid plan; `--test-only` and reconfigure do not wait for it, and neither
//! does a shutdown.

use std::time::{Duration, Instant};

use batch_proto::{
    DaemonStats, ErrorKind, JobState, ListRequest, ReconfigureRequest, Request, Response,
    ShowJobRequest, StatsRequest, SubmitRequest,
};

use super::containment::Daemon;
use super::submit_on;

/// The node count that makes test-sleep stall.
const STALLS: i64 = 3;

fn sleepy(sleep_ms: i64, budget_ms: u64) -> Daemon {
    Daemon::start_with(
        "test-sleep",
        &[("sleep_ms", sleep_ms), ("sleep_on_nodes", STALLS)],
        |c| c.policy.time_budget_ms = budget_ms,
    )
}

fn stats(d: &Daemon) -> DaemonStats {
    match d
        .client()
        .request(&Request::Stats(StatsRequest {}))
        .unwrap()
    {
        Response::Stats(s) => s,
        other => panic!("{other:?}"),
    }
}

/// Waits (up to 20 s) until the stats satisfy `done`.
fn wait_stats(d: &Daemon, what: &str, done: impl Fn(&DaemonStats) -> bool) -> DaemonStats {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let s = stats(d);
        if done(&s) {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "never {what}: {s:?}\nlog:\n{}",
            d.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let out = f();
    (out, t.elapsed())
}

fn cancel(d: &Daemon, id: u64) {
    d.client()
        .request(&Request::Cancel(batch_proto::CancelRequest {
            filter: batch_proto::JobFilter {
                ids: vec![id],
                ..Default::default()
            },
            signal: None,
            scope: Default::default(),
        }))
        .unwrap();
}

/// A generous bound for what must not wait for a stuck call (the budget here is 300 ms; a
/// loaded 2-core machine adds its own delays).
const PROMPT: Duration = Duration::from_secs(2);

#[test]
fn a_stalling_call_is_abandoned_and_the_daemon_goes_on_with_the_last_valid_plan() {
    let d = sleepy(2_500, 300);
    // A runs 1 s of its 1.5 s limit; B (the whole pool) is planned at A's limit.
    let a = submit_on(&mut d.client(), d.spec("sleep 1", 8, 1_500));
    d.wait_state(a, JobState::Running);
    let b = d.submit("true", 8);
    let deadline = Instant::now() + Duration::from_secs(20);
    while d
        .client()
        .jobs(&Request::ShowJob(ShowJobRequest { id: b }))
        .unwrap()[0]
        .expected_start
        .is_none()
    {
        assert!(Instant::now() < deadline, "B never planned:\n{}", d.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    // From now on every call stalls 2.5 s, past the 300 ms budget.
    let stall = d.submit("true", STALLS as u32);
    wait_stats(&d, "past the budget", |s| s.call_past_budget);

    // Requests are answered meanwhile.
    let (jobs, took) = timed(|| {
        d.client()
            .jobs(&Request::List(ListRequest::default()))
            .unwrap()
    });
    assert!(jobs.len() >= 2 && took < PROMPT, "List took {took:?}");
    let (late, took) = timed(|| d.submit("true", 1));
    assert!(took < PROMPT, "Submit took {took:?}");

    // B starts from the plan made before the stall, when its start comes; the stalling job
    // and the late one were never in a valid plan.
    d.wait_state(b, JobState::Completed);
    assert_eq!(d.state(stall), JobState::Pending);
    assert_eq!(d.state(late), JobState::Pending);
    let log = d.log();
    assert!(
        log.contains("policy `test-sleep`: no plan within its time budget of 300 ms")
            && log.contains("keeping its last valid plan"),
        "{log}"
    );
    let s = stats(&d);
    assert!(s.policy_timeouts >= 1, "{s:?}");
    assert_eq!((s.policy.as_str(), s.time_budget_ms), ("test-sleep", 300));

    // Without the stalling job the policy plans again: the late job and a new one run.
    cancel(&d, stall);
    let next = d.submit("true", 1);
    d.wait_state(late, JobState::Completed);
    d.wait_state(next, JobState::Completed);
    let log = d.log();
    assert!(
        log.contains("the call abandoned at its time budget of 300 ms returned after")
            && log.contains("its plan is dropped"),
        "{log}"
    );
    let s = wait_stats(&d, "idle", |s| s.call_running_ms.is_none());
    assert!(
        !s.call_past_budget && s.longest_plan_ms >= Some(2_000.0),
        "{s:?}"
    );
}

#[test]
fn test_only_under_a_stalling_policy_is_refused_at_the_budget_and_capped() {
    let d = sleepy(3_000, 300);
    let test_only = |nodes: u32| {
        d.client()
            .send(&Request::Submit(SubmitRequest {
                spec: d.spec("true", nodes, 60_000),
                test_only: true,
            }))
            .unwrap()
    };
    // Four stalling plans: each answered at its budget, each keeping its slot for 3 s.
    for _ in 0..4 {
        let (r, took) = timed(|| test_only(STALLS as u32));
        let Response::Error(e) = r else {
            panic!("{r:?}")
        };
        assert_eq!(e.kind, ErrorKind::Busy);
        assert!(
            e.message
                .contains("policy `test-sleep` gave no plan within its time budget of 300 ms"),
            "{}",
            e.message
        );
        assert!(took < PROMPT, "--test-only took {took:?}");
    }
    // A fifth is refused at once, whatever it asks.
    let (r, took) = timed(|| test_only(1));
    let Response::Error(e) = r else {
        panic!("{r:?}")
    };
    assert!(
        e.kind == ErrorKind::Busy && e.message.contains("--test-only plans are already running"),
        "{e:?}"
    );
    assert!(took < PROMPT, "the refusal took {took:?}");
    assert_eq!(stats(&d).test_only_timeouts, 4);
    assert!(d
        .log()
        .contains("no --test-only plan within its time budget of 300 ms"));
    // Once the stuck plans return, their slots are free again.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match test_only(1) {
            Response::TestOnly(t) => {
                assert!(t.expected_start.is_some());
                break;
            }
            Response::Error(e) if e.kind == ErrorKind::Busy => {}
            other => panic!("{other:?}"),
        }
        assert!(Instant::now() < deadline, "the slots never came back");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Nothing was queued.
    assert!(d
        .client()
        .jobs(&Request::List(ListRequest::default()))
        .unwrap()
        .is_empty());
}

#[test]
fn a_reconfigure_does_not_wait_for_a_stuck_call_and_the_new_policy_plans() {
    let d = sleepy(60_000, 300);
    let stall = d.submit("true", STALLS as u32);
    wait_stats(&d, "past the budget", |s| s.call_past_budget);
    let file = d.dir.path().join("batchd.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    let mut cfg = batchd::Config::parse(&text, "batchd.toml").unwrap();
    cfg.policy.name = "fcfs".into();
    cfg.policy.params.clear();
    cfg.policy.time_budget_ms = 700;
    std::fs::write(&file, cfg.to_toml()).unwrap();
    let (r, took) = timed(|| {
        d.client()
            .request(&Request::Reconfigure(ReconfigureRequest {}))
            .unwrap()
    });
    assert!(matches!(r, Response::Reconfigured(_)), "{r:?}");
    assert!(took < PROMPT, "the reconfigure took {took:?}");
    // The new policy plans the job the old one stalled on; its counters start afresh.
    d.wait_state(stall, JobState::Completed);
    let s = stats(&d);
    assert_eq!(
        (s.policy.as_str(), s.policy_timeouts, s.time_budget_ms),
        ("fcfs", 0, 700),
        "{s:?}"
    );
}

#[test]
fn a_stuck_call_does_not_keep_the_daemon_from_stopping() {
    let mut d = sleepy(60_000, 300);
    d.submit("true", STALLS as u32);
    wait_stats(&d, "past the budget", |s| s.call_past_budget);
    let pid = nix::unistd::Pid::from_raw(d.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while d.child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "batchd did not stop:\n{}",
            d.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(d.log().contains("batchd stopping"), "{}", d.log());
}
