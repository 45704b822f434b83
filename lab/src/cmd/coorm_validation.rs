//! `esim coorm-validation`: Klein & Pérez's CooRM §IV-D ("Validation", Fig. 8) — the same
//! workload run by the simulator and by a real batchd with real launcher processes, their
//! message volume and CPU time side by side.
//!
//! The workload is §IV-D's: one pack of W0 in which a percentage of the applications is
//! replaced by CEM instances (`workload::build_cem_share`), n_C pools of n_H hosts (§IV-A's
//! resource model), the x-axis the CEM percentage.
//!
//! **The real run.** esim starts `batchd` (a child process, with a config written for the
//! run: the pools, speeds and links of `Platform::paper`, policy `coorm` linked in, the
//! re-policy interval and fair-start delay of §IV-A compressed) and **one launcher process
//! per application** (`esim coorm-launcher`, hidden, built on `esched-launcher`): every
//! application of the paper comes with its own launcher, and §IV-D counts starting them in
//! its CPU figure ("the measured CPU-time includes starting up the launchers"); it also
//! exercises batchd with as many concurrent sessions as the workload has waiting and running
//! applications. Each launcher subscribes at its application's arrival, pulls
//! `listClustersInfo` and `listInterClusterInfo`, answers every new view with the simulator's
//! own selection (`driver::configs` + `esched_coorm::select` for rigid and simple-moldable
//! applications, `cem::select` for CEM), runs a sleep payload once started and says `done`.
//! The driver waits for each launcher's subscription before starting the next, so that the
//! priorities (subscribe order) are the workload's.
//!
//! **Time compression.** The workload is in trace time; the real run divides every duration
//! by `--time-scale` (trace seconds per real second: 1000 means 1 trace s = 1 ms): arrivals,
//! requested durations and run times, the re-policy interval and the fair-start delay. A
//! launcher converts its views back to trace time before selecting, so that its selection is
//! the simulator's. What compression changes is in docs/coorm.md.
//!
//! **Measures.** Bytes are counted on both ends of every session: by each launcher
//! (`batch_proto::Client` counts whole frames) and by batchd (its count arrives in the
//! `DoneAck`); a launcher whose two counts differ fails the run. JSON bytes are whole frames
//! less their 4-byte length prefixes. CPU time is `getrusage(RUSAGE_CHILDREN)` user + system:
//! the launchers' once they have all been waited for, then batchd's once it has stopped. The
//! simulation's figures come from `crate::coorm::run` on the same applications
//! (uncompressed), its CPU time the thread's.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::coorm::workload::{self, App, Kind, PACK};
use crate::coorm::{cem, driver, run, Mode, Platform, RunParams};
use anyhow::{bail, Context};
use batch_proto::clock::now_ms;
use clap::Args;
use esched_launcher::{Event, Launcher, PoolNodes, SessionFilter, SessionRequest};
use sched_core::{JobId, PoolId, PoolSteps, Step, Time, View, FOREVER};
use sched_sim::swf::{read_path, ReadOptions};
use serde::{Deserialize, Serialize};

use super::svg::{render, Chart, Series};

/// `esim coorm-validation`.
#[derive(Debug, Args)]
pub struct ValidationArgs {
    /// The SWF trace (plain or .gz) the pack is taken from.
    #[arg(long, value_name = "FILE", required_unless_present = "replot")]
    pub trace: Option<PathBuf>,
    /// Run nothing: redraw fig8-*.svg of --out from its results.json (as a run wrote it), e.g.
    /// after a change to how figures are drawn. tables.md is left as it is.
    #[arg(long, conflicts_with_all = ["trace", "cem", "pools", "hosts", "pack", "apps", "time_scale", "batchd", "slack_ms", "timeout"])]
    pub replot: bool,
    /// Directory for tables.md, results.json, fig8-*.svg and each real run's config and logs.
    #[arg(long, default_value = "coorm-validation")]
    pub out: PathBuf,
    /// CEM shares to run, percent of the applications, comma-separated (the x-axis).
    #[arg(long, value_delimiter = ',', default_value = "0,25,50,75,100")]
    pub cem: Vec<u32>,
    /// Pools, n_C (§IV-D: 8).
    #[arg(long, default_value_t = 8)]
    pub pools: u32,
    /// Hosts per pool, n_H (§IV-A: 128).
    #[arg(long, default_value_t = 128)]
    pub hosts: u32,
    /// Which pack of 200 consecutive jobs of the trace (0: the first).
    #[arg(long, default_value_t = 0)]
    pub pack: usize,
    /// Applications taken from the pack's start (at most 200).
    #[arg(long, default_value_t = PACK)]
    pub apps: usize,
    /// Trace seconds per real second in the real run (1000: one trace second is 1 ms).
    #[arg(long, default_value_t = 1000.0)]
    pub time_scale: f64,
    /// The batchd binary (default: `batchd` next to esim).
    #[arg(long, value_name = "FILE")]
    pub batchd: Option<PathBuf>,
    /// Real ms added to every request's duration in the real run, so that a launcher that
    /// wakes up late on a loaded machine says `done` before batchd kills its job at the end
    /// of its allocation (the application still ends at its run time).
    #[arg(long, default_value_t = 200)]
    pub slack_ms: u64,
    /// Give up on a real run after this many seconds of wall time.
    #[arg(long, default_value_t = 900)]
    pub timeout: u64,
}

/// `esim coorm-launcher` (hidden): one application's launcher process of a real run.
#[derive(Debug, Args)]
pub struct LauncherArgs {
    /// batchd's socket.
    #[arg(long)]
    pub socket: PathBuf,
    /// The instant of trace time 0, ms since the epoch.
    #[arg(long)]
    pub origin: u64,
    /// Trace seconds per real second.
    #[arg(long)]
    pub time_scale: f64,
    /// Pools, n_C.
    #[arg(long)]
    pub pools: u32,
    /// Hosts per pool, n_H.
    #[arg(long)]
    pub hosts: u32,
    /// The application, as JSON (`{"rigid": {"hosts": 4, "run": 100, "req": 200}}`, …).
    #[arg(long)]
    pub app: String,
    /// Real ms added to every request's duration.
    #[arg(long, default_value_t = 0)]
    pub slack_ms: u64,
}

/// The line a launcher prints when it has finished.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct LauncherReport {
    job: u64,
    /// Views it selected on.
    selections: u64,
    /// Requests sent.
    requests: u64,
    /// Start and end of its allocation, trace ms.
    start: u64,
    end: u64,
    /// Frames and bytes as the launcher counted them.
    frames_sent: u64,
    bytes_sent: u64,
    frames_received: u64,
    bytes_received: u64,
    /// batchd's count, all of it (its `DoneAck` added).
    batchd: Option<batch_proto::SessionTraffic>,
    consistent: bool,
    /// Why the session failed, if it did.
    error: Option<String>,
}

/// Real epoch ms ↔ trace ms for a run that started trace time 0 at `origin`.
#[derive(Clone, Copy, Debug)]
struct Clock {
    origin: u64,
    scale: f64,
}

impl Clock {
    fn trace(&self, real: u64) -> Time {
        (real.saturating_sub(self.origin) as f64 * self.scale).round() as Time
    }

    fn real_at(&self, trace: Time) -> u64 {
        self.origin + (trace as f64 / self.scale).round() as u64
    }

    /// A trace duration in real ms, rounded up, at least 1.
    fn real_len(&self, trace: Time) -> u64 {
        ((trace as f64 / self.scale).ceil() as u64).max(1)
    }
}

/// §IV-A's platform with batchd's pool names: batchd's node names append digits to the pool's
/// name, so a pool name may not end in one (the simulator's `c1`…`c8` become `ca`…`ch`).
fn real_platform(pools: u32, hosts: u32) -> anyhow::Result<Platform> {
    anyhow::ensure!(
        (1..=26).contains(&pools),
        "--pools must be 1 to 26 (pools are named ca…cz)"
    );
    let mut p = Platform::paper(pools, hosts);
    for (i, q) in p.pools.iter_mut().enumerate() {
        q.name = format!("c{}", (b'a' + i as u8) as char).into();
    }
    Ok(p)
}

/// The launcher's view (CAPs in epoch ms) as the simulator's `View` in trace time; `None`
/// until every pool has a CAP.
fn trace_view(v: &esched_launcher::View, p: &Platform, clock: Clock, job: u64) -> Option<View> {
    let mut available = Vec::with_capacity(p.len());
    for q in &p.pools {
        let cap = v.pools.get(q.name.as_str())?;
        let first = cap.first()?;
        let start = clock.trace(first.from);
        let mut steps = Vec::with_capacity(cap.len());
        for s in cap {
            let d = match s.to {
                Some(to) => clock.trace(to).saturating_sub(clock.trace(s.from)),
                None => FOREVER,
            };
            steps.push(Step::new(d, s.free));
        }
        available.push(PoolSteps {
            pool: q.id,
            start,
            steps: steps.into(),
        });
    }
    Some(View {
        job: JobId(job),
        available: available.into(),
    })
}

/// The simulator's launcher selection on `view` at trace time `now`: the parts and the
/// duration (trace ms).
fn select(p: &Platform, app: &App, view: &View, now: Time) -> Option<(Vec<(PoolId, u32)>, u64)> {
    match &app.kind {
        Kind::Cem { work } => cem::select(p, *work, view, now),
        _ => {
            let cfgs = driver::configs(p, app)?;
            let (k, _) = esched_coorm::select::earliest_completion(view, &cfgs, now)?;
            Some((vec![(cfgs[k].pool, cfgs[k].nodes)], cfgs[k].walltime))
        }
    }
}

/// Runs one application's launcher; prints `subscribed JOB` once subscribed, then its report
/// as one JSON line.
pub fn launcher(args: &LauncherArgs) -> anyhow::Result<()> {
    let kind: Kind = serde_json::from_str(&args.app).context("--app")?;
    anyhow::ensure!(
        args.time_scale.is_finite() && args.time_scale > 0.0,
        "--time-scale must be a positive number"
    );
    let p = real_platform(args.pools, args.hosts)?;
    let app = App {
        id: 0,
        submit: 0,
        kind,
    };
    let clock = Clock {
        origin: args.origin,
        scale: args.time_scale,
    };
    let mut l = Launcher::subscribe(&args.socket, SessionFilter::default(), None)?;
    let job = l.job();
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "subscribed {job}")?;
        out.flush()?;
    }
    let mut report = LauncherReport {
        job,
        ..Default::default()
    };
    let outcome = follow(&mut l, &p, &app, clock, args.slack_ms, &mut report);
    // The launcher's own count so far, kept if the session ends without a `DoneAck`.
    let t = l.traffic();
    report.frames_sent = t.frames_sent;
    report.bytes_sent = t.bytes_sent;
    report.frames_received = t.frames_received;
    report.bytes_received = t.bytes_received;
    let outcome = match outcome {
        Ok((start, end)) => {
            report.start = clock.trace(start);
            report.end = clock.trace(end);
            l.done().map_err(anyhow::Error::from)
        }
        Err(e) => Err(e),
    };
    match outcome {
        Ok(done) => {
            let t = done.launcher;
            report.frames_sent = t.frames_sent;
            report.bytes_sent = t.bytes_sent;
            report.frames_received = t.frames_received;
            report.bytes_received = t.bytes_received;
            report.consistent = done.consistent() == Some(true);
            report.batchd = done.batchd.map(|mut b| {
                b.frames_out += 1;
                b.bytes_out += done.done_ack_bytes;
                b
            });
        }
        Err(e) => report.error = Some(format!("{e:#}")),
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", serde_json::to_string(&report)?)?;
    out.flush()?;
    Ok(())
}

/// Follows the view until the start, runs the payload; the allocation's real start and the
/// instant the payload ended.
fn follow(
    l: &mut Launcher,
    p: &Platform,
    app: &App,
    clock: Clock,
    slack_ms: u64,
    report: &mut LauncherReport,
) -> anyhow::Result<(u64, u64)> {
    let info = l.clusters_info()?;
    anyhow::ensure!(
        info.len() == p.len(),
        "batchd has {} pools, the workload {}",
        info.len(),
        p.len()
    );
    let _links = l.inter_cluster_info()?;
    let mut current: Option<SessionRequest> = None;
    let mut chosen_len: u64 = 0;
    let started = loop {
        // The latest view only: batchd may send views faster than a CEM launcher selects.
        match l.latest_event()? {
            Event::Started(s) => break s,
            Event::ViewChanged(_) => {
                let Some(view) = trace_view(l.view(), p, clock, l.job()) else {
                    continue;
                };
                report.selections += 1;
                let now = clock.trace(l.view().now);
                let Some((parts, d)) = select(p, app, &view, now) else {
                    continue;
                };
                let r = SessionRequest {
                    pools: parts
                        .iter()
                        .map(|&(q, n)| PoolNodes {
                            pool: p.pools[q.0 as usize].name.to_string(),
                            nodes: n,
                        })
                        .collect(),
                    duration_ms: clock.real_len(d) + slack_ms,
                };
                if current.as_ref() != Some(&r) {
                    report.requests += 1;
                    match l.request(r.clone()) {
                        Ok(()) => {
                            current = Some(r);
                            chosen_len = d;
                        }
                        // The previous request started meanwhile: its start comes next.
                        Err(esched_launcher::Error::AlreadyStarted(_)) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
            }
        }
    };
    // The payload: the application's actual run time (the simulator's `walltime × run
    // factor`), ended a guard before the allocation's end so that a late wake-up on a loaded
    // machine is not a TIMEOUT (docs/coorm.md).
    let actual = clock.real_len(((chosen_len as f64) * app.run_factor()).ceil() as u64);
    let len = started.end.saturating_sub(started.start);
    let guard = (len / 10).min(50);
    let wake = started
        .start
        .saturating_add(actual)
        .min(started.end.saturating_sub(guard));
    let wait = wake.saturating_sub(now_ms());
    std::thread::sleep(Duration::from_millis(wait));
    Ok((started.start, now_ms()))
}

/// One real run's measures.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Real {
    launchers: usize,
    done: usize,
    consistent: usize,
    /// Launchers whose session ended before their `done` (a late wake-up: their job was
    /// killed at the end of its allocation); their traffic is the launcher's count only.
    late: usize,
    frames: u64,
    /// Whole frames both ways, as the launchers counted them.
    wire_bytes: u64,
    /// JSON bytes both ways (length prefixes taken off), launchers' count.
    json_bytes: u64,
    /// The same, batchd's count.
    json_bytes_batchd: u64,
    selections: u64,
    requests: u64,
    cpu_batchd_s: f64,
    cpu_launchers_s: f64,
    wall_s: f64,
    /// Trace time of the last end, s.
    makespan_s: f64,
}

/// One x-axis point.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Point {
    cem_percent: u32,
    apps: usize,
    cem_apps: usize,
    sim_messages: u64,
    /// Views sent (launchers notified; one `changeNotify` per changed pool each).
    sim_notifications: u64,
    sim_passes: u64,
    sim_json_bytes: u64,
    sim_cdr_bytes: u64,
    sim_cpu_s: f64,
    sim_makespan_s: f64,
    sim_selections: u64,
    real: Real,
}

/// What the captions say of a run.
#[derive(Deserialize)]
struct Setting {
    trace: String,
    pack: usize,
    pools: u32,
    hosts: u32,
    time_scale: f64,
}

/// Fig. 8's two charts of `points`, written to `out` with their captions.
fn write_charts(out: &Path, points: &[Point], setting: &Setting) -> anyhow::Result<()> {
    let series = |name: &str, f: &dyn Fn(&Point) -> f64| Series {
        name: name.to_string(),
        points: points
            .iter()
            .map(|p| (f64::from(p.cem_percent), f(p), 0.0))
            .collect(),
    };
    let net = Chart {
        title: "Fig. 8 (a): network usage, simulation vs real".into(),
        x_label: "CEM applications (%)".into(),
        y_label: "messages (MB)".into(),
        series: vec![
            series("simulation, JSON", &|p| p.sim_json_bytes as f64 / 1e6),
            series("simulation, CDR-like", &|p| p.sim_cdr_bytes as f64 / 1e6),
            series("real, JSON", &|p| p.real.json_bytes as f64 / 1e6),
            series("real, on the wire", &|p| p.real.wire_bytes as f64 / 1e6),
        ],
    };
    let cpu = Chart {
        title: "Fig. 8 (b): CPU usage, simulation vs real".into(),
        x_label: "CEM applications (%)".into(),
        y_label: "CPU time (s)".into(),
        series: vec![
            series("simulation", &|p| p.sim_cpu_s),
            series("real, batchd", &|p| p.real.cpu_batchd_s),
            series("real, batchd + launchers", &|p| {
                p.real.cpu_batchd_s + p.real.cpu_launchers_s
            }),
        ],
    };
    let apps = points.first().map_or(0, |p| p.apps);
    let caption = format!(
        "esim coorm-validation: the first {apps} applications of pack {} of {}, on {} pools of \
         {} hosts, each run in the simulator and on a live batchd with real launchers ({} \
         trace seconds a real second); one run per point.",
        setting.pack,
        Path::new(&setting.trace).file_name().map_or_else(
            || setting.trace.clone(),
            |f| f.to_string_lossy().into_owned()
        ),
        setting.pools,
        setting.hosts,
        setting.time_scale
    );
    for (name, c) in [("fig8-network.svg", &net), ("fig8-cpu.svg", &cpu)] {
        let path = out.join(name);
        std::fs::write(&path, render(c, &caption))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// `--replot`: fig8-*.svg of `out` redrawn from its results.json.
fn replot(out: &Path) -> anyhow::Result<()> {
    #[derive(Deserialize)]
    struct Results {
        #[serde(flatten)]
        setting: Setting,
        points: Vec<Point>,
    }
    let r: Results = super::read_results(out, "coorm-validation")?;
    write_charts(out, &r.points, &r.setting)?;
    eprintln!(
        "esim: coorm-validation: 2 figures redrawn in {} from its results.json",
        out.display()
    );
    Ok(())
}

/// CPU of the waited-for children so far, user + system, seconds.
fn children_cpu() -> anyhow::Result<f64> {
    use nix::sys::resource::{getrusage, UsageWho};
    let u = getrusage(UsageWho::RUSAGE_CHILDREN).context("getrusage")?;
    let s = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 * 1e-6;
    Ok(s(u.user_time()) + s(u.system_time()))
}

fn thread_cpu() -> f64 {
    crate::measure::thread_cpu().unwrap_or(0.0)
}

/// batchd's config for a real run in `dir`.
fn config_text(dir: &Path, socket: &Path, p: &Platform, scale: f64) -> String {
    let ms = |trace_ms: f64| ((trace_ms / scale).round() as u64).max(1);
    let mut c = String::new();
    let _ = writeln!(
        c,
        "# esim coorm-validation: §IV-A's platform, times divided by {scale}.\n\
         socket = {socket:?}\nstate_dir = {:?}\n\
         # An empty plugin directory: batchd runs its linked copy of `coorm`.\n\
         plugin_dir = {:?}\nrepolicy_interval_ms = {}\nsync = \"normal\"\n\n\
         [limits]\nmax_connections = 4096\nmax_connections_per_user = 4096\n\
         max_sessions_per_user = 4096\n\n\
         [policy]\nname = \"coorm\"\n\n[coorm]\nfair_start_ms = {}\n",
        dir.join("state"),
        dir.join("plugins"),
        ms(1000.0),
        ms(5000.0),
    );
    for (q, sp) in p.pools.iter().zip(&p.speed) {
        let _ = writeln!(
            c,
            "[[pool]]\nname = {:?}\nnodes = {}\nspeed = {sp}\n",
            q.name, q.nodes
        );
    }
    for a in 0..p.len() {
        for b in a + 1..p.len() {
            let _ = writeln!(
                c,
                "[[link]]\npools = [{:?}, {:?}]\nlatency_ms = {}\nbandwidth_mbps = 1000\n",
                p.pools[a].name,
                p.pools[b].name,
                p.latency(a, b) * 1000.0
            );
        }
    }
    c
}

/// A child that is killed if the run is abandoned.
struct Guarded(Child);

impl Drop for Guarded {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Runs `apps` on a real batchd with one launcher process each.
fn run_real(
    args: &ValidationArgs,
    batchd: &Path,
    p: &Platform,
    apps: &[App],
    dir: &Path,
) -> anyhow::Result<Real> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("cannot clear {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir.join("plugins"))
        .with_context(|| format!("cannot create {}", dir.display()))?;
    // Unix socket paths are short (108 bytes): the socket lives in the temporary directory.
    let socket = std::env::temp_dir().join(format!(
        "esim-coorm-{}-{}.sock",
        std::process::id(),
        dir.file_name()
            .map_or_else(String::new, |f| f.to_string_lossy().into_owned())
    ));
    let _ = std::fs::remove_file(&socket);
    let config = dir.join("batchd.toml");
    std::fs::write(&config, config_text(dir, &socket, p, args.time_scale))
        .with_context(|| format!("cannot write {}", config.display()))?;
    let log = std::fs::File::create(dir.join("batchd.log"))?;
    let llog = std::fs::File::create(dir.join("launchers.log"))?;
    let exe = std::env::current_exe().context("cannot find esim's own executable")?;
    let wall = Instant::now();
    let deadline = wall + Duration::from_secs(args.timeout);
    let cpu0 = children_cpu()?;
    let mut daemon = Guarded(
        Command::new(batchd)
            .arg("--config")
            .arg(&config)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .with_context(|| format!("cannot start {}", batchd.display()))?,
    );
    // Up when it answers a hello.
    loop {
        if batch_proto::Client::connect(&socket).is_ok() {
            break;
        }
        if let Ok(Some(st)) = daemon.0.try_wait() {
            bail!(
                "batchd exited ({st}) before accepting connections; see {}",
                dir.join("batchd.log").display()
            );
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "batchd did not accept connections"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let clock = Clock {
        origin: now_ms() + 100,
        scale: args.time_scale,
    };
    let (tx, rx) = mpsc::channel::<(usize, String)>();
    let mut children: Vec<Guarded> = Vec::with_capacity(apps.len());
    let mut lines: HashMap<usize, Vec<String>> = HashMap::new();
    for (i, app) in apps.iter().enumerate() {
        let at = clock.real_at(app.submit);
        std::thread::sleep(Duration::from_millis(at.saturating_sub(now_ms())));
        let mut child = Command::new(&exe)
            .arg("coorm-launcher")
            .arg("--socket")
            .arg(&socket)
            .arg("--origin")
            .arg(clock.origin.to_string())
            .arg("--time-scale")
            .arg(args.time_scale.to_string())
            .arg("--pools")
            .arg(p.len().to_string())
            .arg("--hosts")
            .arg(p.hosts(0).to_string())
            .arg("--app")
            .arg(serde_json::to_string(&app.kind)?)
            .arg("--slack-ms")
            .arg(args.slack_ms.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(llog.try_clone()?)
            .spawn()
            .context("cannot start a launcher")?;
        let out = child.stdout.take().context("launcher's stdout")?;
        children.push(Guarded(child));
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send((i, line)).is_err() {
                    break;
                }
            }
        });
        // The next application subscribes only after this one: priorities are arrival order.
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let (k, line) = rx
                .recv_timeout(left.min(Duration::from_secs(60)))
                .with_context(|| format!("launcher {} never subscribed", i + 1))?;
            let subscribed = k == i && line.starts_with("subscribed ");
            lines.entry(k).or_default().push(line);
            if subscribed {
                break;
            }
        }
    }
    drop(tx);
    for c in &mut children {
        loop {
            if c.0.try_wait()?.is_some() {
                break;
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the real run took more than --timeout {} s; see {}",
                args.timeout,
                dir.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let cpu1 = children_cpu()?;
    let wall_s = wall.elapsed().as_secs_f64();
    let pid = nix::unistd::Pid::from_raw(daemon.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).context("stopping batchd")?;
    daemon.0.wait()?;
    let cpu2 = children_cpu()?;
    let _ = std::fs::remove_file(&socket);
    while let Ok((k, line)) = rx.recv_timeout(Duration::from_secs(1)) {
        lines.entry(k).or_default().push(line);
    }
    let mut real = Real {
        launchers: apps.len(),
        cpu_launchers_s: cpu1 - cpu0,
        cpu_batchd_s: cpu2 - cpu1,
        wall_s,
        ..Real::default()
    };
    let mut failures = Vec::new();
    for i in 0..apps.len() {
        let report = lines.get(&i).and_then(|l| {
            l.iter()
                .find_map(|s| serde_json::from_str::<LauncherReport>(s).ok())
        });
        let Some(r) = report else {
            failures.push(format!("launcher {} gave no report", i + 1));
            continue;
        };
        if let Some(e) = &r.error {
            real.late += 1;
            eprintln!(
                "esim: coorm-validation: warning: launcher {} (job {}) ended without done: {e}",
                i + 1,
                r.job
            );
        } else {
            real.done += 1;
            real.consistent += usize::from(r.consistent);
            if !r.consistent {
                failures.push(format!(
                    "launcher {} (job {}): its byte count differs from batchd's",
                    i + 1,
                    r.job
                ));
            }
        }
        real.frames += r.frames_sent + r.frames_received;
        real.wire_bytes += r.bytes_sent + r.bytes_received;
        real.json_bytes += (r.bytes_sent + r.bytes_received)
            .saturating_sub(4 * (r.frames_sent + r.frames_received));
        // Without batchd's count (a late launcher), the launcher's stands for both.
        real.json_bytes_batchd += r.batchd.map_or(
            (r.bytes_sent + r.bytes_received)
                .saturating_sub(4 * (r.frames_sent + r.frames_received)),
            |b| b.json_bytes(),
        );
        real.selections += r.selections;
        real.requests += r.requests;
        real.makespan_s = real.makespan_s.max(r.end as f64 / 1000.0);
    }
    if real.done == 0 {
        failures.push("no launcher said done".into());
    }
    if !failures.is_empty() {
        bail!(
            "{} of {} launchers failed (logs in {}): {}",
            failures.len(),
            apps.len(),
            dir.display(),
            failures.join("; ")
        );
    }
    Ok(real)
}

/// Runs §IV-D and writes the outputs.
pub fn run_validation(args: &ValidationArgs) -> anyhow::Result<()> {
    if args.replot {
        return replot(&args.out);
    }
    let trace_path = args
        .trace
        .as_ref()
        .context("--trace is required unless --replot")?;
    anyhow::ensure!(args.hosts >= 2, "--hosts must be at least 2");
    let p = real_platform(args.pools, args.hosts)?;
    anyhow::ensure!(
        args.time_scale.is_finite() && args.time_scale > 0.0,
        "--time-scale must be a positive number"
    );
    anyhow::ensure!(
        (1..=PACK).contains(&args.apps),
        "--apps must be 1 to {PACK}"
    );
    anyhow::ensure!(
        !args.cem.is_empty() && args.cem.iter().all(|&c| c <= 100),
        "--cem takes percentages, 0 to 100"
    );
    let batchd = match &args.batchd {
        Some(b) => b.clone(),
        None => std::env::current_exe()
            .context("cannot find esim's own executable")?
            .with_file_name("batchd"),
    };
    anyhow::ensure!(
        batchd.is_file(),
        "{}: no batchd binary there (build it, or give --batchd FILE)",
        batchd.display()
    );
    let opts = ReadOptions {
        nodes: Some(u32::MAX),
        limit: None,
    };
    let trace = read_path(trace_path, &opts)?;
    let first = args.pack * PACK;
    anyhow::ensure!(
        trace.jobs.len() >= first + args.apps,
        "{}: {} usable jobs, fewer than pack {} needs ({} from job {})",
        trace_path.display(),
        trace.jobs.len(),
        args.pack,
        args.apps,
        first
    );
    let pack = &trace.jobs[first..first + args.apps];
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let mut points = Vec::new();
    for &percent in &args.cem {
        let apps = workload::build_cem_share(pack, percent, args.hosts);
        let c0 = thread_cpu();
        let sim = run(&p, &apps, &RunParams::paper(Mode::Coorm))?;
        let sim_cpu = thread_cpu() - c0;
        let dir = args.out.join(format!("real-{percent}"));
        let real = run_real(args, &batchd, &p, &apps, &dir)?;
        eprintln!(
            "esim: coorm-validation: {percent} % CEM: {:.1} s of wall time, {} launchers, {} late",
            real.wall_s, real.launchers, real.late
        );
        points.push(Point {
            cem_percent: percent,
            apps: apps.len(),
            cem_apps: apps
                .iter()
                .filter(|a| matches!(a.kind, Kind::Cem { .. }))
                .count(),
            sim_messages: sim.messages,
            sim_notifications: sim.notifications,
            sim_passes: sim.passes,
            sim_json_bytes: sim.bytes.json,
            sim_cdr_bytes: sim.bytes.cdr,
            sim_cpu_s: sim_cpu,
            sim_makespan_s: sim.makespan as f64 / 1000.0,
            sim_selections: sim.computed_configs,
            real,
        });
    }
    write_outputs(args, trace_path, &points)
}

fn write_outputs(args: &ValidationArgs, trace_path: &Path, points: &[Point]) -> anyhow::Result<()> {
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into());
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# CooRM §IV-D (Fig. 8): simulation and real batchd\n\n\
         Trace `{}`, pack {}, {} application(s); {} pools of {} hosts; re-policy 1 s, \
         fair-start 5 s (trace time); real runs at {} trace s per real s, requests {} ms (real) \
         longer, one launcher process per application. One run per point; load average (1 min) \
         at the end: {load}.\n",
        trace_path
            .file_name()
            .map_or_else(String::new, |f| f.to_string_lossy().into_owned()),
        args.pack,
        points.first().map_or(0, |p| p.apps),
        args.pools,
        args.hosts,
        args.time_scale,
        args.slack_ms
    );
    let _ = writeln!(
        md,
        "| CEM % | CEM apps | sim msgs (views) | sim JSON | sim CDR-like | real frames (views) | real JSON (launchers) | real JSON (batchd) | real wire | sim CPU | real CPU batchd | real CPU launchers | real CPU total | real wall | late | makespan sim / real |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    let mb = |b: u64| format!("{:.3} MB", b as f64 / 1e6);
    for p in points {
        let r = &p.real;
        let _ = writeln!(
            md,
            "| {} | {} | {} ({}) | {} | {} | {} ({}) | {} | {} | {} | {:.3} s | {:.2} s | {:.2} s | {:.2} s | {:.1} s | {} | {:.0} / {:.0} s |",
            p.cem_percent,
            p.cem_apps,
            p.sim_messages,
            p.sim_notifications,
            mb(p.sim_json_bytes),
            mb(p.sim_cdr_bytes),
            r.frames,
            r.selections,
            mb(r.json_bytes),
            mb(r.json_bytes_batchd),
            mb(r.wire_bytes),
            p.sim_cpu_s,
            r.cpu_batchd_s,
            r.cpu_launchers_s,
            r.cpu_batchd_s + r.cpu_launchers_s,
            r.wall_s,
            r.late,
            p.sim_makespan_s,
            r.makespan_s,
        );
    }
    write_charts(
        &args.out,
        points,
        &Setting {
            trace: trace_path.display().to_string(),
            pack: args.pack,
            pools: args.pools,
            hosts: args.hosts,
            time_scale: args.time_scale,
        },
    )?;
    let tables = args.out.join("tables.md");
    std::fs::write(&tables, &md).with_context(|| format!("cannot write {}", tables.display()))?;
    let json = serde_json::json!({
        "trace": trace_path,
        "pack": args.pack,
        "pools": args.pools,
        "hosts": args.hosts,
        "time_scale": args.time_scale,
        "slack_ms": args.slack_ms,
        "load_avg_1min": load,
        "points": points,
    });
    let results = args.out.join("results.json");
    std::fs::write(&results, serde_json::to_string_pretty(&json)?)
        .with_context(|| format!("cannot write {}", results.display()))?;
    print!("{md}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use esched_launcher::CapStep;

    #[test]
    fn views_come_back_to_trace_time() {
        let p = real_platform(2, 16).unwrap();
        let clock = Clock {
            origin: 1_000_000,
            scale: 1000.0,
        };
        let mut v = esched_launcher::View::default();
        let step = |from, to, free| CapStep { from, to, free };
        v.pools.insert(
            "ca".into(),
            vec![
                step(1_000_010, Some(1_000_030), 4),
                step(1_000_030, None, 16),
            ],
        );
        assert!(trace_view(&v, &p, clock, 7).is_none(), "cb has no CAP yet");
        v.pools.insert("cb".into(), vec![step(1_000_010, None, 16)]);
        let t = trace_view(&v, &p, clock, 7).unwrap();
        assert_eq!(t.available[0].start, 10_000);
        assert_eq!(
            t.available[0].steps,
            vec![Step::new(20_000, 4), Step::new(FOREVER, 16)]
        );
        assert_eq!(t.available[1].steps, vec![Step::new(FOREVER, 16)]);
        assert_eq!(clock.real_len(1), 1);
        assert_eq!(clock.real_len(2500), 3);
        assert_eq!(clock.real_at(5000), 1_000_005);
    }

    #[test]
    fn app_specs_round_trip() {
        for k in [
            Kind::Rigid {
                hosts: 3,
                run: 10.0,
                req: 20.0,
            },
            Kind::Moldable {
                work: 5.0,
                ratio: 1.5,
            },
            Kind::Cem { work: 100.0 },
        ] {
            let s = serde_json::to_string(&k).unwrap();
            let back: Kind = serde_json::from_str(&s).unwrap();
            assert_eq!(back, k);
        }
    }

    #[test]
    fn the_config_has_every_pool_and_link() {
        let p = real_platform(3, 8).unwrap();
        let c = config_text(Path::new("/d"), Path::new("/s.sock"), &p, 1000.0);
        let v: toml::Value = toml::from_str(&c).unwrap();
        assert_eq!(v["pool"].as_array().unwrap().len(), 3);
        assert_eq!(v["link"].as_array().unwrap().len(), 3);
        assert_eq!(v["repolicy_interval_ms"].as_integer(), Some(1));
        assert_eq!(v["coorm"]["fair_start_ms"].as_integer(), Some(5));
    }
}
