//! A valid plan applied to the state ([`Core::apply_plan`]), and the one place the latest
//! plan's expectations are forgotten ([`Core::forget_expectations`]).

use std::path::PathBuf;
use std::sync::Arc;

use batch_proto::JobState;
use sched_core::{MoldConfig, Plan, RSome, RejectKind, Shape};

use super::{Core, SnapshotData};
use crate::record::JobRecord;

/// What the I/O layer must carry out after [`Core::apply_plan`], in the order of the fields.
#[derive(Debug, Default)]
pub struct Effects {
    /// Records to queue to the store, in this order, before the core's lock is released: the
    /// jobs killed (marked preempted, so that a restart does not give them the nodes they
    /// lost), then claims given back and claims made.
    pub store: Vec<JobRecord>,
    /// Jobs started on their nodes: each to launch (a launcher session's job is told instead).
    pub started: Vec<JobRecord>,
    /// Pending jobs the policy refused for good: each to end with its final state and detail.
    pub rejected: Vec<Rejected>,
    /// Running jobs the policy killed (their nodes are given away already): each to stop as a
    /// cancel stops it.
    pub killed: Vec<Killed>,
}

/// A running job the policy killed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Killed {
    /// The job.
    pub job: u64,
    /// The job it was killed to make room for, if the policy said.
    pub for_job: Option<u64>,
    /// The policy's reason, for the log.
    pub reason: String,
}

/// A pending job the policy refused, as it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// The job.
    pub job: u64,
    /// FAILED for a co-allocated job that missed its start deadline, CANCELLED otherwise.
    pub state: JobState,
    /// Its record's detail.
    pub detail: String,
}

/// Why the latest plan's expectations (expected starts, scheduled EPs, chosen moldable
/// configurations) are forgotten: each case forgets its own part of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forget {
    /// A new plan replaces every expectation.
    NewPlan,
    /// No pending job is eligible, so the policy is not called: no job has an expected start
    /// or configuration any more. Scheduled EPs are left to the next plan.
    NothingToPlace,
    /// Another policy is in force: the old one's expected starts and configurations no longer
    /// hold until the new one plans. Scheduled EPs are left to its first plan.
    NewPolicy,
}

impl Core {
    /// Keeps `plan`, just applied, and the snapshot `snap` it was made on, for the views
    /// computed on demand ([`super::coorm::planned_view`]).
    pub fn keep_plan(&mut self, snap: Arc<SnapshotData>, plan: Arc<Plan>) {
        self.last_plan = Some((snap, plan));
    }

    /// The latest plan kept by [`Core::keep_plan`] and its snapshot, until the expectations
    /// are forgotten.
    pub fn last_plan(&self) -> Option<(&SnapshotData, &Plan)> {
        self.last_plan.as_ref().map(|(s, p)| (&**s, &**p))
    }

    /// Forgets the latest plan's expectations, as `why` requires.
    pub fn forget_expectations(&mut self, why: Forget) {
        self.expected.clear();
        self.expected_mold.clear();
        self.last_plan = None;
        if why == Forget::NewPlan {
            self.expected_ep.clear();
        }
    }

    /// Applies valid plan `plan`, made on the snapshot of `now` by policy `policy`: kills
    /// first (the nodes of the jobs killed go to this plan's placements), claims the plan no
    /// longer makes given back, then each placement in order (a claim made, an expected start
    /// recorded, or a start now), and every reject and kill turned into what must be done.
    /// Starts are stamped with `clock()` (real time has moved on since the snapshot: the
    /// walltime counts from when the process really starts); `job_dir` names a job's
    /// directory. Returns what the I/O layer must carry out.
    pub fn apply_plan(
        &mut self,
        plan: &Plan,
        now: u64,
        policy: &str,
        clock: impl Fn() -> u64,
        job_dir: impl Fn(u64) -> PathBuf,
    ) -> Effects {
        let mut out = Effects::default();
        self.forget_expectations(Forget::NewPlan);
        for k in &plan.kills {
            let why = format!("preempted by policy {policy}: {}", k.reason);
            out.store.extend(self.preempt(k.job.0, why));
        }
        // A job that starts now keeps its claimed nodes: `start` takes them.
        let mut given_back: Vec<u64> = self
            .claims
            .keys()
            .copied()
            .filter(|id| !plan.placements.iter().any(|p| p.job.0 == *id))
            .collect();
        given_back.sort_unstable();
        for id in given_back {
            out.store.extend(self.unclaim(id));
        }
        for p in &plan.placements {
            let id = p.job.0;
            if let (RSome(_), Shape::CoAllocated { pools }, true) =
                (p.claim_from, &p.shape, p.start > now)
            {
                // Stored, so that a restart keeps the claim (`Core::restore_claim`).
                match self.claim(id, pools) {
                    Ok(rec) => out.store.extend(rec),
                    Err(why) => tracing::warn!(job = id, "cannot claim nodes: {why}"),
                }
            }
            if p.start > now {
                self.expected.insert(id, p.start);
                match &p.shape {
                    Shape::Evolving { steps, .. } => {
                        self.expected_ep.insert(id, steps.to_vec());
                    }
                    // cbf, easy, fcfs and bicriteria place a moldable job as `Moldable`; a
                    // policy that places it as `Rigid` gets no expected configuration shown.
                    Shape::Moldable {
                        nodes, walltime, ..
                    } => {
                        self.expected_mold.insert(
                            id,
                            MoldConfig {
                                nodes: *nodes,
                                walltime: *walltime,
                            },
                        );
                    }
                    _ => {}
                }
                continue;
            }
            match self.start(id, &p.shape, clock(), job_dir(id)) {
                Ok(rec) => out.started.push(rec),
                Err(why) => tracing::debug!(job = id, "not started: {why}"),
            }
        }
        out.rejected = plan
            .rejects
            .iter()
            .map(|r| {
                // A co-allocated job that could not start by its deadline has failed: its
                // detail is the policy's reason alone (the RPP words it `Deadline: …`).
                let (state, detail) = match r.kind {
                    RejectKind::DeadlineMissed => (JobState::Failed, r.reason.to_string()),
                    RejectKind::TooLarge | RejectKind::Other => (
                        JobState::Cancelled,
                        format!("rejected by policy {policy}: {}", r.reason),
                    ),
                };
                Rejected {
                    job: r.job.0,
                    state,
                    detail,
                }
            })
            .collect();
        out.killed = plan
            .kills
            .iter()
            .map(|k| Killed {
                job: k.job.0,
                for_job: k.for_job.into_option().map(|j| j.0),
                reason: k.reason.to_string(),
            })
            .collect();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use batch_proto::JobSpec;
    use sched_core::{JobId, Kill, Placement, PoolId, RNone, Reject};

    use crate::core::Active;

    fn add(c: &mut Core, id: u64, pool: Option<&str>) {
        let mut spec = JobSpec::new("#!/bin/sh\n", "/tmp", 2, 1000);
        spec.pool = pool.map(Into::into);
        let rec = JobRecord::submitted(id, 1, 1, "u", spec, 0);
        c.insert(Active { rec, run: None });
    }

    fn placed(job: u64, start: u64) -> Placement {
        Placement {
            job: JobId(job),
            start,
            shape: Shape::rigid(PoolId(0), 2, 1000),
            claim_from: RNone,
        }
    }

    #[test]
    fn a_kill_hands_its_nodes_to_a_start_of_the_same_plan_and_is_stored_first() {
        let mut c = Core::new([("a", 2)]);
        add(&mut c, 1, Some("a"));
        c.start(1, &Shape::rigid(PoolId(0), 2, 1000), 0, PathBuf::new())
            .unwrap();
        add(&mut c, 2, None);
        add(&mut c, 3, None);
        add(&mut c, 4, None);
        let plan = Plan {
            placements: sched_core::rvec![placed(2, 10), placed(3, 500)],
            kills: sched_core::rvec![Kill::for_job(JobId(1), JobId(3), "room")],
            rejects: sched_core::rvec![
                Reject::new(JobId(4), RejectKind::TooLarge, "too big"),
                Reject::new(JobId(3), RejectKind::DeadlineMissed, "missed")
            ],
            ..Default::default()
        };
        let e = c.apply_plan(
            &plan,
            10,
            "rpp",
            || 12,
            |id| PathBuf::from(format!("/j/{id}")),
        );
        assert_eq!(e.store.len(), 1);
        assert_eq!(
            e.store[0].spec.preempted.as_deref(),
            Some("preempted by policy rpp: room [for job 3]")
        );
        assert_eq!(e.started.len(), 1);
        assert_eq!((e.started[0].id, e.started[0].start), (2, Some(12)));
        assert_eq!(c.expected_start(3), Some(500));
        assert_eq!(
            e.killed,
            vec![Killed {
                job: 1,
                for_job: Some(3),
                reason: "room [for job 3]".into()
            }]
        );
        assert_eq!(
            e.rejected,
            vec![
                Rejected {
                    job: 4,
                    state: JobState::Cancelled,
                    detail: "rejected by policy rpp: too big".into()
                },
                Rejected {
                    job: 3,
                    state: JobState::Failed,
                    detail: "missed".into()
                }
            ]
        );
    }

    #[test]
    fn each_case_forgets_its_own_expectations() {
        let mut c = Core::new([("a", 2)]);
        add(&mut c, 1, None);
        let plan = Plan {
            placements: sched_core::rvec![Placement {
                shape: Shape::Evolving {
                    pool: PoolId(0),
                    steps: sched_core::rvec![sched_core::Step::new(10, 1)],
                },
                ..placed(1, 100)
            }],
            ..Default::default()
        };
        for (why, ep_kept) in [
            (Forget::NothingToPlace, true),
            (Forget::NewPolicy, true),
            (Forget::NewPlan, false),
        ] {
            c.apply_plan(&plan, 0, "p", || 0, |_| PathBuf::new());
            assert_eq!(c.expected_start(1), Some(100));
            c.forget_expectations(why);
            assert_eq!(c.expected_start(1), None, "{why:?}");
            assert_eq!(c.expected_ep(1).is_some(), ep_kept, "{why:?}");
        }
    }
}
