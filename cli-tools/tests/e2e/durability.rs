//! `kill -9` of batchd: acknowledged jobs survive, ids continue, running jobs are finished.

use batch_proto::{Client, JobSpec, JobState, Request, Response, SubmitRequest};

use crate::harness::Cluster;

#[test]
fn kill9_with_1000_pending_jobs_loses_none() {
    let mut c = Cluster::start(2, "cbf");
    // Through the socket API for speed; each Submitted reply is an acknowledgement.
    let mut client = Client::connect(&c.socket).expect("connect");
    let work = c.work.to_str().expect("utf-8 path").to_string();
    let mut ids = Vec::with_capacity(1000);
    for i in 0..1000 {
        let mut spec = JobSpec::new("#!/bin/sh\ntrue\n", work.clone(), 1, 60_000);
        spec.name = format!("held{i}");
        spec.hold = true;
        match client.request(&Request::Submit(SubmitRequest {
            spec,
            test_only: false,
        })) {
            Ok(Response::Submitted { id }) => ids.push(id),
            other => panic!("submission {i}: {other:?}"),
        }
    }
    drop(client);
    c.kill9();
    c.launch();
    let queued = c.queue(&["-t", "PD"]);
    let back: Vec<(u64, String)> = queued.iter().map(|j| (j.id, j.name.clone())).collect();
    let sent: Vec<(u64, String)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (*id, format!("held{i}")))
        .collect();
    assert_eq!(back.len(), 1000, "jobs lost across kill -9");
    assert_eq!(back, sent, "queue order changed across kill -9");
    assert!(queued.iter().all(|j| j.held));
    let next = c.submit(&["-H", "--wrap", "true"]);
    assert!(
        next > *ids.iter().max().unwrap_or(&0),
        "id {next} reused after restart"
    );
}

#[test]
fn job_running_across_a_restart_is_recorded() {
    let mut c = Cluster::start(1, "cbf");
    c.script(
        "slow.sh",
        "#!/bin/sh\necho begin\nsleep 2\necho end\nexit 7\n",
    );
    let id = c.submit(&["slow.sh"]);
    c.wait_state(id, JobState::Running);
    // Wait for the job's first output: the supervisor has then surely recorded its pid. (A
    // kill -9 in the few ms between the RUNNING record and that pid file loses the job as
    // FAILED with no exit code: reported to batchd's owner.)
    let out_file = c.work.join(format!("slurm-{id}.out"));
    c.wait_until("the job's first line", || {
        std::fs::read_to_string(&out_file).is_ok_and(|t| t.contains("begin"))
    });
    c.kill9();
    c.launch();
    let j = c.wait_state(id, JobState::Failed);
    assert_eq!(j.exit_code, Some(7));
    let out = std::fs::read_to_string(&out_file).expect("output");
    assert!(out.contains("begin") && out.contains("end"), "{out}");
}
