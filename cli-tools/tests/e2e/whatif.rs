//! What-if on a live daemon: `econtrol snapshot`, `econtrol whatif` and `esubmit --test-only
//! --policy` against a queue of rigid, moldable and evolving jobs, and the exactness check:
//! under the policy in force, with jobs running to their limits, the replay starts every
//! pending job when `equeue --start` says the daemon expects it to.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::harness::{bin_dir, texts, Cluster};

/// Builds esim (the replay runs there) and the evolving policy's library, once.
fn ensure_esim() {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            esched_test_support::cargo_build(
                &bin_dir(),
                &["-p", "esim", "--bin", "esim", "-p", "esched-evolving"],
            )
        })
        .clone()
        .unwrap_or_else(|e| panic!("{e}"));
}

/// `equeue --start --json`: each pending job's expected start, seconds since the epoch (0 for
/// none), as Slurm's `squeue --start --json` gives it.
fn equeue_starts(c: &Cluster) -> BTreeMap<u64, u64> {
    let out = c.ok("equeue", &["--start", "--json", "-t", "PD"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("equeue --json is JSON");
    v["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| {
            (
                j["job_id"].as_u64().expect("job_id"),
                j["start_time"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

/// The queue: 200 jobs of three kinds on a full pool of 16 nodes, then a held job and one
/// that depends on it.
fn queue(c: &Cluster) -> (Vec<u64>, u64, u64) {
    // Eight jobs fill the pool for half an hour.
    let running: Vec<u64> = (0..8)
        .map(|i| {
            let t = format!("{}", 20 + i);
            c.submit(&["-N2", "-t", &t, "--wrap", "sleep 600"])
        })
        .collect();
    for &id in &running {
        c.wait_state(id, batch_proto::JobState::Running);
    }
    let mut queued = Vec::new();
    for i in 0..200u32 {
        let id = match i % 3 {
            0 => {
                let n = format!("-N{}", 1 + i % 8);
                let t = format!("{}", 5 + (i * 7) % 40);
                c.submit(&[&n, "-t", &t, "--wrap", "sleep 1"])
            }
            1 => {
                let m = format!("{}:{},{}:{}", 1 + i % 4, 30 + i % 20, 8, 6 + i % 5);
                c.submit(&["--moldable", &m, "--wrap", "sleep 1"])
            }
            _ => {
                let p = format!("{}:{},{}:{}", 300 + 10 * i, 1 + i % 3, 600, 2 + i % 6);
                c.submit(&["--evolving-profile", &p, "--wrap", "sleep 1"])
            }
        };
        queued.push(id);
    }
    let held = c.submit(&["-H", "-N2", "-t", "10", "--wrap", "sleep 1"]);
    let dep = format!("--dependency=afterok:{held}");
    let after = c.submit(&[&dep, "-N1", "-t", "10", "--wrap", "sleep 1"]);
    (queued, held, after)
}

#[test]
fn whatif_under_the_policy_in_force_matches_equeue_start_for_every_pending_job() {
    ensure_esim();
    let c = Cluster::start(16, "cbf");
    let (queued, held, after) = queue(&c);
    // Wait for a pass that saw the whole queue: every queued job has an expected start.
    c.wait_until("expected starts for every queued job", || {
        let s = equeue_starts(&c);
        queued.iter().all(|id| s.get(id).is_some_and(|&t| t > 0))
    });
    let before = equeue_starts(&c);
    let out = c.ok(
        "econtrol",
        &[
            "whatif",
            "--json",
            "--policy",
            "easy",
            "--policy",
            "evolving:expand=2X",
        ],
    );
    let after_starts = equeue_starts(&c);
    assert_eq!(
        before, after_starts,
        "the daemon's plan changed during the test"
    );
    let v: serde_json::Value = serde_json::from_str(&out).expect("econtrol whatif --json");
    let rows = v["policies"].as_array().expect("policies");
    let labels: Vec<&str> = rows.iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["current: cbf", "easy", "evolving:expand=2X"]);
    eprintln!(
        "econtrol whatif: {:.1} ms of compute for {} replays of {} pending jobs",
        v["compute_ms"].as_f64().unwrap(),
        rows.len(),
        rows[0]["pending"].as_array().unwrap().len()
    );
    let replayed: BTreeMap<u64, Option<u64>> = rows[0]["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| (j["id"].as_u64().unwrap(), j["start"].as_u64()))
        .collect();
    // Every pending job equeue lists, in the same set, and each expected start the same.
    assert_eq!(
        replayed.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    let mut compared = 0;
    for (id, &expected) in &before {
        if expected == 0 {
            continue;
        }
        assert_eq!(
            replayed[id].map(|ms| ms / 1000),
            Some(expected),
            "job {id}: replay vs equeue --start"
        );
        compared += 1;
    }
    assert!(compared >= 200, "{compared} jobs compared");
    // To the millisecond against the daemon's records.
    for j in c.queue(&["-t", "PD"]) {
        if let Some(t) = j.expected_start {
            assert_eq!(replayed[&j.id], Some(t), "job {}", j.id);
        }
    }
    // The held job never starts, and so neither does the job that waits for it.
    let outcome = |id: u64| {
        rows[0]["pending"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["id"].as_u64() == Some(id))
            .map(|j| {
                (
                    j["start"].clone(),
                    j["outcome"].as_str().unwrap().to_string(),
                )
            })
            .unwrap()
    };
    assert_eq!(outcome(held), (serde_json::Value::Null, "held".into()));
    assert_eq!(
        outcome(after),
        (serde_json::Value::Null, "not-started".into())
    );
    // The other policies start every queued job too, and some differently.
    for r in &rows[1..] {
        let started = r["summary"]["started"].as_u64().unwrap();
        assert_eq!(started, 200, "{}", r["label"]);
    }
    assert!(!v["movers"].as_array().unwrap().is_empty());

    // The table prints the compute time and the snapshot's.
    let table = c.ok(
        "econtrol",
        &[
            "whatif",
            "--policy",
            "easy",
            "--policy",
            "evolving:expand=2X",
        ],
    );
    eprintln!("{}", table.lines().take(6).collect::<Vec<_>>().join("\n"));
    assert!(table.contains("computed in "), "{table}");
    assert!(table.contains("snapshot read in "), "{table}");
    assert!(table.contains("current: cbf"), "{table}");
}

#[test]
fn snapshot_files_replay_with_esim_and_test_only_answers_per_policy() {
    ensure_esim();
    let c = Cluster::start(4, "cbf");
    // A past job that ran a moment of its ten minutes: root's history.
    let past = c.submit(&["-N1", "-t", "10", "--wrap", "sleep 1"]);
    c.wait_state(past, batch_proto::JobState::Completed);
    let blocker = c.submit(&["-N4", "-t", "10", "--wrap", "sleep 600"]);
    c.wait_state(blocker, batch_proto::JobState::Running);
    let a = c.submit(&["-N4", "-t", "10", "--wrap", "sleep 1"]);
    let b = c.submit(&["-N1", "-t", "30", "--wrap", "sleep 1"]);
    let file = c.work.join("snap.json");
    c.ok("econtrol", &["snapshot", file.to_str().unwrap()]);
    let snap: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(snap["format"], "esched-snapshot");
    assert_eq!(snap["version"], 2);
    assert_eq!(snap["policy"]["name"], "cbf");
    let pending: Vec<u64> = snap["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_u64().unwrap())
        .collect();
    assert_eq!(pending, [a, b]);
    let nodes = snap["pools"][0]["node_states"].as_array().unwrap();
    assert!(nodes
        .iter()
        .all(|n| n["state"] == "allocated" && n["job"] == blocker));
    assert_eq!(snap["running"][0]["id"], blocker);
    // esim replays the file itself; the SVG has one plan per policy.
    let svg = c.work.join("plans.svg");
    let out = std::process::Command::new(bin_dir().join("esim"))
        .args([
            "whatif",
            file.to_str().unwrap(),
            "--policy",
            "easy",
            "--svg",
        ])
        .arg(&svg)
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("current: cbf") && stdout.contains("easy"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(text.matches("class=\"gantt\"").count(), 2);
    // --test-only --policy: the job's start under easy beside cbf's; nothing is queued.
    let t = c.run(
        "esubmit",
        &[
            "--test-only",
            "--policy",
            "easy",
            "-N1",
            "-t",
            "5",
            "--wrap",
            "true",
        ],
    );
    let (_, err) = texts(&t);
    assert!(t.status.success(), "{err}");
    assert!(err.contains("Job would start at"), "{err}");
    assert!(
        err.contains("Under policy easy the job would start at"),
        "{err}"
    );
    assert!(err.contains("under current: cbf, at"), "{err}");
    assert_eq!(c.queue(&["-t", "PD"]).len(), 2);
    // --runtime history learns from the daemon's accounting: root's jobs run a small part of
    // their limits, so the blocker ends soon and `a` starts long before its limit-bound start.
    // The export is a temporary file, gone once the replay has read it.
    let tmp = c.work.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let start_of_a = |args: &[&str]| {
        let out = c
            .tool("econtrol")
            .env("TMPDIR", &tmp)
            .args([&["whatif", "--json", "--policy", "easy"], args].concat())
            .output()
            .unwrap();
        let (stdout, stderr) = texts(&out);
        assert!(out.status.success(), "{stderr}");
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let row = &v["policies"][0]["pending"];
        let j = row
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["id"] == a)
            .unwrap();
        (
            v["runtime"].as_str().unwrap().to_string(),
            j["start"].as_u64().unwrap(),
        )
    };
    let (model, by_limit) = start_of_a(&[]);
    assert_eq!(model, "walltime");
    let (model, by_history) = start_of_a(&["--runtime", "history"]);
    assert_eq!(model, "history (batchd's accounting)");
    assert!(by_history + 300_000 < by_limit, "{by_history} {by_limit}");
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "export left behind"
    );
    // An export eacct wrote, steps' rows included, gives the same.
    let export = c.ok(
        "eacct",
        &["-a", "-P", "-o", "User,ElapsedRaw,TimelimitRaw,State"],
    );
    assert!(export.lines().any(|l| l.starts_with('|')), "{export}");
    let file = c.work.join("acct.txt");
    std::fs::write(&file, export).unwrap();
    let (model, by_file) = start_of_a(&["--history", file.to_str().unwrap()]);
    assert!(model.ends_with("acct.txt"), "{model}");
    // The same ratio; a later snapshot, so the start may be a moment later.
    assert!(
        by_file.abs_diff(by_history) < 60_000,
        "{by_file} {by_history}"
    );
    // esim's warning reaches econtrol's user: this history knows nobody of the queue.
    let stranger = c.work.join("zed.txt");
    std::fs::write(&stranger, "User|ElapsedRaw|TimelimitRaw\nzed|60|10\n").unwrap();
    let out = c.run(
        "econtrol",
        &[
            "whatif",
            "--policy",
            "easy",
            "--history",
            stranger.to_str().unwrap(),
        ],
    );
    let (_, err) = texts(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: run times by history:") && err.contains("(root)"),
        "{err}"
    );
    let mixed = c.run(
        "econtrol",
        &[
            "whatif",
            "--policy",
            "easy",
            "--runtime",
            "ratio:0.5",
            "--history",
            "x",
        ],
    );
    assert!(!mixed.status.success());
    assert!(texts(&mixed).1.contains("goes with --runtime history"));
    // Without --test-only, --policy is refused before anything is sent.
    let bad = c.run("esubmit", &["--policy", "easy", "-N1", "--wrap", "true"]);
    assert!(!bad.status.success());
    assert!(texts(&bad).1.contains("--test-only"));
}
