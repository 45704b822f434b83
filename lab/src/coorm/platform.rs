//! The resource model of §IV-A.

use sched_core::{Pool, PoolId};

/// Hosts per cluster in §IV-A.
pub const PAPER_HOSTS: u32 = 128;

/// SAN latency inside one pool, in seconds (a cluster interconnect, 50 µs).
pub const LAT_SAN: f64 = 50e-6;
/// Latency between the two pools of one site (a metropolitan link), in seconds.
pub const LAT_SITE: f64 = 1e-3;
/// Latency between sites of one region (a national research network), in seconds.
pub const LAT_REGION: f64 = 10e-3;
/// Latency between regions (continental Internet), in seconds.
pub const LAT_WAN: f64 = 30e-3;

/// n_C pools ("clusters" of the paper) of n_H hosts each, with relative speeds and latencies.
#[derive(Clone, Debug, PartialEq)]
pub struct Platform {
    /// The pools, ids `0..n_C`, named `c1`…
    pub pools: Vec<Pool>,
    /// Relative speed of each pool (pool 0 is 1).
    pub speed: Vec<f64>,
}

impl Platform {
    /// §IV-A: `n_c` pools of `n_h` hosts; the i-th (1-based) is `1 + 0.1 (i − 1)` times faster
    /// than the first.
    pub fn paper(n_c: u32, n_h: u32) -> Self {
        let pools = (0..n_c)
            .map(|i| Pool {
                id: PoolId(i),
                name: format!("c{}", i + 1).into(),
                nodes: n_h,
            })
            .collect();
        let speed = (0..n_c).map(|i| 1.0 + 0.1 * f64::from(i)).collect();
        Platform { pools, speed }
    }

    /// Number of pools.
    pub fn len(&self) -> usize {
        self.pools.len()
    }

    /// Whether there is no pool.
    pub fn is_empty(&self) -> bool {
        self.pools.is_empty()
    }

    /// Hosts of pool index `i`.
    pub fn hosts(&self, i: usize) -> u32 {
        self.pools[i].nodes
    }

    /// One-way latency between pool indices `a` and `b`, in seconds.
    ///
    /// §IV-A only says "a hierarchical model of a WAN, with latencies typically found over the
    /// Internet"; ours is a three-level tree: pools `2k, 2k+1` share a site ([`LAT_SITE`]),
    /// pools `4k…4k+3` a region ([`LAT_REGION`]), the rest is [`LAT_WAN`]; inside a pool the
    /// SAN ([`LAT_SAN`]). Bandwidth is not modelled (the CEM model's messages are small halo
    /// exchanges, latency-bound).
    pub fn latency(&self, a: usize, b: usize) -> f64 {
        if a == b {
            LAT_SAN
        } else if a / 2 == b / 2 {
            LAT_SITE
        } else if a / 4 == b / 4 {
            LAT_REGION
        } else {
            LAT_WAN
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speeds_and_latencies_follow_the_model() {
        let p = Platform::paper(8, 128);
        assert_eq!(p.len(), 8);
        assert!((p.speed[0] - 1.0).abs() < 1e-12);
        assert!((p.speed[7] - 1.7).abs() < 1e-12);
        assert_eq!(p.latency(3, 3), LAT_SAN);
        assert_eq!(p.latency(0, 1), LAT_SITE);
        assert_eq!(p.latency(1, 3), LAT_REGION);
        assert_eq!(p.latency(3, 4), LAT_WAN);
        assert_eq!(p.latency(4, 3), p.latency(3, 4));
    }
}
