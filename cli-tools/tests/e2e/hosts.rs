//! A pool of hosts over OpenSSH: four sshd on this machine stand for four hosts
//! (`scripts/ssh-hosts.sh`: each in a UTS namespace of its own, so `hostname` there names the
//! host, on its own loopback address). batchd reaches them through one ssh session each, as it
//! would a cluster's nodes. Where the hosts cannot be set up (not root, no OpenSSH and no
//! package registry), each test prints one SKIPPED line and passes.

use std::time::{Duration, Instant};

use batch_proto::JobState;

use crate::harness::{
    bin_dir, mixed_workload, mixed_workload_on_virtual_nodes, now_ms, plugin_dir,
    starts_after_release, Cluster, Stood,
};

/// Four hosts node1..node4 answering ssh on their port, stopped when dropped.
struct Hosts(Stood);

impl Hosts {
    /// The hosts, or `None` (with the reason printed) where they cannot be set up here.
    fn up(port: u16) -> Option<Hosts> {
        Stood::up(
            "ssh-hosts.sh",
            "OpenSSH",
            ("SSH_HOSTS_PORT", port.to_string()),
            &["4"],
        )
        .map(Hosts)
    }

    fn host(&self, verb: &str, i: u32) {
        self.0.run(verb, &i.to_string());
    }

    /// A cluster whose only pool `hosts` is these four hosts, under `policy`; a host that
    /// does not answer for 2 s is set DOWN.
    fn cluster(&self, policy: &str) -> Cluster {
        self.cluster_of(&[("hosts", "node[1-4]")], &format!("name = {policy:?}\n"))
    }

    /// A cluster of `pools` (name and hosts of each) of these hosts, `policy` the body of its
    /// `[policy]` table.
    fn cluster_of(&self, pools: &[(&str, &str)], policy: &str) -> Cluster {
        let ssh_config = self.0.dir.path().join("ssh_config");
        Cluster::start_from(|dir| {
            let mut text = format!(
                "socket = {:?}\nstate_dir = {:?}\nplugin_dir = {:?}\nrepolicy_interval_ms = 10\n\
                 grace_period_ms = 500\nsync = \"normal\"\n",
                dir.join("batchd.sock"),
                dir.join("state"),
                plugin_dir(),
            );
            for (name, hosts) in pools {
                text.push_str(&format!(
                    "\n[[pool]]\nname = {name:?}\nhosts = {hosts:?}\n\n[pool.ssh]\n\
                     options = [\"-F\", {:?}]\nspool = {:?}\nhealth_interval_ms = 300\n\
                     down_after_ms = 2000\n",
                    ssh_config,
                    dir.join("spool"),
                ));
            }
            text.push_str(&format!("\n[policy]\n{policy}"));
            text
        })
    }
}

#[test]
fn a_coallocated_job_runs_each_component_on_its_own_hosts_and_gp_reaches_remote_victims() {
    let Some(hosts) = Hosts::up(2306) else { return };
    let c = hosts.cluster_of(
        &[("a", "node[1-2]"), ("b", "node[3-4]")],
        "name = \"rpp\"\n\n[policy.params]\npriority = \"GP\"\n",
    );
    all_answer(&c);
    c.script(
        "comp.sh",
        "#!/bin/sh\nf=comp-$ESCHED_JOB_ID-$ESCHED_COMPONENT.txt\n\
         echo \"$(hostname) $ESCHED_POOL $ESCHED_NODELIST $ESCHED_JOB_NODELIST\" > $f.tmp\nmv $f.tmp $f\n",
    );
    let g = c.submit(&[
        "--components",
        "2,2",
        "--deadline",
        "+1s",
        "-t",
        "1",
        "comp.sh",
    ]);
    let j = c.wait_job(g, "ended", |j| j.state.is_finished());
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    let line = |job: u64, i: usize| {
        let p = c.work.join(format!("comp-{job}-{i}.txt"));
        c.wait_until("the component's line", || p.exists());
        std::fs::read_to_string(&p).unwrap_or_default()
    };
    assert_eq!(line(g, 0), "node1 a node[1-2] node[1-4]\n");
    assert_eq!(line(g, 1), "node3 b node[3-4] node[1-4]\n");
    // A local job holds pool a; the next global job's deadline comes, and GP kills it on its
    // host to start the global job there.
    let local = c.submit(&["-p", "a", "-N", "2", "-t", "5", "--wrap", "sleep 300"]);
    c.wait_state(local, JobState::Running);
    let g2 = c.submit(&[
        "--components",
        "2,2",
        "--deadline",
        "+2s",
        "-t",
        "1",
        "comp.sh",
    ]);
    let l = c.wait_state(local, JobState::Preempted);
    assert!(l.end_time.is_some());
    assert_eq!(
        c.wait_job(g2, "ended", |j| j.state.is_finished()).state,
        JobState::Completed
    );
    assert_eq!(line(g2, 0).split(' ').next(), Some("node1"));
    assert_eq!(line(g2, 1).split(' ').next(), Some("node3"));
}

#[test]
fn an_evolving_job_grows_and_shrinks_across_hosts_and_reads_its_node_file_there() {
    let Some(hosts) = Hosts::up(2307) else { return };
    let c = hosts.cluster("evolving");
    all_answer(&c);
    c.script(
        "evo.sh",
        "#!/bin/sh\nend=$(( $(date +%s%3N) + 5500 ))\nwhile [ \"$(date +%s%3N)\" -lt $end ]; do\n\
         echo \"$(hostname) $(paste -sd, \"$ESCHED_NODEFILE\")\" >> evo-$ESCHED_JOB_ID.txt\n\
         sleep 0.1\ndone\n",
    );
    let id = c.submit(&["--evolving-profile", "2:1,2:3,2:2", "evo.sh"]);
    let j = c.wait_job(id, "ended", |j| j.state.is_finished());
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    let seen = std::fs::read_to_string(c.work.join(format!("evo-{id}.txt"))).unwrap_or_default();
    // Each distinct line, in order: one node, three, then two (the node added last goes).
    let mut steps: Vec<&str> = seen.lines().collect();
    steps.dedup();
    assert_eq!(
        steps,
        [
            "node1 node1",
            "node1 node1,node2,node3",
            "node1 node1,node2"
        ],
        "{seen}"
    );
}

#[test]
fn tools_in_a_job_on_a_host_reach_batchd_and_steps_run_on_every_host() {
    let Some(hosts) = Hosts::up(2308) else { return };
    let c = hosts.cluster("cbf");
    all_answer(&c);
    let bin = bin_dir();
    let tool = |t: &str| bin.join(t).display().to_string();
    c.script(
        "tools.sh",
        &format!(
            "#!/bin/sh\n\
             {erun} -N 1 hostname > step.txt\n\
             {erun} -l sh -c 'echo $SLURM_PROCID $SLURM_NODEID $SLURM_LOCALID $(hostname); exit $SLURM_NODEID' \
             2> failed.txt | sort > tasks.txt; echo \"rc=$?\" >> failed.txt\n\
             {esubmit} --parsable --wrap true > child.txt\n\
             {equeue} -h -j \"$SLURM_JOB_ID\" -o %T > state.txt\n",
            erun = tool("erun"),
            esubmit = tool("esubmit"),
            equeue = tool("equeue"),
        ),
    );
    let id = c.submit(&["-N", "2", "-t", "1", "tools.sh"]);
    let j = c.wait_job(id, "ended", |j| j.state.is_finished());
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    let read = |f: &str| std::fs::read_to_string(c.work.join(f)).unwrap_or_default();
    // The job's output holds what the tools said on stderr: shown with any failure below.
    let said = read(&format!("slurm-{id}.out"));
    // A step on the job's first host, recorded as a step of the job.
    assert_eq!(read("step.txt"), "node1\n", "job output:\n{said}");
    let steps = c.ok(
        "eacct",
        &["-n", "-P", "-j", &id.to_string(), "-o", "JobID,State"],
    );
    assert!(
        steps.contains(&format!("{id}.0|COMPLETED")),
        "{steps}\njob output:\n{said}"
    );
    // A step over the job's two hosts: each task on its host, with its ranks; the worst
    // exit code is the step's, and each bad end is reported as srun reports it.
    assert_eq!(
        read("tasks.txt"),
        "0: 0 0 0 node1\n1: 1 1 0 node2\n",
        "job output:\n{said}"
    );
    let failed = read("failed.txt");
    assert!(
        failed.contains("task 1: Exited with exit code 1"),
        "{failed}"
    );
    assert!(steps.contains(&format!("{id}.1|FAILED")), "{steps}");
    // A submission from the host, and a listing there that sees the job running.
    assert_eq!(read("state.txt"), "RUNNING\n", "job output:\n{said}");
    let child: u64 = read("child.txt").trim().parse().expect("a job id");
    assert_eq!(
        c.wait_job(child, "ended", |j| j.state.is_finished()).state,
        JobState::Completed
    );
}

#[test]
fn an_evolving_job_on_hosts_chooses_the_hosts_it_frees_with_erelease() {
    let Some(hosts) = Hosts::up(2309) else { return };
    let c = hosts.cluster_of(
        &[("hosts", "node[1-4]")],
        "name = \"evolving\"\n\n[evolving]\nrelease_notice_ms = 1500\n",
    );
    all_answer(&c);
    c.script(
        "evo.sh",
        &format!(
            "#!/bin/sh\nlog=evo-$ESCHED_JOB_ID.txt\nchosen=\n\
             end=$(( $(date +%s%3N) + 5500 ))\nwhile [ \"$(date +%s%3N)\" -lt $end ]; do\n\
             . \"$ESCHED_STEPFILE\"\n\
             echo \"$ESCHED_STEP_STATE $(paste -sd, \"$ESCHED_NODEFILE\")\" >> $log\n\
             if [ \"$ESCHED_STEP_STATE\" = releasing ] && [ -z \"$chosen\" ]; then\n\
             {0} node1,node2 >> $log.erelease 2>&1\n\
             {0} node2,node3 >> $log.erelease 2>&1 && chosen=1\nfi\nsleep 0.1\ndone\n",
            bin_dir().join("erelease").display()
        ),
    );
    let id = c.submit(&["--evolving-profile", "3:3,3:1", "evo.sh"]);
    let j = c.wait_job(id, "ended", |j| j.state.is_finished());
    let log = std::fs::read_to_string(c.work.join(format!("evo-{id}.txt"))).unwrap_or_default();
    let said =
        std::fs::read_to_string(c.work.join(format!("evo-{id}.txt.erelease"))).unwrap_or_default();
    assert_eq!(j.state, JobState::Completed, "{j:?}\n{log}\n{said}");
    // Told on its host to choose, it chose through its host's socket: not its batch host,
    // which it keeps; node2 and node3 go.
    assert!(log.contains("releasing node1,node2,node3"), "{log}");
    assert!(said.contains("node1 runs the job's batch script"), "{said}");
    assert!(
        said.contains(&format!("erelease: job {id}: node[2-3] leave the job")),
        "{said}"
    );
    assert!(log.trim_end().ends_with(" node1"), "{log}\n{said}");
    assert_eq!(j.node_list.as_deref(), Some("node1"));
}

/// Waits until every host's agent has answered (the pool is usable as soon as batchd serves,
/// but a start waits for its host's session).
fn all_answer(c: &Cluster) {
    c.wait_until("the four hosts answer", || {
        c.log_text().matches("host answers").count() >= 4
    });
}

#[test]
fn a_three_host_jobs_erun_hostname_prints_its_three_hosts() {
    let Some(hosts) = Hosts::up(2301) else { return };
    let c = hosts.cluster("cbf");
    all_answer(&c);
    let listed = c.ok("einfo", &["-N", "-h", "-o", "%N"]);
    assert_eq!(
        listed.lines().collect::<Vec<_>>(),
        ["node1", "node2", "node3", "node4"]
    );
    let id = c.submit(&[
        "-N",
        "3",
        "-t",
        "1",
        "-o",
        "out-%j.txt",
        "--wrap",
        &format!(
            "hostname; cat \"$ESCHED_NODEFILE\"; echo \"$SLURM_JOB_NODELIST $SLURMD_NODENAME $SLURM_NNODES\"; \
             {} hostname | sort",
            bin_dir().join("erun").display()
        ),
    ]);
    let j = c.wait_state(id, JobState::Completed);
    assert_eq!(j.node_list.as_deref(), Some("node[1-3]"));
    let out = std::fs::read_to_string(c.work.join(format!("out-{id}.txt"))).expect("output");
    // The batch script on the first host, then `srun hostname`: one task on each host.
    assert_eq!(
        out,
        "node1\nnode1\nnode2\nnode3\nnode[1-3] node1 3\nnode1\nnode2\nnode3\n"
    );
}

#[test]
fn kill9_of_batchd_while_jobs_run_on_hosts_loses_none() {
    let Some(hosts) = Hosts::up(2302) else { return };
    let mut c = hosts.cluster("cbf");
    all_answer(&c);
    let quick = c.submit(&["-N1", "-t", "1", "--wrap", "sleep 1; exit 3"]);
    let later = c.submit(&["-N1", "-t", "1", "--wrap", "sleep 8; exit 4"]);
    let fine = c.submit(&["-N1", "-t", "1", "--wrap", "sleep 8"]);
    let long = c.submit(&["-N1", "-t", "1", "--wrap", "sleep 300"]);
    for id in [quick, later, fine, long] {
        c.wait_state(id, JobState::Running);
    }
    c.kill9();
    // `quick` ends while batchd is away.
    std::thread::sleep(Duration::from_secs(3));
    let back = now_ms();
    c.launch();
    let q = c.wait_state(quick, JobState::Failed);
    assert_eq!(q.exit_code, Some(3));
    let end = q.end_time.expect("an end");
    assert!(
        end < back,
        "its real end ({end}), before the restart ({back})"
    );
    assert!(end >= q.start_time.expect("a start") + 1_000);
    assert_eq!(c.wait_state(later, JobState::Failed).exit_code, Some(4));
    assert_eq!(c.wait_state(fine, JobState::Completed).exit_code, Some(0));
    assert_eq!(c.job(long).map(|j| j.state), Some(JobState::Running));
    c.ok("ecancel", &[&long.to_string()]);
    c.wait_state(long, JobState::Cancelled);
    // Every run's directory on the hosts is gone once its end is stored.
    c.wait_until("the hosts' job directories removed", || {
        (1..=4).all(|i| {
            std::fs::read_dir(c.dir.path().join(format!("spool/node{i}/jobs")))
                .map(|d| d.count() == 0)
                .unwrap_or(true)
        })
    });
}

#[test]
fn a_host_whose_sshd_stops_goes_down_and_its_jobs_fail_or_requeue() {
    let Some(hosts) = Hosts::up(2303) else { return };
    let c = hosts.cluster("cbf");
    all_answer(&c);
    let plain = c.submit(&["-N1", "-t", "5", "--wrap", "sleep 300"]);
    let node = c
        .wait_state(plain, JobState::Running)
        .node_list
        .expect("nodes");
    assert_eq!(node, "node1");
    let again = c.submit(&["-N1", "-t", "5", "--requeue", "--wrap", "sleep 300"]);
    assert_eq!(
        c.wait_state(again, JobState::Running).node_list.as_deref(),
        Some("node2")
    );
    hosts.host("stop-host", 1);
    let j = c.wait_state(plain, JobState::NodeFail);
    assert_eq!(j.detail.as_deref(), Some("node node1 is down"));
    let reasons = c.ok("einfo", &["-R", "-h"]);
    assert!(
        reasons.starts_with("Not responding")
            && reasons.contains("batchd")
            && reasons.trim_end().ends_with("node1"),
        "{reasons}"
    );
    assert!(c.ok("einfo", &["-N", "-h", "-n", "node1"]).contains("down"));
    hosts.host("stop-host", 2);
    // Requeued, and started again on a host that answers.
    c.wait_job(again, "running again elsewhere", |j| {
        j.state == JobState::Running && j.node_list.as_deref() == Some("node3")
    });
    // Back: batchd set it down for not answering, so it is back in service.
    hosts.host("start-host", 1);
    c.wait_until("node1 back in service", || {
        c.ok("einfo", &["-N", "-h", "-n", "node1", "-o", "%t"])
            .trim()
            == "idle"
    });
    c.ok("ecancel", &[&again.to_string()]);
    c.wait_state(again, JobState::Cancelled);
}

#[test]
fn a_drained_host_takes_no_new_job_until_resumed_across_a_restart() {
    let Some(hosts) = Hosts::up(2304) else { return };
    let mut c = hosts.cluster("cbf");
    all_answer(&c);
    let running = c.submit(&["-N1", "-t", "1", "--wrap", "sleep 2"]);
    let node = c
        .wait_state(running, JobState::Running)
        .node_list
        .expect("nodes");
    c.ok(
        "econtrol",
        &[
            "update",
            &format!("NodeName={node}"),
            "State=DRAIN",
            "Reason=disk",
        ],
    );
    let wide = c.submit(&["-N4", "-t", "1", "--wrap", "true"]);
    c.wait_state(running, JobState::Completed);
    c.kill9();
    c.launch();
    all_answer(&c);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(c.job(wide).map(|j| j.state), Some(JobState::Pending));
    assert!(c.ok("einfo", &["-R", "-h"]).starts_with("disk"));
    c.ok(
        "econtrol",
        &["update", &format!("NodeName={node}"), "State=RESUME"],
    );
    assert_eq!(c.wait_state(wide, JobState::Completed).exit_code, Some(0));
}

#[test]
fn a_workload_starts_on_hosts_when_it_starts_on_virtual_nodes() {
    let Some(hosts) = Hosts::up(2305) else { return };
    let on_virtual = mixed_workload_on_virtual_nodes("hosts");
    let c = hosts.cluster("cbf");
    all_answer(&c);
    let t = Instant::now();
    let (ids, released) = mixed_workload(&c);
    let on_hosts = starts_after_release(&c, &ids, released);
    println!("starts after the release, ms: virtual {on_virtual:?}, hosts {on_hosts:?}");
    for (k, (v, h)) in on_virtual.iter().zip(&on_hosts).enumerate() {
        assert!(
            (v - h).abs() < 1_000,
            "job {k} starts {h} ms after the release on hosts, {v} ms on virtual nodes \
             ({on_hosts:?} / {on_virtual:?}, {:?})",
            t.elapsed()
        );
    }
}
