//! A job's life: submit, run, end COMPLETED / FAILED / TIMEOUT; what the listing tools show.

use batch_proto::{JobState, PendingReason};

use crate::harness::{texts, Cluster};

#[test]
fn submit_run_complete_with_output_and_exit_code() {
    let c = Cluster::start(2, "cbf");
    c.script(
        "hello.sh",
        "#!/bin/sh\n#ESUB -J hello\n#ESUB -N 1\necho \"hello from $ESCHED_JOB_ID in $ESCHED_POOL\"\n",
    );
    let out = c.ok("esubmit", &["hello.sh"]);
    let id: u64 = out
        .trim()
        .strip_prefix("Submitted batch job ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("esubmit printed {out:?}"));
    let j = c.wait_state(id, JobState::Completed);
    assert_eq!((j.exit_code, j.signal.unwrap_or(0)), (Some(0), 0));
    assert_eq!(j.name, "hello");
    let text =
        std::fs::read_to_string(c.work.join(format!("slurm-{id}.out"))).expect("output file");
    assert!(
        text.contains(&format!("hello from {id} in debug")),
        "{text}"
    );
    let acct = c.ok("eacct", &["-j", &id.to_string()]);
    let row = acct.lines().nth(2).unwrap_or_default();
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cols[..5],
        [
            id.to_string().as_str(),
            "hello",
            "debug",
            "COMPLETED",
            "0:0"
        ],
        "{acct}"
    );
    assert!(c.queue(&[]).is_empty());
}

#[test]
fn failing_script_ends_failed_with_its_exit_code() {
    let c = Cluster::start(1, "cbf");
    let id = c.submit(&["-J", "bad", "--wrap", "echo about to fail; exit 3"]);
    let j = c.wait_state(id, JobState::Failed);
    assert_eq!(j.exit_code, Some(3));
    let acct = c.ok("eacct", &["-P", "-n", "-j", &id.to_string()]);
    assert!(
        acct.starts_with(&format!("{id}|bad|debug|FAILED|3:0|")),
        "{acct}"
    );
}

#[test]
fn job_past_its_walltime_ends_timeout() {
    let c = Cluster::start(1, "cbf");
    // The job ignores SIGTERM so the grace period and SIGKILL are exercised too.
    c.script(
        "long.sh",
        "#!/bin/sh\ntrap '' TERM\necho started\nsleep 30\necho never\n",
    );
    let id = c.submit(&["-t", "1s", "-o", "long-%j.log", "long.sh"]);
    let j = c.wait_state(id, JobState::Timeout);
    let ran = j
        .end_time
        .unwrap_or(0)
        .saturating_sub(j.start_time.unwrap_or(0));
    assert!(ran >= 1_000, "ended after {ran} ms, before its limit");
    let log = std::fs::read_to_string(c.work.join(format!("long-{id}.log"))).expect("output");
    assert!(log.contains("started") && !log.contains("never"), "{log}");
    assert!(
        log.to_ascii_lowercase().contains("time limit"),
        "no time-limit line in: {log}"
    );
    let acct = c.ok("eacct", &["-P", "-n", "-j", &id.to_string()]);
    assert!(acct.contains("|TIMEOUT|"), "{acct}");
}

#[test]
fn pending_reasons_listing_tools_and_test_only() {
    let c = Cluster::start(1, "cbf");
    let running = c.submit(&["-J", "first", "--wrap", "sleep 30"]);
    c.wait_state(running, JobState::Running);
    let dep = c.submit(&[
        "-J",
        "second",
        "--dependency",
        &format!("afterok:{running}"),
        "--wrap",
        "true",
    ]);
    let held = c.submit(&["-H", "--wrap", "true"]);
    let later = c.submit(&["--begin", "now+1hour", "--wrap", "true"]);
    let waiting = c.submit(&["-t", "5", "--wrap", "true"]);

    let reason = |id: u64| c.job(id).and_then(|j| j.reason);
    c.wait_until("pending reasons", || {
        reason(dep) == Some(PendingReason::Dependency)
            && reason(held) == Some(PendingReason::Held)
            && reason(later) == Some(PendingReason::BeginTime)
            && matches!(
                reason(waiting),
                Some(PendingReason::Resources | PendingReason::Priority)
            )
            // A reason needs no plan; `--start` below does.
            && c.job(waiting).is_some_and(|j| j.expected_start.is_some())
    });

    let table = c.ok("equeue", &[]);
    let header = table.lines().next().unwrap_or_default();
    // squeue 22.05's default columns, NODELIST(REASON) eighth.
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        [
            "JOBID",
            "PARTITION",
            "NAME",
            "USER",
            "ST",
            "TIME",
            "NODES",
            "NODELIST(REASON)"
        ]
    );
    for (id, what) in [
        (dep, "(Dependency)"),
        (held, "(Held)"),
        (later, "(BeginTime)"),
    ] {
        let line = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&id.to_string()));
        assert!(
            line.is_some_and(|l| l.contains(" PD ") && l.ends_with(what)),
            "{id} {what}:\n{table}"
        );
    }
    let run_line = table
        .lines()
        .find(|l| l.trim_start().starts_with(&running.to_string()))
        .unwrap_or_default();
    assert!(
        run_line.contains(" R ") && run_line.contains("debug001"),
        "{table}"
    );

    // --start: the waiting job has an expected start (after the running one's limit).
    let start = c.ok("equeue", &["--start", "-j", &waiting.to_string()]);
    assert!(
        start
            .lines()
            .next()
            .unwrap_or_default()
            .contains("START_TIME"),
        "{start}"
    );
    assert!(
        !start.lines().nth(1).unwrap_or_default().contains("N/A"),
        "{start}"
    );

    // Filters and formats.
    let only = c.ok("equeue", &["--noheader", "-t", "R", "-o", "%i|%t|%j"]);
    assert_eq!(only.trim(), format!("{running}|R|first"));
    let info = c.ok("einfo", &[]);
    assert!(
        info.lines()
            .any(|l| l.starts_with("debug") && l.contains("alloc") && l.ends_with("debug001")),
        "{info}"
    );
    let show = c.ok("econtrol", &["show", "job", &held.to_string()]);
    assert!(
        show.starts_with(&format!("JobId={held} "))
            && show.contains("JobState=PENDING Reason=Held"),
        "{show}"
    );

    // --test-only submits nothing.
    let before = c.queue(&[]).len();
    let o = c.run("esubmit", &["--test-only", "--wrap", "true"]);
    let (_, err) = texts(&o);
    assert!(
        o.status.success() && err.contains("esubmit: Job would"),
        "{err}"
    );
    assert_eq!(c.queue(&[]).len(), before);

    // Release the held job: it waits for nodes now, not for the user.
    c.ok("econtrol", &["release", &held.to_string()]);
    c.wait_until("released job loses Held", || {
        reason(held) != Some(PendingReason::Held)
    });

    // A bad option value is one clear line and a non-zero exit.
    let o = c.run("esubmit", &["-t", "soon", "--wrap", "true"]);
    let (_, err) = texts(&o);
    assert!(!o.status.success());
    assert_eq!(
        err.trim(),
        "esubmit: error: invalid time limit 'soon': 'soon' is not a number"
    );
}
