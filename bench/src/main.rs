//! `ebench`: batchd's figures, printed (never asserted): submissions per second through the
//! socket API and through `esubmit` processes, submit-to-start latency on an idle cluster
//! (probes back to back and spaced), a burst of submissions and the scheduling passes it costs,
//! job throughput with many pending jobs, and `equeue`'s time with many pending jobs.
//! `scripts/bench-batchd.sh` builds and runs it.
//!
//! Each part starts its own batchd (found next to this executable unless `--batchd` says
//! otherwise) on a temporary socket and state directory, so it never touches a production
//! daemon and no part's queue weighs on another's.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use batch_proto::{Client, JobInfo, JobSpec, Request, Response, ShowJobRequest, SubmitRequest};
use clap::Parser;
use cli_tools::batch::cli::{now_ms, run_tool};
use esched_bench::cli::Cli;

struct Daemon {
    child: Child,
    dir: PathBuf,
    socket: PathBuf,
    work: PathBuf,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start_daemon(cli: &Cli, exe: &Path) -> Result<Daemon> {
    static BOOTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = BOOTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("esched-bench-{}-{n}", std::process::id()));
    let socket = dir.join("batchd.sock");
    let work = dir.join("work");
    std::fs::create_dir_all(&work)?;
    let plugin_dir = exe.parent().context("batchd has no directory")?;
    let mut config = format!(
        "socket = {:?}\nstate_dir = {:?}\nplugin_dir = {:?}\n",
        socket,
        dir.join("state"),
        plugin_dir
    );
    if let Some(s) = &cli.sync {
        config.push_str(&format!("sync = {s:?}\n"));
    }
    if let Some(r) = cli.repolicy_ms {
        config.push_str(&format!("repolicy_interval_ms = {r}\n"));
    }
    for line in &cli.set {
        config.push_str(line);
        config.push('\n');
    }
    match &cli.ssh_config {
        None if cli.slurm_conf.is_some() => config.push_str(&format!(
            "\n[[pool]]\nname = \"slurm\"\nnodes = {}\n[pool.slurm]\ntime_limit = \"60\"\n",
            cli.nodes
        )),
        None => config.push_str(&format!(
            "\n[[pool]]\nname = \"debug\"\nnodes = {}\n",
            cli.nodes
        )),
        Some(ssh) => config.push_str(&format!(
            "\n[[pool]]\nname = \"hosts\"\nhosts = \"node[1-4]\"\n[pool.ssh]\n\
             options = [\"-F\", {ssh:?}]\nspool = {:?}\n",
            dir.join("spool")
        )),
    }
    config.push_str("\n[policy]\nname = \"cbf\"\n");
    let cfg = dir.join("batchd.toml");
    std::fs::write(&cfg, config)?;
    let log = std::fs::File::create(dir.join("batchd.log"))?;
    let mut cmd = Command::new(exe);
    if let Some(conf) = &cli.slurm_conf {
        cmd.env("SLURM_CONF", conf);
    }
    let child = cmd
        .arg("--config")
        .arg(&cfg)
        // The scheduler's debug line, one per pass that called the policy, counts passes.
        .env(
            "RUST_LOG",
            "warn,batchd::hosts=info,batchd::scheduler=debug",
        )
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let d = Daemon {
        child,
        dir,
        socket,
        work,
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while Client::connect(&d.socket).is_err() {
        if Instant::now() > deadline {
            bail!("batchd did not answer within 20 s; see its log");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if cli.ssh_config.is_some() {
        // Every host's session open (its ControlMaster warm) before anything is timed.
        let log = d.dir.join("batchd.log");
        while std::fs::read_to_string(&log).map_or(0, |t| t.matches("host answers").count()) < 4 {
            if Instant::now() > deadline {
                bail!(
                    "the four hosts did not answer within 20 s; see {}",
                    log.display()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    Ok(d)
}

/// `n` one-node `true` jobs submitted at once: (seconds from the first start to the last,
/// starts/s over them).
fn starts(d: &Daemon, n: usize) -> Result<(f64, f64)> {
    let mut client = Client::connect(&d.socket)?;
    let work = d.work.to_str().context("non-UTF-8 temp dir")?.to_string();
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let mut spec = JobSpec::new("#!/bin/sh\ntrue\n", work.clone(), 1, 60_000);
        spec.name = format!("start{i}");
        match client.request(&Request::Submit(SubmitRequest {
            spec,
            test_only: false,
        }))? {
            Response::Submitted { id } => ids.push(id),
            other => bail!("unexpected reply {other:?}"),
        }
    }
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut first = u64::MAX;
    let mut last = 0;
    for id in ids {
        loop {
            let jobs = client.jobs(&Request::ShowJob(ShowJobRequest { id }))?;
            let j = jobs.first().context("a job vanished")?;
            if j.state.is_finished() {
                let start = j.start_time.context("a finished job without a start")?;
                first = first.min(start);
                last = last.max(start);
                break;
            }
            if Instant::now() > deadline {
                bail!("job {id} did not end within 600 s");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let secs = (last.saturating_sub(first)) as f64 / 1000.0;
    Ok((secs, (n.saturating_sub(1)) as f64 / secs.max(1e-3)))
}

fn env_vars() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

fn held_spec(work: &str, env: &[(String, String)], i: usize) -> JobSpec {
    let mut s = JobSpec::new("#!/bin/sh\ntrue\n", work, 1, 60_000);
    s.name = format!("bench{i}");
    s.hold = true;
    s.environment = env.to_vec();
    s
}

/// `clients` threads each submitting `per_client` held jobs; returns (jobs, seconds).
fn api_submissions(d: &Daemon, clients: usize, per_client: usize) -> Result<(usize, f64)> {
    let work = d.work.to_str().context("non-UTF-8 temp dir")?.to_string();
    let env = env_vars();
    let t0 = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let socket = d.socket.clone();
            let work = work.clone();
            let env = env.clone();
            std::thread::spawn(move || -> Result<()> {
                let mut client = Client::connect(&socket)?;
                for i in 0..per_client {
                    let req = Request::Submit(SubmitRequest {
                        spec: held_spec(&work, &env, c * per_client + i),
                        test_only: false,
                    });
                    match client.request(&req)? {
                        Response::Submitted { .. } => {}
                        other => bail!("unexpected reply {other:?}"),
                    }
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join()
            .map_err(|_| anyhow::anyhow!("a client thread panicked"))??;
    }
    Ok((clients * per_client, t0.elapsed().as_secs_f64()))
}

fn tool(d: &Daemon, name: &str) -> Result<Command> {
    let exe = std::env::current_exe()?.with_file_name(name);
    let mut cmd = Command::new(exe);
    cmd.env("ESCHED_SOCKET", &d.socket)
        .current_dir(&d.work)
        .stdin(Stdio::null());
    Ok(cmd)
}

fn esubmit_processes(d: &Daemon, n: usize) -> Result<f64> {
    let t0 = Instant::now();
    for _ in 0..n {
        let out = tool(d, "esubmit")?
            .args(["--parsable", "-H", "--wrap", "true"])
            .output()?;
        if !out.status.success() {
            bail!("esubmit failed: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    Ok(t0.elapsed().as_secs_f64())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

/// How the latency probes follow one another.
#[derive(Clone, Copy, Debug)]
enum Spacing {
    /// Each probe submitted as soon as the job before it is recorded ended: the case of a
    /// chain of short jobs, where the submission comes right after the pass that started the
    /// job before it.
    BackToBack,
    /// Each probe submitted this long after the job before it is recorded ended: a submission
    /// after a quiet spell.
    Spaced(Duration),
}

impl std::fmt::Display for Spacing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Spacing::BackToBack => {
                write!(f, "back to back (each right after the previous job's end)")
            }
            Spacing::Spaced(d) => write!(
                f,
                "spaced (each {} ms after the previous job's end)",
                d.as_millis()
            ),
        }
    }
}

/// Submit-to-start of trivial jobs, one at a time on an idle cluster, each submitted as
/// `spacing` says: (to the daemon's start record, to the job's first instruction), ms each.
fn latency(d: &Daemon, n: usize, spacing: Spacing) -> Result<(Vec<f64>, Vec<f64>)> {
    let mut client = Client::connect(&d.socket)?;
    let work = d.work.to_str().context("non-UTF-8 temp dir")?.to_string();
    let (mut daemon_side, mut job_side) = (Vec::new(), Vec::new());
    for i in 0..n {
        let stamp = d.work.join(format!("stamp{i}"));
        // The job's first instruction takes the time; `date` is a fork+exec away, which we
        // measure separately below and subtract.
        let script = format!(
            "#!/bin/sh\ndate +%s%N > {}.tmp && mv {0}.tmp {0}\n",
            stamp.display()
        );
        let spec = JobSpec::new(script, work.clone(), 1, 60_000);
        let sent = SystemTimeNs::now();
        let id = match client.request(&Request::Submit(SubmitRequest {
            spec,
            test_only: false,
        }))? {
            Response::Submitted { id } => id,
            other => bail!("unexpected reply {other:?}"),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        let ns = loop {
            if let Ok(t) = std::fs::read_to_string(&stamp) {
                if let Ok(ns) = t.trim().parse::<u128>() {
                    break ns;
                }
            }
            if Instant::now() > deadline {
                bail!("job {id} did not start within 20 s");
            }
            std::thread::sleep(Duration::from_micros(200));
        };
        job_side.push((ns.saturating_sub(sent.0)) as f64 / 1e6);
        // The next probe follows the end of this job, as a chain of jobs would.
        let job = loop {
            let jobs = client.jobs(&Request::ShowJob(ShowJobRequest { id }))?;
            let j: JobInfo = jobs.into_iter().next().context("a job vanished")?;
            if j.state.is_finished() {
                break j;
            }
            if Instant::now() > deadline {
                bail!("job {id} did not end within 20 s");
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        if let Some(start) = job.start_time {
            daemon_side.push(start as f64 - (sent.0 / 1_000_000) as f64);
        }
        if let Spacing::Spaced(gap) = spacing {
            std::thread::sleep(gap);
        }
    }
    daemon_side.sort_by(f64::total_cmp);
    job_side.sort_by(f64::total_cmp);
    Ok((daemon_side, job_side))
}

/// Scheduling passes that called the policy so far: one debug line each in the daemon's log.
fn passes(d: &Daemon) -> usize {
    std::fs::read_to_string(d.dir.join("batchd.log")).map_or(0, |t| t.matches("policy run").count())
}

/// A job on every node of the virtual pool, so that the jobs submitted after it wait: returns
/// its id once it runs. Cancel it when done: its supervisor outlives the daemon, and only its
/// 5-minute time limit ends it otherwise (an interrupted run leaves nothing for longer).
fn block_all(d: &Daemon, nodes: u32) -> Result<u64> {
    let mut client = Client::connect(&d.socket)?;
    let work = d.work.to_str().context("non-UTF-8 temp dir")?.to_string();
    let mut spec = JobSpec::new("#!/bin/sh\nsleep 300\n", work, nodes, 300_000);
    spec.name = "blocker".into();
    let id = match client.request(&Request::Submit(SubmitRequest {
        spec,
        test_only: false,
    }))? {
        Response::Submitted { id } => id,
        other => bail!("unexpected reply {other:?}"),
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let jobs = client.jobs(&Request::ShowJob(ShowJobRequest { id }))?;
        if jobs.first().is_some_and(|j| j.start_time.is_some()) {
            return Ok(id);
        }
        if Instant::now() > deadline {
            bail!("the blocking job did not start within 20 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Cancels jobs `ids`.
fn cancel(d: &Daemon, ids: Vec<u64>) -> Result<()> {
    let mut client = Client::connect(&d.socket)?;
    match client.request(&Request::Cancel(batch_proto::CancelRequest {
        filter: batch_proto::JobFilter {
            ids,
            ..Default::default()
        },
        signal: None,
        scope: Default::default(),
    }))? {
        Response::Acted(_) => Ok(()),
        other => bail!("unexpected reply to the cancel {other:?}"),
    }
}

/// `n` one-node jobs running `script`, submitted at once by `clients` threads: (their ids,
/// seconds from the first submission to the last reply).
fn submit_many(d: &Daemon, clients: usize, n: usize, script: &str) -> Result<(Vec<u64>, f64)> {
    let work = d.work.to_str().context("non-UTF-8 temp dir")?.to_string();
    let clients = clients.clamp(1, n.max(1));
    let t0 = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let socket = d.socket.clone();
            let work = work.clone();
            let script = script.to_string();
            let mine = n / clients + usize::from(c < n % clients);
            std::thread::spawn(move || -> Result<Vec<u64>> {
                let mut client = Client::connect(&socket)?;
                let mut ids = Vec::with_capacity(mine);
                for i in 0..mine {
                    let mut spec = JobSpec::new(script.clone(), work.clone(), 1, 60_000);
                    spec.name = format!("many{c}-{i}");
                    match client.request(&Request::Submit(SubmitRequest {
                        spec,
                        test_only: false,
                    }))? {
                        Response::Submitted { id } => ids.push(id),
                        other => bail!("unexpected reply {other:?}"),
                    }
                }
                Ok(ids)
            })
        })
        .collect();
    let mut ids = Vec::with_capacity(n);
    for h in handles {
        ids.extend(
            h.join()
                .map_err(|_| anyhow::anyhow!("a client thread panicked"))??,
        );
    }
    Ok((ids, t0.elapsed().as_secs_f64()))
}

/// What a burst cost.
struct Burst {
    /// Seconds from the first submission to the last reply.
    secs: f64,
    /// Passes meanwhile.
    passes: usize,
    /// Seconds from the first submission until a pass had planned them all, and passes until
    /// then (`None`: the last one was not planned within 120 s).
    planned: Option<(f64, usize)>,
}

/// The burst: `n` trivial one-node jobs submitted at once while a job holds every node, so
/// that every pass plans the whole queue so far.
fn burst(d: &Daemon, cli: &Cli, n: usize) -> Result<Burst> {
    let blocker = block_all(d, cli.nodes)?;
    let before = passes(d);
    let t0 = Instant::now();
    let (mut ids, secs) = submit_many(d, cli.clients, n, "#!/bin/sh\ntrue\n")?;
    let during = passes(d).saturating_sub(before);
    let mut planned = None;
    if let Some(&last) = ids.iter().max() {
        let mut client = Client::connect(&d.socket)?;
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            let jobs = client.jobs(&Request::ShowJob(ShowJobRequest { id: last }))?;
            if jobs.first().is_some_and(|j| j.expected_start.is_some()) {
                let secs = t0.elapsed().as_secs_f64();
                planned = Some((secs, passes(d).saturating_sub(before)));
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    ids.push(blocker);
    cancel(d, ids)?;
    Ok(Burst {
        secs,
        passes: during,
        planned,
    })
}

/// Job throughput: `n` one-node `sleep 0.1` jobs queued behind a job holding every node,
/// which is then cancelled. Jobs/s are counted from the 16th start on, over the next
/// min(n − 24, 1000) jobs to leave the queue (the pending count, polled every 5 ms): (jobs
/// counted, seconds, passes meanwhile).
fn throughput(d: &Daemon, cli: &Cli, n: usize) -> Result<(usize, f64, usize)> {
    let blocker = block_all(d, cli.nodes)?;
    submit_many(d, cli.clients, n, "#!/bin/sh\nsleep 0.1\n")?;
    cancel(d, vec![blocker])?;
    let warm = 16;
    let counted = n.saturating_sub(warm + 8).clamp(1, 1000);
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut from: Option<(Instant, usize)> = None;
    loop {
        let pending = pending_count(d)?;
        let started = n.saturating_sub(pending);
        match from {
            None if started >= warm => from = Some((Instant::now(), passes(d))),
            Some((t, p)) if started >= warm + counted => {
                return Ok((
                    counted,
                    t.elapsed().as_secs_f64(),
                    passes(d).saturating_sub(p),
                ))
            }
            _ => {}
        }
        if Instant::now() > deadline {
            bail!("{n} jobs of 0.1 s did not leave the queue within 600 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn median(v: &[f64]) -> f64 {
    percentile(v, 0.5)
}

struct SystemTimeNs(u128);

impl SystemTimeNs {
    fn now() -> Self {
        SystemTimeNs(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        )
    }
}

/// Fork+exec of `date` alone, ms (median of 20): the part of the job-side latency that is the
/// probe's own cost.
fn date_cost() -> Result<f64> {
    let mut v = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        Command::new("sh")
            .args(["-c", "date +%s%N > /dev/null"])
            .status()?;
        v.push(t.elapsed().as_secs_f64() * 1e3);
    }
    v.sort_by(f64::total_cmp);
    Ok(percentile(&v, 0.5))
}

fn time_equeue(d: &Daemon, runs: usize, args: &[&str]) -> Result<(f64, f64)> {
    let mut v = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let st = tool(d, "equeue")?
            .args(args)
            .stdout(Stdio::null())
            .status()?;
        if !st.success() {
            bail!("equeue failed");
        }
        v.push(t.elapsed().as_secs_f64() * 1e3);
    }
    v.sort_by(f64::total_cmp);
    Ok((percentile(&v, 0.5), v.first().copied().unwrap_or(f64::NAN)))
}

fn pending_count(d: &Daemon) -> Result<usize> {
    let mut c = Client::connect(&d.socket)?;
    match c.request(&Request::Info(batch_proto::InfoRequest {}))? {
        Response::Info(i) => Ok(usize::try_from(i.pending).unwrap_or(usize::MAX)),
        other => bail!("unexpected reply {other:?}"),
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let exe = match &cli.batchd {
        Some(p) => p.clone(),
        None => std::env::current_exe()?.with_file_name("batchd"),
    };
    println!(
        "batchd: {} (sync {}, repolicy {} ms), {}, policy cbf; started {}",
        exe.display(),
        cli.sync.as_deref().unwrap_or("default"),
        cli.repolicy_ms
            .map_or_else(|| "default".to_string(), |r| r.to_string()),
        if cli.ssh_config.is_some() {
            "4 hosts over ssh".to_string()
        } else if cli.slurm_conf.is_some() {
            format!("{} nodes in a Slurm allocation", cli.nodes)
        } else {
            format!("{} virtual nodes", cli.nodes)
        },
        now_ms()
    );

    if cli.latency > 0 {
        let probe = date_cost()?;
        let gap = Duration::from_millis(cli.latency_gap_ms);
        for spacing in [Spacing::BackToBack, Spacing::Spaced(gap)] {
            let d = start_daemon(&cli, &exe)?;
            let (daemon_side, job_side) = latency(&d, cli.latency, spacing)?;
            println!(
                "submit-to-start, idle cluster, {} jobs submitted one at a time, {spacing}: \
                 daemon start record median {:.1} ms (p90 {:.1}, max {:.1}); \
                 job's first instruction median {:.1} ms (p90 {:.1}, max {:.1}), of which ~{:.1} ms is the `date` probe",
                cli.latency,
                median(&daemon_side), percentile(&daemon_side, 0.9), daemon_side.last().copied().unwrap_or(f64::NAN),
                median(&job_side), percentile(&job_side, 0.9), job_side.last().copied().unwrap_or(f64::NAN),
                probe
            );
        }
    }

    if cli.burst > 0 && cli.ssh_config.is_none() && cli.slurm_conf.is_none() {
        let d = start_daemon(&cli, &exe)?;
        let Burst {
            secs,
            passes: during,
            planned,
        } = burst(&d, &cli, cli.burst)?;
        let planned = match planned {
            Some((s, p)) => {
                format!("all planned {s:.2} s after the first submission, {p} passes by then")
            }
            None => "the last one not planned within 120 s".to_string(),
        };
        println!(
            "burst: {} one-node jobs submitted at once by {} clients behind a job holding every node: \
             {secs:.2} s ({:.0} submissions/s), {during} scheduling passes during the burst; {planned}",
            cli.burst,
            cli.clients.max(1),
            cli.burst as f64 / secs
        );
    }

    for &n in cli.throughput.iter().filter(|&&n| n > 0) {
        if cli.ssh_config.is_some() || cli.slurm_conf.is_some() {
            break;
        }
        let d = start_daemon(&cli, &exe)?;
        let (jobs, secs, passes) = throughput(&d, &cli, n)?;
        println!(
            "throughput: {n} pending one-node 0.1 s jobs on {} nodes: {:.1} jobs/s ({jobs} jobs in {secs:.2} s, {passes} passes)",
            cli.nodes,
            jobs as f64 / secs
        );
    }

    let d = start_daemon(&cli, &exe)?;
    if cli.starts > 0 {
        let (secs, rate) = starts(&d, cli.starts)?;
        println!(
            "starts: {} one-node jobs submitted at once, first to last start {secs:.2} s = {rate:.0} starts/s",
            cli.starts
        );
    }

    if cli.clients > 0 && cli.per_client > 0 {
        let (n, secs) = api_submissions(&d, cli.clients, cli.per_client)?;
        println!(
            "API submissions: {} clients x {} held jobs = {n} in {secs:.2} s = {:.0} submissions/s",
            cli.clients,
            cli.per_client,
            n as f64 / secs
        );
    }

    if cli.esubmit > 0 {
        let secs = esubmit_processes(&d, cli.esubmit)?;
        println!(
            "esubmit processes: {} sequential in {secs:.2} s = {:.0} submissions/s",
            cli.esubmit,
            cli.esubmit as f64 / secs
        );
    }

    let pending = pending_count(&d)?;
    if cli.queue > pending {
        let missing = cli.queue - pending;
        let clients = cli.clients.max(1);
        let (n, secs) = api_submissions(&d, clients, missing.div_ceil(clients))?;
        println!(
            "filled the queue with {n} more held jobs in {secs:.1} s ({:.0}/s)",
            n as f64 / secs
        );
    }
    let pending = pending_count(&d)?;
    if cli.runs == 0 {
        return Ok(ExitCode::SUCCESS);
    }
    for args in [&[][..], &["--records"][..], &["-t", "R"][..]] {
        let (median, min) = time_equeue(&d, cli.runs, args)?;
        println!("equeue {:<10} with {pending} pending: median {median:.0} ms, min {min:.0} ms over {} runs",
            args.join(" "), cli.runs);
    }
    if Command::new("hyperfine")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        println!("hyperfine, equeue with {pending} pending:");
        let equeue = std::env::current_exe()?.with_file_name("equeue");
        let st = Command::new("hyperfine")
            .args([
                "-N",
                "--warmup",
                "2",
                "--runs",
                &cli.runs.max(3).to_string(),
                "--style",
                "basic",
            ])
            .arg(format!(
                "{} --socket {}",
                equeue.display(),
                d.socket.display()
            ))
            .stdout(Stdio::inherit())
            .status()?;
        if !st.success() {
            println!("(hyperfine failed: {st})");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    run_tool("ebench", || run(cli))
}
