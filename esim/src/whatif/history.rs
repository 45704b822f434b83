//! `--runtime history` (`--history FILE`): each user's past ratio of run time to time limit,
//! from a file exported by `eacct`.
//!
//! Two exports are read (docs/whatif.md):
//!
//! - `eacct -a -P -o User,ElapsedRaw,TimelimitRaw` (sacct's `--parsable2`, with its header
//!   line: the columns are found by name, so more may be asked for, `State` among them);
//! - `eacct -a --json` (Slurm 22.05's `sacct --json`: `jobs[].user`, `jobs[].time.elapsed` in
//!   seconds, `jobs[].time.limit` in minutes, `jobs[].state.current`; and Slurm 23.02's
//!   state lists and `{"set", "infinite", "number"}` numbers).
//!
//! A user's ratio is their jobs' total run time over their total limit (long jobs weigh more,
//! as they do in the plan), capped at 1; jobs that never ran, still run, or have no limit are
//! left out.

use anyhow::{bail, Context};
use sched_sim::whatif::History;

/// Whether a job in `state` is over: what a ratio is learnt from. Only Slurm's final states
/// count (a suspended, resizing or signalled job is still running); `CANCELLED by 0` is
/// `CANCELLED`. An export without a state column counts every row.
fn counts(state: Option<&str>) -> bool {
    state.is_none_or(|s| {
        matches!(
            s.split_whitespace().next().unwrap_or(""),
            "COMPLETED"
                | "FAILED"
                | "CANCELLED"
                | "TIMEOUT"
                | "PREEMPTED"
                | "DEADLINE"
                | "NODE_FAIL"
                | "OUT_OF_MEMORY"
                | "BOOT_FAIL"
        )
    })
}

/// A job's state in a `--json` export: a string (Slurm 22.05, eacct), or a list of flags
/// whose first is the state (Slurm 23.02 on).
fn json_state(v: &serde_json::Value) -> Option<&str> {
    v.as_str().or_else(|| v.as_array()?.first()?.as_str())
}

/// A number in a `--json` export: plain (Slurm 22.05, eacct), or Slurm 23.02's `{"set",
/// "infinite", "number"}` (none when unset or infinite).
fn json_number(v: &serde_json::Value) -> Option<f64> {
    if let Some(n) = v.as_f64() {
        return Some(n);
    }
    let set = v["set"].as_bool().unwrap_or(true) && !v["infinite"].as_bool().unwrap_or(false);
    set.then(|| v["number"].as_f64()).flatten()
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
            if !counts(json_state(&j["state"]["current"])) {
                continue;
            }
            let (Some(user), Some(elapsed), Some(limit)) = (
                j["user"].as_str(),
                json_number(&j["time"]["elapsed"]),
                json_number(&j["time"]["limit"]),
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
    fn slurm_23_json_states_and_numbers_are_read_and_live_jobs_left_out() {
        let text = r#"{"jobs":[
            {"user":"ann","state":{"current":["COMPLETED"]},
             "time":{"elapsed":30,"limit":{"set":true,"infinite":false,"number":1}}},
            {"user":"ann","state":{"current":["SUSPENDED"]},"time":{"elapsed":9,"limit":1}},
            {"user":"bob","state":{"current":["TIMEOUT"]},
             "time":{"elapsed":60,"limit":{"set":false,"infinite":true,"number":0}}}]}"#;
        let h = parse(text).unwrap();
        assert!((h.ratios["ann"] - 0.5).abs() < 1e-9);
        // bob's only job had no limit to learn a ratio from.
        assert_eq!(h.ratios.len(), 1);
    }

    #[test]
    fn eacct_rows_of_steps_and_cancellations_are_read_as_eacct_prints_them() {
        // `eacct -a -P -o User,ElapsedRaw,TimelimitRaw,State`: a step's row has no user,
        // sacct's cancelled state names who cancelled.
        let text = "User|ElapsedRaw|TimelimitRaw|State\n\
                    ann|60|2|COMPLETED\n\
                    |60||COMPLETED\n\
                    ann|60|2|CANCELLED by 0\n\
                    ann|5|2|SUSPENDED\n";
        let h = parse(text).unwrap();
        assert!((h.ratios["ann"] - 0.5).abs() < 1e-9);
    }

    #[test]
    fn a_header_without_the_columns_is_refused() {
        let e = parse("JobID|State\n1|COMPLETED\n").unwrap_err().to_string();
        assert!(e.contains("ElapsedRaw"), "{e}");
    }
}
