//! Slurm's time formats: time limits (`-t/--time`), durations as squeue and sacct print them,
//! timestamps, and `--begin` instants.
//!
//! Everything is pure: "now" and the time zone are arguments, so tests pin them. Instants are
//! milliseconds since the Unix epoch (sched-core's [`Time`]).

use sched_core::time::{Duration, Time, SECOND};

use super::error::SpecError;

/// A time limit as written by the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeLimit {
    /// A finite limit.
    Limited(Duration),
    /// `UNLIMITED` / `INFINITE`: the pool's `max_time` (365 days, batch-proto's
    /// `MAX_TIME_LIMIT`, for a pool without one). The daemon decides what that is, so the
    /// tools pass it on (`batch_proto::TIME_UNLIMITED`) instead of inventing a number.
    Unlimited,
}

fn invalid(what: &'static str, input: &str, reason: impl Into<String>) -> SpecError {
    SpecError::Invalid {
        what,
        input: one_line(input),
        reason: one_line(&reason.into()),
    }
}

/// `s` with its control characters escaped (`\n`, `\u{8}`): an error quotes what the user
/// typed, and must stay one line whatever that was (found by the `esubmit_time` fuzz target).
fn one_line(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

fn number(what: &'static str, input: &str, part: &str) -> Result<u64, SpecError> {
    if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(what, input, format!("'{part}' is not a number")));
    }
    part.parse::<u64>()
        .map_err(|_| invalid(what, input, format!("'{part}' is too large")))
}

/// Parses a `-t/--time` value in any of Slurm's forms: `min`, `min:sec`, `h:m:s`, `d-h`,
/// `d-h:m`, `d-h:m:s`, or `UNLIMITED`/`INFINITE`.
///
/// Unlike Slurm, seconds are kept (Slurm rounds up to whole minutes): short limits make the
/// TIMEOUT path testable. A zero limit is refused; Slurm reads `0` as "no limit", which is a
/// surprise we would rather spell out as `UNLIMITED` (which is accepted: the pool's
/// `max_time`). The bounds (at most 365 days, or the pool's `max_time`) are batch-proto's to
/// check, once, for the tools and the daemon alike.
pub fn parse_time_limit(input: &str) -> Result<TimeLimit, SpecError> {
    const WHAT: &str = "time limit";
    let s = input.trim();
    if s.eq_ignore_ascii_case("unlimited") || s.eq_ignore_ascii_case("infinite") {
        return Ok(TimeLimit::Unlimited);
    }
    let (days, rest) = match s.split_once('-') {
        Some((d, rest)) => (Some(number(WHAT, input, d)?), rest),
        None => (None, s),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    let nums = parts
        .iter()
        .map(|p| number(WHAT, input, p))
        .collect::<Result<Vec<_>, _>>()?;
    let secs = match (days, nums.as_slice()) {
        (None, [m]) => m.checked_mul(60),
        (None, [m, s]) => m.checked_mul(60).and_then(|m| m.checked_add(*s)),
        (None, [h, m, s]) | (Some(_), [h, m, s]) => {
            hms(*h, *m, *s).and_then(|x| x.checked_add(days.unwrap_or(0).checked_mul(86_400)?))
        }
        (Some(d), [h]) => hms(*h, 0, 0).and_then(|x| x.checked_add(d.checked_mul(86_400)?)),
        (Some(d), [h, m]) => hms(*h, *m, 0).and_then(|x| x.checked_add(d.checked_mul(86_400)?)),
        _ => {
            return Err(invalid(
                WHAT,
                input,
                "expected min, min:sec, h:m:s, d-h, d-h:m, d-h:m:s or UNLIMITED",
            ))
        }
    };
    let secs = secs.ok_or_else(|| invalid(WHAT, input, "too large"))?;
    if secs == 0 {
        return Err(invalid(
            WHAT,
            input,
            "must be positive (use UNLIMITED for the pool's max_time)",
        ));
    }
    secs.checked_mul(SECOND)
        .map(TimeLimit::Limited)
        .ok_or_else(|| invalid(WHAT, input, "too large"))
}

fn hms(h: u64, m: u64, s: u64) -> Option<u64> {
    h.checked_mul(3600)?
        .checked_add(m.checked_mul(60)?)?
        .checked_add(s)
}

/// A duration the way squeue prints TIME and TIME_LIMIT: `M:SS`, `H:MM:SS`, `D-HH:MM:SS`
/// (Slurm's `secs2time_str`). Milliseconds are truncated.
pub fn format_squeue_duration(ms: Duration) -> String {
    let t = ms / SECOND;
    let (d, h, m, s) = (t / 86_400, t / 3600 % 24, t / 60 % 60, t % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// A duration the way sacct prints Elapsed and Timelimit: `HH:MM:SS` or `D-HH:MM:SS`.
pub fn format_sacct_duration(ms: Duration) -> String {
    let t = ms / SECOND;
    let (d, h, m, s) = (t / 86_400, t / 3600 % 24, t / 60 % 60, t % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// A time limit for display: `UNLIMITED` when there is none.
pub fn format_limit(limit: Option<Duration>) -> String {
    match limit {
        Some(ms) => format_squeue_duration(ms),
        None => "UNLIMITED".to_string(),
    }
}

/// A time zone: the offset from UTC, in seconds, in force at a UTC instant.
pub trait Zone {
    /// Seconds east of UTC at `utc_secs` (seconds since the epoch).
    fn offset_at(&self, utc_secs: i64) -> i64;
}

/// A fixed offset from UTC (tests, and `TZ=UTC` machines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedZone(pub i64);

impl Zone for FixedZone {
    fn offset_at(&self, _utc_secs: i64) -> i64 {
        self.0
    }
}

/// The process's local time zone, through the C library (honours `TZ`), as Slurm's tools do.
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalZone;

impl Zone for LocalZone {
    fn offset_at(&self, utc_secs: i64) -> i64 {
        let t = utc_secs as nix::libc::time_t;
        // SAFETY: `tm` is plain old data; localtime_r only writes into it and returns null on
        // failure, in which case we fall back to UTC.
        unsafe {
            let mut tm: nix::libc::tm = std::mem::zeroed();
            if nix::libc::localtime_r(&t, &mut tm).is_null() {
                0
            } else {
                tm.tm_gmtoff
            }
        }
    }
}

/// A civil (wall-clock) date and time, without zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Civil {
    /// Year, e.g. 2026.
    pub year: i64,
    /// Month 1..=12.
    pub month: u32,
    /// Day of month 1..=31.
    pub day: u32,
    /// Hour 0..=23.
    pub hour: u32,
    /// Minute 0..=59.
    pub minute: u32,
    /// Second 0..=59.
    pub second: u32,
}

// Days since 1970-01-01 of a proleptic Gregorian date, after Howard Hinnant's
// "chrono-compatible low-level date algorithms" (days_from_civil).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

// Inverse of `days_from_civil` (Hinnant's civil_from_days).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

impl Civil {
    /// The wall-clock time in `zone` at the UTC instant `utc_secs`.
    pub fn from_utc(utc_secs: i64, zone: &dyn Zone) -> Civil {
        let local = utc_secs + zone.offset_at(utc_secs);
        let (year, month, day) = civil_from_days(local.div_euclid(86_400));
        let sod = local.rem_euclid(86_400);
        Civil {
            year,
            month,
            day,
            hour: (sod / 3600) as u32,
            minute: (sod / 60 % 60) as u32,
            second: (sod % 60) as u32,
        }
    }

    /// The UTC instant (seconds) this wall-clock time names in `zone`. Around a daylight-saving
    /// change the offset is looked up twice, which picks one of the two readings of an
    /// ambiguous time; nothing better exists without a date library.
    pub fn to_utc(&self, zone: &dyn Zone) -> i64 {
        let local = days_from_civil(self.year, self.month, self.day) * 86_400
            + i64::from(self.hour) * 3600
            + i64::from(self.minute) * 60
            + i64::from(self.second);
        let guess = local - zone.offset_at(local);
        local - zone.offset_at(guess)
    }

    fn valid(&self) -> bool {
        (1..=12).contains(&self.month)
            && self.day >= 1
            && self.day <= days_in_month(self.year, self.month)
            && self.hour < 24
            && self.minute < 60
            && self.second < 60
    }
}

/// A timestamp the way Slurm prints them: `YYYY-MM-DDTHH:MM:SS`, local time.
pub fn format_timestamp(t: Time, zone: &dyn Zone) -> String {
    let c = Civil::from_utc((t / SECOND) as i64, zone);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

/// An optional timestamp: `N/A` when unknown, as squeue shows an unplanned start.
pub fn format_opt_timestamp(t: Option<Time>, zone: &dyn Zone) -> String {
    t.map_or_else(|| "N/A".to_string(), |t| format_timestamp(t, zone))
}

fn parse_clock(what: &'static str, input: &str, s: &str) -> Result<(u32, u32, u32), SpecError> {
    let parts: Vec<&str> = s.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return Err(invalid(what, input, "expected HH:MM or HH:MM:SS"));
    }
    let n = |p: &str| -> Result<u32, SpecError> {
        u32::try_from(number(what, input, p)?).map_err(|_| invalid(what, input, "out of range"))
    };
    let (h, m) = (n(parts[0])?, n(parts[1])?);
    let sec = if parts.len() == 3 { n(parts[2])? } else { 0 };
    if h > 23 || m > 59 || sec > 59 {
        return Err(invalid(what, input, "hour, minute or second out of range"));
    }
    Ok((h, m, sec))
}

/// Parses a `--begin` value relative to `now` (ms since the epoch) in `zone`:
///
/// - `now`, `now+N` (seconds), `now+N<unit>` with unit `seconds|minutes|hours|days|weeks`
///   (singular, plural or Slurm's prefixes `s`, `min`, `h`, `d`, `w`); `now-N<unit>` too, which
///   sacct's `-S` uses;
/// - `HH:MM[:SS]`: that time today, or tomorrow if it has passed (as Slurm);
/// - `YYYY-MM-DD[THH:MM[:SS]]`;
/// - `today`, `tomorrow` (midnight), `midnight`, `noon`, `teatime` (16:00), each the next one.
///
/// Returns the instant in ms since the epoch. A past date is accepted: the job is simply
/// eligible at once, as with Slurm.
/// Also the parser of eacct's `-S/--starttime` and `-E/--endtime`.
pub fn parse_begin(input: &str, now: Time, zone: &dyn Zone) -> Result<Time, SpecError> {
    const WHAT: &str = "begin time";
    let s = input.trim();
    let lower = s.to_ascii_lowercase();
    let now_secs = (now / SECOND) as i64;
    let today = Civil::from_utc(now_secs, zone);
    let at = |c: Civil| -> i64 { c.to_utc(zone) };
    let midnight_today = Civil {
        hour: 0,
        minute: 0,
        second: 0,
        ..today
    };
    let next_occurrence = |h: u32, m: u32, sec: u32| -> i64 {
        let t = at(Civil {
            hour: h,
            minute: m,
            second: sec,
            ..today
        });
        if t < now_secs {
            // Tomorrow at the same wall-clock time, whatever the day length.
            let (y, mo, d) =
                civil_from_days(days_from_civil(today.year, today.month, today.day) + 1);
            at(Civil {
                year: y,
                month: mo,
                day: d,
                hour: h,
                minute: m,
                second: sec,
            })
        } else {
            t
        }
    };
    let secs: i64 =
        if let Some(rest) = lower.strip_prefix("now") {
            if rest.is_empty() {
                now_secs
            } else {
                let (sign, rest) = match (rest.strip_prefix('+'), rest.strip_prefix('-')) {
                    (Some(r), _) => (1, r),
                    (_, Some(r)) => (-1, r),
                    _ => return Err(invalid(WHAT, input, "expected now+COUNT[UNIT]")),
                };
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                let count = number(WHAT, input, &rest[..digits])?;
                let unit = match &rest[digits..] {
                    "" | "s" | "sec" | "secs" | "second" | "seconds" => 1,
                    "m" | "min" | "mins" | "minute" | "minutes" => 60,
                    "h" | "hour" | "hours" => 3600,
                    "d" | "day" | "days" => 86_400,
                    "w" | "week" | "weeks" => 7 * 86_400,
                    other => return Err(invalid(WHAT, input, format!("unknown unit '{other}'"))),
                };
                let delta = count
                    .checked_mul(unit)
                    .and_then(|d| i64::try_from(d).ok())
                    .ok_or_else(|| invalid(WHAT, input, "too far in the future"))?;
                now_secs
                    .checked_add(sign * delta)
                    .ok_or_else(|| invalid(WHAT, input, "too far"))?
            }
        } else {
            match lower.as_str() {
                "today" => at(midnight_today),
                "tomorrow" => {
                    let (y, m, d) =
                        civil_from_days(days_from_civil(today.year, today.month, today.day) + 1);
                    at(Civil {
                        year: y,
                        month: m,
                        day: d,
                        hour: 0,
                        minute: 0,
                        second: 0,
                    })
                }
                "midnight" => next_occurrence(0, 0, 0),
                "noon" => next_occurrence(12, 0, 0),
                "teatime" => next_occurrence(16, 0, 0),
                _ if lower.len() >= 10 && lower.as_bytes()[4] == b'-' => {
                    let (date, clock) = match lower.split_once('t') {
                        Some((d, c)) => (d, Some(c)),
                        None => (lower.as_str(), None),
                    };
                    let ymd: Vec<&str> = date.split('-').collect();
                    if ymd.len() != 3 {
                        return Err(invalid(WHAT, input, "expected YYYY-MM-DD[THH:MM[:SS]]"));
                    }
                    let year = i64::try_from(number(WHAT, input, ymd[0])?)
                        .map_err(|_| invalid(WHAT, input, "year out of range"))?;
                    let small = |p: &str| -> Result<u32, SpecError> {
                        u32::try_from(number(WHAT, input, p)?)
                            .map_err(|_| invalid(WHAT, input, "out of range"))
                    };
                    let (month, day) = (small(ymd[1])?, small(ymd[2])?);
                    let (hour, minute, second) = match clock {
                        Some(c) => parse_clock(WHAT, input, c)?,
                        None => (0, 0, 0),
                    };
                    let c = Civil {
                        year,
                        month,
                        day,
                        hour,
                        minute,
                        second,
                    };
                    if !c.valid() || !(1970..=9999).contains(&year) {
                        return Err(invalid(WHAT, input, "no such date"));
                    }
                    at(c)
                }
                _ if lower.contains(':') => {
                    let (h, m, sec) = parse_clock(WHAT, input, &lower)?;
                    next_occurrence(h, m, sec)
                }
                _ => return Err(invalid(
                    WHAT,
                    input,
                    "expected now[+N[unit]], HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]], today, tomorrow",
                )),
            }
        };
    u64::try_from(secs)
        .ok()
        .and_then(|s| s.checked_mul(SECOND))
        .ok_or_else(|| invalid(WHAT, input, "before the epoch"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const S: u64 = SECOND;

    fn lim(s: &str) -> Duration {
        match parse_time_limit(s).unwrap() {
            TimeLimit::Limited(d) => d,
            TimeLimit::Unlimited => panic!("unlimited"),
        }
    }

    #[test]
    fn time_limit_forms() {
        assert_eq!(lim("10"), 600 * S);
        assert_eq!(lim("10:30"), 630 * S);
        assert_eq!(lim("0:05"), 5 * S);
        assert_eq!(lim("1:02:03"), 3723 * S);
        assert_eq!(lim("2-3"), (2 * 86_400 + 3 * 3600) * S);
        assert_eq!(lim("2-3:04"), (2 * 86_400 + 3 * 3600 + 240) * S);
        assert_eq!(lim("2-3:04:05"), (2 * 86_400 + 3 * 3600 + 245) * S);
        assert_eq!(lim(" 90 "), 5400 * S);
        assert_eq!(parse_time_limit("UNLIMITED").unwrap(), TimeLimit::Unlimited);
        assert_eq!(parse_time_limit("infinite").unwrap(), TimeLimit::Unlimited);
    }

    #[test]
    fn errors_quoting_control_characters_stay_one_line() {
        // The input the esubmit_time fuzz target found (fuzz/artifacts, crash-ee87d1d9…).
        let input = "\0\n\n\n\n\n\n\n\n\n\n\n\n\n\x08";
        let e = parse_time_limit(input).unwrap_err().to_string();
        assert_eq!(
            e,
            "invalid time limit '\\u{0}\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\u{8}': '\\u{0}\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\u{8}' is not a number"
        );
        for s in ["now+1\nday", "12:\r00", "2026-01-01T\n", "\x1b[2J"] {
            let e = parse_begin(s, 1_000_000, &FixedZone(0))
                .unwrap_err()
                .to_string();
            assert!(!e.chars().any(char::is_control), "{e:?}");
        }
    }

    #[test]
    fn time_limit_rejects_garbage() {
        for bad in [
            "",
            "0",
            "0:00",
            "abc",
            "1:2:3:4",
            "1-2:3:4:5",
            "-5",
            "1-",
            "1:-2",
            "1.5",
            "99999999999999999999",
            "1-1:1:1x",
        ] {
            let e = parse_time_limit(bad).unwrap_err().to_string();
            assert!(e.contains("invalid time limit"), "{bad}: {e}");
        }
    }

    #[test]
    fn squeue_and_sacct_durations() {
        assert_eq!(format_squeue_duration(0), "0:00");
        assert_eq!(format_squeue_duration(5_999), "0:05");
        assert_eq!(format_squeue_duration(61 * S), "1:01");
        assert_eq!(format_squeue_duration(3723 * S), "1:02:03");
        assert_eq!(format_squeue_duration((86_400 + 3723) * S), "1-01:02:03");
        assert_eq!(format_sacct_duration(5 * S), "00:00:05");
        assert_eq!(format_sacct_duration((2 * 86_400 + 5) * S), "2-00:00:05");
        assert_eq!(format_limit(None), "UNLIMITED");
    }

    // 2026-11-22T18:04:57Z
    const NOW: Time = 1_795_370_697_000;

    #[test]
    fn timestamps_in_utc_and_offsets() {
        assert_eq!(format_timestamp(NOW, &FixedZone(0)), "2026-11-22T18:04:57");
        assert_eq!(
            format_timestamp(NOW, &FixedZone(3600)),
            "2026-11-22T19:04:57"
        );
        assert_eq!(format_timestamp(0, &FixedZone(0)), "1970-01-01T00:00:00");
        assert_eq!(
            format_timestamp(951_782_400_000, &FixedZone(0)),
            "2000-02-29T00:00:00"
        );
        assert_eq!(format_opt_timestamp(None, &FixedZone(0)), "N/A");
    }

    #[test]
    fn begin_relative_forms() {
        let z = FixedZone(0);
        assert_eq!(parse_begin("now", NOW, &z).unwrap(), NOW / S * S);
        assert_eq!(parse_begin("now+30", NOW, &z).unwrap(), NOW + 30 * S);
        assert_eq!(
            parse_begin("now+10minutes", NOW, &z).unwrap(),
            NOW + 600 * S
        );
        assert_eq!(parse_begin("now+1hour", NOW, &z).unwrap(), NOW + 3600 * S);
        assert_eq!(
            parse_begin("NOW+2days", NOW, &z).unwrap(),
            NOW + 2 * 86_400 * S
        );
        assert_eq!(
            parse_begin("now+1w", NOW, &z).unwrap(),
            NOW + 7 * 86_400 * S
        );
        assert!(parse_begin("now+10parsecs", NOW, &z).is_err());
        assert_eq!(
            parse_begin("now-1hour", NOW, &z).unwrap(),
            NOW / S * S - 3600 * S
        );
        assert!(parse_begin("now*10", NOW, &z).is_err());
        assert!(parse_begin("now+", NOW, &z).is_err());
    }

    #[test]
    fn begin_clock_forms_roll_to_tomorrow_when_past() {
        let z = FixedZone(0);
        let f = |s: &str| format_timestamp(parse_begin(s, NOW, &z).unwrap(), &z);
        assert_eq!(f("20:00"), "2026-11-22T20:00:00");
        assert_eq!(f("18:04:58"), "2026-11-22T18:04:58");
        assert_eq!(f("16:00"), "2026-11-23T16:00:00");
        assert_eq!(f("teatime"), "2026-11-23T16:00:00");
        assert_eq!(f("noon"), "2026-11-23T12:00:00");
        assert_eq!(f("midnight"), "2026-11-23T00:00:00");
        assert_eq!(f("today"), "2026-11-22T00:00:00");
        assert_eq!(f("tomorrow"), "2026-11-23T00:00:00");
        assert!(parse_begin("25:00", NOW, &z).is_err());
        assert!(parse_begin("12:60", NOW, &z).is_err());
    }

    #[test]
    fn begin_clock_uses_the_zone() {
        // At 18:04Z it is 03:04 the next morning in UTC+9; "04:00" is 55 minutes away.
        let z = FixedZone(9 * 3600);
        let t = parse_begin("04:00", NOW, &z).unwrap();
        assert_eq!(format_timestamp(t, &FixedZone(0)), "2026-11-22T19:00:00");
    }

    #[test]
    fn begin_dates() {
        let z = FixedZone(0);
        let f = |s: &str| format_timestamp(parse_begin(s, NOW, &z).unwrap(), &z);
        assert_eq!(f("2026-12-01"), "2026-12-01T00:00:00");
        assert_eq!(f("2026-12-01T08:30"), "2026-12-01T08:30:00");
        assert_eq!(f("2028-02-29T23:59:59"), "2028-02-29T23:59:59");
        for bad in [
            "2026-02-29",
            "2026-13-01",
            "2026-00-10",
            "2026-12-01T24:00",
            "2026-1-1x",
            "yesterday",
            "",
        ] {
            assert!(parse_begin(bad, NOW, &z).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn civil_round_trips(secs in 0i64..253_402_300_799, off in -14*3600i64..14*3600) {
            let z = FixedZone(off);
            let c = Civil::from_utc(secs, &z);
            prop_assert!(c.valid());
            prop_assert_eq!(c.to_utc(&z), secs);
        }

        #[test]
        fn limit_display_parses_back(secs in 1u64..100*86_400) {
            let shown = format_squeue_duration(secs * S);
            // squeue's M:SS reads back as min:sec, H:MM:SS as h:m:s, D-HH:MM:SS as d-h:m:s.
            prop_assert_eq!(lim(&shown), secs * S);
        }

        #[test]
        fn begin_now_plus_is_monotone(a in 0u64..1_000_000, b in 0u64..1_000_000) {
            let z = FixedZone(0);
            let ta = parse_begin(&format!("now+{a}"), NOW, &z).unwrap();
            let tb = parse_begin(&format!("now+{b}"), NOW, &z).unwrap();
            prop_assert_eq!(ta <= tb, a <= b);
        }
    }
}
