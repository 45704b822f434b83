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

/// A duration in Slurm's forms (`-t`, a partition's `MaxTime`): `min`, `min:sec`, `h:m:s`,
/// `d-h`, `d-h:m`, `d-h:m:s`, in whole seconds; `None` for `UNLIMITED`/`INFINITE`. The error
/// says what is wrong with `input`, for the caller to put in its own message.
pub fn slurm_duration_secs(input: &str) -> Result<Option<u64>, String> {
    let s = input.trim();
    if s.eq_ignore_ascii_case("unlimited") || s.eq_ignore_ascii_case("infinite") {
        return Ok(None);
    }
    let number = |part: &str| -> Result<u64, String> {
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("'{part}' is not a number"));
        }
        part.parse::<u64>()
            .map_err(|_| format!("'{part}' is too large"))
    };
    let hms = |h: u64, m: u64, s: u64| -> Option<u64> {
        h.checked_mul(3600)?
            .checked_add(m.checked_mul(60)?)?
            .checked_add(s)
    };
    let (days, rest) = match s.split_once('-') {
        Some((d, rest)) => (Some(number(d)?), rest),
        None => (None, s),
    };
    let nums = rest.split(':').map(number).collect::<Result<Vec<_>, _>>()?;
    let day_secs = |d: u64| d.checked_mul(86_400);
    let secs = match (days, nums.as_slice()) {
        (None, [m]) => m.checked_mul(60),
        (None, [m, s]) => m.checked_mul(60).and_then(|m| m.checked_add(*s)),
        (None, [h, m, s]) => hms(*h, *m, *s),
        (Some(d), [h, m, s]) => hms(*h, *m, *s).and_then(|x| x.checked_add(day_secs(d)?)),
        (Some(d), [h]) => hms(*h, 0, 0).and_then(|x| x.checked_add(day_secs(d)?)),
        (Some(d), [h, m]) => hms(*h, *m, 0).and_then(|x| x.checked_add(day_secs(d)?)),
        _ => return Err("expected min, min:sec, h:m:s, d-h, d-h:m, d-h:m:s or UNLIMITED".into()),
    };
    secs.map(Some).ok_or_else(|| "too large".to_string())
}
