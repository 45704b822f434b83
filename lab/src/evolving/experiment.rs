//! Running the variants of the papers' experiment and computing the metrics of Tables 1–2.
//!
//! Definitions (Euro-Par 2011 §5.1; RR-7205 §5.1 names them differently, in brackets). For one
//! test, with `U` the useful area (Σ over applications and requested steps of nodes × duration),
//! `A` the allocated area (the same over the scheduled steps, expansions included; for the rigid
//! baseline, max nodes × sum of durations per application) and `M` the makespan:
//!
//! - **Waste** (%) = (A − U) / U. The paper says "percent of total resources"; its rigid row
//!   (max 116 %) rules out the machine's area, and the useful area reproduces both its rigid
//!   waste and its noX utilisation (1 / 1.70 = .59 against .58).
//! - **Utilisation** [Reservation] (relative) = A / A_baseline.
//! - **Eff. Util.** [Utilisation] (%) = U / (nodes × M).
//! - **Makespan** (relative) = M / M_baseline.
//! - **Sch. Time**: the wall time of the one `plan` call that schedules the test; the call is
//!   repeated and each test counts with its median (see [`schedule_test`]).
//! - **Avg. ACT** [JCT] (relative): mean completion time / the baseline's; everything is
//!   submitted at 0, so completion time = end.
//! - **Avg. AWT** [JWT] (relative): mean start time / the baseline's.
//! - **Num. expanded** [Stretches] (%): applications with a longer scheduled than requested
//!   duration, per test.
//! - **App expansion** [Job Stretch] (%), per application: (scheduled − requested duration) /
//!   requested duration.
//! - **Per-app waste** (%), per application: wasted area / useful area. The paper says "of
//!   resources allocated to the application", but its rigid maximum of 681 % cannot be a share
//!   of the allocation; the useful area can.
//!
//! Per-test metrics are summarised over tests, per-application ones over every application of
//! every test, as min / avg / max (the papers do not say; their maxima of 884 % and 1354 % only
//! make sense per application).

use sched_abi::{Failure, Linked, PolicyHost};
use sched_core::request::{max_nodes, total_duration};
use sched_core::{
    JobId, Pending, Placement, Plan, Policy, Pool, PoolId, Request, Shape, Snapshot, Step, Time,
};
use serde::Serialize;

use super::workload::Test;

/// One scheduler of the comparison.
pub struct Variant {
    /// Its row name (`rigid`, `noX`, `2X+c`…).
    pub name: String,
    /// The policy, under sched-abi's containment: its validator is the one every plan passes.
    pub policy: PolicyHost,
    /// Whether applications are submitted as rigid jobs (max nodes × sum of durations), the
    /// papers' baseline, instead of evolving ones.
    pub rigid: bool,
}

impl Variant {
    /// The variant `name` of a policy linked into the process.
    pub fn linked(name: impl Into<String>, policy: Box<dyn Policy + Send>, rigid: bool) -> Self {
        let name = name.into();
        Variant {
            policy: PolicyHost::boxed(Box::new(Linked::new(name.clone(), policy))),
            name,
            rigid,
        }
    }
}

/// Where and how one application was scheduled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AppSchedule {
    /// Start of the first step, ms.
    pub start: Time,
    /// The scheduled steps, without the leading delay (one step for a rigid job).
    pub steps: Vec<Step>,
}

impl AppSchedule {
    /// End of the last step.
    pub fn end(&self) -> Time {
        self.start + total_duration(&self.steps)
    }
}

/// One test scheduled by one variant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestSchedule {
    /// The applications, in input order.
    pub apps: Vec<AppSchedule>,
    /// Wall time of the `plan` call: the median of the timed runs.
    pub plan_time: std::time::Duration,
}

/// Why an experiment cannot go on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExperimentError {
    /// The policy's plan failed validation.
    #[error("{variant}: test {test}: invalid plan: {error}")]
    InvalidPlan {
        /// Variant.
        variant: String,
        /// Test index.
        test: usize,
        /// The validator's message.
        error: String,
    },
    /// An application was not placed (or was rejected).
    #[error("{variant}: test {test}: application {app} not placed{}", .reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default())]
    NotPlaced {
        /// Variant.
        variant: String,
        /// Test index.
        test: usize,
        /// Application index.
        app: usize,
        /// The policy's reason, if it rejected it.
        reason: Option<String>,
    },
    /// A placement whose shape is neither rigid nor evolving.
    #[error("{variant}: test {test}: application {app} placed with an unexpected shape")]
    BadShape {
        /// Variant.
        variant: String,
        /// Test index.
        test: usize,
        /// Application index.
        app: usize,
    },
    /// No variant, or an application wider than the machine.
    #[error("{0}")]
    Setup(String),
}

/// Schedules the applications `apps` (all submitted at 0, in order) on `nnodes` nodes with one
/// `plan` call at now = 0, validates the plan and returns each application's schedule.
///
/// The plan is computed `timing_runs` times (at least once) and the median wall time is kept as
/// the schedule time (for an even count, the mean of the middle two): a typical call, neither
/// the luckiest (the minimum, which hides the cost of a cold cache or a first allocation) nor
/// the one a preemption on the shared machine made 100× slower (which a mean would absorb).
/// Every run must give the same plan (policies are deterministic).
pub fn schedule_test(
    variant: &mut Variant,
    test: usize,
    apps: &[Vec<Step>],
    nnodes: u32,
    timing_runs: usize,
) -> Result<TestSchedule, ExperimentError> {
    let pools = [Pool {
        id: PoolId(0),
        name: "cluster".into(),
        nodes: nnodes,
    }];
    let pending: Vec<Pending> = apps
        .iter()
        .enumerate()
        .map(|(i, steps)| {
            let evolving = Request::evolving(steps.clone());
            let request = if variant.rigid {
                Request::rigid(max_nodes(steps), total_duration(steps))
            } else {
                evolving
            };
            Pending {
                wants_view: false,
                claimed: Default::default(),
                id: JobId(i as u64),
                user: 0,
                submit: 0,
                earliest_start: 0,
                priority: 0,
                request,
            }
        })
        .collect();
    let snap = Snapshot {
        now: 0,
        pools: &pools,
        running: &[],
        pending: &pending,
    };
    // Each call goes through the host, which validates it; the time kept is the policy's own
    // (the host's account of it), without the validator's.
    let mut times = Vec::with_capacity(timing_runs.max(1));
    let mut plan: Option<Plan> = None;
    for _ in 0..timing_runs.max(1) {
        let before = variant.policy.timing().policy;
        let outcome = variant.policy.call(&snap);
        let invalid = |error: String| ExperimentError::InvalidPlan {
            variant: variant.name.clone(),
            test,
            error,
        };
        match outcome.verdict {
            Ok(()) => {}
            Err(Failure::Refused(e)) => return Err(invalid(e.to_string())),
            Err(Failure::Failed(e)) => return Err(invalid(e.to_string())),
            Err(f @ Failure::Abandoned { .. }) => return Err(invalid(format!("{f:?}"))),
        }
        match &plan {
            None => plan = Some(outcome.plan.clone()),
            Some(first) if first != outcome.plan => {
                return Err(invalid("two plans of the same snapshot differ".into()));
            }
            Some(_) => {}
        }
        times.push(variant.policy.timing().policy.saturating_sub(before));
    }
    let plan_time = median(&mut times);
    let Some(plan) = plan else {
        return Err(ExperimentError::Setup("no plan call".into()));
    };
    let mut by_job: Vec<Option<&Placement>> = vec![None; apps.len()];
    for p in &plan.placements {
        if let Some(slot) = by_job.get_mut(p.job.0 as usize) {
            *slot = Some(p);
        }
    }
    let mut out = Vec::with_capacity(apps.len());
    for (i, p) in by_job.into_iter().enumerate() {
        let Some(p) = p else {
            let reason = plan
                .rejects
                .iter()
                .find(|r| r.job.0 as usize == i)
                .map(|r| r.reason.to_string());
            return Err(ExperimentError::NotPlaced {
                variant: variant.name.clone(),
                test,
                app: i,
                reason,
            });
        };
        let steps = match &p.shape {
            Shape::Evolving { steps, .. } => steps.to_vec(),
            Shape::Rigid {
                nodes, walltime, ..
            } => vec![Step::new(*walltime, *nodes)],
            _ => {
                return Err(ExperimentError::BadShape {
                    variant: variant.name.clone(),
                    test,
                    app: i,
                })
            }
        };
        out.push(AppSchedule {
            start: p.start,
            steps,
        });
    }
    Ok(TestSchedule {
        apps: out,
        plan_time,
    })
}

/// The median of a non-empty sample (the mean of the middle two for an even size); zero for
/// an empty one.
fn median(times: &mut [std::time::Duration]) -> std::time::Duration {
    times.sort_unstable();
    match times.len() {
        0 => std::time::Duration::ZERO,
        n if n % 2 == 1 => times[n / 2],
        n => (times[n / 2 - 1] + times[n / 2]) / 2,
    }
}

/// Minimum, mean and maximum of a sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct MinAvgMax {
    /// Smallest value.
    pub min: f64,
    /// Arithmetic mean.
    pub avg: f64,
    /// Largest value.
    pub max: f64,
    /// Sample size.
    pub count: usize,
}

impl MinAvgMax {
    /// Of `values`; all zero for an empty sample.
    pub fn of(values: &[f64]) -> MinAvgMax {
        if values.is_empty() {
            return MinAvgMax::default();
        }
        MinAvgMax {
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            avg: values.iter().sum::<f64>() / values.len() as f64,
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            count: values.len(),
        }
    }
}

/// One row of both tables.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// Variant name.
    pub name: String,
    /// Table 1: waste, % of the useful area.
    pub waste_pct: MinAvgMax,
    /// Table 1: allocated area relative to the baseline.
    pub utilisation_rel: MinAvgMax,
    /// Table 1: effective utilisation, % of nodes × makespan.
    pub eff_util_pct: MinAvgMax,
    /// Table 1: makespan relative to the baseline.
    pub makespan_rel: MinAvgMax,
    /// Table 1: schedule time per test, µs: over the tests, of each test's median plan time.
    pub sched_time_us: MinAvgMax,
    /// Table 2: mean completion time relative to the baseline.
    pub act_rel: MinAvgMax,
    /// Table 2: mean waiting time relative to the baseline.
    pub awt_rel: MinAvgMax,
    /// Table 2: expanded applications, % of a test's.
    pub expanded_pct: MinAvgMax,
    /// Table 2: per-application expansion, % of its requested duration.
    pub app_expansion_pct: MinAvgMax,
    /// Table 2: per-application waste, % of its useful area.
    pub app_waste_pct: MinAvgMax,
}

/// The whole experiment.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// Nodes of the cluster.
    pub nodes: u32,
    /// Number of tests.
    pub tests: usize,
    /// Timed `plan` calls per test; each test's schedule time is their median (0: not measured,
    /// as for the papers' own figures).
    pub timing_runs: usize,
    /// One row per variant, the baseline first.
    pub rows: Vec<Row>,
}

/// What one test scheduled by one variant gives, before comparison with the baseline.
struct TestFigures {
    allocated: f64,
    useful: f64,
    makespan: f64,
    mean_end: f64,
    mean_start: f64,
    expanded: usize,
    app_expansion: Vec<f64>,
    app_waste: Vec<f64>,
    time_us: f64,
}

fn area(steps: &[Step]) -> f64 {
    steps
        .iter()
        .map(|s| f64::from(s.nodes) * s.duration as f64)
        .sum()
}

fn figures(requested: &[Vec<Step>], s: &TestSchedule) -> TestFigures {
    let n = requested.len().max(1) as f64;
    let mut f = TestFigures {
        allocated: 0.0,
        useful: 0.0,
        makespan: 0.0,
        mean_end: 0.0,
        mean_start: 0.0,
        expanded: 0,
        app_expansion: Vec::with_capacity(requested.len()),
        app_waste: Vec::with_capacity(requested.len()),
        time_us: s.plan_time.as_secs_f64() * 1e6,
    };
    for (req, app) in requested.iter().zip(&s.apps) {
        let (alloc, useful) = (area(&app.steps), area(req));
        let (dur, req_dur) = (
            total_duration(&app.steps) as f64,
            total_duration(req) as f64,
        );
        f.allocated += alloc;
        f.useful += useful;
        f.makespan = f.makespan.max(app.end() as f64);
        f.mean_end += app.end() as f64 / n;
        f.mean_start += app.start as f64 / n;
        if dur > req_dur {
            f.expanded += 1;
        }
        f.app_expansion.push(pct(dur - req_dur, req_dur));
        f.app_waste.push(pct(alloc - useful, useful));
    }
    f
}

fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}

/// `a / b`, with 0 / 0 = 1 (a baseline where every application starts at 0 and a variant that
/// does the same are alike).
fn rel(a: f64, b: f64) -> Option<f64> {
    if b > 0.0 {
        Some(a / b)
    } else if a == 0.0 {
        Some(1.0)
    } else {
        None
    }
}

/// Runs every variant on every test on `nnodes` nodes; relative metrics are relative to the
/// first variant (the papers' rigid baseline). Schedule times are the median of `timing_runs`
/// plans per test (see [`schedule_test`]).
pub fn run_experiment(
    tests: &[Test],
    nnodes: u32,
    variants: &mut [Variant],
    timing_runs: usize,
) -> Result<Report, ExperimentError> {
    if variants.is_empty() {
        return Err(ExperimentError::Setup("no variant to run".into()));
    }
    let widest = tests
        .iter()
        .flat_map(|t| t.apps.iter().flatten())
        .map(|s| s.nodes)
        .max()
        .unwrap_or(0);
    if widest > nnodes {
        return Err(ExperimentError::Setup(format!(
            "a step asks for {widest} nodes, the cluster has {nnodes}"
        )));
    }
    // figures[v][t]
    let mut all: Vec<Vec<TestFigures>> = (0..variants.len())
        .map(|_| Vec::with_capacity(tests.len()))
        .collect();
    for (ti, test) in tests.iter().enumerate() {
        for (vi, v) in variants.iter_mut().enumerate() {
            let s = schedule_test(v, ti, &test.apps, nnodes, timing_runs)?;
            all[vi].push(figures(&test.apps, &s));
        }
    }
    let base = &all[0];
    let rows = variants
        .iter()
        .zip(&all)
        .map(|(v, figs)| {
            let per_test = |f: &dyn Fn(&TestFigures, &TestFigures) -> Option<f64>| -> MinAvgMax {
                let vals: Vec<f64> = figs.iter().zip(base).filter_map(|(x, b)| f(x, b)).collect();
                MinAvgMax::of(&vals)
            };
            let per_app = |f: &dyn Fn(&TestFigures) -> &Vec<f64>| -> MinAvgMax {
                let vals: Vec<f64> = figs.iter().flat_map(|x| f(x).iter().copied()).collect();
                MinAvgMax::of(&vals)
            };
            Row {
                name: v.name.clone(),
                waste_pct: per_test(&|x, _| Some(pct(x.allocated - x.useful, x.useful))),
                utilisation_rel: per_test(&|x, b| rel(x.allocated, b.allocated)),
                eff_util_pct: per_test(&|x, _| Some(pct(x.useful, f64::from(nnodes) * x.makespan))),
                makespan_rel: per_test(&|x, b| rel(x.makespan, b.makespan)),
                sched_time_us: per_test(&|x, _| Some(x.time_us)),
                act_rel: per_test(&|x, b| rel(x.mean_end, b.mean_end)),
                awt_rel: per_test(&|x, b| rel(x.mean_start, b.mean_start)),
                expanded_pct: per_test(&|x, _| {
                    Some(pct(x.expanded as f64, x.app_expansion.len() as f64))
                }),
                app_expansion_pct: per_app(&|x| &x.app_expansion),
                app_waste_pct: per_app(&|x| &x.app_waste),
            }
        })
        .collect();
    Ok(Report {
        nodes: nnodes,
        tests: tests.len(),
        timing_runs: timing_runs.max(1),
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use esched_evolving::{EvolvingPolicy, ExpandLimit};
    use sched_core::time::SECOND;

    fn variants() -> Vec<Variant> {
        let v = |name: &str, limit, rigid| {
            Variant::linked(name, Box::new(EvolvingPolicy::new(limit, false)), rigid)
        };
        vec![
            v("rigid", ExpandLimit::NONE, true),
            v("noX", ExpandLimit::NONE, false),
        ]
    }

    #[test]
    fn hand_checked_two_apps() {
        // 10 nodes. A = 10 s × 5 then 10 s × 10; B = 10 s × 5.
        // rigid: A = 10 × 20 s on [0, 20), B on [20, 30). noX: A as asked, B beside A's first
        // step on [0, 10).
        let s = |d: u64, n| Step::new(d * SECOND, n);
        let test = Test {
            apps: vec![vec![s(10, 5), s(10, 10)], vec![s(10, 5)]],
        };
        let r = run_experiment(&[test], 10, &mut variants(), 1).unwrap();
        let (rigid, nox) = (&r.rows[0], &r.rows[1]);
        assert_eq!(rigid.waste_pct.avg, 25.0); // (250 − 200) / 200 node·s
        assert_eq!(rigid.eff_util_pct.avg, 100.0 * 200.0 / 300.0);
        assert_eq!(rigid.utilisation_rel.avg, 1.0);
        assert_eq!(
            (rigid.app_waste_pct.min, rigid.app_waste_pct.max),
            (0.0, 100.0 * 50.0 / 150.0)
        );
        assert_eq!(nox.waste_pct.max, 0.0);
        assert_eq!(nox.eff_util_pct.avg, 100.0);
        assert_eq!(nox.utilisation_rel.avg, 0.8);
        assert_eq!(nox.makespan_rel.avg, 20.0 / 30.0);
        assert_eq!(nox.act_rel.avg, 15.0 / 25.0);
        assert_eq!(nox.awt_rel.avg, 0.0);
        assert_eq!(nox.expanded_pct.max, 0.0);
        assert!(nox.sched_time_us.min > 0.0);
    }

    #[test]
    fn baseline_relative_figures_are_one_and_nox_never_wastes() {
        let tests = crate::evolving::generate(&crate::evolving::WorkloadSpec::PAPER, 20, 3);
        let r = run_experiment(&tests, 100, &mut variants(), 2).unwrap();
        for m in [
            r.rows[0].utilisation_rel,
            r.rows[0].makespan_rel,
            r.rows[0].act_rel,
            r.rows[0].awt_rel,
        ] {
            assert_eq!((m.min, m.max, m.count), (1.0, 1.0, 20));
        }
        assert_eq!(r.rows[1].waste_pct.max, 0.0);
        assert_eq!(r.rows[1].app_expansion_pct.max, 0.0);
        assert!(r.rows.iter().all(|row| row.eff_util_pct.max <= 100.0));
        // The same applications need the same useful area whatever the schedule, so
        // utilisation relative to rigid is 1 / (1 + rigid waste) per test for noX.
        assert!(r.rows[1].utilisation_rel.max < 1.0);
    }

    #[test]
    fn schedule_time_is_the_median_of_the_runs() {
        let ms = std::time::Duration::from_millis;
        assert_eq!(median(&mut [ms(9), ms(1), ms(300)]), ms(9));
        assert_eq!(median(&mut [ms(4), ms(2), ms(100), ms(1)]), ms(3));
        assert_eq!(median(&mut [ms(7)]), ms(7));
        assert_eq!(median(&mut []), ms(0));
        let tests = crate::evolving::generate(&crate::evolving::WorkloadSpec::PAPER, 2, 5);
        let r = run_experiment(&tests, 100, &mut variants(), 0).unwrap();
        assert_eq!(r.timing_runs, 1, "a test is always planned once");
        let text = crate::evolving::format_tables(&r, None);
        assert!(text.contains("one call per test"), "{text}");
    }

    #[test]
    fn too_wide_a_step_is_a_setup_error() {
        let test = Test {
            apps: vec![vec![Step::new(1, 11)]],
        };
        let err = run_experiment(&[test], 10, &mut variants(), 1).unwrap_err();
        assert!(err.to_string().contains("11 nodes"), "{err}");
    }
}
