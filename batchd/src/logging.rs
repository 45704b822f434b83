//! Logs that a client can neither forge nor fill.
//!
//! Text that came from a client (a request it could not decode, its software version, a path
//! it gave) is logged through [`quoted`]: in double quotes, with newlines and every other
//! control character escaped, so it can neither end the line nor pass for a line of its own,
//! and cut after [`QUOTE_MAX`] bytes with a marker saying how much was left out, so that a
//! 16 MiB request cannot write a 16 MiB line. [`LineSafe`] is the backstop under the whole
//! log: whatever an event's fields hold, one event is one line of at most [`EVENT_MAX`] bytes
//! (and a marker).
//!
//! [`init`] sets the daemon's subscriber up in the configured format: tracing's text lines or,
//! with `log_format = "json"`, one JSON object a line (JSON escapes control characters itself,
//! and [`LineSafe`] still bounds each event).

use std::io::Write;

use crate::config::LogFormat;

/// Installs the daemon's log subscriber on stderr, filtered by `RUST_LOG` (default `info`), in
/// `format`; colours only for a person at a terminal, never in a log file, a journal or JSON.
pub fn init(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let ansi = format == LogFormat::Text && std::io::IsTerminal::is_terminal(&std::io::stderr());
    // One event, one line, whatever a client managed to put in it.
    let writer = move || LineSafe::new(std::io::stderr(), ansi);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(ansi);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Bytes of a client's text, escaped, that [`quoted`] keeps: enough to recognise a request
/// (a serde error names the field or variant it stopped at), not to store one.
pub const QUOTE_MAX: usize = 256;

/// Bytes of one event that [`LineSafe`] writes, escapes included, before it cuts the rest.
/// Above any event batchd writes of its own (a path is at most 4 KiB but never logged alone
/// with another), so only text that came from outside meets it.
pub const EVENT_MAX: usize = 4096;

/// `text` quoted, with control characters escaped (`"a\nb"`: Rust's `Debug` for strings), cut
/// after [`QUOTE_MAX`] bytes of the escaped text with the number of bytes left out
/// (`"abc"… (4194000 more bytes)`).
pub fn quoted(text: &str) -> String {
    let mut width = 0;
    let mut cut = text.len();
    for (i, c) in text.char_indices() {
        width += if c.is_ascii_graphic() || c == ' ' {
            1
        } else {
            c.escape_debug().map(char::len_utf8).sum()
        };
        if width > QUOTE_MAX {
            cut = i;
            break;
        }
    }
    let head = &text[..cut];
    if cut == text.len() {
        format!("{head:?}")
    } else {
        format!("{head:?}… ({} more bytes)", text.len() - cut)
    }
}

/// A writer that escapes control characters inside each event it is given (tracing's fmt
/// layer writes one formatted event per `write` call), keeping only the event's final newline
/// and tabs; with `keep_escape`, also ESC, for the formatter's own colours on a terminal. An
/// event longer than [`EVENT_MAX`] is cut there ([`escape_event`]).
pub struct LineSafe<W> {
    inner: W,
    keep_escape: bool,
}

impl<W: Write> LineSafe<W> {
    /// Wraps `inner`.
    pub fn new(inner: W, keep_escape: bool) -> Self {
        LineSafe { inner, keep_escape }
    }
}

/// `bytes` with control characters other than a final newline, tab and (when kept) ESC
/// written as `\n`, `\r` or `\x1f`; past [`EVENT_MAX`] bytes of that, the rest is left out
/// (at a character's start) and a marker says how many bytes were.
pub fn escape_event(bytes: &[u8], keep_escape: bool) -> Vec<u8> {
    let (body, end) = match bytes.strip_suffix(b"\n") {
        Some(b) => (b, &b"\n"[..]),
        None => (bytes, &b""[..]),
    };
    let mut out = Vec::with_capacity(body.len().min(EVENT_MAX) + 64);
    for (i, &b) in body.iter().enumerate() {
        // Not inside a UTF-8 sequence: the line stays valid text.
        if out.len() >= EVENT_MAX && b & 0xc0 != 0x80 {
            let _ = write!(out, "… [event cut: {} more bytes]", body.len() - i);
            break;
        }
        match b {
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.push(b),
            0x1b if keep_escape => out.push(b),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.extend_from_slice(end);
    out
}

impl<W: Write> Write for LineSafe<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write_all(&escape_event(buf, self.keep_escape))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_text_stays_on_its_line() {
        let forged = "x`\n2026-01-01T00:00:00Z  INFO batchd: job ended job=1 state=COMPLETED";
        let q = quoted(forged);
        assert!(!q.contains('\n'), "{q}");
        assert!(q.starts_with('"') && q.ends_with('"'), "{q}");
        assert!(q.contains("\\n"), "{q}");
        assert_eq!(quoted("a\u{1b}[2Jb\r"), "\"a\\u{1b}[2Jb\\r\"");
    }

    #[test]
    fn an_event_is_one_line_whatever_it_holds() {
        let out = escape_event(b"warn: a\nb\r\x1b[31m\tc\n", false);
        assert_eq!(out, b"warn: a\\nb\\r\\x1b[31m\tc\n".to_vec());
        let out = escape_event(b"\x1b[33mWARN\x1b[0m a\nb\n", true);
        assert_eq!(out, b"\x1b[33mWARN\x1b[0m a\\nb\n".to_vec());
    }

    #[test]
    fn client_text_is_cut_with_what_was_left_out() {
        let long = "A".repeat(4 << 20);
        let q = quoted(&long);
        assert!(q.len() < QUOTE_MAX + 40, "{}", q.len());
        assert!(
            q.ends_with(&format!("\"… ({} more bytes)", (4 << 20) - QUOTE_MAX)),
            "{q}"
        );
        // Escapes count against the budget, and a cut never splits a character.
        let q = quoted(&"\u{1}é".repeat(1000));
        assert!(q.len() < QUOTE_MAX + 40 && q.contains("\\u{1}é"), "{q}");
        assert_eq!(quoted("short\n"), "\"short\\n\"");
        assert_eq!(
            quoted(&"x".repeat(QUOTE_MAX)),
            format!("{:?}", "x".repeat(QUOTE_MAX))
        );
    }

    #[test]
    fn an_event_is_bounded_whatever_it_holds() {
        let mut event = b"WARN malformed request ".to_vec();
        event.extend(std::iter::repeat_n(b'\n', 1 << 20));
        event.extend("é".repeat(1 << 20).as_bytes());
        event.push(b'\n');
        let out = escape_event(&event, false);
        assert!(out.len() <= EVENT_MAX + 64, "{}", out.len());
        let text = std::str::from_utf8(&out).unwrap();
        assert_eq!(text.matches('\n').count(), 1);
        assert!(
            text.ends_with(" more bytes]\n"),
            "{}",
            &text[text.len() - 60..]
        );
        // Short events are untouched but for the escapes.
        assert_eq!(escape_event(b"ok\n", false), b"ok\n".to_vec());
    }
}
