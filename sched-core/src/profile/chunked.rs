//! The chunked representation of a [`Profile`](super::Profile): its change points in sorted
//! chunks of up to [`CHUNK_MAX`] points, each with the smallest and largest value it holds.
//!
//! For profiles past [`FLAT_MAX`](super::FLAT_MAX) points. An edit shifts the points of one
//! chunk instead of the whole tail (the flat representation's O(n) `insert`), a range add
//! moves whole chunks' minima and maxima with their points, and the fit scans pass a chunk that
//! is busy everywhere (its minimum above the limit) or free everywhere (its maximum at or below
//! it) in one step, so a scan costs the chunks it crosses plus the points of the few where the
//! profile crosses the limit. Everything stays contiguous within a chunk, which is what made the
//! flat representation beat the treap's pointer chasing at a few hundred points.

use std::cell::Cell;

use super::flat::{check_normal_form, Scan};
use crate::time::{Duration, Time, NEVER};

/// The most points a chunk holds by default; a chunk that grows past its limit is split in
/// two halves, and one that shrinks below a quarter of it is merged with a neighbour when the
/// two fit in one chunk.
pub(crate) const CHUNK_MAX: usize = 256;

/// Change points `(t, value from t on)` in the normal form of [`Profile`](super::Profile),
/// cut into non-empty chunks in key order.
#[derive(Clone, Debug)]
pub(crate) struct Chunked {
    /// The most points a chunk holds (at least 4).
    cap: usize,
    chunks: Vec<Vec<(Time, i64)>>,
    /// `firsts[c]`: the first key of chunk `c` (the chunk is found by binary search on these).
    firsts: Vec<Time>,
    /// The smallest and the largest value of each chunk's points.
    mins: Vec<i64>,
    maxs: Vec<i64>,
    len: usize,
    /// The fit scans' work since [`Chunked::reset_scans`]: queries, and points and chunks
    /// crossed. A profile whose scans cross most of it at every query is better off in the
    /// treap, whose fences skip short free runs (see [`Profile`](super::Profile)'s switch).
    scans: Cell<(u64, u64)>,
}

/// The change points in order.
pub(crate) type Iter<'a> =
    std::iter::Copied<std::iter::Flatten<std::slice::Iter<'a, Vec<(Time, i64)>>>>;

/// A position among the points: chunk `c`, index `i` in it; `(chunks.len(), 0)` is the end.
type Pos = (usize, usize);

impl Chunked {
    fn new(cap: usize) -> Self {
        Chunked {
            cap: cap.max(4),
            chunks: Vec::new(),
            firsts: Vec::new(),
            mins: Vec::new(),
            maxs: Vec::new(),
            len: 0,
            scans: Cell::new((0, 0)),
        }
    }

    /// The fit queries answered and the points and chunks they crossed since
    /// [`Chunked::reset_scans`].
    pub(crate) fn scans(&self) -> (u64, u64) {
        self.scans.get()
    }

    /// Starts a new count.
    pub(crate) fn reset_scans(&self) {
        self.scans.set((0, 0));
    }

    fn count_scan(&self, crossed: u64) {
        let (q, w) = self.scans.get();
        self.scans.set((q + 1, w + crossed));
    }

    /// Chunks of up to `cap` points, filled to half of it.
    pub(crate) fn from_sorted(points: impl Iterator<Item = (Time, i64)>, cap: usize) -> Self {
        let mut c = Chunked::new(cap);
        let half = c.cap / 2;
        let mut chunk = Vec::with_capacity(half);
        for p in points {
            chunk.push(p);
            if chunk.len() == half {
                c.push_chunk(std::mem::replace(&mut chunk, Vec::with_capacity(half)));
            }
        }
        if !chunk.is_empty() {
            c.push_chunk(chunk);
        }
        c
    }

    fn push_chunk(&mut self, chunk: Vec<(Time, i64)>) {
        self.len += chunk.len();
        self.firsts.push(chunk[0].0);
        self.mins.push(0);
        self.maxs.push(0);
        self.chunks.push(chunk);
        self.summarise(self.chunks.len() - 1);
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn cap(&self) -> usize {
        self.cap
    }

    pub(crate) fn iter(&self) -> Iter<'_> {
        self.chunks.iter().flatten().copied()
    }

    /// Recomputes chunk `c`'s first key, minimum and maximum.
    fn summarise(&mut self, c: usize) {
        let ch = &self.chunks[c];
        self.firsts[c] = ch[0].0;
        let (lo, hi) = ch.iter().fold((i64::MAX, i64::MIN), |(lo, hi), p| {
            (lo.min(p.1), hi.max(p.1))
        });
        self.mins[c] = lo;
        self.maxs[c] = hi;
    }

    /// The position of the first point whose key is `≥ t` (`strict`: `> t`).
    fn seek(&self, t: Time, strict: bool) -> Pos {
        let before = |k: Time| if strict { k <= t } else { k < t };
        let c = self.firsts.partition_point(|&f| before(f));
        if c == 0 {
            return (0, 0);
        }
        let ch = &self.chunks[c - 1];
        let i = ch.partition_point(|p| before(p.0));
        if i == ch.len() {
            (c, 0)
        } else {
            (c - 1, i)
        }
    }

    fn at(&self, (c, i): Pos) -> Option<(Time, i64)> {
        self.chunks.get(c).map(|ch| ch[i])
    }

    /// The value of the step before position `(c, i)` (0 before the first point).
    fn value_before(&self, (c, i): Pos) -> i64 {
        if i > 0 {
            self.chunks[c][i - 1].1
        } else if c > 0 {
            self.chunks[c - 1].last().map_or(0, |p| p.1)
        } else {
            0
        }
    }

    pub(crate) fn value_at(&self, t: Time) -> i64 {
        self.value_before(self.seek(t, true))
    }

    /// The largest value held by a key in `[t0, t1)`, if any key lies there.
    pub(crate) fn max_of_keys(&self, t0: Time, t1: Time) -> Option<i64> {
        let (mut c, mut i) = self.seek(t0, false);
        let mut max: Option<i64> = None;
        while let Some(ch) = self.chunks.get(c) {
            if ch[i].0 >= t1 {
                break;
            }
            let m = if i == 0 && ch[ch.len() - 1].0 < t1 {
                self.maxs[c]
            } else {
                let end = i + ch[i..].partition_point(|p| p.0 < t1);
                ch[i..end].iter().map(|p| p.1).max().unwrap_or(i64::MIN)
            };
            max = Some(max.map_or(m, |x| x.max(m)));
            (c, i) = (c + 1, 0);
        }
        max
    }

    /// The last key of `[t0, t1)` whose value exceeds `limit`, as `(key, next key or NEVER)`.
    pub(crate) fn last_key_above(&self, t0: Time, t1: Time, limit: i64) -> Option<(Time, Time)> {
        let lo = self.seek(t0, false);
        let (hc, hi) = self.seek(t1, false);
        if hc < lo.0 || (hc == lo.0 && hi <= lo.1) {
            return None;
        }
        // Chunks from the one holding the point before `hi` down to `lo`'s.
        let (mut c, mut end) = if hi > 0 {
            (hc, hi)
        } else if hc > 0 {
            (hc - 1, self.chunks[hc - 1].len())
        } else {
            return None;
        };
        loop {
            let start = if c == lo.0 { lo.1 } else { 0 };
            if start < end && (self.maxs[c] > limit) {
                let ch = &self.chunks[c];
                if let Some(k) = ch[start..end].iter().rposition(|p| p.1 > limit) {
                    let i = start + k;
                    let next = self.at(self.next((c, i))).map_or(NEVER, |p| p.0);
                    return Some((ch[i].0, next));
                }
            }
            if c <= lo.0 {
                return None;
            }
            c -= 1;
            end = self.chunks[c].len();
        }
    }

    fn next(&self, (c, i): Pos) -> Pos {
        if i + 1 < self.chunks[c].len() {
            (c, i + 1)
        } else {
            (c + 1, 0)
        }
    }

    /// The last key `< t` with its value, and the first key `≥ t`.
    pub(crate) fn neighbours(&self, t: Time) -> (Option<(Time, i64)>, Option<Time>) {
        let (c, i) = self.seek(t, false);
        let before = if i > 0 {
            Some(self.chunks[c][i - 1])
        } else {
            c.checked_sub(1)
                .and_then(|b| self.chunks[b].last().copied())
        };
        (before, self.at((c, i)).map(|p| p.0))
    }

    /// The flat representation's scan ([`Scan`], [`super::flat::Flat::run_start`]'s contract) chunk by
    /// chunk, passing whole chunks where they cannot change its state and counting what it
    /// crosses.
    pub(crate) fn run_start(
        &self,
        from: Time,
        duration: Duration,
        limit: i64,
        bound: Time,
        reach: Time,
    ) -> Option<Time> {
        let (mut c, mut i) = self.seek(from, true);
        let value = self.value_before((c, i));
        let mut scan = Scan::new(from, value, duration, limit, bound, reach);
        let mut crossed = 0;
        let answer = loop {
            let Some(ch) = self.chunks.get(c) else {
                break scan.open_end();
            };
            crossed += 1;
            let skip = i == 0
                && match scan.run {
                    // Busy everywhere: no run starts here (and if `bound` is passed here, no
                    // point after it is before `bound` either).
                    None if self.mins[c] > limit => {
                        if ch[0].0 >= bound {
                            break None;
                        }
                        true
                    }
                    // Free everywhere and ending before the run is long enough: it goes on.
                    Some((_, need)) => self.maxs[c] <= limit && ch[ch.len() - 1].0 < need,
                    None => false,
                };
            if !skip {
                crossed += (ch.len() - i) as u64;
                if let Some(answer) = scan.follow(&ch[i..]) {
                    break answer;
                }
            }
            (c, i) = (c + 1, 0);
        };
        self.count_scan(crossed);
        answer
    }

    /// Adds `delta` on `[t0, t1)` and restores normal form; `t0 < t1`, `delta ≠ 0`.
    pub(crate) fn add(&mut self, t0: Time, t1: Time, delta: i64) {
        debug_assert!(t0 < t1 && delta != 0);
        // Points at both ends (repeating the value before them for now), then the values
        // between them, then the two ends dropped again if they repeat the step before.
        self.ensure(t0);
        if t1 != NEVER {
            self.ensure(t1);
        }
        let (mut c, mut i) = self.seek(t0, false);
        while c < self.chunks.len() {
            let ch = &mut self.chunks[c];
            let end = if t1 == NEVER {
                ch.len()
            } else {
                i + ch[i..].partition_point(|p| p.0 < t1)
            };
            for p in &mut ch[i..end] {
                p.1 += delta;
            }
            if i == 0 && end == ch.len() {
                self.mins[c] += delta;
                self.maxs[c] += delta;
            } else if i < end {
                self.summarise(c);
            }
            if end < self.chunks[c].len() {
                break;
            }
            (c, i) = (c + 1, 0);
        }
        if t1 != NEVER {
            self.drop_if_repeated(t1);
        }
        self.drop_if_repeated(t0);
    }

    /// Makes sure a point is kept at `t`, with the value of the step it falls in.
    fn ensure(&mut self, t: Time) {
        let (c, i) = self.seek(t, false);
        if self.at((c, i)).is_some_and(|p| p.0 == t) {
            return;
        }
        let v = self.value_before((c, i));
        if self.chunks.is_empty() {
            self.push_chunk(vec![(t, v)]);
            return;
        }
        // At a chunk's start, append to the chunk before instead: its first key stays.
        let (c, i) = if i == 0 && c > 0 {
            (c - 1, self.chunks[c - 1].len())
        } else {
            (c, i)
        };
        self.chunks[c].insert(i, (t, v));
        self.len += 1;
        if i == 0 {
            self.firsts[c] = t;
        }
        self.mins[c] = self.mins[c].min(v);
        self.maxs[c] = self.maxs[c].max(v);
        self.split_if_full(c);
    }

    /// Splits chunk `c` in two halves when it holds more than `cap` points.
    fn split_if_full(&mut self, c: usize) {
        if self.chunks[c].len() > self.cap {
            let tail = self.chunks[c].split_off(self.cap / 2);
            self.chunks.insert(c + 1, tail);
            self.firsts.insert(c + 1, 0);
            self.mins.insert(c + 1, 0);
            self.maxs.insert(c + 1, 0);
            self.summarise(c);
            self.summarise(c + 1);
        }
    }

    /// Drops the point at `t`, if there is one, when its value repeats the step before it.
    fn drop_if_repeated(&mut self, t: Time) {
        let pos = self.seek(t, false);
        match self.at(pos) {
            Some((k, v)) if k == t && v == self.value_before(pos) => self.remove(pos),
            _ => {}
        }
    }

    fn remove(&mut self, (c, i): Pos) {
        self.chunks[c].remove(i);
        self.len -= 1;
        if self.chunks[c].is_empty() {
            self.remove_chunk(c);
            return;
        }
        self.summarise(c);
        self.merge_if_small(c);
    }

    fn remove_chunk(&mut self, c: usize) {
        self.chunks.remove(c);
        self.firsts.remove(c);
        self.mins.remove(c);
        self.maxs.remove(c);
    }

    /// Merges chunk `c` into a neighbour when it is small and the two fit in one chunk, so
    /// that removals do not leave many nearly empty chunks for the scans to cross.
    fn merge_if_small(&mut self, c: usize) {
        if self.chunks[c].len() >= self.cap / 4 {
            return;
        }
        // Up to a whole chunk: a tiny chunk beside a half-full one would otherwise stay for
        // good (a chunk split at the next insert is no worse than two to cross).
        let fits = |o: usize| self.chunks[o].len() + self.chunks[c].len() <= self.cap;
        let (a, b) = if c + 1 < self.chunks.len() && fits(c + 1) {
            (c, c + 1)
        } else if c > 0 && fits(c - 1) {
            (c - 1, c)
        } else {
            return;
        };
        let tail = std::mem::take(&mut self.chunks[b]);
        self.chunks[a].extend(tail);
        self.remove_chunk(b);
        self.summarise(a);
    }

    /// Drops every key below `t`; a key at `t` with the value there is kept unless it is 0.
    pub(crate) fn forget_before(&mut self, t: Time) {
        if t == NEVER {
            *self = Chunked::new(self.cap);
            return;
        }
        let (c, i) = self.seek(t, false);
        let v = self.value_before((c, i));
        let here = self.at((c, i));
        // Everything before (c, i) goes.
        let dropped: usize = self.chunks[..c].iter().map(Vec::len).sum::<usize>() + i;
        self.chunks.drain(..c);
        self.firsts.drain(..c);
        self.mins.drain(..c);
        self.maxs.drain(..c);
        self.len -= dropped;
        if i > 0 {
            self.chunks[0].drain(..i);
            self.summarise(0);
        }
        match here {
            // A key at t keeps its own value, and is redundant if that is 0.
            Some((k, 0)) if k == t => self.remove((0, 0)),
            Some((k, _)) if k == t => {}
            _ if v != 0 => {
                if self.chunks.is_empty() {
                    self.push_chunk(vec![(t, v)]);
                } else {
                    self.chunks[0].insert(0, (t, v));
                    self.len += 1;
                    self.summarise(0);
                    self.split_if_full(0);
                }
            }
            _ => {}
        }
        if !self.chunks.is_empty() {
            self.merge_if_small(0);
        }
    }

    pub(crate) fn check(&self) -> Result<(), String> {
        let n = self.chunks.len();
        if self.firsts.len() != n || self.mins.len() != n || self.maxs.len() != n {
            return Err("summaries out of step with the chunks".into());
        }
        for (c, ch) in self.chunks.iter().enumerate() {
            if ch.is_empty() || ch.len() > self.cap {
                return Err(format!("chunk {c} holds {} points", ch.len()));
            }
            let lo = ch.iter().map(|p| p.1).min();
            let hi = ch.iter().map(|p| p.1).max();
            if self.firsts[c] != ch[0].0 || Some(self.mins[c]) != lo || Some(self.maxs[c]) != hi {
                return Err(format!("stale summary of chunk {c}"));
            }
        }
        let count = self.iter().count();
        if count != self.len {
            return Err(format!("{count} points counted as {}", self.len));
        }
        check_normal_form(self.iter())
    }
}
