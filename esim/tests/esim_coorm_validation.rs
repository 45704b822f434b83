//! `esim coorm-validation` (CooRM §IV-D, Fig. 8) through a real batchd: a tiny pack on two
//! pools, one launcher process per application.
//!
//! batchd belongs to another package, so Cargo does not build its binary for this test:
//! `esched_test_support::cargo_build` does (a no-op after `cargo test --workspace`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_esim"))
        .parent()
        .expect("a binary lives in a directory")
        .to_path_buf()
}

fn batchd() -> PathBuf {
    esched_test_support::cargo_build(&bin_dir(), &["-p", "batchd", "--bin", "batchd"])
        .unwrap_or_else(|e| panic!("{e}"));
    let exe = bin_dir().join("batchd");
    assert!(exe.is_file(), "{} missing after the build", exe.display());
    exe
}

/// Six jobs, wide enough on pools of 16 hosts that some wait and see their view change.
fn trace(dir: &Path) -> PathBuf {
    let mut text = String::from("; Version: 2.2\n; MaxProcs: 16\n");
    for (i, (nodes, req)) in [(8, 120), (12, 90), (4, 150), (16, 60), (6, 100), (10, 80)]
        .iter()
        .enumerate()
    {
        let run = req * 3 / 4;
        text.push_str(&format!(
            "{} {} -1 {run} {nodes} -1 -1 {nodes} {req} -1 1 1 1 -1 -1 -1 -1 -1\n",
            i + 1,
            i * 30
        ));
    }
    let p = dir.join("tiny.swf");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_tiny_pack_runs_on_a_real_batchd_with_counts_that_agree() {
    let batchd = batchd();
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let out = dir.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_esim"))
        .args([
            "coorm-validation",
            "--trace",
            t.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--pools",
            "2",
            "--hosts",
            "16",
            "--apps",
            "6",
            "--cem",
            "0,50",
            "--time-scale",
            "200",
            "--timeout",
            "120",
            "--batchd",
            batchd.to_str().unwrap(),
        ])
        .output()
        .expect("esim runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("| CEM % |"), "{stdout}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    assert_eq!(points[0]["cem_apps"], 0);
    assert_eq!(points[1]["cem_apps"], 3);
    for p in points {
        let r = &p["real"];
        let n = |k: &str| r[k].as_u64().unwrap();
        // Every launcher subscribed, started, said done, and counted what batchd counted.
        assert_eq!(n("launchers"), 6, "{p}");
        assert_eq!(n("done"), 6, "{p}");
        assert_eq!(n("consistent"), 6, "{p}");
        // At least hello, subscribe, two infos, one view, one request, the start and done,
        // each with its answer where there is one: 14 frames per launcher.
        assert!(n("frames") >= 6 * 14, "{p}");
        assert!(n("requests") >= 6 && n("selections") >= 6, "{p}");
        assert_eq!(n("json_bytes"), n("json_bytes_batchd"), "{p}");
        assert_eq!(n("wire_bytes"), n("json_bytes") + 4 * n("frames"), "{p}");
        assert!(p["sim_json_bytes"].as_u64().unwrap() > 0, "{p}");
        assert!(p["sim_cpu_s"].as_f64().unwrap() > 0.0, "{p}");
        assert!(r["cpu_batchd_s"].as_f64().unwrap() > 0.0, "{p}");
        assert!(r["cpu_launchers_s"].as_f64().unwrap() > 0.0, "{p}");
    }
    for f in ["fig8-network.svg", "fig8-cpu.svg", "tables.md"] {
        let text = std::fs::read_to_string(out.join(f)).unwrap();
        assert!(text.contains("Fig. 8") || f == "tables.md", "{f}");
    }
}

#[test]
fn bad_shares_and_a_missing_batchd_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    for (extra, want) in [
        (vec!["--cem", "120"], "percentages"),
        (
            vec!["--batchd", "/nonexistent/batchd"],
            "no batchd binary there",
        ),
    ] {
        let mut args = vec!["coorm-validation", "--trace", t.to_str().unwrap()];
        args.extend(extra);
        let o = Command::new(env!("CARGO_BIN_EXE_esim"))
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success());
        assert!(err.contains(want), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}
