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

/// A client timeout that is not a number of seconds is refused in one line, not ignored (the
/// user would wait the default minute believing they had asked for less); an empty one is
/// unset, as an empty Slurm variable is.
#[test]
fn a_bad_esched_timeout_is_refused_not_ignored() {
    let c = Cluster::start(1, "fcfs");
    let out = c
        .tool("equeue")
        .env("ESCHED_TIMEOUT", "abc")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(
        err.trim(),
        "equeue: error: invalid ESCHED_TIMEOUT 'abc': expected a positive number of seconds"
    );
    for ok in ["", "2.5"] {
        let out = c.tool("equeue").env("ESCHED_TIMEOUT", ok).output().unwrap();
        assert!(
            out.status.success(),
            "{ok:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
