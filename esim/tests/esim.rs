//! The `esim` binary, run as a user would.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// esim with the policies linked in (`--linked`): these tests are about the simulator's
/// command line, not the plugin loader, which has its own tests.
fn esim(args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_esim"));
    match args.first() {
        Some(&"bench") | Some(&"run") => cmd.arg(args[0]).arg("--linked").args(&args[1..]),
        _ => cmd.arg("--linked").args(args),
    };
    cmd.output().expect("esim runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A 16-node trace of 60 jobs with some contention, plus one job of unknown size and two too
/// large, so each skip reason warns once.
fn trace(dir: &Path) -> PathBuf {
    let mut text = String::from("; Version: 2.2\n; MaxNodes: 16\n; MaxProcs: 16\n");
    for i in 0..60u64 {
        let submit = i * 37 % 1000 + i * 20;
        let nodes = [1, 2, 4, 8, 16, 3][i as usize % 6];
        let req = 100 + (i * 53) % 900;
        let run = req * (1 + i % 4) / 4;
        text.push_str(&format!(
            "{} {submit} -1 {run} {nodes} -1 -1 {nodes} {req} -1 1 {} 1 -1 -1 -1 -1 -1\n",
            i + 1,
            i % 5
        ));
    }
    text.push_str("61 2000 -1 10 -1 -1 -1 -1 100 -1 1 1 1 -1 -1 -1 -1 -1\n");
    text.push_str("62 2000 -1 10 17 -1 -1 17 100 -1 1 1 1 -1 -1 -1 -1 -1\n");
    text.push_str("63 2000 -1 10 32 -1 -1 32 100 -1 1 1 1 -1 -1 -1 -1 -1\n");
    let p = dir.join("small.swf");
    std::fs::write(&p, text).unwrap();
    p
}

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "esim failed: {}", stderr(o));
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

#[test]
fn top_level_flags_are_the_run_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let t = t.to_str().unwrap();
    let a = json(&esim(&["--policy", "cbf", "--trace", t, "--json", "-q"]));
    let b = json(&esim(&[
        "run", "--policy", "cbf", "--trace", t, "--json", "-q",
    ]));
    assert_eq!(a["summary"], b["summary"]);
    assert_eq!(a["counts"]["ran"], 60);
    assert_eq!(a["skipped"]["unknown_size"], 1);
    assert_eq!(a["skipped"]["too_large"], 2);
    assert_eq!(a["counts"]["refused_plans"], 0);
}

#[test]
fn every_policy_replays_and_writes_per_job_csv() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    for policy in ["fcfs", "easy", "cbf"] {
        let csv = dir.path().join(format!("{policy}.csv"));
        let o = esim(&[
            "--policy",
            policy,
            "--trace",
            t.to_str().unwrap(),
            "--jobs",
            csv.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{policy}: {}", stderr(&o));
        let table = stdout(&o);
        for key in ["utilisation", "mean", "bounded slowdown", "policy calls"] {
            assert!(table.contains(key), "{policy}: no {key} in\n{table}");
        }
        let text = std::fs::read_to_string(&csv).unwrap();
        let mut lines = text.lines();
        assert!(lines
            .next()
            .unwrap()
            .starts_with("id,submit_ms,start_ms,end_ms,nodes,wait_ms,"));
        let rows: Vec<Vec<u64>> = lines
            .map(|l| l.split(',').take(6).map(|f| f.parse().unwrap()).collect())
            .collect();
        assert_eq!(rows.len(), 60);
        for r in &rows {
            assert!(
                r[2] >= r[1] && r[3] >= r[2] && r[5] == r[2] - r[1],
                "{policy}: {r:?}"
            );
            assert_eq!(r[1] % 1000, 0, "seconds became ms");
        }
    }
}

#[test]
fn skipped_jobs_warn_once_per_reason() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let o = esim(&["--trace", t.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(
        err.lines().filter(|l| l.contains("skipped")).count(),
        2,
        "{err}"
    );
    assert!(
        err.contains("skipped 2 job(s): larger than the machine"),
        "{err}"
    );
    let q = esim(&["--trace", t.to_str().unwrap(), "--quiet"]);
    assert_eq!(stderr(&q), "");
}

#[test]
fn nodes_overrides_the_header() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let v = json(&esim(&[
        "--trace",
        t.to_str().unwrap(),
        "--nodes",
        "32",
        "--json",
        "-q",
        "--limit",
        "70",
    ]));
    assert_eq!(v["nodes"], 32);
    assert_eq!(v["counts"]["ran"], 62);
    assert_eq!(v["skipped"]["too_large"], 0);
}

fn one_error_line(o: &Output) -> String {
    assert!(!o.status.success());
    let err = stderr(o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("esim: error: "), "{err}");
    err
}

#[test]
fn bad_input_is_one_clear_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.swf");
    std::fs::write(&bad, "; MaxProcs: 4\n1 0 -1 10 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1\n2 0 -1 ten 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1\n").unwrap();
    let err = one_error_line(&esim(&["--trace", bad.to_str().unwrap()]));
    assert!(
        err.contains("bad.swf:3: field 4 is not a number: `ten`"),
        "{err}"
    );

    let missing = dir.path().join("missing.swf");
    let err = one_error_line(&esim(&["--trace", missing.to_str().unwrap()]));
    assert!(
        err.contains("missing.swf") && err.contains("No such file"),
        "{err}"
    );

    let t = trace(dir.path());
    let err = one_error_line(&esim(&["--policy", "sjf", "--trace", t.to_str().unwrap()]));
    assert!(
        err.contains(&format!(
            "unknown policy `sjf` (known: {})",
            esched_stock::known()
        )),
        "{err}"
    );

    // Through the plugin loader (no --linked) too.
    let loaded = Command::new(env!("CARGO_BIN_EXE_esim"))
        .args(["--policy", "sjf", "--trace", t.to_str().unwrap()])
        .output()
        .expect("esim runs");
    let err = one_error_line(&loaded);
    assert!(
        err.contains("policy `sjf` not found") && err.contains(&esched_stock::known()),
        "{err}"
    );

    let err = one_error_line(&esim(&[
        "--trace",
        t.to_str().unwrap(),
        "--param",
        "nope=1",
    ]));
    assert!(err.contains("unknown parameter `nope`"), "{err}");

    let err = one_error_line(&esim(&["--trace", t.to_str().unwrap(), "--param", "nope"]));
    assert!(err.contains("expected KEY=VALUE"), "{err}");

    // A machine of no nodes, or of a negative number of them, is refused in one line.
    for n in ["0", "-5"] {
        let o = esim(&["--trace", t.to_str().unwrap(), "--nodes", n]);
        assert_eq!(o.status.code(), Some(2));
        let err = one_error_line(&o);
        assert!(
            err.contains(&format!("invalid value '{n}' for '--nodes <N>'"))
                && err.contains("is not in 1.."),
            "{err}"
        );
    }
}

#[test]
fn params_file_feeds_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let f = dir.path().join("p.toml");
    std::fs::write(&f, "no_such = 3\n").unwrap();
    let err = one_error_line(&esim(&[
        "--trace",
        t.to_str().unwrap(),
        "--params-file",
        f.to_str().unwrap(),
    ]));
    assert!(err.contains("unknown parameter `no_such`"), "{err}");
}

#[test]
fn bench_prints_its_figures() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let o = esim(&[
        "bench",
        "--sizes",
        "50,100",
        "--runs",
        "1",
        "--nodes",
        "200",
        "--trace",
        t.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.trim_start().starts_with("50 ") || l.trim_start().starts_with("100 "))
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert!(out.contains("replay of"), "{out}");
}

/// A test plugin as cargo left it next to this test's esim (they are dev-dependencies).
fn test_plugin(name: &str) -> String {
    let exe = Path::new(env!("CARGO_BIN_EXE_esim"));
    let file = format!("libesched_{}.so", name.replace('-', "_"));
    let dir = exe.parent().unwrap();
    [dir.join("deps").join(&file), dir.join(&file)]
        .into_iter()
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("{file} not built next to {}", exe.display()))
        .display()
        .to_string()
}

/// esim loading its policy from a plugin library, as users run it.
fn esim_plugin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_esim"))
        .args(args)
        .output()
        .expect("esim runs")
}

#[test]
fn a_panicking_plugin_is_contained_and_counted_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let policy = test_plugin("test-panic");
    let o = esim_plugin(&[
        "--policy",
        &policy,
        "--param",
        "panic_on_call=3",
        "--trace",
        t.to_str().unwrap(),
        "--json",
        "-q",
    ]);
    let v = json(&o);
    assert_eq!(v["counts"]["ran"], 60);
    assert_eq!(v["counts"]["policy_panics"], 1);
    assert_eq!(v["counts"]["policy_errors"], 0);
    assert_eq!(v["counts"]["refused_plans"], 0);
    let err = stderr(&o);
    assert!(
        err.contains("policy `test-panic` panicked: call 3: this policy was told to panic on it")
            && err.contains("keeping its last valid plan"),
        "{err}"
    );
}

#[test]
fn an_over_committing_plugin_is_refused_and_counted_in_json() {
    let dir = tempfile::tempdir().unwrap();
    // 4 nodes: the whole machine from 0 to 100 s, then a second 4-node job at 10 s, which the
    // plugin starts at once (refused) and again at 100 s, when it fits.
    let t = dir.path().join("two.swf");
    std::fs::write(
        &t,
        "; MaxNodes: 4\n\
         1 0 -1 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\n\
         2 10 -1 10 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\n",
    )
    .unwrap();
    let policy = test_plugin("test-overcommit");
    let o = esim_plugin(&[
        "--policy",
        &policy,
        "--trace",
        t.to_str().unwrap(),
        "--json",
        "-q",
    ]);
    let v = json(&o);
    assert_eq!(v["counts"]["ran"], 2);
    assert_eq!(v["counts"]["refused_plans"], 1);
    assert_eq!(v["counts"]["policy_panics"], 0);
    let err = stderr(&o);
    assert!(
        err.contains("policy `test-overcommit`: plan refused: pool sim over-committed at 10000 ms"),
        "{err}"
    );
}

const COALLOC_TRACE: &str = r#"{"params": {"clusters": 2, "procs": 8, "lp": 0.5},
  "jobs": [
    {"type": "local", "id": "a", "cluster": 0, "submit": 0, "size": 6, "runtime": 1000},
    {"type": "local", "id": "b", "cluster": 1, "submit": 0, "size": 2, "runtime": 50},
    {"type": "global", "id": "g", "submit": 0, "components": 2, "size": 4, "runtime": 100,
     "deadline": 100},
    {"type": "local", "id": "c", "cluster": 1, "submit": 10, "size": 4, "runtime": 500}]}"#;

#[test]
fn coalloc_reports_every_jobs_fate_through_the_rpp_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(&path, COALLOC_TRACE).unwrap();
    // Through the plugin loader, and linked in: the same fates.
    let mut outs = Vec::new();
    for linked in [false, true] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_esim"));
        cmd.arg("coalloc").arg(&path);
        if linked {
            cmd.arg("--linked");
        }
        let out = cmd.output().expect("esim runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        // One kill frees room either way; the fewest-kills rule then loses the least work:
        // c's 90 s on 4 processors, not a's 100 s on 6.
        assert_eq!(v["jobs"][2]["killed"], serde_json::json!(["c"]));
        assert_eq!(v["jobs"][2]["start"], 100.0);
        assert_eq!(v["jobs"][3]["outcome"], "killed");
        assert_ne!(v["jobs"][0]["outcome"], "killed");
        outs.push(v);
    }
    assert_eq!(outs[0]["jobs"], outs[1]["jobs"]);
}

#[test]
fn coalloc_refuses_bad_traces_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for (text, want) in [
        (r#"{"jobs": [{"type": "local"}]}"#, "missing field"),
        (r#"{"params": {"lp": 0}, "jobs": []}"#, "params.lp"),
        (
            r#"{"jobs": [{"type": "global", "submit": 0, "components": 2, "size": 40, "runtime": 1, "deadline": 5}]}"#,
            "job 0: component size 40",
        ),
        ("not json", "not a co-allocation trace"),
    ] {
        let path = dir.path().join("bad.json");
        std::fs::write(&path, text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_esim"))
            .args(["coalloc", "--linked"])
            .arg(&path)
            .output()
            .expect("esim runs");
        assert_eq!(out.status.code(), Some(1), "{text}");
        let err = one_error_line(&out);
        assert!(err.contains(want), "{text}: {err}");
    }
}

/// Through the plugin, told the engine's account of what changed at every call (checked
/// against CBF's own book in this debug build), every job gets the start the linked policy
/// gives it, in both event orders.
#[test]
fn plugins_replay_as_the_linked_policies() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let t = t.to_str().unwrap();
    for policy in ["fcfs", "easy", "cbf"] {
        for events in ["instant", "per-event"] {
            let linked = dir.path().join(format!("{policy}-{events}-linked.csv"));
            let plugin = dir.path().join(format!("{policy}-{events}-plugin.csv"));
            let o = esim(&[
                "--policy",
                policy,
                "--trace",
                t,
                "--events",
                events,
                "-q",
                "--jobs",
                linked.to_str().unwrap(),
            ]);
            assert!(
                o.status.success(),
                "{policy} {events} linked: {}",
                stderr(&o)
            );
            let o = esim_plugin(&[
                "--policy",
                &test_plugin(policy),
                "--trace",
                t,
                "--events",
                events,
                "-q",
                "--jobs",
                plugin.to_str().unwrap(),
            ]);
            assert!(
                o.status.success(),
                "{policy} {events} plugin: {}",
                stderr(&o)
            );
            assert_eq!(
                std::fs::read_to_string(&linked).unwrap(),
                std::fs::read_to_string(&plugin).unwrap(),
                "{policy} {events}"
            );
        }
    }
}

/// The repository's sample of KTH-SP2 (its first 500 jobs).
fn kth_sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces/KTH-SP2-sample.swf")
}

/// The rows of a `--jobs` file as maps from column name to value.
fn jobs_csv(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    r.records()
        .map(|rec| {
            header
                .iter()
                .cloned()
                .zip(rec.unwrap().iter().map(str::to_string))
                .collect()
        })
        .collect()
}

#[test]
fn jobs_csv_has_batsim_columns_with_disjoint_allocations() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let csv = dir.path().join("jobs.csv");
    let o = esim(&[
        "--policy",
        "easy",
        "--trace",
        t.to_str().unwrap(),
        "-q",
        "--jobs",
        csv.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = jobs_csv(&csv);
    assert_eq!(rows.len(), 60);
    let mut held: Vec<(f64, f64, Vec<u32>)> = Vec::new();
    for r in &rows {
        assert_eq!(r["job_id"], r["id"]);
        let ms = |k: &str| r[k].parse::<f64>().unwrap();
        assert_eq!(ms("starting_time") * 1000.0, ms("start_ms"));
        assert_eq!(ms("waiting_time") * 1000.0, ms("wait_ms"));
        assert!(ms("requested_time") >= ms("execution_time"), "{r:?}");
        assert!(
            matches!(
                r["final_state"].as_str(),
                "COMPLETED_SUCCESSFULLY" | "COMPLETED_WALLTIME_REACHED"
            ),
            "{r:?}"
        );
        assert_eq!(
            r["success"] == "1",
            r["final_state"] == "COMPLETED_SUCCESSFULLY"
        );
        // The interval set names as many distinct nodes as the job holds.
        let mut nodes = Vec::new();
        for part in r["allocated_resources"].split(' ') {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            nodes.extend(a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap());
        }
        assert_eq!(nodes.len().to_string(), r["nodes"], "{r:?}");
        assert!(nodes.iter().all(|&n| n < 16));
        held.push((ms("start_ms"), ms("end_ms"), nodes));
    }
    // No node is held by two jobs at once.
    for (i, a) in held.iter().enumerate() {
        for b in &held[i + 1..] {
            if a.0 < b.1 && b.0 < a.1 {
                assert!(
                    a.2.iter().all(|n| !b.2.contains(n)),
                    "{a:?} and {b:?} share a node"
                );
            }
        }
    }
}

/// The schedule written by `--swf` replays to the very same starts under FCFS (a
/// deterministic policy whose decisions depend only on submit times, sizes and estimates), and
/// pyss's own parser reads it (`scripts/pyss-read-swf.py`, with the pyss archive of
/// `../shared/tools/pyss`).
#[test]
fn swf_output_replays_to_the_same_starts_and_pyss_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, swf) = (
        dir.path().join("a.csv"),
        dir.path().join("b.csv"),
        dir.path().join("out.swf"),
    );
    let t = kth_sample();
    let o = esim(&[
        "--policy",
        "fcfs",
        "--trace",
        t.to_str().unwrap(),
        "-q",
        "--jobs",
        a.to_str().unwrap(),
        "--swf",
        swf.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&swf).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("; Computer: esim ") && l.contains("policy fcfs")),
        "{text}"
    );
    assert!(text.lines().any(|l| l == "; MaxProcs: 100"));
    let o = esim(&[
        "--policy",
        "fcfs",
        "--trace",
        swf.to_str().unwrap(),
        "-q",
        "--jobs",
        b.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let starts = |p: &Path| -> Vec<(String, String, String)> {
        jobs_csv(p)
            .into_iter()
            .map(|r| (r["id"].clone(), r["start_ms"].clone(), r["end_ms"].clone()))
            .collect()
    };
    let (first, again) = (starts(&a), starts(&b));
    assert_eq!(first.len(), 500);
    assert_eq!(first, again);
    // wait and run time in the SWF are the replay's.
    let rows = jobs_csv(&a);
    let by_id: std::collections::HashMap<&str, &std::collections::HashMap<String, String>> =
        rows.iter().map(|r| (r["id"].as_str(), r)).collect();
    for line in text.lines().filter(|l| !l.starts_with(';')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 18);
        let r = by_id[f[0]];
        assert_eq!(f[2], r["waiting_time"]);
        assert_eq!(f[3], r["execution_time"]);
        assert_eq!(f[4], r["nodes"]);
    }
    pyss_reads(&swf);
}

/// Runs pyss's SWF parser on `swf`. The archive is in the shared folder beside the repository
/// (as CI lays it out); without it (a checkout elsewhere) the check says SKIPPED, except in CI.
pub fn pyss_reads(swf: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tarball = root.join("../shared/tools/pyss/pyss-44a2423.tar.gz");
    if !tarball.exists() && std::env::var_os("CI").is_none() {
        eprintln!("SKIPPED: no pyss archive at {}", tarball.display());
        return;
    }
    let o = Command::new("python3")
        .arg(root.join("scripts/pyss-read-swf.py"))
        .arg(&tarball)
        .arg(swf)
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "pyss: {}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).starts_with("pyss: "), "{}", stdout(&o));
}

#[test]
fn svg_draws_one_rectangle_per_job_in_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let (svg, csv) = (dir.path().join("kth.svg"), dir.path().join("kth.csv"));
    let t = kth_sample();
    let o = esim(&[
        "--policy",
        "easy",
        "--trace",
        t.to_str().unwrap(),
        "-q",
        "--jobs",
        csv.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
        "--window",
        "7d..8d",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
    let mut drawn = std::collections::BTreeSet::new();
    for n in doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("job"))
    {
        assert!(n.has_tag_name("rect"));
        drawn.insert(n.attribute("data-job").unwrap().to_string());
    }
    let expected: std::collections::BTreeSet<String> = jobs_csv(&csv)
        .into_iter()
        .filter(|r| {
            let (s, e) = (
                r["start_ms"].parse::<u64>().unwrap(),
                r["end_ms"].parse::<u64>().unwrap(),
            );
            e > 7 * 86_400_000 && s < 8 * 86_400_000
        })
        .map(|r| r["id"].clone())
        .collect();
    assert!(expected.len() > 10, "a window with jobs in it");
    assert_eq!(drawn, expected);
    let texts: String = doc.descendants().filter_map(|n| n.text()).collect();
    for want in ["utilisation (%)", "queued jobs", "KTH-SP2-sample.swf"] {
        assert!(texts.contains(want), "no {want}");
    }
    // Without --svg or --png, --window is refused.
    let o = esim(&["--trace", t.to_str().unwrap(), "--window", "7d..8d"]);
    assert!(!o.status.success());
}

/// The PNG's width and height (from its IHDR chunk), after checking its signature.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG file");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&bytes[16..20]), be(&bytes[20..24]))
}

#[test]
fn png_is_the_svg_rendered_at_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let (svg, png) = (dir.path().join("kth.svg"), dir.path().join("kth.png"));
    let t = kth_sample();
    let args = |extra: &[&str]| {
        let mut a = vec!["--policy", "easy", "--trace", t.to_str().unwrap(), "-q"];
        a.extend_from_slice(extra);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |a: Vec<String>| {
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        let o = esim(&refs);
        assert!(o.status.success(), "{}", stderr(&o));
    };
    run(args(&[
        "--svg",
        svg.to_str().unwrap(),
        "--png",
        png.to_str().unwrap(),
        "--window",
        "7d..8d",
    ]));
    let text = std::fs::read_to_string(&svg).unwrap();
    let root = roxmltree::Document::parse(&text).unwrap();
    let dim = |k: &str| -> u32 { root.root_element().attribute(k).unwrap().parse().unwrap() };
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(png_size(&bytes), (dim("width"), dim("height")));
    // --png alone takes --window too, and draws the same picture.
    let alone = dir.path().join("alone.png");
    run(args(&[
        "--png",
        alone.to_str().unwrap(),
        "--window",
        "7d..8d",
    ]));
    assert_eq!(std::fs::read(&alone).unwrap(), bytes);
}

/// The output of `cmd`, whose program was copied just now. The copy's file was open for
/// writing for a moment, and a child another test thread forked then holds that descriptor
/// until its own exec: running the copy meanwhile fails with ETXTBSY ("Text file busy"), so it
/// is retried for a while.
fn output_of_copy(cmd: &mut Command) -> Output {
    for _ in 0..200 {
        match cmd.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other.expect("the copied program runs"),
        }
    }
    cmd.output().expect("the copied program runs")
}

/// An esim installed alone (`cargo install`, scripts/install.sh): no policy library beside
/// it nor in `$ESCHED_PLUGIN_DIR`, so a stock policy runs its linked copy, said once; the
/// replay is the one `--linked` gives.
#[test]
fn an_installed_esim_runs_the_linked_stock_policy_and_says_so_once() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let exe = bin.join("esim");
    std::fs::copy(env!("CARGO_BIN_EXE_esim"), &exe).unwrap();
    let installed = output_of_copy(
        Command::new(&exe)
            .args(["--policy", "cbf", "--trace", t.to_str().unwrap()])
            .env_remove("ESCHED_PLUGIN_DIR"),
    );
    assert!(installed.status.success(), "{}", stderr(&installed));
    let err = stderr(&installed);
    assert_eq!(
        err.matches("no plugin library for `cbf`").count(),
        1,
        "{err}"
    );
    assert!(err.contains("running the copy linked into esim"), "{err}");
    let linked = esim(&["--policy", "cbf", "--trace", t.to_str().unwrap()]);
    // The same schedule; only the wall-clock `time` row may differ.
    let schedule = |o: &Output| -> Vec<String> {
        stdout(o)
            .lines()
            .filter(|l| !l.starts_with("time "))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(schedule(&installed), schedule(&linked));
    assert!(stdout(&installed).contains("utilisation"));
    // A name that is no stock policy still fails, naming the ones there are.
    let unknown = Command::new(&exe)
        .args(["--policy", "sjf", "--trace", t.to_str().unwrap()])
        .env_remove("ESCHED_PLUGIN_DIR")
        .output()
        .unwrap();
    assert!(!unknown.status.success());
    assert!(
        stderr(&unknown).contains("not found"),
        "{}",
        stderr(&unknown)
    );
}
