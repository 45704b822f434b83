use super::*;
use crate::shape::{MoldConfig, SpeedupModel, Step};

const NOW: u64 = 1_800_000_000_000;

fn spec() -> JobSpec {
    JobSpec::new("#!/bin/sh\ntrue\n", "/tmp", 1, 60_000)
}

fn refused(s: &JobSpec, max_time: Option<u64>) -> String {
    s.check(NOW, max_time)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

#[test]
fn absurd_numbers_are_refused_with_one_line() {
    let mut s = spec();
    s.shape = JobShape::Rigid {
        nodes: 1,
        time_limit: u64::MAX,
    };
    let e = refused(&s, None);
    assert!(
        e.starts_with("invalid time limit: ") && e.contains("365-00:00:00"),
        "{e}"
    );
    let mut s = spec();
    // u64::MAX ms: the year 584,556,019.
    s.begin = Some(u64::MAX);
    let e = refused(&s, None);
    assert!(
        e.starts_with("invalid begin time: ") && e.contains("365 days"),
        "{e}"
    );
    let mut s = spec();
    s.priority = i64::MIN;
    assert_eq!(
        refused(&s, None),
        "invalid priority: -9223372036854775808 is outside -1000000..=1000000"
    );
    s.priority = i64::MAX;
    assert!(refused(&s, None).starts_with("invalid priority"));
    // An evolving job whose steps sum past u64::MAX, and a moldable one past the bound.
    s = spec();
    s.shape = JobShape::Evolving {
        steps: vec![Step::new(u64::MAX, 1), Step::new(u64::MAX, 2)],
    };
    assert!(refused(&s, None).starts_with("invalid time limit"));
    s.shape = JobShape::Moldable {
        configs: vec![MoldConfig {
            nodes: 1,
            walltime: MAX_TIME_LIMIT + 1,
        }],
        model: None,
        weight: None,
    };
    let e = refused(&s, None);
    assert!(
        e.starts_with("invalid time limit") && !e.contains('\n'),
        "{e}"
    );
}

#[test]
fn the_bounds_themselves_are_accepted() {
    let mut s = spec();
    s.shape = JobShape::Rigid {
        nodes: 1,
        time_limit: MAX_TIME_LIMIT,
    };
    s.begin = Some(NOW + MAX_BEGIN_AHEAD);
    s.priority = MIN_PRIORITY;
    s.check(NOW, None).unwrap();
    s.priority = MAX_PRIORITY;
    s.check(NOW, None).unwrap();
    // A past begin is fine: eligible at once.
    s.begin = Some(1);
    s.check(NOW, None).unwrap();
    s.begin = Some(NOW + MAX_BEGIN_AHEAD + 1);
    assert!(s.check(NOW, None).is_err());
}

#[test]
fn the_pools_max_time_bounds_and_fills_unlimited() {
    let hour = 3_600_000;
    let mut s = spec();
    s.shape = JobShape::Rigid {
        nodes: 1,
        time_limit: 2 * hour,
    };
    assert_eq!(
        refused(&s, Some(hour)),
        "invalid time limit: 02:00:00 is longer than the pool's max_time, 01:00:00"
    );
    s.check(NOW, Some(2 * hour)).unwrap();
    s.shape = JobShape::Rigid {
        nodes: 1,
        time_limit: TIME_UNLIMITED,
    };
    // Accepted before resolution (what a tool sends), resolved by the daemon.
    s.check(NOW, Some(hour)).unwrap();
    let mut a = s.clone();
    a.resolve_unlimited(Some(hour));
    assert_eq!(a.shape.time_limit(), hour);
    s.resolve_unlimited(None);
    assert_eq!(s.shape.time_limit(), MAX_TIME_LIMIT);
}

/// Each forged or oversized field is refused with one line naming it; the same spec at
/// the bound is accepted.
#[test]
fn every_field_has_a_bound() {
    let refused = |f: &dyn Fn(&mut JobSpec)| {
        let mut s = spec();
        f(&mut s);
        let e = s.validate_submission().unwrap_err().to_string();
        assert!(!e.contains('\n'), "{e}");
        e
    };
    let accepted = |f: &dyn Fn(&mut JobSpec)| {
        let mut s = spec();
        f(&mut s);
        s.validate_submission().unwrap();
    };
    let task = crate::array::ArraySpec {
        indices: vec![99],
        throttle: None,
    }
    .task(7, 99);
    assert!(refused(&|s| s.array_task = Some(Box::new(task))).starts_with("invalid array_task"));
    assert!(refused(&|s| s.requeue_by_hand = Some(true)).starts_with("invalid requeue_by_hand"));
    assert!(refused(&|s| s.preempted = Some("x".into())).starts_with("invalid preempted"));
    assert!(refused(&|s| s.shape = JobShape::Session {
        pools: vec![],
        time_limit: 0
    })
    .contains("subscribe"));
    assert!(
        refused(&|s| s.array = Some(Box::new(crate::array::ArraySpec {
            indices: vec![5, 3],
            throttle: None
        })))
        .starts_with("invalid array: indices must ascend")
    );
    accepted(&|s| s.name = "n".repeat(MAX_NAME));
    assert_eq!(
        refused(&|s| s.name = "n".repeat(MAX_NAME + 1)),
        "invalid name: 1025 bytes long; at most 1024 are accepted"
    );
    accepted(&|s| s.args = vec!["a".into(); MAX_ARGS]);
    assert!(refused(&|s| s.args = vec!["a".into(); MAX_ARGS + 1]).contains("4097 arguments"));
    assert!(refused(&|s| s.args = vec!["a".repeat(MAX_ARG_LEN + 1)]).contains("argument of"));
    let var = |i: usize| (format!("V{i}"), String::new());
    accepted(&|s| s.environment = (0..MAX_ENV_VARS).map(var).collect());
    assert!(
        refused(&|s| s.environment = (0..=MAX_ENV_VARS).map(var).collect())
            .contains("4097 variables")
    );
    // Each string within its bound, all together over MAX_EXEC_BYTES.
    assert!(refused(&|s| s.args = vec!["a".repeat(MAX_ARG_LEN); 9])
        .contains("arguments and environment"));
    assert!(refused(&|s| s.work_dir = format!("/{}", "d".repeat(MAX_PATH))).contains("work_dir"));
    assert!(refused(&|s| s.stdout = Some("o".repeat(MAX_PATH + 1))).contains("stdout"));
    assert!(refused(&|s| s.account = Some("a".repeat(MAX_WORD + 1))).contains("account"));
    assert!(refused(&|s| s.pool = Some("p".repeat(MAX_WORD + 1))).contains("pool"));
    assert!(
        refused(&|s| s.dependencies = vec![Dependency::Singleton; MAX_DEPENDENCIES + 1])
            .starts_with("invalid dependency")
    );
    accepted(&|s| {
        s.shape = JobShape::Evolving {
            steps: vec![Step::new(1000, 1); MAX_STEPS],
        }
    });
    assert!(refused(&|s| s.shape = JobShape::Evolving {
        steps: vec![Step::new(1000, 1); MAX_STEPS + 1]
    })
    .contains(&format!("at most {MAX_STEPS}")));
    let model = |min_nodes, max_nodes| MoldModel {
        model: SpeedupModel::Linear { work: 1000 },
        min_nodes,
        max_nodes,
    };
    let wide = MAX_MOLDABLE_CHOICES as u32;
    accepted(&|s| {
        s.shape = JobShape::Moldable {
            configs: vec![],
            model: Some(model(1, wide)),
            weight: None,
        }
    });
    assert!(refused(&|s| s.shape = JobShape::Moldable {
        configs: vec![MoldConfig {
            nodes: 1,
            walltime: 5
        }],
        model: Some(model(1, wide)),
        weight: None,
    })
    .contains("node counts"));
    assert!(refused(&|s| s.shape = JobShape::Moldable {
        configs: vec![],
        model: Some(model(2, 65_537)),
        weight: None,
    })
    .contains("node counts"));
}

/// A session's counts summed without wrapping: {a: u32::MAX, b: 2} is refused, never seen
/// as 1 node.
#[test]
fn session_node_counts_never_wrap() {
    let pools = |a: u32, b: u32| JobShape::Session {
        pools: vec![
            PoolNodes {
                pool: "a".into(),
                nodes: a,
            },
            PoolNodes {
                pool: "b".into(),
                nodes: b,
            },
        ],
        time_limit: 60_000,
    };
    let e = pools(u32::MAX, 2).validate().unwrap_err().to_string();
    assert_eq!(
        e,
        "invalid request: a request of 4294967297 nodes in all; at most 4294967295 are accepted"
    );
    assert_eq!(pools(u32::MAX, 2).max_nodes(), u32::MAX);
    pools(u32::MAX - 2, 2).validate().unwrap();
    assert_eq!(pools(3, 2).max_nodes(), 5);
}

#[test]
fn limits_print_like_slurm() {
    assert_eq!(format_limit(90_000), "00:01:30");
    assert_eq!(format_limit(MAX_TIME_LIMIT), "365-00:00:00");
    assert_eq!(format_limit(1), "00:00:01");
}
