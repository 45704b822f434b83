//! Job dependencies, as Slurm's `--dependency` writes them.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::spec::SpecError;

/// The kinds of job dependency Slurm's `--dependency` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DepKind {
    /// The other job has started (or ended).
    After,
    /// The other job has ended, however.
    AfterAny,
    /// The other job ended COMPLETED.
    AfterOk,
    /// The other job ended in any state but COMPLETED.
    AfterNotOk,
}

impl DepKind {
    /// The keyword in `--dependency`.
    pub fn keyword(self) -> &'static str {
        match self {
            DepKind::After => "after",
            DepKind::AfterAny => "afterany",
            DepKind::AfterOk => "afterok",
            DepKind::AfterNotOk => "afternotok",
        }
    }
}

/// One dependency of a job; a job runs when all of them hold.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dependency {
    /// On another job.
    On {
        /// The relation.
        kind: DepKind,
        /// The other job.
        job: u64,
    },
    /// No other job of the same name and user may run at the same time.
    Singleton,
}

impl Dependency {
    /// Parses Slurm's `--dependency` value: `afterok:12:13,afterany:9,singleton`. Every listed
    /// condition must hold (Slurm's `?` "any of" separator is refused, not guessed).
    pub fn parse_list(s: &str) -> Result<Vec<Dependency>, SpecError> {
        let bad = |why: &str| SpecError::Dependency(format!("`{s}`: {why}"));
        if s.contains('?') {
            return Err(bad("the `?` (any of) separator is not supported; use `,`"));
        }
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(bad("empty condition"));
            }
            if part.eq_ignore_ascii_case("singleton") {
                out.push(Dependency::Singleton);
                continue;
            }
            // Slurm's oldest form, job ids without a kind (`-d 12` or `-d 12:13`), is afterany.
            let bare = part.starts_with(|c: char| c.is_ascii_digit());
            let mut it = part.split(':');
            let kw = if bare {
                "afterany".to_string()
            } else {
                it.next().unwrap_or_default().to_ascii_lowercase()
            };
            let kind = match kw.as_str() {
                "after" => DepKind::After,
                "afterany" => DepKind::AfterAny,
                "afterok" => DepKind::AfterOk,
                "afternotok" => DepKind::AfterNotOk,
                _ => {
                    return Err(bad(&format!(
                        "unknown kind `{kw}` (expected after, afterany, afterok, afternotok or singleton)"
                    )))
                }
            };
            let mut n = 0;
            for id in it {
                // Slurm's `after:ID+MINUTES` waits that long after the start; batchd keeps no
                // start time of a finished job to count from, so it is refused as such.
                if let Some((j, _)) = id.split_once('+') {
                    return Err(bad(&format!(
                        "a delay after the other job's start (`+MINUTES`) is not supported; \
                         use `after:{j}` with --begin, or afterany"
                    )));
                }
                let job: u64 = id
                    .trim()
                    .parse()
                    .map_err(|_| bad(&format!("`{id}` is not a job id")))?;
                if job == 0 {
                    return Err(bad("job ids start at 1"));
                }
                out.push(Dependency::On { kind, job });
                n += 1;
            }
            if n == 0 {
                return Err(bad(&format!(
                    "`{kw}` needs at least one job id (`{kw}:ID`)"
                )));
            }
        }
        Ok(out)
    }
}

impl fmt::Display for Dependency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dependency::On { kind, job } => write!(f, "{}:{job}", kind.keyword()),
            Dependency::Singleton => f.write_str("singleton"),
        }
    }
}
