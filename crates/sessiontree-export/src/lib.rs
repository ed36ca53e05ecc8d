//! Sessions for people: one self-contained HTML page (every branch, navigable), Markdown of
//! a branch, and a branch as a standalone session file.
//!
//! All three share the same filters ([`ExportOptions`]): leave out thinking, tool output or
//! images, and redact text by regular expression. Credentials (what `sessiontree-secrets`
//! detects) are redacted by default, each replaced by `[REDACTED:<kind>]` inside the JSON
//! string it was in; [`ExportOptions::keep_secrets`] keeps them.

// The library's modules, visible to this crate's modules as `crate::X`.
use sessiontree::{date, dirs, entry, json, session, tree, Error, Result};

mod filters;
mod html;
mod jsonl;
pub mod layout;
mod markdown;

pub use html::html;
pub use jsonl::jsonl;
pub use markdown::markdown;

use crate::entry::Entry;
use crate::tree::SessionTree;
use std::borrow::Cow;

/// What to export and what to leave out.
#[derive(Clone, Debug, Default)]
pub struct ExportOptions {
    /// The branch to export (Markdown, JSONL) or highlight (HTML); default the leaf.
    pub leaf: Option<String>,
    /// Markdown: one section per leaf instead of the current branch only.
    pub all_branches: bool,
    /// Leave out thinking blocks.
    pub no_thinking: bool,
    /// Replace tool results and bash output with a short note.
    pub no_tool_output: bool,
    /// Replace images with a short note.
    pub no_images: bool,
    /// Every match in any text is replaced with `[REDACTED]`.
    pub redact: Vec<regex::Regex>,
    /// Keep credentials; by default (`false`) each is replaced by `[REDACTED:<kind>]`
    /// (ids, types, times and signatures are never touched).
    pub keep_secrets: bool,
}

/// Text put in place of what the options leave out.
pub const OMITTED_OUTPUT: &str = "[output omitted]";
pub const OMITTED_IMAGE: &str = "[image omitted]";
pub const REDACTED: &str = "[REDACTED]";

impl ExportOptions {
    fn filters(&self) -> bool {
        self.no_thinking
            || self.no_tool_output
            || self.no_images
            || !self.redact.is_empty()
            || !self.keep_secrets
    }

    /// Applies the `--redact` regular expressions to one text (inside JSON: the walk
    /// decides which strings are text).
    fn redact_regexes<'a>(&self, s: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(s);
        for r in &self.redact {
            if r.is_match(&out) {
                out = Cow::Owned(r.replace_all(&out, REDACTED).into_owned());
            }
        }
        out
    }

    /// Applies the redactions to one text: the regular expressions, then credentials
    /// unless kept.
    pub fn redact_str<'a>(&self, s: &'a str) -> Cow<'a, str> {
        let mut out = self.redact_regexes(s);
        if !self.keep_secrets {
            if let Cow::Owned(t) = sessiontree_secrets::redact_text(&out) {
                out = Cow::Owned(t);
            }
        }
        out
    }

    /// A JSON text with its credentials redacted (unless kept); `None` when none.
    fn redact_secrets(&self, text: &str) -> Option<String> {
        if self.keep_secrets {
            None
        } else {
            sessiontree_secrets::redact_json(text)
        }
    }

    /// The entry line with the filters applied, as a session file needs it (ids, types
    /// and times are never redacted): the stored line when nothing changes, else canonical.
    /// Every line the loader accepts passes (any depth, lone surrogates, `1e400`).
    pub fn entry_text<'a>(&self, e: &'a Entry) -> Cow<'a, str> {
        self.filtered(e, filters::KEEP_FOR_FILE, true)
    }

    /// [`ExportOptions::entry_text`] for display (pages, Markdown): ids and times, which
    /// are printed there, are redacted too; a filtered line is valid JSON, not canonical.
    pub fn entry_text_shown<'a>(&self, e: &'a Entry) -> Cow<'a, str> {
        self.filtered(e, filters::KEEP_FOR_DISPLAY, false)
    }

    fn filtered<'a>(&self, e: &'a Entry, keep: &[&str], canonical: bool) -> Cow<'a, str> {
        let stored = e.text().trim_matches(['\r', '\n', ' ', '\t']);
        if !self.filters() {
            return Cow::Borrowed(stored);
        }
        let structured = filters::filter_structure(self, e);
        let text = structured.as_deref().unwrap_or(stored);
        let redacted = if self.redact.is_empty() {
            None
        } else {
            filters::redact_json(self, text, keep)
        };
        let text = redacted.as_deref().unwrap_or(text);
        let redacted = self.redact_secrets(text).or(redacted);
        match redacted.or(structured) {
            None => Cow::Borrowed(stored),
            Some(t) if canonical => Cow::Owned(
                crate::json::canonicalize(t.as_bytes()).expect("the filters keep JSON valid"),
            ),
            Some(t) => Cow::Owned(t),
        }
    }

    /// A JSON value's text (the header, a field) with every string redacted but `keep`'s.
    fn redact_json_text<'a>(&self, text: &'a str, keep: &[&str]) -> Cow<'a, str> {
        let regexes = if self.redact.is_empty() {
            None
        } else {
            filters::redact_json(self, text, keep)
        };
        let secrets = self.redact_secrets(regexes.as_deref().unwrap_or(text));
        match secrets.or(regexes) {
            Some(t) => Cow::Owned(t),
            None => Cow::Borrowed(text),
        }
    }
}

/// A label's text (labels are stored as JSON values, normally strings).
fn label_text(label: &str) -> String {
    match crate::json::Raw::parse(label.as_bytes()) {
        Ok(r) => r.js_string(),
        Err(_) => label.to_string(),
    }
}

/// The id of the branch end to export: `--leaf`, else the session's leaf.
fn chosen_leaf<'a>(
    tree: &'a SessionTree,
    opts: &'a ExportOptions,
) -> crate::Result<Option<&'a str>> {
    match &opts.leaf {
        Some(id) => {
            if tree.contains(id) {
                Ok(Some(id.as_str()))
            } else {
                Err(crate::Error::EntryNotFound(id.clone()))
            }
        }
        None => Ok(tree.leaf_id()),
    }
}

/// Every leaf of the tree (entries without children), in file order.
fn leaves(tree: &SessionTree) -> Vec<&Entry> {
    let view = tree.get_tree();
    tree.entries()
        .iter()
        .enumerate()
        .filter(|(i, e)| e.id().is_some() && view.children[*i].is_empty())
        .map(|(_, e)| e)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(s: &str) -> Entry {
        Entry::parse(s.to_string()).unwrap()
    }

    #[test]
    fn filters_leave_out_thinking_output_images_and_redact_text_only() {
        let a = entry(
            r#"{"type":"message","id":"secret1","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm secret"},{"type":"text","text":"a secret"},{"type":"toolCall","id":"secret-call","name":"x","arguments":{"k":"secret"}}]}}"#,
        );
        let r = entry(
            r#"{"type":"message","id":"r","parentId":"secret1","timestamp":"t","message":{"role":"toolResult","toolCallId":"secret-call","toolName":"x","content":[{"type":"text","text":"out"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"details":{"diff":"d"}}}"#,
        );
        let none = ExportOptions::default();
        assert_eq!(none.entry_text(&a), a.text());
        let o = ExportOptions {
            no_thinking: true,
            no_tool_output: true,
            no_images: true,
            redact: vec![regex::Regex::new("secret").unwrap()],
            ..Default::default()
        };
        assert_eq!(
            o.entry_text(&a),
            r#"{"type":"message","id":"secret1","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"a [REDACTED]"},{"type":"toolCall","id":"secret-call","name":"x","arguments":{"k":"[REDACTED]"}}]}}"#
        );
        assert_eq!(
            o.entry_text(&r),
            r#"{"type":"message","id":"r","parentId":"secret1","timestamp":"t","message":{"role":"toolResult","toolCallId":"secret-call","toolName":"x","content":[{"type":"text","text":"[output omitted]"}]}}"#
        );
        let images = ExportOptions {
            no_images: true,
            ..Default::default()
        };
        assert!(images
            .entry_text(&r)
            .contains(r#"{"type":"text","text":"[image omitted]"}"#));
    }

    #[test]
    fn every_value_the_loader_accepts_passes_every_filter() {
        let line = format!(
            r#"{{"type":"message","id":"d","parentId":null,"timestamp":"t","message":{{"role":"assistant","content":[{{"type":"thinking","thinking":"t"}},{{"type":"text","text":"cut \ud83d secret"}}],"n":1e400,"x":{}1{}}}}}"#,
            "[".repeat(300),
            "]".repeat(300)
        );
        let e = entry(&line);
        for o in [
            ExportOptions {
                no_thinking: true,
                ..Default::default()
            },
            ExportOptions {
                no_tool_output: true,
                no_images: true,
                ..Default::default()
            },
            ExportOptions {
                redact: vec![regex::Regex::new("secret").unwrap()],
                ..Default::default()
            },
        ] {
            let t = o.entry_text(&e);
            assert!(!t.contains("exportNote") && !t.contains("nested"), "{t}");
            assert!(t.contains(r#""cut \ud83d "#), "{t}");
            // Canonical (JSON.stringify writes null) when something changed.
            assert!(t.contains(r#""n":null"#) || t == line, "{t}");
            assert!(t.contains(&format!("{}1{}", "[".repeat(300), "]".repeat(300))));
            assert_eq!(t.contains("secret"), o.redact.is_empty());
            assert_eq!(t.contains("thinking"), !o.no_thinking);
        }
    }
}
