//! `scripts/check-layers.sh`, which CI runs to keep batchd's modules in layers
//! (ARCHITECTURE.md), passes on the tree as it is and fails on each kind of violation it
//! exists to catch, injected into a copy of `batchd/src`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// Runs the check on `src`; its success and its stderr.
fn check(src: &Path) -> (bool, String) {
    let out = Command::new("bash")
        .arg(root().join("scripts/check-layers.sh"))
        .arg(src)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A copy of batchd/src with `line` appended to each `(file, line)`.
fn mutated(edits: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&root().join("batchd/src"), dir.path());
    for (file, line) in edits {
        let p = dir.path().join(file);
        let mut text = fs::read_to_string(&p).unwrap();
        text.push_str(line);
        text.push('\n');
        fs::write(&p, text).unwrap();
    }
    dir
}

#[test]
fn the_tree_is_in_layers() {
    let (ok, err) = check(&root().join("batchd/src"));
    assert!(ok, "{err}");
}

#[test]
fn a_pure_layer_using_a_later_one_or_the_daemon_fails() {
    let d = mutated(&[("core/evolving.rs", "use crate::daemon::Daemon;")]);
    let (ok, err) = check(d.path());
    assert!(!ok);
    assert!(err.contains("`core` (layer 3) uses `daemon`"), "{err}");
    assert!(err.contains("names Daemon"), "{err}");
    let d = mutated(&[("record.rs", "use crate::view::JobView;")]);
    let (ok, err) = check(d.path());
    assert!(!ok);
    assert!(err.contains("`record` (layer 1) uses `view`"), "{err}");
}

#[test]
fn io_in_a_pure_layer_fails_but_not_in_a_comment() {
    let d = mutated(&[("evorun.rs", "// std::fs is named in a comment only")]);
    let (ok, err) = check(d.path());
    assert!(ok, "{err}");
    let d = mutated(&[("evorun.rs", "fn f() { let _ = std::fs::read(\"x\"); }")]);
    let (ok, err) = check(d.path());
    assert!(!ok);
    assert!(err.contains("I/O in pure layer `evorun`"), "{err}");
}

#[test]
fn a_cycle_among_io_modules_fails() {
    let d = mutated(&[
        ("state.rs", "use crate::logging::quoted;"),
        ("logging.rs", "use crate::state::PRIVATE_FILE;"),
    ]);
    let (ok, err) = check(d.path());
    assert!(!ok);
    assert!(err.contains("cycle"), "{err}");
}

/// A copy of batchd/src with `from` replaced by `to` in `file` (which must contain it).
fn replaced(file: &str, from: &str, to: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&root().join("batchd/src"), dir.path());
    let p = dir.path().join(file);
    let text = fs::read_to_string(&p).unwrap();
    assert!(text.contains(from), "{file} has no `{from}`");
    fs::write(&p, text.replacen(from, to, 1)).unwrap();
    dir
}

#[test]
fn a_public_field_of_core_or_a_mut_handed_out_fails() {
    for field in ["pub next_id: u64,", "pub(crate) next_id: u64,"] {
        let d = replaced("core/mod.rs", "    next_id: u64,", &format!("    {field}"));
        let (ok, err) = check(d.path());
        assert!(!ok);
        assert!(err.contains("a field of Core is not private"), "{err}");
    }
    let d = mutated(&[(
        "core/submit.rs",
        "impl Core { pub fn ids(&mut self) -> &mut u64 { &mut self.next_id } }",
    )]);
    let (ok, err) = check(d.path());
    assert!(!ok);
    assert!(err.contains("returns `&mut`"), "{err}");
}
