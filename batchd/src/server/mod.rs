//! The API on the Unix socket: one task per connection, one file per verb.
//!
//! A connection starts with the version exchange; then any number of requests follow, each
//! answered in order. A frame that is too large, truncated or not a valid message gets an
//! error reply (when the peer still listens) and the connection is closed; the daemon goes on.
//!
//! No client holds more than `[limits]` allow (docs/batchd.md, "Limits"): a connection waits
//! at most `idle_timeout_ms` for its next request, a request once begun must arrive within
//! `frame_timeout_ms` and so must each reply frame be taken, its buffer grows only with the
//! bytes that came, and listings are produced no faster than the client reads them. Past
//! `max_connections` (or `max_connections_per_user`), a new connection closes the longest-idle
//! one (of that user, for the per-user cap) to make room; if none is idle, one that is reading
//! a request or sending an answer, of the user holding the most connections, if that user
//! holds at least two more than the newcomer's (so no set of users holds the others out by
//! keeping requests half-sent); else it is refused with an error naming the limit. Root and
//! batchd's own user have `reserved_connections` more, which no other user can take. A
//! launcher session is never closed to make room: `max_sessions_per_user` bounds them, and
//! `session_idle_timeout_ms` those that never make a request (`session.rs`).

mod acct;
mod cancel;
mod hold;
mod info;
mod list;
mod reconfigure;
mod release_nodes;
mod request;
mod requeue;
mod session;
mod show;
pub(crate) mod stats;
mod step;
mod submit;
mod update;
mod update_nodes;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use batch_proto::frame::nonblocking::{read_payload_after, write_frame};
use batch_proto::frame::{encode, FrameError};
use batch_proto::SessionTraffic;
use batch_proto::{
    ErrorKind, ErrorReply, Hello, JobInfo, Request, Response, VersionInfo, PROTOCOL_VERSION,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Notify;

use crate::config::LimitsConfig;
use crate::daemon::Daemon;
use crate::logging::quoted;
use crate::sync::lock;

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
    /// Peer pid (SO_PEERCRED), when the system gives it.
    pub pid: Option<i32>,
    /// That process's start time (clock ticks since the boot), read when the connection was
    /// accepted: a later process that reuses the pid is not the peer.
    pub pid_start: Option<u64>,
    /// The host the connection was relayed from (a tool in a job on a pool of hosts), whose
    /// pid and start time these are; `None`: a process of this machine.
    pub via: Option<String>,
    /// Of a relayed connection: the job run the host's agent found the peer to be a process
    /// of.
    pub job: Option<crate::agent::RunId>,
}

impl Caller {
    /// The caller as the owner of the jobs it submits.
    pub fn owner(&self) -> crate::core::Owner<'_> {
        crate::core::Owner {
            uid: self.uid,
            gid: self.gid,
            user: &self.user,
        }
    }

    /// Whether the caller may act on a job owned by `owner`.
    pub fn may_touch(&self, owner: u32) -> bool {
        self.uid == 0 || self.uid == owner
    }
}

/// How long work left for after an answer waits for the client to take the answer.
const AFTER_WAIT: Duration = Duration::from_secs(2);

/// Returns once the client has closed the connection or sent more: a readiness that is only
/// left over from the request read before is not taken for either (a peek says).
async fn client_done(stream: &UnixStream) {
    use std::os::fd::AsRawFd;
    loop {
        if stream.readable().await.is_err() {
            return;
        }
        let mut byte = [0u8; 1];
        let peeked = stream.try_io(tokio::io::Interest::READABLE, || {
            nix::sys::socket::recv(
                stream.as_raw_fd(),
                &mut byte,
                nix::sys::socket::MsgFlags::MSG_PEEK,
            )
            .map_err(std::io::Error::from)
        });
        match peeked {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            _ => return,
        }
    }
}

/// Work a handler leaves for after its answer is sent.
pub type After = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// What a handler answers: one response, or a listing sent in parts.
pub enum Reply {
    /// One frame.
    One(Response),
    /// One frame, then work that must follow the answer: stopping jobs, which may include the
    /// client's own (`econtrol requeue $SLURM_JOB_ID` in a job gets its answer before the
    /// job is stopped, as with Slurm).
    Then(Response, After),
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

/// File descriptors kept for the daemon's own use (database, supervisors' pipes, job files)
/// when the connection cap is fitted to `RLIMIT_NOFILE`.
const RESERVED_FDS: u64 = 128;

/// The connection caps in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// Connections of all users but root and batchd's own.
    pub total: u32,
    /// Connections of one uid.
    pub per_user: u32,
    /// Connections beyond `total` for root and batchd's own user.
    pub reserved: u32,
    /// Launcher sessions of one uid.
    pub sessions_per_user: u32,
}

/// The connection caps in force: the configured ones, the total lowered to what the soft
/// `RLIMIT_NOFILE` (`nofile`) leaves after [`RESERVED_FDS`] and the reserved connections, so
/// that accepting never runs out of descriptors.
pub fn effective_caps(limits: &LimitsConfig, nofile: u64) -> Caps {
    let reserved = u64::from(limits.reserved_connections);
    let fit = nofile
        .saturating_sub(RESERVED_FDS)
        .saturating_sub(reserved)
        .max(16);
    let total = u64::from(limits.max_connections).min(fit) as u32;
    Caps {
        total,
        per_user: limits.max_connections_per_user.min(total),
        reserved: limits.reserved_connections,
        sessions_per_user: limits.max_sessions_per_user,
    }
}

/// What a connection is doing, as the caps see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for its next request since then: the first closed to make room.
    Idle(Instant),
    /// Reading a request or sending its answer since then: closed to make room for a user
    /// who holds fewer connections.
    Busy(Instant),
    /// Its request being handled: never closed (the handler may be changing the state).
    Handling,
    /// A launcher session: never closed to make room.
    Session,
}

/// An open connection, as the caps see it.
struct Conn {
    uid: u32,
    /// Its socket, open while it is registered ([`Link`] drops its slot before its stream).
    fd: std::os::fd::RawFd,
    phase: Phase,
    /// Root's or batchd's own user's: may use the reserved connections, never closed but
    /// when idle.
    privileged: bool,
    /// Told to close, to make room.
    evict: Arc<Notify>,
}

/// The open connections.
#[derive(Default)]
struct Registry {
    next: u64,
    open: HashMap<u64, Conn>,
    per_uid: HashMap<u32, u32>,
    sessions_per_uid: HashMap<u32, u32>,
}

/// Takes one from the count of `uid` in `counts`, forgetting it at zero.
fn decrement(counts: &mut HashMap<u32, u32>, uid: u32) {
    if let Some(n) = counts.get_mut(&uid) {
        *n -= 1;
        if *n == 0 {
            counts.remove(&uid);
        }
    }
}

impl Registry {
    fn remove(&mut self, id: u64) -> Option<Conn> {
        let c = self.open.remove(&id)?;
        decrement(&mut self.per_uid, c.uid);
        if c.phase == Phase::Session {
            decrement(&mut self.sessions_per_uid, c.uid);
        }
        Some(c)
    }

    /// Closes the given connection to make room.
    fn evict(&mut self, id: u64) -> bool {
        match self.remove(id) {
            Some(c) => {
                c.evict.notify_one();
                true
            }
            None => false,
        }
    }

    /// Closes the longest-idle connection (of `uid` if given) with nothing waiting to be read:
    /// a tool's fresh connection, its hello queued but not yet read, is not idle. False when
    /// there is none.
    fn evict_idle(&mut self, uid: Option<u32>) -> bool {
        let oldest = self
            .open
            .iter()
            .filter(|(_, c)| uid.is_none_or(|u| c.uid == u))
            .filter_map(|(&id, c)| match c.phase {
                Phase::Idle(since) => Some((since, id, c.fd)),
                _ => None,
            })
            .filter(|&(_, _, fd)| !has_pending(fd))
            .map(|(since, id, _)| (since, id))
            .min();
        oldest.is_some_and(|(_, id)| self.evict(id))
    }

    /// Closes the longest-busy connection (reading a request or sending an answer) of the
    /// user holding the most connections, if that user holds at least two more than `mine`,
    /// the newcomer's user's: a user who keeps many requests half-sent makes room for one who
    /// holds fewer, and the newcomer's user never ends up holding more than the one it took
    /// from. Root's and batchd's own connections are not taken. False when there is none.
    fn evict_busy(&mut self, mine: u32) -> bool {
        let mut busy: HashMap<u32, (Instant, u64)> = HashMap::new();
        for (&id, c) in &self.open {
            if let (Phase::Busy(since), false) = (c.phase, c.privileged) {
                let e = busy.entry(c.uid).or_insert((since, id));
                *e = (*e).min((since, id));
            }
        }
        let heaviest = busy
            .iter()
            .map(|(uid, &(_, id))| (self.per_uid.get(uid).copied().unwrap_or(0), *uid, id))
            .filter(|&(n, _, _)| n >= mine.saturating_add(2))
            .max();
        heaviest.is_some_and(|(_, _, id)| self.evict(id))
    }

    /// Admits a connection of `uid` under the caps, closing another if need be.
    fn admit(
        &mut self,
        uid: u32,
        fd: std::os::fd::RawFd,
        privileged: bool,
        caps: Caps,
    ) -> Result<(u64, Arc<Notify>), String> {
        let mine = self.per_uid.get(&uid).copied().unwrap_or(0);
        if mine >= caps.per_user && !self.evict_idle(Some(uid)) {
            return Err(format!(
                "batchd already serves {mine} connections of uid {uid}, its limit \
                 (limits.max_connections_per_user), none of them idle; try again later"
            ));
        }
        let total = u64::from(caps.total)
            + if privileged {
                u64::from(caps.reserved)
            } else {
                0
            };
        if self.open.len() as u64 >= total && !self.evict_idle(None) && !self.evict_busy(mine) {
            return Err(format!(
                "batchd already serves {} connections, its limit (limits.max_connections), \
                 none of them idle, and no user holds two more than uid {uid}; try again later",
                self.open.len()
            ));
        }
        let id = self.next;
        self.next += 1;
        let evict = Arc::new(Notify::new());
        self.open.insert(
            id,
            Conn {
                uid,
                fd,
                phase: Phase::Idle(Instant::now()),
                privileged,
                evict: Arc::clone(&evict),
            },
        );
        *self.per_uid.entry(uid).or_default() += 1;
        Ok((id, evict))
    }

    /// Makes connection `id` a launcher session, within `cap` sessions of its user.
    fn open_session(&mut self, id: u64, cap: u32) -> Result<(), String> {
        let Some(c) = self.open.get_mut(&id) else {
            return Err("the connection is closing".into());
        };
        if c.phase == Phase::Session {
            return Ok(());
        }
        let n = self.sessions_per_uid.entry(c.uid).or_default();
        if *n >= cap {
            return Err(format!(
                "uid {} already has {n} launcher sessions open, its limit \
                 (limits.max_sessions_per_user); end one (`done`) first",
                c.uid
            ));
        }
        *n += 1;
        c.phase = Phase::Session;
        Ok(())
    }
}

/// Whether bytes wait to be read on socket `fd` (a peek that does not block).
fn has_pending(fd: std::os::fd::RawFd) -> bool {
    use nix::sys::socket::{recv, MsgFlags};
    let mut byte = [0u8; 1];
    matches!(
        recv(fd, &mut byte, MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT),
        Ok(n) if n > 0
    )
}

/// A connection's place under the caps, given back when it closes.
struct Slot {
    registry: Arc<Mutex<Registry>>,
    id: u64,
    evict: Arc<Notify>,
}

impl Slot {
    /// Records what the connection does now (a session stays one); false when it is no
    /// longer registered (closed to make room).
    fn set(&self, phase: Phase) -> bool {
        match lock(&self.registry).open.get_mut(&self.id) {
            Some(c) => {
                if c.phase != Phase::Session {
                    c.phase = phase;
                }
                true
            }
            None => false,
        }
    }

    /// Makes the connection a launcher session, within `cap` sessions of its user.
    fn open_session(&self, cap: u32) -> Result<(), String> {
        lock(&self.registry).open_session(self.id, cap)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.registry).remove(self.id);
    }
}

/// One connection's side of the limits. The slot is declared (so dropped) first: while a
/// connection is registered, its descriptor is open.
struct Link {
    slot: Slot,
    stream: UnixStream,
    uid: u32,
    idle: Duration,
    frame: Duration,
    /// Frames read whole and sent whole on this connection (a launcher session reports them
    /// in its `DoneAck`, docs/coorm.md).
    traffic: SessionTraffic,
}

/// Accepts connections until the task is dropped; `nofile` is the soft `RLIMIT_NOFILE`.
pub async fn serve(d: Arc<Daemon>, listener: UnixListener, nofile: u64) {
    let registry = Arc::new(Mutex::new(Registry::default()));
    let mut relayed = d.take_relayed();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(connection(
                        Arc::clone(&d),
                        Arc::clone(&registry),
                        stream,
                        nofile,
                        None,
                    ));
                }
                Err(e) => {
                    // Out of file descriptors, typically: wait instead of spinning.
                    tracing::warn!("accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            // A connection from a host's socket, its peer as the host's agent gives it.
            Some(r) = async { relayed.as_mut()?.recv().await } => {
                let peer = Caller {
                    uid: r.uid,
                    gid: r.gid,
                    user: d.user_name(r.uid),
                    pid: r.pid.map(|p| p.0),
                    pid_start: r.pid.map(|p| p.1),
                    via: Some(r.host),
                    job: r.job,
                };
                let stream = r
                    .stream
                    .set_nonblocking(true)
                    .and_then(|()| UnixStream::from_std(r.stream));
                match stream {
                    Ok(stream) => {
                        tokio::spawn(connection(
                            Arc::clone(&d),
                            Arc::clone(&registry),
                            stream,
                            nofile,
                            Some(peer),
                        ));
                    }
                    Err(e) => tracing::warn!("a relayed connection: {e}"),
                }
            }
        }
    }
}

impl Link {
    /// Sends one frame, giving the client `frame` to take it.
    async fn send(&mut self, r: &Response) -> bool {
        let buf = match encode(r) {
            Ok(b) => b,
            Err(e) => {
                tracing::error!("cannot encode a reply: {e}");
                return false;
            }
        };
        let len = buf.len() as u64;
        let stream = &mut self.stream;
        let write = async move {
            stream.write_all(&buf).await?;
            stream.flush().await
        };
        match tokio::time::timeout(self.frame, write).await {
            Ok(Ok(())) => {
                self.traffic.frames_out += 1;
                self.traffic.bytes_out += len;
                true
            }
            Ok(Err(e)) => {
                tracing::debug!("writing a reply: {e}");
                false
            }
            Err(_) => {
                tracing::info!(
                    uid = self.uid,
                    "a client did not take a reply within {:?}; closing its connection",
                    self.frame
                );
                false
            }
        }
    }

    /// Reads the next request within the protocol's bounds, answering those over a bound with
    /// their refusal; `None` ends the connection (after an error reply if one is due).
    async fn next_request(&mut self) -> Option<Request> {
        loop {
            match request::decode_checked(self.next_payload().await?).await {
                request::Decoded::Request(r) => {
                    self.slot.set(Phase::Handling);
                    return Some(r);
                }
                request::Decoded::Refused(e) => {
                    tracing::debug!(uid = self.uid, error = %quoted(&e.message), "request refused");
                    if !self.send(&Response::Error(e)).await {
                        return None;
                    }
                }
                request::Decoded::Malformed(e) => {
                    // serde's message quotes the client's text (`unknown variant …`).
                    tracing::warn!(uid = self.uid, error = %quoted(&e), "malformed request");
                    self.refuse(e).await;
                    return None;
                }
            }
        }
    }

    /// Reads the next request's payload; `None` ends the connection (after an error reply if
    /// one is due). Waits `idle` for its first byte, then `frame` for the rest.
    async fn next_payload(&mut self) -> Option<Vec<u8>> {
        self.slot.set(Phase::Idle(Instant::now()));
        let mut first = [0u8; 1];
        let evict = Arc::clone(&self.slot.evict);
        let got = tokio::select! {
            r = self.stream.read(&mut first) => r,
            () = evict.notified() => {
                tracing::debug!(uid = self.uid, "closing an idle connection to make room");
                return None;
            }
            () = tokio::time::sleep(self.idle) => {
                tracing::debug!(uid = self.uid, "closing a connection idle for {:?}", self.idle);
                return None;
            }
        };
        self.slot.set(Phase::Busy(Instant::now()));
        match got {
            Ok(0) => return None,
            Ok(_) => {}
            Err(e) => {
                tracing::debug!("reading a request: {e}");
                return None;
            }
        }
        let read = tokio::select! {
            r = tokio::time::timeout(self.frame, read_payload_after(&mut self.stream, &first)) => r,
            () = evict.notified() => {
                tracing::debug!(uid = self.uid, "closing a connection inside a request to make room");
                return None;
            }
        };
        let payload = match read {
            Ok(Ok(p)) => {
                self.count_in(&p);
                // Read whole: from here the request is handled (its decoding, on a blocking
                // thread for a large one, included), never cut off to make room; one chosen
                // for that in the instant before is dropped unhandled, having changed nothing.
                if !self.slot.set(Phase::Handling) {
                    tracing::debug!(uid = self.uid, "closing a connection to make room");
                    return None;
                }
                p
            }
            Ok(Err(FrameError::Closed)) => return None,
            Ok(Err(e)) => {
                tracing::warn!(uid = self.uid, error = %quoted(&e.to_string()), "bad frame from a client");
                self.refuse(e.to_string()).await;
                return None;
            }
            Err(_) => {
                let e = format!("a request must arrive whole within {:?}", self.frame);
                tracing::warn!(uid = self.uid, "{e}; closing the connection");
                self.refuse(e).await;
                return None;
            }
        };
        Some(payload)
    }

    /// Counts a frame read whole, of payload `p`.
    fn count_in(&mut self, p: &[u8]) {
        self.traffic.frames_in += 1;
        self.traffic.bytes_in += (batch_proto::frame::HEADER_LEN + p.len()) as u64;
    }

    async fn refuse(&mut self, message: String) {
        let _ = self
            .send(&Response::Error(ErrorReply::new(
                ErrorKind::BadRequest,
                message,
            )))
            .await;
    }
}

/// Answers a connection over the caps with the error, at once: the client reads it even if its
/// hello finds the connection closed (see `batch_proto::Client`).
async fn turn_away(mut stream: UnixStream, uid: u32, message: String, frame: Duration) {
    tracing::warn!(uid, "connection refused: {message}");
    let reply = Response::Error(ErrorReply::new(ErrorKind::Internal, message));
    let wait = frame.min(Duration::from_millis(100));
    let _ = tokio::time::timeout(wait, write_frame(&mut stream, &reply)).await;
}

async fn connection(
    d: Arc<Daemon>,
    registry: Arc<Mutex<Registry>>,
    stream: UnixStream,
    nofile: u64,
    relayed: Option<Caller>,
) {
    let caller = match (relayed, stream.peer_cred()) {
        (Some(peer), _) => peer,
        (None, Ok(c)) => {
            let uid = c.uid();
            let user = d.user_name(uid);
            Caller {
                uid,
                gid: c.gid(),
                user,
                pid: c.pid(),
                pid_start: c.pid().and_then(crate::procs::stat).map(|s| s.start),
                via: None,
                job: None,
            }
        }
        (None, Err(e)) => {
            tracing::warn!("cannot identify a client: {e}");
            return;
        }
    };
    let _counted = d.stats.connection();
    let limits = d.settings().config.limits;
    let frame = Duration::from_millis(limits.frame_timeout_ms);
    let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
    let privileged = caller.uid == 0 || caller.uid == d.euid;
    let admitted =
        lock(&registry).admit(caller.uid, fd, privileged, effective_caps(&limits, nofile));
    let (id, evict) = match admitted {
        Ok(a) => a,
        Err(message) => return turn_away(stream, caller.uid, message, frame).await,
    };
    let mut link = Link {
        slot: Slot {
            registry,
            id,
            evict,
        },
        stream,
        uid: caller.uid,
        idle: Duration::from_millis(limits.idle_timeout_ms),
        frame,
        traffic: SessionTraffic::default(),
    };
    match link.next_request().await {
        Some(Request::Hello(h)) if h.proto_version == PROTOCOL_VERSION => {
            if !link.send(&Response::Hello(Hello::current())).await {
                return;
            }
        }
        Some(Request::Hello(h)) => {
            let e = ErrorReply::version_mismatch(h.proto_version, PROTOCOL_VERSION);
            tracing::warn!(uid = caller.uid, client = %quoted(&h.software_version), "{e}");
            let _ = link.send(&Response::Error(e)).await;
            return;
        }
        Some(other) => {
            let e = ErrorReply::new(
                ErrorKind::BadRequest,
                format!("expected a hello first, got `{}`", other.verb()),
            );
            let _ = link.send(&Response::Error(e)).await;
            return;
        }
        None => return,
    }
    while let Some(req) = link.next_request().await {
        if let Request::Subscribe(s) = req {
            return session::run(&d, &caller, &mut link, s).await;
        }
        // A step's part on another host: the connection carries its output until its end.
        if let Request::StepPart(r) = req {
            return step::part(&d, &caller, &mut link, r).await;
        }
        let verb = req.verb();
        tracing::debug!(uid = caller.uid, verb, "request");
        let began = Instant::now();
        let reply = dispatch(&d, &caller, req).await;
        let handled = began.elapsed();
        link.slot.set(Phase::Busy(Instant::now()));
        let evict = Arc::clone(&link.slot.evict);
        let (reply, after) = match reply {
            Reply::Then(r, after) => (Reply::One(r), Some(after)),
            other => (other, None),
        };
        let sent = async {
            match reply {
                Reply::One(r) | Reply::Then(r, _) => link.send(&r).await,
                Reply::Jobs(jobs) => list::send(&mut link.stream, &jobs, link.frame).await,
                Reply::Listing(frames) => {
                    list::send_frames(&mut link.stream, frames, link.frame).await
                }
            }
        };
        // An answer ready to go is sent before any eviction is heeded: a stored submission
        // keeps its id.
        let ok = tokio::select! {
            biased;
            ok = sent => ok,
            () = evict.notified() => {
                tracing::debug!(uid = caller.uid, verb, "closing a connection inside an answer to make room");
                false
            }
        };
        tracing::debug!(verb, ?handled, total = ?began.elapsed(), "answered");
        if let Some(after) = after {
            // The client reads its answer before the stop: the work waits until the client is
            // done with it (it closes the connection, or sends its next request), at most
            // `AFTER_WAIT`, since the client may be one of the processes stopped.
            let _ = tokio::time::timeout(AFTER_WAIT, client_done(&link.stream)).await;
            after.await;
        }
        if !ok {
            return;
        }
    }
}

async fn dispatch(d: &Arc<Daemon>, caller: &Caller, req: Request) -> Reply {
    let verb = req.verb();
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
        Request::Unhold(r) => hold::unhold(d, caller, r.ids).await,
        Request::Update(r) => update::handle(d, caller, r).await,
        Request::ShowJob(r) => show::handle(d, r.id).await,
        Request::Info(_) => info::handle(d),
        Request::Acct(r) => acct::handle(d, r).await,
        Request::ReleaseNodes(r) => release_nodes::handle(d, caller, r).await,
        Request::View(r) => session::view(d, r),
        Request::Requeue(r) => requeue::handle(d, caller, r).await,
        Request::Stats(_) => stats::handle(d),
        Request::StepStart(r) => step::start(d, caller, r).await,
        Request::StepEnd(r) => step::end(d, caller, r).await,
        Request::UpdateNodes(r) => update_nodes::handle(d, caller, r).await,
        Request::StepPartSignal(r) => step::part_signal(d, caller, r),
        Request::Snapshot(r) => {
            crate::snapshot::handle(d, (caller.uid, caller.gid, &caller.user), r).into()
        }
        Request::StepPart(_) => ErrorReply::new(
            ErrorKind::BadRequest,
            "`step-part` takes a connection of its own",
        )
        .into(),
        Request::Subscribe(_)
        | Request::ListClustersInfo(_)
        | Request::ListInterClusterInfo(_)
        | Request::Request(_)
        | Request::Done(_) => ErrorReply::new(
            ErrorKind::BadRequest,
            format!("`{verb}` belongs to a launcher session: subscribe first"),
        )
        .into(),
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

#[cfg(test)]
mod tests {
    use super::*;

    const CAPS: Caps = Caps {
        total: 6,
        per_user: 6,
        reserved: 2,
        sessions_per_user: 2,
    };

    /// Admits a connection of `uid` (no socket: nothing is ever waiting to be read on it).
    fn admit(r: &mut Registry, uid: u32) -> Result<u64, String> {
        r.admit(uid, -1, uid == 0, CAPS).map(|(id, _)| id)
    }

    fn count(r: &Registry, uid: u32) -> u32 {
        r.per_uid.get(&uid).copied().unwrap_or(0)
    }

    #[test]
    fn a_full_daemon_takes_from_the_user_holding_the_most_never_below_the_newcomer() {
        let mut r = Registry::default();
        let busy = |r: &mut Registry, id: u64| {
            r.open.get_mut(&id).unwrap().phase = Phase::Busy(Instant::now());
        };
        for uid in [1, 1, 1, 1, 2, 2] {
            let id = admit(&mut r, uid).unwrap();
            busy(&mut r, id);
        }
        // A newcomer with none takes one of uid 1's (4 ≥ 0 + 2).
        let id = admit(&mut r, 3).unwrap();
        busy(&mut r, id);
        assert_eq!((count(&r, 1), count(&r, 2), count(&r, 3)), (3, 2, 1));
        // uid 3 again (holding 1): uid 1 holds 3 = 1 + 2.
        let id = admit(&mut r, 3).unwrap();
        busy(&mut r, id);
        assert_eq!((count(&r, 1), count(&r, 3)), (2, 2));
        // Now everyone holds 2: a newcomer of any of them is refused, naming the limit; one
        // with none still gets in.
        for uid in [1, 2, 3] {
            let e = admit(&mut r, uid).unwrap_err();
            assert!(
                e.contains("limits.max_connections") && e.contains("no user holds two more"),
                "{e}"
            );
        }
        let id = admit(&mut r, 4).unwrap();
        busy(&mut r, id);
        assert_eq!(r.open.len(), 6);
        // Root has its reserved connections, and takes nothing to use them.
        admit(&mut r, 0).unwrap();
        admit(&mut r, 0).unwrap();
        assert_eq!(r.open.len(), 8);
        // Connections whose request is being handled, and sessions, are never taken.
        for (i, c) in r.open.values_mut().enumerate() {
            c.phase = if i % 2 == 0 {
                Phase::Handling
            } else {
                Phase::Session
            };
        }
        assert!(!r.evict_busy(0));
    }

    #[test]
    fn sessions_are_counted_per_user_and_given_back() {
        let mut r = Registry::default();
        let ids: Vec<u64> = (0..3).map(|_| admit(&mut r, 5).unwrap()).collect();
        r.open_session(ids[0], 2).unwrap();
        r.open_session(ids[1], 2).unwrap();
        let e = r.open_session(ids[2], 2).unwrap_err();
        assert!(e.contains("limits.max_sessions_per_user"), "{e}");
        // Sessions are not closed to make room: the one idle connection is, then none.
        assert!(r.evict_idle(Some(5)));
        assert!(!r.open.contains_key(&ids[2]));
        assert!(!r.evict_idle(Some(5)));
        r.remove(ids[0]);
        let id = admit(&mut r, 5).unwrap();
        r.open_session(id, 2).unwrap();
        assert_eq!(r.sessions_per_uid.get(&5), Some(&2));
        r.remove(ids[1]);
        r.remove(id);
        assert!(r.sessions_per_uid.is_empty() && r.per_uid.is_empty());
    }
}
