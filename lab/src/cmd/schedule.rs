//! `esim schedule`: the offline problem of Klein & Pérez for tests and tools.
//!
//! Input (`--input FILE`, `-` for stdin), durations in seconds:
//! `{"tests":[{"n_nodes":N,"apps":[[[duration,nodes],...],...]}]}`.
//! Output (stdout or `--output FILE`), in seconds, per test and application in input order:
//! `{"tests":[{"apps":[{"start":S,"end":E,"ep":[[duration,nodes],...]},...]},...]}` where `ep`
//! is the scheduled EP without its leading delay (`[[sum of durations, max nodes]]` for a policy
//! that sees the applications as rigid, like `cbf`).
//!
//! Each test is one `plan` call of the policy on a snapshot at now = 0 with every application
//! pending, submitted at 0 in the listed order: the papers' offline problem. The plan goes
//! through the validator before anything is written.

use std::io::{Read, Write};
use std::path::PathBuf;

use crate::evolving::{schedule_test, Variant};
use anyhow::{bail, Context};
use clap::Args;
use sched_core::time::SECOND;
use sched_core::{Params, Step};
use serde::{Deserialize, Serialize};

/// `esim schedule`.
#[derive(Debug, Args)]
pub struct ScheduleArgs {
    /// The policy, by name (`evolving`, `cbf`…).
    #[arg(long, default_value = "evolving")]
    pub policy: String,
    /// A policy parameter, e.g. `expand_limit=2` or `compact=true`; repeatable.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// The tests, as JSON (`-` for stdin). `--input FILE` is an older spelling.
    #[arg(value_name = "INPUT", required_unless_present = "input_option")]
    pub input: Option<PathBuf>,
    /// The older spelling of INPUT.
    #[arg(
        long = "input",
        value_name = "FILE",
        hide = true,
        conflicts_with = "input"
    )]
    pub input_option: Option<PathBuf>,
    /// Where to write the schedules (default: stdout).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The input document.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The tests.
    pub tests: Vec<InputTest>,
}

/// One test: a cluster and its applications' requested EPs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputTest {
    /// Nodes of the cluster.
    pub n_nodes: u32,
    /// Each application's steps, `[duration_s, nodes]`.
    pub apps: Vec<Vec<(f64, u32)>>,
}

/// The output document.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct Output {
    /// One entry per input test.
    pub tests: Vec<OutputTest>,
}

/// The schedules of one test.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct OutputTest {
    /// One entry per application, in input order.
    pub apps: Vec<OutputApp>,
}

/// Where one application was scheduled, in seconds.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct OutputApp {
    /// Start of the first step.
    pub start: Seconds,
    /// End of the last step.
    pub end: Seconds,
    /// The scheduled EP without its leading delay: `[duration_s, nodes]`.
    pub ep: Vec<(Seconds, u32)>,
}

/// A time in seconds that prints as an integer when it is one (`12`, not `12.0`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Seconds {
    /// Whole seconds.
    Whole(u64),
    /// Fractional seconds (millisecond resolution).
    Frac(f64),
}

impl Seconds {
    fn from_ms(ms: u64) -> Seconds {
        if ms % SECOND == 0 {
            Seconds::Whole(ms / SECOND)
        } else {
            Seconds::Frac(ms as f64 / SECOND as f64)
        }
    }
}

fn to_ms(test: usize, app: usize, step: usize, s: f64) -> anyhow::Result<u64> {
    if !s.is_finite() || s < 0.0 || s * SECOND as f64 >= u64::MAX as f64 {
        bail!("test {test}, app {app}, step {step}: duration {s} s is not a finite non-negative number of seconds");
    }
    Ok((s * SECOND as f64).round() as u64)
}

fn parse_params(pairs: &[String]) -> anyhow::Result<Params> {
    let mut params = Params::new();
    for kv in pairs {
        let Some((k, v)) = kv.split_once('=') else {
            bail!("--param `{kv}`: expected KEY=VALUE")
        };
        if k.trim().is_empty() {
            bail!("--param `{kv}`: empty key");
        }
        params.set(k.trim(), v.trim());
    }
    Ok(params)
}

/// Parses the input document; the error names the line and column of a syntax error.
pub fn parse_input(text: &str) -> anyhow::Result<Input> {
    serde_json::from_str(text).context("input is not a valid tests document ({\"tests\":[{\"n_nodes\":N,\"apps\":[[[duration,nodes],...],...]}]})")
}

/// Schedules every test of `input` with a fresh policy built by `make` (a policy may keep state
/// between calls; tests are independent).
pub fn schedule(
    input: &Input,
    name: &str,
    make: &dyn Fn() -> anyhow::Result<sched_abi::PolicyHost>,
) -> anyhow::Result<Output> {
    let mut tests = Vec::with_capacity(input.tests.len());
    for (ti, t) in input.tests.iter().enumerate() {
        let apps: Vec<Vec<Step>> = t
            .apps
            .iter()
            .enumerate()
            .map(|(ai, app)| {
                app.iter()
                    .enumerate()
                    .map(|(si, &(d, n))| Ok(Step::new(to_ms(ti, ai, si, d)?, n)))
                    .collect::<anyhow::Result<Vec<Step>>>()
            })
            .collect::<anyhow::Result<_>>()?;
        let mut variant = Variant {
            name: name.to_string(),
            policy: make()?,
            rigid: false,
        };
        let s = schedule_test(&mut variant, ti, &apps, t.n_nodes, 1)?;
        tests.push(OutputTest {
            apps: s
                .apps
                .iter()
                .map(|a| OutputApp {
                    start: Seconds::from_ms(a.start),
                    end: Seconds::from_ms(a.end()),
                    ep: a
                        .steps
                        .iter()
                        .map(|s| (Seconds::from_ms(s.duration), s.nodes))
                        .collect(),
                })
                .collect(),
        });
    }
    Ok(Output { tests })
}

/// Runs `esim schedule`.
pub fn run(args: &ScheduleArgs, policies: &dyn super::Policies) -> anyhow::Result<()> {
    let params = parse_params(&args.params)?;
    // Build once up front so that a bad name or parameter fails before any input is read.
    policies.hosted(&args.policy, &params, false)?;
    let Some(path) = args.input.as_ref().or(args.input_option.as_ref()) else {
        anyhow::bail!("no input: give the tests' JSON file (`-` for stdin)");
    };
    let text = if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading stdin")?;
        s
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
    };
    let input = parse_input(&text).with_context(|| format!("{}", path.display()))?;
    let out = schedule(&input, &args.policy, &|| {
        policies.hosted(&args.policy, &params, false)
    })?;
    let json = serde_json::to_string(&out)?;
    match &args.output {
        None => {
            let mut stdout = std::io::stdout().lock();
            writeln!(stdout, "{json}").context("writing stdout")?;
        }
        Some(path) => std::fs::write(path, format!("{json}\n"))
            .with_context(|| format!("writing {}", path.display()))?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use esched_evolving::{EvolvingPolicy, ExpandLimit};
    use sched_abi::{Linked, PolicyHost};

    /// `policy` linked in, under the host every lab command uses.
    fn hosted(policy: EvolvingPolicy) -> anyhow::Result<PolicyHost> {
        Ok(PolicyHost::boxed(Box::new(Linked::new(
            "evolving",
            Box::new(policy),
        ))))
    }

    /// 10 nodes, all submitted at 0: A = 10 s × 5 then 10 s × 10, B = 10 s × 5,
    /// C = 5 s × 2, 20 s × 2, 5 s × 8.
    const HAND: &str =
        r#"{"tests":[{"n_nodes":10,"apps":[[[10,5],[10,10]],[[10,5]],[[5,2],[20,2],[5,8]]]}]}"#;

    fn run_with(limit: ExpandLimit, compact: bool) -> Output {
        let input = parse_input(HAND).unwrap();
        schedule(&input, "evolving", &|| {
            hosted(EvolvingPolicy::new(limit, compact))
        })
        .unwrap()
    }

    /// (start, end, EP) of one application, whole seconds.
    type App = (u64, u64, Vec<(u64, u32)>);

    fn apps(out: &Output) -> Vec<App> {
        let s = |x: &Seconds| match x {
            Seconds::Whole(v) => *v,
            Seconds::Frac(f) => panic!("fractional {f}"),
        };
        out.tests[0]
            .apps
            .iter()
            .map(|a| {
                (
                    s(&a.start),
                    s(&a.end),
                    a.ep.iter().map(|(d, n)| (s(d), *n)).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn hand_checked_instance() {
        // A on [0, 20) as asked; B beside A's first step on [0, 10). C's last step needs 8
        // nodes: free from 20 on (A holds 10 on [10, 20)). noX: C is delayed so that its steps
        // run back to back, [20, 50): its 2-node steps fit beside nothing.
        let nox = run_with(ExpandLimit::NONE, false);
        assert_eq!(
            apps(&nox),
            vec![
                (0, 20, vec![(10, 5), (10, 10)]),
                (0, 10, vec![(10, 5)]),
                (20, 50, vec![(5, 2), (20, 2), (5, 8)]),
            ]
        );
        // infX: C's 2-node steps cannot overlap A's 10-node step either, so infX finds the
        // same completion; with l = ∞ the first step is still delayed, never expanded.
        let inf = run_with(ExpandLimit::INFINITE, false);
        assert_eq!(apps(&inf)[2].1, 50);
    }

    #[test]
    fn expansion_shows_in_the_output() {
        // 10 nodes; A = 30 s × 9. B = 5 s × 1, 5 s × 1, 5 s × 5: B's last step must wait for A
        // to end at 30; infX starts B at 0 and expands its middle step to 25 s.
        let input =
            parse_input(r#"{"tests":[{"n_nodes":10,"apps":[[[30,9]],[[5,1],[5,1],[5,5]]]}]}"#)
                .unwrap();
        let inf = schedule(&input, "evolving", &|| {
            hosted(EvolvingPolicy::new(ExpandLimit::INFINITE, false))
        })
        .unwrap();
        assert_eq!(apps(&inf)[1], (0, 35, vec![(5, 1), (25, 1), (5, 5)]));
        let nox = schedule(&input, "evolving", &|| hosted(EvolvingPolicy::default())).unwrap();
        assert_eq!(apps(&nox)[1], (20, 35, vec![(5, 1), (5, 1), (5, 5)]));
        let json = serde_json::to_string(&inf).unwrap();
        assert_eq!(
            json,
            r#"{"tests":[{"apps":[{"start":0,"end":30,"ep":[[30,9]]},{"start":0,"end":35,"ep":[[5,1],[25,1],[5,5]]}]}]}"#
        );
    }

    #[test]
    fn fractional_seconds_round_trip_at_ms() {
        let input =
            parse_input(r#"{"tests":[{"n_nodes":4,"apps":[[[1.5,4]],[[0.25,4]]]}]}"#).unwrap();
        let out = schedule(&input, "evolving", &|| hosted(EvolvingPolicy::default())).unwrap();
        assert_eq!(out.tests[0].apps[1].start, Seconds::Frac(1.5));
        assert_eq!(out.tests[0].apps[1].end, Seconds::Frac(1.75));
    }

    #[test]
    fn bad_input_is_one_clear_error() {
        for bad in [
            r#"{"tests":[{"n_nodes":10,"apps":[[[10,5]]]}"#,
            r#"{"tests":[{"nodes":10,"apps":[]}]}"#,
            r#"{"tests":[{"n_nodes":-1,"apps":[]}]}"#,
        ] {
            let err = format!("{:#}", parse_input(bad).unwrap_err());
            assert!(
                err.starts_with("input is not a valid tests document"),
                "{err}"
            );
            assert!(!err.contains('\n'), "{err}");
        }
        let input = parse_input(r#"{"tests":[{"n_nodes":4,"apps":[[[10,5]]]}]}"#).unwrap();
        let err = schedule(&input, "evolving", &|| hosted(EvolvingPolicy::default())).unwrap_err();
        assert!(format!("{err:#}").contains("asks for 5 nodes"), "{err:#}");
        let input = parse_input(r#"{"tests":[{"n_nodes":4,"apps":[[[-1,1]]]}]}"#).unwrap();
        assert!(schedule(&input, "evolving", &|| hosted(EvolvingPolicy::default())).is_err());
        assert!(parse_params(&["expand_limit".into()]).is_err());
    }
}
