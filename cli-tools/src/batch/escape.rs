//! What the tools print of text a user chose (a job's name, its directory and output paths,
//! its arguments, comment, account): control characters written visibly, so that a name
//! cannot end the line it is printed on, draw a line of its own (`JobState=COMPLETED` under a
//! job that failed), move the cursor or recolour the terminal of whoever lists the queue.
//!
//! The escapes are those of batchd's log: `\n`, `\r`, `\t`, `\x1b` for the C0 controls and
//! DEL, `\u{85}` for the C1 controls and for the Unicode characters that break a line or
//! reorder its text (U+2028, U+2029, the bidirectional marks and overrides). Everything else
//! is printed as it is, a backslash included: the text form is for reading, and `--json` is
//! where a program finds the exact text.

use std::borrow::Cow;

/// Whether `c` is written as an escape.
fn escaped(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// Appends `text` to `out`, its control characters escaped: the one escaping of the tools'
/// text output.
pub fn push_shown(out: &mut String, text: &str) {
    use std::fmt::Write as _;
    for c in text.chars() {
        if !escaped(c) {
            out.push(c);
            continue;
        }
        let _ = match c {
            '\n' => write!(out, "\\n"),
            '\r' => write!(out, "\\r"),
            '\t' => write!(out, "\\t"),
            c if u32::from(c) < 0x80 => write!(out, "\\x{:02x}", u32::from(c)),
            c => write!(out, "\\u{{{:x}}}", u32::from(c)),
        };
    }
}

/// `text` as [`push_shown`] writes it, borrowed when there is nothing to escape (nearly
/// always).
pub fn shown(text: &str) -> Cow<'_, str> {
    if text.chars().any(escaped) {
        let mut out = String::with_capacity(text.len() + 8);
        push_shown(&mut out, text);
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_written_visibly() {
        assert_eq!(
            shown("/tmp/x\nJobState=COMPLETED\r\t\u{1b}[2J\u{7f}"),
            "/tmp/x\\nJobState=COMPLETED\\r\\t\\x1b[2J\\x7f"
        );
        assert_eq!(
            shown("a\u{85}b\u{2028}c\u{202e}d"),
            "a\\u{85}b\\u{2028}c\\u{202e}d"
        );
        // Plain text, a backslash and any other character are left alone, borrowed.
        for plain in ["/home/alice/run 1", "a\\nb", "héllo 世界", ""] {
            assert!(matches!(shown(plain), Cow::Borrowed(s) if s == plain));
        }
    }

    proptest::proptest! {
        /// Whatever a user names a job, it prints on one line without a control character.
        #[test]
        fn shown_text_is_one_line_of_printable_characters(text in "\\PC*|[\\x00-\\x20\\u{80}-\\u{a0}\\u{2028}\\u{202e}a\\\\]*") {
            let s = shown(&text);
            proptest::prop_assert!(!s.chars().any(escaped), "{s:?}");
            proptest::prop_assert_eq!(shown(&s), s.clone());
        }
    }
}
