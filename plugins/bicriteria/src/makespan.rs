//! The dual-approximation makespan algorithm that gives Dutot & Eyraud's C*max (§3.2, first
//! line of the pseudo-code) and the Cmax lower bound (§3.3).
//!
//! The paper uses the 3/2+ε algorithm of Mounié, Rapine & Trystram ([7], [17]); we use the
//! simpler dual approximation with the *canonical allotment* (Turek, Wolf & Yu; Ludwig &
//! Tiwari), because its test is exact and cheap and its guarantee can be proved in a few lines:
//!
//! - for a guess λ, the canonical allotment γ_i(λ) is the smallest k with p_i(k) ≤ λ. In any
//!   schedule of length ≤ λ task i runs on at least γ_i processors, and (monotony) its work is
//!   at least γ_i·p_i(γ_i). So λ is **rejected** (OPT > λ) when some task has p_i(m) > λ or
//!   when W(λ) = Σ γ_i p_i(γ_i) > mλ;
//! - otherwise the tasks on their canonical allotments are list-scheduled (Graham), largest
//!   allotment first. That schedule is at most **3λ** long: while fewer than m/2 processors are
//!   busy every waiting task needs more than m/2, so every task running at a later such instant
//!   was already running at an earlier one, and those instants last at most max p ≤ λ; the other
//!   instants have ≥ m/2 busy, so they last at most 2W/m ≤ 2λ. When every allotment is at most
//!   (m+1)/2 the bound is 2λ (the last task T, on k procs, waited while ≥ m−k+1 were busy:
//!   Cmax ≤ (W − k p_T)/(m−k+1) + p_T ≤ (2 − 1/(m−k+1))λ).
//!
//! λ is searched by bisection over the reals (60 halvings of [max p_i(m), Σ p_i(m)])
//! and then snapped to the exact smallest accepted λ: W is constant between two consecutive run
//! times of the tasks, so the smallest accepted λ is max(b, W(b)/m) for the largest run time b
//! not above the found value. λ* is a lower bound on the optimal makespan (every smaller λ is
//! rejected by necessary conditions) and is the C*max the batches are built from.

use crate::instance::Instance;
use crate::mrt;
use crate::schedule::{list_to_schedule, rigid_list, Schedule};

/// Which dual-approximation makespan algorithm gives C*max, the Cmax lower bound and the
/// allotment of the list baselines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Makespan {
    /// Mounié, Rapine & Trystram's 3/2 + ε two-shelf algorithm ([`crate::mrt`]): the one
    /// Dutot & Eyraud name (§3.2, "[7]").
    #[default]
    Mrt,
    /// The canonical-allotment dual test and its list schedule (this module): a weaker test,
    /// so a smaller λ*, at most 3λ*.
    Canonical,
}

impl std::str::FromStr for Makespan {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Makespan::parse(s.trim())
            .ok_or_else(|| format!("unknown makespan algorithm `{s}` (mrt, canonical)"))
    }
}

impl std::fmt::Display for Makespan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Makespan {
    /// Both, the default first.
    pub const ALL: [Makespan; 2] = [Makespan::Mrt, Makespan::Canonical];

    /// Its name on command lines and in parameters.
    pub fn name(self) -> &'static str {
        match self {
            Makespan::Mrt => "mrt",
            Makespan::Canonical => "canonical",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Option<Makespan> {
        Makespan::ALL.into_iter().find(|m| m.name() == s)
    }

    /// λ*: its smallest accepted guess, a lower bound on the optimal makespan and Dutot &
    /// Eyraud's C*max.
    pub fn lambda_star(self, inst: &Instance) -> f64 {
        match self {
            Makespan::Mrt => mrt::lambda_star(inst),
            Makespan::Canonical => lambda_star(inst),
        }
    }

    /// The whole algorithm: λ*, the allotment, the list order and the schedule.
    pub fn run(self, inst: &Instance) -> DualApprox {
        match self {
            Makespan::Canonical => dual_approx(inst),
            Makespan::Mrt => {
                let lambda = mrt::lambda_star(inst);
                match mrt::two_shelves(inst, lambda) {
                    Some(ts) => {
                        let s = mrt::shelf_schedule(inst, &ts);
                        DualApprox {
                            lambda,
                            allot: s.allot,
                            order: s.order,
                            schedule: s.schedule,
                            fallback: s.fallback,
                        }
                    }
                    // λ* is accepted by construction; should rounding say otherwise, the
                    // canonical algorithm's allotment and schedule with the MRT bound.
                    None => DualApprox {
                        lambda,
                        fallback: true,
                        ..dual_approx(inst)
                    },
                }
            }
        }
    }
}

/// The outcome of the dual approximation.
#[derive(Clone, Debug, PartialEq)]
pub struct DualApprox {
    /// λ*: the smallest λ the test accepts; a lower bound on the optimal makespan.
    pub lambda: f64,
    /// The canonical allotment γ_i(λ*).
    pub allot: Vec<usize>,
    /// The list order of the makespan algorithm: largest allotment first, then longest first.
    pub order: Vec<usize>,
    /// The algorithm's schedule: for the canonical test the list schedule of that allotment
    /// in that order (at most 3λ*, see the module doc); for MRT the three-shelf schedule (at
    /// most 3λ*/2).
    pub schedule: Schedule,
    /// MRT only: its transformation rules did not fit the last shelf and the schedule is the
    /// list schedule of its order instead (see [`crate::mrt`]).
    pub fallback: bool,
}

/// Canonical allotment and its work for a guess λ, or `None` when a task cannot run in λ.
fn canonical(inst: &Instance, lambda: f64) -> Option<(Vec<usize>, f64)> {
    let mut allot = Vec::with_capacity(inst.n());
    let mut work = 0.0;
    for i in 0..inst.n() {
        let k = inst.min_allot(i, lambda)?;
        work += k as f64 * inst.p(i, k);
        allot.push(k);
    }
    Some((allot, work))
}

/// Whether the dual test accepts λ.
fn accepts(inst: &Instance, lambda: f64) -> bool {
    match canonical(inst, lambda) {
        Some((_, w)) => w <= inst.m() as f64 * lambda,
        None => false,
    }
}

/// The smallest guess in `(lo, hi]` that `accepts`, to within the floats' resolution, by
/// bisection, for a test monotone in the guess that refuses `lo`: `hi` is first doubled until
/// accepted (rounding may refuse the bound a proof says is accepted), then the interval
/// halved. Returns the accepted end.
pub(crate) fn smallest_accepted(lo: f64, hi: f64, accepts: impl Fn(f64) -> bool) -> f64 {
    let mut hi = hi;
    for _ in 0..64 {
        if accepts(hi) {
            break;
        }
        hi *= 2.0;
    }
    let mut lo = lo;
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if accepts(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// λ*: the smallest λ accepted by the dual test (see the module doc). 0 for no task.
pub fn lambda_star(inst: &Instance) -> f64 {
    if inst.n() == 0 {
        return 0.0;
    }
    let m = inst.m() as f64;
    let lo0 = (0..inst.n())
        .map(|i| inst.p(i, inst.m()))
        .fold(0.0, f64::max);
    if accepts(inst, lo0) {
        return lo0;
    }
    // Always accepted: at λ = Σ p_i(m) every γ_i ≤ m, and by monotony γ_i·p_i(γ_i) ≤ m·p_i(m),
    // so W(λ) ≤ mλ. (Uses only p(m): finite even where a task refuses small counts.)
    // Rounding (and the monotony tolerance) can put W a few ulps above mλ there: widen until
    // accepted.
    let hi0: f64 = (0..inst.n()).map(|i| inst.p(i, inst.m())).sum::<f64>() * (1.0 + 1e-6);
    let hi = smallest_accepted(lo0, hi0, |l| accepts(inst, l));
    // Snap: b = the largest run time of any task not above hi is max_i p_i(γ_i(hi)) (γ_i(hi)
    // is the first count at or below hi), and W is constant on [b, hi].
    let Some((allot, work)) = canonical(inst, hi) else {
        return hi;
    };
    let b = allot
        .iter()
        .enumerate()
        .map(|(i, &k)| inst.p(i, k))
        .fold(0.0, f64::max);
    let snapped = b.max(work / m);
    if snapped <= hi {
        snapped
    } else {
        hi
    }
}

/// Runs the dual approximation: λ*, its canonical allotment, and the list schedule.
pub fn dual_approx(inst: &Instance) -> DualApprox {
    let lambda = lambda_star(inst);
    // λ* is accepted, so every task has an allotment; fall back to m processors (always
    // defined) should rounding ever say otherwise.
    let allot: Vec<usize> = (0..inst.n())
        .map(|i| inst.min_allot(i, lambda).unwrap_or(inst.m()))
        .collect();
    let mut order: Vec<usize> = (0..inst.n()).collect();
    order.sort_by(|&a, &b| {
        allot[b]
            .cmp(&allot[a])
            .then(inst.p(b, allot[b]).total_cmp(&inst.p(a, allot[a])))
            .then(a.cmp(&b))
    });
    let schedule = list_to_schedule(inst, &rigid_list(inst, &order, &allot));
    DualApprox {
        lambda,
        allot,
        order,
        schedule,
        fallback: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instance::testkit::unit as inst;

    #[test]
    fn lambda_star_by_hand() {
        // One processor: λ* is the total work.
        assert_eq!(lambda_star(&inst(1, &[&[1.0], &[2.0]])), 3.0);
        // Two perfectly parallel tasks on 2 procs: work 4 / 2 = 2 (and p(2) = 1 ≤ 2).
        assert_eq!(lambda_star(&inst(2, &[&[2.0, 1.0], &[2.0, 1.0]])), 2.0);
        // A task with no speed-up: p(m) = 5 dominates.
        assert_eq!(lambda_star(&inst(2, &[&[5.0, 5.0], &[1.0, 1.0]])), 5.0);
        // Between breakpoints: 3 sequential tasks of 2 s on 2 procs, speed-up 1.5 at k=2
        // (p(2) = 4/3, work 8/3). λ in [4/3, 2): all on 2 → W = 8 > 2λ; λ ≥ 2: all on 1 →
        // W = 6 ≤ 2λ iff λ ≥ 3. So λ* = 3.
        let t: &[f64] = &[2.0, 4.0 / 3.0];
        let l = lambda_star(&inst(2, &[t, t, t]));
        assert!((l - 3.0).abs() < 1e-12, "{l}");
    }

    #[test]
    fn dual_schedule_is_valid_and_within_three_lambda() {
        let i = inst(
            3,
            &[
                &[6.0, 3.0, 2.0],
                &[2.0, 1.5, 1.2],
                &[4.0, 2.5, 2.0],
                &[1.0, 1.0, 1.0],
            ],
        );
        let d = dual_approx(&i);
        d.schedule.validate(&i).unwrap();
        let c = d.schedule.cmax(&i);
        assert!(
            c >= d.lambda - 1e-12 && c <= 3.0 * d.lambda,
            "{c} vs {}",
            d.lambda
        );
    }
}
