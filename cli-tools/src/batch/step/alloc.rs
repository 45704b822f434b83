//! An allocation of erun's or ealloc's own: what srun does outside a job and what salloc does.
//!
//! The allocation is a batch job whose script only holds the nodes: it waits until erun or
//! ealloc is done with them and then ends the way they say, COMPLETED (0) or FAILED (1), so
//! that eacct tells a run that worked from one that did not. The steps run as in any job,
//! through batchd's `StepStart`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use batch_proto::{
    CancelRequest, ClientError, JobFilter, JobInfo, JobSpec, JobState, Request, Response,
    ShowJobRequest, SignalScope, SubmitRequest,
};

use super::tasks::Forwarder;
use super::RunCli;
use crate::batch::cli::connect;
use crate::batch::time::{parse_time_limit, TimeLimit};

/// The allocation's script: waits, and ends 0 on SIGWINCH or 1 on SIGURG (sent to the batch
/// shell alone by [`Allocation::release`]). Both are ignored by default, so one that comes
/// before the traps are set is lost, not fatal, and the release sends it again. A cancel or
/// the time limit ends it as any job.
const HOLDER: &str = "#!/bin/sh\n\
# Holds an allocation for erun or ealloc; they end it with WINCH (done) or URG (failed).\n\
trap 'kill $p 2>/dev/null; exit 0' WINCH\n\
trap 'kill $p 2>/dev/null; exit 1' URG\n\
sleep 2147483647 & p=$!\n\
wait $p\n";

/// What an allocation asks for.
#[derive(Clone, Debug, Default)]
pub struct AllocRequest {
    /// `-N`.
    pub nodes: Option<u32>,
    /// `-n`.
    pub ntasks: Option<u32>,
    /// `-c`.
    pub cpus_per_task: Option<u32>,
    /// `--ntasks-per-node`.
    pub ntasks_per_node: Option<u32>,
    /// `-t`.
    pub time: Option<String>,
    /// `-p`.
    pub partition: Option<String>,
    /// `-A`.
    pub account: Option<String>,
    /// `-J`.
    pub name: String,
    /// `--socket`.
    pub socket: Option<PathBuf>,
    /// `-Q`.
    pub quiet: bool,
}

/// A running allocation.
pub struct Allocation {
    /// Its job id.
    pub id: u64,
    /// What it tells its steps and commands: `SLURM_JOB_ID`, its nodes, ...
    pub env: Vec<(String, String)>,
    /// Its node count.
    pub nodes: u32,
    socket: Option<PathBuf>,
}

impl Allocation {
    /// Submits the allocation and waits until it runs; `me` names the tool in messages.
    /// A signal to the tool meanwhile cancels it.
    pub fn get(req: &AllocRequest, me: &str, forwarder: &Forwarder) -> anyhow::Result<Allocation> {
        let cwd = std::env::current_dir().context("cannot determine the current directory")?;
        let cwd = cwd.to_str().context("the current directory is not UTF-8")?;
        let time = match req.time.as_deref().map(parse_time_limit).transpose()? {
            None => crate::batch::submit::DEFAULT_TIME_LIMIT,
            Some(TimeLimit::Limited(d)) => d,
            Some(TimeLimit::Unlimited) => batch_proto::TIME_UNLIMITED,
        };
        let mut spec = JobSpec::new(HOLDER, cwd, req.nodes.unwrap_or(1), time);
        spec.name = req.name.clone();
        spec.pool = req.partition.clone();
        spec.account = req.account.clone();
        spec.stdout = Some("/dev/null".into());
        spec.environment = std::env::vars().collect();
        spec.submit_dir = Some(cwd.to_string());
        let resources = batch_proto::resources::Resources {
            nodes: req.nodes,
            ntasks: req.ntasks,
            cpus_per_task: req.cpus_per_task,
            ntasks_per_node: req.ntasks_per_node,
            ..Default::default()
        };
        if !resources.is_empty() {
            spec.resources = Some(Box::new(resources));
        }
        let mut client = connect(req.socket.as_deref())?;
        let id = match client.request(&Request::Submit(SubmitRequest {
            spec,
            test_only: false,
        }))? {
            Response::Submitted { id } => id,
            other => return Err(ClientError::unexpected("submit", &other).into()),
        };
        let alloc = Allocation {
            id,
            env: Vec::new(),
            nodes: 0,
            socket: req.socket.clone(),
        };
        let mut said = false;
        let asked = std::time::Instant::now();
        loop {
            if forwarder.stopped() {
                alloc.cancel();
                bail!("Job allocation {id} has been revoked");
            }
            let job = show(&mut client, id)?;
            match job.state {
                JobState::Running => {
                    if said && !req.quiet {
                        eprintln!("{me}: job {id} has been allocated resources");
                    }
                    return Ok(Allocation {
                        env: variables(&job, req),
                        nodes: job.nodes,
                        ..alloc
                    });
                }
                // Said only when the wait is noticeable, as srun does.
                JobState::Pending if asked.elapsed() >= Duration::from_secs(1) => {
                    if !said && !req.quiet {
                        eprintln!("{me}: job {id} queued and waiting for resources");
                        said = true;
                    }
                }
                JobState::Pending => {}
                s => bail!("Job allocation {id} has been revoked ({s})"),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Ends the allocation: COMPLETED when `ok`, else FAILED. Returns once it has ended (or
    /// after a few seconds), so that what runs next sees its nodes free and its end recorded.
    pub fn release(&self, ok: bool) {
        let sig = if ok {
            nix::libc::SIGWINCH
        } else {
            nix::libc::SIGURG
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let mut sent = std::time::Instant::now() - Duration::from_secs(1);
        while std::time::Instant::now() < deadline {
            // Again now and then: the holder may not have set its traps yet.
            if sent.elapsed() >= Duration::from_millis(200) {
                self.signal(Some(sig));
                sent = std::time::Instant::now();
            }
            let ended = connect(self.socket.as_deref())
                .map_err(anyhow::Error::from)
                .and_then(|mut c| show(&mut c, self.id))
                .map_or(true, |j| j.state.is_finished());
            if ended {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Cancels the allocation.
    pub fn cancel(&self) {
        self.signal(None);
    }

    fn signal(&self, signal: Option<i32>) {
        let req = CancelRequest {
            filter: JobFilter {
                ids: vec![self.id],
                ..Default::default()
            },
            signal,
            scope: SignalScope::Batch,
        };
        let _ = connect(self.socket.as_deref()).and_then(|mut c| c.request(&Request::Cancel(req)));
    }
}

fn show(client: &mut batch_proto::Client, id: u64) -> anyhow::Result<JobInfo> {
    client
        .jobs(&Request::ShowJob(ShowJobRequest { id }))?
        .into_iter()
        .next()
        .with_context(|| format!("job {id} is gone"))
}

/// The variables a job's commands see, for an allocation's (salloc's output environment).
fn variables(job: &JobInfo, req: &AllocRequest) -> Vec<(String, String)> {
    let nodes = job.node_list.clone().unwrap_or_default();
    let mut v = vec![
        ("SLURM_JOB_ID", job.id.to_string()),
        ("SLURM_JOBID", job.id.to_string()),
        ("SLURM_JOB_NAME", job.name.clone()),
        ("SLURM_JOB_NODELIST", nodes.clone()),
        ("SLURM_NODELIST", nodes),
        ("SLURM_NNODES", job.nodes.to_string()),
        ("SLURM_JOB_NUM_NODES", job.nodes.to_string()),
        ("SLURM_JOB_PARTITION", job.pool.clone().unwrap_or_default()),
        ("SLURM_JOB_USER", job.user.clone()),
        ("SLURM_JOB_UID", job.uid.to_string()),
    ];
    if let Ok(d) = std::env::current_dir() {
        v.push(("SLURM_SUBMIT_DIR", d.display().to_string()));
    }
    let ntasks = req
        .ntasks
        .or(req.ntasks_per_node.map(|t| t.saturating_mul(job.nodes)));
    if let Some(n) = ntasks {
        v.push(("SLURM_NTASKS", n.to_string()));
        v.push(("SLURM_NPROCS", n.to_string()));
    }
    if let Some(c) = req.cpus_per_task {
        v.push(("SLURM_CPUS_PER_TASK", c.to_string()));
    }
    // The allocation's daemon, for the erun the command runs.
    if let Some(sock) = &req.socket {
        v.push(("ESCHED_SOCKET", sock.display().to_string()));
    }
    v.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// srun outside a job: an allocation for the step, the step, and the allocation released.
pub fn run_allocated(cli: &RunCli, me: &str) -> anyhow::Result<ExitCode> {
    let nodes = cli.nodes.as_deref().map(super::min_nodes).transpose()?;
    let name = cli.job_name.clone().unwrap_or_else(|| {
        Path::new(&cli.command[0])
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "erun".into())
    });
    let req = AllocRequest {
        nodes,
        ntasks: cli.ntasks,
        cpus_per_task: cli.cpus_per_task,
        ntasks_per_node: cli.ntasks_per_node,
        time: cli.time.clone(),
        partition: cli.partition.clone(),
        account: cli.account.clone(),
        name,
        socket: cli.socket.socket.clone(),
        quiet: cli.quiet,
    };
    let forwarder = Forwarder::start()?;
    let alloc = Allocation::get(&req, me, &forwarder)?;
    let r = super::run_in_job(
        cli,
        me,
        alloc.id,
        Some(alloc.nodes),
        cli.ntasks,
        &forwarder,
        &alloc.env,
    );
    alloc.release(matches!(&r, Ok(c) if *c == ExitCode::SUCCESS));
    r
}

/// `ealloc`'s command line (salloc's options).
#[derive(clap::Parser, Debug, Clone, Default)]
#[command(
    name = "ealloc",
    version,
    about = "Get an allocation of nodes and run a command in it (like salloc); `erun` inside \
             runs steps on its nodes"
)]
pub struct AllocCli {
    /// Number of nodes (`N` or `MIN-MAX`; the minimum is taken).
    #[arg(short = 'N', long = "nodes", value_name = "N")]
    pub nodes: Option<String>,
    /// Number of tasks.
    #[arg(short = 'n', long = "ntasks", value_name = "N")]
    pub ntasks: Option<u32>,
    /// CPUs per task.
    #[arg(short = 'c', long = "cpus-per-task", value_name = "N")]
    pub cpus_per_task: Option<u32>,
    /// Tasks on each node.
    #[arg(long = "ntasks-per-node", value_name = "N")]
    pub ntasks_per_node: Option<u32>,
    /// Time limit, in sbatch's forms.
    #[arg(short = 't', long = "time", value_name = "TIME")]
    pub time: Option<String>,
    /// Pool.
    #[arg(
        short = 'p',
        long = "partition",
        visible_alias = "pool",
        value_name = "POOL"
    )]
    pub partition: Option<String>,
    /// Account (stored and shown).
    #[arg(short = 'A', long = "account", value_name = "NAME")]
    pub account: Option<String>,
    /// Job name (default: the command's).
    #[arg(short = 'J', long = "job-name", value_name = "NAME")]
    pub job_name: Option<String>,
    /// Say less.
    #[arg(short = 'Q', long = "quiet")]
    pub quiet: bool,
    /// The daemon's socket.
    #[command(flatten)]
    pub socket: crate::batch::args::SocketArg,
    /// The command and its arguments (default: your shell).
    // No `allow_hyphen_values`: with it clap takes `-N2` (getopt's attached value, as salloc
    // reads it) for the command.
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

/// ealloc: the allocation, the command run here with its variables, the allocation released
/// when the command ends; the exit code is the command's.
pub fn run_salloc(cli: AllocCli) -> anyhow::Result<ExitCode> {
    let me = crate::batch::cli::invoked_name("ealloc");
    let command: Vec<std::ffi::OsString> = if cli.command.is_empty() {
        vec![std::env::var_os("SHELL").unwrap_or_else(|| "/bin/sh".into())]
    } else {
        cli.command.clone()
    };
    let name = cli.job_name.clone().unwrap_or_else(|| {
        Path::new(&command[0])
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "ealloc".into())
    });
    let req = AllocRequest {
        nodes: cli.nodes.as_deref().map(super::min_nodes).transpose()?,
        ntasks: cli.ntasks,
        cpus_per_task: cli.cpus_per_task,
        ntasks_per_node: cli.ntasks_per_node,
        time: cli.time.clone(),
        partition: cli.partition.clone(),
        account: cli.account.clone(),
        name,
        socket: cli.socket.socket.clone(),
        quiet: true,
    };
    let forwarder = Forwarder::start()?;
    let alloc = Allocation::get(&req, me, &forwarder)?;
    if !cli.quiet {
        eprintln!("{me}: Granted job allocation {}", alloc.id);
    }
    // The command runs here, in the foreground, as salloc's does; it starts with an empty
    // signal mask, so a terminal's Ctrl-C reaches it.
    let status = std::process::Command::new(&command[0])
        .args(&command[1..])
        .envs(alloc.env.iter().map(|(k, v)| (k, v)))
        .status();
    let code = match &status {
        Ok(s) => {
            use std::os::unix::process::ExitStatusExt;
            s.code()
                .unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
                .clamp(0, 255) as u8
        }
        Err(_) => 127,
    };
    if !cli.quiet {
        eprintln!("{me}: Relinquishing job allocation {}", alloc.id);
    }
    alloc.release(code == 0);
    if let Err(e) = status {
        bail!("cannot run {}: {e}", command[0].to_string_lossy());
    }
    Ok(ExitCode::from(code))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[test]
    fn short_options_take_attached_values_as_salloc() {
        // salloc -N2 -t5 cmd -N1: getopt's attached values, then the command's own.
        let c = super::AllocCli::try_parse_from(["ealloc", "-N2", "-t5", "cmd", "-N1"]).unwrap();
        assert_eq!(c.command, ["cmd", "-N1"]);
    }
}
