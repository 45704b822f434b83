//! Hash maps and sets keyed by [`JobId`], with a hasher made for them.
//!
//! Policies and the validator look job ids up several times per queued job at every call; with
//! the standard library's SipHash, hashing alone took about a tenth of an FCFS replay with a
//! long queue. Job ids come from the driver (a trace's numbers, the daemon's counter), not from
//! an adversary, so a multiplicative hash (as in Firefox's and rustc's "Fx" hash) is enough:
//! distinct ids keep distinct low bits and the multiplication spreads them into the high bits
//! that the table's control bytes use.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use crate::request::JobId;

/// A map keyed by job id.
pub type IdMap<V> = HashMap<JobId, V, BuildHasherDefault<IdHasher>>;

/// A set of job ids.
pub type IdSet = HashSet<JobId, BuildHasherDefault<IdHasher>>;

/// The hasher of [`IdMap`] and [`IdSet`]: one rotation, xor and multiplication per word.
#[derive(Clone, Copy, Debug, Default)]
pub struct IdHasher(u64);

/// An odd constant with well-spread bits (2⁶⁴ / φ).
const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl IdHasher {
    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
    }
}

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.mix(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.mix(n);
    }

    // Tuples of small integers (a pool index, a node count, a walltime) hash a word per field.
    fn write_u32(&mut self, n: u32) {
        self.mix(u64::from(n));
    }

    fn write_usize(&mut self, n: usize) {
        self.mix(n as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_ids_spread_over_the_high_bits() {
        let ids: IdSet = (0..1000u64).map(JobId).collect();
        assert_eq!(ids.len(), 1000);
        let high: std::collections::HashSet<u64> = (0..128u64)
            .map(|i| {
                let mut h = IdHasher::default();
                h.write_u64(i);
                h.finish() >> 57
            })
            .collect();
        assert!(
            high.len() > 64,
            "only {} of 128 top-7-bit values",
            high.len()
        );
    }
}
