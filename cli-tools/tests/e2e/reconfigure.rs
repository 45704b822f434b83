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

/// `econtrol show stats` (sdiag): the policy in force and its counters, in text and JSON; a
/// reconfigure puts a new policy in force with counters of its own.
#[test]
fn show_stats_counts_the_policy_in_force() {
    let c = Cluster::start(2, "cbf");
    let id = c.submit(&["--wrap", "true"]);
    c.wait_state(id, JobState::Completed);
    let text = c.ok("econtrol", &["show", "stats"]);
    assert!(
        text.starts_with("StartTime=")
            && text.contains("\n   Policy=cbf PolicySince=")
            && text.contains(" TimeBudgetMs=5000\n")
            && text.contains(" PolicyPanics=0 PolicyErrors=0 RefusedPlans=0 PolicyTimeouts=0\n")
            && text.contains("CallPastBudget=NO")
            && text.contains("Pending=0 Running=0\n"),
        "{text}"
    );
    let calls = |json: &serde_json::Value| json["policy_calls"].as_u64().unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&c.ok("econtrol", &["show", "stats", "--json"])).unwrap();
    assert!(calls(&json) >= 1, "{json}");
    assert!(json["last_plan_ms"].as_f64().is_some(), "{json}");
    assert!(
        json["started"].as_u64() <= json["policy_since"].as_u64(),
        "{json}"
    );

    c.write_config(2, "easy");
    c.ok("econtrol", &["reconfigure"]);
    let after: serde_json::Value =
        serde_json::from_str(&c.ok("econtrol", &["show", "stats", "--json"])).unwrap();
    assert_eq!(after["policy"], "easy");
    assert_eq!(calls(&after), 0, "{after}");
    assert!(after["policy_since"].as_u64() >= json["policy_since"].as_u64());

    let out = c.run("econtrol", &["show", "stats", "7"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "econtrol: error: show stats takes no argument (got 7)\n"
    );
}
