//! A CooRM launcher session on one connection (Klein & Pérez, HPCC 2011, §III-B; the
//! protocol is in docs/coorm.md): `subscribe` turns the connection into a session whose job is
//! queued at once; the launcher's `listClustersInfo`, `listInterClusterInfo`, `request` and
//! `done` are answered in order, and `changeNotify`, `startNotify` and `sessionEnded` frames
//! are pushed between the answers, through an outbox that keeps only the newest view of a
//! launcher that reads slowly (`crate::sessions::Outbox`).
//!
//! A user has at most `[limits] max_sessions_per_user` sessions open. A session that has made
//! no `request` within `[limits] session_idle_timeout_ms` of its `subscribe` holds a
//! connection for nothing: it is closed and its job cancelled. Once it has made one it is
//! never closed for being idle: a launcher may wait hours for its start.
//!
//! A launcher that disconnects before its start loses its job (CANCELLED); one that
//! disconnects after its start leaves the job running until its `done`-less end, its
//! duration, like a batch job whose submitter logged out.

use std::sync::Arc;
use std::time::Duration;

use batch_proto::frame::nonblocking::read_payload_after;
use batch_proto::{
    ErrorKind, ErrorReply, JobShape, JobSpec, JobState, Request, Response, SessionEnded,
    SessionRequest, SessionTraffic, SubscribeRequest, Subscribed, ViewReply, ViewRequest,
};
use tokio::io::AsyncReadExt;

use super::{Caller, Link, Reply};
use crate::core::Active;
use crate::daemon::Daemon;
use crate::launch::now_ms;
use crate::sessions::Outbox;

/// What a session's job runs: nothing of batchd's (shown by `econtrol show`).
const SESSION_SCRIPT: &str =
    "# CooRM launcher session: batchd runs no script; the launcher deploys its application\n";

/// Serves the session opened by `req` until the launcher leaves or its job ends.
pub(super) async fn run(d: &Arc<Daemon>, caller: &Caller, link: &mut Link, req: SubscribeRequest) {
    let config = d.settings().config;
    if let Err(e) = link.slot.open_session(config.limits.max_sessions_per_user) {
        tracing::info!(uid = caller.uid, "subscribe refused: {e}");
        let _ = link
            .send(&Response::Error(ErrorReply::new(ErrorKind::Internal, e)))
            .await;
        return;
    }
    let pools = match crate::coorm::filter_pools(&config, &req.filter) {
        Ok(p) => p,
        Err(e) => {
            let _ = link
                .send(&Response::Error(ErrorReply::new(ErrorKind::InvalidSpec, e)))
                .await;
            return;
        }
    };
    let mut spec = JobSpec::new(SESSION_SCRIPT, "/", 0, 0);
    spec.name = req.name.unwrap_or_else(|| "launcher".into());
    spec.shape = JobShape::Session {
        pools: Vec::new(),
        time_limit: 0,
    };
    if let Err(e) = spec.validate() {
        let _ = link
            .send(&Response::Error(ErrorReply::new(
                ErrorKind::InvalidSpec,
                e.to_string(),
            )))
            .await;
        return;
    }
    let recs = d.core().submitted_records(caller.owner(), spec, now_ms());
    // A session's spec is no array: one record.
    let Some(rec) = recs.into_iter().next() else {
        let _ = link
            .send(&Response::Error(ErrorReply::new(
                ErrorKind::Internal,
                "a session's submission made no job",
            )))
            .await;
        return;
    };
    let id = rec.id;
    if let Err(e) = d.store.commit(rec.clone()).await {
        tracing::error!(job = id, "session's job not stored: {e}");
        let _ = link
            .send(&Response::Error(ErrorReply::new(
                ErrorKind::Internal,
                e.to_string(),
            )))
            .await;
        return;
    }
    let outbox = Arc::new(Outbox::default());
    d.sessions.open(id, pools.clone(), Arc::clone(&outbox));
    d.core().insert(Active { rec, run: None });
    let names = crate::coorm::pool_properties(&config, &pools)
        .into_iter()
        .map(|p| p.pool)
        .collect();
    tracing::info!(job = id, uid = caller.uid, "launcher session subscribed");
    let ok = link
        .send(&Response::Subscribed(Subscribed {
            job: id,
            pools: names,
        }))
        .await;
    d.reschedule();
    if ok {
        serve(d, caller, link, id, &pools, &outbox).await;
    }
    d.sessions.close(id);
    let t = link.traffic;
    tracing::info!(
        job = id,
        frames_in = t.frames_in,
        bytes_in = t.bytes_in,
        frames_out = t.frames_out,
        bytes_out = t.bytes_out,
        "launcher session closed"
    );
    let pending = d
        .core()
        .jobs()
        .get(&id)
        .is_some_and(|a| a.rec.state == JobState::Pending);
    if pending {
        tracing::info!(
            job = id,
            "launcher disconnected before its start; its job is cancelled"
        );
        let why = Some("its launcher disconnected before the start".to_string());
        if let Err(e) = d.end_pending(id, JobState::Cancelled, why).await {
            tracing::error!(job = id, "cannot store the end of the session's job: {e}");
        }
        d.reschedule();
    }
}

/// The session's loop: pushes and requests, until either side ends it.
async fn serve(
    d: &Arc<Daemon>,
    caller: &Caller,
    link: &mut Link,
    id: u64,
    pools: &[usize],
    outbox: &Outbox,
) {
    let idle = Duration::from_millis(d.settings().config.limits.session_idle_timeout_ms);
    let no_request_by = tokio::time::Instant::now() + idle;
    let mut requested = false;
    loop {
        let mut first = [0u8; 1];
        let got = tokio::select! {
            () = outbox.wait() => {
                while let Some(push) = outbox.take() {
                    let last = matches!(push, Response::SessionEnded(_));
                    if !link.send(&push).await || last {
                        return;
                    }
                }
                continue;
            }
            () = tokio::time::sleep_until(no_request_by), if !requested => {
                return idle_end(d, link, id, idle).await;
            }
            r = link.stream.read(&mut first) => r,
        };
        match got {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(job = id, "reading from a launcher: {e}");
                return;
            }
        }
        let read = tokio::time::timeout(link.frame, read_payload_after(&mut link.stream, &first));
        let payload = match read.await {
            Ok(Ok(p)) => {
                link.count_in(&p);
                p
            }
            Ok(Err(e)) => {
                link.refuse(e.to_string()).await;
                return;
            }
            Err(_) => {
                link.refuse(format!(
                    "a request must arrive whole within {:?}",
                    link.frame
                ))
                .await;
                return;
            }
        };
        let req = match super::request::decode_checked(payload).await {
            super::request::Decoded::Request(r) => r,
            super::request::Decoded::Refused(e) => {
                if !link.send(&Response::Error(e)).await {
                    return;
                }
                continue;
            }
            super::request::Decoded::Malformed(e) => {
                link.refuse(e).await;
                return;
            }
        };
        let config = d.settings().config;
        let (reply, last) = match req {
            Request::ListClustersInfo(_) => (
                Response::ClustersInfo(crate::coorm::pool_properties(&config, pools)).into(),
                false,
            ),
            Request::ListInterClusterInfo(_) => (
                Response::InterClusterInfo(crate::coorm::pool_links(&config, pools)).into(),
                false,
            ),
            Request::Request(r) => {
                let reply = request(d, id, pools, r).await;
                requested |= matches!(reply, Reply::One(Response::Requested { .. }));
                (reply, false)
            }
            Request::Done(_) => done(d, id, link.traffic).await,
            Request::Subscribe(_) => (
                ErrorReply::new(
                    ErrorKind::BadRequest,
                    "this connection is already a session",
                )
                .into(),
                false,
            ),
            other => (super::dispatch(d, caller, other).await, false),
        };
        let ok = match reply {
            Reply::One(r) => link.send(&r).await,
            Reply::Then(r, after) => {
                let ok = link.send(&r).await;
                after.await;
                ok
            }
            Reply::Jobs(jobs) => super::list::send(&mut link.stream, &jobs, link.frame).await,
            Reply::Listing(f) => super::list::send_frames(&mut link.stream, f, link.frame).await,
        };
        if !ok || last {
            return;
        }
    }
}

/// Ends session `id`, which made no request within `idle` of its subscribe: its job is
/// cancelled and the launcher told why.
async fn idle_end(d: &Arc<Daemon>, link: &mut Link, id: u64, idle: Duration) {
    let reason = format!(
        "no request within {} ms of the subscribe (limits.session_idle_timeout_ms)",
        idle.as_millis()
    );
    tracing::info!(job = id, "launcher session closed: {reason}");
    if let Err(e) = d
        .end_pending(id, JobState::Cancelled, Some(reason.clone()))
        .await
    {
        tracing::error!(job = id, "cannot store the end of the session's job: {e}");
    }
    d.reschedule();
    let _ = link
        .send(&Response::SessionEnded(SessionEnded {
            job: id,
            state: JobState::Cancelled.name().to_string(),
            reason,
        }))
        .await;
}

/// `request` or its update: recorded on the session's job, which keeps its queue place
/// (its id, given at subscribe). Never refused for its size (§III-A): a request larger than
/// the platform just never starts.
async fn request(d: &Arc<Daemon>, id: u64, pools: &[usize], r: SessionRequest) -> Reply {
    let config = d.settings().config;
    let subscribed: Vec<&str> = pools
        .iter()
        .filter_map(|&i| config.pools.get(i))
        .map(|p| p.name.as_str())
        .collect();
    if r.pools.is_empty() {
        return ErrorReply::new(ErrorKind::InvalidSpec, "a request names at least one pool").into();
    }
    if let Some(p) = r
        .pools
        .iter()
        .find(|p| !subscribed.contains(&p.pool.as_str()))
    {
        return ErrorReply::new(
            ErrorKind::InvalidSpec,
            format!(
                "pool `{}` is not one of the session's ({})",
                p.pool,
                subscribed.join(", ")
            ),
        )
        .into();
    }
    let max_time = r
        .pools
        .iter()
        .filter_map(|p| config.max_time(Some(&p.pool)))
        .min();
    let shape = JobShape::Session {
        pools: r.pools,
        time_limit: r.duration_ms,
    };
    let updated = {
        let mut core = d.core();
        match core.job(id).map(|a| a.rec.state) {
            Some(JobState::Pending) => {}
            Some(_) => {
                return ErrorReply::new(
                    ErrorKind::InvalidState,
                    format!("job {id} has started: a request may change only before the start"),
                )
                .into()
            }
            None => return ErrorReply::invalid_job(id).into(),
        }
        let mut spec = core.jobs()[&id].rec.spec.clone();
        spec.shape = shape;
        if let Err(e) = spec.check(now_ms(), max_time) {
            return ErrorReply::new(ErrorKind::InvalidSpec, e.to_string()).into();
        }
        core.replace_spec(id, spec)
    };
    let Some(rec) = updated else {
        return ErrorReply::invalid_job(id).into();
    };
    if let Err(e) = d.store.commit(rec).await {
        return super::internal(e);
    }
    d.reschedule();
    Response::Requested { job: id }.into()
}

/// `done`: before the start it withdraws the job; after, it frees the nodes once the
/// fair-start delay has passed. Either way the session ends.
async fn done(d: &Arc<Daemon>, id: u64, traffic: SessionTraffic) -> (Reply, bool) {
    let state = d.core().job(id).map(|a| a.rec.state);
    match state {
        Some(JobState::Pending) => {
            let why = Some("withdrawn by its launcher (`done` before its start)".to_string());
            if let Err(e) = d.end_pending(id, JobState::Cancelled, why).await {
                return (super::internal(e), true);
            }
            d.reschedule();
        }
        Some(JobState::Running) => {
            crate::coorm::done_running(d, id, d.settings().config.coorm.fair_start_ms);
        }
        _ => {}
    }
    let reply = Response::DoneAck {
        job: id,
        traffic: Some(traffic),
    };
    (reply.into(), true)
}

/// `view` (`eview`): the job's view from the latest policy run.
pub(super) fn view(d: &Daemon, r: ViewRequest) -> Reply {
    let core = d.core();
    let Some(a) = core.job(r.job) else {
        return match core.state_of(r.job) {
            Some(s) => ErrorReply::new(
                ErrorKind::InvalidState,
                format!(
                    "job {} has ended ({s}): views exist only while a job waits",
                    r.job
                ),
            )
            .into(),
            None => ErrorReply::invalid_job(r.job).into(),
        };
    };
    if a.rec.state != JobState::Pending {
        return ErrorReply::new(
            ErrorKind::InvalidState,
            format!(
                "job {} is {}: views exist only while a job waits",
                r.job, a.rec.state
            ),
        )
        .into();
    }
    // A launcher's job: the view it was sent. Any other: computed now from the latest plan.
    let view = core
        .view_of(r.job)
        .cloned()
        .or_else(|| crate::core::coorm::planned_view(&core, r.job));
    match view {
        Some(v) => Response::View(ViewReply {
            job: r.job,
            now: v.now,
            pools: v.pools,
        })
        .into(),
        None => ErrorReply::new(
            ErrorKind::InvalidState,
            format!(
                "job {} has no view: the latest plan of the policy in force ({}) gives it no \
                 expected start (policies that plan one, such as cbf, give every waiting job a \
                 view; the `coorm` policy gives launcher sessions' jobs theirs)",
                r.job,
                d.policy_name()
            ),
        )
        .into(),
    }
}
