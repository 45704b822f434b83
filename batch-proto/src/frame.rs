//! Framing: a 4-byte big-endian payload length, then that many bytes of JSON.
//!
//! The length is checked against [`MAX_FRAME`], and it is a limit, not an allocation: the payload
//! buffer grows as bytes arrive, so a header announcing 16 MiB followed by nothing costs nothing.
//! A connection that ends inside a frame is reported as [`FrameError::Truncated`]; one that ends
//! cleanly between frames as [`FrameError::Closed`].

use std::io::{self, Read, Write};

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Largest payload accepted, in bytes (16 MiB: a listing of 100,000 jobs fits several times).
pub const MAX_FRAME: usize = 16 * 1024 * 1024;

/// Size of the length header.
pub const HEADER_LEN: usize = 4;

/// A frame that could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer closed the connection between frames.
    #[error("connection closed")]
    Closed,
    /// The peer closed the connection inside a frame.
    #[error("truncated frame: expected {expected} bytes, got {got}")]
    Truncated {
        /// Bytes the header (or the header itself) announced.
        expected: usize,
        /// Bytes that arrived.
        got: usize,
    },
    /// A header announcing more than [`MAX_FRAME`] bytes.
    #[error("frame of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge {
        /// Announced length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A payload that is not a valid message.
    // Not a `#[source]`: the message already says it, and a chain printed with `{:#}` would
    // say it twice.
    #[error("malformed message: {0}")]
    Malformed(serde_json::Error),
    /// Any other I/O failure.
    #[error("i/o error: {0}")]
    Io(io::Error),
}

impl From<serde_json::Error> for FrameError {
    fn from(e: serde_json::Error) -> Self {
        FrameError::Malformed(e)
    }
}

impl From<io::Error> for FrameError {
    fn from(e: io::Error) -> Self {
        FrameError::Io(e)
    }
}

/// Bytes the payload buffer starts with; it grows (doubling) only as bytes arrive.
const INITIAL_BUFFER: usize = 8 * 1024;

/// `msg` as one frame: header and payload.
pub fn encode<T: Serialize>(msg: &T) -> Result<Vec<u8>, FrameError> {
    let mut buf = Vec::new();
    encode_into(msg, &mut buf)?;
    Ok(buf)
}

/// `msg` as one frame, header and payload, in `buf` (cleared first, its capacity reused: the
/// daemon encodes a listing frame after frame into the same buffer). On
/// [`FrameError::TooLarge`] `buf` holds the oversized payload, unsendable.
pub fn encode_into<T: Serialize>(msg: &T, buf: &mut Vec<u8>) -> Result<(), FrameError> {
    buf.clear();
    buf.extend_from_slice(&[0; HEADER_LEN]);
    serde_json::to_writer(&mut *buf, msg)?;
    let len = buf.len() - HEADER_LEN;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge {
            len,
            max: MAX_FRAME,
        });
    }
    // `len <= MAX_FRAME < u32::MAX`, so the cast is exact.
    buf[..HEADER_LEN].copy_from_slice(&(len as u32).to_be_bytes());
    Ok(())
}

/// Decodes a payload (without its header).
pub fn decode<T: DeserializeOwned>(payload: &[u8]) -> Result<T, FrameError> {
    Ok(serde_json::from_slice(payload)?)
}

/// The payload length a header announces, refused when above [`MAX_FRAME`].
pub fn check_header(header: [u8; HEADER_LEN]) -> Result<usize, FrameError> {
    let len = u32::from_be_bytes(header) as usize;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge {
            len,
            max: MAX_FRAME,
        });
    }
    Ok(len)
}

/// Writes `msg` as one frame and flushes.
pub fn write_frame<W: Write, T: Serialize>(w: &mut W, msg: &T) -> Result<(), FrameError> {
    let buf = encode(msg)?;
    w.write_all(&buf)?;
    w.flush()?;
    Ok(())
}

/// Reads bytes until `buf` is full or the stream ends; returns how many arrived.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Reads one frame's payload bytes.
pub fn read_payload<R: Read>(r: &mut R) -> Result<Vec<u8>, FrameError> {
    let mut header = [0u8; HEADER_LEN];
    match read_full(r, &mut header)? {
        0 => return Err(FrameError::Closed),
        n if n < HEADER_LEN => {
            return Err(FrameError::Truncated {
                expected: HEADER_LEN,
                got: n,
            })
        }
        _ => {}
    }
    let len = check_header(header)?;
    let mut payload = Vec::with_capacity(len.min(INITIAL_BUFFER));
    let got = r.take(len as u64).read_to_end(&mut payload)?;
    if got < len {
        return Err(FrameError::Truncated { expected: len, got });
    }
    Ok(payload)
}

/// Reads one frame and decodes it.
pub fn read_frame<R: Read, T: DeserializeOwned>(r: &mut R) -> Result<T, FrameError> {
    decode(&read_payload(r)?)
}

/// The same framing over tokio's async streams, for the daemon.
#[cfg(feature = "tokio")]
pub mod nonblocking {
    use serde::de::DeserializeOwned;
    use serde::Serialize;
    use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

    use super::{check_header, decode, encode, FrameError, HEADER_LEN, INITIAL_BUFFER};

    async fn read_full<R: AsyncRead + Unpin>(r: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut got = 0;
        while got < buf.len() {
            match r.read(&mut buf[got..]).await? {
                0 => break,
                n => got += n,
            }
        }
        Ok(got)
    }

    /// Reads one frame's payload bytes.
    pub async fn read_payload<R: AsyncRead + Unpin>(r: &mut R) -> Result<Vec<u8>, FrameError> {
        read_payload_after(r, &[]).await
    }

    /// Reads one frame's payload bytes when the first `have.len()` bytes of its header (at
    /// most [`HEADER_LEN`]) were already read: the daemon waits for a request's first byte
    /// under its idle timeout, then for the rest under the frame deadline.
    pub async fn read_payload_after<R: AsyncRead + Unpin>(
        r: &mut R,
        have: &[u8],
    ) -> Result<Vec<u8>, FrameError> {
        let mut header = [0u8; HEADER_LEN];
        let start = have.len().min(HEADER_LEN);
        header[..start].copy_from_slice(&have[..start]);
        match start + read_full(r, &mut header[start..]).await? {
            0 => return Err(FrameError::Closed),
            n if n < HEADER_LEN => {
                return Err(FrameError::Truncated {
                    expected: HEADER_LEN,
                    got: n,
                })
            }
            _ => {}
        }
        let len = check_header(header)?;
        let mut payload = Vec::with_capacity(len.min(INITIAL_BUFFER));
        let got = r.take(len as u64).read_to_end(&mut payload).await?;
        if got < len {
            return Err(FrameError::Truncated { expected: len, got });
        }
        Ok(payload)
    }

    /// Reads one frame and decodes it.
    pub async fn read_frame<R: AsyncRead + Unpin, T: DeserializeOwned>(
        r: &mut R,
    ) -> Result<T, FrameError> {
        decode(&read_payload(r).await?)
    }

    /// Writes `msg` as one frame and flushes.
    pub async fn write_frame<W: AsyncWrite + Unpin, T: Serialize>(
        w: &mut W,
        msg: &T,
    ) -> Result<(), FrameError> {
        let buf = encode(msg)?;
        w.write_all(&buf).await?;
        w.flush().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn round_trip_through_a_byte_stream() {
        let msgs = vec!["a".to_string(), String::new(), "ü€".repeat(1000)];
        let mut buf = Vec::new();
        for m in &msgs {
            write_frame(&mut buf, m).unwrap();
        }
        let mut r = Cursor::new(buf);
        for m in &msgs {
            let got: String = read_frame(&mut r).unwrap();
            assert_eq!(&got, m);
        }
        assert!(matches!(
            read_frame::<_, String>(&mut r),
            Err(FrameError::Closed)
        ));
    }

    #[test]
    fn oversize_header_is_refused_before_allocating() {
        let mut buf = (u32::MAX).to_be_bytes().to_vec();
        buf.extend_from_slice(b"{}");
        let err = read_payload(&mut Cursor::new(buf)).unwrap_err();
        assert!(matches!(err, FrameError::TooLarge { len, .. } if len == u32::MAX as usize));
        let just_over = ((MAX_FRAME + 1) as u32).to_be_bytes();
        assert!(matches!(
            check_header(just_over),
            Err(FrameError::TooLarge { .. })
        ));
        assert_eq!(
            check_header((MAX_FRAME as u32).to_be_bytes()).unwrap(),
            MAX_FRAME
        );
    }

    /// A reader that hands out `avail` bytes of zeros, then reports the stream's end.
    struct Trickle {
        avail: usize,
    }

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.avail).min(4096);
            buf[..n].fill(b' ');
            self.avail -= n;
            Ok(n)
        }
    }

    #[test]
    fn the_announced_length_is_a_limit_not_an_allocation() {
        // 16 MiB announced, 10 bytes sent: the buffer holds what came, not what was promised.
        let mut r = std::io::Read::chain(
            Cursor::new((MAX_FRAME as u32).to_be_bytes().to_vec()),
            Trickle { avail: 10 },
        );
        let err = read_payload(&mut r).unwrap_err();
        assert!(
            matches!(
                err,
                FrameError::Truncated {
                    expected: MAX_FRAME,
                    got: 10
                }
            ),
            "{err}"
        );
        // Nor does reading a whole large frame keep more than it needs.
        let mut r = std::io::Read::chain(
            Cursor::new(1_000_000u32.to_be_bytes().to_vec()),
            Trickle { avail: 1_000_000 },
        );
        let p = read_payload(&mut r).unwrap();
        assert_eq!(p.len(), 1_000_000);
        assert!(p.capacity() < 2 * 1_000_000 + INITIAL_BUFFER);
    }

    #[test]
    fn errors_say_their_cause_once() {
        let e = FrameError::from(io::Error::other("boom"));
        assert!(std::error::Error::source(&e).is_none(), "{e}");
        let e = FrameError::from(serde_json::from_str::<u8>("x").unwrap_err());
        assert!(std::error::Error::source(&e).is_none(), "{e}");
    }

    #[test]
    fn oversize_message_is_refused_when_encoding() {
        let big = "x".repeat(MAX_FRAME);
        assert!(matches!(encode(&big), Err(FrameError::TooLarge { .. })));
    }

    #[test]
    fn truncated_payload_and_header_are_reported() {
        let mut buf = encode(&"hello world").unwrap();
        buf.truncate(buf.len() - 3);
        let err = read_payload(&mut Cursor::new(buf)).unwrap_err();
        assert!(
            matches!(
                err,
                FrameError::Truncated {
                    expected: 13,
                    got: 10
                }
            ),
            "{err}"
        );
        let err = read_payload(&mut Cursor::new(vec![0u8, 0])).unwrap_err();
        assert!(
            matches!(
                err,
                FrameError::Truncated {
                    expected: 4,
                    got: 2
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn malformed_payload_is_an_error_not_a_panic() {
        let mut buf = 5u32.to_be_bytes().to_vec();
        buf.extend_from_slice(b"{nope");
        let err = read_frame::<_, serde_json::Value>(&mut Cursor::new(buf)).unwrap_err();
        assert!(matches!(err, FrameError::Malformed(_)), "{err}");
    }

    #[cfg(feature = "tokio")]
    #[tokio::test]
    async fn async_and_sync_framing_agree() {
        let mut buf = Vec::new();
        nonblocking::write_frame(&mut buf, &vec![1u32, 2, 3])
            .await
            .unwrap();
        let v: Vec<u32> = read_frame(&mut Cursor::new(buf.clone())).unwrap();
        assert_eq!(v, vec![1, 2, 3]);
        let v: Vec<u32> = nonblocking::read_frame(&mut buf.as_slice()).await.unwrap();
        assert_eq!(v, vec![1, 2, 3]);
        buf.truncate(6);
        assert!(matches!(
            nonblocking::read_payload(&mut buf.as_slice()).await,
            Err(FrameError::Truncated { .. })
        ));
    }
}
