//! Pools of hosts: one ssh session per host to its agent (`batchd agent`, see
//! [`crate::agent`]), kept open, reopened when it drops; the jobs started through it and their
//! ends; and the health check that sets a host that stops answering DOWN.
//!
//! A host that stops answering for the pool's `down_after_ms` is set DOWN with the reason ssh
//! gave; the jobs whose batch script runs there end at once (NODE_FAIL, or requeued with
//! `--requeue`): batchd cannot reach them to stop them. When the host answers again, whatever
//! is left of those runs there is killed and their directories removed, and a node batchd
//! itself set DOWN for not responding is back in service (Slurm's `ReturnToService=1`); a node
//! an administrator set DOWN stays down.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::agent::{FromAgent, JobOp, RunId, ToAgent};
use crate::daemon::Daemon;
use crate::hostlink::{HostLink, StartError};
use crate::launch::{files, now_ms, Outcome, Status};
use crate::nodes::Change;

/// Who a DOWN set by the health check is said to be set by (`einfo -R`'s USER).
pub const HEALTH_USER: &str = "batchd";

/// The reason of a DOWN set by the health check starts so.
const NOT_RESPONDING: &str = "Not responding";

/// Opens and keeps open the session to every host, and watches their health.
pub fn start_all(d: &Arc<Daemon>) {
    for link in d.links.all() {
        tokio::spawn(session_loop(Arc::clone(d), Arc::clone(link)));
        tokio::spawn(health_loop(Arc::clone(d), Arc::clone(link)));
    }
}

async fn session_loop(d: Arc<Daemon>, link: Arc<HostLink>) {
    let retry = Duration::from_millis(link.ssh.health_interval().min(1_000));
    loop {
        let error = session(&d, &link).await;
        link.set_channel(None);
        let was_up = link.state().up;
        link.update(|s| {
            if s.up {
                s.since = now_ms();
            }
            s.up = false;
            s.error = error.clone();
        });
        if was_up {
            tracing::warn!(host = %link.host, "the ssh session to the host ended: {error}");
        } else {
            tracing::debug!(host = %link.host, "cannot reach the host: {error}");
        }
        tokio::time::sleep(retry).await;
    }
}

/// One session: runs until it ends; returns what ssh said.
async fn session(d: &Arc<Daemon>, link: &Arc<HostLink>) -> String {
    let (program, args) = link.command();
    let mut child = match tokio::process::Command::new(&program)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return format!("cannot run {program}: {e}"),
    };
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return "ssh's pipes are missing".into();
    };
    // ssh's last words: the reason a node goes DOWN.
    let said = tokio::spawn(async move {
        let mut last = String::new();
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(l)) = lines.next_line().await {
            let l = l.trim();
            if !l.is_empty() {
                last = l.to_string();
            }
        }
        last
    });
    let (tx, mut rx) = mpsc::unbounded_channel::<ToAgent>();
    let writer = tokio::spawn(async move {
        while let Some(msg) = rx.recv().await {
            let Ok(mut line) = serde_json::to_string(&msg) else {
                continue;
            };
            line.push('\n');
            if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
                break;
            }
        }
    });
    let mut lines = BufReader::new(stdout).lines();
    let mut tx = Some(tx);
    while let Ok(Some(line)) = lines.next_line().await {
        link.update(|s| s.heard = now_ms());
        let msg: FromAgent = match serde_json::from_str(&line) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(host = %link.host, "unreadable line from the agent: {e}");
                continue;
            }
        };
        if let FromAgent::Hello { host, runs } = &msg {
            tracing::info!(host = %link.host, calls_itself = %host, runs = runs.len(), "host answers");
            link.set_channel(tx.take());
            link.update(|s| {
                s.up = true;
                s.since = now_ms();
                s.error.clear();
            });
            reconcile(d, link, runs).await;
            continue;
        }
        handle(d, link, msg).await;
    }
    writer.abort();
    let _ = child.kill().await;
    let said = tokio::time::timeout(Duration::from_secs(1), said)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    if said.is_empty() {
        "the ssh session ended".into()
    } else {
        said
    }
}

/// Pings the host; sets it DOWN when it has not answered for `down_after_ms`, and back in
/// service when it answers again after batchd set it down.
async fn health_loop(d: Arc<Daemon>, link: Arc<HostLink>) {
    let every = Duration::from_millis(link.ssh.health_interval());
    let down_after = link.ssh.down_after();
    let mut n = 0u64;
    loop {
        tokio::time::sleep(every).await;
        let st = link.state();
        let now = now_ms();
        if st.up {
            n += 1;
            let _ = link.send(ToAgent::Ping(n));
            // A session that still looks open but has said nothing for too long is dead.
            if now.saturating_sub(st.heard) > down_after {
                tracing::warn!(host = %link.host, "the host has not answered for {down_after} ms");
                link.set_channel(None);
                link.update(|s| {
                    s.up = false;
                    s.since = now;
                    s.error = format!("no answer for {down_after} ms");
                });
            }
            if health_down(&d, &link.host) {
                bring_back(&d, &link).await;
            }
        } else if now.saturating_sub(st.since) >= down_after && !is_down(&d, &link.host) {
            set_down(&d, &link, &st.error).await;
        }
    }
}

/// Whether node `host` is DOWN.
fn is_down(d: &Daemon, host: &str) -> bool {
    let core = d.core();
    core.find_node(host)
        .and_then(|(p, i)| core.pools()[p].condition(i).map(|c| c.down))
        .unwrap_or(false)
}

/// Whether node `host` is DOWN by the health check.
fn health_down(d: &Daemon, host: &str) -> bool {
    let core = d.core();
    core.find_node(host)
        .and_then(|(p, i)| {
            core.pools()[p]
                .condition(i)
                .map(|c| c.down && c.user == HEALTH_USER && c.reason.starts_with(NOT_RESPONDING))
        })
        .unwrap_or(false)
}

/// Node `host`'s DRAIN by someone other than the health check, if it is drained.
fn admin_drain(d: &Daemon, host: &str) -> Option<(String, String)> {
    let core = d.core();
    let (p, i) = core.find_node(host)?;
    core.pools()[p]
        .condition(i)
        .filter(|c| !c.down && c.user != HEALTH_USER)
        .map(|c| (c.reason.clone(), c.user.clone()))
}

async fn set_down(d: &Arc<Daemon>, link: &Arc<HostLink>, error: &str) {
    *crate::sync::lock(&link.drained) = admin_drain(d, &link.host);
    let reason = if error.is_empty() {
        NOT_RESPONDING.to_string()
    } else {
        format!("{NOT_RESPONDING}: {error}")
    };
    tracing::warn!(host = %link.host, %reason, "node set DOWN");
    let change = Change::Out {
        down: true,
        reason,
        user: HEALTH_USER.into(),
    };
    match crate::nodes::set(d, std::slice::from_ref(&link.host), change).await {
        Ok(stop) => {
            for id in stop {
                stop_job(d, id).await;
            }
        }
        Err(e) => tracing::error!(host = %link.host, "cannot set the node DOWN: {e}"),
    }
}

async fn bring_back(d: &Arc<Daemon>, link: &Arc<HostLink>) {
    let drained = crate::sync::lock(&link.drained).take();
    let change = match drained {
        // Back to the drain an administrator had set, not into service.
        Some((reason, user)) => {
            tracing::info!(host = %link.host, "the host answers again: drained again, as it was");
            // Clearing the DOWN first: DRAIN over DOWN would keep it down.
            let _ = crate::nodes::set(d, std::slice::from_ref(&link.host), Change::Resume).await;
            Change::Out {
                down: false,
                reason,
                user,
            }
        }
        None => {
            tracing::info!(host = %link.host, "the host answers again: back in service");
            Change::Resume
        }
    };
    if let Err(e) = crate::nodes::set(d, std::slice::from_ref(&link.host), change).await {
        tracing::error!(host = %link.host, "cannot bring the node back: {e}");
    }
}

/// Stops job `id`, which ran on a node that went down: through the hosts of its parts when
/// they answer, else its end is recorded at once (it cannot be reached; what is left of it is
/// killed when its host answers again).
pub async fn stop_job(d: &Arc<Daemon>, id: u64) {
    let parts = d.remote_parts(id);
    if parts.is_empty() {
        // A job whose start is under way (its node went down meanwhile) is stopped once its
        // supervisor is there, as ecancel stops it.
        let dir = d.job_dir(id);
        let stopped = d
            .while_starting(id, || crate::jobctl::cancel_in(&dir, id))
            .await;
        if let Err(e) = stopped {
            tracing::warn!(job = id, "cannot stop the job: {e}");
        }
        return;
    }
    let mut all = true;
    for (link, run) in &parts {
        all &= link.send_job(*run, JobOp::Cancel).is_ok();
    }
    if all {
        return;
    }
    let status = Status {
        outcome: Outcome::Lost,
        exit_code: 0,
        signal: 0,
        end_ms: now_ms(),
        detail: None,
        usage: None,
    };
    d.job_ended(id, Some(status)).await;
}

/// The running jobs with a part on `host` (their batch script, or a component of a
/// co-allocated job), with their run and whether they are being stopped.
fn jobs_on(d: &Daemon, host: &str) -> Vec<(RunId, bool)> {
    let core = d.core();
    core.jobs()
        .values()
        .filter_map(|a| {
            let run = a.run.as_ref()?;
            let components = core.components_of(a.rec.id);
            let here = if components.is_empty() {
                core.batch_node(a.rec.id).is_some_and(|n| n == host)
            } else {
                components
                    .iter()
                    .any(|(_, nodes)| nodes.first().is_some_and(|n| n == host))
            };
            here.then_some((
                RunId {
                    job: a.rec.id,
                    run: a.rec.restarts,
                },
                run.cancelling,
            ))
        })
        .collect()
}

/// The status of a co-allocated job from its parts', in component order, as its supervisor
/// gives it on one machine: the first part's that did not end cleanly, else the last one's,
/// at the last end.
fn merged(parts: Vec<Option<Status>>) -> Option<Status> {
    let end = parts.iter().flatten().map(|s| s.end_ms).max();
    let clean = |s: &Status| s.outcome == Outcome::Exited && s.exit_code == 0 && s.signal == 0;
    let pick = parts
        .iter()
        .flatten()
        .find(|s| !clean(s))
        .or_else(|| parts.iter().flatten().last())
        .cloned();
    // A part that left no status makes the whole one unknown, as on one machine.
    if parts.iter().any(Option::is_none) {
        return None;
    }
    pick.map(|mut s| {
        s.end_ms = end.unwrap_or(s.end_ms);
        s
    })
}

/// The agent's inventory against batchd's running jobs on the host: a run batchd no longer
/// has running is killed and removed; a job batchd has running without its run there lost it
/// (its directory is gone) and ends; a stop sent while the host could not be reached is sent
/// again.
async fn reconcile(d: &Arc<Daemon>, link: &Arc<HostLink>, runs: &[RunId]) {
    let mine = jobs_on(d, &link.host);
    for id in runs {
        if !mine.iter().any(|(r, _)| r == id) {
            tracing::warn!(host = %link.host, job = id.job, run = id.run, "a run batchd no longer has running is killed");
            let _ = link.send_job(*id, JobOp::Kill);
        }
    }
    for (id, cancelling) in mine {
        if runs.contains(&id) {
            if cancelling {
                let _ = link.send_job(id, JobOp::Cancel);
            }
            continue;
        }
        if link.is_launching(id.job) {
            continue;
        }
        if !d.job_dir(id.job).join(files::STARTED_ON).exists() {
            // batchd stopped between the job's start and its agent's answer, and the agent
            // never started it: it goes back to the queue, as a job whose supervisor never
            // started on batchd's own machine.
            tracing::warn!(host = %link.host, job = id.job, "the job never started on its host; it is back in the queue");
            requeue_unstarted(d, id, &link.host).await;
            continue;
        }
        tracing::error!(host = %link.host, job = id.job, "the job's directory on its host is gone");
        // The other parts of a co-allocated job go with it.
        for (l, r) in d.remote_parts(id.job) {
            if l.host != link.host {
                let _ = l.send_job(r, JobOp::Kill);
            }
        }
        let status = Status {
            outcome: Outcome::Lost,
            exit_code: 0,
            signal: 0,
            end_ms: now_ms(),
            detail: Some(format!(
                "the job's directory on {} is gone: its end is unknown",
                link.host
            )),
            usage: None,
        };
        d.job_ended_run(id, Some(status)).await;
    }
}

/// Puts run `run` of a running job, which never started on `host`, back in the queue.
async fn requeue_unstarted(d: &Arc<Daemon>, run: RunId, host: &str) {
    let id = run.job;
    let rec = {
        let mut core = d.core();
        if !core
            .job(id)
            .is_some_and(|a| a.run.is_some() && a.rec.restarts == run.run)
        {
            return;
        }
        let Some(rec) = core.finish(id, |_| {}) else {
            return;
        };
        core.requeue(
            rec,
            format!("batchd stopped before the job started on {host}"),
        )
    };
    let _ = std::fs::remove_dir_all(d.job_dir(id));
    d.nodes_freed();
    if let Err(e) = d.store.commit(rec).await {
        tracing::error!(job = id, "cannot store the requeue: {e}");
    }
}

/// A tool on the host connected to its batchd socket: a socket pair whose one end goes to
/// the server as a connection of that peer, the other pumped to and from the agent.
fn open_relay(
    d: &Arc<Daemon>,
    link: &Arc<HostLink>,
    conn: u64,
    (uid, gid): (u32, u32),
    pid: Option<(i32, u64)>,
    job: Option<RunId>,
) {
    let refuse = |e: std::io::Error| {
        tracing::warn!(host = %link.host, "cannot relay a connection: {e}");
        let _ = link.send(ToAgent::Close { conn });
    };
    let (ours, theirs) = match std::os::unix::net::UnixStream::pair() {
        Ok(p) => p,
        Err(e) => return refuse(e),
    };
    let pump = match ours
        .set_nonblocking(true)
        .and_then(|()| tokio::net::UnixStream::from_std(ours))
    {
        Ok(s) => s,
        Err(e) => return refuse(e),
    };
    let relayed = crate::hostlink::Relayed {
        stream: theirs,
        host: link.host.clone(),
        uid,
        gid,
        pid,
        job,
    };
    if d.relay.send(relayed).is_err() {
        let _ = link.send(ToAgent::Close { conn });
        return;
    }
    let (mut read, mut write) = pump.into_split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Option<Vec<u8>>>();
    crate::sync::lock(&link.conns).insert(conn, tx);
    // The server's answers, to the client.
    {
        let link = Arc::clone(link);
        tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match read.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let data = crate::agent::hex(&buf[..n]);
                        if link.send(ToAgent::Data { conn, data }).is_err() {
                            break;
                        }
                    }
                }
            }
            crate::sync::lock(&link.conns).remove(&conn);
            let _ = link.send(ToAgent::Close { conn });
        });
    }
    // The client's requests, to the server.
    tokio::spawn(async move {
        while let Some(Some(bytes)) = rx.recv().await {
            if write.write_all(&bytes).await.is_err() {
                break;
            }
        }
        let _ = write.shutdown().await;
    });
}

async fn handle(d: &Arc<Daemon>, link: &Arc<HostLink>, msg: FromAgent) {
    match msg {
        FromAgent::Hello { .. } | FromAgent::Pong(_) => {}
        FromAgent::Open {
            conn,
            uid,
            gid,
            pid,
            job,
        } => open_relay(d, link, conn, (uid, gid), pid, job),
        FromAgent::Data { conn, data } => {
            let tx = crate::sync::lock(&link.conns).get(&conn).cloned();
            match (tx, crate::agent::unhex(&data)) {
                (Some(tx), Some(bytes)) => {
                    let _ = tx.send(Some(bytes));
                }
                (Some(tx), None) => {
                    let _ = tx.send(None);
                }
                (None, _) => {}
            }
        }
        FromAgent::PartOutput { key, fd, data } => {
            if let Some(p) = crate::sync::lock(&link.parts).get(&key) {
                let _ = p.tx.send(crate::hostlink::PartEvent::Output(fd, data));
            }
        }
        FromAgent::PartEnd { key, status } => {
            if let Some(p) = crate::sync::lock(&link.parts).remove(&key) {
                let _ = p.tx.send(crate::hostlink::PartEvent::End(status));
            }
        }
        FromAgent::Close { conn } => {
            if let Some(tx) = crate::sync::lock(&link.conns).remove(&conn) {
                let _ = tx.send(None);
            }
        }
        FromAgent::Started { id } => link.answer_start(id, Ok(())),
        FromAgent::Failed {
            id,
            error,
            start: true,
        } => link.answer_start(id, Err(error)),
        FromAgent::Failed { id, error, .. } => {
            tracing::warn!(host = %link.host, job = id.job, "{error}");
        }
        FromAgent::Ended { id, status } => {
            let parts = d.remote_parts(id.job);
            let Some(k) = parts
                .iter()
                .position(|(l, r)| l.host == link.host && *r == id)
            else {
                // Not a run batchd has running (any more): its directory can go.
                let _ = link.send_job(id, JobOp::Reap);
                return;
            };
            if parts.len() == 1 {
                d.job_ended(id.job, status).await;
                let _ = link.send_job(id, JobOp::Reap);
                return;
            }
            // A component of a co-allocated job: the job ends with its last component; the
            // parts' directories stay until then, so that a restart finds their ends again.
            if let Some(all) = d.links.part_ended(id, k, parts.len(), status) {
                d.job_ended(id.job, merged(all)).await;
                for (l, r) in &parts {
                    let _ = l.send_job(*r, JobOp::Reap);
                }
            }
        }
    }
}

/// Marks a job as being started through some links until dropped: a session opening
/// meanwhile leaves the job to its start rather than reconciling it
/// (`HostLink::set_launching`).
pub struct Launching {
    job: u64,
    links: Vec<Arc<HostLink>>,
}

impl Launching {
    /// Job `job` is being started through `links`.
    pub fn new(job: u64, links: Vec<Arc<HostLink>>) -> Launching {
        for l in &links {
            l.set_launching(job, true);
        }
        Launching { job, links }
    }
}

impl Drop for Launching {
    fn drop(&mut self) {
        for l in &self.links {
            l.set_launching(self.job, false);
        }
    }
}

/// Starts run `run` of a job (or of one part of it) on `link`'s host: the files batchd wrote in
/// `dir` are sent over the session. Its end comes back through the session.
pub async fn start(
    link: &Arc<HostLink>,
    run: RunId,
    dir: &Path,
    rec: &crate::record::JobRecord,
) -> Result<(), StartError> {
    check_user(link, rec).map_err(StartError::Refused)?;
    let mut sent = Vec::new();
    for name in [files::LAUNCH, files::SCRIPT, files::NODES, files::STEP] {
        match std::fs::read_to_string(dir.join(name)) {
            Ok(text) => sent.push((name.to_string(), text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && name != files::LAUNCH => {}
            Err(e) => {
                return Err(StartError::Refused(format!(
                    "cannot read {name} of the job: {e}"
                )))
            }
        }
    }
    // A session being reopened: wait for it as long as a node may go unanswered.
    let deadline = now_ms() + link.ssh.down_after();
    while !link.state().up {
        if now_ms() >= deadline {
            return Err(StartError::Unanswered(format!(
                "host {} does not answer: {}",
                link.host,
                link.state().error
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    link.start(run, sent).await?;
    // Known started: a restart of batchd re-attaches it rather than queueing it again.
    if let Err(e) = crate::launch::write_atomic(&dir.join(files::STARTED_ON), link.host.as_bytes())
    {
        tracing::warn!(job = run.job, "cannot note the job's host: {e}");
    }
    Ok(())
}

/// A pool's hosts are logged into as one user; only root's supervisor can become the job's.
fn check_user(link: &HostLink, rec: &crate::record::JobRecord) -> Result<(), String> {
    let login = link.ssh.user.clone().unwrap_or_else(|| {
        nix::unistd::User::from_uid(nix::unistd::geteuid())
            .ok()
            .flatten()
            .map_or_else(String::new, |u| u.name)
    });
    if login == "root" || login == rec.user {
        return Ok(());
    }
    Err(format!(
        "pool {} logs into its hosts as {login}, who cannot run a job as {}: set [pool.ssh] \
         user = \"root\" for the jobs of every user, or run the jobs of {login} only",
        link.pool, rec.user
    ))
}
