//! econtrol: show, hold, release and update jobs, switch policy — as scontrol.

use std::process::ExitCode;

use batch_proto::time::Time;
use batch_proto::Step;
use batch_proto::{
    ClientError, ClusterInfo, DaemonStats, HoldRequest, InfoRequest, JobInfo, JobShape,
    ListRequest, NodeAdminState, NodeState, ReconfigureRequest, Request, RequeueRequest, Response,
    ShowJobRequest, StatsRequest, StepStatus, Timing, UnholdRequest, UpdateNodesRequest,
    UpdateRequest, VersionRequest,
};
use clap::{Parser, Subcommand};

use super::args::GlobalSocketArg;
use super::cli::{connect, now_ms, print_out, resolve_ids};
use super::escape::shown;
use super::format::{reason, time_used};
use super::time::{
    format_opt_timestamp, format_sacct_duration, format_timestamp, local_zone, parse_begin,
    parse_time_limit, TimeLimit, Zone,
};

/// `econtrol`'s command line.
#[derive(Parser, Debug)]
#[command(
    name = "econtrol",
    version,
    about = "Control batchd jobs and configuration (like scontrol)"
)]
pub struct ControlCli {
    /// What to do.
    #[command(subcommand)]
    pub command: ControlCommand,
    /// JSON output for `show`.
    #[arg(long, global = true)]
    pub json: bool,
    /// `show`: each record on one line, as scontrol's `-o`.
    #[arg(short = 'o', long = "oneliner", global = true)]
    pub oneliner: bool,
    /// scontrol's `-d` (more details): accepted; `show job` already shows every detail
    /// batchd has.
    #[arg(short = 'd', long = "details", global = true)]
    pub details: bool,
    /// The daemon's socket.
    #[command(flatten)]
    pub socket: GlobalSocketArg,
}

/// econtrol's verbs.
#[derive(Subcommand, Debug)]
pub enum ControlCommand {
    /// Show a job (`show job [ID]`), the pools (`show pools [NAME]`), nodes (`show node
    /// [NAME or LIST]`), a host list one name a line (`show hostnames LIST`, as scontrol;
    /// LIST defaults to $SLURM_JOB_NODELIST, then $ESCHED_NODELIST), or the daemon's figures
    /// (`show stats`, as sdiag).
    Show {
        /// `job`, `pools`, `node`, `hostnames` or `stats`.
        #[arg(value_parser = ["job", "jobs", "jobid", "pool", "pools", "partition", "partitions", "hostnames", "node", "nodes", "stats"])]
        entity: String,
        /// The job id or pool name (all queued jobs or all pools when omitted).
        id: Option<String>,
    },
    /// Hold pending jobs: they stay queued but do not start.
    Hold {
        /// Job ids.
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Release held jobs: they may start again (`Unhold` in the protocol).
    #[command(name = "release")]
    Unhold {
        /// Job ids.
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Requeue running or finished batch jobs: killed if running, then pending again with
    /// the same id (`requeue ID[,ID...]`, as scontrol).
    Requeue {
        /// Job ids (`ID`, `ID_N`, comma-separated or several).
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Requeue jobs held: as `requeue`, then they wait for `econtrol release`.
    #[command(name = "requeuehold")]
    RequeueHold {
        /// Job ids.
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Change a pending job: `update JobId=N [Name=..] [TimeLimit=[+|-]..] [NumNodes=..]
    /// [StartTime=..] [Priority=..] [Partition=..] [Dependency=..]` (JobId=ID_N: an array
    /// task; an array's ID: every task; `Job=` as scontrol abbreviates it); or nodes:
    /// `update NodeName=LIST State=DOWN|DRAIN|RESUME|UNDRAIN [Reason=..]` (root; a reason
    /// is required with DOWN and DRAIN).
    Update {
        /// `Key=Value` pairs.
        #[arg(required = true)]
        pairs: Vec<String>,
    },
    /// Re-read the configuration file and switch to the policy it names.
    Reconfigure,
    /// The daemon's versions and policy.
    Version,
    /// Write the daemon's state as a snapshot file (pools and nodes, running jobs, the queue,
    /// the policy in force) to FILE, or to standard output (docs/whatif.md).
    Snapshot {
        /// Where to write it (`-` or nothing: standard output).
        file: Option<std::path::PathBuf>,
    },
    /// Replay the daemon's queue under the policy in force and under other policies, with no
    /// new arrivals: every pending job's expected start and the queue's figures side by side
    /// (a snapshot, then `esim whatif` in this process's child; docs/whatif.md).
    Whatif {
        /// A policy to compare: `NAME` or `NAME:KEY=VALUE,…` (`evolving:expand=2X`);
        /// repeatable.
        #[arg(long = "policy", value_name = "SPEC", required = true)]
        policies: Vec<String>,
        /// Run-time model: `walltime` (default), `ratio:X`, or `history` (each user's past
        /// ratio of run time to limit, from the daemon's accounting, or from `--history`).
        #[arg(long, value_name = "MODEL")]
        runtime: Option<String>,
        /// An accounting export for `--runtime history` to learn from instead of the
        /// daemon's (`eacct -a -P -o User,ElapsedRaw,TimelimitRaw` or `eacct -a --json`).
        #[arg(long, value_name = "FILE")]
        history: Option<std::path::PathBuf>,
        /// Also write the plans as an SVG file.
        #[arg(long, value_name = "FILE")]
        svg: Option<std::path::PathBuf>,
        /// Also write the plans as a PNG file.
        #[arg(long, value_name = "FILE")]
        png: Option<std::path::PathBuf>,
    },
}

/// Parses `update`'s `Key=Value` pairs (keys in any case, as scontrol). `JobId=` may name an
/// array task (`ID_N`) or a whole array (`ID`): the request's `id` is then the one given, and
/// [`update_targets`] finds the jobs it names.
pub fn parse_update(pairs: &[String], now: Time, zone: &Zone) -> anyhow::Result<UpdateRequest> {
    parse_update_ref(pairs, now, zone).map(|(_, req)| req)
}

/// Parses a node's `update` (`NodeName=LIST State=DOWN|DRAIN|RESUME|UNDRAIN [Reason=..]`, as
/// scontrol); `None` when the pairs name no node (a job's update).
pub fn parse_node_update(pairs: &[String]) -> Option<anyhow::Result<UpdateNodesRequest>> {
    let key = |p: &String| {
        p.split_once('=')
            .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
    };
    if !pairs
        .iter()
        .filter_map(key)
        .any(|(k, _)| k == "nodename" || k == "node")
    {
        return None;
    }
    let parse = || {
        let (mut nodes, mut state, mut reason) = (None, None, None);
        for p in pairs {
            let (k, v) =
                key(p).ok_or_else(|| anyhow::anyhow!("Invalid input: {p} (expected Key=Value)"))?;
            match k.as_str() {
                "nodename" | "node" => nodes = Some(v),
                "state" => {
                    state = Some(
                        v.parse::<NodeAdminState>()
                            .map_err(|e| anyhow::anyhow!("{e}"))?,
                    )
                }
                "reason" => reason = Some(v),
                _ => anyhow::bail!("Update of this parameter is not supported: {k}"),
            }
        }
        let nodes = nodes
            .filter(|n| !n.is_empty())
            .ok_or_else(|| anyhow::anyhow!("No node name specified (NodeName=LIST)"))?;
        let state = state.ok_or_else(|| {
            anyhow::anyhow!("No State= specified (DOWN, DRAIN, RESUME or UNDRAIN)")
        })?;
        if matches!(state, NodeAdminState::Down | NodeAdminState::Drain)
            && reason.as_deref().is_none_or(|r| r.trim().is_empty())
        {
            anyhow::bail!(
                "You must specify a reason when DOWNING or DRAINING a node. Request denied"
            );
        }
        Ok(UpdateNodesRequest {
            nodes,
            state,
            reason,
        })
    };
    Some(parse())
}

/// [`parse_update`], with the `JobId=` value as given.
fn parse_update_ref(
    pairs: &[String],
    now: Time,
    zone: &Zone,
) -> anyhow::Result<(String, UpdateRequest)> {
    let mut req = UpdateRequest::default();
    let mut id = None;
    let mut job = String::new();
    for p in pairs {
        let (k, v) = p
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("Invalid input: {p} (expected Key=Value)"))?;
        match k.to_ascii_lowercase().as_str() {
            // scontrol takes `JobId` abbreviated to three letters or more.
            "jobid" | "jobi" | "job" => {
                let (ids, tasks) = super::cli::parse_refs(&[v.to_string()])?;
                id = ids.first().or(tasks.first().map(|(a, _)| a)).copied();
                job = v.to_string();
            }
            "name" | "jobname" => req.name = Some(v.to_string()),
            // `+N`/`-N` change the job's own limit: see `time_limit_change`.
            "timelimit" if v.starts_with(['+', '-']) => {
                time_limit_change(v)?;
            }
            "partition" => {
                if v.is_empty() {
                    anyhow::bail!("Invalid Partition value: (empty)");
                }
                req.pool = Some(v.to_string());
            }
            "dependency" => {
                req.dependencies = Some(if v.is_empty() {
                    Vec::new()
                } else {
                    batch_proto::Dependency::parse_list(v)?
                });
            }
            "timelimit" => match parse_time_limit(v)? {
                TimeLimit::Limited(d) => req.time_limit = Some(d),
                // The pool's max_time, as for `esubmit -t UNLIMITED`: batchd resolves it.
                TimeLimit::Unlimited => req.time_limit = Some(batch_proto::TIME_UNLIMITED),
            },
            "numnodes" | "nodes" => {
                req.nodes = Some(super::spec::parse_nodes(v)?);
            }
            "starttime" | "begintime" => req.begin = Some(parse_begin(v, now, zone)?),
            "priority" => {
                req.priority = Some(
                    v.parse()
                        .map_err(|_| anyhow::anyhow!("Invalid Priority value: {v}"))?,
                )
            }
            _ => anyhow::bail!("Update of this parameter is not supported: {k}"),
        }
    }
    req.id = id
        .filter(|i| *i > 0)
        .ok_or_else(|| anyhow::anyhow!("No job id specified (JobId=N)"))?;
    Ok((job, req))
}

/// A duration in seconds as `esubmit --profile` reads it. A scheduled EP's step may be expanded
/// to end off a whole second (it waits for nodes another job frees at any millisecond): such a
/// duration keeps its milliseconds as a decimal fraction (`12.5`) rather than being rounded to
/// a number that is not what the job gets.
fn profile_seconds(ms: u64) -> String {
    let (secs, rest) = (ms / 1000, ms % 1000);
    if rest == 0 {
        secs.to_string()
    } else {
        format!("{secs}.{rest:03}")
            .trim_end_matches('0')
            .to_string()
    }
}

/// Steps as `SECONDS:NODES,...`, the syntax of `esubmit --profile`, for both the requested
/// profile and the scheduled EP so that the two read side by side.
pub fn format_steps(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|s| format!("{}:{}", profile_seconds(s.duration), s.nodes))
        .collect::<Vec<_>>()
        .join(",")
}

/// The `Step=` line of a running evolving job (without indent or newline).
pub fn step_line(st: &StepStatus, zone: &Zone) -> String {
    let mut s = format!(
        "Step={} StepPhase={} StepNodes={} StepEnd={} NextStepNodes={}",
        st.short(),
        st.phase,
        st.nodes,
        format_timestamp(st.ends, zone),
        st.next_nodes
            .map_or_else(|| "(null)".to_string(), |n| n.to_string()),
    );
    if let Some(list) = &st.chosen_release {
        s.push_str(" ChosenRelease=");
        s.push_str(list);
    }
    s
}

/// The nodes `name` names (one node, or a host list; all of them when `None`), each with its
/// pool, in scontrol's `show node` layout: `NodeName=`, CPUs (`CPUTot=` the pool's
/// `cpus_per_node`; every CPU is allocated with the node, since nodes are whole),
/// `RealMemory=` (the pool's `mem_per_node`, 1 when it has none, Slurm's default), `State=`
/// and the job on it.
pub fn show_nodes(info: &ClusterInfo, name: Option<&str>) -> anyhow::Result<String> {
    let wanted: Option<Vec<String>> = match name {
        None => None,
        Some(n) => Some(
            batch_proto::hostlist::expand(n).map_err(|_| anyhow::anyhow!("Node {n} not found"))?,
        ),
    };
    let mut out = String::new();
    let mut found = Vec::new();
    for p in &info.pools {
        for node in &p.nodes {
            if wanted.as_ref().is_some_and(|w| !w.contains(&node.name)) {
                continue;
            }
            found.push(node.name.clone());
            let held = node.state == NodeState::Allocated;
            let mem = p.mem_per_node.unwrap_or(1);
            let base = match node.state {
                NodeState::Idle => "IDLE",
                NodeState::Allocated => "ALLOCATED",
                NodeState::Reserved => "RESERVED",
            };
            // scontrol's `State=IDLE+DRAIN`, `DOWN`, and the reason with who and when.
            let (state, reason) = match &node.condition {
                None => (base.to_string(), String::new()),
                Some(c) => (
                    if c.down {
                        "DOWN".to_string()
                    } else {
                        format!("{base}+DRAIN")
                    },
                    format!(
                        "   Reason={} [{}@{}]\n",
                        shown(&c.reason),
                        shown(&c.user),
                        super::time::format_timestamp(c.since, &local_zone())
                    ),
                ),
            };
            out.push_str(&format!(
                "NodeName={}\n   CPUAlloc={} CPUTot={}\n   RealMemory={mem} AllocMem={}\n   \
                 State={state} Partitions={}\n   JobId={}\n{reason}\n",
                shown(&node.name),
                if held { p.cpus_per_node } else { 0 },
                p.cpus_per_node,
                if held { mem } else { 0 },
                shown(&p.name),
                node.job
                    .map_or_else(|| "(null)".to_string(), |j| j.to_string()),
            ));
        }
    }
    if let Some(w) = wanted {
        if let Some(missing) = w.iter().find(|n| !found.contains(n)) {
            anyhow::bail!("Node {missing} not found");
        }
    }
    Ok(out)
}

/// The daemon's figures in scontrol's `Key=Value` layout, one group a line; times in `zone`,
/// durations in ms (`Ms` keys) but the uptime (sacct's `D-HH:MM:SS`), `(null)` for what there
/// is none of yet. A timing is its count, total and the p50/p90/p99 of the recent ones, and
/// the longest.
pub fn show_stats(s: &DaemonStats, zone: &Zone) -> String {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "(null)".to_string());
    let ms = |v: Option<f64>| opt(v.map(|v| format!("{v:.3}")));
    let timing = |key: &str, count: &str, t: &Timing| {
        format!(
            "{count}={} {key}TotalMs={:.3} {key}MsP50={} {key}MsP90={} {key}MsP99={} {key}MsMax={}",
            t.count,
            t.total_ms,
            ms(t.p50_ms),
            ms(t.p90_ms),
            ms(t.p99_ms),
            ms(t.max_ms),
        )
    };
    format!(
        "StartTime={} Now={} Uptime={}\n   Policy={} PolicySince={} TimeBudgetMs={}\n   \
         PolicyCalls={} PolicyPanics={} PolicyErrors={} RefusedPlans={} PolicyTimeouts={}\n   \
         CallRunningMs={} CallPastBudget={}\n   LastPlanMs={} LongestPlanMs={}\n   \
         TestOnlyTimeouts={}\n   Pending={} Running={}\n   \
         JobsSubmitted={} JobsStarted={} JobsCompleted={} JobsFailed={} JobsCancelled={}\n   \
         {}\n   {}\n   {}\n   Connections={} ConnectionsOpen={}\n",
        format_timestamp(s.started, zone),
        format_timestamp(s.now, zone),
        format_sacct_duration(s.now.saturating_sub(s.started)),
        s.policy,
        format_timestamp(s.policy_since, zone),
        s.time_budget_ms,
        s.policy_calls,
        s.policy_panics,
        s.policy_errors,
        s.refused_plans,
        s.policy_timeouts,
        opt(s.call_running_ms.map(|v| v.to_string())),
        if s.call_past_budget { "YES" } else { "NO" },
        ms(s.last_plan_ms),
        ms(s.longest_plan_ms),
        s.test_only_timeouts,
        s.pending,
        s.running,
        s.jobs_submitted,
        s.jobs_started,
        s.jobs_completed,
        s.jobs_failed,
        s.jobs_cancelled,
        timing("Pass", "Passes", &s.passes),
        timing("PolicyCall", "PolicyCallsTimed", &s.policy_call),
        timing("StoreCommit", "StoreCommits", &s.store_commit),
        s.connections,
        s.connections_open,
    )
}

/// A job in scontrol's `Key=Value` layout, every text its user chose escaped ([`shown`]).
pub fn show_job(j: &JobInfo, now: Time, zone: &Zone) -> String {
    let ts = |t: Option<Time>| format_opt_timestamp(t, zone);
    let deps = if j.dependencies.is_empty() {
        "(null)".to_string()
    } else {
        j.dependencies
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    let exit = match (j.exit_code, j.signal) {
        (None, None) => "0:0".to_string(),
        _ => j.exit_status(),
    };
    let shape = match &j.shape {
        JobShape::Rigid { .. } => "rigid".to_string(),
        JobShape::Evolving { steps } => format!("evolving({})", format_steps(steps)),
        JobShape::Session { pools, .. } if pools.is_empty() => "session(no request)".to_string(),
        JobShape::Session { pools, .. } => format!(
            "session({})",
            pools
                .iter()
                .map(|p| format!("{}:{}", shown(&p.pool), p.nodes))
                .collect::<Vec<_>>()
                .join(",")
        ),
        JobShape::Moldable {
            configs,
            model,
            weight,
        } => {
            // The syntax of esubmit's options, so that the request reads as it was given.
            let mut parts: Vec<String> = configs
                .iter()
                .map(|c| format!("{}:{}", c.nodes, format_sacct_duration(c.walltime)))
                .collect();
            if let Some(m) = model {
                parts.push(match m.model {
                    batch_proto::SpeedupModel::Amdahl { work, serial } => {
                        format!("amdahl:{}:{serial}", format_sacct_duration(work))
                    }
                    batch_proto::SpeedupModel::Linear { work } => {
                        format!("linear:{}", format_sacct_duration(work))
                    }
                });
                parts.push(format!("nodes-range:{}-{}", m.min_nodes, m.max_nodes));
            }
            if let Some(w) = weight {
                parts.push(format!("weight:{w}"));
            }
            format!("moldable({})", parts.join(","))
        }
        JobShape::CoAllocated { components, .. } => format!(
            "coallocated({})",
            components
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
    };
    let reason = if j.state == batch_proto::JobState::Pending {
        reason(j)
    } else {
        "None".into()
    };
    let mut s = format!(
        "JobId={}{} JobName={}\n   UserId={}({}) Priority={} Account={} QOS={}\n   JobState={} Reason={}{} Dependency={}\n   \
         Held={} ExitCode={}\n   RunTime={} TimeLimit={}\n   SubmitTime={} BeginTime={}\n   \
         StartTime={} EndTime={}\n   Partition={} NodeList={}\n   NumNodes={} Shape={}\n",

        j.id,
        j.array.map_or_else(String::new, |t| format!(
            " ArrayJobId={} ArrayTaskId={}{}",
            t.array_id,
            t.index,
            t.throttle.map_or_else(String::new, |n| format!(" ArrayTaskThrottle={n}"))
        )),
        shown(&j.name),
        shown(&j.user),
        j.uid,
        j.priority,
        shown(j.account.as_deref().unwrap_or("(null)")),
        shown(j.qos.as_deref().unwrap_or("(null)")),
        j.state.name(),
        reason,
        j.detail.as_ref().map_or_else(String::new, |d| format!(" Detail=\"{}\"", shown(d))),
        deps,
        u8::from(j.held),
        exit,
        format_sacct_duration(time_used(j, now)),
        format_sacct_duration(j.time_limit),
        ts(Some(j.submit_time)),
        ts(j.begin),
        ts(j.start_time.or(j.expected_start)),
        ts(j.end_time),
        shown(j.pool.as_deref().unwrap_or("(any)")),
        shown(j.node_list.as_deref().unwrap_or("(null)")),
        j.nodes,
        shape,
    );
    if let Some(a) = &j.slurm_allocations {
        s.push_str(&format!("   SlurmJobId={}\n", shown(a)));
    }
    if let Some(w) = &j.warn_signal {
        // sbatch's own syntax, so that it reads as it was given (`B:USR1@90`).
        s.push_str(&format!("   Signal={w}\n"));
    }
    if let Some(i) = &j.inert {
        s.push_str(&inert_line(i));
    }
    if let Some(c) = &j.chosen {
        // Before the start, what the latest plan expects; after, what the job runs with.
        let key = if j.state == batch_proto::JobState::Pending {
            "ExpectedConfig"
        } else {
            "ChosenConfig"
        };
        s.push_str(&format!(
            "   {key}={}x{}\n",
            c.nodes,
            format_sacct_duration(c.walltime)
        ));
    }
    if let Some(ep) = &j.scheduled_ep {
        s.push_str(&format!("   ScheduledEP={}\n", format_steps(ep)));
    }
    if let Some(st) = &j.step {
        s.push_str(&format!("   {}\n", shown(&step_line(st, zone))));
    }
    s.push_str(&format!(
        "   WorkDir={}\n   StdOut={}\n   StdErr={}\n",
        shown(&j.work_dir),
        shown(&j.stdout),
        shown(&j.stderr)
    ));
    if !j.args.is_empty() {
        s.push_str("   Args=");
        for (i, a) in j.args.iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            super::escape::push_shown(&mut s, a);
        }
        s.push('\n');
    }
    s
}

/// The Slurm options stored with the job that change nothing here, under scontrol's keys
/// (`Nice`, `TimeMin`, `MinTmpDiskNode`, `WCKey`, `Comment`, `MailUser`, `MailType`, `Profile`)
/// and, for those scontrol does not show, their option's name.
fn inert_line(i: &batch_proto::InertOptions) -> String {
    let mut keys: Vec<String> = Vec::new();
    let mut text = |k: &str, v: &Option<String>| {
        if let Some(v) = v {
            keys.push(format!("{k}={}", shown(v)));
        }
    };
    text("WCKey", &i.wckey);
    text("Comment", &i.comment);
    text("MailUser", &i.mail_user);
    text("MailType", &i.mail_type);
    text("Profile", &i.profile);
    text("Hint", &i.hint);
    text("Distribution", &i.distribution);
    if let Some(n) = i.nice {
        keys.push(format!("Nice={n}"));
    }
    if let Some(t) = i.time_min {
        keys.push(format!("TimeMin={}", format_sacct_duration(t)));
    }
    if let Some(t) = i.tmp_mb {
        keys.push(format!("MinTmpDiskNode={t}M"));
    }
    if i.no_kill {
        keys.push("NoKill=YES".into());
    }
    if keys.is_empty() {
        return String::new();
    }
    format!("   {}\n", keys.join(" "))
}

fn acted(verb: &str, resp: Response) -> anyhow::Result<ExitCode> {
    match resp {
        Response::Acted(r) => {
            for f in &r.failed {
                eprintln!("econtrol: error: {verb} job {}: {}", f.id, f.message);
            }
            Ok(if r.failed.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        other => Err(ClientError::unexpected("hold/release", &other).into()),
    }
}

/// `requeue` and `requeuehold` of the jobs `values` name (an array's id: every task).
fn requeue(
    client: &mut batch_proto::Client,
    values: &[String],
    hold: bool,
) -> anyhow::Result<ExitCode> {
    let ids = resolve_ids(client, values, true)?;
    acted(
        "requeue",
        client.request(&Request::Requeue(RequeueRequest { ids, hold }))?,
    )
}

/// `TimeLimit=+N` / `-N`: scontrol's change of the job's own limit by N (`-t`'s forms), as
/// `(grow, by)` in ms.
fn time_limit_change(v: &str) -> anyhow::Result<(bool, u64)> {
    let (grow, rest) = match (v.strip_prefix('+'), v.strip_prefix('-')) {
        (Some(r), _) => (true, r),
        (_, Some(r)) => (false, r),
        _ => anyhow::bail!("Invalid TimeLimit value: {v}"),
    };
    match parse_time_limit(rest)? {
        TimeLimit::Limited(d) => Ok((grow, d)),
        TimeLimit::Unlimited => anyhow::bail!("Invalid TimeLimit value: {v}"),
    }
}

/// The `TimeLimit=+N`/`-N` of `update`'s pairs, if any (the last one, as scontrol).
fn time_limit_delta(pairs: &[String]) -> anyhow::Result<Option<(bool, u64)>> {
    let mut out = None;
    for p in pairs {
        if let Some((k, v)) = p.split_once('=') {
            if k.eq_ignore_ascii_case("timelimit") {
                out = if v.starts_with(['+', '-']) {
                    Some(time_limit_change(v)?)
                } else {
                    None
                };
            }
        }
    }
    Ok(out)
}

/// `limit` changed by `delta` (see [`time_limit_change`]); a limit that would not stay
/// positive is scontrol's error.
fn changed_limit(limit: u64, (grow, by): (bool, u64)) -> anyhow::Result<u64> {
    let new = if grow {
        limit.saturating_add(by)
    } else {
        limit.saturating_sub(by)
    };
    if new == 0 {
        anyhow::bail!("Invalid TimeLimit value: the limit would not stay positive");
    }
    Ok(new)
}

/// scontrol `-o`: each record of `text` (records apart by a blank line, continued lines
/// indented by three spaces) on one line.
fn one_line_records(text: &str) -> String {
    text.split("\n\n")
        .map(|r| r.trim_end_matches('\n').replace("\n   ", " "))
        .filter(|r| !r.is_empty())
        .map(|r| r + "\n")
        .collect()
}

/// econtrol.
pub fn run(cli: ControlCli) -> anyhow::Result<ExitCode> {
    let now = now_ms();
    // Bad arguments are reported before touching the daemon.
    let update = match &cli.command {
        ControlCommand::Update { pairs } if parse_node_update(pairs).is_some() => None,
        ControlCommand::Update { pairs } => Some((
            parse_update_ref(pairs, now, &local_zone())?,
            time_limit_delta(pairs)?,
        )),
        _ => None,
    };
    let oneliner = cli.oneliner;
    let print_show = |text: &str| {
        if oneliner {
            print_out(&one_line_records(text))
        } else {
            print_out(text)
        }
    };
    if let ControlCommand::Show { entity, id } = &cli.command {
        if entity == "hostnames" {
            let list = id
                .clone()
                .or_else(|| std::env::var("SLURM_JOB_NODELIST").ok())
                .or_else(|| std::env::var("ESCHED_NODELIST").ok())
                .ok_or_else(|| anyhow::anyhow!("No nodelist specified"))?;
            let names = batch_proto::hostlist::expand(&list)
                .map_err(|e| anyhow::anyhow!("invalid host list '{list}': {e}"))?;
            print_out(&names.iter().map(|n| format!("{n}\n")).collect::<String>())?;
            return Ok(ExitCode::SUCCESS);
        }
    }
    if let ControlCommand::Show {
        entity,
        id: Some(id),
    } = &cli.command
    {
        if entity == "stats" {
            anyhow::bail!("show stats takes no argument (got {id})");
        }
    }
    let mut client = connect(cli.socket.path())?;
    match cli.command {
        ControlCommand::Show { entity, .. } if entity == "stats" => {
            match client.request(&Request::Stats(StatsRequest {}))? {
                Response::Stats(s) => {
                    if cli.json {
                        print_out(&(serde_json::to_string_pretty(&s)? + "\n"))?;
                    } else {
                        print_out(&show_stats(&s, &local_zone()))?;
                    }
                    Ok(ExitCode::SUCCESS)
                }
                other => Err(ClientError::unexpected("stats", &other).into()),
            }
        }
        ControlCommand::Show { entity, id } if entity.starts_with("job") => {
            let jobs = match id {
                Some(id) => {
                    let mut jobs = Vec::new();
                    for id in resolve_ids(&mut client, &[id], true)? {
                        jobs.extend(client.jobs(&Request::ShowJob(ShowJobRequest { id }))?);
                    }
                    jobs
                }
                None => client.jobs(&Request::List(ListRequest::default()))?,
            };
            if cli.json {
                print_out(&(serde_json::to_string_pretty(&jobs)? + "\n"))?;
            } else if jobs.is_empty() {
                print_out("No jobs in the system\n")?;
            } else {
                let text: Vec<String> = jobs
                    .iter()
                    .map(|j| show_job(j, now, &local_zone()))
                    .collect();
                print_show(&(text.join("\n")))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        ControlCommand::Show { entity, id } if entity.starts_with("node") => {
            match client.request(&Request::Info(InfoRequest {}))? {
                Response::Info(info) => {
                    let text = show_nodes(&info, id.as_deref())?;
                    if cli.json {
                        let nodes: Vec<serde_json::Value> = info
                            .pools
                            .iter()
                            .flat_map(|p| {
                                p.nodes.iter().map(move |n| {
                                    serde_json::json!({
                                        "name": n.name, "state": n.state, "job": n.job,
                                        "pool": p.name, "cpus": p.cpus_per_node,
                                        "mem": p.mem_per_node,
                                    })
                                })
                            })
                            .filter(|v| {
                                // The nodes the text shows.
                                v["name"]
                                    .as_str()
                                    .is_some_and(|n| text.contains(&format!("NodeName={n}\n")))
                            })
                            .collect();
                        print_out(&(serde_json::to_string_pretty(&nodes)? + "\n"))?;
                    } else {
                        print_show(&text)?;
                    }
                    Ok(ExitCode::SUCCESS)
                }
                other => Err(ClientError::unexpected("info", &other).into()),
            }
        }
        ControlCommand::Show { id, .. } => match client.request(&Request::Info(InfoRequest {}))? {
            Response::Info(mut info) => {
                if let Some(name) = id {
                    info.pools.retain(|p| p.name == name);
                    if info.pools.is_empty() {
                        anyhow::bail!("Partition {name} not found");
                    }
                }
                if cli.json {
                    print_out(&(serde_json::to_string_pretty(&info.pools)? + "\n"))?;
                } else {
                    let mut out = String::new();
                    for p in &info.pools {
                        out.push_str(&format!(
                            "PartitionName={}\n   Nodes={}\n   TotalNodes={} AllocNodes={}\n   \
                             Policy={}\n\n",
                            shown(&p.name),
                            shown(&p.node_list),
                            p.total,
                            p.allocated,
                            info.policy
                        ));
                    }
                    print_show(&out)?;
                }
                Ok(ExitCode::SUCCESS)
            }
            other => Err(ClientError::unexpected("info", &other).into()),
        },
        ControlCommand::Hold { ids } => {
            let ids = resolve_ids(&mut client, &ids, false)?;
            acted("hold", client.request(&Request::Hold(HoldRequest { ids }))?)
        }
        ControlCommand::Unhold { ids } => {
            let ids = resolve_ids(&mut client, &ids, false)?;
            acted(
                "release",
                client.request(&Request::Unhold(UnholdRequest { ids }))?,
            )
        }
        ControlCommand::Requeue { ids } => requeue(&mut client, &ids, false),
        ControlCommand::RequeueHold { ids } => requeue(&mut client, &ids, true),
        ControlCommand::Update { pairs } if parse_node_update(&pairs).is_some() => {
            let req = parse_node_update(&pairs)
                .ok_or_else(|| anyhow::anyhow!("internal: node update not parsed"))??;
            match client.request(&Request::UpdateNodes(req))? {
                Response::NodesUpdated(_) => Ok(ExitCode::SUCCESS),
                Response::Error(e) => Err(anyhow::anyhow!("{}", e.message)),
                other => Err(ClientError::unexpected("update", &other).into()),
            }
        }
        ControlCommand::Update { .. } => {
            let ((job, req), delta) =
                update.ok_or_else(|| anyhow::anyhow!("internal: update not parsed"))?;
            // `JobId=ID_N` is that task, `JobId=ID` of an array every task, as scontrol.
            let mut code = ExitCode::SUCCESS;
            for id in resolve_ids(&mut client, &[job], false)? {
                let mut req = UpdateRequest { id, ..req.clone() };
                if let Some(delta) = delta {
                    // scontrol's `TimeLimit=+N`: the job's own limit, changed.
                    let jobs = client.jobs(&Request::ShowJob(ShowJobRequest { id }))?;
                    let limit = jobs
                        .first()
                        .map(|j| j.time_limit)
                        .ok_or_else(|| anyhow::anyhow!("Invalid job id specified"))?;
                    req.time_limit = Some(changed_limit(limit, delta)?);
                }
                if acted("update", client.request(&Request::Update(req))?)? != ExitCode::SUCCESS {
                    code = ExitCode::from(1);
                }
            }
            Ok(code)
        }
        ControlCommand::Reconfigure => {
            match client.request(&Request::Reconfigure(ReconfigureRequest {}))? {
                Response::Reconfigured(r) => {
                    print_out(&format!(
                        "Reconfigured: policy {} (config {})\n",
                        r.policy,
                        r.config.as_deref().unwrap_or("embedded default")
                    ))?;
                    Ok(ExitCode::SUCCESS)
                }
                other => Err(ClientError::unexpected("reconfigure", &other).into()),
            }
        }
        ControlCommand::Snapshot { file } => super::whatif::snapshot(&mut client, file.as_deref()),
        ControlCommand::Whatif {
            policies,
            runtime,
            history,
            svg,
            png,
        } => super::whatif::whatif(
            &mut client,
            &super::whatif::WhatifOptions {
                policies: &policies,
                runtime: runtime.as_deref(),
                history: history.as_deref(),
                svg: svg.as_deref(),
                png: png.as_deref(),
                json: cli.json,
            },
        ),
        ControlCommand::Version => match client.request(&Request::Version(VersionRequest {}))? {
            Response::Version(v) => {
                print_out(&format!(
                    "batchd {} (protocol {}), policy {}\n",
                    v.software_version, v.proto_version, v.policy
                ))?;
                Ok(ExitCode::SUCCESS)
            }
            other => Err(ClientError::unexpected("version", &other).into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::time::fixed_zone;
    use super::*;
    use batch_proto::{JobState, PendingReason};

    #[test]
    fn update_pairs() {
        let z = fixed_zone(0);
        let p = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let r = parse_update(
            &p(&[
                "jobid=7",
                "TimeLimit=1:00:00",
                "Name=x",
                "NumNodes=2",
                "Priority=5",
                "StartTime=now+60",
            ]),
            1_000_000,
            &z,
        )
        .unwrap();
        assert_eq!(r.id, 7);
        assert_eq!(r.time_limit, Some(3_600_000));
        assert_eq!(
            (r.name.as_deref(), r.nodes, r.priority, r.begin),
            (Some("x"), Some(2), Some(5), Some(1_060_000))
        );
        assert!(parse_update(&p(&["Name=x"]), 0, &z)
            .unwrap_err()
            .to_string()
            .contains("JobId"));
        assert!(parse_update(&p(&["JobId=1", "Colour=red"]), 0, &z).is_err());
        assert!(parse_update(&p(&["JobId=1", "TimeLimit=soon"]), 0, &z).is_err());
        assert!(parse_update(&p(&["JobId"]), 0, &z).is_err());
        // An array task: the array's id, the task resolved once connected.
        let (job, r) = parse_update_ref(&p(&["JobId=5_2", "Name=x"]), 0, &z).unwrap();
        assert_eq!((job.as_str(), r.id), ("5_2", 5));
        assert!(parse_update(&p(&["JobId=5_x"]), 0, &z).is_err());
    }

    /// scontrol 22.05: `update job=ID` (JobId abbreviated), `Partition=` and `Dependency=` of
    /// a pending job (an empty Dependency= clears it), `TimeLimit=+N`/`-N` change the job's
    /// own limit by N.
    #[test]
    fn update_partition_dependency_and_relative_time_limit() {
        let z = fixed_zone(0);
        let p = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let r = parse_update(
            &p(&["job=7", "Partition=big", "Dependency=afterok:3,9"]),
            0,
            &z,
        )
        .unwrap();
        assert_eq!(r.id, 7);
        assert_eq!(r.pool.as_deref(), Some("big"));
        assert_eq!(
            r.dependencies.unwrap(),
            batch_proto::Dependency::parse_list("afterok:3,afterany:9").unwrap()
        );
        let r = parse_update(&p(&["JobI=7", "Dependency="]), 0, &z).unwrap();
        assert_eq!(r.dependencies, Some(vec![]));
        assert!(parse_update(&p(&["JobId=7", "Dependency=before:3"]), 0, &z).is_err());
        assert!(parse_update(&p(&["JobId=7", "Partition="]), 0, &z).is_err());
        // TimeLimit=+5 leaves the request's limit to be computed from the job's own.
        let pairs = p(&["JobId=7", "TimeLimit=+5"]);
        let r = parse_update(&pairs, 0, &z).unwrap();
        assert_eq!(r.time_limit, None);
        let d = time_limit_delta(&pairs).unwrap().unwrap();
        assert_eq!(changed_limit(3_600_000, d).unwrap(), 3_900_000);
        let d = time_limit_delta(&p(&["JobId=7", "TimeLimit=-1:00:00"]))
            .unwrap()
            .unwrap();
        assert!(changed_limit(3_600_000, d).is_err());
        assert_eq!(changed_limit(7_200_000, d).unwrap(), 3_600_000);
        assert!(time_limit_delta(&p(&["TimeLimit=+soon"])).is_err());
        assert_eq!(time_limit_delta(&p(&["TimeLimit=5"])).unwrap(), None);
    }

    /// scontrol's `-o` prints each record on one line; `show jobid` is `show job`; `-d` is
    /// accepted.
    #[test]
    fn oneliner_jobid_and_details() {
        let text = show_job(&held_job(), 0, &fixed_zone(0));
        let two = format!("{text}\n{text}");
        let one = one_line_records(&two);
        assert_eq!(one.lines().count(), 2, "{one}");
        assert!(
            one.starts_with("JobId=3 JobName=n UserId=alice(1000) Priority=0"),
            "{one}"
        );
        assert!(!one.contains("   "), "{one}");
        let c = ControlCli::try_parse_from(["econtrol", "-o", "-d", "show", "jobid", "3"]).unwrap();
        assert!(c.oneliner && c.details);
        assert!(matches!(c.command, ControlCommand::Show { ref entity, .. } if entity == "jobid"));
    }

    fn held_job() -> JobInfo {
        JobInfo {
            id: 3,
            name: "n".into(),
            uid: 1000,
            user: "alice".into(),
            pool: None,
            state: JobState::Pending,
            reason: Some(PendingReason::Held),
            detail: None,
            nodes: 2,
            node_list: None,
            submit_time: 0,
            start_time: None,
            end_time: None,
            expected_start: None,
            time_limit: 90_000,
            exit_code: None,
            signal: None,
            work_dir: "/w".into(),
            stdout: "/w/o".into(),
            stderr: "/w/e".into(),
            shape: JobShape::Rigid {
                nodes: 2,
                time_limit: 90_000,
            },
            begin: None,
            dependencies: vec![],
            priority: 0,
            held: true,
            args: vec![],
            scheduled_ep: None,
            step: None,
            chosen: None,
            array: None,
            account: None,
            qos: None,
            warn_signal: None,
            job_steps: Vec::new(),
            inert: None,
            resources: None,
            slurm_allocations: None,
        }
    }

    #[test]
    fn show_job_is_key_value() {
        let j = held_job();
        let s = show_job(&j, 0, &fixed_zone(0));
        assert!(
            s.starts_with("JobId=3 JobName=n\n   UserId=alice(1000)"),
            "{s}"
        );
        assert!(
            s.contains("JobState=PENDING Reason=Held Dependency=(null)"),
            "{s}"
        );
        assert!(
            s.contains("TimeLimit=00:01:30")
                && s.contains("Held=1")
                && s.contains("NodeList=(null)")
        );
        assert!(!s.contains("ScheduledEP") && !s.contains("Step="), "{s}");
    }

    /// scontrol show job (Slurm 22.05) shows `Nice=`, `TimeMin=`, `MinTmpDiskNode=`,
    /// `Comment=`, `MailUser=`, `MailType=` and `Profile=`; econtrol shows those the job was
    /// submitted with on one line (with `WCKey=`, `Hint=`, `Distribution=`, `NoKill=YES` for
    /// the options scontrol has no key for), escaped like every text a user chose.
    #[test]
    fn show_job_shows_the_stored_slurm_options() {
        let mut j = held_job();
        j.inert = Some(batch_proto::InertOptions {
            wckey: Some("submitit".into()),
            comment: Some("a\nb".into()),
            nice: Some(100),
            time_min: Some(300_000),
            tmp_mb: Some(2048),
            mail_type: Some("END,FAIL".into()),
            no_kill: true,
            ..Default::default()
        });
        let s = show_job(&j, 0, &fixed_zone(0));
        assert!(
            s.contains(
                "\n   WCKey=submitit Comment=a\\nb MailType=END,FAIL Nice=100 TimeMin=00:05:00 \
                 MinTmpDiskNode=2048M NoKill=YES\n"
            ),
            "{s}"
        );
        assert!(!show_job(&held_job(), 0, &fixed_zone(0)).contains("Nice="));
    }

    #[test]
    fn show_stats_is_key_value_with_units_in_the_keys() {
        let s = DaemonStats {
            started: 0,
            now: 61_000,
            policy: "cbf".into(),
            policy_since: 1_000,
            time_budget_ms: 5_000,
            policy_calls: 12,
            policy_timeouts: 1,
            call_running_ms: Some(6_100),
            call_past_budget: true,
            last_plan_ms: Some(0.1254),
            longest_plan_ms: Some(5_000.25),
            pending: 3,
            running: 2,
            jobs_submitted: 9,
            jobs_started: 6,
            jobs_completed: 3,
            jobs_failed: 1,
            passes: Timing {
                count: 4,
                total_ms: 10.0,
                p50_ms: Some(2.0),
                p90_ms: Some(3.0),
                p99_ms: Some(4.0),
                max_ms: Some(4.0),
            },
            store_commit: Timing {
                count: 1,
                total_ms: 0.25,
                p50_ms: Some(0.25),
                p90_ms: Some(0.25),
                p99_ms: Some(0.25),
                max_ms: Some(0.25),
            },
            connections: 17,
            connections_open: 1,
            ..Default::default()
        };
        assert_eq!(
            show_stats(&s, &fixed_zone(0)),
            "StartTime=1970-01-01T00:00:00 Now=1970-01-01T00:01:01 Uptime=00:01:01\n   \
             Policy=cbf PolicySince=1970-01-01T00:00:01 TimeBudgetMs=5000\n   \
             PolicyCalls=12 PolicyPanics=0 PolicyErrors=0 RefusedPlans=0 PolicyTimeouts=1\n   \
             CallRunningMs=6100 CallPastBudget=YES\n   LastPlanMs=0.125 LongestPlanMs=5000.250\n   \
             TestOnlyTimeouts=0\n   Pending=3 Running=2\n   \
             JobsSubmitted=9 JobsStarted=6 JobsCompleted=3 JobsFailed=1 JobsCancelled=0\n   \
             Passes=4 PassTotalMs=10.000 PassMsP50=2.000 PassMsP90=3.000 PassMsP99=4.000 \
             PassMsMax=4.000\n   \
             PolicyCallsTimed=0 PolicyCallTotalMs=0.000 PolicyCallMsP50=(null) \
             PolicyCallMsP90=(null) PolicyCallMsP99=(null) PolicyCallMsMax=(null)\n   \
             StoreCommits=1 StoreCommitTotalMs=0.250 StoreCommitMsP50=0.250 \
             StoreCommitMsP90=0.250 StoreCommitMsP99=0.250 StoreCommitMsMax=0.250\n   \
             Connections=17 ConnectionsOpen=1\n"
        );
        let idle = DaemonStats::default();
        let text = show_stats(&idle, &fixed_zone(0));
        assert!(
            text.contains("CallRunningMs=(null) CallPastBudget=NO")
                && text.contains("LastPlanMs=(null) LongestPlanMs=(null)"),
            "{text}"
        );
    }

    #[test]
    fn profile_syntax_round_trips_through_esubmit() {
        let steps = vec![Step::new(500_000, 5), Step::new(3_600_000, 10)];
        assert_eq!(format_steps(&steps), "500:5,3600:10");
        assert_eq!(
            super::super::spec::parse_profile("500:5,3600:10").unwrap(),
            steps
        );
        // An expansion ending off a whole second keeps its milliseconds.
        assert_eq!(
            format_steps(&[Step::new(12_500, 2), Step::new(1_007, 1), Step::new(0, 3)]),
            "12.5:2,1.007:1,0:3"
        );
    }

    #[test]
    fn show_evolving_job_scheduled_ep_and_step() {
        let mut j = held_job();
        j.state = JobState::Running;
        j.held = false;
        j.reason = None;
        j.start_time = Some(1_000_000);
        j.nodes = 4;
        j.node_list = Some("debug[001-004]".into());
        j.shape = JobShape::Evolving {
            steps: vec![
                Step::new(60_000, 2),
                Step::new(120_000, 4),
                Step::new(30_000, 1),
            ],
        };
        j.scheduled_ep = Some(vec![
            Step::new(60_000, 2),
            Step::new(150_000, 4),
            Step::new(30_000, 1),
        ]);
        j.step = Some(StepStatus {
            index: 2,
            count: 3,
            nodes: 4,
            phase: batch_proto::StepPhase::Waiting,
            ends: 1_210_000,
            next_nodes: Some(1),
            chosen_release: None,
        });
        let s = show_job(&j, 1_200_000, &fixed_zone(3600));
        let lines: Vec<&str> = s.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.contains("Shape="))
            .unwrap_or_else(|| panic!("{s}"));
        assert_eq!(lines[at], "   NumNodes=4 Shape=evolving(60:2,120:4,30:1)");
        assert_eq!(lines[at + 1], "   ScheduledEP=60:2,150:4,30:1");
        assert_eq!(
            lines[at + 2],
            "   Step=2/3 StepPhase=waiting StepNodes=4 StepEnd=1970-01-01T01:20:10 \
             NextStepNodes=1"
        );
        assert!(lines[at + 3].starts_with("   WorkDir="), "{s}");

        let st = j.step.as_mut().unwrap();
        st.phase = batch_proto::StepPhase::Releasing;
        st.chosen_release = Some("debug[002-004]".into());
        let s = show_job(&j, 1_200_000, &fixed_zone(0));
        assert!(
            s.contains(" StepPhase=releasing ")
                && s.contains(" NextStepNodes=1 ChosenRelease=debug[002-004]\n"),
            "{s}"
        );

        // The last step has no next one.
        let last = StepStatus {
            index: 3,
            next_nodes: None,
            chosen_release: None,
            ..j.step.clone().unwrap()
        };
        assert!(step_line(&last, &fixed_zone(0)).ends_with(" NextStepNodes=(null)"));

        // Pending: the latest plan's EP, no step.
        j.state = JobState::Pending;
        j.step = None;
        let s = show_job(&j, 0, &fixed_zone(0));
        assert!(
            s.contains("\n   ScheduledEP=60:2,150:4,30:1\n   WorkDir="),
            "{s}"
        );
        assert!(!s.contains("Step="), "{s}");
    }
}
