//! Time in integer milliseconds.
//!
//! Every duration and instant in code is a `u64` count of milliseconds: since the Unix epoch in
//! batchd, since the trace's origin in esim. The papers and SWF speak seconds; convert at the
//! edges with [`secs`] and [`as_secs_f64`].

/// An instant, in milliseconds.
pub type Time = u64;
/// A length of time, in milliseconds.
pub type Duration = u64;

/// One second in milliseconds.
pub const SECOND: Duration = 1_000;
/// One minute in milliseconds.
pub const MINUTE: Duration = 60 * SECOND;
/// One hour in milliseconds.
pub const HOUR: Duration = 60 * MINUTE;
/// The end of time: a step that never ends, a job with no known end.
pub const NEVER: Time = Time::MAX;

/// `s` seconds in milliseconds (saturating).
pub const fn secs(s: u64) -> Duration {
    s.saturating_mul(SECOND)
}

/// A millisecond count as fractional seconds, for reports.
pub fn as_secs_f64(ms: u64) -> f64 {
    ms as f64 / SECOND as f64
}
