//! The protocol's bounds on what one request may carry (batch-proto's `Request::check`), at
//! the daemon: requests sent raw, as a hostile client would, so that the tools' own check
//! before sending cannot stand in for batchd's. Small cases that cross a bound, not the
//! millions of ids the bounds are there for (scripts/hostile-clients.py `requests` measures
//! those).

use super::*;
use batch_proto::{
    ActionReport, ArraySpec, ArrayTask, HoldRequest, JobShape, MoldModel, SubscribeRequest,
    VersionRequest, MAX_FILTER_IDS, MAX_NAME, MAX_STEPS,
};
use batch_proto::{SpeedupModel, Step};

/// A raw connection that has exchanged hellos.
fn greeted(sock: &Path) -> UnixStream {
    let mut s = UnixStream::connect(sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write_frame(&mut s, &Request::Hello(Hello::current())).unwrap();
    let r: Response = read_frame(&mut s).unwrap();
    assert!(matches!(r, Response::Hello(_)), "{r:?}");
    s
}

/// Sends `req` raw and reads the answer.
fn ask(s: &mut UnixStream, req: &Request) -> Response {
    write_frame(s, req).unwrap();
    read_frame(s).unwrap()
}

/// The one-line error `req` gets, of `kind`.
fn refused(s: &mut UnixStream, req: &Request, kind: ErrorKind) -> String {
    match ask(s, req) {
        Response::Error(e) => {
            assert_eq!(e.kind, kind, "{e:?}");
            assert!(!e.message.contains('\n'), "{e:?}");
            e.message
        }
        other => panic!("accepted: {other:?}"),
    }
}

fn acted(r: Response) -> ActionReport {
    match r {
        Response::Acted(a) => a,
        other => panic!("{other:?}"),
    }
}

fn all_jobs(c: &Cluster) -> Vec<JobInfo> {
    c.client()
        .jobs(&Request::List(ListRequest {
            include_finished: true,
            ..Default::default()
        }))
        .unwrap()
}

/// A filter one id over its bound is refused with one line naming the bound, the connection
/// goes on, and another client's listings answer meanwhile.
#[test]
fn a_filter_over_its_bound_is_refused_and_others_are_served() {
    let c = Cluster::new();
    let mut held = c.spec("true");
    held.hold = true;
    let id = c.submit(held);
    let sock = c.config.socket.clone().unwrap();
    let over = JobFilter {
        ids: (1..=MAX_FILTER_IDS as u64 + 1).collect(),
        ..Default::default()
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let lister = s.spawn(|| {
            let mut n = 0;
            // Bounded, so that a failure below (which never sets `stop`) ends the test.
            let deadline = Instant::now() + Duration::from_secs(30);
            while (!stop.load(std::sync::atomic::Ordering::Relaxed) || n == 0)
                && Instant::now() < deadline
            {
                let began = Instant::now();
                let jobs = c
                    .client()
                    .jobs(&Request::List(ListRequest::default()))
                    .unwrap();
                assert_eq!(jobs.len(), 1);
                assert!(
                    began.elapsed() < Duration::from_secs(5),
                    "{:?}",
                    began.elapsed()
                );
                n += 1;
            }
            n
        });
        let mut raw = greeted(&sock);
        for req in [
            Request::List(ListRequest {
                filter: over.clone(),
                ..Default::default()
            }),
            Request::Cancel(CancelRequest {
                filter: over.clone(),
                signal: None,
                scope: Default::default(),
            }),
            Request::Hold(HoldRequest {
                ids: over.ids.clone(),
            }),
        ] {
            let m = refused(&mut raw, &req, ErrorKind::BadRequest);
            assert!(
                m.starts_with("too many job ids")
                    && m.contains(&format!("at most {MAX_FILTER_IDS} are accepted")),
                "{m}"
            );
        }
        // The connection is still good.
        assert!(matches!(
            ask(&mut raw, &Request::Version(VersionRequest {})),
            Response::Version(_)
        ));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(lister.join().unwrap() >= 1);
    });
    // Nothing was cancelled or held by the refused requests.
    let j = c.show(id);
    assert_eq!((j.state, j.held), (JobState::Pending, true));
}

/// An id named several times is answered once, for a cancel, a hold and a requeue alike.
#[test]
fn a_repeated_id_is_answered_once() {
    let c = Cluster::new();
    let mut later = c.spec("true");
    // Pending, not held: far from its begin time.
    later.begin = Some(batchd::launch::now_ms() + 3_600_000);
    let a = c.submit(later.clone());
    let b = c.submit(later);
    let unknown = 999_999;
    let mut raw = greeted(c.config.socket.as_ref().unwrap());
    let hold = acted(ask(
        &mut raw,
        &Request::Hold(HoldRequest {
            ids: vec![a, a, unknown, a, unknown],
        }),
    ));
    assert_eq!(hold.done, vec![a]);
    assert_eq!(
        hold.failed.iter().map(|f| f.id).collect::<Vec<_>>(),
        vec![unknown]
    );
    let requeue = acted(ask(
        &mut raw,
        &Request::Requeue(batch_proto::RequeueRequest {
            ids: vec![b, b, b],
            hold: false,
        }),
    ));
    assert!(requeue.done.is_empty());
    assert_eq!(requeue.failed.len(), 1, "{requeue:?}");
    let cancel = acted(ask(
        &mut raw,
        &Request::Cancel(CancelRequest {
            filter: JobFilter {
                ids: vec![b, unknown, b, unknown, b],
                tasks: vec![(unknown, 1), (unknown, 1)],
                ..Default::default()
            },
            signal: None,
            scope: Default::default(),
        }),
    ));
    assert_eq!(cancel.done, vec![b]);
    let failed: Vec<&str> = cancel.failed.iter().map(|f| f.message.as_str()).collect();
    assert_eq!(
        failed,
        vec![
            "Invalid job id specified: 999999",
            "Invalid job id specified: 999999_1"
        ]
    );
    assert_eq!(c.show(b).state, JobState::Cancelled);
}

/// Each forged or oversized submission is refused with one line, and nothing is stored: an
/// array task joining an existing array, repeated, unsorted or too many array indices, an
/// oversized name, too many arguments or variables, a profile of too many steps, a moldable
/// range wider than the bound.
#[test]
fn forged_submissions_are_refused_and_nothing_is_stored() {
    let c = Cluster::new();
    let mut array = c.spec("sleep 30");
    array.hold = true;
    array.array = Some(Box::new(ArraySpec::parse("0-2").unwrap()));
    let first = c.submit(array);
    let before = all_jobs(&c);
    assert_eq!(before.len(), 3);
    let mut raw = greeted(c.config.socket.as_ref().unwrap());
    let forged = |f: &dyn Fn(&mut JobSpec)| {
        let mut s = c.spec("true");
        f(&mut s);
        Request::Submit(SubmitRequest {
            spec: s,
            test_only: false,
        })
    };
    let indices = |indices: Vec<u64>| {
        Some(Box::new(ArraySpec {
            indices,
            throttle: None,
        }))
    };
    let cases: Vec<(&str, Request)> = vec![
        (
            "invalid array_task",
            forged(&|s| {
                s.array_task = Some(Box::new(ArrayTask {
                    array_id: first,
                    index: 99,
                    throttle: None,
                    count: 3,
                    min: 0,
                    max: 2,
                    step: 1,
                }))
            }),
        ),
        (
            "invalid array: indices must ascend",
            forged(&|s| s.array = indices(vec![5, 3])),
        ),
        (
            "invalid array: indices must ascend",
            forged(&|s| s.array = indices(vec![4, 4])),
        ),
        (
            "invalid array: an array of 100000 tasks",
            forged(&|s| s.array = indices(vec![1; 100_000])),
        ),
        (
            "invalid name: 1025 bytes",
            forged(&|s| s.name = "n".repeat(MAX_NAME + 1)),
        ),
        (
            "invalid args: 100000 arguments",
            forged(&|s| s.args = vec!["a".into(); 100_000]),
        ),
        (
            "invalid environment: 100000 variables",
            forged(&|s| {
                s.environment = (0..100_000)
                    .map(|i| (format!("V{i}"), "x".into()))
                    .collect()
            }),
        ),
        (
            "invalid request: an evolving profile of",
            forged(&|s| {
                s.shape = JobShape::Evolving {
                    steps: vec![Step::new(1000, 1); MAX_STEPS + 1],
                }
            }),
        ),
        (
            "invalid request: moldable node range 2-65537 offers more than 4096 node counts",
            forged(&|s| {
                s.shape = JobShape::Moldable {
                    configs: vec![],
                    model: Some(MoldModel {
                        model: SpeedupModel::Amdahl {
                            work: 600_000,
                            serial: 0.1,
                        },
                        min_nodes: 2,
                        max_nodes: 65_537,
                    }),
                    weight: None,
                }
            }),
        ),
    ];
    for (want, req) in &cases {
        let m = refused(&mut raw, req, ErrorKind::InvalidSpec);
        assert!(m.starts_with(want), "{want}: {m}");
    }
    assert_eq!(all_jobs(&c), before);
    // The array's owner still cancels it whole.
    let cancel = acted(c.cancel(vec![first], None));
    assert_eq!(cancel.done.len(), 3, "{cancel:?}");
}

/// A moldable range beyond the largest pool is stored clipped to it.
#[test]
fn a_moldable_range_is_clipped_to_the_largest_pool() {
    let c = Cluster::new();
    let mut s = c.spec("true");
    s.hold = true;
    s.shape = JobShape::Moldable {
        configs: vec![],
        model: Some(MoldModel {
            model: SpeedupModel::Linear { work: 60_000 },
            min_nodes: 2,
            max_nodes: 1000,
        }),
        weight: None,
    };
    let id = c.submit(s);
    match c.show(id).shape {
        JobShape::Moldable { model: Some(m), .. } => {
            assert_eq!((m.min_nodes, m.max_nodes), (2, 8))
        }
        other => panic!("{other:?}"),
    }
}

/// A launcher session's request whose node counts sum past u32 is refused, never shown as a
/// wrapped count; a request over a bound on a session is refused and the session goes on.
#[test]
fn a_session_request_whose_counts_overflow_is_refused() {
    let c = cluster(|config| {
        config.pools = vec![pool("a", 4), pool("b", 4)];
        // The policy that plans sessions' jobs (a rigid one refuses a request-less one).
        config.policy.name = "coorm".into();
    });
    let mut raw = greeted(c.config.socket.as_ref().unwrap());
    let job = match ask(&mut raw, &Request::Subscribe(SubscribeRequest::default())) {
        Response::Subscribed(s) => s.job,
        other => panic!("{other:?}"),
    };
    // Answers, skipping what the session is pushed.
    let answer = |raw: &mut UnixStream, req: &Request| {
        write_frame(raw, req).unwrap();
        loop {
            match read_frame::<_, Response>(raw).unwrap() {
                Response::ChangeNotify(_) => {}
                other => return other,
            }
        }
    };
    let nodes = |a, b| {
        Request::Request(batch_proto::SessionRequest {
            pools: vec![
                batch_proto::PoolNodes {
                    pool: "a".into(),
                    nodes: a,
                },
                batch_proto::PoolNodes {
                    pool: "b".into(),
                    nodes: b,
                },
            ],
            duration_ms: 60_000,
        })
    };
    match answer(&mut raw, &nodes(u32::MAX, 2)) {
        Response::Error(e) => {
            assert_eq!(e.kind, ErrorKind::InvalidSpec);
            assert_eq!(
                e.message,
                "invalid request: a request of 4294967297 nodes in all; at most 4294967295 are accepted"
            );
        }
        other => panic!("{other:?}"),
    }
    let over = Request::List(ListRequest {
        filter: JobFilter {
            tasks: vec![(1, 1); MAX_FILTER_IDS + 1],
            ..Default::default()
        },
        ..Default::default()
    });
    match answer(&mut raw, &over) {
        Response::Error(e) => assert_eq!(e.kind, ErrorKind::BadRequest, "{e:?}"),
        other => panic!("{other:?}"),
    }
    match answer(&mut raw, &nodes(2, 2)) {
        Response::Requested { .. } => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(c.show(job).nodes, 4);
}
