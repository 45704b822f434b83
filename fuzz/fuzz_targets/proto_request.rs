//! The bytes a client sends batchd: one frame (4-byte length and JSON payload) decoded as a
//! `Request`, then the protocol's validation of what a submission or an update carries. A
//! request or an error, never a panic; nothing allocated beyond what arrived.
#![no_main]

use std::io::Cursor;

use batch_proto::frame::{decode, read_frame};
use batch_proto::{FrameError, Request};
use libfuzzer_sys::fuzz_target;

/// What batchd does with a submission before anything else: resolve UNLIMITED, then the one
/// check of its numbers (the bounds must hold for whatever "now" and pool `max_time`).
fn check(req: &Request) {
    if let Request::Submit(s) = req {
        for (now, max_time) in [(0, None), (1_800_000_000_000, Some(3_600_000)), (u64::MAX, Some(1))] {
            let mut spec = s.spec.clone();
            spec.resolve_unlimited(max_time);
            if spec.check(now, max_time).is_ok() {
                assert!(spec.shape.time_limit() <= batch_proto::MAX_TIME_LIMIT);
                assert!((batch_proto::MIN_PRIORITY..=batch_proto::MAX_PRIORITY).contains(&spec.priority));
            }
        }
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
