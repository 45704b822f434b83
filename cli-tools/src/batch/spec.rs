//! Parsers for esubmit's structured option values: `--profile`, `--moldable`,
//! `--moldable-model`, `--nodes-range`, `--weight` and `-N/--nodes`. (`--dependency` is parsed by batch-proto's `Dependency::parse_list`, which the
//! daemon also uses.)

use batch_proto::time::{Duration, SECOND};
use batch_proto::{MoldConfig, SpeedupModel, Step};

use super::error::SpecError;
use super::time::{parse_time_exact, TimeLimit};

fn invalid(what: &'static str, input: &str, reason: impl Into<String>) -> SpecError {
    SpecError::Invalid {
        what,
        input: input.to_string(),
        reason: reason.into(),
    }
}

fn positive(what: &'static str, input: &str, s: &str) -> Result<u64, SpecError> {
    s.trim()
        .parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| {
            invalid(
                what,
                input,
                format!("'{}' is not a positive integer", s.trim()),
            )
        })
}

fn pairs<'a>(
    what: &'static str,
    input: &'a str,
    shape: &str,
) -> Result<Vec<(&'a str, &'a str)>, SpecError> {
    input
        .split(',')
        .map(|p| {
            p.split_once(':')
                .ok_or_else(|| invalid(what, input, format!("expected {shape}")))
        })
        .collect()
}

/// Parses an evolving profile `500:5,3600:10`: steps of `duration_seconds:nodes`, in order.
pub fn parse_profile(input: &str) -> Result<Vec<Step>, SpecError> {
    const WHAT: &str = "profile";
    pairs(WHAT, input, "SECONDS:NODES[,SECONDS:NODES...]")?
        .into_iter()
        .map(|(d, n)| {
            let secs = positive(WHAT, input, d)?;
            let nodes = u32::try_from(positive(WHAT, input, n)?)
                .map_err(|_| invalid(WHAT, input, "node count too large"))?;
            let duration = secs
                .checked_mul(SECOND)
                .ok_or_else(|| invalid(WHAT, input, "duration too large"))?;
            Ok(Step { duration, nodes })
        })
        .collect()
}

/// A time in any of `-t`'s Slurm forms (`min`, `min:sec`, `h:m:s`, `d-h`, `d-h:m`,
/// `d-h:m:s`), `UNLIMITED` refused: a moldable job's times say what each size costs.
fn finite_time(what: &'static str, input: &str, t: &str) -> Result<Duration, SpecError> {
    match parse_time_exact(t) {
        Ok(TimeLimit::Limited(d)) => Ok(d),
        Ok(TimeLimit::Unlimited) => Err(invalid(what, input, "a time cannot be UNLIMITED here")),
        Err(SpecError::Invalid { reason, .. }) => {
            Err(invalid(what, input, format!("time '{t}': {reason}")))
        }
        Err(e) => Err(e),
    }
}

/// Parses moldable configurations `4:60,8:35`: `NODES:TIME`, TIME in any of `-t`'s forms (a
/// bare number is minutes, so `8:35` is 8 nodes for 35 minutes and `8:1:30:00` 8 nodes for an
/// hour and a half), each node count at most once.
pub fn parse_moldable(input: &str) -> Result<Vec<MoldConfig>, SpecError> {
    const WHAT: &str = "moldable configurations";
    let mut out: Vec<MoldConfig> = Vec::new();
    for (n, m) in pairs(WHAT, input, "NODES:TIME[,NODES:TIME...]")? {
        let nodes = u32::try_from(positive(WHAT, input, n)?)
            .map_err(|_| invalid(WHAT, input, "node count too large"))?;
        let walltime = finite_time(WHAT, input, m)?;
        if out.iter().any(|c| c.nodes == nodes) {
            return Err(invalid(WHAT, input, format!("{nodes} nodes offered twice")));
        }
        out.push(MoldConfig { nodes, walltime });
    }
    Ok(out)
}

/// Parses `--moldable-model`: `amdahl:WORK:SERIAL` or `linear:WORK`.
///
/// WORK is the run time on one node, p(1), in any of `-t`'s forms (`amdahl:2:00:00:0.1` is
/// two hours); SERIAL is Amdahl's serial fraction s, a real in `[0, 1]`. On k nodes the job
/// is given p(k) = WORK × (s + (1 − s) / k), rounded up to the millisecond; `linear` is s = 0.
pub fn parse_moldable_model(input: &str) -> Result<SpeedupModel, SpecError> {
    const WHAT: &str = "moldable model";
    let (kind, rest) = input
        .split_once(':')
        .ok_or_else(|| invalid(WHAT, input, "expected amdahl:WORK:SERIAL or linear:WORK"))?;
    match kind.trim().to_ascii_lowercase().as_str() {
        "amdahl" => {
            // The serial fraction is the last field: WORK may hold colons itself (h:m:s).
            let (work, serial) = rest
                .rsplit_once(':')
                .ok_or_else(|| invalid(WHAT, input, "expected amdahl:WORK:SERIAL"))?;
            let work = finite_time(WHAT, input, work)?;
            let serial = serial
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|s| (0.0..=1.0).contains(s))
                .ok_or_else(|| {
                    invalid(
                        WHAT,
                        input,
                        format!(
                            "serial fraction '{}' is not a number in [0, 1]",
                            serial.trim()
                        ),
                    )
                })?;
            Ok(SpeedupModel::Amdahl { work, serial })
        }
        "linear" => Ok(SpeedupModel::Linear {
            work: finite_time(WHAT, input, rest)?,
        }),
        other => Err(invalid(
            WHAT,
            input,
            format!("unknown model '{other}' (amdahl:WORK:SERIAL or linear:WORK)"),
        )),
    }
}

/// Parses `--nodes-range MIN-MAX` (or a single count): the node counts a moldable model
/// offers.
pub fn parse_nodes_range(input: &str) -> Result<(u32, u32), SpecError> {
    const WHAT: &str = "node range";
    let (lo, hi) = input.split_once('-').unwrap_or((input, input));
    let count = |s: &str| {
        u32::try_from(positive(WHAT, input, s)?).map_err(|_| invalid(WHAT, input, "too large"))
    };
    let (lo, hi) = (count(lo)?, count(hi)?);
    if lo > hi {
        return Err(invalid(WHAT, input, "MIN is larger than MAX"));
    }
    Ok((lo, hi))
}

/// Parses `--weight`: a positive real, the job's weight ω in the weighted sum of completion
/// times (Dutot & Eyraud).
pub fn parse_weight(input: &str) -> Result<f64, SpecError> {
    const WHAT: &str = "weight";
    input
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|w| w.is_finite() && *w > 0.0)
        .ok_or_else(|| invalid(WHAT, input, "expected a positive number"))
}

/// Parses `-N/--nodes`: a positive count. Slurm's `min-max` ranges are refused: moldable jobs
/// say what each size costs with `--moldable` instead.
pub fn parse_nodes(input: &str) -> Result<u32, SpecError> {
    const WHAT: &str = "node count";
    if input.contains('-') {
        return Err(invalid(
            WHAT,
            input,
            "ranges are not supported; see --moldable and --nodes-range",
        ));
    }
    u32::try_from(positive(WHAT, input, input)?).map_err(|_| invalid(WHAT, input, "too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_and_moldable() {
        assert_eq!(
            parse_profile("500:5,3600:10").unwrap(),
            vec![Step::new(500_000, 5), Step::new(3_600_000, 10)]
        );
        assert_eq!(
            parse_moldable("4:60,8:35").unwrap(),
            vec![
                MoldConfig {
                    nodes: 4,
                    walltime: 3_600_000
                },
                MoldConfig {
                    nodes: 8,
                    walltime: 2_100_000
                }
            ]
        );
        for bad in [
            "",
            "5",
            "0:5",
            "5:0",
            "a:b",
            "1:2,",
            "1:2:3:4:5",
            "4:UNLIMITED",
        ] {
            assert!(parse_profile(bad).is_err(), "{bad}");
            assert!(parse_moldable(bad).is_err(), "{bad}");
        }
        // Times in -t's forms: min:sec, h:m:s, d-h.
        let times: Vec<u64> = parse_moldable("1:1:30,2:1:00:00,3:1-0")
            .unwrap()
            .iter()
            .map(|c| c.walltime)
            .collect();
        assert_eq!(times, [90_000, 3_600_000, 86_400_000]);
        assert!(parse_moldable("4:60,4:30")
            .unwrap_err()
            .to_string()
            .contains("offered twice"));
    }

    #[test]
    fn models_ranges_weights() {
        assert_eq!(
            parse_moldable_model("amdahl:2:00:00:0.1").unwrap(),
            SpeedupModel::Amdahl {
                work: 7_200_000,
                serial: 0.1
            }
        );
        assert_eq!(
            parse_moldable_model("Amdahl:90:0").unwrap(),
            SpeedupModel::Amdahl {
                work: 5_400_000,
                serial: 0.0
            }
        );
        assert_eq!(
            parse_moldable_model("linear:1-0").unwrap(),
            SpeedupModel::Linear { work: 86_400_000 }
        );
        for (bad, why) in [
            ("amdahl:60", "expected amdahl:WORK:SERIAL"),
            ("amdahl:60:1.5", "not a number in [0, 1]"),
            ("amdahl:60:x", "not a number in [0, 1]"),
            ("amdahl:0:0.1", "time '0'"),
            ("amdahl:UNLIMITED:0.1", "cannot be UNLIMITED"),
            ("gustafson:60", "unknown model 'gustafson'"),
            ("60", "expected amdahl"),
        ] {
            let e = parse_moldable_model(bad).unwrap_err().to_string();
            assert!(e.contains(why) && !e.contains('\n'), "{bad}: {e}");
        }
        assert_eq!(parse_nodes_range("1-32").unwrap(), (1, 32));
        assert_eq!(parse_nodes_range("8").unwrap(), (8, 8));
        for bad in ["0-4", "4-2", "-4", "1-", "a-b", "1-99999999999"] {
            assert!(parse_nodes_range(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_weight("2.5").unwrap(), 2.5);
        for bad in ["0", "-1", "nan", "inf", "x", ""] {
            assert!(parse_weight(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn nodes() {
        assert_eq!(parse_nodes("4").unwrap(), 4);
        assert!(parse_nodes("0").is_err());
        assert!(parse_nodes("2-4")
            .unwrap_err()
            .to_string()
            .contains("--moldable"));
        assert!(parse_nodes("99999999999").is_err());
    }
}
