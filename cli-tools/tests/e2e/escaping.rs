//! Text a user chose, printed by the tools to someone else (root listing the queue): a working
//! directory whose name holds a newline and a forged `JobState=` cannot draw a line of its own,
//! nor can an argument move the cursor; `--records` and `--json` keep the exact text.

use batch_proto::JobState;

use crate::harness::{texts, Cluster};

/// What a forged line would start with, once the newline is taken for an end of line.
const FORGED: &str = "JobState=COMPLETED Reason=None";

#[test]
fn a_directory_named_with_a_newline_is_shown_escaped() {
    let c = Cluster::start(1, "cbf");
    let dir = c.work.join(format!("run\n   {FORGED}\r"));
    std::fs::create_dir(&dir).unwrap();
    let id = c.submit(&["-H", "-D", dir.to_str().unwrap(), "--wrap", "true"]);
    // An argument that would clear the screen, given to the script.
    c.script("s.sh", "#!/bin/sh\ntrue\n");
    let with_arg = c.submit(&["-H", "s.sh", "a\u{1b}[2Jb"]);
    let escaped_dir = format!("{}/run\\n   {FORGED}\\r", c.work.display());

    let show = c.ok("econtrol", &["show", "job", &id.to_string()]);
    assert!(
        show.lines()
            .any(|l| l == format!("   WorkDir={escaped_dir}")),
        "{show}"
    );
    assert!(
        !show.lines().any(|l| l.trim_start().starts_with(FORGED)),
        "{show}"
    );
    assert!(show.contains("JobState=PENDING"), "{show}");
    assert!(!show.contains('\r'), "{show:?}");
    let show = c.ok("econtrol", &["show", "job", &with_arg.to_string()]);
    assert!(show.contains("   Args=a\\x1b[2Jb\n"), "{show}");
    assert!(!show.contains('\u{1b}'), "{show:?}");

    let listed = c.ok("equeue", &["-o", "%i %Z", "--noheader"]);
    assert_eq!(listed.lines().count(), 2, "{listed}");
    assert!(
        listed.lines().any(|l| l == format!("{id} {escaped_dir}")),
        "{listed}"
    );
    let long = c.ok("equeue", &["-O", "jobid,workdir:200", "--noheader"]);
    assert_eq!(long.lines().count(), 2, "{long}");
    assert!(!long.contains('\r'), "{long:?}");

    // The exact text is where a program looks for it.
    let json = c.queue(&[]);
    let j = json.iter().find(|j| j.id == id).unwrap();
    assert_eq!(j.work_dir, dir.to_str().unwrap());

    c.ok("ecancel", &[&id.to_string(), &with_arg.to_string()]);
    c.wait_state(id, JobState::Cancelled);
    let acct = c.run(
        "eacct",
        &["-j", &id.to_string(), "-o", "JobID,WorkDir%-200", "-n"],
    );
    let (out, err) = texts(&acct);
    assert!(acct.status.success(), "{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.contains(&escaped_dir), "{out}");
}
