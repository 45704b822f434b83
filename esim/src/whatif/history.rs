//! `--runtime history:FILE`: each user's past ratio of run time to time limit, from a file
//! exported by `eacct`.
//!
//! Two exports are read (docs/whatif.md):
//!
//! - `eacct -a -P -o User,ElapsedRaw,TimelimitRaw` (sacct's `--parsable2`, with its header
//!   line: the columns are found by name, so more may be asked for, `State` among them);
//! - `eacct -a --json` (Slurm 22.05's `sacct --json`: `jobs[].user`, `jobs[].time.elapsed` in
//!   seconds, `jobs[].time.limit` in minutes, `jobs[].state.current`).
//!
//! A user's ratio is their jobs' total run time over their total limit (long jobs weigh more,
//! as they do in the plan), capped at 1; jobs that never ran, still run, or have no limit are
//! left out.

use anyhow::{bail, Context};
use sched_sim::whatif::History;

/// The states of jobs that are over and ran: what a ratio is learnt from.
fn counts(state: Option<&str>) -> bool {
    !matches!(
        state.map(|s| s.split_whitespace().next().unwrap_or("")),
        Some("PENDING" | "RUNNING" | "REQUEUED" | "COMPLETING" | "")
    )
}

/// Reads an `eacct` export ([module documentation](self)).
pub fn parse(text: &str) -> anyhow::Result<History> {
    let mut sums: std::collections::HashMap<String, (f64, f64)> = Default::default();
    let mut add = |user: &str, elapsed_s: f64, limit_s: f64| {
        if elapsed_s > 0.0 && limit_s > 0.0 {
            let e = sums.entry(user.to_string()).or_default();
            e.0 += elapsed_s.min(limit_s);
            e.1 += limit_s;
        }
    };
    if text.trim_start().starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(text).context("not eacct --json")?;
        let jobs = v["jobs"]
            .as_array()
            .context("eacct --json: no `jobs` list")?;
        for j in jobs {
            if !counts(j["state"]["current"].as_str()) {
                continue;
            }
            let (Some(user), Some(elapsed), Some(limit)) = (
                j["user"].as_str(),
                j["time"]["elapsed"].as_f64(),
                j["time"]["limit"].as_f64(),
            ) else {
                continue;
            };
            add(user, elapsed, limit * 60.0);
        }
    } else {
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let header = lines.next().context("empty history file")?;
        let names: Vec<String> = header.split('|').map(|h| h.trim().to_lowercase()).collect();
        let col = |name: &str| names.iter().position(|n| n == name);
        let (Some(u), Some(e), Some(l)) = (col("user"), col("elapsedraw"), col("timelimitraw"))
        else {
            bail!(
                "the history file's header must name User, ElapsedRaw and TimelimitRaw \
                 (eacct -a -P -o User,ElapsedRaw,TimelimitRaw), got `{header}`"
            );
        };
        let state = col("state");
        for (n, line) in lines.enumerate() {
            let f: Vec<&str> = line.split('|').collect();
            let get = |i: usize| f.get(i).map(|s| s.trim());
            if !counts(state.and_then(get)) {
                continue;
            }
            let (Some(user), Some(elapsed), Some(limit)) = (get(u), get(e), get(l)) else {
                bail!("line {}: fewer fields than the header", n + 2);
            };
            // A job array's or a step's rows repeat the job's figures with no user: skip them.
            if user.is_empty() {
                continue;
            }
            let (Ok(elapsed), Ok(limit)) = (elapsed.parse::<f64>(), limit.parse::<f64>()) else {
                continue;
            };
            add(user, elapsed, limit * 60.0);
        }
    }
    Ok(History {
        ratios: sums
            .into_iter()
            .map(|(user, (run, limit))| (user, (run / limit).min(1.0)))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsable2_with_its_header_gives_each_users_ratio() {
        let text = "User|State|ElapsedRaw|TimelimitRaw\n\
                    ann|COMPLETED|30|1\n\
                    ann|TIMEOUT|120|2\n\
                    bob|COMPLETED|600|60\n\
                    bob|RUNNING|1|60\n\
                    cid|PENDING|0|10\n";
        let h = parse(text).unwrap();
        // ann: (30 + 120) / (60 + 120).
        assert!((h.ratios["ann"] - 150.0 / 180.0).abs() < 1e-9);
        assert!((h.ratios["bob"] - 600.0 / 3600.0).abs() < 1e-9);
        assert!(!h.ratios.contains_key("cid"));
    }

    #[test]
    fn sacct_json_gives_the_same() {
        let text = r#"{"meta":{},"errors":[],"jobs":[
            {"user":"ann","state":{"current":"COMPLETED"},"time":{"elapsed":30,"limit":1}},
            {"user":"ann","state":{"current":"TIMEOUT"},"time":{"elapsed":120,"limit":2}},
            {"user":"bob","state":{"current":"PENDING"},"time":{"elapsed":0,"limit":5}}]}"#;
        let h = parse(text).unwrap();
        assert!((h.ratios["ann"] - 150.0 / 180.0).abs() < 1e-9);
        assert_eq!(h.ratios.len(), 1);
    }

    #[test]
    fn a_header_without_the_columns_is_refused() {
        let e = parse("JobID|State\n1|COMPLETED\n").unwrap_err().to_string();
        assert!(e.contains("ElapsedRaw"), "{e}");
    }
}
