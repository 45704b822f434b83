//! What Slurm users ask for besides nodes (`-n`, `-c`, `--ntasks-per-node`, `--mem`,
//! `--mem-per-cpu`, `--exclusive`), and how it maps onto esched's whole nodes.
//!
//! esched allocates whole nodes, so these options only decide how many: a pool says how many
//! CPUs and how much memory each of its nodes has (`cpus_per_node`, `mem_per_node` in batchd's
//! config), and [`Resources::nodes`] gives the fewest nodes that hold the request. A request
//! that no node of the pool can hold (a task wider than a node, more memory than a node has)
//! is refused; `--exclusive` is what every job gets anyway.

use serde::{Deserialize, Serialize};

/// The per-task and per-node figures of a submission (all optional, as in sbatch).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resources {
    /// The node count given with them (`-N`), if any: the job gets at least that many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u32>,
    /// Tasks (`-n/--ntasks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ntasks: Option<u32>,
    /// CPUs per task (`-c/--cpus-per-task`; 1 when not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus_per_task: Option<u32>,
    /// Tasks on each node (`--ntasks-per-node`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ntasks_per_node: Option<u32>,
    /// Memory per node in MiB (`--mem`; 0: all of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_per_node: Option<u64>,
    /// Memory per CPU in MiB (`--mem-per-cpu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_per_cpu: Option<u64>,
    /// `--exclusive`: nodes are never shared here, so it changes nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exclusive: bool,
}

/// What one node of a pool has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeSize {
    /// CPUs per node.
    pub cpus: u32,
    /// Memory per node in MiB; `None`: not configured (no memory request is refused).
    pub mem: Option<u64>,
}

impl Resources {
    /// Whether nothing is asked for beyond the node count (`--exclusive` alone asks nothing).
    pub fn is_empty(&self) -> bool {
        *self == Resources::default()
            || *self
                == Resources {
                    exclusive: true,
                    ..Resources::default()
                }
    }

    /// The node count of a job asking `self` with `-N nodes` (if given) on nodes of `size`:
    /// the tasks a node holds are bounded by its CPUs (`cpus / cpus_per_task`), by
    /// `--ntasks-per-node`, and by its memory over `--mem-per-cpu`; the job gets enough nodes
    /// for `-n` tasks, and at least `-N`. The error says why no node count fits.
    pub fn node_count(&self, size: NodeSize) -> Result<u32, String> {
        self.nodes_for(self.nodes, size)
    }

    /// [`Resources::node_count`] with `nodes` as the `-N` given.
    pub fn nodes_for(&self, nodes: Option<u32>, size: NodeSize) -> Result<u32, String> {
        if self.mem_per_node.is_some() && self.mem_per_cpu.is_some() {
            return Err("--mem and --mem-per-cpu exclude each other".into());
        }
        let cpt = self.cpus_per_task.unwrap_or(1).max(1);
        if cpt > size.cpus {
            return Err(format!(
                "{cpt} CPUs per task, but a node has {} CPUs",
                size.cpus
            ));
        }
        let mut per_node = size.cpus / cpt;
        if let Some(tpn) = self.ntasks_per_node {
            if tpn == 0 || tpn > per_node {
                return Err(format!(
                    "{tpn} tasks per node of {cpt} CPUs each, but a node has {} CPUs",
                    size.cpus
                ));
            }
            per_node = tpn;
        }
        if let (Some(mem), Some(want)) = (size.mem, self.mem_per_node) {
            if want > mem {
                return Err(format!("{want} MiB per node, but a node has {mem} MiB"));
            }
        }
        if let (Some(mem), Some(per_cpu)) = (size.mem, self.mem_per_cpu) {
            let per_task = per_cpu.saturating_mul(u64::from(cpt));
            let fit = mem.checked_div(per_task).unwrap_or(u64::MAX);
            if fit == 0 {
                return Err(format!("{per_task} MiB per task, but a node has {mem} MiB"));
            }
            per_node = per_node.min(u32::try_from(fit).unwrap_or(u32::MAX));
        }
        // Without -n, `--ntasks-per-node` puts that many tasks on each of the -N nodes.
        let for_tasks = self.ntasks.map_or(1, |n| n.div_ceil(per_node));
        match nodes {
            Some(n) if n < for_tasks => Err(format!(
                "{} tasks need {for_tasks} nodes ({per_node} per node), but -N asks for {n}",
                self.ntasks.unwrap_or(0)
            )),
            Some(n) => Ok(n),
            None => Ok(for_tasks.max(1)),
        }
    }
}

/// Parses sbatch's memory sizes: a number with an optional unit `K`, `M` (the default), `G`
/// or `T` (powers of 1024), in MiB; `0` is "all of the node's memory".
pub fn parse_mem(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let n: u64 = t[..digits]
        .parse()
        .map_err(|_| format!("'{s}' is not a size (e.g. 4G, 500M)"))?;
    let kib = match t[digits..].to_ascii_uppercase().as_str() {
        "K" | "KB" => return Ok(n.div_ceil(1024)),
        "" | "M" | "MB" => 1,
        "G" | "GB" => 1024,
        "T" | "TB" => 1024 * 1024,
        other => return Err(format!("unknown unit '{other}' in '{s}' (K, M, G or T)")),
    };
    n.checked_mul(kib)
        .ok_or_else(|| format!("'{s}' is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE: NodeSize = NodeSize {
        cpus: 8,
        mem: Some(16 * 1024),
    };

    fn r(ntasks: Option<u32>, cpt: Option<u32>, tpn: Option<u32>) -> Resources {
        Resources {
            ntasks,
            cpus_per_task: cpt,
            ntasks_per_node: tpn,
            ..Resources::default()
        }
    }

    #[test]
    fn tasks_fill_whole_nodes() {
        assert_eq!(r(Some(8), None, None).nodes_for(None, NODE), Ok(1));
        assert_eq!(r(Some(9), None, None).nodes_for(None, NODE), Ok(2));
        assert_eq!(r(Some(8), Some(4), None).nodes_for(None, NODE), Ok(4));
        assert_eq!(r(Some(8), None, Some(2)).nodes_for(None, NODE), Ok(4));
        assert_eq!(r(Some(2), None, None).nodes_for(Some(3), NODE), Ok(3));
        assert_eq!(r(None, Some(8), None).nodes_for(None, NODE), Ok(1));
        assert!(r(Some(32), None, None).nodes_for(Some(2), NODE).is_err());
        assert!(r(None, Some(9), None).nodes_for(None, NODE).is_err());
        assert!(r(None, Some(4), Some(3)).nodes_for(None, NODE).is_err());
    }

    #[test]
    fn memory_bounds_nodes() {
        let mem = |per_node, per_cpu| Resources {
            ntasks: Some(8),
            mem_per_node: per_node,
            mem_per_cpu: per_cpu,
            ..Resources::default()
        };
        assert_eq!(mem(Some(4096), None).nodes_for(None, NODE), Ok(1));
        assert!(mem(Some(32 * 1024), None).nodes_for(None, NODE).is_err());
        // 4 GiB per CPU: four tasks per 16 GiB node.
        assert_eq!(mem(None, Some(4096)).nodes_for(None, NODE), Ok(2));
        assert!(mem(None, Some(17 * 1024)).nodes_for(None, NODE).is_err());
        assert!(mem(Some(1), Some(1)).nodes_for(None, NODE).is_err());
        // No memory configured: nothing to refuse.
        let open = NodeSize { cpus: 8, mem: None };
        assert_eq!(mem(Some(1 << 30), None).nodes_for(None, open), Ok(1));
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_mem("4G"), Ok(4096));
        assert_eq!(parse_mem("500"), Ok(500));
        assert_eq!(parse_mem("500m"), Ok(500));
        assert_eq!(parse_mem("1T"), Ok(1024 * 1024));
        assert_eq!(parse_mem("1536K"), Ok(2));
        assert_eq!(parse_mem("0"), Ok(0));
        assert!(parse_mem("4X").is_err() && parse_mem("G").is_err() && parse_mem("").is_err());
    }
}
