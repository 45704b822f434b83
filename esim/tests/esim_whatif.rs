//! `esim whatif`, run as a user would: a snapshot file of rigid, moldable and evolving jobs
//! replayed under several policies, its table, JSON and SVG, the stored version-1 file, and
//! the run-time models.

use std::path::Path;
use std::process::{Command, Output};

use sched_core::{
    JobId, MoldConfig, Moldable, Pending, Pool, PoolId, PoolSteps, RNone, Request, Running, Shape,
    Step,
};
use sched_sim::whatif::{
    format, Holder, PendingEntry, PolicyInForce, PoolEntry, RunningEntry, SnapshotFile,
};

const NOW: u64 = 1_800_000_000_000;
const MIN: u64 = 60_000;

fn esim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_esim"))
        .arg("whatif")
        .args(args)
        .arg("--linked")
        .output()
        .expect("esim runs")
}

fn ok(args: &[&str]) -> String {
    let o = esim(args);
    assert!(
        o.status.success(),
        "esim whatif {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn pending(id: u64, user: &str, request: Request) -> PendingEntry {
    PendingEntry {
        job: Pending {
            id: JobId(id),
            user: 1000,
            submit: NOW - id * MIN,
            earliest_start: NOW - id * MIN,
            priority: 0,
            request,
            wants_view: false,
            claimed: Default::default(),
        },
        name: format!("job{id}"),
        user_name: user.into(),
        eligible: true,
        held: false,
        dependencies: Vec::new(),
        reason: None,
        expected_start: None,
    }
}

/// Twelve nodes, eight of them busy; a queue of the three kinds.
fn snapshot() -> SnapshotFile {
    let busy = RunningEntry {
        job: Running {
            id: JobId(1),
            user: 1000,
            request: Request::rigid(8, 60 * MIN),
            shape: Shape::rigid(PoolId(0), 8, 60 * MIN),
            start: NOW - 30 * MIN,
            // As batchd writes them: from the job's start.
            holds: vec![PoolSteps::flat(
                PoolId(0),
                NOW - 30 * MIN,
                NOW + 30 * MIN,
                8,
            )]
            .into(),
            killable: false,
        },
        holder: Holder::Job,
        name: "busy".into(),
        user_name: "ann".into(),
    };
    let mut queue = Vec::new();
    for i in 0..12u64 {
        let request = match i % 3 {
            0 => Request::rigid(1 + (i as u32 % 12), (10 + i * 5) * MIN),
            1 => Request::Moldable(Moldable {
                pool: RNone,
                configs: vec![
                    MoldConfig {
                        nodes: 2,
                        walltime: 40 * MIN,
                    },
                    MoldConfig {
                        nodes: 8,
                        walltime: 12 * MIN,
                    },
                ]
                .into(),
                model: RNone,
                min_nodes: 0,
                max_nodes: 0,
                weight: 1.0,
            }),
            _ => Request::Evolving(sched_core::Evolving {
                pool: RNone,
                steps: vec![Step::new(10 * MIN, 2), Step::new(10 * MIN, 6)].into(),
            }),
        };
        queue.push(pending(
            10 + i,
            if i % 2 == 0 { "ann" } else { "bob" },
            request,
        ));
    }
    SnapshotFile {
        format: format::FORMAT.into(),
        version: format::VERSION,
        now: NOW,
        policy: PolicyInForce {
            name: "cbf".into(),
            ..Default::default()
        },
        pools: vec![PoolEntry {
            pool: Pool {
                id: PoolId(0),
                name: "batch".into(),
                nodes: 12,
            },
            node_states: Vec::new(),
        }],
        running: vec![busy],
        pending: queue,
    }
}

fn write(dir: &Path) -> String {
    let path = dir.join("snap.json");
    std::fs::write(&path, serde_json::to_string(&snapshot()).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn two_plans_one_above_the_other_in_an_svg_that_parses() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path());
    let svg = dir.path().join("plans.svg");
    let out = ok(&[
        &file,
        "--policy",
        "easy",
        "--json",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("the SVG is well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    let width: f64 = root.attribute("width").unwrap().parse().unwrap();
    let plans: Vec<roxmltree::Node> = root
        .descendants()
        .filter(|n| n.attribute("class") == Some("gantt"))
        .collect();
    let labels: Vec<&str> = plans
        .iter()
        .map(|p| p.attribute("data-key").unwrap())
        .collect();
    assert_eq!(labels, ["current: cbf", "easy"]);
    // One above the other: the second panel's frame is below the first's.
    let top = |p: &roxmltree::Node| -> f64 {
        p.children()
            .find(|c| c.has_tag_name("rect"))
            .and_then(|r| r.attribute("y"))
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(top(&plans[1]) > top(&plans[0]) + 100.0);
    for (p, row) in plans.iter().zip(v["policies"].as_array().unwrap()) {
        let jobs: std::collections::BTreeSet<u64> = p
            .descendants()
            .filter(|n| {
                n.attribute("class")
                    .is_some_and(|c| c.split(' ').any(|c| c == "job"))
            })
            .map(|n| {
                let x: f64 = n.attribute("x").unwrap().parse().unwrap();
                let w: f64 = n.attribute("width").unwrap().parse().unwrap();
                assert!(x >= 0.0 && w > 0.0 && x + w <= width, "{x} {w}");
                n.attribute("data-job").unwrap().parse().unwrap()
            })
            .collect();
        // Every job of the plan is drawn: the one running and every started pending job.
        let mut want: std::collections::BTreeSet<u64> = row["pending"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|j| !j["start"].is_null())
            .map(|j| j["id"].as_u64().unwrap())
            .collect();
        want.insert(1);
        assert_eq!(jobs, want);
        assert_eq!(want.len(), 13);
    }
}

#[test]
fn the_table_compares_every_pending_job_and_times_the_compute() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path());
    let out = ok(&[&file, "--policy", "easy", "--policy", "evolving:expand=2X"]);
    assert!(out.contains("current: cbf"), "{out}");
    assert!(out.contains("evolving:expand=2X"), "{out}");
    assert!(out.contains("computed in "), "{out}");
    for id in 10..22 {
        assert!(out.contains(&format!("job{id}")), "{out}");
    }
    // The policy in force given again is not a second row.
    let json = ok(&[&file, "--policy", "cbf", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["policies"].as_array().unwrap().len(), 1);
}

#[test]
fn run_time_models_move_the_starts() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path());
    let mean_wait = |runtime: &str| {
        let v: serde_json::Value =
            serde_json::from_str(&ok(&[&file, "--runtime", runtime, "--json"])).unwrap();
        v["policies"][0]["summary"]["wait"]["mean"]
            .as_f64()
            .unwrap()
    };
    let full = mean_wait("walltime");
    assert!(mean_wait("ratio:0.5") < full);
    let hist = dir.path().join("acct.txt");
    std::fs::write(
        &hist,
        "User|ElapsedRaw|TimelimitRaw\nann|600|60\nbob|300|10\n",
    )
    .unwrap();
    let h = mean_wait(&format!("history:{}", hist.display()));
    assert!(h < full, "{h} {full}");
    // `--runtime history --history FILE`, and `--history FILE` alone, are the same model.
    let named = |args: &[&str]| {
        let v: serde_json::Value =
            serde_json::from_str(&ok(&[&[file.as_str(), "--json"], args].concat())).unwrap();
        v["policies"][0]["summary"]["wait"]["mean"]
            .as_f64()
            .unwrap()
    };
    let path = hist.to_str().unwrap();
    assert_eq!(named(&["--runtime", "history", "--history", path]), h);
    assert_eq!(named(&["--history", path]), h);
    // A history that knows one of the two users says so.
    let ann_only = dir.path().join("ann.txt");
    std::fs::write(&ann_only, "User|ElapsedRaw|TimelimitRaw\nann|600|60\n").unwrap();
    let o = esim(&[&file, "--history", ann_only.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success()
            && err.contains("warning: run times by history:")
            && err.contains("(bob)"),
        "{err}"
    );
    let bare = esim(&[&file, "--runtime", "history"]);
    assert!(!bare.status.success());
    assert!(String::from_utf8_lossy(&bare.stderr).contains("--history FILE"));
    let bad = esim(&[&file, "--runtime", "ratio:7"]);
    assert!(!bad.status.success());
}

#[test]
fn the_stored_version_1_snapshot_still_replays() {
    let v1 = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../sched-sim/tests/data/snapshot-v1.json"
    );
    let out = ok(&[v1, "--json", "--policy", "fcfs"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["version"], 1);
    let starts: Vec<u64> = v["policies"][0]["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["start"].as_u64().unwrap())
        .collect();
    assert_eq!(starts, [1_800_000_300_000, 1_800_000_000_000]);
}

#[test]
fn an_empty_queue_has_no_figures_and_the_header_a_date() {
    let dir = tempfile::tempdir().unwrap();
    let mut snap = snapshot();
    snap.pending.clear();
    let path = dir.path().join("empty.json");
    std::fs::write(&path, serde_json::to_string(&snap).unwrap()).unwrap();
    let svg = dir.path().join("empty.svg");
    let out = ok(&[
        path.to_str().unwrap(),
        "--policy",
        "easy",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.contains("easy: no pending job starts"), "{picture}");
    let header = out.lines().next().unwrap();
    assert!(
        header.starts_with("snapshot at ") && header.contains(" UTC (version "),
        "{out}"
    );
    let row = out.lines().find(|l| l.starts_with("easy")).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[1..8], ["0/0", "-", "-", "-", "-", "-", "-"], "{out}");
}
