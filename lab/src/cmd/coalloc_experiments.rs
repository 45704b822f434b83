//! `esim coalloc-experiments`: Ballier, Caron, Epema & Mohamed's §3 (Figures 1–9) on
//! the lab's co-allocation driver with the rpp policy linked in (the same code as the
//! plugin, without the ABI's per-call copies: hundreds of replays).
//!
//! Every configuration is replayed once per seed on a fresh §3.1 workload; metrics are taken
//! over `[warmup, horizon)` (rates: jobs submitted in it; loads: processor time in it) and
//! reported as means with 95 % confidence intervals over the seeds. Configurations shared by
//! several figures run once. The paper gives no figure data, so each axis is our choice: the
//! global arrival rate λ_g is swept over the rates of U_g = 5 %, 10 %, …, 50 % (shown in jobs
//! per hour), L_p over 0.1, 0.2, …, 1, the local load over 10 %, …, 70 %, and the deadline
//! D − S in ten bins of [1, 3599] s.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use crate::coalloc::experiments::{estimate, run_seeds, Estimate, Protocol, SeedResult};
use crate::coalloc::{
    replay, CoallocParams, CoallocSummary, PriorityName, VictimsName, WorkloadSpec,
};
use crate::measure::thread_cpu;
use anyhow::Context;
use clap::Args;
use sched_abi::{Linked, PolicyHost};
use sched_core::NamedPolicy;

use super::svg::{render, Chart, Series};

/// `esim coalloc-experiments`.
#[derive(Debug, Args)]
pub struct ExperimentsArgs {
    /// Directory for figN.svg, tables.md and results.json (created if missing).
    #[arg(long, default_value = "coalloc-results")]
    pub out: PathBuf,
    /// Seeds per configuration (confidence intervals need 2 or more).
    #[arg(long, default_value_t = 5)]
    pub seeds: u64,
    /// Submissions span [0, HORIZON) seconds.
    #[arg(long, default_value_t = 100_000.0)]
    pub horizon: f64,
    /// Metrics leave out [0, WARMUP) seconds.
    #[arg(long, default_value_t = 10_000.0)]
    pub warmup: f64,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Only these figures (1–9), comma-separated; default all.
    #[arg(long, value_delimiter = ',')]
    pub figures: Vec<u32>,
    /// Skip the timing of a 10⁶ s replay at the heaviest load.
    #[arg(long)]
    pub no_bench: bool,
}

/// One replay configuration.
#[derive(Clone, Debug, PartialEq)]
struct Cfg {
    ul: f64,
    ug: f64,
    lp: f64,
    wait: Option<f64>,
    prio: PriorityName,
    victims: VictimsName,
}

impl Cfg {
    fn new(ul: f64, ug: f64, lp: f64, wait: Option<f64>, prio: PriorityName) -> Self {
        Cfg {
            ul,
            ug,
            lp,
            wait,
            prio,
            victims: VictimsName::Fewest,
        }
    }

    fn with_victims(mut self, victims: VictimsName) -> Self {
        self.victims = victims;
        self
    }

    fn key(&self) -> String {
        format!(
            "Ul={:.2} Ug={:.2} Lp={:.2} I={} {} {}",
            self.ul,
            self.ug,
            self.lp,
            wait_name(self.wait),
            self.prio.as_str(),
            self.victims.as_str()
        )
    }

    fn spec(&self) -> WorkloadSpec {
        let mut s = WorkloadSpec::paper(self.ul, 0.0, 0.0, 0);
        s.global_rate = s.global_rate_for(self.ug);
        s.params = CoallocParams {
            lp: self.lp,
            wait: self.wait,
            priority: self.prio,
            victims: self.victims,
            ..CoallocParams::default()
        };
        s
    }
}

fn wait_name(w: Option<f64>) -> String {
    w.map_or_else(|| "∞".to_string(), |w| format!("{w}"))
}

fn policy_name(w: Option<f64>) -> String {
    match w {
        None => "pure RPP".into(),
        Some(w) => format!("Wait-{w}"),
    }
}

fn make_rpp(p: &CoallocParams) -> PolicyHost {
    match esched_rpp::Rpp::from_params(&p.policy_params()) {
        Ok(r) => PolicyHost::boxed(Box::new(Linked::new(esched_rpp::Rpp::NAME, Box::new(r)))),
        // The params come from our own Cfg values, all in range.
        Err(e) => unreachable!("rpp refused the experiment's params: {e}"),
    }
}

const GP: PriorityName = PriorityName::Gp;
const WAITS: [Option<f64>; 5] = [Some(0.0), Some(10.0), Some(100.0), Some(1000.0), None];

fn ug_grid() -> Vec<f64> {
    (1..=10).map(|k| k as f64 / 20.0).collect()
}

/// λ_g of a global load, in jobs per hour (the x axis of Figures 1, 4, 8, 9).
fn rate_per_hour(ug: f64) -> f64 {
    WorkloadSpec::paper(0.3, 0.0, 0.0, 0).global_rate_for(ug) * 3600.0
}

/// What one figure plots: (series name, x, configuration, how to read a y from the seeds).
type Reader = fn(&[SeedResult], usize) -> Estimate;
/// A line: its name, its (x, configuration) points, its reader and the reader's argument (a
/// deadline bin).
type Line = (String, Vec<(f64, Cfg)>, Reader, usize);
struct Figure {
    n: u32,
    file: String,
    title: String,
    x_label: String,
    y_label: String,
    lines: Vec<Line>,
}

fn metric(rs: &[SeedResult], f: fn(&CoallocSummary) -> f64) -> Estimate {
    estimate(&rs.iter().map(|r| f(&r.summary)).collect::<Vec<_>>())
}
fn success(rs: &[SeedResult], _: usize) -> Estimate {
    metric(rs, |s| s.success_rate)
}
fn kills(rs: &[SeedResult], _: usize) -> Estimate {
    metric(rs, |s| s.kill_rate)
}
fn kills_started(rs: &[SeedResult], _: usize) -> Estimate {
    metric(rs, |s| s.kill_rate_started)
}
fn total(rs: &[SeedResult], _: usize) -> Estimate {
    metric(rs, |s| s.total_load)
}
fn global(rs: &[SeedResult], _: usize) -> Estimate {
    metric(rs, |s| s.global_load)
}
fn wasted(rs: &[SeedResult], _: usize) -> Estimate {
    metric(rs, |s| s.wasted)
}
fn response(rs: &[SeedResult], _: usize) -> Estimate {
    metric(rs, |s| s.local_response_time)
}
fn by_deadline(rs: &[SeedResult], bin: usize) -> Estimate {
    let xs: Vec<f64> = rs
        .iter()
        .filter_map(|r| {
            let (ok, all) = r.by_deadline.get(bin).copied()?;
            (all > 0).then(|| 100.0 * f64::from(ok) / f64::from(all))
        })
        .collect();
    estimate(&xs)
}

const BINS: usize = 10;

fn figures() -> Vec<Figure> {
    let lam = |ug: f64| rate_per_hour(ug);
    let by_rate = |ul: f64, lp: f64, wait: Option<f64>, prio: PriorityName| -> Vec<(f64, Cfg)> {
        ug_grid()
            .into_iter()
            .map(|ug| (lam(ug), Cfg::new(ul, ug, lp, wait, prio)))
            .collect()
    };
    let by_lp = |ul: f64, ug: f64| -> Vec<(f64, Cfg)> {
        (1..=10)
            .map(|k| {
                let lp = k as f64 / 10.0;
                (lp, Cfg::new(ul, ug, lp, None, GP))
            })
            .collect()
    };
    let lam_label = "global arrival rate λ_g (jobs/hour; U_g = 5 % … 50 %)".to_string();
    let mut figs = Vec::new();
    let rpp = by_rate(0.3, 0.7, None, GP);
    figs.push(Figure {
        n: 1,
        file: "fig1.svg".into(),
        title: "Fig. 1: metrics vs λ_g, U_l = 30 %, pure RPP, L_p = 0.7, GP".into(),
        x_label: lam_label.clone(),
        y_label: "%".into(),
        lines: vec![
            ("success rate".into(), rpp.clone(), success, 0),
            ("kill rate".into(), rpp.clone(), kills, 0),
            (
                "kill rate, jobs started in the window".into(),
                rpp.clone(),
                kills_started,
                0,
            ),
            ("total load".into(), rpp.clone(), total, 0),
            ("global load".into(), rpp.clone(), global, 0),
            ("wasted".into(), rpp, wasted, 0),
        ],
    });
    for (n, ul) in [(2, 0.3), (3, 0.6)] {
        figs.push(Figure {
            n,
            file: format!("fig{n}.svg"),
            title: format!(
                "Fig. {n}: influence of L_p, U_l = {:.0} %, pure RPP, GP",
                ul * 100.0
            ),
            x_label: "L_p".into(),
            y_label: "%".into(),
            lines: vec![
                ("success, U_g = 20 %".into(), by_lp(ul, 0.2), success, 0),
                ("success, U_g = 40 %".into(), by_lp(ul, 0.4), success, 0),
                ("total load, U_g = 20 %".into(), by_lp(ul, 0.2), total, 0),
                ("total load, U_g = 40 %".into(), by_lp(ul, 0.4), total, 0),
            ],
        });
    }
    for (suffix, prio) in [("gp", GP), ("lp", PriorityName::Lp)] {
        figs.push(Figure {
            n: 4,
            file: format!("fig4-{suffix}.svg"),
            title: format!(
                "Fig. 4: Wait-X success rate vs λ_g, U_l = 30 %, L_p = 0.7, {}",
                prio.as_str()
            ),
            x_label: lam_label.clone(),
            y_label: "global job success rate (%)".into(),
            lines: WAITS
                .iter()
                .map(|&w| {
                    (
                        policy_name(w),
                        by_rate(0.3, 0.7, w, prio),
                        success as Reader,
                        0,
                    )
                })
                .collect(),
        });
    }
    let width = 3598.0 / BINS as f64;
    for (n, ul) in [(5, 0.3), (6, 0.6)] {
        let mut lines = Vec::new();
        for ug in [0.2, 0.4] {
            for w in [Some(10.0), None] {
                for bin in 0..BINS {
                    let x = 1.0 + width * (bin as f64 + 0.5);
                    let cfg = Cfg::new(ul, ug, 0.7, w, GP);
                    lines.push((
                        format!("{}, U_g = {:.0} %", policy_name(w), ug * 100.0),
                        vec![(x, cfg)],
                        by_deadline as Reader,
                        bin,
                    ));
                }
            }
        }
        figs.push(Figure {
            n,
            file: format!("fig{n}.svg"),
            title: format!(
                "Fig. {n}: success rate by deadline, U_l = {:.0} %, L_p = 0.7, GP",
                ul * 100.0
            ),
            x_label: "deadline D − S (s), bin centre".into(),
            y_label: "global job success rate (%)".into(),
            lines,
        });
    }
    figs.push(Figure {
        n: 7,
        file: "fig7.svg".into(),
        title: "Fig. 7: success rate vs local load, U_g = 20 %, L_p = 0.7, GP".into(),
        x_label: "local load U_l (%)".into(),
        y_label: "global job success rate (%)".into(),
        lines: [Some(10.0), None]
            .iter()
            .map(|&w| {
                let pts = (1..=7)
                    .map(|k| {
                        let ul = k as f64 / 10.0;
                        (ul * 100.0, Cfg::new(ul, 0.2, 0.7, w, GP))
                    })
                    .collect();
                (policy_name(w), pts, success as Reader, 0)
            })
            .collect(),
    });
    figs.push(Figure {
        n: 8,
        file: "fig8.svg".into(),
        title: "Fig. 8: mean local response time (s) vs λ_g, U_l = 30 %, L_p = 0.7, GP".into(),
        x_label: lam_label.clone(),
        y_label: "mean local response time (s)".into(),
        lines: WAITS
            .iter()
            .map(|&w| {
                (
                    policy_name(w),
                    by_rate(0.3, 0.7, w, GP),
                    response as Reader,
                    0,
                )
            })
            .collect(),
    });
    // Fig. 9 under both victim rules and both countings: §2.3's (killed among the local jobs
    // submitted in the window) and killed among those that started before the window's end,
    // which the run's length does not decide (a saturated queue starts jobs after the last
    // deadlines, where nothing kills them).
    for (victims, rule) in [
        (VictimsName::Fewest, "fewest kills"),
        (VictimsName::Youngest, "youngest first"),
    ] {
        let suffix = match victims {
            VictimsName::Fewest => "",
            VictimsName::Youngest => "-youngest",
        };
        for (file, what, reader) in [
            (
                format!("fig9{suffix}.svg"),
                "local jobs killed (% of those started in the window)",
                kills_started as Reader,
            ),
            (
                format!("fig9{suffix}-submitted.svg"),
                "local jobs killed (% of those submitted in the window, §2.3)",
                kills as Reader,
            ),
        ] {
            figs.push(Figure {
                n: 9,
                file,
                title: format!("Fig. 9: {what} vs λ_g, U_l = 30 %, L_p = 0.7, GP, {rule}"),
                x_label: lam_label.clone(),
                y_label: what.into(),
                lines: WAITS
                    .iter()
                    .map(|&w| {
                        let pts = by_rate(0.3, 0.7, w, GP)
                            .into_iter()
                            .map(|(x, c)| (x, c.with_victims(victims)))
                            .collect();
                        (policy_name(w), pts, reader, 0)
                    })
                    .collect(),
            });
        }
    }
    figs
}

/// Runs `esim coalloc-experiments`.
pub fn run(args: &ExperimentsArgs) -> anyhow::Result<()> {
    let t0 = Instant::now();
    anyhow::ensure!(args.seeds >= 1, "--seeds must be at least 1");
    anyhow::ensure!(
        args.warmup >= 0.0 && args.horizon > args.warmup,
        "--horizon must be greater than --warmup ≥ 0"
    );
    if let Some(bad) = args.figures.iter().find(|f| !(1..=9).contains(*f)) {
        anyhow::bail!("--figures: there is no figure {bad} (1–9)");
    }
    let figs: Vec<Figure> = figures()
        .into_iter()
        .filter(|f| args.figures.is_empty() || args.figures.contains(&f.n))
        .collect();
    let mut cfgs: BTreeMap<String, Cfg> = BTreeMap::new();
    for f in &figs {
        for (_, pts, _, _) in &f.lines {
            for (_, c) in pts {
                cfgs.entry(c.key()).or_insert_with(|| c.clone());
            }
        }
    }
    let protocol = Protocol {
        horizon: args.horizon,
        warmup: args.warmup,
        seeds: args.seeds,
        deadline_bins: BINS,
    };
    eprintln!(
        "esim coalloc-experiments: {} configurations × {} seeds, horizon {} s, warm-up {} s, {} thread(s)",
        cfgs.len(),
        args.seeds,
        args.horizon,
        args.warmup,
        args.threads.max(1)
    );
    let list: Vec<(&String, &Cfg)> = cfgs.iter().collect();
    let next = AtomicUsize::new(0);
    let results: Mutex<BTreeMap<String, Vec<SeedResult>>> = Mutex::new(BTreeMap::new());
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..args.threads.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((key, cfg)) = list.get(i) else {
                    break;
                };
                match run_seeds(&cfg.spec(), &protocol, &make_rpp) {
                    Ok(r) => {
                        if let Ok(mut m) = results.lock() {
                            m.insert((*key).clone(), r);
                        }
                    }
                    Err(e) => {
                        if let Ok(mut f) = failure.lock() {
                            *f = Some(anyhow::anyhow!("{key}: {e}"));
                        }
                        break;
                    }
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().ok().flatten() {
        return Err(e);
    }
    let results = results
        .into_inner()
        .map_err(|_| anyhow::anyhow!("a worker panicked"))?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Ballier et al. §3 reproduced by `esim coalloc-experiments`\n\n{} seeds per point, horizon {} s, warm-up {} s; mean ± 95 % CI half-width.\n",
        args.seeds, args.horizon, args.warmup
    );
    let saturated = |rs: &[SeedResult]| metric(rs, |s| s.started_late).mean > SATURATED;
    for f in &figs {
        let mut series: Vec<Series> = Vec::new();
        // Per series, the x of points whose configuration is saturated.
        let mut marks: Vec<Vec<f64>> = Vec::new();
        for (name, pts, reader, bin) in &f.lines {
            let mut sat = Vec::new();
            let points: Vec<(f64, f64, f64)> = pts
                .iter()
                .filter_map(|(x, c)| {
                    let rs = results.get(&c.key())?;
                    if saturated(rs) {
                        sat.push(*x);
                    }
                    let e = reader(rs, *bin);
                    Some((*x, e.mean, e.ci))
                })
                .collect();
            // Deadline figures give one point per bin: gather a series' bins into one line.
            match series.iter().position(|s| &s.name == name) {
                Some(i) => {
                    series[i].points.extend(points);
                    marks[i].extend(sat);
                }
                None => {
                    series.push(Series {
                        name: name.clone(),
                        points,
                    });
                    marks.push(sat);
                }
            }
        }
        let chart = Chart {
            title: f.title.clone(),
            x_label: f.x_label.clone(),
            y_label: f.y_label.clone(),
            series,
        };
        let path = args.out.join(&f.file);
        let caption = format!(
            "esim coalloc-experiments: the \u{a7}3.1 workload replayed with {} seeds a point, \
             submissions over {} s, metrics after a warm-up of {} s. Each point is the mean \
             over the seeds, its bar the 95 % confidence interval; configurations marked \u{2021} \
             in tables.md are saturated (more than {SATURATED} % of the window's local jobs \
             start after it ends or never).",
            args.seeds, args.horizon, args.warmup
        );
        std::fs::write(&path, render(&chart, &caption))
            .with_context(|| format!("writing {}", path.display()))?;
        md.push_str(&table(&chart, &f.file, &marks));
    }
    let mut json = BTreeMap::new();
    for (key, rs) in &results {
        let s: Vec<&CoallocSummary> = rs.iter().map(|r| &r.summary).collect();
        let get =
            |f: fn(&CoallocSummary) -> f64| estimate(&s.iter().map(|x| f(x)).collect::<Vec<_>>());
        json.insert(
            key.clone(),
            serde_json::json!({
                "success_rate": get(|x| x.success_rate),
                "kill_rate": get(|x| x.kill_rate),
                "kill_rate_started": get(|x| x.kill_rate_started),
                "started_late": get(|x| x.started_late),
                "saturated": saturated(rs),
                "total_load": get(|x| x.total_load),
                "global_load": get(|x| x.global_load),
                "local_load": get(|x| x.local_load),
                "wasted": get(|x| x.wasted),
                "local_response_time": get(|x| x.local_response_time),
                "global_jobs": get(|x| x.global_jobs as f64),
                "local_jobs": get(|x| x.local_jobs as f64),
            }),
        );
    }
    std::fs::write(
        args.out.join("results.json"),
        serde_json::to_string_pretty(&json)?,
    )
    .context("writing results.json")?;
    let runs_time = t0.elapsed().as_secs_f64();
    let _ = writeln!(
        md,
        "Run time: {runs_time:.1} s for {} replays ({} threads).",
        results.len() as u64 * args.seeds,
        args.threads.max(1)
    );
    if !args.no_bench {
        let line = bench()?;
        let _ = writeln!(md, "\n{line}");
    }
    std::fs::write(args.out.join("tables.md"), &md).context("writing tables.md")?;
    print!("{md}");
    println!(
        "wrote {} figure(s), tables.md and results.json to {}; total run time {:.1} s",
        figs.len(),
        args.out.display(),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A configuration is saturated when more than this % of the local jobs submitted in the
/// window start after its end (or never): its local queues grow with the run's length.
const SATURATED: f64 = 5.0;

/// A figure's numbers as a markdown table: one row per x, one column per series; a point of a
/// saturated configuration (`marks[series]` holds its x) is flagged ‡.
fn table(c: &Chart, file: &str, marks: &[Vec<f64>]) -> String {
    let mut xs: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let mut o = format!("## {} ({file})\n\n| {} |", c.title, c.x_label);
    for s in &c.series {
        let _ = write!(o, " {} |", s.name);
    }
    o.push_str("\n|---|");
    o.push_str(&"---|".repeat(c.series.len()));
    o.push('\n');
    let mut any = false;
    for x in xs {
        let _ = write!(o, "| {x:.2} |");
        for (i, s) in c.series.iter().enumerate() {
            match s.points.iter().find(|p| p.0 == x) {
                Some(&(_, m, ci)) => {
                    let sat = marks.get(i).is_some_and(|m| m.contains(&x));
                    any |= sat;
                    let flag = if sat { " ‡" } else { "" };
                    let _ = write!(o, " {m:.2} ± {ci:.2}{flag} |");
                }
                None => o.push_str(" |"),
            }
        }
        o.push('\n');
    }
    if any {
        let _ = write!(
            o,
            "\n‡ saturated: more than {SATURATED} % of the window's local jobs start after it ends or never.\n"
        );
    }
    o.push('\n');
    o
}

/// Times the replay of a 10⁶ s trace at the paper's heaviest load (U_l = 60 %, U_g = 40 %),
/// pure RPP, GP: the median of 3 runs (wall and CPU time), validation included, generation
/// excluded.
fn bench() -> anyhow::Result<String> {
    let cfg = Cfg::new(0.6, 0.4, 0.7, None, GP);
    let mut spec = cfg.spec();
    spec.horizon = 1e6;
    spec.seed = 1;
    let trace = spec.generate();
    let mut wall = Vec::new();
    let mut cpu = Vec::new();
    let mut calls = 0;
    for _ in 0..3 {
        let mut host = make_rpp(&trace.params);
        let (t, c) = (Instant::now(), thread_cpu());
        let run = replay(&trace, &mut host)?;
        wall.push(t.elapsed().as_secs_f64());
        if let (Some(a), Some(b)) = (c, thread_cpu()) {
            cpu.push(b - a);
        }
        calls = run.policy_calls;
    }
    wall.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    let cpu = cpu
        .get(cpu.len() / 2)
        .map_or_else(String::new, |c| format!(", CPU {c:.3} s"));
    Ok(format!(
        "Replay of a 10^6 s trace at U_l = 60 %, U_g = 40 % ({} jobs, {calls} policy calls, every plan validated): median of 3 runs: wall {:.3} s{cpu}.",
        trace.jobs.len(),
        wall[1]
    ))
}
