//! Moldable jobs through batchd: the policy picks the configuration (cbf by the OAR rule,
//! bicriteria by Dutot & Eyraud's BiCrit), equeue and econtrol show it before the start (as
//! expected by the plan) and after (as chosen), and the job runs on that many nodes with that
//! time limit.

use batch_proto::MoldConfig;
use batch_proto::{JobInfo, JobState};

use crate::harness::{texts, Cluster};

/// A script that writes how many nodes it got, then sleeps `secs`.
fn nodes_script(secs: &str) -> String {
    format!("#!/bin/sh\necho \"$ESCHED_NNODES\" > \"nodes-$ESCHED_JOB_ID\"\nsleep {secs}\n")
}

/// The node count job `id`'s script saw.
fn nodes_seen(c: &Cluster, id: u64) -> u32 {
    let text = std::fs::read_to_string(c.work.join(format!("nodes-{id}"))).unwrap_or_default();
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("job {id} wrote {text:?}"))
}

/// equeue's `%b %D` for job `id`, if it is listed.
fn config_column(c: &Cluster, id: u64) -> Option<String> {
    let out = c.ok(
        "equeue",
        &["--noheader", "-j", &id.to_string(), "-o", "%b %D"],
    );
    out.lines().next().map(|l| l.trim().to_string())
}

/// Checks that finished job `j` ran as its chosen configuration says, and shows it.
fn ran_as_chosen(c: &Cluster, j: &JobInfo) -> MoldConfig {
    let chosen = j
        .chosen
        .unwrap_or_else(|| panic!("job {} has no chosen configuration: {j:?}", j.id));
    assert_eq!((j.nodes, j.time_limit), (chosen.nodes, chosen.walltime));
    assert_eq!(nodes_seen(c, j.id), chosen.nodes, "job {}", j.id);
    let show = c.ok("econtrol", &["show", "job", &j.id.to_string()]);
    let line = format!("ChosenConfig={}x{}", chosen.nodes, hms(chosen.walltime));
    assert!(show.contains(&line), "{show}");
    assert!(
        show.contains(&format!("NumNodes={} ", chosen.nodes)),
        "{show}"
    );
    eprintln!("job {} ran with {line} ({:?})", j.id, j.state);
    chosen
}

/// `HH:MM:SS` of whole seconds, as econtrol prints a time limit.
fn hms(ms: u64) -> String {
    let s = ms / 1000;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

#[test]
fn cbf_takes_the_configuration_that_completes_earliest() {
    let c = Cluster::start(8, "cbf");
    c.script("nodes5.sh", &nodes_script("5"));
    c.script("nodes1.sh", &nodes_script("1"));
    c.script("nodes10.sh", &nodes_script("10"));
    // 6 of 8 nodes busy for (at most) 6 s. The margins below leave seconds for the tools on a
    // loaded machine.
    let blocker = c.submit(&["-N", "6", "-t", "6s", "nodes5.sh"]);
    c.wait_state(blocker, JobState::Running);
    // 2 nodes now for a minute end later than 8 nodes for 2 s after the blocker: 8 nodes. The
    // script outlives its 2 s, so it is killed at that limit.
    let m = c.submit(&["--moldable", "2:1:00,8:0:02", "--weight", "2", "nodes10.sh"]);
    // Amdahl, 4 s on one node, half serial: p(2) = 3 s fits now on the 2 free nodes before
    // job m's reservation (if submitted within 3 s of the blocker); every larger count waits
    // for m: 2 nodes for 3 s.
    let a = c.submit(&[
        "--moldable-model",
        "amdahl:0:04:0.5",
        "--nodes-range",
        "1-8",
        "nodes1.sh",
    ]);
    // Before the start: the plan's expected configuration, in equeue and econtrol.
    c.wait_until("job m's expected configuration in equeue", || {
        config_column(&c, m).as_deref() == Some("8x0:02 8")
    });
    let show = c.ok("econtrol", &["show", "job", &m.to_string()]);
    assert!(
        show.contains("ExpectedConfig=8x00:00:02") && show.contains("NumNodes=8 "),
        "{show}"
    );
    assert!(
        show.contains("Shape=moldable(2:00:01:00,8:00:00:02,weight:2)"),
        "{show}"
    );
    eprintln!(
        "pending job {m}: {}",
        show.lines().find(|l| l.contains("Expected")).unwrap_or("")
    );

    let a = c.wait_state(a, JobState::Completed);
    assert_eq!(
        ran_as_chosen(&c, &a),
        MoldConfig {
            nodes: 2,
            walltime: 3_000
        }
    );
    let m = c.wait_state(m, JobState::Timeout);
    assert_eq!(
        ran_as_chosen(&c, &m),
        MoldConfig {
            nodes: 8,
            walltime: 2_000
        }
    );
    // Killed at the chosen limit, not the longest configuration's minute.
    let ran = m.end_time.unwrap_or(0) - m.start_time.unwrap_or(0);
    assert!((2_000..9_000).contains(&ran), "ran {ran} ms");
    // A rigid job has no configuration.
    assert!(c.job(blocker).is_some_and(|j| j.chosen.is_none()));
}

#[test]
fn bicriteria_runs_each_job_with_the_configuration_bicrit_chose() {
    let c = Cluster::start(8, "bicriteria");
    c.script("short.sh", &nodes_script("0.2"));
    // The first batch: the blocker alone. The moldable jobs arriving meanwhile wait for the
    // next batch (§2.2) with no placement, so no expected configuration yet.
    let blocker = c.submit(&["-N", "8", "-t", "6s", "--wrap", "sleep 3"]);
    c.wait_state(blocker, JobState::Running);
    let explicit = c.submit(&["--moldable", "2:0:08,4:0:05,8:0:03", "short.sh"]);
    let model = c.submit(&[
        "--moldable-model",
        "linear:0:16",
        "--nodes-range",
        "1-8",
        "--weight",
        "5",
        "short.sh",
    ]);
    assert_eq!(config_column(&c, explicit).as_deref(), Some("- 8"));
    let explicit = c.wait_state(explicit, JobState::Completed);
    let model = c.wait_state(model, JobState::Completed);
    let e = ran_as_chosen(&c, &explicit);
    let m = ran_as_chosen(&c, &model);
    // Each is one of the configurations offered, with its own walltime.
    assert!(
        [(2, 8_000), (4, 5_000), (8, 3_000)].contains(&(e.nodes, e.walltime)),
        "{e:?}"
    );
    assert!((1..=8).contains(&m.nodes), "{m:?}");
    assert_eq!(m.walltime, 16_000_u64.div_ceil(u64::from(m.nodes)));
}

#[test]
fn bad_moldable_options_are_refused_in_one_line() {
    let c = Cluster::start(2, "cbf");
    for (args, why) in [
        (
            &["--weight", "2", "--wrap", "true"][..],
            "--weight applies to moldable jobs",
        ),
        (
            &["--moldable-model", "amdahl:10:0.1", "--wrap", "true"][..],
            "needs --nodes-range",
        ),
        (
            &[
                "--moldable-model",
                "amdahl:10:2",
                "--nodes-range",
                "1-2",
                "--wrap",
                "true",
            ][..],
            "not a number in [0, 1]",
        ),
        (
            &["--moldable", "4:10", "-N", "2", "--wrap", "true"][..],
            "drop -N/--nodes",
        ),
        // No configuration fits the cluster's largest pool: refused by batchd.
        (
            &["--moldable", "4:10,3:20", "--wrap", "true"][..],
            "3 nodes",
        ),
    ] {
        let out = c.run("esubmit", args);
        let (_, err) = texts(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
    }
    // Some configuration fits: accepted, and runs with one that does.
    let id = c.submit(&[
        "--moldable-model",
        "linear:0:02",
        "--nodes-range",
        "1-16",
        "--wrap",
        "echo \"$ESCHED_NNODES\" > \"nodes-$ESCHED_JOB_ID\"",
    ]);
    let j = c.wait_state(id, JobState::Completed);
    assert_eq!(ran_as_chosen(&c, &j).nodes, 2);
}
