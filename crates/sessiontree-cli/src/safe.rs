//! Untrusted text on its way to a terminal. Names, labels, messages, cwds, paths, ids and
//! machine names come from files, transcripts and the archive: any of them can carry an
//! escape sequence (OSC 52 writes the clipboard, OSC 8 makes links, CSI clears the screen or
//! moves the cursor, a title change) or a bidi override that makes text read as something
//! else. Every human output passes such text through here; each of those characters is
//! shown as a visible escape (`\x1b`, `\u{202e}`), never passed through. `--json` output
//! is JSON (serde and the canonical writer escape controls) and does not come here.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::Path;

/// Characters a terminal acts on or that reorder what is shown: C0 controls, DEL, C1
/// controls (U+0080-U+009F; U+009B is a one-character CSI), and the bidi embeddings,
/// overrides and isolates (U+202A-U+202E, U+2066-U+2069).
pub fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}' | '\u{80}'..='\u{9f}'
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Appends the visible form of an unsafe character: `\x1b` below U+0080, `\u{85}` above.
pub fn push_escaped(out: &mut String, c: char) {
    let n = c as u32;
    if n < 0x80 {
        let _ = write!(out, "\\x{n:02x}");
    } else {
        let _ = write!(out, "\\u{{{n:x}}}");
    }
}

/// Every unsafe character escaped except those `keep` accepts.
pub fn escape_except(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    // Printable ASCII is never unsafe: most text is checked a byte at a time.
    if s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Cow::Borrowed(s);
    }
    if !s.chars().any(|c| is_unsafe(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_unsafe(c) && !keep(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// One line of output: every unsafe character escaped, newlines and tabs too (a name, an
/// id, a path, a cwd, a preview).
pub fn line(s: &str) -> Cow<'_, str> {
    escape_except(s, |_| false)
}

/// Text shown over several lines (a message body, an error that quotes a file): newlines
/// and tabs kept, every other unsafe character escaped (a carriage return too: it would
/// overwrite what the line shows).
pub fn text(s: &str) -> Cow<'_, str> {
    escape_except(s, |c| c == '\n' || c == '\t')
}

/// A path as one line of output.
pub fn path(p: &Path) -> String {
    line(&p.to_string_lossy()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_become_visible_escapes() {
        let hostile = "a\x1b]52;c;SGVsbG8=\x07b\x1b[2Jc\u{9b}31md\u{202e}e\u{2066}f\x7fg\r";
        assert_eq!(
            line(hostile),
            "a\\x1b]52;c;SGVsbG8=\\x07b\\x1b[2Jc\\u{9b}31md\\u{202e}e\\u{2066}f\\x7fg\\x0d"
        );
        assert_eq!(line("x\ny\tz"), "x\\x0ay\\x09z");
        assert_eq!(text("x\ny\tz\r"), "x\ny\tz\\x0d");
        // Ordinary text, wide characters and other format characters pass unchanged.
        assert!(matches!(line("日本語 ✓ é ‎"), Cow::Borrowed(_)));
        for c in (0u32..0x3000).filter_map(char::from_u32) {
            let shown = line(&c.to_string()).into_owned();
            assert!(
                !shown.chars().any(is_unsafe),
                "U+{:04X} shown as {shown:?}",
                c as u32
            );
        }
    }
}
