//! The generated completions and man pages, read back by the programs that use them: bash
//! completes `esubmit --ti` to `--time`, `man -l` renders esubmit.1, zsh parses its files,
//! and `systemd-analyze verify` accepts the unit (with batchd's man page found). A check whose
//! program is not installed is skipped, with a note on stderr.

use std::path::Path;
use std::process::Command;

use clap_complete::Shell;

/// Whether `program` runs here; a note on stderr when it does not.
fn have(program: &str) -> bool {
    let ok = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: {program} is not installed");
    }
    ok
}

const BINARIES: [&str; 14] = [
    "esubmit", "equeue", "ecancel", "einfo", "eacct", "econtrol", "eview", "erun", "ealloc",
    "erelease", "esched", "esim", "batchd", "ebench",
];

#[test]
fn every_binary_has_a_completion_per_shell_and_a_man_page() {
    let names: Vec<String> = xtask::binaries()
        .iter()
        .map(|c| c.get_name().to_string())
        .collect();
    assert_eq!(names, BINARIES);
    let dir = tempfile::tempdir().unwrap();
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let out = dir.path().join(shell.to_string());
        let files = xtask::completions(shell, &out).unwrap();
        assert_eq!(files.len(), BINARIES.len());
        for b in BINARIES {
            let f = out.join(xtask::completion_file(shell, b));
            let text = std::fs::read_to_string(&f).unwrap();
            assert!(text.contains(b), "{}", f.display());
        }
    }
    let fish = std::fs::read_to_string(dir.path().join("fish/esubmit.fish")).unwrap();
    assert!(fish.contains("-l time"), "{fish}");
    let man = dir.path().join("man1");
    xtask::man_pages(&man).unwrap();
    for b in BINARIES {
        let page = std::fs::read_to_string(man.join(format!("{b}.1"))).unwrap();
        assert!(page.starts_with(".ie") || page.contains(".TH"), "{b}.1");
    }
    // Visible subcommands get pages of their own, hidden ones (batchd supervise) none.
    assert!(man.join("esim-run.1").exists());
    assert!(man.join("econtrol-show.1").exists());
    assert!(!man.join("batchd-supervise.1").exists());
}

#[test]
fn bash_completes_esubmit_options() {
    if !have("bash") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    xtask::completions(Shell::Bash, dir.path()).unwrap();
    let script = r#"
        source "$1"
        f=$(complete -p esubmit | sed -E 's/.* -F ([^ ]+) .*/\1/')
        COMP_WORDS=(esubmit --ti)
        COMP_CWORD=1
        COMP_LINE='esubmit --ti'
        COMP_POINT=${#COMP_LINE}
        "$f" esubmit --ti esubmit
        printf '%s\n' "${COMPREPLY[@]}"
    "#;
    let out = Command::new("bash")
        .args(["--norc", "-c", script, "bash"])
        .arg(dir.path().join("esubmit"))
        .output()
        .unwrap();
    let offered = String::from_utf8_lossy(&out.stdout);
    assert!(
        offered.lines().any(|l| l.trim() == "--time"),
        "{offered}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        offered.lines().all(|l| l.trim().starts_with("--ti")),
        "{offered}"
    );
}

#[test]
fn zsh_reads_its_completions() {
    if !have("zsh") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for f in xtask::completions(Shell::Zsh, dir.path()).unwrap() {
        let out = Command::new("zsh").arg("-n").arg(&f).output().unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            f.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = std::fs::read_to_string(dir.path().join("_esubmit")).unwrap();
    assert!(
        text.starts_with("#compdef esubmit") && text.contains("--time"),
        "{text}"
    );
    // The directory on fpath, as the README has it: compinit binds every command to its file.
    let script = format!(
        "fpath=({} $fpath); autoload -U compinit; compinit -u -D; print -r -- {}",
        dir.path().display(),
        BINARIES.map(|b| format!("$_comps[{b}]")).join(" ")
    );
    let out = Command::new("zsh")
        .args(["-f", "-c", &script])
        .output()
        .unwrap();
    let bound = String::from_utf8_lossy(&out.stdout);
    let wanted: Vec<String> = BINARIES.iter().map(|b| format!("_{b}")).collect();
    assert_eq!(
        bound.split_whitespace().collect::<Vec<_>>(),
        wanted,
        "{bound}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn man_renders_the_esubmit_page() {
    if !have("man") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    xtask::man_pages(dir.path()).unwrap();
    let out = Command::new("man")
        .args(["-P", "cat", "-l"])
        .arg(dir.path().join("esubmit.1"))
        .env("MANWIDTH", "100")
        .output()
        .unwrap();
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for wanted in ["NAME", "SYNOPSIS", "OPTIONS", "esubmit", "--time"] {
        assert!(page.contains(wanted), "{wanted} not in\n{page}");
    }
}

#[test]
fn the_systemd_unit_verifies() {
    if !have("systemd-analyze") || !have("man") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let unit = std::fs::read_to_string(root.join("packaging/systemd/batchd.service")).unwrap();
    for key in [
        "ExecReload=/bin/kill -HUP $MAINPID",
        "KillMode=process",
        "StateDirectory=esched",
        "RuntimeDirectory=esched",
    ] {
        assert!(unit.lines().any(|l| l == key), "{key}");
    }
    // verify wants ExecStart's program to exist and Documentation's man page to be found:
    // an executable at the path install.sh writes, and the generated pages on MANPATH.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let exe = bin.join("batchd");
    std::fs::write(&exe, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let man = dir.path().join("man");
    xtask::man_pages(&man.join("man1")).unwrap();
    let installed = dir.path().join("batchd.service");
    std::fs::write(
        &installed,
        unit.replace("/usr/local/bin/batchd", &exe.display().to_string()),
    )
    .unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&installed)
        .env("MANPATH", &man)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.trim().is_empty(), "{err}");
}
