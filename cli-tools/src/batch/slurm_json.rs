//! `--json` of equeue, eacct and einfo: the documents Slurm 22.05's `squeue --json`,
//! `sacct --json` and `sinfo --json` print, so a program written against them reads ours.
//!
//! Slurm 22.05's tools print through its REST plugins: squeue and sinfo through
//! `openapi/v0.0.38` (`jobs.c`'s `dump_job_info()`, `nodes.c`'s `_dump_node()`), sacct through
//! `openapi/dbv0.0.38` (`parse.c`'s `parse_job[]` and `parse_job_step[]`). Each document is
//! `{"meta": {...}, "errors": [], "jobs" | "nodes": [...]}`. Every key those functions write
//! is written here, with Slurm's types and units: times in seconds since the epoch, time
//! limits in minutes, memory in MiB (bytes in a sacct step's usage TRES), `squeue`'s
//! `exit_code` a wait status. A value esched does not have is Slurm's empty value for it, as
//! its plugin prints it: `""` for a string in the v0.0.38 documents (its JSON serializer
//! writes a null string as `""`), `null` in sacct's, `0`, `[]`, or `null` where Slurm writes
//! null for "not set".
//!
//! Two values follow what 22.05 means rather than what it prints: squeue's `cpus_per_task`
//! (22.05 tests the CPU frequency instead and prints null unless `--cpu-freq` was given) and a
//! non-zero exit in sacct's exit code objects (see `exit_object`).

use std::collections::HashMap;
use std::io::Write;

use batch_proto::{
    hostlist, Client, ClientError, ClusterInfo, InfoRequest, JobInfo, JobState, JobStep, NodeState,
    Request, Response, StepId, Usage,
};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::{json, Map, Value};

/// The Slurm release whose layout is printed (`meta.Slurm`).
const SLURM_RELEASE: (u64, u64, u64) = (22, 5, 9);

/// What a document needs beside the jobs: the clock, each pool's CPUs and memory per node,
/// and the owner's group (Slurm prints the job's gid and group name).
pub struct Ctx<'a> {
    /// Now, ms since the epoch (a running job's elapsed time).
    pub now: u64,
    /// CPUs per node of each pool.
    pub cpus: &'a HashMap<String, u32>,
    /// A uid's primary group: its gid and name.
    pub group: &'a dyn Fn(u32) -> Option<(u32, String)>,
}

/// [`system_group`], asked once per uid: a listing has many jobs of few users.
pub fn system_groups() -> impl Fn(u32) -> Option<(u32, String)> {
    let seen = std::cell::RefCell::new(HashMap::new());
    move |uid| {
        seen.borrow_mut()
            .entry(uid)
            .or_insert_with(|| system_group(uid))
            .clone()
    }
}

/// The system's answer for a uid's primary group.
pub fn system_group(uid: u32) -> Option<(u32, String)> {
    let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)).ok()??;
    let name = nix::unistd::Group::from_gid(user.gid)
        .ok()
        .flatten()
        .map_or_else(|| user.gid.as_raw().to_string(), |g| g.name);
    Some((user.gid.as_raw(), name))
}

/// Each pool's CPUs per node, asked of the daemon (none if it answers something else).
pub fn pool_cpus(client: &mut Client) -> Result<HashMap<String, u32>, ClientError> {
    Ok(match client.request(&Request::Info(InfoRequest {}))? {
        Response::Info(info) => info
            .pools
            .iter()
            .map(|p| (p.name.clone(), p.cpus_per_node))
            .collect(),
        _ => HashMap::new(),
    })
}

impl Ctx<'_> {
    fn cpus_per_node(&self, j: &JobInfo) -> u64 {
        u64::from(
            j.pool
                .as_deref()
                .and_then(|p| self.cpus.get(p))
                .copied()
                .unwrap_or(1)
                .max(1),
        )
    }

    /// CPUs the job holds once started, else the ones it asks for.
    fn cpus(&self, j: &JobInfo) -> u64 {
        u64::from(j.nodes) * self.cpus_per_node(j)
    }
}

fn meta(plugin_type: &str, plugin_name: &str) -> Value {
    let (major, minor, micro) = SLURM_RELEASE;
    json!({
        "plugin": {"type": plugin_type, "name": plugin_name},
        "Slurm": {
            "version": {"major": major, "micro": micro, "minor": minor},
            "release": format!("{major}.{minor:02}.{micro}"),
        },
    })
}

fn secs(ms: u64) -> u64 {
    ms / 1000
}

/// A limit in ms as Slurm's minutes, rounded up; none (0) is Slurm's INFINITE, printed null.
fn minutes(ms: u64) -> Value {
    if ms == 0 {
        Value::Null
    } else {
        json!(ms.div_ceil(60_000))
    }
}

fn text(s: Option<&str>) -> Value {
    json!(s.unwrap_or(""))
}

fn opt_text(s: Option<&str>) -> Value {
    s.map_or(Value::Null, |s| json!(s))
}

/// An exit code and signal as the wait status Slurm stores (`exit << 8 | signal`).
fn wait_status(exit: Option<i32>, signal: Option<i32>) -> i64 {
    match signal.filter(|&s| s > 0) {
        Some(s) => i64::from(s & 0x7f),
        None => (i64::from(exit.unwrap_or(0)) & 0xff) << 8,
    }
}

/// glibc's `strsignal()`, which Slurm names a signal with.
fn strsignal(sig: i32) -> String {
    const NAMES: [&str; 31] = [
        "Hangup",
        "Interrupt",
        "Quit",
        "Illegal instruction",
        "Trace/breakpoint trap",
        "Aborted",
        "Bus error",
        "Floating point exception",
        "Killed",
        "User defined signal 1",
        "Segmentation fault",
        "User defined signal 2",
        "Broken pipe",
        "Alarm clock",
        "Terminated",
        "Stack fault",
        "Child exited",
        "Continued",
        "Stopped (signal)",
        "Stopped",
        "Stopped (tty input)",
        "Stopped (tty output)",
        "Urgent I/O condition",
        "CPU time limit exceeded",
        "File size limit exceeded",
        "Virtual timer expired",
        "Profiling timer expired",
        "Window changed",
        "I/O possible",
        "Power failure",
        "Bad system call",
    ];
    usize::try_from(sig - 1)
        .ok()
        .and_then(|i| NAMES.get(i))
        .map_or_else(|| format!("Unknown signal {sig}"), |n| (*n).to_string())
}

/// sacct's exit code object. A job or step not ended is `SUCCESS` with 0: Slurm's database
/// holds 0 (its column's default) until the end, pending jobs included. Slurm 22.05 prints
/// every normal exit as `SUCCESS` with `return_code` 0, a non-zero one too (its `WIFEXITED`
/// test comes before the status is read); here a non-zero exit is `ERROR` with its code, the
/// branch 22.05 means to take and the one later releases print, so a failure is not read as
/// a success.
fn exit_object(exit: Option<i32>, signal: Option<i32>) -> Value {
    match (exit, signal.filter(|&s| s > 0)) {
        (_, Some(s)) => json!({
            "status": "SIGNALED",
            "return_code": null,
            "signal": {"signal_id": s, "name": strsignal(s)},
        }),
        (Some(c), None) if c != 0 => json!({"status": "ERROR", "return_code": c}),
        _ => json!({"status": "SUCCESS", "return_code": 0}),
    }
}

/// The worst exit of a job's steps (sacct's DerivedExitCode).
fn derived(j: &JobInfo) -> (Option<i32>, Option<i32>) {
    let Some(worst) = j.job_steps.iter().filter_map(|s| s.exit_code).max() else {
        return (None, None);
    };
    let sig = j
        .job_steps
        .iter()
        .filter(|s| s.exit_code == Some(worst))
        .filter_map(|s| s.signal)
        .max();
    (Some(worst), sig)
}

/// Dependencies as squeue prints them, comma-separated.
fn dependency(j: &JobInfo) -> String {
    j.dependencies
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// `--profile`'s list as squeue prints it (`["Energy", "Task"]`); null when not given.
fn profile(p: Option<&str>) -> Value {
    let Some(p) = p else { return Value::Null };
    let all = ["Energy", "Lustre", "Network", "Task"];
    let mut out: Vec<&str> = Vec::new();
    for part in p.split(',') {
        match part.trim() {
            "none" => out.push("None"),
            "all" => out.extend(all),
            other => {
                if let Some(n) = all.iter().find(|n| n.eq_ignore_ascii_case(other)) {
                    out.push(n);
                }
            }
        }
    }
    out.dedup();
    json!(out)
}

/// A job's TRES as squeue's `tres_req_str` spells it (`cpu=4,mem=1000M,node=2,billing=4`).
fn tres_string(cpus: u64, mem_mib: Option<u64>, nodes: u32) -> String {
    let mut s = format!("cpu={cpus}");
    if let Some(m) = mem_mib {
        s.push_str(&format!(",mem={m}M"));
    }
    s.push_str(&format!(",node={nodes},billing={cpus}"));
    s
}

/// The job's memory in MiB, from `--mem` or `--mem-per-cpu`, when it gave one.
fn job_mem(j: &JobInfo, cpus: u64) -> Option<u64> {
    let r = j.resources.as_ref()?;
    r.mem_per_node
        .filter(|&m| m > 0)
        .map(|m| m * u64::from(j.nodes))
        .or_else(|| r.mem_per_cpu.map(|m| m * cpus))
}

fn started(j: &JobInfo) -> bool {
    j.start_time.is_some() && j.state != JobState::Pending
}

/// One job as `squeue --json` prints it (v0.0.38's `dump_job_info()`).
pub fn squeue_job(j: &JobInfo, c: &Ctx<'_>) -> Value {
    let inert = j.inert.clone().unwrap_or_default();
    let res = j.resources.clone().unwrap_or_default();
    let cpus = c.cpus(j);
    let mem = job_mem(j, cpus);
    let running = started(j) && !j.state.is_finished();
    let tres = tres_string(cpus, mem, j.nodes);
    let start = if started(j) {
        j.start_time
    } else {
        j.expected_start
    };
    let end = j.end_time.or_else(|| {
        (running && j.time_limit > 0).then(|| j.start_time.unwrap_or(0) + j.time_limit)
    });
    let node_list = j
        .node_list
        .clone()
        .filter(|_| started(j))
        .unwrap_or_default();
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    put("account", text(j.account.as_deref()));
    put("accrue_time", json!(secs(j.begin.unwrap_or(j.submit_time))));
    put("admin_comment", json!(""));
    put("array_job_id", json!(j.array.map_or(0, |a| a.array_id)));
    put(
        "array_task_id",
        j.array.map_or(Value::Null, |a| json!(a.index)),
    );
    put(
        "array_max_tasks",
        json!(j.array.and_then(|a| a.throttle).unwrap_or(0)),
    );
    put("array_task_string", json!(""));
    put("association_id", json!(0));
    put("batch_features", json!(""));
    put("batch_flag", json!(true));
    // Slurm's batch host is the first node of the allocation, where the script runs.
    let batch_host = hostlist::expand_at_most(&node_list, j.nodes.max(1) as usize)
        .ok()
        .and_then(|v| v.into_iter().next())
        .unwrap_or_default();
    put("batch_host", json!(batch_host));
    put("flags", json!([]));
    put("burst_buffer", json!(""));
    put("burst_buffer_state", json!(""));
    put("cluster", json!(""));
    put("cluster_features", json!(""));
    put("command", json!(""));
    put("comment", text(inert.comment.as_deref()));
    put("container", json!(""));
    put("contiguous", json!(false));
    put("core_spec", Value::Null);
    put("thread_spec", Value::Null);
    put("cores_per_socket", Value::Null);
    put(
        "billable_tres",
        if started(j) {
            json!(cpus as f64)
        } else {
            Value::Null
        },
    );
    put("cpus_per_task", json!(res.cpus_per_task.unwrap_or(1)));
    put("cpu_frequency_minimum", Value::Null);
    put("cpu_frequency_maximum", Value::Null);
    put("cpu_frequency_governor", Value::Null);
    put("cpus_per_tres", json!(""));
    put("deadline", json!(0));
    put("delay_boot", json!(0));
    put("dependency", json!(dependency(j)));
    let (dc, ds) = derived(j);
    put("derived_exit_code", json!(wait_status(dc, ds)));
    put(
        "eligible_time",
        json!(secs(j.begin.unwrap_or(j.submit_time))),
    );
    put("end_time", json!(end.map_or(0, secs)));
    put("excluded_nodes", json!(""));
    put("exit_code", json!(wait_status(j.exit_code, j.signal)));
    put("features", json!(""));
    put("federation_origin", json!(""));
    put("federation_siblings_active", json!(""));
    put("federation_siblings_viable", json!(""));
    put("gres_detail", json!([]));
    match (c.group)(j.uid) {
        Some((gid, name)) => {
            put("group_id", json!(gid));
            put("group_name", json!(name));
        }
        None => put("group_id", Value::Null),
    }
    put("job_id", json!(j.id));
    if running {
        put(
            "job_resources",
            json!({
                "nodes": node_list,
                "allocated_cpus": cpus,
                "allocated_hosts": j.nodes,
                "allocated_nodes": [],
            }),
        );
    }
    put("job_state", json!(j.state.name()));
    put("last_sched_evaluation", json!(0));
    put("licenses", json!(""));
    put("max_cpus", json!(0));
    put("max_nodes", json!(0));
    put("mcs_label", json!(""));
    put("memory_per_tres", json!(""));
    put("name", json!(j.name));
    put("nodes", json!(node_list));
    put(
        "nice",
        inert
            .nice
            .filter(|&n| n != 0)
            .map_or(Value::Null, |n| json!(n)),
    );
    put("tasks_per_core", Value::Null);
    put("tasks_per_node", json!(res.ntasks_per_node.unwrap_or(0)));
    put("tasks_per_socket", Value::Null);
    put("tasks_per_board", json!(0));
    put("cpus", json!(cpus));
    put("node_count", json!(j.nodes));
    put("tasks", json!(res.ntasks.unwrap_or(j.nodes)));
    put("het_job_id", json!(0));
    put("het_job_id_set", json!(""));
    put("het_job_offset", json!(0));
    put("partition", text(j.pool.as_deref()));
    put("prefer", json!(""));
    put(
        "memory_per_node",
        res.mem_per_node.map_or(Value::Null, |m| json!(m)),
    );
    put(
        "memory_per_cpu",
        res.mem_per_cpu
            .filter(|_| res.mem_per_node.is_none())
            .map_or(Value::Null, |m| json!(m)),
    );
    put(
        "minimum_cpus_per_node",
        json!(res.cpus_per_task.unwrap_or(1)),
    );
    put(
        "minimum_tmp_disk_per_node",
        json!(inert.tmp_mb.unwrap_or(0)),
    );
    put("preempt_time", json!(0));
    put("pre_sus_time", json!(0));
    put("priority", json!(j.priority.max(0)));
    put("profile", profile(inert.profile.as_deref()));
    put("qos", text(j.qos.as_deref()));
    put("reboot", json!(false));
    put("required_nodes", json!(""));
    put("requeue", json!(false));
    put("resize_time", json!(0));
    put("restart_cnt", json!(0));
    put("resv_name", json!(""));
    put(
        "shared",
        if res.exclusive {
            json!("none")
        } else {
            Value::Null
        },
    );
    put(
        "show_flags",
        json!(["SHOW_ALL", "SHOW_DETAIL", "SHOW_LOCAL"]),
    );
    put("sockets_per_board", json!(0));
    put("sockets_per_node", Value::Null);
    put("start_time", json!(start.map_or(0, secs)));
    put("state_description", text(j.detail.as_deref()));
    put("state_reason", json!(j.reason.map_or("None", |r| r.name())));
    put("standard_error", json!(j.stderr));
    put("standard_input", json!("/dev/null"));
    put("standard_output", json!(j.stdout));
    put("submit_time", json!(secs(j.submit_time)));
    put("suspend_time", json!(0));
    put("system_comment", json!(""));
    put("time_limit", minutes(j.time_limit));
    put(
        "time_minimum",
        json!(inert.time_min.map_or(0, |t| t.div_ceil(60_000))),
    );
    put("threads_per_core", Value::Null);
    put("tres_bind", json!(""));
    put("tres_freq", json!(""));
    put("tres_per_job", json!(""));
    put("tres_per_node", json!(""));
    put("tres_per_socket", json!(""));
    put("tres_per_task", json!(""));
    put("tres_req_str", json!(tres));
    put(
        "tres_alloc_str",
        json!(if started(j) { tres.as_str() } else { "" }),
    );
    put("user_id", json!(j.uid));
    put("user_name", json!(j.user));
    put("wckey", text(inert.wckey.as_deref()));
    put("current_working_directory", json!(j.work_dir));
    Value::Object(m)
}

/// A `{"meta", "errors", "jobs"}` document whose jobs are rendered one at a time as it is
/// written: the rendered form of 100,000 jobs at once would take gigabytes.
pub struct Document<'a> {
    meta: Value,
    jobs: &'a [JobInfo],
    render: Box<dyn Fn(&JobInfo) -> Value + 'a>,
}

impl Serialize for Document<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Jobs<'b>(&'b Document<'b>);
        impl Serialize for Jobs<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.0.jobs.iter().map(|j| (self.0.render)(j)))
            }
        }
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("meta", &self.meta)?;
        m.serialize_entry("errors", &[(); 0])?;
        m.serialize_entry("jobs", &Jobs(self))?;
        m.end()
    }
}

/// Writes `doc` to stdout as it is made, pretty-printed as Slurm's tools print, and a newline.
pub fn print(doc: &impl Serialize) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, doc)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// `squeue --json`'s document.
pub fn squeue<'a>(jobs: &'a [JobInfo], c: &'a Ctx<'a>) -> Document<'a> {
    Document {
        meta: meta("openapi/v0.0.38", "Slurm OpenAPI v0.0.38"),
        jobs,
        render: Box::new(move |j| squeue_job(j, c)),
    }
}

/// sacct's CPU time pair.
fn cpu_time(ms: u64) -> Value {
    json!({"seconds": ms / 1000, "microseconds": ms % 1000 * 1000})
}

/// sacct's TRES entry (`{"type", "name", "id", "count"}`), with Slurm's ids for the kinds
/// esched counts.
fn tres(kind: &str, count: u64) -> Value {
    let id = match kind {
        "cpu" => 1,
        "mem" => 2,
        "node" => 4,
        _ => 5,
    };
    json!({"type": kind, "name": "", "id": id, "count": count})
}

fn tres_list(cpus: u64, mem_mib: Option<u64>, nodes: u32) -> Value {
    let mut v = vec![tres("cpu", cpus)];
    if let Some(m) = mem_mib {
        v.push(tres("mem", m));
    }
    v.push(tres("node", u64::from(nodes)));
    v.push(tres("billing", cpus));
    Value::Array(v)
}

fn time_object(
    elapsed: u64,
    eligible: Option<u64>,
    start: Option<u64>,
    end: Option<u64>,
    usage: Option<Usage>,
) -> Map<String, Value> {
    let u = usage.unwrap_or_default();
    let mut t = Map::new();
    t.insert("elapsed".into(), json!(secs(elapsed)));
    if let Some(e) = eligible {
        t.insert("eligible".into(), json!(secs(e)));
    }
    t.insert("end".into(), json!(end.map_or(0, secs)));
    t.insert("start".into(), json!(start.map_or(0, secs)));
    t.insert("suspended".into(), json!(0));
    t.insert("system".into(), cpu_time(u.system_ms));
    t.insert("total".into(), cpu_time(u.total_cpu_ms()));
    t.insert("user".into(), cpu_time(u.user_ms));
    t
}

/// One step as `sacct --json` prints it (dbv0.0.38's `parse_job_step[]` and
/// `_foreach_step()`).
pub fn sacct_step(j: &JobInfo, s: &JobStep, c: &Ctx<'_>) -> Value {
    let cpus = match s.id {
        StepId::Batch => c.cpus_per_node(j),
        StepId::Number(_) => u64::from(s.tasks) * u64::from(s.cpus_per_task.max(1)),
    };
    let elapsed = s.end.unwrap_or(c.now).saturating_sub(s.start);
    let hosts = hostlist::expand_at_most(&s.node_list, s.nodes.max(1) as usize).unwrap_or_default();
    // MaxRSS: sacct's `tres.requested.max` memory entry, in bytes, on the step's first node
    // (esched measures the largest process, not where it ran).
    let max = s.usage.map_or_else(Vec::new, |u| {
        vec![json!({
            "type": "mem", "name": "", "id": 2, "count": u.max_rss_kib * 1024,
            "task": 0, "node": hosts.first().cloned().unwrap_or_default(),
        })]
    });
    let id = match s.id {
        StepId::Batch => json!("batch"),
        StepId::Number(n) => json!(n),
    };
    json!({
        "time": time_object(elapsed, None, Some(s.start), s.end, s.usage),
        "exit_code": exit_object(s.exit_code, s.signal),
        "nodes": {"count": s.nodes, "range": s.node_list, "list": hosts},
        "tasks": {"count": s.tasks},
        "pid": null,
        "CPU": {
            "requested_frequency": {"min": null, "max": null},
            "governor": [],
        },
        "kill_request_user": null,
        "state": s.state.name(),
        "statistics": {"CPU": {"actual_frequency": 0}, "energy": {"consumed": 0}},
        "step": {
            "job_id": j.id,
            "het": {"component": null},
            "id": id,
            "name": s.name,
        },
        "task": {"distribution": "Block"},
        "tres": {
            "requested": {"max": max, "min": [], "average": [], "total": []},
            "consumed": {"max": [], "min": [], "average": [], "total": []},
            "allocated": tres_list(cpus, None, s.nodes),
        },
    })
}

/// One job as `sacct --json` prints it (dbv0.0.38's `parse_job[]`); `with_steps` false is
/// sacct's `-X`, whose `steps` is `[]`.
pub fn sacct_job(j: &JobInfo, c: &Ctx<'_>, with_steps: bool) -> Value {
    let inert = j.inert.clone().unwrap_or_default();
    let cpus = c.cpus(j);
    let mem = job_mem(j, cpus);
    let elapsed = match (j.start_time, j.end_time) {
        (Some(s), Some(e)) => e.saturating_sub(s),
        (Some(s), None) if j.state != JobState::Pending => c.now.saturating_sub(s),
        _ => 0,
    };
    let usage = j
        .job_steps
        .iter()
        .filter_map(|s| s.usage)
        .reduce(Usage::merge);
    let mut time = time_object(
        elapsed,
        Some(j.begin.unwrap_or(j.submit_time)),
        j.start_time.filter(|_| started(j)),
        j.end_time,
        usage,
    );
    time.insert("submission".into(), json!(secs(j.submit_time)));
    time.insert("limit".into(), minutes(j.time_limit));
    let (dc, ds) = derived(j);
    let steps: Vec<Value> = j
        .job_steps
        .iter()
        .filter(|_| with_steps)
        .map(|s| sacct_step(j, s, c))
        .collect();
    let group = (c.group)(j.uid).map_or(Value::Null, |(_, g)| json!(g));
    let wckey = inert
        .wckey
        .as_deref()
        .map_or(Value::Null, |w| json!({"wckey": w, "flags": []}));
    json!({
        "account": opt_text(j.account.as_deref()),
        "comment": {
            "administrator": null,
            "job": opt_text(inert.comment.as_deref()),
            "system": null,
        },
        "allocation_nodes": if started(j) { j.nodes } else { 0 },
        "array": {
            "job_id": j.array.map_or(0, |a| a.array_id),
            "limits": {"max": {"running": {"tasks": j.array.and_then(|a| a.throttle).unwrap_or(0)}}},
            "task": null,
            "task_id": j.array.map_or(Value::Null, |a| json!(a.index)),
        },
        "association": null,
        "cluster": null,
        "constraints": null,
        "container": null,
        "derived_exit_code": exit_object(dc, ds),
        "time": time,
        "exit_code": exit_object(j.exit_code, j.signal),
        "flags": [],
        "group": group,
        "het": {"job_id": 0, "job_offset": null},
        "job_id": j.id,
        "name": j.name,
        "mcs": {"label": null},
        "nodes": j.node_list.clone().filter(|_| started(j)).unwrap_or_else(|| "None assigned".into()),
        "partition": opt_text(j.pool.as_deref()),
        "priority": j.priority.max(0),
        "qos": opt_text(j.qos.as_deref()),
        "required": {
            "CPUs": cpus,
            "memory": mem.unwrap_or(0),
        },
        "kill_request_user": null,
        // 22.05 reads the name's pointer as a number: 0 when the job has no reservation.
        "reservation": {"id": 0, "name": 0},
        "state": {
            "current": j.state.name(),
            "reason": j.reason.map_or("None", |r| r.name()),
        },
        "steps": steps,
        "tres": {
            "allocated": if started(j) { tres_list(cpus, mem, j.nodes) } else { json!([]) },
            "requested": tres_list(cpus, mem, j.nodes),
        },
        "user": j.user,
        "wckey": wckey,
        "working_directory": opt_text(Some(j.work_dir.as_str()).filter(|w| !w.is_empty())),
    })
}

/// `sacct --json`'s document.
pub fn sacct<'a>(jobs: &'a [JobInfo], c: &'a Ctx<'a>) -> Document<'a> {
    sacct_with(jobs, c, true)
}

/// `sacct -X --json`'s document when `with_steps` is false: every job's `steps` is `[]`.
pub fn sacct_with<'a>(jobs: &'a [JobInfo], c: &'a Ctx<'a>, with_steps: bool) -> Document<'a> {
    Document {
        meta: meta("openapi/dbv0.0.38", "Slurm OpenAPI DB v0.0.38"),
        jobs,
        render: Box::new(move |j| sacct_job(j, c, with_steps)),
    }
}

/// `sinfo --json`'s document: one entry per node (v0.0.38's `_dump_node()`), in the order of
/// the pools; a node in several pools lists them all under `partitions`.
pub fn sinfo(info: &ClusterInfo) -> Value {
    let mut nodes: Vec<(Map<String, Value>, Vec<&str>)> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for p in &info.pools {
        for n in &p.nodes {
            if let Some(&i) = index.get(n.name.as_str()) {
                nodes[i].1.push(&p.name);
                continue;
            }
            index.insert(&n.name, nodes.len());
            nodes.push((sinfo_node(p, n), vec![&p.name]));
        }
    }
    let nodes: Vec<Value> = nodes
        .into_iter()
        .map(|(mut m, pools)| {
            m.insert("partitions".into(), json!(pools));
            Value::Object(m)
        })
        .collect();
    json!({
        "meta": meta("openapi/v0.0.38", "Slurm OpenAPI v0.0.38"),
        "errors": [],
        "nodes": nodes,
    })
}

/// One node of pool `p` as sinfo prints it.
fn sinfo_node(p: &batch_proto::PoolInfo, n: &batch_proto::NodeInfo) -> Map<String, Value> {
    let cpus = p.cpus_per_node;
    let alloc = n.state == NodeState::Allocated;
    let alloc_cpus = if alloc { cpus } else { 0 };
    let alloc_mem = if alloc {
        p.mem_per_node.unwrap_or(0)
    } else {
        0
    };
    // A node claimed for a co-allocated job is Slurm's idle node in a reservation.
    let (state, mut flags): (&str, Vec<&str>) = match n.state {
        NodeState::Idle => ("idle", Vec::new()),
        NodeState::Allocated => ("allocated", Vec::new()),
        NodeState::Reserved => ("idle", vec!["RESERVED"]),
    };
    // Slurm's base state DOWN, or the DRAIN flag over the base state.
    let state = match &n.condition {
        Some(c) if c.down => "down",
        Some(_) => {
            flags.push("DRAIN");
            state
        }
        None => state,
    };
    let flags = json!(flags);
    let mut tres = format!("cpu={cpus}");
    if let Some(m) = p.mem_per_node {
        tres.push_str(&format!(",mem={m}M"));
    }
    tres.push_str(&format!(",billing={cpus}"));
    // Two halves: one `json!` of every key exceeds the macro's recursion limit.
    let first = json!({
        "architecture": "",
        "burstbuffer_network_address": "",
        "boards": 1,
        "boot_time": 0,
        "comment": "",
        "cores": cpus,
        "cpu_binding": 0,
        "cpu_load": 0,
        "extra": "",
        "free_memory": 0,
        "cpus": cpus,
        "last_busy": 0,
        "features": "",
        "active_features": "",
        "gres": "",
        "gres_drained": "",
        "gres_used": "",
        "mcs_label": "",
        "name": n.name,
        "next_state_after_reboot": "invalid",
        "address": n.name,
        "hostname": n.name,
    });
    let second = json!({
        "state": state,
        "state_flags": flags,
        "next_state_after_reboot_flags": [],
        "operating_system": "",
        "owner": null,
        "port": 0,
        "real_memory": p.mem_per_node.unwrap_or(1),
        "reason": n.condition.as_ref().map_or("", |c| c.reason.as_str()),
        "reason_changed_at": n.condition.as_ref().map_or(0, |c| c.since / 1000),
        "reason_set_by_user": n.condition.as_ref().map(|c| c.user.as_str()),
        "slurmd_start_time": 0,
        "sockets": 1,
        "threads": 1,
        "temporary_disk": 0,
        "weight": 1,
        "tres": tres,
        "slurmd_version": "",
        "alloc_memory": alloc_mem,
        "alloc_cpus": alloc_cpus,
        "idle_cpus": cpus - alloc_cpus,
        "tres_used": if alloc { json!(format!("cpu={cpus}")) } else { Value::Null },
        "tres_weighted": f64::from(alloc_cpus),
    });
    let mut m = Map::new();
    for half in [first, second] {
        if let Value::Object(h) = half {
            m.extend(h);
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use batch_proto::{ArrayTask, InertOptions, JobShape, NodeInfo, PendingReason, PoolInfo};

    const NOW: u64 = 1_700_000_600_000;

    fn base() -> JobInfo {
        JobInfo {
            id: 12,
            name: "sim".into(),
            uid: 1000,
            user: "alice".into(),
            pool: Some("debug".into()),
            state: JobState::Pending,
            reason: None,
            detail: None,
            nodes: 2,
            node_list: None,
            submit_time: 1_700_000_000_500,
            start_time: None,
            end_time: None,
            expected_start: None,
            time_limit: 90 * 60_000,
            exit_code: None,
            signal: None,
            work_dir: "/home/alice".into(),
            stdout: "/home/alice/slurm-12.out".into(),
            stderr: "/home/alice/slurm-12.out".into(),
            shape: JobShape::Rigid {
                nodes: 2,
                time_limit: 90 * 60_000,
            },
            begin: None,
            dependencies: vec![],
            priority: 4_294_901_000,
            held: false,
            args: vec![],
            scheduled_ep: None,
            step: None,
            chosen: None,
            array: None,
            account: Some("physics".into()),
            qos: None,
            warn_signal: None,
            job_steps: Vec::new(),
            inert: Some(InertOptions {
                wckey: Some("proj".into()),
                comment: Some("a note".into()),
                ..InertOptions::default()
            }),
            resources: None,
            slurm_allocations: None,
        }
    }

    fn step(id: StepId, end: Option<u64>, exit: Option<i32>) -> JobStep {
        JobStep {
            id,
            name: if id == StepId::Batch {
                "batch".into()
            } else {
                "hostname".into()
            },
            state: if end.is_some() {
                JobState::Completed
            } else {
                JobState::Running
            },
            start: 1_700_000_100_000,
            end,
            node_list: if id == StepId::Batch {
                "debug001".into()
            } else {
                "debug[001-002]".into()
            },
            nodes: if id == StepId::Batch { 1 } else { 2 },
            tasks: if id == StepId::Batch { 1 } else { 4 },
            cpus_per_task: 1,
            exit_code: exit,
            signal: exit.map(|_| 0),
            usage: end.map(|_| Usage {
                max_rss_kib: 2048,
                user_ms: 1_500,
                system_ms: 250,
            }),
        }
    }

    /// Running since 1_700_000_100 s with its batch step and a finished `erun` step.
    fn running() -> JobInfo {
        JobInfo {
            state: JobState::Running,
            node_list: Some("debug[001-002]".into()),
            start_time: Some(1_700_000_100_000),
            job_steps: vec![
                step(StepId::Batch, None, None),
                step(StepId::Number(0), Some(1_700_000_160_000), Some(0)),
            ],
            ..base()
        }
    }

    /// Ended with exit code 3.
    fn failed() -> JobInfo {
        JobInfo {
            state: JobState::Failed,
            node_list: Some("debug[001-002]".into()),
            start_time: Some(1_700_000_100_000),
            end_time: Some(1_700_000_400_000),
            exit_code: Some(3),
            signal: Some(0),
            job_steps: vec![JobStep {
                state: JobState::Failed,
                ..step(StepId::Batch, Some(1_700_000_400_000), Some(3))
            }],
            ..base()
        }
    }

    /// Task 5 of array 10, pending behind its throttle.
    fn array_task() -> JobInfo {
        JobInfo {
            id: 15,
            reason: Some(PendingReason::JobArrayTaskLimit),
            array: Some(ArrayTask {
                array_id: 10,
                index: 5,
                throttle: Some(2),
                count: 8,
                min: 0,
                max: 7,
                step: 1,
            }),
            ..base()
        }
    }

    fn doc(f: for<'a> fn(&'a [JobInfo], &'a Ctx<'a>) -> Document<'a>, j: JobInfo) -> Value {
        let cpus = HashMap::from([("debug".to_string(), 4)]);
        let group = |_: u32| Some((100, "users".to_string()));
        let ctx = Ctx {
            now: NOW,
            cpus: &cpus,
            group: &group,
        };
        let jobs = [j];
        let d = f(&jobs, &ctx);
        let v = serde_json::to_value(&d).unwrap();
        // What is printed parses back to the same document.
        let text = serde_json::to_string_pretty(&d).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
        v
    }

    fn envelope(v: &Value, plugin: &str, list: &str) {
        assert_eq!(v["meta"]["plugin"]["type"], plugin);
        assert_eq!(v["meta"]["Slurm"]["version"]["major"], 22);
        assert_eq!(v["meta"]["Slurm"]["version"]["minor"], 5);
        assert_eq!(v["errors"], json!([]));
        assert!(v[list].is_array(), "{v}");
    }

    /// Slurm 22.05's `squeue --json` (v0.0.38): job_state a string, times in epoch seconds,
    /// time_limit in minutes, nodes a host list, exit_code a wait status.
    #[test]
    fn squeue_running_job_as_slurm_prints_it() {
        let v = doc(squeue, running());
        envelope(&v, "openapi/v0.0.38", "jobs");
        let j = &v["jobs"][0];
        assert_eq!(j["job_id"], 12);
        assert_eq!(j["name"], "sim");
        assert_eq!(j["user_name"], "alice");
        assert_eq!(j["user_id"], 1000);
        assert_eq!(j["group_id"], 100);
        assert_eq!(j["partition"], "debug");
        assert_eq!(j["job_state"], "RUNNING");
        assert_eq!(j["state_reason"], "None");
        assert_eq!(j["nodes"], "debug[001-002]");
        assert_eq!(j["node_count"], 2);
        assert_eq!(j["batch_host"], "debug001");
        assert_eq!(j["submit_time"], 1_700_000_000);
        assert_eq!(j["start_time"], 1_700_000_100);
        // A running job's end_time is when its limit runs out.
        assert_eq!(j["end_time"], 1_700_000_100 + 90 * 60);
        assert_eq!(j["eligible_time"], 1_700_000_000);
        assert_eq!(j["time_limit"], 90);
        assert_eq!(j["cpus"], 8);
        assert_eq!(j["tasks"], 2);
        assert_eq!(j["cpus_per_task"], 1);
        assert_eq!(j["exit_code"], 0);
        assert_eq!(j["array_job_id"], 0);
        assert_eq!(j["array_task_id"], Value::Null);
        assert_eq!(j["account"], "physics");
        assert_eq!(j["qos"], "");
        assert_eq!(j["wckey"], "proj");
        assert_eq!(j["comment"], "a note");
        assert_eq!(j["current_working_directory"], "/home/alice");
        assert_eq!(j["standard_output"], "/home/alice/slurm-12.out");
        assert_eq!(j["restart_cnt"], 0);
        assert_eq!(j["dependency"], "");
        assert_eq!(j["tres_alloc_str"], "cpu=8,node=2,billing=8");
        assert_eq!(j["job_resources"]["allocated_hosts"], 2);
        assert!(j["priority"].is_u64());
        assert!(j["flags"].is_array() && j["gres_detail"].is_array());
    }

    /// squeue's exit_code is the wait status Slurm stores: exit 3 is 768.
    #[test]
    fn squeue_exit_code_is_a_wait_status() {
        let v = doc(squeue, failed());
        let j = &v["jobs"][0];
        assert_eq!(j["job_state"], "FAILED");
        assert_eq!(j["exit_code"], 3 << 8);
        assert_eq!(j["derived_exit_code"], 3 << 8);
        assert_eq!(j["end_time"], 1_700_000_400);
        let killed = JobInfo {
            exit_code: Some(0),
            signal: Some(9),
            ..failed()
        };
        assert_eq!(doc(squeue, killed)["jobs"][0]["exit_code"], 9);
    }

    /// A pending array task: its own job_id, the array's id and its index, the reason, no
    /// nodes, start and end 0, batch_host empty.
    #[test]
    fn squeue_pending_array_task() {
        let v = doc(squeue, array_task());
        let j = &v["jobs"][0];
        assert_eq!(j["job_id"], 15);
        assert_eq!(j["array_job_id"], 10);
        assert_eq!(j["array_task_id"], 5);
        assert_eq!(j["array_max_tasks"], 2);
        assert_eq!(j["job_state"], "PENDING");
        assert_eq!(j["state_reason"], "JobArrayTaskLimit");
        assert_eq!(j["nodes"], "");
        assert_eq!(j["batch_host"], "");
        assert_eq!(j["start_time"], 0);
        assert_eq!(j["end_time"], 0);
        assert_eq!(j["tres_alloc_str"], "");
        assert_eq!(j["billable_tres"], Value::Null);
        assert!(j.get("job_resources").is_none());
    }

    /// Slurm 22.05's `sacct --json` (dbv0.0.38): state and exit code as objects, times under
    /// `time` in epoch seconds, CPU times as seconds and microseconds, steps with their ids.
    #[test]
    fn sacct_running_job_with_steps() {
        let v = doc(sacct, running());
        envelope(&v, "openapi/dbv0.0.38", "jobs");
        let j = &v["jobs"][0];
        assert_eq!(j["job_id"], 12);
        assert_eq!(j["user"], "alice");
        assert_eq!(j["group"], "users");
        assert_eq!(j["account"], "physics");
        assert_eq!(j["partition"], "debug");
        assert_eq!(j["state"], json!({"current": "RUNNING", "reason": "None"}));
        assert_eq!(
            j["exit_code"],
            json!({"status": "SUCCESS", "return_code": 0})
        );
        assert_eq!(j["nodes"], "debug[001-002]");
        assert_eq!(j["allocation_nodes"], 2);
        assert_eq!(j["time"]["submission"], 1_700_000_000);
        assert_eq!(j["time"]["start"], 1_700_000_100);
        assert_eq!(j["time"]["end"], 0);
        assert_eq!(j["time"]["elapsed"], 500);
        assert_eq!(j["time"]["limit"], 90);
        assert_eq!(
            j["time"]["user"],
            json!({"seconds": 1, "microseconds": 500_000})
        );
        assert_eq!(
            j["time"]["total"],
            json!({"seconds": 1, "microseconds": 750_000})
        );
        assert_eq!(j["wckey"], json!({"wckey": "proj", "flags": []}));
        assert_eq!(j["comment"]["job"], "a note");
        assert_eq!(j["working_directory"], "/home/alice");
        assert_eq!(j["array"]["task_id"], Value::Null);
        let steps = j["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[0]["step"]["id"], "batch");
        assert_eq!(steps[0]["step"]["job_id"], 12);
        assert_eq!(steps[0]["state"], "RUNNING");
        assert_eq!(steps[1]["step"]["id"], 0);
        assert_eq!(steps[1]["step"]["name"], "hostname");
        assert_eq!(steps[1]["state"], "COMPLETED");
        assert_eq!(steps[1]["nodes"]["count"], 2);
        assert_eq!(steps[1]["nodes"]["range"], "debug[001-002]");
        assert_eq!(steps[1]["nodes"]["list"], json!(["debug001", "debug002"]));
        assert_eq!(steps[1]["tasks"]["count"], 4);
        assert_eq!(steps[1]["time"]["elapsed"], 60);
        assert_eq!(
            steps[1]["time"]["system"],
            json!({"seconds": 0, "microseconds": 250_000})
        );
        // MaxRSS: the requested (input) maximum of the mem TRES, in bytes.
        let max = &steps[1]["tres"]["requested"]["max"][0];
        assert_eq!(max["type"], "mem");
        assert_eq!(max["count"], 2048 * 1024);
    }

    /// A job that exited with 3: FAILED, its exit code an ERROR with return code 3, on the
    /// job and on its batch step.
    #[test]
    fn sacct_failed_job_exit_code() {
        let v = doc(sacct, failed());
        let j = &v["jobs"][0];
        assert_eq!(j["state"]["current"], "FAILED");
        assert_eq!(j["exit_code"], json!({"status": "ERROR", "return_code": 3}));
        assert_eq!(
            j["derived_exit_code"],
            json!({"status": "ERROR", "return_code": 3})
        );
        assert_eq!(j["time"]["end"], 1_700_000_400);
        assert_eq!(j["time"]["elapsed"], 300);
        assert_eq!(j["steps"][0]["step"]["id"], "batch");
        assert_eq!(j["steps"][0]["state"], "FAILED");
        assert_eq!(j["steps"][0]["exit_code"]["return_code"], 3);
        let killed = JobInfo {
            exit_code: Some(0),
            signal: Some(9),
            ..failed()
        };
        assert_eq!(
            doc(sacct, killed)["jobs"][0]["exit_code"],
            json!({"status": "SIGNALED", "return_code": null,
                   "signal": {"signal_id": 9, "name": "Killed"}})
        );
    }

    /// sacct -X --json: Slurm's query skips the steps (`skip_steps`), so `steps` is `[]`; the
    /// job's CPU times are still the sum of its steps'.
    #[test]
    fn sacct_allocations_have_no_steps() {
        let cpus = HashMap::new();
        let group = |_: u32| None;
        let ctx = Ctx {
            now: NOW,
            cpus: &cpus,
            group: &group,
        };
        let jobs = [running()];
        let v = serde_json::to_value(sacct_with(&jobs, &ctx, false)).unwrap();
        assert_eq!(v["jobs"][0]["steps"], json!([]));
        assert_eq!(v["jobs"][0]["time"]["user"]["seconds"], 1);
        assert_eq!(v["jobs"][0]["group"], Value::Null);
    }

    /// A pending array task in sacct: no nodes ("None assigned"), its exit code the 0 Slurm's
    /// database holds until the end, its array object.
    #[test]
    fn sacct_pending_array_task() {
        let v = doc(sacct, array_task());
        let j = &v["jobs"][0];
        assert_eq!(j["job_id"], 15);
        assert_eq!(j["array"]["job_id"], 10);
        assert_eq!(j["array"]["task_id"], 5);
        assert_eq!(j["array"]["limits"]["max"]["running"]["tasks"], 2);
        assert_eq!(j["state"]["current"], "PENDING");
        assert_eq!(j["state"]["reason"], "JobArrayTaskLimit");
        assert_eq!(
            j["exit_code"],
            json!({"status": "SUCCESS", "return_code": 0})
        );
        assert_eq!(j["nodes"], "None assigned");
        assert_eq!(j["time"]["start"], 0);
        assert_eq!(j["steps"], json!([]));
        assert_eq!(j["tres"]["allocated"], json!([]));
    }

    /// Slurm 22.05's `sinfo --json`: `nodes`, each with its state in lower case and its
    /// partitions.
    #[test]
    fn sinfo_nodes() {
        let nodes = ["debug001", "debug002", "debug003"]
            .iter()
            .zip([NodeState::Allocated, NodeState::Idle, NodeState::Reserved])
            .map(|(n, state)| NodeInfo {
                name: (*n).into(),
                state,
                job: None,
                condition: None,
            })
            .collect();
        let info = ClusterInfo {
            pools: vec![PoolInfo {
                name: "debug".into(),
                total: 3,
                max_time: None,
                allocated: 1,
                reserved: 1,
                node_list: "debug[001-003]".into(),
                nodes,
                cpus_per_node: 4,
                mem_per_node: Some(8000),
            }],
            policy: "fifo".into(),
            pending: 0,
            running: 1,
        };
        let v = sinfo(&info);
        envelope(&v, "openapi/v0.0.38", "nodes");
        let n = &v["nodes"];
        assert_eq!(n.as_array().unwrap().len(), 3);
        assert_eq!(n[0]["name"], "debug001");
        assert_eq!(n[0]["state"], "allocated");
        assert_eq!(n[0]["alloc_cpus"], 4);
        assert_eq!(n[0]["cpus"], 4);
        assert_eq!(n[0]["real_memory"], 8000);
        assert_eq!(n[0]["partitions"], json!(["debug"]));
        assert_eq!(n[1]["state"], "idle");
        assert_eq!(n[1]["idle_cpus"], 4);
        assert_eq!(n[2]["state"], "idle");
        assert_eq!(n[2]["state_flags"], json!(["RESERVED"]));
    }
}
