//! The Slurm allocations under the pools of `[pool.slurm]`, followed while batchd runs: what
//! Slurm says of each (its end, its nodes' states) is asked every `poll_interval_ms`, a node
//! Slurm holds as failing goes DOWN with Slurm's reason and comes back when Slurm says so, an
//! allocation that ends (its time limit, or `scancel`) takes its nodes DOWN, and a new one is
//! asked for when jobs wait for the pool. At batchd's stop, an allocation no job runs in is
//! given back; one with jobs running stays with them, for the next batchd to find.

use std::sync::Arc;
use std::time::Duration;

use crate::config::{NoFit, SlurmConfig};
use crate::daemon::Daemon;
use crate::nodes::Change;
use crate::slurm::Allocation;
use crate::sync::lock;

/// Who sets a node DOWN for Slurm, as `einfo -R` shows it.
pub const SLURM_USER: &str = "slurm";

/// Follows every Slurm pool's allocation.
pub fn start_all(d: &Arc<Daemon>) {
    for p in d.settings().config.pools {
        if p.slurm.is_some() {
            tokio::spawn(watch(Arc::clone(d), p.name.clone()));
        }
    }
}

/// The pool's `[pool.slurm]` now; `None` once it is no longer configured.
fn config_of(d: &Daemon, pool: &str) -> Option<(usize, SlurmConfig)> {
    d.settings()
        .config
        .pools
        .iter()
        .enumerate()
        .find(|(_, p)| p.name == pool)
        .and_then(|(i, p)| p.slurm.clone().map(|c| (i, c)))
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| e.to_string())?
}

async fn watch(d: Arc<Daemon>, pool: String) {
    loop {
        let Some((index, cfg)) = config_of(&d, &pool) else {
            return;
        };
        tokio::time::sleep(Duration::from_millis(cfg.poll_interval())).await;
        let held = lock(&d.allocations).get(&pool).cloned();
        let Some(alloc) = held else {
            if cfg.on_no_fit == NoFit::Wait && waiting(&d, &pool) {
                renew(&d, &pool, index, &cfg).await;
            }
            continue;
        };
        let (c, id) = (cfg.clone(), alloc.id);
        let standing = match blocking(move || crate::slurm::standing(&c, id)).await {
            Ok(s) => s,
            Err(e) => {
                // Slurm not answering is not the allocation's end: asked again next time.
                tracing::warn!(pool = %pool, allocation = id, "cannot ask Slurm: {e}");
                continue;
            }
        };
        match standing {
            Some(s) if s.state == "RUNNING" => {
                // `%L` is whole seconds from when squeue ran: an end that moves by less than
                // that is the same end (an administrator's extension moves it by minutes).
                let end = s.left_ms.map(|l| crate::launch::now_ms().saturating_add(l));
                let moved = match (end, alloc.end_ms) {
                    (Some(a), Some(b)) => a.abs_diff(b) > 2_000,
                    (a, b) => a.is_some() != b.is_some(),
                };
                if moved {
                    d.core().set_pool_end(index, end);
                    with_allocation(&d, &pool, |a| a.end_ms = end);
                    d.reschedule();
                }
                let (c, nodes) = (cfg.clone(), s.nodes.clone());
                match blocking(move || crate::slurm::troubled(&c, &nodes)).await {
                    Ok(mut bad) => {
                        // A node lost leaves the allocation (`salloc --no-kill`) for good.
                        for n in alloc.nodes.iter().filter(|n| !s.nodes.contains(n)) {
                            bad.push(crate::slurm::Trouble {
                                node: n.clone(),
                                reason: format!("slurm: node {n} left allocation {id}"),
                            });
                        }
                        nodes_as_slurm_says(&d, &alloc.nodes, &bad).await
                    }
                    Err(e) => tracing::warn!(pool = %pool, "cannot ask Slurm about the nodes: {e}"),
                }
            }
            Some(s) if !crate::slurm::is_over(&s.state) => {
                // Suspended, requeued, configuring: not over, nothing to run on meanwhile.
                tracing::warn!(pool = %pool, allocation = id, state = %s.state, "the pool's Slurm allocation is not running");
            }
            other => ended(&d, &pool, &alloc, other.as_ref()).await,
        }
    }
}

/// Records the pool's allocation (`None`: it has none) in memory and in `slurm.json`.
fn update(d: &Daemon, pool: &str, alloc: Option<Allocation>) {
    let mut held = lock(&d.allocations);
    match alloc {
        Some(a) => {
            held.insert(pool.to_string(), a);
        }
        None => {
            held.remove(pool);
        }
    }
    if let Err(e) = crate::slurm::save(&d.state_dir, &held) {
        tracing::error!("cannot write {}: {e}", crate::slurm::FILE);
    }
}

/// Sets `nodes` DOWN for `reason` and stops the jobs on them (NODE_FAIL, or requeued).
async fn down(d: &Arc<Daemon>, nodes: &[String], reason: &str) {
    let change = Change::Out {
        down: true,
        reason: reason.to_string(),
        user: SLURM_USER.into(),
    };
    match crate::nodes::set(d, nodes, change).await {
        Ok(stop) => {
            // A job in an allocation runs under a supervisor on this machine, whose `srun`
            // passes the stop on to the job's step.
            for id in stop {
                if let Err(e) = crate::jobctl::cancel_in(&d.job_dir(id), id) {
                    tracing::warn!(job = id, "cannot stop the job: {e}");
                }
            }
        }
        Err(e) => tracing::error!("cannot set the nodes DOWN: {e}"),
    }
}

/// Pool `pool`'s allocation `alloc` has ended as `standing` says (`None`: Slurm no longer
/// knows it): the pool holds none any more, its nodes go DOWN and their jobs are stopped.
pub async fn ended(
    d: &Arc<Daemon>,
    pool: &str,
    alloc: &Allocation,
    standing: Option<&crate::slurm::Standing>,
) {
    let id = alloc.id;
    let why = ended_reason(id, standing);
    tracing::warn!(pool = %pool, allocation = id, reason = %why, "the pool's Slurm allocation has ended: its nodes are DOWN");
    // Every node of the pool, those beyond the allocation too, out of service before the
    // allocation is forgotten: no job may start on a node no allocation holds (it would run
    // on batchd's own machine).
    down(d, &alloc.pool_nodes(), &why).await;
    if let Some((index, cfg)) = config_of(d, pool) {
        d.core().set_pool_end(index, Some(crate::launch::now_ms()));
        for sib in &alloc.siblings {
            let (c, sid) = (cfg.clone(), sib.id);
            let _ = blocking(move || crate::slurm::cancel(&c, &sid.to_string())).await;
        }
    }
    update(d, pool, None);
    // COMPLETING says it ends, not why: the reason is made final (CANCELLED, TIMEOUT…) once
    // Slurm has settled it.
    if standing.is_some_and(|s| s.state == "COMPLETING") {
        if let Some((_, cfg)) = config_of(d, pool) {
            tokio::spawn(final_reason(Arc::clone(d), cfg, alloc.clone(), why));
        }
    }
}

/// The nodes' reason for allocation `id`'s end, as Slurm tells it (`None`: it no longer knows
/// the allocation).
fn ended_reason(id: u64, standing: Option<&crate::slurm::Standing>) -> String {
    match standing {
        Some(s) if s.reason.is_empty() || s.reason == "None" => {
            format!("slurm: allocation {id} {}", s.state)
        }
        Some(s) => format!("slurm: allocation {id} {}: {}", s.state, s.reason),
        None => format!("slurm: allocation {id} ended"),
    }
}

/// Waits (a minute at most) for ended allocation `alloc` to leave COMPLETING, then gives its
/// nodes still DOWN for `was` the final state as their reason.
async fn final_reason(d: Arc<Daemon>, cfg: SlurmConfig, alloc: Allocation, was: String) {
    let id = alloc.id;
    for _ in 0..60 {
        tokio::time::sleep(Duration::from_millis(cfg.poll_interval().min(1_000))).await;
        let c = cfg.clone();
        let s = match blocking(move || crate::slurm::standing(&c, id)).await {
            Ok(Some(s)) if s.state == "COMPLETING" => continue,
            Ok(Some(s)) => s,
            _ => return,
        };
        let why = ended_reason(id, Some(&s));
        let still: Vec<String> = {
            let core = d.core();
            alloc
                .nodes
                .iter()
                .filter(|n| {
                    core.find_node(n)
                        .and_then(|(p, i)| core.pools()[p].condition(i).cloned())
                        .is_some_and(|c| c.user == SLURM_USER && c.reason == was)
                })
                .cloned()
                .collect()
        };
        if !still.is_empty() {
            let change = Change::Out {
                down: true,
                reason: why,
                user: SLURM_USER.into(),
            };
            if let Err(e) = crate::nodes::set(&d, &still, change).await {
                tracing::warn!(
                    allocation = id,
                    "cannot give the nodes Slurm's final word: {e}"
                );
            }
        }
        return;
    }
}

/// After a job in pool `pool` ended other than on its own: whether the pool's allocation
/// ended under it (then handled as [`ended`], before the job's end is recorded, so that the
/// job ends as a node failure).
pub async fn check_after_failure(d: &Arc<Daemon>, pool: &str) {
    let held = lock(&d.allocations).get(pool).cloned();
    let (Some(alloc), Some((_, cfg))) = (held, config_of(d, pool)) else {
        return;
    };
    let id = alloc.id;
    match blocking(move || crate::slurm::standing(&cfg, id)).await {
        Ok(Some(s)) if !crate::slurm::is_over(&s.state) => {}
        Ok(s) => {
            // The watch may have seen it meanwhile.
            if lock(&d.allocations).get(pool).is_some_and(|a| a.id == id) {
                ended(d, pool, &alloc, s.as_ref()).await;
            }
        }
        Err(e) => tracing::warn!(pool = %pool, allocation = id, "cannot ask Slurm: {e}"),
    }
}

/// Sets DOWN the nodes Slurm holds as failing, and back in service those it set DOWN that
/// Slurm no longer does.
async fn nodes_as_slurm_says(d: &Arc<Daemon>, nodes: &[String], bad: &[crate::slurm::Trouble]) {
    let set_by_slurm: Vec<(String, String)> = {
        let core = d.core();
        nodes
            .iter()
            .filter_map(|n| {
                let (p, i) = core.find_node(n)?;
                let c = core.pools()[p].condition(i)?;
                (c.user == SLURM_USER).then(|| (n.clone(), c.reason.clone()))
            })
            .collect()
    };
    for t in bad {
        let already = set_by_slurm
            .iter()
            .any(|(n, r)| n == &t.node && r == &t.reason);
        if !already {
            tracing::warn!(node = %t.node, reason = %t.reason, "Slurm says the node fails: DOWN");
            down(d, std::slice::from_ref(&t.node), &t.reason).await;
        }
    }
    for (n, _) in &set_by_slurm {
        if !bad.iter().any(|t| &t.node == n) {
            tracing::info!(node = %n, "Slurm says the node is back: in service");
            if let Err(e) = crate::nodes::set(d, std::slice::from_ref(n), Change::Resume).await {
                tracing::error!(node = %n, "cannot bring the node back: {e}");
            }
        }
    }
}

/// Whether a pending job waits for pool `pool` (it names it, or names no pool).
fn waiting(d: &Daemon, pool: &str) -> bool {
    let now = crate::launch::now_ms();
    let core = d.core();
    let waiting = core
        .pending_with_reasons(now)
        .iter()
        .any(|(r, _)| r.spec.pool.as_deref().is_none_or(|p| p == pool));
    waiting
}

/// Asks Slurm for a new allocation for pool `pool`, whose last one has ended, and puts its
/// nodes, named anew, in service.
async fn renew(d: &Arc<Daemon>, pool: &str, index: usize, cfg: &SlurmConfig) {
    let Some(nodes) = d
        .settings()
        .config
        .pools
        .iter()
        .find(|p| p.name == pool)
        .map(|p| p.nodes)
    else {
        return;
    };
    tracing::info!(pool = %pool, nodes, "jobs wait: asking Slurm for a new allocation");
    let (c, p) = (cfg.clone(), pool.to_string());
    let obtained = blocking(move || {
        let mut a = crate::slurm::allocate(&c, &p, nodes, &[])?;
        match crate::slurm::beyond(&c, &a.nodes, c.grow) {
            Ok(b) => a.beyond = b,
            Err(e) => {
                let _ = crate::slurm::cancel(&c, &a.id.to_string());
                return Err(e);
            }
        }
        Ok(a)
    })
    .await;
    let alloc = match obtained {
        Ok(a) if a.nodes.len() == nodes as usize => a,
        Ok(a) => {
            tracing::error!(pool = %pool, allocation = a.id, "Slurm granted {} nodes, not {nodes}: given back", a.nodes.len());
            let _ = crate::slurm::cancel(cfg, &a.id.to_string());
            return;
        }
        Err(e) => {
            tracing::error!(pool = %pool, "no new allocation: {e}");
            return;
        }
    };
    tracing::info!(pool = %pool, allocation = alloc.id, nodes = ?alloc.nodes, "Slurm allocation granted");
    let old: Vec<String> = {
        let core = d.core();
        let p = &core.pools()[index];
        (0..p.pool.nodes)
            .filter(|&i| p.condition(i).is_some_and(|c| c.user == SLURM_USER))
            .map(|i| p.node_name(i))
            .collect()
    };
    // The nodes the ended allocation's end set DOWN come back under their new names.
    let _ = crate::nodes::set(d, &old, Change::Resume).await;
    {
        let mut core = d.core();
        core.name_hosts(index, alloc.pool_nodes());
        core.set_pool_end(index, alloc.end_ms);
    }
    update(d, pool, Some(alloc));
    d.nodes_freed();
    d.reschedule();
}

/// At batchd's stop: gives back every allocation no job runs in (one with jobs running stays
/// with them, for the next batchd to find).
pub fn give_back_idle(d: &Daemon) {
    let pools = d.settings().config.pools;
    let idle: Vec<(String, u64, SlurmConfig)> = {
        let core = d.core();
        let held = lock(&d.allocations);
        pools
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let cfg = p.slurm.clone()?;
                let a = held.get(&p.name)?;
                let ps = &core.pools()[i];
                let busy = (0..ps.pool.nodes).any(|n| ps.holder(n).is_some());
                (!busy).then(|| (p.name.clone(), a.id, cfg))
            })
            .collect()
    };
    for (pool, id, cfg) in idle {
        match crate::slurm::cancel(&cfg, &id.to_string()) {
            Ok(()) => {
                tracing::info!(pool = %pool, allocation = id, "Slurm allocation given back");
                update(d, &pool, None);
            }
            Err(e) => {
                tracing::warn!(pool = %pool, allocation = id, "cannot give the allocation back: {e}")
            }
        }
    }
}

/// Brings job `id`'s sibling allocations in line with the nodes it holds beyond its pools'
/// allocations: one is asked for the nodes it holds there and no sibling has yet (for the
/// job's remaining time, the PRRTE way: the allocation lives as long as the job may), and a
/// sibling none of whose nodes it holds any more (it shrank, or ended) is given back. An error
/// says which nodes could not be had.
pub async fn settle(d: &Arc<Daemon>, id: u64) -> Result<(), String> {
    let pools: Vec<(String, SlurmConfig)> = d
        .settings()
        .config
        .pools
        .iter()
        .filter_map(|p| p.slurm.clone().map(|c| (p.name.clone(), c)))
        .collect();
    // Every job's end comes here: without a Slurm pool, nothing to settle and no lock to take.
    if pools.is_empty() {
        return Ok(());
    }
    // One at a time: a job's end must not give back what its growth is still being granted.
    let _one = d.settling.lock().await;
    let now = crate::launch::now_ms();
    // The job's nodes per pool, and what is left of its time.
    let (held, left_ms): (Vec<(String, Vec<String>)>, u64) = {
        let core = d.core();
        match core.job(id).filter(|a| a.run.is_some()) {
            Some(a) => {
                let held = core.parts_of(id);
                let end = a
                    .rec
                    .start
                    .unwrap_or(now)
                    .saturating_add(a.rec.time_limit());
                (held, end.saturating_sub(now))
            }
            None => (Vec::new(), 0),
        }
    };
    let mut failed = Vec::new();
    for (pool, cfg) in pools {
        let Some(alloc) = lock(&d.allocations).get(&pool).cloned() else {
            continue;
        };
        let nodes: Vec<String> = held
            .iter()
            .filter(|(p, _)| p == &pool)
            .flat_map(|(_, n)| n.iter().cloned())
            .collect();
        for sib in alloc.siblings.iter().filter(|s| s.job == id) {
            if !sib.nodes.iter().any(|n| nodes.contains(n)) {
                let (c, sid) = (cfg.clone(), sib.id);
                match blocking(move || crate::slurm::cancel(&c, &sid.to_string())).await {
                    Ok(()) => {
                        tracing::info!(job = id, allocation = sid, nodes = ?sib.nodes, "the job let its nodes beyond the allocation go: sibling allocation given back")
                    }
                    Err(e) => tracing::warn!(
                        job = id,
                        allocation = sid,
                        "cannot give the sibling allocation back: {e}"
                    ),
                }
                with_allocation(d, &pool, |a| a.siblings.retain(|s| s.id != sid));
            }
        }
        let missing: Vec<String> = nodes
            .iter()
            .filter(|n| alloc.beyond.contains(n) && alloc.of_node(n, id).is_none())
            .cloned()
            .collect();
        if missing.is_empty() {
            continue;
        }
        tracing::info!(job = id, pool = %pool, nodes = ?missing, "the job grows beyond its pool's allocation: asking Slurm for a sibling allocation");
        let minutes = left_ms.div_ceil(60_000).max(1);
        // One sibling per node: a job that lets one node go gives exactly that node back.
        for node in missing {
            let (c, p, m) = (cfg.clone(), pool.clone(), vec![node.clone()]);
            match blocking(move || crate::slurm::allocate_sibling(&c, &p, id, &m, minutes, 10))
                .await
            {
                Ok(sib) => {
                    tracing::info!(job = id, allocation = sib.id, nodes = ?sib.nodes, minutes, "sibling allocation granted");
                    with_allocation(d, &pool, |a| a.siblings.push(sib));
                }
                Err(e) => failed.push(format!("{node}: {e}")),
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("no sibling allocation for {}", failed.join("; ")))
    }
}

/// Changes pool `pool`'s allocation with `f`, kept in `slurm.json`.
fn with_allocation(d: &Daemon, pool: &str, f: impl FnOnce(&mut Allocation)) {
    let mut held = lock(&d.allocations);
    if let Some(a) = held.get_mut(pool) {
        f(a);
    }
    if let Err(e) = crate::slurm::save(&d.state_dir, &held) {
        tracing::error!("cannot write {}: {e}", crate::slurm::FILE);
    }
}
