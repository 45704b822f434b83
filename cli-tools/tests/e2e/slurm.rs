//! A Slurm user's habits through the real tools: sbatch scripts run unchanged,
//! nothing accepted and silently wrong. Grouped in few tests so that the suite stays fast.

use std::time::{SystemTime, UNIX_EPOCH};

use batch_proto::JobState;

use crate::harness::{refused, texts, Cluster};

#[test]
fn an_sbatch_script_runs_unchanged() {
    let c = Cluster::start(3, "cbf");
    c.script(
        "slurm.sh",
        "#!/bin/sh\n#SBATCH -J x -N 2 -t 5\n#SBATCH -o out-%5j-%N-%x.txt\n#ESUB -J esubwins\n\
         cd \"$SLURM_SUBMIT_DIR\" || exit 9\n\
         echo \"id=$SLURM_JOB_ID name=$SLURM_JOB_NAME nodes=$SLURM_JOB_NODELIST \
         n=$SLURM_NNODES part=$SLURM_JOB_PARTITION pwd=$(pwd)\"\n",
    );
    let id = c.submit(&["slurm.sh"]);
    let j = c.wait_state(id, JobState::Completed);
    assert_eq!((j.name.as_str(), j.nodes), ("esubwins", 2));
    assert_eq!(j.time_limit, 5 * 60_000);
    let first = j
        .node_list
        .as_deref()
        .and_then(|l| batch_proto::hostlist::expand(l).ok())
        .and_then(|v| v.into_iter().next())
        .expect("node list");
    let file = c.work.join(format!("out-{id:05}-{first}-esubwins.txt"));
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{}: {e}; work has {:?}", file.display(), ls(&c)));
    let work = c.work.display().to_string();
    let nodes = j.node_list.clone().unwrap_or_default();
    assert_eq!(
        text.trim(),
        format!("id={id} name=esubwins nodes={nodes} n=2 part=debug pwd={work}")
    );

    // SBATCH_* variables are read like ESUB_* (an unknown pool proves the one read).
    let out = c
        .tool("esubmit")
        .env("SBATCH_TIMELIMIT", "7")
        .args(["--parsable", "--hold", "--wrap", "true"])
        .output()
        .expect("esubmit");
    let held: u64 = texts(&out).0.trim().parse().expect("job id");
    assert_eq!(c.job(held).map(|j| j.time_limit), Some(7 * 60_000));
    let out = c
        .tool("esubmit")
        .env("SBATCH_PARTITION", "nosuchpool")
        .args(["--wrap", "true"])
        .output()
        .expect("esubmit");
    assert_eq!(out.status.code(), Some(1));
    assert!(texts(&out).1.contains("nosuchpool"), "{}", texts(&out).1);

    // Every filename escape is expanded or refused.
    refused(
        &c,
        "esubmit",
        &["-o", "out-%q.txt", "--wrap", "true"],
        "'%q'",
    );
    refused(
        &c,
        "esubmit",
        &["-e", "err-%", "--wrap", "true"],
        "lone '%'",
    );
    c.script("bad.sh", "#!/bin/sh\n#SBATCH --no-such-option\ntrue\n");
    refused(
        &c,
        "esubmit",
        &["bad.sh"],
        "unrecognized option '--no-such-option'",
    );
    ok_cancel(&c, held);
}

fn ls(c: &Cluster) -> Vec<String> {
    std::fs::read_dir(&c.work)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn ok_cancel(c: &Cluster, id: u64) {
    c.ok("ecancel", &[&id.to_string()]);
}

#[test]
fn slurm_spellings_and_errors() {
    let c = Cluster::start(1, "cbf");
    let id = c.submit(&["-J", "sleeper", "--wrap", "sleep 30"]);
    c.wait_state(id, JobState::Running);
    let ids = id.to_string();

    // -h is --noheader where Slurm has it, so `state=$(squeue -h -j $id -o %T)` works.
    assert_eq!(c.ok("equeue", &["-h", "-j", &ids, "-o", "%T"]), "RUNNING\n");
    let info = c.ok("einfo", &["-h"]);
    assert!(
        !info.contains("PARTITION") && info.contains("debug"),
        "{info}"
    );
    assert!(c.ok("equeue", &["--help"]).contains("--noheader"));

    // eacct lists running jobs, by id and by state.
    let acct = c.ok("eacct", &["-P", "-n", "-j", &ids]);
    assert!(
        acct.starts_with(&format!("{id}|sleeper|debug|RUNNING|")),
        "{acct}"
    );
    let acct = c.ok("eacct", &["-X", "-P", "-n", "-s", "R"]);
    assert_eq!(acct.lines().count(), 1, "{acct}");
    // Without -X, sacct lists the running job's batch step under it.
    let acct = c.ok(
        "eacct",
        &["-P", "-n", "-s", "R", "-o", "JobID,JobName,State"],
    );
    assert_eq!(
        acct,
        format!("{id}|sleeper|RUNNING\n{id}.batch|batch|RUNNING\n")
    );

    // Unknown options: one line, the tool's prefix, exit 1, named as options.
    for tool in [
        "esubmit", "equeue", "ecancel", "einfo", "eacct", "econtrol", "erelease",
    ] {
        refused(
            &c,
            tool,
            &["--no-such-option"],
            "unrecognized option '--no-such-option'",
        );
    }
    refused(
        &c,
        "esubmit",
        &["--bogus=4G", "--wrap", "true"],
        "unrecognized option '--bogus=4G'",
    );
    refused(
        &c,
        "esubmit",
        &["--bogus=4G", "job.sh"],
        "unrecognized option '--bogus=4G'",
    );

    // Slurm's errors for what does not exist.
    refused(
        &c,
        "econtrol",
        &["show", "partition", "nosuch"],
        "Partition nosuch not found",
    );
    assert!(c
        .ok("econtrol", &["show", "partition", "debug"])
        .contains("PartitionName=debug"));
    refused(
        &c,
        "equeue",
        &["-u", "nosuchuser-x"],
        "Invalid user: nosuchuser-x",
    );
    refused(
        &c,
        "ecancel",
        &["-u", "nosuchuser-x"],
        "Invalid user name: nosuchuser-x",
    );

    c.ok("ecancel", &[&ids]);
    c.wait_state(id, JobState::Cancelled);
    // squeue -j shows a job that just ended, in its final state, until slurmctld forgets it
    // (MinJobAge, 300 s); an id it never had is an error.
    assert_eq!(
        c.ok("equeue", &["-h", "-j", &ids, "-o", "%i %t"]),
        format!("{id} CA\n")
    );
    refused(&c, "equeue", &["-j", "999999"], "Invalid job id specified");
    // ... but a queued job filtered out by another option is an empty table.
    let other = c.submit(&["--hold", "--wrap", "true"]);
    assert_eq!(
        c.ok("equeue", &["-h", "-j", &other.to_string(), "-t", "R"]),
        ""
    );

    // eacct -S with an earlier time of today finds today's jobs (read in UTC here).
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let of_day = (secs % 86_400).saturating_sub(120);
    let earlier = format!(
        "{:02}:{:02}:{:02}",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    );
    for since in [earlier.as_str(), "midnight", "today", "now-1hour"] {
        let out = c
            .tool("eacct")
            .env("TZ", "UTC")
            .args(["-P", "-n", "-j", &ids, "-S", since])
            .output()
            .expect("eacct");
        let rows = texts(&out).0;
        assert!(
            rows.starts_with(&format!("{id}|sleeper|debug|CANCELLED")),
            "-S {since}: {rows}"
        );
    }
    let out = c
        .tool("eacct")
        .env("TZ", "UTC")
        .args(["-P", "-n", "-j", &ids, "-E", "midnight"])
        .output()
        .expect("eacct");
    assert_eq!(texts(&out).0, "", "ended after midnight");
    ok_cancel(&c, other);
}

#[test]
fn a_job_array_runs_as_slurm_names_it() {
    let c = Cluster::start(4, "cbf");
    // A typical sbatch array script, unchanged.
    c.script(
        "array.sh",
        "#!/bin/sh\n#SBATCH -J x -N 2 -t 5 -o out-%A_%a.txt --array 0-3\n\
         cd $SLURM_SUBMIT_DIR\n\
         echo \"task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID job $SLURM_JOB_ID on $SLURM_JOB_NODELIST\"\n",
    );
    let array = c.submit(&["array.sh"]);
    for (k, task) in (0..4u64).enumerate() {
        let id = array + k as u64;
        let j = c.wait_state(id, JobState::Completed);
        assert_eq!((j.name.as_str(), j.nodes), ("x", 2));
        let file = c.work.join(format!("out-{array}_{task}.txt"));
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{}: {e}; work has {:?}", file.display(), ls(&c)));
        let nodes = j.node_list.unwrap_or_default();
        assert_eq!(
            text.trim(),
            format!("task {task} of {array} job {id} on {nodes}")
        );
    }
    // sacct's JobID of a task is ARRAY_TASK; the array's id selects every task.
    let acct = c.ok("eacct", &["-P", "-n", "-j", &array.to_string()]);
    let labels: Vec<&str> = acct.lines().filter_map(|l| l.split('|').next()).collect();
    // Each task's batch step follows it, as sacct lists them.
    let want: Vec<String> = (0..4)
        .flat_map(|t| [format!("{array}_{t}"), format!("{array}_{t}.batch")])
        .collect();
    assert_eq!(labels, want, "{acct}");
    let one = c.ok("eacct", &["-X", "-P", "-n", "-j", &format!("{array}_2")]);
    assert!(
        one.starts_with(&format!("{array}_2|x|")) && one.lines().count() == 1,
        "{one}"
    );
}

#[test]
fn an_array_throttle_and_task_ids() {
    let c = Cluster::start(4, "easy");
    let array = c.submit(&[
        "--array",
        "0-5:2%1",
        "-t",
        "1",
        "-J",
        "thr",
        "--wrap",
        "sleep 0.3; echo task $SLURM_ARRAY_TASK_ID",
    ]);
    let a = array.to_string();
    // Three tasks (0, 2, 4), one at a time although four nodes are free.
    let tasks: Vec<_> = (0..3)
        .map(|k| c.wait_state(array + k, JobState::Completed))
        .collect();
    assert_eq!(
        tasks
            .iter()
            .map(|j| j.array.map(|t| t.index))
            .collect::<Vec<_>>(),
        [Some(0), Some(2), Some(4)]
    );
    // Each task's output where sbatch puts it by default: slurm-%A_%a.out.
    for k in [0, 2, 4] {
        let out = std::fs::read_to_string(c.work.join(format!("slurm-{array}_{k}.out")));
        assert_eq!(out.ok().as_deref(), Some(format!("task {k}\n").as_str()));
    }
    for w in tasks.windows(2) {
        let (end, next) = (w[0].end_time.unwrap_or(0), w[1].start_time.unwrap_or(0));
        assert!(
            next >= end,
            "task {} started at {next} before {} ended at {end}",
            w[1].id,
            w[0].id
        );
    }

    // ID_N and ID in equeue, ecancel and econtrol; equeue -r lists the tasks.
    let held = c.submit(&["--hold", "--array", "1-3", "--wrap", "true"]);
    let h = held.to_string();
    let ids = c.ok("equeue", &["-h", "-r", "-j", &h, "-o", "%i %r"]);
    assert_eq!(
        ids,
        format!("{held}_1 Held\n{held}_2 Held\n{held}_3 Held\n"),
        "{ids}"
    );
    let show = c.ok("econtrol", &["show", "job", &format!("{held}_2")]);
    assert!(
        show.starts_with(&format!(
            "JobId={} ArrayJobId={held} ArrayTaskId=2 ",
            held + 1
        )),
        "{show}"
    );
    c.ok("ecancel", &[&format!("{held}_2")]);
    c.wait_state(held + 1, JobState::Cancelled);
    refused(&c, "ecancel", &[&format!("{held}_9")], &format!("{held}_9"));
    c.ok("econtrol", &["release", &h]);
    c.wait_state(held, JobState::Completed);
    c.wait_state(held + 2, JobState::Completed);
    assert_eq!(
        c.ok("equeue", &["-h", "-j", &format!("{held}_1"), "-o", "%i %t"]),
        format!("{held}_1 CD\n")
    );
    refused(
        &c,
        "esubmit",
        &["--array", "3-1", "--wrap", "true"],
        "runs backwards",
    );
    assert!(c.ok("eacct", &["-X", "-n", "-j", &a]).lines().count() == 3);
}

#[test]
fn resources_map_onto_whole_nodes() {
    // A second pool whose nodes have 4 CPUs and 8 GiB each.
    let c = Cluster::start_with(
        2,
        "cbf",
        "\n[[pool]]\nname = \"big\"\nnodes = 4\ncpus_per_node = 4\nmem_per_node = 8192\n",
    );
    // 8 tasks of 2 CPUs: two per 4-CPU node, four nodes.
    let id = c.submit(&[
        "-p",
        "big",
        "-n",
        "8",
        "-c",
        "2",
        "--mem=4G",
        "--exclusive",
        "-A",
        "proj",
        "-q",
        "high",
        "--hold",
        "--wrap",
        "true",
    ]);
    let j = c.job(id).expect("queued");
    assert_eq!(
        (j.nodes, j.account.as_deref(), j.qos.as_deref()),
        (4, Some("proj"), Some("high"))
    );
    let row = c.ok("equeue", &["-h", "-j", &id.to_string(), "-o", "%D %a %q"]);
    assert_eq!(row, "4 proj high\n");
    let show = c.ok("econtrol", &["show", "job", &id.to_string()]);
    assert!(show.contains(" Account=proj QOS=high\n"), "{show}");
    // 4 GiB per CPU: two tasks per 8 GiB node.
    let per_cpu = c.submit(&[
        "-p",
        "big",
        "-n",
        "4",
        "--mem-per-cpu=4G",
        "--hold",
        "--wrap",
        "true",
    ]);
    assert_eq!(c.job(per_cpu).map(|j| j.nodes), Some(2));
    // Without -p, the count fits every pool that can hold the job (debug's nodes have 1 CPU).
    let any = c.submit(&["-n", "2", "--mem=4G", "--hold", "--wrap", "true"]);
    assert_eq!(c.job(any).map(|j| j.nodes), Some(2));
    refused(
        &c,
        "esubmit",
        &["-p", "big", "-c", "8", "--wrap", "true"],
        "8 CPUs per task, but a node has 4 CPUs",
    );
    refused(
        &c,
        "esubmit",
        &["-p", "big", "--mem=16G", "--wrap", "true"],
        "16384 MiB per node, but a node has 8192 MiB",
    );
    refused(
        &c,
        "esubmit",
        &["-p", "big", "-N", "1", "-n", "5", "--wrap", "true"],
        "-N asks for 1",
    );
    // sbatch accepts the options its users and tools always pass; here they are stored and
    // shown, and change nothing.
    let inert = c.submit(&[
        "-H",
        "--mail-type=END",
        "--mail-user=me",
        "--wckey=submitit",
        "--comment=kept",
        "--nice",
        "--wrap",
        "true",
    ]);
    let show = c.ok("econtrol", &["show", "job", &inert.to_string()]);
    assert!(
        show.contains("   WCKey=submitit Comment=kept MailUser=me MailType=END Nice=100\n"),
        "{show}"
    );
    for held in [id, per_cpu, any, inert] {
        ok_cancel(&c, held);
    }
}

#[test]
fn wait_hostnames_and_allocations() {
    let c = Cluster::start(2, "cbf");
    // -W blocks until the job ends and exits with its exit code.
    let out = c.run("esubmit", &["-W", "--parsable", "--wrap", "exit 7"]);
    let id: u64 = texts(&out).0.trim().parse().expect("job id");
    assert_eq!(out.status.code(), Some(7), "{:?}", texts(&out));
    assert_eq!(c.job(id).map(|j| j.state), Some(JobState::Failed));
    let out = c.run(
        "esubmit",
        &[
            "-W",
            "--array",
            "0-1",
            "--wrap",
            "exit $SLURM_ARRAY_TASK_ID",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{:?}", texts(&out));
    assert_eq!(
        c.ok("econtrol", &["show", "hostnames", "debug[001-003],gpu7"]),
        "debug001\ndebug002\ndebug003\ngpu7\n"
    );
    refused(
        &c,
        "econtrol",
        &["show", "hostnames", "debug[3-1]"],
        "invalid host list",
    );
    // -X leaves out the steps sacct lists under the job (here its batch step).
    let all = c.ok("eacct", &["-n", "-P", "-j", &id.to_string()]);
    let jobs = c.ok("eacct", &["-X", "-n", "-P", "-j", &id.to_string()]);
    assert_eq!(all.lines().count(), 2, "{all}");
    assert_eq!(jobs.lines().next(), all.lines().next());
    assert!(
        all.lines()
            .nth(1)
            .is_some_and(|l| l.starts_with(&format!("{id}.batch|batch||FAILED|7:0|"))),
        "{all}"
    );
}

#[test]
fn signals_open_modes_requeue_and_nodes() {
    // A second pool whose nodes have 4 CPUs and 8 GiB each, for `show node`.
    let mut c = Cluster::start_with(
        2,
        "cbf",
        "\n[[pool]]\nname = \"big\"\nnodes = 2\ncpus_per_node = 4\nmem_per_node = 8192\n",
    );

    // --signal=B:SIG@SECONDS from an #SBATCH line: the batch shell gets USR1 two seconds
    // before its 4-second limit, and is still killed at the limit.
    c.script(
        "warned.sh",
        "#!/bin/sh\n#SBATCH --signal=B:USR1@2 -t 4s -p debug\n\
         trap 'date +%s%3N > \"$SLURM_SUBMIT_DIR/warned-$SLURM_JOB_ID\"' USR1\n\
         while :; do sleep 0.1; done\n",
    );
    let warned = c.submit(&["warned.sh"]);
    let show = c.ok("econtrol", &["show", "job", &warned.to_string()]);
    assert!(show.contains("\n   Signal=B:USR1@2\n"), "{show}");
    // Without B: the job's steps, never the batch shell (sbatch's rule): the step's trap
    // runs and the shell, which has none (USR1 would kill it), finishes the job normally.
    let erun = crate::harness::bin_dir().join("erun");
    let wrap = format!(
        "{} sh -c 'trap \"echo child > child-$SLURM_JOB_ID; exit 0\" USR1; \
         while :; do sleep 0.1; done'; echo shell > shell-$SLURM_JOB_ID",
        erun.display()
    );
    let steps = c.submit(&[
        "--signal=USR1@3",
        "-t",
        "6s",
        "-p",
        "debug",
        "--wrap",
        &wrap,
    ]);
    let j = c.wait_state(warned, JobState::Timeout);
    let at: u64 = std::fs::read_to_string(c.work.join(format!("warned-{warned}")))
        .unwrap_or_else(|e| panic!("the trap did not run: {e}; work has {:?}", ls(&c)))
        .trim()
        .parse()
        .expect("a time in ms");
    let (start, end) = (j.start_time.unwrap_or(0), j.end_time.unwrap_or(0));
    assert!(
        start <= at && at < end,
        "signalled at {at}, run {start}..{end}"
    );
    c.wait_state(steps, JobState::Completed);
    for (file, text) in [("child", "child"), ("shell", "shell")] {
        let got =
            std::fs::read_to_string(c.work.join(format!("{file}-{steps}"))).unwrap_or_default();
        assert_eq!(got.trim(), text, "{file}; work has {:?}", ls(&c));
    }
    for (args, wanted) in [
        (
            &["--signal=USR1@65536"][..],
            "'@65536' is not a number of seconds from 0 to 65535",
        ),
        (&["--signal=NOPE"], "'NOPE' is not a signal"),
        (&["--signal=X:USR1"], "'X:' is not a flag"),
        (&["--open-mode=sometimes"], "expected append or truncate"),
    ] {
        let mut all = args.to_vec();
        all.extend(["--wrap", "true"]);
        refused(&c, "esubmit", &all, wanted);
    }

    // --open-mode: append keeps what the file had, truncate (the default) does not.
    let same = |mode: &[&str], text: &str| {
        let mut args = vec!["-W", "-o", "same.txt"];
        args.extend_from_slice(mode);
        let cmd = format!("echo {text}");
        args.extend(["--wrap", cmd.as_str()]);
        c.ok("esubmit", &args);
        std::fs::read_to_string(c.work.join("same.txt")).unwrap_or_default()
    };
    assert_eq!(same(&[], "one"), "one\n");
    assert_eq!(same(&["--open-mode=append"], "two"), "one\ntwo\n");
    assert_eq!(same(&[], "three"), "three\n");
    assert_eq!(same(&["--open-mode", "append"], "four"), "three\nfour\n");
    assert_eq!(same(&["--open-mode=truncate"], "five"), "five\n");

    // econtrol requeue: a running job is killed and runs again with its id; with
    // --open-mode=append its output keeps both runs.
    let again = c.submit(&[
        "-p",
        "big",
        "-o",
        "again.txt",
        "--open-mode=append",
        "--wrap",
        "echo run $SLURM_JOB_ID; sleep 30",
    ]);
    let out = c.work.join("again.txt");
    let runs = || {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .filter(|l| *l == format!("run {again}"))
            .count()
    };
    c.wait_until("the first run's output", || runs() == 1);
    let a = again.to_string();

    // show node: the job's node is allocated with all its CPUs and memory.
    let node = c.ok("econtrol", &["show", "node", "big001"]);
    assert_eq!(
        node,
        format!(
            "NodeName=big001\n   CPUAlloc=4 CPUTot=4\n   RealMemory=8192 AllocMem=8192\n   \
             State=ALLOCATED Partitions=big\n   JobId={again}\n\n"
        )
    );
    let all = c.ok("econtrol", &["show", "nodes"]);
    let names: Vec<&str> = all
        .lines()
        .filter_map(|l| l.strip_prefix("NodeName="))
        .collect();
    assert_eq!(names, ["debug001", "debug002", "big001", "big002"], "{all}");
    assert!(
        all.contains("NodeName=big002\n   CPUAlloc=0 CPUTot=4\n   RealMemory=8192 AllocMem=0\n   State=IDLE Partitions=big\n   JobId=(null)\n"),
        "{all}"
    );
    assert!(
        all.contains("NodeName=debug001\n   CPUAlloc=0 CPUTot=1\n   RealMemory=1 "),
        "{all}"
    );
    refused(
        &c,
        "econtrol",
        &["show", "node", "nosuch"],
        "Node nosuch not found",
    );
    refused(
        &c,
        "econtrol",
        &["show", "node", "big[001-003]"],
        "Node big003 not found",
    );

    c.ok("econtrol", &["requeue", &a]);
    c.wait_until("the second run's output", || runs() == 2);
    let j = c.wait_state(again, JobState::Running);
    assert_eq!(j.id, again);
    c.ok("ecancel", &[&a]);
    c.wait_state(again, JobState::Cancelled);

    // A requeue on its way when batchd dies (the job ignores SIGTERM, so it lives until the
    // SIGKILL of the grace period) still happens after the restart.
    let stubborn = c.submit(&[
        "-p",
        "big",
        "-o",
        "stubborn.txt",
        "--open-mode=append",
        "--wrap",
        "trap '' TERM; echo run; sleep 30",
    ]);
    let stubborn_out = c.work.join("stubborn.txt");
    let lines = || {
        std::fs::read_to_string(&stubborn_out)
            .unwrap_or_default()
            .lines()
            .filter(|l| *l == "run")
            .count()
    };
    c.wait_until("the stubborn job's first run", || lines() == 1);
    c.ok("econtrol", &["requeue", &stubborn.to_string()]);
    c.kill9();
    c.launch();
    c.wait_until("the stubborn job's second run", || lines() == 2);
    assert_eq!(c.wait_state(stubborn, JobState::Running).id, stubborn);
    c.ok("ecancel", &[&stubborn.to_string()]);
    c.wait_state(stubborn, JobState::Cancelled);

    // A finished job: `requeuehold` puts it back held, kept across a daemon restart.
    c.ok("econtrol", &["requeuehold", &a]);
    let j = c.wait_state(again, JobState::Pending);
    assert!(j.held, "{j:?}");
    c.kill9();
    c.launch();
    let j = c.wait_state(again, JobState::Pending);
    assert!(j.held && j.id == again, "{j:?}");
    assert_eq!(
        c.ok("equeue", &["-h", "-j", &a, "-o", "%i %T %r"]),
        format!("{again} PENDING Held\n")
    );

    // Slurm's refusals: a pending job, an unknown id, a job submitted with --no-requeue.
    refused(&c, "econtrol", &["requeue", &a], "Job is pending execution");
    refused(
        &c,
        "econtrol",
        &["requeue", "999999"],
        "Invalid job id specified",
    );
    let never = c.submit(&["--no-requeue", "-W", "--wrap", "true"]);
    refused(
        &c,
        "econtrol",
        &["requeue", &never.to_string()],
        "Requested operation is presently disabled",
    );
    c.ok("econtrol", &["release", &a]);
    c.wait_until("the third run's output", || runs() == 3);
    c.ok("ecancel", &[&a]);

    // SBATCH_* inputs through the real tool; an array's span in its tasks' environment;
    // `econtrol update JobId=ID_N` changes that task, `JobId=ID` every task.
    let out = c
        .tool("esubmit")
        .env("SBATCH_ARRAY_INX", "0-6:3")
        .env("SBATCH_ACCOUNT", "proj")
        .env("SBATCH_SIGNAL", "USR2@7")
        .env("SBATCH_HOLD", "1")
        .args([
            "--parsable",
            "-p",
            "debug",
            "--wrap",
            "echo $SLURM_ARRAY_TASK_COUNT $SLURM_ARRAY_TASK_MIN $SLURM_ARRAY_TASK_MAX \
             $SLURM_ARRAY_TASK_STEP > span-$SLURM_ARRAY_TASK_ID",
        ])
        .output()
        .expect("esubmit");
    let array: u64 = texts(&out).0.trim().parse().expect("job id");
    let show = c.ok("econtrol", &["show", "job", &format!("{array}_3")]);
    assert!(
        show.contains(" Account=proj ") && show.contains("\n   Signal=USR2@7\n"),
        "{show}"
    );
    c.ok(
        "econtrol",
        &["update", &format!("JobId={array}_3"), "Name=middle"],
    );
    c.ok(
        "econtrol",
        &["update", &format!("JobId={array}"), "TimeLimit=2"],
    );
    let rows = c.ok(
        "equeue",
        &["-h", "-r", "-j", &array.to_string(), "-o", "%i %j %l"],
    );
    assert_eq!(
        rows,
        format!("{array}_0 wrap 2:00\n{array}_3 middle 2:00\n{array}_6 wrap 2:00\n")
    );
    refused(
        &c,
        "econtrol",
        &["update", &format!("JobId={array}_4"), "Name=x"],
        &format!("Invalid job id specified: {array}_4"),
    );
    c.ok("econtrol", &["release", &array.to_string()]);
    for (k, task) in [0, 3, 6].into_iter().enumerate() {
        c.wait_state(array + k as u64, JobState::Completed);
        let got = std::fs::read_to_string(c.work.join(format!("span-{task}"))).unwrap_or_default();
        assert_eq!(got.trim(), "3 0 6 3", "task {task}");
    }
}

/// sbatch, squeue and scontrol habits through the real tools and a real batchd, each as
/// Slurm 22.05 behaves: `-t` rounded up to the minute, a job without `-t` given its pool's
/// limit, a CRLF script refused with sbatch's words, `scontrol update` of a pending job's
/// Partition, Dependency and `TimeLimit=+N`, `scontrol -o`, `squeue -A/-w` and
/// `SQUEUE_FORMAT`.
#[test]
fn submission_listing_and_update_habits() {
    let c = Cluster::start_with(
        2,
        "cbf",
        "\n[[pool]]\nname = \"big\"\nnodes = 2\nmax_time = 120\n",
    );
    let limit = |id: u64| c.ok("econtrol", &["-o", "show", "job", &id.to_string()]);
    // -t 1:00:30 is 1:01:00 in Slurm; a job without -t gets its pool's MaxTime.
    let rounded = c.submit(&["-H", "-t", "1:00:30", "-p", "big", "--wrap", "true"]);
    let one = limit(rounded);
    assert_eq!(one.lines().count(), 1, "{one}");
    assert!(one.contains(" TimeLimit=01:01:00 "), "{one}");
    let default = c.submit(&["-H", "-p", "big", "--wrap", "true"]);
    assert!(limit(default).contains(" TimeLimit=02:00:00 "));

    c.script("dos.sh", "#!/bin/sh\r\ntrue\r\n");
    refused(
        &c,
        "esubmit",
        &["dos.sh"],
        "Batch script contains DOS line breaks (\\r\\n) instead of expected UNIX line breaks (\\n).",
    );

    // scontrol update of a pending job: TimeLimit=+N, Partition, Dependency (job= as scontrol
    // abbreviates JobId).
    let moved = c.submit(&["-H", "-t", "10", "-A", "proj", "--wrap", "true"]);
    let m = moved.to_string();
    c.ok(
        "econtrol",
        &[
            "update",
            &format!("job={m}"),
            "TimeLimit=+5",
            "Partition=big",
            &format!("Dependency=afterok:{rounded}"),
        ],
    );
    let shown = limit(moved);
    assert!(
        shown.contains(" TimeLimit=00:15:00 ")
            && shown.contains(" Partition=big ")
            && shown.contains(&format!(" Dependency=afterok:{rounded} ")),
        "{shown}"
    );
    refused(
        &c,
        "econtrol",
        &["update", &format!("JobId={m}"), "Partition=nosuch"],
        "invalid pool",
    );

    // squeue -A, and SQUEUE_FORMAT as -o.
    assert_eq!(
        c.ok("equeue", &["-h", "-o", "%i", "-A", "proj"]),
        format!("{moved}\n")
    );
    let out = c
        .tool("equeue")
        .env("SQUEUE_FORMAT", "%i|%a|%C")
        .args(["-h", "-j", &m])
        .output()
        .expect("equeue");
    assert_eq!(texts(&out).0, format!("{moved}|proj|1\n"));
    for id in [rounded, default, moved] {
        c.ok("ecancel", &[&id.to_string()]);
    }
}

/// `equeue --json`, `eacct --json` and `einfo --json` print Slurm 22.05's `squeue --json`,
/// `sacct --json` and `sinfo --json` documents: `{"meta", "errors", "jobs"}` (`"nodes"` for
/// sinfo) with Slurm's keys (squeue's `job_id`, `job_state`; sacct's `state.current`,
/// `exit_code`, `steps[].step.id`). `--records` keeps the daemon's job records.
#[test]
fn json_is_slurms_and_records_are_the_daemons() {
    let c = Cluster::start(2, "cbf");
    let erun = crate::harness::bin_dir().join("erun").display().to_string();
    c.script(
        "json.sh",
        &format!(
            "#!/bin/sh\n#SBATCH -N 2 -t 10 --comment=hello\n\
             {erun} -n 2 true\n\
             while [ ! -f go ]; do sleep 0.1; done\nexit 3\n"
        ),
    );
    let id = c.submit(&["json.sh"]);
    let ids = id.to_string();
    let json = |tool: &str, args: &[&str]| -> serde_json::Value {
        let out = c.ok(tool, args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{tool} {args:?}: {e}: {out}"))
    };
    // Running, with its step 0 over.
    c.wait_until("step 0 recorded as ended", || {
        let a = json("eacct", &["--json", "-j", &ids]);
        a["jobs"][0]["steps"].as_array().is_some_and(|s| {
            s.iter()
                .any(|s| s["step"]["id"] == 0 && s["state"] == "COMPLETED")
        })
    });
    let q = json("equeue", &["--json", "-j", &ids]);
    assert_eq!(q["errors"], serde_json::json!([]));
    assert_eq!(q["meta"]["plugin"]["type"], "openapi/v0.0.38");
    let j = &q["jobs"][0];
    assert_eq!(j["job_id"], id);
    assert_eq!(j["job_state"], "RUNNING");
    assert_eq!(j["nodes"], "debug[001-002]");
    assert_eq!(j["node_count"], 2);
    assert_eq!(j["time_limit"], 10);
    assert_eq!(j["comment"], "hello");
    assert!(j["submit_time"]
        .as_u64()
        .is_some_and(|t| t > 1_600_000_000 && t < 4_000_000_000));
    let a = json("eacct", &["--json", "-j", &ids]);
    assert_eq!(a["meta"]["plugin"]["type"], "openapi/dbv0.0.38");
    let steps = a["jobs"][0]["steps"].as_array().unwrap();
    assert_eq!(steps[0]["step"]["id"], "batch");
    assert_eq!(steps[0]["state"], "RUNNING");
    assert_eq!(steps[1]["step"]["job_id"], id);
    assert_eq!(steps[1]["tasks"]["count"], 2);
    let n = json("einfo", &["--json"]);
    assert_eq!(n["nodes"][0]["name"], "debug001");
    assert_eq!(n["nodes"][0]["state"], "allocated");
    assert_eq!(n["nodes"][0]["partitions"], serde_json::json!(["debug"]));
    // The daemon's records: a JSON array of JobInfo, and the cluster record.
    assert_eq!(c.queue(&["-j", &ids])[0].id, id);
    assert!(json("einfo", &["--records"])["pools"].is_array());

    std::fs::write(c.work.join("go"), "").unwrap();
    c.wait_state(id, JobState::Failed);
    let a = json("eacct", &["--json", "-j", &ids]);
    let j = &a["jobs"][0];
    assert_eq!(j["job_id"], id);
    assert_eq!(j["state"]["current"], "FAILED");
    assert_eq!(j["exit_code"]["status"], "ERROR");
    assert_eq!(j["exit_code"]["return_code"], 3);
    assert_eq!(j["time"]["limit"], 10);
    assert!(j["time"]["end"].as_u64() >= j["time"]["start"].as_u64());
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps[0]["step"]["id"], "batch");
    assert_eq!(steps[0]["state"], "FAILED");
    assert_eq!(steps[1]["step"]["id"], 0);
    assert_eq!(steps[1]["exit_code"]["status"], "SUCCESS");
    // sacct -X --json: the jobs without their steps.
    let x = json("eacct", &["--json", "-X", "-j", &ids]);
    assert_eq!(x["jobs"][0]["steps"], serde_json::json!([]));
}

#[test]
fn slurms_end_by_deadline_removes_a_job_that_can_no_longer_end_by_it() {
    let c = Cluster::start(1, "cbf");
    // Slurm's --deadline: a job whose limit cannot fit before it is removed, DEADLINE; one that
    // fits runs; a held one is removed once the time left is shorter than its limit.
    let held = c.submit(&["-H", "--deadline", "+6s", "-t", "1s", "--wrap", "true"]);
    // Five seconds before its time left is shorter than its limit.
    assert_eq!(c.job(held).map(|j| j.state), Some(JobState::Pending));
    let never = c.submit(&["--deadline", "+2s", "-t", "1", "--wrap", "true"]);
    let fits = c.submit(&["--deadline", "+10min", "-t", "1", "--wrap", "true"]);
    let j = c.wait_state(never, JobState::Deadline);
    assert_eq!(j.start_time, None);
    assert!(
        j.detail.as_deref().unwrap_or("").starts_with("DeadLine"),
        "{j:?}"
    );
    c.wait_state(fits, JobState::Completed);
    let j = c.wait_state(held, JobState::Deadline);
    let late = j.end_time.unwrap_or(0).saturating_sub(j.submit_time);
    assert!(
        (4_500..10_000).contains(&late),
        "removed {late} ms after its submission"
    );
    let acct = c.ok(
        "eacct",
        &["-X", "-P", "-n", "-j", &never.to_string(), "-o", "State"],
    );
    assert_eq!(acct, "DEADLINE\n");
}
