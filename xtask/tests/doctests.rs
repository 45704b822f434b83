//! The workspace's doctest passes stay runnable after the end-to-end tests.
//!
//! A policy crate is built as `cdylib` + `rlib`, and cargo names the rlib of a root unit without
//! a hash (`deps/libesched_cbf.rlib`). The end-to-end tests build batchd for themselves (another
//! package's binary, which cargo does not build for a test) with a different feature
//! unification than `cargo test --workspace`, so that file is rewritten in the middle of the
//! run. rustdoc, which runs last, then finds a crate such as esim built against the policy
//! crate it no longer has, and fails (E0460) on a crate with no doctest at all. A crate that
//! reaches a policy crate through its ordinary dependencies must therefore say `doctest =
//! false` (it has no doc examples to lose); a dev-dependency on a policy crate is linked by its
//! own path and is safe.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

#[test]
fn crates_reaching_a_policy_crate_have_no_doctest_pass() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let packages = meta["packages"].as_array().expect("packages");

    // Per workspace package: its lib target (crate types, doctest), its ordinary dependencies.
    let mut lib: BTreeMap<&str, (bool, bool)> = BTreeMap::new();
    let mut deps: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for p in packages {
        let name = p["name"].as_str().expect("name");
        if let Some(t) = p["targets"].as_array().and_then(|ts| {
            ts.iter().find(|t| {
                t["kind"]
                    .as_array()
                    .is_some_and(|k| k.iter().any(|k| k == "lib" || k == "cdylib" || k == "rlib"))
            })
        }) {
            let cdylib = t["crate_types"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c == "cdylib"));
            let doctest = t["doctest"].as_bool().unwrap_or(true);
            lib.insert(name, (cdylib, doctest));
        }
        let normal = p["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["kind"].is_null())
            .filter_map(|d| d["name"].as_str())
            .collect();
        deps.insert(name, normal);
    }
    assert!(
        lib.values().any(|&(cdylib, _)| cdylib),
        "no cdylib crate found in the workspace: the check reads the metadata wrongly"
    );

    let mut offenders = Vec::new();
    for (&name, &(_, doctest)) in &lib {
        if !doctest {
            continue;
        }
        // Every workspace crate reachable through ordinary dependencies.
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&str> = deps.get(name).cloned().unwrap_or_default();
        while let Some(d) = stack.pop() {
            if !deps.contains_key(d) || !seen.insert(d) {
                continue;
            }
            stack.extend(deps[d].iter().copied());
        }
        let policies: Vec<&str> = seen
            .into_iter()
            .filter(|d| lib.get(d).is_some_and(|&(cdylib, _)| cdylib))
            .collect();
        if !policies.is_empty() {
            offenders.push(format!("{name} (reaches {})", policies.join(", ")));
        }
    }
    assert!(
        offenders.is_empty(),
        "these crates reach a cdylib+rlib crate and run a doctest pass; give them \
         `[lib] doctest = false`: {}",
        offenders.join("; ")
    );
}
