//! # sessiontree-import
//!
//! Turns the transcripts of other coding agents into Pi session files (format v3) that Pi
//! resumes, keeping every branch:
//!
//! * [`claude`]: Claude Code's `~/.claude/projects/<cwd>/<session>.jsonl` (a tree of lines
//!   linked by `uuid` / `parentUuid`, with compaction boundaries and subagent sidechains);
//! * [`codex`]: Codex CLI's `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl` (a linear log of
//!   `{timestamp, type, payload}` lines that forks into new files and rolls turns back);
//! * [`gemini`]: Gemini CLI's `~/.gemini/tmp/<project>/chats/session-*.jsonl` (a list of
//!   messages rewritten by resumes, rewinds and compressions, one change a line);
//! * [`copilot`]: GitHub Copilot CLI's `~/.copilot/session-state/<id>/events.jsonl` (a
//!   chain of events linked by `id` / `parentId`, resumes appended to it).
//!
//! The converters are pure: source bytes in, a [`Conversion`] (header fields, Pi entry
//! lines, problems) out. Ids are derived from the source's own identities, so the same
//! source gives the same bytes on any machine. [`write`](mod@write) puts a conversion on disk: a new
//! file appears whole (exclusive create), an existing one is only appended to, under the
//! writer lock.

use std::collections::BTreeMap;

pub mod batch;
pub mod claude;
pub mod codex;
pub mod copies;
pub mod copilot;
pub mod gemini;
mod jv;
mod node;
pub mod opencode;
pub mod write;

pub use write::{
    stage, stage_part, write, write_part_unsynced, write_unsynced, Outcome, Staged, Status,
};

/// Which agent a transcript comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Agent {
    Claude,
    Codex,
    Gemini,
    OpenCode,
    Copilot,
}

impl Agent {
    pub fn name(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::OpenCode => "opencode",
            Agent::Copilot => "copilot",
        }
    }

    /// The agent as the header's import mark (and the listing's `importedFrom`) names it.
    pub fn source_name(self) -> &'static str {
        match self {
            Agent::Claude => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini-cli",
            Agent::OpenCode => "opencode",
            Agent::Copilot => "copilot-cli",
        }
    }
}

/// A source line that could not be imported (the rest of the transcript still is).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line number in the source.
    pub line: usize,
    pub message: String,
}

/// One Pi entry: its id, its parent, and where its line is in [`Conversion::body`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub id: String,
    pub parent: Option<String>,
    /// The line's bytes in the body, without its newline.
    pub range: std::ops::Range<usize>,
}

/// A source session converted to Pi entries.
#[derive(Clone, Debug)]
pub struct Conversion {
    pub agent: Agent,
    /// The Pi session id (the source's session id where it has one).
    pub session_id: String,
    /// The source session's id as the agent knows it.
    pub source_session_id: String,
    /// Header time, ISO-8601 UTC with milliseconds.
    pub timestamp: String,
    pub cwd: Option<String>,
    /// The source session this one was forked from or spawned by (its
    /// `source_session_id`); the writer turns it into the header's `parentSession`.
    pub parent_source: Option<String>,
    /// `main`, `sidechain` (a Claude Code subagent) or `fork`.
    pub kind: &'static str,
    /// The newest entry time (epoch ms).
    pub last_ms: i64,
    /// Starts with lines copied from another session (a Claude Code resume or fork copy,
    /// which records no link to its original): see [`copies::Copies`].
    pub copied: bool,
    /// Entries in file order; the last one is the source's active leaf.
    pub lines: Vec<Line>,
    /// The entries before this index are final: the source growing cannot change them.
    /// (Codex's assistant message stays open across its tool calls until the turn's next
    /// user message, and takes its usage from a later token count.) Equal to
    /// `lines.len()` when the converter keeps nothing open.
    pub settled: usize,
    /// The entries' lines, canonical (what `JSON.stringify` writes), each ended by `\n`.
    pub body: String,
    pub name: Option<String>,
    pub problems: Vec<Problem>,
    /// Source lines deliberately left out, by kind (bookkeeping without a Pi equivalent).
    pub skipped: BTreeMap<String, usize>,
}

impl Conversion {
    /// The header line for this session. It ends with the import's mark,
    /// `"importedFrom":{"agent":…,"sessionId":…}` (the source agent and the source
    /// session's id; Pi keeps unknown header fields and never writes this one): an
    /// existing file is only appended to when its header carries the mark of this very
    /// conversion ([`Conversion::marked`]).
    pub fn header_line(&self, parent_session: Option<&str>) -> String {
        let mut s = sessiontree::session::header_line(
            &self.session_id,
            &self.timestamp,
            self.cwd.as_deref().unwrap_or(""),
            parent_session,
        );
        s.pop();
        s.push_str(",\"importedFrom\":{\"agent\":");
        sessiontree::json::write_js_string(&mut s, self.agent.source_name());
        s.push_str(",\"sessionId\":");
        sessiontree::json::write_js_string(&mut s, &self.source_session_id);
        s.push_str("}}");
        s
    }

    /// Whether `header` carries the import's mark of this conversion (see
    /// [`Conversion::header_line`]): the file was written by an import of this source.
    pub fn marked(&self, header: &sessiontree::Header) -> bool {
        let Some(mark) = header.field("importedFrom") else {
            return false;
        };
        let text = |k: &str| mark.get(k).and_then(|v| v.as_str()).map(|v| v.into_owned());
        text("agent").as_deref() == Some(self.agent.source_name())
            && text("sessionId").as_deref() == Some(self.source_session_id.as_str())
    }

    /// `<timestamp>_<session id>.jsonl`, as Pi names its files.
    pub fn file_name(&self) -> String {
        sessiontree::dirs::session_file_name(&self.timestamp, &self.session_id)
    }

    /// The file of this session in the folder `dir`. The session id comes from the
    /// transcript: one that is not a session id Pi accepts (a `/`, `..`, a control
    /// character, ...) would name a path outside `dir`, so the conversion is refused
    /// ([`sessiontree::Error::InvalidSessionId`]; the command reports the transcript and
    /// skips it) rather than written under another name.
    pub fn path_in(&self, dir: &std::path::Path) -> sessiontree::Result<std::path::PathBuf> {
        sessiontree::dirs::validate_session_id(&self.session_id)?;
        let name = self.file_name();
        // The time is the converter's own ISO text; checked all the same.
        if name.contains('/') || name.starts_with('.') {
            return Err(sessiontree::Error::InvalidSessionId(name));
        }
        Ok(dir.join(name))
    }

    /// The whole file: header and entries, each line ended by `\n`.
    pub fn to_bytes(&self, parent_session: Option<&str>) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_bytes(parent_session, &mut out);
        out
    }

    /// [`Conversion::to_bytes`] appended to a buffer.
    pub fn write_bytes(&self, parent_session: Option<&str>, out: &mut Vec<u8>) {
        out.reserve(self.body.len() + 256);
        out.extend_from_slice(self.header_line(parent_session).as_bytes());
        out.push(b'\n');
        out.extend_from_slice(self.body.as_bytes());
    }

    /// The line of an entry (canonical JSON, without its newline).
    pub fn json(&self, line: &Line) -> &str {
        &self.body[line.range.clone()]
    }
}

thread_local! {
    static BODIES: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A buffer for a conversion's body: one given back with [`recycle`] on this thread if
/// there is one (a fresh one of a file's size would be mapped and zeroed by the kernel).
pub(crate) fn body_buffer() -> String {
    BODIES.with(|b| b.borrow_mut().pop()).unwrap_or_default()
}

/// Gives a conversion's body back once it is written, for the next conversion on this
/// thread.
pub fn recycle(mut body: String) {
    body.clear();
    BODIES.with(|b| {
        let mut b = b.borrow_mut();
        if b.len() < 4 {
            b.push(body);
        }
    });
}

/// `n` in decimal, written at the end of `buf`.
pub(crate) fn decimal(n: u64, buf: &mut [u8; 20]) -> &str {
    // ASCII digits.
    std::str::from_utf8(decimal_bytes(n, buf)).unwrap_or_default()
}

/// [`decimal`] as bytes (not checked again as UTF-8: the id of every entry takes one).
pub(crate) fn decimal_bytes(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[at..]
}

/// Counts one more `what` (a copy of the name only the first time).
pub(crate) fn count(counts: &mut std::collections::BTreeMap<String, usize>, what: &str) {
    match counts.get_mut(what) {
        Some(n) => *n += 1,
        None => {
            counts.insert(what.to_string(), 1);
        }
    }
}

/// FNV-1a, 64 bits: the deterministic hash behind every derived id.
pub(crate) fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h ^= 0xff;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        for &b in *p {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    // Final mix so that the high bits depend on every input byte.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h
}

/// A UUID-shaped id (version 8, "custom") derived from a name: for sessions the source has
/// no id of its own for (subagents, inline sidechains).
pub(crate) fn derived_uuid(name: &str) -> String {
    let a = fnv(&[b"sessiontree-import/a", name.as_bytes()]);
    let b = fnv(&[b"sessiontree-import/b", name.as_bytes()]);
    let a = format!("{a:016x}");
    let b = format!("{b:016x}");
    format!(
        "{}-{}-8{}-{}{}-{}",
        &a[0..8],
        &a[8..12],
        &a[13..16],
        ["8", "9", "a", "b"][(b.as_bytes()[0] % 4) as usize],
        &b[1..4],
        &b[4..16]
    )
}

/// A source timestamp (ISO string or epoch number) as epoch ms.
pub(crate) fn time_ms(v: Option<&jv::V<'_>>) -> Option<i64> {
    match v? {
        jv::V::Str(s) => sessiontree::date::parse_iso(s.as_str()).map(|f| f as i64),
        n @ jv::V::Num(_) => {
            let f = n.as_f64()?;
            // seconds or milliseconds
            Some(if f < 1e11 {
                (f * 1000.0) as i64
            } else {
                f as i64
            })
        }
        _ => None,
    }
}

/// The lines of source bytes (1-based numbers), each parsed when it is asked for: a
/// converter that takes each line as it comes finds its tree still in the cache. A line
/// that does not parse, or is not an object, is a problem. A last line without its newline
/// is read if it parses (an agent may be writing it right now: if it does not parse, it is
/// left for the next import and not reported). The values borrow the source's bytes
/// ([`jv`]).
pub(crate) struct Lines<'a> {
    bytes: &'a [u8],
    /// The whole text when it is UTF-8 throughout (the usual case): each line is then
    /// parsed where it stands, the parser finding its end, in one pass over the bytes.
    text: Option<&'a str>,
    start: usize,
    n: usize,
}

/// [`Lines`] with the list its problems go to.
pub(crate) struct LinesWith<'a, 'p> {
    lines: Lines<'a>,
    problems: &'p mut Vec<Problem>,
}

impl<'a> Lines<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Lines {
            bytes,
            text: simdutf8::basic::from_utf8(bytes).ok(),
            start: 0,
            n: 0,
        }
    }

    /// [`Lines::new`] that splits first and checks each line on its own, as it does for a
    /// source that is not UTF-8 throughout.
    #[cfg(test)]
    fn line_by_line(bytes: &'a [u8]) -> Self {
        Lines {
            bytes,
            text: None,
            start: 0,
            n: 0,
        }
    }

    pub fn with(self, problems: &mut Vec<Problem>) -> LinesWith<'a, '_> {
        LinesWith {
            lines: self,
            problems,
        }
    }

    /// The line from where the last one ended to `end`, without a closing `\r`; the next
    /// starts after `end`.
    fn cut(&mut self, end: usize) -> &'a [u8] {
        let mut line = &self.bytes[self.start..end];
        self.start = end + 1;
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        line
    }

    /// The next line's object, or a problem; `None` at the end.
    fn next_line(&mut self) -> Option<Result<(usize, jv::Obj<'a>), Option<Problem>>> {
        let bytes = self.bytes;
        if self.start >= bytes.len() {
            return None;
        }
        self.n += 1;
        let n = self.n;
        let start = self.start;
        let Some(text) = self.text else {
            // Not UTF-8 throughout: split, then each line checked and parsed.
            let (end, complete) = match memchr_nl(&bytes[start..]) {
                Some(p) => (start + p, true),
                None => (bytes.len(), false),
            };
            let line = self.cut(end);
            if line.iter().all(|b| b.is_ascii_whitespace()) {
                return Some(Err(None));
            }
            return Some(match std::str::from_utf8(line).ok().and_then(jv::parse) {
                Some(v) => object(n, v),
                None if !complete => Err(None),
                None => Err(Some(invalid(n, line))),
            });
        };
        let (v, stop) = jv::parse_line(text, start);
        let (end, complete, parsed) = match (v, bytes.get(stop)) {
            (Some(v), None) => (stop, false, Some(v)),
            (Some(v), Some(b'\n')) => (stop, true, Some(v)),
            _ => match memchr_nl(&bytes[stop..]) {
                Some(p) => (stop + p, true, None),
                None => (bytes.len(), false, None),
            },
        };
        let line = self.cut(end);
        Some(match parsed {
            Some(v) => object(n, v),
            None if line.iter().all(|b| b.is_ascii_whitespace()) || !complete => Err(None),
            None => Err(Some(invalid(n, line))),
        })
    }
}

impl<'a> Iterator for LinesWith<'a, '_> {
    type Item = (usize, jv::Obj<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.lines.next_line()? {
                Ok(line) => return Some(line),
                Err(Some(p)) => self.problems.push(p),
                Err(None) => {}
            }
        }
    }
}

/// A parsed line: its object, or the problem of a value that is not one.
fn object(n: usize, v: jv::V<'_>) -> Result<(usize, jv::Obj<'_>), Option<Problem>> {
    match v {
        jv::V::Obj(m) => Ok((n, m)),
        other => Err(Some(Problem {
            line: n,
            message: format!("not a JSON object ({})", kind_name(&other)),
        })),
    }
}

/// serde_json's message (and column) for a line that does not parse: the two parsers
/// refuse the same lines.
fn invalid(n: usize, line: &[u8]) -> Problem {
    let e = serde_json::from_slice::<serde::de::IgnoredAny>(line)
        .err()
        .map_or_else(|| "not valid JSON".to_string(), |e| e.to_string());
    Problem {
        line: n,
        message: format!("not valid JSON: {e}"),
    }
}

fn memchr_nl(b: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', b)
}

fn kind_name(v: &jv::V<'_>) -> &'static str {
    match v {
        jv::V::Null => "null",
        jv::V::Bool(_) => "boolean",
        jv::V::Num(_) => "number",
        jv::V::Str(_) => "string",
        jv::V::Arr(_) => "array",
        jv::V::Obj(_) => "object",
    }
}

/// Every transcript under `tests/fixtures`, sorted.
#[cfg(test)]
pub(crate) fn fixture_files() -> Vec<std::path::PathBuf> {
    sessiontree_testkit::files::jsonl_under(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_uuids_are_stable_and_uuid_shaped() {
        let a = derived_uuid("x");
        assert_eq!(a, derived_uuid("x"));
        assert_ne!(a, derived_uuid("y"));
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "8");
        assert_eq!(a.matches('-').count(), 4);
    }

    /// The one-pass reading of a UTF-8 source and the line-by-line one give the same
    /// lines, values and problems, on every fixture and damaged copies of them.
    #[test]
    fn one_pass_and_line_by_line_reading_agree() {
        use crate::jv::xorshift;
        let files: Vec<Vec<u8>> = fixture_files()
            .iter()
            .map(|p| std::fs::read(p).unwrap())
            .collect();
        let show = |l: &[(usize, jv::Obj<'_>)], p: &[Problem]| {
            let lines: Vec<(usize, String)> = l
                .iter()
                .map(|(n, o)| (*n, jv::V::Obj(o.clone()).to_json()))
                .collect();
            format!("{lines:?}\n{p:?}")
        };
        let mut rng = xorshift::Rng(0x2545_f491_4f6c_dd1d);
        let mut checked = 0;
        for round in 0..400 {
            let mut bytes = files[round % files.len()].clone();
            if round >= files.len() {
                let times = 1 + rng.pick(8);
                rng.damage(&mut bytes, times);
                if round % 3 == 0 {
                    bytes.extend_from_slice(b"\r\n \x0c \n\t{\"a\":1} \r");
                }
            }
            if std::str::from_utf8(&bytes).is_err() {
                continue;
            }
            let (mut p1, mut p2) = (Vec::new(), Vec::new());
            let one: Vec<_> = Lines::new(&bytes).with(&mut p1).collect();
            let each: Vec<_> = Lines::line_by_line(&bytes).with(&mut p2).collect();
            assert_eq!(show(&one, &p1), show(&each, &p2), "round {round}");
            checked += 1;
        }
        assert!(checked > 200, "{checked}");
    }

    #[test]
    fn lines_with_problems() {
        let mut p = Vec::new();
        let src = b"{\"a\":1}\n\nnope\n[1]\n{\"b\":2}\r\n{\"torn\":";
        let l: Vec<_> = Lines::new(src).with(&mut p).collect();
        assert_eq!(l.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 5]);
        assert_eq!(p.iter().map(|x| x.line).collect::<Vec<_>>(), vec![3, 4]);
    }
}
