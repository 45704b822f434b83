//! A schedule written as a Standard Workload Format trace.
//!
//! Field numbers and meanings are the Parallel Workloads Archive's SWF definition (version 2.2);
//! `-1` is unknown. A record is what really happened: field 3 is the wait (start − submit),
//! field 4 the run time, field 5 the processors allocated, field 8 those requested, field 9
//! the requested time, field 11 the status. esim's reader maps such a trace back to the same
//! jobs (size = field 5, run time = min(field 4, field 9), estimate = max(field 4, field 9)),
//! so a written schedule replays to the same starts under a deterministic policy.

use std::io::{self, Write};

/// Field 11: how a job ended (the SWF definition's codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// 1: it completed.
    Completed,
    /// 0: it failed (in esched: killed at its time limit, or a non-zero exit).
    Failed,
    /// 5: it was cancelled (killed by the policy or a user).
    Cancelled,
}

impl Status {
    /// The SWF code.
    pub fn code(self) -> i8 {
        match self {
            Status::Completed => 1,
            Status::Failed => 0,
            Status::Cancelled => 5,
        }
    }
}

/// One job line. Times in seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Field 1.
    pub id: u64,
    /// Field 2: submission, seconds from the trace's origin.
    pub submit: u64,
    /// Field 3: start − submit.
    pub wait: u64,
    /// Field 4: how long it ran.
    pub run: u64,
    /// Field 5: processors (nodes) allocated.
    pub allocated: u32,
    /// Field 8: processors (nodes) requested.
    pub requested: u32,
    /// Field 9: the requested time, when known.
    pub requested_time: Option<u64>,
    /// Field 11.
    pub status: Status,
    /// Field 12, when known.
    pub user: Option<u32>,
}

/// The header: `; Key: value` lines of the SWF definition.
#[derive(Clone, Debug, Default)]
pub struct Header {
    /// `Computer`: what produced the trace (e.g. `esim 0.1.0, policy fcfs`).
    pub computer: String,
    /// `Note` lines: what the schedule is (input trace, parameters, clock origin).
    pub notes: Vec<String>,
    /// `UnixStartTime`: the epoch second of time 0, when the times are real ones.
    pub unix_start: Option<i64>,
    /// `MaxNodes` and `MaxProcs`: the machine's size (esched counts nodes as processors).
    pub max_nodes: Option<u32>,
    /// `MaxJobs` and `MaxRecords`.
    pub jobs: usize,
}

/// Writes `header` and `records` as an SWF trace.
pub fn write<W: Write>(mut w: W, header: &Header, records: &[Record]) -> io::Result<()> {
    writeln!(w, "; Version: 2.2")?;
    writeln!(w, "; Computer: {}", one_line(&header.computer))?;
    writeln!(
        w,
        "; Conversion: written by esched; field 3 = start - submit, field 4 = run time, \
         field 5 = nodes allocated, field 8 = nodes requested, field 9 = requested time"
    )?;
    writeln!(w, "; MaxJobs: {}", header.jobs)?;
    writeln!(w, "; MaxRecords: {}", header.jobs)?;
    if let Some(t) = header.unix_start {
        writeln!(w, "; UnixStartTime: {t}")?;
    }
    if let Some(n) = header.max_nodes {
        writeln!(w, "; MaxNodes: {n}")?;
        writeln!(w, "; MaxProcs: {n}")?;
    }
    for note in &header.notes {
        writeln!(w, "; Note: {}", one_line(note))?;
    }
    for r in records {
        let opt = |v: Option<u64>| v.map_or(-1, |v| v as i64);
        writeln!(
            w,
            "{} {} {} {} {} -1 -1 {} {} -1 {} {} -1 -1 -1 -1 -1 -1",
            r.id,
            r.submit,
            r.wait,
            r.run,
            r.allocated,
            r.requested,
            opt(r.requested_time),
            r.status.code(),
            opt(r.user.map(u64::from)),
        )?;
    }
    w.flush()
}

/// A header value on one line (a newline would end the comment).
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// Seconds of a millisecond count, to the nearest second.
pub fn secs(ms: u64) -> u64 {
    (ms + 500) / 1000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_have_eighteen_fields_and_the_header_is_comments() {
        let mut out = Vec::new();
        let header = Header {
            computer: "esim test\nsecond line".into(),
            notes: vec!["trace x".into()],
            unix_start: None,
            max_nodes: Some(8),
            jobs: 1,
        };
        let r = Record {
            id: 3,
            submit: 10,
            wait: 5,
            run: 7,
            allocated: 2,
            requested: 2,
            requested_time: Some(60),
            status: Status::Failed,
            user: None,
        };
        write(&mut out, &header, &[r]).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.contains(&"; Computer: esim test second line"));
        assert!(lines.contains(&"; MaxProcs: 8"));
        let jobs: Vec<&&str> = lines.iter().filter(|l| !l.starts_with(';')).collect();
        assert_eq!(jobs.len(), 1);
        let f: Vec<&str> = jobs[0].split_whitespace().collect();
        assert_eq!(f.len(), 18);
        assert_eq!(&f[..5], ["3", "10", "5", "7", "2"]);
        assert_eq!((f[7], f[8], f[10], f[11]), ("2", "60", "0", "-1"));
    }

    #[test]
    fn seconds_round_to_the_nearest() {
        assert_eq!((secs(1499), secs(1500), secs(0)), (1, 2, 0));
    }
}
