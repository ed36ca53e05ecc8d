//! The browser's state and its reducer: a key (or a result from the edges) changes the
//! state and may ask for one effect (I/O), which `browse::run` performs. Nothing here
//! reads or writes files or the terminal.
//!
//! One module per screen: [`list`] (the sessions, filtered as you type), [`tree`] (one
//! session's tree, folds, filters and the search inside it) and [`actions`] (the menu,
//! its prompts and the jobs it hands to the edge). [`App`] holds them and routes keys.

pub mod actions;
pub mod list;
pub mod tree;

pub use actions::{Action, Job, Modal};
pub use list::{Archived, Hits, ListState};
pub use tree::{Filter, Found, Scan, TreeState, KEY_SEARCH_BYTES, TICK_SEARCH_BYTES};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::path::PathBuf;

/// The whole browser: the list, the session open in the tree (if any), a modal over them
/// and the status line.
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
        if let Some(t) = &self.tree {
            self.modal = Some(actions::prompt(action, t));
        }
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
        match actions::job(action, text, file, id) {
            Ok(job) => Effect::Run(job),
            Err(why) => {
                self.status = Some(why.into());
                Effect::None
            }
        }
    }
}
