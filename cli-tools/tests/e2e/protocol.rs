//! Malformed and truncated frames get an error reply, and the daemon stays up.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use batch_proto::frame::{encode, read_frame};
use batch_proto::{ErrorKind, Hello, Request, Response};

use crate::harness::Cluster;

fn connect(c: &Cluster) -> UnixStream {
    let s = UnixStream::connect(&c.socket).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s
}

fn hello(s: &mut UnixStream) {
    s.write_all(&encode(&Request::Hello(Hello::current())).expect("encode"))
        .expect("send");
    match read_frame::<_, Response>(s) {
        Ok(Response::Hello(_)) => {}
        other => panic!("handshake: {other:?}"),
    }
}

fn expect_error(s: &mut UnixStream, what: &str) {
    match read_frame::<_, Response>(s) {
        Ok(Response::Error(e)) => {
            assert!(
                matches!(e.kind, ErrorKind::BadRequest | ErrorKind::VersionMismatch),
                "{what}: {e:?}"
            );
        }
        other => panic!("{what}: expected an error reply, got {other:?}"),
    }
}

fn frame(payload: &[u8]) -> Vec<u8> {
    let mut v = u32::try_from(payload.len())
        .expect("small")
        .to_be_bytes()
        .to_vec();
    v.extend_from_slice(payload);
    v
}

#[test]
fn malformed_and_truncated_messages_get_an_error_and_the_daemon_survives() {
    let mut c = Cluster::start(1, "cbf");

    // Not JSON at all, as the first frame.
    let mut s = connect(&c);
    s.write_all(&frame(b"\x00\x01garbage{")).expect("send");
    expect_error(&mut s, "garbage before hello");

    // Valid JSON that is no request, after a good handshake.
    let mut s = connect(&c);
    hello(&mut s);
    s.write_all(&frame(br#"{"Submit":{"spec":42}}"#))
        .expect("send");
    expect_error(&mut s, "wrong shape after hello");

    // A request before the handshake.
    let mut s = connect(&c);
    s.write_all(&encode(&Request::Version(batch_proto::VersionRequest {})).expect("encode"))
        .expect("send");
    expect_error(&mut s, "request before hello");

    // A length header announcing far more than the limit.
    let mut s = connect(&c);
    hello(&mut s);
    s.write_all(&u32::MAX.to_be_bytes()).expect("send");
    expect_error(&mut s, "oversized frame");

    // A frame cut short: the header promises 100 bytes, 10 arrive, then the write side closes.
    let mut s = connect(&c);
    hello(&mut s);
    s.write_all(&100u32.to_be_bytes()).expect("send");
    s.write_all(b"{\"Version\"").expect("send");
    s.shutdown(std::net::Shutdown::Write).expect("shutdown");
    expect_error(&mut s, "truncated frame");
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);

    // A header alone, cut inside the length.
    let mut s = connect(&c);
    s.write_all(&[0, 0]).expect("send");
    s.shutdown(std::net::Shutdown::Write).expect("shutdown");
    expect_error(&mut s, "truncated header");

    assert!(c.daemon_alive(), "batchd died");
    let v = c.ok("econtrol", &["version"]);
    assert!(v.contains("cbf"), "{v}");
    let id = c.submit(&["--wrap", "true"]);
    c.wait_state(id, batch_proto::JobState::Completed);
}
