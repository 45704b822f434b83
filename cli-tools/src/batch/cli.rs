//! What every tool shares: connecting to batchd, the clock, and Slurm-style error exits.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use batch_proto::{Client, ClientError};

/// Connects to batchd at `socket`, or where `ESCHED_SOCKET` and the defaults say.
pub fn connect(socket: Option<&Path>) -> Result<Client, ClientError> {
    match socket {
        Some(p) => Client::connect(p),
        None => Client::connect_default(),
    }
}

pub use batch_proto::clock::now_ms;

/// Slurm options the tools do not take, with what they are in Slurm: refused with that said, so
/// that a Slurm user reads a refusal, not a typo.
const SLURM_ONLY: &[(&[&str], &str)] = &[
    (
        &[
            "--gres",
            "--gpus",
            "-G",
            "--gpus-per-node",
            "--gpus-per-task",
            "--gpus-per-socket",
            "--cpus-per-gpu",
            "--mem-per-gpu",
            "--ntasks-per-gpu",
            "--gpu-bind",
            "--gpu-freq",
            "--tres-per-task",
        ],
        "Slurm's generic resources (GPUs), which esched's pools do not have",
    ),
    (
        &["--constraint", "-C", "--cluster-constraint", "--prefer"],
        "Slurm's node features, which esched's pools do not have",
    ),
    (
        &[
            "--nodelist",
            "-w",
            "--exclude",
            "-x",
            "--nodefile",
            "-F",
            "--use-min-nodes",
            "--switches",
            "--spread-job",
            "--contiguous",
        ],
        "Slurm's node selection; esched's policy places jobs on whole pools",
    ),
    (
        &[
            "--reservation",
            "--licenses",
            "-L",
            "--clusters",
            "-M",
            "--bb",
            "--bbf",
            "--container",
            "--network",
            "--power",
            "--reboot",
            "--delay-boot",
            "--x11",
        ],
        "a Slurm service esched does not have",
    ),
    (
        &[
            "--sockets-per-node",
            "--cores-per-socket",
            "--threads-per-core",
            "-B",
            "--extra-node-info",
            "--core-spec",
            "-S",
            "--thread-spec",
            "--ntasks-per-core",
            "--ntasks-per-socket",
            "--mincpus",
            "--oversubscribe",
            "-s",
            "--overcommit",
            "-O",
        ],
        "Slurm's placement inside a node; esched's nodes are whole",
    ),
];

/// The refusal of an option a tool does not know: Slurm's words (`unrecognized option
/// '--mem=4G'`), and what the option is in Slurm when esched lacks it on purpose.
pub fn unrecognized(arg: &str) -> String {
    let name = arg.split_once('=').map_or(arg, |(n, _)| n);
    // `-wNODES`: a short option with its value attached.
    let short = name
        .get(..2)
        .filter(|s| s.starts_with('-') && !s.starts_with("--"));
    match SLURM_ONLY
        .iter()
        .find(|(names, _)| names.iter().any(|n| *n == name || Some(*n) == short))
    {
        Some((_, what)) => format!("unrecognized option '{arg}': {what}"),
        None => format!("unrecognized option '{arg}'"),
    }
}

/// The one line a command-line error is reported with: an unknown option as Slurm's tools say
/// it (`unrecognized option '--mem=4G'`), anything else as clap's first line without its own
/// `error: ` prefix (the caller adds `TOOL: error: `).
pub fn clap_error_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() == ErrorKind::UnknownArgument {
        if let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) {
            return unrecognized(arg);
        }
    }
    one_line(&e.render().to_string())
}

/// clap's message as one line: its first line alone would cut what clap puts on the next ones
/// (the missing argument's name, the possible values, the nearest one), while its usage and
/// "For more information" lines say nothing a one-line tool error needs.
fn one_line(text: &str) -> String {
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .map(|l| l.trim_start_matches("error: "))
        .collect();
    if parts.is_empty() {
        return "bad arguments".to_string();
    }
    // A line ending in `:` introduces the next one (the missing arguments); others are apart.
    let mut line = String::new();
    for p in parts {
        if !line.is_empty() {
            line.push_str(if line.ends_with(':') { " " } else { "; " });
        }
        line.push_str(p);
    }
    line
}

/// The unknown option of `e` as the user wrote it among `args` (`--mem=4G`, where clap names
/// only `--mem`), so that the refusal quotes it whole as Slurm's tools do.
fn unknown_as_given(e: &clap::Error, args: &[std::ffi::OsString]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(name)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let name = name.split_once('=').map_or(name.as_str(), |(n, _)| n);
    args.iter()
        .map(|a| a.to_string_lossy())
        .find(|a| a.as_ref() == name || a.strip_prefix(name).is_some_and(|r| r.starts_with('=')))
        .map(|a| a.into_owned())
}

/// Parses a tool's command line. `--help` and `--version` print and exit 0; any other problem
/// is the one line `TOOL: error: ...` and exit 1, the same shape as every other error of the
/// tools (clap's own would be several lines and exit 2).
pub fn parse_args<T: clap::Parser>(tool: &str) -> Result<T, ExitCode> {
    parse_args_from(tool, std::env::args_os())
}

/// [`parse_args`] over given arguments (the first is the program name).
pub fn parse_args_from<T: clap::Parser, I, A>(tool: &str, args: I) -> Result<T, ExitCode>
where
    I: IntoIterator<Item = A>,
    A: Into<std::ffi::OsString> + Clone,
{
    use clap::error::ErrorKind;
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    match T::try_parse_from(&args) {
        Ok(t) => Ok(t),
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) =>
        {
            let _ = e.print();
            Err(
                if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                    ExitCode::from(1)
                } else {
                    ExitCode::SUCCESS
                },
            )
        }
        Err(e) => {
            let line = match unknown_as_given(&e, &args[1.min(args.len())..]) {
                Some(arg) => unrecognized(&arg),
                None => clap_error_line(&e),
            };
            let _ = writeln!(std::io::stderr(), "{tool}: error: {line}");
            Err(ExitCode::from(1))
        }
    }
}

/// Each tool and the Slurm command it stands for (`esched slurm-compat` links the one to the
/// other).
pub const SLURM_NAMES: [(&str, &str); 8] = [
    ("esubmit", "sbatch"),
    ("equeue", "squeue"),
    ("ecancel", "scancel"),
    ("eacct", "sacct"),
    ("einfo", "sinfo"),
    ("econtrol", "scontrol"),
    ("erun", "srun"),
    ("ealloc", "salloc"),
];

/// The name tool `tool` reports itself by: its Slurm name when it was started by that name
/// (through the Slurm-named directory), so that a message reads as the command typed.
pub fn invoked_name(tool: &str) -> &str {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    let base = std::path::Path::new(&argv0)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    SLURM_NAMES
        .iter()
        .find(|(e, s)| *e == tool && *s == base)
        .map_or(tool, |(_, s)| s)
}

/// A tool's `main`: parse the command line with [`parse_args`], then [`run_tool`].
pub fn tool_main<T: clap::Parser>(
    tool: &str,
    body: impl FnOnce(T) -> anyhow::Result<ExitCode>,
) -> ExitCode {
    let tool = invoked_name(tool);
    match parse_args::<T>(tool) {
        Ok(cli) => run_tool(tool, || body(cli)),
        Err(code) => code,
    }
}

/// Runs a tool's body: an error becomes the one line `TOOL: error: ...` on stderr and exit
/// status 1, as Slurm's tools do.
pub fn run_tool(tool: &str, body: impl FnOnce() -> anyhow::Result<ExitCode>) -> ExitCode {
    match body() {
        Ok(code) => code,
        Err(e) => {
            // A closed stdout (`equeue | head`) is not worth a message.
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    return ExitCode::from(1);
                }
            }
            // One line whatever the daemon quoted back of a request.
            let line = format!("{e:#}");
            let _ = writeln!(
                std::io::stderr(),
                "{tool}: error: {}",
                super::escape::shown(&line)
            );
            ExitCode::from(1)
        }
    }
}

/// Writes `text` to stdout, reporting a failure (e.g. a closed pipe) as an error.
pub fn print_out(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// The nodes of a `-w`/`-N` host list given on the command line.
pub fn node_names(list: &str) -> anyhow::Result<Vec<String>> {
    batch_proto::hostlist::expand_at_most(list, 1 << 16)
        .map_err(|e| anyhow::anyhow!("Invalid node list: {e}"))
}

/// Whether `job` holds or held any of `nodes`.
pub fn ran_on(job: &batch_proto::JobInfo, nodes: &[String]) -> bool {
    job.node_list
        .as_deref()
        .and_then(|l| batch_proto::hostlist::expand_at_most(l, 1 << 20).ok())
        .is_some_and(|v| v.iter().any(|n| nodes.contains(n)))
}

/// Splits comma-separated values of options that may also be repeated (`-j 1,2 -j 3`).
pub fn split_list(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Parses job ids given as `12`, `12,13` or repeated.
pub fn parse_ids(values: &[String]) -> anyhow::Result<Vec<u64>> {
    split_list(values)
        .iter()
        .map(|s| {
            s.parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| anyhow::anyhow!("Invalid job id specified: {s}"))
        })
        .collect()
}

/// Checks that each of `users` (names or numeric uids) names a user of this machine; the error
/// is `{what}: NAME` (squeue says `Invalid user`, scancel `Invalid user name`), as Slurm's
/// tools refuse an unknown user instead of matching nothing.
pub fn check_users(users: &[String], what: &str) -> anyhow::Result<()> {
    for u in users {
        if u.parse::<u32>().is_ok() {
            continue;
        }
        match nix::unistd::User::from_name(u) {
            Ok(Some(_)) => {}
            _ => anyhow::bail!("{what}: {u}"),
        }
    }
    Ok(())
}

/// An array task as a user names it, `ID_N`: (array id, index).
pub type ArrayTaskRef = (u64, u64);

/// Parses job references given as `12`, `12_3` (task 3 of array 12), comma-separated or
/// repeated: the plain ids (an array's id stands for all its tasks) and the array tasks.
pub fn parse_refs(values: &[String]) -> anyhow::Result<(Vec<u64>, Vec<ArrayTaskRef>)> {
    let mut ids = Vec::new();
    let mut tasks = Vec::new();
    for s in split_list(values) {
        match batch_proto::JobRef::parse(&s) {
            Some(batch_proto::JobRef {
                id,
                task: Some(task),
            }) => tasks.push((id, task)),
            Some(r) => ids.push(r.id),
            None => anyhow::bail!("Invalid job id specified: {s}"),
        }
    }
    Ok((ids, tasks))
}

/// The job ids that `values` name, for the requests that take ids (hold, release, show): an
/// array's id becomes its tasks' ids and `ID_N` the task's. A plain id nothing in the queue
/// (or, with `finished`, the history) answers to is kept, for batchd to say what it is.
pub fn resolve_ids(
    client: &mut Client,
    values: &[String],
    finished: bool,
) -> anyhow::Result<Vec<u64>> {
    let (ids, tasks) = parse_refs(values)?;
    let found = |client: &mut Client, filter: batch_proto::JobFilter| {
        client.jobs(&batch_proto::Request::List(batch_proto::ListRequest {
            filter,
            include_finished: finished,
            brief: true,
        }))
    };
    // One listing for all the ids and one for all the tasks, not one per value: each listing
    // costs batchd a pass over its queue, whatever it names.
    let mut out = Vec::new();
    if !ids.is_empty() {
        let jobs = found(
            client,
            batch_proto::JobFilter {
                ids: ids.clone(),
                ..Default::default()
            },
        )?;
        // What each id answers to, in listing order: the job of that id, and an array's tasks.
        let mut by_id: std::collections::HashMap<u64, Vec<u64>> = Default::default();
        for j in &jobs {
            by_id.entry(j.id).or_default().push(j.id);
            if let Some(a) = j.array.as_ref().filter(|a| a.array_id != j.id) {
                by_id.entry(a.array_id).or_default().push(j.id);
            }
        }
        for id in ids {
            match by_id.get(&id) {
                Some(v) => out.extend(v),
                None => out.push(id),
            }
        }
    }
    if !tasks.is_empty() {
        let jobs = found(
            client,
            batch_proto::JobFilter {
                tasks: tasks.clone(),
                ..Default::default()
            },
        )?;
        let by_task: std::collections::HashMap<(u64, u64), u64> = jobs
            .iter()
            .filter_map(|j| j.array.as_ref().map(|a| ((a.array_id, a.index), j.id)))
            .collect();
        for (array, task) in tasks {
            let Some(&id) = by_task.get(&(array, task)) else {
                anyhow::bail!("Invalid job id specified: {array}_{task}");
            };
            out.push(id);
        }
    }
    out.dedup();
    Ok(out)
}

/// The name of the user running the tool (or the uid as text when it has none).
pub fn current_user() -> String {
    let uid = nix::unistd::getuid();
    nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map_or_else(|| uid.as_raw().to_string(), |u| u.name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_slurm_option_esched_lacks_is_refused_as_what_it_is() {
        assert_eq!(
            super::unrecognized("--gres=gpu:2"),
            "unrecognized option '--gres=gpu:2': Slurm's generic resources (GPUs), which \
             esched's pools do not have"
        );
        assert!(super::unrecognized("-wnode1").contains("node selection"));
        assert_eq!(
            super::unrecognized("--bogus"),
            "unrecognized option '--bogus'"
        );
    }

    use super::*;

    /// The error line of econtrol's arguments `args`.
    fn control_error(args: &[&str]) -> String {
        let e = <crate::batch::control::ControlCli as clap::Parser>::try_parse_from(args)
            .err()
            .unwrap();
        clap_error_line(&e)
    }

    #[test]
    fn clap_messages_keep_what_follows_their_first_line() {
        // The missing argument is on clap's second line.
        assert_eq!(
            control_error(&["econtrol", "show"]),
            "the following required arguments were not provided: <ENTITY>"
        );
        // The possible values and the nearest one are on its second and fourth.
        let e = control_error(&["econtrol", "show", "config"]);
        assert!(
            e.starts_with("invalid value 'config' for '<ENTITY>'; [possible values: job,")
                && e.contains("stats]")
                && !e.contains('\n')
                && !e.contains("Usage"),
            "{e}"
        );
    }

    #[test]
    fn lists_and_ids() {
        let v = vec!["1,2".to_string(), " 3 ".to_string(), ",".to_string()];
        assert_eq!(split_list(&v), vec!["1", "2", "3"]);
        assert_eq!(parse_ids(&v).unwrap(), vec![1, 2, 3]);
        let e = parse_ids(&["1,x".to_string()]).unwrap_err().to_string();
        assert_eq!(e, "Invalid job id specified: x");
        assert!(parse_ids(&["0".to_string()]).is_err());
    }

    #[test]
    fn refs_to_array_tasks() {
        let v = vec!["4,7_2".to_string(), "9".to_string()];
        assert_eq!(parse_refs(&v).unwrap(), (vec![4, 9], vec![(7, 2)]));
        assert!(parse_refs(&["7_x".to_string()]).is_err());
    }

    #[test]
    fn unknown_users_are_refused() {
        assert!(check_users(&["root".into(), "0".into()], "Invalid user").is_ok());
        let e = check_users(&["no-such-user-x".into()], "Invalid user").unwrap_err();
        assert_eq!(e.to_string(), "Invalid user: no-such-user-x");
    }
}
