//! The experiments of Dutot & Eyraud §4: the instance generators of §4.1, the runs, the
//! min/avg/max ratios to the lower bounds, tables in the layout of Figures 3–6 and SVG plots
//! like Figures 3–7.
//!
//! Choices where §4.1 is open (each also in docs/moldable.md):
//! - **Parallelism formula.** As printed, p(j) = p(j−1)·(X+j)/(1+j) gives *no* speed-up at
//!   X = 1 (factor 1) and the most at X = 0 (p(j) = p(1)·2/(j+1)); yet the text calls X ≈ 0.9
//!   "highly parallel (quasi-linear speed-up)" and X ≈ 0.1 "weakly parallel (speed-up close to
//!   1)". We follow the text's meaning: X ~ N(0.9, 0.2) for highly parallel tasks, N(0.1, 0.2)
//!   for weakly parallel ones, used as p(j) = p(j−1)·((1−X)+j)/(1+j). (Swapping the means with
//!   the formula as printed is the same distribution: N(μ, σ) truncated to [0, 1] is symmetric
//!   to N(1−μ, σ).)
//! - **X per task**: one draw per task (its parallelism is the task's property); a draw per
//!   step would average out to the mean and make all tasks alike.
//! - **Truncation**: X outside [0, 1] is redrawn (the paper's rule); sequential times of the
//!   mixed model drawn ≤ 0 are redrawn too (the paper does not say; a task cannot run for a
//!   negative time, and redrawing is the rule it gives for X).
//! - **Models**: weakly and highly parallel use uniform(1, 10) sequential times; mixed uses the
//!   mixed sequential times (70% small N(1, 0.5), 30% large N(10, 5)) with small tasks weakly
//!   and large tasks highly parallel (§4.1 says so); the Cirne–Berman-like model uses
//!   uniform(1, 10) sequential times (§4.1 says so) and Downey's speed-up model, which Cirne &
//!   Berman's generator builds on, with average parallelism A log-uniform in [1, m] and
//!   variance σ uniform in [0, 2] (our stand-in for their fitted distributions).
//! - Weights uniform in [1, 10] (reals).

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::moldable::bounds::bounds;
use crate::moldable::online::downey;
use crate::moldable::solve::{schedules, SolveError, ALGORITHMS};
use esched_bicriteria::bicrit::{bicrit, BiCritParams, Kept};
use esched_bicriteria::instance::{Instance, Task};

/// A workload model of §4.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// Uniform(1, 10) sequential times, weakly parallel (Figure 3).
    Weakly,
    /// Uniform(1, 10) sequential times, highly parallel (Figure 4).
    Highly,
    /// Mixed sequential times, small weakly and large highly parallel (Figure 5).
    Mixed,
    /// Uniform(1, 10) sequential times, Cirne–Berman-like speed-ups (Figure 6).
    Cirne,
}

impl Model {
    /// All four, in the paper's figure order.
    pub const ALL: [Model; 4] = [Model::Weakly, Model::Highly, Model::Mixed, Model::Cirne];

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Model::Weakly => "weakly",
            Model::Highly => "highly",
            Model::Mixed => "mixed",
            Model::Cirne => "cirne",
        }
    }

    /// The paper's figure number.
    pub fn figure(self) -> u32 {
        match self {
            Model::Weakly => 3,
            Model::Highly => 4,
            Model::Mixed => 5,
            Model::Cirne => 6,
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Option<Model> {
        Model::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// A normal draw (Box–Muller).
fn normal(rng: &mut impl Rng, mean: f64, sd: f64) -> f64 {
    let u1: f64 = 1.0 - rng.gen::<f64>(); // (0, 1]
    let u2: f64 = rng.gen();
    mean + sd * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A normal draw redrawn until it lies in [lo, hi] (lo excluded when `open_lo`).
fn truncated(rng: &mut impl Rng, mean: f64, sd: f64, lo: f64, hi: f64, open_lo: bool) -> f64 {
    loop {
        let v = normal(rng, mean, sd);
        if (v > lo || (!open_lo && v == lo)) && v <= hi {
            return v;
        }
    }
}

/// Run times on 1..=m of a task with sequential time `p1` by the §4.1 recurrence, X being the
/// paper's parallelism draw (X ≈ 0.9 highly parallel; see the module doc for the 1 − X).
fn recurrence(p1: f64, x: f64, m: usize) -> Vec<f64> {
    let y = 1.0 - x;
    let mut p = Vec::with_capacity(m);
    p.push(p1);
    for j in 2..=m {
        let prev = p[j - 2];
        p.push(prev * (y + j as f64) / (1.0 + j as f64));
    }
    p
}

/// One random instance of `model` with `n` tasks on `m` processors.
pub fn generate(model: Model, n: usize, m: usize, rng: &mut impl Rng) -> Instance {
    let weak = |rng: &mut _| truncated(rng, 0.1, 0.2, 0.0, 1.0, false);
    let high = |rng: &mut _| truncated(rng, 0.9, 0.2, 0.0, 1.0, false);
    let tasks = (0..n)
        .map(|_| {
            let w = rng.gen_range(1.0..=10.0);
            let p = match model {
                Model::Weakly => {
                    let p1 = rng.gen_range(1.0..=10.0);
                    recurrence(p1, weak(rng), m)
                }
                Model::Highly => {
                    let p1 = rng.gen_range(1.0..=10.0);
                    recurrence(p1, high(rng), m)
                }
                Model::Mixed => {
                    if rng.gen_bool(0.7) {
                        let p1 = truncated(rng, 1.0, 0.5, 0.0, f64::INFINITY, true);
                        recurrence(p1, weak(rng), m)
                    } else {
                        let p1 = truncated(rng, 10.0, 5.0, 0.0, f64::INFINITY, true);
                        recurrence(p1, high(rng), m)
                    }
                }
                Model::Cirne => {
                    let p1 = rng.gen_range(1.0..=10.0);
                    let a = 2f64.powf(rng.gen_range(0.0..=(m as f64).log2()));
                    let sigma = rng.gen_range(0.0..=2.0);
                    (1..=m).map(|k| p1 / downey(k as f64, a, sigma)).collect()
                }
            };
            Task { w, p }
        })
        .collect();
    // Both generators give monotonic tasks (the recurrence: time factor ≤ 1 and work factor
    // j(Y+j)/((j−1)(1+j)) ≥ 1; Downey: speed-up non-decreasing, efficiency non-increasing).
    Instance::new(m, tasks).expect("the generators give monotonic tasks")
}

/// Min, average (sum of values over sum of bounds, §4.2) and max of the ratios of one point.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Ratio {
    /// Smallest ratio of a run.
    pub min: f64,
    /// Σ values / Σ bounds.
    pub avg: f64,
    /// Largest ratio of a run.
    pub max: f64,
}

/// Accumulates values and bounds of one algorithm and criterion over the runs of a point.
#[derive(Clone, Copy, Debug)]
struct Acc {
    min: f64,
    max: f64,
    sum_v: f64,
    sum_b: f64,
}

impl Acc {
    fn new() -> Self {
        Acc {
            min: f64::INFINITY,
            max: 0.0,
            sum_v: 0.0,
            sum_b: 0.0,
        }
    }
    fn add(&mut self, v: f64, b: f64) {
        let r = v / b;
        self.min = self.min.min(r);
        self.max = self.max.max(r);
        self.sum_v += v;
        self.sum_b += b;
    }
    fn ratio(&self) -> Ratio {
        Ratio {
            min: self.min,
            avg: self.sum_v / self.sum_b,
            max: self.max,
        }
    }
}

/// The results of one point (a model and a number of tasks).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Point {
    /// Tasks.
    pub n: usize,
    /// Cmax ratio per algorithm (in [`ALGORITHMS`] order).
    pub cmax: Vec<Ratio>,
    /// ΣωC ratio per algorithm.
    pub minsum: Vec<Ratio>,
    /// BiCrit's batch schedule: `[Cmax ratio, ΣωC ratio]`.
    pub bicrit_batch: [Ratio; 2],
    /// BiCrit's best compaction by ΣωC: `[Cmax ratio, ΣωC ratio]`.
    pub bicrit_compacted: [Ratio; 2],
    /// Runs where BiCrit returned a compaction (no worse than the batch schedule on both).
    pub kept_compacted: usize,
    /// Runs whose printed LP (§3.3 as printed) exceeded the best ΣωC found: it was not a lower
    /// bound there.
    pub paper_lp_above_best: usize,
    /// Σ printed-LP values / Σ corrected-LP values over the runs.
    pub paper_lp_over_corrected: f64,
    /// Median time of BiCrit (the whole algorithm, shuffles included), seconds.
    pub bicrit_median_s: f64,
    /// Largest time of BiCrit, seconds.
    pub bicrit_max_s: f64,
}

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// Processors (the paper: 200).
    pub m: usize,
    /// Numbers of tasks (the paper: 25..=400).
    pub ns: Vec<usize>,
    /// Runs per point (the paper: 40).
    pub runs: usize,
    /// Models.
    pub models: Vec<Model>,
    /// Seed of the generator.
    pub seed: u64,
    /// BiCrit's parameters.
    pub params: BiCritParams,
}

/// The results of one model.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ModelReport {
    /// Model name.
    pub model: &'static str,
    /// Figure of the paper.
    pub figure: u32,
    /// One per number of tasks.
    pub points: Vec<Point>,
}

/// The seed of one run: independent streams for every (model, n, run).
fn run_seed(seed: u64, model: Model, n: usize, run: usize) -> u64 {
    let mut h = seed ^ 0x9e37_79b9_7f4a_7c15;
    for v in [model.figure() as u64, n as u64, run as u64] {
        h = (h ^ v).wrapping_mul(0x1000_0000_01b3).rotate_left(29);
    }
    h
}

/// Runs one point.
pub fn run_point(spec: &Spec, model: Model, n: usize) -> Result<Point, SolveError> {
    let mut cmax = [Acc::new(); 6];
    let mut minsum = [Acc::new(); 6];
    let mut paper_above = 0;
    let (mut sum_paper, mut sum_corr) = (0.0, 0.0);
    let mut times = Vec::with_capacity(spec.runs);
    let mut batch = (Acc::new(), Acc::new());
    let mut compacted = (Acc::new(), Acc::new());
    let mut kept_compacted = 0;
    for run in 0..spec.runs {
        let mut rng = ChaCha8Rng::seed_from_u64(run_seed(spec.seed, model, n, run));
        let inst = generate(model, n, spec.m, &mut rng);
        let b = bounds(&inst, spec.params.makespan)?;
        let t0 = Instant::now();
        let run = bicrit(&inst, spec.params);
        times.push(t0.elapsed().as_secs_f64());
        // BiCrit's two schedules apart, and which one it returned.
        for (acc, s) in [(&mut batch, &run.batch), (&mut compacted, &run.compacted)] {
            acc.0.add(s.cmax(&inst), b.cmax_lb);
            acc.1.add(s.sum_wc(&inst), b.minsum_lb);
        }
        if run.kept == Kept::Compacted {
            kept_compacted += 1;
        }
        let all = schedules(&inst, spec.params)?;
        let mut best = f64::INFINITY;
        for (a, (_, s)) in all.iter().enumerate() {
            let (c, w) = (s.cmax(&inst), s.sum_wc(&inst));
            cmax[a].add(c, b.cmax_lb);
            minsum[a].add(w, b.minsum_lb);
            best = best.min(w);
        }
        sum_paper += b.minsum_lb_paper;
        sum_corr += b.minsum_lb;
        if b.minsum_lb_paper > best * (1.0 + 1e-9) {
            paper_above += 1;
        }
    }
    times.sort_by(f64::total_cmp);
    Ok(Point {
        n,
        cmax: cmax.iter().map(Acc::ratio).collect(),
        minsum: minsum.iter().map(Acc::ratio).collect(),
        bicrit_batch: [batch.0.ratio(), batch.1.ratio()],
        bicrit_compacted: [compacted.0.ratio(), compacted.1.ratio()],
        kept_compacted,
        paper_lp_above_best: paper_above,
        paper_lp_over_corrected: sum_paper / sum_corr,
        bicrit_median_s: times.get(times.len() / 2).copied().unwrap_or(0.0),
        bicrit_max_s: times.last().copied().unwrap_or(0.0),
    })
}

/// Runs every point of `spec`; `progress` is told each point done.
pub fn run_experiment(
    spec: &Spec,
    mut progress: impl FnMut(Model, usize),
) -> Result<Vec<ModelReport>, SolveError> {
    let mut out = Vec::new();
    for &model in &spec.models {
        let mut points = Vec::new();
        for &n in &spec.ns {
            points.push(run_point(spec, model, n)?);
            progress(model, n);
        }
        out.push(ModelReport {
            model: model.name(),
            figure: model.figure(),
            points,
        });
    }
    Ok(out)
}

/// The tables: per model (figure), one table per criterion, a row per number of tasks and
/// min/avg/max per algorithm — the figures' series as numbers.
pub fn format_tables(reports: &[ModelReport], spec: &Spec) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    for r in reports {
        for (crit, pick) in [("Cmax", 0usize), ("sum wC", 1)] {
            let _ = writeln!(
                s,
                "Figure {} ({} parallel tasks{}), m = {}, {} runs per point, makespan algorithm {}: {} ratio to its lower bound, min/avg/max",
                r.figure,
                r.model,
                if r.model == "cirne" { ", Cirne-Berman-like" } else { "" },
                spec.m,
                spec.runs,
                spec.params.makespan,
                crit
            );
            let _ = write!(s, "{:>5}", "n");
            for a in ALGORITHMS {
                let _ = write!(s, " | {:^17}", a);
            }
            let _ = writeln!(s);
            for p in &r.points {
                let _ = write!(s, "{:>5}", p.n);
                let rs = if pick == 0 { &p.cmax } else { &p.minsum };
                for x in rs {
                    let _ = write!(s, " | {:>5.2} {:>5.2} {:>5.2}", x.min, x.avg, x.max);
                }
                let _ = writeln!(s);
            }
            let _ = writeln!(s);
        }
    }
    for r in reports {
        let _ = writeln!(
            s,
            "BiCrit's two schedules, {} (figure {}): batch and best compaction, avg (max) ratio to the bounds; runs where the compaction was returned",
            r.model, r.figure
        );
        let _ = writeln!(
            s,
            "{:>5} | {:^15} | {:^15} | {:^15} | {:^15} | {:>7}",
            "n", "batch Cmax", "compact Cmax", "batch sum wC", "compact sum wC", "kept"
        );
        for p in &r.points {
            let c = |x: &Ratio| format!("{:>6.3} ({:>5.2})", x.avg, x.max);
            let _ = writeln!(
                s,
                "{:>5} | {:>15} | {:>15} | {:>15} | {:>15} | {:>3}/{:<3}",
                p.n,
                c(&p.bicrit_batch[0]),
                c(&p.bicrit_compacted[0]),
                c(&p.bicrit_batch[1]),
                c(&p.bicrit_compacted[1]),
                p.kept_compacted,
                spec.runs
            );
        }
        let _ = writeln!(s);
    }
    per_model_table(
        &mut s,
        "The LP of §3.3 as printed: runs where it exceeded the best sum wC found (so was no lower bound), and Σ printed / Σ corrected",
        reports,
        spec,
        |p| {
            format!(
                "{:>3}/{:<3} {:>6.3}",
                p.paper_lp_above_best, spec.runs, p.paper_lp_over_corrected
            )
        },
    );
    let _ = writeln!(s);
    per_model_table(
        &mut s,
        &format!(
            "Figure 7: BiCrit's run time (median / max over the runs of a point, ms; shuffles = {})",
            spec.params.shuffles
        ),
        reports,
        spec,
        |p| format!("{:>6.2} / {:>6.2}", p.bicrit_median_s * 1e3, p.bicrit_max_s * 1e3),
    );
    s
}

/// A table with one row per task count and one column per model, each cell `cell` of that
/// model's point.
fn per_model_table(
    s: &mut String,
    title: &str,
    reports: &[ModelReport],
    spec: &Spec,
    cell: impl Fn(&Point) -> String,
) {
    use std::fmt::Write as _;
    let _ = writeln!(s, "{title}");
    let _ = write!(s, "{:>5}", "n");
    for r in reports {
        let _ = write!(s, " | {:^15}", r.model);
    }
    let _ = writeln!(s);
    for (i, n) in spec.ns.iter().enumerate() {
        let _ = write!(s, "{:>5}", n);
        for r in reports {
            let _ = write!(s, " | {}", cell(&r.points[i]));
        }
        let _ = writeln!(s);
    }
}

/// One chart series: its name and, per point, (x, min, avg, max).
pub type Series<'a> = (&'a str, Vec<(f64, f64, f64, f64)>);

/// A line chart drawn by esched-report's plotting module: x = number of tasks, one series per
/// name with its (x, min, avg, max); the average as a line with the series' own marker and dash
/// pattern, min–max as a vertical bar. Values beyond `y_max` are drawn at the frame with an
/// arrow and their value (the paper leaves Gang out of range; here its value stays readable).
pub fn svg_chart(
    title: &str,
    y_label: &str,
    series: &[Series<'_>],
    (y_min, y_max): (f64, f64),
    caption: &str,
) -> String {
    let chart = esched_report::plot::LineChart {
        title: title.to_string(),
        caption: caption.to_string(),
        x_label: "number of tasks".into(),
        y_label: y_label.to_string(),
        y_range: Some((y_min, y_max)),
        series: series
            .iter()
            .map(|(name, pts)| esched_report::plot::Series {
                name: (*name).to_string(),
                points: pts.iter().map(|p| (p.0, p.2)).collect(),
                range: pts.iter().map(|p| (p.1, p.3)).collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    chart.svg().unwrap_or_else(|e| {
        let text = e.to_string().replace('&', "&amp;").replace('<', "&lt;");
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"60\"><text x=\"10\" y=\"30\">{text}</text></svg>\n"
        )
    })
}

/// The plots like Figures 3–6 (two per model: Cmax and ΣωC ratios; one y scale per criterion
/// for all models, as in the paper) and Figure 7 (BiCrit's median run time), as
/// `(file name, SVG)`.
pub fn svg_figures(reports: &[ModelReport], spec: &Spec) -> Vec<(String, String)> {
    let setting = format!(
        "{} processors, {} runs a point, seed {}, makespan algorithm {}; the line joins the means, \
         the bar spans the runs' minimum to maximum; a value beyond the axis is drawn at its edge \
         with its value. esim moldable-experiments",
        spec.m, spec.runs, spec.seed, spec.params.makespan
    );
    let mut out = Vec::new();
    for (crit, pick, label) in [
        ("cmax", 0usize, "Cmax / lower bound"),
        ("minsum", 1, "sum wC / lower bound"),
    ] {
        // One scale per criterion for all models (the paper: "the same scale is represented
        // for identical criterion"), from 1 to BiCrit's largest ratio plus one: the baselines
        // that go beyond (Gang nearly always, as in the paper) are drawn on the frame's top edge.
        let top = reports
            .iter()
            .flat_map(|r| r.points.iter())
            .map(|p| {
                if pick == 0 {
                    p.cmax[0].max
                } else {
                    p.minsum[0].max
                }
            })
            .fold(1.0, f64::max);
        let y_max = ((top + 1.0) * 2.0).ceil() / 2.0;
        for r in reports {
            let series: Vec<Series<'_>> = ALGORITHMS
                .iter()
                .enumerate()
                .map(|(a, name)| {
                    let pts = r
                        .points
                        .iter()
                        .map(|p| {
                            let x = if pick == 0 { p.cmax[a] } else { p.minsum[a] };
                            (p.n as f64, x.min, x.avg, x.max)
                        })
                        .collect();
                    (*name, pts)
                })
                .collect();
            let title = format!(
                "Figure {}: {} parallel tasks, {}",
                r.figure,
                r.model,
                if pick == 0 { "Cmax" } else { "sum wC" }
            );
            out.push((
                format!("fig{}-{}-{}.svg", r.figure, r.model, crit),
                svg_chart(&title, label, &series, (1.0, y_max), &setting),
            ));
        }
    }
    let series: Vec<Series<'_>> = reports
        .iter()
        .map(|r| {
            (
                r.model,
                r.points
                    .iter()
                    .map(|p| {
                        let med = p.bicrit_median_s * 1e3;
                        (p.n as f64, med, med, p.bicrit_max_s * 1e3)
                    })
                    .collect(),
            )
        })
        .collect();
    let top = series
        .iter()
        .flat_map(|(_, v)| v.iter().map(|p| p.3))
        .fold(0.0, f64::max);
    out.push((
        "fig7-runtime.svg".to_string(),
        svg_chart(
            "Figure 7: BiCrit's run time (median, bar to max)",
            "milliseconds",
            &series,
            (0.0, (top * 1.1).max(0.001)),
            &format!(
                "{} processors, {} runs a point: the line joins the medians, the bar spans \
                 median to maximum. esim moldable-experiments",
                spec.m, spec.runs
            ),
        ),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generators_give_monotonic_tasks_of_the_stated_kind() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for model in Model::ALL {
            let i = generate(model, 30, 200, &mut rng);
            assert_eq!(i.n(), 30);
            for t in i.tasks() {
                assert!((1.0..=10.0).contains(&t.w));
            }
        }
        // Highly parallel tasks speed up far more than weakly parallel ones on 200 procs.
        let speedup = |model| {
            let i = generate(model, 200, 200, &mut ChaCha8Rng::seed_from_u64(3));
            let s: f64 = i.tasks().iter().map(|t| t.p[0] / t.p[199]).sum();
            s / 200.0
        };
        let (hi, lo) = (speedup(Model::Highly), speedup(Model::Weakly));
        assert!(hi > 20.0 && lo < 3.0, "highly {hi}, weakly {lo}");
    }

    #[test]
    fn bicrit_returns_the_batch_schedule_when_compaction_is_worse() {
        // Weakly parallel tasks (§4.1, Figure 3): Graham's list lets narrow tasks of later
        // batches pass a wide one, and the compaction can end later than the batch schedule.
        // The schedule returned must then be the batch schedule, and never worse than it.
        let mut worse = 0;
        for seed in 0..4 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let inst = generate(Model::Weakly, 50, 200, &mut rng);
            let run = bicrit(&inst, BiCritParams::default());
            let (bc, bw) = (run.batch.cmax(&inst), run.batch.sum_wc(&inst));
            let (c, w) = (run.schedule.cmax(&inst), run.schedule.sum_wc(&inst));
            assert!(
                c <= bc * (1.0 + 1e-9) && w <= bw * (1.0 + 1e-9),
                "seed {seed}"
            );
            if run.kept == Kept::Batch {
                assert_eq!(run.schedule, run.batch, "seed {seed}");
            }
            // The best compaction by ΣωC (what BiCrit returned without the rule) ends later:
            // something else is returned, the batch schedule or a compaction in another order.
            if run.compacted.cmax(&inst) > bc * (1.0 + 1e-9) {
                worse += 1;
                assert_ne!(run.schedule, run.compacted, "seed {seed}");
            }
        }
        assert!(worse > 0, "no instance where compaction ends later");
    }

    #[test]
    fn downey_is_one_at_one_processor_and_capped_by_a() {
        for (a, s) in [
            (1.0, 0.5),
            (10.0, 0.0),
            (10.0, 1.0),
            (10.0, 2.0),
            (50.0, 1.5),
        ] {
            assert!((downey(1.0, a, s) - 1.0).abs() < 1e-12);
            assert!(downey(1000.0, a, s) <= a + 1e-9);
        }
        // σ = 0: linear up to A.
        assert!((downey(5.0, 10.0, 0.0) - 5.0).abs() < 1e-12);
    }

    #[test]
    fn small_experiment_runs_and_averages_as_sums_over_sums() {
        let spec = Spec {
            m: 8,
            ns: vec![5],
            runs: 2,
            models: vec![Model::Mixed],
            seed: 1,
            params: BiCritParams::default(),
        };
        let r = run_experiment(&spec, |_, _| {}).unwrap();
        let p = &r[0].points[0];
        for x in p.cmax.iter().chain(&p.minsum) {
            assert!(x.min <= x.avg + 1e-12 && x.avg <= x.max + 1e-12 && x.min >= 1.0 - 1e-9);
        }
        let t = format_tables(&r, &spec);
        assert!(t.contains("Figure 5") && t.contains("List-SAF"), "{t}");
        let figs = svg_figures(&r, &spec);
        assert_eq!(figs.len(), 3);
        for (name, svg) in &figs {
            let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{name}: {e}"));
            let texts: String = doc.descendants().filter_map(|n| n.text()).collect();
            // The figure's setting is in its caption; every algorithm is in the legend.
            assert!(texts.contains("8 processors, 2 runs a point"), "{name}");
            if !name.starts_with("fig7") {
                for a in ALGORITHMS {
                    assert!(texts.contains(a), "{name}: {a}");
                }
            }
        }
    }

    #[test]
    fn a_value_beyond_the_axis_is_marked_with_its_value() {
        let series: Vec<Series<'_>> = vec![
            ("BiCrit", vec![(10.0, 1.2, 1.5, 1.9)]),
            ("Gang", vec![(10.0, 40.0, 58.7, 70.0)]),
        ];
        let svg = svg_chart("t", "ratio", &series, (1.0, 4.0), "setting");
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
        assert!(texts.iter().any(|t| t.contains("↑ 58.7")), "{texts:?}");
    }
}
