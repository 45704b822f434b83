//! How the three sources of esubmit's options combine into one submission: command line beats
//! environment (`ESUB_*`, like sbatch's `SBATCH_*`) beats `#ESUB` directives in the script.

use std::path::Path;

use batch_proto::time::{Duration, Time, HOUR};
use batch_proto::{Dependency, JobShape, JobSpec, MoldModel};
use clap::Parser;

use super::super::directives::{
    gives_option, gives_value, locate, marked_args, parse_marked, MAGIC, SBATCH_MAGIC,
};
use super::super::error::SpecError;
use super::super::spec::{
    parse_moldable, parse_moldable_model, parse_nodes, parse_nodes_range, parse_profile,
    parse_weight,
};
use super::super::time::{parse_begin, parse_time_limit, TimeLimit, Zone};
use super::options::SubmitOpts;

/// The marker of PBS's directive lines, which sbatch also reads.
const PBS_MAGIC: &str = "#PBS";

/// The options of `#ESUB` lines, parsed with the same rules as the command line.
#[derive(Parser, Debug)]
#[command(
    name = "#ESUB",
    no_binary_name = true,
    args_override_self = true,
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
    /// A directive line, for the option of this id.
    Script(&'static str),
}

/// The Slurm spelling of each of [`ENV_VARS`] (`ESUB_X` is `SBATCH_X`, read when `ESUB_X` is
/// not set, so an environment set up for sbatch keeps working).
const SBATCH_ENV_VARS: [&str; 23] = [
    "SBATCH_PARTITION",
    "SBATCH_TIMELIMIT",
    "SBATCH_JOB_NAME",
    "SBATCH_OUTPUT",
    "SBATCH_ERROR",
    "SBATCH_HOLD",
    "SBATCH_EXPORT",
    "SBATCH_SIGNAL",
    "SBATCH_OPEN_MODE",
    "SBATCH_ACCOUNT",
    "SBATCH_QOS",
    "SBATCH_ARRAY_INX",
    "SBATCH_REQUEUE",
    "SBATCH_NO_REQUEUE",
    "SBATCH_EXCLUSIVE",
    "SBATCH_WCKEY",
    "SBATCH_NO_KILL",
    "SBATCH_HINT",
    "SBATCH_DISTRIBUTION",
    "SBATCH_PROFILE",
    "SBATCH_IGNORE_PBS",
    "SBATCH_MEM_PER_NODE",
    "SBATCH_MEM_PER_CPU",
];

/// sbatch's variables for options esubmit does not have, and the option each stands for: one
/// that is set is refused as its option is, rather than ignored.
const SBATCH_UNSUPPORTED_VARS: [(&str, &str); 10] = [
    ("SBATCH_GRES", "--gres"),
    ("SBATCH_GPUS", "--gpus"),
    ("SBATCH_GPUS_PER_NODE", "--gpus-per-node"),
    ("SBATCH_GPUS_PER_TASK", "--gpus-per-task"),
    ("SBATCH_CPUS_PER_GPU", "--cpus-per-gpu"),
    ("SBATCH_MEM_PER_GPU", "--mem-per-gpu"),
    ("SBATCH_CONSTRAINT", "--constraint"),
    ("SBATCH_CLUSTERS", "--clusters"),
    ("SBATCH_RESERVATION", "--reservation"),
    ("SBATCH_NETWORK", "--network"),
];

/// The environment variables esubmit reads, and the option each sets.
pub const ENV_VARS: [&str; 23] = [
    "ESUB_PARTITION",
    "ESUB_TIMELIMIT",
    "ESUB_JOB_NAME",
    "ESUB_OUTPUT",
    "ESUB_ERROR",
    "ESUB_HOLD",
    "ESUB_EXPORT",
    "ESUB_SIGNAL",
    "ESUB_OPEN_MODE",
    "ESUB_ACCOUNT",
    "ESUB_QOS",
    "ESUB_ARRAY_INX",
    "ESUB_REQUEUE",
    "ESUB_NO_REQUEUE",
    "ESUB_EXCLUSIVE",
    "ESUB_WCKEY",
    "ESUB_NO_KILL",
    "ESUB_HINT",
    "ESUB_DISTRIBUTION",
    "ESUB_PROFILE",
    "ESUB_IGNORE_PBS",
    "ESUB_MEM_PER_NODE",
    "ESUB_MEM_PER_CPU",
];

/// A resolved submission: the job as batchd receives it (batch-proto's [`JobSpec`], the one
/// representation of a submission), and what esubmit itself does with the answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Submission {
    /// The job.
    pub job: JobSpec,
    /// Only ask for the expected start.
    pub test_only: bool,
    /// Print only the id.
    pub parsable: bool,
}

impl Submission {
    /// Checks the job with batch-proto's own bounds, as batchd will check it (`now` for
    /// `--begin`'s horizon; the pool's `max_time` is the daemon's to check).
    pub fn check(&self, now: Time) -> Result<(), SpecError> {
        self.job
            .check(now, None)
            .map_err(|e| SpecError::Proto(e.to_string()))
    }
}

/// The flags of esubmit's option `id` as `-N/--nodes` (the id when none is found).
fn flags_of(id: &str) -> String {
    let cmd = <SubmitOpts as clap::Args>::augment_args(clap::Command::new("esubmit"));
    let Some(arg) = cmd.get_arguments().find(|a| a.get_id() == id) else {
        return id.to_string();
    };
    let mut flags: Vec<String> = arg
        .get_short()
        .map(|c| format!("-{c}"))
        .into_iter()
        .collect();
    flags.extend(arg.get_long().map(|l| format!("--{l}")));
    flags.join("/")
}

fn sourced(origin: Origin, e: SpecError) -> SpecError {
    match origin {
        Origin::CommandLine => e,
        Origin::Env(v) => SpecError::Sourced {
            origin: v.to_string(),
            inner: Box::new(e),
        },
        Origin::Script(id) => SpecError::Sourced {
            origin: format!("{SCRIPT_ORIGIN} {}", flags_of(id)),
            inner: Box::new(e),
        },
    }
}

/// The text of the script `--wrap` makes, as sbatch makes one.
pub fn wrap_script(command: &str) -> String {
    format!("#!/bin/sh\n# This script was generated by esubmit --wrap.\n{command}\n")
}

/// Parses the directive lines of `script` as options: `#ESUB` lines, and `#SBATCH` lines for
/// the options no `#ESUB` line gives (an `#ESUB` line wins for the same option).
pub fn script_opts(script: &str) -> Result<SubmitOpts, SpecError> {
    let esub = marked_opts(script, MAGIC)?;
    let sbatch = marked_opts(script, SBATCH_MAGIC)?;
    Ok(esub.or(sbatch))
}

fn marked_opts(script: &str, magic: &'static str) -> Result<SubmitOpts, SpecError> {
    let words = marked_args(script, magic)?;
    DirectiveCli::try_parse_from(&words)
        .map(|c| c.opts)
        .map_err(|e| {
            // The line at fault is the first one refused on its own; an error that only the
            // lines together make (an option given twice) quotes them all.
            let alone = parse_marked(script, magic).ok().and_then(|lines| {
                lines.into_iter().find_map(|d| {
                    let e = DirectiveCli::try_parse_from(&d.words).err()?;
                    let text = script.lines().nth(d.line - 1)?.trim().to_string();
                    Some(SpecError::Directive {
                        line: d.line,
                        reason: format!("`{text}`: {}", super::super::cli::clap_error_line(&e)),
                    })
                })
            });
            alone.unwrap_or_else(|| SpecError::Invalid {
                what: if magic == MAGIC {
                    "#ESUB directives"
                } else {
                    "#SBATCH directives"
                },
                input: words.join(" "),
                reason: super::super::cli::clap_error_line(&e),
            })
        })
}

/// `e`, an error about a value or options that came from `script`, with the directive line
/// that gave them: an invalid value names the line that holds it, a conflict each line that
/// gives one of the options it names.
fn with_script_lines(script: &str, e: SpecError) -> SpecError {
    match e {
        SpecError::Sourced { origin, inner } if origin.starts_with(SCRIPT_ORIGIN) => {
            // The option the value was for, as `sourced` wrote it (`-N/--nodes`).
            let options: Vec<&str> = origin[SCRIPT_ORIGIN.len()..]
                .trim()
                .split('/')
                .filter(|o| o.starts_with('-'))
                .collect();
            let gives = |w: &[String]| options.iter().any(|o| gives_option(w, o));
            // The line that gives the option (with the bad value, when the error quotes it);
            // of several, the last, which overrides the others and so is the one used.
            let found = match inner.as_ref() {
                SpecError::Invalid { input, .. } => {
                    locate(script, |w| gives(w) && gives_value(w, input.as_str()))
                }
                _ => None,
            }
            .or_else(|| locate(script, gives));
            let origin = match found {
                Some((line, text)) => format!("line {line} of the script: `{text}`"),
                None => origin,
            };
            SpecError::Sourced { origin, inner }
        }
        SpecError::Conflict(reason) => {
            let mut lines: Vec<(usize, String)> = Vec::new();
            let options = reason
                .split(|c: char| {
                    c.is_whitespace() || c == '/' || c == ',' || c == ';' || c == '(' || c == ')'
                })
                .filter(|w| w.starts_with('-') && w.len() > 1);
            for opt in options {
                if let Some(found) = locate(script, |w| gives_option(w, opt)) {
                    if !lines.contains(&found) {
                        lines.push(found);
                    }
                }
            }
            if lines.is_empty() {
                return SpecError::Conflict(reason);
            }
            lines.sort();
            let quoted: Vec<String> = lines
                .iter()
                .map(|(n, t)| format!("line {n}: `{t}`"))
                .collect();
            SpecError::Conflict(format!(
                "{reason} (from the script's {})",
                quoted.join(", ")
            ))
        }
        e => e,
    }
}

/// The origin a value from the script's directives is reported under.
const SCRIPT_ORIGIN: &str = "#ESUB/#SBATCH directive";

/// The inputs [`SubmitOpts::resolve`] needs besides the options.
pub struct Context<'a> {
    /// The environment of esubmit (also the source of `ESUB_*`).
    pub env: &'a [(String, String)],
    /// The current directory, absolute.
    pub cwd: &'a Path,
    /// Now, for `--begin`.
    pub now: Time,
    /// Time zone, for `--begin`.
    pub zone: &'a Zone,
}

impl SubmitOpts {
    /// The options given twice over, each field from `self` unless only `other` has it.
    /// Every option of [`SubmitOpts`] is named here: a new one must say how it merges.
    #[must_use]
    pub fn or(self, other: SubmitOpts) -> SubmitOpts {
        let SubmitOpts {
            nodes,
            time,
            job_name,
            output,
            error,
            pool,
            begin,
            hold,
            dependency,
            profile,
            moldable,
            moldable_model,
            nodes_range,
            weight,
            components,
            deadline,
            requeue,
            no_requeue,
            chdir,
            export,
            test_only,
            parsable,
            array,
            ntasks,
            cpus_per_task,
            ntasks_per_node,
            mem,
            mem_per_cpu,
            exclusive,
            account,
            qos,
            mail_type,
            mail_user,
            signal,
            open_mode,
            evolving_profile,
            wckey,
            comment,
            nice,
            time_min,
            no_kill,
            tmp,
            hint,
            distribution,
            ignore_pbs,
        } = self;
        SubmitOpts {
            nodes: nodes.or(other.nodes),
            time: time.or(other.time),
            job_name: job_name.or(other.job_name),
            output: output.or(other.output),
            error: error.or(other.error),
            pool: pool.or(other.pool),
            begin: begin.or(other.begin),
            hold: hold || other.hold,
            dependency: dependency.or(other.dependency),
            profile: profile.or(other.profile),
            moldable: moldable.or(other.moldable),
            moldable_model: moldable_model.or(other.moldable_model),
            nodes_range: nodes_range.or(other.nodes_range),
            weight: weight.or(other.weight),
            components: components.or(other.components),
            deadline: deadline.or(other.deadline),
            // One choice, whichever of the pair says it: the first source that says either.
            requeue: if requeue || no_requeue {
                requeue
            } else {
                other.requeue
            },
            no_requeue: if requeue || no_requeue {
                no_requeue
            } else {
                other.no_requeue
            },
            chdir: chdir.or(other.chdir),
            export: export.or(other.export),
            test_only: test_only || other.test_only,
            parsable: parsable || other.parsable,
            array: array.or(other.array),
            ntasks: ntasks.or(other.ntasks),
            cpus_per_task: cpus_per_task.or(other.cpus_per_task),
            ntasks_per_node: ntasks_per_node.or(other.ntasks_per_node),
            mem: mem.or(other.mem),
            mem_per_cpu: mem_per_cpu.or(other.mem_per_cpu),
            exclusive: exclusive || other.exclusive,
            account: account.or(other.account),
            qos: qos.or(other.qos),
            mail_type: mail_type.or(other.mail_type),
            mail_user: mail_user.or(other.mail_user),
            signal: signal.or(other.signal),
            open_mode: open_mode.or(other.open_mode),
            evolving_profile: evolving_profile.or(other.evolving_profile),
            wckey: wckey.or(other.wckey),
            comment: comment.or(other.comment),
            nice: nice.or(other.nice),
            time_min: time_min.or(other.time_min),
            no_kill: no_kill.or(other.no_kill),
            tmp: tmp.or(other.tmp),
            hint: hint.or(other.hint),
            distribution: distribution.or(other.distribution),
            ignore_pbs: ignore_pbs || other.ignore_pbs,
        }
    }

    /// The variables of [`ENV_VARS`] that are set, each under its `ESUB_` name; an unset
    /// `ESUB_X` is taken from `SBATCH_X` (the error then names `SBATCH_X`).
    fn from_env(env: &[(String, String)]) -> Vec<(&'static str, &'static str, String)> {
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        ENV_VARS
            .iter()
            .zip(SBATCH_ENV_VARS.iter())
            .filter_map(|(e, s)| {
                get(e)
                    .map(|v| (*e, *e, v))
                    .or_else(|| get(s).map(|v| (*e, *s, v)))
            })
            .collect()
    }

    /// Merges command line, environment and script options and parses every value.
    /// `script_name` names the job when nothing else does. An error about what the script's
    /// directives gave names their line.
    pub fn resolve(
        &self,
        script_opts: &SubmitOpts,
        script: String,
        args: Vec<String>,
        script_name: &str,
        ctx: &Context<'_>,
    ) -> Result<Submission, SpecError> {
        let text = script.clone();
        self.resolve_merged(script_opts, script, args, script_name, ctx)
            .map_err(|e| with_script_lines(&text, e))
    }

    fn resolve_merged(
        &self,
        script_opts: &SubmitOpts,
        script: String,
        args: Vec<String>,
        script_name: &str,
        ctx: &Context<'_>,
    ) -> Result<Submission, SpecError> {
        if let Some((var, opt)) = SBATCH_UNSUPPORTED_VARS
            .iter()
            .find(|(var, _)| ctx.env.iter().any(|(k, _)| k == var))
        {
            return Err(SpecError::Sourced {
                origin: (*var).to_string(),
                inner: Box::new(SpecError::Proto(crate::batch::cli::unrecognized(opt))),
            });
        }
        let env = Self::from_env(ctx.env);
        let env_val = |k: &'static str| {
            env.iter()
                .find(|(n, _, _)| *n == k)
                .map(|(_, from, v)| (*from, v.clone()))
        };
        // `id`: the option's id (its field), for naming the directive line of a bad value.
        let pick = |id: &'static str,
                    cli: &Option<String>,
                    var: Option<&'static str>,
                    scr: &Option<String>| {
            if let Some(v) = cli {
                return Some((v.clone(), Origin::CommandLine));
            }
            if let Some(k) = var {
                if let Some((from, v)) = env_val(k) {
                    return Some((v, Origin::Env(from)));
                }
            }
            scr.clone().map(|v| (v, Origin::Script(id)))
        };
        let s = script_opts;
        let nodes = pick("nodes", &self.nodes, None, &s.nodes)
            .map(|(v, o)| parse_nodes(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let time_limit = pick("time", &self.time, Some("ESUB_TIMELIMIT"), &s.time)
            .map(|(v, o)| parse_time_limit(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let name = pick(
            "job_name",
            &self.job_name,
            Some("ESUB_JOB_NAME"),
            &s.job_name,
        )
        .map(|(v, _)| v)
        .unwrap_or_else(|| script_name.to_string());
        let output = pick("output", &self.output, Some("ESUB_OUTPUT"), &s.output).map(|(v, _)| v);
        let error = pick("error", &self.error, Some("ESUB_ERROR"), &s.error).map(|(v, _)| v);
        let pool = pick("pool", &self.pool, Some("ESUB_PARTITION"), &s.pool).map(|(v, _)| v);
        let begin = pick("begin", &self.begin, None, &s.begin)
            .map(|(v, o)| parse_begin(&v, ctx.now, ctx.zone).map_err(|e| sourced(o, e)))
            .transpose()?;
        let hold = self.hold || env_val("ESUB_HOLD").is_some() || s.hold;
        let dependency = pick("dependency", &self.dependency, None, &s.dependency)
            .map(|(v, o)| {
                Dependency::parse_list(&v).map_err(|e| sourced(o, SpecError::Proto(e.to_string())))
            })
            .transpose()?
            .unwrap_or_default();
        // `--profile` is Slurm's profiling when its value is one of Slurm's (stored, no effect),
        // else an evolving job's steps, as `--evolving-profile` gives them.
        let slurm_profile = pick("profile", &self.profile, Some("ESUB_PROFILE"), &s.profile)
            .and_then(|(v, _)| batch_proto::InertOptions::parse_profile(&v).ok());
        let steps = match pick(
            "evolving_profile",
            &self.evolving_profile,
            None,
            &s.evolving_profile,
        ) {
            Some(p) => Some(p),
            None if slurm_profile.is_none() => {
                pick("profile", &self.profile, Some("ESUB_PROFILE"), &s.profile)
            }
            None => None,
        };
        let profile = steps
            .map(|(v, o)| parse_profile(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let moldable = pick("moldable", &self.moldable, None, &s.moldable)
            .map(|(v, o)| parse_moldable(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let model = pick(
            "moldable_model",
            &self.moldable_model,
            None,
            &s.moldable_model,
        )
        .map(|(v, o)| parse_moldable_model(&v).map_err(|e| sourced(o, e)))
        .transpose()?;
        let range = pick("nodes_range", &self.nodes_range, None, &s.nodes_range)
            .map(|(v, o)| parse_nodes_range(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let weight = pick("weight", &self.weight, None, &s.weight)
            .map(|(v, o)| parse_weight(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let components = pick("components", &self.components, None, &s.components)
            .map(|(v, o)| parse_components(&v).map_err(|e| sourced(o, e)))
            .transpose()?;
        let deadline = pick("deadline", &self.deadline, None, &s.deadline)
            .map(|(v, o)| parse_deadline(&v, ctx.now, ctx.zone).map_err(|e| sourced(o, e)))
            .transpose()?;
        // The command line's choice wins over the environment's, which wins over the
        // script's, either way: `Some(true)` requeue, `Some(false)` an explicit --no-requeue.
        let requeue_choice = if self.requeue || self.no_requeue {
            Some(self.requeue)
        } else if env_val("ESUB_REQUEUE").is_some() {
            Some(true)
        } else if env_val("ESUB_NO_REQUEUE").is_some() {
            Some(false)
        } else if s.requeue || s.no_requeue {
            Some(s.requeue)
        } else {
            None
        };
        let requeue = requeue_choice == Some(true);
        let no_requeue = requeue_choice == Some(false);
        let warn_signal = pick("signal", &self.signal, Some("ESUB_SIGNAL"), &s.signal)
            .map(|(v, o)| {
                batch_proto::signal::JobSignal::parse(&v).map_err(|reason| {
                    sourced(
                        o,
                        SpecError::Invalid {
                            what: "--signal",
                            input: v.clone(),
                            reason,
                        },
                    )
                })
            })
            .transpose()?;
        let open_append = match pick(
            "open_mode",
            &self.open_mode,
            Some("ESUB_OPEN_MODE"),
            &s.open_mode,
        ) {
            None => false,
            Some((v, o)) => match v.trim().to_ascii_lowercase().as_str() {
                // sbatch takes any prefix of either word ("a", "t", "app").
                m if !m.is_empty() && "append".starts_with(m) => true,
                m if !m.is_empty() && "truncate".starts_with(m) => false,
                _ => {
                    return Err(sourced(
                        o,
                        SpecError::Invalid {
                            what: "--open-mode",
                            input: v.clone(),
                            reason: "expected append or truncate".into(),
                        },
                    ))
                }
            },
        };
        let array = pick("array", &self.array, Some("ESUB_ARRAY_INX"), &s.array)
            .map(|(v, o)| {
                batch_proto::ArraySpec::parse(&v).map_err(|reason| {
                    sourced(
                        o,
                        SpecError::Invalid {
                            what: "array",
                            input: v.clone(),
                            reason,
                        },
                    )
                })
            })
            .transpose()?;
        let inert = self.inert(s, &pick)?;
        let count =
            |what: &'static str, id: &'static str, v: &Option<String>, scr: &Option<String>| {
                pick(id, v, None, scr)
                    .map(|(v, o)| {
                        v.trim()
                            .parse::<u32>()
                            .ok()
                            .filter(|n| *n > 0)
                            .ok_or_else(|| {
                                sourced(
                                    o,
                                    SpecError::Invalid {
                                        what,
                                        input: v.clone(),
                                        reason: "expected a positive number".into(),
                                    },
                                )
                            })
                    })
                    .transpose()
            };
        let size = |what: &'static str,
                    id: &'static str,
                    v: &Option<String>,
                    var: &'static str,
                    scr: &Option<String>| {
            pick(id, v, Some(var), scr)
                .map(|(v, o)| {
                    batch_proto::resources::parse_mem(&v).map_err(|reason| {
                        sourced(
                            o,
                            SpecError::Invalid {
                                what,
                                input: v.clone(),
                                reason,
                            },
                        )
                    })
                })
                .transpose()
        };
        let resources = batch_proto::resources::Resources {
            nodes,
            ntasks: count("task count", "ntasks", &self.ntasks, &s.ntasks)?,
            cpus_per_task: count(
                "CPUs per task",
                "cpus_per_task",
                &self.cpus_per_task,
                &s.cpus_per_task,
            )?,
            ntasks_per_node: count(
                "tasks per node",
                "ntasks_per_node",
                &self.ntasks_per_node,
                &s.ntasks_per_node,
            )?,
            mem_per_node: size("memory size", "mem", &self.mem, "ESUB_MEM_PER_NODE", &s.mem)?,
            mem_per_cpu: size(
                "memory size",
                "mem_per_cpu",
                &self.mem_per_cpu,
                "ESUB_MEM_PER_CPU",
                &s.mem_per_cpu,
            )?,
            exclusive: self.exclusive || env_val("ESUB_EXCLUSIVE").is_some() || s.exclusive,
        };
        let account =
            pick("account", &self.account, Some("ESUB_ACCOUNT"), &s.account).map(|(v, _)| v);
        let qos = pick("qos", &self.qos, Some("ESUB_QOS"), &s.qos).map(|(v, _)| v);
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
                "--evolving-profile and --moldable/--moldable-model exclude each other",
            ));
        }
        if (profile.is_some() || is_moldable) && (nodes.is_some() || time_limit.is_some()) {
            return Err(conflict(
                "--evolving-profile/--moldable/--moldable-model give the nodes and times; drop -N/--nodes and -t/--time",
            ));
        }
        if components.is_some()
            && (profile.is_some() || is_moldable || nodes.is_some() || pool.is_some())
        {
            return Err(conflict(
                "--components gives the nodes and lets the policy choose the pools; drop -N, -p, --evolving-profile and --moldable",
            ));
        }
        if components.is_some() && deadline.is_none() {
            return Err(conflict(
                "--components needs --deadline (a co-allocated job has a start deadline)",
            ));
        }
        let workdir = match pick("chdir", &self.chdir, None, &s.chdir) {
            Some((d, _)) => ctx.cwd.join(d),
            None => ctx.cwd.to_path_buf(),
        };
        let export = pick("export", &self.export, Some("ESUB_EXPORT"), &s.export);
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
        // sbatch reads `#PBS` lines (where it reads `#SBATCH` ones) unless told to ignore them;
        // esubmit does not translate them, so it refuses them rather than run the job without.
        let ignore_pbs = self.ignore_pbs || env_val("ESUB_IGNORE_PBS").is_some() || s.ignore_pbs;
        if !ignore_pbs {
            if let Some(d) = parse_marked(&script, PBS_MAGIC)?.first() {
                return Err(SpecError::Directive {
                    line: d.line,
                    reason: "#PBS directives are not read by esubmit: write them as #SBATCH \
                             lines, or pass --ignore-pbs to ignore them"
                        .into(),
                });
            }
        }
        // Without -t, as Slurm without a DefaultTime: the pool's limit. batchd gives
        // TIME_UNLIMITED the pool's max_time (365 days for a pool without one).
        let time_limit = match time_limit {
            None if components.is_none() => batch_proto::TIME_UNLIMITED,
            None => DEFAULT_TIME_LIMIT,
            Some(TimeLimit::Limited(d)) => d,
            Some(TimeLimit::Unlimited) => batch_proto::TIME_UNLIMITED,
        };
        let coallocated = components.is_some();
        let shape = if let Some(components) = components {
            if time_limit == batch_proto::TIME_UNLIMITED {
                return Err(SpecError::Conflict(
                    "a co-allocated job needs a finite time limit (-t)".into(),
                ));
            }
            JobShape::CoAllocated {
                components,
                time_limit,
            }
        } else if let Some(steps) = profile {
            JobShape::Evolving { steps }
        } else if is_moldable {
            JobShape::Moldable {
                configs: moldable.unwrap_or_default(),
                model: moldable_model,
                weight,
            }
        } else {
            JobShape::Rigid {
                nodes: nodes.unwrap_or(1),
                time_limit,
            }
        };
        let work_dir = workdir
            .to_str()
            .ok_or_else(|| SpecError::Invalid {
                what: "working directory",
                input: workdir.display().to_string(),
                reason: "not valid UTF-8".into(),
            })?
            .to_string();
        let job = JobSpec {
            script,
            args,
            name,
            shape,
            pool,
            begin,
            hold,
            dependencies: dependency,
            stdout: output,
            stderr: error,
            environment: env,
            work_dir,
            priority: 0,
            umask: None,
            array: array.map(Box::new),
            array_task: None,
            resources: (!resources.is_empty()).then(|| Box::new(resources)),
            account,
            qos,
            // --deadline: a co-allocated job's start deadline, any other job's Slurm end-by
            // deadline.
            end_by: deadline.filter(|_| !coallocated),
            deadline: deadline.filter(|_| coallocated),
            requeue,
            warn_signal,
            open_append,
            no_requeue,
            requeue_by_hand: None,
            preempted: None,
            node_failed: false,
            submit_dir: ctx.cwd.to_str().map(str::to_string),
            inert: (!inert.is_empty()).then(|| Box::new(inert)),
        };
        Ok(Submission {
            job,
            test_only: self.test_only || s.test_only,
            parsable: self.parsable || s.parsable,
        })
    }
}

/// What `pick` gives [`SubmitOpts::inert`]: an option's value from the first source that has
/// it, with that source.
type Picked = Option<(String, Origin)>;

/// The chooser [`SubmitOpts::resolve`] uses: command line, then the variable, then the script.
type Pick<'a> =
    dyn Fn(&'static str, &Option<String>, Option<&'static str>, &Option<String>) -> Picked + 'a;

impl SubmitOpts {
    /// The Slurm options that are stored and shown but change nothing here, parsed
    /// (`s`: the script's options; `pick` chooses among the sources as for every option).
    fn inert(
        &self,
        s: &SubmitOpts,
        pick: &Pick<'_>,
    ) -> Result<batch_proto::InertOptions, SpecError> {
        let invalid = |what: &'static str, v: &str, o: Origin, reason: String| {
            sourced(
                o,
                SpecError::Invalid {
                    what,
                    input: v.to_string(),
                    reason,
                },
            )
        };
        let checked =
            |what: &'static str,
             p: Picked,
             f: fn(&str) -> Result<String, batch_proto::SpecError>| {
                p.map(|(v, o)| f(&v).map_err(|e| invalid(what, &v, o, proto_reason(e))))
                    .transpose()
            };
        let nice = pick("nice", &self.nice, None, &s.nice)
            .map(|(v, o)| {
                v.trim()
                    .parse::<i64>()
                    .ok()
                    .filter(|n| n.abs() <= batch_proto::job::MAX_NICE)
                    .ok_or_else(|| {
                        invalid(
                            "--nice",
                            &v,
                            o,
                            format!("expected a number within ±{}", batch_proto::job::MAX_NICE),
                        )
                    })
            })
            .transpose()?;
        let time_min = pick("time_min", &self.time_min, None, &s.time_min)
            .map(
                |(v, o)| match parse_time_limit(&v).map_err(|e| sourced(o, e))? {
                    TimeLimit::Limited(d) => Ok(d),
                    TimeLimit::Unlimited => Ok(batch_proto::TIME_UNLIMITED),
                },
            )
            .transpose()?;
        // sbatch's `--no-kill=off` turns it off; any other value (or none) turns it on.
        let no_kill = pick("no_kill", &self.no_kill, Some("ESUB_NO_KILL"), &s.no_kill)
            .is_some_and(|(v, _)| !v.trim().eq_ignore_ascii_case("off"));
        let tmp_mb = pick("tmp", &self.tmp, None, &s.tmp)
            .map(|(v, o)| {
                batch_proto::resources::parse_mem(&v).map_err(|r| invalid("--tmp", &v, o, r))
            })
            .transpose()?;
        let text = |p: Picked| p.map(|(v, _)| v);
        let out = batch_proto::InertOptions {
            wckey: text(pick("wckey", &self.wckey, Some("ESUB_WCKEY"), &s.wckey)),
            comment: text(pick("comment", &self.comment, None, &s.comment)),
            nice,
            time_min,
            no_kill,
            tmp_mb,
            hint: checked(
                "--hint",
                pick("hint", &self.hint, Some("ESUB_HINT"), &s.hint),
                batch_proto::InertOptions::parse_hint,
            )?,
            distribution: text(pick(
                "distribution",
                &self.distribution,
                Some("ESUB_DISTRIBUTION"),
                &s.distribution,
            )),
            mail_type: checked(
                "--mail-type",
                pick("mail_type", &self.mail_type, None, &s.mail_type),
                batch_proto::InertOptions::parse_mail_type,
            )?,
            mail_user: text(pick("mail_user", &self.mail_user, None, &s.mail_user)),
            profile: pick("profile", &self.profile, Some("ESUB_PROFILE"), &s.profile)
                .and_then(|(v, _)| batch_proto::InertOptions::parse_profile(&v).ok()),
        };
        out.validate()
            .map_err(|e| SpecError::Proto(e.to_string()))?;
        Ok(out)
    }
}

/// The reason a batch-proto check gives, without the field it names.
fn proto_reason(e: batch_proto::SpecError) -> String {
    match e {
        batch_proto::SpecError::Field { reason, .. } => reason,
        other => other.to_string(),
    }
}

/// The reason of an inner parser's error, without its own `invalid … '…'` prefix.
fn reason_of(e: SpecError) -> String {
    match e {
        SpecError::Invalid { reason, .. } => reason,
        other => other.to_string(),
    }
}

/// Parses `--components`: node counts `N[,N...]` (each as `-N` takes it).
pub fn parse_components(input: &str) -> Result<Vec<u32>, SpecError> {
    let out = input
        .split(',')
        .map(|n| parse_nodes(n.trim()))
        .collect::<Result<Vec<u32>, _>>()
        .map_err(|e| SpecError::Invalid {
            what: "components",
            input: input.to_string(),
            reason: reason_of(e),
        })?;
    if out.len() > batch_proto::MAX_COMPONENTS {
        return Err(SpecError::Invalid {
            what: "components",
            input: input.to_string(),
            reason: format!("at most {} components", batch_proto::MAX_COMPONENTS),
        });
    }
    Ok(out)
}

/// Parses `--deadline`: every form of `--begin` ([`parse_begin`]: `HH:MM[:SS]`, `now+N<unit>`,
/// ISO dates, …), and `+N<unit>` for `now+N<unit>` (Slurm's `--deadline` takes the forms of
/// `--begin`; the short one is ours). It must be in the future.
pub fn parse_deadline(input: &str, now: Time, zone: &Zone) -> Result<Time, SpecError> {
    let s = input.trim();
    // `+N` is an offset from now to the millisecond (deadlines of a second or two must not
    // lose the part of a second `now` has, as `now+N` of --begin does).
    let t = match s.strip_prefix('+') {
        Some(rest) => parse_begin(&format!("now+{rest}"), now, zone)
            .and_then(|t| Ok(now + t.saturating_sub(parse_begin("now", now, zone)?))),
        None => parse_begin(s, now, zone),
    }
    .map_err(|e| SpecError::Invalid {
        what: "deadline",
        input: input.to_string(),
        reason: reason_of(e),
    })?;
    if t <= now {
        return Err(SpecError::Invalid {
            what: "deadline",
            input: input.to_string(),
            reason: "it has already passed".into(),
        });
    }
    Ok(t)
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

/// Time limit of a co-allocated job (`--components`, esched's own) submitted without `-t`: its
/// components must end for the pools' next jobs to be planned, so it gets a finite one. Any
/// other job without `-t` gets its pool's limit, as with Slurm (a pool without DefaultTime).
pub const DEFAULT_TIME_LIMIT: Duration = HOUR;
