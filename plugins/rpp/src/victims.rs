//! GP's choice of pools and victims at a global job's deadline when idle nodes do not suffice.
//!
//! Ballier et al. §2.1 say only that "the scheduler can kill those local jobs if needed", and
//! §2.2 that under GP local jobs are killed when a global job "has reached its deadline": which
//! pools and which jobs is left open. [`fewest`] kills as few local jobs as the placement
//! allows, then loses the least work among those choices (the kill rate of §2.3 counts jobs,
//! so that is the metric to spare first). [`Rpp`](super::Rpp)'s `victims = youngest` keeps the
//! simpler rule: Worst Fit on idle plus killable nodes, youngest first in each chosen pool.

use sched_core::{JobId, Time};

/// A running local job that may be killed: (start, id, nodes it holds now).
pub(crate) type Victim = (Time, JobId, u32);

/// What a choice costs: (local jobs killed, work lost in node-milliseconds). Compared
/// lexicographically: fewer kills first, then less work lost.
type Cost = (u32, u128);

fn add(a: Cost, b: Cost) -> Cost {
    (a.0 + b.0, a.1 + b.1)
}

/// Combinations of (pool, components given to it) beyond which the exact search over pools
/// gives way to Worst Fit on idle plus killable nodes (victims are still the fewest in each
/// pool). The paper's jobs (at most 4 components of one size, 4 clusters) need a few dozen.
const MAX_COMBINATIONS: u64 = 2_000_000;

/// The cheapest victims of one pool for every shortfall: `cost[x]` frees at least `x` nodes
/// with the fewest kills, then the least work lost; `take` rebuilds the set.
struct PoolTable {
    jobs: Vec<Victim>,
    /// `cost[j][x]`: the best over the first `j` jobs (None: impossible).
    cost: Vec<Vec<Option<Cost>>>,
}

impl PoolTable {
    /// A 0/1 knapsack over the pool's killable jobs, "at least x nodes" (x capped at 0): exact,
    /// at most jobs × nodes steps, and built only at a deadline where idle nodes fall short.
    ///
    /// Shortfalls beyond `cap` (the most nodes the job could ask of the pool) are never asked
    /// for: the table stops there, so that a large pool of many jobs costs jobs × the job's
    /// size, not jobs × the pool's size.
    fn new(now: Time, mut jobs: Vec<Victim>, cap: usize) -> Self {
        // Youngest first, so that the rebuild (from the last job back, taking a job only when
        // it strictly helps) spares the oldest of equally cheap choices.
        jobs.sort_unstable_by_key(|j| std::cmp::Reverse(*j));
        let total: usize = jobs.iter().map(|j| j.2 as usize).sum::<usize>().min(cap);
        let mut cost = vec![vec![None; total + 1]];
        cost[0][0] = Some((0, 0));
        for (j, &(start, _, n)) in jobs.iter().enumerate() {
            let lost = u128::from(n) * u128::from(now.saturating_sub(start));
            let prev = &cost[j];
            let next: Vec<Option<Cost>> = (0..=total)
                .map(|x| {
                    let with = prev[x.saturating_sub(n as usize)].map(|c| add(c, (1, lost)));
                    match (prev[x], with) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    }
                })
                .collect();
            cost.push(next);
        }
        PoolTable { jobs, cost }
    }

    /// The cost of freeing at least `x` nodes, or `None` if all the pool's jobs are too few.
    fn cost(&self, x: usize) -> Option<Cost> {
        self.cost.last()?.get(x).copied().flatten()
    }

    /// The jobs to kill to free at least `x` nodes at [`Self::cost`]`(x)`.
    fn take(&self, mut x: usize) -> Vec<Victim> {
        let mut out = Vec::new();
        for j in (0..self.jobs.len()).rev() {
            if x == 0 {
                break;
            }
            if self.cost[j + 1][x] != self.cost[j][x] {
                out.push(self.jobs[j]);
                x = x.saturating_sub(self.jobs[j].2 as usize);
            }
        }
        out
    }
}

/// GP's final try at D with the fewest kills. `idle`: free nodes per pool; `killable`: the
/// running local jobs per pool; `comps`: the job's components as (nodes, fixed pool).
///
/// The rule: among all assignments of the components to pools (components bound to a pool
/// stay there) that can fit by killing local jobs, the one with the fewest kills, then the
/// least work lost (nodes × time run so far, summed over the victims); in each pool the victims
/// are the cheapest set that frees the shortfall by the same order. Remaining ties: more
/// components on lower-index pools, and the older of equally cheap victims survive. Returns the
/// pool of each component and the victims, or `None` when even killing every local job would
/// not do.
pub(crate) fn fewest(
    now: Time,
    idle: &[i64],
    killable: &[Vec<Victim>],
    comps: &[(u32, Option<usize>)],
) -> Option<(Vec<usize>, Vec<Victim>)> {
    let pools = idle.len();
    let need: usize = comps.iter().map(|c| c.0 as usize).sum();
    let tables: Vec<PoolTable> = killable
        .iter()
        .map(|k| PoolTable::new(now, k.clone(), need))
        .collect();
    // The cost of a pool hosting `d` nodes of the job.
    let host = |p: usize, d: u64| -> Option<Cost> {
        let free = idle[p].max(0) as u64;
        if d <= free {
            return Some((0, 0));
        }
        tables[p].cost((d - free) as usize)
    };
    let mut base = vec![0u64; pools];
    for &(n, fixed) in comps {
        if let Some(p) = fixed {
            base[p] += u64::from(n);
        }
    }
    // Free components by size: the paper's are all of one size, so the search is over how many
    // go to each pool.
    let mut sizes: Vec<(u32, usize)> = Vec::new();
    for &(n, fixed) in comps {
        if fixed.is_none() {
            match sizes.iter_mut().find(|s| s.0 == n) {
                Some(s) => s.1 += 1,
                None => sizes.push((n, 1)),
            }
        }
    }
    sizes.sort_unstable_by_key(|s| std::cmp::Reverse(s.0));
    // States: how many components of each size are still to place, in mixed radix.
    let radix: Vec<usize> = sizes.iter().map(|s| s.1 + 1).collect();
    // Products that overflow (tens of component sizes) are past any search's bound anyway.
    let states: Option<u64> = radix.iter().try_fold(1u64, |a, &r| a.checked_mul(r as u64));
    let pairs: Option<u64> = radix
        .iter()
        .try_fold(1u64, |a, &r| a.checked_mul((r as u64) * (r as u64 + 1) / 2))
        .and_then(|p| p.checked_mul(pools as u64));
    let counts: Vec<Vec<usize>> =
        if let (Some(states), Some(true)) = (states, pairs.map(|p| p <= MAX_COMBINATIONS)) {
            search(&sizes, &radix, states as usize, pools, &base, &host)?
        } else {
            worst_fit_counts(idle, &tables, &sizes, &base)?
        };
    // Components to pools: each free component to the lowest-index pool with room left for
    // its size in the chosen counts.
    let mut left = counts;
    let mut out = Vec::with_capacity(comps.len());
    for &(n, fixed) in comps {
        let p = match fixed {
            Some(p) => p,
            None => {
                let s = sizes.iter().position(|s| s.0 == n)?;
                let p = (0..pools).find(|&p| left[p][s] > 0)?;
                left[p][s] -= 1;
                p
            }
        };
        out.push(p);
    }
    let mut demand = base;
    for (&(n, fixed), &p) in comps.iter().zip(&out) {
        if fixed.is_none() {
            demand[p] += u64::from(n);
        }
    }
    let mut victims = Vec::new();
    for (p, &d) in demand.iter().enumerate() {
        let free = idle[p].max(0) as u64;
        if d > free {
            victims.extend(tables[p].take((d - free) as usize));
        }
    }
    Some((out, victims))
}

/// The exact search: pool by pool, every split of the components still to place; the cheapest
/// total by (kills, work). Returns per pool the count of each size.
fn search(
    sizes: &[(u32, usize)],
    radix: &[usize],
    states: usize,
    pools: usize,
    base: &[u64],
    host: &dyn Fn(usize, u64) -> Option<Cost>,
) -> Option<Vec<Vec<usize>>> {
    let decode = |mut s: usize| -> Vec<usize> {
        radix
            .iter()
            .map(|&r| {
                let d = s % r;
                s /= r;
                d
            })
            .collect()
    };
    let encode = |v: &[usize]| -> usize {
        v.iter()
            .zip(radix)
            .rev()
            .fold(0, |acc, (&d, &r)| acc * r + d)
    };
    let full = states - 1;
    // best[p][s]: the cheapest way for pools 0..p to leave `s` to place, and how.
    let mut best: Vec<Vec<Option<(Cost, usize)>>> = vec![vec![None; states]; pools + 1];
    best[0][full] = Some(((0, 0), full));
    for p in 0..pools {
        for s in (0..states).rev() {
            let Some((c, _)) = best[p][s] else {
                continue;
            };
            let rem = decode(s);
            // Every sub-vector `a` ≤ `rem`, the largest counts first (ties: more components on
            // this lower-index pool).
            let mut a = rem.clone();
            loop {
                let d: u64 = base[p]
                    + a.iter()
                        .zip(sizes)
                        .map(|(&k, &(n, _))| k as u64 * u64::from(n))
                        .sum::<u64>();
                if let Some(h) = host(p, d) {
                    let left: Vec<usize> = rem.iter().zip(&a).map(|(r, k)| r - k).collect();
                    let t = encode(&left);
                    let total = add(c, h);
                    if best[p + 1][t].is_none_or(|(b, _)| total < b) {
                        best[p + 1][t] = Some((total, s));
                    }
                }
                // Next sub-vector, counting down in mixed radix.
                let mut i = 0;
                while i < a.len() && a[i] == 0 {
                    a[i] = rem[i];
                    i += 1;
                }
                if i == a.len() {
                    break;
                }
                a[i] -= 1;
            }
        }
    }
    best[pools][0]?;
    let mut counts = vec![vec![0; sizes.len()]; pools];
    let mut s = 0;
    for p in (0..pools).rev() {
        let (_, from) = best[p + 1][s]?;
        let (before, after) = (decode(from), decode(s));
        counts[p] = before.iter().zip(&after).map(|(b, a)| b - a).collect();
        s = from;
    }
    Some(counts)
}

/// Beyond [`MAX_COMBINATIONS`]: each free component, largest first, on the pool with the most
/// idle plus killable nodes left (Worst Fit); per pool the count of each size.
fn worst_fit_counts(
    idle: &[i64],
    tables: &[PoolTable],
    sizes: &[(u32, usize)],
    base: &[u64],
) -> Option<Vec<Vec<usize>>> {
    let mut avail: Vec<i64> = idle
        .iter()
        .zip(tables)
        .zip(base)
        .map(|((&i, t), &b)| {
            let k: i64 = t.jobs.iter().map(|j| i64::from(j.2)).sum();
            i.max(0) + k - b as i64
        })
        .collect();
    if avail.iter().any(|&a| a < 0) {
        return None;
    }
    let mut counts = vec![vec![0; sizes.len()]; idle.len()];
    for (s, &(n, k)) in sizes.iter().enumerate() {
        for _ in 0..k {
            let (p, &f) = avail
                .iter()
                .enumerate()
                .max_by_key(|&(j, f)| (*f, std::cmp::Reverse(j)))?;
            if f < i64::from(n) {
                return None;
            }
            avail[p] -= i64::from(n);
            counts[p][s] += 1;
        }
    }
    Some(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(start: Time, id: u64, n: u32) -> Victim {
        (start, JobId(id), n)
    }

    #[test]
    fn one_large_victim_beats_several_small_ones_in_a_pool() {
        // Shortfall 4: the youngest-first rule kills the two 1-node jobs and then the 4-node
        // one; a single kill suffices.
        let t = PoolTable::new(100, vec![v(0, 1, 4), v(50, 2, 1), v(60, 3, 1)], usize::MAX);
        assert_eq!(t.cost(4), Some((1, 400)));
        assert_eq!(t.take(4), vec![v(0, 1, 4)]);
        // Shortfall 2: the 4-node job alone (one kill) beats the two 1-node jobs (two kills),
        // though it loses more work: kills are counted first.
        assert_eq!(t.cost(2), Some((1, 400)));
        // Shortfall 1: one kill either way, the least work is the 1-node job started at 60.
        assert_eq!(t.take(1), vec![v(60, 3, 1)]);
        assert_eq!(t.cost(7), None);
    }

    #[test]
    fn among_equally_few_kills_the_least_work_is_lost() {
        // Two 3-node jobs: the younger (started at 80) has run 20 ms, the older 100.
        let t = PoolTable::new(100, vec![v(0, 1, 3), v(80, 2, 3)], usize::MAX);
        assert_eq!(t.take(3), vec![v(80, 2, 3)]);
        assert_eq!(t.cost(3), Some((1, 60)));
        assert_eq!(t.cost(5), Some((2, 360)));
    }

    #[test]
    fn a_table_stops_at_the_largest_shortfall_the_job_can_ask() {
        let t = PoolTable::new(100, vec![v(0, 1, 4), v(50, 2, 1), v(60, 3, 1)], 2);
        assert_eq!(t.cost(2), Some((1, 400)));
        assert_eq!(t.cost(1), Some((1, 40)));
        // Past the cap nothing is asked, and nothing is answered.
        assert_eq!(t.cost(3), None);
    }

    #[test]
    fn many_component_sizes_fall_back_without_overflowing() {
        // 45 sizes: the search's state count (2^45 combinations of pools) is past its bound,
        // and the products computing it would overflow u64 beyond 40 sizes of three each.
        let comps: Vec<(u32, Option<usize>)> = (1..=45).map(|n| (n, None)).collect();
        let need: i64 = (1..=45).sum();
        let idle = [need, need];
        let placed = fewest(100, &idle, &[vec![], vec![]], &comps);
        let (pools, victims) = placed.expect("room without kills");
        assert_eq!(pools.len(), 45);
        assert!(victims.is_empty());
    }

    #[test]
    fn pools_are_chosen_for_the_fewest_kills() {
        // Pool 0: 2 idle and three 2-node jobs (8 idle plus killable); pool 1: 1 idle and one
        // 6-node job (7). A 7-node component: Worst Fit on idle plus killable picks pool 0 and
        // three kills; pool 1 needs one.
        let idle = [2, 1];
        let k = vec![
            vec![v(10, 1, 2), v(20, 2, 2), v(30, 3, 2)],
            vec![v(0, 4, 6)],
        ];
        let (pools, victims) = fewest(100, &idle, &k, &[(7, None)]).unwrap();
        assert_eq!(pools, vec![1]);
        assert_eq!(victims, vec![v(0, 4, 6)]);
        // Two components of 4: pool 0 kills one 2-node job for one (2 + 2), pool 1 kills its
        // 6-node job for the other; or both in pool 0 (8 nodes: three kills). Two kills it is,
        // the cheapest of pool 0's jobs (the youngest, started at 30).
        let (pools, victims) = fewest(100, &idle, &k, &[(4, None), (4, None)]).unwrap();
        assert_eq!(pools, vec![0, 1]);
        assert_eq!(victims.len(), 2);
        assert!(victims.contains(&v(30, 3, 2)) && victims.contains(&v(0, 4, 6)));
        // Too large even killing everything.
        assert_eq!(fewest(100, &idle, &k, &[(9, None)]), None);
    }

    #[test]
    fn fixed_components_stay_on_their_pool() {
        let idle = [0, 8];
        let k = vec![vec![v(0, 1, 4)], vec![]];
        let (pools, victims) = fewest(10, &idle, &k, &[(4, Some(0)), (4, None)]).unwrap();
        assert_eq!(pools, vec![0, 1]);
        assert_eq!(victims, vec![v(0, 1, 4)]);
    }
}
