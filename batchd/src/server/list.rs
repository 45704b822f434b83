//! `List`: the queue, running jobs first, then pending jobs in queue order.

use std::sync::Arc;
use std::time::Duration;

use batch_proto::frame::{self, FrameError};
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
use crate::view::{job_view, JobView};

/// Jobs per listing frame: about 200 kB of a full listing, far below [`MAX_FRAME`]. Small
/// frames bound what a listing holds in memory at once (a frame being written, one queued, one
/// being encoded) and how long each holds the core lock.
const JOBS_PER_FRAME: usize = 500;

/// Encoded frames a listing may queue ahead of its writer: the encoder waits for the client
/// beyond this, so a client that does not read holds a few frames, not its whole listing.
const QUEUED_FRAMES: usize = 1;

/// A listing frame borrowing its jobs: serialises exactly as [`Response::JobsPart`] and
/// [`Response::Jobs`] (externally tagged, same variant names), so the client reads it as
/// one of those.
#[derive(Serialize)]
enum Part<'a, T> {
    JobsPart(&'a [T]),
    Jobs(&'a [T]),
}

/// Encodes the next frame of `jobs` into `buf` (header and payload): up to
/// [`JOBS_PER_FRAME`] jobs, fewer when they would exceed [`MAX_FRAME`] (long arguments in a
/// full listing). The frame is `Jobs` when `last` and it takes the rest, else `JobsPart`.
/// Returns how many jobs it took; with `jobs` empty, the `Jobs([])` or `JobsPart([])` frame.
fn encode_part<T: Serialize>(
    jobs: &[T],
    last: bool,
    buf: &mut Vec<u8>,
) -> Result<usize, FrameError> {
    let mut n = jobs.len().min(JOBS_PER_FRAME);
    loop {
        let part = if last && n == jobs.len() {
            Part::Jobs(&jobs[..n])
        } else {
            Part::JobsPart(&jobs[..n])
        };
        match frame::encode_into(&part, buf) {
            Ok(()) => return Ok(n),
            Err(FrameError::TooLarge { .. }) if n > 1 => n /= 2,
            Err(e) => return Err(e),
        }
    }
}

/// One encoded frame of a listing, header included; `last` for its final `Jobs` frame.
#[derive(Debug)]
pub struct Frame {
    bytes: Vec<u8>,
    last: bool,
}

/// A listing on its way to the client: frames in order, or why it could not be encoded.
pub type Frames = mpsc::Receiver<Result<Frame, String>>;

/// Encodes `jobs` into frames and hands each to `out` as soon as it is made, the last one
/// `Jobs` when `last` (even with no job at all), all others `JobsPart`. Returns false when
/// `out` refuses a frame (the connection is gone) or a job cannot be encoded (after handing
/// `out` the error).
fn encode_frames<T: Serialize>(
    jobs: impl Iterator<Item = T>,
    last: bool,
    out: &mut dyn FnMut(Result<Frame, String>) -> bool,
) -> bool {
    let mut jobs = jobs.peekable();
    let mut chunk: Vec<T> = Vec::with_capacity(JOBS_PER_FRAME);
    // Frames of one listing are about the same size: start each at the largest so far.
    let mut size = 0;
    loop {
        chunk.clear();
        chunk.extend(jobs.by_ref().take(JOBS_PER_FRAME));
        let end = last && jobs.peek().is_none();
        let mut rest = &chunk[..];
        while !rest.is_empty() || end {
            let mut bytes = Vec::with_capacity(size);
            let n = match encode_part(rest, end, &mut bytes) {
                Ok(n) => n,
                Err(e) => {
                    out(Err(format!("encoding a listing: {e}")));
                    return false;
                }
            };
            size = size.max(bytes.len());
            rest = &rest[n..];
            let frame = Frame {
                bytes,
                last: end && rest.is_empty(),
            };
            if !out(Ok(frame)) {
                return false;
            }
            if rest.is_empty() {
                break;
            }
        }
        if jobs.peek().is_none() {
            return true;
        }
    }
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
            .jobs
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
    let mut chunks = order.chunks(JOBS_PER_FRAME).peekable();
    if chunks.peek().is_none() {
        return encode_frames(std::iter::empty::<JobView>(), last, out);
    }
    while let Some(chunk) = chunks.next() {
        let c = core();
        let held = std::time::Instant::now();
        let views = chunk.iter().filter_map(|&(id, reason)| {
            let rec = &c.jobs.get(&id)?.rec;
            filter
                .selects(rec.filter_key())
                .then(|| job_view(Some(&c), rec, reason, brief))
        });
        // The chunk's frames are handed on only once the lock is released: `out` waits for a
        // slow client, and the scheduler must not wait with it.
        let mut made = Vec::new();
        encode_frames(views, last && chunks.peek().is_none(), &mut |f| {
            made.push(f);
            true
        });
        drop(c);
        longest = longest.max(held.elapsed());
        for f in made {
            if !out(f) {
                return false;
            }
        }
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
                let filter = filter.prepare();
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
        let done = match d
            .store
            .read(|c| crate::store::finished_between(c, None, None))
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

/// Sends jobs already gathered (`econtrol show job`, `eacct`) as a listing, from one reused
/// buffer. Moving them into a `Response` per frame (`split_off`) copied the rest of the
/// listing at each frame: quadratic, a gigabyte of copies for 100,000 jobs.
pub async fn send(stream: &mut UnixStream, jobs: &[JobInfo], deadline: Duration) -> bool {
    let mut buf = Vec::new();
    let mut rest = jobs;
    loop {
        let n = match encode_part(rest, true, &mut buf) {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!("encoding a listing: {e}");
                return false;
            }
        };
        if !write(stream, &buf, deadline).await {
            return false;
        }
        rest = &rest[n..];
        if rest.is_empty() {
            return true;
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
                        steps: vec![Step::new(30_000, 2), Step::new(30_000, 1)],
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
        c.expected.insert(2, 60_100);
        c.expected.insert(6, 90_100);
        c.expected_ep.insert(6, steps);
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
        j
    }

    /// The listing as owned `JobInfo`s: `view::active_info` of the running jobs, then of the
    /// pending ones in queue order with their reasons.
    fn reference(c: &Core, now: u64) -> Vec<JobInfo> {
        let mut v: Vec<JobInfo> = c
            .jobs
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
            assert_eq!(got.len(), n.div_ceil(JOBS_PER_FRAME));
            let ids: Vec<u64> = jobs_of(got).iter().map(|j| j.id).collect();
            assert_eq!(ids, (0..n as u64).collect::<Vec<_>>());
        }
    }

    /// Jobs with long arguments would make a frame of [`JOBS_PER_FRAME`] exceed the limit:
    /// the frame takes fewer, and a single job above the limit is an error, not a bad frame.
    #[test]
    fn a_frame_never_exceeds_the_limit() {
        let mut j = reference(&busy_core(), 0).remove(0);
        j.args = vec!["x".repeat(MAX_FRAME / 400)];
        let many = vec![j.clone(); 1500];
        let frames = frames_of(&many, true);
        assert!(frames.len() > 1, "{}", frames.len());
        assert!(frames
            .iter()
            .all(|f| f.bytes.len() <= MAX_FRAME + HEADER_LEN));
        assert_eq!(jobs_of(decode_frames(frames)), many);
        j.args = vec!["x".repeat(MAX_FRAME)];
        assert!(matches!(
            encode_part(&[j.clone()], true, &mut Vec::new()),
            Err(FrameError::TooLarge { .. })
        ));
        let mut got = Vec::new();
        assert!(!encode_frames(std::iter::once(&j), true, &mut |f| {
            got.push(f.is_ok());
            true
        }));
        assert_eq!(got, vec![false]);
    }
}
