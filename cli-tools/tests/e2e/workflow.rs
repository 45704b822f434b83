//! Slurm's workflow tools, unchanged, against a real batchd: submitit (a function's result, a
//! `map_array` of three, a job requeued through its checkpointing) and dask-jobqueue (a
//! `SLURMCluster` of two workers computing a map), from the package registry in a virtual
//! environment, through `esched slurm-compat`'s directory first on PATH. The cases are
//! `tests/slurm-tools/cases.py`, run by `scripts/slurm-tools-e2e.sh`, which skips with one
//! line when the packages cannot be installed.

use std::process::Command;

use crate::harness::{bin_dir, ensure_built};

#[test]
fn submitit_and_dask_jobqueue_run_unchanged() {
    ensure_built();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf();
    let out = Command::new("bash")
        .arg(root.join("scripts/slurm-tools-e2e.sh"))
        .env("ESCHED_BIN", bin_dir())
        .current_dir(&root)
        .output()
        .expect("run scripts/slurm-tools-e2e.sh");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    if let Some(skip) = stdout
        .lines()
        .find(|l| l.starts_with("slurm-tools-e2e: SKIP"))
    {
        eprintln!("skipped: {skip}");
        return;
    }
    assert!(
        out.status.success(),
        "slurm-tools-e2e failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let all = format!("{stdout}\n{stderr}");
    assert!(all.contains("4 passed, 0 failed"), "{all}");
}
