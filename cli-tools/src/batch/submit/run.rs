//! esubmit's I/O: reading the script, submitting, and waiting for the job with `-W`.

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use batch_proto::{ClientError, Request, Response, SubmitRequest};

use super::super::cli::{connect, now_ms, print_out};
use super::super::time::{format_timestamp, local_zone};
use super::options::SubmitCli;
use super::resolve::{script_opts, wrap_script, Context};

/// How often `esubmit -W` asks whether its job has ended.
const WAIT_POLL: std::time::Duration = std::time::Duration::from_millis(500);

/// `esubmit -W`: polls until the job `id` (every task of the array `id`) has ended, and gives
/// sbatch's exit status: the job's exit code (the highest of the tasks'), 1 for one that ended
/// without one (cancelled before it ran, killed by a signal) or whose code is above 255.
fn wait_for(client: &mut batch_proto::Client, id: u64) -> anyhow::Result<ExitCode> {
    let req = Request::List(batch_proto::ListRequest {
        filter: batch_proto::JobFilter {
            ids: vec![id],
            ..Default::default()
        },
        include_finished: true,
        brief: true,
    });
    loop {
        let jobs = client.jobs(&req)?;
        if !jobs.is_empty() && jobs.iter().all(|j| j.state.is_finished()) {
            let code = jobs
                .iter()
                .map(|j| match (j.exit_code, j.signal.unwrap_or(0)) {
                    (Some(c), 0) => c,
                    _ => 1,
                })
                .max()
                .unwrap_or(1);
            return Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)));
        }
        std::thread::sleep(WAIT_POLL);
    }
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
    let text = match String::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => text,
        _ => anyhow::bail!("{what} is a binary file, not a batch script (a script is text)"),
    };
    // sbatch's refusal, in its words: such a script's `#!/bin/sh\r` line cannot start.
    if text.contains("\r\n") {
        anyhow::bail!(
            "Batch script contains DOS line breaks (\\r\\n) instead of expected UNIX line \
             breaks (\\n)."
        );
    }
    Ok(text)
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
            // The first word that is not an option is the script: a word that still looks like
            // one is an option esubmit does not know, not a file name.
            if path.starts_with('-') && path != "-" {
                anyhow::bail!("{}", crate::batch::cli::unrecognized(path));
            }
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
    let zone = local_zone();
    let ctx = Context {
        env: &env,
        cwd: &cwd,
        now: now_ms(),
        zone: &zone,
    };
    let from_script = script_opts(&script)?;
    let spec = cli
        .opts
        .resolve(&from_script, script, args, &script_name, &ctx)?;
    spec.check(ctx.now)?;
    let mut job = spec.job;
    job.umask = Some(current_umask());
    if !cli.policies.is_empty() && !spec.test_only {
        anyhow::bail!(
            "--policy asks what --test-only would answer under another policy: add --test-only"
        );
    }
    let what_if = (!cli.policies.is_empty()).then(|| job.clone());
    let mut client = connect(cli.socket.path())?;
    let req = Request::Submit(SubmitRequest {
        spec: job,
        test_only: spec.test_only,
    });
    match client.request(&req)? {
        Response::Submitted { id } => {
            if spec.parsable {
                print_out(&format!("{id}\n"))?;
            } else {
                print_out(&format!("Submitted batch job {id}\n"))?;
            }
            // SBATCH_WAIT: any value, as sbatch reads it.
            let wait_env = ["ESUB_WAIT", "SBATCH_WAIT"]
                .iter()
                .any(|w| env.iter().any(|(k, _)| k == w));
            if cli.wait || wait_env {
                return wait_for(&mut client, id);
            }
        }
        Response::TestOnly(r) => {
            let line = match (r.expected_start, r.pool, r.nodes) {
                (Some(t), pool, nodes) => format!(
                    "esubmit: Job would start at {} using {} nodes in pool {}",
                    format_timestamp(t, &local_zone()),
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
            if let Some(job) = what_if {
                let rows = crate::batch::whatif::test_only(&mut client, job, &cli.policies)?;
                let zone = local_zone();
                let at = |t: Option<u64>| match t {
                    Some(t) => format_timestamp(t, &zone),
                    None => "never (in the replay)".to_string(),
                };
                let (current, current_at) = rows
                    .first()
                    .map_or(("current", None), |r| (r.0.as_str(), r.1));
                for (label, start) in rows.iter().skip(1) {
                    eprintln!(
                        "esubmit: Under policy {label} the job would start at {}; under {current}, at {}",
                        at(*start),
                        at(current_at)
                    );
                }
            }
        }
        other => return Err(ClientError::unexpected("submit", &other).into()),
    }
    Ok(ExitCode::SUCCESS)
}
