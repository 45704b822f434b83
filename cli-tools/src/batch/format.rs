//! squeue-style output: job state codes and `-o/--format` strings.
//!
//! A format is literal text with fields `%[.|-][width]letter`, as squeue's `-o`: `.` right-
//! justifies, no flag or `-` left-justifies, and a field longer than its width is truncated
//! (squeue does the same, so columns stay aligned).

use batch_proto::{JobInfo, JobState};
use sched_core::time::{Duration, Time};

use super::error::SpecError;
use super::time::{format_limit, format_opt_timestamp, format_squeue_duration, Zone};

/// Reads a `-t/--states` list: comma-separated codes or names in any case, or `all`.
pub fn parse_states(s: &str) -> Result<Vec<JobState>, SpecError> {
    if s.trim().eq_ignore_ascii_case("all") {
        return Ok(JobState::ALL.to_vec());
    }
    s.split(',')
        .map(|st| {
            st.parse::<JobState>().map_err(|e| SpecError::Invalid {
                what: "job state",
                input: st.to_string(),
                reason: e.to_string(),
            })
        })
        .collect()
}

/// Run time so far (running) or in total (over), as squeue's TIME.
pub fn time_used(job: &JobInfo, now: Time) -> Duration {
    match (job.state, job.start_time, job.end_time) {
        (JobState::Pending, _, _) => 0,
        (_, Some(s), Some(e)) => e.saturating_sub(s),
        (_, Some(s), None) => now.saturating_sub(s),
        _ => 0,
    }
}

/// The start squeue shows: the actual one, or the policy's expected one while pending.
pub fn shown_start(job: &JobInfo) -> Option<Time> {
    job.start_time.or(job.expected_start)
}

/// Why a pending job waits, as squeue words it (`None` when the daemon gives no reason).
pub fn reason(job: &JobInfo) -> String {
    reason_str(job).to_string()
}

fn reason_str(job: &JobInfo) -> &'static str {
    job.reason.map_or("None", |r| r.name())
}

/// One field or piece of literal text of a format.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Text(String),
    Field {
        letter: char,
        width: Option<usize>,
        right: bool,
    },
}

/// A parsed `-o/--format` string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Format {
    pieces: Vec<Piece>,
}

/// squeue's default format, plus STEP before the node list: where each running evolving job
/// is in its scheduled EP is what a user of evolving jobs watches.
pub const DEFAULT_FORMAT: &str = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %.5s %R";
/// squeue `--start`'s default format, plus STEP as in [`DEFAULT_FORMAT`].
pub const START_FORMAT: &str = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %.5s %R";

/// The fields a brief listing leaves empty ([`batch_proto::ListRequest::brief`]): the work
/// directory and the dependencies. Every other letter reads only what it keeps.
const FULL_ONLY: &str = "ZE";

/// The field letters. `s` is squeue's "node selection plugin" field, meaningless here, so it
/// is free for the step. squeue has a letter for everything; `b` (its generic resources per
/// job, which batchd does not have) is a moldable job's configuration here.
const LETTERS: &str = "iPjuUtTMlLDRrNSVeZEQsaqKFb";

fn header(letter: char) -> &'static str {
    match letter {
        'i' => "JOBID",
        'P' => "PARTITION",
        'j' => "NAME",
        'u' => "USER",
        'U' => "UID",
        't' => "ST",
        'T' => "STATE",
        'M' => "TIME",
        'l' => "TIME_LIMIT",
        'L' => "TIME_LEFT",
        'D' => "NODES",
        'R' => "NODELIST(REASON)",
        'r' => "REASON",
        'N' => "NODELIST",
        'S' => "START_TIME",
        'V' => "SUBMIT_TIME",
        'e' => "END_TIME",
        'Z' => "WORK_DIR",
        'E' => "DEPENDENCY",
        's' => "STEP",
        'a' => "ACCOUNT",
        'q' => "QOS",
        'K' => "ARRAY_TASK_ID",
        'F' => "ARRAY_JOB_ID",
        'b' => "CONFIG",
        _ => "PRIORITY",
    }
}

impl Format {
    /// Parses a format string; an unknown field letter is an error naming it.
    pub fn parse(input: &str) -> Result<Format, SpecError> {
        let err = |reason: String| SpecError::Invalid {
            what: "format",
            input: input.to_string(),
            reason,
        };
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut chars = input.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                text.push(c);
                continue;
            }
            if chars.peek() == Some(&'%') {
                chars.next();
                text.push('%');
                continue;
            }
            let mut right = false;
            match chars.peek() {
                Some('.') => {
                    right = true;
                    chars.next();
                }
                Some('-') => {
                    chars.next();
                }
                _ => {}
            }
            let mut digits = String::new();
            while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                digits.push(*d);
                chars.next();
            }
            let width = if digits.is_empty() {
                None
            } else {
                Some(
                    digits
                        .parse::<usize>()
                        .map_err(|_| err(format!("width '{digits}'")))?,
                )
            };
            let letter = chars
                .next()
                .ok_or_else(|| err("ends inside a field".to_string()))?;
            if !LETTERS.contains(letter) {
                return Err(err(format!("unknown field '%{letter}'; known: %{}", {
                    let v: Vec<String> = LETTERS.chars().map(String::from).collect();
                    v.join(" %")
                })));
            }
            if !text.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut text)));
            }
            pieces.push(Piece::Field {
                letter,
                width,
                right,
            });
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Ok(Format { pieces })
    }

    /// Whether a brief listing has every field this format shows: then equeue asks for one,
    /// a third of the bytes to send, encode and parse at 100,000 jobs.
    pub fn brief_suffices(&self) -> bool {
        self.pieces.iter().all(|p| match p {
            Piece::Field { letter, .. } => !FULL_ONLY.contains(*letter),
            Piece::Text(_) => true,
        })
    }

    /// The header line.
    pub fn header(&self) -> String {
        let mut out = String::new();
        self.render_into(&mut out, &mut String::new(), |letter, buf| {
            buf.push_str(header(letter))
        });
        out
    }

    /// One job's line; `now` gives running jobs' TIME.
    pub fn row(&self, job: &JobInfo, now: Time, zone: &Zone) -> String {
        let mut out = String::new();
        self.write_row(&mut out, &mut String::new(), job, now, zone);
        out
    }

    /// Appends one job's line to `out`, with `scratch` as reusable field space: listing
    /// 100,000 jobs then allocates next to nothing per row.
    pub fn write_row(
        &self,
        out: &mut String,
        scratch: &mut String,
        job: &JobInfo,
        now: Time,
        zone: &Zone,
    ) {
        self.render_into(out, scratch, |letter, buf| {
            field(job, letter, now, zone, buf)
        });
    }

    fn render_into(
        &self,
        out: &mut String,
        scratch: &mut String,
        value: impl Fn(char, &mut String),
    ) {
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Field {
                    letter,
                    width,
                    right,
                } => {
                    scratch.clear();
                    value(*letter, scratch);
                    push_cell(out, scratch, *width, *right);
                }
            }
        }
    }
}

/// `v` cut or padded to `width` characters.
fn push_cell(out: &mut String, v: &str, width: Option<usize>, right: bool) {
    let Some(w) = width else {
        out.push_str(v);
        return;
    };
    let n = if v.is_ascii() {
        v.len()
    } else {
        v.chars().count()
    };
    if n >= w {
        let end = v.char_indices().nth(w).map_or(v.len(), |(i, _)| i);
        out.push_str(&v[..end]);
        return;
    }
    let pad = w - n;
    if right {
        out.extend(std::iter::repeat_n(' ', pad));
        out.push_str(v);
    } else {
        out.push_str(v);
        out.extend(std::iter::repeat_n(' ', pad));
    }
}

/// Formats into `buf`; writing into a String cannot fail.
fn put(buf: &mut String, args: std::fmt::Arguments<'_>) {
    use std::fmt::Write as _;
    let _ = buf.write_fmt(args);
}

fn field(job: &JobInfo, letter: char, now: Time, zone: &Zone, buf: &mut String) {
    match letter {
        'i' => match &job.array {
            Some(t) => put(buf, format_args!("{}_{}", t.array_id, t.index)),
            None => put(buf, format_args!("{}", job.id)),
        },
        'P' => buf.push_str(job.pool.as_deref().unwrap_or("(any)")),
        'j' => buf.push_str(&job.name),
        'u' => buf.push_str(&job.user),
        'U' => put(buf, format_args!("{}", job.uid)),
        't' => buf.push_str(job.state.code()),
        'T' => buf.push_str(job.state.name()),
        'M' => buf.push_str(&format_squeue_duration(time_used(job, now))),
        'l' => buf.push_str(&format_limit(Some(job.time_limit))),
        'L' => buf.push_str(&format_squeue_duration(
            job.time_limit.saturating_sub(time_used(job, now)),
        )),
        'D' => put(buf, format_args!("{}", job.nodes)),
        'R' => match (&job.node_list, job.state) {
            (Some(list), st) if st != JobState::Pending && !list.is_empty() => buf.push_str(list),
            _ => put(buf, format_args!("({})", reason_str(job))),
        },
        'r' => buf.push_str(reason_str(job)),
        'N' => buf.push_str(job.node_list.as_deref().unwrap_or("")),
        'S' => buf.push_str(&format_opt_timestamp(shown_start(job), zone)),
        'V' => buf.push_str(&format_opt_timestamp(Some(job.submit_time), zone)),
        'e' => buf.push_str(&format_opt_timestamp(job.end_time, zone)),
        'Z' => buf.push_str(&job.work_dir),
        'E' if job.dependencies.is_empty() => buf.push_str("(null)"),
        'E' => {
            for (i, d) in job.dependencies.iter().enumerate() {
                if i > 0 {
                    buf.push(',');
                }
                put(buf, format_args!("{d}"));
            }
        }
        's' => match &job.step {
            Some(st) => buf.push_str(&st.short()),
            None => buf.push('-'),
        },
        // NODESxTIME_LIMIT: chosen (running, over) or expected by the plan (pending).
        'b' => match &job.chosen {
            Some(c) => put(
                buf,
                format_args!("{}x{}", c.nodes, format_squeue_duration(c.walltime)),
            ),
            None => buf.push('-'),
        },
        'a' => buf.push_str(job.account.as_deref().unwrap_or("(null)")),
        'q' => buf.push_str(job.qos.as_deref().unwrap_or("(null)")),
        // squeue's array fields: N/A for a job that is not an array task.
        'K' => match &job.array {
            Some(t) => put(buf, format_args!("{}", t.index)),
            None => buf.push_str("N/A"),
        },
        'F' => match &job.array {
            Some(t) => put(buf, format_args!("{}", t.array_id)),
            None => buf.push_str("N/A"),
        },
        _ => put(buf, format_args!("{}", job.priority)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::time::fixed_zone;
    use super::*;
    use batch_proto::{DepKind, Dependency, JobShape, PendingReason, StepPhase, StepStatus};

    fn job() -> JobInfo {
        JobInfo {
            id: 42,
            name: "a-rather-long-name".into(),
            uid: 1000,
            user: "alice".into(),
            pool: Some("debug".into()),
            state: JobState::Running,
            reason: None,
            detail: None,
            nodes: 3,
            node_list: Some("node[001-003]".into()),
            submit_time: 1_000_000,
            start_time: Some(1_000_000),
            end_time: None,
            expected_start: None,
            time_limit: 3_600_000,
            exit_code: None,
            signal: None,
            work_dir: "/home/alice".into(),
            stdout: "/home/alice/esched-42.out".into(),
            stderr: "/home/alice/esched-42.out".into(),
            shape: JobShape::Rigid {
                nodes: 3,
                time_limit: 3_600_000,
            },
            begin: None,
            dependencies: vec![],
            priority: 7,
            held: false,
            args: vec![],
            scheduled_ep: None,
            step: None,
            chosen: None,
            array: None,
            account: None,
            qos: None,
            warn_signal: None,
        }
    }

    #[test]
    fn default_format_matches_squeue_layout() {
        let f = Format::parse(DEFAULT_FORMAT).unwrap();
        assert_eq!(
            f.header(),
            "             JOBID PARTITION     NAME     USER ST       TIME  NODES  STEP NODELIST(REASON)"
        );
        let z = fixed_zone(0);
        assert_eq!(
            f.row(&job(), 1_065_000, &z),
            "                42     debug a-rather    alice  R       1:05      3     - node[001-003]"
        );
        let mut p = job();
        p.state = JobState::Pending;
        p.node_list = None;
        p.start_time = None;
        p.reason = Some(PendingReason::Resources);
        assert!(f
            .row(&p, 5_000_000, &z)
            .ends_with("PD       0:00      3     - (Resources)"));
    }

    #[test]
    fn step_of_a_running_evolving_job() {
        let mut j = job();
        j.step = Some(StepStatus {
            index: 2,
            count: 3,
            nodes: 4,
            phase: StepPhase::Waiting,
            ends: 2_000_000,
            next_nodes: Some(1),
            chosen_release: None,
        });
        let z = fixed_zone(0);
        let f = Format::parse(DEFAULT_FORMAT).unwrap();
        assert!(
            f.row(&j, 1_065_000, &z)
                .ends_with("      3   2/3 node[001-003]"),
            "{}",
            f.row(&j, 1_065_000, &z)
        );
        let f = Format::parse(START_FORMAT).unwrap();
        assert!(f.header().ends_with("  NODES  STEP NODELIST(REASON)"));
        assert!(f.row(&j, 0, &z).ends_with("   2/3 node[001-003]"));
        assert_eq!(
            Format::parse("%s|%-6s|").unwrap().row(&j, 0, &z),
            "2/3|2/3   |"
        );
        assert_eq!(Format::parse("%s").unwrap().header(), "STEP");
        assert_eq!(Format::parse("%s").unwrap().row(&job(), 0, &z), "-");
    }

    #[test]
    fn widths_flags_and_literals() {
        let f = Format::parse("%-6i|%.4t|%j%%|%5D|%l|%L").unwrap();
        let z = fixed_zone(0);
        assert_eq!(f.header(), "JOBID |  ST|NAME%|NODES|TIME_LIMIT|TIME_LEFT");
        assert_eq!(
            f.row(&job(), 1_065_000, &z),
            "42    |   R|a-rather-long-name%|3    |1:00:00|58:55"
        );
    }

    #[test]
    fn times_and_misc_fields() {
        let f = Format::parse("%S %V %e %Z %E %U %T %r %N %Q").unwrap();
        let z = fixed_zone(0);
        assert_eq!(
            f.row(&job(), 2_000_000, &z),
            "1970-01-01T00:16:40 1970-01-01T00:16:40 N/A /home/alice (null) 1000 RUNNING None \
             node[001-003] 7"
        );
        let mut p = job();
        p.state = JobState::Pending;
        p.start_time = None;
        p.expected_start = Some(3_000_000);
        p.dependencies = vec![
            Dependency::On {
                kind: DepKind::AfterOk,
                job: 3,
            },
            Dependency::Singleton,
        ];
        let f = Format::parse("%S|%E|%R").unwrap();
        assert_eq!(
            f.row(&p, 2_000_000, &z),
            "1970-01-01T00:50:00|afterok:3,singleton|(None)"
        );
    }

    /// Only `%Z` and `%E` need the full listing; the default and `--start` formats do not.
    #[test]
    fn brief_suffices_unless_work_dir_or_dependencies_show() {
        for f in [
            DEFAULT_FORMAT,
            START_FORMAT,
            "%i %s %S %R %r %N %V %e %Q %U %T %l %L",
            "",
        ] {
            assert!(Format::parse(f).unwrap().brief_suffices(), "{f}");
        }
        for f in ["%Z", "%i %.20E", "%%Z %Z", "%-8Z|%i"] {
            assert!(!Format::parse(f).unwrap().brief_suffices(), "{f}");
        }
        // Literal text naming the letters is not a field.
        assert!(Format::parse("%%Z %%E").unwrap().brief_suffices());
    }

    /// What a brief listing keeps is all the default and `--start` formats read: the rows of a
    /// job with the left-out fields blanked are the rows of the full job.
    #[test]
    fn default_rows_are_the_same_from_a_brief_job() {
        let z = fixed_zone(0);
        let mut full = job();
        full.dependencies = vec![Dependency::Singleton];
        full.detail = Some("x".into());
        full.args = vec!["a".into()];
        full.step = Some(StepStatus {
            index: 1,
            count: 2,
            nodes: 3,
            phase: StepPhase::Running,
            ends: 2_000_000,
            next_nodes: Some(1),
            chosen_release: None,
        });
        let mut pending = full.clone();
        pending.state = JobState::Pending;
        pending.start_time = None;
        pending.node_list = None;
        pending.step = None;
        pending.reason = Some(PendingReason::Priority);
        pending.expected_start = Some(4_000_000);
        for j in [full, pending] {
            let mut brief = j.clone();
            brief.work_dir.clear();
            brief.stdout.clear();
            brief.stderr.clear();
            brief.args.clear();
            brief.dependencies.clear();
            brief.detail = None;
            brief.scheduled_ep = None;
            for f in [DEFAULT_FORMAT, START_FORMAT] {
                let f = Format::parse(f).unwrap();
                assert_eq!(f.row(&brief, 2_500_000, &z), f.row(&j, 2_500_000, &z));
            }
            let f = Format::parse("%Z %E").unwrap();
            assert_ne!(f.row(&brief, 0, &z), f.row(&j, 0, &z));
        }
    }

    #[test]
    fn bad_formats() {
        assert!(Format::parse("%y")
            .unwrap_err()
            .to_string()
            .contains("unknown field '%y'"));
        assert!(Format::parse("%.18").is_err());
        assert!(Format::parse("%").is_err());
    }

    #[test]
    fn states() {
        assert_eq!(
            parse_states("pd,R").unwrap(),
            vec![JobState::Pending, JobState::Running]
        );
        assert_eq!(parse_states("all").unwrap().len(), JobState::ALL.len());
        assert_eq!(parse_states("timeout").unwrap(), vec![JobState::Timeout]);
        assert!(parse_states("XX")
            .unwrap_err()
            .to_string()
            .starts_with("invalid job state 'XX'"));
    }

    #[test]
    fn time_used_of_finished_and_pending() {
        let mut j = job();
        j.state = JobState::Completed;
        j.end_time = Some(1_010_000);
        assert_eq!(time_used(&j, 9_999_999), 10_000);
        j.state = JobState::Pending;
        assert_eq!(time_used(&j, 9_999_999), 0);
    }
}
