//! erun: run a parallel job step, as srun. Inside a job (`$SLURM_JOB_ID`, or `--jobid`) it
//! asks batchd for a step on the job's nodes, runs the tasks, passes signals on to them, and
//! reports the step's end with what its tasks used; outside a job it first gets an allocation
//! of its own (`alloc`), as srun does.
//!
//! On virtual nodes every task runs on this machine; the node it stands on is in its
//! environment (`SLURMD_NODENAME`, `SLURM_NODEID`).

pub mod alloc;
pub mod tasks;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use batch_proto::{
    ClientError, ErrorKind, Request, Response, StepEndRequest, StepStartRequest, StepStarted,
};
use clap::Parser;

use super::args::SocketArg;
use super::cli::connect;

/// `erun`'s command line (srun's options).
#[derive(Parser, Debug, Clone, Default)]
#[command(
    name = "erun",
    version,
    about = "Run a parallel job step on a job's nodes (like srun); outside a job, in a new \
             allocation",
    after_help = "Inside a batch job every option takes its default from the job (its nodes, \
                  $SLURM_NTASKS). Output patterns: %j job id, %J job.step, %s step, %t task, \
                  %n node index, %N node name, %u user, %x job name, %A/%a array job/task."
)]
pub struct RunCli {
    /// Number of tasks (default: $SLURM_NTASKS inside a job, else one per node).
    #[arg(
        short = 'n',
        long = "ntasks",
        visible_alias = "nprocs",
        value_name = "N"
    )]
    pub ntasks: Option<u32>,
    /// Number of nodes (`N` or `MIN-MAX`; the minimum is taken).
    #[arg(short = 'N', long = "nodes", value_name = "N")]
    pub nodes: Option<String>,
    /// Tasks on each node.
    #[arg(long = "ntasks-per-node", value_name = "N")]
    pub ntasks_per_node: Option<u32>,
    /// CPUs per task (implies --exact).
    #[arg(short = 'c', long = "cpus-per-task", value_name = "N")]
    pub cpus_per_task: Option<u32>,
    /// Pass output on as it comes (it always is here: accepted for srun's scripts).
    #[arg(short = 'u', long = "unbuffered")]
    pub unbuffered: bool,
    /// Standard output to this file pattern (default: erun's own standard output).
    #[arg(short = 'o', long = "output", value_name = "PATTERN")]
    pub output: Option<String>,
    /// Standard error to this file pattern (default: where standard output goes).
    #[arg(short = 'e', long = "error", value_name = "PATTERN")]
    pub error: Option<String>,
    /// Standard input: `none`, a task id (that task only), or a file pattern (default: task
    /// 0 reads erun's standard input).
    #[arg(short = 'i', long = "input", value_name = "MODE")]
    pub input: Option<String>,
    /// How output files are opened: `truncate`, or `append` (default: the job's
    /// `--open-mode`, from `$SLURM_OPEN_MODE`).
    #[arg(long = "open-mode", value_name = "MODE", value_parser = ["append", "truncate"])]
    pub open_mode: Option<String>,
    /// Prefix each line of output with the task id.
    #[arg(short = 'l', long = "label")]
    pub label: bool,
    /// Kill the step's other tasks when one exits with a non-zero code (`-K0`: do not).
    #[arg(
        short = 'K',
        long = "kill-on-bad-exit",
        value_name = "0|1",
        num_args = 0..=1,
        default_missing_value = "1",
        require_equals = true
    )]
    pub kill_on_bad_exit: Option<u8>,
    /// Use only the CPUs the tasks need, never sharing them with another step.
    #[arg(long)]
    pub exclusive: bool,
    /// Use only the CPUs the tasks need (other steps may take the rest).
    #[arg(long)]
    pub exact: bool,
    /// Share the nodes' CPUs with the other steps.
    #[arg(long)]
    pub overlap: bool,
    /// Environment passed on: `ALL` (default), `NONE`, or `[ALL,]VAR[=value],...`.
    #[arg(long, value_name = "LIST")]
    pub export: Option<String>,
    /// Working directory of the tasks.
    #[arg(short = 'D', long = "chdir", value_name = "DIR")]
    pub chdir: Option<PathBuf>,
    /// The step's name (default: the command's).
    #[arg(short = 'J', long = "job-name", value_name = "NAME")]
    pub job_name: Option<String>,
    /// Run on these of the job's nodes.
    #[arg(short = 'w', long = "nodelist", value_name = "NODES")]
    pub nodelist: Option<String>,
    /// Do not run on these nodes.
    #[arg(short = 'x', long = "exclude", value_name = "NODES")]
    pub exclude: Option<String>,
    /// The job to run the step in (default: $SLURM_JOB_ID).
    #[arg(long = "jobid", value_name = "ID")]
    pub jobid: Option<u64>,
    /// Time limit of a new allocation (outside a job), in sbatch's forms.
    #[arg(short = 't', long = "time", value_name = "TIME")]
    pub time: Option<String>,
    /// Pool of a new allocation.
    #[arg(
        short = 'p',
        long = "partition",
        visible_alias = "pool",
        value_name = "POOL"
    )]
    pub partition: Option<String>,
    /// Account of a new allocation (stored and shown).
    #[arg(short = 'A', long = "account", value_name = "NAME")]
    pub account: Option<String>,
    /// Memory per node (nodes are whole here: accepted, checked against the pool by a new
    /// allocation).
    #[arg(long = "mem", value_name = "SIZE")]
    pub mem: Option<String>,
    /// MPI plugin type (`none`, `pmi2`, `pmix`): tasks get Slurm's variables whatever it is.
    #[arg(long = "mpi", value_name = "TYPE")]
    pub mpi: Option<String>,
    /// CPU binding (accepted; tasks are not bound here).
    #[arg(long = "cpu-bind", visible_alias = "cpu_bind", value_name = "TYPE")]
    pub cpu_bind: Option<String>,
    /// Say less (no informational messages).
    #[arg(short = 'Q', long = "quiet")]
    pub quiet: bool,
    /// The daemon's socket.
    #[command(flatten)]
    pub socket: SocketArg,
    /// The command and its arguments.
    // No `allow_hyphen_values`: with it clap takes `-n4` (getopt's attached value, as srun
    // reads it) for the command; trailing_var_arg alone gives everything after the command
    // to the command.
    #[arg(required = true, trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// The name erun answers to in its messages: `srun` when run by that name (the Slurm-named
/// directory), else `erun`.
pub fn tool_name() -> &'static str {
    super::cli::invoked_name("erun")
}

/// A variable of the environment, if set and not empty.
fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The minimum of `-N N` or `-N MIN-MAX`.
fn min_nodes(s: &str) -> anyhow::Result<u32> {
    let first = s.split('-').next().unwrap_or(s);
    first
        .trim()
        .parse::<u32>()
        .ok()
        .filter(|&n| n > 0)
        .with_context(|| format!("invalid node count '{s}'"))
}

impl RunCli {
    /// The step request for job `job_id` this command line makes, given the job's own
    /// variables (`SLURM_NNODES`, `SLURM_NTASKS`) as srun reads them.
    pub fn step_request(
        &self,
        job_id: u64,
        job_nodes: Option<u32>,
        job_tasks: Option<u32>,
    ) -> anyhow::Result<StepStartRequest> {
        let nodes = self.nodes.as_deref().map(min_nodes).transpose()?;
        let tpn = self.ntasks_per_node.unwrap_or(0);
        let list = |v: &Option<String>| -> anyhow::Result<Vec<String>> {
            Ok(match v {
                Some(l) => batch_proto::hostlist::expand_at_most(l, 4096)
                    .map_err(|e| anyhow::anyhow!("{e}"))?,
                None => Vec::new(),
            })
        };
        let node_names = list(&self.nodelist)?;
        let exclude = list(&self.exclude)?;
        // srun's defaults inside a job: -N from the job's nodes when neither -n nor -w says
        // otherwise, -n from $SLURM_NTASKS, else one task per node.
        let (tasks, nodes) = match (self.ntasks, nodes) {
            // srun: fewer tasks than nodes lowers the node count, with a warning.
            (Some(n), Some(m)) if n > 0 && n < m && tpn == 0 => {
                if !self.quiet {
                    eprintln!(
                        "{}: Warning: can't run {n} processes on {m} nodes, setting nnodes to {n}",
                        tool_name()
                    );
                }
                (n, n)
            }
            (Some(n), nodes) => (n, nodes.unwrap_or(0)),
            (None, Some(n)) if tpn == 0 => (n, n),
            (None, nodes) => {
                let n = nodes
                    .or(job_nodes.filter(|_| node_names.is_empty() && exclude.is_empty()))
                    .unwrap_or(0);
                match job_tasks.filter(|_| tpn == 0 && nodes.is_none()) {
                    Some(t) => (t, n.min(t)),
                    None => (n.max(node_names.len() as u32), n),
                }
            }
        };
        if tasks == 0 && tpn == 0 && nodes == 0 && node_names.is_empty() {
            bail!("invalid number of tasks: 0");
        }
        let name = self.job_name.clone().unwrap_or_else(|| {
            std::path::Path::new(&self.command[0])
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "erun".into())
        });
        Ok(StepStartRequest {
            job_id,
            name,
            nodes,
            tasks,
            cpus_per_task: self.cpus_per_task.unwrap_or(1).max(1),
            node_names,
            exclude,
            tasks_per_node: tpn,
            overlap: self.overlap,
            exact: self.exact || self.exclusive || self.cpus_per_task.is_some(),
        })
    }
}

/// erun.
pub fn run(cli: RunCli) -> anyhow::Result<ExitCode> {
    let me = tool_name();
    let job = cli
        .jobid
        .or_else(|| env_var("SLURM_JOB_ID").and_then(|v| v.parse().ok()));
    let Some(job) = job else {
        return alloc::run_allocated(&cli, me);
    };
    let job_nodes = env_var("SLURM_NNODES").and_then(|v| v.parse().ok());
    let job_tasks = env_var("SLURM_NTASKS").and_then(|v| v.parse().ok());
    let forwarder = tasks::Forwarder::start()?;
    run_in_job(&cli, me, job, job_nodes, job_tasks, &forwarder, &[])
}

/// Runs the step of `cli` in job `job` (whose variables are `job_env` over erun's
/// environment); erun's exit code is the tasks' worst.
pub fn run_in_job(
    cli: &RunCli,
    me: &str,
    job: u64,
    job_nodes: Option<u32>,
    job_tasks: Option<u32>,
    forwarder: &tasks::Forwarder,
    job_env: &[(String, String)],
) -> anyhow::Result<ExitCode> {
    let req = cli.step_request(job, job_nodes, job_tasks)?;
    // A part of a step on another host, started by the step's erun through batchd: this
    // host's tasks only, the step recorded by that erun.
    if let Some(part) = env_var(PART_VAR) {
        let part: Part =
            serde_json::from_str(&part).map_err(|e| anyhow::anyhow!("invalid {PART_VAR}: {e}"))?;
        let o = tasks::run(
            cli,
            me,
            job,
            &req,
            &part.started,
            forwarder,
            job_env,
            Some(part.node),
        )?;
        return Ok(ExitCode::from(o.status));
    }
    let started = start_step(cli, me, &req, forwarder)?;
    let (here, parts) = if started.on_hosts {
        let here = own_node(&started)?;
        (
            Some(here),
            start_parts(cli, me, job, &started, here, forwarder)?,
        )
    } else {
        (None, Vec::new())
    };
    let outcome = match tasks::run(cli, me, job, &req, &started, forwarder, job_env, here) {
        Ok(o) => o,
        Err(e) => {
            // Nothing started (what can fail comes first): the step ends FAILED, not RUNNING
            // until its job ends.
            let end = StepEndRequest {
                job_id: job,
                step: started.step,
                exit_code: 1,
                signal: 0,
                usage: None,
                stopped: false,
            };
            report_end(cli, me, &end);
            return Err(e);
        }
    };
    // The parts' ends: the step's is the worst of all.
    let mut status = outcome.status;
    let mut exit_code = outcome.exit_code;
    for p in parts {
        let s = p.join().unwrap_or(1);
        if s > i32::from(status) {
            status = u8::try_from(s).unwrap_or(u8::MAX);
            if exit_code == 0 && s < 128 {
                exit_code = s;
            }
        }
    }
    let end = StepEndRequest {
        job_id: job,
        step: started.step,
        exit_code,
        signal: outcome.signal,
        usage: batch_proto::Usage::of_children(),
        stopped: forwarder.stopped(),
    };
    report_end(cli, me, &end);
    Ok(ExitCode::from(status))
}

/// The environment variable that makes an erun a part of a step on another host: the step
/// and which of its nodes is this one ([`Part`]).
const PART_VAR: &str = "ESCHED_STEP_PART";

/// A part of a step: the step as batchd placed it, and this host's index in its nodes.
#[derive(serde::Serialize, serde::Deserialize)]
struct Part {
    started: StepStarted,
    node: u32,
}

/// This host's index among the step's nodes (a job on a pool of hosts: erun runs on the
/// job's first host, whose node name is `SLURMD_NODENAME`, else this machine's name).
fn own_node(started: &StepStarted) -> anyhow::Result<u32> {
    let name = env_var("SLURMD_NODENAME")
        .or_else(|| {
            nix::unistd::gethostname()
                .ok()
                .and_then(|h| h.into_string().ok())
        })
        .unwrap_or_default();
    started
        .hosts
        .iter()
        .position(|h| *h == name)
        .map(|i| i as u32)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "this host ({name}) is not one of the step's nodes ({})",
                started.hosts.join(",")
            )
        })
}

/// Starts the step's tasks of every other host through batchd, each host's output copied to
/// erun's own as it comes; each thread returns its part's exit status. Signals erun gets are
/// passed on to them.
fn start_parts(
    cli: &RunCli,
    me: &str,
    job: u64,
    started: &StepStarted,
    here: u32,
    forwarder: &tasks::Forwarder,
) -> anyhow::Result<Vec<std::thread::JoinHandle<i32>>> {
    let program = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot find erun's own program: {e}"))?
        .display()
        .to_string();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|_| "/".into());
    if let Some(slurm) = &started.slurm {
        return start_slurm_parts(slurm, started, here, &program, &args, forwarder);
    }
    let mut handles = Vec::new();
    for (_, node, part) in other_parts(started, here)? {
        let mut env: Vec<(String, String)> = std::env::vars().collect();
        env.retain(|(k, _)| k != PART_VAR);
        env.push((PART_VAR.into(), part));
        let req = Request::StepPart(batch_proto::StepPartRequest {
            job_id: job,
            step: started.step,
            node: node.clone(),
            program: program.clone(),
            args: args.clone(),
            env,
            cwd: cwd.clone(),
        });
        let mut client = connect(cli.socket.path())?;
        client.post(&req)?;
        let (me, node) = (me.to_string(), node.clone());
        handles.push(std::thread::spawn(move || {
            use std::io::Write;
            loop {
                match client.next_frame(None) {
                    Ok(Response::StepPartOutput { fd, data }) => {
                        let bytes = batch_proto::jobstep::unhex(&data).unwrap_or_default();
                        let _ = if fd == 2 {
                            std::io::stderr().write_all(&bytes)
                        } else {
                            std::io::stdout().write_all(&bytes)
                        };
                    }
                    Ok(Response::StepPartEnded { status }) => return status,
                    Ok(Response::Error(e)) => {
                        eprintln!("{me}: error: {node}: {}", e.message);
                        return 1;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        eprintln!("{me}: error: {node}: {e}");
                        return 1;
                    }
                }
            }
        }));
    }
    if !handles.is_empty() {
        let (socket, step) = (cli.socket.path().map(|p| p.to_path_buf()), started.step);
        forwarder.also(Box::new(move |sig| {
            let req = Request::StepPartSignal(batch_proto::StepPartSignalRequest {
                job_id: job,
                step,
                signal: sig as i32,
            });
            if let Ok(mut c) = connect(socket.as_deref()) {
                let _ = c.request(&req);
            }
        }));
    }
    Ok(handles)
}

/// The step's nodes other than `here` that have tasks: each one's index, name and
/// [`PART_VAR`] value.
fn other_parts(started: &StepStarted, here: u32) -> anyhow::Result<Vec<(usize, String, String)>> {
    let mut parts = Vec::new();
    for (k, node) in started.hosts.iter().enumerate() {
        if k as u32 == here || started.tasks.get(k).copied().unwrap_or(0) == 0 {
            continue;
        }
        let part = serde_json::to_string(&Part {
            started: started.clone(),
            node: k as u32,
        })?;
        parts.push((k, node.clone(), part));
    }
    Ok(parts)
}

/// [`start_parts`] in a Slurm allocation: each other node's part is this erun there, run by
/// `srun` as a step of the allocation ([`batch_proto::jobstep::SlurmStep`]); its output comes
/// through srun's, and erun's signals go to each srun, which passes them on to its task.
fn start_slurm_parts(
    slurm: &batch_proto::jobstep::SlurmStep,
    started: &StepStarted,
    here: u32,
    program: &str,
    args: &[String],
    forwarder: &tasks::Forwarder,
) -> anyhow::Result<Vec<std::thread::JoinHandle<i32>>> {
    let env: Vec<(String, String)> = std::env::vars().filter(|(k, _)| k != PART_VAR).collect();
    let mut handles = Vec::new();
    let mut pids = Vec::new();
    for (k, node, part) in other_parts(started, here)? {
        let mut command = vec![program.to_string()];
        command.extend(args.iter().cloned());
        let argv = slurm.command(k, &node, &command);
        let (first, rest) = argv
            .split_first()
            .ok_or_else(|| anyhow::anyhow!("no srun command"))?;
        let mut part_env = batch_proto::jobstep::crossing(&env);
        part_env.push((PART_VAR.into(), part));
        let mut child = std::process::Command::new(first)
            .args(rest)
            .env_clear()
            .envs(part_env)
            .envs(std::env::var("SLURM_CONF").map(|c| ("SLURM_CONF".to_string(), c)))
            .stdin(std::process::Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {first} for node {node}"))?;
        pids.push(child.id() as i32);
        handles.push(std::thread::spawn(move || match child.wait() {
            Ok(s) => s.code().unwrap_or_else(|| {
                128 + std::os::unix::process::ExitStatusExt::signal(&s).unwrap_or(0)
            }),
            Err(_) => 1,
        }));
    }
    if !pids.is_empty() {
        forwarder.also(Box::new(move |sig| {
            for &pid in &pids {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
            }
        }));
    }
    Ok(handles)
}

/// Reports the step's end to batchd. A daemon restarting is waited for (a few seconds, as
/// slurmstepd retries its messages); a job that ended meanwhile has recorded its steps' ends
/// itself, and a refusal is final.
fn report_end(cli: &RunCli, me: &str, end: &StepEndRequest) {
    let mut last = String::new();
    for attempt in 0..20 {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(500));
        }
        let sent =
            connect(cli.socket.path()).and_then(|mut c| c.request(&Request::StepEnd(end.clone())));
        match sent {
            Ok(_) => return,
            Err(ClientError::Daemon(e)) => {
                last = e.message;
                break;
            }
            Err(e) => last = e.to_string(),
        }
    }
    eprintln!(
        "{me}: error: cannot record the end of step {}.{}: {last}",
        end.job_id, end.step
    );
}

/// Asks batchd for the step, waiting while its nodes are busy with other steps, as srun does.
fn start_step(
    cli: &RunCli,
    me: &str,
    req: &StepStartRequest,
    forwarder: &tasks::Forwarder,
) -> anyhow::Result<StepStarted> {
    let mut said = false;
    loop {
        if forwarder.stopped() {
            bail!("Job step aborted before it started");
        }
        let mut client = connect(cli.socket.path())?;
        match client.request(&Request::StepStart(req.clone())) {
            Ok(Response::StepStarted(s)) => {
                if said && !cli.quiet {
                    eprintln!("{me}: Step created for job {}", req.job_id);
                }
                return Ok(s);
            }
            Ok(other) => return Err(ClientError::unexpected("step-start", &other).into()),
            Err(ClientError::Daemon(e)) if e.kind == ErrorKind::Busy => {
                if !said && !cli.quiet {
                    eprintln!(
                        "{me}: Job {} step creation temporarily disabled, retrying ({})",
                        req.job_id, e.message
                    );
                    said = true;
                }
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(ClientError::Daemon(e)) => bail!(
                "Unable to create step for job {}: {}",
                req.job_id,
                e.message
            ),
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli(args: &[&str]) -> RunCli {
        RunCli::try_parse_from(std::iter::once("erun").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn short_options_take_attached_values_as_srun() {
        // srun -N2 -n4 ./a.out: getopt's attached values, then the command's own.
        let c = cli(&["-N2", "-n4", "./a.out", "-n1"]);
        assert_eq!(c.nodes.as_deref(), Some("2"));
        assert_eq!(c.ntasks, Some(4));
        assert_eq!(c.command, ["./a.out", "-n1"]);
    }

    #[test]
    fn the_command_keeps_its_own_options() {
        let c = cli(&[
            "--unbuffered",
            "-n",
            "2",
            "python",
            "-u",
            "-m",
            "x",
            "--label",
        ]);
        assert_eq!(c.ntasks, Some(2));
        assert!(!c.label);
        assert_eq!(c.command, ["python", "-u", "-m", "x", "--label"]);
        assert!(RunCli::try_parse_from(["erun", "-n", "2"]).is_err());
    }

    #[test]
    fn defaults_come_from_the_job_as_srun_takes_them() {
        // srun hostname in a 4-node job without -n: one task per node.
        let r = cli(&["hostname"]).step_request(7, Some(4), None).unwrap();
        assert_eq!((r.tasks, r.nodes), (4, 4));
        // ... with SLURM_NTASKS=8: eight tasks over the job's nodes.
        let r = cli(&["hostname"])
            .step_request(7, Some(4), Some(8))
            .unwrap();
        assert_eq!((r.tasks, r.nodes), (8, 4));
        // -n alone: batchd spreads them over as many nodes as it can.
        let r = cli(&["-n", "2", "hostname"])
            .step_request(7, Some(4), Some(8))
            .unwrap();
        assert_eq!((r.tasks, r.nodes), (2, 0));
        // -N alone: one task per node.
        let r = cli(&["-N", "2", "x"])
            .step_request(7, Some(4), Some(8))
            .unwrap();
        assert_eq!((r.tasks, r.nodes), (2, 2));
        let r = cli(&["--ntasks-per-node=3", "x"])
            .step_request(7, Some(2), None)
            .unwrap();
        assert_eq!((r.tasks_per_node, r.nodes), (3, 2));
        assert_eq!(r.name, "x");
        // srun -N 4 -n 2: two nodes, as srun lowers them.
        let r = cli(&["-N", "4", "-n", "2", "x"])
            .step_request(7, Some(4), None)
            .unwrap();
        assert_eq!((r.tasks, r.nodes), (2, 2));
        // -c implies --exact, as in Slurm 22.05.
        assert!(
            cli(&["-c", "2", "x"])
                .step_request(7, Some(1), None)
                .unwrap()
                .exact
        );
        assert!(!cli(&["x"]).step_request(7, Some(1), None).unwrap().exact);
        assert!(cli(&["-n", "0", "x"]).step_request(7, None, None).is_err());
    }
}
