//! ebench's command line, in the library so that the man page and completions are generated
//! from it (`cargo xtask`).

use std::path::PathBuf;

use clap::Parser;

/// ebench's options.
#[derive(Parser, Debug)]
#[command(
    name = "ebench",
    version,
    about = "Measure batchd: start latency, bursts, throughput, submission rate, equeue time",
    args_override_self = true
)]
pub struct Cli {
    /// The batchd executable (default: next to ebench).
    #[arg(long)]
    pub batchd: Option<PathBuf>,
    /// Concurrent API clients.
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// Held submissions per API client.
    #[arg(long, default_value_t = 5000)]
    pub per_client: usize,
    /// Sequential `esubmit` processes.
    #[arg(long, default_value_t = 500)]
    pub esubmit: usize,
    /// Trivial jobs timed from submit to start, one at a time, by each method: back to back
    /// (each submitted as soon as the job before it is recorded ended) and spaced
    /// (`--latency-gap-ms` after that end).
    #[arg(long, default_value_t = 50)]
    pub latency: usize,
    /// The wait between the end of a spaced probe's job and the next probe's submission, ms.
    #[arg(long, default_value_t = 300)]
    pub latency_gap_ms: u64,
    /// Trivial one-node jobs submitted at once by `--clients` clients (at least one) while a
    /// job holds every node: the burst's time, and the scheduling passes it cost; 0 skips it.
    #[arg(long, default_value_t = 10_000)]
    pub burst: usize,
    /// Job throughput: for each count, that many 0.1 s one-node jobs pending, then jobs/s while
    /// they run; 0 skips it.
    #[arg(long, value_delimiter = ',', default_values_t = [200, 20_000])]
    pub throughput: Vec<usize>,
    /// Pending jobs in the queue when `equeue` is timed.
    #[arg(long, default_value_t = 100_000)]
    pub queue: usize,
    /// Runs of each `equeue` timing (0 skips them).
    #[arg(long, default_value_t = 10)]
    pub runs: usize,
    /// Database durability: full or normal (batchd's default when omitted).
    #[arg(long)]
    pub sync: Option<String>,
    /// batchd's re-policy interval in ms (its default, 100, when omitted).
    #[arg(long)]
    pub repolicy_ms: Option<u64>,
    /// Run on a pool of four hosts, `node[1-4]`, reached over OpenSSH with this ssh config
    /// (`scripts/ssh-hosts.sh up DIR` writes DIR/ssh_config) instead of 8 virtual nodes.
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    /// Run on a pool of `--nodes` nodes held in a Slurm allocation of the cluster this
    /// slurm.conf names (`scripts/slurm-cluster.sh up DIR` writes DIR/slurm.conf), each job a
    /// step of it, instead of virtual nodes.
    #[arg(long, value_name = "FILE", conflicts_with = "ssh_config")]
    pub slurm_conf: Option<PathBuf>,
    /// A top-level line added to batchd's config, e.g. `scheduling.gap_factor=1` (TOML;
    /// repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Nodes of the virtual pool (without --ssh-config).
    #[arg(long, default_value_t = 8)]
    pub nodes: u32,
    /// One-node trivial jobs submitted at once and timed from the first start to the last
    /// (starts/s); 0 skips it.
    #[arg(long, default_value_t = 0)]
    pub starts: usize,
}
