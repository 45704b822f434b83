//! The bytes a client sends batchd: one frame (4-byte length and JSON payload) decoded as a
//! `Request`, then the protocol's validation of every request (`Request::check`, what batchd
//! runs on each request it decodes) and of what a submission or an update carries. A request
//! or an error, never a panic; nothing allocated beyond what arrived; an accepted request
//! within every documented bound.
#![no_main]

use std::io::Cursor;

use batch_proto::check::{MAX_FILTER_IDS, MAX_FILTER_WORDS, MAX_HOSTLIST};
use batch_proto::frame::{decode, read_frame};
use batch_proto::job::{
    MAX_ARGS, MAX_DEPENDENCIES, MAX_ENV_VARS, MAX_NAME, MAX_PATH, MAX_STEPS, MAX_WORD,
};
use batch_proto::{
    array::MAX_ARRAY_INDEX, array::MAX_ARRAY_SIZE, FilterKey, FrameError, JobFilter, JobShape,
    JobSpec, JobState, Request, MAX_COMPONENTS, MAX_MOLDABLE_CHOICES,
};
use libfuzzer_sys::fuzz_target;

/// The bounds `JobFilter::check` documents, and the prepared filter usable.
fn filter_within_bounds(f: &JobFilter) {
    assert!(f.ids.len() + f.tasks.len() <= MAX_FILTER_IDS);
    for list in [&f.users, &f.names, &f.pools] {
        assert!(list.len() <= MAX_FILTER_WORDS);
    }
    assert!(f.states.len() <= MAX_FILTER_WORDS);
    assert!(f.users.iter().chain(&f.pools).all(|s| s.len() <= MAX_WORD));
    assert!(f.names.iter().all(|s| s.len() <= MAX_NAME));
    let p = f.prepare();
    assert!(p.ids().windows(2).all(|w| w[0] < w[1]));
    assert!(p.tasks().windows(2).all(|w| w[0] < w[1]));
    let key = FilterKey {
        id: f.ids.first().copied().unwrap_or(1),
        uid: 1000,
        user: "alice",
        name: "j",
        state: JobState::Pending,
        pool: Some("debug"),
        array: None,
    };
    assert_eq!(p.selects(key), f.selects(key));
}

/// The bounds `JobSpec::validate_submission` documents.
fn spec_within_bounds(spec: &JobSpec) {
    assert!(spec.set_by_batchd().is_none());
    assert!(spec.array_task.is_none() && spec.requeue_by_hand.is_none());
    assert!(spec.name.len() <= MAX_NAME && !spec.name.is_empty());
    assert!(spec.work_dir.len() <= MAX_PATH);
    assert!(spec.args.len() <= MAX_ARGS && spec.environment.len() <= MAX_ENV_VARS);
    assert!(spec.dependencies.len() <= MAX_DEPENDENCIES);
    if let Some(a) = &spec.array {
        assert!(!a.indices.is_empty() && a.indices.len() <= MAX_ARRAY_SIZE);
        assert!(a.indices.windows(2).all(|w| w[0] < w[1]));
        assert!(a.indices.iter().all(|i| *i <= MAX_ARRAY_INDEX));
        let (count, min, max, step) = a.span();
        assert!(count as usize == a.indices.len() && min <= max);
        assert!((1..=MAX_ARRAY_INDEX.max(1)).contains(&step));
    }
    match &spec.shape {
        JobShape::Evolving { steps } => assert!(!steps.is_empty() && steps.len() <= MAX_STEPS),
        JobShape::Moldable { configs, model, .. } => {
            let width = model.map_or(0, |m| m.width());
            assert!(configs.len() as u64 + width <= MAX_MOLDABLE_CHOICES);
        }
        JobShape::CoAllocated { components, .. } => {
            assert!(components.len() <= MAX_COMPONENTS);
            let total: u64 = components.iter().map(|&n| u64::from(n)).sum();
            assert!(total <= u64::from(u32::MAX));
        }
        JobShape::Session { .. } => panic!("a session's shape was accepted in a submission"),
        JobShape::Rigid { .. } => {}
    }
}

/// What batchd does with a request: the one check of its bounds, then, for a submission,
/// UNLIMITED resolved and the check of its numbers (the bounds must hold for whatever "now"
/// and pool `max_time`).
fn check(req: &Request) {
    let Ok(()) = req.check() else {
        let e = req.check().unwrap_err();
        assert!(!e.to_string().contains('\n'), "{e}");
        return;
    };
    match req {
        Request::List(r) => filter_within_bounds(&r.filter),
        Request::Cancel(r) => filter_within_bounds(&r.filter),
        Request::Acct(r) => filter_within_bounds(&r.filter),
        Request::Hold(r) => assert!(r.ids.len() <= MAX_FILTER_IDS),
        Request::Unhold(r) => assert!(r.ids.len() <= MAX_FILTER_IDS),
        Request::Requeue(r) => assert!(r.ids.len() <= MAX_FILTER_IDS),
        Request::ReleaseNodes(r) => assert!(r.nodes.len() <= MAX_HOSTLIST),
        Request::Request(r) => {
            assert!(r.pools.len() <= MAX_COMPONENTS);
            let total: u64 = r.pools.iter().map(|p| u64::from(p.nodes)).sum();
            assert!(total <= u64::from(u32::MAX));
        }
        Request::Submit(s) => {
            spec_within_bounds(&s.spec);
            for (now, max_time) in [
                (0, None),
                (1_800_000_000_000, Some(3_600_000)),
                (u64::MAX, Some(1)),
            ] {
                let mut spec = s.spec.clone();
                spec.resolve_unlimited(max_time);
                if spec.check(now, max_time).is_ok() {
                    assert!(spec.shape.time_limit() <= batch_proto::MAX_TIME_LIMIT);
                    assert!((batch_proto::MIN_PRIORITY..=batch_proto::MAX_PRIORITY)
                        .contains(&spec.priority));
                }
            }
        }
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    // As framed on the socket…
    let framed: Result<Request, FrameError> = read_frame(&mut Cursor::new(data));
    if let Ok(req) = &framed {
        check(req);
    }
    // …and the payload alone, so the fuzzer need not find a matching length first.
    if let Ok(req) = decode::<Request>(data) {
        check(&req);
    }
});
