//! `Core`'s transitions for running evolving jobs: resizing at step boundaries by the
//! [`EvoRun`](crate::evorun::EvoRun) state machine, and the job's choice of the nodes it frees (`erelease`). Pure:
//! the caller writes the files and sends the signal (`crate::evolve`).

use batch_proto::{hostlist, ReleaseNodesReply, StepStatus};
use sched_core::{JobId, Time};
use std::path::PathBuf;

use super::job_files::JobFiles;
use super::Core;
use crate::evorun::Progress;
use crate::record::JobRecord;

/// What one look at an evolving job did.
#[derive(Debug)]
pub struct Evolved {
    /// Nodes went back to the pool: the policy may use them.
    pub freed: bool,
    /// The record to store (its node list changed).
    pub record: Option<JobRecord>,
    /// The job's files as they are now, when they changed: rewrite them and signal it.
    pub files: Option<JobFiles>,
    /// When to look again (`None`: in its last step, nothing more happens).
    pub next: Option<Time>,
    /// The job's directory.
    pub job_dir: PathBuf,
}

impl Core {
    /// Where running evolving job `id` is (`None` for other jobs).
    pub fn step_status(&self, id: u64) -> Option<StepStatus> {
        let a = self.jobs.get(&id)?;
        let run = a.run.as_ref()?;
        let (evo, start) = (run.evolving.as_ref()?, a.rec.start?);
        let p = self.pools.get(run.pool)?;
        let k = evo.step;
        Some(StepStatus {
            index: k as u32 + 1,
            count: evo.scheduled.len() as u32,
            nodes: self.nodes_of(id).len() as u32,
            phase: evo.phase,
            ends: evo.boundary(start, k + 1),
            next_nodes: evo.scheduled.get(k + 1).map(|s| s.nodes),
            chosen_release: evo.chosen.as_ref().map(|c| hostlist::compress(&p.names(c))),
        })
    }

    /// What running evolving job `id`'s directory keeps for a restart: its step and choice.
    pub fn progress(&self, id: u64) -> Option<Progress> {
        let run = self.jobs.get(&id)?.run.as_ref()?;
        let evo = run.evolving.as_ref()?;
        let p = self.pools.get(run.pool)?;
        Some(Progress {
            step: evo.step,
            chosen: evo.chosen.as_ref().map(|c| p.names(c)).unwrap_or_default(),
        })
    }

    /// Brings running evolving job `id` to where its scheduled EP is at `now`: shrinks or
    /// grows it at a step boundary, updates what it is told. `None` once there is nothing
    /// more to do for it (it ended, is being cancelled, or is not evolving).
    pub fn evolve(&mut self, id: u64, now: Time, notice: u64) -> Option<Evolved> {
        let job = JobId(id);
        let a = self.jobs.get_mut(&id)?;
        let start = a.rec.start?;
        let run = a.run.as_mut()?;
        if run.cancelling {
            return None;
        }
        let evo = run.evolving.as_mut()?;
        let pool = self.pools.get_mut(run.pool)?;
        let before = (pool.map.nodes_of(job).to_vec(), evo.step, evo.phase);

        let k = evo.step_at(start, now);
        // RR-7205 Alg. 1 reads a job's chosen release only at the change point it was made
        // for: a choice for an earlier boundary (a restart skipped it) does not carry over.
        let chosen = if k == evo.step + 1 {
            evo.chosen.take()
        } else {
            None
        };
        if k != evo.step {
            evo.step = k;
            evo.chosen = None;
        }
        let want = evo.scheduled[k].nodes as usize;
        let held = pool.map.nodes_of(job).len();
        let mut freed = false;
        if held > want {
            // C4: the job's choice if it still names nodes it holds, else the default (the
            // nodes added last, never the first).
            let by_choice = chosen.is_some_and(|c| pool.map.shrink_chosen(job, want, &c).is_ok());
            if !by_choice {
                if let Err(e) = pool.map.shrink_default(job, want) {
                    tracing::error!(job = id, "cannot shrink: {e}");
                }
            }
            // A node it let go that is out of service stays out.
            pool.retire();
            freed = true;
        } else if held < want {
            if let Err(e) = pool.map.grow(job, want) {
                tracing::info!(job = id, "waiting for nodes: {e}");
            }
        }
        let held = pool.map.nodes_of(job).len();
        evo.phase = evo.phase_at(start, now, held, notice);
        let next = evo.next_event(start, now, held, notice);
        let after = (pool.map.nodes_of(job).to_vec(), evo.step, evo.phase);
        let nodes_changed = before.0 != after.0;
        let changed = before != after;
        let job_dir = run.job_dir.clone();
        let record = if nodes_changed {
            let names = pool.names(&after.0);
            a.rec.nodes = names.len() as u32;
            a.rec.node_list = Some(hostlist::compress(&names));
            Some(a.rec.clone())
        } else {
            None
        };
        let files = if changed {
            Some(self.job_files(id)?)
        } else {
            None
        };
        Some(Evolved {
            freed,
            record,
            files,
            next,
            job_dir,
        })
    }

    /// Records the nodes running evolving job `id` frees when its current step ends
    /// (`erelease`). Refused unless the next step holds fewer nodes and `names` are exactly
    /// that many distinct nodes of the job (C4).
    pub fn choose_release(
        &mut self,
        id: u64,
        names: &[String],
        now: Time,
    ) -> Result<ReleaseNodesReply, String> {
        let Some(a) = self.jobs.get(&id) else {
            return Err(format!("job {id} is not running"));
        };
        let Some(run) = a.run.as_ref() else {
            return Err(format!("job {id} is not running"));
        };
        let Some(evo) = run.evolving.as_ref() else {
            return Err(format!(
                "job {id} does not run as an evolving job; it holds its nodes until it ends"
            ));
        };
        let start = a.rec.start.unwrap_or(0);
        let k = evo.step;
        let Some(next) = evo.scheduled.get(k + 1) else {
            return Err(format!(
                "job {id} is in its last step; its nodes go when it ends"
            ));
        };
        let pool = &self.pools[run.pool];
        let holds = pool.map.nodes_of(JobId(id));
        let want = evo.scheduled[k].nodes as usize;
        if next.nodes as usize >= want || holds.len() < want {
            return Err(format!(
                "job {id} frees no node at the end of step {} ({} → {} nodes)",
                k + 1,
                want,
                next.nodes
            ));
        }
        let must = holds.len() - next.nodes as usize;
        if names.len() != must {
            return Err(format!(
                "job {id} must free {must} node(s) at the end of step {}, not {}",
                k + 1,
                names.len()
            ));
        }
        let mut idx = Vec::with_capacity(names.len());
        for n in names {
            match pool.node_index(n) {
                Some(i) if holds.contains(&i) => {
                    if idx.contains(&i) {
                        return Err(format!("{n} is named twice"));
                    }
                    idx.push(i);
                }
                _ => return Err(format!("{n} is not a node of job {id}")),
            }
        }
        let at = evo.boundary(start, k + 1);
        if now >= at {
            return Err(format!("step {} of job {id} is over", k + 1));
        }
        let nodes = hostlist::compress(&pool.names(&idx));
        if let Some(evo) = self
            .jobs
            .get_mut(&id)
            .and_then(|a| a.run.as_mut())
            .and_then(|r| r.evolving.as_mut())
        {
            evo.chosen = Some(idx);
        }
        Ok(ReleaseNodesReply {
            job: id,
            nodes,
            at,
            next_step: k as u32 + 2,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evorun::Saved;
    use batch_proto::{JobShape, StepPhase};
    use sched_core::{PoolId, Shape, Step};

    /// A core with one 8-node pool, evolving job 1 (2 → 4 → 1 nodes, 10 s each) started at
    /// t = 0, and rigid job 2 on `rigid` nodes.
    fn cluster(rigid: u32) -> Core {
        use crate::core::Active;
        let mut c = Core::new([("debug", 8)]);
        let steps = vec![
            Step::new(10_000, 2),
            Step::new(10_000, 4),
            Step::new(10_000, 1),
        ];
        let mut spec = batch_proto::JobSpec::new("#!/bin/sh\n", "/tmp", 1, 1000);
        spec.shape = JobShape::Evolving {
            steps: crate::convert::ToWire::to_wire(steps.as_slice()),
        };
        let evolving = JobRecord::submitted(1, 1, 1, "u", spec, 0);
        let rigid_rec = JobRecord::submitted(
            2,
            1,
            1,
            "u",
            batch_proto::JobSpec::new("#!/bin/sh\n", "/tmp", rigid, 100_000),
            0,
        );
        c.insert(Active {
            rec: evolving,
            run: None,
        });
        c.insert(Active {
            rec: rigid_rec,
            run: None,
        });
        let shape = Shape::Evolving {
            pool: PoolId(0),
            steps: steps.into(),
        };
        c.start(1, &shape, 0, PathBuf::from("/j1")).unwrap();
        c.start(
            2,
            &Shape::rigid(PoolId(0), rigid, 100_000),
            0,
            PathBuf::new(),
        )
        .unwrap();
        c
    }

    #[test]
    fn a_job_grows_at_its_boundary_and_frees_its_last_nodes_by_default() {
        let mut c = cluster(2);
        assert_eq!(c.nodes_of(1), &[0, 1]);
        let ev = c.evolve(1, 5_000, 3_000).unwrap();
        assert!(ev.files.is_none() && ev.record.is_none());
        assert_eq!(ev.next, Some(10_000));
        let ev = c.evolve(1, 10_000, 3_000).unwrap();
        assert!(ev.files.is_some() && !ev.freed);
        assert_eq!(c.nodes_of(1), &[0, 1, 4, 5]);
        assert_eq!(
            ev.record.unwrap().node_list.as_deref(),
            Some("debug[001-002,005-006]")
        );
        assert_eq!(ev.files.unwrap().nodes[2], "debug005");
        assert_eq!(ev.next, Some(17_000));
        // Told to choose three seconds before the shrink; the default spares the first node.
        let ev = c.evolve(1, 17_000, 3_000).unwrap();
        assert!(ev.files.is_some());
        let step = ev.files.unwrap().step.unwrap();
        assert!(step.contains("ESCHED_STEP_STATE=releasing"), "{step}");
        assert!(
            step.contains("ESCHED_RELEASE_DEFAULT=debug[002,005-006]"),
            "{step}"
        );
        let ev = c.evolve(1, 20_000, 3_000).unwrap();
        assert!(ev.files.is_some() && ev.freed);
        assert_eq!(c.nodes_of(1), &[0]);
        assert_eq!(ev.next, None);
        assert_eq!(c.pools[0].free(), 5);
    }

    #[test]
    fn the_job_chooses_what_it_frees_and_bad_choices_are_refused() {
        let mut c = cluster(2);
        c.evolve(1, 10_000, 3_000).unwrap();
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // Wrong count, a node of another job, a repeat.
        assert!(c
            .choose_release(1, &names(&["debug001"]), 18_000)
            .unwrap_err()
            .contains("must free 3"));
        assert!(c
            .choose_release(1, &names(&["debug001", "debug003", "debug005"]), 18_000)
            .unwrap_err()
            .contains("debug003 is not a node of job 1"));
        assert!(c
            .choose_release(1, &names(&["debug001", "debug001", "debug005"]), 18_000)
            .unwrap_err()
            .contains("twice"));
        // The job may give up even its first node: the choice is its own (C4).
        let r = c
            .choose_release(1, &names(&["debug001", "debug002", "debug005"]), 18_000)
            .unwrap();
        assert_eq!((r.at, r.next_step), (20_000, 3));
        assert_eq!(r.nodes, "debug[001-002,005]");
        assert_eq!(
            c.step_status(1).unwrap().chosen_release.as_deref(),
            Some("debug[001-002,005]")
        );
        c.evolve(1, 20_000, 3_000).unwrap();
        assert_eq!(c.nodes_of(1), &[5]);
        assert!(c
            .choose_release(1, &names(&["debug006"]), 21_000)
            .unwrap_err()
            .contains("last step"));
        // A rigid job has nothing to choose.
        assert!(c
            .choose_release(2, &names(&["debug003"]), 21_000)
            .unwrap_err()
            .contains("does not run as an evolving job"));
    }

    #[test]
    fn a_growth_without_free_nodes_waits_and_keeps_its_claim_in_the_snapshot() {
        // The rigid job holds 6 of 8 nodes past the evolving job's first step (it overran).
        let mut c = cluster(6);
        let ev = c.evolve(1, 10_000, 3_000).unwrap();
        assert!(ev.files.is_some());
        assert_eq!(c.nodes_of(1).len(), 2);
        assert_eq!(c.step_status(1).unwrap().phase, StepPhase::Waiting);
        assert_eq!(ev.next, Some(11_000));
        let snap = c.snapshot(10_000, 500);
        let held = snap.running.iter().find(|r| r.id == JobId(1)).unwrap();
        assert_eq!(
            held.holds[0].steps,
            vec![
                Step::new(1_000, 2),
                Step::new(9_000, 4),
                Step::new(10_000, 1)
            ]
        );
        c.finish(2, |r| r.state = batch_proto::JobState::Completed);
        let ev = c.evolve(1, 10_300, 3_000).unwrap();
        assert!(ev.files.is_some());
        assert_eq!(c.nodes_of(1), &[0, 1, 2, 3]);
        assert_eq!(c.step_status(1).unwrap().phase, StepPhase::Running);
    }

    #[test]
    fn a_restarted_daemon_keeps_the_first_node_first_and_applies_the_saved_choice() {
        let mut c = cluster(2);
        c.evolve(1, 10_000, 3_000).unwrap();
        c.choose_release(
            1,
            &["debug002".into(), "debug005".into(), "debug006".into()],
            18_000,
        )
        .unwrap();
        let files = c.job_files(1).unwrap();
        let rec = c.jobs[&1].rec.clone();
        // A new daemon: the record's host list is sorted; the node file has the order.
        let mut fresh = cluster(2);
        fresh.finish(1, |_| {});
        let mut rec2 = rec.clone();
        rec2.id = 3;
        let saved = Saved {
            nodes: Some(vec![
                "debug006".into(),
                "debug001".into(),
                "debug002".into(),
                "debug005".into(),
            ]),
            progress: files.progress.clone(),
        };
        fresh
            .adopt(rec2, PathBuf::from("/j3"), saved, 19_000)
            .unwrap();
        assert_eq!(fresh.nodes_of(3), &[5, 0, 1, 4]);
        fresh.evolve(3, 20_000, 3_000).unwrap();
        assert_eq!(fresh.nodes_of(3), &[0]);
    }

    #[test]
    fn after_a_crash_between_node_file_and_record_the_node_file_wins() {
        // The record still lists the four nodes of step 2; the job was shrunk to debug001 and
        // its node file says so; debug002 already went to another job.
        let mut c = cluster(2);
        c.evolve(1, 10_000, 3_000).unwrap();
        let rec = c.jobs[&1].rec.clone();
        assert_eq!(rec.node_list.as_deref(), Some("debug[001-002,005-006]"));
        let mut fresh = cluster(2);
        fresh.finish(1, |_| {});
        let mut other = JobRecord::submitted(
            9,
            1,
            1,
            "u",
            batch_proto::JobSpec::new("#!/bin/sh\n", "/tmp", 1, 100_000),
            0,
        );
        other.state = batch_proto::JobState::Running;
        other.start = Some(20_000);
        other.pool = Some("debug".into());
        other.node_list = Some("debug002".into());
        fresh
            .adopt(other, PathBuf::new(), Saved::default(), 20_000)
            .unwrap();
        let mut rec3 = rec;
        rec3.id = 3;
        let saved = Saved {
            nodes: Some(vec!["debug001".into()]),
            progress: Some(Progress {
                step: 2,
                chosen: vec![],
            }),
        };
        fresh.adopt(rec3, PathBuf::new(), saved, 21_000).unwrap();
        assert_eq!(fresh.nodes_of(3), &[0]);
        assert_eq!(fresh.jobs[&3].rec.node_list.as_deref(), Some("debug001"));
        let ev = fresh.evolve(3, 21_000, 3_000).unwrap();
        assert!(!ev.freed && ev.record.is_none());
    }
}
