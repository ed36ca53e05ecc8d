//! Claude Code resume and fork copies. `claude --resume` in older releases and
//! `--fork-session` write a new transcript that starts with lines copied from the session
//! it continues (same uuids and times, its own session id), and record no link to it. Pi
//! links a session to the one it came from with the header's `parentSession`; this finds
//! that session among those imported together (or, for a copy whose file shows it, among
//! the files of an earlier import: [`OnDisk`]), the same way on every run:
//!
//! * the copy's first entry (same uuid, so the same Pi id) is held by its original;
//! * of the sessions holding it that are older than the copy, ordered by (first time,
//!   newest time, session id) — a copy is made after its original started — the original
//!   is the one that holds the most of the copy's entries, and of those that hold as many,
//!   the oldest: the session the shared entries were first written in. A fork of a fork
//!   (`--resume F --fork-session`, F itself a fork of P) cut back to entries F copied
//!   from P (`--resume-session-at`) holds no more of F than of P, and is P's copy; one
//!   that goes on past F's own turns holds more of F, and is F's;
//! * a copy is recognised before it is written (its file shows it: [`Conversion::copied`],
//!   lines older than the file's own first line), or because another transcript starts
//!   with the same line ([`first_uuid`] over every file first).

use crate::Conversion;
use foldhash::HashMap;

/// Where each Claude Code entry is held: Pi entry id -> the sessions holding it.
#[derive(Default)]
pub struct Copies(Holders<()>);

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

/// Sessions (each with a `T`: where it is) and the entries each holds.
struct Holders<T> {
    sessions: Vec<(Key, T)>,
    holders: HashMap<String, Vec<u32>>,
}

impl<T> Default for Holders<T> {
    fn default() -> Self {
        Holders {
            sessions: Vec::new(),
            holders: HashMap::default(),
        }
    }
}

impl<T> Holders<T> {
    fn add<'i>(&mut self, k: Key, at: T, ids: impl Iterator<Item = &'i str>) {
        let n = self.sessions.len() as u32;
        self.sessions.push((k, at));
        for id in ids {
            self.holders.entry(id.to_string()).or_default().push(n);
        }
    }

    /// The rule: of the other sessions older than the copy that hold its first entry, the
    /// one holding the most of its entries; of those holding as many, the oldest (the
    /// entries were first written there, the others hold copies of them).
    fn original(&self, c: &Conversion) -> Option<&(Key, T)> {
        let me = key(c);
        let candidates: Vec<u32> = self
            .holders
            .get(&c.lines.first()?.id)?
            .iter()
            .copied()
            .filter(|&n| {
                let k = &self.sessions[n as usize].0;
                k.session_id != me.session_id && *k < me
            })
            .collect();
        if candidates.len() <= 1 {
            return candidates.first().map(|&n| &self.sessions[n as usize]);
        }
        // How many of the copy's entries each candidate holds.
        let mut shared = vec![0usize; candidates.len()];
        for l in &c.lines {
            let Some(holders) = self.holders.get(&l.id) else {
                continue;
            };
            for (i, n) in candidates.iter().enumerate() {
                if holders.contains(n) {
                    shared[i] += 1;
                }
            }
        }
        candidates
            .iter()
            .zip(&shared)
            .map(|(&n, &count)| (count, &self.sessions[n as usize]))
            .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1 .0.cmp(&a.1 .0)))
            .map(|(_, s)| s)
    }
}

impl Copies {
    /// Registers the entries of a Claude Code main session (before its lines are dropped).
    pub fn add(&mut self, c: &Conversion) {
        self.0
            .add(key(c), (), c.lines.iter().map(|l| l.id.as_str()));
    }

    /// The session id of the session `c` was copied from, if one imported with it holds
    /// `c`'s first entry and is older.
    pub fn original_of(&self, c: &Conversion) -> Option<&str> {
        self.0.original(c).map(|(k, ())| k.session_id.as_str())
    }
}

/// For copies whose original was not imported with them: the originals among the Pi
/// session files already in their folder (an earlier import). Each folder is read once,
/// the first time a copy needs it (every session file loaded, its entries indexed); the
/// same rule then picks the original: of the older files holding the copy's first entry,
/// the one holding the most of its entries, the oldest of those holding as many.
#[derive(Default)]
pub struct OnDisk {
    folders: HashMap<std::path::PathBuf, Holders<std::path::PathBuf>>,
}

impl OnDisk {
    pub fn original_of(
        &mut self,
        c: &Conversion,
        folder: &std::path::Path,
    ) -> Option<std::path::PathBuf> {
        self.folders
            .entry(folder.to_path_buf())
            .or_insert_with(|| index_folder(folder))
            .original(c)
            .map(|(_, p)| p.clone())
    }
}

/// Every session file of a folder: its place in the "older than" order and its entries.
fn index_folder(folder: &std::path::Path) -> Holders<std::path::PathBuf> {
    let mut out = Holders::default();
    for path in sessiontree::list::jsonl_files(folder) {
        let Ok(loaded) = sessiontree::load(&path) else {
            continue;
        };
        let tree = &loaded.tree;
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
        out.add(k, path, tree.entries().iter().filter_map(|e| e.id()));
    }
    out
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
