//! Slurm's time formats: time limits (`-t/--time`), durations as squeue and sacct print them,
//! timestamps, and `--begin` instants.
//!
//! Everything is pure: "now" and the time zone are arguments, so tests pin them. Instants are
//! milliseconds since the Unix epoch (the protocol's [`Time`]).

use batch_proto::time::{Duration, Time, MINUTE, SECOND};

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

/// Parses a `-t/--time` value as Slurm does: `min`, `min:sec`, `h:m:s`, `d-h`, `d-h:m`,
/// `d-h:m:s`, or `UNLIMITED`/`INFINITE`, a limit with seconds rounded up to the whole minute
/// (`0:30` is one minute, `1:00:30` is 1:01:00). esched's own form `Ns` (`90s`, which Slurm
/// refuses) keeps the seconds: short limits make the TIMEOUT path testable.
///
/// A zero limit is refused; Slurm reads `0` as "no limit", which is a surprise we would rather
/// spell out as `UNLIMITED` (which is accepted: the pool's `max_time`). The bounds (at most
/// 365 days, or the pool's `max_time`) are batch-proto's to check, once, for the tools and the
/// daemon alike.
pub fn parse_time_limit(input: &str) -> Result<TimeLimit, SpecError> {
    const WHAT: &str = "time limit";
    let s = input.trim();
    if let Some(n) = s.strip_suffix('s') {
        if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
            return parse_time_exact(&format!("0:{n}"));
        }
    }
    Ok(match parse_time_exact(input)? {
        TimeLimit::Limited(d) => TimeLimit::Limited(
            d.div_ceil(MINUTE)
                .checked_mul(MINUTE)
                .ok_or_else(|| invalid(WHAT, input, "too large"))?,
        ),
        TimeLimit::Unlimited => TimeLimit::Unlimited,
    })
}

/// [`parse_time_limit`]'s forms with the seconds kept: the times of esched's own options
/// (`--moldable`, `--moldable-model`), which say what a size costs to the second.
pub fn parse_time_exact(input: &str) -> Result<TimeLimit, SpecError> {
    const WHAT: &str = "time limit";
    let Some(secs) =
        batch_proto::time::slurm_duration_secs(input).map_err(|why| invalid(WHAT, input, why))?
    else {
        return Ok(TimeLimit::Unlimited);
    };
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

/// A time zone, from jiff (the project's one calendar): the system's (`TZ`, else
/// `/etc/localtime`, with the tz database of the system or, failing it, the one jiff bundles)
/// or a fixed offset.
pub type Zone = jiff::tz::TimeZone;

/// The process's time zone, as Slurm's tools use (honours `TZ`); UTC when none can be found.
pub fn local_zone() -> Zone {
    Zone::try_system().unwrap_or(Zone::UTC)
}

/// A fixed offset of `secs` seconds east of UTC (tests, and `TZ=UTC` machines); out of jiff's
/// range of offsets (±25:59:59) it is clamped.
pub fn fixed_zone(secs: i32) -> Zone {
    let secs = secs.clamp(-93_599, 93_599);
    jiff::tz::Offset::from_seconds(secs).map_or(Zone::UTC, Zone::fixed)
}

fn timestamp(t: Time) -> jiff::Timestamp {
    let secs = i64::try_from(t / SECOND).unwrap_or(i64::MAX);
    jiff::Timestamp::from_second(secs).unwrap_or(jiff::Timestamp::MAX)
}

/// How the tools print a timestamp, from `$SLURM_TIME_FORMAT` as Slurm reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimeStyle {
    /// `YYYY-MM-DDTHH:MM:SS` (unset, empty or `standard`).
    Standard,
    /// `relative`: the time of day today, `Ystday HH:MM`, `Tomorr HH:MM`, the weekday within
    /// a week, the day and month within a year, else the date.
    Relative,
    /// Any other value: a strftime format (`%a %T`).
    Custom(String),
}

impl TimeStyle {
    /// The style `value` of `SLURM_TIME_FORMAT` asks for.
    pub fn from_env_value(value: Option<&str>) -> TimeStyle {
        match value {
            None | Some("") | Some("standard") => TimeStyle::Standard,
            Some("relative") => TimeStyle::Relative,
            Some(f) => TimeStyle::Custom(f.to_string()),
        }
    }
}

/// The style of this process, read once.
fn time_style() -> &'static TimeStyle {
    static STYLE: std::sync::OnceLock<TimeStyle> = std::sync::OnceLock::new();
    STYLE.get_or_init(|| {
        TimeStyle::from_env_value(std::env::var("SLURM_TIME_FORMAT").ok().as_deref())
    })
}

/// A timestamp the way Slurm prints them: `YYYY-MM-DDTHH:MM:SS` local time, or as
/// `$SLURM_TIME_FORMAT` says ([`TimeStyle`]).
pub fn format_timestamp(t: Time, zone: &Zone) -> String {
    let style = time_style();
    // Only the relative style reads the clock (a listing prints thousands of times).
    let now = match style {
        TimeStyle::Relative => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        _ => 0,
    };
    format_timestamp_as(t, zone, style, now)
}

/// [`format_timestamp`] in `style`, `now` for the relative style. A custom format that
/// cannot be used prints the standard form.
pub fn format_timestamp_as(t: Time, zone: &Zone, style: &TimeStyle, now: Time) -> String {
    let dt = zone.to_datetime(timestamp(t));
    let standard = || dt.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    match style {
        TimeStyle::Standard => standard(),
        TimeStyle::Custom(f) => {
            jiff::fmt::strtime::format(f.as_str(), dt).unwrap_or_else(|_| standard())
        }
        TimeStyle::Relative => {
            let today = zone.to_datetime(timestamp(now)).date();
            let days = today.until(dt.date()).map_or(0, |s| s.get_days());
            let fmt = match days {
                -1 => "Ystday %H:%M",
                0 => "%H:%M:%S",
                1 => "Tomorr %H:%M",
                d if !(-365..=365).contains(&d) => "%-d %b %Y",
                d if !(-1..=6).contains(&d) => "%-d %b %H:%M",
                _ => "%a %H:%M",
            };
            jiff::fmt::strtime::format(fmt, dt).unwrap_or_else(|_| standard())
        }
    }
}

/// An optional timestamp: `N/A` when unknown, as squeue shows an unplanned start.
pub fn format_opt_timestamp(t: Option<Time>, zone: &Zone) -> String {
    t.map_or_else(|| "N/A".to_string(), |t| format_timestamp(t, zone))
}

/// `HH:MM[:SS]`, or with Slurm's `AM`/`PM` after it (`4:00PM`, `4:00 pm`): hours 1 to 12,
/// `12AM` midnight and `12PM` noon.
fn parse_clock_12h(
    what: &'static str,
    input: &str,
    lower: &str,
) -> Result<jiff::civil::Time, SpecError> {
    let (clock, pm) = match (lower.strip_suffix("am"), lower.strip_suffix("pm")) {
        (Some(c), _) => (c.trim_end(), false),
        (_, Some(c)) => (c.trim_end(), true),
        _ => return parse_clock(what, input, lower),
    };
    let t = parse_clock(what, input, clock)?;
    if !(1..=12).contains(&t.hour()) {
        return Err(invalid(what, input, "with AM/PM the hour is 1 to 12"));
    }
    let hour = t.hour() % 12 + if pm { 12 } else { 0 };
    jiff::civil::Time::new(hour, t.minute(), t.second(), 0)
        .map_err(|e| invalid(what, input, e.to_string()))
}

fn parse_clock(what: &'static str, input: &str, s: &str) -> Result<jiff::civil::Time, SpecError> {
    let parts: Vec<&str> = s.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return Err(invalid(what, input, "expected HH:MM or HH:MM:SS"));
    }
    let n = |p: &str| -> Result<i8, SpecError> {
        i8::try_from(number(what, input, p)?).map_err(|_| invalid(what, input, "out of range"))
    };
    let (h, m) = (n(parts[0])?, n(parts[1])?);
    let sec = if parts.len() == 3 { n(parts[2])? } else { 0 };
    jiff::civil::Time::new(h, m, sec, 0)
        .map_err(|_| invalid(what, input, "hour, minute or second out of range"))
}

/// Which way a time of day without a date is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Day {
    /// The next one: sbatch's `--begin 16:00` after 16:00 is tomorrow.
    Next,
    /// Today's, past or not: sacct's `-S 00:53` at 00:54 is a minute ago.
    Today,
}

/// Parses a `--begin` value relative to `now` (ms since the epoch) in `zone`:
///
/// - `now`, `now+N` (seconds), `now+N<unit>` with unit `seconds|minutes|hours|days|weeks`
///   (singular, plural or Slurm's prefixes `s`, `min`, `h`, `d`, `w`); `now-N<unit>` too;
/// - `HH:MM[:SS]`: that time today, or tomorrow if it has passed (as Slurm);
/// - `YYYY-MM-DD[THH:MM[:SS]]`;
/// - `today`, `tomorrow` (midnight), `midnight`, `noon`, `elevenses` (11:00), `fika` (15:00),
///   `teatime` (16:00), each the next one.
///
/// Returns the instant in ms since the epoch. A past date is accepted: the job is simply
/// eligible at once, as with Slurm. A wall-clock time that a daylight-saving change skips or
/// repeats is read as jiff's "compatible" choice (the later reading of a skipped time, the
/// earlier of a repeated one), as RFC 5545 and Temporal do.
pub fn parse_begin(input: &str, now: Time, zone: &Zone) -> Result<Time, SpecError> {
    parse_instant("begin time", input, now, zone, Day::Next)
}

/// Parses sacct's `-S/--starttime` and `-E/--endtime`: the forms of [`parse_begin`], except
/// that a time of day (`HH:MM[:SS]`, `midnight`, `noon`, ...) is today's even when it has
/// passed, as sacct reads it (`-S 00:53` at 00:54 is a minute ago, `-S midnight` this
/// morning's).
pub fn parse_acct_time(input: &str, now: Time, zone: &Zone) -> Result<Time, SpecError> {
    parse_instant("time", input, now, zone, Day::Today)
}

fn parse_instant(
    what: &'static str,
    input: &str,
    now: Time,
    zone: &Zone,
    day: Day,
) -> Result<Time, SpecError> {
    let s = input.trim();
    let lower = s.to_ascii_lowercase();
    let now_secs = i64::try_from(now / SECOND).map_err(|_| invalid(what, input, "too far"))?;
    let today = zone.to_datetime(timestamp(now)).date();
    let at = |dt: jiff::civil::DateTime| -> Result<i64, SpecError> {
        zone.to_ambiguous_timestamp(dt)
            .compatible()
            .map(jiff::Timestamp::as_second)
            .map_err(|e| invalid(what, input, e.to_string()))
    };
    let of_day = |t: jiff::civil::Time| -> Result<i64, SpecError> {
        let first = at(today.to_datetime(t))?;
        if day == Day::Next && first < now_secs {
            // Tomorrow at the same wall-clock time, whatever the day's length.
            let tomorrow = today
                .tomorrow()
                .map_err(|e| invalid(what, input, e.to_string()))?;
            at(tomorrow.to_datetime(t))
        } else {
            Ok(first)
        }
    };
    let hm = |h: i8, m: i8| jiff::civil::Time::new(h, m, 0, 0).unwrap_or(jiff::civil::Time::MIN);
    let secs: i64 =
        if let Some(rest) = lower.strip_prefix("now") {
            if rest.is_empty() {
                now_secs
            } else {
                let (sign, rest) = match (rest.strip_prefix('+'), rest.strip_prefix('-')) {
                    (Some(r), _) => (1, r),
                    (_, Some(r)) => (-1, r),
                    _ => return Err(invalid(what, input, "expected now+COUNT[UNIT]")),
                };
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                let count = number(what, input, &rest[..digits])?;
                let unit = match &rest[digits..] {
                    "" | "s" | "sec" | "secs" | "second" | "seconds" => 1,
                    "m" | "min" | "mins" | "minute" | "minutes" => 60,
                    "h" | "hour" | "hours" => 3600,
                    "d" | "day" | "days" => 86_400,
                    "w" | "week" | "weeks" => 7 * 86_400,
                    other => return Err(invalid(what, input, format!("unknown unit '{other}'"))),
                };
                let delta = count
                    .checked_mul(unit)
                    .and_then(|d| i64::try_from(d).ok())
                    .ok_or_else(|| invalid(what, input, "too far in the future"))?;
                now_secs
                    .checked_add(sign * delta)
                    .ok_or_else(|| invalid(what, input, "too far"))?
            }
        } else {
            match lower.as_str() {
                "today" => at(today.to_datetime(jiff::civil::Time::MIN))?,
                "tomorrow" => {
                    let t = today
                        .tomorrow()
                        .map_err(|e| invalid(what, input, e.to_string()))?;
                    at(t.to_datetime(jiff::civil::Time::MIN))?
                }
                "midnight" => of_day(jiff::civil::Time::MIN)?,
                "elevenses" => of_day(hm(11, 0))?,
                "noon" => of_day(hm(12, 0))?,
                "fika" => of_day(hm(15, 0))?,
                "teatime" => of_day(hm(16, 0))?,
                _ if lower.len() >= 10 && lower.as_bytes()[4] == b'-' => {
                    let (date, clock) = match lower.split_once('t') {
                        Some((d, c)) => (d, Some(c)),
                        None => (lower.as_str(), None),
                    };
                    let ymd: Vec<&str> = date.split('-').collect();
                    if ymd.len() != 3 {
                        return Err(invalid(what, input, "expected YYYY-MM-DD[THH:MM[:SS]]"));
                    }
                    let small = |p: &str| -> Result<i16, SpecError> {
                        i16::try_from(number(what, input, p)?)
                            .map_err(|_| invalid(what, input, "no such date"))
                    };
                    let year = small(ymd[0])?;
                    let (month, dom) = (small(ymd[1])?, small(ymd[2])?);
                    let clock = match clock {
                        Some(c) => parse_clock(what, input, c)?,
                        None => jiff::civil::Time::MIN,
                    };
                    if !(1970..=9999).contains(&year) {
                        return Err(invalid(what, input, "no such date"));
                    }
                    let date = i8::try_from(month)
                        .ok()
                        .zip(i8::try_from(dom).ok())
                        .and_then(|(m, d)| jiff::civil::Date::new(year, m, d).ok())
                        .ok_or_else(|| invalid(what, input, "no such date"))?;
                    at(date.to_datetime(clock))?
                }
                _ if lower.contains(':') => of_day(parse_clock_12h(what, input, &lower)?)?,
                _ => return Err(invalid(
                    what,
                    input,
                    "expected now[+N[unit]], HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]], today, tomorrow",
                )),
            }
        };
    u64::try_from(secs)
        .ok()
        .and_then(|s| s.checked_mul(SECOND))
        .ok_or_else(|| invalid(what, input, "before the epoch"))
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

    /// Slurm 22.05 (`time_str2mins`) rounds a limit with seconds up to the next whole minute:
    /// `-t 0:30` is 1 minute, `-t 1:00:30` is 1:01:00, `-t 10:30` is 11 minutes.
    #[test]
    fn time_limit_forms() {
        assert_eq!(lim("10"), 600 * S);
        assert_eq!(lim("10:30"), 660 * S);
        assert_eq!(lim("0:05"), 60 * S);
        assert_eq!(lim("0:30"), 60 * S);
        assert_eq!(lim("1:00:30"), 3660 * S);
        assert_eq!(lim("1:02:03"), 3780 * S);
        assert_eq!(lim("1:02:00"), 3720 * S);
        assert_eq!(lim("2-3"), (2 * 86_400 + 3 * 3600) * S);
        assert_eq!(lim("2-3:04"), (2 * 86_400 + 3 * 3600 + 240) * S);
        assert_eq!(lim("2-3:04:05"), (2 * 86_400 + 3 * 3600 + 300) * S);
        // esched's seconds, which Slurm has no form for.
        assert_eq!(lim("5s"), 5 * S);
        assert_eq!(lim("90s"), 90 * S);
        assert!(parse_time_limit("0s").is_err());
        assert!(parse_time_limit("s").is_err());
        assert_eq!(
            parse_time_exact("1:02:03").unwrap(),
            TimeLimit::Limited(3723 * S)
        );
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
            let e = parse_begin(s, 1_000_000, &fixed_zone(0))
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
        assert_eq!(format_timestamp(NOW, &fixed_zone(0)), "2026-11-22T18:04:57");
        assert_eq!(
            format_timestamp(NOW, &fixed_zone(3600)),
            "2026-11-22T19:04:57"
        );
        assert_eq!(format_timestamp(0, &fixed_zone(0)), "1970-01-01T00:00:00");
        assert_eq!(
            format_timestamp(951_782_400_000, &fixed_zone(0)),
            "2000-02-29T00:00:00"
        );
        assert_eq!(format_opt_timestamp(None, &fixed_zone(0)), "N/A");
    }

    #[test]
    fn begin_relative_forms() {
        let z = fixed_zone(0);
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
        let z = fixed_zone(0);
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

    /// Slurm 22.05's `--begin` takes `HH:MM[:SS]` with `AM`/`PM` (`4:00PM` is 16:00, `12AM`
    /// midnight, `12PM` noon), rolling to tomorrow when past like the 24-hour form.
    #[test]
    fn begin_clock_with_am_pm() {
        let z = fixed_zone(0);
        let f = |s: &str| format_timestamp(parse_begin(s, NOW, &z).unwrap(), &z);
        assert_eq!(f("4:00PM"), f("16:00"));
        assert_eq!(f("4:00 pm"), f("16:00"));
        assert_eq!(f("8:04:58PM"), "2026-11-22T20:04:58");
        assert_eq!(f("9:30AM"), f("09:30"));
        assert_eq!(f("12:00AM"), f("midnight"));
        assert_eq!(f("12:00PM"), f("noon"));
        for bad in ["13:00PM", "0:30AM", "4PM"] {
            assert!(parse_begin(bad, NOW, &z).is_err(), "{bad}");
        }
    }

    #[test]
    fn begin_clock_uses_the_zone() {
        // At 18:04Z it is 03:04 the next morning in UTC+9; "04:00" is 55 minutes away.
        let z = fixed_zone(9 * 3600);
        let t = parse_begin("04:00", NOW, &z).unwrap();
        assert_eq!(format_timestamp(t, &fixed_zone(0)), "2026-11-22T19:00:00");
    }

    #[test]
    fn acct_times_of_day_are_today() {
        let z = fixed_zone(0);
        let f = |s: &str| format_timestamp(parse_acct_time(s, NOW, &z).unwrap(), &z);
        // NOW is 18:04:57: an earlier time of today is today, not tomorrow.
        assert_eq!(f("18:04"), "2026-11-22T18:04:00");
        assert_eq!(f("00:53"), "2026-11-22T00:53:00");
        assert_eq!(f("midnight"), "2026-11-22T00:00:00");
        assert_eq!(f("noon"), "2026-11-22T12:00:00");
        assert_eq!(f("20:00"), "2026-11-22T20:00:00");
        assert_eq!(f("now"), "2026-11-22T18:04:57");
        assert_eq!(f("now-2hours"), "2026-11-22T16:04:57");
        assert_eq!(f("2026-11-01"), "2026-11-01T00:00:00");
        let e = parse_acct_time("soon", NOW, &z).unwrap_err().to_string();
        assert!(e.starts_with("invalid time 'soon'"), "{e}");
    }

    #[test]
    fn daylight_saving_changes_read_compatibly() {
        // Europe/Paris: 2026-03-29 02:30 does not exist (read as 03:30 CEST = 01:30Z);
        // 2026-10-25 02:30 happens twice (read as the first, CEST = 00:30Z).
        // The tz database jiff bundles is always there (feature tzdb-bundle-always).
        let paris = jiff::tz::TimeZone::get("Europe/Paris").unwrap();
        let utc = fixed_zone(0);
        let f = |s: &str| format_timestamp(parse_begin(s, 0, &paris).unwrap(), &utc);
        assert_eq!(f("2026-03-29T02:30"), "2026-03-29T01:30:00");
        assert_eq!(f("2026-10-25T02:30"), "2026-10-25T00:30:00");
    }

    #[test]
    fn begin_dates() {
        let z = fixed_zone(0);
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

    /// Slurm 22.05 prints times as `SLURM_TIME_FORMAT` says: `standard` (the default,
    /// `%FT%T`), `relative`, or any strftime format.
    #[test]
    fn slurm_time_format_styles() {
        let z = fixed_zone(0);
        let day = 86_400 * S;
        // 1970-01-05 (a Monday) 10:20:30.
        let now = 4 * day + 37_230 * S;
        let style = |v: Option<&str>| TimeStyle::from_env_value(v);
        assert_eq!(style(None), TimeStyle::Standard);
        assert_eq!(style(Some("standard")), TimeStyle::Standard);
        assert_eq!(
            format_timestamp_as(now, &z, &style(None), now),
            "1970-01-05T10:20:30"
        );
        assert_eq!(
            format_timestamp_as(now, &z, &style(Some("%a %T")), now),
            "Mon 10:20:30"
        );
        let rel = style(Some("relative"));
        assert_eq!(format_timestamp_as(now, &z, &rel, now), "10:20:30");
        assert_eq!(
            format_timestamp_as(now - day, &z, &rel, now),
            "Ystday 10:20"
        );
        assert_eq!(
            format_timestamp_as(now + day, &z, &rel, now),
            "Tomorr 10:20"
        );
        assert_eq!(
            format_timestamp_as(now + 3 * day, &z, &rel, now),
            "Thu 10:20"
        );
        assert_eq!(
            format_timestamp_as(now + 20 * day, &z, &rel, now),
            "25 Jan 10:20"
        );
        assert_eq!(
            format_timestamp_as(now + 400 * day, &z, &rel, now),
            "9 Feb 1971"
        );
    }

    proptest! {
        #[test]
        fn timestamps_parse_back(secs in 0u64..253_402_300_799, off in -14*3600i32..14*3600) {
            let z = fixed_zone(off);
            let shown = format_timestamp(secs * S, &z);
            prop_assert_eq!(parse_begin(&shown, 0, &z).unwrap(), secs * S);
        }

        #[test]
        fn limit_display_parses_back(secs in 1u64..100*86_400) {
            let shown = format_squeue_duration(secs * S);
            // squeue's M:SS reads back as min:sec, H:MM:SS as h:m:s, D-HH:MM:SS as d-h:m:s
            // (the seconds kept by the exact reading, rounded up to the minute by Slurm's).
            prop_assert_eq!(parse_time_exact(&shown).unwrap(), TimeLimit::Limited(secs * S));
            prop_assert_eq!(lim(&shown), secs.div_ceil(60) * 60 * S);
        }

        #[test]
        fn begin_now_plus_is_monotone(a in 0u64..1_000_000, b in 0u64..1_000_000) {
            let z = fixed_zone(0);
            let ta = parse_begin(&format!("now+{a}"), NOW, &z).unwrap();
            let tb = parse_begin(&format!("now+{b}"), NOW, &z).unwrap();
            prop_assert_eq!(ta <= tb, a <= b);
        }
    }
}
