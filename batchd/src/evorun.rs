//! Where a running evolving job is in its scheduled EP (Klein & Pérez: fully-predictably
//! evolving applications): a pure state machine over times and node counts, no I/O and no
//! clock of its own (the caller passes `now`). `core` moves a job's nodes by it; the I/O layer
//! (`evolve`) only carries out what `core` decides.
//!
//! Layer 2 of batchd (see ARCHITECTURE.md, "Architecture invariant: batchd in layers").

use std::time::Duration;

use batch_proto::{JobShape, StepPhase};
use sched_core::nodemap::NodeId;
use sched_core::{PoolId, PoolSteps, Shape, Step, Time};
use serde::{Deserialize, Serialize};

use crate::convert::ToCore;
use crate::record::JobRecord;

/// How often a job waiting for nodes looks again when no job end wakes it.
const OWED_RETRY: Duration = Duration::from_secs(1);

/// Where a running evolving job is in its scheduled EP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvoRun {
    /// The steps as requested.
    pub requested: Vec<Step>,
    /// The scheduled EP it was started with (same node counts, durations at least those
    /// requested).
    pub scheduled: Vec<Step>,
    /// The step (from 0) whose node count the job holds, or is owed.
    pub step: usize,
    /// What the job was last told it is doing.
    pub phase: StepPhase,
    /// The nodes the job chose to free when `step` ends.
    pub chosen: Option<Vec<NodeId>>,
}

/// What an evolving job's directory keeps across a daemon restart (read by
/// `crate::launch::read_saved`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Saved {
    /// Its nodes in the order it got them (the node file).
    pub nodes: Option<Vec<String>>,
    /// Its progress.
    pub progress: Option<Progress>,
}

/// The step the job's nodes belong to, and its choice for the next boundary
/// (`evolve.json`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// The step (from 0).
    pub step: usize,
    /// Host names chosen with `erelease`.
    #[serde(default)]
    pub chosen: Vec<String>,
}

impl EvoRun {
    /// The state of a job just started, if it was started with an evolving shape.
    pub fn started(rec: &JobRecord) -> Option<EvoRun> {
        let (Some(Shape::Evolving { steps, .. }), JobShape::Evolving { steps: requested }) =
            (&rec.shape, &rec.spec.shape)
        else {
            return None;
        };
        if steps.is_empty() || steps.len() != requested.len() {
            return None;
        }
        Some(EvoRun {
            requested: requested.to_core(),
            scheduled: steps.clone().into_vec(),
            step: 0,
            phase: StepPhase::Running,
            chosen: None,
        })
    }

    /// The state of a job re-attached after a restart at `now`.
    pub fn adopted(
        rec: &JobRecord,
        saved: &Saved,
        now: Time,
        index_of: impl Fn(&str) -> Option<NodeId>,
    ) -> Option<EvoRun> {
        let mut run = EvoRun::started(rec)?;
        match &saved.progress {
            Some(p) if p.step < run.scheduled.len() => {
                run.step = p.step;
                let chosen: Option<Vec<NodeId>> = p.chosen.iter().map(|n| index_of(n)).collect();
                run.chosen = chosen.filter(|c| !c.is_empty());
            }
            _ => run.step = run.step_at(rec.start.unwrap_or(0), now),
        }
        Some(run)
    }

    /// When step `i` begins (`i == len`: when the last one ends).
    pub fn boundary(&self, start: Time, i: usize) -> Time {
        start.saturating_add(sched_core::request::total_duration(
            &self.scheduled[..i.min(self.scheduled.len())],
        ))
    }

    /// The step the schedule is in at `now` (the last one once it is over).
    pub fn step_at(&self, start: Time, now: Time) -> usize {
        let mut t = start;
        for (i, s) in self.scheduled.iter().enumerate() {
            t = t.saturating_add(s.duration);
            if now < t {
                return i;
            }
        }
        self.scheduled.len().saturating_sub(1)
    }

    /// What the job holds from `now` on, for the policy's snapshot: its scheduled EP, except
    /// that the present step counts what it really holds. More than scheduled: a shrink not
    /// made yet (it is, within milliseconds). Fewer: nodes it is owed and waits for, counted
    /// from `late` (when whatever holds them past its time limit is gone), so that no new job
    /// is placed on them.
    pub fn holds(&self, pool: PoolId, start: Time, now: Time, held: u32, late: Time) -> PoolSteps {
        let k = self.step_at(start, now);
        let want = self.scheduled[k].nodes;
        let next = self.boundary(start, k + 1).max(now);
        let mut steps = Vec::with_capacity(self.scheduled.len() - k + 1);
        let mut push = |from: Time, to: Time, nodes: u32| {
            if to > from {
                steps.push(Step::new(to - from, nodes));
            }
        };
        if held < want {
            let mid = late.clamp(now, next);
            push(now, mid, held);
            push(mid, next, want);
        } else {
            push(now, next, held);
        }
        steps.extend_from_slice(&self.scheduled[k + 1..]);
        PoolSteps {
            pool,
            start: now,
            steps: steps.into(),
        }
    }

    /// What the job is doing at `now` holding `held` nodes.
    pub fn phase_at(&self, start: Time, now: Time, held: usize, notice: u64) -> StepPhase {
        let k = self.step_at(start, now);
        let want = self.scheduled[k].nodes as usize;
        if held < want {
            return StepPhase::Waiting;
        }
        let Some(next) = self.scheduled.get(k + 1) else {
            return StepPhase::Running;
        };
        let (begin, end) = (self.boundary(start, k), self.boundary(start, k + 1));
        if (next.nodes as usize) < want && now >= end.saturating_sub(notice).max(begin) {
            StepPhase::Releasing
        } else if now >= begin.saturating_add(self.requested[k].duration) {
            // Klein & Pérez: an expanded step is one whose successor could not get its
            // nodes in time; past the requested duration the application only waits.
            StepPhase::Waiting
        } else {
            StepPhase::Running
        }
    }

    /// The next instant something changes for the job, after `now`.
    pub fn next_event(&self, start: Time, now: Time, held: usize, notice: u64) -> Option<Time> {
        let k = self.step_at(start, now);
        let mut next: Option<Time> = None;
        let mut consider = |t: Time| {
            if t > now {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        };
        if let Some(following) = self.scheduled.get(k + 1) {
            let (begin, end) = (self.boundary(start, k), self.boundary(start, k + 1));
            consider(end);
            consider(begin.saturating_add(self.requested[k].duration));
            if following.nodes < self.scheduled[k].nodes {
                consider(end.saturating_sub(notice));
            }
        }
        if held < self.scheduled[k].nodes as usize {
            consider(now.saturating_add(OWED_RETRY.as_millis() as u64));
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(requested: &[(u64, u32)], scheduled: &[(u64, u32)]) -> EvoRun {
        let steps = |v: &[(u64, u32)]| v.iter().map(|&(d, n)| Step::new(d, n)).collect();
        EvoRun {
            requested: steps(requested),
            scheduled: steps(scheduled),
            step: 0,
            phase: StepPhase::Running,
            chosen: None,
        }
    }

    #[test]
    fn steps_phases_and_events_follow_the_scheduled_ep() {
        // 2 → 4 → 1 nodes; the first step expanded from 10 to 15 (the 4 nodes come late).
        let e = run(&[(10, 2), (10, 4), (10, 1)], &[(15, 2), (10, 4), (10, 1)]);
        let s = 1000;
        assert_eq!(e.step_at(s, s), 0);
        assert_eq!(e.step_at(s, s + 14), 0);
        assert_eq!(e.step_at(s, s + 15), 1);
        assert_eq!(e.step_at(s, s + 35), 2);
        assert_eq!(e.step_at(s, s + 99), 2);
        assert_eq!(e.phase_at(s, s + 9, 2, 3), StepPhase::Running);
        assert_eq!(e.phase_at(s, s + 10, 2, 3), StepPhase::Waiting);
        assert_eq!(e.next_event(s, s, 2, 3), Some(s + 10));
        assert_eq!(e.next_event(s, s + 10, 2, 3), Some(s + 15));
        // Step 2 shrinks next: told 3 ms ahead.
        assert_eq!(e.phase_at(s, s + 21, 4, 3), StepPhase::Running);
        assert_eq!(e.next_event(s, s + 15, 4, 3), Some(s + 22));
        assert_eq!(e.phase_at(s, s + 22, 4, 3), StepPhase::Releasing);
        // A notice longer than the step: told from the step's start.
        assert_eq!(e.phase_at(s, s + 15, 4, 100), StepPhase::Releasing);
        // Owed nodes: waiting, and a retry.
        assert_eq!(e.phase_at(s, s + 16, 3, 3), StepPhase::Waiting);
        assert_eq!(e.next_event(s, s + 16, 3, 3), Some(s + 22));
        let last = run(&[(10, 2), (10, 4)], &[(10, 2), (10, 4)]);
        assert_eq!(last.next_event(s, s + 12, 3, 3), Some(s + 12 + 1000));
        assert_eq!(e.next_event(s, s + 30, 1, 3), None);
    }

    #[test]
    fn holds_count_the_present_and_the_rest_of_the_schedule() {
        let e = run(&[(10, 2), (10, 4), (10, 1)], &[(10, 2), (10, 4), (10, 1)]);
        let p = PoolId(0);
        // On time: the scheduled EP from now.
        let h = e.holds(p, 0, 5, 2, 1005);
        assert_eq!(h.start, 5);
        assert_eq!(
            h.steps,
            vec![Step::new(5, 2), Step::new(10, 4), Step::new(10, 1)]
        );
        assert_eq!(h.end(), 30);
        // Owed two nodes at t = 12: what it has until `late`, then what it is owed.
        let h = e.holds(p, 0, 12, 2, 15);
        assert_eq!(
            h.steps,
            vec![Step::new(3, 2), Step::new(5, 4), Step::new(10, 1)]
        );
        // A shrink not made yet counts as still held.
        let h = e.holds(p, 0, 21, 4, 1021);
        assert_eq!(h.steps, vec![Step::new(9, 4)]);
    }
}
