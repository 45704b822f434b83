use std::path::Path;

use batch_proto::time::{Duration, MINUTE, SECOND};
use batch_proto::{JobShape, JobSpec, MoldConfig, MoldModel, Step};
use clap::Parser;

use super::super::error::SpecError;
use super::super::time::fixed_zone;
use super::*;

const SCRIPT: &str =
    "#!/bin/sh\n#ESUB -N 2\n#ESUB -t 10 -J fromscript -p batch\n#ESUB -o out.txt\necho hi\n";

fn cli(args: &[&str]) -> SubmitCli {
    SubmitCli::try_parse_from(std::iter::once("esubmit").chain(args.iter().copied())).unwrap()
}

#[test]
fn scripts_are_read_as_text_within_the_limit() {
    assert_eq!(
        read_script(&b"#!/bin/sh\ntrue\n"[..], "s").unwrap(),
        "#!/bin/sh\ntrue\n"
    );
    let e = read_script(&b"\x7fELF\x02\x01\x01\0\0"[..], "a.out").unwrap_err();
    assert_eq!(
        e.to_string(),
        "a.out is a binary file, not a batch script (a script is text)"
    );
    let e = read_script(&b"#!/bin/sh\n\xff\xfe\n"[..], "x").unwrap_err();
    assert!(e.to_string().contains("binary"), "{e}");
    // sbatch 22.05: "sbatch: error: Batch script contains DOS line breaks (\r\n)" /
    // "sbatch: error: instead of expected UNIX line breaks (\n).", exit 1.
    let e = read_script(&b"#!/bin/sh\r\n#SBATCH -t 10\r\ntrue\r\n"[..], "w.sh").unwrap_err();
    assert_eq!(
        e.to_string(),
        "Batch script contains DOS line breaks (\\r\\n) instead of expected UNIX line breaks (\\n)."
    );
    let max = batch_proto::job::MAX_SCRIPT;
    // The limit is on the script's bytes: quotes (doubled by JSON) count once.
    let quotes = "\"".repeat(max);
    assert_eq!(read_script(quotes.as_bytes(), "q").unwrap().len(), max);
    let e = read_script("x".repeat(max + 1).as_bytes(), "big").unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("big is larger than the limit of {max} bytes for a batch script")
    );
}

/// The rigid time limit of `j`.
fn limit(j: &JobSpec) -> Duration {
    match j.shape {
        JobShape::Rigid { time_limit, .. } => time_limit,
        _ => panic!("not rigid: {:?}", j.shape),
    }
}

/// `s` as esubmit sends it: checked with batch-proto's bounds.
fn wire(s: &JobSpec) -> Result<JobSpec, SpecError> {
    let sub = Submission {
        job: s.clone(),
        test_only: false,
        parsable: false,
    };
    sub.check(1_000_000).map(|()| sub.job)
}

fn resolve(c: &SubmitCli, script: &str, env: &[(&str, &str)]) -> Result<JobSpec, SpecError> {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let ctx = Context {
        env: &env,
        cwd: Path::new("/home/u"),
        now: 1_000_000,
        zone: &fixed_zone(0),
    };
    let so = script_opts(script)?;
    c.opts
        .resolve(&so, script.to_string(), vec![], "job.sh", &ctx)
        .map(|s| s.job)
}

#[test]
fn script_args_go_to_the_script() {
    let c = cli(&["-N", "3", "job.sh", "-N", "5", "--x"]);
    assert_eq!(c.opts.nodes.as_deref(), Some("3"));
    assert_eq!(c.script, vec!["job.sh", "-N", "5", "--x"]);
    let w = cli(&["--wrap", "echo hi", "--partition", "p"]);
    assert_eq!(w.wrap.as_deref(), Some("echo hi"));
    assert_eq!(w.opts.pool.as_deref(), Some("p"));
    assert!(w.script.is_empty());
}

#[test]
fn script_alone_sets_options() {
    let s = resolve(&cli(&["job.sh"]), SCRIPT, &[]).unwrap();
    assert_eq!(s.shape.max_nodes(), 2);
    assert_eq!(limit(&s), 10 * MINUTE);
    assert_eq!(s.name, "fromscript");
    assert_eq!(s.pool.as_deref(), Some("batch"));
    assert_eq!(s.stdout.as_deref(), Some("out.txt"));
    assert_eq!(s.work_dir, "/home/u");
}

#[test]
fn command_line_beats_env_beats_script() {
    let env = [
        ("ESUB_PARTITION", "envpool"),
        ("ESUB_TIMELIMIT", "30s"),
        ("ESUB_JOB_NAME", "envname"),
    ];
    let s = resolve(&cli(&["-J", "cliname", "job.sh"]), SCRIPT, &env).unwrap();
    assert_eq!(s.name, "cliname");
    assert_eq!(s.pool.as_deref(), Some("envpool"));
    assert_eq!(limit(&s), 30 * SECOND);
    assert_eq!(s.shape.max_nodes(), 2);
    let s = resolve(
        &cli(&["-p", "clipool", "-t", "1:00:00", "job.sh"]),
        SCRIPT,
        &env,
    )
    .unwrap();
    assert_eq!(s.pool.as_deref(), Some("clipool"));
    assert_eq!(limit(&s), 3600 * SECOND);
}

#[test]
fn errors_say_where_the_value_came_from() {
    let e = resolve(&cli(&["job.sh"]), SCRIPT, &[("ESUB_TIMELIMIT", "soon")]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid time limit 'soon': 'soon' is not a number (from ESUB_TIMELIMIT)"
    );
    let e = resolve(&cli(&["job.sh"]), "#!/bin/sh\n#ESUB -N zero\n", &[]).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("(from line 2 of the script: `#ESUB -N zero`)"),
        "{e}"
    );
    // The value on two lines: the one at fault is the line that gives it to the option, in
    // either order, and of two such lines the last (it overrides the first).
    for (script, line) in [
        (
            "#!/bin/sh\n#ESUB -N zero\n#ESUB -J zero\n",
            "line 2 of the script: `#ESUB -N zero`",
        ),
        (
            "#!/bin/sh\n#SBATCH -t soon\n#SBATCH -J soon\n",
            "line 2 of the script: `#SBATCH -t soon`",
        ),
        (
            "#!/bin/sh\n#SBATCH -t 5\n#SBATCH --time=soon\n",
            "line 3 of the script: `#SBATCH --time=soon`",
        ),
    ] {
        let e = resolve(&cli(&["job.sh"]), script, &[]).unwrap_err();
        assert!(e.to_string().ends_with(&format!("(from {line})")), "{e}");
    }
    let e = resolve(
        &cli(&["job.sh"]),
        "#!/bin/sh\n#ESUB -J zero\n#ESUB -N zero\n",
        &[],
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .ends_with("(from line 3 of the script: `#ESUB -N zero`)"),
        "{e}"
    );
    let e = resolve(
        &cli(&["job.sh"]),
        "#!/bin/sh\n#SBATCH --signal=often\n#SBATCH -J often\n",
        &[],
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .ends_with("(from line 2 of the script: `#SBATCH --signal=often`)"),
        "{e}"
    );
    let e = resolve(&cli(&["job.sh"]), "#!/bin/sh\n#ESUB --bogus\n", &[]).unwrap_err();
    assert!(e.to_string().contains("--bogus"), "{e}");
    let e = resolve(&cli(&["job.sh"]), "echo no shebang\n", &[]).unwrap_err();
    assert!(e.to_string().contains("#!"), "{e}");
    let e = resolve(
        &cli(&["--profile", "60:2,60:4", "-t", "5", "job.sh"]),
        "#!/bin/sh\n",
        &[],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "conflicting options: --evolving-profile/--moldable/--moldable-model give the nodes and times; drop -N/--nodes and -t/--time"
    );
}

#[test]
fn sbatch_lines_and_variables_are_read_and_esub_wins() {
    let script = "#!/bin/sh\n#SBATCH -J x -N 2 -t 5\n#SBATCH -o out-%j.txt\n#ESUB -N 3\n";
    let s = resolve(&cli(&["job.sh"]), script, &[]).unwrap();
    assert_eq!((s.name.as_str(), s.shape.max_nodes()), ("x", 3));
    assert_eq!(limit(&s), 5 * MINUTE);
    assert_eq!(s.stdout.as_deref(), Some("out-%j.txt"));
    let env = [("SBATCH_PARTITION", "sp"), ("SBATCH_TIMELIMIT", "7")];
    let s = resolve(&cli(&["job.sh"]), "#!/bin/sh\n", &env).unwrap();
    assert_eq!(s.pool.as_deref(), Some("sp"));
    assert_eq!(limit(&s), 7 * MINUTE);
    let env = [("SBATCH_PARTITION", "sp"), ("ESUB_PARTITION", "ep")];
    let s = resolve(&cli(&["job.sh"]), "#!/bin/sh\n", &env).unwrap();
    assert_eq!(s.pool.as_deref(), Some("ep"));
    let e = resolve(
        &cli(&["job.sh"]),
        "#!/bin/sh\n",
        &[("SBATCH_TIMELIMIT", "x")],
    )
    .unwrap_err();
    assert!(e.to_string().ends_with("(from SBATCH_TIMELIMIT)"), "{e}");
    let e = resolve(&cli(&["job.sh"]), "#!/bin/sh\n#SBATCH --bogus\n", &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 2 of the script: `#SBATCH --bogus`: unrecognized option '--bogus'"
    );
}

/// sbatch names the line of a directive it refuses; the message quotes that line alone, not
/// every directive of the script joined.
#[test]
fn a_refused_directive_is_quoted_alone_with_its_line() {
    let script = "#!/bin/sh\n#SBATCH -J x -N 2\n#SBATCH --time 5 --bogus=1\n#SBATCH -o out.txt\n";
    let e = resolve(&cli(&["job.sh"]), script, &[])
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "line 3 of the script: `#SBATCH --time 5 --bogus=1`: unrecognized option '--bogus'"
    );
}

/// A conflict between the command line and the script names the directive line that gives
/// the script's side of it.
#[test]
fn a_conflict_with_a_directive_names_its_line() {
    let script = "#!/bin/sh\n#SBATCH -J x\n#SBATCH -N 2\n";
    let e = resolve(&cli(&["--moldable", "1:1", "job.sh"]), script, &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("conflicting options: ")
            && e.ends_with("(from the script's line 3: `#SBATCH -N 2`)"),
        "{e}"
    );
    // Both sides on the command line: no line to name.
    let e = resolve(
        &cli(&["--moldable", "1:1", "-N", "2", "job.sh"]),
        "#!/bin/sh\n",
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(!e.contains("script"), "{e}");
}

#[test]
fn resources_account_and_mail() {
    let s = resolve(
        &cli(&[
            "-n",
            "8",
            "-c",
            "2",
            "--mem=4G",
            "--exclusive",
            "-A",
            "proj",
            "job.sh",
        ]),
        "#!/bin/sh\n#SBATCH -q high -N 2\n",
        &[],
    )
    .unwrap();
    let r = s.resources.clone().unwrap();
    assert_eq!(
        (
            r.nodes,
            r.ntasks,
            r.cpus_per_task,
            r.mem_per_node,
            r.exclusive
        ),
        (Some(2), Some(8), Some(2), Some(4096), true)
    );
    assert_eq!(
        (s.account.as_deref(), s.qos.as_deref()),
        (Some("proj"), Some("high"))
    );
    // --exclusive alone asks nothing of batchd.
    let s = resolve(&cli(&["--exclusive", "job.sh"]), "#!/bin/sh\n", &[]).unwrap();
    assert!(s.resources.is_none());
    // sbatch accepts the mail options; they are stored (no mail is sent here).
    let s = resolve(
        &cli(&["--mail-type=end,fail", "job.sh"]),
        "#!/bin/sh\n#SBATCH --mail-user=me\n",
        &[],
    )
    .unwrap();
    let i = s.inert.unwrap();
    assert_eq!(
        (i.mail_type.as_deref(), i.mail_user.as_deref()),
        (Some("END,FAIL"), Some("me"))
    );
    // sbatch: "sbatch: error: --mail-type=sometimes invalid".
    let e = resolve(
        &cli(&["job.sh"]),
        "#!/bin/sh\n#SBATCH --mail-type=sometimes\n",
        &[],
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .ends_with("(from line 2 of the script: `#SBATCH --mail-type=sometimes`)"),
        "{e}"
    );
    assert!(resolve(&cli(&["-n", "0", "job.sh"]), "#!/bin/sh\n", &[]).is_err());
    assert!(resolve(&cli(&["--mem", "4X", "job.sh"]), "#!/bin/sh\n", &[]).is_err());
}

#[test]
fn signal_open_mode_and_requeue_choices_from_every_source() {
    let s = resolve(
        &cli(&["--signal=B:USR1@90", "--open-mode=append", "job.sh"]),
        "#!/bin/sh\n",
        &[],
    )
    .unwrap();
    let w = s.warn_signal.unwrap();
    assert_eq!((w.signal, w.before, w.batch_only), (10, 90, true));
    assert!(s.open_append && !s.requeue && !s.no_requeue);
    let script = "#!/bin/sh\n#SBATCH --signal=TERM --open-mode=a --no-requeue\n";
    let s = resolve(&cli(&["job.sh"]), script, &[]).unwrap();
    assert_eq!(s.warn_signal.map(|w| (w.signal, w.before)), Some((15, 60)));
    assert!(s.open_append && s.no_requeue && !s.requeue);
    // The environment beats the script, the command line the environment.
    let env = [
        ("SBATCH_SIGNAL", "USR2@5"),
        ("SBATCH_OPEN_MODE", "truncate"),
        ("SBATCH_REQUEUE", "1"),
        ("SBATCH_ACCOUNT", "proj"),
        ("SBATCH_QOS", "low"),
        ("SBATCH_ARRAY_INX", "1-3"),
    ];
    let s = resolve(&cli(&["job.sh"]), script, &env).unwrap();
    assert_eq!(s.warn_signal.map(|w| w.before), Some(5));
    assert!(!s.open_append && s.requeue && !s.no_requeue);
    assert_eq!(
        (s.account.as_deref(), s.qos.as_deref()),
        (Some("proj"), Some("low"))
    );
    assert_eq!(s.array.map(|a| a.indices), Some(vec![1, 2, 3]));
    let s = resolve(&cli(&["--no-requeue", "job.sh"]), "#!/bin/sh\n", &env).unwrap();
    assert!(s.no_requeue && !s.requeue);
    let s = resolve(
        &cli(&["job.sh"]),
        "#!/bin/sh\n",
        &[("SBATCH_EXCLUSIVE", "")],
    )
    .unwrap();
    assert!(s.resources.is_none(), "--exclusive changes nothing");
    for (args, env, want) in [
        (
            &["--signal=USR1@99999", "job.sh"][..],
            &[][..],
            "invalid --signal 'USR1@99999'",
        ),
        (&["--open-mode=x", "job.sh"], &[], "invalid --open-mode 'x'"),
        (
            &["job.sh"],
            &[("SBATCH_SIGNAL", "HUP@x")],
            "(from SBATCH_SIGNAL)",
        ),
    ] {
        let e = resolve(&cli(args), "#!/bin/sh\n", env)
            .unwrap_err()
            .to_string();
        assert!(e.contains(want) && !e.contains('\n'), "{args:?}: {e}");
    }
}

#[test]
fn defaults_and_flags() {
    let s = resolve(
        &cli(&["-H", "--begin", "now+10", "-d", "afterok:4", "job.sh"]),
        "#!/bin/sh\ntrue\n",
        &[],
    )
    .unwrap();
    // Slurm 22.05: a job without -t in a partition without DefaultTime gets its MaxTime
    // (UNLIMITED unless configured); batchd turns TIME_UNLIMITED into the pool's max_time.
    assert_eq!(
        (s.shape.max_nodes(), limit(&s), s.name.as_str()),
        (1, batch_proto::TIME_UNLIMITED, "job.sh")
    );
    assert!(s.hold);
    assert_eq!(s.begin, Some(1_010_000));
    assert_eq!(s.dependencies.len(), 1);
    let s = resolve(&cli(&["job.sh"]), "#!/bin/sh\n#ESUB --hold\n", &[]).unwrap();
    assert!(s.hold);
    let s = resolve(&cli(&["job.sh"]), "#!/bin/sh\n", &[("ESUB_HOLD", "1")]).unwrap();
    assert!(s.hold);
}

#[test]
fn profile_and_moldable_conflicts() {
    let s = resolve(
        &cli(&["--profile", "10:1,20:2", "job.sh"]),
        "#!/bin/sh\n",
        &[],
    )
    .unwrap();
    assert!(matches!(&s.shape, JobShape::Evolving { steps } if steps.len() == 2));
    assert!(resolve(
        &cli(&["--profile", "10:1", "--moldable", "1:1", "job.sh"]),
        "#!/bin/sh\n",
        &[]
    )
    .is_err());
    // The script's -N conflicts with the command line's --moldable.
    assert!(resolve(&cli(&["--moldable", "1:1", "job.sh"]), SCRIPT, &[]).is_err());
}

#[test]
fn chdir_is_relative_to_cwd() {
    let s = resolve(&cli(&["-D", "sub", "job.sh"]), "#!/bin/sh\n", &[]).unwrap();
    assert_eq!(s.work_dir, "/home/u/sub");
    let s = resolve(&cli(&["-D", "/abs", "job.sh"]), "#!/bin/sh\n", &[]).unwrap();
    assert_eq!(s.work_dir, "/abs");
}

#[test]
fn export_lists() {
    let env: Vec<(String, String)> = [("A", "1"), ("B", "2")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(apply_export("ALL", &env).unwrap(), env);
    assert!(apply_export("NONE", &env).unwrap().is_empty());
    assert_eq!(
        apply_export("B,C=3", &env).unwrap(),
        vec![("B".into(), "2".into()), ("C".into(), "3".into())]
    );
    assert_eq!(
        apply_export("ALL,A=9", &env).unwrap(),
        vec![("B".into(), "2".into()), ("A".into(), "9".into())]
    );
    assert!(apply_export("=x", &env).is_err());
}

#[test]
fn wrap_makes_a_shell_script() {
    let w = wrap_script("echo hi");
    assert!(w.starts_with("#!/bin/sh\n") && w.contains("\necho hi\n"));
    assert!(script_opts(&w).unwrap() == SubmitOpts::default());
}

#[test]
fn wire_specs() {
    let s = resolve(&cli(&["-N", "2", "job.sh"]), "#!/bin/sh\n", &[("X", "1")]).unwrap();
    let j = wire(&s).unwrap();
    assert_eq!(
        j.shape,
        JobShape::Rigid {
            nodes: 2,
            time_limit: batch_proto::TIME_UNLIMITED
        }
    );
    assert_eq!(
        (j.work_dir.as_str(), j.name.as_str()),
        ("/home/u", "job.sh")
    );
    assert_eq!(j.environment, vec![("X".to_string(), "1".to_string())]);
    let s = resolve(&cli(&["-t", "UNLIMITED", "job.sh"]), "#!/bin/sh\n", &[]).unwrap();
    assert_eq!(
        wire(&s).unwrap().shape,
        JobShape::Rigid {
            nodes: 1,
            time_limit: batch_proto::TIME_UNLIMITED
        }
    );
    // Parsed, then refused by batch-proto's bounds with their one-line messages.
    let s = resolve(
        &cli(&["-t", "99999999999999", "job.sh"]),
        "#!/bin/sh\n",
        &[],
    )
    .unwrap();
    assert_eq!(
        wire(&s).unwrap_err().to_string(),
        "invalid time limit: 69444444444-10:39:00 is longer than the longest allowed, 365-00:00:00"
    );
    let s = resolve(
        &cli(&["--begin", "now+99999999999999", "job.sh"]),
        "#!/bin/sh\n",
        &[],
    )
    .unwrap();
    assert_eq!(
        wire(&s).unwrap_err().to_string(),
        "invalid begin time: 1157407407 days ahead; at most 365 days ahead are accepted"
    );
    let s = resolve(
        &cli(&["--begin", "now+365days", "-t", "365-0", "job.sh"]),
        "#!/bin/sh\n",
        &[],
    )
    .unwrap();
    assert!(wire(&s).is_ok());
    let s = resolve(
        &cli(&["--profile", "500:5,3600:10", "job.sh"]),
        "#!/bin/sh\n",
        &[],
    )
    .unwrap();
    assert_eq!(
        wire(&s).unwrap().shape,
        JobShape::Evolving {
            steps: vec![Step::new(500_000, 5), Step::new(3_600_000, 10)]
        }
    );
    let s = resolve(
        &cli(&["--moldable", "4:60", "-d", "afterok:3", "job.sh"]),
        "#!/bin/sh\n",
        &[],
    )
    .unwrap();
    let j = wire(&s).unwrap();
    assert_eq!(
        j.shape,
        JobShape::Moldable {
            configs: vec![MoldConfig {
                nodes: 4,
                walltime: 60 * MINUTE
            }],
            model: None,
            weight: None,
        }
    );
    assert_eq!(j.dependencies.len(), 1);
    let s = resolve(
        &cli(&[
            "--moldable-model",
            "amdahl:1:00:00:0.25",
            "--nodes-range",
            "2-16",
            "--moldable",
            "32:5",
            "--weight",
            "3",
            "job.sh",
        ]),
        "#!/bin/sh\n",
        &[],
    )
    .unwrap();
    assert_eq!(
        wire(&s).unwrap().shape,
        JobShape::Moldable {
            configs: vec![MoldConfig {
                nodes: 32,
                walltime: 5 * MINUTE
            }],
            model: Some(MoldModel {
                model: batch_proto::SpeedupModel::Amdahl {
                    work: 60 * MINUTE,
                    serial: 0.25
                },
                min_nodes: 2,
                max_nodes: 16
            }),
            weight: Some(3.0),
        }
    );
}

#[test]
fn moldable_options_from_directives_and_their_conflicts() {
    let script =
        "#!/bin/sh\n#ESUB --moldable-model linear:10\n#ESUB --nodes-range 1-4\n#ESUB --weight 2\n";
    let s = resolve(&cli(&["job.sh"]), script, &[]).unwrap();
    match wire(&s).unwrap().shape {
        JobShape::Moldable { model, weight, .. } => {
            assert_eq!(weight, Some(2.0));
            assert_eq!(model.map(|m| (m.min_nodes, m.max_nodes)), Some((1, 4)));
        }
        other => panic!("not moldable: {other:?}"),
    }
    let refused = |args: &[&str]| {
        resolve(&cli(args), "#!/bin/sh\n", &[])
            .unwrap_err()
            .to_string()
    };
    for (args, why) in [
        (
            &["--moldable-model", "amdahl:60:0.1", "job.sh"][..],
            "needs --nodes-range",
        ),
        (
            &["--nodes-range", "1-4", "job.sh"][..],
            "goes with --moldable-model",
        ),
        (
            &["--weight", "2", "job.sh"][..],
            "--weight applies to moldable jobs",
        ),
        (
            &["--weight", "0", "--moldable", "1:1", "job.sh"][..],
            "invalid weight '0'",
        ),
        (
            &["--moldable", "1:1", "--profile", "1:1", "job.sh"][..],
            "exclude each other",
        ),
        (
            &[
                "--moldable-model",
                "linear:5",
                "--nodes-range",
                "1-2",
                "-N",
                "2",
                "job.sh",
            ][..],
            "drop -N/--nodes",
        ),
        (
            &[
                "--moldable-model",
                "amdahl:5:2",
                "--nodes-range",
                "1-2",
                "job.sh",
            ][..],
            "not a number in [0, 1]",
        ),
    ] {
        let e = refused(args);
        assert!(e.contains(why) && !e.contains('\n'), "{args:?}: {e}");
    }
    // A directive's bad value says where it came from.
    let e = resolve(
        &cli(&["job.sh"]),
        "#!/bin/sh\n#ESUB --nodes-range 4-1\n",
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.ends_with("(from line 2 of the script: `#ESUB --nodes-range 4-1`)"),
        "{e}"
    );
}

#[test]
fn global_jobs_take_components_a_deadline_and_requeue_from_any_source() {
    let script = "#!/bin/sh\n#ESUB --components 4,2 --deadline +10min --requeue\ntrue\n";
    let spec = wire(&resolve(&cli(&["job.sh"]), script, &[]).unwrap()).unwrap();
    assert_eq!(
        spec.shape,
        JobShape::CoAllocated {
            components: vec![4, 2],
            time_limit: DEFAULT_TIME_LIMIT
        }
    );
    assert_eq!(spec.deadline, Some(1_000_000 + 10 * MINUTE));
    assert!(spec.requeue);
    let s = resolve(&cli(&["--no-requeue", "job.sh"]), script, &[]).unwrap();
    assert!(!s.requeue);
    // An #ESUB line's choice wins over an #SBATCH line's, either way.
    let both = "#!/bin/sh\n#ESUB --no-requeue\n#SBATCH --requeue\n";
    assert!(!resolve(&cli(&["job.sh"]), both, &[]).unwrap().requeue);
    // A local job: rigid, bound to its pool, requeued when preempted.
    let spec = resolve(
        &cli(&["-p", "a", "--requeue", "job.sh"]),
        "#!/bin/sh\n",
        &[],
    )
    .unwrap();
    assert_eq!((spec.pool.as_deref(), spec.requeue), (Some("a"), true));
}

#[test]
fn deadlines_parse_like_begin_times_and_must_be_ahead() {
    let z = fixed_zone(0);
    // 1_000_000 ms is 00:16:40 on 1970-01-01.
    let now = 1_000_000;
    assert_eq!(parse_deadline("+2s", now, &z).unwrap(), now + 2 * SECOND);
    assert_eq!(
        parse_deadline("+10min", now, &z).unwrap(),
        now + 10 * MINUTE
    );
    assert_eq!(
        parse_deadline("now+1hour", now, &z).unwrap(),
        1_000 * SECOND + 3_600 * SECOND
    );
    assert_eq!(parse_deadline("10:30", now, &z).unwrap(), 37_800 * SECOND);
    for bad in ["yesterday", "+", "now-1minute", "1970-01-01T00:00:00"] {
        let e = parse_deadline(bad, now, &z).unwrap_err().to_string();
        assert!(e.starts_with("invalid deadline"), "{bad}: {e}");
    }
    assert_eq!(parse_components("16, 16,8").unwrap(), vec![16, 16, 8]);
    for bad in ["", "4,", "0", "2,-1", "x"] {
        assert!(parse_components(bad).is_err(), "{bad}");
    }
}

#[test]
fn global_options_that_do_not_go_together_are_refused() {
    let base = ["--components", "2,2", "--deadline", "+1min"];
    for extra in [&["-N", "2"][..], &["-p", "a"], &["--profile", "60:2"]] {
        let mut args: Vec<&str> = base.to_vec();
        args.extend_from_slice(extra);
        args.push("job.sh");
        let e = resolve(&cli(&args), "#!/bin/sh\n", &[]).unwrap_err();
        assert!(matches!(e, SpecError::Conflict(_)), "{extra:?}: {e}");
    }
    let e = resolve(&cli(&["--components", "2", "job.sh"]), "#!/bin/sh\n", &[]).unwrap_err();
    assert!(e.to_string().contains("--deadline"), "{e}");
    // Slurm's --deadline on any other job: the end-by deadline (removed, DEADLINE, once it
    // cannot end by then), not the start deadline the policy sees.
    let job = resolve(&cli(&["--deadline", "+1min", "job.sh"]), "#!/bin/sh\n", &[]).unwrap();
    assert_eq!(job.deadline, None);
    assert!(job.end_by.is_some());
}

/// sbatch (Slurm 22.05) accepts `--wckey`, `--comment`, `--nice[=N]`, `--time-min`,
/// `-k/--no-kill`, `--tmp`, `--hint`, `-m/--distribution`, `--mail-type`, `--mail-user` and
/// `--profile=TYPES` on the command line, in `#SBATCH` lines and (those sbatch reads from its
/// environment) as `SBATCH_WCKEY`, `SBATCH_NO_KILL`, `SBATCH_HINT`, `SBATCH_DISTRIBUTION`,
/// `SBATCH_PROFILE`. Here they are stored and shown and change nothing: the shape, the priority
/// and the time limit stay what they are without them.
#[test]
fn slurm_options_without_effect_are_stored_and_change_nothing() {
    let plain = resolve(&cli(&["-t", "10", "job.sh"]), "#!/bin/sh\n", &[]).unwrap();
    let s = resolve(
        &cli(&[
            "-t",
            "10",
            "--comment",
            "a note",
            "--nice",
            "--time-min=5",
            "-k",
            "--tmp=2G",
            "--hint=nomultithread",
            "-m",
            "cyclic",
            "--mail-type=NONE",
            "job.sh",
        ]),
        "#!/bin/sh\n#SBATCH --wckey=submitit\n#SBATCH --profile=energy,task\n",
        &[],
    )
    .unwrap();
    let i = s.inert.clone().unwrap();
    assert_eq!(
        *i,
        batch_proto::InertOptions {
            wckey: Some("submitit".into()),
            comment: Some("a note".into()),
            nice: Some(100),
            time_min: Some(5 * MINUTE),
            no_kill: true,
            tmp_mb: Some(2048),
            hint: Some("nomultithread".into()),
            distribution: Some("cyclic".into()),
            mail_type: Some("NONE".into()),
            mail_user: None,
            profile: Some("energy,task".into()),
        }
    );
    assert_eq!(
        (s.shape.clone(), s.priority, s.resources.clone()),
        (plain.shape.clone(), plain.priority, plain.resources.clone())
    );
    assert!(wire(&s).is_ok());
    // --nice=N, negative too; --no-kill=off turns it off.
    let s = resolve(
        &cli(&["--nice=-5", "--no-kill=off", "job.sh"]),
        "#!/bin/sh\n",
        &[],
    )
    .unwrap();
    assert_eq!(s.inert.unwrap().nice, Some(-5));
    // The environment spellings sbatch reads.
    let s = resolve(
        &cli(&["job.sh"]),
        "#!/bin/sh\n",
        &[
            ("SBATCH_WCKEY", "k"),
            ("SBATCH_NO_KILL", "1"),
            ("SBATCH_HINT", "compute_bound"),
            ("SBATCH_DISTRIBUTION", "block"),
            ("SBATCH_PROFILE", "all"),
        ],
    )
    .unwrap();
    let i = s.inert.unwrap();
    assert_eq!(
        (
            i.wckey.as_deref(),
            i.no_kill,
            i.hint.as_deref(),
            i.distribution.as_deref(),
            i.profile.as_deref()
        ),
        (
            Some("k"),
            true,
            Some("compute_bound"),
            Some("block"),
            Some("all")
        )
    );
    assert!(matches!(s.shape, JobShape::Rigid { .. }));
    // Nothing given: nothing sent.
    assert!(plain.inert.is_none());
    // Bad values are refused as sbatch refuses them.
    for bad in [
        &["--hint=fast", "job.sh"][..],
        &["--nice=x", "job.sh"],
        &["--tmp=3X", "job.sh"],
        &["--time-min=soon", "job.sh"],
    ] {
        assert!(resolve(&cli(bad), "#!/bin/sh\n", &[]).is_err(), "{bad:?}");
    }
    // `--nice 5` is `--nice` (100) and a script named 5, as with sbatch's optional argument.
    let c = cli(&["--nice", "5"]);
    assert_eq!(
        (c.opts.nice.as_deref(), c.script.clone()),
        (Some("100"), vec!["5".to_string()])
    );
}

/// sbatch reads `SBATCH_MEM_PER_NODE` and `SBATCH_MEM_PER_CPU` as `--mem` and
/// `--mem-per-cpu`; a variable of an option esubmit does not have (`SBATCH_GRES`,
/// `SBATCH_CONSTRAINT`...) is refused with the option's own message, not ignored.
#[test]
fn other_sbatch_variables_are_honoured_or_refused_as_their_option() {
    let s = resolve(
        &cli(&["job.sh"]),
        "#!/bin/sh\n",
        &[("SBATCH_MEM_PER_NODE", "2G"), ("SBATCH_MEM_PER_CPU", "500")],
    )
    .unwrap();
    let r = s.resources.unwrap();
    assert_eq!((r.mem_per_node, r.mem_per_cpu), (Some(2048), Some(500)));
    let s = resolve(
        &cli(&["--mem=1G", "job.sh"]),
        "#!/bin/sh\n",
        &[("SBATCH_MEM_PER_NODE", "2G")],
    )
    .unwrap();
    assert_eq!(s.resources.unwrap().mem_per_node, Some(1024));
    let e = resolve(
        &cli(&["job.sh"]),
        "#!/bin/sh\n",
        &[("SBATCH_GRES", "gpu:1")],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "unrecognized option '--gres': Slurm's generic resources (GPUs), which esched's pools do not have (from SBATCH_GRES)"
    );
    let e = resolve(
        &cli(&["job.sh"]),
        "#!/bin/sh\n",
        &[("SBATCH_CONSTRAINT", "fast")],
    )
    .unwrap_err();
    assert!(e.to_string().contains("'--constraint'"), "{e}");
}

/// Slurm's `--profile` is its profiling (all, none, energy, task, lustre, network): stored, no
/// effect. An evolving job's steps are `--evolving-profile`; `--profile` keeps that meaning
/// only for a value that cannot be Slurm's.
#[test]
fn profile_is_slurm_profiling_unless_its_value_cannot_be() {
    let s = resolve(&cli(&["--profile=none", "job.sh"]), "#!/bin/sh\n", &[]).unwrap();
    assert!(matches!(s.shape, JobShape::Rigid { .. }));
    assert_eq!(s.inert.unwrap().profile.as_deref(), Some("none"));
    for args in [
        &["--evolving-profile", "60:1,60:2", "job.sh"][..],
        &["--profile", "60:1,60:2", "job.sh"],
    ] {
        let s = resolve(&cli(args), "#!/bin/sh\n", &[]).unwrap();
        assert!(matches!(s.shape, JobShape::Evolving { .. }), "{args:?}");
        assert!(s.inert.is_none());
    }
    // Both: Slurm's profiling stored, the steps from --evolving-profile.
    let s = resolve(
        &cli(&["--profile=task", "--evolving-profile=60:1", "job.sh"]),
        "#!/bin/sh\n",
        &[],
    )
    .unwrap();
    assert!(matches!(s.shape, JobShape::Evolving { .. }));
    assert_eq!(s.inert.unwrap().profile.as_deref(), Some("task"));
}

/// sbatch: an option given twice, the last one wins (on the command line and among
/// `#SBATCH` lines); the command line still beats the script.
#[test]
fn the_same_option_twice_the_last_wins() {
    let s = resolve(
        &cli(&[
            "-t", "5", "--time=7", "-J", "a", "-J", "b", "--hold", "-H", "job.sh",
        ]),
        "#!/bin/sh\n#SBATCH -N 2\n#SBATCH -N 3 -p x\n#SBATCH --partition=y\n",
        &[],
    )
    .unwrap();
    assert_eq!(limit(&s), 7 * MINUTE);
    assert_eq!(s.name, "b");
    assert!(s.hold);
    assert_eq!(s.pool.as_deref(), Some("y"));
    assert!(matches!(s.shape, JobShape::Rigid { nodes: 3, .. }));
    let s = resolve(
        &cli(&["-N", "4", "job.sh"]),
        "#!/bin/sh\n#SBATCH -N 2\n#SBATCH -N 3\n",
        &[],
    )
    .unwrap();
    assert!(matches!(s.shape, JobShape::Rigid { nodes: 4, .. }));
}

/// Slurm 22.05's sbatch reads `#PBS` lines where it reads `#SBATCH` ones (`--ignore-pbs`,
/// `SBATCH_IGNORE_PBS` turn that off). esubmit does not translate them: it refuses a script
/// that has any, naming the line, unless told to ignore them; a `#PBS` line after the first
/// command is a comment to both.
#[test]
fn pbs_lines_are_refused_clearly_or_ignored_when_asked() {
    let script = "#!/bin/sh\n#SBATCH -J x\n#PBS -N y\necho\n";
    let e = resolve(&cli(&["job.sh"]), script, &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 3 of the script: #PBS directives are not read by esubmit: write them as #SBATCH \
         lines, or pass --ignore-pbs to ignore them"
    );
    let s = resolve(&cli(&["--ignore-pbs", "job.sh"]), script, &[]).unwrap();
    assert_eq!(s.name, "x");
    assert!(resolve(&cli(&["job.sh"]), script, &[("SBATCH_IGNORE_PBS", "1")]).is_ok());
    assert!(resolve(&cli(&["job.sh"]), "#!/bin/sh\necho\n#PBS -N y\n", &[]).is_ok());
}

#[test]
fn short_options_take_attached_values_as_sbatch() {
    // sbatch -N2 -t5 -n4 -pdebug: getopt's attached values.
    let cli = SubmitCli::try_parse_from(["esubmit", "-N2", "-t5", "-n4", "-pdebug", "--wrap", "x"]);
    let cli = cli.map_err(|e| e.to_string()).unwrap();
    assert_eq!(cli.opts.nodes.as_deref(), Some("2"));
    assert_eq!(cli.opts.time.as_deref(), Some("5"));
    // What follows the script is the script's, options or not.
    let cli = SubmitCli::try_parse_from(["esubmit", "-N2", "job.sh", "-N3", "--wrap", "-x"]);
    let cli = cli.map_err(|e| e.to_string()).unwrap();
    assert_eq!(cli.opts.nodes.as_deref(), Some("2"));
    assert_eq!(cli.script, ["job.sh", "-N3", "--wrap", "-x"]);
}

/// `--help` names every form the parsers accept: each output escape the pattern parser knows,
/// each `--begin` keyword and relative form, and `UNLIMITED` for `-t`.
#[test]
fn help_names_every_accepted_form() {
    use clap::CommandFactory;
    let help = SubmitCli::command().render_help().to_string();
    let option = |long: &str| -> String {
        let at = help
            .find(long)
            .unwrap_or_else(|| panic!("{long} in {help}"));
        let rest = &help[at..];
        let end = rest[2..].find("\n  -").map_or(rest.len(), |e| e + 2);
        rest[..end].split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let output = option("--output <PATTERN>");
    for escape in [
        "%A", "%a", "%b", "%J", "%j", "%N", "%n", "%s", "%t", "%u", "%x", "%%",
    ] {
        assert!(output.contains(escape), "{escape}: {output}");
        let pattern = format!("out-{escape}");
        assert!(batch_proto::pattern::check(&pattern).is_ok(), "{pattern}");
    }
    let begin = option("--begin <TIME>");
    for form in [
        "now+N",
        "now-N",
        "HH:MM[:SS]",
        "YYYY-MM-DD",
        "today",
        "tomorrow",
        "midnight",
        "noon",
        "elevenses",
        "fika",
        "teatime",
    ] {
        assert!(begin.contains(form), "{form}: {begin}");
    }
    let zone = fixed_zone(0);
    for accepted in ["now-1h", "now+2weeks", "noon", "fika", "midnight"] {
        assert!(
            super::super::time::parse_begin(accepted, 1_800_000_000_000, &zone).is_ok(),
            "{accepted}"
        );
    }
    assert!(option("--time <TIME>").contains("UNLIMITED"));
}
