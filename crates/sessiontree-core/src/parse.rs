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
    Torn {
        /// Byte offset where the torn line starts.
        offset: u64,
    },
}

/// A file's content, parsed.
#[derive(Debug)]
pub struct Parsed {
    /// The header (the first parsed line).
    pub header: Header,
    /// Entry lines in file order (extra headers, non-objects and malformed lines left out).
    pub entries: Vec<Entry>,
    /// Problems found, in file order (FORMAT.md section 6).
    pub diagnostics: Vec<Diagnostic>,
    /// How the file ends.
    pub tail: Tail,
    /// Total bytes parsed.
    pub len: u64,
    /// Lines that end with `\n` in what was parsed.
    pub lines: u64,
}

/// Why the bytes are not a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotSession {
    /// No line parses to a truthy JSON value (a 0-byte file, or only blank or bad lines).
    NoContent,
    /// The first parsed line is not a header.
    BadHeader {
        /// 1-based line number of that line.
        line: u64,
        /// Why it is not a header.
        reason: String,
    },
}

/// Splits `buf` into lines and parses each one.
pub fn parse(buf: Backing) -> Result<Parsed, NotSession> {
    parse_from(buf, 0, 1, None)
}

/// What a non-blank line holds.
enum Value1 {
    /// An object: an entry (or a header).
    Object(Entry),
    /// Any other JSON value: its text, and whether JavaScript finds it truthy.
    Other { text: String, truthy: bool },
}

/// One non-blank line after the parallel scan.
struct Scanned1 {
    line: u64,
    offset: u64,
    has_nl: bool,
    invalid_utf8: bool,
    len: usize,
    value: Result<Value1, json::ScanError>,
}

/// What a scanned line holds: an object becomes an entry.
fn value_of(text: Text, scanned: &json::Scanned, offset: u64) -> Value1 {
    let top = &text.as_bytes()[scanned.top.clone()];
    if top[0] == b'{' {
        Value1::Object(Entry::from_scanned(text, scanned, 0, offset))
    } else {
        let raw = json::Raw::new_unchecked(top);
        Value1::Other {
            text: raw.text().to_string(),
            truthy: raw.truthy(),
        }
    }
}

/// Files above this size are scanned by several threads.
const PARALLEL_MIN: usize = 8 << 20;

/// Scans the lines of `bytes[from..to]` (which starts at a line start); line numbers are
/// relative to the chunk, starting at 0.
fn scan_chunk(buf: &Backing, from: usize, to: usize) -> (Vec<Scanned1>, u64) {
    let bytes: &[u8] = (**buf).as_ref();
    // Room for one line per LINE_GUESS bytes, so that a session of long lines (tool
    // output) never regrows the list: each regrowth copies it into fresh pages the kernel
    // zeroes first. Only what is used is touched; shorter lines grow it as usual.
    const LINE_GUESS: usize = 2048;
    let mut out = Vec::with_capacity((to - from) / LINE_GUESS + 1);
    let mut pos = from;
    let mut line: u64 = 0;
    // Scanned bytes are given back in steps, so a mapped file is never resident whole.
    const RELEASE_STEP: usize = 8 << 20;
    let mut released = from;
    // The member lists of one line, reused for the next.
    let mut scratch = json::Scanned::default();
    while pos < to {
        if pos - released >= RELEASE_STEP {
            buf.release(released..pos);
            released = pos;
        }
        // The common case in one pass: a valid UTF-8 JSON line, its end found by the scan.
        if let Some(len) = scan::scan_line(&bytes[pos..to], &mut scratch) {
            let end = pos + len;
            let has_nl = end < to;
            let offset = pos as u64;
            let value = value_of(Text::new(buf.clone(), pos..end), &scratch, offset);
            out.push(Scanned1 {
                line,
                offset,
                has_nl,
                invalid_utf8: false,
                len,
                value: Ok(value),
            });
            pos = end + has_nl as usize;
            line += has_nl as u64;
            continue;
        }
        let (end, next, has_nl) = match memchr::memchr(b'\n', &bytes[pos..to]) {
            Some(i) => (pos + i, pos + i + 1, true),
            None => (to, to, false),
        };
        let raw = &bytes[pos..end];
        let offset = pos as u64;
        let this = line;
        pos = next;
        line += has_nl as u64;
        if scan::is_blank(raw) {
            continue;
        }
        let (text, invalid_utf8) = if simdutf8::basic::from_utf8(raw).is_ok() {
            (Text::new(buf.clone(), offset as usize..end), false)
        } else {
            (Text::owned(String::from_utf8_lossy(raw).into_owned()), true)
        };
        let value = scan::scan(text.as_bytes()).map(|scanned| value_of(text, &scanned, offset));
        out.push(Scanned1 {
            line: this,
            offset,
            has_nl,
            invalid_utf8,
            len: raw.len(),
            value,
        });
    }
    buf.release(released..to);
    (out, line)
}

/// Parses lines of `buf` starting at byte `start` (line number `first_line`), for a file
/// whose header was already read (`header`), or the whole file when `header` is `None`.
/// Large inputs are scanned on all cores; the result does not depend on how they split.
#[doc(hidden)] // plumbing between the core and the store
pub fn parse_from(
    buf: Backing,
    start: usize,
    first_line: u64,
    header: Option<Header>,
) -> Result<Parsed, NotSession> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let len = (*buf).as_ref().len();
    let threads = if len - start >= PARALLEL_MIN {
        threads
    } else {
        1
    };
    parse_split(buf, start, first_line, header, threads)
}

/// [`parse`] with the input split into `threads` pieces (for tests: every split must give
/// the same result).
pub fn parse_with_threads(buf: Backing, threads: usize) -> Result<Parsed, NotSession> {
    parse_split(buf, 0, 1, None, threads.max(1))
}

fn parse_split(
    buf: Backing,
    start: usize,
    first_line: u64,
    header: Option<Header>,
    threads: usize,
) -> Result<Parsed, NotSession> {
    let bytes: &[u8] = (*buf).as_ref();
    let len = bytes.len();
    // Pieces of about PIECE bytes, cut after a newline, taken in turn by the threads as
    // they become free: a thread slowed by page faults or by the machine does less, and
    // no core waits for the slowest half of the file.
    const PIECE: usize = 8 << 20;
    let pieces = if threads > 1 {
        ((len - start) / PIECE).max(threads)
    } else {
        1
    };
    let mut bounds = vec![start];
    if pieces > 1 && len > start {
        let step = (len - start) / pieces;
        for k in 1..pieces {
            let guess = start + k * step;
            let prev = *bounds.last().expect("non-empty");
            if guess <= prev {
                continue;
            }
            if let Some(i) = memchr::memchr(b'\n', &bytes[guess..]) {
                bounds.push(guess + i + 1);
            }
        }
    }
    bounds.push(len);
    bounds.dedup();
    let chunks: Vec<(Vec<Scanned1>, u64)> = if bounds.len() > 2 {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let n = bounds.len() - 1;
        let mut done: Vec<(usize, (Vec<Scanned1>, u64))> = std::thread::scope(|sc| {
            let work = || {
                let mut mine = Vec::new();
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if k >= n {
                        break mine;
                    }
                    mine.push((k, scan_chunk(&buf, bounds[k], bounds[k + 1])));
                }
            };
            let handles: Vec<_> = (1..threads.min(n)).map(|_| sc.spawn(work)).collect();
            let mut all = work();
            for h in handles {
                all.extend(h.join().expect("scanner thread"));
            }
            all
        });
        done.sort_unstable_by_key(|(k, _)| *k);
        done.into_iter().map(|(_, c)| c).collect()
    } else {
        vec![scan_chunk(&buf, start, len)]
    };

    let mut header = header;
    let mut entries = Vec::with_capacity(chunks.iter().map(|c| c.0.len()).sum());
    let mut diagnostics = Vec::new();
    let mut tail = Tail::Clean;
    let mut first_value_seen = header.is_some();
    // The reference's index of each truthy parsed value (header = 0).
    let mut ordinal: u32 = 0;
    let mut base_line = first_line;
    for (items, lines) in chunks {
        for it in items {
            let this_line = base_line + it.line;
            let offset = it.offset;
            if it.invalid_utf8 {
                diagnostics.push(diag(
                    this_line,
                    offset,
                    DiagnosticKind::InvalidUtf8,
                    "bytes that are not UTF-8 (read as U+FFFD)".into(),
                ));
            }
            let value = match it.value {
                Ok(v) => v,
                Err(e) => {
                    if !it.has_nl {
                        tail = Tail::Torn { offset };
                        diagnostics.push(diag(
                            this_line,
                            offset,
                            DiagnosticKind::TornTail,
                            format!("last line is cut off ({e}; {} bytes, no newline)", it.len),
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
            if !it.has_nl {
                tail = Tail::MissingNewline;
                diagnostics.push(diag(
                    this_line,
                    offset,
                    DiagnosticKind::MissingNewline,
                    "last line has no newline".into(),
                ));
            }
            if let Value1::Other {
                text,
                truthy: false,
            } = &value
            {
                diagnostics.push(diag(
                    this_line,
                    offset,
                    DiagnosticKind::NotAnObject,
                    format!("line is `{text}`, not an entry (skipped)"),
                ));
                continue;
            }
            ordinal += 1;
            if !first_value_seen {
                first_value_seen = true;
                ordinal = 0;
                let h = match &value {
                    Value1::Object(e) => Header::from_entry(e),
                    Value1::Other { .. } => None,
                };
                match h {
                    Some(mut h) => {
                        h.line = this_line;
                        if h.version()
                            .is_some_and(|v| v > crate::entry::CURRENT_VERSION as f64)
                        {
                            diagnostics.push(diag(
                                this_line,
                                offset,
                                DiagnosticKind::UnknownVersion,
                                format!(
                                    "header version {} is newer than this sessiontree knows (3)",
                                    h.field("version")
                                        .map(|v| v.js_string())
                                        .unwrap_or_default()
                                ),
                            ));
                        }
                        header = Some(h);
                        continue;
                    }
                    None => {
                        let reason = match &value {
                            Value1::Other { text, .. } => format!("the first line is `{}`, not a session header", shorten(text)),
                            Value1::Object(_) => "the first line is not a session header (needs \"type\":\"session\" and a string \"id\")".into(),
                        };
                        return Err(NotSession::BadHeader {
                            line: this_line,
                            reason,
                        });
                    }
                }
            }
            let mut entry = match value {
                Value1::Object(e) => e,
                Value1::Other { text, .. } => {
                    diagnostics.push(diag(
                        this_line,
                        offset,
                        DiagnosticKind::NotAnObject,
                        format!("line is `{}`, not an entry (skipped)", shorten(&text)),
                    ));
                    continue;
                }
            };
            entry.line = this_line;
            entry.ordinal = ordinal;
            if matches!(&entry.entry_type, crate::entry::EntryType::Other(t) if &**t == "session") {
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
        base_line += lines;
    }
    match header {
        Some(header) => Ok(Parsed {
            header,
            entries,
            diagnostics,
            tail,
            len: len as u64,
            lines: base_line - first_line,
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
