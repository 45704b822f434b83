//! Lower bounds of Dutot & Eyraud §3.3: the makespan bound of the dual approximation and the
//! LP relaxation for ΣωC, as printed and corrected.
//!
//! **The LP as printed is not a lower bound.** Its intervals I_j = (t_j, t_{j+1}], j = 0..K,
//! cover only (t_0, t_{K+1}], and a task completing in I_j is charged ω_i·t_j. But
//! t_0 = C*max/2^K lies in [t_min, 2·t_min), so a short task can complete before t_0 and is
//! then charged more than its completion time; and C*max is a *makespan* estimate, so a
//! ΣωC-optimal schedule may end tasks after t_{K+1} = 2·C*max, where no variable describes
//! them and the area constraint of I_K may cut the schedule off. The smallest counterexample
//! (unit test `printed_lp_exceeds_the_optimum_on_two_tasks`): one processor, tasks
//! (ω = 4, p = 1) and (ω = 1, p = 2). λ* = 3, t_min = 1, K = 1, t = (1.5, 3, 6). The optimum
//! runs the heavy task first: ΣωC = 4·1 + 1·3 = 7; the LP must put each task in an interval
//! charged at least t_0 = 1.5, so its value is ≥ 4·1.5 + 1·1.5 = 7.5 > 7.
//!
//! **Corrected LP** (used as `minsum_lb`): the intervals are (0, t_0], (t_0, t_1], …,
//! (t_K, t_{K+1}], (t_{K+1}, ∞), which partition every possible completion time; a task
//! completing in (lo, hi] is charged ω_i·max(lo, p_i(m)) (no task completes before its
//! shortest run time); S_{i,j} is the smallest area k·p_i(k) with p_i(k) ≤ hi (for the last,
//! unbounded interval: the smallest area at all), and the area constraint is written for every
//! finite hi. Every schedule gives a feasible 0/1 solution of cost ≤ its ΣωC (the paper's own
//! argument, now with no completion time left out), so the relaxation's optimum is a lower
//! bound.
//!
//! The LP is solved with `good_lp` on its `microlp` backend: a pure-Rust simplex (no C/C++
//! solver to build or install), and a simplex returns an optimal vertex, whose value is exact
//! up to rounding — an interior-point solver (clarabel) would stop at a tolerance, and a value
//! slightly above the optimum is not a lower bound.

use good_lp::{microlp, variable, Expression, ProblemVariables, Solution, SolverModel};

use esched_bicriteria::bicrit::boundaries;
use esched_bicriteria::instance::Instance;
use esched_bicriteria::makespan::Makespan;

/// An LP that could not be solved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("LP lower bound: {0}")]
pub struct LpError(String);

/// The lower bounds of one instance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    /// λ* of the chosen dual approximation: a makespan lower bound.
    pub cmax_lb: f64,
    /// The corrected LP relaxation: a lower bound on ΣωC.
    pub minsum_lb: f64,
    /// The LP relaxation exactly as printed in §3.3 (not always a lower bound).
    pub minsum_lb_paper: f64,
}

/// Which formulation of the ΣωC relaxation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LpForm {
    /// §3.3 as printed: intervals (t_j, t_{j+1}], j = 0..K, charged ω·t_j.
    Paper,
    /// Intervals covering (0, ∞), charged ω·max(lo, p(m)).
    Corrected,
}

/// All bounds of `inst`, with the t_j built from C*max = λ* of `makespan` as in §3.2.
pub fn bounds(inst: &Instance, makespan: Makespan) -> Result<Bounds, LpError> {
    let cmax_lb = makespan.lambda_star(inst);
    Ok(Bounds {
        cmax_lb,
        minsum_lb: minsum_lp(inst, cmax_lb, LpForm::Corrected)?,
        minsum_lb_paper: minsum_lp(inst, cmax_lb, LpForm::Paper)?,
    })
}

/// The smallest area of task `i` among allotments that run within `hi`; `None` if none does.
fn min_area(inst: &Instance, i: usize, hi: f64) -> Option<f64> {
    let k0 = inst.min_allot(i, hi)?;
    Some(
        (k0..=inst.m())
            .map(|k| k as f64 * inst.p(i, k))
            .fold(f64::INFINITY, f64::min),
    )
}

/// The ΣωC relaxation of §3.3 with the t_j of C*max = `cstar`, solved.
pub fn minsum_lp(inst: &Instance, cstar: f64, form: LpForm) -> Result<f64, LpError> {
    if inst.n() == 0 {
        return Ok(0.0);
    }
    let b = boundaries(cstar, inst.t_min());
    // (lo, hi) of every interval; hi = ∞ for the last corrected one.
    let mut intervals: Vec<(f64, f64)> = Vec::new();
    if form == LpForm::Corrected {
        intervals.push((0.0, b.t[0]));
    }
    for j in 0..=b.k {
        intervals.push((b.t[j], b.t[j + 1]));
    }
    if form == LpForm::Corrected {
        intervals.push((b.t[b.k + 1], f64::INFINITY));
    }
    let m = inst.m() as f64;
    let mut vars = ProblemVariables::new();
    let mut objective = Expression::from(0.0);
    // area[j]: Σ_i S_{i,j} x_{i,j} of interval j; done[i]: Σ_j x_{i,j}.
    let mut area: Vec<Expression> = vec![Expression::from(0.0); intervals.len()];
    let mut done: Vec<Expression> = vec![Expression::from(0.0); inst.n()];
    for (i, done_i) in done.iter_mut().enumerate() {
        let pm = inst.p(i, inst.m());
        for (j, &(lo, hi)) in intervals.iter().enumerate() {
            // S_{i,j} = +∞ (the task cannot end by hi): x_{i,j} is 0, left out.
            let Some(s) = min_area(inst, i, hi) else {
                continue;
            };
            let x = vars.add(variable().min(0.0).max(1.0));
            let cost = match form {
                LpForm::Paper => lo,
                LpForm::Corrected => lo.max(pm),
            };
            objective.add_mul(inst.w(i) * cost, x);
            area[j].add_mul(s, x);
            done_i.add_mul(1.0, x);
        }
    }
    let mut model = vars.minimise(objective.clone()).using(microlp);
    for d in done {
        model.add_constraint(d.geq(1.0));
    }
    let mut cum = Expression::from(0.0);
    for (a, &(_, hi)) in area.into_iter().zip(&intervals) {
        cum += a;
        if hi.is_finite() {
            model.add_constraint(cum.clone().leq(m * hi));
        }
    }
    let sol = model.solve().map_err(|e| LpError(e.to_string()))?;
    Ok(sol.eval(&objective))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moldable::testkit::weighted as inst;

    #[test]
    fn printed_lp_exceeds_the_optimum_on_two_tasks() {
        let i = inst(1, &[(4.0, &[1.0]), (1.0, &[2.0])]);
        // The optimum by hand (two orders on one processor): heavy first, 4·1 + 1·3 = 7.
        let opt: f64 = 7.0;
        let b = bounds(&i, Makespan::Canonical).unwrap();
        assert_eq!(b.cmax_lb, 3.0);
        assert!(
            (b.minsum_lb_paper - 7.5).abs() < 1e-9,
            "{}",
            b.minsum_lb_paper
        );
        assert!(
            b.minsum_lb_paper > opt,
            "the printed LP is above the optimum"
        );
        assert!(b.minsum_lb <= opt + 1e-9, "{}", b.minsum_lb);
    }

    #[test]
    fn one_task_bound_is_tight() {
        // One task alone: ΣωC = ω·p(m); the corrected LP charges exactly that.
        let i = inst(2, &[(3.0, &[4.0, 2.5])]);
        let b = bounds(&i, Makespan::Canonical).unwrap();
        assert_eq!(b.cmax_lb, 2.5);
        assert!((b.minsum_lb - 7.5).abs() < 1e-9, "{}", b.minsum_lb);
    }
}
