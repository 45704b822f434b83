//! `esim run`: read the trace, build the policy, replay, report.

use std::path::Path;

use anyhow::{bail, Context};
use sched_core::{Params, Pool, PoolId};
use sched_sim::swf::{self, ReadOptions, Trace};
use sched_sim::{EventOrder, SimJob, SimResults, Simulation, ValidateMode};

use super::cli::RunArgs;
use super::output::{self, Report};
use super::progress::Progress;
use crate::policies;

/// Runs `esim run` with `args`.
pub fn run(args: &RunArgs) -> anyhow::Result<()> {
    let Some(trace_path) = args.trace.as_deref() else {
        bail!("--trace FILE is required")
    };
    let params = params(args)?;
    // The policy first: a typo in its name should not wait for a large trace to be read.
    let mut policy = policies::hosted(&args.policy, &params, args.linked)?;
    let trace = swf::read_path(
        trace_path,
        &ReadOptions {
            nodes: args.nodes,
            limit: args.limit,
        },
    )?;
    trace.warn_skipped();
    let mut progress = Progress::new(trace.jobs.len(), args.quiet);
    let results = replay(
        &trace,
        &args.policy,
        &mut policy,
        (args.validate.into(), args.events.into()),
        Some(&mut progress),
    )?;
    progress.finish();
    let report = Report::new(
        &args.policy,
        &params,
        &trace,
        &results,
        (args.validate.into(), args.events.into()),
    );
    if args.jobs.is_some() || args.swf.is_some() || args.svg.is_some() || args.png.is_some() {
        let details = output::JobDetails::new(&trace, &results.jobs);
        if let Some(path) = &args.jobs {
            output::write_jobs_csv(path, &results.jobs, &details)?;
        }
        if let Some(path) = &args.swf {
            output::write_swf(path, &report, &results.jobs, &details)?;
        }
        if args.svg.is_some() || args.png.is_some() {
            let window = args.window.map(|w| (w.0, w.1));
            let svg = output::svg(&report, &results.jobs, &details, window)?;
            output::write_picture(&svg, args.svg.as_deref(), args.png.as_deref())?;
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.table());
    }
    Ok(())
}

/// Replays `trace` on one pool `sim` of the trace's size, through the containment `policy` is
/// under (its panics, errors and refused plans are counted in the results).
pub fn replay(
    trace: &Trace,
    policy_name: &str,
    policy: &mut sched_abi::PolicyHost,
    (validate, events): (ValidateMode, EventOrder),
    observer: Option<&mut dyn sched_sim::Observer>,
) -> anyhow::Result<SimResults> {
    let pools = vec![Pool {
        id: PoolId(0),
        name: "sim".into(),
        nodes: trace.nodes,
    }];
    let jobs: Vec<SimJob> = trace.jobs.iter().map(SimJob::from).collect();
    let mut sim = Simulation::new(pools, policy_name)
        .validate(validate)
        .events(events);
    if let Some(o) = observer {
        sim = sim.observer(o);
    }
    Ok(sim.run_hosted(policy, jobs)?)
}

/// The policy's parameters: the TOML file's, then each `--param`.
fn params(args: &RunArgs) -> anyhow::Result<Params> {
    let mut params = Params::new();
    if let Some(path) = &args.params_file {
        for (k, v) in params_file(path)? {
            params.set(k, v);
        }
    }
    for kv in &args.params {
        let Some((k, v)) = kv.split_once('=') else {
            bail!("--param `{kv}`: expected KEY=VALUE");
        };
        if k.trim().is_empty() {
            bail!("--param `{kv}`: empty key");
        }
        params.set(k.trim(), v.trim());
    }
    Ok(params)
}

/// The top-level keys of a TOML file, scalar values as text.
pub fn params_file(path: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    let table: toml::Table = text
        .parse()
        .with_context(|| format!("{}: not valid TOML", path.display()))?;
    let mut out = Vec::new();
    for (k, v) in table {
        let s = match v {
            toml::Value::String(s) => s,
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => bail!(
                "{}: parameter `{k}` is a {}; a policy parameter is a string, number or boolean",
                path.display(),
                other.type_str()
            ),
        };
        out.push((k, s));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_file_takes_scalars_and_refuses_tables() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p.toml");
        std::fs::write(&p, "a = 1\nb = \"x\"\nc = true\nd = 2.5\n").unwrap();
        let got = params_file(&p).unwrap();
        assert_eq!(
            got,
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "x".into()),
                ("c".into(), "true".into()),
                ("d".into(), "2.5".into())
            ]
        );
        std::fs::write(&p, "[cbf]\na = 1\n").unwrap();
        let err = format!("{:#}", params_file(&p).unwrap_err());
        assert!(err.contains("parameter `cbf` is a table"), "{err}");
    }
}
