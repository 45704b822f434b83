//! A moldable instance (Dutot & Eyraud §3.2, "Input"): `m` processors and `n` tasks, each with
//! a weight ω_i and its run time p_i(k) on every k = 1..m, all available at time 0.

use serde::{Deserialize, Serialize};

/// Relative slack of the monotony check: run times computed by other programs carry rounding
/// noise (a product of factors, a division), which must not make a monotonic task look otherwise.
pub const MONOTONY_TOLERANCE: f64 = 1e-9;

/// One moldable task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// Weight ω_i in the ΣωC criterion.
    pub w: f64,
    /// `p[k - 1]` is the run time on `k` processors, in seconds.
    pub p: Vec<f64>,
}

/// An instance whose tasks passed [`Instance::new`]'s checks.
#[derive(Clone, Debug, PartialEq)]
pub struct Instance {
    m: usize,
    tasks: Vec<Task>,
}

/// Why an instance is refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum InstanceError {
    /// No processor.
    #[error("m must be at least 1")]
    NoProcessor,
    /// A run-time vector of the wrong length.
    #[error("task {task}: {len} run times given, m = {m} needs one per processor count")]
    Length {
        /// Task index (0-based, input order).
        task: usize,
        /// Length given.
        len: usize,
        /// Processors.
        m: usize,
    },
    /// A run time that is not a positive finite number.
    #[error("task {task}: p({k}) = {value} is not a positive finite number of seconds")]
    BadTime {
        /// Task index.
        task: usize,
        /// Processor count.
        k: usize,
        /// The value.
        value: f64,
    },
    /// A weight that is not a finite number ≥ 0.
    #[error("task {task}: weight {value} is not a finite number >= 0")]
    BadWeight {
        /// Task index.
        task: usize,
        /// The value.
        value: f64,
    },
    /// Run time grows with the processor count.
    #[error("task {task} is not monotonic: p({k}) = {next} > p({prev_k}) = {prev} (run time must not grow with k)")]
    TimeGrows {
        /// Task index.
        task: usize,
        /// The smaller count.
        prev_k: usize,
        /// Its time.
        prev: f64,
        /// The larger count.
        k: usize,
        /// Its time.
        next: f64,
    },
    /// Work k·p(k) shrinks with the processor count (a super-linear speed-up).
    #[error("task {task} is not monotonic: work {k}*p({k}) = {next} < {prev_k}*p({prev_k}) = {prev} (work must not shrink with k)")]
    WorkShrinks {
        /// Task index.
        task: usize,
        /// The smaller count.
        prev_k: usize,
        /// Its work.
        prev: f64,
        /// The larger count.
        k: usize,
        /// Its work.
        next: f64,
    },
}

impl Instance {
    /// Checks and builds an instance. Tasks must be monotonic (§2.1 and §4.1: run time
    /// non-increasing, work non-decreasing in k), within [`MONOTONY_TOLERANCE`]; others are
    /// refused rather than repaired, because any repair (e.g. "use fewer processors when more
    /// would be slower") changes the instance another implementation is compared on.
    pub fn new(m: usize, tasks: Vec<Task>) -> Result<Self, InstanceError> {
        if m == 0 {
            return Err(InstanceError::NoProcessor);
        }
        for (i, t) in tasks.iter().enumerate() {
            if t.p.len() != m {
                return Err(InstanceError::Length {
                    task: i,
                    len: t.p.len(),
                    m,
                });
            }
            if !(t.w.is_finite() && t.w >= 0.0) {
                return Err(InstanceError::BadWeight {
                    task: i,
                    value: t.w,
                });
            }
            for (k0, &v) in t.p.iter().enumerate() {
                if !(v.is_finite() && v > 0.0) {
                    return Err(InstanceError::BadTime {
                        task: i,
                        k: k0 + 1,
                        value: v,
                    });
                }
            }
            for k in 2..=m {
                let (prev, next) = (t.p[k - 2], t.p[k - 1]);
                if next > prev * (1.0 + MONOTONY_TOLERANCE) {
                    return Err(InstanceError::TimeGrows {
                        task: i,
                        prev_k: k - 1,
                        prev,
                        k,
                        next,
                    });
                }
                let (wp, wn) = ((k - 1) as f64 * prev, k as f64 * next);
                if wn < wp * (1.0 - MONOTONY_TOLERANCE) {
                    return Err(InstanceError::WorkShrinks {
                        task: i,
                        prev_k: k - 1,
                        prev: wp,
                        k,
                        next: wn,
                    });
                }
            }
        }
        Ok(Instance { m, tasks })
    }

    /// An instance built by the online policy from jobs' offered configurations, unchecked:
    /// p(k) is +∞ below a job's smallest configuration and need not have monotonic work. The
    /// algorithms stay valid on it (they only ever pick counts with a finite time); λ* is then
    /// no longer a proven bound.
    pub(crate) fn from_configs(m: usize, tasks: Vec<Task>) -> Self {
        Instance { m, tasks }
    }

    /// Processors.
    pub fn m(&self) -> usize {
        self.m
    }

    /// Tasks, in input order.
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// Number of tasks.
    pub fn n(&self) -> usize {
        self.tasks.len()
    }

    /// Weight of task `i`.
    pub fn w(&self, i: usize) -> f64 {
        self.tasks[i].w
    }

    /// Run time of task `i` on `k` (1..=m) processors.
    pub fn p(&self, i: usize, k: usize) -> f64 {
        self.tasks[i].p[k - 1]
    }

    /// The smallest allotment of task `i` that runs in at most `t`, if any. Run times are
    /// non-increasing (up to the tolerance), so a binary search finds it; the answer is checked,
    /// so a task that is only almost monotonic never gets an allotment longer than `t`.
    pub fn min_allot(&self, i: usize, t: f64) -> Option<usize> {
        let p = &self.tasks[i].p;
        let k0 = p.partition_point(|&v| v > t);
        if k0 < p.len() && p[k0] <= t {
            Some(k0 + 1)
        } else {
            p.iter().position(|&v| v <= t).map(|k0| k0 + 1)
        }
    }

    /// t_min of §3.2: the shortest run time of any task on any processor count.
    pub fn t_min(&self) -> f64 {
        self.tasks
            .iter()
            .flat_map(|t| t.p.iter().copied())
            .fold(f64::INFINITY, f64::min)
    }
}

/// Instances built in one line for the unit tests of every module.
#[cfg(test)]
pub(crate) mod testkit {
    use super::{Instance, Task};

    /// `m` processors and tasks given as `(ω, [p(1), …])`.
    pub(crate) fn weighted(m: usize, tasks: &[(f64, &[f64])]) -> Instance {
        let tasks = tasks
            .iter()
            .map(|&(w, p)| Task { w, p: p.to_vec() })
            .collect();
        Instance::new(m, tasks).expect("a valid test instance")
    }

    /// `m` processors and tasks of weight 1 given as `[p(1), …]`.
    pub(crate) fn unit(m: usize, ps: &[&[f64]]) -> Instance {
        let tasks: Vec<(f64, &[f64])> = ps.iter().map(|&p| (1.0, p)).collect();
        weighted(m, &tasks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(w: f64, p: &[f64]) -> Task {
        Task { w, p: p.to_vec() }
    }

    #[test]
    fn refuses_time_growing_and_work_shrinking_tasks() {
        let e = Instance::new(2, vec![task(1.0, &[2.0, 3.0])]).unwrap_err();
        assert!(matches!(e, InstanceError::TimeGrows { k: 2, .. }), "{e}");
        let e = Instance::new(2, vec![task(1.0, &[2.0, 0.9])]).unwrap_err();
        assert!(matches!(e, InstanceError::WorkShrinks { k: 2, .. }), "{e}");
        assert!(Instance::new(2, vec![task(1.0, &[2.0, 1.0])]).is_ok());
        let e = Instance::new(2, vec![task(1.0, &[2.0])]).unwrap_err();
        assert!(e.to_string().contains("1 run times given"), "{e}");
        assert!(Instance::new(1, vec![task(f64::NAN, &[1.0])]).is_err());
        assert!(Instance::new(1, vec![task(1.0, &[0.0])]).is_err());
    }

    #[test]
    fn min_allot_is_the_smallest_count_that_fits() {
        let i = Instance::new(4, vec![task(1.0, &[8.0, 4.0, 4.0, 3.0])]).unwrap();
        assert_eq!(i.min_allot(0, 8.0), Some(1));
        assert_eq!(i.min_allot(0, 5.0), Some(2));
        assert_eq!(i.min_allot(0, 4.0), Some(2));
        assert_eq!(i.min_allot(0, 3.9), Some(4));
        assert_eq!(i.min_allot(0, 2.9), None);
        assert_eq!(i.t_min(), 3.0);
    }
}
