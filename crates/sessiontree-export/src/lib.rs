//! Sessions for people: one self-contained HTML page (every branch, navigable), Markdown of
//! a branch, and a branch as a standalone session file.
//!
//! All three share the same filters ([`ExportOptions`]): leave out thinking, tool output or
//! images, and redact text by regular expression.

// The library's modules, visible to this crate's modules as `crate::X`.
use sessiontree::{date, dirs, entry, json, session, tree, Error, Result};

mod html;
mod jsonl;
mod markdown;

pub use html::html;
pub use jsonl::jsonl;
pub use markdown::markdown;

use crate::entry::{Entry, EntryType};
use crate::tree::SessionTree;
use serde_json::Value;
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
}

/// Text put in place of what the options leave out.
pub const OMITTED_OUTPUT: &str = "[output omitted]";
pub const OMITTED_IMAGE: &str = "[image omitted]";
pub const REDACTED: &str = "[REDACTED]";

impl ExportOptions {
    fn filters(&self) -> bool {
        self.no_thinking || self.no_tool_output || self.no_images || !self.redact.is_empty()
    }

    /// Applies the redactions to one text.
    pub fn redact_str<'a>(&self, s: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(s);
        for r in &self.redact {
            if r.is_match(&out) {
                out = Cow::Owned(r.replace_all(&out, REDACTED).into_owned());
            }
        }
        out
    }

    /// The entry line with the filters applied (the stored line when nothing changes).
    pub fn entry_text<'a>(&self, e: &'a Entry) -> Cow<'a, str> {
        if !self.filters() {
            return Cow::Borrowed(e.text().trim_end_matches(['\r', '\n', ' ', '\t']));
        }
        match serde_json::from_str::<Value>(e.text()) {
            Ok(mut v) => {
                if self.filter_entry(e, &mut v) {
                    let s = serde_json::to_string(&v).expect("a value serializes");
                    Cow::Owned(crate::json::canonicalize(s.as_bytes()).unwrap_or(s))
                } else {
                    Cow::Borrowed(e.text().trim_end_matches(['\r', '\n', ' ', '\t']))
                }
            }
            // Deeper than serde_json goes: the filters cannot be applied, so nothing of it
            // is shown; only its place in the tree stays.
            Err(_) => Cow::Owned(placeholder(e)),
        }
    }

    /// The entry as a value, filters applied (`None` if it does not parse as one).
    pub fn entry_value(&self, e: &Entry) -> Option<Value> {
        let mut v: Value = serde_json::from_str(e.text()).ok()?;
        self.filter_entry(e, &mut v);
        Some(v)
    }

    /// Applies the filters to an entry value; true when something changed.
    fn filter_entry(&self, e: &Entry, v: &mut Value) -> bool {
        let mut changed = false;
        if e.entry_type == EntryType::Message {
            if let Some(m) = v.get_mut("message") {
                let role = m
                    .get("role")
                    .and_then(|r| r.as_str())
                    .unwrap_or("")
                    .to_string();
                if let Some(c) = m.get_mut("content") {
                    changed |= self.filter_content(c, &role);
                }
                if self.no_tool_output {
                    if role == "toolResult" {
                        m["content"] =
                            serde_json::json!([{"type": "text", "text": OMITTED_OUTPUT}]);
                        if let Some(o) = m.as_object_mut() {
                            o.shift_remove("details");
                        }
                        changed = true;
                    }
                    if role == "bashExecution" {
                        m["output"] = Value::String(OMITTED_OUTPUT.into());
                        changed = true;
                    }
                }
            }
        }
        if e.entry_type == EntryType::CustomMessage {
            if let Some(c) = v.get_mut("content") {
                changed |= self.filter_content(c, "custom");
            }
        }
        if !self.redact.is_empty() {
            changed |= self.redact_value(v, None);
        }
        changed
    }

    fn filter_content(&self, c: &mut Value, role: &str) -> bool {
        let Some(blocks) = c.as_array_mut() else {
            return false;
        };
        let mut changed = false;
        if self.no_thinking && role == "assistant" {
            let before = blocks.len();
            blocks.retain(|b| {
                !matches!(
                    b.get("type").and_then(|t| t.as_str()),
                    Some("thinking") | Some("redactedThinking")
                )
            });
            changed |= blocks.len() != before;
        }
        if self.no_images {
            for b in blocks.iter_mut() {
                if b.get("type").and_then(|t| t.as_str()) == Some("image") {
                    *b = serde_json::json!({"type": "text", "text": OMITTED_IMAGE});
                    changed = true;
                }
            }
        }
        changed
    }

    /// Redacts every string value except ids, types and image data.
    fn redact_value(&self, v: &mut Value, key: Option<&str>) -> bool {
        match v {
            Value::String(s) => {
                if matches!(
                    key,
                    Some(
                        "type"
                            | "id"
                            | "parentId"
                            | "timestamp"
                            | "targetId"
                            | "fromId"
                            | "firstKeptEntryId"
                            | "toolCallId"
                            | "role"
                            | "mimeType"
                            | "data"
                            | "stopReason"
                            | "api"
                    )
                ) {
                    return false;
                }
                match self.redact_str(s) {
                    Cow::Borrowed(_) => false,
                    Cow::Owned(n) => {
                        *s = n;
                        true
                    }
                }
            }
            Value::Array(a) => {
                let mut c = false;
                for x in a {
                    c |= self.redact_value(x, None);
                }
                c
            }
            Value::Object(o) => {
                let mut c = false;
                for (k, x) in o.iter_mut() {
                    c |= self.redact_value(x, Some(k));
                }
                c
            }
            _ => false,
        }
    }
}

/// What stands in for an entry the filters cannot look into.
fn placeholder(e: &Entry) -> String {
    let mut s = String::from("{\"type\":");
    crate::json::write_js_string(&mut s, e.entry_type.name());
    for key in ["id", "parentId", "timestamp"] {
        if let Some(v) = e.field(key) {
            s.push_str(&format!(",\"{key}\":{}", v.text()));
        }
    }
    s.push_str(",\"exportNote\":\"[entry too deeply nested to filter; left out]\"}");
    s
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
    fn too_deep_to_filter_leaves_only_a_placeholder() {
        let deep = format!(
            r#"{{"type":"message","id":"d","parentId":null,"timestamp":"t","message":{{"role":"user","content":"secret","x":{}1{}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let e = entry(&deep);
        let o = ExportOptions {
            redact: vec![regex::Regex::new("secret").unwrap()],
            ..Default::default()
        };
        let t = o.entry_text(&e);
        assert!(!t.contains("secret"), "{t}");
        assert!(t.starts_with(r#"{"type":"message","id":"d","parentId":null"#));
    }
}
