//! `read_session`: one session as the model saw it (`context`), a branch, the whole tree,
//! or one entry, in pages that fit the budget.
//!
//! A page is a run of items (context messages, branch entries, tree rows, or the one
//! entry's JSON); an item too long for what is left of a page is continued on the next.
//! The cursor says where the next page starts: `VIEW:ITEM:CHAR:ANCHOR`, ANCHOR being the
//! entry the read is about (the leaf used), so that a session that grows between two
//! pages still pages through the same context.

use crate::answer::{chars, one_line, piece, Answer};
use crate::args::{fail, Args, ToolError};
use crate::resolve::Target;
use crate::Ctx;
use serde_json::{json, Map, Value};
use sessiontree::json::{Kind, Raw};
use sessiontree::list::FileStat;
use sessiontree::{Entry, EntryType, LeafArg, Loaded, SessionTree};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

/// The last session loaded, kept while its file is unchanged: paging through a large
/// session loads it once.
pub struct Cached {
    path: PathBuf,
    stat: Option<FileStat>,
    /// For an archived copy: its owner, machine, version, length and hash.
    copy: Option<(String, String, i64, i64, Vec<u8>)>,
    loaded: Arc<Loaded>,
}

/// Where a loaded session came from, for the answer.
pub struct Source {
    loaded: Arc<Loaded>,
    /// An archived copy's owner and machine.
    archive: Option<(String, String)>,
}

/// An archived session, read into memory (nothing is written here): the copy
/// `export --archive` reads (the login's own newest, else the one other owner's).
fn load_archived(ctx: &Ctx, t: &Target) -> Result<Source, ToolError> {
    let tool = crate::tools::READ;
    let Some(remote) = &ctx.cfg.archive else {
        fail!("session {}: no archive to read it from.", t.id);
    };
    let c = remote.with(tool, |a| sessiontree_archive::query::session_copy(a, &t.id))?;
    let tag = (
        c.owner.clone(),
        c.machine_name.clone(),
        c.version_pk,
        c.length,
        c.hash.clone(),
    );
    let whence = Some((c.owner.clone(), c.machine_name.clone()));
    let mut cache = ctx.state.loaded.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(k) = cache.as_ref() {
        if k.copy.as_ref() == Some(&tag) {
            return Ok(Source {
                loaded: k.loaded.clone(),
                archive: whence,
            });
        }
    }
    *cache = None;
    let bytes = remote.with(tool, |a| sessiontree_archive::pull::fetch(a, &c))?;
    let name = PathBuf::from(format!("archive:{}/{}", c.owner, c.session_id));
    let loaded = match sessiontree::session::load_bytes(&name, bytes) {
        Ok(l) => Arc::new(l),
        Err(e) => fail!(
            "session {} in the archive ({}@{}) cannot be read as a session: {e}.",
            t.id,
            c.owner,
            c.machine_name
        ),
    };
    *cache = Some(Cached {
        path: name,
        stat: None,
        copy: Some(tag),
        loaded: loaded.clone(),
    });
    Ok(Source {
        loaded,
        archive: whence,
    })
}

fn load(ctx: &Ctx, t: &Target) -> Result<Source, ToolError> {
    if t.archived {
        return load_archived(ctx, t);
    }
    let shown = t.path.display();
    let Some(stat) = FileStat::of_path(&t.path) else {
        fail!("{shown}: no such session file.");
    };
    let mut cache = ctx.state.loaded.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(c) = cache.as_ref() {
        if c.path == t.path && c.stat == Some(stat) {
            return Ok(Source {
                loaded: c.loaded.clone(),
                archive: None,
            });
        }
    }
    // The old one goes first: two large sessions are never held at once.
    *cache = None;
    let loaded = match sessiontree::load(&t.path) {
        Ok(l) => Arc::new(l),
        Err(e) => fail!("{shown}: cannot be read as a session: {e}."),
    };
    *cache = Some(Cached {
        path: t.path.clone(),
        stat: Some(stat),
        copy: None,
        loaded: loaded.clone(),
    });
    Ok(Source {
        loaded,
        archive: None,
    })
}

/// Text for a model: control characters other than newline and tab become U+FFFD (a
/// terminal escape in tool output is not passed on).
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                '\u{FFFD}'
            } else {
                c
            }
        })
        .collect()
}

fn js(v: Option<Raw<'_>>) -> String {
    v.map(|v| v.js_string()).unwrap_or_default()
}

/// A message's content as text: strings, text blocks, thinking, tool calls with their
/// arguments, images as a marker.
fn content_text(c: Option<Raw<'_>>) -> String {
    match c {
        Some(c) if c.kind() == Kind::String => c.js_string(),
        Some(c) if c.kind() == Kind::Array => c
            .elements()
            .iter()
            .map(|b| {
                let ty = b
                    .get("type")
                    .and_then(|t| t.as_str())
                    .map(|t| t.into_owned())
                    .unwrap_or_default();
                match ty.as_str() {
                    "text" => js(b.get("text")),
                    "thinking" => format!("(thinking) {}", js(b.get("thinking"))),
                    "toolCall" => format!(
                        "→ tool call {} {}: {}",
                        js(b.get("name")),
                        js(b.get("id")),
                        b.get("arguments").map(|a| a.text()).unwrap_or("{}")
                    ),
                    "image" => "[image]".into(),
                    other => format!("[{other} block]"),
                }
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(c) => c.text().to_string(),
        None => String::new(),
    }
}

/// A message (a context message, or a message entry's `message`): its role and its text.
fn message_text(m: Raw<'_>) -> (String, String) {
    if m.kind() != Kind::Object {
        return ("?".into(), m.text().to_string());
    }
    let role = m
        .get("role")
        .and_then(|r| r.as_str())
        .map(|r| r.into_owned())
        .unwrap_or_else(|| "?".into());
    let body = match role.as_str() {
        "branchSummary" | "compactionSummary" => js(m.get("summary")),
        "bashExecution" => sessiontree::context::bash_execution_text(m),
        "toolResult" => {
            let err = m.get("isError").is_some_and(|e| e.truthy());
            format!(
                "result of {} {}{}:\n{}",
                js(m.get("toolName")),
                js(m.get("toolCallId")),
                if err { " (error)" } else { "" },
                content_text(m.get("content"))
            )
        }
        "assistant" => {
            let mut t = content_text(m.get("content"));
            if let Some(e) = m.get("errorMessage").filter(|e| e.truthy()) {
                t.push_str(&format!("\n(error: {})", e.js_string()));
            }
            t
        }
        _ => content_text(m.get("content")),
    };
    (role, body)
}

/// What an entry is (its type, or its message role) and its whole text.
fn entry_text(t: &SessionTree, e: &Entry) -> (String, String) {
    let kind = match e.entry_type {
        EntryType::Message => e.role().unwrap_or("message").to_string(),
        ref ty => ty.name().to_string(),
    };
    let body = match e.entry_type {
        EntryType::Message => e.message().map(|m| message_text(m).1).unwrap_or_default(),
        EntryType::CustomMessage => content_text(e.field("content")),
        EntryType::Compaction | EntryType::BranchSummary => js(e.field("summary")),
        EntryType::ModelChange => format!("{}/{}", js(e.field("provider")), js(e.field("modelId"))),
        EntryType::ThinkingLevelChange => js(e.field("thinkingLevel")),
        EntryType::Label => format!(
            "label of {}: {}",
            e.str_field("targetId").unwrap_or_default(),
            e.field("label")
                .filter(|l| !l.is_null())
                .map(|l| l.js_string())
                .unwrap_or_else(|| "(cleared)".into())
        ),
        EntryType::SessionInfo => format!("session named {}", js(e.field("name"))),
        _ => e.text().to_string(),
    };
    let _ = t;
    (kind, body)
}

fn label_of(t: &SessionTree, id: &str) -> Option<String> {
    t.get_label(id)
        .map(|l| Raw::trusted(&l.label).js_string())
        .filter(|l| !l.is_empty())
}

fn time_of(e: &Entry) -> String {
    sessiontree::date::js_date_ms(e.timestamp())
        .map(crate::args::minute)
        .unwrap_or_else(|| "-".into())
}

/// One item of a page: a header line and a body (possibly continued from an earlier page).
struct Item {
    head: String,
    body: String,
    meta: Value,
}

/// Packs items from `(start, from_char)` into `room` characters; returns the page's text,
/// its items as JSON and where the next page starts.
fn pack(
    ctx: &Ctx,
    total: usize,
    start: usize,
    from_char: usize,
    room: usize,
    mut make: impl FnMut(usize) -> Item,
) -> (String, Vec<Value>, Option<(usize, usize)>) {
    let mut text = String::new();
    let mut items = Vec::new();
    let mut i = start;
    let mut off = from_char;
    while i < total {
        let it = make(i);
        let body = clean(&ctx.redact(&it.body));
        let body_chars = chars(&body);
        let head = if off > 0 {
            format!(
                "{} (continued from character {off} of {body_chars})",
                it.head
            )
        } else {
            it.head
        };
        let used = chars(&text);
        let left = room.saturating_sub(used + chars(&head) + 2);
        // Not worth starting a long item in a small remainder: next page.
        if !items.is_empty() && left < 400 && body_chars - off.min(body_chars) > left {
            return (text, items, Some((i, off)));
        }
        let (p, next) = piece(&body, off, left.max(200));
        text.push_str(&head);
        text.push('\n');
        if !p.is_empty() {
            text.push_str(p);
            if !p.ends_with('\n') {
                text.push('\n');
            }
        }
        let mut meta = it.meta;
        meta["text"] = Value::String(p.to_string());
        if off > 0 || next.is_some() {
            meta["part"] = json!({"fromChar": off, "toChar": next.unwrap_or(body_chars), "ofChars": body_chars});
        }
        items.push(meta);
        match next {
            Some(n) => return (text, items, Some((i, n))),
            None => {
                i += 1;
                off = 0;
            }
        }
        if chars(&text) >= room {
            break;
        }
    }
    let next = (i < total).then_some((i, 0));
    (text, items, next)
}

struct Cursor {
    item: usize,
    char: usize,
    anchor: String,
}

fn parse_cursor(view: &str, c: &str) -> Result<Cursor, ToolError> {
    let bad = || {
        ToolError(format!(
            "read_session: cursor {:?} is not a cursor of a {view} read (pass nextCursor back unchanged, with the same session, entry and view).",
            one_line(c, 60)
        ))
    };
    let mut p = c.splitn(4, ':');
    let (v, item, ch, anchor) = (p.next(), p.next(), p.next(), p.next());
    if v != Some(view) {
        return Err(bad());
    }
    let item = item.and_then(|s| s.parse().ok()).ok_or_else(bad)?;
    let char = ch.and_then(|s| s.parse().ok()).ok_or_else(bad)?;
    Ok(Cursor {
        item,
        char,
        anchor: anchor.ok_or_else(bad)?.to_string(),
    })
}

pub fn run(ctx: &Ctx, a: &Map<String, Value>) -> Result<Answer, ToolError> {
    let a = Args::new(
        crate::tools::READ,
        a,
        &["session", "entry", "view", "cursor"],
    )?;
    let mut target = crate::resolve::resolve(ctx, a.required("session")?)?;
    let view = a.choice("view", crate::tools::VIEWS, "context")?;
    let entry = match (a.str("entry")?, target.entry.as_deref()) {
        (Some(x), Some(y)) if x != y => fail!(
            "read_session: the entry is given twice and differently ({} in session, {} in entry).",
            one_line(y, 40),
            one_line(x, 40)
        ),
        (x, y) => x.or(y).map(str::to_string),
    };
    let cursor = a
        .str("cursor")?
        .map(|c| parse_cursor(view, c))
        .transpose()?;
    let mut source = load(ctx, &target)?;
    // An entry this machine's copy lacks may be in the archive's (another machine grew
    // the session): the ref of an archive hit names the id.
    if let (false, Some(e), Some(_)) = (target.archived, &entry, &ctx.cfg.archive) {
        if !source.loaded.tree.contains(e) {
            let t = crate::resolve::Target {
                path: PathBuf::new(),
                id: target.id.clone(),
                entry: target.entry.clone(),
                archived: true,
            };
            if let Ok(s) = load(ctx, &t) {
                if s.loaded.tree.contains(e) {
                    source = s;
                    target = t;
                }
            }
        }
    }
    let loaded = source.loaded.clone();
    let t = &loaded.tree;
    let anchor = match (&entry, &cursor) {
        (Some(e), Some(c)) if !c.anchor.is_empty() && *e != c.anchor => fail!(
            "read_session: the cursor belongs to a read at entry {}, not {}.",
            one_line(&c.anchor, 40),
            one_line(e, 40)
        ),
        (Some(e), _) => Some(e.clone()),
        (None, Some(c)) if !c.anchor.is_empty() => Some(c.anchor.clone()),
        _ => t.leaf_id().map(str::to_string),
    };
    if let Some(id) = &anchor {
        if !t.contains(id) {
            fail!("session {} has no entry {:?}.", target.id, one_line(id, 40));
        }
    }
    let (start, from_char) = cursor.as_ref().map_or((0, 0), |c| (c.item, c.char));
    let name = t.name();
    let cwd = t.header().cwd().unwrap_or_default();
    let whence = match &source.archive {
        Some((o, m)) => format!(" (the archive's copy from {o}@{m}, read-only)"),
        None => String::new(),
    };
    let mut head = format!(
        "Session {}{whence}{} · cwd {} · {} entries{}\n",
        target.id,
        name.as_deref()
            .map(|n| format!(" \"{}\"", one_line(&ctx.redact(n), 80)))
            .unwrap_or_default(),
        one_line(&ctx.redact(&cwd), 160),
        t.entry_count(),
        t.leaf_id()
            .map(|l| format!(" · leaf {l}"))
            .unwrap_or_default()
    );
    let mut session = json!({
        "id": target.id,
        "path": (!target.archived).then(|| target.path.to_string_lossy()),
        "name": name,
        "cwd": cwd,
        "entries": t.entry_count(),
        "leaf": t.leaf_id(),
    });
    if let Some((o, m)) = &source.archive {
        session["owner"] = json!(o);
        session["machine"] = json!(m);
        session["archived"] = json!(true);
    } else if let Some(r) = &ctx.cfg.archive {
        session["owner"] = json!(r.role());
        session["machine"] = json!(r.here());
        session["archived"] = json!(false);
    }
    let room = ctx.cfg.budget.saturating_sub(chars(&head) + 400);
    let Some(anchor) = anchor else {
        return Ok(Answer {
            text: format!("{head}The session has no entries."),
            structured: json!({"session": session, "view": view, "items": [], "total": 0}),
        });
    };
    let (total, text, items, next, extra) = match view {
        "context" => {
            let p = sessiontree::context::project(t, LeafArg::Id(&anchor));
            let msgs: Vec<(&Entry, &sessiontree::Message)> = p
                .entries
                .iter()
                .flat_map(|(e, ms)| ms.iter().map(move |m| (*e, m)))
                .collect();
            let total = msgs.len();
            check_start(start, total)?;
            head.push_str(&format!(
                "What the model saw at entry {anchor}: {total} message{} (model {}, thinking {}).\n",
                if total == 1 { "" } else { "s" },
                p.model
                    .as_ref()
                    .map(|m| format!("{}/{}", js(m.provider), js(m.model_id)))
                    .unwrap_or_else(|| "none".into()),
                p.thinking_level.map(|l| l.js_string()).unwrap_or_else(|| "unset".into())
            ));
            let (text, items, next) = pack(ctx, total, start, from_char, room, |i| {
                let (e, m) = msgs[i];
                let (role, body) = message_text(m.raw());
                let id = e.id().unwrap_or("-");
                Item {
                    head: format!("[{}/{total}] {role} · entry {id} · {}", i + 1, time_of(e)),
                    body,
                    meta: json!({"index": i, "entryId": id, "role": role, "timestamp": e.timestamp().map(|t| t.js_string())}),
                }
            });
            let extra = json!({
                "model": p.model.as_ref().map(|m| json!({"provider": js(m.provider), "modelId": js(m.model_id)})),
                "thinkingLevel": p.thinking_level.map(|l| l.js_string()),
            });
            (total, text, items, next, extra)
        }
        "branch" => {
            let path = t.get_branch(Some(&anchor));
            let total = path.len();
            check_start(start, total)?;
            head.push_str(&format!(
                "The path from the root to entry {anchor}: {total} entries, oldest first.\n"
            ));
            let (text, items, next) = pack(ctx, total, start, from_char, room, |i| {
                let e = path[i];
                let (kind, body) = entry_text(t, e);
                let id = e.id().unwrap_or("-");
                let label = label_of(t, id);
                Item {
                    head: format!(
                        "[{}/{total}] {kind} · entry {id} · {}{}",
                        i + 1,
                        time_of(e),
                        label
                            .as_deref()
                            .map(|l| format!(" · label [{}]", one_line(&ctx.redact(l), 60)))
                            .unwrap_or_default()
                    ),
                    body,
                    meta: json!({"index": i, "entryId": id, "kind": kind, "timestamp": e.timestamp().map(|t| t.js_string()), "label": label}),
                }
            });
            (total, text, items, next, Value::Null)
        }
        "tree" => {
            let rows = tree_rows(t);
            let total = rows.len();
            check_start(start, total)?;
            let on_path: HashSet<&str> = t
                .get_branch(Some(&anchor))
                .iter()
                .filter_map(|e| e.id())
                .collect();
            head.push_str(&format!(
                "Every branch, {total} entries in tree order (indented where the tree forks; * on the path to {anchor}, <leaf the leaf, [label]):\n"
            ));
            let leaf = t.leaf_id();
            let (text, items, next) = pack(ctx, total, start, 0, room, |i| {
                let (idx, depth, hidden) = rows[i];
                let e = t.entry_at(idx);
                let (kind, body) = entry_text(t, e);
                let id = e.id().unwrap_or("-");
                let label = label_of(t, id);
                let on = on_path.contains(id);
                let is_leaf = leaf == Some(id);
                let indent = if hidden > 0 {
                    format!("{}{hidden}› ", "  ".repeat(depth))
                } else {
                    "  ".repeat(depth)
                };
                Item {
                    head: format!(
                        "{indent}{} {id} {kind} {}{}{}",
                        if on { "*" } else { "-" },
                        one_line(&ctx.redact(&body), 100),
                        label
                            .as_deref()
                            .map(|l| format!(" [{}]", one_line(&ctx.redact(l), 40)))
                            .unwrap_or_default(),
                        if is_leaf { " <leaf" } else { "" }
                    ),
                    body: String::new(),
                    meta: json!({
                        "index": i, "entryId": id, "parentId": e.parent.walk_id(),
                        "depth": depth + hidden, "kind": kind, "label": label,
                        "onPath": on, "leaf": is_leaf,
                        "preview": one_line(&ctx.redact(&body), 100),
                    }),
                }
            });
            // A row has no body: drop the empty "text" pieces.
            let items = items
                .into_iter()
                .map(|mut v| {
                    if let Some(o) = v.as_object_mut() {
                        o.remove("text");
                        o.remove("part");
                    }
                    v
                })
                .collect();
            (total, text, items, next, Value::Null)
        }
        _ => {
            // "entry": the one entry, whole, as its JSON line.
            let Some(e) = t.get_entry(&anchor) else {
                fail!(
                    "session {} has no entry {:?}.",
                    target.id,
                    one_line(&anchor, 40)
                );
            };
            check_start(start, 1)?;
            let (kind, _) = entry_text(t, e);
            let children: Vec<String> = {
                let view = t.get_tree();
                t.entries()
                    .iter()
                    .position(|x| std::ptr::eq(x, e))
                    .map(|i| {
                        view.children[i]
                            .iter()
                            .filter_map(|&c| t.entry_at(c).id().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let on = t.get_branch(None).iter().any(|x| std::ptr::eq(*x, e));
            let label = label_of(t, &anchor);
            head.push_str(&format!(
                "Entry {anchor}: {kind} · {} · parent {} · {}{} · children: {}\n",
                time_of(e),
                e.parent.walk_id().unwrap_or("none (a root)"),
                if on {
                    "on the current branch"
                } else {
                    "on an abandoned branch"
                },
                label
                    .as_deref()
                    .map(|l| format!(" · label [{}]", one_line(&ctx.redact(l), 60)))
                    .unwrap_or_default(),
                if children.is_empty() {
                    "none".to_string()
                } else {
                    children.join(", ")
                }
            ));
            let (text, items, next) = pack(ctx, 1, start, from_char, room, |_| Item {
                head: "JSON:".into(),
                body: e.text().to_string(),
                meta: json!({}),
            });
            let json_piece = items
                .first()
                .and_then(|i| i.get("text"))
                .cloned()
                .unwrap_or(Value::Null);
            let part = items.first().and_then(|i| i.get("part")).cloned();
            let extra = json!({
                "entry": {
                    "id": anchor, "parentId": e.parent.walk_id(), "kind": kind,
                    "timestamp": e.timestamp().map(|t| t.js_string()), "label": label,
                    "onCurrentBranch": on, "children": children,
                    "json": json_piece, "part": part,
                }
            });
            (1, text, Vec::new(), next, extra)
        }
    };
    let next_cursor = next.map(|(i, c)| format!("{view}:{i}:{c}:{anchor}"));
    let shown_to = match next {
        Some((i, c)) if c > 0 => i + 1,
        Some((i, _)) => i,
        None => total,
    };
    let mut text = format!("{head}{text}");
    match &next_cursor {
        Some(c) => text.push_str(&format!(
            "(items {}-{shown_to} of {total} shown; more: call again with cursor \"{c}\")\n",
            start + 1
        )),
        None if start > 0 => {
            text.push_str(&format!("(end; items {}-{total} of {total})\n", start + 1))
        }
        None => {}
    }
    let mut structured = json!({
        "session": session,
        "view": view,
        "anchor": anchor,
        "total": total,
        "from": start,
        "items": items,
        "nextCursor": next_cursor,
    });
    if let (Some(s), Some(x)) = (structured.as_object_mut(), extra.as_object()) {
        for (k, v) in x {
            s.insert(k.clone(), v.clone());
        }
    }
    Ok(Answer { text, structured })
}

fn check_start(start: usize, total: usize) -> Result<(), ToolError> {
    if start > total || (start == total && total > 0) {
        fail!(
            "read_session: the cursor is past the end ({total} items); start again without cursor."
        );
    }
    Ok(())
}

/// The tree in depth-first order (children oldest first): per row the entry's index, its
/// indentation (one level per fork above it, at most 12) and the levels left out beyond
/// that. Iterative; an entry is visited once even if the links loop.
fn tree_rows(t: &SessionTree) -> Vec<(u32, usize, usize)> {
    const MAX_INDENT: usize = 12;
    let view = t.get_tree();
    let mut out = Vec::with_capacity(t.entry_count().min(1 << 20));
    let mut seen = vec![false; view.children.len()];
    let mut stack: Vec<(u32, usize)> = view.roots.iter().rev().map(|&r| (r, 0usize)).collect();
    while let Some((i, level)) = stack.pop() {
        let Some(s) = seen.get_mut(i as usize) else {
            continue;
        };
        if *s {
            continue;
        }
        *s = true;
        out.push((i, level.min(MAX_INDENT), level.saturating_sub(MAX_INDENT)));
        let kids = &view.children[i as usize];
        let next = if kids.len() > 1 { level + 1 } else { level };
        for &c in kids.iter().rev() {
            stack.push((c, next));
        }
    }
    out
}
