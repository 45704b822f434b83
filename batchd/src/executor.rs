//! Starting jobs through their supervisors, watching them end, and signalling them.
//!
//! A job's supervisor is `SUPERVISOR supervise JOBDIR` (see [`crate::supervise`]), started in
//! a session of its own so that it outlives the daemon. The daemon learns a job's end from the
//! supervisor's exit (its own child) or, for a supervisor adopted after a restart, by polling
//! its pid and status file.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use batch_proto::SignalScope;
use nix::sys::signal::Signal;

use crate::core::JobFiles;
use crate::daemon::Daemon;
use crate::hostlink::StartError;
use crate::launch::{
    files, now_ms, read_json, read_pid, write_job_files, write_json, JobPids, Launch, Outcome,
    Status,
};
use crate::record::JobRecord;

/// How often an adopted supervisor is checked.
const ADOPTED_POLL: Duration = Duration::from_millis(200);

/// What a job's environment takes from where it runs rather than from its record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// CPUs of each of the job's nodes (its pool's `cpus_per_node`).
    pub cpus_per_node: u32,
    /// `cluster_name` of the config (`SLURM_CLUSTER_NAME`).
    pub cluster: String,
    /// This machine's name: every submission comes over its Unix socket
    /// (`SLURM_SUBMIT_HOST`).
    pub host: String,
    /// batchd's socket (`ESCHED_SOCKET`), so that `erun` inside the job finds the daemon
    /// whatever the job's environment says.
    pub socket: String,
    /// The grace period (`ESCHED_KILL_WAIT_MS`): how long `erun` lets its tasks outlive the
    /// stop it passes on before it kills them itself.
    pub grace_ms: u64,
}

impl Site {
    /// The site of job `rec` under `config`.
    pub fn of(config: &crate::config::Config, rec: &JobRecord) -> Site {
        let pool = rec.pool.as_deref().or(rec.spec.pool.as_deref());
        Site {
            cpus_per_node: config
                .pools
                .iter()
                .find(|p| Some(p.name.as_str()) == pool)
                .or(config.pools.first())
                .map_or(1, |p| p.cpus_per_node.max(1)),
            cluster: config.cluster_name.clone(),
            host: nix::unistd::gethostname()
                .ok()
                .and_then(|h| h.into_string().ok())
                .unwrap_or_else(|| "localhost".into()),
            socket: config.socket_path().display().to_string(),
            grace_ms: config.grace_period_ms,
        }
    }
}

/// The variables Slurm gives a batch job, from the same values as batchd's `ESCHED_*` ones,
/// so that an sbatch script's `cd $SLURM_SUBMIT_DIR` or `srun -N $SLURM_NNODES` works
/// unchanged. The batch script is task 0 on the first node, as with sbatch.
fn slurm_variables(rec: &JobRecord, site: &Site) -> Vec<(&'static str, String)> {
    let id = rec.id.to_string();
    let nodelist = rec.node_list.clone().unwrap_or_default();
    let nnodes = rec.nodes.to_string();
    let mut vars = vec![
        ("SLURM_JOB_ID", id.clone()),
        ("SLURM_JOBID", id),
        ("SLURM_JOB_NAME", rec.spec.name.clone()),
        (
            "SLURM_SUBMIT_DIR",
            rec.spec
                .submit_dir
                .clone()
                .unwrap_or_else(|| rec.spec.work_dir.clone()),
        ),
        ("SLURM_SUBMIT_HOST", site.host.clone()),
        ("SLURM_CLUSTER_NAME", site.cluster.clone()),
        ("SLURM_JOB_NODELIST", nodelist.clone()),
        ("SLURM_NODELIST", nodelist),
        ("SLURM_NNODES", nnodes.clone()),
        ("SLURM_JOB_NUM_NODES", nnodes),
        ("SLURM_JOB_PARTITION", rec.pool.clone().unwrap_or_default()),
        ("SLURM_JOB_USER", rec.user.clone()),
        ("SLURM_JOB_UID", rec.uid.to_string()),
        ("SLURM_JOB_GID", rec.gid.to_string()),
        ("SLURMD_NODENAME", rec.first_node()),
        ("SLURM_NODEID", "0".into()),
        ("SLURM_PROCID", "0".into()),
        ("SLURM_LOCALID", "0".into()),
        (
            "SLURM_JOB_START_TIME",
            (rec.start.unwrap_or(0) / 1000).to_string(),
        ),
        (
            "SLURM_JOB_END_TIME",
            (rec.start.unwrap_or(0).saturating_add(rec.time_limit()) / 1000).to_string(),
        ),
        ("SLURM_RESTART_COUNT", rec.restarts.to_string()),
        ("SLURM_CPUS_ON_NODE", site.cpus_per_node.to_string()),
        (
            "SLURM_JOB_CPUS_PER_NODE",
            batch_proto::jobstep::per_node_text(&vec![
                site.cpus_per_node;
                rec.nodes.max(1) as usize
            ]),
        ),
        ("ENVIRONMENT", "BATCH".into()),
        // sbatch's --open-mode, which srun's output files follow.
        (
            "SLURM_OPEN_MODE",
            if rec.spec.open_append { "a" } else { "t" }.into(),
        ),
    ];
    let res = rec.spec.resources.as_deref().cloned().unwrap_or_default();
    let nodes = rec.nodes.max(1);
    // Tasks: `-n`, else `--ntasks-per-node` on each node; without either, Slurm sets no
    // SLURM_NTASKS and counts one task per node in SLURM_TASKS_PER_NODE.
    let ntasks = res
        .ntasks
        .or(res.ntasks_per_node.map(|t| t.saturating_mul(nodes)));
    if let Some(n) = ntasks {
        vars.push(("SLURM_NTASKS", n.to_string()));
        vars.push(("SLURM_NPROCS", n.to_string()));
    }
    if let Some(t) = res.ntasks_per_node {
        vars.push(("SLURM_NTASKS_PER_NODE", t.to_string()));
    }
    let per_node = batch_proto::jobstep::layout(
        ntasks.unwrap_or(nodes).max(nodes),
        nodes,
        res.ntasks_per_node.unwrap_or(0),
    );
    vars.push((
        "SLURM_TASKS_PER_NODE",
        batch_proto::jobstep::per_node_text(&per_node),
    ));
    if let Some(c) = res.cpus_per_task {
        vars.push(("SLURM_CPUS_PER_TASK", c.to_string()));
    }
    if let Some(m) = res.mem_per_node {
        vars.push(("SLURM_MEM_PER_NODE", m.to_string()));
    }
    if let Some(m) = res.mem_per_cpu {
        vars.push(("SLURM_MEM_PER_CPU", m.to_string()));
    }
    if let Some(a) = &rec.spec.account {
        vars.push(("SLURM_JOB_ACCOUNT", a.clone()));
    }
    if let Some(q) = &rec.spec.qos {
        vars.push(("SLURM_JOB_QOS", q.clone()));
    }
    if let Some(t) = &rec.spec.array_task {
        vars.push(("SLURM_ARRAY_JOB_ID", t.array_id.to_string()));
        vars.push(("SLURM_ARRAY_TASK_ID", t.index.to_string()));
        if let Some(n) = t.throttle {
            vars.push(("SLURM_ARRAY_TASK_THROTTLE", n.to_string()));
        }
        if t.count > 0 {
            vars.push(("SLURM_ARRAY_TASK_COUNT", t.count.to_string()));
            vars.push(("SLURM_ARRAY_TASK_MIN", t.min.to_string()));
            vars.push(("SLURM_ARRAY_TASK_MAX", t.max.to_string()));
            vars.push(("SLURM_ARRAY_TASK_STEP", t.step.to_string()));
        }
    }
    vars
}

/// A job's output path at launch: the stored one, with `%N` expanded now that the job has
/// nodes when its pattern names the node (see `batch_proto::pattern`).
fn output_path(pattern: Option<&str>, stored: &str, rec: &JobRecord) -> PathBuf {
    if pattern.is_some_and(batch_proto::pattern::names_node) {
        PathBuf::from(batch_proto::pattern::expand_node(stored, &rec.first_node()))
    } else {
        PathBuf::from(stored)
    }
}

/// The environment of a job whose directory is `dir`: the submitter's, then batchd's
/// variables (`ESCHED_*` and Slurm's `SLURM_*`) over it.
pub fn job_environment(rec: &JobRecord, dir: &Path, site: &Site) -> Vec<(String, String)> {
    let file = |f: &str| dir.join(f).display().to_string();
    let mut ours = vec![
        ("ESCHED_NODEFILE", file(files::NODES)),
        ("ESCHED_JOB_ID", rec.id.to_string()),
        ("ESCHED_JOB_NAME", rec.spec.name.clone()),
        ("ESCHED_NODELIST", rec.node_list.clone().unwrap_or_default()),
        ("ESCHED_NNODES", rec.nodes.to_string()),
        ("ESCHED_POOL", rec.pool.clone().unwrap_or_default()),
        ("ESCHED_SUBMIT_DIR", rec.spec.work_dir.clone()),
        ("ESCHED_JOB_USER", rec.user.clone()),
        ("ESCHED_SOCKET", site.socket.clone()),
        ("ESCHED_KILL_WAIT_MS", site.grace_ms.to_string()),
    ];
    if matches!(rec.shape, Some(sched_core::Shape::Evolving { .. })) {
        ours.push(("ESCHED_STEPFILE", file(files::STEP)));
    }
    ours.extend(slurm_variables(rec, site));
    let mut env: Vec<(String, String)> = rec
        .spec
        .environment
        .iter()
        .filter(|(k, _)| !ours.iter().any(|(o, _)| o == k))
        .cloned()
        .collect();
    // What a login gives and Slurm keeps even with `--export=NONE` or a list: the user's
    // HOME, USER, LOGNAME and SHELL, a login PATH, and a TMPDIR.
    let login = login_variables(&rec.user, rec.uid);
    for (k, v) in login {
        if !env.iter().any(|(e, _)| e == k) {
            env.push((k.to_string(), v));
        }
    }
    env.extend(ours.into_iter().map(|(k, v)| (k.to_string(), v)));
    env
}

/// A login's variables for `user` (`uid`), from the password database where it knows them.
fn login_variables(user: &str, uid: u32) -> Vec<(&'static str, String)> {
    let pw = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten();
    let mut v = vec![
        ("USER", user.to_string()),
        ("LOGNAME", user.to_string()),
        (
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_string(),
        ),
        ("TMPDIR", "/tmp".to_string()),
    ];
    if let Some(pw) = pw {
        v.push(("HOME", pw.dir.display().to_string()));
        v.push(("SHELL", pw.shell.display().to_string()));
    }
    v
}

/// The variables of each component's process of a co-allocated job (`components`: each one's
/// pool and nodes), over [`job_environment`]'s: `ESCHED_COMPONENT` (its index, from 0),
/// `ESCHED_NODELIST`/`ESCHED_NNODES`/`ESCHED_POOL` its own, and the whole job's as
/// `ESCHED_JOB_NODELIST`/`ESCHED_JOB_NUM_NODES`, with `ESCHED_NUM_COMPONENTS` and
/// `ESCHED_COMPONENT_<i>_NODELIST`/`_POOL` for every component (the layout of Slurm's
/// heterogeneous jobs, `SLURM_JOB_NODELIST_HET_GROUP_<i>`).
pub fn component_environments(
    rec: &JobRecord,
    components: &[(String, Vec<String>)],
) -> Vec<Vec<(String, String)>> {
    let mut common = vec![
        (
            "ESCHED_JOB_NODELIST".to_string(),
            rec.node_list.clone().unwrap_or_default(),
        ),
        ("ESCHED_JOB_NUM_NODES".to_string(), rec.nodes.to_string()),
        (
            "ESCHED_NUM_COMPONENTS".to_string(),
            components.len().to_string(),
        ),
    ];
    for (i, (pool, nodes)) in components.iter().enumerate() {
        common.push((
            format!("ESCHED_COMPONENT_{i}_NODELIST"),
            batch_proto::hostlist::compress(nodes),
        ));
        common.push((format!("ESCHED_COMPONENT_{i}_POOL"), pool.clone()));
    }
    components
        .iter()
        .enumerate()
        .map(|(i, (pool, nodes))| {
            let mut env = common.clone();
            env.push(("ESCHED_COMPONENT".into(), i.to_string()));
            env.push((
                "ESCHED_NODELIST".into(),
                batch_proto::hostlist::compress(nodes),
            ));
            env.push(("ESCHED_NNODES".into(), nodes.len().to_string()));
            env.push(("ESCHED_POOL".into(), pool.clone()));
            env
        })
        .collect()
}

/// Where one part of a job is written and where it runs.
#[derive(Clone)]
struct Place {
    /// The directory written here.
    dir: PathBuf,
    /// Where the job runs, which its files' paths (and its environment's) name: `dir` itself
    /// on this machine, the run's directory on its host for a pool of hosts.
    runs_in: PathBuf,
    /// The one component this part of a co-allocated job runs (on its own host).
    only: Option<usize>,
    /// The socket the job's tools reach batchd by, when not batchd's own: its host's
    /// ([`crate::agent::SOCKET`]).
    socket: Option<PathBuf>,
}

/// Writes a job's directory as `place` says: the script, its node (and step) file and
/// `launch.json`.
fn prepare(
    rec: &JobRecord,
    site: &Site,
    place: &Place,
    grace_ms: u64,
    job_files: Option<&JobFiles>,
    components: &[(String, Vec<String>)],
    wrap: &[Vec<String>],
) -> Result<(), String> {
    let (dir, runs_in, only) = (&place.dir, &place.runs_in, place.only);
    let err =
        |what: &str, e: std::io::Error| format!("cannot write {what} in {}: {e}", dir.display());
    crate::state::private_dir(dir).map_err(|e| err("the job directory", e))?;
    if let Some(f) = job_files {
        write_job_files(dir, f).map_err(|e| err("the node file", e))?;
    }
    let script = dir.join(files::SCRIPT);
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        // 0700 from its creation: its owner only (the supervisor gives it to the job's user).
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o700)
            .open(&script)
            .map_err(|e| err("the script", e))?;
        f.write_all(rec.spec.script.as_bytes())
            .map_err(|e| err("the script", e))?;
    }
    let start = rec.start.unwrap_or_else(now_ms);
    let deadline_ms = start.saturating_add(rec.time_limit());
    let launch = Launch {
        job_id: rec.id,
        name: rec.spec.name.clone(),
        user: rec.user.clone(),
        uid: rec.uid,
        gid: rec.gid,
        script: runs_in.join(files::SCRIPT),
        via_shell: !rec.spec.script.starts_with("#!"),
        args: rec.spec.args.clone(),
        env: if wrap.is_empty() {
            job_environment(rec, runs_in, site)
        } else {
            let mut env = crate::slurm::crossing(&job_environment(rec, runs_in, site));
            env.extend(crate::slurm::srun_environment());
            env
        },
        work_dir: PathBuf::from(&rec.spec.work_dir),
        stdout: output_path(rec.spec.stdout.as_deref(), &rec.stdout, rec),
        stderr: output_path(
            rec.spec.stderr.as_deref().or(rec.spec.stdout.as_deref()),
            &rec.stderr,
            rec,
        ),
        deadline_ms,
        grace_ms,
        umask: rec.spec.effective_umask(),
        // A part of a co-allocated job on hosts runs its own component only.
        components: {
            let mut all = component_environments(rec, components);
            if let Some(k) = only {
                all = all.into_iter().nth(k).into_iter().collect();
            }
            all
        },
        warn: rec.spec.warn_signal.map(|w| crate::launch::Warn {
            signal: w.signal,
            // A limit shorter than the notice: at the start, as soon as can be.
            at_ms: deadline_ms
                .saturating_sub(u64::from(w.before) * 1000)
                .max(start),
            batch_only: w.batch_only,
        }),
        append: rec.spec.open_append,
        wrap: wrap.to_vec(),
    };
    write_json(&dir.join(files::LAUNCH), &launch).map_err(|e| err("launch.json", e))
}

/// Stores the job as running, then starts its supervisor and watches it.
pub async fn launch(d: Arc<Daemon>, rec: JobRecord) {
    let id = rec.id;
    // Running is durable before any process exists: a restart then finds either the
    // supervisor or nothing, never a job that runs twice.
    if let Err(e) = d.store.commit(rec.clone()).await {
        tracing::error!(job = id, "cannot store the start: {e}");
        fail_start(&d, &rec, format!("cannot store the start: {e}")).await;
        return;
    }
    let settings = d.settings();
    let dir = d.job_dir(id);
    let (job_files, components, job_parts) = {
        let core = d.core();
        (
            core.job_files(id),
            core.components_of(id),
            core.parts_of(id),
        )
    };
    // A co-allocated job's node file lists every component's nodes, in component order.
    let job_files = job_files.map(|mut f| {
        if !components.is_empty() {
            f.nodes = components.iter().flat_map(|c| c.1.clone()).collect();
        }
        f
    });
    // On hosts, each part (the job, or each component of a co-allocated job) runs in its
    // run's directory under its host's spool, from files of its own.
    let parts = d.remote_parts(id);
    // Until its start is settled, a session opening leaves the job to this start.
    let _launching =
        crate::hosts::Launching::new(id, parts.iter().map(|(l, _)| Arc::clone(l)).collect());
    if !parts.is_empty() && !components.is_empty() && parts.len() != components.len() {
        let msg = "a co-allocated job cannot span pools of hosts and pools of virtual nodes";
        return fail_start(&d, &rec, msg.into()).await;
    }
    let places: Vec<Place> = if parts.is_empty() {
        vec![Place {
            dir: dir.clone(),
            runs_in: dir.clone(),
            only: None,
            socket: None,
        }]
    } else {
        let one = parts.len() > 1;
        parts
            .iter()
            .enumerate()
            .map(|(k, (link, run))| Place {
                dir: if k == 0 {
                    dir.clone()
                } else {
                    dir.join(format!("part{k}"))
                },
                runs_in: link.run_dir(*run),
                only: one.then_some(k),
                socket: Some(link.socket()),
            })
            .collect()
    };
    // A job of a Slurm pool whose allocation has ended has nowhere to run (its nodes are
    // DOWN; a start decided just before must not run it on this machine).
    if let Some(pool) = unallocated_slurm_pool(&d, &job_parts, &settings) {
        let msg = format!("pool {pool} holds no Slurm allocation");
        return fail_start(&d, &rec, msg).await;
    }
    // Nodes beyond a Slurm pool's allocation come in a sibling allocation of the job's own.
    if parts.is_empty() && !d.slurm_pools_of(id).is_empty() {
        if let Err(e) = crate::allocations::settle(&d, id).await {
            return fail_start(&d, &rec, e).await;
        }
    }
    let wrap = if parts.is_empty() {
        slurm_wraps(&d, id, &job_parts, &settings)
    } else {
        Vec::new()
    };
    for place in places.iter() {
        let prepared = {
            let place = place.clone();
            let wrap = wrap.clone();
            let rec = rec.clone();
            let (job_files, components) = (job_files.clone(), components.clone());
            let grace = settings.config.grace_period_ms;
            let mut site = Site::of(&settings.config, &rec);
            if let Some(s) = &place.socket {
                site.socket = s.display().to_string();
            }
            tokio::task::spawn_blocking(move || {
                prepare(
                    &rec,
                    &site,
                    &place,
                    grace,
                    job_files.as_ref(),
                    &components,
                    &wrap,
                )
            })
            .await
        };
        match prepared {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return fail_start(&d, &rec, e).await,
            Err(e) => return fail_start(&d, &rec, format!("preparing the job: {e}")).await,
        }
    }
    if !parts.is_empty() {
        for (k, ((link, run), place)) in parts.iter().zip(&places).enumerate() {
            match crate::hosts::start(link, *run, &place.dir, &rec).await {
                Ok(()) => {}
                Err(StartError::Refused(e)) => {
                    // The parts already started go: the job did not start.
                    for (l, r) in &parts[..k] {
                        let _ = l.send_job(*r, crate::agent::JobOp::Kill);
                    }
                    return fail_start(
                        &d,
                        &rec,
                        format!("cannot start the job on {}: {e}", link.host),
                    )
                    .await;
                }
                Err(StartError::Unanswered(e)) => {
                    // It may have started: the host's agent says when it answers again
                    // (the job is queued again if it did not), or the host goes DOWN.
                    tracing::warn!(job = id, host = %link.host, "the start was not answered: {e}");
                    return;
                }
            }
        }
        let hosts: Vec<&str> = parts.iter().map(|(l, _)| l.host.as_str()).collect();
        tracing::info!(job = id, nodes = ?rec.node_list, hosts = ?hosts, "job started");
        return started(&d, &rec, &settings);
    }
    let log = crate::jobctl::supervisor_log(&dir);
    let mut cmd = tokio::process::Command::new(&settings.supervisor);
    // No pre_exec hook here (the supervisor calls setsid() itself): without one the standard
    // library spawns with posix_spawn instead of fork, which would copy the page tables of a
    // daemon holding 100,000 jobs at every start.
    cmd.arg("supervise")
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let msg = format!(
                "cannot start supervisor {}: {e}",
                settings.supervisor.display()
            );
            return fail_start(&d, &rec, msg).await;
        }
    };
    tracing::info!(job = id, nodes = ?rec.node_list, supervisor = ?child.id(), "job started");
    started(&d, &rec, &settings);
    watch_child(d, id, child, dir).await;
}

/// A Slurm pool of a job's `parts` (its pool, or a component's) that holds no allocation.
fn unallocated_slurm_pool(
    d: &Daemon,
    parts: &[(String, Vec<String>)],
    settings: &crate::daemon::Settings,
) -> Option<String> {
    parts.iter().map(|(p, _)| p.clone()).find(|p| {
        settings
            .config
            .pools
            .iter()
            .any(|c| &c.name == p && c.slurm.is_some())
            && d.allocation(p).is_none()
    })
}

/// The command each process of job `job`, whose parts are `parts`, runs under (one per
/// component), when any of its pools is a Slurm pool: `srun` into the pool's allocation on
/// the first node of its part, and `batchd task` alone for a part on this machine, so that
/// every part finds its environment as batchd wrote it. Empty when no pool is a Slurm pool.
fn slurm_wraps(
    d: &Daemon,
    job: u64,
    parts: &[(String, Vec<String>)],
    settings: &crate::daemon::Settings,
) -> Vec<Vec<String>> {
    let parts: Vec<(&String, String)> = parts
        .iter()
        .map(|(p, nodes)| (p, nodes.first().cloned().unwrap_or_default()))
        .collect();
    let wraps: Vec<Option<Vec<String>>> = parts
        .iter()
        .map(|(pool, first)| {
            d.allocation(pool).map(|(alloc, cfg)| {
                let id = alloc.of_node(first, job).unwrap_or(alloc.id);
                let cpus = settings
                    .config
                    .pools
                    .iter()
                    .find(|p| &p.name == *pool)
                    .map_or(0, |p| p.cpus_per_node);
                crate::slurm::step_of(&cfg, vec![id], job, &settings.supervisor, cpus).command(
                    0,
                    first,
                    &[],
                )
            })
        })
        .collect();
    if wraps.iter().all(Option::is_none) {
        return Vec::new();
    }
    let here = vec![
        settings.supervisor.display().to_string(),
        "task".to_string(),
        "--".to_string(),
    ];
    wraps
        .into_iter()
        .map(|w| w.unwrap_or_else(|| here.clone()))
        .collect()
}

/// What follows a job's start, wherever it runs: its begin mail, and an evolving job's
/// follower.
fn started(d: &Arc<Daemon>, rec: &JobRecord, settings: &crate::daemon::Settings) {
    d.stats.started();
    crate::mail::notify(
        settings.config.mail_program.as_deref(),
        rec,
        crate::mail::Event::Begin,
    );
    if matches!(rec.shape, Some(sched_core::Shape::Evolving { .. })) {
        tokio::spawn(crate::evolve::follow(Arc::clone(d), rec.id));
    }
}

/// Ends the run of `rec` that could not start; nothing if the job no longer runs that run
/// (it ended, or was requeued, another way meanwhile).
async fn fail_start(d: &Arc<Daemon>, rec: &JobRecord, detail: String) {
    let id = rec.id;
    tracing::error!(job = id, "{detail}");
    let st = Status {
        outcome: crate::launch::Outcome::StartFailed,
        exit_code: 1,
        signal: 0,
        end_ms: now_ms(),
        detail: Some(detail),
        usage: None,
    };
    let run = crate::agent::RunId {
        job: id,
        run: rec.restarts,
    };
    d.job_ended_run(run, Some(st)).await;
    give_back_siblings(d, id).await;
}

async fn watch_child(d: Arc<Daemon>, id: u64, mut child: tokio::process::Child, dir: PathBuf) {
    match child.wait().await {
        Ok(s) if !s.success() => tracing::warn!(job = id, "supervisor exited with {s}"),
        Ok(_) => {}
        Err(e) => tracing::warn!(job = id, "waiting for the supervisor: {e}"),
    }
    let mut status = read_status(&dir);
    if status.is_none() {
        // The directory goes once the end is stored: keep the supervisor's last word.
        let said = std::fs::read_to_string(dir.join(files::LOG)).unwrap_or_default();
        let last = said.lines().last().unwrap_or("");
        tracing::warn!(job = id, log = %crate::logging::quoted(last), "the supervisor left no status");
        status = stop_leftovers(&d, id, &dir).await;
    }
    end_slurm_steps(&d, id, status.as_ref()).await;
    d.job_ended(id, status).await;
    give_back_siblings(&d, id).await;
}

/// After job `id`'s end: the sibling allocations it had beyond its pools' allocations go back.
async fn give_back_siblings(d: &Arc<Daemon>, id: u64) {
    if let Err(e) = crate::allocations::settle(d, id).await {
        tracing::warn!(job = id, "{e}");
    }
}

/// Stops what is left of job `id`'s processes once its supervisor is gone without a status
/// (killed, or dead while the daemon was away), as a cancel would: SIGTERM, SIGKILL after the
/// grace period, on a blocking thread (it reads `/proc` until they are gone). The job keeps
/// its nodes until then. Returns the status to record when there was something to stop
/// (`None`: nothing was left, the plain "no status" end).
async fn stop_leftovers(d: &Daemon, id: u64, dir: &Path) -> Option<Status> {
    let uid = d.core().job(id).map(|a| a.rec.uid)?;
    let pids = JobPids::read(&dir.join(files::JOB_PID));
    if pids.leaders.is_empty() {
        return None;
    }
    let grace = Duration::from_millis(d.settings().config.grace_period_ms);
    let stopped =
        tokio::task::spawn_blocking(move || crate::procs::stop_job(&pids, uid, id, grace))
            .await
            .unwrap_or(0);
    if stopped == 0 {
        return None;
    }
    tracing::warn!(
        job = id,
        processes = stopped,
        "the job's supervisor is gone without recording its end; what was left of the job is stopped"
    );
    Some(Status {
        outcome: Outcome::Lost,
        exit_code: 0,
        signal: Signal::SIGKILL as i32,
        end_ms: now_ms(),
        detail: Some(format!(
            "the job's supervisor ended without recording an exit status; batchd stopped the \
             {stopped} process(es) left of the job"
        )),
        usage: None,
    })
}

/// After the end of job `id` in a Slurm allocation other than a success: whether the
/// allocation ended under it (its nodes then go DOWN first, and the job ends as a node
/// failure), and the steps Slurm still runs for it are cancelled (an `srun` killed leaves its
/// step's tasks behind).
async fn end_slurm_steps(d: &Arc<Daemon>, id: u64, status: Option<&Status>) {
    if status.is_some_and(|s| s.outcome == Outcome::Exited && s.signal == 0 && s.exit_code == 0) {
        return;
    }
    let allocations = d.slurm_allocations_of(id);
    if allocations.is_empty() {
        return;
    }
    for pool in d.slurm_pools_of(id) {
        crate::allocations::check_after_failure(d, &pool).await;
    }
    let cancelled =
        tokio::task::spawn_blocking(move || crate::slurm::cancel_steps(&allocations, id)).await;
    if let Ok(Err(e)) = cancelled {
        tracing::warn!(job = id, "cannot cancel the job's steps left in Slurm: {e}");
    }
}

fn read_status(dir: &Path) -> Option<Status> {
    match read_json::<Status>(&dir.join(files::STATUS)) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), "unreadable status file: {e}");
            None
        }
    }
}

/// Watches a supervisor this daemon did not start (found at start-up).
pub async fn watch_adopted(d: Arc<Daemon>, id: u64, dir: PathBuf) {
    loop {
        if let Some(st) = read_status(&dir) {
            end_slurm_steps(&d, id, Some(&st)).await;
            d.job_ended(id, Some(st)).await;
            return give_back_siblings(&d, id).await;
        }
        let alive = read_pid(&dir.join(files::SUPERVISOR_PID))
            .is_some_and(|p| crate::jobctl::supervisor_alive(p, &dir));
        if !alive {
            // It may have written the status between the two checks.
            let st = match read_status(&dir) {
                Some(st) => Some(st),
                None => stop_leftovers(&d, id, &dir).await,
            };
            end_slurm_steps(&d, id, st.as_ref()).await;
            d.job_ended(id, st).await;
            return give_back_siblings(&d, id).await;
        }
        tokio::time::sleep(ADOPTED_POLL).await;
    }
}

/// Where a job runs, and so how it is reached: its pool's executor. A pool of virtual nodes
/// runs its jobs on this machine, a pool of `hosts` on its hosts, through each host's agent
/// session ([`crate::hosts`]); a job is started by [`launch`], followed to its end by the
/// same executor, and reached through it while it runs.
pub enum Executor {
    /// On this machine, under its directory there.
    Local {
        /// The job's directory.
        dir: PathBuf,
    },
    /// On hosts: the host of its batch script, or of each component of a co-allocated job.
    Hosts {
        /// The link to each host, and the run there.
        parts: Vec<(Arc<crate::hostlink::HostLink>, crate::agent::RunId)>,
    },
    /// In Slurm allocations, under a supervisor on this machine whose process is `srun`:
    /// signals go to the job's steps through Slurm (`srun` passes on only some signals).
    Slurm {
        /// The job's directory.
        dir: PathBuf,
        /// The allocation of each of its Slurm parts, and its pool's `[pool.slurm]`.
        allocations: Vec<(crate::config::SlurmConfig, u64)>,
    },
}

impl Executor {
    /// The executor of job `id`.
    pub fn of(d: &Daemon, id: u64) -> Executor {
        let parts = d.remote_parts(id);
        if !parts.is_empty() {
            return Executor::Hosts { parts };
        }
        let allocations = d.slurm_allocations_of(id);
        if allocations.is_empty() {
            Executor::Local { dir: d.job_dir(id) }
        } else {
            Executor::Slurm {
                dir: d.job_dir(id),
                allocations,
            }
        }
    }

    /// Sends `op` to every part; an error only when no part took it.
    fn each(
        parts: &[(Arc<crate::hostlink::HostLink>, crate::agent::RunId)],
        op: crate::agent::JobOp,
    ) -> Result<(), String> {
        let mut last = Ok(());
        let mut any = false;
        for (link, run) in parts {
            match link.send_job(*run, op.clone()) {
                Ok(()) => any = true,
                Err(e) => last = Err(e),
            }
        }
        if any {
            Ok(())
        } else {
            last
        }
    }

    /// Tells job `id`'s supervisor to cancel it (SIGTERM to its group, SIGKILL after the
    /// grace period).
    pub fn cancel(&self, id: u64) -> Result<(), String> {
        match self {
            Executor::Local { dir } | Executor::Slurm { dir, .. } => {
                crate::jobctl::cancel_in(dir, id)
            }
            Executor::Hosts { parts } => Self::each(parts, crate::agent::JobOp::Cancel),
        }
    }

    /// Tells job `id`'s supervisor its new time limit, `deadline` ms since the epoch.
    pub fn set_deadline(&self, id: u64, deadline: u64) -> Result<(), String> {
        match self {
            Executor::Local { dir } | Executor::Slurm { dir, .. } => {
                crate::jobctl::set_deadline_in(dir, id, deadline)
            }
            Executor::Hosts { parts } => Self::each(parts, crate::agent::JobOp::Limit { deadline }),
        }
    }

    /// Sends `signal` to job `id`'s processes in `scope`.
    pub fn signal(&self, id: u64, signal: i32, scope: SignalScope) -> Result<(), String> {
        match self {
            Executor::Local { dir } => crate::jobctl::signal_in(dir, id, signal, scope),
            Executor::Hosts { parts } => {
                Self::each(parts, crate::agent::JobOp::Signal { signal, scope })
            }
            Executor::Slurm { allocations, .. } => {
                let signal_them = || {
                    crate::slurm::signal_steps(allocations, id, signal, scope == SignalScope::Batch)
                };
                // squeue and scancel take a while: off the runtime's workers when on one.
                match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
                    Ok(tokio::runtime::RuntimeFlavor::MultiThread) => {
                        tokio::task::block_in_place(signal_them)
                    }
                    _ => signal_them(),
                }
            }
        }
    }
}

/// Tells job `id`'s supervisor to cancel it ([`Executor::cancel`]).
pub fn cancel(d: &Daemon, id: u64) -> Result<(), String> {
    Executor::of(d, id).cancel(id)
}

/// Tells job `id` its new time limit ([`Executor::set_deadline`]).
pub fn set_deadline(d: &Daemon, id: u64, deadline: u64) -> Result<(), String> {
    Executor::of(d, id).set_deadline(id, deadline)
}

/// Signals job `id` ([`Executor::signal`]).
pub fn signal(d: &Daemon, id: u64, signal: i32, scope: SignalScope) -> Result<(), String> {
    Executor::of(d, id).signal(id, signal, scope)
}

#[cfg(test)]
mod tests {
    use super::*;
    use batch_proto::{JobSpec, JobState};

    fn site() -> Site {
        Site {
            cpus_per_node: 4,
            cluster: "c1".into(),
            host: "login1".into(),
            socket: "/run/b.sock".into(),
            grace_ms: 500,
        }
    }

    #[test]
    fn batchd_variables_override_the_submitters() {
        let mut spec = JobSpec::new("#!/bin/sh\n", "/w", 2, 10);
        spec.environment = vec![
            ("ESCHED_JOB_ID".into(), "999".into()),
            ("HOME".into(), "/h".into()),
        ];
        let mut rec = JobRecord::submitted(5, 1, 1, "u", spec, 0);
        rec.state = JobState::Running;
        rec.start = Some(1);
        rec.pool = Some("debug".into());
        rec.node_list = Some("debug[001-002]".into());
        rec.nodes = 2;
        let env = job_environment(&rec, Path::new("/s/jobs/5"), &site());
        let get = |k: &str| {
            env.iter()
                .filter(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(get("ESCHED_JOB_ID"), vec!["5"]);
        assert_eq!(get("ESCHED_NODELIST"), vec!["debug[001-002]"]);
        assert_eq!(get("ESCHED_NNODES"), vec!["2"]);
        assert_eq!(get("ESCHED_SUBMIT_DIR"), vec!["/w"]);
        assert_eq!(get("HOME"), vec!["/h"]);
        assert_eq!(get("ESCHED_NODEFILE"), vec!["/s/jobs/5/nodes"]);
        assert!(get("ESCHED_STEPFILE").is_empty());
        assert_eq!(get("PATH").len(), 1);
        assert_eq!(get("SLURM_JOB_ID"), vec!["5"]);
        assert_eq!(get("SLURM_JOB_NODELIST"), vec!["debug[001-002]"]);
        assert_eq!(get("SLURM_NNODES"), vec!["2"]);
        assert_eq!(get("SLURM_SUBMIT_DIR"), vec!["/w"]);
        assert_eq!(get("SLURM_JOB_PARTITION"), vec!["debug"]);
        assert_eq!(get("SLURMD_NODENAME"), vec!["debug001"]);
        // Slurm's job variables a script reads: sbatch sets no SLURM_NTASKS without -n or
        // --ntasks-per-node, and counts one task per node then.
        assert!(get("SLURM_NTASKS").is_empty());
        assert_eq!(get("SLURM_TASKS_PER_NODE"), vec!["1(x2)"]);
        assert_eq!(get("SLURM_CPUS_ON_NODE"), vec!["4"]);
        assert_eq!(get("SLURM_JOB_CPUS_PER_NODE"), vec!["4(x2)"]);
        assert_eq!(get("SLURM_CLUSTER_NAME"), vec!["c1"]);
        assert_eq!(get("SLURM_SUBMIT_HOST"), vec!["login1"]);
        assert_eq!(get("SLURM_RESTART_COUNT"), vec!["0"]);
        assert_eq!(get("ENVIRONMENT"), vec!["BATCH"]);
        assert_eq!(get("SLURM_OPEN_MODE"), vec!["t"]);
        assert_eq!(get("ESCHED_SOCKET"), vec!["/run/b.sock"]);
        assert_eq!(get("TMPDIR"), vec!["/tmp"]);
    }

    #[test]
    fn tasks_cpus_memory_and_the_submit_dir_as_sbatch_exports_them() {
        let mut spec = JobSpec::new("#!/bin/sh\n", "/w/sub", 2, 10);
        spec.submit_dir = Some("/w".into());
        spec.resources = Some(Box::new(batch_proto::resources::Resources {
            ntasks: Some(5),
            cpus_per_task: Some(2),
            mem_per_cpu: Some(512),
            ..Default::default()
        }));
        spec.account = Some("proj".into());
        spec.qos = Some("high".into());
        // --export=NONE: nothing of the submitter's.
        spec.environment = Vec::new();
        let mut rec = JobRecord::submitted(5, 0, 0, "root", spec, 0);
        rec.state = JobState::Running;
        rec.node_list = Some("debug[001-002]".into());
        rec.nodes = 2;
        rec.restarts = 2;
        let env = job_environment(&rec, Path::new("/s/jobs/5"), &site());
        let get = |k: &str| {
            env.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        assert_eq!(get("SLURM_NTASKS"), "5");
        assert_eq!(get("SLURM_NPROCS"), "5");
        assert_eq!(get("SLURM_TASKS_PER_NODE"), "3,2");
        assert_eq!(get("SLURM_CPUS_PER_TASK"), "2");
        assert_eq!(get("SLURM_MEM_PER_CPU"), "512");
        assert_eq!(get("SLURM_JOB_ACCOUNT"), "proj");
        assert_eq!(get("SLURM_JOB_QOS"), "high");
        assert_eq!(get("SLURM_RESTART_COUNT"), "2");
        // -D moves the job, not where it was submitted from.
        assert_eq!(get("SLURM_SUBMIT_DIR"), "/w");
        // A login's variables, as Slurm keeps them with --export=NONE.
        assert_eq!(get("USER"), "root");
        assert_eq!(get("HOME"), "/root");
        assert!(get("PATH").contains("/usr/bin"));
    }

    #[test]
    fn output_naming_the_node_is_finished_at_launch() {
        let mut spec = JobSpec::new("#!/bin/sh\n", "/w", 2, 10);
        spec.stdout = Some("o-%N-%j.txt".into());
        let mut rec = JobRecord::submitted(5, 1, 1, "u", spec, 0);
        assert_eq!(rec.stdout, "/w/o-%N-5.txt");
        rec.node_list = Some("debug[003-004]".into());
        let out = output_path(rec.spec.stdout.as_deref(), &rec.stdout, &rec);
        assert_eq!(out, Path::new("/w/o-debug003-5.txt"));
        // stderr follows stdout's pattern when it has none of its own.
        let err = output_path(rec.spec.stdout.as_deref(), &rec.stderr, &rec);
        assert_eq!(err, Path::new("/w/o-debug003-5.txt"));
    }
}
