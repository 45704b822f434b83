//! `eacct --swf`, `eacct --svg` and `einfo --svg` on a live batchd: the SWF is read by pyss's
//! parser, the SVGs are parsed and their job rectangles counted.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use batch_proto::JobState;

use crate::harness::Cluster;

/// The job ids an SVG draws (its `class="job"` rectangles), and how many are expected ones.
fn drawn(path: &Path) -> (BTreeSet<u64>, usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
    let mut ids = BTreeSet::new();
    let mut expected = 0;
    for n in doc.descendants() {
        let Some(class) = n.attribute("class") else {
            continue;
        };
        let classes: Vec<&str> = class.split(' ').collect();
        if classes.contains(&"job") {
            assert!(n.has_tag_name("rect"));
            ids.insert(n.attribute("data-job").unwrap().parse().unwrap());
            expected += usize::from(classes.contains(&"expected"));
        }
    }
    (ids, expected)
}

/// Runs pyss's SWF parser (scripts/pyss-read-swf.py) on `swf`; SKIPPED without the pyss archive
/// of the shared folder, except in CI.
fn pyss_reads(swf: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tarball = root.join("../shared/tools/pyss/pyss-44a2423.tar.gz");
    if !tarball.exists() && std::env::var_os("CI").is_none() {
        eprintln!("SKIPPED: no pyss archive at {}", tarball.display());
        return String::new();
    }
    let o = Command::new("python3")
        .arg(root.join("scripts/pyss-read-swf.py"))
        .arg(&tarball)
        .arg(swf)
        .output()
        .expect("python3 runs");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "pyss: {out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

#[test]
fn swf_and_pictures_of_a_live_batchd() {
    let c = Cluster::start(4, "cbf");
    let ok = c.submit(&["-N", "1", "-t", "1", "--wrap", "true"]);
    let failed = c.submit(&["-N", "2", "-t", "1", "--wrap", "false"]);
    c.wait_state(ok, JobState::Completed);
    c.wait_state(failed, JobState::Failed);
    let run = c.submit(&["-N", "3", "-t", "5", "--wrap", "sleep 60"]);
    c.wait_state(run, JobState::Running);
    let pend = c.submit(&["-N", "2", "-t", "2", "--wrap", "true"]);
    c.wait_job(pend, "an expected start", |j| j.expected_start.is_some());

    // eacct --swf: the two jobs that ran and ended, 18 fields each, read by pyss's parser.
    let swf = c.work.join("ran.swf");
    c.ok("eacct", &["--swf", swf.to_str().unwrap()]);
    let text = std::fs::read_to_string(&swf).unwrap();
    assert!(text.contains("; Computer: batchd (esched "), "{text}");
    assert!(text.lines().any(|l| l == "; MaxProcs: 4"), "{text}");
    let rows: Vec<Vec<i64>> = text
        .lines()
        .filter(|l| !l.starts_with(';'))
        .map(|l| l.split_whitespace().map(|f| f.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    for r in &rows {
        assert_eq!(r.len(), 18);
        let (nodes, limit, status) = if r[0] as u64 == ok {
            (1, 60, 1)
        } else {
            (2, 60, 0)
        };
        assert_eq!(
            (r[4], r[7], r[8], r[10]),
            (nodes, nodes, limit, status),
            "{r:?}"
        );
        assert!(r[2] >= 0 && r[3] >= 0 && r[3] <= limit);
    }
    let read = pyss_reads(&swf);
    assert!(
        read.is_empty() || read.starts_with("pyss: 2 jobs read"),
        "{read}"
    );

    // einfo --svg: the running job on its three nodes and the pending one where the plan
    // expects it.
    let plan = c.work.join("plan.svg");
    c.ok("einfo", &["--svg", plan.to_str().unwrap()]);
    let (ids, expected) = drawn(&plan);
    assert_eq!(ids, BTreeSet::from([run, pend]));
    assert_eq!(expected, 1, "the pending job is drawn as expected");
    let text = std::fs::read_to_string(&plan).unwrap();
    assert!(
        text.contains(&format!(r#"data-job="{run}" data-nodes="0-2""#)),
        "{text}"
    );

    // einfo --png: the same picture, rendered.
    let png = c.work.join("plan.png");
    c.ok("einfo", &["--png", png.to_str().unwrap()]);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");

    // einfo --plot: the plan on the terminal, the running job a capital on its three nodes'
    // rows, the pending one a small letter, each named in the legend.
    let out = c
        .tool("einfo")
        .arg("--plot")
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    // A row per node, labelled with its name.
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("debug0"))
        .collect();
    assert_eq!(rows.len(), 4, "a row per node of the pool: {text}");
    assert!(
        text.contains(&format!("A job {run} ")),
        "the running job is A: {text}"
    );
    assert!(
        text.contains(&format!("a job {pend} ")) && text.contains("(expected)"),
        "{text}"
    );
    let with_a = rows
        .iter()
        .filter(|l| {
            l.trim_start()
                .split_once(' ')
                .is_some_and(|(_, cells)| cells.contains('A'))
        })
        .count();
    assert_eq!(with_a, 3, "job {run} on three nodes: {text}");
    // The chart begins when the running job began, not an hour of nothing before it.
    assert!(
        rows.iter().any(|l| l
            .trim_start()
            .split_once(' ')
            .is_some_and(|(_, cells)| cells.starts_with('A'))),
        "{text}"
    );

    // eacct --svg: the past day, finished and running jobs.
    let day = c.work.join("day.svg");
    c.ok("eacct", &["--svg", day.to_str().unwrap()]);
    let (ids, expected) = drawn(&day);
    assert_eq!(ids, BTreeSet::from([ok, failed, run]));
    assert_eq!(expected, 0);
    c.ok("ecancel", &[&run.to_string(), &pend.to_string()]);
}
