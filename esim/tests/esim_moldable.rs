//! `esim moldable`, `esim moldable-experiments` and `esim moldable-online`, run as a user would.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn esim_stdin(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_esim"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("esim runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("esim ends")
}

const INSTANCE: &str = r#"{"m": 3, "tasks": [
    {"w": 2, "p": [6, 3.5, 2.5]}, {"w": 7, "p": [1, 1, 1]},
    {"w": 1, "p": [4, 2, 1.5]}, {"w": 5, "p": [2, 1.2, 0.9]}]}"#;

#[test]
fn moldable_prints_bounds_and_six_schedules_in_input_order() {
    for args in [&["moldable"][..], &["moldable", "-"][..]] {
        let o = esim_stdin(args, INSTANCE);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON out");
        let (clb, wlb) = (
            v["bounds"]["cmax_lb"].as_f64().unwrap(),
            v["bounds"]["minsum_lb"].as_f64().unwrap(),
        );
        for name in [
            "BiCrit",
            "Gang",
            "Seq-LPTF",
            "List-MRT",
            "List-wLPTF",
            "List-SAF",
        ] {
            let a = &v["algorithms"][name];
            assert_eq!(a["tasks"].as_array().map(Vec::len), Some(4), "{name}");
            assert!(a["cmax"].as_f64().unwrap() >= clb - 1e-9, "{name}");
            assert!(a["sum_wc"].as_f64().unwrap() >= wlb - 1e-9, "{name}");
            // ΣωC recomputed from the slots and the instance's times agrees with the figure.
            let inst: serde_json::Value = serde_json::from_str(INSTANCE).unwrap();
            let sum: f64 = a["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .zip(inst["tasks"].as_array().unwrap())
                .map(|(s, t)| {
                    let k = s["procs"].as_u64().unwrap() as usize;
                    t["w"].as_f64().unwrap()
                        * (s["start"].as_f64().unwrap() + t["p"][k - 1].as_f64().unwrap())
                })
                .sum();
            assert!((sum - a["sum_wc"].as_f64().unwrap()).abs() < 1e-9, "{name}");
        }
        // Gang puts every task on all 3 processors.
        assert!(v["algorithms"]["Gang"]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["procs"] == 3));
    }
}

#[test]
fn moldable_reports_bicrit_batch_and_compacted_schedules_under_either_makespan_algorithm() {
    for (args, name) in [
        (&["moldable"][..], "mrt"),
        (&["moldable", "--makespan", "canonical"][..], "canonical"),
    ] {
        let o = esim_stdin(args, INSTANCE);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON out");
        assert_eq!(v["makespan"], name);
        let b = &v["algorithms"]["BiCrit"];
        let kept = b["kept"].as_str().expect("kept");
        let crit =
            |a: &serde_json::Value| (a["cmax"].as_f64().unwrap(), a["sum_wc"].as_f64().unwrap());
        let (batch, compacted, out) = (crit(&b["batch"]), crit(&b["compacted"]), crit(b));
        assert_eq!(b["batch"]["tasks"].as_array().map(Vec::len), Some(4));
        assert_eq!(b["compacted"]["tasks"].as_array().map(Vec::len), Some(4));
        // The rule: the returned schedule is never worse than the batch schedule on either
        // criterion; it is the batch schedule itself when "kept" says so.
        assert!(out.0 <= batch.0 + 1e-9 && out.1 <= batch.1 + 1e-9, "{b}");
        match kept {
            "batch" => assert_eq!(b["tasks"], b["batch"]["tasks"]),
            // The best compaction by ΣωC alone is no worse on ΣωC than what was returned.
            "compacted" => assert!(compacted.1 <= out.1 + 1e-9, "{b}"),
            other => panic!("kept = {other}"),
        }
    }
    let o = esim_stdin(&["moldable", "--makespan", "shelves"], INSTANCE);
    assert_eq!(
        o.status.code(),
        Some(2),
        "clap refuses an unknown algorithm"
    );
}

#[test]
fn moldable_online_prints_the_policies_side_by_side() {
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/KTH-SP2-sample.swf");
    let o = esim_stdin(&["moldable-online", "--trace", trace, "--limit", "40"], "");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    for want in [
        "mean wait s",
        "mean bsld",
        "sum wC s",
        "util",
        "makespan s",
        "bicriteria (makespan mrt)",
        "bicriteria (makespan canonical)",
        "cbf (OAR rule)",
        "cbf, rigid",
        "40 jobs on 100 nodes",
    ] {
        assert!(out.contains(want), "{want} missing:\n{out}");
    }
    let o = esim_stdin(
        &[
            "moldable-online",
            "--trace",
            trace,
            "--limit",
            "40",
            "--json",
        ],
        "",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON rows");
    let rows = rows.as_array().expect("an array");
    assert_eq!(rows.len(), 4);
    for r in rows {
        // Every job ran under every policy.
        assert_eq!(r["jobs"], 40, "{r}");
        assert!(r["utilisation"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn moldable_refuses_bad_instances_in_one_line() {
    for (input, want) in [
        (
            r#"{"m": 2, "tasks": [{"w": 1, "p": [1, 2]}]}"#,
            "not monotonic",
        ),
        (
            r#"{"m": 2, "tasks": [{"w": 1, "p": [2, 0.5]}]}"#,
            "work 2*p(2)",
        ),
        (
            r#"{"m": 2, "tasks": [{"w": 1, "p": [1]}]}"#,
            "1 run times given",
        ),
        (
            r#"{"m": 2, "tasks": [{"w": 1, "p": [1, 1]}], "x": 0}"#,
            "unknown field",
        ),
        ("not json", "bad instance"),
    ] {
        let o = esim_stdin(&["moldable"], input);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{input}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(
            err.starts_with("esim: error: ") && err.contains(want),
            "{err}"
        );
        assert!(o.stdout.is_empty());
    }
}

#[test]
fn moldable_experiments_prints_tables_and_writes_plots() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("figs");
    let o = esim_stdin(
        &[
            "moldable-experiments",
            "--runs",
            "1",
            "--m",
            "8",
            "--tasks",
            "4,6",
            "--out",
            svg.to_str().unwrap(),
        ],
        "",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    for want in ["Figure 3", "Figure 6", "Figure 7", "List-SAF", "whole run:"] {
        assert!(out.contains(want), "{want} missing:\n{out}");
    }
    assert!(svg.join("fig5-mixed-minsum.svg").exists());
    assert!(svg.join("fig7-runtime.svg").exists());
    let o = esim_stdin(&["moldable-experiments", "--models", "wobbly"], "");
    assert_eq!(o.status.code(), Some(1));
}

/// esim names its files one way (a JSON document in is the positional argument, `-` for
/// stdin); the older spellings still work: `schedule --input FILE`, and
/// `moldable-experiments --svg-dir DIR` for `--out DIR`.
#[test]
fn older_spellings_of_inputs_and_outputs_still_work() {
    let tests = r#"{"tests":[{"n_nodes":10,"apps":[[[30,9]],[[5,1],[5,1],[5,5]]]}]}"#;
    let want = r#"{"tests":[{"apps":[{"start":0,"end":30,"ep":[[30,9]]},{"start":30,"end":45,"ep":[[15,5]]}]}]}"#;
    for args in [
        &["schedule", "--policy", "cbf", "-"][..],
        &["schedule", "--policy", "cbf", "--input", "-"][..],
    ] {
        let o = esim_stdin(args, tests);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), want, "{args:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old");
    let o = esim_stdin(
        &[
            "moldable-experiments",
            "--runs",
            "1",
            "--m",
            "4",
            "--tasks",
            "3",
            "--svg-dir",
            old.to_str().unwrap(),
        ],
        "",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read_dir(&old).unwrap().count() > 0);
}
