//! Node states on a pool of virtual nodes, as scontrol and sinfo show them: DRAIN keeps new
//! jobs off a node while its job finishes, DOWN ends the job on it NODE_FAIL (or requeues a
//! job submitted with `--requeue`), RESUME brings the node back, and every state outlives a
//! restart of batchd.

use batch_proto::JobState;

use crate::harness::{refused, Cluster};

fn node_of(c: &Cluster, id: u64) -> String {
    c.wait_state(id, JobState::Running)
        .node_list
        .expect("a running job has nodes")
}

#[test]
fn drain_keeps_new_jobs_off_until_resume_and_survives_a_restart() {
    let mut c = Cluster::start(2, "cbf");
    let a = c.submit(&["-N1", "-t", "1", "--wrap", "sleep 2"]);
    let node = node_of(&c, a);
    c.ok(
        "econtrol",
        &[
            "update",
            &format!("NodeName={node}"),
            "State=DRAIN",
            "Reason=bad disk",
        ],
    );
    // Draining while its job runs; the job is not disturbed.
    let line = c.ok("einfo", &["-N", "-h", "-n", &node]);
    assert!(line.contains("drng"), "{line}");
    let reasons = c.ok("einfo", &["-R", "-h"]);
    assert!(
        reasons.starts_with("bad disk") && reasons.contains("root") && reasons.contains(&node),
        "{reasons}"
    );
    // A two-node job waits: one node of two is leaving.
    let b = c.submit(&["-N2", "-t", "1", "--wrap", "true"]);
    assert_eq!(c.wait_state(a, JobState::Completed).exit_code, Some(0));
    c.wait_until("the node drained", || {
        c.ok("einfo", &["-N", "-h", "-n", &node]).contains("drain ")
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(c.job(b).map(|j| j.state), Some(JobState::Pending));
    // The drain outlives batchd.
    c.kill9();
    c.launch();
    let shown = c.ok("econtrol", &["show", "node", &node]);
    assert!(
        shown.contains("State=IDLE+DRAIN") && shown.contains("Reason=bad disk [root@"),
        "{shown}"
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(c.job(b).map(|j| j.state), Some(JobState::Pending));
    c.ok(
        "econtrol",
        &["update", &format!("NodeName={node}"), "State=RESUME"],
    );
    assert_eq!(c.wait_state(b, JobState::Completed).exit_code, Some(0));
    assert_eq!(c.ok("einfo", &["-R", "-h"]), "");
    // Resumed for good: a restart does not bring the drain back.
    c.kill9();
    c.launch();
    assert!(c.ok("einfo", &["-h", "-o", "%t"]).trim() == "idle");
}

#[test]
fn a_node_set_down_fails_its_job_or_requeues_it_as_submitted() {
    let c = Cluster::start(2, "cbf");
    let plain = c.submit(&["-N1", "-t", "5", "--wrap", "sleep 60"]);
    let node = node_of(&c, plain);
    let again = c.submit(&["-N1", "-t", "5", "--requeue", "--wrap", "sleep 60"]);
    let other = node_of(&c, again);
    c.ok(
        "econtrol",
        &[
            "update",
            &format!("NodeName={node}"),
            "State=DOWN",
            "Reason=power",
        ],
    );
    let j = c.wait_state(plain, JobState::NodeFail);
    assert!(
        j.detail
            .as_deref()
            .unwrap_or("")
            .contains(&format!("node {node} is down")),
        "{j:?}"
    );
    let acct = c.ok(
        "eacct",
        &["-X", "-n", "-j", &plain.to_string(), "-o", "state"],
    );
    assert_eq!(acct.trim(), "NODE_FAIL");
    // Down too: the --requeue job is pending again, and waits while no node is up.
    c.ok(
        "econtrol",
        &[
            "update",
            &format!("NodeName={other}"),
            "State=DOWN",
            "Reason=power",
        ],
    );
    c.wait_job(again, "requeued", |j| {
        j.state == JobState::Pending && j.detail.as_deref().is_some_and(|d| d.contains("requeued"))
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(c.job(again).map(|j| j.state), Some(JobState::Pending));
    let down = c.ok("einfo", &["-h", "-o", "%D %t"]);
    assert_eq!(down.trim(), "2 down");
    c.ok(
        "econtrol",
        &["update", &format!("NodeName={other}"), "State=RESUME"],
    );
    c.wait_state(again, JobState::Running);
    c.ok("ecancel", &[&again.to_string()]);
}

#[test]
fn node_updates_are_refused_as_scontrol_refuses_them() {
    let c = Cluster::start(2, "cbf");
    refused(
        &c,
        "econtrol",
        &["update", "NodeName=debug001", "State=DRAIN"],
        "You must specify a reason when DOWNING or DRAINING a node",
    );
    refused(
        &c,
        "econtrol",
        &["update", "NodeName=debug009", "State=DOWN", "Reason=x"],
        "Invalid node name specified: debug009",
    );
    refused(
        &c,
        "econtrol",
        &["update", "NodeName=debug001", "State=SLEEPY"],
        "invalid node state `SLEEPY`",
    );
    // Nothing changed.
    assert_eq!(c.ok("einfo", &["-R", "-h"]), "");
}
