//! Policy swap with `econtrol reconfigure`: nothing lost; a missing plugin keeps the old one.

use batch_proto::JobState;

use crate::harness::{texts, Cluster};

#[test]
fn policy_swap_with_jobs_queued_and_running_loses_nothing() {
    let c = Cluster::start(2, "cbf");
    let running: Vec<u64> = (0..2).map(|_| c.submit(&["--wrap", "sleep 1.5"])).collect();
    for id in &running {
        c.wait_state(*id, JobState::Running);
    }
    let queued: Vec<u64> = (0..3)
        .map(|_| c.submit(&["-t", "1", "--wrap", "sleep 0.2"]))
        .collect();
    assert!(c.ok("econtrol", &["version"]).contains("cbf"));
    c.write_config(2, "easy");
    let out = c.ok("econtrol", &["reconfigure"]);
    assert!(out.contains("easy"), "{out}");
    assert!(c.ok("econtrol", &["version"]).contains("easy"));
    let all = c.queue(&[]);
    for id in running.iter().chain(&queued) {
        assert!(
            all.iter().any(|j| j.id == *id)
                || c.job(*id).is_some_and(|j| j.state == JobState::Completed),
            "job {id} lost by the swap"
        );
    }
    for id in running.iter().chain(&queued) {
        c.wait_state(*id, JobState::Completed);
    }
}

#[test]
fn swap_to_a_missing_plugin_keeps_the_old_policy() {
    let c = Cluster::start(1, "cbf");
    let held = c.submit(&["-H", "--wrap", "true"]);
    c.write_config(1, "no-such-policy");
    let o = c.run("econtrol", &["reconfigure"]);
    let (_, err) = texts(&o);
    assert!(
        !o.status.success(),
        "reconfigure to a missing plugin succeeded"
    );
    assert!(
        err.starts_with("econtrol: error: ") && err.contains("no-such-policy"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(c.ok("econtrol", &["version"]).contains("cbf"));
    assert_eq!(c.job(held).map(|j| j.state), Some(JobState::Pending));
    let id = c.submit(&["--wrap", "true"]);
    c.wait_state(id, JobState::Completed);
}
