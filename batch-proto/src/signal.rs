//! Signals as users name them, for `ecancel --signal` and batchd's `[evolving] signal`.

use nix::sys::signal::Signal;

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

#[cfg(test)]
mod tests {
    use super::*;

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
