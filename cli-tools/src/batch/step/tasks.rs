//! A step's tasks: started with their environment and files, each in a process group of its
//! own (so that a signal to the job's group reaches them only through erun, once), signals
//! passed on, output labelled, and their exit codes gathered into the step's.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use anyhow::Context;
use batch_proto::pattern::{expand_task, PatternVars, TaskVars};
use batch_proto::{StepStartRequest, StepStarted};
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag};
use nix::unistd::Pid;

use super::RunCli;

/// The signals erun passes on to its tasks, as srun does: every one a process can catch whose
/// default would end or stop erun alone and leave its tasks behind.
const FORWARDED: [Signal; 15] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGALRM,
    Signal::SIGCONT,
    Signal::SIGXCPU,
    Signal::SIGXFSZ,
    Signal::SIGVTALRM,
    Signal::SIGPROF,
    Signal::SIGPWR,
    Signal::SIGURG,
    Signal::SIGWINCH,
];

/// How long the tasks have between the stop erun passes on (SIGTERM, ...) and the SIGKILL erun
/// sends them itself, when batchd's job environment does not say (`ESCHED_KILL_WAIT_MS`, the
/// grace period): a SIGKILL to erun alone would leave its tasks, in groups of their own,
/// behind.
const KILL_WAIT_MS: u64 = 30_000;

/// A task erun passes signals to: its pid, and whether it leads a process group of its own
/// (then the group is signalled; a task left in erun's group, reading a terminal, is signalled
/// alone).
type Live = (i32, bool);

/// Passes a signal on beyond this host's tasks.
type Pass = Box<dyn Fn(Signal) + Send>;

/// Where erun's signals go: the tasks still running, or, before there are any, a note that
/// erun was told to stop (passed on to the tasks as they start).
#[derive(Clone, Default)]
pub struct Forwarder {
    live: Arc<Mutex<Vec<Live>>>,
    interrupted: Arc<AtomicI32>,
    stopped: Arc<AtomicI32>,
    /// Where a signal goes besides the tasks here: the step's parts on other hosts.
    elsewhere: Arc<Mutex<Option<Pass>>>,
}

/// Sends `sig` to a task: its group, or itself.
fn signal_task(&(pid, own_group): &Live, sig: Signal) {
    let target = if own_group { -pid } else { pid };
    let _ = kill(Pid::from_raw(target), sig);
}

impl Forwarder {
    /// Catches [`FORWARDED`] (handlers, not a blocked mask: a task inherits a mask across
    /// `exec`, but gets back the default action of a caught signal) and starts the thread
    /// that passes them on.
    pub fn start() -> anyhow::Result<Forwarder> {
        let nums: Vec<i32> = FORWARDED.iter().map(|s| *s as i32).collect();
        let mut signals =
            signal_hook::iterator::Signals::new(&nums).context("cannot catch signals")?;
        let f = Forwarder::default();
        let me = f.clone();
        std::thread::spawn(move || {
            for n in signals.forever() {
                let Ok(sig) = Signal::try_from(n) else {
                    continue;
                };
                let stop = matches!(
                    sig,
                    Signal::SIGTERM | Signal::SIGINT | Signal::SIGHUP | Signal::SIGQUIT
                );
                // Sent under the lock: a task seen here is not reaped meanwhile, so its pid
                // is not another process's.
                let Ok(live) = me.live.lock() else { continue };
                if live.is_empty()
                    && !matches!(sig, Signal::SIGCONT | Signal::SIGWINCH | Signal::SIGURG)
                {
                    me.interrupted.store(n, Ordering::SeqCst);
                }
                for t in live.iter() {
                    signal_task(t, sig);
                }
                drop(live);
                if let Ok(elsewhere) = me.elsewhere.lock() {
                    if let Some(pass) = elsewhere.as_ref() {
                        pass(sig);
                    }
                }
                if stop && me.stopped.swap(n, Ordering::SeqCst) == 0 {
                    me.kill_after_wait();
                }
            }
        });
        Ok(f)
    }

    /// After the grace period, SIGKILL to every task still there: erun's own SIGKILL, if it
    /// comes, would not reach them.
    fn kill_after_wait(&self) {
        let wait = std::env::var("ESCHED_KILL_WAIT_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(KILL_WAIT_MS);
        let me = self.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(wait));
            me.kill_all(Signal::SIGKILL);
        });
    }

    /// Sends `sig` to every task still running.
    pub fn kill_all(&self, sig: Signal) {
        if let Ok(live) = self.live.lock() {
            for t in live.iter() {
                signal_task(t, sig);
            }
        }
    }

    /// Registers a task just started, and passes on a stop that came before it.
    fn add(&self, task: Live) {
        if let Ok(mut live) = self.live.lock() {
            live.push(task);
            let pending = self.interrupted.load(Ordering::SeqCst);
            if let Ok(sig) = Signal::try_from(pending) {
                signal_task(&task, sig);
            }
        }
    }

    /// Passes the signals erun gets on to `pass` too (the step's parts on other hosts).
    pub fn also(&self, pass: Pass) {
        if let Ok(mut e) = self.elsewhere.lock() {
            *e = Some(pass);
        }
    }

    /// Whether erun was told to stop (SIGTERM, SIGINT, SIGHUP, SIGQUIT) and passed it on.
    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst) != 0
    }
}

/// How the step ended.
pub struct Outcome {
    /// The tasks' worst exit code (0 when the worst was a signal).
    pub exit_code: i32,
    /// The signal that ended a task when no task exited with a non-zero code (0: none).
    pub signal: i32,
    /// erun's own exit status: the worst exit code, or 128 + the signal.
    pub status: u8,
}

/// One task to start.
struct Task {
    id: u32,
    node_index: u32,
    local_id: u32,
    node: String,
}

/// Where a task's output stream goes.
#[derive(Clone)]
enum Sink {
    /// erun's own stream.
    Inherit,
    /// A file, shared by the tasks whose pattern names the same one.
    File(Arc<File>),
}

/// The tasks of `started`, in task-id order: block distribution over its nodes.
fn tasks_of(started: &StepStarted) -> Vec<Task> {
    let mut out = Vec::new();
    let mut id = 0;
    for (i, (node, &n)) in started.hosts.iter().zip(&started.tasks).enumerate() {
        for local in 0..n {
            out.push(Task {
                id,
                node_index: i as u32,
                local_id: local,
                node: node.clone(),
            });
            id += 1;
        }
    }
    out
}

/// The environment the tasks start from: erun's, narrowed by `--export` (`NONE` keeps
/// Slurm's and esched's variables and a login's, as srun does).
fn base_environment(export: Option<&str>) -> anyhow::Result<Vec<(String, String)>> {
    let env: Vec<(String, String)> = std::env::vars().collect();
    let Some(spec) = export else {
        return Ok(env);
    };
    let keep = |k: &str| {
        k.starts_with("SLURM_")
            || k.starts_with("ESCHED_")
            || matches!(
                k,
                "HOME" | "USER" | "LOGNAME" | "SHELL" | "PATH" | "TMPDIR" | "SLURMD_NODENAME"
            )
    };
    let mut out: Vec<(String, String)> = Vec::new();
    let mut all = false;
    for item in spec.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        if item.eq_ignore_ascii_case("all") {
            all = true;
        } else if item.eq_ignore_ascii_case("none") {
        } else if let Some((k, v)) = item.split_once('=') {
            anyhow::ensure!(!k.is_empty(), "invalid --export item '{item}'");
            out.push((k.to_string(), v.to_string()));
        } else if let Some(kv) = env.iter().find(|(k, _)| k == item) {
            out.push(kv.clone());
        }
    }
    let kept = env
        .iter()
        .filter(|(k, _)| (all || keep(k)) && !out.iter().any(|(o, _)| o == k))
        .cloned()
        .collect::<Vec<_>>();
    Ok(kept.into_iter().chain(out).collect())
}

/// Opens an output file of the step (0666 less the umask), appended to or truncated.
fn open_output(path: &str, append: bool) -> anyhow::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(!append)
        .append(append)
        .open(path)
        .with_context(|| format!("cannot open output file {path}"))
}

/// Each task's sink for a stream with pattern `pattern` (`None`: erun's own stream), files
/// opened once per distinct name.
fn sinks(
    pattern: Option<&str>,
    tasks: &[Task],
    vars: &PatternVars<'_>,
    step: u32,
    append: bool,
    opened: &mut HashMap<String, Arc<File>>,
) -> anyhow::Result<Vec<Sink>> {
    let Some(p) = pattern else {
        return Ok(vec![Sink::Inherit; tasks.len()]);
    };
    batch_proto::pattern::check(p)
        .map_err(|e| anyhow::anyhow!("invalid output pattern '{p}': {e}"))?;
    tasks
        .iter()
        .map(|t| {
            let name = expand_task(
                p,
                vars,
                &TaskVars {
                    step,
                    task: t.id,
                    node_index: t.node_index,
                    node: &t.node,
                },
            );
            if let Some(f) = opened.get(&name) {
                return Ok(Sink::File(Arc::clone(f)));
            }
            let f = Arc::new(open_output(&name, append)?);
            opened.insert(name, Arc::clone(&f));
            Ok(Sink::File(f))
        })
        .collect()
}

/// Copies `from` to `to` line by line, each line prefixed with `label` (srun's `--label`).
fn copy_labelled(from: impl Read, to: Sink, label: String) {
    let mut r = BufReader::new(from);
    let mut line = Vec::new();
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let mut buf = label.clone().into_bytes();
                buf.extend_from_slice(&line);
                let _ = match &to {
                    Sink::Inherit => {
                        let mut o = std::io::stdout().lock();
                        o.write_all(&buf).and_then(|()| o.flush())
                    }
                    Sink::File(f) => (&**f).write_all(&buf),
                };
            }
        }
    }
}

/// Copies `from` to erun's standard error, labelled (a `--label` task's standard error).
fn copy_labelled_err(from: impl Read, to: Sink, label: String) {
    match to {
        Sink::File(_) => copy_labelled(from, to, label),
        Sink::Inherit => {
            let mut r = BufReader::new(from);
            let mut line = Vec::new();
            loop {
                line.clear();
                match r.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        let mut e = std::io::stderr().lock();
                        let _ = e
                            .write_all(label.as_bytes())
                            .and_then(|()| e.write_all(&line));
                    }
                }
            }
        }
    }
}

fn stdio_of(sink: &Sink, label: bool) -> anyhow::Result<Stdio> {
    Ok(match (sink, label) {
        (_, true) => Stdio::piped(),
        (Sink::Inherit, false) => Stdio::inherit(),
        (Sink::File(f), false) => {
            Stdio::from(f.try_clone().context("cannot share an output file")?)
        }
    })
}

/// What ended a task.
#[derive(Clone, Copy, Debug)]
enum End {
    Code(i32),
    Signal(i32),
}

/// Runs the tasks of `started` and waits for them all.
#[allow(clippy::too_many_arguments)]
pub fn run(
    cli: &RunCli,
    me: &str,
    job: u64,
    req: &StepStartRequest,
    started: &StepStarted,
    forwarder: &Forwarder,
    job_env: &[(String, String)],
    only_node: Option<u32>,
) -> anyhow::Result<Outcome> {
    let all = tasks_of(started);
    let ntasks = all.len() as u32;
    // On a pool of hosts, each host's erun runs that host's tasks.
    let tasks: Vec<Task> = all
        .into_iter()
        .filter(|t| only_node.is_none_or(|n| t.node_index == n))
        .collect();
    let step = started.step;
    // The job's variables: an allocation's own (`job_env`), else erun's environment's.
    let var = |k: &str| {
        job_env
            .iter()
            .find(|(e, _)| e == k)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(k).ok())
    };
    let user = var("SLURM_JOB_USER")
        .or_else(|| var("USER"))
        .unwrap_or_default();
    let job_name = var("SLURM_JOB_NAME").unwrap_or_default();
    let array = match (
        var("SLURM_ARRAY_JOB_ID").and_then(|v| v.parse().ok()),
        var("SLURM_ARRAY_TASK_ID").and_then(|v| v.parse().ok()),
    ) {
        (Some(a), Some(t)) => Some((a, t)),
        _ => None,
    };
    let vars = PatternVars {
        id: job,
        name: &job_name,
        user: &user,
        array,
        node: None,
    };
    let mut opened = HashMap::new();
    // srun follows the job's --open-mode (sbatch exports it as SLURM_OPEN_MODE): a requeued
    // job's rerun adds to its tasks' logs.
    let append = match cli.open_mode.as_deref() {
        Some(m) => m == "append",
        None => var("SLURM_OPEN_MODE").is_some_and(|m| m.starts_with('a')),
    };
    let outs = sinks(
        cli.output.as_deref(),
        &tasks,
        &vars,
        step,
        append,
        &mut opened,
    )?;
    // srun: standard error goes where standard output goes unless -e says otherwise.
    let errs = match cli.error.as_deref() {
        Some(p) => sinks(Some(p), &tasks, &vars, step, append, &mut opened)?,
        None => outs.clone(),
    };
    let node_list = batch_proto::hostlist::compress(&started.hosts);
    let per_node = batch_proto::jobstep::per_node_text(&started.tasks);
    let mut env = base_environment(cli.export.as_deref())?;
    for (k, v) in job_env {
        env.retain(|(e, _)| e != k);
        env.push((k.clone(), v.clone()));
    }
    let mut step_vars: Vec<(&str, String)> = vec![
        ("SLURM_STEP_ID", step.to_string()),
        ("SLURM_STEPID", step.to_string()),
        ("SLURM_STEP_NODELIST", node_list.clone()),
        ("SLURM_STEP_NUM_NODES", started.hosts.len().to_string()),
        ("SLURM_STEP_NUM_TASKS", ntasks.to_string()),
        ("SLURM_STEP_TASKS_PER_NODE", per_node.clone()),
        ("SLURM_NTASKS", ntasks.to_string()),
        ("SLURM_NPROCS", ntasks.to_string()),
        ("SLURM_NNODES", started.hosts.len().to_string()),
        ("SLURM_NODELIST", node_list),
        ("SLURM_TASKS_PER_NODE", per_node),
        ("SLURM_JOB_ID", job.to_string()),
        ("SLURM_JOBID", job.to_string()),
        ("SLURM_JOB_NODELIST", started.job_node_list.clone()),
        ("SLURM_DISTRIBUTION", "block".into()),
    ];
    if cli.cpus_per_task.is_some() {
        step_vars.push(("SLURM_CPUS_PER_TASK", req.cpus_per_task.to_string()));
    }
    for (k, v) in step_vars {
        env.retain(|(e, _)| e != k);
        env.push((k.to_string(), v));
    }
    let width = ntasks.saturating_sub(1).to_string().len();
    // Standard input: task 0 reads erun's, unless -i says otherwise.
    let input = cli.input.as_deref();
    // Everything that may fail is prepared before the first task starts: an error then leaves
    // no task behind.
    let mut stdio = Vec::with_capacity(tasks.len());
    for (t, (out, err)) in tasks.iter().zip(outs.iter().zip(&errs)) {
        let stdin = match input {
            None if t.id == 0 => Stdio::inherit(),
            None => Stdio::null(),
            Some(i) if i.eq_ignore_ascii_case("none") => Stdio::null(),
            Some(i) if i.eq_ignore_ascii_case("all") => Stdio::inherit(),
            Some(i) if i.parse::<u32>().is_ok() => {
                if i.parse::<u32>().ok() == Some(t.id) {
                    Stdio::inherit()
                } else {
                    Stdio::null()
                }
            }
            Some(p) => {
                let name = expand_task(
                    p,
                    &vars,
                    &TaskVars {
                        step,
                        task: t.id,
                        node_index: t.node_index,
                        node: &t.node,
                    },
                );
                Stdio::from(
                    File::open(&name).with_context(|| format!("cannot open input file {name}"))?,
                )
            }
        };
        stdio.push((stdin, stdio_of(out, cli.label)?, stdio_of(err, cli.label)?));
    }
    // A task reading a terminal must stay in the terminal's foreground group (erun's): in a
    // group of its own it would be stopped (SIGTTIN) at its first read. It is then signalled
    // alone.
    let own_group = !std::io::IsTerminal::is_terminal(&std::io::stdin());
    let mut children: Vec<(u32, String, Option<Child>, Option<End>)> = Vec::new();
    let mut copiers = Vec::new();
    let live = Arc::clone(&forwarder.live);
    let command = &cli.command;
    for ((t, (out, err)), (stdin, stdout, stderr)) in
        tasks.iter().zip(outs.iter().zip(&errs)).zip(stdio)
    {
        let gtids: Vec<String> = tasks
            .iter()
            .filter(|o| o.node_index == t.node_index)
            .map(|o| o.id.to_string())
            .collect();
        let mut cmd = Command::new(&command[0]);
        cmd.args(&command[1..])
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("SLURM_PROCID", t.id.to_string())
            .env("SLURM_LOCALID", t.local_id.to_string())
            .env("SLURM_NODEID", t.node_index.to_string())
            .env("SLURMD_NODENAME", &t.node)
            .env("SLURM_TOPOLOGY_ADDR", &t.node)
            .env("SLURM_GTIDS", gtids.join(","))
            .stdin(stdin)
            .stdout(stdout)
            .stderr(stderr);
        if own_group {
            cmd.process_group(0);
        }
        if let Some(d) = &cli.chdir {
            cmd.current_dir(d);
        }
        match cmd.spawn() {
            Ok(mut child) => {
                forwarder.add((child.id() as i32, own_group));
                if cli.label {
                    let label = format!("{:>width$}: ", t.id);
                    if let Some(o) = child.stdout.take() {
                        let (sink, label) = (out.clone(), label.clone());
                        copiers.push(std::thread::spawn(move || copy_labelled(o, sink, label)));
                    }
                    if let Some(e) = child.stderr.take() {
                        let sink = err.clone();
                        copiers.push(std::thread::spawn(move || {
                            copy_labelled_err(e, sink, label)
                        }));
                    }
                }
                children.push((t.id, t.node.clone(), Some(child), None));
            }
            Err(e) => {
                // As slurmstepd reports a task that cannot be started; the task counts as
                // exited with code 2.
                eprintln!(
                    "{me}: error: {}: task {}: execve(): {}: {e}",
                    t.node,
                    t.id,
                    command[0].to_string_lossy()
                );
                children.push((t.id, t.node.clone(), None, Some(End::Code(2))));
            }
        }
    }
    // Each task waited for on a thread of its own; ends come back in the order they happen.
    let (tx, rx) = mpsc::channel::<(usize, End)>();
    let mut waiting = 0;
    for (k, entry) in children.iter_mut().enumerate() {
        let Some(mut child) = entry.2.take() else {
            continue;
        };
        waiting += 1;
        let (tx, live) = (tx.clone(), Arc::clone(&live));
        std::thread::spawn(move || {
            let pid = child.id() as i32;
            // Seen ended but not reaped: its group id cannot be reused while what it left
            // running is killed and the group forgotten.
            while let Err(nix::errno::Errno::EINTR) = waitid(
                Id::Pid(Pid::from_raw(pid)),
                WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT,
            ) {}
            if let Ok(mut l) = live.lock() {
                l.retain(|t| t.0 != pid);
            }
            if own_group {
                let _ = kill(Pid::from_raw(-pid), Signal::SIGKILL);
            }
            let end = match child.wait() {
                Ok(s) => match (s.code(), s.signal()) {
                    (Some(c), _) => End::Code(c),
                    (None, Some(sig)) => End::Signal(sig),
                    (None, None) => End::Code(1),
                },
                Err(_) => End::Code(1),
            };
            let _ = tx.send((k, end));
        });
    }
    drop(tx);
    let kill_on_bad_exit = cli.kill_on_bad_exit.unwrap_or(0) != 0;
    for _ in 0..waiting {
        let Ok((k, end)) = rx.recv() else { break };
        children[k].3 = Some(end);
        if kill_on_bad_exit && !matches!(end, End::Code(0)) {
            forwarder.kill_all(Signal::SIGKILL);
        }
    }
    // The tasks are gone; what they started elsewhere may hold their output pipes open: their
    // last lines are waited for a moment, not forever.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while copiers.iter().any(|c| !c.is_finished()) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Ok(outcome(me, &children))
}

/// The step's outcome from its tasks' ends, each bad end reported as srun does.
fn outcome(me: &str, children: &[(u32, String, Option<Child>, Option<End>)]) -> Outcome {
    let mut worst_code = 0;
    let mut worst_signal = 0;
    for (id, node, _, end) in children {
        match end {
            Some(End::Code(0)) | None => {}
            Some(End::Code(c)) => {
                eprintln!("{me}: error: {node}: task {id}: Exited with exit code {c}");
                worst_code = worst_code.max(*c);
            }
            Some(End::Signal(s)) => {
                let name = Signal::try_from(*s).map_or_else(
                    |_| format!("signal {s}"),
                    |sig| match sig {
                        Signal::SIGKILL => "Killed".to_string(),
                        Signal::SIGTERM => "Terminated".to_string(),
                        other => other.as_str().to_string(),
                    },
                );
                eprintln!("{me}: error: {node}: task {id}: {name}");
                worst_signal = worst_signal.max(*s);
            }
        }
    }
    let status = if worst_code != 0 {
        worst_code.clamp(0, 255) as u8
    } else if worst_signal != 0 {
        (128 + worst_signal).clamp(0, 255) as u8
    } else {
        0
    };
    Outcome {
        exit_code: worst_code,
        signal: if worst_code == 0 { worst_signal } else { 0 },
        status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_fill_the_first_node_first() {
        let s = StepStarted {
            step: 0,
            hosts: vec!["a".into(), "b".into()],
            tasks: vec![2, 1],
            job_node_list: "a,b".into(),
            on_hosts: false,
            slurm: None,
        };
        let t = tasks_of(&s);
        let ids: Vec<(u32, u32, u32)> =
            t.iter().map(|t| (t.id, t.node_index, t.local_id)).collect();
        assert_eq!(ids, vec![(0, 0, 0), (1, 0, 1), (2, 1, 0)]);
    }

    #[test]
    fn the_worst_end_wins() {
        let c = |id, end| (id, "n1".to_string(), None, Some(end));
        let o = outcome(
            "erun",
            &[c(0, End::Code(0)), c(1, End::Code(3)), c(2, End::Signal(9))],
        );
        assert_eq!((o.exit_code, o.signal, o.status), (3, 0, 3));
        let o = outcome("erun", &[c(0, End::Code(0)), c(1, End::Signal(15))]);
        assert_eq!((o.exit_code, o.signal, o.status), (0, 15, 143));
        let o = outcome("erun", &[c(0, End::Code(0))]);
        assert_eq!(o.status, 0);
    }

    #[test]
    fn export_none_keeps_slurm_and_login_variables() {
        // The test process's own environment is the base: it has PATH at least.
        let env = base_environment(Some("NONE")).unwrap();
        assert!(env.iter().all(|(k, _)| k.starts_with("SLURM_")
            || k.starts_with("ESCHED_")
            || [
                "HOME",
                "USER",
                "LOGNAME",
                "SHELL",
                "PATH",
                "TMPDIR",
                "SLURMD_NODENAME"
            ]
            .contains(&k.as_str())));
        let env = base_environment(Some("NONE,FOO=bar")).unwrap();
        assert!(env.contains(&("FOO".to_string(), "bar".to_string())));
    }
}
