//! Human and JSON renderings of sessions.

use crate::out::{preview, Out};
use crate::safe;
use anyhow::Result;
use sessiontree::{Context, Entry, EntryType, Loaded, SessionTree};
use std::path::Path;

fn json_str(s: &str) -> String {
    let mut o = String::new();
    sessiontree::json::write_js_string(&mut o, s);
    o
}

/// A one-line description of an entry: kind, role and a preview of its text.
pub fn describe(e: &Entry) -> (String, String) {
    let kind = match e.entry_type {
        EntryType::Message => e.role().unwrap_or("message").to_string(),
        ref t => t.name().to_string(),
    };
    let text = match e.entry_type {
        EntryType::Message => match e.role() {
            Some("bashExecution") => format!(
                "$ {}",
                e.message_field("command")
                    .map(|c| c.js_string())
                    .unwrap_or_default()
            ),
            Some("toolResult") => {
                let name = e
                    .message_field("toolName")
                    .map(|c| c.js_string())
                    .unwrap_or_default();
                format!("{name}: {}", sessiontree::session::message_text(e, " "))
            }
            Some("assistant") => {
                let text = sessiontree::session::message_text(e, " ");
                let calls: Vec<String> = e
                    .message_field("content")
                    .map(|c| c.elements())
                    .unwrap_or_default()
                    .iter()
                    .filter(|b| {
                        b.get("type").and_then(|t| t.as_str()).as_deref() == Some("toolCall")
                    })
                    .map(|b| b.get("name").map(|n| n.js_string()).unwrap_or_default())
                    .collect();
                if calls.is_empty() {
                    text
                } else if text.is_empty() {
                    format!("→ {}", calls.join(", "))
                } else {
                    format!("{text} → {}", calls.join(", "))
                }
            }
            _ => sessiontree::session::message_text(e, " "),
        },
        EntryType::CustomMessage => sessiontree::session::message_text(e, " "),
        EntryType::Compaction | EntryType::BranchSummary => e
            .field("summary")
            .map(|s| s.js_string())
            .unwrap_or_default(),
        EntryType::ModelChange => format!(
            "{}/{}",
            e.field("provider")
                .map(|s| s.js_string())
                .unwrap_or_default(),
            e.field("modelId")
                .map(|s| s.js_string())
                .unwrap_or_default()
        ),
        EntryType::ThinkingLevelChange => e
            .field("thinkingLevel")
            .map(|s| s.js_string())
            .unwrap_or_default(),
        EntryType::Label => format!(
            "{} ← {}",
            e.str_field("targetId").unwrap_or_default(),
            e.field("label")
                .map(|s| s.js_string())
                .unwrap_or_else(|| "(cleared)".into())
        ),
        EntryType::SessionInfo => e.field("name").map(|s| s.js_string()).unwrap_or_default(),
        EntryType::Custom => e
            .str_field("customType")
            .map(|s| s.into_owned())
            .unwrap_or_default(),
        EntryType::ContextEdit => format!(
            "edit {}{}",
            e.str_field("targetId").unwrap_or_default(),
            if e.field("replacement").is_some_and(|r| r.is_null()) {
                " (dropped)"
            } else {
                ""
            }
        ),
        EntryType::Usage => format!(
            "{} {}",
            e.field("kind").map(|s| s.js_string()).unwrap_or_default(),
            e.field("model").map(|s| s.js_string()).unwrap_or_default()
        ),
        _ => String::new(),
    };
    // The role is the file's: shown, it is untrusted text like the rest (the text is made
    // safe where it is cut to fit).
    (safe::line(&kind).into_owned(), text)
}

/// ` [label]` for an entry that has a label, painted; empty otherwise.
fn label_badge(out: &Out, t: &SessionTree, id: &str) -> String {
    t.get_label(id)
        .map(|l| {
            out.paint(
                "1;33",
                &format!(
                    " [{}]",
                    safe::line(&sessiontree::json::Raw::trusted(&l.label).js_string())
                ),
            )
        })
        .unwrap_or_default()
}

fn role_color(kind: &str) -> &'static str {
    match kind {
        "user" => "1;36",
        "assistant" => "1;32",
        "toolResult" => "33",
        "system" => "35",
        "compaction" | "branch_summary" => "1;35",
        "bashExecution" => "34",
        _ => "2",
    }
}

/// The file's lines as Node's readline counts them: one per `\n`, plus an unterminated
/// last line.
fn line_count(file: &Path) -> u64 {
    match sessiontree::session::read_or_map(file) {
        Ok((b, _)) => {
            let b: &[u8] = (*b).as_ref();
            let n = memchr::memchr_iter(b'\n', b).count() as u64;
            n + u64::from(b.last().is_some_and(|&c| c != b'\n'))
        }
        Err(_) => 0,
    }
}

pub fn info(out: &mut Out, file: &Path, l: &Loaded, json: bool) -> Result<()> {
    let t = &l.tree;
    if json {
        let mut s = String::from("{\"path\":");
        s.push_str(&json_str(&file.display().to_string()));
        s.push_str(",\"header\":");
        s.push_str(t.header().raw().text());
        s.push_str(",\"sessionId\":");
        s.push_str(&json_str(t.session_id()));
        s.push_str(",\"leafId\":");
        s.push_str(&t.leaf_id().map_or("null".into(), json_str));
        s.push_str(",\"name\":");
        s.push_str(&t.name().map_or("null".into(), |n| json_str(&n)));
        s.push_str(&format!(
            ",\"entryCount\":{},\"lines\":{},\"bytes\":{},\"migrated\":{}",
            t.entry_count(),
            line_count(file),
            l.len,
            l.migrated
        ));
        s.push_str(",\"diagnostics\":");
        s.push_str(&serde_json::to_string(t.diagnostics())?);
        s.push('}');
        return out.line(&s);
    }
    let h = t.header();
    let label = |k: &str| format!("{:<13}", format!("{k}:"));
    out.line(&format!(
        "{}{}",
        label("session"),
        safe::line(t.session_id())
    ))?;
    out.line(&format!("{}{}", label("file"), safe::path(file)))?;
    if let Some(n) = t.name() {
        out.line(&format!("{}{}", label("name"), safe::line(&n)))?;
    }
    out.line(&format!(
        "{}{}",
        label("cwd"),
        safe::line(&h.cwd().unwrap_or_default())
    ))?;
    out.line(&format!(
        "{}{}",
        label("created"),
        safe::line(&h.timestamp().map(|t| t.js_string()).unwrap_or_default())
    ))?;
    if let Some(p) = h.parent_session() {
        out.line(&format!("{}{}", label("forked from"), safe::line(&p)))?;
    }
    let version = h
        .field("version")
        .map(|v| v.js_string())
        .unwrap_or_else(|| "1".into());
    out.line(&format!(
        "{}{}{}",
        label("version"),
        safe::line(&version),
        if l.migrated {
            " (migrated to 3 in memory)"
        } else {
            ""
        }
    ))?;
    out.line(&format!(
        "{}{} ({} lines, {} bytes)",
        label("entries"),
        t.entry_count(),
        line_count(file),
        l.len
    ))?;
    let messages = t
        .entries()
        .iter()
        .filter(|e| e.entry_type == EntryType::Message)
        .count();
    out.line(&format!("{}{}", label("messages"), messages))?;
    out.line(&format!(
        "{}{}",
        label("leaf"),
        safe::line(t.leaf_id().unwrap_or("(none)"))
    ))?;
    out.line(&format!(
        "{}{}",
        label("on branch"),
        t.get_branch(None).len()
    ))?;
    let diags = t.diagnostics();
    if diags.is_empty() {
        out.line(&format!("{}{}", label("problems"), out.paint("32", "none")))?;
    } else {
        out.line(&format!(
            "{}{}",
            label("problems"),
            out.paint("1;31", &diags.len().to_string())
        ))?;
        for d in diags {
            out.line(&format!("  {}", safe::line(&d.to_string())))?;
        }
    }
    Ok(())
}

pub fn entries(out: &mut Out, t: &SessionTree, json: bool) -> Result<()> {
    let all: Vec<&Entry> = t.entries().iter().collect();
    entry_list(out, t, &all, json)
}

pub fn entry_list(out: &mut Out, t: &SessionTree, list: &[&Entry], json: bool) -> Result<()> {
    if json {
        use std::io::Write;
        out.write_all(b"[")?;
        let mut releaser = sessiontree::Releaser::new();
        for (i, e) in list.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            out.write_all(e.raw().bytes())?;
            releaser.passed(e);
        }
        return out.line("]");
    }
    let leaf = t.leaf_id();
    let rows: Vec<(&Entry, String, String, String)> = list
        .iter()
        .map(|e| {
            let (kind, text) = describe(e);
            let id = safe::line(e.id().unwrap_or("?")).into_owned();
            (*e, id, kind, text)
        })
        .collect();
    // Columns as wide as their widest cell, so every entry type lines up.
    let idw = rows
        .iter()
        .map(|(_, id, _, _)| id.chars().count())
        .max()
        .unwrap_or(2)
        .max(2);
    let kindw = rows
        .iter()
        .map(|(_, _, k, _)| k.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    if !rows.is_empty() {
        out.line(&out.paint(
            "1",
            &format!("{:>6}  {:<idw$}  {:<kindw$}  TEXT", "LINE", "ID", "TYPE"),
        ))?;
    }
    for (e, id, kind, text) in rows {
        let raw_id = e.id().unwrap_or("?");
        let mark = if Some(raw_id) == leaf {
            out.paint("1;33", " ◀ leaf")
        } else {
            String::new()
        };
        let label = label_badge(out, t, raw_id);
        out.line(&format!(
            "{:>6}  {}  {}  {}{}{}",
            e.line,
            out.paint("2", &format!("{id:<idw$}")),
            out.paint(role_color(&kind), &format!("{kind:<kindw$}")),
            preview(&text, 90),
            label,
            mark
        ))?;
    }
    Ok(())
}

/// Writes the context `plan` gives: its JSON streamed entry by entry (without holding the
/// session's bytes), or the messages (as the model gets them with `llm`) as `context`.
pub fn context_plan(
    out: &mut Out,
    plan: sessiontree::context::Plan<'_>,
    json: bool,
    llm: bool,
) -> Result<()> {
    if json && !llm {
        plan.write_json_releasing(out)?;
        return out.line("");
    }
    let mut ctx = plan.into_context();
    if llm {
        ctx.messages = sessiontree::to_llm(&ctx.messages);
    }
    context(out, &ctx, json)
}

pub fn context(out: &mut Out, ctx: &Context<'_>, json: bool) -> Result<()> {
    if json {
        ctx.write_json(out)?;
        return out.line("");
    }
    let model = ctx
        .model
        .as_ref()
        .map(|m| {
            format!(
                "{}/{}",
                safe::line(&m.provider.map(|p| p.js_string()).unwrap_or_default()),
                safe::line(&m.model_id.map(|p| p.js_string()).unwrap_or_default())
            )
        })
        .unwrap_or_else(|| "(none)".into());
    let thinking = ctx
        .thinking_level
        .map(|t| safe::line(&t.js_string()).into_owned())
        .unwrap_or_else(|| "(unset)".into());
    out.line(&out.paint(
        "2",
        &format!(
            "model {model} · thinking {thinking} · {} message{}",
            ctx.messages.len(),
            if ctx.messages.len() == 1 { "" } else { "s" }
        ),
    ))?;
    for m in &ctx.messages {
        let (role, body) = message_body(m);
        out.line(&out.paint(role_color(&role), &format!("── {} ──", safe::line(&role))))?;
        for l in body.lines().take(12) {
            out.line(&format!("  {}", crate::out::cut(l, 160)))?;
        }
        // As many as `lines()` gives: one per newline, and a last one without.
        let count = memchr::memchr_iter(b'\n', body.as_bytes()).count()
            + usize::from(!body.is_empty() && !body.ends_with('\n'));
        if count > 12 {
            out.line(&out.paint("2", &format!("  … {} more lines", count - 12)))?;
        }
    }
    Ok(())
}

/// A context message's role and its text as shown to a person: summaries, bash runs,
/// text blocks, thinking (cut), tool calls and images as short markers.
pub fn message_body(m: &sessiontree::Message<'_>) -> (String, String) {
    let raw = m.raw();
    let role = m.role().unwrap_or_else(|| "?".into());
    let body = match role.as_str() {
        "branchSummary" | "compactionSummary" => raw
            .get("summary")
            .map(|s| s.js_string())
            .unwrap_or_default(),
        "bashExecution" => sessiontree::context::bash_execution_text(raw),
        _ => match raw.get("content") {
            Some(c) if c.kind() == sessiontree::json::Kind::String => c.js_string(),
            Some(c) => c
                .elements()
                .iter()
                .map(|b| {
                    let ty = b
                        .get("type")
                        .and_then(|t| t.as_str())
                        .map(|t| t.into_owned())
                        .unwrap_or_default();
                    match ty.as_str() {
                        "text" => b.get("text").map(|t| t.js_string()).unwrap_or_default(),
                        "thinking" => format!(
                            "(thinking) {}",
                            preview(
                                &b.get("thinking").map(|t| t.js_string()).unwrap_or_default(),
                                200
                            )
                        ),
                        "toolCall" => format!(
                            "→ {}({})",
                            b.get("name").map(|t| t.js_string()).unwrap_or_default(),
                            preview(b.get("arguments").map(|a| a.text()).unwrap_or(""), 200)
                        ),
                        "image" => "[image]".into(),
                        other => format!("[{other}]"),
                    }
                })
                .collect::<Vec<_>>()
                .join("\n"),
            None => String::new(),
        },
    };
    (role, body)
}

/// Draws the tree with box-drawing characters; the path to `focus` (default: the leaf) is
/// highlighted. Indented only where the tree forks, the indentation bounded to a quarter of `width`
/// (deeper levels collapse into a `N›` marker), and each line cut to `width` columns.
pub fn tree(out: &mut Out, t: &SessionTree, focus: Option<&str>, width: usize) -> Result<()> {
    use crate::rows::{self, Layout};
    let layout = Layout::new(t);
    let on_path = rows::on_path(t, focus);
    let leaf = t.leaf_id();
    let sid = safe::line(t.session_id());
    if let Some(n) = t.name() {
        out.line(&out.paint("1", &format!("{}  ({sid})", safe::line(&n))))?;
    } else {
        out.line(&out.paint("1", &sid))?;
    }
    let budget = rows::indent_budget(width);
    for row in &layout.rows {
        let e = t.entry_at(row.node);
        let (kind, text) = describe(e);
        let raw_id = e.id().unwrap_or("?");
        let id_shown = safe::line(raw_id);
        let id = &*id_shown;
        let prefix = layout.prefix(row, budget);
        let path_here = on_path[row.node as usize];
        let label = t
            .get_label(raw_id)
            .map(|l| {
                format!(
                    " [{}]",
                    safe::line(&sessiontree::json::Raw::trusted(&l.label).js_string())
                )
            })
            .unwrap_or_default();
        let mark = if Some(raw_id) == leaf {
            " ◀ leaf"
        } else if focus == Some(raw_id) {
            " ◀"
        } else {
            ""
        };
        // prefix, dot, id, kind, then the text in what is left (at most 90 columns).
        let used = rows::width(&prefix) + 2 + rows::width(id) + 1 + rows::width(&kind) + 1;
        let room = width
            .saturating_sub(used + rows::width(&label) + rows::width(mark))
            .clamp(12, 90);
        let body = rows::fit(&text, room);
        let dot = if path_here {
            out.paint("1;33", "●")
        } else {
            out.paint("2", "○")
        };
        let body = if path_here {
            body
        } else {
            out.paint("2", &body)
        };
        out.line(&format!(
            "{prefix}{dot} {} {} {}{}{}",
            out.paint("2", id),
            out.paint(role_color(&kind), &kind),
            body,
            if label.is_empty() {
                String::new()
            } else {
                out.paint("1;33", &label)
            },
            if mark.is_empty() {
                String::new()
            } else {
                out.paint("1;33", mark)
            }
        ))?;
    }
    Ok(())
}
