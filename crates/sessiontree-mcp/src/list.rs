//! `list_sessions`, and the listing the other tools resolve session ids with.

use crate::answer::{chars, one_line, Answer};
use crate::args::{fail, iso, minute, Args, ToolError};
use crate::Ctx;
use serde_json::{json, Map, Value};
use sessiontree::list::{self, ListOptions, SessionInfo};
use sessiontree_index::index::{self, Index};

fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(1, 8)
}

/// Every session under the agent dir, most recently active first: through the listing
/// index when it can be used (as `sessiontree ls --all`), else by reading every file.
pub fn sessions(ctx: &Ctx) -> Result<Vec<SessionInfo>, ToolError> {
    let sessions = ctx.sessions_dir();
    if !sessions.is_dir() {
        fail!(
            "there are no sessions yet: {} does not exist.",
            sessions.display()
        );
    }
    let files = list::all_files_stat(&ctx.cfg.agent_dir);
    let opts = ListOptions {
        reference_parity: false,
        with_text: false,
        threads: threads(),
    };
    let scope = index::all_scope(&sessions);
    let mut guard = ctx.state.index.lock().unwrap_or_else(|p| p.into_inner());
    if guard.is_none() {
        match Index::open(&Index::default_path(&ctx.cfg.agent_dir)) {
            Ok(i) => *guard = Some(i),
            Err(e) => eprintln!("sessiontree mcp: index unavailable ({e}); reading every file"),
        }
    }
    if let Some(idx) = guard.as_mut() {
        match index::listed(idx, &files, &scope, opts, &|_, _| {}) {
            Ok((v, _)) => return Ok(v),
            Err(e) => {
                eprintln!("sessiontree mcp: index not usable ({e}); reading every file");
                *guard = None;
            }
        }
    }
    drop(guard);
    let paths: Vec<_> = files.into_iter().map(|f| f.0).collect();
    Ok(list::finish(list::scan_files(&paths, opts, &|_| {}), opts))
}

/// The agent that wrote a session, for people and models.
pub fn agent(i: &SessionInfo) -> &'static str {
    match i.imported.as_deref() {
        Some("claude-code") => "Claude Code",
        Some("codex") => "Codex",
        Some("opencode") => "OpenCode",
        Some(_) => "imported",
        None => "Pi",
    }
}

/// The header's id as text.
pub fn id_text(i: &SessionInfo) -> String {
    id_text_of(&i.id)
}

/// A header id (JSON) as text.
pub fn id_text_of(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        v => v.to_string(),
    }
}

pub fn run(ctx: &Ctx, a: &Map<String, Value>) -> Result<Answer, ToolError> {
    let a = Args::new(crate::tools::LIST, a, &["cwd", "since", "query", "limit"])?;
    let cwd = a.str("cwd")?.map(sessiontree::dirs::resolve);
    let since = a.date("since")?;
    let query = a.str("query")?.map(str::to_lowercase);
    let limit = a.limit("limit", 20, 200)?;
    let mut v = sessions(ctx)?;
    if let Some(c) = &cwd {
        v.retain(|i| list::cwd_matches(&i.cwd, c));
    }
    if let Some(t) = since {
        v.retain(|i| i.modified_ms >= t);
    }
    if let Some(q) = &query {
        v.retain(|i| {
            i.name
                .as_deref()
                .unwrap_or(&i.first_message)
                .to_lowercase()
                .contains(q.as_str())
                || i.first_message.to_lowercase().contains(q.as_str())
        });
    }
    let matching = v.len();
    let budget = ctx.cfg.budget;
    let mut text = String::new();
    let mut rows = Vec::new();
    for i in v.iter().take(limit) {
        let id = id_text(i);
        let title = ctx.redact(i.name.as_deref().unwrap_or(&i.first_message));
        let title = one_line(&title, 120);
        let cwd = ctx.redact(&i.cwd);
        let fork = i
            .parent_session_path
            .as_ref()
            .and_then(|p| p.as_str())
            .map(|p| p.to_string());
        let line = format!(
            "- {id}  {}  {} msgs  {}  cwd {}{}\n  {title}\n",
            minute(i.modified_ms),
            i.message_count,
            agent(i),
            one_line(&cwd, 200),
            if fork.is_some() { "  (fork)" } else { "" },
        );
        if !rows.is_empty() && chars(&text) + chars(&line) > budget.saturating_sub(300) {
            break;
        }
        text.push_str(&line);
        rows.push(json!({
            "id": id,
            "title": title,
            "name": i.name,
            "firstMessage": one_line(&ctx.redact(&i.first_message), 300),
            "cwd": cwd,
            "path": i.path.to_string_lossy(),
            "created": iso(i.created_ms),
            "modified": iso(Some(i.modified_ms)),
            "messageCount": i.message_count,
            "agent": agent(i),
            "forkedFrom": fork,
        }));
    }
    let shown = rows.len();
    let head = if matching == 0 {
        "No sessions match.".to_string()
    } else if shown < matching {
        format!(
            "{matching} sessions match; the {shown} most recently active (narrow with cwd, since or query, or raise limit):"
        )
    } else {
        format!(
            "{shown} session{} (most recently active first):",
            if shown == 1 { "" } else { "s" }
        )
    };
    Ok(Answer {
        text: format!("{head}\n{text}"),
        structured: json!({
            "sessions": rows,
            "matching": matching,
            "shown": shown,
        }),
    })
}
