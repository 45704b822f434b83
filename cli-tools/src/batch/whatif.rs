//! What-if from the tools: `econtrol snapshot [FILE]`, `econtrol whatif --policy …` and
//! `esubmit --test-only --policy …` (docs/whatif.md).
//!
//! The daemon answers one `Snapshot` request, read under one hold of its state; the replay
//! runs in `esim whatif`, started here with the snapshot on its standard input, never in the
//! daemon. The tools do not link the policies (they speak the protocol only, without the
//! plugin boundary): esim is found as `$ESCHED_ESIM`, else next to this executable, else on
//! `PATH`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use batch_proto::{Client, ClientError, JobSpec, Request, Response, SnapshotRequest};

use super::cli::print_out;

/// A snapshot as the daemon sent it, and how long the request took.
pub struct Taken {
    /// The snapshot file's JSON.
    pub file: serde_json::Value,
    /// The id the test job got, when one was sent.
    pub with_job: Option<u64>,
    /// The round trip, the daemon's read included.
    pub took: Duration,
}

/// Asks the daemon for a snapshot, with `with_job` in its queue.
pub fn take(client: &mut Client, with_job: Option<JobSpec>) -> anyhow::Result<Taken> {
    let t0 = Instant::now();
    match client.request(&Request::Snapshot(SnapshotRequest { with_job }))? {
        Response::Snapshot { file, with_job } => Ok(Taken {
            file,
            with_job,
            took: t0.elapsed(),
        }),
        Response::Error(e) => Err(anyhow::anyhow!("{}", e.message)),
        other => Err(ClientError::unexpected("snapshot", &other).into()),
    }
}

/// `econtrol snapshot [FILE]`: the file, or standard output.
pub fn snapshot(client: &mut Client, file: Option<&Path>) -> anyhow::Result<ExitCode> {
    let taken = take(client, None)?;
    let text = serde_json::to_string_pretty(&taken.file)? + "\n";
    match file {
        Some(path) if path != Path::new("-") => std::fs::write(path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        _ => print_out(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The esim executable.
pub fn esim() -> PathBuf {
    if let Some(p) = std::env::var_os("ESCHED_ESIM") {
        return PathBuf::from(p);
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join("esim")));
    match beside {
        Some(p) if p.exists() => p,
        _ => PathBuf::from("esim"),
    }
}

/// Runs `esim whatif - ARGS` on `snapshot`; its standard output, or its error.
pub fn replay(snapshot: &serde_json::Value, args: &[String]) -> anyhow::Result<String> {
    let exe = esim();
    let mut child = Command::new(&exe)
        .arg("whatif")
        .arg("-")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| {
            format!(
                "cannot run {} (the replay runs in esim: install it beside the tools, or name it in $ESCHED_ESIM)",
                exe.display()
            )
        })?;
    let text = serde_json::to_vec(snapshot)?;
    if let Some(mut stdin) = child.stdin.take() {
        // esim reads all of it before answering; a write error shows in its exit status.
        let _ = stdin.write_all(&text);
    }
    let out = child.wait_with_output().context("esim whatif")?;
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let err = err.trim().trim_start_matches("esim: error: ");
        anyhow::bail!("what-if replay failed: {err}");
    }
    // Its warnings (a run-time model that knows nothing of some users) are the caller's too.
    for line in err.lines().filter(|l| l.starts_with("warning: ")) {
        eprintln!("{line}");
    }
    String::from_utf8(out.stdout).context("esim whatif printed something that is not UTF-8")
}

/// The options `econtrol whatif` passes on to `esim whatif`.
pub struct WhatifOptions<'a> {
    /// `--policy`, repeated.
    pub policies: &'a [String],
    /// `--runtime`.
    pub runtime: Option<&'a str>,
    /// `--history`.
    pub history: Option<&'a Path>,
    /// `--svg`.
    pub svg: Option<&'a Path>,
    /// `--png`.
    pub png: Option<&'a Path>,
    /// `--json`.
    pub json: bool,
}

/// `econtrol whatif`: the snapshot, then the replays, printed with the time each took.
pub fn whatif(client: &mut Client, o: &WhatifOptions) -> anyhow::Result<ExitCode> {
    // Refused before the daemon is asked anything (esim says the same).
    if let (Some(file), Some(model)) = (o.history, o.runtime) {
        if model != "history" {
            anyhow::bail!(
                "--history {} goes with --runtime history (or alone), not with --runtime \
                 {model}: drop one of them",
                file.display()
            );
        }
    }
    let taken = take(client, None)?;
    let mut args: Vec<String> = Vec::new();
    for p in o.policies {
        args.extend(["--policy".to_string(), p.clone()]);
    }
    if let Some(r) = o.runtime {
        args.extend(["--runtime".to_string(), r.to_string()]);
    }
    // Kept until the replay has read it.
    let mut export = None;
    match o.history {
        Some(file) => args.extend(["--history".to_string(), file.display().to_string()]),
        None if o.runtime == Some("history") => {
            let t0 = Instant::now();
            let file = accounting(client)?;
            args.extend([
                "--history".to_string(),
                file.path().display().to_string(),
                "--history-label".to_string(),
                "batchd's accounting".to_string(),
            ]);
            export = Some((file, t0.elapsed()));
        }
        None => {}
    }
    if let Some(svg) = o.svg {
        args.extend(["--svg".to_string(), svg.display().to_string()]);
    }
    if let Some(png) = o.png {
        args.extend(["--png".to_string(), png.display().to_string()]);
    }
    if o.json {
        args.push("--json".into());
    }
    let out = replay(&taken.file, &args)?;
    // The export is removed here, the replay done.
    let accounting_took = export.map(|(_file, took)| took);
    print_out(&out)?;
    if !o.json {
        print_out(&format!(
            "snapshot read in {:.1} ms (one request to batchd)\n",
            taken.took.as_secs_f64() * 1e3
        ))?;
        if let Some(took) = accounting_took {
            print_out(&format!(
                "accounting read in {:.1} ms (one more request, for --runtime history)\n",
                took.as_secs_f64() * 1e3
            ))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The daemon's accounting of every user's finished jobs, written as `eacct -a -X -P -o
/// User,ElapsedRaw,TimelimitRaw,State` prints it (what `esim whatif --history` reads), to a
/// temporary file removed when dropped.
fn accounting(client: &mut Client) -> anyhow::Result<tempfile::NamedTempFile> {
    use clap::Parser;
    const BY_HAND: &str = "(or export it yourself: eacct -a -X -P -o \
                           User,ElapsedRaw,TimelimitRaw,State > FILE, then --history FILE)";
    let cli = super::acct::AcctCli::try_parse_from([
        "eacct",
        "-a",
        "-X",
        "-P",
        "-o",
        "User,ElapsedRaw,TimelimitRaw,State",
    ])?;
    let (now, zone) = (super::cli::now_ms(), super::time::local_zone());
    let jobs = client
        .jobs(&Request::Acct(cli.request(now, &zone, None)?))
        .with_context(|| format!("cannot read batchd's accounting {BY_HAND}"))?;
    let text = super::acct::render(&jobs, &cli, now, &zone)?;
    let cannot = || format!("cannot write the accounting export for --runtime history {BY_HAND}");
    let mut file = tempfile::Builder::new()
        .prefix("batchd-accounting-")
        .suffix(".txt")
        .tempfile()
        .with_context(cannot)?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.flush())
        .with_context(cannot)?;
    Ok(file)
}

/// `esubmit --test-only --policy …`: the job's expected start under each policy, from a
/// replay of a snapshot with the job in its queue; `(label, start)` per row, the policy in
/// force first.
pub fn test_only(
    client: &mut Client,
    spec: JobSpec,
    policies: &[String],
) -> anyhow::Result<Vec<(String, Option<u64>)>> {
    let taken = take(client, Some(spec))?;
    let id = taken
        .with_job
        .context("the daemon did not put the job in the snapshot")?;
    let mut args = vec!["--json".to_string()];
    for p in policies {
        args.extend(["--policy".to_string(), p.clone()]);
    }
    let out: serde_json::Value = serde_json::from_str(&replay(&taken.file, &args)?)
        .context("esim whatif --json printed something that is not JSON")?;
    let rows = out["policies"]
        .as_array()
        .context("esim whatif --json: no `policies`")?;
    Ok(rows
        .iter()
        .map(|r| {
            let start = r["pending"]
                .as_array()
                .and_then(|jobs| jobs.iter().find(|j| j["id"].as_u64() == Some(id)))
                .and_then(|j| j["start"].as_u64());
            (r["label"].as_str().unwrap_or("?").to_string(), start)
        })
        .collect())
}
