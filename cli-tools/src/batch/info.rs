//! einfo: pools and node states, as sinfo.

use std::process::ExitCode;

use batch_proto::{
    hostlist, ClientError, ClusterInfo, InfoRequest, NodeInfo, NodeState, PoolInfo, Request,
    Response,
};
use clap::Parser;

use super::args::SocketArg;
use super::cli::{connect, now_ms, print_out, split_list};
use super::format::Format;
use super::queue::date_line;
use super::time::{format_squeue_duration, local_zone};

/// `einfo`'s command line.
#[derive(Parser, Debug)]
#[command(
    name = "einfo",
    version,
    disable_help_flag = true,
    about = "Show batchd's pools and nodes (like sinfo)",
    after_help = "Format fields (-o), sinfo's: %P and %R pool, %a availability (up), %l time \
                  limit (the pool's max_time), %D nodes, %t state (idle, alloc, resv), %T state \
                  spelt out, %N node list, %n host names, %c CPUs per node, %m memory per node \
                  (MiB; N/A when the pool sets none), %C CPUs and %F nodes allocated/idle/other/\
                  total, %s job size, %E reason, %z sockets:cores:threads, %h oversubscribe, %r \
                  root only, %g groups, %d tmp disk, %w weight, %f features, %%. Nodes alike in \
                  every field shown share a line. %.N right-justifies in N columns, %N left-\
                  justifies; longer values are cut."
)]
pub struct InfoCli {
    /// One line per node instead of per pool and state.
    #[arg(short = 'N', long = "Node")]
    pub node: bool,
    /// One line per pool with node counts allocated/idle/other/total.
    #[arg(short = 's', long)]
    pub summarize: bool,
    /// sinfo's long listing (more columns), after a line with the time.
    #[arg(short = 'l', long = "long")]
    pub long: bool,
    /// Output format, sinfo's %-letters (see below).
    #[arg(short = 'o', long = "format", value_name = "FORMAT")]
    pub format: Option<String>,
    /// Output format by field names, sinfo's `-O` (`partition,nodes:10,statelong,nodelist`;
    /// `:.N` right-justifies in N columns, default 20 each).
    #[arg(
        short = 'O',
        long = "Format",
        value_name = "FIELDS",
        conflicts_with = "format"
    )]
    pub format_names: Option<String>,
    /// Only these nodes (a host list).
    #[arg(short = 'n', long = "nodes", value_name = "NODES")]
    pub nodes: Option<String>,
    /// The reasons nodes are down, drained or failing (none are, here: the header alone).
    #[arg(short = 'R', long = "list-reasons")]
    pub reasons: bool,
    /// Only nodes in these states (idle, alloc, resv, drain, drained, draining, down, ...
    /// comma-separated, any case, or all).
    #[arg(short = 't', long = "states", value_name = "STATES")]
    pub states: Vec<String>,
    /// Only these pools.
    #[arg(
        short = 'p',
        long = "pool",
        visible_alias = "partition",
        value_name = "POOLS"
    )]
    pub pools: Vec<String>,
    /// No header line (`-h`, as in Slurm; help is `--help` only).
    #[arg(short = 'h', long)]
    pub noheader: bool,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// JSON as Slurm 22.05's `sinfo --json` prints it: `{"meta", "errors", "nodes"}`.
    #[arg(long, conflicts_with = "records")]
    pub json: bool,
    /// JSON: the daemon's cluster record as it comes over the wire.
    #[arg(long)]
    pub records: bool,
    /// Draw the pools' plan to this SVG file: a Gantt chart of the running jobs on their nodes
    /// and the pending jobs where the plan expects them, from the earliest running job's start
    /// (an hour ago at most) to the plan's end, with utilisation and queue length beneath.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["json", "records"])]
    pub svg: Option<std::path::PathBuf>,
    /// Draw that picture to this PNG file.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["json", "records"])]
    pub png: Option<std::path::PathBuf>,
    /// Draw that plan on the terminal: a row per node (a few nodes a row on a large pool), a
    /// letter per job (capitals for running jobs, small letters for expected ones), then which
    /// job each letter is. `COLUMNS` wide when set, else as wide as the terminal.
    #[arg(long, conflicts_with_all = ["json", "records"])]
    pub plot: bool,
    /// The daemon's socket.
    #[command(flatten)]
    pub socket: SocketArg,
}

/// A node's state as sinfo names it, compact (`idle`, `alloc`, `resv`, `drng`, `drain`,
/// `down`) and long (`draining`, `drained`, ...): DOWN before everything, then DRAIN over
/// whether a job still holds the node.
fn node_state(n: &NodeInfo) -> (&'static str, &'static str) {
    match (&n.condition, n.state) {
        (Some(c), _) if c.down => ("down", "down"),
        (Some(_), NodeState::Idle) => ("drain", "drained"),
        (Some(_), _) => ("drng", "draining"),
        (None, NodeState::Idle) => ("idle", "idle"),
        (None, NodeState::Allocated) => ("alloc", "allocated"),
        (None, NodeState::Reserved) => ("resv", "reserved"),
    }
}

/// The compact states in the order the default listing shows their lines.
const STATE_ORDER: [&str; 6] = ["alloc", "drng", "resv", "idle", "drain", "down"];

/// Allocated, idle, other and total nodes of `nodes` (sinfo's A/I/O/T): a draining node is
/// allocated, a drained or down one "other", as a reserved one.
fn aiot(nodes: &[&NodeInfo]) -> (u64, u64, u64, u64) {
    let (mut a, mut i) = (0, 0);
    for n in nodes {
        match node_state(n).0 {
            "alloc" | "drng" => a += 1,
            "idle" => i += 1,
            _ => {}
        }
    }
    let t = nodes.len() as u64;
    (a, i, t - a - i, t)
}

fn table(rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|v| super::escape::shown(v).into_owned())
                .collect()
        })
        .collect();
    let cols = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..cols)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, v)| {
                if c + 1 == cols {
                    v.clone()
                } else {
                    format!("{v:<w$}", w = widths[c])
                }
            })
            .collect();
        out.push_str(line.join(" ").trim_end());
        out.push('\n');
    }
    out
}

/// sinfo's format letters that einfo fills.
const LETTERS: &str = "PRalDtTNncmCFsEzhrgdwfG";

/// sinfo `-O`'s field names and the letter each stands for.
const FIELD_NAMES: &[(&str, char)] = &[
    ("partition", 'P'),
    ("partitionname", 'R'),
    ("available", 'a'),
    ("timelimit", 'l'),
    ("nodes", 'D'),
    ("statecompact", 't'),
    ("statelong", 'T'),
    ("nodelist", 'N'),
    ("nodehost", 'n'),
    ("cpus", 'c'),
    ("memory", 'm'),
    ("cpusstate", 'C'),
    ("nodeaiot", 'F'),
    ("size", 's'),
    ("reason", 'E'),
    ("socketcorethread", 'z'),
    ("oversubscribe", 'h'),
    ("root", 'r'),
    ("groups", 'g'),
    ("disk", 'd'),
    ("weight", 'w'),
    ("features", 'f'),
    ("gres", 'G'),
];

/// sinfo's `-O` list as the `-o` letters it stands for: `name[:[.]width]`, comma-separated,
/// any case; a width of 20 by default.
pub fn names_to_letters(list: &str) -> anyhow::Result<String> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (name, width) = match item.split_once(':') {
            Some((n, w)) => (n, w),
            None => (item, "20"),
        };
        let letter = FIELD_NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, l)| *l)
            .ok_or_else(|| anyhow::anyhow!("Invalid node format specification: {name}"))?;
        let (right, digits) = match width.strip_prefix('.') {
            Some(d) => (".", d),
            None => ("", width),
        };
        anyhow::ensure!(
            digits.is_empty() || digits.bytes().all(|b| b.is_ascii_digit()),
            "Invalid node format specification: {item}"
        );
        out.push(format!("%{right}{digits}{letter}"));
    }
    anyhow::ensure!(!out.is_empty(), "Invalid node format specification: {list}");
    Ok(out.join(" "))
}
/// sinfo `-l`'s format.
const LONG_FORMAT: &str = "%9P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N";
/// sinfo `-N -l`'s format.
const NODE_LONG_FORMAT: &str = "%N %.6D %.9P %.11T %.4c %.8z %.6m %.8d %.6w %.8f %20E";

fn header(letter: char) -> &'static str {
    match letter {
        'P' | 'R' => "PARTITION",
        'a' => "AVAIL",
        'l' => "TIMELIMIT",
        'D' => "NODES",
        't' | 'T' => "STATE",
        'N' => "NODELIST",
        'n' => "HOSTNAMES",
        'c' => "CPUS",
        'm' => "MEMORY",
        'C' => "CPUS(A/I/O/T)",
        'F' => "NODES(A/I/O/T)",
        's' => "JOB_SIZE",
        'E' => "REASON",
        'z' => "S:C:T",
        'h' => "OVERSUBSCRIBE",
        'r' => "ROOT",
        'g' => "GROUPS",
        'd' => "TMP_DISK",
        'w' => "WEIGHT",
        'G' => "GRES",
        _ => "AVAIL_FEATURES",
    }
}

/// A pool's time limit as sinfo prints it.
fn limit(p: &PoolInfo) -> String {
    p.max_time
        .map_or_else(|| "infinite".to_string(), format_squeue_duration)
}

/// One field of a line standing for `nodes` of pool `p`.
fn value(p: &PoolInfo, nodes: &[&NodeInfo], letter: char, buf: &mut String) {
    let (a, i, o, t) = aiot(nodes);
    let state = nodes.first().map_or(("idle", "idle"), |n| node_state(n));
    let c = u64::from(p.cpus_per_node);
    let text = match letter {
        'P' | 'R' => p.name.clone(),
        'a' => "up".into(),
        'l' => limit(p),
        'D' => t.to_string(),
        't' => state.0.into(),
        'T' => state.1.into(),
        'N' | 'n' => {
            let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
            hostlist::compress(&names)
        }
        'c' => c.to_string(),
        'm' => p
            .mem_per_node
            .map_or_else(|| "N/A".to_string(), |m| m.to_string()),
        'C' => format!("{}/{}/{}/{}", a * c, i * c, o * c, t * c),
        'F' => format!("{a}/{i}/{o}/{t}"),
        's' => format!("1-{}", p.total),
        'E' => nodes
            .first()
            .and_then(|n| n.condition.as_ref())
            .map_or_else(|| "none".to_string(), |c| c.reason.clone()),
        'z' => format!("1:{c}:1"),
        'h' => "NO".into(),
        'r' => "no".into(),
        'g' => "all".into(),
        'd' => "0".into(),
        'w' => "1".into(),
        // Generic resources and features: pools here have none.
        _ => "(null)".into(),
    };
    buf.push_str(&text);
}

/// Lines by sinfo's rule: with `per_node` one a node; else the nodes of a pool alike in
/// every non-summing field of `format` (here: the state and the reason, when shown) share a
/// line, in the default listing's order of states.
fn format_lines(info: &ClusterInfo, format: &Format, per_node: bool) -> Vec<String> {
    let by_state = format.letters().any(|l| l == 't' || l == 'T' || l == 'E');
    let mut out = Vec::new();
    for p in &info.pools {
        let groups: Vec<Vec<&NodeInfo>> = if per_node {
            p.nodes.iter().map(|n| vec![n]).collect()
        } else if by_state {
            let mut groups: Vec<Vec<&NodeInfo>> = Vec::new();
            for st in STATE_ORDER {
                let mut reasons: Vec<Option<&str>> = Vec::new();
                for n in p.nodes.iter().filter(|n| node_state(n).0 == st) {
                    let r = n.condition.as_ref().map(|c| c.reason.as_str());
                    match reasons.iter().position(|x| *x == r) {
                        Some(k) => {
                            let at = groups.len() - reasons.len() + k;
                            groups[at].push(n);
                        }
                        None => {
                            reasons.push(r);
                            groups.push(vec![n]);
                        }
                    }
                }
            }
            groups
        } else {
            vec![p.nodes.iter().collect()]
        };
        for g in groups.into_iter().filter(|g| !g.is_empty()) {
            out.push(format.render_with(|letter, buf| value(p, &g, letter, buf)));
        }
    }
    out
}

/// Reads `-t`: sinfo's node state names in any case, or `all` (`None`: no filter), as the
/// compact states ([`node_state`]) they select: `drain` selects drained and draining nodes.
/// States Slurm has and batchd's nodes never are in (`mix`, `fail`, ...) select nothing.
pub fn parse_node_states(values: &[String]) -> anyhow::Result<Option<Vec<&'static str>>> {
    const NEVER: &[&str] = &[
        "cloud",
        "comp",
        "completing",
        "fail",
        "failing",
        "future",
        "futr",
        "maint",
        "mix",
        "mixed",
        "no_respond",
        "npc",
        "perfctrs",
        "planned",
        "power_down",
        "powering_down",
        "powered_down",
        "powering_up",
        "reboot",
        "reboot_issued",
        "reboot_requested",
        "unk",
        "unknown",
    ];
    let list = split_list(values);
    if list.is_empty() || list.iter().any(|s| s.eq_ignore_ascii_case("all")) {
        return Ok(None);
    }
    let mut states = Vec::new();
    for s in &list {
        match s.to_ascii_lowercase().as_str() {
            "idle" => states.push("idle"),
            "alloc" | "allocated" => states.push("alloc"),
            "resv" | "reserved" => states.push("resv"),
            "down" => states.push("down"),
            "drain" => states.extend(["drain", "drng"]),
            "drained" => states.push("drain"),
            "draining" | "drng" => states.push("drng"),
            other if NEVER.contains(&other) => {}
            _ => anyhow::bail!("Invalid node state specified: {s}"),
        }
    }
    Ok(Some(states))
}

/// Keeps the nodes of `info` that pass `keep`, each pool's counts and node list recomputed;
/// a pool left without nodes goes.
fn keep_nodes(info: &mut ClusterInfo, keep: impl Fn(&NodeInfo) -> bool) {
    for p in &mut info.pools {
        p.nodes.retain(&keep);
        let count = |st: NodeState| p.nodes.iter().filter(|n| n.state == st).count() as u32;
        p.allocated = count(NodeState::Allocated);
        p.reserved = count(NodeState::Reserved);
        p.total = p.nodes.len() as u32;
        let names: Vec<&str> = p.nodes.iter().map(|n| n.name.as_str()).collect();
        p.node_list = hostlist::compress(&names);
    }
    info.pools.retain(|p| !p.nodes.is_empty());
}

/// `info` with only the pools of `-p` and the nodes of `-n` and `-t`, its counts recomputed.
fn selected(info: &ClusterInfo, cli: &InfoCli) -> anyhow::Result<ClusterInfo> {
    let states = parse_node_states(&cli.states)?;
    let pools = split_list(&cli.pools);
    let mut out = info.clone();
    out.pools
        .retain(|p| pools.is_empty() || pools.contains(&p.name));
    if let Some(list) = cli.nodes.as_deref() {
        let names = hostlist::expand_at_most(list, 1 << 16)
            .map_err(|e| anyhow::anyhow!("Invalid node name specified: {e}"))?;
        keep_nodes(&mut out, |n| names.contains(&n.name));
    }
    if let Some(states) = states {
        keep_nodes(&mut out, |n| states.contains(&node_state(n).0));
    }
    Ok(out)
}

/// `--json`: sinfo's document of the nodes `-p` and `-t` select.
fn json(info: &ClusterInfo, cli: &InfoCli) -> anyhow::Result<serde_json::Value> {
    Ok(super::slurm_json::sinfo(&selected(info, cli)?))
}

impl InfoCli {
    /// The `-o`/`-l` format in force, `None` for the built-in tables.
    pub fn format(&self) -> anyhow::Result<Option<Format>> {
        self.format_with(std::env::var("SINFO_FORMAT").ok())
    }

    /// [`InfoCli::format`] with `env_format` for `$SINFO_FORMAT`, which sinfo reads before
    /// its options: `-o` wins over it, it wins over `-l` and the built-in tables.
    pub fn format_with(&self, env_format: Option<String>) -> anyhow::Result<Option<Format>> {
        let env_format = env_format.filter(|f| !f.is_empty());
        if let Some(names) = &self.format_names {
            return Ok(Some(Format::parse_letters(
                &names_to_letters(names)?,
                LETTERS,
            )?));
        }
        let text = match (&self.format, &env_format, self.long, self.node) {
            (Some(f), _, _, _) | (None, Some(f), _, _) => f.as_str(),
            (None, None, true, false) => LONG_FORMAT,
            (None, None, true, true) => NODE_LONG_FORMAT,
            (None, None, false, _) => return Ok(None),
        };
        Ok(Some(Format::parse_letters(text, LETTERS)?))
    }
}

/// The sinfo-like table of `info`; `now` dates a long (`-l`) listing.
pub fn render(
    info: &ClusterInfo,
    cli: &InfoCli,
    now: batch_proto::time::Time,
    zone: &super::time::Zone,
) -> anyhow::Result<String> {
    let info = selected(info, cli)?;
    if cli.reasons {
        // sinfo -R: a line per reason (with who set it and when) of the nodes down or
        // drained, their host list beside it.
        let mut out = if cli.noheader {
            String::new()
        } else {
            format!(
                "{:<20} {:<9} {:<19} {}\n",
                "REASON", "USER", "TIMESTAMP", "NODELIST"
            )
        };
        let mut lines: Vec<(&batch_proto::NodeCondition, Vec<&str>)> = Vec::new();
        for n in info.pools.iter().flat_map(|p| &p.nodes) {
            let Some(c) = &n.condition else { continue };
            match lines
                .iter_mut()
                .find(|(l, _)| (&l.reason, &l.user, l.since) == (&c.reason, &c.user, c.since))
            {
                Some((_, names)) => names.push(&n.name),
                None => lines.push((c, vec![&n.name])),
            }
        }
        for (c, names) in lines {
            out.push_str(&format!(
                "{:<20} {:<9} {:<19} {}\n",
                super::escape::shown(&c.reason),
                super::escape::shown(&c.user),
                super::time::format_timestamp(c.since, zone),
                hostlist::compress(&names)
            ));
        }
        return Ok(out);
    }
    if let Some(format) = cli.format()? {
        let mut out = String::new();
        if cli.long && !cli.noheader {
            out.push_str(&date_line(now, zone));
            out.push('\n');
        }
        if !cli.noheader {
            let h = format.render_with(|letter, buf| buf.push_str(header(letter)));
            out.push_str(&h);
            out.push('\n');
        }
        for l in format_lines(&info, &format, cli.node) {
            out.push_str(&l);
            out.push('\n');
        }
        return Ok(out);
    }
    let pools: Vec<_> = info.pools.iter().collect();
    let mut rows: Vec<Vec<String>> = Vec::new();
    let hdr = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    if cli.node {
        rows.push(hdr(&["NODELIST", "NODES", "PARTITION", "STATE", "JOB"]));
        for p in &pools {
            for n in &p.nodes {
                rows.push(vec![
                    n.name.clone(),
                    "1".into(),
                    p.name.clone(),
                    node_state(n).0.into(),
                    n.job.map_or_else(|| "-".to_string(), |j| j.to_string()),
                ]);
            }
        }
    } else if cli.summarize {
        rows.push(hdr(&[
            "PARTITION",
            "AVAIL",
            "TIMELIMIT",
            "NODES(A/I/O/T)",
            "NODELIST",
        ]));
        for p in &pools {
            // Reserved (claimed), drained and down nodes are "other" in Slurm's A/I/O/T.
            let (a, i, o, t) = aiot(&p.nodes.iter().collect::<Vec<_>>());
            rows.push(vec![
                p.name.clone(),
                "up".into(),
                limit(p),
                format!("{a}/{i}/{o}/{t}"),
                p.node_list.clone(),
            ]);
        }
    } else {
        rows.push(hdr(&[
            "PARTITION",
            "AVAIL",
            "TIMELIMIT",
            "NODES",
            "STATE",
            "NODELIST",
        ]));
        for p in &pools {
            for st in STATE_ORDER {
                let names: Vec<&str> = p
                    .nodes
                    .iter()
                    .filter(|n| node_state(n).0 == st)
                    .map(|n| n.name.as_str())
                    .collect();
                if names.is_empty() {
                    continue;
                }
                rows.push(vec![
                    p.name.clone(),
                    "up".into(),
                    limit(p),
                    names.len().to_string(),
                    st.into(),
                    hostlist::compress(&names),
                ]);
            }
        }
    }
    if cli.noheader {
        rows.remove(0);
    }
    Ok(table(&rows))
}

/// einfo.
pub fn run(cli: InfoCli) -> anyhow::Result<ExitCode> {
    // Bad options are refused before batchd is asked.
    cli.format()?;
    parse_node_states(&cli.states)?;
    let mut client = connect(cli.socket.path())?;
    match client.request(&Request::Info(InfoRequest {}))? {
        Response::Info(info) => {
            if cli.svg.is_some() || cli.png.is_some() || cli.plot {
                let jobs = client.jobs(&Request::List(batch_proto::ListRequest {
                    filter: batch_proto::JobFilter {
                        pools: split_list(&cli.pools),
                        ..Default::default()
                    },
                    include_finished: false,
                    brief: false,
                }))?;
                let now = now_ms();
                let end = jobs
                    .iter()
                    .filter_map(|j| {
                        let start = j.start_time.or(j.expected_start)?;
                        Some(start + j.time_limit)
                    })
                    .max()
                    .unwrap_or(now)
                    .clamp(now + 60_000, now + 7 * 86_400_000);
                // From the earliest running job's start (an hour back at most): the plan is
                // what comes; the past only shows how long the running jobs have run.
                let from = jobs
                    .iter()
                    .filter(|j| !j.state.is_finished())
                    .filter_map(|j| j.start_time)
                    .min()
                    .unwrap_or(now)
                    .clamp(now.saturating_sub(3_600_000), now);
                let socket = cli.socket.path().map_or_else(
                    batch_proto::socket::default_socket_path,
                    std::path::Path::to_path_buf,
                );
                let socket = socket.display();
                let g = super::pictures::gantt(
                    &info,
                    &jobs,
                    now,
                    (from, end),
                    &local_zone(),
                    format!("einfo: the plan of the batchd of {socket}"),
                    "Running and expected jobs of the live pools.",
                );
                super::pictures::write_picture(&g, cli.svg.as_deref(), cli.png.as_deref())?;
                if cli.plot {
                    let text = esched_report::text::gantt(&g, super::pictures::terminal_width());
                    print_out(&text)?;
                }
                return Ok(ExitCode::SUCCESS);
            }
            if cli.records {
                print_out(&(serde_json::to_string_pretty(&info)? + "\n"))?;
            } else if cli.json {
                super::slurm_json::print(&json(&info, &cli)?)?;
            } else {
                print_out(&render(&info, &cli, now_ms(), &local_zone())?)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        other => Err(ClientError::unexpected("info", &other).into()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn format_names_reasons_and_nodes_as_sinfo() {
        assert_eq!(
            names_to_letters("Partition,nodes:.6,StateLong,gres:10").unwrap(),
            "%20P %.6D %20T %10G"
        );
        assert!(names_to_letters("bogus").is_err());
        let cli = |args: &[&str]| {
            InfoCli::try_parse_from(std::iter::once("einfo").chain(args.iter().copied())).unwrap()
        };
        let z = crate::batch::time::fixed_zone(0);
        assert_eq!(
            render(&info(), &cli(&["-R"]), 0, &z).unwrap(),
            "REASON               USER      TIMESTAMP           NODELIST\n"
        );
        let t = render(
            &info(),
            &cli(&["-h", "-n", "debug[001-002]", "-o", "%D %N %G"]),
            0,
            &z,
        )
        .unwrap();
        // Nodes alike in every field shown share a line.
        assert_eq!(t, "2 debug[001-002] (null)\n");
    }

    use super::*;
    use batch_proto::{NodeInfo, PoolInfo};

    fn info() -> ClusterInfo {
        let nodes = (0..4)
            .map(|i| NodeInfo {
                name: hostlist::node_name("debug", i, 4),
                state: if i == 1 || i == 2 {
                    NodeState::Allocated
                } else {
                    NodeState::Idle
                },
                job: (i == 1 || i == 2).then_some(7),
                condition: None,
            })
            .collect();
        let mut info = ClusterInfo {
            pools: vec![PoolInfo {
                name: "debug".into(),
                total: 4,
                max_time: None,
                allocated: 2,
                reserved: 0,
                node_list: "debug[001-004]".into(),
                nodes,
                cpus_per_node: 1,
                mem_per_node: None,
            }],
            policy: "cbf".into(),
            pending: 0,
            running: 1,
        };
        // 4-CPU nodes, so that %c and %C show a count of their own.
        info.pools[0].cpus_per_node = 4;
        info
    }

    fn cli(args: &[&str]) -> InfoCli {
        InfoCli::try_parse_from(std::iter::once("einfo").chain(args.iter().copied())).unwrap()
    }

    /// `--json` is sinfo's document (`nodes`), of the nodes `-p`/`-t` select; `--records`
    /// is the daemon's record; the two exclude each other.
    #[test]
    fn json_is_sinfos_nodes_of_the_selection() {
        let v = json(&info(), &cli(&["--json"])).unwrap();
        assert_eq!(v["nodes"].as_array().unwrap().len(), 4);
        assert_eq!(v["nodes"][1]["state"], "allocated");
        assert_eq!(v["nodes"][1]["alloc_cpus"], 4);
        let idle = json(&info(), &cli(&["--json", "-t", "idle"])).unwrap();
        let names: Vec<&str> = idle["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|n| n["name"].as_str())
            .collect();
        assert_eq!(names, ["debug001", "debug004"]);
        let none = json(&info(), &cli(&["--json", "-p", "other"])).unwrap();
        assert_eq!(none["nodes"], serde_json::json!([]));
        assert!(InfoCli::try_parse_from(["einfo", "--json", "--records"]).is_err());
    }

    fn rend(c: &InfoCli) -> String {
        render(&info(), c, 0, &crate::batch::time::fixed_zone(0)).unwrap()
    }

    #[test]
    fn sinfo_formats_group_alike_nodes() {
        assert_eq!(
            rend(&cli(&["-o", "%P|%D|%c|%m|%l"])),
            "PARTITION|NODES|CPUS|MEMORY|TIMELIMIT\ndebug|4|4|N/A|infinite\n"
        );
        assert_eq!(
            rend(&cli(&["-h", "-o", "%9P %.5a %.6D %t %N %F %C"])),
            "debug        up      2 alloc debug[002-003] 2/0/0/2 8/0/0/8\n\
             debug        up      2 idle debug[001,004] 0/2/0/2 0/8/0/8\n"
        );
        let n = rend(&cli(&["-N", "-h", "-o", "%N %T"]));
        assert_eq!(
            n.lines().collect::<Vec<_>>()[..2],
            ["debug001 idle", "debug002 allocated"]
        );
        let mut i = info();
        i.pools[0].max_time = Some(90 * 60_000);
        i.pools[0].mem_per_node = Some(8192);
        let out = render(
            &i,
            &cli(&["-h", "-o", "%l %m"]),
            0,
            &crate::batch::time::fixed_zone(0),
        )
        .unwrap();
        assert_eq!(out, "1:30:00 8192\n");
        assert!(cli(&["-o", "%Y"]).format().is_err());
        // sinfo 22.05 reads SINFO_FORMAT as -o; -o wins over it, it wins over -l.
        let env = || Some("%P %D".to_string());
        let header = |f: Option<Format>| {
            f.unwrap()
                .render_with(|letter, buf| buf.push_str(super::header(letter)))
        };
        assert_eq!(
            header(cli(&[]).format_with(env()).unwrap()),
            "PARTITION NODES"
        );
        assert_eq!(
            header(cli(&["-l"]).format_with(env()).unwrap()),
            "PARTITION NODES"
        );
        assert_eq!(
            header(cli(&["-o", "%a"]).format_with(env()).unwrap()),
            "AVAIL"
        );
        assert!(cli(&[]).format_with(None).unwrap().is_none());
    }

    #[test]
    fn long_listings_and_state_filter() {
        let l = rend(&cli(&["-l"]));
        let lines: Vec<&str> = l.lines().collect();
        assert_eq!(lines[0], "Thu Jan 01 00:00:00 1970");
        assert_eq!(
            lines[1],
            "PARTITION AVAIL  TIMELIMIT   JOB_SIZE ROOT OVERSUBS     GROUPS  NODES       STATE NODELIST"
        );
        assert_eq!(
            lines[2],
            "debug        up   infinite        1-4   no       NO        all      2   allocated debug[002-003]"
        );
        let nl = rend(&cli(&["-N", "-l", "-h"]));
        assert_eq!(nl.lines().count(), 4);
        assert!(nl.starts_with("debug001      1     debug        idle    4    1:4:1    N/A        0      1   (null) none"), "{nl}");
        assert_eq!(
            rend(&cli(&["-t", "IDLE", "-h"])),
            "debug up infinite 2 idle debug[001,004]\n"
        );
        assert_eq!(
            rend(&cli(&["-t", "alloc", "-s", "-h"])),
            "debug up infinite 2/0/0/2 debug[002-003]\n"
        );
        assert_eq!(rend(&cli(&["-t", "down,drain", "-h"])), "");
        assert_eq!(rend(&cli(&["-t", "all", "-h"])).lines().count(), 2);
        let e = parse_node_states(&["idle,bogus".into()])
            .unwrap_err()
            .to_string();
        assert_eq!(e, "Invalid node state specified: bogus");
    }

    #[test]
    fn per_state_lines_like_sinfo() {
        assert_eq!(
            rend(&cli(&[])),
            "PARTITION AVAIL TIMELIMIT NODES STATE NODELIST\n\
             debug     up    infinite  2     alloc debug[002-003]\n\
             debug     up    infinite  2     idle  debug[001,004]\n"
        );
        assert!(rend(&cli(&["-s"])).contains("2/2/0/4"));
        let n = rend(&cli(&["-N", "--noheader"]));
        assert_eq!(n.lines().count(), 4);
        assert_eq!(n.lines().nth(1), Some("debug002 1 debug alloc 7"));
        assert_eq!(rend(&cli(&["-p", "other"])).lines().count(), 1);
    }
}
