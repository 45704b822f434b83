//! A blocking client for the tools: connect, exchange versions, then request/response pairs.

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use crate::frame::{read_frame, write_frame, FrameError};
use crate::message::{ErrorReply, Hello, Request, Response};

/// Why a conversation with the daemon failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The socket could not be reached.
    #[error("cannot connect to batchd at {}: {source} (is batchd running? set ESCHED_SOCKET to its socket)", path.display())]
    Connect {
        /// The socket path tried.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Reading or writing a frame failed.
    #[error("talking to batchd: {0}")]
    Frame(#[from] FrameError),
    /// The daemon refused the request (including a protocol version mismatch).
    #[error("{0}")]
    Daemon(ErrorReply),
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
}

impl Client {
    /// Connects to the socket at `path` and exchanges versions.
    pub fn connect(path: impl AsRef<Path>) -> Result<Client, ClientError> {
        let path = path.as_ref();
        let stream = UnixStream::connect(path).map_err(|source| ClientError::Connect {
            path: path.to_path_buf(),
            source,
        })?;
        Client::handshake(stream)
    }

    /// Connects to [`crate::socket::default_socket_path`].
    pub fn connect_default() -> Result<Client, ClientError> {
        Client::connect(crate::socket::default_socket_path())
    }

    /// Exchanges versions on an open stream.
    pub fn handshake(mut stream: UnixStream) -> Result<Client, ClientError> {
        let mine = Hello::current();
        write_frame(&mut stream, &Request::Hello(mine.clone()))?;
        match read_frame::<_, Response>(&mut stream)? {
            Response::Hello(h) if h.proto_version == mine.proto_version => {
                Ok(Client { stream, daemon: h })
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

    /// Sends `req` and returns the reply as it is, errors included.
    pub fn send(&mut self, req: &Request) -> Result<Response, ClientError> {
        write_frame(&mut self.stream, req)?;
        Ok(read_frame(&mut self.stream)?)
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
        write_frame(&mut self.stream, req)?;
        loop {
            match read_frame::<_, Response>(&mut self.stream)? {
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
    fn connect_failure_names_the_path() {
        let err = Client::connect("/nonexistent/esched.sock").unwrap_err();
        assert!(
            err.to_string().contains("/nonexistent/esched.sock"),
            "{err}"
        );
    }
}
