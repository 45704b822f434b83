//! Schedules of an [`Instance`], their two criteria, the validator every schedule passes before
//! it is written, and Graham's list scheduling of rigid allotments (the "list algorithm" of
//! Dutot & Eyraud §3.2 and §4.1).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use crate::instance::Instance;

/// Where one task runs: from `start` on `procs` processors, for p(procs).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Slot {
    /// Start time, seconds.
    pub start: f64,
    /// Processor count, 1..=m.
    pub procs: usize,
}

/// One slot per task, in the instance's task order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    /// The slots, `tasks[i]` for task `i`.
    pub tasks: Vec<Slot>,
}

/// Why a schedule is not a schedule of its instance.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum InvalidSchedule {
    /// Not one slot per task.
    #[error("{got} tasks scheduled, the instance has {want}")]
    Count {
        /// Slots.
        got: usize,
        /// Tasks.
        want: usize,
    },
    /// A processor count outside 1..=m.
    #[error("task {task} on {procs} processors (must be 1..={m})")]
    Procs {
        /// Task.
        task: usize,
        /// Its count.
        procs: usize,
        /// Processors.
        m: usize,
    },
    /// A start that is negative or not a number.
    #[error("task {task} starts at {start}")]
    Start {
        /// Task.
        task: usize,
        /// Its start.
        start: f64,
    },
    /// More than m processors busy.
    #[error("{busy} processors busy at t = {time} (m = {m})")]
    Overload {
        /// When.
        time: f64,
        /// How many.
        busy: usize,
        /// Processors.
        m: usize,
    },
}

impl Schedule {
    /// Completion time of task `i`: start + p(procs).
    pub fn end(&self, inst: &Instance, i: usize) -> f64 {
        let s = self.tasks[i];
        s.start + inst.p(i, s.procs)
    }

    /// The makespan Cmax.
    pub fn cmax(&self, inst: &Instance) -> f64 {
        (0..self.tasks.len())
            .map(|i| self.end(inst, i))
            .fold(0.0, f64::max)
    }

    /// The weighted sum of completion times ΣωC.
    pub fn sum_wc(&self, inst: &Instance) -> f64 {
        (0..self.tasks.len())
            .map(|i| inst.w(i) * self.end(inst, i))
            .sum()
    }

    /// Checks that this is a schedule of `inst`: each task once, on 1..=m processors, for
    /// exactly p(procs) (the end is always computed from the slot, so it cannot disagree), never
    /// more than m processors busy; a task that ends at t frees its processors for one that
    /// starts at t. Processors are identical and a task needs no particular ones, so a schedule
    /// whose load never exceeds m can always be given processor numbers (interval colouring).
    pub fn validate(&self, inst: &Instance) -> Result<(), InvalidSchedule> {
        let m = inst.m();
        if self.tasks.len() != inst.n() {
            return Err(InvalidSchedule::Count {
                got: self.tasks.len(),
                want: inst.n(),
            });
        }
        // (time, +procs at a start / -procs at an end); ends sort before starts at one instant.
        let mut events: Vec<(f64, i64)> = Vec::with_capacity(2 * inst.n());
        for (i, s) in self.tasks.iter().enumerate() {
            if s.procs == 0 || s.procs > m {
                return Err(InvalidSchedule::Procs {
                    task: i,
                    procs: s.procs,
                    m,
                });
            }
            if !(s.start.is_finite() && s.start >= 0.0) {
                return Err(InvalidSchedule::Start {
                    task: i,
                    start: s.start,
                });
            }
            events.push((s.start, s.procs as i64));
            events.push((self.end(inst, i), -(s.procs as i64)));
        }
        events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut busy: i64 = 0;
        for (t, d) in events {
            busy += d;
            if busy > m as i64 {
                return Err(InvalidSchedule::Overload {
                    time: t,
                    busy: busy as usize,
                    m,
                });
            }
        }
        Ok(())
    }
}

/// A task to list-schedule as a rigid job: `procs` processors for `dur` seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rigid {
    /// Task index.
    pub task: usize,
    /// Processors.
    pub procs: usize,
    /// Duration.
    pub dur: f64,
}

/// An end time in a min-heap.
#[derive(Clone, Copy, Debug, PartialEq)]
struct End(f64, usize);
impl Eq for End {}
impl PartialOrd for End {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for End {
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.total_cmp(&self.0)
    }
}

/// Graham's list scheduling of rigid tasks (Garey & Graham 1975, the paper's [11]): all tasks
/// are available at 0; whenever processors free up, the list is scanned in order and every task
/// that fits on the free processors starts (a later task may pass an earlier one that does not
/// fit — that is what makes it a list algorithm rather than FCFS). Returns each task's start,
/// indexed like `list`. Every `procs` must be in 1..=m.
pub fn list_schedule(m: usize, list: &[Rigid]) -> Vec<f64> {
    list_schedule_from(m, &[], list)
}

/// [`list_schedule`] on a machine where `(end, procs)` are already busy from 0 until `end`
/// (the online policy's running jobs).
pub fn list_schedule_from(m: usize, busy: &[(f64, usize)], list: &[Rigid]) -> Vec<f64> {
    let mut start = vec![f64::NAN; list.len()];
    let mut waiting: Vec<usize> = (0..list.len()).collect();
    let mut running: BinaryHeap<End> = BinaryHeap::new();
    let mut free = m;
    for &(end, procs) in busy {
        if end > 0.0 && procs > 0 {
            let procs = procs.min(free);
            free -= procs;
            running.push(End(end, procs));
        }
    }
    let mut now = 0.0f64;
    while !waiting.is_empty() {
        waiting.retain(|&j| {
            let r = list[j];
            if r.procs <= free {
                free -= r.procs;
                start[j] = now;
                running.push(End(now + r.dur, r.procs));
                false
            } else {
                true
            }
        });
        if waiting.is_empty() {
            break;
        }
        // Advance to the next end; every end at that instant frees its processors before the
        // list is scanned again.
        let Some(End(t, p)) = running.pop() else {
            // Nothing runs and nothing fits: only a task wider than m; left unscheduled (NaN),
            // which the validator refuses.
            break;
        };
        now = t;
        free += p;
        while let Some(&End(t2, p2)) = running.peek() {
            if t2 > now {
                break;
            }
            running.pop();
            free += p2;
        }
    }
    start
}

/// List-schedules `list` and returns the schedule of `inst` it gives (each listed task on its
/// `procs`, for p(procs)); tasks of the instance must each appear once in `list`.
pub fn list_to_schedule(inst: &Instance, list: &[Rigid]) -> Schedule {
    let starts = list_schedule(inst.m(), list);
    let mut tasks = vec![
        Slot {
            start: f64::NAN,
            procs: 0
        };
        inst.n()
    ];
    for (r, s) in list.iter().zip(starts) {
        tasks[r.task] = Slot {
            start: s,
            procs: r.procs,
        };
    }
    Schedule { tasks }
}

/// The list of `order`'s tasks, each on `allot[task]` processors.
pub fn rigid_list(inst: &Instance, order: &[usize], allot: &[usize]) -> Vec<Rigid> {
    order
        .iter()
        .map(|&i| Rigid {
            task: i,
            procs: allot[i],
            dur: inst.p(i, allot[i]),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instance::testkit::unit as inst;

    #[test]
    fn release_at_t_frees_for_a_start_at_t() {
        let i = inst(2, &[&[2.0, 1.0], &[2.0, 1.0]]);
        let s = Schedule {
            tasks: vec![
                Slot {
                    start: 0.0,
                    procs: 2,
                },
                Slot {
                    start: 1.0,
                    procs: 2,
                },
            ],
        };
        assert_eq!(s.validate(&i), Ok(()));
        assert_eq!(s.cmax(&i), 2.0);
        assert_eq!(s.sum_wc(&i), 3.0);
        let mut bad = s.clone();
        bad.tasks[1].start = 0.5;
        assert!(matches!(
            bad.validate(&i),
            Err(InvalidSchedule::Overload { busy: 4, .. })
        ));
        bad.tasks[1] = Slot {
            start: 1.0,
            procs: 3,
        };
        assert!(matches!(
            bad.validate(&i),
            Err(InvalidSchedule::Procs { .. })
        ));
        bad.tasks.pop();
        assert!(matches!(
            bad.validate(&i),
            Err(InvalidSchedule::Count { .. })
        ));
    }

    #[test]
    fn list_scheduling_lets_a_later_task_pass_one_that_does_not_fit() {
        // m = 3: A(2 procs, 2 s), B(3 procs, 1 s), C(1 proc, 2 s): C starts beside A at 0,
        // B waits for both.
        let list = [
            Rigid {
                task: 0,
                procs: 2,
                dur: 2.0,
            },
            Rigid {
                task: 1,
                procs: 3,
                dur: 1.0,
            },
            Rigid {
                task: 2,
                procs: 1,
                dur: 2.0,
            },
        ];
        assert_eq!(list_schedule(3, &list), vec![0.0, 2.0, 0.0]);
    }
}
