//! A blocking client for the tools: connect, exchange versions, then request/response pairs.
//!
//! Neither step waits forever: the connection must be accepted within [`CONNECT_TIMEOUT`] (a
//! daemon whose accept queue is full would otherwise block `connect(2)` indefinitely), and every
//! read of an answer must bring bytes within [`ANSWER_TIMEOUT`]; `ESCHED_TIMEOUT` (seconds)
//! overrides both. Each failure is one line naming the socket.

use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use std::io::Write as _;

use crate::frame::{decode, encode, read_payload, FrameError, HEADER_LEN};
use crate::message::{ErrorReply, Hello, Request, Response};

/// How long connecting may take before the tool gives up.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the daemon may stay silent while an answer is awaited (per read, so a long
/// listing that keeps coming is never cut).
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// Environment variable overriding both timeouts, in seconds.
pub const TIMEOUT_ENV: &str = "ESCHED_TIMEOUT";

/// Why a conversation with the daemon failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The socket could not be reached.
    // The cause is part of the message and not a `#[source]`: printed as a chain (`{:#}`), it
    // would otherwise appear twice.
    #[error("cannot connect to batchd at {}: {reason} (is batchd running? set ESCHED_SOCKET to its socket)", path.display())]
    Connect {
        /// The socket path tried.
        path: PathBuf,
        /// Why.
        reason: std::io::Error,
    },
    /// The daemon did not accept or did not answer in time.
    #[error("batchd at {} did not {what} within {} s (overloaded or stuck? ESCHED_TIMEOUT sets the wait)", path.display(), timeout.as_secs_f64())]
    Timeout {
        /// The socket.
        path: PathBuf,
        /// `accept the connection` or `answer`.
        what: &'static str,
        /// The wait.
        timeout: Duration,
    },
    /// Reading or writing a frame failed.
    #[error("talking to batchd at {}: {error}", path.display())]
    Frame {
        /// The socket.
        path: PathBuf,
        /// What failed.
        error: FrameError,
    },
    /// The daemon refused the request (including a protocol version mismatch).
    #[error("{0}")]
    Daemon(ErrorReply),
    /// [`TIMEOUT_ENV`] is set to something that is not a positive number of seconds.
    #[error("invalid {TIMEOUT_ENV} '{value}': expected a positive number of seconds")]
    BadTimeout {
        /// The variable's value.
        value: String,
    },
    /// The daemon answered with something that does not fit the request.
    #[error("unexpected reply from batchd to `{request}`: {got}")]
    Unexpected {
        /// The request's verb.
        request: &'static str,
        /// What came back, briefly.
        got: String,
    },
}

/// A connection to batchd on which the handshake is done.
#[derive(Debug)]
pub struct Client {
    stream: UnixStream,
    daemon: Hello,
    /// The socket, for error messages.
    path: PathBuf,
    answer_timeout: Duration,
    /// Every frame written and read on this connection, the hello's included.
    traffic: ClientTraffic,
}

/// Frames and bytes (whole frames, length prefix included) a [`Client`] wrote and read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientTraffic {
    /// Frames written.
    pub frames_sent: u64,
    /// Their bytes.
    pub bytes_sent: u64,
    /// Frames read whole.
    pub frames_received: u64,
    /// Their bytes.
    pub bytes_received: u64,
}

/// The timeouts in force: [`TIMEOUT_ENV`] when set (and not empty), else the defaults. A value
/// that is not a positive number of seconds is refused rather than ignored: a user who set it
/// would otherwise wait a minute for an answer believing they had asked for less.
fn timeouts() -> Result<(Duration, Duration), ClientError> {
    let Some(v) = std::env::var_os(TIMEOUT_ENV).filter(|v| !v.is_empty()) else {
        return Ok((CONNECT_TIMEOUT, ANSWER_TIMEOUT));
    };
    let v = v.to_string_lossy();
    match v.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => {
            let d = Duration::from_secs_f64(s);
            Ok((d, d))
        }
        _ => Err(ClientError::BadTimeout {
            value: v.into_owned(),
        }),
    }
}

/// Connects to a Unix socket, giving up after `timeout`. A non-blocking `connect(2)` on a
/// listener whose queue is full fails with `EAGAIN` at once instead of blocking: retry until
/// the deadline.
fn connect_within(path: &Path, timeout: Duration) -> Result<UnixStream, ClientError> {
    use nix::errno::Errno;
    use nix::sys::socket::{connect, socket, AddressFamily, SockFlag, SockType, UnixAddr};
    let failed = |reason: std::io::Error| ClientError::Connect {
        path: path.to_path_buf(),
        reason,
    };
    let addr = UnixAddr::new(path).map_err(|e| failed(e.into()))?;
    let fd = socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
        None,
    )
    .map_err(|e| failed(e.into()))?;
    let deadline = Instant::now() + timeout;
    loop {
        match connect(fd.as_raw_fd(), &addr) {
            Ok(()) => break,
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN | Errno::EINPROGRESS) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(Errno::EAGAIN | Errno::EINPROGRESS) => {
                return Err(ClientError::Timeout {
                    path: path.to_path_buf(),
                    what: "accept the connection",
                    timeout,
                })
            }
            Err(e) => return Err(failed(e.into())),
        }
    }
    let stream = UnixStream::from(fd);
    stream.set_nonblocking(false).map_err(failed)?;
    Ok(stream)
}

impl Client {
    /// Connects to the socket at `path` and exchanges versions.
    pub fn connect(path: impl AsRef<Path>) -> Result<Client, ClientError> {
        let path = path.as_ref();
        let (connect, answer) = timeouts()?;
        let stream = connect_within(path, connect)?;
        Client::handshake_within(stream, path, answer)
    }

    /// Connects to [`crate::socket::default_socket_path`].
    pub fn connect_default() -> Result<Client, ClientError> {
        Client::connect(crate::socket::default_socket_path())
    }

    /// Exchanges versions on an open stream.
    pub fn handshake(stream: UnixStream) -> Result<Client, ClientError> {
        Client::handshake_within(stream, Path::new("<stream>"), timeouts()?.1)
    }

    /// Exchanges versions on an open stream to `path`; no read waits longer than `answer`.
    fn handshake_within(
        stream: UnixStream,
        path: &Path,
        answer: Duration,
    ) -> Result<Client, ClientError> {
        let io = |e: std::io::Error| ClientError::Frame {
            path: path.to_path_buf(),
            error: FrameError::Io(e),
        };
        stream.set_read_timeout(Some(answer)).map_err(io)?;
        stream.set_write_timeout(Some(answer)).map_err(io)?;
        let mut c = Client {
            stream,
            daemon: Hello::current(),
            path: path.to_path_buf(),
            answer_timeout: answer,
            traffic: ClientTraffic::default(),
        };
        let mine = Hello::current();
        // A daemon at its connection cap answers with an error and closes without reading:
        // the hello then meets a closed connection, but the error is there to read.
        let sent = c.write(&Request::Hello(mine.clone()));
        let reply = match (sent, c.read()) {
            (_, Ok(r @ Response::Error(_))) => r,
            (Err(e), _) => return Err(e),
            (Ok(()), r) => r?,
        };
        match reply {
            Response::Hello(h) if h.proto_version == mine.proto_version => {
                c.daemon = h;
                Ok(c)
            }
            Response::Hello(h) => Err(ClientError::Daemon(ErrorReply::version_mismatch(
                mine.proto_version,
                h.proto_version,
            ))),
            Response::Error(e) => Err(ClientError::Daemon(e)),
            other => Err(ClientError::Unexpected {
                request: "hello",
                got: brief(&other),
            }),
        }
    }

    /// The daemon's hello.
    pub fn daemon(&self) -> &Hello {
        &self.daemon
    }

    /// A frame error as the client's error: a read or write that timed out says so.
    fn frame_error(&self, error: FrameError) -> ClientError {
        match &error {
            FrameError::Io(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                ClientError::Timeout {
                    path: self.path.clone(),
                    what: "answer",
                    timeout: self.answer_timeout,
                }
            }
            _ => ClientError::Frame {
                path: self.path.clone(),
                error,
            },
        }
    }

    /// Checks `req` as the daemon would ([`Request::check`]: a request over a bound gets the
    /// daemon's answer without a round trip), then sends it.
    fn write(&mut self, req: &Request) -> Result<(), ClientError> {
        req.check().map_err(|e| ClientError::Daemon(e.reply()))?;
        let buf = encode(req).map_err(|e| self.frame_error(e))?;
        self.stream
            .write_all(&buf)
            .and_then(|()| self.stream.flush())
            .map_err(|e| self.frame_error(FrameError::Io(e)))?;
        self.traffic.frames_sent += 1;
        self.traffic.bytes_sent += buf.len() as u64;
        Ok(())
    }

    fn read(&mut self) -> Result<Response, ClientError> {
        let payload = read_payload(&mut self.stream).map_err(|e| self.frame_error(e))?;
        self.traffic.frames_received += 1;
        self.traffic.bytes_received += (HEADER_LEN + payload.len()) as u64;
        decode(&payload).map_err(|e| self.frame_error(e))
    }

    /// The frames and bytes this connection has written and read so far.
    pub fn traffic(&self) -> ClientTraffic {
        self.traffic
    }

    /// Sends `req` without reading anything: on a launcher session answers and pushed frames
    /// share the stream, so the caller reads them with [`Client::next_frame`].
    pub fn post(&mut self, req: &Request) -> Result<(), ClientError> {
        self.write(req)
    }

    /// Reads the next frame, waiting at most `timeout` (`None`: as long as it takes; a
    /// launcher may wait hours for its start).
    pub fn next_frame(&mut self, timeout: Option<Duration>) -> Result<Response, ClientError> {
        let path = self.path.clone();
        let set = |s: &UnixStream, t| {
            s.set_read_timeout(t)
                .map_err(|reason| ClientError::Connect {
                    path: path.clone(),
                    reason,
                })
        };
        set(&self.stream, timeout.filter(|t| !t.is_zero()))?;
        let r = self.read();
        set(&self.stream, Some(self.answer_timeout))?;
        r
    }

    /// Whether a read would find bytes (or the end of the stream) at once: a launcher drains
    /// the frames already there before acting on the latest one.
    pub fn input_ready(&self) -> Result<bool, ClientError> {
        use nix::errno::Errno;
        use nix::sys::socket::{recv, MsgFlags};
        let flags = MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT;
        loop {
            return match recv(self.stream.as_raw_fd(), &mut [0u8; 1], flags) {
                Ok(_) => Ok(true),
                Err(Errno::EAGAIN) => Ok(false),
                Err(Errno::EINTR) => continue,
                Err(e) => Err(ClientError::Frame {
                    path: self.path.clone(),
                    error: FrameError::Io(e.into()),
                }),
            };
        }
    }

    /// Sends `req` and returns the reply as it is, errors included (a request over a bound
    /// gets the daemon's error without being sent).
    pub fn send(&mut self, req: &Request) -> Result<Response, ClientError> {
        match self.write(req) {
            Err(ClientError::Daemon(e)) => return Ok(Response::Error(e)),
            r => r?,
        }
        self.read()
    }

    /// Sends `req`; a [`Response::Error`] becomes [`ClientError::Daemon`].
    pub fn request(&mut self, req: &Request) -> Result<Response, ClientError> {
        match self.send(req)? {
            Response::Error(e) => Err(ClientError::Daemon(e)),
            r => Ok(r),
        }
    }
}

impl Client {
    /// Sends a listing request (`List`, `Acct`, `ShowJob`) and gathers every part of the reply.
    pub fn jobs(&mut self, req: &Request) -> Result<Vec<crate::JobInfo>, ClientError> {
        let mut out = Vec::new();
        self.jobs_each(req, |mut part| out.append(&mut part))?;
        Ok(out)
    }

    /// Like [`Client::jobs`], handing each part of the reply to `part` as it arrives: a tool
    /// that prints rows need not gather 100,000 jobs in one vector first.
    pub fn jobs_each(
        &mut self,
        req: &Request,
        mut part: impl FnMut(Vec<crate::JobInfo>),
    ) -> Result<(), ClientError> {
        self.write(req)?;
        loop {
            match self.read()? {
                Response::JobsPart(jobs) => part(jobs),
                Response::Jobs(jobs) => {
                    part(jobs);
                    return Ok(());
                }
                Response::Error(e) => return Err(ClientError::Daemon(e)),
                other => return Err(ClientError::unexpected(req.verb(), &other)),
            }
        }
    }
}

/// A one-line description of a response, for error messages.
fn brief(r: &Response) -> String {
    let s = serde_json::to_string(r).unwrap_or_default();
    s.chars().take(120).collect()
}

impl ClientError {
    /// The error for a reply of the wrong variant.
    pub fn unexpected(request: &'static str, got: &Response) -> Self {
        ClientError::Unexpected {
            request,
            got: brief(got),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{read_frame, write_frame};
    use crate::message::{ErrorKind, VersionRequest};

    /// A fake daemon on the other end of a socket pair, answering with `reply` after hello.
    fn fake(hello: Response) -> UnixStream {
        let (a, mut b) = UnixStream::pair().unwrap();
        std::thread::spawn(move || {
            let _: Request = read_frame(&mut b).unwrap();
            write_frame(&mut b, &hello).unwrap();
            if let Ok(Request::Version(_)) = read_frame::<_, Request>(&mut b) {
                let _ = write_frame(
                    &mut b,
                    &Response::Error(ErrorReply::new(ErrorKind::Internal, "boom")),
                );
            }
        });
        a
    }

    #[test]
    fn handshake_then_request() {
        let mut c = Client::handshake(fake(Response::Hello(Hello::current()))).unwrap();
        assert_eq!(c.daemon().proto_version, crate::PROTOCOL_VERSION);
        let err = c.request(&Request::Version(VersionRequest {})).unwrap_err();
        assert_eq!(err.to_string(), "boom");
    }

    #[test]
    fn jobs_gathers_every_part() {
        let (a, mut b) = UnixStream::pair().unwrap();
        std::thread::spawn(move || {
            let _: Request = read_frame(&mut b).unwrap();
            write_frame(&mut b, &Response::Hello(Hello::current())).unwrap();
            let _: Request = read_frame(&mut b).unwrap();
            write_frame(&mut b, &Response::JobsPart(vec![])).unwrap();
            write_frame(&mut b, &Response::Jobs(vec![])).unwrap();
        });
        let mut c = Client::handshake(a).unwrap();
        let req = Request::List(crate::ListRequest::default());
        assert_eq!(c.jobs(&req).unwrap(), vec![]);
    }

    /// A request over a bound is refused with the daemon's own answer, and never sent: the
    /// fake daemon would answer `boom`.
    #[test]
    fn a_request_over_a_bound_is_refused_before_it_is_sent() {
        let mut c = Client::handshake(fake(Response::Hello(Hello::current()))).unwrap();
        let req = Request::Hold(crate::HoldRequest {
            ids: vec![1; crate::MAX_FILTER_IDS + 1],
        });
        let want = req.check().unwrap_err().reply();
        match c.request(&req) {
            Err(ClientError::Daemon(e)) => assert_eq!(e, want),
            other => panic!("{other:?}"),
        }
        assert_eq!(c.send(&req).unwrap(), Response::Error(want));
        assert_eq!(c.traffic().frames_sent, 1, "only the hello went out");
    }

    #[test]
    fn mismatch_is_a_clear_error() {
        let h = Hello {
            proto_version: crate::PROTOCOL_VERSION + 1,
            software_version: "9".into(),
        };
        let err = Client::handshake(fake(Response::Hello(h))).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "protocol version mismatch: client {}, daemon {}",
                crate::PROTOCOL_VERSION,
                crate::PROTOCOL_VERSION + 1
            )
        );
    }

    #[test]
    fn connect_failure_names_the_path_and_its_cause_once() {
        let err = Client::connect("/nonexistent/esched.sock").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("/nonexistent/esched.sock"), "{text}");
        assert_eq!(text.matches("os error").count(), 1, "{text}");
        assert!(std::error::Error::source(&err).is_none(), "{text}");
    }

    #[test]
    fn a_silent_daemon_is_a_timeout_naming_the_socket() {
        let dir = std::env::temp_dir().join(format!("esched-client-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("silent.sock");
        let _ = std::fs::remove_file(&path);
        // Accepts (the kernel does, from the backlog) but never answers.
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let stream = connect_within(&path, Duration::from_secs(1)).unwrap();
        let err = Client::handshake_within(stream, &path, Duration::from_millis(100)).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, ClientError::Timeout { .. }), "{text}");
        assert!(text.contains("silent.sock"), "{text}");
        assert!(text.contains("did not answer within 0.1 s"), "{text}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
