//! The open CooRM launcher sessions (docs/coorm.md, *Protocol*): each one's outbox to its
//! connection, its pools and the CAPs it was last sent, so that a `changeNotify` goes only to
//! the sessions whose view changed. The connection is `server/session.rs`, the rest of the
//! bookkeeping `crate::coorm`.
//!
//! An outbox holds what its launcher has not been sent yet, merged: a `changeNotify` that
//! finds another still waiting, with nothing behind it, is folded into it (each pool's newest
//! CAP), so a launcher that reads slowly gets the newest view, not every stale one, and a
//! session holds at most one waiting view between its `startNotify` and `sessionEnded`, which
//! are never merged or dropped.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use batch_proto::{CapStep, Change, ChangeNotify, ChangeType, Response};
use tokio::sync::Notify;

use crate::core::coorm::{same_cap, JobView};
use crate::sync::lock;

/// The frames waiting to be pushed to one launcher (the connection's task writes them).
#[derive(Default)]
pub struct Outbox {
    queue: Mutex<VecDeque<Response>>,
    ready: Notify,
}

impl Outbox {
    /// Queues `r`, folding a `changeNotify` into one still waiting at the back.
    pub fn put(&self, r: Response) {
        let mut q = lock(&self.queue);
        match (q.back_mut(), r) {
            (Some(Response::ChangeNotify(waiting)), Response::ChangeNotify(new)) => {
                merge(waiting, new)
            }
            (_, r) => q.push_back(r),
        }
        drop(q);
        self.ready.notify_one();
    }

    /// The next frame to send, if any.
    pub fn take(&self) -> Option<Response> {
        lock(&self.queue).pop_front()
    }

    /// Frames waiting.
    pub fn len(&self) -> usize {
        lock(&self.queue).len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Until a frame has been queued since the last wait (at once if one was meanwhile).
    pub async fn wait(&self) {
        self.ready.notified().await;
    }
}

/// `new` folded into `waiting`: the newest change of each pool and kind, in the order the
/// pools first changed; the newest `now`.
fn merge(waiting: &mut ChangeNotify, new: ChangeNotify) {
    waiting.now = new.now;
    for c in new.changes {
        match waiting
            .changes
            .iter_mut()
            .find(|w| w.pool == c.pool && w.kind == c.kind)
        {
            Some(w) => *w = c,
            None => waiting.changes.push(c),
        }
    }
}

/// One open session, as the scheduler loop reaches it.
struct Session {
    /// Frames pushed to the launcher.
    outbox: Arc<Outbox>,
    /// The pools that passed its filter (indices, config order).
    pools: Vec<usize>,
    /// The CAP last sent for each pool.
    sent: HashMap<usize, Vec<CapStep>>,
}

/// The open sessions, by job.
#[derive(Default)]
pub struct Sessions(Mutex<HashMap<u64, Session>>);

impl Sessions {
    /// Registers the session of `job` over `pools`; frames for it go to `outbox`.
    pub fn open(&self, job: u64, pools: Vec<usize>, outbox: Arc<Outbox>) {
        lock(&self.0).insert(
            job,
            Session {
                outbox,
                pools,
                sent: HashMap::new(),
            },
        );
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        lock(&self.0).is_empty()
    }

    /// Forgets the session of `job` (its connection closed).
    pub fn close(&self, job: u64) {
        lock(&self.0).remove(&job);
    }

    /// Pushes to each open session the frame `f` makes of its job and pools, if any.
    pub fn push_each(&self, mut f: impl FnMut(u64, &[usize]) -> Option<Response>) {
        for (&job, s) in lock(&self.0).iter() {
            if let Some(r) = f(job, &s.pools) {
                s.outbox.put(r);
            }
        }
    }

    /// Pushes `r` to the session of `job`, if it is open.
    pub fn push(&self, job: u64, r: Response) {
        if let Some(s) = lock(&self.0).get(&job) {
            s.outbox.put(r);
        }
    }
}

impl Sessions {
    /// Pushes a `changeNotify` to each session whose view in `views` (made at `now`) changed
    /// on one of its pools, with those pools' new CAPs (§III-B, step 6: "every time
    /// information regarding … their estimated availability changes"). A CAP that only aged
    /// is left as the launcher holds it, in `views` too (so `eview` shows exactly what it was
    /// sent). `names` are the pools' names by index.
    pub fn notify(&self, views: &mut HashMap<u64, JobView>, names: &[String], now: u64) {
        let mut sessions = lock(&self.0);
        for (&job, s) in sessions.iter_mut() {
            let Some(v) = views.get_mut(&job) else {
                continue;
            };
            let mut changes = Vec::new();
            for &p in &s.pools {
                let Some(pv) = v.pools.iter_mut().find(|pv| Some(&pv.pool) == names.get(p)) else {
                    continue;
                };
                match s.sent.get(&p) {
                    Some(old) if same_cap(old, &pv.steps) => pv.steps.clone_from(old),
                    _ => {
                        s.sent.insert(p, pv.steps.clone());
                        changes.push(Change {
                            pool: pv.pool.clone(),
                            kind: ChangeType::Availability,
                            cap: Some(pv.steps.clone()),
                        });
                    }
                }
            }
            if !changes.is_empty() {
                s.outbox
                    .put(Response::ChangeNotify(ChangeNotify { job, now, changes }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use batch_proto::{SessionEnded, StartNotify};

    fn view(now: u64, pools: &[(&str, u32)]) -> Response {
        Response::ChangeNotify(ChangeNotify {
            job: 1,
            now,
            changes: pools
                .iter()
                .map(|&(pool, free)| Change {
                    pool: pool.into(),
                    kind: ChangeType::Availability,
                    cap: Some(vec![CapStep {
                        from: now,
                        to: None,
                        free,
                    }]),
                })
                .collect(),
        })
    }

    fn frees(r: &Response) -> Vec<(String, u32)> {
        match r {
            Response::ChangeNotify(c) => c
                .changes
                .iter()
                .map(|c| (c.pool.clone(), c.cap.as_ref().map_or(0, |s| s[0].free)))
                .collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_slow_reader_gets_the_newest_view_of_each_pool_and_every_start_and_end() {
        let o = Outbox::default();
        for i in 0..10_000 {
            o.put(view(i, &[("a", (i % 7) as u32)]));
        }
        o.put(view(20_000, &[("b", 3)]));
        assert_eq!(o.len(), 1);
        o.put(Response::StartNotify(StartNotify {
            job: 1,
            start: 1,
            end: 2,
            pools: vec![],
        }));
        o.put(view(30_000, &[("a", 1)]));
        o.put(Response::SessionEnded(SessionEnded {
            job: 1,
            state: "CANCELLED".into(),
            reason: "x".into(),
        }));
        assert_eq!(o.len(), 4);
        let first = o.take().unwrap();
        assert_eq!(
            frees(&first),
            vec![("a".to_string(), 9_999 % 7), ("b".to_string(), 3)]
        );
        assert!(matches!(&first, Response::ChangeNotify(c) if c.now == 20_000));
        assert!(matches!(o.take(), Some(Response::StartNotify(_))));
        assert_eq!(frees(&o.take().unwrap()), vec![("a".to_string(), 1)]);
        assert!(matches!(o.take(), Some(Response::SessionEnded(_))));
        assert!(o.take().is_none() && o.is_empty());
    }
}
