//! A request's frame decoded and checked against the protocol's bounds
//! (`batch_proto::Request::check`, docs/batchd.md "Limits"), before any handler sees it.
//!
//! A large frame is decoded on a blocking thread, a few at a time: decoding (and dropping) a
//! 15 MiB frame takes 0.1–0.3 s and may allocate several times its size (an id list of 8M
//! numbers), and one client's frame must not stall the runtime's workers, which serve
//! everyone else. A request over a bound is dropped there too, and only its refusal comes back.

use batch_proto::frame::decode;
use batch_proto::{ErrorReply, Request};
use tokio::sync::Semaphore;

/// A payload up to this size is decoded in place: a tool's requests are far smaller, and
/// their decode takes microseconds.
const INLINE_MAX: usize = 64 * 1024;

/// Large frames decoded at once: what they allocate while being decoded is bounded by this
/// many, whatever the number of connections sending them.
static LARGE: Semaphore = Semaphore::const_new(2);

/// What a frame turned out to be.
// One per frame, consumed at once (as `Request` itself, see its definition): no box.
#[allow(clippy::large_enum_variant)]
pub(super) enum Decoded {
    /// A request within every bound.
    Request(Request),
    /// A well-formed request over a bound: answered with this, the connection goes on.
    Refused(ErrorReply),
    /// Not a request: answered with this message, then the connection closes.
    Malformed(String),
}

/// Decodes and checks `payload`; see the module's doc for where.
pub(super) async fn decode_checked(payload: Vec<u8>) -> Decoded {
    if payload.len() <= INLINE_MAX {
        return decode_now(&payload);
    }
    let Ok(_permit) = LARGE.acquire().await else {
        return Decoded::Malformed("batchd is shutting down".into());
    };
    match tokio::task::spawn_blocking(move || decode_now(&payload)).await {
        Ok(d) => d,
        Err(e) => Decoded::Malformed(format!("decoding a request: {e}")),
    }
}

fn decode_now(payload: &[u8]) -> Decoded {
    match decode::<Request>(payload) {
        Ok(r) => match r.check() {
            Ok(()) => Decoded::Request(r),
            // `r` is dropped here, on this thread, however large it is.
            Err(e) => Decoded::Refused(e.reply()),
        },
        Err(e) => Decoded::Malformed(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use batch_proto::{frame, ErrorKind, HoldRequest, ListRequest, MAX_FILTER_IDS};

    fn payload(r: &Request) -> Vec<u8> {
        frame::encode(r).unwrap()[frame::HEADER_LEN..].to_vec()
    }

    #[tokio::test]
    async fn small_and_large_frames_are_checked_alike() {
        let ok = Request::List(ListRequest::default());
        assert!(matches!(
            decode_checked(payload(&ok)).await,
            Decoded::Request(_)
        ));
        for n in [10, MAX_FILTER_IDS + 1] {
            let r = Request::Hold(HoldRequest {
                ids: vec![u64::MAX; n],
            });
            let p = payload(&r);
            assert_eq!(p.len() > INLINE_MAX, n > 10);
            match decode_checked(p).await {
                Decoded::Request(_) => assert_eq!(n, 10),
                Decoded::Refused(e) => {
                    assert_eq!(e.kind, ErrorKind::BadRequest);
                    assert_eq!(e, r.check().unwrap_err().reply());
                }
                Decoded::Malformed(m) => panic!("{m}"),
            }
        }
        let mut big = vec![b' '; INLINE_MAX + 1];
        big.extend_from_slice(b"{\"Nope\":{}}");
        assert!(matches!(decode_checked(big).await, Decoded::Malformed(_)));
    }
}
