//! einfo: pools and node states, as sinfo.

use std::path::PathBuf;
use std::process::ExitCode;

use batch_proto::{hostlist, ClientError, ClusterInfo, InfoRequest, NodeState, Request, Response};
use clap::Parser;

use super::cli::{connect, print_out};

/// `einfo`'s command line.
#[derive(Parser, Debug)]
#[command(
    name = "einfo",
    version,
    disable_help_flag = true,
    about = "Show batchd's pools and nodes (like sinfo)"
)]
pub struct InfoCli {
    /// One line per node instead of per pool and state.
    #[arg(short = 'N', long = "Node")]
    pub node: bool,
    /// One line per pool with node counts allocated/idle/other/total.
    #[arg(short = 's', long)]
    pub summarize: bool,
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
    /// JSON: the daemon's cluster record.
    #[arg(long)]
    pub json: bool,
    /// Daemon socket (default: $ESCHED_SOCKET, else the standard place).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

fn state_name(s: NodeState) -> &'static str {
    match s {
        NodeState::Idle => "idle",
        NodeState::Allocated => "alloc",
        NodeState::Reserved => "resv",
    }
}

fn table(rows: &[Vec<String>]) -> String {
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

/// The sinfo-like table of `info`.
pub fn render(info: &ClusterInfo, cli: &InfoCli) -> String {
    let pools: Vec<_> = info
        .pools
        .iter()
        .filter(|p| {
            cli.pools.is_empty() || cli.pools.iter().any(|n| n.split(',').any(|n| n == p.name))
        })
        .collect();
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
                    state_name(n.state).into(),
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
            // Reserved (claimed) nodes are "other" in Slurm's A/I/O/T.
            let idle = p.total.saturating_sub(p.allocated + p.reserved);
            rows.push(vec![
                p.name.clone(),
                "up".into(),
                "infinite".into(),
                format!("{}/{}/{}/{}", p.allocated, idle, p.reserved, p.total),
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
            for st in [NodeState::Allocated, NodeState::Reserved, NodeState::Idle] {
                let names: Vec<&str> = p
                    .nodes
                    .iter()
                    .filter(|n| n.state == st)
                    .map(|n| n.name.as_str())
                    .collect();
                if names.is_empty() {
                    continue;
                }
                rows.push(vec![
                    p.name.clone(),
                    "up".into(),
                    "infinite".into(),
                    names.len().to_string(),
                    state_name(st).into(),
                    hostlist::compress(&names),
                ]);
            }
        }
    }
    if cli.noheader {
        rows.remove(0);
    }
    table(&rows)
}

/// einfo.
pub fn run(cli: InfoCli) -> anyhow::Result<ExitCode> {
    let mut client = connect(cli.socket.as_deref())?;
    match client.request(&Request::Info(InfoRequest {}))? {
        Response::Info(info) => {
            if cli.json {
                print_out(&(serde_json::to_string_pretty(&info)? + "\n"))?;
            } else {
                print_out(&render(&info, &cli))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        other => Err(ClientError::unexpected("info", &other).into()),
    }
}

#[cfg(test)]
mod tests {
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
            })
            .collect();
        ClusterInfo {
            pools: vec![PoolInfo {
                name: "debug".into(),
                total: 4,
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
        }
    }

    fn cli(args: &[&str]) -> InfoCli {
        InfoCli::try_parse_from(std::iter::once("einfo").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn per_state_lines_like_sinfo() {
        assert_eq!(
            render(&info(), &cli(&[])),
            "PARTITION AVAIL TIMELIMIT NODES STATE NODELIST\n\
             debug     up    infinite  2     alloc debug[002-003]\n\
             debug     up    infinite  2     idle  debug[001,004]\n"
        );
        assert!(render(&info(), &cli(&["-s"])).contains("2/2/0/4"));
        let n = render(&info(), &cli(&["-N", "--noheader"]));
        assert_eq!(n.lines().count(), 4);
        assert_eq!(n.lines().nth(1), Some("debug002 1 debug alloc 7"));
        assert_eq!(render(&info(), &cli(&["-p", "other"])).lines().count(), 1);
    }
}
