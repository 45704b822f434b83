//! Time on the wire: integer milliseconds, since the Unix epoch for instants.

/// An instant, in milliseconds since the Unix epoch.
pub type Time = u64;
/// A length of time, in milliseconds.
pub type Duration = u64;

/// One second in milliseconds.
pub const SECOND: Duration = 1_000;
/// One minute in milliseconds.
pub const MINUTE: Duration = 60 * SECOND;
/// One hour in milliseconds.
pub const HOUR: Duration = 60 * MINUTE;
