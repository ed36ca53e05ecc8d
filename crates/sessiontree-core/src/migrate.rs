//! Format migration to version 3 (FORMAT.md section 6.4), in memory. Pure: the store
//! decides whether and how the result is written (always to a new file, then renamed).

use crate::context::with_field;
use crate::entry::{Entry, EntryType, Header};
use crate::json::canonicalize;
use crate::parse::Parsed;
use std::collections::HashSet;

/// The format version this library writes.
pub use crate::entry::CURRENT_VERSION;

/// True when the header's version is below 3 (or unreadable as a number, as the reference
/// treats it: such a file is "migrated" with no change).
pub fn needs_migration(header: &Header) -> bool {
    !matches!(header.version(), Some(v) if v >= CURRENT_VERSION as f64)
}

fn new_id(used: &mut HashSet<String>) -> String {
    loop {
        let u = uuid::Uuid::new_v4().simple().to_string();
        let id = u[..8].to_string();
        if used.insert(id.clone()) {
            return id;
        }
    }
}

fn rebuild(old: &Entry, text: String) -> Entry {
    let mut e = Entry::parse(text).expect("migration writes valid JSON");
    e.line = old.line;
    e.offset = old.offset;
    e.ordinal = old.ordinal;
    e
}

/// Migrates parsed content to version 3. Returns false when nothing had to change.
///
/// Every migrated line is what the reference writes for it (`JSON.stringify` of the
/// changed object): new keys go at the end, changed keys keep their place. Unlike the
/// reference, v1 ids are unique across the file.
pub fn migrate(parsed: &mut Parsed) -> bool {
    let Some(version) = parsed.header.version() else {
        return false;
    };
    if version >= CURRENT_VERSION as f64 {
        return false;
    }
    if version < 2.0 {
        let mut used = HashSet::new();
        let mut prev: Option<String> = None;
        let mut ids_by_ordinal: Vec<(u32, String)> = Vec::with_capacity(parsed.entries.len());
        let mut out = Vec::with_capacity(parsed.entries.len());
        for e in &parsed.entries {
            let id = new_id(&mut used);
            let raw = e.raw();
            let mut text = with_field(raw, "id", Some(&format!("\"{id}\"")));
            let parent = prev
                .as_ref()
                .map_or("null".to_string(), |p| format!("\"{p}\""));
            text = with_field(
                crate::json::Raw::new_unchecked(text.as_bytes()),
                "parentId",
                Some(&parent),
            );
            ids_by_ordinal.push((e.ordinal, id.clone()));
            prev = Some(id);
            out.push(text);
        }
        for (i, e) in parsed.entries.iter().enumerate() {
            if e.entry_type != EntryType::Compaction {
                continue;
            }
            let raw = crate::json::Raw::new_unchecked(out[i].as_bytes());
            let Some(idx) = raw
                .get("firstKeptEntryIndex")
                .filter(|v| v.kind() == crate::json::Kind::Number)
            else {
                continue;
            };
            // The reference assigns ids in file order while it converts indices, so an index
            // naming a later entry finds no id yet and stores none.
            let target = idx
                .as_f64()
                .filter(|&n| n <= e.ordinal as f64)
                .and_then(|n| {
                    ids_by_ordinal
                        .binary_search_by(|(o, _)| (*o as f64).total_cmp(&n))
                        .ok()
                        .map(|k| ids_by_ordinal[k].1.clone())
                });
            let mut text = out[i].clone();
            if let Some(t) = target {
                text = with_field(
                    crate::json::Raw::new_unchecked(text.as_bytes()),
                    "firstKeptEntryId",
                    Some(&format!("\"{t}\"")),
                );
            }
            text = with_field(
                crate::json::Raw::new_unchecked(text.as_bytes()),
                "firstKeptEntryIndex",
                None,
            );
            out[i] = text;
        }
        for (i, text) in out.into_iter().enumerate() {
            let old = &parsed.entries[i];
            parsed.entries[i] = rebuild(old, text);
        }
    }
    // v2 -> v3: role hookMessage becomes custom; every line is rewritten canonically.
    for i in 0..parsed.entries.len() {
        let e = &parsed.entries[i];
        let text = if e.entry_type == EntryType::Message && e.role() == Some("hookMessage") {
            let msg = e.message().expect("a role implies a message");
            let new_msg = with_field(msg, "role", Some("\"custom\""));
            with_field(e.raw(), "message", Some(&new_msg))
        } else {
            canonicalize(e.raw().bytes()).expect("valid")
        };
        parsed.entries[i] = rebuild(e, text);
    }
    let h = with_field(parsed.header.raw(), "version", Some("3"));
    let line = parsed.header.line;
    parsed.header = Header::parse(h).expect("valid header");
    parsed.header.line = line;
    true
}
