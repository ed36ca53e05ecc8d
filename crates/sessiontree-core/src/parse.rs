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

/// What a scanned line holds: an object becomes an entry. `copy` is the line's bytes when
/// they were read from a copy of the text's buffer (see [`scan_chunk`]).
fn value_of(text: Text, copy: Option<&[u8]>, scanned: &json::Scanned, offset: u64) -> Value1 {
    let bytes = copy.unwrap_or_else(|| text.as_bytes());
    let top = &bytes[scanned.top.clone()];
    if top[0] == b'{' {
        Value1::Object(Entry::from_scanned_in(text, copy, scanned, 0, offset))
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

/// Bytes read into the window at a time when a piece is scanned from a copy: small enough
/// that the copy is still in the core's cache when it is scanned. (Tests use a window of a
/// few lines, so that lines cross and outgrow it everywhere.)
const WINDOW: usize = if cfg!(test) { 256 } else { 256 << 10 };

/// The largest window: a longer line (a file of few, huge lines) is scanned in place, with
/// the rest of its piece, instead of being copied whole.
const WINDOW_MAX: usize = if cfg!(test) { 4096 } else { 32 << 20 };

/// Scans the lines of `bytes[from..to]` (which starts at a line start); line numbers are
/// relative to the chunk, starting at 0. `window` is kept from one piece to the next.
///
/// A buffer that can be read elsewhere (a mapped file, see [`Buffer::read_at`]) is read a
/// window at a time into `window`, and the window's whole lines are scanned there; the
/// entries keep spans of the buffer, as when it is scanned in place. The copy has the
/// buffer's bytes (a mapped file is only ever appended to), and a line's scan never
/// depends on bytes after its `\n`, so the results are those of a scan in place.
fn scan_chunk(buf: &Backing, from: usize, to: usize, window: &mut Vec<u8>) -> (Vec<Scanned1>, u64) {
    // Room for one line per LINE_GUESS bytes, so that a session of long lines (tool
    // output) never regrows the list: each regrowth copies it into fresh pages the kernel
    // zeroes first. Only what is used is touched; shorter lines grow it as usual.
    const LINE_GUESS: usize = 2048;
    let mut lines = Lines {
        out: Vec::with_capacity((to - from) / LINE_GUESS + 1),
        line: 0,
        scratch: json::Scanned::default(),
    };
    // The window holds the buffer's bytes `start..start + len`.
    let (mut start, mut len) = (from, 0);
    let mut pos = from;
    while pos < to {
        // Keep the part of a line the window ends in, and read on to the end of a line.
        window.copy_within(pos - start..len, 0);
        len -= pos - start;
        start = pos;
        let mut want = WINDOW;
        let limit = loop {
            let fill_to = (start + len + want).min(to);
            if fill_to - start > WINDOW_MAX {
                break None;
            }
            if window.len() < fill_to - start {
                window.resize(fill_to - start, 0);
            }
            if !buf.read_at(start + len, &mut window[len..fill_to - start]) {
                break None;
            }
            len = fill_to - start;
            if fill_to == to {
                break Some(to);
            }
            match memchr::memrchr(b'\n', &window[..len]) {
                Some(i) => break Some(start + i + 1),
                // A line longer than the window: a larger one.
                None => want *= 2,
            }
        };
        let Some(limit) = limit else {
            // No copy (a read failed, or the line is too long for the window): the rest of
            // the piece is read in place.
            lines.scan(buf, (**buf).as_ref(), 0, pos, to, true);
            break;
        };
        lines.scan(buf, &window[..len], start, pos, limit, false);
        pos = limit;
    }
    (lines.out, lines.line)
}

/// What [`scan_chunk`] has found so far.
struct Lines {
    out: Vec<Scanned1>,
    /// Lines ended so far (the number of the next line, from 0 at the piece's start).
    line: u64,
    /// The member lists of one line, reused for the next.
    scratch: json::Scanned,
}

impl Lines {
    /// Scans the lines of the buffer's bytes `from..to`, which are `src[from - base..to -
    /// base]`: `src` is the buffer itself (`base` 0) or a copy of a part of it. `to` is the
    /// piece's end or just after a `\n`. In place, scanned bytes are given back in steps,
    /// so that a mapped file is never resident whole.
    fn scan(
        &mut self,
        buf: &Backing,
        src: &[u8],
        base: usize,
        from: usize,
        to: usize,
        in_place: bool,
    ) {
        let copied = !in_place;
        const RELEASE_STEP: usize = 8 << 20;
        let mut released = from;
        let mut pos = from;
        while pos < to {
            if in_place && pos - released >= RELEASE_STEP {
                buf.release(released..pos);
                released = pos;
            }
            let (found, next) = scan_one(buf, src, base, pos, to, copied, &mut self.scratch);
            if let Some(mut it) = found {
                it.line = self.line;
                self.out.push(it);
            }
            self.line += (next > pos && src[next - 1 - base] == b'\n') as u64;
            pos = next;
        }
        if in_place {
            buf.release(released..to);
        }
    }
}

/// Scans the line of the buffer starting at `pos` (`src` and `base` as in [`Lines::scan`],
/// `to` the piece's end or just after a `\n`): what it holds (`None` for a blank line;
/// `line` is left 0 for the caller) and where the next line starts.
fn scan_one(
    buf: &Backing,
    src: &[u8],
    base: usize,
    pos: usize,
    to: usize,
    copied: bool,
    scratch: &mut json::Scanned,
) -> (Option<Scanned1>, usize) {
    // The common case in one pass: a valid UTF-8 JSON line, its end found by the scan.
    if let Some(len) = scan::scan_line(&src[pos - base..to - base], scratch) {
        let end = pos + len;
        let has_nl = end < to;
        let offset = pos as u64;
        let copy = copied.then(|| &src[pos - base..end - base]);
        let text = Text::new(buf.clone(), pos..end);
        let value = value_of(text, copy, scratch, offset);
        let it = Scanned1 {
            line: 0,
            offset,
            has_nl,
            invalid_utf8: false,
            len,
            value: Ok(value),
        };
        return (Some(it), end + has_nl as usize);
    }
    let (end, next, has_nl) = match memchr::memchr(b'\n', &src[pos - base..to - base]) {
        Some(i) => (pos + i, pos + i + 1, true),
        None => (to, to, false),
    };
    let raw = &src[pos - base..end - base];
    let offset = pos as u64;
    if scan::is_blank(raw) {
        return (None, next);
    }
    let invalid_utf8 = simdutf8::basic::from_utf8(raw).is_err();
    let value = if !invalid_utf8 {
        let text = Text::new(buf.clone(), offset as usize..end);
        let copy = copied.then_some(raw);
        scan::scan(raw).map(|scanned| value_of(text, copy, &scanned, offset))
    } else {
        let text = Text::owned(String::from_utf8_lossy(raw).into_owned());
        scan::scan(text.as_bytes()).map(|scanned| value_of(text, None, &scanned, offset))
    };
    let it = Scanned1 {
        line: 0,
        offset,
        has_nl,
        invalid_utf8,
        len: raw.len(),
        value,
    };
    (Some(it), next)
}

/// Where one entry line of a file is, as a load found it: for [`entries_at`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineAt {
    /// Byte offset of the line.
    pub offset: u64,
    /// Its length, without the `\n`.
    pub len: u64,
    /// Its 1-based line number.
    pub line: u64,
    /// Its position among the file's parsed values (header = 0).
    pub ordinal: u32,
}

impl LineAt {
    /// Where `e`'s line is, when its text is the file's very bytes (not for an entry made
    /// in memory, nor one read with U+FFFD for bytes that are not UTF-8).
    pub fn of(e: &Entry) -> Option<LineAt> {
        let span = e.span_in_file()?;
        Some(LineAt {
            offset: span.start,
            len: span.end - span.start,
            line: e.line,
            ordinal: e.ordinal,
        })
    }
}

/// The entries on the given lines of `buf`, parsed as a whole load parses them, or `None`
/// when one of them is not an entry there: out of the buffer, not starting a line, not
/// ending at its `\n` (or at the end of the buffer), or not one JSON object. For a reader
/// that knows where the lines it needs are (only those lines' bytes are touched).
pub fn entries_at(buf: &Backing, lines: &[LineAt]) -> Option<Vec<Entry>> {
    // Many megabytes of lines are shared among the cores, in runs of about equal bytes.
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let total: u64 = lines.iter().map(|l| l.len).fold(0, u64::saturating_add);
    if threads < 2 || lines.len() < 2 * threads || total < (PARALLEL_MIN / 2) as u64 {
        return entries_at_in_turn(buf, lines);
    }
    let share = total / threads as u64;
    let mut runs: Vec<&[LineAt]> = Vec::with_capacity(threads);
    let (mut start, mut bytes) = (0, 0u64);
    for (i, l) in lines.iter().enumerate() {
        bytes = bytes.saturating_add(l.len);
        if bytes >= share && runs.len() + 1 < threads {
            runs.push(&lines[start..=i]);
            (start, bytes) = (i + 1, 0);
        }
    }
    runs.push(&lines[start..]);
    let parts: Vec<Option<Vec<Entry>>> = std::thread::scope(|sc| {
        let handles: Vec<_> = runs[1..]
            .iter()
            .map(|run| sc.spawn(move || entries_at_in_turn(buf, run)))
            .collect();
        let mut parts = vec![entries_at_in_turn(buf, runs[0])];
        parts.extend(
            handles
                .into_iter()
                .map(|h| h.join().expect("scanner thread")),
        );
        parts
    });
    let mut out = Vec::with_capacity(lines.len());
    for part in parts {
        out.extend(part?);
    }
    Some(out)
}

/// [`entries_at`] on one thread.
fn entries_at_in_turn(buf: &Backing, lines: &[LineAt]) -> Option<Vec<Entry>> {
    let bytes: &[u8] = (**buf).as_ref();
    let mut scratch = json::Scanned::default();
    let mut out = Vec::with_capacity(lines.len());
    for at in lines {
        let pos = usize::try_from(at.offset).ok()?;
        let end = pos.checked_add(usize::try_from(at.len).ok()?)?;
        if end > bytes.len() || (pos > 0 && bytes[pos - 1] != b'\n') {
            return None;
        }
        let to = if end < bytes.len() {
            if bytes[end] != b'\n' {
                return None;
            }
            end + 1
        } else {
            end
        };
        let (Some(it), next) = scan_one(buf, bytes, 0, pos, to, false, &mut scratch) else {
            return None;
        };
        if next != to || it.len != end - pos {
            return None;
        }
        let Ok(Value1::Object(mut entry)) = it.value else {
            return None;
        };
        entry.line = at.line;
        entry.ordinal = at.ordinal;
        out.push(entry);
    }
    Some(out)
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
                let mut window = Vec::new();
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if k >= n {
                        break mine;
                    }
                    mine.push((k, scan_chunk(&buf, bounds[k], bounds[k + 1], &mut window)));
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
        vec![scan_chunk(&buf, start, len, &mut Vec::new())]
    };
    buf.scanned();

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::Buffer;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Bytes that can be read elsewhere, as a mapped file's: each read copies, and the
    /// reads after the first `reads` fail (the scan then goes on in place).
    struct Copies {
        bytes: Vec<u8>,
        reads: AtomicUsize,
    }

    impl AsRef<[u8]> for Copies {
        fn as_ref(&self) -> &[u8] {
            &self.bytes
        }
    }

    impl Buffer for Copies {
        fn read_at(&self, at: usize, dst: &mut [u8]) -> bool {
            let left = self.reads.load(Ordering::Relaxed);
            if left == 0 {
                return false;
            }
            self.reads.store(left - 1, Ordering::Relaxed);
            dst.copy_from_slice(&self.bytes[at..at + dst.len()]);
            true
        }
    }

    /// Everything a parse found, as text: entries (with the fields read at the scan),
    /// diagnostics, the tail and the counts.
    fn fingerprint(p: &Result<Parsed, NotSession>) -> String {
        let p = match p {
            Ok(p) => p,
            Err(e) => return format!("{e:?}"),
        };
        let mut s = format!("{:?} {:?} {} {}\n", p.header.text(), p.tail, p.len, p.lines);
        for e in &p.entries {
            s += &format!(
                "{} {} {} {:?} {:?} {:?} {:?} {:?}",
                e.line,
                e.offset,
                e.ordinal,
                e.entry_type,
                e.id,
                e.parent,
                e.role,
                e.text()
            );
            for key in [
                "type",
                "id",
                "parentId",
                "timestamp",
                "message",
                "label",
                "x",
            ] {
                s += &format!(" {:?}", e.field(key).map(|r| r.text().to_string()));
            }
            for key in ["role", "content"] {
                s += &format!(" {:?}", e.message_field(key).map(|r| r.text().to_string()));
            }
            s += "\n";
        }
        for d in &p.diagnostics {
            s += &format!("{d:?}\n");
        }
        s
    }

    /// A session of lines of every kind and length: short and long entries (longer than
    /// the window, so that it grows), strings with escapes and multi-byte characters,
    /// blank lines, bad JSON, non-objects, invalid UTF-8, and sometimes no last newline.
    fn session(rng: &mut sessiontree_testkit::Rng) -> Vec<u8> {
        let mut b = br#"{"type":"session","version":3,"id":"s1","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/w"}"#.to_vec();
        b.push(b'\n');
        for n in 0..rng.pick(40) {
            let long = match rng.pick(5) {
                0 => 0,
                1 => rng.pick(40),
                2 => rng.pick(300),
                3 => rng.pick(3 * WINDOW),
                // Longer than the largest window: scanned in place.
                _ => rng.pick(6 * WINDOW_MAX),
            };
            let text: String = (0..long)
                .map(|k| ["a", "é", "\\n", "日", "\\\"", " ", "\\u00e9"][k % 7])
                .collect();
            let line = match rng.pick(12) {
                0 => "{not json".to_string(),
                1 => "   ".to_string(),
                2 => "42".to_string(),
                3 => String::new(),
                4 => format!(
                    r#"{{"type":"label","id":"l{n}","parentId":null,"targetId":"e1","label":"{text}"}}"#
                ),
                _ => format!(
                    r#"{{"type":"message","id":"e{n}","parentId":null,"timestamp":"2024-12-03T14:00:00.000Z","message":{{"role":"user","content":"{text}"}},"x":[1,{{"y":"z"}}]}}"#
                ),
            };
            let mut line = line.into_bytes();
            if rng.pick(15) == 0 && !line.is_empty() {
                let at = rng.pick(line.len());
                line.insert(at, [0xff, 0xc3, 0x80][rng.pick(3)]);
            }
            b.extend_from_slice(&line);
            b.push(b'\n');
        }
        if rng.pick(3) == 0 {
            b.extend_from_slice(br#"{"type":"message","id":"torn"#);
        } else if rng.pick(3) == 0 {
            b.extend_from_slice(br#"{"type":"custom","id":"last","parentId":null}"#);
        }
        b
    }

    /// A piece read a window at a time into a copy gives what a scan in place gives, for
    /// every split into pieces, and when the reads start failing part of the way.
    #[test]
    fn scanning_copies_gives_what_scanning_in_place_gives() {
        let mut rng = sessiontree_testkit::Rng(3);
        for round in 0..120 {
            let bytes = session(&mut rng);
            for threads in [1, 2, 5] {
                let expect = fingerprint(&parse_with_threads(backing(bytes.clone()), threads));
                for reads in [usize::MAX, 0, 1, 2, 7] {
                    let copies = Copies {
                        bytes: bytes.clone(),
                        reads: AtomicUsize::new(reads),
                    };
                    let got = fingerprint(&parse_with_threads(Arc::new(copies), threads));
                    assert!(
                        got == expect,
                        "round {round}, {threads} threads, {reads} reads:\n{got}\n---\n{expect}"
                    );
                }
            }
        }
    }

    fn described(e: &Entry) -> String {
        format!(
            "{}:{}:{}:{:?}:{:?}:{:?}:{}",
            e.line,
            e.offset,
            e.ordinal,
            e.id,
            e.entry_type,
            e.role,
            e.text()
        )
    }

    fn lines_of(entries: &[Entry]) -> Vec<LineAt> {
        entries.iter().filter_map(LineAt::of).collect()
    }

    /// The entries read from where a parse found them are the entries it gave, in any
    /// selection and order, on one core or shared among several; a line that is not where
    /// it is said to be fails the whole read.
    #[test]
    fn entries_read_where_they_are_are_those_of_the_whole_parse() {
        let mut rng = sessiontree_testkit::Rng(17);
        for round in 0..200 {
            let bytes = session(&mut rng);
            let buf = backing(bytes.clone());
            let Ok(parsed) = parse(buf.clone()) else {
                continue;
            };
            let all = lines_of(&parsed.entries);
            let mut picked: Vec<usize> = (0..all.len()).filter(|_| rng.pick(2) == 0).collect();
            if rng.pick(2) == 0 {
                picked.reverse();
            }
            let wanted: Vec<LineAt> = picked.iter().map(|&i| all[i]).collect();
            let got = entries_at(&buf, &wanted).expect("every line is there");
            let by_offset = |at: &LineAt| {
                parsed
                    .entries
                    .iter()
                    .find(|e| e.offset == at.offset)
                    .map(described)
            };
            for (e, at) in got.iter().zip(&wanted) {
                assert_eq!(Some(described(e)), by_offset(at), "round {round}");
            }
            if let Some(first) = wanted.first() {
                for forged in [
                    LineAt {
                        offset: first.offset + 1,
                        ..*first
                    },
                    LineAt {
                        len: first.len + 1,
                        ..*first
                    },
                    LineAt {
                        len: first.len.saturating_sub(1),
                        ..*first
                    },
                    LineAt {
                        offset: bytes.len() as u64,
                        ..*first
                    },
                ] {
                    let mut w = wanted.clone();
                    w[0] = forged;
                    assert!(entries_at(&buf, &w).is_none(), "round {round}: {forged:?}");
                }
            }
        }
        // Megabytes of lines: shared among the cores, the same entries as on one.
        let mut big = br#"{"type":"session","version":3,"id":"s","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/w"}"#.to_vec();
        big.push(b'\n');
        let mut n = 0;
        while big.len() < PARALLEL_MIN {
            let pad = "é x\\n".repeat(rng.pick(4000));
            big.extend_from_slice(
                format!(r#"{{"type":"message","id":"e{n}","parentId":null,"message":{{"role":"user","content":"{pad}"}}}}"#)
                    .as_bytes(),
            );
            big.push(b'\n');
            n += 1;
        }
        let buf = backing(big);
        let parsed = parse(buf.clone()).unwrap();
        let wanted = lines_of(&parsed.entries);
        let shared = entries_at(&buf, &wanted).unwrap();
        let in_turn = entries_at_in_turn(&buf, &wanted).unwrap();
        assert_eq!(shared.len(), parsed.entries.len());
        for ((a, b), c) in shared.iter().zip(&in_turn).zip(&parsed.entries) {
            assert_eq!(described(a), described(c));
            assert_eq!(described(b), described(c));
        }
        let mut w = wanted.clone();
        let last = w.len() - 1;
        w[last].offset += 1;
        assert!(
            entries_at(&buf, &w).is_none(),
            "a bad line in the last share"
        );
    }
}
