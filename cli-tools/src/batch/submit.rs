//! esubmit's options and how they combine: command line beats environment (`ESUB_*`, like
//! sbatch's `SBATCH_*`) beats `#ESUB` directives in the script.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use batch_proto::{ClientError, JobShape, JobSpec, MoldModel, Request, Response, SubmitRequest};

use clap::{Args, Parser};
use sched_core::request::{MoldConfig, Step};
use sched_core::time::{Duration, Time, HOUR};

use super::cli::{connect, now_ms, print_out};
use super::directives::directive_args;
use super::error::SpecError;
use super::spec::{
    parse_moldable, parse_moldable_model, parse_nodes, parse_nodes_range, parse_profile,
    parse_weight,
};
use super::time::{format_timestamp, parse_begin, parse_time_limit, LocalZone, TimeLimit, Zone};
use batch_proto::Dependency;

/// The options esubmit takes on its command line and in `#ESUB` lines. Values are kept as
/// text here and parsed by [`SubmitOpts::resolve`], once the three sources are merged, so an
/// error can say which source the bad value came from.
#[derive(Args, Debug, Default, Clone, PartialEq, Eq)]
pub struct SubmitOpts {
    /// Number of nodes.
    #[arg(short = 'N', long, value_name = "N")]
    pub nodes: Option<String>,
    /// Time limit: min, min:sec, h:m:s, d-h, d-h:m or d-h:m:s (default 1:00:00).
    #[arg(short = 't', long, value_name = "TIME")]
    pub time: Option<String>,
    /// Job name (default: the script's file name, or "wrap").
    #[arg(short = 'J', long = "job-name", value_name = "NAME")]
    pub job_name: Option<String>,
    /// Standard output file; %j job id, %x job name, %u user, %% a percent sign.
    #[arg(short = 'o', long, value_name = "PATTERN")]
    pub output: Option<String>,
    /// Standard error file (default: with standard output).
    #[arg(short = 'e', long, value_name = "PATTERN")]
    pub error: Option<String>,
    /// Pool to run in (Slurm's partition).
    #[arg(
        short = 'p',
        long = "pool",
        visible_alias = "partition",
        value_name = "POOL"
    )]
    pub pool: Option<String>,
    /// Earliest start: HH:MM[:SS], now+N[seconds|minutes|hours|days], YYYY-MM-DD[THH:MM[:SS]],
    /// today, tomorrow.
    #[arg(short = 'b', long, value_name = "TIME")]
    pub begin: Option<String>,
    /// Submit held: the job waits for `econtrol release`.
    #[arg(short = 'H', long)]
    pub hold: bool,
    /// afterok|afterany|afternotok|after:ID[:ID...][,...] or singleton.
    #[arg(short = 'd', long, value_name = "LIST")]
    pub dependency: Option<String>,
    /// Evolving job: steps SECONDS:NODES[,SECONDS:NODES...].
    #[arg(long, value_name = "STEPS")]
    pub profile: Option<String>,
    /// Moldable job: configurations NODES:TIME[,NODES:TIME...], TIME in -t's forms (a bare
    /// number is minutes). The policy picks one before the start.
    #[arg(long, value_name = "CONFIGS")]
    pub moldable: Option<String>,
    /// Moldable job whose run time on k nodes follows a model, for every k of --nodes-range:
    /// amdahl:WORK:SERIAL gives WORK × (SERIAL + (1 − SERIAL) / k), where WORK is the run
    /// time on one node in -t's forms (amdahl:2:00:00:0.1 is two hours) and SERIAL the serial
    /// fraction, a number in [0, 1]; linear:WORK is SERIAL = 0. Times are rounded up to the
    /// millisecond; with --moldable too, its configurations win at their node counts.
    #[arg(long, value_name = "MODEL")]
    pub moldable_model: Option<String>,
    /// The node counts --moldable-model offers: MIN-MAX (or one count).
    #[arg(long, value_name = "MIN-MAX")]
    pub nodes_range: Option<String>,
    /// Moldable job's weight in the weighted sum of completion times, a positive number
    /// (default 1; the bicriteria policy favours heavier jobs).
    #[arg(long, value_name = "W")]
    pub weight: Option<String>,
    /// Working directory of the job (default: the current directory).
    #[arg(short = 'D', long, value_name = "DIR")]
    pub chdir: Option<String>,
    /// Environment passed on: ALL (default), NONE, or [ALL,]VAR[=value][,...].
    #[arg(long, value_name = "LIST")]
    pub export: Option<String>,
    /// Print the expected start time and submit nothing.
    #[arg(long = "test-only")]
    pub test_only: bool,
    /// Print only the job id.
    #[arg(long)]
    pub parsable: bool,
}

/// `esubmit`'s command line.
#[derive(Parser, Debug)]
#[command(
    name = "esubmit",
    version,
    about = "Submit a batch script to batchd (like sbatch)",
    after_help = "Options may also be given as '#ESUB' lines at the top of the script and \
                  through ESUB_PARTITION, ESUB_TIMELIMIT, ESUB_JOB_NAME, ESUB_OUTPUT, \
                  ESUB_ERROR, ESUB_HOLD, ESUB_EXPORT; the command line beats the environment, \
                  which beats the script."
)]
pub struct SubmitCli {
    /// The options.
    #[command(flatten)]
    pub opts: SubmitOpts,
    /// Wrap a command line in a /bin/sh script instead of giving SCRIPT.
    #[arg(long, value_name = "COMMAND", conflicts_with = "script")]
    pub wrap: Option<String>,
    /// The batch script and its arguments (everything after SCRIPT goes to the script).
    #[arg(
        value_name = "SCRIPT [ARGS]",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub script: Vec<String>,
    /// Daemon socket (default: $ESCHED_SOCKET, else the standard place).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

/// The options of `#ESUB` lines, parsed with the same rules as the command line.
#[derive(Parser, Debug)]
#[command(
    name = "#ESUB",
    no_binary_name = true,
    disable_help_flag = true,
    disable_version_flag = true
)]
struct DirectiveCli {
    #[command(flatten)]
    opts: SubmitOpts,
}

/// Where a value came from, for error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    CommandLine,
    Env(&'static str),
    Script,
}

/// The environment variables esubmit reads, and the option each sets.
pub const ENV_VARS: [&str; 7] = [
    "ESUB_PARTITION",
    "ESUB_TIMELIMIT",
    "ESUB_JOB_NAME",
    "ESUB_OUTPUT",
    "ESUB_ERROR",
    "ESUB_HOLD",
    "ESUB_EXPORT",
];

/// Everything a submission says, parsed and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct SubmitSpec {
    /// Node count (1 when not given).
    pub nodes: u32,
    /// Time limit; `None` when not given (the pool's default applies).
    pub time_limit: Option<TimeLimit>,
    /// Job name.
    pub name: String,
    /// Output pattern, if given.
    pub output: Option<String>,
    /// Error pattern, if given.
    pub error: Option<String>,
    /// Pool name, if given.
    pub pool: Option<String>,
    /// Earliest start (ms since the epoch).
    pub begin: Option<Time>,
    /// Submitted held.
    pub hold: bool,
    /// Dependencies.
    pub dependency: Vec<Dependency>,
    /// Evolving steps.
    pub profile: Option<Vec<Step>>,
    /// Moldable configurations.
    pub moldable: Option<Vec<MoldConfig>>,
    /// Moldable run-time model and its node range.
    pub moldable_model: Option<MoldModel>,
    /// Moldable job's weight.
    pub weight: Option<f64>,
    /// Working directory, absolute.
    pub workdir: PathBuf,
    /// Environment to pass on.
    pub env: Vec<(String, String)>,
    /// Only ask for the expected start.
    pub test_only: bool,
    /// Print only the id.
    pub parsable: bool,
    /// Script text.
    pub script: String,
    /// Arguments to the script.
    pub args: Vec<String>,
}

fn sourced(origin: Origin, e: SpecError) -> SpecError {
    match origin {
        Origin::CommandLine => e,
        Origin::Env(v) => SpecError::Sourced {
            origin: v.to_string(),
            inner: Box::new(e),
        },
        Origin::Script => SpecError::Sourced {
            origin: "#ESUB directive".into(),
            inner: Box::new(e),
        },
    }
}

/// The text of the script `--wrap` makes, as sbatch makes one.
pub fn wrap_script(command: &str) -> String {
    format!("#!/bin/sh\n# This script was generated by esubmit --wrap.\n{command}\n")
}

/// Parses the `#ESUB` lines of `script` as options.
pub fn script_opts(script: &str) -> Result<SubmitOpts, SpecError> {
    let words = directive_args(script)?;
    DirectiveCli::try_parse_from(&words)
        .map(|c| c.opts)
        .map_err(|e| SpecError::Directive {
            line: 0,
            reason: e
                .render()
                .to_string()
                .lines()
                .next()
                .unwrap_or("bad option")
                .to_string(),
        })
        .map_err(|e| match e {
            SpecError::Directive { reason, .. } => SpecError::Invalid {
                what: "#ESUB directive",
                input: words.join(" "),
                reason: reason.trim_start_matches("error: ").to_string(),
            },
            other => other,
        })
}

/// The inputs [`SubmitOpts::resolve`] needs besides the options.
pub struct Context<'a> {
    /// The environment of esubmit (also the source of `ESUB_*`).
    pub env: &'a [(String, String)],
    /// The current directory, absolute.
    pub cwd: &'a Path,
    /// Now, for `--begin`.
    pub now: Time,
    /// Time zone, for `--begin`.
    pub zone: &'a dyn Zone,
}

impl SubmitOpts {
    fn from_env(env: &[(String, String)]) -> Vec<(&'static str, String)> {
        ENV_VARS
            .iter()
            .filter_map(|k| {
                env.iter()
                    .find(|(n, _)| n == k)
                    .map(|(_, v)| (*k, v.clone()))
            })
            .collect()
    }

    /// Merges command line, environment and script options and parses every value.
    /// `script_name` names the job when nothing else does.
    pub fn resolve(
        &self,
        script_opts: &SubmitOpts,
        script: String,
        args: Vec<String>,
        script_name: &str,
        ctx: &Context<'_>,
    ) -> Result<SubmitSpec, SpecError> {
        let env = Self::from_env(ctx.env);
        let env_val = |k: &'static str| env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());
        let pick = |cli: &Option<String>, var: Option<&'static str>, scr: &Option<String>| {
            if let Some(v) = cli {
                return Some((v.clone(), Origin::CommandLine));
            }
            if let Some(k) = var {
                if let Some(v) = env_val(k) {
                    return Some((v, Origin::Env(k)));
                }
            }
            scr.clone().map(|v| (v, Origin::Script))
        };
        let s = script_opts;
        let nodes = pick(&self.nodes, None, &s.nodes)
            .map(|(v, o)| parse_nodes(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let time_limit = pick(&self.time, Some("ESUB_TIMELIMIT"), &s.time)
            .map(|(v, o)| parse_time_limit(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let name = pick(&self.job_name, Some("ESUB_JOB_NAME"), &s.job_name)
            .map(|(v, _)| v)
            .unwrap_or_else(|| script_name.to_string());
        let output = pick(&self.output, Some("ESUB_OUTPUT"), &s.output).map(|(v, _)| v);
        let error = pick(&self.error, Some("ESUB_ERROR"), &s.error).map(|(v, _)| v);
        let pool = pick(&self.pool, Some("ESUB_PARTITION"), &s.pool).map(|(v, _)| v);
        let begin = pick(&self.begin, None, &s.begin)
            .map(|(v, o)| parse_begin(&v, ctx.now, ctx.zone).map_err(|e| sourced(o, e)))
            .transpose()?;
        let hold = self.hold || env_val("ESUB_HOLD").is_some() || s.hold;
        let dependency = pick(&self.dependency, None, &s.dependency)
            .map(|(v, o)| {
                Dependency::parse_list(&v).map_err(|e| sourced(o, SpecError::Proto(e.to_string())))
            })
            .transpose()?
            .unwrap_or_default();
        let profile = pick(&self.profile, None, &s.profile)
            .map(|(v, o)| parse_profile(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let moldable = pick(&self.moldable, None, &s.moldable)
            .map(|(v, o)| parse_moldable(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let model = pick(&self.moldable_model, None, &s.moldable_model)
            .map(|(v, o)| parse_moldable_model(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let range = pick(&self.nodes_range, None, &s.nodes_range)
            .map(|(v, o)| parse_nodes_range(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let weight = pick(&self.weight, None, &s.weight)
            .map(|(v, o)| parse_weight(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let conflict = |reason: &str| SpecError::Conflict(reason.to_string());
        let moldable_model =
            match (model, range) {
                (Some(model), Some((min_nodes, max_nodes))) => Some(MoldModel {
                    model,
                    min_nodes,
                    max_nodes,
                }),
                (Some(_), None) => {
                    return Err(conflict(
                        "--moldable-model needs --nodes-range MIN-MAX (the node counts it offers)",
                    ))
                }
                (None, Some(_)) => return Err(conflict(
                    "--nodes-range goes with --moldable-model (use --moldable for explicit sizes)",
                )),
                (None, None) => None,
            };
        let is_moldable = moldable.is_some() || moldable_model.is_some();
        if weight.is_some() && !is_moldable {
            return Err(conflict(
                "--weight applies to moldable jobs (--moldable or --moldable-model)",
            ));
        }
        if profile.is_some() && is_moldable {
            return Err(conflict(
                "--profile and --moldable/--moldable-model exclude each other",
            ));
        }
        if (profile.is_some() || is_moldable) && (nodes.is_some() || time_limit.is_some()) {
            return Err(conflict(
                "--profile/--moldable/--moldable-model give the nodes and times; drop -N/--nodes and -t/--time",
            ));
        }
        let workdir = match pick(&self.chdir, None, &s.chdir) {
            Some((d, _)) => ctx.cwd.join(d),
            None => ctx.cwd.to_path_buf(),
        };
        let export = pick(&self.export, Some("ESUB_EXPORT"), &s.export);
        let env = match export {
            Some((v, o)) => apply_export(&v, ctx.env).map_err(|e| sourced(o, e))?,
            None => ctx.env.to_vec(),
        };
        if !script.starts_with("#!") {
            return Err(SpecError::Invalid {
                what: "batch script",
                input: script_name.to_string(),
                reason: "the first line must start with #! followed by an interpreter".into(),
            });
        }
        Ok(SubmitSpec {
            nodes: nodes.unwrap_or(1),
            time_limit,
            name,
            output,
            error,
            pool,
            begin,
            hold,
            dependency,
            profile,
            moldable,
            moldable_model,
            weight,
            workdir,
            env,
            test_only: self.test_only || s.test_only,
            parsable: self.parsable || s.parsable,
            script,
            args,
        })
    }
}

/// Applies `--export`: `ALL` (everything), `NONE` (nothing), or a list of names (taken from
/// `env`) and `NAME=value` pairs, with everything else too when the list contains `ALL`.
pub fn apply_export(
    spec: &str,
    env: &[(String, String)],
) -> Result<Vec<(String, String)>, SpecError> {
    let mut all = false;
    let mut out: Vec<(String, String)> = Vec::new();
    for item in spec.split(',').map(str::trim) {
        if item.eq_ignore_ascii_case("all") {
            all = true;
        } else if item.eq_ignore_ascii_case("none") {
            continue;
        } else if let Some((k, v)) = item.split_once('=') {
            if k.is_empty() {
                return Err(SpecError::Invalid {
                    what: "export list",
                    input: spec.to_string(),
                    reason: format!("'{item}' has no variable name"),
                });
            }
            out.push((k.to_string(), v.to_string()));
        } else if item.is_empty() {
            return Err(SpecError::Invalid {
                what: "export list",
                input: spec.to_string(),
                reason: "empty item".into(),
            });
        } else if let Some(kv) = env.iter().find(|(k, _)| k == item) {
            out.push(kv.clone());
        }
    }
    if all {
        let mut full: Vec<(String, String)> = env
            .iter()
            .filter(|(k, _)| !out.iter().any(|(o, _)| o == k))
            .cloned()
            .collect();
        full.extend(out);
        return Ok(full);
    }
    Ok(out)
}

/// Time limit of a job submitted without `-t`. Slurm takes the partition's DefaultTime; batchd
/// pools have none, and a finite limit is what lets backfilling work, so the tools pick one.
pub const DEFAULT_TIME_LIMIT: Duration = HOUR;

/// The wire form of a resolved submission, checked by batch-proto's own bounds as batchd will
/// check it (`now` for `--begin`'s horizon; the pool's `max_time` is the daemon's to check).
pub fn to_job_spec(spec: &SubmitSpec, now: Time) -> Result<JobSpec, SpecError> {
    let shape = if let Some(steps) = &spec.profile {
        JobShape::Evolving {
            steps: steps.clone(),
        }
    } else if spec.moldable.is_some() || spec.moldable_model.is_some() {
        JobShape::Moldable {
            configs: spec.moldable.clone().unwrap_or_default(),
            model: spec.moldable_model,
            weight: spec.weight,
        }
    } else {
        let time_limit = match spec.time_limit {
            None => DEFAULT_TIME_LIMIT,
            Some(TimeLimit::Limited(d)) => d,
            // batchd gives the job its pool's max_time (365 days for a pool without one).
            Some(TimeLimit::Unlimited) => batch_proto::TIME_UNLIMITED,
        };
        JobShape::Rigid {
            nodes: spec.nodes,
            time_limit,
        }
    };
    let work_dir = spec.workdir.to_str().ok_or_else(|| SpecError::Invalid {
        what: "working directory",
        input: spec.workdir.display().to_string(),
        reason: "not valid UTF-8".into(),
    })?;
    let job = JobSpec {
        script: spec.script.clone(),
        args: spec.args.clone(),
        name: spec.name.clone(),
        shape,
        pool: spec.pool.clone(),
        begin: spec.begin,
        hold: spec.hold,
        dependencies: spec.dependency.clone(),
        stdout: spec.output.clone(),
        stderr: spec.error.clone(),
        environment: spec.env.clone(),
        work_dir: work_dir.to_string(),
        priority: 0,
        umask: None,
    };
    job.check(now, None)
        .map_err(|e| SpecError::Proto(e.to_string()))?;
    Ok(job)
}

/// Reads a batch script from `r` (`what` names it in errors): at most
/// [`batch_proto::job::MAX_SCRIPT`] bytes, of text.
pub fn read_script(r: impl Read, what: &str) -> anyhow::Result<String> {
    let max = batch_proto::job::MAX_SCRIPT;
    let mut bytes = Vec::new();
    r.take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {what}"))?;
    if bytes.len() > max {
        anyhow::bail!("{what} is larger than the limit of {max} bytes for a batch script");
    }
    // A NUL byte or invalid UTF-8: an executable or an archive given by mistake.
    match String::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => Ok(text),
        _ => anyhow::bail!("{what} is a binary file, not a batch script (a script is text)"),
    }
}

/// This process's umask, sent with the job so that its output files get it, as with sbatch.
fn current_umask() -> u32 {
    use nix::sys::stat::{umask, Mode};
    // Reading the umask means setting it; put it back at once (the tool has one thread).
    let old = umask(Mode::from_bits_truncate(0o077));
    umask(old);
    old.bits() & 0o777
}

/// esubmit: read the script, merge the options, submit, print the id.
pub fn run(cli: SubmitCli) -> anyhow::Result<ExitCode> {
    let (script, args, script_name) = match (&cli.wrap, cli.script.split_first()) {
        (Some(cmd), _) => (wrap_script(cmd), Vec::new(), "wrap".to_string()),
        (None, Some((path, rest))) => {
            let file =
                std::fs::File::open(path).with_context(|| format!("Unable to open file {path}"))?;
            let text = read_script(file, path)?;
            let name = Path::new(path)
                .file_name()
                .map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned());
            (text, rest.to_vec(), name)
        }
        (None, None) => (
            read_script(std::io::stdin(), "the script on stdin")?,
            Vec::new(),
            "stdin".to_string(),
        ),
    };
    // Variables that are not UTF-8 cannot cross the JSON protocol; they are left out.
    let env: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let cwd = std::env::current_dir().context("cannot determine the current directory")?;
    let ctx = Context {
        env: &env,
        cwd: &cwd,
        now: now_ms(),
        zone: &LocalZone,
    };
    let from_script = script_opts(&script)?;
    let spec = cli
        .opts
        .resolve(&from_script, script, args, &script_name, &ctx)?;
    let mut job = to_job_spec(&spec, ctx.now)?;
    job.umask = Some(current_umask());
    let mut client = connect(cli.socket.as_deref())?;
    let req = Request::Submit(SubmitRequest {
        spec: job,
        test_only: spec.test_only,
    });
    match client.request(&req)? {
        Response::Submitted { id } if spec.parsable => print_out(&format!("{id}\n"))?,
        Response::Submitted { id } => print_out(&format!("Submitted batch job {id}\n"))?,
        Response::TestOnly(r) => {
            let line = match (r.expected_start, r.pool, r.nodes) {
                (Some(t), pool, nodes) => format!(
                    "esubmit: Job would start at {} using {} nodes in pool {}",
                    format_timestamp(t, &LocalZone),
                    nodes.map_or_else(|| "?".to_string(), |n| n.to_string()),
                    pool.unwrap_or_else(|| "?".to_string()),
                ),
                (None, _, _) => {
                    "esubmit: Job would not be placed by the current plan (it waits for a \
                     dependency, a begin time or nodes that do not exist)"
                        .to_string()
                }
            };
            eprintln!("{line}");
        }
        other => return Err(ClientError::unexpected("submit", &other).into()),
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::super::time::FixedZone;
    use super::*;
    use sched_core::time::{MINUTE, SECOND};

    const SCRIPT: &str =
        "#!/bin/sh\n#ESUB -N 2\n#ESUB -t 10 -J fromscript -p batch\n#ESUB -o out.txt\necho hi\n";

    fn cli(args: &[&str]) -> SubmitCli {
        SubmitCli::try_parse_from(std::iter::once("esubmit").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn scripts_are_read_as_text_within_the_limit() {
        assert_eq!(
            read_script(&b"#!/bin/sh\ntrue\n"[..], "s").unwrap(),
            "#!/bin/sh\ntrue\n"
        );
        let e = read_script(&b"\x7fELF\x02\x01\x01\0\0"[..], "a.out").unwrap_err();
        assert_eq!(
            e.to_string(),
            "a.out is a binary file, not a batch script (a script is text)"
        );
        let e = read_script(&b"#!/bin/sh\n\xff\xfe\n"[..], "x").unwrap_err();
        assert!(e.to_string().contains("binary"), "{e}");
        let max = batch_proto::job::MAX_SCRIPT;
        // The limit is on the script's bytes: quotes (doubled by JSON) count once.
        let quotes = "\"".repeat(max);
        assert_eq!(read_script(quotes.as_bytes(), "q").unwrap().len(), max);
        let e = read_script("x".repeat(max + 1).as_bytes(), "big").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("big is larger than the limit of {max} bytes for a batch script")
        );
    }

    fn resolve(c: &SubmitCli, script: &str, env: &[(&str, &str)]) -> Result<SubmitSpec, SpecError> {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let ctx = Context {
            env: &env,
            cwd: Path::new("/home/u"),
            now: 1_000_000,
            zone: &FixedZone(0),
        };
        let so = script_opts(script)?;
        c.opts
            .resolve(&so, script.to_string(), vec![], "job.sh", &ctx)
    }

    #[test]
    fn script_args_go_to_the_script() {
        let c = cli(&["-N", "3", "job.sh", "-N", "5", "--x"]);
        assert_eq!(c.opts.nodes.as_deref(), Some("3"));
        assert_eq!(c.script, vec!["job.sh", "-N", "5", "--x"]);
        let w = cli(&["--wrap", "echo hi", "--partition", "p"]);
        assert_eq!(w.wrap.as_deref(), Some("echo hi"));
        assert_eq!(w.opts.pool.as_deref(), Some("p"));
        assert!(w.script.is_empty());
    }

    #[test]
    fn script_alone_sets_options() {
        let s = resolve(&cli(&["job.sh"]), SCRIPT, &[]).unwrap();
        assert_eq!(s.nodes, 2);
        assert_eq!(s.time_limit, Some(TimeLimit::Limited(10 * MINUTE)));
        assert_eq!(s.name, "fromscript");
        assert_eq!(s.pool.as_deref(), Some("batch"));
        assert_eq!(s.output.as_deref(), Some("out.txt"));
        assert_eq!(s.workdir, Path::new("/home/u"));
    }

    #[test]
    fn command_line_beats_env_beats_script() {
        let env = [
            ("ESUB_PARTITION", "envpool"),
            ("ESUB_TIMELIMIT", "0:30"),
            ("ESUB_JOB_NAME", "envname"),
        ];
        let s = resolve(&cli(&["-J", "cliname", "job.sh"]), SCRIPT, &env).unwrap();
        assert_eq!(s.name, "cliname");
        assert_eq!(s.pool.as_deref(), Some("envpool"));
        assert_eq!(s.time_limit, Some(TimeLimit::Limited(30 * SECOND)));
        assert_eq!(s.nodes, 2);
        let s = resolve(
            &cli(&["-p", "clipool", "-t", "1:00:00", "job.sh"]),
            SCRIPT,
            &env,
        )
        .unwrap();
        assert_eq!(s.pool.as_deref(), Some("clipool"));
        assert_eq!(s.time_limit, Some(TimeLimit::Limited(3600 * SECOND)));
    }

    #[test]
    fn errors_say_where_the_value_came_from() {
        let e = resolve(&cli(&["job.sh"]), SCRIPT, &[("ESUB_TIMELIMIT", "soon")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid time limit 'soon': 'soon' is not a number (from ESUB_TIMELIMIT)"
        );
        let e = resolve(&cli(&["job.sh"]), "#!/bin/sh\n#ESUB -N zero\n", &[]).unwrap_err();
        assert!(e.to_string().ends_with("(from #ESUB directive)"), "{e}");
        let e = resolve(&cli(&["job.sh"]), "#!/bin/sh\n#ESUB --bogus\n", &[]).unwrap_err();
        assert!(e.to_string().contains("--bogus"), "{e}");
        let e = resolve(&cli(&["job.sh"]), "echo no shebang\n", &[]).unwrap_err();
        assert!(e.to_string().contains("#!"), "{e}");
        let e = resolve(
            &cli(&["--profile", "60:2,60:4", "-t", "5", "job.sh"]),
            "#!/bin/sh\n",
            &[],
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "conflicting options: --profile/--moldable/--moldable-model give the nodes and times; drop -N/--nodes and -t/--time"
        );
    }

    #[test]
    fn defaults_and_flags() {
        let s = resolve(
            &cli(&["-H", "--begin", "now+10", "-d", "afterok:4", "job.sh"]),
            "#!/bin/sh\ntrue\n",
            &[],
        )
        .unwrap();
        assert_eq!(
            (s.nodes, s.time_limit, s.name.as_str()),
            (1, None, "job.sh")
        );
        assert!(s.hold);
        assert_eq!(s.begin, Some(1_010_000));
        assert_eq!(s.dependency.len(), 1);
        let s = resolve(&cli(&["job.sh"]), "#!/bin/sh\n#ESUB --hold\n", &[]).unwrap();
        assert!(s.hold);
        let s = resolve(&cli(&["job.sh"]), "#!/bin/sh\n", &[("ESUB_HOLD", "1")]).unwrap();
        assert!(s.hold);
    }

    #[test]
    fn profile_and_moldable_conflicts() {
        let s = resolve(
            &cli(&["--profile", "10:1,20:2", "job.sh"]),
            "#!/bin/sh\n",
            &[],
        )
        .unwrap();
        assert_eq!(s.profile.as_ref().map(Vec::len), Some(2));
        assert!(resolve(
            &cli(&["--profile", "10:1", "--moldable", "1:1", "job.sh"]),
            "#!/bin/sh\n",
            &[]
        )
        .is_err());
        // The script's -N conflicts with the command line's --moldable.
        assert!(resolve(&cli(&["--moldable", "1:1", "job.sh"]), SCRIPT, &[]).is_err());
    }

    #[test]
    fn chdir_is_relative_to_cwd() {
        let s = resolve(&cli(&["-D", "sub", "job.sh"]), "#!/bin/sh\n", &[]).unwrap();
        assert_eq!(s.workdir, Path::new("/home/u/sub"));
        let s = resolve(&cli(&["-D", "/abs", "job.sh"]), "#!/bin/sh\n", &[]).unwrap();
        assert_eq!(s.workdir, Path::new("/abs"));
    }

    #[test]
    fn export_lists() {
        let env: Vec<(String, String)> = [("A", "1"), ("B", "2")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(apply_export("ALL", &env).unwrap(), env);
        assert!(apply_export("NONE", &env).unwrap().is_empty());
        assert_eq!(
            apply_export("B,C=3", &env).unwrap(),
            vec![("B".into(), "2".into()), ("C".into(), "3".into())]
        );
        assert_eq!(
            apply_export("ALL,A=9", &env).unwrap(),
            vec![("B".into(), "2".into()), ("A".into(), "9".into())]
        );
        assert!(apply_export("=x", &env).is_err());
    }

    #[test]
    fn wrap_makes_a_shell_script() {
        let w = wrap_script("echo hi");
        assert!(w.starts_with("#!/bin/sh\n") && w.contains("\necho hi\n"));
        assert!(script_opts(&w).unwrap() == SubmitOpts::default());
    }

    #[test]
    fn wire_specs() {
        let s = resolve(&cli(&["-N", "2", "job.sh"]), "#!/bin/sh\n", &[("X", "1")]).unwrap();
        let j = to_job_spec(&s, 1_000_000).unwrap();
        assert_eq!(
            j.shape,
            JobShape::Rigid {
                nodes: 2,
                time_limit: DEFAULT_TIME_LIMIT
            }
        );
        assert_eq!(
            (j.work_dir.as_str(), j.name.as_str()),
            ("/home/u", "job.sh")
        );
        assert_eq!(j.environment, vec![("X".to_string(), "1".to_string())]);
        let s = resolve(&cli(&["-t", "UNLIMITED", "job.sh"]), "#!/bin/sh\n", &[]).unwrap();
        assert_eq!(
            to_job_spec(&s, 1_000_000).unwrap().shape,
            JobShape::Rigid {
                nodes: 1,
                time_limit: batch_proto::TIME_UNLIMITED
            }
        );
        // Parsed, then refused by batch-proto's bounds with their one-line messages.
        let s = resolve(
            &cli(&["-t", "99999999999999", "job.sh"]),
            "#!/bin/sh\n",
            &[],
        )
        .unwrap();
        assert_eq!(
            to_job_spec(&s, 1_000_000).unwrap_err().to_string(),
            "invalid time limit: 69444444444-10:39:00 is longer than the longest allowed, 365-00:00:00"
        );
        let s = resolve(
            &cli(&["--begin", "now+99999999999999", "job.sh"]),
            "#!/bin/sh\n",
            &[],
        )
        .unwrap();
        assert_eq!(
            to_job_spec(&s, 1_000_000).unwrap_err().to_string(),
            "invalid begin time: 1157407407 days ahead; at most 365 days ahead are accepted"
        );
        let s = resolve(
            &cli(&["--begin", "now+365days", "-t", "365-0", "job.sh"]),
            "#!/bin/sh\n",
            &[],
        )
        .unwrap();
        assert!(to_job_spec(&s, 1_000_000).is_ok());
        let s = resolve(
            &cli(&["--profile", "500:5,3600:10", "job.sh"]),
            "#!/bin/sh\n",
            &[],
        )
        .unwrap();
        assert_eq!(
            to_job_spec(&s, 1_000_000).unwrap().shape,
            JobShape::Evolving {
                steps: vec![Step::new(500_000, 5), Step::new(3_600_000, 10)]
            }
        );
        let s = resolve(
            &cli(&["--moldable", "4:60", "-d", "afterok:3", "job.sh"]),
            "#!/bin/sh\n",
            &[],
        )
        .unwrap();
        let j = to_job_spec(&s, 1_000_000).unwrap();
        assert_eq!(
            j.shape,
            JobShape::Moldable {
                configs: vec![MoldConfig {
                    nodes: 4,
                    walltime: 60 * MINUTE
                }],
                model: None,
                weight: None,
            }
        );
        assert_eq!(j.dependencies.len(), 1);
        let s = resolve(
            &cli(&[
                "--moldable-model",
                "amdahl:1:00:00:0.25",
                "--nodes-range",
                "2-16",
                "--moldable",
                "32:5",
                "--weight",
                "3",
                "job.sh",
            ]),
            "#!/bin/sh\n",
            &[],
        )
        .unwrap();
        assert_eq!(
            to_job_spec(&s, 1_000_000).unwrap().shape,
            JobShape::Moldable {
                configs: vec![MoldConfig {
                    nodes: 32,
                    walltime: 5 * MINUTE
                }],
                model: Some(MoldModel {
                    model: sched_core::SpeedupModel::Amdahl {
                        work: 60 * MINUTE,
                        serial: 0.25
                    },
                    min_nodes: 2,
                    max_nodes: 16
                }),
                weight: Some(3.0),
            }
        );
    }

    #[test]
    fn moldable_options_from_directives_and_their_conflicts() {
        let script = "#!/bin/sh\n#ESUB --moldable-model linear:10\n#ESUB --nodes-range 1-4\n#ESUB --weight 2\n";
        let s = resolve(&cli(&["job.sh"]), script, &[]).unwrap();
        assert_eq!(s.weight, Some(2.0));
        assert_eq!(
            s.moldable_model.map(|m| (m.min_nodes, m.max_nodes)),
            Some((1, 4))
        );
        let refused = |args: &[&str]| {
            resolve(&cli(args), "#!/bin/sh\n", &[])
                .unwrap_err()
                .to_string()
        };
        for (args, why) in [
            (
                &["--moldable-model", "amdahl:60:0.1", "job.sh"][..],
                "needs --nodes-range",
            ),
            (
                &["--nodes-range", "1-4", "job.sh"][..],
                "goes with --moldable-model",
            ),
            (
                &["--weight", "2", "job.sh"][..],
                "--weight applies to moldable jobs",
            ),
            (
                &["--weight", "0", "--moldable", "1:1", "job.sh"][..],
                "invalid weight '0'",
            ),
            (
                &["--moldable", "1:1", "--profile", "1:1", "job.sh"][..],
                "exclude each other",
            ),
            (
                &[
                    "--moldable-model",
                    "linear:5",
                    "--nodes-range",
                    "1-2",
                    "-N",
                    "2",
                    "job.sh",
                ][..],
                "drop -N/--nodes",
            ),
            (
                &[
                    "--moldable-model",
                    "amdahl:5:2",
                    "--nodes-range",
                    "1-2",
                    "job.sh",
                ][..],
                "not a number in [0, 1]",
            ),
        ] {
            let e = refused(args);
            assert!(e.contains(why) && !e.contains('\n'), "{args:?}: {e}");
        }
        // A directive's bad value says where it came from.
        let e = resolve(
            &cli(&["job.sh"]),
            "#!/bin/sh\n#ESUB --nodes-range 4-1\n",
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(e.ends_with("(from #ESUB directive)"), "{e}");
    }
}
