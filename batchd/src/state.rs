//! The state directory: who owns it, and who may read it.
//!
//! One daemon per state directory: [`StateLock`] is an exclusive `flock(2)` on
//! `<state_dir>/batchd.lock`, taken before anything of the state is read or written and held
//! for the daemon's life (the kernel drops it when the process ends, however it ends). The file
//! holds the owner's pid, so a refused start names it. `flock` rather than `fcntl` locks: two
//! daemons in one process (tests) exclude each other too, and the lock is not lost when some
//! other descriptor of the file is closed.
//!
//! Everything below is private to batchd's user: the directory and `jobs/` are 0700 (0711
//! when batchd runs as root, so that a job running as its submitter can reach its script and
//! node file by their names, without listing anything), the database and every job file that
//! holds submitted data 0600.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

/// The lock file's name inside the state directory.
pub const LOCK_FILE: &str = "batchd.lock";

/// Mode of files holding what users submitted (database, `launch.json`, status).
pub const PRIVATE_FILE: u32 = 0o600;

/// Mode of the state directory, `jobs/` and each job's directory.
pub fn private_dir_mode() -> u32 {
    if nix::unistd::geteuid().is_root() {
        0o711
    } else {
        0o700
    }
}

/// Creates `dir` (and its parents) with [`private_dir_mode`] if it does not exist; an existing
/// one is left as it is (see [`private_dir`]).
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(private_dir_mode())
        .create(dir)
}

/// Creates `dir` if need be and gives it [`private_dir_mode`], whatever it had.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    create_private_dir(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(private_dir_mode()))
}

/// Why the state directory cannot be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds it.
    #[error("{}: in use by another batchd ({}); stop it first, or give this one another state_dir", dir.display(), holder.map_or_else(|| "pid unknown".to_string(), |p| format!("pid {p}")))]
    Held {
        /// The state directory.
        dir: PathBuf,
        /// The holder's pid, as its lock file says.
        holder: Option<u32>,
    },
    /// The lock file could not be opened or locked.
    #[error("{}: cannot lock: {reason}", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// Why.
        reason: std::io::Error,
    },
}

/// The exclusive lock on a state directory, held until dropped.
#[derive(Debug)]
pub struct StateLock {
    _lock: Flock<File>,
}

impl StateLock {
    /// Takes the lock on `state_dir` (which must exist) without waiting, and writes this
    /// process's pid into it. Changes nothing else; when refused, changes nothing at all.
    pub fn acquire(state_dir: &Path) -> Result<StateLock, LockError> {
        let path = state_dir.join(LOCK_FILE);
        let io = |reason: std::io::Error| LockError::Io {
            path: path.clone(),
            reason,
        };
        // Not truncated at open: the holder's pid must stay readable for a refused start.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(PRIVATE_FILE)
            .open(&path)
            .map_err(io)?;
        let mut lock = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(l) => l,
            Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(LockError::Held {
                    dir: state_dir.to_path_buf(),
                    holder: text.trim().parse().ok(),
                });
            }
            Err((_, e)) => return Err(io(e.into())),
        };
        let f: &mut File = &mut lock;
        f.set_len(0).map_err(io)?;
        f.rewind().map_err(io)?;
        writeln!(f, "{}", std::process::id()).map_err(io)?;
        f.sync_all().map_err(io)?;
        Ok(StateLock { _lock: lock })
    }
}

/// Creates the database file 0600 if it does not exist, and brings an existing one and its
/// `-wal`/`-shm` companions to 0600: SQLite creates those with the main file's mode.
pub fn private_database(db: &Path) -> std::io::Result<()> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(PRIVATE_FILE)
        .open(db)?;
    let name = db.file_name().map(|n| n.to_string_lossy().into_owned());
    for suffix in ["", "-wal", "-shm"] {
        let p = db.with_file_name(format!("{}{suffix}", name.as_deref().unwrap_or("")));
        match std::fs::set_permissions(&p, std::fs::Permissions::from_mode(PRIVATE_FILE)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_naming_the_holder_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let first = StateLock::acquire(dir.path()).unwrap();
        let before = std::fs::read(dir.path().join(LOCK_FILE)).unwrap();
        let e = StateLock::acquire(dir.path()).unwrap_err();
        assert!(
            e.to_string().contains(&format!(
                "in use by another batchd (pid {})",
                std::process::id()
            )),
            "{e}"
        );
        assert_eq!(std::fs::read(dir.path().join(LOCK_FILE)).unwrap(), before);
        drop(first);
        StateLock::acquire(dir.path()).unwrap();
    }

    #[test]
    fn the_database_and_its_companions_become_private() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("batchd.sqlite");
        std::fs::write(dir.path().join("batchd.sqlite-wal"), b"").unwrap();
        std::fs::set_permissions(
            dir.path().join("batchd.sqlite-wal"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        private_database(&db).unwrap();
        for f in ["batchd.sqlite", "batchd.sqlite-wal"] {
            let mode = std::fs::metadata(dir.path().join(f))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{f}");
        }
    }
}
