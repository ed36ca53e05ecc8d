//! The browser's state and its reducer: a key (or a result from the edges) changes the
//! state and may ask for one effect (I/O), which `browse::run` performs. Nothing here
//! reads or writes files or the terminal.

use crate::rows::{Layout, NONE};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use sessiontree::list::SessionInfo;
use sessiontree::{EntryType, Loaded};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

/// Search hits of one query, by session path: the first hit's snippet.
pub type Hits = HashMap<String, String>;

/// What the local archive state (`sessiontree push`) says about a session file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Archived {
    /// The file's size when it was last pushed (or found unchanged by a push).
    pub pushed_size: u64,
    /// Its size now.
    pub size_now: u64,
    /// The file is no longer what was pushed (grown, or rewritten: another size, time
    /// or inode than the push recorded).
    pub changed: bool,
}

pub struct App {
    pub list: ListState,
    pub tree: Option<TreeState>,
    /// Esc in the tree goes back to the list (false when started on one file).
    pub has_list: bool,
    pub modal: Option<Modal>,
    /// One line for the user: what an action did, or why it failed.
    pub status: Option<String>,
    /// Rows the list or tree shows at once (set from the terminal size).
    pub page: usize,
    pub quit: bool,
}

pub struct ListState {
    pub sessions: Vec<SessionInfo>,
    /// The current directory (resolved), for Tab.
    pub cwd: Option<PathBuf>,
    pub only_cwd: bool,
    pub query: String,
    /// Results of `hits_for` from the full-text index.
    pub hits: Option<Hits>,
    pub hits_for: String,
    /// `hits` are what the search found so far: more sessions may come.
    pub partial: bool,
    /// The full-text index is ready; until then typing matches names, first messages and
    /// folders.
    pub text_ready: bool,
    /// What the list shows: indices into `sessions`.
    pub shown: Vec<usize>,
    pub sel: usize,
    pub top: usize,
    /// Where the sessions come from, for the title.
    pub source: String,
    /// Sessions pushed to an archive, by file (from the local archive state).
    pub archived: HashMap<PathBuf, Archived>,
}

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
    fn next(self) -> Filter {
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
    /// A search still looking for its hit (a scan goes on across frames: see [`App::tick`]).
    pub scan: Option<Scan>,
    /// Show the context projection from the selected entry.
    pub context: bool,
    /// Messages scrolled back from the end of the context.
    pub context_scroll: usize,
}

/// Text bytes a keystroke's search looks at before it hands the rest of its scan to
/// [`App::tick`] (so that a key is drawn at once even on a 250 MB session).
pub const KEY_SEARCH_BYTES: usize = 2 << 20;
/// Text bytes one [`App::tick`] looks at.
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

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Label,
    Rename,
    Fork,
    CloseInterrupted,
    ExportHtml,
    ExportMd,
    Resume,
}

impl Action {
    pub const MENU: [(char, Action, &'static str); 7] = [
        ('l', Action::Label, "label the entry"),
        ('r', Action::Rename, "rename the session"),
        ('f', Action::Fork, "fork at the entry into a new file"),
        (
            'c',
            Action::CloseInterrupted,
            "close interrupted tool calls",
        ),
        ('h', Action::ExportHtml, "export as HTML"),
        ('m', Action::ExportMd, "export as Markdown"),
        ('p', Action::Resume, "resume in pi"),
    ];
}

pub enum Modal {
    /// The action menu (tree view).
    Menu,
    /// An action waiting for text (label, name, output file); Enter confirms.
    Input {
        action: Action,
        prompt: String,
        text: String,
    },
    /// An action waiting for y/n.
    Confirm { action: Action, question: String },
    /// The key help.
    Help,
}

/// What the edges should do after a key.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    None,
    Quit,
    /// Ask the full-text index for this query.
    Search(String),
    /// Load this session and show its tree.
    Open(PathBuf),
    /// Perform a confirmed action.
    Run(Job),
}

/// A confirmed action with everything it needs.
#[derive(Clone, Debug, PartialEq)]
pub enum Job {
    Label {
        file: PathBuf,
        id: String,
        label: Option<String>,
    },
    Rename {
        file: PathBuf,
        name: String,
    },
    Fork {
        file: PathBuf,
        id: String,
    },
    CloseInterrupted {
        file: PathBuf,
    },
    Export {
        file: PathBuf,
        leaf: String,
        markdown: bool,
        out: PathBuf,
    },
    Resume {
        file: PathBuf,
    },
}

/// The status line after a search step.
fn searched(f: Found, query: &str) -> Option<String> {
    match f {
        Found::Hit | Found::Pending => None,
        Found::None => Some(format!("no match for {query:?}")),
    }
}

fn ctrl(k: &KeyEvent) -> bool {
    k.modifiers.contains(KeyModifiers::CONTROL)
}
fn alt(k: &KeyEvent) -> bool {
    k.modifiers.contains(KeyModifiers::ALT)
}
/// A character typed as text (no Ctrl/Alt).
fn typed(k: &KeyEvent) -> Option<char> {
    match k.code {
        KeyCode::Char(c) if !ctrl(k) && !alt(k) => Some(c),
        _ => None,
    }
}

impl ListState {
    pub fn new(
        sessions: Vec<SessionInfo>,
        cwd: Option<PathBuf>,
        source: String,
        text_ready: bool,
    ) -> ListState {
        let mut l = ListState {
            sessions,
            cwd,
            only_cwd: false,
            query: String::new(),
            hits: None,
            hits_for: String::new(),
            partial: false,
            text_ready,
            shown: Vec::new(),
            sel: 0,
            top: 0,
            source,
            archived: HashMap::new(),
        };
        l.refilter();
        l
    }

    /// The archive marks of the listed files (see [`Archived`]).
    pub fn with_archived(mut self, archived: HashMap<PathBuf, Archived>) -> ListState {
        self.archived = archived;
        self
    }

    pub fn selected(&self) -> Option<&SessionInfo> {
        self.shown.get(self.sel).map(|&i| &self.sessions[i])
    }

    /// The snippet of the selected session's first hit, when a search found it.
    pub fn snippet(&self) -> Option<&str> {
        let s = self.selected()?;
        self.hits
            .as_ref()
            .filter(|_| self.hits_for == self.query)?
            .get(&*s.path.to_string_lossy())
            .map(|s| s.as_str())
    }

    /// Waiting for the index's answer to the current query.
    pub fn searching(&self) -> bool {
        self.text_ready && !self.query.is_empty() && self.hits_for != self.query
    }

    /// Recomputes `shown` from the scope, the query and the hits.
    pub fn refilter(&mut self) {
        let keep_path = self.selected().map(|s| s.path.clone());
        let q = self.query.trim().to_lowercase();
        let words: Vec<&str> = q.split_whitespace().collect();
        let hits = if self.text_ready && !q.is_empty() && self.hits_for == self.query {
            self.hits.as_ref()
        } else {
            None
        };
        // While the index answers a new query, keep what is shown (filtered by scope).
        if self.searching() {
            let cwd = self.cwd.clone();
            let only = self.only_cwd;
            let sessions = &self.sessions;
            self.shown.retain(|&i| {
                !only
                    || cwd
                        .as_ref()
                        .is_some_and(|c| sessiontree::list::cwd_matches(&sessions[i].cwd, c))
            });
        } else {
            self.shown = (0..self.sessions.len())
                .filter(|&i| {
                    let s = &self.sessions[i];
                    if self.only_cwd
                        && !self
                            .cwd
                            .as_ref()
                            .is_some_and(|c| sessiontree::list::cwd_matches(&s.cwd, c))
                    {
                        return false;
                    }
                    if words.is_empty() {
                        return true;
                    }
                    match hits {
                        Some(h) => h.contains_key(&*s.path.to_string_lossy()),
                        None => {
                            let hay = format!(
                                "{}\n{}\n{}",
                                s.name.as_deref().unwrap_or(""),
                                s.first_message,
                                s.cwd
                            )
                            .to_lowercase();
                            words.iter().all(|w| hay.contains(w))
                        }
                    }
                })
                .collect();
        }
        self.sel = keep_path
            .and_then(|p| self.shown.iter().position(|&i| self.sessions[i].path == p))
            .unwrap_or(0);
        self.top = self.top.min(self.sel);
    }

    fn scroll(&mut self, page: usize) {
        let page = page.max(1);
        if self.sel < self.top {
            self.top = self.sel;
        } else if self.sel >= self.top + page {
            self.top = self.sel + 1 - page;
        }
    }
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

    fn scroll(&mut self, page: usize) {
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
    fn sibling(&mut self, forward: bool) -> bool {
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
    fn fold_or_up(&mut self) {
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
    fn unfold_or_next(&mut self) {
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

impl App {
    pub fn with_list(list: ListState) -> App {
        App {
            list,
            tree: None,
            has_list: true,
            modal: None,
            status: None,
            page: 20,
            quit: false,
        }
    }

    pub fn with_tree(tree: TreeState) -> App {
        let mut a = App::with_list(ListState::new(Vec::new(), None, String::new(), false));
        a.tree = Some(tree);
        a.has_list = false;
        a.set_page(a.page);
        a
    }

    /// The rows the list or tree shows (from the terminal height).
    pub fn set_page(&mut self, page: usize) {
        self.page = page.max(1);
        self.list.scroll(self.page);
        if let Some(t) = &mut self.tree {
            t.scroll(self.page);
        }
    }

    /// Results of the full-text search for `query`.
    pub fn hits(&mut self, query: String, hits: Hits) {
        self.set_hits(query, hits, false);
    }

    /// What the full-text search for `query` found so far (the newest sessions' files are
    /// searched first, so the top of the list fills in first).
    pub fn partial_hits(&mut self, query: String, hits: Hits) {
        self.set_hits(query, hits, true);
    }

    fn set_hits(&mut self, query: String, hits: Hits, partial: bool) {
        self.list.hits = Some(hits);
        self.list.hits_for = query;
        self.list.partial = partial;
        self.list.refilter();
        self.list.scroll(self.page);
    }

    /// The full-text index is ready; returns the search to run for what was typed.
    pub fn text_ready(&mut self) -> Effect {
        self.list.text_ready = true;
        if self.list.query.trim().is_empty() {
            Effect::None
        } else {
            self.list.refilter();
            Effect::Search(self.list.query.clone())
        }
    }

    /// A search inside the session is still scanning (call [`App::tick`]).
    pub fn busy(&self) -> bool {
        self.tree.as_ref().is_some_and(|t| t.scan.is_some())
    }

    /// Continues a search still scanning, for `budget` bytes of text.
    pub fn tick(&mut self, budget: usize) {
        let page = self.page;
        if let Some(t) = self.tree.as_mut() {
            if t.scan.is_some() {
                let before = t.sel_row();
                let f = t.advance(budget);
                self.status = searched(f, &t.query);
                if t.sel_row() != before {
                    t.context_scroll = 0;
                }
                t.scroll(page);
            }
        }
    }

    pub fn open(&mut self, tree: TreeState) {
        self.tree = Some(tree);
        self.status = None;
        let page = self.page;
        self.set_page(page);
    }

    pub fn key(&mut self, k: KeyEvent) -> Effect {
        if ctrl(&k) && k.code == KeyCode::Char('c') {
            self.quit = true;
            return Effect::Quit;
        }
        if self.modal.is_some() {
            return self.modal_key(k);
        }
        self.status = None;
        let e = if self.tree.is_some() {
            self.tree_key(k)
        } else {
            self.list_key(k)
        };
        if e == Effect::Quit {
            self.quit = true;
        }
        e
    }

    fn list_key(&mut self, k: KeyEvent) -> Effect {
        let page = self.page;
        let l = &mut self.list;
        let n = l.shown.len();
        match k.code {
            KeyCode::Esc if !l.query.is_empty() => {
                l.query.clear();
                l.refilter();
            }
            KeyCode::Esc => return Effect::Quit,
            KeyCode::Up => l.sel = l.sel.saturating_sub(1),
            KeyCode::Down => l.sel = (l.sel + 1).min(n.saturating_sub(1)),
            KeyCode::PageUp => l.sel = l.sel.saturating_sub(page),
            KeyCode::PageDown => l.sel = (l.sel + page).min(n.saturating_sub(1)),
            KeyCode::Home => l.sel = 0,
            KeyCode::End => l.sel = n.saturating_sub(1),
            KeyCode::Tab | KeyCode::BackTab => {
                if l.cwd.is_some() {
                    l.only_cwd = !l.only_cwd;
                    l.refilter();
                }
            }
            KeyCode::Enter => {
                if let Some(s) = l.selected() {
                    return Effect::Open(s.path.clone());
                }
            }
            KeyCode::Char('r') if ctrl(&k) => {
                if let Some(s) = l.selected() {
                    self.modal = Some(Modal::Confirm {
                        action: Action::Resume,
                        question: format!("Resume {} in pi?", s.path.display()),
                    });
                }
                return Effect::None;
            }
            KeyCode::Char('u') if ctrl(&k) => {
                l.query.clear();
                l.refilter();
            }
            KeyCode::Backspace => {
                l.query.pop();
                return self.query_changed();
            }
            KeyCode::F(1) => self.modal = Some(Modal::Help),
            _ => {
                if let Some(c) = typed(&k) {
                    if c == '?' && l.query.is_empty() {
                        self.modal = Some(Modal::Help);
                        return Effect::None;
                    }
                    l.query.push(c);
                    return self.query_changed();
                }
            }
        }
        self.list.scroll(page);
        Effect::None
    }

    fn query_changed(&mut self) -> Effect {
        let l = &mut self.list;
        l.refilter();
        l.scroll(self.page);
        if l.text_ready && !l.query.trim().is_empty() && l.hits_for != l.query {
            Effect::Search(l.query.clone())
        } else {
            Effect::None
        }
    }

    fn tree_key(&mut self, k: KeyEvent) -> Effect {
        let page = self.page;
        let has_list = self.has_list;
        let Some(t) = self.tree.as_mut() else {
            return Effect::None;
        };
        let n = t.visible.len();
        let before = t.sel_row();
        // Any key ends a scan still running; a search key starts its own.
        t.scan = None;
        let c = ctrl(&k);
        let a = alt(&k);
        match k.code {
            KeyCode::Esc if !t.query.is_empty() => {
                t.query.clear();
                t.scan = None;
            }
            KeyCode::Esc if t.context => t.context = false,
            KeyCode::Esc => {
                if has_list {
                    self.tree = None;
                    self.list.scroll(page);
                    return Effect::None;
                }
                return Effect::Quit;
            }
            KeyCode::Up if a => {
                if !t.sibling(false) {
                    self.status = Some("no earlier sibling branch".into());
                }
            }
            KeyCode::Down if a => {
                if !t.sibling(true) {
                    self.status = Some("no later sibling branch".into());
                }
            }
            KeyCode::Up => t.sel = t.sel.saturating_sub(1),
            KeyCode::Down => t.sel = (t.sel + 1).min(n.saturating_sub(1)),
            KeyCode::Left if c || a => t.fold_or_up(),
            KeyCode::Right if c || a => t.unfold_or_next(),
            KeyCode::PageUp if k.modifiers.contains(KeyModifiers::SHIFT) => {
                t.context_scroll += page / 2
            }
            KeyCode::PageDown if k.modifiers.contains(KeyModifiers::SHIFT) => {
                t.context_scroll = t.context_scroll.saturating_sub(page / 2)
            }
            KeyCode::Left | KeyCode::PageUp => t.sel = t.sel.saturating_sub(page),
            KeyCode::Right | KeyCode::PageDown => t.sel = (t.sel + page).min(n.saturating_sub(1)),
            KeyCode::Home => t.sel = 0,
            KeyCode::End => t.sel = n.saturating_sub(1),
            KeyCode::Enter => {
                t.context = !t.context;
                t.context_scroll = 0;
            }
            KeyCode::Char('g') if c => t.goto_leaf(),
            KeyCode::Char('u') if c => {
                t.filter = if t.filter == Filter::UserOnly {
                    Filter::Default
                } else {
                    Filter::UserOnly
                };
                t.rebuild(None);
            }
            KeyCode::Char('o') if c => {
                t.filter = t.filter.next();
                t.rebuild(None);
            }
            KeyCode::Char('n') if c => {
                let f = t.next_hit(true, false, KEY_SEARCH_BYTES);
                self.status = searched(f, &t.query);
            }
            KeyCode::Char('p') if c => {
                let f = t.next_hit(false, false, KEY_SEARCH_BYTES);
                self.status = searched(f, &t.query);
            }
            KeyCode::Char('a') if c => self.modal = Some(Modal::Menu),
            KeyCode::Backspace => {
                t.query.pop();
                t.scan = None;
            }
            KeyCode::F(1) => self.modal = Some(Modal::Help),
            _ => {
                if let Some(ch) = typed(&k) {
                    if ch == '?' && t.query.is_empty() {
                        self.modal = Some(Modal::Help);
                        return Effect::None;
                    }
                    t.query.push(ch);
                    let f = t.next_hit(true, true, KEY_SEARCH_BYTES);
                    self.status = searched(f, &t.query);
                }
            }
        }
        if let Some(t) = self.tree.as_mut() {
            if t.sel_row() != before {
                // Another entry: its context is shown from the end.
                t.context_scroll = 0;
            }
            t.scroll(page);
        }
        Effect::None
    }

    fn modal_key(&mut self, k: KeyEvent) -> Effect {
        let Some(modal) = self.modal.take() else {
            return Effect::None;
        };
        match modal {
            Modal::Help => Effect::None,
            Modal::Menu => {
                let Some(c) = typed(&k) else {
                    return Effect::None;
                };
                match Action::MENU.iter().find(|m| m.0 == c) {
                    Some((_, action, _)) => self.begin(action.clone()),
                    None => Effect::None,
                }
            }
            Modal::Confirm { action, question } => match typed(&k) {
                Some('y') | Some('Y') => self.job(&action, String::new()),
                Some('n') | Some('N') => {
                    self.status = Some("cancelled".into());
                    Effect::None
                }
                _ if k.code == KeyCode::Esc => {
                    self.status = Some("cancelled".into());
                    Effect::None
                }
                _ => {
                    self.modal = Some(Modal::Confirm { action, question });
                    Effect::None
                }
            },
            Modal::Input {
                action,
                prompt,
                mut text,
            } => match k.code {
                KeyCode::Esc => {
                    self.status = Some("cancelled".into());
                    Effect::None
                }
                KeyCode::Enter => self.job(&action, text),
                KeyCode::Backspace => {
                    text.pop();
                    self.modal = Some(Modal::Input {
                        action,
                        prompt,
                        text,
                    });
                    Effect::None
                }
                KeyCode::Char('u') if ctrl(&k) => {
                    self.modal = Some(Modal::Input {
                        action,
                        prompt,
                        text: String::new(),
                    });
                    Effect::None
                }
                _ => {
                    if let Some(c) = typed(&k) {
                        text.push(c);
                    }
                    self.modal = Some(Modal::Input {
                        action,
                        prompt,
                        text,
                    });
                    Effect::None
                }
            },
        }
    }

    /// Opens the confirmation (or the text prompt) of an action from the menu.
    fn begin(&mut self, action: Action) -> Effect {
        let Some(t) = &self.tree else {
            return Effect::None;
        };
        let id = t.sel_id().unwrap_or("").to_string();
        let stem = t
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "session".into());
        let label_now = t
            .loaded
            .tree
            .get_label(&id)
            .map(|l| sessiontree::json::Raw::trusted(&l.label).js_string())
            .unwrap_or_default();
        self.modal = Some(match action {
            Action::Label => Modal::Input {
                action,
                prompt: format!("Label for {id} (empty clears), Enter to write:"),
                text: label_now,
            },
            Action::Rename => Modal::Input {
                action,
                prompt: "Session name, Enter to write:".into(),
                text: t.loaded.tree.name().unwrap_or_default(),
            },
            Action::ExportHtml => Modal::Input {
                action,
                prompt: format!("Export the tree (leaf {id}) as HTML to, Enter to write:"),
                text: format!("{stem}.html"),
            },
            Action::ExportMd => Modal::Input {
                action,
                prompt: format!("Export the branch to {id} as Markdown to, Enter to write:"),
                text: format!("{stem}.md"),
            },
            Action::Fork => Modal::Confirm {
                action,
                question: format!("Fork at {id} into a new session file? (y/n)"),
            },
            Action::CloseInterrupted => Modal::Confirm {
                action,
                question: "Append an error result for every dangling tool call on the current branch? (y/n)".into(),
            },
            Action::Resume => Modal::Confirm {
                action,
                question: format!("Resume {} in pi? (y/n)", t.path.display()),
            },
        });
        Effect::None
    }

    /// The job of a confirmed action.
    fn job(&mut self, action: &Action, text: String) -> Effect {
        let (file, id) = match &self.tree {
            Some(t) => (t.path.clone(), t.sel_id().unwrap_or("").to_string()),
            None => match self.list.selected() {
                Some(s) => (s.path.clone(), String::new()),
                None => return Effect::None,
            },
        };
        Effect::Run(match action {
            Action::Label => Job::Label {
                file,
                id,
                label: (!text.trim().is_empty()).then_some(text),
            },
            Action::Rename => {
                if text.trim().is_empty() {
                    self.status = Some("a name cannot be empty".into());
                    return Effect::None;
                }
                Job::Rename { file, name: text }
            }
            Action::Fork => Job::Fork { file, id },
            Action::CloseInterrupted => Job::CloseInterrupted { file },
            Action::ExportHtml | Action::ExportMd => {
                if text.trim().is_empty() {
                    self.status = Some("no output file".into());
                    return Effect::None;
                }
                Job::Export {
                    file,
                    leaf: id,
                    markdown: *action == Action::ExportMd,
                    out: PathBuf::from(text),
                }
            }
            Action::Resume => Job::Resume { file },
        })
    }
}
