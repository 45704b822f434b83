//! The rules of a submission: a job's size from its resources, its check against the cluster,
//! its node range clipped to the pools, and the records it makes with their ids.

use batch_proto::resources::NodeSize;
use batch_proto::{Dependency, ErrorKind, ErrorReply, JobShape, JobSpec};

use super::Core;
use crate::record::JobRecord;

/// Who submits: the owner of the records a submission makes.
#[derive(Clone, Copy, Debug)]
pub struct Owner<'a> {
    /// Uid.
    pub uid: u32,
    /// Gid.
    pub gid: u32,
    /// User name.
    pub user: &'a str,
}

impl Core {
    /// Checks `spec` against the cluster: pool, size, dependencies.
    pub fn check_against(&self, spec: &JobSpec) -> Result<(), ErrorReply> {
        let invalid = |m: String| ErrorReply::new(ErrorKind::InvalidSpec, m);
        // A co-allocated job's components may go to different pools: each must fit in one,
        // and all of them in the whole cluster.
        let need = match &spec.shape {
            JobShape::CoAllocated { components, .. } => {
                let total: u64 = self.pools.iter().map(|p| u64::from(p.pool.nodes)).sum();
                let want: u64 = components.iter().map(|&n| u64::from(n)).sum();
                if want > total {
                    return Err(invalid(format!(
                        "Requested node configuration is not available: {want} nodes in all, the pools have {total}"
                    )));
                }
                components.iter().copied().max().unwrap_or(0)
            }
            // A moldable job needs room for its smallest configuration only: a policy drops
            // the configurations no pool can hold.
            shape => shape.least_nodes(),
        };
        match &spec.pool {
            Some(name) => {
                let Some(i) = self.pool_index(name) else {
                    let names: Vec<&str> =
                        self.pools.iter().map(|p| p.pool.name.as_str()).collect();
                    return Err(invalid(format!(
                        "invalid pool `{name}` (pools: {})",
                        names.join(", ")
                    )));
                };
                let nodes = self.pools[i].pool.nodes;
                if need > nodes {
                    return Err(invalid(format!(
                        "Requested node configuration is not available: {need} nodes, pool {name} has {nodes}"
                    )));
                }
            }
            None => {
                let max = self.pools.iter().map(|p| p.pool.nodes).max().unwrap_or(0);
                if need > max {
                    return Err(invalid(format!(
                        "Requested node configuration is not available: {need} nodes, the largest pool has {max}"
                    )));
                }
            }
        }
        for d in &spec.dependencies {
            if let Dependency::On { job, .. } = d {
                if self.state_of(*job).is_none() {
                    return Err(invalid(format!(
                        "Job dependency problem: job {job} does not exist"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Clips a moldable job's `--nodes-range` to the largest pool it may run in (its own, or
    /// the largest of all): as Slurm clips a node range to what the partition holds, since
    /// node counts no pool has could never be chosen, and a policy would weigh each of them at
    /// every fit. A range wholly beyond the pools is left alone ([`Core::check_against`]
    /// judged the job by its smallest count).
    pub fn clip_to_pools(&self, spec: &mut JobSpec) {
        let largest = match &spec.pool {
            Some(name) => self.pool_index(name).map(|i| self.pools[i].pool.nodes),
            None => self.pools.iter().map(|p| p.pool.nodes).max(),
        };
        if let (JobShape::Moldable { model: Some(m), .. }, Some(largest)) =
            (&mut spec.shape, largest)
        {
            if m.max_nodes > largest && m.min_nodes <= largest {
                m.max_nodes = largest;
            }
        }
    }

    /// The id the next submission gets (what `--test-only` plans with; nothing is taken).
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// Takes `n` consecutive ids for new jobs; returns the first.
    fn take_ids(&mut self, n: u64) -> u64 {
        let first = self.next_id;
        self.next_id += n;
        first
    }

    /// The records a submission of `spec` by `owner` at `now` makes, ids taken: one job, or
    /// one per task of a job array, each an ordinary pending job that knows its array (the
    /// array's id is its first task's job id, as in Slurm). They are not in the state yet:
    /// they are inserted once stored.
    pub fn submitted_records(
        &mut self,
        owner: Owner<'_>,
        mut spec: JobSpec,
        now: u64,
    ) -> Vec<JobRecord> {
        let made = |id, spec| JobRecord::submitted(id, owner.uid, owner.gid, owner.user, spec, now);
        let Some(array) = spec.array.take() else {
            let id = self.take_ids(1);
            return vec![made(id, spec)];
        };
        let first = self.take_ids(array.indices.len() as u64);
        array
            .indices
            .iter()
            .zip(first..)
            .map(|(&index, id)| {
                let mut task = spec.clone();
                task.array_task = Some(Box::new(array.task(first, index)));
                made(id, task)
            })
            .collect()
    }
}

/// Sets a rigid job's node count from its `-n/-c/--mem...` (batch_proto::resources) with the
/// node size of its pool; without `-p`, of every pool that can hold it, the largest count, so
/// that whichever pool the policy picks, the job has enough. No pool can hold it: refused with
/// Slurm's words and the reason. `pools` are the configured pools' names and node sizes.
pub fn size_from_resources<'a>(
    spec: &mut JobSpec,
    pools: impl IntoIterator<Item = (&'a str, NodeSize)>,
) -> Result<(), String> {
    let Some(r) = spec.resources.as_ref().filter(|r| !r.is_empty()) else {
        return Ok(());
    };
    let JobShape::Rigid { nodes, .. } = &mut spec.shape else {
        return Ok(());
    };
    let mut counts = pools
        .into_iter()
        .filter(|(name, _)| spec.pool.as_ref().is_none_or(|p| p == name))
        .map(|(_, size)| r.node_count(size));
    let Some(first) = counts.next() else {
        // An unknown pool: check_against says so.
        return Ok(());
    };
    let best = counts.fold(first, |a, b| match (a, b) {
        (Ok(a), Ok(b)) => Ok(a.max(b)),
        (Ok(a), Err(_)) | (Err(_), Ok(a)) => Ok(a),
        (Err(e), Err(_)) => Err(e),
    });
    *nodes = best.map_err(|why| format!("Requested node configuration is not available: {why}"))?;
    Ok(())
}
