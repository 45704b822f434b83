//! `eview` of an ordinary pending job (no launcher) under a policy that plans expected starts:
//! the view is computed from the latest plan when asked, per pool the nodes free over time
//! after the running jobs and the jobs ahead of it (CooRM's CAPs, Klein & Pérez HPCC 2011
//! §III-A).

use batch_proto::JobState;
use serde_json::Value;

use crate::harness::{refused, Cluster};

/// `eview JOBID --json`'s steps of pool `debug`, as `(from, to, free)`.
fn steps(c: &Cluster, job: u64) -> (u64, Vec<(u64, Option<u64>, u64)>) {
    let v: Value =
        serde_json::from_str(&c.ok("eview", &[&job.to_string(), "--json"])).expect("JSON");
    assert_eq!(v["job"], job);
    let pools = v["pools"].as_array().expect("pools");
    assert_eq!(pools.len(), 1, "{v}");
    assert_eq!(pools[0]["pool"], "debug");
    let steps = pools[0]["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| {
            (
                s["from"].as_u64().expect("from"),
                s["to"].as_u64(),
                s["free"].as_u64().expect("free"),
            )
        })
        .collect();
    (v["now"].as_u64().expect("now"), steps)
}

#[test]
fn eview_of_a_pending_job_under_cbf_shows_the_pool_after_the_jobs_ahead_of_it() {
    let c = Cluster::start(4, "cbf");
    let running = c.submit(&["-N", "3", "-t", "1", "--wrap", "sleep 60"]);
    let r = c.wait_state(running, JobState::Running);
    // Behind it: the whole pool for a minute, then two nodes for two minutes.
    let whole = c.submit(&["-N", "4", "-t", "1", "--wrap", "sleep 60"]);
    let two = c.submit(&["-N", "2", "-t", "2", "--wrap", "sleep 60"]);
    let j = c.wait_job(two, "planned", |j| j.expected_start.is_some());
    let ends = r.start_time.unwrap() + 60_000;

    // The first in the queue sees only the running job: one node free until its limit.
    let (now, s) = steps(&c, whole);
    assert_eq!(s, vec![(now, Some(ends), 1), (ends, None, 4)]);
    // The next one also sees the job ahead of it, at its planned start, for its limit.
    let (now, s) = steps(&c, two);
    assert_eq!(
        s,
        vec![
            (now, Some(ends), 1),
            (ends, Some(ends + 60_000), 0),
            (ends + 60_000, None, 4)
        ]
    );
    // Its expected start is the first instant its view frees its two nodes for its limit.
    assert_eq!(j.expected_start, Some(ends + 60_000));

    // The table: a line per step.
    let table = c.ok("eview", &[&two.to_string()]);
    assert_eq!(table.lines().count(), 4, "{table}");
    assert!(
        table.lines().last().unwrap().contains("infinite"),
        "{table}"
    );
    // A running job has no view.
    refused(
        &c,
        "eview",
        &[&running.to_string()],
        "views exist only while a job waits",
    );
    c.ok(
        "ecancel",
        &[&running.to_string(), &whole.to_string(), &two.to_string()],
    );
}
