//! Sessions made from sessions: forks (`forkFrom`, `/fork`, `/clone`), branched sessions,
//! and navigation within one.

use super::load::load;
use super::Session;
use crate::context::with_field;
use crate::dirs;
use crate::entry::{Entry, EntryType};
use crate::error::{io, Error, Result};
use crate::json::{canonicalize, write_js_string, Json, Raw};
use crate::store::{Creation, WriteOptions};
use crate::tree::SessionTree;
use std::path::{Path, PathBuf};

/// What a fork from an entry produced.
#[derive(Debug)]
pub struct Forked {
    /// The new session file.
    pub path: PathBuf,
    /// For a fork before a user message: the message's text, to edit and resend.
    pub text: Option<String>,
}

impl Session {
    /// Copies every entry of `source` (all branches) into a new session of `target_cwd`,
    /// whose header names the source as its parent. Created whole, exclusively.
    pub fn fork_from(
        source: &Path,
        target_cwd: &str,
        session_dir: Option<&Path>,
        options: WriteOptions,
        id: Option<&str>,
    ) -> Result<Session> {
        let source = dirs::resolve(&source.to_string_lossy());
        let loaded = load(&source)?;
        let cwd = dirs::resolve(target_cwd).to_string_lossy().into_owned();
        let dir = match session_dir {
            Some(d) => dirs::resolve(&d.to_string_lossy()),
            None => dirs::default_session_dir(&cwd),
        };
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let src = source.to_string_lossy().into_owned();
        let mut s = Session::blank(cwd, dir, true, options, id, Some(&src))?;
        for e in loaded.tree.entries() {
            let text = canonicalize(e.raw().bytes()).expect("valid");
            s.tree.commit(Entry::parse(text).expect("valid"));
        }
        s.start_writing()?;
        if !s.flushed {
            s.flush_new(None)?;
        }
        Ok(s)
    }

    /// A new session holding the path root..`leaf` without its label entries, re-chained,
    /// with the labels on that path re-created at its end. This handle moves to the new
    /// session (as the reference's does); returns its path.
    pub fn create_branched_session(&mut self, leaf: &str) -> Result<Option<PathBuf>> {
        let entries = branched_entries(&self.tree, leaf)?;
        let old_path = self.path.clone();
        let parent_session = if self.persist {
            old_path.as_ref().map(|p| p.to_string_lossy().into_owned())
        } else {
            None
        };
        let mut next = Session::blank(
            self.cwd.clone(),
            self.session_dir.clone(),
            self.persist,
            self.options,
            None,
            parent_session.as_deref(),
        )?;
        for e in entries {
            next.tree.commit(e);
        }
        // Release the old file before taking the new one.
        self.appender = None;
        self.lock = None;
        *self = next;
        if self.persist {
            let eager = self.options.creation;
            self.start_writing()?;
            if !self.flushed && (eager == Creation::Eager || self.wants_file(None)) {
                self.flush_new(None)?;
            }
        }
        Ok(self.path.clone())
    }

    /// Pi's /fork and /clone: a new session file with the path up to and including `id`
    /// (`before == false`), or up to the parent of the user message `id` (`before == true`,
    /// which also hands back the message's text). The new file is written at once.
    pub fn fork_at(source: &Path, id: &str, before: bool, options: WriteOptions) -> Result<Forked> {
        let mut opts = options;
        opts.creation = Creation::Eager;
        let mut s = Session::open(
            source,
            WriteOptions {
                lock: false,
                ..opts
            },
        )?;
        s.options = opts;
        let entry = s
            .tree
            .get_entry(id)
            .ok_or_else(|| Error::EntryNotFound(id.to_string()))?
            .clone();
        let (target, text) = if before {
            if !entry.is_role("user") {
                return Err(Error::NotAUserMessage(id.to_string()));
            }
            let text = message_text(&entry, "\n");
            (
                entry
                    .parent
                    .walk_id()
                    .filter(|p| s.tree.contains(p))
                    .map(str::to_string),
                Some(text),
            )
        } else {
            (Some(id.to_string()), None)
        };
        let path = match target {
            Some(t) => s.create_branched_session(&t)?,
            None => {
                let src = s.path.clone().map(|p| p.to_string_lossy().into_owned());
                let mut n = Session::blank(
                    s.cwd.clone(),
                    s.session_dir.clone(),
                    true,
                    opts,
                    None,
                    src.as_deref(),
                )?;
                n.start_writing()?;
                n.path.clone()
            }
        };
        Ok(Forked {
            path: path.ok_or(Error::InMemory)?,
            text,
        })
    }

    /// Pi's /tree: moves the leaf to `target` in place. A user or custom message moves the
    /// leaf to its parent and hands back its text (to edit and resend). With `summary`, a
    /// branch summary of the abandoned path is appended at the new position; with `label`,
    /// the target is labelled.
    pub fn navigate(
        &mut self,
        target: &str,
        summary: Option<&str>,
        label: Option<&str>,
    ) -> Result<Option<String>> {
        let entry = self
            .tree
            .get_entry(target)
            .ok_or_else(|| Error::EntryNotFound(target.to_string()))?
            .clone();
        let (new_leaf, text) = if entry.is_role("user")
            || entry.entry_type == EntryType::CustomMessage
            || entry.is_role("custom")
        {
            (
                entry
                    .parent
                    .walk_id()
                    .filter(|p| self.tree.contains(p))
                    .map(str::to_string),
                Some(message_text(&entry, "\n")),
            )
        } else {
            (Some(target.to_string()), None)
        };
        match summary {
            Some(s) => {
                self.branch_with_summary(new_leaf.as_deref(), s, None, None, None)?;
            }
            None => match &new_leaf {
                Some(l) => self.tree.branch(l)?,
                None => self.tree.reset_leaf(),
            },
        }
        if let Some(l) = label {
            self.append_label_change(target, Some(l))?;
        }
        Ok(text)
    }

    /// The entries of the branch being left when moving from the leaf to `target`: from
    /// the leaf back to (not including) their common ancestor, leaf first.
    pub fn abandoned_path(&self, target: &str) -> Vec<&Entry> {
        let to: std::collections::HashSet<&str> = self
            .tree
            .get_branch(Some(target))
            .iter()
            .filter_map(|e| e.id())
            .collect();
        let mut from = self.tree.get_branch(None);
        from.reverse();
        from.into_iter()
            .take_while(|e| !e.id().is_some_and(|id| to.contains(id)))
            .collect()
    }
}

/// The entries of a session branched at `leaf` (`createBranchedSession` without the file):
/// the path root..`leaf` without its label entries, each re-chained to the previous kept
/// one, a compaction's `firstKeptEntryId` naming a dropped label moved to the next kept
/// entry; then one fresh, chained label entry for every label currently set on the path,
/// keeping the label's time. Pure: nothing is written.
pub fn branched_entries(tree: &SessionTree, leaf: &str) -> Result<Vec<Entry>> {
    let path: Vec<&Entry> = tree.get_branch(Some(leaf));
    if path.is_empty() {
        return Err(Error::EntryNotFound(leaf.to_string()));
    }
    let mut kept: Vec<Entry> = Vec::new();
    let mut replacement: std::collections::HashMap<String, String> =
        std::collections::HashMap::new();
    let mut pending_labels: Vec<String> = Vec::new();
    let mut parent: Option<String> = None;
    for e in path {
        let id = e.id().unwrap_or_default().to_string();
        if e.entry_type == EntryType::Label {
            pending_labels.push(id);
            continue;
        }
        for l in pending_labels.drain(..) {
            replacement.insert(l, id.clone());
        }
        let parent_json = parent
            .as_ref()
            .map_or("null".to_string(), |p| Json::string(p).into_string());
        let mut text = with_field(e.raw(), "parentId", Some(&parent_json));
        if e.entry_type == EntryType::Compaction {
            if let Some(first) = e.str_field("firstKeptEntryId") {
                if first != id {
                    if let Some(r) = replacement.get(first.as_ref()) {
                        text = with_field(
                            Raw::new_unchecked(text.as_bytes()),
                            "firstKeptEntryId",
                            Some(&Json::string(r).into_string()),
                        );
                    }
                }
            }
        }
        kept.push(Entry::parse(text).expect("valid"));
        parent = Some(id);
    }
    let mut used: std::collections::HashSet<String> = kept
        .iter()
        .filter_map(|e| e.id().map(str::to_string))
        .collect();
    let labels: Vec<(String, String, Option<String>)> = tree
        .labels()
        .into_iter()
        .filter(|(t, _)| used.contains(*t))
        .map(|(t, l)| (t.to_string(), l.label.clone(), l.timestamp.clone()))
        .collect();
    let mut last = parent;
    for (target, label, ts) in labels {
        let id = fresh_id(&used);
        used.insert(id.clone());
        let target_json = Json::string(&target).into_string();
        let parent_json = last.as_ref().map(|p| Json::string(p).into_string());
        let mut s = String::from("{\"type\":\"label\",\"id\":");
        write_js_string(&mut s, &id);
        s.push_str(",\"parentId\":");
        s.push_str(parent_json.as_deref().unwrap_or("null"));
        if let Some(ts) = &ts {
            s.push_str(",\"timestamp\":");
            s.push_str(ts);
        }
        s.push_str(",\"targetId\":");
        s.push_str(&target_json);
        s.push_str(",\"label\":");
        s.push_str(&label);
        s.push('}');
        kept.push(Entry::parse(canonicalize(s.as_bytes()).expect("valid")).expect("valid"));
        last = Some(id);
    }
    Ok(kept)
}

/// An entry id not in `used` (as [`SessionTree::generate_id`] draws them).
fn fresh_id(used: &std::collections::HashSet<String>) -> String {
    for _ in 0..100 {
        let u = uuid::Uuid::new_v4().simple().to_string();
        let id = &u[..8];
        if !used.contains(id) {
            return id.to_string();
        }
    }
    uuid::Uuid::new_v4().hyphenated().to_string()
}

/// A message's text: its string content, or its text blocks joined by `sep`.
pub fn message_text(e: &Entry, sep: &str) -> String {
    let content = if e.entry_type == EntryType::CustomMessage {
        e.field("content")
    } else {
        e.message_field("content")
    };
    match content {
        Some(c) if c.kind() == crate::json::Kind::String => {
            c.as_str().unwrap_or_default().into_owned()
        }
        Some(c) => c
            .elements()
            .iter()
            .filter(|b| b.get("type").and_then(|t| t.as_str()).as_deref() == Some("text"))
            .filter_map(|b| b.get("text").map(|t| t.js_string()))
            .collect::<Vec<_>>()
            .join(sep),
        None => String::new(),
    }
}
