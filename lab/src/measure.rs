//! How the lab times what it runs: the calling thread's CPU time, and quantiles of a sample.

/// CPU time of the calling thread in seconds, from `CLOCK_THREAD_CPUTIME_ID` (nanoseconds):
/// the machine is shared, so wall time alone says little about what a run costs, and
/// `/proc/thread-self/schedstat` is brought up to date only at scheduler ticks, too coarse for
/// one policy call. `None` where the clock cannot be read.
pub fn thread_cpu() -> Option<f64> {
    use nix::time::{clock_gettime, ClockId};
    let ts = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).ok()?;
    Some(ts.tv_sec() as f64 + ts.tv_nsec() as f64 * 1e-9)
}

/// The `p`-quantile (`p` in [0, 1]) of a sample sorted in increasing order, by linear
/// interpolation between order statistics (so the median of an even count is the mean of the
/// middle two); NaN for an empty sample.
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let x = p * (sorted.len() - 1) as f64;
    let (i, f) = (x.floor() as usize, x.fract());
    if i + 1 < sorted.len() {
        sorted[i] * (1.0 - f) + sorted[i + 1] * f
    } else {
        sorted[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_between_order_statistics() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 0.5), 2.5);
        assert_eq!(quantile(&v, 1.0), 4.0);
        assert!(quantile(&[], 0.5).is_nan());
        assert!(thread_cpu().is_some_and(|t| t >= 0.0));
    }
}
