//! # esched-launcher
//!
//! A CooRM launcher (Klein & Pérez, *An RMS Architecture for Efficiently Supporting
//! Complex-Moldable Applications*, HPCC 2011, §III-B) for batchd: it opens a session, keeps
//! the session's **view** (one Cluster Availability Profile per pool) up to date from batchd's
//! `changeNotify` frames, sends and updates a **request** (nodes per pool, duration) chosen
//! from that view, and learns its nodes from `startNotify`; `done` frees them.
//!
//! Two ways to drive it:
//! - [`Launcher::run`] with a [`Selector`]: the selection callback is called with each new view
//!   and answers the request to send (or `None` to keep the current one); `run` returns the
//!   start;
//! - the calls themselves ([`Launcher::request`], [`Launcher::next_event`], …) for a launcher
//!   that wants its own loop.
//!
//! The wire protocol is plain (4-byte big-endian length + JSON): docs/coorm.md, "Protocol",
//! describes it for launchers in other languages (examples/coorm/launcher.py is one).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::time::Duration;

pub use batch_proto::{
    CapStep, ChangeType, ClientTraffic, PoolLink, PoolNodes, PoolProperties, SessionEnded,
    SessionFilter, SessionRequest, SessionTraffic, StartNotify,
};
use batch_proto::{
    Client, ClientError, DoneRequest, ErrorKind, ListClustersInfoRequest,
    ListInterClusterInfoRequest, Request, Response, SubscribeRequest,
};

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The connection or the daemon's answer.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The daemon answered something this library does not expect there.
    #[error("unexpected answer to {what}: {got}")]
    Unexpected {
        /// The call.
        what: &'static str,
        /// What came, abridged.
        got: String,
    },
    /// A `request` crossed the job's start: batchd started the previous request before it
    /// read this one (the `startNotify` is on its way; [`Launcher::next_event`] returns it).
    #[error("job {0} started before the request arrived")]
    AlreadyStarted(u64),
    /// The session ended without `done` (killed at its duration, cancelled).
    #[error("the session of job {} ended: {} ({})", .0.job, .0.state, .0.reason)]
    Ended(SessionEnded),
}

/// The session's view: the latest CAP of each subscribed pool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct View {
    /// When batchd computed the latest change, ms since the epoch.
    pub now: u64,
    /// CAP per pool.
    pub pools: BTreeMap<String, Vec<CapStep>>,
}

impl View {
    /// Nodes of `pool` free at `t` (ms since the epoch); 0 for an unknown pool.
    pub fn free_at(&self, pool: &str, t: u64) -> u32 {
        self.pools
            .get(pool)
            .and_then(|cap| {
                cap.iter()
                    .find(|s| s.from <= t && s.to.is_none_or(|to| t < to))
            })
            .map_or(0, |s| s.free)
    }

    /// The least number of nodes of `pool` free all over `[from, from + duration)`.
    pub fn min_free(&self, pool: &str, from: u64, duration: u64) -> u32 {
        let Some(cap) = self.pools.get(pool) else {
            return 0;
        };
        let end = from.saturating_add(duration);
        cap.iter()
            .filter(|s| s.to.is_none_or(|to| to > from) && s.from < end)
            .map(|s| s.free)
            .min()
            .unwrap_or(0)
    }

    /// Every instant where some pool's availability changes (sorted, distinct): the candidate
    /// start times of a request.
    pub fn change_points(&self) -> Vec<u64> {
        let mut t: Vec<u64> = self
            .pools
            .values()
            .flat_map(|c| c.iter().map(|s| s.from))
            .collect();
        t.sort_unstable();
        t.dedup();
        t
    }
}

/// Something that happened to the session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The view changed on these pools (the new CAPs are in [`Launcher::view`]); pool
    /// properties or links changed if [`ChangeType::Info`]/[`ChangeType::Interinfo`] came.
    ViewChanged(Vec<(String, ChangeType)>),
    /// The job started.
    Started(StartNotify),
}

/// A launcher's resource selection (§II): called with each new view before the start.
pub trait Selector {
    /// The request to send for `view`, or `None` to keep the one in force.
    fn select(&mut self, view: &View) -> Option<SessionRequest>;
}

impl<F: FnMut(&View) -> Option<SessionRequest>> Selector for F {
    fn select(&mut self, view: &View) -> Option<SessionRequest> {
        self(view)
    }
}

/// An open session.
#[derive(Debug)]
pub struct Launcher {
    client: Client,
    job: u64,
    pools: Vec<String>,
    view: View,
    /// Pushed frames read while waiting for an answer.
    pushed: VecDeque<Response>,
    /// Bytes of the latest answer [`Launcher::call`] read.
    last_frame_bytes: u64,
}

/// What `done` learnt: the session's traffic as each side counted it (§IV-D's network figure).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DoneReport {
    /// This launcher's count over the whole session (hello and `DoneAck` included).
    pub launcher: ClientTraffic,
    /// batchd's count up to its `DoneAck` (the `done` included, the `DoneAck` not), if the
    /// daemon reports it.
    pub batchd: Option<SessionTraffic>,
    /// The `DoneAck` frame's bytes.
    pub done_ack_bytes: u64,
}

impl DoneReport {
    /// Whether both sides counted the same frames and bytes: batchd received what the
    /// launcher sent, and sent what the launcher received (the `DoneAck` aside, which batchd
    /// counted after answering). `None` without batchd's count.
    pub fn consistent(&self) -> Option<bool> {
        let b = self.batchd?;
        let l = &self.launcher;
        Some(
            b.frames_in == l.frames_sent
                && b.bytes_in == l.bytes_sent
                && b.frames_out + 1 == l.frames_received
                && b.bytes_out + self.done_ack_bytes == l.bytes_received,
        )
    }
}

impl Launcher {
    /// Connects to batchd at `socket` and subscribes with `filter`; the job is queued (its
    /// place is now) and named `name`.
    pub fn subscribe(
        socket: impl AsRef<Path>,
        filter: SessionFilter,
        name: Option<String>,
    ) -> Result<Launcher, Error> {
        let mut client = Client::connect(socket)?;
        client.post(&Request::Subscribe(SubscribeRequest { filter, name }))?;
        let sub = match client.next_frame(Some(Duration::from_secs(60)))? {
            Response::Subscribed(s) => s,
            Response::Error(e) => return Err(ClientError::Daemon(e).into()),
            other => return Err(unexpected("subscribe", &other)),
        };
        Ok(Launcher {
            client,
            job: sub.job,
            pools: sub.pools,
            view: View::default(),
            pushed: VecDeque::new(),
            last_frame_bytes: 0,
        })
    }

    /// The session's job.
    pub fn job(&self) -> u64 {
        self.job
    }

    /// The subscribed pools.
    pub fn pools(&self) -> &[String] {
        &self.pools
    }

    /// The view as the latest `changeNotify` left it.
    pub fn view(&self) -> &View {
        &self.view
    }

    /// Frames and bytes exchanged so far on the session's connection (the hello included).
    pub fn traffic(&self) -> ClientTraffic {
        self.client.traffic()
    }

    /// `listClustersInfo`.
    pub fn clusters_info(&mut self) -> Result<Vec<PoolProperties>, Error> {
        match self.call(
            "listClustersInfo",
            Request::ListClustersInfo(ListClustersInfoRequest {}),
        )? {
            Response::ClustersInfo(c) => Ok(c),
            other => Err(unexpected("listClustersInfo", &other)),
        }
    }

    /// `listInterClusterInfo`.
    pub fn inter_cluster_info(&mut self) -> Result<Vec<PoolLink>, Error> {
        match self.call(
            "listInterClusterInfo",
            Request::ListInterClusterInfo(ListInterClusterInfoRequest {}),
        )? {
            Response::InterClusterInfo(l) => Ok(l),
            other => Err(unexpected("listInterClusterInfo", &other)),
        }
    }

    /// `request`, or its update (the job keeps its place). An update that crosses the start
    /// is [`Error::AlreadyStarted`]: the launcher goes on with the start it is about to get.
    pub fn request(&mut self, r: SessionRequest) -> Result<(), Error> {
        match self.call("request", Request::Request(r)) {
            Ok(Response::Requested { .. }) => Ok(()),
            Ok(other) => Err(unexpected("request", &other)),
            Err(Error::Client(ClientError::Daemon(e))) if e.kind == ErrorKind::InvalidState => {
                Err(Error::AlreadyStarted(self.job))
            }
            Err(e) => Err(e),
        }
    }

    /// `done`: the application has finished (or, before the start, the launcher gives up).
    /// Returns the session's traffic as both sides counted it.
    pub fn done(mut self) -> Result<DoneReport, Error> {
        match self.call("done", Request::Done(DoneRequest {}))? {
            Response::DoneAck { traffic, .. } => Ok(DoneReport {
                launcher: self.client.traffic(),
                batchd: traffic,
                done_ack_bytes: self.last_frame_bytes,
            }),
            other => Err(unexpected("done", &other)),
        }
    }

    /// The next event, waiting at most `timeout` (`None`: for ever). A timeout is
    /// [`ClientError::Timeout`].
    pub fn next_event(&mut self, timeout: Option<Duration>) -> Result<Event, Error> {
        loop {
            let frame = match self.pushed.pop_front() {
                Some(f) => f,
                None => self.client.next_frame(timeout)?,
            };
            if let Some(e) = self.absorb(frame)? {
                return Ok(e);
            }
        }
    }

    /// The next event, as [`Launcher::next_event`] without a timeout, but with every frame
    /// already arrived behind it taken too: the view is then the latest batchd sent, and a
    /// start among them wins. A launcher that selects on each view this way never falls
    /// behind a daemon that sends views faster than it selects.
    pub fn latest_event(&mut self) -> Result<Event, Error> {
        let mut ev = self.next_event(None)?;
        loop {
            if matches!(ev, Event::Started(_)) {
                return Ok(ev);
            }
            if self.pushed.is_empty() && !self.client.input_ready()? {
                return Ok(ev);
            }
            let next = self.next_event(None)?;
            ev = match (ev, next) {
                (Event::ViewChanged(mut a), Event::ViewChanged(b)) => {
                    for (pool, kind) in b {
                        if !a.iter().any(|(p, k)| *p == pool && *k == kind) {
                            a.push((pool, kind));
                        }
                    }
                    Event::ViewChanged(a)
                }
                (_, started) => started,
            };
        }
    }

    /// Follows the view until the start: `selector` chooses a request from the latest view
    /// each time it changed ([`Launcher::latest_event`]); returns the start.
    pub fn run(&mut self, selector: &mut impl Selector) -> Result<StartNotify, Error> {
        loop {
            match self.latest_event()? {
                Event::Started(s) => return Ok(s),
                Event::ViewChanged(_) => {
                    if let Some(r) = selector.select(&self.view) {
                        match self.request(r) {
                            Ok(()) | Err(Error::AlreadyStarted(_)) => {}
                            Err(e) => return Err(e),
                        }
                    }
                }
            }
        }
    }

    /// Sends `req` and waits for its answer, keeping pushed frames for [`Launcher::next_event`].
    fn call(&mut self, what: &'static str, req: Request) -> Result<Response, Error> {
        self.client.post(&req)?;
        loop {
            let before = self.client.traffic().bytes_received;
            let f = self.client.next_frame(Some(Duration::from_secs(60)))?;
            self.last_frame_bytes = self.client.traffic().bytes_received - before;
            match f {
                Response::ChangeNotify(_) | Response::StartNotify(_) => self.pushed.push_back(f),
                Response::SessionEnded(e) => return Err(Error::Ended(e)),
                Response::Error(e) => return Err(ClientError::Daemon(e).into()),
                other => {
                    let _ = what;
                    return Ok(other);
                }
            }
        }
    }

    /// Applies a pushed frame to the view; the event it makes, if any.
    fn absorb(&mut self, frame: Response) -> Result<Option<Event>, Error> {
        match frame {
            Response::ChangeNotify(c) => {
                self.view.now = c.now;
                let mut changed = Vec::new();
                for ch in c.changes {
                    if let Some(cap) = ch.cap {
                        self.view.pools.insert(ch.pool.clone(), cap);
                    }
                    changed.push((ch.pool, ch.kind));
                }
                Ok(Some(Event::ViewChanged(changed)))
            }
            Response::StartNotify(s) => Ok(Some(Event::Started(s))),
            Response::SessionEnded(e) => Err(Error::Ended(e)),
            Response::Error(e) => Err(ClientError::Daemon(e).into()),
            other => Err(unexpected("a pushed frame", &other)),
        }
    }
}

fn unexpected(what: &'static str, got: &Response) -> Error {
    let mut got = format!("{got:?}");
    got.truncate(200);
    Error::Unexpected { what, got }
}

/// The earliest start, on or after `not_before`, at which `nodes` nodes of `pool` stay free
/// for `duration` in `view`; `None` if never (more than the pool ever has).
pub fn earliest_start(
    view: &View,
    wants: &[PoolNodes],
    duration: u64,
    not_before: u64,
) -> Option<u64> {
    view.change_points()
        .into_iter()
        .map(|t| t.max(not_before))
        .find(|&t| {
            wants
                .iter()
                .all(|w| view.min_free(&w.pool, t, duration) >= w.nodes)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> View {
        let mut v = View::default();
        v.pools.insert(
            "a".into(),
            vec![
                CapStep {
                    from: 0,
                    to: Some(100),
                    free: 2,
                },
                CapStep {
                    from: 100,
                    to: None,
                    free: 8,
                },
            ],
        );
        v.pools.insert(
            "b".into(),
            vec![
                CapStep {
                    from: 0,
                    to: Some(50),
                    free: 4,
                },
                CapStep {
                    from: 50,
                    to: Some(300),
                    free: 0,
                },
                CapStep {
                    from: 300,
                    to: None,
                    free: 4,
                },
            ],
        );
        v
    }

    #[test]
    fn views_answer_free_counts_over_intervals() {
        let v = view();
        assert_eq!(v.free_at("a", 99), 2);
        assert_eq!(v.free_at("a", 100), 8);
        assert_eq!(v.free_at("zz", 0), 0);
        assert_eq!(v.min_free("a", 50, 100), 2);
        assert_eq!(v.min_free("a", 100, 1_000_000), 8);
        assert_eq!(v.min_free("b", 0, 50), 4);
        assert_eq!(v.min_free("b", 0, 51), 0);
        assert_eq!(v.change_points(), vec![0, 50, 100, 300]);
    }

    #[test]
    fn earliest_start_needs_every_pool_for_the_whole_duration() {
        let v = view();
        let w = |p: &str, n| PoolNodes {
            pool: p.into(),
            nodes: n,
        };
        assert_eq!(earliest_start(&v, &[w("a", 2)], 10, 0), Some(0));
        assert_eq!(earliest_start(&v, &[w("a", 4)], 10, 0), Some(100));
        assert_eq!(
            earliest_start(&v, &[w("a", 4), w("b", 4)], 10, 0),
            Some(300)
        );
        assert_eq!(earliest_start(&v, &[w("b", 4)], 50, 0), Some(0));
        assert_eq!(earliest_start(&v, &[w("b", 4)], 51, 0), Some(300));
        assert_eq!(earliest_start(&v, &[w("a", 9)], 1, 0), None);
    }
}
