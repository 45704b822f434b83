//! Job arrays (sbatch's `--array`): which task indices, and how many tasks may run at once.
//!
//! `esubmit --array 0-15%4` sends one [`ArraySpec`]; batchd makes one job per index, each
//! carrying its [`ArrayTask`], all queued as ordinary pending jobs. The array's id is the first
//! task's job id (Slurm's `SLURM_ARRAY_JOB_ID`, `%A`); the tasks are shown as `ID_N`.

use serde::{Deserialize, Serialize};

/// The largest task index accepted, as Slurm's default `MaxArraySize` (1001) allows.
pub const MAX_ARRAY_INDEX: u64 = 1000;

/// Most tasks one array may have: Slurm's default `MaxArraySize`, 1001 (indices 0 to
/// [`MAX_ARRAY_INDEX`], each once).
pub const MAX_ARRAY_SIZE: usize = 1001;

/// An array as submitted: its task indices, ascending without repeats, and the throttle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArraySpec {
    /// The task indices.
    pub indices: Vec<u64>,
    /// At most this many tasks run at once (`%N`); `None`: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttle: Option<u32>,
}

/// One task of an array, as batchd stores it in the task's spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArrayTask {
    /// The array's id: its first task's job id.
    pub array_id: u64,
    /// This task's index.
    pub index: u64,
    /// The array's throttle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttle: Option<u32>,
    /// The array's task count, lowest and highest index, and step (the environment's
    /// `SLURM_ARRAY_TASK_COUNT`, `_MIN`, `_MAX`, `_STEP`; see [`ArraySpec::span`]). A count of
    /// 0: a task stored before they were kept (they are then not set).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub count: u64,
    /// Lowest index of the array.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min: u64,
    /// Highest index of the array.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max: u64,
    /// The array's step.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub step: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ArrayTask {
    /// The task's name in listings, `ARRAYID_INDEX`, as squeue shows it.
    pub fn label(&self) -> String {
        format!("{}_{}", self.array_id, self.index)
    }
}

impl ArraySpec {
    /// The task `index` of this array whose id is `array_id`, with the array's span.
    pub fn task(&self, array_id: u64, index: u64) -> ArrayTask {
        let (count, min, max, step) = self.span();
        ArrayTask {
            array_id,
            index,
            throttle: self.throttle,
            count,
            min,
            max,
            step,
        }
    }

    /// Task count, lowest and highest index, and step: the common difference of the indices
    /// when they are evenly spaced (`0-15:4` has 4), else 1, as for a single task. Meant for
    /// an array [`ArraySpec::check`] accepted (indices ascending); of any other, the step is 1.
    pub fn span(&self) -> (u64, u64, u64, u64) {
        let (min, max) = (
            self.indices.first().copied().unwrap_or(0),
            self.indices.last().copied().unwrap_or(0),
        );
        let gap = |w: &[u64]| w[1].checked_sub(w[0]).filter(|d| *d > 0);
        let mut gaps = self.indices.windows(2).map(gap);
        let step = match gaps.next() {
            Some(Some(d)) if gaps.all(|g| g == Some(d)) => d,
            _ => 1,
        };
        (self.indices.len() as u64, min, max, step)
    }

    /// What a submission's array must be: at least one index, at most [`MAX_ARRAY_SIZE`],
    /// ascending without repeats (what [`ArraySpec::parse`] gives), none above
    /// [`MAX_ARRAY_INDEX`], and a positive throttle if any. The error is the reason, one line.
    pub fn check(&self) -> Result<(), String> {
        let n = self.indices.len();
        if n == 0 {
            return Err("an array needs at least one index".into());
        }
        if n > MAX_ARRAY_SIZE {
            return Err(format!(
                "an array of {n} tasks; at most {MAX_ARRAY_SIZE} are accepted (Slurm's MaxArraySize)"
            ));
        }
        if let Some(w) = self.indices.windows(2).find(|w| w[1] <= w[0]) {
            return Err(format!(
                "indices must ascend without repeats ({} after {})",
                w[1], w[0]
            ));
        }
        if let Some(i) = self.indices.last().filter(|i| **i > MAX_ARRAY_INDEX) {
            return Err(format!(
                "index {i} is above {MAX_ARRAY_INDEX}; indices run from 0 to {MAX_ARRAY_INDEX}"
            ));
        }
        if self.throttle == Some(0) {
            return Err("the throttle must be positive".into());
        }
        Ok(())
    }

    /// Parses sbatch's `--array` value: `0-15`, `1,3,5`, `0-15:4` (a step), any comma-joined
    /// mix, and an optional `%N` throttle at the end (`0-15%4`). Indices run from 0 to
    /// [`MAX_ARRAY_INDEX`]; the error is the reason, one line.
    pub fn parse(s: &str) -> Result<ArraySpec, String> {
        let (list, throttle) = match s.split_once('%') {
            Some((l, t)) => {
                let t: u32 = t
                    .parse()
                    .ok()
                    .filter(|t| *t > 0)
                    .ok_or_else(|| format!("throttle '%{t}' is not a positive number"))?;
                (l, Some(t))
            }
            None => (s, None),
        };
        let num = |p: &str| -> Result<u64, String> {
            p.parse::<u64>()
                .ok()
                .filter(|n| *n <= MAX_ARRAY_INDEX)
                .ok_or_else(|| format!("'{p}' is not an index from 0 to {MAX_ARRAY_INDEX}"))
        };
        let mut indices = Vec::new();
        for item in list.split(',') {
            let (range, step) = match item.split_once(':') {
                Some((r, st)) => {
                    let st: u64 = st
                        .parse()
                        .ok()
                        .filter(|s| *s > 0)
                        .ok_or_else(|| format!("step ':{st}' is not a positive number"))?;
                    (r, st)
                }
                None => (item, 1),
            };
            let (lo, hi) = match range.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None if step == 1 => (num(range)?, num(range)?),
                None => return Err(format!("a step needs a range, not '{item}'")),
            };
            if lo > hi {
                return Err(format!("range '{range}' runs backwards"));
            }
            indices.extend((lo..=hi).step_by(step as usize));
        }
        indices.sort_unstable();
        indices.dedup();
        Ok(ArraySpec { indices, throttle })
    }
}

/// A job id as users write it for an array: `ID` (a job, or every task of the array `ID`) or
/// `ID_N` (one task).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct JobRef {
    /// The job id, or the array id with `task`.
    pub id: u64,
    /// The task index of `ID_N`.
    pub task: Option<u64>,
}

impl JobRef {
    /// Parses `ID` or `ID_N`.
    pub fn parse(s: &str) -> Option<JobRef> {
        let (id, task) = match s.split_once('_') {
            Some((a, t)) => (a, Some(t.parse::<u64>().ok()?)),
            None => (s, None),
        };
        let id = id.parse::<u64>().ok().filter(|n| *n > 0)?;
        Some(JobRef { id, task })
    }

    /// Whether the job `job_id` (with its array task, if any) is the one meant.
    pub fn matches(&self, job_id: u64, task: Option<&ArrayTask>) -> bool {
        match (self.task, task) {
            (None, None) => self.id == job_id,
            (None, Some(t)) => self.id == job_id || self.id == t.array_id,
            (Some(i), Some(t)) => self.id == t.array_id && i == t.index,
            (Some(_), None) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sbatch_forms() {
        let p = |s: &str| ArraySpec::parse(s).unwrap();
        assert_eq!(p("0-3").indices, [0, 1, 2, 3]);
        assert_eq!(p("0-15%4").throttle, Some(4));
        assert_eq!(p("1,3,5-6").indices, [1, 3, 5, 6]);
        assert_eq!(p("0-15:4").indices, [0, 4, 8, 12]);
        assert_eq!(p("7,2,2").indices, [2, 7]);
        assert_eq!(p("0-15:4").span(), (4, 0, 12, 4));
        assert_eq!(p("3,5,7").span(), (3, 3, 7, 2));
        assert_eq!(p("1,2,5").span(), (3, 1, 5, 1));
        assert_eq!(p("9").span(), (1, 9, 9, 1));
        let t = p("2-8:3%2").task(40, 5);
        assert_eq!(
            (t.count, t.min, t.max, t.step, t.throttle),
            (3, 2, 8, 3, Some(2))
        );
        for bad in [
            "", "a", "3-1", "0-1%0", "0-1%x", "0:2", "0-4:0", "0-1001", "-1",
        ] {
            assert!(ArraySpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn job_refs() {
        let t = ArraySpec::parse("0-3").unwrap().task(10, 3);
        let r = |s: &str| JobRef::parse(s).unwrap();
        assert!(r("10").matches(12, Some(&t)) && r("12").matches(12, Some(&t)));
        assert!(r("10_3").matches(12, Some(&t)) && !r("10_4").matches(12, Some(&t)));
        assert!(r("12").matches(12, None) && !r("12_0").matches(12, None));
        assert!(JobRef::parse("0").is_none() && JobRef::parse("1_x").is_none());
        assert_eq!(t.label(), "10_3");
    }

    #[test]
    fn forged_arrays_are_refused() {
        let a = |indices: Vec<u64>| ArraySpec {
            indices,
            throttle: None,
        };
        assert!(a(vec![5, 3]).check().unwrap_err().contains("ascend"));
        assert!(a(vec![3, 3]).check().unwrap_err().contains("repeats"));
        assert!(a(vec![]).check().is_err());
        assert!(a(vec![0, 1001]).check().unwrap_err().contains("1000"));
        assert!(a(vec![7; 100_000])
            .check()
            .unwrap_err()
            .contains("MaxArraySize"));
        a((0..=MAX_ARRAY_INDEX).collect()).check().unwrap();
        // Unsorted indices never make a wrapped step, whoever built them.
        assert_eq!(a(vec![5, 3]).span(), (2, 5, 3, 1));
        assert_eq!(a(vec![3, 3, 3]).span(), (3, 3, 3, 1));
    }

    proptest! {
        /// Whatever a client sends, an accepted array has ascending unique indices within
        /// bounds, and its step divides every gap without wrapping.
        #[test]
        fn accepted_arrays_are_sorted_unique_and_span_without_wrapping(
            indices in proptest::collection::vec(0u64..1100, 0..40),
            throttle in proptest::option::of(0u32..4),
        ) {
            let a = ArraySpec { indices, throttle };
            if a.check().is_ok() {
                prop_assert!(a.indices.windows(2).all(|w| w[0] < w[1]));
                prop_assert!(a.indices.len() <= MAX_ARRAY_SIZE);
                prop_assert!(a.indices.iter().all(|i| *i <= MAX_ARRAY_INDEX));
                let (count, min, max, step) = a.span();
                prop_assert_eq!(count as usize, a.indices.len());
                prop_assert!(min <= max && (1..=MAX_ARRAY_INDEX.max(1)).contains(&step));
                prop_assert!(a.indices.iter().all(|i| (i - min) % step == 0 || step == 1));
            }
            let (_, _, _, step) = a.span();
            prop_assert!((1..=1100).contains(&step));
        }

        #[test]
        fn parsed_arrays_pass_the_check(lo in 0u64..=1000, len in 0u64..50, step in 1u64..7) {
            let hi = (lo + len).min(MAX_ARRAY_INDEX);
            let a = ArraySpec::parse(&format!("{lo}-{hi}:{step}%3")).unwrap();
            prop_assert!(a.check().is_ok());
        }

        #[test]
        fn indices_ascend_within_bounds(lo in 0u64..=1000, len in 0u64..50, step in 1u64..7) {
            let hi = (lo + len).min(MAX_ARRAY_INDEX);
            let a = ArraySpec::parse(&format!("{lo}-{hi}:{step}")).unwrap();
            prop_assert!(a.indices.windows(2).all(|w| w[0] < w[1]));
            prop_assert_eq!(a.indices.first().copied(), Some(lo));
            prop_assert!(a.indices.iter().all(|i| *i <= hi));
            prop_assert_eq!(a.indices.len() as u64, (hi - lo) / step + 1);
        }
    }
}
