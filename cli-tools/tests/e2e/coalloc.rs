//! Co-allocated jobs under the RPP on a two-pool batchd: placement over both pools
//! with claimed (reserved) nodes, components started together with their node lists, and at a
//! start deadline a local job preempted (GP) or the global job failed (LP).

use batch_proto::JobState;

use super::harness::Cluster;

/// Pools `debug` and `remote` of 4 nodes each under the RPP with `priority`.
fn two_pools(priority: &str) -> Cluster {
    Cluster::start_with(
        4,
        "rpp",
        &format!(
            "\n[policy.params]\npriority = {priority:?}\n\n[[pool]]\nname = \"remote\"\nnodes = 4\n"
        ),
    )
}

/// A script each component runs: one line per component into its own file, with the instant
/// it started (ms) and what it was told.
const COMPONENT: &str = "#!/bin/sh\n\
    f=comp-$ESCHED_JOB_ID-$ESCHED_COMPONENT.txt\n\
    echo \"$(date +%s%3N) $ESCHED_POOL $ESCHED_NODELIST $ESCHED_JOB_NODELIST $ESCHED_NUM_COMPONENTS $ESCHED_COMPONENT_1_NODELIST\" > $f.tmp\n\
    mv $f.tmp $f\n";

fn component_line(c: &Cluster, job: u64, i: usize) -> Vec<String> {
    let p = c.work.join(format!("comp-{job}-{i}.txt"));
    c.wait_until(&format!("component {i} of job {job} ran"), || p.exists());
    std::fs::read_to_string(&p)
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_global_job_is_claimed_then_started_on_both_pools_and_gp_preempts_local_jobs() {
    let c = two_pools("GP");
    c.script("comp.sh", COMPONENT);

    // Nothing else runs: the first try (at S + 0.7 (D - S)) places the components by Worst
    // Fit, one per pool, and claims their nodes until the deadline (1.8 s for the checks of
    // the claim below).
    let g = c.submit(&[
        "--components",
        "3,3",
        "--deadline",
        "+6s",
        "-t",
        "1",
        "comp.sh",
    ]);
    let j = c.wait_job(g, "reserved", |j| {
        j.reason == Some(batch_proto::PendingReason::Reserved)
    });
    assert_eq!(j.state, JobState::Pending);
    let nodes = c.ok("einfo", &["-N", "--noheader"]);
    let reserved: Vec<&str> = nodes.lines().filter(|l| l.contains(" resv ")).collect();
    assert_eq!(reserved.len(), 6, "{nodes}");
    assert!(c.ok("equeue", &[]).contains("Reserved"));
    let submitted = c.queue(&["-j", &g.to_string()])[0].submit_time;
    let j = c.wait_job(g, "ended", |j| j.state.is_finished());
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    // At its deadline, not at the claim (4.2 s): esubmit read `+6s` a moment before batchd
    // stamped the submission.
    assert!(j.start_time.unwrap() >= submitted + 5_000, "{j:?}");
    assert_eq!(j.pool.as_deref(), Some("debug,remote"));
    let a = component_line(&c, g, 0);
    let b = component_line(&c, g, 1);
    assert_eq!(&a[1..3], ["debug", "debug[001-003]"], "{a:?}");
    assert_eq!(&b[1..3], ["remote", "remote[001-003]"], "{b:?}");
    // Both know the whole job and every component.
    assert_eq!(a[3], b[3]);
    assert_eq!(&a[4..], ["2", "remote[001-003]"]);
    let (ta, tb): (i64, i64) = (a[0].parse().unwrap(), b[0].parse().unwrap());
    assert!((ta - tb).abs() < 1_000, "components started {ta} and {tb}");

    // Local jobs fill half of each pool; the next global job cannot be placed before its
    // deadline, and at the deadline GP kills them: one ends PREEMPTED, the other (submitted
    // with --requeue) goes back to the queue with its id.
    let l1 = c.submit(&["-p", "debug", "-N", "2", "-t", "5", "--wrap", "sleep 60"]);
    let l2 = c.submit(&[
        "-p",
        "remote",
        "-N",
        "2",
        "-t",
        "5",
        "--requeue",
        "--wrap",
        "sleep 60",
    ]);
    c.wait_state(l1, JobState::Running);
    c.wait_state(l2, JobState::Running);
    let g2 = c.submit(&[
        "--components",
        "3,3",
        "--deadline",
        "+2s",
        "-t",
        "1",
        "comp.sh",
    ]);
    let j = c.wait_state(l1, JobState::Preempted);
    let why = j.detail.clone().unwrap_or_default();
    assert!(
        why.contains("preempted") && why.contains(&format!("job {g2}")),
        "{why}"
    );
    let acct = c.ok("eacct", &["-j", &l1.to_string()]);
    assert!(
        acct.contains("PREEMPTED") && acct.contains("preempted by policy rpp"),
        "{acct}"
    );
    let show = c.ok("econtrol", &["show", "job", &l1.to_string()]);
    assert!(
        show.contains("JobState=PREEMPTED") && show.contains("preempted"),
        "{show}"
    );
    let j = c.wait_job(l2, "requeued", |j| {
        j.detail
            .as_deref()
            .is_some_and(|d| d.starts_with("requeued"))
    });
    assert!(!j.state.is_finished(), "{j:?}");
    let j = c.wait_job(g2, "ended", |j| j.state.is_finished());
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    // Once the global job is gone, the requeued job runs again under its own id.
    c.wait_state(l2, JobState::Running);
}

#[test]
fn under_lp_the_same_global_job_fails_with_reason_deadline() {
    let c = two_pools("LP");
    c.script("comp.sh", COMPONENT);
    let l = c.submit(&["-p", "debug", "-N", "2", "-t", "5", "--wrap", "sleep 60"]);
    c.wait_state(l, JobState::Running);
    let g = c.submit(&[
        "--components",
        "3,3",
        "--deadline",
        "+1s",
        "-t",
        "1",
        "comp.sh",
    ]);
    let j = c.wait_state(g, JobState::Failed);
    assert!(
        j.detail.as_deref().unwrap_or("").starts_with("Deadline"),
        "{j:?}"
    );
    assert!(j.start_time.is_none());
    let show = c.ok("econtrol", &["show", "job", &g.to_string()]);
    assert!(
        show.contains("JobState=FAILED") && show.contains("Deadline"),
        "{show}"
    );
    // The local job was left alone.
    assert_eq!(c.job(l).map(|j| j.state), Some(JobState::Running));
}

#[test]
fn bad_global_submissions_are_refused_with_one_line() {
    let c = two_pools("GP");
    for (args, says) in [
        (vec!["--components", "2,2", "--wrap", "true"], "--deadline"),
        (
            vec![
                "--components",
                "2,0",
                "--deadline",
                "+1min",
                "--wrap",
                "true",
            ],
            "components",
        ),
        (
            vec![
                "--components",
                "2",
                "--deadline",
                "now-1minute",
                "--wrap",
                "true",
            ],
            "deadline",
        ),
        (
            vec![
                "--components",
                "2",
                "-p",
                "debug",
                "--deadline",
                "+1min",
                "--wrap",
                "true",
            ],
            "-p",
        ),
    ] {
        let out = c.run("esubmit", &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // --deadline without --components is Slurm's end-by deadline: accepted.
    c.ok("esubmit", &["--deadline", "+1min", "--wrap", "true"]);
}

/// A policy that cannot co-allocate (cbf packs the components into one pool) refuses a job
/// whose components fit no single pool: esubmit says why and nothing is queued, as sbatch
/// refuses a job no partition can hold ("Requested node configuration is not available"),
/// rather than acknowledging it and cancelling it a moment later. One that fits is queued.
#[test]
fn a_rigid_policy_refuses_at_submission_a_co_allocated_job_it_cannot_place() {
    let c = Cluster::start_with(4, "cbf", "\n[[pool]]\nname = \"remote\"\nnodes = 4\n");
    let out = c.run(
        "esubmit",
        &[
            "--components",
            "3,3",
            "--deadline",
            "+10min",
            "--wrap",
            "true",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("refused by policy cbf") && err.contains("largest pool has 4"),
        "{err}"
    );
    let all = c.ok("equeue", &["-h", "-t", "all"]);
    assert!(all.trim().is_empty(), "{all}");
    let ok = c.ok(
        "esubmit",
        &[
            "--parsable",
            "--components",
            "2,2",
            "--deadline",
            "+10min",
            "--wrap",
            "true",
        ],
    );
    let id: u64 = ok.trim().parse().unwrap();
    c.wait_state(id, JobState::Completed);
}
