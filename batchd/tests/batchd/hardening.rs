//! The daemon's defences (a second instance, slow or idle clients, file modes, log injection,
//! open-file limits, the default config): each test starts real daemons.
//! Limits are configured small (a few hundred ms) so that each test takes about a second.

use super::*;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use batch_proto::{ClientError, VersionRequest};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

pub(super) fn version(client: &mut Client) {
    match client
        .request(&Request::Version(VersionRequest {}))
        .unwrap()
    {
        Response::Version(_) => {}
        other => panic!("{other:?}"),
    }
}

/// A raw connection that has exchanged hellos.
pub(super) fn greeted(sock: &Path) -> UnixStream {
    let mut s = UnixStream::connect(sock).unwrap();
    write_frame(&mut s, &Request::Hello(Hello::current())).unwrap();
    let r: Response = read_frame(&mut s).unwrap();
    assert!(matches!(r, Response::Hello(_)), "{r:?}");
    s
}

/// Whether the daemon closed `s` (within a few seconds), reading away what it sent first.
pub(super) fn closed_by_daemon(s: &mut UnixStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 65536];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

/// The real batchd on `file`, its stderr into `log`.
pub(super) fn batchd(file: &Path, log: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_batchd"))
        .arg("--config")
        .arg(file)
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

pub(super) fn wait_listening(sock: &Path) -> Client {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(c) = Client::connect(sock) {
            return c;
        }
        assert!(Instant::now() < deadline, "batchd never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The state's bytes that a refused start must leave alone.
fn state_bytes(state: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(state)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// A second batchd on the same config, while jobs stream through the first, exits
/// non-zero with one line naming the holder's pid, changes nothing, and no job runs twice.
#[test]
fn a_refused_second_daemon_changes_nothing_and_no_job_runs_twice() {
    let mut c = Cluster::new();
    let file = c.path("batchd.toml");
    std::fs::write(&file, c.config.to_toml()).unwrap();
    let runs = c.path("runs");
    let state = c.config.state_dir.clone().unwrap();
    let refused = |n: usize| {
        let out = Command::new(env!("CARGO_BIN_EXE_batchd"))
            .arg("--config")
            .arg(&file)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "start {n}: {err}");
        assert_eq!(err.lines().count(), 1, "start {n}: {err}");
        assert!(
            err.contains(&format!(
                "in use by another batchd (pid {})",
                std::process::id()
            )),
            "start {n}: {err}"
        );
    };
    let spec = c.spec(&format!("echo $ESCHED_JOB_ID >> {}", runs.display()));
    let ids = std::thread::scope(|s| {
        let submitter = s.spawn(|| {
            (0..40)
                .map(|_| {
                    let id = c.submit(spec.clone());
                    std::thread::sleep(Duration::from_millis(5));
                    id
                })
                .collect::<Vec<u64>>()
        });
        for n in 0..8 {
            refused(n);
        }
        submitter.join().unwrap()
    });
    for &id in &ids {
        c.wait_state(id, JobState::Completed);
    }
    // Quiet: the state's files, byte for byte, before and after a refused start.
    let before = state_bytes(&state);
    refused(8);
    assert_eq!(
        state_bytes(&state),
        before,
        "a refused start wrote the state"
    );
    // The restart finds nothing to run again.
    c.stop();
    c.boot();
    std::thread::sleep(Duration::from_millis(300));
    let active = c
        .client()
        .jobs(&Request::List(ListRequest::default()))
        .unwrap();
    assert!(active.is_empty(), "{active:?}");
    let mut ran: Vec<u64> = std::fs::read_to_string(&runs)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    ran.sort_unstable();
    assert_eq!(ran, ids, "every job ran exactly once");
    for &id in &ids {
        assert_eq!(c.show(id).state, JobState::Completed);
    }
}

/// A header announcing 16 MiB followed by (almost) nothing allocates nothing and holds
/// nothing: the connection gets an error once the frame deadline passes; others are served
/// meanwhile.
#[test]
fn a_started_frame_has_a_deadline_and_its_announced_length_is_only_a_limit() {
    let c = cluster(|cfg| {
        cfg.limits.frame_timeout_ms = 300;
        cfg.limits.idle_timeout_ms = 10_000;
    });
    let sock = c.config.socket.clone().unwrap();
    let mut stalled: Vec<UnixStream> = (0..50)
        .map(|_| {
            let mut s = greeted(&sock);
            s.write_all(&(batch_proto::MAX_FRAME as u32).to_be_bytes())
                .unwrap();
            s.write_all(b"{\"Version\"").unwrap();
            s
        })
        .collect();
    version(&mut c.client());
    for s in &mut stalled {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        match read_frame::<_, Response>(s) {
            Ok(Response::Error(e)) => {
                assert_eq!(e.kind, ErrorKind::BadRequest);
                assert!(e.message.contains("must arrive whole within"), "{e:?}");
            }
            other => panic!("{other:?}"),
        }
        assert!(closed_by_daemon(s));
    }
    version(&mut c.client());
}

/// Idle connections are closed after the idle timeout, and make room for new
/// ones past the per-user cap; when none is idle, the new one is refused with the limit named.
#[test]
fn idle_connections_are_closed_and_the_caps_refuse_clearly() {
    let c = cluster(|cfg| {
        cfg.limits.idle_timeout_ms = 300;
        cfg.limits.frame_timeout_ms = 3_000;
        cfg.limits.max_connections_per_user = 4;
    });
    let sock = c.config.socket.clone().unwrap();
    // Ten connections that never say anything: past the cap of 4, yet the tools get through.
    let mut idle: Vec<UnixStream> = (0..10)
        .map(|_| UnixStream::connect(&sock).unwrap())
        .collect();
    // Each connection is admitted by its own task, so not in connect order: give them time to
    // be admitted (well within the 300 ms idle timeout) before the tool connects, or a late
    // one may find the tool, between its hello and its request, the longest-idle connection.
    std::thread::sleep(Duration::from_millis(150));
    version(&mut c.client());
    for s in &mut idle {
        assert!(closed_by_daemon(s), "an idle connection stayed open");
    }
    // Four connections inside a request (not idle): the fifth is refused, saying why.
    std::thread::sleep(Duration::from_millis(100));
    let mut busy: Vec<UnixStream> = (0..4)
        .map(|_| {
            let mut s = greeted(&sock);
            s.write_all(&[0, 0]).unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    match Client::connect(&sock) {
        Err(ClientError::Daemon(e)) => {
            assert!(
                e.message.contains("limits.max_connections_per_user"),
                "{e:?}"
            );
            assert!(!e.message.contains('\n'));
        }
        other => panic!("{other:?}"),
    }
    // Their slots come back once batchd has read each one's end: admitted again well before
    // the frame timeout (3 s) would have closed them anyway.
    drop(busy.drain(..));
    let deadline = Instant::now() + Duration::from_millis(2_500);
    let mut again = loop {
        match Client::connect(&sock) {
            Ok(client) => break client,
            Err(ClientError::Daemon(e)) if Instant::now() < deadline => {
                assert!(e.message.contains("max_connections_per_user"), "{e:?}");
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("{e}"),
        }
    };
    version(&mut again);
}

/// A client that asks for a listing and does not read holds a few frames, not the
/// listing: it is dropped once a frame waits longer than the frame deadline.
#[test]
fn a_listing_client_that_does_not_read_is_dropped() {
    let c = cluster(|cfg| {
        cfg.limits.frame_timeout_ms = 300;
        cfg.sync = batchd::config::Sync::Normal;
    });
    let sock = c.config.socket.clone().unwrap();
    let mut client = c.client();
    // 300 jobs of 10 kB of arguments: 3 MB of listing, far more than a socket buffers.
    for _ in 0..300 {
        let mut s = c.spec("true");
        s.hold = true;
        s.args = vec!["x".repeat(10_000)];
        submit_on(&mut client, s);
    }
    let mut lazy = greeted(&sock);
    write_frame(&mut lazy, &Request::List(ListRequest::default())).unwrap();
    std::thread::sleep(Duration::from_millis(1_000));
    // Others are served meanwhile.
    version(&mut c.client());
    lazy.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut parts = 0;
    loop {
        match read_frame::<_, Response>(&mut lazy) {
            Ok(Response::JobsPart(_)) => parts += 1,
            Ok(Response::Jobs(j)) => panic!(
                "the whole listing was kept for it ({parts} parts + {})",
                j.len()
            ),
            Ok(other) => panic!("{other:?}"),
            Err(_) => break,
        }
    }
    // A reading client gets it all.
    let all = c
        .client()
        .jobs(&Request::List(ListRequest::default()))
        .unwrap();
    assert_eq!(all.len(), 300);
}

/// The state directory, database, job files are batchd's user's only; output files get
/// the submitter's umask (private when the submission gives none), and the job inherits it.
#[test]
fn state_is_private_and_output_files_follow_the_submitters_umask() {
    let c = Cluster::new();
    let state = c.config.state_dir.clone().unwrap();
    let with_umask = |umask: Option<u32>, script: &str| {
        let mut s = c.spec(script);
        s.umask = umask;
        s.environment.push(("SECRET_TOKEN".into(), "s3cr3t".into()));
        c.submit(s)
    };
    let running = with_umask(Some(0o022), "sleep 30");
    c.wait_state(running, JobState::Running);
    let dir = state.join("jobs").join(running.to_string());
    wait_file_exists(&dir.join("job.pid"));
    let launch = std::fs::read_to_string(dir.join("launch.json")).unwrap();
    assert!(
        launch.contains("s3cr3t"),
        "the test looks at the right file"
    );
    // As root, jobs run as their submitters and must reach their script by name: 0711.
    let root = nix::unistd::geteuid().is_root();
    let dir_mode = if root { 0o711 } else { 0o700 };
    for (path, want) in [
        (state.clone(), dir_mode),
        (state.join("jobs"), dir_mode),
        (dir.clone(), dir_mode),
        (dir.join("launch.json"), 0o600),
        (dir.join("script"), 0o700),
        (dir.join("supervisor.log"), 0o600),
        (state.join("batchd.sqlite"), 0o600),
        (state.join("batchd.sqlite-wal"), 0o600),
        (state.join("batchd.lock"), 0o600),
    ] {
        assert_eq!(mode(&path), want, "{}", path.display());
    }
    let shared = with_umask(Some(0o022), "umask");
    let private = with_umask(Some(0o077), "umask");
    let unsaid = with_umask(None, "umask");
    for (id, file_mode, inherited) in [
        (shared, 0o644, "0022"),
        (private, 0o600, "0077"),
        (unsaid, 0o600, "0077"),
    ] {
        c.wait_state(id, JobState::Completed);
        let out = c.path(&format!("slurm-{id}.out"));
        assert_eq!(mode(&out), file_mode, "job {id}");
        assert_eq!(std::fs::read_to_string(&out).unwrap().trim(), inherited);
    }
    if root {
        // Another user (nobody) reads none of it, though the directories above let it pass.
        std::fs::set_permissions(c.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let readable = |path: &Path| {
            let mut cmd = Command::new("cat");
            cmd.arg(path).stdout(Stdio::null()).stderr(Stdio::null());
            // SAFETY: setgid/setuid are async-signal-safe and touch no memory of the parent.
            unsafe {
                cmd.pre_exec(|| {
                    nix::unistd::setgroups(&[])?;
                    nix::unistd::setgid(nix::unistd::Gid::from_raw(65534))?;
                    nix::unistd::setuid(nix::unistd::Uid::from_raw(65534))?;
                    Ok(())
                });
            }
            cmd.status().unwrap().success()
        };
        for path in [
            state.join("batchd.sqlite"),
            state.join("batchd.sqlite-wal"),
            dir.join("launch.json"),
            c.path(&format!("slurm-{private}.out")),
            c.path(&format!("slurm-{unsaid}.out")),
        ] {
            assert!(!readable(&path), "another user reads {}", path.display());
        }
        assert!(
            readable(&c.path(&format!("slurm-{shared}.out"))),
            "the check can succeed"
        );
    } else {
        eprintln!(
            "SKIPPED in state_is_private_and_output_files_follow_the_submitters_umask: \
             that another user reads none of it (needs root to act as another uid)"
        );
    }
    c.cancel(vec![running], None);
    c.wait_state(running, JobState::Cancelled);
}

/// On the real binary: a client's text cannot forge a log line, and the soft
/// open-file limit is raised to the hard one at start.
#[test]
fn client_text_is_escaped_in_the_log_and_the_open_file_limit_is_raised() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("batchd.toml");
    let log = dir.path().join("batchd.log");
    let cfg = config(dir.path());
    std::fs::write(&file, cfg.to_toml()).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_batchd"));
    cmd.arg("--config")
        .arg(&file)
        .stderr(std::fs::File::create(&log).unwrap())
        .stdout(Stdio::null());
    // SAFETY: setrlimit is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            use nix::sys::resource::{getrlimit, setrlimit, Resource};
            let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
            setrlimit(Resource::RLIMIT_NOFILE, 256.min(hard), hard)?;
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let sock = cfg.socket.clone().unwrap();
    drop(wait_listening(&sock));
    let forged = "2026-01-01T00:00:00.000000Z  INFO batchd: job ended job=1 state=COMPLETED";
    let mut s = greeted(&sock);
    write_frame(
        &mut s,
        &serde_json::json!({ format!("Launch\n{forged}\r\u{1b}[2K"): {} }),
    )
    .unwrap();
    match read_frame::<_, Response>(&mut s).unwrap() {
        Response::Error(e) => assert_eq!(e.kind, ErrorKind::BadRequest),
        other => panic!("{other:?}"),
    }
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", child.id())).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let v: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(v[3], v[4], "soft limit raised to the hard one: {line}");
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    assert!(child.wait().unwrap().success());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.lines().any(|l| l.starts_with("2026-01-01")),
        "a forged line: {text}"
    );
    assert!(!text.contains('\r') && !text.contains('\u{1b}'), "{text}");
    let warning = text
        .lines()
        .find(|l| l.contains("malformed request"))
        .unwrap_or_else(|| panic!("no warning: {text}"));
    assert!(warning.contains("\\n2026-01-01"), "{warning}");
}

/// On the real binary: a config without `[[pool]]` and `[policy]` runs the documented
/// defaults; a broken one is refused with one line.
#[test]
fn a_minimal_config_runs_the_defaults_and_a_broken_one_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("batchd.toml");
    let log = dir.path().join("batchd.log");
    let sock = dir.path().join("batchd.sock");
    std::fs::write(
        &file,
        format!(
            "socket = \"{}\"\nstate_dir = \"{}\"\n",
            sock.display(),
            dir.path().join("state").display()
        ),
    )
    .unwrap();
    let mut child = batchd(&file, &log);
    let mut client = wait_listening(&sock);
    match client.request(&Request::Info(Default::default())).unwrap() {
        Response::Info(info) => {
            assert_eq!(info.policy, "cbf");
            assert_eq!(info.pools.len(), 1);
            assert_eq!(
                (info.pools[0].name.as_str(), info.pools[0].total),
                ("debug", 8)
            );
        }
        other => panic!("{other:?}"),
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "{status}: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    std::fs::write(&file, "[[pool]\nname = \"a\"\nnodes = 2\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_batchd"))
        .arg("--config")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("batchd: {}: line 1", file.display())),
        "{err}"
    );
}
