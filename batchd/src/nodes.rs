//! Node states: DOWN and DRAIN set by an administrator (`econtrol update NodeName=…`) or by
//! the health check of a pool of hosts, kept in the state directory's `node_state.json` so
//! that they outlive a restart, as Slurm keeps its `node_state` file.

use std::path::Path;
use std::sync::Arc;

use batch_proto::NodeCondition;
use serde::{Deserialize, Serialize};

use crate::daemon::Daemon;
use crate::launch::{now_ms, read_json, write_json};

/// The file under the state directory.
pub const FILE: &str = "node_state.json";

/// One node out of service, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Saved {
    node: String,
    #[serde(flatten)]
    condition: NodeCondition,
}

/// The stored node states (none when the file is missing). An unreadable file is an error:
/// a node an administrator took out of service must not silently come back at a restart.
pub fn load(state_dir: &Path) -> Result<Vec<(String, NodeCondition)>, String> {
    let path = state_dir.join(FILE);
    match read_json::<Vec<Saved>>(&path) {
        Ok(v) => Ok(v
            .unwrap_or_default()
            .into_iter()
            .map(|s| (s.node, s.condition))
            .collect()),
        Err(e) => Err(format!(
            "cannot read the node states in {}: {e} (fix or remove the file)",
            path.display()
        )),
    }
}

fn save(state_dir: &Path, nodes: Vec<(String, NodeCondition)>) -> std::io::Result<()> {
    let saved: Vec<Saved> = nodes
        .into_iter()
        .map(|(node, condition)| Saved { node, condition })
        .collect();
    write_json(&state_dir.join(FILE), &saved)
}

/// What a node is set to.
#[derive(Clone, Debug)]
pub enum Change {
    /// DOWN (`true`) or DRAIN, with the reason and who set it.
    Out {
        /// DOWN rather than DRAIN.
        down: bool,
        /// Why.
        reason: String,
        /// Who says so.
        user: String,
    },
    /// Back in service from DOWN or DRAIN.
    Resume,
    /// Back in service from DRAIN only.
    Undrain,
}

/// Applies `change` to every node of `names` (all known, or nothing is changed), stores the
/// new states and asks for a policy run. Returns the running jobs that ran on a node set
/// DOWN, for the caller to stop (`crate::hosts::stop_job`): their end is NODE_FAIL, or a
/// requeue.
pub async fn set(d: &Arc<Daemon>, names: &[String], change: Change) -> Result<Vec<u64>, String> {
    let now = now_ms();
    let (store, stop, freed, saved) = {
        let mut core = d.core();
        if let Some(unknown) = names.iter().find(|n| core.find_node(n).is_none()) {
            return Err(format!("Invalid node name specified: {unknown}"));
        }
        let mut store = Vec::new();
        let mut stop = Vec::new();
        let mut freed = false;
        for name in names {
            let current = core
                .find_node(name)
                .and_then(|(p, i)| core.pools()[p].condition(i).cloned());
            let new = match (&change, &current) {
                // scontrol: DRAIN on a DOWN node leaves it down, with the new reason.
                (Change::Out { down, reason, user }, cur) => Some(NodeCondition {
                    down: *down || cur.as_ref().is_some_and(|c| c.down),
                    reason: reason.clone(),
                    user: user.clone(),
                    // A node already out keeps the time it went out, as sinfo shows it.
                    since: cur.as_ref().map_or(now, |c| c.since),
                }),
                (Change::Undrain, Some(c)) if c.down => continue,
                (Change::Resume | Change::Undrain, None) => continue,
                (Change::Resume | Change::Undrain, Some(_)) => None,
            };
            let c = core.set_node_condition(name, new)?;
            store.extend(c.store);
            stop.extend(c.stop);
            freed |= c.freed;
        }
        // Written under the lock, so that two changes are saved in the order they were made.
        let saved = save(&d.state_dir, core.node_conditions());
        (store, stop, freed, saved)
    };
    if let Err(e) = saved {
        tracing::error!("cannot store the node states: {e}");
    }
    if let Err(e) = d.store.commit_all(store).await {
        tracing::error!("cannot store the jobs stopped for a node: {e}");
    }
    for id in &stop {
        tracing::warn!(job = id, "the job is stopped: a node of it is down");
    }
    if freed {
        d.nodes_freed();
    }
    d.reschedule();
    Ok(stop)
}
