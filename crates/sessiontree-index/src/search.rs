//! Full-text search over session files: words (all must occur in one entry's text), a
//! phrase, or a regex; no full-text index.
//!
//! A search is a parallel scan of the raw bytes. A prefilter that decodes nothing (a
//! case-insensitive literal search for the query's pieces, written as JSON writes them,
//! [`Matcher`]) finds candidate lines; only those are JSON-decoded, and the exact rules then
//! apply to the entry's searchable text (message text, not keys or escapes). Per-file
//! summaries ([`crate::summary`]) let later searches skip files that cannot hold a hit and
//! stop once the newest `limit` hits are certain; they never change which hits are found.
//!
//! Order: newest entry first (`timestamp`), entries without one last; ties by path, then by
//! position in the file.
//!
//! Newest first, and no more than needed: files are read in order of the newest entry they
//! may hold, and a file that cannot hold one newer than the newest `limit` hits found so far
//! is not read. That bound is the summary's newest entry when the file has a valid summary,
//! else the file's mtime plus [`MTIME_MARGIN_MS`] (an hour): an assumption, true of files
//! that Pi or an import appends to on one clock (every entry is stamped before it is
//! written). A file whose mtime was set back by more than the margin (`touch -d`, a copy
//! that gave it an older file's time), or whose entries were stamped by a clock more than
//! the margin ahead, may then be left unread though it holds a newer hit; summaries, once
//! built, and [`Unsummarized::Unbounded`] (`search --no-index`) read it. Inside a file, a
//! candidate line is ranked before it is decoded: its time is read with one validating
//! scan ([`crate::list::row_ts_ms`], the same rule that gives a hit its time), and a line
//! that cannot enter the newest `limit` is not decoded. That part is exact.

use crate::list::{Acc, EntryText, FileStat};
use crate::summary::{FileSummary, Summaries};
use regex::bytes::Regex as BytesRegex;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Words,
    Phrase,
    Regex,
}

#[derive(Clone, Debug)]
pub struct Query {
    /// Words separated by whitespace (each must occur), a phrase, or a regex.
    pub text: String,
    pub mode: Mode,
    /// Only sessions whose header cwd resolves to this.
    pub cwd: Option<PathBuf>,
    pub role: Option<String>,
    pub since_ms: Option<f64>,
    pub until_ms: Option<f64>,
    pub limit: usize,
}

impl Query {
    /// `text` in `mode`, at most `limit` hits, no filter on cwd, role or time.
    pub fn new(text: &str, mode: Mode, limit: usize) -> Query {
        Query {
            text: text.into(),
            mode,
            cwd: None,
            role: None,
            since_ms: None,
            until_ms: None,
            limit,
        }
    }

    /// Does a session of this working directory belong to the query (its `cwd`, if any)?
    fn cwd_ok(&self, cwd: &str) -> bool {
        self.cwd
            .as_deref()
            .is_none_or(|w| crate::list::cwd_matches(cwd, w))
    }
}

/// One entry whose text matches.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    pub path: String,
    pub cwd: String,
    pub entry_id: String,
    pub role: String,
    pub timestamp: Option<String>,
    /// The entry is on the session's current branch (root to the last entry).
    pub on_branch: bool,
    /// The text around the first match (newlines and tabs as spaces, `…` where cut).
    pub snippet: String,
    /// Every match inside `snippet`, as `[start, end)` offsets in Unicode characters.
    pub highlights: Vec<(usize, usize)>,
    /// Every match in the entry's whole searchable text, as `[start, end)` UTF-8 byte
    /// offsets (each word's occurrences, for several words).
    pub matches: Vec<(usize, usize)>,
    #[serde(skip)]
    pub ts_ms: Option<f64>,
    #[serde(skip)]
    line_offset: u64,
    #[serde(skip)]
    row: usize,
}

/// What a search did (for benchmarks and tests).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Stats {
    pub files: usize,
    /// Files read and scanned.
    pub scanned: usize,
    /// Files a summary ruled out (no hit possible).
    pub ruled_out: usize,
    /// Files with a valid summary (ruled out or not).
    pub summarized: usize,
    /// Files not read because the newest `limit` hits were already certain.
    pub skipped_older: usize,
    pub bytes_scanned: u64,
    /// Candidate lines decoded.
    pub decoded_lines: u64,
    /// Candidate lines not decoded: their time ranks them below the newest `limit` hits.
    pub ranked_out_lines: u64,
}

impl Stats {
    /// Adds what one scanning thread did (files and bytes read, lines decoded; files
    /// skipped as older: the most any thread skipped, they count the same tail).
    fn add_scan(&mut self, st: &Stats) {
        self.scanned += st.scanned;
        self.bytes_scanned += st.bytes_scanned;
        self.decoded_lines += st.decoded_lines;
        self.ranked_out_lines += st.ranked_out_lines;
        self.skipped_older = self.skipped_older.max(st.skipped_older);
    }
}

/// An invalid query (a regex that does not compile).
#[derive(Debug)]
pub struct QueryError(pub String);

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for QueryError {}

/// Finds `needle` in `hay` from `from`, ASCII case-insensitively.
fn find_ci_from(hay: &str, needle: &str, from: usize) -> Option<(usize, usize)> {
    let h = hay.as_bytes();
    let n = needle.as_bytes();
    if n.is_empty() || h.len() < n.len() {
        return None;
    }
    (from..=h.len() - n.len())
        .find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n) && hay.is_char_boundary(i))
        .map(|i| (i, i + n.len()))
}

/// Every non-overlapping occurrence of `needle` (ASCII case-insensitive).
fn find_all_ci(hay: &str, needle: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some((a, b)) = find_ci_from(hay, needle, at) {
        out.push((a, b));
        at = b;
    }
    out
}

/// Writes `s` as JSON.stringify writes it inside a string (without the quotes).
fn json_escaped(s: &[u8]) -> Vec<u8> {
    let mut o = Vec::with_capacity(s.len() + 8);
    for &c in s {
        match c {
            b'"' => o.extend_from_slice(b"\\\""),
            b'\\' => o.extend_from_slice(b"\\\\"),
            b'\n' => o.extend_from_slice(b"\\n"),
            b'\r' => o.extend_from_slice(b"\\r"),
            b'\t' => o.extend_from_slice(b"\\t"),
            0x08 => o.extend_from_slice(b"\\b"),
            0x0c => o.extend_from_slice(b"\\f"),
            c if c < 0x20 => o.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
            c => o.push(c),
        }
    }
    o
}

/// The pieces of a searched text that each lie inside one JSON string of the line: an
/// entry's text joins content blocks with a space and a command with its output with a
/// newline, so a match may span two strings, but never across those separators.
fn pieces(s: &[u8]) -> Vec<Vec<u8>> {
    s.split(|&c| c == b' ' || c == b'\n')
        .filter(|p| !p.is_empty())
        .map(json_escaped)
        .collect()
}

/// A case-insensitive (ASCII) byte-literal search.
fn literal_regex(alts: &[&[u8]]) -> BytesRegex {
    let mut pat = String::from("(?i-u)");
    for (n, lit) in alts.iter().enumerate() {
        if n > 0 {
            pat.push('|');
        }
        for &b in *lit {
            if b.is_ascii_alphanumeric() {
                pat.push(b as char);
            } else {
                pat.push_str(&format!("\\x{b:02x}"));
            }
        }
    }
    regex::bytes::RegexBuilder::new(&pat)
        .size_limit(1 << 26)
        .build()
        .expect("escaped literals")
}

/// The decode-free prefilter and the exact test of a query.
pub struct Matcher {
    mode: Mode,
    /// Words mode: the words; phrase: the phrase.
    terms: Vec<String>,
    re: Option<regex::Regex>,
    /// Candidate lines: every line (no literal can be required), or lines where `driver`
    /// matches and that hold every one of `also`.
    all_lines: bool,
    driver: Option<BytesRegex>,
    also: Vec<BytesRegex>,
    /// For summaries: a file can hold a hit only if, for one of these alternatives, it
    /// holds every piece (lower-cased, escaped).
    pub(crate) alternatives: Vec<Vec<Vec<u8>>>,
}

impl Matcher {
    pub fn new(q: &Query) -> Result<Matcher, QueryError> {
        let terms: Vec<String> = match q.mode {
            Mode::Words => q.text.split_whitespace().map(str::to_string).collect(),
            Mode::Phrase => vec![q.text.clone()],
            Mode::Regex => Vec::new(),
        };
        let mut re = None;
        // Alternatives of required pieces; `None`: no literal is required.
        let alternatives: Option<Vec<Vec<Vec<u8>>>> = match q.mode {
            Mode::Words | Mode::Phrase => {
                let mut all: Vec<Vec<u8>> = Vec::new();
                for t in &terms {
                    for p in pieces(t.as_bytes()) {
                        if !all.contains(&p) {
                            all.push(p);
                        }
                    }
                }
                // A lossily decoded line may hold U+FFFD where its bytes do not.
                let lossy = terms.iter().any(|t| t.contains('\u{fffd}'));
                (!all.is_empty() && !lossy).then(|| vec![all])
            }
            Mode::Regex => {
                let r = regex::Regex::new(&q.text).map_err(|e| QueryError(e.to_string()))?;
                re = Some(r);
                regex_literals(&q.text)
            }
        };
        let (all_lines, driver, also, alternatives) = match alternatives {
            None => (true, None, Vec::new(), Vec::new()),
            Some(alts) => {
                let alts: Vec<Vec<Vec<u8>>> = alts
                    .into_iter()
                    .map(|a| a.into_iter().map(|p| p.to_ascii_lowercase()).collect())
                    .collect();
                if alts.len() == 1 {
                    let mut ps = alts[0].clone();
                    // The longest piece drives (the rarest, as a rule).
                    ps.sort_by_key(|p| std::cmp::Reverse(p.len()));
                    let driver = literal_regex(&[&ps[0]]);
                    let also = ps[1..].iter().map(|p| literal_regex(&[p])).collect();
                    (false, Some(driver), also, alts)
                } else {
                    // Regex alternatives: the longest piece of each.
                    let longest: Vec<&[u8]> = alts
                        .iter()
                        .map(|a| {
                            a.iter()
                                .max_by_key(|p| p.len())
                                .expect("nonempty")
                                .as_slice()
                        })
                        .collect();
                    (false, Some(literal_regex(&longest)), Vec::new(), alts)
                }
            }
        };
        Ok(Matcher {
            mode: q.mode,
            terms,
            re,
            all_lines,
            driver,
            also,
            alternatives,
        })
    }

    /// Whether a summary lets a file hold a hit.
    pub(crate) fn may_match(&self, s: &FileSummary) -> bool {
        if self.all_lines || s.unusual_escapes() {
            return true;
        }
        self.alternatives
            .iter()
            .any(|alt| alt.iter().all(|p| s.may_contain(p)))
    }

    /// The matches in one entry's text (`None`: no hit).
    fn test(&self, text: &str) -> Option<Vec<(usize, usize)>> {
        match self.mode {
            Mode::Regex => {
                let re = self.re.as_ref().expect("regex mode");
                let v: Vec<(usize, usize)> =
                    re.find_iter(text).map(|m| (m.start(), m.end())).collect();
                (!v.is_empty()).then_some(v)
            }
            Mode::Words | Mode::Phrase => {
                let mut v = Vec::new();
                for t in &self.terms {
                    let f = find_all_ci(text, t);
                    if f.is_empty() {
                        return None;
                    }
                    v.extend(f);
                }
                if v.is_empty() {
                    // No words at all: every text matches.
                    return Some(v);
                }
                v.sort_unstable();
                Some(v)
            }
        }
    }

    /// Calls `f` with the range of every candidate line of `buf` (complete lines, `\n`
    /// excluded), in order, each once.
    fn candidates(&self, buf: &[u8], mut f: impl FnMut(usize, usize)) {
        let line_at = |i: usize| {
            let a = memchr::memrchr(b'\n', &buf[..i]).map_or(0, |p| p + 1);
            let b = memchr::memchr(b'\n', &buf[i..]).map_or(buf.len(), |p| i + p);
            (a, b)
        };
        if self.all_lines {
            let mut a = 0;
            for nl in memchr::memchr_iter(b'\n', buf) {
                f(a, nl);
                a = nl + 1;
            }
            return;
        }
        // Lines with escapes that JSON.stringify would not write (`\u0041`, `\/`) may
        // hide a piece from the literal search: they are candidates too.
        let mut odd: Vec<usize> = crate::escapes::unusual(buf).collect();
        odd.sort_unstable();
        let driver = self.driver.as_ref().expect("driver");
        let mut odd_i = 0;
        let mut pos = 0;
        let mut last_line_end: Option<usize> = None;
        let mut emit = |a: usize, b: usize, f: &mut dyn FnMut(usize, usize)| {
            if last_line_end.is_none_or(|e| a > e) {
                last_line_end = Some(b);
                f(a, b);
            }
        };
        while pos < buf.len() {
            let next_hit = driver.find_at(buf, pos).map(|m| m.start());
            // Odd lines before the next literal hit come first (lines in order).
            while odd_i < odd.len() && next_hit.is_none_or(|h| odd[odd_i] < h) {
                let (a, b) = line_at(odd[odd_i]);
                emit(a, b, &mut f);
                odd_i += 1;
            }
            let Some(h) = next_hit else { break };
            let (a, b) = line_at(h);
            let line = &buf[a..b];
            if self.also.iter().all(|r| r.is_match(line)) {
                emit(a, b, &mut f);
            }
            pos = b + 1;
            while odd_i < odd.len() && odd[odd_i] < pos {
                let (oa, ob) = line_at(odd[odd_i]);
                emit(oa, ob, &mut f);
                odd_i += 1;
            }
        }
    }
}

/// Literals one of which every match of `pattern` starts with, split into pieces
/// (`None`: no such literals).
fn regex_literals(pattern: &str) -> Option<Vec<Vec<Vec<u8>>>> {
    use regex_syntax::hir::literal::{ExtractKind, Extractor};
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(pattern)
        .ok()?;
    let seq = Extractor::new().kind(ExtractKind::Prefix).extract(&hir);
    let lits = seq.literals()?;
    if lits.is_empty() {
        return None;
    }
    let mut alts = Vec::new();
    for l in lits {
        // The longest piece before or between separators lies inside one string.
        let p = pieces(l.as_bytes()).into_iter().max_by_key(|p| p.len())?;
        if l.as_bytes().contains(&0xef) {
            // Possibly U+FFFD, which a lossily decoded line may hold where its bytes do not.
            return None;
        }
        alts.push(vec![p]);
    }
    Some(alts)
}

/// Up to `ctx` characters either side of the first match; the matches inside it as
/// character offsets.
pub fn snippet(
    text: &str,
    matches: &[(usize, usize)],
    ctx: usize,
) -> (String, Vec<(usize, usize)>) {
    let (a, b) = matches.first().copied().unwrap_or((0, 0));
    let start = text[..a]
        .char_indices()
        .rev()
        .nth(ctx.saturating_sub(1))
        .map(|(i, _)| i)
        .unwrap_or(0);
    let end = text[b..]
        .char_indices()
        .nth(ctx)
        .map(|(i, _)| b + i)
        .unwrap_or(text.len());
    let mut out = String::new();
    let lead = if start > 0 { 1 } else { 0 };
    if start > 0 {
        out.push('…');
    }
    for c in text[start..end].chars() {
        out.push(if matches!(c, '\n' | '\r' | '\t') {
            ' '
        } else {
            c
        });
    }
    if end < text.len() {
        out.push('…');
    }
    let chars = |x: usize| lead + text[start..x].chars().count();
    let mut hl: Vec<(usize, usize)> = Vec::new();
    for &(x, y) in matches
        .iter()
        .filter(|&&(x, y)| x >= start && y <= end && y > x)
    {
        let (x, y) = (chars(x), chars(y));
        // Sorted and merged: overlapping words make one highlighted run.
        match hl.last_mut() {
            Some(l) if x <= l.1 => l.1 = l.1.max(y),
            _ => hl.push((x, y)),
        }
    }
    (out, hl)
}

/// Total order of hits: newest first, no timestamp last, then path, then file position.
struct Ranked(Hit);

impl PartialEq for Ranked {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == std::cmp::Ordering::Equal
    }
}

impl Eq for Ranked {}

impl Ord for Ranked {
    /// "Greater" = better (sorts first).
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        let t = |h: &Hit| h.ts_ms.filter(|t| !t.is_nan());
        match (t(&self.0), t(&o.0)) {
            (Some(a), Some(b)) => a.total_cmp(&b),
            (Some(_), None) => std::cmp::Ordering::Greater,
            (None, Some(_)) => std::cmp::Ordering::Less,
            (None, None) => std::cmp::Ordering::Equal,
        }
        .then_with(|| o.0.path.cmp(&self.0.path))
        .then_with(|| o.0.line_offset.cmp(&self.0.line_offset))
        .then_with(|| o.0.row.cmp(&self.0.row))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

/// The best `limit` hits so far (a min-heap of them).
struct Top {
    limit: usize,
    heap: BinaryHeap<std::cmp::Reverse<Ranked>>,
    /// The time of the worst of `limit` hits found elsewhere (another thread's, merged),
    /// when there are that many: a hit older than that cannot be among the best either.
    bar: Option<Option<f64>>,
}

/// Whether a hit of time `ts` may rank above one of time `worst`: not when it is strictly
/// older (ties go by path and position, which are left to the full comparison).
fn may_beat(ts: Option<f64>, worst: Option<f64>) -> bool {
    let t = |x: Option<f64>| x.filter(|t| !t.is_nan());
    match (t(ts), t(worst)) {
        (Some(a), Some(b)) => a.total_cmp(&b) != std::cmp::Ordering::Less,
        (Some(_), None) | (None, None) => true,
        (None, Some(_)) => false,
    }
}

impl Top {
    fn new(limit: usize) -> Top {
        Top {
            limit,
            heap: BinaryHeap::new(),
            bar: None,
        }
    }

    fn push(&mut self, h: Hit) {
        if self.limit == 0 {
            return;
        }
        let r = std::cmp::Reverse(Ranked(h));
        if self.heap.len() < self.limit {
            self.heap.push(r);
        } else if let Some(worst) = self.heap.peek() {
            if r < *worst {
                self.heap.pop();
                self.heap.push(r);
            }
        }
    }

    /// The worst hit's time when the heap is full.
    fn full_worst(&self) -> Option<Option<f64>> {
        if self.heap.len() < self.limit {
            return None;
        }
        self.heap.peek().map(|w| w.0 .0.ts_ms)
    }

    /// Whether some candidates may be ruled out by time (`limit` hits are known).
    fn ranks_out(&self) -> bool {
        self.limit == 0 || self.heap.len() >= self.limit || self.bar.is_some()
    }

    /// Whether a hit of time `ts` (`ts_ms` of [`Hit`]) could still enter.
    fn may_enter(&self, ts: Option<f64>) -> bool {
        self.limit > 0
            && self.full_worst().is_none_or(|w| may_beat(ts, w))
            && self.bar.is_none_or(|w| may_beat(ts, w))
    }

    /// Whether no hit older than `ts` (or without a timestamp) can enter any more.
    fn closed_below(&self, ts: f64) -> bool {
        self.heap.len() >= self.limit
            && self
                .heap
                .peek()
                .and_then(|w| w.0 .0.ts_ms)
                .is_some_and(|w| ts < w)
    }
}

thread_local! {
    static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Reads a regular file whole into `buf` (cleared first); `false` when unreadable.
fn read_file(path: &Path, buf: &mut Vec<u8>) -> bool {
    use std::io::Read;
    buf.clear();
    // Non-blocking open, type checked on the handle: a file swapped for a FIFO after the
    // walk can never hang a search.
    let Ok((f, m)) = sessiontree::store::open_regular(path) else {
        return false;
    };
    buf.reserve(m.len() as usize + 1);
    (&f).read_to_end(buf).is_ok()
}

/// The session header: `Some(cwd)` when the file is a session (its first parsed line is a
/// header), read as the listing reads it.
fn header_cwd(buf: &[u8]) -> Option<String> {
    let mut acc = Acc::new(false);
    let mut a = 0;
    for nl in memchr::memchr_iter(b'\n', buf) {
        acc.feed(&buf[a..nl], None);
        if acc.not_session {
            return None;
        }
        if acc.header_seen {
            return Some(acc.cwd);
        }
        a = nl + 1;
    }
    None
}

/// Searches one file's complete lines (all of `buf` up to its last `\n`).
fn search_buf(path: &str, buf: &[u8], m: &Matcher, q: &Query, stats: &mut Stats, top: &mut Top) {
    let end = memchr::memrchr(b'\n', buf).map_or(0, |p| p + 1);
    let buf = &buf[..end];
    let Some(cwd) = header_cwd(buf) else { return };
    if !q.cwd_ok(&cwd) {
        return;
    }
    let header_end = memchr::memchr(b'\n', buf).map_or(0, |p| p + 1);
    let mut rows: Vec<EntryText> = Vec::new();
    // Candidates from the end of the file: entries are appended in time order as a rule,
    // so the newest fill the heap first and the older ones before them rank out undecoded.
    // (Any order gives the same hits: ties are settled by the heap's order.)
    let mut lines: Vec<(usize, usize)> = Vec::new();
    m.candidates(buf, |a, b| {
        if a >= header_end {
            // The header (or a line before it) is never an entry.
            lines.push((a, b));
        }
    });
    for (a, b) in lines.into_iter().rev() {
        // Rank before decoding: every row of a line has the line's time, and a line that
        // cannot enter the newest `limit` is not worth its text (most candidates, once the
        // heap is full).
        if top.ranks_out() {
            if let Some(ts) = crate::list::row_ts_ms(&buf[a..b]) {
                if !top.may_enter(ts) {
                    stats.ranked_out_lines += 1;
                    continue;
                }
            }
        }
        stats.decoded_lines += 1;
        rows.clear();
        let mut acc = Acc::new(false);
        acc.header_seen = true;
        acc.feed(&buf[a..b], Some(&mut rows));
        for (n, r) in rows.drain(..).enumerate() {
            if r.role.is_empty() {
                continue;
            }
            if q.role.as_deref().is_some_and(|want| want != r.role) {
                continue;
            }
            if let Some(s) = q.since_ms {
                if !r.ts_ms.is_some_and(|t| t >= s) {
                    continue;
                }
            }
            if let Some(u) = q.until_ms {
                if !r.ts_ms.is_some_and(|t| t < u) {
                    continue;
                }
            }
            let Some(matches) = m.test(&r.text) else {
                continue;
            };
            let (snippet, highlights) = snippet(&r.text, &matches, 40);
            top.push(Hit {
                path: path.to_string(),
                cwd: cwd.clone(),
                entry_id: r.entry_id,
                role: r.role,
                timestamp: r
                    .ts_ms
                    .filter(|t| t.is_finite() && t.abs() <= 8.64e15)
                    .map(|t| crate::date::iso_from_ms(t as i64)),
                on_branch: false,
                snippet,
                highlights,
                matches,
                ts_ms: r.ts_ms,
                line_offset: a as u64,
                row: n,
            });
        }
    }
}

/// JavaScript truthiness of a validated JSON value.
fn truthy(v: &[u8]) -> bool {
    match v.first() {
        None | Some(b'n') | Some(b'f') => false,
        Some(b'"') => v.len() > 2,
        Some(b'-' | b'0'..=b'9') => std::str::from_utf8(v)
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .is_none_or(|x| x != 0.0),
        _ => true,
    }
}

/// The entries on a session's current branch: from the last entry (of the complete
/// lines) up its parents, as the listing's pass reads ids.
fn branch_ids(buf: &[u8]) -> rustc_hash::FxHashSet<String> {
    use crate::json::{decode_string, scan};
    let end = memchr::memrchr(b'\n', buf).map_or(0, |p| p + 1);
    let mut parents: rustc_hash::FxHashMap<String, Option<String>> = Default::default();
    let mut leaf: Option<String> = None;
    let mut header = false;
    let mut one = |raw: &[u8]| {
        let owned;
        let b: &[u8] = match simdutf8::basic::from_utf8(raw) {
            Ok(_) => raw,
            Err(_) => {
                owned = String::from_utf8_lossy(raw).into_owned();
                owned.as_bytes()
            }
        };
        if scan::is_blank(b) {
            return;
        }
        let Ok(s) = scan::scan(b) else { return };
        let top = &b[s.top.clone()];
        if !truthy(top) {
            return;
        }
        if !header {
            header = true;
            return;
        }
        if top.first() != Some(&b'{') {
            return;
        }
        let get = |k: &str| {
            s.members
                .iter()
                .rev()
                .find(|m| decode_string(&b[m.key.clone()]) == k)
                .map(|m| &b[m.value.clone()])
        };
        let str_of = |v: &[u8]| (v.first() == Some(&b'"')).then(|| decode_string(v).into_owned());
        if let Some(id) = get("id").and_then(str_of) {
            let parent = get("parentId").and_then(str_of);
            parents.insert(id.clone(), parent);
            leaf = Some(id);
        }
    };
    let mut a = 0;
    for nl in memchr::memchr_iter(b'\n', &buf[..end]) {
        let line = &buf[a..nl];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if memchr::memchr(b'\r', line).is_some() {
            for part in line.split(|&c| c == b'\r') {
                one(part);
            }
        } else {
            one(line);
        }
        a = nl + 1;
    }
    let mut on = rustc_hash::FxHashSet::default();
    let mut cur = leaf;
    while let Some(c) = cur {
        if !on.insert(c.clone()) {
            break;
        }
        cur = parents.get(&c).cloned().flatten();
    }
    on
}

/// The files `q` may find something in, each with the newest entry time it may hold
/// (infinite without a valid summary: anything is possible there), in `files`' order. A
/// summary rules a file out when it is no session, lacks the query's trigrams, has a cwd
/// the query's `cwd` refuses, or ends before `since`; `stats.ruled_out` counts those. The one rule [`search`] and
/// [`search_sessions`] both apply.
fn files_to_read<'a>(
    files: &'a [(PathBuf, Option<FileStat>)],
    q: &Query,
    m: &Matcher,
    summaries: Option<&Summaries>,
    bound: Unsummarized,
    threads: usize,
    stats: &mut Stats,
) -> Vec<(&'a PathBuf, f64)> {
    // One part: its work in order, how many a summary ruled out, how many had one.
    let part = |files: &'a [(PathBuf, Option<FileStat>)]| {
        let mut work = Vec::with_capacity(files.len());
        let (mut ruled_out, mut summarized) = (0, 0);
        for (p, st) in files {
            let Some(st) = st else { continue };
            match summaries.and_then(|s| s.get_valid(p, st)) {
                Some(s) => {
                    summarized += 1;
                    if !s.is_session()
                        || !m.may_match(&s)
                        || !q.cwd_ok(s.cwd())
                        || q.since_ms.is_some_and(|since| s.max_ts() < since)
                    {
                        ruled_out += 1;
                        continue;
                    }
                    work.push((p, s.max_ts()));
                }
                None => work.push((p, bound.max_ts(st))),
            }
        }
        (work, ruled_out, summarized)
    };
    // Looking up thousands of summaries is memory-bound: the parts go on every core, in
    // order (the work list keeps `files`' order).
    let parts: Vec<_> = if threads > 1 && summaries.is_some() && files.len() >= 4096 {
        let size = files.len().div_ceil(threads);
        std::thread::scope(|s| {
            let handles: Vec<_> = files
                .chunks(size)
                .skip(1)
                .map(|c| s.spawn(move || part(c)))
                .collect();
            let mut parts = vec![part(&files[..size])];
            parts.extend(handles.into_iter().map(|h| h.join().expect("part")));
            parts
        })
    } else {
        vec![part(files)]
    };
    let mut work = Vec::with_capacity(parts.iter().map(|p| p.0.len()).sum());
    for (w, ruled_out, summarized) in parts {
        work.extend(w);
        stats.ruled_out += ruled_out;
        stats.summarized += summarized;
    }
    work
}

/// How much newer than its file's mtime an entry may be and still be found by a search
/// without summaries: room for a clock that stamped entries running ahead of the one that
/// set the mtime (another machine's, before a sync that kept its times).
pub const MTIME_MARGIN_MS: f64 = 3_600_000.0;

/// What [`search_with`] assumes of a file that has no valid summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unsummarized {
    /// Nothing: it may hold entries of any time, so it is always read.
    Unbounded,
    /// Its entries are no newer than its mtime plus [`MTIME_MARGIN_MS`] (a file Pi or an
    /// import appends to is written after the entries it holds were stamped, on the same
    /// clock), so it is left unread once the newest `limit` hits are newer than that.
    Mtime,
}

impl Unsummarized {
    fn max_ts(self, st: &FileStat) -> f64 {
        match self {
            Unsummarized::Unbounded => f64::INFINITY,
            Unsummarized::Mtime if st.mtime_ms.is_finite() => st.mtime_ms + MTIME_MARGIN_MS,
            Unsummarized::Mtime => f64::INFINITY,
        }
    }
}

/// Searches `files` (session files; others are skipped) on `threads` threads, newest
/// first. With `summaries`, files they rule out are not read and files whose entries are
/// all older than the newest `limit` hits found are not read; the hits are the same either
/// way. A file without a valid summary is bounded by its mtime ([`Unsummarized::Mtime`]).
pub fn search(
    files: &[(PathBuf, Option<FileStat>)],
    q: &Query,
    summaries: Option<&Summaries>,
    threads: usize,
) -> Result<(Vec<Hit>, Stats), QueryError> {
    search_until(files, q, summaries, threads, &|| false)
}

/// [`search`], asking `stop` before each file: when it says so, no further file is read
/// and the hits found so far are returned (a web page whose client went away stops
/// costing a core).
pub fn search_until(
    files: &[(PathBuf, Option<FileStat>)],
    q: &Query,
    summaries: Option<&Summaries>,
    threads: usize,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<(Vec<Hit>, Stats), QueryError> {
    search_with(files, q, summaries, Unsummarized::Mtime, threads, stop)
}

/// [`search_until`], with what to assume of files without a valid summary (`Unbounded`:
/// every such file is read, whatever its mtime says).
pub fn search_with(
    files: &[(PathBuf, Option<FileStat>)],
    q: &Query,
    summaries: Option<&Summaries>,
    unsummarized: Unsummarized,
    threads: usize,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<(Vec<Hit>, Stats), QueryError> {
    let m = Matcher::new(q)?;
    let mut stats = Stats {
        files: files.len(),
        ..Default::default()
    };
    // The work list, newest first (the summary's newest entry, else the mtime's bound);
    // files with no bound first (anything is possible there).
    let mut work = files_to_read(files, q, &m, summaries, unsummarized, threads, &mut stats);
    work.sort_by(|a, b| b.1.total_cmp(&a.1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let top = Mutex::new(Top::new(q.limit));
    let stats_all = Mutex::new(Stats::default());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                let mut st = Stats::default();
                let mut mine = Top::new(q.limit);
                BUF.with(|b| {
                    let mut buf = b.borrow_mut();
                    loop {
                        if stop() {
                            break;
                        }
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&(p, max_ts)) = work.get(i) else {
                            break;
                        };
                        if max_ts.is_finite() {
                            // Merge what this thread found, then see whether older files
                            // can still matter.
                            let mut t = top.lock().expect("top");
                            for h in mine.heap.drain() {
                                t.push(h.0 .0);
                            }
                            mine.bar = t.full_worst();
                            if t.closed_below(max_ts) {
                                st.skipped_older += work.len() - i;
                                next.store(work.len(), std::sync::atomic::Ordering::Relaxed);
                                break;
                            }
                        }
                        if !read_file(p, &mut buf) {
                            continue;
                        }
                        st.scanned += 1;
                        st.bytes_scanned += buf.len() as u64;
                        search_buf(&p.to_string_lossy(), &buf, &m, q, &mut st, &mut mine);
                    }
                });
                let mut t = top.lock().expect("top");
                for h in mine.heap.drain() {
                    t.push(h.0 .0);
                }
                stats_all.lock().expect("stats").add_scan(&st);
            });
        }
    });
    stats.add_scan(&stats_all.into_inner().expect("stats"));
    let mut hits: Vec<Hit> = top
        .into_inner()
        .expect("top")
        .heap
        .into_sorted_vec()
        .into_iter()
        .map(|r| r.0 .0)
        .collect();
    // Branch marks, one read per session that has hits.
    let mut paths: Vec<String> = hits.iter().map(|h| h.path.clone()).collect();
    paths.sort();
    paths.dedup();
    let mut buf = Vec::new();
    for p in paths {
        let on = if read_file(Path::new(&p), &mut buf) {
            branch_ids(&buf)
        } else {
            Default::default()
        };
        for h in hits.iter_mut().filter(|h| h.path == p) {
            h.on_branch = on.contains(&h.entry_id);
        }
    }
    hits.truncate(q.limit);
    Ok((hits, stats))
}

/// The search of [`search`] grouped by session: every session with a hit, each with its
/// newest hit (no `limit`: `q.limit` is ignored, and no session is left out however many
/// entries match elsewhere), newest hit first. `on_branch` is not computed (false).
/// `stop` is asked between files: when it says so the search ends early with what it has
/// (a browser drops a search once a newer query is typed).
pub fn search_sessions(
    files: &[(PathBuf, Option<FileStat>)],
    q: &Query,
    summaries: Option<&Summaries>,
    threads: usize,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<(Vec<Hit>, Stats), QueryError> {
    let m = Matcher::new(q)?;
    let mut stats = Stats {
        files: files.len(),
        ..Default::default()
    };
    let work: Vec<&PathBuf> = files_to_read(
        files,
        q,
        &m,
        summaries,
        Unsummarized::Unbounded,
        threads,
        &mut stats,
    )
    .into_iter()
    .map(|(p, _)| p)
    .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let found = Mutex::new(Vec::new());
    let stats_all = Mutex::new(Stats::default());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                let mut st = Stats::default();
                let mut mine = Vec::new();
                BUF.with(|b| {
                    let mut buf = b.borrow_mut();
                    loop {
                        if stop() {
                            break;
                        }
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&p) = work.get(i) else {
                            break;
                        };
                        if !read_file(p, &mut buf) {
                            continue;
                        }
                        st.scanned += 1;
                        st.bytes_scanned += buf.len() as u64;
                        // The newest hit of this file.
                        let mut one = Top::new(1);
                        search_buf(&p.to_string_lossy(), &buf, &m, q, &mut st, &mut one);
                        mine.extend(one.heap.into_iter().map(|r| r.0 .0));
                    }
                });
                found.lock().expect("found").append(&mut mine);
                stats_all.lock().expect("stats").add_scan(&st);
            });
        }
    });
    stats.add_scan(&stats_all.into_inner().expect("stats"));
    let mut hits: Vec<Ranked> = found
        .into_inner()
        .expect("found")
        .into_iter()
        .map(Ranked)
        .collect();
    hits.sort_by(|a, b| b.cmp(a));
    Ok((hits.into_iter().map(|r| r.0).collect(), stats))
}
