//! §3.1's synthetic workload.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::trace::{CoallocParams, CoallocTrace, TraceJob};

/// The Realistic Synthetic Distribution of §2.1 on `[lo, hi]`: size i has probability
/// `q^i / Q`, or `3 q^i / Q` when i is a power of two.
#[derive(Clone, Debug, PartialEq)]
pub struct Rsd {
    lo: u32,
    /// Cumulative probabilities of `lo..=hi`.
    cdf: Vec<f64>,
    mean: f64,
}

impl Rsd {
    /// The distribution on `[lo, hi]` (1 ≤ lo ≤ hi) with parameter `q` in (0, 1).
    pub fn new(lo: u32, hi: u32, q: f64) -> Self {
        let w: Vec<f64> = (lo..=hi)
            .map(|i| {
                let f = if i.is_power_of_two() { 3.0 } else { 1.0 };
                f * q.powi(i as i32)
            })
            .collect();
        let total: f64 = w.iter().sum();
        let mut acc = 0.0;
        let cdf = w
            .iter()
            .map(|x| {
                acc += x / total;
                acc
            })
            .collect();
        let mean = (lo..=hi)
            .zip(&w)
            .map(|(i, x)| f64::from(i) * x)
            .sum::<f64>()
            / total;
        Rsd { lo, cdf, mean }
    }

    /// The expected size.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// One size.
    pub fn sample(&self, rng: &mut impl Rng) -> u32 {
        let u: f64 = rng.gen();
        let k = self
            .cdf
            .iter()
            .position(|&c| u < c)
            .unwrap_or(self.cdf.len() - 1);
        self.lo + k as u32
    }
}

/// A workload of §3.1.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadSpec {
    /// The replay's settings (C, N and the policy's).
    pub params: CoallocParams,
    /// U_l, the requested local load per cluster, in [0, 1).
    pub local_load: f64,
    /// λ_g, global jobs per second.
    pub global_rate: f64,
    /// Mean local run time, seconds (1/μ_l = 100).
    pub local_mean: f64,
    /// Mean global run time, seconds (1/μ_g = 200).
    pub global_mean: f64,
    /// D − S uniform on this interval, seconds ([1, 3599] in §3.2).
    pub deadline: (f64, f64),
    /// Jobs are submitted in [0, horizon), seconds.
    pub horizon: f64,
    /// RNG seed.
    pub seed: u64,
}

/// q of the Realistic Synthetic Distribution in §3.1.
pub const Q: f64 = 0.9;

impl WorkloadSpec {
    /// The paper's settings (§3.1): C = 4, N = 32, means 100 s and 200 s, D − S on [1, 3599].
    pub fn paper(local_load: f64, global_rate: f64, horizon: f64, seed: u64) -> Self {
        WorkloadSpec {
            params: CoallocParams::default(),
            local_load,
            global_rate,
            local_mean: 100.0,
            global_mean: 200.0,
            deadline: (1.0, 3599.0),
            horizon,
            seed,
        }
    }

    /// Local sizes: the RSD on [1, N].
    pub fn local_sizes(&self) -> Rsd {
        Rsd::new(1, self.params.procs, Q)
    }

    /// Global component sizes: the RSD on [4, N] (§2.1's I_s = [4, S]).
    pub fn global_sizes(&self) -> Rsd {
        Rsd::new(4.min(self.params.procs), self.params.procs, Q)
    }

    /// λ_l per cluster for the local load: U_l = λ_l E[S_l] / (μ_l N) (§3.1).
    pub fn local_rate(&self) -> f64 {
        self.local_load * f64::from(self.params.procs)
            / (self.local_mean * self.local_sizes().mean())
    }

    /// E[N_c] with N_c uniform on [2, C].
    pub fn mean_components(&self) -> f64 {
        (2.0 + f64::from(self.params.clusters.max(2))) / 2.0
    }

    /// The global load of a rate: U_g = λ_g E[N_c] E[S_g] / (μ_g N C) (§3.1).
    pub fn global_load_of(&self, rate: f64) -> f64 {
        rate * self.mean_components() * self.global_sizes().mean() * self.global_mean
            / f64::from(self.params.procs * self.params.clusters)
    }

    /// The rate of a global load (the inverse of [`Self::global_load_of`]).
    pub fn global_rate_for(&self, load: f64) -> f64 {
        load / self.global_load_of(1.0)
    }

    /// The trace.
    pub fn generate(&self) -> CoallocTrace {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut jobs = Vec::new();
        let exp = |rng: &mut ChaCha8Rng, mean: f64| -> f64 {
            let u: f64 = rng.gen();
            -mean * (1.0 - u).ln()
        };
        let ls = self.local_sizes();
        let lrate = self.local_rate();
        if lrate > 0.0 {
            for cluster in 0..self.params.clusters {
                let mut t = exp(&mut rng, 1.0 / lrate);
                while t < self.horizon {
                    jobs.push(TraceJob::Local {
                        id: None,
                        cluster,
                        submit: t,
                        size: ls.sample(&mut rng),
                        runtime: exp(&mut rng, self.local_mean),
                    });
                    t += exp(&mut rng, 1.0 / lrate);
                }
            }
        }
        let gs = self.global_sizes();
        if self.global_rate > 0.0 {
            let mut t = exp(&mut rng, 1.0 / self.global_rate);
            while t < self.horizon {
                let c = self.params.clusters.max(2);
                let components = rng.gen_range(2..=c);
                let (lo, hi) = self.deadline;
                let rel = if hi > lo { rng.gen_range(lo..=hi) } else { lo };
                jobs.push(TraceJob::Global {
                    id: None,
                    submit: t,
                    components,
                    size: gs.sample(&mut rng),
                    runtime: exp(&mut rng, self.global_mean),
                    deadline: t + rel,
                });
                t += exp(&mut rng, 1.0 / self.global_rate);
            }
        }
        jobs.sort_by(|a, b| a.submit().total_cmp(&b.submit()));
        CoallocTrace {
            params: self.params.clone(),
            jobs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rsd_means_are_the_papers() {
        // §3.1: E[S_l] = 6.95 on [1, 32], E[S_g] = 10.44 on [4, 32], q = 0.9.
        assert!(
            (Rsd::new(1, 32, Q).mean() - 6.95).abs() < 0.005,
            "{}",
            Rsd::new(1, 32, Q).mean()
        );
        assert!(
            (Rsd::new(4, 32, Q).mean() - 10.44).abs() < 0.005,
            "{}",
            Rsd::new(4, 32, Q).mean()
        );
    }

    #[test]
    fn rsd_samples_match_its_mean() {
        let d = Rsd::new(1, 32, Q);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let n = 100_000;
        let m = (0..n).map(|_| f64::from(d.sample(&mut rng))).sum::<f64>() / n as f64;
        assert!((m - d.mean()).abs() < 0.1, "{m}");
    }

    #[test]
    fn generated_loads_are_the_requested_ones() {
        let spec = WorkloadSpec::paper(0.3, 0.0, 0.0, 1);
        let rate = spec.global_rate_for(0.2);
        assert!((spec.global_load_of(rate) - 0.2).abs() < 1e-12);
        let spec = WorkloadSpec::paper(0.3, rate, 200_000.0, 7);
        let trace = spec.generate();
        let (mut l, mut g) = (0.0, 0.0);
        for j in &trace.jobs {
            match j {
                TraceJob::Local { size, runtime, .. } => l += f64::from(*size) * runtime,
                TraceJob::Global {
                    size,
                    runtime,
                    components,
                    deadline,
                    submit,
                    ..
                } => {
                    g += f64::from(size * components) * runtime;
                    assert!((1.0..=3599.0).contains(&(deadline - submit)));
                    assert!((2..=4).contains(components));
                }
            }
        }
        let cap = 128.0 * 200_000.0;
        assert!((l / cap - 0.3).abs() < 0.03, "local {}", l / cap);
        assert!((g / cap - 0.2).abs() < 0.03, "global {}", g / cap);
    }
}
