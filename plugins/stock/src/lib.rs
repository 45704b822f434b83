//! The stock policies: the one table from a policy's name to its linked constructor.
//!
//! Every place that builds a stock policy without loading its plugin library (batchd's
//! fallback when no usable library is found, `esim --linked`) goes through [`find`], and every
//! message that lists the policies shipped with esched prints [`known`]. A policy crate added
//! under `plugins/` without an entry here fails this crate's tests.
#![forbid(unsafe_code)]

use sched_abi::{HostedPolicy, Linked};
use sched_core::{NamedPolicy, ParamError, Params, Policy};

/// One stock policy.
#[derive(Clone, Copy)]
pub struct Stock {
    /// The name users type in a config or on a command line.
    pub name: &'static str,
    /// Builds a bare instance, refusing unknown parameters.
    pub policy: fn(&Params) -> Result<Box<dyn Policy + Send>, ParamError>,
    /// Builds the instance under sched-abi's containment, rebuilt from the same parameters
    /// after a panic as a plugin is.
    pub hosted: fn(&Params) -> Result<Box<dyn HostedPolicy + Send>, ParamError>,
}

impl std::fmt::Debug for Stock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stock").field("name", &self.name).finish()
    }
}

const fn stock<P: NamedPolicy + Send + 'static>() -> Stock {
    Stock {
        name: P::NAME,
        policy: policy::<P>,
        hosted: hosted::<P>,
    }
}

fn policy<P: NamedPolicy + Send + 'static>(
    params: &Params,
) -> Result<Box<dyn Policy + Send>, ParamError> {
    let p = P::from_params(params)?;
    // from_params should already refuse unknown keys; checking here too keeps a typo from
    // passing silently through a policy that forgets to.
    params.finish()?;
    Ok(Box::new(p))
}

fn hosted<P: NamedPolicy + Send + 'static>(
    params: &Params,
) -> Result<Box<dyn HostedPolicy + Send>, ParamError> {
    Ok(Box::new(Linked::named::<P>(params)?))
}

/// The stock policies, in the order they are listed to users: the rigid ones from the
/// simplest, then the evolving, moldable and co-allocation ones, then CooRM.
pub static STOCK: &[Stock] = &[
    stock::<esched_fcfs::Fcfs>(),
    stock::<esched_easy::Easy>(),
    stock::<esched_cbf::Cbf>(),
    stock::<esched_evolving::EvolvingPolicy>(),
    stock::<esched_bicriteria::BiCriteria>(),
    stock::<esched_rpp::Rpp>(),
    stock::<esched_coorm::Coorm>(),
];

/// The stock policy named `name`.
pub fn find(name: &str) -> Option<&'static Stock> {
    STOCK.iter().find(|s| s.name == name)
}

/// The stock policies' names.
pub fn names() -> impl Iterator<Item = &'static str> {
    STOCK.iter().map(|s| s.name)
}

/// The stock policies' names as a message lists them: `fcfs, easy, …`.
pub fn known() -> String {
    names().collect::<Vec<_>>().join(", ")
}

/// The stock policy whose name is nearest to `name`, if one is near enough to be what was
/// meant (two edits away at most, one for names of three letters or fewer; case ignored): the
/// hint of a "not found".
pub fn nearest(name: &str) -> Option<&'static str> {
    let limit = if name.chars().count() <= 3 { 1 } else { 2 };
    let name = name.to_lowercase();
    names()
        .map(|n| (edits(&name, n), n))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, n)| n)
}

/// Levenshtein distance: insertions, deletions and substitutions of one character.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_stock_name_is_suggested_only_when_near() {
        assert_eq!(edits("kitten", "sitting"), 3);
        assert_eq!(nearest("cbff"), Some("cbf"));
        assert_eq!(nearest("EASY"), Some("easy"));
        assert_eq!(nearest("esay"), Some("easy"));
        assert_eq!(nearest("zzzzzzzz"), None);
    }

    #[test]
    fn every_stock_policy_builds_both_ways_under_its_own_name() {
        for s in STOCK {
            let p = (s.hosted)(&Params::new()).unwrap_or_else(|e| panic!("{}: {e}", s.name));
            assert_eq!(p.name(), s.name);
            assert!((s.policy)(&Params::new()).is_ok(), "{}", s.name);
            assert!(std::ptr::eq(
                find(s.name).map_or(std::ptr::null(), |f| f),
                s
            ));
        }
        assert!(find("cfb").is_none());
    }

    #[test]
    fn unknown_parameters_are_refused() {
        let p = Params::from_pairs([("no_such_knob", "1")]);
        for s in STOCK {
            let e = (s.policy)(&p).err().map(|e| e.to_string());
            assert!(e.is_some_and(|e| e.contains("no_such_knob")), "{}", s.name);
        }
    }

    #[test]
    fn known_lists_every_name_once() {
        let known = known();
        for s in STOCK {
            assert_eq!(known.matches(s.name).count(), 1, "{known}");
        }
    }

    /// Every policy library under `plugins/` is a stock policy: a crate there builds a
    /// `cdylib`, and its directory is named after the policy.
    #[test]
    fn every_policy_crate_in_plugins_is_in_the_table() {
        let plugins = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut seen = Vec::new();
        for entry in std::fs::read_dir(&plugins).unwrap() {
            let dir = entry.unwrap().path();
            let manifest = match std::fs::read_to_string(dir.join("Cargo.toml")) {
                Ok(m) => m,
                Err(_) => continue,
            };
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            // Test fixtures live under sched-abi/fixtures: a library here is a policy.
            let builds_a_library = manifest
                .lines()
                .any(|l| l.trim_start().starts_with("crate-type") && l.contains("\"cdylib\""));
            if !builds_a_library {
                continue;
            }
            assert!(
                find(&name).is_some(),
                "plugins/{name} builds a policy library but is not in esched-stock's table"
            );
            seen.push(name);
        }
        assert_eq!(seen.len(), STOCK.len(), "{seen:?}");
    }
}
