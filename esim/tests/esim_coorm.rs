//! `esim coorm-experiments`, run as a user would, on a small inline trace.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn esim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_esim"))
        .args(args)
        .output()
        .expect("esim runs")
}

/// `jobs` short, narrow jobs (two packs of 200 when `jobs` = 400).
fn trace(dir: &Path, jobs: u64) -> PathBuf {
    let mut text = String::from("; Version: 2.2\n; MaxProcs: 16\n");
    for i in 0..jobs {
        let nodes = [1, 2, 4, 3, 6][i as usize % 5];
        let req = 60 + (i * 53) % 240;
        let run = req * (1 + i % 4) / 4;
        text.push_str(&format!(
            "{} {} -1 {run} {nodes} -1 -1 {nodes} {req} -1 1 1 1 -1 -1 -1 -1 -1\n",
            i + 1,
            i * 30
        ));
    }
    let p = dir.join("coorm.swf");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn quick_run_prints_the_figures_and_writes_tables_json_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path(), 400);
    let out = dir.path().join("out");
    let o = esim(&[
        "coorm-experiments",
        "--trace",
        t.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quick",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let md = String::from_utf8_lossy(&o.stdout);
    for key in [
        "Fig. 6: computed configurations",
        "Fig. 6: computed configurations, each counted once (OAR: as submitted)",
        "Fig. 6: CPU time",
        "messages, JSON",
        "messages, CDR-like",
        "OAR W0",
        "CooRM W3",
        "Fig. 7",
        "median [95 % CI]",
        "Cost of views",
    ] {
        assert!(md.contains(key), "no {key} in\n{md}");
    }
    for f in [
        "tables.md",
        "results.json",
        "fig6-computed_configs.svg",
        "fig6-submitted_configs.svg",
        "fig6-cpu_s.svg",
        "fig6-json_bytes.svg",
        "fig6-cdr_bytes.svg",
        "fig7-fairness.svg",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    // 1 pack × 2 pool counts × 5 systems.
    assert_eq!(v["fig6"].as_array().map(Vec::len), Some(10));
    assert_eq!(
        v["fig7"]["increase_s"][0]["values"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    // Every figure says its setting under it.
    let fig7 = std::fs::read_to_string(out.join("fig7-fairness.svg")).unwrap();
    assert!(
        fig7.contains("esim coorm-experiments on coorm.swf: W1 on 2 pack(s)"),
        "{fig7}"
    );
    // --replot draws the same figures again from results.json, without a trace or a run.
    let drawn: Vec<(String, String)> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "svg"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            std::fs::remove_file(&p).unwrap();
            (p.file_name().unwrap().to_string_lossy().into_owned(), text)
        })
        .collect();
    assert_eq!(drawn.len(), 6);
    let o = esim(&[
        "coorm-experiments",
        "--replot",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (name, text) in drawn {
        assert_eq!(
            std::fs::read_to_string(out.join(&name)).unwrap(),
            text,
            "{name} redrawn differently"
        );
    }
}

#[test]
fn a_trace_without_a_whole_pack_is_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path(), 150);
    let o = esim(&[
        "coorm-experiments",
        "--trace",
        t.to_str().unwrap(),
        "--quick",
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not one pack"), "{err}");
}

/// `coorm-validation --replot` redraws Fig. 8 from a results.json without batchd or a trace:
/// here the one committed under docs/coorm-figures/fig8.
#[test]
fn validation_figures_are_redrawn_from_results_json() {
    let dir = tempfile::tempdir().unwrap();
    let stored =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/coorm-figures/fig8/results.json");
    std::fs::copy(&stored, dir.path().join("results.json")).unwrap();
    let out = dir.path().to_str().unwrap();
    let o = esim(&["coorm-validation", "--replot", "--out", out]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in ["fig8-network.svg", "fig8-cpu.svg"] {
        let svg = std::fs::read_to_string(dir.path().join(f)).unwrap();
        let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
        let text: String = doc.descendants().filter_map(|n| n.text()).collect();
        assert!(
            text.contains("esim coorm-validation: the first 200 applications of pack 0 of KTH-SP2-1996-2.1-cln.swf.gz"),
            "{f}: {text}"
        );
    }
    // A run's options make no sense with --replot.
    let o = esim(&["coorm-validation", "--replot", "--out", out, "--pools", "4"]);
    assert!(!o.status.success());
}
