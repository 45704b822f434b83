//! Delta snapshots (ABI 3.0): a call sends only what changed since the previous one.
//!
//! The host keeps a mirror of the snapshot the plugin holds; at each call it compares the new
//! snapshot's lists with the mirror ([`diff`]: runs of kept, dropped and inserted entries, an
//! entry whose content changed being dropped and inserted again) and sends those runs with the
//! inserted entries ([`FfiSnapshotDelta`]). The plugin applies them to the snapshot it kept
//! ([`apply`]) and plans on it. Each delta is numbered; a plugin that does not hold the one a
//! delta applies to (a fresh instance, a delta that does not fit) answers `Stale` and the host
//! sends the whole snapshot, which is the delta from the empty snapshot (generation 0).
//!
//! Running jobs' holds start at `now` in every snapshot, so they change at every call; both
//! sides first bring the kept holds to the new `now` themselves
//! ([`sched_core::Running::clip_holds`]), and only a running job that changed otherwise is sent.
//!
//! What it costs per call: a comparison of every entry with its mirror (no allocation), and
//! for the entries that changed, a conversion and a move. A queue of thousands of jobs of which
//! one started and one arrived crosses as two runs and one job, instead of two full copies with
//! an allocation per request that owns a list.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use abi_stable::std_types::RVec;
use sched_core::idmap::IdHasher;
use sched_core::{Changes, JobId, ListChanges, Pending, Pool, PoolSteps, Running, Snapshot};

use crate::types::{
    FfiEdit, FfiListDelta, FfiPending, FfiPool, FfiRunning, FfiSnapshotDelta, OwnedSnapshot,
};

/// A delta whose runs do not fit the list they are applied to (more entries kept or dropped
/// than the list has, or a count of items that is not the runs' inserts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeltaMismatch;

/// An entry of a snapshot's list, with the identity [`diff`] re-synchronises on.
pub trait Keyed {
    /// The entry's identity (a job's or a pool's id).
    fn key(&self) -> u64;
}

impl Keyed for Pool {
    fn key(&self) -> u64 {
        u64::from(self.id.0)
    }
}

impl Keyed for Running {
    fn key(&self) -> u64 {
        self.id.0
    }
}

impl Keyed for Pending {
    fn key(&self) -> u64 {
        self.id.0
    }
}

/// Builds the runs of a list delta.
struct Runs<'a> {
    out: &'a mut RVec<FfiEdit>,
    cur: FfiEdit,
}

impl Runs<'_> {
    fn keep(&mut self, n: usize) {
        if self.cur.drop > 0 || self.cur.insert > 0 {
            self.out.push(self.cur);
            self.cur = FfiEdit::default();
        }
        self.cur.keep += n as u64;
    }

    fn drop(&mut self, n: usize) {
        self.cur.drop += n as u64;
    }

    fn insert(&mut self, n: usize) {
        self.cur.insert += n as u64;
    }

    /// Pushes the last run, unless it only keeps: entries after the last run are kept.
    fn finish(self) {
        if self.cur.drop > 0 || self.cur.insert > 0 {
            self.out.push(self.cur);
        }
    }
}

/// How far [`diff`] looks ahead for the entry it lost sync on before indexing both lists, at
/// least (more when the lists are long: see `budget` in [`diff_by`]).
const LOOKAHEAD: usize = 32;

/// Reused indexes of the two lists' keys, for a diff whose look-ahead failed.
#[derive(Debug, Default)]
pub struct DiffScratch {
    old: HashMap<u64, usize, BuildHasherDefault<IdHasher>>,
    new: HashMap<u64, usize, BuildHasherDefault<IdHasher>>,
}

enum Resync {
    Drop(usize),
    Insert(usize),
    Replace(usize),
}

/// The runs that turn `old` into `new`, appended to `edits` (cleared first), and the positions
/// in `new` of the inserted entries, in `inserted` (cleared first).
///
/// Entries are kept only when equal, so the runs rebuild `new` exactly whatever the keys (even
/// duplicated ones); the keys only decide how cheaply: a run of dropped jobs (started,
/// cancelled) or inserted ones (submitted) is found by looking ahead for the key sync was lost
/// on, and a reordering by indexing both lists once.
pub fn diff<T: PartialEq + Keyed>(
    old: &[T],
    new: &[T],
    edits: &mut RVec<FfiEdit>,
    inserted: &mut Vec<usize>,
    scratch: &mut DiffScratch,
) {
    diff_by(
        Sides {
            old: old.len(),
            new: new.len(),
            same: |i: usize, j: usize| old[i] == new[j],
            old_key: |i: usize| old[i].key(),
            new_key: |j: usize| new[j].key(),
        },
        edits,
        inserted,
        scratch,
    );
}

/// [`diff`] of a list whose entries are known by their keys alone: `old` holds the keys of the
/// entries the plugin has, and an entry of `new` whose key is kept is taken to be unchanged
/// (the driver's [`Continuity::StableJobs`] promise). Compares integers only.
pub fn diff_keys<T: Keyed>(
    old: &[u64],
    new: &[T],
    edits: &mut RVec<FfiEdit>,
    inserted: &mut Vec<usize>,
    scratch: &mut DiffScratch,
) {
    diff_by(
        Sides {
            old: old.len(),
            new: new.len(),
            same: |i: usize, j: usize| old[i] == new[j].key(),
            old_key: |i: usize| old[i],
            new_key: |j: usize| new[j].key(),
        },
        edits,
        inserted,
        scratch,
    );
}

/// The two lists [`diff_by`] compares, by position.
struct Sides<S, KO, KN> {
    old: usize,
    new: usize,
    /// Whether `old[i]` and `new[j]` are the same entry, unchanged.
    same: S,
    old_key: KO,
    new_key: KN,
}

fn diff_by<S, KO, KN>(
    sides: Sides<S, KO, KN>,
    edits: &mut RVec<FfiEdit>,
    inserted: &mut Vec<usize>,
    scratch: &mut DiffScratch,
) where
    S: Fn(usize, usize) -> bool,
    KO: Fn(usize) -> u64,
    KN: Fn(usize) -> u64,
{
    let Sides {
        old: n_old,
        new: n_new,
        same,
        old_key,
        new_key,
    } = sides;
    edits.clear();
    inserted.clear();
    let mut runs = Runs {
        out: edits,
        cur: FfiEdit::default(),
    };
    let (mut i, mut j) = (0, 0);
    let mut indexed = false;
    // The look-ahead's steps, over the whole diff: runs of any length (a burst of starts from
    // the queue's head, of ends) are found by scanning, in time proportional to the lists;
    // only repeated reorderings exhaust it and index the keys.
    let mut budget = 2 * (n_old + n_new) + LOOKAHEAD;
    while i < n_old && j < n_new {
        if same(i, j) {
            let start = i;
            while i < n_old && j < n_new && same(i, j) {
                i += 1;
                j += 1;
            }
            runs.keep(i - start);
            continue;
        }
        let (ko, kn) = (old_key(i), new_key(j));
        let step = if ko == kn {
            Resync::Replace(1)
        } else if !indexed {
            match look_ahead(n_old, n_new, &old_key, &new_key, i, j, &mut budget) {
                Some(r) => r,
                None => {
                    indexed = true;
                    scratch.old.clear();
                    scratch.new.clear();
                    scratch.old.extend((0..n_old).map(|p| (old_key(p), p)));
                    scratch.new.extend((0..n_new).map(|p| (new_key(p), p)));
                    by_index(scratch, ko, kn, i, j)
                }
            }
        } else {
            by_index(scratch, ko, kn, i, j)
        };
        match step {
            Resync::Drop(d) => {
                runs.drop(d);
                i += d;
            }
            Resync::Insert(d) => {
                runs.insert(d);
                inserted.extend(j..j + d);
                j += d;
            }
            Resync::Replace(d) => {
                runs.drop(d);
                runs.insert(d);
                inserted.extend(j..j + d);
                i += d;
                j += d;
            }
        }
    }
    if i < n_old {
        runs.drop(n_old - i);
    }
    if j < n_new {
        runs.insert(n_new - j);
        inserted.extend(j..n_new);
    }
    runs.finish();
}

/// The nearest point where the lists' keys agree again, within `budget` steps (which it uses
/// up).
fn look_ahead(
    n_old: usize,
    n_new: usize,
    old_key: impl Fn(usize) -> u64,
    new_key: impl Fn(usize) -> u64,
    i: usize,
    j: usize,
    budget: &mut usize,
) -> Option<Resync> {
    let (ko, kn) = (old_key(i), new_key(j));
    let mut d = 1;
    while *budget > 0 {
        *budget -= 1;
        let o = (i + d < n_old).then(|| old_key(i + d));
        let n = (j + d < n_new).then(|| new_key(j + d));
        if o.is_none() && n.is_none() {
            break;
        }
        if o == Some(kn) {
            return Some(Resync::Drop(d));
        }
        if n == Some(ko) {
            return Some(Resync::Insert(d));
        }
        if o.is_some() && o == n {
            return Some(Resync::Replace(d));
        }
        d += 1;
    }
    None
}

/// One step by the lists' indexes: drop the old entry unless it comes later in the new list,
/// else insert the new one unless it comes later in the old list, else (a reordering) drop.
fn by_index(scratch: &DiffScratch, ko: u64, kn: u64, i: usize, j: usize) -> Resync {
    let old_later_in_new = scratch.new.get(&ko).is_some_and(|&q| q > j);
    let new_later_in_old = scratch.old.get(&kn).is_some_and(|&p| p > i);
    if !old_later_in_new || new_later_in_old {
        Resync::Drop(1)
    } else {
        Resync::Insert(1)
    }
}

/// Applies `edits` to `v`, taking the inserted entries from `items` (`make` builds one,
/// `assign` overwrites a dropped one with it, reusing its buffers).
///
/// In place when every insert lands on a slot freed by a drop before it (or at the end): kept
/// entries are moved down by rotations, so the unchanged head of a list is not touched and
/// nothing is allocated for a replaced entry. Otherwise the list is rebuilt once into
/// `scratch`, whose buffer is then swapped in.
pub fn apply<T, I>(
    v: &mut Vec<T>,
    scratch: &mut Vec<T>,
    edits: &[FfiEdit],
    items: &[I],
    make: impl FnMut(&I) -> T,
    assign: impl FnMut(&mut T, &I),
) -> Result<(), DeltaMismatch> {
    apply_at(v, &mut 0, false, scratch, edits, items, make, assign)
}

/// [`apply`] to the list `v[*head..]`. With `move_head`, a leading drop (the jobs at the
/// head of a queue starting) moves `*head` past them instead of moving every entry behind
/// them down; the dead prefix is dropped once it is as long as the list, so each entry moves
/// O(1) times on average however long the queue.
#[allow(clippy::too_many_arguments)]
pub(crate) fn apply_at<T, I>(
    v: &mut Vec<T>,
    head: &mut usize,
    move_head: bool,
    scratch: &mut Vec<T>,
    mut edits: &[FfiEdit],
    items: &[I],
    mut make: impl FnMut(&I) -> T,
    mut assign: impl FnMut(&mut T, &I),
) -> Result<(), DeltaMismatch> {
    let live = (v.len() - *head) as u64;
    let mut lead = 0;
    if let Some(e) = edits.first() {
        if move_head && e.keep == 0 && e.insert == 0 {
            lead = e.drop;
            edits = &edits[1..];
        }
    }
    let len = live.checked_sub(lead).ok_or(DeltaMismatch)?;
    let (mut r, mut w, mut n) = (0u64, 0u64, 0u64);
    let mut in_place = true;
    for e in edits {
        r = r
            .checked_add(e.keep)
            .and_then(|r| r.checked_add(e.drop))
            .filter(|&r| r <= len)
            .ok_or(DeltaMismatch)?;
        w += e.keep;
        if e.insert > 0 && r < len && e.insert > r.saturating_sub(w) {
            in_place = false;
        }
        w = w.checked_add(e.insert).ok_or(DeltaMismatch)?;
        n = n.checked_add(e.insert).ok_or(DeltaMismatch)?;
    }
    if n != items.len() as u64 {
        return Err(DeltaMismatch);
    }
    *head += lead as usize;
    if !in_place {
        v.drain(..*head);
        *head = 0;
    }
    let base = *head;
    let mut items = items.iter();
    if in_place {
        let (mut r, mut w) = (base, base);
        for e in edits {
            let keep = e.keep as usize;
            if keep > 0 {
                if w < r {
                    v[w..r + keep].rotate_left(r - w);
                }
                r += keep;
                w += keep;
            }
            // The dropped entries stay in `v[w..r]` until an insert reuses them.
            r += e.drop as usize;
            for item in items.by_ref().take(e.insert as usize) {
                if w < r {
                    assign(&mut v[w], item);
                } else {
                    v.push(make(item));
                    r += 1;
                }
                w += 1;
            }
        }
        if w < r {
            let len = v.len();
            v[w..].rotate_left(r - w);
            v.truncate(len - (r - w));
        }
        if *head > 0 && *head >= v.len() - *head {
            v.drain(..*head);
            *head = 0;
        }
    } else {
        scratch.clear();
        scratch.reserve(v.len() + items.len());
        let mut src = v.drain(..);
        for e in edits {
            scratch.extend(src.by_ref().take(e.keep as usize));
            src.by_ref().take(e.drop as usize).for_each(drop);
            scratch.extend(items.by_ref().take(e.insert as usize).map(&mut make));
        }
        scratch.extend(src);
        std::mem::swap(v, scratch);
        scratch.clear();
    }
    Ok(())
}

/// Overwrites `dst` with `src`'s holds, reusing the lists' buffers.
fn assign_holds(dst: &mut Vec<PoolSteps>, src: &[PoolSteps]) {
    dst.truncate(src.len());
    for (k, h) in src.iter().enumerate() {
        match dst.get_mut(k) {
            Some(d) => assign_pool_steps(d, h),
            None => dst.push(h.clone()),
        }
    }
}

/// Overwrites `d` with `h`, reusing its steps' buffer.
fn assign_pool_steps(d: &mut PoolSteps, h: &PoolSteps) {
    d.pool = h.pool;
    d.start = h.start;
    d.steps.clear();
    d.steps.extend(h.steps.iter().copied());
}

/// Overwrites `dst` with `src`, reusing the holds' buffers (a running job's holds change at
/// every call: they start at `now`).
fn assign_running(dst: &mut Running, src: &Running) {
    dst.id = src.id;
    dst.user = src.user;
    dst.request.clone_from(&src.request);
    dst.shape.clone_from(&src.shape);
    dst.start = src.start;
    assign_holds(&mut dst.holds, &src.holds);
    dst.killable = src.killable;
}

/// [`assign_running`] from the FFI mirror, on the plugin's side.
fn assign_running_from_ffi(dst: &mut Running, src: &FfiRunning) {
    dst.id = JobId(src.id);
    dst.user = src.user;
    dst.request = (&src.request).into();
    dst.shape.clone_from(&src.shape);
    dst.start = src.start;
    assign_holds(&mut dst.holds, &src.holds);
    dst.killable = src.killable;
}

/// [`assign_running`] into the FFI mirror, on the host's side.
fn assign_ffi_running(dst: &mut FfiRunning, src: &Running) {
    dst.id = src.id.0;
    dst.user = src.user;
    dst.request = (&src.request).into();
    dst.shape.clone_from(&src.shape);
    dst.start = src.start;
    dst.holds.truncate(src.holds.len());
    for (k, h) in src.holds.iter().enumerate() {
        match dst.holds.get_mut(k) {
            Some(d) => assign_pool_steps(d, h),
            None => dst.holds.push(h.clone()),
        }
    }
    dst.killable = src.killable;
}

/// Overwrites the items of `out` with `src`, element by element (keeping what each element
/// owns for `assign` to reuse), then drops the surplus.
fn refill<'a, T, S: 'a>(
    out: &mut RVec<T>,
    src: impl Iterator<Item = &'a S>,
    make: impl Fn(&S) -> T,
    assign: impl Fn(&mut T, &S),
) {
    let mut k = 0;
    for s in src {
        match out.get_mut(k) {
            Some(d) => assign(d, s),
            None => out.push(make(s)),
        }
        k += 1;
    }
    out.truncate(k);
}

/// [`refill`] that moves the surplus entries of `out` to `kept` (a few at most) and takes
/// entries from there to overwrite before making new ones.
fn refill_keeping<'a, T, S: 'a>(
    out: &mut RVec<T>,
    kept: &mut Vec<T>,
    src: impl Iterator<Item = &'a S>,
    make: impl Fn(&S) -> T,
    assign: impl Fn(&mut T, &S),
) {
    let mut k = 0;
    for s in src {
        match out.get_mut(k) {
            Some(d) => assign(d, s),
            None => match kept.pop() {
                Some(mut d) => {
                    assign(&mut d, s);
                    out.push(d);
                }
                None => out.push(make(s)),
            },
        }
        k += 1;
    }
    while out.len() > k {
        match out.pop() {
            Some(d) if kept.len() < GONE_KEPT => kept.push(d),
            _ => {}
        }
    }
}

/// The runs of a queue's delta from the driver's account: `old` entries lose those at `c.left`
/// and gain `c.arrived` at the end, giving `new`. Writes the runs to `edits` and the positions
/// of the arrivals in the new queue to `inserted` (both cleared first); `false`, with nothing
/// to use, when the account does not fit those lengths.
fn queue_runs(
    c: &QueueChanges,
    old: usize,
    new: usize,
    edits: &mut RVec<FfiEdit>,
    inserted: &mut Vec<usize>,
) -> bool {
    let ascending = c.left.windows(2).all(|w| w[0] < w[1]);
    if !ascending
        || c.left.last().is_some_and(|&p| p >= old)
        || old - c.left.len() + c.arrived != new
    {
        return false;
    }
    edits.clear();
    inserted.clear();
    let mut runs = Runs {
        out: edits,
        cur: FfiEdit::default(),
    };
    let mut at = 0;
    for &p in &c.left {
        if p > at {
            runs.keep(p - at);
        }
        runs.drop(1);
        at = p + 1;
    }
    if c.arrived > 0 {
        if old > at {
            runs.keep(old - at);
        }
        runs.insert(c.arrived);
        inserted.extend(new - c.arrived..new);
    }
    runs.finish();
    true
}

/// How many entries that left a list are kept for arrivals to reuse.
const GONE_KEPT: usize = 16;

/// Follows `c`, an account that fits `v[*head..]` with `items.len()` arrivals, on that list:
/// the entries at `c.left` leave it (with `move_head`, those leaving its head only move
/// `*head`, as [`apply_at`] does), and the arrivals are appended, each built in an entry that
/// left (`assign`, reusing what it owns) or else anew (`make`). Left entries are kept in
/// `gone` for that, a few at most.
#[allow(clippy::too_many_arguments)]
fn follow<T, I>(
    v: &mut Vec<T>,
    head: &mut usize,
    move_head: bool,
    c: &ListChanges,
    items: &[I],
    gone: &mut Vec<T>,
    make: impl Fn(&I) -> T,
    assign: impl Fn(&mut T, &I),
) {
    let base = *head;
    let lead = if move_head {
        c.left
            .iter()
            .enumerate()
            .take_while(|&(k, &p)| k == p)
            .count()
    } else {
        0
    };
    let rest = &c.left[lead..];
    if rest.len() <= GONE_KEPT {
        // Typically one job started or ended: one move of the entries behind it.
        for (k, &p) in rest.iter().enumerate() {
            let e = v.remove(base + p - k);
            if gone.len() < GONE_KEPT {
                gone.push(e);
            }
        }
    } else {
        // Many at once: one pass over the list. `at` is an entry's index in `v`, positions
        // are relative to the live list `v[base..]`.
        let mut left = rest.iter().peekable();
        let mut at = 0;
        v.retain(|_| {
            let keep = at < base + lead || left.next_if_eq(&&(at - base)).is_none();
            at += 1;
            keep
        });
    }
    *head = base + lead;
    for item in items {
        match gone.pop() {
            Some(mut e) => {
                assign(&mut e, item);
                v.push(e);
            }
            None => v.push(make(item)),
        }
    }
    if *head > 0 && *head >= v.len() - *head {
        v.drain(..*head);
        *head = 0;
    }
}

/// Brings every running job's holds to `now`; a rigid job's one hold of one step, nearly
/// every job of a replay, without a call.
fn clip_all(running: &mut [Running], now: u64) {
    for r in running {
        if let [h] = r.holds.as_mut_slice() {
            if h.start >= now {
                continue;
            }
            if let [s] = h.steps.as_mut_slice() {
                let end = h.start.saturating_add(s.duration);
                if end > now {
                    h.start = now;
                    s.duration = end - now;
                    continue;
                }
            }
        }
        r.clip_holds(now);
    }
}

/// How the snapshots of a [`crate::LoadedPolicy`] crossed the boundary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BoundaryStats {
    /// Calls that sent only the changes since the previous call.
    pub deltas: u64,
    /// Calls that sent the whole snapshot (the first, after a panic, after a `Stale` answer,
    /// and every call with deltas turned off).
    pub whole: u64,
    /// `Stale` answers (a plugin that did not hold the delta's base).
    pub stale: u64,
    /// List entries sent (inserted or changed pools, running and pending jobs).
    pub entries: u64,
}

/// What a driver vouches for about the snapshots it sends through one host, so that the
/// boundary need not compare what is vouched for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Continuity {
    /// Nothing: every entry of the running and pending lists is compared with what the plugin
    /// holds (batchd, where an update may change a queued or running job in place).
    #[default]
    Compared,
    /// A job keeps its content for as long as it stays in a list: a pending job is never
    /// changed in place, a running one changes only as time clips its holds, and an id is not
    /// reused for another job until the driver declares its continuity again (which makes the
    /// next snapshot cross whole). The lists are then diffed by job id alone, and the host keeps
    /// only the ids of what the plugin holds: the boundary's work per call is a walk over two
    /// lists of integers plus what changed (esim's engine, whose jobs enter the queue as
    /// submitted and the running list as started, and are not edited).
    ///
    /// A driver that breaks the promise makes the plugin plan on stale entries; the validator
    /// still checks every plan against the true snapshot, so nothing over-commits, and debug
    /// builds keep the full mirror and assert the promise at every call.
    StableJobs,
}

/// A driver's account of how the queue of a call's snapshot differs from the previous call's:
/// the jobs that left it (started, rejected, cancelled), by their positions in the previous
/// queue, and how many arrived at its end. With [`Continuity::StableJobs`] that is the whole
/// difference, so the boundary builds the queue's delta from it without walking the queue
/// (esim's engine, whose queue is in submit order).
///
/// An account that does not fit the queue (positions out of order or out of range, a length
/// that does not add up) is not used: the queue is diffed by id instead. Debug builds check
/// every account used against the queue itself.
pub type QueueChanges = ListChanges;

/// The host's side: the mirror of what the plugin holds, and the buffers of the delta.
#[derive(Debug, Default)]
pub(crate) struct DeltaHost {
    /// The generation the plugin holds (0: nothing, or unknown).
    generation: u64,
    /// The last generation handed out.
    counter: u64,
    continuity: Continuity,
    /// What the plugin holds: the pools always; the running and pending jobs with
    /// [`Continuity::Compared`] (and in debug builds, to check the promise of `StableJobs`).
    mirror: OwnedSnapshot,
    /// With [`Continuity::StableJobs`]: the ids of the running jobs the plugin holds, and of its
    /// queue (`queue_ids[queue_head..]`, with a dead prefix as the plugin's own queue has).
    running_ids: Vec<u64>,
    queue_ids: Vec<u64>,
    queue_head: usize,
    spare_ids: Vec<u64>,
    /// The driver's account of the next call's queue, when `queue_told`.
    queue_changes: QueueChanges,
    queue_told: bool,
    /// The driver's account of the next call's running jobs, when `running_told`.
    running_changes: ListChanges,
    running_told: bool,
    spare_pools: Vec<Pool>,
    spare_running: Vec<Running>,
    spare_pending: Vec<Pending>,
    delta: FfiSnapshotDelta,
    /// Running jobs' FFI entries sent before, whose buffers the next ones reuse.
    sent_running: Vec<FfiRunning>,
    inserted: [Vec<usize>; 3],
    scratch: DiffScratch,
    pub(crate) stats: BoundaryStats,
}

impl DeltaHost {
    /// Forgets what the plugin holds: the next delta is the whole snapshot.
    pub(crate) fn reset(&mut self) {
        self.generation = 0;
        self.mirror.pools.clear();
        self.mirror.running.clear();
        self.mirror.pending.clear();
        self.running_ids.clear();
        self.queue_ids.clear();
        self.queue_head = 0;
        // An account is relative to what the plugin held.
        self.queue_told = false;
        self.running_told = false;
    }

    /// Takes the driver's account of how the next call's queue differs from the last one's.
    /// Takes the driver's account of how the next call's lists differ from the last one's.
    pub(crate) fn expect_changes(&mut self, changes: &Changes) {
        if let Some(q) = &changes.pending {
            self.expect_queue_changes(q);
        }
        if let Some(r) = &changes.running {
            self.running_changes.clone_from(r);
            self.running_told = true;
        }
    }

    pub(crate) fn expect_queue_changes(&mut self, changes: &QueueChanges) {
        self.queue_changes.clone_from(changes);
        self.queue_told = true;
    }

    /// Takes the driver's word for what follows ([`Continuity`]); the next delta is the whole
    /// snapshot, so that nothing sent before is trusted under the new promise.
    pub(crate) fn set_continuity(&mut self, c: Continuity) {
        self.continuity = c;
        self.reset();
    }

    /// Whether the running and pending jobs are mirrored whole (else by id only).
    fn mirrors_jobs(&self) -> bool {
        self.continuity == Continuity::Compared || cfg!(debug_assertions)
    }

    /// The delta from what the plugin holds to `s`.
    pub(crate) fn prepare(&mut self, s: &Snapshot<'_>) -> &FfiSnapshotDelta {
        self.counter += 1;
        let mirrors_jobs = self.mirrors_jobs();
        let d = &mut self.delta;
        d.base = self.generation;
        d.generation = self.counter;
        d.now = s.now;
        // Both sides bring the kept running jobs' holds to now themselves; what still differs
        // after that is sent.
        // (Not when time stood still: several calls of one instant, esim's per-event order.)
        d.clip_running = self.generation != 0 && s.now > self.mirror.now;
        if d.clip_running && mirrors_jobs {
            for r in &mut self.mirror.running {
                r.clip_holds(s.now);
            }
        }
        let [ip, ir, iq] = &mut self.inserted;
        diff(
            &self.mirror.pools,
            s.pools,
            &mut d.pools.edits,
            ip,
            &mut self.scratch,
        );
        match self.continuity {
            Continuity::Compared => {
                diff(
                    &self.mirror.running,
                    s.running,
                    &mut d.running.edits,
                    ir,
                    &mut self.scratch,
                );
                diff(
                    &self.mirror.pending,
                    s.pending,
                    &mut d.pending.edits,
                    iq,
                    &mut self.scratch,
                );
            }
            Continuity::StableJobs => {
                let pending = &self.queue_ids[self.queue_head..];
                // The running jobs' account likewise, else their ids are diffed.
                let told = std::mem::take(&mut self.running_told);
                let used = told
                    && self.generation != 0
                    && queue_runs(
                        &self.running_changes,
                        self.running_ids.len(),
                        s.running.len(),
                        &mut d.running.edits,
                        ir,
                    );
                if !used {
                    diff_keys(
                        &self.running_ids,
                        s.running,
                        &mut d.running.edits,
                        ir,
                        &mut self.scratch,
                    );
                }
                // An account is for one call only.
                let told = std::mem::take(&mut self.queue_told);
                let used = told
                    && self.generation != 0
                    && queue_runs(
                        &self.queue_changes,
                        pending.len(),
                        s.pending.len(),
                        &mut d.pending.edits,
                        iq,
                    );
                if !used {
                    diff_keys(
                        pending,
                        s.pending,
                        &mut d.pending.edits,
                        iq,
                        &mut self.scratch,
                    );
                }
            }
        }
        refill(
            &mut d.pools.items,
            ip.iter().map(|&k| &s.pools[k]),
            |p| FfiPool::from(p),
            |o, p| *o = p.into(),
        );
        // Most calls send no running job: what the last one sent is kept aside for the next
        // to overwrite (a new entry is three allocations), not freed.
        refill_keeping(
            &mut d.running.items,
            &mut self.sent_running,
            ir.iter().map(|&k| &s.running[k]),
            |r| FfiRunning::from(r),
            assign_ffi_running,
        );
        refill(
            &mut d.pending.items,
            iq.iter().map(|&k| &s.pending[k]),
            |p| FfiPending::from(p),
            |o, p| *o = p.into(),
        );
        &self.delta
    }

    /// Records that the plugin applied the last prepared delta: the mirror becomes `s`.
    pub(crate) fn commit(&mut self, s: &Snapshot<'_>) {
        let d = &self.delta;
        let sent = self.inserted.iter().map(Vec::len).sum::<usize>() as u64;
        if d.base == 0 {
            self.stats.whole += 1;
        } else {
            self.stats.deltas += 1;
        }
        self.stats.entries += sent;
        let [ip, ir, iq] = &self.inserted;
        let mirrors_jobs = self.mirrors_jobs();
        let m = &mut self.mirror;
        let mut ok = apply(
            &mut m.pools,
            &mut self.spare_pools,
            &d.pools.edits,
            ip,
            |&k| s.pools[k].clone(),
            |o, &k| o.clone_from(&s.pools[k]),
        );
        if self.continuity == Continuity::StableJobs {
            // The running jobs' ids are copied (there are no more of them than nodes); the
            // queue's follow its runs with a moving head as the plugin's queue does, so that a
            // long queue costs the host only what changed. A driver's wrong account of the
            // queue is caught here in debug builds.
            self.running_ids.clear();
            self.running_ids.extend(s.running.iter().map(|r| r.id.0));
            ok = ok.and_then(|()| {
                apply_at(
                    &mut self.queue_ids,
                    &mut self.queue_head,
                    true,
                    &mut self.spare_ids,
                    &d.pending.edits,
                    iq,
                    |&k| s.pending[k].id.0,
                    |o, &k| *o = s.pending[k].id.0,
                )
            });
            debug_assert!(
                ok.is_err()
                    || self.queue_ids[self.queue_head..]
                        .iter()
                        .eq(s.pending.iter().map(|p| &p.id.0)),
                "the host's queue differs from the snapshot's: \
                 a driver's account of the queue's changes was wrong"
            );
        }
        if mirrors_jobs {
            ok = ok
                .and_then(|()| {
                    apply(
                        &mut m.running,
                        &mut self.spare_running,
                        &d.running.edits,
                        ir,
                        |&k| s.running[k].clone(),
                        |o, &k| assign_running(o, &s.running[k]),
                    )
                })
                .and_then(|()| {
                    apply(
                        &mut m.pending,
                        &mut self.spare_pending,
                        &d.pending.edits,
                        iq,
                        |&k| s.pending[k].clone(),
                        |o, &k| o.clone_from(&s.pending[k]),
                    )
                });
        }
        m.now = s.now;
        self.generation = d.generation;
        debug_assert!(
            ok.is_ok() && m.pools == s.pools,
            "the host's mirror differs from the snapshot it sent"
        );
        debug_assert!(
            m.running == s.running && m.pending == s.pending,
            "the host's mirror differs from the snapshot it sent{}",
            if self.continuity == Continuity::StableJobs {
                ": the driver changed a job in place, breaking its promise of stable jobs"
            } else {
                ""
            }
        );
        if ok.is_err() {
            // Cannot happen (the runs were computed from the mirror); if it did, the next call
            // sends the whole snapshot rather than trust a broken mirror.
            self.reset();
        }
    }
}

/// The account ([`ListChanges`]) of `edits` applied to a list of `before` entries, into `out`:
/// `false` when they do more than drop entries and append at the end (an entry changed in
/// place crosses as dropped and inserted where it was), or when they keep or drop past the
/// list's `before` entries. The positions increase and are within the list.
pub(crate) fn list_changes(edits: &[FfiEdit], before: usize, out: &mut ListChanges) -> bool {
    out.clear();
    let mut pos = 0usize;
    for e in edits {
        if out.arrived > 0 {
            return false;
        }
        // Runs that keep or drop past the list's end do not describe it (they are applied
        // before anything checks them: `apply_at` would refuse them as a mismatch).
        let add = |at: usize, n: u64| usize::try_from(n).ok().and_then(|n| at.checked_add(n));
        let Some((kept, end)) = add(pos, e.keep)
            .and_then(|kept| Some((kept, add(kept, e.drop)?)))
            .filter(|&(_, end)| end <= before)
        else {
            return false;
        };
        out.left.extend(kept..end);
        pos = end;
        if e.insert > 0 {
            if pos != before {
                return false;
            }
            out.arrived = e.insert as usize;
        }
    }
    true
}

/// The plugin's side: which generation its kept snapshot is, and the buffers to apply a delta.
#[derive(Debug, Default)]
pub(crate) struct DeltaReceiver {
    /// The generation of the kept snapshot (0: the empty snapshot, or none).
    generation: u64,
    /// The kept queue is `pending[pending_head..]`: jobs leaving its head only move this.
    pending_head: usize,
    spare_pools: Vec<Pool>,
    spare_running: Vec<Running>,
    spare_pending: Vec<Pending>,
    /// Running jobs that left, kept for the next arrivals to reuse what they own (a rigid
    /// job's holds are two allocations).
    gone_running: Vec<Running>,
    gone_pending: Vec<Pending>,
}

impl DeltaReceiver {
    /// The kept snapshot was overwritten otherwise (a whole snapshot through the 2.0 calls).
    pub(crate) fn forget(&mut self) {
        self.generation = 0;
        self.pending_head = 0;
    }

    /// The snapshot kept in `s` (its queue without the dead prefix).
    pub(crate) fn snapshot<'a>(&self, s: &'a OwnedSnapshot) -> Snapshot<'a> {
        Snapshot {
            pending: &s.pending[self.pending_head.min(s.pending.len())..],
            ..s.as_snapshot()
        }
    }

    /// Applies `d` to `snapshot`; `Err` (and the snapshot emptied) when `snapshot` is not the
    /// delta's base or the delta does not fit it. When the running jobs' or the queue's
    /// change is drops and arrivals only, its account is written to `accounts` (running,
    /// pending) and the flag is set: the list followed it, and the policy may be told it.
    pub(crate) fn apply(
        &mut self,
        snapshot: &mut OwnedSnapshot,
        d: &FfiSnapshotDelta,
        accounts: &mut [ListChanges; 2],
    ) -> Result<[bool; 2], DeltaMismatch> {
        if d.base != 0 && d.base != self.generation {
            return Err(DeltaMismatch);
        }
        if d.base == 0 {
            snapshot.pools.clear();
            snapshot.running.clear();
            snapshot.pending.clear();
            self.pending_head = 0;
        }
        // Invalid until the delta is wholly applied.
        self.generation = 0;
        if d.clip_running {
            clip_all(&mut snapshot.running, d.now);
        }
        let [running_told, pending_told] = accounts;
        let before = [
            snapshot.running.len(),
            snapshot.pending.len() - self.pending_head.min(snapshot.pending.len()),
        ];
        // A delta from what the plugin held (not a whole snapshot) that only drops entries and
        // appends at the end is the account of the change: the list follows it directly (one
        // move per entry that left, the arrivals built in what left entries owned), and the
        // policy is told the same account.
        // (`list_changes` gives increasing positions within the list; that the arrivals are
        // the items sent is checked here.)
        let told = [
            d.base != 0
                && list_changes(&d.running.edits, before[0], running_told)
                && running_told.arrived == d.running.items.len(),
            d.base != 0
                && list_changes(&d.pending.edits, before[1], pending_told)
                && pending_told.arrived == d.pending.items.len(),
        ];
        let applied = apply(
            &mut snapshot.pools,
            &mut self.spare_pools,
            &d.pools.edits,
            &d.pools.items,
            |p| Pool::from(p),
            |o, p| *o = p.into(),
        )
        .and_then(|()| {
            if told[0] {
                follow(
                    &mut snapshot.running,
                    &mut 0,
                    false,
                    running_told,
                    &d.running.items,
                    &mut self.gone_running,
                    |r| Running::from(r),
                    assign_running_from_ffi,
                );
                Ok(())
            } else {
                apply(
                    &mut snapshot.running,
                    &mut self.spare_running,
                    &d.running.edits,
                    &d.running.items,
                    |r| Running::from(r),
                    assign_running_from_ffi,
                )
            }
        })
        .and_then(|()| {
            if told[1] {
                follow(
                    &mut snapshot.pending,
                    &mut self.pending_head,
                    true,
                    pending_told,
                    &d.pending.items,
                    &mut self.gone_pending,
                    |p| Pending::from(p),
                    |o, p| *o = p.into(),
                );
                Ok(())
            } else {
                apply_at(
                    &mut snapshot.pending,
                    &mut self.pending_head,
                    true,
                    &mut self.spare_pending,
                    &d.pending.edits,
                    &d.pending.items,
                    |p| Pending::from(p),
                    |o, p| *o = p.into(),
                )
            }
        });
        if let Err(e) = applied {
            snapshot.pools.clear();
            snapshot.running.clear();
            snapshot.pending.clear();
            self.pending_head = 0;
            return Err(e);
        }
        snapshot.now = d.now;
        self.generation = d.generation;
        Ok(told)
    }
}

impl<T> FfiListDelta<T> {
    /// Whether the list is unchanged.
    pub fn is_empty(&self) -> bool {
        self.edits.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug, PartialEq)]
    struct E(u64, u8);

    impl Keyed for E {
        fn key(&self) -> u64 {
            self.0
        }
    }

    fn roundtrip(old: &[E], new: &[E]) -> (Vec<E>, RVec<FfiEdit>, Vec<usize>) {
        let (mut edits, mut inserted, mut scratch) =
            (RVec::new(), Vec::new(), DiffScratch::default());
        diff(old, new, &mut edits, &mut inserted, &mut scratch);
        let items: Vec<E> = inserted.iter().map(|&k| new[k].clone()).collect();
        let mut v = old.to_vec();
        let mut spare = Vec::new();
        apply(&mut v, &mut spare, &edits, &items, E::clone, |o, i| {
            *o = i.clone()
        })
        .expect("runs fit the list they were computed from");
        (v, edits, inserted)
    }

    /// A list of entries with small keys (so that keys repeat and reorderings happen) and a
    /// second field for content changes under the same key.
    fn list() -> impl Strategy<Value = Vec<E>> {
        proptest::collection::vec((0u64..40, 0u8..3).prop_map(|(k, v)| E(k, v)), 0..60)
    }

    proptest! {
        #[test]
        fn applying_a_diff_gives_the_new_list(old in list(), new in list()) {
            let (got, _, _) = roundtrip(&old, &new);
            prop_assert_eq!(got, new);
        }

        /// A queue kept with a dead prefix (its first jobs leaving move the head) goes through
        /// any sequence of changes as the plain list does.
        #[test]
        fn a_queue_with_a_moving_head_follows_any_changes(
            lists in proptest::collection::vec(list(), 1..8),
            heads in proptest::collection::vec(0usize..6, 8),
        ) {
            let (mut v, mut head, mut spare) = (Vec::new(), 0, Vec::new());
            let mut old: Vec<E> = Vec::new();
            for (k, new) in lists.iter().enumerate() {
                // Queues lose their first jobs most often: drop a few from the front too.
                let new: Vec<E> = new.iter().skip(heads[k] % 2 * heads[k]).cloned().collect();
                let (mut edits, mut inserted, mut scratch) =
                    (RVec::new(), Vec::new(), DiffScratch::default());
                diff(&old, &new, &mut edits, &mut inserted, &mut scratch);
                let items: Vec<E> = inserted.iter().map(|&k| new[k].clone()).collect();
                apply_at(&mut v, &mut head, true, &mut spare, &edits, &items, E::clone, |o, i| {
                    *o = i.clone()
                })
                .expect("runs fit the list they were computed from");
                prop_assert_eq!(&v[head..], &new[..]);
                prop_assert!(head == 0 || head < v.len() - head);
                old = new;
            }
        }

        /// Following an account (entries gone, entries appended) gives the list it describes,
        /// with a moving head or without, one entry or many gone at once (a pass instead of
        /// one move per entry), whatever the entries kept aside for reuse held.
        #[test]
        fn following_an_account_gives_the_list_it_describes(
            steps in proptest::collection::vec(
                (list(), proptest::collection::vec(any::<bool>(), 1..90)),
                1..8,
            ),
            move_head in any::<bool>(),
        ) {
            let (mut v, mut head) = (Vec::new(), 0);
            let mut gone = vec![E(999, 9); 3];
            let mut want: Vec<E> = Vec::new();
            for (arrivals, leaves) in &steps {
                let mut c = ListChanges::default();
                c.left.extend((0..want.len()).filter(|&k| leaves[k % leaves.len()]));
                c.arrived = arrivals.len();
                let kept: Vec<E> = want
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| !leaves[k % leaves.len()])
                    .map(|(_, e)| e.clone())
                    .collect();
                want = kept.into_iter().chain(arrivals.iter().cloned()).collect();
                follow(&mut v, &mut head, move_head, &c, arrivals, &mut gone, E::clone, |o, i| {
                    *o = i.clone()
                });
                prop_assert_eq!(&v[head..], &want[..]);
                prop_assert!(move_head || head == 0);
                prop_assert!(head == 0 || head < v.len() - head);
                prop_assert!(gone.len() <= GONE_KEPT);
            }
        }

        /// The usual change of a queue, some entries gone and some added at the end, with
        /// unique keys: only the added entries are sent.
        #[test]
        fn a_queue_that_lost_and_gained_jobs_sends_only_the_new_ones(
            n in 0usize..300,
            gone in proptest::collection::vec(any::<bool>(), 300),
            added in 0usize..5,
        ) {
            let old: Vec<E> = (0..n as u64).map(|k| E(k, 0)).collect();
            let mut new: Vec<E> = old.iter().zip(&gone).filter(|(_, g)| !**g).map(|(e, _)| e.clone()).collect();
            new.extend((0..added as u64).map(|k| E(1000 + k, 0)));
            let (got, _, inserted) = roundtrip(&old, &new);
            prop_assert_eq!(&got, &new);
            prop_assert_eq!(inserted.len(), added);
        }
    }

    /// Edits that only drop entries and append at the end are told as their account; any
    /// other is not.
    #[test]
    fn edits_of_drops_and_arrivals_are_told_as_an_account() {
        let edit = |keep, drop, insert| FfiEdit { keep, drop, insert };
        let mut c = ListChanges::default();
        assert!(list_changes(&[edit(1, 2, 0), edit(3, 1, 2)], 7, &mut c));
        assert_eq!(
            c,
            ListChanges {
                left: vec![1, 2, 6],
                arrived: 2
            }
        );
        assert!(list_changes(&[], 3, &mut c));
        assert_eq!(c, ListChanges::default());
        // An entry changed in place, or an insertion before the end.
        assert!(!list_changes(&[edit(1, 1, 1)], 3, &mut c));
        assert!(!list_changes(&[edit(3, 0, 1), edit(0, 1, 0)], 4, &mut c));
        // Runs past the list's end, or whose lengths overflow: not an account of it.
        assert!(!list_changes(&[edit(5, 0, 0)], 3, &mut c));
        assert!(!list_changes(&[edit(2, 1, 0), edit(9, 0, 0)], 4, &mut c));
        assert!(!list_changes(&[edit(1, 3, 0)], 3, &mut c));
        assert!(!list_changes(
            &[edit(u64::MAX, 1, 0), edit(u64::MAX, 1, 0)],
            3,
            &mut c
        ));
    }

    #[test]
    fn an_unchanged_list_has_no_runs_and_bad_runs_are_refused() {
        let l = vec![E(1, 0), E(2, 0)];
        let (_, edits, inserted) = roundtrip(&l, &l);
        assert!(edits.is_empty() && inserted.is_empty());
        let mut v = l.clone();
        let too_long = [FfiEdit {
            keep: 2,
            drop: 1,
            insert: 0,
        }];
        assert_eq!(
            apply(
                &mut v,
                &mut Vec::new(),
                &too_long,
                &[] as &[E],
                E::clone,
                |_, _| ()
            ),
            Err(DeltaMismatch)
        );
        let missing_item = [FfiEdit {
            keep: 0,
            drop: 0,
            insert: 1,
        }];
        assert_eq!(
            apply(
                &mut v,
                &mut Vec::new(),
                &missing_item,
                &[] as &[E],
                E::clone,
                |_, _| ()
            ),
            Err(DeltaMismatch)
        );
        assert_eq!(v, l);
    }
}
