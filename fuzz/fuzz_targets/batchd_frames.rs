//! batchd's own reading of requests, as `Link::next_request` does it (batchd/src/server/mod.rs):
//! the first byte alone, then `batch_proto::frame::nonblocking::read_payload_after` for the rest
//! of the frame, the payload decoded as a `Request`, an error logged through batchd's `quoted`;
//! frame after frame until the stream ends or a frame is refused. The bytes come in arbitrary
//! chunks, with the reader not ready in between, from a mock `AsyncRead`.
//!
//! Input: one byte N, then N chunk sizes (1–255 bytes; 0: not ready this time, used in turn
//! and over again), then the bytes on the socket.
//!
//! What must hold: no panic; a frame read whole is exactly the bytes its header announced, at
//! most `MAX_FRAME`, in a buffer at most twice its size (or 8 KiB); a header announcing more
//! is refused before anything else is read; a stream ending inside a frame is reported with the
//! bytes that did come; what batchd would log of an error is one bounded line.
#![no_main]

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use batch_proto::frame::nonblocking::read_payload_after;
use batch_proto::frame::{decode, FrameError, HEADER_LEN, MAX_FRAME};
use batch_proto::Request;
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};

// batchd's log quoting, compiled from its source (it needs nothing but std), as the config
// target does with batchd's config module.
#[path = "../../batchd/src/logging.rs"]
#[allow(dead_code)]
mod logging;

/// The socket: `data` handed out in chunks of the sizes in `cuts`, in turn.
struct Chunked<'a> {
    data: &'a [u8],
    cuts: &'a [u8],
    turn: usize,
    /// Bytes handed out so far.
    pos: usize,
    /// The last call was not ready: this one is (a run of zeros cannot stall the reader).
    waited: bool,
}

impl AsyncRead for Chunked<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let cut = match self.cuts {
            [] => 4096,
            cuts => usize::from(cuts[self.turn % cuts.len()]),
        };
        self.turn += 1;
        if cut == 0 && !self.waited {
            self.waited = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.waited = false;
        let n = cut.max(1).min(self.data.len() - self.pos).min(buf.remaining());
        let at = self.pos;
        buf.put_slice(&self.data[at..at + n]);
        self.pos += n;
        Poll::Ready(Ok(()))
    }
}

/// Polls `f` to its end: the mock is never pending for long (it wakes itself at once).
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// What batchd logs of an error: one line, bounded however large the error.
fn check_logged(e: &str) {
    let q = logging::quoted(e);
    assert!(!q.contains('\n'), "{q}");
    assert!(q.len() <= logging::QUOTE_MAX + 64, "{}", q.len());
}

fuzz_target!(|input: &[u8]| {
    let Some((&n, rest)) = input.split_first() else {
        return;
    };
    let n = usize::from(n).min(rest.len());
    let (cuts, data) = rest.split_at(n);
    let mut r = Chunked {
        data,
        cuts,
        turn: 0,
        pos: 0,
        waited: false,
    };
    block_on(async {
        loop {
            let start = r.pos;
            let mut first = [0u8; 1];
            match r.read(&mut first).await {
                Ok(0) => {
                    assert_eq!(start, data.len());
                    return;
                }
                Ok(_) => {}
                Err(e) => panic!("the mock never fails: {e}"),
            }
            let have = data.len() - start;
            let announced = (have >= HEADER_LEN).then(|| {
                let h: [u8; HEADER_LEN] = data[start..start + HEADER_LEN].try_into().unwrap();
                u32::from_be_bytes(h) as usize
            });
            match read_payload_after(&mut r, &first).await {
                Ok(p) => {
                    let len = announced.expect("a whole frame has a whole header");
                    assert!(len <= MAX_FRAME);
                    assert_eq!(p, data[start + HEADER_LEN..start + HEADER_LEN + len]);
                    assert!(p.capacity() <= (2 * p.len()).max(8 * 1024), "{}", p.capacity());
                    assert_eq!(r.pos, start + HEADER_LEN + len, "read past its frame");
                    if let Err(e) = decode::<Request>(&p) {
                        check_logged(&e.to_string());
                    }
                }
                Err(FrameError::TooLarge { len, max }) => {
                    assert_eq!((Some(len), max), (announced, MAX_FRAME));
                    assert!(len > MAX_FRAME);
                    assert_eq!(r.pos, start + HEADER_LEN, "read past a refused header");
                    return;
                }
                Err(FrameError::Truncated { expected, got }) => {
                    match announced {
                        None => assert_eq!((expected, got), (HEADER_LEN, have)),
                        Some(len) => {
                            assert!(len <= MAX_FRAME && have < HEADER_LEN + len);
                            assert_eq!((expected, got), (len, have - HEADER_LEN));
                        }
                    }
                    check_logged(&FrameError::Truncated { expected, got }.to_string());
                    return;
                }
                Err(e) => panic!("unexpected {e}"),
            }
        }
    });
});
