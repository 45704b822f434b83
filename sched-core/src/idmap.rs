//! Hash maps keyed by job id with a cheap hasher: ids are already well-spread integers, and
//! SipHash on them was a tenth of a co-allocation replay's time (drivers validate every plan,
//! policies are called at every event).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use crate::request::JobId;

/// A multiplicative hasher for integer keys (Fibonacci hashing); not for untrusted keys of
/// other shapes (there are none: job ids come from the driver).
#[derive(Clone, Copy, Debug, Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// A map keyed by job id.
pub type IdMap<V> = HashMap<JobId, V, BuildHasherDefault<IdHasher>>;
/// A set of job ids.
pub type IdSet = HashSet<JobId, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_keep_every_id_apart() {
        let mut m = IdMap::default();
        for i in 0..10_000u64 {
            m.insert(JobId(i << 20), i);
        }
        assert_eq!(m.len(), 10_000);
        assert_eq!(m.get(&JobId(5 << 20)), Some(&5));
    }
}
