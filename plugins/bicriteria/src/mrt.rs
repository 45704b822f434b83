//! The 3/2 + ε two-shelf dual approximation of Mounié, Rapine & Trystram for monotonic moldable
//! tasks — the makespan algorithm Dutot & Eyraud name ("a dual approximation makespan
//! algorithm (defined in [7])", §3.2), as described by Dutot, Mounié & Trystram, *Scheduling
//! Parallel Tasks: Approximation Algorithms* (Handbook of Scheduling, ch. 26, the two-shelf
//! algorithm) and Mounié, Rapine & Trystram, SIAM J. Comput. 37(2), 2007.
//!
//! For a guess d (one dual step, [`two_shelves`]):
//!
//! 1. **Small tasks**: p_i(1) ≤ d/2. They run on one processor each and are set aside; their
//!    work is W_S = Σ p_i(1).
//! 2. **Knapsack for the large shelf.** Every other task goes either to shelf S1 (length d) on
//!    its canonical allotment γ_i(d) — the fewest processors with p_i(k) ≤ d — or to shelf S2
//!    (length d/2) on γ_i(d/2). In a schedule of length ≤ d, every task longer than d/2 spans
//!    the instant d/2, so those tasks use at most m processors together: S1 is chosen to
//!    **minimise the total work** Σ_{S1} γ_i(d)·p_i(γ_i(d)) + Σ_{S2} γ_i(d/2)·p_i(γ_i(d/2))
//!    **subject to Σ_{S1} γ_i(d) ≤ m** — a 0/1 knapsack whose items weigh γ_i(d) and whose
//!    profit is the work saved, γ_i(d/2)·p_i(γ_i(d/2)) − γ_i(d)·p_i(γ_i(d)) ≥ 0 (monotony).
//!    A task with no allotment within d/2 must be in S1. d is **rejected** when a task cannot
//!    run within d, when those forced tasks need more than m processors, or when the minimum
//!    work plus W_S exceeds m·d; each is a necessary condition for a schedule of length d, so
//!    the smallest accepted d, λ*, is a lower bound on the optimal makespan.
//! 3. **Transformations** (the Handbook's three rules) turn the two shelves into three that fit
//!    in 3d/2: S0 runs on its own processors over [0, 3d/2], S1 starts at 0, S2 ends at 3d/2;
//!    the layout is feasible when p0 + p1 ≤ m and p0 + p2 ≤ m. While S2 does not fit:
//!    - (a) a task of S2 that runs within 3d/2 on the q = m − p0 − p1 free processors of the
//!      first shelf takes γ(3d/2) ≤ q of them (into S1 when it then runs within d, else S0);
//!    - (b) else a task of S1 on k > 1 processors with p(k) ≤ 3d/4 goes to S0 on k − 1
//!      (monotony: p(k−1) ≤ k/(k−1)·p(k) ≤ 3d/2);
//!    - (c) else two one-processor tasks of S1 with p ≤ 3d/4 are stacked on one processor of S0.
//!
//!    None of the rules raises the work, and (b) and (c) each free one processor of the first
//!    shelf for (a).
//! 4. **Small tasks** go first-fit, longest first, into each processor's idle interval between
//!    its first-shelf task and its S2 task. A small task (≤ d/2) that fitted nowhere would mean
//!    every processor busy more than d, so a total work above m·d, which step 2 excluded.
//!
//! λ* is found by bisection and snapped exactly as in [`crate::makespan`]: the sets of step 2
//! only change where d or d/2 crosses a run time p_i(k), so between two such points the
//! smallest accepted d is max(b, W/m) with W the minimum work there.
//!
//! Should the rules ever leave S2 too wide (the paper proves they do not when step 2
//! accepts; rounding is the only way there), the allotment is list-scheduled in the shelf order
//! instead and [`ShelfSchedule::fallback`] says so.

use crate::instance::Instance;
use crate::schedule::{list_to_schedule, rigid_list, Schedule, Slot};

/// Relative tolerance of the comparisons with d, 3d/4, 3d/2 (the guesses are floats).
const TOL: f64 = 1e-9;

fn le(a: f64, b: f64) -> bool {
    a <= b * (1.0 + TOL)
}

/// The outcome of step 2 for an accepted guess.
#[derive(Clone, Debug, PartialEq)]
pub struct TwoShelves {
    /// The guess d.
    pub d: f64,
    /// Small tasks (p_i(1) ≤ d/2).
    pub small: Vec<usize>,
    /// Shelf S1: `(task, γ_i(d))`.
    pub s1: Vec<(usize, usize)>,
    /// Shelf S2: `(task, γ_i(d/2))`.
    pub s2: Vec<(usize, usize)>,
    /// The minimum total work, small tasks included.
    pub work: f64,
}

/// Step 2 for the guess `d`: `None` when d is rejected.
pub fn two_shelves(inst: &Instance, d: f64) -> Option<TwoShelves> {
    let m = inst.m();
    let mut small = Vec::new();
    let mut work = 0.0;
    // (task, γ(d), work at γ(d), γ(d/2) and its work).
    let mut forced = Vec::new();
    let mut free = Vec::new();
    for i in 0..inst.n() {
        if inst.p(i, 1) <= d / 2.0 {
            small.push(i);
            work += inst.p(i, 1);
            continue;
        }
        let k1 = inst.min_allot(i, d)?;
        let w1 = k1 as f64 * inst.p(i, k1);
        match inst.min_allot(i, d / 2.0) {
            None => forced.push((i, k1, w1)),
            Some(k2) => free.push((i, k1, w1, k2, k2 as f64 * inst.p(i, k2))),
        }
    }
    let used: usize = forced.iter().map(|f| f.1).sum();
    if used > m {
        return None;
    }
    let cap = m - used;
    // 0/1 knapsack: best[c] = the largest work saving within c processors.
    let mut best = vec![0.0f64; cap + 1];
    let mut take = vec![false; free.len() * (cap + 1)];
    for (n, &(_, k1, w1, _, w2)) in free.iter().enumerate() {
        if k1 > cap {
            continue;
        }
        let gain = w2 - w1;
        for c in (k1..=cap).rev() {
            let cand = best[c - k1] + gain;
            if cand > best[c] {
                best[c] = cand;
                take[n * (cap + 1) + c] = true;
            }
        }
    }
    let mut in_s1 = vec![false; free.len()];
    let mut c = cap;
    for n in (0..free.len()).rev() {
        if take[n * (cap + 1) + c] {
            in_s1[n] = true;
            c -= free[n].1;
        }
    }
    let mut s1: Vec<(usize, usize)> = forced.iter().map(|&(i, k, _)| (i, k)).collect();
    work += forced.iter().map(|f| f.2).sum::<f64>();
    let mut s2 = Vec::new();
    for (n, &(i, k1, w1, k2, w2)) in free.iter().enumerate() {
        if in_s1[n] {
            s1.push((i, k1));
            work += w1;
        } else {
            s2.push((i, k2));
            work += w2;
        }
    }
    s1.sort_unstable();
    (work <= m as f64 * d).then_some(TwoShelves {
        d,
        small,
        s1,
        s2,
        work,
    })
}

/// λ*: the smallest d step 2 accepts (0 for no task); a lower bound on the optimal makespan.
pub fn lambda_star(inst: &Instance) -> f64 {
    if inst.n() == 0 {
        return 0.0;
    }
    let m = inst.m() as f64;
    let lo0 = (0..inst.n())
        .map(|i| inst.p(i, inst.m()))
        .fold(0.0, f64::max);
    if two_shelves(inst, lo0).is_some() {
        return lo0;
    }
    // Accepted: at d ≥ 2·Σ p_i(m) every task runs within d/2 on m processors, and all of S2
    // has work ≤ Σ m·p_i(m) ≤ m·d/2. Widen should rounding say otherwise.
    let hi0: f64 = 2.0 * (0..inst.n()).map(|i| inst.p(i, inst.m())).sum::<f64>() * (1.0 + 1e-6);
    let hi = crate::makespan::smallest_accepted(lo0, hi0, |d| two_shelves(inst, d).is_some());
    // Snap: b = the largest p_i(k) or 2·p_i(k) not above hi; on [b, hi] the sets of step 2
    // (γ(d), γ(d/2), the small tasks) and so the minimum work W are those of hi.
    let Some(at_hi) = two_shelves(inst, hi) else {
        return hi;
    };
    let b = inst
        .tasks()
        .iter()
        .flat_map(|t| t.p.iter().flat_map(|&p| [p, 2.0 * p]))
        .filter(|&v| v.is_finite() && v <= hi)
        .fold(0.0, f64::max);
    let snapped = b.max(at_hi.work / m);
    if snapped <= hi && two_shelves(inst, snapped).is_some() {
        snapped
    } else {
        hi
    }
}

/// Where a task of the large shelves runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shelf {
    S0,
    S1,
    S2,
}

/// The schedule of steps 3–4 for an accepted guess.
#[derive(Clone, Debug, PartialEq)]
pub struct ShelfSchedule {
    /// Processors of each task.
    pub allot: Vec<usize>,
    /// The list order of List-MRT (Dutot & Eyraud §4.1: "the order of [7], listing first task
    /// of the large shelf then the tasks of small shelf then the small tasks"): S0 and S1,
    /// then S2, then the small tasks longest first.
    pub order: Vec<usize>,
    /// The three-shelf schedule (at most 3d/2 long), or the list fallback.
    pub schedule: Schedule,
    /// Whether the rules failed to fit S2 and the list fallback was used.
    pub fallback: bool,
}

/// Steps 3 and 4 on the shelves of an accepted guess.
pub fn shelf_schedule(inst: &Instance, ts: &TwoShelves) -> ShelfSchedule {
    let m = inst.m();
    let d = ts.d;
    let n = inst.n();
    let mut allot = vec![1usize; n];
    let mut shelf: Vec<Option<Shelf>> = vec![None; n];
    for &(i, k) in &ts.s1 {
        allot[i] = k;
        shelf[i] = Some(Shelf::S1);
    }
    for &(i, k) in &ts.s2 {
        allot[i] = k;
        shelf[i] = Some(Shelf::S2);
    }
    // Stacks of S0: pairs sharing one processor (rule c), first then second.
    let mut stacks: Vec<(usize, usize)> = Vec::new();
    let width = |sh: Shelf, shelf: &[Option<Shelf>], allot: &[usize]| -> usize {
        (0..n)
            .filter(|&i| shelf[i] == Some(sh))
            .map(|i| allot[i])
            .sum()
    };
    let mut fallback = false;
    loop {
        // A stacked pair is counted once (its two tasks share one processor).
        let p0 = width(Shelf::S0, &shelf, &allot) - stacks.len();
        let p1 = width(Shelf::S1, &shelf, &allot);
        let p2 = width(Shelf::S2, &shelf, &allot);
        if p0 + p2 <= m {
            break;
        }
        // (a) a task of S2 onto the free processors of the first shelf.
        let q = m.saturating_sub(p0 + p1);
        if q > 0 {
            let moved = (0..n)
                .filter(|&i| shelf[i] == Some(Shelf::S2))
                .find_map(|i| {
                    inst.min_allot(i, 1.5 * d * (1.0 + TOL))
                        .filter(|&k| k <= q)
                        .map(|k| (i, k))
                });
            if let Some((i, k)) = moved {
                allot[i] = k;
                // Exact comparison: an S1 task must end by d, where S2 begins.
                shelf[i] = Some(if inst.p(i, k) <= d {
                    Shelf::S1
                } else {
                    Shelf::S0
                });
                continue;
            }
        }
        // (b) a task of S1 on k > 1 processors with p(k) ≤ 3d/4 to S0 on k − 1.
        let shrink = (0..n).find(|&i| {
            shelf[i] == Some(Shelf::S1) && allot[i] > 1 && le(inst.p(i, allot[i]), 0.75 * d)
        });
        if let Some(i) = shrink {
            allot[i] -= 1;
            shelf[i] = Some(Shelf::S0);
            continue;
        }
        // (c) two one-processor tasks of S1 with p ≤ 3d/4 stacked in S0.
        let mut seq = (0..n).filter(|&i| {
            shelf[i] == Some(Shelf::S1) && allot[i] == 1 && le(inst.p(i, 1), 0.75 * d)
        });
        if let (Some(a), Some(b)) = (seq.next(), seq.next()) {
            shelf[a] = Some(Shelf::S0);
            shelf[b] = Some(Shelf::S0);
            stacks.push((a, b));
            continue;
        }
        fallback = true;
        break;
    }
    let mut small = ts.small.clone();
    small.sort_by(|&a, &b| inst.p(b, 1).total_cmp(&inst.p(a, 1)).then(a.cmp(&b)));
    let shelf = &shelf;
    let of = |sh: Shelf| (0..n).filter(move |&i| shelf[i] == Some(sh));
    let mut order: Vec<usize> = of(Shelf::S0)
        .chain(of(Shelf::S1))
        .chain(of(Shelf::S2))
        .collect();
    order.extend(&small);
    if fallback {
        let schedule = list_to_schedule(inst, &rigid_list(inst, &order, &allot));
        return ShelfSchedule {
            allot,
            order,
            schedule,
            fallback,
        };
    }
    let end = 1.5 * d;
    let mut slots = vec![
        Slot {
            start: 0.0,
            procs: 0
        };
        n
    ];
    // Per processor, its idle interval [free_from, free_to): S0 from the top, S1 and S2 from
    // processor 0 up (p0 + p1 ≤ m and p0 + p2 ≤ m keep them apart).
    let mut free_from = vec![0.0f64; m];
    let mut free_to = vec![end; m];
    let stacked: Vec<usize> = stacks.iter().flat_map(|&(a, b)| [a, b]).collect();
    let mut top = m;
    for i in of(Shelf::S0).filter(|i| !stacked.contains(i)) {
        let k = allot[i];
        top -= k;
        slots[i] = Slot {
            start: 0.0,
            procs: k,
        };
        for f in &mut free_from[top..top + k] {
            *f = inst.p(i, k);
        }
    }
    for &(a, b) in &stacks {
        top -= 1;
        slots[a] = Slot {
            start: 0.0,
            procs: 1,
        };
        slots[b] = Slot {
            start: inst.p(a, 1),
            procs: 1,
        };
        free_from[top] = inst.p(a, 1) + inst.p(b, 1);
    }
    let mut lo = 0;
    for i in of(Shelf::S1) {
        let k = allot[i];
        slots[i] = Slot {
            start: 0.0,
            procs: k,
        };
        for f in &mut free_from[lo..lo + k] {
            *f = inst.p(i, k);
        }
        lo += k;
    }
    let mut lo = 0;
    for i in of(Shelf::S2) {
        let k = allot[i];
        let t = inst.p(i, k);
        // t ≤ d/2, so end − t ≥ d, where S1 has ended; `max` keeps that true after rounding.
        let start = (end - t).max(d);
        slots[i] = Slot { start, procs: k };
        for f in &mut free_to[lo..lo + k] {
            *f = start;
        }
        lo += k;
    }
    for &i in &small {
        let p = inst.p(i, 1);
        let start = match (0..m).find(|&q| free_from[q] + p <= free_to[q]) {
            Some(q) => {
                let s = free_from[q];
                free_from[q] += p;
                s
            }
            // Only rounding can get here (step 4's argument): after everything on the
            // processor that frees first, past its S2 task.
            None => {
                let q = (0..m)
                    .min_by(|&a, &b| {
                        free_from[a]
                            .max(free_to[a])
                            .total_cmp(&free_from[b].max(free_to[b]))
                    })
                    .unwrap_or(0);
                let s = free_from[q].max(free_to[q]);
                free_from[q] = s + p;
                free_to[q] = f64::INFINITY;
                s
            }
        };
        slots[i] = Slot { start, procs: 1 };
    }
    ShelfSchedule {
        allot,
        order,
        schedule: Schedule { tasks: slots },
        fallback,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instance::testkit::unit as inst;
    use crate::makespan;

    #[test]
    fn knapsack_puts_one_task_in_the_short_shelf_by_hand() {
        // m = 2, three tasks p = (3, 2). Canonical test: for d ≥ 3 all run on one processor,
        // W = 9 ≤ 2d iff d ≥ 4.5, so λ* = 4.5. Two shelves at d in [4, 6): no task is small
        // (3 > d/2), γ(d) = 1 (work 3), γ(d/2) = 2 (work 4): the knapsack (capacity 2, items of
        // weight 1 saving 1 each) puts two tasks in S1 and one in S2, W = 3 + 3 + 4 = 10 ≤ 2d
        // iff d ≥ 5. So λ* = 5 — the optimum here (two tasks side by side, then the third on
        // both processors), where the canonical bound says 4.5.
        let t: &[f64] = &[3.0, 2.0];
        let i = inst(2, &[t, t, t]);
        assert_eq!(makespan::lambda_star(&i), 4.5);
        assert!(two_shelves(&i, 4.9).is_none());
        assert_eq!(lambda_star(&i), 5.0);
        let ts = two_shelves(&i, 5.0).unwrap();
        assert_eq!(ts.s1, vec![(0, 1), (1, 1)]);
        assert_eq!(ts.s2, vec![(2, 2)]);
        assert!(ts.small.is_empty());
        assert_eq!(ts.work, 10.0);
        // The shelves: S1 at 0, S2 ending at 3d/2 = 7.5.
        let s = shelf_schedule(&i, &ts);
        assert!(!s.fallback);
        s.schedule.validate(&i).unwrap();
        let starts: Vec<f64> = s.schedule.tasks.iter().map(|t| t.start).collect();
        assert_eq!(starts, vec![0.0, 0.0, 5.5]);
        assert_eq!(s.schedule.cmax(&i), 7.5);
        // List-MRT's order: the large shelf, then the small shelf.
        assert_eq!(s.order, vec![0, 1, 2]);
        assert_eq!(s.allot, vec![1, 1, 2]);
    }

    #[test]
    fn transformation_rules_fit_the_short_shelf_by_hand() {
        // m = 4, d = 4. Tasks 0–3: p = 2.1 on any count: not small (2.1 > 2), γ(4) = 1, no
        // allotment within 2, so forced into S1 (4 processors, capacity left 0). Tasks 4–6:
        // p = (2.2, 1.2, 1.2, 1.2): γ(4) = 1 but no capacity, so S2 on γ(2) = 2 each.
        // W = 4·2.1 + 3·2.4 = 15.6 ≤ 16: accepted; S2 needs 6 > 4 processors.
        // Rules: (c) stacks 0 and 1 on one S0 processor (p0 = 1, p1 = 2); (a) q = 1 free:
        // task 4 runs within 3d/2 on 1 → S1 (2.2 ≤ d); (c) stacks 2 and 3 (p0 = 2, p1 = 1);
        // (a) q = 1: task 5 → S1. Now p0 + p1 = 4 and p0 + p2 = 2 + 2 = 4: it fits.
        let q: &[f64] = &[2.1, 2.1, 2.1, 2.1];
        let r: &[f64] = &[2.2, 1.2, 1.2, 1.2];
        let i = inst(4, &[q, q, q, q, r, r, r]);
        let ts = two_shelves(&i, 4.0).unwrap();
        assert_eq!(ts.s1, vec![(0, 1), (1, 1), (2, 1), (3, 1)]);
        assert_eq!(ts.s2, vec![(4, 2), (5, 2), (6, 2)]);
        assert!((ts.work - 15.6).abs() < 1e-12);
        let s = shelf_schedule(&i, &ts);
        assert!(!s.fallback);
        s.schedule.validate(&i).unwrap();
        assert_eq!(s.allot, vec![1, 1, 1, 1, 1, 1, 2]);
        let starts: Vec<f64> = s.schedule.tasks.iter().map(|t| t.start).collect();
        assert_eq!(starts, vec![0.0, 2.1, 0.0, 2.1, 0.0, 0.0, 4.8]);
        assert_eq!(s.schedule.cmax(&i), 6.0);
        // λ*: on [2.4, 4.2) the sets are those of d = 4, so λ* = W/m = 3.9 (canonical: 3.75,
        // every task on one processor, W = 15).
        assert!((lambda_star(&i) - 3.9).abs() < 1e-12);
        assert!((makespan::lambda_star(&i) - 3.75).abs() < 1e-12);
    }

    #[test]
    fn small_tasks_fill_the_idle_processors() {
        // m = 2, d = 4: task 0 (p = 4, 4) is forced into S1 on 1 processor; tasks 1–3
        // (p(1) = 1 ≤ 2) are small, W = 4 + 3 = 7 ≤ 8. First fit, longest first (ties by
        // index), into the idle intervals up to 3d/2 = 6: processor 0 is idle over [4, 6), so
        // tasks 1 and 2 at 4 and 5; processor 1 takes task 3 at 0.
        let i = inst(2, &[&[4.0, 4.0], &[1.0, 1.0], &[1.0, 1.0], &[1.0, 1.0]]);
        let ts = two_shelves(&i, 4.0).unwrap();
        assert_eq!(ts.small, vec![1, 2, 3]);
        let s = shelf_schedule(&i, &ts);
        s.schedule.validate(&i).unwrap();
        let starts: Vec<f64> = s.schedule.tasks.iter().map(|t| t.start).collect();
        assert_eq!(starts, vec![0.0, 4.0, 5.0, 0.0]);
        assert_eq!(s.order, vec![0, 1, 2, 3]);
        // The work bound: one more such task would not be accepted at d = 4.
        let i = inst(
            2,
            &[
                &[4.0, 4.0],
                &[1.0, 1.0],
                &[1.0, 1.0],
                &[1.0, 1.0],
                &[1.5, 1.5],
            ],
        );
        assert!(two_shelves(&i, 4.0).is_none());
    }
}
