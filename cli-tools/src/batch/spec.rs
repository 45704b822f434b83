//! Parsers for esubmit's structured option values: `--profile`, `--moldable` and
//! `-N/--nodes`. (`--dependency` is parsed by batch-proto's `Dependency::parse_list`, which the
//! daemon also uses.)

use sched_core::request::{MoldConfig, Step};
use sched_core::time::{MINUTE, SECOND};

use super::error::SpecError;

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

/// Parses moldable configurations `4:60,8:35`: `nodes:minutes`, each node count at most once.
pub fn parse_moldable(input: &str) -> Result<Vec<MoldConfig>, SpecError> {
    const WHAT: &str = "moldable configurations";
    let mut out: Vec<MoldConfig> = Vec::new();
    for (n, m) in pairs(WHAT, input, "NODES:MINUTES[,NODES:MINUTES...]")? {
        let nodes = u32::try_from(positive(WHAT, input, n)?)
            .map_err(|_| invalid(WHAT, input, "node count too large"))?;
        let walltime = positive(WHAT, input, m)?
            .checked_mul(MINUTE)
            .ok_or_else(|| invalid(WHAT, input, "time too large"))?;
        if out.iter().any(|c| c.nodes == nodes) {
            return Err(invalid(WHAT, input, format!("{nodes} nodes offered twice")));
        }
        out.push(MoldConfig { nodes, walltime });
    }
    Ok(out)
}

/// Parses `-N/--nodes`: a positive count. Slurm's `min-max` ranges are refused: moldable jobs
/// say what each size costs with `--moldable` instead.
pub fn parse_nodes(input: &str) -> Result<u32, SpecError> {
    const WHAT: &str = "node count";
    if input.contains('-') {
        return Err(invalid(
            WHAT,
            input,
            "ranges are not supported; see --moldable",
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
        for bad in ["", "5", "0:5", "5:0", "a:b", "1:2,", "1:2:3"] {
            assert!(parse_profile(bad).is_err(), "{bad}");
            assert!(parse_moldable(bad).is_err(), "{bad}");
        }
        assert!(parse_moldable("4:60,4:30")
            .unwrap_err()
            .to_string()
            .contains("offered twice"));
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
