//! The fit function: where and how stretched one requested EP goes over a resource EP.
//!
//! [`base_fit`] is Algorithm 2 of Klein & Pérez, Euro-Par 2011 ("EP" below; Algorithm 3 of
//! INRIA RR-7205, "RR" below), written as a loop over an explicit stack of steps instead of
//! recursion so that an EP of thousands of steps cannot overflow the stack. [`compact`] is the
//! post-processing of EP §4.2 / RR §4.3.3. Line numbers in comments refer to EP Algorithm 2.

use sched_core::request::total_duration;
use sched_core::time::NEVER;
use sched_core::{Duration, Profile, Step, Time};

/// How much a step may be expanded: its scheduled duration is at most `limit ×` the requested
/// one (EP §4.2 "expand limit"; 1 = noX, 2 = 2X, ∞ = infX).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExpandLimit(f64);

impl ExpandLimit {
    /// No expansion at all (noX).
    pub const NONE: ExpandLimit = ExpandLimit(1.0);
    /// No bound on expansion (infX).
    pub const INFINITE: ExpandLimit = ExpandLimit(f64::INFINITY);

    /// A limit of `l ≥ 1` (∞ allowed); `None` for NaN or `l < 1`.
    pub fn new(l: f64) -> Option<Self> {
        (l >= 1.0).then_some(ExpandLimit(l))
    }

    /// The factor.
    pub fn factor(self) -> f64 {
        self.0
    }

    /// The longest scheduled duration a step of requested duration `d` may get.
    ///
    /// Interpretation: EP l. 9 computes `ts − l·d` in real numbers; time here is integer ms,
    /// so the bound is `⌊l·d⌋` ms, never below `d` (a float product cannot shorten a step).
    pub fn max_duration(self, d: Duration) -> Duration {
        if self.0.is_infinite() {
            return NEVER;
        }
        let x = (self.0 * d as f64).floor();
        if x >= NEVER as f64 {
            NEVER
        } else {
            (x as Duration).max(d)
        }
    }
}

/// A scheduled EP: the expanded steps and when the first one starts (the leading delay of the
/// papers' `delay(ep_x, t_s)` is `start`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fitted {
    /// When the first step starts.
    pub start: Time,
    /// The scheduled steps, same node counts as requested, durations at least the requested.
    pub steps: Vec<Step>,
}

impl Fitted {
    /// When the last step ends: the application's completion time.
    pub fn end(&self) -> Time {
        self.start.saturating_add(total_duration(&self.steps))
    }

    /// Node-time held but not used for computing: `Σ nᵢ·(d′ᵢ − dᵢ)` against `requested`
    /// (EP §3.2: while a step is expanded the application waits and its nodes are wasted).
    pub fn waste(&self, requested: &[Step]) -> u128 {
        self.steps
            .iter()
            .zip(requested)
            .map(|(s, r)| u128::from(s.nodes) * u128::from(s.duration.saturating_sub(r.duration)))
            .sum()
    }
}

/// How the base fit jumps past a conflict (EP l. 7 and l. 13).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Jump {
    /// As printed: test `nnodes − max(epres, t0, t1) < n` with [`Profile::max_over`], then jump
    /// to `loc(epres, t0, t1)` ([`Profile::loc`]), the end of the last step holding the maximum.
    Loc,
    /// One [`Profile::last_above`] query that both detects the conflict and jumps to the end of
    /// the last step of `[t0, t1)` leaving fewer than `n` nodes free. Any start before that end
    /// still overlaps that step, so the jump is as valid as `loc`'s and never shorter: the
    /// search visits a subset of the same candidates, in the same order, and stops at the same
    /// first solution (the property tests check both agree).
    LastConflict,
    /// As [`Jump::LastConflict`] for l. 12–13, and the loop of l. 6–7 (test, jump, test again
    /// until the step fits) in one [`Profile::earliest_fit`] scan. That loop only ever leaves a
    /// start where the step fits, and every jump passes over starts that all overlap a conflict,
    /// so it stops at the earliest start ≥ t where the step fits: what `earliest_fit` returns,
    /// found in one pass over the profile instead of a query per conflict. The same candidates,
    /// the same solution (the property tests check all three agree). The default: about half
    /// the work of [`Jump::LastConflict`] on the papers' workload (docs/evolving.md).
    #[default]
    Scan,
}

/// The end of the conflict on `[t0, t1)` for `nodes` more nodes above `res` in a pool of
/// `cap`, or `None` when they fit: EP l. 6 (and l. 12) `nnodes − max(epres, t0, t1) < n`, with
/// the jump of l. 7 (and l. 13).
fn conflict(res: &Profile, cap: i64, t0: Time, t1: Time, nodes: u32, jump: Jump) -> Option<Time> {
    // max over an empty interval is 0 (EP §3.1): nothing to ask the profile.
    if t0 >= t1 {
        return None;
    }
    match jump {
        Jump::Loc => (cap - res.max_over(t0, t1) < i64::from(nodes)).then(|| res.loc(t0, t1)),
        // NEVER for a conflict that lasts for ever: base_fit then gives up.
        Jump::LastConflict | Jump::Scan => res
            .last_above(t0, t1, cap - i64::from(nodes))
            .map(|(_, end)| end),
    }
}

/// Base fit (EP Algorithm 2, RR Algorithm 3): the scheduled EP of `req` over `res` in a pool of
/// `nnodes`, starting no earlier than `from`, with the earliest completion time the resource EP
/// allows under the expand limit.
///
/// Returns `None` when the EP can never fit: a step wider than the pool, or one that finds no
/// room before the resource EP stays too high for it for ever (a running job without an end).
/// Otherwise the search terminates, because every jump below strictly increases a start time,
/// and after the last change point of `res` a step either fits or never does.
pub fn base_fit(
    req: &[Step],
    res: &Profile,
    nnodes: u32,
    limit: ExpandLimit,
    from: Time,
) -> Option<Fitted> {
    base_fit_with(req, res, nnodes, limit, from, Jump::default())
}

/// [`base_fit`] with an explicit way of jumping past conflicts.
pub fn base_fit_with(
    req: &[Step],
    res: &Profile,
    nnodes: u32,
    limit: ExpandLimit,
    from: Time,
    jump: Jump,
) -> Option<Fitted> {
    let cap = i64::from(nnodes);
    let widest = req.iter().map(|s| s.nodes).max().unwrap_or(0);
    if i64::from(widest) > cap {
        return None;
    }
    // The papers' resource EP always falls back to 0 (every job ends). Ours may stay high for
    // ever after its last change point (nodes out of service, a pool whose nodes leave at a
    // known time): a step too wide for what is left then fits only before that point, and a
    // jump past a conflict that lasts for ever lands at NEVER, where the step never fits.
    let tail = res.value_at(NEVER - 1);
    let n = req.len();
    if n == 0 {
        return Some(Fitted {
            start: from,
            steps: Vec::new(),
        });
    }
    // The recursion of EP Algorithm 2, one frame per step: `ts[k]` is frame k's local ts. Its
    // input t0 is `from` for the first frame and, for the others, the end of the previous step
    // were it not expanded, `ts[k − 1] + d⁽ᵏ⁻¹⁾`: always derived from the frame below, since a
    // frame is (re)entered only after the one below has just set its ts.
    let t0_of = |ts: &[Time], k: usize| {
        if k == 0 {
            from
        } else {
            ts[k - 1].saturating_add(req[k - 1].duration)
        }
    };
    // The frames of a short EP (the papers' have at most 10 steps) live on the stack: one
    // allocation less per fit, the one left being the result's.
    let mut on_stack = [0; 16];
    let mut on_heap = Vec::new();
    let ts: &mut [Time] = if n <= on_stack.len() {
        &mut on_stack[..n]
    } else {
        on_heap.resize(n, 0);
        &mut on_heap
    };
    ts[0] = from;
    let mut k = 0;
    loop {
        let Step { duration: d, nodes } = req[k];
        let t0 = t0_of(ts, k);
        let outcome = loop {
            // EP l. 6–7: the step does not fit at ts; jump past the conflict (see [`Jump`]): any
            // start before its end still overlaps it (d > 0 here: an empty window never
            // conflicts). With [`Jump::Scan`] the whole loop is one scan.
            if jump == Jump::Scan {
                // None: the step fits nowhere from ts on (the profile stays too high).
                ts[k] = res.earliest_fit(ts[k], d, cap - i64::from(nodes))?;
            } else if let Some(after) =
                conflict(res, cap, ts[k], ts[k].saturating_add(d), nodes, jump)
            {
                ts[k] = after;
                continue;
            }
            // Past the last change point of a profile that stays too high for this step: no
            // later attempt (they only move forward) can place it.
            if ts[k] == NEVER || (tail + i64::from(nodes) > cap && ts[k].saturating_add(d) == NEVER)
            {
                return None;
            }
            let t = ts[k];
            if k > 0 {
                let prev = req[k - 1];
                // t0 − d⁽ᵏ⁻¹⁾ is where the previous step starts in the current attempt.
                let prev_start = t0 - prev.duration;
                let longest = limit.max_duration(prev.duration);
                // EP l. 9–11: placing this step at t would stretch the previous one past
                // l·d⁽ᵏ⁻¹⁾; the previous step may start no earlier than teas = t − l·d⁽ᵏ⁻¹⁾.
                // Interpretation: the test `teas > t0 − d⁽ⁱ⁻¹⁾` is the same as
                // `t − prev_start > ⌊l·d⌋`, written so that nothing underflows.
                if t - prev_start > longest {
                    break Err(t - longest);
                }
                // EP l. 12–13: the previous step would hold its nodes on [t0, t) as well; if they
                // are not free there, it must start after the last peak of that interval.
                // Interpretation: `loc` jumps past the last *maximum*, which may leave another
                // conflicting (non-maximal) step behind it; that is still a valid lower bound, the
                // next attempt simply fails again and jumps further (RR §4.3.2 says the same).
                // The jump is clipped to t, as `loc` is: a zero-duration previous step may start
                // at t and hold nothing, whatever lies after t.
                if let Some(after) = conflict(res, cap, t0, t, prev.nodes, jump) {
                    break Err(after.min(t));
                }
            }
            break Ok(());
        };
        match outcome {
            // EP l. 14: recurse for the next step from the completion of this one.
            Ok(()) if k + 1 < n => {
                ts[k + 1] = ts[k].saturating_add(d);
                k += 1;
            }
            // EP l. 1–2: every step is placed, the recursion unwinds with successes.
            Ok(()) => break,
            // EP l. 15–16: the next step failed; retry this one from the bound it returned.
            // k > 0 here: frame 0 never fails (its l. 8 test is false).
            Err(bound) => {
                k -= 1;
                ts[k] = bound;
            }
        }
    }
    // EP l. 17–20 while unwinding: a middle step lasts until the next one starts; the last one
    // is never expanded (its "next step" is the empty tail at ts + d, l. 2). Interpretation of
    // the typo at EP l. 17 (and RR l. 31), `if i > 0`: i starts at 1, so the test as printed is
    // always true and line 19 would be dead; the text ("the first step is delayed instead of
    // being expanded (line 20)") means `if i > 1`. So the first step keeps its duration and is
    // moved to end where the second starts.
    let mut steps: Vec<Step> = Vec::with_capacity(n);
    for k in 0..n {
        let duration = if k == 0 || k + 1 == n {
            req[k].duration
        } else {
            ts[k + 1] - ts[k]
        };
        steps.push(Step::new(duration, req[k].nodes));
    }
    let start = if n > 1 {
        ts[1] - req[0].duration
    } else {
        ts[0]
    };
    Some(Fitted { start, steps })
}

/// The compacting search (EP §4.2 "Post-processing Optimization", RR §4.3.3): keeps the
/// completion time of `base` and moves every step as late as it can, so that the EP starts as
/// late as possible and the expansion (in time) is smallest. [`compact`] decides whether to use it.
///
/// Interpretation: the papers give no pseudo-code, only "the last step is placed so that it ends
/// at the completion time found by the base algorithm, then the other steps are placed from right
/// to left, similarly to the base algorithm". We run [`base_fit`] itself on the mirror image:
/// time reversed around the completion time `c`, the steps in reverse order. Mirroring maps the
/// constraints onto themselves — a step still holds its nodes from its start until the next step
/// starts, the first and last steps are never expanded, the others at most `l` times — so the
/// earliest mirrored completion is the latest start for completion `c`.
///
/// The search never looks past the mirror of `base.start` (the base EP is a solution there and
/// the search stops at the first one), so only `[base.start, c)` of `res` is mirrored. Should the result not end exactly at `c` or start before
/// `base.start` (impossible while base fit is optimal) the base EP is returned unchanged, as the
/// papers allow ("in the worst case, no compacting occurs").
pub fn compact_latest(
    req: &[Step],
    res: &Profile,
    nnodes: u32,
    limit: ExpandLimit,
    base: &Fitted,
) -> Fitted {
    if req.len() < 3 {
        // One step is never expanded; with two, the first is moved and the last fixed: nothing
        // can move.
        return base.clone();
    }
    if base
        .steps
        .iter()
        .zip(req)
        .all(|(s, r)| s.duration == r.duration)
    {
        // Nothing expanded: every schedule completing at c starts at c − Σd or earlier (steps
        // only ever get longer), and the base EP starts there; the search would return it.
        // Most base fits of the papers' workload are such (Table 2: 22–27 % expanded at most).
        return base.clone();
    }
    let a = base.start;
    let c = base.end();
    let span = c - a;
    // The steps of `res` clipped to [a, c), then added to the mirror last first: mirrored,
    // that is in increasing time, so that each add appends instead of shifting the points
    // already there (a quadratic copy in the flat representation).
    let mut window: Vec<(Time, Time, i64)> = Vec::new();
    let mut points = res.change_points().peekable();
    while let Some((t, v)) = points.next() {
        let next = points.peek().map_or(NEVER, |p| p.0);
        let (x, y) = (t.max(a), next.min(c));
        if x < y && v != 0 {
            window.push((x, y, v));
        }
        if next >= c {
            break;
        }
    }
    let mut mirror = Profile::new();
    for &(x, y, v) in window.iter().rev() {
        mirror.add(c - y, c - x, v);
    }
    let reversed: Vec<Step> = req.iter().rev().copied().collect();
    let Some(m) = base_fit(&reversed, &mirror, nnodes, limit, 0) else {
        return base.clone();
    };
    if m.start != 0 || m.end() > span {
        return base.clone();
    }
    let steps: Vec<Step> = m.steps.into_iter().rev().collect();
    Fitted {
        start: c - total_duration(&steps),
        steps,
    }
}

/// Compacting as used by the policy: the [`compact_latest`] EP when it wastes no more node-time
/// than `base`, otherwise `base` itself.
///
/// Interpretation: the papers compact "in order to reduce resource waste" and warn that the
/// greedy right-to-left placement "might expand steps with high node-count" (EP §4.2); they also
/// say that in the worst case "the same EP is returned". The latest-start EP can indeed waste
/// more than the base fit's: with the same start and completion it may move the expansion from
/// a narrow step to a wider one (the unit test below has one such instance, found by the
/// property tests). Returning the base EP then keeps both promises — same completion, never more
/// waste — at the cost of not always starting as late as possible.
pub fn compact(
    req: &[Step],
    res: &Profile,
    nnodes: u32,
    limit: ExpandLimit,
    base: &Fitted,
) -> Fitted {
    let latest = compact_latest(req, res, nnodes, limit, base);
    if latest.waste(req) <= base.waste(req) {
        latest
    } else {
        base.clone()
    }
}

/// Base fit, then compacting when `compact` is set.
pub fn fit(
    req: &[Step],
    res: &Profile,
    nnodes: u32,
    limit: ExpandLimit,
    compact_after: bool,
    from: Time,
) -> Option<Fitted> {
    let base = base_fit(req, res, nnodes, limit, from)?;
    Some(if compact_after {
        compact(req, res, nnodes, limit, &base)
    } else {
        base
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(v: &[(u64, u32)]) -> Vec<Step> {
        v.iter().map(|&(d, n)| Step::new(d, n)).collect()
    }

    #[test]
    fn empty_profile_places_at_from_without_expansion() {
        let req = steps(&[(500, 5), (3600, 10)]);
        let f = base_fit(&req, &Profile::new(), 10, ExpandLimit::INFINITE, 7).unwrap();
        assert_eq!(
            f,
            Fitted {
                start: 7,
                steps: req
            }
        );
    }

    #[test]
    fn first_step_is_delayed_not_expanded() {
        // 10 nodes; 8 busy on [0, 100). Step 2 (6 nodes) cannot start before 100, step 1
        // (2 nodes) could start at 0 but is moved to end at 100.
        let mut res = Profile::new();
        res.add(0, 100, 8);
        let req = steps(&[(10, 2), (50, 6)]);
        let f = base_fit(&req, &res, 10, ExpandLimit::INFINITE, 0).unwrap();
        assert_eq!(
            f,
            Fitted {
                start: 90,
                steps: req
            }
        );
    }

    #[test]
    fn middle_step_expands_within_limit_only() {
        // Step 3 (6 nodes) cannot start before 100. With l = ∞ the middle step (10 units) waits
        // from 20 to 100; with l = 2 it may last at most 20, so the EP is delayed.
        let mut res = Profile::new();
        res.add(0, 100, 8);
        let req = steps(&[(10, 1), (10, 1), (5, 6)]);
        let inf = base_fit(&req, &res, 10, ExpandLimit::INFINITE, 0).unwrap();
        assert_eq!(
            inf,
            Fitted {
                start: 0,
                steps: steps(&[(10, 1), (90, 1), (5, 6)])
            }
        );
        let two = base_fit(&req, &res, 10, ExpandLimit::new(2.0).unwrap(), 0).unwrap();
        assert_eq!(
            two,
            Fitted {
                start: 70,
                steps: steps(&[(10, 1), (20, 1), (5, 6)])
            }
        );
        let none = base_fit(&req, &res, 10, ExpandLimit::NONE, 0).unwrap();
        assert_eq!(
            none,
            Fitted {
                start: 80,
                steps: req.clone()
            }
        );
        // All three complete at 105: the earliest possible.
        assert!([&inf, &two, &none].iter().all(|f| f.end() == 105));
        // Compacting the infX EP moves the first steps as late as l = ∞ lets them go: same
        // completion, the whole expansion gone.
        let c = compact(&req, &res, 10, ExpandLimit::INFINITE, &inf);
        assert_eq!(
            c,
            Fitted {
                start: 80,
                steps: req
            }
        );
    }

    #[test]
    fn expansion_blocked_by_resources_jumps_past_peak() {
        // Previous step (4 nodes) cannot be held across [20, 40) where 9 of 10 are busy.
        let mut res = Profile::new();
        res.add(20, 40, 7);
        res.add(0, 60, 2);
        let req = steps(&[(10, 1), (10, 4), (10, 8)]);
        let f = base_fit(&req, &res, 10, ExpandLimit::INFINITE, 0).unwrap();
        // Step 3 first fails on [20, 40) (9 busy), so step 2 would wait there with 4 nodes:
        // refused (l. 12–13), step 2 jumps to 40, step 1 is moved to end at 40 (1 + 9 = 10).
        assert_eq!(
            f,
            Fitted {
                start: 30,
                steps: req
            }
        );
        assert_eq!(f.steps[1].nodes, 4);
    }

    #[test]
    fn never_fits_when_too_wide_or_blocked_for_ever() {
        let req = steps(&[(10, 11)]);
        assert_eq!(
            base_fit(&req, &Profile::new(), 10, ExpandLimit::NONE, 0),
            None
        );
        let mut res = Profile::new();
        res.add(5, NEVER, 5);
        assert_eq!(
            base_fit(&steps(&[(10, 6)]), &res, 10, ExpandLimit::NONE, 0),
            None
        );
        assert_eq!(
            base_fit(&steps(&[(10, 5)]), &res, 10, ExpandLimit::NONE, 0).map(|f| f.start),
            Some(0)
        );
    }

    #[test]
    fn limit_rounding_is_floor_and_never_below_request() {
        let l = ExpandLimit::new(1.5).unwrap();
        assert_eq!(l.max_duration(3), 4);
        assert_eq!(ExpandLimit::NONE.max_duration(7), 7);
        assert_eq!(ExpandLimit::INFINITE.max_duration(7), NEVER);
        assert!(ExpandLimit::new(0.5).is_none() && ExpandLimit::new(f64::NAN).is_none());
    }

    #[test]
    fn compacting_never_trades_a_narrow_expansion_for_a_wide_one() {
        // 4 nodes, l = 2: an earlier app holds 1 node on [0, 4), 2 on [4, 7). The last step
        // (3 nodes) must wait until 7. The base fit expands the 1-node step on [5, 7); the latest
        // start for completion 8 is still 0, and the right-to-left search expands the 2-node
        // step on [4, 6) instead: twice the waste.
        let mut res = Profile::new();
        res.add_steps(0, &steps(&[(4, 1), (3, 2)]), 1);
        let req = steps(&[(4, 3), (1, 2), (1, 1), (1, 3)]);
        let l = ExpandLimit::new(2.0).unwrap();
        let base = base_fit(&req, &res, 4, l, 0).unwrap();
        assert_eq!(
            base,
            Fitted {
                start: 0,
                steps: steps(&[(4, 3), (1, 2), (2, 1), (1, 3)])
            }
        );
        let latest = compact_latest(&req, &res, 4, l, &base);
        assert_eq!(
            latest,
            Fitted {
                start: 0,
                steps: steps(&[(4, 3), (2, 2), (1, 1), (1, 3)])
            }
        );
        assert_eq!((base.waste(&req), latest.waste(&req)), (1, 2));
        assert_eq!(compact(&req, &res, 4, l, &base), base);
    }
}
