//! `List`: the queue, running jobs first, then pending jobs in queue order.

use std::sync::Arc;
use std::time::Duration;

use batch_proto::frame;
use batch_proto::{JobInfo, JobState, ListRequest, PendingReason, PreparedFilter};
#[cfg(doc)]
use batch_proto::{Response, MAX_FRAME};
use serde::Serialize;
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;
use tokio::sync::mpsc;

use super::Reply;
use crate::core::Core;
use crate::daemon::Daemon;
use crate::launch::now_ms;
use crate::view::job_view;

/// Jobs per listing frame at most: about 200 kB of a full listing, far below [`MAX_FRAME`].
/// Small frames bound what a listing holds in memory at once (a frame being written, one
/// queued, one being encoded) and how long each holds the core lock.
const JOBS_PER_FRAME: usize = 500;

/// Encoded bytes after which a listing frame is closed, whatever its job count: jobs that carry
/// much (long arguments) make frames of fewer jobs, so that encoding a frame, and the core lock
/// held for it, cost in proportion to what the frame carries.
const FRAME_BYTES: usize = 256 * 1024;

/// Encoded frames a listing may queue ahead of its writer: the encoder waits for the client
/// beyond this, so a client that does not read holds a few frames, not its whole listing.
const QUEUED_FRAMES: usize = 1;

/// One encoded frame of a listing, header included; `last` for its final `Jobs` frame.
#[derive(Debug)]
pub struct Frame {
    bytes: Vec<u8>,
    last: bool,
}

/// A listing on its way to the client: frames in order, or why it could not be encoded.
pub type Frames = mpsc::Receiver<Result<Frame, String>>;

/// A listing frame being filled: each job is encoded once, appended to the frame's list, and
/// the frame is closed once it holds [`JOBS_PER_FRAME`] jobs or [`FRAME_BYTES`] bytes. It
/// serialises exactly as [`Response::JobsPart`] or [`Response::Jobs`] of those jobs
/// (externally tagged, as serde writes them), so the client reads it as one of those.
#[derive(Default)]
struct Builder {
    /// The jobs' JSON, comma-separated.
    body: Vec<u8>,
    jobs: usize,
}

impl Builder {
    fn push<T: Serialize>(&mut self, job: &T) -> Result<(), String> {
        if self.jobs > 0 {
            self.body.push(b',');
        }
        serde_json::to_writer(&mut self.body, job)
            .map_err(|e| format!("encoding a listing: {e}"))?;
        self.jobs += 1;
        Ok(())
    }

    fn full(&self) -> bool {
        self.jobs >= JOBS_PER_FRAME || self.body.len() >= FRAME_BYTES
    }

    /// The frame of the jobs pushed so far, `Jobs` when `last`, else `JobsPart`; the builder
    /// is empty again.
    fn take(&mut self, last: bool) -> Result<Frame, String> {
        let tag: &[u8] = if last {
            b"{\"Jobs\":["
        } else {
            b"{\"JobsPart\":["
        };
        let len = tag.len() + self.body.len() + 2;
        if len > frame::MAX_FRAME {
            return Err(format!(
                "encoding a listing: a frame of {len} bytes, more than {}",
                frame::MAX_FRAME
            ));
        }
        let mut bytes = Vec::with_capacity(frame::HEADER_LEN + len);
        // `len <= MAX_FRAME < u32::MAX`, so the cast is exact.
        bytes.extend_from_slice(&(len as u32).to_be_bytes());
        bytes.extend_from_slice(tag);
        bytes.extend_from_slice(&self.body);
        bytes.extend_from_slice(b"]}");
        self.body.clear();
        self.jobs = 0;
        Ok(Frame { bytes, last })
    }
}

/// Encodes `jobs` into frames and hands each to `out` as soon as it is made, the last one
/// `Jobs` when `last` (even with no job at all), all others `JobsPart`. Returns false when
/// `out` refuses a frame (the connection is gone) or a job cannot be encoded (after handing
/// `out` the error).
fn encode_frames<T: Serialize>(
    jobs: impl Iterator<Item = T>,
    last: bool,
    out: &mut dyn FnMut(Result<Frame, String>) -> bool,
) -> bool {
    let mut b = Builder::default();
    for job in jobs {
        if let Err(e) = b.push(&job) {
            out(Err(e));
            return false;
        }
        if b.full() && !hand(out, b.take(false)) {
            return false;
        }
    }
    if last || b.jobs > 0 {
        return hand(out, b.take(last));
    }
    true
}

/// Hands `f` to `out`: false when `out` refuses it or it is an error.
fn hand(out: &mut dyn FnMut(Result<Frame, String>) -> bool, f: Result<Frame, String>) -> bool {
    let failed = f.is_err();
    out(f) && !failed
}

/// Encodes the active jobs matching `filter` (running first, then pending in queue order
/// with their reasons and expected starts); see [`encode_frames`] for `last` and `out`. The
/// filter comes prepared (its lists sorted once): it is asked about every job of the queue
/// under the lock.
///
/// `core` locks the core. It is held to choose the jobs and their order (with the pending
/// reasons, which need the whole queue), then again for each frame's worth of jobs, never for
/// the whole listing: encoding 100,000 jobs under one lock held off the scheduler and
/// submissions for 200–300 ms. A job that changed in between is shown as it is when its
/// frame is encoded, and left out once it no longer matches (ended, or another state than
/// asked for).
fn encode_active<C: std::ops::Deref<Target = Core>>(
    core: impl Fn() -> C,
    filter: &PreparedFilter<'_>,
    now: u64,
    brief: bool,
    last: bool,
    out: &mut dyn FnMut(Result<Frame, String>) -> bool,
) -> bool {
    let began = std::time::Instant::now();
    let order: Vec<(u64, Option<PendingReason>)> = {
        let c = core();
        let mut order: Vec<_> = c
            .jobs()
            .values()
            .filter(|a| a.rec.state != JobState::Pending && filter.selects(a.rec.filter_key()))
            .map(|a| (a.rec.id, None))
            .collect();
        // Pending reasons need the whole queue in order; skip it when no pending job can match.
        if filter.admits_state(JobState::Pending) {
            order.extend(
                c.pending_with_reasons(now)
                    .into_iter()
                    .filter(|(rec, _)| filter.selects(rec.filter_key()))
                    .map(|(rec, reason)| (rec.id, Some(reason))),
            );
        }
        order
    };
    let ordering = began.elapsed();
    let mut longest = std::time::Duration::ZERO;
    let mut b = Builder::default();
    let mut next = order.iter();
    let mut more = true;
    while more {
        // One frame's worth of jobs under the lock; the frame is handed on only once the lock
        // is released: `out` waits for a slow client, and the scheduler must not wait with it.
        let c = core();
        let held = std::time::Instant::now();
        let mut made = None;
        more = false;
        for &(id, reason) in next.by_ref() {
            let Some(rec) = c.job(id).map(|a| &a.rec) else {
                continue;
            };
            if !filter.selects(rec.filter_key()) {
                continue;
            }
            if let Err(e) = b.push(&job_view(Some(&c), rec, reason, brief)) {
                made = Some(Err(e));
                break;
            }
            if b.full() {
                made = Some(b.take(false));
                more = true;
                break;
            }
        }
        drop(c);
        longest = longest.max(held.elapsed());
        if let Some(f) = made {
            if !hand(out, f) {
                return false;
            }
        }
    }
    if (last || b.jobs > 0) && !hand(out, b.take(last)) {
        return false;
    }
    tracing::debug!(
        jobs = order.len(),
        ?ordering,
        ?longest,
        "listing: core lock held"
    );
    true
}

/// Answers a listing: the frames are encoded on a blocking thread and sent as they come, so
/// the client parses one while the next is encoded.
pub fn handle(d: &Arc<Daemon>, req: ListRequest) -> Reply {
    let (tx, rx) = mpsc::channel(QUEUED_FRAMES);
    let d = Arc::clone(d);
    tokio::spawn(async move {
        let last = !req.include_finished;
        let (filter, brief) = (req.filter.clone(), req.brief);
        let out = tx.clone();
        let active = tokio::task::spawn_blocking({
            let d = Arc::clone(&d);
            move || {
                let began = std::time::Instant::now();
                let settings = d.settings();
                let filter = filter
                    .prepare()
                    .known_pools(|p| settings.config.pools.iter().any(|c| c.name == p));
                let ok = encode_active(|| d.core(), &filter, now_ms(), brief, last, &mut |f| {
                    out.blocking_send(f).is_ok()
                });
                tracing::debug!(brief, took = ?began.elapsed(), "listing encoded");
                ok
            }
        })
        .await;
        match active {
            Ok(true) if req.include_finished => {}
            Ok(_) => return,
            Err(e) => {
                let _ = tx.send(Err(format!("listing: {e}"))).await;
                return;
            }
        }
        // `esubmit -W` asks for its one job, every half second: the span its ids allow.
        let span = req.filter.prepare().id_span();
        let done = match d
            .store
            .read(move |c| crate::store::finished_between(c, None, None, span))
            .await
        {
            Ok(done) => done,
            Err(e) => {
                let _ = tx.send(Err(format!("reading finished jobs: {e}"))).await;
                return;
            }
        };
        let finished = tokio::task::spawn_blocking({
            let tx = tx.clone();
            move || {
                let filter = req.filter.prepare();
                let jobs = done
                    .iter()
                    .filter(|r| filter.selects(r.filter_key()))
                    .map(|r| job_view(None, r, None, req.brief));
                encode_frames(jobs, true, &mut |f| tx.blocking_send(f).is_ok());
            }
        })
        .await;
        if let Err(e) = finished {
            let _ = tx.send(Err(format!("listing finished jobs: {e}"))).await;
        }
    });
    Reply::Listing(rx)
}

/// Writes a listing's frames as they come, each within `deadline` (a client that stops reading
/// is dropped). Returns false when the connection is unusable or the listing broke off: the
/// client then sees the connection close, not a partial answer taken for a whole one.
pub async fn send_frames(stream: &mut UnixStream, mut frames: Frames, deadline: Duration) -> bool {
    while let Some(f) = frames.recv().await {
        let f = match f {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!("{e}");
                return false;
            }
        };
        if !write(stream, &f.bytes, deadline).await {
            return false;
        }
        if f.last {
            return true;
        }
    }
    tracing::warn!("a listing ended without its last frame");
    false
}

/// Writes one frame within `deadline`; false (logged) when it could not.
async fn write(stream: &mut UnixStream, bytes: &[u8], deadline: Duration) -> bool {
    let written = tokio::time::timeout(deadline, async {
        stream.write_all(bytes).await?;
        stream.flush().await
    })
    .await;
    match written {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            tracing::debug!("writing a listing: {e}");
            false
        }
        Err(_) => {
            tracing::info!(
                "a client did not take a listing frame within {deadline:?}; closing its connection"
            );
            false
        }
    }
}

/// Sends jobs already gathered (`econtrol show job`, `eacct`) as a listing, each job encoded
/// once into the frame that carries it.
pub async fn send(stream: &mut UnixStream, jobs: &[JobInfo], deadline: Duration) -> bool {
    let mut b = Builder::default();
    for (k, job) in jobs.iter().enumerate() {
        if let Err(e) = b.push(job) {
            tracing::warn!("{e}");
            return false;
        }
        if b.full() && k + 1 < jobs.len() {
            match b.take(false) {
                Ok(f) if write(stream, &f.bytes, deadline).await => {}
                Ok(_) => return false,
                Err(e) => {
                    tracing::warn!("{e}");
                    return false;
                }
            }
        }
    }
    match b.take(true) {
        Ok(f) => write(stream, &f.bytes, deadline).await,
        Err(e) => {
            tracing::warn!("{e}");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::Active;
    use crate::record::JobRecord;
    use batch_proto::frame::HEADER_LEN;
    use batch_proto::MAX_FRAME;
    use batch_proto::{Dependency, JobFilter, JobShape, JobSpec, Response};
    use sched_core::{PoolId, Shape, Step};
    use std::path::PathBuf;

    /// A core with every kind of job a listing shows: running rigid and evolving jobs,
    /// pending ones with a plan's expected start and a scheduled EP, held, with dependencies,
    /// arguments, detail, its own output paths.
    fn busy_core() -> Core {
        let mut c = Core::new([("debug", 8)]);
        let spec = |id: u64| {
            let mut s = JobSpec::new("#!/bin/sh\n", "/home/alice/run", 2, 60_000);
            s.name = format!("job{id}");
            s.args = vec!["--input".into(), format!("case{id}")];
            s.stdout = Some("out-%j.txt".into());
            s.stderr = Some("/var/log/%x.err".into());
            s.priority = id as i64 % 3;
            s
        };
        for id in 1..=8 {
            let mut r = JobRecord::submitted(id, 1000, 1000, "alice", spec(id), id * 10);
            match id {
                3 | 6 => {
                    r.spec.shape = JobShape::Evolving {
                        steps: vec![
                            batch_proto::Step::new(30_000, 2),
                            batch_proto::Step::new(30_000, 1),
                        ],
                    }
                }
                4 => r.held = true,
                5 => r.spec.dependencies = vec![Dependency::Singleton],
                7 => r.spec.pool = Some("debug".into()),
                _ => {}
            }
            r.detail = (id == 8).then(|| "tried once".to_string());
            c.insert(Active { rec: r, run: None });
        }
        c.start(
            1,
            &Shape::rigid(PoolId(0), 2, 60_000),
            100,
            PathBuf::from("/j/1"),
        )
        .unwrap();
        let steps = vec![Step::new(30_000, 2), Step::new(30_000, 1)];
        c.start(
            3,
            &Shape::Evolving {
                pool: PoolId(0),
                steps: steps.clone().into(),
            },
            100,
            PathBuf::from("/j/3"),
        )
        .unwrap();
        // A plan made at 100 that expects jobs 2 and 6 later.
        let later = |job, start, shape| sched_core::Placement {
            job: sched_core::JobId(job),
            start,
            shape,
            claim_from: sched_core::RNone,
        };
        let plan = sched_core::Plan {
            placements: sched_core::rvec![
                later(2, 60_100, Shape::rigid(PoolId(0), 2, 60_000)),
                later(
                    6,
                    90_100,
                    Shape::Evolving {
                        pool: PoolId(0),
                        steps: steps.into(),
                    }
                ),
            ],
            ..Default::default()
        };
        let effects = c.apply_plan(&plan, 100, "test", || 100, |_| PathBuf::new());
        assert!(effects.store.is_empty() && effects.started.is_empty());
        c
    }

    /// The fields a brief listing leaves out, blanked.
    fn blanked(mut j: JobInfo) -> JobInfo {
        j.work_dir.clear();
        j.stdout.clear();
        j.stderr.clear();
        j.args.clear();
        j.dependencies.clear();
        j.detail = None;
        j.scheduled_ep = None;
        j.job_steps.clear();
        j
    }

    /// The listing as owned `JobInfo`s: `view::active_info` of the running jobs, then of the
    /// pending ones in queue order with their reasons.
    fn reference(c: &Core, now: u64) -> Vec<JobInfo> {
        let mut v: Vec<JobInfo> = c
            .jobs()
            .values()
            .filter(|a| a.rec.state != JobState::Pending)
            .map(|a| crate::view::active_info(c, &a.rec, None))
            .collect();
        v.extend(
            c.pending_with_reasons(now)
                .into_iter()
                .map(|(r, why)| crate::view::active_info(c, r, Some(why))),
        );
        v
    }

    /// The frames `encode_frames` hands out, decoded; checks each header and that only the
    /// final one is `Jobs`.
    fn decode_frames(frames: Vec<Frame>) -> Vec<Response> {
        let n = frames.len();
        frames
            .into_iter()
            .enumerate()
            .map(|(i, f)| {
                let len = u32::from_be_bytes(f.bytes[..HEADER_LEN].try_into().unwrap());
                assert_eq!(len as usize, f.bytes.len() - HEADER_LEN);
                let r: Response = batch_proto::frame::decode(&f.bytes[HEADER_LEN..]).unwrap();
                assert_eq!(f.last, i + 1 == n);
                assert_eq!(
                    matches!(r, Response::Jobs(_)),
                    i + 1 == n,
                    "frame {i} of {n}"
                );
                r
            })
            .collect()
    }

    /// The jobs of a listing's frames, in order.
    fn jobs_of(frames: Vec<Response>) -> Vec<JobInfo> {
        frames
            .into_iter()
            .flat_map(|f| match f {
                Response::JobsPart(v) | Response::Jobs(v) => v,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    fn listing(c: &Core, filter: &JobFilter, now: u64, brief: bool) -> Vec<JobInfo> {
        let mut frames = Vec::new();
        assert!(encode_active(
            || c,
            &filter.prepare(),
            now,
            brief,
            true,
            &mut |f| {
                frames.push(f.unwrap());
                true
            }
        ));
        jobs_of(decode_frames(frames))
    }

    /// A view's JSON decodes as the `JobInfo` `view::active_info` gives (the serde rules of
    /// `JobView` and `JobInfo` agree), the brief one the same without the fields only `%Z`,
    /// `%E`, `--json` and `econtrol show job` use. So a brief row keeps whatever `active_info`
    /// computes for the others (nodes, pool, time limit, reason, expected start, step).
    #[test]
    fn views_decode_as_info() {
        let c = busy_core();
        let all = JobFilter::default();
        let full = listing(&c, &all, 200, false);
        let brief = listing(&c, &all, 200, true);
        assert_eq!(full.len(), 8);
        assert_eq!(full, reference(&c, 200));
        assert_eq!(brief, full.iter().cloned().map(blanked).collect::<Vec<_>>());
        // The case is not vacuous: the full rows have what the brief ones leave out, and
        // the brief ones keep every field equeue's default and --start columns show.
        let by_id = |v: &[JobInfo], id: u64| v.iter().find(|j| j.id == id).cloned().unwrap();
        let (f1, b1) = (by_id(&full, 1), by_id(&brief, 1));
        assert_eq!(f1.work_dir, "/home/alice/run");
        assert_eq!(f1.stdout, "/home/alice/run/out-1.txt");
        assert_eq!(f1.stderr, "/var/log/job1.err");
        assert_eq!(f1.args.len(), 2);
        assert!(b1.work_dir.is_empty() && b1.stdout.is_empty() && b1.stderr.is_empty());
        assert!(b1.args.is_empty());
        assert_eq!(
            (b1.state, b1.node_list.as_deref(), b1.start_time, b1.nodes),
            (JobState::Running, Some("debug[001-002]"), Some(100), 2)
        );
        assert_eq!(by_id(&full, 5).dependencies, vec![Dependency::Singleton]);
        assert!(by_id(&brief, 5).dependencies.is_empty());
        assert_eq!(by_id(&full, 8).detail.as_deref(), Some("tried once"));
        assert_eq!(by_id(&brief, 8).detail, None);
        assert!(by_id(&full, 6).scheduled_ep.is_some());
        assert!(by_id(&full, 3).scheduled_ep.is_some());
        assert!(by_id(&brief, 6).scheduled_ep.is_none());
        let step = by_id(&brief, 3)
            .step
            .expect("a running evolving job has a step");
        assert_eq!((step.index, step.count), (1, 2));
        let b2 = by_id(&brief, 2);
        assert_eq!(b2.expected_start, Some(60_100));
        assert_eq!(b2.reason, Some(PendingReason::Resources));
        assert_eq!(
            (b2.name.as_str(), b2.user.as_str(), b2.uid, b2.time_limit),
            ("job2", "alice", 1000, 60_000)
        );
        assert_eq!(by_id(&brief, 4).reason, Some(PendingReason::Held));
        assert!(by_id(&brief, 4).held);
        assert_eq!(by_id(&brief, 7).pool.as_deref(), Some("debug"));
        // Through filters: the same jobs as the wire-level filter keeps.
        for f in [
            JobFilter {
                states: vec![JobState::Pending],
                ..Default::default()
            },
            JobFilter {
                states: vec![JobState::Running],
                ..Default::default()
            },
            JobFilter {
                ids: vec![3, 4, 99],
                ..Default::default()
            },
            JobFilter {
                users: vec!["bob".into()],
                ..Default::default()
            },
        ] {
            let want: Vec<JobInfo> = reference(&c, 200)
                .into_iter()
                .filter(|j| f.matches(j))
                .collect();
            assert_eq!(listing(&c, &f, 200, false), want, "{f:?}");
            assert_eq!(
                listing(&c, &f, 200, true),
                want.into_iter().map(blanked).collect::<Vec<_>>(),
                "{f:?}"
            );
        }
    }

    /// The core is locked once to choose the jobs, then once per frame: a job that ends in
    /// between is left out, one that starts is shown running, and left out of a listing of
    /// pending jobs.
    #[test]
    fn a_job_that_changes_between_order_and_frame_shows_as_it_is() {
        for (states, want) in [
            (vec![], vec![1, 3, 2, 5, 8, 7, 6]),
            (vec![JobState::Pending], vec![5, 8, 7, 6]),
        ] {
            let m = std::sync::Mutex::new(busy_core());
            let locks = std::cell::Cell::new(0);
            let lock = || {
                let mut g = m.lock().unwrap();
                if locks.replace(locks.get() + 1) == 1 {
                    g.finish(4, |r| r.state = JobState::Cancelled).unwrap();
                    g.start(
                        2,
                        &Shape::rigid(PoolId(0), 2, 60_000),
                        150,
                        PathBuf::from("/j/2"),
                    )
                    .unwrap();
                }
                g
            };
            let filter = JobFilter {
                states,
                ..Default::default()
            };
            let mut frames = Vec::new();
            assert!(encode_active(
                lock,
                &filter.prepare(),
                200,
                true,
                true,
                &mut |f| {
                    frames.push(f.unwrap());
                    true
                }
            ));
            assert_eq!(locks.get(), 2);
            let jobs = jobs_of(decode_frames(frames));
            assert_eq!(jobs.iter().map(|j| j.id).collect::<Vec<_>>(), want);
            if let Some(j2) = jobs.iter().find(|j| j.id == 2) {
                assert_eq!((j2.state, j2.reason), (JobState::Running, None));
            }
        }
    }

    /// A finished job's view decodes as `view::record_info` without reason or expected start.
    #[test]
    fn finished_views_decode_as_record_info() {
        let mut c = busy_core();
        let r = c
            .finish(3, |r| {
                r.state = JobState::Completed;
                r.end = Some(500);
                r.exit_code = Some(0);
                r.signal = Some(0);
            })
            .unwrap();
        for brief in [false, true] {
            let mut frames = Vec::new();
            encode_frames(
                std::iter::once(job_view(None, &r, None, brief)),
                true,
                &mut |f| {
                    frames.push(f.unwrap());
                    true
                },
            );
            let want = if brief {
                blanked(crate::view::record_info(&r))
            } else {
                crate::view::record_info(&r)
            };
            assert_eq!(jobs_of(decode_frames(frames)), vec![want]);
        }
    }

    fn frames_of(jobs: &[JobInfo], last: bool) -> Vec<Frame> {
        let mut frames = Vec::new();
        assert!(encode_frames(jobs.iter(), last, &mut |f| {
            frames.push(f.unwrap());
            true
        }));
        frames
    }

    /// Borrowed frames are byte for byte what the owned `Response` encodes to, `JobsPart`s
    /// then one `Jobs`, every job once and in order; an empty listing is one `Jobs([])`.
    #[test]
    fn frames_split_a_listing_in_order() {
        let one = reference(&busy_core(), 200);
        let f = frames_of(&one, true);
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].bytes,
            batch_proto::frame::encode(&Response::Jobs(one.clone())).unwrap()
        );
        assert_eq!(
            decode_frames(frames_of(&[], true)),
            vec![Response::Jobs(vec![])]
        );
        // Not the last part of a listing: nothing to send, and no `Jobs` frame.
        assert!(frames_of(&[], false).is_empty());
        assert!(frames_of(&one, false).iter().all(|f| !f.last));
        for n in [JOBS_PER_FRAME, JOBS_PER_FRAME * 2 + 3] {
            let many: Vec<JobInfo> = (0..n)
                .map(|i| {
                    let mut j = one[i % one.len()].clone();
                    j.id = i as u64;
                    j
                })
                .collect();
            let got = decode_frames(frames_of(&many, true));
            assert!(got.len() >= n.div_ceil(JOBS_PER_FRAME));
            assert!(got.iter().all(|r| match r {
                Response::JobsPart(j) | Response::Jobs(j) => j.len() <= JOBS_PER_FRAME,
                _ => false,
            }));
            let ids: Vec<u64> = jobs_of(got).iter().map(|j| j.id).collect();
            assert_eq!(ids, (0..n as u64).collect::<Vec<_>>());
        }
    }

    /// Jobs with long arguments make frames of fewer jobs, each closed once it passes
    /// [`FRAME_BYTES`] (every job encoded once, whatever its size), and a single job above
    /// the frame limit is an error, not a bad frame.
    #[test]
    fn frames_are_closed_by_size_and_never_exceed_the_limit() {
        let mut j = reference(&busy_core(), 0).remove(0);
        j.args = vec!["x".repeat(100 * 1024)];
        let many = vec![j.clone(); 50];
        let frames = frames_of(&many, true);
        assert!(frames.len() > 10, "{}", frames.len());
        assert!(frames
            .iter()
            .all(|f| f.bytes.len() <= FRAME_BYTES + 110 * 1024 + HEADER_LEN));
        assert_eq!(jobs_of(decode_frames(frames)), many);
        j.args = vec!["x".repeat(MAX_FRAME)];
        let mut got = Vec::new();
        assert!(!encode_frames(std::iter::once(&j), true, &mut |f| {
            got.push(f.is_ok());
            true
        }));
        assert_eq!(got, vec![false]);
    }
}
