//! Where batchd's socket lives, resolved the same way by the daemon and every tool:
//!
//! 1. `$ESCHED_SOCKET`;
//! 2. `$XDG_RUNTIME_DIR/esched/batchd.sock`;
//! 3. `/run/esched/batchd.sock` for root;
//! 4. `/tmp/esched-$UID/batchd.sock` otherwise.
//!
//! The daemon's config may name another path; the tools then need `ESCHED_SOCKET`.

use std::path::PathBuf;

/// Name of the environment variable that overrides the socket path.
pub const SOCKET_ENV: &str = "ESCHED_SOCKET";

/// The socket path for this process's environment and effective uid.
pub fn default_socket_path() -> PathBuf {
    socket_path_from(
        |k| std::env::var_os(k).map(PathBuf::from),
        nix::unistd::geteuid().as_raw(),
    )
}

/// The socket path given an environment lookup and a uid (testable without touching the
/// process environment).
pub fn socket_path_from(env: impl Fn(&str) -> Option<PathBuf>, uid: u32) -> PathBuf {
    if let Some(p) = env(SOCKET_ENV).filter(|p| !p.as_os_str().is_empty()) {
        return p;
    }
    if let Some(dir) = env("XDG_RUNTIME_DIR").filter(|p| p.is_absolute()) {
        return dir.join("esched").join("batchd.sock");
    }
    if uid == 0 {
        return PathBuf::from("/run/esched/batchd.sock");
    }
    PathBuf::from(format!("/tmp/esched-{uid}/batchd.sock"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_order() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| PathBuf::from(v))
            }
        };
        assert_eq!(
            socket_path_from(
                env(&[("ESCHED_SOCKET", "/x.sock"), ("XDG_RUNTIME_DIR", "/r")]),
                5
            ),
            PathBuf::from("/x.sock")
        );
        assert_eq!(
            socket_path_from(env(&[("XDG_RUNTIME_DIR", "/run/user/5")]), 5),
            PathBuf::from("/run/user/5/esched/batchd.sock")
        );
        assert_eq!(
            socket_path_from(env(&[]), 0),
            PathBuf::from("/run/esched/batchd.sock")
        );
        assert_eq!(
            socket_path_from(env(&[]), 1000),
            PathBuf::from("/tmp/esched-1000/batchd.sock")
        );
    }
}
