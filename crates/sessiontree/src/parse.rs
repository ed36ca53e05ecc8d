//! Bytes to header, entries and diagnostics. Pure: no I/O, never fails on one bad line.

use crate::diag::{Diagnostic, DiagnosticKind};
use crate::entry::{Backing, Entry, Header, Text};
use crate::json::{self, scan};
use std::sync::Arc;

/// How the file ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tail {
    /// Empty, or the last byte is `\n`.
    Clean,
    /// The last line has no `\n` but parses: it is kept and only needs its newline.
    MissingNewline,
    /// The last line has no `\n` and does not parse: an interrupted write starting at `offset`.
    Torn { offset: u64 },
}

/// A file's content, parsed.
#[derive(Debug)]
pub struct Parsed {
    pub header: Header,
    /// Entry lines in file order (extra headers, non-objects and malformed lines left out).
    pub entries: Vec<Entry>,
    pub diagnostics: Vec<Diagnostic>,
    pub tail: Tail,
    /// Total bytes parsed.
    pub len: u64,
}

/// Why the bytes are not a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotSession {
    /// No line parses to a truthy JSON value (a 0-byte file, or only blank or bad lines).
    NoContent,
    /// The first parsed line is not a header.
    BadHeader { line: u64, reason: String },
}

/// Splits `buf` into lines and parses each one.
pub fn parse(buf: Backing) -> Result<Parsed, NotSession> {
    parse_from(buf, 0, 1, None)
}

/// Parses lines of `buf` starting at byte `start` (line number `first_line`), for a file
/// whose header was already read (`header`), or the whole file when `header` is `None`.
pub fn parse_from(
    buf: Backing,
    start: usize,
    first_line: u64,
    header: Option<Header>,
) -> Result<Parsed, NotSession> {
    let bytes: &[u8] = (*buf).as_ref();
    let mut header = header;
    let mut entries = Vec::new();
    let mut diagnostics = Vec::new();
    let mut tail = Tail::Clean;
    let mut pos = start;
    let mut line_no = first_line;
    let mut first_value_seen = header.is_some();
    // The reference's index of each truthy parsed value (header = 0).
    let mut ordinal: u32 = 0;
    while pos < bytes.len() {
        let (end, next, has_nl) = match memchr::memchr(b'\n', &bytes[pos..]) {
            Some(i) => (pos + i, pos + i + 1, true),
            None => (bytes.len(), bytes.len(), false),
        };
        let line = &bytes[pos..end];
        let offset = pos as u64;
        let this_line = line_no;
        pos = next;
        line_no += 1;
        if scan::is_blank(line) {
            continue;
        }
        // Lines that are not UTF-8 are read as the reference's decoder reads them.
        let (text, owned) = match std::str::from_utf8(line) {
            Ok(_) => (Text::new(buf.clone(), offset as usize..end), false),
            Err(_) => {
                diagnostics.push(diag(
                    this_line,
                    offset,
                    DiagnosticKind::InvalidUtf8,
                    "bytes that are not UTF-8 (read as U+FFFD)".into(),
                ));
                (
                    Text::owned(String::from_utf8_lossy(line).into_owned()),
                    true,
                )
            }
        };
        let _ = owned;
        let scanned = match scan::scan(text.as_bytes()) {
            Ok(s) => s,
            Err(e) => {
                if !has_nl {
                    tail = Tail::Torn { offset };
                    diagnostics.push(diag(
                        this_line,
                        offset,
                        DiagnosticKind::TornTail,
                        format!(
                            "last line is cut off ({e}; {} bytes, no newline)",
                            line.len()
                        ),
                    ));
                } else {
                    diagnostics.push(diag(
                        this_line,
                        offset,
                        DiagnosticKind::MalformedLine,
                        format!("not JSON: {e}"),
                    ));
                }
                continue;
            }
        };
        if !has_nl {
            tail = Tail::MissingNewline;
            diagnostics.push(diag(
                this_line,
                offset,
                DiagnosticKind::MissingNewline,
                "last line has no newline".into(),
            ));
        }
        let value = json::Raw::new_unchecked(&text.as_bytes()[scanned.top.clone()]);
        if !value.truthy() {
            diagnostics.push(diag(
                this_line,
                offset,
                DiagnosticKind::NotAnObject,
                format!("line is `{}`, not an entry (skipped)", value.text()),
            ));
            continue;
        }
        ordinal += 1;
        if !first_value_seen {
            first_value_seen = true;
            ordinal = 0;
            match Header::from_scanned(text.clone(), &scanned, this_line) {
                Some(h) => {
                    if let Some(v) = h.version() {
                        if v > crate::migrate::CURRENT_VERSION as f64 {
                            diagnostics.push(diag(
                                this_line,
                                offset,
                                DiagnosticKind::UnknownVersion,
                                format!(
                                    "header version {} is newer than this library knows ({}); entries may be misread",
                                    crate::json::format_number(v),
                                    crate::migrate::CURRENT_VERSION
                                ),
                            ));
                        }
                    }
                    header = Some(h);
                    continue;
                }
                None => {
                    let reason = if value.kind() != json::Kind::Object {
                        format!(
                            "the first line is `{}`, not a session header",
                            shorten(value.text())
                        )
                    } else {
                        "the first line is not a session header (needs \"type\":\"session\" and a string \"id\")".into()
                    };
                    return Err(NotSession::BadHeader {
                        line: this_line,
                        reason,
                    });
                }
            }
        }
        if value.kind() != json::Kind::Object {
            diagnostics.push(diag(
                this_line,
                offset,
                DiagnosticKind::NotAnObject,
                format!(
                    "line is `{}`, not an entry (skipped)",
                    shorten(value.text())
                ),
            ));
            continue;
        }
        let mut entry = Entry::from_scanned(text, scanned, this_line, offset);
        entry.ordinal = ordinal;
        if entry.field("type").and_then(|t| t.as_str()).as_deref() == Some("session") {
            diagnostics.push(diag(
                this_line,
                offset,
                DiagnosticKind::ExtraHeader,
                "a second session header (skipped; the first one counts)".into(),
            ));
            continue;
        }
        entries.push(entry);
    }
    match header {
        Some(header) => Ok(Parsed {
            header,
            entries,
            diagnostics,
            tail,
            len: bytes.len() as u64,
        }),
        None => Err(NotSession::NoContent),
    }
}

fn shorten(s: &str) -> String {
    if s.len() <= 40 {
        s.to_string()
    } else {
        let mut end = 40;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &s[..end])
    }
}

pub(crate) fn diag(line: u64, offset: u64, kind: DiagnosticKind, message: String) -> Diagnostic {
    Diagnostic {
        line,
        offset,
        kind,
        message,
    }
}

/// Wraps owned bytes as a backing buffer.
pub fn backing(bytes: Vec<u8>) -> Backing {
    Arc::new(bytes)
}
