//! Properties of every algorithm on random small monotonic instances: each schedule is valid and
//! none beats a lower bound.

use esched_bicriteria::bicrit::{batch_schedule, bicrit, BiCritParams};
use esched_bicriteria::instance::{Instance, Task};
use esched_bicriteria::makespan::Makespan;
use esched_lab::moldable::bounds::bounds;
use esched_lab::moldable::solve::schedules;
use proptest::prelude::*;

/// A monotonic task: p(1) and a speed-up shape — the §4.1 recurrence p(j) = p(j−1)(Y+j)/(1+j)
/// for Y in [0, 1] (Y = 1: no speed-up), or a perfectly linear p(1)/k.
fn task(m: usize) -> impl Strategy<Value = Task> {
    (1u32..=10, 0.1f64..10.0, 0.0f64..=1.0, any::<bool>()).prop_map(move |(w, p1, y, linear)| {
        let mut p = vec![p1];
        for j in 2..=m {
            let prev = p[j - 2];
            p.push(if linear {
                p1 / j as f64
            } else {
                prev * (y + j as f64) / (1.0 + j as f64)
            });
        }
        Task { w: w as f64, p }
    })
}

fn instance() -> impl Strategy<Value = Instance> {
    (1usize..=6).prop_flat_map(|m| {
        prop::collection::vec(task(m), 1..=8)
            .prop_map(move |tasks| Instance::new(m, tasks).expect("monotonic by construction"))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn every_schedule_is_valid_and_none_beats_a_bound(
        inst in instance(),
        shuffles in 0usize..4,
        seed in any::<u64>(),
        mrt in any::<bool>(),
    ) {
        let makespan = if mrt { Makespan::Mrt } else { Makespan::Canonical };
        let b = bounds(&inst, makespan).expect("LP solves");
        let params = BiCritParams { shuffles, seed, makespan };
        let all = schedules(&inst, params).expect("every schedule valid");
        for (name, s) in &all {
            let (c, w) = (s.cmax(&inst), s.sum_wc(&inst));
            prop_assert!(c >= b.cmax_lb * (1.0 - 1e-9), "{name}: Cmax {c} < bound {}", b.cmax_lb);
            prop_assert!(w >= b.minsum_lb * (1.0 - 1e-9), "{name}: ΣωC {w} < bound {}", b.minsum_lb);
        }
        // The batches themselves form a valid schedule (before compaction), and the schedule
        // returned is no worse than it on both criteria.
        let run = bicrit(&inst, params);
        batch_schedule(&inst, &run.batches).validate(&inst).expect("batch schedule valid");
        prop_assert_eq!(&run.batch, &batch_schedule(&inst, &run.batches));
        let (bc, bw) = (run.batch.cmax(&inst), run.batch.sum_wc(&inst));
        prop_assert!(run.schedule.cmax(&inst) <= bc * (1.0 + 1e-9));
        prop_assert!(run.schedule.sum_wc(&inst) <= bw * (1.0 + 1e-9));
        // The dual approximations' guarantees: λ* ≤ the schedule ≤ 3λ* (canonical), 3λ*/2
        // (MRT's three shelves); MRT's test is the stronger, so its λ* is no smaller.
        let d = makespan.run(&inst);
        d.schedule.validate(&inst).expect("makespan schedule valid");
        let c = d.schedule.cmax(&inst);
        let factor = if mrt { 1.5 } else { 3.0 };
        prop_assert!(!d.fallback, "MRT's rules left S2 too wide");
        prop_assert!(c <= factor * d.lambda * (1.0 + 1e-9), "{c} > {factor}·{}", d.lambda);
        prop_assert!(
            Makespan::Mrt.lambda_star(&inst) >= Makespan::Canonical.lambda_star(&inst) * (1.0 - 1e-9)
        );
    }
}
