//! What every tool shares: connecting to batchd, the clock, and Slurm-style error exits.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use batch_proto::{Client, ClientError};
use sched_core::time::Time;

/// Connects to batchd at `socket`, or where `ESCHED_SOCKET` and the defaults say.
pub fn connect(socket: Option<&Path>) -> Result<Client, ClientError> {
    match socket {
        Some(p) => Client::connect(p),
        None => Client::connect_default(),
    }
}

/// The wall clock in ms since the epoch (0 if the clock is before 1970).
pub fn now_ms() -> Time {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Runs a tool's body: an error becomes the one line `TOOL: error: ...` on stderr and exit
/// status 1, as Slurm's tools do.
pub fn run_tool(tool: &str, body: impl FnOnce() -> anyhow::Result<ExitCode>) -> ExitCode {
    match body() {
        Ok(code) => code,
        Err(e) => {
            // A closed stdout (`equeue | head`) is not worth a message.
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    return ExitCode::from(1);
                }
            }
            let _ = writeln!(std::io::stderr(), "{tool}: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Writes `text` to stdout, reporting a failure (e.g. a closed pipe) as an error.
pub fn print_out(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Splits comma-separated values of options that may also be repeated (`-j 1,2 -j 3`).
pub fn split_list(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Parses job ids given as `12`, `12,13` or repeated.
pub fn parse_ids(values: &[String]) -> anyhow::Result<Vec<u64>> {
    split_list(values)
        .iter()
        .map(|s| {
            s.parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| anyhow::anyhow!("Invalid job id specified: {s}"))
        })
        .collect()
}

/// The name of the user running the tool (or the uid as text when it has none).
pub fn current_user() -> String {
    let uid = nix::unistd::getuid();
    nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map_or_else(|| uid.as_raw().to_string(), |u| u.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ids() {
        let v = vec!["1,2".to_string(), " 3 ".to_string(), ",".to_string()];
        assert_eq!(split_list(&v), vec!["1", "2", "3"]);
        assert_eq!(parse_ids(&v).unwrap(), vec![1, 2, 3]);
        let e = parse_ids(&["1,x".to_string()]).unwrap_err().to_string();
        assert_eq!(e, "Invalid job id specified: x");
        assert!(parse_ids(&["0".to_string()]).is_err());
    }
}
