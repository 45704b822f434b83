//! The reservation book: every queued job's reservation, in queue order, kept between calls
//! and updated from the difference between two snapshots (CBF, and FCFS with `in_order`).

use std::collections::VecDeque;

use sched_core::idmap::IdMap;
use sched_core::{
    Changes, JobId, ListChanges, Pending, Placement, Plan, Pool, PoolSteps, RVec, Request, Running,
    Snapshot, Time,
};

use crate::common::{
    holds_end, holds_one_interval, same_holds_from, Cluster, FitHints, Job, Options, Refusal,
};

/// What happened to the book during the calls so far: for tests and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Calls answered.
    pub calls: u64,
    /// Calls that rebuilt the whole schedule from scratch.
    pub rebuilds: u64,
    /// Calls that compressed the schedule after an end or a cancellation.
    pub compressions: u64,
    /// Reservations recomputed by compressions (the rest could not move).
    pub refits: u64,
    /// Reservations a CBF compression asked whether they could move, by a scan bounded by
    /// their start, instead of refitting them (they could not; those that could are refitted).
    pub checks: u64,
    /// Calls whose queue changes were taken from a driver's account instead of comparing the
    /// queue with the book's ([`Book::expect_changes`]).
    pub told: u64,
}

#[derive(Clone, Debug)]
struct Run {
    holds: RVec<PoolSteps>,
    seen: u64,
}

#[derive(Clone, Debug)]
struct Entry {
    id: JobId,
    /// The rigid view it is planned as: for a moldable request, the option chosen when it was
    /// fitted (kept by compressions, chosen again by a rebuild).
    job: Job,
    /// A moldable request's options, to tell a changed request from the same one.
    asked: Option<Box<[Job]>>,
    /// Pool index and start; `None` when the job fits nowhere ever (a hold that never ends
    /// blocks it) or, in order, when a job ahead of it is in that case.
    slot: Option<(usize, Time)>,
    /// [`Freed::seq`] when the slot was last found to be the job's earliest: only capacity
    /// freed since can move it.
    fitted: u64,
    seen: u64,
    gone: bool,
}

/// The intervals of nodes freed in the book's profiles (ends, cancellations, jobs moved
/// earlier), numbered in order, kept as what a compression needs of them: for a job fitted
/// after event `k`, the latest end of anything freed since.
///
/// A job's slot was its earliest fit, among everything else, when it was fitted. A window
/// starting earlier that fits now did not then, so it holds an instant freed since: it starts
/// before the latest end of what was freed. The stack keeps only the events whose end is
/// larger than every later one's (ends strictly decreasing), so the latest end after event `k`
/// is that of the first kept event after `k`.
#[derive(Clone, Debug, Default)]
struct Freed {
    /// Events so far.
    seq: u64,
    stack: Vec<(u64, Time)>,
}

/// A driver's account for the next call ([`Book::expect_changes`]), in a buffer kept from call
/// to call (an account copied into a fresh one was two allocations per call).
#[derive(Clone, Debug, Default)]
struct Told {
    account: ListChanges,
    /// Whether `account` was told since it was last taken.
    fresh: bool,
}

impl Told {
    fn set(&mut self, told: Option<&ListChanges>) {
        self.fresh = told.is_some();
        if let Some(c) = told {
            self.account.clone_from(c);
        }
    }

    /// The account told for this call, if any: taken once.
    fn take(&mut self) -> Option<ListChanges> {
        std::mem::take(&mut self.fresh).then(|| std::mem::take(&mut self.account))
    }

    /// Gives back the buffer [`Told::take`] took (not as told: it holds for one call).
    fn put_back(&mut self, buffer: Option<ListChanges>) {
        if let Some(b) = buffer {
            self.account = b;
        }
    }
}

/// A running job that ended (or vanished): before its expected end, it frees nodes the queue
/// may use. A compression follows at every end all the same, as the pyss reference does: a
/// compression refits one job at a time while the jobs behind keep their slots, so the one
/// before may have left a hole that a job ahead can use now.
fn release(
    (cluster, freed_until, freed): (&mut Cluster, &mut Time, &mut Freed),
    run: &Run,
    now: Time,
) {
    let end = holds_end(&run.holds);
    if end > now {
        cluster.add_holds(&run.holds, now, -1);
        *freed_until = (*freed_until).max(end);
        freed.record(end);
    }
}

impl Freed {
    /// Nodes freed somewhere before `end`.
    fn record(&mut self, end: Time) {
        self.seq += 1;
        while self.stack.last().is_some_and(|&(_, e)| e <= end) {
            self.stack.pop();
        }
        self.stack.push((self.seq, end));
    }

    /// The latest end of what was freed after event `seq`, if anything was.
    fn since(&self, seq: u64) -> Option<Time> {
        let i = self.stack.partition_point(|&(k, _)| k <= seq);
        self.stack.get(i).map(|&(_, end)| end)
    }

    /// Forgets events ending by `now`: no window starting at or after it meets them.
    fn forget_before(&mut self, now: Time) {
        while self.stack.last().is_some_and(|&(_, e)| e <= now) {
            self.stack.pop();
        }
    }
}

/// The schedule kept between calls.
#[derive(Clone, Debug, Default)]
pub struct Book {
    /// FCFS: no job starts before the one ahead of it.
    in_order: bool,
    cluster: Cluster,
    running: IdMap<Run>,
    /// The ids of the last snapshot's running jobs in its order: what a driver's account of
    /// the next snapshot's changes refers to.
    running_order: Vec<JobId>,
    /// A driver's account of how the next snapshot's running jobs differ from the last ones
    /// ([`Policy::expect_changes`](sched_core::Policy::expect_changes)), for one call.
    told_running: Told,
    /// The ids of the last snapshot's queue in its order, and the account of the next one's.
    pending_order: Vec<JobId>,
    told_pending: Told,
    /// What the last answer expects to leave the queue by the next call (the jobs it starts
    /// and rejects), and its earliest later reservation: an account of the queue stands in
    /// for comparing it only when the driver did both.
    leaving: Vec<JobId>,
    next_due: Option<Time>,
    /// Queue order; entries of started or vanished jobs stay as tombstones (`gone`) until they
    /// reach the front or outnumber the live ones, so that a start or a cancellation in the
    /// middle of a long queue costs O(1) instead of a shift and a re-index.
    queue: VecDeque<Entry>,
    /// Sequence number of each live entry; `queue[seq - base]`.
    pos: IdMap<u64>,
    base: u64,
    tombstones: usize,
    /// During a call: the end of the last interval where nodes were freed since the last call
    /// (an early end, a cancellation, a job moved earlier). FCFS's compression stops behind it.
    freed_until: Time,
    /// What was freed since each job was fitted (CBF's compression skips the jobs it cannot
    /// move by it).
    freed: Freed,
    call: u64,
    counters: Counters,
    /// A plan the driver gave back ([`Book::recycle`]): the next answer's buffers.
    spare: Option<Plan>,
    /// Buffers of [`Book::update`], kept between calls.
    new_jobs: Vec<(usize, Job, Options)>,
    vanished: Vec<usize>,
}

impl Book {
    /// An empty book; `in_order` makes it FCFS.
    pub fn new(in_order: bool) -> Self {
        Book {
            in_order,
            ..Book::default()
        }
    }

    /// What the book did so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The reservation of `job`: its expected start, when it has one.
    pub fn reservation(&self, job: JobId) -> Option<Time> {
        let seq = *self.pos.get(&job)?;
        self.entry(seq).and_then(|e| e.slot).map(|(_, t)| t)
    }

    fn entry(&self, seq: u64) -> Option<&Entry> {
        self.queue
            .get(usize::try_from(seq.checked_sub(self.base)?).ok()?)
    }

    /// Updates the book from `snap` and answers with every queued job's reservation.
    pub fn plan(&mut self, snap: &Snapshot<'_>) -> Plan {
        let plan = self.step(snap);
        let plan = self.answer(plan, snap.now);
        self.expect_leaving(&plan, snap.now);
        plan
    }

    /// Updates the book from `snap` and answers with [`Book::plan`]'s answer reduced to what
    /// starts now ([`Plan::starts_only`]), without building the placements it would drop.
    pub fn plan_starts(&mut self, snap: &Snapshot<'_>) -> Plan {
        let mut plan = self.step(snap);
        // In place: a plan is moved by a copy of its 144 bytes, and a replay makes 10⁵ calls.
        self.answer_starts(&mut plan, snap.now);
        self.expect_leaving(&plan, snap.now);
        plan
    }

    /// Notes what `plan` expects to leave the queue by the next call, and when the next
    /// reservation falls due.
    fn expect_leaving(&mut self, plan: &Plan, now: Time) {
        self.leaving.clear();
        self.leaving.extend(
            plan.placements
                .iter()
                .filter(|p| p.start <= now)
                .map(|p| p.job)
                .chain(plan.rejects.iter().map(|r| r.job)),
        );
        self.next_due = plan.wake_at.into_option();
    }

    /// Takes a driver's account of how the next snapshot differs from the last one: with the
    /// running jobs', the next call handles the jobs that ended or started without comparing
    /// every running job (a tenth of a replay's instructions was that walk).
    pub fn expect_changes(&mut self, changes: &Changes) {
        self.told_running.set(changes.running.as_ref());
        self.told_pending.set(changes.pending.as_ref());
    }

    /// Takes back an answer the driver is done with: the next one reuses its buffers.
    pub fn recycle(&mut self, plan: Plan) {
        self.spare = Some(plan);
    }

    /// Updates the book from `snap`; the plan holds the rejects so far.
    fn step(&mut self, snap: &Snapshot<'_>) -> Plan {
        self.call += 1;
        self.counters.calls += 1;
        let now = snap.now;
        let mut plan = self.spare.take().unwrap_or_default();
        plan.placements.clear();
        plan.kills.clear();
        plan.rejects.clear();
        plan.views.clear();
        plan.wake_at = sched_core::RNone;
        if !self.cluster.same_pools(snap.pools) {
            self.rebuild(snap, &mut plan);
            return plan;
        }
        self.cluster.forget_before(now);
        match self.update(snap, &mut plan) {
            Update::Rebuild => {
                plan.rejects.clear();
                self.rebuild(snap, &mut plan);
            }
            Update::Incremental { compress } => {
                if compress > 0 {
                    self.compress(now, &mut plan);
                }
                let mut new_jobs = std::mem::take(&mut self.new_jobs);
                for (k, job, asked) in new_jobs.drain(..) {
                    self.push(snap.pending[k].id, job, asked, now, &mut plan, None);
                }
                self.new_jobs = new_jobs;
            }
        }
        plan
    }

    /// Applies the differences between the book and `snap`; says whether the order of the queue
    /// still allows an incremental update, and leaves the jobs to add in `self.new_jobs`.
    fn update(&mut self, snap: &Snapshot<'_>, plan: &mut Plan) -> Update {
        let mut new_jobs = std::mem::take(&mut self.new_jobs);
        let mut vanished = std::mem::take(&mut self.vanished);
        new_jobs.clear();
        vanished.clear();
        let update = self.update_into(snap, plan, &mut new_jobs, &mut vanished);
        self.new_jobs = new_jobs;
        self.vanished = vanished;
        update
    }

    /// [`Book::update`] with its buffers.
    fn update_into(
        &mut self,
        snap: &Snapshot<'_>,
        plan: &mut Plan,
        new_jobs: &mut Vec<(usize, Job, Options)>,
        vanished: &mut Vec<usize>,
    ) -> Update {
        let now = snap.now;
        let call = self.call;
        // Jobs that ended or vanished, or 1 after any other change that may free nodes: one
        // compression pass follows if not 0. (pyss compresses at each termination; repeating
        // the pass per job ending at the same instant moved KTH-SP2 far from its schedule, 58 %
        // of equal starts instead of 97.5 %, so its terminations are effectively one pass.)
        let mut compress: u32 = 0;
        let mut check_capacity = false;
        self.freed_until = now;
        self.freed.forget_before(now);

        // A driver's account of the running jobs' changes: the jobs that ended are named by
        // their positions in the last snapshot's list and the started ones are at the end of
        // this one; every other job is as it was, so none is compared.
        let account = self.told_running.take();
        let told = account.as_ref().filter(|c| {
            c.fits(self.running_order.len(), snap.running.len())
                && snap.running[snap.running.len() - c.arrived..]
                    .iter()
                    .all(|r| !self.running.contains_key(&r.id))
        });
        if let Some(c) = told {
            for &k in &c.left {
                if let Some(run) = self.running.remove(&self.running_order[k]) {
                    release(
                        (&mut self.cluster, &mut self.freed_until, &mut self.freed),
                        &run,
                        now,
                    );
                    compress += 1;
                }
            }
            let arrivals = &snap.running[snap.running.len() - c.arrived..];
            c.apply(&mut self.running_order, arrivals.iter().map(|r| r.id));
            for r in arrivals {
                if !self.started(r, now) {
                    compress = compress.max(1);
                    check_capacity = true;
                }
            }
            debug_assert!(
                self.running_order
                    .iter()
                    .eq(snap.running.iter().map(|r| &r.id))
                    && snap.running.iter().all(|r| self
                        .running
                        .get(&r.id)
                        .is_some_and(|run| same_holds_from(&run.holds, &r.holds, now))),
                "a driver's account of the running jobs' changes was wrong"
            );
        } else {
            // The book's running jobs seen in the snapshot: when that is all of them, none
            // ended and the map, whose walk costs its capacity rather than its length, is not
            // walked.
            let mut seen = 0;
            for r in snap.running {
                if let Some(run) = self.running.get_mut(&r.id) {
                    seen += usize::from(run.seen != call);
                    run.seen = call;
                    if !same_holds_from(&run.holds, &r.holds, now) {
                        // A running job's time limit or shape changed (an admin's update): swap
                        // its holds; a longer one may collide with reservations, checked below.
                        self.cluster.add_holds(&run.holds, now, -1);
                        self.cluster.add_holds(&r.holds, now, 1);
                        run.holds = r.holds.clone();
                        compress = compress.max(1);
                        self.freed_until = Time::MAX;
                        self.freed.record(Time::MAX);
                        check_capacity = true;
                    }
                    continue;
                }
                if !self.started(r, now) {
                    compress = compress.max(1);
                    check_capacity = true;
                }
                seen += 1;
            }
            if self.running.len() > seen {
                let freed = (&mut self.cluster, &mut self.freed_until, &mut self.freed);
                self.running.retain(|_, run| {
                    if run.seen == call {
                        return true;
                    }
                    release((&mut *freed.0, &mut *freed.1, &mut *freed.2), run, now);
                    compress += 1;
                    false
                });
            }
            self.running_order.clear();
            self.running_order.extend(snap.running.iter().map(|r| r.id));
        }
        self.told_running.put_back(account);

        // A driver's account of the queue's changes stands in for comparing it when the
        // driver did what the last answer said: what it started and rejected left the queue,
        // and no reservation fell due since without a call (either may leave a reservation in
        // the past, which only the comparison below repairs, by a rebuild). The jobs that
        // left are then named by their positions in the last queue, the new ones are at the
        // end of this one, and every other is as it was.
        let account = self.told_pending.take();
        let told = account.as_ref().filter(|c| {
            let len = snap.pending.len();
            c.fits(self.pending_order.len(), len)
                && self.next_due.is_none_or(|due| now <= due)
                && self
                    .leaving
                    .iter()
                    .all(|id| c.left.iter().any(|&k| self.pending_order[k] == *id))
                && snap.pending[len - c.arrived..]
                    .iter()
                    .all(|p| !self.pos.contains_key(&p.id))
        });
        if let Some(c) = told {
            self.counters.told += 1;
            for &k in &c.left {
                // Left without being seen running (those were taken above): cancelled, or
                // started by the last plan and ended already.
                let id = self.pending_order[k];
                if self.pos.contains_key(&id) {
                    self.vanish(id, now);
                    compress += 1;
                }
            }
            let first = snap.pending.len() - c.arrived;
            c.apply(
                &mut self.pending_order,
                snap.pending[first..].iter().map(|p| p.id),
            );
            for (k, p) in snap.pending.iter().enumerate().skip(first) {
                match view(p, &self.cluster.pools) {
                    Err(refused) => plan.rejects.push(refused.reject(p.id)),
                    Ok((job, asked)) => new_jobs.push((k, job, asked)),
                }
            }
            debug_assert!(
                self.pending_order
                    .iter()
                    .eq(snap.pending.iter().map(|p| &p.id)),
                "a driver's account of the queue's changes was wrong"
            );
        } else {
            // One walk along the book's queue beside the snapshot's: a job that is the book's next
            // live entry needs no lookup, and the live entries the walk passes over are the jobs
            // that left the queue (or, if one of them shows up later, the order changed).
            let mut last_known: Option<u64> = None;
            let mut cursor = 0;
            for (k, p) in snap.pending.iter().enumerate() {
                while self.queue.get(cursor).is_some_and(|e| e.gone) {
                    cursor += 1;
                }
                let seq = match self.queue.get(cursor) {
                    Some(e) if e.id == p.id => self.base + cursor as u64,
                    _ => {
                        let Some(&seq) = self.pos.get(&p.id) else {
                            match view(p, &self.cluster.pools) {
                                Err(refused) => plan.rejects.push(refused.reject(p.id)),
                                Ok((job, asked)) => new_jobs.push((k, job, asked)),
                            }
                            continue;
                        };
                        seq
                    }
                };
                // A known job behind a new one, or two known jobs swapped: the queue order changed
                // (a higher-priority arrival, a priority update). Incremental updates keep the old
                // order's guarantees only, so start over in the new order.
                if !new_jobs.is_empty() || last_known.is_some_and(|l| seq < l) {
                    return Update::Rebuild;
                }
                last_known = Some(seq);
                let i = (seq - self.base) as usize;
                vanished.extend((cursor..i).filter(|&j| !self.queue[j].gone));
                cursor = cursor.max(i + 1);
                let e = &mut self.queue[i];
                e.seen = call;
                // A changed request or `--begin`, or a reservation that the driver did not start
                // when it was due: no incremental step repairs those without moving later jobs.
                if !same_request(p, e, &self.cluster.pools) || e.slot.is_some_and(|(_, s)| s < now)
                {
                    return Update::Rebuild;
                }
            }
            vanished.extend((cursor..self.queue.len()).filter(|&j| !self.queue[j].gone));
            for &i in vanished.iter() {
                // Vanished from the queue without being seen running: cancelled, or started by the
                // last plan and ended already.
                let id = self.queue[i].id;
                if self.pos.contains_key(&id) {
                    self.vanish(id, now);
                    compress += 1;
                }
            }
            self.pending_order.clear();
            self.pending_order.extend(snap.pending.iter().map(|p| p.id));
        }
        self.told_pending.put_back(account);
        self.trim();
        if check_capacity && self.cluster.over_committed(now) {
            return Update::Rebuild;
        }
        Update::Incremental { compress }
    }

    /// A queued job that left the queue without starting: its slot frees nodes; the caller
    /// compresses as at any end.
    fn vanish(&mut self, id: JobId, now: Time) {
        let Some(entry) = self.take(id) else {
            return;
        };
        if let Some((p, s)) = entry.slot {
            self.cluster.add_job(p, s, &entry.job, now, -1);
            let end = s.saturating_add(entry.job.walltime);
            self.freed_until = self.freed_until.max(end);
            self.freed.record(end);
        } else {
            self.freed_until = Time::MAX;
            self.freed.record(Time::MAX);
        }
    }

    /// A running job new to the book: a job it reserved and the driver started as reserved
    /// (its reservation is in the profile already), or any other (counted now, and checked to
    /// collide with nothing: started by another policy before a swap, or otherwise than
    /// reserved). Whether it was started as reserved.
    fn started(&mut self, r: &Running, now: Time) -> bool {
        let mut as_reserved = false;
        if let Some(entry) = self.take(r.id) {
            if let Some((p, s)) = entry.slot {
                let (job, pool) = (&entry.job, self.cluster.pools[p].id);
                as_reserved = holds_one_interval(&r.holds, now, pool, s, job.walltime, job.nodes);
                if !as_reserved {
                    self.cluster.add_job(p, s, job, now, -1);
                }
            }
        }
        if !as_reserved {
            self.cluster.add_holds(&r.holds, now, 1);
            self.freed_until = Time::MAX;
            self.freed.record(Time::MAX);
        }
        self.running.insert(
            r.id,
            Run {
                holds: r.holds.clone(),
                seen: self.call,
            },
        );
        as_reserved
    }

    /// Marks the entry of `id` gone and returns a copy of it.
    fn take(&mut self, id: JobId) -> Option<Entry> {
        let seq = self.pos.remove(&id)?;
        let e = self.queue.get_mut((seq - self.base) as usize)?;
        e.gone = true;
        self.tombstones += 1;
        Some(e.clone())
    }

    /// Drops the tombstones at the front, and all of them once they outnumber the live entries.
    fn trim(&mut self) {
        while self.queue.front().is_some_and(|e| e.gone) {
            self.queue.pop_front();
            self.base += 1;
            self.tombstones -= 1;
        }
        if self.tombstones > 8 && self.tombstones * 2 > self.queue.len() {
            self.queue.retain(|e| !e.gone);
            self.tombstones = 0;
            self.base = 0;
            self.pos.clear();
            self.pos
                .extend(self.queue.iter().enumerate().map(|(i, e)| (e.id, i as u64)));
        }
    }

    /// Moves every reservation to its earliest fit in queue order, never later; whether
    /// another pass could move more.
    fn compress(&mut self, now: Time, plan: &mut Plan) -> bool {
        self.counters.compressions += 1;
        let again = if self.in_order {
            // Planned from scratch in order: one pass reaches the fixpoint.
            self.compress_in_order(now, plan);
            false
        } else {
            self.compress_conservative(now, plan)
        };
        self.trim();
        again
    }

    /// CBF: for each job in queue order, remove its reservation, find its earliest fit from
    /// now among everything else (the running jobs and every other reservation, including those
    /// of the jobs behind it), and put it back there. This is the pyss reference's
    /// `_reschedule_jobs` (the reference simulator pyss), which asserts that no job is delayed.
    ///
    /// No job moves later, by induction over the queue order. Before this pass, job j's slot
    /// was free in the profile holding the running jobs, every other reservation and j itself.
    /// Since then nodes were only freed (early ends, cancellations, jobs ahead of j leaving
    /// their old slots) or taken by jobs ahead of j moving into new slots, and each of those
    /// moved into room that was free at the time, with j's reservation in it. So once j's own
    /// reservation is removed its old slot is free again, and the earliest fit from
    /// `max(now, earliest start)` (≤ the old start: stale starts before `now` were rebuilt
    /// instead) is at or before it.
    ///
    /// This is not the same as planning the queue again from scratch: a job behind j keeps its
    /// old reservation while j is refitted and may block a hole that a fresh plan would give j.
    /// A fresh plan, in turn, may move a job later (a job ahead may refill its old slot).
    fn compress_conservative(&mut self, now: Time, plan: &mut Plan) -> bool {
        let one_pool = self.cluster.pools.len() == 1;
        let mut moved = false;
        // The jobs a compression did not move were all stamped with the same event number, so
        // consecutive entries mostly ask `Freed::since` the same question.
        let mut since: Option<(u64, Option<Time>)> = None;
        for i in 0..self.queue.len() {
            let e = &self.queue[i];
            if e.gone {
                continue;
            }
            let (job, old, id, fitted) = (e.job, e.slot, e.id, e.fitted);
            let from = now.max(job.earliest);
            // A job that cannot start earlier keeps its slot, which the refit would give it
            // back: skip the refit. It cannot start before its lower bound, nor at or after
            // the latest end of what was freed since it was fitted (see `Freed`); before
            // that, one scan of the profile with its slot in place tells (`could_start_before`).
            // Not with a choice of pools: a lower-id pool freed at the same start would win
            // the tie.
            if let (Some((p, s)), true) = (old, one_pool || job.pool.is_some()) {
                let freed = match since {
                    Some((k, f)) if k == fitted => f,
                    _ => {
                        let f = self.freed.since(fitted);
                        since = Some((fitted, f));
                        f
                    }
                };
                let bound = freed.map_or(from, |f| f.min(s));
                let stays = from >= bound || {
                    self.counters.checks += 1;
                    !self.cluster.could_start_before(p, &job, s, from, bound)
                };
                if stays {
                    #[cfg(debug_assertions)]
                    self.assert_stays(p, s, &job, now, from);
                    self.queue[i].fitted = self.freed.seq;
                    continue;
                }
            }
            self.counters.refits += 1;
            if let Some((p, s)) = old {
                self.cluster.add_job(p, s, &job, now, -1);
            }
            let slot = self.cluster.earliest(&job, from);
            debug_assert!(
                old.is_none() || slot.zip(old).is_some_and(|((_, n), (_, o))| n <= o),
                "job {id} moved later in a compression: {old:?} → {slot:?}"
            );
            if let Some(refused) = job.missed_deadline(slot.map(|s| s.1)) {
                plan.rejects.push(refused.reject(id));
                self.take(id);
                if let Some((_, s)) = old {
                    self.freed.record(s.saturating_add(job.walltime));
                    since = None;
                }
                moved = true;
                continue;
            }
            if let Some((p, s)) = slot {
                self.cluster.add_job(p, s, &job, now, 1);
            }
            if slot != old {
                moved = true;
                // Its old slot is free for the jobs behind it now, and for those ahead of it
                // at the next compression. (No old slot: it held nothing.)
                if let Some((_, s)) = old {
                    self.freed.record(s.saturating_add(job.walltime));
                    since = None;
                }
            }
            let e = &mut self.queue[i];
            e.slot = slot;
            e.fitted = self.freed.seq;
        }
        moved
    }

    /// Checks that the refit a compression skipped would have given the job its slot back.
    #[cfg(debug_assertions)]
    fn assert_stays(&mut self, pool: usize, start: Time, job: &Job, now: Time, from: Time) {
        self.cluster.add_job(pool, start, job, now, -1);
        let refit = self.cluster.earliest(job, from);
        self.cluster.add_job(pool, start, job, now, 1);
        assert_eq!(
            refit,
            Some((pool, start)),
            "a skipped refit would have moved the job"
        );
    }

    /// FCFS: the planned starts are those of a plan from scratch in queue order, where a job's
    /// start is its earliest fit at or after the start of the job ahead, among the running jobs
    /// and the jobs ahead only: a job behind never changes the plan of a job ahead.
    ///
    /// So before job j is refitted, the reservations of the jobs behind it that could overlap
    /// its candidate windows are lifted: those starting before j's old end (starts grow along
    /// the queue, so they are a run right behind j), or before its new end if it moved later;
    /// each is refitted in its turn.
    ///
    /// On one pool no job moves later: the job ahead of j starts no later than before, and a
    /// job ahead that moved earlier holds, at or after j's old start, only nodes it held there
    /// before (its new interval ends before its old end, and its old start was before j's). So
    /// j's old slot is still free among the running jobs and the jobs ahead. With several pools
    /// a job ahead may move earlier onto another pool and take j's room there: FCFS planned
    /// from scratch then moves j later, and so does this.
    ///
    /// The pass stops at the first job that keeps its slot and starts after the end of every
    /// change made so far (`freed_until`: freed intervals, old slots left, and slots taken on
    /// another pool): from that start on, the profile of the running jobs and the jobs ahead is
    /// what it was, and every job behind searches from that start on. The lifted jobs behind it
    /// go back to their old slots.
    fn compress_in_order(&mut self, now: Time, plan: &mut Plan) {
        let one_pool = self.cluster.pools.len() == 1;
        let n = self.queue.len();
        let mut lifted = 0;
        let mut prev = now;
        for i in 0..n {
            let e = &self.queue[i];
            if e.gone {
                continue;
            }
            let (job, old, id) = (e.job, e.slot, e.id);
            let old_end = old.map_or(Time::MAX, |(_, s)| s.saturating_add(job.walltime));
            let from = prev.max(now).max(job.earliest);
            let mut reach = old_end;
            let slot = loop {
                while lifted < n {
                    let e = &self.queue[lifted];
                    match e.slot {
                        _ if e.gone => {}
                        Some((p, s)) if lifted <= i || s < reach => {
                            self.cluster.add_job(p, s, &e.job, now, -1);
                        }
                        Some(_) => break,
                        None => {}
                    }
                    lifted += 1;
                }
                // On one pool a job at its lower bound keeps its slot. With several pools jobs
                // ahead may have moved later and taken it: refit.
                let slot = if one_pool && old.is_some_and(|(_, s)| s == from) {
                    old
                } else {
                    self.counters.refits += 1;
                    self.cluster.earliest(&job, from)
                };
                // Moved later (several pools): jobs behind that start before its new end were
                // still in the way; lift them too and fit again (no later than this fit).
                match slot {
                    Some((_, s)) if s.saturating_add(job.walltime) > reach && lifted < n => {
                        reach = s.saturating_add(job.walltime);
                    }
                    _ => break slot,
                }
            };
            debug_assert!(
                !one_pool || old.is_none() || slot.zip(old).is_some_and(|((_, n), (_, o))| n <= o),
                "job {id} moved later in a compression: {old:?} → {slot:?}"
            );
            if let Some(refused) = job.missed_deadline(slot.map(|s| s.1)) {
                plan.rejects.push(refused.reject(id));
                self.take(id);
                self.freed_until = Time::MAX;
                continue;
            }
            let Some((p, s)) = slot else {
                // This job never starts (a hold that never ends), so no job behind it does.
                for k in i..n {
                    let e = &mut self.queue[k];
                    if let (false, Some((p, s))) = (e.gone || k < lifted, e.slot) {
                        self.cluster.add_job(p, s, &e.job, now, -1);
                    }
                    e.slot = None;
                }
                break;
            };
            self.cluster.add_job(p, s, &job, now, 1);
            self.queue[i].slot = slot;
            prev = s;
            if slot != old {
                // Its old slot is freed; its new one may hold nodes it did not hold before when it
                // moved to another pool (on one pool the new interval ends before the old one).
                self.freed_until = self
                    .freed_until
                    .max(old_end)
                    .max(s.saturating_add(job.walltime));
            } else if s >= self.freed_until {
                for e in self.queue.range(i + 1..lifted) {
                    if let (false, Some((p, s))) = (e.gone, e.slot) {
                        self.cluster.add_job(p, s, &e.job, now, 1);
                    }
                }
                break;
            }
        }
    }

    /// The earliest start to search from: `None` when, in order, the job ahead has no start.
    fn lower_bound(&self, job: &Job, now: Time, prev: Option<Time>) -> Option<Time> {
        let from = now.max(job.earliest);
        if self.in_order {
            prev.map(|p| p.max(from))
        } else {
            Some(from)
        }
    }

    /// Appends a job at the end of the queue at its earliest fit.
    fn push(
        &mut self,
        id: JobId,
        job: Job,
        asked: Options,
        now: Time,
        plan: &mut Plan,
        hints: Option<&mut FitHints>,
    ) {
        let prev = if self.in_order {
            match self.queue.iter().rev().find(|e| !e.gone) {
                Some(e) => e.slot.map(|s| s.1),
                None => Some(now),
            }
        } else {
            Some(now)
        };
        let from = self.lower_bound(&job, now, prev);
        // A moldable job takes the option that completes earliest from where it may start (the
        // OAR rule, `Cluster::choose`); the hints know rigid fits only and are not used for it.
        let (job, slot) = match (&asked, from) {
            (Some(options), Some(f)) => match self.cluster.choose(options, f) {
                Some((chosen, p, s)) => (chosen, Some((p, s))),
                None => (job, None),
            },
            _ => (
                job,
                from.and_then(|f| self.cluster.earliest_hinted(&job, f, hints)),
            ),
        };
        if let Some(refused) = job.missed_deadline(slot.map(|s| s.1)) {
            plan.rejects.push(refused.reject(id));
            return;
        }
        if let Some((p, s)) = slot {
            self.cluster.add_job(p, s, &job, now, 1);
        }
        self.pos.insert(id, self.base + self.queue.len() as u64);
        self.queue.push_back(Entry {
            id,
            job,
            asked,
            slot,
            fitted: self.freed.seq,
            seen: self.call,
            gone: false,
        });
    }

    /// Forgets the book and plans `snap` from scratch, in its queue order. Unlike a compression
    /// this may move a job later than its previous reservation: a job now ahead of it may take
    /// its room. It happens only when the order of the queue changes, a queued request changes,
    /// the pools change, or the driver did something other than what was planned.
    fn rebuild(&mut self, snap: &Snapshot<'_>, plan: &mut Plan) {
        self.counters.rebuilds += 1;
        let now = snap.now;
        self.cluster = Cluster::new(snap.pools);
        // An account of this snapshot's changes is of no use to a plan from scratch.
        self.told_running.take();
        self.told_pending.take();
        self.pending_order.clear();
        self.pending_order.extend(snap.pending.iter().map(|p| p.id));
        self.running.clear();
        self.running_order.clear();
        self.running_order.extend(snap.running.iter().map(|r| r.id));
        for r in snap.running {
            self.cluster.add_holds(&r.holds, now, 1);
            self.running.insert(
                r.id,
                Run {
                    holds: r.holds.clone(),
                    seen: self.call,
                },
            );
        }
        self.queue.clear();
        self.pos.clear();
        self.base = 0;
        self.tombstones = 0;
        // Every job is fitted afresh below: nothing freed before concerns them.
        self.freed.stack.clear();
        // Hints cost a table of ~1 MB per pool: worth it for long queues only.
        let mut hints =
            (snap.pending.len() >= 256).then(|| FitHints::new(now, self.cluster.pools.len()));
        for p in snap.pending {
            match view(p, &self.cluster.pools) {
                Err(refused) => plan.rejects.push(refused.reject(p.id)),
                Ok((job, asked)) => self.push(p.id, job, asked, now, plan, hints.as_mut()),
            }
        }
    }

    /// [`Book::answer`] reduced as [`Plan::starts_only`] reduces it: the reservations
    /// starting now, in queue order, and a wake-up at the earliest future one.
    fn answer_starts(&self, plan: &mut Plan, now: Time) {
        let mut wake: Option<Time> = None;
        for e in self.queue.iter().filter(|e| !e.gone) {
            let Some((p, start)) = e.slot else { continue };
            if start > now {
                if wake.is_none_or(|w| start < w) {
                    wake = Some(start);
                }
                continue;
            }
            plan.placements.push(Placement {
                job: e.id,
                start,
                shape: e.job.shape(self.cluster.pools[p].id),
                claim_from: sched_core::RNone,
            });
        }
        plan.wake_at = wake.into();
    }

    /// Every reservation in queue order, and a wake-up at the earliest future one. The drivers
    /// call at every arrival and end, but a reservation may fall where nothing happens: at a
    /// job's `--begin` time, or at the old end of a job that has since moved earlier (the jobs
    /// ahead of it were refitted before it moved). pyss starts every job at its reservation.
    fn answer(&self, mut plan: Plan, now: Time) -> Plan {
        plan.placements.reserve(self.queue.len() - self.tombstones);
        let mut wake: Option<Time> = None;
        for e in self.queue.iter().filter(|e| !e.gone) {
            let Some((p, start)) = e.slot else { continue };
            if start > now && wake.is_none_or(|w| start < w) {
                wake = Some(start);
            }
            plan.placements.push(Placement {
                job: e.id,
                start,
                shape: e.job.shape(self.cluster.pools[p].id),
                claim_from: sched_core::RNone,
            });
        }
        plan.wake_at = wake.into();
        plan
    }
}

enum Update {
    Rebuild,
    /// The jobs to add are in `Book::new_jobs`.
    Incremental {
        compress: u32,
    },
}

/// Whether `p` asks for what `e` was planned as: its [`Job::view`] on `pools` (the pools the
/// entry was planned on) is the entry's. A rigid request is compared field by field, without
/// building the view: an unchanged one on unchanged pools passes the checks it passed when the
/// entry was made, and its view is `Job::of`'s copy of its fields.
fn same_request(p: &Pending, e: &Entry, pools: &[Pool]) -> bool {
    if let (Request::Rigid(r), None) = (&p.request, &e.asked) {
        let j = &e.job;
        return !j.moldable
            && j.deadline.is_none()
            && (j.pool, j.nodes, j.walltime) == (r.pool.into_option(), r.nodes, r.walltime)
            && j.earliest == p.earliest_start.max(p.submit);
    }
    match (view(p, pools), &e.asked) {
        (Ok((_, Some(now_asked))), Some(asked)) => now_asked == *asked,
        (Ok((job, None)), None) => job == e.job,
        _ => false,
    }
}

/// How the book sees a pending job: [`Job::view`].
fn view(p: &Pending, pools: &[Pool]) -> Result<(Job, Options), Refusal> {
    Job::view(p, pools)
}
