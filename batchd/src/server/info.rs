//! `Info`: pools, their nodes and who holds them.

use std::sync::Arc;

use batch_proto::{hostlist, ClusterInfo, JobState, NodeInfo, NodeState, PoolInfo, Response};

use super::Reply;
use crate::daemon::Daemon;

pub fn handle(d: &Arc<Daemon>) -> Reply {
    let policy = d.policy_name();
    let settings = d.settings();
    let size_of = |name: &str| {
        settings
            .config
            .pools
            .iter()
            .find(|p| p.name == name)
            .map_or((1, None), |p| (p.cpus_per_node, p.mem_per_node))
    };
    let core = d.core();
    let pools = core
        .pools()
        .iter()
        .map(|p| {
            let nodes: Vec<NodeInfo> = (0..p.pool.nodes)
                .map(|i| {
                    let job = p.holder(i);
                    NodeInfo {
                        name: p.node_name(i),
                        state: match job {
                            // A pending holder has claimed the node for a later start.
                            Some(j) if core.is_claimed(j) => NodeState::Reserved,
                            Some(_) => NodeState::Allocated,
                            None => NodeState::Idle,
                        },
                        job,
                        condition: p.condition(i).cloned(),
                    }
                })
                .collect();
            let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
            let reserved = nodes
                .iter()
                .filter(|n| n.state == NodeState::Reserved)
                .count() as u32;
            let (cpus_per_node, mem_per_node) = size_of(&p.pool.name);
            PoolInfo {
                cpus_per_node,
                mem_per_node,
                name: p.pool.name.to_string(),
                total: p.pool.nodes,
                max_time: settings
                    .config
                    .pools
                    .iter()
                    .find(|c| c.name == p.pool.name)
                    .and_then(|c| c.max_time.ms()),
                allocated: p.pool.nodes - p.free() - reserved,
                reserved,
                node_list: hostlist::compress(&names),
                nodes,
            }
        })
        .collect();
    let pending = core
        .jobs()
        .values()
        .filter(|a| a.rec.state == JobState::Pending)
        .count() as u64;
    let running = core.jobs().len() as u64 - pending;
    Response::Info(ClusterInfo {
        pools,
        policy,
        pending,
        running,
    })
    .into()
}
