//! The open CooRM launcher sessions (docs/coorm.md, *Protocol*): each one's channel to its
//! connection, its pools and the CAPs it was last sent, so that a `changeNotify` goes only to
//! the sessions whose view changed. The connection is `server/session.rs`, the rest of the
//! bookkeeping `crate::coorm`.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use batch_proto::{CapStep, Change, ChangeNotify, ChangeType, Response};
use tokio::sync::mpsc::UnboundedSender;

use crate::core::coorm::{same_cap, JobView};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One open session, as the scheduler loop reaches it.
struct Session {
    /// Frames pushed to the launcher (the connection's task writes them).
    tx: UnboundedSender<Response>,
    /// The pools that passed its filter (indices, config order).
    pools: Vec<usize>,
    /// The CAP last sent for each pool.
    sent: HashMap<usize, Vec<CapStep>>,
}

/// The open sessions, by job.
#[derive(Default)]
pub struct Sessions(Mutex<HashMap<u64, Session>>);

impl Sessions {
    /// Registers the session of `job` over `pools`; frames for it go to `tx`.
    pub fn open(&self, job: u64, pools: Vec<usize>, tx: UnboundedSender<Response>) {
        lock(&self.0).insert(
            job,
            Session {
                tx,
                pools,
                sent: HashMap::new(),
            },
        );
    }

    /// Forgets the session of `job` (its connection closed).
    pub fn close(&self, job: u64) {
        lock(&self.0).remove(&job);
    }

    /// Pushes to each open session the frame `f` makes of its job and pools, if any.
    pub fn push_each(&self, mut f: impl FnMut(u64, &[usize]) -> Option<Response>) {
        for (&job, s) in lock(&self.0).iter() {
            if let Some(r) = f(job, &s.pools) {
                let _ = s.tx.send(r);
            }
        }
    }

    /// Pushes `r` to the session of `job`, if it is open.
    pub fn push(&self, job: u64, r: Response) {
        if let Some(s) = lock(&self.0).get(&job) {
            let _ = s.tx.send(r);
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
                let _ =
                    s.tx.send(Response::ChangeNotify(ChangeNotify { job, now, changes }));
            }
        }
    }
}
