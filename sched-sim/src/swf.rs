//! Reader for the Standard Workload Format (SWF) of the Parallel Workloads Archive.
//!
//! One job per line, 18 whitespace-separated numeric fields (`-1` = unknown); lines starting
//! with `;` are header comments, of which `MaxNodes` and `MaxProcs` are read. Files may be
//! plain or gzip-compressed: gzip is detected by its magic bytes (`1f 8b`), whatever the name.
//! The file is read line by line, so a large trace is never held as text; a compressed one
//! is inflated by a second thread a few blocks ahead of the parser, and a large plain one is
//! read as two halves by two threads.
//!
//! # Field mapping
//!
//! The mapping is the normalisation of the reference schedules (docs/results.md), so that
//! esim and the reference run the very same jobs and can be compared job by job (fields are
//! numbered from 1 as in the SWF definition; non-integer values are rounded):
//!
//! - **size** `p` = field 5 (allocated processors) if > 0, else field 8 (requested
//!   processors). Each processor is one node of the simulated pool.
//! - **run time** = `max(1, min(f4, f9))` when `f9 > 0`, else `max(1, f4)`: the job runs for
//!   its actual run time and is killed at its requested time (so it never runs past it).
//! - **estimate** (the walltime the policy sees) = `max(f4, f9, 1)` with the original f4 and
//!   f9: the requested time, or the actual run time if none was requested (and, for the jobs
//!   that ran longer than they asked, what they really held the machine for).
//! - **submit** = field 2, **user** = field 12 (0 when unknown), **id** = field 1.
//! - Seconds become milliseconds.
//!
//! Jobs are skipped, and counted per reason, when their size is unknown (`p ≤ 0`), their run
//! time is unknown (`f4 < 0`: in SDSC-SP2 these are jobs cancelled before they ran), their
//! submit time is unknown, or their size exceeds the machine. The reference instead runs the
//! jobs of unknown run time as 1 s jobs; its `.norm.swf.gz` files already carry that choice
//! (f4 = 1), so replaying them gives the exact job set of the reference.
//!
//! # Machine size
//!
//! `MaxProcs` if the header gives it, else `MaxNodes`: job sizes in SWF count processors
//! (fields 5 and 8), so the machine must be counted in processors too for "size exceeds the
//! machine" to mean anything. On the SP2 traces both are equal. A caller may override it.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use flate2::read::MultiGzDecoder;
use sched_core::request::JobId;
use sched_core::time::{Duration, Time, SECOND};

/// Number of fields of an SWF job line.
pub const FIELDS: usize = 18;

/// A trace that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum SwfError {
    /// The file cannot be opened or read.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said (shown in the message, so not also a `source`).
        error: std::io::Error,
    },
    /// A job line that is not 18 numbers.
    #[error("{}:{line}: {reason}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// No machine size in the header and none given.
    #[error("{}: no MaxProcs or MaxNodes header line; give the machine size explicitly", path.display())]
    NoMachineSize {
        /// The file.
        path: PathBuf,
    },
}

/// One job as the simulator runs it, after the mapping described in the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwfJob {
    /// Field 1.
    pub id: JobId,
    /// Field 2, in ms.
    pub submit: Time,
    /// Nodes (processors) it needs.
    pub nodes: u32,
    /// How long it really runs, in ms (never more than `walltime`).
    pub runtime: Duration,
    /// The requested time the policy sees, in ms.
    pub walltime: Duration,
    /// Field 12, 0 when unknown.
    pub user: u32,
    /// 1-based line number in the file, for messages.
    pub line: usize,
}

/// Why a job line was not turned into a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SkipReason {
    /// Neither allocated nor requested processors are known.
    UnknownSize,
    /// The run time (field 4) is unknown.
    UnknownRuntime,
    /// The submit time (field 2) is unknown.
    UnknownSubmit,
    /// More processors than the machine has.
    TooLarge,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SkipReason::UnknownSize => "size unknown (fields 5 and 8 ≤ 0)",
            SkipReason::UnknownRuntime => "run time unknown (field 4 < 0)",
            SkipReason::UnknownSubmit => "submit time unknown (field 2 < 0)",
            SkipReason::TooLarge => "larger than the machine",
        })
    }
}

/// Jobs skipped, per reason.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Skipped {
    /// Size unknown.
    pub unknown_size: usize,
    /// Run time unknown.
    pub unknown_runtime: usize,
    /// Submit time unknown.
    pub unknown_submit: usize,
    /// Larger than the machine.
    pub too_large: usize,
}

impl Skipped {
    /// All skipped jobs.
    pub fn total(&self) -> usize {
        self.unknown_size + self.unknown_runtime + self.unknown_submit + self.too_large
    }

    fn count(&mut self, r: SkipReason) {
        *self.slot(r) += 1;
    }

    fn slot(&mut self, r: SkipReason) -> &mut usize {
        match r {
            SkipReason::UnknownSize => &mut self.unknown_size,
            SkipReason::UnknownRuntime => &mut self.unknown_runtime,
            SkipReason::UnknownSubmit => &mut self.unknown_submit,
            SkipReason::TooLarge => &mut self.too_large,
        }
    }

    /// `(reason, count)` for every reason that skipped at least one job.
    pub fn reasons(&self) -> Vec<(SkipReason, usize)> {
        [
            (SkipReason::UnknownSize, self.unknown_size),
            (SkipReason::UnknownRuntime, self.unknown_runtime),
            (SkipReason::UnknownSubmit, self.unknown_submit),
            (SkipReason::TooLarge, self.too_large),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect()
    }
}

/// The `;` header values esim uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// `MaxNodes`.
    pub max_nodes: Option<u32>,
    /// `MaxProcs`.
    pub max_procs: Option<u32>,
}

impl Header {
    /// The machine size the header implies: `MaxProcs`, else `MaxNodes` (see module docs).
    pub fn machine_size(&self) -> Option<u32> {
        self.max_procs.or(self.max_nodes).filter(|&n| n > 0)
    }
}

/// How to read a trace.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Machine size; overrides the header's.
    pub nodes: Option<u32>,
    /// Keep only the first `limit` jobs that are kept (in file order).
    pub limit: Option<usize>,
}

/// A trace read and mapped.
#[derive(Clone, Debug)]
pub struct Trace {
    /// Where it came from.
    pub path: PathBuf,
    /// The header values.
    pub header: Header,
    /// The machine size used (given, or from the header).
    pub nodes: u32,
    /// The jobs kept, in file order.
    pub jobs: Vec<SwfJob>,
    /// The jobs skipped, per reason.
    pub skipped: Skipped,
    /// Job lines read (kept + skipped, before any limit).
    pub lines: usize,
}

impl Trace {
    /// Logs one warning line per skip reason (not one per job).
    pub fn warn_skipped(&self) {
        for (reason, n) in self.skipped.reasons() {
            tracing::warn!("{}: skipped {n} job(s): {reason}", self.path.display());
        }
    }
}

/// Reads the SWF file at `path`, plain or gzip.
///
/// A compressed trace is inflated by a second thread, a block ahead of the parser: inflating
/// is a third of reading a trace, and a replay's whole run is often not much longer than its
/// reading (a quarter of a second for KTH-SP2). A plain regular file of a mebibyte or more is
/// read as two halves by two threads.
pub fn read_path(path: &Path, opts: &ReadOptions) -> Result<Trace, SwfError> {
    let io = |error| SwfError::Io {
        path: path.to_path_buf(),
        error,
    };
    let file = File::open(path).map_err(io)?;
    let mut raw = BufReader::with_capacity(BLOCK, &file);
    let gz = raw.fill_buf().map_err(io)?.starts_with(&[0x1f, 0x8b]);
    if !gz {
        // Not a pipe or a device: their sizes say nothing, and they cannot be read twice.
        #[cfg(unix)]
        {
            let meta = file.metadata().map_err(io)?;
            if meta.is_file() && meta.len() >= SPLIT_MIN {
                let lines = read_halves(raw, path, meta.len())?;
                return trace_of(lines, path, opts);
            }
        }
        return read(raw, path, opts);
    }
    std::thread::scope(|scope| {
        // A few blocks in flight; the parser hands each block back to be refilled.
        let (full_tx, full_rx) = mpsc::sync_channel(4);
        let (empty_tx, empty_rx) = mpsc::channel();
        scope.spawn(move || inflate_blocks(MultiGzDecoder::new(raw), &full_tx, &empty_rx));
        // When the parser stops early (a malformed line), dropping its `Blocks` ends the
        // inflater at its next send.
        read(Blocks::new(full_rx, empty_tx), path, opts)
    })
}

/// The size from which a plain trace is read as two halves, one per thread: below it, a
/// thread's start is not worth it (a megabyte is about 8,000 lines, a millisecond's reading).
const SPLIT_MIN: u64 = 1 << 20;

/// Reads the plain trace of `len` bytes that `head` reads (not yet consumed) as two halves in
/// parallel: a second thread reads from the first line that begins after the middle, this one
/// up to it. Parsing is nearly all of reading a plain trace, so that
/// halves its time on two cores; the lines, their numbers and the first error are those of one
/// pass, and neither half is held whole as text. Both read the one open file, each at its own
/// position; with no second thread to be had (a process limit), one pass.
#[cfg(unix)]
fn read_halves(head: BufReader<&File>, path: &Path, len: u64) -> Result<Lines, SwfError> {
    let file: &File = head.get_ref();
    let io = |error| SwfError::Io {
        path: path.to_path_buf(),
        error,
    };
    let middle = len / 2;
    let mut tail = BufReader::with_capacity(BLOCK, ReadAt { file, pos: middle });
    // The rest of the line the middle falls in belongs to the first half.
    let rest = tail.skip_until(b'\n').map_err(io)?;
    let boundary = middle + rest as u64;
    std::thread::scope(|scope| {
        let spawned =
            std::thread::Builder::new().spawn_scoped(scope, move || read_lines(tail, path));
        let Ok(tail) = spawned else {
            return read_lines(head, path);
        };
        let first = read_lines(head.take(boundary), path);
        // A panic while reading the second half is this thread's.
        let second = tail
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        let mut lines = first?;
        match second {
            Ok(later) => lines.append(later),
            // The first error of the file: the first half read without one.
            Err(SwfError::Malformed { path, line, reason }) => {
                return Err(SwfError::Malformed {
                    path,
                    line: line + lines.count,
                    reason,
                })
            }
            Err(e) => return Err(e),
        }
        Ok(lines)
    })
}

/// A reader of `file` from `pos` on by positioned reads, which leave the file's own offset
/// alone: the two halves of [`read_halves`] read the one open file side by side.
#[cfg(unix)]
struct ReadAt<'f> {
    file: &'f File,
    pos: u64,
}

#[cfg(unix)]
impl Read for ReadAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = std::os::unix::fs::FileExt::read_at(self.file, buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Size of the blocks read from a trace file or inflated from it.
const BLOCK: usize = 256 * 1024;

/// Fills blocks from `source` and sends them until the end of it, the first error, or the
/// receiver's leaving.
fn inflate_blocks(
    mut source: impl Read,
    full: &mpsc::SyncSender<io::Result<Vec<u8>>>,
    empty: &mpsc::Receiver<Vec<u8>>,
) {
    loop {
        let mut block = empty.try_recv().unwrap_or_default();
        block.resize(BLOCK, 0);
        let mut filled = 0;
        while filled < BLOCK {
            match source.read(&mut block[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = full.send(Err(e));
                    return;
                }
            }
        }
        block.truncate(filled);
        if filled == 0 || full.send(Ok(block)).is_err() {
            return;
        }
    }
}

/// A `BufRead` over the blocks another thread sends, in order; the end of the stream is the
/// sender's leaving.
struct Blocks {
    full: mpsc::Receiver<io::Result<Vec<u8>>>,
    empty: mpsc::Sender<Vec<u8>>,
    block: Vec<u8>,
    pos: usize,
}

impl Blocks {
    fn new(full: mpsc::Receiver<io::Result<Vec<u8>>>, empty: mpsc::Sender<Vec<u8>>) -> Self {
        Blocks {
            full,
            empty,
            block: Vec::new(),
            pos: 0,
        }
    }
}

impl Read for Blocks {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Blocks {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos >= self.block.len() {
            match self.full.recv() {
                Ok(Ok(next)) => {
                    let used = std::mem::replace(&mut self.block, next);
                    // The inflater may have finished already; the block is then dropped.
                    let _ = self.empty.send(used);
                    self.pos = 0;
                }
                Ok(Err(e)) => return Err(e),
                // The sender left: the end of the stream (a panic there is re-raised when
                // the scope joins it).
                Err(mpsc::RecvError) => break,
            }
        }
        Ok(&self.block[self.pos.min(self.block.len())..])
    }

    fn consume(&mut self, amt: usize) {
        self.pos += amt;
    }
}

/// Reads an SWF trace from `reader`; `path` names it in messages.
pub fn read<R: BufRead>(reader: R, path: &Path, opts: &ReadOptions) -> Result<Trace, SwfError> {
    let lines = read_lines(reader, path)?;
    trace_of(lines, path, opts)
}

/// The lines of a trace, or of a stretch of one, as read.
struct Lines {
    header: Header,
    /// The jobs of the job lines, in order, but those skipped (counted in `skipped`; not yet
    /// those larger than the machine, whose size the header may give on a later line).
    jobs: Vec<SwfJob>,
    skipped: Skipped,
    /// Lines read, of any kind.
    count: usize,
}

impl Lines {
    /// Appends the lines that follow these; `later` numbered its lines from 1.
    fn append(&mut self, mut later: Lines) {
        for job in &mut later.jobs {
            job.line += self.count;
        }
        self.jobs.append(&mut later.jobs);
        for (reason, n) in later.skipped.reasons() {
            *self.skipped.slot(reason) += n;
        }
        self.count += later.count;
        // A header line read later overrides an earlier one, as in one pass.
        self.header.max_nodes = later.header.max_nodes.or(self.header.max_nodes);
        self.header.max_procs = later.header.max_procs.or(self.header.max_procs);
    }
}

/// Reads the lines of `reader` to its end, numbered from 1; `path` names it in messages.
fn read_lines<R: BufRead>(reader: R, path: &Path) -> Result<Lines, SwfError> {
    let mut header = Header::default();
    // Jobs kept as they are read, not as `Result`s sorted out later: a replay's memory is
    // touched page by page, and each new page costs a fault (a microsecond and more here).
    let mut jobs: Vec<SwfJob> = Vec::new();
    let mut skipped = Skipped::default();
    let mut keep = |job: Result<SwfJob, SkipReason>| match job {
        Ok(j) => jobs.push(j),
        Err(r) => skipped.count(r),
    };
    let mut bytes: Vec<u8> = Vec::new();
    let mut reader = reader;
    let mut line_no = 0usize;
    let io = |error| SwfError::Io {
        path: path.to_path_buf(),
        error,
    };
    let mut line = |bytes: &[u8]| -> Result<(), SwfError> {
        line_no += 1;
        let malformed = |reason: String| SwfError::Malformed {
            path: path.to_path_buf(),
            line: line_no,
            reason,
        };
        // A job line of plain integers is read from its bytes in one pass; anything else
        // (comments, blank lines, decimals, odd tokens, invalid UTF-8) goes the way of text.
        if let Some(f) = plain_fields(bytes) {
            keep(job_from_fields(&f, line_no).map_err(malformed)?);
            return Ok(());
        }
        // Only header comments may hold free text; keep what is readable of it.
        let text = String::from_utf8_lossy(bytes);
        let line = text.trim();
        if line.is_empty() {
            return Ok(());
        }
        if let Some(comment) = line.strip_prefix(';') {
            read_header(comment, &mut header);
            return Ok(());
        }
        keep(parse_job(line, line_no).map_err(malformed)?);
        Ok(())
    };
    loop {
        // A line whole in the reader's buffer is read where it is; one cut by the buffer's end
        // is gathered first (copying every line was a tenth of reading a trace).
        let available = reader.fill_buf().map_err(io)?;
        if available.is_empty() {
            break;
        }
        if let Some(i) = memchr::memchr(b'\n', available) {
            line(&available[..=i])?;
            reader.consume(i + 1);
            continue;
        }
        bytes.clear();
        reader.read_until(b'\n', &mut bytes).map_err(io)?;
        line(&bytes)?;
    }
    Ok(Lines {
        header,
        jobs,
        skipped,
        count: line_no,
    })
}

/// The trace of the lines read.
fn trace_of(lines: Lines, path: &Path, opts: &ReadOptions) -> Result<Trace, SwfError> {
    let Lines {
        header,
        mut jobs,
        mut skipped,
        ..
    } = lines;
    let nodes = opts
        .nodes
        .or_else(|| header.machine_size())
        .ok_or_else(|| SwfError::NoMachineSize {
            path: path.to_path_buf(),
        })?;
    let lines = jobs.len() + skipped.total();
    jobs.retain(|j| {
        let fits = j.nodes <= nodes;
        if !fits {
            skipped.count(SkipReason::TooLarge);
        }
        fits
    });
    let mut trace = Trace {
        path: path.to_path_buf(),
        header,
        nodes,
        jobs,
        skipped,
        lines,
    };
    if let Some(limit) = opts.limit {
        trace.jobs.truncate(limit);
    }
    Ok(trace)
}

fn read_header(comment: &str, header: &mut Header) {
    let Some((key, value)) = comment.split_once(':') else {
        return;
    };
    let value: Option<u32> = value.split_whitespace().next().and_then(|v| v.parse().ok());
    match key.trim() {
        "MaxNodes" => header.max_nodes = value.or(header.max_nodes),
        "MaxProcs" => header.max_procs = value.or(header.max_procs),
        _ => {}
    }
}

/// Parses one job line: `Err(String)` for a malformed line, `Ok(Err(reason))` for a job to
/// skip.
fn parse_job(line: &str, line_no: usize) -> Result<Result<SwfJob, SkipReason>, String> {
    // Traces are ASCII: their lines are cut at ASCII whitespace and their integers read byte
    // by byte (with `split_whitespace` and `str::parse`, reading the trace was a tenth of a
    // replay's instructions). Any other line keeps Unicode's notion of whitespace.
    let f = if line.is_ascii() {
        fields(AsciiTokens(line.as_bytes()).map(|t| (int(t), t)))
    } else {
        fields(line.split_whitespace().map(|t| (None, t.as_bytes())))
    }?;
    job_from_fields(&f, line_no)
}

/// The fields of a job line of exactly [`FIELDS`] plain integers (an optional sign and at most
/// 18 digits, which cannot overflow) between ASCII whitespace, read in one pass over its
/// bytes; `None` for any other line, which [`parse_job`] then reads (or refuses).
fn plain_fields(line: &[u8]) -> Option<[i64; FIELDS]> {
    const SPACES: u64 = u64::from_le_bytes([b' '; 8]);
    // Indexing rather than a peekable iterator (a tenth fewer instructions; SWF lines are
    // mostly the spaces of fixed-width columns).
    let mut f = [0i64; FIELDS];
    let mut count = 0;
    let mut i = 0;
    let n = line.len();
    loop {
        // Runs of spaces (fixed-width columns) are skipped eight bytes at a time.
        while let Some(word) = line.get(i..i + 8) {
            let spaces = u64::from_le_bytes(word.try_into().unwrap_or([0; 8])) ^ SPACES;
            if spaces != 0 {
                i += spaces.trailing_zeros() as usize / 8;
                break;
            }
            i += 8;
        }
        while i < n && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == n {
            break;
        }
        if count == FIELDS {
            return None;
        }
        let negative = line[i] == b'-';
        if negative || line[i] == b'+' {
            i += 1;
        }
        let first = i;
        let mut v: i64 = 0;
        while i < n {
            let d = line[i].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            if i - first == 18 {
                return None;
            }
            v = v * 10 + i64::from(d);
            i += 1;
        }
        if i == first || (i < n && !line[i].is_ascii_whitespace()) {
            return None;
        }
        f[count] = if negative { -v } else { v };
        count += 1;
    }
    (count == FIELDS).then_some(f)
}

/// A job from its line's fields: `Err(String)` for a malformed line, `Ok(Err(reason))` for a
/// job to skip.
fn job_from_fields(
    f: &[i64; FIELDS],
    line_no: usize,
) -> Result<Result<SwfJob, SkipReason>, String> {
    let [id, submit, _wait, run, alloc, _cpu, _mem, req_procs, req_time, ..] = *f;
    let user = f[11];
    if id < 0 {
        return Err(format!("job number {id} is negative"));
    }
    let p = if alloc > 0 { alloc } else { req_procs };
    let skip = if p <= 0 {
        Some(SkipReason::UnknownSize)
    } else if run < 0 {
        Some(SkipReason::UnknownRuntime)
    } else if submit < 0 {
        Some(SkipReason::UnknownSubmit)
    } else {
        None
    };
    if let Some(r) = skip {
        return Ok(Err(r));
    }
    let runtime = if req_time > 0 {
        run.min(req_time).max(1)
    } else {
        run.max(1)
    };
    let estimate = run.max(req_time).max(1);
    let to_ms = |s: i64| (s as u64).saturating_mul(SECOND);
    Ok(Ok(SwfJob {
        id: JobId(id as u64),
        submit: to_ms(submit),
        nodes: u32::try_from(p).map_err(|_| format!("size {p} does not fit in 32 bits"))?,
        runtime: to_ms(runtime),
        walltime: to_ms(estimate),
        user: u32::try_from(user).unwrap_or(0),
        line: line_no,
    }))
}

/// The numbers of a job line's fields: each token with its value when [`int`] read it.
fn fields<'a>(
    tokens: impl Iterator<Item = (Option<i64>, &'a [u8])>,
) -> Result<[i64; FIELDS], String> {
    let mut f = [0i64; FIELDS];
    let mut count = 0;
    for (i, (value, tok)) in tokens.enumerate() {
        if i < FIELDS {
            f[i] = match value {
                Some(v) => v,
                None => {
                    // Tokens are cut from a `&str` at ASCII bytes, so they are text.
                    let tok = std::str::from_utf8(tok).unwrap_or_default();
                    number(tok)
                        .ok_or_else(|| format!("field {} is not a number: `{tok}`", i + 1))?
                }
            };
        }
        count = i + 1;
    }
    if count != FIELDS {
        return Err(format!("expected {FIELDS} fields, found {count}"));
    }
    Ok(f)
}

/// The tokens of an ASCII line between runs of ASCII whitespace.
struct AsciiTokens<'a>(&'a [u8]);

impl<'a> Iterator for AsciiTokens<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let start = self.0.iter().position(|b| !b.is_ascii_whitespace())?;
        let rest = &self.0[start..];
        let len = rest
            .iter()
            .position(u8::is_ascii_whitespace)
            .unwrap_or(rest.len());
        let (tok, tail) = rest.split_at(len);
        self.0 = tail;
        Some(tok)
    }
}

/// A plain decimal integer (an optional sign, then digits) that fits an `i64`, as `str::parse`
/// reads it; `None` for anything else, which [`number`] then reads.
fn int(tok: &[u8]) -> Option<i64> {
    let (negative, digits) = match tok {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, tok),
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: i64 = 0;
    for &b in digits {
        let d = i64::from(b.wrapping_sub(b'0'));
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?;
        v = if negative {
            v.checked_sub(d)?
        } else {
            v.checked_add(d)?
        };
    }
    Some(v)
}

/// An SWF number: an integer, or a decimal rounded to the nearest integer (some logs carry
/// fractional CPU times).
fn number(tok: &str) -> Option<i64> {
    if let Ok(v) = tok.parse::<i64>() {
        return Some(v);
    }
    let v: f64 = tok.parse().ok()?;
    (v.is_finite() && v.abs() < 9.0e18).then(|| v.round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_read_byte_by_byte_as_str_parse_reads_them() {
        for tok in [
            "0",
            "-1",
            "+7",
            "28800",
            "-",
            "+",
            "",
            "1.5",
            "1e3",
            "--1",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "12a",
            " 1",
        ] {
            assert_eq!(int(tok.as_bytes()), tok.parse::<i64>().ok(), "`{tok}`");
        }
    }

    const HEAD: &str = "; Version: 2.2\n; MaxNodes: 100\n; MaxProcs: 64\n";

    fn read_str(text: &str, opts: &ReadOptions) -> Result<Trace, SwfError> {
        read(text.as_bytes(), Path::new("t.swf"), opts)
    }

    use proptest::prelude::*;

    proptest! {
        /// A job line read from its bytes in one pass gives the fields the text path gives,
        /// and any line it declines is one the text path reads otherwise or refuses.
        #[test]
        fn plain_lines_read_as_the_text_path_reads_them(
            tokens in proptest::collection::vec(
                prop_oneof![
                    // Mostly plain fields, so that many lines are plain throughout.
                    60 => (-99_999i64..99_999).prop_map(|v| v.to_string()),
                    1 => any::<i64>().prop_map(|v| v.to_string()),
                    1 => Just("+7".to_string()),
                    1 => Just("-".to_string()),
                    1 => Just("12.5".to_string()),
                    1 => Just("0x1".to_string()),
                    1 => Just("1234567890123456789".to_string()),
                    1 => Just("-0001".to_string()),
                ],
                16..20,
            ),
            gaps in proptest::collection::vec(0usize..7, 21),
        ) {
            // Long runs of spaces too: they are skipped eight bytes at a time.
            let gap = |k: usize| {
                [" ", "\t", "  ", " \t ", "        ", "           ", "       \t  "][gaps[k] % 7]
            };
            let mut line = gap(20).to_string();
            for (k, t) in tokens.iter().enumerate() {
                line.push_str(t);
                line.push_str(gap(k));
            }
            let text = fields(AsciiTokens(line.trim().as_bytes()).map(|t| (int(t), t)));
            match plain_fields(line.as_bytes()) {
                Some(f) => prop_assert_eq!(Ok(f), text),
                None => prop_assert!(
                    text.is_err()
                        || tokens.iter().any(|t| int(t.as_bytes()).is_none() || t.len() > 18),
                    "declined a plain line: {line:?}"
                ),
            }
        }
    }

    #[test]
    fn maps_fields_like_the_reference_normalisation() {
        let text = format!(
            "{HEAD}\
             1 10 0 100 4 -1 -1 8 200 -1 1 7 1 -1 -1 -1 -1 -1\n\
             2 11 0 300 -1 -1 -1 8 200 -1 1 7 1 -1 -1 -1 -1 -1\n\
             3 12 0 0 2 -1 -1 2 -1 -1 1 -1 1 -1 -1 -1 -1 -1\n\
             4 13 0 50.6 2 3.7 -1 2 40 -1 1 7 1 -1 -1 -1 -1 -1\n"
        );
        let t = read_str(&text, &ReadOptions::default()).unwrap();
        assert_eq!(t.nodes, 64, "MaxProcs wins over MaxNodes");
        let got: Vec<_> = t
            .jobs
            .iter()
            .map(|j| (j.id.0, j.submit, j.nodes, j.runtime, j.walltime))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, 10_000, 4, 100_000, 200_000),
                // Ran longer than requested: killed at its request, the policy sees the longer time.
                (2, 11_000, 8, 200_000, 300_000),
                // Zero run time and no request: 1 s both.
                (3, 12_000, 2, 1_000, 1_000),
                // Fractional run time rounded; ran past its 40 s request.
                (4, 13_000, 2, 40_000, 51_000),
            ]
        );
        assert_eq!(t.jobs[0].user, 7);
        assert_eq!(t.skipped.total(), 0);
    }

    #[test]
    fn skips_and_counts_per_reason() {
        let text = format!(
            "{HEAD}\
             1 10 0 100 -1 -1 -1 -1 200 -1 1 7 1 -1 -1 -1 -1 -1\n\
             2 11 0 -1 4 -1 -1 4 200 -1 5 7 1 -1 -1 -1 -1 -1\n\
             3 12 0 10 65 -1 -1 65 200 -1 1 7 1 -1 -1 -1 -1 -1\n\
             4 13 0 10 64 -1 -1 64 200 -1 1 7 1 -1 -1 -1 -1 -1\n\
             5 -1 0 10 1 -1 -1 1 200 -1 1 7 1 -1 -1 -1 -1 -1\n"
        );
        let t = read_str(&text, &ReadOptions::default()).unwrap();
        assert_eq!(t.jobs.iter().map(|j| j.id.0).collect::<Vec<_>>(), vec![4]);
        assert_eq!(
            t.skipped,
            Skipped {
                unknown_size: 1,
                unknown_runtime: 1,
                unknown_submit: 1,
                too_large: 1
            }
        );
        assert_eq!(t.lines, 5);
        // A larger machine keeps job 3.
        let t = read_str(
            &text,
            &ReadOptions {
                nodes: Some(100),
                limit: None,
            },
        )
        .unwrap();
        assert_eq!(t.jobs.len(), 2);
        assert_eq!(t.skipped.too_large, 0);
    }

    #[test]
    fn malformed_lines_name_the_line() {
        let text = format!("{HEAD}1 10 0 100 4 -1 -1 8 200 -1 1 7 1 -1 -1 -1 -1\n");
        let err = read_str(&text, &ReadOptions::default())
            .unwrap_err()
            .to_string();
        assert_eq!(err, "t.swf:4: expected 18 fields, found 17");
        let text = format!("{HEAD}\n1 10 0 1OO 4 -1 -1 8 200 -1 1 7 1 -1 -1 -1 -1 -1\n");
        let err = read_str(&text, &ReadOptions::default())
            .unwrap_err()
            .to_string();
        assert_eq!(err, "t.swf:5: field 4 is not a number: `1OO`");
    }

    #[test]
    fn needs_a_machine_size() {
        let text = "1 10 0 100 4 -1 -1 8 200 -1 1 7 1 -1 -1 -1 -1 -1\n";
        assert!(matches!(
            read_str(text, &ReadOptions::default()),
            Err(SwfError::NoMachineSize { .. })
        ));
        let t = read_str(
            text,
            &ReadOptions {
                nodes: Some(4),
                limit: None,
            },
        )
        .unwrap();
        assert_eq!(t.jobs.len(), 1);
        assert_eq!(
            Header {
                max_nodes: Some(8),
                max_procs: None
            }
            .machine_size(),
            Some(8)
        );
    }

    #[test]
    fn limit_keeps_the_first_jobs() {
        let text = format!(
            "{HEAD}\
             1 10 0 100 4 -1 -1 8 200 -1 1 7 1 -1 -1 -1 -1 -1\n\
             2 11 0 100 4 -1 -1 8 200 -1 1 7 1 -1 -1 -1 -1 -1\n"
        );
        let t = read_str(
            &text,
            &ReadOptions {
                nodes: None,
                limit: Some(1),
            },
        )
        .unwrap();
        assert_eq!(t.jobs.len(), 1);
    }

    #[test]
    fn reads_gzip_by_magic_not_by_name() {
        use flate2::write::GzEncoder;
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.swf"); // no .gz on purpose
        let mut enc = GzEncoder::new(File::create(&path).unwrap(), flate2::Compression::fast());
        writeln!(
            enc,
            "{HEAD}1 10 0 100 4 -1 -1 8 200 -1 1 7 1 -1 -1 -1 -1 -1"
        )
        .unwrap();
        enc.finish().unwrap();
        let t = read_path(&path, &ReadOptions::default()).unwrap();
        assert_eq!(t.jobs.len(), 1);
        let missing = read_path(&dir.path().join("nope.swf"), &ReadOptions::default()).unwrap_err();
        assert!(missing.to_string().contains("nope.swf"), "{missing}");
    }

    /// A compressed trace of many blocks reads as the same text uncompressed, lines cut by
    /// the blocks' ends included; a truncated one is an I/O error naming the file.
    #[test]
    fn a_compressed_trace_of_many_blocks_reads_as_plain_text() {
        use flate2::write::GzEncoder;
        use std::io::Write;
        let mut text = String::from(HEAD);
        // Lines of varying length, so that block ends fall inside lines, over 3 blocks.
        let mut id = 1;
        while text.len() < 3 * BLOCK + 1000 {
            text.push_str(&format!(
                "{id} {} 0 {} 4 -1 -1 8 {} -1 1 {} 1 -1 -1 -1 -1 -1\n",
                id * 7,
                1 + id % 977,
                200 + id % 13,
                id % 31
            ));
            if id % 1000 == 0 {
                text.push_str(";  a comment between jobs\n");
            }
            id += 1;
        }
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("trace.swf");
        std::fs::write(&plain, &text).unwrap();
        let gz = dir.path().join("trace.swf.gz");
        let mut enc = GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(text.as_bytes()).unwrap();
        let bytes = enc.finish().unwrap();
        std::fs::write(&gz, &bytes).unwrap();
        let a = read_path(&plain, &ReadOptions::default()).unwrap();
        let b = read_path(&gz, &ReadOptions::default()).unwrap();
        assert_eq!(a.jobs.len(), id - 1);
        assert_eq!((a.jobs, a.lines, a.nodes), (b.jobs, b.lines, b.nodes));

        // A malformed line early: the parser stops there and the inflater with it.
        let bad = dir.path().join("bad.swf.gz");
        let mut enc = GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(format!("{HEAD}1 2 three\n").as_bytes())
            .unwrap();
        enc.write_all(text.as_bytes()).unwrap();
        std::fs::write(&bad, enc.finish().unwrap()).unwrap();
        let err = read_path(&bad, &ReadOptions::default()).unwrap_err();
        assert!(matches!(err, SwfError::Malformed { line: 4, .. }), "{err}");

        let cut = dir.path().join("cut.swf.gz");
        std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
        let err = read_path(&cut, &ReadOptions::default()).unwrap_err();
        assert!(
            matches!(&err, SwfError::Io { path, .. } if path == &cut),
            "{err}"
        );
    }

    /// A plain trace large enough to be read as two halves reads as in one pass: the same
    /// jobs with the same line numbers, a header line of the second half overriding the
    /// first's, and the first malformed line of the file named by its number, whichever half
    /// it falls in.
    #[test]
    fn a_large_plain_trace_read_in_halves_reads_as_in_one_pass() {
        let mut text = String::from(HEAD);
        let mut id = 1;
        while text.len() < 3 * SPLIT_MIN as usize / 2 {
            text.push_str(&format!(
                "{id} {} 0 {} {} -1 -1 8 {} -1 1 {} 1 -1 -1 -1 -1 -1\n",
                id * 7,
                1 + id % 977,
                1 + id % 89,
                200 + id % 13,
                id % 31
            ));
            match id % 5000 {
                0 => text.push_str(";  a comment between jobs\n\n"),
                2500 if text.len() > SPLIT_MIN as usize => text.push_str("; MaxProcs: 90\n"),
                _ => {}
            }
            id += 1;
        }
        // The last line without its newline.
        text.push_str(&format!("{id} 1 0 5 1 -1 -1 1 5 -1 1 1 1 -1 -1 -1 -1 -1"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.swf");
        let read_both = |text: &str| {
            std::fs::write(&path, text).unwrap();
            let halves = read_path(&path, &ReadOptions::default());
            let one = read_str(text, &ReadOptions::default());
            (halves, one)
        };
        let (halves, one) = read_both(&text);
        let (halves, one) = (halves.unwrap(), one.unwrap());
        assert_eq!(halves.header.max_procs, Some(90));
        assert!(halves.jobs.iter().any(|j| j.nodes > 64));
        assert_eq!(halves.jobs.len(), id);
        assert_eq!(
            (
                halves.jobs,
                halves.lines,
                halves.header,
                halves.nodes,
                halves.skipped
            ),
            (one.jobs, one.lines, one.header, one.nodes, one.skipped)
        );

        let malformed = |r: Result<Trace, SwfError>| match r {
            Err(SwfError::Malformed { line, .. }) => line,
            other => panic!("not malformed: {other:?}"),
        };
        let lines: Vec<&str> = text.lines().collect();
        let n = lines.len();
        for bad in [[n - 10, n - 5], [n / 4, n - 5]] {
            let mut edited = lines.clone();
            for &k in &bad {
                edited[k] = "1 2 three";
            }
            let (halves, one) = read_both(&edited.join("\n"));
            assert_eq!(malformed(halves), bad[0] + 1);
            assert_eq!(malformed(one), bad[0] + 1);
        }

        // The middle at a line's start, on a newline, inside a line, and inside a malformed
        // line: a comment of the right length at the top moves it there.
        let padded = |pad: usize| format!(";{}\n{text}", " ".repeat(pad));
        let at = |t: &str| {
            let b = t.as_bytes();
            let m = b.len() / 2;
            match (b[m - 1], b[m]) {
                (b'\n', _) => 0,
                (_, b'\n') => 1,
                _ => 2,
            }
        };
        let mut cases = [None; 3];
        for pad in 0..300 {
            cases[at(&padded(pad))].get_or_insert(pad);
        }
        for (case, pad) in cases.into_iter().enumerate() {
            let Some(pad) = pad else {
                panic!("no padding puts the middle in case {case}");
            };
            let t = padded(pad);
            let (halves, one) = read_both(&t);
            let (halves, one) = (halves.unwrap(), one.unwrap());
            assert_eq!(
                (&halves.jobs, halves.lines),
                (&one.jobs, one.lines),
                "case {case}"
            );
        }
        let t = padded(cases[2].unwrap_or_default());
        let middle = t.len() / 2;
        let bad = t[..middle].matches('\n').count();
        let mut lines: Vec<String> = t.lines().map(String::from).collect();
        // Same length, so that the middle stays inside it.
        lines[bad].replace_range(..1, "x");
        let (halves, one) = read_both(&lines.join("\n"));
        assert_eq!(malformed(halves), bad + 1);
        assert_eq!(malformed(one), bad + 1);
    }
}
