//! The listings a Slurm user shapes: sacct's `--format`, squeue's `-O -l -S -i`
//! and folded arrays, sinfo's `-o -l -t`; and the rows of docs/tools.md's "Slurm habits"
//! table marked *same* that no other test drove through the real tools. Grouped in two tests
//! so that the suite stays fast.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use batch_proto::{JobState, PendingReason};

use crate::harness::{refused, texts, Cluster};

/// Whether `line` is the time line squeue and sinfo print first (`Tue Nov 24 07:10:00 2026`).
fn is_date_line(line: &str) -> bool {
    let w: Vec<&str> = line.split(' ').collect();
    w.len() == 5
        && w[0].len() == 3
        && w[1].len() == 3
        && w[2].len() == 2
        && w[3].len() == 8
        && w[4].parse::<u32>().is_ok()
}

fn me() -> String {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map_or_else(|| nix::unistd::getuid().to_string(), |u| u.name)
}

#[test]
fn queue_accounting_and_info_views() {
    let c = Cluster::start_with(
        2,
        "cbf",
        "\n[[pool]]\nname = \"big\"\nnodes = 4\ncpus_per_node = 4\nmem_per_node = 8192\n\
         max_time = 90\n",
    );
    let run = c.submit(&[
        "-p", "debug", "-J", "runner", "-A", "proj", "-t", "5", "--wrap", "sleep 30",
    ]);
    let r = c.wait_state(run, JobState::Running);
    let node = r.node_list.clone().unwrap_or_default();
    let array = c.submit(&[
        "-p", "big", "--hold", "--array", "1-3%2", "-J", "arr", "--wrap", "true",
    ]);
    c.wait_job(array + 2, "held", |j| j.reason == Some(PendingReason::Held));
    let (rs, arr) = (run.to_string(), array.to_string());

    // equeue: an array's pending tasks on one line unless -r; squeue's default order (pool
    // big before debug); -S; -O; -l.
    assert_eq!(
        c.ok("equeue", &["-h", "-o", "%i %t %K"]),
        format!("{array}_[1-3%2] PD 1-3%2\n{run} R N/A\n")
    );
    assert_eq!(
        c.ok("equeue", &["-h", "-r", "-S", "-i", "-o", "%i"]),
        format!("{array}_3\n{array}_2\n{array}_1\n{run}\n")
    );
    assert_eq!(
        c.ok(
            "equeue",
            &[
                "-h",
                "-j",
                &rs,
                "-O",
                "JobID:.8,name:10,STATECOMPACT:3|,ReasonList"
            ]
        ),
        format!("{run:>8}runner    R  |{node:<20}\n")
    );
    let long = c.ok("equeue", &["-l", "-j", &rs]);
    let lines: Vec<&str> = long.lines().collect();
    assert!(is_date_line(lines[0]), "{long}");
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        [
            "JOBID",
            "PARTITION",
            "NAME",
            "USER",
            "STATE",
            "TIME",
            "TIME_LIMI",
            "NODES",
            "NODELIST(REASON)"
        ]
    );
    assert!(
        lines[2].contains(" RUNNING ") && lines[2].contains(" 5:00 "),
        "{long}"
    );
    refused(
        &c,
        "equeue",
        &["-O", "jobid,nosuch"],
        "invalid job format specification 'nosuch'",
    );
    refused(&c, "equeue", &["-S", "y"], "invalid sort key 'y'");

    // equeue -i: a dated listing every second until interrupted.
    let mut child = c
        .tool("equeue")
        .args(["-i", "1", "-j", &rs, "-o", "%i"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("equeue -i");
    let t0 = Instant::now();
    let mut seen = Vec::new();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            seen.push(line);
            if seen.iter().filter(|l| is_date_line(l)).count() == 2
                || t0.elapsed() > Duration::from_secs(15)
            {
                break;
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        seen,
        [
            seen[0].clone(),
            "JOBID".into(),
            rs.clone(),
            String::new(),
            seen[4].clone()
        ],
        "{seen:?}"
    );
    assert!(is_date_line(&seen[0]) && is_date_line(&seen[4]), "{seen:?}");

    // eacct --format/-o: sacct's names in any case, %W widths, -P, $SACCT_FORMAT.
    assert_eq!(
        c.ok(
            "eacct",
            &[
                "-X",
                "-P",
                "-n",
                "-j",
                &rs,
                "-o",
                "jobid,JOBNAME,state,account,nnodes,NodeList,timelimit,partition"
            ]
        ),
        format!("{run}|runner|RUNNING|proj|1|{node}|00:05:00|debug\n")
    );
    assert_eq!(
        c.ok(
            "eacct",
            &[
                "-X",
                "-n",
                "-j",
                &rs,
                "--format=JobIDRaw%10,State%-9,jobname%3"
            ]
        ),
        format!("{run:>10} RUNNING   ru+\n")
    );
    let tasks = c.ok(
        "eacct",
        &["-P", "-n", "-j", &arr, "-o", "JobID,JobIDRaw,Reason"],
    );
    assert_eq!(
        tasks,
        format!(
            "{array}_1|{array}|Held\n{array}_2|{}|Held\n{array}_3|{}|Held\n",
            array + 1,
            array + 2
        )
    );
    let out = c
        .tool("eacct")
        .env("SACCT_FORMAT", "jobidraw,State")
        .args(["-X", "-p", "-j", &rs])
        .output()
        .expect("eacct");
    assert_eq!(texts(&out).0, format!("JobIDRaw|State|\n{run}|RUNNING|\n"));
    refused(
        &c,
        "eacct",
        &["-o", "JobID,Bogus"],
        "Invalid field requested: \"Bogus\"",
    );
    let help = c.ok("eacct", &["--helpformat"]);
    assert!(
        help.contains("JobIDRaw") && help.contains("Timelimit"),
        "{help}"
    );

    // einfo -o (sinfo's letters, alike nodes on one line), -t, -l, -N -l.
    assert_eq!(
        c.ok("einfo", &["-h", "-o", "%P %D %c %m %l %F %C"]),
        "debug 2 1 N/A infinite 1/1/0/2 1/1/0/2\nbig 4 4 8192 1:30:00 0/4/0/4 0/16/0/16\n"
    );
    assert_eq!(
        c.ok("einfo", &["-h", "-o", "%P %t %N", "-p", "debug"]),
        format!(
            "debug alloc {node}\ndebug idle {}\n",
            if node == "debug001" {
                "debug002"
            } else {
                "debug001"
            }
        )
    );
    assert_eq!(
        c.ok("einfo", &["-h", "-t", "idle", "-o", "%P %D"]),
        "debug 1\nbig 4\n"
    );
    assert_eq!(
        c.ok("einfo", &["-h", "-t", "ALLOC,down", "-o", "%P %D"]),
        "debug 1\n"
    );
    let long = c.ok("einfo", &["-l", "-p", "big"]);
    let lines: Vec<&str> = long.lines().collect();
    assert!(is_date_line(lines[0]), "{long}");
    assert_eq!(
        lines[2].split_whitespace().collect::<Vec<_>>(),
        [
            "big",
            "up",
            "1:30:00",
            "1-4",
            "no",
            "NO",
            "all",
            "4",
            "idle",
            "big[001-004]"
        ]
    );
    let nodes = c.ok("einfo", &["-N", "-l", "-h", "-p", "big"]);
    assert_eq!(nodes.lines().count(), 4, "{nodes}");
    assert!(
        nodes
            .lines()
            .all(|l| l.split_whitespace().collect::<Vec<_>>()[4..7] == ["4", "1:4:1", "8192"]),
        "{nodes}"
    );
    refused(
        &c,
        "einfo",
        &["-t", "bogus"],
        "Invalid node state specified: bogus",
    );
    refused(&c, "einfo", &["-o", "%Y"], "unknown field '%Y'");
}

#[test]
fn slurm_rows_marked_same() {
    let c = Cluster::start(2, "cbf");
    let user = me();
    std::fs::create_dir(c.work.join("sub")).expect("sub dir");

    // SBATCH_JOB_NAME, _OUTPUT, _ERROR, _EXPORT; every filename escape of sbatch.
    let out = c
        .tool("esubmit")
        .env("SBATCH_JOB_NAME", "envname")
        .env("SBATCH_OUTPUT", "env-%j.out")
        .env("SBATCH_ERROR", "env-%j.err")
        .env("SBATCH_EXPORT", "NONE,FOO=bar")
        .env("NOT_EXPORTED", "x")
        .args([
            "--parsable",
            "--wrap",
            "echo \"$FOO-${NOT_EXPORTED:-none}\"; echo oops >&2",
        ])
        .output()
        .expect("esubmit");
    let id: u64 = texts(&out).0.trim().parse().expect("job id");
    let j = c.wait_state(id, JobState::Completed);
    assert_eq!(j.name, "envname");
    let read =
        |f: String| std::fs::read_to_string(c.work.join(&f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    assert_eq!(read(format!("env-{id}.out")), "bar-none\n");
    assert_eq!(read(format!("env-{id}.err")), "oops\n");
    let out = c
        .tool("esubmit")
        .env("SBATCH_HOLD", "1")
        .args(["--parsable", "--wrap", "true"])
        .output()
        .expect("esubmit");
    let held: u64 = texts(&out).0.trim().parse().expect("job id");
    assert_eq!(
        c.job(held).and_then(|j| j.reason),
        Some(PendingReason::Held)
    );

    // -D, -b, -d (short forms), --partition, -e, and the escapes %b %J %n %s %t %u %%.
    let first = c.submit(&["-J", "first", "--wrap", "true"]);
    let dep = c.submit(&[
        "-D",
        "sub",
        "-b",
        "now",
        "-d",
        &format!("afterok:{first}"),
        "--partition",
        "debug",
        "-o",
        "p-%b-%J-%n-%s-%t-%u-%%.txt",
        "-e",
        "e-%j.txt",
        "--wrap",
        "pwd; echo err >&2",
    ]);
    c.wait_state(dep, JobState::Completed);
    let sub = c.work.join("sub");
    let out = std::fs::read_to_string(sub.join(format!("p-4-{dep}-0-batch-0-{user}-%.txt")))
        .expect("output named by every escape");
    assert_eq!(out.trim(), sub.display().to_string());
    assert_eq!(
        std::fs::read_to_string(sub.join(format!("e-{dep}.txt")))
            .ok()
            .as_deref(),
        Some("err\n")
    );

    // equeue --me, -p, -n, -t; eacct -a, -u; einfo -s, -p; ecancel -t, -p, -u.
    let sleeper = c.submit(&["-J", "sleeper", "--wrap", "sleep 30"]);
    c.wait_state(sleeper, JobState::Running);
    let ids = |args: &[&str]| c.ok("equeue", &[&["-h", "-o", "%i"][..], args].concat());
    assert_eq!(ids(&["--me", "-n", "sleeper"]), format!("{sleeper}\n"));
    assert_eq!(ids(&["-p", "debug", "-t", "R"]), format!("{sleeper}\n"));
    assert_eq!(ids(&["-t", "PD"]), format!("{held}\n"));
    assert_eq!(ids(&["-p", "nosuchpool"]), "");
    // squeue -p lists a pending job submitted without -p under its (default) partition;
    // here the policy may start it in any existing pool.
    assert_eq!(ids(&["-p", "debug", "-t", "PD"]), format!("{held}\n"));
    let names = |args: &[&str]| {
        c.ok(
            "eacct",
            &[&["-X", "-n", "-P", "-o", "JobName"][..], args].concat(),
        )
    };
    assert_eq!(names(&["-a", "-s", "CD", "--name", "first"]), "first\n");
    assert_eq!(names(&["-u", &user, "-s", "R"]), "sleeper\n");
    let s = c.ok("einfo", &["-s", "-p", "debug"]);
    assert_eq!(
        s.lines()
            .nth(1)
            .map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["debug", "up", "infinite", "1/1/0/2", "debug[001-002]"]),
        "{s}"
    );
    c.ok("ecancel", &["-t", "PD", "-u", &user]);
    c.wait_state(held, JobState::Cancelled);
    assert_eq!(c.job(sleeper).map(|j| j.state), Some(JobState::Running));
    c.ok("ecancel", &["-p", "debug", "-n", "sleeper"]);
    c.wait_state(sleeper, JobState::Cancelled);
}
