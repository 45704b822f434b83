//! Numbers out of their documented ranges (batch-proto's `JobSpec::check`), sent raw through
//! the protocol: refused with one line, for a submission and for an update alike; and a pool's
//! `max_time`, which bounds the time limit and is what a time limit of UNLIMITED becomes.

use batch_proto::{ErrorKind, JobShape, Request, SubmitRequest, UpdateRequest, TIME_UNLIMITED};
use batchd::config::MaxTime;

use super::Cluster;

fn refusal(c: &Cluster, req: &Request) -> String {
    match c.client().request(req) {
        Ok(r) => panic!("accepted: {r:?}"),
        Err(batch_proto::ClientError::Daemon(e)) => {
            assert_eq!(e.kind, ErrorKind::InvalidSpec, "{e:?}");
            assert!(!e.message.contains('\n'), "{e:?}");
            e.message
        }
        Err(e) => panic!("{e}"),
    }
}

fn submit(spec: batch_proto::JobSpec) -> Request {
    Request::Submit(SubmitRequest {
        spec,
        test_only: false,
    })
}

#[test]
fn absurd_time_limit_begin_and_priority_are_refused_on_submit_and_update() {
    let c = Cluster::new();
    let mut s = c.spec("true");
    s.shape = JobShape::Rigid {
        nodes: 1,
        time_limit: u64::MAX,
    };
    assert_eq!(
        refusal(&c, &submit(s)),
        "invalid time limit: 213503982334-14:25:52 is longer than the longest allowed, 365-00:00:00"
    );
    let mut s = c.spec("true");
    // u64::MAX ms since the epoch: the year 584,556,019.
    s.begin = Some(u64::MAX);
    let m = refusal(&c, &submit(s));
    assert!(
        m.starts_with("invalid begin time: ") && m.ends_with("at most 365 days ahead are accepted"),
        "{m}"
    );
    let mut s = c.spec("true");
    s.priority = i64::MIN;
    assert_eq!(
        refusal(&c, &submit(s)),
        "invalid priority: -9223372036854775808 is outside -1000000..=1000000"
    );

    let mut held = c.spec("true");
    held.hold = true;
    let id = c.submit(held);
    let update = |f: &dyn Fn(&mut UpdateRequest)| {
        let mut u = UpdateRequest {
            id,
            ..Default::default()
        };
        f(&mut u);
        Request::Update(u)
    };
    assert!(
        refusal(&c, &update(&|u| u.time_limit = Some(u64::MAX))).starts_with("invalid time limit")
    );
    assert!(refusal(&c, &update(&|u| u.begin = Some(u64::MAX))).starts_with("invalid begin time"));
    assert!(refusal(&c, &update(&|u| u.priority = Some(i64::MIN))).starts_with("invalid priority"));
    // Nothing of the refused updates stuck.
    let j = c.show(id);
    assert_eq!((j.time_limit, j.begin, j.priority), (60_000, None, 0));
}

#[test]
fn a_pools_max_time_bounds_time_limits_and_unlimited_means_it() {
    let mut c = Cluster::new();
    c.stop();
    c.config.pools[0].max_time = MaxTime::Minutes(60);
    c.boot();
    let mut s = c.spec("true");
    s.hold = true;
    s.shape = JobShape::Rigid {
        nodes: 1,
        time_limit: 2 * 3_600_000,
    };
    assert_eq!(
        refusal(&c, &submit(s.clone())),
        "invalid time limit: 02:00:00 is longer than the pool's max_time, 01:00:00"
    );
    s.shape = JobShape::Rigid {
        nodes: 1,
        time_limit: TIME_UNLIMITED,
    };
    let id = c.submit(s);
    assert_eq!(c.show(id).time_limit, 3_600_000);
    // An update to UNLIMITED is the same request.
    c.client()
        .request(&Request::Update(UpdateRequest {
            id,
            time_limit: Some(60_000),
            ..Default::default()
        }))
        .unwrap();
    assert_eq!(c.show(id).time_limit, 60_000);
    c.client()
        .request(&Request::Update(UpdateRequest {
            id,
            time_limit: Some(TIME_UNLIMITED),
            ..Default::default()
        }))
        .unwrap();
    assert_eq!(c.show(id).time_limit, 3_600_000);
}

#[test]
fn unlimited_on_a_pool_without_max_time_is_the_longest_allowed() {
    let c = Cluster::new();
    let mut s = c.spec("true");
    s.hold = true;
    s.shape = JobShape::Rigid {
        nodes: 1,
        time_limit: TIME_UNLIMITED,
    };
    let id = c.submit(s);
    assert_eq!(c.show(id).time_limit, batch_proto::MAX_TIME_LIMIT);
}

/// scontrol 22.05 updates a pending job's Partition and Dependency: a new pool that exists
/// (its nodes size `-n/-c` anew), an unknown one refused as at submission, a dependency on a
/// job that exists, and an empty list that clears them.
#[test]
fn a_pending_jobs_pool_and_dependencies_can_be_updated() {
    let c = super::cluster(|cfg| cfg.pools.push(super::pool("big", 4)));
    let mut s = c.spec("true");
    s.hold = true;
    let first = c.submit(s.clone());
    let id = c.submit(s);
    let update = |f: &dyn Fn(&mut UpdateRequest)| {
        let mut u = UpdateRequest {
            id,
            ..Default::default()
        };
        f(&mut u);
        Request::Update(u)
    };
    c.client()
        .request(&update(&|u| {
            u.pool = Some("big".into());
            u.dependencies = Some(vec![batch_proto::Dependency::On {
                kind: batch_proto::DepKind::AfterOk,
                job: first,
            }]);
        }))
        .unwrap();
    let j = c.show(id);
    assert_eq!(j.pool.as_deref(), Some("big"));
    assert_eq!(j.dependencies.len(), 1);
    assert!(refusal(&c, &update(&|u| u.pool = Some("nosuch".into()))).starts_with("invalid pool"));
    assert!(refusal(
        &c,
        &update(
            &|u| u.dependencies = Some(batch_proto::Dependency::parse_list("afterok:999").unwrap())
        )
    )
    .contains("does not exist"));
    c.client()
        .request(&update(&|u| u.dependencies = Some(vec![])))
        .unwrap();
    let j = c.show(id);
    assert_eq!((j.pool.as_deref(), j.dependencies.len()), (Some("big"), 0));
}
