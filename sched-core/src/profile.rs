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
//! PLACEHOLDER IMPLEMENTATION: an ordered map of change points with linear range scans. It is
//! being replaced by a balanced tree with range-add and range-max; the API does not change.

use std::collections::BTreeMap;

use crate::request::Step;
use crate::time::{Duration, Time, NEVER};

/// A step function from time to an integer, 0 before the first change point.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// `t → value on [t, next change point)`; no two neighbours hold the same value and no
    /// entry holds 0 before any non-zero one.
    points: BTreeMap<Time, i64>,
}

impl Profile {
    /// The profile that is 0 everywhere.
    pub fn new() -> Self {
        Profile::default()
    }

    /// The EP `steps` delayed to start at `start` (0 before `start` and after the last step).
    pub fn from_steps(start: Time, steps: &[Step]) -> Self {
        let mut p = Profile::new();
        p.add_steps(start, steps, 1);
        p
    }

    /// Number of change points kept.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Whether the profile is 0 everywhere.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// `ep(t)`: the value at `t`.
    pub fn value_at(&self, t: Time) -> i64 {
        self.points.range(..=t).next_back().map_or(0, |(_, v)| *v)
    }

    /// `max(ep, t0, t1)`: the largest value on `[t0, t1)`; 0 when the interval is empty.
    pub fn max_over(&self, t0: Time, t1: Time) -> i64 {
        if t0 >= t1 {
            return 0;
        }
        let first = self.value_at(t0);
        self.points
            .range(t0..t1)
            .map(|(_, v)| *v)
            .fold(first, i64::max)
    }

    /// `loc(ep, t0, t1)`: the end of the last step reaching the maximum of `[t0, t1)`, clipped
    /// to `t1`; `t0` when the interval is empty. Klein & Pérez use it to jump past a conflict.
    pub fn loc(&self, t0: Time, t1: Time) -> Time {
        if t0 >= t1 {
            return t0;
        }
        let m = self.max_over(t0, t1);
        let mut end = t0;
        let mut cur = self.value_at(t0);
        for (&t, &v) in self.points.range(t0 + 1..t1) {
            if cur == m {
                end = t;
            }
            cur = v;
        }
        if cur == m {
            end = t1;
        }
        end
    }

    /// Adds `delta` on `[t0, t1)`.
    pub fn add(&mut self, t0: Time, t1: Time, delta: i64) {
        if t0 >= t1 || delta == 0 {
            return;
        }
        let at_t0 = self.value_at(t0);
        let at_t1 = if t1 == NEVER { 0 } else { self.value_at(t1) };
        let inner: Vec<Time> = self.points.range(t0..t1).map(|(t, _)| *t).collect();
        for t in inner {
            if let Some(v) = self.points.get_mut(&t) {
                *v += delta;
            }
        }
        self.points.insert(t0, at_t0 + delta);
        if t1 != NEVER {
            self.points.insert(t1, at_t1);
        }
        self.normalise_around(t0);
        if t1 != NEVER {
            self.normalise_around(t1);
        }
    }

    /// Adds `sign ×` the EP `steps` delayed to `start`.
    pub fn add_steps(&mut self, start: Time, steps: &[Step], sign: i64) {
        let mut t = start;
        for s in steps {
            let end = t.saturating_add(s.duration);
            self.add(t, end, sign * i64::from(s.nodes));
            t = end;
        }
    }

    /// `ep1 + ep2`: adds `other` to `self`.
    pub fn add_profile(&mut self, other: &Profile) {
        let pts: Vec<(Time, i64)> = other.change_points().collect();
        for (i, &(t, v)) in pts.iter().enumerate() {
            let end = pts.get(i + 1).map_or(NEVER, |p| p.0);
            self.add(t, end, v);
        }
    }

    /// `delay(ep, dt)`: the profile shifted `dt` later (0 on `[0, dt)`).
    pub fn delayed(&self, dt: Duration) -> Profile {
        Profile {
            points: self
                .points
                .iter()
                .map(|(t, v)| (t.saturating_add(dt), *v))
                .collect(),
        }
    }

    /// The change points `(t, value from t on)`, in time order.
    pub fn change_points(&self) -> impl Iterator<Item = (Time, i64)> + '_ {
        self.points.iter().map(|(t, v)| (*t, *v))
    }

    /// The last step on `[t0, t1)` whose value exceeds `limit`, as `(start, end)` clipped to
    /// `[t0, ∞)` (the end is not clipped: it is where the step really ends, [`NEVER`] if it
    /// never does).
    pub fn last_above(&self, t0: Time, t1: Time, limit: i64) -> Option<(Time, Time)> {
        if t0 >= t1 {
            return None;
        }
        let mut found = None;
        let mut start = t0;
        let mut v = self.value_at(t0);
        for (&t, &nv) in self.points.range(t0 + 1..t1) {
            if v > limit {
                found = Some((start, t));
            }
            start = t;
            v = nv;
        }
        if v > limit {
            let end = self.points.range(t1..).next().map_or(NEVER, |(t, _)| *t);
            found = Some((start, end));
        }
        found
    }

    /// The earliest `t ≥ from` such that the profile stays `≤ limit` on `[t, t + duration)`,
    /// or `None` if there is none. A zero duration fits at `from`.
    pub fn earliest_fit(&self, from: Time, duration: Duration, limit: i64) -> Option<Time> {
        let mut t = from;
        loop {
            let end = t.saturating_add(duration);
            match self.last_above(t, end, limit) {
                None => return Some(t),
                Some((_, NEVER)) => return None,
                // Every window starting before the end of the last conflicting step still
                // contains part of it, so the next candidate is that end.
                Some((_, e)) => t = e,
            }
        }
    }

    /// Drops every change point before `t`, keeping the value at `t`: the past is forgotten.
    pub fn forget_before(&mut self, t: Time) {
        let v = self.value_at(t);
        self.points = self.points.split_off(&t);
        if v != 0 {
            self.points.insert(t, v);
        }
        self.normalise_around(t);
    }

    fn normalise_around(&mut self, t: Time) {
        let Some(&v) = self.points.get(&t) else { return };
        let before = self.points.range(..t).next_back().map_or(0, |(_, v)| *v);
        if before == v {
            self.points.remove(&t);
        }
        if let Some((&n, &nv)) = self.points.range(t + 1..).next() {
            let here = self.value_at(t);
            if nv == here {
                self.points.remove(&n);
            }
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
    fn add_and_remove_leaves_nothing() {
        let mut p = paper_epres();
        p.add_steps(0, &[Step::new(1200, 10), Step::new(3600, 20)], -1);
        assert!(p.is_empty(), "{p:?}");
    }
}
