//! The opt-in Prometheus endpoint (`[metrics] listen = "127.0.0.1:9464"`): the figures of
//! `econtrol show stats` in Prometheus' text exposition format (version 0.0.4) at `/metrics`.
//!
//! A minimal HTTP/1.x responder on the daemon's runtime: one request per connection
//! (`Connection: close`), a head of at most [`HEAD_MAX`] bytes read within [`READ_TIMEOUT`],
//! `GET` (or `HEAD`) only. Anyone who can reach the address reads the figures (counts and
//! timings, no job or user names): bind it to a loopback or an administration network.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use batch_proto::{DaemonStats, Timing};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::daemon::Daemon;

/// The most of a request's head read before it is refused.
pub const HEAD_MAX: usize = 8192;

/// How long a client has to send its request's head.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Answers scrapes on `listener` until the task is dropped.
pub async fn serve(d: Arc<Daemon>, listener: TcpListener) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(answer(Arc::clone(&d), stream));
            }
            Err(e) => {
                tracing::warn!("metrics: accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

async fn answer(d: Arc<Daemon>, mut stream: TcpStream) {
    let head = match tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream)).await {
        Ok(Some(h)) => h,
        // Too slow, too long or closed early: nothing worth answering.
        _ => return,
    };
    let (status, body) = route(&head, || {
        render(&crate::server::stats::figures(&d), crate::launch::now_ms())
    });
    let is_head = head.starts_with("HEAD ");
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        if status.starts_with("200") {
            "text/plain; version=0.0.4; charset=utf-8"
        } else {
            "text/plain; charset=utf-8"
        },
        body.len()
    );
    if !is_head {
        out.push_str(&body);
    }
    if let Err(e) = stream.write_all(out.as_bytes()).await {
        tracing::debug!("metrics: cannot answer: {e}");
    }
    let _ = stream.shutdown().await;
}

/// The request's head (up to its blank line), or none if the client closed first or sent more
/// than [`HEAD_MAX`] bytes without one.
async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.truncate(end);
            return Some(String::from_utf8_lossy(&buf).into_owned());
        }
        if buf.len() > HEAD_MAX {
            return None;
        }
    }
}

/// The status line and body for a request whose head is `head`; `metrics` renders the page.
fn route(head: &str, metrics: impl FnOnce() -> String) -> (&'static str, String) {
    let line = head.lines().next().unwrap_or("");
    let mut words = line.split(' ');
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    match (method, path) {
        ("GET" | "HEAD", "/metrics") => ("200 OK", metrics()),
        ("GET" | "HEAD", "/") => (
            "200 OK",
            "batchd: the figures are at /metrics\n".to_string(),
        ),
        ("GET" | "HEAD", _) => ("404 Not Found", "not found: try /metrics\n".to_string()),
        _ => (
            "405 Method Not Allowed",
            "only GET and HEAD are answered\n".to_string(),
        ),
    }
}

/// The figures in Prometheus' text format; durations in seconds, as Prometheus names them.
pub fn render(s: &DaemonStats, now: u64) -> String {
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, samples: &[(String, f64)]| {
        let _ = writeln!(out, "# HELP esched_{name} {help}");
        let _ = writeln!(out, "# TYPE esched_{name} {kind}");
        for (labels, v) in samples {
            let _ = writeln!(out, "esched_{name}{labels} {}", number(*v));
        }
    };
    let one = |v: u64| vec![(String::new(), v as f64)];
    metric(
        "uptime_seconds",
        "gauge",
        "Seconds since batchd started.",
        &[(String::new(), now.saturating_sub(s.started) as f64 / 1000.0)],
    );
    metric(
        "policy_info",
        "gauge",
        "The policy in force (its name as a label).",
        &[(format!("{{policy=\"{}\"}}", label(&s.policy)), 1.0)],
    );
    metric("jobs_pending", "gauge", "Pending jobs.", &one(s.pending));
    metric("jobs_running", "gauge", "Running jobs.", &one(s.running));
    metric(
        "jobs_submitted_total",
        "counter",
        "Jobs accepted (each task of an array counts).",
        &one(s.jobs_submitted),
    );
    metric(
        "jobs_started_total",
        "counter",
        "Runs started.",
        &one(s.jobs_started),
    );
    metric(
        "jobs_ended_total",
        "counter",
        "Jobs ended, by outcome (failed: every final state but COMPLETED and CANCELLED).",
        &[
            (
                "{outcome=\"completed\"}".to_string(),
                s.jobs_completed as f64,
            ),
            ("{outcome=\"failed\"}".to_string(), s.jobs_failed as f64),
            (
                "{outcome=\"cancelled\"}".to_string(),
                s.jobs_cancelled as f64,
            ),
        ],
    );
    metric(
        "policy_calls_total",
        "counter",
        "Plans asked of the policy in force since it came into force.",
        &one(s.policy_calls),
    );
    metric(
        "policy_failures_total",
        "counter",
        "Policy calls that failed since it came into force, by kind.",
        &[
            ("{kind=\"panic\"}".to_string(), s.policy_panics as f64),
            ("{kind=\"error\"}".to_string(), s.policy_errors as f64),
            ("{kind=\"refused\"}".to_string(), s.refused_plans as f64),
            ("{kind=\"timeout\"}".to_string(), s.policy_timeouts as f64),
        ],
    );
    metric(
        "scheduling_pass_seconds",
        "summary",
        "Scheduling passes, from the snapshot to the acts (quantiles of the last 1024).",
        &summary(&s.passes),
    );
    metric(
        "policy_call_seconds",
        "summary",
        "Policy calls as the scheduler waits for them (quantiles of the last 1024).",
        &summary(&s.policy_call),
    );
    metric(
        "store_commit_seconds",
        "summary",
        "Database transactions, BEGIN to COMMIT (quantiles of the last 1024).",
        &summary(&s.store_commit),
    );
    metric(
        "connections_total",
        "counter",
        "Client connections accepted.",
        &one(s.connections),
    );
    metric(
        "connections_open",
        "gauge",
        "Client connections open.",
        &one(s.connections_open),
    );
    out
}

/// A summary's samples: quantiles (NaN before the first sample, as Prometheus' own clients
/// write them), sum and count.
fn summary(t: &Timing) -> Vec<(String, f64)> {
    let s = |ms: Option<f64>| ms.map_or(f64::NAN, |v| v / 1000.0);
    vec![
        ("{quantile=\"0.5\"}".to_string(), s(t.p50_ms)),
        ("{quantile=\"0.9\"}".to_string(), s(t.p90_ms)),
        ("{quantile=\"0.99\"}".to_string(), s(t.p99_ms)),
        ("_sum".to_string(), t.total_ms / 1000.0),
        ("_count".to_string(), t.count as f64),
    ]
}

/// A sample value as Prometheus reads it: to the microsecond (the timings' resolution), without
/// the binary fraction's noise (`0.000291`, not `0.00029099999999999997`).
fn number(v: f64) -> String {
    if v.is_nan() {
        return "NaN".to_string();
    }
    let fixed = format!("{v:.6}");
    fixed
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_string()
}

/// A label value escaped as the exposition format asks (backslash, quote, newline).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_render_as_prometheus_text() {
        let s = DaemonStats {
            started: 1_000,
            policy: "c\"bf".into(),
            pending: 2,
            jobs_submitted: 5,
            jobs_completed: 3,
            jobs_failed: 1,
            passes: Timing {
                count: 4,
                total_ms: 10.0,
                p50_ms: Some(2.0),
                p90_ms: Some(3.0),
                p99_ms: Some(4.0),
                max_ms: Some(4.0),
            },
            ..Default::default()
        };
        let text = render(&s, 3_500);
        assert_eq!(number(0.291 / 1000.0), "0.000291");
        for line in [
            "esched_uptime_seconds 2.5",
            "esched_policy_info{policy=\"c\\\"bf\"} 1",
            "esched_jobs_pending 2",
            "esched_jobs_submitted_total 5",
            "esched_jobs_ended_total{outcome=\"completed\"} 3",
            "esched_jobs_ended_total{outcome=\"failed\"} 1",
            "# TYPE esched_scheduling_pass_seconds summary",
            "esched_scheduling_pass_seconds{quantile=\"0.5\"} 0.002",
            "esched_scheduling_pass_seconds_sum 0.01",
            "esched_scheduling_pass_seconds_count 4",
            "esched_store_commit_seconds{quantile=\"0.99\"} NaN",
            "esched_store_commit_seconds_count 0",
            "esched_connections_open 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
        // Every sample line is `name[{labels}] value`, every family has HELP and TYPE.
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let (name, value) = l.rsplit_once(' ').unwrap();
            assert!(name.starts_with("esched_"), "{l}");
            assert!(value == "NaN" || value.parse::<f64>().is_ok(), "{l}");
        }
        assert_eq!(
            text.matches("# HELP ").count(),
            text.matches("# TYPE ").count()
        );
    }

    #[test]
    fn only_get_of_metrics_is_served() {
        let page = || "page".to_string();
        assert_eq!(
            route("GET /metrics HTTP/1.1\r\nHost: x", page),
            ("200 OK", "page".to_string())
        );
        assert_eq!(route("GET /metrics?x=1 HTTP/1.0", page).0, "200 OK");
        assert_eq!(route("GET /other HTTP/1.1", page).0, "404 Not Found");
        assert_eq!(
            route("POST /metrics HTTP/1.1", page).0,
            "405 Method Not Allowed"
        );
        assert_eq!(route("", page).0, "405 Method Not Allowed");
    }
}
