//! Mail about a job's events, as Slurm's `--mail-type`/`--mail-user` with its `MailProg`: the
//! config's `mail_program` is run as `PROGRAM -s SUBJECT RECIPIENT` (an empty body), with
//! Slurm's subjects (`Slurm Job_id=12 Name=run Began, Queued time 00:00:03`). Without a
//! `mail_program` nothing is sent (and batchd says so at start when a job asks).

use std::path::Path;
use std::process::Stdio;

use batch_proto::JobState;

use crate::record::JobRecord;

/// What happened to the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// It started.
    Begin,
    /// It ended (any end: COMPLETED, FAILED, CANCELLED, TIMEOUT, PREEMPTED...).
    End,
    /// It was requeued.
    Requeue,
}

/// The `--mail-type` words of `rec`, upper case.
fn types(rec: &JobRecord) -> Vec<String> {
    rec.spec
        .inert
        .as_deref()
        .and_then(|i| i.mail_type.as_deref())
        .map(|t| {
            t.split(',')
                .map(|w| w.trim().to_ascii_uppercase())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `rec` asked for mail about `event`: Slurm's words, `ALL` being BEGIN, END, FAIL and
/// REQUEUE; FAIL covers an end that is a failure (FAILED, TIMEOUT, PREEMPTED).
pub fn wanted(rec: &JobRecord, event: Event) -> bool {
    let t = types(rec);
    let has = |w: &str| t.iter().any(|x| x == w || x == "ALL");
    match event {
        Event::Begin => has("BEGIN"),
        Event::Requeue => has("REQUEUE"),
        Event::End => {
            has("END")
                || (has("FAIL")
                    && matches!(
                        rec.state,
                        JobState::Failed | JobState::Timeout | JobState::Preempted
                    ))
        }
    }
}

/// `ms` as Slurm's mail writes a duration, `HH:MM:SS` (`D-HH:MM:SS` past a day).
fn duration(ms: u64) -> String {
    let s = ms / 1000;
    let (d, h, m, s) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// The subject Slurm's slurmctld gives the mail about `event` of `rec`.
pub fn subject(rec: &JobRecord, event: Event) -> String {
    let id = match rec.spec.array_task.as_deref() {
        Some(t) => format!("{}_{}({})", t.array_id, t.index, rec.id),
        None => rec.id.to_string(),
    };
    let head = format!("Slurm Job_id={id} Name={}", rec.spec.name);
    let run = rec
        .end
        .zip(rec.start)
        .map_or(0, |(e, s)| e.saturating_sub(s));
    match event {
        Event::Begin => format!(
            "{head} Began, Queued time {}",
            duration(rec.start.unwrap_or(rec.submit).saturating_sub(rec.submit))
        ),
        Event::Requeue => format!("{head} Requeued, Run time {}", duration(run)),
        Event::End => {
            let verb = match rec.state {
                JobState::Completed => "Ended",
                JobState::Failed | JobState::Timeout | JobState::Preempted => "Failed",
                _ => "Ended",
            };
            format!(
                "{head} {verb}, Run time {}, {}, ExitCode {}",
                duration(run),
                rec.state.name(),
                rec.exit_code.unwrap_or(0)
            )
        }
    }
}

/// Whether `to` is a plain mail address or user name: letters, digits and `@._+-`, not
/// starting with `-`.
pub fn is_address(to: &str) -> bool {
    !to.is_empty()
        && !to.starts_with('-')
        && to
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "@._+-".contains(c))
}

/// Sends the mail about `event` of `rec` when the job asked for it and `program` is set; the
/// program runs apart (its end is awaited on a task of its own, never by the caller).
pub fn notify(program: Option<&Path>, rec: &JobRecord, event: Event) {
    if !wanted(rec, event) {
        return;
    }
    let Some(program) = program else {
        tracing::debug!(job = rec.id, "no mail_program: mail not sent");
        return;
    };
    let to = rec
        .spec
        .inert
        .as_deref()
        .and_then(|i| i.mail_user.clone())
        .unwrap_or_else(|| rec.user.clone());
    // The recipient is the user's text on the program's command line: an address only, never
    // an option of the program's.
    if !is_address(&to) {
        tracing::warn!(job = rec.id, "--mail-user is not an address; mail not sent");
        return;
    }
    let subject = subject(rec, event);
    let spawned = tokio::process::Command::new(program)
        .arg("-s")
        .arg(&subject)
        .arg(&to)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match spawned {
        Ok(mut child) => {
            let id = rec.id;
            tokio::spawn(async move {
                match child.wait().await {
                    Ok(s) if s.success() => {}
                    Ok(s) => tracing::warn!(job = id, "mail_program exited with {s}"),
                    Err(e) => tracing::warn!(job = id, "mail_program: {e}"),
                }
            });
        }
        Err(e) => {
            tracing::warn!(job = rec.id, program = %program.display(), "cannot run mail_program: {e}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(types: &str) -> JobRecord {
        let mut spec = batch_proto::JobSpec::new("#!/bin/sh\n", "/w", 1, 60_000);
        spec.name = "run".into();
        spec.inert = Some(Box::new(batch_proto::job::InertOptions {
            mail_type: Some(types.into()),
            ..Default::default()
        }));
        let mut r = JobRecord::submitted(12, 1000, 1000, "alice", spec, 1_000);
        r.start = Some(4_000);
        r
    }

    #[test]
    fn slurms_words_choose_the_mails() {
        assert!(wanted(&rec("BEGIN"), Event::Begin));
        assert!(!wanted(&rec("END"), Event::Begin));
        assert!(wanted(&rec("ALL"), Event::Requeue));
        let mut r = rec("FAIL");
        r.state = JobState::Completed;
        assert!(!wanted(&r, Event::End));
        r.state = JobState::Timeout;
        assert!(wanted(&r, Event::End));
        assert!(!wanted(&rec("NONE"), Event::End));
    }

    #[test]
    fn a_recipient_is_an_address_never_an_option() {
        assert!(is_address("bob@example.org") && is_address("alice"));
        assert!(!is_address("--exec=!sh") && !is_address("a b") && !is_address(""));
    }

    #[test]
    fn subjects_as_slurmctld_writes_them() {
        let mut r = rec("ALL");
        assert_eq!(
            subject(&r, Event::Begin),
            "Slurm Job_id=12 Name=run Began, Queued time 00:00:03"
        );
        r.state = JobState::Failed;
        r.end = Some(65_000);
        r.exit_code = Some(3);
        assert_eq!(
            subject(&r, Event::End),
            "Slurm Job_id=12 Name=run Failed, Run time 00:01:01, FAILED, ExitCode 3"
        );
    }
}
