//! Claude Code resume and fork copies. `claude --resume` in older releases and
//! `--fork-session` write a new transcript that starts with lines copied from the session
//! it continues (same uuids and times, its own session id), and record no link to it. Pi
//! links a session to the one it came from with the header's `parentSession`; this finds
//! that session among those imported together (or, for a copy whose file shows it, among
//! the files of an earlier import: [`original_on_disk`]), the same way on every run:
//!
//! * the copy's first entry (same uuid, so the same Pi id) is held by its original;
//! * of the sessions holding it, the original is the newest that is older than the copy,
//!   ordered by (first time, newest time, session id) — a copy is made after its original
//!   started, and when both start with the same lines, the original ends first;
//! * a copy is recognised before it is written (its file shows it: [`Conversion::copied`],
//!   lines older than the file's own first line), or because another transcript starts
//!   with the same line ([`first_uuid`] over every file first).

use crate::Conversion;
use foldhash::HashMap;

/// Where each Claude Code entry is held: Pi entry id -> the sessions holding it.
#[derive(Default)]
pub struct Copies {
    sessions: Vec<Key>,
    holders: HashMap<String, Vec<u32>>,
}

/// A session's place in the "older than" order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    first: String,
    last_ms: i64,
    session_id: String,
}

fn key(c: &Conversion) -> Key {
    Key {
        first: c.timestamp.clone(),
        last_ms: c.last_ms,
        session_id: c.session_id.clone(),
    }
}

impl Copies {
    /// Registers the entries of a Claude Code main session (before its lines are dropped).
    pub fn add(&mut self, c: &Conversion) {
        let n = self.sessions.len() as u32;
        self.sessions.push(key(c));
        for l in &c.lines {
            self.holders.entry(l.id.clone()).or_default().push(n);
        }
    }

    /// The session id of the session `c` was copied from, if one imported with it holds
    /// `c`'s first entry and is older.
    pub fn original_of(&self, c: &Conversion) -> Option<&str> {
        let me = key(c);
        self.holders
            .get(&c.lines.first()?.id)?
            .iter()
            .map(|&n| &self.sessions[n as usize])
            .filter(|k| k.session_id != me.session_id && **k < me)
            .max()
            .map(|k| k.session_id.as_str())
    }
}

/// For a copy whose original was not imported with it: the original among the Pi session
/// files already in `folder` (an earlier import), by the same rule: the files holding the
/// copy's first entry, of those the newest older than the copy. Only files that hold the
/// entry's id at all are loaded.
pub fn original_on_disk(c: &Conversion, folder: &std::path::Path) -> Option<std::path::PathBuf> {
    let first = &c.lines.first()?.id;
    let needle = format!("\"id\":\"{first}\"");
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    let me = key(c);
    let mut best: Option<(Key, std::path::PathBuf)> = None;
    for path in sessiontree::list::jsonl_files(folder) {
        if path.file_name().and_then(|n| n.to_str()) == Some(c.file_name().as_str()) {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        if finder.find(&bytes).is_none() {
            continue;
        }
        let Ok(loaded) = sessiontree::session::load_bytes(&path, bytes) else {
            continue;
        };
        let tree = &loaded.tree;
        if !tree.contains(first) {
            continue;
        }
        let ms = |t: Option<sessiontree::json::Raw<'_>>| {
            t.and_then(|t| t.as_str())
                .and_then(|t| sessiontree::date::parse_iso(&t))
                .map(|f| f as i64)
        };
        let k = Key {
            first: tree
                .header()
                .timestamp()
                .and_then(|t| t.as_str().map(|t| t.into_owned()))
                .unwrap_or_default(),
            last_ms: tree
                .entries()
                .iter()
                .filter_map(|e| ms(e.timestamp()))
                .max()
                .unwrap_or(0),
            session_id: tree.session_id().to_string(),
        };
        if k.session_id == me.session_id || k >= me {
            continue;
        }
        if best.as_ref().is_none_or(|(b, _)| k > *b) {
            best = Some((k, path));
        }
    }
    best.map(|(_, p)| p)
}

/// The uuid of the first main-conversation line of a Claude Code transcript (reading only
/// as far as that line).
pub fn first_uuid(reader: impl std::io::BufRead) -> Option<String> {
    for line in reader.split(b'\n').take(1000) {
        let line = line.ok()?;
        let Ok(serde_json::Value::Object(o)) = serde_json::from_slice(&line) else {
            continue;
        };
        if o.get("isSidechain").and_then(serde_json::Value::as_bool) == Some(true) {
            continue;
        }
        if let Some(u) = o.get("uuid").and_then(serde_json::Value::as_str) {
            return Some(u.to_string());
        }
    }
    None
}
