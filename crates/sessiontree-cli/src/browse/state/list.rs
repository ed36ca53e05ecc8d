//! The list screen: every session (or the current folder's), filtered by what is typed:
//! names, first messages and folders at once, the full-text search's hits when they come.

use sessiontree::list::SessionInfo;
use std::collections::HashMap;
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
    /// Imported copies whose transcript its agent deleted (the copy is all that is left).
    pub source_gone: std::collections::HashSet<PathBuf>,
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
            source_gone: Default::default(),
        };
        l.refilter();
        l
    }

    /// The archive marks of the listed files (see [`Archived`]).
    pub fn with_archived(mut self, archived: HashMap<PathBuf, Archived>) -> ListState {
        self.archived = archived;
        self
    }

    /// The imported copies whose source is gone (see `batch::gone_copies`).
    pub fn with_source_gone(mut self, gone: std::collections::HashSet<PathBuf>) -> ListState {
        self.source_gone = gone;
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

    pub(super) fn scroll(&mut self, page: usize) {
        let page = page.max(1);
        if self.sel < self.top {
            self.top = self.sel;
        } else if self.sel >= self.top + page {
            self.top = self.sel + 1 - page;
        }
    }
}
