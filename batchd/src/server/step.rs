//! `StepStart` and `StepEnd`: `erun` inside a running job records a step (`ID.0`, `ID.1`,
//! ...), gets its nodes and its tasks' layout, and reports its end with what its tasks used.
//!
//! Steps share the job's nodes as Slurm 22.05's do: a step holds every CPU of each of its
//! nodes unless it asks for only what its tasks need (`--exact`, `--exclusive`, `-c`), and
//! `--overlap` steps hold none; a step that does not fit beside the running ones is answered
//! `Busy`, and `erun` tries again (srun's "Job step creation temporarily disabled").
//! The running steps' `erun` processes are listed in the job's `steps.json`, which a signal to
//! the steps goes by (`ecancel -s`, `--signal`).

use std::collections::HashMap;
use std::sync::Arc;

use batch_proto::{
    ErrorKind, ErrorReply, JobState, JobStep, Response, StepEndRequest, StepId, StepStartRequest,
    StepStarted,
};

use super::{internal, Caller, Reply};
use crate::daemon::Daemon;
use crate::launch::{files, now_ms, write_json, StepPid};
use batch_proto::jobstep::layout;

/// The most steps a job may start (Slurm's default `MaxStepCount`): each is kept with the job,
/// and a listing of the job must fit in a frame.
pub const MAX_STEPS: u32 = 40_000;

fn error(kind: ErrorKind, message: impl Into<String>) -> Reply {
    ErrorReply::new(kind, message.into()).into()
}

/// The job's nodes in the order it got them (its node file), else its sorted host list.
fn job_hosts(d: &Daemon, id: u64, node_list: Option<&str>) -> Vec<String> {
    crate::launch::read_saved(&d.job_dir(id))
        .nodes
        .or_else(|| node_list.and_then(|l| batch_proto::hostlist::expand(l).ok()))
        .unwrap_or_default()
}

/// CPUs of node `host`: its pool's `cpus_per_node` (a node is named after its pool).
fn cpus_of(pools: &[crate::config::PoolConfig], host: &str) -> u32 {
    pools
        .iter()
        .filter(|p| {
            host.strip_prefix(p.name.as_str())
                .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(|p| p.cpus_per_node)
        .next()
        .unwrap_or(1)
        .max(1)
}

/// A step's placement: its nodes, the tasks on each, and the CPUs it holds on each.
type Placement = (Vec<String>, Vec<u32>, Vec<(String, u32)>);

/// Why a step cannot be placed: for good, or only until running steps end.
enum NoFit {
    Never(String),
    Busy(String),
}

/// Chooses the step's nodes among `hosts` (the job's, in order) and the CPUs it holds on
/// each, given the CPUs running steps hold (`used`).
fn place(
    req: &StepStartRequest,
    hosts: &[String],
    used: &HashMap<String, u32>,
    cpus: impl Fn(&str) -> u32,
) -> Result<Placement, NoFit> {
    for h in &req.node_names {
        if !hosts.contains(h) {
            return Err(NoFit::Never(format!(
                "node {h} is not one of the job's ({})",
                batch_proto::hostlist::compress(hosts)
            )));
        }
    }
    let eligible: Vec<&String> = hosts
        .iter()
        .filter(|h| req.node_names.is_empty() || req.node_names.contains(h))
        .filter(|h| !req.exclude.contains(h))
        .collect();
    let want = if req.nodes > 0 {
        req.nodes
    } else if !req.node_names.is_empty() || req.tasks_per_node > 0 {
        eligible.len() as u32
    } else {
        req.tasks.min(eligible.len() as u32).max(1)
    };
    if want as usize > eligible.len() {
        return Err(NoFit::Never(format!(
            "the step asks for {want} nodes, the job has {} it may use",
            eligible.len()
        )));
    }
    let tasks = if req.tasks_per_node > 0 {
        req.tasks_per_node.saturating_mul(want)
    } else {
        req.tasks.max(want)
    };
    if req.tasks > 0 && req.tasks < want {
        return Err(NoFit::Never(format!(
            "{} tasks on {want} nodes: fewer tasks than nodes",
            req.tasks
        )));
    }
    let per_node = layout(tasks, want, req.tasks_per_node);
    let cpt = req.cpus_per_task.max(1);
    // More CPUs than a node has: never (srun: "More processors requested than permitted").
    let need = |h: &str, t: u32| -> u32 {
        if req.exact {
            t.saturating_mul(cpt)
        } else {
            cpus(h)
        }
    };
    let max_tasks = *per_node.iter().max().unwrap_or(&0);
    if let Some(h) = eligible
        .iter()
        .find(|h| max_tasks.saturating_mul(cpt) > cpus(h))
    {
        return Err(NoFit::Never(format!(
            "More processors requested than permitted: {max_tasks} tasks of {cpt} CPUs on a \
             node of {} CPUs ({h})",
            cpus(h)
        )));
    }
    if req.overlap {
        let chosen: Vec<String> = eligible
            .iter()
            .take(want as usize)
            .map(|h| (*h).clone())
            .collect();
        return Ok((chosen, per_node, Vec::new()));
    }
    // The first nodes, in the job's order, with room for their share.
    let mut chosen = Vec::new();
    let mut held = Vec::new();
    for h in eligible {
        let k = chosen.len();
        if k == want as usize {
            break;
        }
        let n = need(h, per_node[k]);
        if used.get(h.as_str()).copied().unwrap_or(0) + n <= cpus(h) {
            chosen.push(h.clone());
            held.push((h.clone(), n));
        }
    }
    if chosen.len() < want as usize {
        return Err(NoFit::Busy("Requested nodes are busy".into()));
    }
    Ok((chosen, per_node, held))
}

/// Runs the part of a step on another host of its job (`erun`'s tasks of that host): started
/// there by the host's agent as the caller, its output and end sent on this connection.
pub(super) async fn part(
    d: &Arc<Daemon>,
    caller: &Caller,
    link: &mut super::Link,
    req: batch_proto::StepPartRequest,
) {
    let id = req.job_id;
    let refused = |m: String| Response::Error(ErrorReply::new(ErrorKind::InvalidSpec, m));
    let checked = {
        let core = d.core();
        match core.job(id) {
            None => Err(refused(format!("Invalid job id specified: {id}"))),
            Some(a) if !caller.may_touch(a.rec.uid) => Err(Response::Error(ErrorReply::new(
                ErrorKind::PermissionDenied,
                format!("Access/permission denied for job {id}"),
            ))),
            Some(a) => {
                let step = a
                    .rec
                    .steps
                    .iter()
                    .find(|s| s.id == StepId::Number(req.step) && s.state == JobState::Running);
                let on_step = step.is_some_and(|s| {
                    batch_proto::hostlist::expand(&s.node_list).is_ok_and(|n| n.contains(&req.node))
                });
                if on_step {
                    Ok(())
                } else {
                    Err(refused(format!(
                        "{} is not a node of running step {id}.{}",
                        req.node, req.step
                    )))
                }
            }
        }
    };
    if let Err(r) = checked {
        let _ = link.send(&r).await;
        return;
    }
    let Some(host) = d.links.of_host(&req.node).cloned() else {
        let _ = link
            .send(&refused(format!(
                "{} is not a host of a pool of hosts",
                req.node
            )))
            .await;
        return;
    };
    let key = d.links.part_key();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    crate::sync::lock(&host.parts).insert(
        key,
        crate::hostlink::Part {
            job: id,
            step: req.step,
            tx,
        },
    );
    let sent = host.send(crate::agent::ToAgent::Part {
        key,
        uid: caller.uid,
        gid: caller.gid,
        program: req.program,
        args: req.args,
        env: req.env,
        cwd: req.cwd,
    });
    if let Err(e) = sent {
        crate::sync::lock(&host.parts).remove(&key);
        let _ = link.send(&refused(e)).await;
        return;
    }
    tracing::info!(job = id, step = req.step, host = %host.host, "step part started");
    while let Some(ev) = rx.recv().await {
        let r = match ev {
            crate::hostlink::PartEvent::Output(fd, data) => Response::StepPartOutput { fd, data },
            crate::hostlink::PartEvent::End(status) => {
                let _ = link.send(&Response::StepPartEnded { status }).await;
                return;
            }
        };
        if !link.send(&r).await {
            // Its erun is gone: so does the part.
            let _ = host.send(crate::agent::ToAgent::PartSignal {
                key,
                signal: nix::sys::signal::Signal::SIGKILL as i32,
            });
            crate::sync::lock(&host.parts).remove(&key);
            return;
        }
    }
}

/// Passes a signal on to a step's parts on other hosts.
pub(super) fn part_signal(
    d: &Arc<Daemon>,
    caller: &Caller,
    req: batch_proto::StepPartSignalRequest,
) -> Reply {
    let owner = d.core().job(req.job_id).map(|a| a.rec.uid);
    match owner {
        Some(uid) if caller.may_touch(uid) => {
            d.links.signal_parts(req.job_id, Some(req.step), req.signal);
            Response::Acted(batch_proto::ActionReport {
                done: vec![req.job_id],
                failed: Vec::new(),
            })
            .into()
        }
        Some(_) => error(
            ErrorKind::PermissionDenied,
            format!("Access/permission denied for job {}", req.job_id),
        ),
        None => error(
            ErrorKind::InvalidJobId,
            format!("Invalid job id specified: {}", req.job_id),
        ),
    }
}

/// The running steps of a job on a host, written in its directory there: its supervisor and
/// `ecancel -s` signal them there.
fn push_steps(
    remote: Option<&(Arc<crate::hostlink::HostLink>, crate::agent::RunId)>,
    dir: &std::path::Path,
) {
    let Some((link, run)) = remote else { return };
    let Ok(text) = std::fs::read_to_string(dir.join(files::STEPS)) else {
        return;
    };
    let op = crate::agent::JobOp::Files {
        files: vec![(files::STEPS.to_string(), text)],
    };
    if let Err(e) = link.send_job(*run, op) {
        tracing::warn!(
            job = run.job,
            "cannot tell the job's host of its steps: {e}"
        );
    }
}

pub async fn start(d: &Arc<Daemon>, caller: &Caller, req: StepStartRequest) -> Reply {
    let id = req.job_id;
    let Some(pid) = caller.pid.filter(|&p| p > 0) else {
        return error(
            ErrorKind::BadRequest,
            "the step's process cannot be identified",
        );
    };
    // The step's process is the peer itself, still there: the same start time as when the
    // connection was accepted (a reused pid is another process) and the caller's own uid, so
    // that no signal to the steps can reach a process that is not the caller's. On a host, its
    // agent read them there, and found the peer to be a process of the job.
    let pstart = match &caller.via {
        None => {
            let same = crate::procs::stat(pid)
                .map(|s| s.start)
                .filter(|&t| Some(t) == caller.pid_start);
            let Some(t) = same.filter(|_| crate::procs::uid(pid) == Some(caller.uid)) else {
                return error(
                    ErrorKind::BadRequest,
                    "the step's process is not the one that connected",
                );
            };
            t
        }
        Some(host) => {
            let (Some(t), Some(run)) = (caller.pid_start, caller.job) else {
                return error(
                    ErrorKind::BadRequest,
                    format!("the step's process on {host} is not a process of job {id}"),
                );
            };
            if run.job != id {
                return error(
                    ErrorKind::PermissionDenied,
                    format!(
                        "the step's process on {host} is a process of job {}, not {id}",
                        run.job
                    ),
                );
            }
            t
        }
    };
    let remote = d.remote(id);
    let pools = d.settings().config.pools;
    let dir = d.job_dir(id);
    let (stored, started) = {
        let mut core = d.core();
        let Some(a) = core.job(id) else {
            return match core.state_of(id) {
                Some(_) => error(
                    ErrorKind::InvalidState,
                    format!("Job/step already completing or completed: {id}"),
                ),
                None => error(
                    ErrorKind::InvalidJobId,
                    format!("Invalid job id specified: {id}"),
                ),
            };
        };
        if !caller.may_touch(a.rec.uid) {
            return error(
                ErrorKind::PermissionDenied,
                format!("Access/permission denied for job {id}"),
            );
        }
        if a.rec.state != JobState::Running || crate::core::coorm::is_session(&a.rec) {
            return error(
                ErrorKind::InvalidState,
                format!("Job/step already completing or completed: {id}"),
            );
        }
        let hosts = job_hosts(d, id, a.rec.node_list.as_deref());
        // Under the core lock: two steps starting at once see each other's CPUs.
        let mut running = StepPid::read_all(&dir);
        // A job on hosts: its steps' processes are there, and leave the list at their end.
        if remote.is_none() {
            running.retain(crate::procs::step_alive);
        }
        let mut used: HashMap<String, u32> = HashMap::new();
        for (h, n) in running.iter().flat_map(|s| s.cpus.iter()) {
            *used.entry(h.clone()).or_default() += n;
        }
        let (chosen, tasks, held) = match place(&req, &hosts, &used, |h| cpus_of(&pools, h)) {
            Ok(p) => p,
            Err(NoFit::Never(m)) => return error(ErrorKind::InvalidSpec, m),
            Err(NoFit::Busy(m)) => return error(ErrorKind::Busy, m),
        };
        // A job in a Slurm allocation: erun runs each other node's tasks as a step of it. A
        // node of a Slurm pool in no allocation (a sibling Slurm refused) runs nothing.
        let mut allocations: Vec<u64> = Vec::with_capacity(chosen.len());
        let mut cpus = 0;
        for h in &chosen {
            let pool = core
                .find_node(h)
                .and_then(|(p, _)| pools.iter().find(|c| c.name == core.pools()[p].pool.name));
            match pool.filter(|c| c.slurm.is_some()) {
                Some(c) => match d.allocation_of_node(&c.name, h, id) {
                    Some(a) => {
                        allocations.push(a);
                        cpus = c.cpus_per_node;
                    }
                    None => {
                        return error(
                            ErrorKind::InvalidState,
                            format!("node {h} is in no Slurm allocation of job {id}"),
                        )
                    }
                },
                None => allocations.push(0),
            }
        }
        if crate::record::next_step(&a.rec.steps) >= MAX_STEPS {
            return error(
                ErrorKind::InvalidSpec,
                format!(
                    "Step limit reached for job {id} ({MAX_STEPS} steps, Slurm's MaxStepCount)"
                ),
            );
        }
        let now = now_ms();
        let changed = core.change_steps(id, |_, steps| {
            let n = crate::record::next_step(steps);
            steps.push(JobStep {
                id: StepId::Number(n),
                name: req.name.clone(),
                state: JobState::Running,
                start: now,
                end: None,
                node_list: batch_proto::hostlist::compress(&chosen),
                nodes: chosen.len() as u32,
                tasks: tasks.iter().sum(),
                cpus_per_task: req.cpus_per_task.max(1),
                exit_code: None,
                signal: None,
                usage: None,
            });
            n
        });
        let Some((rec, n)) = changed else {
            return error(
                ErrorKind::InvalidState,
                format!("Job/step already completing or completed: {id}"),
            );
        };
        running.push(StepPid {
            step: n,
            pid,
            start: pstart,
            cpus: held,
        });
        // An allocation's step may come as soon as the job is RUNNING, before its supervisor
        // has made the job's directory.
        let written = crate::state::create_private_dir(&dir)
            .and_then(|()| write_json(&dir.join(files::STEPS), &running));
        if let Err(e) = written {
            return internal(format!("cannot record the step: {e}"));
        }
        push_steps(remote.as_ref(), &dir);
        let slurm = allocations.iter().any(|&a| a != 0).then(|| {
            let cfg = pools
                .iter()
                .find_map(|p| p.slurm.clone())
                .unwrap_or_default();
            crate::slurm::step_of(&cfg, allocations, id, &d.settings().supervisor, cpus)
        });
        let started = StepStarted {
            step: n,
            hosts: chosen,
            tasks,
            job_node_list: rec.node_list.clone().unwrap_or_default(),
            on_hosts: remote.is_some() || slurm.is_some(),
            slurm,
        };
        (d.store.enqueue(rec), started)
    };
    if let Err(e) = stored.await {
        return internal(e);
    }
    tracing::info!(job = id, step = started.step, "step started");
    Response::StepStarted(started).into()
}

pub async fn end(d: &Arc<Daemon>, caller: &Caller, req: StepEndRequest) -> Reply {
    let id = req.job_id;
    let dir = d.job_dir(id);
    // Before the core's lock, which it takes.
    let remote = d.remote(id);
    let stored = {
        let mut core = d.core();
        let Some(a) = core.job(id) else {
            return error(
                ErrorKind::InvalidState,
                format!("Job/step already completing or completed: {id}"),
            );
        };
        if !caller.may_touch(a.rec.uid) {
            return error(
                ErrorKind::PermissionDenied,
                format!("Access/permission denied for job {id}"),
            );
        }
        let cancelling = a.rec.state != JobState::Running;
        let now = now_ms();
        let changed = core.change_steps(id, |_, steps| {
            let Some(s) = steps
                .iter_mut()
                .find(|s| s.id == StepId::Number(req.step) && s.state == JobState::Running)
            else {
                return false;
            };
            s.end = Some(now);
            s.exit_code = Some(req.exit_code);
            s.signal = Some(req.signal);
            s.usage = req.usage;
            s.state = match (req.exit_code, req.signal) {
                (_, sig) if sig != 0 && (cancelling || req.stopped) => JobState::Cancelled,
                (0, 0) => JobState::Completed,
                _ => JobState::Failed,
            };
            true
        });
        match changed {
            Some((rec, true)) => {
                let mut running = StepPid::read_all(&dir);
                running.retain(|s| s.step != req.step);
                if let Err(e) = write_json(&dir.join(files::STEPS), &running) {
                    tracing::warn!(job = id, "cannot update the running steps: {e}");
                }
                push_steps(remote.as_ref(), &dir);
                d.store.enqueue(rec)
            }
            _ => {
                return error(
                    ErrorKind::InvalidState,
                    format!(
                        "Job/step already completing or completed: {id}.{}",
                        req.step
                    ),
                )
            }
        }
    };
    if let Err(e) = stored.await {
        return internal(e);
    }
    Response::StepEnded {
        job: id,
        step: req.step,
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    fn req(tasks: u32, nodes: u32) -> StepStartRequest {
        StepStartRequest {
            job_id: 1,
            tasks,
            nodes,
            cpus_per_task: 1,
            ..StepStartRequest::default()
        }
    }

    #[test]
    fn tasks_spread_in_blocks_over_as_many_nodes_as_tasks() {
        assert_eq!(layout(4, 2, 0), vec![2, 2]);
        assert_eq!(layout(5, 2, 0), vec![3, 2]);
        assert_eq!(layout(3, 3, 0), vec![1, 1, 1]);
        assert_eq!(layout(0, 2, 3), vec![3, 3]);
        let free = HashMap::new();
        // srun -n 2 in a job of 4 one-CPU nodes: two nodes, one task each.
        let (h, t, _) = place(&req(2, 0), &hosts(4), &free, |_| 1).ok().unwrap();
        assert_eq!((h, t), (hosts(2), vec![1, 1]));
        // srun -n 4 on two nodes of 2 CPUs.
        let (h, t, _) = place(&req(4, 2), &hosts(2), &free, |_| 2).ok().unwrap();
        assert_eq!((h, t), (hosts(2), vec![2, 2]));
    }

    #[test]
    fn more_tasks_than_cpus_are_refused_and_busy_nodes_wait() {
        let free = HashMap::new();
        assert!(matches!(
            place(&req(4, 1), &hosts(1), &free, |_| 2),
            Err(NoFit::Never(_))
        ));
        // A step without --exact holds its nodes' CPUs: the next one waits...
        let (_, _, held) = place(&req(1, 1), &hosts(1), &free, |_| 4).ok().unwrap();
        assert_eq!(held, vec![("n1".to_string(), 4)]);
        let used: HashMap<String, u32> = held.into_iter().collect();
        assert!(matches!(
            place(&req(1, 1), &hosts(1), &used, |_| 4),
            Err(NoFit::Busy(_))
        ));
        // ...unless it overlaps.
        let overlap = StepStartRequest {
            overlap: true,
            ..req(1, 1)
        };
        assert!(place(&overlap, &hosts(1), &used, |_| 4).is_ok());
        // Exact steps share a node while its CPUs last.
        let exact = StepStartRequest {
            exact: true,
            ..req(2, 1)
        };
        let (_, _, held) = place(&exact, &hosts(1), &free, |_| 4).ok().unwrap();
        let used: HashMap<String, u32> = held.into_iter().collect();
        assert!(place(&exact, &hosts(1), &used, |_| 4).is_ok());
        let three = StepStartRequest {
            exact: true,
            ..req(3, 1)
        };
        assert!(matches!(
            place(&three, &hosts(1), &used, |_| 4),
            Err(NoFit::Busy(_))
        ));
    }

    #[test]
    fn named_and_excluded_nodes() {
        let free = HashMap::new();
        let r = StepStartRequest {
            node_names: vec!["n3".into()],
            ..req(1, 0)
        };
        let (h, _, _) = place(&r, &hosts(4), &free, |_| 1).ok().unwrap();
        assert_eq!(h, vec!["n3".to_string()]);
        let r = StepStartRequest {
            exclude: vec!["n1".into()],
            ..req(1, 0)
        };
        let (h, _, _) = place(&r, &hosts(2), &free, |_| 1).ok().unwrap();
        assert_eq!(h, vec!["n2".to_string()]);
        let r = StepStartRequest {
            node_names: vec!["x9".into()],
            ..req(1, 0)
        };
        assert!(matches!(
            place(&r, &hosts(2), &free, |_| 1),
            Err(NoFit::Never(_))
        ));
    }
}
