//! The bounds a job's submission must keep, and time limits as Slurm writes them.

/// Most components a co-allocated job may have (KOALA's jobs have a handful; a bound keeps a
/// typo from building a plan of millions of components), and most pools a CooRM session's
/// request may name.
pub const MAX_COMPONENTS: usize = 64;

/// Longest job name, in bytes.
pub const MAX_NAME: usize = 1024;

/// Longest path (working directory, output patterns), in bytes: Linux's `PATH_MAX` (4,096)
/// less its terminating NUL.
pub const MAX_PATH: usize = 4095;

/// Longest word (pool name, account, QOS, user name in a filter), in bytes.
pub const MAX_WORD: usize = 256;

/// Most arguments a job's script may be given.
pub const MAX_ARGS: usize = 4096;

/// Most environment variables a job may be given.
pub const MAX_ENV_VARS: usize = 4096;

/// Longest argument, and longest `NAME=value` of the environment, in bytes: Linux's
/// `MAX_ARG_STRLEN` (128 KiB) less the NUL; `execve` refuses a longer one.
pub const MAX_ARG_LEN: usize = 128 * 1024 - 1;

/// Most bytes of arguments and environment together (each string with its NUL, as `execve`
/// counts them): half of Linux's default `ARG_MAX` (2 MiB, a quarter of the 8 MiB stack), the
/// other half left to the variables batchd adds and to the pointers.
pub const MAX_EXEC_BYTES: usize = 1024 * 1024;

/// Most dependencies one job may have: each is looked up for every pending job at every policy
/// run.
pub const MAX_DEPENDENCIES: usize = 256;

/// Most steps an evolving profile may have: ten times the papers' largest profiles. The
/// evolving policy's fit may slide a profile over the others' one start at a time, refitting
/// its steps at each, its cost growing as the square of the steps: a queue of 100 such jobs
/// plans in 0.02 s at this bound, 1.6 s at 700 steps (docs/batchd.md, "Limits of a job",
/// `cargo bench -p esim --bench bounds`).
pub const MAX_STEPS: usize = 100;

/// Most node counts a moldable job may offer, its explicit configurations and its
/// `--nodes-range` together: a policy weighs every one at each fit, so a plan's cost grows with
/// their number (100 jobs: 0.025 s at this bound, 0.46 s at 65,536; docs/batchd.md, "Limits of
/// a job"). batchd also clips a range to the largest pool the job may use.
pub const MAX_MOLDABLE_CHOICES: u64 = 4096;

/// The longest time limit a job may have, in ms: 365 days. A pool's `max_time` may lower it,
/// never raise it; `-t UNLIMITED` means the pool's `max_time`, this when the pool has none.
/// Planners need finite walltimes (a reservation behind a job of u64::MAX ms never comes), and a
/// year is longer than any batch job while far from overflowing instants.
pub const MAX_TIME_LIMIT: u64 = 365 * DAY_MS;

/// How far ahead `--begin` may be, in ms from the submission: 365 days. A later begin is
/// almost surely a typo (`now+99999999999999`), and it would hold a queue slot for ever.
pub const MAX_BEGIN_AHEAD: u64 = 365 * DAY_MS;

/// The lowest priority a job may have.
pub const MIN_PRIORITY: i64 = -1_000_000;

/// The highest priority a job may have (only root may give a positive one).
pub const MAX_PRIORITY: i64 = 1_000_000;

/// A rigid job's `time_limit` on the wire meaning `UNLIMITED` (Slurm's `--time=0`): the
/// daemon replaces it with the pool's `max_time` (see [`JobSpec::resolve_unlimited`](super::JobSpec::resolve_unlimited)); no job is
/// stored or listed with it.
pub const TIME_UNLIMITED: u64 = 0;

pub(super) const DAY_MS: u64 = 86_400_000;

/// A duration in ms as Slurm writes a time limit, `D-HH:MM:SS` (`HH:MM:SS` under a day),
/// milliseconds rounded up to the second.
pub fn format_limit(ms: u64) -> String {
    let t = ms.div_ceil(1000);
    let (d, h, m, s) = (t / 86_400, t / 3600 % 24, t / 60 % 60, t % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}
