//! Bringing another machine's copy of a session into the local file, by appending only.
//!
//! Pi's leaf is the last entry of the file (FORMAT.md 6.5), and every appended entry moves
//! it. So when the other copy diverged, its entries that the local file lacks are appended
//! (in its file order; their parents exist, as both copies share the history up to the
//! divergence), and then one `label` entry whose `parentId` is the old leaf: the leaf is
//! back on the user's branch, and a label adds nothing to the model's context (9.3/9.4), so
//! Pi resumes with the context it had. The label marks the tip of the pulled branch
//! (`pulled from <machine>`), which is what Pi's own `appendLabelChange` writes when the user
//! labels an entry on another branch. When that tip already carries a label, a `custom`
//! entry (also never in the context) does the same without touching labels.
//!
//! These marker entries are recognised when pulling back the other way, and skipped unless
//! something hangs under them, so two machines syncing each other do not grow the files
//! with markers forever.

use sessiontree::entry::{Entry, EntryType};
use sessiontree::parse::{self, Parsed, Tail};
use std::collections::{HashMap, HashSet};

/// The label text of a marker starts with this.
pub const MARK_LABEL: &str = "pulled from ";
/// The `customType` of a marker when the tip was labelled already.
pub const MARK_CUSTOM: &str = "sessiontree.pull";

/// What to do with one foreign copy.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    /// The local file holds everything the copy has.
    UpToDate,
    /// The local file is a byte prefix of the copy: append the rest up to its last newline
    /// (the leaf moves, as the local file was simply behind).
    FastForward(Vec<u8>),
    /// The copy diverged: append its missing entries, then a marker that puts the leaf back.
    Branch {
        bytes: Vec<u8>,
        entries: usize,
        /// Entries of the copy left out because their parent is nowhere to be found.
        orphans: usize,
        marker_id: String,
    },
    /// Cannot be merged without rewriting the local file: why.
    Skip(String),
}

fn parsed(bytes: &[u8]) -> Option<Parsed> {
    parse::parse(parse::backing(bytes.to_vec())).ok()
}

/// True for the entries this module writes after a branch.
pub fn is_marker(e: &Entry) -> bool {
    match e.entry_type {
        EntryType::Label => e
            .str_field("label")
            .is_some_and(|l| l.starts_with(MARK_LABEL)),
        EntryType::Custom => e.str_field("customType").as_deref() == Some(MARK_CUSTOM),
        _ => false,
    }
}

fn ts(e: &Entry) -> String {
    e.str_field("timestamp")
        .map(|s| s.into_owned())
        .unwrap_or_default()
}

fn q(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// Plans how `foreign` (another machine's copy, `from` = its name) joins `local`.
pub fn plan(local: &[u8], foreign: &[u8], from: &str) -> Plan {
    if foreign.len() <= local.len() && local.starts_with(foreign) {
        return Plan::UpToDate;
    }
    if foreign.starts_with(local) {
        // Complete lines only: a copy pushed while a line was being written must not leave
        // the local file ending torn.
        let rest = &foreign[local.len()..];
        return match memchr::memrchr(b'\n', rest) {
            Some(i) => Plan::FastForward(rest[..=i].to_vec()),
            None => Plan::UpToDate,
        };
    }
    let Some(l) = parsed(local) else {
        return Plan::Skip("the local file is not a session".into());
    };
    let Some(f) = parsed(foreign) else {
        return Plan::Skip("the archived copy is not a session".into());
    };
    if l.header.id != f.header.id {
        return Plan::Skip(format!(
            "the archived copy is session {:?}, the local file {:?}",
            f.header.id, l.header.id
        ));
    }
    if l.header.version() != Some(3.0) || f.header.version() != Some(3.0) {
        return Plan::Skip(
            "one of the copies is not format version 3 (open it with Pi or sessiontree once to migrate it)"
                .into(),
        );
    }
    if l.tail != Tail::Clean {
        return Plan::Skip(
            "the local file ends in an incomplete line (a crashed writer); let a writer repair it first"
                .into(),
        );
    }
    let local_ids: HashSet<&str> = l.entries.iter().filter_map(|e| e.id()).collect();
    let Some(leaf) = l.entries.last() else {
        return Plan::Skip("the local file has no entries to keep the leaf on".into());
    };
    let Some(leaf_id) = leaf.id() else {
        return Plan::Skip("the local file's last entry has no id".into());
    };

    // The copy's entries the local file lacks (complete lines only).
    let cand: Vec<&Entry> = f
        .entries
        .iter()
        .filter(|e| e.line_bytes().is_some())
        .filter(|e| e.id().is_some_and(|id| !local_ids.contains(id)))
        .collect();
    let by_id: HashMap<&str, usize> = cand
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id().unwrap(), i))
        .collect();
    // Markers only come along when something real hangs under them.
    let mut needed = vec![false; cand.len()];
    for (i, e) in cand.iter().enumerate() {
        if is_marker(e) || needed[i] {
            continue;
        }
        needed[i] = true;
        let mut p = e.parent.walk_id();
        while let Some(pid) = p {
            match by_id.get(pid) {
                Some(&j) if !needed[j] => {
                    needed[j] = true;
                    p = cand[j].parent.walk_id();
                }
                _ => break,
            }
        }
    }
    // Keep entries whose parent is known (locally or kept before them, in file order).
    let mut kept_ids: HashSet<&str> = HashSet::new();
    let mut kept: Vec<&Entry> = Vec::new();
    let mut orphans = 0;
    for (i, e) in cand.iter().enumerate() {
        if !needed[i] {
            continue;
        }
        let ok = match e.parent.walk_id() {
            None => true,
            Some(p) => local_ids.contains(p) || kept_ids.contains(p),
        };
        if ok {
            kept_ids.insert(e.id().unwrap());
            kept.push(e);
        } else {
            orphans += 1;
        }
    }
    let Some(tip) = kept.iter().rev().find(|e| !is_marker(e)) else {
        return Plan::UpToDate;
    };
    let tip_id = tip.id().unwrap();

    // Would a label on the tip replace one the user set?
    let mut tip_label = false;
    for e in l.entries.iter().chain(kept.iter().copied()) {
        if e.entry_type == EntryType::Label && e.str_field("targetId").as_deref() == Some(tip_id) {
            tip_label = e.str_field("label").is_some_and(|s| !s.is_empty());
        }
    }
    // A deterministic id (so that a rerun writes the same line), unused in both copies.
    let mut n = 0u32;
    let marker_id = loop {
        let h = crate::hex(&crate::sha256(
            format!("{leaf_id}\0{tip_id}\0{from}\0{n}").as_bytes(),
        ));
        let id = h[..8].to_string();
        if !local_ids.contains(id.as_str()) && !kept_ids.contains(id.as_str()) {
            break id;
        }
        n += 1;
    };
    let t = std::cmp::max(ts(leaf), ts(tip));
    let marker = if tip_label {
        format!(
            "{{\"type\":\"custom\",\"customType\":{},\"data\":{{\"from\":{},\"tip\":{}}},\"id\":{},\"parentId\":{},\"timestamp\":{}}}\n",
            q(MARK_CUSTOM),
            q(from),
            q(tip_id),
            q(&marker_id),
            q(leaf_id),
            q(&t)
        )
    } else {
        format!(
            "{{\"type\":\"label\",\"id\":{},\"parentId\":{},\"timestamp\":{},\"targetId\":{},\"label\":{}}}\n",
            q(&marker_id),
            q(leaf_id),
            q(&t),
            q(tip_id),
            q(&format!("{MARK_LABEL}{from}"))
        )
    };
    let mut bytes = Vec::new();
    for e in &kept {
        bytes.extend_from_slice(e.line_bytes().unwrap());
    }
    bytes.extend_from_slice(marker.as_bytes());
    Plan::Branch {
        bytes,
        entries: kept.len(),
        orphans,
        marker_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#;

    fn line(id: &str, parent: Option<&str>, t: u32, text: &str) -> String {
        let p = parent.map(|p| format!("\"{p}\"")).unwrap_or("null".into());
        format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{p},\"timestamp\":\"2025-01-01T00:00:{t:02}.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"{text}\",\"timestamp\":1}}}}\n"
        )
    }

    fn file(lines: &[String]) -> Vec<u8> {
        let mut v = format!("{H}\n").into_bytes();
        for l in lines {
            v.extend_from_slice(l.as_bytes());
        }
        v
    }

    #[test]
    fn prefix_is_up_to_date_and_behind_is_fast_forward() {
        let a = line("aaaaaaaa", None, 1, "a");
        let b = line("bbbbbbbb", Some("aaaaaaaa"), 2, "b");
        let short = file(std::slice::from_ref(&a));
        let long = file(&[a, b.clone()]);
        assert_eq!(plan(&long, &short, "m"), Plan::UpToDate);
        assert_eq!(
            plan(&short, &long, "m"),
            Plan::FastForward(b.clone().into_bytes())
        );
        // A copy pushed mid-line brings its complete lines only.
        let mut torn = long.clone();
        torn.extend_from_slice(b"{\"type\":\"mess");
        assert_eq!(plan(&short, &torn, "m"), Plan::FastForward(b.into_bytes()));
        assert_eq!(plan(&long, &torn, "m"), Plan::UpToDate);
    }

    #[test]
    fn diverged_copy_becomes_a_branch_and_the_leaf_returns() {
        let a = line("aaaaaaaa", None, 1, "a");
        let mine = line("11111111", Some("aaaaaaaa"), 2, "mine");
        let theirs = line("22222222", Some("aaaaaaaa"), 3, "theirs");
        let theirs2 = line("33333333", Some("22222222"), 4, "theirs2");
        let local = file(&[a.clone(), mine]);
        let foreign = file(&[a, theirs.clone(), theirs2.clone()]);
        let Plan::Branch {
            bytes,
            entries,
            marker_id,
            ..
        } = plan(&local, &foreign, "desk")
        else {
            panic!("expected a branch")
        };
        assert_eq!(entries, 2);
        let text = String::from_utf8(bytes).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(format!("{}\n", lines[0]), theirs);
        assert_eq!(format!("{}\n", lines[1]), theirs2);
        let m: serde_json::Value = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(m["type"], "label");
        assert_eq!(m["id"], marker_id.as_str());
        assert_eq!(m["parentId"], "11111111");
        assert_eq!(m["targetId"], "33333333");
        assert_eq!(m["label"], "pulled from desk");

        // The merged file pulled back the other way adds only what is real, no marker.
        let mut merged = local.clone();
        merged.extend_from_slice(text.as_bytes());
        match plan(&foreign, &merged, "lap") {
            Plan::Branch { bytes, entries, .. } => {
                assert_eq!(entries, 1, "only the entry `mine`, not the marker");
                assert!(String::from_utf8(bytes).unwrap().contains("\"mine\""));
            }
            p => panic!("{p:?}"),
        }
        // And pulling the same copy again adds nothing.
        assert_eq!(plan(&merged, &foreign, "desk"), Plan::UpToDate);
    }

    #[test]
    fn a_labelled_tip_gets_a_custom_marker_instead() {
        let a = line("aaaaaaaa", None, 1, "a");
        let local = file(&[a.clone(), line("11111111", Some("aaaaaaaa"), 2, "mine")]);
        let theirs = line("22222222", Some("aaaaaaaa"), 3, "theirs");
        let lab = r#"{"type":"label","id":"33333333","parentId":"22222222","timestamp":"2025-01-01T00:00:04.000Z","targetId":"44444444","label":"keep"}"#;
        let tip = line("44444444", Some("33333333"), 5, "tip");
        // A label written before its target (hand-made files can): the tip is labelled.
        let foreign = file(&[a, theirs, format!("{lab}\n"), tip]);
        let Plan::Branch { bytes, entries, .. } = plan(&local, &foreign, "desk") else {
            panic!()
        };
        assert_eq!(entries, 3);
        let text = String::from_utf8(bytes).unwrap();
        let m: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(m["type"], "custom");
        assert_eq!(m["customType"], MARK_CUSTOM);
        assert_eq!(m["parentId"], "11111111");
        assert_eq!(m["data"]["tip"], "44444444");
    }

    #[test]
    fn a_torn_local_tail_is_left_alone() {
        let a = line("aaaaaaaa", None, 1, "a");
        let mut local = file(std::slice::from_ref(&a));
        local.extend_from_slice(b"{\"typo");
        let foreign = file(&[a, line("22222222", Some("aaaaaaaa"), 3, "x")]);
        assert!(matches!(plan(&local, &foreign, "m"), Plan::Skip(_)));
    }
}
