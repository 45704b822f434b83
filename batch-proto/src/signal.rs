//! Signals as users name them, for `ecancel --signal` and batchd's `[evolving] signal`, and
//! sbatch's `--signal` ([`JobSignal`]): a signal sent some time before a job's time limit.

use std::fmt;

use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

/// A signal by name (`TERM`, `SIGTERM`, any case) or number; `None` if it is neither.
pub fn parse_signal(s: &str) -> Option<Signal> {
    let t = s.trim();
    if let Ok(n) = t.parse::<i32>() {
        return Signal::try_from(n).ok();
    }
    let up = t.to_ascii_uppercase();
    let name = if up.starts_with("SIG") {
        up
    } else {
        format!("SIG{up}")
    };
    name.parse().ok()
}

/// sbatch's `--signal=[{R|B}:]SIG[@SECONDS]`: send `signal` `before` seconds before the job's
/// time limit (the job is still killed at the limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSignal {
    /// The signal's number.
    pub signal: i32,
    /// Seconds before the time limit (sbatch's `@SECONDS`, 0 to 65535, default 60).
    pub before: u16,
    /// `B:`: the batch shell only. Without it every process of the job but the batch shell
    /// gets it (sbatch signals the job steps, not the batch shell; esched has no steps, so the
    /// processes the script started stand for them).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub batch_only: bool,
}

/// sbatch's default `@SECONDS`.
pub const DEFAULT_SIGNAL_BEFORE: u16 = 60;

impl JobSignal {
    /// Parses `[{R|B}:]SIG[@SECONDS]`: SIG a name (`USR1`, `SIGUSR1`, any case) or a number,
    /// SECONDS 0 to 65535 (default 60). `R:` concerns Slurm's reservations with
    /// `MaxStartDelay`, which esched does not have: accepted, it changes nothing. The error is
    /// the reason, one line.
    pub fn parse(s: &str) -> Result<JobSignal, String> {
        let mut rest = s.trim();
        let mut batch_only = false;
        // Flags before the `:` (sbatch takes `B:`, `R:`, and both as `BR:`/`RB:`).
        if let Some((flags, after)) = rest.split_once(':') {
            if flags.is_empty() || !flags.chars().all(|c| matches!(c, 'B' | 'R' | 'b' | 'r')) {
                return Err(format!(
                    "'{flags}:' is not a flag (expected B: for the batch shell only, or R:)"
                ));
            }
            batch_only = flags.contains(['B', 'b']);
            rest = after;
        }
        let (sig, before) = match rest.split_once('@') {
            Some((sig, t)) => {
                let before = t
                    .trim()
                    .parse::<u16>()
                    .map_err(|_| format!("'@{t}' is not a number of seconds from 0 to 65535"))?;
                (sig, before)
            }
            None => (rest, DEFAULT_SIGNAL_BEFORE),
        };
        if sig.trim().is_empty() {
            return Err("no signal given (e.g. USR1@90)".into());
        }
        let signal = parse_signal(sig)
            .filter(|s| *s != Signal::SIGKILL && *s != Signal::SIGSTOP)
            .ok_or_else(|| {
                format!(
                    "'{sig}' is not a signal that can be caught (a name like USR1, or a number)"
                )
            })?;
        Ok(JobSignal {
            signal: signal as i32,
            before,
            batch_only,
        })
    }
}

impl fmt::Display for JobSignal {
    /// sbatch's syntax, with the signal's name: `B:USR1@90`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = Signal::try_from(self.signal).map_or_else(
            |_| self.signal.to_string(),
            |s| s.as_str().trim_start_matches("SIG").to_string(),
        );
        let flag = if self.batch_only { "B:" } else { "" };
        write!(f, "{flag}{name}@{}", self.before)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sbatch_signal_forms() {
        let p = |s: &str| JobSignal::parse(s).map(|j| j.to_string());
        assert_eq!(p("USR1").as_deref(), Ok("USR1@60"));
        assert_eq!(p("B:SIGUSR2@90").as_deref(), Ok("B:USR2@90"));
        assert_eq!(p("10@0").as_deref(), Ok("USR1@0"));
        assert_eq!(p("R:TERM@65535").as_deref(), Ok("TERM@65535"));
        assert_eq!(p("RB:usr1@5").as_deref(), Ok("B:USR1@5"));
        for bad in [
            "",
            "@60",
            "USR1@",
            "USR1@65536",
            "USR1@-1",
            "USR1@x",
            "NOPE",
            "X:USR1",
            ":USR1",
            "KILL",
            "999@5",
        ] {
            let e = JobSignal::parse(bad).unwrap_err();
            assert!(!e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn names_in_any_case_with_or_without_sig_and_numbers() {
        assert_eq!(parse_signal("usr1"), Some(Signal::SIGUSR1));
        assert_eq!(parse_signal(" SIGWINCH "), Some(Signal::SIGWINCH));
        assert_eq!(parse_signal("15"), Some(Signal::SIGTERM));
        assert_eq!(parse_signal("NOPE"), None);
        assert_eq!(parse_signal("999"), None);
        assert_eq!(parse_signal(""), None);
    }
}
