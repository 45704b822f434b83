//! Slurm underneath: the commands batchd runs, as an ordinary user of a Slurm cluster, to hold
//! the allocations its pools of `[pool.slurm]` stand on and to run its jobs as steps in them.
//!
//! batchd asks Slurm for nothing an ordinary user cannot: `salloc --no-shell` for an
//! allocation, `srun --jobid` for a step in it, `squeue`/`sinfo` to learn how it stands and
//! `scancel` to give it back. What it holds is kept in `slurm.json` of its state directory, so
//! that a restarted batchd finds its allocations again rather than asking for new ones.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use crate::config::SlurmConfig;

/// The file, in the state directory, of the allocations batchd holds.
pub const FILE: &str = "slurm.json";

pub use batch_proto::jobstep::{crossing, is_slurm_variable, SlurmStep, KEEP_PREFIX as KEEP};

/// One allocation batchd holds for a pool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allocation {
    /// Slurm's job id of the allocation.
    pub id: u64,
    /// Its nodes, by Slurm's names, in Slurm's order.
    pub nodes: Vec<String>,
    /// When Slurm ends it, ms since the epoch; `None`: no time limit.
    pub end_ms: Option<u64>,
    /// The nodes beyond it the pool may grow onto (`[pool.slurm] grow`), Slurm's nodes of the
    /// partition outside the allocation, chosen when it was granted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub beyond: Vec<String>,
    /// The sibling allocations that hold nodes of `beyond` for the jobs grown onto them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub siblings: Vec<Sibling>,
}

/// An allocation asked for a job's nodes beyond its pool's allocation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sibling {
    /// Slurm's job id of it.
    pub id: u64,
    /// batchd's job it is for.
    pub job: u64,
    /// Its nodes.
    pub nodes: Vec<String>,
}

impl Allocation {
    /// The pool's nodes, in node-id order: the allocation's, then those beyond it.
    pub fn pool_nodes(&self) -> Vec<String> {
        self.nodes.iter().chain(&self.beyond).cloned().collect()
    }

    /// The Slurm job id of the allocation node `node` is in, for batchd's job `job`: the
    /// pool's, or a sibling's of that job; `None` for a node beyond it no sibling holds.
    pub fn of_node(&self, node: &str, job: u64) -> Option<u64> {
        if self.nodes.iter().any(|n| n == node) {
            return Some(self.id);
        }
        self.siblings
            .iter()
            .find(|s| s.job == job && s.nodes.iter().any(|n| n == node))
            .map(|s| s.id)
    }
}

/// How an allocation stands, as `squeue` tells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Standing {
    /// Slurm's state (`RUNNING`, `PENDING`, `COMPLETING`, `CANCELLED`…).
    pub state: String,
    /// Its nodes, expanded.
    pub nodes: Vec<String>,
    /// Time left, ms; `None`: unlimited.
    pub left_ms: Option<u64>,
    /// Slurm's reason (`None` when it says so).
    pub reason: String,
}

/// The allocations of `state_dir`, by pool; none when the file is absent or unreadable (the
/// pools then ask for new ones, and a stale allocation ends by its own time limit).
pub fn load(state_dir: &Path) -> BTreeMap<String, Allocation> {
    let path = state_dir.join(FILE);
    match std::fs::read(&path) {
        Ok(b) => serde_json::from_slice(&b).unwrap_or_else(|e| {
            tracing::warn!(file = %path.display(), "unreadable; its allocations are forgotten: {e}");
            BTreeMap::new()
        }),
        Err(_) => BTreeMap::new(),
    }
}

/// Writes the allocations, atomically.
pub fn save(state_dir: &Path, held: &BTreeMap<String, Allocation>) -> std::io::Result<()> {
    crate::launch::write_json(&state_dir.join(FILE), held)
}

/// Runs Slurm's `program` with `args`; its stdout, or an error with what it said.
fn run(cfg: &SlurmConfig, program: &str, args: &[String]) -> Result<(String, String), String> {
    let path = cfg.program(program);
    let out = Command::new(&path)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", path.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.success() {
        Ok((stdout, stderr))
    } else {
        let said = stderr.lines().last().unwrap_or("").trim().to_string();
        Err(format!("{program} failed ({}): {said}", out.status))
    }
}

/// `salloc`'s arguments for `nodes` nodes of pool `pool` (named `esched-POOL` in `squeue`).
pub fn salloc_args(cfg: &SlurmConfig, pool: &str, nodes: u32, extra: &[String]) -> Vec<String> {
    // --exclusive: whole nodes (Slurm would otherwise give one CPU of each and the rest to
    // other jobs); --no-kill: a node lost leaves the allocation, which goes on with the others
    // (batchd sets that node DOWN) instead of ending with it.
    let mut args = vec![
        "--no-shell".to_string(),
        format!("--nodes={nodes}"),
        "--exclusive".into(),
        "--no-kill".into(),
        format!("--job-name=esched-{pool}"),
    ];
    if let Some(p) = &cfg.partition {
        args.push(format!("--partition={p}"));
    }
    if let Some(a) = &cfg.account {
        args.push(format!("--account={a}"));
    }
    if let Some(t) = &cfg.time_limit {
        args.push(format!("--time={t}"));
    }
    args.extend(cfg.options.iter().cloned());
    args.extend(extra.iter().cloned());
    args
}

/// The allocation id in what `salloc` says (`salloc: Granted job allocation 42`).
pub fn granted_id(said: &str) -> Option<u64> {
    said.lines().find_map(|l| {
        l.split_once("Granted job allocation ")
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .and_then(|id| id.parse().ok())
    })
}

/// Asks Slurm for an allocation of `nodes` nodes for pool `pool` (`extra`: more `salloc`
/// options, a sibling's node count and time); waits until it is granted.
pub fn allocate(
    cfg: &SlurmConfig,
    pool: &str,
    nodes: u32,
    extra: &[String],
) -> Result<Allocation, String> {
    let (out, err) = run(cfg, "salloc", &salloc_args(cfg, pool, nodes, extra))?;
    granted(cfg, &out, &err)
}

/// The allocation `salloc` said it granted, as Slurm runs it.
fn granted(cfg: &SlurmConfig, out: &str, err: &str) -> Result<Allocation, String> {
    let id = granted_id(err)
        .or_else(|| granted_id(out))
        .ok_or_else(|| format!("salloc granted nothing: {}", err.trim()))?;
    // Nodes that boot (power saving, clouds) keep it CONFIGURING a while.
    let mut s = standing(cfg, id)?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while s.as_ref().is_some_and(|s| s.state == "CONFIGURING")
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(500));
        s = standing(cfg, id)?;
    }
    let now = crate::launch::now_ms();
    match s {
        Some(s) if s.state == "RUNNING" && !s.nodes.is_empty() => Ok(Allocation {
            id,
            nodes: s.nodes,
            end_ms: s.left_ms.map(|l| now.saturating_add(l)),
            beyond: Vec::new(),
            siblings: Vec::new(),
        }),
        other => {
            let _ = cancel(cfg, &id.to_string());
            Err(format!("allocation {id} is not running: {other:?}"))
        }
    }
}

/// The allocation of every pool of `[pool.slurm]` in `config`: the one batchd held before
/// (kept in `slurm.json`) when Slurm still runs it with the pool's size, else a new one; an
/// allocation kept for a pool no longer configured is given back. Waits as long as Slurm
/// takes to grant them.
pub fn obtain_all(
    config: &crate::config::Config,
    state_dir: &Path,
) -> Result<BTreeMap<String, Allocation>, String> {
    let stored = load(state_dir);
    let mut held = BTreeMap::new();
    for p in &config.pools {
        let Some(cfg) = &p.slurm else { continue };
        let mut kept = None;
        if let Some(old) = stored.get(&p.name) {
            match standing(cfg, old.id) {
                // A node it lost (`--no-kill`) stays one of the pool's, set DOWN by the watch.
                Ok(Some(s))
                    if s.state == "RUNNING"
                        && !s.nodes.is_empty()
                        && old.nodes.len() == p.nodes as usize =>
                {
                    tracing::info!(pool = %p.name, allocation = old.id, "Slurm allocation kept");
                    // The siblings Slurm still runs stay with their jobs.
                    let siblings = old
                        .siblings
                        .iter()
                        .filter(|sib| {
                            matches!(standing(cfg, sib.id), Ok(Some(t)) if t.state == "RUNNING")
                        })
                        .cloned()
                        .collect();
                    kept = Some(Allocation {
                        id: old.id,
                        nodes: old.nodes.clone(),
                        end_ms: s.left_ms.map(|l| crate::launch::now_ms().saturating_add(l)),
                        beyond: old.beyond.clone(),
                        siblings,
                    });
                }
                Ok(Some(s)) => {
                    tracing::warn!(pool = %p.name, allocation = old.id, state = %s.state,
                        nodes = s.nodes.len(), "the Slurm allocation kept is not usable; given back");
                    let _ = cancel(cfg, &old.id.to_string());
                }
                Ok(None) => {
                    tracing::warn!(pool = %p.name, allocation = old.id, "the Slurm allocation kept has ended")
                }
                Err(e) => return Err(format!("pool `{}`: {e}", p.name)),
            }
        }
        let mut alloc = match kept {
            Some(a) => a,
            None => {
                if let Some(old) = stored.get(&p.name) {
                    for sib in &old.siblings {
                        let _ = cancel(cfg, &sib.id.to_string());
                    }
                }
                tracing::info!(pool = %p.name, nodes = p.nodes, "asking Slurm for an allocation");
                let a = allocate(cfg, &p.name, p.nodes, &[])
                    .map_err(|e| format!("pool `{}`: {e}", p.name))?;
                tracing::info!(pool = %p.name, allocation = a.id, nodes = ?a.nodes, "Slurm allocation granted");
                a
            }
        };
        if alloc.nodes.len() != p.nodes as usize {
            let _ = cancel(cfg, &alloc.id.to_string());
            return Err(format!(
                "pool `{}`: Slurm granted {} nodes, not {}",
                p.name,
                alloc.nodes.len(),
                p.nodes
            ));
        }
        if alloc.beyond.len() != cfg.grow as usize {
            match beyond(cfg, &alloc.nodes, cfg.grow) {
                Ok(b) => alloc.beyond = b,
                Err(e) => {
                    let _ = cancel(cfg, &alloc.id.to_string());
                    return Err(format!("pool `{}`: {e}", p.name));
                }
            }
        }
        held.insert(p.name.clone(), alloc);
        save(state_dir, &held).map_err(|e| format!("cannot write {FILE}: {e}"))?;
    }
    for (pool, old) in &stored {
        let configured = config.pools.iter().find(|p| &p.name == pool);
        if let (None, Some(cfg)) = (
            held.get(pool),
            configured
                .and_then(|p| p.slurm.as_ref())
                .or(config.pools.iter().find_map(|p| p.slurm.as_ref())),
        ) {
            tracing::info!(pool = %pool, allocation = old.id, "the pool is gone: its Slurm allocation is given back");
            let _ = cancel(cfg, &old.id.to_string());
        }
    }
    save(state_dir, &held).map_err(|e| format!("cannot write {FILE}: {e}"))?;
    Ok(held)
}

/// A sibling allocation of exactly `nodes` for batchd's job `job` of pool `pool`, for `minutes`:
/// the job's nodes beyond the pool's allocation. Waits at most `wait_s` for Slurm to grant it.
pub fn allocate_sibling(
    cfg: &SlurmConfig,
    pool: &str,
    job: u64,
    nodes: &[String],
    minutes: u64,
    wait_s: u64,
) -> Result<Sibling, String> {
    let mut args = salloc_args(cfg, pool, nodes.len() as u32, &[]);
    // Its own name and time, the job's nodes only: the pool's partition and account stay.
    args.retain(|a| !a.starts_with("--time=") && !a.starts_with("--job-name="));
    args.extend([
        format!("--job-name=esched-{pool}-job{job}"),
        format!("--time={}", minutes.max(1)),
        format!("--nodelist={}", nodes.join(",")),
        format!("--immediate={}", wait_s.max(1)),
    ]);
    let (out, err) = run(cfg, "salloc", &args)?;
    let a = granted(cfg, &out, &err)?;
    Ok(Sibling {
        id: a.id,
        job,
        nodes: a.nodes,
    })
}

/// `grow` nodes of `cfg`'s partition (Slurm's default one when none is set) outside `held`,
/// in Slurm's order: where a pool may grow beyond its allocation.
pub fn beyond(cfg: &SlurmConfig, held: &[String], grow: u32) -> Result<Vec<String>, String> {
    if grow == 0 {
        return Ok(Vec::new());
    }
    let mut args = vec![
        "--noheader".to_string(),
        "--Node".into(),
        "--format=%N".into(),
    ];
    if let Some(p) = &cfg.partition {
        args.push(format!("--partition={p}"));
    }
    let (out, _) = run(cfg, "sinfo", &args)?;
    let mut names: Vec<String> = Vec::new();
    for n in out.split_whitespace() {
        if !held.iter().any(|h| h == n) && !names.iter().any(|m| m == n) {
            names.push(n.to_string());
        }
    }
    if names.len() < grow as usize {
        return Err(format!(
            "grow = {grow}, but the partition has {} nodes beyond the allocation",
            names.len()
        ));
    }
    names.truncate(grow as usize);
    Ok(names)
}

/// Whether a job in Slurm state `state` is over (or on its way out): its steps are ending and
/// nothing runs in it again.
pub fn is_over(state: &str) -> bool {
    matches!(
        state,
        "COMPLETING"
            | "COMPLETED"
            | "CANCELLED"
            | "FAILED"
            | "TIMEOUT"
            | "NODE_FAIL"
            | "PREEMPTED"
            | "BOOT_FAIL"
            | "DEADLINE"
            | "OUT_OF_MEMORY"
            | "REVOKED"
            | "SPECIAL_EXIT"
    )
}

/// Slurm's `%L` (time left: `[D-]HH:MM:SS`, `MM:SS`, `UNLIMITED`, `NOT_SET`) in ms.
pub fn time_left_ms(text: &str) -> Option<u64> {
    let text = text.trim();
    let (days, rest) = match text.split_once('-') {
        Some((d, r)) => (d.parse::<u64>().ok()?, r),
        None => (0, text),
    };
    let parts: Vec<u64> = rest
        .split(':')
        .map(|p| p.parse::<u64>())
        .collect::<Result<_, _>>()
        .ok()?;
    let secs = match parts.as_slice() {
        [h, m, s] => h * 3600 + m * 60 + s,
        [m, s] => m * 60 + s,
        [s] => *s,
        _ => return None,
    };
    Some((days * 86_400 + secs) * 1000)
}

/// How allocation `id` stands; `None` when Slurm no longer knows it (it ended and was
/// purged, or never was).
pub fn standing(cfg: &SlurmConfig, id: u64) -> Result<Option<Standing>, String> {
    let args: Vec<String> = [
        "--noheader",
        "--states=all",
        "--jobs",
        &id.to_string(),
        "--format=%T|%N|%L|%r",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = match run(cfg, "squeue", &args) {
        Ok((o, _)) => o,
        // A job Slurm has purged: squeue refuses its id.
        Err(e) if e.contains("Invalid job id") => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(out.lines().find_map(parse_standing))
}

/// One line of `squeue --format=%T|%N|%L|%r`.
pub fn parse_standing(line: &str) -> Option<Standing> {
    let mut f = line.trim().splitn(4, '|');
    let state = f.next()?.trim().to_string();
    if state.is_empty() {
        return None;
    }
    let list = f.next().unwrap_or("").trim();
    let nodes = if list.is_empty() || list == "(null)" {
        Vec::new()
    } else {
        batch_proto::hostlist::expand(list).unwrap_or_default()
    };
    let left_ms = time_left_ms(f.next().unwrap_or(""));
    let reason = f.next().unwrap_or("").trim().to_string();
    Some(Standing {
        state,
        nodes,
        left_ms,
        reason,
    })
}

/// A node of an allocation that Slurm says is failing, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trouble {
    /// The node.
    pub node: String,
    /// Slurm's state and reason, as a DOWN node's reason.
    pub reason: String,
}

/// The nodes of `nodes` Slurm holds as failing (DOWN, FAIL, NOT_RESPONDING), with its reason.
pub fn troubled(cfg: &SlurmConfig, nodes: &[String]) -> Result<Vec<Trouble>, String> {
    if nodes.is_empty() {
        return Ok(Vec::new());
    }
    let args = vec![
        "--noheader".to_string(),
        "--Node".into(),
        format!("--nodes={}", nodes.join(",")),
        "--format=%N|%T|%E".into(),
    ];
    let (out, _) = run(cfg, "sinfo", &args)?;
    Ok(parse_troubled(&out))
}

/// `sinfo --Node --format=%N|%T|%E`'s lines, the failing nodes kept.
pub fn parse_troubled(out: &str) -> Vec<Trouble> {
    let mut seen = std::collections::HashSet::new();
    out.lines()
        .filter_map(|l| {
            let mut f = l.trim().splitn(3, '|');
            let node = f.next()?.trim().to_string();
            let state = f.next()?.trim().to_ascii_lowercase();
            let why = f.next().unwrap_or("").trim();
            // `*`: not responding; down, fail and failing: out of service.
            let bad = state.ends_with('*')
                || state.starts_with("down")
                || state.starts_with("fail")
                || state.contains("not_responding");
            (bad && seen.insert(node.clone())).then(|| Trouble {
                reason: if why.is_empty() || why == "none" {
                    format!("slurm: node {state}")
                } else {
                    format!("slurm: node {state}: {why}")
                },
                node,
            })
        })
        .collect()
}

/// `scancel` of `what` (an allocation, or a step `ID.STEP`), with `signal` when given.
pub fn cancel_with(cfg: &SlurmConfig, what: &str, signal: Option<i32>) -> Result<(), String> {
    let mut args = vec!["--quiet".to_string()];
    if let Some(s) = signal {
        args.push(format!("--signal={s}"));
    }
    args.push(what.to_string());
    match run(cfg, "scancel", &args) {
        // Slurm 22.05's scancel signals a step started from outside its allocation (ours are)
        // and then fails with this about the allocation itself, exit 225: the step got the
        // signal (measured on the test cluster, `scancel -v` says "Signal N to step ID.S").
        Err(e) if signal.is_some() && what.contains('.') && e.contains("Invalid job id") => Ok(()),
        r => r.map(|_| ()),
    }
}

/// Gives allocation (or step) `what` back.
pub fn cancel(cfg: &SlurmConfig, what: &str) -> Result<(), String> {
    cancel_with(cfg, what, None)
}

/// The name of job `job`'s steps in its allocation, as `squeue --steps` shows them.
pub fn step_name(job: u64) -> String {
    format!("esched-{job}")
}

/// The steps of allocation `alloc` that run batchd's job `job` (`ALLOC.STEP`).
pub fn steps_of(cfg: &SlurmConfig, alloc: u64, job: u64) -> Result<Vec<String>, String> {
    let args: Vec<String> = vec![
        "--noheader".into(),
        "--steps".into(),
        format!("--jobs={alloc}"),
        "--format=%i|%j".into(),
    ];
    let (out, _) = run(cfg, "squeue", &args)?;
    let name = step_name(job);
    Ok(out
        .lines()
        .filter_map(|l| l.trim().split_once('|'))
        .filter(|(_, n)| n.trim() == name)
        .map(|(i, _)| i.trim().to_string())
        .collect())
}

/// Sends `signal` to job `job`'s steps in `allocations` (`batch_only`: to its batch script's,
/// the job's first step in its first allocation).
pub fn signal_steps(
    allocations: &[(SlurmConfig, u64)],
    job: u64,
    signal: i32,
    batch_only: bool,
) -> Result<(), String> {
    let mut sent = false;
    let mut last = Err(format!("job {job} has no step running"));
    for (cfg, alloc) in allocations {
        let mut steps = steps_of(cfg, *alloc, job)?;
        if batch_only {
            steps.sort_by_key(|s| s.rsplit('.').next().and_then(|n| n.parse::<u64>().ok()));
            steps.truncate(1);
        }
        for step in steps {
            match cancel_with(cfg, &step, Some(signal)) {
                Ok(()) => sent = true,
                Err(e) => last = Err(e),
            }
        }
        if sent && batch_only {
            break;
        }
    }
    if sent {
        Ok(())
    } else {
        last
    }
}

/// Cancels every step of job `job` Slurm still runs in `allocations`.
pub fn cancel_steps(allocations: &[(SlurmConfig, u64)], job: u64) -> Result<(), String> {
    for (cfg, alloc) in allocations {
        for step in steps_of(cfg, *alloc, job)? {
            cancel(cfg, &step)?;
        }
    }
    Ok(())
}

/// How job `job`'s commands become steps of allocation `alloc`: `srun --jobid=ALLOC
/// --nodelist=NODE -N1 -n1 --overlap`, then `batchd task`, which puts the job's own Slurm
/// variables back before it runs the command (see [`batch_proto::jobstep::SlurmStep`]).
pub fn step_of(
    cfg: &SlurmConfig,
    allocations: Vec<u64>,
    job: u64,
    batchd: &Path,
    cpus: u32,
) -> SlurmStep {
    SlurmStep {
        srun: cfg.program("srun").display().to_string(),
        allocations,
        job,
        task: vec![batchd.display().to_string(), "task".into(), "--".into()],
        cpus,
    }
}

/// What `srun` itself needs of batchd's environment: `SLURM_CONF`, where batchd has one (it
/// names the cluster `srun` reaches).
pub fn srun_environment() -> Vec<(String, String)> {
    std::env::var("SLURM_CONF")
        .map(|c| vec![("SLURM_CONF".to_string(), c)])
        .unwrap_or_default()
}

/// `batchd task -- COMMAND...`, the task of a step batchd started: the job's own Slurm
/// variables back (those `srun` set for the step go, but `SLURM_CONF`), then `COMMAND`, by
/// exec. Returns only on failure, with the exit code.
pub fn task(command: &[String]) -> i32 {
    use std::os::unix::process::CommandExt;
    let Some((program, args)) = command.split_first() else {
        eprintln!("batchd task: no command");
        return 2;
    };
    let mut cmd = Command::new(program);
    cmd.args(args);
    let vars: Vec<(String, String)> = std::env::vars().collect();
    let kept: std::collections::HashSet<&str> = vars
        .iter()
        .filter_map(|(k, _)| k.strip_prefix(KEEP))
        .collect();
    for (k, v) in &vars {
        if let Some(name) = k.strip_prefix(KEEP) {
            cmd.env_remove(k).env(name, v);
        } else if is_slurm_variable(k) && k != "SLURM_CONF" && !kept.contains(k.as_str()) {
            cmd.env_remove(k);
        }
    }
    let e = cmd.exec();
    eprintln!("batchd task: cannot run {program}: {e}");
    if e.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_slurm_says_is_read() {
        assert_eq!(
            granted_id(
                "salloc: Granted job allocation 42\nsalloc: Waiting for resource configuration\n"
            ),
            Some(42)
        );
        assert_eq!(granted_id("salloc: error: no"), None);
        assert_eq!(time_left_ms("1-02:03:04"), Some((86_400 + 7_384) * 1000));
        assert_eq!(time_left_ms("9:59"), Some(599_000));
        assert_eq!(time_left_ms("UNLIMITED"), None);
        let s = parse_standing("RUNNING|n[1-2],n4|9:58|None").unwrap();
        assert_eq!(s.nodes, ["n1", "n2", "n4"]);
        assert_eq!((s.state.as_str(), s.left_ms), ("RUNNING", Some(598_000)));
        let t = parse_troubled("n1|allocated|none\nn2|down*|Not responding\nn3|idle*|none\n");
        assert_eq!(
            t,
            [
                Trouble {
                    node: "n2".into(),
                    reason: "slurm: node down*: Not responding".into()
                },
                Trouble {
                    node: "n3".into(),
                    reason: "slurm: node idle*".into()
                }
            ]
        );
    }

    #[test]
    fn a_step_crosses_srun_with_the_jobs_own_slurm_variables_kept_aside() {
        let cfg = SlurmConfig::default();
        let argv = step_of(&cfg, vec![7], 42, Path::new("/opt/batchd"), 32).command(
            0,
            "n2",
            &["/bin/sh".into(), "s".into()],
        );
        assert_eq!(
            argv.join(" "),
            "srun --jobid=7 --nodelist=n2 --nodes=1 --ntasks=1 --cpus-per-task=32 --overlap \
             --quiet --job-name=esched-42 -- /opt/batchd task -- /bin/sh s"
        );
        let env = crossing(&[
            ("SLURM_JOB_ID".into(), "42".into()),
            ("HOME".into(), "/h".into()),
        ]);
        assert!(env.contains(&("ESCHED_KEEP_SLURM_JOB_ID".into(), "42".into())));
        assert!(env.contains(&("HOME".into(), "/h".into())));
        assert!(!env.iter().any(|(k, _)| k == "SLURM_JOB_ID"));
    }
}
