//! What many or hostile clients can hold of batchd: the log a bad request writes, launcher
//! sessions (idle, per user, slow readers) and the connection slots of other users. Each test
//! starts a real daemon with small limits. Other users are child processes of this test
//! binary, re-executed as an unused uid (the suite runs as root; without root those tests
//! say so and pass).

use super::hardening::{batchd, greeted, version, wait_listening};
use super::*;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdout, Command, Stdio};

use batch_proto::{
    ChangeNotify, ClientError, Hello, ListClustersInfoRequest, PoolNodes, SessionRequest,
    StatsRequest, SubscribeRequest, ViewRequest,
};

/// What a launcher session sends after its hello.
fn subscribe(sock: &Path) -> (UnixStream, u64) {
    let mut s = greeted(sock);
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write_frame(&mut s, &Request::Subscribe(SubscribeRequest::default())).unwrap();
    match read_frame::<_, Response>(&mut s).unwrap() {
        Response::Subscribed(sub) => (s, sub.job),
        other => panic!("{other:?}"),
    }
}

/// The next frame that is not a pushed `ChangeNotify`.
fn answer(s: &mut UnixStream) -> Response {
    loop {
        match read_frame::<_, Response>(s).unwrap() {
            Response::ChangeNotify(_) => {}
            other => return other,
        }
    }
}

/// A request for more nodes than the cluster has: accepted, never started.
fn request_too_large(s: &mut UnixStream) {
    write_frame(
        s,
        &Request::Request(SessionRequest {
            pools: vec![PoolNodes {
                pool: "debug".into(),
                nodes: 1_000,
            }],
            duration_ms: 60_000,
        }),
    )
    .unwrap();
    match answer(s) {
        Response::Requested { .. } => {}
        other => panic!("{other:?}"),
    }
}

/// A bad request writes one line of at most a few KiB to the log, however large the text it
/// quotes: a 1 MiB variant name (serde's error quotes it); a 1 MiB software version is refused
/// by the protocol's bounds unlogged, one within them logged quoted.
#[test]
fn a_bad_request_grows_the_log_by_a_few_kib_at_most() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("batchd.toml");
    let log = dir.path().join("batchd.log");
    let cfg = config(dir.path());
    std::fs::write(&file, cfg.to_toml()).unwrap();
    let mut child = batchd(&file, &log);
    let sock = cfg.socket.clone().unwrap();
    drop(wait_listening(&sock));
    let before = std::fs::metadata(&log).unwrap().len();
    let huge = "A".repeat(1 << 20);
    let bad = 10;
    for _ in 0..bad {
        let mut s = greeted(&sock);
        write_frame(&mut s, &serde_json::json!({ huge.clone(): {} })).unwrap();
        match read_frame::<_, Response>(&mut s).unwrap() {
            Response::Error(e) => assert_eq!(e.kind, ErrorKind::BadRequest),
            other => panic!("{other:?}"),
        }
    }
    let mut s = UnixStream::connect(&sock).unwrap();
    let mut hello = Hello::current();
    hello.proto_version = 9_999;
    hello.software_version = huge.clone();
    write_frame(&mut s, &Request::Hello(hello)).unwrap();
    assert!(matches!(
        read_frame::<_, Response>(&mut s).unwrap(),
        Response::Error(_)
    ));
    // Within the bounds, a version mismatch is logged with the client's version quoted.
    let mut s = UnixStream::connect(&sock).unwrap();
    let mut hello = Hello::current();
    hello.proto_version = 9_999;
    hello.software_version = "v\nINFO forged".into();
    write_frame(&mut s, &Request::Hello(hello)).unwrap();
    assert!(matches!(
        read_frame::<_, Response>(&mut s).unwrap(),
        Response::Error(_)
    ));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    assert!(child.wait().unwrap().success());
    let text = std::fs::read_to_string(&log).unwrap();
    let grown = text.len() as u64 - before;
    assert!(
        grown < (bad + 3) * 2048,
        "{grown} bytes of log for {} bad requests",
        bad + 1
    );
    let warning = text
        .lines()
        .find(|l| l.contains("malformed request"))
        .unwrap_or_else(|| panic!("no warning: {text}"));
    assert!(
        warning.contains("AAAA") && warning.contains("more bytes)"),
        "{warning}"
    );
    // The oversized version is refused by the protocol's bounds before anything logs it.
    assert!(
        !text.contains(&huge),
        "the software version was logged whole"
    );
    let mismatch = text
        .lines()
        .find(|l| l.contains("protocol version mismatch"))
        .unwrap_or_else(|| panic!("no mismatch logged: {text}"));
    assert!(mismatch.contains(r#""v\nINFO forged""#), "{mismatch}");
}

/// A session that makes no request within `session_idle_timeout_ms` of its subscribe is closed,
/// its job cancelled with the reason; one that has made a request stays, however long.
#[test]
fn a_session_without_a_request_is_closed_and_one_with_a_request_stays() {
    let c = cluster(|cfg| {
        cfg.policy.name = "coorm".into();
        cfg.limits.session_idle_timeout_ms = 400;
        cfg.limits.idle_timeout_ms = 400;
    });
    let sock = c.config.socket.clone().unwrap();
    let (mut idle, idle_job) = subscribe(&sock);
    let (mut waiting, waiting_job) = subscribe(&sock);
    request_too_large(&mut waiting);
    match answer(&mut idle) {
        Response::SessionEnded(e) => {
            assert_eq!((e.job, e.state.as_str()), (idle_job, "CANCELLED"));
            assert!(e.reason.contains("limits.session_idle_timeout_ms"), "{e:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(hardening::closed_by_daemon(&mut idle));
    let j = c.wait_state(idle_job, JobState::Cancelled);
    assert!(
        j.detail
            .is_some_and(|d| d.contains("session_idle_timeout_ms")),
        "the reason is kept"
    );
    // Well past both idle timeouts, the session that asked is served.
    std::thread::sleep(Duration::from_millis(1_200));
    write_frame(
        &mut waiting,
        &Request::ListClustersInfo(ListClustersInfoRequest {}),
    )
    .unwrap();
    assert!(matches!(answer(&mut waiting), Response::ClustersInfo(_)));
    assert_eq!(c.show(waiting_job).state, JobState::Pending);
}

/// A user has at most `max_sessions_per_user` sessions: the next subscribe is refused naming
/// the key; once one ends, there is room again.
#[test]
fn sessions_are_capped_per_user() {
    let c = cluster(|cfg| {
        cfg.policy.name = "coorm".into();
        cfg.limits.max_sessions_per_user = 2;
    });
    let sock = c.config.socket.clone().unwrap();
    let (first, _) = subscribe(&sock);
    let _second = subscribe(&sock);
    let mut third = greeted(&sock);
    write_frame(&mut third, &Request::Subscribe(SubscribeRequest::default())).unwrap();
    match read_frame::<_, Response>(&mut third).unwrap() {
        Response::Error(e) => {
            assert!(e.message.contains("limits.max_sessions_per_user"), "{e:?}");
            assert!(!e.message.contains('\n'));
        }
        other => panic!("{other:?}"),
    }
    // Plain requests are not sessions.
    version(&mut c.client());
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut s = greeted(&sock);
        write_frame(&mut s, &Request::Subscribe(SubscribeRequest::default())).unwrap();
        match read_frame::<_, Response>(&mut s).unwrap() {
            Response::Subscribed(_) => break,
            Response::Error(e) if Instant::now() < deadline => {
                assert!(e.message.contains("max_sessions_per_user"), "{e:?}");
                std::thread::sleep(Duration::from_millis(50));
            }
            other => panic!("{other:?}"),
        }
    }
}

/// A launcher that reads slowly while its view changes gets the newest view, not every stale
/// one: the session's task is held up sending a 3 MB listing nobody reads while the view
/// changes twenty times; then the launcher reads the listing and at most two views, the last
/// one `eview`'s.
#[test]
fn a_slow_session_reader_gets_the_newest_view_not_every_stale_one() {
    let c = cluster(|cfg| {
        cfg.policy.name = "coorm".into();
        cfg.limits.frame_timeout_ms = 30_000;
        cfg.sync = batchd::config::Sync::Normal;
        // The session waits throughout, so each cancel below would hold its nodes for the
        // fair-start delay and the next job would wait for them: the views change just as
        // often without it, twenty jobs faster.
        cfg.coorm.fair_start_ms = 0;
    });
    let sock = c.config.socket.clone().unwrap();
    let mut client = c.client();
    for _ in 0..300 {
        let mut s = c.spec("true");
        s.hold = true;
        s.args = vec!["x".repeat(10_000)];
        submit_on(&mut client, s);
    }
    let (mut s, job) = subscribe(&sock);
    match read_frame::<_, Response>(&mut s).unwrap() {
        Response::ChangeNotify(_) => {}
        other => panic!("{other:?}"),
    }
    write_frame(&mut s, &Request::List(ListRequest::default())).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let mut running = Vec::new();
    for i in 0..20u64 {
        let mut spec = c.spec("sleep 60");
        spec.shape = batch_proto::JobShape::Rigid {
            nodes: 1 + (i % 4) as u32,
            time_limit: 60_000 + i * 1_000,
        };
        let id = submit_on(&mut client, spec);
        c.wait_state(id, JobState::Running);
        running.push(id);
        if running.len() > 1 {
            c.cancel(vec![running.remove(0)], None);
        }
        std::thread::sleep(Duration::from_millis(60));
    }
    // Let the last run's view be pushed, then read it all.
    std::thread::sleep(Duration::from_millis(300));
    let mut views: Vec<ChangeNotify> = Vec::new();
    let mut listed = 0;
    s.set_read_timeout(Some(Duration::from_millis(1_500)))
        .unwrap();
    loop {
        match read_frame::<_, Response>(&mut s) {
            Ok(Response::JobsPart(j)) => listed += j.len(),
            Ok(Response::Jobs(j)) => listed += j.len(),
            Ok(Response::ChangeNotify(v)) => views.push(v),
            Ok(other) => panic!("{other:?}"),
            Err(_) => break,
        }
    }
    assert!(listed >= 300, "{listed}");
    assert!(
        (1..=2).contains(&views.len()),
        "{} views queued for a slow reader",
        views.len()
    );
    let last = views.last().unwrap();
    let shown = match c
        .client()
        .request(&Request::View(ViewRequest { job }))
        .unwrap()
    {
        Response::View(v) => v,
        other => panic!("{other:?}"),
    };
    let cap = last.changes.iter().find(|ch| ch.pool == "debug").unwrap();
    assert_eq!(cap.cap.as_ref(), Some(&shown.pools[0].steps));
    c.cancel(running, None);
}

/// A child process of this test binary acting as user `uid` ([`other_user`]).
struct AsUser {
    child: Child,
    out: BufReader<ChildStdout>,
}

impl AsUser {
    /// Runs `what` (see [`other_user`]) as `uid` against `sock`; returns once it reported.
    fn start(uid: u32, sock: &Path, what: &str) -> (AsUser, String) {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "clients::other_user",
            "--exact",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("ESCHED_OTHER_USER", format!("{what} {}", sock.display()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
        // SAFETY: setgroups/setgid/setuid are async-signal-safe and touch no memory of the
        // parent.
        unsafe {
            cmd.pre_exec(move || {
                nix::unistd::setgroups(&[])?;
                nix::unistd::setgid(nix::unistd::Gid::from_raw(uid))?;
                nix::unistd::setuid(nix::unistd::Uid::from_raw(uid))?;
                Ok(())
            });
        }
        let mut child = cmd.spawn().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let said = loop {
            line.clear();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "uid {uid}: {what}: no report"
            );
            // The harness may have begun the line (`test clients::other_user ... `).
            if let Some((_, said)) = line.split_once("OTHER-USER: ") {
                break said.trim().to_string();
            }
        };
        (AsUser { child, out }, said)
    }
}

impl Drop for AsUser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = &self.out;
    }
}

/// The other users' side of [`others_cannot_lock_out_root_nor_each_other`], run in a child
/// process as another uid: `sessions N SOCK` opens N sessions with a request each, `halfsent N
/// SOCK` N connections inside a request (two bytes of its header), `version SOCK` asks the
/// version once. It prints `OTHER-USER: ` and what it got, then holds its connections until
/// its standard input closes. Run alone (without its variable) it does nothing.
#[test]
fn other_user() {
    let Ok(what) = std::env::var("ESCHED_OTHER_USER") else {
        return;
    };
    let words: Vec<&str> = what.split(' ').collect();
    let mut held = Vec::new();
    let said = match words[..] {
        ["sessions", n, sock] => {
            let mut refused = None;
            for _ in 0..n.parse::<usize>().unwrap() {
                let mut s = greeted(Path::new(sock));
                write_frame(&mut s, &Request::Subscribe(SubscribeRequest::default())).unwrap();
                match read_frame::<_, Response>(&mut s).unwrap() {
                    Response::Subscribed(_) => {
                        request_too_large(&mut s);
                        held.push(s);
                    }
                    Response::Error(e) => {
                        // Reported once batchd has closed it, so its slot is free.
                        assert!(hardening::closed_by_daemon(&mut s));
                        refused = Some(e.message);
                    }
                    other => panic!("{other:?}"),
                }
            }
            format!("{} {}", held.len(), refused.unwrap_or_default())
        }
        ["halfsent", n, sock] => {
            let mut refused = String::new();
            for _ in 0..n.parse::<usize>().unwrap() {
                let mut s = match UnixStream::connect(sock) {
                    Ok(s) => s,
                    Err(e) => {
                        refused = format!(" then cannot connect: {e}");
                        break;
                    }
                };
                write_frame(&mut s, &Request::Hello(Hello::current())).unwrap();
                match read_frame::<_, Response>(&mut s) {
                    Ok(Response::Hello(_)) => {
                        s.write_all(&[0, 0]).unwrap();
                        held.push(s);
                    }
                    // Told to the test, which says what it expected.
                    other => {
                        refused = format!(" then {other:?}");
                        break;
                    }
                }
            }
            format!("{}{refused}", held.len())
        }
        ["version", sock] => match Client::connect(Path::new(sock))
            .and_then(|mut c| c.request(&Request::Version(Default::default())))
        {
            Ok(Response::Version(_)) => "ok".to_string(),
            Ok(other) => format!("{other:?}"),
            Err(ClientError::Daemon(e)) => format!("refused: {}", e.message),
            Err(e) => format!("error: {e}"),
        },
        _ => panic!("{what}"),
    };
    // Straight to the descriptor: the test harness captures `println!`.
    let mut out = std::io::stdout();
    writeln!(out, "OTHER-USER: {said}").unwrap();
    out.flush().unwrap();
    let _ = std::io::stdin().read(&mut [0u8; 1]);
}

/// Whatever other users hold, root gets in (its reserved connections); sessions, never
/// evicted, are bounded per user; and users who keep requests half-sent in every slot make
/// room for one who holds fewer, instead of holding everyone out for the frame timeout.
#[test]
fn others_cannot_lock_out_root_nor_each_other() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!(
            "SKIPPED others_cannot_lock_out_root_nor_each_other: needs root to act as other uids"
        );
        return;
    }
    let c = cluster(|cfg| {
        cfg.policy.name = "coorm".into();
        cfg.limits.max_connections = 8;
        cfg.limits.max_connections_per_user = 8;
        cfg.limits.reserved_connections = 2;
        cfg.limits.max_sessions_per_user = 5;
        cfg.limits.frame_timeout_ms = 60_000;
        cfg.limits.idle_timeout_ms = 60_000;
    });
    std::fs::set_permissions(c.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let sock = c.config.socket.clone().unwrap();
    // Two users fill every slot with sessions, each refused past its cap.
    let (a, said) = AsUser::start(60_001, &sock, "sessions 6");
    assert!(
        said.starts_with("5 ") && said.contains("limits.max_sessions_per_user"),
        "{said}"
    );
    let (b, said) = AsUser::start(60_002, &sock, "sessions 3");
    assert_eq!(said.trim(), "3");
    let (_, said) = AsUser::start(60_003, &sock, "version");
    assert!(
        said.starts_with("refused: ") && said.contains("limits.max_connections"),
        "{said}"
    );
    // Root is served, twice at once.
    let mut r1 = c.client();
    let mut r2 = c.client();
    version(&mut r1);
    version(&mut r2);
    drop((r1, r2, a, b));
    // Sessions gone (their launchers' processes ended), two users keep half-sent requests in
    // every slot; a third user is served (one of the first user's is closed for it).
    let deadline = Instant::now() + Duration::from_secs(10);
    while c
        .client()
        .jobs(&Request::List(ListRequest::default()))
        .unwrap()
        .iter()
        .any(|j| j.state == JobState::Pending)
    {
        assert!(Instant::now() < deadline, "the sessions' jobs stay");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A session's job ends before its connection gives its slot back, and sessions are
    // never closed to make room: wait until only the asking connection is open.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let open = match c
            .client()
            .request(&Request::Stats(StatsRequest {}))
            .unwrap()
        {
            Response::Stats(s) => s.connections_open,
            other => panic!("{other:?}"),
        };
        if open == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "{open} connections stay open");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_a, said) = AsUser::start(60_001, &sock, "halfsent 6");
    assert_eq!(said, "6");
    let (_b, said) = AsUser::start(60_002, &sock, "halfsent 2");
    assert_eq!(said, "2");
    let (_, said) = AsUser::start(60_003, &sock, "version");
    assert_eq!(said, "ok");
    version(&mut c.client());
}
