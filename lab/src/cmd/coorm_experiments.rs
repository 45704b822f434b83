//! `esim coorm-experiments`: Klein & Pérez's CooRM §IV (HPCC 2011) on the lab's coorm driver
//! with the coorm policy loop linked in: Fig. 6 (scalability, 1–8 pools, OAR-like W0 and
//! CooRM W0–W3) and Fig. 7 (fairness: the CEM application's end-time increase in W1 against
//! zero adaptation delay, one curve per delay), as tables, JSON and SVG plots.
//!
//! Packs are 200 consecutive jobs of the trace, spread evenly over it (pack k starts at job
//! `k · ⌊jobs / packs⌋`, rounded down to a multiple of 200). The CPU time of a run is the
//! calling thread's (`CLOCK_THREAD_CPUTIME_ID`): the machine is shared.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::coorm::workload::{self, PACK};
use crate::coorm::{run, Mode, Platform, RunParams, RunStats, WorkloadKind};
use crate::measure::{quantile, thread_cpu};
use anyhow::Context;
use clap::Args;
use sched_sim::swf::{read_path, ReadOptions, SwfJob};

use super::svg::{render, Chart, Series};

/// `esim coorm-experiments`.
#[derive(Debug, Args)]
pub struct ExperimentsArgs {
    /// The SWF trace (plain or .gz) the packs are taken from.
    #[arg(long, value_name = "FILE", required_unless_present = "replot")]
    pub trace: Option<PathBuf>,
    /// Directory for tables.md, results.json and the SVG plots (created if missing).
    #[arg(long, default_value = "coorm-results")]
    pub out: PathBuf,
    /// Packs of 200 jobs for Fig. 6 (0: no Fig. 6).
    #[arg(long, default_value_t = 3)]
    pub packs: usize,
    /// Pool counts n_C for Fig. 6, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4,5,6,7,8")]
    pub pools: Vec<u32>,
    /// Hosts per pool, n_H (§IV-A: 128).
    #[arg(long, default_value_t = 128)]
    pub hosts: u32,
    /// Packs for Fig. 7, one W1 run per pack and delay (0: no Fig. 7; more than the trace has:
    /// all of them).
    #[arg(long, default_value_t = 20)]
    pub fairness_packs: usize,
    /// Pools for Fig. 7.
    #[arg(long, default_value_t = 4)]
    pub fairness_pools: u32,
    /// Adaptation delays of the CEM launcher for Fig. 7, seconds, comma-separated (fair-start
    /// is 5 s).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,6,10,30")]
    pub delays: Vec<f64>,
    /// A small run for tests: 1 pack, 1–2 pools of 16 hosts, 2 fairness packs, delays 2 and
    /// 10 s.
    #[arg(long)]
    pub quick: bool,
    /// Run nothing: redraw the figures of --out from its results.json (as a run wrote it),
    /// e.g. after a change to how figures are drawn. tables.md is left as it is.
    #[arg(long, conflicts_with_all = ["trace", "packs", "pools", "hosts", "fairness_packs", "fairness_pools", "delays", "quick"])]
    pub replot: bool,
}

/// min, q1, median, q3, max (linear interpolation between order statistics).
fn five(mut v: Vec<f64>) -> [f64; 5] {
    if v.is_empty() {
        return [f64::NAN; 5];
    }
    v.sort_by(f64::total_cmp);
    let q = |p: f64| quantile(&v, p);
    [v[0], q(0.25), q(0.5), q(0.75), v[v.len() - 1]]
}

/// The packs: `count` runs of 200 consecutive jobs spread over `jobs` (all of them if `count`
/// exceeds what the trace holds).
fn packs(jobs: &[SwfJob], count: usize) -> Vec<&[SwfJob]> {
    let total = jobs.len() / PACK;
    if total == 0 || count == 0 {
        return Vec::new();
    }
    let count = count.min(total).max(1);
    let stride = total / count;
    (0..count)
        .map(|k| &jobs[k * stride * PACK..(k * stride + 1) * PACK])
        .collect()
}

/// One Fig. 6 measurement.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Row {
    system: String,
    pools: u32,
    pack: usize,
    computed_configs: u64,
    submitted_configs: u64,
    cpu_s: f64,
    json_bytes: u64,
    cdr_bytes: u64,
    messages: u64,
    passes: u64,
}

fn measure(
    p: &Platform,
    apps: &[workload::App],
    params: &RunParams,
) -> anyhow::Result<(RunStats, f64)> {
    let c0 = thread_cpu();
    let t0 = std::time::Instant::now();
    let r = run(p, apps, params)?;
    let cpu = match (c0, thread_cpu()) {
        (Some(a), Some(b)) => b - a,
        _ => t0.elapsed().as_secs_f64(),
    };
    Ok((r, cpu))
}

const METRICS: [(&str, &str); 5] = [
    ("computed_configs", "computed configurations"),
    (
        "submitted_configs",
        "computed configurations, each counted once (OAR: as submitted)",
    ),
    ("cpu_s", "CPU time (s)"),
    ("json_bytes", "messages, JSON (bytes)"),
    ("cdr_bytes", "messages, CDR-like (bytes)"),
];

fn metric(r: &Row, m: &str) -> f64 {
    match m {
        "computed_configs" => r.computed_configs as f64,
        "submitted_configs" => r.submitted_configs as f64,
        "cpu_s" => r.cpu_s,
        "json_bytes" => r.json_bytes as f64,
        _ => r.cdr_bytes as f64,
    }
}

/// Runs the experiments and writes the outputs.
pub fn run_experiments(args: &ExperimentsArgs) -> anyhow::Result<()> {
    if args.replot {
        return replot(&args.out);
    }
    let trace_path = args
        .trace
        .as_ref()
        .context("--trace is required unless --replot")?;
    let (n_packs, pool_counts, hosts, f_packs, f_pools, delays) = if args.quick {
        (1, vec![1, 2], 16, 2, 2, vec![2.0, 10.0])
    } else {
        (
            args.packs,
            args.pools.clone(),
            args.hosts,
            args.fairness_packs,
            args.fairness_pools,
            args.delays.clone(),
        )
    };
    anyhow::ensure!(hosts >= 2, "--hosts must be at least 2");
    anyhow::ensure!(
        pool_counts.iter().all(|&n| n >= 1) && f_pools >= 1,
        "pool counts must be at least 1"
    );
    anyhow::ensure!(
        delays.iter().all(|d| d.is_finite() && *d >= 0.0),
        "delays must be non-negative seconds"
    );
    let opts = ReadOptions {
        nodes: Some(u32::MAX),
        limit: None,
    };
    let trace = read_path(trace_path, &opts)?;
    anyhow::ensure!(
        n_packs.max(f_packs) > 0,
        "--packs and --fairness-packs are both 0: nothing to run"
    );
    let all = packs(&trace.jobs, n_packs.max(f_packs));
    anyhow::ensure!(
        !all.is_empty(),
        "{}: fewer than {PACK} usable jobs, not one pack",
        trace_path.display()
    );
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let fig6_packs = packs(&trace.jobs, n_packs);
    let started = std::time::Instant::now();

    // Fig. 6.
    let mut rows: Vec<Row> = Vec::new();
    for &n_c in pool_counts.iter().filter(|_| !fig6_packs.is_empty()) {
        let p = Platform::paper(n_c, hosts);
        for (k, pack) in fig6_packs.iter().enumerate() {
            let mut systems: Vec<(String, Mode, WorkloadKind)> =
                vec![("OAR W0".into(), Mode::Oar, WorkloadKind::W0)];
            for w in WorkloadKind::ALL {
                systems.push((format!("CooRM {}", w.name()), Mode::Coorm, w));
            }
            let mut starts: Vec<Vec<u64>> = Vec::new();
            for (name, mode, w) in systems {
                let apps = workload::build(pack, w, hosts);
                let (r, cpu) = measure(&p, &apps, &RunParams::paper(mode))?;
                if w == WorkloadKind::W0 {
                    starts.push(r.results.iter().map(|x| x.start).collect());
                }
                rows.push(Row {
                    system: name,
                    pools: n_c,
                    pack: k,
                    computed_configs: r.computed_configs,
                    submitted_configs: r.submitted_configs,
                    cpu_s: cpu,
                    json_bytes: r.bytes.json,
                    cdr_bytes: r.bytes.cdr,
                    messages: r.messages,
                    passes: r.passes,
                });
            }
            // §IV-A: the two systems give equivalent schedules on W0.
            anyhow::ensure!(
                starts[0] == starts[1],
                "OAR and CooRM started W0 jobs differently (pack {k}, {n_c} pools)"
            );
        }
        eprintln!(
            "esim: coorm-experiments: {n_c} pool(s) done ({:.0} s)",
            started.elapsed().as_secs_f64()
        );
    }

    // Fig. 7.
    let fp = Platform::paper(f_pools, hosts);
    let f_list = packs(&trace.jobs, f_packs);
    let cem = workload::w1_cem_index(PACK);
    let mut increases: Vec<(f64, Vec<f64>)> = delays.iter().map(|&d| (d, Vec::new())).collect();
    for pack in &f_list {
        let apps = workload::build(pack, WorkloadKind::W1, hosts);
        let base = run(&fp, &apps, &RunParams::paper(Mode::Coorm))?.results[cem].end;
        for (d, out) in &mut increases {
            let params = RunParams {
                cem_delay: (*d * 1000.0).round() as u64,
                ..RunParams::paper(Mode::Coorm)
            };
            let end = run(&fp, &apps, &params)?.results[cem].end;
            out.push((end as f64 - base as f64) / 1000.0);
        }
    }
    let elapsed = started.elapsed().as_secs_f64();

    // Outputs.
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# CooRM experiments\n\nTrace `{}`; {} pack(s) of {PACK} jobs for Fig. 6, {} for Fig. 7; n_H = {hosts}; re-policy 1 s, fair-start 5 s. Each cell: min / q1 / median / q3 / max over the packs. Run time {elapsed:.0} s.\n",
        trace_path.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned()),
        fig6_packs.len(),
        f_list.len()
    );
    let setting = Setting {
        trace: trace_path
            .file_name()
            .map_or_else(String::new, |f| f.to_string_lossy().into_owned()),
        hosts,
    };
    let charts = figures(&mut md, &rows, &pool_counts, &increases, f_pools, &setting);
    write_charts(&args.out, &charts)?;
    let _ = writeln!(
        md,
        "\n## Cost of views\n\n{}",
        view_cost(&trace.jobs, hosts)
    );
    let tables = args.out.join("tables.md");
    std::fs::write(&tables, &md).with_context(|| format!("cannot write {}", tables.display()))?;
    let json = serde_json::json!({
        "trace": trace_path,
        "hosts": hosts,
        "fig6": rows,
        "fig7": {
            "pools": f_pools,
            "increase_s": increases.iter().map(|(d, v)| serde_json::json!({"delay_s": d, "values": v})).collect::<Vec<_>>(),
        },
        "elapsed_s": elapsed,
    });
    let results = args.out.join("results.json");
    std::fs::write(&results, serde_json::to_string_pretty(&json)?)
        .with_context(|| format!("cannot write {}", results.display()))?;
    print!("{md}");
    Ok(())
}

/// What the captions say of a run.
struct Setting {
    /// The trace's file name.
    trace: String,
    /// Hosts per pool.
    hosts: u32,
}

/// Fig. 6's and Fig. 7's tables, appended to `md`, and their charts with captions.
fn figures(
    md: &mut String,
    rows: &[Row],
    pool_counts: &[u32],
    increases: &[(f64, Vec<f64>)],
    f_pools: u32,
    setting: &Setting,
) -> Vec<(String, Chart, String)> {
    let systems: Vec<String> = {
        let mut s: Vec<String> = rows.iter().map(|r| r.system.clone()).collect();
        s.sort();
        s.dedup();
        s
    };
    let fig6_packs = {
        let mut p: Vec<usize> = rows.iter().map(|r| r.pack).collect();
        p.sort_unstable();
        p.dedup();
        p.len()
    };
    let mut charts = Vec::new();
    for (m, label) in METRICS.into_iter().filter(|_| !rows.is_empty()) {
        let _ = writeln!(md, "## Fig. 6: {label}\n");
        let _ = write!(md, "| system |");
        for n in pool_counts {
            let _ = write!(md, " {n} pool(s) |");
        }
        let _ = writeln!(md, "\n|---|{}", "---|".repeat(pool_counts.len()));
        let mut series = Vec::new();
        for s in &systems {
            let _ = write!(md, "| {s} |");
            let mut pts = Vec::new();
            for &n in pool_counts {
                let v: Vec<f64> = rows
                    .iter()
                    .filter(|r| &r.system == s && r.pools == n)
                    .map(|r| metric(r, m))
                    .collect();
                let f = five(v);
                let fmt = |x: f64| {
                    if m == "cpu_s" {
                        format!("{x:.3}")
                    } else {
                        format!("{x:.0}")
                    }
                };
                let _ = write!(
                    md,
                    " {} |",
                    f.iter().map(|x| fmt(*x)).collect::<Vec<_>>().join(" / ")
                );
                // Plotted: log10 of the median, with the quartiles as the bar (drawn
                // symmetric: half the inter-quartile range in log units).
                let lg = |x: f64| x.max(1e-3).log10();
                pts.push((f64::from(n), lg(f[2]), (lg(f[3]) - lg(f[1])) / 2.0));
            }
            let _ = writeln!(md);
            series.push(Series {
                name: s.clone(),
                points: pts,
            });
        }
        let _ = writeln!(md);
        charts.push((
            format!("fig6-{m}.svg"),
            Chart {
                title: format!("Fig. 6: {label}, median over packs"),
                x_label: "pools (n_C)".into(),
                y_label: format!("log10 {label}"),
                series,
            },
            format!(
                "esim coorm-experiments on {}: {} pack(s) of {PACK} jobs, {} hosts a pool, \
                 re-policy 1 s, fair-start 5 s. Each point is log10 of the median over the \
                 packs, its bar as long as the inter-quartile range in log units, centred on it.",
                setting.trace, fig6_packs, setting.hosts
            ),
        ));
    }
    let n_f = increases.first().map_or(0, |(_, v)| v.len());
    if n_f > 0 {
        let _ = writeln!(
        md,
        "## Fig. 7: CEM end-time increase in W1 against zero adaptation delay ({f_pools} pools)\n\n{n_f} packs. Seconds; [a, b]: 95 % confidence interval (the median's from order statistics, distribution-free; the proportions' Wilson intervals). Median of the even-numbered and of the odd-numbered packs (both spread over the trace): two halves that agree when the packs are enough. The ECDF's 95 % band (Dvoretzky–Kiefer–Wolfowitz) is ± {:.3}.\n\n| delay (s) | packs | min | q1 | median [95 % CI] | q3 | max | median, even / odd packs | P(> 60 s) | P(> 1 h) |\n|---|---|---|---|---|---|---|---|---|---|",
        dkw(n_f)
    );
        let mut ecdf = Vec::new();
        for (d, v) in increases {
            let f = five(v.clone());
            let count = |x: f64| v.iter().filter(|y| **y > x).count();
            let (lo, hi) = median_ci(v);
            let half = |parity: usize| -> f64 {
                let h: Vec<f64> = v.iter().skip(parity).step_by(2).copied().collect();
                five(h)[2]
            };
            let prop = |k: usize| {
                let (p, a, b) = wilson(k, v.len());
                format!("{:.0} % [{:.0}, {:.0}]", 100.0 * p, 100.0 * a, 100.0 * b)
            };
            let _ = writeln!(
            md,
            "| {d} | {} | {:.1} | {:.1} | {:.1} [{lo:.1}, {hi:.1}] | {:.1} | {:.1} | {:.1} / {:.1} | {} | {} |",
            v.len(),
            f[0],
            f[1],
            f[2],
            f[3],
            f[4],
            half(0),
            half(1),
            prop(count(60.0)),
            prop(count(3600.0))
        );
            let mut s = v.clone();
            s.sort_by(f64::total_cmp);
            let n = s.len().max(1) as f64;
            ecdf.push(Series {
                name: format!("delay {d} s"),
                points: s
                    .iter()
                    .enumerate()
                    // No bar a point: the band is the same width everywhere (the caption
                    // gives it), and 142 bars a line hid the lines.
                    .map(|(i, x)| (*x, (i + 1) as f64 / n, 0.0))
                    .collect(),
            });
        }
        charts.push((
            "fig7-fairness.svg".into(),
            Chart {
                title: "Fig. 7: ECDF of the CEM end-time increase (W1)".into(),
                x_label: "end-time increase (s)".into(),
                y_label: "fraction of packs".into(),
                series: ecdf,
            },
            format!(
                "esim coorm-experiments on {}: W1 on {n_f} pack(s) of {PACK} jobs, {f_pools} \
                 pools of {} hosts. One line per adaptation delay of the CEM launcher: the \
                 fraction of packs whose CEM application ends at most x seconds later than \
                 with no delay. The 95 % band of each line (Dvoretzky\u{2013}Kiefer\u{2013}Wolfowitz) \
                 is \u{b1} {:.3} around it.",
                setting.trace,
                setting.hosts,
                dkw(n_f)
            ),
        ));
    }
    charts
}

fn write_charts(out: &std::path::Path, charts: &[(String, Chart, String)]) -> anyhow::Result<()> {
    for (name, c, caption) in charts {
        let path = out.join(name);
        std::fs::write(&path, render(c, caption))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// `--replot`: the figures of `out` redrawn from its results.json.
fn replot(out: &std::path::Path) -> anyhow::Result<()> {
    #[derive(serde::Deserialize)]
    struct Increase {
        delay_s: f64,
        values: Vec<f64>,
    }
    #[derive(serde::Deserialize)]
    struct Fig7 {
        pools: u32,
        increase_s: Vec<Increase>,
    }
    #[derive(serde::Deserialize)]
    struct Results {
        trace: PathBuf,
        hosts: u32,
        fig6: Vec<Row>,
        fig7: Fig7,
    }
    let r: Results = super::read_results(out, "coorm-experiments")?;
    let mut pool_counts: Vec<u32> = r.fig6.iter().map(|x| x.pools).collect();
    pool_counts.sort_unstable();
    pool_counts.dedup();
    let increases: Vec<(f64, Vec<f64>)> = r
        .fig7
        .increase_s
        .into_iter()
        .map(|i| (i.delay_s, i.values))
        .collect();
    let setting = Setting {
        trace: r
            .trace
            .file_name()
            .map_or_else(String::new, |f| f.to_string_lossy().into_owned()),
        hosts: r.hosts,
    };
    let charts = figures(
        &mut String::new(),
        &r.fig6,
        &pool_counts,
        &increases,
        r.fig7.pools,
        &setting,
    );
    write_charts(out, &charts)?;
    eprintln!(
        "esim: coorm-experiments: {} figure(s) redrawn in {} from its results.json",
        charts.len(),
        out.display()
    );
    Ok(())
}

/// What filling views costs the coorm policy, and that it costs nothing when no job asks: one
/// `Coorm::plan` on 8 pools with the first 2,000 jobs of the trace queued as rigid requests
/// (at most n_H hosts) behind 64 running ones, with `wants_view` off for all, then on for all;
/// median thread CPU time of 11 calls each.
fn view_cost(jobs: &[SwfJob], hosts: u32) -> String {
    use sched_core::{Pending, Policy, PoolSteps, Request, Running, Shape, Snapshot};
    let p = Platform::paper(8, hosts);
    let running: Vec<Running> = (0..64u32)
        .map(|i| {
            let pool = sched_core::PoolId(i % 8);
            let end = 1_000_000 + u64::from(i) * 37_000;
            Running {
                id: sched_core::JobId(1_000_000 + u64::from(i)),
                user: 0,
                request: Request::rigid(hosts / 16, end),
                shape: Shape::rigid(pool, hosts / 16, end),
                start: 0,
                holds: sched_core::rvec![PoolSteps::flat(pool, 0, end, hosts / 16)],
                killable: false,
            }
        })
        .collect();
    let pending = |views: bool| -> Vec<Pending> {
        jobs.iter()
            .take(2000)
            .map(|j| Pending {
                id: j.id,
                user: 0,
                submit: 0,
                earliest_start: 0,
                priority: 0,
                request: Request::rigid(j.nodes.clamp(1, hosts), j.walltime.max(1000)),
                wants_view: views,
                claimed: Default::default(),
            })
            .collect()
    };
    let time = |pend: &[Pending]| -> (f64, usize) {
        let mut cpu = Vec::new();
        let mut views = 0;
        for _ in 0..11 {
            let snap = Snapshot {
                now: 0,
                pools: &p.pools,
                running: &running,
                pending: pend,
            };
            let c0 = thread_cpu().unwrap_or(0.0);
            // The policy called bare, not through a `PolicyHost`: this measures one plan's own
            // cost, and the host's validator would be counted in it. Nothing acts on the plan.
            let plan = esched_coorm::Coorm::new().plan(&snap);
            cpu.push(thread_cpu().unwrap_or(0.0) - c0);
            views = plan.views.len();
        }
        cpu.sort_by(f64::total_cmp);
        (cpu[5], views)
    };
    let off = pending(false);
    let on = pending(true);
    let (t_off, v_off) = time(&off);
    let (t_on, v_on) = time(&on);
    format!(
        "One `coorm` plan, {} queued rigid jobs behind 64 running, 8 pools of {hosts}: without views {:.2} ms ({v_off} views), with a view for every job {:.2} ms ({v_on} views); median thread CPU time of 11 calls.",
        off.len(),
        t_off * 1000.0,
        t_on * 1000.0
    )
}

/// The 95 % confidence interval of the median of `v`: the order statistics at
/// n/2 ∓ 1.96·√n/2 (the normal approximation of the binomial; distribution-free).
fn median_ci(v: &[f64]) -> (f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let h = 1.96 * (n as f64).sqrt() / 2.0;
    let lo = ((n as f64 / 2.0 - h).floor().max(1.0) as usize).min(n);
    let hi = ((n as f64 / 2.0 + h).ceil().max(1.0) as usize).min(n);
    (s[lo - 1], s[hi - 1])
}

/// A proportion `k / n` with its 95 % Wilson interval.
fn wilson(k: usize, n: usize) -> (f64, f64, f64) {
    if n == 0 {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let (k, n, z) = (k as f64, n as f64, 1.96f64);
    let p = k / n;
    let den = 1.0 + z * z / n;
    let mid = (p + z * z / (2.0 * n)) / den;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / den;
    (p, (mid - half).max(0.0), (mid + half).min(1.0))
}

/// The half-width of the 95 % Dvoretzky–Kiefer–Wolfowitz band of an ECDF of `n` samples.
fn dkw(n: usize) -> f64 {
    if n == 0 {
        return f64::NAN;
    }
    ((2.0f64 / 0.05).ln() / (2.0 * n as f64)).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confidence_intervals() {
        // 100 samples 1..=100: the median's interval is the 40th and 60th order statistics.
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(median_ci(&v), (40.0, 60.0));
        let (p, a, b) = wilson(5, 100);
        assert!((p - 0.05).abs() < 1e-12);
        assert!(
            (a - 0.0215).abs() < 1e-3 && (b - 0.1118).abs() < 1e-3,
            "{a} {b}"
        );
        assert!((dkw(100) - 0.1358).abs() < 1e-3);
    }

    #[test]
    fn five_number_summary_interpolates() {
        assert_eq!(
            five(vec![4.0, 1.0, 3.0, 2.0, 5.0]),
            [1.0, 2.0, 3.0, 4.0, 5.0]
        );
        let f = five(vec![0.0, 10.0]);
        assert_eq!(f[2], 5.0);
        assert!(five(vec![])[0].is_nan());
    }
}
