//! A session tree's rows for display: every entry once, in depth-first order, indented
//! only where the tree forks (a chain of single children stays in one column, as Pi's
//! `/tree` draws it), with the indentation bounded so that deep branches keep room for
//! their text.
//!
//! Pure layout (no text is read): `sessiontree tree`, `sessiontree browse` and
//! `sessiontree serve` draw the same rows. Building them is one iterative pass over the
//! tree; a row's prefix is made only when the row is drawn.

use sessiontree::{Entry, SessionTree, TreeView};

pub const NONE: u32 = u32::MAX;

/// One level of indentation: a branch that starts where its parent forks.
#[derive(Clone, Copy, Debug)]
pub struct Level {
    /// The enclosing level (`NONE` at the outermost).
    pub up: u32,
    /// The branch is its parent's last child (no `│` continues below it).
    pub last: bool,
    /// 1 for the outermost level.
    pub depth: u32,
}

#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// Index of the entry in the tree.
    pub node: u32,
    /// Level of the branch the row is in (`NONE`: not indented).
    pub level: u32,
    /// The row starts its branch (drawn with `├─`/`└─`).
    pub start: bool,
    /// One past the last row of this entry's subtree (rows are in depth-first order).
    pub end: u32,
    /// The row of the parent entry (`NONE` for a root).
    pub parent: u32,
}

pub struct Layout {
    pub view: TreeView,
    pub levels: Vec<Level>,
    pub rows: Vec<Row>,
    /// Entry index -> row.
    pub row_of: Vec<u32>,
}

/// Columns a level takes (`├─ `, `│  `).
pub const STEP: usize = 3;
/// Columns of the marker standing for levels that do not fit (`12› `).
pub const MARK: usize = 4;

impl Layout {
    pub fn new(t: &SessionTree) -> Layout {
        let view = t.get_tree();
        let n = t.entries().len();
        let mut rows: Vec<Row> = Vec::with_capacity(n);
        let mut levels: Vec<Level> = Vec::new();
        let mut row_of = vec![NONE; n];
        // (node, level, start, parent row); a marker entry closes a subtree.
        enum Step {
            Enter(u32, u32, bool, u32),
            Close(u32),
        }
        let mut stack: Vec<Step> = Vec::new();
        let several_roots = view.roots.len() > 1;
        for (i, &r) in view.roots.iter().enumerate().rev() {
            let level = if several_roots {
                levels.push(Level {
                    up: NONE,
                    last: i == view.roots.len() - 1,
                    depth: 1,
                });
                levels.len() as u32 - 1
            } else {
                NONE
            };
            stack.push(Step::Enter(r, level, several_roots, NONE));
        }
        // Levels of the roots were pushed in reverse; that is fine, they are looked up by index.
        while let Some(step) = stack.pop() {
            match step {
                Step::Close(row) => rows[row as usize].end = rows.len() as u32,
                Step::Enter(node, level, start, parent) => {
                    let me = rows.len() as u32;
                    rows.push(Row {
                        node,
                        level,
                        start,
                        end: me + 1,
                        parent,
                    });
                    row_of[node as usize] = me;
                    stack.push(Step::Close(me));
                    let kids = &view.children[node as usize];
                    if kids.len() == 1 {
                        stack.push(Step::Enter(kids[0], level, false, me));
                    } else {
                        let depth = if level == NONE {
                            1
                        } else {
                            levels[level as usize].depth + 1
                        };
                        for (i, &k) in kids.iter().enumerate().rev() {
                            levels.push(Level {
                                up: level,
                                last: i == kids.len() - 1,
                                depth,
                            });
                            stack.push(Step::Enter(k, levels.len() as u32 - 1, true, me));
                        }
                    }
                }
            }
        }
        Layout {
            view,
            levels,
            rows,
            row_of,
        }
    }

    pub fn depth(&self, row: &Row) -> usize {
        if row.level == NONE {
            0
        } else {
            self.levels[row.level as usize].depth as usize
        }
    }

    /// The first row of the branch segment holding `row` (itself when it starts one).
    pub fn segment_start(&self, mut r: u32) -> u32 {
        loop {
            let row = &self.rows[r as usize];
            if row.start || row.parent == NONE {
                return r;
            }
            r = row.parent;
        }
    }

    /// The indentation of a row, at most `max_cols` columns wide. When the row is nested
    /// deeper than fits, its outer levels are replaced by a marker saying how many are
    /// hidden (`12› `), and the innermost levels (the ones that tell neighbouring rows
    /// apart) are drawn.
    pub fn prefix(&self, row: &Row, max_cols: usize) -> String {
        let depth = self.depth(row);
        if depth == 0 {
            return String::new();
        }
        let fits = max_cols / STEP;
        let (shown, hidden) = if depth <= fits {
            (depth, 0)
        } else {
            let shown = (max_cols.saturating_sub(MARK) / STEP).max(1);
            (shown, depth - shown)
        };
        // Innermost first, then reversed.
        let mut cells: Vec<&str> = Vec::with_capacity(shown);
        let mut l = row.level;
        let mut first = true;
        while l != NONE && cells.len() < shown {
            let lv = &self.levels[l as usize];
            cells.push(match (first && row.start, lv.last) {
                (true, true) => "└─ ",
                (true, false) => "├─ ",
                (false, true) => "   ",
                (false, false) => "│  ",
            });
            first = false;
            l = lv.up;
        }
        let mut s = String::with_capacity(shown * 8 + MARK);
        if hidden > 0 {
            s.push_str(&format!("{:>3}›", hidden.min(999)));
        }
        for c in cells.iter().rev() {
            s.push_str(c);
        }
        s
    }
}

/// The index of an entry borrowed from `t` (entries are one slice).
pub fn index_of(t: &SessionTree, e: &Entry) -> Option<u32> {
    let base = t.entries().as_ptr() as usize;
    let p = e as *const Entry as usize;
    let size = std::mem::size_of::<Entry>();
    let off = p.checked_sub(base)?;
    (off % size == 0 && off / size < t.entries().len()).then_some((off / size) as u32)
}

/// Which entries are on the path from the root to `leaf` (default: the session's leaf).
pub fn on_path(t: &SessionTree, leaf: Option<&str>) -> Vec<bool> {
    let mut v = vec![false; t.entries().len()];
    if leaf.is_some() || t.leaf_id().is_some() {
        for e in t.get_branch(leaf) {
            if let Some(i) = index_of(t, e) {
                v[i as usize] = true;
            }
        }
    }
    v
}
