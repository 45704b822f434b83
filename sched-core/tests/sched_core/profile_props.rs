//! `Profile` against the `BTreeMap` oracle `NaiveProfile`: random sequences of updates applied
//! to both, every query compared after each one. Each test runs with a random layout: always a
//! tree, always chunks (of up to eight points, so that chunks split and merge every few edits),
//! always flat, the default, and small flat limits that make a profile switch back and forth
//! between flat and the others during one sequence.

use proptest::prelude::*;
use sched_core::profile::naive::NaiveProfile;
use sched_core::profile::{Large, FLAT_MAX};
use sched_core::time::NEVER;
use sched_core::{Profile, Step};

/// Layouts: a limit of the flat representation and what holds a profile past it. 0 keeps every
/// non-empty profile a tree or chunks, `usize::MAX` every profile flat, 3 and 12 switch within
/// a sequence of a few dozen updates.
fn layout() -> impl Strategy<Value = (usize, Large)> {
    prop_oneof![
        Just((0, Large::Tree)),
        Just((0, Large::Chunked)),
        Just((3, Large::Tree)),
        Just((3, Large::Adaptive)),
        Just((12, Large::Chunked)),
        Just((FLAT_MAX, Large::Adaptive)),
        Just((usize::MAX, Large::Adaptive)),
    ]
}

fn profile((flat_max, large): (usize, Large)) -> Profile {
    Profile::with_layout(flat_max, large)
}

/// The layouts of the packed plans: a tree, chunks, and limits switching within a plan.
fn plan_layout() -> impl Strategy<Value = (usize, Large)> {
    prop_oneof![
        Just((0, Large::Tree)),
        Just((0, Large::Chunked)),
        Just((40, Large::Tree)),
        Just((40, Large::Adaptive)),
        Just((FLAT_MAX, Large::Adaptive)),
        Just((usize::MAX, Large::Adaptive)),
    ]
}

/// Instants: mostly a small range so that operations collide on change points, sometimes close
/// to the end of time so that saturating arithmetic is exercised.
fn instant() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 0u64..120,
        1 => (NEVER - 120)..NEVER,
        1 => Just(NEVER),
    ]
}

fn length() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 0u64..60,
        1 => Just(NEVER),
        1 => (NEVER - 120)..=NEVER,
    ]
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        (length(), 0u32..20).prop_map(|(d, n)| Step::new(d, n)),
        0..4,
    )
}

#[derive(Clone, Debug)]
enum Op {
    Add {
        t0: u64,
        len: u64,
        delta: i64,
    },
    AddSteps {
        start: u64,
        steps: Vec<Step>,
        sign: i64,
    },
    AddProfile {
        start: u64,
        steps: Vec<Step>,
    },
    Delayed {
        dt: u64,
    },
    ForgetBefore {
        t: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (instant(), length(), -30i64..30)
            .prop_map(|(t0, len, delta)| Op::Add { t0, len, delta }),
        2 => (instant(), steps(), prop_oneof![Just(1i64), Just(-1)])
            .prop_map(|(start, steps, sign)| Op::AddSteps { start, steps, sign }),
        1 => (instant(), steps()).prop_map(|(start, steps)| Op::AddProfile { start, steps }),
        1 => prop_oneof![0u64..40, Just(NEVER - 50), Just(NEVER)]
            .prop_map(|dt| Op::Delayed { dt }),
        1 => instant().prop_map(|t| Op::ForgetBefore { t }),
    ]
}

/// The smallest value on `[t0, t1)` (the oracle has no such query).
fn min_over(p: &NaiveProfile, t0: u64, t1: u64) -> i64 {
    let mut m = p.value_at(t0);
    for (t, v) in p.change_points() {
        if t > t0 && t < t1 {
            m = m.min(v);
        }
    }
    m
}

fn min_value(p: &NaiveProfile) -> i64 {
    p.change_points().map(|(_, v)| v).fold(0, i64::min)
}

/// Applies `op` to both; returns false (and changes nothing) if it would drive a value below 0.
fn apply(op: &Op, tree: &mut Profile, naive: &mut NaiveProfile) -> bool {
    let mut next = naive.clone();
    match op {
        &Op::Add { t0, len, delta } => {
            let t1 = t0.saturating_add(len);
            // Remove at most what is there, as a finishing job would.
            let delta = if delta < 0 && t0 < t1 {
                delta.max(-min_over(naive, t0, t1))
            } else {
                delta
            };
            next.add(t0, t1, delta);
            if min_value(&next) < 0 {
                return false;
            }
            tree.add(t0, t1, delta);
        }
        Op::AddSteps { start, steps, sign } => {
            next.add_steps(*start, steps, *sign);
            if min_value(&next) < 0 {
                return false;
            }
            tree.add_steps(*start, steps, *sign);
        }
        Op::AddProfile { start, steps } => {
            let other_naive = NaiveProfile::from_steps(*start, steps);
            let other = Profile::from_steps(*start, steps);
            assert_eq!(
                other.change_points().collect::<Vec<_>>(),
                other_naive.change_points().collect::<Vec<_>>(),
                "from_steps({start}, {steps:?})"
            );
            next.add_profile(&other_naive);
            tree.add_profile(&other);
        }
        &Op::Delayed { dt } => {
            next = naive.delayed(dt);
            *tree = tree.delayed(dt);
        }
        &Op::ForgetBefore { t } => {
            next.forget_before(t);
            tree.forget_before(t);
        }
    }
    *naive = next;
    true
}

#[derive(Clone, Debug)]
struct Query {
    t0: u64,
    len: u64,
    limit: i64,
}

fn query() -> impl Strategy<Value = Query> {
    (instant(), length(), -2i64..70).prop_map(|(t0, len, limit)| Query { t0, len, limit })
}

fn agree_on(tree: &Profile, naive: &NaiveProfile, q: &Query) {
    let Query { t0, len, limit } = *q;
    let t1 = t0.saturating_add(len);
    assert_eq!(tree.value_at(t0), naive.value_at(t0), "value_at({t0})");
    assert_eq!(
        tree.max_over(t0, t1),
        naive.max_over(t0, t1),
        "max_over({t0}, {t1})"
    );
    assert_eq!(tree.loc(t0, t1), naive.loc(t0, t1), "loc({t0}, {t1})");
    assert_eq!(
        tree.last_above(t0, t1, limit),
        naive.last_above(t0, t1, limit),
        "last_above({t0}, {t1}, {limit})"
    );
    let fit = naive.earliest_fit(t0, len, limit);
    assert_eq!(
        tree.earliest_fit(t0, len, limit),
        fit,
        "earliest_fit({t0}, {len}, {limit})"
    );
    // Bounds at `t0`, at the fit and just after it.
    let at = fit.unwrap_or(t0);
    for bound in [t0, at, at.saturating_add(1)] {
        assert_eq!(
            tree.earliest_fit_before(t0, len, limit, bound),
            fit.filter(|&t| t < bound),
            "earliest_fit_before({t0}, {len}, {limit}, {bound})"
        );
        for reach in [
            bound,
            bound.saturating_add(1),
            bound.saturating_add(len / 2),
            NEVER,
        ] {
            assert_eq!(
                tree.run_before(t0, len, limit, bound, reach),
                run_before_naive(naive, t0, len, limit, bound, reach),
                "run_before({t0}, {len}, {limit}, {bound}, {reach})"
            );
        }
    }
}

/// [`Profile::run_before`] by brute force: a run starts at `from` or at a change point.
fn run_before_naive(
    naive: &NaiveProfile,
    from: u64,
    len: u64,
    limit: i64,
    bound: u64,
    reach: u64,
) -> bool {
    if from >= bound {
        return false;
    }
    if len == 0 {
        return true;
    }
    std::iter::once(from)
        .chain(
            naive
                .change_points()
                .map(|p| p.0)
                .filter(|&t| t > from && t < bound),
        )
        .any(|t| naive.max_over(t, t.saturating_add(len).min(reach)) <= limit)
}

fn agree(tree: &Profile, naive: &NaiveProfile, queries: &[Query]) {
    if let Err(e) = tree.check_invariants() {
        panic!("broken tree: {e}\n{tree:?}");
    }
    let points: Vec<_> = naive.change_points().collect();
    assert_eq!(tree.change_points().collect::<Vec<_>>(), points);
    assert_eq!(tree.len(), naive.len());
    assert_eq!(tree.is_empty(), naive.is_empty());
    for q in queries {
        agree_on(tree, naive, q);
    }
    // Around every change point, where off-by-one errors live, with the value there and
    // next to it as limits.
    for (i, &(t, v)) in points.iter().enumerate() {
        let next = points.get(i + 1).map_or(NEVER, |p| p.0);
        for t0 in [t.saturating_sub(1), t, t.saturating_add(1)] {
            for len in [0, 1, next - t, (next - t).saturating_add(1), NEVER] {
                for limit in [v - 1, v] {
                    agree_on(tree, naive, &Query { t0, len, limit });
                }
            }
        }
    }
    assert_eq!(tree.value_at(NEVER), naive.value_at(NEVER));
}

/// Plans `jobs` (nodes, walltime) one after the other at their earliest fit on a pool of
/// `pool` nodes in both profiles, then probes `(from, duration, limit)` fits.
fn packed_plans(
    layout: (usize, Large),
    pool: i64,
    jobs: &[(i64, u64)],
    probes: &[(u64, u64, i64)],
) -> Result<(), TestCaseError> {
    let mut tree = profile(layout);
    let mut naive = NaiveProfile::new();
    for &(nodes, walltime) in jobs {
        let start = naive.earliest_fit(0, walltime, pool - nodes);
        prop_assert_eq!(tree.earliest_fit(0, walltime, pool - nodes), start);
        let start = start.unwrap_or(0);
        naive.add(start, start + walltime, nodes);
        tree.add(start, start + walltime, nodes);
    }
    if let Err(e) = tree.check_invariants() {
        panic!("broken tree: {e}");
    }
    for &(from, duration, limit) in probes {
        let fit = naive.earliest_fit(from, duration, limit);
        prop_assert_eq!(
            tree.earliest_fit(from, duration, limit),
            fit,
            "earliest_fit({}, {}, {})",
            from,
            duration,
            limit
        );
        for bound in [fit.unwrap_or(from), fit.map_or(NEVER, |t| t + 1), from + 50] {
            prop_assert_eq!(
                tree.earliest_fit_before(from, duration, limit, bound),
                fit.filter(|&t| t < bound),
                "earliest_fit_before({}, {}, {}, {})",
                from,
                duration,
                limit,
                bound
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn tree_matches_oracle(
        layout in layout(),
        ops in prop::collection::vec(op(), 1..60),
        queries in prop::collection::vec(query(), 1..12),
    ) {
        let mut tree = profile(layout);
        let mut naive = NaiveProfile::new();
        for op in &ops {
            apply(op, &mut tree, &mut naive);
            agree(&tree, &naive, &queries);
        }
    }

    /// A conservative-backfilling plan: jobs placed one after the other at their earliest fit
    /// on a small pool, so the profile gets densely packed with many short gaps, the case the
    /// tree's fit search prunes hardest.
    #[test]
    fn packed_plans_agree(
        layout in plan_layout(),
        jobs in prop::collection::vec((1i64..=16, 1u64..40), 1..150),
        probes in prop::collection::vec((0u64..400, 1u64..80, 0i64..=16), 1..20),
    ) {
        packed_plans(layout, 16, &jobs, &probes)?;
    }

    /// The same on a 10,000-node pool with power-of-two jobs, as in the benchmark, so that
    /// limits fall thousands of nodes below the profile's maximum.
    #[test]
    fn wide_packed_plans_agree(
        layout in plan_layout(),
        jobs in prop::collection::vec((0u32..=14, 1u64..40), 1..120),
        probes in prop::collection::vec((0u64..400, 1u64..80, 0i64..=10_000), 1..20),
    ) {
        let jobs: Vec<(i64, u64)> = jobs
            .iter()
            .map(|&(e, w)| (if e == 14 { 10_000 } else { 1i64 << e }, w))
            .collect();
        packed_plans(layout, 10_000, &jobs, &probes)?;
    }

    /// Equality is equality of step functions, however the profile was built.
    #[test]
    fn equality_is_of_step_functions(
        layout in layout(),
        other in layout(),
        ops in prop::collection::vec(op(), 1..30),
    ) {
        let mut tree = profile(layout);
        let mut naive = NaiveProfile::new();
        for op in &ops {
            apply(op, &mut tree, &mut naive);
        }
        // Built in the other representation, when the limits differ.
        let mut rebuilt = profile(other);
        let points: Vec<_> = naive.change_points().collect();
        for (i, &(t, v)) in points.iter().enumerate().rev() {
            let prev = if i == 0 { 0 } else { points[i - 1].1 };
            rebuilt.add(t, NEVER, v - prev);
        }
        prop_assert_eq!(&rebuilt, &tree);
        prop_assert_eq!(tree.clone(), tree.clone());
        let mut bumped = tree.clone();
        bumped.add(7, 8, 1);
        prop_assert_ne!(&bumped, &tree);
        bumped.add(7, 8, -1);
        prop_assert_eq!(&bumped, &tree);
    }

    /// Adding then removing the same steps restores the profile, change points included.
    #[test]
    fn add_then_remove_restores(
        layout in layout(),
        ops in prop::collection::vec(op(), 0..30),
        start in instant(),
        steps in steps(),
    ) {
        let mut tree = profile(layout);
        let mut naive = NaiveProfile::new();
        for op in &ops {
            apply(op, &mut tree, &mut naive);
        }
        let before = tree.clone();
        tree.add_steps(start, &steps, 1);
        tree.add_steps(start, &steps, -1);
        prop_assert_eq!(tree.len(), before.len());
        prop_assert_eq!(&tree, &before);
        prop_assert!(tree.check_invariants().is_ok());
    }
}
