//! batchd inside a Slurm allocation: a Slurm 22.05 cluster of four slurmd on this machine
//! (`scripts/slurm-cluster.sh`, nodes n1..n4), and batchd run as an ordinary user (`esched`)
//! holding a 4-node allocation as its pool `slurm`, its jobs run as steps of it. Where Slurm
//! cannot be installed or started (not root, no package registry), each test prints one
//! SKIPPED line and passes.

use std::process::{Command, Output};
use std::time::Duration;

use batch_proto::JobState;

use crate::harness::{
    bin_dir, config_text, mixed_workload, mixed_workload_on_virtual_nodes, release,
    starts_after_release, Cluster, Stood,
};

/// A Slurm cluster of four nodes whose controller listens on its port, stopped when dropped.
struct Slurm {
    stood: Stood,
    /// The unprivileged user batchd runs as.
    user: (u32, u32),
}

impl Slurm {
    /// The cluster, or `None` (with the reason printed) where it cannot be set up here.
    fn up(port: u16) -> Option<Slurm> {
        let stood = Stood::up(
            "slurm-cluster.sh",
            "Slurm",
            ("SLURM_CLUSTER_PORT", port.to_string()),
            &["4"],
        )?;
        let id = |flag: &str| -> u32 {
            let o = Command::new("id")
                .args([flag, "esched"])
                .output()
                .expect("id");
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse()
                .expect("the esched user")
        };
        let user = (id("-u"), id("-g"));
        Some(Slurm { stood, user })
    }

    fn conf(&self) -> String {
        self.stood
            .dir
            .path()
            .join("slurm.conf")
            .display()
            .to_string()
    }

    /// Slurm's `program args`, as batchd's user.
    fn client(&self, program: &str, args: &[&str]) -> Output {
        use std::os::unix::process::CommandExt;
        Command::new(program)
            .args(args)
            .env("SLURM_CONF", self.conf())
            .uid(self.user.0)
            .gid(self.user.1)
            .current_dir("/")
            .output()
            .expect("run a Slurm command")
    }

    /// `slurm-cluster.sh VERB DIR NODE` (`fail-node`, `revive-node`).
    fn node(&self, verb: &str, node: &str) {
        self.stood.run(verb, node);
    }

    /// The allocations Slurm runs (`ID NAME USER`), all users'.
    fn jobs(&self) -> Vec<String> {
        let o = self.client("squeue", &["--noheader", "--format=%i %j %u %T"]);
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    }

    /// batchd, as `esched`, with the pool `slurm` of four nodes in an allocation of this
    /// cluster, under `policy`.
    fn cluster(&self, policy: &str) -> Cluster {
        self.cluster_with(policy, "time_limit = \"30\"\n")
    }

    /// [`Slurm::cluster`] with `slurm` as the body of `[pool.slurm]` (beside its poll
    /// interval).
    fn cluster_with(&self, policy: &str, slurm: &str) -> Cluster {
        self.cluster_of(4, policy, slurm)
    }

    /// [`Slurm::cluster_with`] on an allocation of `nodes` nodes.
    fn cluster_of(&self, nodes: u32, policy: &str, slurm: &str) -> Cluster {
        Cluster::start_as(
            Some(self.user),
            vec![("SLURM_CONF".into(), self.conf())],
            |dir| {
                config_text(dir, 4, policy).replace(
                    "[[pool]]\nname = \"debug\"\nnodes = 4\n",
                    &format!(
                        "[[pool]]\nname = \"slurm\"\nnodes = {nodes}\ncpus_per_node = 2\n\n\
                         [pool.slurm]\npoll_interval_ms = 300\n{slurm}"
                    ),
                )
            },
        )
    }
}

/// The one allocation batchd holds: its Slurm job id.
fn allocation(s: &Slurm) -> u64 {
    let jobs = s.jobs();
    assert_eq!(
        jobs.len(),
        1,
        "squeue shows batchd's allocation only: {jobs:?}"
    );
    let f: Vec<&str> = jobs[0].split_whitespace().collect();
    assert_eq!(&f[1..], ["esched-slurm", "esched", "RUNNING"], "{jobs:?}");
    f[0].parse().expect("a job id")
}

/// What `esim` predicts for rigid jobs `(nodes, seconds)` all submitted at 0 with a limit of a
/// minute, on `nodes` nodes under CBF: each job's start, ms.
fn esim_starts(jobs: &[(u32, u32)], nodes: u32) -> Vec<i64> {
    esched_test_support::cargo_build(&bin_dir(), &["-p", "esim", "--bin", "esim"])
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().expect("temp dir");
    let mut swf = String::from("; rigid jobs of the Slurm-pool test\n");
    for (k, (n, secs)) in jobs.iter().enumerate() {
        swf.push_str(&format!(
            "{} 0 -1 {secs} {n} -1 -1 {n} 60 -1 1 1 1 -1 -1 -1 -1 -1\n",
            k + 1
        ));
    }
    std::fs::write(dir.path().join("w.swf"), swf).unwrap();
    let out = Command::new(bin_dir().join("esim"))
        .args([
            "run",
            "--policy",
            "cbf",
            "--linked",
            "-q",
            "--nodes",
            &nodes.to_string(),
        ])
        .arg("--trace")
        .arg(dir.path().join("w.swf"))
        .arg("--jobs")
        .arg(dir.path().join("jobs.csv"))
        .output()
        .expect("run esim");
    assert!(out.status.success(), "{out:?}");
    let csv = std::fs::read_to_string(dir.path().join("jobs.csv")).unwrap();
    let mut starts: Vec<(u64, i64)> = csv
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect();
    starts.sort();
    starts.into_iter().map(|(_, s)| s).collect()
}

#[test]
fn a_workload_starts_in_a_slurm_allocation_when_it_starts_on_virtual_nodes() {
    let Some(slurm) = Slurm::up(16817) else {
        return;
    };
    let on_virtual = mixed_workload_on_virtual_nodes("slurm");

    let c = slurm.cluster("cbf");
    let alloc = allocation(&slurm);
    let nodes = c.ok("einfo", &["-h", "-N", "-o", "%N"]);
    assert_eq!(
        nodes.split_whitespace().collect::<Vec<_>>(),
        ["n1", "n2", "n3", "n4"]
    );
    let (ids, released) = mixed_workload(&c);
    let in_slurm = starts_after_release(&c, &ids, released);
    println!("starts after the release, ms: virtual {on_virtual:?}, in Slurm {in_slurm:?}");
    for (k, (v, s)) in on_virtual.iter().zip(&in_slurm).enumerate() {
        assert!(
            (v - s).abs() < 1_000,
            "job {k} starts {s} ms after the release in Slurm, {v} ms on virtual nodes \
             ({in_slurm:?} / {on_virtual:?})"
        );
    }
    // Only batchd's allocation, the same all along.
    assert_eq!(allocation(&slurm), alloc);

    // Rigid jobs start when esim's replay of them (their run times, their limits) says, to
    // the second.
    let rigid: [(u32, u32); 5] = [(2, 2), (3, 1), (1, 3), (4, 1), (1, 1)];
    let ids: Vec<u64> = rigid
        .iter()
        .map(|(n, secs)| {
            c.submit(&[
                "-H",
                &format!("-N{n}"),
                "-t",
                "1",
                "--wrap",
                &format!("sleep {secs}"),
            ])
        })
        .collect();
    let released = release(&c, &ids);
    let in_slurm = starts_after_release(&c, &ids, released);
    let predicted = esim_starts(&rigid, 4);
    println!("rigid starts, ms: esim {predicted:?}, in Slurm {in_slurm:?}");
    for (k, (e, s)) in predicted.iter().zip(&in_slurm).enumerate() {
        assert!(
            (e - s).abs() < 1_000,
            "job {k} starts {s} ms after the release in Slurm, esim says {e} ({in_slurm:?} / {predicted:?})"
        );
    }

    // A job is a step of the allocation on its first node, with esched's job environment; its
    // erun's tasks on the other node are steps there.
    c.script(
        "two.sh",
        &format!(
            "#!/bin/sh\necho \"job=$SLURM_JOB_ID nodes=$SLURM_JOB_NODELIST on=$SLURMD_NODENAME\"\n\
             {} -N2 -n2 sh -c 'echo task $SLURM_PROCID on $SLURMD_NODENAME' | sort\n\
             squeue --noheader --steps --format='%i %j %N' | grep esched-$SLURM_JOB_ID | sort\n",
            bin_dir().join("erun").display()
        ),
    );
    let id = c.submit(&["-N2", "-t", "1", "-o", "two.out", "two.sh"]);
    let j = c.wait_state(id, JobState::Completed);
    let nodes = batch_proto::hostlist::expand(j.node_list.as_deref().unwrap_or("")).unwrap();
    let text = std::fs::read_to_string(c.work.join("two.out")).unwrap();
    let (a, b) = (&nodes[0], &nodes[1]);
    assert!(
        text.starts_with(&format!(
            "job={id} nodes={} on={a}\ntask 0 on {a}\ntask 1 on {b}\n",
            j.node_list.as_deref().unwrap()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("{alloc}.")) && text.contains(&format!("esched-{id} {a}")),
        "{text}"
    );
}

#[test]
fn a_job_in_slurm_survives_kill9_of_batchd_and_lost_nodes_or_allocation_go_down() {
    let Some(slurm) = Slurm::up(17217) else {
        return;
    };
    let mut c = slurm.cluster("cbf");
    let alloc = allocation(&slurm);
    let long = c.submit(&["-N2", "-t", "2", "--wrap", "sleep 4; echo done"]);
    c.wait_state(long, JobState::Running);
    c.kill9();
    std::thread::sleep(Duration::from_millis(500));
    c.launch();
    // The same allocation, and the job ends in it as it would have.
    assert_eq!(allocation(&slurm), alloc);
    let j = c.wait_job(long, "ended", |j| j.state.is_finished());
    assert_eq!(
        (j.state, j.exit_code),
        (JobState::Completed, Some(0)),
        "{j:?}"
    );

    // A node Slurm loses: DOWN with Slurm's word for it, and the job on it ends NODE_FAIL.
    let hit = c.submit(&["-N4", "-t", "2", "--wrap", "sleep 60"]);
    c.wait_state(hit, JobState::Running);
    slurm.node("fail-node", "n4");
    let j = c.wait_job(hit, "ended", |j| j.state.is_finished());
    assert_eq!(j.state, JobState::NodeFail, "{j:?}");
    let reasons = c.ok("einfo", &["-R", "-h"]);
    assert!(
        reasons
            .lines()
            .any(|l| l.starts_with("slurm: node") && l.ends_with(" n4")),
        "{reasons}"
    );

    let doomed = c.submit(&["-N3", "-t", "2", "--wrap", "sleep 60"]);
    c.wait_state(doomed, JobState::Running);
    let o = slurm.client("scancel", &[&alloc.to_string()]);
    assert!(o.status.success(), "{o:?}");
    let j = c.wait_job(doomed, "ended", |j| j.state.is_finished());
    assert_eq!(j.state, JobState::NodeFail, "{j:?}");
    // Slurm's final word, once the allocation has left COMPLETING.
    let mut reasons = String::new();
    c.wait_until("the allocation's end as the nodes' reason", || {
        reasons = c.ok("einfo", &["-R", "-h"]);
        reasons.contains(&format!("slurm: allocation {alloc} CANCELLED"))
    });
    c.wait_until("the nodes down", || {
        c.ok("einfo", &["-h", "-N", "-o", "%N %t"])
            .lines()
            .filter(|l| l.ends_with("down"))
            .count()
            == 4
    });
    slurm.node("revive-node", "n4");
}

/// An evolving job's script: one line per look at its node file, at its start and at each
/// SIGWINCH (which Slurm delivers to its step); it ends a second after its last step begins.
const EVOLVING: &str = r#"#!/bin/sh
log="$ESCHED_SUBMIT_DIR/evo-$ESCHED_JOB_ID.log"
done=""
look() {
    . "$ESCHED_STEPFILE"
    echo "step=$ESCHED_STEP nodes=$(paste -sd, "$ESCHED_NODEFILE") on=$SLURMD_NODENAME" >> "$log"
    if [ "$ESCHED_STEP" = "$ESCHED_STEPS" ] && [ "$ESCHED_STEP_STATE" = running ]; then done=1; fi
}
trap look WINCH
look
while [ -z "$done" ]; do sleep 0.05 & wait $!; done
sleep 1
"#;

#[test]
fn an_evolving_job_shrinks_in_place_and_a_job_past_the_allocations_end_waits_or_is_refused() {
    let Some(slurm) = Slurm::up(17617) else {
        return;
    };
    // An allocation of one minute: a job of a minute or more cannot end in it.
    let c = slurm.cluster_with("evolving", "time_limit = \"1\"\n");
    let alloc = allocation(&slurm);
    c.script("evolving.sh", EVOLVING);
    let evo = c.submit(&["--evolving-profile", "2:3,2:1", "evolving.sh"]);
    let long = c.submit(&["-N1", "-t", "5", "--wrap", "true"]);
    let j = c.wait_state(evo, JobState::Completed);
    let first = batch_proto::hostlist::expand(j.node_list.as_deref().unwrap_or(""))
        .unwrap()
        .remove(0);
    let log = std::fs::read_to_string(c.work.join(format!("evo-{evo}.log"))).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert!(
        lines.first().is_some_and(|l| l.starts_with("step=1 ")
            && l.split(' ')
                .nth(1)
                .is_some_and(|n| n.split(',').count() == 3)),
        "{log}"
    );
    assert_eq!(
        lines.last().copied(),
        Some(format!("step=2 nodes={first} on={first}").as_str()),
        "{log}"
    );
    // The 5-minute job waits for an allocation that can hold it, the nodes idle meanwhile.
    let l = c.job(long).expect("the long job");
    assert_eq!(l.state, JobState::Pending, "{l:?}");
    assert_eq!(allocation(&slurm), alloc);
    drop(c);

    let c = slurm.cluster_with("cbf", "time_limit = \"1\"\non_no_fit = \"refuse\"\n");
    crate::harness::refused(
        &c,
        "esubmit",
        &["-N1", "-t", "5", "--wrap", "true"],
        "Slurm allocation",
    );
    let short = c.submit(&["--evolving-profile", "1:2", "--wrap", "true"]);
    assert_eq!(c.wait_state(short, JobState::Completed).exit_code, Some(0));
}

#[test]
fn an_evolving_job_grows_past_the_allocation_through_a_sibling_allocation() {
    let Some(slurm) = Slurm::up(18417) else {
        return;
    };
    // Three nodes allocated, one more the pool may grow onto.
    let c = slurm.cluster_of(3, "evolving", "time_limit = \"30\"\ngrow = 1\n");
    let alloc = allocation(&slurm);
    c.script("evolving.sh", EVOLVING);
    let evo = c.submit(&["--evolving-profile", "2:2,4:4", "evolving.sh"]);
    // In its second step it holds all four nodes, n4 in an allocation of its own.
    let mut shown = String::new();
    let mut jobs = Vec::new();
    c.wait_until("the job grown onto n4", || {
        shown = c.ok("econtrol", &["show", "job", &evo.to_string()]);
        jobs = slurm.jobs();
        shown.contains("NumNodes=4") && shown.contains("(n4)") && jobs.len() == 2
    });
    let sibling: u64 = jobs
        .iter()
        .find(|j| j.contains(&format!("esched-slurm-job{evo}")))
        .and_then(|j| j.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no sibling allocation in {jobs:?}"));
    assert!(
        shown.contains(&format!("SlurmJobId={alloc},{sibling}(n4)")),
        "{shown}"
    );
    let j = c.wait_state(evo, JobState::Completed);
    assert_eq!(j.exit_code, Some(0));
    let log = std::fs::read_to_string(c.work.join(format!("evo-{evo}.log"))).unwrap();
    assert!(
        log.lines()
            .any(|l| l.starts_with("step=2 nodes=") && l.contains("n4")),
        "{log}"
    );
    // Given back with the job's end: batchd's own allocation only.
    c.wait_until("the sibling given back", || slurm.jobs().len() == 1);
    assert_eq!(allocation(&slurm), alloc);
}

#[test]
fn a_coallocated_job_spans_the_allocations_of_two_partitions() {
    let Some(slurm) = Slurm::up(18817) else {
        return;
    };
    // Pool a: two nodes of partition debug; pool b: partition other (n3, n4).
    let c = Cluster::start_as(
        Some(slurm.user),
        vec![("SLURM_CONF".into(), slurm.conf())],
        |dir| {
            config_text(dir, 2, "rpp").replace(
                "[[pool]]\nname = \"debug\"\nnodes = 2\n",
                "[[pool]]\nname = \"a\"\nnodes = 2\n[pool.slurm]\npartition = \"debug\"\n\
                 time_limit = \"30\"\npoll_interval_ms = 300\n\n\
                 [[pool]]\nname = \"b\"\nnodes = 2\n[pool.slurm]\npartition = \"other\"\n\
                 time_limit = \"30\"\npoll_interval_ms = 300\n",
            )
        },
    );
    let jobs = slurm.jobs();
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    c.script(
        "comp.sh",
        "#!/bin/sh\necho \"$ESCHED_COMPONENT $ESCHED_POOL $ESCHED_NODELIST $SLURMD_NODENAME\" \
         > \"comp-$ESCHED_COMPONENT.txt\"\n",
    );
    let g = c.submit(&[
        "--components",
        "2,2",
        "--deadline",
        "+2s",
        "-t",
        "1",
        "comp.sh",
    ]);
    let j = c.wait_state(g, JobState::Completed);
    assert_eq!(j.pool.as_deref(), Some("a,b"), "{j:?}");
    let read = |k: u32| std::fs::read_to_string(c.work.join(format!("comp-{k}.txt"))).unwrap();
    // Each component ran on its own pool's first node, a step of that pool's allocation.
    let (a, b) = (read(0), read(1));
    let pools: Vec<String> = [&a, &b]
        .iter()
        .map(|t| t.split_whitespace().nth(1).unwrap_or("").to_string())
        .collect();
    assert!(
        pools.contains(&"a".to_string()) && pools.contains(&"b".to_string()),
        "{a}{b}"
    );
    for t in [&a, &b] {
        let f: Vec<&str> = t.split_whitespace().collect();
        let first = batch_proto::hostlist::expand(f[2]).unwrap().remove(0);
        assert_eq!(f[3], first, "{t}");
        if f[1] == "b" {
            assert!(["n3", "n4"].contains(&f[3]), "{t}");
        }
    }
}
