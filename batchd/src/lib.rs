//! # batchd
//!
//! esched's batch daemon: a durable queue, the policy loop and a local executor behind a Unix
//! socket, in the shape of Slurm's slurmctld + slurmstepd on one machine.
//!
//! The modules form layers, each using only the ones before (ARCHITECTURE.md; kept by
//! `scripts/check-layers.sh`):
//!
//! 0. [`convert`]: the protocol's and the store's types to the scheduler's and back;
//! 1. [`record`]: a job as stored, plain data;
//! 2. [`evorun`]: an evolving job's progress through its scheduled EP, a pure state machine;
//! 3. [`core`]: jobs, nodes, dependencies, snapshots for the policy and every transition of
//!    them, without I/O;
//! 4. [`view`]: what a job looks like on the wire;
//! 5. I/O: [`daemon`] (the state the tasks share), [`config`] (TOML with an embedded
//!    default), [`store`] (SQLite (WAL) with group commit: a submission is durable before it
//!    is acknowledged), [`launch`] (the job directory's files and the clock), [`scheduler`]
//!    (snapshot → policy → validator → act; a pass runs at once, and the events during it or
//!    the gap after it, a multiple of its cost, are folded into the next), [`executor`]
//!    and [`supervise`] (each job under a small supervisor process that outlives the daemon,
//!    enforces the walltime and records the exit status), [`procs`] (a job's processes in
//!    `/proc`, stopped when its supervisor is gone), [`evolve`] (carries out an evolving
//!    job's resizes), `server` (the socket API of `batch-proto`, one file per verb),
//!    [`recovery`] (start-up after a restart or a crash), [`policy`], [`state`], [`logging`],
//!    [`coorm`] and [`sessions`] (CooRM launcher sessions; their connection is
//!    `server/session.rs`).
//!
//! The daemon is a library function, [`run`] (until SIGINT/SIGTERM) or [`spawn`] (on its own
//! thread, stopped by the returned handle), so tests boot it in a temporary directory.
//!
//! Architecture invariant: no policy logic here; every decision comes from the policy in
//! force, through `sched_core::validate`.
#![deny(missing_docs)]
// Unsafe only where a forked child is set up before exec, each block saying why it is sound.
#![deny(unsafe_code)]

pub mod agent;
pub mod allocations;
pub mod cli;
pub mod config;
pub mod convert;
pub mod coorm;
pub mod core;
pub mod daemon;
pub mod evolve;
pub mod evorun;
pub mod executor;
pub mod hostlink;
pub mod hosts;
pub mod jobctl;
pub mod launch;
pub mod logging;
pub mod mail;
pub mod metrics;
pub mod nodes;
pub mod policy;
pub mod procs;
pub mod record;
pub mod recovery;
pub mod scheduler;
mod server;
pub mod sessions;
pub mod slurm;
pub mod snapshot;
pub mod state;
pub mod stats;
pub mod store;
pub mod supervise;
pub mod sync;
pub mod view;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::net::UnixListener;
use tokio::sync::oneshot;

pub use config::{Config, ConfigError};
use daemon::{Daemon, Settings};
use store::{Store, StoreError, StoreThread};

/// Why the daemon cannot start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A bad configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The database.
    #[error("{}: {source}", path.display())]
    Store {
        /// The database file.
        path: PathBuf,
        /// What failed.
        source: StoreError,
    },
    /// A file or directory.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// Another daemon owns the socket.
    #[error("{}: another batchd is already listening there", .0.display())]
    AlreadyRunning(PathBuf),
    /// Another daemon owns the state directory.
    #[error(transparent)]
    Locked(#[from] state::LockError),
    /// The runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// The stored node states cannot be read.
    #[error("{0}")]
    NodeStates(String),
    /// A Slurm pool's allocation could not be obtained.
    #[error("Slurm: {0}")]
    Slurm(String),
    /// The metrics endpoint's address cannot be listened on.
    #[error("[metrics] listen = \"{addr}\": {source}")]
    Metrics {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The program run as `PROGRAM supervise JOBDIR`: the configured one, else this executable if
/// it is batchd, else a `batchd` beside it or one directory up (cargo's test binaries live in
/// `deps/`).
pub(crate) fn supervisor_program(config: &Config) -> PathBuf {
    if let Some(p) = &config.supervisor {
        return p.clone();
    }
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("batchd"));
    if exe.file_name().is_some_and(|n| n == "batchd") {
        return exe;
    }
    let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    [dir.join("batchd"), dir.join("../batchd")]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("batchd"))
}

/// The socket file while this daemon owns it: removed when dropped (a stop, or a start that
/// failed after binding).
struct SocketFile(PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Binds the socket, refusing to steal it from a live daemon.
fn bind(path: &Path) -> Result<(UnixListener, SocketFile), Error> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(Error::AlreadyRunning(path.to_path_buf()));
        }
        std::fs::remove_file(path).map_err(io(path))?;
    }
    let l = UnixListener::bind(path).map_err(io(path))?;
    let file = SocketFile(path.to_path_buf());
    // Anyone may connect: SO_PEERCRED says who they are and each request is checked.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666)).map_err(io(path))?;
    Ok((l, file))
}

/// Raises the soft limit on open files to the hard one (the default soft limit, often 1024,
/// is what a few idle clients exhaust); returns the soft limit in force.
fn raise_nofile() -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
            Ok(()) => hard,
            Err(e) => {
                tracing::warn!("cannot raise the open-file limit from {soft} to {hard}: {e}");
                soft
            }
        },
        Ok((soft, _)) => soft,
        Err(e) => {
            tracing::warn!("cannot read the open-file limit: {e}");
            1024
        }
    }
}

/// Everything started, before serving.
struct Started {
    daemon: Arc<Daemon>,
    listener: UnixListener,
    store_thread: StoreThread,
    adopted: Vec<u64>,
    preempted: Vec<u64>,
    sessions: Vec<u64>,
    socket: PathBuf,
    socket_file: SocketFile,
    lock: state::StateLock,
    nofile: u64,
    metrics: Option<tokio::net::TcpListener>,
}

/// The Prometheus endpoint's listener, when `[metrics] listen` asks for one: bound before the
/// daemon answers, so that an address taken fails the start rather than a scrape.
async fn bind_metrics(config: &Config) -> Result<Option<tokio::net::TcpListener>, Error> {
    let Ok(Some(addr)) = config.metrics.address() else {
        // `Config::check` refused a bad address already.
        return Ok(None);
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Metrics { addr, source })?;
    let addr = listener.local_addr().unwrap_or(addr);
    tracing::info!(%addr, "metrics endpoint: http://{addr}/metrics");
    Ok(Some(listener))
}

/// What outlives serving: the database writer to join, then the state lock to release.
struct Stopped {
    store_thread: StoreThread,
    lock: state::StateLock,
}

impl Stopped {
    /// Waits for the database, then lets the state directory go.
    fn finish(self) {
        self.store_thread.join();
        drop(self.lock);
    }
}

/// Locks the state directory, binds the socket, loads the policy and recovers jobs (inside a
/// runtime). Nothing of the state is read or written before the lock is held, and recovery
/// runs only once the socket is ours: a refused start changes nothing.
async fn start(config: Config, config_path: Option<PathBuf>) -> Result<Started, Error> {
    let file = config_path
        .as_ref()
        .map_or_else(|| "<built-in>".to_string(), |p| p.display().to_string());
    let state_dir = config.state_path();
    state::create_private_dir(&state_dir).map_err(io(&state_dir))?;
    let lock = state::StateLock::acquire(&state_dir)?;
    let socket = config.socket_path();
    let (listener, socket_file) = bind(&socket)?;
    let metrics = bind_metrics(&config).await?;
    // An older batchd left it world-readable.
    state::private_dir(&state_dir).map_err(io(&state_dir))?;
    let nofile = raise_nofile();
    // Jobs' scripts and node files live below; as root, their users reach them by name.
    let jobs = state_dir.join("jobs");
    state::private_dir(&jobs).map_err(io(&jobs))?;
    let policy = {
        let (c, f) = (config.clone(), file.clone());
        tokio::task::spawn_blocking(move || policy::check(&c, &f))
            .await
            .map_err(|e| ConfigError::key(&file, "policy.name", e.to_string()))??
    };
    let db = state_dir.join("batchd.sqlite");
    state::private_database(&db).map_err(io(&db))?;
    let (store, store_thread, loaded) =
        Store::open(&db, config.sync).map_err(|source| Error::Store {
            path: db.clone(),
            source,
        })?;
    let allocations = if config.pools.iter().any(|p| p.slurm.is_some()) {
        let (c, dir) = (config.clone(), state_dir.clone());
        tokio::task::spawn_blocking(move || slurm::obtain_all(&c, &dir))
            .await
            .map_err(|e| Error::Slurm(e.to_string()))?
            .map_err(Error::Slurm)?
    } else {
        Default::default()
    };
    let mut core = core::Core::new(config.pools.iter().map(|p| (p.name.as_str(), p.size())));
    core.set_fair_start(config.coorm.fair_start_ms);
    for (i, p) in config.pools.iter().enumerate() {
        if let Some(hosts) = p.host_names() {
            core.name_hosts(i, hosts);
        }
        if let Some(a) = allocations.get(&p.name) {
            core.name_hosts(i, a.pool_nodes());
            core.set_pool_end(i, a.end_ms);
        }
    }
    let remote: std::collections::HashSet<String> = config
        .pools
        .iter()
        .filter(|p| p.hosts.is_some())
        .map(|p| p.name.clone())
        .collect();
    let mut recovered = recovery::restore(&mut core, loaded, &state_dir, &|p| remote.contains(p));
    // After the running jobs have their nodes back: a node out of service under a running
    // job keeps the job (DRAIN) or stops it (DOWN, normally stopped before the restart).
    let mut stopped_for_nodes = Vec::new();
    for (name, condition) in nodes::load(&state_dir).map_err(Error::NodeStates)? {
        match core.set_node_condition(&name, Some(condition)) {
            Ok(change) => {
                stopped_for_nodes.extend(change.store);
                recovered.preempted.extend(change.stop);
            }
            Err(e) => tracing::warn!(node = %name, "a stored node state is dropped: {e}"),
        }
    }
    // Before their directories (and pid files) are swept: a job recorded as ended leaves no
    // process behind.
    for (id, dir, uid) in &recovered.to_stop {
        jobctl::kill_lost(*id, dir, *uid);
    }
    recovery::sweep_job_dirs(&core, &state_dir);
    for rec in recovered
        .lost
        .into_iter()
        .chain(recovered.requeued)
        .chain(stopped_for_nodes)
    {
        store.commit(rec).await.map_err(|source| Error::Store {
            path: db.clone(),
            source,
        })?;
    }
    tracing::info!(
        pending = recovered.pending,
        running = recovered.adopted.len() + recovered.sessions.len(),
        next_id = core.next_id(),
        policy = policy.name(),
        "state loaded"
    );
    let settings = Settings {
        supervisor: supervisor_program(&config),
        config,
        config_path,
    };
    let control = hostlink::control_dir(&state_dir);
    if settings.config.pools.iter().any(|p| p.hosts.is_some()) {
        state::private_dir(&control).map_err(io(&control))?;
    }
    let links = hostlink::Links::new(&settings.config, &control, &settings.supervisor);
    let daemon = Arc::new(Daemon::new(
        core,
        store,
        policy,
        settings,
        state_dir,
        links,
        allocations,
    ));
    Ok(Started {
        daemon,
        listener,
        store_thread,
        adopted: recovered.adopted,
        preempted: recovered.preempted,
        sessions: recovered.sessions,
        socket,
        socket_file,
        lock,
        nofile,
        metrics,
    })
}

/// Serves until `stop` completes; then stops accepting and removes the socket.
async fn serve(started: Started, stop: impl std::future::Future<Output = ()>) -> Stopped {
    let Started {
        daemon,
        listener,
        store_thread,
        adopted,
        preempted,
        sessions,
        socket,
        socket_file,
        lock,
        nofile,
        metrics,
    } = started;
    for id in sessions {
        coorm::adopted(&daemon, id);
    }
    // A stop sent before the restart is sent again: the supervisor takes a second as the one
    // cancel under way.
    for id in preempted {
        if let Err(e) = executor::cancel(&daemon, id) {
            tracing::debug!(job = id, "stopping a preempted job again: {e}");
        }
    }
    for id in adopted {
        // A job on a host is followed through its host's session.
        if daemon.remote(id).is_none() {
            tokio::spawn(executor::watch_adopted(
                Arc::clone(&daemon),
                id,
                daemon.job_dir(id),
            ));
        }
        tokio::spawn(evolve::follow(Arc::clone(&daemon), id));
    }
    hosts::start_all(&daemon);
    allocations::start_all(&daemon);
    let sched = tokio::spawn(scheduler::run(Arc::clone(&daemon)));
    let api = tokio::spawn(server::serve(Arc::clone(&daemon), listener, nofile));
    let metrics = metrics.map(|l| tokio::spawn(crate::metrics::serve(Arc::clone(&daemon), l)));
    daemon.reschedule();
    tracing::info!(socket = %socket.display(), "batchd ready");
    stop.await;
    api.abort();
    sched.abort();
    if let Some(m) = metrics {
        m.abort();
    }
    drop(socket_file);
    {
        let d = Arc::clone(&daemon);
        let _ = tokio::task::spawn_blocking(move || allocations::give_back_idle(&d)).await;
    }
    tracing::info!("batchd stopping; running jobs stay with their supervisors");
    Stopped { store_thread, lock }
}

fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)
}

/// Runs the daemon until SIGINT or SIGTERM; SIGHUP re-reads the config (see `reconfigure`).
pub fn run(config: Config, config_path: Option<PathBuf>) -> Result<(), Error> {
    let rt = runtime()?;
    let store_thread = rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        // The handlers exist before the socket does: a signal sent as soon as batchd answers
        // must find them, not the default action (which, for SIGHUP, ends the process).
        let hup = signal(SignalKind::hangup());
        let term = signal(SignalKind::terminate());
        let int = signal(SignalKind::interrupt());
        let started = start(config, config_path).await?;
        let d = Arc::clone(&started.daemon);
        let hup = async move {
            let Ok(mut s) = hup else {
                return;
            };
            while s.recv().await.is_some() {
                match server::reconfigure(&d).await {
                    Ok(r) => tracing::info!(policy = %r.policy, "SIGHUP: reconfigured"),
                    Err(e) => tracing::error!("SIGHUP: reconfigure failed: {e}"),
                }
            }
        };
        tokio::spawn(hup);
        let stop = async {
            match (term, int) {
                (Ok(mut t), Ok(mut i)) => {
                    tokio::select! { _ = t.recv() => {}, _ = i.recv() => {} }
                }
                _ => std::future::pending::<()>().await,
            }
        };
        Ok::<_, Error>(serve(started, stop).await)
    })?;
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    store_thread.finish();
    Ok(())
}

/// A daemon running on a thread of its own (for tests and embedding).
pub struct DaemonHandle {
    socket: PathBuf,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl DaemonHandle {
    /// Its socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Stops it and waits until its database is closed.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for DaemonHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Starts a daemon on its own thread; returns once its socket accepts connections.
pub fn spawn(config: Config, config_path: Option<PathBuf>) -> Result<DaemonHandle, Error> {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<PathBuf, Error>>();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("batchd".into())
        .spawn(move || {
            let rt = match runtime() {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let store_thread = rt.block_on(async {
                match start(config, config_path).await {
                    Ok(started) => {
                        let _ = ready_tx.send(Ok(started.socket.clone()));
                        Some(
                            serve(started, async {
                                let _ = stop_rx.await;
                            })
                            .await,
                        )
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        None
                    }
                }
            });
            rt.shutdown_timeout(std::time::Duration::from_secs(2));
            if let Some(t) = store_thread {
                t.finish();
            }
        })
        .map_err(Error::Runtime)?;
    match ready_rx.recv() {
        Ok(Ok(socket)) => Ok(DaemonHandle {
            socket,
            stop: Some(stop_tx),
            thread: Some(thread),
        }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => {
            let _ = thread.join();
            Err(Error::Runtime(std::io::Error::other(
                "the daemon thread died while starting",
            )))
        }
    }
}
