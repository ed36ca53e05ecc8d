//! The session as a tree: index by id, leaf, labels, name, branches and the tree view.
//! Pure: no I/O. Every walk is iterative and stops at a cycle.

use crate::diag::{Diagnostic, DiagnosticKind};
use crate::entry::{js_trim, Entry, EntryType, Header, Parent};
use crate::parse::{diag, Parsed};
type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// A label currently set on an entry.
#[derive(Clone, Debug)]
pub struct Label {
    /// The label value as stored (a JSON value, normally a string).
    pub label: String,
    /// The label entry's `timestamp`, as stored (JSON text), if any.
    pub timestamp: Option<String>,
    seq: u64,
}

/// Which leaf a context or branch is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafArg<'a> {
    /// The last entry in file order (the reference's "not given").
    Default,
    /// Explicitly none: an empty path.
    Null,
    /// This entry (an unknown id falls back to the last entry, as the reference does).
    Id(&'a str),
}

/// Entries in a tree, with their index.
#[derive(Clone, Debug)]
pub struct SessionTree {
    header: Header,
    entries: Vec<Entry>,
    /// id -> slot; slots keep the reference's `Map` order (first insertion, last value).
    /// A slot's id is read from its entry (`entries[slots[slot]]`), so that indexing a
    /// load's entries allocates no copy of each id.
    by_id: hashbrown::HashTable<u32>,
    slots: Vec<u32>,
    leaf: Option<u32>,
    labels: HashMap<Box<str>, Label>,
    label_seq: u64,
    name_entry: Option<u32>,
    diagnostics: Vec<Diagnostic>,
    children: Option<HashMap<Box<str>, Vec<u32>>>,
    has_cycle: bool,
    /// Each entry's parent index, resolved when the entry was indexed (`NO_PARENT` when
    /// its parent was unknown then); trusted only while no id has been used twice.
    parent_of: Vec<u32>,
    has_duplicates: bool,
}

const NO_PARENT: u32 = u32::MAX;

/// The hash of an id in [`SessionTree`]'s index.
fn id_hash(id: &str) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(id)
}

/// The id of index slot `slot`: that of its entry (every indexed entry has one).
fn slot_id<'a>(entries: &'a [Entry], slots: &[u32], slot: u32) -> &'a str {
    entries[slots[slot as usize] as usize]
        .id
        .as_deref()
        .expect("an indexed entry has an id")
}

/// The tree view: roots and children lists (by entry index), iterative to walk.
#[derive(Clone, Debug, Default)]
pub struct TreeView {
    /// Indices (into [`SessionTree::entries`]) of the roots, oldest first.
    pub roots: Vec<u32>,
    /// For each entry index, its children's indices, oldest first (`getTree`'s order).
    pub children: Vec<Vec<u32>>,
}

impl SessionTree {
    /// A session with only a header.
    pub fn new(header: Header) -> Self {
        SessionTree {
            header,
            entries: Vec::new(),
            by_id: hashbrown::HashTable::new(),
            slots: Vec::new(),
            leaf: None,
            labels: HashMap::default(),
            label_seq: 0,
            name_entry: None,
            diagnostics: Vec::new(),
            children: None,
            has_cycle: false,
            parent_of: Vec::new(),
            has_duplicates: false,
        }
    }

    /// Indexes parsed entries and reports duplicate ids, orphans and cycles.
    pub fn from_parsed(parsed: Parsed) -> Self {
        let Parsed {
            header,
            entries,
            diagnostics,
            ..
        } = parsed;
        let mut t = SessionTree::new(header);
        t.diagnostics = diagnostics;
        t.parent_of.reserve(entries.len());
        t.slots.reserve(entries.len());
        t.by_id
            .reserve(entries.len(), |&s| id_hash(slot_id(&entries, &t.slots, s)));
        // Indexed where they are: the list is kept, not moved entry by entry into a new one.
        for (i, e) in entries.iter().enumerate() {
            t.index_fields(&entries[..i], e, true);
        }
        t.entries = entries;
        t.check_structure();
        t.diagnostics.sort_by_key(|d| (d.line, d.offset));
        t
    }

    fn index_entry(&mut self, e: Entry, report: bool) {
        let entries = std::mem::take(&mut self.entries);
        self.index_fields(&entries, &e, report);
        self.entries = entries;
        self.entries.push(e);
    }

    /// Indexes `e`, about to become the entry after `before` (the entries so far).
    fn index_fields(&mut self, before: &[Entry], e: &Entry, report: bool) {
        let idx = before.len() as u32;
        // Most entries continue the line before them: their parent is then found without a
        // lookup (the latest entry of that id is the one just before).
        let parent = match (e.parent.walk_id(), before.last()) {
            (None, _) => NO_PARENT,
            (Some(p), Some(prev)) if prev.id.as_deref() == Some(p) => idx - 1,
            (Some(p), _) => self.index_in(before, p).unwrap_or(NO_PARENT),
        };
        self.parent_of.push(parent);
        match e.id.as_deref() {
            Some(id) => {
                let slots = &self.slots;
                // The entries of the slots already in the table are all in `before`.
                let id_of = |s: &u32| slot_id(before, slots, *s);
                match self
                    .by_id
                    .entry(id_hash(id), |s| id_of(s) == id, |s| id_hash(id_of(s)))
                {
                    hashbrown::hash_table::Entry::Occupied(o) => {
                        let slot = *o.get();
                        if report {
                            let first = &before[self.slots[slot as usize] as usize];
                            self.diagnostics.push(diag(
                                e.line,
                                e.offset,
                                DiagnosticKind::DuplicateId,
                                format!(
                                    "id {id:?} is already used on line {} (this later line wins)",
                                    first.line
                                ),
                            ));
                        }
                        self.slots[slot as usize] = idx;
                        self.has_duplicates = true;
                    }
                    hashbrown::hash_table::Entry::Vacant(v) => {
                        v.insert(self.slots.len() as u32);
                        self.slots.push(idx);
                    }
                }
                self.leaf = Some(idx);
                if let Some(children) = &mut self.children {
                    if let Some(p) = e.parent.walk_id() {
                        children.entry(p.into()).or_default().push(idx);
                    }
                }
            }
            None => {
                if report {
                    self.diagnostics.push(diag(
                        e.line,
                        e.offset,
                        DiagnosticKind::MissingId,
                        "entry has no string id (kept in file order, not in the tree)".into(),
                    ));
                }
                self.children = None;
            }
        }
        if report {
            if let Parent::Invalid = e.parent {
                self.diagnostics.push(diag(
                    e.line,
                    e.offset,
                    DiagnosticKind::InvalidParent,
                    "parentId is missing or not a string/null (the entry is a root)".into(),
                ));
            }
        }
        match e.entry_type {
            EntryType::Label => {
                if let Some(target) = e.str_field("targetId") {
                    let label = e.field("label").filter(|l| l.truthy());
                    match label {
                        Some(l) => {
                            let ts = e.timestamp().map(|t| t.text().to_owned());
                            let seq = match self.labels.get(target.as_ref()) {
                                Some(old) => old.seq,
                                None => {
                                    self.label_seq += 1;
                                    self.label_seq
                                }
                            };
                            self.labels.insert(
                                target.as_ref().into(),
                                Label {
                                    label: l.text().to_owned(),
                                    timestamp: ts,
                                    seq,
                                },
                            );
                        }
                        None => {
                            self.labels.remove(target.as_ref());
                        }
                    }
                }
            }
            EntryType::SessionInfo => self.name_entry = Some(idx),
            _ => {}
        }
    }

    /// Orphans, cycles and compactions that keep a missing entry.
    fn check_structure(&mut self) {
        let n = self.entries.len();
        // 0 = unvisited, 1 = on the current walk, 2 = done.
        let mut state = vec![0u8; n];
        let mut walk = Vec::new();
        let mut found = Vec::new();
        for start in 0..n {
            if state[start] != 0 || self.entries[start].id.is_none() {
                continue;
            }
            walk.clear();
            let mut cur = Some(start);
            while let Some(i) = cur {
                if state[i] == 2 {
                    break;
                }
                if state[i] == 1 {
                    found.push(i);
                    break;
                }
                state[i] = 1;
                walk.push(i);
                // A parent that is a duplicate id's loser still resolves to the winner.
                cur = self.parent_index(i as u32).map(|x| x as usize);
            }
            for &i in &walk {
                state[i] = 2;
            }
        }
        self.has_cycle = !found.is_empty();
        for i in found {
            let e = &self.entries[i];
            let msg = if e.parent.walk_id() == e.id() {
                "entry is its own parent (treated as a root)".to_string()
            } else {
                format!(
                    "parentId chain from {:?} loops back to it (the walk stops there)",
                    e.id().unwrap_or("")
                )
            };
            self.diagnostics
                .push(diag(e.line, e.offset, DiagnosticKind::Cycle, msg));
        }
        for (e, &known) in self.entries.iter().zip(&self.parent_of) {
            if let Parent::Id(p) = &e.parent {
                // A parent found when the entry was indexed names an entry.
                if known == NO_PARENT && !self.contains(p) {
                    self.diagnostics.push(diag(
                        e.line,
                        e.offset,
                        DiagnosticKind::OrphanParent,
                        format!("parentId {p:?} names no entry (the entry is a root)"),
                    ));
                }
            }
            if e.entry_type == EntryType::Compaction {
                if let Some(k) = e.str_field("firstKeptEntryId") {
                    if !self.contains(&k) {
                        self.diagnostics.push(diag(
                            e.line,
                            e.offset,
                            DiagnosticKind::MissingFirstKept,
                            format!("compaction keeps from {k:?}, which names no entry"),
                        ));
                    }
                }
            }
        }
    }

    /// The header line.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The session id (the header's `id`).
    pub fn session_id(&self) -> &str {
        &self.header.id
    }

    /// Problems found on load.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// Every entry in file order, all branches (`getEntries`).
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Entries with an id (`getEntryCount`).
    pub fn entry_count(&self) -> usize {
        self.by_id.len()
    }

    fn index_of(&self, id: &str) -> Option<u32> {
        self.index_in(&self.entries, id)
    }

    /// [`Self::index_of`] while the entries are `entries` (all the indexed ones).
    fn index_in(&self, entries: &[Entry], id: &str) -> Option<u32> {
        self.by_id
            .find(id_hash(id), |&s| slot_id(entries, &self.slots, s) == id)
            .map(|&s| self.slots[s as usize])
    }

    /// The entry with this id (`getEntry`); with duplicate ids, the later line.
    pub fn get_entry(&self, id: &str) -> Option<&Entry> {
        self.index_of(id).map(|i| &self.entries[i as usize])
    }

    /// True when an entry has this id.
    pub fn contains(&self, id: &str) -> bool {
        self.index_of(id).is_some()
    }

    /// The current leaf (`getLeafId`); `None` when the leaf is null.
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.and_then(|i| self.entries[i as usize].id())
    }

    /// The current leaf as a [`LeafArg`]: the context "at the leaf" (an empty one when the
    /// leaf is null).
    pub fn leaf_arg(&self) -> LeafArg<'_> {
        match self.leaf_id() {
            Some(id) => LeafArg::Id(id),
            None => LeafArg::Null,
        }
    }

    /// The entry at the leaf; `None` when the leaf is null (empty session or after
    /// [`SessionTree::reset_leaf`]).
    pub fn leaf_entry(&self) -> Option<&Entry> {
        self.leaf.map(|i| &self.entries[i as usize])
    }

    /// Moves the leaf to an entry (`branch`).
    pub fn branch(&mut self, id: &str) -> Result<(), crate::Error> {
        let i = self
            .index_of(id)
            .ok_or_else(|| crate::Error::EntryNotFound(id.to_string()))?;
        self.leaf = Some(i);
        Ok(())
    }

    /// The leaf becomes null: the next entry is a new root (`resetLeaf`).
    pub fn reset_leaf(&mut self) {
        self.leaf = None;
    }

    /// The label on an entry (`getLabel`).
    pub fn get_label(&self, id: &str) -> Option<&Label> {
        self.labels.get(id)
    }

    /// Labels currently set, in the reference's map order.
    pub fn labels(&self) -> Vec<(&str, &Label)> {
        let mut v: Vec<(&str, &Label)> = self.labels.iter().map(|(k, l)| (k.as_ref(), l)).collect();
        v.sort_by_key(|(_, l)| l.seq);
        v
    }

    /// The session's name: the last `session_info` in file order, trimmed; empty clears.
    pub fn name(&self) -> Option<String> {
        let e = &self.entries[self.name_entry? as usize];
        let n = e.str_field("name")?;
        let t = js_trim(&n);
        (!t.is_empty()).then(|| t.to_string())
    }

    /// Children of an entry, in the reference's order (`getChildren`).
    pub fn get_children(&mut self, id: &str) -> Vec<&Entry> {
        if self.children.is_none() {
            let mut map: HashMap<Box<str>, Vec<u32>> = HashMap::default();
            for &i in &self.slots {
                if let Some(p) = self.entries[i as usize].parent.walk_id() {
                    map.entry(p.into()).or_default().push(i);
                }
            }
            self.children = Some(map);
        }
        let map = self.children.as_ref().expect("built above");
        map.get(id)
            .map(|v| v.iter().map(|&i| &self.entries[i as usize]).collect())
            .unwrap_or_default()
    }

    /// The index of an entry's parent, if it names an entry.
    #[inline]
    fn parent_index(&self, i: u32) -> Option<u32> {
        let known = self.parent_of[i as usize];
        if known != NO_PARENT && !self.has_duplicates {
            return Some(known);
        }
        self.entries[i as usize]
            .parent
            .walk_id()
            .and_then(|p| self.index_of(p))
    }

    /// Entry indices from the root to `start` (root first); stops at a cycle.
    fn path_from(&self, start: Option<u32>) -> Vec<u32> {
        let mut path = Vec::new();
        let mut seen = self.has_cycle.then(std::collections::HashSet::new);
        let mut cur = start;
        while let Some(i) = cur {
            if let Some(seen) = &mut seen {
                if !seen.insert(i) {
                    break;
                }
            }
            path.push(i);
            if path.len() > self.entries.len() {
                break;
            }
            cur = self.parent_index(i);
        }
        path.reverse();
        path
    }

    /// The path from the root to `from` (default: the leaf), root first (`getBranch`).
    pub fn get_branch(&self, from: Option<&str>) -> Vec<&Entry> {
        let start = match from {
            Some(id) => self.index_of(id),
            None => self.leaf,
        };
        self.path_from(start)
            .into_iter()
            .map(|i| &self.entries[i as usize])
            .collect()
    }

    /// The path the context is built from (`buildSessionPath`).
    pub(crate) fn context_path(&self, leaf: LeafArg<'_>) -> Vec<&Entry> {
        let start = match leaf {
            LeafArg::Null => return Vec::new(),
            LeafArg::Id(id) => self.index_of(id).or_else(|| self.last_index()),
            LeafArg::Default => self.last_index(),
        };
        self.path_from(start)
            .into_iter()
            .map(|i| &self.entries[i as usize])
            .collect()
    }

    fn last_index(&self) -> Option<u32> {
        (!self.entries.is_empty()).then(|| self.entries.len() as u32 - 1)
    }

    /// The whole session as a tree (`getTree`): roots are entries whose parent is null,
    /// themselves, or unknown; children sorted by time, oldest first, ties in file order.
    pub fn get_tree(&self) -> TreeView {
        let n = self.entries.len();
        let mut view = TreeView {
            roots: Vec::new(),
            children: vec![Vec::new(); n],
        };
        for (i, e) in self.entries.iter().enumerate() {
            let parent = match &e.parent {
                Parent::Null => None,
                Parent::Id(p) if Some(p.as_ref()) == e.id() => None,
                Parent::Id(p) => self.index_of(p),
                Parent::Invalid => None,
            };
            match parent {
                // The reference's node map holds the last entry per id, but pushes each line.
                Some(pi) => view.children[pi as usize].push(i as u32),
                None => view.roots.push(i as u32),
            }
        }
        let key = |i: &u32| -> f64 {
            crate::date::js_date_ms(self.entries[*i as usize].timestamp()).unwrap_or(f64::NAN)
        };
        for list in view.children.iter_mut() {
            if list.len() > 1 {
                let keys: Vec<f64> = list.iter().map(key).collect();
                if keys.iter().any(|k| k.is_nan()) {
                    v8_sort(list, &keys);
                } else {
                    let mut pairs: Vec<(f64, u32)> =
                        keys.into_iter().zip(list.iter().copied()).collect();
                    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
                    *list = pairs.into_iter().map(|p| p.1).collect();
                }
            }
        }
        view
    }

    /// The entry at an index.
    pub fn entry_at(&self, i: u32) -> &Entry {
        &self.entries[i as usize]
    }

    /// Generates an id not used in this session: 8 hex characters, a full UUID after 100 collisions.
    pub fn generate_id(&self) -> String {
        for _ in 0..100 {
            let id = crate::ids::random_hex8();
            if !self.contains(&id) {
                return id;
            }
        }
        uuid::Uuid::new_v4().hyphenated().to_string()
    }

    /// Adds a new entry at the end and moves the leaf to it (no I/O).
    pub fn commit(&mut self, entry: Entry) {
        self.index_entry(entry, false);
    }

    /// `getTree()` as the reference's JSON: `[{entry, children, label?, labelTimestamp?}]`.
    pub fn tree_json(&self) -> String {
        let mut v = Vec::new();
        self.write_tree_json(&mut v).expect("writing to memory");
        String::from_utf8(v).expect("JSON text is UTF-8")
    }

    /// Streams `getTree()`'s JSON; iterative, so a 200,000-deep chain is fine.
    pub fn write_tree_json<W: std::io::Write + ?Sized>(&self, w: &mut W) -> std::io::Result<()> {
        let view = self.get_tree();
        w.write_all(b"[")?;
        // Stack of (children list, next position).
        let mut stack: Vec<(&[u32], usize)> = vec![(&view.roots, 0)];
        let mut releaser = crate::entry::Releaser::new();
        while let Some((list, pos)) = stack.last_mut() {
            if *pos == list.len() {
                stack.pop();
                w.write_all(b"]")?;
                if let Some((l, p)) = stack.last() {
                    // Close the node whose children were just written.
                    let node = l[*p - 1];
                    if let Some(lbl) = self.entries[node as usize]
                        .id()
                        .and_then(|id| self.labels.get(id))
                    {
                        w.write_all(b",\"label\":")?;
                        w.write_all(lbl.label.as_bytes())?;
                        if let Some(ts) = &lbl.timestamp {
                            w.write_all(b",\"labelTimestamp\":")?;
                            w.write_all(ts.as_bytes())?;
                        }
                    }
                    w.write_all(b"}")?;
                }
                continue;
            }
            let node = list[*pos];
            if *pos > 0 {
                w.write_all(b",")?;
            }
            *pos += 1;
            w.write_all(b"{\"entry\":")?;
            let e = &self.entries[node as usize];
            w.write_all(e.raw().bytes())?;
            releaser.passed(e);
            w.write_all(b",\"children\":[")?;
            stack.push((&view.children[node as usize], 0));
        }
        Ok(())
    }
}

/// V8's `Array.prototype.sort` (TimSort's run detection and binary insertion) with the
/// reference's comparator `a - b`, where a NaN difference counts as equal. Only used when a
/// timestamp is invalid: then the comparator is inconsistent and the order is whatever V8's
/// algorithm makes of it, which this reproduces exactly for lists under 64 entries.
fn v8_sort(list: &mut [u32], keys: &[f64]) {
    let n = list.len();
    let mut work: Vec<(u32, f64)> = list.iter().copied().zip(keys.iter().copied()).collect();
    let cmp = |a: f64, b: f64| -> f64 {
        let d = a - b;
        if d.is_nan() {
            0.0
        } else {
            d
        }
    };
    let mut min_run = n;
    let mut r = 0;
    while min_run >= 64 {
        r |= min_run & 1;
        min_run >>= 1;
    }
    min_run += r;
    let mut low = 0;
    let mut run_bounds = vec![0];
    while low < n {
        let high = n;
        // Count the run at `low`, reversing a strictly descending one.
        let mut run = 1;
        if low + 1 < high {
            run = 2;
            let descending = cmp(work[low + 1].1, work[low].1) < 0.0;
            let mut prev = work[low + 1].1;
            for item in &work[low + 2..high] {
                let order = cmp(item.1, prev);
                if (descending && order >= 0.0) || (!descending && order < 0.0) {
                    break;
                }
                prev = item.1;
                run += 1;
            }
            if descending {
                work[low..low + run].reverse();
            }
        }
        if run < min_run {
            let forced = min_run.min(n - low);
            let mut start = if run == 0 { low + 1 } else { low + run };
            while start < low + forced {
                let pivot = work[start];
                let (mut left, mut right) = (low, start);
                while left < right {
                    let mid = left + ((right - left) >> 1);
                    if cmp(pivot.1, work[mid].1) < 0.0 {
                        right = mid;
                    } else {
                        left = mid + 1;
                    }
                }
                work.copy_within(left..start, left + 1);
                work[left] = pivot;
                start += 1;
            }
            run = forced;
        }
        low += run;
        run_bounds.push(low);
    }
    // Adjacent runs are merged stably (as V8's merges do for a consistent comparator).
    let mut bounds = run_bounds;
    while bounds.len() > 2 {
        let mut next = vec![0];
        let mut i = 0;
        while i + 2 < bounds.len() {
            let (a, m, b) = (bounds[i], bounds[i + 1], bounds[i + 2]);
            let merged = {
                let (mut x, mut y) = (a, m);
                let mut out = Vec::with_capacity(b - a);
                while x < m && y < b {
                    if cmp(work[y].1, work[x].1) < 0.0 {
                        out.push(work[y]);
                        y += 1;
                    } else {
                        out.push(work[x]);
                        x += 1;
                    }
                }
                out.extend_from_slice(&work[x..m]);
                out.extend_from_slice(&work[y..b]);
                out
            };
            work[a..b].copy_from_slice(&merged);
            next.push(b);
            i += 2;
        }
        if i + 1 < bounds.len() {
            next.push(bounds[bounds.len() - 1]);
        }
        bounds = next;
    }
    for (slot, (id, _)) in list.iter_mut().zip(work) {
        *slot = id;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index answers as a map from id to the latest entry of that id does: for a load
    /// (reserved once) and for entries committed one by one (the table grows and rehashes
    /// its slots from their entries' ids), with ids repeated.
    #[test]
    fn the_index_finds_the_latest_entry_of_each_id() {
        const H: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/w"}"#;
        let mut rng = sessiontree_testkit::Rng(5);
        let lines: Vec<String> = (0..3000)
            .map(|n| {
                let id = format!("e{}", rng.pick(1200));
                format!(r#"{{"type":"custom","id":"{id}","parentId":null,"n":{n}}}"#)
            })
            .collect();
        let check = |t: &SessionTree, upto: usize| {
            let mut latest: HashMap<&str, usize> = HashMap::default();
            for (k, e) in t.entries()[..upto].iter().enumerate() {
                latest.insert(e.id().expect("an id"), k);
            }
            assert_eq!(t.entry_count(), latest.len(), "after {upto}");
            for k in 0..1300 {
                let id = format!("e{k}");
                let want = latest.get(id.as_str()).map(|&i| &t.entries()[i]);
                let got = t.get_entry(&id);
                assert!(
                    got.map(|g| g as *const Entry) == want.map(|w| w as *const Entry),
                    "{id} after {upto}"
                );
                assert_eq!(t.contains(&id), want.is_some());
            }
        };
        let file = std::iter::once(H.to_string())
            .chain(lines.iter().cloned())
            .collect::<Vec<_>>()
            .join("\n")
            + "\n";
        let parsed = crate::parse::parse(crate::parse::backing(file.into_bytes())).expect("parses");
        let loaded = SessionTree::from_parsed(parsed);
        check(&loaded, lines.len());
        let mut t = SessionTree::new(Header::parse(H.to_string()).expect("a header"));
        for (k, line) in lines.iter().enumerate() {
            t.commit(Entry::parse(line.clone()).expect("an entry"));
            if k % 97 == 0 || k + 1 == lines.len() {
                check(&t, k + 1);
            }
        }
    }
}
