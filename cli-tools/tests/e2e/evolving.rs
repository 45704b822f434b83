//! An evolving job through batchd: its node file changes at the scheduled times, it is told
//! when it waits for nodes and when it must choose what it frees, it chooses, and equeue shows
//! its step.

use std::time::{Duration, Instant};

use batch_proto::JobState;

use crate::harness::{bin_dir, tail, texts, Cluster, POLL};

/// A job script that writes one line per look at its files: at start and at each SIGWINCH.
/// When told to release with `$KEEP` set, it frees every node but line `$KEEP` of its node
/// file. It ends a second after it holds its last step's nodes: signals that arrive while a
/// handler runs are folded into one, so it must look until the files say so.
fn evolving_script(erelease: &str) -> String {
    format!(
        r#"#!/bin/sh
log="$ESCHED_SUBMIT_DIR/evo-$ESCHED_JOB_ID.log"
chosen=""
done=""
look() {{
    . "$ESCHED_STEPFILE"
    echo "$(date +%s%3N) step=$ESCHED_STEP state=$ESCHED_STEP_STATE nodes=$(paste -sd, "$ESCHED_NODEFILE")" >> "$log"
    if [ "$ESCHED_STEP_STATE" = releasing ] && [ -n "$KEEP" ] && [ -z "$chosen" ]; then
        free=$(sed "${{KEEP}}d" "$ESCHED_NODEFILE" | paste -sd, -)
        {erelease} "$free" >> "$log.erelease" 2>&1 && chosen=1
    fi
    if [ "$ESCHED_STEP" = "$ESCHED_STEPS" ] && [ "$ESCHED_STEP_STATE" = running ]; then
        done=1
    fi
}}
trap look WINCH
look
while [ -z "$done" ]; do sleep 0.05 & wait $!; done
sleep 1
"#
    )
}

/// One line of the job's log.
#[derive(Debug)]
struct Look {
    at: u64,
    step: u32,
    state: String,
    nodes: Vec<String>,
}

fn looks(text: &str) -> Vec<Look> {
    text.lines()
        .filter_map(|l| {
            let mut parts = l.split(' ');
            let at = parts.next()?.parse().ok()?;
            let mut field = |k: &str| {
                parts
                    .next()
                    .and_then(|p| p.strip_prefix(k))
                    .map(str::to_string)
            };
            Some(Look {
                at,
                step: field("step=")?.parse().ok()?,
                state: field("state=")?,
                nodes: field("nodes=")?.split(',').map(str::to_string).collect(),
            })
        })
        .collect()
}

/// Polls `equeue` (its STEP column) and `equeue --records` (the step's phase) until job `id`
/// leaves the queue; returns what it showed, in order, each once.
fn watch_steps(c: &Cluster, id: u64) -> Vec<String> {
    let ids = id.to_string();
    let mut seen: Vec<String> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        // An unknown id is an error to equeue, as to squeue; an ended job ends the watch.
        // The step is `-o %s` (squeue's default columns have none).
        let out = c.run("equeue", &["-j", &ids, "-o", "%.18i %.2t %.6D %.5s %R"]);
        let (table, err) = texts(&out);
        if !out.status.success() {
            assert!(err.contains("Invalid job id specified"), "{err}");
            return seen;
        }
        // An ended job is still shown for a while, as squeue shows it.
        let Some(row) = table
            .lines()
            .nth(1)
            .filter(|r| r.split_whitespace().nth(1) == Some("R"))
        else {
            return seen;
        };
        let mut shown = vec![row
            .split_whitespace()
            .nth(3)
            .unwrap_or_default()
            .to_string()];
        if let Some(st) = c.queue(&["-j", &ids]).first().and_then(|j| j.step.clone()) {
            shown.push(format!("{}:{}", st.short(), st.phase));
        }
        for s in shown {
            if !seen.contains(&s) {
                seen.push(s);
            }
        }
        assert!(
            Instant::now() < deadline,
            "job {id} still running: {seen:?}"
        );
        std::thread::sleep(POLL);
    }
}

/// The job's log and what erelease printed, with the daemon's log, for failure messages.
fn job_log(c: &Cluster, id: u64) -> (Vec<Look>, String, String) {
    let log = std::fs::read_to_string(c.work.join(format!("evo-{id}.log"))).unwrap_or_default();
    let erelease =
        std::fs::read_to_string(c.work.join(format!("evo-{id}.log.erelease"))).unwrap_or_default();
    let context = format!(
        "job log:\n{log}\nerelease:\n{erelease}\n--- batchd log ---\n{}",
        tail(&c.log_text())
    );
    (looks(&log), erelease, context)
}

/// The first look in `step` with `state` (any state for `None`).
fn first<'a>(looks: &'a [Look], step: u32, state: Option<&str>, context: &str) -> &'a Look {
    looks
        .iter()
        .find(|l| l.step == step && state.is_none_or(|s| l.state == s))
        .unwrap_or_else(|| panic!("never in step {step} {state:?}\n{context}"))
}

/// `at` falls within a second after the scheduled instant `due` (both ms since the epoch).
fn on_time(at: u64, due: u64, start: u64, what: &str, context: &str) {
    assert!(
        at >= due && at < due + 1_000,
        "{what} seen at +{} ms, scheduled at +{} ms\n{context}",
        at as i64 - start as i64,
        due as i64 - start as i64
    );
}

/// Waits until job `id` runs; its start and the scheduled EP it was started with.
fn started(c: &Cluster, id: u64) -> (u64, Vec<batch_proto::Step>) {
    let running = c.wait_state(id, JobState::Running);
    let start = running.start_time.expect("a running job has a start");
    let ep = running.scheduled_ep.expect("started with its scheduled EP");
    (start, ep)
}

/// Submits the script with `profile`; with `keep`, it keeps that line of its node file when
/// told to release.
fn submit_evolving(c: &Cluster, profile: &str, keep: Option<u32>) -> u64 {
    let erelease = bin_dir().join("erelease");
    c.script(
        "evolving.sh",
        &evolving_script(&erelease.display().to_string()),
    );
    let export = format!(
        "ALL,KEEP={}",
        keep.map(|k| k.to_string()).unwrap_or_default()
    );
    c.submit(&[
        "--evolving-profile",
        profile,
        "--export",
        &export,
        "evolving.sh",
    ])
}

#[test]
fn three_step_job_resizes_at_scheduled_times_chooses_what_it_frees_and_shows_its_step() {
    // 6 free nodes; 2 → 4 → 1 nodes, 3 s each; told 1.5 s ahead to choose what it frees.
    let c = Cluster::start_with(6, "evolving", "\n[evolving]\nrelease_notice_ms = 1500\n");
    let id = submit_evolving(&c, "3:2,3:4,3:1", Some(3));
    let (start, ep) = started(&c, id);
    assert_eq!(
        ep.iter().map(|s| (s.duration, s.nodes)).collect::<Vec<_>>(),
        [(3_000, 2), (3_000, 4), (3_000, 1)]
    );
    let shown = c.ok("econtrol", &["show", "job", &id.to_string()]);
    assert!(shown.contains("ScheduledEP=3:2,3:4,3:1"), "{shown}");
    assert!(shown.contains("Step=1/3"), "{shown}");

    let seen = watch_steps(&c, id);
    let done = c.wait_state(id, JobState::Completed);
    assert_eq!(done.exit_code, Some(0));
    let columns: Vec<&String> = seen.iter().filter(|s| !s.contains(':')).collect();
    assert_eq!(columns, ["1/3", "2/3", "3/3"], "equeue showed {seen:?}");
    assert!(seen.contains(&"2/3:releasing".to_string()), "{seen:?}");

    let (looks, erelease, context) = job_log(&c, id);
    let one = first(&looks, 1, None, &context);
    assert_eq!(one.nodes, ["debug001", "debug002"], "{context}");
    // Step 2 at its boundary: two more nodes from the free set, the first node still first.
    let b1 = start + 3_000;
    let two = first(&looks, 2, None, &context);
    on_time(two.at, b1, start, "step 2", &context);
    assert_eq!(
        two.nodes,
        ["debug001", "debug002", "debug003", "debug004"],
        "{context}"
    );
    // Told 1.5 s before the shrink; it chose to keep its third node, not the default first.
    let b2 = b1 + 3_000;
    let releasing = first(&looks, 2, Some("releasing"), &context);
    on_time(releasing.at, b2 - 1_500, start, "release notice", &context);
    assert!(erelease.contains("start of step 3"), "{context}");
    let three = first(&looks, 3, None, &context);
    on_time(three.at, b2, start, "step 3", &context);
    assert_eq!(three.nodes, ["debug003"], "{context}");
    // The finished job keeps the EP it ran with and the node it ended on.
    assert_eq!(done.scheduled_ep.as_ref(), Some(&ep));
    assert_eq!(done.node_list.as_deref(), Some("debug003"));
}

#[test]
fn an_expanded_step_tells_the_job_it_waits_until_its_nodes_come() {
    // 6 nodes. A rigid job holds 4 for 8 s, and a 1-node job is due in 5 s: the evolving job
    // (2 → 1 → 4 nodes, 3 s each) cannot be delayed (its 2-node step would meet the 1-node
    // job), so the policy, with `expand_limit = 2` (Klein & Pérez's 2X), stretches its 1-node
    // step until the rigid job's 4 nodes are free.
    let c = Cluster::start_with(
        6,
        "evolving",
        "\n[policy.params]\nexpand_limit = 2\n\n[evolving]\nrelease_notice_ms = 1500\n",
    );
    let rigid = c.submit(&["-N", "4", "-t", "8s", "--wrap", "sleep 30"]);
    let rigid_start = c
        .wait_state(rigid, JobState::Running)
        .start_time
        .expect("started");
    c.submit(&[
        "-N", "1", "-t", "1:00", "--begin", "now+5", "--wrap", "sleep 60",
    ]);
    let id = submit_evolving(&c, "3:2,3:1,3:4", None);
    let (start, ep) = started(&c, id);
    assert_eq!(ep[0].duration, 3_000, "{ep:?}");
    assert!(
        ep[1].duration > 3_000 && start + ep[0].duration + ep[1].duration >= rigid_start + 8_000,
        "the 1-node step waits for the rigid job's end: {ep:?}"
    );

    let seen = watch_steps(&c, id);
    c.wait_state(id, JobState::Completed);
    assert!(seen.contains(&"2/3:waiting".to_string()), "{seen:?}");

    let (looks, _, context) = job_log(&c, id);
    // The default release of the 2 → 1 shrink: the node it got last goes, its first stays.
    let two = first(&looks, 2, None, &context);
    on_time(two.at, start + 3_000, start, "step 2", &context);
    assert_eq!(two.nodes, ["debug005"], "{context}");
    // Told it waits once the requested 3 s of step 2 are over.
    let waiting = first(&looks, 2, Some("waiting"), &context);
    on_time(waiting.at, start + 6_000, start, "waiting notice", &context);
    // Then its four nodes, at the end of the expanded step.
    let three = first(&looks, 3, Some("running"), &context);
    on_time(
        three.at,
        start + ep[0].duration + ep[1].duration,
        start,
        "step 3",
        &context,
    );
    assert_eq!(three.nodes.len(), 4, "{context}");
    assert_eq!(three.nodes[0], "debug005", "{context}");
}

/// The example evolving job of the README's tour (`examples/jobs/evolving.sh`) does its work
/// and ends COMPLETED at its last step, not TIMEOUT at its limit (here with short steps).
#[test]
fn the_example_evolving_job_completes_before_its_limit() {
    let c = Cluster::start(4, "evolving");
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/jobs/evolving.sh");
    let text = std::fs::read_to_string(&example).unwrap();
    c.script("example-evolving.sh", &text);
    let id = c.submit(&["--evolving-profile", "2:2,2:3,2:1", "example-evolving.sh"]);
    let done = c.wait_job(id, "the example job to end", |j| j.state.is_finished());
    assert_eq!(
        (done.state, done.exit_code),
        (JobState::Completed, Some(0)),
        "{done:?}"
    );
}
