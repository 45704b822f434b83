//! Job steps: `erun` (srun) inside a job, its record in `eacct`, signals to the steps, the
//! usage measured, and `erun`/`ealloc` outside a job. Each test states what Slurm 22.05 does.

use batch_proto::JobState;

use crate::harness::{bin_dir, Cluster};

/// The erun binary, named in scripts by its absolute path (the job's PATH is the test's).
fn erun() -> String {
    bin_dir().join("erun").display().to_string()
}

/// sacct -P -n -o JobID,State,ExitCode of job `id`, one row per line.
fn acct_rows(c: &Cluster, id: u64) -> Vec<String> {
    c.ok(
        "eacct",
        &[
            "-P",
            "-n",
            "-j",
            &id.to_string(),
            "-o",
            "JobID,JobName,State,ExitCode",
        ],
    )
    .lines()
    .map(str::to_string)
    .collect()
}

#[test]
fn steps_run_on_the_jobs_nodes_and_sacct_lists_them() {
    let c = Cluster::start(4, "cbf");
    let erun = erun();
    // As on Slurm: `srun -n 4 hostname` prints four lines, `--label` prefixes the task id,
    // an mpirun-style line reads $SLURM_NTASKS, and srun's exit code is the tasks' worst.
    c.script(
        "steps.sh",
        &format!(
            "#!/bin/sh\n#SBATCH -n 4\n\
             {erun} -n 4 hostname > hosts.txt\n\
             {erun} --label -n 2 sh -c 'echo $SLURM_PROCID $SLURM_STEP_ID $SLURMD_NODENAME' | sort > label.txt\n\
             echo \"np=$SLURM_NTASKS nodes=$SLURM_JOB_NUM_NODES\" > np.txt\n\
             {erun} -N 1 -n 1 sh -c 'exit 3'\n\
             echo rc=$? > rc.txt\n\
             {erun} -n 4 sh -c 'echo $SLURM_PROCID/$SLURM_LOCALID/$SLURM_NODEID/$SLURM_STEP_NUM_TASKS/$SLURM_STEP_NODELIST' | sort > env.txt\n"
        ),
    );
    let id = c.submit(&["steps.sh"]);
    c.wait_state(id, JobState::Completed);
    let read = |f: &str| std::fs::read_to_string(c.work.join(f)).unwrap_or_default();
    assert_eq!(read("hosts.txt").lines().count(), 4);
    assert_eq!(read("label.txt"), "0: 0 1 debug001\n1: 1 1 debug002\n");
    assert_eq!(read("np.txt"), "np=4 nodes=4\n");
    assert_eq!(read("rc.txt"), "rc=3\n");
    // Four one-CPU nodes, one task each, block distribution.
    assert_eq!(
        read("env.txt"),
        "0/0/0/4/debug[001-004]\n1/0/1/4/debug[001-004]\n\
         2/0/2/4/debug[001-004]\n3/0/3/4/debug[001-004]\n"
    );
    // sacct: the job, its batch step, then each step by number with its own exit code.
    assert_eq!(
        acct_rows(&c, id),
        [
            format!("{id}|steps.sh|COMPLETED|0:0"),
            format!("{id}.batch|batch|COMPLETED|0:0"),
            format!("{id}.0|hostname|COMPLETED|0:0"),
            format!("{id}.1|sh|COMPLETED|0:0"),
            format!("{id}.2|sh|FAILED|3:0"),
            format!("{id}.3|sh|COMPLETED|0:0"),
        ]
    );
    // DerivedExitCode: the worst step's.
    let d = c.ok(
        "eacct",
        &[
            "-X",
            "-P",
            "-n",
            "-j",
            &id.to_string(),
            "-o",
            "DerivedExitCode",
        ],
    );
    assert_eq!(d, "3:0\n");
    // A step asking for more than the job has is refused, as srun's "Unable to create step".
    c.script(
        "toomany.sh",
        &format!("#!/bin/sh\n{erun} -N 3 true\necho rc=$? > toomany.txt\n"),
    );
    let id = c.submit(&["-N", "2", "toomany.sh"]);
    c.wait_state(id, JobState::Completed);
    let t = read("toomany.txt");
    assert_eq!(t, "rc=1\n");
}

#[test]
fn scancel_signals_the_steps_and_a_trapping_step_leaves_the_job_completed() {
    let c = Cluster::start(1, "cbf");
    // The batch shell does not trap USR1 (it would die of it); the step does. Slurm's
    // `scancel -s USR1` signals the steps, not the batch shell: COMPLETED 0:0.
    c.script(
        "usr1.sh",
        &format!(
            "#!/bin/sh\n{} sh -c 'trap \"echo got-usr1 > usr1.seen\" USR1; echo $$ > step.pid; \
             i=0; while [ ! -f usr1.seen ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done'\n",
            erun()
        ),
    );
    let id = c.submit(&["usr1.sh"]);
    c.wait_state(id, JobState::Running);
    c.wait_until("the step's trap installed", || {
        c.work.join("step.pid").exists()
    });
    c.ok("ecancel", &["-s", "USR1", &id.to_string()]);
    let j = c.wait_state(id, JobState::Completed);
    assert_eq!((j.exit_code, j.signal), (Some(0), Some(0)));
    assert!(c.work.join("usr1.seen").exists());
    let rows = acct_rows(&c, id);
    assert_eq!(rows[0], format!("{id}|usr1.sh|COMPLETED|0:0"));
    assert_eq!(rows[2], format!("{id}.0|sh|COMPLETED|0:0"));
}

#[test]
fn a_cancel_stops_the_steps_and_records_them_cancelled() {
    let c = Cluster::start(1, "cbf");
    c.script("long.sh", &format!("#!/bin/sh\n{} sleep 60\n", erun()));
    let id = c.submit(&["long.sh"]);
    c.wait_job(id, "running its step", |j| j.job_steps.len() == 2);
    c.ok("ecancel", &[&id.to_string()]);
    c.wait_state(id, JobState::Cancelled);
    let rows = acct_rows(&c, id);
    assert_eq!(rows[0], format!("{id}|long.sh|CANCELLED|0:15"));
    assert!(
        rows[2].starts_with(&format!("{id}.0|sleep|CANCELLED|")),
        "{rows:?}"
    );
    // equeue -s lists a running job's steps; none are left.
    assert_eq!(c.ok("equeue", &["-h", "-s"]), "");
}

#[test]
fn usage_is_measured_for_the_batch_step() {
    if std::process::Command::new("python3")
        .arg("-c")
        .arg("pass")
        .status()
        .map_or(true, |s| !s.success())
    {
        eprintln!("skipped: no python3 to allocate memory and spin a CPU");
        return;
    }
    let c = Cluster::start(1, "cbf");
    // 200 MB touched and 2 s of CPU: sacct's MaxRSS and TotalCPU of the batch step.
    c.script(
        "use.sh",
        "#!/bin/sh\npython3 -c '\nimport time\nb = bytearray(200*1000*1000)\n\
         for i in range(0, len(b), 4096): b[i] = 1\nt = time.process_time()\n\
         while time.process_time() - t < 2: pass\n'\n",
    );
    let id = c.submit(&["use.sh"]);
    c.wait_state(id, JobState::Completed);
    let out = c.ok(
        "eacct",
        &[
            "-P",
            "-n",
            "-j",
            &id.to_string(),
            "-o",
            "JobID,MaxRSS,TotalCPU,Elapsed",
        ],
    );
    let rows: Vec<Vec<&str>> = out.lines().map(|l| l.split('|').collect()).collect();
    assert_eq!(rows.len(), 2, "{out}");
    let batch = &rows[1];
    assert_eq!(batch[0], format!("{id}.batch"));
    let rss: u64 = batch[1].trim_end_matches('K').parse().expect("MaxRSS in K");
    assert!(rss >= 195_000, "MaxRSS {rss}K for 200 MB touched");
    // TotalCPU as sacct writes it under an hour: MM:SS.mmm.
    let (m, s) = batch[2].split_once(':').expect("MM:SS.mmm");
    let cpu = m.parse::<f64>().unwrap_or(0.0) * 60.0 + s.parse::<f64>().unwrap_or(0.0);
    assert!((2.0..10.0).contains(&cpu), "TotalCPU {}", batch[2]);
    // The job's TotalCPU is its steps'.
    assert_eq!(rows[0][2], batch[2]);
}

#[test]
fn erun_outside_a_job_allocates_and_ealloc_holds_an_allocation() {
    let c = Cluster::start(2, "cbf");
    // srun outside an allocation: a job of its own, the step in it, COMPLETED.
    let out = c.ok(
        "erun",
        &["-N", "2", "--label", "sh", "-c", "echo $SLURM_NODEID"],
    );
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["0: 0", "1: 1"]);
    let failed = c.run("erun", &["sh", "-c", "exit 4"]);
    assert_eq!(failed.status.code(), Some(4));
    // salloc: the command runs here with the allocation's variables; srun inside it runs a
    // step on the allocation's nodes.
    let out = c.ok(
        "ealloc",
        &[
            "-N",
            "2",
            "sh",
            "-c",
            &format!("echo nodes=$SLURM_NNODES; {} -n 2 hostname | wc -l", erun()),
        ],
    );
    assert_eq!(out.split_whitespace().collect::<Vec<_>>(), ["nodes=2", "2"]);
    let all = c.ok("eacct", &["-X", "-P", "-n", "-o", "JobName,State"]);
    assert_eq!(all, "sh|COMPLETED\nsh|FAILED\nsh|COMPLETED\n");
}

#[test]
fn requeue_from_inside_the_job_gets_its_answer_first() {
    let c = Cluster::start(1, "cbf");
    // submitit's checkpointing: the job requeues itself (`scontrol requeue $SLURM_JOB_ID`)
    // and must see it succeed before it is stopped; the rerun sees SLURM_RESTART_COUNT=1.
    // The shell traps the stop's SIGTERM (as submitit's process does) to outlive it; the
    // trap is not inherited, so econtrol dies of a SIGTERM that comes before its answer.
    c.script(
        "again.sh",
        "#!/bin/sh\n#SBATCH --open-mode=append\n\
         if [ \"$SLURM_RESTART_COUNT\" = 0 ]; then\n\
           trap 'echo stopped >> again.log' TERM\n\
           econtrol requeue $SLURM_JOB_ID; echo requeue-rc=$? >> again.log; sleep 30\n\
         fi\necho run=$SLURM_RESTART_COUNT >> again.log\n",
    );
    let mut cmd = c.tool("esubmit");
    let path = format!(
        "{}:{}",
        bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = cmd
        .env("PATH", path)
        .args(["--parsable", "again.sh"])
        .output()
        .expect("esubmit");
    let id: u64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("id");
    c.wait_until("the rerun", || {
        std::fs::read_to_string(c.work.join("again.log")).is_ok_and(|t| t.contains("run=1"))
    });
    c.wait_state(id, JobState::Completed);
    let log = std::fs::read_to_string(c.work.join("again.log")).unwrap_or_default();
    assert!(
        log.contains("requeue-rc=0\n") && log.ends_with("run=1\n"),
        "{log}"
    );
}

#[test]
fn mail_goes_through_the_configured_program_with_slurms_subjects() {
    // Slurm runs MailProg as `MailProg -s SUBJECT USER` for the --mail-type events.
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("mail.log");
    let prog = dir.path().join("mail.sh");
    std::fs::write(
        &prog,
        format!("#!/bin/sh\necho \"$@\" >> {}\n", log.display()),
    )
    .expect("mail.sh");
    std::fs::set_permissions(&prog, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let c = Cluster::start_configured(1, "cbf", &format!("mail_program = {:?}", prog), "");
    let id = c.submit(&[
        "--mail-type=BEGIN,END",
        "--mail-user=bob@example.org",
        "-J",
        "mailed",
        "--wrap",
        "exit 3",
    ]);
    c.wait_state(id, JobState::Failed);
    let quiet = c.submit(&["--mail-type=NONE", "--wrap", "true"]);
    c.wait_state(quiet, JobState::Completed);
    c.wait_until("two mails", || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.lines().count() >= 2)
    });
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    // Each mail is a process of its own, as with Slurm: the two may land in either order.
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_by_key(|l| !l.contains(" Began, "));
    assert!(
        lines[0].starts_with(&format!(
            "-s Slurm Job_id={id} Name=mailed Began, Queued time 00:00:0"
        )) && lines[0].ends_with(" bob@example.org"),
        "{text}"
    );
    assert!(
        lines[1].starts_with(&format!(
            "-s Slurm Job_id={id} Name=mailed Failed, Run time 00:00:0"
        )) && lines[1].ends_with(", FAILED, ExitCode 3 bob@example.org"),
        "{text}"
    );
    assert_eq!(lines.len(), 2, "{text}");
}

#[test]
fn a_running_jobs_time_limit_can_be_changed() {
    let c = Cluster::start(2, "cbf");
    // scontrol update TimeLimit= of a running job: its owner may lower it (here to 2 s), root
    // may raise it; the supervisor stops the job at the new end.
    let lowered = c.submit(&["-t", "5", "--wrap", "sleep 60"]);
    let raised = c.submit(&["-t", "20s", "--wrap", "sleep 60"]);
    c.wait_state(lowered, JobState::Running);
    c.wait_state(raised, JobState::Running);
    c.ok(
        "econtrol",
        &["update", &format!("JobId={lowered}"), "TimeLimit=2s"],
    );
    c.ok(
        "econtrol",
        &["update", &format!("JobId={raised}"), "TimeLimit=+1"],
    );
    let j = c.wait_state(lowered, JobState::Timeout);
    assert_eq!(j.time_limit, 2_000);
    let run = j.end_time.unwrap_or(0) - j.start_time.unwrap_or(0);
    assert!((2_000..5_000).contains(&run), "ran {run} ms");
    let r = c.job(raised).expect("raised");
    assert_eq!((r.state, r.time_limit), (JobState::Running, 80_000));
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(c.job(raised).map(|j| j.state), Some(JobState::Running));
    // Anything else of a running job is refused, as scontrol refuses it.
    let out = c.run(
        "econtrol",
        &["update", &format!("JobId={raised}"), "Name=x"],
    );
    assert_eq!(out.status.code(), Some(1));
    c.ok("ecancel", &[&raised.to_string()]);
}

#[test]
fn an_allocations_limit_stops_its_step_run_from_outside_the_job() {
    let c = Cluster::start(1, "cbf");
    // srun -t outside a job: the step runs in erun's own session, not the job's; the limit
    // still stops it (slurmstepd signals every step of the job), and nothing is left running.
    let secs = format!("{}.5", 600 + std::process::id() % 1000);
    let marker = format!("sleep\0{secs}");
    let out = c.run("erun", &["-t", "2s", "sleep", &secs]);
    assert_ne!(out.status.code(), Some(0));
    let left = std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
                .filter(|c| String::from_utf8_lossy(c).contains(&marker))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(left, 0, "the step's task outlived its allocation");
    let all = c.ok("eacct", &["-X", "-P", "-n", "-o", "State"]);
    assert_eq!(all, "TIMEOUT\n");
}
