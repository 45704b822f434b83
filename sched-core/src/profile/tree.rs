//! The tree under [`Profile`](super::Profile): an arena-allocated treap keyed by time.
//!
//! Each node is one step `[key, next key)` holding its value. Nodes carry the maximum and the
//! minimum value of their subtree and a lazy range-add tag, so that adding on an interval, the
//! maximum over an interval and "the last step above a limit" cost one or two root-to-leaf
//! paths. For the earliest-fit search they also carry [`Fence`]s: where the subtree's tall
//! steps are and the longest stretch between two of them, so that the search can pass over a
//! subtree whose free runs are all too short without visiting them.
//!
//! Conventions:
//! - `nodes[0]` is the `NIL` sentinel (size 0, max `i64::MIN`, min `i64::MAX`); it is never
//!   written, so that `pull` reads children without branching.
//! - A node's `val`, `max` and `min` include every tag pushed down to it but not the pending
//!   `tag`s of its ancestors: the true value of a node is `val` plus the sum of the tags of its
//!   strict ancestors. Read-only descents carry that sum as `acc`; mutating ones push tags down
//!   on the way, so a node's own `tag` is 0 whenever it is pulled.
//! - Priorities are a hash of the key, so the shape of the tree depends only on its set of
//!   keys and no random state is kept. A mixing hash is enough for expected O(log n) depth
//!   on the regular, clustered timestamps schedules produce.
//! - Freed subtrees go whole onto `free` (a stack of subtree roots): allocating pops a root and
//!   pushes its children, so dropping the past is O(1) and reuse is O(1) per node.

use crate::time::{Time, NEVER};

const NIL: u32 = 0;

/// How far below its subtree's maximum each level of fences reaches (see [`Fence`]). Powers of
/// 4 so that a limit far below the maximum (a wide job in a busy plan) finds fences at most 4×
/// shallower than it could use. Values are node counts: beyond 4,096 the deepest level serves.
/// More levels prune better and cost more in every `pull`; this is the measured balance on
/// the CBF benchmark (10,000 nodes). Powers of 2 (13 levels) were measured again with the
/// in-place add: 25 % faster on the profile benchmark, whose job sizes are powers of 2 and so
/// fall exactly on the levels, no faster on `cargo bench -p esched-cbf` (sizes log-uniform)
/// and 10 % slower on `esim bench`, where `pull` dominates.
const DEPTHS: [i64; LEVELS] = [1, 4, 16, 64, 256, 1024, 4096];
const LEVELS: usize = 7;

/// The largest level whose depth is at most `depth`, if any.
fn level_within(depth: i64) -> Option<usize> {
    if depth < 1 {
        return None;
    }
    // DEPTHS[k] = 4^k: the level is ⌊log4 depth⌋, capped. `pull` asks this for every level of
    // both children, so it is worth a closed form.
    let log4 = (63 - depth.leading_zeros() as usize) / 2;
    Some(log4.min(LEVELS - 1))
}

/// A set of "tall" steps of a subtree, every one above `max - DEPTHS[level]`, summarised by
/// where the first starts, where the last ends and the longest stretch strictly between two
/// consecutive ones. A query whose limit is at most `max - DEPTHS[level]` sees every fence as
/// busy, so when `gap` is shorter than the job nothing between the first and last fence can
/// hold it. At level 0 the fences are exactly the steps at the maximum; deeper levels reuse
/// the children's fences at the deepest level that still qualifies, a subset of the tall
/// steps, which keeps `pull` O(1) and the bound sound.
#[derive(Clone, Copy, Debug)]
struct Fence {
    /// The key of the first fence.
    first: Time,
    /// The key following the last fence, `NEVER` if that is the subtree's last step (its end
    /// lies outside).
    after: Time,
    /// The longest stretch strictly between two consecutive fences.
    gap: Time,
}

const NO_FENCE: Fence = Fence {
    first: 0,
    after: NEVER,
    gap: 0,
};

#[derive(Clone, Copy, Debug)]
struct Node {
    key: Time,
    val: i64,
    max: i64,
    min: i64,
    tag: i64,
    /// The subtree's first key.
    first_key: Time,
    /// The value of the subtree's last step.
    last_val: i64,
    /// Fences at each level of depth below the maximum; only the first `deep` are kept, see
    /// [`Node::fence`].
    fences: [Fence; LEVELS],
    left: u32,
    right: u32,
    prio: u32,
    size: u32,
    /// The number of levels whose depth is within the subtree's range of values.
    deep: u32,
}

impl Node {
    /// The fences at level `k`. From level `deep` on, the depth exceeds the subtree's range of
    /// values, so every step is tall: one run of fences with no gap. Most nodes are near the
    /// leaves, where that is most levels, so `pull` neither computes nor writes them.
    fn fence(&self, k: usize) -> Fence {
        if k < self.deep as usize {
            self.fences[k]
        } else {
            Fence {
                first: self.first_key,
                after: NEVER,
                gap: 0,
            }
        }
    }
}

const SENTINEL: Node = Node {
    key: 0,
    val: 0,
    max: i64::MIN,
    min: i64::MAX,
    tag: 0,
    first_key: 0,
    last_val: 0,
    fences: [NO_FENCE; LEVELS],
    left: NIL,
    right: NIL,
    prio: 0,
    size: 0,
    deep: 0,
};

/// splitmix64's finaliser: a well-mixed priority from a key.
fn prio_of(key: Time) -> u32 {
    let mut z = key.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as u32
}

/// A treap of steps; see the module documentation for its invariants.
#[derive(Clone)]
pub(crate) struct Treap {
    nodes: Vec<Node>,
    root: u32,
    free: Vec<u32>,
}

impl Default for Treap {
    fn default() -> Self {
        Treap {
            nodes: vec![SENTINEL],
            root: NIL,
            free: Vec::new(),
        }
    }
}

impl Treap {
    /// Builds the treap of `points`, given in increasing key order, in O(n).
    pub(crate) fn from_sorted(points: impl Iterator<Item = (Time, i64)>) -> Self {
        let mut t = Treap::default();
        // The right spine of the tree built so far; a Cartesian tree by priority.
        let mut spine: Vec<u32> = Vec::new();
        for (key, val) in points {
            let x = t.alloc(key, val);
            let mut last = NIL;
            while let Some(&top) = spine.last() {
                if t.nodes[top as usize].prio >= t.nodes[x as usize].prio {
                    break;
                }
                spine.pop();
                t.pull(top);
                last = top;
            }
            t.nodes[x as usize].left = last;
            if let Some(&top) = spine.last() {
                t.nodes[top as usize].right = x;
            }
            spine.push(x);
        }
        while let Some(top) = spine.pop() {
            t.pull(top);
            t.root = top;
        }
        t
    }

    pub(crate) fn len(&self) -> usize {
        self.nodes[self.root as usize].size as usize
    }

    fn alloc(&mut self, key: Time, val: i64) -> u32 {
        let node = Node {
            key,
            val,
            max: val,
            min: val,
            tag: 0,
            first_key: key,
            last_val: val,
            fences: [NO_FENCE; LEVELS],
            left: NIL,
            right: NIL,
            prio: prio_of(key),
            size: 1,
            deep: 0,
        };
        if let Some(i) = self.free.pop() {
            let old = &self.nodes[i as usize];
            for c in [old.left, old.right] {
                if c != NIL {
                    self.free.push(c);
                }
            }
            self.nodes[i as usize] = node;
            i
        } else {
            let i = u32::try_from(self.nodes.len()).unwrap_or_else(|_| {
                // 4 billion change points do not fit in memory anyway.
                panic!("profile exceeds u32::MAX change points")
            });
            self.nodes.push(node);
            i
        }
    }

    /// Gives back a whole detached subtree.
    fn release(&mut self, x: u32) {
        if x != NIL {
            self.free.push(x);
        }
    }

    fn apply(&mut self, x: u32, delta: i64) {
        if x != NIL {
            let n = &mut self.nodes[x as usize];
            n.val += delta;
            n.max += delta;
            n.min += delta;
            n.last_val += delta;
            n.tag += delta;
        }
    }

    fn push(&mut self, x: u32) {
        let (tag, left, right) = {
            let n = &self.nodes[x as usize];
            (n.tag, n.left, n.right)
        };
        if tag != 0 {
            self.apply(left, tag);
            self.apply(right, tag);
            self.nodes[x as usize].tag = 0;
        }
    }

    fn pull(&mut self, x: u32) {
        // By reference: nodes are a few cache lines, copying them would cost more than `pull`.
        let n = &self.nodes[x as usize];
        debug_assert_eq!(n.tag, 0, "pull on a node with a pending tag");
        let (l, r) = (&self.nodes[n.left as usize], &self.nodes[n.right as usize]);
        let max = n.val.max(l.max).max(r.max);
        let min = n.val.min(l.min).min(r.min);
        let first_key = if l.size > 0 { l.first_key } else { n.key };
        let mut fences = [NO_FENCE; LEVELS];
        let deep = level_within(max.saturating_sub(min)).map_or(0, |k| k + 1);
        // How far below the maximum each part tops out: a part has tall steps at depth `d`
        // when `d` exceeds it, and a child's fences at depth `d − shift` below its own
        // maximum are then tall here.
        let shift = |c: &Node| {
            if c.size == 0 {
                i64::MAX
            } else {
                max.saturating_sub(c.max)
            }
        };
        let (sl, sn, sr) = (shift(l), max.saturating_sub(n.val), shift(r));
        let after_n = if r.size > 0 { r.first_key } else { NEVER };
        for (k, fence) in fences[..deep].iter_mut().enumerate() {
            let depth = DEPTHS[k];
            // Walk the three parts in key order, joining the stretches between fences. Fences
            // are about *which* steps are tall relative to the subtree's maximum, so a range
            // add on the whole subtree (`apply`) leaves them unchanged.
            let mut gap = 0;
            // The key after the last fence met so far, if any.
            let mut after: Option<Time> = None;
            let mut first = n.key;
            if depth > sl {
                let f = l.fence(level_within(depth - sl).unwrap_or(0));
                first = f.first;
                gap = f.gap;
                after = Some(if f.after == NEVER { n.key } else { f.after });
            }
            if depth > sn {
                if let Some(a) = after {
                    gap = gap.max(n.key - a);
                }
                after = Some(after_n);
            }
            if depth > sr {
                let f = r.fence(level_within(depth - sr).unwrap_or(0));
                match after {
                    Some(a) => gap = gap.max(f.first - a),
                    None => first = f.first,
                }
                gap = gap.max(f.gap);
                after = Some(f.after);
            }
            *fence = Fence {
                first,
                after: after.unwrap_or(NEVER),
                gap,
            };
        }
        let size = 1 + l.size + r.size;
        let last_val = if r.size > 0 { r.last_val } else { n.val };
        let node = &mut self.nodes[x as usize];
        node.last_val = last_val;
        node.max = max;
        node.min = min;
        node.size = size;
        node.first_key = first_key;
        node.deep = deep as u32;
        node.fences[..deep].copy_from_slice(&fences[..deep]);
    }

    /// Splits `x` into the keys `< k` and the keys `≥ k`.
    fn split(&mut self, x: u32, k: Time) -> (u32, u32) {
        if x == NIL {
            return (NIL, NIL);
        }
        self.push(x);
        let (key, left, right) = {
            let n = &self.nodes[x as usize];
            (n.key, n.left, n.right)
        };
        if key < k {
            let (a, b) = self.split(right, k);
            self.nodes[x as usize].right = a;
            self.pull(x);
            (x, b)
        } else {
            let (a, b) = self.split(left, k);
            self.nodes[x as usize].left = b;
            self.pull(x);
            (a, x)
        }
    }

    /// Joins `a` and `b`, every key of `a` being below every key of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].prio > self.nodes[b as usize].prio {
            self.push(a);
            let r = self.merge(self.nodes[a as usize].right, b);
            self.nodes[a as usize].right = r;
            self.pull(a);
            a
        } else {
            self.push(b);
            let l = self.merge(a, self.nodes[b as usize].left);
            self.nodes[b as usize].left = l;
            self.pull(b);
            b
        }
    }

    /// The first `(key, value)` of the detached subtree `x` (no pending tag above it).
    fn first(&self, mut x: u32) -> Option<(Time, i64)> {
        let mut acc = 0;
        let mut found = None;
        while x != NIL {
            let n = &self.nodes[x as usize];
            found = Some((n.key, n.val + acc));
            acc += n.tag;
            x = n.left;
        }
        found
    }

    /// Removes the first node of the detached subtree `x`; returns the new root.
    fn pop_first(&mut self, x: u32) -> u32 {
        if x == NIL {
            return NIL;
        }
        self.push(x);
        let (left, right) = {
            let n = &self.nodes[x as usize];
            (n.left, n.right)
        };
        if left == NIL {
            self.nodes[x as usize].right = NIL;
            self.release(x);
            return right;
        }
        let l = self.pop_first(left);
        self.nodes[x as usize].left = l;
        self.pull(x);
        x
    }

    /// The value on the step containing `t` (0 before the first key).
    pub(crate) fn value_at(&self, t: Time) -> i64 {
        let mut x = self.root;
        let mut acc = 0;
        let mut found = 0;
        while x != NIL {
            let n = &self.nodes[x as usize];
            if n.key <= t {
                found = n.val + acc;
                if n.key == t {
                    break;
                }
                acc += n.tag;
                x = n.right;
            } else {
                acc += n.tag;
                x = n.left;
            }
        }
        found
    }

    /// The largest value held by a key in `[t0, t1)`, if any key lies there.
    pub(crate) fn max_of_keys(&self, t0: Time, t1: Time) -> Option<i64> {
        // Find the highest node inside the range: the two boundary paths start there.
        let mut x = self.root;
        let mut acc = 0;
        while x != NIL {
            let n = &self.nodes[x as usize];
            if n.key < t0 {
                acc += n.tag;
                x = n.right;
            } else if n.key >= t1 {
                acc += n.tag;
                x = n.left;
            } else {
                break;
            }
        }
        if x == NIL {
            return None;
        }
        let top = self.nodes[x as usize];
        let mut best = top.val + acc;
        let below = acc + top.tag;
        // Left boundary: keys ≥ t0 in the left subtree; every right subtree met is inside.
        let (mut y, mut a) = (top.left, below);
        while y != NIL {
            let n = &self.nodes[y as usize];
            if n.key >= t0 {
                best = best.max(n.val + a);
                if n.right != NIL {
                    best = best.max(self.nodes[n.right as usize].max + a + n.tag);
                }
                a += n.tag;
                y = n.left;
            } else {
                a += n.tag;
                y = n.right;
            }
        }
        // Right boundary: keys < t1 in the right subtree; every left subtree met is inside.
        let (mut y, mut a) = (top.right, below);
        while y != NIL {
            let n = &self.nodes[y as usize];
            if n.key < t1 {
                best = best.max(n.val + a);
                if n.left != NIL {
                    best = best.max(self.nodes[n.left as usize].max + a + n.tag);
                }
                a += n.tag;
                y = n.right;
            } else {
                a += n.tag;
                y = n.left;
            }
        }
        Some(best)
    }

    /// The last key of `[t0, t1)` whose value exceeds `limit`, as `(key, next key or NEVER)`.
    pub(crate) fn last_key_above(&self, t0: Time, t1: Time, limit: i64) -> Option<(Time, Time)> {
        self.last_key_above_in(self.root, 0, t0, t1, limit, NEVER)
    }

    /// The last key `≥ t0` of subtree `x` whose value exceeds `limit`, as `(key, next key in
    /// the subtree or NEVER)`; `acc`: the tags pending above `x`. One path down, where
    /// [`Treap::last_key_above_in`] may try a right subtree before the node: with no upper
    /// bound, a right subtree inside the range whose maximum is above the limit holds the
    /// answer, and if it is not above, the answer is not there.
    fn last_key_above_from(
        &self,
        mut x: u32,
        mut acc: i64,
        t0: Time,
        limit: i64,
    ) -> Option<(Time, Time)> {
        // The key of the last node we went left from: the successor of the subtree we are in.
        let mut up = NEVER;
        // Whether every key of the subtree we are in is ≥ t0.
        let mut inside = false;
        while x != NIL {
            let n = &self.nodes[x as usize];
            if n.max + acc <= limit {
                return None;
            }
            let below = acc + n.tag;
            if !inside && n.key < t0 {
                (x, acc) = (n.right, below);
                continue;
            }
            let r = &self.nodes[n.right as usize];
            if n.right != NIL && r.max + below > limit {
                // Every key there is above `n.key ≥ t0`.
                (x, acc, inside) = (n.right, below, true);
            } else if n.val + acc > limit {
                let next = if n.right == NIL { up } else { r.first_key };
                return Some((n.key, next));
            } else {
                up = n.key;
                (x, acc) = (n.left, below);
            }
        }
        None
    }

    /// `up` is the key of the nearest ancestor whose left subtree holds `x`: the successor of
    /// the last key of `x`'s subtree.
    fn last_key_above_in(
        &self,
        x: u32,
        acc: i64,
        t0: Time,
        t1: Time,
        limit: i64,
        up: Time,
    ) -> Option<(Time, Time)> {
        if x == NIL {
            return None;
        }
        let n = &self.nodes[x as usize];
        // Pruning on the subtree maximum is what keeps this to the two boundary paths: a
        // subtree wholly inside the range whose maximum exceeds the limit always succeeds.
        if n.max + acc <= limit {
            return None;
        }
        let below = acc + n.tag;
        if n.key >= t1 {
            return self.last_key_above_in(n.left, below, t0, t1, limit, n.key);
        }
        if n.key < t0 {
            return self.last_key_above_in(n.right, below, t0, t1, limit, up);
        }
        if let Some(found) = self.last_key_above_in(n.right, below, t0, t1, limit, up) {
            return Some(found);
        }
        if n.val + acc > limit {
            let next = if n.right == NIL {
                up
            } else {
                self.nodes[n.right as usize].first_key
            };
            return Some((n.key, next));
        }
        self.last_key_above_in(n.left, below, t0, t1, limit, n.key)
    }

    /// The earliest `t ≥ from` such that every step meeting `[t, t + duration)` is at most
    /// `limit`; `duration > 0`.
    pub(crate) fn earliest_fit(&self, from: Time, duration: Time, limit: i64) -> Option<Time> {
        let at_from = self.value_at(from);
        let mut search = FitSearch {
            tree: self,
            duration,
            limit,
            run: if at_from <= limit {
                Run::At(from)
            } else {
                Run::Busy
            },
        };
        if from < NEVER {
            if let Some(t) = search.scan(self.root, 0, from + 1, NEVER, NEVER) {
                return Some(t);
            }
        }
        // A free run reaching the end of time holds any duration.
        search.resolve()
    }

    /// The first key of subtree `x` whose value exceeds `limit` (`acc`: tags pending above).
    fn first_key_above(&self, mut x: u32, mut acc: i64, limit: i64) -> Option<Time> {
        while x != NIL {
            let n = &self.nodes[x as usize];
            if n.max + acc <= limit {
                return None;
            }
            let below = acc + n.tag;
            if n.left != NIL && self.nodes[n.left as usize].max + below > limit {
                (x, acc) = (n.left, below);
            } else if n.val + acc > limit {
                return Some(n.key);
            } else {
                (x, acc) = (n.right, below);
            }
        }
        None
    }

    /// The last key `< t` with its value, and the first key `≥ t`.
    pub(crate) fn neighbours(&self, t: Time) -> (Option<(Time, i64)>, Option<Time>) {
        let mut x = self.root;
        let mut acc = 0;
        let (mut before, mut after) = (None, None);
        while x != NIL {
            let n = &self.nodes[x as usize];
            if n.key < t {
                before = Some((n.key, n.val + acc));
                acc += n.tag;
                x = n.right;
            } else {
                after = Some(n.key);
                acc += n.tag;
                x = n.left;
            }
        }
        (before, after)
    }

    /// Adds `delta` on `[t0, t1)` and restores normal form; `t0 < t1`, `delta ≠ 0`.
    ///
    /// One descent along the paths to `t0` and `t1` that inserts the missing boundary keys
    /// where their priorities put them, drops the boundaries the add makes redundant and tags
    /// the subtrees in between: each node on the two paths is pulled once, where splitting the
    /// tree in three and merging it back pulled each about four times (`pull` is the dearest
    /// part of an add).
    pub(crate) fn add(&mut self, t0: Time, t1: Time, delta: i64) {
        debug_assert!(t0 < t1 && delta != 0);
        let mut edit = Edit {
            lo: t0,
            hi: t1,
            delta,
            ins: [NIL; 2],
            del: [NEVER; 2],
        };
        // The step values around the boundaries before the add decide what changes there.
        let (before_t0, at_t0) = self.probe(t0);
        match at_t0 {
            // The value just before t0 is unchanged, so t0 stops being a change point when the
            // add brings it back to that value.
            Some(v) if v + delta == before_t0 => edit.del[0] = t0,
            Some(_) => {}
            // Absent: the step containing t0 now changes there (δ ≠ 0).
            None => edit.ins[0] = self.alloc(t0, before_t0),
        }
        // No key is ever NEVER, so an open-ended add covers everything from t0 on.
        if t1 != NEVER {
            let (before_t1, at_t1) = self.probe(t1);
            match at_t1 {
                // The step ending at t1 moves by δ; t1 is redundant if it now matches it.
                Some(v) if v == before_t1 + delta => edit.del[1] = t1,
                Some(_) => {}
                None => edit.ins[1] = self.alloc(t1, before_t1),
            }
        }
        self.root = self.edit(self.root, &edit, Bounds::In(t0, t1), [true, true]);
    }

    /// The value of the step just before `t` (0 if none) and the value at key `t` if it is one.
    fn probe(&self, t: Time) -> (i64, Option<i64>) {
        let mut x = self.root;
        let mut acc = 0;
        let mut before = 0;
        let mut at = None;
        while x != NIL {
            let n = &self.nodes[x as usize];
            if n.key < t {
                before = n.val + acc;
                acc += n.tag;
                x = n.right;
            } else {
                if n.key == t {
                    at = Some(n.val + acc);
                }
                acc += n.tag;
                x = n.left;
            }
        }
        (before, at)
    }

    /// Applies `e` to subtree `x` (detached or not, its pending tags pushed above) and returns
    /// the new root. `range` is the part of `[e.lo, e.hi)` the subtree's keys can meet;
    /// `pending[i]` says whether boundary `i` (`e.lo`, `e.hi`) may lie in this subtree, for
    /// its insertion or removal.
    fn edit(&mut self, x: u32, e: &Edit, range: Bounds, pending: [bool; 2]) -> u32 {
        let ins = [0, 1].map(|i| if pending[i] { e.ins[i] } else { NIL });
        let del = [0, 1].map(|i| pending[i] && e.del[i] != NEVER);
        if ins == [NIL; 2] && del == [false; 2] {
            match range {
                Bounds::Empty => return x,
                Bounds::All => {
                    self.apply(x, e.delta);
                    return x;
                }
                _ if x == NIL => return NIL,
                _ => {}
            }
        }
        // The node at the root of the result: a boundary key to insert with a higher priority
        // than `x` takes its place (a treap insertion), else `x`.
        let prio_x = if x == NIL {
            0
        } else {
            self.nodes[x as usize].prio
        };
        let mut top = NIL;
        for &k in &ins {
            if k != NIL
                && (x == NIL || self.nodes[k as usize].prio > prio_x)
                && (top == NIL || self.nodes[k as usize].prio > self.nodes[top as usize].prio)
            {
                top = k;
            }
        }
        let cur = if top != NIL {
            let (a, b) = self.split(x, self.nodes[top as usize].key);
            let n = &mut self.nodes[top as usize];
            n.left = a;
            n.right = b;
            top
        } else {
            if x == NIL {
                return NIL;
            }
            self.push(x);
            x
        };
        let (key, left, right) = {
            let n = &self.nodes[cur as usize];
            (n.key, n.left, n.right)
        };
        if range.contains(key) {
            self.nodes[cur as usize].val += e.delta;
        }
        // Boundaries below `key` go left, above go right; the one at `key` is `cur` itself.
        let bound = [e.lo, e.hi];
        let go_left = [0, 1].map(|i| pending[i] && bound[i] < key);
        let go_right = [0, 1].map(|i| pending[i] && bound[i] > key);
        let l = self.edit(left, e, range.below(key), go_left);
        let r = self.edit(right, e, range.above(key), go_right);
        if (0..2).any(|i| del[i] && bound[i] == key) {
            let n = &mut self.nodes[cur as usize];
            n.left = NIL;
            n.right = NIL;
            self.release(cur);
            return self.merge(l, r);
        }
        let n = &mut self.nodes[cur as usize];
        n.left = l;
        n.right = r;
        self.pull(cur);
        cur
    }

    /// Drops every key below `t`; a key at `t` with the value there is kept unless it is 0.
    pub(crate) fn forget_before(&mut self, t: Time) {
        if t == NEVER {
            self.release(self.root);
            self.root = NIL;
            return;
        }
        let v = self.value_at(t);
        let (a, mut b) = self.split(self.root, t);
        self.release(a);
        match self.first(b) {
            Some((k, _)) if k == t => {
                if v == 0 {
                    b = self.pop_first(b);
                }
            }
            _ => {
                if v != 0 {
                    let n = self.alloc(t, v);
                    b = self.merge(n, b);
                }
            }
        }
        self.root = b;
    }

    /// The steps in key order.
    pub(crate) fn iter(&self) -> Iter<'_> {
        let mut it = Iter {
            tree: self,
            stack: Vec::new(),
        };
        it.descend_left(self.root, 0);
        it
    }

    /// Checks every structural invariant; returns a description of the first one broken.
    /// Brute force, for the property tests.
    pub(crate) fn check(&self) -> Result<(), String> {
        /// Returns the subtree's steps (key, true value) in order.
        fn walk(
            t: &Treap,
            x: u32,
            acc: i64,
            lo: Option<Time>,
            hi: Option<Time>,
        ) -> Result<Vec<(Time, i64)>, String> {
            if x == NIL {
                return Ok(Vec::new());
            }
            let n = t.nodes[x as usize];
            if lo.is_some_and(|lo| n.key <= lo) || hi.is_some_and(|hi| n.key >= hi) {
                return Err(format!("key {} out of order", n.key));
            }
            for c in [n.left, n.right] {
                if c != NIL && t.nodes[c as usize].prio > n.prio {
                    return Err(format!("heap order broken under key {}", n.key));
                }
            }
            let below = acc + n.tag;
            let mut steps = walk(t, n.left, below, lo, Some(n.key))?;
            steps.push((n.key, n.val + acc));
            steps.extend(walk(t, n.right, below, Some(n.key), hi)?);
            let size = steps.len() as u32;
            let max = steps.iter().map(|s| s.1).max().unwrap_or(i64::MIN);
            let min = steps.iter().map(|s| s.1).min().unwrap_or(i64::MAX);
            // Level 0: exactly the steps at the maximum.
            let at_max: Vec<usize> = (0..steps.len()).filter(|&i| steps[i].1 == max).collect();
            let first_max = steps[at_max[0]].0;
            let last = at_max[at_max.len() - 1];
            let after_max = steps.get(last + 1).map_or(NEVER, |s| s.0);
            let gap = at_max
                .windows(2)
                .map(|w| steps[w[1]].0 - steps[w[0] + 1].0)
                .max()
                .unwrap_or(0);
            let f = n.fence(0);
            let found = (n.first_key, f.first, f.after, f.gap);
            let expected = (steps[0].0, first_max, after_max, gap);
            if found != expected {
                return Err(format!(
                    "(first key, first max, after max, gap) {found:?} ≠ {expected:?} at key {}",
                    n.key
                ));
            }
            // Deeper levels: sound, not exact. The first and last fences are tall and every
            // run of short steps between them fits in the gap.
            for (k, depth) in DEPTHS.iter().enumerate() {
                let f = n.fence(k);
                let tall = max.saturating_sub(*depth);
                let Some(i) = steps.iter().position(|s| s.0 == f.first) else {
                    return Err(format!("level {k} first fence {} is no key", f.first));
                };
                let j = if f.after == NEVER {
                    steps.len() - 1
                } else {
                    match steps.iter().position(|s| s.0 == f.after) {
                        Some(a) if a > 0 => a - 1,
                        _ => return Err(format!("level {k} fence end {} is no key", f.after)),
                    }
                };
                if steps[i].1 <= tall || steps[j].1 <= tall || i > j {
                    return Err(format!("level {k} fences not tall at key {}", n.key));
                }
                let mut run_start = None;
                for s in &steps[i + 1..=j] {
                    match (s.1 > tall, run_start) {
                        (true, Some(start)) => {
                            if s.0 - start > f.gap {
                                return Err(format!("level {k} gap too small at key {}", n.key));
                            }
                            run_start = None;
                        }
                        (false, None) => run_start = Some(s.0),
                        _ => {}
                    }
                }
            }
            if n.size != size {
                return Err(format!("size {} ≠ {size} at key {}", n.size, n.key));
            }
            if n.max + acc != max {
                return Err(format!("max {} ≠ {max} at key {}", n.max + acc, n.key));
            }
            if n.last_val + acc != steps[steps.len() - 1].1 {
                return Err(format!("last value wrong at key {}", n.key));
            }
            if n.min + acc != min {
                return Err(format!("min {} ≠ {min} at key {}", n.min + acc, n.key));
            }
            Ok(steps)
        }
        let s = self.nodes[0];
        if s.size != 0 || s.max != i64::MIN || s.min != i64::MAX || s.tag != 0 {
            return Err("sentinel written".into());
        }
        walk(self, self.root, 0, None, None)?;
        let mut prev = 0;
        for (k, v) in self.iter() {
            if k == NEVER {
                return Err("key at NEVER".into());
            }
            if v == prev {
                return Err(format!("redundant change point at {k}"));
            }
            prev = v;
        }
        Ok(())
    }
}

/// One range add for [`Treap::edit`]: `delta` on `[lo, hi)` (`hi` may be `NEVER`), with the
/// boundary nodes to insert (`NIL` if none) and the boundary keys to drop (`NEVER` if none).
struct Edit {
    lo: Time,
    hi: Time,
    delta: i64,
    ins: [u32; 2],
    del: [Time; 2],
}

/// What part of a subtree's keys an add covers: none, all, or those in `[lo, hi)`.
#[derive(Clone, Copy)]
enum Bounds {
    Empty,
    All,
    In(Time, Time),
}

impl Bounds {
    fn contains(self, k: Time) -> bool {
        match self {
            Bounds::Empty => false,
            Bounds::All => true,
            Bounds::In(lo, hi) => lo <= k && k < hi,
        }
    }

    /// The bounds for the keys below `k`, knowing every key there is `< k`.
    fn below(self, k: Time) -> Bounds {
        match self {
            Bounds::In(lo, _) if k <= lo => Bounds::Empty,
            Bounds::In(lo, hi) if k <= hi => {
                if lo == 0 {
                    Bounds::All
                } else {
                    Bounds::In(lo, NEVER)
                }
            }
            b => b,
        }
    }

    /// The bounds for the keys above `k`, knowing every key there is `> k`.
    fn above(self, k: Time) -> Bounds {
        match self {
            Bounds::In(_, hi) if k >= hi.saturating_sub(1) => Bounds::Empty,
            Bounds::In(lo, hi) if k >= lo => {
                if hi == NEVER {
                    Bounds::All
                } else {
                    Bounds::In(0, hi)
                }
            }
            b => b,
        }
    }
}

/// In-order iterator over `(key, value)`, accumulating pending tags on the way down.
pub(crate) struct Iter<'a> {
    tree: &'a Treap,
    /// Nodes still to visit with the sum of their strict ancestors' tags.
    stack: Vec<(u32, i64)>,
}

impl Iter<'_> {
    fn descend_left(&mut self, mut x: u32, mut acc: i64) {
        while x != NIL {
            self.stack.push((x, acc));
            let n = &self.tree.nodes[x as usize];
            acc += n.tag;
            x = n.left;
        }
    }
}

impl Iterator for Iter<'_> {
    type Item = (Time, i64);

    fn next(&mut self) -> Option<(Time, i64)> {
        let (x, acc) = self.stack.pop()?;
        let n = self.tree.nodes[x as usize];
        self.descend_left(n.right, acc + n.tag);
        Some((n.key, n.val + acc))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.tree.len();
        (self.stack.len().min(n), Some(n))
    }
}

/// The state of an [`Treap::earliest_fit`] query: the steps after `from` are fed in key order,
/// whole subtrees at a time where their summaries decide.
struct FitSearch<'a> {
    tree: &'a Treap,
    duration: Time,
    limit: i64,
    /// Where the current run of steps at or below the limit started.
    run: Run,
}

/// Where the current run of an earliest-fit search started.
#[derive(Clone, Copy)]
enum Run {
    /// No run: on a step above the limit.
    Busy,
    /// At this instant (clipped to `from`).
    At(Time),
    /// Right after the last step above the limit among the keys `≥ from` of subtree `x`
    /// (`acc`: the tags pending above it), or at `from` if there is none; at `lo` or later.
    /// Most such runs are cut short by the next busy step, so the descent that finds the
    /// start is made only for a run that may be long enough.
    After {
        x: u32,
        acc: i64,
        from: Time,
        lo: Time,
    },
}

impl FitSearch<'_> {
    /// The start of the current run, if any, found if still unknown.
    fn resolve(&mut self) -> Option<Time> {
        match self.run {
            Run::Busy => None,
            Run::At(t) => Some(t),
            Run::After { x, acc, from, .. } => {
                let t = self
                    .tree
                    .last_key_above_from(x, acc, from, self.limit)
                    .map_or(from, |(_, after)| after);
                self.run = Run::At(t);
                Some(t)
            }
        }
    }

    /// Whether the current run could be long enough if it lasted until `end`.
    fn may_last(&self, end: Time) -> bool {
        match self.run {
            Run::Busy => false,
            Run::At(t) => end - t >= self.duration,
            Run::After { lo, .. } => end - lo >= self.duration,
        }
    }

    /// Ends the current run where a step above the limit starts, at `end`; returns the run's
    /// start if it was long enough.
    fn end_run(&mut self, end: Time) -> Option<Time> {
        let fit = if self.may_last(end) {
            self.resolve().filter(|&t| end - t >= self.duration)
        } else {
            None
        };
        self.run = Run::Busy;
        fit
    }

    /// A step at or below the limit at `key`: starts a run unless one is going on.
    fn start_run(&mut self, key: Time) {
        if let Run::Busy = self.run {
            self.run = Run::At(key);
        }
    }

    /// Feeds the step starting at `key`; returns the fit if the run it ends is long enough.
    fn step(&mut self, key: Time, value: i64) -> Option<Time> {
        if value > self.limit {
            return self.end_run(key);
        }
        self.start_run(key);
        None
    }

    /// Feeds the steps of subtree `x` whose keys lie in `[lo, hi)`; every key of `x` is below
    /// `upper`, and `acc` is the sum of the pending tags above `x`.
    fn scan(&mut self, x: u32, acc: i64, lo: Time, hi: Time, upper: Time) -> Option<Time> {
        if x == NIL {
            return None;
        }
        let n = &self.tree.nodes[x as usize];
        if lo <= n.first_key && upper <= hi {
            return self.scan_whole(x, acc, upper);
        }
        let below = acc + n.tag;
        if n.key < lo {
            return self.scan(n.right, below, lo, hi, upper);
        }
        if n.key >= hi {
            return self.scan(n.left, below, lo, hi, n.key);
        }
        if let Some(t) = self.scan(n.left, below, lo, hi, n.key) {
            return Some(t);
        }
        if let Some(t) = self.step(n.key, n.val + acc) {
            return Some(t);
        }
        self.scan(n.right, below, lo, hi, upper)
    }

    /// Feeds every step of subtree `x`.
    fn scan_whole(&mut self, x: u32, acc: i64, upper: Time) -> Option<Time> {
        if x == NIL {
            return None;
        }
        let n = &self.tree.nodes[x as usize];
        let (max, min) = (n.max + acc, n.min + acc);
        if max <= self.limit {
            self.start_run(n.first_key);
            return None;
        }
        if min > self.limit {
            return self.step(n.first_key, min);
        }
        if upper - n.first_key <= self.duration {
            // The subtree covers [first key, upper), no longer than the job, so no run lying
            // between two of its steps above the limit can hold it: only the run before the
            // first such step (continuing the current one) and the one after the last
            // (starting the next) matter. Two descents instead of a visit to every gap.
            // Always found: the maximum is above the limit here.
            let first_busy = self.tree.first_key_above(x, acc, self.limit)?;
            if first_busy > n.first_key {
                self.start_run(n.first_key);
            }
            if let Some(t) = self.end_run(first_busy) {
                return Some(t);
            }
            // A last step above the limit ends the subtree busy; else the next run starts
            // after the last such step, found later if it matters.
            if n.last_val + acc <= self.limit {
                self.run = Run::After {
                    x,
                    acc,
                    from: 0,
                    lo: first_busy,
                };
            }
            return None;
        }
        // The deepest fences still above the limit (level 0 always is: max > limit here).
        let fence = level_within(max.saturating_sub(self.limit)).map(|k| n.fence(k));
        if let Some(f) = fence.filter(|f| f.gap < self.duration) {
            // Fences are above the limit, so every run lying between two of them is shorter
            // than the job: only the stretch before the first one (which may extend the
            // current run) and the one after the last (which may start the next) need
            // looking at. This is what keeps a wide or long job from visiting every short gap
            // of a densely packed plan.
            let first_key = n.first_key;
            if f.first - first_key < self.duration {
                // Too short to hold a run of its own, the stretch before the first fence can
                // only end the current run: one descent to its first step above the limit
                // instead of a scan, and only when the run is long enough by the fence.
                if self.may_last(f.first) {
                    if let Some(start) = self.resolve().filter(|&t| f.first - t >= self.duration) {
                        let busy = self.tree.first_key_above(x, acc, self.limit);
                        if busy.map_or(f.first, |b| b.min(f.first)) - start >= self.duration {
                            return Some(start);
                        }
                    }
                }
                self.run = Run::Busy;
            } else {
                if let Some(t) = self.scan(x, acc, first_key, f.first, upper) {
                    return Some(t);
                }
                if let Some(t) = self.step(f.first, max) {
                    return Some(t);
                }
            }
            // On the first fence: `run` is `Busy`.
            if f.after == NEVER {
                return None;
            }
            if upper - f.after < self.duration {
                // Likewise the stretch after the last fence can only start the next run: it
                // starts after the last step above the limit (if that is the subtree's last
                // step, the run starts in a later subtree), or at the stretch's start.
                self.run = if n.last_val + acc > self.limit {
                    Run::Busy
                } else {
                    Run::After {
                        x,
                        acc,
                        from: f.after,
                        lo: f.after,
                    }
                };
                return None;
            }
            return self.scan(x, acc, f.after, NEVER, upper);
        }
        let below = acc + n.tag;
        if let Some(t) = self.scan_whole(n.left, below, n.key) {
            return Some(t);
        }
        if let Some(t) = self.step(n.key, n.val + acc) {
            return Some(t);
        }
        self.scan_whole(n.right, below, upper)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_within_is_the_deepest_level_not_below() {
        let mut depths: Vec<i64> = (-3..20_000).collect();
        depths.extend([i64::MAX, i64::MAX / 3, 1 << 40]);
        for d in depths {
            let scanned = DEPTHS.iter().rposition(|&k| k <= d);
            assert_eq!(level_within(d), scanned, "depth {d}");
        }
    }

    #[test]
    fn from_sorted_builds_a_valid_treap() {
        let points = (0..1_000u64).map(|i| (i * 7, (i % 5) as i64 + 1 + (i % 2) as i64 * 10));
        let t = Treap::from_sorted(points.clone());
        assert_eq!(t.len(), 1_000);
        assert_eq!(t.check(), Ok(()));
        assert!(t.iter().eq(points));
    }
}
