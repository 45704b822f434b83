//! `esim whatif SNAPSHOT --policy A --policy B:KEY=VALUE …`: a daemon's snapshot file
//! (`econtrol snapshot`) replayed under the policy in force and under each policy asked for,
//! side by side (docs/whatif.md).
//!
//! The replays are sched-sim's ([`sched_sim::whatif::replay`]), each on a fresh instance of its
//! policy, found the way batchd finds one: its library by name in `$ESCHED_PLUGIN_DIR`, else
//! in the daemon's plugin directory the snapshot names, else next to esim; for a stock
//! policy whose library is not found, the copy linked into esim (as batchd falls back on its
//! own).

pub mod history;
pub mod svg;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Args;
use sched_abi::{HostedPolicy, LoadError, PolicyHost};
use sched_core::Params;
use sched_sim::whatif::{replay, Outcome, Replay, Runtime, SnapshotFile};
use serde::Serialize;

/// `esim whatif`.
#[derive(Debug, Args)]
pub struct WhatifArgs {
    /// The snapshot file (`econtrol snapshot FILE`); `-` reads it from standard input.
    #[arg(value_name = "SNAPSHOT")]
    pub snapshot: PathBuf,
    /// A policy to compare with the one in force: `NAME` or `NAME:KEY=VALUE[,KEY=VALUE…]`
    /// (`evolving:expand=2X` is `evolving:expand_limit=2`, `expand=2X+c` also sets
    /// `compact=true`); repeatable. The policy in force is always the first row.
    #[arg(long = "policy", value_name = "SPEC")]
    pub policies: Vec<String>,
    /// How long each job runs: `walltime` (to its limit, what every plan assumes; the
    /// default), `ratio:X` (X of its limit), or `history` (each user's past ratio, from the
    /// `--history` file; `history:FILE` names it here; users with no past run to their
    /// limit).
    #[arg(long, value_name = "MODEL")]
    pub runtime: Option<String>,
    /// The accounting export `--runtime history` learns from (given alone, it implies
    /// `--runtime history`): `eacct -a -P -o User,ElapsedRaw,TimelimitRaw` or `eacct -a
    /// --json`.
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// How the tables, JSON and pictures name the `--history` file (`econtrol whatif` names
    /// the export it made of the daemon's accounting, a temporary file).
    #[arg(long, value_name = "TEXT", requires = "history", hide = true)]
    pub history_label: Option<String>,
    /// Print everything as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Also write the plans, one above the other, as an SVG file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Also write that picture as a PNG file.
    #[arg(long, value_name = "FILE")]
    pub png: Option<PathBuf>,
    /// How many of the jobs that move most between policies to list.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub movers: usize,
    /// Use the policies linked into esim, not their libraries.
    #[arg(long)]
    pub linked: bool,
}

/// A policy to replay under: its row label, name and parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// How the tables name it: the spec as given, `current: NAME` for the policy in force.
    pub label: String,
    /// The policy's name or library path.
    pub name: String,
    /// Its parameters.
    pub params: BTreeMap<String, String>,
}

/// Parses `NAME[:KEY=VALUE[,KEY=VALUE…]]`.
pub fn parse_spec(spec: &str) -> anyhow::Result<Choice> {
    let (name, rest) = match spec.split_once(':') {
        Some((n, r)) => (n, Some(r)),
        None => (spec, None),
    };
    if name.is_empty() {
        bail!("`{spec}`: no policy name before `:`");
    }
    let mut params = BTreeMap::new();
    for kv in rest
        .into_iter()
        .flat_map(|r| r.split(','))
        .filter(|s| !s.is_empty())
    {
        let Some((k, v)) = kv.split_once('=') else {
            bail!("`{spec}`: `{kv}` is not KEY=VALUE");
        };
        let (k, v) = (k.trim(), v.trim());
        // The papers' names of the evolving variants (Klein & Pérez: noX, 2X, infX, +c).
        if k == "expand" {
            let (limit, compact) = match v.strip_suffix("+c") {
                Some(l) => (l, true),
                None => (v, false),
            };
            let limit = limit.trim_end_matches(['X', 'x']);
            let limit = if limit.eq_ignore_ascii_case("no") {
                "1"
            } else {
                limit
            };
            params.insert("expand_limit".to_string(), limit.to_string());
            if compact {
                params.insert("compact".to_string(), "true".to_string());
            }
        } else {
            params.insert(k.to_string(), v.to_string());
        }
    }
    Ok(Choice {
        label: spec.to_string(),
        name: name.to_string(),
        params,
    })
}

/// The run-time model `--runtime` and `--history` name, as one `--runtime` text:
/// `history` with `--history FILE` is `history:FILE`, and `--history FILE` alone too.
pub fn runtime_text(runtime: Option<&str>, history: Option<&Path>) -> anyhow::Result<String> {
    match (runtime, history) {
        (None, None) => Ok("walltime".to_string()),
        (None | Some("history"), Some(file)) => Ok(format!("history:{}", file.display())),
        (Some("history"), None) => bail!(
            "--runtime history learns from an accounting export: name it with --history FILE \
             (from `eacct -a -P -o User,ElapsedRaw,TimelimitRaw` or `eacct -a --json`)"
        ),
        (Some(other), Some(_)) => bail!(
            "--history FILE goes with --runtime history (or alone), not with --runtime {other}: \
             drop one of them"
        ),
        (Some(text), None) => Ok(text.to_string()),
    }
}

/// Parses a `--runtime` text ([`runtime_text`]).
pub fn parse_runtime(text: &str) -> anyhow::Result<Runtime> {
    if text == "walltime" {
        return Ok(Runtime::Walltime);
    }
    if let Some(r) = text.strip_prefix("ratio:") {
        let r: f64 = r
            .parse()
            .with_context(|| format!("--runtime ratio:{r}: not a number"))?;
        if !(r > 0.0 && r <= 1.0) {
            bail!("--runtime ratio:{r}: the ratio must be in (0, 1]");
        }
        return Ok(Runtime::Ratio(r));
    }
    if let Some(path) = text.strip_prefix("history:") {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the history file {path}"))?;
        return Ok(Runtime::History(
            history::parse(&text).with_context(|| format!("history file {path}"))?,
        ));
    }
    bail!("--runtime {text}: expected walltime, ratio:X, history (with --history FILE) or history:FILE")
}

/// The policy `choice` under containment, found as batchd finds it (module documentation).
pub fn host(
    choice: &Choice,
    plugin_dir: Option<&Path>,
    linked: bool,
) -> anyhow::Result<PolicyHost> {
    let params = Params::from_pairs(choice.params.iter().map(|(k, v)| (k.clone(), v.clone())));
    let name = choice.name.as_str();
    let linked_copy = || -> anyhow::Result<PolicyHost> {
        let stock = esched_stock::find(name).with_context(|| {
            format!(
                "unknown policy `{name}` (policies shipped with esched: {})",
                esched_stock::known()
            )
        })?;
        let p = (stock.hosted)(&params).map_err(|e| anyhow::anyhow!("policy `{name}`: {e}"))?;
        Ok(PolicyHost::boxed(p))
    };
    if linked {
        return linked_copy();
    }
    let env = std::env::var_os("ESCHED_PLUGIN_DIR").map(PathBuf::from);
    let dir = env.as_deref().or(plugin_dir);
    match sched_abi::load(name, dir, &params) {
        Ok(p) => Ok(PolicyHost::boxed(
            Box::new(p) as Box<dyn HostedPolicy + Send>
        )),
        Err(e @ LoadError::Params { .. }) => Err(e.into()),
        Err(e) if esched_stock::find(name).is_some() => {
            tracing::debug!(policy = name, "{e}; running the linked copy");
            linked_copy()
        }
        Err(e) => Err(e.into()),
    }
}

/// One policy's replay, timed.
#[derive(Debug, Serialize)]
pub struct Row {
    /// The row's label.
    pub label: String,
    /// The policy.
    pub policy: String,
    /// Its parameters.
    pub params: BTreeMap<String, String>,
    /// Wall-clock time of the replay, ms (the policy's construction included).
    pub compute_ms: f64,
    /// The replay.
    #[serde(flatten)]
    pub replay: Replay,
}

/// A job whose start differs most between the policies.
#[derive(Debug, Serialize)]
pub struct Mover {
    /// The job.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// Its start under each row, ms since the epoch (`None`: it does not start).
    pub starts: Vec<Option<u64>>,
    /// Latest start minus earliest, seconds (a job that starts under some and not others
    /// moves most of all).
    pub spread: f64,
}

/// Everything `esim whatif` reports.
#[derive(Debug, Serialize)]
pub struct Comparison {
    /// The snapshot's instant, ms since the epoch.
    pub now: u64,
    /// The snapshot's format version.
    pub version: u32,
    /// The run-time model.
    pub runtime: String,
    /// Pools' nodes in all.
    pub nodes: u64,
    /// One row per policy, the policy in force first.
    pub policies: Vec<Row>,
    /// The jobs that move most, most first.
    pub movers: Vec<Mover>,
    /// Wall-clock time of all the replays, ms.
    pub compute_ms: f64,
}

/// Reads a snapshot file (`-`: standard input).
pub fn read_snapshot(path: &Path) -> anyhow::Result<SnapshotFile> {
    let text = if path == Path::new("-") {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("cannot read the snapshot from standard input")?;
        s
    } else {
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?
    };
    SnapshotFile::from_json(&text).with_context(|| format!("{}", path.display()))
}

/// The policy in force, then each of `specs` (one given as the policy in force, with the same
/// parameters, is not repeated).
pub fn choices(snap: &SnapshotFile, specs: &[String]) -> anyhow::Result<Vec<Choice>> {
    let current = Choice {
        label: format!("current: {}", snap.policy.name),
        name: snap.policy.name.clone(),
        params: snap.policy.params.clone(),
    };
    let mut out = vec![current];
    for s in specs {
        let c = parse_spec(s)?;
        if !out.iter().any(|o| o.name == c.name && o.params == c.params) {
            out.push(c);
        }
    }
    Ok(out)
}

/// Replays `snap` under each of `choices`.
pub fn compare(
    snap: &SnapshotFile,
    choices: &[Choice],
    runtime: &Runtime,
    runtime_text: &str,
    movers: usize,
    linked: bool,
) -> anyhow::Result<Comparison> {
    let dir = snap.policy.plugin_dir.as_deref().map(Path::new);
    let t0 = Instant::now();
    let mut rows = Vec::new();
    for c in choices {
        let t = Instant::now();
        let mut host = host(c, dir, linked)?;
        let replay = replay(snap, &mut host, runtime)
            .with_context(|| format!("replay under {}", c.label))?;
        rows.push(Row {
            label: c.label.clone(),
            policy: c.name.clone(),
            params: c.params.clone(),
            compute_ms: t.elapsed().as_secs_f64() * 1e3,
            replay,
        });
    }
    let compute_ms = t0.elapsed().as_secs_f64() * 1e3;
    let movers = most_moved(&rows, movers);
    Ok(Comparison {
        now: snap.now,
        version: snap.version,
        runtime: runtime_text.to_string(),
        nodes: snap.nodes(),
        policies: rows,
        movers,
        compute_ms,
    })
}

/// The `n` pending jobs whose starts differ most between rows.
fn most_moved(rows: &[Row], n: usize) -> Vec<Mover> {
    let Some(first) = rows.first() else {
        return Vec::new();
    };
    let mut all: Vec<Mover> = first
        .replay
        .pending
        .iter()
        .enumerate()
        .map(|(i, j)| {
            let starts: Vec<Option<u64>> = rows
                .iter()
                .map(|r| r.replay.pending.get(i).and_then(|p| p.start))
                .collect();
            let known: Vec<u64> = starts.iter().flatten().copied().collect();
            let spread = match (known.iter().min(), known.iter().max()) {
                _ if known.is_empty() => 0.0,
                _ if known.len() < starts.len() => f64::INFINITY,
                (Some(lo), Some(hi)) => (hi - lo) as f64 / 1e3,
                _ => 0.0,
            };
            Mover {
                id: j.id,
                name: j.name.clone(),
                starts,
                spread,
            }
        })
        .filter(|m| m.spread > 0.0)
        .collect();
    all.sort_by(|a, b| b.spread.total_cmp(&a.spread).then(a.id.cmp(&b.id)));
    all.truncate(n);
    all
}

/// `+H:MM:SS` from the snapshot, `-` for no start.
fn offset(now: u64, t: Option<u64>) -> String {
    match t {
        None => "-".into(),
        Some(t) => {
            let s = t.saturating_sub(now) / 1000;
            format!("+{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
        }
    }
}

/// The tables `esim whatif` prints.
pub fn tables(snap: &SnapshotFile, c: &Comparison) -> String {
    let mut s = String::new();
    let held = snap.pending.iter().filter(|p| p.held).count();
    let _ =
        writeln!(
        s,
        "snapshot at {} (version {}): {} pending ({} held), {} running, {} nodes; run times: {}",
        esched_report::plot::utc_timestamp(c.now),
        c.version,
        snap.pending.len(),
        held,
        snap.running.iter().filter(|r| r.holder == sched_sim::whatif::Holder::Job).count(),
        c.nodes,
        c.runtime
    );
    let w = c
        .policies
        .iter()
        .map(|r| r.label.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let _ =
        writeln!(
        s,
        "\n{:<w$}  {:>7}  {:>9}  {:>9}  {:>9}  {:>8}  {:>8}  {:>8}  {:>6}  {:>10}  {:>5}  {:>8}",
        "POLICY", "STARTED", "WAIT_MEAN", "WAIT_MED", "WAIT_P95", "BSLD", "BSLD_MED", "BSLD_P95",
        "UTIL", "HORIZON", "CALLS", "MS"
    );
    for r in &c.policies {
        let m = &r.replay.summary;
        // Waits and slowdowns of no started job are no figures: shown `-`, not 0.
        let fig = |v: f64, digits: usize| match m.started {
            0 => "-".to_string(),
            _ => format!("{v:.digits$}"),
        };
        let _ = writeln!(
            s,
            "{:<w$}  {:>7}  {:>9}  {:>9}  {:>9}  {:>8}  {:>8}  {:>8}  {:>5.1}%  {:>10}  {:>5}  {:>8.2}",
            r.label,
            format!("{}/{}", m.started, m.started + m.not_started),
            fig(m.wait.mean, 0),
            fig(m.wait.median, 0),
            fig(m.wait.p95, 0),
            fig(m.bounded_slowdown.mean, 2),
            fig(m.bounded_slowdown.median, 2),
            fig(m.bounded_slowdown.p95, 2),
            m.utilisation * 100.0,
            offset(0, Some((m.horizon * 1e3) as u64)),
            r.replay.calls,
            r.compute_ms
        );
    }
    let cols = |s: &mut String, id: &str, name: &str, cells: &[String]| {
        let _ = write!(s, "{id:>8}  {name:<12.12}");
        for (cell, r) in cells.iter().zip(&c.policies) {
            let _ = write!(s, "  {cell:>width$}", width = r.label.len().max(10));
        }
        s.push('\n');
    };
    let labels: Vec<String> = c.policies.iter().map(|r| r.label.clone()).collect();
    if !c.movers.is_empty() {
        let _ = writeln!(
            s,
            "\njobs that move most between policies (start from the snapshot):"
        );
        cols(&mut s, "JOBID", "NAME", &labels);
        for m in &c.movers {
            let cells: Vec<String> = m.starts.iter().map(|t| offset(c.now, *t)).collect();
            cols(&mut s, &m.id.to_string(), &m.name, &cells);
        }
    }
    let _ = writeln!(
        s,
        "\nexpected start of every pending job (from the snapshot):"
    );
    cols(&mut s, "JOBID", "NAME", &labels);
    if let Some(first) = c.policies.first() {
        for (i, j) in first.replay.pending.iter().enumerate() {
            let cells: Vec<String> = c
                .policies
                .iter()
                .map(|r| match r.replay.pending.get(i) {
                    Some(p) if p.start.is_some() => offset(c.now, p.start),
                    Some(p) => outcome(&p.outcome).to_string(),
                    None => "-".into(),
                })
                .collect();
            cols(&mut s, &j.id.to_string(), &j.name, &cells);
        }
    }
    let _ = writeln!(
        s,
        "\ncomputed in {:.1} ms ({} replays of {} pending jobs)",
        c.compute_ms,
        c.policies.len(),
        snap.pending.len()
    );
    s
}

fn outcome(o: &Outcome) -> &'static str {
    match o {
        Outcome::Started => "started",
        Outcome::Held => "held",
        Outcome::DependencyNever => "never",
        Outcome::Rejected => "rejected",
        Outcome::NotStarted => "-",
    }
}

/// Says on standard error which users of the snapshot the history has no ratio for: their
/// jobs run to their limits, as under `walltime` (all of them when the file taught nothing).
fn warn_unknown_users(snap: &SnapshotFile, h: &sched_sim::whatif::History, text: &str) {
    let users: std::collections::BTreeSet<&str> = snap
        .running
        .iter()
        .map(|r| r.user_name.as_str())
        .chain(snap.pending.iter().map(|p| p.user_name.as_str()))
        .collect();
    let unknown: Vec<&str> = users
        .iter()
        .copied()
        .filter(|u| !h.ratios.contains_key(*u))
        .collect();
    if h.ratios.is_empty() {
        eprintln!(
            "warning: run times by {text}: no finished job with a run time and a limit; \
             every job runs to its limit, as under walltime"
        );
    } else if !unknown.is_empty() {
        eprintln!(
            "warning: run times by {text}: no past job of {} of the {} users in the snapshot \
             ({}); their jobs run to their limits",
            unknown.len(),
            users.len(),
            match unknown.len() {
                0..=5 => unknown.join(", "),
                n => format!("{}, and {} more", unknown[..4].join(", "), n - 4),
            }
        );
    }
}

/// `esim whatif`.
pub fn run(args: &WhatifArgs) -> anyhow::Result<()> {
    let snap = read_snapshot(&args.snapshot)?;
    let mut runtime_text = runtime_text(args.runtime.as_deref(), args.history.as_deref())?;
    let runtime = parse_runtime(&runtime_text)?;
    if let Runtime::History(h) = &runtime {
        if let Some(label) = &args.history_label {
            runtime_text = format!("history ({label})");
        }
        warn_unknown_users(&snap, h, &runtime_text);
    }
    let choices = choices(&snap, &args.policies)?;
    let c = compare(
        &snap,
        &choices,
        &runtime,
        &runtime_text,
        args.movers,
        args.linked,
    )?;
    if args.svg.is_some() || args.png.is_some() {
        let plans: Vec<(String, &Replay)> = c
            .policies
            .iter()
            .map(|r| (r.label.clone(), &r.replay))
            .collect();
        let text = svg::plans(&snap, &plans, &runtime_text)?;
        crate::output::write_picture(&text, args.svg.as_deref(), args.png.as_deref())?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&c)?);
    } else {
        print!("{}", tables(&snap, &c));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_take_params_and_the_papers_names_of_the_evolving_variants() {
        let c = parse_spec("evolving:expand=2X").unwrap();
        assert_eq!(c.name, "evolving");
        assert_eq!(c.params["expand_limit"], "2");
        let c = parse_spec("evolving:expand=infX+c").unwrap();
        assert_eq!(c.params["expand_limit"], "inf");
        assert_eq!(c.params["compact"], "true");
        assert_eq!(
            parse_spec("evolving:expand=noX").unwrap().params["expand_limit"],
            "1"
        );
        let c = parse_spec("cbf:a=1,b=x").unwrap();
        assert_eq!((c.params["a"].as_str(), c.params["b"].as_str()), ("1", "x"));
        assert!(parse_spec("cbf:oops").is_err());
        assert!(parse_spec(":a=1").is_err());
        assert!(parse_spec("easy").unwrap().params.is_empty());
    }

    #[test]
    fn runtime_models_parse_and_bad_ones_are_refused() {
        assert_eq!(parse_runtime("walltime").unwrap(), Runtime::Walltime);
        assert_eq!(parse_runtime("ratio:0.5").unwrap(), Runtime::Ratio(0.5));
        assert!(parse_runtime("ratio:0").is_err());
        assert!(parse_runtime("ratio:2").is_err());
        assert!(parse_runtime("history:/no/such/file").is_err());
        assert!(parse_runtime("median").is_err());
    }

    #[test]
    fn history_is_named_by_its_file_either_way() {
        let f = Path::new("/x/acct.txt");
        assert_eq!(runtime_text(None, None).unwrap(), "walltime");
        assert_eq!(runtime_text(Some("ratio:0.5"), None).unwrap(), "ratio:0.5");
        assert_eq!(
            runtime_text(Some("history"), Some(f)).unwrap(),
            "history:/x/acct.txt"
        );
        assert_eq!(runtime_text(None, Some(f)).unwrap(), "history:/x/acct.txt");
        let e = runtime_text(Some("history"), None).unwrap_err().to_string();
        assert!(e.contains("--history FILE"), "{e}");
        assert!(runtime_text(Some("walltime"), Some(f)).is_err());
    }
}
