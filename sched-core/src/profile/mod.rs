//! Step-function profiles over absolute time, with the operations of Klein & Pérez §3.1.
//!
//! A [`Profile`] maps every instant `t ≥ 0` to an integer (a node count: nodes used, or free).
//! It is a resource EP in the papers' words, over absolute time. The operations:
//! `ep(t)` → [`Profile::value_at`], `max(ep, t0, t1)` → [`Profile::max_over`], `loc(ep, t0, t1)`
//! → [`Profile::loc`], `delay(ep, t0)` → [`Profile::delayed`], `ep1 + ep2` →
//! [`Profile::add_profile`], and the change-points → [`Profile::change_points`]. On top of them
//! the query every backfilling policy needs: [`Profile::earliest_fit`], the earliest time ≥ t at
//! which the profile stays at or below a limit for a given duration.
//!
//! Representation: three behind the one type. Up to [`FLAT_MAX`] change points (the common
//! case: a replay's profiles mostly hold a few dozen, a long queue's a few hundred), a sorted
//! `Vec` of `(time, value)` with binary search and in-place edits (`flat.rs`): O(log n)
//! lookups, O(n) edits and fit scans, but over contiguous memory, so faster than a tree at that
//! size. Beyond it, sorted chunks of up to 256 points, each with its minimum and maximum
//! (`chunked.rs`): an edit shifts one chunk, and the fit scans pass a chunk that is busy or
//! free throughout in one step. That is fast where fits land near the start of the scan (a busy
//! machine's plan), and slow where every fit must pass a long stretch of free runs too short
//! for it (a whole plan on an empty pool). There the balanced search tree keyed by time (a
//! treap, see `tree.rs`) wins: one node per change point, each node augmented with the maximum
//! and minimum of its subtree, a lazy range-add tag and a summary of the gaps between its tall
//! steps, so [`Profile::add`], [`Profile::value_at`], [`Profile::max_over`], [`Profile::loc`],
//! [`Profile::last_above`] and [`Profile::forget_before`] cost O(log n) (expected), and
//! [`Profile::earliest_fit`] passes over whole subtrees that are free, busy, shorter than the
//! job, or whose free runs between tall steps are all too short. A chunked profile whose scans
//! cross most of it (`SCAN_LIMIT`) moves to the tree; a large profile that shrinks to a
//! quarter of the flat limit goes back to flat, so a profile near the limit does not switch at
//! every edit. All three answer every query identically (the property tests run the oracle
//! against each, and against switching).
//!
//! Normal form: the value is 0 before the first change point and no change point repeats the
//! value of the step before it, so [`Profile::len`] counts real changes and adding then removing
//! the same steps leaves nothing behind. [`NEVER`] is the end of time, not an instant: no change
//! point is ever kept there, a step ending at [`NEVER`] never ends (an `add` up to [`NEVER`] is
//! open-ended), and `value_at(NEVER)` is the value the profile ends with.

mod chunked;
mod flat;
mod tree;

#[doc(hidden)]
pub mod naive;

use std::fmt;

use crate::request::Step;
use crate::time::{Duration, Time, NEVER};
use chunked::Chunked;
use flat::Flat;
use tree::Treap;

/// The most change points a profile keeps in the flat representation before moving to the
/// tree. Chosen by measurement: on a replay whose
/// queue grows long (SDSC-SP2 CBF on 96 nodes) the profiles hover at a few hundred points, where
/// the flat scans beat the treap 2.7× over the whole run; on `cargo bench -p sched-core --bench
/// profile` (`flat_only` / `tree_only`) the flat one wins 2.7× planning 1,000 jobs from scratch
/// (up to 2,000 points) and loses 2× planning 10,000 (up to 20,000). 1,024 keeps to the range
/// where flat was measured faster; at 256 a profile of 300 points would be a tree.
pub const FLAT_MAX: usize = 1024;

/// A step function from time to an integer, 0 before the first change point.
///
/// Equality is equality of the step functions (the normal form makes it structural).
#[derive(Clone)]
pub struct Profile {
    repr: Repr,
    /// [`FLAT_MAX`], or another limit for the tests of both representations.
    flat_max: usize,
    large: Large,
}

#[derive(Clone)]
enum Repr {
    Flat(Flat),
    /// Boxed: its summaries would make every profile, flat ones included, several times
    /// larger.
    Chunked(Box<Chunked>),
    Tree(Treap),
}

/// What holds a profile past its flat limit: the default adapts, the others are for tests
/// and benchmarks of one representation alone.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Large {
    /// Chunks, moving to the treap when the fit scans cross too much of them (see
    /// [`SCAN_LIMIT`]).
    Adaptive,
    /// Chunks only.
    Chunked,
    /// The treap only.
    Tree,
}

/// Fit queries between two looks at how much a chunked profile's scans cross.
const SCAN_WINDOW: u64 = 256;

/// The points and chunks a chunked profile's fit scans may cross per query, on average over
/// [`SCAN_WINDOW`] queries, before it moves to the treap, if they also cross more than a
/// quarter of the profile. A scan crosses a point in about a nanosecond; the treap answers a
/// fit in one to a few microseconds, but costs about as much again at every edit (its fences
/// are recomputed along the path). Where a plan's fits land near `now` (a busy machine with a
/// long queue: `esim bench`, 100,000 jobs) the scans cross at most 1,800 of 22,000 points per
/// query; where every job must pass a long stretch of short free runs (a whole plan on an
/// empty pool: `cargo bench -p sched-core --bench profile`) three quarters of the profile,
/// which the treap's fences skip: it moves there at about 3,000 points. docs/results.md has
/// both.
const SCAN_LIMIT: u64 = 2_048;

impl Default for Profile {
    fn default() -> Self {
        Profile::with_flat_max(FLAT_MAX)
    }
}

impl PartialEq for Profile {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.change_points().eq(other.change_points())
    }
}

impl Eq for Profile {}

impl fmt::Debug for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Points<'a>(&'a Profile);
        impl fmt::Debug for Points<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_map().entries(self.0.change_points()).finish()
            }
        }
        f.debug_struct("Profile")
            .field("points", &Points(self))
            .finish()
    }
}

impl Profile {
    /// The profile that is 0 everywhere.
    pub fn new() -> Self {
        Profile::default()
    }

    /// An empty profile that stays flat up to `flat_max` change points instead of
    /// [`FLAT_MAX`] (`usize::MAX`: always flat), then chunked or a tree as the default does.
    /// For tests and benchmarks.
    #[doc(hidden)]
    pub fn with_flat_max(flat_max: usize) -> Self {
        Profile::with_layout(flat_max, Large::Adaptive)
    }

    /// As [`Profile::with_flat_max`], past the flat limit held as `large` says: `(0,
    /// Large::Tree)` keeps every non-empty profile a tree. For tests and benchmarks.
    #[doc(hidden)]
    pub fn with_layout(flat_max: usize, large: Large) -> Self {
        Profile {
            repr: Repr::Flat(Flat::default()),
            flat_max,
            large,
        }
        .switched()
    }

    /// Whether the profile is held flat right now (for tests and benchmarks).
    #[doc(hidden)]
    pub fn is_flat(&self) -> bool {
        matches!(self.repr, Repr::Flat(_))
    }

    /// Moves to the representation that fits: chunks above `flat_max` points (the tree with
    /// [`Large::Tree`]), the tree once a chunked profile's scans have crossed most of it over a
    /// window of queries (checked here, at edits), flat again at a quarter of `flat_max`.
    #[inline]
    fn switch(&mut self) {
        // Inline for a flat profile within its limit, the common case after an edit.
        if matches!(&self.repr, Repr::Flat(f) if f.len() <= self.flat_max) {
            return;
        }
        self.switch_large();
    }

    #[inline(never)]
    fn switch_large(&mut self) {
        match &self.repr {
            Repr::Flat(f) if f.len() > self.flat_max => {
                let points = f.points().iter().copied();
                self.repr = if self.large == Large::Tree {
                    Repr::Tree(Treap::from_sorted(points))
                } else {
                    Repr::Chunked(Box::new(Chunked::from_sorted(points, self.chunk_cap())))
                };
            }
            Repr::Tree(t) if t.len() <= self.flat_max / 4 => {
                self.repr = Repr::Flat(Flat::from_sorted(t.iter()));
            }
            Repr::Chunked(c) if c.len() <= self.flat_max / 4 => {
                self.repr = Repr::Flat(Flat::from_sorted(c.iter()));
            }
            Repr::Chunked(c) if self.large == Large::Adaptive => {
                let (queries, crossed) = c.scans();
                if queries >= SCAN_WINDOW {
                    c.reset_scans();
                    let whole = queries.saturating_mul(c.len() as u64);
                    if crossed > SCAN_LIMIT * queries && crossed > whole / 4 {
                        // Back to chunks only through the flat representation: a profile
                        // whose scans were long stays a tree while it is large.
                        self.repr = Repr::Tree(Treap::from_sorted(c.iter()));
                    }
                }
            }
            _ => {}
        }
    }

    /// The most points a chunk holds: a quarter of the flat limit, so that a profile that just
    /// left the flat representation is at least four chunks, from 8 up to
    /// [`chunked::CHUNK_MAX`] (small limits, in tests, split and merge chunks within a few
    /// edits).
    fn chunk_cap(&self) -> usize {
        (self.flat_max / 4).clamp(8, chunked::CHUNK_MAX)
    }

    fn switched(mut self) -> Self {
        self.switch();
        self
    }

    /// The EP `steps` delayed to start at `start` (0 before `start` and after the last step).
    pub fn from_steps(start: Time, steps: &[Step]) -> Self {
        let mut p = Profile::new();
        p.add_steps(start, steps, 1);
        p
    }

    /// Number of change points kept.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Flat(f) => f.len(),
            Repr::Chunked(c) => c.len(),
            Repr::Tree(t) => t.len(),
        }
    }

    /// Whether the profile is 0 everywhere.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `ep(t)`: the value at `t`.
    pub fn value_at(&self, t: Time) -> i64 {
        match &self.repr {
            Repr::Flat(f) => f.value_at(t),
            Repr::Chunked(c) => c.value_at(t),
            Repr::Tree(tr) => tr.value_at(t),
        }
    }

    /// `max(ep, t0, t1)`: the largest value on `[t0, t1)`; 0 when the interval is empty.
    pub fn max_over(&self, t0: Time, t1: Time) -> i64 {
        if t0 >= t1 {
            return 0;
        }
        let first = self.value_at(t0);
        let keys = match &self.repr {
            Repr::Flat(f) => f.max_of_keys(t0, t1),
            Repr::Chunked(c) => c.max_of_keys(t0, t1),
            Repr::Tree(t) => t.max_of_keys(t0, t1),
        };
        keys.map_or(first, |m| m.max(first))
    }

    /// `loc(ep, t0, t1)`: the end of the last step reaching the maximum of `[t0, t1)`, clipped
    /// to `t1`; `t0` when the interval is empty. Klein & Pérez use it to jump past a conflict.
    pub fn loc(&self, t0: Time, t1: Time) -> Time {
        if t0 >= t1 {
            return t0;
        }
        let m = self.max_over(t0, t1);
        // The last step at or above the maximum is the last one reaching it.
        self.last_above(t0, t1, m.saturating_sub(1))
            .map_or(t1, |(_, end)| end.min(t1))
    }

    /// Adds `delta` on `[t0, t1)`; with `t1 = NEVER`, from `t0` on for ever.
    pub fn add(&mut self, t0: Time, t1: Time, delta: i64) {
        if t0 >= t1 || delta == 0 {
            return;
        }
        match &mut self.repr {
            Repr::Flat(f) => f.add(t0, t1, delta),
            Repr::Chunked(c) => c.add(t0, t1, delta),
            Repr::Tree(t) => t.add(t0, t1, delta),
        }
        self.switch();
    }

    /// Adds `sign ×` the EP `steps` delayed to `start`.
    pub fn add_steps(&mut self, start: Time, steps: &[Step], sign: i64) {
        if let Repr::Flat(f) = &mut self.repr {
            f.add_steps(start, steps, sign);
            self.switch();
            return;
        }
        let mut t = start;
        for s in steps {
            let end = t.saturating_add(s.duration);
            self.add(t, end, sign * i64::from(s.nodes));
            t = end;
        }
    }

    /// `ep1 + ep2`: adds `other` to `self`.
    pub fn add_profile(&mut self, other: &Profile) {
        let mut steps = other.change_points().peekable();
        while let Some((t, v)) = steps.next() {
            let end = steps.peek().map_or(NEVER, |p| p.0);
            self.add(t, end, v);
        }
    }

    /// `delay(ep, dt)`: the profile shifted `dt` later (0 on `[0, dt)`). Change points pushed
    /// to [`NEVER`] vanish: a change at the end of time never happens.
    pub fn delayed(&self, dt: Duration) -> Profile {
        if dt == 0 {
            return self.clone();
        }
        let shifted = self
            .change_points()
            .map(|(t, v)| (t.saturating_add(dt), v))
            .take_while(|(t, _)| *t != NEVER);
        let repr = match &self.repr {
            Repr::Flat(_) => Repr::Flat(Flat::from_sorted(shifted)),
            Repr::Chunked(c) => Repr::Chunked(Box::new(Chunked::from_sorted(shifted, c.cap()))),
            Repr::Tree(_) => Repr::Tree(Treap::from_sorted(shifted)),
        };
        Profile {
            repr,
            flat_max: self.flat_max,
            large: self.large,
        }
        .switched()
    }

    /// The change points `(t, value from t on)`, in time order.
    pub fn change_points(&self) -> impl Iterator<Item = (Time, i64)> + '_ {
        match &self.repr {
            Repr::Flat(f) => Points::Flat(f.points().iter()),
            Repr::Chunked(c) => Points::Chunked(c.iter()),
            Repr::Tree(t) => Points::Tree(t.iter()),
        }
    }

    /// The last step on `[t0, t1)` whose value exceeds `limit`, as `(start, end)` clipped to
    /// `[t0, ∞)` (the end is not clipped: it is where the step really ends, [`NEVER`] if it
    /// never does).
    pub fn last_above(&self, t0: Time, t1: Time, limit: i64) -> Option<(Time, Time)> {
        if t0 >= t1 {
            return None;
        }
        let (found, (before, after)) = match &self.repr {
            Repr::Flat(f) => (f.last_key_above(t0, t1, limit), f.neighbours(t0)),
            Repr::Chunked(c) => (c.last_key_above(t0, t1, limit), c.neighbours(t0)),
            Repr::Tree(t) => match t.last_key_above(t0, t1, limit) {
                Some(found) => return Some(found),
                None => (None, t.neighbours(t0)),
            },
        };
        if found.is_some() {
            return found;
        }
        // No step starting inside [t0, t1) is above the limit: that leaves the step already
        // running at t0, unless one starts exactly at t0.
        if after == Some(t0) {
            return None;
        }
        let v = before.map_or(0, |(_, v)| v);
        (v > limit).then(|| (t0, after.unwrap_or(NEVER)))
    }

    /// The earliest `t ≥ from` such that the profile stays `≤ limit` on `[t, t + duration)`,
    /// or `None` if there is none. A zero duration fits at `from`.
    pub fn earliest_fit(&self, from: Time, duration: Duration, limit: i64) -> Option<Time> {
        // An empty window fits anywhere; windows are clipped at the end of time.
        if duration == 0 || from == NEVER {
            return Some(from);
        }
        match &self.repr {
            Repr::Flat(f) => f.run_start(from, duration, limit, NEVER, NEVER),
            Repr::Chunked(c) => c.run_start(from, duration, limit, NEVER, NEVER),
            Repr::Tree(t) => t.earliest_fit(from, duration, limit),
        }
    }

    /// [`Profile::earliest_fit`] when it is before `bound`, else `None`: the flat
    /// representation stops scanning at `bound`, so asking whether a job can start earlier
    /// than it is planned costs only the part of the profile before its planned start.
    pub fn earliest_fit_before(
        &self,
        from: Time,
        duration: Duration,
        limit: i64,
        bound: Time,
    ) -> Option<Time> {
        if from >= bound {
            return None;
        }
        if duration == 0 {
            return Some(from);
        }
        match &self.repr {
            Repr::Flat(f) => f.run_start(from, duration, limit, bound, NEVER),
            Repr::Chunked(c) => c.run_start(from, duration, limit, bound, NEVER),
            Repr::Tree(t) => t.earliest_fit(from, duration, limit).filter(|&s| s < bound),
        }
    }

    /// Whether some `t` in `[from, bound)` starts a run where the profile stays `≤ limit` for
    /// `duration`, or up to `reach` (`bound ≤ reach`). A backfilling policy asks it of a job
    /// planned at `reach` with its own hold still counted: a window that runs into the job's
    /// own slot fits once that hold is lifted (see `Cluster::could_start_before` in the rigid
    /// policies). A zero duration fits at `from`.
    #[inline]
    pub fn run_before(
        &self,
        from: Time,
        duration: Duration,
        limit: i64,
        bound: Time,
        reach: Time,
    ) -> bool {
        debug_assert!(bound <= reach);
        if from >= bound {
            return false;
        }
        if duration == 0 {
            return true;
        }
        // Inline for the flat case: a CBF compression asks it of every queued job, and for a
        // profile of a few dozen points the call was a fifth of the answer's cost.
        match &self.repr {
            Repr::Flat(f) => f.run_start(from, duration, limit, bound, reach).is_some(),
            _ => self.run_before_large(from, duration, limit, bound, reach),
        }
    }

    /// [`Profile::run_before`] past the flat representation (a flat one is answered too, as
    /// it would be inline).
    #[inline(never)]
    fn run_before_large(
        &self,
        from: Time,
        duration: Duration,
        limit: i64,
        bound: Time,
        reach: Time,
    ) -> bool {
        match &self.repr {
            Repr::Flat(f) => f.run_start(from, duration, limit, bound, reach).is_some(),
            Repr::Chunked(c) => c.run_start(from, duration, limit, bound, reach).is_some(),
            // A run reaching `reach` needs the step before it free, and begins where the
            // last step above the limit before it ends.
            Repr::Tree(_) => {
                (self.value_at(reach - 1) <= limit
                    && self.last_above(from, reach, limit).map_or(from, |(_, e)| e) < bound)
                    || self
                        .earliest_fit_before(from, duration, limit, bound)
                        .is_some()
            }
        }
    }

    /// Drops every change point before `t`, keeping the value at `t`: the past is forgotten
    /// (the profile is 0 before `t`, and 0 everywhere after `forget_before(NEVER)`).
    pub fn forget_before(&mut self, t: Time) {
        match &mut self.repr {
            Repr::Flat(f) => f.forget_before(t),
            Repr::Chunked(c) => c.forget_before(t),
            Repr::Tree(tr) => tr.forget_before(t),
        }
        self.switch();
    }

    /// Checks the representation's invariants (key order, normal form; for the tree also heap
    /// order, subtree sizes and maxima) and that it is the one its size calls for (a tree may
    /// hold between a quarter of the limit and the limit); for the property tests, O(n).
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        match &self.repr {
            Repr::Flat(f) if f.len() > self.flat_max => {
                Err(format!("flat with {} points > {}", f.len(), self.flat_max))
            }
            Repr::Tree(t) if t.len() <= self.flat_max / 4 => Err(format!(
                "a tree of {} points ≤ {} / 4",
                t.len(),
                self.flat_max
            )),
            Repr::Chunked(c) if c.len() <= self.flat_max / 4 => Err(format!(
                "chunks of {} points ≤ {} / 4",
                c.len(),
                self.flat_max
            )),
            Repr::Flat(f) => f.check(),
            Repr::Chunked(c) => c.check(),
            Repr::Tree(t) => t.check(),
        }
    }
}

/// The change points of either representation, without boxing.
enum Points<'a> {
    Flat(std::slice::Iter<'a, (Time, i64)>),
    Chunked(chunked::Iter<'a>),
    Tree(tree::Iter<'a>),
}

impl Iterator for Points<'_> {
    type Item = (Time, i64);

    fn next(&mut self) -> Option<(Time, i64)> {
        match self {
            Points::Flat(it) => it.next().copied(),
            Points::Chunked(it) => it.next(),
            Points::Tree(it) => it.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paper_epres() -> Profile {
        // Klein & Pérez §3.1: 10 nodes busy for 1200 s, then 20 for 3600 s.
        Profile::from_steps(0, &[Step::new(1200, 10), Step::new(3600, 20)])
    }

    #[test]
    fn paper_example_values() {
        let p = paper_epres();
        assert_eq!(p.value_at(0), 10);
        assert_eq!(p.value_at(1199), 10);
        assert_eq!(p.value_at(1200), 20);
        assert_eq!(p.value_at(4800), 0);
        assert_eq!(p.max_over(0, 1200), 10);
        assert_eq!(p.max_over(0, 1201), 20);
        assert_eq!(p.max_over(5, 5), 0);
        assert_eq!(p.loc(0, 10_000), 4800);
        assert_eq!(p.loc(0, 1000), 1000);
    }

    #[test]
    fn earliest_fit_jumps_past_conflicts() {
        let p = paper_epres();
        assert_eq!(p.earliest_fit(0, 100, 15), Some(0));
        assert_eq!(p.earliest_fit(0, 1300, 15), Some(4800));
        assert_eq!(p.earliest_fit(0, 1300, 25), Some(0));
        let mut q = Profile::new();
        q.add(0, NEVER, 5);
        assert_eq!(q.earliest_fit(0, 1, 4), None);
    }

    #[test]
    fn paper_example_delay_sum_and_last_above() {
        let p = paper_epres();
        // delay(epres, 600): the same steps 600 s later.
        let d = p.delayed(600);
        assert_eq!(
            d.change_points().collect::<Vec<_>>(),
            vec![(600, 10), (1800, 20), (5400, 0)]
        );
        // epres + delay(epres, 600): 10, 20, 30, 20, 0.
        let mut sum = p.clone();
        sum.add_profile(&d);
        assert_eq!(
            sum.change_points().collect::<Vec<_>>(),
            vec![
                (0, 10),
                (600, 20),
                (1200, 30),
                (1800, 40),
                (4800, 20),
                (5400, 0)
            ]
        );
        assert_eq!(sum.max_over(0, NEVER), 40);
        assert_eq!(sum.loc(0, NEVER), 4800);
        assert_eq!(p.last_above(0, 10_000, 15), Some((1200, 4800)));
        assert_eq!(p.last_above(100, 1200, 5), Some((100, 1200)));
        assert_eq!(p.last_above(0, 10_000, 20), None);
    }

    #[test]
    fn forgetting_the_past_keeps_the_present() {
        let mut p = paper_epres();
        p.forget_before(2000);
        assert_eq!(
            p.change_points().collect::<Vec<_>>(),
            vec![(2000, 20), (4800, 0)]
        );
        p.forget_before(4800);
        assert!(p.is_empty());
        let mut q = Profile::new();
        q.add(10, NEVER, 3);
        assert_eq!(q.value_at(NEVER), 3, "an open-ended add never ends");
        q.forget_before(NEVER);
        assert!(q.is_empty(), "the whole of time is past");
        assert!(paper_epres().delayed(NEVER).is_empty());
    }

    #[test]
    fn switches_representation_with_size() {
        let mut p = Profile::with_flat_max(4);
        assert!(p.is_flat());
        for k in 0..3 {
            p.add(10 * k, 10 * k + 5, 1);
        }
        assert!(!p.is_flat(), "6 points > 4: {p:?}");
        let tree = p.clone();
        p.forget_before(14);
        assert_eq!(p.len(), 4);
        assert!(!p.is_flat(), "4 points stay a tree above 4 / 4");
        p.forget_before(20);
        assert_eq!(p.len(), 2);
        assert!(!p.is_flat(), "2 points stay a tree above 4 / 4");
        p.forget_before(22);
        assert!(!p.is_flat());
        p.add(25, NEVER, 1);
        assert!(p.is_flat(), "1 point ≤ 4 / 4: {p:?}");
        assert_eq!(p.change_points().collect::<Vec<_>>(), vec![(22, 1)]);
        let mut flat = Profile::with_flat_max(usize::MAX);
        for k in 0..3 {
            flat.add(10 * k, 10 * k + 5, 1);
        }
        assert!(flat.is_flat());
        assert_eq!(flat, tree, "equality across representations");
        assert!(flat.delayed(3).is_flat());
        assert!(!tree.delayed(3).is_flat());
    }

    fn kind(p: &Profile) -> &'static str {
        match p.repr {
            Repr::Flat(_) => "flat",
            Repr::Chunked(_) => "chunked",
            Repr::Tree(_) => "tree",
        }
    }

    /// A profile whose fit scans cross most of it moves from chunks to the treap at the first
    /// edit after a window of such queries; one whose fits land early stays chunked.
    #[test]
    fn a_profile_stays_small() {
        // Profiles are kept per pool and per job in the policies and moved by value; the chunks'
        // summaries unboxed doubled this (72 → 144 bytes).
        let size = std::mem::size_of::<Profile>();
        assert!(size <= 72, "{size} bytes");
    }

    #[test]
    fn long_scans_move_chunks_to_the_tree() {
        // 4,000 points: busy on [10k, 10k + 5), free on the 5 s between.
        let build = || {
            let mut p = Profile::with_flat_max(8);
            for k in 0..2_000 {
                p.add(10 * k, 10 * k + 5, 10);
            }
            p
        };
        let mut flat = Profile::with_flat_max(usize::MAX);
        flat.add_profile(&build());
        let (mut long, mut short) = (build(), build());
        assert_eq!((kind(&long), kind(&short)), ("chunked", "chunked"));
        for _ in 0..SCAN_WINDOW {
            // No free run of 6 s before the last busy step: the scan crosses everything.
            assert_eq!(long.earliest_fit(0, 6, 0), Some(19_995));
            assert_eq!(short.earliest_fit(0, 1, 0), Some(5));
        }
        long.add(NEVER - 10, NEVER, 1);
        short.add(NEVER - 10, NEVER, 1);
        flat.add(NEVER - 10, NEVER, 1);
        assert_eq!((kind(&long), kind(&short)), ("tree", "chunked"));
        assert_eq!(long, flat);
        assert_eq!(short, flat);
        assert_eq!(long.earliest_fit(3, 6, 0), flat.earliest_fit(3, 6, 0));
        assert_eq!(long.check_invariants(), Ok(()));
    }

    #[test]
    fn add_and_remove_leaves_nothing() {
        let mut p = paper_epres();
        p.add_steps(0, &[Step::new(1200, 10), Step::new(3600, 20)], -1);
        assert!(p.is_empty(), "{p:?}");
    }
}
