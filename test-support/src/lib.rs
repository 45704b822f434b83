//! What tests of several crates share.
//!
//! [`cargo_build`] is the one place a test runs cargo. A test that drives a real batchd (the
//! user tools' end-to-end tests, `esim coorm-validation`'s) needs the daemon's binary, which
//! belongs to another package: cargo builds a test's own package's binaries for it
//! (`CARGO_BIN_EXE_*`) but never another package's, and artifact dependencies, which would,
//! are nightly-only. So the test asks cargo for it, with the test's own profile and target
//! directory: a no-op after `cargo test --workspace`, which has built it already.
#![forbid(unsafe_code)]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// Runs `cargo build ARGS` (e.g. `-p batchd --bin batchd`) with the profile of `bin_dir`, the
/// directory of the calling test's own binaries (`target/<profile>`): `release`, else `test`
/// (whose output is `debug/`), so that the binaries land beside the test's.
pub fn cargo_build(bin_dir: &Path, args: &[&str]) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.arg("build").args(args);
    if bin_dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    } else {
        cmd.args(["--profile", "test"]);
    }
    let t0 = Instant::now();
    let out = cmd.output().map_err(|e| format!("cannot run cargo: {e}"))?;
    eprintln!(
        "cargo build {} took {:.1} s",
        args.join(" "),
        t0.elapsed().as_secs_f64()
    );
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "cargo build {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}
