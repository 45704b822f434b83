//! CooRM launcher sessions, the daemon's side (Klein & Pérez, *An RMS Architecture for
//! Efficiently Supporting Complex-Moldable Applications*, HPCC 2011, §III; docs/coorm.md): the
//! plan's views pushed to launchers, a session's start, its end at its duration or at `done`
//! (after the fair-start delay), and the pools' properties and links it may pull. The pure
//! part (the request the policy sees, the multi-pool start, CAPs) is `core::coorm`; the
//! connection is `server/session.rs`.
//!
//! Architecture invariant (batchd's): no policy logic. The views come from the policy's plan
//! (`Plan::views`); batchd only stores and forwards them.

use std::sync::Arc;

use batch_proto::{
    Change, ChangeNotify, ChangeType, JobState, PoolLink, PoolProperties, Response, SessionEnded,
    StartNotify, StartedPool,
};
use sched_core::{JobId, Plan};

use crate::config::Config;
use crate::daemon::Daemon;
use crate::launch::now_ms;
use crate::record::JobRecord;

/// Records the views of `plan` (made at `now`) for `eview` and pushes them to the sessions
/// whose view changed (`Sessions::notify`).
pub fn publish(d: &Daemon, now: u64, plan: &Plan) {
    let (mut views, names) = {
        let core = d.core();
        let names: Vec<String> = core
            .pools()
            .iter()
            .map(|p| p.pool.name.to_string())
            .collect();
        (crate::core::coorm::views_of(&core, now, plan), names)
    };
    d.sessions.notify(&mut views, &names, now);
    d.core().set_views(views);
}

/// Session job `rec` has just started: its launcher gets `startNotify`, and a timer ends the
/// job at its duration unless `done` comes first (§III-A: "the RMS shall kill an application
/// exceeding its allocation").
pub fn started(d: &Arc<Daemon>, rec: JobRecord) {
    let id = rec.id;
    let start = rec.start.unwrap_or_else(now_ms);
    let end = start.saturating_add(rec.time_limit());
    let pools = {
        let core = d.core();
        let mut out = Vec::new();
        if let Some(run) = core.job(id).and_then(|a| a.run.as_ref()) {
            for &(p, _) in &run.components {
                let pool = &core.pools()[p];
                out.push(StartedPool {
                    pool: pool.pool.name.to_string(),
                    nodes: pool.names(pool.map.nodes_of(JobId(id))),
                });
            }
        }
        out
    };
    tracing::info!(job = id, nodes = ?rec.node_list, "launcher session started");
    d.store.write(rec);
    d.sessions.push(
        id,
        Response::StartNotify(StartNotify {
            job: id,
            start,
            end,
            pools,
        }),
    );
    end_at_duration(d, id, start, end);
}

/// Ends running session job `id` (started at `start`) at `end` unless `done` or a cancel
/// came first (§III-A: "the RMS shall kill an application exceeding its allocation").
fn end_at_duration(d: &Arc<Daemon>, id: u64, start: u64, end: u64) {
    let d = Arc::clone(d);
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(
            end.saturating_sub(now_ms()),
        ))
        .await;
        let running = d
            .core()
            .jobs()
            .get(&id)
            .is_some_and(|a| a.rec.state == JobState::Running && a.rec.start == Some(start));
        if running {
            tracing::info!(job = id, "launcher session exceeded its duration; killed");
            end_job(
                &d,
                id,
                JobState::Timeout,
                "the session exceeded its requested duration",
            )
            .await;
        }
    });
}

/// Session job `id`, started before batchd's restart, is re-attached to its nodes: its
/// launcher's connection is gone, so, as when a launcher disconnects after its start, the
/// job keeps its nodes until its duration ends (TIMEOUT). One that had said `done` (COMPLETING,
/// its time limit cut to the fair-start delay's end) ends COMPLETED then, its end at the
/// `done`.
pub fn adopted(d: &Arc<Daemon>, id: u64) {
    let Some((state, start, limit)) = d
        .core()
        .jobs()
        .get(&id)
        .map(|a| (a.rec.state, a.rec.start.unwrap_or(0), a.rec.time_limit()))
    else {
        return;
    };
    let end = start.saturating_add(limit);
    if state == JobState::Running {
        tracing::info!(
            job = id,
            "launcher session's job re-attached; it ends at its duration"
        );
        return end_at_duration(d, id, start, end);
    }
    let fair_start = d.settings().config.coorm.fair_start_ms;
    let done = end.saturating_sub(fair_start).max(start);
    let d = Arc::clone(d);
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(
            end.saturating_sub(now_ms()),
        ))
        .await;
        complete(&d, id, done).await;
    });
}

/// Ends session job `id`, done at `at`, COMPLETED, once its fair-start delay is over.
async fn complete(d: &Arc<Daemon>, id: u64, at: u64) {
    let rec = d.core().finish(id, |r| {
        r.state = JobState::Completed;
        r.end = Some(at);
        r.exit_code = Some(0);
        r.signal = Some(0);
    });
    if let Some(rec) = rec {
        tracing::info!(job = id, "launcher session done; nodes freed");
        d.nodes_freed();
        if let Err(e) = d.store.commit(rec).await {
            tracing::error!(job = id, "cannot store the end of the session's job: {e}");
        }
    }
}

/// Ends session job `id` now (running or pending) in `state`, frees its nodes and tells its
/// launcher why.
pub async fn end_job(d: &Arc<Daemon>, id: u64, state: JobState, reason: &str) {
    let rec = d.core().finish(id, |r| {
        r.state = state;
        r.end = Some(now_ms());
        r.detail = Some(reason.to_string());
    });
    let Some(rec) = rec else { return };
    d.sessions.push(
        id,
        Response::SessionEnded(SessionEnded {
            job: id,
            state: state.name().to_string(),
            reason: reason.to_string(),
        }),
    );
    d.nodes_freed();
    if let Err(e) = d.store.commit(rec).await {
        tracing::error!(job = id, "cannot store the end of the session's job: {e}");
    }
}

/// `done` from the launcher of running job `id`: the job is COMPLETING and keeps its nodes for
/// the fair-start delay (§III-C), then ends COMPLETED with its end at the `done`. Its time
/// limit is cut to end there, so that the policy sees the nodes busy exactly that long.
pub fn done_running(d: &Arc<Daemon>, id: u64, fair_start_ms: u64) {
    let at = now_ms();
    let Some(rec) = crate::core::coorm::done(&mut d.core(), id, at, fair_start_ms) else {
        return;
    };
    d.store.write(rec);
    // The policy must learn that the job now ends sooner.
    d.reschedule();
    let d = Arc::clone(d);
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(fair_start_ms)).await;
        complete(&d, id, at).await;
    });
}

/// Tells the session of `id` that its job ended without its `done` (e.g. `ecancel`).
pub fn tell_ended(d: &Daemon, id: u64, state: JobState, reason: &str) {
    d.sessions.push(
        id,
        Response::SessionEnded(SessionEnded {
            job: id,
            state: state.name().to_string(),
            reason: reason.to_string(),
        }),
    );
}

/// The config changed from `old` to `new` (`Reconfigure`): every waiting session whose links
/// (`listInterClusterInfo`) changed gets a `changeNotify` of type `interinfo` for the pools at
/// an end of a changed link, and pulls them again (§III-B: "the launcher … pulls the new
/// information"). Pools cannot change without a restart (`Reconfigure` refuses it), so
/// `info` is never due.
pub fn links_changed(d: &Daemon, old: &Config, new: &Config) {
    if old.links == new.links {
        return;
    }
    let now = now_ms();
    d.sessions.push_each(|job, pools| {
        let waiting = d
            .core()
            .jobs()
            .get(&job)
            .is_some_and(|a| a.rec.state == JobState::Pending);
        if !waiting {
            return None;
        }
        let (a, b) = (pool_links(old, pools), pool_links(new, pools));
        let mut names: Vec<String> = Vec::new();
        for l in a
            .iter()
            .filter(|l| !b.contains(l))
            .chain(b.iter().filter(|l| !a.contains(l)))
        {
            for n in [&l.a, &l.b] {
                if !names.contains(n) {
                    names.push(n.clone());
                }
            }
        }
        // Config order, as every other list of the session's pools.
        let order = pool_properties(new, pools);
        let changes: Vec<Change> = order
            .into_iter()
            .filter(|p| names.contains(&p.pool))
            .map(|p| Change {
                pool: p.pool,
                kind: ChangeType::Interinfo,
                cap: None,
            })
            .collect();
        (!changes.is_empty()).then_some(Response::ChangeNotify(ChangeNotify { job, now, changes }))
    });
}

/// The pools of `config` that pass a subscribe filter (indices, config order), or why the
/// filter is wrong.
pub fn filter_pools(config: &Config, f: &batch_proto::SessionFilter) -> Result<Vec<usize>, String> {
    if let Some(n) = f
        .pools
        .iter()
        .find(|n| !config.pools.iter().any(|p| &p.name == *n))
    {
        let known: Vec<&str> = config.pools.iter().map(|p| p.name.as_str()).collect();
        return Err(format!(
            "no pool is called `{n}` (pools: {})",
            known.join(", ")
        ));
    }
    let pools: Vec<usize> = config
        .pools
        .iter()
        .enumerate()
        .filter(|(_, p)| f.pools.is_empty() || f.pools.contains(&p.name))
        .filter(|(_, p)| p.size() >= f.min_nodes)
        .map(|(i, _)| i)
        .collect();
    if pools.is_empty() {
        return Err(format!(
            "no pool passes the filter (at least {} nodes{})",
            f.min_nodes,
            if f.pools.is_empty() {
                String::new()
            } else {
                format!(", among {}", f.pools.join(", "))
            }
        ));
    }
    Ok(pools)
}

/// The paper's CINFOs of `pools`.
pub fn pool_properties(config: &Config, pools: &[usize]) -> Vec<PoolProperties> {
    pools
        .iter()
        .filter_map(|&i| config.pools.get(i))
        .map(|p| PoolProperties {
            pool: p.name.clone(),
            nodes: p.size(),
            speed: p.speed,
        })
        .collect()
}

/// The paper's ICINFO: the configured links whose both ends are among `pools`.
pub fn pool_links(config: &Config, pools: &[usize]) -> Vec<PoolLink> {
    let names: Vec<&str> = pools
        .iter()
        .filter_map(|&i| config.pools.get(i))
        .map(|p| p.name.as_str())
        .collect();
    config
        .links
        .iter()
        .filter(|l| l.pools.iter().all(|n| names.contains(&n.as_str())))
        .map(|l| PoolLink {
            a: l.pools[0].clone(),
            b: l.pools[1].clone(),
            latency_ms: l.latency_ms,
            bandwidth_mbps: l.bandwidth_mbps,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_name_known_pools_and_keep_big_enough_ones() {
        let mut c = Config::embedded();
        c.pools = vec![
            crate::config::PoolConfig {
                hosts: None,
                ssh: None,
                slurm: None,
                name: "a".into(),
                nodes: 4,
                max_time: Default::default(),
                speed: 1.0,
                cpus_per_node: 1,
                mem_per_node: None,
            },
            crate::config::PoolConfig {
                hosts: None,
                ssh: None,
                slurm: None,
                name: "b".into(),
                nodes: 16,
                max_time: Default::default(),
                speed: 1.5,
                cpus_per_node: 1,
                mem_per_node: None,
            },
        ];
        let f = |pools: &[&str], min| batch_proto::SessionFilter {
            pools: pools.iter().map(|s| s.to_string()).collect(),
            min_nodes: min,
        };
        assert_eq!(filter_pools(&c, &f(&[], 0)), Ok(vec![0, 1]));
        assert_eq!(filter_pools(&c, &f(&[], 8)), Ok(vec![1]));
        assert_eq!(filter_pools(&c, &f(&["a"], 0)), Ok(vec![0]));
        assert!(filter_pools(&c, &f(&["a"], 8))
            .unwrap_err()
            .contains("no pool passes"));
        assert!(filter_pools(&c, &f(&["zz"], 0))
            .unwrap_err()
            .contains("`zz`"));
        assert_eq!(pool_properties(&c, &[1])[0].speed, 1.5);
    }
}
