//! Listing sessions (FORMAT.md section 11): one streaming pass per file, no tree.
//!
//! Every file is read in 1 MiB chunks and split into lines as Node's `readline` does
//! (`\n`, `\r\n` and a lone `\r` end a line; the last line needs no terminator). Each line is
//! validated with [`crate::json::scan`] and only `type`, `name`, `timestamp`, `id`,
//! `parentId`, `message.role`, `message.content` and `message.timestamp` are looked at.
//!
//! **The reference's silent drops.** Pi's `buildSessionInfo` throws, and so leaves the whole
//! session out of `list()`/`listAll()`, when a user or assistant message has non-string,
//! non-array `content` (e.g. `null`), a content block is `null`, a `message` entry has no
//! (or a `null`) `message`, or a `session_info` `name` is neither a string nor null. We
//! record this as [`SessionInfo::reference_drops`]. By default we **list such sessions**
//! (their unreadable parts give no text, a non-string name clears the name): a session that
//! vanishes from the list is a bug, not a contract. [`ListOptions::reference_parity`]
//! reproduces the reference exactly (such sessions are left out), which is what the CLI's
//! `ls --reference` and the interop tests use.

use crate::date::{iso_from_ms, js_date_ms, parse_iso};
use crate::dirs;
use crate::json::{decode_string, scan, Kind, Raw, Scanned, Span};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// One session as `SessionManager.list` describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionInfo {
    /// The session file.
    pub path: PathBuf,
    /// The header's `id` as JSON (a string in every valid file; the reference does not check).
    pub id: serde_json::Value,
    /// The header's `cwd` (`""` when absent).
    pub cwd: String,
    /// The name of the last `session_info` entry, trimmed; `None` when unset or empty.
    pub name: Option<String>,
    /// The header's `parentSession` as JSON, when the key is present.
    pub parent_session_path: Option<serde_json::Value>,
    /// `new Date(header.timestamp).getTime()`; `None` is an invalid date (JSON `null`).
    pub created_ms: Option<f64>,
    /// Milliseconds; NaN when the reference's Date would be invalid.
    pub modified_ms: f64,
    /// Every `message` entry, system messages included.
    pub message_count: u64,
    /// Text of the first user message; `"(no messages)"` when there is none.
    pub first_message: String,
    /// Empty unless requested ([`ListOptions::with_text`]).
    pub all_messages_text: String,
    /// The reference would leave this session out (see the module docs).
    pub reference_drops: bool,
    /// The agent whose transcript `sessiontree import` converted into this session
    /// (`claude-code` or `codex`), from the marks the import leaves in entries; see
    /// [`imported_mark`]. Not one of Pi's fields: written as `importedFrom` when set.
    pub imported: Option<String>,
}

/// Which agent an imported entry came from, by what the import writes into it: Claude
/// Code's ids kept in `message.claudeCode`, Codex's web searches in `message.codex`, the
/// source named in a tool result's `details.source`, and custom entries typed
/// `claude-code:*` / `codex:*`. Pi writes none of these.
pub fn imported_mark(
    custom_type: Option<&str>,
    message_key: Option<&str>,
    source: Option<&str>,
) -> Option<&'static str> {
    let by_name = |s: &str| match s {
        "claude-code" => Some("claude-code"),
        "codex" => Some("codex"),
        "gemini-cli" => Some("gemini-cli"),
        "opencode" => Some("opencode"),
        "copilot-cli" => Some("copilot-cli"),
        _ => None,
    };
    if let Some(ct) = custom_type {
        return ct.split_once(':').and_then(|(agent, _)| by_name(agent));
    }
    match message_key {
        Some("claudeCode") => Some("claude-code"),
        Some("codex") => Some("codex"),
        Some("geminiCli") => Some("gemini-cli"),
        Some("opencode") => Some("opencode"),
        Some("copilotCli") => Some("copilot-cli"),
        _ => source.and_then(by_name),
    }
}

fn js_date_json(ms: Option<f64>) -> serde_json::Value {
    match ms {
        Some(m) if m.is_finite() && m.abs() <= 8.64e15 => {
            serde_json::Value::String(iso_from_ms(m.trunc() as i64))
        }
        _ => serde_json::Value::Null,
    }
}

impl SessionInfo {
    /// Pi's JSON shape (`JSON.stringify` of a `SessionInfo`): field names, order, ISO dates.
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        m.insert(
            "path".into(),
            self.path.to_string_lossy().into_owned().into(),
        );
        m.insert("id".into(), self.id.clone());
        m.insert("cwd".into(), self.cwd.clone().into());
        if let Some(n) = &self.name {
            m.insert("name".into(), n.clone().into());
        }
        if let Some(p) = &self.parent_session_path {
            m.insert("parentSessionPath".into(), p.clone());
        }
        m.insert("created".into(), js_date_json(self.created_ms));
        m.insert("modified".into(), js_date_json(Some(self.modified_ms)));
        m.insert("messageCount".into(), self.message_count.into());
        m.insert("firstMessage".into(), self.first_message.clone().into());
        m.insert(
            "allMessagesText".into(),
            self.all_messages_text.clone().into(),
        );
        if let Some(agent) = &self.imported {
            m.insert("importedFrom".into(), agent.clone().into());
        }
        serde_json::Value::Object(m)
    }

    /// [`SessionInfo::to_json`] serialized, byte for byte as `to_json().to_string()`, written
    /// straight to `w` (no intermediate values; `allMessagesText` is escaped in one pass).
    pub fn write_json(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        let s = |w: &mut _, v: &str| crate::json::write_js_string_to(w, v);
        let v = |w: &mut _, v: &serde_json::Value| {
            serde_json::to_writer(w, v).map_err(std::io::Error::other)
        };
        w.write_all(b"{\"path\":")?;
        s(w, &self.path.to_string_lossy())?;
        w.write_all(b",\"id\":")?;
        v(w, &self.id)?;
        w.write_all(b",\"cwd\":")?;
        s(w, &self.cwd)?;
        if let Some(n) = &self.name {
            w.write_all(b",\"name\":")?;
            s(w, n)?;
        }
        if let Some(p) = &self.parent_session_path {
            w.write_all(b",\"parentSessionPath\":")?;
            v(w, p)?;
        }
        w.write_all(b",\"created\":")?;
        v(w, &js_date_json(self.created_ms))?;
        w.write_all(b",\"modified\":")?;
        v(w, &js_date_json(Some(self.modified_ms)))?;
        write!(w, ",\"messageCount\":{}", self.message_count)?;
        w.write_all(b",\"firstMessage\":")?;
        s(w, &self.first_message)?;
        w.write_all(b",\"allMessagesText\":")?;
        s(w, &self.all_messages_text)?;
        if let Some(agent) = &self.imported {
            w.write_all(b",\"importedFrom\":")?;
            s(w, agent)?;
        }
        w.write_all(b"}")
    }

    /// [`SessionInfo::write_json`] into a string.
    pub fn json_string(&self) -> String {
        let mut b =
            Vec::with_capacity(self.all_messages_text.len() + self.first_message.len() + 256);
        self.write_json(&mut b).expect("writing to a Vec");
        String::from_utf8(b).expect("JSON is UTF-8")
    }

    /// True when the header names a parent session (a branch or a fork).
    pub fn is_fork(&self) -> bool {
        self.parent_session_path
            .as_ref()
            .is_some_and(|p| !p.is_null())
    }
}

/// How to list.
#[derive(Clone, Copy, Debug)]
pub struct ListOptions {
    /// Leave out what the reference leaves out (sessions it fails on).
    pub reference_parity: bool,
    /// Collect `allMessagesText` (costs memory proportional to all message text).
    pub with_text: bool,
    /// Worker threads for a full scan.
    pub threads: usize,
}

impl Default for ListOptions {
    fn default() -> Self {
        ListOptions {
            reference_parity: false,
            with_text: true,
            threads: 2,
        }
    }
}

/// A line's members, looked up as JavaScript would (the last duplicate key wins).
pub(crate) struct Line<'a> {
    pub b: &'a [u8],
    pub s: Scanned,
}

fn key_is(b: &[u8], span: &Span, name: &str) -> bool {
    let k = &b[span.clone()];
    if k.len() == name.len() + 2 && &k[1..k.len() - 1] == name.as_bytes() {
        return true;
    }
    k.contains(&b'\\') && decode_string(k) == name
}

impl<'a> Line<'a> {
    pub fn top(&self) -> Raw<'a> {
        Raw::new_unchecked(&self.b[self.s.top.clone()])
    }
    fn top_index(&self, key: &str) -> Option<usize> {
        self.s
            .members
            .iter()
            .rposition(|m| key_is(self.b, &m.key, key))
    }
    pub fn get(&self, key: &str) -> Option<Raw<'a>> {
        let i = self.top_index(key)?;
        Some(Raw::new_unchecked(&self.b[self.s.members[i].value.clone()]))
    }
    pub(crate) fn get_str(&self, key: &str) -> Option<std::borrow::Cow<'a, str>> {
        self.get(key).and_then(|v| v.as_str())
    }
    /// `line[outer][key]` where `line[outer]` is an object.
    pub fn inner(&self, outer: &str, key: &str) -> Option<Raw<'a>> {
        let i = self.top_index(outer)? as u32;
        self.s
            .inner
            .iter()
            .rev()
            .find(|(o, m)| *o == i && key_is(self.b, &m.key, key))
            .map(|(_, m)| Raw::new_unchecked(&self.b[m.value.clone()]))
    }
}

/// The reference's `extractTextContent`: `Err` where it would throw.
#[allow(clippy::result_unit_err)]
pub(crate) fn text_of(content: Option<Raw<'_>>) -> Result<String, ()> {
    let Some(c) = content else { return Err(()) };
    match c.kind() {
        Kind::String => Ok(c.as_str().unwrap_or_default().into_owned()),
        Kind::Array => {
            let mut parts: Vec<String> = Vec::new();
            for block in c.elements() {
                match block.kind() {
                    Kind::Null => return Err(()),
                    Kind::Object
                        if block.get("type").and_then(|t| t.as_str()).as_deref()
                            == Some("text") =>
                    {
                        parts.push(match block.get("text") {
                            None => String::new(),
                            Some(t) if t.is_null() => String::new(),
                            Some(t) => t.js_string(),
                        });
                    }
                    _ => {}
                }
            }
            Ok(parts.join(" "))
        }
        _ => Err(()),
    }
}

/// A JSON value as serde_json sees it (lone surrogates replaced).
fn to_value(r: Raw<'_>) -> serde_json::Value {
    if let Some(s) = r.as_str() {
        return serde_json::Value::String(s.into_owned());
    }
    serde_json::from_slice(r.bytes()).unwrap_or(serde_json::Value::Null)
}

/// A row for full-text search: one entry with searchable text.
#[doc(hidden)] // the index's resumable pass; agents use `list`, `list_all`, `session_info`
#[derive(Clone, Debug)]
pub struct EntryText {
    /// The entry's id.
    pub entry_id: String,
    /// Its `parentId`.
    pub parent_id: Option<String>,
    /// `message.role` (or the entry type for entries other than messages).
    pub role: String,
    /// The message's time in ms (its `timestamp`, else the entry's).
    pub ts_ms: Option<f64>,
    /// The searchable text.
    pub text: String,
}

/// The state of one pass over a file, resumable after any complete line.
#[doc(hidden)] // the index's resumable pass; agents use `list`, `list_all`, `session_info`
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Acc {
    /// Something other than a session header was the first parsed line.
    pub not_session: bool,
    /// A valid header was read.
    pub header_seen: bool,
    /// The header's `id`.
    pub id: Option<serde_json::Value>,
    /// The header's `cwd`.
    pub cwd: String,
    /// The header's `parentSession`, when present.
    pub parent: Option<serde_json::Value>,
    /// The header's time as `new Date(...)` reads it.
    pub created_ms: Option<f64>,
    /// The header's time, for `modified` when no message has one.
    pub header_time: Option<f64>,
    /// The last `session_info` name so far.
    pub name: Option<String>,
    /// Message entries so far.
    pub message_count: u64,
    /// The first user message's text.
    pub first_message: String,
    /// User and assistant texts, joined by a space (only when `with_text`).
    pub all_text: String,
    /// The latest user or assistant message time so far.
    pub last_activity: Option<f64>,
    /// The reference would drop this session from its listing.
    pub reference_drops: bool,
    /// Id of the last entry (the leaf).
    pub leaf: Option<String>,
    /// The agent an imported session came from (see [`imported_mark`]).
    #[serde(default)]
    pub imported: Option<String>,
    /// Collect `all_text`.
    pub with_text: bool,
}

impl Acc {
    /// A pass at the start of a file.
    pub fn new(with_text: bool) -> Acc {
        Acc {
            with_text,
            ..Acc::default()
        }
    }

    /// A pass that takes every line for an entry line, as after a session's header: the
    /// search rows of lines read without the start of their file (the archive's ranges).
    pub fn past_header() -> Acc {
        Acc {
            header_seen: true,
            ..Acc::default()
        }
    }

    /// Feeds one physical line (without its terminator). Lone `\r` split it further.
    pub fn feed(&mut self, line: &[u8], rows: Option<&mut Vec<EntryText>>) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if memchr::memchr(b'\r', line).is_some() {
            let mut rows = rows;
            for part in line.split(|&c| c == b'\r') {
                self.feed_one(part, rows.as_deref_mut());
            }
        } else {
            self.feed_one(line, rows);
        }
    }

    fn feed_one(&mut self, raw: &[u8], rows: Option<&mut Vec<EntryText>>) {
        if self.not_session {
            return;
        }
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
        let line = Line { b, s };
        let top = line.top();
        if !top.truthy() {
            return;
        }
        let ty = if top.kind() == Kind::Object {
            line.get_str("type")
        } else {
            None
        };
        if !self.header_seen {
            if ty.as_deref() != Some("session") {
                self.not_session = true;
                return;
            }
            self.header_seen = true;
            self.id = Some(
                line.get("id")
                    .map(to_value)
                    .unwrap_or(serde_json::Value::Null),
            );
            self.cwd = line
                .get_str("cwd")
                .map(|c| c.into_owned())
                .unwrap_or_default();
            self.parent = line.get("parentSession").map(to_value);
            let ts = line.get("timestamp");
            self.created_ms = js_date_ms(ts);
            self.header_time = ts.and_then(|t| t.as_str()).and_then(|t| parse_iso(&t));
            return;
        }
        if top.kind() != Kind::Object {
            return;
        }
        let mut rows = rows;
        if let Some(id) = line.get_str("id") {
            if let Some(rows) = rows.as_deref_mut() {
                // A link row (empty role): every entry, for the current branch.
                rows.push(EntryText {
                    entry_id: id.to_string(),
                    parent_id: line.get_str("parentId").map(|p| p.into_owned()),
                    role: String::new(),
                    ts_ms: None,
                    text: String::new(),
                });
            }
            self.leaf = Some(id.into_owned());
        }
        let ty = ty.unwrap_or_default();
        match &*ty {
            "session_info" => match line.get("name") {
                None => self.name = None,
                Some(n) if n.is_null() => self.name = None,
                Some(n) => match n.as_str() {
                    Some(s) => {
                        let t = crate::entry::js_trim(&s);
                        self.name = (!t.is_empty()).then(|| t.to_string());
                    }
                    None => {
                        self.reference_drops = true;
                        self.name = None;
                    }
                },
            },
            "message" => self.message(&line, rows),
            "compaction" | "branch_summary" => {
                if let (Some(rows), Some(t)) = (rows, line.get_str("summary")) {
                    push_row(rows, &line, &ty, t.into_owned());
                }
            }
            "custom_message" => {
                self.mark_custom(&line);
                if let (Some(rows), Ok(t)) = (rows, text_of(line.get("content"))) {
                    push_row(rows, &line, "custom", t);
                }
            }
            "custom" => self.mark_custom(&line),
            _ => {}
        }
    }

    /// An import's custom entry (`claude-code:*`, `codex:*`) marks the session.
    fn mark_custom(&mut self, line: &Line<'_>) {
        if self.imported.is_none() {
            if let Some(ct) = line.get_str("customType") {
                self.imported = imported_mark(Some(&ct), None, None).map(str::to_string);
            }
        }
    }

    /// An import's marks in a message (see [`imported_mark`]); looked for until one is found.
    fn mark_message(&mut self, line: &Line<'_>, role: &str) {
        let key = if line.inner("message", "claudeCode").is_some() {
            Some("claudeCode")
        } else if line.inner("message", "codex").is_some() {
            Some("codex")
        } else if line.inner("message", "geminiCli").is_some() {
            Some("geminiCli")
        } else if line.inner("message", "opencode").is_some() {
            Some("opencode")
        } else if line.inner("message", "copilotCli").is_some() {
            Some("copilotCli")
        } else {
            None
        };
        let source = if key.is_none() && role == "toolResult" {
            line.inner("message", "details")
                .and_then(|d| d.get("source"))
                .and_then(|s| s.as_str())
        } else {
            None
        };
        self.imported = imported_mark(None, key, source.as_deref()).map(str::to_string);
    }

    fn message(&mut self, line: &Line<'_>, rows: Option<&mut Vec<EntryText>>) {
        self.message_count += 1;
        let Some(msg) = line.get("message") else {
            self.reference_drops = true;
            return;
        };
        if msg.is_null() {
            self.reference_drops = true;
            return;
        }
        if msg.kind() != Kind::Object {
            return;
        }
        let Some(role) = line.inner("message", "role").and_then(|r| r.as_str()) else {
            return;
        };
        if self.imported.is_none() {
            self.mark_message(line, &role);
        }
        let content = line.inner("message", "content");
        // A shell command the user ran (`!cmd`) has a command and an output, no content.
        if content.is_none() && role != "bashExecution" {
            return;
        }
        let chat = role == "user" || role == "assistant";
        if chat {
            let t = match line.inner("message", "timestamp") {
                Some(t) if t.kind() == Kind::Number => t.as_f64(),
                _ => js_date_ms(line.get("timestamp")),
            };
            if let Some(t) = t {
                self.last_activity = Some(self.last_activity.unwrap_or(0.0).max(t));
            }
        }
        if !chat && rows.is_none() {
            // Only search rows use the text of tool results and the like (the bulk of a
            // file): a listing does not decode it.
            return;
        }
        let text = match &*role {
            "user" | "assistant" | "toolResult" | "custom" | "hookMessage" => text_of(content),
            "bashExecution" => Ok(String::new()),
            _ => return,
        };
        let text = match text {
            Ok(t) => t,
            Err(()) => {
                if chat {
                    self.reference_drops = true;
                }
                String::new()
            }
        };
        if chat && !text.is_empty() {
            if self.with_text {
                if !self.all_text.is_empty() {
                    self.all_text.push(' ');
                }
                self.all_text.push_str(&text);
            }
            if self.first_message.is_empty() && role == "user" {
                self.first_message = text.clone();
            }
        }
        if let Some(rows) = rows {
            let text = if role == "bashExecution" {
                let cmd = line.inner("message", "command").and_then(|c| c.as_str());
                let out = line.inner("message", "output").and_then(|c| c.as_str());
                format!(
                    "{}\n{}",
                    cmd.as_deref().unwrap_or(""),
                    out.as_deref().unwrap_or("")
                )
            } else {
                text
            };
            if !text.trim().is_empty() {
                push_row(rows, line, &role, text);
            }
        }
    }

    /// The listing of this state; `None` when the file is not a session.
    pub fn info(&self, path: &Path, file_mtime_ms: f64) -> Option<SessionInfo> {
        self.clone().into_info(path, file_mtime_ms)
    }

    /// [`Acc::info`] without copying the texts.
    pub fn into_info(self, path: &Path, file_mtime_ms: f64) -> Option<SessionInfo> {
        if !self.header_seen || self.not_session {
            return None;
        }
        let modified_ms = match self.last_activity {
            Some(t) if t > 0.0 => t,
            _ => self.header_time.unwrap_or(file_mtime_ms),
        };
        Some(SessionInfo {
            path: path.to_path_buf(),
            id: self.id.unwrap_or(serde_json::Value::Null),
            cwd: self.cwd,
            name: self.name,
            parent_session_path: self.parent,
            created_ms: self.created_ms,
            modified_ms,
            message_count: self.message_count,
            first_message: if self.first_message.is_empty() {
                "(no messages)".into()
            } else {
                self.first_message
            },
            all_messages_text: self.all_text,
            reference_drops: self.reference_drops,
            imported: self.imported,
        })
    }
}

/// A search row's time: the message's numeric `timestamp`, else the entry's.
fn row_ts(line: &Line<'_>) -> Option<f64> {
    match line.inner("message", "timestamp") {
        Some(t) if t.kind() == Kind::Number => t.as_f64(),
        _ => js_date_ms(line.get("timestamp")),
    }
}

/// The `ts_ms` of every search row that [`Acc::feed`] makes of this physical line (after
/// the header), found with one validating scan and nothing decoded: a search ranks a
/// candidate line before paying for its text. `Some(None)`: its rows have no time, or it
/// makes none (blank, invalid); `None`: its rows may differ (lone `\r` split the line).
#[doc(hidden)] // the search's rank bound
pub fn row_ts_ms(line: &[u8]) -> Option<Option<f64>> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if memchr::memchr(b'\r', line).is_some() {
        return None;
    }
    let owned;
    let b: &[u8] = match simdutf8::basic::from_utf8(line) {
        Ok(_) => line,
        Err(_) => {
            owned = String::from_utf8_lossy(line).into_owned();
            owned.as_bytes()
        }
    };
    let Ok(s) = scan::scan(b) else {
        return Some(None);
    };
    Some(row_ts(&Line { b, s }))
}

fn push_row(rows: &mut Vec<EntryText>, line: &Line<'_>, role: &str, text: String) {
    let Some(id) = line.get_str("id") else { return };
    let ts_ms = row_ts(line);
    rows.push(EntryText {
        entry_id: id.into_owned(),
        parent_id: line.get_str("parentId").map(|p| p.into_owned()),
        role: role.to_string(),
        ts_ms,
        text,
    });
}

/// What a pass read.
#[doc(hidden)] // the index's resumable pass; agents use `list`, `list_all`, `session_info`
pub struct Pass {
    /// State after the last complete (`\n`-terminated) line.
    pub committed: Acc,
    /// Offset just past that line.
    pub committed_offset: u64,
    /// State including a trailing unterminated line, when there is one (see
    /// [`Pass::into_full`]).
    full: Option<Acc>,
    /// Bytes read, including a trailing unterminated line.
    pub bytes_read: u64,
    /// Hash of the last complete line (with its `\n`), for append detection.
    pub tail_hash: u64,
    /// Length of the last complete line (with its `\n`).
    pub tail_len: u64,
}

impl Pass {
    /// State including a trailing unterminated line (what the listing shows).
    pub fn into_full(self) -> Acc {
        self.full.unwrap_or(self.committed)
    }
}

/// FNV-1a, for cheap prefix checks.
#[doc(hidden)] // the index's resumable pass; agents use `list`, `list_all`, `session_info`
pub fn fnv(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &x in b {
        h ^= x as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

thread_local! {
    /// The read buffer of [`pass`], kept per thread: a fresh 1 MiB buffer per file is a
    /// fresh mapping, faulted in and unmapped again (most of a full scan's system time).
    static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Reads `file` from `start` (where `acc` was committed) to its end.
#[doc(hidden)] // the index's resumable pass; agents use `list`, `list_all`, `session_info`
pub fn pass(
    file: impl Read,
    start: u64,
    acc: Acc,
    rows: Option<&mut Vec<EntryText>>,
) -> std::io::Result<Pass> {
    BUF.with(|b| match b.try_borrow_mut() {
        Ok(mut buf) => {
            if buf.len() < 1 << 20 {
                buf.resize(1 << 20, 0);
            }
            pass_with(&mut buf, file, start, acc, rows)
        }
        Err(_) => pass_with(&mut vec![0u8; 1 << 20], file, start, acc, rows),
    })
}

fn pass_with(
    buf: &mut [u8],
    mut file: impl Read,
    start: u64,
    mut acc: Acc,
    mut rows: Option<&mut Vec<EntryText>>,
) -> std::io::Result<Pass> {
    let mut carry: Vec<u8> = Vec::new();
    let mut offset = start;
    let mut committed_offset = start;
    let mut bytes_read = 0u64;
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let n = file.read(buf)?;
        if n == 0 {
            break;
        }
        bytes_read += n as u64;
        let chunk = &buf[..n];
        let mut pos = 0;
        // The last complete line lying wholly in this chunk, copied once per chunk.
        let mut last: Option<(usize, usize)> = None;
        while let Some(i) = memchr::memchr(b'\n', &chunk[pos..]) {
            let end = pos + i;
            let line_len;
            if carry.is_empty() {
                acc.feed(&chunk[pos..end], rows.as_deref_mut());
                line_len = end - pos + 1;
                last = Some((pos, end + 1));
            } else {
                carry.extend_from_slice(&chunk[pos..end]);
                acc.feed(&carry, rows.as_deref_mut());
                line_len = carry.len() + 1;
                tail.clear();
                tail.extend_from_slice(&carry);
                tail.push(b'\n');
                carry.clear();
                last = None;
            }
            offset += line_len as u64;
            committed_offset = offset;
            pos = end + 1;
        }
        if let Some((a, b)) = last {
            tail.clear();
            tail.extend_from_slice(&chunk[a..b]);
        }
        carry.extend_from_slice(&chunk[pos..]);
    }
    // The state with a trailing unterminated line, kept apart only when there is one (a
    // copy of the accumulated text otherwise costs as much as the whole pass).
    let full = if carry.is_empty() {
        None
    } else {
        let mut full = acc.clone();
        full.feed(&carry, None);
        Some(full)
    };
    Ok(Pass {
        committed: acc,
        committed_offset,
        full,
        bytes_read,
        tail_hash: fnv(&tail),
        tail_len: tail.len() as u64,
    })
}

pub(crate) fn mtime_ms(m: &std::fs::Metadata) -> f64 {
    crate::folder::node_mtime_ms(m)
}

/// The listing of one file (one streaming pass); `None` when it is not a session.
pub fn session_info(path: &Path, with_text: bool) -> Option<SessionInfo> {
    // Only a regular file is read (a FIFO would block, a device never end).
    let (f, meta) = crate::store::open_regular(path).ok()?;
    let p = pass(f, 0, Acc::new(with_text), None).ok()?;
    p.into_full().into_info(path, mtime_ms(&meta))
}

/// `*.jsonl` names in a folder, full paths; regular files only (others are noted, see
/// [`crate::folder::take_skipped`]).
pub fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name().to_string_lossy().ends_with(".jsonl") && crate::folder::regular_entry(e)
        })
        .map(|e| e.path())
        .collect()
}

/// A session file's size, times and identity, as the index keys it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FileStat {
    /// Size in bytes.
    pub size: u64,
    /// Modification time, ns since the epoch.
    pub mtime_ns: i64,
    /// As the reference reads `mtime` (milliseconds, possibly fractional).
    pub mtime_ms: f64,
    /// Device and inode: a replacement (`sed -i`, a rename over it) is another file.
    pub dev: u64,
    /// See `dev`.
    pub ino: u64,
    /// Status change time: any write changes it, even one that restores size and mtime.
    pub ctime_ns: i64,
}

impl FileStat {
    /// `None` for anything but a regular file.
    pub fn of(m: &std::fs::Metadata) -> Option<FileStat> {
        if !m.is_file() {
            return None;
        }
        let mtime_ns = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0);
        use std::os::unix::fs::MetadataExt;
        Some(FileStat {
            size: m.len(),
            mtime_ns,
            mtime_ms: mtime_ms(m),
            dev: m.dev(),
            ino: m.ino(),
            ctime_ns: m.ctime().saturating_mul(1_000_000_000) + m.ctime_nsec(),
        })
    }

    /// Follows symlinks; `None` when the path is gone or a folder.
    pub fn of_path(p: &Path) -> Option<FileStat> {
        FileStat::of(&std::fs::metadata(p).ok()?)
    }
}

/// Paths with their [`FileStat`]s (read now).
pub fn with_stats(paths: Vec<PathBuf>) -> Vec<(PathBuf, Option<FileStat>)> {
    paths
        .into_iter()
        .map(|p| {
            let s = FileStat::of_path(&p);
            (p, s)
        })
        .collect()
}

/// Every session file under `<agent dir>/sessions/*/` (sub-folders and symlinks to them),
/// in the reference's candidate order: newest mtime first, then file name descending.
pub fn all_files(agent_dir: &Path) -> Vec<PathBuf> {
    all_files_stat(agent_dir).into_iter().map(|f| f.0).collect()
}

/// [`all_files`] with each file's stat (taken once, folders read on all cores), for the
/// index to compare without asking the file system again. While a `sessiontree watch`
/// follows the folder, only the files its journal names are stat'ed ([`crate::changes`]).
pub fn all_files_stat(agent_dir: &Path) -> Vec<(PathBuf, Option<FileStat>)> {
    in_order(crate::changes::current(agent_dir))
}

/// [`all_files_stat`], with the digest [`crate::changes::list_digest`] gives for this very
/// list while nothing changes, when it found the list through a watch's journal.
pub fn all_files_stat_digested(
    agent_dir: &Path,
) -> (
    Vec<(PathBuf, Option<FileStat>)>,
    Option<crate::changes::ListDigest>,
) {
    let (found, digest) = crate::changes::current_digested(agent_dir);
    (in_order(found), digest)
}

/// [`all_files_stat`] by stat'ing every file, whatever the journal says.
pub fn all_files_stat_walking(agent_dir: &Path) -> Vec<(PathBuf, Option<FileStat>)> {
    in_order(crate::changes::walked(agent_dir))
}

/// The reference's candidate order (newest mtime first, then file name descending, then the
/// path descending); names
/// that are not regular files noted and left out.
fn in_order(found: Vec<(PathBuf, crate::changes::Found)>) -> Vec<(PathBuf, Option<FileStat>)> {
    let mut files: Vec<(PathBuf, Option<FileStat>)> = Vec::with_capacity(found.len());
    // Sorted as (time, index) pairs, the entries themselves moved once: a sort that moves
    // 20,000 paths with their stats costs more than the comparisons. No two paths are
    // equal, so the order is total and an unstable sort gives the one order.
    let mut keys: Vec<(f64, u32)> = Vec::with_capacity(found.len());
    for (path, f) in found {
        // Never read a FIFO or a device (a FIFO would block, a device never end).
        if let Some(what) = f.skipped {
            crate::folder::note_skipped(path, what);
            continue;
        }
        keys.push((f.mtime_ms(), files.len() as u32));
        files.push((path, f.stat));
    }
    keys.sort_unstable_by(|&(ta, ia), &(tb, ib)| {
        let (a, b) = (&files[ia as usize], &files[ib as usize]);
        tb.partial_cmp(&ta)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| b.0.file_name().cmp(&a.0.file_name()))
            // The same time and name in two folders: by the whole path, so that the order
            // does not depend on the order the folders were read in.
            .then_with(|| b.0.cmp(&a.0))
    });
    let mut slots: Vec<Option<(PathBuf, Option<FileStat>)>> = files.into_iter().map(Some).collect();
    keys.iter()
        .filter_map(|&(_, i)| slots[i as usize].take())
        .collect()
}

/// Files of one folder in the reference's order (name descending).
pub fn dir_files(dir: &Path) -> Vec<PathBuf> {
    let mut f = jsonl_files(dir);
    f.sort_by(|a, b| b.file_name().cmp(&a.file_name()));
    f
}

/// Scans files on `threads` threads; results in input order.
pub fn scan_files(
    files: &[PathBuf],
    opts: ListOptions,
    progress: &(dyn Fn(usize) + Sync),
) -> Vec<Option<SessionInfo>> {
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let threads = opts.threads.max(1).min(files.len().max(1));
    let mut out: Vec<Option<SessionInfo>> = vec![None; files.len()];
    let parts: Vec<Vec<(usize, Option<SessionInfo>)>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= files.len() {
                            break;
                        }
                        mine.push((i, session_info(&files[i], opts.with_text)));
                        progress(done.fetch_add(1, Ordering::Relaxed) + 1);
                    }
                    mine
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, info) in parts.into_iter().flatten() {
        out[i] = info;
    }
    out
}

/// Drops what must be dropped and sorts newest first (stable, as the reference's sort).
pub fn finish(infos: Vec<Option<SessionInfo>>, opts: ListOptions) -> Vec<SessionInfo> {
    // Sized once (collecting through `flatten` regrew the list, copying every listing).
    let mut v: Vec<SessionInfo> = Vec::with_capacity(infos.len());
    v.extend(
        infos
            .into_iter()
            .flatten()
            .filter(|i| !(opts.reference_parity && i.reference_drops)),
    );
    sort_newest_first(&mut v);
    v
}

/// Sorts listings as the reference does: newest `modified` first.
pub fn sort_newest_first(v: &mut [SessionInfo]) {
    v.sort_by(|a, b| {
        b.modified_ms
            .partial_cmp(&a.modified_ms)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
}

pub use crate::folder::folder_for;

/// Whether a session's `cwd` resolves to `resolved_cwd` (empty never matches).
pub fn cwd_matches(cwd: &str, resolved_cwd: &Path) -> bool {
    !cwd.is_empty() && dirs::resolve(cwd) == resolved_cwd
}

/// `SessionManager.list(cwd, sessionDir)`.
pub fn list(cwd: &str, session_dir: Option<&Path>, opts: ListOptions) -> Vec<SessionInfo> {
    let (dir, filter) = folder_for(cwd, session_dir);
    let resolved = dirs::resolve(cwd);
    let files = dir_files(&dir);
    let mut v = finish(scan_files(&files, opts, &|_| {}), opts);
    if filter {
        v.retain(|i| cwd_matches(&i.cwd, &resolved));
    }
    v
}

/// `SessionManager.listAll()` over `<agent_dir>/sessions/*/`.
pub fn list_all(agent_dir: &Path, opts: ListOptions) -> Vec<SessionInfo> {
    let files = all_files(agent_dir);
    finish(scan_files(&files, opts, &|_| {}), opts)
}

/// `SessionManager.listAll(dir)`: the `*.jsonl` of one custom folder.
pub fn list_dir(dir: &Path, opts: ListOptions) -> Vec<SessionInfo> {
    finish(scan_files(&dir_files(dir), opts, &|_| {}), opts)
}
