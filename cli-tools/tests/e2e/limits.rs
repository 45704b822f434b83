//! The bounds of a job's numbers (batch-proto's `JobSpec::check`) through the real tools and
//! daemon: absurd values are one line and exit 1; `-t UNLIMITED` is the pool's `max_time`.

use crate::harness::{texts, Cluster};

/// One error line and exit status 1.
fn refused(c: &Cluster, tool: &str, args: &[&str]) -> String {
    let o = c.run(tool, args);
    let (_, err) = texts(&o);
    assert_eq!(o.status.code(), Some(1), "{tool} {args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    err.trim().to_string()
}

#[test]
fn absurd_limits_are_refused_and_unlimited_is_the_pools_max_time() {
    let c = Cluster::start_with(
        2,
        "cbf",
        "\n[[pool]]\nname = \"short\"\nnodes = 2\nmax_time = 1\n",
    );
    assert_eq!(
        refused(&c, "esubmit", &["-t", "99999999999999", "--wrap", "true"]),
        "esubmit: error: invalid time limit: 69444444444-10:39:00 is longer than the longest allowed, 365-00:00:00"
    );
    assert_eq!(
        refused(&c, "esubmit", &["--begin", "now+99999999999999", "--wrap", "true"]),
        "esubmit: error: invalid begin time: 1157407407 days ahead; at most 365 days ahead are accepted"
    );
    assert_eq!(
        refused(&c, "esubmit", &["-p", "short", "-t", "5", "--wrap", "true"]),
        "esubmit: error: invalid time limit: 00:05:00 is longer than the pool's max_time, 00:01:00"
    );
    let id = c
        .ok(
            "esubmit",
            &[
                "-p",
                "short",
                "-t",
                "UNLIMITED",
                "-H",
                "--parsable",
                "--wrap",
                "true",
            ],
        )
        .trim()
        .to_string();
    let limit = |id: &str| {
        c.ok("equeue", &["--noheader", "-j", id, "-o", "%l"])
            .trim()
            .to_string()
    };
    assert_eq!(limit(&id), "1:00");
    let err = refused(
        &c,
        "econtrol",
        &["update", &format!("JobId={id}"), "TimeLimit=2"],
    );
    assert!(
        err.contains("longer than the pool's max_time, 00:01:00"),
        "{err}"
    );
    // Without a pool of its own the job is bounded by the smallest max_time of all.
    let any = c
        .ok(
            "esubmit",
            &["-t", "UNLIMITED", "-H", "--parsable", "--wrap", "true"],
        )
        .trim()
        .to_string();
    assert_eq!(limit(&any), "1:00");
}
