//! `esched slurm-compat DIR`: a directory of Slurm's command names (`sbatch`, `squeue`,
//! `scancel`, `sacct`, `sinfo`, `scontrol`, `srun`, `salloc`) linked to the esched tools, for
//! the programs that drive Slurm by name. Nothing named like Slurm is installed anywhere else;
//! a user opts in by putting DIR first on their `PATH`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use super::cli::SLURM_NAMES;

/// Creates `dir` (if need be) with one symbolic link per Slurm name to the esched tool in
/// `tools` (the directory the tools are installed in). An existing entry is replaced only
/// when it is already a link (`force` replaces anything but a directory). Returns the links.
pub fn create(dir: &Path, tools: &Path, force: bool) -> anyhow::Result<Vec<(PathBuf, PathBuf)>> {
    for (tool, _) in SLURM_NAMES {
        let t = tools.join(tool);
        if !t.is_file() {
            bail!(
                "{} is missing: the esched tools must be installed side by side",
                t.display()
            );
        }
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut made = Vec::new();
    for (tool, slurm) in SLURM_NAMES {
        let link = dir.join(slurm);
        let target = tools.join(tool);
        match std::fs::symlink_metadata(&link) {
            Ok(m) if m.file_type().is_symlink() || (force && !m.is_dir()) => {
                std::fs::remove_file(&link)
                    .with_context(|| format!("cannot replace {}", link.display()))?;
            }
            Ok(_) => bail!(
                "{} exists and is not a link (give --force to replace it)",
                link.display()
            ),
            Err(_) => {}
        }
        std::os::unix::fs::symlink(&target, &link)
            .with_context(|| format!("cannot create {}", link.display()))?;
        made.push((link, target));
    }
    Ok(made)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_every_slurm_name_and_keeps_what_is_not_a_link() {
        let tools = tempfile::tempdir().unwrap();
        for (t, _) in SLURM_NAMES {
            std::fs::write(tools.path().join(t), "").unwrap();
        }
        let out = tempfile::tempdir().unwrap();
        let dir = out.path().join("slurm");
        let made = create(&dir, tools.path(), false).unwrap();
        assert_eq!(made.len(), 8);
        assert_eq!(
            std::fs::read_link(dir.join("srun")).unwrap(),
            tools.path().join("erun")
        );
        // Again: the links are replaced.
        create(&dir, tools.path(), false).unwrap();
        // A file of the user's is kept unless --force.
        std::fs::remove_file(dir.join("sinfo")).unwrap();
        std::fs::write(dir.join("sinfo"), "mine").unwrap();
        assert!(create(&dir, tools.path(), false).is_err());
        create(&dir, tools.path(), true).unwrap();
        // Missing tools: refused before anything is made.
        let empty = tempfile::tempdir().unwrap();
        assert!(create(&out.path().join("x"), empty.path(), false).is_err());
        assert!(!out.path().join("x").exists());
    }
}
