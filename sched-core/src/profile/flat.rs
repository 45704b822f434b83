//! The flat representation of a [`Profile`](super::Profile): its change points in a sorted
//! `Vec`, found by binary search and edited in place.
//!
//! Most profiles of a trace replay hold a few dozen change points (the running jobs and the
//! reservations of a short queue), a long queue's a few hundred. There, a contiguous array
//! beats the treap's pointer chasing and node bookkeeping: a lookup is a binary search over a
//! few cache lines, an `add` shifts a few kilobytes at most, and the fit search is a linear
//! scan that the prefetcher follows. Every operation but the lookups is O(n), so
//! [`Profile`](super::Profile) moves to chunks once a profile grows past
//! [`FLAT_MAX`](super::FLAT_MAX) points.

use crate::request::Step;
use crate::time::{Duration, Time, NEVER};

/// Change points `(t, value from t on)`, strictly increasing in `t`, in the normal form of
/// [`Profile`](super::Profile): no key at [`NEVER`], no point repeating the value before it
/// (0 before the first).
#[derive(Clone, Debug, Default)]
pub(crate) struct Flat {
    points: Vec<(Time, i64)>,
}

impl Flat {
    pub(crate) fn from_sorted(points: impl Iterator<Item = (Time, i64)>) -> Self {
        Flat {
            points: points.collect(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.points.len()
    }

    pub(crate) fn points(&self) -> &[(Time, i64)] {
        &self.points
    }

    /// Index of the first point with key `≥ t`.
    fn first_at_or_after(&self, t: Time) -> usize {
        gallop(&self.points, |k| k < t)
    }

    /// Value of the step before index `i` (0 before the first point).
    fn value_before(&self, i: usize) -> i64 {
        if i == 0 {
            0
        } else {
            self.points[i - 1].1
        }
    }

    pub(crate) fn value_at(&self, t: Time) -> i64 {
        self.value_before(gallop(&self.points, |k| k <= t))
    }

    /// The largest value held by a key in `[t0, t1)`, if any key lies there.
    pub(crate) fn max_of_keys(&self, t0: Time, t1: Time) -> Option<i64> {
        let lo = self.first_at_or_after(t0);
        let hi = lo + gallop(&self.points[lo..], |k| k < t1);
        self.points[lo..hi].iter().map(|p| p.1).max()
    }

    /// The last key of `[t0, t1)` whose value exceeds `limit`, as `(key, next key or NEVER)`.
    pub(crate) fn last_key_above(&self, t0: Time, t1: Time, limit: i64) -> Option<(Time, Time)> {
        let lo = self.first_at_or_after(t0);
        let hi = lo + gallop(&self.points[lo..], |k| k < t1);
        let i = lo + self.points[lo..hi].iter().rposition(|p| p.1 > limit)?;
        let next = self.points.get(i + 1).map_or(NEVER, |p| p.0);
        Some((self.points[i].0, next))
    }

    /// The last key `< t` with its value, and the first key `≥ t`.
    pub(crate) fn neighbours(&self, t: Time) -> (Option<(Time, i64)>, Option<Time>) {
        let i = self.first_at_or_after(t);
        let before = i.checked_sub(1).map(|j| self.points[j]);
        (before, self.points.get(i).map(|p| p.0))
    }

    /// The start of the first run from `from` on where the profile stays `≤ limit` for
    /// `duration` or up to `reach`, when it starts before `bound`; `from < bound ≤ reach`,
    /// `duration > 0`. One scan, which stops at `bound` outside a run and at `reach` inside
    /// one: with `reach` = `NEVER` it is the earliest fit before `bound` (windows clipped at
    /// the end of time), otherwise whether a run starts before `bound`.
    #[inline]
    pub(crate) fn run_start(
        &self,
        from: Time,
        duration: Duration,
        limit: i64,
        bound: Time,
        reach: Time,
    ) -> Option<Time> {
        let i = gallop(&self.points, |k| k <= from);
        let value = self.value_before(i);
        let mut scan = Scan::new(from, value, duration, limit, bound, reach);
        scan.follow(&self.points[i..])
            .unwrap_or_else(|| scan.open_end())
    }

    /// Adds `delta` on `[t0, t1)` and restores normal form; `t0 < t1`, `delta ≠ 0`.
    pub(crate) fn add(&mut self, t0: Time, t1: Time, delta: i64) {
        debug_assert!(t0 < t1 && delta != 0);
        let lo = self.first_at_or_after(t0);
        if self.points.get(lo).is_none_or(|p| p.0 != t0) {
            let v = self.value_before(lo);
            self.points.insert(lo, (t0, v));
        }
        // No key is ever NEVER, so an open-ended add covers everything from t0 on.
        let hi = if t1 == NEVER {
            self.points.len()
        } else {
            let hi = lo + gallop(&self.points[lo..], |k| k < t1);
            if self.points.get(hi).is_none_or(|p| p.0 != t1) {
                let v = self.value_before(hi);
                self.points.insert(hi, (t1, v));
            }
            hi
        };
        for p in &mut self.points[lo..hi] {
            p.1 += delta;
        }
        // The boundaries are the only points whose value may now repeat the one before; the
        // later one first, so that `lo` stays valid.
        if hi < self.points.len() && self.points[hi].1 == self.points[hi - 1].1 {
            self.points.remove(hi);
        }
        if self.points[lo].1 == self.value_before(lo) {
            self.points.remove(lo);
        }
    }

    /// Adds `sign ×` the EP `steps` delayed to `start`: what one [`Flat::add`] per step gives,
    /// in one merge of the steps' boundaries with the points they cover, written in place,
    /// instead of a search, up to two inserts (each shifting the tail) and a normalisation per
    /// step.
    pub(crate) fn add_steps(&mut self, start: Time, steps: &[Step], sign: i64) {
        // Boundaries start = b₀ ≤ b₁ ≤ … ≤ bₖ = end; step i adds on [bᵢ, bᵢ₊₁). Saturated at
        // NEVER, which is no instant: a step reaching it never ends.
        let end = steps
            .iter()
            .fold(start, |t, s| t.saturating_add(s.duration));
        if start >= end {
            return;
        }
        let lo = self.first_at_or_after(start);
        let hi = if end == NEVER {
            self.points.len()
        } else {
            lo + gallop(&self.points[lo..], |k| k <= end)
        };
        // The merge writes in place: the points from `lo` on move `gap` slots right first, one
        // per boundary, so that the output (one point per old point or boundary at most) never
        // overtakes the old points still to be read; the gap left is closed at the end.
        let gap = steps.len() + 1;
        let len = self.points.len();
        self.points.resize(len + gap, (0, 0));
        self.points.copy_within(lo..len, lo + gap);
        let mut w = lo;
        // `prev`: the new value just before the instant swept; `base`: the old value there.
        let mut prev = self.value_before(lo);
        let mut base = prev;
        let (mut j, mut k) = (lo, 0);
        // The next boundary: the end of step k − 1 (start for k = 0), k ≤ steps.len().
        let mut boundary = start;
        loop {
            let key = (j < hi).then(|| self.points[j + gap].0);
            let x = match key {
                Some(key) if k > steps.len() || key < boundary => key,
                _ if k <= steps.len() => boundary,
                _ => break,
            };
            if x == NEVER {
                break;
            }
            if key == Some(x) {
                base = self.points[j + gap].1;
                j += 1;
            }
            // Pass every boundary at x (zero-length steps share one): step k − 1 covers x.
            while k <= steps.len() && boundary == x {
                boundary = match steps.get(k) {
                    Some(s) => boundary.saturating_add(s.duration),
                    None => NEVER,
                };
                k += 1;
            }
            let delta = match k.checked_sub(1).and_then(|i| steps.get(i)) {
                Some(s) => sign * i64::from(s.nodes),
                None => 0,
            };
            let v = base + delta;
            if v != prev {
                self.points[w] = (x, v);
                w += 1;
                prev = v;
            }
        }
        // After `end` the values are the old ones again, and the first old point kept differs
        // from the one before it (normal form), so the seam needs no check.
        self.points.copy_within(hi + gap..len + gap, w);
        self.points.truncate(w + len - hi);
    }

    /// Drops every key below `t`; a key at `t` with the value there is kept unless it is 0.
    pub(crate) fn forget_before(&mut self, t: Time) {
        if t == NEVER {
            self.points.clear();
            return;
        }
        let i = self.first_at_or_after(t);
        let v = self.value_before(i);
        match self.points.get(i) {
            // A key at t keeps its own value, and is redundant if that is 0.
            Some(&(k, at)) if k == t => {
                self.points.drain(..i + usize::from(at == 0));
            }
            _ if v != 0 => {
                // Reuse the last dropped slot for the new first point when there is one.
                if i > 0 {
                    self.points[i - 1] = (t, v);
                    self.points.drain(..i - 1);
                } else {
                    self.points.insert(0, (t, v));
                }
            }
            _ => {
                self.points.drain(..i);
            }
        }
    }

    pub(crate) fn check(&self) -> Result<(), String> {
        check_normal_form(self.points.iter().copied())
    }
}

/// A fit scan: it looks for a run where the profile stays `≤ limit` for `duration` or up to
/// `reach` ([`NEVER`]: no such shortcut), starting before `bound`. Shared by the flat and the
/// chunked representations, which feed it their points in order.
pub(super) struct Scan {
    duration: Duration,
    limit: i64,
    bound: Time,
    reach: Time,
    /// The free run the scan is in, if any: its start, and the instant it has lasted long
    /// enough (computed once per run).
    pub(super) run: Option<(Time, Time)>,
}

impl Scan {
    /// A scan from `from`, where the profile's value is `value`.
    #[inline]
    pub(super) fn new(
        from: Time,
        value: i64,
        duration: Duration,
        limit: i64,
        bound: Time,
        reach: Time,
    ) -> Self {
        let mut scan = Scan {
            duration,
            limit,
            bound,
            reach,
            run: None,
        };
        if value <= limit {
            scan.run = Some((from, scan.need(from)));
        }
        scan
    }

    /// The instant a run starting at `start` has lasted long enough: `duration` later, or at
    /// `reach`. (A window reaching the end of time saturates to NEVER, which no key reaches:
    /// only a run never ending holds it.)
    #[inline]
    fn need(&self, start: Time) -> Time {
        start.saturating_add(self.duration).min(self.reach)
    }

    /// Follows the scan over `points` (in key order, after those already followed). The
    /// answer once decided: the run's start, or `None` when no run starts before `bound`;
    /// `None` outside when the points ran out first.
    #[inline]
    pub(super) fn follow(&mut self, points: &[(Time, i64)]) -> Option<Option<Time>> {
        // The run in a local: the loop keeps it in registers.
        let mut run = self.run;
        for &(t, v) in points {
            if let Some((start, need)) = run {
                if t >= need {
                    return Some(Some(start));
                }
                if v > self.limit {
                    run = None;
                }
            } else if t >= self.bound {
                return Some(None);
            } else if v <= self.limit {
                run = Some((t, self.need(t)));
            }
        }
        self.run = run;
        None
    }

    /// The answer when the points ran out: a run still open never ends.
    #[inline]
    pub(super) fn open_end(&self) -> Option<Time> {
        self.run.map(|(start, _)| start).filter(|&t| t < self.bound)
    }
}

/// The number of leading `points` whose key satisfies `before` (true, then false along the
/// keys), by a galloping search from the front: keys 1, 2, 4, 8, … until one fails, then a
/// binary search in the last stretch. Most lookups of a replay fall at or near `now`, where the
/// profile begins once the past is forgotten, so they take a comparison or two instead of a
/// whole binary search (which was a fifth of a replay's fit checks); one far off costs at most
/// twice a binary search.
#[inline]
fn gallop(points: &[(Time, i64)], before: impl Fn(Time) -> bool) -> usize {
    let (mut lo, mut hi) = (0, 1);
    while hi <= points.len() && before(points[hi - 1].0) {
        lo = hi;
        hi *= 2;
    }
    // Every key before `lo` passes; the one at `hi - 1`, if any, fails.
    let end = (hi - 1).min(points.len());
    lo + points[lo..end].partition_point(|p| before(p.0))
}

/// Checks the normal form of a profile's change points: keys strictly increasing, none at
/// [`NEVER`], none repeating the value before it (0 before the first).
pub(super) fn check_normal_form(points: impl Iterator<Item = (Time, i64)>) -> Result<(), String> {
    let mut before: Option<(Time, i64)> = None;
    for (t, v) in points {
        if t == NEVER {
            return Err("a change point at NEVER".into());
        }
        if before.is_some_and(|(bt, _)| bt >= t) {
            return Err(format!("keys out of order at {t}"));
        }
        if before.map_or(0, |b| b.1) == v {
            return Err(format!("redundant change point at {t}"));
        }
        before = Some((t, v));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The galloping search finds what a binary search finds, for every length up to a few
    /// doublings and every probe around every key.
    #[test]
    fn gallop_is_partition_point() {
        for n in 0..40 {
            let points: Vec<(Time, i64)> = (0..n).map(|k| (10 * k as Time + 5, 1)).collect();
            for t in 0..10 * n as Time + 10 {
                assert_eq!(
                    gallop(&points, |k| k <= t),
                    points.partition_point(|p| p.0 <= t),
                    "n={n} t={t}"
                );
                assert_eq!(
                    gallop(&points, |k| k < t),
                    points.partition_point(|p| p.0 < t)
                );
            }
        }
    }

    #[test]
    fn add_merges_and_splits_steps() {
        let mut f = Flat::default();
        f.add(10, 20, 3);
        f.add(20, 30, 3);
        assert_eq!(f.points(), &[(10, 3), (30, 0)]);
        f.add(15, 30, -3);
        assert_eq!(f.points(), &[(10, 3), (15, 0)]);
        f.check().unwrap();
        f.forget_before(12);
        assert_eq!(f.points(), &[(12, 3), (15, 0)]);
        f.forget_before(15);
        assert!(f.points().is_empty());
    }

    #[test]
    fn add_steps_is_one_add_per_step() {
        let base = Flat::from_sorted([(0, 2), (10, 5), (25, 1), (40, 0)].into_iter());
        let cases: [(Time, &[Step], i64); 6] = [
            (5, &[Step::new(5, 3), Step::new(0, 9), Step::new(20, 1)], 1),
            (10, &[Step::new(15, 4), Step::new(15, 1)], -1),
            (0, &[Step::new(40, 1)], 1),
            (30, &[Step::new(20, 2), Step::new(NEVER, 7)], 1),
            (50, &[Step::new(NEVER - 60, 1), Step::new(10, 1)], 1),
            (12, &[Step::new(3, 0), Step::new(0, 4)], 1),
        ];
        for (start, steps, sign) in cases {
            let mut one = base.clone();
            let mut each = base.clone();
            one.add_steps(start, steps, sign);
            let mut t = start;
            for s in steps {
                let end = t.saturating_add(s.duration);
                if t < end && s.nodes != 0 {
                    each.add(t, end, sign * i64::from(s.nodes));
                }
                t = end;
            }
            assert_eq!(one.points(), each.points(), "{start} {steps:?} {sign}");
            one.check().unwrap();
        }
    }

    #[test]
    fn fit_skips_short_gaps() {
        let f = Flat::from_sorted([(0, 5), (10, 1), (12, 5), (20, 0)].into_iter());
        let fit = |from, duration, limit| f.run_start(from, duration, limit, NEVER, NEVER);
        assert_eq!(fit(0, 2, 1), Some(10));
        assert_eq!(fit(0, 3, 1), Some(20));
        assert_eq!(fit(11, 1, 1), Some(11));
        assert_eq!(fit(0, NEVER, 1), Some(20));
        assert_eq!(fit(0, 1, -1), None);
        assert_eq!(f.run_start(0, 3, 1, 20, NEVER), None);
        assert_eq!(f.run_start(0, 3, 1, 21, NEVER), Some(20));
    }
}
