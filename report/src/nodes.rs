//! Node interval sets and the placement of a schedule onto numbered nodes.
//!
//! A simulated pool counts its nodes; a picture or a Batsim jobs CSV wants to know which
//! ones. [`place`] gives each job the lowest-numbered nodes free over its run (first fit in
//! start order), which any schedule that never over-commits its pool admits.

use std::fmt;
use std::ops::Range;

/// A set of node indices as sorted, disjoint, non-adjacent half-open ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IntervalSet(Vec<Range<u32>>);

impl IntervalSet {
    /// The set of `ranges` (any order, overlapping or adjacent ones merged; empty ones dropped).
    pub fn new(mut ranges: Vec<Range<u32>>) -> Self {
        ranges.retain(|r| r.start < r.end);
        ranges.sort_by_key(|r| r.start);
        let mut out: Vec<Range<u32>> = Vec::with_capacity(ranges.len());
        for r in ranges {
            match out.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => out.push(r),
            }
        }
        IntervalSet(out)
    }

    /// The ranges, sorted.
    pub fn ranges(&self) -> &[Range<u32>] {
        &self.0
    }

    /// How many nodes.
    pub fn len(&self) -> u32 {
        self.0.iter().map(|r| r.end - r.start).sum()
    }

    /// Whether it holds no node.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<Range<u32>> for IntervalSet {
    fn from(r: Range<u32>) -> Self {
        IntervalSet::new(vec![r])
    }
}

/// Batsim's and evalys' form (procset's): closed ranges `a-b` and single nodes, separated by
/// spaces, e.g. `0-3 7`.
impl fmt::Display for IntervalSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, r) in self.0.iter().enumerate() {
            if k > 0 {
                f.write_str(" ")?;
            }
            if r.end - r.start == 1 {
                write!(f, "{}", r.start)?;
            } else {
                write!(f, "{}-{}", r.start, r.end - 1)?;
            }
        }
        Ok(())
    }
}

/// A job's run for [`place`]: when, and on how many nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// Start.
    pub start: u64,
    /// End (exclusive: a job starting at another's end may take its nodes).
    pub end: u64,
    /// Nodes held over the whole run.
    pub nodes: u32,
}

/// A schedule that holds more nodes than the pool has at some instant.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("job #{job} needs {needs} node(s) at {at}, only {free} of {total} are free")]
pub struct Overcommit {
    /// Index of the job in the input.
    pub job: usize,
    /// When.
    pub at: u64,
    /// Nodes it needs.
    pub needs: u32,
    /// Nodes free then.
    pub free: u32,
    /// The pool's size.
    pub total: u32,
}

/// The nodes of each job of `spans` on a pool of `total` nodes: at each start, the
/// lowest-numbered free nodes, the ends of that instant released first. Fails only when the
/// schedule over-commits the pool.
pub fn place(spans: &[Span], total: u32) -> Result<Vec<IntervalSet>, Overcommit> {
    let jobs: Vec<(Span, Option<IntervalSet>)> = spans.iter().map(|s| (*s, None)).collect();
    place_around(&jobs, total)
}

/// As [`place`], but the jobs given their nodes (`Some`) keep them (e.g. running jobs whose
/// nodes are known), and the others are placed around them. A fixed job's nodes that are not
/// free (a record that disagrees with the others) are kept for it all the same.
pub fn place_around(
    jobs: &[(Span, Option<IntervalSet>)],
    total: u32,
) -> Result<Vec<IntervalSet>, Overcommit> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    // At one instant, fixed jobs first: they take their own nodes before others choose.
    order.sort_by_key(|&k| (jobs[k].0.start, jobs[k].1.is_none(), k));
    let mut ending: std::collections::BinaryHeap<std::cmp::Reverse<(u64, usize)>> =
        Default::default();
    // Free nodes as a sorted list of disjoint ranges.
    let mut free: Vec<Range<u32>> = std::iter::once(0..total)
        .filter(|r| !r.is_empty())
        .collect();
    let mut out = vec![IntervalSet::default(); jobs.len()];
    for k in order {
        let (s, fixed) = (&jobs[k].0, &jobs[k].1);
        while let Some(&std::cmp::Reverse((end, j))) = ending.peek() {
            if end > s.start {
                break;
            }
            ending.pop();
            let mut all = std::mem::take(&mut free);
            all.extend(out[j].ranges().iter().cloned());
            free = IntervalSet::new(all).0;
        }
        let taken = match fixed {
            Some(set) => {
                free = subtract(&free, set);
                set.clone()
            }
            None => {
                let available: u32 = free.iter().map(|r| r.end - r.start).sum();
                if available < s.nodes {
                    return Err(Overcommit {
                        job: k,
                        at: s.start,
                        needs: s.nodes,
                        free: available,
                        total,
                    });
                }
                let mut want = s.nodes;
                let mut taken = Vec::new();
                while want > 0 {
                    let first = &mut free[0];
                    let n = want.min(first.end - first.start);
                    taken.push(first.start..first.start + n);
                    first.start += n;
                    want -= n;
                    if first.start == first.end {
                        free.remove(0);
                    }
                }
                IntervalSet::new(taken)
            }
        };
        if !taken.is_empty() {
            ending.push(std::cmp::Reverse((s.end, k)));
        }
        out[k] = taken;
    }
    Ok(out)
}

/// `free` without the nodes of `set`.
fn subtract(free: &[Range<u32>], set: &IntervalSet) -> Vec<Range<u32>> {
    let mut out = Vec::new();
    for r in free {
        let mut start = r.start;
        for t in set.ranges() {
            if t.end <= start || t.start >= r.end {
                continue;
            }
            if t.start > start {
                out.push(start..t.start);
            }
            start = start.max(t.end);
        }
        if start < r.end {
            out.push(start..r.end);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start: u64, end: u64, nodes: u32) -> Span {
        Span { start, end, nodes }
    }

    #[test]
    fn sets_print_as_batsim_writes_them() {
        let s = IntervalSet::new(vec![7..8, 0..2, 2..4, 9..9]);
        assert_eq!(s.to_string(), "0-3 7");
        assert_eq!(s.len(), 5);
        assert!(IntervalSet::default().is_empty());
    }

    #[test]
    fn placement_reuses_the_nodes_of_jobs_ending_at_a_start() {
        let got = place(
            &[
                span(0, 10, 3),
                span(0, 5, 1),
                span(5, 8, 1),
                span(10, 12, 4),
            ],
            4,
        )
        .unwrap();
        let s: Vec<String> = got.iter().map(|s| s.to_string()).collect();
        assert_eq!(s, ["0-2", "3", "3", "0-3"]);
    }

    #[test]
    fn placement_fills_holes_and_never_overlaps() {
        // Node 1 frees up first, then 3: the 2-node job takes both, as two ranges.
        let got = place(
            &[
                span(0, 4, 1),
                span(0, 2, 1),
                span(0, 9, 1),
                span(0, 3, 1),
                span(3, 6, 2),
            ],
            4,
        )
        .unwrap();
        assert_eq!(got[4].to_string(), "1 3");
    }

    #[test]
    fn fixed_jobs_keep_their_nodes_and_others_go_around_them() {
        let got = place_around(
            &[
                (span(0, 10, 2), Some(IntervalSet::new(vec![1..2, 3..4]))),
                (span(2, 4, 2), None),
                (span(10, 11, 4), None),
            ],
            4,
        )
        .unwrap();
        assert_eq!(got[1].to_string(), "0 2");
        assert_eq!(got[2].to_string(), "0-3");
    }

    #[test]
    fn an_overcommitted_schedule_is_refused() {
        let err = place(&[span(0, 10, 3), span(5, 6, 2)], 4).unwrap_err();
        assert_eq!(err.job, 1);
        assert_eq!(err.free, 1);
    }
}
