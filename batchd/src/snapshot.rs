//! `Snapshot`: the daemon's state as a snapshot file (`econtrol snapshot`, docs/whatif.md), for
//! a what-if replay outside the daemon (`esim whatif`, `econtrol whatif`).
//!
//! The file is read under one hold of the core's lock, so it is one instant's state: the
//! policy's part of it is [`Core::snapshot`] itself, the very snapshot the scheduler's next pass
//! at that instant would give the policy, so that a replay under the policy in force starts from
//! what the daemon plans with. Around it, what a replay needs besides: every pending job in
//! queue order, held and waiting ones included, with the dependencies still open and the
//! latest plan's expected start, the nodes' states, and the policy with its parameters. Nothing
//! is changed, and no policy runs here: the replay runs in the client's process.

use std::collections::HashMap;
use std::sync::Arc;

use batch_proto::{
    DepKind as ProtoDep, Dependency as ProtoDependency, ErrorKind, ErrorReply, JobSpec, JobState,
    Response, SnapshotRequest,
};
use sched_sim::whatif::{
    format, DepKind, Dependency, Holder, NodeState, PendingEntry, PolicyInForce, PoolEntry,
    RunningEntry, SnapshotFile,
};

use crate::core::{Core, DepStatus};
use crate::daemon::Daemon;
use crate::launch::now_ms;
use crate::record::JobRecord;

/// A job to add to the snapshot's queue, as `--test-only` adds it.
pub struct TestJob {
    /// The record it would have.
    pub rec: JobRecord,
}

/// Answers a `Snapshot` request from `caller`'s uid, gid and user name.
pub fn handle(d: &Arc<Daemon>, caller: (u32, u32, &str), req: SnapshotRequest) -> Response {
    let settings = d.settings();
    let config = &settings.config;
    let policy = PolicyInForce {
        name: d.policy_name(),
        params: config
            .policy_params()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        plugin_dir: config
            .plugin_path()
            .map(|p| p.to_string_lossy().into_owned()),
    };
    let now = now_ms();
    let core = d.core();
    let test = match req.with_job {
        Some(spec) => match test_job(&core, caller, spec, now) {
            Ok(t) => Some(t),
            Err(e) => return e.into(),
        },
        None => None,
    };
    let file = of_core(&core, now, config.grace_period_ms, policy, test.as_ref());
    drop(core);
    match serde_json::to_value(&file) {
        Ok(file) => Response::Snapshot {
            file,
            with_job: test.map(|t| t.rec.id),
        },
        Err(e) => ErrorReply::new(
            ErrorKind::Internal,
            format!("cannot encode the snapshot: {e}"),
        )
        .into(),
    }
}

fn test_job(
    core: &Core,
    (uid, gid, user): (u32, u32, &str),
    mut spec: JobSpec,
    now: u64,
) -> Result<TestJob, ErrorReply> {
    core.check_against(&spec)?;
    core.clip_to_pools(&mut spec);
    let rec = JobRecord::submitted(core.next_id(), uid, gid, user, spec, now);
    Ok(TestJob { rec })
}

/// The snapshot file of `core` at `now`, with `test`'s job in its queue.
pub fn of_core(
    core: &Core,
    now: u64,
    grace_ms: u64,
    policy: PolicyInForce,
    test: Option<&TestJob>,
) -> SnapshotFile {
    let mut snap = core.snapshot(now, grace_ms);
    let mut order: Vec<(&JobRecord, bool, Option<String>)> = core
        .classify(now)
        .into_iter()
        .map(|(rec, eligible, reason)| (rec, eligible, reason.map(|r| r.to_string())))
        .collect();
    if let Some(t) = test {
        // Where `--test-only` puts it: after every job of its priority or higher.
        let eligible = !t.rec.spec.hold && core.dep_status(&t.rec) == DepStatus::Satisfied;
        let pos = order
            .iter()
            .position(|(r, _, _)| r.spec.priority < t.rec.spec.priority)
            .unwrap_or(order.len());
        order.insert(pos, (&t.rec, eligible, None));
        if eligible {
            let at = snap
                .pending
                .iter()
                .position(|p| p.priority < t.rec.spec.priority)
                .unwrap_or(snap.pending.len());
            snap.pending.insert(at, core.pending_of(&t.rec, now));
        }
    }
    let mut shown: HashMap<u64, sched_core::Pending> =
        snap.pending.drain(..).map(|p| (p.id.0, p)).collect();
    let pending = order
        .iter()
        .map(|&(rec, eligible, ref reason)| {
            let job = shown
                .remove(&rec.id)
                .unwrap_or_else(|| core.pending_of(rec, now));
            PendingEntry {
                job,
                name: rec.spec.name.clone(),
                user_name: rec.user.clone(),
                eligible,
                held: rec.held,
                dependencies: open_dependencies(core, rec),
                reason: reason.clone(),
                expected_start: core.expected_start(rec.id),
            }
        })
        .collect();
    let running = snap
        .running
        .into_iter()
        .map(|job| {
            let rec = core.job(job.id.0).map(|a| &a.rec);
            let holder = match rec {
                Some(_) => Holder::Job,
                // The daemon's stand-ins (see `Core::snapshot`): nodes out of service from now,
                // a pool's end from later.
                None if job.start > now => Holder::PoolEnd,
                None if crate::core::coorm::is_fair_start_hold(job.id) => Holder::FairStart,
                None => Holder::OutOfService,
            };
            RunningEntry {
                name: rec.map(|r| r.spec.name.clone()).unwrap_or_default(),
                user_name: rec.map(|r| r.user.clone()).unwrap_or_default(),
                job,
                holder,
            }
        })
        .collect();
    let pools = core
        .pools()
        .iter()
        .map(|p| PoolEntry {
            pool: p.pool.clone(),
            node_states: (0..p.pool.nodes)
                .map(|i| {
                    let job = p.holder(i);
                    let state = match (p.condition(i), job) {
                        (Some(c), _) if c.down => "down",
                        (Some(_), None) => "drain",
                        (_, Some(j)) if core.is_claimed(j) => "reserved",
                        (_, Some(_)) => "allocated",
                        (None, None) => "idle",
                    };
                    NodeState {
                        name: p.node_name(i),
                        state: state.into(),
                        job,
                    }
                })
                .collect(),
        })
        .collect();
    SnapshotFile {
        format: format::FORMAT.into(),
        version: format::VERSION,
        now,
        policy,
        pools,
        running,
        pending,
    }
}

/// The dependencies of `rec` still open: those on jobs that have not started (`after`) or not
/// ended (the others), and `singleton` as `afterany` on the running jobs of its name and user
/// and on the pending ones before it (Slurm's rule, as `Core::classify` applies it).
fn open_dependencies(core: &Core, rec: &JobRecord) -> Vec<Dependency> {
    let mut open = Vec::new();
    for d in &rec.spec.dependencies {
        match d {
            ProtoDependency::On { kind, job } => {
                let Some(state) = core.state_of(*job) else {
                    continue;
                };
                let kind = match kind {
                    ProtoDep::After => DepKind::After,
                    ProtoDep::AfterAny => DepKind::AfterAny,
                    ProtoDep::AfterOk => DepKind::AfterOk,
                    ProtoDep::AfterNotOk => DepKind::AfterNotOk,
                };
                let waits = match kind {
                    DepKind::After => state == JobState::Pending,
                    _ => !state.is_finished(),
                };
                if waits {
                    open.push(Dependency { kind, job: *job });
                }
            }
            ProtoDependency::Singleton => {
                let same = |r: &JobRecord| r.uid == rec.uid && r.spec.name == rec.spec.name;
                for a in core.jobs().values() {
                    let r = &a.rec;
                    let before = match r.state {
                        JobState::Pending => r.id < rec.id,
                        s => !s.is_finished(),
                    };
                    if r.id != rec.id && before && same(r) {
                        open.push(Dependency {
                            kind: DepKind::AfterAny,
                            job: r.id,
                        });
                    }
                }
            }
        }
    }
    open
}
