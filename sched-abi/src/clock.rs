//! The clock that times a host's calls.
//!
//! A replay calls its policy about 10⁵ times, a few microseconds a call, and the host reads the
//! clock three times a call with a valid plan (before the policy, between it and the validator,
//! after the validator; five with a fallback). Through the vDSO, `Instant::now` costs about
//! 18 ns a reading on this project's machines: 4 % of a KTH-SP2 replay. The processor's
//! time-stamp counter costs 7 ns. Where it runs at a constant rate whatever the core's frequency
//! and sleep states (the invariant TSC that `cpuid` announces, which Linux calls
//! `constant_tsc`/`nonstop_tsc`) and the kernel keeps time by it too (its clocksource is `tsc`:
//! it found the counters in step across the processors and stable under the hypervisor), this
//! clock counts its ticks, and turns a sum of ticks into time by the rate the counter ran at
//! against `Instant` since the clock was made: no calibration up front, and the longer the host
//! lives, the closer the rate. Anywhere else the ticks are `Instant`'s nanoseconds.
//!
//! So a time read early in a host's life is rougher than one read later, and the same ticks
//! read twice may give times a little apart: figures to report, never to decide by.

use std::time::{Duration, Instant};

/// Readings and their conversion to time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    origin: Instant,
    /// The counter at `origin`, when the counter is used.
    tsc_origin: Option<u64>,
}

impl Clock {
    /// A clock starting now, on the time-stamp counter if it is invariant and the kernel keeps
    /// time by it.
    pub(crate) fn new() -> Self {
        let tsc_origin = (tsc::invariant() && kernel_keeps_time_by_tsc()).then(tsc::read);
        Clock {
            origin: Instant::now(),
            tsc_origin,
        }
    }

    /// A reading, in ticks: only differences between two readings mean anything.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        match self.tsc_origin {
            Some(_) => tsc::read(),
            None => u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// The time `ticks` (a sum of differences between readings) stand for.
    pub(crate) fn duration(&self, ticks: u64) -> Duration {
        let Some(tsc_origin) = self.tsc_origin else {
            return Duration::from_nanos(ticks);
        };
        let elapsed = self.origin.elapsed().as_nanos();
        let counted = u128::from(tsc::read().saturating_sub(tsc_origin));
        if counted == 0 {
            return Duration::ZERO;
        }
        let nanos = u128::from(ticks) * elapsed / counted;
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

/// Whether the kernel's clocksource is the time-stamp counter (Linux; false where it cannot be
/// told).
fn kernel_keeps_time_by_tsc() -> bool {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .is_ok_and(|s| s.trim() == "tsc")
}

#[cfg(target_arch = "x86_64")]
mod tsc {
    use std::arch::x86_64::{__cpuid, _rdtsc};

    /// Whether the time-stamp counter is invariant: `cpuid` leaf `0x8000_0007`, EDX bit 8.
    #[allow(unsafe_code)] // the one unsafe block below says why it is sound
    pub(super) fn invariant() -> bool {
        // SAFETY: `cpuid` exists on every x86-64 processor and reads no memory; the extended
        // leaf is read only when the processor says it has it. (Newer compilers deem these
        // intrinsics safe, hence the allowance.)
        #[allow(unused_unsafe)]
        let edx = unsafe {
            let max = __cpuid(0x8000_0000).eax;
            (max >= 0x8000_0007).then(|| __cpuid(0x8000_0007).edx)
        };
        edx.is_some_and(|edx| edx & (1 << 8) != 0)
    }

    #[inline]
    #[allow(unsafe_code)] // the one unsafe block below says why it is sound
    pub(super) fn read() -> u64 {
        // SAFETY: `rdtsc` exists on every x86-64 processor, reads no memory and has no
        // precondition. (Newer compilers deem it safe, hence the allowance.)
        #[allow(unused_unsafe)]
        unsafe {
            _rdtsc()
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod tsc {
    pub(super) fn invariant() -> bool {
        false
    }

    pub(super) fn read() -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ticks summed over a span come back as about the span's time, whichever counter is used.
    #[test]
    fn ticks_measure_time() {
        let clock = Clock::new();
        let wall = Instant::now();
        let a = clock.now();
        std::thread::sleep(Duration::from_millis(30));
        let ticks = clock.now() - a;
        let (measured, wall) = (clock.duration(ticks), wall.elapsed());
        assert!(
            measured >= Duration::from_millis(25),
            "{measured:?} for {wall:?}"
        );
        assert!(
            measured <= wall + Duration::from_millis(5),
            "{measured:?} for {wall:?}"
        );
    }
}
