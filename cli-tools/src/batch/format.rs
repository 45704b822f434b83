//! squeue-style output: job state codes and `-o/--format` strings.
//!
//! A format is literal text with fields `%[.|-][width]letter`, as squeue's `-o`: `.` right-
//! justifies, no flag or `-` left-justifies, and a field longer than its width is truncated
//! (squeue does the same, so columns stay aligned).

use batch_proto::time::{Duration, Time};
use batch_proto::{JobInfo, JobState};

use super::error::SpecError;
use super::escape::shown;
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

/// squeue's default format, column for column: scripts read its fields by position
/// (`awk '{print $8}'` is NODELIST(REASON)), so an evolving job's step is `-o %s` only.
pub const DEFAULT_FORMAT: &str = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R";
/// squeue `--start`'s default format (without its SCHEDNODES column, which batchd has not).
pub const START_FORMAT: &str = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %R";
/// squeue `-l/--long`'s format, as squeue has it (STATE spelt out, TIME_LIMIT).
pub const LONG_FORMAT: &str = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R";

/// squeue's `-O/--Format` field names (lower case) and the `-o` letter each one is.
const LONG_NAMES: [(&str, char); 30] = [
    ("account", 'a'),
    ("arrayjobid", 'F'),
    ("arraytaskid", 'K'),
    ("dependency", 'E'),
    ("endtime", 'e'),
    ("jobarrayid", 'i'),
    ("jobid", 'A'),
    ("name", 'j'),
    ("nodelist", 'N'),
    ("numnodes", 'D'),
    ("partition", 'P'),
    ("priority", 'Q'),
    ("prioritylong", 'Q'),
    ("qos", 'q'),
    ("reason", 'r'),
    ("reasonlist", 'R'),
    ("starttime", 'S'),
    ("state", 'T'),
    ("statecompact", 't'),
    ("submittime", 'V'),
    ("timeleft", 'L'),
    ("timelimit", 'l'),
    ("timeused", 'M'),
    ("userid", 'U'),
    ("username", 'u'),
    ("workdir", 'Z'),
    ("step", 's'),
    ("numcpus", 'C'),
    ("mincpus", 'c'),
    ("minmemory", 'm'),
];

/// The `-O` field names, for help and errors.
pub fn long_names() -> Vec<&'static str> {
    LONG_NAMES.iter().map(|(n, _)| *n).collect()
}

/// How squeue orders jobs' states when sorting by `t`/`T`: its job state numbers (pending,
/// running, suspended, complete, cancelled, failed, timeout, node fail, preempted).
fn state_rank(s: JobState) -> i128 {
    match s {
        JobState::Pending => 0,
        JobState::Running => 1,
        JobState::Completing => 2,
        JobState::Completed => 3,
        JobState::Cancelled => 4,
        JobState::Failed => 5,
        JobState::Timeout => 6,
        JobState::NodeFail => 7,
        JobState::Preempted => 8,
        // Slurm's JOB_DEADLINE comes after JOB_BOOT_FAIL.
        JobState::Deadline => 10,
    }
}

/// One value a listing is sorted by. Text values live in a buffer the caller keeps
/// ([`SortSpec::push_values`]), so that keying 100,000 jobs allocates next to nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortValue {
    /// Numbers, times and states compare as numbers.
    Num(i128),
    /// Everything else as its text: `buf[start..end]`.
    Text(usize, usize),
}

/// A `-S/--sort` list: squeue's `-o` letters, each with `+` (ascending, the default) or `-`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortSpec {
    keys: Vec<(char, bool)>,
}

/// squeue's default order: by partition, then state (pending first), then priority,
/// highest first.
pub const DEFAULT_SORT: &str = "P,t,-p";

impl SortSpec {
    /// Parses `[+|-]letter,...`; `p` (squeue's priority as a fraction) sorts by priority.
    pub fn parse(input: &str) -> Result<SortSpec, SpecError> {
        let mut keys = Vec::new();
        for item in input.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (desc, rest) = match item.strip_prefix('-') {
                Some(r) => (true, r),
                None => (false, item.strip_prefix('+').unwrap_or(item)),
            };
            let mut chars = rest.chars();
            let letter = match (chars.next(), chars.next()) {
                (Some(c), None) if c == 'p' || LETTERS.contains(c) => c,
                _ => {
                    return Err(SpecError::Invalid {
                        what: "sort key",
                        input: item.to_string(),
                        reason: "expected one of the -o letters, e.g. P,t,-p".to_string(),
                    })
                }
            };
            keys.push((letter, desc));
        }
        if keys.is_empty() {
            return Err(SpecError::Invalid {
                what: "sort list",
                input: input.to_string(),
                reason: "no key".to_string(),
            });
        }
        Ok(SortSpec { keys })
    }

    /// How many values each job has.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there is no key (never: [`SortSpec::parse`] refuses an empty list).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Appends the values `job` is sorted by to `keys`, their text to `text` (`tasks`: the
    /// index list of a folded array line).
    pub fn push_values(
        &self,
        job: &JobInfo,
        tasks: Option<&str>,
        now: Time,
        zone: &Zone,
        keys: &mut Vec<SortValue>,
        text: &mut String,
    ) {
        for (letter, _) in &self.keys {
            keys.push(sort_value(job, *letter, tasks, now, zone, text));
        }
    }

    /// The order of `rows` jobs whose values are `keys` ([`SortSpec::len`] per job, text in
    /// `text`): their indices, sorted, jobs with equal values in their given order. Text values
    /// are first replaced by their rank among the column's texts and descending keys negated,
    /// so that the sort compares plain integers: at 100,000 jobs comparing text each time
    /// doubled equeue's formatting time.
    pub fn order(&self, keys: &[SortValue], text: &str, rows: usize) -> Vec<usize> {
        let k = self.keys.len();
        let mut nums = vec![0i128; keys.len()];
        for (c, (_, desc)) in self.keys.iter().enumerate() {
            let col = || (0..rows).map(move |r| keys[r * k + c]);
            let mut ranks: std::collections::BTreeMap<&str, i128> = col()
                .filter_map(|v| match v {
                    SortValue::Text(a, b) => Some((&text[a..b], 0)),
                    SortValue::Num(_) => None,
                })
                .collect();
            // Text sorts after numbers (a column is one or the other).
            for (i, r) in ranks.values_mut().enumerate() {
                *r = i128::from(u64::MAX) + 1 + i as i128;
            }
            for (r, v) in col().enumerate() {
                let n = match v {
                    SortValue::Num(n) => n,
                    SortValue::Text(a, b) => ranks.get(&text[a..b]).copied().unwrap_or(0),
                };
                nums[r * k + c] = if *desc { -n } else { n };
            }
        }
        let key = |r: usize| &nums[r * k..r * k + k];
        let mut order: Vec<usize> = (0..rows).collect();
        if (1..rows).all(|r| key(r - 1) <= key(r)) {
            return order;
        }
        order.sort_unstable_by(|&a, &b| key(a).cmp(key(b)).then(a.cmp(&b)));
        order
    }

    /// Compares two jobs' values, `text` holding their text.
    pub fn compare(&self, a: &[SortValue], b: &[SortValue], text: &str) -> std::cmp::Ordering {
        use SortValue::{Num, Text};
        for ((_, desc), (x, y)) in self.keys.iter().zip(a.iter().zip(b)) {
            let o = match (x, y) {
                (Num(x), Num(y)) => x.cmp(y),
                (Text(s1, e1), Text(s2, e2)) => text[*s1..*e1].cmp(&text[*s2..*e2]),
                (Num(_), Text(..)) => std::cmp::Ordering::Less,
                (Text(..), Num(_)) => std::cmp::Ordering::Greater,
            };
            let o = if *desc { o.reverse() } else { o };
            if o.is_ne() {
                return o;
            }
        }
        std::cmp::Ordering::Equal
    }
}

fn sort_value(
    job: &JobInfo,
    letter: char,
    tasks: Option<&str>,
    now: Time,
    zone: &Zone,
    text: &mut String,
) -> SortValue {
    let n = |v: u64| SortValue::Num(i128::from(v));
    match letter {
        'i' | 'A' => n(job.id),
        'F' => n(job.array.map_or(job.id, |t| t.array_id)),
        'K' => n(job.array.map_or(0, |t| t.index)),
        'D' => n(u64::from(job.nodes)),
        'U' => n(u64::from(job.uid)),
        'Q' | 'p' => SortValue::Num(i128::from(job.priority)),
        'l' => n(job.time_limit),
        'M' => n(time_used(job, now)),
        'L' => n(job.time_limit.saturating_sub(time_used(job, now))),
        'S' => n(shown_start(job).unwrap_or(0)),
        'V' => n(job.submit_time),
        'e' => n(job.end_time.unwrap_or(0)),
        'C' => n(u64::from(cpus(job))),
        'c' => n(u64::from(min_cpus(job))),
        'm' => n(min_memory(job).map_or(0, |(mb, _)| mb)),
        't' | 'T' => SortValue::Num(state_rank(job.state)),
        _ => {
            let start = text.len();
            field(job, letter, tasks, now, zone, text);
            SortValue::Text(start, text.len())
        }
    }
}

/// The index list of array tasks folded into one line, as squeue prints it inside
/// `ID_[...]`: ranges of consecutive indices (`1-3,5`), then the throttle (`%4`).
pub fn fold_indices(indices: &[u64], throttle: Option<u32>) -> String {
    let mut sorted = indices.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if end == start {
            put(&mut out, format_args!("{start}"));
        } else {
            put(&mut out, format_args!("{start}-{end}"));
        }
        i += 1;
    }
    if let Some(t) = throttle {
        put(&mut out, format_args!("%{t}"));
    }
    out
}

/// The fields a brief listing leaves empty ([`batch_proto::ListRequest::brief`]): the work
/// directory and the dependencies. Every other letter reads only what it keeps.
const FULL_ONLY: &str = "ZE";

/// The field letters. `s` is squeue's "node selection plugin" field, meaningless here, so it
/// is free for the step. squeue has a letter for everything; `b` (its generic resources per
/// job, which batchd does not have) is a moldable job's configuration here.
const LETTERS: &str = "iAPjuUtTMlLDRrNSVeZEQsaqKFbCcm";

fn header(letter: char) -> &'static str {
    match letter {
        'i' | 'A' => "JOBID",
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
        'C' => "CPUS",
        'c' => "MIN_CPUS",
        'm' => "MIN_MEMORY",
        _ => "PRIORITY",
    }
}

impl Format {
    /// Parses a format string; an unknown field letter is an error naming it. `%all` is
    /// squeue's every field, each followed by `|`.
    pub fn parse(input: &str) -> Result<Format, SpecError> {
        if input.trim() == "%all" {
            let all: String = LETTERS.chars().map(|l| format!("%{l}|")).collect();
            return Format::parse_letters(&all, LETTERS);
        }
        Format::parse_letters(input, LETTERS)
    }

    /// Parses a format string whose fields are `letters` (einfo's are sinfo's).
    pub fn parse_letters(input: &str, letters: &str) -> Result<Format, SpecError> {
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
            if !letters.contains(letter) {
                return Err(err(format!("unknown field '%{letter}'; known: %{}", {
                    let v: Vec<String> = letters.chars().map(String::from).collect();
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

    /// Parses squeue's `-O/--Format` list: `name[:[.][size][suffix]]`, comma-separated, names
    /// in any case; a field without a size gets 20 columns, left-justified unless `.`; the
    /// suffix is printed after the field. An unknown name is squeue's error.
    pub fn parse_long(input: &str) -> Result<Format, SpecError> {
        let err = |item: &str| SpecError::Invalid {
            what: "job format specification",
            input: item.to_string(),
            reason: format!("known fields: {}", long_names().join(", ")),
        };
        let mut pieces = Vec::new();
        for item in input.split(',').filter(|s| !s.trim().is_empty()) {
            let (name, spec) = match item.split_once(':') {
                Some((n, sp)) => (n.trim(), Some(sp)),
                None => (item.trim(), None),
            };
            let letter = LONG_NAMES
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, l)| *l)
                .ok_or_else(|| err(name))?;
            let (mut width, mut right, mut suffix) = (20, false, "");
            if let Some(sp) = spec {
                let sp = match sp.strip_prefix('.') {
                    Some(r) => {
                        right = true;
                        r
                    }
                    None => sp,
                };
                let digits = sp.len() - sp.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                if digits > 0 {
                    width = sp[..digits].parse::<usize>().map_err(|_| err(item))?;
                } else if right {
                    // squeue: "`.` ... and size must be specified".
                    return Err(err(item));
                }
                suffix = &sp[digits..];
            }
            pieces.push(Piece::Field {
                letter,
                width: Some(width),
                right,
            });
            if !suffix.is_empty() {
                pieces.push(Piece::Text(suffix.to_string()));
            }
        }
        if pieces.is_empty() {
            return Err(err(input));
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

    /// The field letters, in order.
    pub fn letters(&self) -> impl Iterator<Item = char> + '_ {
        self.pieces.iter().filter_map(|p| match p {
            Piece::Field { letter, .. } => Some(*letter),
            Piece::Text(_) => None,
        })
    }

    /// One line with `value` giving each field's text.
    pub fn render_with(&self, value: impl Fn(char, &mut String)) -> String {
        let mut out = String::new();
        self.render_into(&mut out, &mut String::new(), value);
        out
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
        self.write_row_folded(out, scratch, job, None, now, zone);
    }

    /// [`Format::write_row`] for a line that stands for several pending tasks of `job`'s
    /// array: `tasks` is their index list ([`fold_indices`]), shown as squeue does
    /// (`%i` is `ID_[1-3%2]`, `%K` is `1-3%2`).
    pub fn write_row_folded(
        &self,
        out: &mut String,
        scratch: &mut String,
        job: &JobInfo,
        tasks: Option<&str>,
        now: Time,
        zone: &Zone,
    ) {
        self.render_into(out, scratch, |letter, buf| {
            field(job, letter, tasks, now, zone, buf)
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
                    // Every cell escaped: a name or a path is the user's own text.
                    push_cell(out, &shown(scratch), *width, *right);
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

fn field(
    job: &JobInfo,
    letter: char,
    tasks: Option<&str>,
    now: Time,
    zone: &Zone,
    buf: &mut String,
) {
    match letter {
        'i' => match (&job.array, tasks) {
            (Some(t), Some(list)) => put(buf, format_args!("{}_[{list}]", t.array_id)),
            (Some(t), None) => put(buf, format_args!("{}_{}", t.array_id, t.index)),
            (None, _) => put(buf, format_args!("{}", job.id)),
        },
        'A' => put(buf, format_args!("{}", job.id)),
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
        'K' => match (&job.array, tasks) {
            (Some(_), Some(list)) => buf.push_str(list),
            (Some(t), None) => put(buf, format_args!("{}", t.index)),
            (None, _) => buf.push_str("N/A"),
        },
        'F' => match &job.array {
            Some(t) => put(buf, format_args!("{}", t.array_id)),
            None => buf.push_str("N/A"),
        },
        'C' => put(buf, format_args!("{}", cpus(job))),
        'c' => put(buf, format_args!("{}", min_cpus(job))),
        'm' => match min_memory(job) {
            // Slurm's unit: whole gigabytes as `4G`, else megabytes.
            Some((mb, _)) if mb > 0 && mb % 1024 == 0 => put(buf, format_args!("{}G", mb / 1024)),
            Some((mb, _)) => put(buf, format_args!("{mb}M")),
            None => buf.push('0'),
        },
        _ => put(buf, format_args!("{}", job.priority)),
    }
}

/// The CPUs a job asked for, squeue's `%C`: its tasks (`-n`, else one a node) times its CPUs
/// per task (`-c`, else 1). squeue shows a running exclusive job's nodes' CPUs instead; nodes
/// here are whole whatever the count, and the pool's CPU count is not in the listing.
pub fn cpus(job: &JobInfo) -> u32 {
    let r = job.resources.as_ref();
    let tasks = r.and_then(|r| r.ntasks).unwrap_or(job.nodes.max(1));
    tasks.saturating_mul(r.and_then(|r| r.cpus_per_task).unwrap_or(1))
}

/// squeue's `%c`, the CPUs a node must have: CPUs per task times tasks per node (each 1 when
/// not given).
pub fn min_cpus(job: &JobInfo) -> u32 {
    let r = job.resources.as_ref();
    r.and_then(|r| r.cpus_per_task)
        .unwrap_or(1)
        .saturating_mul(r.and_then(|r| r.ntasks_per_node).unwrap_or(1))
}

/// squeue's `%m`, the memory asked for in MiB and whether it is per CPU (`--mem-per-cpu`)
/// rather than per node (`--mem`); `None` when neither was given.
pub fn min_memory(job: &JobInfo) -> Option<(u64, bool)> {
    let r = job.resources.as_ref()?;
    r.mem_per_node
        .map(|m| (m, false))
        .or(r.mem_per_cpu.map(|m| (m, true)))
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::time::fixed_zone;
    use super::*;
    use batch_proto::{DepKind, Dependency, JobShape, PendingReason, StepPhase, StepStatus};

    /// Task `index` of array `array_id`, the array's other facts left at their defaults.
    pub(crate) fn task(array_id: u64, index: u64, throttle: Option<u32>) -> batch_proto::ArrayTask {
        serde_json::from_value(serde_json::json!({
            "array_id": array_id,
            "index": index,
            "throttle": throttle,
        }))
        .unwrap()
    }

    /// A running job of alice's, id 42, 3 nodes (also the queue tests' fixture).
    pub(crate) fn job() -> JobInfo {
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
            stdout: "/home/alice/slurm-42.out".into(),
            stderr: "/home/alice/slurm-42.out".into(),
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
            job_steps: Vec::new(),
            inert: None,
            resources: None,
            slurm_allocations: None,
        }
    }

    #[test]
    fn a_users_text_is_escaped_in_every_cell() {
        let mut j = job();
        j.name = "a\nb".into();
        j.work_dir = "/w/\r\u{1b}[2J".into();
        let f = Format::parse("%j|%.6j|%Z").unwrap();
        assert_eq!(f.row(&j, 0, &fixed_zone(0)), "a\\nb|  a\\nb|/w/\\r\\x1b[2J");
    }

    /// squeue 22.05's default format, `%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R`: the eighth
    /// column is NODELIST(REASON), which scripts read by position.
    #[test]
    fn default_format_matches_squeue_layout() {
        let f = Format::parse(DEFAULT_FORMAT).unwrap();
        assert_eq!(
            f.header(),
            "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)"
        );
        let z = fixed_zone(0);
        let row = f.row(&job(), 1_065_000, &z);
        assert_eq!(
            row,
            "                42     debug a-rather    alice  R       1:05      3 node[001-003]"
        );
        assert_eq!(row.split_whitespace().nth(7), Some("node[001-003]"));
        let mut p = job();
        p.state = JobState::Pending;
        p.node_list = None;
        p.start_time = None;
        p.reason = Some(PendingReason::Resources);
        assert!(f
            .row(&p, 5_000_000, &z)
            .ends_with("PD       0:00      3 (Resources)"));
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
        let f = Format::parse("%.6D %.5s %R").unwrap();
        assert!(
            f.row(&j, 1_065_000, &z)
                .ends_with("     3   2/3 node[001-003]"),
            "{}",
            f.row(&j, 1_065_000, &z)
        );
        assert_eq!(f.header(), " NODES  STEP NODELIST(REASON)");
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
    fn long_format_names_and_sizes() {
        let z = fixed_zone(0);
        let f = Format::parse_long("JobID:.6,name:8|,STATECOMPACT,numnodes:3").unwrap();
        assert_eq!(f.header(), " JOBIDNAME    |ST                  NOD");
        assert_eq!(
            f.row(&job(), 0, &z),
            "    42a-rather|R                   3  "
        );
        let f = Format::parse_long("JobArrayID,ArrayJobID:4,ArrayTaskID:4,ReasonList").unwrap();
        assert_eq!(
            f.header(),
            format!("{:<20}ARRAARRANODELIST(REASON)    ", "JOBID")
        );
        let e = Format::parse_long("jobid,nosuch").unwrap_err().to_string();
        assert!(
            e.starts_with("invalid job format specification 'nosuch'"),
            "{e}"
        );
        assert!(Format::parse_long("jobid:.").is_err());
        assert!(Format::parse_long("").is_err());
        // Every name maps onto a known letter.
        for (_, l) in LONG_NAMES {
            assert!(LETTERS.contains(l), "{l}");
        }
        assert!(!Format::parse_long("workdir").unwrap().brief_suffices());
    }

    fn cmp(s: &SortSpec, x: &JobInfo, y: &JobInfo) -> std::cmp::Ordering {
        let z = fixed_zone(0);
        let (mut kx, mut ky, mut text) = (Vec::new(), Vec::new(), String::new());
        s.push_values(x, None, 0, &z, &mut kx, &mut text);
        s.push_values(y, None, 0, &z, &mut ky, &mut text);
        s.compare(&kx, &ky, &text)
    }

    #[test]
    fn sort_keys_and_order() {
        let mut a = job();
        a.priority = 1;
        let mut b = job();
        b.id = 7;
        b.priority = 5;
        b.state = JobState::Pending;
        let mut c = job();
        c.id = 9;
        c.pool = Some("alpha".into());
        let s = SortSpec::parse(DEFAULT_SORT).unwrap();
        let mut v = [a.clone(), b.clone(), c.clone()];
        v.sort_by(|x, y| cmp(&s, x, y));
        // Pool alpha first, then debug's pending job before its running one.
        assert_eq!(v.iter().map(|j| j.id).collect::<Vec<_>>(), [9, 7, 42]);
        let s = SortSpec::parse("-i").unwrap();
        v.sort_by(|x, y| cmp(&s, x, y));
        assert_eq!(v.iter().map(|j| j.id).collect::<Vec<_>>(), [42, 9, 7]);
        let s = SortSpec::parse("+Q,j").unwrap();
        v.sort_by(|x, y| cmp(&s, x, y));
        assert_eq!(v.iter().map(|j| j.id).collect::<Vec<_>>(), [42, 7, 9]);
        for bad in ["y", "ii", "", "-", "P,,%"] {
            assert!(SortSpec::parse(bad).is_err(), "{bad}");
        }
    }

    /// `order` (integer ranks) agrees with `compare` (text), and keeps ties in given order.
    #[test]
    fn order_by_ranks_is_stable_and_matches_compare() {
        let z = fixed_zone(0);
        let names = ["b", "a", "c", "a", "b", "a"];
        let jobs: Vec<JobInfo> = names
            .iter()
            .enumerate()
            .map(|(k, n)| {
                let mut j = job();
                j.id = k as u64;
                j.name = (*n).into();
                j.priority = (k % 2) as i64;
                j
            })
            .collect();
        for spec in ["j", "-j", "-j,Q", "Q,-j", "t,-p", "-i"] {
            let s = SortSpec::parse(spec).unwrap();
            let (mut keys, mut text) = (Vec::new(), String::new());
            for j in &jobs {
                s.push_values(j, None, 0, &z, &mut keys, &mut text);
            }
            let got = s.order(&keys, &text, jobs.len());
            let mut want: Vec<usize> = (0..jobs.len()).collect();
            want.sort_by(|&a, &b| cmp(&s, &jobs[a], &jobs[b]));
            assert_eq!(got, want, "{spec}");
        }
        let s = SortSpec::parse("j").unwrap();
        let (mut keys, mut text) = (Vec::new(), String::new());
        for j in &jobs {
            s.push_values(j, None, 0, &z, &mut keys, &mut text);
        }
        assert_eq!(s.order(&keys, &text, jobs.len()), [1, 3, 5, 0, 4, 2]);
    }

    #[test]
    fn folded_array_lines() {
        assert_eq!(fold_indices(&[5, 1, 2, 3, 9, 10], Some(4)), "1-3,5,9-10%4");
        assert_eq!(fold_indices(&[0], None), "0");
        let mut j = job();
        j.array = Some(task(40, 1, Some(2)));
        let z = fixed_zone(0);
        let f = Format::parse("%i %K %F %A").unwrap();
        let mut out = String::new();
        f.write_row_folded(&mut out, &mut String::new(), &j, Some("1-3%2"), 0, &z);
        assert_eq!(out, "40_[1-3%2] 1-3%2 40 42");
        assert_eq!(f.row(&j, 0, &z), "40_1 1 40 42");
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
