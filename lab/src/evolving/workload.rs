//! The papers' synthetic workload (Euro-Par 2011 §5.1): "a uniform random choice of the number of
//! applications, their number of steps, as well as the duration and requested node-count of each
//! step"; 15–20 applications per test, 1–10 steps, durations 500–3600 s, 1–75 nodes per step.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sched_core::time::SECOND;
use sched_core::Step;

/// The ranges of a workload, all inclusive, durations in seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkloadSpec {
    /// Applications per test.
    pub apps: (u32, u32),
    /// Steps per application.
    pub steps: (u32, u32),
    /// Step duration, seconds.
    pub duration_s: (u64, u64),
    /// Nodes per step.
    pub nodes: (u32, u32),
}

impl WorkloadSpec {
    /// The ranges of the papers' Tables 1–2.
    pub const PAPER: WorkloadSpec = WorkloadSpec {
        apps: (15, 20),
        steps: (1, 10),
        duration_s: (500, 3600),
        nodes: (1, 75),
    };
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec::PAPER
    }
}

/// One test: the requested EPs of its applications, in submission order, durations in ms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Test {
    /// Requested EPs.
    pub apps: Vec<Vec<Step>>,
}

/// `tests` tests drawn uniformly from `spec` with a ChaCha8 generator seeded with `seed`.
///
/// Interpretation: the papers draw integers or reals without saying which; durations here are
/// whole seconds (the papers' examples all are), which changes no figure beyond rounding.
pub fn generate(spec: &WorkloadSpec, tests: usize, seed: u64) -> Vec<Test> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..tests)
        .map(|_| {
            let napps = rng.gen_range(spec.apps.0..=spec.apps.1);
            let apps = (0..napps)
                .map(|_| {
                    let nsteps = rng.gen_range(spec.steps.0..=spec.steps.1);
                    (0..nsteps)
                        .map(|_| {
                            let d = rng.gen_range(spec.duration_s.0..=spec.duration_s.1);
                            let n = rng.gen_range(spec.nodes.0..=spec.nodes.1);
                            Step::new(d * SECOND, n)
                        })
                        .collect()
                })
                .collect();
            Test { apps }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_stay_in_the_papers_ranges_and_repeat_with_the_seed() {
        let a = generate(&WorkloadSpec::PAPER, 50, 7);
        assert_eq!(a, generate(&WorkloadSpec::PAPER, 50, 7));
        assert_ne!(a, generate(&WorkloadSpec::PAPER, 50, 8));
        for t in &a {
            assert!((15..=20).contains(&t.apps.len()));
            for app in &t.apps {
                assert!((1..=10).contains(&app.len()));
                for s in app {
                    assert!((500_000..=3_600_000).contains(&s.duration) && s.duration % 1000 == 0);
                    assert!((1..=75).contains(&s.nodes));
                }
            }
        }
        // Uniform draws reach both ends of every range over 50 tests.
        let steps: Vec<&Step> = a.iter().flat_map(|t| t.apps.iter().flatten()).collect();
        assert!(steps.iter().any(|s| s.nodes == 1) && steps.iter().any(|s| s.nodes == 75));
        assert!(a.iter().any(|t| t.apps.len() == 15) && a.iter().any(|t| t.apps.len() == 20));
    }
}
