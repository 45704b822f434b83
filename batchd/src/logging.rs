//! Logs that a client cannot forge.
//!
//! Text that came from a client (a request it could not decode, its software version, a path
//! it gave) is logged through [`quoted`]: in double quotes, with newlines and every other
//! control character escaped, so it can neither end the line nor pass for a line of its own.
//! [`LineSafe`] is the backstop under the whole log: whatever an event's fields hold, one
//! event is one line.

use std::io::Write;

/// `text` quoted, with control characters escaped (`"a\nb"`): Rust's `Debug` for strings.
pub fn quoted(text: &str) -> String {
    format!("{text:?}")
}

/// A writer that escapes control characters inside each event it is given (tracing's fmt
/// layer writes one formatted event per `write` call), keeping only the event's final newline
/// and tabs; with `keep_escape`, also ESC, for the formatter's own colours on a terminal.
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
/// written as `\n`, `\r` or `\x1f`.
pub fn escape_event(bytes: &[u8], keep_escape: bool) -> Vec<u8> {
    let (body, end) = match bytes.strip_suffix(b"\n") {
        Some(b) => (b, &b"\n"[..]),
        None => (bytes, &b""[..]),
    };
    let mut out = Vec::with_capacity(bytes.len());
    for &b in body {
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
}
