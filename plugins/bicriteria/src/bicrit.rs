//! Dutot & Eyraud's bi-criteria algorithm (SPAA 2004, §3.2): batches of doubling length,
//! each filled by a knapsack on the weights, then compacted by a list algorithm in batch order,
//! with shuffles of the batch order.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::instance::Instance;
use crate::makespan::Makespan;
use crate::schedule::{list_to_schedule, Rigid, Schedule, Slot};

/// Parameters of the algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BiCritParams {
    /// Random orders of the batches tried after the batch order itself (§3.2, last paragraph:
    /// "the batch order is shuffled several times and the best resulting compact schedule is
    /// kept"); 0 keeps the batch order.
    pub shuffles: usize,
    /// Seed of the shuffles (ChaCha8).
    pub seed: u64,
    /// The dual-approximation makespan algorithm that gives C*max (§3.2, first line).
    pub makespan: Makespan,
}

impl Default for BiCritParams {
    fn default() -> Self {
        BiCritParams {
            shuffles: 10,
            seed: 1,
            makespan: Makespan::default(),
        }
    }
}

/// The batch boundaries of §3.2: t_j = C*max / 2^(K−j), j = 0..=K+1.
#[derive(Clone, Debug, PartialEq)]
pub struct Boundaries {
    /// C*max (λ* of the dual approximation).
    pub cstar: f64,
    /// K = ⌊log2(C*max / t_min)⌋.
    pub k: usize,
    /// t_0..=t_{K+1}.
    pub t: Vec<f64>,
}

/// K is capped so that a pathological t_min (say 1e-300 s) cannot ask for thousands of
/// batches; 2^60 between the shortest run time and C*max is beyond any real instance.
const MAX_K: usize = 60;

/// t_min, K and the t_j of §3.2 for a given C*max. C*max ≥ t_min always (λ* ≥ max_i p_i(m)
/// ≥ t_min), so K ≥ 0; t_0 = C*max/2^K lies in [t_min, 2·t_min): "the smallest useful batch
/// size (such that at least one task can be done)".
pub fn boundaries(cstar: f64, t_min: f64) -> Boundaries {
    let ratio = if t_min > 0.0 { cstar / t_min } else { 1.0 };
    let mut k = if ratio >= 1.0 {
        ratio.log2().floor() as usize
    } else {
        0
    };
    // log2 may round up at an exact power of two minus an ulp; t_0 must stay ≥ t_min.
    while k > 0 && cstar / 2f64.powi(k as i32) < t_min {
        k -= 1;
    }
    let k = k.min(MAX_K);
    let t = (0..=k + 1)
        .map(|j| cstar / 2f64.powi(k as i32 - j as i32))
        .collect();
    Boundaries { cstar, k, t }
}

/// A knapsack item of one batch: one task, or several small sequential tasks stacked on one
/// processor (§3.2, "merge the small sequential tasks").
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// The tasks; more than one only for a merged stack, which then runs them one after the
    /// other on one processor in this order.
    pub tasks: Vec<usize>,
    /// Processors: the smallest allotment that fits the batch (1 for a stack).
    pub allot: usize,
    /// Sum of the tasks' weights.
    pub weight: f64,
}

/// One batch: its interval [start, start + len) and the items the knapsack chose.
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    /// t_j.
    pub start: f64,
    /// Its length (t_{j+1} − t_j = t_j; C*max for the leftover batches).
    pub len: f64,
    /// The chosen items.
    pub items: Vec<Item>,
}

/// The knapsack items of a batch of length `len` built from the candidate tasks `cands`
/// (tasks not yet scheduled that can run in `len` on some allotment).
///
/// Merging (§3.2: "if there are several tasks that can be run in less than half the batch size
/// on one processor, we can merge some of these tasks by stacking them together ... by
/// decreasing weight order"): the tasks with p_i(1) ≤ len/2 are taken by decreasing weight and
/// stacked next-fit: a stack takes the next task while its total stays within `len`, otherwise a
/// new stack opens. Each closed stack is more than half full (its next task is ≤ len/2 and did
/// not fit), so stacking at least halves the processors the small tasks need. Ties of weight
/// keep the lower task index first, for determinism.
pub fn items_for_batch(inst: &Instance, cands: &[usize], len: f64) -> Vec<Item> {
    let mut items = Vec::new();
    let mut small = Vec::new();
    for &i in cands {
        if inst.p(i, 1) <= len / 2.0 {
            small.push(i);
        } else if let Some(k) = inst.min_allot(i, len) {
            items.push(Item {
                tasks: vec![i],
                allot: k,
                weight: inst.w(i),
            });
        }
    }
    small.sort_by(|&a, &b| inst.w(b).total_cmp(&inst.w(a)).then(a.cmp(&b)));
    let mut stack: Option<(Item, f64)> = None;
    for i in small {
        let p = inst.p(i, 1);
        match &mut stack {
            Some((item, used)) if *used + p <= len => {
                item.tasks.push(i);
                item.weight += inst.w(i);
                *used += p;
            }
            _ => {
                if let Some((item, _)) = stack.take() {
                    items.push(item);
                }
                stack = Some((
                    Item {
                        tasks: vec![i],
                        allot: 1,
                        weight: inst.w(i),
                    },
                    p,
                ));
            }
        }
    }
    if let Some((item, _)) = stack {
        items.push(item);
    }
    items
}

/// The 0/1 knapsack of §3.2: W(i, j) = max(W(i−1, j), W(i−1, j − allot_i) + w_i) over the
/// processors 0..=capacity, O(items · capacity). Returns the indices of the chosen items.
///
/// Between selections of equal weight the one with more tasks wins, so a batch never stays
/// empty because the weights left are 0 (the leftover batches rely on every batch taking at
/// least one item when any fits).
pub fn knapsack(items: &[Item], capacity: usize) -> Vec<usize> {
    // best[c] = (weight, tasks) of the best selection using at most c processors.
    let mut best = vec![(0.0f64, 0usize); capacity + 1];
    let mut take = vec![false; items.len() * (capacity + 1)];
    for (n, it) in items.iter().enumerate() {
        if it.allot > capacity {
            continue;
        }
        for c in (it.allot..=capacity).rev() {
            let (w0, t0) = best[c - it.allot];
            let cand = (w0 + it.weight, t0 + it.tasks.len());
            let cur = best[c];
            if cand.0 > cur.0 || (cand.0 == cur.0 && cand.1 > cur.1) {
                best[c] = cand;
                take[n * (capacity + 1) + c] = true;
            }
        }
    }
    let mut chosen = Vec::new();
    let mut c = capacity;
    for n in (0..items.len()).rev() {
        if take[n * (capacity + 1) + c] {
            chosen.push(n);
            c -= items[n].allot;
        }
    }
    chosen.reverse();
    chosen
}

/// The batches of §3.2's main loop for a given C*max.
///
/// Batch j (0..=K) runs in [t_j, t_{j+1}) and may take the remaining tasks that run within t_j
/// on some allotment. Tasks still left after batch K (the knapsack may leave some out of batch K
/// for lack of processors even though every task fits in length C*max ≥ max p_i(m)) go to
/// **leftover batches** of length C*max each, after t_{K+1}, filled the same way until no task
/// is left: doubling further would be useless, since every task already fits in C*max. Each of
/// them takes at least one task, so there are at most n.
pub fn build_batches(inst: &Instance, cstar: f64) -> (Boundaries, Vec<Batch>) {
    let b = boundaries(cstar, inst.t_min());
    let mut left: Vec<usize> = (0..inst.n()).collect();
    let mut is_placed = vec![false; inst.n()];
    let mut batches = Vec::new();
    let mut j = 0usize;
    while !left.is_empty() {
        let (start, len) = if j <= b.k {
            (b.t[j], b.t[j])
        } else {
            (b.t[b.k + 1] + (j - b.k - 1) as f64 * cstar, cstar)
        };
        // §3.2: S = {i ∈ T : ∃k, p_i(k) ≤ t_j}; monotony makes k = m the test.
        let cands: Vec<usize> = left
            .iter()
            .copied()
            .filter(|&i| inst.p(i, inst.m()) <= len)
            .collect();
        let items = items_for_batch(inst, &cands, len);
        let chosen = knapsack(&items, inst.m());
        let items: Vec<Item> = chosen.into_iter().map(|c| items[c].clone()).collect();
        for it in &items {
            for &i in &it.tasks {
                is_placed[i] = true;
            }
        }
        left.retain(|&i| !is_placed[i]);
        if j > b.k && items.is_empty() {
            // Cannot happen for a valid instance (some task always fits in C*max on m
            // processors); stop rather than loop if rounding ever says otherwise.
            break;
        }
        batches.push(Batch { start, len, items });
        j += 1;
    }
    (b, batches)
}

/// The "first schedule" of §3.2: every item of a batch starts at the batch's start, stacks run
/// their tasks one after the other on their processor. Valid by construction (a batch's items
/// use at most m processors and end within the batch); used by the tests as a check on the
/// batches.
pub fn batch_schedule(inst: &Instance, batches: &[Batch]) -> Schedule {
    let mut tasks = vec![
        Slot {
            start: f64::NAN,
            procs: 0
        };
        inst.n()
    ];
    for b in batches {
        for it in &b.items {
            let mut t = b.start;
            for &i in &it.tasks {
                tasks[i] = Slot {
                    start: t,
                    procs: it.allot,
                };
                t += inst.p(i, it.allot);
            }
        }
    }
    Schedule { tasks }
}

/// The compaction list of the batches taken in `batch_order`: "a list algorithm with the batch
/// ordering and a local ordering within the batches" (§3.2). The paper does not give the local
/// order; we use Smith's rule on areas — largest weight per unit of area (ω / (k·p)) first —
/// because ΣωC is the criterion the batches serve and it is the order that minimises ΣωC for
/// tasks sharing a batch on all processors. Stacked tasks become separate one-processor tasks.
pub fn compaction_list(inst: &Instance, batches: &[Batch], batch_order: &[usize]) -> Vec<Rigid> {
    let mut list = Vec::with_capacity(inst.n());
    for &bi in batch_order {
        let mut local: Vec<Rigid> = batches[bi]
            .items
            .iter()
            .flat_map(|it| {
                it.tasks.iter().map(move |&i| Rigid {
                    task: i,
                    procs: it.allot,
                    dur: inst.p(i, it.allot),
                })
            })
            .collect();
        local.sort_by(|a, b| {
            let ka = inst.w(a.task) / (a.procs as f64 * a.dur);
            let kb = inst.w(b.task) / (b.procs as f64 * b.dur);
            kb.total_cmp(&ka).then(a.task.cmp(&b.task))
        });
        list.extend(local);
    }
    list
}

/// Which of the two schedules of §3.2 the algorithm returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kept {
    /// The "first schedule": every batch's items start at the batch's start.
    Batch,
    /// A list compaction of the batches (§3.2: "a straightforward improvement").
    Compacted,
}

/// The result of the algorithm with what it was built from.
#[derive(Clone, Debug, PartialEq)]
pub struct BiCritRun {
    /// The batch boundaries.
    pub bounds: Boundaries,
    /// The batches in their own order.
    pub batches: Vec<Batch>,
    /// The schedule returned: [`BiCritRun::batch`] or a compaction, by the rule of [`bicrit`].
    pub schedule: Schedule,
    /// Which one [`BiCritRun::schedule`] is.
    pub kept: Kept,
    /// The batch schedule of §3.2 (every item at its batch's start).
    pub batch: Schedule,
    /// The compacted schedule with the smallest ΣωC over the batch orders tried (ties: the
    /// smaller Cmax, then the earlier tried), whether or not it was kept.
    pub compacted: Schedule,
    /// The batch order that gave [`BiCritRun::compacted`] (identity when no shuffle did
    /// better): the order the online policy compacts its batch in.
    pub batch_order: Vec<usize>,
}

/// Whether `a` is no worse than `b` on both criteria (`(ΣωC, Cmax)` keys), within rounding.
fn no_worse(a: (f64, f64), b: (f64, f64)) -> bool {
    let le = |x: f64, y: f64| x <= y + 1e-9 * y.abs().max(1.0);
    le(a.0, b.0) && le(a.1, b.1)
}

/// Runs the whole algorithm: C*max from the makespan algorithm of `params` (the dual
/// approximation), the batches, their batch schedule, then compactions in batch order and in
/// `params.shuffles` random batch orders.
///
/// **Which schedule is returned.** §3.2 calls the compaction "a straightforward improvement",
/// but a list compaction can end later than the batch schedule (a wide task of a later batch
/// that fitted at its batch's start may wait behind earlier tasks started sooner) and can even
/// raise ΣωC. The paper's guarantees are proved for the batch schedule, so the rule keeps
/// them: a compacted schedule is returned only when it is **no worse than the batch schedule
/// on both criteria** (ΣωC and Cmax); among those, the smallest ΣωC (then the smaller Cmax,
/// then the earliest tried). Otherwise the batch schedule is returned. The best compaction by
/// ΣωC alone is reported beside it ([`BiCritRun::compacted`]) so both can be compared.
pub fn bicrit(inst: &Instance, params: BiCritParams) -> BiCritRun {
    bicrit_with_cstar(inst, params.makespan.lambda_star(inst), params)
}

/// [`bicrit`] with a given C*max.
pub fn bicrit_with_cstar(inst: &Instance, cstar: f64, params: BiCritParams) -> BiCritRun {
    let (bounds, batches) = build_batches(inst, cstar);
    let batch = batch_schedule(inst, &batches);
    let batch_key = (batch.sum_wc(inst), batch.cmax(inst));
    let mut order: Vec<usize> = (0..batches.len()).collect();
    let compact = |order: &[usize]| {
        let s = list_to_schedule(inst, &compaction_list(inst, &batches, order));
        let key = (s.sum_wc(inst), s.cmax(inst));
        (s, key)
    };
    let better = |k: (f64, f64), best: (f64, f64)| k.0 < best.0 || (k.0 == best.0 && k.1 < best.1);
    let (first, first_key) = compact(&order);
    // The best compaction by ΣωC alone, and the best one that is no worse than the batch
    // schedule on both criteria.
    let mut best = (first.clone(), first_key, order.clone());
    let mut kept: Option<(Schedule, (f64, f64))> =
        no_worse(first_key, batch_key).then_some((first, first_key));
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    for _ in 0..params.shuffles {
        order.shuffle(&mut rng);
        let (s, key) = compact(&order);
        if no_worse(key, batch_key) && kept.as_ref().is_none_or(|(_, k)| better(key, *k)) {
            kept = Some((s.clone(), key));
        }
        if better(key, best.1) {
            best = (s, key, order.clone());
        }
    }
    let (schedule, kept) = match kept {
        Some((s, _)) => (s, Kept::Compacted),
        None => (batch.clone(), Kept::Batch),
    };
    BiCritRun {
        bounds,
        batches,
        schedule,
        kept,
        batch,
        compacted: best.0,
        batch_order: best.2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instance::testkit::weighted as inst;

    fn item(tasks: &[usize], allot: usize, weight: f64) -> Item {
        Item {
            tasks: tasks.to_vec(),
            allot,
            weight,
        }
    }

    #[test]
    fn knapsack_by_hand() {
        // Capacity 5: {a: 3 procs, w 4}, {b: 2, w 3}, {c: 4, w 6}, {d: 1, w 1}.
        // Best: a + b = 7 (c + d = 7 too, but has as many tasks: the first found, a + b, by the
        // tie rule "more tasks" — both have 2 — keeps the earlier); check weight and capacity.
        let items = [
            item(&[0], 3, 4.0),
            item(&[1], 2, 3.0),
            item(&[2], 4, 6.0),
            item(&[3], 1, 1.0),
        ];
        let ch = knapsack(&items, 5);
        let w: f64 = ch.iter().map(|&c| items[c].weight).sum();
        let used: usize = ch.iter().map(|&c| items[c].allot).sum();
        assert_eq!(w, 7.0);
        assert!(used <= 5);
        // Capacity 6: c + b = 9.
        assert_eq!(knapsack(&items, 6), vec![1, 2]);
        // Capacity 0 or an item wider than the machine: nothing.
        assert!(knapsack(&items, 0).is_empty());
        assert!(knapsack(&[item(&[0], 7, 9.0)], 6).is_empty());
        // Zero weights: the selection with more tasks wins.
        let z = [item(&[0], 1, 0.0), item(&[1], 1, 0.0)];
        assert_eq!(knapsack(&z, 2), vec![0, 1]);
    }

    #[test]
    fn boundaries_by_hand() {
        // C*max = 10, t_min = 1: K = ⌊log2 10⌋ = 3, t = 10/8, 10/4, 10/2, 10, 20.
        let b = boundaries(10.0, 1.0);
        assert_eq!(b.k, 3);
        assert_eq!(b.t, vec![1.25, 2.5, 5.0, 10.0, 20.0]);
        // A power of two: C*max = 8, t_min = 1: K = 3, t_0 = t_min.
        let b = boundaries(8.0, 1.0);
        assert_eq!(b.k, 3);
        assert_eq!(b.t[0], 1.0);
        // C*max = t_min: one batch.
        assert_eq!(boundaries(2.0, 2.0).t, vec![2.0, 4.0]);
    }

    #[test]
    fn merging_stacks_small_tasks_by_decreasing_weight_next_fit() {
        // Batch of length 4: small tasks (p(1) ≤ 2) of weights 1, 5, 3, 4 and times
        // 2, 1.5, 2, 1; a large task (p(1) = 3 > 2) stays alone on its smallest allotment.
        let i = inst(
            2,
            &[
                (1.0, &[2.0, 2.0]),
                (5.0, &[1.5, 1.5]),
                (3.0, &[2.0, 2.0]),
                (4.0, &[1.0, 1.0]),
                (2.0, &[3.0, 3.0]),
            ],
        );
        let items = items_for_batch(&i, &[0, 1, 2, 3, 4], 4.0);
        // Decreasing weight: 1 (1.5), 3 (1.0), 2 (2.0), 0 (2.0).
        // Stack 1: 1 + 3 = 2.5, + task 2 → 4.5 > 4: close. Stack 2: 2 + 0 = 4 ≤ 4.
        assert_eq!(
            items,
            vec![
                item(&[4], 1, 2.0),
                item(&[1, 3], 1, 9.0),
                item(&[2, 0], 1, 4.0)
            ]
        );
    }

    #[test]
    fn batches_by_hand() {
        // m = 2. t_min = 1 (task 0 on 2 procs). λ*: total sequential work 1+1+4+8 = 14 … see
        // the assertions: every task lands in the first batch whose length holds it.
        let i = inst(
            2,
            &[
                (1.0, &[2.0, 1.0]),
                (1.0, &[1.5, 1.5]),
                (1.0, &[4.0, 4.0]),
                (1.0, &[8.0, 8.0]),
            ],
        );
        let (b, batches) = build_batches(&i, 8.0);
        assert_eq!(b.k, 3);
        assert_eq!(b.t, vec![1.0, 2.0, 4.0, 8.0, 16.0]);
        // Batch 0 (len 1): task 0 on 2 procs. Batch 1 (len 2): task 1 (1.5, not ≤ 1 = len/2)
        // on 1 proc. Batch 2 (len 4): task 2. Batch 3 (len 8): task 3.
        let got: Vec<Vec<usize>> = batches
            .iter()
            .map(|b| b.items.iter().flat_map(|it| it.tasks.clone()).collect())
            .collect();
        assert_eq!(got, vec![vec![0], vec![1], vec![2], vec![3]]);
        assert_eq!(batches[0].items[0].allot, 2);
        batch_schedule(&i, &batches).validate(&i).unwrap();
    }

    #[test]
    fn leftover_batches_take_what_batch_k_could_not() {
        // m = 1, three tasks of 1 s: λ* = 3, t_min = 1, K = 1, t = 1.5, 3, 6. Batch 0 (len 1.5)
        // takes one task, batch 1 (len 3): the other two stacked (1 ≤ 1.5). Now with C*max
        // forced to 1 (K = 0, one batch of length 1): each leftover batch takes one task.
        let i = inst(1, &[(1.0, &[1.0]), (1.0, &[1.0]), (1.0, &[1.0])]);
        let (_, batches) = build_batches(&i, 1.0);
        assert_eq!(batches.len(), 3);
        assert_eq!(batches[1].start, 2.0);
        assert_eq!(batches[2].start, 3.0);
        batch_schedule(&i, &batches).validate(&i).unwrap();
        let run = bicrit_with_cstar(&i, 1.0, BiCritParams::default());
        run.schedule.validate(&i).unwrap();
        assert_eq!(run.schedule.cmax(&i), 3.0);
    }
}
