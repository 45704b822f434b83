//! The API on the Unix socket: one task per connection, one file per verb.
//!
//! A connection starts with the version exchange; then any number of requests follow, each
//! answered in order. A frame that is too large, truncated or not a valid message gets an
//! error reply (when the peer still listens) and the connection is closed; the daemon goes on.

mod acct;
mod cancel;
mod hold;
mod info;
mod list;
mod reconfigure;
mod release_nodes;
mod show;
mod submit;
mod update;

use std::sync::Arc;

use batch_proto::frame::nonblocking::{read_payload, write_frame};
use batch_proto::frame::{decode, FrameError};
use batch_proto::{
    ErrorKind, ErrorReply, Hello, JobInfo, Request, Response, VersionInfo, PROTOCOL_VERSION,
};
use tokio::net::{UnixListener, UnixStream};

use crate::daemon::Daemon;

pub use reconfigure::reconfigure;

/// Who is on the other end of a connection.
#[derive(Clone, Debug)]
pub struct Caller {
    /// Peer uid (SO_PEERCRED).
    pub uid: u32,
    /// Peer gid.
    pub gid: u32,
    /// Peer user name.
    pub user: String,
}

impl Caller {
    /// Whether the caller may act on a job owned by `owner`.
    pub fn may_touch(&self, owner: u32) -> bool {
        self.uid == 0 || self.uid == owner
    }
}

/// What a handler answers: one response, or a listing sent in parts.
pub enum Reply {
    /// One frame.
    One(Response),
    /// A listing.
    Jobs(Vec<JobInfo>),
    /// A listing encoded as it is sent (`List`).
    Listing(list::Frames),
}

impl From<Response> for Reply {
    fn from(r: Response) -> Self {
        Reply::One(r)
    }
}

impl From<ErrorReply> for Reply {
    fn from(e: ErrorReply) -> Self {
        Reply::One(Response::Error(e))
    }
}

/// Accepts connections until the task is dropped.
pub async fn serve(d: Arc<Daemon>, listener: UnixListener) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(connection(Arc::clone(&d), stream));
            }
            Err(e) => {
                // Out of file descriptors, typically: wait instead of spinning.
                tracing::warn!("accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}

async fn send(stream: &mut UnixStream, r: &Response) -> bool {
    match write_frame(stream, r).await {
        Ok(()) => true,
        Err(e) => {
            tracing::debug!("writing a reply: {e}");
            false
        }
    }
}

/// Reads the next request; `None` ends the connection (after an error reply if one is due).
async fn next_request(stream: &mut UnixStream) -> Option<Request> {
    let payload = match read_payload(stream).await {
        Ok(p) => p,
        Err(FrameError::Closed) => return None,
        Err(e) => {
            tracing::warn!("bad frame from a client: {e}");
            let _ = send(
                stream,
                &Response::Error(ErrorReply::new(ErrorKind::BadRequest, e.to_string())),
            )
            .await;
            return None;
        }
    };
    match decode::<Request>(&payload) {
        Ok(r) => Some(r),
        Err(e) => {
            tracing::warn!("malformed request: {e}");
            let _ = send(
                stream,
                &Response::Error(ErrorReply::new(ErrorKind::BadRequest, e.to_string())),
            )
            .await;
            None
        }
    }
}

async fn connection(d: Arc<Daemon>, mut stream: UnixStream) {
    let caller = match stream.peer_cred() {
        Ok(c) => {
            let uid = c.uid();
            let user = d.user_name(uid);
            Caller {
                uid,
                gid: c.gid(),
                user,
            }
        }
        Err(e) => {
            tracing::warn!("cannot identify a client: {e}");
            return;
        }
    };
    match next_request(&mut stream).await {
        Some(Request::Hello(h)) if h.proto_version == PROTOCOL_VERSION => {
            if !send(&mut stream, &Response::Hello(Hello::current())).await {
                return;
            }
        }
        Some(Request::Hello(h)) => {
            let e = ErrorReply::version_mismatch(h.proto_version, PROTOCOL_VERSION);
            tracing::warn!(uid = caller.uid, client = %h.software_version, "{e}");
            let _ = send(&mut stream, &Response::Error(e)).await;
            return;
        }
        Some(other) => {
            let e = ErrorReply::new(
                ErrorKind::BadRequest,
                format!("expected a hello first, got `{}`", other.verb()),
            );
            let _ = send(&mut stream, &Response::Error(e)).await;
            return;
        }
        None => return,
    }
    while let Some(req) = next_request(&mut stream).await {
        let verb = req.verb();
        tracing::debug!(uid = caller.uid, verb, "request");
        let began = std::time::Instant::now();
        let reply = dispatch(&d, &caller, req).await;
        let handled = began.elapsed();
        let ok = match reply {
            Reply::One(r) => send(&mut stream, &r).await,
            Reply::Jobs(jobs) => list::send(&mut stream, &jobs).await,
            Reply::Listing(frames) => list::send_frames(&mut stream, frames).await,
        };
        tracing::debug!(verb, ?handled, total = ?began.elapsed(), "answered");
        if !ok {
            return;
        }
    }
}

async fn dispatch(d: &Arc<Daemon>, caller: &Caller, req: Request) -> Reply {
    match req {
        Request::Hello(_) => {
            ErrorReply::new(ErrorKind::BadRequest, "hello twice on one connection").into()
        }
        Request::Version(_) => Response::Version(VersionInfo {
            proto_version: PROTOCOL_VERSION,
            software_version: batch_proto::SOFTWARE_VERSION.to_string(),
            policy: d.policy_name(),
        })
        .into(),
        Request::Submit(r) => submit::handle(d, caller, r).await,
        Request::List(r) => list::handle(d, r),
        Request::Cancel(r) => cancel::handle(d, caller, r).await,
        Request::Hold(r) => hold::hold(d, caller, r.ids).await,
        Request::Release(r) => hold::release(d, caller, r.ids).await,
        Request::Update(r) => update::handle(d, caller, r).await,
        Request::ShowJob(r) => show::handle(d, r.id).await,
        Request::Info(_) => info::handle(d),
        Request::Acct(r) => acct::handle(d, r).await,
        Request::ReleaseNodes(r) => release_nodes::handle(d, caller, r).await,
        Request::Reconfigure(_) => {
            if caller.uid != 0 && caller.uid != d.euid {
                return ErrorReply::new(
                    ErrorKind::PermissionDenied,
                    "Access/permission denied: only root or batchd's user may reconfigure",
                )
                .into();
            }
            match reconfigure(d).await {
                Ok(r) => Response::Reconfigured(r).into(),
                Err(e) => e.into(),
            }
        }
    }
}

/// An internal failure (the database) as a reply.
fn internal(e: impl std::fmt::Display) -> Reply {
    ErrorReply::new(ErrorKind::Internal, e.to_string()).into()
}
