//! Node-ID mapping for evolving jobs (Klein & Pérez, INRIA RR-7205, §4.1 and Algorithm 1).
//!
//! Policies plan node *counts*; the driver must turn them into node *IDs* under the report's
//! conditions: a job holds exactly its scheduled count (C2), a node belongs to one job at a time
//! (C3), and when a job shrinks it chooses which of its nodes it frees (C4) — its first node
//! runs the driver process of a code-coupling application and must not be taken from it.
//!
//! [`NodeMap`] is the online form batchd uses: [`NodeMap::grow`] takes new nodes from the free
//! set; [`NodeMap::shrink_chosen`] frees the nodes the job named (checked against C4: its own,
//! distinct, exactly the right number); [`NodeMap::shrink_default`] is what the driver does when
//! the job does not choose within its grace period: free the nodes added last, never the first.
//! [`map_schedule`] is Algorithm 1 itself, offline: scheduled EPs in, node sets per interval out.
//!
//! Interpretation (RR Alg. 1, "resources randomly chosen from S"): new nodes are the free nodes
//! with the smallest IDs, not random ones; any choice satisfies C2–C4, and a deterministic one
//! makes runs repeatable and node lists compact.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::request::{JobId, Step};
use crate::time::Time;

/// A node's identifier within its pool (batchd maps it to a host name).
pub type NodeId = u32;

/// A mapping operation that would break C2–C4; the map is left unchanged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NodeMapError {
    /// The same node twice in the pool's list.
    #[error("node {0} appears twice in the pool")]
    DuplicateNode(NodeId),
    /// A job grows by more nodes than are free.
    #[error("job {job} needs {wanted} more node(s), {free} free")]
    NotEnoughFree {
        /// The job.
        job: JobId,
        /// Nodes it needs beyond those it holds.
        wanted: usize,
        /// Free nodes.
        free: usize,
    },
    /// A job that holds no node was asked to shrink.
    #[error("job {0} holds no node")]
    UnknownJob(JobId),
    /// A resize in the wrong direction (grow to fewer nodes, shrink to more).
    #[error("job {job} holds {holds} node(s); cannot {op} to {count}")]
    WrongDirection {
        /// The job.
        job: JobId,
        /// Nodes it holds.
        holds: usize,
        /// The count asked for.
        count: usize,
        /// `grow` or `shrink`.
        op: &'static str,
    },
    /// A node claimed for a job is not free (or not in the pool).
    #[error("node {node} is not free for job {job}")]
    NotFree {
        /// The job.
        job: JobId,
        /// The node.
        node: NodeId,
    },
    /// C4: the job named a node it does not hold.
    #[error("job {job} does not hold node {node}")]
    NotHeld {
        /// The job.
        job: JobId,
        /// The node.
        node: NodeId,
    },
    /// C4: the job named a node twice.
    #[error("job {job} names node {node} twice")]
    Repeated {
        /// The job.
        job: JobId,
        /// The node.
        node: NodeId,
    },
    /// C4: the job named the wrong number of nodes.
    #[error("job {job} must free {expected} node(s), named {given}")]
    WrongCount {
        /// The job.
        job: JobId,
        /// How many it must free.
        expected: usize,
        /// How many it named.
        given: usize,
    },
}

/// Which job holds which node of one pool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeMap {
    free: BTreeSet<NodeId>,
    /// Each job's nodes in the order it got them: the first runs its driver.
    jobs: HashMap<JobId, Vec<NodeId>>,
    owner: HashMap<NodeId, JobId>,
}

impl NodeMap {
    /// A pool whose nodes are `nodes`, all free.
    pub fn new(nodes: impl IntoIterator<Item = NodeId>) -> Result<Self, NodeMapError> {
        let mut free = BTreeSet::new();
        for n in nodes {
            if !free.insert(n) {
                return Err(NodeMapError::DuplicateNode(n));
            }
        }
        Ok(NodeMap {
            free,
            jobs: HashMap::new(),
            owner: HashMap::new(),
        })
    }

    /// Number of free nodes.
    pub fn free_count(&self) -> usize {
        self.free.len()
    }

    /// The free nodes, in ID order.
    pub fn free_nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.free.iter().copied()
    }

    /// The nodes `job` holds, in the order it got them (empty if none).
    pub fn nodes_of(&self, job: JobId) -> &[NodeId] {
        self.jobs.get(&job).map_or(&[], Vec::as_slice)
    }

    /// The job holding `node`, if any.
    pub fn owner(&self, node: NodeId) -> Option<JobId> {
        self.owner.get(&node).copied()
    }

    /// The jobs holding nodes, in ID order.
    pub fn jobs(&self) -> Vec<JobId> {
        let mut v: Vec<JobId> = self.jobs.keys().copied().collect();
        v.sort();
        v
    }

    /// Grows `job` (or starts it, if it holds nothing) to `count` nodes; returns the new nodes,
    /// taken from the free set (RR Alg. 1, second inner loop).
    pub fn grow(&mut self, job: JobId, count: usize) -> Result<Vec<NodeId>, NodeMapError> {
        let holds = self.nodes_of(job).len();
        if count < holds {
            return Err(NodeMapError::WrongDirection {
                job,
                holds,
                count,
                op: "grow",
            });
        }
        let wanted = count - holds;
        if wanted > self.free.len() {
            return Err(NodeMapError::NotEnoughFree {
                job,
                wanted,
                free: self.free.len(),
            });
        }
        let added: Vec<NodeId> = self.free.iter().take(wanted).copied().collect();
        for n in &added {
            self.free.remove(n);
            self.owner.insert(*n, job);
        }
        if !added.is_empty() {
            self.jobs.entry(job).or_default().extend(&added);
        }
        Ok(added)
    }

    /// Gives `job` exactly `nodes`, in that order, after whatever it holds: how a driver
    /// restores the map of a job that was running before a restart. Every node must be free.
    pub fn claim(&mut self, job: JobId, nodes: &[NodeId]) -> Result<(), NodeMapError> {
        let mut seen = BTreeSet::new();
        for &n in nodes {
            if !self.free.contains(&n) {
                return Err(NodeMapError::NotFree { job, node: n });
            }
            if !seen.insert(n) {
                return Err(NodeMapError::Repeated { job, node: n });
            }
        }
        for &n in nodes {
            self.free.remove(&n);
            self.owner.insert(n, job);
        }
        if !nodes.is_empty() {
            self.jobs.entry(job).or_default().extend(nodes);
        }
        Ok(())
    }

    /// The nodes [`NodeMap::shrink_default`] would free to bring `job` down to `count`: the ones
    /// added last; never the first while `count > 0`. Sent to the job with the shrink notice so
    /// that it knows what it loses if it does not choose.
    pub fn default_release(&self, job: JobId, count: usize) -> Result<Vec<NodeId>, NodeMapError> {
        let nodes = self.jobs.get(&job).ok_or(NodeMapError::UnknownJob(job))?;
        if count > nodes.len() {
            return Err(NodeMapError::WrongDirection {
                job,
                holds: nodes.len(),
                count,
                op: "shrink",
            });
        }
        // Last added first; the first node (index 0) goes only when nothing is left.
        Ok(nodes[count..].iter().rev().copied().collect())
    }

    /// Shrinks `job` to `count` nodes freeing the nodes the job chose (C4): `release` must be
    /// `holds − count` distinct nodes of the job. The job may give up any of its nodes, its
    /// first one included — the choice is its own.
    pub fn shrink_chosen(
        &mut self,
        job: JobId,
        count: usize,
        release: &[NodeId],
    ) -> Result<(), NodeMapError> {
        let nodes = self.jobs.get(&job).ok_or(NodeMapError::UnknownJob(job))?;
        if count > nodes.len() {
            return Err(NodeMapError::WrongDirection {
                job,
                holds: nodes.len(),
                count,
                op: "shrink",
            });
        }
        let expected = nodes.len() - count;
        if release.len() != expected {
            return Err(NodeMapError::WrongCount {
                job,
                expected,
                given: release.len(),
            });
        }
        let mut seen = BTreeSet::new();
        for &n in release {
            if self.owner.get(&n) != Some(&job) {
                return Err(NodeMapError::NotHeld { job, node: n });
            }
            if !seen.insert(n) {
                return Err(NodeMapError::Repeated { job, node: n });
            }
        }
        self.free_nodes_of(job, &seen);
        Ok(())
    }

    /// Shrinks `job` to `count` nodes without its choice (its grace period ran out): frees the
    /// nodes added last, never the first while `count > 0`. Returns the freed nodes.
    pub fn shrink_default(
        &mut self,
        job: JobId,
        count: usize,
    ) -> Result<Vec<NodeId>, NodeMapError> {
        let freed = self.default_release(job, count)?;
        let set: BTreeSet<NodeId> = freed.iter().copied().collect();
        self.free_nodes_of(job, &set);
        Ok(freed)
    }

    /// The job ended: every node it held is free again. Returns them.
    pub fn release_all(&mut self, job: JobId) -> Vec<NodeId> {
        let nodes = self.jobs.remove(&job).unwrap_or_default();
        for n in &nodes {
            self.owner.remove(n);
            self.free.insert(*n);
        }
        nodes
    }

    fn free_nodes_of(&mut self, job: JobId, set: &BTreeSet<NodeId>) {
        if let Some(nodes) = self.jobs.get_mut(&job) {
            nodes.retain(|n| !set.contains(n));
            if nodes.is_empty() {
                self.jobs.remove(&job);
            }
        }
        for n in set {
            self.owner.remove(n);
            self.free.insert(*n);
        }
    }
}

/// One job's scheduled EP in absolute time, for [`map_schedule`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduledEp {
    /// The job.
    pub job: JobId,
    /// When its first step starts.
    pub start: Time,
    /// Its scheduled steps.
    pub steps: Vec<Step>,
}

impl ScheduledEp {
    /// Nodes held at `t`.
    pub fn nodes_at(&self, t: Time) -> usize {
        let mut s = self.start;
        for st in &self.steps {
            let e = s.saturating_add(st.duration);
            if t >= s && t < e {
                return st.nodes as usize;
            }
            s = e;
        }
        0
    }

    fn change_points(&self) -> impl Iterator<Item = Time> + '_ {
        let mut t = self.start;
        std::iter::once(self.start).chain(self.steps.iter().map(move |s| {
            t = t.saturating_add(s.duration);
            t
        }))
    }
}

/// The node sets of every job from one change point on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interval {
    /// Where the interval starts (it lasts until the next one's start).
    pub start: Time,
    /// Each job holding nodes, with its nodes in the order it got them.
    pub nodes: BTreeMap<JobId, Vec<NodeId>>,
}

/// RR-7205 Algorithm 1: maps scheduled EPs whose sum never exceeds the pool to node sets over
/// time. At each change point (the union of the EPs' change points, in time order) the jobs that
/// shrink free nodes first — those `choose(job, its nodes, how many to free)` returns, or, when it
/// returns `None`, the default of [`NodeMap::shrink_default`] — then the jobs that grow take free
/// ones. Interpretation: the report frees before it allocates within one change point, which is
/// what makes C3 hold when one job's shrink pays for another's growth at the same instant.
pub fn map_schedule(
    nodes: impl IntoIterator<Item = NodeId>,
    eps: &[ScheduledEp],
    mut choose: impl FnMut(JobId, &[NodeId], usize) -> Option<Vec<NodeId>>,
) -> Result<Vec<Interval>, NodeMapError> {
    let mut map = NodeMap::new(nodes)?;
    let times: BTreeSet<Time> = eps.iter().flat_map(ScheduledEp::change_points).collect();
    let mut out = Vec::with_capacity(times.len());
    for t in times {
        for ep in eps {
            let (held, want) = (map.nodes_of(ep.job).len(), ep.nodes_at(t));
            if want < held {
                match choose(ep.job, map.nodes_of(ep.job), held - want) {
                    Some(release) => map.shrink_chosen(ep.job, want, &release)?,
                    None => {
                        map.shrink_default(ep.job, want)?;
                    }
                }
            }
        }
        for ep in eps {
            let want = ep.nodes_at(t);
            if want > map.nodes_of(ep.job).len() {
                map.grow(ep.job, want)?;
            }
        }
        let nodes = map
            .jobs()
            .into_iter()
            .map(|j| (j, map.nodes_of(j).to_vec()))
            .collect();
        out.push(Interval { start: t, nodes });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: JobId = JobId(1);
    const B: JobId = JobId(2);

    #[test]
    fn grow_takes_free_nodes_and_default_shrink_keeps_the_first() {
        let mut m = NodeMap::new(0..6).unwrap();
        assert_eq!(m.grow(A, 2).unwrap(), vec![0, 1]);
        assert_eq!(m.grow(B, 1).unwrap(), vec![2]);
        assert_eq!(m.grow(A, 4).unwrap(), vec![3, 4]);
        assert_eq!(m.nodes_of(A), &[0, 1, 3, 4]);
        assert_eq!(m.default_release(A, 1).unwrap(), vec![4, 3, 1]);
        assert_eq!(m.shrink_default(A, 1).unwrap(), vec![4, 3, 1]);
        assert_eq!(m.nodes_of(A), &[0]);
        assert_eq!(m.free_nodes().collect::<Vec<_>>(), vec![1, 3, 4, 5]);
        assert_eq!(m.release_all(A), vec![0]);
        assert_eq!(m.free_count(), 5);
    }

    #[test]
    fn the_job_chooses_what_it_frees_within_c4() {
        let mut m = NodeMap::new([10, 11, 12, 13]).unwrap();
        m.grow(A, 3).unwrap();
        m.grow(B, 1).unwrap();
        let before = m.clone();
        assert_eq!(
            m.shrink_chosen(A, 1, &[13, 10]),
            Err(NodeMapError::NotHeld { job: A, node: 13 })
        );
        assert_eq!(
            m.shrink_chosen(A, 1, &[11, 11]),
            Err(NodeMapError::Repeated { job: A, node: 11 })
        );
        assert_eq!(
            m.shrink_chosen(A, 1, &[11]),
            Err(NodeMapError::WrongCount {
                job: A,
                expected: 2,
                given: 1
            })
        );
        assert_eq!(
            m.grow(A, 5),
            Err(NodeMapError::NotEnoughFree {
                job: A,
                wanted: 2,
                free: 0
            })
        );
        assert_eq!(m, before, "refused operations change nothing");
        // The job may even give up its first node: its choice.
        m.shrink_chosen(A, 1, &[10, 12]).unwrap();
        assert_eq!(m.nodes_of(A), &[11]);
        assert_eq!(m.owner(10), None);
        assert_eq!(m.owner(13), Some(B));
    }

    #[test]
    fn claim_restores_a_job_in_its_order_and_refuses_taken_nodes() {
        let mut m = NodeMap::new(0..6).unwrap();
        m.claim(JobId(1), &[4, 1]).unwrap();
        assert_eq!(m.nodes_of(JobId(1)), &[4, 1]);
        assert_eq!(m.free_count(), 4);
        // The first node stays the driver's: the default shrink frees the later one.
        assert_eq!(m.shrink_default(JobId(1), 1).unwrap(), vec![1]);
        assert_eq!(
            m.claim(JobId(2), &[4]),
            Err(NodeMapError::NotFree {
                job: JobId(2),
                node: 4
            })
        );
        assert_eq!(
            m.claim(JobId(2), &[9]),
            Err(NodeMapError::NotFree {
                job: JobId(2),
                node: 9
            })
        );
        assert_eq!(
            m.claim(JobId(2), &[2, 2]),
            Err(NodeMapError::Repeated {
                job: JobId(2),
                node: 2
            })
        );
        assert_eq!(m.free_count(), 5);
    }

    #[test]
    fn wrong_directions_and_unknown_jobs() {
        let mut m = NodeMap::new(0..2).unwrap();
        assert_eq!(m.shrink_default(A, 0), Err(NodeMapError::UnknownJob(A)));
        m.grow(A, 2).unwrap();
        assert!(matches!(
            m.grow(A, 1),
            Err(NodeMapError::WrongDirection { .. })
        ));
        assert!(matches!(
            m.shrink_default(A, 3),
            Err(NodeMapError::WrongDirection { .. })
        ));
        assert_eq!(NodeMap::new([1, 1]), Err(NodeMapError::DuplicateNode(1)));
        // Shrinking to zero frees everything, the first node last.
        assert_eq!(m.shrink_default(A, 0).unwrap(), vec![1, 0]);
        assert!(m.jobs().is_empty());
    }

    #[test]
    fn algorithm_1_frees_before_it_allocates() {
        // 4 nodes. A: 2 → 4 → 1; B: 2 then ends when A grows, starts again on A's shrink.
        let eps = [
            ScheduledEp {
                job: A,
                start: 0,
                steps: vec![Step::new(10, 2), Step::new(10, 4), Step::new(10, 1)],
            },
            ScheduledEp {
                job: B,
                start: 0,
                steps: vec![Step::new(10, 2)],
            },
            ScheduledEp {
                job: JobId(3),
                start: 20,
                steps: vec![Step::new(5, 3)],
            },
        ];
        // A frees what it likes at 20: keep node 3 (its last one), not its first. At its end
        // (30) it names nothing and the default frees its last node.
        let out = map_schedule(0..4, &eps, |job, nodes, k| {
            (job == A && k < nodes.len())
                .then(|| nodes.iter().copied().filter(|&n| n != 3).take(k).collect())
        })
        .unwrap();
        let at = |t: Time| out.iter().find(|i| i.start == t).unwrap();
        assert_eq!(at(0).nodes[&A], vec![0, 1]);
        assert_eq!(at(0).nodes[&B], vec![2, 3]);
        assert_eq!(at(10).nodes[&A], vec![0, 1, 2, 3]);
        assert!(!at(10).nodes.contains_key(&B));
        assert_eq!(at(20).nodes[&A], vec![3]);
        assert_eq!(at(20).nodes[&JobId(3)], vec![0, 1, 2]);
        assert!(at(30).nodes.is_empty());
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        #[derive(Clone, Debug)]
        enum Op {
            Grow(u64, usize),
            ShrinkChosen(u64, usize, Vec<usize>),
            ShrinkDefault(u64, usize),
            ReleaseAll(u64),
        }

        fn op() -> impl Strategy<Value = Op> {
            let job = 0u64..4;
            prop_oneof![
                (job.clone(), 0usize..8).prop_map(|(j, c)| Op::Grow(j, c)),
                (
                    job.clone(),
                    0usize..8,
                    prop::collection::vec(0usize..10, 0..8)
                )
                    .prop_map(|(j, c, pick)| Op::ShrinkChosen(j, c, pick)),
                (job.clone(), 0usize..8).prop_map(|(j, c)| Op::ShrinkDefault(j, c)),
                job.prop_map(Op::ReleaseAll),
            ]
        }

        /// C3 and the bookkeeping: free and held nodes partition the pool, owners agree.
        fn check(m: &NodeMap, pool: usize) -> Result<(), TestCaseError> {
            let mut seen = BTreeSet::new();
            for n in m.free_nodes() {
                prop_assert!(seen.insert(n));
                prop_assert_eq!(m.owner(n), None);
            }
            for j in m.jobs() {
                prop_assert!(!m.nodes_of(j).is_empty());
                for &n in m.nodes_of(j) {
                    prop_assert!(seen.insert(n), "node {} twice", n);
                    prop_assert_eq!(m.owner(n), Some(j));
                }
            }
            prop_assert_eq!(seen.len(), pool);
            Ok(())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(500))]

            #[test]
            fn random_operations_keep_c2_c3_c4(pool in 1usize..12, ops in prop::collection::vec(op(), 1..40)) {
                let mut m = NodeMap::new(0..pool as NodeId).unwrap();
                for op in ops {
                    let before = m.clone();
                    match op {
                        Op::Grow(j, c) => match m.grow(JobId(j), c) {
                            Ok(added) => {
                                prop_assert_eq!(m.nodes_of(JobId(j)).len(), c.max(before.nodes_of(JobId(j)).len()));
                                prop_assert!(m.nodes_of(JobId(j)).starts_with(before.nodes_of(JobId(j))));
                                prop_assert!(added.iter().all(|n| before.owner(*n).is_none()));
                            }
                            Err(_) => prop_assert_eq!(&m, &before),
                        },
                        Op::ShrinkChosen(j, c, pick) => {
                            let held = before.nodes_of(JobId(j)).to_vec();
                            // Indices past the job's nodes name other nodes: must be refused.
                            let release: Vec<NodeId> =
                                pick.iter().map(|&i| held.get(i).copied().unwrap_or(100 + i as NodeId)).collect();
                            match m.shrink_chosen(JobId(j), c, &release) {
                                Ok(()) => {
                                    prop_assert_eq!(m.nodes_of(JobId(j)).len(), c);
                                    prop_assert_eq!(release.len(), held.len() - c);
                                    prop_assert!(release.iter().all(|n| held.contains(n) && m.owner(*n).is_none()));
                                }
                                Err(_) => prop_assert_eq!(&m, &before),
                            }
                        }
                        Op::ShrinkDefault(j, c) => match m.shrink_default(JobId(j), c) {
                            Ok(freed) => {
                                let held = before.nodes_of(JobId(j));
                                prop_assert_eq!(m.nodes_of(JobId(j)), &held[..c]);
                                prop_assert_eq!(freed.len(), held.len() - c);
                                if c > 0 {
                                    prop_assert_eq!(m.nodes_of(JobId(j))[0], held[0], "the first node stays");
                                }
                            }
                            Err(_) => prop_assert_eq!(&m, &before),
                        },
                        Op::ReleaseAll(j) => {
                            let freed = m.release_all(JobId(j));
                            prop_assert_eq!(freed.as_slice(), before.nodes_of(JobId(j)));
                        }
                    }
                    check(&m, pool)?;
                }
            }

            /// Algorithm 1 on random feasible schedules: each job holds exactly its EP's count in
            /// every interval, no node twice, and the default never takes a job's first node
            /// while it keeps any.
            #[test]
            fn algorithm_1_maps_every_feasible_schedule(
                pool in 1u32..10,
                lens in prop::collection::vec(1u64..5, 1..6),
                seeds in prop::collection::vec(prop::collection::vec(0u32..10, 4), 6),
            ) {
                // counts[i][j]: job j's nodes in interval i, cut so the interval fits the pool.
                let mut counts = Vec::new();
                for (i, _) in lens.iter().enumerate() {
                    let mut left = pool;
                    let row: Vec<u32> = seeds[i].iter().map(|&x| { let c = x.min(left); left -= c; c }).collect();
                    counts.push(row);
                }
                let eps: Vec<ScheduledEp> = (0..4)
                    .map(|j| ScheduledEp {
                        job: JobId(j as u64),
                        start: 0,
                        steps: lens.iter().zip(&counts).map(|(&d, row)| Step::new(d, row[j])).collect(),
                    })
                    .collect();
                let out = map_schedule(0..pool, &eps, |_, _, _| None).unwrap();
                let mut first: HashMap<JobId, NodeId> = HashMap::new();
                for iv in &out {
                    let mut seen = BTreeSet::new();
                    for ep in &eps {
                        let held = iv.nodes.get(&ep.job).map_or(&[][..], Vec::as_slice);
                        prop_assert_eq!(held.len(), ep.nodes_at(iv.start));
                        for n in held {
                            prop_assert!(*n < pool && seen.insert(*n));
                        }
                        match held.first() {
                            Some(f) => {
                                let kept = *first.entry(ep.job).or_insert(*f);
                                prop_assert_eq!(kept, *f, "job {} lost its first node", ep.job);
                            }
                            None => {
                                first.remove(&ep.job);
                            }
                        }
                    }
                }
            }
        }
    }
}
