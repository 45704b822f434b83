//! The bytes a client sends batchd: one frame (4-byte length and JSON payload) decoded as a
//! `Request`, then the protocol's validation of what a submission or an update carries. A
//! request or an error, never a panic; nothing allocated beyond what arrived.
#![no_main]

use std::io::Cursor;

use batch_proto::frame::{decode, read_frame};
use batch_proto::{FrameError, Request};
use libfuzzer_sys::fuzz_target;

fn check(req: &Request) {
    if let Request::Submit(s) = req {
        let _ = s.spec.validate();
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
