//! The tree screen: one session's rows, folds and filter, the selection, and the search
//! inside the session (resumable across frames, so a key is drawn at once on any size).

use crate::rows::{Layout, NONE};
use sessiontree::{EntryType, Loaded};
use std::collections::HashSet;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filter {
    /// Everything but label changes (labels show on their targets).
    Default,
    /// Without tool results and bash runs.
    NoTools,
    UserOnly,
    Labeled,
    All,
}

impl Filter {
    pub fn name(self) -> &'static str {
        match self {
            Filter::Default => "default",
            Filter::NoTools => "no tools",
            Filter::UserOnly => "user only",
            Filter::Labeled => "labeled",
            Filter::All => "all",
        }
    }
    pub(super) fn next(self) -> Filter {
        match self {
            Filter::Default => Filter::NoTools,
            Filter::NoTools => Filter::UserOnly,
            Filter::UserOnly => Filter::Labeled,
            Filter::Labeled => Filter::All,
            Filter::All => Filter::Default,
        }
    }
}

pub struct TreeState {
    pub path: PathBuf,
    pub loaded: Loaded,
    pub layout: Layout,
    /// Entries on the path from the root to the session's leaf.
    pub on_path: Vec<bool>,
    /// Rows whose subtrees are folded.
    pub folded: HashSet<u32>,
    pub filter: Filter,
    /// Rows shown, in order (folds and the filter applied).
    pub visible: Vec<u32>,
    /// Position in `visible`.
    pub sel: usize,
    pub top: usize,
    pub query: String,
    /// Per entry, whether its text matches `marks_for` (`UNKNOWN` until looked at): a
    /// search scans from the selection and stops at the first hit; drawn rows fill in
    /// what they need.
    marks: std::cell::RefCell<Marks>,
    /// A search still looking for its hit (a scan goes on across frames: see [`App::tick`](super::App::tick)).
    pub scan: Option<Scan>,
    /// Show the context projection from the selected entry.
    pub context: bool,
    /// Messages scrolled back from the end of the context.
    pub context_scroll: usize,
}

/// Text bytes a keystroke's search looks at before it hands the rest of its scan to
/// [`App::tick`](super::App::tick) (so that a key is drawn at once even on a 250 MB session).
pub const KEY_SEARCH_BYTES: usize = 2 << 20;
/// Text bytes one [`App::tick`](super::App::tick) looks at.
pub const TICK_SEARCH_BYTES: usize = 4 << 20;

const UNKNOWN: u8 = 0;
const MISS: u8 = 1;
const HIT: u8 = 2;

/// Search results per entry for one query, and a buffer for lower-casing texts.
#[derive(Default)]
struct Marks {
    query: String,
    of: Vec<u8>,
    buf: String,
    /// The query's longest run of ASCII letters and digits, any case: an entry whose line
    /// does not hold it cannot match (see [`prefilter`]).
    pre: Option<regex::bytes::Regex>,
}

/// A check on an entry's raw line that rules most entries out without decoding them: the
/// longest run of ASCII letters and digits of the query (two or more), in any case. In a
/// line without `\u` escapes, such a run of the entry's decoded text is in the line as
/// is (JSON escapes only stand for other characters), and the texts of messages,
/// compactions and summaries are joined with separators that are not letters or digits.
fn prefilter(q: &str) -> Option<regex::bytes::Regex> {
    let piece = q
        .split(|c: char| !c.is_ascii_alphanumeric())
        .max_by_key(|p| p.len())
        .filter(|p| p.len() >= 2)?;
    regex::bytes::RegexBuilder::new(&regex::escape(piece))
        .case_insensitive(true)
        .unicode(false)
        .build()
        .ok()
}

/// A search in progress: the visible rows from `from`, in one direction, wrapping around.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scan {
    pub forward: bool,
    /// Position in `visible` where the scan started.
    pub from: usize,
    /// Rows looked at so far (the next one is `from ± done`).
    pub done: usize,
    /// Rows to look at in all.
    pub total: usize,
}

/// What a scan step ended with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    Hit,
    None,
    /// The budget ran out first: the scan goes on.
    Pending,
}

/// `text` lower-cased into `buf` contains `q` (lower case).
fn contains_folded(text: &str, q: &str, buf: &mut String) -> bool {
    buf.clear();
    for c in text.chars() {
        if c.is_ascii() {
            buf.push(c.to_ascii_lowercase());
        } else {
            buf.extend(c.to_lowercase());
        }
    }
    memchr::memmem::find(buf.as_bytes(), q.as_bytes()).is_some()
}

impl TreeState {
    pub fn new(path: PathBuf, loaded: Loaded) -> TreeState {
        let layout = Layout::new(&loaded.tree);
        let on_path = crate::rows::on_path(&loaded.tree, None);
        let mut t = TreeState {
            path,
            loaded,
            layout,
            on_path,
            folded: HashSet::new(),
            filter: Filter::Default,
            visible: Vec::new(),
            sel: 0,
            top: 0,
            query: String::new(),
            marks: std::cell::RefCell::new(Marks::default()),
            scan: None,
            context: false,
            context_scroll: 0,
        };
        t.rebuild(None);
        t.goto_leaf();
        t
    }

    /// The row selected (`NONE` when nothing is shown).
    pub fn sel_row(&self) -> u32 {
        self.visible.get(self.sel).copied().unwrap_or(NONE)
    }

    pub fn sel_id(&self) -> Option<&str> {
        let r = self.sel_row();
        (r != NONE).then(|| {
            self.loaded
                .tree
                .entry_at(self.layout.rows[r as usize].node)
                .id()
                .unwrap_or("")
        })
    }

    fn shows(&self, node: u32) -> bool {
        let t = &self.loaded.tree;
        let e = t.entry_at(node);
        match self.filter {
            Filter::All => true,
            Filter::Default => e.entry_type != EntryType::Label,
            Filter::NoTools => {
                e.entry_type != EntryType::Label
                    && !(e.is_role("toolResult") || e.is_role("bashExecution"))
            }
            Filter::UserOnly => e.is_role("user"),
            Filter::Labeled => e.id().is_some_and(|id| t.get_label(id).is_some()),
        }
    }

    /// Recomputes the visible rows; keeps `keep` (a row) selected, or the nearest row
    /// above it that is shown.
    pub fn rebuild(&mut self, keep: Option<u32>) {
        let keep = keep.or_else(|| (self.sel_row() != NONE).then(|| self.sel_row()));
        let mut v = Vec::with_capacity(self.layout.rows.len());
        let mut r = 0u32;
        let n = self.layout.rows.len() as u32;
        while r < n {
            let row = self.layout.rows[r as usize];
            if self.shows(row.node) {
                v.push(r);
            }
            r = if self.folded.contains(&r) {
                row.end
            } else {
                r + 1
            };
        }
        self.visible = v;
        self.sel = match keep {
            Some(k) => match self.visible.binary_search(&k) {
                Ok(i) => i,
                Err(i) => i.saturating_sub(1),
            },
            None => 0,
        };
        self.scroll(usize::MAX);
    }

    /// Puts `row` in view and selects it, unfolding what hides it.
    pub fn select_row(&mut self, row: u32) {
        let mut hidden = false;
        let mut p = self.layout.rows[row as usize].parent;
        while p != NONE {
            if self.folded.remove(&p) {
                hidden = true;
            }
            p = self.layout.rows[p as usize].parent;
        }
        if hidden || self.visible.binary_search(&row).is_err() {
            if !self.shows(self.layout.rows[row as usize].node) {
                self.filter = Filter::All;
            }
            self.rebuild(Some(row));
        }
        if let Ok(i) = self.visible.binary_search(&row) {
            self.sel = i;
        }
        self.center();
    }

    /// Selects the session's leaf, or its nearest ancestor the filter shows.
    pub fn goto_leaf(&mut self) {
        let Some(leaf) = self.loaded.tree.leaf_entry() else {
            return;
        };
        let Some(i) = crate::rows::index_of(&self.loaded.tree, leaf) else {
            return;
        };
        let mut r = self.layout.row_of[i as usize];
        while r != NONE && !self.shows(self.layout.rows[r as usize].node) {
            r = self.layout.rows[r as usize].parent;
        }
        if r == NONE {
            r = self.layout.row_of[i as usize];
        }
        if r != NONE {
            self.select_row(r);
        }
    }

    /// Scrolls so that the selection is in the middle of the page.
    fn center(&mut self) {
        self.top = usize::MAX; // resolved by `scroll` with the page size
    }

    pub(super) fn scroll(&mut self, page: usize) {
        if page == usize::MAX {
            return;
        }
        let page = page.max(1);
        if self.top == usize::MAX {
            self.top = self.sel.saturating_sub(page / 2);
        }
        if self.sel < self.top {
            self.top = self.sel;
        } else if self.sel >= self.top + page {
            self.top = self.sel + 1 - page;
        }
        let max_top = self.visible.len().saturating_sub(page);
        self.top = self.top.min(max_top.max(self.sel.saturating_sub(page - 1)));
    }

    /// Whether an entry (its kind, its whole text, its label; any case) contains `q`
    /// (lower case), and the bytes of text that took to find out (0 when already known).
    fn entry_matches(&self, node: u32, q: &str) -> (bool, usize) {
        let mut m = self.marks.borrow_mut();
        let m = &mut *m;
        if m.query != q || m.of.len() != self.loaded.tree.entries().len() {
            m.query = q.to_string();
            m.of.clear();
            m.of.resize(self.loaded.tree.entries().len(), UNKNOWN);
            m.pre = prefilter(q);
        }
        match m.of[node as usize] {
            HIT => return (true, 0),
            MISS => return (false, 0),
            _ => {}
        }
        let t = &self.loaded.tree;
        let e = t.entry_at(node);
        if let Some(re) = &m.pre {
            let bulk = matches!(
                e.entry_type,
                EntryType::Message
                    | EntryType::CustomMessage
                    | EntryType::Compaction
                    | EntryType::BranchSummary
            );
            let line = e.text().as_bytes();
            if bulk
                && memchr::memmem::find(line, b"\\u").is_none()
                && !re.is_match(line)
                && e.id().and_then(|id| t.get_label(id)).is_none()
            {
                m.of[node as usize] = MISS;
                // A byte checked here costs a fraction of a decoded one.
                return (false, line.len() / 4 + 1);
            }
        }
        let (kind, text) = crate::show::describe(e);
        let mut hit =
            contains_folded(&kind, q, &mut m.buf) || contains_folded(&text, q, &mut m.buf);
        if !hit {
            if let Some(l) = e.id().and_then(|id| t.get_label(id)) {
                let l = sessiontree::json::Raw::trusted(&l.label).js_string();
                hit = contains_folded(&l, q, &mut m.buf);
            }
        }
        m.of[node as usize] = if hit { HIT } else { MISS };
        (hit, text.len().max(1))
    }

    pub fn is_hit(&self, row: u32) -> bool {
        if self.query.is_empty() {
            return false;
        }
        let q = self.query.to_lowercase();
        self.entry_matches(self.layout.rows[row as usize].node, &q)
            .0
    }

    /// Starts a search for the next (or previous) visible row matching the query, from
    /// the selection (included when `here`), wrapping around, and runs it for
    /// `budget` bytes of text. A scan that needs more is left in `scan` for
    /// [`TreeState::advance`]; it replaces any scan still running (the newest query wins).
    pub fn next_hit(&mut self, forward: bool, here: bool, budget: usize) -> Found {
        self.scan = None;
        if self.query.is_empty() || self.visible.is_empty() {
            return Found::None;
        }
        let n = self.visible.len();
        // Not `here`: from the row after the selection, the selection itself last.
        self.scan = Some(Scan {
            forward,
            from: self.sel,
            done: usize::from(!here),
            total: n + 1,
        });
        self.advance(budget)
    }

    /// Continues the scan in progress for about `budget` bytes of text.
    pub fn advance(&mut self, budget: usize) -> Found {
        let Some(mut sc) = self.scan else {
            return Found::None;
        };
        let n = self.visible.len();
        if n == 0 || sc.total != n + 1 {
            // The rows changed under the scan (a filter, a fold): start it again.
            let (forward, here) = (sc.forward, sc.done == 0);
            return self.next_hit(forward, here, budget);
        }
        let q = self.query.to_lowercase();
        let mut spent = 0usize;
        while sc.done < sc.total {
            let i = if sc.forward {
                (sc.from + sc.done) % n
            } else {
                (sc.from + n * 2 - sc.done) % n
            };
            sc.done += 1;
            let (hit, cost) =
                self.entry_matches(self.layout.rows[self.visible[i] as usize].node, &q);
            if hit {
                self.scan = None;
                self.sel = i;
                self.center();
                return Found::Hit;
            }
            spent += cost;
            if spent >= budget && sc.done < sc.total {
                self.scan = Some(sc);
                return Found::Pending;
            }
        }
        self.scan = None;
        Found::None
    }

    /// The next or previous sibling branch of the selection's segment.
    pub(super) fn sibling(&mut self, forward: bool) -> bool {
        let r = self.sel_row();
        if r == NONE {
            return false;
        }
        let start = self.layout.segment_start(r);
        let row = self.layout.rows[start as usize];
        if row.parent == NONE && !row.start {
            return false;
        }
        let sibs: Vec<u32> = if row.parent == NONE {
            self.layout.view.roots.clone()
        } else {
            let pnode = self.layout.rows[row.parent as usize].node;
            self.layout.view.children[pnode as usize].clone()
        };
        let Some(pos) = sibs.iter().position(|&n| n == row.node) else {
            return false;
        };
        let target = if forward {
            sibs.get(pos + 1)
        } else {
            pos.checked_sub(1).and_then(|p| sibs.get(p))
        };
        match target {
            Some(&n) => {
                let r = self.layout.row_of[n as usize];
                self.select_row(r);
                true
            }
            None => false,
        }
    }

    /// Ctrl+←: to the start of the segment; on a start, fold it; on a folded start, to
    /// the enclosing segment's start.
    pub(super) fn fold_or_up(&mut self) {
        let r = self.sel_row();
        if r == NONE {
            return;
        }
        let start = self.layout.segment_start(r);
        let row = self.layout.rows[start as usize];
        if start != r {
            self.select_row(start);
        } else if !self.folded.contains(&r) && row.end > r + 1 {
            self.folded.insert(r);
            self.rebuild(Some(r));
        } else if row.parent != NONE {
            let up = self.layout.segment_start(row.parent);
            self.select_row(up);
        }
    }

    /// Ctrl+→: unfold a folded segment; else to the next segment's start below.
    pub(super) fn unfold_or_next(&mut self) {
        let r = self.sel_row();
        if r == NONE {
            return;
        }
        if self.folded.remove(&r) {
            self.rebuild(Some(r));
            return;
        }
        for i in self.sel + 1..self.visible.len() {
            if self.layout.rows[self.visible[i] as usize].start {
                self.sel = i;
                self.center();
                return;
            }
        }
    }
}
