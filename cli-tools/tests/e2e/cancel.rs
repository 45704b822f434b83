//! Cancelling: pending and running jobs (the whole process group), and someone else's job.

use std::os::unix::process::CommandExt;

use batch_proto::JobState;

use crate::harness::{process_gone, recorded_pids, texts, Cluster};

#[test]
fn cancel_pending_job() {
    let c = Cluster::start(1, "cbf");
    let id = c.submit(&["-H", "--wrap", "true"]);
    c.wait_state(id, JobState::Pending);
    c.ok("ecancel", &[&id.to_string()]);
    let j = c.wait_state(id, JobState::Cancelled);
    assert!(j.start_time.is_none());
}

#[test]
fn cancel_running_job_kills_its_whole_process_group() {
    let c = Cluster::start(1, "cbf");
    // Children and a grandchild in a subshell, all in the job's group; each records its pid.
    c.script(
        "tree.sh",
        "#!/bin/sh\nsleep 60 & echo $! >> tree.pids\nsleep 60 & echo $! >> tree.pids\n\
         ( sleep 60 & echo $! >> tree.pids; wait ) &\necho $! >> tree.pids\necho $$ >> tree.pids\nwait\n",
    );
    let id = c.submit(&["tree.sh"]);
    c.wait_state(id, JobState::Running);
    c.wait_until("the job's five pids recorded", || {
        recorded_pids(&c.work).len() == 5
    });
    let pids = recorded_pids(&c.work);
    assert!(
        pids.iter().all(|p| !process_gone(*p)),
        "processes alive before the cancel"
    );
    c.ok("ecancel", &[&id.to_string()]);
    c.wait_state(id, JobState::Cancelled);
    c.wait_until("every process of the job gone", || {
        pids.iter().all(|p| process_gone(*p))
    });
}

#[test]
fn other_user_cannot_cancel_or_hold_my_job() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!(
            "SKIPPED other_user_cannot_cancel_or_hold_my_job: needs root to act as a second uid"
        );
        return;
    }
    let c = Cluster::start(1, "cbf");
    let id = c.submit(&["-H", "--wrap", "true"]);
    // uid/gid 65534 (nobody) owns no job here.
    // The checkout may sit under a directory only root can enter (CI's clone under /root):
    // give the other user copies of the tools in the cluster's world-readable temp dir.
    let bin = c.dir.path().join("bin");
    std::fs::create_dir(&bin).expect("bin dir");
    for tool in ["ecancel", "econtrol"] {
        std::fs::copy(crate::harness::bin_dir().join(tool), bin.join(tool)).expect("copy tool");
    }
    let as_nobody = |tool: &str, args: &[&str]| {
        let mut cmd = std::process::Command::new(bin.join(tool));
        cmd.env("ESCHED_SOCKET", &c.socket)
            .current_dir(&c.work)
            .args(args)
            .uid(65534)
            // std drops root's supplementary groups itself when it sets the uid.
            .gid(65534);
        cmd.output().expect("run as nobody")
    };
    let o = as_nobody("ecancel", &[&id.to_string()]);
    let (_, err) = texts(&o);
    assert!(!o.status.success(), "ecancel by another user succeeded");
    assert!(err.contains("Access/permission denied"), "{err}");
    let o = as_nobody("econtrol", &["release", &id.to_string()]);
    let (_, err) = texts(&o);
    assert!(
        !o.status.success() && err.contains("Access/permission denied"),
        "{err}"
    );
    let j = c.job(id).expect("job still there");
    assert_eq!(j.state, JobState::Pending);
    // The owner (root) can.
    c.ok("ecancel", &[&id.to_string()]);
    c.wait_state(id, JobState::Cancelled);
}

#[test]
fn signal_hold_release_and_cancel_by_name() {
    let c = Cluster::start(1, "cbf");
    // -b -s delivers a signal to the batch shell without cancelling: the job notes it and
    // carries on (scancel's -b: a shell that traps the signal needs it; without -b the
    // signal goes to the job's steps only).
    c.script(
        "usr1.sh",
        "#!/bin/sh\ntrap 'echo got-usr1 > usr1.seen' USR1\necho $$ > usr1.pids\n\
         i=0; while [ ! -f usr1.seen ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\nexit 0\n",
    );
    let id = c.submit(&["-J", "sig", "usr1.sh"]);
    c.wait_state(id, JobState::Running);
    c.wait_until("the job's trap installed", || {
        !recorded_pids(&c.work).is_empty()
    });
    c.ok("ecancel", &["-b", "-s", "USR1", &id.to_string()]);
    let j = c.wait_state(id, JobState::Completed);
    assert_eq!(j.exit_code, Some(0));
    assert!(c.work.join("usr1.seen").exists());

    // A job held after submission waits; released, it runs.
    let blocker = c.submit(&["-J", "blocker", "--wrap", "sleep 30"]);
    c.wait_state(blocker, JobState::Running);
    let later = c.submit(&["-J", "later", "--wrap", "true"]);
    c.ok("econtrol", &["hold", &later.to_string()]);
    assert!(c.job(later).is_some_and(|j| j.held));
    // -n cancels by name, leaving the others alone.
    c.ok("ecancel", &["-n", "blocker"]);
    c.wait_state(blocker, JobState::Cancelled);
    assert_eq!(c.job(later).map(|j| j.state), Some(JobState::Pending));
    c.ok(
        "econtrol",
        &[
            "update",
            &format!("JobId={later}"),
            "Name=renamed",
            "TimeLimit=2",
        ],
    );
    let j = c.job(later).expect("updated job");
    assert_eq!((j.name.as_str(), j.time_limit), ("renamed", 120_000));
    c.ok("econtrol", &["release", &later.to_string()]);
    c.wait_state(later, JobState::Completed);
}
