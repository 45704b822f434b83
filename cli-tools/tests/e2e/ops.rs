//! What an operator relies on: `econtrol show stats` and the Prometheus endpoint counting what
//! the daemon did, JSON logs, and a batchd installed alone (no policy library beside it)
//! running every stock policy.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use batch_proto::{Client, JobState, ListRequest, Request};

use super::harness::{bin_dir, ensure_built, Cluster, POLL, TIMEOUT};

/// A TCP port free now on the loopback (the kernel's pick, released for batchd to take).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `GET path` on `port`: the status line and the body.
fn http_get(port: u16, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the metrics port");
    s.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").expect("request");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("answer");
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}

/// The value of `Key=` in econtrol's `Key=Value` text.
fn key(text: &str, k: &str) -> String {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{k}=")))
        .unwrap_or_else(|| panic!("no {k}= in\n{text}"))
        .to_string()
}

/// The value of the sample line `name` in Prometheus text.
fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {name} in\n{text}"))
        .parse()
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn stats_and_metrics_count_what_the_daemon_did_and_logs_are_json() {
    let port = free_port();
    let c = Cluster::start_configured(
        2,
        "cbf",
        "log_format = \"json\"",
        &format!("\n[metrics]\nlisten = \"127.0.0.1:{port}\"\n"),
    );
    let ok = c.submit(&["-t", "1", "--wrap", "true"]);
    let bad = c.submit(&["-t", "1", "--wrap", "exit 3"]);
    let held = c.submit(&["-H", "-t", "1", "--wrap", "true"]);
    c.wait_state(ok, JobState::Completed);
    c.wait_state(bad, JobState::Failed);
    c.ok("ecancel", &[&held.to_string()]);
    c.wait_state(held, JobState::Cancelled);

    let text = c.ok("econtrol", &["show", "stats"]);
    for (k, v) in [
        ("JobsSubmitted", "3"),
        ("JobsStarted", "2"),
        ("JobsCompleted", "1"),
        ("JobsFailed", "1"),
        ("JobsCancelled", "1"),
        ("Policy", "cbf"),
    ] {
        assert_eq!(key(&text, k), v, "{k} in\n{text}");
    }
    let passes: u64 = key(&text, "Passes").parse().unwrap();
    assert!(passes >= 1, "{text}");
    assert_ne!(key(&text, "PassMsP50"), "(null)", "{text}");
    assert!(
        key(&text, "PolicyCallsTimed").parse::<u64>().unwrap() >= 1,
        "{text}"
    );
    // Three submissions, two starts, three ends: each a transaction at least.
    assert!(
        key(&text, "StoreCommits").parse::<u64>().unwrap() >= 6,
        "{text}"
    );
    // This econtrol's connection is open while the figures are taken.
    assert!(
        key(&text, "ConnectionsOpen").parse::<u64>().unwrap() >= 1,
        "{text}"
    );
    assert!(
        key(&text, "Connections").parse::<u64>().unwrap() >= 5,
        "{text}"
    );

    let json: serde_json::Value =
        serde_json::from_str(&c.ok("econtrol", &["show", "stats", "--json"])).expect("JSON");
    assert_eq!(json["jobs_submitted"], 3, "{json}");
    assert_eq!(json["jobs_failed"], 1, "{json}");
    assert!(json["passes"]["count"].as_u64() >= Some(1), "{json}");
    assert!(json["store_commit"]["p99_ms"].as_f64().is_some(), "{json}");

    let (status, body) = http_get(port, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    assert_eq!(sample(&body, "esched_jobs_submitted_total"), 3.0, "{body}");
    assert_eq!(sample(&body, "esched_jobs_started_total"), 2.0);
    assert_eq!(
        sample(&body, "esched_jobs_ended_total{outcome=\"completed\"}"),
        1.0
    );
    assert_eq!(
        sample(&body, "esched_jobs_ended_total{outcome=\"failed\"}"),
        1.0
    );
    assert_eq!(
        sample(&body, "esched_jobs_ended_total{outcome=\"cancelled\"}"),
        1.0
    );
    assert!(sample(&body, "esched_scheduling_pass_seconds_count") >= passes as f64);
    assert!(sample(&body, "esched_store_commit_seconds_count") >= 6.0);
    assert!(sample(&body, "esched_uptime_seconds") > 0.0);
    assert!(
        body.contains("# TYPE esched_policy_call_seconds summary"),
        "{body}"
    );
    assert_eq!(http_get(port, "/nowhere").0, "HTTP/1.1 404 Not Found");

    // Every line batchd logged is one JSON object; the start is among them.
    let log = c.log_text();
    let events: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e["fields"]["message"] == "batchd ready" && e["level"] == "INFO"),
        "{log}"
    );
    assert!(
        events.iter().any(|e| e["fields"]["message"] == "job ended"
            && e["fields"]["job"] == bad
            && e["fields"]["state"] == "FAILED"),
        "{log}"
    );
}

#[test]
fn a_metrics_address_in_use_stops_the_start() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port();
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("batchd.toml");
    std::fs::write(
        &config,
        format!(
            "{}\n[metrics]\nlisten = \"127.0.0.1:{port}\"\n",
            installed_config(dir.path(), "cbf")
        ),
    )
    .expect("config");
    let out = Command::new(ensure_built())
        .arg("--config")
        .arg(&config)
        .stdin(Stdio::null())
        .output()
        .expect("run batchd");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains(&format!("[metrics] listen = \"127.0.0.1:{port}\"")),
        "{err}"
    );
}

/// A config for a batchd installed on its own: no `plugin_dir`, so the loader looks beside
/// the executable only.
fn installed_config(dir: &Path, policy: &str) -> String {
    format!(
        "socket = {:?}\nstate_dir = {:?}\nsync = \"normal\"\n\n[[pool]]\nname = \"debug\"\n\
         nodes = 2\n\n[policy]\nname = {policy:?}\n",
        dir.join("batchd.sock"),
        dir.join("state"),
    )
}

#[test]
fn an_installed_batchd_runs_every_stock_policy_without_its_library() {
    let prefix = tempfile::tempdir().expect("temp dir");
    let bin = prefix.path().join("bin");
    std::fs::create_dir(&bin).expect("bin");
    let exe = bin.join("batchd");
    std::fs::copy(ensure_built(), &exe).expect("install batchd");
    for policy in esched_stock_names() {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("batchd.toml");
        std::fs::write(&config, installed_config(dir.path(), policy)).expect("config");
        let log = dir.path().join("batchd.log");
        let mut daemon = Stopped(spawn_copy(
            Command::new(&exe)
                .arg("--config")
                .arg(&config)
                .env("RUST_LOG", "info")
                .stdin(Stdio::null())
                .stderr(std::fs::File::create(&log).expect("log")),
        ));
        let socket = dir.path().join("batchd.sock");
        let log_text = || std::fs::read_to_string(&log).unwrap_or_default();
        let deadline = Instant::now() + TIMEOUT;
        let mut client = loop {
            if let Ok(c) = Client::connect(&socket) {
                break c;
            }
            if let Ok(Some(s)) = daemon.0.try_wait() {
                panic!("{policy}: batchd exited with {s}:\n{}", log_text());
            }
            assert!(
                Instant::now() < deadline,
                "{policy}: no socket\n{}",
                log_text()
            );
            std::thread::sleep(POLL);
        };
        let out = Command::new(bin_dir().join("esubmit"))
            .env("ESCHED_SOCKET", &socket)
            .current_dir(dir.path())
            // A pool named: the RPP places a local job only in the pool it names.
            .args(["-p", "debug", "-t", "1", "--wrap", "true"])
            .output()
            .expect("esubmit");
        assert!(out.status.success(), "{policy}: {out:?}\n{}", log_text());
        let state = loop {
            let jobs = client
                .jobs(&Request::List(ListRequest {
                    include_finished: true,
                    ..Default::default()
                }))
                .unwrap_or_else(|e| panic!("{policy}: {e}"));
            match jobs.first().map(|j| j.state) {
                Some(s) if s.is_finished() => break s,
                _ if Instant::now() > deadline => {
                    panic!("{policy}: the job did not end:\n{}", log_text())
                }
                _ => std::thread::sleep(POLL),
            }
        };
        drop(daemon);
        let log = log_text();
        assert_eq!(state, JobState::Completed, "{policy}:\n{log}");
        // Said once, at the policy's load.
        assert_eq!(
            log.matches("running the linked copy").count(),
            1,
            "{policy}:\n{log}"
        );
    }
}

/// A batchd stopped (SIGTERM, then waited for) when dropped, a failed assertion included.
struct Stopped(std::process::Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.0.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.0.wait();
    }
}

/// The stock policies' names, as batchd's fallback knows them.
fn esched_stock_names() -> Vec<&'static str> {
    vec![
        "fcfs",
        "easy",
        "cbf",
        "evolving",
        "bicriteria",
        "rpp",
        "coorm",
    ]
}

/// `cmd` started, its program having been copied just now: a child another test thread forked
/// while the copy was open for writing holds that descriptor until its own exec, and running
/// the copy meanwhile fails with ETXTBSY ("Text file busy"); it is retried for a while.
fn spawn_copy(cmd: &mut Command) -> std::process::Child {
    for _ in 0..200 {
        match cmd.spawn() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other.expect("start the installed batchd"),
        }
    }
    cmd.spawn().expect("start the installed batchd")
}
