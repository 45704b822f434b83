//! The reference implementation of [`Profile`](super::Profile): an ordered map of change points
//! scanned linearly. It is the oracle of the property tests and the baseline of the benchmark,
//! not something to schedule with: every query costs O(points in the range) and every `add`
//! O(points in the interval).

use std::collections::BTreeMap;

use crate::request::Step;
use crate::time::{Duration, Time, NEVER};

/// The same step function as [`Profile`](super::Profile), same API, on a `BTreeMap`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NaiveProfile {
    /// `t → value on [t, next change point)`; no two neighbours hold the same value, no entry
    /// holds 0 before any non-zero one, and no key is [`NEVER`].
    points: BTreeMap<Time, i64>,
}

impl NaiveProfile {
    /// The profile that is 0 everywhere.
    pub fn new() -> Self {
        NaiveProfile::default()
    }

    /// The EP `steps` delayed to start at `start`.
    pub fn from_steps(start: Time, steps: &[Step]) -> Self {
        let mut p = NaiveProfile::new();
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

    /// `ep(t)`.
    pub fn value_at(&self, t: Time) -> i64 {
        self.points.range(..=t).next_back().map_or(0, |(_, v)| *v)
    }

    /// `max(ep, t0, t1)`.
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

    /// `loc(ep, t0, t1)`.
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

    /// `ep1 + ep2`.
    pub fn add_profile(&mut self, other: &NaiveProfile) {
        let pts: Vec<(Time, i64)> = other.change_points().collect();
        for (i, &(t, v)) in pts.iter().enumerate() {
            let end = pts.get(i + 1).map_or(NEVER, |p| p.0);
            self.add(t, end, v);
        }
    }

    /// `delay(ep, dt)`; change points pushed to [`NEVER`] are dropped, as in `Profile`.
    pub fn delayed(&self, dt: Duration) -> NaiveProfile {
        NaiveProfile {
            points: self
                .points
                .iter()
                .map(|(t, v)| (t.saturating_add(dt), *v))
                .filter(|(t, _)| *t != NEVER)
                .collect(),
        }
    }

    /// The change points `(t, value from t on)`, in time order.
    pub fn change_points(&self) -> impl Iterator<Item = (Time, i64)> + '_ {
        self.points.iter().map(|(t, v)| (*t, *v))
    }

    /// The last step on `[t0, t1)` whose value exceeds `limit`.
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

    /// The earliest `t ≥ from` such that the profile stays `≤ limit` on `[t, t + duration)`.
    pub fn earliest_fit(&self, from: Time, duration: Duration, limit: i64) -> Option<Time> {
        let mut t = from;
        loop {
            let end = t.saturating_add(duration);
            match self.last_above(t, end, limit) {
                None => return Some(t),
                Some((_, NEVER)) => return None,
                // Every window starting before the end of the last conflicting step still
                // contains part of it, so the next candidate is that end (Klein & Pérez's
                // `loc` jump). One jump per free gap too short for the job: the tree's search
                // passes over such gaps a subtree at a time instead.
                Some((_, e)) => t = e,
            }
        }
    }

    /// Drops every change point before `t`, keeping the value at `t` (nothing at all when `t`
    /// is [`NEVER`]).
    pub fn forget_before(&mut self, t: Time) {
        let v = self.value_at(t);
        self.points = self.points.split_off(&t);
        if v != 0 && t != NEVER {
            self.points.insert(t, v);
        }
        self.normalise_around(t);
    }

    fn normalise_around(&mut self, t: Time) {
        let Some(&v) = self.points.get(&t) else {
            return;
        };
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
